/* broker/cluster/broker_lifecycle.c — registration and heartbeats with the active
 * controller, and serving them on it (see broker_lifecycle.h). */
#include "broker/cluster/broker_lifecycle.h"

#include <assert.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "kp_msgs.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_header.h"
#include "broker/cluster/lifecycle_sched.h"
#include "broker/core/node.h"
#include "broker/core/status.h"
#include "broker/quorum/quorum.h"
#include "broker/net/quorum_client.h"
#include "broker/cluster/rebalance.h"

#define LC_RETRY_MS 200          /* while not registered */
#define LC_REG_VERSION 0
#define LC_HB_VERSION 0

typedef struct bk_lifecycle {
    struct event *timer;
    bk_cluster_lc_sched_t sched;         /* registered / fenced / when the next round is due */
    bool inflight;               /* a request (or local commit) is outstanding */
    /* The round in flight: an answer (or local commit) of an older, abandoned
     * round must not end the current one. */
    uint64_t round;
    int32_t inflight_corr;       /* remote round: the request's correlation id */
    int32_t inflight_to;         /* the controller it went to (this node: local) */
    int64_t inflight_since_ms;
    uint8_t incarnation[BK_META_UUID_BYTES];
    int64_t last_tick_ms;
    int64_t dup_since_ms;        /* refused DUPLICATE_BROKER_REGISTRATION since, -1 */
} bk_lifecycle_t;

static bk_lifecycle_t *life(bk_node_t *n) { return n->life; }

/* ---- the broker side --------------------------------------------------------- */

/* Every advertised listener of this node (node.c fills n->adv). */
static size_t endpoints(bk_node_t *n, bk_meta_ctrl_endpoint_t *eps) {
    for (size_t i = 0; i < n->nadv; i++) eps[i] = (bk_meta_ctrl_endpoint_t){ n->adv[i].name, n->adv[i].host, n->adv[i].port };
    return n->nadv;
}

static const char *rack(bk_node_t *n) {
    return bk_cfg_is_null(n->cfg, BK_CFG_BROKER_RACK) ? NULL : bk_cfg_str(n->cfg, BK_CFG_BROKER_RACK);
}

typedef struct {
    bk_node_t *n;
    int64_t epoch;
    bool is_register;
    bool is_tick;                /* a fencing tick: not the round in flight */
    bool hb_ok;                  /* heartbeat: decided without error */
    bool fenced;                 /* heartbeat: the decision leaves us fenced */
    uint64_t round;
} local_ctx_t;

/* Marks a new round in flight to controller `to` (this node: a local
 * commit; corr is then unused). Returns its number: answers of older rounds
 * are ignored. */
static uint64_t begin_round(bk_lifecycle_t *l, int32_t to, int32_t corr, int64_t now) {
    l->inflight = true;
    l->round++;
    l->inflight_corr = corr;
    l->inflight_to = to;
    l->inflight_since_ms = now;
    return l->round;
}

/* The controller refused our registration: another process with our id
 * keeps a live session from other endpoints. It may be our own previous
 * process on other ports that just died, whose session then ends within
 * broker.session.timeout.ms and the registration is taken; refused for
 * twice that, the other process is alive (it heartbeats), and we stop:
 * two processes with one node id would each take the other's
 * partitions. */
static void on_duplicate(bk_node_t *n, bk_lifecycle_t *l, int64_t now) {
    int64_t session_ms = bk_cfg_int(n->cfg, BK_CFG_BROKER_SESSION_TIMEOUT_MS);
    if (l->dup_since_ms < 0) {
        l->dup_since_ms = now;
        fprintf(stderr, "skiff: node %d: registration refused: another process is registered as broker %d "
                "(DUPLICATE_BROKER_REGISTRATION); retrying for up to %lld ms in case it has just stopped\n",
                n->id, n->id, (long long)(2 * session_ms));
        return;
    }
    if (now - l->dup_since_ms <= 2 * session_ms || n->stopping) return;
    fprintf(stderr, "skiff: node %d: FATAL: node id %d is in use by another live process: the controller "
            "refused this one's registration (DUPLICATE_BROKER_REGISTRATION) for %lld ms, more than twice "
            "broker.session.timeout.ms; check node.id / --node and the listeners; stopping\n", n->id, n->id,
            (long long)(now - l->dup_since_ms));
    n->request_exit(n, 1);
}

