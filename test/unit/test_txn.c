/* Unit tests for the transaction coordinator's flows (broker/txn.c,
 * txn_done.c): commit and abort across partitions + offsets, fencing,
 * aborting the previous instance's transaction, timeouts, expiry, retried
 * EndTxn, every error code, and failover at every step of a commit. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "txn_test_util.h"

static const bk_txn_tp_t TPS[3] = { { "orders", 0 }, { "orders", 1 }, { "audit", 2 } };

static tctx_t *new_ctx(void) {
    tctx_t *t = malloc(sizeof *t);
    ck_assert_ptr_nonnull(t);
    t_start(t, 5, 0, 0);
    return t;
}

static void free_ctx(tctx_t *t) {
    t_stop(t);
    free(t);
}

static const bk_txn_meta_t *meta(tctx_t *t, const char *id) {
    const bk_txn_meta_t *m = bk_txn_get(&t->c, id);
    ck_assert_ptr_nonnull(m);
    return m;
}

/* init + 3 partitions + offsets of the group on __consumer_offsets-7. */
static void open_txn(tctx_t *t, const char *id, int64_t *pid, int16_t *epoch) {
    ck_assert_int_eq(t_init(t, id, 60000, pid, epoch), KP_ERROR_NONE);
    t->now += 10;
    ck_assert_int_eq(t_add(t, id, *pid, *epoch, TPS, 3), KP_ERROR_NONE);
    bk_txn_out_t o;
    bk_txn_out_init(&o);
    bk_txn_add_offsets(&t->c, id, *pid, *epoch, 7, t->now, &o);
    ck_assert_int_eq(t_answer(t, &o), KP_ERROR_NONE);
}

static bool has_marker(const tctx_t *t, const char *topic, int32_t partition) {
    for (size_t i = 0; i < t->nmarkers; i++)
        if (strcmp(t->markers[i].topic, topic) == 0 && t->markers[i].partition == partition) return true;
    return false;
}

static void check_flow(bool commit) {
    tctx_t *t = new_ctx();
    int64_t pid;
    int16_t epoch;
    t->now = 1000;
    open_txn(t, "tx", &pid, &epoch);
    ck_assert_int_eq(pid, 1000);
    ck_assert_int_eq(epoch, 0);
    const bk_txn_meta_t *m = meta(t, "tx");
    ck_assert_int_eq(m->state, BK_TXN_ONGOING);
    ck_assert_uint_eq(m->nparts, 4);
    ck_assert_int_eq(m->start_ms, 1010);
    /* adding partitions already in the transaction writes nothing */
    size_t before = t->nlog;
    ck_assert_int_eq(t_add(t, "tx", pid, epoch, TPS, 2), KP_ERROR_NONE);
    ck_assert_uint_eq(t->nlog, before);

    t->now = 2000;
    ck_assert_int_eq(t_end(t, "tx", pid, epoch, commit), KP_ERROR_NONE);
    m = meta(t, "tx");
    ck_assert_int_eq(m->state, commit ? BK_TXN_PREPARE_COMMIT : BK_TXN_PREPARE_ABORT);
    ck_assert_uint_eq(t->nmarkers, 4);
    for (size_t i = 0; i < 3; i++) ck_assert(has_marker(t, TPS[i].topic, TPS[i].partition));
    ck_assert(has_marker(t, "__consumer_offsets", 7));
    for (size_t i = 0; i < 4; i++) {
        ck_assert(t->markers[i].commit == commit);
        ck_assert_int_eq(t->markers[i].pid, pid);
        ck_assert_int_eq(t->markers[i].epoch, epoch);
        ck_assert_int_eq(t->markers[i].coord_epoch, 5);
    }
    /* while completing: the same EndTxn is CONCURRENT, the other kind invalid,
     * new partitions and a new init wait */
    ck_assert_int_eq(t_end(t, "tx", pid, epoch, commit), KP_ERROR_CONCURRENT_TRANSACTIONS);
    ck_assert_int_eq(t_end(t, "tx", pid, epoch, !commit), KP_ERROR_INVALID_TXN_STATE);
    ck_assert_int_eq(t_add(t, "tx", pid, epoch, TPS, 1), KP_ERROR_CONCURRENT_TRANSACTIONS);
    ck_assert_int_eq(t_init(t, "tx", 60000, NULL, NULL), KP_ERROR_CONCURRENT_TRANSACTIONS);
    /* a duplicate ack and a stale one change nothing */
    bk_txn_out_t o;
    bk_txn_out_init(&o);
    bk_txn_marker_done(&t->c, "tx", pid, (int16_t)(epoch + 1), TPS[0], t->now, &o);
    ck_assert_uint_eq(o.nrecs, 0);
    bk_txn_out_free(&o);
    t_ack(t, 0);
    t_ack(t, 0);
    t_ack(t, 0);
    ck_assert_int_eq(meta(t, "tx")->state, commit ? BK_TXN_PREPARE_COMMIT : BK_TXN_PREPARE_ABORT);
    t->now = 2500;
    t_ack(t, 0);
    m = meta(t, "tx");
    ck_assert_int_eq(m->state, commit ? BK_TXN_COMPLETE_COMMIT : BK_TXN_COMPLETE_ABORT);
    ck_assert_uint_eq(m->nparts, 0);
    ck_assert_int_eq(m->last_update_ms, 2500);
    /* retried EndTxn after completion */
    ck_assert_int_eq(t_end(t, "tx", pid, epoch, commit), KP_ERROR_NONE);
    ck_assert_int_eq(t_end(t, "tx", pid, epoch, !commit), KP_ERROR_INVALID_TXN_STATE);

    /* the log: Empty, Ongoing, Ongoing, Prepare*, Complete* */
    static const bk_txn_state_t want_c[] = { BK_TXN_EMPTY, BK_TXN_ONGOING, BK_TXN_ONGOING,
                                             BK_TXN_PREPARE_COMMIT, BK_TXN_COMPLETE_COMMIT };
    static const bk_txn_state_t want_a[] = { BK_TXN_EMPTY, BK_TXN_ONGOING, BK_TXN_ONGOING,
                                             BK_TXN_PREPARE_ABORT, BK_TXN_COMPLETE_ABORT };
    static const size_t want_parts[] = { 0, 3, 4, 4, 0 };
    ck_assert_uint_eq(t->nlog, 5);
    for (size_t i = 0; i < 5; i++) {
        char *id;
        bk_txn_meta_t d;
        bool dead;
        t_decode(t, i, &id, &d, &dead);
        ck_assert_str_eq(id, "tx");
        ck_assert(!dead);
        ck_assert_int_eq(d.state, commit ? want_c[i] : want_a[i]);
        ck_assert_uint_eq(d.nparts, want_parts[i]);
        ck_assert_int_eq(d.producer_id, pid);
        ck_assert_int_eq(d.producer_epoch, 0);
        ck_assert_int_eq(d.timeout_ms, 60000);
        bk_txn_meta_free(&d);
        free(id);
    }

    /* the next transaction of the same producer starts from Complete* */
    t->now = 3000;
    ck_assert_int_eq(t_add(t, "tx", pid, epoch, &TPS[2], 1), KP_ERROR_NONE);
    m = meta(t, "tx");
    ck_assert_int_eq(m->state, BK_TXN_ONGOING);
    ck_assert_uint_eq(m->nparts, 1);
    ck_assert_int_eq(m->start_ms, 3000);
    free_ctx(t);
}

