/* test_status.c — skiff's one status space (broker/core/status.h): every
 * status code of every layer (protocol KP_ERR_*, storage ST_ERR_*, raft
 * RAFT_ERR_*, broker BK_NET_ERR_*, quorum BK_QUORUM_*) has a value no other
 * code has, lies in its layer's range, and has a name, both from its
 * layer's *_str function and from bk_node_status_str. The lists are the
 * X-macros the enums are generated from, so a code added to a layer is
 * checked here without editing this file. */
#include <check.h>
#include <event2/event.h>
#include <string.h>

#include "broker/core/status.h"
#include "broker/replication/parts_open.h"
#include "test/unit/st_test_util.h"

typedef struct {
    const char *name;
    int value;
    const char *text;     /* the list's description */
    int min, max;         /* the layer's range */
    const char *(*str)(int);
} code_t;

static const char *quorum_str(int s) { return s == BK_QUORUM_NOT_LEADER ? "not the metadata quorum leader" : "unknown status"; }

#define KP_(n, v, t) { #n, n, t, KP_STATUS_MIN, KP_STATUS_MAX, kp_status_str },
#define ST_(n, v, t) { #n, n, t, ST_STATUS_MIN, ST_STATUS_MAX, st_status_str },
#define RAFT_(n, v, t) { #n, n, t, RAFT_STATUS_MIN, RAFT_STATUS_MAX, raft_status_str },
#define BK_(n, v, t) { #n, n, t, BK_NET_STATUS_MIN, BK_NET_STATUS_MAX, bk_net_err_str },
static const code_t codes[] = {
    KP_STATUS_LIST(KP_) ST_STATUS_LIST(ST_) RAFT_STATUS_LIST(RAFT_) BK_NET_STATUS_LIST(BK_)
    { "BK_QUORUM_NOT_LEADER", BK_QUORUM_NOT_LEADER, "not the metadata quorum leader", BK_QUORUM_STATUS_MIN,
      BK_QUORUM_STATUS_MAX, quorum_str },
};
#define NCODES (sizeof codes / sizeof codes[0])

START_TEST(test_values_distinct) {
    ck_assert_uint_ge(NCODES, 25);
    for (size_t i = 0; i < NCODES; i++) {
        ck_assert_msg(codes[i].value < 0, "%s is not negative", codes[i].name);
        for (size_t j = i + 1; j < NCODES; j++)
            ck_assert_msg(codes[i].value != codes[j].value, "%s and %s are both %d", codes[i].name, codes[j].name,
                          codes[i].value);
    }
}
END_TEST

START_TEST(test_values_in_their_range) {
    for (size_t i = 0; i < NCODES; i++) {
        ck_assert_msg(codes[i].value >= codes[i].min && codes[i].value <= codes[i].max, "%s = %d outside [%d, %d]",
                      codes[i].name, codes[i].value, codes[i].min, codes[i].max);
        /* a value in another code's range belongs to that code's layer */
        for (size_t j = 0; j < NCODES; j++) {
            if (codes[j].min == codes[i].min) continue;
            ck_assert_msg(codes[i].value < codes[j].min || codes[i].value > codes[j].max,
                          "%s = %d lies in the range of %s's layer", codes[i].name, codes[i].value, codes[j].name);
        }
    }
}
END_TEST

START_TEST(test_every_code_named) {
    for (size_t i = 0; i < NCODES; i++) {
        const char *own = codes[i].str(codes[i].value);
        ck_assert_ptr_nonnull(own);
        ck_assert_msg(strlen(codes[i].text) > 0, "%s has no description", codes[i].name);
        ck_assert_msg(strcmp(own, codes[i].text) == 0, "%s: layer names it '%s'", codes[i].name, own);
        ck_assert_msg(strcmp(bk_node_status_str(codes[i].value), codes[i].text) == 0, "%s: bk_node_status_str says '%s'",
                      codes[i].name, bk_node_status_str(codes[i].value));
        /* descriptions are distinct too, so a log line names one cause */
        for (size_t j = i + 1; j < NCODES; j++)
            ck_assert_msg(strcmp(codes[i].text, codes[j].text) != 0, "%s and %s share '%s'", codes[i].name,
                          codes[j].name, codes[i].text);
    }
}
END_TEST

