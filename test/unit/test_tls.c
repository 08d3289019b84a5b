/* Unit tests for broker/net/tls.c: Kafka/IANA cipher names -> OpenSSL's,
 * contexts from gen-certs.sh's PEM files (encrypted key, wrong password,
 * key not matching), reload keeping the old context, principal mapping of a
 * real handshake's certificate. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "broker/net/tls.h"

START_TEST(test_cipher_map) {
    char t12[512], t13[512], err[256];
    ck_assert_int_eq(bk_net_tls_cipher_map("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, TLS_AES_128_GCM_SHA256,"
                                           "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
                                           t12, sizeof t12, t13, sizeof t13, err, sizeof err), 0);
    ck_assert_str_eq(t12, "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305");
    ck_assert_str_eq(t13, "TLS_AES_128_GCM_SHA256");
    /* OpenSSL's own names are accepted too */
    ck_assert_int_eq(bk_net_tls_cipher_map("ECDHE-RSA-AES128-GCM-SHA256", t12, sizeof t12, t13, sizeof t13, err,
                                           sizeof err), 0);
    ck_assert_str_eq(t12, "ECDHE-RSA-AES128-GCM-SHA256");
    ck_assert_str_eq(t13, "");
    ck_assert_int_eq(bk_net_tls_cipher_map("", t12, sizeof t12, t13, sizeof t13, err, sizeof err), 0);
    ck_assert_str_eq(t12, "");
    ck_assert_int_eq(bk_net_tls_cipher_map("TLS_RSA_WITH_NOTHING", t12, sizeof t12, t13, sizeof t13, err,
                                           sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "unknown cipher suite 'TLS_RSA_WITH_NOTHING'"));
    char tiny[8];
    ck_assert_int_eq(bk_net_tls_cipher_map("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", tiny, sizeof tiny, t13,
                                           sizeof t13, err, sizeof err), -1);
}
END_TEST

static char dir[128];

static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/skiff-tls-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char cmd[512];
    snprintf(cmd, sizeof cmd, "bash etc/gen-certs.sh %s >/dev/null 2>&1", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void teardown(void) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) { /* a temp dir left behind */ }
}

static bk_net_tls_t *server(const char *ks, const char *pw, const char *rules, char *err, size_t len) {
    char k[256], ca[256];
    snprintf(k, sizeof k, "%s/%s", dir, ks);
    snprintf(ca, sizeof ca, "%s/ca.crt", dir);
    bk_net_tls_config_t c = { .listener = "SSL", .keystore_location = k, .key_password = pw,
                              .truststore_location = ca, .client_auth = BK_NET_TLS_AUTH_REQUIRED,
                              .principal_rules = rules };
    return bk_net_tls_new(&c, false, err, len);
}

START_TEST(test_contexts) {
    char err[512];
    bk_net_tls_t *t = server("node-1.pem", NULL, NULL, err, sizeof err);
    ck_assert_msg(t != NULL, "%s", err);
    bk_net_tls_free(t);
    char pw[64] = "";
    char path[256];
    snprintf(path, sizeof path, "%s/key-password.txt", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(pw, sizeof pw, f));
    fclose(f);
    pw[strcspn(pw, "\n")] = '\0';
    t = server("node-1-enc.pem", pw, NULL, err, sizeof err);
    ck_assert_msg(t != NULL, "%s", err);
    bk_net_tls_free(t);
    ck_assert_ptr_null(server("node-1-enc.pem", "wrong", NULL, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "wrong ssl.key.password"));
    ck_assert_ptr_null(server("node-1-enc.pem", NULL, NULL, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "without ssl.key.password"));
    ck_assert_ptr_null(server("missing.pem", NULL, NULL, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "missing.pem"));
    ck_assert_ptr_null(server("node-1.pem", NULL, "RULE:(", err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "ssl.principal.mapping.rules"));
    /* a key store whose key is another certificate's */
    char cmd[768];
    snprintf(cmd, sizeof cmd, "cat %s/node-1.crt %s/node-2.key > %s/mixed.pem", dir, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_ptr_null(server("mixed.pem", NULL, NULL, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "does not match"));
}
END_TEST

START_TEST(test_reload_keeps_old) {
    char err[512];
    bk_net_tls_t *t = server("node-1.pem", NULL, NULL, err, sizeof err);
    ck_assert_ptr_nonnull(t);
    SSL_CTX *before = bk_net_tls_ctx(t);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp %s/node-1.pem %s/keep.pem && echo junk > %s/node-1.pem", dir, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(bk_net_tls_reload(t, err, sizeof err), -1);
    ck_assert_ptr_eq(bk_net_tls_ctx(t), before);
    snprintf(cmd, sizeof cmd, "cp %s/keep.pem %s/node-1.pem", dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(bk_net_tls_reload(t, err, sizeof err), 0);
    ck_assert_ptr_ne(bk_net_tls_ctx(t), before);
    bk_net_tls_free(t);
}
END_TEST

/* A handshake in memory between a client context with client.pem and the
 * server: the server's principal is the mapped subject. */
static void handshake_principal(const char *rules, const char *want) {
    char err[512];
    bk_net_tls_t *s = server("node-1.pem", NULL, rules, err, sizeof err);
    ck_assert_msg(s != NULL, "%s", err);
    char k[256], ca[256];
    snprintf(k, sizeof k, "%s/client.pem", dir);
    snprintf(ca, sizeof ca, "%s/ca.crt", dir);
    bk_net_tls_config_t cc = { .listener = "client", .keystore_location = k, .truststore_location = ca };
    bk_net_tls_t *c = bk_net_tls_new(&cc, true, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    SSL *ss = SSL_new(bk_net_tls_ctx(s)), *cs = SSL_new(bk_net_tls_ctx(c));
    BIO *b1, *b2;
    ck_assert_int_eq(BIO_new_bio_pair(&b1, 0, &b2, 0), 1);
    SSL_set_bio(ss, b1, b1);
    SSL_set_bio(cs, b2, b2);
    SSL_set_accept_state(ss);
    SSL_set_connect_state(cs);
    int done_s = 0, done_c = 0;
    for (int i = 0; i < 20 && !(done_s && done_c); i++) {
        if (!done_c) done_c = SSL_do_handshake(cs) == 1;
        if (!done_s) done_s = SSL_do_handshake(ss) == 1;
    }
    ck_assert(done_s && done_c);
    char p[256];
    int rc = bk_net_tls_principal(s, ss, p, sizeof p);
    if (want) {
        ck_assert_int_eq(rc, 0);
        ck_assert_str_eq(p, want);
    } else {
        ck_assert_int_eq(rc, -1);
        ck_assert_str_eq(p, "CN=client,O=skiff"); /* the subject, for the log line */
    }
    SSL_free(ss);
    SSL_free(cs);
    bk_net_tls_free(s);
    bk_net_tls_free(c);
}

START_TEST(test_principal_from_certificate) {
    handshake_principal(NULL, "User:CN=client,O=skiff");
    handshake_principal("RULE:^CN=([^,]+),O=skiff$/$1/", "User:client");
    handshake_principal("RULE:^CN=nobody,.*$/x/", NULL);
}
END_TEST

int main(void) {
    Suite *s = suite_create("tls");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_cipher_map);
    tcase_add_test(tc, test_contexts);
    tcase_add_test(tc, test_reload_keeps_old);
    tcase_add_test(tc, test_principal_from_certificate);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
