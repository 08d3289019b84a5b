/* broker/replication/parts_open.h — the partition manager's file operations on the
 * worker pool, for parts.c only: opening (creating) a log, closing one,
 * deleting one (the directory renamed out of the way).
 *
 * Creating a log costs a mkdir, several files and three or four fsyncs
 * (~2-4 ms each); a CreateTopics of 100 partition replicas used to hold the
 * loop thread 120-360 ms on every node, enough to miss raft fetch timeouts
 * during bulk creation. The opener keeps a FIFO of pending opens and runs
 * them in batches, up to BK_REPL_POPEN_JOBS_MAX batch jobs at a time, taken
 * from the head in the order queued; an item whose partition directory a
 * running batch touches waits (and so does everything behind it). Closes
 * and deletions (a close fsyncs and writes a producer snapshot; a deletion
 * renames the directory) go through the same FIFO, so a topic deleted and
 * re-created under its name is renamed away before its new log opens, and
 * two operations on one directory never overlap.
 *
 * Threading: every function and the done callback run on the loop thread;
 * the job touches only the batch it was given (copies of paths and
 * settings, made on the loop). */
#ifndef SKIFF_BK_PARTS_OPEN_H
#define SKIFF_BK_PARTS_OPEN_H

#include <stddef.h>
#include <stdint.h>

#include "broker/meta/image.h"
#include "broker/net/worker.h"
#include "storage/st_log.h"
#include "storage/st_logdirs.h"

#define BK_REPL_POPEN_BATCH_MAX 64   /* opens per job: bounds how stale a batch's
                                   settings get and how long one job runs */
#define BK_REPL_POPEN_JOBS_MAX 4     /* batch jobs on the pool at once (directories
                                        distinct); the rest of the pool stays free
                                        for fsyncs and commits */

typedef enum {
    BK_REPL_POPEN_OPEN = 0,       /* st_log_open (creating); log is the result */
    BK_REPL_POPEN_CLOSE,          /* st_log_close of log (handed over) */
    BK_REPL_POPEN_DELETE,         /* log discarded (no flush), its directory renamed
                                to `trash`, which the caller removes; with
                                `remove_now` removed here instead */
} bk_repl_popen_kind_t;

typedef struct {
    bk_repl_popen_kind_t kind;
    bk_meta_uuid_t topic_id;
    int32_t partition;
    int dir;                                 /* log dir index */
    char parent[ST_PATH_MAX];
    char topic[BK_META_TOPIC_NAME_MAX + 1];
    st_log_config_t cfg;
    st_log_open_opts_t opts;
    st_log_t *log;                           /* OPEN: out, NULL on failure;
                                                CLOSE/DELETE: in, owned by the item */
    bool remove_now;                         /* DELETE: st_log_delete, no rename */
    char trash[ST_PATH_MAX + 48];            /* DELETE, out: "<dir>.<opts.now_ms>-delete" */
    int rc;                                  /* out: st_log_open's status, or BK_NET_ERR_CANCELLED when
                                                the pool dropped the job (disjoint ranges:
                                                broker/core/status.h) */
} bk_repl_popen_item_t;

/* Called on the loop for every finished batch; the callee owns items[i].log
 * (OPEN). CLOSE/DELETE items come back with log NULL (closed) and rc. */
typedef void (*bk_repl_popen_done_fn)(void *ctx, bk_repl_popen_item_t *items, size_t n);

typedef struct bk_repl_popen bk_repl_popen_t;

/* pool borrowed (must outlive the opener or be drained before it is freed). */
bk_repl_popen_t *bk_repl_popen_new(bk_net_worker_pool_t *pool, bk_repl_popen_done_fn done, void *ctx);

/* Queues one operation (never runs it, never calls done). KP_ERR_NOMEM:
 * nothing queued, the caller does it synchronously. */
KP_MUST_CHECK int bk_repl_popen_add(bk_repl_popen_t *o, const bk_repl_popen_item_t *it);

/* Queues one operation ahead of everything queued: for the stop of a log
 * whose open just finished (a STOP that came while it opened), which must
 * precede later operations on its directory (a re-creation under its name
 * queued meanwhile). KP_ERR_NOMEM: nothing queued. */
KP_MUST_CHECK int bk_repl_popen_add_front(bk_repl_popen_t *o, const bk_repl_popen_item_t *it);

/* Starts a batch if none runs. When the pool refuses the job (full,
 * stopping), the batch runs right here on the loop (an st_guard allow
 * scope: a full queue of 1024 jobs or a stopping node), so every queued
 * operation completes: done may be called before this returns. A batch
 * the pool cancelled (freed without draining) comes back with its opens
 * not done (rc BK_NET_ERR_CANCELLED) and its closes and deletions done here. */
void bk_repl_popen_kick(bk_repl_popen_t *o);

/* Operations not yet done (queued or running). */
size_t bk_repl_popen_pending(const bk_repl_popen_t *o);

/* Frees the opener. Precondition: no batch running (the pool was freed or
 * drained first). Opens still queued are dropped (they hold nothing yet);
 * closes and deletions still queued are done here. */
void bk_repl_popen_free(bk_repl_popen_t *o);

#endif
