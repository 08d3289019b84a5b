/* log_trunc.c — removing data: truncation, log start, retention. */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/log_internal.h"
#include "storage/st_guard.h"
#include "storage/st_io.h"

/* Removes snapshot files with offsets < below (they can no longer be used:
 * replay needs the log after them). Keeps the newest one <= below. */
static void prune_snapshots(const st_log_t *log, int64_t below) {
    DIR *d = opendir(log->dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l != 29 || strcmp(e->d_name + 20, ".snapshot") != 0) continue;
        long long v = strtoll(e->d_name, NULL, 10);
        if (v >= below) continue;
        char p[ST_PATH_MAX];
        st_seg_path(p, sizeof p, log->dir, v, ".snapshot");
        unlink(p);
    }
    closedir(d);
}

int st_log_truncate_to(st_log_t *log, int64_t offset) {
    if (log->offline) return ST_ERR_OFFLINE;
    int64_t leo = st_log_end_offset(log);
    if (offset >= leo) return KP_OK;
    if (offset < log->log_start) return ST_ERR_OUT_OF_RANGE;
    size_t si = log_seg_for(log, offset);
    log->trunc_gen++;   /* an fsync in flight may not vouch for what comes next */
    st_logf(ST_LOG_INFO, "partition %s: truncating from log end %" PRId64 " to %" PRId64, log->name, leo, offset);
    log_drop_tail(log, si + 1, true);
    int rc = log_activate_last(log);
    if (rc != KP_OK) goto offline;
    st_segment_t *s = log_active(log);
    uint64_t pos;
    kp_batch_t h;
    if ((rc = st_seg_find(s, offset, &pos, &h)) != KP_OK) goto offline;
    int64_t new_leo = offset;
    if (pos < s->size_bytes && h.base_offset < offset) new_leo = h.base_offset; /* batches are atomic */
    if (new_leo < s->base_offset) new_leo = s->base_offset;
    if ((rc = st_seg_truncate(s, pos, new_leo, log->cfg.index_interval_bytes)) != KP_OK) goto offline;
    if (log->hw > new_leo) log->hw = new_leo;
    if (log->recovery_point > new_leo) log->recovery_point = new_leo;
    if (log->cleaned_upto > new_leo) log->cleaned_upto = new_leo;
    if ((rc = st_epoch_cache_truncate_end(&log->epochs, new_leo)) != KP_OK) goto offline;
    if ((rc = log_load_aborted(log, new_leo)) != KP_OK) goto offline;
    if ((rc = log_rebuild_producers(log, new_leo)) != KP_OK) goto offline;
    return KP_OK;
offline:
    log->offline = true;
    st_logf(ST_LOG_ERROR, "partition %s: truncation to %" PRId64 " failed (%s); log offline", log->name, offset,
            st_status_str(rc));
    return rc;
}

int st_log_truncate_fully(st_log_t *log, int64_t new_start, int64_t now_ms) {
    if (log->offline) return ST_ERR_OFFLINE;
    assert(new_start >= 0);
    if (new_start < log->dropped_below) {
        /* a drop job may still rename files of those bases: never reuse them
         * (a follower restarts past its own log end, so this cannot happen) */
        st_logf(ST_LOG_ERROR, "partition %s: cannot restart the log at %" PRId64 ", below removed segments (%" PRId64
                ")", log->name, new_start, log->dropped_below);
        return ST_ERR_BAD_OFFSET;
    }
    st_logf(ST_LOG_INFO, "partition %s: emptying the log and restarting at %" PRId64, log->name, new_start);
    log->trunc_gen++;
    log_drop_tail(log, 0, true);
    prune_snapshots(log, INT64_MAX);
    st_segment_t s;
    int rc = st_seg_create(&s, log->dir, new_start, log->cfg.index_max_bytes, now_ms);
    if (rc == KP_OK) rc = log_push_segment(log, &s);
    if (rc != KP_OK) {
        log->offline = true;
        return rc;
    }
    log_mark_dir_dirty(log);
    log->log_start = log->hw = log->recovery_point = new_start;
    log->cleaned_upto = 0;
    st_ps_clear(&log->ps);
    log->n_aborted = 0;
    return st_epoch_cache_truncate_end(&log->epochs, 0);
}

/* The log start moved (to at least the first segment's base): what
 * depends on it follows, in memory only. The epoch cache's new first
 * entry is not written to leader-epoch-checkpoint here (no fsync on the
 * loop): open applies the checkpointed log start to it again, and the next
 * write of the cache (a new epoch, a truncation) carries it. */
static void start_moved(st_log_t *log) {
    if (log->log_start < log->segs[0].base_offset) log->log_start = log->segs[0].base_offset;
    if (log->hw < log->log_start) log->hw = log->log_start;
    if (log->recovery_point < log->log_start) log->recovery_point = log->log_start;
    log_forget_aborted_below(log, log->log_start);
    st_epoch_cache_trim_start(&log->epochs, log->log_start);
}

