/* Unit tests for protocol/sasl.c: PLAIN tokens, SCRAM-SHA-256 against RFC
 * 7677's test vector (both sides reproduce every message byte for byte),
 * SCRAM-SHA-512 client <-> server exchanges with RFC 5802's structure
 * (gs2 header, saslname escapes, nonce continuation, channel binding), and
 * every way a token can be malformed or a proof wrong. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_base64.h"
#include "protocol/kp_sasl.h"

#define S(x) (x), strlen(x)

/* RFC 7677 section 3 */
static const char *V_CF = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
static const char *V_CNONCE = "rOprNGfwEbeRWgbNEkqO";
static const char *V_SNONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
static const char *V_SF = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                          "s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
static const char *V_CFIN = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                            "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
static const char *V_SFIN = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

static kp_scram_cred_t vector_cred(void) {
    uint8_t salt[64];
    size_t sl;
    ck_assert_int_eq(kp_b64_decode(S("W22ZaJ0SNY7soEsUEjb6gQ=="), salt, sizeof salt, &sl), KP_OK);
    kp_scram_cred_t c;
    ck_assert_int_eq(kp_scram_cred_from_password(KP_SASL_MECH_SCRAM_SHA_256, "pencil", salt, sl, 4096, &c), KP_OK);
    return c;
}

START_TEST(test_rfc7677_server) {
    kp_scram_cred_t cred = vector_cred();
    kp_scram_server_t s;
    kp_scram_server_init(&s, KP_SASL_MECH_SCRAM_SHA_256);
    ck_assert_int_eq(kp_scram_server_client_first(&s, S(V_CF)), KP_OK);
    ck_assert_str_eq(s.user, "user");
    uint8_t out[1024];
    size_t n;
    ck_assert_int_eq(kp_scram_server_first(&s, &cred, S(V_SNONCE), out, sizeof out, &n), KP_OK);
    ck_assert_uint_eq(n, strlen(V_SF));
    ck_assert(memcmp(out, V_SF, n) == 0);
    ck_assert_int_eq(kp_scram_server_final(&s, &cred, S(V_CFIN), out, sizeof out, &n), KP_OK);
    ck_assert_uint_eq(n, strlen(V_SFIN));
    ck_assert(memcmp(out, V_SFIN, n) == 0);
}
END_TEST

START_TEST(test_rfc7677_client) {
    kp_scram_client_t c;
    uint8_t out[1024];
    size_t n;
    ck_assert_int_eq(kp_scram_client_first(&c, KP_SASL_MECH_SCRAM_SHA_256, "user", S(V_CNONCE), out, sizeof out, &n), KP_OK);
    ck_assert_uint_eq(n, strlen(V_CF));
    ck_assert(memcmp(out, V_CF, n) == 0);
    ck_assert_int_eq(kp_scram_client_final(&c, "pencil", S(V_SF), out, sizeof out, &n), KP_OK);
    ck_assert_uint_eq(n, strlen(V_CFIN));
    ck_assert(memcmp(out, V_CFIN, n) == 0);
    ck_assert_int_eq(kp_scram_client_verify(&c, S(V_SFIN)), KP_OK);
}
END_TEST

START_TEST(test_rfc7677_wrong_password) {
    /* the vector's proof against a credential made from another password */
    uint8_t salt[64];
    size_t sl;
    ck_assert_int_eq(kp_b64_decode(S("W22ZaJ0SNY7soEsUEjb6gQ=="), salt, sizeof salt, &sl), KP_OK);
    kp_scram_cred_t cred;
    ck_assert_int_eq(kp_scram_cred_from_password(KP_SASL_MECH_SCRAM_SHA_256, "pencil2", salt, sl, 4096, &cred), KP_OK);
    kp_scram_server_t s;
    kp_scram_server_init(&s, KP_SASL_MECH_SCRAM_SHA_256);
    ck_assert_int_eq(kp_scram_server_client_first(&s, S(V_CF)), KP_OK);
    uint8_t out[1024];
    size_t n = 7;
    ck_assert_int_eq(kp_scram_server_first(&s, &cred, S(V_SNONCE), out, sizeof out, &n), KP_OK);
    ck_assert_int_eq(kp_scram_server_final(&s, &cred, S(V_CFIN), out, sizeof out, &n), KP_ERR_CORRUPT);
    /* a client whose server signature does not match */
    kp_scram_client_t c;
    ck_assert_int_eq(kp_scram_client_first(&c, KP_SASL_MECH_SCRAM_SHA_256, "user", S(V_CNONCE), out, sizeof out, &n), KP_OK);
    ck_assert_int_eq(kp_scram_client_final(&c, "pencil", S(V_SF), out, sizeof out, &n), KP_OK);
    ck_assert_int_eq(kp_scram_client_verify(&c, S("v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")), KP_ERR_CORRUPT);
    ck_assert_int_eq(kp_scram_client_verify(&c, S("e=invalid-proof")), KP_ERR_BAD_VALUE); /* step done */
}
END_TEST

