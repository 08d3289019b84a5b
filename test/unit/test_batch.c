/* Unit tests for RecordBatch v2: builder -> read -> CRC -> validate ->
 * iterate for every codec; control batches; validation statuses for every
 * rule; corruption (every byte flip, every truncation, bad lengths, bad
 * varints, count mismatch, bombs); kafka-python fixtures decode to the
 * records the client was asked to write. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_batch.h"
#include "protocol/kp_compress.h"
#include "protocol/kp_crc32c.h"

#define MIB ((size_t)1 << 20)
static kp_arena_t arena;
static void setup(void) { kp_arena_init(&arena, (size_t)256 << 20); }
static void teardown(void) { kp_arena_free(&arena); }

static kp_slice_t S(const char *s) { return kp_slice_cstr(s); }

/* The sample records: plain, null key + null header value, tombstone, empty
 * value with an empty header, a timestamp before the first. */
static kp_header_in_t h1[] = { { { (const uint8_t *)"h1", 2 }, { (const uint8_t *)"v1", 2 } },
                               { { (const uint8_t *)"h2", 2 }, { NULL, 0 } } };
static kp_header_in_t h2[] = { { { (const uint8_t *)"", 0 }, { (const uint8_t *)"", 0 } } };
#define NREC 5
static kp_record_in_t sample[NREC];
static void init_sample(void) {
    kp_record_in_t r[NREC] = {
        { 1000, { (const uint8_t *)"k0", 2 }, { (const uint8_t *)"hello", 5 }, NULL, 0 },
        { 1005, { NULL, 0 }, { (const uint8_t *)"no key", 6 }, h1, 2 },
        { 1009, { (const uint8_t *)"tomb", 4 }, { NULL, 0 }, NULL, 0 },
        { 1009, { (const uint8_t *)"", 0 }, { (const uint8_t *)"", 0 }, h2, 1 },
        { 997, { (const uint8_t *)"late", 4 }, { (const uint8_t *)"x", 1 }, NULL, 0 },
    };
    memcpy(sample, r, sizeof r);
}

static void assert_slice(kp_slice_t got, kp_slice_t want) {
    ck_assert_int_eq(kp_slice_is_null(got), kp_slice_is_null(want));
    ck_assert_uint_eq(got.len, want.len);
    if (want.len) ck_assert_mem_eq(got.p, want.p, want.len);
}

static void build(const kp_batch_opts_t *o, const kp_record_in_t *recs, int n, const uint8_t **out, size_t *len) {
    kp_batch_builder_t bb;
    kp_batch_builder_init(&bb, o);
    for (int i = 0; i < n; i++) ck_assert_int_eq(kp_batch_builder_add(&bb, &recs[i]), KP_OK);
    ck_assert_int_eq(kp_batch_builder_finish(&bb, &arena, out, len), KP_OK);
    kp_batch_builder_free(&bb);
}

static void read_one(const uint8_t *p, size_t len, kp_batch_t *b) {
    kp_rd_t r;
    kp_rd_init(&r, p, len);
    ck_assert_int_eq(kp_batch_read(&r, b), KP_OK);
    ck_assert_uint_eq(kp_rd_remaining(&r), 0);
}

START_TEST(test_round_trip_every_codec) {
    init_sample();
    for (int c = KP_CODEC_NONE; c <= KP_CODEC_ZSTD; c++) {
        kp_batch_opts_t o = kp_batch_opts_default();
        o.codec = (kp_codec_t)c;
        o.producer_id = 77;
        o.producer_epoch = 2;
        o.base_sequence = 40;
        const uint8_t *p;
        size_t len;
        build(&o, sample, NREC, &p, &len);
        /* header fields at their documented byte offsets */
        ck_assert_uint_eq(kp_load_be32(p + 8), len - 12);
        ck_assert_int_eq((int32_t)kp_load_be32(p + 12), -1);
        ck_assert_uint_eq(p[16], 2);
        ck_assert_uint_eq(kp_load_be16(p + 21), (uint16_t)c);
        ck_assert_uint_eq(kp_load_be32(p + 23), NREC - 1);
        ck_assert_uint_eq(kp_load_be64(p + 27), 1000);
        ck_assert_uint_eq(kp_load_be64(p + 35), 1009);
        ck_assert_uint_eq(kp_load_be64(p + 43), 77);
        ck_assert_uint_eq(kp_load_be16(p + 51), 2);
        ck_assert_uint_eq(kp_load_be32(p + 53), 40);
        ck_assert_uint_eq(kp_load_be32(p + 57), NREC);
        kp_batch_t b;
        read_one(p, len, &b);
        ck_assert_int_eq(kp_batch_verify_crc(&b), KP_OK);
        kp_batch_info_t info;
        ck_assert_int_eq(kp_batch_validate(&b, KP_VALIDATE_PRODUCER, &arena, MIB, &info), KP_OK);
        ck_assert_int_eq(info.max_record_timestamp, 1009);
        kp_record_iter_t it;
        kp_record_t rec;
        kp_record_iter_init(&it, &b, info.records, info.records_len);
        for (int i = 0; i < NREC; i++) {
            ck_assert_int_eq(kp_record_iter_next(&it, &rec), 1);
            ck_assert_int_eq(rec.offset, i);
            ck_assert_int_eq(rec.timestamp, sample[i].timestamp);
            assert_slice(rec.key, sample[i].key);
            assert_slice(rec.value, sample[i].value);
            ck_assert_int_eq(rec.headers_count, sample[i].headers_count);
            kp_rd_t h;
            kp_rd_init(&h, rec.headers.p, rec.headers.len);
            for (int k = 0; k < rec.headers_count; k++) {
                kp_str_t hk;
                kp_bytes_t hv;
                ck_assert_int_eq(kp_record_header_next(&h, &hk, &hv), 1);
                assert_slice(hk, sample[i].headers[k].key);
                assert_slice(hv, sample[i].headers[k].value);
            }
            kp_str_t ek;
            kp_bytes_t ev;
            ck_assert_int_eq(kp_record_header_next(&h, &ek, &ev), 0);
        }
        ck_assert_int_eq(kp_record_iter_next(&it, &rec), 0);
        kp_arena_reset(&arena);
    }
}
END_TEST

