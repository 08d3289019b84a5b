/* test_purgatory.c — the fetch purgatory keyed by partition
 * (broker/replication/purgatory.c), driven directly with a libevent base:
 * a notify asks only the waiters of its partition; a ready that says yes
 * is followed at once by its done; deferred notifies ask each partition
 * once per loop turn; a fetch waiting on
 * several partitions completes once and leaves every partition; a key given
 * twice counts once; timers complete waiters and remove them everywhere;
 * flush answers everything oldest first; the waiter bound; callbacks that
 * re-enter (a done that notifies another partition and so completes the
 * waiter a walk was about to visit, a done that registers a new waiter on
 * the walked partition); a thousand partitions grown and emptied in random
 * order keep every remaining waiter findable (table growth and deletion). */
#include <check.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "broker/replication/purgatory.h"

typedef struct w {
    int ready_calls;
    int done_calls;
    bool ready_answer;
    int done_order;            /* sequence number of its done call */
    void (*on_done)(struct w *);
    bk_repl_purg_t *pg;
    void *arg;
} w_t;

static int g_done_seq;

static bool t_ready(void *ctx) {
    w_t *w = ctx;
    w->ready_calls++;
    return w->ready_answer;
}

static void t_done(void *ctx) {
    w_t *w = ctx;
    w->done_calls++;
    w->done_order = ++g_done_seq;
    if (w->on_done) w->on_done(w);
}

static bk_repl_purg_key_t key(uint8_t topic, int32_t partition) {
    bk_repl_purg_key_t k;
    memset(&k, 0, sizeof k);
    for (int i = 0; i < 16; i++) k.topic_id.b[i] = (uint8_t)(topic * 17 + i);
    k.partition = partition;
    return k;
}

static void notify(bk_repl_purg_t *pg, uint8_t topic, int32_t partition) {
    bk_repl_purg_key_t k = key(topic, partition);
    bk_repl_purg_notify(pg, &k.topic_id, k.partition);
}

static void wait_on(bk_repl_purg_t *pg, w_t *w, const bk_repl_purg_key_t *keys, size_t n, int32_t ms) {
    ck_assert_int_eq(bk_repl_purg_wait(pg, keys, n, ms, t_ready, t_done, w), KP_OK);
}

typedef struct {
    struct event_base *base;
    bk_repl_purg_t *pg;
} fx_t;

static void fx_init(fx_t *f, size_t max) {
    f->base = event_base_new();
    ck_assert_ptr_nonnull(f->base);
    f->pg = bk_repl_purg_new(f->base, max);
    ck_assert_ptr_nonnull(f->pg);
    g_done_seq = 0;
}

static void fx_free(fx_t *f) {
    bk_repl_purg_free(f->pg);
    event_base_free(f->base);
}

START_TEST(test_notify_asks_only_its_partition) {
    fx_t f;
    fx_init(&f, 16);
    w_t a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 };
    bk_repl_purg_key_t ka = key(1, 0), kb = key(1, 1), kc = key(2, 0), kd = key(1, 0);
    wait_on(f.pg, &a, &ka, 1, 60000);
    wait_on(f.pg, &b, &kb, 1, 60000);
    wait_on(f.pg, &c, &kc, 1, 60000);   /* same partition index, other topic */
    wait_on(f.pg, &d, &kd, 1, 60000);
    ck_assert_uint_eq(bk_repl_purg_waiting(f.pg), 4);
    ck_assert_uint_eq(bk_repl_purg_partitions(f.pg), 3);
    notify(f.pg, 1, 0);
    ck_assert_int_eq(a.ready_calls, 1);
    ck_assert_int_eq(d.ready_calls, 1);
    ck_assert_int_eq(b.ready_calls, 0);
    ck_assert_int_eq(c.ready_calls, 0);
    /* a partition nobody waits on: nothing asked */
    notify(f.pg, 3, 0);
    ck_assert_int_eq(a.ready_calls + b.ready_calls + c.ready_calls + d.ready_calls, 2);
    /* ready now: completed, the other waiter of that partition stays */
    a.ready_answer = true;
    notify(f.pg, 1, 0);
    ck_assert_int_eq(a.done_calls, 1);
    ck_assert_int_eq(d.done_calls, 0);
    ck_assert_uint_eq(bk_repl_purg_waiting(f.pg), 3);
    notify(f.pg, 1, 0);
    ck_assert_int_eq(a.ready_calls, 2);   /* gone: not asked again */
    ck_assert_int_eq(d.ready_calls, 3);
    fx_free(&f);
    ck_assert_int_eq(b.done_calls + c.done_calls + d.done_calls, 3);   /* free answers the rest */
}
END_TEST

