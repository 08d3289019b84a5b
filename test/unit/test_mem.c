/* test_mem.c — the block pool (broker/net/mem.c): class sizes and the whole
 * block usable; a freed block is handed out again without malloc; realloc
 * keeps bytes and blocks; blocks freed on another thread come back through
 * the depot (also those in an exited thread's cache); the depot's bound
 * holds when far more blocks are freed than it keeps; big requests are
 * unpooled; libevent's buffers run on the pool once installed and reuse
 * its blocks; a double free or a foreign pointer aborts. */
#include <check.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/net/mem.h"

static bk_net_mem_stats_t stats(void) {
    bk_net_mem_stats_t s;
    bk_net_mem_stats(&s);
    return s;
}

START_TEST(test_classes_and_whole_block) {
    ck_assert_uint_eq(bk_net_mem_block_bytes(0), BK_NET_MEM_MIN_BYTES);
    ck_assert_uint_eq(bk_net_mem_block_bytes(1), 64);
    ck_assert_uint_eq(bk_net_mem_block_bytes(64), 64);
    ck_assert_uint_eq(bk_net_mem_block_bytes(65), 128);
    ck_assert_uint_eq(bk_net_mem_block_bytes(1000), 1024);
    ck_assert_uint_eq(bk_net_mem_block_bytes(BK_NET_MEM_MAX_BYTES), BK_NET_MEM_MAX_BYTES);
    ck_assert_uint_eq(bk_net_mem_block_bytes(BK_NET_MEM_MAX_BYTES + 1), BK_NET_MEM_MAX_BYTES + 1);
    static const size_t sizes[] = { 0, 1, 63, 64, 65, 4095, 4096, 70000, 1 << 20 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t want = bk_net_mem_block_bytes(sizes[i]);
        uint8_t *p = bk_net_mem_alloc(sizes[i]);
        ck_assert_ptr_nonnull(p);
        ck_assert_uint_eq((uintptr_t)p % 16, 0);
        memset(p, 0xa5, want);   /* the whole class is the caller's (ASan would say otherwise) */
        bk_net_mem_free(p);
    }
    bk_net_mem_free(NULL);
}
END_TEST

START_TEST(test_reuse_without_malloc) {
    void *a = bk_net_mem_alloc(3000);
    ck_assert_ptr_nonnull(a);
    bk_net_mem_free(a);
    uint64_t fresh = stats().fresh;
    for (int i = 0; i < 1000; i++) {
        void *b = bk_net_mem_alloc(2049 + (size_t)i);   /* same 4 KiB class */
        ck_assert_ptr_eq(b, a);
        bk_net_mem_free(b);
    }
    ck_assert_uint_eq(stats().fresh, fresh);
    /* a batch larger than the thread's cache: the surplus goes to the
     * depot and comes back from it */
    enum { N = 200 };
    void *v[N];
    for (int i = 0; i < N; i++) ck_assert_ptr_nonnull(v[i] = bk_net_mem_alloc(100));
    for (int i = 0; i < N; i++) bk_net_mem_free(v[i]);
    fresh = stats().fresh;
    for (int i = 0; i < N; i++) ck_assert_ptr_nonnull(v[i] = bk_net_mem_alloc(100));
    ck_assert_uint_eq(stats().fresh, fresh);
    for (int i = 0; i < N; i++) bk_net_mem_free(v[i]);
}
END_TEST

START_TEST(test_realloc) {
    uint8_t *p = bk_net_mem_realloc(NULL, 10);
    ck_assert_ptr_nonnull(p);
    for (int i = 0; i < 10; i++) p[i] = (uint8_t)i;
    ck_assert_ptr_eq(bk_net_mem_realloc(p, 60), p);   /* fits its class */
    uint8_t *q = bk_net_mem_realloc(p, 5000);
    ck_assert_ptr_nonnull(q);
    for (int i = 0; i < 10; i++) ck_assert_uint_eq(q[i], i);
    uint8_t *big = bk_net_mem_realloc(q, BK_NET_MEM_MAX_BYTES + 100);   /* to unpooled */
    ck_assert_ptr_nonnull(big);
    for (int i = 0; i < 10; i++) ck_assert_uint_eq(big[i], i);
    big[BK_NET_MEM_MAX_BYTES + 99] = 7;
    uint8_t *bigger = bk_net_mem_realloc(big, BK_NET_MEM_MAX_BYTES + 5000);
    ck_assert_ptr_nonnull(bigger);
    ck_assert_uint_eq(bigger[BK_NET_MEM_MAX_BYTES + 99], 7);
    uint8_t *back = bk_net_mem_realloc(bigger, 100);   /* back into a class */
    ck_assert_ptr_nonnull(back);
    for (int i = 0; i < 10; i++) ck_assert_uint_eq(back[i], i);
    ck_assert_ptr_null(bk_net_mem_realloc(back, 0));
}
END_TEST

