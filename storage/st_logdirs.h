/* st_logdirs.h — the log.dirs of a node: placement, checkpoints, markers.
 *
 * Each log dir holds partition directories plus the per-dir files
 * recovery-point-offset-checkpoint, replication-offset-checkpoint,
 * log-start-offset-checkpoint, cleaner-offset-checkpoint, meta.properties and, between a clean
 * shutdown and the next start, the clean-shutdown marker.
 *
 * Start-up: st_logdir_load reads the checkpoints and takes (removes) the
 * marker; st_logdir_opts_for gives each partition's st_log_open options.
 * Running: st_logdir_checkpoint rewrites the three files from the open logs
 * (periodically and at shutdown). Shutdown: close every log, checkpoint with
 * their final offsets, then st_clean_marker_write.
 */
#ifndef SKIFF_ST_LOGDIRS_H
#define SKIFF_ST_LOGDIRS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/st_checkpoint.h"
#include "storage/st_log.h"

typedef struct st_logdir {
    char path[ST_PATH_MAX];
    bool was_clean;             /* the marker was present at load */
    st_tp_offset_t *rp, *hw, *start, *cleaner;
    size_t n_rp, n_hw, n_start, n_cleaner;
} st_logdir_t;

/* Reads the dir's checkpoints (malformed ones are logged and ignored, as
 * Kafka does: recovery then starts from 0) and takes the clean marker. */
KP_MUST_CHECK int st_logdir_load(st_logdir_t *ld, const char *path);
void st_logdir_free(st_logdir_t *ld);

/* Open options for topic-partition from the loaded checkpoints. */
void st_logdir_opts_for(const st_logdir_t *ld, const char *topic, int32_t partition, int64_t now_ms,
                        st_log_open_opts_t *opts);

/* One partition's row for st_logdir_checkpoint. */
typedef struct st_logdir_entry {
    const char *topic;
    int32_t partition;
    st_log_offsets_t offsets;
} st_logdir_entry_t;

/* Rewrites the four checkpoint files of dir (recovery point, HW, log start,
 * cleaner offset) atomically from entries. */
KP_MUST_CHECK int st_logdir_checkpoint(const char *dir, const st_logdir_entry_t *e, size_t n);

/* Index into dirs[0..n) of the dir holding the fewest partition
 * directories (ties: the first). -1 when none is readable. */
int st_logdirs_pick(const char *const *dirs, size_t n);

#endif