static void local_done(void *arg, int status) {
    local_ctx_t *c = arg;
    if (status != KP_OK)
        fprintf(stderr, "skiff: node %d: controller commit failed (status %d)\n", c->n->id, status);
    bk_lifecycle_t *l = life(c->n);
    if (l && !c->is_tick && c->round == l->round && l->inflight) {
        l->inflight = false;
        if (c->is_register && status == KP_OK) {
            l->dup_since_ms = -1;
            bk_cluster_lc_sched_registered(&l->sched);
            c->n->broker_epoch = c->epoch;
            fprintf(stderr, "skiff: node %d: registered with the controller (broker epoch %lld)\n", c->n->id,
                    (long long)c->epoch);
        } else if (c->hb_ok && status == KP_OK) {
            bk_cluster_lc_sched_heartbeat_ok(&l->sched, c->fenced);
        }
    }
    free(c);
}

/* This node is the active controller: decide and commit directly. */
static void local_round(bk_node_t *n, int64_t now) {
    bk_lifecycle_t *l = life(n);
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    local_ctx_t *c = calloc(1, sizeof *c);
    if (!c) return;
    c->n = n;
    if (!l->sched.registered) {
        bk_meta_ctrl_endpoint_t eps[BK_CFG_LISTENERS_MAX];
        size_t neps = endpoints(n, eps);
        bk_meta_ctrl_register_t rq = { n->id, { 0 }, eps, neps, rack(n) };
        memcpy(rq.incarnation, l->incarnation, BK_META_UUID_BYTES);
        c->is_register = true;
        int16_t e = bk_meta_ctrl_register(&n->ctrl, bk_node_decision_image(n), &rq, bk_quorum_next_offset(n->quorum), now, &recs, &c->epoch);
        if (e == KP_ERROR_DUPLICATE_BROKER_REGISTRATION) {
            on_duplicate(n, l, now);
            bk_meta_recs_free(&recs);
            free(c);
            return;
        }
        if (e != 0) {
            fprintf(stderr, "skiff: node %d: self-registration refused (error %d)\n", n->id, e);
            bk_meta_recs_free(&recs);
            free(c);
            return;
        }
    } else {
        bk_meta_ctrl_heartbeat_t hb = { n->id, n->broker_epoch, n->img.last_offset, false, false };
        bk_meta_ctrl_heartbeat_result_t hr;
        bk_meta_ctrl_heartbeat(&n->ctrl, bk_node_decision_image(n), &hb, now, &recs, &hr);
        if (hr.error == KP_ERROR_STALE_BROKER_EPOCH || hr.error == KP_ERROR_BROKER_ID_NOT_REGISTERED)
            bk_cluster_lc_sched_unregistered(&l->sched);
        c->hb_ok = hr.error == 0;
        c->fenced = hr.is_fenced;
    }
    c->round = begin_round(l, n->id, 0, now);
    bk_node_commit(n, &recs, local_done, c);
    bk_meta_recs_free(&recs);
}

