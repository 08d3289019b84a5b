/* protocol/base64.c: RFC 4648's test vectors (section 10) in both forms,
 * OpenSSL's EVP_EncodeBlock as an independent oracle for the standard form,
 * round trips at every length, the strictness rules (one text per byte
 * string: every one-character change of a valid text either fails or
 * decodes to bytes that encode back to the changed text), bounds. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "protocol/kp_base64.h"

static int dec(const char *s, uint8_t *out, size_t cap, size_t *n) { return kp_b64_decode(s, strlen(s), out, cap, n); }
static int udec(const char *s, uint8_t *out, size_t cap, size_t *n) { return kp_b64url_decode(s, strlen(s), out, cap, n); }

typedef int (*enc_fn)(const uint8_t *, size_t, char *, size_t, size_t *);
typedef int (*dec_fn)(const char *, size_t, uint8_t *, size_t, size_t *);

/* raw encodes to text (of length want_len) and text decodes to raw. */
static void vector(enc_fn enc, dec_fn decode, const char *raw, const char *text, size_t want_len) {
    char out[16];
    uint8_t back[16];
    size_t n = 99, m = 99;
    size_t rl = strlen(raw);
    ck_assert_int_eq(enc((const uint8_t *)raw, rl, out, sizeof out, &n), KP_OK);
    ck_assert_str_eq(out, text);
    ck_assert_uint_eq(n, want_len);
    ck_assert_int_eq(decode(text, strlen(text), back, sizeof back, &m), KP_OK);
    ck_assert_uint_eq(m, rl);
    ck_assert_mem_eq(back, raw, rl);
}

START_TEST(test_rfc4648_vectors) {
    static const char *raw[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
    static const char *std[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };
    static const char *url[] = { "", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE", "Zm9vYmFy" };
    for (size_t i = 0; i < sizeof raw / sizeof raw[0]; i++) {
        vector(kp_b64_encode, kp_b64_decode, raw[i], std[i], KP_B64_LEN(strlen(raw[i])));
        vector(kp_b64url_encode, kp_b64url_decode, raw[i], url[i], KP_B64URL_LEN(strlen(raw[i])));
    }
}
END_TEST

/* Every length 0..200 of pseudo-random bytes (all 256 values): the standard
 * text equals OpenSSL's, the URL text is it with '-', '_' and no '=', and
 * both decode back. */
START_TEST(test_oracle_and_round_trip) {
    uint8_t in[200], back[200];
    char out[300], url[300];
    unsigned char ref[300];
    uint32_t x = 2463534242u;
    for (size_t len = 0; len <= sizeof in; len++) {
        for (size_t i = 0; i < len; i++) {
            x ^= x << 13; x ^= x >> 17; x ^= x << 5;
            in[i] = (uint8_t)x;
        }
        size_t n = 0, m = 0;
        ck_assert_int_eq(kp_b64_encode(in, len, out, sizeof out, &n), KP_OK);
        int rn = EVP_EncodeBlock(ref, in, (int)len);
        ck_assert_int_eq(rn, (int)n);
        ck_assert_mem_eq(out, ref, n);
        ck_assert_int_eq(kp_b64_decode(out, n, back, sizeof back, &m), KP_OK);
        ck_assert_uint_eq(m, len);
        ck_assert_mem_eq(back, in, len);
        size_t un = 0;
        ck_assert_int_eq(kp_b64url_encode(in, len, url, sizeof url, &un), KP_OK);
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (out[i] == '=') continue;
            ck_assert_int_eq(url[k], out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i]);
            k++;
        }
        ck_assert_uint_eq(k, un);
        ck_assert_int_eq(kp_b64url_decode(url, un, back, sizeof back, &m), KP_OK);
        ck_assert_uint_eq(m, len);
        ck_assert_mem_eq(back, in, len);
    }
}
END_TEST

