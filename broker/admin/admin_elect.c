/* broker/admin/admin_elect.c — POST /v1/partitions/{topic}/{partition}/elect:
 * a preferred leader election through the controller, answered once the
 * new PartitionChange record is committed (deferred reply). Only the active
 * controller decides; another node forwards an ElectLeaders request to it
 * (as Kafka brokers do) and answers once it has applied the change, so the
 * console's action works from any node. */
#include "broker/admin/admin_ops.h"
#include "broker/admin/admin_int.h"

#include <errno.h>
#include <stdlib.h>

#include "broker/cluster/forward.h"
#include "broker/meta/records.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_header.h"

typedef struct {
    bk_node_t *node;
    bk_http_req_t *req;
    int32_t partition;
} elect_ctx_t;

#define ELECT_LEADERS_VERSION 2
#define ELECT_ANSWER_ARENA_BYTES 4096

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

/* The controller's answer to the forwarded ElectLeaders: the one
 * partition's result (ELECTION_NOT_NEEDED: already led by the preferred
 * replica, as on the controller). */
static void forwarded(void *arg, int status, const uint8_t *resp, size_t len) {
    elect_ctx_t *c = arg;
    bk_node_t *n = c->node;
    if (!admin_forward_answered(n, c->req, status)) { free(c); return; }
    kp_arena_t a;
    kp_arena_init(&a, ELECT_ANSWER_ARENA_BYTES);
    int32_t cid;
    void *body = NULL;
    int16_t err = KP_ERROR_UNKNOWN_SERVER_ERROR;
    if (kp_response_decode(KP_API_ELECT_LEADERS, ELECT_LEADERS_VERSION, resp, len, &cid, &body, &a) == KP_OK) {
        const kp_elect_leaders_response_t *r = body;
        err = r->error_code;
        if (!err && r->replica_election_results.count == 1 &&
            r->replica_election_results.items[0].partition_result.count == 1)
            err = r->replica_election_results.items[0].partition_result.items[0].error_code;
        else if (!err)
            err = KP_ERROR_UNKNOWN_SERVER_ERROR;
    }
    kp_arena_free(&a);
    if (err == 0 || err == KP_ERROR_ELECTION_NOT_NEEDED)
        reply_result(c->req, n, bk_http_param(c->req, "topic"), c->partition);
    else
        bk_http_reply_error(c->req, 409, "%s", kp_error_name(err));
    free(c);
}

/* ElectLeaders (preferred, one partition) to the active controller. */
static void forward_elect(bk_http_req_t *req, bk_node_t *n, const char *topic, int32_t partition) {
    kp_elect_leaders_request_topic_partitions_t tp;
    kp_elect_leaders_request_topic_partitions_init(&tp);
    tp.topic = kp_slice_cstr(topic);
    tp.partitions.items = &partition;
    tp.partitions.count = 1;
    kp_elect_leaders_request_t q;
    kp_elect_leaders_request_init(&q);
    q.election_type = 0;   /* preferred */
    q.topic_partitions.items = &tp;
    q.topic_partitions.count = 1;
    q.timeout_ms = 30000;
    elect_ctx_t *c = malloc(sizeof *c);
    if (!c) {
        bk_http_reply_error(req, 500, "out of memory");
        return;
    }
    *c = (elect_ctx_t){ n, req, partition };
    if (!admin_forward(n, req, KP_API_ELECT_LEADERS, ELECT_LEADERS_VERSION, &q, forwarded, c)) free(c);
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
    if (bk_node_controller_id(n) != n->id) {
        forward_elect(req, n, topic, partition);
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
