/* st_producer_state.h — idempotent/transactional producer state of a partition.
 *
 * Per producer id: epoch, coordinator epoch, the last ST_PS_BATCHES_KEPT
 * batches (first/last sequence and offsets) for duplicate detection, and the
 * first offset of its open transaction. The broker asks st_ps_check before
 * appending; the log calls st_ps_update / st_ps_end_txn after the write, so
 * the state always matches the log. Snapshots "<offset>.snapshot" (binary,
 * CRC-32C) are written at roll and close; open rebuilds from the latest
 * snapshot plus the log after it. Bounded by ST_PS_PRODUCERS_MAX producers
 * per partition; st_ps_expire drops idle ones (producer.id.expiration.ms).
 */
#ifndef SKIFF_ST_PRODUCER_STATE_H
#define SKIFF_ST_PRODUCER_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"

#define ST_PS_BATCHES_KEPT 5
#define ST_PS_PRODUCERS_MAX (1u << 20)

typedef struct st_ps_batch {
    int32_t first_seq;
    int32_t last_seq;
    int64_t first_offset;
    int64_t last_offset;
} st_ps_batch_t;

typedef struct st_ps_entry {
    int64_t producer_id;      /* -1 = free slot */
    int16_t epoch;
    int32_t coordinator_epoch;
    int64_t txn_first_offset; /* -1 when no open transaction */
    int64_t last_timestamp_ms;
    uint8_t n_batches;        /* valid entries in batches, oldest first */
    st_ps_batch_t batches[ST_PS_BATCHES_KEPT];
} st_ps_entry_t;

typedef struct st_producer_state {
    st_ps_entry_t *slots;     /* open addressing, linear probing */
    size_t cap;               /* power of two */
    size_t count;
} st_producer_state_t;

typedef enum st_ps_verdict {
    ST_PS_OK = 0,
    ST_PS_DUPLICATE = 1,      /* dup_first, dup_last = the original offsets */
    ST_PS_OUT_OF_ORDER = 2,   /* OUT_OF_ORDER_SEQUENCE_NUMBER */
    ST_PS_FENCED = 3,         /* INVALID_PRODUCER_EPOCH (older epoch) */
    ST_PS_UNKNOWN_PRODUCER = 4, /* unknown id with a non-zero sequence */
} st_ps_verdict_t;

KP_MUST_CHECK int st_ps_init(st_producer_state_t *ps);
void st_ps_free(st_producer_state_t *ps);
void st_ps_clear(st_producer_state_t *ps);

/* The entry for pid, or NULL. Valid until the next update/expire. */
const st_ps_entry_t *st_ps_get(const st_producer_state_t *ps, int64_t pid);

/* Idempotence check for a data batch of pid/epoch with sequences
 * [first_seq, last_seq]. Pure: changes nothing. Rules (Kafka's): an
 * unknown pid or a new epoch must start at sequence 0 (UNKNOWN_PRODUCER /
 * OUT_OF_ORDER), and so must the first batch of an epoch only a marker
 * has carried so far (transactions v2 bump the epoch in the EndTxn
 * markers); an older epoch is FENCED; one of the last ST_PS_BATCHES_KEPT
 * batches again is DUPLICATE (its offsets out); else last + 1. */
st_ps_verdict_t st_ps_check(const st_producer_state_t *ps, int64_t pid, int16_t epoch, int32_t first_seq,
                            int32_t last_seq, int64_t *dup_first, int64_t *dup_last);

/* Records an appended data batch. transactional: opens a transaction at
 * first_offset when none is open. KP_ERR_TOO_LARGE when the producer table is
 * at ST_PS_PRODUCERS_MAX and pid is new. */
KP_MUST_CHECK int st_ps_update(st_producer_state_t *ps, int64_t pid, int16_t epoch, int32_t first_seq,
                               int32_t last_seq, int64_t first_offset, int64_t last_offset, int64_t ts_ms,
                               bool transactional);

/* Records a commit/abort marker at marker_offset; returns the first offset
 * of the transaction it ends in *txn_first (-1 when none was open). */
KP_MUST_CHECK int st_ps_end_txn(st_producer_state_t *ps, int64_t pid, int16_t epoch, int32_t coordinator_epoch,
                                int64_t marker_offset, int64_t ts_ms, int64_t *txn_first);

/* Smallest first offset of an open transaction, or -1 (for the LSO). */
int64_t st_ps_first_unstable_offset(const st_producer_state_t *ps);

/* Drops producers idle since before now_ms - expiration_ms that have no open
 * transaction. */
void st_ps_expire(st_producer_state_t *ps, int64_t now_ms, int64_t expiration_ms);

/* Writes "<dir>/<offset 20 digits>.snapshot" atomically. */
KP_MUST_CHECK int st_ps_snapshot_write(const st_producer_state_t *ps, const char *dir, int64_t offset);
/* Replaces ps with the snapshot in path. KP_ERR_CORRUPT on a bad CRC or
 * layout (the caller then falls back to an older snapshot or a full replay). */
KP_MUST_CHECK int st_ps_snapshot_read(st_producer_state_t *ps, const char *path);

#endif
