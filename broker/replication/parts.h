/* broker/replication/parts.h — the partition manager: the partition logs this node holds.
 *
 * Keyed by (topic id, partition) in an open-addressing hash table. The node
 * feeds it the image's change notifications: LEADER/FOLLOWER opens (creating
 * if needed) the log in a log dir chosen by st_logdirs_pick, STOP closes it,
 * STOP+deleted deletes its directory. Handlers look logs up with
 * bk_repl_parts_get.
 *
 * Threading: every function here runs on the loop thread, which never waits
 * on the disk once the manager has its worker pool (bk_repl_parts_set_pool):
 *  - opens of bulk applies, closes and deletions are queued in one FIFO and
 *    run in order on the pool (parts_open.h);
 *  - fsyncs (flush.messages / flush.ms) run on the pool: bk_repl_parts_flush_maybe
 *    after every append, and bk_repl_parts_tick; at most one per log in flight;
 *  - retention takes segments out of a log on the loop (in memory) and a
 *    pool job renames and unlinks their files (bk_repl_parts_tick);
 *  - the periodic checkpoint files are written on the pool
 *    (bk_repl_parts_checkpoint_async).
 * A job never touches a bk_repl_part_t or st_log_t: it holds duplicated
 * descriptors and copied paths, and its completion finds the partition again
 * by (topic id, partition, log_gen) — a log closed, deleted or replaced
 * meanwhile is simply not found. Exceptions, each an st_guard allow scope:
 * an apply creating at most BK_REPL_PARTS_SYNC_OPENS logs opens them on the loop
 * (read-your-write for a small CreateTopics), and a job the full pool refuses
 * runs on the loop. Without a pool (start-up replay) everything runs inline.
 *
 * Invariants: a bk_repl_part_t pointer stays valid until the next bk_repl_parts_apply,
 * return to the loop (a finished async open may remove slots) or
 * bk_repl_parts_close_all; p->log != NULL unless the log failed to open
 * (offline: handlers answer KAFKA_STORAGE_ERROR / NOT_LEADER). */
#ifndef SKIFF_BK_PARTS_H
#define SKIFF_BK_PARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/meta/image.h"
#include "broker/net/worker.h"
#include "protocol/kp_arena.h"
#include "storage/st_log.h"
#include "storage/st_logdirs.h"

#define BK_REPL_PARTS_MAX 1000000               /* partitions per node */
#define BK_REPL_PARTS_DIRS_MAX 16               /* = BK_CFG_LOG_DIRS_MAX */
/* An apply creating at most this many logs, with no open queued, opens them
 * on the loop (a few ms each): a small CreateTopics is answered with its logs in place, so a
 * client producing right after (kafka-python's retries=0) is not refused.
 * Bigger applies (bulk creation, a follower catching up) use the pool. */
#define BK_REPL_PARTS_SYNC_OPENS 16

typedef struct bk_repl_part {
    bk_meta_uuid_t topic_id;
    int32_t partition;
    char topic[BK_META_TOPIC_NAME_MAX + 1];
    st_log_t *log;                         /* NULL = offline */
    uint64_t log_gen;                      /* unique per log installed in this
                                              manager: how a job's completion
                                              knows the log is still the one
                                              it started on */
    int dir;                               /* index into the node's log dirs */
    bool leader;
    int32_t leader_epoch;
    struct bk_rp *rp;                      /* replication driver state (replica.h);
                                              moves with the slot */
    bool used;                             /* slot in use */
    bool opening;                          /* log being opened on the worker pool
                                              (log NULL): answer a retriable
                                              NOT_LEADER_OR_FOLLOWER */
    bool stop_pending, delete_pending;     /* STOP arrived while opening */
    /* log cleaner (cleaner.h), each about the log of log_gen only: a build
     * in flight (clean_busy_gen == log_gen); a build failed, e.g. a corrupt
     * segment (clean_bad_gen == log_gen: skipped while this log is held);
     * when a pass is due whatever the dirty ratio (tombstones' delete
     * horizon; -1 = none, 0 = not looked at yet) */
    uint64_t clean_busy_gen, clean_bad_gen;
    int64_t clean_due_ms;
    /* skiff_{bytes,messages}_in_total / bytes_out_total series of this
     * partition's topic: NULL until first use, then held (valid until the
     * registry is freed, which outlives every partition) so that produce
     * and fetch never look a series up by name (node_metrics.c). */
    struct bk_mx_series *mx_bytes_in, *mx_msgs_in, *mx_bytes_out;
} bk_repl_part_t;

