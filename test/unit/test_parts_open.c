/* test_parts_open.c — partition logs opened on the worker pool (parts_open.c
 * through bk_repl_parts_set_pool): slots exist at once with `opening` set and no
 * log, the logs arrive on the loop; a STOP (delete or plain) that comes while
 * the open runs is carried out when it finishes; a re-add cancels a pending
 * stop; a small apply (<= BK_REPL_PARTS_SYNC_OPENS new logs) opens on the loop;
 * a pool that refuses the job opens on the loop; a pool freed without
 * draining leaves the partitions offline, never half-open. */
#include <check.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "broker/meta/controller.h"
#include "broker/meta/meta_log.h"
#include "broker/replication/parts.h"
#include "broker/replication/parts_open.h"
#include "broker/net/worker.h"
#include "storage/st_log.h"
#include "test/unit/parts_test_util.h"
#include "test/unit/st_test_util.h"

typedef struct { int calls; int status; } done_t;
static void on_done(void *arg, int status, int64_t first) {
    (void)first;
    done_t *d = arg;
    d->calls++;
    d->status = status;
}

static void commit(bk_meta_log_t *m, bk_meta_recs_t *recs) {
    done_t d = { 0, -99 };
    bk_meta_log_propose(m, recs, 0, on_done, &d);
    ck_assert_int_eq(d.calls, 1);
    ck_assert_int_eq(d.status, KP_OK);
    bk_meta_recs_free(recs);
}

static void commit_ctx(void *m, bk_meta_recs_t *recs) { commit(m, recs); }

typedef struct {
    char *dir, *mdir;
    st_logdir_t ld, mld;
    bk_meta_image_t img;
    bk_meta_log_t *m;
    bk_meta_ctrl_t c;
    struct event_base *base;
    bk_net_worker_pool_t *pool;
    bk_repl_parts_t *p;
    int opened_calls;
    size_t trashed;
} fx_t;

static void small_cfg(void *ctx, const char *topic, st_log_config_t *out) {
    (void)ctx;
    (void)topic;
    st_log_config_default(out);
    out->index_max_bytes = 4096;
}
static void trash_collect(void *ctx, const char *path) {
    fx_t *f = ctx;
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);   /* renamed, not yet removed */
    f->trashed++;
}
static void opened(void *ctx) { ((fx_t *)ctx)->opened_calls++; }

static void fx_init(fx_t *f, uint32_t queue_max) {
    memset(f, 0, sizeof *f);
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
    /* one registered, unfenced broker: node 1 leads everything */
    pt_register_leader(&f->c, &f->img, f->m, commit_ctx, f->m);
    f->base = event_base_new();
    ck_assert_ptr_nonnull(f->base);
    f->pool = bk_net_worker_pool_new(f->base, 2, queue_max);
    ck_assert_ptr_nonnull(f->pool);
    f->p = bk_repl_parts_new(&f->ld, 1);
    ck_assert_ptr_nonnull(f->p);
    ck_assert_int_eq(bk_repl_parts_set_pool(f->p, f->pool, opened, f), KP_OK);
}

static void fx_free(fx_t *f) {
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
}

static void create_topic(fx_t *f, const char *name, int32_t parts) {
    bk_meta_recs_t recs;
    pt_create_recs(&f->c, &f->img, name, parts, &recs);
    commit(f->m, &recs);
}

static void delete_topic(fx_t *f, const char *name) {
    bk_meta_recs_t recs;
    pt_delete_recs(&f->c, &f->img, name, &recs);
    commit(f->m, &recs);
}

static size_t feed(fx_t *f) { return pt_feed(f->p, &f->img, small_cfg, f, trash_collect); }

typedef struct { size_t opening, with_log, total; } census_t;
static void census_one(bk_repl_part_t *p, void *ctx) {
    census_t *c = ctx;
    c->total++;
    if (p->opening) {
        ck_assert_ptr_null(p->log);   /* never a half-open log */
        c->opening++;
    }
    if (p->log) c->with_log++;
}
static census_t census(fx_t *f) {
    census_t c = { 0, 0, 0 };
    bk_repl_parts_each(f->p, census_one, &c);
    return c;
}

/* Runs the loop until no partition is opening and every queued close or
 * deletion is done (bounded: 10 s). */
static void settle(fx_t *f) {
    for (int i = 0; i < 1000 && (census(f).opening > 0 || bk_repl_parts_io_pending(f->p) > 0); i++) {
        struct timeval tv = { 0, 10000 };
        event_base_loopexit(f->base, &tv);
        event_base_dispatch(f->base);
    }
    ck_assert_uint_eq(census(f).opening, 0);
}

static bool dir_exists(fx_t *f, const char *name) { return pt_exists(f->dir, name); }

START_TEST(test_open_on_pool) {
    fx_t f;
    fx_init(&f, 64);
    create_topic(&f, "a", 150);   /* more than one batch */
    ck_assert_uint_eq(feed(&f), 0);
    census_t c = census(&f);
    ck_assert_uint_eq(c.total, 150);
    ck_assert_uint_gt(c.opening, 0);   /* nothing opened on the loop */
    settle(&f);
    c = census(&f);
    ck_assert_uint_eq(c.with_log, 150);
    ck_assert_int_ge(f.opened_calls, 3);   /* 150 / 64 batches */
    const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&f.img, "a");
    bk_repl_part_t *x = bk_repl_parts_get(f.p, &t->id, 149);
    ck_assert(x && x->leader && x->log);
    ck_assert_int_eq(st_log_high_watermark(x->log), st_log_end_offset(x->log));
    ck_assert(dir_exists(&f, "a-149"));
    fx_free(&f);
}
END_TEST

