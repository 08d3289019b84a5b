/* broker/replication/purgatory.h — the fetch purgatory: fetches waiting for
 * data on partitions this node holds, keyed by partition.
 *
 * A Fetch that cannot be answered at once (fewer than min_bytes available,
 * max_wait_ms > 0) is registered here under every partition it reads. News
 * on one partition (an append through the partition service, a HW move of
 * the replication driver) calls bk_repl_purg_notify for that partition only:
 * the waiters registered under it, and no others, are asked whether they
 * can complete now. A waiter completes exactly once — because it is ready,
 * because its timer fired, or because the purgatory is flushed — and is
 * then removed from every partition it was registered under before its
 * `done` runs. Never by polling.
 *
 * The purgatory knows nothing of requests: the Fetch handler (api/h_fetch.c)
 * passes a context and two callbacks (`ready`: is there enough now?,
 * `done`: answer). That keeps it below api/ (broker/README.md, Layers).
 *
 * Keys are (topic id, partition): a fetch by topic name is keyed by the id
 * the name had when it started waiting. The table holds one entry per
 * partition that has waiters (an entry goes with its last waiter), so its
 * size follows the waiters, not the partitions held.
 *
 * Cost: notify = one hash lookup + one `ready` call per waiter of that
 * partition; registering a fetch on N partitions = N lookups and one
 * allocation of N links (the request's own size bounds N). The old
 * purgatory walked every waiter and compared topic names on each append
 * (O(waiters x their partitions)); see test/bench/bench_purgatory.c.
 *
 * Bounds: at most `waiters_max` (BK_REPL_PURG_WAITERS_MAX in the node) waiting
 * fetches; beyond it bk_repl_purg_wait refuses and the caller answers at once.
 * A wait is at most BK_REPL_PURG_WAIT_MAX_MS.
 *
 * Re-entrancy: `ready` and `done` may call bk_repl_purg_wait / bk_repl_purg_notify /
 * complete other waiters; a notify in progress skips waiters removed
 * meanwhile and does not visit waiters added meanwhile.
 *
 * Threading: loop thread only (the one dispatching `base`). */
#ifndef SKIFF_BK_PURGATORY_H
#define SKIFF_BK_PURGATORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/meta/image.h"
#include "protocol/kp_wire.h"

struct event_base;

#define BK_REPL_PURG_WAITERS_MAX 4096      /* waiting fetches per node */
#define BK_REPL_PURG_WAIT_MAX_MS 60000     /* bound on a client's max_wait_ms */

typedef struct bk_repl_purg bk_repl_purg_t;

typedef struct {
    bk_meta_uuid_t topic_id;
    int32_t partition;
} bk_repl_purg_key_t;

/* News on one of the waiter's partitions: true when it can complete now.
 * A true answer is followed at once by `done`, with nothing run between
 * (no other callback, no timer, no I/O), so the answer may keep what it
 * computed for `done` to use (the Fetch handler keeps its log reads). */
typedef bool (*bk_repl_purg_ready_fn)(void *ctx);
/* The waiter completed (ready, timed out or flushed). Called once, after
 * the purgatory dropped every reference to the waiter; ctx is the caller's. */
typedef void (*bk_repl_purg_done_fn)(void *ctx);

/* A purgatory whose timers run on `base` (borrowed). NULL: out of memory. */
KP_MUST_CHECK bk_repl_purg_t *bk_repl_purg_new(struct event_base *base, size_t waiters_max);
/* Completes every waiter (done is called), then frees. NULL is a no-op.
 * A done callback must not register a new waiter during this call. */
void bk_repl_purg_free(bk_repl_purg_t *pg);
/* Completes every waiter registered when the call starts (graceful stop). */
void bk_repl_purg_flush(bk_repl_purg_t *pg);

/* Registers a waiter on keys[0..nkeys) (a key given twice counts once;
 * nkeys 0 waits for the timer only) for wait_ms (clamped to
 * [0, BK_REPL_PURG_WAIT_MAX_MS]). KP_OK: `done(ctx)` comes later, exactly once.
 * KP_ERR_TOO_LARGE (waiters_max reached) or KP_ERR_NOMEM: nothing was
 * registered and neither callback will be called. */
KP_MUST_CHECK int bk_repl_purg_wait(bk_repl_purg_t *pg, const bk_repl_purg_key_t *keys, size_t nkeys, int32_t wait_ms,
                               bk_repl_purg_ready_fn ready, bk_repl_purg_done_fn done, void *ctx);

/* News on (topic_id, partition): asks the waiters registered under it, and
 * only them, and completes those that are ready. NULL pg is a no-op (the
 * node is starting). */
void bk_repl_purg_notify(bk_repl_purg_t *pg, const bk_meta_uuid_t *topic_id, int32_t partition);

/* The same notify, run once the current event callback has returned
 * (issue 19): news on one partition several times in one callback — a
 * network loop hands the state loop a burst of Produce requests in one
 * callback — asks its waiters once, after the last append, so a parked
 * follower fetch is answered with the whole burst instead of the first
 * append, and fetches again for the rest. Nothing to do when nobody waits
 * on the partition now; a waiter registered before the deferred notify
 * runs saw the news when it registered. NULL pg is a no-op. */
void bk_repl_purg_notify_soon(bk_repl_purg_t *pg, const bk_meta_uuid_t *topic_id, int32_t partition);

/* Waiting fetches now (0 for NULL). */
size_t bk_repl_purg_waiting(const bk_repl_purg_t *pg);
/* Partitions with at least one waiter now (0 for NULL). */
size_t bk_repl_purg_partitions(const bk_repl_purg_t *pg);

#endif
