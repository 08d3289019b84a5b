/* txn.c — the client-facing transaction coordinator calls: InitProducerId,
 * AddPartitionsToTxn, AddOffsetsToTxn, EndTxn (KIP-98, KIP-360, KIP-588). */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "broker/txn/txn_int.h"
#include "protocol/kp_errors.h"

static void answer(bk_txn_out_t *out, int16_t error) {
    out->error = error;
    out->wait = false;
}

static bool valid_id(const char *id) { return id != NULL && id[0] != '\0' && strlen(id) <= BK_TXN_ID_MAX_BYTES; }

/* Kafka's isValidProducerId for a KIP-360 request. */
static bool kip360_valid(const bk_txn_meta_t *m, int64_t pid, int16_t epoch) {
    return m->producer_epoch == -1 || pid == m->producer_id ||
           (pid == m->prev_producer_id && txn_epoch_exhausted(epoch));
}

/* Empty / Complete*: next = Empty with epoch + 1 (or a new id when the epoch
 * is exhausted). Returns the error, NONE when e->next is ready. */
static int16_t prepare_bump(bk_txn_coord_t *c, bk_txn_entry_t *e, const bk_txn_init_req_t *req,
                            int64_t now_ms) {
    bk_txn_meta_t *n = &e->next;
    txn_meta_init(n);
    *n = e->cur;
    n->parts = NULL;
    n->nparts = n->cap = 0;
    n->state = BK_TXN_EMPTY;
    n->timeout_ms = req->timeout_ms;
    n->start_ms = -1;
    n->last_update_ms = now_ms;
    bool kip360 = req->producer_id >= 0;
    if (txn_epoch_exhausted(e->cur.producer_epoch) && (!kip360 || req->producer_epoch == e->cur.producer_epoch)) {
        int64_t pid;
        if (!c->alloc_pid(c->alloc_ctx, &pid)) return KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS;
        n->prev_producer_id = e->cur.producer_id;
        n->producer_id = pid;
        n->producer_epoch = 0;
        /* KIP-360 remembers the exhausted epoch so a retry is recognised */
        n->last_producer_epoch = kip360 ? e->cur.producer_epoch : -1;
        return KP_ERROR_NONE;
    }
    int16_t bumped = (int16_t)(e->cur.producer_epoch + 1);
    if (!kip360) {
        n->producer_epoch = bumped;
        n->last_producer_epoch = -1;
    } else if (e->cur.producer_epoch == -1 || req->producer_epoch == e->cur.producer_epoch) {
        n->producer_epoch = bumped;
        n->last_producer_epoch = e->cur.producer_epoch;
    } else if (req->producer_epoch == e->cur.last_producer_epoch) {
        /* a retry whose answer was lost: hand out the current epoch again */
    } else {
        return KP_ERROR_PRODUCER_FENCED;
    }
    return KP_ERROR_NONE;
}

static void init_idempotent(bk_txn_coord_t *c, bk_txn_out_t *out) {
    int64_t pid;
    if (!c->alloc_pid(c->alloc_ctx, &pid)) {
        answer(out, KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS);
        return;
    }
    answer(out, KP_ERROR_NONE);
    out->producer_id = pid;
    out->producer_epoch = 0;
}

/* The entry for a new transactional id: a fresh producer id, no epoch yet
 * (Kafka caches it before the first write). NULL with the error set. */
static bk_txn_entry_t *init_new(bk_txn_coord_t *c, const char *id, size_t pos, int32_t timeout_ms,
                                int64_t now_ms, bk_txn_out_t *out) {
    int64_t pid;
    if (!c->alloc_pid(c->alloc_ctx, &pid)) {
        answer(out, KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS);
        return NULL;
    }
    bk_txn_entry_t *e = txn_insert(c, id, pos);
    if (!e) {
        out->err = KP_ERR_NOMEM;
        answer(out, KP_ERROR_UNKNOWN_SERVER_ERROR);
        return NULL;
    }
    e->cur.producer_id = pid;
    e->cur.timeout_ms = timeout_ms;
    e->cur.last_update_ms = now_ms;
    return e;
}

