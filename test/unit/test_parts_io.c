/* test_parts_io.c — the partition manager's and the metadata committer's
 * disk work off the loop: fsyncs (bk_repl_parts_flush_maybe, coalesced, one per
 * log in flight), retention and flush.ms from the timer (bk_repl_parts_tick),
 * periodic checkpoints (bk_repl_parts_checkpoint_async), deletion of a partition
 * (rename on the pool), a log deleted or re-created while its fsync runs, a
 * refused job, and the single-node metadata log committing in its fsync's
 * completion. The test thread is the loop and the storage guard is fatal on
 * it (st_guard.h): any fsync, open, rename or unlink on the loop outside
 * the documented exceptions aborts the test. */
#include <check.h>
#include <dirent.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "broker/meta/controller.h"
#include "broker/meta/meta_log.h"
#include "broker/net/worker.h"
#include "broker/replication/parts.h"
#include "storage/st_checkpoint.h"
#include "storage/st_guard.h"
#include "storage/st_log.h"
#include "test/unit/parts_test_util.h"
#include "test/unit/st_test_util.h"

typedef struct { int calls; int status; int64_t first; } done_t;
static void on_done(void *arg, int status, int64_t first) {
    done_t *d = arg;
    d->calls++;
    d->status = status;
    d->first = first;
}

typedef struct {
    char *dir, *mdir;
    st_logdir_t ld, mld;
    bk_meta_image_t img;
    bk_meta_log_t *m;
    bk_meta_ctrl_t c;
    struct event_base *base;
    bk_net_worker_pool_t *pool;
    bk_repl_parts_t *p;
    size_t trashed;
    st_log_config_t lc;           /* every topic's log settings */
} fx_t;

static void cfg_of(void *ctx, const char *topic, st_log_config_t *out) {
    (void)topic;
    *out = ((fx_t *)ctx)->lc;
}
static void trash_collect(void *ctx, const char *path) {
    fx_t *f = ctx;
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);   /* renamed, not yet removed */
    ck_assert(bk_repl_parts_is_trash(strrchr(path, '/') + 1));
    f->trashed++;
}

/* Commits through the committer, waiting on the loop if it went async. */
static void commit(fx_t *f, bk_meta_recs_t *recs) {
    done_t d = { 0, -99, -1 };
    bk_meta_log_propose(f->m, recs, 0, on_done, &d);
    bk_meta_recs_free(recs);
    for (int i = 0; i < 1000 && d.calls == 0; i++) event_base_loop(f->base, EVLOOP_ONCE);
    ck_assert_int_eq(d.calls, 1);
    ck_assert_int_eq(d.status, KP_OK);
}

static void commit_ctx(void *f, bk_meta_recs_t *recs) { commit(f, recs); }

static int submit(void *pool, int (*job)(void *), void (*done)(void *, int), void *arg) {
    return bk_net_worker_submit(pool, job, done, arg) == BK_NET_OK ? 0 : -1;
}

static void fx_init(fx_t *f, uint32_t queue_max) {
    memset(f, 0, sizeof *f);
    tu_log_capture();
    st_log_config_default(&f->lc);
    f->lc.segment_bytes = 4096;
    f->lc.index_max_bytes = 4096;
    f->dir = tu_tmpdir();
    f->mdir = tu_tmpdir();
    ck_assert_int_eq(st_logdir_load(&f->ld, f->dir), KP_OK);
    ck_assert_int_eq(st_logdir_load(&f->mld, f->mdir), KP_OK);
    bk_meta_image_init(&f->img, 1);
    char err[512];
    f->m = bk_meta_log_open(&f->mld, &f->img, 0, err, sizeof err);
    ck_assert_ptr_nonnull(f->m);
    bk_meta_ctrl_config_t cc;
    bk_meta_ctrl_config_defaults(&cc);
    bk_meta_ctrl_init(&f->c, &cc, 7);
    f->base = event_base_new();
    ck_assert_ptr_nonnull(f->base);
    f->pool = bk_net_worker_pool_new(f->base, 2, queue_max);
    ck_assert_ptr_nonnull(f->pool);
    /* one registered, unfenced broker: node 1 leads everything */
    pt_register_leader(&f->c, &f->img, f->m, commit_ctx, f);
    f->p = bk_repl_parts_new(&f->ld, 1);
    ck_assert_ptr_nonnull(f->p);
    ck_assert_int_eq(bk_repl_parts_set_pool(f->p, f->pool, NULL, f), KP_OK);
    bk_meta_log_set_pool(f->m, submit, f->pool);
    /* from here the test thread is the loop: a blocking call aborts */
    st_guard_reset();
    st_guard_set_fatal(true);
    st_guard_enter_loop();
}

