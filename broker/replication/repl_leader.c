/* repl_leader.c — the leader side: produce, follower fetches, HW, acks=all
 * waits, ISR shrink/expand proposals (AlterPartition). */
#include <assert.h>
#include <string.h>

#include "broker/replication/repl_int.h"

static repl_peer_t *peer_find(bk_repl_t *r, int32_t id) {
    for (uint32_t i = 0; i < r->n_peers; i++)
        if (r->peers[i].id == id) return &r->peers[i];
    return NULL;
}

/* Committed ISR plus the members a pending AlterPartition adds: the HW and
 * the min.insync check after append use this (Kafka's maximal ISR), so a
 * shrink counts only once committed and an expansion counts at once. */
static uint32_t maximal_isr(const bk_repl_t *r, int32_t *ids) {
    uint32_t n = r->n_isr;
    memcpy(ids, r->isr, n * sizeof ids[0]);
    if (!r->alter_pending) return n;
    for (uint32_t i = 0; i < r->alter_inflight.n_isr; i++)
        if (!bk_repl_i_ids_has(ids, n, r->alter_inflight.isr[i]) && n < BK_REPL_REPLICAS_MAX)
            ids[n++] = r->alter_inflight.isr[i];
    return n;
}

static void complete_waits(bk_repl_t *r, bk_repl_out_t *out) {
    int32_t ids[BK_REPL_REPLICAS_MAX];
    uint32_t n_max = maximal_isr(r, ids);
    uint32_t keep = 0;
    for (uint32_t i = 0; i < r->n_waits; i++) {
        repl_wait_t *w = &r->waits[i];
        if (r->hw < w->required_offset) { r->waits[keep++] = *w; continue; }
        int16_t err = (int32_t)n_max >= r->cfg.min_insync
                          ? KP_ERROR_NONE : KP_ERROR_NOT_ENOUGH_REPLICAS_AFTER_APPEND;
        assert(out->n_acks < BK_REPL_WAITS_MAX);
        out->acks[out->n_acks++] = (bk_repl_ack_t){ w->id, err, w->base_offset };
    }
    r->n_waits = keep;
}

/* HW = min LEO over the maximal ISR (the leader counts its own LEO); an ISR
 * member whose LEO is unknown holds it. Never moves backwards. */
static void update_hw(bk_repl_t *r, bk_repl_out_t *out) {
    int32_t ids[BK_REPL_REPLICAS_MAX];
    uint32_t n = maximal_isr(r, ids);
    int64_t min_leo = r->leo;
    for (uint32_t i = 0; i < n; i++) {
        if (ids[i] == r->cfg.node_id) continue;
        repl_peer_t *p = peer_find(r, ids[i]);
        int64_t leo = p ? p->leo : BK_REPL_NO_OFFSET;
        if (leo < min_leo) min_leo = leo;
    }
    if (min_leo > r->hw) {
        r->hw = min_leo;
        out->hw_changed = true;
        out->hw = r->hw;
    }
    complete_waits(r, out);
}

static void propose_isr(bk_repl_t *r, const int32_t *isr, uint32_t n, int64_t now_ms,
                        bk_repl_out_t *out) {
    assert(bk_repl_i_ids_has(isr, n, r->cfg.node_id));
    bk_repl_alter_req_t *a = &r->alter_inflight;
    a->leader_id = r->cfg.node_id;
    a->leader_epoch = r->leader_epoch;
    a->partition_epoch = r->partition_epoch;
    memcpy(a->isr, isr, n * sizeof isr[0]);
    a->n_isr = n;
    a->seq = ++r->alter_seq;
    r->alter_pending = true;
    r->alter_wait_image = false;
    r->alter_sent_ms = now_ms;
    out->alter = true;
    out->alter_req = *a;
}

