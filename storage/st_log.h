/* st_log.h — a partition log: <dir>/<topic>-<partition>/ on disk.
 *
 * Threading: a log is owned by one thread at a time (the broker's loop, or a
 * worker it hands the log to). No function here is safe to call on the same
 * log from two threads at once. Blocking calls (open/recovery, flush, close,
 * delete, st_log_apply_retention, compaction) are plain functions for a
 * thread that may wait on the disk; each checks st_guard (st_guard.h). The
 * loop thread uses the split forms instead: a cheap decision on the loop, a
 * job that touches only its own argument (duplicated descriptors, copied
 * paths) on a worker, and a completion on the loop:
 *   flush     st_log_flush_due -> st_log_sync_begin (loop) -> st_log_sync_run
 *             (worker) -> st_log_sync_end (loop) or st_log_sync_free (log gone)
 *   retention st_log_retention_detach (loop: the segments leave the log) ->
 *             st_log_drop_run (worker: rename, unlink, close) -> st_log_drop_free
 * Exception: st_log_purge_deleted(dir) only unlinks "*.deleted" files and may
 * run on a worker concurrently with anything on that log.
 *
 * Durability: appends go to the page cache; the recovery point (everything
 * below it is fsynced) moves on st_log_flush / st_log_sync_end, which the
 * owner runs when flush.messages / flush.ms make one due (st_log_flush_due);
 * an append never fsyncs by itself. After an unclean shutdown every batch at
 * or after the recovery point is re-validated and a torn tail is cut;
 * corruption below it makes st_log_open fail with ST_ERR_OFFLINE.
 */
#ifndef SKIFF_ST_LOG_H
#define SKIFF_ST_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_batch.h"
#include "storage/st_epoch_cache.h"
#include "storage/st_fdref.h"
#include "storage/st_producer_state.h"
#include "storage/st_status.h"
#include "storage/st_txn_index.h"

#define ST_CLEANUP_DELETE 1u
#define ST_CLEANUP_COMPACT 2u

/* Topic-level settings, Kafka's names and defaults. */
typedef struct st_log_config {
    uint64_t segment_bytes;          /* segment.bytes (1 GiB; max 2 GiB - 1) */
    int64_t segment_ms;              /* segment.ms (7 days) */
    uint32_t index_interval_bytes;   /* index.interval.bytes (4096) */
    uint32_t index_max_bytes;        /* segment.index.bytes (10 MiB) */
    int64_t retention_ms;            /* retention.ms (7 days; -1 = forever) */
    int64_t retention_bytes;         /* retention.bytes (-1 = unlimited) */
    unsigned cleanup_policy;         /* ST_CLEANUP_* bits (delete) */
    int64_t flush_messages;          /* flush.messages (INT64_MAX = page cache) */
    int64_t flush_ms;                /* flush.ms (INT64_MAX) */
    bool log_append_time;            /* message.timestamp.type=LogAppendTime */
    int64_t delete_retention_ms;     /* delete.retention.ms (1 day) */
    int64_t min_compaction_lag_ms;   /* min.compaction.lag.ms (0) */
    double min_cleanable_dirty_ratio;/* min.cleanable.dirty.ratio (0.5) */
    int64_t producer_id_expiration_ms; /* producer.id.expiration.ms (1 day) */
    uint64_t records_max_bytes;      /* cap on one batch's decompressed records
                                      * when storage looks inside compressed
                                      * batches (cleaner, timestamp lookups);
                                      * 0 = ST_RECORDS_MAX_BYTES_DEFAULT. The
                                      * broker should pass at least the cap
                                      * it validates produced batches with */
} st_log_config_t;

#define ST_RECORDS_MAX_BYTES_DEFAULT ((uint64_t)64 << 20)
#define ST_RECORDS_MAX_BYTES_MAX ((uint64_t)1 << 30) /* larger values are clamped */

void st_log_config_default(st_log_config_t *cfg);