static void fx_free(fx_t *f) {
    st_guard_leave_loop();   /* shutdown: the final close may block */
    if (f->pool) bk_net_worker_pool_free(f->pool, true);
    ck_assert_int_eq(bk_repl_parts_close_all(f->p, NULL, -1), KP_OK);
    ck_assert_int_eq(bk_meta_log_close(f->m, NULL), KP_OK);
    bk_meta_image_free(&f->img);
    event_base_free(f->base);
    st_logdir_free(&f->ld);
    st_logdir_free(&f->mld);
    tu_rmrf(f->dir);
    tu_rmrf(f->mdir);
    free(f->dir);
    free(f->mdir);
    ck_assert_uint_eq(st_guard_violations(), 0);
}

static size_t feed(fx_t *f) { return pt_feed(f->p, &f->img, cfg_of, f, trash_collect); }

static void create_topic(fx_t *f, const char *name, int32_t parts) {
    bk_meta_recs_t recs;
    pt_create_recs(&f->c, &f->img, name, parts, &recs);
    commit(f, &recs);
    ck_assert_uint_eq(feed(f), 0);
}

/* direct: applied to the image without the committer, so no loop turn
 * delivers completions in between (a job stays "in flight") */
static void delete_topic_at(fx_t *f, const char *name, bool direct) {
    bk_meta_recs_t recs;
    pt_delete_recs(&f->c, &f->img, name, &recs);
    if (direct) {
        ck_assert_int_eq(bk_meta_recs_apply(&recs, &f->img, f->img.last_offset + 1), KP_OK);
        bk_meta_recs_free(&recs);
    } else {
        commit(f, &recs);
    }
    ck_assert_uint_eq(feed(f), 0);
}
static void delete_topic(fx_t *f, const char *name) { delete_topic_at(f, name, false); }

static void create_topic_direct(fx_t *f, const char *name, int32_t parts) {
    bk_meta_recs_t recs;
    pt_create_recs(&f->c, &f->img, name, parts, &recs);
    ck_assert_int_eq(bk_meta_recs_apply(&recs, &f->img, f->img.last_offset + 1), KP_OK);
    bk_meta_recs_free(&recs);
    ck_assert_uint_eq(feed(f), 0);
}

static bk_repl_part_t *part(fx_t *f, const char *topic, int32_t i) {
    const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&f->img, topic);
    ck_assert_ptr_nonnull(t);
    bk_repl_part_t *x = bk_repl_parts_get(f->p, &t->id, i);
    ck_assert(x && x->log);
    return x;
}

/* Appends n batches of 2 records with timestamps ts.. on the loop. */
static void append(bk_repl_part_t *x, int n, int64_t ts) {
    uint8_t buf[4096];
    for (int i = 0; i < n; i++) {
        size_t len = tu_batch(buf, sizeof buf, 2, ts + i, (uint32_t)i, 20);
        st_append_info_t info;
        ck_assert_int_eq(st_log_append(x->log, buf, len, 0, 0, &info), KP_OK);
    }
}

/* Runs the loop until no file work is pending (bounded: 10 s). */
static void settle(fx_t *f) {
    for (int i = 0; i < 1000 && (bk_repl_parts_io_pending(f->p) > 0 || bk_meta_log_pending(f->m) > 0); i++) {
        struct timeval tv = { 0, 10000 };
        event_base_loopexit(f->base, &tv);
        event_base_dispatch(f->base);
    }
    ck_assert_uint_eq(bk_repl_parts_io_pending(f->p), 0);
    ck_assert_uint_eq(bk_meta_log_pending(f->m), 0);
}

static bool dir_exists(fx_t *f, const char *name) { return pt_exists(f->dir, name); }

/* ---- flush -------------------------------------------------------------------- */

/* flush.messages=1: one fsync job per log in flight; appends meanwhile
 * start no second one, but its completion starts the next; the recovery
 * point moves only in completions (on the loop). */
