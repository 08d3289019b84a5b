/* log_trunc.c — removing data: truncation, log start, retention. */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/log_internal.h"
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
    st_logf(ST_LOG_INFO, "partition %s: emptying the log and restarting at %" PRId64, log->name, new_start);
    log_drop_tail(log, 0, true);
    prune_snapshots(log, INT64_MAX);
    st_segment_t s;
    int rc = st_seg_create(&s, log->dir, new_start, log->cfg.index_max_bytes, now_ms);
    if (rc == KP_OK) rc = log_push_segment(log, &s);
    if (rc != KP_OK) {
        log->offline = true;
        return rc;
    }
    log->dir_dirty = true;
    log->log_start = log->hw = log->recovery_point = new_start;
    log->cleaned_upto = 0;
    st_ps_clear(&log->ps);
    log->n_aborted = 0;
    return st_epoch_cache_truncate_end(&log->epochs, 0);
}

/* Drops the first k segments and moves the log start to at least the new
 * first segment's base. */
static int drop_front(st_log_t *log, size_t k) {
    if (k == 0) return KP_OK;
    int rc = log_drop_front(log, k);
    if (log->log_start < log->segs[0].base_offset) log->log_start = log->segs[0].base_offset;
    if (log->hw < log->log_start) log->hw = log->log_start;
    if (log->recovery_point < log->log_start) log->recovery_point = log->log_start;
    log_forget_aborted_below(log, log->log_start);
    prune_snapshots(log, log->segs[0].base_offset);
    int rc2 = st_epoch_cache_truncate_start(&log->epochs, log->log_start);
    return rc ? rc : rc2;
}

int st_log_advance_start(st_log_t *log, int64_t new_start) {
    if (log->offline) return ST_ERR_OFFLINE;
    if (new_start > st_log_end_offset(log)) return ST_ERR_OUT_OF_RANGE;
    if (new_start <= log->log_start) return KP_OK;
    log->log_start = new_start;
    size_t k = 0;
    while (k + 1 < log->nsegs && log->segs[k + 1].base_offset <= new_start) k++;
    int rc = drop_front(log, k);
    if (rc == KP_OK) rc = st_epoch_cache_truncate_start(&log->epochs, new_start);
    return rc;
}

int st_log_apply_retention(st_log_t *log, int64_t now_ms, int *deleted) {
    *deleted = 0;
    if (log->offline) return ST_ERR_OFFLINE;
    if (!(log->cfg.cleanup_policy & ST_CLEANUP_DELETE)) return KP_OK;
    size_t k = 0;
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
    /* and anything wholly below the log start (DeleteRecords) */
    while (k + 1 < log->nsegs && log->segs[k + 1].base_offset <= log->log_start) k++;
    if (k == 0) return KP_OK;
    st_logf(ST_LOG_INFO, "partition %s: retention removes %zu segment(s) below offset %" PRId64, log->name, k,
            log->segs[k].base_offset);
    *deleted = (int)k;
    return drop_front(log, k);
}
