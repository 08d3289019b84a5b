/* Unit tests for legacy message sets (magic 0/1): kafka-python fixtures incl.
 * compressed wrappers, the wrapper offset rules, CRC/size/magic/codec errors,
 * truncation, conversion to one v2 batch and down-conversion back. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "protocol/kp_compress.h"
#include "protocol/kp_msgset.h"

#define MIB ((size_t)1 << 20)
static kp_arena_t arena;
static void setup(void) { kp_arena_init(&arena, (size_t)256 << 20); }
static void teardown(void) { kp_arena_free(&arena); }

/* Appends one legacy entry; the CRC-32 comes from zlib. NULL = null. */
static size_t put_msg(uint8_t *buf, size_t pos, int64_t offset, int8_t magic, int8_t attrs, int64_t ts,
                      const void *key, int32_t klen, const void *val, int32_t vlen) {
    size_t size = (magic ? 22 : 14) + (key ? (size_t)klen : 0) + (val ? (size_t)vlen : 0);
    uint8_t *p = buf + pos;
    kp_store_be64(p, (uint64_t)offset);
    kp_store_be32(p + 8, (uint32_t)size);
    uint8_t *m = p + 12, *q = m + 4;
    *q++ = (uint8_t)magic;
    *q++ = (uint8_t)attrs;
    if (magic) {
        kp_store_be64(q, (uint64_t)ts);
        q += 8;
    }
    kp_store_be32(q, key ? (uint32_t)klen : 0xffffffffu);
    q += 4;
    if (key) memcpy(q, key, (size_t)klen), q += klen;
    kp_store_be32(q, val ? (uint32_t)vlen : 0xffffffffu);
    q += 4;
    if (val) memcpy(q, val, (size_t)vlen), q += vlen;
    ck_assert_uint_eq((size_t)(q - m), size);
    kp_store_be32(m, (uint32_t)crc32(0, m + 4, (uInt)(size - 4)));
    return pos + 12 + size;
}

/* Three plain messages at offsets first..first+2. */
static size_t three(uint8_t *buf, int8_t magic, int64_t first) {
    size_t n = 0;
    n = put_msg(buf, n, first, magic, 0, 100, "a", 1, "one", 3);
    n = put_msg(buf, n, first + 1, magic, 0, 200, NULL, 0, "two", 3);
    n = put_msg(buf, n, first + 2, magic, 0, 300, "c", 1, NULL, 0);
    return n;
}

/* A wrapper around `inner` compressed with codec. */
static size_t wrap(uint8_t *buf, const uint8_t *inner, size_t n, int8_t magic, kp_codec_t codec, int64_t offset,
                   int8_t extra_attrs, int64_t ts) {
    const uint8_t *z;
    size_t zlen;
    ck_assert_int_eq(kp_compress(codec, inner, n, &arena, &z, &zlen), KP_OK);
    return put_msg(buf, 0, offset, magic, (int8_t)(codec | extra_attrs), ts, NULL, 0, z, (int32_t)zlen);
}

static int collect(const uint8_t *buf, size_t n, kp_legacy_msg_t *out, int max, int *count) {
    kp_msgset_iter_t it;
    kp_msgset_iter_init(&it, buf, n, &arena, MIB);
    int rc, i = 0;
    while ((rc = kp_msgset_iter_next(&it, &out[i < max ? i : max - 1])) == 1) i++;
    *count = i;
    return rc;
}