/* What the log dir's checkpoints say about this partition. */
typedef struct st_log_open_opts {
    int64_t recovery_point;    /* recovery-point-offset-checkpoint (0 if absent) */
    int64_t log_start_offset;  /* log-start-offset-checkpoint (0 if absent) */
    int64_t high_watermark;    /* replication-offset-checkpoint (0 if absent) */
    int64_t cleaner_offset;    /* cleaner-offset-checkpoint (0 if absent) */
    bool clean_shutdown;       /* the log dir's clean marker was present */
    bool create;               /* create the partition directory if absent */
    int64_t now_ms;
} st_log_open_opts_t;

typedef struct st_log st_log_t;

/* Opens (or creates) parent_dir/<topic>-<partition>, recovering as needed.
 * On success *out owns the log (close with st_log_close). Errors:
 * ST_ERR_OFFLINE (corruption below the recovery point; logged with file and
 * position), ST_ERR_NOT_FOUND (absent and !create), ST_ERR_IO. */
KP_MUST_CHECK int st_log_open(const char *parent_dir, const char *topic, int32_t partition,
                              const st_log_config_t *cfg, const st_log_open_opts_t *opts, st_log_t **out);

typedef struct st_log_offsets {
    int64_t log_start_offset;
    int64_t recovery_point;
    int64_t high_watermark;
    int64_t log_end_offset;
    int64_t cleaner_offset;    /* compacted below this (cleaner-offset-checkpoint) */
} st_log_offsets_t;

/* Blocking: flushes, writes the producer snapshot, trims indexes and frees the log.
 * final (may be NULL) receives the offsets to checkpoint. Returns the first
 * error but always frees. */
KP_MUST_CHECK int st_log_close(st_log_t *log, st_log_offsets_t *final);

/* Blocking: removes the log's directory and frees the log (topic deletion). */
KP_MUST_CHECK int st_log_delete(st_log_t *log);

/* Frees the log without writing anything (no flush, no producer snapshot,
 * no index trimming): for a log whose directory is about to be deleted.
 * Only unmaps and closes, so it is cheap on any thread. */
void st_log_discard(st_log_t *log);

/* ---- state ---- */
int64_t st_log_start_offset(const st_log_t *log);
int64_t st_log_end_offset(const st_log_t *log);       /* LEO: next offset to assign */
int64_t st_log_recovery_point(const st_log_t *log);
int64_t st_log_high_watermark(const st_log_t *log);
int64_t st_log_cleaner_offset(const st_log_t *log);
/* Clamped to [log start, LEO]. */
void st_log_set_high_watermark(st_log_t *log, int64_t hw);
int64_t st_log_active_base_offset(const st_log_t *log);
size_t st_log_segment_count(const st_log_t *log);
uint64_t st_log_size_bytes(const st_log_t *log);
const char *st_log_dir(const st_log_t *log);
const st_log_config_t *st_log_config(const st_log_t *log);
void st_log_set_config(st_log_t *log, const st_log_config_t *cfg);

/* ---- append ---- */
typedef struct st_append_info {
    int64_t base_offset;        /* first offset assigned */
    int64_t last_offset;        /* last offset assigned */
    int64_t log_append_time_ms; /* -1 for CreateTime topics */
    int64_t max_timestamp;
    int32_t batches;
    uint64_t bytes;
} st_append_info_t;

/* Leader append of a batch set (one or more v2 batches back to back in buf,
 * as received; buf is patched in place). Each batch is re-checked (header,
 * CRC); offsets are assigned from LEO by patching baseOffset, the leader
 * epoch is patched in (both outside the CRC); on LogAppendTime topics the
 * timestamp type bit and maxTimestamp are set to now_ms and the CRC redone.
 * One write for the whole set; rolls first when the set would not fit.
 * Producer state, epoch cache and txn index follow. Does not flush: the
 * caller applies st_log_maybe_flush. On error nothing is appended (a
 * partial write is truncated away; if even that fails the log goes
 * offline). */
KP_MUST_CHECK int st_log_append(st_log_t *log, uint8_t *buf, size_t len, int32_t leader_epoch, int64_t now_ms,
                                st_append_info_t *info);