static int send_register(bk_node_t *n, int32_t *corr_out) {
    bk_lifecycle_t *l = life(n);
    kp_broker_registration_request_listener_t ls[BK_CFG_LISTENERS_MAX];
    for (size_t i = 0; i < n->nadv; i++) {
        kp_msg_init(&kp_broker_registration_request_listener_desc, &ls[i]);
        ls[i].name = kp_slice_cstr(n->adv[i].name);
        ls[i].host = kp_slice_cstr(n->adv[i].host);
        ls[i].port = n->adv[i].port;
    }
    kp_broker_registration_request_t b;
    kp_broker_registration_request_init(&b);
    b.broker_id = n->id;
    b.cluster_id = kp_slice_cstr(n->cluster_id);
    memcpy(b.incarnation_id.b, l->incarnation, BK_META_UUID_BYTES);
    b.listeners.items = ls;
    b.listeners.count = (int32_t)n->nadv;
    b.rack = kp_slice_cstr(rack(n));
    int32_t corr = bk_quorum_corr(n->quorum);
    *corr_out = corr;
    kp_request_header_t h = { KP_API_BROKER_REGISTRATION, LC_REG_VERSION, corr, kp_slice_cstr("skiff-broker") };
    uint8_t buf[4096];
    kp_wr_t w;
    kp_wr_init(&w, buf, sizeof buf);
    if (kp_request_encode(&w, &h, &b) != KP_OK) return -1;
    return bk_quorum_send_to_leader(n->quorum, BK_NET_QC_REGISTER, buf, w.pos, corr);
}

static int send_heartbeat(bk_node_t *n, int32_t *corr_out) {
    kp_broker_heartbeat_request_t b;
    kp_broker_heartbeat_request_init(&b);
    b.broker_id = n->id;
    b.broker_epoch = n->broker_epoch;
    b.current_metadata_offset = n->img.last_offset;
    int32_t corr = bk_quorum_corr(n->quorum);
    *corr_out = corr;
    kp_request_header_t h = { KP_API_BROKER_HEARTBEAT, LC_HB_VERSION, corr, kp_slice_cstr("skiff-broker") };
    uint8_t buf[512];
    kp_wr_t w;
    kp_wr_init(&w, buf, sizeof buf);
    if (kp_request_encode(&w, &h, &b) != KP_OK) return -1;
    return bk_quorum_send_to_leader(n->quorum, BK_NET_QC_HEARTBEAT, buf, w.pos, corr);
}

void bk_cluster_lifecycle_on_response(bk_node_t *n, int kind, int32_t corr_sent, const uint8_t *frame, size_t len) {
    assert(kind != BK_NET_QC_ALTER);   /* routed to the replica manager by the wiring */
    bk_lifecycle_t *l = life(n);
    if (!l || !l->inflight || l->inflight_to == n->id || corr_sent != l->inflight_corr) return;   /* abandoned */
    l->inflight = false;
    if (!frame) return;
    kp_arena_t a;
    kp_arena_init(&a, 65536);
    int32_t corr;
    void *body = NULL;
    if (kind == BK_NET_QC_REGISTER) {
        if (kp_response_decode(KP_API_BROKER_REGISTRATION, LC_REG_VERSION, frame, len, &corr, &body, &a) == KP_OK) {
            const kp_broker_registration_response_t *r = body;
            if (r->error_code == KP_ERROR_DUPLICATE_BROKER_REGISTRATION) on_duplicate(n, l, bk_net_now_ms());
            if (r->error_code == 0) {
                l->dup_since_ms = -1;
                bk_cluster_lc_sched_registered(&l->sched);
                n->broker_epoch = r->broker_epoch;
                fprintf(stderr, "skiff: node %d: registered with controller %d (broker epoch %lld)\n", n->id,
                        bk_quorum_leader(n->quorum), (long long)r->broker_epoch);
            }
        }
    } else if (kind == BK_NET_QC_HEARTBEAT) {
        if (kp_response_decode(KP_API_BROKER_HEARTBEAT, LC_HB_VERSION, frame, len, &corr, &body, &a) == KP_OK) {
            const kp_broker_heartbeat_response_t *r = body;
            if (r->error_code == KP_ERROR_STALE_BROKER_EPOCH || r->error_code == KP_ERROR_BROKER_ID_NOT_REGISTERED)
                bk_cluster_lc_sched_unregistered(&l->sched);
            else if (r->error_code == 0)
                bk_cluster_lc_sched_heartbeat_ok(&l->sched, r->is_fenced);
        }
    }
    kp_arena_free(&a);
}