START_TEST(test_commit_flow) { check_flow(true); }
END_TEST

START_TEST(test_abort_flow) { check_flow(false); }
END_TEST

START_TEST(test_fencing_by_second_init) {
    tctx_t *t = new_ctx();
    int64_t pa, pb;
    int16_t ea, eb;
    open_txn(t, "fx", &pa, &ea);
    /* the second instance: the open transaction is aborted first */
    bk_txn_out_t o;
    bk_txn_out_init(&o);
    bk_txn_init_req_t req = { "fx", 30000, -1, -1 };
    bk_txn_init_producer_id(&t->c, &req, t->now, &o);
    ck_assert(o.wait);
    /* the zombie is fenced at once, before the PrepareAbort is durable */
    ck_assert_int_eq(t_add(t, "fx", pa, ea, TPS, 1), KP_ERROR_PRODUCER_FENCED);
    ck_assert_int_eq(t_end(t, "fx", pa, ea, true), KP_ERROR_PRODUCER_FENCED);
    ck_assert_int_eq(t_flush(t, &o), KP_ERROR_CONCURRENT_TRANSACTIONS);
    bk_txn_out_free(&o);
    ck_assert_int_eq(meta(t, "fx")->state, BK_TXN_PREPARE_ABORT);
    ck_assert_uint_eq(t->nmarkers, 4);
    for (size_t i = 0; i < t->nmarkers; i++) {
        ck_assert(!t->markers[i].commit);
        ck_assert_int_eq(t->markers[i].epoch, ea + 1);
    }
    /* retrying while markers are out */
    ck_assert_int_eq(t_init(t, "fx", 30000, NULL, NULL), KP_ERROR_CONCURRENT_TRANSACTIONS);
    t_ack_all(t);
    ck_assert_int_eq(meta(t, "fx")->state, BK_TXN_COMPLETE_ABORT);
    ck_assert_int_eq(t_init(t, "fx", 30000, &pb, &eb), KP_ERROR_NONE);
    ck_assert_int_eq(pb, pa);
    ck_assert_int_eq(eb, ea + 2);
    ck_assert_int_eq(meta(t, "fx")->timeout_ms, 30000);
    /* the zombie stays fenced; the new instance works */
    ck_assert_int_eq(t_add(t, "fx", pa, ea, TPS, 1), KP_ERROR_PRODUCER_FENCED);
    ck_assert_int_eq(t_end(t, "fx", pa, ea, false), KP_ERROR_PRODUCER_FENCED);
    bk_txn_out_init(&o);
    bk_txn_add_offsets(&t->c, "fx", pa, ea, 1, t->now, &o);
    ck_assert_int_eq(t_answer(t, &o), KP_ERROR_PRODUCER_FENCED);
    ck_assert_int_eq(t_add(t, "fx", pb, eb, TPS, 1), KP_ERROR_NONE);
    /* old request versions see INVALID_PRODUCER_EPOCH (KIP-588) */
    ck_assert_int_eq(bk_txn_fenced_error(24, 1, KP_ERROR_PRODUCER_FENCED), KP_ERROR_INVALID_PRODUCER_EPOCH);
    ck_assert_int_eq(bk_txn_fenced_error(24, 2, KP_ERROR_PRODUCER_FENCED), KP_ERROR_PRODUCER_FENCED);
    ck_assert_int_eq(bk_txn_fenced_error(22, 3, KP_ERROR_PRODUCER_FENCED), KP_ERROR_INVALID_PRODUCER_EPOCH);
    ck_assert_int_eq(bk_txn_fenced_error(22, 4, KP_ERROR_PRODUCER_FENCED), KP_ERROR_PRODUCER_FENCED);
    ck_assert_int_eq(bk_txn_fenced_error(26, 1, KP_ERROR_PRODUCER_FENCED), KP_ERROR_INVALID_PRODUCER_EPOCH);
    ck_assert_int_eq(bk_txn_fenced_error(25, 1, KP_ERROR_PRODUCER_FENCED), KP_ERROR_INVALID_PRODUCER_EPOCH);
    ck_assert_int_eq(bk_txn_fenced_error(28, 2, KP_ERROR_PRODUCER_FENCED), KP_ERROR_INVALID_PRODUCER_EPOCH);
    ck_assert_int_eq(bk_txn_fenced_error(28, 3, KP_ERROR_PRODUCER_FENCED), KP_ERROR_PRODUCER_FENCED);
    ck_assert_int_eq(bk_txn_fenced_error(26, 0, KP_ERROR_CONCURRENT_TRANSACTIONS),
                     KP_ERROR_CONCURRENT_TRANSACTIONS);
    free_ctx(t);
}
END_TEST

