/* broker/meta/meta_log.h — the local (single-voter) metadata committer.
 *
 * The only path by which the image changes without a raft quorum: a
 * controller decision's records are proposed here, appended to the
 * `__cluster_metadata-0` partition log in metadata.log.dir as one v2 batch
 * (one record per MetadataRecord, value = protobuf bytes), fsynced, and only
 * then applied to the image, after which the proposer's callback runs with
 * the offset of the first record. An applied record is durable.
 *
 * Where the fsync runs: once the node gives the committer its worker pool
 * (bk_meta_log_set_pool), on the pool — the append happens at once on the
 * loop, the commit (apply + callback) in the job's completion, in proposal
 * order; one fsync job at a time, covering every append made before it
 * began (proposals meanwhile wait for the next one). Decisions taken while
 * commits are pending must see them: bk_meta_log_decision_image. Without a
 * pool (start-up: replay, self-registration) the fsync runs inline and the
 * callback before bk_meta_log_propose returns; callers must not rely on
 * either.
 *
 * On open the log is replayed into the image (from offset 0: no snapshots
 * yet). Threading: loop thread only; the pool job touches only its own
 * duplicated descriptors (st_log_sync_run). */
#ifndef SKIFF_BK_META_LOG_H
#define SKIFF_BK_META_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "broker/meta/image.h"
#include "broker/meta/records.h"
#include "storage/st_logdirs.h"

#define BK_META_TOPIC "__cluster_metadata"
#define BK_META_BATCH_MAX_BYTES (64u << 20)   /* one decision's records */
#define BK_META_READ_MAX_BYTES (128u << 20)   /* largest batch replay accepts */

typedef struct bk_meta_log bk_meta_log_t;

#define BK_META_CLOSED (-60)   /* a pending proposal the committer dropped at close
                                  or because the pool cancelled its fsync */

/* status: KP_OK (committed and applied; first_offset = offset of recs[0]),
 * or a negative storage/protocol status (nothing committed). */
typedef void (*bk_meta_done_fn)(void *arg, int status, int64_t first_offset);

/* Opens (creating if needed) the metadata log under `dir` with the open
 * options `ld` gives for it, and replays every record into `img`.
 * Returns the committer or NULL with a message in err (an apply failure
 * names the offset: the log is the truth, so the node must not start). */
bk_meta_log_t *bk_meta_log_open(const st_logdir_t *ld, bk_meta_image_t *img, int64_t now_ms,
                                char *err, size_t err_len);

/* The offset the next committed record will get (broker epochs use it). */
int64_t bk_meta_log_next_offset(const bk_meta_log_t *m);

/* Proposes `recs` (recs->err must be KP_OK; an empty list commits nothing
 * and succeeds). `done` runs exactly once, possibly before this returns. */
void bk_meta_log_propose(bk_meta_log_t *m, const bk_meta_recs_t *recs, int64_t now_ms,
                         bk_meta_done_fn done, void *arg);

/* Runs a job on the worker pool: job(arg) on a pool thread, then done(arg,
 * status) on the loop, exactly once, when it returns 0 (status non-zero:
 * the job was cancelled and did not run). Non-zero return: refused, nothing
 * is called. This is bk_net_worker_submit's contract; meta/ may not include
 * net/ (broker/README.md, Layers), so the node passes it in. */
typedef int (*bk_meta_submit_fn)(void *pool, int (*job)(void *arg), void (*done)(void *arg, int status),
                                 void *arg);

/* From now on fsyncs run on `pool` through `submit` (both borrowed; the
 * pool is drained or freed before bk_meta_log_close). */
void bk_meta_log_set_pool(bk_meta_log_t *m, bk_meta_submit_fn submit, void *pool);

/* The image a controller decision must be computed against: the committed
 * image plus the proposals whose fsync has not completed (a copy kept while
 * any is pending, built once per burst). The committed image itself when
 * nothing is pending. Valid until the next propose, commit or return to the
 * loop. */
const bk_meta_image_t *bk_meta_log_decision_image(bk_meta_log_t *m);

/* Proposals appended but not yet committed. */
size_t bk_meta_log_pending(const bk_meta_log_t *m);

/* Offsets for the log dir checkpoint (topic BK_META_TOPIC, partition 0). */
void bk_meta_log_offsets(const bk_meta_log_t *m, st_log_offsets_t *out);

/* Flushes and closes; final offsets (may be NULL) for the checkpoint.
 * Blocking: at shutdown, once the pool is drained (nothing pending; a
 * proposal still pending fails with BK_META_CLOSED). */
int bk_meta_log_close(bk_meta_log_t *m, st_log_offsets_t *final);

#endif
