/* broker/api/h_cgroup.c — the KIP-848 consumer group protocol's APIs:
 * ConsumerGroupHeartbeat (68, v0-1) and ConsumerGroupDescribe (69, v0).
 * Each decoded request goes to the group driver (group_driver.h; the core
 * is broker/group/group_cg.c); its completion builds the answer here.
 * Version rules: SubscribedTopicRegex exists from v1 of 68 (the driver
 * ignores it below); both answers have one layout for every version. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/api/groups_int.h"
#include "broker/meta/acl.h"
#include "broker/group/group_driver.h"
#include "broker/meta/features.h"
#include "broker/meta/image.h"
#include "protocol/kp_errors.h"

/* ---- ConsumerGroupHeartbeat --------------------------------------------------- */

/* Topics in a sorted partition list (runs of one topic id). */
static size_t topic_runs(const bk_grp_cg_tp_t *v, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || memcmp(v[i].topic.b, v[i - 1].topic.b, sizeof v[i].topic.b) != 0) k++;
    return k;
}

static void hb_done(void *arg, const bk_grp_gd_result_t *res) {
    bk_api_req_t *req = arg;
    if (res->unsent) { bk_api_req_close(req, res->unsent); return; }
    kp_consumer_group_heartbeat_response_t r;
    kp_consumer_group_heartbeat_response_init(&r);
    const bk_grp_cg_hb_resp_t *h = res->cg_hb;
    r.error_code = res->error;
    r.member_epoch = -1;
    if (h) {
        r.error_code = h->error;
        r.member_id = h->member_id;
        r.member_epoch = h->member_epoch;
        r.heartbeat_interval_ms = h->heartbeat_interval_ms;
        if (h->message) r.error_message = bk_api_str(h->message);
        if (h->has_assignment && !h->error) {
            typedef kp_consumer_group_heartbeat_response_topic_partitions_t tps_t;
            kp_consumer_group_heartbeat_response_assignment_t *a = bk_api_req_alloc(req, 1, sizeof *a);
            size_t nt = topic_runs(h->assignment, h->nassignment);
            tps_t *ts = bk_api_req_alloc(req, nt ? nt : 1, sizeof *ts);
            int32_t *ps = bk_api_req_alloc(req, h->nassignment ? h->nassignment : 1, sizeof *ps);
            if (!a || !ts || !ps) { bk_api_req_close(req, "out of memory"); return; }
            size_t k = 0;
            for (size_t i = 0; i < h->nassignment; i++) {
                if (i == 0 || memcmp(h->assignment[i].topic.b, h->assignment[i - 1].topic.b, 16) != 0) {
                    kp_consumer_group_heartbeat_response_topic_partitions_init(&ts[k]);
                    ts[k].topic_id = h->assignment[i].topic;
                    ts[k].partitions.items = &ps[i];
                    ts[k].partitions.count = 0;
                    k++;
                }
                ps[i] = h->assignment[i].partition;
                ts[k - 1].partitions.count++;
            }
            a->topic_partitions.items = ts;
            a->topic_partitions.count = (int32_t)nt;
            r.assignment = a;
        }
    }
    if (r.error_code && !r.error_message.p) r.error_message = bk_api_str(kp_error_name(r.error_code));
    bk_api_req_respond(req, &r);
}

