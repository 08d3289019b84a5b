/* Unit tests for broker/worker.c: jobs run off the loop thread, done
 * callbacks run on it, the queue bound holds, and shutdown drains or cancels
 * with exactly one done call per accepted job. The test thread is the loop
 * thread here: it dispatches the base itself. */
#include <check.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/net/worker.h"

typedef struct {
    int id;
    int sleep_ms;
    int ret;
    pthread_t ran_on;
    atomic_bool started;
    atomic_bool ran;
    int done_calls;
    int done_status;
    pthread_t done_on;
    int done_order;
    atomic_bool *gate; /* job waits while *gate is false */
} job_arg_t;

static int done_seq;

static void sleep_ms(int ms) {
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static int job(void *p) {
    job_arg_t *a = p;
    a->ran_on = pthread_self();
    atomic_store(&a->started, true);
    if (a->gate)
        while (!atomic_load(a->gate)) sleep_ms(1);
    if (a->sleep_ms) sleep_ms(a->sleep_ms);
    atomic_store(&a->ran, true);
    return a->ret;
}

static void done(void *p, int status) {
    job_arg_t *a = p;
    a->done_calls++;
    a->done_status = status;
    a->done_on = pthread_self();
    a->done_order = done_seq++;
}

/* Dispatch the loop until `pred` holds or 5 s pass. */
static bool run_until(struct event_base *base, bool (*pred)(void *), void *arg) {
    for (int i = 0; i < 5000; i++) {
        if (pred(arg)) return true;
        struct timeval tv = { 0, 1000 };
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
    }
    return pred(arg);
}

typedef struct {
    job_arg_t *args;
    int n;
} set_t;

static bool all_done(void *p) {
    set_t *s = p;
    for (int i = 0; i < s->n; i++)
        if (s->args[i].done_calls == 0) return false;
    return true;
}

START_TEST(test_jobs_off_loop_done_on_loop) {
    struct event_base *base = event_base_new();
    bk_net_worker_pool_t *pool = bk_net_worker_pool_new(base, 2, 16);
    ck_assert_ptr_nonnull(pool);
    job_arg_t a[8];
    memset(a, 0, sizeof a);
    for (int i = 0; i < 8; i++) {
        a[i].id = i;
        a[i].ret = 100 + i;
        a[i].sleep_ms = 5;
        ck_assert_int_eq(bk_net_worker_submit(pool, job, done, &a[i]), BK_NET_OK);
    }
    set_t s = { a, 8 };
    ck_assert(run_until(base, all_done, &s));
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(a[i].done_calls, 1);
        ck_assert_int_eq(a[i].done_status, 100 + i);
        ck_assert(!pthread_equal(a[i].ran_on, pthread_self()));
        ck_assert(pthread_equal(a[i].done_on, pthread_self()));
    }
    bk_net_worker_stats_t st;
    bk_net_worker_stats(pool, &st);
    ck_assert_uint_eq(st.submitted, 8);
    ck_assert_uint_eq(st.completed, 8);
    ck_assert_uint_eq(st.outstanding, 0);
    bk_net_worker_pool_free(pool, true);
    for (int i = 0; i < 8; i++) ck_assert_int_eq(a[i].done_calls, 1); /* not again */
    event_base_free(base);
}
END_TEST

START_TEST(test_done_not_called_without_loop) {
    /* results wait for the loop: nothing runs done behind its back */
    struct event_base *base = event_base_new();
    bk_net_worker_pool_t *pool = bk_net_worker_pool_new(base, 1, 4);
    job_arg_t a;
    memset(&a, 0, sizeof a);
    ck_assert_int_eq(bk_net_worker_submit(pool, job, done, &a), BK_NET_OK);
    for (int i = 0; i < 1000 && !atomic_load(&a.ran); i++) sleep_ms(1);
    ck_assert(atomic_load(&a.ran));
    sleep_ms(10);
    ck_assert_int_eq(a.done_calls, 0);
    set_t s = { &a, 1 };
    ck_assert(run_until(base, all_done, &s));
    ck_assert_int_eq(a.done_calls, 1);
    bk_net_worker_pool_free(pool, false);
    event_base_free(base);
}
END_TEST

