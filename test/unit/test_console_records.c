/* Unit tests for the console's record walker (bk_admin_records_json,
 * broker/admin/admin_records.c): batches built with kp_batch_builder (plain
 * and compressed), then walked from an offset inside a batch, with a count
 * bound, across a transaction marker (skipped), with null keys and values,
 * with a truncated trailing batch, a corrupt CRC and a large value (cut at
 * BK_ADMIN_RECORDS_FIELD_MAX_BYTES). The JSON is parsed back by checking
 * exact substrings of the writer's fixed key order. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "broker/admin/admin_records.h"
#include "protocol/kp_batch.h"

typedef struct {
    uint8_t *buf;
    size_t len;
} log_t;

static void append(log_t *l, const uint8_t *b, size_t n) {
    l->buf = realloc(l->buf, l->len + n);
    ck_assert_ptr_nonnull(l->buf);
    memcpy(l->buf + l->len, b, n);
    l->len += n;
}

/* A batch of n records at base offset `base`: key "k<i>" (null for i == 1),
 * value "v<i>", header h=x. */
static void add_batch(log_t *l, int64_t base, int n, kp_codec_t codec) {
    kp_batch_opts_t o = kp_batch_opts_default();
    o.codec = codec;
    o.base_offset = base;
    kp_batch_builder_t bb;
    kp_batch_builder_init(&bb, &o);
    for (int i = 0; i < n; i++) {
        char k[16], v[16];
        snprintf(k, sizeof k, "k%lld", (long long)(base + i));
        snprintf(v, sizeof v, "v%lld", (long long)(base + i));
        kp_header_in_t h = { kp_slice_cstr("h"), kp_slice_cstr("x") };
        kp_record_in_t r = { 1000 + base + i, i == 1 ? kp_slice_null() : kp_slice_cstr(k), kp_slice_cstr(v), &h, 1 };
        ck_assert_int_eq(kp_batch_builder_add(&bb, &r), KP_OK);
    }
    kp_arena_t a;
    kp_arena_init(&a, 1 << 20);
    const uint8_t *out;
    size_t len;
    ck_assert_int_eq(kp_batch_builder_finish(&bb, &a, &out, &len), KP_OK);
    append(l, out, len);
    kp_batch_builder_free(&bb);
    kp_arena_free(&a);
}

/* Walks l and returns the JSON text (malloc'd). */
static char *walk(const log_t *l, int64_t from, int32_t count, int64_t *next, const char **why) {
    struct evbuffer *out = evbuffer_new();
    bk_http_json_t j;
    bk_http_json_init(&j, out);
    bk_admin_records_json(l->buf, l->len, from, count, &j, next, why);
    ck_assert_int_eq(bk_http_json_finish(&j), KP_OK);
    size_t n = evbuffer_get_length(out);
    char *s = malloc(n + 1);
    ck_assert_ptr_nonnull(s);
    evbuffer_remove(out, s, n);
    s[n] = '\0';
    evbuffer_free(out);
    return s;
}

static int count_of(const char *s, const char *needle) {
    int c = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) c++;
    return c;
}

START_TEST(from_inside_a_batch_with_a_bound) {
    log_t l = { 0 };
    add_batch(&l, 0, 5, KP_CODEC_NONE);
    add_batch(&l, 5, 5, (kp_codec_t)_i);   /* each codec in turn */
    int64_t next;
    const char *why;
    char *s = walk(&l, 3, 4, &next, &why);
    ck_assert_ptr_null(why);
    ck_assert_int_eq(next, 7);
    ck_assert_int_eq(count_of(s, "\"offset\":"), 4);
    ck_assert_ptr_nonnull(strstr(s, "{\"offset\":3,\"timestamp\":1003,\"key\":\"azM=\",\"value\":\"djM=\",\"truncated\":false,"
                                    "\"headers\":[{\"key\":\"h\",\"value\":\"eA==\"}]}"));
    ck_assert_ptr_nonnull(strstr(s, "{\"offset\":6,\"timestamp\":1006,\"key\":null,"));  /* i == 1 of the second batch */
    ck_assert_ptr_null(strstr(s, "\"offset\":7,"));
    free(s);
    s = walk(&l, 0, 500, &next, &why);
    ck_assert_int_eq(count_of(s, "\"offset\":"), 10);
    ck_assert_int_eq(next, 10);
    free(s);
    s = walk(&l, 10, 500, &next, &why);      /* at the end: nothing, next = from */
    ck_assert_str_eq(s, "[]");
    ck_assert_int_eq(next, 10);
    free(s);
    free(l.buf);
}
END_TEST

