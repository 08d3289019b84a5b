/* batch.c — RecordBatch v2 header parsing and in-place patches. */
#include "protocol/kp_batch.h"

#include <assert.h>
#include <stdbool.h>

#include "protocol/kp_crc32c.h"
#include "protocol/record_fast_int.h"

#define MAX_TIMESTAMP_OFFSET 35 /* maxTimestamp inside the header */

int kp_batch_read_header(const uint8_t *p, size_t n, kp_batch_t *out) {
    if (n < KP_BATCH_HEADER_BYTES) return KP_ERR_TRUNCATED;
    /* Fixed offsets, loaded directly: a header is parsed several times per
     * produced batch (handler, storage), and 13 kp_rd_* calls cost ~300
     * instructions; all 61 bytes are known to be there. */
    out->base_offset = (int64_t)kp_load_be64(p);
    out->batch_length = (int32_t)kp_load_be32(p + 8);
    out->partition_leader_epoch = (int32_t)kp_load_be32(p + 12);
    out->magic = (int8_t)p[16];
    out->crc = kp_load_be32(p + KP_BATCH_CRC_OFFSET);
    out->attributes = (int16_t)kp_load_be16(p + KP_BATCH_ATTR_OFFSET);
    out->last_offset_delta = (int32_t)kp_load_be32(p + 23);
    out->base_timestamp = (int64_t)kp_load_be64(p + 27);
    out->max_timestamp = (int64_t)kp_load_be64(p + MAX_TIMESTAMP_OFFSET);
    out->producer_id = (int64_t)kp_load_be64(p + 43);
    out->producer_epoch = (int16_t)kp_load_be16(p + 51);
    out->base_sequence = (int32_t)kp_load_be32(p + 53);
    out->records_count = (int32_t)kp_load_be32(p + 57);
    _Static_assert(57 + 4 == KP_BATCH_HEADER_BYTES, "recordsCount ends the header");
    _Static_assert(MAX_TIMESTAMP_OFFSET == 35, "maxTimestamp follows baseTimestamp at 27");
    if (out->batch_length < KP_BATCH_HEADER_BYTES - KP_BATCH_LOG_OVERHEAD) return KP_ERR_BAD_LENGTH;
    if (out->magic != KP_BATCH_MAGIC_V2) return KP_ERR_UNSUPPORTED;
    if ((out->attributes & ~0x7f) != 0 || (out->attributes & KP_BATCH_COMPRESSION_MASK) > KP_CODEC_ZSTD)
        return KP_ERR_BAD_VALUE;
    if (out->records_count < 0 || out->last_offset_delta < 0) return KP_ERR_BAD_VALUE;
    out->size = (size_t)out->batch_length + KP_BATCH_LOG_OVERHEAD;
    out->data = NULL;
    return KP_OK;
}

int kp_batch_read(kp_rd_t *r, kp_batch_t *out) {
    /* length first, through a copy of the reader: a batch longer than what is
     * left is torn (TRUNCATED) whatever its other fields say, which recovery
     * relies on */
    kp_rd_t peek = *r;
    int64_t base_offset;
    int32_t batch_length;
    int rc;
    if (kp_rd_remaining(r) < KP_BATCH_LOG_OVERHEAD) return kp_rd_fail(r, KP_ERR_TRUNCATED);
    if ((rc = kp_rd_i64(&peek, &base_offset)) || (rc = kp_rd_i32(&peek, &batch_length))) return kp_rd_fail(r, rc);
    if (batch_length < KP_BATCH_HEADER_BYTES - KP_BATCH_LOG_OVERHEAD) return kp_rd_fail(r, KP_ERR_BAD_LENGTH);
    if ((size_t)batch_length > kp_rd_remaining(&peek)) return kp_rd_fail(r, KP_ERR_TRUNCATED);
    kp_slice_t whole;
    if ((rc = kp_rd_raw(r, (size_t)batch_length + KP_BATCH_LOG_OVERHEAD, &whole))) return rc;
    if ((rc = kp_batch_read_header(whole.p, whole.len, out))) return kp_rd_fail(r, rc);
    assert(out->size == whole.len);
    out->data = whole.p;
    return KP_OK;
}