/* ---- the controller side ------------------------------------------------------- */

typedef struct {
    bk_node_t *n;
    bk_net_slot_t slot;
    int16_t api_key, version;
    int32_t corr;
    int16_t error;
    int64_t epoch;
    bk_meta_ctrl_heartbeat_result_t hr;
} serve_ctx_t;

static void respond(serve_ctx_t *c, const void *body) {
    uint8_t buf[512];
    kp_wr_t w;
    kp_wr_init(&w, buf, sizeof buf);
    bk_net_t *net = bk_quorum_net(c->n->quorum);
    struct evbuffer *eb = evbuffer_new();
    if (!eb) return;
    if (kp_response_encode(&w, c->api_key, c->version, c->corr, body, NULL) != KP_OK ||
        evbuffer_add(eb, buf + 4, w.pos - 4) != 0) {
        evbuffer_free(eb);
        (void)bk_net_respond_none(net, c->slot);
        return;
    }
    (void)bk_net_respond(net, c->slot, eb);
}

static void answer(serve_ctx_t *c, int status) {
    if (c->n->quorum) {
        if (status != KP_OK && c->error == 0)
            c->error = status == BK_QUORUM_NOT_LEADER ? KP_ERROR_NOT_CONTROLLER : KP_ERROR_UNKNOWN_SERVER_ERROR;
        if (c->api_key == KP_API_BROKER_REGISTRATION) {
            kp_broker_registration_response_t r;
            kp_broker_registration_response_init(&r);
            r.error_code = c->error;
            r.broker_epoch = c->error ? -1 : c->epoch;
            respond(c, &r);
        } else {
            kp_broker_heartbeat_response_t r;
            kp_broker_heartbeat_response_init(&r);
            r.error_code = c->error;
            r.is_caught_up = !c->hr.is_fenced;
            r.is_fenced = c->hr.is_fenced;
            r.should_shut_down = c->hr.should_shutdown;
            respond(c, &r);
        }
    }
    free(c);
}

static void serve_done(void *arg, int status) { answer(arg, status); }

static void serve_register(serve_ctx_t *c, const kp_broker_registration_request_t *b, kp_arena_t *a) {
    bk_node_t *n = c->n;
    if (b->listeners.count < 1 || b->listeners.count > BK_META_ENDPOINTS_MAX) { c->error = KP_ERROR_INVALID_REQUEST; answer(c, KP_OK); return; }
    bk_meta_ctrl_endpoint_t eps[BK_META_ENDPOINTS_MAX];
    for (int32_t i = 0; i < b->listeners.count; i++) {
        const kp_broker_registration_request_listener_t *l = &b->listeners.items[i];
        /* a NUL would cut the name or host registered for the whole
         * cluster (issue 16, finding 6): refused, never truncated */
        if (kp_slice_has_nul(l->name) || kp_slice_has_nul(l->host)) {
            c->error = KP_ERROR_INVALID_REQUEST;
            answer(c, KP_OK);
            return;
        }
        char *name = kp_arena_alloc(a, l->name.len + 1), *host = kp_arena_alloc(a, l->host.len + 1);
        if (!name || !host) { c->error = KP_ERROR_UNKNOWN_SERVER_ERROR; answer(c, KP_OK); return; }
        memcpy(name, l->name.p, l->name.len); name[l->name.len] = '\0';
        memcpy(host, l->host.p, l->host.len); host[l->host.len] = '\0';
        eps[i] = (bk_meta_ctrl_endpoint_t){ name, host, l->port };
    }
    /* the rack is copied whole (a rack of 256+ bytes used to be dropped
     * silently, the broker then placed as rack-less); a NUL is refused */
    char *rk = NULL;
    if (b->rack.p && b->rack.len) {
        if (kp_slice_has_nul(b->rack)) { c->error = KP_ERROR_INVALID_REQUEST; answer(c, KP_OK); return; }
        rk = kp_arena_alloc(a, b->rack.len + 1);
        if (!rk) { c->error = KP_ERROR_UNKNOWN_SERVER_ERROR; answer(c, KP_OK); return; }
        memcpy(rk, b->rack.p, b->rack.len);
        rk[b->rack.len] = '\0';
    }
    if (!kp_slice_eq_cstr(b->cluster_id, n->cluster_id)) { c->error = KP_ERROR_INCONSISTENT_CLUSTER_ID; answer(c, KP_OK); return; }
    bk_meta_ctrl_register_t rq = { b->broker_id, { 0 }, eps, (size_t)b->listeners.count, rk };
    memcpy(rq.incarnation, b->incarnation_id.b, BK_META_UUID_BYTES);
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    c->error = bk_meta_ctrl_register(&n->ctrl, bk_node_decision_image(n), &rq, bk_quorum_next_offset(n->quorum), bk_net_now_ms(), &recs, &c->epoch);
    if (c->error != 0) { bk_meta_recs_free(&recs); answer(c, KP_OK); return; }
    bk_node_commit(n, &recs, serve_done, c);
    bk_meta_recs_free(&recs);
}

