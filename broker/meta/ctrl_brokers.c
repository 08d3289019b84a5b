/* ctrl_brokers.c — broker registration, heartbeats, session expiry and
 * producer-id blocks. */
#include "broker/meta/controller.h"
#include "broker/meta/ctrl_internal.h"

#include <assert.h>
#include <string.h>

#include "protocol/kp_errors.h"

static KP_MUST_CHECK int emit_registration(bk_meta_recs_t *out, const bk_meta_ctrl_register_t *req, int64_t epoch) {
    Skiff__Metadata__Endpoint eps[BK_META_ENDPOINTS_MAX];
    Skiff__Metadata__Endpoint *ptrs[BK_META_ENDPOINTS_MAX];
    assert(req->nendpoints <= BK_META_ENDPOINTS_MAX);
    for (size_t i = 0; i < req->nendpoints; i++) {
        skiff__metadata__endpoint__init(&eps[i]);
        eps[i].listener = (char *)req->endpoints[i].listener;
        eps[i].host = (char *)req->endpoints[i].host;
        eps[i].has_port = true;
        eps[i].port = req->endpoints[i].port;
        ptrs[i] = &eps[i];
    }
    Skiff__Metadata__BrokerRegistration m = SKIFF__METADATA__BROKER_REGISTRATION__INIT;
    m.has_broker_id = true; m.broker_id = req->broker_id;
    m.has_incarnation_id = true;
    m.incarnation_id.len = BK_META_UUID_BYTES;
    m.incarnation_id.data = (uint8_t *)req->incarnation;
    m.has_broker_epoch = true; m.broker_epoch = epoch;
    m.n_endpoints = req->nendpoints;
    m.endpoints = ptrs;
    m.rack = req->rack && req->rack[0] ? (char *)req->rack : NULL;
    m.has_fenced = true; m.fenced = true;
    Skiff__Metadata__MetadataRecord r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_BROKER_REGISTRATION;
    r.broker_registration = &m;
    return bk_meta_recs_add(out, &r);
}

/* A sign of life of the registered incarnation of `id`. */
static void heard(bk_meta_ctrl_t *c, const bk_meta_image_t *img, int32_t id, int64_t now_ms) {
    bk_meta_session_t *s = ctrl_session(c, img, id, now_ms);
    s->last_heartbeat_ms = now_ms;
    s->heard = true;
}

/* Does the request advertise exactly the endpoints `old` registered? Then
 * the new process bound the old one's ports, so the old one is gone: a
 * restart, not a second process with the same id. */
static bool same_endpoints(const bk_meta_broker_t *old, const bk_meta_ctrl_register_t *req) {
    if (old->nendpoints < 0 || (size_t)old->nendpoints != req->nendpoints) return false;
    for (size_t i = 0; i < req->nendpoints; i++) {
        const bk_meta_ctrl_endpoint_t *e = &req->endpoints[i];
        bool found = false;
        for (int32_t j = 0; j < old->nendpoints && !found; j++) {
            const bk_meta_endpoint_t *o = &old->endpoints[j];
            found = o->port == e->port && o->host && o->listener && strcmp(o->host, e->host) == 0 &&
                    strcmp(o->listener, e->listener) == 0;
        }
        if (!found) return false;
    }
    return true;
}