typedef struct bk_repl_parts bk_repl_parts_t;

/* dirs[0..ndirs) are loaded log dirs (borrowed; must outlive the manager). */
bk_repl_parts_t *bk_repl_parts_new(st_logdir_t *dirs, size_t ndirs);

bk_repl_part_t *bk_repl_parts_get(bk_repl_parts_t *p, const bk_meta_uuid_t *topic_id, int32_t partition);

/* The loop thread's scratch arena for validating produced batches
 * (partition.c decompresses into it), kept across produces so that a
 * steady load allocates nothing for it; reset by its user. Cap: two
 * decompressed batches of 64 MiB. */
#define BK_REPL_PARTS_SCRATCH_CAP_BYTES ((size_t)128 << 20)
kp_arena_t *bk_repl_parts_scratch(bk_repl_parts_t *p);
/* Produced batches validated with a precheck's verdict (partition.c counts
 * them; skiff_produce_batches_prechecked_total). */
void bk_repl_parts_prechecked_add(bk_repl_parts_t *p, uint64_t nbatches);
uint64_t bk_repl_parts_prechecked_batches(const bk_repl_parts_t *p);

/* Log settings for a topic, filled by the node (topic configs + broker). */
typedef void (*bk_repl_parts_cfg_fn)(void *ctx, const char *topic, st_log_config_t *out);

/* A deleted partition's directory, already closed and renamed to
 * "<dir>.<ms>-delete", for the caller to remove off the loop. */
typedef void (*bk_repl_parts_trash_fn)(void *ctx, const char *path);

/* Called on the loop after a batch of logs opened on the pool was installed
 * (settings may have changed meanwhile; a coordinator may now load). */
typedef void (*bk_repl_parts_opened_fn)(void *ctx);

/* From now on the manager's file work runs on `pool` (borrowed; freed or
 * drained before bk_repl_parts_close_all): new partitions' logs of an apply
 * creating more than BK_REPL_PARTS_SYNC_OPENS logs (or while other operations
 * are queued) are opened there — the slot exists at once with `opening` set
 * and log NULL; the log appears later (or the partition goes offline if
 * the open fails); a STOP meanwhile is carried out when the open finishes —
 * and closes, deletions, flushes, retention removals and periodic
 * checkpoints too. Without it (start-up replay) all of that runs inline. */
int bk_repl_parts_set_pool(bk_repl_parts_t *p, bk_net_worker_pool_t *pool, bk_repl_parts_opened_fn fn, void *ctx);

/* Applies change notifications (img gives topic names). Failures to open a
 * log are logged and leave the partition offline; returns how many failed.
 * Deleted partitions leave the table at once; their logs are discarded and
 * their directories renamed (on the pool once it is set), then handed to
 * trash_fn on the loop (so the slow unlinking never runs there); trash_fn
 * may be NULL, then they are deleted here. */
size_t bk_repl_parts_apply(bk_repl_parts_t *p, const bk_meta_image_t *img, const bk_meta_change_t *ch, size_t n,
                      bk_repl_parts_cfg_fn cfg_fn, void *cfg_ctx, bk_repl_parts_trash_fn trash_fn, int64_t now_ms);

/* True for a name bk_repl_parts_apply gives a renamed deleted partition. */
bool bk_repl_parts_is_trash(const char *name);