START_TEST(markers_skipped_tail_and_crc) {
    log_t l = { 0 };
    add_batch(&l, 0, 2, KP_CODEC_NONE);
    kp_arena_t a;
    kp_arena_init(&a, 1 << 16);
    const uint8_t *m;
    size_t mlen;
    ck_assert_int_eq(kp_batch_build_txn_marker(7, 0, true, 0, 1002, &a, &m, &mlen), KP_OK);
    size_t at = l.len;
    append(&l, m, mlen);
    kp_batch_patch_base_offset(l.buf + at, 2);   /* outside the CRC */
    add_batch(&l, 3, 2, KP_CODEC_NONE);
    size_t full = l.len;
    add_batch(&l, 5, 2, KP_CODEC_NONE);
    int64_t next;
    const char *why;
    /* a partial last batch (a read cut at max_bytes) ends the walk quietly */
    log_t cut = { l.buf, full + 30 };
    char *s = walk(&cut, 0, 500, &next, &why);
    ck_assert_ptr_null(why);
    ck_assert_int_eq(count_of(s, "\"offset\":"), 4);   /* 0,1,3,4: the marker at 2 skipped */
    ck_assert_ptr_null(strstr(s, "\"offset\":2,"));
    ck_assert_int_eq(next, 5);
    free(s);
    /* a flipped byte in the third batch's records: CRC mismatch, earlier records kept */
    l.buf[full - 3] ^= 0x40;
    s = walk(&l, 0, 500, &next, &why);
    ck_assert_ptr_nonnull(why);
    ck_assert_str_eq(why, "record batch CRC mismatch");
    ck_assert_int_eq(count_of(s, "\"offset\":"), 2);
    free(s);
    kp_arena_free(&a);
    free(l.buf);
}
END_TEST

START_TEST(large_value_cut) {
    size_t big = BK_ADMIN_RECORDS_FIELD_MAX_BYTES + 10;
    char *v = malloc(big);
    ck_assert_ptr_nonnull(v);
    memset(v, 'a', big);
    kp_batch_opts_t o = kp_batch_opts_default();
    kp_batch_builder_t bb;
    kp_batch_builder_init(&bb, &o);
    kp_record_in_t r = { 5, kp_slice_null(), { (const uint8_t *)v, big }, NULL, 0 };
    ck_assert_int_eq(kp_batch_builder_add(&bb, &r), KP_OK);
    kp_arena_t a;
    kp_arena_init(&a, 1 << 20);
    const uint8_t *out;
    size_t len;
    ck_assert_int_eq(kp_batch_builder_finish(&bb, &a, &out, &len), KP_OK);
    log_t l = { (uint8_t *)out, len };
    int64_t next;
    const char *why;
    char *s = walk(&l, 0, 1, &next, &why);
    ck_assert_ptr_nonnull(strstr(s, "\"truncated\":true"));
    const char *val = strstr(s, "\"value\":\"");
    ck_assert_ptr_nonnull(val);
    size_t b64len = strcspn(val + 9, "\"");
    ck_assert_uint_eq(b64len, 4 * ((BK_ADMIN_RECORDS_FIELD_MAX_BYTES + 2) / 3));
    free(s);
    kp_batch_builder_free(&bb);
    kp_arena_free(&a);
    free(v);
}
END_TEST

int main(void) {
    Suite *s = suite_create("console_records");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, from_inside_a_batch_with_a_bound, KP_CODEC_NONE, KP_CODEC_ZSTD + 1);
    tcase_add_test(tc, markers_skipped_tail_and_crc);
    tcase_add_test(tc, large_value_cut);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
