/* Unit tests for clients/cl_props.c: the --command-config properties file
 * (librdkafka's key names, FILE:LINE errors, cross-key checks, bounds). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clients/cl_props.h"

static int parse_str(const char *text, cl_sec_t *s, cl_err_t *e) {
    cl_err_clear(e);
    return cl_props_parse(text, strlen(text), "p.conf", s, e);
}

/* Asserts that `text` is refused and the message starts with `prefix` and
 * contains `needle`. */
static void refused(const char *text, const char *prefix, const char *needle) {
    cl_sec_t s;
    cl_err_t e;
    ck_assert_int_eq(parse_str(text, &s, &e), CL_E_USAGE);
    ck_assert_msg(strncmp(e.msg, prefix, strlen(prefix)) == 0, "'%s' does not start with '%s'", e.msg, prefix);
    ck_assert_msg(strstr(e.msg, needle) != NULL, "'%s' lacks '%s'", e.msg, needle);
}

START_TEST(test_props_defaults) {
    cl_sec_t s;
    cl_err_t e;
    ck_assert_int_eq(parse_str("", &s, &e), CL_OK);
    ck_assert_int_eq(s.protocol, CL_SEC_PLAINTEXT);
    ck_assert_int_eq(s.mechanism, CL_SASL_NONE);
    ck_assert(s.verify_hostname);
    ck_assert_str_eq(s.username, "");
    ck_assert(!cl_sec_tls(&s));
    ck_assert(!cl_sec_sasl(&s));
    ck_assert(!cl_sec_tls(NULL));
    ck_assert_int_eq(parse_str("# only a comment\n\n   \n! bang comment\r\n", &s, &e), CL_OK);
    ck_assert_int_eq(s.protocol, CL_SEC_PLAINTEXT);
}
END_TEST

START_TEST(test_props_full_sasl_ssl) {
    const char *text =
        "# client.properties\n"
        "security.protocol = SASL_SSL\r\n"
        "  sasl.mechanisms=scram-sha-512\n"
        "sasl.username=alice\n"
        "sasl.password= p=ss word \n"
        "ssl.ca.location=/etc/ca.pem\n"
        "ssl.certificate.location=/etc/client.pem\n"
        "ssl.key.location=/etc/client.key\n"
        "ssl.key.password=secret\n"
        "ssl.endpoint.identification.algorithm=none\n"
        "admin.username=root\n"
        "admin.password=toor";  /* no final newline */
    cl_sec_t s;
    cl_err_t e;
    ck_assert_int_eq(parse_str(text, &s, &e), CL_OK);
    ck_assert_int_eq(s.protocol, CL_SEC_SASL_SSL);
    ck_assert(cl_sec_tls(&s));
    ck_assert(cl_sec_sasl(&s));
    ck_assert_int_eq(s.mechanism, CL_SASL_SCRAM_SHA_512);
    ck_assert_str_eq(s.username, "alice");
    ck_assert_str_eq(s.password, "p=ss word"); /* split at the first '=', trimmed */
    ck_assert_str_eq(s.ca_location, "/etc/ca.pem");
    ck_assert_str_eq(s.cert_location, "/etc/client.pem");
    ck_assert_str_eq(s.key_location, "/etc/client.key");
    ck_assert_str_eq(s.key_password, "secret");
    ck_assert(!s.verify_hostname);
    ck_assert_str_eq(s.admin_username, "root");
    ck_assert_str_eq(s.admin_password, "toor");
}
END_TEST

