/* libFuzzer target: skiffctl's --command-config properties file
 * (cl_props_parse), bytes as read from a file.
 *
 * Properties: the parser reads only buf[0..len) (the input is copied into
 * an allocation of exactly that size, so ASan sees any over-read); a refused
 * file gives a "FILE:..." message; an accepted one has valid enums,
 * NUL-terminated fields, and what its protocol needs (SASL: a mechanism, a
 * user, a password); written back as a properties file it parses to the
 * same settings (a fixed point). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clients/cl_props.h"

static void must(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_cl_props: %s\n", what);
        abort();
    }
}

static int terminated(const char *f) { return memchr(f, '\0', CL_PROPS_VALUE_BYTES) != NULL; }

/* Appends "key=value\n" when value is not empty. */
static size_t put(char *buf, size_t cap, size_t at, const char *key, const char *val) {
    if (!val[0]) return at;
    int n = snprintf(buf + at, cap - at, "%s=%s\n", key, val);
    must(n > 0 && (size_t)n < cap - at, "write-back buffer too small");
    return at + (size_t)n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 2 * CL_PROPS_LINE_MAX_BYTES) return 0;
    char *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    if (size) memcpy(buf, data, size);
    cl_sec_t s;
    cl_err_t e;
    cl_err_clear(&e);
    int rc = cl_props_parse(buf, size, "f.conf", &s, &e);
    free(buf);
    if (rc != CL_OK) {
        must(rc == CL_E_USAGE, "refusal is not a usage error");
        must(strncmp(e.msg, "f.conf", 6) == 0, "refusal does not name the file");
        return 0;
    }
    must(s.protocol >= CL_SEC_PLAINTEXT && s.protocol <= CL_SEC_SASL_SSL, "bad protocol");
    must(s.mechanism >= CL_SASL_NONE && s.mechanism <= CL_SASL_SCRAM_SHA_512, "bad mechanism");
    const char *fields[] = { s.username, s.password, s.ca_location, s.cert_location, s.key_location,
                             s.key_password, s.admin_username, s.admin_password };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) must(terminated(fields[i]), "unterminated field");
    if (cl_sec_sasl(&s))
        must(s.mechanism != CL_SASL_NONE && s.username[0] && s.password[0], "SASL without what it needs");
    else
        must(s.mechanism == CL_SASL_NONE && !s.username[0] && !s.password[0], "SASL keys without SASL");
    /* write back and parse again: same settings */
    static char out[16 * CL_PROPS_VALUE_BYTES];
    size_t at = 0;
    at = put(out, sizeof out, at, "security.protocol", cl_sec_proto_name(s.protocol));
    at = put(out, sizeof out, at, "sasl.mechanism", cl_sasl_mech_name(s.mechanism));
    at = put(out, sizeof out, at, "sasl.username", s.username);
    at = put(out, sizeof out, at, "sasl.password", s.password);
    at = put(out, sizeof out, at, "ssl.ca.location", s.ca_location);
    at = put(out, sizeof out, at, "ssl.certificate.location", s.cert_location);
    at = put(out, sizeof out, at, "ssl.key.location", s.key_location);
    at = put(out, sizeof out, at, "ssl.key.password", s.key_password);
    if (cl_sec_tls(&s))
        at = put(out, sizeof out, at, "ssl.endpoint.identification.algorithm", s.verify_hostname ? "https" : "none");
    at = put(out, sizeof out, at, "admin.username", s.admin_username);
    at = put(out, sizeof out, at, "admin.password", s.admin_password);
    cl_sec_t s2;
    rc = cl_props_parse(out, at, "g.conf", &s2, &e);
    must(rc == CL_OK, e.msg);
    must(s.protocol == s2.protocol && s.mechanism == s2.mechanism && s.verify_hostname == s2.verify_hostname,
         "write-back parses to different settings");
    const char *fields2[] = { s2.username, s2.password, s2.ca_location, s2.cert_location, s2.key_location,
                              s2.key_password, s2.admin_username, s2.admin_password };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        must(strcmp(fields[i], fields2[i]) == 0, "write-back parses to a different value");
    return 0;
}
