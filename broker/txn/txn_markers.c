/* broker/txn/txn_markers.c — WriteTxnMarkers from the coordinator: applied here
 * for partitions this node leads, else sent to the leader's Kafka listener
 * (one connection per broker, bk_qc); the leader side of a marker; the
 * producer-id block the coordinators hand ids out of. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/meta/controller.h"
#include "broker/group/group_driver.h"
#include "broker/replication/partition.h"
#include "broker/replication/parts.h"
#include "broker/quorum/quorum.h"
#include "broker/txn/txn_driver_int.h"
#include "broker/txn/txn_part.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_header.h"
#include "storage/st_log.h"
#include "storage/st_status.h"

#define PID_REFILL_SEQ 0u                  /* pending arg of a producer-id request */
#define MARKER_REQ_VERSION 1
#define PID_REQ_VERSION 0

static uint64_t next_seq = 16;              /* flight ids (loop thread only) */

/* ---- the leader side ------------------------------------------------------------ */

/* One marker appended on a led partition, waiting for the ISR (acks=all). */
typedef struct {
    bk_node_t *n;
    char *topic;                 /* owned */
    int32_t partition;
    int64_t producer_id;
    bool commit;
    bk_txn_td_marker_fn fn;
    void *ctx;
} marker_wait_t;

/* The marker is replicated (err NONE) or not (REQUEST_TIMED_OUT,
 * NOT_LEADER_OR_FOLLOWER, ...): only a replicated marker makes offsets of
 * the transaction visible; a failed one is re-sent by the coordinator. */
static void marker_replicated(void *ctx, void *part_ctx, const bk_repl_ps_result_t *res) {
    (void)ctx;
    marker_wait_t *w = part_ctx;
    int16_t err = res->error;
    if (err)
        fprintf(stderr, "skiff: node %d: marker on %s-%d not replicated: %s\n", w->n->id, w->topic, w->partition,
                kp_error_name(err));
    else if (strcmp(w->topic, BK_GRP_GD_TOPIC) == 0 && !w->n->stopping)
        bk_grp_gd_txn_complete(w->n->groups, w->partition, w->producer_id, w->commit);
    w->fn(w->ctx, err);
    free(w->topic);
    free(w);
}

bool bk_txn_td_write_marker(bk_node_t *n, const char *topic, int32_t partition, int64_t producer_id,
                        int16_t producer_epoch, bool commit, int32_t coordinator_epoch, bk_txn_td_marker_fn fn, void *ctx,
                        int16_t *err) {
    bk_repl_part_t *p = NULL;
    if ((*err = bk_repl_ps_find(n, bk_meta_image_topic_by_name(&n->img, topic), partition, &p)) != 0) return false;
    /* acks=-1 as Kafka: the topic's min.insync.replicas holds */
    bk_repl_ps_opts_t po = { .acks = -1, .min_insync = 0, .timeout_ms = BK_TXN_TD_WRITE_TIMEOUT_MS, .leader_epoch = -1 };
    if ((*err = bk_repl_ps_check(n, p, &po)) != 0) return false;
    const st_producer_state_t *ps = st_log_producers(p->log);
    if ((*err = bk_txn_part_check_marker(ps, producer_id, producer_epoch, coordinator_epoch)) != 0) return false;
    const st_ps_entry_t *pe = st_ps_get(ps, producer_id);
    bool open = pe && pe->txn_first_offset >= 0;
    /* Nothing of this transaction open here and everything replicated (no
     * data, or a re-sent marker whose first copy is in the HW): no control
     * batch is needed. A re-sent marker whose first copy may still be
     * unreplicated is appended again (harmless, as in Kafka) so that its
     * answer waits for the ISR. Pending TxnOffsetCommit offsets of the
     * producer always get one: a later replay of __consumer_offsets
     * resolves its transactional batch only at a control batch. */
    bool offsets = strcmp(topic, BK_GRP_GD_TOPIC) == 0;
    if (offsets && bk_grp_gd_txn_has_offsets(n->groups, partition, producer_id)) open = true;
    if (!open && st_log_high_watermark(p->log) >= st_log_end_offset(p->log)) {
        if (offsets) bk_grp_gd_txn_complete(n->groups, partition, producer_id, commit);
        return false;
    }
    /* allocated before the append: nothing may fail after it */
    marker_wait_t *w = calloc(1, sizeof *w);
    char *tcopy = strdup(topic);
    if (!w || !tcopy) {
        free(w);
        free(tcopy);
        *err = KP_ERROR_REQUEST_TIMED_OUT;   /* not acknowledged: the coordinator re-sends */
        return false;
    }
    *w = (marker_wait_t){ n, tcopy, partition, producer_id, commit, fn, ctx };
    kp_arena_t a;
    kp_arena_init(&a, 1 << 16);
    const uint8_t *b = NULL;
    size_t len = 0;
    bk_repl_ps_result_t res = { KP_ERROR_KAFKA_STORAGE_ERROR, -1, -1, -1, -1, false };
    bool waits = false;
    if (kp_batch_build_txn_marker(producer_id, producer_epoch, commit, coordinator_epoch, bk_net_now_ms(), &a, &b, &len) ==
        KP_OK) {
        bk_repl_ps_set_t set = bk_repl_ps_set_internal((uint8_t *)b, len);
        waits = bk_repl_ps_append(n, p, &set, &po, marker_replicated, NULL, w, &res);
    } else {
        fprintf(stderr, "skiff: node %d: marker on %s-%d not built (out of memory)\n", n->id, topic, partition);
    }
    kp_arena_free(&a);
    if (waits) return true;
    *err = res.error;
    if (*err == 0 && offsets) bk_grp_gd_txn_complete(n->groups, partition, producer_id, commit);
    free(w->topic);
    free(w);
    return false;
}