START_TEST(test_reinit_without_open_txn_bumps_epoch) {
    tctx_t *t = new_ctx();
    int64_t p1, p2;
    int16_t e1, e2;
    ck_assert_int_eq(t_init(t, "r", 1000, &p1, &e1), KP_ERROR_NONE);
    ck_assert_int_eq(t_init(t, "r", 1000, &p2, &e2), KP_ERROR_NONE);
    ck_assert_int_eq(p1, p2);
    ck_assert_int_eq(e2, e1 + 1);
    ck_assert_int_eq(t_end(t, "r", p1, e1, true), KP_ERROR_PRODUCER_FENCED);
    /* another id gets another producer id */
    int64_t p3;
    ck_assert_int_eq(t_init(t, "r2", 1000, &p3, NULL), KP_ERROR_NONE);
    ck_assert_int_ne(p3, p1);
    free_ctx(t);
}
END_TEST

START_TEST(test_timeout_abort_by_tick) {
    tctx_t *t = new_ctx();
    int64_t pid;
    int16_t epoch;
    ck_assert_int_eq(t_init(t, "slow", 1000, &pid, &epoch), KP_ERROR_NONE);
    t->now = 100;
    ck_assert_int_eq(t_add(t, "slow", pid, epoch, TPS, 2), KP_ERROR_NONE);
    size_t before = t->nlog;
    t->now = 1100;   /* start + timeout: not yet */
    t_tick(t);
    ck_assert_uint_eq(t->nlog, before);
    ck_assert_int_eq(meta(t, "slow")->state, BK_TXN_ONGOING);
    t->now = 1101;
    t_tick(t);
    ck_assert_uint_eq(t->nlog, before + 1);
    const bk_txn_meta_t *m = meta(t, "slow");
    ck_assert_int_eq(m->state, BK_TXN_PREPARE_ABORT);
    ck_assert_int_eq(m->producer_epoch, epoch + 1);
    ck_assert_uint_eq(t->nmarkers, 2);
    /* the producer that went quiet is fenced */
    ck_assert_int_eq(t_end(t, "slow", pid, epoch, true), KP_ERROR_PRODUCER_FENCED);
    t_ack_all(t);
    ck_assert_int_eq(meta(t, "slow")->state, BK_TXN_COMPLETE_ABORT);
    /* a timed-out abort whose write fails is retried at the next tick, the
     * epoch bumped once */
    int16_t e2;
    ck_assert_int_eq(t_init(t, "slow", 1000, NULL, &e2), KP_ERROR_NONE);
    ck_assert_int_eq(t_add(t, "slow", pid, e2, TPS, 1), KP_ERROR_NONE);
    t->now += 5000;
    bk_txn_out_t o;
    bk_txn_out_init(&o);
    bk_txn_tick(&t->c, t->now, &o);
    ck_assert_uint_eq(o.nrecs, 1);
    ck_assert_int_eq(meta(t, "slow")->producer_epoch, e2 + 1);
    (void)t_flush_st(t, &o, KP_ERROR_NOT_LEADER_OR_FOLLOWER, NULL, NULL);
    bk_txn_out_free(&o);
    ck_assert_int_eq(meta(t, "slow")->producer_epoch, e2);
    ck_assert_int_eq(meta(t, "slow")->state, BK_TXN_ONGOING);
    t_tick(t);
    ck_assert_int_eq(meta(t, "slow")->state, BK_TXN_PREPARE_ABORT);
    ck_assert_int_eq(meta(t, "slow")->producer_epoch, e2 + 1);
    free_ctx(t);
}
END_TEST

START_TEST(test_expiry_writes_tombstone) {
    tctx_t *t = malloc(sizeof *t);
    t_start(t, 1, 0, 10000);
    int64_t pid;
    int16_t epoch;
    ck_assert_int_eq(t_init(t, "old", 1000, &pid, &epoch), KP_ERROR_NONE);
    ck_assert_int_eq(t_init(t, "busy", 900000, NULL, NULL), KP_ERROR_NONE);
    t->now = 5000;
    int64_t bp;
    int16_t be;
    ck_assert_int_eq(t_init(t, "busy", 900000, &bp, &be), KP_ERROR_NONE);
    ck_assert_int_eq(t_add(t, "busy", bp, be, TPS, 1), KP_ERROR_NONE);
    t->now = 9999;
    t_tick(t);
    ck_assert_ptr_nonnull(bk_txn_get(&t->c, "old"));
    t->now = 20000;
    t_tick(t);
    ck_assert_ptr_null(bk_txn_get(&t->c, "old"));
    ck_assert_ptr_nonnull(bk_txn_get(&t->c, "busy"));   /* Ongoing never expires */
    const bk_txn_meta_t *dm;
    ck_assert_int_eq(bk_txn_describe(&t->c, "old", &dm), KP_ERROR_TRANSACTIONAL_ID_NOT_FOUND);
    char *id;
    bk_txn_meta_t d;
    bool dead;
    t_decode(t, t->nlog - 1, &id, &d, &dead);
    ck_assert(dead);
    ck_assert_str_eq(id, "old");
    free(id);
    /* after a replay the id is gone too */
    tctx_t *r = malloc(sizeof *r);
    t_replay(t, t->nlog, r);
    ck_assert_ptr_null(bk_txn_get(&r->c, "old"));
    ck_assert_ptr_nonnull(bk_txn_get(&r->c, "busy"));
    free_ctx(r);
    free_ctx(t);
}
END_TEST

