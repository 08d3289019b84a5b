/* repl_follower.c — the follower side: fetch loop, truncation by leader
 * epoch (never by HW), appending exactly the leader's batches, learning HW. */
#include <assert.h>

#include "broker/replication/repl_int.h"

void bk_repl_i_become_follower(bk_repl_t *r, int64_t now_ms, bk_repl_out_t *out) {
    r->role = BK_REPL_FOLLOWER;
    r->n_peers = 0;
    r->n_waits = 0;
    r->fetch_inflight = false;
    r->next_fetch_ms = now_ms;
    if (r->cfg.test_truncate_to_hw && r->hw < r->leo) {
        /* the pre-KIP-101 bug, kept only so the simulation can prove it
         * catches it */
        bk_repl_i_truncate(r, r->hw);
        out->truncate = true;
        out->truncate_to = r->hw;
    }
    bk_repl_i_follower_tick(r, now_ms, out);
}

void bk_repl_i_follower_tick(bk_repl_t *r, int64_t now_ms, bk_repl_out_t *out) {
    if (r->leader_id == BK_REPL_NO_NODE) return;
    if (r->fetch_inflight && now_ms - r->fetch_sent_ms < r->cfg.fetch_timeout_ms) return;
    if (r->fetch_inflight) {   /* lost request or answer: back off, retry */
        r->fetch_inflight = false;
        r->next_fetch_ms = now_ms + r->cfg.fetch_backoff_ms;
    }
    if (now_ms < r->next_fetch_ms) return;
    r->fetch_inflight = true;
    r->fetch_seq++;
    r->fetch_sent_ms = now_ms;
    r->fetch_offset_sent = r->leo;
    out->send_fetch = true;
    out->fetch = (bk_repl_fetch_req_t){
        .replica_id = r->cfg.node_id,
        .leader_id = r->leader_id,
        .current_leader_epoch = r->leader_epoch,
        .fetch_offset = r->leo,
        .last_fetched_epoch = bk_repl_i_latest_epoch(r),
        .seq = r->fetch_seq,
    };
}

/* The earliest time bk_repl_i_follower_tick can act (same conditions). */
int64_t bk_repl_i_follower_next_tick(const bk_repl_t *r) {
    if (r->leader_id == BK_REPL_NO_NODE) return INT64_MAX;
    if (r->fetch_inflight)
        return r->fetch_sent_ms > INT64_MAX - r->cfg.fetch_timeout_ms ? INT64_MAX
                                                                      : r->fetch_sent_ms + r->cfg.fetch_timeout_ms;
    return r->next_fetch_ms;
}

/* KIP-279: truncate to min(leader's end of the diverging epoch, our own end
 * of that epoch). If our epoch there differs, the next fetch (with our new
 * last epoch) goes one step further back. */
static void truncate_diverging(bk_repl_t *r, const bk_repl_fetch_resp_t *resp,
                               bk_repl_out_t *out) {
    int64_t to = resp->diverging_end_offset;
    if (resp->diverging_epoch != BK_REPL_NO_EPOCH) {
        int32_t my_epoch;
        int64_t my_end;
        bk_repl_epoch_end_offset(r, resp->diverging_epoch, &my_epoch, &my_end);
        if (my_end != BK_REPL_NO_OFFSET && my_end < to) to = my_end;
    }
    if (to < r->log_start) to = r->log_start;
    if (to >= r->leo) {
        /* Nothing of ours to cut, yet the leader disagrees: our last epoch
         * must go (its start is past the divergence). */
        if (r->n_epochs && r->epochs[r->n_epochs - 1].start_offset >= to) {
            to = r->epochs[r->n_epochs - 1].start_offset;
        } else {
            return;
        }
    }
    bk_repl_i_truncate(r, to);
    out->truncate = true;
    out->truncate_to = to;
}

static bool batches_valid(const bk_repl_t *r, const bk_repl_fetch_resp_t *resp) {
    if (resp->n_batches > BK_REPL_BATCHES_MAX) return false;
    int64_t next = r->leo;
    int32_t epoch = bk_repl_i_latest_epoch(r);
    for (uint32_t i = 0; i < resp->n_batches; i++) {
        const bk_repl_batch_t *b = &resp->batches[i];
        if (b->base_offset != next || b->last_offset < b->base_offset) return false;
        if (b->epoch < epoch || b->epoch > resp->leader_epoch) return false;
        epoch = b->epoch;
        next = b->last_offset + 1;
    }
    return true;
}

static void append_batches(bk_repl_t *r, const bk_repl_fetch_resp_t *resp,
                           bk_repl_out_t *out) {
    for (uint32_t i = 0; i < resp->n_batches; i++) {
        const bk_repl_batch_t *b = &resp->batches[i];
        if (b->epoch != bk_repl_i_latest_epoch(r))
            bk_repl_i_assign_epoch(r, b->epoch, b->base_offset);
        out->append[out->n_append++] = *b;
        r->leo = b->last_offset + 1;
    }
}

void bk_repl_on_fetch_resp(bk_repl_t *r, const bk_repl_fetch_resp_t *resp,
                           int64_t now_ms, bk_repl_out_t *out) {
    bk_repl_i_out_reset(out);
    if (r->role != BK_REPL_FOLLOWER || !r->fetch_inflight) return;
    if (resp->req_seq != r->fetch_seq || resp->req_fetch_offset != r->fetch_offset_sent)
        return;   /* stale or duplicated answer */
    r->fetch_inflight = false;
    if (resp->error != KP_ERROR_NONE || resp->leader_epoch != r->leader_epoch) {
        /* FENCED/UNKNOWN epoch, not leader: wait for the image, retry later */
        r->next_fetch_ms = now_ms + r->cfg.fetch_backoff_ms;
        return;
    }
    if (resp->diverging) {
        truncate_diverging(r, resp, out);
        r->next_fetch_ms = now_ms;
        bk_repl_i_follower_tick(r, now_ms, out);
        return;
    }
    if (!batches_valid(r, resp)) {
        r->next_fetch_ms = now_ms + r->cfg.fetch_backoff_ms;
        return;
    }
    append_batches(r, resp, out);
    int64_t hw = resp->high_watermark < r->leo ? resp->high_watermark : r->leo;
    if (hw > r->hw) {
        r->hw = hw;
        out->hw_changed = true;
        out->hw = hw;
    }
    /* An empty answer means we are at the leader's end: wait a little when
     * the leader answers at once (a real one waits max.wait.ms itself). */
    int64_t pause_ms = r->cfg.empty_fetch_pause_ms >= 0 ? r->cfg.empty_fetch_pause_ms : r->cfg.fetch_backoff_ms / 10;
    r->next_fetch_ms = resp->n_batches ? now_ms : now_ms + pause_ms;
    bk_repl_i_follower_tick(r, now_ms, out);
}