void bk_api_h_consumer_group_heartbeat(bk_api_req_t *req) {
    const kp_consumer_group_heartbeat_request_t *q = req->body;
    /* group.version finalized at 0 (a downgrade): the consumer protocol is
     * off, as Kafka answers it. Not finalized yet (a cluster from before
     * features, or the first seconds of a new one, which finalizes 1) keeps
     * it on. */
    const bk_meta_image_t *img = &req->node->img;
    bool off = img->features_epoch >= 0 && img->feature_level[BK_META_FEATURE_GROUP_VERSION] < 1;
    if (off || !req->node->groups) {
        kp_consumer_group_heartbeat_response_t r;
        kp_consumer_group_heartbeat_response_init(&r);
        r.error_code = off ? KP_ERROR_UNSUPPORTED_VERSION : KP_ERROR_COORDINATOR_NOT_AVAILABLE;
        r.member_epoch = -1;
        bk_api_req_respond(req, &r);
        return;
    }
    /* Kafka: READ on the group, then DESCRIBE on every subscribed topic
     * name; refused before the group sees the request */
    int16_t denied = 0;
    const char *why = NULL;
    if (!bk_api_authorized_str(req, BK_META_OP_READ, BK_META_RES_GROUP, q->group_id)) {
        denied = KP_ERROR_GROUP_AUTHORIZATION_FAILED;
    } else {
        for (int32_t i = 0; i < q->subscribed_topic_names.count; i++)
            if (!bk_api_authorized_str(req, BK_META_OP_DESCRIBE, BK_META_RES_TOPIC, q->subscribed_topic_names.items[i])) {
                denied = KP_ERROR_TOPIC_AUTHORIZATION_FAILED;
                why = "Not authorized to describe a subscribed topic.";
                break;
            }
    }
    if (denied) {
        kp_consumer_group_heartbeat_response_t r;
        kp_consumer_group_heartbeat_response_init(&r);
        r.error_code = denied;
        r.error_message = bk_api_str(why ? why : kp_error_name(denied));
        r.member_epoch = -1;
        bk_api_req_respond(req, &r);
        return;
    }
    bk_grp_gd_cg_heartbeat(req->node->groups, q, req->hdr.api_version, req->hdr.client_id, api_client_host(req), hb_done,
                           req);
}

/* ---- ConsumerGroupDescribe ---------------------------------------------------- */

typedef kp_consumer_group_describe_response_topic_partitions_t dtps_t;

/* A set as the answer's (TopicId, TopicName, Partitions[]) list; names from
 * this node's image ("" for a topic it does not know: deleted meanwhile). */
static bool describe_set(bk_api_req_t *req, const bk_grp_cg_tps_t *s, kp_consumer_group_describe_response_assignment_t *a) {
    size_t nt = topic_runs(s->v, s->n);
    dtps_t *ts = bk_api_req_alloc(req, nt ? nt : 1, sizeof *ts);
    int32_t *ps = bk_api_req_alloc(req, s->n ? s->n : 1, sizeof *ps);
    if (!ts || !ps) return false;
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (i == 0 || memcmp(s->v[i].topic.b, s->v[i - 1].topic.b, 16) != 0) {
            kp_consumer_group_describe_response_topic_partitions_init(&ts[k]);
            ts[k].topic_id = s->v[i].topic;
            bk_meta_uuid_t id;
            memcpy(id.b, s->v[i].topic.b, sizeof id.b);
            const bk_meta_topic_t *t = bk_meta_image_topic_by_id(&req->node->img, &id);
            ts[k].topic_name = bk_api_str(t ? t->name : "");
            ts[k].partitions.items = &ps[i];
            k++;
        }
        ps[i] = s->v[i].partition;
        ts[k - 1].partitions.count++;
    }
    a->topic_partitions.items = ts;
    a->topic_partitions.count = (int32_t)nt;
    return true;
}

static bool describe_group(bk_api_req_t *req, const bk_grp_t *g, kp_consumer_group_describe_response_described_group_t *d) {
    const bk_grp_cg_t *cg = g->cg;
    d->group_state = bk_api_str(bk_grp_cg_state_name(g));
    d->group_epoch = cg->epoch;
    d->assignment_epoch = cg->assignment_epoch;
    d->assignor_name = bk_api_str(bk_grp_cg_assignor_name(cg->assignor));
    kp_consumer_group_describe_response_member_t *ms = bk_api_req_alloc(req, cg->nmembers ? cg->nmembers : 1, sizeof *ms);
    if (!ms) return false;
    for (size_t i = 0; i < cg->nmembers; i++) {
        const bk_grp_cg_member_t *m = &cg->members[i];
        kp_consumer_group_describe_response_member_init(&ms[i]);
        ms[i].member_id = api_grp_str(m->member_id);
        ms[i].instance_id = api_grp_str(m->instance_id);
        ms[i].rack_id = api_grp_str(m->rack_id);
        ms[i].member_epoch = m->epoch;
        ms[i].client_id = m->client_id.p ? api_grp_str(m->client_id) : bk_api_str("");
        ms[i].client_host = m->client_host.p ? api_grp_str(m->client_host) : bk_api_str("");
        kp_str_t *names = bk_api_req_alloc(req, m->ntopics ? m->ntopics : 1, sizeof *names);
        if (!names) return false;
        for (size_t t = 0; t < m->ntopics; t++) names[t] = api_grp_str(m->topics[t]);
        ms[i].subscribed_topic_names.items = names;
        ms[i].subscribed_topic_names.count = (int32_t)m->ntopics;
        ms[i].subscribed_topic_regex = api_grp_str(m->regex);
        if (!describe_set(req, &m->assigned, &ms[i].assignment)) return false;
        if (!describe_set(req, &m->target, &ms[i].target_assignment)) return false;
    }
    d->members.items = ms;
    d->members.count = (int32_t)cg->nmembers;
    return true;
}

