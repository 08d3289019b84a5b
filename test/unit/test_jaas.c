/* Unit tests for broker/config/jaas.c: Kafka's PlainLoginModule syntax,
 * escapes, bounds, and a refusal with a position for each kind of error. */
#include <check.h>
#include <string.h>

#include "broker/config/jaas.h"

#define S(x) (x), strlen(x)

START_TEST(test_plain_module) {
    const char *t = "org.apache.kafka.common.security.plain.PlainLoginModule required\n"
                    "  username=\"admin\" password=\"admin-secret\"\n"
                    "  user_admin=\"admin-secret\" user_alice=\"al\\\"ice\\\\\" user_bob=bare-token;";
    bk_cfg_jaas_t j;
    char why[200];
    ck_assert_int_eq(bk_cfg_jaas_parse(S(t), &j, why, sizeof why), KP_OK);
    ck_assert_str_eq(j.module, "org.apache.kafka.common.security.plain.PlainLoginModule");
    ck_assert_str_eq(j.username, "admin");
    ck_assert_str_eq(j.password, "admin-secret");
    ck_assert_uint_eq(j.nusers, 3);
    ck_assert_str_eq(bk_cfg_jaas_user(&j, "admin"), "admin-secret");
    ck_assert_str_eq(bk_cfg_jaas_user(&j, "alice"), "al\"ice\\");
    ck_assert_str_eq(bk_cfg_jaas_user(&j, "bob"), "bare-token");
    ck_assert_ptr_null(bk_cfg_jaas_user(&j, "carol"));
    bk_cfg_jaas_free(&j);
}
END_TEST

START_TEST(test_errors) {
    struct { const char *t; const char *sub; } bad[] = {
        { "", "class name" },
        { "X", "control flag" },
        { "X maybe user_a=\"b\";", "control flag must be" },
        { "X required user_a=\"b\"", "missing ';'" },
        { "X required user_a=\"b;", "does not end" },
        { "X required user_a \"b\";", "expected '='" },
        { "X required user_a=\"b\" user_a=\"c\";", "listed twice" },
        { "X required user_a=\"\";", "empty password" },
        { "X required user_a=\"b\"; Y required;", "only one login module" },
        { "X required =\"b\";", "expected an option" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bk_cfg_jaas_t j;
        memset(&j, 0x5a, sizeof j);
        char why[200];
        int st = bk_cfg_jaas_parse(S(bad[i].t), &j, why, sizeof why);
        ck_assert_msg(st == KP_ERR_BAD_VALUE, "case %zu: %d", i, st);
        ck_assert_msg(strstr(why, bad[i].sub) != NULL, "case %zu: '%s'", i, why);
        ck_assert_msg(strncmp(why, "at character ", 13) == 0, "case %zu: '%s'", i, why);
    }
    /* a password never appears in the reason */
    char why[200];
    bk_cfg_jaas_t j;
    ck_assert_int_eq(bk_cfg_jaas_parse(S("X required user_a=\"s3cret\" user_a=\"s3cret\";"), &j, why, sizeof why), KP_ERR_BAD_VALUE);
    ck_assert_ptr_null(strstr(why, "s3cret"));
    static char big[BK_CFG_JAAS_MAX + 2];
    memset(big, 'a', sizeof big - 1);
    ck_assert_int_eq(bk_cfg_jaas_parse(big, sizeof big - 1, &j, why, sizeof why), KP_ERR_TOO_LARGE);
}
END_TEST

int main(void) {
    Suite *s = suite_create("jaas");
    TCase *tc = tcase_create("jaas");
    tcase_add_test(tc, test_plain_module);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