START_TEST(test_queue_bound_rejects) {
    struct event_base *base = event_base_new();
    bk_net_worker_pool_t *pool = bk_net_worker_pool_new(base, 1, 4);
    atomic_bool gate = false;
    job_arg_t a[6];
    memset(a, 0, sizeof a);
    for (int i = 0; i < 6; i++) a[i].gate = &gate;
    for (int i = 0; i < 4; i++) ck_assert_int_eq(bk_net_worker_submit(pool, job, done, &a[i]), BK_NET_OK);
    ck_assert_int_eq(bk_net_worker_submit(pool, job, done, &a[4]), BK_NET_ERR_FULL);
    bk_net_worker_stats_t st;
    bk_net_worker_stats(pool, &st);
    ck_assert_uint_eq(st.rejected, 1);
    ck_assert_uint_eq(st.outstanding, 4);
    atomic_store(&gate, true);
    set_t s = { a, 4 };
    ck_assert(run_until(base, all_done, &s));
    ck_assert_int_eq(a[4].done_calls, 0); /* rejected: never called */
    /* room again */
    ck_assert_int_eq(bk_net_worker_submit(pool, job, done, &a[5]), BK_NET_OK);
    set_t s5 = { &a[5], 1 };
    ck_assert(run_until(base, all_done, &s5));
    bk_net_worker_pool_free(pool, false);
    ck_assert_int_eq(a[4].done_calls, 0);
    event_base_free(base);
}
END_TEST

/* The bound counts jobs whose done has not run yet, not only queued ones:
 * finished results waiting for the loop still hold their place. */
START_TEST(test_bound_includes_undelivered_results) {
    struct event_base *base = event_base_new();
    bk_net_worker_pool_t *pool = bk_net_worker_pool_new(base, 2, 2);
    job_arg_t a[3];
    memset(a, 0, sizeof a);
    ck_assert_int_eq(bk_net_worker_submit(pool, job, done, &a[0]), BK_NET_OK);
    ck_assert_int_eq(bk_net_worker_submit(pool, job, done, &a[1]), BK_NET_OK);
    for (int i = 0; i < 1000 && !(atomic_load(&a[0].ran) && atomic_load(&a[1].ran)); i++) sleep_ms(1);
    ck_assert_int_eq(bk_net_worker_submit(pool, job, done, &a[2]), BK_NET_ERR_FULL);
    set_t s = { a, 2 };
    ck_assert(run_until(base, all_done, &s));
    ck_assert_int_eq(bk_net_worker_submit(pool, job, done, &a[2]), BK_NET_OK);
    bk_net_worker_pool_free(pool, true);
    ck_assert_int_eq(a[2].done_calls, 1);
    ck_assert(atomic_load(&a[2].ran));
    event_base_free(base);
}
END_TEST

START_TEST(test_shutdown_cancels_queued) {
    struct event_base *base = event_base_new();
    bk_net_worker_pool_t *pool = bk_net_worker_pool_new(base, 1, 8);
    job_arg_t a[6];
    memset(a, 0, sizeof a);
    a[0].sleep_ms = 100;
    a[0].ret = 5;
    for (int i = 0; i < 6; i++) ck_assert_int_eq(bk_net_worker_submit(pool, job, done, &a[i]), BK_NET_OK);
    for (int i = 0; i < 1000 && !atomic_load(&a[0].started); i++) sleep_ms(1); /* job 0 has started */
    sleep_ms(5);
    bk_net_worker_pool_free(pool, false);
    /* job 0 was running: it finishes; the others never start */
    ck_assert_int_eq(a[0].done_calls, 1);
    ck_assert_int_eq(a[0].done_status, 5);
    for (int i = 1; i < 6; i++) {
        ck_assert_int_eq(a[i].done_calls, 1);
        ck_assert_int_eq(a[i].done_status, BK_NET_ERR_CANCELLED);
        ck_assert(!atomic_load(&a[i].ran));
        ck_assert(pthread_equal(a[i].done_on, pthread_self()));
    }
    event_base_free(base);
}
END_TEST

