/* broker/replication/cleaner.h — the log cleaner of the node: compaction of
 * the partition logs whose cleanup.policy contains "compact".
 *
 * On a timer (log.cleaner.backoff.ms; at once again after a pass that
 * cleaned something) the loop picks the dirtiest eligible log: a log past
 * max.compaction.lag.ms (its first dirty segment is that old) or whose
 * tombstones' delete horizon passed comes first, then the largest dirty
 * ratio at or above min.cleanable.dirty.ratio. st_cleaner_prepare runs on
 * the loop (cheap: dup()s the closed segments' descriptors), st_cleaner_build
 * on one of log.cleaner.threads dedicated threads (its own pool, so a long
 * build never holds up the node's fsyncs and removals), st_cleaner_commit
 * back on the loop, which first finds the partition again by (topic id,
 * partition, log_gen): a log deleted, re-created, closed or reassigned away
 * meanwhile is not found and the plan is aborted. Storage itself skips any
 * segment that retention, DeleteRecords' removal or a truncation changed
 * meanwhile. A log whose build fails (corrupt segment) is marked uncleanable
 * (logged, counted, skipped until the log is opened again); it never stops
 * the node.
 *
 * Broker keys are read on every run, so AlterConfigs changes act at the
 * next run: log.cleaner.enable (read-only in Kafka), .threads (the pool is
 * re-created with more threads when idle), .backoff.ms, .dedupe.buffer.size
 * (shared by the threads, as in Kafka), .io.max.bytes.per.second (one
 * budget shared by the threads; a build sleeps on its own thread). Topic
 * keys reach the logs through st_log_set_config (cleanup.policy,
 * min.cleanable.dirty.ratio, min.compaction.lag.ms, delete.retention.ms);
 * max.compaction.lag.ms is read here per run.
 *
 * Threading: everything here runs on the loop thread except the build job
 * and the throttle, which touch only the plan and the throttle's mutex. */
#ifndef SKIFF_BK_REPL_CLEANER_H
#define SKIFF_BK_REPL_CLEANER_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/core/node.h"

typedef struct bk_repl_cleaner bk_repl_cleaner_t;

#define BK_REPL_CLEANER_THREADS_MAX 16   /* = log.cleaner.threads' maximum (config_keys.h) */
#define BK_REPL_CLEANER_BACKOFF_MIN_MS 100 /* log.cleaner.backoff.ms below is raised */

/* Starts the cleaner's timer on n->base (the pool starts with the first
 * pass). NULL when out of memory. */
bk_repl_cleaner_t *bk_repl_cleaner_new(bk_node_t *n);

/* Stops: running builds end at their next batch, queued ones are
 * cancelled, every plan is aborted (its .cleaned files removed). Then
 * frees. On the loop, before the logs are closed. NULL is allowed. */
void bk_repl_cleaner_free(bk_repl_cleaner_t *c);

/* Runs the selection now (tests, and after a config change). */
void bk_repl_cleaner_kick(bk_repl_cleaner_t *c);

typedef struct {
    uint64_t passes;            /* passes committed */
    uint64_t bytes_read;        /* dirty and clean bytes read by builds */
    uint64_t bytes_written;     /* cleaned bytes written */
    uint64_t records_removed;   /* records dropped (superseded, aborted, expired tombstones) */
    uint64_t segments_cleaned;
    uint64_t aborted;           /* plans dropped: partition gone, stop, failure */
    int64_t last_pass_ms;       /* wall clock of the last committed pass; 0 = none */
    double max_dirty_ratio;     /* largest dirty ratio seen at the last run */
    uint32_t uncleanable;       /* logs the cleaner gave up on (held now) */
    uint32_t running;           /* builds in flight */
} bk_repl_cleaner_stats_t;

void bk_repl_cleaner_stats(const bk_repl_cleaner_t *c, bk_repl_cleaner_stats_t *out);

#endif