START_TEST(test_flush_on_pool_one_in_flight) {
    fx_t f;
    fx_init(&f, 64);
    f.lc.flush_messages = 1;
    create_topic(&f, "a", 1);
    bk_repl_part_t *x = part(&f, "a", 0);
    append(x, 1, 100);
    bk_repl_parts_flush_maybe(f.p, x, 0);
    bk_repl_parts_io_stats_t st;
    bk_repl_parts_io_stats(f.p, &st);
    ck_assert_uint_eq(st.flushes_started, 1);
    ck_assert_int_eq(st_log_recovery_point(x->log), 0);   /* nothing changes before the completion */
    for (int i = 0; i < 5; i++) {
        append(x, 1, 100);
        bk_repl_parts_flush_maybe(f.p, x, 0);
    }
    bk_repl_parts_io_stats(f.p, &st);
    ck_assert_uint_eq(st.flushes_started, 1);              /* coalesced */
    settle(&f);
    x = part(&f, "a", 0);
    bk_repl_parts_io_stats(f.p, &st);
    ck_assert_uint_eq(st.flushes_started, 2);              /* the completion started the next */
    ck_assert_uint_eq(st.flushes_done, 2);
    ck_assert_int_eq(st_log_recovery_point(x->log), 12);
    ck_assert(!st_log_flush_due(x->log, 0));
    fx_free(&f);
}
END_TEST

/* Deleted while its fsync runs: the completion does not find the log
 * (orphaned), the directory is renamed on the pool and handed over. A
 * re-creation under the same name is a different log (its gen). */
START_TEST(test_flush_log_deleted_or_recreated_meanwhile) {
    fx_t f;
    fx_init(&f, 64);
    f.lc.flush_messages = 1;
    create_topic(&f, "d", 2);
    bk_repl_part_t *x = part(&f, "d", 0);
    append(x, 3, 100);
    bk_repl_parts_flush_maybe(f.p, x, 0);
    x = part(&f, "d", 1);
    append(x, 3, 100);
    bk_repl_parts_flush_maybe(f.p, x, 0);
    delete_topic_at(&f, "d", true);           /* both fsyncs still in flight */
    ck_assert_uint_eq(bk_repl_parts_count(f.p), 0);
    create_topic_direct(&f, "d", 1);           /* same name, queued behind the deletion */
    settle(&f);
    bk_repl_parts_io_stats_t st;
    bk_repl_parts_io_stats(f.p, &st);
    ck_assert_uint_eq(st.flushes_started, 2);
    ck_assert_uint_eq(st.flushes_orphaned, 2);
    ck_assert_uint_eq(st.flushes_done, 0);
    ck_assert_uint_eq(f.trashed, 2);
    x = part(&f, "d", 0);
    ck_assert_int_eq(st_log_end_offset(x->log), 0);   /* a fresh log, not the old data */
    ck_assert_int_eq(st_log_recovery_point(x->log), 0);
    ck_assert(dir_exists(&f, "d-0"));
    ck_assert(!dir_exists(&f, "d-1"));
    fx_free(&f);
}
END_TEST

/* A full pool refuses the job: nothing blocks, nothing is lost, the flush
 * stays due and the next call starts it. */
START_TEST(test_flush_refused_stays_due) {
    fx_t f;
    fx_init(&f, 1);
    f.lc.flush_messages = 1;
    create_topic(&f, "r", 1);
    bk_repl_part_t *x = part(&f, "r", 0);
    gate_t g = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
    ck_assert_int_eq(bk_net_worker_submit(f.pool, gate_job, gate_done, &g), BK_NET_OK);
    append(x, 2, 100);
    bk_repl_parts_flush_maybe(f.p, x, 0);
    bk_repl_parts_io_stats_t st;
    bk_repl_parts_io_stats(f.p, &st);
    ck_assert_uint_eq(st.flushes_skipped, 1);
    ck_assert(st_log_flush_due(x->log, 0));
    ck_assert_int_eq(st_log_recovery_point(x->log), 0);
    gate_open(&g);
    bk_net_worker_stats_t ws;
    bk_net_worker_stats(f.pool, &ws);
    for (int i = 0; i < 1000 && ws.outstanding > 0; i++) {   /* the gate job's completion */
        event_base_loop(f.base, EVLOOP_ONCE);
        bk_net_worker_stats(f.pool, &ws);
    }
    ck_assert_uint_eq(ws.outstanding, 0);
    x = part(&f, "r", 0);
    bk_repl_parts_flush_maybe(f.p, x, 0);
    settle(&f);
    x = part(&f, "r", 0);
    ck_assert_int_eq(st_log_recovery_point(x->log), 4);
    fx_free(&f);
}
END_TEST

