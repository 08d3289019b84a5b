/* st_txn_index.h — aborted transaction index files (.txnindex).
 *
 * 34-byte entries (Kafka's AbortedTxn): i16 version (0), i64 producerId,
 * i64 firstOffset, i64 lastOffset (the abort marker), i64 lastStableOffset.
 * One file per segment holding the aborts whose marker lies in it, in
 * marker order. The log keeps every entry in memory too (aborts are rare);
 * bounded by ST_TXN_ENTRIES_MAX per partition.
 */
#ifndef SKIFF_ST_TXN_INDEX_H
#define SKIFF_ST_TXN_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"

#define ST_TXN_ENTRY_BYTES 34
#define ST_TXN_ENTRIES_MAX (1u << 20)

typedef struct st_aborted_txn {
    int64_t producer_id;
    int64_t first_offset;
    int64_t last_offset;
    int64_t last_stable_offset;
} st_aborted_txn_t;

/* Appends one entry at the end of the file at path (created if absent). */
KP_MUST_CHECK int st_txn_index_append(const char *path, const st_aborted_txn_t *t);
/* Appends the file's entries to (*arr, *n, *cap) (realloc'd). Absent file =
 * nothing. A trailing partial entry is ignored; a bad version is
 * KP_ERR_CORRUPT. */
KP_MUST_CHECK int st_txn_index_load(const char *path, st_aborted_txn_t **arr, size_t *n, size_t *cap);
/* Keeps the first keep entries of the file. */
KP_MUST_CHECK int st_txn_index_truncate(const char *path, size_t keep);

#endif
