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
 * - the purgatory: an append wakes the fetches of its partition once and
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
#include "protocol/kp_errors.h"
#include "storage/st_io.h"
#include "test/unit/st_test_util.h"

typedef struct {
    char *dir;
    char conf[512];
    struct event_base *base;
    bk_cfg_t *cfg;
    bk_node_t n;
    bool started;
} fx_t;

static void fx_start(fx_t *f) {
    bk_cfg_err_t ce;
    f->cfg = bk_cfg_load(f->conf, 1, NULL, 0, &ce);
    ck_assert_msg(f->cfg != NULL, "config: %s", ce.msg);
    f->base = event_base_new();
    ck_assert_ptr_nonnull(f->base);
    char err[512];
    int rc = bk_broker_start(&f->n, f->base, f->cfg, err, sizeof err);
    ck_assert_msg(rc == 0, "start: %s", err);
    f->started = true;
}

static void stopped(bk_node_t *n, void *arg) {
    (void)n;
    *(bool *)arg = true;
}

static void fx_stop(fx_t *f) {
    bool done = false;
    bk_broker_shutdown(&f->n, stopped, &done);
    for (int i = 0; i < 2000 && !done; i++) event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    ck_assert(done);
    bk_broker_free(&f->n);
    bk_cfg_free(f->cfg);
    event_base_free(f->base);
    f->started = false;
}

static void fx_init(fx_t *f) {
    memset(f, 0, sizeof *f);
    tu_log_capture();            /* quiet storage, no real fsync (st_io_set_sync) */
    f->dir = tu_tmpdir();
    snprintf(f->conf, sizeof f->conf, "%s/node.conf", f->dir);
    FILE *fp = fopen(f->conf, "w");
    ck_assert_ptr_nonnull(fp);
    fprintf(fp,
            "node.id=1\n"
            "cluster.id=skiff-unit-partition\n"
            "process.roles=broker,controller\n"
            "controller.quorum.voters=1@127.0.0.1:1\n"
            "controller.listener.names=CONTROLLER\n"
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
            "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n"
            "admin.listener=\n"
            "log.dirs=%s/data\n"
            "offsets.topic.replication.factor=1\n"
            "transaction.state.log.replication.factor=1\n"
            "transaction.state.log.min.isr=1\n",
            f->dir);
    ck_assert_int_eq(fclose(fp), 0);
    fx_start(f);
}

static void fx_free(fx_t *f) {
    st_io_inject_clear();
    if (f->started) fx_stop(f);
    tu_rmrf(f->dir);
    free(f->dir);
}

static void on_commit(void *arg, int status) { *(int *)arg = status; }

static void create_topic(fx_t *f, const char *name, int32_t parts, const bk_meta_ctrl_kv_t *cfgs, size_t ncfgs) {
    bk_meta_ctrl_create_topic_t t = { name, parts, 1, NULL, 0, cfgs, ncfgs };
    bk_meta_ctrl_create_result_t res;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_create_topics(&f->n.ctrl, bk_node_decision_image(&f->n), &t, 1, false, &recs, &res);
    ck_assert_int_eq(res.error, 0);
    int status = -99;
    bk_node_commit(&f->n, &recs, on_commit, &status);
    bk_meta_recs_free(&recs);
    /* the local committer commits in its fsync job's completion (pool) */
    for (int i = 0; i < 2000 && status == -99; i++) event_base_loop(f->base, EVLOOP_ONCE);
    ck_assert_int_eq(status, KP_OK);
}

static bk_repl_part_t *part(fx_t *f, const char *topic, int32_t partition) {
    bk_repl_part_t *p = NULL;
    ck_assert_int_eq(bk_repl_ps_find(&f->n, bk_meta_image_topic_by_name(&f->n.img, topic), partition, &p), 0);
    ck_assert_ptr_nonnull(p);
    return p;
}

static uint64_t counter(fx_t *f, uint32_t id, const char *topic) {
    return bk_mx_counter_value(bk_mx_series(f->n.metrics, id, (const char *[]){ topic }));
}

static const bk_repl_ps_opts_t ACKS1 = { .acks = 1, .min_insync = 0, .timeout_ms = 1000, .leader_epoch = -1 };
static const bk_repl_ps_opts_t ACKS_ALL = { .acks = -1, .min_insync = 0, .timeout_ms = 1000, .leader_epoch = -1 };
static const bk_repl_ps_producer_t PRODUCER = { 9, false };

static void never(void *ctx, void *part_ctx, const bk_repl_ps_result_t *res) {
    (void)ctx;
    (void)part_ctx;
    (void)res;
    ck_abort_msg("a single replica never waits");
}

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
        ck_assert(!bk_repl_ps_append(&f->n, p, &set, o, never, NULL, NULL, &res));
    }
    kp_arena_free(&a);
    return res;
}