/* Same as st_log_append for a set whose CRCs the caller has just verified
 * (the produce path does so while validating, see ARCHITECTURE.md): skips
 * the second CRC pass (~1 us per 16 KiB) but still checks every header. */
KP_MUST_CHECK int st_log_append_verified(st_log_t *log, uint8_t *buf, size_t len, int32_t leader_epoch,
                                         int64_t now_ms, st_append_info_t *info);

/* Follower/raft append: keeps the batches' own offsets and epochs. The
 * first base offset must be >= LEO and offsets must increase. buf is only
 * read (nothing is patched): a follower appends straight from the fetch
 * answer's bytes. */
KP_MUST_CHECK int st_log_append_replica(st_log_t *log, const uint8_t *buf, size_t len, int64_t now_ms,
                                        st_append_info_t *info);

/* Idempotence check for a batch about to be appended (see st_ps_check). */
st_ps_verdict_t st_log_producer_check(const st_log_t *log, const kp_batch_t *b, int64_t *dup_first,
                                      int64_t *dup_last);

/* ---- flush ---- */
/* Blocking: fsyncs every segment with data at or past the recovery point
 * (and its indexes, and the directory after a new file); recovery point =
 * LEO. For raft: call after append before acking; never on the loop. */
KP_MUST_CHECK int st_log_flush(st_log_t *log);
/* For an fsync on another thread: a duplicate of the active segment's file
 * descriptor (the caller closes it), valid when everything not yet durable
 * lies in that one file's data (no newer segment, no new directory entry
 * since the last st_log_flush); else -1 and the caller uses st_log_flush.
 * fsync of the duplicate makes the appends made so far durable. The
 * recovery point does not move (a restart re-checks the active segment);
 * indexes are rebuilt by recovery. */
int st_log_dup_sync_fd(const st_log_t *log);
/* Pure decision: flush.messages messages appended since the last flush
 * began, or some appended and flush.ms elapsed since then. False while a
 * st_log_sync job is in flight (at most one per log: appends meanwhile are
 * covered by the next one) and for an offline log. Cheap: call after every
 * append and from a timer. */
bool st_log_flush_due(const st_log_t *log, int64_t now_ms);
/* Blocking convenience for tests and tools: st_log_flush when due. */
KP_MUST_CHECK int st_log_maybe_flush(st_log_t *log, int64_t now_ms);

/* An fsync of a log prepared on its owner's thread and run on another. */
typedef struct st_log_sync st_log_sync_t;
#define ST_SYNC_SEGMENTS_MAX 64   /* segments (descriptors) one job fsyncs */

/* Owner (loop), cheap: prepares the fsync of everything appended so far —
 * dup()s the descriptors of the segments holding data at or past the
 * recovery point (the oldest ST_SYNC_SEGMENTS_MAX of them), notes their
 * base offsets (the job reopens their indexes by path) and whether the
 * directory needs an fsync after a new file. The log has a flush in flight
 * until st_log_sync_end. *out = NULL (KP_OK) when nothing needs it.
 * ST_ERR_OFFLINE; ST_ERR_IO / KP_ERR_NOMEM: nothing started. */
KP_MUST_CHECK int st_log_sync_begin(st_log_t *log, int64_t now_ms, st_log_sync_t **out);
/* Worker: the fsyncs. Touches only j (its own descriptors and copied
 * paths), never the log: safe while the owner appends, rolls, truncates,
 * closes or deletes it. An index or directory that is gone meanwhile is
 * skipped (its segment was removed). Returns KP_OK or ST_ERR_IO. */
int st_log_sync_run(st_log_sync_t *j);
/* The offset below which j makes the log durable (the LEO at begin, or the
 * base of the first segment it left out). */