/* The groups the principal may DESCRIBE go to the coordinator (allowed,
 * in request order); the others answer GROUP_AUTHORIZATION_FAILED. */
typedef struct {
    bk_api_req_t *req;
    kp_consumer_group_describe_request_t allowed;
    bool *denied;                /* per group of the request */
} cgd_ctx_t;

static void describe_done(void *arg, const bk_grp_gd_result_t *res) {
    cgd_ctx_t *c = arg;
    bk_api_req_t *req = c->req;
    if (res->unsent) { bk_api_req_close(req, res->unsent); return; }
    const kp_consumer_group_describe_request_t *q = req->body;
    kp_consumer_group_describe_response_t r;
    kp_consumer_group_describe_response_init(&r);
    size_t n = q->group_ids.count > 0 ? (size_t)q->group_ids.count : 0;
    kp_consumer_group_describe_response_described_group_t *ds = bk_api_req_alloc(req, n ? n : 1, sizeof *ds);
    if (!ds) { bk_api_req_close(req, "out of memory"); return; }
    size_t j = 0;                /* the next result of the allowed groups */
    for (size_t i = 0; i < n; i++) {
        kp_consumer_group_describe_response_described_group_init(&ds[i]);
        ds[i].group_id = q->group_ids.items[i];
        ds[i].group_state = bk_api_str("Dead");
        ds[i].assignor_name = bk_api_str("");
        if (c->denied[i]) {
            ds[i].error_code = KP_ERROR_GROUP_AUTHORIZATION_FAILED;
            ds[i].error_message = bk_api_str(kp_error_name(KP_ERROR_GROUP_AUTHORIZATION_FAILED));
            continue;
        }
        assert(j < res->ngroups);
        int16_t e = res->errors[j];
        const bk_grp_t *g = res->groups[j++];
        ds[i].error_code = e;
        if (e) {
            ds[i].error_message = bk_api_str(e == KP_ERROR_GROUP_ID_NOT_FOUND
                                                 ? "Group is not a consumer group or does not exist."
                                                 : kp_error_name(e));
            continue;
        }
        if (!describe_group(req, g, &ds[i])) { bk_api_req_close(req, "out of memory"); return; }
    }
    r.groups.items = ds;
    r.groups.count = (int32_t)n;
    bk_api_req_respond(req, &r);
}

void bk_api_h_consumer_group_describe(bk_api_req_t *req) {
    const kp_consumer_group_describe_request_t *q = req->body;
    if (!req->node->groups) {
        kp_consumer_group_describe_response_t r;
        kp_consumer_group_describe_response_init(&r);
        bk_api_req_respond(req, &r);
        return;
    }
    size_t n = q->group_ids.count > 0 ? (size_t)q->group_ids.count : 0;
    cgd_ctx_t *c = bk_api_req_alloc(req, 1, sizeof *c);
    bool *denied = bk_api_req_alloc(req, n ? n : 1, sizeof *denied);
    kp_str_t *ids = bk_api_req_alloc(req, n ? n : 1, sizeof *ids);
    if (!c || !denied || !ids) { bk_api_req_close(req, "out of memory"); return; }
    c->req = req;
    c->allowed = *q;
    c->denied = denied;
    int32_t k = 0;
    for (size_t i = 0; i < n; i++) {
        denied[i] = !bk_api_authorized_str(req, BK_META_OP_DESCRIBE, BK_META_RES_GROUP, q->group_ids.items[i]);
        if (!denied[i]) ids[k++] = q->group_ids.items[i];
    }
    c->allowed.group_ids.items = ids;
    c->allowed.group_ids.count = k;
    bk_grp_gd_cg_describe(req->node->groups, &c->allowed, describe_done, c);
}
