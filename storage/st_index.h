/* st_index.h — fixed-size-entry index files: offset index and time index.
 *
 * Offset index (.index): 8-byte entries, big-endian u32 relative offset (the
 * base offset of a batch minus the segment base) then u32 byte position of
 * that batch in the .log. Time index (.timeindex): 12-byte entries, i64
 * timestamp (the largest seen up to and including that batch) then u32
 * relative offset of that batch. Both sparse and strictly increasing.
 *
 * Files are memory-mapped: the active segment's index is preallocated to
 * index.max.bytes and appended with plain stores (no syscall per entry, which
 * matters on the append hot path), and trimmed to its used size on close or
 * roll. Closed segments' indexes are mapped read-only at their file size. The
 * map is private to the owning log; nothing else truncates these files, so
 * a SIGBUS from a shrunk file cannot happen. Index contents are derived
 * data: after an unclean shutdown they are rebuilt from the log.
 */
#ifndef SKIFF_ST_INDEX_H
#define SKIFF_ST_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"

#define ST_OIDX_ENTRY_BYTES 8
#define ST_TIDX_ENTRY_BYTES 12

typedef struct st_index {
    int fd;                 /* 1 while open, -1 when closed: no descriptor is kept,
                             * the mapping outlives it (saves 2 fds per segment) */
    char path[512];
    uint8_t *map;           /* NULL when map_bytes == 0 */
    size_t map_bytes;       /* mapped (= file) size */
    uint32_t entry_bytes;
    uint32_t count;         /* entries in use */
    bool writable;
    bool ragged;            /* the file's size was not a whole number of entries */
    bool trim_unsynced;     /* trimmed (seal/close) and not fsynced since: the
                             * file's new size is not durable yet */
} st_index_t;

/* Opens (creating if absent) the index at path. writable: the file is
 * extended to max_bytes (rounded down to whole entries) and mapped shared
 * for appends; the used count is taken from the file size before extension
 * (the caller validates or rebuilds). Read-only: mapped at its file size; a
 * size that is not a multiple of entry_bytes has its tail ignored. On error
 * returns ST_ERR_IO and leaves idx closed (fd -1). */
KP_MUST_CHECK int st_index_open(st_index_t *idx, const char *path, uint32_t entry_bytes, bool writable,
                                uint32_t max_bytes);
/* Unmaps and closes; trims a writable file to count entries first. */
KP_MUST_CHECK int st_index_close(st_index_t *idx);
/* Unmaps without trimming or writing anything (the file is being deleted). */
void st_index_release(st_index_t *idx);
/* Switches a writable index to read-only at its used size (segment roll). */
KP_MUST_CHECK int st_index_seal(st_index_t *idx);
/* True when no more entries fit. */
static inline bool st_index_full(const st_index_t *idx) {
    return (size_t)(idx->count + 1) * idx->entry_bytes > idx->map_bytes;
}
/* Drops every entry (rebuild). */
void st_index_reset(st_index_t *idx);
/* Keeps the first n entries (n <= count). */
void st_index_truncate(st_index_t *idx, uint32_t n);
/* Makes the index durable: msync(MS_SYNC) of a writable mapping; for a
 * sealed index trimmed since its last sync, an fsync of the file reopened
 * by path (its trimmed size); otherwise nothing. Blocking. */
KP_MUST_CHECK int st_index_flush(st_index_t *idx);

/* Offset index entry i. */
void st_oidx_get(const st_index_t *idx, uint32_t i, uint32_t *rel, uint32_t *pos);
/* Appends (rel, pos); asserts room, and rel/pos greater than the last entry. */
void st_oidx_append(st_index_t *idx, uint32_t rel, uint32_t pos);
/* Greatest entry with rel <= target: its index, or -1 when none. */
int64_t st_oidx_lookup(const st_index_t *idx, uint32_t target_rel);
/* Greatest entry with pos <= pos_limit: its index, or -1. */
int64_t st_oidx_lookup_pos(const st_index_t *idx, uint32_t pos_limit);
/* Number of leading entries with pos < pos_limit (truncation by position). */
uint32_t st_oidx_count_below_pos(const st_index_t *idx, uint32_t pos_limit);
/* True when entries are strictly increasing in both fields, every pos is
 * below log_size and every rel is below rel_limit. */
bool st_oidx_sane(const st_index_t *idx, uint64_t log_size, uint64_t rel_limit);

void st_tidx_get(const st_index_t *idx, uint32_t i, int64_t *ts, uint32_t *rel);
/* Appends (ts, rel); asserts room and increasing ts and rel. */
void st_tidx_append(st_index_t *idx, int64_t ts, uint32_t rel);
/* Greatest entry with ts < target: its index, or -1. */
int64_t st_tidx_lookup_before(const st_index_t *idx, int64_t target_ts);
/* Number of leading entries with rel < rel_limit. */
uint32_t st_tidx_count_below_rel(const st_index_t *idx, uint32_t rel_limit);
bool st_tidx_sane(const st_index_t *idx, uint64_t rel_limit);

#endif
