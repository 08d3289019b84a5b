/* st_cleaner.h — log compaction (cleanup.policy=compact / compact,delete).
 *
 * One pass: find the cleanable range [log start, end) where end is the
 * first segment boundary at or below min(active segment base, HW, first
 * unstable offset, first segment younger than min.compaction.lag.ms); skip
 * when the dirty share of it is below min.cleanable.dirty.ratio; build a
 * key -> latest offset map over the dirty part [cleaned_upto, end) (bounded
 * by dedupe_buffer_bytes; if it fills, end moves back to a segment boundary
 * the map covers); rewrite each segment below end keeping, per key, only
 * records not superseded in the map. Tombstones get a delete horizon
 * (now + delete.retention.ms, in the batch's base timestamp with the
 * delete-horizon attribute, as Kafka does) and are dropped on a later pass
 * after it. A producer's last batch is kept (empty if need be) for its
 * sequence. Data of aborted transactions is dropped. COMMIT/ABORT markers
 * get a delete horizon like tombstones and go on a later pass after it once
 * no batch of their transaction is left before them (an ABORT only on a pass
 * after the one that dropped its data; its .txnindex entry goes with it,
 * installed first as X.txnindex.cleaned), unless a producer snapshot shows
 * the transaction open (storage/README.md, "Compaction"); other control
 * batches are kept whole. Compressed batches are decompressed (at most the log's
 * records_max_bytes) and, when records go, rebuilt with the same codec; a
 * batch whose records (compressed or not) are over that cap is kept whole,
 * its keys neither mapped nor dropped. A rebuilt batch keeps its base offset,
 * last offset, producer fields, leader epoch and max timestamp (Kafka's
 * rules). Offsets never change.
 *
 * Swap, per segment X: the build writes X.log.cleaned (fsynced), opens it
 * and builds its indexes into X.index.cleaned / X.timeindex.cleaned; the
 * commit unlinks X.index and X.timeindex, renames X.log.cleaned over X.log
 * (atomic: X.log is always a whole segment, old or cleaned) and the two
 * indexes in, then swaps the open segment into the log's array; finish
 * fsyncs the directory. st_log_open removes "*.cleaned" files, rebuilds
 * missing indexes and still completes an X.log.swap left by older
 * versions of this protocol. See storage/README.md, "Compaction".
 *
 * Threading: a pass is four calls. st_cleaner_prepare (owner thread, no
 * I/O beyond dup()) snapshots what to clean; st_cleaner_build (any thread,
 * concurrently with appends and reads on the log) reads the closed segments
 * through its own descriptors, writes fsynced .cleaned files and opens them
 * with their indexes built; st_cleaner_commit_some (owner thread; renames
 * and in-memory swaps only: no fsync, open or read) puts them in place,
 * skipping any segment that retention or truncation changed meanwhile;
 * st_cleaner_finish (any thread) fsyncs the directory and closes the
 * replaced segments' files. st_cleaner_commit
 * runs the last two in a row; st_log_compact all of them.
 */
#ifndef SKIFF_ST_CLEANER_H
#define SKIFF_ST_CLEANER_H

#include <stdint.h>

#include "storage/st_log.h"

/* Called by st_cleaner_build on its own thread after each batch read and
 * each batch written (bytes = its size): the broker throttles here
 * (log.cleaner.io.max.bytes.per.second) and stops a build at shutdown. A
 * non-zero return ends the build with that status (the plan is then
 * aborted by the caller). */
typedef int (*st_cleaner_io_fn)(void *ctx, uint64_t bytes);

typedef struct st_cleaner_config {
    size_t dedupe_buffer_bytes;   /* log.cleaner.dedupe.buffer.size (128 MiB) */
    bool ignore_dirty_ratio;      /* clean although the dirty share is below
                                   * min.cleanable.dirty.ratio (the broker's
                                   * max.compaction.lag.ms was exceeded, or
                                   * tombstones' delete horizon passed: with
                                   * nothing dirty the pass rewrites the
                                   * cleaned range, dropping them) */
    st_cleaner_io_fn io_fn;       /* may be NULL */
    void *io_ctx;
} st_cleaner_config_t;

