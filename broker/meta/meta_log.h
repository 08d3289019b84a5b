/* broker/meta/meta_log.h — who commits metadata records.
 *
 * The only path by which the image changes: a controller decision's records
 * are proposed here, and once committed they are applied to the image and
 * the proposer's callback runs with the offset of the first record. Today
 * the committer is local (a quorum of one): the records are appended to the
 * `__cluster_metadata-0` partition log in metadata.log.dir as one v2 batch
 * (one record per MetadataRecord, value = protobuf bytes), fsynced, applied,
 * and the callback runs before bk_meta_log_propose returns. The raft driver
 * will replace this with "append to the raft log -> callback at commit",
 * which may be later; callers must not rely on the synchronous call.
 *
 * On open the log is replayed into the image (from offset 0: no snapshots
 * yet). Threading: loop thread only. */
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

/* status: KP_OK (committed and applied; first_offset = offset of recs[0]),
 * or a negative storage/protocol status (nothing committed). */
typedef void (*bk_meta_done_fn)(void *arg, int status, int64_t first_offset);

/* Opens (creating if needed) the metadata log under `dir` with the open
 * options `ld` gives for it, and replays every record into `img`.
 * Returns the committer or NULL with a message in err (an apply failure
 * names the offset: the log is the truth, so the node must not start). */
bk_meta_log_t *bk_meta_log_open(const st_logdir_t *ld, bk_image_t *img, int64_t now_ms,
                                char *err, size_t err_len);

/* The offset the next committed record will get (broker epochs use it). */
int64_t bk_meta_log_next_offset(const bk_meta_log_t *m);

/* Proposes `recs` (recs->err must be KP_OK; an empty list commits nothing
 * and succeeds). `done` runs exactly once, possibly before this returns. */
void bk_meta_log_propose(bk_meta_log_t *m, const bk_recs_t *recs, int64_t now_ms,
                         bk_meta_done_fn done, void *arg);

/* Offsets for the log dir checkpoint (topic BK_META_TOPIC, partition 0). */
void bk_meta_log_offsets(const bk_meta_log_t *m, st_log_offsets_t *out);

/* Flushes and closes; final offsets (may be NULL) for the checkpoint. */
int bk_meta_log_close(bk_meta_log_t *m, st_log_offsets_t *final);

#endif
