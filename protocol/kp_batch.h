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

#include "protocol/kp_arena.h"
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
    /* wrapping add: kp_batch_validate rejects batches where this overflows */
    return (int64_t)((uint64_t)b->base_offset + (uint64_t)(int64_t)b->last_offset_delta);
}

/* Reads the header of the batch at the reader's position and advances past
 * the whole batch. Checks: at least 61 bytes, batchLength >= 49 and within
 * the input, magic == 2, attributes' unused bits clear, codec <= 4,
 * recordsCount >= 0 and lastOffsetDelta >= 0. Does NOT check the CRC (see
 * kp_batch_verify_crc) so that recovery can tell "torn" from "corrupt".
 * Returns KP_ERR_TRUNCATED when fewer bytes remain than the batch declares
 * (a partial batch at the end of a fetch or of a torn log). */
KP_MUST_CHECK int kp_batch_read(kp_rd_t *r, kp_batch_t *out);

/* Parses the 61-byte header at p (n bytes available, n >= 61) with
 * kp_batch_read's checks, but without the body: for callers that read the
 * header alone from a file. out->data is NULL; out->size is what the header
 * declares (the caller checks it against what it has). KP_ERR_TRUNCATED when
 * n < 61. */
KP_MUST_CHECK int kp_batch_read_header(const uint8_t *p, size_t n, kp_batch_t *out);

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
/* The same without the fast path for well-formed short-varint records: the
 * reference kp_record_iter_next must agree with (test/unit/test_batch.c). */
KP_MUST_CHECK int kp_record_iter_next_checked(kp_record_iter_t *it, kp_record_t *rec);

/* Walks a record's headers: 1 with key/value filled, 0 at the end, <0 error. */
KP_MUST_CHECK int kp_record_header_next(kp_rd_t *headers, kp_str_t *key, kp_bytes_t *value);

/* Stamp offsets / epoch into a batch in a writable buffer (outside the CRC). */
void kp_batch_patch_base_offset(uint8_t *batch, int64_t base_offset);
void kp_batch_patch_leader_epoch(uint8_t *batch, int32_t epoch);
/* LogAppendTime topics: sets the timestamp-type bit and maxTimestamp of the
 * batch (size bytes, writable) to ts and recomputes the CRC, which covers
 * both. */
void kp_batch_patch_log_append_time(uint8_t *batch, size_t size, int64_t ts);

/* ---- validation --------------------------------------------------------- */

/* kp_batch_validate flags */
#define KP_VALIDATE_PRODUCER 0x1  /* batch comes from a producer: offset deltas
                                   * must be exactly 0..n-1, n >= 1, no delete
                                   * horizon, transactional needs a producer id */
