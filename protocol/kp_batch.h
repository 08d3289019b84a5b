/* kp_batch.h — RecordBatch (magic 2): header view, validation, in-place patches.
 *
 * A batch is parsed in place: kp_batch_t holds the decoded 61-byte header and
 * a pointer to the bytes it came from. Nothing is copied. The broker assigns
 * offsets and the leader epoch with kp_batch_patch_*, which touch only bytes
 * outside the CRC (baseOffset, partitionLeaderEpoch), so no re-CRC is needed.
 */
#ifndef SKIFF_KP_BATCH_H
#define SKIFF_KP_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"

#define KP_BATCH_HEADER_BYTES 61   /* fixed header before the records */
#define KP_BATCH_LOG_OVERHEAD 12   /* baseOffset + batchLength */
#define KP_BATCH_MAGIC_V2 2
#define KP_BATCH_CRC_OFFSET 17
#define KP_BATCH_ATTR_OFFSET 21    /* CRC covers [21, end) */

/* attribute bits */
#define KP_BATCH_COMPRESSION_MASK 0x07
#define KP_BATCH_TIMESTAMP_LOG_APPEND 0x08
#define KP_BATCH_TRANSACTIONAL 0x10
#define KP_BATCH_CONTROL 0x20
#define KP_BATCH_DELETE_HORIZON 0x40

typedef enum kp_codec {
    KP_CODEC_NONE = 0,
    KP_CODEC_GZIP = 1,
    KP_CODEC_SNAPPY = 2,
    KP_CODEC_LZ4 = 3,
    KP_CODEC_ZSTD = 4,
} kp_codec_t;

typedef struct kp_batch {
    const uint8_t *data;      /* first byte of the batch (baseOffset) */
    size_t size;              /* whole batch: batchLength + 12 */
    int64_t base_offset;
    int32_t batch_length;
    int32_t partition_leader_epoch;
    int8_t magic;
    uint32_t crc;
    int16_t attributes;
    int32_t last_offset_delta;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t records_count;
} kp_batch_t;

static inline kp_codec_t kp_batch_codec(const kp_batch_t *b) {
    return (kp_codec_t)(b->attributes & KP_BATCH_COMPRESSION_MASK);
}
static inline bool kp_batch_is_control(const kp_batch_t *b) { return (b->attributes & KP_BATCH_CONTROL) != 0; }
static inline bool kp_batch_is_transactional(const kp_batch_t *b) {
    return (b->attributes & KP_BATCH_TRANSACTIONAL) != 0;
}
static inline int64_t kp_batch_last_offset(const kp_batch_t *b) {
    return b->base_offset + b->last_offset_delta;
}

/* Reads the header of the batch at the reader's position and advances past
 * the whole batch. Checks: at least 61 bytes, batchLength >= 49 and within
 * the input, magic == 2, attributes' unused bits clear, codec <= 4,
 * recordsCount >= 0 and lastOffsetDelta >= 0. Does NOT check the CRC (see
 * kp_batch_verify_crc) so that recovery can tell "torn" from "corrupt".
 * Returns KP_ERR_TRUNCATED when fewer bytes remain than the batch declares
 * (a partial batch at the end of a fetch or of a torn log). */
KP_MUST_CHECK int kp_batch_read(kp_rd_t *r, kp_batch_t *out);

/* KP_OK when the stored CRC-32C matches bytes [21, size). */
KP_MUST_CHECK int kp_batch_verify_crc(const kp_batch_t *b);

/* One record of a batch, decoded in place. Slices point into the records
 * section the iterator was given (the batch itself, or a decompressed copy). */
typedef struct kp_record {
    int8_t attributes;
    int64_t timestamp;        /* baseTimestamp + delta (LogAppendTime: maxTimestamp) */
    int64_t offset;           /* baseOffset + offsetDelta */
    int32_t offset_delta;
    kp_bytes_t key;           /* null slice = null key */
    kp_bytes_t value;         /* null slice = tombstone */
    int32_t headers_count;
    kp_slice_t headers;       /* raw header bytes; walk with kp_record_header_next */
} kp_record_t;

typedef struct kp_record_iter {
    kp_rd_t rd;
    const kp_batch_t *batch;
    int32_t left;             /* records not yet returned */
} kp_record_iter_t;

/* Iterate the records of `b` found in `records` (len bytes): for an
 * uncompressed batch, b->data + KP_BATCH_HEADER_BYTES; for a compressed one,
 * the decompressed section. */
void kp_record_iter_init(kp_record_iter_t *it, const kp_batch_t *b, const uint8_t *records, size_t len);
/* 1 with *rec filled, 0 at the end (all recordsCount records read and no
 * bytes left over), or a negative KP_ERR_* for malformed records. */
KP_MUST_CHECK int kp_record_iter_next(kp_record_iter_t *it, kp_record_t *rec);

/* Walks a record's headers: 1 with key/value filled, 0 at the end, <0 error. */
KP_MUST_CHECK int kp_record_header_next(kp_rd_t *headers, kp_str_t *key, kp_bytes_t *value);

/* Stamp offsets / epoch into a batch in a writable buffer (outside the CRC). */
void kp_batch_patch_base_offset(uint8_t *batch, int64_t base_offset);
void kp_batch_patch_leader_epoch(uint8_t *batch, int32_t epoch);

#endif
