/* broker/txn/txn_write.c — the transaction coordinator's writes to
 * __transaction_state go through the replication driver (bk_td_finish, see
 * txn_driver.h).
 *
 * A write is appended as one batch through the partition service
 * (replication/partition.h) with acks=all and a minimum ISR of one (never
 * refused for a small ISR, held until the ISR has it): the core's state changes (bk_txn_write_done) only once the HW
 * passes the batch, so no client is answered and no phase is entered
 * (PrepareCommit -> markers -> CompleteCommit) on a record a failover could
 * lose. A failed wait (timeout, leadership moved) undoes the transition in
 * the core and answers the retriable error Kafka maps it to
 * (COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR); the record may still be in
 * the log, as in Kafka: a coordinator that replays it later acts on it.
 *
 * Bounds: one wait per append, at most BK_REPL_WAITS_MAX per partition
 * (the replication driver; beyond it the write fails REQUEST_TIMED_OUT);
 * each completion drains at most BK_TXN_TD_DRAIN_ROUNDS_MAX synchronous rounds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/replication/partition.h"
#include "broker/txn/txn_driver_int.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_errors.h"
#include "storage/st_log.h"
#include "storage/st_status.h"

/* The request waiting for the write of `id` (fn NULL: nobody). */
typedef struct {
    char *id;                    /* owned */
    bk_txn_td_answer_fn fn;
    void *ctx;
} waiter_t;

/* One append waiting for its replication. */
typedef struct {
    bk_txn_td_t *td;
    int32_t pidx;
    int32_t coord_epoch;         /* the core that emitted the records */
    char **ids;                  /* transactional id of each record (owned) */
    size_t nids;
    waiter_t w;
} write_t;

static void answer(waiter_t *w, int16_t error, int64_t producer_id, int16_t producer_epoch) {
    if (!w->fn) return;
    bk_txn_td_answer_fn fn = w->fn;
    bk_txn_td_answer_t a = { error, error ? -1 : producer_id, error ? -1 : producer_epoch };
    w->fn = NULL;
    free(w->id);
    w->id = NULL;
    fn(w->ctx, &a);
}

static void write_free(write_t *wr) {
    for (size_t i = 0; i < wr->nids; i++) free(wr->ids[i]);
    free(wr->ids);
    free(wr->w.id);
    free(wr);
}

/* The records of out as one uncompressed batch in arena a (appended by the
 * caller; durability as for produced data: the partition's flush policy). */
static int build_batch(const bk_txn_out_t *out, int64_t now, kp_arena_t *a, const uint8_t **b, size_t *len) {
    kp_batch_opts_t o = kp_batch_opts_default();
    kp_batch_builder_t bb;
    kp_batch_builder_init(&bb, &o);
    int rc = KP_OK;
    for (size_t i = 0; i < out->nrecs && rc == KP_OK; i++) {
        const bk_txn_rec_t *r = &out->recs[i];
        kp_record_in_t in = { now, { r->key, r->key_len }, kp_slice_null(), NULL, 0 };
        if (r->value) in.value = (kp_bytes_t){ r->value, r->value_len };
        rc = kp_batch_builder_add(&bb, &in);
    }
    if (rc == KP_OK) rc = kp_batch_builder_finish(&bb, a, b, len);
    kp_batch_builder_free(&bb);
    return rc;
}

static void drive(bk_txn_td_t *td, int32_t pidx, bk_txn_out_t *out, waiter_t *w);

/* Reports the writes of ids with err to core c (into out), answering w when
 * its id is among them. */
static void writes_done(bk_txn_coord_t *c, char *const *ids, size_t nids, int16_t err, bk_txn_out_t *out,
                        waiter_t *w) {
    int64_t now = bk_net_now_ms();
    for (size_t i = 0; i < nids; i++) {
        bk_txn_write_done(c, ids[i], err, now, out);
        if (w->fn && strcmp(ids[i], w->id) == 0) answer(w, out->error, out->producer_id, out->producer_epoch);
    }
}

/* The partition service's completion of a write (bk_repl_ps_done_fn). */
static void on_replicated(void *ctx, void *part_ctx, const bk_repl_ps_result_t *res) {
    bk_txn_td_t *td = ctx;
    write_t *wr = part_ctx;
    int16_t err = res->error;
    bk_txn_coord_t *c = wr->pidx < td->ncoords ? td->coords[wr->pidx] : NULL;
    if (err)
        fprintf(stderr, "skiff: node %d: %s-%d: transaction records not replicated: %s\n", td->node->id, BK_TXN_TD_TOPIC,
                wr->pidx, kp_error_name(err));
    if (!c || c->coordinator_epoch != wr->coord_epoch) {
        answer(&wr->w, KP_ERROR_NOT_COORDINATOR, -1, -1);   /* reloaded: it acts on its replay */
        write_free(wr);
        return;
    }
    bk_txn_out_t out;
    bk_txn_out_init(&out);
    writes_done(c, wr->ids, wr->nids, err, &out, &wr->w);
    drive(td, wr->pidx, &out, &wr->w);
    answer(&wr->w, KP_ERROR_COORDINATOR_NOT_AVAILABLE, -1, -1);   /* not answered by its write */
    write_free(wr);
}

