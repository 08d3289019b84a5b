/* log_sync.c — an fsync prepared by the log's owner and run on another
 * thread (see st_log.h, "flush").
 *
 * The job owns duplicates of the segments' descriptors: an fsync through
 * a duplicate syncs the same file, and the file stays alive (and cannot be
 * replaced under it) however the owner changes the log meanwhile. Indexes
 * are mmap'd without a descriptor, so the job reopens them by path: an
 * fsync through any descriptor of a file writes back the pages dirtied
 * through its shared mapping; a path that is gone or now names a newer file
 * only costs a useless fsync. Cost per job: one dup per segment on the
 * owner's thread, then 3 fsyncs per segment (+1 for the directory) on the
 * worker. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <assert.h>

#include "storage/log_internal.h"
#include "storage/st_guard.h"
#include "storage/st_io.h"

typedef struct {
    int fd;                          /* dup of the segment's .log; -1 once closed */
    int64_t base;
} sync_seg_t;

struct st_log_sync {
    const st_log_t *origin;          /* compared, never dereferenced off the owner */
    uint64_t trunc_gen, dir_gen;     /* the log's, at begin */
    int64_t target;                  /* durable below this once the job succeeded */
    bool sync_dir;
    int64_t msgs;                    /* unflushed messages it took over */
    int64_t prev_flush_ms;           /* last_flush_ms before it began */
    int err;                         /* KP_OK, or the first failure of the run */
    int err_errno;
    int64_t err_base;                /* the segment whose fsync failed, or -1 */
    char name[ST_TOPIC_MAX + 16];    /* for log lines */
    char dir[ST_PATH_MAX];
    size_t n;
    sync_seg_t seg[];
};

static void close_fds(st_log_sync_t *j) {
    for (size_t i = 0; i < j->n; i++) {
        if (j->seg[i].fd >= 0) close(j->seg[i].fd);
        j->seg[i].fd = -1;
    }
}

int st_log_sync_begin(st_log_t *log, int64_t now_ms, st_log_sync_t **out) {
    *out = NULL;
    if (log->offline) return ST_ERR_OFFLINE;
    assert(!log->sync_inflight);   /* the owner asks st_log_flush_due first */
    int64_t leo = st_log_end_offset(log);
    if (log->recovery_point >= leo && !log->dir_dirty) {
        log->unflushed_msgs = 0;
        return KP_OK;
    }
    size_t i0 = log_seg_for(log, log->recovery_point);
    size_t n = log->nsegs - i0;
    bool capped = n > ST_SYNC_SEGMENTS_MAX;
    if (capped) n = ST_SYNC_SEGMENTS_MAX;
    st_log_sync_t *j = calloc(1, sizeof *j + n * sizeof j->seg[0]);
    if (!j) return KP_ERR_NOMEM;
    j->origin = log;
    j->trunc_gen = log->trunc_gen;
    j->dir_gen = log->dir_gen;
    j->sync_dir = log->dir_dirty;
    j->target = capped ? log->segs[i0 + n].base_offset : leo;
    j->err_base = -1;
    memcpy(j->name, log->name, sizeof j->name);
    memcpy(j->dir, log->dir, sizeof j->dir);
    for (size_t i = 0; i < n; i++) {
        st_segment_t *s = &log->segs[i0 + i];
        j->seg[i].base = s->base_offset;
        /* a sealed segment's indexes were trimmed before this job: its
         * fsync by path makes the trim durable (re-marked if it never runs) */
        if (!s->active) s->oidx.trim_unsynced = s->tidx.trim_unsynced = false;
        j->seg[i].fd = fcntl(s->log_fd, F_DUPFD_CLOEXEC, 0);
        j->n = i + 1;
        if (j->seg[i].fd < 0) {
            st_logf(ST_LOG_WARN, "partition %s: cannot duplicate a segment descriptor for an fsync: %s", log->name,
                    strerror(errno));
            st_log_sync_free(j);
            return ST_ERR_IO;
        }
    }
    log->sync_inflight = true;
    j->prev_flush_ms = log->last_flush_ms;
    log->last_flush_ms = now_ms;
    /* left-out segments keep the flush due, so the next job continues */
    if (!capped) {
        j->msgs = log->unflushed_msgs;
        log->unflushed_msgs = 0;
    }
    *out = j;
    return KP_OK;
}

/* fsync of an index file by path; a file that is gone is not an error. */
static int sync_path(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? KP_OK : ST_ERR_IO;
    int rc = st_io_fsync(fd);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

int st_log_sync_run(st_log_sync_t *j) {
    st_guard_blocking("fsync", j->name);
    j->err = KP_OK;
    for (size_t i = 0; i < j->n && j->err == KP_OK; i++) {
        char p[ST_PATH_MAX];
        int rc = st_io_fsync(j->seg[i].fd);
        if (rc == KP_OK) {
            st_seg_path(p, sizeof p, j->dir, j->seg[i].base, ".index");
            rc = sync_path(p);
        }
        if (rc == KP_OK) {
            st_seg_path(p, sizeof p, j->dir, j->seg[i].base, ".timeindex");
            rc = sync_path(p);
        }
        if (rc != KP_OK) {
            j->err = ST_ERR_IO;
            j->err_errno = errno;
            j->err_base = j->seg[i].base;
        }
    }
    /* a directory gone meanwhile was deleted with everything in it */
    if (j->err == KP_OK && j->sync_dir && st_io_fsync_dir(j->dir) != KP_OK && errno != ENOENT) {
        j->err = ST_ERR_IO;
        j->err_errno = errno;
    }
    /* here, not on the owner's thread: if the segment was unlinked
     * meanwhile, this close frees its blocks */
    close_fds(j);
    return j->err;
}

int64_t st_log_sync_target(const st_log_sync_t *j) { return j->target; }

int st_log_sync_end(st_log_t *log, st_log_sync_t *j, bool ran) {
    assert(j->origin == log);
    assert(log->sync_inflight);
    log->sync_inflight = false;
    int rc = KP_OK;
    if (!ran) {
        /* never ran: nothing became durable; the flush is due again */
        log->unflushed_msgs += j->msgs;
        log->last_flush_ms = j->prev_flush_ms;
        for (size_t i = 0; i < j->n; i++) {
            size_t k = log_seg_for(log, j->seg[i].base);
            st_segment_t *s = &log->segs[k];
            if (s->base_offset == j->seg[i].base && !s->active)
                s->oidx.trim_unsynced = s->tidx.trim_unsynced = true;
        }
    } else if (j->err != KP_OK) {
        /* after a failed fsync the kernel may have dropped the dirty pages:
         * nothing the log holds past the recovery point can be trusted */
        log->offline = true;
        if (j->err_base >= 0)
            st_logf(ST_LOG_ERROR, "partition %s: fsync of segment %020" PRId64 " failed (%s); the log is now "
                    "offline until restart", log->name, j->err_base, strerror(j->err_errno));
        else
            st_logf(ST_LOG_ERROR, "partition %s: fsync of directory %s failed (%s); the log is now offline "
                    "until restart", log->name, log->dir, strerror(j->err_errno));
        rc = ST_ERR_IO;
    } else {
        int64_t leo = st_log_end_offset(log);
        int64_t target = j->target < leo ? j->target : leo;
        if (j->trunc_gen == log->trunc_gen && target > log->recovery_point) log->recovery_point = target;
        if (j->sync_dir && j->dir_gen == log->dir_gen) log->dir_dirty = false;
    }
    st_log_sync_free(j);
    return rc;
}

void st_log_sync_free(st_log_sync_t *j) {
    if (!j) return;
    close_fds(j);
    free(j);
}
