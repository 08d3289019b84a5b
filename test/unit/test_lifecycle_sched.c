/* Unit tests for broker/lifecycle_sched.c, the pacing of a broker's
 * registration / heartbeat rounds (issue 5: a restarted broker waited a full
 * broker.heartbeat.interval.ms after registering before the heartbeat that
 * unfences it, and as long again after each answer that still said fenced,
 * so its partitions stayed leaderless for seconds after every restart).
 * The clock is the caller's: every case walks it by hand. */
#include <check.h>
#include <stdint.h>

#include "broker/cluster/lifecycle_sched.h"

#define INTERVAL_MS 2000   /* broker.heartbeat.interval.ms default */

/* The first time in [from, from + limit) at which a round is due; -1 if none. */
static int64_t first_due(const bk_cluster_lc_sched_t *s, int64_t from, int64_t limit, int64_t interval_ms) {
    for (int64_t t = from; t < from + limit; t++)
        if (bk_cluster_lc_sched_due(s, t, interval_ms)) return t;
    return -1;
}

START_TEST(test_unregistered_is_always_due) {
    bk_cluster_lc_sched_t s;
    bk_cluster_lc_sched_init(&s);
    ck_assert(!s.registered);
    ck_assert(s.fenced);
    ck_assert(bk_cluster_lc_sched_due(&s, 0, INTERVAL_MS));
    /* registration attempts are paced by the lifecycle timer, not here */
    bk_cluster_lc_sched_sent(&s, 1000);
    ck_assert(bk_cluster_lc_sched_due(&s, 1000, INTERVAL_MS));
    ck_assert(bk_cluster_lc_sched_due(&s, 1001, INTERVAL_MS));
}
END_TEST

START_TEST(test_first_heartbeat_right_after_registration) {
    bk_cluster_lc_sched_t s;
    bk_cluster_lc_sched_init(&s);
    bk_cluster_lc_sched_sent(&s, 5000);            /* the registration request */
    bk_cluster_lc_sched_registered(&s);             /* its answer, 40 ms later */
    ck_assert(s.registered);
    ck_assert(s.fenced);
    ck_assert_int_eq(first_due(&s, 5040, 10 * INTERVAL_MS, INTERVAL_MS), 5040);
}
END_TEST

START_TEST(test_fenced_broker_heartbeats_fast_until_unfenced) {
    bk_cluster_lc_sched_t s;
    bk_cluster_lc_sched_init(&s);
    bk_cluster_lc_sched_registered(&s);
    bk_cluster_lc_sched_sent(&s, 10000);
    bk_cluster_lc_sched_heartbeat_ok(&s, true);     /* not caught up yet */
    int64_t t = first_due(&s, 10001, 10 * INTERVAL_MS, INTERVAL_MS);
    ck_assert_int_eq(t, 10000 + BK_CLUSTER_LC_FENCED_HB_MS);
    ck_assert_int_lt(BK_CLUSTER_LC_FENCED_HB_MS, INTERVAL_MS);
    bk_cluster_lc_sched_sent(&s, t);
    bk_cluster_lc_sched_heartbeat_ok(&s, false);    /* unfenced: back to the interval */
    ck_assert(!s.fenced);
    ck_assert_int_eq(first_due(&s, t + 1, 10 * INTERVAL_MS, INTERVAL_MS), t + INTERVAL_MS);
}
END_TEST

START_TEST(test_short_interval_is_not_slowed_down) {
    bk_cluster_lc_sched_t s;
    bk_cluster_lc_sched_init(&s);
    bk_cluster_lc_sched_registered(&s);
    bk_cluster_lc_sched_sent(&s, 0);
    /* fenced, interval below the fenced pace: the interval wins */
    ck_assert_int_eq(first_due(&s, 1, 1000, 50), 50);
    bk_cluster_lc_sched_heartbeat_ok(&s, false);
    ck_assert_int_eq(first_due(&s, 1, 1000, 50), 50);
}
END_TEST

START_TEST(test_unregistered_answer_registers_again_at_once) {
    bk_cluster_lc_sched_t s;
    bk_cluster_lc_sched_init(&s);
    bk_cluster_lc_sched_registered(&s);
    bk_cluster_lc_sched_sent(&s, 100);
    bk_cluster_lc_sched_heartbeat_ok(&s, false);
    ck_assert(!bk_cluster_lc_sched_due(&s, 150, INTERVAL_MS));
    bk_cluster_lc_sched_unregistered(&s);           /* STALE_BROKER_EPOCH */
    ck_assert(!s.registered);
    ck_assert(s.fenced);
    ck_assert(bk_cluster_lc_sched_due(&s, 150, INTERVAL_MS));
}
END_TEST

START_TEST(test_abandoned_round_retries_at_once) {
    bk_cluster_lc_sched_t s;
    bk_cluster_lc_sched_init(&s);
    bk_cluster_lc_sched_registered(&s);
    bk_cluster_lc_sched_sent(&s, 100);
    bk_cluster_lc_sched_heartbeat_ok(&s, false);
    ck_assert(!bk_cluster_lc_sched_due(&s, 300, INTERVAL_MS));
    bk_cluster_lc_sched_retry_now(&s);              /* the controller changed */
    ck_assert(bk_cluster_lc_sched_due(&s, 300, INTERVAL_MS));
    ck_assert(s.registered);
    ck_assert(!s.fenced);
}
END_TEST

START_TEST(test_error_answer_keeps_the_pace) {
    /* an answer with another error (NOT_CONTROLLER...) changes nothing: the
     * next round comes at the usual pace, never later */
    bk_cluster_lc_sched_t s;
    bk_cluster_lc_sched_init(&s);
    bk_cluster_lc_sched_registered(&s);
    bk_cluster_lc_sched_sent(&s, 0);
    ck_assert_int_eq(first_due(&s, 1, 10 * INTERVAL_MS, INTERVAL_MS), BK_CLUSTER_LC_FENCED_HB_MS);
    bk_cluster_lc_sched_heartbeat_ok(&s, false);
    ck_assert_int_eq(first_due(&s, 1, 10 * INTERVAL_MS, INTERVAL_MS), INTERVAL_MS);
}
END_TEST

int main(void) {
    Suite *s = suite_create("lifecycle_sched");
    TCase *tc = tcase_create("pacing");
    tcase_add_test(tc, test_unregistered_is_always_due);
    tcase_add_test(tc, test_first_heartbeat_right_after_registration);
    tcase_add_test(tc, test_fenced_broker_heartbeats_fast_until_unfenced);
    tcase_add_test(tc, test_short_interval_is_not_slowed_down);
    tcase_add_test(tc, test_unregistered_answer_registers_again_at_once);
    tcase_add_test(tc, test_abandoned_round_retries_at_once);
    tcase_add_test(tc, test_error_answer_keeps_the_pace);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