/* Drops the first k segments and moves the log start to at least the new
 * first segment's base (blocking: renames and unlinks here). */
static int drop_front(st_log_t *log, size_t k) {
    if (k == 0) return KP_OK;
    st_guard_blocking("segment rename", log->name);
    int rc = log_drop_front(log, k);
    start_moved(log);
    prune_snapshots(log, log->segs[0].base_offset);
    return rc;
}

int st_log_advance_start(st_log_t *log, int64_t new_start) {
    if (log->offline) return ST_ERR_OFFLINE;
    if (new_start > st_log_end_offset(log)) return ST_ERR_OUT_OF_RANGE;
    if (new_start <= log->log_start) return KP_OK;
    log->log_start = new_start;
    if (log->deferred_removal) {
        /* the segments wholly below stay until st_log_retention_detach;
         * reads below the log start are refused meanwhile */
        start_moved(log);
        return KP_OK;
    }
    size_t k = 0;
    while (k + 1 < log->nsegs && log->segs[k + 1].base_offset <= new_start) k++;
    int rc = drop_front(log, k);
    if (k == 0) start_moved(log);
    return rc;
}

void st_log_set_deferred_removal(st_log_t *log, bool on) { log->deferred_removal = on; }

/* How many of the oldest segments retention removes now: past
 * retention.ms, while over retention.bytes, and wholly below the log
 * start. Never the active segment. O(segments). */
static size_t retention_count(const st_log_t *log, int64_t now_ms) {
    size_t k = 0;
    if (log->cfg.cleanup_policy & ST_CLEANUP_DELETE) {
        /* by time: oldest first, stop at the first segment still young */
        if (log->cfg.retention_ms >= 0) {
            while (k + 1 < log->nsegs) {
                const st_segment_t *s = &log->segs[k];
                int64_t ts = s->max_ts >= 0 ? s->max_ts : s->created_ms;
                if (ts >= now_ms - log->cfg.retention_ms) break;
                k++;
            }
        }
        /* by size: while removing the oldest still leaves >= retention.bytes */
        if (log->cfg.retention_bytes >= 0) {
            uint64_t total = 0;
            for (size_t i = k; i < log->nsegs; i++) total += log->segs[i].size_bytes;
            while (k + 1 < log->nsegs && total - log->segs[k].size_bytes >= (uint64_t)log->cfg.retention_bytes &&
                   total > (uint64_t)log->cfg.retention_bytes) {
                total -= log->segs[k].size_bytes;
                k++;
            }
        }
    }
    /* and anything wholly below the log start (DeleteRecords): with deferred
     * removal this is how those segments go, whatever the policy */
    if (log->deferred_removal || (log->cfg.cleanup_policy & ST_CLEANUP_DELETE))
        while (k + 1 < log->nsegs && log->segs[k + 1].base_offset <= log->log_start) k++;
    return k;
}

int st_log_apply_retention(st_log_t *log, int64_t now_ms, int *deleted) {
    *deleted = 0;
    if (log->offline) return ST_ERR_OFFLINE;
    if (!(log->cfg.cleanup_policy & ST_CLEANUP_DELETE)) return KP_OK;
    size_t k = retention_count(log, now_ms);
    if (k == 0) return KP_OK;
    st_logf(ST_LOG_INFO, "partition %s: retention removes %zu segment(s) below offset %" PRId64, log->name, k,
            log->segs[k].base_offset);
    *deleted = (int)k;
    return drop_front(log, k);
}

/* ---- removal off the owner's thread ---- */

typedef struct {
    int fd;                          /* the segment's .log descriptor, moved out of the log */
    st_fdref_t *ref;                 /* its holder: the log's reference, moved too */
    int64_t base;
} drop_seg_t;

static void drop_seg_release(drop_seg_t *g) {
    if (g->ref) st_fdref_release(g->ref);
    else if (g->fd >= 0) close(g->fd);
    g->ref = NULL;
    g->fd = -1;
}

struct st_log_drop {
    char name[ST_TOPIC_MAX + 16];
    char dir[ST_PATH_MAX];
    int64_t first_kept;              /* base of the log's first segment after the drop */
    size_t n;
    drop_seg_t seg[];
};

