/* st_checkpoint.h — small files written atomically: offset checkpoints,
 * meta.properties and the clean-shutdown marker.
 *
 * Every write goes to its own "<path>.<pid>-<seq>.tmp", is fsynced, renamed
 * over path, and the directory is fsynced: a crash leaves either the old or
 * the new file, and concurrent writers of one path each install a whole
 * file (the last rename wins).
 * Offset checkpoint format (Kafka's): "0\n<count>\n" then one line
 * "<topic> <partition> <offset>" per entry.
 */
#ifndef SKIFF_ST_CHECKPOINT_H
#define SKIFF_ST_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"

#define ST_TOPIC_MAX 249            /* Kafka's topic name limit */
#define ST_CKPT_ENTRIES_MAX 1000000 /* bound on entries read from one file */
#define ST_CLEAN_MARKER ".skiff_cleanshutdown"

/* Writes len bytes to path atomically (tmp, fsync, rename, fsync dir). */
KP_MUST_CHECK int st_atomic_write(const char *path, const void *data, size_t len);

/* Reads a whole small file (at most max_bytes) into a malloc'd, NUL-
 * terminated buffer the caller frees. ST_ERR_NOT_FOUND when absent,
 * KP_ERR_TOO_LARGE when bigger than max_bytes. */
KP_MUST_CHECK int st_read_small_file(const char *path, size_t max_bytes, char **out, size_t *len);

typedef struct st_tp_offset {
    char topic[ST_TOPIC_MAX + 1];
    int32_t partition;
    int64_t offset;
} st_tp_offset_t;

/* Writes n entries to path in Kafka's offset checkpoint format. */
KP_MUST_CHECK int st_offset_ckpt_write(const char *path, const st_tp_offset_t *e, size_t n);
/* Reads path; *out is malloc'd (caller frees), *n entries. A missing file
 * gives 0 entries and KP_OK. A bad version, count mismatch or malformed line
 * gives KP_ERR_CORRUPT (and a log line naming the file and line). */
KP_MUST_CHECK int st_offset_ckpt_read(const char *path, st_tp_offset_t **out, size_t *n);

/* meta.properties in dir: "version=1", "cluster.id=<id>", "node.id=<n>". */
KP_MUST_CHECK int st_meta_write(const char *dir, const char *cluster_id, int32_t node_id);
/* Reads it back; cluster_id gets at most cap-1 chars. ST_ERR_NOT_FOUND when
 * absent, KP_ERR_CORRUPT when a key is missing or malformed. */
KP_MUST_CHECK int st_meta_read(const char *dir, char *cluster_id, size_t cap, int32_t *node_id);

/* Creates dir/.skiff_cleanshutdown (durably). */
KP_MUST_CHECK int st_clean_marker_write(const char *dir);
/* True when the marker was present; removes it (durably) so that a crash
 * from now on is seen as unclean. */
KP_MUST_CHECK int st_clean_marker_take(const char *dir, bool *was_clean);

#endif
