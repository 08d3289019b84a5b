/* broker/api/h_cluster.c — DescribeCluster (brokers from the image, this node
 * as controller: a quorum of one) and DescribeLogDirs (per log dir: the
 * partitions it holds with their sizes, total and usable bytes).
 * Authorization (Kafka): DescribeLogDirs needs DESCRIBE on the cluster
 * (else CLUSTER_AUTHORIZATION_FAILED, v3+ at the top level, and no
 * directory); DescribeCluster answers the operations the principal may do
 * on the cluster when asked, 0 without DESCRIBE on it. */
#include <string.h>
#include <sys/statvfs.h>

#include "broker/api/dispatch.h"
#include "broker/meta/acl.h"
#include "broker/replication/parts.h"
#include "protocol/kp_errors.h"
#include "storage/st_log.h"

void bk_api_h_describe_cluster(bk_api_req_t *req) {
    bk_node_t *n = req->node;
    kp_describe_cluster_response_t r;
    memset(&r, 0, sizeof r);
    kp_describe_cluster_response_init(&r);
    r.cluster_id = bk_api_str(n->cluster_id);
    r.controller_id = n->id;
    kp_describe_cluster_response_describe_cluster_broker_t *bs = bk_api_req_alloc(req, n->img.nbrokers, sizeof *bs);
    if (!bs) { bk_api_req_close(req, "out of memory"); return; }
    int32_t k = 0;
    for (size_t i = 0; i < n->img.nbrokers; i++) {
        const bk_meta_broker_t *b = &n->img.brokers[i];
        if (b->fenced || b->nendpoints == 0) continue;
        const bk_meta_endpoint_t *ep = bk_node_broker_endpoint(n, b, req->listener);
        if (!ep) continue;
        kp_describe_cluster_response_describe_cluster_broker_init(&bs[k]);
        bs[k].broker_id = b->id;
        bs[k].host = bk_api_str(ep->host);
        bs[k].port = ep->port;
        bs[k].rack = b->rack ? bk_api_str(b->rack) : kp_slice_null();
        k++;
    }
    r.brokers.items = bs;
    r.brokers.count = k;
    const kp_describe_cluster_request_t *q = req->body;
    r.cluster_authorized_operations = INT32_MIN;   /* not asked for */
    if (q->include_cluster_authorized_operations) {
        /* the operations Kafka defines on the cluster resource, one bit each */
        static const int8_t ops[] = { BK_META_OP_CREATE, BK_META_OP_CLUSTER_ACTION, BK_META_OP_DESCRIBE_CONFIGS,
                                      BK_META_OP_ALTER_CONFIGS, BK_META_OP_IDEMPOTENT_WRITE, BK_META_OP_ALTER,
                                      BK_META_OP_DESCRIBE };
        int32_t bits = 0;
        if (bk_api_authorized(req, BK_META_OP_DESCRIBE, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME))
            for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
                if (bk_api_authorized(req, ops[i], BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME)) bits |= 1 << ops[i];
        r.cluster_authorized_operations = bits;
    }
    bk_api_req_respond(req, &r);
}

typedef kp_describe_log_dirs_response_describe_log_dirs_topic_t ltopic_t;
typedef kp_describe_log_dirs_response_describe_log_dirs_partition_t lpart_t;

typedef struct {
    bk_api_req_t *req;
    int dir;
    const kp_describe_log_dirs_request_t *q;
    ltopic_t *topics;       /* one entry per held partition (topics repeat) */
    int32_t n, cap;
    int err;
} logdir_ctx_t;

static bool asked(const kp_describe_log_dirs_request_t *q, const bk_repl_part_t *p) {
    if (q->topics.count < 0) return true;   /* null = everything */
    size_t len = strlen(p->topic);
    for (int32_t i = 0; i < q->topics.count; i++) {
        const kp_describe_log_dirs_request_describable_log_dir_topic_t *t = &q->topics.items[i];
        if (t->topic.len != len || memcmp(t->topic.p, p->topic, len) != 0) continue;
        for (int32_t k = 0; k < t->partitions.count; k++)
            if (t->partitions.items[k] == p->partition) return true;
    }
    return false;
}

static void add_part(bk_repl_part_t *p, void *arg) {
    logdir_ctx_t *c = arg;
    if (c->err || p->dir != c->dir || !p->log || !asked(c->q, p)) return;
    if (c->n == c->cap) { c->err = 1; return; }
    ltopic_t *t = &c->topics[c->n++];
    kp_describe_log_dirs_response_describe_log_dirs_topic_init(t);
    t->name = bk_api_str(p->topic);
    lpart_t *lp = bk_api_req_alloc(c->req, 1, sizeof *lp);
    if (!lp) { c->err = 1; return; }
    kp_describe_log_dirs_response_describe_log_dirs_partition_init(lp);
    lp->partition_index = p->partition;
    lp->partition_size = (int64_t)st_log_size_bytes(p->log);
    lp->offset_lag = 0;
    t->partitions.items = lp;
    t->partitions.count = 1;
}

void bk_api_h_describe_log_dirs(bk_api_req_t *req) {
    const kp_describe_log_dirs_request_t *q = req->body;
    bk_node_t *n = req->node;
    kp_describe_log_dirs_response_t r;
    memset(&r, 0, sizeof r);
    kp_describe_log_dirs_response_init(&r);
    if (!bk_api_authorized(req, BK_META_OP_DESCRIBE, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME)) {
        r.error_code = KP_ERROR_CLUSTER_AUTHORIZATION_FAILED;   /* older versions: just no directory */
        r.results.count = 0;
        bk_api_req_respond(req, &r);
        return;
    }
    kp_describe_log_dirs_response_describe_log_dirs_result_t *rs = bk_api_req_alloc(req, n->ndirs, sizeof *rs);
    if (!rs) { bk_api_req_close(req, "out of memory"); return; }
    size_t held = bk_repl_parts_count(n->parts);
    for (size_t d = 0; d < n->ndirs; d++) {
        kp_describe_log_dirs_response_describe_log_dirs_result_init(&rs[d]);
        rs[d].log_dir = bk_api_str(n->dirs[d].path);
        logdir_ctx_t c = { req, (int)d, q, NULL, 0, (int32_t)held, 0 };
        c.topics = bk_api_req_alloc(req, held, sizeof *c.topics);
        if (!c.topics) { bk_api_req_close(req, "out of memory"); return; }
        bk_repl_parts_each(n->parts, add_part, &c);
        if (c.err) { bk_api_req_close(req, "out of memory"); return; }
        rs[d].topics.items = c.topics;
        rs[d].topics.count = c.n;
        struct statvfs sv;
        if (statvfs(n->dirs[d].path, &sv) == 0) {
            rs[d].total_bytes = (int64_t)sv.f_blocks * (int64_t)sv.f_frsize;
            rs[d].usable_bytes = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
        } else {
            rs[d].error_code = KP_ERROR_KAFKA_STORAGE_ERROR;
        }
    }
    r.results.items = rs;
    r.results.count = (int32_t)n->ndirs;
    bk_api_req_respond(req, &r);
}
