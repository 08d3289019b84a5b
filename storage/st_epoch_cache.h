/* st_epoch_cache.h — leader epoch -> start offset, file leader-epoch-checkpoint.
 *
 * Text format (Kafka's): "0\n<count>\n" then "<epoch> <start offset>" lines,
 * epochs and offsets strictly increasing. Rewritten atomically on every
 * change (changes are rare: one per leader election). Bounded by
 * ST_EPOCH_ENTRIES_MAX entries: the oldest are dropped first past it.
 */
#ifndef SKIFF_ST_EPOCH_CACHE_H
#define SKIFF_ST_EPOCH_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"
#include "storage/st_segment.h"

#define ST_EPOCH_ENTRIES_MAX 4096

typedef struct st_epoch_entry {
    int32_t epoch;
    int64_t start_offset;
} st_epoch_entry_t;

typedef struct st_epoch_cache {
    char path[ST_PATH_MAX];
    st_epoch_entry_t *e;
    size_t n;
} st_epoch_cache_t;

/* Loads dir/leader-epoch-checkpoint (absent = empty). A malformed file is
 * logged and treated as empty (Kafka does the same: it is rebuilt as
 * batches with epochs are appended). */
KP_MUST_CHECK int st_epoch_cache_open(st_epoch_cache_t *c, const char *dir);
void st_epoch_cache_free(st_epoch_cache_t *c);

/* Records that `epoch` starts at start_offset. No-op when epoch is the
 * latest already. Entries with epoch >= epoch or start >= start_offset are
 * dropped first (a new leader overrides a divergent history). Persists. */
KP_MUST_CHECK int st_epoch_cache_assign(st_epoch_cache_t *c, int32_t epoch, int64_t start_offset);

/* Latest epoch, or -1 when empty. */
int32_t st_epoch_cache_latest(const st_epoch_cache_t *c);

/* OffsetForLeaderEpoch: the largest known epoch <= requested and the end
 * offset of that epoch (the next epoch's start, or log_end_offset when it is
 * the latest). Both -1 when requested is below every known epoch or the
 * cache is empty. */
void st_epoch_cache_end_offset(const st_epoch_cache_t *c, int32_t requested, int64_t log_end_offset,
                               int32_t *epoch, int64_t *end_offset);

/* Drops entries starting at or after end_offset (log truncated). Persists. */
KP_MUST_CHECK int st_epoch_cache_truncate_end(st_epoch_cache_t *c, int64_t end_offset);
/* Drops entries wholly before start_offset; the first kept entry's start
 * is raised to start_offset (log start advanced). Persists. */
KP_MUST_CHECK int st_epoch_cache_truncate_start(st_epoch_cache_t *c, int64_t start_offset);
/* The same in memory only, for the log's owner thread (no fsync there): the
 * file keeps older entries until the next persisting call. Harmless: an
 * entry below the log start is trimmed again when the log opens. */
void st_epoch_cache_trim_start(st_epoch_cache_t *c, int64_t start_offset);

#endif
