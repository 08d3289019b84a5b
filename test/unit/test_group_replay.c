/* test_group_replay.c — a group core loaded from a real __consumer_offsets
 * log (broker/group_replay.c), as after a kill -9 and restart of the group
 * coordinator's node (issue 9): TxnOffsetCommit records (the producer's
 * transactional batch) are held per producer id and applied at that
 * producer's COMMIT control batch, dropped at its ABORT, and those whose
 * transaction is still open at the end of the log become pending offsets
 * (OffsetFetch require_stable answers UNSTABLE_OFFSET_COMMIT for them), in
 * log order, interleaved with plain commits and other producers' markers. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "broker/group/group.h"
#include "broker/group/group_replay.h"
#include "broker/group/group_txn_offsets.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_errors.h"
#include "storage/st_log.h"
#include "test/unit/st_test_util.h"

#define S(x) kp_slice_cstr(x)

/* Appends one batch holding the OffsetCommit record of (group, topic,
 * partition) = offset: the producer's transactional batch when pid >= 0
 * (TxnOffsetCommit, as bk_gd_append_txn writes it), else a plain one. */
static void append_commit(st_log_t *log, int64_t pid, const char *group, const char *topic, int32_t partition,
                          int64_t offset) {
    bk_grp_out_t out;
    bk_grp_out_init(&out);
    bk_grp_txn_offset_t t = { S(group), S(topic), partition, offset, -1, kp_slice_null(), 1000 };
    bk_grp_rec_txn_offset(&out, &t);
    ck_assert_int_eq(out.err, KP_OK);
    kp_batch_opts_t o = kp_batch_opts_default();
    if (pid >= 0) {
        o.producer_id = pid;
        o.producer_epoch = 0;
        o.flags = KP_BATCH_TRANSACTIONAL;
    }
    kp_batch_builder_t bb;
    kp_batch_builder_init(&bb, &o);
    for (size_t i = 0; i < out.nrecs; i++) {
        kp_record_in_t r = { 1000, out.recs[i].key, out.recs[i].value, NULL, 0 };
        ck_assert_int_eq(kp_batch_builder_add(&bb, &r), KP_OK);
    }
    kp_arena_t a;
    kp_arena_init(&a, 1 << 20);
    const uint8_t *b = NULL;
    size_t len = 0;
    ck_assert_int_eq(kp_batch_builder_finish(&bb, &a, &b, &len), KP_OK);
    kp_batch_builder_free(&bb);
    st_append_info_t info;
    ck_assert_int_eq(st_log_append(log, (uint8_t *)b, len, 0, 1000, &info), KP_OK);
    st_log_set_high_watermark(log, st_log_end_offset(log));
    kp_arena_free(&a);
    bk_grp_out_free(&out);
}

/* The COMMIT/ABORT control batch bk_txn_td_write_marker appends. */
static void append_marker(st_log_t *log, int64_t pid, bool commit) {
    kp_arena_t a;
    kp_arena_init(&a, 1 << 16);
    const uint8_t *b;
    size_t len;
    ck_assert_int_eq(kp_batch_build_txn_marker(pid, 0, commit, 1, 2000, &a, &b, &len), KP_OK);
    st_append_info_t info;
    ck_assert_int_eq(st_log_append(log, (uint8_t *)b, len, 0, 2000, &info), KP_OK);
    st_log_set_high_watermark(log, st_log_end_offset(log));
    kp_arena_free(&a);
}

static int64_t fetched(bk_grp_coord_t *c, const char *group, const char *topic, int32_t partition) {
    bk_grp_tp_t tp = { S(topic), partition };
    bk_grp_fetched_t f;
    ck_assert_int_eq(bk_grp_offset_fetch(c, S(group), &tp, 1, &f), KP_ERROR_NONE);
    return f.offset;
}

typedef struct {
    char *dir;
    st_log_config_t cfg;
    st_log_t *log;
    bk_grp_config_t gcfg;
    bk_grp_coord_t c;
    bk_grp_txn_offsets_t pend;
    bool loaded;
} fx_t;

static void fx_init(fx_t *f) {
    memset(f, 0, sizeof *f);
    tu_log_capture();
    f->dir = tu_tmpdir();
    st_log_config_default(&f->cfg);
    f->log = tu_open(f->dir, &f->cfg, 0, false);
    bk_grp_config_defaults(&f->gcfg);
    f->gcfg.num_partitions = 1;
    bk_grp_txn_offsets_init(&f->pend);
}

/* The node restarts (unclean: the log is reopened and recovered) and the
 * new coordinator replays the log, as start_core does (pending cleared). */
static void fx_restart_and_load(fx_t *f, bk_grp_txn_offsets_t *pend) {
    st_log_offsets_t fin;
    ck_assert_int_eq(st_log_close(f->log, &fin), KP_OK);
    f->log = tu_open(f->dir, &f->cfg, 0, false);
    st_log_set_high_watermark(f->log, st_log_end_offset(f->log));
    if (f->loaded) bk_grp_coord_free(&f->c);
    bk_grp_coord_init(&f->c, &f->gcfg, 0, 7);
    bk_grp_txn_offsets_free(&f->pend);
    bk_grp_txn_offsets_init(&f->pend);
    ck_assert_int_eq(bk_grp_gd_replay(&f->c, f->log, pend), KP_OK);
    bk_grp_load_done(&f->c, 3000);
    f->loaded = true;
}

