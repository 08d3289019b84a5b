/* broker/admin/admin_forward.c — an admin route's request forwarded to the
 * active controller (see admin_int.h): the election and the topic actions
 * work from any node, as Kafka brokers forward admin requests. */
#include "broker/admin/admin_int.h"

#include <stdlib.h>

#include "protocol/kp_errors.h"
#include "protocol/kp_header.h"

bool admin_forward(bk_node_t *n, bk_http_req_t *req, int16_t api, int16_t ver, const void *body,
                   bk_cluster_forward_resp_fn done, void *arg) {
    kp_request_header_t h = { api, ver, 0, kp_slice_cstr("skiff-admin") };
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = kp_request_encode_alloc(&h, body, &buf, &len);
    if (rc != KP_OK) {
        bk_http_reply_error(req, 500, "cannot encode the request to the controller: %s", kp_status_str(rc));
        return false;
    }
    /* the encoded frame starts with its size; forwarding adds its own */
    bool sent = bk_cluster_forward_request(n, buf + 4, len - 4, done, arg);
    free(buf);
    if (!sent) {
        int32_t ctrl = bk_node_controller_id(n);
        if (ctrl < 0) bk_http_reply_error(req, 503, "NOT_CONTROLLER: no controller elected yet; retry");
        else bk_http_reply_error(req, 503, "cannot forward to the controller (node %d) now; retry", ctrl);
    }
    return sent;
}

bool admin_forward_answered(const bk_node_t *n, bk_http_req_t *req, int status) {
    if (!n->admin) return false;   /* bk_http_stop already freed the request */
    if (status != KP_OK) {
        bk_http_reply_error(req, 503, "forwarding to the controller failed (%s): retry",
                            kp_error_name(bk_node_commit_error(status)));
        return false;
    }
    return true;
}