/* Kafka's isCaughtUp: at the leader's LEO, or caught up within the lag. */
static bool peer_caught_up(const bk_repl_t *r, const repl_peer_t *p, int64_t now_ms) {
    if (p->leo == r->leo) return true;
    return p->last_caught_up_ms >= now_ms - r->cfg.lag_max_ms;
}

static void maybe_shrink(bk_repl_t *r, int64_t now_ms, bk_repl_out_t *out) {
    if (r->alter_pending || now_ms < r->alter_backoff_until_ms) return;
    int32_t keep[BK_REPL_REPLICAS_MAX];
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->n_isr; i++) {
        int32_t id = r->isr[i];
        repl_peer_t *p = id == r->cfg.node_id ? NULL : peer_find(r, id);
        if (id == r->cfg.node_id || (p && peer_caught_up(r, p, now_ms))) keep[n++] = id;
    }
    if (n < r->n_isr) propose_isr(r, keep, n, now_ms, out);
}

/* Kafka: LEO >= HW and the follower has fetched this leader's epoch. */
static void maybe_expand(bk_repl_t *r, const repl_peer_t *p, int64_t now_ms,
                         bk_repl_out_t *out) {
    if (r->alter_pending || now_ms < r->alter_backoff_until_ms) return;
    if (bk_repl_i_ids_has(r->isr, r->n_isr, p->id)) return;
    if (p->leo < r->hw || p->leo < r->epoch_start_offset) return;
    int32_t isr[BK_REPL_REPLICAS_MAX];
    memcpy(isr, r->isr, r->n_isr * sizeof isr[0]);
    isr[r->n_isr] = p->id;
    propose_isr(r, isr, r->n_isr + 1, now_ms, out);
}

void bk_repl_i_become_leader(bk_repl_t *r, int64_t now_ms, bk_repl_out_t *out) {
    r->role = BK_REPL_LEADER;
    r->epoch_start_offset = r->leo;
    bk_repl_i_assign_epoch(r, r->leader_epoch, r->leo);
    r->n_peers = 0;
    for (uint32_t i = 0; i < r->n_replicas; i++) {
        if (r->replicas[i] == r->cfg.node_id) continue;
        bool in_isr = bk_repl_i_ids_has(r->isr, r->n_isr, r->replicas[i]);
        r->peers[r->n_peers++] = (repl_peer_t){
            .id = r->replicas[i], .leo = BK_REPL_NO_OFFSET,
            .last_fetch_ms = 0, .last_fetch_leader_leo = BK_REPL_NO_OFFSET,
            /* ISR members get a full lag period to show up */
            .last_caught_up_ms = in_isr ? now_ms : INT64_MIN / 2,
        };
    }
    r->n_waits = 0;
    r->alter_backoff_until_ms = 0;
    update_hw(r, out);
}

void bk_repl_i_sync_peers(bk_repl_t *r) {
    repl_peer_t keep[BK_REPL_REPLICAS_MAX];
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->n_replicas && n < BK_REPL_REPLICAS_MAX; i++) {
        int32_t id = r->replicas[i];
        if (id == r->cfg.node_id) continue;
        repl_peer_t *p = peer_find(r, id);
        keep[n++] = p ? *p : (repl_peer_t){ .id = id, .leo = BK_REPL_NO_OFFSET, .last_fetch_ms = 0,
                                            .last_fetch_leader_leo = BK_REPL_NO_OFFSET,
                                            .last_caught_up_ms = INT64_MIN / 2 };
    }
    memcpy(r->peers, keep, n * sizeof keep[0]);
    r->n_peers = n;
}

void bk_repl_i_apply_isr(bk_repl_t *r, int32_t partition_epoch, const int32_t *isr,
                         uint32_t n_isr, int64_t now_ms, bk_repl_out_t *out) {
    if (partition_epoch <= r->partition_epoch) return;
    r->partition_epoch = partition_epoch;
    memcpy(r->isr, isr, n_isr * sizeof isr[0]);
    r->n_isr = n_isr;
    /* A proposal based on an older partition epoch can never apply now, and
     * this state is the controller's truth: stop counting it. */
    r->alter_pending = false;
    r->alter_wait_image = false;
    update_hw(r, out);
}