START_TEST(test_shutdown_drains_in_order) {
    struct event_base *base = event_base_new();
    bk_net_worker_pool_t *pool = bk_net_worker_pool_new(base, 1, 8);
    job_arg_t a[8];
    memset(a, 0, sizeof a);
    done_seq = 0;
    for (int i = 0; i < 8; i++) {
        a[i].sleep_ms = 2;
        a[i].ret = i;
        ck_assert_int_eq(bk_net_worker_submit(pool, job, done, &a[i]), BK_NET_OK);
    }
    bk_net_worker_pool_free(pool, true);
    for (int i = 0; i < 8; i++) {
        ck_assert(atomic_load(&a[i].ran));
        ck_assert_int_eq(a[i].done_calls, 1);
        ck_assert_int_eq(a[i].done_status, i);
        ck_assert_int_eq(a[i].done_order, i); /* one thread: FIFO */
    }
    event_base_free(base);
}
END_TEST

/* Many jobs through a small queue, resubmitting from done callbacks. */
typedef struct {
    bk_net_worker_pool_t *pool;
    int remaining;
    int completed;
    long sum;
    long vals[2000];
} chain_t;

static chain_t chain;

static int square_job(void *p) {
    long *v = p;
    *v = *v * *v;
    return 0;
}

static void chain_done(void *p, int status) {
    ck_assert_int_eq(status, 0);
    chain.sum += *(long *)p;
    chain.completed++;
    if (chain.remaining > 0) {
        int i = --chain.remaining;
        chain.vals[i] = i;
        ck_assert_int_eq(bk_net_worker_submit(chain.pool, square_job, chain_done, &chain.vals[i]), BK_NET_OK);
    }
}

static bool chain_finished(void *p) { return chain.completed == 2000; }

START_TEST(test_many_jobs_resubmitted_from_done) {
    struct event_base *base = event_base_new();
    memset(&chain, 0, sizeof chain);
    chain.pool = bk_net_worker_pool_new(base, 2, 8);
    chain.remaining = 2000;
    for (int k = 0; k < 8; k++) {
        int i = --chain.remaining;
        chain.vals[i] = i;
        ck_assert_int_eq(bk_net_worker_submit(chain.pool, square_job, chain_done, &chain.vals[i]), BK_NET_OK);
    }
    ck_assert(run_until(base, chain_finished, NULL));
    long want = 0;
    for (long i = 0; i < 2000; i++) want += i * i;
    ck_assert_int_eq(chain.sum, want);
    bk_net_worker_pool_free(chain.pool, true);
    event_base_free(base);
}
END_TEST

START_TEST(test_bad_arguments) {
    struct event_base *base = event_base_new();
    ck_assert_ptr_null(bk_net_worker_pool_new(base, 0, 4));
    ck_assert_ptr_null(bk_net_worker_pool_new(base, BK_NET_WORKER_THREADS_MAX + 1, 4));
    ck_assert_ptr_null(bk_net_worker_pool_new(base, 1, 0));
    ck_assert_ptr_null(bk_net_worker_pool_new(base, 1, BK_NET_WORKER_QUEUE_MAX_LIMIT + 1));
    bk_net_worker_pool_free(NULL, true);
    bk_net_worker_pool_t *pool = bk_net_worker_pool_new(base, 1, 1);
    ck_assert_ptr_nonnull(pool);
    bk_net_worker_pool_free(pool, false); /* idle pool */
    event_base_free(base);
}
END_TEST

static Suite *worker_suite(void) {
    Suite *s = suite_create("worker");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_jobs_off_loop_done_on_loop);
    tcase_add_test(tc, test_done_not_called_without_loop);
    tcase_add_test(tc, test_queue_bound_rejects);
    tcase_add_test(tc, test_bound_includes_undelivered_results);
    tcase_add_test(tc, test_shutdown_cancels_queued);
    tcase_add_test(tc, test_shutdown_drains_in_order);
    tcase_add_test(tc, test_many_jobs_resubmitted_from_done);
    tcase_add_test(tc, test_bad_arguments);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(worker_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
