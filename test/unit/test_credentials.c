/* Unit tests for broker/core/credentials.c on a node context built from a
 * config file (no listener is bound): mechanisms per listener (override,
 * GSSAPI dropped, refusals), PLAIN users from the jaas forms, super.users,
 * the node check's rules, SCRAM lookups from the image and the fake
 * credential of an unknown user (stable per name, different per name), and
 * bk_node_cred_check over both sources; the bootstrap spec parser. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/config/config.h"
#include "broker/core/credentials.h"
#include "broker/core/node.h"
#include "test/unit/cfg_test_util.h"

static const char *SASL_BASE =
    "node.id=1\n"
    "process.roles=broker,controller\n"
    "listeners=SASL_PLAINTEXT://127.0.0.1:29092,CLIENT2://127.0.0.1:29093,CONTROLLER://127.0.0.1:29192\n"
    "listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CLIENT2:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT\n"
    "controller.listener.names=CONTROLLER\n"
    "controller.quorum.voters=1@127.0.0.1:29192\n";

static bk_cfg_t *load(const char *extra) {
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s%s\nlog.dirs=%s/data\n", SASL_BASE, extra, dir);
    fclose(f);
    bk_cfg_err_t err;
    bk_cfg_t *cfg = bk_cfg_load(path, -1, NULL, 0, &err);
    ck_assert_msg(cfg != NULL, "%s", err.msg);
    return cfg;
}

static int init(bk_node_t *n, bk_cfg_t *cfg, char *err, size_t len) {
    memset(n, 0, sizeof *n);
    n->cfg = cfg;
    n->id = 1;
    bk_meta_image_init(&n->img, 1);
    return bk_node_sasl_init(n, false, err, len);
}

static void fini(bk_node_t *n, bk_cfg_t *cfg) {
    bk_node_sasl_free(n);
    bk_meta_image_free(&n->img);
    bk_cfg_free(cfg);
}

#define JAAS(users) "org.apache.kafka.common.security.plain.PlainLoginModule required " users ";"

START_TEST(test_mechanisms_and_plain) {
    cfg_tmp_setup("cred");
    bk_cfg_t *cfg = load("sasl.enabled.mechanisms=SCRAM-SHA-512,GSSAPI\n"
                         "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,OAUTHBEARER\n"
                         "listener.name.sasl_plaintext.plain.sasl.jaas.config=" JAAS("user_alice=\"a-pw\"") "\n"
                         "sasl.jaas.config=" JAAS("user_bob=\"b-pw\"") "\n"
                         "super.users=User:admin; User:CN=node,O=skiff\n");
    bk_node_t n;
    char err[512] = "";
    ck_assert_msg(init(&n, cfg, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(bk_node_sasl_mechs(&n, "SASL_PLAINTEXT"),
                      (1u << KP_SASL_MECH_PLAIN) | (1u << KP_SASL_MECH_SCRAM_SHA_256));
    ck_assert_uint_eq(bk_node_sasl_mechs(&n, "CLIENT2"), 1u << KP_SASL_MECH_SCRAM_SHA_512);
    ck_assert_uint_eq(bk_node_sasl_mechs(&n, "CONTROLLER"), 0);
    const char *names[3];
    ck_assert_uint_eq(bk_node_sasl_mech_names(&n, "SASL_PLAINTEXT", names), 2);
    ck_assert_str_eq(names[0], "PLAIN");
    /* the per-listener PLAIN jaas wins; CLIENT2 (no PLAIN) checks nothing */
    ck_assert(bk_node_sasl_plain_check(&n, "SASL_PLAINTEXT", "alice", "a-pw"));
    ck_assert(!bk_node_sasl_plain_check(&n, "SASL_PLAINTEXT", "alice", "a-pX"));
    ck_assert(!bk_node_sasl_plain_check(&n, "SASL_PLAINTEXT", "bob", "b-pw"));
    ck_assert(!bk_node_sasl_plain_check(&n, "CLIENT2", "bob", "b-pw"));
    ck_assert(!bk_node_sasl_plain_check(&n, "SASL_PLAINTEXT", "nobody", "a-pw"));
    /* super.users: entries trimmed; a certificate subject with commas */
    ck_assert(bk_node_is_super_user(&n, "User:admin"));
    ck_assert(bk_node_is_super_user(&n, "User:CN=node,O=skiff"));
    ck_assert(!bk_node_is_super_user(&n, "User:CN=node"));
    ck_assert(!bk_node_is_super_user(&n, "User:ANONYMOUS"));
    /* cred_check: jaas users of every SASL listener (bob is CLIENT2's via sasl.jaas.config) */
    ck_assert(bk_node_cred_check(&n, "alice", "a-pw"));
    ck_assert(bk_node_cred_check(&n, "bob", "b-pw"));
    ck_assert(!bk_node_cred_check(&n, "bob", ""));
    ck_assert(!bk_node_cred_check(&n, "", "b-pw"));
    fini(&n, cfg);
    teardown();
}
END_TEST

START_TEST(test_refusals) {
    const char *bad[] = {
        "sasl.enabled.mechanisms=GSSAPI\n",
        "sasl.enabled.mechanisms=PLAIN,MD5\n" "sasl.jaas.config=" JAAS("user_a=\"b\"") "\n",
        "sasl.enabled.mechanisms=PLAIN\n",                                     /* no users */
        "sasl.enabled.mechanisms=PLAIN\n" "sasl.jaas.config=X required user_a=\"b\"\n", /* no ';' */
        "sasl.enabled.mechanisms=SCRAM-SHA-256\n" "super.users=admin\n",
    };
    const char *want[] = { "holds no mechanism", "unknown mechanism 'MD5'", "no PLAIN users", "at character",
                           "not of the form User:" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cfg_tmp_setup("cred");
        bk_cfg_t *cfg = load(bad[i]);
        bk_node_t n;
        char err[512] = "";
        ck_assert_int_eq(init(&n, cfg, err, sizeof err), -1);
        ck_assert_msg(strstr(err, want[i]) != NULL, "case %zu: %s", i, err);
        fini(&n, cfg);
        teardown();
    }
}
END_TEST