START_TEST(test_error_codes) {
    tctx_t *t = new_ctx();
    int64_t pid;
    int16_t epoch;
    /* InitProducerId */
    ck_assert_int_eq(t_init(t, "", 1000, NULL, NULL), KP_ERROR_INVALID_REQUEST);
    ck_assert_int_eq(t_init(t, "e", 0, NULL, NULL), KP_ERROR_INVALID_TRANSACTION_TIMEOUT);
    ck_assert_int_eq(t_init(t, "e", -5, NULL, NULL), KP_ERROR_INVALID_TRANSACTION_TIMEOUT);
    ck_assert_int_eq(t_init(t, "e", 900001, NULL, NULL), KP_ERROR_INVALID_TRANSACTION_TIMEOUT);
    ck_assert_ptr_null(bk_txn_get(&t->c, "e"));
    t->pid_fail = true;
    ck_assert_int_eq(t_init(t, "e", 900000, NULL, NULL), KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS);
    ck_assert_int_eq(t_init(t, NULL, 900000, NULL, NULL), KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS);
    t->pid_fail = false;
    ck_assert_int_eq(t_init(t, "e", 900000, &pid, &epoch), KP_ERROR_NONE);
    /* idempotent producers: a new id, epoch 0, nothing written */
    size_t before = t->nlog;
    int64_t ip;
    int16_t ie;
    ck_assert_int_eq(t_init(t, NULL, 1, &ip, &ie), KP_ERROR_NONE);
    ck_assert_int_ne(ip, pid);
    ck_assert_int_eq(ie, 0);
    ck_assert_uint_eq(t->nlog, before);

    /* identity checks */
    ck_assert_int_eq(t_add(t, "nope", pid, epoch, TPS, 1), KP_ERROR_INVALID_PRODUCER_ID_MAPPING);
    ck_assert_int_eq(t_add(t, "e", pid + 1, epoch, TPS, 1), KP_ERROR_INVALID_PRODUCER_ID_MAPPING);
    ck_assert_int_eq(t_add(t, "e", pid, (int16_t)(epoch + 1), TPS, 1), KP_ERROR_PRODUCER_FENCED);
    ck_assert_int_eq(t_add(t, "", pid, epoch, TPS, 1), KP_ERROR_INVALID_REQUEST);
    ck_assert_int_eq(t_end(t, "nope", pid, epoch, true), KP_ERROR_INVALID_PRODUCER_ID_MAPPING);
    ck_assert_int_eq(t_end(t, "e", pid + 1, epoch, true), KP_ERROR_INVALID_PRODUCER_ID_MAPPING);
    ck_assert_int_eq(t_end(t, "e", pid, (int16_t)(epoch - 1), true), KP_ERROR_PRODUCER_FENCED);
    /* bad partitions */
    bk_txn_tp_t bad[2] = { { "ok", 0 }, { "", 1 } };
    ck_assert_int_eq(t_add(t, "e", pid, epoch, bad, 2), KP_ERROR_INVALID_REQUEST);
    bad[1] = (bk_txn_tp_t){ "ok", -1 };
    ck_assert_int_eq(t_add(t, "e", pid, epoch, bad, 2), KP_ERROR_INVALID_REQUEST);
    bad[1] = (bk_txn_tp_t){ NULL, 0 };
    ck_assert_int_eq(t_add(t, "e", pid, epoch, bad, 2), KP_ERROR_INVALID_REQUEST);
    ck_assert_int_eq(meta(t, "e")->state, BK_TXN_EMPTY);
    /* an empty AddPartitions starts nothing */
    ck_assert_int_eq(t_add(t, "e", pid, epoch, TPS, 0), KP_ERROR_NONE);
    ck_assert_int_eq(meta(t, "e")->state, BK_TXN_EMPTY);
    /* EndTxn with no transaction */
    ck_assert_int_eq(t_end(t, "e", pid, epoch, true), KP_ERROR_INVALID_TXN_STATE);
    ck_assert_int_eq(t_end(t, "e", pid, epoch, false), KP_ERROR_INVALID_TXN_STATE);

    /* a write in flight: everything else is CONCURRENT_TRANSACTIONS */
    bk_txn_out_t o;
    bk_txn_out_init(&o);
    bk_txn_add_partitions(&t->c, "e", pid, epoch, TPS, 1, t->now, &o);
    ck_assert(o.wait);
    ck_assert_int_eq(t_add(t, "e", pid, epoch, TPS, 1), KP_ERROR_CONCURRENT_TRANSACTIONS);
    ck_assert_int_eq(t_end(t, "e", pid, epoch, true), KP_ERROR_CONCURRENT_TRANSACTIONS);
    ck_assert_int_eq(t_init(t, "e", 1000, NULL, NULL), KP_ERROR_CONCURRENT_TRANSACTIONS);
    /* the write fails: the transition is undone, Kafka's error mapping */
    ck_assert_int_eq(t_flush_st(t, &o, KP_ERROR_NOT_LEADER_OR_FOLLOWER, NULL, NULL), KP_ERROR_NOT_COORDINATOR);
    bk_txn_out_free(&o);
    ck_assert_int_eq(meta(t, "e")->state, BK_TXN_EMPTY);
    ck_assert_uint_eq(meta(t, "e")->nparts, 0);
    static const int16_t app[] = { KP_ERROR_REQUEST_TIMED_OUT, KP_ERROR_NOT_ENOUGH_REPLICAS,
                                   KP_ERROR_KAFKA_STORAGE_ERROR, KP_ERROR_MESSAGE_TOO_LARGE };
    static const int16_t cli[] = { KP_ERROR_COORDINATOR_NOT_AVAILABLE, KP_ERROR_COORDINATOR_NOT_AVAILABLE,
                                   KP_ERROR_NOT_COORDINATOR, KP_ERROR_UNKNOWN_SERVER_ERROR };
    for (size_t i = 0; i < 4; i++) {
        bk_txn_out_init(&o);
        bk_txn_add_partitions(&t->c, "e", pid, epoch, TPS, 1, t->now, &o);
        ck_assert_int_eq(t_flush_st(t, &o, app[i], NULL, NULL), cli[i]);
        bk_txn_out_free(&o);
    }
    ck_assert_int_eq(meta(t, "e")->state, BK_TXN_EMPTY);
    /* write_done for an id with nothing in flight is a no-op */
    bk_txn_out_init(&o);
    bk_txn_write_done(&t->c, "e", KP_ERROR_NONE, t->now, &o);
    bk_txn_write_done(&t->c, "unknown", KP_ERROR_NONE, t->now, &o);
    ck_assert_int_eq(o.error, KP_ERROR_NONE);
    ck_assert_uint_eq(o.nrecs + o.nmarkers, 0);
    bk_txn_out_free(&o);
    ck_assert_int_eq(meta(t, "e")->state, BK_TXN_EMPTY);
    free_ctx(t);
}
END_TEST

