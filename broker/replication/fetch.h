/* broker/replication/fetch.h — the fetch purgatory and fetch sessions (h_fetch.c).
 *
 * A Fetch that cannot be answered at once (fewer than min_bytes available
 * and max_wait_ms > 0) waits here. It completes when an append to one of
 * its partitions brings enough bytes (bk_fetch_notify, called by Produce
 * after every append) or when its timer fires — never by polling. Bound:
 * BK_FETCH_WAITERS_MAX waiting fetches per node (beyond it a fetch is
 * answered at once with what there is).
 *
 * Fetch sessions (KIP-227, fetch_session.h): a v7+ full fetch with epoch
 * 0 opens a session (when the cache has room; else session id 0); an
 * incremental fetch (epoch > 0) updates the session's partitions (added,
 * updated, forgotten) and is answered with only the partitions that have
 * records, an error, or a new HW / LSO / log start offset; epoch -1 closes
 * the session. Unknown session: FETCH_SESSION_ID_NOT_FOUND; wrong epoch:
 * INVALID_FETCH_SESSION_EPOCH (the session stays). */
#ifndef SKIFF_BK_FETCH_H
#define SKIFF_BK_FETCH_H

#include "broker/core/node.h"
#include "broker/replication/parts.h"

#define BK_FETCH_WAITERS_MAX 4096
#define BK_FETCH_WAIT_MAX_MS 60000   /* bound on a client's max_wait_ms */

KP_MUST_CHECK bk_fetch_state_t *bk_fetch_new(bk_node_t *n);
/* Answers every waiting fetch now (shutdown) and frees the state. */
void bk_fetch_free(bk_fetch_state_t *f);
/* Answers every waiting fetch now (start of graceful shutdown). */
void bk_fetch_flush(bk_fetch_state_t *f);
/* New data (or a new HW) on `part`: wakes the fetches waiting on it. */
void bk_fetch_notify(bk_fetch_state_t *f, const bk_part_t *part);

/* Fetch requests waiting in the purgatory now (0 for NULL). */
size_t bk_fetch_waiting(const bk_fetch_state_t *f);

#endif
