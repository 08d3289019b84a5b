/* Unit tests for protocol/wire.c: every primitive round-trips, and every
 * malformed input (truncation, bad lengths, overlong varints) is an error. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_wire.h"

START_TEST(test_fixed_width_round_trip) {
    uint8_t buf[64];
    kp_wr_t w;
    kp_wr_init(&w, buf, sizeof buf);
    ck_assert_int_eq(kp_wr_i8(&w, -5), KP_OK);
    ck_assert_int_eq(kp_wr_i16(&w, -12345), KP_OK);
    ck_assert_int_eq(kp_wr_i32(&w, INT32_MIN), KP_OK);
    ck_assert_int_eq(kp_wr_i64(&w, INT64_MAX), KP_OK);
    ck_assert_int_eq(kp_wr_u16(&w, 65535), KP_OK);
    ck_assert_int_eq(kp_wr_u32(&w, 0xdeadbeef), KP_OK);
    ck_assert_int_eq(kp_wr_f64(&w, -2.5), KP_OK);
    ck_assert_int_eq(kp_wr_bool(&w, true), KP_OK);
    ck_assert_uint_eq(w.pos, 1 + 2 + 4 + 8 + 2 + 4 + 8 + 1);
    /* big-endian on the wire */
    ck_assert_uint_eq(buf[1], 0xcf);
    ck_assert_uint_eq(buf[2], 0xc7);

    kp_rd_t r;
    kp_rd_init(&r, buf, w.pos);
    int8_t a; int16_t b; int32_t c; int64_t d; uint16_t e; uint32_t f; double g; bool h;
    ck_assert_int_eq(kp_rd_i8(&r, &a), KP_OK);
    ck_assert_int_eq(kp_rd_i16(&r, &b), KP_OK);
    ck_assert_int_eq(kp_rd_i32(&r, &c), KP_OK);
    ck_assert_int_eq(kp_rd_i64(&r, &d), KP_OK);
    ck_assert_int_eq(kp_rd_u16(&r, &e), KP_OK);
    ck_assert_int_eq(kp_rd_u32(&r, &f), KP_OK);
    ck_assert_int_eq(kp_rd_f64(&r, &g), KP_OK);
    ck_assert_int_eq(kp_rd_bool(&r, &h), KP_OK);
    ck_assert_int_eq(a, -5);
    ck_assert_int_eq(b, -12345);
    ck_assert_int_eq(c, INT32_MIN);
    ck_assert(d == INT64_MAX);
    ck_assert_uint_eq(e, 65535);
    ck_assert_uint_eq(f, 0xdeadbeef);
    ck_assert(g == -2.5);
    ck_assert(h);
    ck_assert_uint_eq(kp_rd_remaining(&r), 0);
    ck_assert_int_eq(kp_rd_i8(&r, &a), KP_ERR_TRUNCATED);
}
END_TEST

START_TEST(test_zigzag_known_answers) {
    /* 0 -> 00, -1 -> 01, 1 -> 02, -2 -> 03, 300 -> d8 04 */
    struct { int32_t v; uint8_t enc[5]; size_t n; } cases[] = {
        { 0, { 0x00 }, 1 }, { -1, { 0x01 }, 1 }, { 1, { 0x02 }, 1 },
        { -2, { 0x03 }, 1 }, { 300, { 0xd8, 0x04 }, 2 },
        { INT32_MIN, { 0xff, 0xff, 0xff, 0xff, 0x0f }, 5 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t buf[8];
        kp_wr_t w;
        kp_wr_init(&w, buf, sizeof buf);
        ck_assert_int_eq(kp_wr_varint(&w, cases[i].v), KP_OK);
        ck_assert_uint_eq(w.pos, cases[i].n);
        ck_assert_uint_eq(kp_varint_size(cases[i].v), cases[i].n);
        ck_assert_mem_eq(buf, cases[i].enc, cases[i].n);
        kp_rd_t r;
        int32_t out;
        kp_rd_init(&r, buf, w.pos);
        ck_assert_int_eq(kp_rd_varint(&r, &out), KP_OK);
        ck_assert_int_eq(out, cases[i].v);
    }
}
END_TEST

START_TEST(test_varlong_extremes) {
    int64_t vals[] = { 0, 1, -1, INT64_MAX, INT64_MIN, 1234567890123LL };
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        uint8_t buf[16];
        kp_wr_t w;
        kp_wr_init(&w, buf, sizeof buf);
        ck_assert_int_eq(kp_wr_varlong(&w, vals[i]), KP_OK);
        ck_assert_uint_eq(w.pos, kp_varlong_size(vals[i]));
        kp_rd_t r;
        int64_t out;
        kp_rd_init(&r, buf, w.pos);
        ck_assert_int_eq(kp_rd_varlong(&r, &out), KP_OK);
        ck_assert(out == vals[i]);
    }
}
END_TEST