/* A small create keeps read-your-write: its logs exist when apply returns. */
START_TEST(test_small_apply_opens_on_loop) {
    fx_t f;
    fx_init(&f, 64);
    create_topic(&f, "s", BK_REPL_PARTS_SYNC_OPENS);
    ck_assert_uint_eq(feed(&f), 0);
    census_t c = census(&f);
    ck_assert_uint_eq(c.opening, 0);
    ck_assert_uint_eq(c.with_log, BK_REPL_PARTS_SYNC_OPENS);
    ck_assert_int_eq(f.opened_calls, 0);
    create_topic(&f, "t", BK_REPL_PARTS_SYNC_OPENS + 1);   /* one more: the pool */
    ck_assert_uint_eq(feed(&f), 0);
    ck_assert_uint_gt(census(&f).opening, 0);
    settle(&f);
    ck_assert_uint_eq(census(&f).with_log, 2 * BK_REPL_PARTS_SYNC_OPENS + 1);
    fx_free(&f);
}
END_TEST

START_TEST(test_delete_while_opening) {
    fx_t f;
    fx_init(&f, 64);
    create_topic(&f, "b", 100);
    create_topic(&f, "keep", 2);
    ck_assert_uint_eq(feed(&f), 0);
    ck_assert_uint_gt(census(&f).opening, 0);
    delete_topic(&f, "b");
    ck_assert_uint_eq(feed(&f), 0);
    settle(&f);
    census_t c = census(&f);
    ck_assert_uint_eq(c.total, 2);
    ck_assert_uint_eq(c.with_log, 2);
    /* every b partition opened before the STOP reached the manager was
     * renamed away; those never opened had no directory */
    ck_assert_uint_le(f.trashed, 100);
    for (int i = 0; i < 100; i++) {
        char name[32];
        snprintf(name, sizeof name, "b-%d", i);
        ck_assert_msg(!dir_exists(&f, name), "%s left under its name", name);
    }
    ck_assert(dir_exists(&f, "keep-1"));
    fx_free(&f);
}
END_TEST

/* Deleted and re-created under its name while its opens are queued: the
 * new small create queues behind them instead of opening beside them. */
START_TEST(test_recreate_while_opening) {
    fx_t f;
    fx_init(&f, 64);
    create_topic(&f, "r", 40);
    ck_assert_uint_eq(feed(&f), 0);
    ck_assert_uint_gt(census(&f).opening, 0);
    delete_topic(&f, "r");
    ck_assert_uint_eq(feed(&f), 0);
    create_topic(&f, "r", 1);
    ck_assert_uint_eq(feed(&f), 0);
    const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&f.img, "r");
    bk_repl_part_t *x = bk_repl_parts_get(f.p, &t->id, 0);
    ck_assert(x && x->opening && !x->log);   /* queued, not opened on the loop */
    settle(&f);
    x = bk_repl_parts_get(f.p, &t->id, 0);
    ck_assert(x && x->log);
    ck_assert_int_eq(st_log_end_offset(x->log), 0);
    census_t c = census(&f);
    ck_assert_uint_eq(c.total, 1);
    ck_assert(dir_exists(&f, "r-0"));
    ck_assert(!dir_exists(&f, "r-1"));
    fx_free(&f);
}
END_TEST

START_TEST(test_refused_job_opens_on_loop) {
    fx_t f;
    fx_init(&f, 1);
    gate_t g = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
    ck_assert_int_eq(bk_net_worker_submit(f.pool, gate_job, gate_done, &g), BK_NET_OK);
    create_topic(&f, "c", 70);
    ck_assert_uint_eq(feed(&f), 0);
    census_t c = census(&f);
    ck_assert_uint_eq(c.opening, 0);
    ck_assert_uint_eq(c.with_log, 70);
    ck_assert_int_ge(f.opened_calls, 2);
    gate_open(&g);
    fx_free(&f);
}
END_TEST

START_TEST(test_cancelled_leaves_offline) {
    fx_t f;
    fx_init(&f, 64);
    gate_t g = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
    /* two threads, both blocked: the open batch stays queued */
    ck_assert_int_eq(bk_net_worker_submit(f.pool, gate_job, gate_done, &g), BK_NET_OK);
    ck_assert_int_eq(bk_net_worker_submit(f.pool, gate_job, gate_done, &g), BK_NET_OK);
    create_topic(&f, "d", 40);
    ck_assert_uint_eq(feed(&f), 0);
    ck_assert_uint_eq(census(&f).opening, 40);
    gate_open(&g);
    bk_net_worker_pool_free(f.pool, false);   /* each batch may be cancelled or run */
    f.pool = NULL;
    census_t c = census(&f);
    ck_assert_uint_eq(c.opening, 0);
    ck_assert_uint_eq(c.total, 40);
    /* the 40 opens went out as BK_REPL_POPEN_JOBS_MAX equal batches: whole
     * batches open or stay offline, none is left half-way */
    ck_assert_uint_eq(c.with_log % (40 / BK_REPL_POPEN_JOBS_MAX), 0);
    fx_free(&f);
}
END_TEST

int main(void) {
    Suite *s = suite_create("parts_open");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_open_on_pool);
    tcase_add_test(tc, test_small_apply_opens_on_loop);
    tcase_add_test(tc, test_delete_while_opening);
    tcase_add_test(tc, test_recreate_while_opening);
    tcase_add_test(tc, test_refused_job_opens_on_loop);
    tcase_add_test(tc, test_cancelled_leaves_offline);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