/* ---- the timer: retention and flush.ms ------------------------------------------ */

/* Retention from bk_repl_parts_tick: the segments leave the log at once, their
 * files are renamed and unlinked on the pool; flush.ms fsyncs there too. */
START_TEST(test_tick_retention_and_flush_ms_on_pool) {
    fx_t f;
    fx_init(&f, 64);
    f.lc.retention_ms = 1000;
    f.lc.flush_ms = 500;
    f.lc.segment_bytes = 1024;
    create_topic(&f, "t", 3);
    for (int32_t i = 0; i < 3; i++) append(part(&f, "t", i), 80, 100);
    bk_repl_part_t *x = part(&f, "t", 1);
    size_t before = st_log_segment_count(x->log);
    ck_assert_int_gt(before, 3);
    char pdir[600];
    snprintf(pdir, sizeof pdir, "%s/t-1", f.dir);
    ck_assert_int_eq(tu_count_suffix(pdir, ".log"), (int)before);
    bk_repl_parts_tick(f.p, 100000);
    x = part(&f, "t", 1);
    ck_assert_int_eq(st_log_segment_count(x->log), 1);          /* at once, in memory */
    ck_assert_int_eq(st_log_start_offset(x->log), st_log_active_base_offset(x->log));
    settle(&f);
    ck_assert_int_eq(tu_count_suffix(pdir, ".log"), 1);              /* by the pool */
    ck_assert_int_eq(tu_count_suffix(pdir, ".deleted"), 0);
    bk_repl_parts_io_stats_t st;
    bk_repl_parts_io_stats(f.p, &st);
    ck_assert_uint_eq(st.segments_dropped, 3 * (before - 1));
    ck_assert_uint_eq(st.flushes_done, 3);                       /* flush.ms: one job for the three */
    for (int32_t i = 0; i < 3; i++) {
        x = part(&f, "t", i);
        ck_assert_int_eq(st_log_recovery_point(x->log), st_log_end_offset(x->log));
    }
    fx_free(&f);
}
END_TEST

/* DeleteRecords on a partition log moves only the start; the timer takes
 * the segments below it (whatever the cleanup policy). */
START_TEST(test_delete_records_removed_by_tick) {
    fx_t f;
    fx_init(&f, 64);
    f.lc.cleanup_policy = ST_CLEANUP_COMPACT;
    create_topic(&f, "c", 1);
    bk_repl_part_t *x = part(&f, "c", 0);
    append(x, 80, 100);
    size_t before = st_log_segment_count(x->log);
    int64_t leo = st_log_end_offset(x->log);
    ck_assert_int_eq(st_log_advance_start(x->log, leo - 1), KP_OK);   /* on the loop: no violation */
    ck_assert_uint_eq(st_log_segment_count(x->log), before);
    bk_repl_parts_tick(f.p, 0);
    settle(&f);
    x = part(&f, "c", 0);
    ck_assert_int_eq(st_log_segment_count(x->log), 1);
    char pdir[600];
    snprintf(pdir, sizeof pdir, "%s/c-0", f.dir);
    ck_assert_int_eq(tu_count_suffix(pdir, ".log"), 1);
    fx_free(&f);
}
END_TEST

/* ---- checkpoints and deletion ------------------------------------------------------ */

START_TEST(test_checkpoint_on_pool) {
    fx_t f;
    fx_init(&f, 64);
    create_topic(&f, "k", 2);
    append(part(&f, "k", 1), 5, 100);
    st_logdir_entry_t extra = { "__cluster_metadata", 0, { 0, 3, 3, 3, 0 } };
    bk_repl_parts_checkpoint_async(f.p, &extra, 0);
    bk_repl_parts_checkpoint_async(f.p, &extra, 0);   /* one in flight: skipped */
    settle(&f);
    bk_repl_parts_io_stats_t st;
    bk_repl_parts_io_stats(f.p, &st);
    ck_assert_uint_eq(st.checkpoints_written, 1);
    ck_assert_uint_eq(st.checkpoints_skipped, 1);
    char path[600], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/replication-offset-checkpoint", f.dir);
    st_guard_leave_loop();   /* the test reads the file */
    ck_assert_int_eq(st_read_small_file(path, 1 << 20, &text, &len), KP_OK);
    st_guard_enter_loop();
    ck_assert_ptr_nonnull(strstr(text, "k 0 0"));
    ck_assert_ptr_nonnull(strstr(text, "k 1 "));
    ck_assert_ptr_nonnull(strstr(text, "__cluster_metadata 0 3"));
    free(text);
    fx_free(&f);
}
END_TEST