/* Calls of ready and done in order: 'R' or 'D' then the waiter's tag. */
static char g_calls[64];
static size_t g_ncalls;

static bool log_ready(void *ctx) {
    w_t *w = ctx;
    ck_assert_uint_lt(g_ncalls + 2, sizeof g_calls);
    g_calls[g_ncalls++] = 'R';
    g_calls[g_ncalls++] = *(const char *)w->arg;
    return t_ready(ctx);
}

static void log_done(void *ctx) {
    w_t *w = ctx;
    ck_assert_uint_lt(g_ncalls + 2, sizeof g_calls);
    g_calls[g_ncalls++] = 'D';
    g_calls[g_ncalls++] = *(const char *)w->arg;
    t_done(ctx);
}

/* The contract the Fetch handler relies on to keep its readiness reads
 * for the answer: a ready that says yes is followed at once by its done,
 * before any other waiter is asked. */
START_TEST(test_done_follows_its_yes_at_once) {
    fx_t f;
    fx_init(&f, 16);
    w_t a = { 0 }, b = { 0 }, c = { 0 };
    a.arg = "a";
    b.arg = "b";
    c.arg = "c";
    b.ready_answer = c.ready_answer = true;
    bk_repl_purg_key_t k = key(1, 0);
    ck_assert_int_eq(bk_repl_purg_wait(f.pg, &k, 1, 60000, log_ready, log_done, &a), KP_OK);
    ck_assert_int_eq(bk_repl_purg_wait(f.pg, &k, 1, 60000, log_ready, log_done, &b), KP_OK);
    ck_assert_int_eq(bk_repl_purg_wait(f.pg, &k, 1, 60000, log_ready, log_done, &c), KP_OK);
    g_ncalls = 0;
    notify(f.pg, 1, 0);
    /* every waiter asked once (in the purgatory's order), each done right
     * after its own yes: "Rx" then "Dx", nothing between */
    ck_assert_uint_eq(g_ncalls, 10);
    int dones = 0;
    for (size_t i = 0; i < g_ncalls; i += 2) {
        if (g_calls[i] != 'D') continue;
        dones++;
        ck_assert_uint_ge(i, 2);
        ck_assert_int_eq(g_calls[i - 2], 'R');
        ck_assert_int_eq(g_calls[i - 1], g_calls[i + 1]);
    }
    ck_assert_int_eq(dones, 2);
    ck_assert_int_eq(a.done_calls, 0);
    ck_assert_int_eq(b.done_calls + c.done_calls, 2);
    fx_free(&f);
}
END_TEST

static void notify_soon(bk_repl_purg_t *pg, uint8_t topic, int32_t partition) {
    bk_repl_purg_key_t k = key(topic, partition);
    bk_repl_purg_notify_soon(pg, &k.topic_id, k.partition);
}

static void done_notifies_soon(w_t *w) { notify_soon(w->pg, 9, 0); }

/* Deferred notifies (issue 19): nothing is asked until the loop runs; then
 * each partition once however often it was named, in one pass that also
 * runs the notifies the callbacks defer; a partition whose head went
 * meanwhile (its waiter completed through another partition) is skipped. */