/* A final answer that means the marker was not written: worth a log line. */
static void note_refused(const bk_node_t *n, const char *id, const char *topic, size_t topic_len, int32_t partition,
                         int16_t e) {
    if (e == KP_ERROR_INVALID_PRODUCER_EPOCH || e == KP_ERROR_TRANSACTION_COORDINATOR_FENCED)
        fprintf(stderr, "skiff: node %d: marker of %s for %.*s-%d refused: %s\n", n->id, id, (int)topic_len, topic,
                partition, kp_error_name(e));
}

/* ---- peers ----------------------------------------------------------------------- */

static void on_resp(void *ctx, int32_t peer_id, const bk_net_qc_pending_t *pend, const uint8_t *frame, size_t len);

static bk_net_qc_peer_t *peer_for(bk_txn_td_t *td, int32_t broker) {
    const bk_meta_broker_t *b = bk_meta_image_broker(&td->node->img, broker);
    if (!b || b->fenced || b->nendpoints == 0) return NULL;
    const bk_meta_endpoint_t *ep = bk_node_broker_endpoint(td->node, b, NULL); /* the inter-broker listener */
    td_peer_t *slot = NULL;
    for (size_t i = 0; i < td->npeers; i++)
        if (td->peers[i].broker == broker) slot = &td->peers[i];
    if (slot && slot->peer && slot->port == ep->port && strcmp(slot->host, ep->host) == 0) return slot->peer;
    if (!slot) {
        if (td->npeers >= BK_TXN_TD_PEERS_MAX) return NULL;
        slot = &td->peers[td->npeers++];
        memset(slot, 0, sizeof *slot);
        slot->broker = broker;
    }
    bk_net_qc_free(slot->peer);   /* its requests are reported lost: re-sent by the timer */
    slot->peer = NULL;
    if (strlen(ep->host) >= sizeof slot->host || ep->port == 0) return NULL;
    snprintf(slot->host, sizeof slot->host, "%s", ep->host);
    slot->port = ep->port;
    slot->peer = bk_net_qc_new(td->node->base, broker, ep->host, (uint16_t)ep->port, on_resp, td);
    return slot->peer;
}

void td_peers_free(bk_txn_td_t *td) {
    for (size_t i = 0; i < td->npeers; i++) {
        bk_net_qc_peer_t *p = td->peers[i].peer;
        td->peers[i].peer = NULL;
        bk_net_qc_free(p);
    }
    td->npeers = 0;
}