/* The final close runs on several threads (200 logs: 8 helpers and the
 * caller); every log is closed once, with its own final offsets in the
 * checkpoints (recovery point = its LEO after the flush). */
START_TEST(test_close_all_parallel) {
    fx_t f;
    fx_init(&f, 64);
    enum { N = 200 };
    create_topic(&f, "many", N);
    settle(&f);   /* a large apply opens its logs on the pool */
    for (int i = 0; i < N; i++) append(part(&f, "many", i), i % 7 + 1, 100);
    st_guard_leave_loop();
    bk_net_worker_pool_free(f.pool, true);
    f.pool = NULL;
    ck_assert_int_eq(bk_repl_parts_close_all(f.p, NULL, -1), KP_OK);
    f.p = NULL;
    char path[600], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/recovery-point-offset-checkpoint", f.dir);
    ck_assert_int_eq(st_read_small_file(path, 1 << 20, &text, &len), KP_OK);
    for (int i = 0; i < N; i++) {
        char line[64];
        snprintf(line, sizeof line, "\nmany %d %d\n", i, 2 * (i % 7 + 1));
        ck_assert_msg(strstr(text, line) != NULL, "no line 'many %d %d'", i, 2 * (i % 7 + 1));
    }
    free(text);
    fx_free(&f);
}
END_TEST

/* A deletion never renames on the loop, also with a small apply. */
START_TEST(test_delete_renames_on_pool) {
    fx_t f;
    fx_init(&f, 64);
    create_topic(&f, "x", 3);        /* small: opened on the loop (allowed) */
    create_topic(&f, "keep", 1);
    append(part(&f, "x", 2), 3, 100);
    delete_topic(&f, "x");
    ck_assert_uint_eq(bk_repl_parts_count(f.p), 1);
    settle(&f);
    ck_assert_uint_eq(f.trashed, 3);
    ck_assert(!dir_exists(&f, "x-0"));
    ck_assert(!dir_exists(&f, "x-2"));
    ck_assert(dir_exists(&f, "keep-0"));
    fx_free(&f);
}
END_TEST

/* Without a trash callback a deleted partition is removed whole, on the
 * pool too. */
START_TEST(test_delete_without_trash_fn_on_pool) {
    fx_t f;
    fx_init(&f, 64);
    create_topic(&f, "y", 2);
    append(part(&f, "y", 1), 3, 100);
    bk_meta_ctrl_delete_topic_t del = { "y", { { 0 } } };
    bk_meta_ctrl_delete_result_t dres;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_delete_topics(&f.c, &f.img, &del, 1, &recs, &dres);
    ck_assert_int_eq(dres.error, 0);
    commit(&f, &recs);
    size_t max = bk_meta_image_pending_changes(&f.img);
    bk_meta_change_t *ch = calloc(max + 1, sizeof *ch);
    size_t n = bk_meta_image_take_changes(&f.img, ch, max);
    ck_assert_uint_eq(bk_repl_parts_apply(f.p, &f.img, ch, n, cfg_of, &f, NULL, 0), 0);
    free(ch);
    settle(&f);
    ck_assert_uint_eq(f.trashed, 0);
    ck_assert(!dir_exists(&f, "y-0"));
    ck_assert(!dir_exists(&f, "y-1"));
    DIR *d = opendir(f.dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) ck_assert_msg(strncmp(e->d_name, "y-", 2) != 0, "left: %s", e->d_name);
    closedir(d);
    fx_free(&f);
}
END_TEST

/* ---- the metadata committer -------------------------------------------------------- */

/* With a pool: appended at once, committed (applied, answered) in the
 * fsync's completion, in order; decisions meanwhile see the pending ones
 * through the decision image. */
