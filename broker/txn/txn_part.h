/* txn_part.h — the partition leader's side of transactions, pure helpers on
 * storage's producer state (storage/st_producer_state.h): marker admission,
 * marker application with its aborted-txn index entry, the last stable
 * offset, DescribeProducers. storage's log runs the same marker application
 * when it appends a control batch (log_txn.c); these helpers are for the
 * broker's decisions before an append and for queries. */
#ifndef SKIFF_BK_TXN_PART_H
#define SKIFF_BK_TXN_PART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/st_producer_state.h"
#include "storage/st_txn_index.h"

/* May a WriteTxnMarkers marker (pid, epoch, coordinator_epoch) be appended?
 * INVALID_PRODUCER_EPOCH when epoch is older than the producer's,
 * TRANSACTION_COORDINATOR_FENCED when coordinator_epoch is older than the
 * last marker's; NONE otherwise (also for an unknown producer). */
int16_t bk_txn_part_check_marker(const st_producer_state_t *ps, int64_t producer_id, int16_t producer_epoch,
                                 int32_t coordinator_epoch);

/* The coordinator's reading of a leader's WriteTxnMarkers error for one
 * partition: true when it ends the coordinator's work there (NONE: written;
 * INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED: refused for good,
 * as Kafka), false when the marker must be re-sent (every other error;
 * notably UNKNOWN_TOPIC_OR_PARTITION, answered by a leader whose metadata
 * has not caught up yet, e.g. just restarted: taking it as final lost the
 * marker and left TxnOffsetCommit offsets pending — a deleted topic is noticed
 * in the coordinator's own metadata instead, as Kafka does). */
bool bk_txn_part_marker_final(int16_t error);

/* min(first offset of any open transaction, hw): what read_committed
 * fetches and ListOffsets(latest, read_committed) see. */
int64_t bk_txn_part_lso(const st_producer_state_t *ps, int64_t hw);

/* Applies a COMMIT/ABORT control record at marker_offset for producer_id:
 * the producer's open transaction ends. For an ABORT, *aborted = Kafka's
 * AbortedTxn (producer, first offset of the transaction (the marker's own
 * offset when none was open), last offset = marker_offset, LSO after the
 * abort = first offset of another open transaction, else marker_offset + 1)
 * and *has_aborted = true. Errors: storage's (KP_ERR_TOO_LARGE, NOMEM). */
KP_MUST_CHECK int bk_txn_part_apply_marker(st_producer_state_t *ps, int64_t producer_id, int16_t producer_epoch,
                                           int32_t coordinator_epoch, int64_t marker_offset, bool commit,
                                           int64_t ts_ms, st_aborted_txn_t *aborted, bool *has_aborted);

/* One DescribeProducers row (DescribeProducersResponse.ActiveProducers). */
typedef struct {
    int64_t producer_id;
    int32_t producer_epoch;
    int32_t last_sequence;          /* -1 when no batch is remembered */
    int64_t last_timestamp_ms;
    int32_t coordinator_epoch;
    int64_t current_txn_start_offset; /* -1 when no transaction is open */
} bk_txn_producer_t;

/* Fills out[0..max) with the partition's producers (in producer-id order
 * when all fit);
 * returns how many there are (may exceed max: call again with more room). */
size_t bk_txn_part_producers(const st_producer_state_t *ps, bk_txn_producer_t *out, size_t max);

#endif