START_TEST(test_kip360_and_epoch_exhaustion) {
    tctx_t *t = new_ctx();
    int64_t pid;
    int16_t epoch;
    ck_assert_int_eq(t_init(t, "k", 1000, &pid, &epoch), KP_ERROR_NONE);
    bk_txn_out_t o;
    /* KIP-360: the current id and epoch bump the epoch */
    bk_txn_init_req_t req = { "k", 1000, pid, epoch };
    bk_txn_out_init(&o);
    bk_txn_init_producer_id(&t->c, &req, t->now, &o);
    int64_t p2;
    int16_t e2;
    ck_assert_int_eq(t_flush_st(t, &o, KP_ERROR_NONE, &p2, &e2), KP_ERROR_NONE);
    bk_txn_out_free(&o);
    ck_assert_int_eq(p2, pid);
    ck_assert_int_eq(e2, epoch + 1);
    /* a retry with the previous epoch (answer lost) gets the same epoch */
    bk_txn_out_init(&o);
    bk_txn_init_producer_id(&t->c, &req, t->now, &o);
    ck_assert_int_eq(t_flush_st(t, &o, KP_ERROR_NONE, &p2, &e2), KP_ERROR_NONE);
    bk_txn_out_free(&o);
    ck_assert_int_eq(e2, epoch + 1);
    /* another producer id, or an older epoch: fenced */
    req.producer_id = pid + 77;
    bk_txn_out_init(&o);
    bk_txn_init_producer_id(&t->c, &req, t->now, &o);
    ck_assert_int_eq(t_answer(t, &o), KP_ERROR_PRODUCER_FENCED);
    req.producer_id = pid;
    req.producer_epoch = (int16_t)(epoch + 5);
    bk_txn_out_init(&o);
    bk_txn_init_producer_id(&t->c, &req, t->now, &o);
    ck_assert_int_eq(t_answer(t, &o), KP_ERROR_PRODUCER_FENCED);

    /* exhaustion: state at epoch 32766 (loaded from a record) */
    bk_txn_meta_t m = *meta(t, "k");
    m.parts = NULL;
    m.nparts = m.cap = 0;
    m.producer_epoch = BK_TXN_EPOCH_MAX - 1;
    bk_txn_rec_t rec;
    ck_assert_int_eq(bk_txn_rec_encode("k", &m, &rec), KP_OK);
    ck_assert_int_eq(bk_txn_load(&t->c, rec.key, rec.key_len, rec.value, rec.value_len), KP_OK);
    uint8_t *log_k = rec.key, *log_v = rec.value;   /* kept to load it again below */
    size_t log_kl = rec.key_len, log_vl = rec.value_len;
    int64_t p3;
    int16_t e3;
    ck_assert_int_eq(t_init(t, "k", 1000, &p3, &e3), KP_ERROR_NONE);
    ck_assert_int_ne(p3, pid);
    ck_assert_int_eq(e3, 0);
    ck_assert_int_eq(meta(t, "k")->prev_producer_id, pid);
    ck_assert_int_eq(t_add(t, "k", pid, BK_TXN_EPOCH_MAX - 1, TPS, 1), KP_ERROR_INVALID_PRODUCER_ID_MAPPING);
    /* KIP-360 at exhaustion: rotation remembers the old epoch, so a retry
     * with the old id and its exhausted epoch gets the new id again */
    ck_assert_int_eq(bk_txn_load(&t->c, log_k, log_kl, log_v, log_vl), KP_OK);
    req = (bk_txn_init_req_t){ "k", 1000, pid, BK_TXN_EPOCH_MAX - 1 };
    int64_t p4, p5;
    int16_t e4, e5;
    bk_txn_out_init(&o);
    bk_txn_init_producer_id(&t->c, &req, t->now, &o);
    ck_assert_int_eq(t_flush_st(t, &o, KP_ERROR_NONE, &p4, &e4), KP_ERROR_NONE);
    bk_txn_out_free(&o);
    ck_assert_int_ne(p4, pid);
    ck_assert_int_eq(e4, 0);
    bk_txn_out_init(&o);
    bk_txn_init_producer_id(&t->c, &req, t->now, &o);
    ck_assert_int_eq(t_flush_st(t, &o, KP_ERROR_NONE, &p5, &e5), KP_ERROR_NONE);
    bk_txn_out_free(&o);
    ck_assert_int_eq(p5, p4);
    ck_assert_int_eq(e5, 0);
    free(log_k);
    free(log_v);
    free_ctx(t);
}
END_TEST

