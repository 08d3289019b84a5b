/* Unit tests for the security protocols of listeners and the per-listener
 * values (listener.name.<listener>.<key>, broker/config/config_listener.c). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/config/config.h"
#include "test/unit/cfg_test_util.h"

static void setup(void) {
    (void)BASE;
    cfg_tmp_setup("skiff-cfglst-");
}

static bk_cfg_t *load_text(const char *text, const char *const *sets, size_t nsets, bk_cfg_err_t *err) {
    unlink(path);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    fclose(f);
    return bk_cfg_load(path, -1, sets, nsets, err);
}

static const char *SEC =
    "node.id=1\n"
    "process.roles=broker,controller\n"
    "listeners=PLAINTEXT://127.0.0.1:1,SSL://127.0.0.1:2,SASL_PLAINTEXT://127.0.0.1:3,"
    "SASL_SSL://127.0.0.1:4,CONTROLLER://127.0.0.1:5\n"
    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
    "SASL_SSL:SASL_SSL,CONTROLLER:SSL\n"
    "controller.listener.names=CONTROLLER\n"
    "controller.quorum.voters=1@127.0.0.1:5\n";

START_TEST(test_four_protocols) {
    char text[4096];
    snprintf(text, sizeof text, "%sssl.keystore.location=/k.pem\n", SEC);
    bk_cfg_err_t err;
    bk_cfg_t *cfg = load_text(text, NULL, 0, &err);
    ck_assert_msg(cfg != NULL, "%s", err.msg);
    size_t n = 0;
    const bk_cfg_listener_t *ls = bk_cfg_listeners(cfg, &n);
    ck_assert_uint_eq(n, 5);
    ck_assert_int_eq(ls[0].security, BK_CFG_SEC_PLAINTEXT);
    ck_assert_int_eq(ls[1].security, BK_CFG_SEC_SSL);
    ck_assert_int_eq(ls[2].security, BK_CFG_SEC_SASL_PLAINTEXT);
    ck_assert_int_eq(ls[3].security, BK_CFG_SEC_SASL_SSL);
    ck_assert_int_eq(ls[4].security, BK_CFG_SEC_SSL);
    ck_assert_str_eq(bk_cfg_security_name(ls[3].security), "SASL_SSL");
    const bk_cfg_listener_t *adv = bk_cfg_advertised(cfg, &n);
    ck_assert_uint_eq(n, 4);
    ck_assert_int_eq(adv[1].security, BK_CFG_SEC_SSL);
    bk_cfg_free(cfg);
}
END_TEST

START_TEST(test_listener_overrides) {
    char text[4096];
    snprintf(text, sizeof text,
             "%s"
             "ssl.keystore.location=/top.pem\n"
             "listener.name.controller.ssl.client.auth=required\n"
             "listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
             "required username=\"a\" password=\"b\" user_a=\"b\";\n"
             "listener.name.x.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256\n"
             "listener.name.SSL.ssl.keystore.location=/ssl.pem\n",
             SEC);
    bk_cfg_err_t err;
    const char *sets[] = { "listener.name.ssl.ssl.truststore.location=/set.pem" };
    bk_cfg_t *cfg = load_text(text, sets, 1, &err);
    ck_assert_msg(cfg != NULL, "%s", err.msg);
    ck_assert_str_eq(bk_cfg_listener_str(cfg, "CONTROLLER", "ssl.client.auth"), "required");
    ck_assert_str_eq(bk_cfg_listener_str(cfg, "SSL", "ssl.client.auth"), "none"); /* Kafka's default */
    ck_assert_str_eq(bk_cfg_listener_str(cfg, "SSL", "ssl.keystore.location"), "/ssl.pem");
    ck_assert_str_eq(bk_cfg_listener_str(cfg, "ssl", "ssl.keystore.location"), "/ssl.pem");
    ck_assert_str_eq(bk_cfg_listener_str(cfg, "SASL_SSL", "ssl.keystore.location"), "/top.pem");
    ck_assert_str_eq(bk_cfg_listener_str(cfg, "SSL", "ssl.truststore.location"), "/set.pem");
    ck_assert_ptr_null(bk_cfg_listener_str(cfg, "SASL_SSL", "ssl.truststore.location"));
    ck_assert_ptr_nonnull(strstr(bk_cfg_listener_str(cfg, "SASL_SSL", "plain.sasl.jaas.config"), "user_a=\"b\""));
    ck_assert_ptr_null(bk_cfg_listener_str(cfg, "SSL", "plain.sasl.jaas.config"));
    ck_assert_str_eq(bk_cfg_listener_str(cfg, "X", "sasl.enabled.mechanisms"), "PLAIN,SCRAM-SHA-256");
    ck_assert_str_eq(bk_cfg_listener_str(cfg, "SSL", "sasl.enabled.mechanisms"), "GSSAPI");
    ck_assert_str_eq(bk_cfg_listener_str(cfg, "SSL", "num.io.threads"), "8");
    bk_cfg_free(cfg);
}
END_TEST

static void expect_fail(const char *extra, const char *want) {
    char text[4096];
    snprintf(text, sizeof text, "%sssl.keystore.location=/k.pem\n%s", SEC, extra);
    bk_cfg_err_t err;
    bk_cfg_t *cfg = load_text(text, NULL, 0, &err);
    ck_assert_msg(cfg == NULL, "accepted: %s", extra);
    ck_assert_msg(strstr(err.msg, want) != NULL, "got '%s', want '%s'", err.msg, want);
}

START_TEST(test_listener_override_errors) {
    expect_fail("listener.name.ssl.ssl.bogus=1\n", ":8: listener.name.ssl.ssl.bogus=1: unknown key 'ssl.bogus' (after listener.name.ssl.)");
    expect_fail("listener.name.ssl=1\n", "expected listener.name.<listener>.<key>");
    expect_fail("listener.name.s-l.ssl.client.auth=none\n", "expected listener.name.<listener>.<key>");
    expect_fail("listener.name.ssl.ssl.client.auth=sometimes\n", ":8: listener.name.ssl.ssl.client.auth=sometimes");
    expect_fail("listener.name.ssl.ssl.client.auth=none\nlistener.name.SSL.ssl.client.auth=none\n",
                ":9: duplicate key");
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("config_listener");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_four_protocols);
    tcase_add_test(tc, test_listener_overrides);
    tcase_add_test(tc, test_listener_override_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