START_TEST(test_uncompressed_records_are_not_copied_and_patches_keep_crc) {
    init_sample();
    kp_batch_opts_t o = kp_batch_opts_default();
    const uint8_t *p;
    size_t len;
    build(&o, sample, 2, &p, &len);
    uint8_t *w = malloc(len);
    memcpy(w, p, len);
    kp_batch_patch_base_offset(w, 123456789012LL);
    kp_batch_patch_leader_epoch(w, 9);
    kp_batch_t b;
    read_one(w, len, &b);
    ck_assert_int_eq(b.base_offset, 123456789012LL);
    ck_assert_int_eq(b.partition_leader_epoch, 9);
    ck_assert_int_eq(kp_batch_verify_crc(&b), KP_OK);
    const uint8_t *recs;
    size_t rlen;
    ck_assert_int_eq(kp_batch_records(&b, &arena, MIB, &recs, &rlen), KP_OK);
    ck_assert_ptr_eq(recs, w + KP_BATCH_HEADER_BYTES);
    ck_assert_int_eq(kp_batch_last_offset(&b), 123456789013LL);
    kp_record_iter_t it;
    kp_record_t rec;
    kp_record_iter_init(&it, &b, recs, rlen);
    ck_assert_int_eq(kp_record_iter_next(&it, &rec), 1);
    ck_assert_int_eq(kp_record_iter_next(&it, &rec), 1);
    ck_assert_int_eq(rec.offset, 123456789013LL);
    free(w);
}
END_TEST