int64_t st_log_sync_target(const st_log_sync_t *j);
/* Owner (loop), on the log j was begun on — the caller must know it is
 * still open (track it by your own ids, never by a saved pointer). ran is
 * false when the job never ran (pool cancelled): nothing changes. After a
 * good run the recovery point moves to the target unless the log was
 * truncated meanwhile (the fsynced bytes may have been replaced), and the
 * directory counts as synced unless a file was created meanwhile. A failed
 * fsync takes the log offline (the page cache may have dropped the data)
 * and returns ST_ERR_IO. Clears the in-flight mark; frees j. */
KP_MUST_CHECK int st_log_sync_end(st_log_t *log, st_log_sync_t *j, bool ran);
/* The log is gone (closed or deleted while j was out): frees j and closes
 * its descriptors. Any thread. */
void st_log_sync_free(st_log_sync_t *j);

/* ---- scrub: a background re-read of rolled segments (skiff's own) ----
 * Split like the flush: st_log_scrub_begin (owner: picks the first rolled
 * segment with base >= from_base, dup()s its .log; *out NULL when there is
 * none, i.e. the pass is over), st_log_scrub_run (worker: checks every
 * batch from byte pos — header, offsets increasing and inside the segment,
 * CRC-32C computed in 64 KiB chunks — until max_bytes were read (whole
 * batches), the end, or the first bad batch), st_log_scrub_end (owner: the
 * verdict, or ST_ERR_NOT_FOUND when the segment was truncated, removed or
 * replaced meanwhile; logs a corrupt batch with file, byte and offset) or
 * st_log_scrub_free when the log is gone. pos continues a segment (0 for
 * the start; ignored when from_base names another segment) with pos_offset
 * the previous job's next_offset (so a bad batch there is reported at the
 * first offset not proven good, not at its possibly damaged own). The active
 * segment is never scrubbed: appends checked its CRCs, and a crash re-checks
 * it from the recovery point. */
typedef struct st_log_scrub st_log_scrub_t;
typedef struct st_scrub_result {
    int64_t seg_base;        /* the segment read */
    uint64_t next_pos;       /* where the next job on it starts */
    int64_t next_offset;     /* the offset the batch there must start at or after */
    bool seg_done;           /* read to its end, all good */
    uint64_t bytes;          /* bytes of good batches read by this job */
    uint64_t batches;
    bool corrupt;            /* a batch failed its checks */
    int status;              /* why (KP_ERR_CORRUPT: CRC or offsets; other KP_ERR_*: header) */
    uint64_t bad_pos;        /* its byte position */
    int64_t bad_offset;      /* the first offset not proven good (a repair truncates here) */
    char path[512];          /* the segment's .log (ST_PATH_MAX) */
} st_scrub_result_t;
KP_MUST_CHECK int st_log_scrub_begin(st_log_t *log, int64_t from_base, uint64_t pos, int64_t pos_offset,
                                     uint64_t max_bytes, st_log_scrub_t **out);
int st_log_scrub_run(st_log_scrub_t *j);
KP_MUST_CHECK int st_log_scrub_end(st_log_t *log, st_log_scrub_t *j, st_scrub_result_t *res);
void st_log_scrub_free(st_log_scrub_t *j);
/* Takes the log offline (reads, appends, flushes refuse with ST_ERR_OFFLINE
 * until restart), with a log line naming why: for data found damaged where
 * no repair from another copy is possible. */
void st_log_mark_offline(st_log_t *log, const char *why);

/* ---- read ---- */
#define ST_READ_MIN_ONE 1u    /* return the first batch even if > max_bytes */
#define ST_READ_RANGES_MAX 2  /* the first segment's range, then the next one's */

typedef struct st_read_range {
    int fd;                   /* valid until the log is next modified by truncate,
                               * retention, compaction, delete or close */
    st_fdref_t *ref;          /* fd's holder: st_fdref_hold keeps fd open past that
                               * (a send in flight), st_fdref_release when done */
    uint64_t pos;
    uint64_t len;             /* whole batches */
} st_read_range_t;