static void serve_heartbeat(serve_ctx_t *c, const kp_broker_heartbeat_request_t *b) {
    bk_node_t *n = c->n;
    bk_meta_ctrl_heartbeat_t hb = { b->broker_id, b->broker_epoch, b->current_metadata_offset, b->want_fence, b->want_shut_down };
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_heartbeat(&n->ctrl, bk_node_decision_image(n), &hb, bk_net_now_ms(), &recs, &c->hr);
    c->error = c->hr.error;
    if (c->error != 0) { bk_meta_recs_free(&recs); answer(c, KP_OK); return; }
    bk_node_commit(n, &recs, serve_done, c);
    bk_meta_recs_free(&recs);
}

void bk_cluster_lifecycle_serve(bk_node_t *n, bk_net_conn_t *conn, const kp_request_header_t *hdr, void *body, kp_arena_t *a) {
    assert(hdr->api_key == KP_API_BROKER_REGISTRATION || hdr->api_key == KP_API_BROKER_HEARTBEAT);
    const kp_request_header_t h = *hdr;
    serve_ctx_t *c = calloc(1, sizeof *c);
    if (!c) { bk_net_conn_close(conn); return; }
    c->n = n;
    c->slot = bk_net_conn_slot(conn);
    c->api_key = h.api_key;
    c->version = h.api_version;
    c->corr = h.correlation_id;
    if (!bk_quorum_is_leader(n->quorum)) {
        c->error = KP_ERROR_NOT_CONTROLLER;
        answer(c, KP_OK);
    } else if (h.api_key == KP_API_BROKER_REGISTRATION) {
        serve_register(c, body, a);
    } else {
        serve_heartbeat(c, body);
    }
}

/* ---- timer ------------------------------------------------------------------------ */

/* Ends the round in flight when it can no longer help: the controller it
 * went to is no longer the raft leader (a silent old controller must not
 * keep us from heartbeating the new one, nor a remote request the local
 * path), or it outlived the session (a backstop: quorum_client times remote
 * requests out sooner). Its late answer is ignored (round / corr). */
static void abandon_stale(bk_node_t *n, bk_lifecycle_t *l, int64_t now) {
    if (!l->inflight) return;
    int32_t leader = bk_quorum_leader(n->quorum);
    int64_t session_ms = bk_cfg_int(n->cfg, BK_CFG_BROKER_SESSION_TIMEOUT_MS);
    bool moved = leader != l->inflight_to;
    if (!moved && now - l->inflight_since_ms < session_ms) return;
    fprintf(stderr, "skiff: node %d: abandoning %s %s to controller %d (%s)\n", n->id,
            l->inflight_to == n->id ? "local" : "remote", l->sched.registered ? "heartbeat" : "registration",
            l->inflight_to, moved ? "controller changed" : "unanswered for the session timeout");
    l->inflight = false;
    l->round++;
    bk_cluster_lc_sched_retry_now(&l->sched);   /* send to the new controller at once */
}

