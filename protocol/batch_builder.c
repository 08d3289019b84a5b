/* batch_builder.c — builds RecordBatch v2 from records (our client, the raft
 * log, transaction markers). Records are encoded as they are added into one
 * heap buffer; finish() compresses that section and writes header + CRC. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_batch.h"
#include "protocol/kp_compress.h"
#include "protocol/kp_crc32c.h"

#define DEFAULT_MAX_BYTES ((size_t)64 << 20)
#define FIRST_ALLOC_BYTES ((size_t)4 << 10)
#define VARINT_MAX_BYTES 5

kp_batch_opts_t kp_batch_opts_default(void) {
    kp_batch_opts_t o = { .codec = KP_CODEC_NONE, .flags = 0, .base_offset = 0, .partition_leader_epoch = -1,
                          .producer_id = -1, .producer_epoch = -1, .base_sequence = -1,
                          .max_bytes = DEFAULT_MAX_BYTES, .last_offset_delta = -1, .max_timestamp = -1,
                          .delete_horizon_ms = -1 };
    return o;
}

kp_batch_opts_t kp_batch_opts_from(const kp_batch_t *b) {
    kp_batch_opts_t o = kp_batch_opts_default();
    o.codec = kp_batch_codec(b);
    o.flags = (int16_t)(b->attributes & (KP_BATCH_TRANSACTIONAL | KP_BATCH_CONTROL | KP_BATCH_TIMESTAMP_LOG_APPEND));
    o.base_offset = b->base_offset;
    o.partition_leader_epoch = b->partition_leader_epoch;
    o.producer_id = b->producer_id;
    o.producer_epoch = b->producer_epoch;
    o.base_sequence = b->base_sequence;
    o.last_offset_delta = b->last_offset_delta;
    o.max_timestamp = b->max_timestamp;
    o.delete_horizon_ms = (b->attributes & KP_BATCH_DELETE_HORIZON) ? b->base_timestamp : -1;
    return o;
}

void kp_batch_builder_init(kp_batch_builder_t *bb, const kp_batch_opts_t *opts) {
    memset(bb, 0, sizeof *bb);
    bb->opts = *opts;
    bb->last_delta = -1;
    bb->base_timestamp = opts->delete_horizon_ms >= 0 ? opts->delete_horizon_ms : -1;
    bb->max_timestamp = -1;
}

void kp_batch_builder_free(kp_batch_builder_t *bb) {
    free(bb->buf);
    bb->buf = NULL;
    bb->len = bb->alloc = 0;
}

static int wr_varbytes(kp_wr_t *w, kp_bytes_t b) {
    if (kp_slice_is_null(b)) return kp_wr_varint(w, -1);
    int rc = kp_wr_varint(w, (int32_t)b.len);
    return rc ? rc : kp_wr_raw(w, b.p, b.len);
}

/* A record to encode: headers either as an array or already encoded. */
typedef struct rec_src {
    int64_t timestamp;
    kp_bytes_t key, value;
    int32_t headers_count;
    const kp_header_in_t *headers; /* NULL: raw_headers holds them */
    kp_slice_t raw_headers;
} rec_src_t;

/* The record body (everything after its length varint). */
static int encode_body(kp_wr_t *w, const rec_src_t *rec, int64_t ts_delta, int32_t delta) {
    int rc;
    if ((rc = kp_wr_i8(w, 0)) || (rc = kp_wr_varlong(w, ts_delta)) || (rc = kp_wr_varint(w, delta)) ||
        (rc = wr_varbytes(w, rec->key)) || (rc = wr_varbytes(w, rec->value)) ||
        (rc = kp_wr_varint(w, rec->headers_count)))
        return rc;
    if (rec->headers == NULL) return kp_wr_raw(w, rec->raw_headers.p, rec->raw_headers.len);
    for (int32_t i = 0; i < rec->headers_count; i++)
        if ((rc = wr_varbytes(w, rec->headers[i].key)) || (rc = wr_varbytes(w, rec->headers[i].value))) return rc;
    return KP_OK;
}

static int check_input(const kp_record_in_t *rec) {
    if (rec->headers_count < 0 || (rec->headers_count > 0 && rec->headers == NULL)) return KP_ERR_BAD_VALUE;
    for (int32_t i = 0; i < rec->headers_count; i++)
        if (kp_slice_is_null(rec->headers[i].key) || rec->headers[i].key.len > INT32_MAX) return KP_ERR_BAD_VALUE;
    if (rec->key.len > INT32_MAX || rec->value.len > INT32_MAX) return KP_ERR_TOO_LARGE;
    return KP_OK;
}

