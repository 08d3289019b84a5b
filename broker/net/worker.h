/* broker/net/worker.h — a small pool of threads for blocking work (fsync, file
 * deletion, compaction, index rebuild) whose results come back to the loop.
 *
 * Threading: bk_net_worker_pool_new/submit/free and every done callback run on
 * the loop thread (the one dispatching `base`). Only job functions run on the
 * pool's threads; they must not touch broker state, only their own `arg`. */
#ifndef SKIFF_BK_WORKER_H
#define SKIFF_BK_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/net/net.h"

struct event_base;

#define BK_NET_WORKER_THREADS_MAX 64      /* bound for num.io.threads */
#define BK_NET_WORKER_QUEUE_MAX_LIMIT 65536

typedef struct bk_net_worker_pool bk_net_worker_pool_t;

/* Runs on a worker thread; its return value reaches the done callback. */
typedef int (*bk_net_job_fn)(void *arg);
/* Runs on the loop thread after the job: status is the job's return value,
 * or BK_NET_ERR_CANCELLED if the pool was freed without draining before the job
 * ran. Called exactly once per accepted submit. */
typedef void (*bk_net_done_fn)(void *arg, int status);

typedef struct {
    uint64_t submitted;
    uint64_t rejected;   /* submit refused: queue full or stopped */
    uint64_t completed;  /* done called after the job ran */
    uint64_t cancelled;  /* done called with BK_NET_ERR_CANCELLED */
    uint32_t outstanding; /* submitted, done not yet called */
} bk_net_worker_stats_t;

/* `threads` in [1, BK_NET_WORKER_THREADS_MAX]; `queue_max` in [1,
 * BK_NET_WORKER_QUEUE_MAX_LIMIT] bounds jobs submitted but not yet done. NULL on
 * bad arguments or when a thread or the wake-up fd cannot be created. */
BK_NET_MUST_CHECK bk_net_worker_pool_t *bk_net_worker_pool_new(struct event_base *base, uint32_t threads,
                                                   uint32_t queue_max);

/* Queue a job. Never blocks the loop: BK_NET_ERR_FULL when queue_max jobs are
 * outstanding (the caller answers with a retriable error or retries from a
 * timer), BK_NET_ERR_STOPPED once shutdown has begun. On error nothing is called. */
BK_NET_MUST_CHECK int bk_net_worker_submit(bk_net_worker_pool_t *pool, bk_net_job_fn job, bk_net_done_fn done, void *arg);

void bk_net_worker_stats(bk_net_worker_pool_t *pool, bk_net_worker_stats_t *out);

/* Stop and free, on the loop thread. drain=true: every queued job still runs;
 * drain=false: jobs not yet started are cancelled. Jobs already running
 * finish. Every outstanding done callback is called before this returns.
 * NULL is allowed. */
void bk_net_worker_pool_free(bk_net_worker_pool_t *pool, bool drain);

#endif
