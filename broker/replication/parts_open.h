/* broker/replication/parts_open.h — opens (creating) partition logs on the worker pool,
 * for the partition manager only (parts.c).
 *
 * Creating a log costs a mkdir, several files and three or four fsyncs
 * (~2-4 ms each); a CreateTopics of 100 partition replicas used to hold the
 * loop thread 120-360 ms on every node, enough to miss raft fetch timeouts
 * during bulk creation. The opener keeps a FIFO of pending opens and runs
 * them in batches, ONE batch job at a time: opens are serialized, so two
 * opens of the same directory (a topic deleted and re-created under the same
 * name) never run concurrently, and the loop's rename of a deleted
 * partition happens between batches.
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

#define BK_POPEN_BATCH_MAX 64   /* opens per job: bounds how stale a batch's
                                   settings get and how long one job runs */

typedef struct {
    bk_uuid_t topic_id;
    int32_t partition;
    int dir;                                 /* log dir index */
    char parent[ST_PATH_MAX];
    char topic[BK_TOPIC_NAME_MAX + 1];
    st_log_config_t cfg;
    st_log_open_opts_t opts;
    st_log_t *log;                           /* out: NULL on failure */
    int rc;                                  /* out: st_log_open's status, or BK_ERR_CANCELLED when
                                                the pool dropped the job (disjoint ranges:
                                                broker/core/status.h) */
} bk_popen_item_t;

/* Called on the loop for every finished batch; the callee owns items[i].log. */
typedef void (*bk_popen_done_fn)(void *ctx, bk_popen_item_t *items, size_t n);

typedef struct bk_popen bk_popen_t;

/* pool borrowed (must outlive the opener or be drained before it is freed). */
bk_popen_t *bk_popen_new(bk_worker_pool_t *pool, bk_popen_done_fn done, void *ctx);

/* Queues one open (never runs it, never calls done). KP_ERR_NOMEM: nothing
 * queued, the caller opens synchronously. */
KP_MUST_CHECK int bk_popen_add(bk_popen_t *o, const bk_popen_item_t *it);

/* Starts a batch if none runs. When the pool refuses the job (full,
 * stopping), the batch is opened right here on the loop, so every queued
 * open completes: done may be called before this returns. */
void bk_popen_kick(bk_popen_t *o);

/* Opens not yet done (queued or running). */
size_t bk_popen_pending(const bk_popen_t *o);

/* Frees the opener. Precondition: no batch running (the pool was freed or
 * drained first). Opens still queued are dropped (they hold nothing yet). */
void bk_popen_free(bk_popen_t *o);

#endif