START_TEST(test_malformed) {
    uint8_t d[16];
    size_t n;
    static const char *bad_std[] = {
        "Zg=",   "Zg",      "Z===",  "====",  "Zg==Zg==", "Zh==",  /* stray bits under padding */
        "Zm9=",  "Zm8=a===", "Z=9v", "Zm9v=", "Zm-v",     "Zm_v",  "Zm9 ", " Zm9",
        "Zm9\n", "Zm=v",
    };
    for (size_t i = 0; i < sizeof bad_std / sizeof bad_std[0]; i++)
        ck_assert_msg(dec(bad_std[i], d, sizeof d, &n) == KP_ERR_BAD_VALUE, "std '%s' accepted", bad_std[i]);
    static const char *bad_url[] = { "Z", "Zg==", "Zh", "Zm9", "Zm+v", "Zm/v", "Zm9vY", "Zm=v" };
    for (size_t i = 0; i < sizeof bad_url / sizeof bad_url[0]; i++)
        ck_assert_msg(udec(bad_url[i], d, sizeof d, &n) == KP_ERR_BAD_VALUE, "url '%s' accepted", bad_url[i]);
    /* a NUL inside the text is a character like any other: refused */
    ck_assert_int_eq(kp_b64_decode("Zm\0v", 4, d, sizeof d, &n), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(kp_b64url_decode("Zm\0v", 4, d, sizeof d, &n), KP_ERR_BAD_VALUE);
    /* bytes >= 0x80 */
    ck_assert_int_eq(kp_b64_decode("Zm\xc3v", 4, d, sizeof d, &n), KP_ERR_BAD_VALUE);
}
END_TEST

/* One text per byte string: change each character of a valid text to every
 * other byte; what still decodes must encode back to the changed text. */
START_TEST(test_one_text_per_value) {
    const char *texts[] = { "Zm9vYmE=", "Zg==", "AAECAwQFBgcICQoLDA0ODw==", "_-8" };
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        bool url = t == 3;
        size_t len = strlen(texts[t]);
        for (size_t i = 0; i < len; i++) {
            for (int c = 0; c < 256; c++) {
                char s[32], again[48];
                memcpy(s, texts[t], len);
                s[i] = (char)c;
                uint8_t d[32];
                size_t n = 0, m = 0;
                int rc = url ? kp_b64url_decode(s, len, d, sizeof d, &n) : kp_b64_decode(s, len, d, sizeof d, &n);
                if (rc != KP_OK) {
                    ck_assert_int_eq(rc, KP_ERR_BAD_VALUE);
                    continue;
                }
                rc = url ? kp_b64url_encode(d, n, again, sizeof again, &m) : kp_b64_encode(d, n, again, sizeof again, &m);
                ck_assert_int_eq(rc, KP_OK);
                ck_assert_uint_eq(m, len);
                ck_assert_mem_eq(again, s, len);
            }
        }
    }
}
END_TEST

START_TEST(test_bounds) {
    uint8_t d[8];
    char out[16];
    size_t n = 77;
    /* encode: room for the text and its NUL, or nothing written */
    memset(out, 'x', sizeof out);
    ck_assert_int_eq(kp_b64_encode((const uint8_t *)"ab", 2, out, 4, &n), KP_ERR_OVERFLOW);
    ck_assert_int_eq(out[0], 'x');
    ck_assert_uint_eq(n, 77);
    ck_assert_int_eq(kp_b64_encode((const uint8_t *)"ab", 2, out, 5, &n), KP_OK);
    ck_assert_str_eq(out, "YWI=");
    ck_assert_int_eq(kp_b64url_encode((const uint8_t *)"ab", 2, out, 3, &n), KP_ERR_OVERFLOW);
    ck_assert_int_eq(kp_b64url_encode((const uint8_t *)"ab", 2, out, 4, &n), KP_OK);
    ck_assert_str_eq(out, "YWI");
    ck_assert_int_eq(kp_b64_encode(NULL, 0, out, 1, &n), KP_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_str_eq(out, "");
    /* decode: output never passes cap */
    ck_assert_int_eq(dec("Zm9vYmFy", d, 5, &n), KP_ERR_OVERFLOW);
    ck_assert_int_eq(dec("Zm9vYmFy", d, 6, &n), KP_OK);
    ck_assert_uint_eq(n, 6);
    ck_assert_int_eq(dec("Zm9vYg==", d, 3, &n), KP_ERR_OVERFLOW);
    ck_assert_int_eq(dec("Zm9vYg==", d, 4, &n), KP_OK);
    ck_assert_int_eq(udec("Zm9vYg", d, 3, &n), KP_ERR_OVERFLOW);
    ck_assert_int_eq(udec("Zm9vYg", d, 4, &n), KP_OK);
    ck_assert_int_eq(dec("", NULL, 0, &n), KP_OK);
    ck_assert_uint_eq(n, 0);
    /* a 16-byte id is 22 URL characters (partition.metadata's topic_id) */
    ck_assert_uint_eq(KP_B64URL_LEN(16), 22);
    ck_assert_uint_eq(KP_B64_LEN(16), 24);
}
END_TEST

int main(void) {
    Suite *s = suite_create("base64");
    TCase *tc = tcase_create("base64");
    tcase_add_test(tc, test_rfc4648_vectors);
    tcase_add_test(tc, test_oracle_and_round_trip);
    tcase_add_test(tc, test_malformed);
    tcase_add_test(tc, test_one_text_per_value);
    tcase_add_test(tc, test_bounds);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