void bk_txn_init_producer_id(bk_txn_coord_t *c, const bk_txn_init_req_t *req, int64_t now_ms,
                             bk_txn_out_t *out) {
    out->producer_id = -1;
    out->producer_epoch = -1;
    if (req->transactional_id == NULL) {
        init_idempotent(c, out);
        return;
    }
    if (!valid_id(req->transactional_id)) return answer(out, KP_ERROR_INVALID_REQUEST);
    if (req->timeout_ms <= 0 || req->timeout_ms > c->cfg.timeout_max_ms)
        return answer(out, KP_ERROR_INVALID_TRANSACTION_TIMEOUT);
    size_t pos;
    bk_txn_entry_t *e = txn_find(c, req->transactional_id, &pos);
    if (!e && !(e = init_new(c, req->transactional_id, pos, req->timeout_ms, now_ms, out))) return;
    if (e->pending) return answer(out, KP_ERROR_CONCURRENT_TRANSACTIONS);
    if (req->producer_id >= 0 && !kip360_valid(&e->cur, req->producer_id, req->producer_epoch))
        return answer(out, KP_ERROR_PRODUCER_FENCED);
    switch (e->cur.state) {
    case BK_TXN_EMPTY:
    case BK_TXN_COMPLETE_COMMIT:
    case BK_TXN_COMPLETE_ABORT: {
        int16_t err = prepare_bump(c, e, req, now_ms);
        if (err != KP_ERROR_NONE) {
            txn_meta_init(&e->next);
            return answer(out, err);
        }
        if (txn_emit(c, e, TXN_W_INIT, false, out)) out->wait = true;
        else answer(out, KP_ERROR_UNKNOWN_SERVER_ERROR);
        return;
    }
    case BK_TXN_ONGOING:
        /* The previous instance left a transaction open: abort it with a
         * bumped epoch; this request answers CONCURRENT_TRANSACTIONS once the
         * PrepareAbort is durable, and the client retries. */
        txn_fence_abort(c, e, TXN_W_FENCE_ABORT, now_ms, out);
        if (out->err == KP_OK) out->wait = true;
        else answer(out, KP_ERROR_UNKNOWN_SERVER_ERROR);
        return;
    default:
        return answer(out, KP_ERROR_CONCURRENT_TRANSACTIONS);
    }
}

/* The checks AddPartitions, AddOffsets and EndTxn share. NONE = go on. */
static int16_t check_producer(const bk_txn_coord_t *c, const char *id, int64_t pid, int16_t epoch,
                              bk_txn_entry_t **ep) {
    if (!valid_id(id)) return KP_ERROR_INVALID_REQUEST;
    bk_txn_entry_t *e = txn_find(c, id, NULL);
    *ep = e;
    if (!e || e->cur.producer_id != pid) return KP_ERROR_INVALID_PRODUCER_ID_MAPPING;
    if (e->cur.producer_epoch != epoch) return KP_ERROR_PRODUCER_FENCED;
    if (e->pending) return KP_ERROR_CONCURRENT_TRANSACTIONS;
    return KP_ERROR_NONE;
}

static bool valid_tp(const bk_txn_tp_t *tp) {
    if (!tp->topic || tp->partition < 0) return false;
    size_t n = strlen(tp->topic);
    return n > 0 && n <= BK_TXN_TOPIC_MAX_BYTES;
}