START_TEST(test_meta_log_commits_in_completion) {
    fx_t f;
    fx_init(&f, 64);
    int64_t applied = f.img.last_offset;
    bk_meta_ctrl_create_topic_t t1 = { "m1", 1, 1, NULL, 0, NULL, 0 };
    bk_meta_ctrl_create_result_t res;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_create_topics(&f.c, bk_meta_log_decision_image(f.m), &t1, 1, false, &recs, &res);
    ck_assert_int_eq(res.error, 0);
    done_t d1 = { 0, -99, -1 }, d2 = { 0, -99, -1 };
    bk_meta_log_propose(f.m, &recs, 0, on_done, &d1);
    bk_meta_recs_free(&recs);
    ck_assert_int_eq(d1.calls, 0);                       /* not before its fsync */
    ck_assert_int_eq(f.img.last_offset, applied);        /* nothing applied yet */
    ck_assert_ptr_null(bk_meta_image_topic_by_name(&f.img, "m1"));
    ck_assert_uint_eq(bk_meta_log_pending(f.m), 1);
    /* a second decision sees m1: creating it again is refused, m2 is not */
    const bk_meta_image_t *dimg = bk_meta_log_decision_image(f.m);
    ck_assert_ptr_ne(dimg, &f.img);
    ck_assert_ptr_nonnull(bk_meta_image_topic_by_name(dimg, "m1"));
    bk_meta_ctrl_create_topic_t t2[2] = { { "m1", 1, 1, NULL, 0, NULL, 0 }, { "m2", 1, 1, NULL, 0, NULL, 0 } };
    bk_meta_ctrl_create_result_t res2[2];
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_create_topics(&f.c, dimg, t2, 2, false, &recs, res2);
    ck_assert_int_ne(res2[0].error, 0);
    ck_assert_int_eq(res2[1].error, 0);
    bk_meta_log_propose(f.m, &recs, 0, on_done, &d2);
    bk_meta_recs_free(&recs);
    ck_assert_uint_eq(bk_meta_log_pending(f.m), 2);
    settle(&f);
    ck_assert_int_eq(d1.calls, 1);
    ck_assert_int_eq(d1.status, KP_OK);
    ck_assert_int_eq(d2.calls, 1);
    ck_assert_int_eq(d2.status, KP_OK);
    ck_assert_int_gt(d2.first, d1.first);
    ck_assert_ptr_nonnull(bk_meta_image_topic_by_name(&f.img, "m1"));
    ck_assert_ptr_nonnull(bk_meta_image_topic_by_name(&f.img, "m2"));
    ck_assert_ptr_eq(bk_meta_log_decision_image(f.m), &f.img);   /* nothing pending: the image itself */
    st_log_offsets_t o;
    bk_meta_log_offsets(f.m, &o);
    ck_assert_int_eq(o.recovery_point, o.log_end_offset);
    ck_assert_int_eq(o.high_watermark, o.log_end_offset);
    fx_free(&f);
}
END_TEST

/* A full pool: the commit's fsync runs on the loop (documented exception,
 * inside an allow scope: no violation) and the commit still completes. */
START_TEST(test_meta_log_refused_job_commits_inline) {
    fx_t f;
    fx_init(&f, 1);
    gate_t g = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
    ck_assert_int_eq(bk_net_worker_submit(f.pool, gate_job, gate_done, &g), BK_NET_OK);
    bk_meta_ctrl_create_topic_t t1 = { "q", 1, 1, NULL, 0, NULL, 0 };
    bk_meta_ctrl_create_result_t res;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_create_topics(&f.c, bk_meta_log_decision_image(f.m), &t1, 1, false, &recs, &res);
    done_t d = { 0, -99, -1 };
    bk_meta_log_propose(f.m, &recs, 0, on_done, &d);
    bk_meta_recs_free(&recs);
    ck_assert_int_eq(d.calls, 1);
    ck_assert_int_eq(d.status, KP_OK);
    ck_assert_ptr_nonnull(bk_meta_image_topic_by_name(&f.img, "q"));
    gate_open(&g);
    fx_free(&f);
}
END_TEST

int main(void) {
    Suite *s = suite_create("parts_io");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_flush_on_pool_one_in_flight);
    tcase_add_test(tc, test_flush_log_deleted_or_recreated_meanwhile);
    tcase_add_test(tc, test_flush_refused_stays_due);
    tcase_add_test(tc, test_tick_retention_and_flush_ms_on_pool);
    tcase_add_test(tc, test_delete_records_removed_by_tick);
    tcase_add_test(tc, test_checkpoint_on_pool);
    tcase_add_test(tc, test_close_all_parallel);
    tcase_add_test(tc, test_delete_renames_on_pool);
    tcase_add_test(tc, test_delete_without_trash_fn_on_pool);
    tcase_add_test(tc, test_meta_log_commits_in_completion);
    tcase_add_test(tc, test_meta_log_refused_job_commits_inline);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