static int grow(kp_batch_builder_t *bb, size_t need) {
    if (need > bb->opts.max_bytes) return KP_ERR_TOO_LARGE;
    if (need <= bb->alloc) return KP_OK;
    size_t size = bb->alloc ? bb->alloc : FIRST_ALLOC_BYTES;
    while (size < need) size *= 2;
    if (size > bb->opts.max_bytes) size = bb->opts.max_bytes;
    uint8_t *p = realloc(bb->buf, size);
    if (p == NULL) return KP_ERR_NOMEM;
    bb->buf = p;
    bb->alloc = size;
    return KP_OK;
}

static int add_src(kp_batch_builder_t *bb, int32_t offset_delta, const rec_src_t *rec) {
    if (bb->err) return bb->err;
    if (offset_delta <= bb->last_delta || bb->count == INT32_MAX) return KP_ERR_BAD_VALUE;
    int64_t base_ts = bb->count == 0 && bb->opts.delete_horizon_ms < 0 ? rec->timestamp : bb->base_timestamp;
    int64_t ts_delta;
    if (__builtin_sub_overflow(rec->timestamp, base_ts, &ts_delta)) return KP_ERR_BAD_VALUE;
    kp_wr_t w;
    kp_wr_init_count(&w);
    int rc = encode_body(&w, rec, ts_delta, offset_delta);
    if (rc) return rc;
    if (w.pos > INT32_MAX) return KP_ERR_TOO_LARGE;
    size_t body = w.pos;
    if (bb->len + VARINT_MAX_BYTES + body < bb->len) return KP_ERR_TOO_LARGE;
    if ((rc = grow(bb, bb->len + VARINT_MAX_BYTES + body))) return rc;
    kp_wr_init(&w, bb->buf + bb->len, bb->alloc - bb->len);
    if ((rc = kp_wr_varint(&w, (int32_t)body)) || (rc = encode_body(&w, rec, ts_delta, offset_delta))) {
        bb->err = rc; /* cannot happen: the size was computed above */
        return rc;
    }
    bb->len += w.pos;
    bb->base_timestamp = base_ts;
    bb->count++;
    bb->last_delta = offset_delta;
    if (rec->timestamp > bb->max_timestamp) bb->max_timestamp = rec->timestamp;
    return KP_OK;
}

int kp_batch_builder_add_at(kp_batch_builder_t *bb, int32_t offset_delta, const kp_record_in_t *rec) {
    int rc = check_input(rec);
    if (rc) return rc;
    rec_src_t src = { .timestamp = rec->timestamp, .key = rec->key, .value = rec->value,
                      .headers_count = rec->headers_count, .headers = rec->headers };
    static const kp_header_in_t none[1];
    if (src.headers == NULL) src.headers = none; /* count is 0 (checked) */
    return add_src(bb, offset_delta, &src);
}

/* The headers must be exactly `count` well-formed headers. */
static int check_raw_headers(kp_slice_t raw, int32_t count) {
    kp_rd_t r;
    kp_rd_init(&r, raw.p, raw.len);
    kp_str_t k;
    kp_bytes_t v;
    for (int32_t i = 0; i < count; i++)
        if (kp_record_header_next(&r, &k, &v) != 1) return KP_ERR_BAD_VALUE;
    return kp_rd_remaining(&r) == 0 && kp_rd_ok(&r) ? KP_OK : KP_ERR_BAD_VALUE;
}

int kp_batch_builder_add_record(kp_batch_builder_t *bb, const kp_record_t *rec) {
    if (rec->key.len > INT32_MAX || rec->value.len > INT32_MAX) return KP_ERR_TOO_LARGE;
    if (rec->headers_count < 0) return KP_ERR_BAD_VALUE;
    if (check_raw_headers(rec->headers, rec->headers_count) != KP_OK) return KP_ERR_BAD_VALUE;
    rec_src_t src = { .timestamp = rec->timestamp, .key = rec->key, .value = rec->value,
                      .headers_count = rec->headers_count, .headers = NULL, .raw_headers = rec->headers };
    return add_src(bb, rec->offset_delta, &src);
}

int kp_batch_builder_add(kp_batch_builder_t *bb, const kp_record_in_t *rec) {
    if (bb->last_delta == INT32_MAX) return KP_ERR_TOO_LARGE;
    return kp_batch_builder_add_at(bb, bb->last_delta + 1, rec);
}