int16_t bk_meta_ctrl_register(bk_meta_ctrl_t *c, const bk_meta_image_t *img, const bk_meta_ctrl_register_t *req,
                         int64_t next_offset, int64_t now_ms, bk_meta_recs_t *out,
                         int64_t *broker_epoch) {
    bk_meta_uuid_t inc;
    memcpy(inc.b, req->incarnation, BK_META_UUID_BYTES);
    if (req->broker_id < 0 || bk_meta_uuid_is_zero(&inc) || req->nendpoints > BK_META_ENDPOINTS_MAX)
        return KP_ERROR_INVALID_REQUEST;
    for (size_t i = 0; i < req->nendpoints; i++)
        if (!req->endpoints[i].host || !req->endpoints[i].listener) return KP_ERROR_INVALID_REQUEST;
    const bk_meta_broker_t *old = bk_meta_image_broker(img, req->broker_id);
    if (!old && img->nbrokers >= BK_META_BROKERS_MAX) return KP_ERROR_INVALID_REQUEST;
    if (old && memcmp(old->incarnation, req->incarnation, BK_META_UUID_BYTES) == 0) {
        /* a retry of a registration we already made: same answer, no record */
        heard(c, img, req->broker_id, now_ms);
        *broker_epoch = old->epoch;
        return KP_ERROR_NONE;
    }
    /* Another incarnation while the registered one keeps its session, from
     * other endpoints: two live processes claim the id (a copied config,
     * a node started twice). Kafka's DUPLICATE_BROKER_REGISTRATION; the
     * newcomer gives up once refused for longer than a session
     * (broker_lifecycle.c). The same endpoints are a restart (kill -9 and
     * start again at once) and are taken at once, as before. */
    if (old && !old->in_controlled_shutdown && !same_endpoints(old, req)) {
        /* only what this controller heard counts: the fresh session a new
         * controller gives every broker is no sign of life (a node restarted
         * on other ports right after, or a quorum of one restarting, would
         * otherwise be refused) */
        const bk_meta_session_t *s = ctrl_session(c, img, req->broker_id, now_ms);
        if (s->heard && now_ms - s->last_heartbeat_ms <= c->cfg.session_timeout_ms)
            return KP_ERROR_DUPLICATE_BROKER_REGISTRATION;
    }
    if (emit_registration(out, req, next_offset) != KP_OK) return KP_ERROR_UNKNOWN_SERVER_ERROR;   /* not built */
    if (old) {
        /* a new incarnation: the old process is gone, whatever its session
         * says; its leaderships and ISR places go as for a fence */
        int32_t id = req->broker_id;
        gone_t gone = { &id, 1 };
        (void)ctrl_drop_brokers(c, img, &gone, out);
        if (out->err != KP_OK) return KP_ERROR_UNKNOWN_SERVER_ERROR;   /* not built */
    }
    heard(c, img, req->broker_id, now_ms);
    *broker_epoch = next_offset;
    return KP_ERROR_NONE;
}

/* Leaderless partitions that the unfenced broker can lead again. */
static void elect_returning(const bk_meta_ctrl_t *c, const bk_meta_image_t *img, int32_t id,
                            bk_meta_recs_t *out) {
    for (size_t i = 0; i < img->ntopics; i++) {
        const bk_meta_topic_t *t = img->by_name[i];
        for (int32_t j = 0; j < t->nparts; j++) {
            const bk_meta_partition_t *p = &t->parts[j];
            if (p->leader != -1 || !bk_meta_ids_has(&p->replicas, id)) continue;
            bool in_isr = bk_meta_ids_has(&p->isr, id);
            if (!in_isr && !ctrl_unclean(c, img, t)) continue;
            bk_meta_ids_t isr = { 0 };
            bk_meta_ids_add(&isr, id);
            pchange_t ch = { .has_leader = true, .leader = id, .isr = in_isr ? NULL : &isr };
            if (ctrl_emit_change(out, &t->id, p->id, &ch) != KP_OK) return;   /* the list is refused whole */
        }
    }
}

static size_t leads_count(const bk_meta_image_t *img, int32_t id) {
    return bk_meta_image_select(img, BK_META_SEL_LEADS, id, NULL, 0);
}

void bk_meta_ctrl_heartbeat(bk_meta_ctrl_t *c, const bk_meta_image_t *img, const bk_meta_ctrl_heartbeat_t *req,
                       int64_t now_ms, bk_meta_recs_t *out, bk_meta_ctrl_heartbeat_result_t *res) {
    memset(res, 0, sizeof *res);
    const bk_meta_broker_t *b = bk_meta_image_broker(img, req->broker_id);
    if (!b) { res->error = KP_ERROR_BROKER_ID_NOT_REGISTERED; return; }
    if (b->epoch != req->broker_epoch) { res->error = KP_ERROR_STALE_BROKER_EPOCH; return; }
    heard(c, img, b->id, now_ms);
    res->is_fenced = b->fenced;
    res->in_controlled_shutdown = b->in_controlled_shutdown;
    int32_t id = b->id;
    gone_t gone = { &id, 1 };
    if (req->want_shutdown) {
        if (b->fenced) {
            res->should_shutdown = true;
        } else if (!b->in_controlled_shutdown) {
            if (ctrl_emit_fence(out, b, false, true) != KP_OK) { res->error = KP_ERROR_UNKNOWN_SERVER_ERROR; return; }
            (void)ctrl_drop_brokers(c, img, &gone, out);   /* how many moved is not needed; out->err is the commit's */
            res->in_controlled_shutdown = true;
        } else {
            res->should_shutdown = leads_count(img, id) == 0;
        }
        return;
    }
    if (req->want_fence) {
        if (!b->fenced) {
            if (ctrl_emit_fence(out, b, true, false) != KP_OK) { res->error = KP_ERROR_UNKNOWN_SERVER_ERROR; return; }
            (void)ctrl_drop_brokers(c, img, &gone, out);
            res->is_fenced = true;
        }
        return;
    }
    if (b->fenced && req->current_metadata_offset >= b->epoch) {
        if (ctrl_emit_fence(out, b, false, false) != KP_OK) { res->error = KP_ERROR_UNKNOWN_SERVER_ERROR; return; }
        elect_returning(c, img, id, out);
        if (out->err != KP_OK) { res->error = KP_ERROR_UNKNOWN_SERVER_ERROR; return; }
        res->is_fenced = false;
    }
}

