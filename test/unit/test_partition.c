/* test_partition.c — the partition service (broker/replication/partition.c)
 * on a real single-node broker (local metadata committer, listeners on
 * port 0, no admin port), through the calls its callers make:
 *
 * - produced bytes: validated once (CRC, structure), appended with the
 *   partition's leader epoch, offsets/metrics/HW right; a corrupt batch is
 *   refused with nothing appended; a retried idempotent batch gets its
 *   original offsets and appends nothing (acks=1 and acks=all);
 * - internal sets (coordinators): storage checks their CRC;
 * - the checks: unknown partition, the caller's leader epoch (FENCED /
 *   UNKNOWN_LEADER_EPOCH after a restart moved the epoch), a replica core
 *   that does not lead the partition's epoch, acks=all below min.insync;
 * - the purgatory: an append wakes the fetches of its partition once (at
 *   the end of the loop callback: a burst of appends wakes them once) and
 *   no others; a fetch waiting on several partitions completes once;
 * - flush: flush.messages=1 has each append fsynced on the pool (recovery
 *   point = LEO once it completes); a failed fsync takes the log offline,
 *   and later appends get KAFKA_STORAGE_ERROR;
 * - a coordinator append (a transaction marker through bk_txn_td_write_marker)
 *   updates the topic's skiff_{bytes,messages}_in_total like a produce. */
#include <check.h>
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/config/config.h"
#include "broker/meta/controller.h"
#include "broker/metrics/metrics_catalogue.h"
#include "broker/node.h"
#include "broker/replication/partition.h"
#include "broker/replication/purgatory.h"
#include "broker/replication/replica.h"
#include "broker/txn/txn_driver.h"
#include "protocol/kp_compress.h"
#include "protocol/kp_crc32c.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_msgset.h"
#include "storage/st_io.h"
#include "test/unit/node_test_util.h"
#include "test/unit/st_test_util.h"

typedef nt_fx_t fx_t;

static void fx_init(fx_t *f) {
    nt_init(f, "skiff-unit-partition",
            "offsets.topic.replication.factor=1\n"
            "transaction.state.log.replication.factor=1\n"
            "transaction.state.log.min.isr=1\n");
}

static void fx_free(fx_t *f) {
    st_io_inject_clear();
    nt_free(f);
}

static uint64_t counter(fx_t *f, uint32_t id, const char *topic) {
    return bk_mx_counter_value(bk_mx_series(f->n.metrics, id, (const char *[]){ topic }));
}

static const bk_repl_ps_opts_t ACKS1 = { .acks = 1, .min_insync = 0, .timeout_ms = 1000, .leader_epoch = -1 };
static const bk_repl_ps_opts_t ACKS_ALL = { .acks = -1, .min_insync = 0, .timeout_ms = 1000, .leader_epoch = -1 };
static const bk_repl_ps_producer_t PRODUCER = { 9, false };

/* Validates and appends buf as a producer would; returns the result. */
static bk_repl_ps_result_t produce(fx_t *f, bk_repl_part_t *p, const bk_repl_ps_opts_t *o, const bk_repl_ps_producer_t *pr, uint8_t *buf,
                              size_t len, int16_t *verr) {
    bk_repl_ps_set_t set;
    kp_arena_t a;
    kp_arena_init(&a, 1 << 20);
    bk_repl_ps_result_t res = { -1, -1, -1, -1, -1, false };
    *verr = bk_repl_ps_validate(&f->n, p, o, pr, buf, len, &a, &set);
    if (*verr == 0) {
        ck_assert(set.crc_verified);
        ck_assert(!bk_repl_ps_append(&f->n, p, &set, o, nt_never, NULL, NULL, &res));
    }
    kp_arena_free(&a);
    return res;
}