START_TEST(test_overlong_varint_rejected) {
    const uint8_t six[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 };
    const uint8_t big5[] = { 0xff, 0xff, 0xff, 0xff, 0x1f }; /* 33 bits */
    const uint8_t cut[] = { 0x80, 0x80 };
    kp_rd_t r;
    uint32_t v;
    kp_rd_init(&r, six, sizeof six);
    ck_assert_int_eq(kp_rd_uvarint(&r, &v), KP_ERR_BAD_VARINT);
    kp_rd_init(&r, big5, sizeof big5);
    ck_assert_int_eq(kp_rd_uvarint(&r, &v), KP_ERR_BAD_VARINT);
    kp_rd_init(&r, cut, sizeof cut);
    ck_assert_int_eq(kp_rd_uvarint(&r, &v), KP_ERR_TRUNCATED);
    /* sticky: a later good read still fails */
    uint8_t ok = 1;
    ck_assert_int_eq(kp_rd_uvarint(&r, &v), KP_ERR_TRUNCATED);
    (void)ok;
}
END_TEST

START_TEST(test_strings_null_empty_and_bounds) {
    uint8_t buf[64];
    kp_wr_t w;
    kp_wr_init(&w, buf, sizeof buf);
    ck_assert_int_eq(kp_wr_string(&w, kp_slice_null()), KP_OK);
    ck_assert_int_eq(kp_wr_string(&w, kp_slice_cstr("")), KP_OK);
    ck_assert_int_eq(kp_wr_compact_string(&w, kp_slice_cstr("abc")), KP_OK);
    ck_assert_int_eq(kp_wr_compact_bytes(&w, kp_slice_null()), KP_OK);
    ck_assert_int_eq(kp_wr_bytes(&w, kp_slice_cstr("xy")), KP_OK);

    kp_rd_t r;
    kp_str_t s;
    kp_rd_init(&r, buf, w.pos);
    ck_assert_int_eq(kp_rd_string(&r, true, &s), KP_OK);
    ck_assert(kp_slice_is_null(s));
    ck_assert_int_eq(kp_rd_string(&r, false, &s), KP_OK);
    ck_assert(!kp_slice_is_null(s));
    ck_assert_uint_eq(s.len, 0);
    ck_assert_int_eq(kp_rd_compact_string(&r, false, &s), KP_OK);
    ck_assert(kp_slice_eq_cstr(s, "abc"));
    ck_assert_int_eq(kp_rd_compact_bytes(&r, true, &s), KP_OK);
    ck_assert(kp_slice_is_null(s));
    ck_assert_int_eq(kp_rd_bytes(&r, false, &s), KP_OK);
    ck_assert(kp_slice_eq_cstr(s, "xy"));

    /* a null where null is not allowed */
    kp_rd_init(&r, buf, w.pos);
    ck_assert_int_eq(kp_rd_string(&r, false, &s), KP_ERR_BAD_LENGTH);
    /* a length past the end */
    const uint8_t longer[] = { 0x00, 0x09, 'a', 'b' };
    kp_rd_init(&r, longer, sizeof longer);
    ck_assert_int_eq(kp_rd_string(&r, true, &s), KP_ERR_TRUNCATED);
    /* a negative length other than -1 */
    const uint8_t neg[] = { 0xff, 0xff, 0xff, 0xfe };
    kp_rd_init(&r, neg, sizeof neg);
    ck_assert_int_eq(kp_rd_bytes(&r, true, &s), KP_ERR_BAD_LENGTH);
}
END_TEST

/* kp_slice_strdup: null -> "", a length-bounded copy (the input need not be
 * NUL-terminated). */
START_TEST(test_slice_strdup) {
    char *c = kp_slice_strdup(kp_slice_null());
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(c, "");
    free(c);
    static const uint8_t raw[] = { 'a', 'b', 'c', 'd' };
    kp_slice_t s = { raw, 3 };
    c = kp_slice_strdup(s);
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(c, "abc");
    free(c);
    /* an embedded NUL is refused, never cut: "a\0b" must not become "a" */
    static const uint8_t nul[] = { 'a', 0, 'b' };
    kp_slice_t sn = { nul, sizeof nul };
    ck_assert(kp_slice_has_nul(sn));
    ck_assert_ptr_null(kp_slice_strdup(sn));
    ck_assert(!kp_slice_has_nul(s));
    ck_assert(!kp_slice_has_nul(kp_slice_null()));
}
END_TEST

