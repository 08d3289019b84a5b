/* Kafka error-code table: spot checks against NOTES.md §9 (names, codes,
 * retriability), contiguity, and unknown codes. */
#include <check.h>
#include <string.h>

#include "protocol/kp_errors.h"

START_TEST(test_names_and_codes) {
    ck_assert_int_eq(KP_ERROR_NONE, 0);
    ck_assert_int_eq(KP_ERROR_UNKNOWN_SERVER_ERROR, -1);
    ck_assert_int_eq(KP_ERROR_UNSUPPORTED_VERSION, 35);
    ck_assert_int_eq(KP_ERROR_NOT_LEADER_OR_FOLLOWER, 6);
    ck_assert_int_eq(KP_ERROR_INVALID_REGULAR_EXPRESSION, 128);
    ck_assert_int_eq(KP_ERROR_COUNT, 130);
    ck_assert_str_eq(kp_error_name(0), "NONE");
    ck_assert_str_eq(kp_error_name(-1), "UNKNOWN_SERVER_ERROR");
    ck_assert_str_eq(kp_error_name(3), "UNKNOWN_TOPIC_OR_PARTITION");
    ck_assert_str_eq(kp_error_name(42), "INVALID_REQUEST");
    ck_assert_str_eq(kp_error_name(90), "PRODUCER_FENCED");
    ck_assert_str_eq(kp_error_name(127), "VOTER_NOT_FOUND");
    ck_assert_str_eq(kp_error_name(129), "UNKNOWN");
    ck_assert_str_eq(kp_error_name(-2), "UNKNOWN");
    ck_assert_str_eq(kp_error_name(INT16_MAX), "UNKNOWN");
    ck_assert(!kp_error_known(129));
    for (int c = -1; c <= 128; c++) ck_assert_msg(kp_error_known((int16_t)c), "code %d", c);
}
END_TEST

START_TEST(test_retriable) {
    const int16_t yes[] = { 2, 3, 5, 6, 7, 9, 13, 14, 15, 16, 19, 20, 41, 51, 56, 70, 71, 72, 74,
                            75, 78, 80, 83, 84, 88, 89, 100, 103, 106, 122, 123 };
    int n = 0;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        ck_assert_msg(kp_error_retriable(yes[i]), "code %d", yes[i]);
    for (int c = -1; c <= 128; c++) n += kp_error_retriable((int16_t)c);
    ck_assert_int_eq(n, 31);   /* NOTES.md: 31 retriable */
    ck_assert(!kp_error_retriable(0));
    ck_assert(!kp_error_retriable(-1));
    ck_assert(!kp_error_retriable(35));
    ck_assert(!kp_error_retriable(8));    /* BROKER_NOT_AVAILABLE */
    ck_assert(!kp_error_retriable(500));
}
END_TEST

int main(void) {
    Suite *s = suite_create("errors");
    TCase *tc = tcase_create("errors");
    tcase_add_test(tc, test_names_and_codes);
    tcase_add_test(tc, test_retriable);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