START_TEST(test_produce_validate_append_metrics) {
    fx_t f;
    fx_init(&f);
    nt_create_topic(&f, "t", 4, NULL, 0);
    bk_repl_part_t *p = nt_part(&f, "t", 2);
    uint8_t buf[8192];
    size_t len = tu_batch(buf, sizeof buf, 5, 1000, 1, 20);
    int16_t verr = 0;
    bk_repl_ps_result_t r = produce(&f, p, &ACKS1, &PRODUCER, buf, len, &verr);
    ck_assert_int_eq(verr, 0);
    ck_assert_int_eq(r.error, 0);
    ck_assert_int_eq(r.base_offset, 0);
    ck_assert_int_eq(r.last_offset, 4);
    ck_assert_int_eq(r.log_start_offset, 0);
    ck_assert(!r.duplicate);
    ck_assert_int_eq(st_log_end_offset(p->log), 5);
    ck_assert_int_eq(st_log_high_watermark(p->log), 5);   /* one replica: HW follows */
    ck_assert_int_eq(bk_repl_leo(bk_repl_replica_core(p)), 5);  /* the core counted it */
    ck_assert_uint_eq(counter(&f, BK_MX_MESSAGES_IN_TOTAL, "t"), 5);
    ck_assert_uint_eq(counter(&f, BK_MX_BYTES_IN_TOTAL, "t"), len);
    /* stamped with the partition's leader epoch, offsets patched in place */
    kp_rd_t rd;
    kp_rd_init(&rd, buf, len);
    kp_batch_t b;
    ck_assert_int_eq(kp_batch_read(&rd, &b), KP_OK);
    ck_assert_int_eq(b.partition_leader_epoch, p->leader_epoch);
    ck_assert_int_eq(b.base_offset, 0);
    /* acks=all on one replica: done at once */
    len = tu_batch(buf, sizeof buf, 3, 2000, 2, 20);
    r = produce(&f, p, &ACKS_ALL, &PRODUCER, buf, len, &verr);
    ck_assert_int_eq(verr + r.error, 0);
    ck_assert_int_eq(r.base_offset, 5);
    /* a flipped byte inside the CRC's range: refused, nothing appended */
    len = tu_batch(buf, sizeof buf, 3, 3000, 3, 20);
    buf[len - 3] ^= 0x40;
    r = produce(&f, p, &ACKS1, &PRODUCER, buf, len, &verr);
    ck_assert_int_eq(verr, KP_ERROR_CORRUPT_MESSAGE);
    ck_assert_int_eq(st_log_end_offset(p->log), 8);
    ck_assert_uint_eq(counter(&f, BK_MX_MESSAGES_IN_TOTAL, "t"), 8);
    /* empty and truncated sets */
    ck_assert_int_eq(produce(&f, p, &ACKS1, &PRODUCER, buf, 0, &verr).error, -1);
    ck_assert_int_eq(verr, KP_ERROR_CORRUPT_MESSAGE);
    len = tu_batch(buf, sizeof buf, 3, 3000, 3, 20);
    (void)produce(&f, p, &ACKS1, &PRODUCER, buf, len - 1, &verr);
    ck_assert_int_eq(verr, KP_ERROR_CORRUPT_MESSAGE);
    ck_assert_int_eq(st_log_end_offset(p->log), 8);
    /* a transactional batch without a transactional id */
    kp_batch_opts_t o = kp_batch_opts_default();
    o.producer_id = 77;
    o.producer_epoch = 0;
    o.base_sequence = 0;
    o.flags = KP_BATCH_TRANSACTIONAL;
    kp_record_in_t rec = { .timestamp = 1, .key = kp_slice_cstr("k"), .value = kp_slice_cstr("v") };
    len = tu_build(buf, sizeof buf, &o, &rec, 1);
    (void)produce(&f, p, &ACKS1, &PRODUCER, buf, len, &verr);
    ck_assert_int_eq(verr, KP_ERROR_INVALID_RECORD);
    /* other partitions untouched */
    ck_assert_int_eq(st_log_end_offset(nt_part(&f, "t", 0)->log), 0);
    fx_free(&f);
}
END_TEST