/* Writes a count prefix followed by `n` one-byte elements; returns the buffer. */
static uint8_t *array_frame(bool compact, int64_t n, size_t *len) {
    size_t cap = 8 + (size_t)n;
    uint8_t *buf = calloc(1, cap);
    ck_assert_ptr_nonnull(buf);
    kp_wr_t w;
    kp_wr_init(&w, buf, cap);
    int rc = compact ? kp_wr_uvarint(&w, (uint32_t)(n + 1)) : kp_wr_i32(&w, (int32_t)n);
    ck_assert_int_eq(rc, KP_OK);
    *len = w.pos + (size_t)n;
    return buf;
}

/* KP_ARRAY_COUNT_MAX holds even when the bytes are there: exactly the limit
 * passes, one more is BAD_LENGTH (not TRUNCATED: the input is long enough). */
START_TEST(test_array_count_limit) {
    for (int compact = 0; compact <= 1; compact++) {
        for (int64_t n = KP_ARRAY_COUNT_MAX; n <= KP_ARRAY_COUNT_MAX + 1; n++) {
            size_t len = 0;
            uint8_t *buf = array_frame(compact, n, &len);
            kp_rd_t r;
            kp_rd_init(&r, buf, len);
            int32_t got = 0;
            int rc = compact ? kp_rd_compact_array_len(&r, false, 1, &got) : kp_rd_array_len(&r, false, 1, &got);
            if (n == KP_ARRAY_COUNT_MAX) {
                ck_assert_int_eq(rc, KP_OK);
                ck_assert_int_eq(got, KP_ARRAY_COUNT_MAX);
            } else {
                ck_assert_int_eq(rc, KP_ERR_BAD_LENGTH);
            }
            free(buf);
        }
    }
}
END_TEST

/* A tagged-field section of n empty fields with ascending tags 0..n-1. */
static uint8_t *tags_frame(uint32_t n, size_t *len) {
    size_t cap = 5 + (size_t)n * 6;
    uint8_t *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    kp_wr_t w;
    kp_wr_init(&w, buf, cap);
    ck_assert_int_eq(kp_wr_uvarint(&w, n), KP_OK);
    for (uint32_t i = 0; i < n; i++) {
        ck_assert_int_eq(kp_wr_uvarint(&w, i), KP_OK);
        ck_assert_int_eq(kp_wr_uvarint(&w, 0), KP_OK);
    }
    *len = w.pos;
    return buf;
}

static int count_calls(void *ctx, uint32_t tag, kp_slice_t payload) {
    (void)tag;
    (void)payload;
    (*(uint32_t *)ctx)++;
    return KP_OK;
}

START_TEST(test_tagged_fields_limit) {
    for (uint32_t n = KP_TAGGED_FIELDS_MAX; n <= KP_TAGGED_FIELDS_MAX + 1; n++) {
        size_t len = 0;
        uint8_t *buf = tags_frame(n, &len);
        kp_rd_t r;
        kp_rd_init(&r, buf, len);
        uint32_t calls = 0;
        int rc = kp_rd_tags(&r, count_calls, &calls);
        if (n == KP_TAGGED_FIELDS_MAX) {
            ck_assert_int_eq(rc, KP_OK);
            ck_assert_uint_eq(calls, n);
            ck_assert_uint_eq(kp_rd_remaining(&r), 0);
        } else {
            ck_assert_int_eq(rc, KP_ERR_BAD_LENGTH);
            ck_assert_uint_eq(calls, 0);   /* refused before any field is read */
        }
        free(buf);
    }
}
END_TEST

START_TEST(test_array_count_bounded_by_input) {
    const uint8_t huge[] = { 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0 };
    const uint8_t at_limit[] = { 0x00, 0x0f, 0x42, 0x40, 0, 0, 0, 0 };   /* 1,000,000 */
    kp_rd_t r;
    int32_t n;
    kp_rd_init(&r, at_limit, sizeof at_limit);   /* allowed count, too few bytes */
    ck_assert_int_eq(kp_rd_array_len(&r, false, 1, &n), KP_ERR_TRUNCATED);
    kp_rd_init(&r, huge, sizeof huge);           /* over KP_ARRAY_COUNT_MAX */
    ck_assert_int_eq(kp_rd_array_len(&r, false, 1, &n), KP_ERR_BAD_LENGTH);
    const uint8_t null_arr[] = { 0xff, 0xff, 0xff, 0xff };
    kp_rd_init(&r, null_arr, sizeof null_arr);
    ck_assert_int_eq(kp_rd_array_len(&r, false, 1, &n), KP_ERR_BAD_LENGTH);
    kp_rd_init(&r, null_arr, sizeof null_arr);
    ck_assert_int_eq(kp_rd_array_len(&r, true, 1, &n), KP_OK);
    ck_assert_int_eq(n, -1);
    const uint8_t compact[] = { 0x03, 1, 2 };
    kp_rd_init(&r, compact, sizeof compact);
    ck_assert_int_eq(kp_rd_compact_array_len(&r, false, 1, &n), KP_OK);
    ck_assert_int_eq(n, 2);
}
END_TEST