int kp_batch_verify_crc(const kp_batch_t *b) {
    assert(b->size >= KP_BATCH_HEADER_BYTES);
    uint32_t crc = kp_crc32c(0, b->data + KP_BATCH_ATTR_OFFSET, b->size - KP_BATCH_ATTR_OFFSET);
    return crc == b->crc ? KP_OK : KP_ERR_CORRUPT;
}

void kp_batch_patch_base_offset(uint8_t *batch, int64_t base_offset) {
    kp_store_be64(batch, (uint64_t)base_offset);
}

void kp_batch_patch_leader_epoch(uint8_t *batch, int32_t epoch) {
    kp_store_be32(batch + 12, (uint32_t)epoch);
}

void kp_batch_patch_log_append_time(uint8_t *batch, size_t size, int64_t ts) {
    assert(size >= KP_BATCH_HEADER_BYTES);
    uint16_t attrs = kp_load_be16(batch + KP_BATCH_ATTR_OFFSET);
    kp_store_be16(batch + KP_BATCH_ATTR_OFFSET, (uint16_t)(attrs | KP_BATCH_TIMESTAMP_LOG_APPEND));
    kp_store_be64(batch + MAX_TIMESTAMP_OFFSET, (uint64_t)ts);
    kp_store_be32(batch + KP_BATCH_CRC_OFFSET,
                  kp_crc32c(0, batch + KP_BATCH_ATTR_OFFSET, size - KP_BATCH_ATTR_OFFSET));
}

void kp_record_iter_init(kp_record_iter_t *it, const kp_batch_t *b, const uint8_t *records, size_t len) {
    kp_rd_init(&it->rd, records, len);
    it->batch = b;
    it->left = b->records_count;
}

/* Signed varint length: -1 = null, other negatives are corrupt. */
static int rd_varbytes(kp_rd_t *r, bool nullable, kp_bytes_t *out) {
    int32_t n = 0;
    int rc = kp_rd_varint(r, &n);
    if (rc) return rc;
    if (n == -1 && nullable) {
        *out = kp_slice_null();
        return KP_OK;
    }
    if (n < 0) return kp_rd_fail(r, KP_ERR_BAD_LENGTH);
    return kp_rd_raw(r, (size_t)n, out);
}

/* ---- record fast path ---------------------------------------------------
 * Decoding a record through kp_rd_* costs a call per field and per varint
 * byte: ~600 instructions for a 100-byte record, more than half of the
 * broker's user-space instructions on a produce of small records (every
 * record is validated, as Kafka does). The fast path below decodes a record
 * whose varints are at most 3 bytes (lengths < 1 MiB, timestamp deltas
 * below ~17 min) straight from the bytes. It accepts only what the checked
 * path accepts, with the same result, and declines (returns false, nothing
 * changed but *rec) on anything else, which the checked path then decodes
 * and, if malformed, reports with its exact error. */

/* Writes *rec even when it declines; the checked path then rewrites it. */
static inline bool record_fast(kp_record_iter_t *it, kp_record_t *rec) {
    kp_rd_t *r = &it->rd;
    const uint8_t *p = r->buf + r->pos, *end = r->buf + r->len;
    uint32_t u;
    if (!fast_uleb3(&p, end, &u)) return false;
    int32_t len = unzigzag(u);
    if (len < 0 || (size_t)len > (size_t)(end - p)) return false;
    const uint8_t *bend = p + len;
    const uint8_t *b = p;
    if (b >= bend) return false;
    rec->attributes = (int8_t)*b++;
    if (!fast_uleb3(&b, bend, &u)) return false;
    int64_t ts_delta = unzigzag(u);
    if (!fast_uleb3(&b, bend, &u)) return false;
    rec->offset_delta = unzigzag(u);
    if (rec->offset_delta < 0) return false;
    if (!fast_varbytes(&b, bend, true, &rec->key) || !fast_varbytes(&b, bend, true, &rec->value)) return false;
    if (!fast_uleb3(&b, bend, &u)) return false;
    rec->headers_count = unzigzag(u);
    if (rec->headers_count < 0) return false;
    rec->headers.p = b;
    rec->headers.len = (size_t)(bend - b);
    for (int32_t i = 0; i < rec->headers_count; i++) {
        kp_bytes_t hk, hv;
        if (!fast_varbytes(&b, bend, false, &hk) || !fast_varbytes(&b, bend, true, &hv)) return false;
    }
    if (b != bend) return false;
    const kp_batch_t *bt = it->batch;
    /* wrapping adds, as in the checked path below */
    rec->offset = (int64_t)((uint64_t)bt->base_offset + (uint64_t)(int64_t)rec->offset_delta);
    rec->timestamp = (bt->attributes & KP_BATCH_TIMESTAMP_LOG_APPEND)
                         ? bt->max_timestamp
                         : (int64_t)((uint64_t)bt->base_timestamp + (uint64_t)ts_delta);
    r->pos = (size_t)(bend - r->buf);
    it->left--;
    return true;
}