/* Compares what a replay can know: the persisted fields. */
static void same_meta(const bk_txn_meta_t *a, const bk_txn_meta_t *b) {
    ck_assert_int_eq(a->state, b->state);
    ck_assert_int_eq(a->producer_id, b->producer_id);
    ck_assert_int_eq(a->producer_epoch, b->producer_epoch);
    ck_assert_int_eq(a->timeout_ms, b->timeout_ms);
    ck_assert_int_eq(a->start_ms, b->start_ms);
    ck_assert_int_eq(a->last_update_ms, b->last_update_ms);
    ck_assert_uint_eq(a->nparts, b->nparts);
    for (size_t i = 0; i < a->nparts; i++) {
        ck_assert_str_eq(a->parts[i].topic, b->parts[i].topic);
        ck_assert_int_eq(a->parts[i].partition, b->parts[i].partition);
    }
}

/* Failover after every record of a commit: the rebuilt coordinator has the
 * same state, resends the markers a Prepare* needs, and finishes the same. */
START_TEST(test_failover_at_every_step) {
    for (int commit = 0; commit < 2; commit++) {
        tctx_t *t = new_ctx();
        bk_txn_meta_t snap[8];
        size_t nsnap = 0;
        int64_t pid;
        int16_t epoch;
        ck_assert_int_eq(t_init(t, "fo", 60000, &pid, &epoch), KP_ERROR_NONE);
        ck_assert_int_eq(txn_meta_snapshot(meta(t, "fo"), &snap[nsnap++]), 0);
        t->now = 10;
        ck_assert_int_eq(t_add(t, "fo", pid, epoch, TPS, 2), KP_ERROR_NONE);
        ck_assert_int_eq(txn_meta_snapshot(meta(t, "fo"), &snap[nsnap++]), 0);
        t->now = 20;
        ck_assert_int_eq(t_add(t, "fo", pid, epoch, &TPS[2], 1), KP_ERROR_NONE);
        ck_assert_int_eq(txn_meta_snapshot(meta(t, "fo"), &snap[nsnap++]), 0);
        t->now = 30;
        ck_assert_int_eq(t_end(t, "fo", pid, epoch, commit), KP_ERROR_NONE);
        ck_assert_int_eq(txn_meta_snapshot(meta(t, "fo"), &snap[nsnap++]), 0);
        t_ack(t, 0);   /* one marker acknowledged before the crash */
        t_ack_all(t);
        ck_assert_int_eq(txn_meta_snapshot(meta(t, "fo"), &snap[nsnap++]), 0);
        ck_assert_uint_eq(t->nlog, nsnap);

        for (size_t k = 1; k <= t->nlog; k++) {
            tctx_t *r = malloc(sizeof *r);
            t_replay(t, k, r);
            const bk_txn_meta_t *m = meta(r, "fo");
            same_meta(m, &snap[k - 1]);
            if (m->state == BK_TXN_PREPARE_COMMIT || m->state == BK_TXN_PREPARE_ABORT) {
                /* every marker again (one was acked before: harmless), with
                 * the new coordinator epoch */
                ck_assert_uint_eq(r->nmarkers, 3);
                for (size_t i = 0; i < 3; i++) {
                    ck_assert(has_marker(r, TPS[i].topic, TPS[i].partition));
                    ck_assert_int_eq(r->markers[i].coord_epoch, 6);
                    ck_assert(r->markers[i].commit == (bool)commit);
                }
                t_ack_all(r);
                same_meta(meta(r, "fo"), &snap[nsnap - 1]);
                ck_assert_int_eq(meta(r, "fo")->state, commit ? BK_TXN_COMPLETE_COMMIT : BK_TXN_COMPLETE_ABORT);
            } else {
                ck_assert_uint_eq(r->nmarkers, 0);
            }
            if (m->state == BK_TXN_ONGOING) {
                /* the new coordinator enforces the timeout too */
                r->now += 60001;
                t_tick(r);
                ck_assert_int_eq(meta(r, "fo")->state, BK_TXN_PREPARE_ABORT);
                ck_assert_uint_eq(r->nmarkers, meta(r, "fo")->nparts);
            }
            free_ctx(r);
        }
        for (size_t i = 0; i < nsnap; i++) bk_txn_meta_free(&snap[i]);
        free_ctx(t);
    }
}
END_TEST

typedef struct {
    const char *ids[8];
    size_t n;
} list_seen_t;

static void list_collect(void *ctx, const char *id, const bk_txn_meta_t *m) {
    list_seen_t *s = ctx;
    (void)m;
    ck_assert_uint_lt(s->n, 8);
    s->ids[s->n++] = id;
}

START_TEST(test_partition_for) {
    /* expected values from an independent Python model of Java's
     * String.hashCode over UTF-16 and Utils.abs */
    ck_assert_int_eq(bk_txn_partition_for("", 50), 0);
    ck_assert_int_eq(bk_txn_partition_for("a", 50), 47);
    ck_assert_int_eq(bk_txn_partition_for("a", 7), 6);
    ck_assert_int_eq(bk_txn_partition_for("my-txn", 50), 45);
    ck_assert_int_eq(bk_txn_partition_for("my-txn", 7), 5);
    ck_assert_int_eq(bk_txn_partition_for("polygenelubricants", 50), 0);  /* hashCode == MIN_VALUE */
    ck_assert_int_eq(bk_txn_partition_for("polygenelubricants", 7), 0);
    ck_assert_int_eq(bk_txn_partition_for("txn-\xc3\xa9\xf0\x9f\x98\x80", 50), 17);   /* e-acute, U+1F600 */
    ck_assert_int_eq(bk_txn_partition_for("txn-\xc3\xa9\xf0\x9f\x98\x80", 7), 5);
    ck_assert_int_eq(bk_txn_partition_for("transactional-id-42", 50), 4);
    ck_assert_int_eq(bk_txn_partition_for("transactional-id-42", 7), 6);
    ck_assert_int_eq(bk_txn_partition_for("anything", 1), 0);
    /* malformed UTF-8 must not crash or over-read */
    ck_assert_int_lt(bk_txn_partition_for("\xff\xe2\x82", 50), 50);
    ck_assert_int_ge(bk_txn_partition_for("\xf0\x9f", 50), 0);
}
END_TEST