int st_log_retention_detach(st_log_t *log, int64_t now_ms, st_log_drop_t **out, int *deleted) {
    *out = NULL;
    *deleted = 0;
    if (log->offline) return ST_ERR_OFFLINE;
    size_t k = retention_count(log, now_ms);
    if (k == 0) return KP_OK;
    assert(k < log->nsegs);
    st_log_drop_t *d = calloc(1, sizeof *d + k * sizeof d->seg[0]);
    if (!d) return KP_ERR_NOMEM;
    memcpy(d->name, log->name, sizeof d->name);
    memcpy(d->dir, log->dir, sizeof d->dir);
    d->first_kept = log->segs[k].base_offset;
    d->n = k;
    for (size_t i = 0; i < k; i++) {
        st_segment_t *s = &log->segs[i];
        assert(!s->active);
        d->seg[i].base = s->base_offset;
        d->seg[i].fd = s->log_fd;
        d->seg[i].ref = s->log_ref;   /* the segment's reference moves to the job */
        s->log_fd = -1;
        s->log_ref = NULL;
        /* closed segments: unmapping their read-only indexes writes nothing */
        if (st_seg_close(s) != KP_OK) { /* read-only: nothing lost */ }
    }
    memmove(log->segs, log->segs + k, (log->nsegs - k) * sizeof *log->segs);
    log->nsegs -= k;
    if (d->first_kept > log->dropped_below) log->dropped_below = d->first_kept;
    start_moved(log);
    st_logf(ST_LOG_INFO, "partition %s: retention removes %zu segment(s) below offset %" PRId64, log->name, k,
            d->first_kept);
    *deleted = (int)k;
    *out = d;
    return KP_OK;
}

size_t st_log_drop_count(const st_log_drop_t *d) { return d->n; }
const char *st_log_drop_dir(const st_log_drop_t *d) { return d->dir; }

static const char *const k_drop_suffixes[] = { ".log", ".index", ".timeindex", ".txnindex" };
#define N_DROP_SUFFIXES (sizeof k_drop_suffixes / sizeof k_drop_suffixes[0])

/* True while `<base>.log` in dfd is the very file fd holds open: the open
 * descriptor keeps its inode alive, so no other file can have that number. */
static bool still_ours(int dfd, const drop_seg_t *g) {
    char name[32];
    snprintf(name, sizeof name, "%020" PRId64 ".log", g->base);
    struct stat mine, named;
    if (fstat(g->fd, &mine) != 0 || fstatat(dfd, name, &named, 0) != 0) return false;
    return mine.st_dev == named.st_dev && mine.st_ino == named.st_ino;
}

/* Renames the segment's files to "*.deleted" (the .log first: from then on
 * no open sees the segment) and unlinks them. */
static int remove_segment(int dfd, const st_log_drop_t *d, const drop_seg_t *g) {
    int rc = KP_OK;
    char from[40], to[48];
    for (size_t i = 0; i < N_DROP_SUFFIXES; i++) {
        snprintf(from, sizeof from, "%020" PRId64 "%s", g->base, k_drop_suffixes[i]);
        snprintf(to, sizeof to, "%s.deleted", from);
        if (renameat(dfd, from, dfd, to) != 0 && errno != ENOENT) {
            st_logf(ST_LOG_ERROR, "partition %s: cannot rename %s/%s to %s: %s", d->name, d->dir, from, to,
                    strerror(errno));
            return ST_ERR_IO;
        }
    }
    for (size_t i = 0; i < N_DROP_SUFFIXES; i++) {
        snprintf(to, sizeof to, "%020" PRId64 "%s.deleted", g->base, k_drop_suffixes[i]);
        if (unlinkat(dfd, to, 0) != 0 && errno != ENOENT) rc = ST_ERR_IO;
    }
    return rc;
}

/* Producer snapshots below the first kept segment (see prune_snapshots). */
static void prune_snapshots_at(int dfd, int64_t below) {
    int fd2 = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
    DIR *dir = fd2 >= 0 ? fdopendir(fd2) : NULL;
    if (!dir) {
        if (fd2 >= 0) close(fd2);
        return;
    }
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l != 29 || strcmp(e->d_name + 20, ".snapshot") != 0) continue;
        long long v = strtoll(e->d_name, NULL, 10);
        if (v < below) (void)unlinkat(dfd, e->d_name, 0);
    }
    closedir(dir);
}

int st_log_drop_run(st_log_drop_t *d) {
    st_guard_blocking("segment rename/unlink", d->name);
    int rc = KP_OK;
    int dfd = open(d->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        /* gone: the partition was deleted meanwhile, its files with it */
        if (errno != ENOENT) rc = ST_ERR_IO;
    } else {
        size_t removed = 0;
        for (size_t i = 0; i < d->n; i++) {
            if (!still_ours(dfd, &d->seg[i])) continue;   /* directory replaced: not ours to touch */
            int r = remove_segment(dfd, d, &d->seg[i]);
            if (r == KP_OK) removed++;
            else if (rc == KP_OK) rc = r;
        }
        if (removed > 0) prune_snapshots_at(dfd, d->first_kept);
        close(dfd);
    }
    /* the log's last references to unlinked files: their blocks are freed
     * here, or by the network thread that sends the last range of one */
    for (size_t i = 0; i < d->n; i++) drop_seg_release(&d->seg[i]);
    return rc;
}

void st_log_drop_free(st_log_drop_t *d) {
    if (!d) return;
    for (size_t i = 0; i < d->n; i++) drop_seg_release(&d->seg[i]);
    free(d);
}