int td_send_frame(bk_txn_td_t *td, int32_t broker, int16_t api, int16_t ver, const void *body, uint64_t seq) {
    bk_net_qc_peer_t *p = peer_for(td, broker);
    if (!p) return -1;
    kp_request_header_t h = { api, ver, bk_net_qc_next_corr(p), kp_slice_cstr("skiff-txn") };
    uint8_t *buf = NULL;
    size_t len = 0;
    if (kp_request_encode_alloc(&h, body, &buf, &len) != KP_OK) return -1;
    bk_net_qc_pending_t pend;
    memset(&pend, 0, sizeof pend);
    pend.kind = BK_NET_QC_FORWARD;
    pend.corr = h.correlation_id;
    pend.arg = (void *)(uintptr_t)seq;
    int rc = bk_net_qc_send(p, buf, len, &pend, bk_net_now_ms());
    free(buf);
    return rc;
}

/* ---- flights ----------------------------------------------------------------------- */

static void flight_free(td_flight_t *f) {
    for (size_t i = 0; i < f->nparts; i++) free((void *)f->parts[i].topic);
    free(f->parts);
    free(f->id);
    free(f);
}

/* Unlinks and returns the flight with this sequence number, or NULL. */
static td_flight_t *flight_take(bk_txn_td_t *td, uint64_t seq) {
    for (td_flight_t **pp = &td->flights; *pp; pp = &(*pp)->next) {
        td_flight_t *f = *pp;
        if (f->seq != seq) continue;
        *pp = f->next;
        td->nflights--;
        return f;
    }
    return NULL;
}

bool td_in_flight(const bk_txn_td_t *td, int32_t pidx, const char *id, int64_t now_ms) {
    for (const td_flight_t *f = td->flights; f; f = f->next)
        if (f->pidx == pidx && strcmp(f->id, id) == 0 && now_ms - f->sent_ms < BK_TXN_TD_MARKER_RESEND_MS) return true;
    return false;
}

void td_flights_drop(bk_txn_td_t *td, int32_t pidx) {
    for (td_flight_t **pp = &td->flights; *pp;) {
        td_flight_t *f = *pp;
        if (pidx >= 0 && f->pidx != pidx) { pp = &f->next; continue; }
        *pp = f->next;
        td->nflights--;
        flight_free(f);
    }
}

/* Sends the flight's partitions as one WriteTxnMarkers request. */
static bool flight_send(bk_txn_td_t *td, td_flight_t *f, bool commit) {
    kp_write_txn_markers_request_writable_txn_marker_topic_t *ts = calloc(f->nparts, sizeof *ts);
    int32_t *idx = calloc(f->nparts, sizeof *idx);
    bool ok = ts && idx;
    size_t nt = 0;
    for (size_t i = 0; ok && i < f->nparts; i++) {
        idx[i] = f->parts[i].partition;
        if (nt == 0 || strcmp((const char *)ts[nt - 1].name.p, f->parts[i].topic) != 0 ||
            ts[nt - 1].name.len != strlen(f->parts[i].topic)) {
            kp_write_txn_markers_request_writable_txn_marker_topic_init(&ts[nt]);
            ts[nt].name = kp_slice_cstr(f->parts[i].topic);
            ts[nt].partition_indexes.items = &idx[i];
            ts[nt].partition_indexes.count = 0;
            nt++;
        }
        ts[nt - 1].partition_indexes.count++;
    }
    if (ok) {
        kp_write_txn_markers_request_writable_txn_marker_t m;
        kp_write_txn_markers_request_writable_txn_marker_init(&m);
        m.producer_id = f->producer_id;
        m.producer_epoch = f->producer_epoch;
        m.transaction_result = commit;
        m.coordinator_epoch = f->coord_epoch;
        m.topics.items = ts;
        m.topics.count = (int32_t)nt;
        kp_write_txn_markers_request_t q;
        kp_write_txn_markers_request_init(&q);
        q.markers.items = &m;
        q.markers.count = 1;
        ok = td_send_frame(td, f->broker, KP_API_WRITE_TXN_MARKERS, MARKER_REQ_VERSION, &q, f->seq) == 0;
    }
    free(ts);
    free(idx);
    return ok;
}