/* A full exchange between our client and our server. */
static int exchange(kp_sasl_mech_t mech, const char *user, const char *pw_client,
                    const char *pw_server, int32_t iters, char *server_user) {
    uint8_t salt[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
    kp_scram_cred_t cred;
    ck_assert_int_eq(kp_scram_cred_from_password(mech, pw_server, salt, sizeof salt, iters, &cred), KP_OK);
    kp_scram_client_t c;
    kp_scram_server_t s;
    uint8_t m1[1024], m2[1024], m3[1024], m4[1024];
    size_t n1, n2, n3, n4;
    ck_assert_int_eq(kp_scram_client_first(&c, mech, user, S("clientnonce123"), m1, sizeof m1, &n1), KP_OK);
    kp_scram_server_init(&s, mech);
    int st = kp_scram_server_client_first(&s, m1, n1);
    if (st) return st;
    strcpy(server_user, s.user);
    st = kp_scram_server_first(&s, &cred, S("servernonce456"), m2, sizeof m2, &n2);
    if (st) return st;
    st = kp_scram_client_final(&c, pw_client, m2, n2, m3, sizeof m3, &n3);
    if (st) return st;
    st = kp_scram_server_final(&s, &cred, m3, n3, m4, sizeof m4, &n4);
    if (st) return st;
    return kp_scram_client_verify(&c, m4, n4);
}

START_TEST(test_exchange_sha512_and_escapes) {
    char u[256];
    ck_assert_int_eq(exchange(KP_SASL_MECH_SCRAM_SHA_512, "al,ice=x", "pw", "pw", 4096, u), KP_OK);
    ck_assert_str_eq(u, "al,ice=x");
    ck_assert_int_eq(exchange(KP_SASL_MECH_SCRAM_SHA_512, "bob", "bad", "pw", 4096, u), KP_ERR_CORRUPT);
    ck_assert_int_eq(exchange(KP_SASL_MECH_SCRAM_SHA_256, "bob", "pw", "pw", 8192, u), KP_OK);
    /* below the minimum: the server never offers it (the client's refusal
     * is in test_server_first_parse_client) */
    ck_assert_int_eq(exchange(KP_SASL_MECH_SCRAM_SHA_256, "bob", "pw", "pw", 4095, u), KP_ERR_BAD_VALUE);
}
END_TEST

START_TEST(test_client_first_parse) {
    kp_scram_server_t s;
    struct { const char *msg; int st; const char *user; } cases[] = {
        { "n,,n=user,r=abcdefgh", KP_OK, "user" },
        { "y,,n=user,r=abcdefgh", KP_OK, "user" },
        { "n,a=user,n=user,r=abcdefgh", KP_OK, "user" },
        { "n,a=other,n=user,r=abcdefgh", KP_ERR_BAD_VALUE, NULL },
        { "n,,n=a=2Cb=3Dc,r=abcdefgh", KP_OK, "a,b=c" },
        { "n,,n=a=2Xb,r=abcdefgh", KP_ERR_BAD_VALUE, NULL },
        { "n,,n=a=2,r=abcdefgh", KP_ERR_BAD_VALUE, NULL },
        { "n,,n=user,r=abcdefgh,tokenauth=true", KP_OK, "user" },
        { "p=tls-unique,,n=user,r=abc", KP_ERR_UNSUPPORTED, NULL },
        { "n,,m=x,n=user,r=abc", KP_ERR_UNSUPPORTED, NULL },
        { "n,,n=,r=abcdefgh", KP_ERR_BAD_VALUE, NULL },
        { "n,,n=user", KP_ERR_BAD_VALUE, NULL },
        { "n,,n=user,r=", KP_ERR_BAD_VALUE, NULL },
        { "n,,n=user,r=ab,cd", KP_ERR_BAD_VALUE, NULL },
        { "n,,n=user,r=abc,", KP_ERR_BAD_VALUE, NULL },
        { "x,,n=user,r=abc", KP_ERR_BAD_VALUE, NULL },
        { "n,,r=abc,n=user", KP_ERR_BAD_VALUE, NULL },
        { "", KP_ERR_BAD_VALUE, NULL },
        { "n,", KP_ERR_BAD_VALUE, NULL },
        { "n,,", KP_ERR_BAD_VALUE, NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kp_scram_server_init(&s, KP_SASL_MECH_SCRAM_SHA_256);
        int st = kp_scram_server_client_first(&s, S(cases[i].msg));
        ck_assert_msg(st == cases[i].st, "case %zu '%s': %d", i, cases[i].msg, st);
        if (cases[i].user) ck_assert_str_eq(s.user, cases[i].user);
    }
    kp_scram_server_init(&s, KP_SASL_MECH_SCRAM_SHA_256);
    ck_assert_int_eq(kp_scram_server_client_first(&s, "n,,n=u\0x,r=abc", 14), KP_ERR_BAD_VALUE);
    char big[KP_SCRAM_MSG_MAX + 10];
    memset(big, 'a', sizeof big);
    ck_assert_int_eq(kp_scram_server_client_first(&s, big, sizeof big), KP_ERR_TOO_LARGE);
    /* a long name is refused, not cut */
    char lname[600];
    int k = snprintf(lname, sizeof lname, "n,,n=");
    memset(lname + k, 'x', 300);
    strcpy(lname + k + 300, ",r=abcdefgh");
    ck_assert_int_eq(kp_scram_server_client_first(&s, S(lname)), KP_ERR_TOO_LARGE);
}
END_TEST

START_TEST(test_client_final_parse) {
    kp_scram_cred_t cred = vector_cred();
    const char *bad[] = {
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",            /* no proof */
        "c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",                          /* c= "y,," */
        "c=biws,r=rOprNGfwEbeRWgbNEkqO,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", /* nonce */
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", /* cut */
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzb",     /* short proof */
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=!!!!",     /* not b64 */
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=,x=1",                      /* after p= */
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,c=biws,"
        "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",                          /* order */
        "garbage",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kp_scram_server_t s;
        kp_scram_server_init(&s, KP_SASL_MECH_SCRAM_SHA_256);
        ck_assert_int_eq(kp_scram_server_client_first(&s, S(V_CF)), KP_OK);
        uint8_t out[1024];
        size_t n;
        ck_assert_int_eq(kp_scram_server_first(&s, &cred, S(V_SNONCE), out, sizeof out, &n), KP_OK);
        int st = kp_scram_server_final(&s, &cred, S(bad[i]), out, sizeof out, &n);
        ck_assert_msg(st == KP_ERR_BAD_VALUE, "case %zu: %d", i, st);
    }
    /* librdkafka 2.0's client-final repeats the client nonce in front: the
     * proof covers the bytes as sent, so it does not verify here, but the
     * message is well formed (not BAD_VALUE) */
    {
        kp_scram_server_t s2;
        kp_scram_server_init(&s2, KP_SASL_MECH_SCRAM_SHA_256);
        ck_assert_int_eq(kp_scram_server_client_first(&s2, S(V_CF)), KP_OK);
        uint8_t o2[1024];
        size_t n2;
        ck_assert_int_eq(kp_scram_server_first(&s2, &cred, S(V_SNONCE), o2, sizeof o2, &n2), KP_OK);
        const char *dbl = "c=biws,r=rOprNGfwEbeRWgbNEkqOrOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                          "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
        ck_assert_int_eq(kp_scram_server_final(&s2, &cred, S(dbl), o2, sizeof o2, &n2), KP_ERR_CORRUPT);
    }
    /* a step out of order */
    kp_scram_server_t s;
    kp_scram_server_init(&s, KP_SASL_MECH_SCRAM_SHA_256);
    uint8_t out[64];
    size_t n;
    ck_assert_int_eq(kp_scram_server_final(&s, &cred, S(V_CFIN), out, sizeof out, &n), KP_ERR_BAD_VALUE);
    /* a credential under the minimum iterations is never offered */
    kp_scram_cred_t weak = cred;
    weak.iterations = 1000;
    ck_assert_int_eq(kp_scram_server_client_first(&s, S(V_CF)), KP_OK);
    ck_assert_int_eq(kp_scram_server_first(&s, &weak, S(V_SNONCE), out, sizeof out, &n), KP_ERR_BAD_VALUE);
}
END_TEST

START_TEST(test_server_first_parse_client) {
    const char *bad[] = {
        "r=otherNonce123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",  /* not our nonce */
        "r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", /* nothing added */
        "r=rOprNGfwEbeRWgbNEkqOxx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1000",
        "r=rOprNGfwEbeRWgbNEkqOxx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=99999999",
        "r=rOprNGfwEbeRWgbNEkqOxx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4x96",
        "r=rOprNGfwEbeRWgbNEkqOxx,s=W22Za,i=4096",
        "r=rOprNGfwEbeRWgbNEkqOxx,i=4096",
        "e=other-error",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kp_scram_client_t c;
        uint8_t out[1024];
        size_t n;
        ck_assert_int_eq(kp_scram_client_first(&c, KP_SASL_MECH_SCRAM_SHA_256, "user", S(V_CNONCE), out, sizeof out, &n), KP_OK);
        ck_assert_msg(kp_scram_client_final(&c, "pencil", S(bad[i]), out, sizeof out, &n) == KP_ERR_BAD_VALUE, "case %zu", i);
    }
}
END_TEST

START_TEST(test_plain) {
    kp_sasl_plain_t p;
    ck_assert_int_eq(kp_sasl_plain_parse("\0alice\0secret", 13, &p), KP_OK);
    ck_assert(kp_slice_eq_cstr(p.user, "alice"));
    ck_assert(kp_slice_eq_cstr(p.password, "secret"));
    ck_assert_int_eq(kp_sasl_plain_parse("alice\0alice\0secret", 18, &p), KP_OK);
    ck_assert_int_eq(kp_sasl_plain_parse("bob\0alice\0secret", 16, &p), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(kp_sasl_plain_parse("\0alice\0", 7, &p), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(kp_sasl_plain_parse("\0\0secret", 8, &p), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(kp_sasl_plain_parse("\0alice\0sec\0ret", 14, &p), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(kp_sasl_plain_parse("alicesecret", 11, &p), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(kp_sasl_plain_parse("", 0, &p), KP_ERR_BAD_VALUE);
    uint8_t buf[64];
    size_t n;
    ck_assert_int_eq(kp_sasl_plain_build("alice", "secret", buf, sizeof buf, &n), KP_OK);
    ck_assert_uint_eq(n, 13);
    ck_assert(memcmp(buf, "\0alice\0secret", 13) == 0);
    ck_assert_int_eq(kp_sasl_plain_build("alice", "secret", buf, 12, &n), KP_ERR_OVERFLOW);
    ck_assert_int_eq(kp_sasl_plain_build("", "secret", buf, sizeof buf, &n), KP_ERR_BAD_VALUE);
    char *big = calloc(1, KP_SASL_TOKEN_MAX + 10);
    ck_assert_int_eq(kp_sasl_plain_parse(big, KP_SASL_TOKEN_MAX + 1, &p), KP_ERR_TOO_LARGE);
    free(big);
}
END_TEST

START_TEST(test_mechs_b64_ct) {
    kp_sasl_mech_t m;
    ck_assert_int_eq(kp_sasl_mech_parse(kp_slice_cstr("SCRAM-SHA-512"), &m), KP_OK);
    ck_assert_int_eq(m, KP_SASL_MECH_SCRAM_SHA_512);
    ck_assert_int_eq(kp_sasl_mech_parse(kp_slice_cstr("GSSAPI"), &m), KP_ERR_UNSUPPORTED);
    ck_assert_int_eq(kp_sasl_mech_parse(kp_slice_cstr("plain"), &m), KP_ERR_UNSUPPORTED);
    ck_assert_str_eq(kp_sasl_mech_name(KP_SASL_MECH_SCRAM_SHA_256), "SCRAM-SHA-256");
    ck_assert_int_eq(kp_sasl_mech_from_scram_type(2, &m), KP_OK);
    ck_assert_int_eq(m, KP_SASL_MECH_SCRAM_SHA_512);
    ck_assert_int_eq(kp_sasl_mech_from_scram_type(0, &m), KP_ERR_UNSUPPORTED);
    ck_assert_int_eq(kp_sasl_mech_scram_type(KP_SASL_MECH_SCRAM_SHA_256), 1);
    char out[32];
    size_t n;
    ck_assert_int_eq(kp_b64_encode((const uint8_t *)"n,,", 3, out, sizeof out, &n), KP_OK);
    ck_assert_str_eq(out, "biws");
    ck_assert_int_eq(kp_b64_encode((const uint8_t *)"ab", 2, out, sizeof out, &n), KP_OK);
    ck_assert_str_eq(out, "YWI=");
    ck_assert_int_eq(kp_b64_encode((const uint8_t *)"ab", 2, out, 4, &n), KP_ERR_OVERFLOW);
    uint8_t d[8];
    ck_assert_int_eq(kp_b64_decode(S("YWI="), d, sizeof d, &n), KP_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(kp_b64_decode(S("YWJ="), d, sizeof d, &n), KP_ERR_BAD_VALUE); /* stray bits */
    ck_assert_int_eq(kp_b64_decode(S("Y=I="), d, sizeof d, &n), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(kp_b64_decode(S("YWI"), d, sizeof d, &n), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(kp_b64_decode(S("YWJjZGVmZ2g="), d, 4, &n), KP_ERR_OVERFLOW);
    ck_assert(kp_sasl_ct_equal("abc", 3, "abc", 3));
    ck_assert(!kp_sasl_ct_equal("abc", 3, "abd", 3));
    ck_assert(!kp_sasl_ct_equal("abc", 3, "ab", 2));
    char esc[32];
    ck_assert_int_eq(kp_scram_name_escape(S("a,b=c"), esc, sizeof esc, &n), KP_OK);
    ck_assert_str_eq(esc, "a=2Cb=3Dc");
    ck_assert_int_eq(kp_scram_name_escape(S("a,b=c"), esc, 9, &n), KP_ERR_OVERFLOW);
    ck_assert_int_eq(kp_scram_nonce_make((const uint8_t *)"abcdef", 6, out, sizeof out, &n), KP_OK);
    ck_assert_uint_eq(n, 8);
}
END_TEST

START_TEST(test_cred_check_password) {
    uint8_t salt[4] = { 9, 9, 9, 9 };
    kp_scram_cred_t c;
    ck_assert_int_eq(kp_scram_cred_from_password(KP_SASL_MECH_SCRAM_SHA_512, "s3cret", salt, 4, 4096, &c), KP_OK);
    ck_assert(kp_scram_cred_check_password(&c, "s3cret"));
    ck_assert(!kp_scram_cred_check_password(&c, "s3cre"));
    /* from a salted password (AlterUserScramCredentials' form) the same keys */
    uint8_t salted[64];
    ck_assert_int_eq(kp_scram_salted_password(KP_SASL_MECH_SCRAM_SHA_512, "s3cret", 6, salt, 4, 4096, salted), KP_OK);
    kp_scram_cred_t d;
    ck_assert_int_eq(kp_scram_cred_from_salted(KP_SASL_MECH_SCRAM_SHA_512, salted, 64, salt, 4, 4096, &d), KP_OK);
    ck_assert(memcmp(c.stored_key, d.stored_key, 64) == 0);
    ck_assert(memcmp(c.server_key, d.server_key, 64) == 0);
    ck_assert_int_eq(kp_scram_cred_from_salted(KP_SASL_MECH_SCRAM_SHA_512, salted, 32, salt, 4, 4096, &d), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(kp_scram_cred_from_salted(KP_SASL_MECH_SCRAM_SHA_512, salted, 64, salt, 0, 4096, &d), KP_ERR_BAD_VALUE);
}
END_TEST

int main(void) {
    Suite *s = suite_create("sasl");
    TCase *tc = tcase_create("sasl");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_rfc7677_server);
    tcase_add_test(tc, test_rfc7677_client);
    tcase_add_test(tc, test_rfc7677_wrong_password);
    tcase_add_test(tc, test_exchange_sha512_and_escapes);
    tcase_add_test(tc, test_client_first_parse);
    tcase_add_test(tc, test_client_final_parse);
    tcase_add_test(tc, test_server_first_parse_client);
    tcase_add_test(tc, test_plain);
    tcase_add_test(tc, test_mechs_b64_ct);
    tcase_add_test(tc, test_cred_check_password);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