/* The checked path: every field through kp_rd_*, exact errors. Kept out of
 * line so that the fast path's caller stays a leaf-like function. */
__attribute__((noinline)) static int record_checked(kp_record_iter_t *it, kp_record_t *rec) {
    kp_rd_t *r = &it->rd;
    int32_t len = 0;
    int rc = kp_rd_varint(r, &len);
    if (rc) return rc;
    if (len < 0 || (size_t)len > kp_rd_remaining(r)) return kp_rd_fail(r, KP_ERR_BAD_LENGTH);
    kp_slice_t body;
    if ((rc = kp_rd_raw(r, (size_t)len, &body))) return rc;
    kp_rd_t b;
    kp_rd_init(&b, body.p, body.len);
    int64_t ts_delta = 0;
    if ((rc = kp_rd_i8(&b, &rec->attributes)) || (rc = kp_rd_varlong(&b, &ts_delta)) ||
        (rc = kp_rd_varint(&b, &rec->offset_delta)) || (rc = rd_varbytes(&b, true, &rec->key)) ||
        (rc = rd_varbytes(&b, true, &rec->value)) || (rc = kp_rd_varint(&b, &rec->headers_count)))
        return kp_rd_fail(r, rc);
    if (rec->headers_count < 0) return kp_rd_fail(r, KP_ERR_BAD_LENGTH);
    if (rec->offset_delta < 0) return kp_rd_fail(r, KP_ERR_BAD_VALUE);
    rec->headers.p = b.buf + b.pos;
    rec->headers.len = kp_rd_remaining(&b);
    /* walk the headers now so that a caller never meets a malformed one later */
    for (int32_t i = 0; i < rec->headers_count; i++) {
        kp_str_t hk;
        kp_bytes_t hv;
        if ((rc = kp_record_header_next(&b, &hk, &hv)) != 1) return kp_rd_fail(r, rc < 0 ? rc : KP_ERR_CORRUPT);
    }
    if (kp_rd_remaining(&b) != 0) return kp_rd_fail(r, KP_ERR_CORRUPT);
    const kp_batch_t *bt = it->batch;
    /* wrapping adds: these fields are untrusted and must not be UB; a batch
     * whose offsets overflow is rejected by kp_batch_validate */
    rec->offset = (int64_t)((uint64_t)bt->base_offset + (uint64_t)(int64_t)rec->offset_delta);
    rec->timestamp = (bt->attributes & KP_BATCH_TIMESTAMP_LOG_APPEND)
                         ? bt->max_timestamp
                         : (int64_t)((uint64_t)bt->base_timestamp + (uint64_t)ts_delta);
    it->left--;
    return 1;
}

int kp_record_iter_next(kp_record_iter_t *it, kp_record_t *rec) {
    kp_rd_t *r = &it->rd;
    if (r->err) return r->err;
    if (it->left == 0) return kp_rd_remaining(r) == 0 ? 0 : kp_rd_fail(r, KP_ERR_CORRUPT);
    if (record_fast(it, rec)) return 1;
    return record_checked(it, rec);
}

int kp_record_iter_next_checked(kp_record_iter_t *it, kp_record_t *rec) {
    kp_rd_t *r = &it->rd;
    if (r->err) return r->err;
    if (it->left == 0) return kp_rd_remaining(r) == 0 ? 0 : kp_rd_fail(r, KP_ERR_CORRUPT);
    return record_checked(it, rec);
}

int kp_record_header_next(kp_rd_t *headers, kp_str_t *key, kp_bytes_t *value) {
    if (headers->err) return headers->err;
    if (kp_rd_remaining(headers) == 0) return 0;
    int rc;
    if ((rc = rd_varbytes(headers, false, key)) || (rc = rd_varbytes(headers, true, value))) return rc;
    return 1;
}