void bk_repl_i_fail_waits(bk_repl_t *r, int16_t error, bk_repl_out_t *out) {
    for (uint32_t i = 0; i < r->n_waits; i++)
        out->acks[out->n_acks++] =
            (bk_repl_ack_t){ r->waits[i].id, error, r->waits[i].base_offset };
    r->n_waits = 0;
}

void bk_repl_i_leader_tick(bk_repl_t *r, int64_t now_ms, bk_repl_out_t *out) {
    uint32_t keep = 0;
    for (uint32_t i = 0; i < r->n_waits; i++) {
        repl_wait_t *w = &r->waits[i];
        if (now_ms < w->deadline_ms) { r->waits[keep++] = *w; continue; }
        out->acks[out->n_acks++] =
            (bk_repl_ack_t){ w->id, KP_ERROR_REQUEST_TIMED_OUT, w->base_offset };
    }
    r->n_waits = keep;
    if (r->alter_pending && !r->alter_wait_image &&
        now_ms - r->alter_sent_ms >= r->cfg.alter_retry_ms) {
        r->alter_sent_ms = now_ms;   /* same proposal, same partition epoch */
        out->alter = true;
        out->alter_req = r->alter_inflight;
    }
    maybe_shrink(r, now_ms, out);
}

/* The earliest time bk_repl_i_leader_tick can act, mirroring it condition
 * by condition: a wait's deadline, the re-send of a pending proposal, and
 * the moment an ISR member stops being caught up (peer_caught_up turns
 * false once now > last_caught_up_ms + lag_max_ms), not before a refused
 * proposal's backoff ends. */
int64_t bk_repl_i_leader_next_tick(const bk_repl_t *r) {
    int64_t due = INT64_MAX;
    for (uint32_t i = 0; i < r->n_waits; i++)
        if (r->waits[i].deadline_ms < due) due = r->waits[i].deadline_ms;
    if (r->alter_pending) {
        if (!r->alter_wait_image && r->alter_sent_ms + r->cfg.alter_retry_ms < due)
            due = r->alter_sent_ms + r->cfg.alter_retry_ms;
        return due;   /* no shrink while a proposal is pending */
    }
    for (uint32_t i = 0; i < r->n_isr; i++) {
        int32_t id = r->isr[i];
        if (id == r->cfg.node_id) continue;
        const repl_peer_t *p = NULL;
        for (uint32_t k = 0; k < r->n_peers; k++)
            if (r->peers[k].id == id) p = &r->peers[k];
        int64_t t;
        if (!p) t = INT64_MIN;                   /* not kept: shrinks at once */
        else if (p->leo == r->leo) continue;     /* caught up whatever the time */
        else t = p->last_caught_up_ms > INT64_MAX - r->cfg.lag_max_ms - 1
                     ? INT64_MAX : p->last_caught_up_ms + r->cfg.lag_max_ms + 1;
        if (t < r->alter_backoff_until_ms) t = r->alter_backoff_until_ms;
        if (t < due) due = t;
    }
    return due;
}

int16_t bk_repl_produce(bk_repl_t *r, uint32_t n_records, bool acks_all, uint64_t id,
                        int64_t deadline_ms, int64_t now_ms, int64_t *base_offset,
                        bk_repl_out_t *out) {
    bk_repl_i_out_reset(out);
    if (r->role != BK_REPL_LEADER) return KP_ERROR_NOT_LEADER_OR_FOLLOWER;
    if (n_records == 0) return KP_ERROR_INVALID_RECORD;
    if (acks_all && (int32_t)r->n_isr < r->cfg.min_insync) return KP_ERROR_NOT_ENOUGH_REPLICAS;
    if (acks_all && r->n_waits == BK_REPL_WAITS_MAX) return KP_ERROR_REQUEST_TIMED_OUT;
    *base_offset = r->leo;
    out->append[0] = (bk_repl_batch_t){ r->leo, r->leo + n_records - 1, r->leader_epoch };
    out->n_append = 1;
    r->leo += n_records;
    if (acks_all)
        r->waits[r->n_waits++] = (repl_wait_t){ id, *base_offset, r->leo, deadline_ms };
    update_hw(r, out);
    (void)now_ms;
    return KP_ERROR_NONE;
}