START_TEST(test_describe_and_list) {
    tctx_t *t = new_ctx();
    int64_t pa, pb;
    int16_t ea, eb;
    t->now = 100;
    ck_assert_int_eq(t_init(t, "b", 1000, &pb, &eb), KP_ERROR_NONE);
    ck_assert_int_eq(t_init(t, "a", 1000, &pa, &ea), KP_ERROR_NONE);
    ck_assert_int_eq(t_add(t, "a", pa, ea, TPS, 3), KP_ERROR_NONE);
    const bk_txn_meta_t *m;
    ck_assert_int_eq(bk_txn_describe(&t->c, "a", &m), KP_ERROR_NONE);
    ck_assert_str_eq(bk_txn_state_name(m->state), "Ongoing");
    ck_assert_uint_eq(m->nparts, 3);
    /* sorted by topic then partition */
    ck_assert_str_eq(m->parts[0].topic, "audit");
    ck_assert_str_eq(m->parts[1].topic, "orders");
    ck_assert_int_eq(m->parts[1].partition, 0);
    ck_assert_int_eq(m->start_ms, 100);
    ck_assert_int_eq(bk_txn_describe(&t->c, "zzz", &m), KP_ERROR_TRANSACTIONAL_ID_NOT_FOUND);

    static const char *const names[] = { "Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
                                         "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence" };
    for (int i = 0; i < BK_TXN_STATE_COUNT; i++) {
        bk_txn_state_t s;
        ck_assert_str_eq(bk_txn_state_name((bk_txn_state_t)i), names[i]);
        ck_assert(bk_txn_state_parse(names[i], &s));
        ck_assert_int_eq(s, i);
    }
    bk_txn_state_t s;
    ck_assert(!bk_txn_state_parse("ongoing", &s));

    /* ListTransactions: all, by state, by producer id, by duration */
    list_seen_t seen;
    bk_txn_list(&t->c, NULL, 0, NULL, 0, -1, t->now, NULL, list_collect, memset(&seen, 0, sizeof seen));
    ck_assert_uint_eq(seen.n, 2);
    ck_assert_str_eq(seen.ids[0], "a");     /* in id order */
    ck_assert_str_eq(seen.ids[1], "b");
    const char *st1[] = { "Ongoing", "Bogus" };
    bool unknown[2];
    bk_txn_list(&t->c, st1, 2, NULL, 0, -1, t->now, unknown, list_collect, memset(&seen, 0, sizeof seen));
    ck_assert_uint_eq(seen.n, 1);
    ck_assert_str_eq(seen.ids[0], "a");
    ck_assert(!unknown[0] && unknown[1]);
    const char *st2[] = { "Bogus" };
    bk_txn_list(&t->c, st2, 1, NULL, 0, -1, t->now, unknown, list_collect, memset(&seen, 0, sizeof seen));
    ck_assert_uint_eq(seen.n, 0);
    ck_assert(unknown[0]);
    int64_t pids[] = { 9999, pb };
    bk_txn_list(&t->c, NULL, 0, pids, 2, -1, t->now, NULL, list_collect, memset(&seen, 0, sizeof seen));
    ck_assert_uint_eq(seen.n, 1);
    ck_assert_str_eq(seen.ids[0], "b");
    /* duration: "a" started at 100; Kafka keeps now - start > duration */
    const char *st3[] = { "Ongoing" };
    t->now = 600;
    bk_txn_list(&t->c, st3, 1, NULL, 0, 500, t->now, unknown, list_collect, memset(&seen, 0, sizeof seen));
    ck_assert_uint_eq(seen.n, 0);
    t->now = 601;
    bk_txn_list(&t->c, st3, 1, NULL, 0, 500, t->now, unknown, list_collect, memset(&seen, 0, sizeof seen));
    ck_assert_uint_eq(seen.n, 1);
    free_ctx(t);
}
END_TEST

/* Transactions v2 (KIP-890): EndTxn v5 bumps the epoch with the Prepare
 * record, the markers carry the new epoch, the answer names it, its retry
 * with the old epoch is recognised, the old epoch is fenced; verification
 * (AddPartitionsToTxn VerifyOnly) answers per partition and writes nothing;
 * a replay of the log gives the bumped epoch. */
static int16_t t_end_v5(tctx_t *t, const char *id, int64_t pid, int16_t epoch, bool commit, int64_t *opid,
                        int16_t *oepoch) {
    bk_txn_out_t o;
    bk_txn_out_init(&o);
    bk_txn_end_v(&t->c, id, pid, epoch, commit, true, t->now, &o);
    int16_t e = o.error;
    *opid = o.producer_id;
    *oepoch = o.producer_epoch;
    if (o.wait) e = t_flush_st(t, &o, KP_ERROR_NONE, opid, oepoch);
    else ck_assert_uint_eq(o.nrecs, 0);
    bk_txn_out_free(&o);
    return e;
}

