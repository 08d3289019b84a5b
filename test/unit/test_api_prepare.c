/* Unit tests for broker/api/prepare.c's lifetime: a prepared result made on
 * one thread (a network loop) and freed on another (the state loop), also
 * after bk_api_prepare_fini (a net freed after its node's api). The pool
 * the result came from must outlive fini until its last result returns:
 * freeing into a destroyed pool was a use after free (the ASan build of
 * this test reports it without the per-pool reference count). */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kp_msgs.h"
#include "broker/api/prepare.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_header.h"

typedef struct {
    uint8_t *bytes;   /* the frame after its size prefix */
    size_t len;
} frame_t;

/* One Produce v9 frame of one batch of 3 records for partition 0 of "t". */
static frame_t produce_frame(int32_t corr) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)1 << 20);
    kp_batch_opts_t o = kp_batch_opts_default();
    kp_batch_builder_t bb;
    kp_batch_builder_init(&bb, &o);
    for (int i = 0; i < 3; i++) {
        kp_record_in_t r = { .timestamp = 1000 + i, .value = { (const uint8_t *)"value", 5 } };
        ck_assert_int_eq(kp_batch_builder_add(&bb, &r), KP_OK);
    }
    const uint8_t *batch;
    size_t blen;
    ck_assert_int_eq(kp_batch_builder_finish(&bb, &a, &batch, &blen), KP_OK);
    kp_batch_builder_free(&bb);
    kp_produce_request_partition_produce_data_t pd;
    kp_produce_request_partition_produce_data_init(&pd);
    pd.index = 0;
    pd.records.bytes = (kp_bytes_t){ batch, blen };
    kp_produce_request_topic_produce_data_t td;
    kp_produce_request_topic_produce_data_init(&td);
    td.name = kp_slice_cstr("t");
    td.partition_data.items = &pd;
    td.partition_data.count = 1;
    kp_produce_request_t q;
    kp_produce_request_init(&q);
    q.acks = 1;
    q.timeout_ms = 30000;
    q.topic_data.items = &td;
    q.topic_data.count = 1;
    kp_request_header_t h = { .api_key = KP_API_PRODUCE, .api_version = 9, .correlation_id = corr,
                              .client_id = kp_slice_cstr("test") };
    kp_wr_t w;
    kp_wr_init_count(&w);
    ck_assert_int_eq(kp_request_encode(&w, &h, &q), KP_OK);
    size_t n = w.pos;
    uint8_t *out = malloc(n);
    ck_assert_ptr_nonnull(out);
    kp_wr_init(&w, out, n);
    ck_assert_int_eq(kp_request_encode(&w, &h, &q), KP_OK);
    kp_arena_free(&a);
    frame_t f = { malloc(n - 4), n - 4 };
    ck_assert_ptr_nonnull(f.bytes);
    memcpy(f.bytes, out + 4, n - 4);
    free(out);
    return f;
}

typedef struct {
    frame_t f;
    void *results[4];
    int n;
} made_t;

/* A network loop's thread: prepares the frame n times, keeps the results. */
static void *maker(void *arg) {
    made_t *m = arg;
    for (int i = 0; i < m->n; i++) m->results[i] = bk_api_prepare_frame(m->f.bytes, m->f.len, NULL);
    return NULL;
}

static void make_on_thread(made_t *m) {
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, maker, m), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    for (int i = 0; i < m->n; i++) ck_assert_ptr_nonnull(m->results[i]);
}

START_TEST(test_result_freed_after_fini_frees_its_pool) {
    uint64_t pools0 = bk_api_prepare_stats().pools;
    bk_api_prepare_init();
    made_t m = { .f = produce_frame(7), .n = 3 };
    make_on_thread(&m);
    ck_assert_uint_eq(bk_api_prepare_stats().pools, pools0 + 1);
    /* one returned before fini, on this (another) thread */
    bk_api_prepared_free(m.results[0]);
    bk_api_prepare_fini();
    /* two still out: their pool stays */
    ck_assert_uint_eq(bk_api_prepare_stats().pools, pools0 + 1);
    bk_api_prepared_free(m.results[1]);
    ck_assert_uint_eq(bk_api_prepare_stats().pools, pools0 + 1);
    bk_api_prepared_free(m.results[2]);   /* the last: the pool goes with it */
    ck_assert_uint_eq(bk_api_prepare_stats().pools, pools0);
    free(m.f.bytes);
}
END_TEST

START_TEST(test_fini_without_results_out_frees_pools) {
    uint64_t pools0 = bk_api_prepare_stats().pools;
    bk_api_prepare_init();
    made_t m = { .f = produce_frame(8), .n = 2 };
    make_on_thread(&m);
    bk_api_prepared_free(m.results[0]);
    bk_api_prepared_free(m.results[1]);
    ck_assert_uint_eq(bk_api_prepare_stats().pools, pools0 + 1);
    bk_api_prepare_fini();
    ck_assert_uint_eq(bk_api_prepare_stats().pools, pools0);
    /* a new generation makes a new pool on the same thread */
    bk_api_prepare_init();
    void *r = bk_api_prepare_frame(m.f.bytes, m.f.len, NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(bk_api_prepare_stats().pools, pools0 + 1);
    bk_api_prepare_fini();
    ck_assert_uint_eq(bk_api_prepare_stats().pools, pools0 + 1);
    bk_api_prepared_free(r);      /* its own thread's old pool, after fini */
    ck_assert_uint_eq(bk_api_prepare_stats().pools, pools0);
    free(m.f.bytes);
}
END_TEST

/* Several nodes in one process: the pools go with the last fini only. */
START_TEST(test_counted_init_fini) {
    uint64_t pools0 = bk_api_prepare_stats().pools;
    bk_api_prepare_init();
    bk_api_prepare_init();
    made_t m = { .f = produce_frame(9), .n = 1 };
    make_on_thread(&m);
    bk_api_prepare_fini();
    bk_api_prepared_free(m.results[0]);
    ck_assert_uint_eq(bk_api_prepare_stats().pools, pools0 + 1);
    bk_api_prepare_fini();
    ck_assert_uint_eq(bk_api_prepare_stats().pools, pools0);
    free(m.f.bytes);
}
END_TEST

static Suite *prepare_suite(void) {
    Suite *s = suite_create("api_prepare");
    TCase *tc = tcase_create("lifetime");
    tcase_add_test(tc, test_result_freed_after_fini_frees_its_pool);
    tcase_add_test(tc, test_fini_without_results_out_frees_pools);
    tcase_add_test(tc, test_counted_init_fini);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(prepare_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