/* A flight for broker holding m's partitions that broker leads (sorted as m). */
static void send_remote(bk_txn_td_t *td, int32_t pidx, const bk_txn_markers_t *m, int32_t broker,
                        const int32_t *leader) {
    if (td->nflights >= BK_TXN_TD_INFLIGHT_MAX) return;       /* the timer re-sends */
    td_flight_t *f = calloc(1, sizeof *f);
    if (!f) return;
    f->parts = calloc(m->nparts, sizeof *f->parts);
    f->id = strdup(m->transactional_id);
    if (!f->parts || !f->id) { flight_free(f); return; }
    for (size_t i = 0; i < m->nparts; i++) {
        if (leader[i] != broker) continue;
        char *t = strdup(m->parts[i].topic);
        if (!t) { flight_free(f); return; }
        f->parts[f->nparts].topic = t;
        f->parts[f->nparts++].partition = m->parts[i].partition;
    }
    f->seq = next_seq++;
    f->pidx = pidx;
    f->coord_epoch = m->coordinator_epoch;
    f->broker = broker;
    f->producer_id = m->producer_id;
    f->producer_epoch = m->producer_epoch;
    f->sent_ms = bk_net_now_ms();
    f->commit = m->commit;
    if (!flight_send(td, f, m->commit)) { flight_free(f); return; }
    f->next = td->flights;
    td->flights = f;
    td->nflights++;
}

/* A local marker's wait: the flight (broker = this node) it belongs to. */
typedef struct {
    bk_txn_td_t *td;
    uint64_t seq;
} local_wait_t;

/* A local marker replicated or not: final answers go to the core (which
 * may emit the Complete* record), others are re-sent by the timer. */
static void local_marker_done(void *ctx, int16_t err) {
    local_wait_t *lw = ctx;
    bk_txn_td_t *td = lw->td;
    td_flight_t *f = flight_take(td, lw->seq);
    free(lw);
    if (!f) return;                                       /* core dropped meanwhile */
    bk_txn_coord_t *c = f->pidx < td->ncoords ? td->coords[f->pidx] : NULL;
    if (c && c->coordinator_epoch == f->coord_epoch && bk_txn_part_marker_final(err) && !td->stopped) {
        bk_txn_out_t out;
        bk_txn_out_init(&out);
        bk_txn_marker_done(c, f->id, f->producer_id, f->producer_epoch, f->parts[0], bk_net_now_ms(), &out);
        bk_td_finish(td, f->pidx, &out, NULL, NULL, NULL);
    }
    flight_free(f);
}

/* Writes the marker of m on tp, led here: done now (into out) or later
 * through a flight to ourselves, which keeps the timer from re-sending it. */
static void write_local(bk_txn_td_t *td, int32_t pidx, const bk_txn_markers_t *m, const bk_txn_tp_t *tp,
                        bk_txn_out_t *out) {
    bk_node_t *n = td->node;
    if (td->nflights >= BK_TXN_TD_INFLIGHT_MAX) return;       /* the timer re-sends */
    td_flight_t *f = calloc(1, sizeof *f);
    local_wait_t *lw = calloc(1, sizeof *lw);
    if (f) {
        f->parts = calloc(1, sizeof *f->parts);
        f->id = strdup(m->transactional_id);
    }
    char *topic = strdup(tp->topic);
    if (!f || !lw || !f->parts || !f->id || !topic) {
        if (f) flight_free(f);
        free(lw);
        free(topic);
        return;                                           /* the timer re-sends */
    }
    f->parts[0] = (bk_txn_tp_t){ topic, tp->partition };
    f->nparts = 1;
    f->seq = next_seq++;
    f->pidx = pidx;
    f->coord_epoch = m->coordinator_epoch;
    f->broker = n->id;
    f->producer_id = m->producer_id;
    f->producer_epoch = m->producer_epoch;
    f->sent_ms = bk_net_now_ms();
    f->commit = m->commit;
    *lw = (local_wait_t){ td, f->seq };
    f->next = td->flights;                                /* linked first: a nested completion finds it */
    td->flights = f;
    td->nflights++;
    int16_t e = 0;
    if (bk_txn_td_write_marker(n, tp->topic, tp->partition, m->producer_id, m->producer_epoch, m->commit,
                           m->coordinator_epoch, local_marker_done, lw, &e))
        return;
    free(lw);
    f = flight_take(td, f->seq);
    if (!f) return;
    note_refused(n, m->transactional_id, tp->topic, strlen(tp->topic), tp->partition, e);
    if (bk_txn_part_marker_final(e))
        bk_txn_marker_done(td->coords[pidx], m->transactional_id, m->producer_id, m->producer_epoch, *tp,
                           bk_net_now_ms(), out);
    flight_free(f);
}