int16_t bk_repl_wait_replicated(bk_repl_t *r, int64_t base_offset, int64_t end_offset, uint64_t id,
                                int64_t deadline_ms, int64_t now_ms, bk_repl_out_t *out) {
    bk_repl_i_out_reset(out);
    if (r->role != BK_REPL_LEADER) return KP_ERROR_NOT_LEADER_OR_FOLLOWER;
    if (base_offset < r->log_start || end_offset <= base_offset || end_offset > r->leo)
        return KP_ERROR_INVALID_RECORD;
    if ((int32_t)r->n_isr < r->cfg.min_insync) return KP_ERROR_NOT_ENOUGH_REPLICAS;
    if (r->n_waits == BK_REPL_WAITS_MAX) return KP_ERROR_REQUEST_TIMED_OUT;
    r->waits[r->n_waits++] = (repl_wait_t){ id, base_offset, end_offset, deadline_ms };
    complete_waits(r, out);   /* already below the HW: answered now */
    (void)now_ms;
    return KP_ERROR_NONE;
}

static int16_t check_epoch(const bk_repl_t *r, int32_t epoch) {
    if (r->role != BK_REPL_LEADER) return KP_ERROR_NOT_LEADER_OR_FOLLOWER;
    if (epoch < r->leader_epoch) return KP_ERROR_FENCED_LEADER_EPOCH;
    if (epoch > r->leader_epoch) return KP_ERROR_UNKNOWN_LEADER_EPOCH;
    return KP_ERROR_NONE;
}

/* KIP-320: the follower's (fetch offset, last fetched epoch) must lie on the
 * leader's log; otherwise answer where that epoch ends here. */
static bool diverges(const bk_repl_t *r, const bk_repl_fetch_req_t *req,
                     bk_repl_fetch_resp_t *resp) {
    if (req->last_fetched_epoch == BK_REPL_NO_EPOCH) {
        if (req->fetch_offset <= r->leo) return false;
        resp->diverging_epoch = BK_REPL_NO_EPOCH;
        resp->diverging_end_offset = r->leo;
        return true;
    }
    int32_t e;
    int64_t end;
    bk_repl_epoch_end_offset(r, req->last_fetched_epoch, &e, &end);
    if (e == req->last_fetched_epoch && end >= req->fetch_offset) return false;
    resp->diverging_epoch = e;
    resp->diverging_end_offset = end == BK_REPL_NO_OFFSET ? r->log_start : end;
    return true;
}

static void update_peer(bk_repl_t *r, repl_peer_t *p, int64_t fetch_offset,
                        int64_t now_ms) {
    /* Kafka's updateFetchState: caught up now if at our LEO; else caught up
     * as of the previous fetch if it reached our LEO of that time. */
    if (fetch_offset >= r->leo)
        p->last_caught_up_ms = now_ms;
    else if (p->last_fetch_leader_leo != BK_REPL_NO_OFFSET &&
             fetch_offset >= p->last_fetch_leader_leo &&
             p->last_fetch_ms > p->last_caught_up_ms)
        p->last_caught_up_ms = p->last_fetch_ms;
    p->leo = fetch_offset;
    p->last_fetch_ms = now_ms;
    p->last_fetch_leader_leo = r->leo;
}

