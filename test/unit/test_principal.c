/* Unit tests for ssl.principal.mapping.rules (protocol/kp_principal.h). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_principal.h"

static void expect_map(const char *rules, const char *subject, const char *want) {
    char why[256] = "", out[256];
    kp_principal_rules_t *r = kp_principal_rules_parse(rules, why, sizeof why);
    ck_assert_msg(r != NULL, "%s: %s", rules, why);
    int rc = kp_principal_map(r, subject, out, sizeof out);
    if (want == NULL) {
        ck_assert_msg(rc != KP_OK, "%s mapped %s to %s", rules, subject, out);
    } else {
        ck_assert_msg(rc == KP_OK, "%s: no match for %s", rules, subject);
        ck_assert_str_eq(out, want);
    }
    kp_principal_rules_free(r);
}

static void expect_refused(const char *rules, const char *why_part) {
    char why[256] = "";
    kp_principal_rules_t *r = kp_principal_rules_parse(rules, why, sizeof why);
    ck_assert_msg(r == NULL, "accepted %s", rules);
    ck_assert_msg(strstr(why, why_part) != NULL, "%s: '%s' lacks '%s'", rules, why, why_part);
}

START_TEST(test_default) {
    expect_map("DEFAULT", "CN=client,O=skiff", "CN=client,O=skiff");
    expect_map(" DEFAULT ", "CN=a\\,b,O=x", "CN=a\\,b,O=x");
}
END_TEST

/* Examples of Kafka's documentation for ssl.principal.mapping.rules. */
START_TEST(test_kafka_examples) {
    /* Kafka's documentation writes these with Java's lazy (.*?); POSIX ERE
     * has no lazy quantifier, so the same rules are spelled [^,]* here
     * (broker/config/README.md says so). */
    const char *posix = "RULE:^CN=([^,]*),OU=ServiceUsers.*$/$1/,RULE:^CN=([^,]*),OU=([^,]*),O=([^,]*),L=([^,]*),ST=([^,]*),C=([^,]*)$/$1@$2/L,"
                        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT";
    expect_map(posix, "CN=kafka1,OU=ServiceUsers,O=Org,C=US", "kafka1");
    expect_map(posix, "CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme");
    expect_map(posix, "cn=ADMIN,ou=x", "admin");
    expect_map(posix, "O=only", "O=only");
}
END_TEST

START_TEST(test_rules) {
    expect_map("RULE:CN=([^,]+),O=skiff/$0 is $1/U", "CN=client,O=skiff", "CN=CLIENT,O=SKIFF IS CLIENT");
    expect_map("RULE:CN=([^,]+),O=skiff/$1/", "CN=client,O=other", NULL);         /* no match, no DEFAULT */
    expect_map("RULE:CN=([^,]+),O=skiff/$1/", "xCN=client,O=skiff", NULL);        /* whole subject only */
    expect_map("RULE:CN=([^,]+)\\/x/a\\/b/", "CN=c/x", "a/b");                     /* escaped slashes */
    expect_map("RULE:(.*)/\\$1/", "anything", "$1");                              /* literal $ */
    expect_map("RULE:CN=(a|b),O=x/$1/, RULE:CN=(.*),O=x/other-$1/", "CN=c,O=x", "other-c");
    expect_map("RULE:CN=([^,]*).*/$1/L\nDEFAULT", "CN=MiXeD,O=x", "mixed");
}
END_TEST

START_TEST(test_refused) {
    expect_refused("", "no rule");
    expect_refused("DEFAULTX", "unexpected text");
    expect_refused("RULE:abc", "expected RULE:pattern/replacement/[LU]");
    expect_refused("RULE:abc/def", "expected RULE:pattern/replacement/[LU]");
    expect_refused("RULE:a(/x/", "POSIX extended regex");
    expect_refused("RULE:a/$x/", "group number");
    expect_refused("RULE:a/b/Q", "unexpected text");
    expect_refused("SOMETHING", "expected DEFAULT or RULE");
    char many[2048] = "";
    for (int i = 0; i < KP_PRINCIPAL_RULES_MAX + 1; i++) strcat(many, "DEFAULT,");
    expect_refused(many, "too many rules");
}
END_TEST

START_TEST(test_result_bound) {
    char why[128], out[9];   /* "CN=short" and its NUL exactly */
    kp_principal_rules_t *r = kp_principal_rules_parse("DEFAULT", why, sizeof why);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_ne(kp_principal_map(r, "CN=longer-than-eight", out, sizeof out), KP_OK);
    ck_assert_int_eq(kp_principal_map(r, "CN=short", out, sizeof out), KP_OK);
    ck_assert_str_eq(out, "CN=short");
    ck_assert_int_ne(kp_principal_map(r, "CN=short", out, sizeof out - 1), KP_OK);
    kp_principal_rules_free(r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("principal");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_default);
    tcase_add_test(tc, test_kafka_examples);
    tcase_add_test(tc, test_rules);
    tcase_add_test(tc, test_refused);
    tcase_add_test(tc, test_result_bound);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