START_TEST(test_unknown_and_ok) {
    ck_assert_str_eq(bk_node_status_str(0), "ok");
    ck_assert_str_eq(kp_status_str(KP_OK), "ok");
    ck_assert_str_eq(raft_status_str(RAFT_OK), "ok");
    ck_assert_str_eq(bk_net_err_str(BK_NET_OK), "ok");
    const int unknown[] = { -10, -19, -26, -39, -45, -59, -60, -99, -106, -119, -201, -1000, 1, 40 };
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        ck_assert_msg(strcmp(bk_node_status_str(unknown[i]), "unknown status") == 0, "%d named '%s'", unknown[i],
                      bk_node_status_str(unknown[i]));
    /* the collisions this space removed: each number names one layer's code */
    ck_assert_int_ne(KP_ERR_BAD_VALUE, BK_NET_ERR_CANCELLED);
    ck_assert_int_ne(KP_ERR_TRUNCATED, BK_NET_ERR_GONE);
    ck_assert_int_ne(KP_ERR_OVERFLOW, RAFT_ERR_NOMEM);
}
END_TEST

/* The partition opener reports st_log_open's status or the pool's
 * BK_NET_ERR_CANCELLED in one field (bk_repl_popen_item_t.rc), and parts.c tells a
 * stopping node from a failed open by comparing with BK_NET_ERR_CANCELLED. An
 * open that fails with KP_ERR_BAD_VALUE (a topic name storage refuses) used
 * to be that same number. */
typedef struct { int calls; int rc; } popen_seen_t;
static void popen_done(void *ctx, bk_repl_popen_item_t *items, size_t n) {
    popen_seen_t *s = ctx;
    for (size_t i = 0; i < n; i++) {
        ck_assert_ptr_null(items[i].log);
        s->calls++;
        s->rc = items[i].rc;
    }
}

START_TEST(test_failed_open_is_not_cancelled) {
    char *dir = tu_tmpdir();
    struct event_base *base = event_base_new();
    ck_assert_ptr_nonnull(base);
    bk_net_worker_pool_t *pool = bk_net_worker_pool_new(base, 1, 4);
    ck_assert_ptr_nonnull(pool);
    popen_seen_t seen = { 0, 0 };
    bk_repl_popen_t *o = bk_repl_popen_new(pool, popen_done, &seen);
    ck_assert_ptr_nonnull(o);
    bk_repl_popen_item_t it;
    memset(&it, 0, sizeof it);
    it.partition = 0;
    snprintf(it.parent, sizeof it.parent, "%s", dir);
    snprintf(it.topic, sizeof it.topic, "bad/name");   /* storage refuses: KP_ERR_BAD_VALUE */
    st_log_config_default(&it.cfg);
    it.opts.create = true;
    ck_assert_int_eq(bk_repl_popen_add(o, &it), KP_OK);
    bk_repl_popen_kick(o);
    for (int i = 0; i < 500 && seen.calls == 0; i++) {
        struct timeval tv = { 0, 10000 };
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
    }
    ck_assert_int_eq(seen.calls, 1);
    ck_assert_int_eq(seen.rc, KP_ERR_BAD_VALUE);
    ck_assert_int_ne(seen.rc, BK_NET_ERR_CANCELLED);
    bk_net_worker_pool_free(pool, true);
    bk_repl_popen_free(o);
    event_base_free(base);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

int main(void) {
    Suite *s = suite_create("status");
    TCase *tc = tcase_create("status");
    tcase_add_test(tc, test_values_distinct);
    tcase_add_test(tc, test_values_in_their_range);
    tcase_add_test(tc, test_every_code_named);
    tcase_add_test(tc, test_unknown_and_ok);
    tcase_add_test(tc, test_failed_open_is_not_cancelled);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
