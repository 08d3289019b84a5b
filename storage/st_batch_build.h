/* st_batch_build.h — encode an uncompressed RecordBatch v2 (with CRC).
 *
 * The cleaner rewrites batches keeping a subset of their records, and tests
 * need batches to append. Until protocol/ offers a batch builder, this small
 * encoder writes records itself (uncompressed only) and stamps the CRC-32C.
 */
#ifndef SKIFF_ST_BATCH_BUILD_H
#define SKIFF_ST_BATCH_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"

typedef struct st_rec {
    kp_bytes_t key;         /* null slice = null key */
    kp_bytes_t value;       /* null slice = tombstone */
    int64_t timestamp;      /* absolute */
    int32_t offset_delta;   /* must increase within a batch */
    int32_t headers_count;
    kp_slice_t headers;     /* raw, already-encoded header bytes */
} st_rec_t;

typedef struct st_batch_hdr {
    int64_t base_offset;
    int32_t leader_epoch;
    int16_t attributes;     /* codec bits must be 0 */
    int32_t last_offset_delta; /* >= the last record's offset_delta */
    int64_t base_timestamp;
    int64_t max_timestamp;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
} st_batch_hdr_t;

/* Bytes st_batch_encode will write for these records. */
size_t st_batch_encoded_size(const st_batch_hdr_t *h, const st_rec_t *recs, int32_t n);

/* Encodes the header h and n records into out[0..cap). Record timestamps
 * are written relative to h->base_timestamp (negative deltas allowed, as
 * Kafka does for the delete horizon). Returns KP_OK and *len, or
 * KP_ERR_OVERFLOW when cap is short. */
KP_MUST_CHECK int st_batch_encode(const st_batch_hdr_t *h, const st_rec_t *recs, int32_t n, uint8_t *out,
                                  size_t cap, size_t *len);

/* Recomputes the CRC of the batch in buf (size bytes) after an in-place edit. */
void st_batch_restamp_crc(uint8_t *batch, size_t size);

#endif