static void fx_free(fx_t *f) {
    st_log_offsets_t fin;
    ck_assert_int_eq(st_log_close(f->log, &fin), KP_OK);
    if (f->loaded) bk_grp_coord_free(&f->c);
    bk_grp_txn_offsets_free(&f->pend);
    tu_rmrf(f->dir);
    free(f->dir);
}

/* TxnOffsetCommit, restart before the marker (the offsets are pending
 * again, not the group's), marker, restart again (the group's). */
START_TEST(test_open_then_committed_across_restarts) {
    fx_t f;
    fx_init(&f);
    append_commit(f.log, -1, "g", "t", 0, 10);        /* a plain commit first */
    append_commit(f.log, 5, "g", "t", 0, 42);         /* producer 5's TxnOffsetCommit */
    append_commit(f.log, 6, "g", "t", 1, 77);         /* producer 6's, other partition */
    fx_restart_and_load(&f, &f.pend);
    ck_assert_int_eq(fetched(&f.c, "g", "t", 0), 10);   /* the open one is not visible */
    ck_assert_int_eq(fetched(&f.c, "g", "t", 1), -1);
    ck_assert_uint_eq(f.pend.n, 2);
    ck_assert(bk_grp_txn_offsets_pending(&f.pend, "g", "t", 0));
    ck_assert(bk_grp_txn_offsets_pending(&f.pend, "g", "t", 1));
    ck_assert(bk_grp_txn_offsets_has_producer(&f.pend, 5));
    ck_assert(bk_grp_txn_offsets_has_producer(&f.pend, 6));
    ck_assert_int_eq(f.pend.v[0].offset, 42);

    append_marker(f.log, 5, true);                    /* 5 commits, 6 aborts */
    append_marker(f.log, 6, false);
    fx_restart_and_load(&f, &f.pend);
    ck_assert_int_eq(fetched(&f.c, "g", "t", 0), 42);
    ck_assert_int_eq(fetched(&f.c, "g", "t", 1), -1);
    ck_assert_uint_eq(f.pend.n, 0);                   /* nothing stays unstable */
    fx_free(&f);
}
END_TEST

/* Markers resolve only their own producer's records, in log order: a
 * COMMIT of another producer leaves an open one pending, a plain commit
 * after a COMMIT wins, and a producer's second transaction is held anew. */
START_TEST(test_markers_resolve_their_producer_in_log_order) {
    fx_t f;
    fx_init(&f);
    append_commit(f.log, 7, "g", "a", 0, 1);
    append_commit(f.log, 8, "g", "b", 0, 2);
    append_marker(f.log, 8, true);                    /* 8 done, 7 still open */
    append_commit(f.log, 8, "g", "b", 0, 3);          /* 8's next transaction */
    append_marker(f.log, 9, true);                    /* unknown producer: nothing */
    append_commit(f.log, -1, "h", "c", 0, 5);
    append_commit(f.log, 9, "h", "c", 0, 6);
    append_marker(f.log, 9, true);
    append_commit(f.log, -1, "h", "c", 0, 8);         /* later plain commit wins */
    fx_restart_and_load(&f, &f.pend);
    ck_assert_int_eq(fetched(&f.c, "g", "a", 0), -1);
    ck_assert_int_eq(fetched(&f.c, "g", "b", 0), 2);
    ck_assert_int_eq(fetched(&f.c, "h", "c", 0), 8);
    ck_assert_uint_eq(f.pend.n, 2);
    ck_assert(bk_grp_txn_offsets_pending(&f.pend, "g", "a", 0));
    ck_assert(bk_grp_txn_offsets_pending(&f.pend, "g", "b", 0));
    ck_assert(!bk_grp_txn_offsets_pending(&f.pend, "h", NULL, -1));
    ck_assert(!bk_grp_txn_offsets_has_producer(&f.pend, 9));

    append_marker(f.log, 7, false);
    append_marker(f.log, 8, true);
    fx_restart_and_load(&f, &f.pend);
    ck_assert_int_eq(fetched(&f.c, "g", "a", 0), -1);
    ck_assert_int_eq(fetched(&f.c, "g", "b", 0), 3);
    ck_assert_uint_eq(f.pend.n, 0);

    /* without a pending table (no txn driver) open offsets are not loaded */
    append_commit(f.log, 10, "g", "a", 0, 11);
    fx_restart_and_load(&f, NULL);
    ck_assert_int_eq(fetched(&f.c, "g", "a", 0), -1);
    ck_assert_uint_eq(f.pend.n, 0);
    fx_free(&f);
}
END_TEST

int main(void) {
    Suite *s = suite_create("group_replay");
    TCase *tc = tcase_create("replay");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_open_then_committed_across_restarts);
    tcase_add_test(tc, test_markers_resolve_their_producer_in_log_order);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
