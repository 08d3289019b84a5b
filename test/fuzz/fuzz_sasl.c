/* libFuzzer target: the SASL token parsers of protocol/kp_sasl.h, i.e.
 * every byte a client (or, for the client side, a server) can send during
 * SaslAuthenticate: PLAIN tokens, SCRAM client-first and client-final (server
 * side), SCRAM server-first and server-final (client side), base64 and
 * saslname unescaping.
 *
 * Input: byte 0 picks the parser, byte 1 splits the rest into two tokens.
 * Properties: an accepted PLAIN token has non-empty parts inside the input
 * and, without authzid, rebuilds byte for byte; an accepted client-first
 * gives a name that escapes and unescapes to itself; a fuzzed client-final
 * never verifies against a credential the input could not know; base64
 * decode -> encode is a fixed point; every status is one of the documented
 * ones. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_base64.h"
#include "protocol/kp_sasl.h"

static void must(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_sasl: %s\n", what);
        abort();
    }
}

static int known(int st) {
    return st == KP_OK || st == KP_ERR_BAD_VALUE || st == KP_ERR_TOO_LARGE ||
           st == KP_ERR_UNSUPPORTED || st == KP_ERR_CORRUPT || st == KP_ERR_OVERFLOW;
}

static const kp_scram_cred_t *cred(kp_sasl_mech_t mech) {
    static kp_scram_cred_t c[2];
    static int made;
    if (!made) {
        const uint8_t salt[] = "fuzz-salt";
        must(kp_scram_cred_from_password(KP_SASL_MECH_SCRAM_SHA_256, "secret", salt, 9, 4096, &c[0]) == KP_OK, "cred");
        must(kp_scram_cred_from_password(KP_SASL_MECH_SCRAM_SHA_512, "secret", salt, 9, 4096, &c[1]) == KP_OK, "cred");
        made = 1;
    }
    return &c[mech == KP_SASL_MECH_SCRAM_SHA_512];
}

static void plain(const uint8_t *p, size_t n) {
    kp_sasl_plain_t v;
    int st = kp_sasl_plain_parse(p, n, &v);
    must(known(st), "plain status");
    if (st != KP_OK) return;
    must(v.user.len > 0 && v.password.len > 0, "empty part accepted");
    must(v.user.p >= p && v.user.p + v.user.len <= p + n, "user outside token");
    must(v.password.p + v.password.len == p + n, "password not at the end");
    if (v.authzid.len == 0) {
        char u[KP_SASL_NAME_MAX + 1], w[KP_SASL_PASSWORD_MAX + 1];
        memcpy(u, v.user.p, v.user.len); u[v.user.len] = 0;
        memcpy(w, v.password.p, v.password.len); w[v.password.len] = 0;
        uint8_t out[KP_SASL_TOKEN_MAX + 2];
        size_t len;
        must(kp_sasl_plain_build(u, w, out, sizeof out, &len) == KP_OK, "rebuild");
        must(len == n && memcmp(out, p, n) == 0, "rebuild differs");
    }
}

static void server(kp_sasl_mech_t mech, const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
    kp_scram_server_t s;
    kp_scram_server_init(&s, mech);
    int st = kp_scram_server_client_first(&s, a, an);
    must(known(st), "client-first status");
    if (st != KP_OK) return;
    must(s.user_len > 0 && s.user_len <= KP_SASL_NAME_MAX && strlen(s.user) == s.user_len, "user");
    char esc[KP_SASL_NAME_MAX * 3 + 1], back[KP_SASL_NAME_MAX + 1];
    size_t el, bl;
    must(kp_scram_name_escape(s.user, s.user_len, esc, sizeof esc, &el) == KP_OK, "escape");
    must(kp_scram_name_unescape(esc, el, back, sizeof back, &bl) == KP_OK, "unescape");
    must(bl == s.user_len && memcmp(back, s.user, bl) == 0, "escape round trip");
    uint8_t out[KP_SCRAM_MSG_MAX];
    size_t n;
    st = kp_scram_server_first(&s, cred(mech), "srvnonce", 8, out, sizeof out, &n);
    must(st == KP_OK || st == KP_ERR_TOO_LARGE || st == KP_ERR_OVERFLOW, "server-first");
    if (st != KP_OK) return;
    st = kp_scram_server_final(&s, cred(mech), b, bn, out, sizeof out, &n);
    must(known(st), "client-final status");
    must(st != KP_OK, "a fuzzed proof verified");
}

static void client(kp_sasl_mech_t mech, const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
    kp_scram_client_t c;
    uint8_t out[KP_SCRAM_MSG_MAX];
    size_t n;
    must(kp_scram_client_first(&c, mech, "user", "clientnonce", 11, out, sizeof out, &n) == KP_OK, "client-first");
    int st = kp_scram_client_final(&c, "secret", a, an, out, sizeof out, &n);
    must(known(st), "server-first status");
    if (st != KP_OK) return;
    st = kp_scram_client_verify(&c, b, bn);
    must(known(st), "server-final status");
}

static void b64(const uint8_t *p, size_t n) {
    uint8_t d[512];
    size_t dl;
    if (n > 600) return;
    if (kp_b64_decode((const char *)p, n, d, sizeof d, &dl) != KP_OK) return;
    char e[800];
    size_t el;
    must(kp_b64_encode(d, dl, e, sizeof e, &el) == KP_OK, "re-encode");
    must(el == n && memcmp(e, p, n) == 0, "base64 not a fixed point");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2 || size > KP_SASL_TOKEN_MAX + 64) return 0;
    uint8_t mode = data[0];
    const uint8_t *p = data + 2;
    size_t n = size - 2, cut = data[1] <= n ? data[1] : n;
    kp_sasl_mech_t mech = (mode & 1) ? KP_SASL_MECH_SCRAM_SHA_512 : KP_SASL_MECH_SCRAM_SHA_256;
    switch ((mode >> 1) % 5) {
    case 0: plain(p, n); break;
    case 1: server(mech, p, cut, p + cut, n - cut); break;
    case 2: client(mech, p, cut, p + cut, n - cut); break;
    case 3: b64(p, n); break;
    default: {
        char out[KP_SASL_NAME_MAX + 1];
        size_t ol;
        int st = kp_scram_name_unescape((const char *)p, n, out, sizeof out, &ol);
        must(known(st), "unescape status");
        if (st == KP_OK) must(ol <= n && strlen(out) == ol, "unescape length");
    }
    }
    return 0;
}