START_TEST(test_notify_soon_once_per_turn) {
    fx_t f;
    fx_init(&f, 16);
    w_t a = { 0 }, b = { 0 }, multi = { 0 }, chained = { 0 };
    bk_repl_purg_key_t ka = key(1, 0), kb = key(1, 1), km[2] = { key(2, 0), key(2, 1) }, kc = key(9, 0);
    wait_on(f.pg, &a, &ka, 1, 60000);
    wait_on(f.pg, &b, &kb, 1, 60000);
    multi.ready_answer = true;
    multi.on_done = done_notifies_soon;
    multi.pg = f.pg;
    wait_on(f.pg, &multi, km, 2, 60000);
    wait_on(f.pg, &chained, &kc, 1, 60000);
    for (int i = 0; i < 3; i++) notify_soon(f.pg, 1, 0);
    notify_soon(f.pg, 1, 1);
    notify_soon(f.pg, 3, 0);   /* nobody waits there */
    notify_soon(f.pg, 2, 0);
    notify_soon(f.pg, 2, 1);   /* multi's second partition: gone by its turn */
    ck_assert_int_eq(a.ready_calls + b.ready_calls + multi.ready_calls + chained.ready_calls, 0);
    event_base_loop(f.base, EVLOOP_NONBLOCK);
    ck_assert_int_eq(a.ready_calls, 1);
    ck_assert_int_eq(b.ready_calls, 1);
    ck_assert_int_eq(multi.ready_calls, 1);
    ck_assert_int_eq(multi.done_calls, 1);
    ck_assert_int_eq(chained.ready_calls, 1);   /* deferred by multi's done, run in the same pass */
    ck_assert_uint_eq(bk_repl_purg_waiting(f.pg), 3);
    /* nothing left due */
    event_base_loop(f.base, EVLOOP_NONBLOCK);
    ck_assert_int_eq(a.ready_calls + b.ready_calls + chained.ready_calls, 3);
    /* and it works again after a pass */
    notify_soon(f.pg, 1, 0);
    event_base_loop(f.base, EVLOOP_NONBLOCK);
    ck_assert_int_eq(a.ready_calls, 2);
    fx_free(&f);
}
END_TEST

START_TEST(test_multi_partition_waiter_completed_once_removed_everywhere) {
    fx_t f;
    fx_init(&f, 16);
    w_t m = { 0 }, other = { 0 };
    bk_repl_purg_key_t ks[3] = { key(1, 0), key(1, 5), key(2, 9) };
    wait_on(f.pg, &m, ks, 3, 60000);
    wait_on(f.pg, &other, &ks[2], 1, 60000);
    ck_assert_uint_eq(bk_repl_purg_partitions(f.pg), 3);
    notify(f.pg, 1, 5);
    ck_assert_int_eq(m.ready_calls, 1);
    m.ready_answer = true;
    notify(f.pg, 1, 0);
    ck_assert_int_eq(m.done_calls, 1);
    /* removed from all three: its partitions without other waiters went */
    ck_assert_uint_eq(bk_repl_purg_partitions(f.pg), 1);
    ck_assert_uint_eq(bk_repl_purg_waiting(f.pg), 1);
    notify(f.pg, 1, 5);
    notify(f.pg, 2, 9);
    ck_assert_int_eq(m.ready_calls, 2);
    ck_assert_int_eq(m.done_calls, 1);
    ck_assert_int_eq(other.ready_calls, 1);
    fx_free(&f);
    ck_assert_int_eq(m.done_calls, 1);
    ck_assert_int_eq(other.done_calls, 1);
}
END_TEST