typedef struct st_read_result {
    st_read_range_t r[ST_READ_RANGES_MAX];
    int n;                    /* ranges used; 0 = nothing to return */
    uint64_t total_bytes;
    int64_t first_offset;     /* base offset of the first batch returned */
    int64_t next_offset;      /* offset after the last batch returned */
} st_read_result_t;

/* Batches containing offset `offset` and after, up to max_bytes, only whole
 * batches whose last offset < end_offset (pass the HW/LSO, or -1 for LEO).
 * offset == LEO (or >= end_offset) gives n == 0. ST_ERR_OUT_OF_RANGE when
 * offset < log start or > LEO. */
KP_MUST_CHECK int st_log_read(const st_log_t *log, int64_t offset, uint64_t max_bytes, int64_t end_offset,
                              unsigned flags, st_read_result_t *out);
/* Same, copied into buf (cap bytes; max_bytes is min(max_bytes, cap) unless
 * MIN_ONE and the first batch fits cap). */
KP_MUST_CHECK int st_log_read_copy(const st_log_t *log, int64_t offset, uint64_t max_bytes, int64_t end_offset,
                                   unsigned flags, uint8_t *buf, size_t cap, size_t *len, int64_t *next_offset);

/* Reads the whole log [log start, LEO as of the call) in order, in chunks of
 * whole batches copied into one buffer (start_bytes, doubled while a single
 * batch does not fit, up to max_bytes: beyond that KP_ERR_TOO_LARGE), and
 * calls fn(ctx, chunk, len) for each; a non-OK return of fn stops the scan
 * and is returned. For replaying state logs (metadata, coordinators) at
 * load; the chunk is valid only during the call. */
typedef int (*st_log_chunk_fn)(void *ctx, const uint8_t *chunk, size_t len);
KP_MUST_CHECK int st_log_scan(const st_log_t *log, size_t start_bytes, size_t max_bytes, st_log_chunk_fn fn,
                              void *ctx);
/* Same walk, batch by batch: each chunk is split with kp_batch_read (a
 * malformed batch stops the scan with its error) and fn(ctx, batch) is
 * called per batch; the batch points into the chunk, valid only during the
 * call. The one walker for state-log replays (metadata, coordinators). */
typedef int (*st_log_batch_fn)(void *ctx, const kp_batch_t *b);
KP_MUST_CHECK int st_log_scan_batches(const st_log_t *log, size_t start_bytes, size_t max_bytes, st_log_batch_fn fn,
                                      void *ctx);

/* ListOffsets by timestamp: first record with timestamp >= ts, record-exact
 * (compressed batches are decompressed, at most records_max_bytes; past that
 * or when undecodable: the batch's base offset and max timestamp).
 * ST_ERR_NOT_FOUND when no batch has a timestamp that large. */
KP_MUST_CHECK int st_log_offset_for_time(const st_log_t *log, int64_t ts, int64_t *offset, int64_t *found_ts);
/* ListOffsets MAX_TIMESTAMP: largest timestamp and the offset of the first
 * record holding it (record-exact as st_log_offset_for_time). ST_ERR_NOT_FOUND
 * for an empty log. */
KP_MUST_CHECK int st_log_max_timestamp(const st_log_t *log, int64_t *ts, int64_t *offset);

/* ---- truncation, start offset, retention ---- */
/* Removes every batch at or after offset (replication divergence). offset
 * in [log start, LEO]. Epoch cache, producer state, txn index follow. */
KP_MUST_CHECK int st_log_truncate_to(st_log_t *log, int64_t offset);
/* Empties the log and restarts it at new_start (follower out of range). */
KP_MUST_CHECK int st_log_truncate_fully(st_log_t *log, int64_t new_start, int64_t now_ms);
/* DeleteRecords: log start = new_start (<= HW is the caller's rule; must
 * be <= LEO); segments wholly below it are removed (renamed .deleted) —
 * unless the log defers removals (st_log_set_deferred_removal): then only the
 * start moves and the next st_log_retention_detach takes those segments. */
