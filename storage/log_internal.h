/* log_internal.h — the partition log's state, shared by log_*.c only. */
#ifndef SKIFF_ST_LOG_INTERNAL_H
#define SKIFF_ST_LOG_INTERNAL_H

#include "storage/st_checkpoint.h"
#include "storage/st_log.h"
#include "storage/st_segment.h"

#define ST_SEGMENTS_MAX 1000000  /* bound on segments of one partition */

struct st_log {
    char dir[ST_PATH_MAX];
    char name[ST_TOPIC_MAX + 16];   /* "<topic>-<partition>" for log lines */
    st_log_config_t cfg;
    st_segment_t *segs;             /* sorted by base offset; the last is active */
    size_t nsegs, segs_cap;
    int64_t log_start;
    int64_t recovery_point;
    int64_t hw;
    bool offline;
    bool dir_dirty;                 /* a segment file was created since the last dir fsync */
    uint64_t dir_gen;               /* +1 whenever dir_dirty is set: an fsync job covers the
                                     * directory only if it is unchanged at its end */
    uint64_t trunc_gen;             /* +1 on every truncation of the tail: an fsync job begun
                                     * before one may not move the recovery point */
    bool sync_inflight;             /* an st_log_sync job is out (at most one) */
    bool deferred_removal;          /* st_log_set_deferred_removal */
    int64_t dropped_below;          /* segments below this base were handed to drop jobs
                                     * whose renames may still be pending: never reused */
    int64_t unflushed_msgs;         /* appended since the last flush began */
    int64_t last_flush_ms;          /* when the last flush began */
    st_epoch_cache_t epochs;
    st_producer_state_t ps;
    int64_t cleaned_upto;           /* cleaner: offsets below were compacted (in memory) */
    st_aborted_txn_t *aborted;      /* ordered by marker offset */
    size_t n_aborted, cap_aborted;
};

static inline st_segment_t *log_active(const st_log_t *log) { return &log->segs[log->nsegs - 1]; }

/* A segment file was created: the directory needs an fsync. */
void log_mark_dir_dirty(st_log_t *log);

/* Index of the segment holding offset: largest base <= offset (0 if none). */
size_t log_seg_for(const st_log_t *log, int64_t offset);
/* Appends a segment struct to the array (grows it). */
KP_MUST_CHECK int log_push_segment(st_log_t *log, const st_segment_t *seg);
/* Closes and deletes (renames .deleted, then unlinks if purge) segments
 * [from, nsegs), leaving the array at `from` segments. */
void log_drop_tail(st_log_t *log, size_t from, bool purge);
/* Closes and renames .deleted the first k segments. */
KP_MUST_CHECK int log_drop_front(st_log_t *log, size_t k);
/* Makes the last segment active (reopens it writable) if it is not. */
KP_MUST_CHECK int log_activate_last(st_log_t *log);
/* Rolls to a new active segment starting at base. */
KP_MUST_CHECK int log_roll_at(st_log_t *log, int64_t base, int64_t now_ms);

/* Batch walk over the whole log (header reads through one read-ahead
 * window: the log must not change during the walk). Zero-initialised or
 * set by log_iter_seek. */
typedef struct log_iter {
    size_t si;
    uint64_t pos;
    st_hdr_win_t win;
} log_iter_t;
/* Positions at the batch containing offset (or the first after it). */
KP_MUST_CHECK int log_iter_seek(const st_log_t *log, int64_t offset, log_iter_t *it);
/* 1 with *h and *seg filled and the iterator advanced, 0 at the end, <0 error. */
KP_MUST_CHECK int log_iter_next(const st_log_t *log, log_iter_t *it, kp_batch_t *h, const st_segment_t **seg,
                                uint64_t *pos);
/* Reads a whole batch into *buf (grown as needed, at most 2 GiB) and parses
 * it in place with kp_batch_read. */
KP_MUST_CHECK int log_load_batch(const st_segment_t *seg, uint64_t pos, size_t size, uint8_t **buf, size_t *cap,
                                 kp_batch_t *full);

/* Producer/txn bookkeeping for one appended batch (full->data available for
 * control batches). index_aborts: append aborts to the .txnindex. */
KP_MUST_CHECK int log_track_batch(st_log_t *log, const kp_batch_t *full, int64_t now_ms, bool index_aborts);
/* Reloads producer state from the newest snapshot <= LEO and replays the log
 * after it; aborts at offsets >= index_from are (re)indexed. */
KP_MUST_CHECK int log_rebuild_producers(st_log_t *log, int64_t index_from);
/* Loads every segment's .txnindex, dropping entries at/after drop_from. */
KP_MUST_CHECK int log_load_aborted(st_log_t *log, int64_t drop_from);
/* Forgets aborted txns ending before start (log start advanced). */
void log_forget_aborted_below(st_log_t *log, int64_t start);

#endif