typedef struct st_cleaner_stats {
    int segments_cleaned;
    uint64_t bytes_read;
    uint64_t bytes_written;
    int64_t records_kept;
    int64_t records_dropped;
    int64_t tombstones_dropped;
    int64_t tombstones_kept;      /* still within delete.retention.ms; transaction
                                   * markers within theirs are counted too (the
                                   * broker schedules a pass after the horizon) */
    int64_t markers_dropped;      /* COMMIT/ABORT markers removed */
    int64_t markers_kept;         /* markers within delete.retention.ms */
    int64_t batches_kept_whole;   /* records over records_max_bytes: not read */
    int64_t batches_recompressed; /* compressed batches rebuilt with their codec */
    int64_t end_offset;           /* cleaned below this */
    bool skipped;                 /* nothing cleanable or below the dirty ratio */
} st_cleaner_stats_t;

/* Share of the cleanable range not yet cleaned (0..1); 0 when none. */
double st_log_dirty_ratio(const st_log_t *log, int64_t now_ms);

/* Largest timestamp of the first dirty segment of the cleanable range, or
 * -1 when nothing there is dirty (for max.compaction.lag.ms: a segment
 * only has its largest timestamp, so a log becomes due a little later than
 * by its first record's). */
int64_t st_log_first_dirty_timestamp(const st_log_t *log, int64_t now_ms);

/* One compaction pass (see above). KP_OK also when skipped. Errors:
 * ST_ERR_IO (the log stays readable; leftover files are cleared on the
 * next open), KP_ERR_TOO_LARGE (map cannot hold one segment's keys). */
KP_MUST_CHECK int st_log_compact(st_log_t *log, const st_cleaner_config_t *cc, int64_t now_ms,
                                 st_cleaner_stats_t *stats);

typedef struct st_clean_plan st_clean_plan_t;

/* Owner thread. *plan = NULL (and stats->skipped) when nothing is
 * cleanable or the dirty ratio is below min.cleanable.dirty.ratio. */
KP_MUST_CHECK int st_cleaner_prepare(st_log_t *log, const st_cleaner_config_t *cc, int64_t now_ms,
                                     st_clean_plan_t **plan, st_cleaner_stats_t *stats);
/* Any thread; touches nothing of the log but its closed segments' bytes. */
KP_MUST_CHECK int st_cleaner_build(st_clean_plan_t *plan, st_cleaner_stats_t *stats);
/* Owner thread: st_cleaner_commit_some until done, then st_cleaner_finish
 * (a failed directory fsync takes the log offline, as any failed fsync). */
KP_MUST_CHECK int st_cleaner_commit(st_log_t *log, st_clean_plan_t *plan, st_cleaner_stats_t *stats);
/* Owner thread: installs the built segments in steps of at most
 * max_segments (0 = all), so that a caller on an event loop can serve other
 * work between them; every step checks its segments against the log as it
 * is then. Renames and pointer swaps only: cheap, no fsync, open or read.
 * *done once every segment is installed or skipped (the status is the
 * pass's); the plan then goes to st_cleaner_finish, whatever the status.
 * Until then the log is consistent (a prefix of the pass's segments is
 * cleaned) and the plan stays the caller's. */
KP_MUST_CHECK int st_cleaner_commit_some(st_log_t *log, st_clean_plan_t *plan, size_t max_segments,
                                         st_cleaner_stats_t *stats, bool *done);
/* Any thread, after st_cleaner_commit_some said done: fsyncs the log's
 * directory (the pass is durable when it returns KP_OK), closes the files
 * of the replaced and of the skipped segments and frees the plan. Touches
 * nothing of the log, and no name in its directory. ST_ERR_IO when the
 * fsync failed: the installed segments may not survive a crash (each
 * segment file is still whole, old or cleaned). */
KP_MUST_CHECK int st_cleaner_finish(st_clean_plan_t *plan);
/* Frees a plan that will not be committed (removes its .cleaned files). */
void st_cleaner_abort(st_clean_plan_t *plan);

#ifdef SKIFF_FAULT_INJECTION
/* Test hook, in test builds only (see st_io.h): when step (1..5) is reached
 * in a swap (1-4: before each disk operation of the first segment's
 * install, 5: before finish's directory fsync), the process kills itself
 * (SIGKILL), to test crash safety.
 * 0 = off. */
void st_cleaner_set_crash_step(int step);
#endif

#endif