START_TEST(test_props_each_protocol) {
    static const struct { const char *v; cl_sec_proto_t p; } cases[] = {
        { "plaintext", CL_SEC_PLAINTEXT }, { "PLAINTEXT", CL_SEC_PLAINTEXT }, { "ssl", CL_SEC_SSL },
        { "Ssl", CL_SEC_SSL }, { "sasl_plaintext", CL_SEC_SASL_PLAINTEXT }, { "sasl_ssl", CL_SEC_SASL_SSL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[256];
        bool sasl = cases[i].p == CL_SEC_SASL_PLAINTEXT || cases[i].p == CL_SEC_SASL_SSL;
        snprintf(text, sizeof text, "security.protocol=%s\n%s", cases[i].v,
                 sasl ? "sasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=p\n" : "");
        cl_sec_t s;
        cl_err_t e;
        ck_assert_msg(parse_str(text, &s, &e) == CL_OK, "%s: %s", cases[i].v, e.msg);
        ck_assert_int_eq(s.protocol, cases[i].p);
        ck_assert_str_eq(cl_sec_proto_name(s.protocol), cl_sec_proto_name(cases[i].p));
    }
    ck_assert_str_eq(cl_sec_proto_name(CL_SEC_SASL_SSL), "SASL_SSL");
    ck_assert_int_eq(cl_sasl_mech_parse("plain"), CL_SASL_PLAIN);
    ck_assert_int_eq(cl_sasl_mech_parse("SCRAM-SHA-256"), CL_SASL_SCRAM_SHA_256);
    ck_assert_int_eq(cl_sasl_mech_parse("GSSAPI"), CL_SASL_NONE);
    ck_assert_str_eq(cl_sasl_mech_name(CL_SASL_SCRAM_SHA_512), "SCRAM-SHA-512");
}
END_TEST

START_TEST(test_props_errors_name_file_and_line) {
    refused("security.protocol=ssl\nbootstrap.servers=x:1\n", "p.conf:2:", "unknown key 'bootstrap.servers'");
    refused("\n\nsecurity.protocol=tls\n", "p.conf:3:", "'tls' is not one of");
    refused("security.protocol=sasl_ssl\nsasl.mechanism=GSSAPI\n", "p.conf:2:", "'GSSAPI'");
    refused("security.protocol=ssl\nssl.endpoint.identification.algorithm=strict\n", "p.conf:2:", "https, none");
    refused("just some words\n", "p.conf:1:", "expected key=value");
    refused(" = value\n", "p.conf:1:", "empty key");
    refused("security.protocol=ssl\nssl.ca.location=\n", "p.conf:2:", "empty value");
    refused("sasl.jaas.config=org.apache...\n", "p.conf:1:", "sasl.username");
    refused("security.protocol=ssl\nssl.truststore.location=/x.jks\n", "p.conf:2:",
            "unknown key 'ssl.truststore.location' (Java's name; use ssl.ca.location");
    refused("ssl.keystore.location=/x.jks\n", "p.conf:1:", "use ssl.certificate.location and ssl.key.location");
    /* what a protocol needs */
    refused("security.protocol=sasl_plaintext\nsasl.username=u\nsasl.password=p\n", "p.conf:1:",
            "needs sasl.mechanism");
    refused("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=u\n", "p.conf:1:",
            "needs sasl.username and sasl.password");
    /* keys the protocol would ignore */
    refused("sasl.username=u\n", "p.conf:1:", "security.protocol is PLAINTEXT");
    refused("security.protocol=ssl\n\nsasl.mechanism=PLAIN\n", "p.conf:3:", "(no SASL)");
    refused("security.protocol=sasl_plaintext\nsasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=p\n"
            "ssl.certificate.location=/c\nssl.key.location=/k\n", "p.conf:5:", "(no TLS)");
    /* pairs */
    refused("security.protocol=ssl\nssl.certificate.location=/c\n", "p.conf:2:", "ssl.key.location");
    refused("security.protocol=ssl\n#\nssl.key.location=/k\n", "p.conf:3:", "ssl.certificate.location");
    refused("admin.password=x\n", "p.conf:1:", "admin.username and admin.password");
    /* bytes */
    cl_sec_t s;
    cl_err_t e;
    ck_assert_int_eq(cl_props_parse("a=b\0c\n", 6, "n.conf", &s, &e), CL_E_USAGE);
    ck_assert_ptr_nonnull(strstr(e.msg, "n.conf:1: NUL"));
}
END_TEST

START_TEST(test_props_bounds) {
    cl_sec_t s;
    cl_err_t e;
    /* a value of exactly CL_PROPS_VALUE_BYTES - 1 fits; one more does not */
    size_t vmax = CL_PROPS_VALUE_BYTES - 1;
    char *text = malloc(64 + CL_PROPS_VALUE_BYTES);
    ck_assert_ptr_nonnull(text);
    int n = snprintf(text, 64, "security.protocol=ssl\nssl.ca.location=");
    memset(text + n, 'x', vmax);
    text[n + (int)vmax] = '\0';
    ck_assert_int_eq(parse_str(text, &s, &e), CL_OK);
    ck_assert_uint_eq(strlen(s.ca_location), vmax);
    memset(text + n, 'x', vmax + 1);
    text[n + (int)vmax + 1] = '\0';
    ck_assert_int_eq(parse_str(text, &s, &e), CL_E_USAGE);
    ck_assert_ptr_nonnull(strstr(e.msg, "p.conf:2: ssl.ca.location: value longer than"));
    free(text);
    /* a line over the bound */
    size_t big = CL_PROPS_LINE_MAX_BYTES + 10;
    char *line = malloc(big + 1);
    ck_assert_ptr_nonnull(line);
    memset(line, '#', big);
    line[big] = '\0';
    ck_assert_int_eq(parse_str(line, &s, &e), CL_E_USAGE);
    ck_assert_ptr_nonnull(strstr(e.msg, "p.conf:1: line longer than"));
    free(line);
    /* a file over the bound is refused before it is read */
    ck_assert_int_eq(cl_props_parse("", CL_PROPS_FILE_MAX_BYTES + 1, "big.conf", &s, &e), CL_E_USAGE);
    ck_assert_ptr_nonnull(strstr(e.msg, "big.conf: larger than"));
}
END_TEST

START_TEST(test_props_load_file) {
    char path[] = "/tmp/test_cl_props_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const char *text = "security.protocol=ssl\nssl.ca.location=/x/ca.pem\nfoo=bar\n";
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    cl_sec_t s;
    cl_err_t e;
    cl_err_clear(&e);
    ck_assert_int_eq(cl_props_load(path, &s, &e), CL_E_USAGE);
    char want[128];
    snprintf(want, sizeof want, "%s:3: unknown key 'foo'", path);
    ck_assert_str_eq(e.msg, want);
    unlink(path);
    ck_assert_int_eq(cl_props_load(path, &s, &e), CL_E_USAGE);
    ck_assert_ptr_nonnull(strstr(e.msg, "No such file"));
}
END_TEST

int main(void) {
    Suite *su = suite_create("cl_props");
    TCase *tc = tcase_create("props");
    tcase_add_test(tc, test_props_defaults);
    tcase_add_test(tc, test_props_full_sasl_ssl);
    tcase_add_test(tc, test_props_each_protocol);
    tcase_add_test(tc, test_props_errors_name_file_and_line);
    tcase_add_test(tc, test_props_bounds);
    tcase_add_test(tc, test_props_load_file);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