START_TEST(test_txn_marker_and_kraft_control) {
    const uint8_t *p;
    size_t len;
    ck_assert_int_eq(kp_batch_build_txn_marker(4242, 7, true, 31, 5000, &arena, &p, &len), KP_OK);
    kp_batch_t b;
    read_one(p, len, &b);
    ck_assert(kp_batch_is_control(&b));
    ck_assert(kp_batch_is_transactional(&b));
    ck_assert_int_eq(kp_batch_codec(&b), KP_CODEC_NONE);
    ck_assert_int_eq(b.producer_id, 4242);
    ck_assert_int_eq(b.producer_epoch, 7);
    ck_assert_int_eq(b.base_sequence, -1);
    kp_batch_info_t info;
    ck_assert_int_eq(kp_batch_validate(&b, KP_VALIDATE_PRODUCER, &arena, MIB, &info), KP_OK);
    kp_record_iter_t it;
    kp_record_t rec;
    kp_record_iter_init(&it, &b, info.records, info.records_len);
    ck_assert_int_eq(kp_record_iter_next(&it, &rec), 1);
    ck_assert_uint_eq(rec.key.len, 4);
    ck_assert_mem_eq(rec.key.p, "\0\0\0\1", 4); /* version 0, COMMIT */
    ck_assert_uint_eq(rec.value.len, 6);
    ck_assert_mem_eq(rec.value.p, "\0\0\0\0\0\x1f", 6); /* version 0, epoch 31 */
    int16_t type;
    int32_t epoch;
    ck_assert_int_eq(kp_control_key_read(rec.key, &type), KP_OK);
    ck_assert_int_eq(type, KP_CONTROL_COMMIT);
    ck_assert_int_eq(kp_txn_marker_value_read(rec.value, &epoch), KP_OK);
    ck_assert_int_eq(epoch, 31);
    ck_assert_int_eq(kp_record_iter_next(&it, &rec), 0);

    ck_assert_int_eq(kp_batch_build_txn_marker(1, 0, false, 0, 1, &arena, &p, &len), KP_OK);
    read_one(p, len, &b);
    ck_assert_mem_eq(p + len - 1 - 6 - 1 - 4, "\0\0\0\0", 4); /* key: version 0, ABORT = 0 */

    uint8_t msg[] = { 0, 0, 0, 0, 0, 3, 1, 2, 0 };
    kp_bytes_t v = { msg, sizeof msg };
    ck_assert_int_eq(kp_batch_build_kraft_control(KP_CONTROL_LEADER_CHANGE, v, 77, 500, 4, &arena, &p, &len), KP_OK);
    read_one(p, len, &b);
    ck_assert(kp_batch_is_control(&b));
    ck_assert(!kp_batch_is_transactional(&b));
    ck_assert_int_eq(b.base_offset, 500);
    ck_assert_int_eq(b.partition_leader_epoch, 4);
    ck_assert_int_eq(kp_batch_validate(&b, 0, &arena, MIB, &info), KP_OK);
    kp_record_iter_init(&it, &b, info.records, info.records_len);
    ck_assert_int_eq(kp_record_iter_next(&it, &rec), 1);
    ck_assert_int_eq(kp_control_key_read(rec.key, &type), KP_OK);
    ck_assert_int_eq(type, KP_CONTROL_LEADER_CHANGE);
    ck_assert_uint_eq(rec.value.len, sizeof msg);
    ck_assert_mem_eq(rec.value.p, msg, sizeof msg);
    ck_assert_int_eq(rec.offset, 500);
    ck_assert_int_eq(kp_batch_build_kraft_control(KP_CONTROL_COMMIT, v, 0, 0, 0, &arena, &p, &len), KP_ERR_BAD_VALUE);
    /* malformed control keys */
    ck_assert_int_eq(kp_control_key_read(S("\0\0\0"), &type), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(kp_control_key_read((kp_bytes_t){ (const uint8_t *)"\xff\xff\0\1", 4 }, &type), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(kp_control_key_read((kp_bytes_t){ (const uint8_t *)"\0\1\0\1\0", 5 }, &type), KP_OK);
    ck_assert_int_eq(kp_control_key_read(kp_slice_null(), &type), KP_ERR_BAD_VALUE);
}
END_TEST

START_TEST(test_builder_input_errors_and_empty_batch) {
    kp_batch_opts_t o = kp_batch_opts_default();
    kp_batch_builder_t bb;
    kp_batch_builder_init(&bb, &o);
    kp_header_in_t bad[] = { { { NULL, 0 }, { NULL, 0 } } };
    kp_record_in_t r = { 1, S("k"), S("v"), bad, 1 };
    ck_assert_int_eq(kp_batch_builder_add(&bb, &r), KP_ERR_BAD_VALUE);
    r.headers_count = 0;
    ck_assert_int_eq(kp_batch_builder_add_at(&bb, 5, &r), KP_OK);
    ck_assert_int_eq(kp_batch_builder_add_at(&bb, 5, &r), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(kp_batch_builder_add_at(&bb, 9, &r), KP_OK);
    const uint8_t *p;
    size_t len;
    ck_assert_int_eq(kp_batch_builder_finish(&bb, &arena, &p, &len), KP_OK);
    kp_batch_builder_free(&bb);
    kp_batch_t b;
    read_one(p, len, &b);
    ck_assert_int_eq(b.last_offset_delta, 9);
    /* a compacted-looking batch: fine stored, not from a producer */
    ck_assert_int_eq(kp_batch_validate(&b, 0, &arena, MIB, NULL), KP_OK);
    ck_assert_int_eq(kp_batch_validate(&b, KP_VALIDATE_PRODUCER, &arena, MIB, NULL), KP_ERR_BAD_VALUE);

    o.max_bytes = 100;
    kp_batch_builder_init(&bb, &o);
    char big[200] = { 0 };
    kp_record_in_t rb = { 1, kp_slice_null(), { (const uint8_t *)big, sizeof big }, NULL, 0 };
    ck_assert_int_eq(kp_batch_builder_add(&bb, &rb), KP_ERR_TOO_LARGE);
    ck_assert_int_eq(kp_batch_builder_finish(&bb, &arena, &p, &len), KP_OK); /* empty */
    kp_batch_builder_free(&bb);
    read_one(p, len, &b);
    ck_assert_int_eq(b.records_count, 0);
    ck_assert_int_eq(b.base_timestamp, -1);
    ck_assert_int_eq(kp_batch_validate(&b, 0, &arena, MIB, NULL), KP_OK);
    ck_assert_int_eq(kp_batch_validate(&b, KP_VALIDATE_PRODUCER, &arena, MIB, NULL), KP_ERR_BAD_VALUE);
}
END_TEST

/* A batch around hand-written record bytes, with a correct CRC. */
static size_t raw_batch(uint8_t *out, size_t cap, const void *recs, size_t rlen, int32_t count, int32_t last_delta,
                        int16_t attrs, int64_t pid) {
    size_t total = KP_BATCH_HEADER_BYTES + rlen;
    ck_assert_uint_le(total, cap);
    kp_wr_t w;
    kp_wr_init(&w, out, cap);
    int rc = kp_wr_i64(&w, 0) | kp_wr_i32(&w, (int32_t)(total - 12)) | kp_wr_i32(&w, -1) | kp_wr_i8(&w, 2) |
             kp_wr_u32(&w, 0) | kp_wr_i16(&w, attrs) | kp_wr_i32(&w, last_delta) | kp_wr_i64(&w, 1000) |
             kp_wr_i64(&w, 1000) | kp_wr_i64(&w, pid) | kp_wr_i16(&w, pid >= 0 ? 0 : -1) |
             kp_wr_i32(&w, pid >= 0 ? 0 : -1) | kp_wr_i32(&w, count) | kp_wr_raw(&w, recs, rlen);
    ck_assert_int_eq(rc, KP_OK);
    kp_store_be32(out + 17, kp_crc32c(0, out + 21, total - 21));
    return total;
}

static int validate_raw(const void *recs, size_t rlen, int32_t count, int32_t last, int16_t attrs, int64_t pid,
                        unsigned flags) {
    uint8_t buf[512];
    size_t n = raw_batch(buf, sizeof buf, recs, rlen, count, last, attrs, pid);
    kp_batch_t b;
    kp_rd_t r;
    kp_rd_init(&r, buf, n);
    int rc = kp_batch_read(&r, &b);
    if (rc) return rc;
    return kp_batch_validate(&b, flags, &arena, MIB, NULL);
}

/* record: len, attrs 0, tsDelta, offsetDelta, key -1, value len 1 'v', 0 headers */
#define REC(ts, od) 14, 0, ts, od, 1, 2, 'v', 0

START_TEST(test_validation_statuses) {
    uint8_t two[] = { REC(0, 0), REC(2, 2) };
    ck_assert_int_eq(validate_raw(two, sizeof two, 2, 1, 0, -1, KP_VALIDATE_PRODUCER), KP_OK);
    /* count says 3, two present: structure */
    ck_assert_int_eq(validate_raw(two, sizeof two, 3, 2, 0, -1, 0), KP_ERR_CORRUPT);
    /* count says 1, bytes left over: structure */
    ck_assert_int_eq(validate_raw(two, sizeof two, 1, 0, 0, -1, 0), KP_ERR_CORRUPT);
    /* lastOffsetDelta past the last record's delta: a compacted batch that
     * lost its last record (Kafka keeps the last offset); not from a producer */
    ck_assert_int_eq(validate_raw(two, sizeof two, 2, 2, 0, -1, 0), KP_OK);
    ck_assert_int_eq(validate_raw(two, sizeof two, 2, 2, 0, -1, KP_VALIDATE_PRODUCER), KP_ERR_BAD_VALUE);
    /* lastOffsetDelta below the last record's delta */
    ck_assert_int_eq(validate_raw(two, sizeof two, 2, 0, 0, -1, 0), KP_ERR_BAD_VALUE);
    uint8_t gap[] = { REC(0, 0), REC(0, 4) }; /* 0, 2 */
    ck_assert_int_eq(validate_raw(gap, sizeof gap, 2, 2, 0, -1, 0), KP_OK);
    ck_assert_int_eq(validate_raw(gap, sizeof gap, 2, 2, 0, -1, KP_VALIDATE_PRODUCER), KP_ERR_BAD_VALUE);
    uint8_t back[] = { REC(0, 2), REC(0, 0) }; /* 1, 0 */
    ck_assert_int_eq(validate_raw(back, sizeof back, 2, 0, 0, -1, 0), KP_ERR_BAD_VALUE);
    uint8_t neg[] = { REC(0, 1) }; /* delta -1 */
    ck_assert_int_eq(validate_raw(neg, sizeof neg, 1, 0, 0, -1, 0), KP_ERR_BAD_VALUE);
    uint8_t notzero[] = { REC(0, 2) }; /* producer batch must start at 0 */
    ck_assert_int_eq(validate_raw(notzero, sizeof notzero, 1, 1, 0, -1, KP_VALIDATE_PRODUCER), KP_ERR_BAD_VALUE);
    /* timestamp 1000 + delta(-1002) = -2: invalid with CreateTime, ignored with LogAppendTime */
    uint8_t ts[] = { 16, 0, 0xd3, 0x0f, 0, 1, 2, 'v', 0 };
    ck_assert_int_eq(validate_raw(ts, sizeof ts, 1, 0, 0, -1, 0), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(validate_raw(ts, sizeof ts, 1, 0, KP_BATCH_TIMESTAMP_LOG_APPEND, -1, 0), KP_OK);
    /* transactional without a producer id */
    uint8_t one[] = { REC(0, 0) };
    ck_assert_int_eq(validate_raw(one, sizeof one, 1, 0, KP_BATCH_TRANSACTIONAL, -1, KP_VALIDATE_PRODUCER),
                     KP_ERR_BAD_VALUE);
    ck_assert_int_eq(validate_raw(one, sizeof one, 1, 0, KP_BATCH_TRANSACTIONAL, 5, KP_VALIDATE_PRODUCER), KP_OK);
    /* delete horizon from a producer */
    ck_assert_int_eq(validate_raw(one, sizeof one, 1, 0, KP_BATCH_DELETE_HORIZON, -1, KP_VALIDATE_PRODUCER),
                     KP_ERR_BAD_VALUE);
    /* control batch whose record has no proper key */
    ck_assert_int_eq(validate_raw(one, sizeof one, 1, 0, KP_BATCH_CONTROL, 5, 0), KP_ERR_BAD_VALUE);
    /* bad varints: record length of 6 continuation bytes; overlong offset delta */
    uint8_t badlen[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0 };
    ck_assert_int_eq(validate_raw(badlen, sizeof badlen, 1, 0, 0, -1, 0), KP_ERR_CORRUPT);
    uint8_t badod[] = { 20, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0 };
    ck_assert_int_eq(validate_raw(badod, sizeof badod, 1, 0, 0, -1, 0), KP_ERR_CORRUPT);
    /* key length past the record; negative (non-null) value length; negative header count */
    uint8_t klen[] = { 12, 0, 0, 0, 20, 1, 0 };
    ck_assert_int_eq(validate_raw(klen, sizeof klen, 1, 0, 0, -1, 0), KP_ERR_CORRUPT);
    uint8_t vlen[] = { 12, 0, 0, 0, 1, 5, 0 };
    ck_assert_int_eq(validate_raw(vlen, sizeof vlen, 1, 0, 0, -1, 0), KP_ERR_CORRUPT);
    uint8_t hcount[] = { 12, 0, 0, 0, 1, 1, 1 };
    ck_assert_int_eq(validate_raw(hcount, sizeof hcount, 1, 0, 0, -1, 0), KP_ERR_CORRUPT);
    /* header with a null key */
    uint8_t hnull[] = { 16, 0, 0, 0, 1, 1, 2, 1, 1 };
    ck_assert_int_eq(validate_raw(hnull, sizeof hnull, 1, 0, 0, -1, 0), KP_ERR_CORRUPT);
    /* record length shorter than its fields; longer than the batch */
    uint8_t shortrec[] = { 4, 0, 0, 0, 1, 1, 0 };
    ck_assert_int_eq(validate_raw(shortrec, sizeof shortrec, 1, 0, 0, -1, 0), KP_ERR_CORRUPT);
    uint8_t longrec[] = { 40, 0, 0, 0, 1, 1, 0 };
    ck_assert_int_eq(validate_raw(longrec, sizeof longrec, 1, 0, 0, -1, 0), KP_ERR_CORRUPT);
    /* a "compressed" batch holding garbage */
    ck_assert_int_eq(validate_raw(two, sizeof two, 2, 1, KP_CODEC_ZSTD, -1, 0), KP_ERR_CORRUPT);
    ck_assert_int_eq(validate_raw(two, sizeof two, 2, 1, KP_CODEC_GZIP, -1, 0), KP_ERR_CORRUPT);
}
END_TEST

START_TEST(test_every_flip_in_crc_range_detected) {
    init_sample();
    kp_batch_opts_t o = kp_batch_opts_default();
    for (int c = KP_CODEC_NONE; c <= KP_CODEC_ZSTD; c += 4) {
        o.codec = (kp_codec_t)c;
        const uint8_t *p;
        size_t len;
        build(&o, sample, 3, &p, &len);
        uint8_t *w = malloc(len);
        for (size_t i = 0; i < len; i++) {
            for (int bit = 0; bit < 8; bit += 3) {
                memcpy(w, p, len);
                w[i] ^= (uint8_t)(1 << bit);
                kp_rd_t r;
                kp_batch_t b;
                kp_rd_init(&r, w, len);
                int rc = kp_batch_read(&r, &b);
                int crc_rc = rc == KP_OK ? kp_batch_verify_crc(&b) : rc;
                if (rc == KP_OK) rc = kp_batch_validate(&b, 0, &arena, MIB, NULL);
                /* a caller that checked the CRC itself gets the same verdict
                 * with KP_VALIDATE_CRC_VERIFIED: its check plus the rest */
                if (crc_rc == KP_OK) {
                    kp_arena_reset(&arena);
                    ck_assert_int_eq(kp_batch_validate(&b, KP_VALIDATE_CRC_VERIFIED, &arena, MIB, NULL), rc);
                } else if (rc == KP_OK) {
                    ck_abort_msg("validate accepted a batch whose CRC does not match");
                }
                if (i >= KP_BATCH_ATTR_OFFSET || (i >= 17 && i < 21)) ck_assert_int_ne(rc, KP_OK);
                else if (i < 8 || (i >= 12 && i < 16)) ck_assert_int_eq(rc, KP_OK); /* outside the CRC by design */
                else ck_assert_int_ne(rc, KP_OK); /* length, magic */
                kp_arena_reset(&arena);
            }
        }
        free(w);
    }
}
END_TEST

START_TEST(test_truncated_at_every_byte_and_bad_lengths) {
    init_sample();
    kp_batch_opts_t o = kp_batch_opts_default();
    const uint8_t *p;
    size_t len;
    build(&o, sample, NREC, &p, &len);
    for (size_t cut = 0; cut < len; cut++) {
        kp_rd_t r;
        kp_batch_t b;
        kp_rd_init(&r, p, cut);
        ck_assert_int_eq(kp_batch_read(&r, &b), KP_ERR_TRUNCATED);
    }
    uint8_t *w = malloc(len);
    int32_t lens[] = { -1, INT32_MIN, 0, 48, INT32_MAX, (int32_t)len };
    int want[] = { KP_ERR_BAD_LENGTH, KP_ERR_BAD_LENGTH, KP_ERR_BAD_LENGTH, KP_ERR_BAD_LENGTH, KP_ERR_TRUNCATED,
                   KP_ERR_TRUNCATED };
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        memcpy(w, p, len);
        kp_store_be32(w + 8, (uint32_t)lens[i]);
        kp_rd_t r;
        kp_batch_t b;
        kp_rd_init(&r, w, len);
        ck_assert_int_eq(kp_batch_read(&r, &b), want[i]);
    }
    /* a shorter (but >= 49) length leaves records out: CRC and structure fail */
    memcpy(w, p, len);
    kp_store_be32(w + 8, (uint32_t)(len - 12 - 3));
    kp_rd_t r;
    kp_batch_t b;
    kp_rd_init(&r, w, len);
    ck_assert_int_eq(kp_batch_read(&r, &b), KP_OK);
    ck_assert_int_eq(kp_batch_validate(&b, 0, &arena, MIB, NULL), KP_ERR_CORRUPT);
    /* baseOffset + lastOffsetDelta past INT64_MAX (baseOffset is outside the CRC) */
    memcpy(w, p, len);
    kp_batch_patch_base_offset(w, INT64_MAX - 1);
    kp_rd_init(&r, w, len);
    ck_assert_int_eq(kp_batch_read(&r, &b), KP_OK);
    ck_assert_int_eq(kp_batch_validate(&b, 0, &arena, MIB, NULL), KP_ERR_CORRUPT);
    /* negative count */
    memcpy(w, p, len);
    kp_store_be32(w + 57, 0xffffffffu);
    kp_rd_init(&r, w, len);
    ck_assert_int_eq(kp_batch_read(&r, &b), KP_ERR_BAD_VALUE);
    free(w);
}
END_TEST

START_TEST(test_compressed_bomb_batch) {
    size_t big = 8 * MIB;
    char *zeros = calloc(1, big);
    kp_record_in_t r = { 1, kp_slice_null(), { (const uint8_t *)zeros, big }, NULL, 0 };
    for (int c = KP_CODEC_GZIP; c <= KP_CODEC_ZSTD; c++) {
        kp_batch_opts_t o = kp_batch_opts_default();
        o.codec = (kp_codec_t)c;
        const uint8_t *p;
        size_t len;
        build(&o, &r, 1, &p, &len);
        ck_assert_uint_lt(len, big / 20);
        kp_batch_t b;
        read_one(p, len, &b);
        ck_assert_int_eq(kp_batch_validate(&b, 0, &arena, MIB, NULL), KP_ERR_TOO_LARGE);
        ck_assert_int_eq(kp_batch_validate(&b, 0, &arena, 2 * big, NULL), KP_OK);
        kp_arena_reset(&arena);
    }
    free(zeros);
}
END_TEST

/* ---- kafka-python fixtures ------------------------------------------------ */

static void hex(char **o, kp_slice_t s) {
    if (kp_slice_is_null(s)) {
        *o += sprintf(*o, "null");
        return;
    }
    *(*o)++ = '"';
    for (size_t i = 0; i < s.len; i++) *o += sprintf(*o, "%02x", s.p[i]);
    *(*o)++ = '"';
}

/* The record in the fixtures' JSON line format (see make-fixtures.py). */
static void json_line(char *o, const kp_record_t *r) {
    o += sprintf(o, "{\"offset\":%lld,\"timestamp\":%lld,\"key\":", (long long)r->offset, (long long)r->timestamp);
    hex(&o, r->key);
    o += sprintf(o, ",\"value\":");
    hex(&o, r->value);
    o += sprintf(o, ",\"headers\":[");
    kp_rd_t h;
    kp_rd_init(&h, r->headers.p, r->headers.len);
    kp_str_t hk;
    kp_bytes_t hv;
    for (int i = 0; kp_record_header_next(&h, &hk, &hv) == 1; i++) {
        o += sprintf(o, i ? ",[" : "[");
        hex(&o, hk);
        *o++ = ',';
        hex(&o, hv);
        *o++ = ']';
    }
    sprintf(o, "]}");
}

static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "missing fixture %s (run tests from the repo root)", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    b[n] = 0;
    *len = (size_t)n;
    return b;
}

/* kp-*: kafka-python's builder (2 batches: plain, then idempotent +
 * transactional at base offset 100); rk-*: librdkafka 2.0.2's Produce (1). */
START_TEST(test_client_fixtures) {
    const char *codecs[] = { "none", "gzip", "snappy", "lz4", "zstd" };
    const char *client = _i ? "rk" : "kp";
    char path[256], *line = malloc(4 * MIB);
    for (int c = 0; c < 5; c++) {
        size_t len, elen;
        snprintf(path, sizeof path, "test/fixtures/batches/%s-v2-%s.bin", client, codecs[c]);
        uint8_t *data = slurp(path, &len);
        snprintf(path, sizeof path, "test/fixtures/batches/%s-v2-%s.jsonl", client, codecs[c]);
        char *want = (char *)slurp(path, &elen), *cursor = want;
        kp_rd_t r;
        kp_rd_init(&r, data, len);
        int batches = 0, records = 0;
        while (kp_rd_remaining(&r) > 0) {
            kp_batch_t b;
            kp_batch_info_t info;
            ck_assert_int_eq(kp_batch_read(&r, &b), KP_OK);
            ck_assert_int_eq(kp_batch_codec(&b), c);
            ck_assert_int_eq(kp_batch_validate(&b, batches ? 0 : KP_VALIDATE_PRODUCER, &arena, 4 * MIB, &info), KP_OK);
            if (batches == 1) { /* the idempotent transactional one */
                ck_assert(kp_batch_is_transactional(&b));
                ck_assert_int_eq(b.producer_id, 4242);
                ck_assert_int_eq(b.producer_epoch, 3);
                ck_assert_int_eq(b.base_sequence, 17);
            }
            kp_record_iter_t it;
            kp_record_t rec;
            kp_record_iter_init(&it, &b, info.records, info.records_len);
            while (kp_record_iter_next(&it, &rec) == 1) {
                json_line(line, &rec);
                char *nl = strchr(cursor, '\n');
                ck_assert_ptr_nonnull(nl);
                *nl = 0;
                ck_assert_str_eq(line, cursor);
                cursor = nl + 1;
                records++;
            }
            batches++;
        }
        ck_assert_int_eq(batches, _i ? 1 : 2);
        ck_assert_int_eq(*cursor, 0); /* every expected record was seen */
        ck_assert_int_ge(records, _i ? 5 : 8);
        free(data);
        free(want);
        kp_arena_reset(&arena);
    }
    free(line);
}
END_TEST

/* Rebuilds `src` keeping the records whose index bit is set in `keep`. */
static void rewrite(const kp_batch_t *src, const kp_batch_opts_t *o, unsigned keep, const uint8_t **out, size_t *len) {
    const uint8_t *recs;
    size_t rlen;
    ck_assert_int_eq(kp_batch_records(src, &arena, MIB, &recs, &rlen), KP_OK);
    kp_batch_builder_t bb;
    kp_batch_builder_init(&bb, o);
    kp_record_iter_t it;
    kp_record_t rec;
    kp_record_iter_init(&it, src, recs, rlen);
    int rc;
    for (unsigned i = 0; (rc = kp_record_iter_next(&it, &rec)) == 1; i++)
        if (keep & (1u << i)) ck_assert_int_eq(kp_batch_builder_add_record(&bb, &rec), KP_OK);
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(kp_batch_builder_finish(&bb, &arena, out, len), KP_OK);
    kp_batch_builder_free(&bb);
}

/* The cleaner's rewrite: same header (base offset, epoch, producer fields,
 * codec, last offset delta, max timestamp), records kept with their offset
 * deltas and timestamps, optionally a delete horizon as base timestamp. */
START_TEST(test_rewrite_keeps_header_for_every_codec) {
    init_sample();
    for (int c = KP_CODEC_NONE; c <= KP_CODEC_ZSTD; c++) {
        for (int horizon = 0; horizon < 2; horizon++) {
            kp_batch_opts_t o = kp_batch_opts_default();
            o.codec = (kp_codec_t)c;
            o.flags = KP_BATCH_TRANSACTIONAL;
            o.base_offset = 5000;
            o.partition_leader_epoch = 7;
            o.producer_id = 31;
            o.producer_epoch = 3;
            o.base_sequence = 17;
            const uint8_t *p, *q;
            size_t len, qlen;
            build(&o, sample, NREC, &p, &len);
            kp_batch_t src, got;
            read_one(p, len, &src);
            kp_batch_opts_t ro = kp_batch_opts_from(&src);
            ck_assert_int_eq(ro.codec, c);
            if (horizon) ro.delete_horizon_ms = 50000;
            unsigned keep = 0x2 | 0x8; /* records 1 and 3: gaps, last one gone */
            rewrite(&src, &ro, keep, &q, &qlen);
            read_one(q, qlen, &got);
            ck_assert_int_eq(kp_batch_verify_crc(&got), KP_OK);
            ck_assert_int_eq(got.base_offset, 5000);
            ck_assert_int_eq(got.partition_leader_epoch, 7);
            ck_assert_int_eq(got.producer_id, 31);
            ck_assert_int_eq(got.producer_epoch, 3);
            ck_assert_int_eq(got.base_sequence, 17);
            ck_assert_int_eq(got.last_offset_delta, NREC - 1);
            ck_assert_int_eq(got.max_timestamp, src.max_timestamp);
            ck_assert_int_eq(got.records_count, 2);
            ck_assert_int_eq(kp_batch_codec(&got), c);
            ck_assert(kp_batch_is_transactional(&got));
            ck_assert_int_eq((got.attributes & KP_BATCH_DELETE_HORIZON) != 0, horizon);
            ck_assert_int_eq(got.base_timestamp, horizon ? 50000 : sample[1].timestamp);
            kp_batch_info_t info;
            ck_assert_int_eq(kp_batch_validate(&got, 0, &arena, MIB, &info), KP_OK);
            kp_record_iter_t it;
            kp_record_t rec;
            kp_record_iter_init(&it, &got, info.records, info.records_len);
            for (int i = 1; i <= 3; i += 2) {
                ck_assert_int_eq(kp_record_iter_next(&it, &rec), 1);
                ck_assert_int_eq(rec.offset, 5000 + i);
                ck_assert_int_eq(rec.timestamp, sample[i].timestamp);
                assert_slice(rec.key, sample[i].key);
                assert_slice(rec.value, sample[i].value);
                ck_assert_int_eq(rec.headers_count, sample[i].headers_count);
            }
            ck_assert_int_eq(kp_record_iter_next(&it, &rec), 0);
            /* a rewrite that keeps every record is byte-identical */
            if (!horizon && c == KP_CODEC_NONE) {
                rewrite(&src, &ro, 0x1f, &q, &qlen);
                ck_assert_uint_eq(qlen, len);
                ck_assert_mem_eq(q, p, len);
            }
            /* emptied: offsets and the max timestamp survive */
            rewrite(&src, &ro, 0, &q, &qlen);
            read_one(q, qlen, &got);
            ck_assert_int_eq(got.records_count, 0);
            ck_assert_int_eq(kp_batch_last_offset(&got), 5000 + NREC - 1);
            ck_assert_int_eq(got.max_timestamp, src.max_timestamp);
            ck_assert_int_eq(got.base_timestamp, horizon ? 50000 : src.max_timestamp);
            ck_assert_int_eq(kp_batch_validate(&got, 0, &arena, MIB, NULL), KP_OK);
            kp_arena_reset(&arena);
        }
    }
}
END_TEST

START_TEST(test_rewrite_log_append_time_and_errors) {
    init_sample();
    kp_batch_opts_t o = kp_batch_opts_default();
    const uint8_t *p, *q;
    size_t len, qlen;
    build(&o, sample, NREC, &p, &len);
    uint8_t *w = malloc(len);
    memcpy(w, p, len);
    kp_batch_patch_log_append_time(w, len, 777777);
    kp_batch_t src, got;
    read_one(w, len, &src);
    ck_assert_int_eq(kp_batch_verify_crc(&src), KP_OK);
    ck_assert(src.attributes & KP_BATCH_TIMESTAMP_LOG_APPEND);
    ck_assert_int_eq(src.max_timestamp, 777777);
    ck_assert_int_eq(src.base_timestamp, 1000); /* untouched */
    ck_assert_int_eq(kp_batch_validate(&src, KP_VALIDATE_PRODUCER, &arena, MIB, NULL), KP_OK);
    kp_batch_opts_t ro = kp_batch_opts_from(&src);
    rewrite(&src, &ro, 0x5, &q, &qlen);
    read_one(q, qlen, &got);
    ck_assert(got.attributes & KP_BATCH_TIMESTAMP_LOG_APPEND);
    ck_assert_int_eq(got.max_timestamp, 777777);
    kp_record_iter_t it;
    kp_record_t rec;
    kp_record_iter_init(&it, &got, q + KP_BATCH_HEADER_BYTES, qlen - KP_BATCH_HEADER_BYTES);
    ck_assert_int_eq(kp_record_iter_next(&it, &rec), 1);
    ck_assert_int_eq(rec.timestamp, 777777);
    ck_assert_int_eq(rec.offset, 0);
    ck_assert_int_eq(kp_record_iter_next(&it, &rec), 1);
    ck_assert_int_eq(rec.offset, 2);

    /* add_record: headers that do not match their count, decreasing deltas,
     * a kept last offset below the last record */
    kp_record_iter_init(&it, &src, w + KP_BATCH_HEADER_BYTES, len - KP_BATCH_HEADER_BYTES);
    ck_assert_int_eq(kp_record_iter_next(&it, &rec), 1);
    ck_assert_int_eq(kp_record_iter_next(&it, &rec), 1); /* record 1: two headers */
    kp_batch_builder_t bb;
    kp_batch_opts_t eo = kp_batch_opts_default();
    eo.last_offset_delta = 0;
    kp_batch_builder_init(&bb, &eo);
    kp_record_t bad = rec;
    bad.headers_count = 1;
    ck_assert_int_eq(kp_batch_builder_add_record(&bb, &bad), KP_ERR_BAD_VALUE);
    bad.headers_count = 3;
    ck_assert_int_eq(kp_batch_builder_add_record(&bb, &bad), KP_ERR_BAD_VALUE);
    bad = rec;
    bad.headers.len--;
    ck_assert_int_eq(kp_batch_builder_add_record(&bb, &bad), KP_ERR_BAD_VALUE);
    bad.headers_count = -1;
    ck_assert_int_eq(kp_batch_builder_add_record(&bb, &bad), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(kp_batch_builder_add_record(&bb, &rec), KP_OK);
    ck_assert_int_eq(kp_batch_builder_add_record(&bb, &rec), KP_ERR_BAD_VALUE); /* same delta */
    ck_assert_int_eq(kp_batch_builder_finish(&bb, &arena, &q, &qlen), KP_ERR_BAD_VALUE); /* delta 1 > 0 */
    kp_batch_builder_free(&bb);
    free(w);
}
END_TEST

/* kp_batch_read_header agrees with kp_batch_read on every header field and
 * on every header-level error, without needing the body. */
START_TEST(test_read_header_alone) {
    init_sample();
    kp_batch_opts_t o = kp_batch_opts_default();
    o.codec = KP_CODEC_LZ4;
    o.base_offset = 99;
    const uint8_t *p;
    size_t len;
    build(&o, sample, NREC, &p, &len);
    kp_batch_t full, h;
    read_one(p, len, &full);
    for (size_t n = 0; n < KP_BATCH_HEADER_BYTES; n++)
        ck_assert_int_eq(kp_batch_read_header(p, n, &h), KP_ERR_TRUNCATED);
    ck_assert_int_eq(kp_batch_read_header(p, KP_BATCH_HEADER_BYTES, &h), KP_OK);
    ck_assert_ptr_null(h.data);
#define SAME(f) ck_assert_int_eq(h.f, full.f)
    SAME(size); SAME(base_offset); SAME(batch_length); SAME(partition_leader_epoch); SAME(magic); SAME(crc);
    SAME(attributes); SAME(last_offset_delta); SAME(base_timestamp); SAME(max_timestamp); SAME(producer_id);
    SAME(producer_epoch); SAME(base_sequence); SAME(records_count);
#undef SAME
    uint8_t w[KP_BATCH_HEADER_BYTES];
    struct { size_t at; uint8_t v; int want; } bad[] = {
        { 11, 10, KP_ERR_BAD_LENGTH },   /* batchLength 10 < 49 */
        { 16, 1, KP_ERR_UNSUPPORTED },   /* magic 1 */
        { 22, 5, KP_ERR_BAD_VALUE },     /* codec 5 */
        { 21, 0x80, KP_ERR_BAD_VALUE },  /* unused attribute bit */
        { 57, 0x80, KP_ERR_BAD_VALUE },  /* recordsCount < 0 */
        { 23, 0x80, KP_ERR_BAD_VALUE },  /* lastOffsetDelta < 0 */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memcpy(w, p, sizeof w);
        w[bad[i].at] = bad[i].v;
        ck_assert_int_eq(kp_batch_read_header(w, sizeof w, &h), bad[i].want);
        /* and kp_batch_read says the same over the whole (patched) batch */
        uint8_t *all = malloc(len);
        memcpy(all, p, len);
        all[bad[i].at] = bad[i].v;
        kp_rd_t r;
        kp_rd_init(&r, all, len);
        int rc = kp_batch_read(&r, &h);
        if (bad[i].at == 11) ck_assert_int_eq(rc, KP_ERR_BAD_LENGTH);
        else ck_assert_int_eq(rc, bad[i].want);
        free(all);
    }
}
END_TEST

/* kp_record_iter_next has a fast path for well-formed records with short
 * varints; it must agree with the checked decoder (kp_record_iter_next_
 * checked) on every input: status, every decoded field, the iterator after.
 * Inputs: the sample records (null key and header value, tombstone, empty
 * values, headers) plus records with 2- and 3-byte varints and one with a
 * 4-byte value length, then every single byte of the records section set to
 * a few telling values, and every truncation. */
static void iter_pair_agree(const kp_batch_t *b, const uint8_t *recs, size_t len) {
    kp_record_iter_t fast, ref;
    kp_record_iter_init(&fast, b, recs, len);
    kp_record_iter_init(&ref, b, recs, len);
    for (int guard = 0; guard <= b->records_count + 1; guard++) {
        kp_record_t rf, rr;
        memset(&rf, 0xa5, sizeof rf);
        memset(&rr, 0x5a, sizeof rr);
        int cf = kp_record_iter_next(&fast, &rf);
        int cr = kp_record_iter_next_checked(&ref, &rr);
        ck_assert_int_eq(cf, cr);
        ck_assert_uint_eq(fast.rd.pos, ref.rd.pos);
        ck_assert_int_eq(fast.rd.err, ref.rd.err);
        ck_assert_int_eq(fast.left, ref.left);
        if (cf != 1) return;
        ck_assert_int_eq(rf.attributes, rr.attributes);
        ck_assert_int_eq(rf.timestamp, rr.timestamp);
        ck_assert_int_eq(rf.offset, rr.offset);
        ck_assert_int_eq(rf.offset_delta, rr.offset_delta);
        ck_assert_int_eq(rf.headers_count, rr.headers_count);
        ck_assert_ptr_eq(rf.key.p, rr.key.p);
        ck_assert_uint_eq(rf.key.len, rr.key.len);
        ck_assert_ptr_eq(rf.value.p, rr.value.p);
        ck_assert_uint_eq(rf.value.len, rr.value.len);
        ck_assert_ptr_eq(rf.headers.p, rr.headers.p);
        ck_assert_uint_eq(rf.headers.len, rr.headers.len);
    }
    ck_abort_msg("iterator returned more than recordsCount records");
}

/* kp_batch_validate's record fast path must give the reference verdict
 * (KP_VALIDATE_NO_FAST_PATH) and the same info. */
static void validate_pair_agree(const kp_batch_t *b, const uint8_t *sec, size_t slen) {
    kp_batch_t m = *b;
    uint8_t *whole = malloc(KP_BATCH_HEADER_BYTES + slen);
    ck_assert_ptr_nonnull(whole);
    memcpy(whole, b->data, KP_BATCH_HEADER_BYTES);
    memcpy(whole + KP_BATCH_HEADER_BYTES, sec, slen);
    m.data = whole;
    m.size = KP_BATCH_HEADER_BYTES + slen;
    kp_arena_t scratch; /* not `arena`: it holds the batch being mutated */
    kp_arena_init(&scratch, 4 * MIB);
    static const unsigned flag_sets[] = { 0, KP_VALIDATE_PRODUCER };
    /* header variants (fields as parsed; the CRC is not checked here):
     * as built, LogAppendTime, timestamps at the int64 edges, a base below
     * -1, a lastOffsetDelta one off either way */
    for (int v = 0; v < 7; v++) {
    kp_batch_t hv = m;
    switch (v) {
    case 1: hv.attributes |= KP_BATCH_TIMESTAMP_LOG_APPEND; break;
    case 2: hv.base_timestamp = INT64_MAX - 3; break;
    case 3: hv.base_timestamp = INT64_MIN + 3; break;
    case 4: hv.base_timestamp = -2; break;
    case 5: hv.last_offset_delta++; break;
    case 6: if (hv.last_offset_delta > 0) hv.last_offset_delta--; break;
    default: break;
    }
    for (size_t f = 0; f < 2; f++) {
        kp_batch_info_t fi, ri;
        memset(&fi, 0xa5, sizeof fi);
        memset(&ri, 0xa5, sizeof ri);
        unsigned fl = flag_sets[f] | KP_VALIDATE_CRC_VERIFIED; /* mutations break the CRC */
        int cf = kp_batch_validate(&hv, fl, &scratch, MIB, &fi);
        kp_arena_reset(&scratch);
        int cr = kp_batch_validate(&hv, fl | KP_VALIDATE_NO_FAST_PATH, &scratch, MIB, &ri);
        kp_arena_reset(&scratch);
        ck_assert_int_eq(cf, cr);
        if (cf == KP_OK) {
            ck_assert_ptr_eq(fi.records, ri.records);
            ck_assert_uint_eq(fi.records_len, ri.records_len);
            ck_assert_int_eq(fi.max_record_timestamp, ri.max_record_timestamp);
        }
    }
    }
    kp_arena_free(&scratch);
    free(whole);
}

START_TEST(test_record_fast_path_matches_checked) {
    init_sample();
    static uint8_t big[200000];
    memset(big, 'v', sizeof big);
    kp_record_in_t recs[NREC + 3];
    memcpy(recs, sample, sizeof sample);
    /* 2-byte value length, a timestamp delta of 3 bytes, then a 4-byte
     * value length (beyond the fast path) */
    recs[NREC] = (kp_record_in_t){ 1000 + 70, { NULL, 0 }, { big, 100 }, NULL, 0 };
    recs[NREC + 1] = (kp_record_in_t){ 1000 + 600000, { big, 3000 }, { big, 9000 }, h1, 2 };
    recs[NREC + 2] = (kp_record_in_t){ 1000 - 5, { NULL, 0 }, { big, sizeof big }, NULL, 0 };
    kp_batch_opts_t o = kp_batch_opts_default();
    o.base_offset = 1234;
    for (int n = 1; n <= NREC + 3; n++) {
        const uint8_t *p;
        size_t len;
        build(&o, recs, n, &p, &len);
        kp_batch_t b;
        read_one(p, len, &b);
        const uint8_t *sec = p + KP_BATCH_HEADER_BYTES;
        size_t slen = len - KP_BATCH_HEADER_BYTES;
        iter_pair_agree(&b, sec, slen);
        validate_pair_agree(&b, sec, slen);
        /* mutations only over the small records: bounded work */
        size_t mlen = n <= NREC + 1 ? slen : 64;
        uint8_t *m = malloc(slen);
        ck_assert_ptr_nonnull(m);
        static const uint8_t vals[] = { 0x00, 0x01, 0x02, 0x7f, 0x80, 0xff, 0x03, 0xfe };
        for (size_t at = 0; at < mlen; at++) {
            for (size_t v = 0; v < sizeof vals; v++) {
                memcpy(m, sec, slen);
                m[at] = vals[v];
                iter_pair_agree(&b, m, slen);
                validate_pair_agree(&b, m, slen);
            }
        }
        /* each truncation in a block of exactly its size, so that a read
         * past the end is a heap overflow the asan build reports, not a
         * read of the bytes that happen to follow */
        for (size_t cut = 0; cut < mlen; cut++) {
            uint8_t *t = malloc(cut ? cut : 1);
            ck_assert_ptr_nonnull(t);
            memcpy(t, sec, cut);
            iter_pair_agree(&b, t, cut);
            validate_pair_agree(&b, t, cut);
            free(t);
        }
        free(m);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("batch");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_round_trip_every_codec);
    tcase_add_test(tc, test_uncompressed_records_are_not_copied_and_patches_keep_crc);
    tcase_add_test(tc, test_txn_marker_and_kraft_control);
    tcase_add_test(tc, test_builder_input_errors_and_empty_batch);
    tcase_add_test(tc, test_rewrite_keeps_header_for_every_codec);
    tcase_add_test(tc, test_rewrite_log_append_time_and_errors);
    tcase_add_test(tc, test_read_header_alone);
    tcase_add_test(tc, test_validation_statuses);
    tcase_add_test(tc, test_every_flip_in_crc_range_detected);
    tcase_add_test(tc, test_truncated_at_every_byte_and_bad_lengths);
    tcase_add_test(tc, test_compressed_bomb_batch);
    tcase_add_test(tc, test_record_fast_path_matches_checked);
    tcase_add_loop_test(tc, test_client_fixtures, 0, 2);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