void td_send_markers(bk_txn_td_t *td, int32_t pidx, const bk_txn_markers_t *m, bk_txn_out_t *out) {
    bk_node_t *n = td->node;
    int32_t *leader = calloc(m->nparts ? m->nparts : 1, sizeof *leader);
    if (!leader) return;                                  /* the timer re-sends */
    int64_t now = bk_net_now_ms();
    for (size_t i = 0; i < m->nparts; i++) {
        const bk_txn_tp_t *tp = &m->parts[i];
        const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&n->img, tp->topic);
        leader[i] = -1;
        if (!t || tp->partition < 0 || tp->partition >= t->nparts) {
            bk_txn_marker_done(td->coords[pidx], m->transactional_id, m->producer_id, m->producer_epoch, *tp, now, out);
            continue;                                     /* deleted: nothing to mark */
        }
        int32_t l = t->parts[tp->partition].leader;
        if (l != n->id) { leader[i] = l; continue; }
        write_local(td, pidx, m, tp, out);
    }
    for (size_t i = 0; i < m->nparts; i++) {
        if (leader[i] < 0) continue;
        bool first = true;                                /* one flight per broker */
        for (size_t k = 0; k < i; k++) if (leader[k] == leader[i]) first = false;
        if (first) send_remote(td, pidx, m, leader[i], leader);
    }
    free(leader);
}

static void marker_answer(bk_txn_td_t *td, td_flight_t *f, const kp_write_txn_markers_response_t *r) {
    bk_txn_coord_t *c = f->pidx < td->ncoords ? td->coords[f->pidx] : NULL;
    if (!c || c->coordinator_epoch != f->coord_epoch) return;  /* reloaded since: stale answer */
    bk_txn_out_t out;
    bk_txn_out_init(&out);
    int64_t now = bk_net_now_ms();
    for (int32_t i = 0; i < r->markers.count; i++) {
        const kp_write_txn_markers_response_writable_txn_marker_result_t *m = &r->markers.items[i];
        if (m->producer_id != f->producer_id) continue;
        for (int32_t k = 0; k < m->topics.count; k++) {
            const kp_write_txn_markers_response_writable_txn_marker_topic_result_t *t = &m->topics.items[k];
            for (int32_t j = 0; j < t->partitions.count; j++) {
                note_refused(td->node, f->id, (const char *)t->name.p, t->name.len, t->partitions.items[j].partition_index,
                             t->partitions.items[j].error_code);
                if (!bk_txn_part_marker_final(t->partitions.items[j].error_code)) continue;
                for (size_t q = 0; q < f->nparts; q++) {
                    if (f->parts[q].partition != t->partitions.items[j].partition_index ||
                        strlen(f->parts[q].topic) != t->name.len ||
                        memcmp(f->parts[q].topic, t->name.p, t->name.len) != 0)
                        continue;
                    bk_txn_marker_done(c, f->id, f->producer_id, f->producer_epoch, f->parts[q], now, &out);
                }
            }
        }
    }
    bk_td_finish(td, f->pidx, &out, NULL, NULL, NULL);
}