START_TEST(test_big_unpooled) {
    uint64_t before = stats().unpooled;
    void *p = bk_net_mem_alloc(BK_NET_MEM_MAX_BYTES + 1);
    ck_assert_ptr_nonnull(p);
    memset(p, 1, BK_NET_MEM_MAX_BYTES + 1);
    bk_net_mem_free(p);
    ck_assert_uint_eq(stats().unpooled, before + 1);
    ck_assert_ptr_null(bk_net_mem_alloc(SIZE_MAX - 4));
}
END_TEST

enum { XN = 100 };
static void *xblocks[XN];

static void *free_all(void *arg) {
    (void)arg;
    for (int i = 0; i < XN; i++) bk_net_mem_free(xblocks[i]);
    return NULL;   /* this thread's cache goes to the depot as it exits */
}

/* Made on one thread, freed on another (a response chain: built on the
 * state loop, written by a network loop): the maker gets them back. */
START_TEST(test_cross_thread_return) {
    for (int i = 0; i < XN; i++) ck_assert_ptr_nonnull(xblocks[i] = bk_net_mem_alloc(1024));
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, free_all, NULL), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_uint_eq(stats().depot_bytes, (uint64_t)XN * 1024);
    uint64_t fresh = stats().fresh;
    void *again[XN];
    for (int i = 0; i < XN; i++) ck_assert_ptr_nonnull(again[i] = bk_net_mem_alloc(1000));
    ck_assert_uint_eq(stats().fresh, fresh);
    ck_assert_uint_eq(stats().depot_bytes, 0);
    for (int i = 0; i < XN; i++) bk_net_mem_free(again[i]);
}
END_TEST

/* Far more blocks freed than the pool keeps: the rest go to the system,
 * the depot stays within its bound, trim empties it. */
START_TEST(test_bounds) {
    enum { N = 2000 };
    static void *v[N];
    for (int i = 0; i < N; i++) ck_assert_ptr_nonnull(v[i] = bk_net_mem_alloc(60000));   /* 64 KiB class */
    uint64_t released = stats().released;
    for (int i = 0; i < N; i++) bk_net_mem_free(v[i]);
    bk_net_mem_stats_t s = stats();
    ck_assert_uint_le(s.depot_bytes, (uint64_t)1 << 20);   /* 1 MiB per class */
    /* kept: the depot's 16 blocks and the thread's cache of 4 */
    ck_assert_uint_ge(s.released - released, N - 16 - 4);
    bk_net_mem_trim();
    ck_assert_uint_eq(stats().depot_bytes, 0);
}
END_TEST

/* libevent's chains come from the pool once it is installed: a second
 * round of the same buffers allocates nothing new. */
START_TEST(test_libevent_on_the_pool) {
    bk_net_mem_for_libevent();
    uint8_t data[3000];
    memset(data, 'x', sizeof data);
    uint64_t fresh = 0;
    for (int round = 0; round < 3; round++) {
        if (round == 2) fresh = stats().fresh;
        for (int i = 0; i < 50; i++) {
            struct evbuffer *b = evbuffer_new();
            ck_assert_ptr_nonnull(b);
            ck_assert_int_eq(evbuffer_add(b, data, sizeof data), 0);
            ck_assert_int_eq(evbuffer_add_printf(b, "%d", i), i < 10 ? 1 : 2);   /* bytes added */
            ck_assert_uint_eq(evbuffer_get_length(b), sizeof data + (i < 10 ? 1 : 2));
            evbuffer_free(b);
        }
    }
    ck_assert_uint_eq(stats().fresh, fresh);
    ck_assert_uint_gt(fresh, 0);   /* they did come from the pool */
}
END_TEST

START_TEST(test_double_free_aborts) {
    void *p = bk_net_mem_alloc(100);
    bk_net_mem_free(p);
    bk_net_mem_free(p);
}
END_TEST

START_TEST(test_foreign_pointer_aborts) {
    uint8_t *p = calloc(1, 64);
    bk_net_mem_free(p + 16);
}
END_TEST

int main(void) {
    Suite *s = suite_create("mem");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_classes_and_whole_block);
    tcase_add_test(tc, test_reuse_without_malloc);
    tcase_add_test(tc, test_realloc);
    tcase_add_test(tc, test_big_unpooled);
    tcase_add_test(tc, test_cross_thread_return);
    tcase_add_test(tc, test_bounds);
    tcase_add_test(tc, test_libevent_on_the_pool);
    tcase_add_test_raise_signal(tc, test_double_free_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_foreign_pointer_aborts, SIGABRT);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