START_TEST(test_v2_epoch_bump_and_verify) {
    tctx_t *t = new_ctx();
    int64_t pid, rp;
    int16_t epoch, re;
    t->now = 1000;
    ck_assert_int_eq(t_init(t, "v2", 60000, &pid, &epoch), KP_ERROR_NONE);
    /* verification before any add: no transaction open */
    ck_assert_int_eq(bk_txn_verify(&t->c, "v2", pid, epoch, "orders", 0), KP_ERROR_INVALID_TXN_STATE);
    ck_assert_int_eq(t_add(t, "v2", pid, epoch, TPS, 2), KP_ERROR_NONE);
    size_t nlog = t->nlog;
    ck_assert_int_eq(bk_txn_verify(&t->c, "v2", pid, epoch, "orders", 0), KP_ERROR_NONE);
    ck_assert_int_eq(bk_txn_verify(&t->c, "v2", pid, epoch, "orders", 1), KP_ERROR_NONE);
    ck_assert_int_eq(bk_txn_verify(&t->c, "v2", pid, epoch, "audit", 2), KP_ERROR_INVALID_TXN_STATE);
    ck_assert_int_eq(bk_txn_verify(&t->c, "v2", pid, (int16_t)(epoch + 1), "orders", 0), KP_ERROR_PRODUCER_FENCED);
    ck_assert_int_eq(bk_txn_verify(&t->c, "v2", pid + 1, epoch, "orders", 0), KP_ERROR_INVALID_PRODUCER_ID_MAPPING);
    ck_assert_int_eq(bk_txn_verify(&t->c, "nope", pid, epoch, "orders", 0), KP_ERROR_INVALID_PRODUCER_ID_MAPPING);
    ck_assert_uint_eq(t->nlog, nlog);                               /* verification writes nothing */
    /* EndTxn v5: the Prepare record already has the bumped epoch, so do the markers */
    ck_assert_int_eq(t_end_v5(t, "v2", pid, epoch, true, &rp, &re), KP_ERROR_NONE);
    ck_assert_int_eq(rp, pid);
    ck_assert_int_eq(re, epoch + 1);
    ck_assert_uint_eq(t->nmarkers, 2);
    for (size_t i = 0; i < t->nmarkers; i++) ck_assert_int_eq(t->markers[i].epoch, epoch + 1);
    ck_assert_int_eq(bk_txn_verify(&t->c, "v2", pid, (int16_t)(epoch + 1), "orders", 0),
                     KP_ERROR_CONCURRENT_TRANSACTIONS);            /* completing */
    /* a retry with the old epoch while completing, then after */
    ck_assert_int_eq(t_end_v5(t, "v2", pid, epoch, true, &rp, &re), KP_ERROR_CONCURRENT_TRANSACTIONS);
    t_ack_all(t);
    ck_assert_int_eq(meta(t, "v2")->state, BK_TXN_COMPLETE_COMMIT);
    ck_assert_int_eq(t_end_v5(t, "v2", pid, epoch, true, &rp, &re), KP_ERROR_NONE);
    ck_assert_int_eq(re, epoch + 1);
    ck_assert_int_eq(t_end_v5(t, "v2", pid, epoch, false, &rp, &re), KP_ERROR_INVALID_TXN_STATE);
    /* a coordinator rebuilt from the log recognises that retry too: the
     * records of a v5 end are value v1 with ClientTransactionVersion 2 */
    {
        tctx_t *r2 = malloc(sizeof *r2);
        ck_assert_ptr_nonnull(r2);
        t_replay(t, t->nlog, r2);
        ck_assert_int_eq(bk_txn_get(&r2->c, "v2")->client_txn_version, 2);
        ck_assert_int_eq(t_end_v5(r2, "v2", pid, epoch, true, &rp, &re), KP_ERROR_NONE);
        ck_assert_int_eq(re, epoch + 1);
        ck_assert_int_eq(t_end_v5(r2, "v2", pid, epoch, false, &rp, &re), KP_ERROR_INVALID_TXN_STATE);
        free_ctx(r2);
        const trec_t *last = &t->log[t->nlog - 1];
        ck_assert_int_eq(last->value[0], 0);
        ck_assert_int_eq(last->value[1], 1);          /* value v1 */
        ck_assert_int_eq(t->log[0].value[1], 0);      /* the Empty record of InitProducerId: v0 */
    }
    /* the old epoch is fenced, the new one starts the next transaction */
    ck_assert_int_eq(t_add(t, "v2", pid, epoch, TPS, 1), KP_ERROR_PRODUCER_FENCED);
    ck_assert_int_eq(t_add(t, "v2", pid, (int16_t)(epoch + 1), TPS, 1), KP_ERROR_NONE);
    /* v0-4 EndTxn does not bump */
    ck_assert_int_eq(t_end(t, "v2", pid, (int16_t)(epoch + 1), false), KP_ERROR_NONE);
    ck_assert_int_eq(meta(t, "v2")->producer_epoch, epoch + 1);
    t_ack_all(t);
    /* a v0-4 end clears the client version: the stale epoch is fenced */
    ck_assert_int_eq(meta(t, "v2")->client_txn_version, 0);
    ck_assert_int_eq(t_end_v5(t, "v2", pid, epoch, false, &rp, &re), KP_ERROR_PRODUCER_FENCED);
    /* a replay of the whole log gives the bumped epoch */
    tctx_t *r = malloc(sizeof *r);
    ck_assert_ptr_nonnull(r);
    t_replay(t, t->nlog, r);
    const bk_txn_meta_t *m = bk_txn_get(&r->c, "v2");
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(m->producer_epoch, epoch + 1);
    ck_assert_int_eq(m->state, BK_TXN_COMPLETE_ABORT);
    free_ctx(r);
    free_ctx(t);
}
END_TEST

int main(void) {
    Suite *s = suite_create("txn");
    TCase *tc = tcase_create("coordinator");
    tcase_add_test(tc, test_commit_flow);
    tcase_add_test(tc, test_abort_flow);
    tcase_add_test(tc, test_fencing_by_second_init);
    tcase_add_test(tc, test_reinit_without_open_txn_bumps_epoch);
    tcase_add_test(tc, test_timeout_abort_by_tick);
    tcase_add_test(tc, test_expiry_writes_tombstone);
    tcase_add_test(tc, test_error_codes);
    tcase_add_test(tc, test_kip360_and_epoch_exhaustion);
    tcase_add_test(tc, test_failover_at_every_step);
    tcase_add_test(tc, test_describe_and_list);
    tcase_add_test(tc, test_partition_for);
    tcase_add_test(tc, test_v2_epoch_bump_and_verify);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
