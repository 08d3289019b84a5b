/* txn_done.c — what happens after a write or a marker: state changes on
 * durability, marker tracking, Complete* records, timeouts and expiry. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "broker/txn/txn_int.h"
#include "protocol/kp_errors.h"

void txn_fence_abort(bk_txn_coord_t *c, bk_txn_entry_t *e, txn_wait_t wait, int64_t now_ms,
                     bk_txn_out_t *out) {
    assert(e->cur.state == BK_TXN_ONGOING && !e->pending);
    if (txn_meta_copy(&e->next, &e->cur) != KP_OK) {
        out->err = KP_ERR_NOMEM;
        return;
    }
    /* Bump the epoch in memory at once, as Kafka does, so the old instance
     * is fenced while the PrepareAbort is being written; undone on failure. */
    e->epoch_before_fence = e->cur.producer_epoch;
    /* InitProducerId rotates ids before the epoch can reach the maximum; a
     * log that says otherwise gets the abort without the bump. */
    if (e->cur.producer_epoch < BK_TXN_EPOCH_MAX) e->cur.producer_epoch++;
    e->next.producer_epoch = e->cur.producer_epoch;
    e->next.last_producer_epoch = -1;
    e->next.state = BK_TXN_PREPARE_ABORT;
    e->next.last_update_ms = now_ms;
    if (!txn_emit(c, e, wait, false, out)) e->cur.producer_epoch = e->epoch_before_fence;
}

void txn_emit_complete(bk_txn_coord_t *c, bk_txn_entry_t *e, int64_t now_ms, bk_txn_out_t *out) {
    assert(e->complete_due && !e->pending);
    bk_txn_meta_t tmp = e->cur;
    tmp.nparts = 0;
    if (txn_meta_copy(&e->next, &tmp) != KP_OK) {
        out->err = KP_ERR_NOMEM;
        return;
    }
    e->next.state = e->cur.state == BK_TXN_PREPARE_COMMIT ? BK_TXN_COMPLETE_COMMIT : BK_TXN_COMPLETE_ABORT;
    e->next.last_update_ms = now_ms;
    (void)txn_emit(c, e, TXN_W_COMPLETE, false, out);
}

void txn_start_markers(bk_txn_coord_t *c, bk_txn_entry_t *e, int64_t now_ms, bk_txn_out_t *out) {
    assert(e->cur.state == BK_TXN_PREPARE_COMMIT || e->cur.state == BK_TXN_PREPARE_ABORT);
    free(e->acked);
    e->acked = calloc(e->cur.nparts ? e->cur.nparts : 1, sizeof *e->acked);
    if (!e->acked) {
        /* the markers are re-sent from bk_txn_pending_markers / a reload */
        out->err = KP_ERR_NOMEM;
        e->unacked = e->cur.nparts;
        return;
    }
    e->unacked = e->cur.nparts;
    e->complete_due = e->unacked == 0;
    if (e->complete_due) txn_emit_complete(c, e, now_ms, out);
    else txn_out_markers(c, e, out);
}

/* Kafka's mapping of a failed transaction-log append to the client's error. */
static int16_t append_error_to_client(int16_t e) {
    switch (e) {
    case KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION:
    case KP_ERROR_NOT_ENOUGH_REPLICAS:
    case KP_ERROR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case KP_ERROR_REQUEST_TIMED_OUT:
        return KP_ERROR_COORDINATOR_NOT_AVAILABLE;
    case KP_ERROR_NOT_LEADER_OR_FOLLOWER:
    case KP_ERROR_KAFKA_STORAGE_ERROR:
        return KP_ERROR_NOT_COORDINATOR;
    default:
        return KP_ERROR_UNKNOWN_SERVER_ERROR;
    }
}

static void write_failed(bk_txn_entry_t *e, int16_t append_error, bk_txn_out_t *out) {
    if (e->wait == TXN_W_FENCE_ABORT || e->wait == TXN_W_TIMEOUT_ABORT)
        e->cur.producer_epoch = e->epoch_before_fence;
    bk_txn_meta_free(&e->next);
    txn_meta_init(&e->next);
    e->pending = false;
    out->error = append_error_to_client(append_error);
    out->wait = false;
}