void bk_txn_add_partitions(bk_txn_coord_t *c, const char *transactional_id, int64_t producer_id,
                           int16_t producer_epoch, const bk_txn_tp_t *parts, size_t nparts,
                           int64_t now_ms, bk_txn_out_t *out) {
    bk_txn_entry_t *e;
    int16_t err = check_producer(c, transactional_id, producer_id, producer_epoch, &e);
    if (err != KP_ERROR_NONE) return answer(out, err);
    for (size_t i = 0; i < nparts; i++)
        if (!valid_tp(&parts[i])) return answer(out, KP_ERROR_INVALID_REQUEST);
    bk_txn_state_t s = e->cur.state;
    if (nparts == 0) return answer(out, KP_ERROR_NONE);   /* nothing to add: no transaction starts */
    if (s == BK_TXN_PREPARE_COMMIT || s == BK_TXN_PREPARE_ABORT || s == BK_TXN_PREPARE_EPOCH_FENCE)
        return answer(out, KP_ERROR_CONCURRENT_TRANSACTIONS);
    if (s == BK_TXN_DEAD) return answer(out, KP_ERROR_INVALID_TXN_STATE);
    if (s == BK_TXN_ONGOING) {
        size_t have = 0;
        for (size_t i = 0; i < nparts; i++)
            have += txn_meta_find(&e->cur, parts[i].topic, parts[i].partition) >= 0;
        if (have == nparts) return answer(out, KP_ERROR_NONE);
    }
    /* Empty / Complete* start a new transaction (with no partitions yet). */
    bool fresh = s != BK_TXN_ONGOING;
    bk_txn_meta_t tmp = e->cur;
    if (fresh) tmp.nparts = 0;
    if (txn_meta_copy(&e->next, &tmp) != KP_OK) {
        out->err = KP_ERR_NOMEM;
        return answer(out, KP_ERROR_UNKNOWN_SERVER_ERROR);
    }
    for (size_t i = 0; i < nparts; i++) {
        int rc = txn_meta_add(&e->next, parts[i].topic, strlen(parts[i].topic), parts[i].partition);
        if (rc != KP_OK) {
            bk_txn_meta_free(&e->next);
            if (rc == KP_ERR_NOMEM) out->err = rc;
            return answer(out, rc == KP_ERR_NOMEM ? KP_ERROR_UNKNOWN_SERVER_ERROR : KP_ERROR_INVALID_REQUEST);
        }
    }
    e->next.state = BK_TXN_ONGOING;
    e->next.last_update_ms = now_ms;
    if (fresh) e->next.start_ms = now_ms;
    if (txn_emit(c, e, TXN_W_ADD, false, out)) out->wait = true;
    else answer(out, KP_ERROR_UNKNOWN_SERVER_ERROR);
}

int16_t bk_txn_verify(const bk_txn_coord_t *c, const char *transactional_id, int64_t producer_id,
                      int16_t producer_epoch, const char *topic, int32_t partition) {
    bk_txn_entry_t *e;
    int16_t err = check_producer(c, transactional_id, producer_id, producer_epoch, &e);
    if (err != KP_ERROR_NONE) return err;
    bk_txn_state_t s = e->cur.state;
    if (s == BK_TXN_PREPARE_COMMIT || s == BK_TXN_PREPARE_ABORT || s == BK_TXN_PREPARE_EPOCH_FENCE)
        return KP_ERROR_CONCURRENT_TRANSACTIONS;
    if (s != BK_TXN_ONGOING || !topic || txn_meta_find(&e->cur, topic, partition) < 0) return KP_ERROR_INVALID_TXN_STATE;
    return KP_ERROR_NONE;
}

void bk_txn_add_offsets(bk_txn_coord_t *c, const char *transactional_id, int64_t producer_id,
                        int16_t producer_epoch, int32_t offsets_partition, int64_t now_ms,
                        bk_txn_out_t *out) {
    bk_txn_tp_t tp = { BK_TXN_OFFSETS_TOPIC, offsets_partition };
    bk_txn_add_partitions(c, transactional_id, producer_id, producer_epoch, &tp, 1, now_ms, out);
}

/* KIP-890 retry of EndTxn v5: the epoch the client still has is the one
 * before the bump its lost answer carried (the transaction was ended by v5:
 * client_txn_version 2, kept in the log, so a reloaded coordinator knows it
 * too; a timeout abort of such a producer bumps as well and counts). Same
 * kind as the transaction that was ended: NONE (with the current id/epoch)
 * once complete, CONCURRENT_TRANSACTIONS while completing; else
 * INVALID_TXN_STATE. */