KP_MUST_CHECK int st_log_advance_start(st_log_t *log, int64_t new_start);
/* Blocking: cleanup.policy=delete: removes (renames .deleted) the oldest
 * closed segments whose max timestamp is older than retention.ms, then while
 * the log exceeds retention.bytes, and those wholly below the log start.
 * Never the active segment. *deleted counts. */
KP_MUST_CHECK int st_log_apply_retention(st_log_t *log, int64_t now_ms, int *deleted);
/* Unlinks "*.deleted" files in a partition directory; safe off-thread. */
void st_log_purge_deleted(const char *dir);

/* From now on st_log_advance_start only moves the log start; the files of
 * segments below it are left to st_log_retention_detach (the broker's loop,
 * which must not rename on its thread). Off by default (the raft log). */
void st_log_set_deferred_removal(st_log_t *log, bool on);

/* Segments that left a log, for a worker to remove. */
typedef struct st_log_drop st_log_drop_t;

/* Owner (loop), no file touched: the retention decision of
 * st_log_apply_retention is carried out in memory — the segments leave the
 * log now (log start moves past them; epoch cache, aborted transactions
 * follow in memory), so nothing reads them by offset any more — and *out
 * (NULL when none) holds what remains to do on disk: rename each one's files
 * to ".deleted", unlink them, remove producer snapshots below the new first
 * segment. The dropped segments' .log descriptors move into *out: the last
 * close of an unlinked file frees its blocks, which takes long for a big
 * file, so that too happens in st_log_drop_run. *deleted counts segments.
 * ST_ERR_OFFLINE; KP_ERR_NOMEM (nothing changed). */
KP_MUST_CHECK int st_log_retention_detach(st_log_t *log, int64_t now_ms, st_log_drop_t **out, int *deleted);
/* Worker: the removal. Touches only d. Works through a descriptor of the
 * partition directory and renames a segment's files only while its name
 * still refers to the .log file d holds open, so a directory deleted (or
 * deleted and re-created) meanwhile is never harmed. Returns the first
 * failure (ST_ERR_IO); whatever is left is "*.deleted" (or, before the
 * rename, a segment below the log start) and goes at the next retention
 * or open. */
int st_log_drop_run(st_log_drop_t *d);
size_t st_log_drop_count(const st_log_drop_t *d);
const char *st_log_drop_dir(const st_log_drop_t *d);
/* Frees d; closes descriptors st_log_drop_run did not (never ran). */
void st_log_drop_free(st_log_drop_t *d);
/* Rolls now (segment.ms from a timer, or tests). */
KP_MUST_CHECK int st_log_roll(st_log_t *log, int64_t now_ms);

/* ---- epochs and transactions ---- */
st_epoch_cache_t *st_log_epochs(st_log_t *log);
/* OffsetForLeaderEpoch on this log. */
void st_log_end_offset_for_epoch(const st_log_t *log, int32_t epoch, int32_t *found_epoch, int64_t *end_offset);
const st_producer_state_t *st_log_producers(const st_log_t *log);
/* Drops producers idle longer than producer.id.expiration.ms (no open
 * transaction); call periodically. */
void st_log_expire_producers(st_log_t *log, int64_t now_ms);
/* First offset of any open transaction, or -1. */
int64_t st_log_first_unstable_offset(const st_log_t *log);
/* min(HW, first unstable offset). */
int64_t st_log_last_stable_offset(const st_log_t *log);
/* Aborted transactions whose range overlaps [from, upper): fills up to max
 * entries in out (ordered by marker offset), *n = number filled. */
size_t st_log_aborted_txns(const st_log_t *log, int64_t from, int64_t upper, st_aborted_txn_t *out, size_t max);

/* ---- partition.metadata ("version: 0\ntopic_id: <22-char base64url>\n") ---- */
KP_MUST_CHECK int st_log_write_topic_id(const st_log_t *log, const kp_uuid_t *id);
/* ST_ERR_NOT_FOUND when the file is absent, KP_ERR_CORRUPT when malformed. */
KP_MUST_CHECK int st_log_read_topic_id(const st_log_t *log, kp_uuid_t *id);

#endif
