/* broker/replication/parts.h — the partition manager: the partition logs this node holds.
 *
 * Keyed by (topic id, partition) in an open-addressing hash table. The node
 * feeds it the image's change notifications: LEADER/FOLLOWER opens (creating
 * if needed) the log in a log dir chosen by st_logdirs_pick, STOP closes it,
 * STOP+deleted deletes its directory. Handlers look logs up with
 * bk_parts_get. Threading: loop thread only; logs are never handed to
 * another thread (retention renames run on the loop, the unlinking of
 * ".deleted" files runs on the worker pool via st_log_purge_deleted, which
 * storage allows concurrently).
 *
 * Invariants: a bk_part_t pointer stays valid until the next bk_parts_apply,
 * return to the loop (a finished async open may remove slots) or
 * bk_parts_close_all; p->log != NULL unless the log failed to open
 * (offline: handlers answer KAFKA_STORAGE_ERROR / NOT_LEADER). */
#ifndef SKIFF_BK_PARTS_H
#define SKIFF_BK_PARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/meta/image.h"
#include "broker/net/worker.h"
#include "storage/st_log.h"
#include "storage/st_logdirs.h"

#define BK_PARTS_MAX 1000000               /* partitions per node */
#define BK_PARTS_DIRS_MAX 16               /* = BK_CONFIG_LOG_DIRS_MAX */
/* An apply creating at most this many logs, with no open queued, opens them
 * on the loop (a few ms each): a small CreateTopics is answered with its logs in place, so a
 * client producing right after (kafka-python's retries=0) is not refused.
 * Bigger applies (bulk creation, a follower catching up) use the pool. */
#define BK_PARTS_SYNC_OPENS 16

typedef struct bk_part {
    bk_uuid_t topic_id;
    int32_t partition;
    char topic[BK_TOPIC_NAME_MAX + 1];
    st_log_t *log;                         /* NULL = offline */
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
    /* skiff_{bytes,messages}_in_total / bytes_out_total series of this
     * partition's topic: NULL until first use, then held (valid until the
     * registry is freed, which outlives every partition) so that produce
     * and fetch never look a series up by name (node_metrics.c). */
    struct bk_mx_series *mx_bytes_in, *mx_msgs_in, *mx_bytes_out;
} bk_part_t;

typedef struct bk_parts bk_parts_t;

/* dirs[0..ndirs) are loaded log dirs (borrowed; must outlive the manager). */
bk_parts_t *bk_parts_new(st_logdir_t *dirs, size_t ndirs);

bk_part_t *bk_parts_get(bk_parts_t *p, const bk_uuid_t *topic_id, int32_t partition);

/* Log settings for a topic, filled by the node (topic configs + broker). */
typedef void (*bk_parts_cfg_fn)(void *ctx, const char *topic, st_log_config_t *out);

/* A deleted partition's directory, already closed and renamed to
 * "<dir>.<ms>-delete", for the caller to remove off the loop. */
typedef void (*bk_parts_trash_fn)(void *ctx, const char *path);

/* Called on the loop after a batch of logs opened on the pool was installed
 * (settings may have changed meanwhile; a coordinator may now load). */
typedef void (*bk_parts_opened_fn)(void *ctx);

/* From now on new partitions' logs of an apply creating more than
 * BK_PARTS_SYNC_OPENS logs are opened on `pool` (borrowed; freed or drained
 * before bk_parts_close_all): the slot exists at once with
 * `opening` set and log NULL; the log appears later (or the partition goes
 * offline if the open fails). A STOP meanwhile is carried out when the open
 * finishes. Without it (start-up replay) logs open on the loop. */
int bk_parts_set_pool(bk_parts_t *p, bk_worker_pool_t *pool, bk_parts_opened_fn fn, void *ctx);

/* Applies change notifications (img gives topic names). Failures to open a
 * log are logged and leave the partition offline; returns how many failed.
 * Deleted partitions are closed and renamed, then handed to trash_fn (so
 * the slow unlinking never runs on the loop); trash_fn may be NULL, then
 * they are deleted here. */
size_t bk_parts_apply(bk_parts_t *p, const bk_image_t *img, const bk_change_t *ch, size_t n,
                      bk_parts_cfg_fn cfg_fn, void *cfg_ctx, bk_parts_trash_fn trash_fn, int64_t now_ms);

/* True for a name bk_parts_apply gives a renamed deleted partition. */
bool bk_parts_is_trash(const char *name);

/* Calls fn for every held partition (any order). */
void bk_parts_each(bk_parts_t *p, void (*fn)(bk_part_t *part, void *ctx), void *ctx);
size_t bk_parts_count(const bk_parts_t *p);

/* Rewrites every log dir's checkpoints from the open logs; `extra` (may be
 * NULL) adds one more row to dir `extra_dir` (the metadata log). */
int bk_parts_checkpoint(bk_parts_t *p, const st_logdir_entry_t *extra, int extra_dir);

/* Closes every log, then checkpoints with their final offsets (plus
 * `extra`) and frees the manager. Returns the first error. */
int bk_parts_close_all(bk_parts_t *p, const st_logdir_entry_t *extra, int extra_dir);

#endif
