/* broker/api/h_metadata.c — Metadata, every version: brokers, cluster id,
 * controller, topics with partitions (leader, leader epoch, replicas, ISR),
 * topic ids, auto-creation of requested topics when the request allows it
 * and auto.create.topics.enable is on (through the controller and the
 * metadata committer, answered once the creation is committed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/api/dispatch.h"
#include "broker/meta/acl.h"
#include "broker/meta/meta_log.h"
#include "broker/cluster/topics.h"
#include "protocol/kp_errors.h"

typedef kp_metadata_response_metadata_response_topic_t mtopic_t;
typedef kp_metadata_response_metadata_response_partition_t mpart_t;
typedef kp_metadata_response_metadata_response_broker_t mbroker_t;

static int32_t *ids_copy(bk_api_req_t *req, const bk_meta_ids_t *ids, int32_t *count) {
    int32_t *v = bk_api_req_alloc(req, (size_t)ids->n, sizeof *v);
    if (v && ids->n) memcpy(v, ids->v, (size_t)ids->n * sizeof *v);
    *count = ids->n;
    return v;
}

/* Replicas on a broker that is not registered or is fenced (KRaft's
 * offline replicas): they cannot serve or follow now. */
static int32_t *offline_copy(bk_api_req_t *req, const bk_meta_ids_t *ids, int32_t *count) {
    int32_t *v = bk_api_req_alloc(req, (size_t)ids->n, sizeof *v);
    *count = 0;
    if (!v) return NULL;
    for (int32_t i = 0; i < ids->n; i++) {
        const bk_meta_broker_t *b = bk_meta_image_broker(&req->node->img, ids->v[i]);
        if (!b || b->fenced) v[(*count)++] = ids->v[i];
    }
    return v;
}

static int fill_topic(bk_api_req_t *req, const bk_meta_topic_t *t, mtopic_t *o) {
    kp_metadata_response_metadata_response_topic_init(o);
    o->error_code = 0;
    o->name = bk_api_str(t->name);
    memcpy(o->topic_id.b, t->id.b, 16);
    o->is_internal = bk_meta_topic_is_internal(t->name);
    mpart_t *ps = bk_api_req_alloc(req, (size_t)t->nparts, sizeof *ps);
    if (!ps) return KP_ERR_NOMEM;
    for (int32_t i = 0; i < t->nparts; i++) {
        const bk_meta_partition_t *p = &t->parts[i];
        mpart_t *q = &ps[i];
        kp_metadata_response_metadata_response_partition_init(q);
        q->partition_index = p->id;
        q->leader_id = p->leader;
        q->leader_epoch = p->leader_epoch;
        q->error_code = p->leader < 0 ? KP_ERROR_LEADER_NOT_AVAILABLE : 0;
        q->replica_nodes.items = ids_copy(req, &p->replicas, &q->replica_nodes.count);
        q->isr_nodes.items = ids_copy(req, &p->isr, &q->isr_nodes.count);
        q->offline_replicas.items = offline_copy(req, &p->replicas, &q->offline_replicas.count);
        if (!q->replica_nodes.items || !q->isr_nodes.items || !q->offline_replicas.items) return KP_ERR_NOMEM;
    }
    o->partitions.items = ps;
    o->partitions.count = t->nparts;
    return KP_OK;
}

static void fill_error_topic(mtopic_t *o, kp_str_t name, const kp_uuid_t *id, int16_t err) {
    kp_metadata_response_metadata_response_topic_init(o);
    o->error_code = err;
    o->name = name;
    if (id) o->topic_id = *id;
    o->partitions.count = 0;
}

static int fill_brokers(bk_api_req_t *req, kp_metadata_response_t *r) {
    const bk_meta_image_t *img = &req->node->img;
    mbroker_t *bs = bk_api_req_alloc(req, img->nbrokers, sizeof *bs);
    if (!bs) return KP_ERR_NOMEM;
    int32_t n = 0;
    for (size_t i = 0; i < img->nbrokers; i++) {
        const bk_meta_broker_t *b = &img->brokers[i];
        if (b->fenced || b->nendpoints == 0) continue;
        /* Kafka's rule: the endpoints of the listener the client came in on;
         * a broker without one is left out (never a PLAINTEXT address to a
         * TLS client) */
        const bk_meta_endpoint_t *ep = bk_node_broker_endpoint(req->node, b, req->listener);
        if (!ep) continue;
        kp_metadata_response_metadata_response_broker_init(&bs[n]);
        bs[n].node_id = b->id;
        bs[n].host = bk_api_str(ep->host);
        bs[n].port = ep->port;
        bs[n].rack = b->rack ? bk_api_str(b->rack) : kp_slice_null();
        n++;
    }
    r->brokers.items = bs;
    r->brokers.count = n;
    return KP_OK;
}