#define KP_VALIDATE_CRC_VERIFIED 0x2 /* the caller has just had KP_OK from
                                   * kp_batch_verify_crc on these same bytes:
                                   * skip the CRC (a pass over the whole batch,
                                   * ~18 % of a produce's CPU when done 3 times) */
#define KP_VALIDATE_NO_FAST_PATH 0x4 /* tests: the reference record checks
                                   * only (the fast path must agree) */

typedef struct kp_batch_info {
    const uint8_t *records;   /* records section (decompressed if needed) */
    size_t records_len;
    int64_t max_record_timestamp; /* largest record timestamp, -1 if none */
} kp_batch_info_t;

/* Everything a broker checks on a batch it did not build: the CRC (unless
 * KP_VALIDATE_CRC_VERIFIED), the
 * records section (decompressed into `a`, at most cap_bytes), every record
 * and header well-formed, recordsCount equal to the records present, no
 * trailing bytes, offset deltas strictly increasing from >= 0 and <=
 * lastOffsetDelta (stored batches: compaction leaves gaps and keeps the
 * original lastOffsetDelta, as Kafka's cleaner does) or exactly 0..n-1 with
 * lastOffsetDelta n-1 (KP_VALIDATE_PRODUCER), record timestamps >= -1 (CreateTime;
 * -1 = none), producer fields consistent, control batches' record keys
 * well-formed (whether a control batch is allowed here is the caller's call:
 * see kp_batch_is_control).
 * Returns KP_OK (info filled if non-NULL), KP_ERR_CORRUPT for CRC or
 * structural damage (-> CORRUPT_MESSAGE), KP_ERR_BAD_VALUE for well-formed
 * but invalid fields (-> INVALID_RECORD), KP_ERR_TOO_LARGE past cap_bytes,
 * KP_ERR_NOMEM when the arena is full. */
KP_MUST_CHECK int kp_batch_validate(const kp_batch_t *b, unsigned flags, kp_arena_t *a, size_t cap_bytes,
                                    kp_batch_info_t *info);

/* ---- control records ---------------------------------------------------- */

#define KP_CONTROL_ABORT 0
#define KP_CONTROL_COMMIT 1
#define KP_CONTROL_LEADER_CHANGE 2
#define KP_CONTROL_SNAPSHOT_HEADER 3
#define KP_CONTROL_SNAPSHOT_FOOTER 4
#define KP_CONTROL_KRAFT_VERSION 5
#define KP_CONTROL_KRAFT_VOTERS 6

/* Reads a control record key (INT16 version >= 0, INT16 type; extra bytes of
 * newer versions ignored). KP_ERR_BAD_VALUE when malformed. */
KP_MUST_CHECK int kp_control_key_read(kp_bytes_t key, int16_t *type);
/* Reads an ABORT/COMMIT value (INT16 version >= 0, INT32 coordinatorEpoch). */
KP_MUST_CHECK int kp_txn_marker_value_read(kp_bytes_t value, int32_t *coordinator_epoch);

/* ---- building ------------------------------------------------------------ */

typedef struct kp_header_in {
    kp_str_t key;             /* must not be null */
    kp_bytes_t value;         /* null slice = null value */
} kp_header_in_t;

typedef struct kp_record_in {
    int64_t timestamp;        /* ms; -1 = none */
    kp_bytes_t key;           /* null slice = null key */
    kp_bytes_t value;         /* null slice = tombstone */
    const kp_header_in_t *headers;
    int32_t headers_count;
} kp_record_in_t;

typedef struct kp_batch_opts {
    kp_codec_t codec;
    int16_t flags;            /* KP_BATCH_TRANSACTIONAL | KP_BATCH_CONTROL | KP_BATCH_TIMESTAMP_LOG_APPEND */
    int64_t base_offset;      /* 0 for a producer */
    int32_t partition_leader_epoch; /* -1 for a producer */
    int64_t producer_id;      /* -1 when not idempotent */
    int16_t producer_epoch;   /* -1 when unused */
    int32_t base_sequence;    /* -1 when unused */
    size_t max_bytes;         /* bound on the uncompressed records section */
    /* Rewriting a stored batch (the cleaner) keeps what its records alone
     * no longer tell: */
    int32_t last_offset_delta; /* -1: the last record's; else written as is
                                * (>= the last record's, else finish fails) */
    int64_t max_timestamp;    /* -1: the largest record timestamp; else
                               * written as is (an empty batch's base
                               * timestamp too, as Kafka) */
    int64_t delete_horizon_ms; /* -1: none; else sets KP_BATCH_DELETE_HORIZON
                                * and is the baseTimestamp: record timestamps
                                * are written as deltas from it (may be < 0) */
} kp_batch_opts_t;

/* Defaults: no compression, no producer, offsets 0.., epoch -1, 64 MiB,
 * last delta / max timestamp from the records, no delete horizon. */
kp_batch_opts_t kp_batch_opts_default(void);
/* Options that rebuild stored batch b with the same header: codec, flags
 * (transactional, control, LogAppendTime), base offset, leader epoch,
 * producer fields, lastOffsetDelta, maxTimestamp and delete horizon. Add the
 * records to keep with kp_batch_builder_add_record. */
kp_batch_opts_t kp_batch_opts_from(const kp_batch_t *b);

typedef struct kp_batch_builder {
    kp_batch_opts_t opts;
    uint8_t *buf;             /* records section, malloc'd, owned */
    size_t len, alloc;
    int32_t count;
    int32_t last_delta;       /* -1 before the first record */
    int64_t base_timestamp;
    int64_t max_timestamp;
    int err;                  /* sticky */
} kp_batch_builder_t;

/* Starts an empty batch. The builder owns a heap buffer until
 * kp_batch_builder_free. */
void kp_batch_builder_init(kp_batch_builder_t *bb, const kp_batch_opts_t *opts);
/* Appends a record at offset delta last+1. Copies its bytes. KP_ERR_TOO_LARGE
 * past opts.max_bytes, KP_ERR_BAD_VALUE for a null header key. */
KP_MUST_CHECK int kp_batch_builder_add(kp_batch_builder_t *bb, const kp_record_in_t *rec);
/* Same with an explicit offset delta, which must be above the last one (for
 * converted or compacted data). */
KP_MUST_CHECK int kp_batch_builder_add_at(kp_batch_builder_t *bb, int32_t offset_delta, const kp_record_in_t *rec);
/* Copies record `rec` as read by kp_record_iter_next (its offset delta,
 * timestamp, key, value and already-encoded headers, which are walked again
 * and must be exactly rec->headers_count: else KP_ERR_BAD_VALUE). Offset
 * deltas must increase as for kp_batch_builder_add_at. */
KP_MUST_CHECK int kp_batch_builder_add_record(kp_batch_builder_t *bb, const kp_record_t *rec);
/* Writes the finished batch (header, compressed records, CRC) into arena `a`;
 * *out is valid until the arena is reset. The builder may then be freed. An
 * empty batch gets timestamps -1 and lastOffsetDelta 0 unless the opts give
 * them. */
KP_MUST_CHECK int kp_batch_builder_finish(kp_batch_builder_t *bb, kp_arena_t *a, const uint8_t **out, size_t *len);
void kp_batch_builder_free(kp_batch_builder_t *bb);

/* A transaction marker batch (control + transactional, one record, never
 * compressed): COMMIT if `commit`, else ABORT, with coordinatorEpoch. */
KP_MUST_CHECK int kp_batch_build_txn_marker(int64_t producer_id, int16_t producer_epoch, bool commit,
                                            int32_t coordinator_epoch, int64_t timestamp, kp_arena_t *a,
                                            const uint8_t **out, size_t *len);
/* A KRaft control batch (types 2..6) holding one record whose value is the
 * caller's already-encoded message; base offset and leader epoch as given. */
KP_MUST_CHECK int kp_batch_build_kraft_control(int16_t type, kp_bytes_t value, int64_t timestamp,
                                               int64_t base_offset, int32_t leader_epoch, kp_arena_t *a,
                                               const uint8_t **out, size_t *len);

#endif
