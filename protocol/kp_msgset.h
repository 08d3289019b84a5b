/* kp_msgset.h — legacy message sets (magic 0 and 1): read, validate,
 * convert to one v2 batch, and down-convert a v2 batch for old fetchers.
 *
 * A message set is a concatenation of (INT64 offset, INT32 size, message);
 * the message carries a CRC-32 (IEEE, zlib's crc32) over magic..end. A
 * compressed message is a wrapper whose value is a compressed inner message
 * set; the iterator flattens wrappers (one level, as Kafka) and reports
 * absolute offsets: magic 1 inner offsets are relative (0..n-1) and the
 * wrapper carries the last inner's absolute offset, except that a wrapper
 * offset of 0 (some librdkafka versions) leaves the inner offsets as they are.
 * Inner offsets need not ascend: Kafka ignores them for magic 0 and rewrites
 * non-sequential magic 1 ones, and Sarama (default version 0.8.2) sends them
 * all at 0. Only an absolute offset that would overflow is corrupt.
 */
#ifndef SKIFF_KP_MSGSET_H
#define SKIFF_KP_MSGSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_arena.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_wire.h"

#define KP_MSG_V0_MIN_BYTES 14  /* crc magic attrs keylen vallen */
#define KP_MSG_V1_MIN_BYTES 22  /* + timestamp */
#define KP_MSG_TIMESTAMP_LOG_APPEND 0x08

typedef struct kp_legacy_msg {
    int64_t offset;           /* absolute */
    int8_t magic;             /* 0 or 1 */
    int8_t attributes;        /* of this (inner) message */
    int64_t timestamp;        /* -1 for magic 0; the wrapper's for LogAppendTime */
    kp_bytes_t key;           /* null slice = null */
    kp_bytes_t value;
    kp_codec_t wrapper_codec; /* codec of the wrapper it came from, or NONE */
} kp_legacy_msg_t;

typedef struct kp_msgset_iter {
    kp_rd_t outer;
    kp_arena_t *arena;        /* decompressed inner sets live here */
    size_t cap_bytes;         /* cap on one wrapper's decompressed size */
    bool in_wrapper;
    kp_rd_t inner;
    int64_t offset_adjust;    /* added to inner offsets */
    int64_t wrapper_timestamp;
    bool wrapper_log_append;
    kp_codec_t wrapper_codec;
} kp_msgset_iter_t;

/* Iterates the set in buf (len bytes); slices point into buf or the arena. */
void kp_msgset_iter_init(kp_msgset_iter_t *it, const uint8_t *buf, size_t len, kp_arena_t *a, size_t cap_bytes);
/* 1 with *msg filled, 0 at the end, <0 on error: KP_ERR_TRUNCATED for a
 * partial last entry (normal at the end of a fetch), KP_ERR_CORRUPT for CRC,
 * size or structure errors (also inside a wrapper), KP_ERR_UNSUPPORTED when
 * an entry has magic 2 (a v2 batch), KP_ERR_BAD_VALUE for an invalid codec,
 * KP_ERR_TOO_LARGE when a wrapper expands past cap_bytes. Errors are sticky. */
KP_MUST_CHECK int kp_msgset_iter_next(kp_msgset_iter_t *it, kp_legacy_msg_t *msg);

/* Validates a whole set (every entry, no partial tail); *count = messages. */
KP_MUST_CHECK int kp_msgset_validate(const uint8_t *buf, size_t len, kp_arena_t *a, size_t cap_bytes,
                                     int32_t *count);

#define KP_MSGSET_ASSIGN_OFFSETS 0x1 /* ignore the producer's offsets: deltas 0..n-1, base 0 */

/* Converts a whole legacy set into ONE v2 batch in arena `a`, compressed with
 * `codec`: same keys, values, timestamps (-1 for magic 0), no headers, no
 * producer id. Without KP_MSGSET_ASSIGN_OFFSETS the base offset is the first
 * message's and offsets must strictly increase (else KP_ERR_BAD_VALUE). An
 * empty set is KP_ERR_BAD_VALUE. */
KP_MUST_CHECK int kp_msgset_to_batch(const uint8_t *buf, size_t len, unsigned flags, kp_codec_t codec,
                                     kp_arena_t *a, size_t cap_bytes, const uint8_t **out, size_t *out_len);

/* Down-converts the records of v2 batch `b` (its records section as returned
 * by kp_batch_records) into an UNCOMPRESSED magic 0 or 1 message set in arena
 * `a`, one message per record at its absolute offset. Headers are dropped;
 * magic 0 drops timestamps; a control batch yields an empty set (old
 * consumers never see markers). */
KP_MUST_CHECK int kp_batch_to_msgset(const kp_batch_t *b, const uint8_t *records, size_t len, int8_t magic,
                                     kp_arena_t *a, const uint8_t **out, size_t *out_len);

#endif