void bk_txn_write_done(bk_txn_coord_t *c, const char *transactional_id, int16_t append_error,
                       int64_t now_ms, bk_txn_out_t *out) {
    size_t pos;
    bk_txn_entry_t *e = transactional_id ? txn_find(c, transactional_id, &pos) : NULL;
    out->wait = false;
    out->error = KP_ERROR_NONE;
    if (!e || !e->pending) return;
    if (append_error != KP_ERROR_NONE) return write_failed(e, append_error, out);
    txn_wait_t w = e->wait;
    e->pending = false;
    e->wait = TXN_W_NONE;
    if (w == TXN_W_EXPIRE) {
        txn_remove(c, pos);
        return;
    }
    bk_txn_meta_free(&e->cur);
    e->cur = e->next;
    txn_meta_init(&e->next);
    switch (w) {
    case TXN_W_END:
        /* EndTxn v5 answers with the id/epoch the next transaction uses */
        out->producer_id = e->cur.producer_id;
        out->producer_epoch = e->cur.producer_epoch;
        break;
    case TXN_W_INIT:
        out->producer_id = e->cur.producer_id;
        out->producer_epoch = e->cur.producer_epoch;
        break;
    case TXN_W_FENCE_ABORT:
        out->error = KP_ERROR_CONCURRENT_TRANSACTIONS;
        break;
    case TXN_W_COMPLETE:
        free(e->acked);
        e->acked = NULL;
        e->unacked = 0;
        e->complete_due = false;
        break;
    default:
        break;
    }
    if (e->cur.state == BK_TXN_PREPARE_COMMIT || e->cur.state == BK_TXN_PREPARE_ABORT)
        txn_start_markers(c, e, now_ms, out);
}

void bk_txn_marker_done(bk_txn_coord_t *c, const char *transactional_id, int64_t producer_id,
                        int16_t producer_epoch, bk_txn_tp_t tp, int64_t now_ms, bk_txn_out_t *out) {
    bk_txn_entry_t *e = transactional_id ? txn_find(c, transactional_id, NULL) : NULL;
    if (!e || !e->acked || e->pending || tp.topic == NULL) return;
    if (e->cur.producer_id != producer_id || e->cur.producer_epoch != producer_epoch) return;
    long i = txn_meta_find(&e->cur, tp.topic, tp.partition);
    if (i < 0 || e->acked[i]) return;
    e->acked[i] = true;
    assert(e->unacked > 0);
    if (--e->unacked == 0) {
        e->complete_due = true;
        txn_emit_complete(c, e, now_ms, out);
    }
}

bool bk_txn_pending_markers(const bk_txn_coord_t *c, const char *transactional_id, bk_txn_out_t *out) {
    const bk_txn_entry_t *e = transactional_id ? txn_find(c, transactional_id, NULL) : NULL;
    if (!e || e->pending || e->complete_due) return false;
    if (e->cur.state != BK_TXN_PREPARE_COMMIT && e->cur.state != BK_TXN_PREPARE_ABORT) return false;
    txn_out_markers(c, e, out);
    return out->err == KP_OK;
}

static bool expired(const bk_txn_coord_t *c, const bk_txn_entry_t *e, int64_t now_ms) {
    bk_txn_state_t s = e->cur.state;
    if (s != BK_TXN_EMPTY && s != BK_TXN_COMPLETE_COMMIT && s != BK_TXN_COMPLETE_ABORT) return false;
    return e->cur.last_update_ms <= now_ms - c->cfg.id_expiration_ms;
}

void bk_txn_tick(bk_txn_coord_t *c, int64_t now_ms, bk_txn_out_t *out) {
    for (size_t i = 0; i < c->n && out->err == KP_OK; i++) {
        bk_txn_entry_t *e = c->v[i];
        if (e->pending) continue;
        if (e->complete_due) {
            txn_emit_complete(c, e, now_ms, out);
        } else if (e->cur.state == BK_TXN_ONGOING && now_ms - e->cur.start_ms > e->cur.timeout_ms) {
            txn_fence_abort(c, e, TXN_W_TIMEOUT_ABORT, now_ms, out);
        } else if ((e->cur.state == BK_TXN_PREPARE_COMMIT || e->cur.state == BK_TXN_PREPARE_ABORT) &&
                   !e->acked) {
            txn_start_markers(c, e, now_ms, out);   /* after an allocation failure */
        } else if (expired(c, e, now_ms)) {
            txn_meta_init(&e->next);
            (void)txn_emit(c, e, TXN_W_EXPIRE, true, out);
        }
    }
}