START_TEST(test_plain_sets_v0_v1) {
    uint8_t buf[512];
    kp_legacy_msg_t m[8];
    int n;
    for (int8_t magic = 0; magic <= 1; magic++) {
        size_t len = three(buf, magic, 40);
        ck_assert_int_eq(collect(buf, len, m, 8, &n), 0);
        ck_assert_int_eq(n, 3);
        ck_assert_int_eq(m[0].offset, 40);
        ck_assert_int_eq(m[2].offset, 42);
        ck_assert_int_eq(m[1].timestamp, magic ? 200 : -1);
        ck_assert(kp_slice_is_null(m[1].key));
        ck_assert(kp_slice_is_null(m[2].value));
        ck_assert_uint_eq(m[0].value.len, 3);
        ck_assert_mem_eq(m[0].value.p, "one", 3);
        int32_t count = 0;
        ck_assert_int_eq(kp_msgset_validate(buf, len, &arena, MIB, &count), KP_OK);
        ck_assert_int_eq(count, 3);
    }
}
END_TEST

START_TEST(test_wrapper_offsets_and_timestamps) {
    uint8_t inner[512], outer[1024];
    kp_legacy_msg_t m[8];
    int n;
    for (int c = KP_CODEC_GZIP; c <= KP_CODEC_LZ4; c++) {
        /* v1: relative inner offsets, wrapper = absolute offset of the last */
        size_t il = three(inner, 1, 0);
        size_t ol = wrap(outer, inner, il, 1, (kp_codec_t)c, 52, 0, 999);
        ck_assert_int_eq(collect(outer, ol, m, 8, &n), 0);
        ck_assert_int_eq(n, 3);
        ck_assert_int_eq(m[0].offset, 50);
        ck_assert_int_eq(m[2].offset, 52);
        ck_assert_int_eq(m[1].timestamp, 200);
        ck_assert_int_eq(m[1].wrapper_codec, c);
        /* wrapper offset 0 (some librdkafka versions): inner offsets as they are */
        ol = wrap(outer, inner, il, 1, (kp_codec_t)c, 0, 0, 999);
        ck_assert_int_eq(collect(outer, ol, m, 8, &n), 0);
        ck_assert_int_eq(m[0].offset, 0);
        ck_assert_int_eq(m[2].offset, 2);
        /* LogAppendTime wrapper: its timestamp applies to every inner message */
        ol = wrap(outer, inner, il, 1, (kp_codec_t)c, 52, KP_MSG_TIMESTAMP_LOG_APPEND, 999);
        ck_assert_int_eq(collect(outer, ol, m, 8, &n), 0);
        ck_assert_int_eq(m[0].timestamp, 999);
        ck_assert_int_eq(m[2].timestamp, 999);
        /* a wrapper offset that cannot be the last of these inner offsets */
        ol = wrap(outer, inner, il, 1, (kp_codec_t)c, INT64_MIN + 1, 0, 999);
        ck_assert_int_eq(collect(outer, ol, m, 8, &n), KP_ERR_CORRUPT);
        /* v0: inner offsets are absolute (lz4 written the modern way is fine too) */
        il = three(inner, 0, 7);
        ol = wrap(outer, inner, il, 0, (kp_codec_t)c, 1234, 0, 0);
        ck_assert_int_eq(collect(outer, ol, m, 8, &n), 0);
        ck_assert_int_eq(n, 3);
        ck_assert_int_eq(m[0].offset, 7);
        ck_assert_int_eq(m[2].timestamp, -1);
        kp_arena_reset(&arena);
    }
}
END_TEST

/* Three inner messages at offsets o0, o1, o2 (values "one" "two" "three"). */
static size_t three_at(uint8_t *buf, int8_t magic, int64_t o0, int64_t o1, int64_t o2) {
    size_t n = 0;
    n = put_msg(buf, n, o0, magic, 0, 100, "a", 1, "one", 3);
    n = put_msg(buf, n, o1, magic, 0, 200, NULL, 0, "two", 3);
    n = put_msg(buf, n, o2, magic, 0, 300, "c", 1, "three", 5);
    return n;
}

/* Sarama with its default version (0.8.2) sends gzip/snappy wrappers whose
 * inner messages are all at offset 0; Kafka accepts any inner offsets (magic
 * 0: ignored; magic 1: rewritten when not 0..n-1). Every such set must
 * iterate in order and convert, with offsets assigned, to records 0..2. */