static int apply_cred(bk_meta_image_t *img, int64_t off, const char *name, kp_sasl_mech_t mech, const char *pw) {
    uint8_t salt[32];
    memset(salt, 7, sizeof salt);
    kp_scram_cred_t c;
    ck_assert_int_eq(kp_scram_cred_from_password(mech, pw, salt, sizeof salt, 4096, &c), KP_OK);
    size_t kl = kp_scram_hash_len(mech);
    Skiff__Metadata__UserScramCredential u = SKIFF__METADATA__USER_SCRAM_CREDENTIAL__INIT;
    u.name = (char *)name;
    u.has_mechanism = true; u.mechanism = kp_sasl_mech_scram_type(mech);
    u.has_iterations = true; u.iterations = 4096;
    u.has_salt = true; u.salt.data = salt; u.salt.len = sizeof salt;
    u.has_stored_key = true; u.stored_key.data = c.stored_key; u.stored_key.len = kl;
    u.has_server_key = true; u.server_key.data = c.server_key; u.server_key.len = kl;
    Skiff__Metadata__MetadataRecord r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_USER_SCRAM_CREDENTIAL;
    r.user_scram_credential = &u;
    return bk_meta_image_apply(img, &r, off);
}

START_TEST(test_scram_lookup_and_fake) {
    cfg_tmp_setup("cred");
    bk_cfg_t *cfg = load("sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512\n");
    bk_node_t n;
    char err[512] = "";
    ck_assert_msg(init(&n, cfg, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(apply_cred(&n.img, 0, "carol", KP_SASL_MECH_SCRAM_SHA_512, "c-pw"), KP_OK);
    kp_scram_cred_t a, b, c2;
    bool known;
    bk_node_scram_lookup(&n, "carol", KP_SASL_MECH_SCRAM_SHA_512, &a, &known);
    ck_assert(known);
    ck_assert(kp_scram_cred_check_password(&a, "c-pw"));
    bk_node_scram_lookup(&n, "carol", KP_SASL_MECH_SCRAM_SHA_256, &a, &known);
    ck_assert(!known);                                  /* no SHA-256 credential: fake */
    bk_node_scram_lookup(&n, "ghost", KP_SASL_MECH_SCRAM_SHA_256, &b, &known);
    ck_assert(!known);
    bk_node_scram_lookup(&n, "ghost", KP_SASL_MECH_SCRAM_SHA_256, &c2, &known);
    ck_assert(memcmp(&b, &c2, sizeof b) == 0);          /* stable per name */
    ck_assert(memcmp(a.salt, b.salt, 32) != 0);         /* different per name */
    ck_assert_uint_eq(b.salt_len, 32);
    ck_assert_int_eq(b.iterations, 4096);
    ck_assert(bk_node_cred_check(&n, "carol", "c-pw"));
    ck_assert(!bk_node_cred_check(&n, "carol", "c-pX"));
    ck_assert(!bk_node_cred_check(&n, "ghost", "anything"));
    /* an empty super.users admits every principal on a SASL listener (logged at start) */
    ck_assert(!bk_node_is_super_user(&n, "User:carol"));
    fini(&n, cfg);
    teardown();
}
END_TEST

START_TEST(test_bootstrap_spec) {
    char name[KP_SASL_NAME_MAX + 1], err[256];
    kp_scram_cred_t c;
    ck_assert_int_eq(bk_node_scram_parse_spec("SCRAM-SHA-256=[name=admin,password=admin-secret]", name, sizeof name, &c, err, sizeof err), 0);
    ck_assert_str_eq(name, "admin");
    ck_assert_int_eq(c.iterations, 4096);
    ck_assert_uint_eq(c.salt_len, 32);
    ck_assert(kp_scram_cred_check_password(&c, "admin-secret"));
    ck_assert_int_eq(bk_node_scram_parse_spec("SCRAM-SHA-512=[name=\"a,b\",password=\"p,w\",iterations=8192,salt=c2FsdA==]",
                                              name, sizeof name, &c, err, sizeof err), 0);
    ck_assert_str_eq(name, "a,b");
    ck_assert_int_eq(c.iterations, 8192);
    ck_assert_uint_eq(c.salt_len, 4);
    ck_assert(memcmp(c.salt, "salt", 4) == 0);
    ck_assert(kp_scram_cred_check_password(&c, "p,w"));
    const char *bad[] = {
        "SCRAM-SHA-1=[name=a,password=b]", "SCRAM-SHA-256=[name=a]", "SCRAM-SHA-256=[password=b]",
        "SCRAM-SHA-256=[name=a,password=b,iterations=100]", "SCRAM-SHA-256=[name=a,password=b,colour=red]",
        "SCRAM-SHA-256=name=a,password=b", "SCRAM-SHA-256=[name=a,password=b,salt=!!]",
        "SCRAM-SHA-256=[name=a,saltedpassword=AAAA,salt=c2FsdA==]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(bk_node_scram_parse_spec(bad[i], name, sizeof name, &c, err, sizeof err) == -1, "%s", bad[i]);
}
END_TEST

int main(void) {
    (void)BASE;   /* cfg_test_util.h's PLAINTEXT node: these tests need SASL listeners */
    Suite *s = suite_create("credentials");
    TCase *tc = tcase_create("credentials");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_mechanisms_and_plain);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_scram_lookup_and_fake);
    tcase_add_test(tc, test_bootstrap_spec);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