START_TEST(test_produce_validate_append_metrics) {
    fx_t f;
    fx_init(&f);
    create_topic(&f, "t", 4, NULL, 0);
    bk_repl_part_t *p = part(&f, "t", 2);
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
    ck_assert_int_eq(st_log_end_offset(part(&f, "t", 0)->log), 0);
    fx_free(&f);
}
END_TEST

START_TEST(test_duplicate_gets_original_offsets) {
    fx_t f;
    fx_init(&f);
    create_topic(&f, "t", 1, NULL, 0);
    bk_repl_part_t *p = part(&f, "t", 0);
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
    create_topic(&f, "t", 1, NULL, 0);
    bk_repl_part_t *p = part(&f, "t", 0);
    uint8_t buf[4096];
    size_t len = tu_batch(buf, sizeof buf, 2, 1000, 1, 10);
    bk_repl_ps_set_t set = bk_repl_ps_set_internal(buf, len);
    ck_assert(!set.crc_verified);
    bk_repl_ps_result_t r;
    ck_assert(!bk_repl_ps_append(&f.n, p, &set, &ACKS1, never, NULL, NULL, &r));
    ck_assert_int_eq(r.error, 0);
    ck_assert_int_eq(r.last_offset, 1);
    len = tu_batch(buf, sizeof buf, 2, 1000, 1, 10);
    buf[len - 2] ^= 1;
    set = bk_repl_ps_set_internal(buf, len);
    ck_assert(!bk_repl_ps_append(&f.n, p, &set, &ACKS1, never, NULL, NULL, &r));
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
    create_topic(&f, "t", 2, NULL, 0);
    bk_repl_part_t *p = NULL;
    const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&f.n.img, "t");
    ck_assert_int_eq(bk_repl_ps_find(&f.n, NULL, 0, &p), KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION);
    ck_assert_int_eq(bk_repl_ps_find(&f.n, t, 2, &p), KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION);
    ck_assert_int_eq(bk_repl_ps_find(&f.n, t, -1, &p), KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(bk_repl_ps_check(&f.n, NULL, &ACKS1), KP_ERROR_NOT_LEADER_OR_FOLLOWER);
    p = part(&f, "t", 0);
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
    ck_assert(!bk_repl_ps_append(&f.n, p, &set, &ACKS1, never, NULL, NULL, &r));
    ck_assert_int_eq(r.error, KP_ERROR_NOT_LEADER_OR_FOLLOWER);
    ck_assert_int_eq(r.log_start_offset, -1);
    p->leader_epoch--;
    ck_assert_int_eq(st_log_end_offset(p->log), 0);
    /* a restart moves every leader epoch (new incarnation) */
    fx_stop(&f);
    fx_start(&f);
    p = part(&f, "t", 0);
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

START_TEST(test_append_wakes_only_its_partition) {
    fx_t f;
    fx_init(&f);
    create_topic(&f, "t", 3, NULL, 0);
    create_topic(&f, "u", 1, NULL, 0);
    bk_repl_part_t *t0 = part(&f, "t", 0), *t1 = part(&f, "t", 1), *u0 = part(&f, "u", 0);
    waiter_t a = { 0 }, b = { 0 }, c = { 0 }, multi = { 0 };
    wait_on(&f, &a, &t0, 1);
    wait_on(&f, &b, &t1, 1);
    wait_on(&f, &c, &u0, 1);   /* same partition index, other topic */
    bk_repl_part_t *two[2] = { t1, u0 };
    wait_on(&f, &multi, two, 2);
    ck_assert_uint_eq(bk_repl_purg_waiting(f.n.purg), 4);
    append_one(&f, part(&f, "t", 0));
    /* one wake-up per append (the HW moved: the driver's; no second one
     * from the service for the LEO) */
    ck_assert_int_eq(a.ready_calls, 1);
    ck_assert_int_eq(b.ready_calls + c.ready_calls + multi.ready_calls, 0);
    append_one(&f, part(&f, "t", 2));   /* nobody waits there */
    ck_assert_int_eq(a.ready_calls + b.ready_calls + c.ready_calls + multi.ready_calls, 1);
    /* the multi-partition fetch: completed once, gone from both */
    multi.ready_answer = true;
    append_one(&f, part(&f, "u", 0));
    ck_assert_int_eq(c.ready_calls, 1);
    ck_assert_int_eq(multi.ready_calls, 1);
    ck_assert_int_eq(multi.done_calls, 1);
    append_one(&f, part(&f, "t", 1));
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
    create_topic(&f, "durable", 1, every, 1);
    create_topic(&f, "lazy", 1, NULL, 0);
    bk_repl_part_t *d = part(&f, "durable", 0), *l = part(&f, "lazy", 0);
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
    create_topic(&f, "t", 2, NULL, 0);
    bk_repl_part_t *p = part(&f, "t", 1);
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
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