static void pid_answer(bk_txn_td_t *td, const kp_init_producer_id_response_t *r) {
    bk_node_t *n = td->node;
    if (r->error_code != 0 || r->producer_id < 0) return;
    if (n->pid_next < n->pid_end) return;               /* refilled meanwhile */
    n->pid_next = r->producer_id;
    n->pid_end = r->producer_id + 1;
}

static void on_resp(void *ctx, int32_t peer_id, const bk_net_qc_pending_t *pend, const uint8_t *frame, size_t len) {
    (void)peer_id;
    bk_txn_td_t *td = ctx;
    uint64_t seq = (uint64_t)(uintptr_t)pend->arg;
    if (seq & TD_VERIFY_SEQ_BIT) {               /* a produce's verification (txn_verify.c) */
        td_verify_answer(td, seq, pend->corr, frame, len);
        return;
    }
    td_flight_t *f = NULL;
    if (seq == PID_REFILL_SEQ) td->pid_refill = false;
    else if (!(f = flight_take(td, seq))) return;
    if (frame && !td->stopped) {
        int16_t api = f ? KP_API_WRITE_TXN_MARKERS : KP_API_INIT_PRODUCER_ID;
        int16_t ver = f ? MARKER_REQ_VERSION : PID_REQ_VERSION;
        kp_arena_t a;
        kp_arena_init(&a, (size_t)64 << 20);
        int32_t corr = 0;
        void *body = NULL;
        if (kp_response_decode(api, ver, frame, len, &corr, &body, &a) == KP_OK && corr == pend->corr) {
            if (f) marker_answer(td, f, body);
            else pid_answer(td, body);
        }
        kp_arena_free(&a);
    }
    if (f) flight_free(f);       /* a lost or failed one is re-sent by the timer */
}

/* ---- producer ids ---------------------------------------------------------------- */

typedef struct {
    bk_txn_td_t *td;
    int64_t first;
    int32_t count;
} refill_t;

static void block_committed(void *arg, int status) {
    refill_t *r = arg;
    bk_node_t *n = r->td->node;
    r->td->pid_refill = false;
    if (status == KP_OK && n->pid_next >= n->pid_end) {
        n->pid_next = r->first;
        n->pid_end = r->first + r->count;
    }
    free(r);
}

/* A new block: committed here on the controller, else one id asked of the
 * controller with an idempotent InitProducerId (it hands out of its block). */
static void refill(bk_txn_td_t *td) {
    bk_node_t *n = td->node;
    if (td->pid_refill || td->stopped) return;
    int32_t ctl = bk_node_controller_id(n);
    if (ctl < 0) return;
    if (ctl != n->id) {
        kp_init_producer_id_request_t q;
        kp_init_producer_id_request_init(&q);
        q.transactional_id = kp_slice_null();
        q.transaction_timeout_ms = -1;
        if (td_send_frame(td, ctl, KP_API_INIT_PRODUCER_ID, PID_REQ_VERSION, &q, PID_REFILL_SEQ) == 0)
            td->pid_refill = true;
        return;
    }
    refill_t *r = calloc(1, sizeof *r);
    if (!r) return;
    r->td = td;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    int16_t e = bk_meta_ctrl_alloc_producer_ids(&n->ctrl, &n->img, n->id, n->broker_epoch, &recs, &r->first, &r->count);
    if (e != 0 || r->count <= 0 || recs.err != KP_OK) {
        bk_meta_recs_free(&recs);
        free(r);
        return;
    }
    td->pid_refill = true;
    bk_node_commit(n, &recs, block_committed, r);
    bk_meta_recs_free(&recs);
}

bool bk_txn_td_alloc_pid(bk_txn_td_t *td, int64_t *producer_id) { return td_alloc_pid(td, producer_id); }

bool td_alloc_pid(void *ctx, int64_t *producer_id) {
    bk_txn_td_t *td = ctx;
    bk_node_t *n = td->node;
    if (n->pid_next >= n->pid_end) refill(td);   /* a local commit may fill it at once */
    if (n->pid_next >= n->pid_end) return false; /* COORDINATOR_LOAD_IN_PROGRESS: retried */
    *producer_id = n->pid_next++;
    return true;
}