START_TEST(test_wrapper_inner_offsets_any_order) {
    static const int64_t shapes[][3] = { { 0, 0, 0 }, { 5, 6, 7 }, { 2, 1, 0 }, { 0, 0, 1 }, { -1, -1, -1 } };
    uint8_t inner[512], outer[1024];
    kp_legacy_msg_t m[8];
    int n;
    for (int c = KP_CODEC_GZIP; c <= KP_CODEC_LZ4; c++)
        for (int8_t magic = 0; magic <= 1; magic++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                for (int64_t woff = 0; woff <= 40; woff += 40) {
                    const int64_t *o = shapes[s];
                    size_t il = three_at(inner, magic, o[0], o[1], o[2]);
                    size_t ol = wrap(outer, inner, il, magic, (kp_codec_t)c, woff, 0, 999);
                    ck_assert_int_eq(collect(outer, ol, m, 8, &n), 0);
                    ck_assert_int_eq(n, 3);
                    /* absolute offsets: magic 1 with a wrapper offset counts
                     * from the last inner one, otherwise as they are */
                    int64_t adj = (magic == 1 && woff != 0) ? woff - o[2] : 0;
                    for (int i = 0; i < 3; i++) ck_assert_int_eq(m[i].offset, o[i] + adj);
                    ck_assert_mem_eq(m[2].value.p, "three", 5);
                    const uint8_t *bp;
                    size_t blen;
                    ck_assert_int_eq(kp_msgset_to_batch(outer, ol, KP_MSGSET_ASSIGN_OFFSETS, KP_CODEC_NONE, &arena,
                                                        MIB, &bp, &blen),
                                     KP_OK);
                    kp_rd_t r;
                    kp_batch_t b;
                    kp_rd_init(&r, bp, blen);
                    ck_assert_int_eq(kp_batch_read(&r, &b), KP_OK);
                    ck_assert_int_eq(b.base_offset, 0);
                    ck_assert_int_eq(b.last_offset_delta, 2);
                    ck_assert_int_eq(kp_batch_validate(&b, KP_VALIDATE_PRODUCER, &arena, MIB, NULL), KP_OK);
                    kp_record_iter_t it;
                    kp_record_t rec;
                    const uint8_t *recs;
                    size_t rlen;
                    ck_assert_int_eq(kp_batch_records(&b, &arena, MIB, &recs, &rlen), KP_OK);
                    kp_record_iter_init(&it, &b, recs, rlen);
                    static const char *want[] = { "one", "two", "three" };
                    for (int i = 0; i < 3; i++) {
                        ck_assert_int_eq(kp_record_iter_next(&it, &rec), 1);
                        ck_assert_int_eq(rec.offset, i);
                        ck_assert_uint_eq(rec.value.len, strlen(want[i]));
                        ck_assert_mem_eq(rec.value.p, want[i], strlen(want[i]));
                    }
                    ck_assert_int_eq(kp_record_iter_next(&it, &rec), 0);
                    /* keeping the producer's offsets needs them ascending */
                    bool ascending = o[0] < o[1] && o[1] < o[2] && o[0] + adj >= 0;
                    int want_rc = ascending ? KP_OK : KP_ERR_BAD_VALUE;
                    ck_assert_int_eq(kp_msgset_to_batch(outer, ol, 0, KP_CODEC_NONE, &arena, MIB, &bp, &blen),
                                     want_rc);
                    kp_arena_reset(&arena);
                }
    /* an inner offset that overflows once adjusted is still corrupt: wrapper
     * INT64_MAX, last inner -1 -> adjust overflows; last inner 0 with an
     * earlier INT64_MIN + wrapper below it -> the earliest underflows */
    size_t il = three_at(inner, 1, 0, 0, -1);
    size_t ol = wrap(outer, inner, il, 1, KP_CODEC_GZIP, INT64_MAX, 0, 1);
    ck_assert_int_eq(collect(outer, ol, m, 8, &n), KP_ERR_CORRUPT);
    il = three_at(inner, 1, INT64_MIN, 0, 0);
    ol = wrap(outer, inner, il, 1, KP_CODEC_GZIP, -5, 0, 1);
    ck_assert_int_eq(collect(outer, ol, m, 8, &n), KP_ERR_CORRUPT);
    il = three_at(inner, 1, INT64_MAX, 0, 0);
    ol = wrap(outer, inner, il, 1, KP_CODEC_GZIP, 5, 0, 1);
    ck_assert_int_eq(collect(outer, ol, m, 8, &n), KP_ERR_CORRUPT);
}
END_TEST

START_TEST(test_wrapper_errors) {
    uint8_t inner[1024], outer[2048], mid[1024];
    kp_legacy_msg_t m[8];
    int n;
    size_t il = three(inner, 1, 0);
    /* nested compression */
    size_t ml = wrap(mid, inner, il, 1, KP_CODEC_GZIP, 2, 0, 1);
    size_t ol = wrap(outer, mid, ml, 1, KP_CODEC_GZIP, 2, 0, 1);
    ck_assert_int_eq(collect(outer, ol, m, 8, &n), KP_ERR_CORRUPT);
    /* inner magic differs from the wrapper's */
    ol = wrap(outer, inner, il, 0, KP_CODEC_GZIP, 2, 0, 1);
    ck_assert_int_eq(collect(outer, ol, m, 8, &n), KP_ERR_CORRUPT);
    /* empty inner set, garbage value, null value */
    ol = wrap(outer, inner, 0, 1, KP_CODEC_SNAPPY, 2, 0, 1);
    ck_assert_int_eq(collect(outer, ol, m, 8, &n), KP_ERR_CORRUPT);
    ol = put_msg(outer, 0, 0, 1, KP_CODEC_GZIP, 1, NULL, 0, "garbage!", 8);
    ck_assert_int_eq(collect(outer, ol, m, 8, &n), KP_ERR_CORRUPT);
    ol = put_msg(outer, 0, 0, 1, KP_CODEC_GZIP, 1, NULL, 0, NULL, 0);
    ck_assert_int_eq(collect(outer, ol, m, 8, &n), KP_ERR_CORRUPT);
    /* zstd is not a legacy codec */
    ol = put_msg(outer, 0, 0, 1, KP_CODEC_ZSTD, 1, NULL, 0, "x", 1);
    ck_assert_int_eq(collect(outer, ol, m, 8, &n), KP_ERR_BAD_VALUE);
    /* a bomb: 4 MiB of one inner message, cap 1 MiB */
    size_t big = 4 * MIB;
    uint8_t *bi = malloc(big + 64), *bo = malloc(big / 8), *zeros = calloc(1, big);
    size_t bil = put_msg(bi, 0, 0, 1, 0, 1, NULL, 0, zeros, (int32_t)big);
    free(zeros);
    const uint8_t *z;
    size_t zlen;
    ck_assert_int_eq(kp_compress(KP_CODEC_GZIP, bi, bil, &arena, &z, &zlen), KP_OK);
    size_t bol = put_msg(bo, 0, 0, 1, KP_CODEC_GZIP, 1, NULL, 0, z, (int32_t)zlen);
    ck_assert_int_eq(collect(bo, bol, m, 8, &n), KP_ERR_TOO_LARGE);
    free(bi);
    free(bo);
}
END_TEST

START_TEST(test_corruption_truncation_and_bad_fields) {
    uint8_t buf[512], w[512];
    kp_legacy_msg_t m[8];
    int n;
    size_t len = three(buf, 1, 0);
    size_t ends[3];
    kp_rd_t r;
    kp_rd_init(&r, buf, len);
    for (int i = 0; i < 3; i++) { /* entry boundaries */
        int64_t off;
        int32_t sz;
        ck_assert_int_eq(kp_rd_i64(&r, &off), KP_OK);
        ck_assert_int_eq(kp_rd_i32(&r, &sz), KP_OK);
        ck_assert_int_eq(kp_rd_skip(&r, (size_t)sz), KP_OK);
        ends[i] = r.pos;
    }
    for (size_t cut = 0; cut < len; cut++) {
        int rc = collect(buf, cut, m, 8, &n);
        bool boundary = cut == 0 || cut == ends[0] || cut == ends[1];
        ck_assert_int_eq(rc, boundary ? 0 : KP_ERR_TRUNCATED);
    }
    /* every byte of every message body (crc..end) is covered by the CRC */
    for (size_t i = 0; i < len; i++) {
        bool in_header = i < 12 || (i >= ends[0] && i < ends[0] + 12) || (i >= ends[1] && i < ends[1] + 12);
        if (in_header) continue;
        memcpy(w, buf, len);
        w[i] ^= 0x20;
        ck_assert_int_ne(collect(w, len, m, 8, &n), 0);
    }
    /* size below the minimum, negative size, unknown magic, magic 2 */
    memcpy(w, buf, len);
    kp_store_be32(w + 8, 13);
    ck_assert_int_eq(collect(w, len, m, 8, &n), KP_ERR_CORRUPT);
    kp_store_be32(w + 8, 0xfffffff0u);
    ck_assert_int_eq(collect(w, len, m, 8, &n), KP_ERR_CORRUPT);
    size_t l1 = put_msg(w, 0, 0, 1, 0, 1, "k", 1, "v", 1);
    w[16] = 5;
    kp_store_be32(w + 12, (uint32_t)crc32(0, w + 16, (uInt)(l1 - 16)));
    ck_assert_int_eq(collect(w, l1, m, 8, &n), KP_ERR_CORRUPT);
    w[16] = 2;
    kp_store_be32(w + 12, (uint32_t)crc32(0, w + 16, (uInt)(l1 - 16)));
    ck_assert_int_eq(collect(w, l1, m, 8, &n), KP_ERR_UNSUPPORTED);
    /* key length running past the message (CRC recomputed so only the length is wrong) */
    l1 = put_msg(w, 0, 0, 0, 0, 0, "k", 1, "v", 1);
    kp_store_be32(w + 18, 50);
    kp_store_be32(w + 12, (uint32_t)crc32(0, w + 16, (uInt)(l1 - 16)));
    ck_assert_int_eq(collect(w, l1, m, 8, &n), KP_ERR_CORRUPT);
    /* a v1-sized minimum applies to magic 1 */
    l1 = put_msg(w, 0, 0, 0, 0, 0, "k", 1, "v", 1); /* 16-byte v0 message ... */
    w[16] = 1;                                       /* ... relabelled v1 */
    kp_store_be32(w + 12, (uint32_t)crc32(0, w + 16, (uInt)(l1 - 16)));
    ck_assert_int_eq(collect(w, l1, m, 8, &n), KP_ERR_CORRUPT);
}
END_TEST

static void hex(char **o, kp_slice_t s) {
    if (kp_slice_is_null(s)) {
        *o += sprintf(*o, "null");
        return;
    }
    *(*o)++ = '"';
    for (size_t i = 0; i < s.len; i++) *o += sprintf(*o, "%02x", s.p[i]);
    *(*o)++ = '"';
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "missing fixture %s (run tests from the repo root)", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    b[n] = 0;
    *len = (size_t)n;
    return b;
}

/* kp-*: kafka-python's legacy builder; rk-*: librdkafka 2.0.2's Produce
 * (magic 1 wrappers carry offset 0; magic 0 only uncompressed). */
START_TEST(test_client_fixtures_and_conversion) {
    const char *codecs[] = { "none", "gzip", "snappy", "lz4" };
    const char *client = _i ? "rk" : "kp";
    char path[256], *line = malloc(MIB);
    for (int magic = 0; magic <= 1; magic++) {
        for (int c = 0; c < 4; c++) {
            size_t len, elen;
            if (_i && magic == 0 && c > 0) continue;
            snprintf(path, sizeof path, "test/fixtures/batches/%s-v%d-%s.bin", client, magic, codecs[c]);
            uint8_t *data = (uint8_t *)slurp(path, &len);
            snprintf(path, sizeof path, "test/fixtures/batches/%s-v%d-%s.jsonl", client, magic, codecs[c]);
            char *want = slurp(path, &elen), *cursor = want;
            kp_msgset_iter_t it;
            kp_legacy_msg_t m;
            kp_msgset_iter_init(&it, data, len, &arena, MIB);
            int count = 0;
            while (kp_msgset_iter_next(&it, &m) == 1) {
                char *o = line;
                ck_assert_int_eq(m.magic, magic);
                o += sprintf(o, "{\"offset\":%lld,\"timestamp\":%lld,\"key\":", (long long)m.offset,
                             (long long)m.timestamp);
                hex(&o, m.key);
                o += sprintf(o, ",\"value\":");
                hex(&o, m.value);
                sprintf(o, ",\"headers\":[]}");
                char *nl = strchr(cursor, '\n');
                ck_assert_ptr_nonnull(nl);
                *nl = 0;
                ck_assert_str_eq(line, cursor);
                cursor = nl + 1;
                count++;
            }
            ck_assert_int_eq(it.outer.err, KP_OK);
            ck_assert_int_eq(*cursor, 0);
            /* the same set as ONE v2 batch (zstd): same records in order */
            const uint8_t *bp;
            size_t blen;
            ck_assert_int_eq(kp_msgset_to_batch(data, len, KP_MSGSET_ASSIGN_OFFSETS, KP_CODEC_ZSTD, &arena, MIB,
                                                &bp, &blen), KP_OK);
            kp_rd_t r;
            kp_batch_t b;
            kp_batch_info_t info;
            kp_rd_init(&r, bp, blen);
            ck_assert_int_eq(kp_batch_read(&r, &b), KP_OK);
            ck_assert_int_eq(kp_rd_remaining(&r), 0);
            ck_assert_int_eq(b.records_count, count);
            ck_assert_int_eq(kp_batch_validate(&b, KP_VALIDATE_PRODUCER, &arena, MIB, &info), KP_OK);
            kp_record_iter_t ri;
            kp_record_t rec;
            kp_record_iter_init(&ri, &b, info.records, info.records_len);
            kp_msgset_iter_init(&it, data, len, &arena, MIB);
            for (int i = 0; i < count; i++) {
                ck_assert_int_eq(kp_msgset_iter_next(&it, &m), 1);
                ck_assert_int_eq(kp_record_iter_next(&ri, &rec), 1);
                ck_assert_int_eq(rec.offset, i);
                ck_assert_int_eq(rec.timestamp, m.timestamp);
                ck_assert(kp_slice_eq(rec.key, m.key) && kp_slice_is_null(rec.key) == kp_slice_is_null(m.key));
                ck_assert(kp_slice_eq(rec.value, m.value) && kp_slice_is_null(rec.value) == kp_slice_is_null(m.value));
                ck_assert_int_eq(rec.headers_count, 0);
            }
            ck_assert_int_eq(kp_record_iter_next(&ri, &rec), 0);
            free(data);
            free(want);
            kp_arena_reset(&arena);
        }
    }
    free(line);
}
END_TEST

/* kafka-python writes magic-0 lz4 with old Kafka's header checksum (over the
 * magic too): only the legacy flag reads it. */
START_TEST(test_old_kafka_lz4_header_checksum) {
    size_t len;
    uint8_t *data = (uint8_t *)slurp("test/fixtures/batches/kp-v0-lz4.bin", &len);
    ck_assert_uint_gt(len, 26);
    ck_assert_int_eq(data[16], 0);                           /* magic 0 */
    ck_assert_int_eq(data[17] & 7, KP_CODEC_LZ4);            /* lz4 wrapper */
    ck_assert_uint_eq(kp_load_be32(data + 18), 0xffffffffu); /* null key */
    uint32_t vlen = kp_load_be32(data + 22);
    ck_assert_uint_eq(26 + (size_t)vlen, len);
    const uint8_t *out;
    size_t olen;
    ck_assert_int_eq(kp_decompress(KP_CODEC_LZ4, data + 26, vlen, MIB, 0, &arena, &out, &olen), KP_ERR_CORRUPT);
    ck_assert_int_eq(kp_decompress(KP_CODEC_LZ4, data + 26, vlen, MIB, KP_DECOMP_LZ4_LEGACY_HC, &arena, &out, &olen),
                     KP_OK);
    free(data);
}
END_TEST

START_TEST(test_to_batch_keeps_offsets_or_rejects) {
    uint8_t buf[512];
    size_t len = three(buf, 1, 1000);
    const uint8_t *bp;
    size_t blen;
    ck_assert_int_eq(kp_msgset_to_batch(buf, len, 0, KP_CODEC_NONE, &arena, MIB, &bp, &blen), KP_OK);
    kp_rd_t r;
    kp_batch_t b;
    kp_rd_init(&r, bp, blen);
    ck_assert_int_eq(kp_batch_read(&r, &b), KP_OK);
    ck_assert_int_eq(b.base_offset, 1000);
    ck_assert_int_eq(b.last_offset_delta, 2);
    ck_assert_int_eq(b.producer_id, -1);
    ck_assert_int_eq(kp_batch_validate(&b, KP_VALIDATE_PRODUCER, &arena, MIB, NULL), KP_OK);
    /* offsets going backwards cannot be kept, but can be reassigned */
    size_t l2 = put_msg(buf, 0, 5, 1, 0, 1, "a", 1, "b", 1);
    l2 = put_msg(buf, l2, 4, 1, 0, 1, "a", 1, "b", 1);
    ck_assert_int_eq(kp_msgset_to_batch(buf, l2, 0, KP_CODEC_NONE, &arena, MIB, &bp, &blen), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(kp_msgset_to_batch(buf, l2, KP_MSGSET_ASSIGN_OFFSETS, KP_CODEC_NONE, &arena, MIB, &bp, &blen), KP_OK);
    /* offsets whose difference overflows int64 (found by fuzz_msgset) */
    size_t l3 = put_msg(buf, 0, INT64_MIN, 1, 0, 1, "a", 1, "b", 1);
    l3 = put_msg(buf, l3, 1, 1, 0, 1, "a", 1, "b", 1);
    ck_assert_int_eq(kp_msgset_to_batch(buf, l3, 0, KP_CODEC_NONE, &arena, MIB, &bp, &blen), KP_ERR_BAD_VALUE);
    /* empty and broken sets */
    ck_assert_int_eq(kp_msgset_to_batch(buf, 0, 0, KP_CODEC_NONE, &arena, MIB, &bp, &blen), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(kp_msgset_to_batch(buf, l2 - 1, 0, KP_CODEC_NONE, &arena, MIB, &bp, &blen), KP_ERR_TRUNCATED);
}
END_TEST

START_TEST(test_down_convert) {
    kp_header_in_t hd[] = { { { (const uint8_t *)"h", 1 }, { (const uint8_t *)"x", 1 } } };
    kp_record_in_t recs[] = {
        { 5000, { (const uint8_t *)"k", 1 }, { (const uint8_t *)"v1", 2 }, hd, 1 },
        { 5001, { NULL, 0 }, { (const uint8_t *)"v2", 2 }, NULL, 0 },
        { 5002, { (const uint8_t *)"t", 1 }, { NULL, 0 }, NULL, 0 },
    };
    for (int flags = 0; flags <= KP_BATCH_TIMESTAMP_LOG_APPEND; flags += KP_BATCH_TIMESTAMP_LOG_APPEND) {
        kp_batch_opts_t o = kp_batch_opts_default();
        o.codec = KP_CODEC_LZ4;
        o.base_offset = 300;
        o.flags = (int16_t)flags;
        kp_batch_builder_t bb;
        kp_batch_builder_init(&bb, &o);
        for (int i = 0; i < 3; i++) ck_assert_int_eq(kp_batch_builder_add(&bb, &recs[i]), KP_OK);
        const uint8_t *bp, *recsec, *ms;
        size_t blen, rlen, mlen;
        ck_assert_int_eq(kp_batch_builder_finish(&bb, &arena, &bp, &blen), KP_OK);
        kp_batch_builder_free(&bb);
        kp_rd_t r;
        kp_batch_t b;
        kp_rd_init(&r, bp, blen);
        ck_assert_int_eq(kp_batch_read(&r, &b), KP_OK);
        ck_assert_int_eq(kp_batch_records(&b, &arena, MIB, &recsec, &rlen), KP_OK);
        for (int8_t magic = 0; magic <= 1; magic++) {
            ck_assert_int_eq(kp_batch_to_msgset(&b, recsec, rlen, magic, &arena, &ms, &mlen), KP_OK);
            kp_legacy_msg_t m[4];
            int n;
            ck_assert_int_eq(collect(ms, mlen, m, 4, &n), 0);
            ck_assert_int_eq(n, 3);
            for (int i = 0; i < 3; i++) {
                ck_assert_int_eq(m[i].magic, magic);
                ck_assert_int_eq(m[i].offset, 300 + i);
                ck_assert_int_eq(m[i].timestamp, magic == 0 ? -1 : flags ? 5002 : recs[i].timestamp);
                ck_assert_int_eq(!!(m[i].attributes & KP_MSG_TIMESTAMP_LOG_APPEND), magic == 1 && flags);
                ck_assert_int_eq(kp_slice_is_null(m[i].key), kp_slice_is_null(recs[i].key));
                ck_assert(kp_slice_eq(m[i].value, recs[i].value));
                ck_assert_int_eq(kp_slice_is_null(m[i].value), kp_slice_is_null(recs[i].value));
            }
        }
        ck_assert_int_eq(kp_batch_to_msgset(&b, recsec, rlen, 2, &arena, &ms, &mlen), KP_ERR_UNSUPPORTED);
    }
    /* control batches vanish for old consumers */
    const uint8_t *bp, *ms;
    size_t blen, mlen;
    ck_assert_int_eq(kp_batch_build_txn_marker(1, 1, true, 1, 1, &arena, &bp, &blen), KP_OK);
    kp_rd_t r;
    kp_batch_t b;
    kp_rd_init(&r, bp, blen);
    ck_assert_int_eq(kp_batch_read(&r, &b), KP_OK);
    ck_assert_int_eq(kp_batch_to_msgset(&b, bp + 61, blen - 61, 1, &arena, &ms, &mlen), KP_OK);
    ck_assert_uint_eq(mlen, 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("msgset");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_plain_sets_v0_v1);
    tcase_add_test(tc, test_wrapper_offsets_and_timestamps);
    tcase_add_test(tc, test_wrapper_inner_offsets_any_order);
    tcase_add_test(tc, test_wrapper_errors);
    tcase_add_test(tc, test_corruption_truncation_and_bad_fields);
    tcase_add_loop_test(tc, test_client_fixtures_and_conversion, 0, 2);
    tcase_add_test(tc, test_old_kafka_lz4_header_checksum);
    tcase_add_test(tc, test_to_batch_keeps_offsets_or_rejects);
    tcase_add_test(tc, test_down_convert);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