START_TEST(test_duplicate_gets_original_offsets) {
    fx_t f;
    fx_init(&f);
    nt_create_topic(&f, "t", 1, NULL, 0);
    bk_repl_part_t *p = nt_part(&f, "t", 0);
    kp_batch_opts_t o = kp_batch_opts_default();
    o.producer_id = 1000;
    o.producer_epoch = 0;
    o.base_sequence = 0;
    kp_record_in_t recs[3];
    for (int i = 0; i < 3; i++) recs[i] = (kp_record_in_t){ .timestamp = 10 + i, .key = kp_slice_cstr("k"), .value = kp_slice_cstr("v") };
    uint8_t buf[4096];
    size_t len = tu_build(buf, sizeof buf, &o, recs, 3);
    int16_t verr = 0;
    bk_repl_ps_result_t r = produce(&f, p, &ACKS1, &PRODUCER, buf, len, &verr);
    ck_assert_int_eq(verr + r.error, 0);
    ck_assert_int_eq(r.base_offset, 0);
    uint64_t msgs = counter(&f, BK_MX_MESSAGES_IN_TOTAL, "t");
    for (int k = 0; k < 2; k++) {   /* acks=1, then acks=all (waits for the HW, which has it) */
        len = tu_build(buf, sizeof buf, &o, recs, 3);
        r = produce(&f, p, k ? &ACKS_ALL : &ACKS1, &PRODUCER, buf, len, &verr);
        ck_assert_int_eq(verr + r.error, 0);
        ck_assert(r.duplicate);
        ck_assert_int_eq(r.base_offset, 0);
        ck_assert_int_eq(r.last_offset, 2);
        ck_assert_int_eq(st_log_end_offset(p->log), 3);
    }
    ck_assert_uint_eq(counter(&f, BK_MX_MESSAGES_IN_TOTAL, "t"), msgs);   /* nothing appended */
    /* a gap in the sequence */
    o.base_sequence = 7;
    len = tu_build(buf, sizeof buf, &o, recs, 3);
    (void)produce(&f, p, &ACKS1, &PRODUCER, buf, len, &verr);
    ck_assert_int_eq(verr, KP_ERROR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    fx_free(&f);
}
END_TEST

START_TEST(test_internal_set_checked_by_storage) {
    fx_t f;
    fx_init(&f);
    nt_create_topic(&f, "t", 1, NULL, 0);
    bk_repl_part_t *p = nt_part(&f, "t", 0);
    uint8_t buf[4096];
    size_t len = tu_batch(buf, sizeof buf, 2, 1000, 1, 10);
    bk_repl_ps_set_t set = bk_repl_ps_set_internal(buf, len);
    ck_assert(!set.crc_verified);
    bk_repl_ps_result_t r;
    ck_assert(!bk_repl_ps_append(&f.n, p, &set, &ACKS1, nt_never, NULL, NULL, &r));
    ck_assert_int_eq(r.error, 0);
    ck_assert_int_eq(r.last_offset, 1);
    len = tu_batch(buf, sizeof buf, 2, 1000, 1, 10);
    buf[len - 2] ^= 1;
    set = bk_repl_ps_set_internal(buf, len);
    ck_assert(!bk_repl_ps_append(&f.n, p, &set, &ACKS1, nt_never, NULL, NULL, &r));
    ck_assert_int_eq(r.error, KP_ERROR_CORRUPT_MESSAGE);
    ck_assert_int_eq(r.base_offset, -1);
    ck_assert_int_eq(st_log_end_offset(p->log), 2);
    ck_assert_int_eq(bk_repl_leo(bk_repl_replica_core(p)), 2);
    fx_free(&f);
}
END_TEST

START_TEST(test_checks) {
    fx_t f;
    fx_init(&f);
    nt_create_topic(&f, "t", 2, NULL, 0);
    bk_repl_part_t *p = NULL;
    const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&f.n.img, "t");
    ck_assert_int_eq(bk_repl_ps_find(&f.n, NULL, 0, &p), KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION);
    ck_assert_int_eq(bk_repl_ps_find(&f.n, t, 2, &p), KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION);
    ck_assert_int_eq(bk_repl_ps_find(&f.n, t, -1, &p), KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(bk_repl_ps_check(&f.n, NULL, &ACKS1), KP_ERROR_NOT_LEADER_OR_FOLLOWER);
    p = nt_part(&f, "t", 0);
    ck_assert_int_eq(bk_repl_ps_check(&f.n, p, &ACKS1), 0);
    ck_assert_int_eq(bk_repl_ps_check(&f.n, p, &ACKS_ALL), 0);
    bk_repl_ps_opts_t two = ACKS_ALL;
    two.min_insync = 2;   /* one replica in the ISR */
    ck_assert_int_eq(bk_repl_ps_check(&f.n, p, &two), KP_ERROR_NOT_ENOUGH_REPLICAS);
    two.acks = 1;         /* min.insync binds acks=all only */
    ck_assert_int_eq(bk_repl_ps_check(&f.n, p, &two), 0);
    /* the partition's epoch and its core's must agree */
    p->leader_epoch++;
    ck_assert_int_eq(bk_repl_ps_check(&f.n, p, &ACKS1), KP_ERROR_NOT_LEADER_OR_FOLLOWER);
    uint8_t buf[4096];
    size_t len = tu_batch(buf, sizeof buf, 2, 1000, 1, 10);
    bk_repl_ps_result_t r;
    bk_repl_ps_set_t set = bk_repl_ps_set_internal(buf, len);
    ck_assert(!bk_repl_ps_append(&f.n, p, &set, &ACKS1, nt_never, NULL, NULL, &r));
    ck_assert_int_eq(r.error, KP_ERROR_NOT_LEADER_OR_FOLLOWER);
    ck_assert_int_eq(r.log_start_offset, -1);
    p->leader_epoch--;
    ck_assert_int_eq(st_log_end_offset(p->log), 0);
    /* a restart moves every leader epoch (new incarnation) */
    nt_stop(&f);
    nt_start(&f);
    p = nt_part(&f, "t", 0);
    ck_assert_int_ge(p->leader_epoch, 1);
    bk_repl_ps_opts_t e = ACKS1;
    e.leader_epoch = p->leader_epoch - 1;
    ck_assert_int_eq(bk_repl_ps_check(&f.n, p, &e), KP_ERROR_FENCED_LEADER_EPOCH);
    e.leader_epoch = p->leader_epoch + 1;
    ck_assert_int_eq(bk_repl_ps_check(&f.n, p, &e), KP_ERROR_UNKNOWN_LEADER_EPOCH);
    e.leader_epoch = p->leader_epoch;
    len = tu_batch(buf, sizeof buf, 2, 1000, 1, 10);
    int16_t verr = 0;
    r = produce(&f, p, &e, &PRODUCER, buf, len, &verr);
    ck_assert_int_eq(verr + r.error, 0);
    kp_rd_t rd;
    kp_rd_init(&rd, buf, len);
    kp_batch_t b;
    ck_assert_int_eq(kp_batch_read(&rd, &b), KP_OK);
    ck_assert_int_eq(b.partition_leader_epoch, p->leader_epoch);
    fx_free(&f);
}
END_TEST

/* ---- purgatory wake-ups ------------------------------------------------------ */

typedef struct {
    int ready_calls;
    int done_calls;
    bool ready_answer;
} waiter_t;

static bool w_ready(void *ctx) {
    waiter_t *w = ctx;
    w->ready_calls++;
    return w->ready_answer;
}
static void w_done(void *ctx) { ((waiter_t *)ctx)->done_calls++; }

static void wait_on(fx_t *f, waiter_t *w, bk_repl_part_t *const *ps, size_t n) {
    bk_repl_purg_key_t keys[4];
    for (size_t i = 0; i < n; i++) keys[i] = (bk_repl_purg_key_t){ ps[i]->topic_id, ps[i]->partition };
    ck_assert_int_eq(bk_repl_purg_wait(f->n.purg, keys, n, 60000, w_ready, w_done, w), KP_OK);
}

static void append_one(fx_t *f, bk_repl_part_t *p) {
    uint8_t buf[4096];
    size_t len = tu_batch(buf, sizeof buf, 1, 1000, 1, 10);
    int16_t verr = 0;
    bk_repl_ps_result_t r = produce(f, p, &ACKS1, &PRODUCER, buf, len, &verr);
    ck_assert_int_eq(verr + r.error, 0);
}

/* Runs what is due now on the node's loop: the purgatory's deferred
 * notifies (bk_repl_purg_notify_soon) among them. */
static void run_due(fx_t *f) { event_base_loop(f->base, EVLOOP_NONBLOCK); }

START_TEST(test_append_wakes_only_its_partition) {
    fx_t f;
    fx_init(&f);
    nt_create_topic(&f, "t", 3, NULL, 0);
    nt_create_topic(&f, "u", 1, NULL, 0);
    bk_repl_part_t *t0 = nt_part(&f, "t", 0), *t1 = nt_part(&f, "t", 1), *u0 = nt_part(&f, "u", 0);
    waiter_t a = { 0 }, b = { 0 }, c = { 0 }, multi = { 0 };
    wait_on(&f, &a, &t0, 1);
    wait_on(&f, &b, &t1, 1);
    wait_on(&f, &c, &u0, 1);   /* same partition index, other topic */
    bk_repl_part_t *two[2] = { t1, u0 };
    wait_on(&f, &multi, two, 2);
    ck_assert_uint_eq(bk_repl_purg_waiting(f.n.purg), 4);
    append_one(&f, nt_part(&f, "t", 0));
    /* deferred to the end of the loop callback that appended (issue 19) */
    ck_assert_int_eq(a.ready_calls, 0);
    run_due(&f);
    /* one wake-up per append (the HW moved: the driver's; no second one
     * from the service for the LEO) */
    ck_assert_int_eq(a.ready_calls, 1);
    ck_assert_int_eq(b.ready_calls + c.ready_calls + multi.ready_calls, 0);
    /* a burst of appends in one callback: its waiters asked once, after it */
    append_one(&f, nt_part(&f, "t", 0));
    append_one(&f, nt_part(&f, "t", 0));
    append_one(&f, nt_part(&f, "t", 0));
    ck_assert_int_eq(a.ready_calls, 1);
    run_due(&f);
    ck_assert_int_eq(a.ready_calls, 2);
    run_due(&f);
    ck_assert_int_eq(a.ready_calls, 2);
    append_one(&f, nt_part(&f, "t", 2));   /* nobody waits there */
    run_due(&f);
    ck_assert_int_eq(a.ready_calls + b.ready_calls + c.ready_calls + multi.ready_calls, 2);
    /* the multi-partition fetch: completed once, gone from both */
    multi.ready_answer = true;
    append_one(&f, nt_part(&f, "u", 0));
    run_due(&f);
    ck_assert_int_eq(c.ready_calls, 1);
    ck_assert_int_eq(multi.ready_calls, 1);
    ck_assert_int_eq(multi.done_calls, 1);
    append_one(&f, nt_part(&f, "t", 1));
    run_due(&f);
    ck_assert_int_eq(b.ready_calls, 1);
    ck_assert_int_eq(multi.ready_calls, 1);
    ck_assert_int_eq(multi.done_calls, 1);
    ck_assert_uint_eq(bk_repl_purg_waiting(f.n.purg), 3);
    ck_assert_uint_eq(bk_repl_purg_partitions(f.n.purg), 3);
    fx_free(&f);   /* the stop answers the rest */
    ck_assert_int_eq(a.done_calls + b.done_calls + c.done_calls + multi.done_calls, 4);
}
END_TEST

/* ---- flush ----------------------------------------------------------------------- */

START_TEST(test_flush_policy_once_and_failure) {
    fx_t f;
    fx_init(&f);
    bk_meta_ctrl_kv_t every[1] = { { "flush.messages", "1" } };
    nt_create_topic(&f, "durable", 1, every, 1);
    nt_create_topic(&f, "lazy", 1, NULL, 0);
    bk_repl_part_t *d = nt_part(&f, "durable", 0), *l = nt_part(&f, "lazy", 0);
    append_one(&f, d);
    append_one(&f, l);
    /* flush.messages=1: the append asked for one fsync, which runs on the
     * pool (acks never wait for it); its completion moves the recovery point */
    for (int i = 0; i < 2000 && st_log_recovery_point(d->log) != st_log_end_offset(d->log); i++)
        event_base_loop(f.base, EVLOOP_ONCE);
    ck_assert_int_eq(st_log_recovery_point(d->log), st_log_end_offset(d->log));
    ck_assert_int_eq(st_log_recovery_point(l->log), 0);
    /* the fsync after the next durable append fails: that append was
     * already answered (acks=1), the log goes offline in the fsync's
     * completion and refuses further work with a storage error, uncounted */
    st_io_inject(ST_IO_FSYNC, 0, EIO);
    uint8_t buf[4096];
    size_t len = tu_batch(buf, sizeof buf, 1, 1000, 1, 10);
    int16_t verr = 0;
    bk_repl_ps_result_t r = produce(&f, d, &ACKS1, &PRODUCER, buf, len, &verr);
    ck_assert_int_eq(verr, 0);
    ck_assert_int_eq(r.error, 0);
    for (int i = 0; i < 2000 && !strstr(tu_log_buf, "offline"); i++) event_base_loop(f.base, EVLOOP_ONCE);
    ck_assert_ptr_nonnull(strstr(tu_log_buf, "offline"));
    uint64_t msgs = counter(&f, BK_MX_MESSAGES_IN_TOTAL, "durable");
    len = tu_batch(buf, sizeof buf, 1, 1001, 1, 10);
    r = produce(&f, d, &ACKS1, &PRODUCER, buf, len, &verr);
    ck_assert_int_eq(r.error ? r.error : verr, KP_ERROR_KAFKA_STORAGE_ERROR);
    ck_assert_int_eq(r.base_offset, -1);
    ck_assert_uint_eq(counter(&f, BK_MX_MESSAGES_IN_TOTAL, "durable"), msgs);
    /* the other partition goes on */
    append_one(&f, l);
    ck_assert_int_eq(st_log_end_offset(l->log), 2);
    fx_free(&f);
}
END_TEST

/* ---- a coordinator's append ----------------------------------------------------- */

static void marker_done(void *ctx, int16_t err) {
    (void)ctx;
    (void)err;
    ck_abort_msg("a single replica's marker completes at once");
}

START_TEST(test_coordinator_append_counts_in_metrics) {
    fx_t f;
    fx_init(&f);
    nt_create_topic(&f, "t", 2, NULL, 0);
    bk_repl_part_t *p = nt_part(&f, "t", 1);
    /* a transactional batch opens the producer's transaction here */
    kp_batch_opts_t o = kp_batch_opts_default();
    o.producer_id = 4242;
    o.producer_epoch = 0;
    o.base_sequence = 0;
    o.flags = KP_BATCH_TRANSACTIONAL;
    kp_record_in_t rec = { .timestamp = 1, .key = kp_slice_cstr("k"), .value = kp_slice_cstr("v") };
    uint8_t buf[4096];
    size_t len = tu_build(buf, sizeof buf, &o, &rec, 1);
    bk_repl_ps_producer_t txp = { 9, true };
    int16_t verr = 0;
    bk_repl_ps_result_t r = produce(&f, p, &ACKS1, &txp, buf, len, &verr);
    ck_assert_int_eq(verr + r.error, 0);
    ck_assert_int_eq(st_log_last_stable_offset(p->log), 0);
    uint64_t msgs = counter(&f, BK_MX_MESSAGES_IN_TOTAL, "t");
    uint64_t bytes = counter(&f, BK_MX_BYTES_IN_TOTAL, "t");
    ck_assert_uint_eq(msgs, 1);
    /* the coordinator's marker goes through the service like a produce */
    int16_t err = -1;
    ck_assert(!bk_txn_td_write_marker(&f.n, "t", 1, 4242, 0, true, 0, marker_done, NULL, &err));
    ck_assert_int_eq(err, 0);
    ck_assert_int_eq(st_log_end_offset(p->log), 2);
    ck_assert_int_eq(st_log_last_stable_offset(p->log), 2);
    ck_assert_uint_eq(counter(&f, BK_MX_MESSAGES_IN_TOTAL, "t"), msgs + 1);
    ck_assert_uint_gt(counter(&f, BK_MX_BYTES_IN_TOTAL, "t"), bytes);
    ck_assert_int_eq(bk_repl_leo(bk_repl_replica_core(p)), 2);
    /* a marker for a partition not here: the service's error */
    ck_assert(!bk_txn_td_write_marker(&f.n, "t", 5, 4242, 0, true, 0, marker_done, NULL, &err));
    ck_assert_int_eq(err, KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION);
    fx_free(&f);
}
END_TEST

/* ---- the state-free checks done ahead (bk_repl_ps_precheck) ------------------- */

/* Rewrites the CRC of the batch at buf[0..) after a change of its bytes. */
static void fix_crc(uint8_t *buf, size_t len) {
    uint32_t c = kp_crc32c(0, buf + KP_BATCH_ATTR_OFFSET, len - KP_BATCH_ATTR_OFFSET);
    buf[KP_BATCH_CRC_OFFSET] = (uint8_t)(c >> 24);
    buf[KP_BATCH_CRC_OFFSET + 1] = (uint8_t)(c >> 16);
    buf[KP_BATCH_CRC_OFFSET + 2] = (uint8_t)(c >> 8);
    buf[KP_BATCH_CRC_OFFSET + 3] = (uint8_t)c;
}

/* n records of vlen bytes (value byte `fill`, or varied when fill < 0), codec c. */
static size_t build_codec(uint8_t *buf, size_t cap, kp_codec_t c, int n, size_t vlen, int fill, int64_t pid,
                          int32_t seq) {
    uint8_t *vals = malloc(vlen ? vlen : 1);
    ck_assert_ptr_nonnull(vals);
    for (size_t j = 0; j < vlen; j++) vals[j] = fill >= 0 ? (uint8_t)fill : (uint8_t)(j * 7 + j / 13);
    kp_record_in_t *recs = calloc((size_t)n, sizeof *recs);
    ck_assert_ptr_nonnull(recs);
    for (int i = 0; i < n; i++) recs[i] = (kp_record_in_t){ .timestamp = 100 + i, .key = kp_slice_cstr("key"), .value = { vals, vlen } };
    kp_batch_opts_t o = kp_batch_opts_default();
    o.codec = c;
    o.max_bytes = (size_t)1 << 30;
    if (pid >= 0) {
        o.producer_id = pid;
        o.producer_epoch = 0;
        o.base_sequence = seq;
    }
    /* tu_build's arena holds 64 MiB: too little for the bombs below */
    kp_arena_t a;
    kp_arena_init(&a, (size_t)256 << 20);
    kp_batch_builder_t bb;
    kp_batch_builder_init(&bb, &o);
    for (int i = 0; i < n; i++) ck_assert_int_eq(kp_batch_builder_add(&bb, &recs[i]), KP_OK);
    const uint8_t *out;
    size_t len;
    ck_assert_int_eq(kp_batch_builder_finish(&bb, &a, &out, &len), KP_OK);
    kp_batch_builder_free(&bb);
    ck_assert_uint_le(len, cap);
    memcpy(buf, out, len);
    kp_arena_free(&a);
    free(recs);
    free(vals);
    return len;
}

typedef struct {
    const char *name;
    int16_t expect;            /* what both paths must answer */
    int16_t api_version;
    bool transactional;
    uint8_t stage;             /* what the precheck must say (of batch nbatches_ok) */
    int32_t nbatches_ok;
} pre_case_t;

/* Validates buf both ways (full checks; with the precheck of the same bytes)
 * on copies, and checks both against the case's expectations. */
static void check_both_ways(fx_t *f, bk_repl_part_t *p, const pre_case_t *c, const uint8_t *buf, size_t len) {
    uint8_t *a = malloc(len ? len : 1), *b = malloc(len ? len : 1);
    ck_assert(a && b);
    if (len) { memcpy(a, buf, len); memcpy(b, buf, len); }
    kp_arena_t scratch, ar1, ar2;
    kp_arena_init(&scratch, BK_REPL_PARTS_SCRATCH_CAP_BYTES);
    kp_arena_init(&ar1, 1 << 20);
    kp_arena_init(&ar2, 1 << 20);
    bk_repl_ps_pre_t pre;
    bk_repl_ps_precheck(b, len, c->api_version, &scratch, &pre);
    ck_assert_msg(pre.stage == c->stage && pre.nbatches_ok == c->nbatches_ok, "%s: precheck stage %d after %d batches",
                  c->name, pre.stage, pre.nbatches_ok);
    bk_repl_ps_producer_t pr = { c->api_version, c->transactional };
    bk_repl_ps_set_t s1, s2;
    int16_t e1 = bk_repl_ps_validate(&f->n, p, &ACKS1, &pr, a, len, &ar1, &s1);
    int16_t e2 = bk_repl_ps_validate_pre(&f->n, p, &ACKS1, &pr, &pre, b, len, &ar2, &s2);
    ck_assert_msg(e1 == c->expect, "%s: full checks answered %d, expected %d", c->name, e1, c->expect);
    ck_assert_msg(e2 == c->expect, "%s: with the precheck answered %d, expected %d", c->name, e2, c->expect);
    if (e1 == 0) {
        ck_assert(s1.crc_verified && s2.crc_verified);
        ck_assert_int_eq(s1.len, s2.len);
        ck_assert_int_eq(s1.dup_first, s2.dup_first);
        ck_assert_int_eq(s1.txn_pid, s2.txn_pid);
    }
    kp_arena_free(&scratch);
    kp_arena_free(&ar1);
    kp_arena_free(&ar2);
    free(a);
    free(b);
}

START_TEST(test_precheck_same_verdicts) {
    fx_t f;
    fx_init(&f);
    bk_meta_ctrl_kv_t small[1] = { { "max.message.bytes", "3000" } };
    nt_create_topic(&f, "t", 1, NULL, 0);
    nt_create_topic(&f, "small", 1, small, 1);
    bk_repl_part_t *p = nt_part(&f, "t", 0), *sp = nt_part(&f, "small", 0);
    size_t cap = (size_t)1 << 20;
    uint8_t *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    enum { OK = 0 };
    const uint8_t NONE = BK_REPL_PS_PRE_NONE, CRC = BK_REPL_PS_PRE_CRC, RECS = BK_REPL_PS_PRE_RECORDS;

    /* good sets, every codec, one and two batches */
    const kp_codec_t codecs[] = { KP_CODEC_NONE, KP_CODEC_GZIP, KP_CODEC_SNAPPY, KP_CODEC_LZ4, KP_CODEC_ZSTD };
    for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++) {
        size_t len = build_codec(buf, cap, codecs[i], 20, 300, -1, -1, 0);
        size_t len2 = build_codec(buf + len, cap - len, codecs[i], 5, 50, 'x', -1, 0);
        pre_case_t c1 = { kp_codec_name(codecs[i]), OK, 9, false, NONE, 1 };
        check_both_ways(&f, p, &c1, buf, len);
        pre_case_t c2 = { "two batches", OK, 9, false, NONE, 2 };
        check_both_ways(&f, p, &c2, buf, len + len2);
        /* a flipped byte in the second batch's records: CRC */
        buf[len + len2 - 2] ^= 0x10;
        pre_case_t c3 = { "second batch corrupt", KP_ERROR_CORRUPT_MESSAGE, 9, false, CRC, 1 };
        check_both_ways(&f, p, &c3, buf, len + len2);
        /* the same, compressed payload damaged under a right CRC: records */
        if (codecs[i] != KP_CODEC_NONE) {
            len = build_codec(buf, cap, codecs[i], 20, 300, -1, -1, 0);
            buf[len - 3] ^= 0xff;
            buf[len - 9] ^= 0xff;
            fix_crc(buf, len);
            pre_case_t c4 = { "compressed bytes damaged", KP_ERROR_CORRUPT_MESSAGE, 9, false, RECS, 0 };
            /* a codec may read damaged bytes as other records: whatever the
             * full checks answer, the precheck must answer the same */
            bk_repl_ps_pre_t pre;
            kp_arena_t sc;
            kp_arena_init(&sc, BK_REPL_PARTS_SCRATCH_CAP_BYTES);
            bk_repl_ps_precheck(buf, len, 9, &sc, &pre);
            kp_arena_free(&sc);
            c4.stage = pre.stage;
            c4.nbatches_ok = pre.nbatches_ok;
            c4.expect = pre.stage == RECS ? pre.error : OK;
            check_both_ways(&f, p, &c4, buf, len);
        }
    }
    /* zstd below v7: refused on the loop, not decompressed ahead */
    size_t len = build_codec(buf, cap, KP_CODEC_ZSTD, 10, 100, -1, -1, 0);
    pre_case_t zv = { "zstd v3", KP_ERROR_UNSUPPORTED_COMPRESSION_TYPE, 3, false, NONE, 0 };
    check_both_ways(&f, p, &zv, buf, len);
    /* CRC of the first batch */
    len = build_codec(buf, cap, KP_CODEC_NONE, 10, 100, -1, -1, 0);
    buf[len - 1] ^= 1;
    pre_case_t crc = { "crc", KP_ERROR_CORRUPT_MESSAGE, 9, false, CRC, 0 };
    check_both_ways(&f, p, &crc, buf, len);
    /* max.message.bytes is checked before the CRC (state first, as before) */
    len = build_codec(buf, cap, KP_CODEC_NONE, 20, 300, -1, -1, 0);
    buf[len - 1] ^= 1;
    pre_case_t big = { "too large and corrupt", KP_ERROR_MESSAGE_TOO_LARGE, 9, false, CRC, 0 };
    check_both_ways(&f, sp, &big, buf, len);
    /* records count one more than the records present, CRC right */
    len = build_codec(buf, cap, KP_CODEC_NONE, 3, 10, 'a', -1, 0);
    buf[60] = (uint8_t)(buf[60] + 1);   /* recordsCount: bytes 57..60 */
    fix_crc(buf, len);
    pre_case_t cnt = { "records count", KP_ERROR_INVALID_RECORD, 9, false, RECS, 0 };
    check_both_ways(&f, p, &cnt, buf, len);
    /* truncated set: the loop's framing read */
    len = build_codec(buf, cap, KP_CODEC_NONE, 3, 10, 'a', -1, 0);
    pre_case_t trunc = { "truncated", KP_ERROR_CORRUPT_MESSAGE, 9, false, NONE, 0 };
    check_both_ways(&f, p, &trunc, buf, len - 1);
    /* a control batch: INVALID_RECORD whatever its records */
    len = tu_marker(buf, cap, 55, 0, true, 1);
    pre_case_t ctl = { "control", KP_ERROR_INVALID_RECORD, 9, false, NONE, 1 };
    check_both_ways(&f, p, &ctl, buf, len);
    /* a transactional batch without transactional id, then with one */
    kp_batch_opts_t o = kp_batch_opts_default();
    o.producer_id = 77;
    o.producer_epoch = 0;
    o.base_sequence = 0;
    o.flags = KP_BATCH_TRANSACTIONAL;
    kp_record_in_t rec = { .timestamp = 1, .key = kp_slice_cstr("k"), .value = kp_slice_cstr("v") };
    len = tu_build(buf, cap, &o, &rec, 1);
    pre_case_t txn = { "transactional without id", KP_ERROR_INVALID_RECORD, 9, false, NONE, 1 };
    check_both_ways(&f, p, &txn, buf, len);
    pre_case_t txn2 = { "transactional", OK, 9, true, NONE, 1 };
    check_both_ways(&f, p, &txn2, buf, len);
    /* decompressed size over 64 MiB: zstd declares it, gzip has to be inflated */
    const kp_codec_t bombs[] = { KP_CODEC_ZSTD, KP_CODEC_GZIP };
    for (size_t i = 0; i < 2; i++) {
        len = build_codec(buf, cap, bombs[i], 65, (size_t)1 << 20, 0, -1, 0);
        pre_case_t bomb = { "over 64 MiB", KP_ERROR_RECORD_LIST_TOO_LARGE, 9, false, RECS, 0 };
        check_both_ways(&f, p, &bomb, buf, len);
    }
    /* legacy magic 1: converted on the loop, nothing done ahead */
    len = build_codec(buf, cap, KP_CODEC_NONE, 4, 20, 'q', -1, 0);
    {
        kp_rd_t rd;
        kp_rd_init(&rd, buf, len);
        kp_batch_t bt;
        ck_assert_int_eq(kp_batch_read(&rd, &bt), KP_OK);
        kp_arena_t la;
        kp_arena_init(&la, 1 << 20);
        const uint8_t *ms;
        size_t mlen;
        ck_assert_int_eq(kp_batch_to_msgset(&bt, bt.data + KP_BATCH_HEADER_BYTES, bt.size - KP_BATCH_HEADER_BYTES, 1,
                                            &la, &ms, &mlen), KP_OK);
        uint8_t *legacy = malloc(mlen);
        memcpy(legacy, ms, mlen);
        kp_arena_free(&la);
        pre_case_t lg = { "legacy magic 1", OK, 2, false, NONE, 0 };
        check_both_ways(&f, p, &lg, legacy, mlen);
        free(legacy);
    }
    /* idempotence stays on the loop: a duplicate is found either way */
    len = build_codec(buf, cap, KP_CODEC_LZ4, 3, 10, 'd', 900, 0);
    int16_t verr = 0;
    uint8_t *copy = malloc(len);
    memcpy(copy, buf, len);
    bk_repl_ps_result_t r = produce(&f, p, &ACKS1, &PRODUCER, copy, len, &verr);
    ck_assert_int_eq(verr + r.error, 0);
    free(copy);
    pre_case_t dup = { "duplicate", OK, 9, false, NONE, 1 };
    check_both_ways(&f, p, &dup, buf, len);
    len = build_codec(buf, cap, KP_CODEC_LZ4, 3, 10, 'd', 900, 9);
    pre_case_t ooo = { "out of order", KP_ERROR_OUT_OF_ORDER_SEQUENCE_NUMBER, 9, false, NONE, 1 };
    check_both_ways(&f, p, &ooo, buf, len);
    /* and a prechecked set appends like any other */
    len = build_codec(buf, cap, KP_CODEC_SNAPPY, 7, 40, -1, -1, 0);
    {
        kp_arena_t sc, ar;
        kp_arena_init(&sc, BK_REPL_PARTS_SCRATCH_CAP_BYTES);
        kp_arena_init(&ar, 1 << 20);
        bk_repl_ps_pre_t pre;
        bk_repl_ps_precheck(buf, len, 9, &sc, &pre);
        bk_repl_ps_set_t set;
        int64_t leo = st_log_end_offset(p->log);
        uint64_t prechecked = bk_repl_parts_prechecked_batches(f.n.parts);
        ck_assert_int_eq(bk_repl_ps_validate_pre(&f.n, p, &ACKS1, &PRODUCER, &pre, buf, len, &ar, &set), 0);
        ck_assert_uint_eq(bk_repl_parts_prechecked_batches(f.n.parts), prechecked + 1);
        ck_assert(!bk_repl_ps_append(&f.n, p, &set, &ACKS1, nt_never, NULL, NULL, &r));
        ck_assert_int_eq(r.error, 0);
        ck_assert_int_eq(r.base_offset, leo);
        ck_assert_int_eq(st_log_end_offset(p->log), leo + 7);
        kp_arena_free(&sc);
        kp_arena_free(&ar);
    }
    free(buf);
    fx_free(&f);
}
END_TEST

int main(void) {
    Suite *s = suite_create("partition");
    TCase *tc = tcase_create("service");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_produce_validate_append_metrics);
    tcase_add_test(tc, test_duplicate_gets_original_offsets);
    tcase_add_test(tc, test_internal_set_checked_by_storage);
    tcase_add_test(tc, test_checks);
    tcase_add_test(tc, test_append_wakes_only_its_partition);
    tcase_add_test(tc, test_flush_policy_once_and_failure);
    tcase_add_test(tc, test_coordinator_append_counts_in_metrics);
    tcase_add_test(tc, test_precheck_same_verdicts);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
