/* Unit tests for protocol/crc32c.c: RFC 3720 known answers for every
 * implementation (portable, SSE4.2 3-way, AVX-512 VPCLMULQDQ where the CPU has
 * them), cross-checks against a bit-at-a-time reference over random lengths
 * and alignments (covering interleaved blocks and the fold paths), and chained
 * updates. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_crc32c.h"

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

/* Independent oracle: the textbook bitwise loop of the reflected polynomial. */
static uint32_t crc_bitwise(uint32_t crc, const uint8_t *p, size_t n) {
    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++) crc = (crc & 1) ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
    }
    return ~crc;
}

static void check_kat(crc_fn f) {
    uint8_t zeros[32], ones[32], inc[32], dec[32];
    memset(zeros, 0, 32);
    memset(ones, 0xff, 32);
    for (int i = 0; i < 32; i++) {
        inc[i] = (uint8_t)i;
        dec[i] = (uint8_t)(31 - i);
    }
    ck_assert_uint_eq(f(0, zeros, 32), 0x8A9136AAu);
    ck_assert_uint_eq(f(0, ones, 32), 0x62A8AB43u);
    ck_assert_uint_eq(f(0, inc, 32), 0x46DD794Eu);
    ck_assert_uint_eq(f(0, dec, 32), 0x113FDB5Cu);
    ck_assert_uint_eq(f(0, "123456789", 9), 0xE3069283u);
    ck_assert_uint_eq(f(0, "", 0), 0);
}

START_TEST(test_kat_portable) { check_kat(kp_crc32c_portable); }
END_TEST

START_TEST(test_kat_hw) {
    if (!kp_crc32c_have_hw()) return; /* nothing to test on this CPU */
    check_kat(kp_crc32c_hw);
}
END_TEST

START_TEST(test_kat_sse42_and_vpclmul) {
    if (kp_crc32c_have_hw()) check_kat(kp_crc32c_sse42);
    if (kp_crc32c_have_vpclmul()) check_kat(kp_crc32c_vpclmul);
}
END_TEST

START_TEST(test_kat_dispatch) { check_kat(kp_crc32c); }
END_TEST

/* Every hardware path this CPU has, for the random and chained checks. */
static crc_fn hw_paths[3];
static int n_hw_paths(void) {
    int n = 0;
    if (kp_crc32c_have_hw()) {
        hw_paths[n++] = kp_crc32c_hw;
        hw_paths[n++] = kp_crc32c_sse42;
    }
    if (kp_crc32c_have_vpclmul()) hw_paths[n++] = kp_crc32c_vpclmul;
    return n;
}

static uint8_t *random_buf(size_t n, unsigned seed) {
    uint8_t *b = malloc(n);
    ck_assert_ptr_nonnull(b);
    srand(seed);
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)rand();
    return b;
}

START_TEST(test_random_lengths_match_reference) {
    const size_t max = 3 * 4096 * 3 + 100; /* several interleaved rounds + tail */
    uint8_t *buf = random_buf(max + 16, 7);
    srand(11);
    for (int i = 0; i < 300; i++) {
        size_t off = (size_t)rand() % 16;
        size_t n = i < 40 ? (size_t)i : (size_t)rand() % max;
        if (i == 41) n = 3 * 4096;
        if (i == 42) n = 3 * 4096 - 1;
        if (i == 43) n = 6 * 4096 + 7;
        if (i >= 44 && i < 60) n = 240 + (size_t)(i - 44) * 17; /* around the 256 / 512 byte switches */
        uint32_t want = crc_bitwise(0, buf + off, n);
        ck_assert_uint_eq(kp_crc32c_portable(0, buf + off, n), want);
        for (int k = 0, np = n_hw_paths(); k < np; k++) ck_assert_uint_eq(hw_paths[k](0, buf + off, n), want);
        ck_assert_uint_eq(kp_crc32c(0, buf + off, n), want);
    }
    free(buf);
}
END_TEST

/* Every length across the fold paths' switch points (256 bytes per chain,
 * 64-byte and 16-byte tails), each against the portable result. */
START_TEST(test_every_length_near_fold_boundaries) {
    uint8_t *buf = random_buf(4200, 13);
    for (size_t n = 200; n < 4200; n += (n < 1400 ? 1 : 61)) {
        uint32_t want = kp_crc32c_portable(0x12345678u, buf + 3, n - 3);
        for (int k = 0, np = n_hw_paths(); k < np; k++) ck_assert_uint_eq(hw_paths[k](0x12345678u, buf + 3, n - 3), want);
    }
    free(buf);
}
END_TEST

START_TEST(test_chained_updates) {
    const size_t n = 40000;
    uint8_t *buf = random_buf(n, 3);
    uint32_t whole = crc_bitwise(0, buf, n);
    size_t cuts[] = { 0, 1, 7, 8, 4095, 4096, 12288, 12289, 20000, 39999, 40000 };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        size_t c = cuts[i];
        ck_assert_uint_eq(kp_crc32c_portable(kp_crc32c_portable(0, buf, c), buf + c, n - c), whole);
        ck_assert_uint_eq(kp_crc32c(kp_crc32c(0, buf, c), buf + c, n - c), whole);
        for (int k = 0, np = n_hw_paths(); k < np; k++)
            ck_assert_uint_eq(hw_paths[k](hw_paths[k](0, buf, c), buf + c, n - c), whole);
    }
    /* byte at a time through the dispatcher */
    uint32_t crc = 0;
    for (size_t i = 0; i < 5000; i++) crc = kp_crc32c(crc, buf + i, 1);
    ck_assert_uint_eq(crc, crc_bitwise(0, buf, 5000));
    free(buf);
}
END_TEST

START_TEST(test_single_bit_flip_changes_crc) {
    uint8_t *buf = random_buf(13000, 5);
    uint32_t base = kp_crc32c(0, buf, 13000);
    for (size_t i = 0; i < 13000; i += 97) {
        buf[i] ^= 0x10;
        ck_assert_uint_ne(kp_crc32c(0, buf, 13000), base);
        buf[i] ^= 0x10;
    }
    free(buf);
}
END_TEST

START_TEST(test_impl_name) {
    const char *name = kp_crc32c_impl_name();
    ck_assert_str_eq(name, kp_crc32c_have_vpclmul() ? "avx512-vpclmulqdq"
                           : kp_crc32c_have_hw()    ? "sse4.2"
                                                    : "portable");
    if (kp_crc32c_have_vpclmul()) ck_assert(kp_crc32c_have_hw());
}
END_TEST

int main(void) {
    Suite *s = suite_create("crc32c");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_kat_portable);
    tcase_add_test(tc, test_kat_hw);
    tcase_add_test(tc, test_kat_sse42_and_vpclmul);
    tcase_add_test(tc, test_kat_dispatch);
    tcase_add_test(tc, test_random_lengths_match_reference);
    tcase_add_test(tc, test_every_length_near_fold_boundaries);
    tcase_add_test(tc, test_chained_updates);
    tcase_add_test(tc, test_single_bit_flip_changes_crc);
    tcase_add_test(tc, test_impl_name);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
