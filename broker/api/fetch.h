/* broker/api/fetch.h — the Fetch handler's node state (h_fetch.c): fetch
 * sessions. Fetches that wait for data wait in the fetch purgatory,
 * broker/replication/purgatory.h (keyed by partition, woken by the
 * partition service's appends and the replication driver's HW moves).
 *
 * Fetch sessions (KIP-227, fetch_session.h): a v7+ full fetch with epoch
 * 0 opens a session (when the cache has room; else session id 0); an
 * incremental fetch (epoch > 0) updates the session's partitions (added,
 * updated, forgotten) and is answered with only the partitions that have
 * records, an error, or a new HW / LSO / log start offset; epoch -1 closes
 * the session. Unknown session: FETCH_SESSION_ID_NOT_FOUND; wrong epoch:
 * INVALID_FETCH_SESSION_EPOCH (the session stays). */
#ifndef SKIFF_BK_API_FETCH_H
#define SKIFF_BK_API_FETCH_H

#include "broker/core/node.h"

KP_MUST_CHECK bk_node_fetch_state_t *bk_api_fetch_new(bk_node_t *n);
/* Frees the sessions (waiting fetches are the purgatory's: flush it first). */
void bk_api_fetch_free(bk_node_fetch_state_t *f);

/* Record bytes answered since start, by path: `file_bytes` went into the
 * response as file ranges (bk_net_resp_add_file: sendfile, bytes on disk ==
 * bytes on the wire), `copy_bytes` were read into memory (st_log_read_copy:
 * Fetch below v10 only — zstd check and down-conversion). Every Fetch v10+
 * of magic-2 data (consumers, followers, sessions, read_committed) counts
 * as file bytes; a copy there is a bug (test/integration/t_fetch_zero_copy.sh). */
typedef struct {
    uint64_t file_bytes;
    uint64_t copy_bytes;
    /* Record sets (one partition of one answer) read, checked and, below v4,
     * down-converted for Fetch below v10, by where the work ran: on the
     * worker pool (num.io.threads), or inline on the state loop when the
     * pool's queue was full (fetch_convert_int.h). */
    uint64_t sets_worker;
    uint64_t sets_inline;
} bk_api_fetch_stats_t;
void bk_api_fetch_stats(const bk_node_fetch_state_t *f, bk_api_fetch_stats_t *out);

#endif