/* Appends cur's records; takes its record ids. Returns true when the
 * replication wait owns them now (and w, when its id is among them); false
 * when done now with *err (NONE: replicated already). */
static bool write_recs(bk_txn_td_t *td, int32_t pidx, bk_txn_out_t *cur, waiter_t *w, int16_t *err) {
    bk_repl_part_t *p = td_led_part(td, pidx);
    *err = KP_ERROR_NONE;
    if (!p) { *err = KP_ERROR_NOT_LEADER_OR_FOLLOWER; return false; }
    /* allocated before the append: nothing may fail after it */
    write_t *wr = calloc(1, sizeof *wr);
    char **ids = wr ? calloc(cur->nrecs, sizeof *ids) : NULL;
    if (!ids) {
        free(wr);
        *err = KP_ERROR_REQUEST_TIMED_OUT;
        return false;
    }
    int64_t now = bk_net_now_ms();
    kp_arena_t a;
    kp_arena_init(&a, (size_t)1 << 30);
    const uint8_t *b = NULL;
    size_t len = 0;
    int rc = build_batch(cur, now, &a, &b, &len);
    bk_repl_ps_result_t res = { KP_ERROR_KAFKA_STORAGE_ERROR, -1, -1, -1, -1, false };
    bool waits = false;
    if (rc == KP_OK) {
        *wr = (write_t){ td, pidx, td->coords[pidx]->coordinator_epoch, ids, cur->nrecs, { NULL, NULL, NULL } };
        bk_repl_ps_opts_t po = { .acks = -1, .min_insync = 1, .timeout_ms = BK_TXN_TD_WRITE_TIMEOUT_MS, .leader_epoch = -1 };
        bk_repl_ps_set_t set = bk_repl_ps_set_internal((uint8_t *)b, len);
        waits = bk_repl_ps_append(td->node, p, &set, &po, on_replicated, td, wr, &res);
    } else {
        fprintf(stderr, "skiff: node %d: %s-%d: transaction records not built: %s\n", td->node->id, BK_TXN_TD_TOPIC,
                pidx, st_status_str(rc));
    }
    kp_arena_free(&a);
    if (!waits) {
        free(ids);
        free(wr);
        *err = res.error;
        return false;
    }
    for (size_t i = 0; i < cur->nrecs; i++) {   /* the ids move into the wait */
        ids[i] = cur->rec_ids[i];
        cur->rec_ids[i] = NULL;
    }
    for (size_t i = 0; w->fn && i < wr->nids; i++)
        if (strcmp(wr->ids[i], w->id) == 0) { wr->w = *w; *w = (waiter_t){ NULL, NULL, NULL }; break; }
    return true;
}

/* Sends cur's markers and writes its records, then loops on what the
 * synchronous completions produce; what waits for replication continues
 * in on_replicated. */
static void drive(bk_txn_td_t *td, int32_t pidx, bk_txn_out_t *out, waiter_t *w) {
    for (int round = 0; round < BK_TXN_TD_DRAIN_ROUNDS_MAX && (out->nrecs > 0 || out->nmarkers > 0); round++) {
        bk_txn_coord_t *c = pidx < td->ncoords ? td->coords[pidx] : NULL;
        if (!c || out->err != KP_OK) break;
        bk_txn_out_t cur = *out;
        bk_txn_out_init(out);
        /* markers of durable Prepare* records: independent of cur's records */
        for (size_t i = 0; i < cur.nmarkers; i++) td_send_markers(td, pidx, &cur.markers[i], out);
        int16_t err = 0;
        if (cur.nrecs > 0 && td->coords[pidx] == c && !write_recs(td, pidx, &cur, w, &err))
            writes_done(c, cur.rec_ids, cur.nrecs, err, out, w);
        bk_txn_out_free(&cur);
    }
    bk_txn_out_free(out);
}

void bk_td_finish(bk_txn_td_t *td, int32_t pidx, bk_txn_out_t *out, const char *transactional_id,
                  bk_txn_td_answer_fn fn, void *ctx) {
    waiter_t w = { NULL, NULL, NULL };
    if (fn && out->err != KP_OK) {
        bk_txn_out_free(out);
        bk_txn_td_answer_t a = { KP_ERROR_UNKNOWN_SERVER_ERROR, -1, -1 };
        fn(ctx, &a);
        return;
    }
    if (fn && (!out->wait || !transactional_id)) {
        w = (waiter_t){ NULL, fn, ctx };
        answer(&w, out->error, out->producer_id, out->producer_epoch);
    } else if (fn) {
        w = (waiter_t){ strdup(transactional_id), fn, ctx };
        if (!w.id) { w.fn = NULL; bk_txn_td_answer_t a = { KP_ERROR_UNKNOWN_SERVER_ERROR, -1, -1 }; fn(ctx, &a); }
    }
    drive(td, pidx, out, &w);
    answer(&w, KP_ERROR_COORDINATOR_NOT_AVAILABLE, -1, -1);   /* the write never came back */
}