START_TEST(test_duplicate_keys_count_once) {
    fx_t f;
    fx_init(&f, 16);
    w_t w = { 0 };
    bk_repl_purg_key_t ks[4] = { key(1, 0), key(1, 0), key(1, 1), key(1, 0) };
    wait_on(f.pg, &w, ks, 4, 60000);
    ck_assert_uint_eq(bk_repl_purg_partitions(f.pg), 2);
    notify(f.pg, 1, 0);
    ck_assert_int_eq(w.ready_calls, 1);
    w.ready_answer = true;
    notify(f.pg, 1, 0);
    ck_assert_int_eq(w.done_calls, 1);
    ck_assert_uint_eq(bk_repl_purg_partitions(f.pg), 0);
    fx_free(&f);
    ck_assert_int_eq(w.done_calls, 1);
}
END_TEST

START_TEST(test_timeout_completes_and_removes) {
    fx_t f;
    fx_init(&f, 16);
    w_t fast = { 0 }, slow = { 0 }, none = { 0 };
    bk_repl_purg_key_t ks[2] = { key(1, 0), key(1, 1) };
    wait_on(f.pg, &fast, ks, 2, 10);
    wait_on(f.pg, &slow, ks, 1, 60000);
    wait_on(f.pg, &none, NULL, 0, 0);   /* no partition, no wait: the next loop turn */
    for (int i = 0; i < 200 && fast.done_calls == 0; i++) event_base_loop(f.base, EVLOOP_ONCE);
    ck_assert_int_eq(fast.done_calls, 1);
    ck_assert_int_eq(none.done_calls, 1);
    ck_assert_int_eq(slow.done_calls, 0);
    ck_assert_uint_eq(bk_repl_purg_partitions(f.pg), 1);
    notify(f.pg, 1, 0);
    ck_assert_int_eq(fast.ready_calls, 0);
    ck_assert_int_eq(slow.ready_calls, 1);
    fx_free(&f);
    ck_assert_int_eq(fast.done_calls, 1);
    ck_assert_int_eq(slow.done_calls, 1);
}
END_TEST

START_TEST(test_flush_oldest_first_and_bound) {
    fx_t f;
    fx_init(&f, 3);
    w_t w[4] = { { 0 } };
    bk_repl_purg_key_t k = key(1, 0);
    for (int i = 0; i < 3; i++) wait_on(f.pg, &w[i], &k, 1, 60000);
    ck_assert_int_eq(bk_repl_purg_wait(f.pg, &k, 1, 60000, t_ready, t_done, &w[3]), KP_ERR_TOO_LARGE);
    ck_assert_uint_eq(bk_repl_purg_waiting(f.pg), 3);
    bk_repl_purg_flush(f.pg);
    ck_assert_uint_eq(bk_repl_purg_waiting(f.pg), 0);
    ck_assert_uint_eq(bk_repl_purg_partitions(f.pg), 0);
    for (int i = 0; i < 3; i++) ck_assert_int_eq(w[i].done_order, i + 1);
    ck_assert_int_eq(w[3].done_calls, 0);
    /* room again */
    wait_on(f.pg, &w[3], &k, 1, 60000);
    fx_free(&f);
    ck_assert_int_eq(w[3].done_calls, 1);
}
END_TEST

/* a's done notifies partition (1,1), where b waits and is ready: b is
 * completed from inside the walk of (1,0), in which b is the next link. */
static void done_notifies(w_t *w) { notify(w->pg, 1, 1); }

/* re-registers on (1,0) while (1,0) is being walked: not visited by it */
static void done_waits_again(w_t *w) {
    bk_repl_purg_key_t k = key(1, 0);
    ck_assert_int_eq(bk_repl_purg_wait(w->pg, &k, 1, 60000, t_ready, t_done, w->arg), KP_OK);
}