static void on_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    bk_node_t *n = arg;
    bk_lifecycle_t *l = life(n);
    if (!l || n->stopping || !n->quorum) return;
    int64_t now = bk_net_now_ms();
    int64_t interval = bk_cfg_int(n->cfg, BK_CFG_BROKER_HEARTBEAT_INTERVAL_MS);
    bool leader = bk_quorum_is_leader(n->quorum);
    if (leader && now - l->last_tick_ms >= LC_RETRY_MS) {
        l->last_tick_ms = now;
        bk_meta_recs_t recs;
        bk_meta_recs_init(&recs);
        bk_meta_ctrl_features_bootstrap(bk_node_decision_image(n), &recs);   /* a new cluster's levels */
        size_t fenced = bk_meta_ctrl_tick(&n->ctrl, bk_node_decision_image(n), now, &recs);
        if (recs.err != KP_OK)       /* not even partly committed: the next tick decides again */
            fprintf(stderr, "skiff: node %d (controller): tick decisions not built: %s\n", n->id,
                    bk_node_status_str(recs.err));
        else if (recs.n > 0) {
            if (fenced) fprintf(stderr, "skiff: node %d (controller): fencing %zu silent broker(s)\n", n->id, fenced);
            local_ctx_t *c = calloc(1, sizeof *c);
            if (c) { c->n = n; c->is_tick = true; bk_node_commit(n, &recs, local_done, c); }
        }
        bk_meta_recs_free(&recs);
        bk_cluster_rebalance_tick(n, now);
    }
    abandon_stale(n, l, now);
    if (l->inflight || bk_quorum_leader(n->quorum) < 0) return;
    if (!bk_cluster_lc_sched_due(&l->sched, now, interval)) return;
    bk_cluster_lc_sched_sent(&l->sched, now);
    if (leader) {
        local_round(n, now);
        return;
    }
    int32_t corr = 0;
    if ((l->sched.registered ? send_heartbeat(n, &corr) : send_register(n, &corr)) == 0) {
        (void)begin_round(l, bk_quorum_leader(n->quorum), corr, now);
    }
}

int bk_cluster_lifecycle_start(bk_node_t *n) {
    bk_lifecycle_t *l = calloc(1, sizeof *l);
    if (!l) return -1;
    if (getrandom(l->incarnation, sizeof l->incarnation, 0) != (ssize_t)sizeof l->incarnation) {
        free(l);
        return -1;
    }
    l->incarnation[0] |= 1;   /* never all-zero */
    l->dup_since_ms = -1;
    bk_cluster_lc_sched_init(&l->sched);
    n->life = l;
    l->timer = event_new(n->base, -1, EV_PERSIST, on_timer, n);
    struct timeval tv = { 0, LC_RETRY_MS * 1000 };
    if (!l->timer || event_add(l->timer, &tv) != 0) return -1;
    return 0;
}

void bk_cluster_lifecycle_stop(bk_node_t *n) {
    bk_lifecycle_t *l = life(n);
    if (!l) return;
    if (l->timer) event_free(l->timer);
    free(l);
    n->life = NULL;
}

void bk_cluster_lifecycle_role_changed(bk_node_t *n, bool leader) {
    if (!leader) return;
    /* fresh soft state: every registered broker gets a new session at the
     * first tick, so nobody is fenced for the time before we led */
    bk_meta_ctrl_config_t cfg = n->ctrl.cfg;   /* bk_meta_ctrl_init clears the struct it fills */
    bk_meta_ctrl_init(&n->ctrl, &cfg, n->ctrl.rng ^ (uint64_t)bk_net_now_ms());
}
