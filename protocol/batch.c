/* batch.c — RecordBatch v2 header parsing and in-place patches. */
#include "protocol/kp_batch.h"

#include <assert.h>

#include "protocol/kp_crc32c.h"

int kp_batch_read(kp_rd_t *r, kp_batch_t *out) {
    size_t start = r->pos;
    if (kp_rd_remaining(r) < KP_BATCH_LOG_OVERHEAD) return kp_rd_fail(r, KP_ERR_TRUNCATED);
    int rc = KP_OK;
    kp_slice_t whole;
    if ((rc = kp_rd_i64(r, &out->base_offset)) || (rc = kp_rd_i32(r, &out->batch_length))) return rc;
    if (out->batch_length < KP_BATCH_HEADER_BYTES - KP_BATCH_LOG_OVERHEAD)
        return kp_rd_fail(r, KP_ERR_BAD_LENGTH);
    if ((size_t)out->batch_length > kp_rd_remaining(r)) return kp_rd_fail(r, KP_ERR_TRUNCATED);
    if ((rc = kp_rd_i32(r, &out->partition_leader_epoch)) || (rc = kp_rd_i8(r, &out->magic))) return rc;
    if (out->magic != KP_BATCH_MAGIC_V2) return kp_rd_fail(r, KP_ERR_UNSUPPORTED);
    if ((rc = kp_rd_u32(r, &out->crc)) || (rc = kp_rd_i16(r, &out->attributes)) ||
        (rc = kp_rd_i32(r, &out->last_offset_delta)) || (rc = kp_rd_i64(r, &out->base_timestamp)) ||
        (rc = kp_rd_i64(r, &out->max_timestamp)) || (rc = kp_rd_i64(r, &out->producer_id)) ||
        (rc = kp_rd_i16(r, &out->producer_epoch)) || (rc = kp_rd_i32(r, &out->base_sequence)) ||
        (rc = kp_rd_i32(r, &out->records_count)))
        return rc;
    if ((out->attributes & ~0x7f) != 0 || (out->attributes & KP_BATCH_COMPRESSION_MASK) > KP_CODEC_ZSTD)
        return kp_rd_fail(r, KP_ERR_BAD_VALUE);
    if (out->records_count < 0 || out->last_offset_delta < 0) return kp_rd_fail(r, KP_ERR_BAD_VALUE);
    size_t rest = (size_t)out->batch_length - (KP_BATCH_HEADER_BYTES - KP_BATCH_LOG_OVERHEAD);
    if ((rc = kp_rd_skip(r, rest))) return rc;
    out->size = (size_t)out->batch_length + KP_BATCH_LOG_OVERHEAD;
    assert(r->pos - start == out->size);
    /* re-take the whole range through the reader to get a checked pointer */
    r->pos = start;
    if ((rc = kp_rd_raw(r, out->size, &whole))) return rc;
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