START_TEST(test_reentrant_callbacks) {
    fx_t f;
    fx_init(&f, 16);
    w_t a = { 0 }, b = { 0 }, c = { 0 }, later = { 0 };
    bk_repl_purg_key_t k0 = key(1, 0), k1 = key(1, 1);
    bk_repl_purg_key_t both[2] = { k0, k1 };
    /* list of (1,0) is newest first: a, b, c */
    wait_on(f.pg, &c, &k0, 1, 60000);
    wait_on(f.pg, &b, both, 2, 60000);
    wait_on(f.pg, &a, &k0, 1, 60000);
    a.ready_answer = true;
    a.on_done = done_notifies;
    a.pg = f.pg;
    b.ready_answer = true;
    c.ready_answer = true;
    c.on_done = done_waits_again;
    c.pg = f.pg;
    c.arg = &later;
    later.ready_answer = true;
    notify(f.pg, 1, 0);
    ck_assert_int_eq(a.done_calls, 1);
    ck_assert_int_eq(b.done_calls, 1);
    ck_assert_int_eq(b.ready_calls, 1);   /* asked by the inner notify only */
    ck_assert_int_eq(c.done_calls, 1);
    ck_assert_int_eq(later.ready_calls, 0);
    ck_assert_int_eq(later.done_calls, 0);
    ck_assert_uint_eq(bk_repl_purg_waiting(f.pg), 1);
    ck_assert_uint_eq(bk_repl_purg_partitions(f.pg), 1);
    notify(f.pg, 1, 0);
    ck_assert_int_eq(later.done_calls, 1);
    ck_assert_uint_eq(bk_repl_purg_partitions(f.pg), 0);
    fx_free(&f);
}
END_TEST

#define MANY 1000

START_TEST(test_many_partitions_grow_and_empty) {
    fx_t f;
    fx_init(&f, 2 * MANY);
    static w_t w[MANY];
    memset(w, 0, sizeof w);
    for (int i = 0; i < MANY; i++) {
        bk_repl_purg_key_t k = key((uint8_t)(i % 7), i);
        wait_on(f.pg, &w[i], &k, 1, 60000);
        w[i].ready_answer = true;
    }
    ck_assert_uint_eq(bk_repl_purg_partitions(f.pg), MANY);
    /* complete in a scrambled order; after each, a few survivors must still
     * be found through the table (deletion keeps probe runs intact) */
    int order[MANY];
    for (int i = 0; i < MANY; i++) order[i] = i;
    srand(14);
    for (int i = MANY - 1; i > 0; i--) {
        int j = rand() % (i + 1);
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int n = 0; n < MANY; n++) {
        int i = order[n];
        notify(f.pg, (uint8_t)(i % 7), i);
        ck_assert_int_eq(w[i].done_calls, 1);
        ck_assert_uint_eq(bk_repl_purg_partitions(f.pg), (size_t)(MANY - n - 1));
        if (n % 97 == 0) {
            for (int m = n + 1; m < MANY; m += 53) {
                int s = order[m];
                int before = w[s].ready_calls;
                w[s].ready_answer = false;
                notify(f.pg, (uint8_t)(s % 7), s);
                ck_assert_int_eq(w[s].ready_calls, before + 1);
                ck_assert_int_eq(w[s].done_calls, 0);
                w[s].ready_answer = true;
            }
        }
    }
    for (int i = 0; i < MANY; i++) ck_assert_int_eq(w[i].done_calls, 1);
    ck_assert_uint_eq(bk_repl_purg_waiting(f.pg), 0);
    fx_free(&f);
}
END_TEST

int main(void) {
    Suite *s = suite_create("purgatory");
    TCase *tc = tcase_create("keyed");
    tcase_add_test(tc, test_notify_asks_only_its_partition);
    tcase_add_test(tc, test_done_follows_its_yes_at_once);
    tcase_add_test(tc, test_notify_soon_once_per_turn);
    tcase_add_test(tc, test_multi_partition_waiter_completed_once_removed_everywhere);
    tcase_add_test(tc, test_duplicate_keys_count_once);
    tcase_add_test(tc, test_timeout_completes_and_removes);
    tcase_add_test(tc, test_flush_oldest_first_and_bound);
    tcase_add_test(tc, test_reentrant_callbacks);
    tcase_add_test(tc, test_many_partitions_grow_and_empty);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