static bool end_retry(const bk_txn_coord_t *c, const char *id, int64_t pid, int16_t epoch, bool commit,
                      bk_txn_out_t *out) {
    bk_txn_entry_t *e = valid_id(id) ? txn_find(c, id, NULL) : NULL;
    if (!e || e->cur.client_txn_version < 2 || e->pending || e->cur.producer_id != pid ||
        epoch != e->cur.producer_epoch - 1)
        return false;
    bk_txn_state_t s = e->cur.state;
    bool was_commit = s == BK_TXN_PREPARE_COMMIT || s == BK_TXN_COMPLETE_COMMIT;
    bool was_abort = s == BK_TXN_PREPARE_ABORT || s == BK_TXN_COMPLETE_ABORT;
    if (!was_commit && !was_abort) return false;   /* Empty / Ongoing: not a retry of an end */
    if ((commit && !was_commit) || (!commit && !was_abort)) answer(out, KP_ERROR_INVALID_TXN_STATE);
    else if (s == BK_TXN_PREPARE_COMMIT || s == BK_TXN_PREPARE_ABORT) answer(out, KP_ERROR_CONCURRENT_TRANSACTIONS);
    else answer(out, KP_ERROR_NONE);
    out->producer_id = e->cur.producer_id;
    out->producer_epoch = e->cur.producer_epoch;
    return true;
}

void bk_txn_end(bk_txn_coord_t *c, const char *transactional_id, int64_t producer_id,
                int16_t producer_epoch, bool commit, int64_t now_ms, bk_txn_out_t *out) {
    bk_txn_end_v(c, transactional_id, producer_id, producer_epoch, commit, false, now_ms, out);
}

void bk_txn_end_v(bk_txn_coord_t *c, const char *transactional_id, int64_t producer_id,
                  int16_t producer_epoch, bool commit, bool bump_epoch, int64_t now_ms, bk_txn_out_t *out) {
    out->producer_id = -1;
    out->producer_epoch = -1;
    if (bump_epoch && end_retry(c, transactional_id, producer_id, producer_epoch, commit, out)) return;
    bk_txn_entry_t *e;
    int16_t err = check_producer(c, transactional_id, producer_id, producer_epoch, &e);
    if (err != KP_ERROR_NONE) return answer(out, err);
    if (bump_epoch) {
        /* the answers that need no write name the producer's current id/epoch */
        out->producer_id = e->cur.producer_id;
        out->producer_epoch = e->cur.producer_epoch;
    }
    switch (e->cur.state) {
    case BK_TXN_ONGOING:
        if (txn_meta_copy(&e->next, &e->cur) != KP_OK) {
            out->err = KP_ERR_NOMEM;
            return answer(out, KP_ERROR_UNKNOWN_SERVER_ERROR);
        }
        e->next.state = commit ? BK_TXN_PREPARE_COMMIT : BK_TXN_PREPARE_ABORT;
        e->next.last_update_ms = now_ms;
        /* Transactions v2: every transaction ends with the epoch bumped, the
         * markers carry the new epoch, so a late write of the old epoch is
         * fenced. An epoch at its end is not bumped (the id would have to
         * rotate: not done here, see README "Not here"). */
        e->next.client_txn_version = bump_epoch ? 2 : 0;
        if (bump_epoch && !txn_epoch_exhausted(e->cur.producer_epoch)) {
            e->next.producer_epoch = (int16_t)(e->cur.producer_epoch + 1);
            e->next.last_producer_epoch = -1;
        }
        if (txn_emit(c, e, TXN_W_END, false, out)) out->wait = true;
        else answer(out, KP_ERROR_UNKNOWN_SERVER_ERROR);
        return;
    case BK_TXN_COMPLETE_COMMIT:
        return answer(out, commit ? KP_ERROR_NONE : KP_ERROR_INVALID_TXN_STATE);
    case BK_TXN_COMPLETE_ABORT:
        return answer(out, commit ? KP_ERROR_INVALID_TXN_STATE : KP_ERROR_NONE);
    case BK_TXN_PREPARE_COMMIT:
        return answer(out, commit ? KP_ERROR_CONCURRENT_TRANSACTIONS : KP_ERROR_INVALID_TXN_STATE);
    case BK_TXN_PREPARE_ABORT:
        return answer(out, commit ? KP_ERROR_INVALID_TXN_STATE : KP_ERROR_CONCURRENT_TRANSACTIONS);
    default:
        return answer(out, KP_ERROR_INVALID_TXN_STATE);
    }
}