/* Leaderless partitions of topics with unclean election enabled get any
 * usable replica (as KRaft does periodically; a topic's config may have been
 * switched on after the partition went offline). O(partitions) per tick. */
static void unclean_elections(const bk_meta_ctrl_t *c, const bk_meta_image_t *img, bk_meta_recs_t *out) {
    for (size_t i = 0; i < img->ntopics; i++) {
        const bk_meta_topic_t *t = img->by_name[i];
        int unclean = -1;           /* looked up once per topic, only when needed */
        for (int32_t j = 0; j < t->nparts; j++) {
            const bk_meta_partition_t *p = &t->parts[j];
            if (p->leader != -1) continue;
            if (unclean == -1) unclean = ctrl_unclean(c, img, t);
            if (!unclean) break;
            bk_meta_ids_t isr;
            int32_t leader = ctrl_elect_from(img, &p->replicas, &p->isr, NULL, true, &isr);
            if (leader < 0) continue;
            pchange_t ch = { .has_leader = true, .leader = leader, .isr = &isr };
            if (ctrl_emit_change(out, &t->id, p->id, &ch) != KP_OK) return;   /* the list is refused whole */
        }
    }
}

/* Sessions of brokers no longer registered are forgotten, so the table
 * never holds more than the image's brokers (BK_META_BROKERS_MAX). */
static void prune_sessions(bk_meta_ctrl_t *c, const bk_meta_image_t *img) {
    size_t k = 0;
    for (size_t i = 0; i < c->nsessions; i++)
        if (bk_meta_image_broker(img, c->sessions[i].broker_id)) c->sessions[k++] = c->sessions[i];
    c->nsessions = k;
}

size_t bk_meta_ctrl_tick(bk_meta_ctrl_t *c, const bk_meta_image_t *img, int64_t now_ms, bk_meta_recs_t *out) {
    int32_t expired[BK_META_BROKERS_MAX];
    size_t n = 0;
    prune_sessions(c, img);
    for (size_t i = 0; i < img->nbrokers; i++) {
        const bk_meta_broker_t *b = &img->brokers[i];
        /* a broker we have not heard of yet gets a full session from now */
        const bk_meta_session_t *s = ctrl_session(c, img, b->id, now_ms);
        if (b->fenced || now_ms - s->last_heartbeat_ms <= c->cfg.session_timeout_ms) continue;
        expired[n++] = b->id;
    }
    for (size_t i = 0; i < n; i++)
        if (ctrl_emit_fence(out, bk_meta_image_broker(img, expired[i]), true, false) != KP_OK) return 0;   /* refused whole */
    if (n) {
        gone_t gone = { expired, n };
        (void)ctrl_drop_brokers(c, img, &gone, out);   /* a failed add: out->err, the commit refuses it */
    } else {
        unclean_elections(c, img, out);
    }
    return n;
}

int16_t bk_meta_ctrl_alloc_producer_ids(bk_meta_ctrl_t *c, const bk_meta_image_t *img, int32_t broker_id,
                                   int64_t broker_epoch, bk_meta_recs_t *out, int64_t *first_id,
                                   int32_t *count) {
    const bk_meta_broker_t *b = bk_meta_image_broker(img, broker_id);
    if (!b) return KP_ERROR_BROKER_ID_NOT_REGISTERED;
    if (b->epoch != broker_epoch) return KP_ERROR_STALE_BROKER_EPOCH;
    int64_t size = c->cfg.producer_id_block_size;
    assert(size > 0 && size <= INT32_MAX);
    if (img->next_producer_id > INT64_MAX - size) return KP_ERROR_UNKNOWN_SERVER_ERROR;
    Skiff__Metadata__ProducerIdBlock m = SKIFF__METADATA__PRODUCER_ID_BLOCK__INIT;
    m.has_broker_id = true; m.broker_id = broker_id;
    m.has_broker_epoch = true; m.broker_epoch = broker_epoch;
    m.has_next_producer_id = true; m.next_producer_id = img->next_producer_id + size;
    Skiff__Metadata__MetadataRecord r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_PRODUCER_ID_BLOCK;
    r.producer_id_block = &m;
    if (bk_meta_recs_add(out, &r) != KP_OK) return KP_ERROR_UNKNOWN_SERVER_ERROR;   /* no block handed out */
    *first_id = img->next_producer_id;
    *count = (int32_t)size;
    return KP_ERROR_NONE;
}