static void respond(bk_api_req_t *req) {
    const kp_metadata_request_t *q = req->body;
    bk_node_t *n = req->node;
    const bk_meta_image_t *img = &n->img;
    kp_metadata_response_t r;
    memset(&r, 0, sizeof r);
    kp_metadata_response_init(&r);
    int rc = fill_brokers(req, &r);
    r.cluster_id = bk_api_str(n->cluster_id);
    r.controller_id = bk_node_controller_id(n);
    /* Clients send controller requests (CreateTopics, ...) to this id and
     * wait while it is not among the brokers listed (librdkafka's admin
     * client: "waiting for controller"); early after a start the raft
     * leader may not be registered yet. Any listed broker forwards to the
     * controller (Kafka's KRaft brokers name a live broker too): then this
     * node when listed, else the first listed, else none. */
    if (rc == KP_OK) {
        bool listed = false, self = false;
        for (int32_t i = 0; i < r.brokers.count; i++) {
            listed |= r.brokers.items[i].node_id == r.controller_id;
            self |= r.brokers.items[i].node_id == n->id;
        }
        if (!listed) r.controller_id = self ? n->id : r.brokers.count > 0 ? r.brokers.items[0].node_id : -1;
    }
    /* v0: an empty list means all topics; v1+: null means all. */
    bool all = q->topics.count < 0 || (req->hdr.api_version == 0 && q->topics.count == 0);
    size_t count = all ? img->ntopics : (size_t)q->topics.count;
    mtopic_t *ts = bk_api_req_alloc(req, count, sizeof *ts);
    if (!ts) rc = KP_ERR_NOMEM;
    size_t k = 0;       /* answers written (all topics: only DESCRIBE-able ones are listed) */
    for (size_t i = 0; i < count && rc == KP_OK; i++) {
        if (all) {
            if (!bk_api_authorized(req, BK_META_OP_DESCRIBE, BK_META_RES_TOPIC, img->by_name[i]->name)) continue;
            rc = fill_topic(req, img->by_name[i], &ts[k++]);
            continue;
        }
        k++;
        const kp_metadata_request_metadata_request_topic_t *rt = &q->topics.items[i];
        const bk_meta_topic_t *t = NULL;
        bool by_id = kp_slice_is_null(rt->name);
        if (by_id) {
            t = bk_meta_image_topic_by_id(img, (const bk_meta_uuid_t *)rt->topic_id.b);
            if (!t) { fill_error_topic(&ts[i], kp_slice_null(), &rt->topic_id, KP_ERROR_UNKNOWN_TOPIC_ID); continue; }
            if (!bk_api_authorized(req, BK_META_OP_DESCRIBE, BK_META_RES_TOPIC, t->name)) {
                fill_error_topic(&ts[i], kp_slice_null(), &rt->topic_id, KP_ERROR_TOPIC_AUTHORIZATION_FAILED);
                continue;
            }
        } else {
            char *name = bk_api_req_topic_cstr(req, rt->name);
            if (!name) { rc = KP_ERR_NOMEM; break; }
            /* Kafka answers an unauthorized name the same whether it exists
             * or not: existence is not disclosed */
            if (!bk_api_authorized(req, BK_META_OP_DESCRIBE, BK_META_RES_TOPIC, name)) {
                fill_error_topic(&ts[i], rt->name, NULL, KP_ERROR_TOPIC_AUTHORIZATION_FAILED);
                continue;
            }
            t = bk_meta_image_topic_by_name(img, name);
            if (!t) {
                char why[160];
                int16_t e = bk_meta_ctrl_topic_name_valid(name, why, sizeof why) ? KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION
                                                                            : KP_ERROR_INVALID_TOPIC_EXCEPTION;
                fill_error_topic(&ts[i], rt->name, NULL, e);
                continue;
            }
        }
        rc = fill_topic(req, t, &ts[i]);
    }
    if (rc != KP_OK) { bk_api_req_close(req, "out of memory building Metadata"); return; }
    r.topics.items = ts;
    r.topics.count = (int32_t)k;
    bk_api_req_respond(req, &r);
}

static void created(void *arg, int status) {
    (void)status;   /* failures show as UNKNOWN_TOPIC_OR_PARTITION */
    respond(arg);
}

void bk_api_h_metadata(bk_api_req_t *req) {
    const kp_metadata_request_t *q = req->body;
    bk_node_t *n = req->node;
    bool allow = req->hdr.api_version < 4 || q->allow_auto_topic_creation;
    if (!allow || !bk_cfg_bool(n->cfg, BK_CFG_AUTO_CREATE_TOPICS_ENABLE) || q->topics.count <= 0) {
        respond(req);
        return;
    }
    const char **names = bk_api_req_alloc(req, (size_t)q->topics.count, sizeof *names);
    if (!names) { bk_api_req_close(req, "out of memory"); return; }
    size_t k = 0;
    for (int32_t i = 0; i < q->topics.count; i++) {
        const kp_metadata_request_metadata_request_topic_t *rt = &q->topics.items[i];
        if (kp_slice_is_null(rt->name)) continue;
        char *name = bk_api_req_topic_cstr(req, rt->name);
        if (!name) { bk_api_req_close(req, "out of memory"); return; }
        char why[160];
        /* auto-creation needs CREATE on the cluster or the topic */
        if (!bk_meta_image_topic_by_name(&n->img, name) && bk_meta_ctrl_topic_name_valid(name, why, sizeof why) &&
            (bk_api_authorized(req, BK_META_OP_CREATE, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME) ||
             bk_api_authorized(req, BK_META_OP_CREATE, BK_META_RES_TOPIC, name)))
            names[k++] = name;
    }
    if (k == 0) { respond(req); return; }
    bk_cluster_topics_auto_create(n, names, k, created, req);
}
