/* Unit tests for broker/resp_errors.c: the error codes of responses built
 * here with known codes are reported once each, in field order, through
 * nested arrays; codes in fields the version lacks are not; unknown APIs
 * and NULL report nothing. The expected codes are written out by hand. */
#include <check.h>
#include <string.h>

#include "broker/api/resp_errors.h"
#include "kp_msgs.h"
#include "protocol/kp_errors.h"

#define GOT_MAX 16
typedef struct { int16_t codes[GOT_MAX]; int n; } got_t;

static void take(void *ctx, int16_t code) {
    got_t *g = ctx;
    ck_assert_int_lt(g->n, GOT_MAX);
    g->codes[g->n++] = code;
}

START_TEST(test_produce_nested_partitions) {
    kp_produce_response_partition_produce_response_t p1[3], p2[1];
    for (int i = 0; i < 3; i++) kp_produce_response_partition_produce_response_init(&p1[i]);
    kp_produce_response_partition_produce_response_init(&p2[0]);
    p1[1].error_code = KP_ERROR_NOT_LEADER_OR_FOLLOWER;
    p1[2].error_code = KP_ERROR_CORRUPT_MESSAGE;
    p2[0].error_code = KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
    kp_produce_response_topic_produce_response_t t[2];
    kp_produce_response_topic_produce_response_init(&t[0]);
    kp_produce_response_topic_produce_response_init(&t[1]);
    t[0].partition_responses.items = p1; t[0].partition_responses.count = 3;
    t[1].partition_responses.items = p2; t[1].partition_responses.count = 1;
    kp_produce_response_t r;
    kp_produce_response_init(&r);
    r.responses.items = t; r.responses.count = 2;
    for (int16_t v = 0; v <= 9; v++) {
        got_t g = { { 0 }, 0 };
        ck_assert_uint_eq(bk_api_resp_errors(KP_API_PRODUCE, v, &r, take, &g), 3);
        ck_assert_int_eq(g.n, 3);
        ck_assert_int_eq(g.codes[0], 6);    /* NOT_LEADER_OR_FOLLOWER */
        ck_assert_int_eq(g.codes[1], 2);    /* CORRUPT_MESSAGE */
        ck_assert_int_eq(g.codes[2], 3);    /* UNKNOWN_TOPIC_OR_PARTITION */
    }
    /* no errors at all: nothing reported */
    p1[1].error_code = p1[2].error_code = p2[0].error_code = 0;
    got_t g = { { 0 }, 0 };
    ck_assert_uint_eq(bk_api_resp_errors(KP_API_PRODUCE, 9, &r, take, &g), 0);
    ck_assert_int_eq(g.n, 0);
}
END_TEST

START_TEST(test_fields_outside_the_version_skipped) {
    kp_offset_fetch_response_offset_fetch_response_partition_t p;
    kp_offset_fetch_response_offset_fetch_response_partition_init(&p);
    p.error_code = KP_ERROR_GROUP_AUTHORIZATION_FAILED;
    kp_offset_fetch_response_offset_fetch_response_topic_t t;
    kp_offset_fetch_response_offset_fetch_response_topic_init(&t);
    t.partitions.items = &p; t.partitions.count = 1;
    kp_offset_fetch_response_t r;
    kp_offset_fetch_response_init(&r);
    r.topics.items = &t; r.topics.count = 1;
    r.error_code = KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS;   /* top level: v2-7 only */
    got_t g1 = { { 0 }, 0 };
    ck_assert_uint_eq(bk_api_resp_errors(KP_API_OFFSET_FETCH, 1, &r, take, &g1), 1);
    ck_assert_int_eq(g1.codes[0], 30);   /* GROUP_AUTHORIZATION_FAILED */
    got_t g3 = { { 0 }, 0 };
    ck_assert_uint_eq(bk_api_resp_errors(KP_API_OFFSET_FETCH, 3, &r, take, &g3), 2);
    ck_assert_int_eq(g3.codes[0], 30);
    ck_assert_int_eq(g3.codes[1], 14);   /* COORDINATOR_LOAD_IN_PROGRESS */
    /* v8: topics and the top-level code are gone; groups[] carries them */
    kp_offset_fetch_response_offset_fetch_response_group_t grp;
    kp_offset_fetch_response_offset_fetch_response_group_init(&grp);
    grp.error_code = KP_ERROR_NOT_COORDINATOR;
    r.groups.items = &grp; r.groups.count = 1;
    got_t g8 = { { 0 }, 0 };
    ck_assert_uint_eq(bk_api_resp_errors(KP_API_OFFSET_FETCH, 8, &r, take, &g8), 1);
    ck_assert_int_eq(g8.codes[0], 16);   /* NOT_COORDINATOR */
}
END_TEST

START_TEST(test_top_level_and_unknown) {
    kp_join_group_response_t j;
    kp_join_group_response_init(&j);
    j.error_code = KP_ERROR_MEMBER_ID_REQUIRED;
    got_t g = { { 0 }, 0 };
    ck_assert_uint_eq(bk_api_resp_errors(KP_API_JOIN_GROUP, 5, &j, take, &g), 1);
    ck_assert_int_eq(g.codes[0], 79);    /* MEMBER_ID_REQUIRED */
    g.n = 0;
    ck_assert_uint_eq(bk_api_resp_errors(9999, 0, &j, take, &g), 0);
    ck_assert_uint_eq(bk_api_resp_errors(KP_API_JOIN_GROUP, 5, NULL, take, &g), 0);
    ck_assert_int_eq(g.n, 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("resp_errors");
    TCase *tc = tcase_create("walk");
    tcase_add_test(tc, test_produce_nested_partitions);
    tcase_add_test(tc, test_fields_outside_the_version_skipped);
    tcase_add_test(tc, test_top_level_and_unknown);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