/* Calls fn for every held partition (any order). */
void bk_repl_parts_each(bk_repl_parts_t *p, void (*fn)(bk_repl_part_t *part, void *ctx), void *ctx);
size_t bk_repl_parts_count(const bk_repl_parts_t *p);
/* Direct slot access for a cursor over the table (the scrubber): slot i
 * (< bk_repl_parts_slots) when it holds a partition with an open log, else
 * NULL. Slots move when the table grows: a cursor may then skip or repeat
 * partitions once. */
size_t bk_repl_parts_slots(const bk_repl_parts_t *p);
bk_repl_part_t *bk_repl_parts_slot(bk_repl_parts_t *p, size_t i);

/* Blocking: rewrites every log dir's checkpoints from the open logs;
 * `extra` (may be NULL) adds one more row to dir `extra_dir` (the metadata
 * log). For tools and tests; the node uses bk_repl_parts_checkpoint_async. */
int bk_repl_parts_checkpoint(bk_repl_parts_t *p, const st_logdir_entry_t *extra, int extra_dir);

/* The same rows taken now (offsets and copied names), written by a pool
 * job. At most one in flight: a call while one runs is skipped (the next
 * period writes newer offsets anyway). Without a pool: written here. */
void bk_repl_parts_checkpoint_async(bk_repl_parts_t *p, const st_logdir_entry_t *extra, int extra_dir);

/* THE flush entry for partitions: call after every append to a log of this
 * manager (leader, follower, coordinator, markers) and from the timer. When
 * flush.messages / flush.ms make an fsync due (st_log_flush_due) and none
 * is in flight for this log, the fsync of everything appended so far starts
 * on the worker pool; the recovery point moves when it completes, on the
 * loop. Appends meanwhile are covered by the next one, started by the
 * completion when they made it due. Never blocks, never fails: a refused
 * job (pool full) leaves the flush due for the next call; a failed fsync
 * takes the log offline (logged; appends then fail with KAFKA_STORAGE_ERROR).
 * Acks do not wait for it (Kafka's flush.* are periodic, best-effort). */
void bk_repl_parts_flush_maybe(bk_repl_parts_t *p, bk_repl_part_t *part, int64_t now_ms);

/* The 1 s timer's storage work, decided on the loop and done on the pool:
 * retention (st_log_retention_detach per log: segments past retention.ms /
 * retention.bytes or below the log start leave the log now; batches of
 * BK_REPL_PARTS_IO_BATCH logs per removal job) and flush.ms (as
 * bk_repl_parts_flush_maybe, batched the same way). While a refused removal job
 * waits for room, no new segments are detached. No-op without a pool. */
void bk_repl_parts_tick(bk_repl_parts_t *p, int64_t now_ms);

#define BK_REPL_PARTS_IO_BATCH 64   /* logs per flush / removal job */

typedef struct {
    uint64_t flushes_started;   /* fsync jobs begun (one per log) */
    uint64_t flushes_done;      /* completed: recovery point moved */
    uint64_t flushes_failed;    /* fsync failed: log offline */
    uint64_t flushes_skipped;   /* pool refused or cancelled: still due */
    uint64_t flushes_orphaned;  /* log closed, deleted or replaced meanwhile */
    uint64_t segments_dropped;  /* detached by retention / log start */
    uint64_t drop_failures;     /* removal jobs with a failed rename/unlink */
    uint64_t checkpoints_written, checkpoints_failed, checkpoints_skipped;
} bk_repl_parts_io_stats_t;

void bk_repl_parts_io_stats(const bk_repl_parts_t *p, bk_repl_parts_io_stats_t *out);

/* File work not finished: queued/running opens, closes and deletions,
 * flush, removal and checkpoint jobs in flight or waiting for room. */
size_t bk_repl_parts_io_pending(const bk_repl_parts_t *p);

/* Closes every log, then checkpoints with their final offsets (plus
 * `extra`) and frees the manager. Returns the first error. Blocking: for
 * shutdown, once the pool is drained or freed (the loop serves nothing). */
int bk_repl_parts_close_all(bk_repl_parts_t *p, const st_logdir_entry_t *extra, int extra_dir);

#endif