static void write_header(const kp_batch_builder_t *bb, uint8_t *p, size_t total) {
    const kp_batch_opts_t *o = &bb->opts;
    kp_wr_t w;
    kp_wr_init(&w, p, KP_BATCH_HEADER_BYTES);
    int16_t attrs = (int16_t)((o->codec & KP_BATCH_COMPRESSION_MASK) |
                              (o->flags & (KP_BATCH_TRANSACTIONAL | KP_BATCH_CONTROL | KP_BATCH_TIMESTAMP_LOG_APPEND)) |
                              (o->delete_horizon_ms >= 0 ? KP_BATCH_DELETE_HORIZON : 0));
    int32_t last_delta = o->last_offset_delta >= 0 ? o->last_offset_delta : bb->count ? bb->last_delta : 0;
    int64_t max_ts = o->max_timestamp >= 0 ? o->max_timestamp : bb->max_timestamp;
    int64_t base_ts = bb->count || o->delete_horizon_ms >= 0 ? bb->base_timestamp : max_ts;
    int rc = kp_wr_i64(&w, o->base_offset) | kp_wr_i32(&w, (int32_t)(total - KP_BATCH_LOG_OVERHEAD)) |
             kp_wr_i32(&w, o->partition_leader_epoch) | kp_wr_i8(&w, KP_BATCH_MAGIC_V2) | kp_wr_u32(&w, 0) |
             kp_wr_i16(&w, attrs) | kp_wr_i32(&w, last_delta) | kp_wr_i64(&w, base_ts) | kp_wr_i64(&w, max_ts) |
             kp_wr_i64(&w, o->producer_id) | kp_wr_i16(&w, o->producer_epoch) | kp_wr_i32(&w, o->base_sequence) |
             kp_wr_i32(&w, bb->count);
    assert(rc == KP_OK && w.pos == KP_BATCH_HEADER_BYTES);
    (void)rc;
}

int kp_batch_builder_finish(kp_batch_builder_t *bb, kp_arena_t *a, const uint8_t **out, size_t *len) {
    if (bb->err) return bb->err;
    if (bb->opts.last_offset_delta >= 0 && bb->opts.last_offset_delta < bb->last_delta) return KP_ERR_BAD_VALUE;
    const uint8_t *sec = bb->buf;
    size_t sec_len = bb->len;
    int rc;
    if (bb->opts.codec != KP_CODEC_NONE && (rc = kp_compress(bb->opts.codec, bb->buf ? bb->buf : (const uint8_t *)"",
                                                             bb->len, a, &sec, &sec_len)))
        return rc;
    size_t total = KP_BATCH_HEADER_BYTES + sec_len;
    if (total - KP_BATCH_LOG_OVERHEAD > INT32_MAX) return KP_ERR_TOO_LARGE;
    uint8_t *p = kp_arena_alloc(a, total);
    if (p == NULL) return KP_ERR_NOMEM;
    write_header(bb, p, total);
    if (sec_len) memcpy(p + KP_BATCH_HEADER_BYTES, sec, sec_len);
    kp_store_be32(p + KP_BATCH_CRC_OFFSET, kp_crc32c(0, p + KP_BATCH_ATTR_OFFSET, total - KP_BATCH_ATTR_OFFSET));
    *out = p;
    *len = total;
    return KP_OK;
}

/* One-record control batch with the given key and value. */
static int build_control(const kp_batch_opts_t *o, const uint8_t key[4], kp_bytes_t value, int64_t timestamp,
                         kp_arena_t *a, const uint8_t **out, size_t *len) {
    kp_batch_builder_t bb;
    kp_batch_builder_init(&bb, o);
    kp_record_in_t rec = { .timestamp = timestamp, .key = { key, 4 }, .value = value };
    int rc = kp_batch_builder_add(&bb, &rec);
    if (rc == KP_OK) rc = kp_batch_builder_finish(&bb, a, out, len);
    kp_batch_builder_free(&bb);
    return rc;
}

int kp_batch_build_txn_marker(int64_t producer_id, int16_t producer_epoch, bool commit, int32_t coordinator_epoch,
                              int64_t timestamp, kp_arena_t *a, const uint8_t **out, size_t *len) {
    kp_batch_opts_t o = kp_batch_opts_default();
    o.flags = KP_BATCH_CONTROL | KP_BATCH_TRANSACTIONAL;
    o.producer_id = producer_id;
    o.producer_epoch = producer_epoch;
    uint8_t key[4], val[6];
    kp_store_be16(key, 0);
    kp_store_be16(key + 2, commit ? KP_CONTROL_COMMIT : KP_CONTROL_ABORT);
    kp_store_be16(val, 0);
    kp_store_be32(val + 2, (uint32_t)coordinator_epoch);
    kp_bytes_t v = { val, sizeof val };
    return build_control(&o, key, v, timestamp, a, out, len);
}

int kp_batch_build_kraft_control(int16_t type, kp_bytes_t value, int64_t timestamp, int64_t base_offset,
                                 int32_t leader_epoch, kp_arena_t *a, const uint8_t **out, size_t *len) {
    if (type < KP_CONTROL_LEADER_CHANGE || type > KP_CONTROL_KRAFT_VOTERS || kp_slice_is_null(value))
        return KP_ERR_BAD_VALUE;
    kp_batch_opts_t o = kp_batch_opts_default();
    o.flags = KP_BATCH_CONTROL;
    o.base_offset = base_offset;
    o.partition_leader_epoch = leader_epoch;
    uint8_t key[4];
    kp_store_be16(key, 0);
    kp_store_be16(key + 2, (uint16_t)type);
    return build_control(&o, key, value, timestamp, a, out, len);
}