static int count_tags(void *ctx, uint32_t tag, kp_slice_t payload) {
    int *seen = ctx;
    *seen += (int)tag + (int)payload.len * 100;
    return KP_OK;
}

START_TEST(test_tagged_fields) {
    const uint8_t ok[] = { 0x02, 0x01, 0x01, 0xaa, 0x05, 0x00 };
    const uint8_t descending[] = { 0x02, 0x05, 0x00, 0x01, 0x00 };
    const uint8_t cut[] = { 0x01, 0x01, 0x09, 0xaa };
    kp_rd_t r;
    int seen = 0;
    kp_rd_init(&r, ok, sizeof ok);
    ck_assert_int_eq(kp_rd_tags(&r, count_tags, &seen), KP_OK);
    ck_assert_int_eq(seen, 1 + 100 + 5);
    ck_assert_uint_eq(kp_rd_remaining(&r), 0);
    kp_rd_init(&r, descending, sizeof descending);
    ck_assert_int_eq(kp_rd_tags(&r, NULL, NULL), KP_ERR_BAD_VALUE);
    kp_rd_init(&r, cut, sizeof cut);
    ck_assert_int_eq(kp_rd_tags(&r, NULL, NULL), KP_ERR_TRUNCATED);
}
END_TEST

START_TEST(test_writer_overflow_and_count_mode) {
    uint8_t buf[3];
    kp_wr_t w;
    kp_wr_init(&w, buf, sizeof buf);
    ck_assert_int_eq(kp_wr_i16(&w, 1), KP_OK);
    ck_assert_int_eq(kp_wr_i16(&w, 1), KP_ERR_OVERFLOW);
    ck_assert_int_eq(kp_wr_i8(&w, 1), KP_ERR_OVERFLOW); /* sticky */
    kp_wr_init_count(&w);
    ck_assert_int_eq(kp_wr_compact_string(&w, kp_slice_cstr("hello")), KP_OK);
    ck_assert_int_eq(kp_wr_i64(&w, 7), KP_OK);
    ck_assert_uint_eq(w.pos, 1 + 5 + 8);
}
END_TEST

START_TEST(test_truncated_at_every_byte) {
    /* a record of several fields, cut at every length: never reads past */
    uint8_t buf[64];
    kp_wr_t w;
    kp_wr_init(&w, buf, sizeof buf);
    ck_assert_int_eq(kp_wr_i32(&w, 77), KP_OK);
    ck_assert_int_eq(kp_wr_compact_string(&w, kp_slice_cstr("topic")), KP_OK);
    ck_assert_int_eq(kp_wr_varlong(&w, -99999), KP_OK);
    ck_assert_int_eq(kp_wr_bytes(&w, kp_slice_cstr("payload")), KP_OK);
    for (size_t cut = 0; cut < w.pos; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1);
        memcpy(copy, buf, cut);
        kp_rd_t r;
        kp_rd_init(&r, copy, cut);
        int32_t a; kp_str_t s; int64_t v; kp_bytes_t b;
        int rc = kp_rd_i32(&r, &a);
        if (!rc) rc = kp_rd_compact_string(&r, false, &s);
        if (!rc) rc = kp_rd_varlong(&r, &v);
        if (!rc) rc = kp_rd_bytes(&r, false, &b);
        ck_assert_int_eq(rc, KP_ERR_TRUNCATED);
        free(copy);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("wire");
    TCase *tc = tcase_create("primitives");
    tcase_add_test(tc, test_fixed_width_round_trip);
    tcase_add_test(tc, test_zigzag_known_answers);
    tcase_add_test(tc, test_varlong_extremes);
    tcase_add_test(tc, test_overlong_varint_rejected);
    tcase_add_test(tc, test_strings_null_empty_and_bounds);
    tcase_add_test(tc, test_slice_strdup);
    tcase_add_test(tc, test_array_count_bounded_by_input);
    tcase_add_test(tc, test_array_count_limit);
    tcase_add_test(tc, test_tagged_fields_limit);
    tcase_add_test(tc, test_tagged_fields);
    tcase_add_test(tc, test_writer_overflow_and_count_mode);
    tcase_add_test(tc, test_truncated_at_every_byte);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