void bk_repl_on_fetch(bk_repl_t *r, const bk_repl_fetch_req_t *req, int64_t now_ms,
                      bk_repl_fetch_resp_t *resp, bk_repl_out_t *out) {
    bk_repl_i_out_reset(out);
    memset(resp, 0, sizeof *resp);
    resp->leader_epoch = r->leader_epoch;
    resp->req_fetch_offset = req->fetch_offset;
    resp->req_seq = req->seq;
    resp->error = check_epoch(r, req->current_leader_epoch);
    repl_peer_t *p = peer_find(r, req->replica_id);
    if (resp->error == KP_ERROR_NONE && !p) resp->error = KP_ERROR_NOT_LEADER_OR_FOLLOWER;
    if (resp->error == KP_ERROR_NONE && req->fetch_offset < r->log_start)
        resp->error = KP_ERROR_OFFSET_OUT_OF_RANGE;
    if (resp->error != KP_ERROR_NONE) return;
    resp->high_watermark = r->hw;
    resp->leader_leo = r->leo;
    resp->log_start = r->log_start;
    if (diverges(r, req, resp)) {
        resp->diverging = true;
        return;   /* the follower's position tells nothing about its log */
    }
    /* An ISR member always holds everything below the HW (the HW is the
     * ISR's minimum LEO). One fetching below it has lost committed data
     * (skiff's scrubber truncated a corrupt batch away, or a disk lost
     * it): it must not stay eligible for leadership while it re-fetches,
     * so it leaves the ISR now rather than after replica.lag.time.max.ms. */
    bool lost = req->fetch_offset < r->hw && bk_repl_i_ids_has(r->isr, r->n_isr, p->id);
    update_peer(r, p, req->fetch_offset, now_ms);
    if (lost) {
        p->last_caught_up_ms = INT64_MIN / 2;
        maybe_shrink(r, now_ms, out);
    }
    update_hw(r, out);
    resp->high_watermark = r->hw;   /* may have moved with this fetch */
    if (!out->alter) maybe_expand(r, p, now_ms, out);
}

void bk_repl_on_alter_resp(bk_repl_t *r, const bk_repl_alter_resp_t *resp,
                           int64_t now_ms, bk_repl_out_t *out) {
    bk_repl_i_out_reset(out);
    if (r->role != BK_REPL_LEADER) return;
    if (resp->error == KP_ERROR_NONE) {
        /* the controller's state at resp->partition_epoch, whichever
         * proposal produced it; apply_isr ignores it unless newer */
        if (resp->leader_epoch != r->leader_epoch || resp->n_isr > BK_REPL_REPLICAS_MAX) return;
        if (!bk_repl_i_ids_has(resp->isr, resp->n_isr, r->cfg.node_id)) return;
        bk_repl_i_apply_isr(r, resp->partition_epoch, resp->isr, resp->n_isr, now_ms, out);
        return;
    }
    if (!r->alter_pending || resp->req_seq != r->alter_seq) return;   /* stale */
    bool not_applied = (resp->error == KP_ERROR_INELIGIBLE_REPLICA ||
                        resp->error == KP_ERROR_OPERATION_NOT_ATTEMPTED) &&
                       resp->partition_epoch == r->alter_inflight.partition_epoch;
    if (!not_applied) {
        /* An earlier send of this proposal may have been applied: keep
         * counting it. A newer state exists (stale partition or leader
         * epoch): let the image decide, as Kafka does; anything else is
         * transient and the tick re-sends. */
        r->alter_wait_image = resp->error == KP_ERROR_INVALID_UPDATE_VERSION ||
                              resp->error == KP_ERROR_FENCED_LEADER_EPOCH ||
                              resp->error == KP_ERROR_NOT_LEADER_OR_FOLLOWER;
        return;
    }
    r->alter_pending = false;
    r->alter_backoff_until_ms = now_ms + r->cfg.alter_retry_ms;
    update_hw(r, out);
}
