/* broker/admin/admin_elect.c — POST /v1/partitions/{topic}/{partition}/elect:
 * a preferred leader election through the controller, answered once the
 * new PartitionChange record is committed (deferred reply). Only the active
 * controller decides; another node answers 409 naming the controller. */
#include "broker/admin/admin_ops.h"

#include <errno.h>
#include <stdlib.h>

#include "broker/meta/records.h"
#include "protocol/kp_errors.h"

typedef struct {
    bk_node_t *node;
    bk_http_req_t *req;
    int32_t partition;
} elect_ctx_t;

static void reply_result(bk_http_req_t *req, bk_node_t *n, const char *topic, int32_t partition) {
    const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&n->img, topic);
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_kv_str(j, "topic", topic);
    bk_http_json_kv_i64(j, "partition", partition);
    if (t && partition < t->nparts) {
        bk_http_json_kv_i64(j, "leader", t->parts[partition].leader);
        bk_http_json_kv_i64(j, "leader_epoch", t->parts[partition].leader_epoch);
    }
    bk_http_json_obj_end(j);
    bk_http_reply_json(req, 200);
}

static void elect_done(void *arg, int status) {
    elect_ctx_t *c = arg;
    bk_node_t *n = c->node;
    /* bk_http_stop (node shutdown) already freed the request: drop it. */
    if (n->admin) {
        if (status != KP_OK)
            bk_http_reply_error(c->req, 503, "election not committed: %s",
                                 kp_error_name(bk_node_commit_error(status)));
        else
            reply_result(c->req, n, bk_http_param(c->req, "topic"), c->partition);
    }
    free(c);
}

static bool parse_partition(const char *s, int32_t *out) {
    if (!s || *s < '0' || *s > '9') return false;
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (errno || *end || v > INT32_MAX) return false;
    *out = (int32_t)v;
    return true;
}

const bk_meta_topic_t *bk_admin_partition_param(bk_http_req_t *req, bk_node_t *n, int32_t *partition) {
    const char *topic = bk_http_param(req, "topic");
    if (!parse_partition(bk_http_param(req, "partition"), partition)) {
        bk_http_reply_error(req, 400, "partition must be a non-negative integer");
        return NULL;
    }
    const bk_meta_topic_t *t = topic ? bk_meta_image_topic_by_name(&n->img, topic) : NULL;
    if (!t || *partition >= t->nparts) {
        bk_http_reply_error(req, 404, "unknown partition %s-%d", topic ? topic : "", *partition);
        return NULL;
    }
    return t;
}

static void post_elect(bk_http_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    const char *topic = bk_http_param(req, "topic");
    int32_t partition;
    const bk_meta_topic_t *t = bk_admin_partition_param(req, n, &partition);
    if (!t) return;
    int32_t ctrl = bk_node_controller_id(n);
    if (ctrl != n->id) {
        bk_http_reply_error(req, 409, "node %d is not the controller (controller: %d)", n->id, ctrl);
        return;
    }
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    int16_t err = bk_meta_ctrl_elect(&n->ctrl, bk_node_decision_image(n), BK_META_ELECT_PREFERRED, topic, partition, &recs);
    if (err == KP_ERROR_ELECTION_NOT_NEEDED || (err == 0 && recs.n == 0)) {
        bk_meta_recs_free(&recs);
        reply_result(req, n, topic, partition);   /* already led by the preferred replica */
        return;
    }
    if (err != 0) {
        bk_meta_recs_free(&recs);
        bk_http_reply_error(req, 409, "%s", kp_error_name(err));
        return;
    }
    elect_ctx_t *c = malloc(sizeof *c);
    if (!c) {
        bk_meta_recs_free(&recs);
        bk_http_reply_error(req, 500, "out of memory");
        return;
    }
    *c = (elect_ctx_t){ n, req, partition };
    bk_node_commit(n, &recs, elect_done, c);
    bk_meta_recs_free(&recs);
}

int bk_admin_elect_add(bk_node_t *n) {
    return bk_http_route(n->admin, "POST", "/v1/partitions/{topic}/{partition}/elect", post_elect, n);
}
