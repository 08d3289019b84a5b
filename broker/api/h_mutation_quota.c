/* broker/api/h_mutation_quota.c — controller_mutation_rate (KIP-599): the
 * partitions CreateTopics, CreatePartitions and DeleteTopics mutate count
 * against the (user, client-id) quota, a token bucket (core/quota.h).
 *
 * A topic is admitted while the bucket is not in debt, and then its
 * partitions are taken from it (it may go into debt: one big topic is not
 * refused for its size). New enough versions (CreateTopics v6+, DeleteTopics
 * v5+, CreatePartitions v3+) answer the topics met while in debt
 * THROTTLING_QUOTA_EXCEEDED and leave them out; older ones admit every topic.
 * Either way the answer's throttle_time_ms is the time the bucket needs to
 * be out of debt, and the connection is muted that long (KIP-219).
 * validate_only requests mutate nothing and are not counted.
 *
 * It is applied where the client's request arrives, which knows the
 * principal: before forwarding (bk_api_mq_forward, then the controller does
 * not count the forwarded request again: req->node_forwarded), or in the
 * handler when the request is served here. Through a node that forwards,
 * the request is taken whole or (in debt, new versions) answered here with
 * every topic refused; the controller's answer then carries no throttle
 * time (the mute still applies). */
#include <stdio.h>
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/core/quota.h"
#include "broker/net/clock.h"
#include "protocol/kp_errors.h"

static int16_t strict_since(int16_t api) {
    return api == KP_API_CREATE_TOPICS ? 6 : api == KP_API_DELETE_TOPICS ? 5 : 3;
}

static bool validate_only(const bk_api_req_t *req) {
    if (req->hdr.api_key == KP_API_CREATE_TOPICS) return ((const kp_create_topics_request_t *)req->body)->validate_only;
    if (req->hdr.api_key == KP_API_CREATE_PARTITIONS)
        return ((const kp_create_partitions_request_t *)req->body)->validate_only;
    return false;
}

static int64_t now_ms(void) { return (int64_t)(bk_net_mono_ns() / 1000000u); }

/* Records `amount` mutations for the request's principal and client id:
 * the throttle time afterwards (0: not in debt, or no quota). */
static int64_t record(bk_api_req_t *req, double amount) {
    return bk_node_quota_record_id(req->node->quotas, &req->node->img, req->principal, req->hdr.client_id,
                                   BK_META_QUOTA_CONTROLLER_MUTATION_RATE, amount, now_ms());
}

void bk_api_mq_begin(bk_api_req_t *req, bk_api_mq_t *mq) {
    bk_node_t *n = req->node;
    mq->on = n->quotas && n->img.nquotas > 0 && !req->node_forwarded && !validate_only(req);
    mq->strict = req->hdr.api_version >= strict_since(req->hdr.api_key);
}

bool bk_api_mq_admit(bk_api_req_t *req, bk_api_mq_t *mq, double partitions) {
    if (!mq->on) return true;
    if (mq->strict && record(req, 0) > 0) return false;
    (void)record(req, partitions);
    return true;
}

int32_t bk_api_mq_throttle(bk_api_req_t *req, const bk_api_mq_t *mq) {
    if (!mq->on) return 0;
    return bk_api_req_quota(req, BK_META_QUOTA_CONTROLLER_MUTATION_RATE, 0);   /* mutes when in debt */
}

double bk_api_mq_partitions(bk_api_req_t *req, int32_t i) {
    const bk_meta_image_t *img = &req->node->img;
    switch (req->hdr.api_key) {
    case KP_API_CREATE_TOPICS: {
        const kp_create_topics_request_creatable_topic_t *t = &((const kp_create_topics_request_t *)req->body)->topics.items[i];
        if (t->assignments.count > 0) return t->assignments.count;
        return t->num_partitions > 0 ? t->num_partitions : (double)bk_cfg_int(req->node->cfg, BK_CFG_NUM_PARTITIONS);
    }
    case KP_API_CREATE_PARTITIONS: {
        const kp_create_partitions_request_create_partitions_topic_t *t =
            &((const kp_create_partitions_request_t *)req->body)->topics.items[i];
        const bk_meta_topic_t *topic = bk_meta_image_topic_by_slice(img, t->name);
        return topic && t->count > topic->nparts ? t->count - topic->nparts : 0;
    }
    case KP_API_DELETE_TOPICS: {
        const kp_delete_topics_request_t *q = req->body;
        const bk_meta_topic_t *topic;
        if (req->hdr.api_version >= 6) {
            const kp_delete_topics_request_delete_topic_state_t *s = &q->topics.items[i];
            bk_meta_uuid_t id;
            memcpy(id.b, s->topic_id.b, sizeof id.b);
            topic = kp_slice_is_null(s->name) ? bk_meta_image_topic_by_id(img, &id) : bk_meta_image_topic_by_slice(img, s->name);
        } else {
            topic = bk_meta_image_topic_by_slice(img, q->topic_names.items[i]);
        }
        return topic ? topic->nparts : 0;   /* an unknown topic mutates nothing */
    }
    default:
        return 0;
    }
}

static int32_t ntopics(const bk_api_req_t *req) {
    switch (req->hdr.api_key) {
    case KP_API_CREATE_TOPICS: return ((const kp_create_topics_request_t *)req->body)->topics.count;
    case KP_API_CREATE_PARTITIONS: return ((const kp_create_partitions_request_t *)req->body)->topics.count;
    case KP_API_DELETE_TOPICS: {
        const kp_delete_topics_request_t *q = req->body;
        return req->hdr.api_version >= 6 ? q->topics.count : q->topic_names.count;
    }
    default: return 0;
    }
}

bool bk_api_mq_forward(bk_api_req_t *req, bk_net_conn_t *conn) {
    int16_t k = req->hdr.api_key;
    if (k != KP_API_CREATE_TOPICS && k != KP_API_DELETE_TOPICS && k != KP_API_CREATE_PARTITIONS) return true;
    bk_api_mq_t mq;
    bk_api_mq_begin(req, &mq);
    if (!mq.on) return true;
    /* the node that forwards must not count what its handler would count
     * again: only when the frame really leaves (not the controller) */
    bk_node_t *n = req->node;
    int32_t ctrl = bk_node_controller_id(n);
    if (ctrl < 0 || ctrl == n->id) return true;
    if (mq.strict && record(req, 0) > 0) return false;   /* served here: every topic refused */
    double total = 0;
    for (int32_t i = 0; i < ntopics(req); i++) total += bk_api_mq_partitions(req, i);
    int64_t t = record(req, total);
    if (t > 0 && bk_net_conn_mute_until(conn, now_ms() + t) != BK_NET_OK)
        fprintf(stderr, "skiff: node %d: cannot mute %s for its controller mutation quota\n", n->id,
                bk_net_conn_peer(conn));
    return true;
}
