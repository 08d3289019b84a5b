/* log.c — partition log: open with recovery, close, state, flush, roll. */
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

void st_log_config_default(st_log_config_t *cfg) {
    cfg->segment_bytes = 1u << 30;
    cfg->segment_ms = 7LL * 24 * 3600 * 1000;
    cfg->index_interval_bytes = 4096;
    cfg->index_max_bytes = 10u << 20;
    cfg->retention_ms = 7LL * 24 * 3600 * 1000;
    cfg->retention_bytes = -1;
    cfg->cleanup_policy = ST_CLEANUP_DELETE;
    cfg->flush_messages = INT64_MAX;
    cfg->flush_ms = INT64_MAX;
    cfg->log_append_time = false;
    cfg->delete_retention_ms = 24LL * 3600 * 1000;
    cfg->min_compaction_lag_ms = 0;
    cfg->min_cleanable_dirty_ratio = 0.5;
    cfg->producer_id_expiration_ms = 24LL * 3600 * 1000;
    cfg->records_max_bytes = ST_RECORDS_MAX_BYTES_DEFAULT;
}

static void clamp_config(st_log_config_t *c) {
    if (c->segment_bytes > ST_SEGMENT_BYTES_MAX) c->segment_bytes = ST_SEGMENT_BYTES_MAX;
    if (c->segment_bytes < 64) c->segment_bytes = 64;
    if (c->index_max_bytes < 4 * ST_TIDX_ENTRY_BYTES) c->index_max_bytes = 4 * ST_TIDX_ENTRY_BYTES;
    if (c->index_interval_bytes == 0) c->index_interval_bytes = 1;
    if (c->records_max_bytes == 0) c->records_max_bytes = ST_RECORDS_MAX_BYTES_DEFAULT;
    if (c->records_max_bytes > ST_RECORDS_MAX_BYTES_MAX) c->records_max_bytes = ST_RECORDS_MAX_BYTES_MAX;
}

size_t log_seg_for(const st_log_t *log, int64_t offset) {
    size_t lo = 0, hi = log->nsegs;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (log->segs[mid].base_offset <= offset) lo = mid;
        else hi = mid;
    }
    return lo;
}

int log_push_segment(st_log_t *log, const st_segment_t *seg) {
    if (log->nsegs == log->segs_cap) {
        size_t nc = log->segs_cap ? log->segs_cap * 2 : 4;
        if (nc > ST_SEGMENTS_MAX) return KP_ERR_TOO_LARGE;
        st_segment_t *ns = realloc(log->segs, nc * sizeof *ns);
        if (!ns) return KP_ERR_NOMEM;
        log->segs = ns;
        log->segs_cap = nc;
    }
    log->segs[log->nsegs++] = *seg;
    return KP_OK;
}

void log_mark_dir_dirty(st_log_t *log) {
    log->dir_dirty = true;
    log->dir_gen++;
}

void log_drop_tail(st_log_t *log, size_t from, bool purge) {
    while (log->nsegs > from) {
        st_segment_t *s = &log->segs[--log->nsegs];
        if (st_seg_close(s) != KP_OK) { /* the files go away anyway */ }
        st_seg_unlink_all(log->dir, s->base_offset, "");
        (void)purge;
    }
}

int log_drop_front(st_log_t *log, size_t k) {
    assert(k < log->nsegs);
    int rc = KP_OK;
    for (size_t i = 0; i < k; i++) {
        st_segment_t *s = &log->segs[i];
        if (st_seg_close(s) != KP_OK) { /* read-only files: nothing lost */ }
        int r = st_seg_rename_all(log->dir, s->base_offset, ".deleted");
        if (r != KP_OK && rc == KP_OK) rc = r;
        st_logf(ST_LOG_INFO, "partition %s: segment %020" PRId64 " scheduled for deletion", log->name,
                s->base_offset);
    }
    memmove(log->segs, log->segs + k, (log->nsegs - k) * sizeof *log->segs);
    log->nsegs -= k;
    return rc;
}

int log_activate_last(st_log_t *log) {
    st_segment_t *s = log_active(log);
    if (s->active) return KP_OK;
    int64_t base = s->base_offset;
    int rc = st_seg_close(s);
    if (rc == KP_OK) rc = st_seg_open(s, log->dir, base, true, log->cfg.index_max_bytes);
    if (rc != KP_OK) return rc;
    st_scan_result_t res;
    rc = st_seg_load_tail(s, false, log->cfg.index_interval_bytes, &res);
    if (rc == KP_OK && res.status != KP_OK) rc = KP_ERR_CORRUPT;
    return rc;
}

int log_roll_at(st_log_t *log, int64_t base, int64_t now_ms) {
    st_segment_t *old = log_active(log);
    assert(base >= old->next_offset);
    st_segment_t seg;
    int rc = st_seg_create(&seg, log->dir, base, log->cfg.index_max_bytes, now_ms);
    if (rc != KP_OK) return rc;
    rc = log_push_segment(log, &seg);
    if (rc != KP_OK) {
        if (st_seg_close(&seg) != KP_OK) { /* fresh and empty */ }
        st_seg_unlink_all(log->dir, base, "");
        return rc;
    }
    old = &log->segs[log->nsegs - 2];
    rc = st_seg_seal(old);
    log_mark_dir_dirty(log);
    /* a snapshot per segment lets open and truncation replay from here */
    int rc2 = st_ps_snapshot_write(&log->ps, log->dir, base);
    if (rc2 != KP_OK)
        st_logf(ST_LOG_WARN, "partition %s: producer snapshot at %" PRId64 " not written (%s)", log->name, base,
                st_status_str(rc2));
    return rc;
}

int st_log_roll(st_log_t *log, int64_t now_ms) {
    if (log->offline) return ST_ERR_OFFLINE;
    if (log_active(log)->size_bytes == 0) return KP_OK;
    return log_roll_at(log, log_active(log)->next_offset, now_ms);
}

/* ---- open ---- */

static bool parse_base(const char *name, const char *suffix, int64_t *base) {
    size_t n = strlen(name), sl = strlen(suffix);
    if (n != 20 + sl || strcmp(name + 20, suffix) != 0) return false;
    int64_t v = 0;
    for (int i = 0; i < 20; i++) {
        if (name[i] < '0' || name[i] > '9') return false;
        if (v > (INT64_MAX - 9) / 10) return false;
        v = v * 10 + (name[i] - '0');
    }
    *base = v;
    return true;
}

static bool has_suffix(const char *name, const char *suffix) {
    size_t n = strlen(name), sl = strlen(suffix);
    return n > sl && strcmp(name + n - sl, suffix) == 0;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Finishes a compaction swap "X.log.swap": the cleaned segment is complete
 * (it was fsynced before being renamed to .swap), so it replaces X.log. */
static int complete_swap(st_log_t *log, int64_t base) {
    char swap[ST_PATH_MAX], live[ST_PATH_MAX];
    st_seg_path(live, sizeof live, log->dir, base, ".log");
    int n = snprintf(swap, sizeof swap, "%s.swap", live);
    assert(n > 0 && (size_t)n < sizeof swap);
    /* the old .log (if the crash came before its rename) and its indexes,
     * which describe the old layout; the .txnindex stays: offsets do not move */
    const char *derived[] = { ".log", ".index", ".timeindex" };
    for (size_t i = 0; i < 3; i++) {
        char p[ST_PATH_MAX];
        st_seg_path(p, sizeof p, log->dir, base, derived[i]);
        unlink(p);
    }
    if (st_io_rename(swap, live) != KP_OK) return ST_ERR_IO;
    st_logf(ST_LOG_INFO, "partition %s: completed interrupted compaction swap of %s", log->name, live);
    return KP_OK;
}

/* Lists the directory: removes leftovers of interrupted operations and
 * collects segment bases (sorted). */
static int scan_dir(st_log_t *log, int64_t **bases, size_t *nb) {
    DIR *d = opendir(log->dir);
    if (!d) return ST_ERR_IO;
    size_t cap = 16, n = 0;
    int64_t *arr = malloc(cap * sizeof *arr);
    int64_t *swaps = malloc(cap * sizeof *swaps);
    size_t nswaps = 0, cap_swaps = cap;
    int rc = arr && swaps ? KP_OK : KP_ERR_NOMEM;
    struct dirent *e;
    while (rc == KP_OK && (e = readdir(d)) != NULL) {
        char p[ST_PATH_MAX];
        int64_t base;
        int w = snprintf(p, sizeof p, "%s/%s", log->dir, e->d_name);
        if (w < 0 || (size_t)w >= sizeof p) continue;
        if (has_suffix(e->d_name, ".deleted") || has_suffix(e->d_name, ".cleaned") ||
            has_suffix(e->d_name, ".tmp")) {
            unlink(p);
        } else if (parse_base(e->d_name, ".log.swap", &base)) {
            if (nswaps == cap_swaps) {
                int64_t *ns = realloc(swaps, 2 * cap_swaps * sizeof *ns);
                if (!ns) { rc = KP_ERR_NOMEM; break; }
                swaps = ns;
                cap_swaps *= 2;
            }
            swaps[nswaps++] = base;
        } else if (parse_base(e->d_name, ".log", &base)) {
            if (n == cap) {
                if (cap * 2 > ST_SEGMENTS_MAX) { rc = KP_ERR_TOO_LARGE; break; }
                int64_t *na = realloc(arr, 2 * cap * sizeof *na);
                if (!na) { rc = KP_ERR_NOMEM; break; }
                arr = na;
                cap *= 2;
            }
            arr[n++] = base;
        }
    }
    closedir(d);
    for (size_t i = 0; rc == KP_OK && i < nswaps; i++) {
        bool present = false;
        for (size_t j = 0; j < n; j++) present |= arr[j] == swaps[i];
        rc = complete_swap(log, swaps[i]);
        if (rc == KP_OK && !present) {
            if (n == cap) {
                int64_t *na = realloc(arr, 2 * cap * sizeof *na);
                if (!na) { rc = KP_ERR_NOMEM; break; }
                arr = na;
                cap *= 2;
            }
            arr[n++] = swaps[i];
        }
    }
    free(swaps);
    if (rc != KP_OK) {
        free(arr);
        return rc;
    }
    qsort(arr, n, sizeof *arr, cmp_i64);
    *bases = arr;
    *nb = n;
    return KP_OK;
}

static uint64_t rel_limit_of(const st_log_t *log, size_t i) {
    if (i + 1 < log->nsegs) return (uint64_t)(log->segs[i + 1].base_offset - log->segs[i].base_offset);
    return (uint64_t)ST_REL_OFFSET_MAX + 1;
}

/* Clean-shutdown path for segment i: trust the log, check the indexes
 * cheaply, walk only the tail after the last index entry. Returns
 * KP_ERR_CORRUPT when the tail does not parse (caller falls back to
 * recovery). */
static int open_trusted(st_log_t *log, size_t i, bool verify_crc) {
    st_segment_t *s = &log->segs[i];
    st_scan_result_t res;
    int rc;
    if (!st_seg_indexes_ok(s, rel_limit_of(log, i), log->cfg.index_interval_bytes)) {
        st_logf(ST_LOG_WARN, "partition %s: index of segment %s/%020" PRId64 ".log inconsistent; rebuilding",
                log->name, log->dir, s->base_offset);
        rc = st_seg_reindex(s, log->cfg.index_max_bytes, verify_crc, log->cfg.index_interval_bytes, &res);
    } else {
        rc = st_seg_load_tail(s, verify_crc, log->cfg.index_interval_bytes, &res);
    }
    if (rc != KP_OK) return rc;
    return res.status == KP_OK ? KP_OK : KP_ERR_CORRUPT;
}

/* Unclean path: revalidate every batch from the segment holding the
 * recovery point; cut a torn/corrupt tail unless it lies below the
 * recovery point (then the partition goes offline). *rebuilt_from = first
 * offset whose derived state (indexes, txn index) was rebuilt. */
static int recover(st_log_t *log, int64_t recovery_point, int64_t *rebuilt_from) {
    size_t i0 = log_seg_for(log, recovery_point);
    for (size_t i = 0; i < i0; i++) {
        int rc = open_trusted(log, i, false);
        if (rc != KP_OK) {
            st_logf(ST_LOG_ERROR,
                    "partition %s: segment %s/%020" PRId64 ".log below the recovery point %" PRId64
                    " is unreadable (%s); marking the partition offline",
                    log->name, log->dir, log->segs[i].base_offset, recovery_point, st_status_str(rc));
            return ST_ERR_OFFLINE;
        }
    }
    *rebuilt_from = log->segs[i0].base_offset;
    for (size_t i = i0; i < log->nsegs; i++) {
        st_segment_t *s = &log->segs[i];
        st_scan_result_t res;
        int rc = st_seg_reindex(s, log->cfg.index_max_bytes, true, log->cfg.index_interval_bytes, &res);
        if (rc != KP_OK) return rc;
        if (res.status == KP_OK) continue;
        int64_t bad_offset = s->next_offset;
        if (bad_offset < recovery_point) {
            st_logf(ST_LOG_ERROR,
                    "partition %s: corrupt batch (%s) in %s/%020" PRId64 ".log at byte %" PRIu64
                    " (offset %" PRId64 ") below the recovery point %" PRId64
                    "; acknowledged data is damaged, marking the partition offline",
                    log->name, st_status_str(res.status), log->dir, s->base_offset, res.valid_bytes, bad_offset,
                    recovery_point);
            return ST_ERR_OFFLINE;
        }
        st_logf(ST_LOG_WARN,
                "partition %s: truncating %s/%020" PRId64 ".log at byte %" PRIu64 " (offset %" PRId64
                "): %s tail of %" PRIu64 " bytes after an unclean shutdown; %zu later segment(s) removed",
                log->name, log->dir, s->base_offset, res.valid_bytes, bad_offset, st_status_str(res.status),
                s->size_bytes - res.valid_bytes, log->nsegs - i - 1);
        if (st_io_ftruncate(s->log_fd, res.valid_bytes) != KP_OK) return ST_ERR_IO;
        s->size_bytes = res.valid_bytes;
        log_drop_tail(log, i + 1, true);
        break;
    }
    /* an empty non-first tail segment can stay: it is the active one */
    return log_activate_last(log);
}

static int open_segments(st_log_t *log, const int64_t *bases, size_t nb) {
    for (size_t i = 0; i < nb; i++) {
        st_segment_t s;
        int rc = st_seg_open(&s, log->dir, bases[i], i + 1 == nb, log->cfg.index_max_bytes);
        if (rc == KP_OK) rc = log_push_segment(log, &s);
        if (rc != KP_OK) return rc;
    }
    /* the array may have moved: re-point nothing (segments hold no self pointers) */
    return KP_OK;
}

static int init_log(st_log_t *log, const char *parent, const char *topic, int32_t partition,
                    const st_log_config_t *cfg) {
    memset(log, 0, sizeof *log);
    if (strlen(topic) == 0 || strlen(topic) > ST_TOPIC_MAX || strchr(topic, '/')) return KP_ERR_BAD_VALUE;
    int n = snprintf(log->dir, sizeof log->dir, "%s/%s-%" PRId32, parent, topic, partition);
    if (n < 0 || (size_t)n >= sizeof log->dir - 40) return KP_ERR_TOO_LARGE;
    snprintf(log->name, sizeof log->name, "%s-%" PRId32, topic, partition);
    log->cfg = *cfg;
    clamp_config(&log->cfg);
    return KP_OK;
}

static void free_log(st_log_t *log) {
    for (size_t i = 0; i < log->nsegs; i++)
        if (st_seg_close(&log->segs[i]) != KP_OK) { /* closing anyway */ }
    free(log->segs);
    st_epoch_cache_free(&log->epochs);
    st_ps_free(&log->ps);
    free(log->aborted);
    free(log);
}

static int open_dir(st_log_t *log, const st_log_open_opts_t *opts) {
    struct stat st;
    if (stat(log->dir, &st) != 0) {
        if (!opts->create) return ST_ERR_NOT_FOUND;
        if (mkdir(log->dir, 0755) != 0 && errno != EEXIST) return ST_ERR_IO;
        char parent[ST_PATH_MAX];
        memcpy(parent, log->dir, sizeof parent);
        char *slash = strrchr(parent, '/');
        if (slash) *slash = '\0';
        if (slash && st_io_fsync_dir(parent) != KP_OK) return ST_ERR_IO;
    }
    return KP_OK;
}

static int load_segments(st_log_t *log, const st_log_open_opts_t *opts, int64_t *rebuilt_from) {
    int64_t *bases = NULL;
    size_t nb = 0;
    int rc = scan_dir(log, &bases, &nb);
    if (rc != KP_OK) return rc;
    if (nb == 0) {
        free(bases);
        st_segment_t s;
        int64_t base = opts->log_start_offset > 0 ? opts->log_start_offset : 0;
        rc = st_seg_create(&s, log->dir, base, log->cfg.index_max_bytes, opts->now_ms);
        if (rc == KP_OK) rc = log_push_segment(log, &s);
        log_mark_dir_dirty(log);
        *rebuilt_from = base;
        return rc;
    }
    rc = open_segments(log, bases, nb);
    free(bases);
    if (rc != KP_OK) return rc;
    bool clean = opts->clean_shutdown;
    for (size_t i = 0; clean && i < log->nsegs; i++) {
        rc = open_trusted(log, i, i + 1 == log->nsegs);
        if (rc == KP_ERR_CORRUPT) {
            st_logf(ST_LOG_WARN, "partition %s: segment %020" PRId64 " does not end cleanly despite the clean "
                    "shutdown marker; running recovery", log->name, log->segs[i].base_offset);
            clean = false;
        } else if (rc != KP_OK) {
            return rc;
        }
    }
    *rebuilt_from = log_active(log)->next_offset;
    if (clean) return KP_OK;
    return recover(log, opts->recovery_point, rebuilt_from);
}

int st_log_open(const char *parent_dir, const char *topic, int32_t partition, const st_log_config_t *cfg,
                const st_log_open_opts_t *opts, st_log_t **out) {
    st_guard_blocking("log open", topic);
    *out = NULL;
    st_log_t *log = malloc(sizeof *log);
    if (!log) return KP_ERR_NOMEM;
    int rc = init_log(log, parent_dir, topic, partition, cfg);
    if (rc != KP_OK) {
        free(log);
        return rc;
    }
    if ((rc = st_ps_init(&log->ps)) != KP_OK) goto fail;
    if ((rc = open_dir(log, opts)) != KP_OK) goto fail;
    if ((rc = st_epoch_cache_open(&log->epochs, log->dir)) != KP_OK) goto fail;
    int64_t rebuilt_from;
    if ((rc = load_segments(log, opts, &rebuilt_from)) != KP_OK) goto fail;
    int64_t leo = log_active(log)->next_offset;
    log->log_start = opts->log_start_offset > log->segs[0].base_offset ? opts->log_start_offset
                                                                        : log->segs[0].base_offset;
    if (log->log_start > leo) {
        st_logf(ST_LOG_WARN, "partition %s: log start offset %" PRId64 " beyond log end %" PRId64 "; clamped",
                log->name, log->log_start, leo);
        log->log_start = leo;
    }
    log->hw = opts->high_watermark < log->log_start ? log->log_start
              : opts->high_watermark > leo          ? leo
                                                    : opts->high_watermark;
    log->last_flush_ms = opts->now_ms;
    /* offsets below it were compacted; a value beyond this log is stale */
    log->cleaned_upto = opts->cleaner_offset > log->log_start && opts->cleaner_offset <= leo ? opts->cleaner_offset : 0;
    if ((rc = st_epoch_cache_truncate_end(&log->epochs, leo)) != KP_OK) goto fail;
    if ((rc = st_epoch_cache_truncate_start(&log->epochs, log->log_start)) != KP_OK) goto fail;
    if ((rc = log_load_aborted(log, rebuilt_from)) != KP_OK) goto fail;
    if ((rc = log_rebuild_producers(log, rebuilt_from)) != KP_OK) goto fail;
    log->recovery_point = opts->recovery_point < leo ? opts->recovery_point : leo;
    if (opts->clean_shutdown && rebuilt_from >= leo) log->recovery_point = leo;
    if (rebuilt_from < leo || log->dir_dirty) {
        /* make the recovered state durable so a second crash does not redo it */
        if ((rc = st_log_flush(log)) != KP_OK) goto fail;
    }
    *out = log;
    return KP_OK;
fail:
    free_log(log);
    return rc;
}

/* ---- close / delete ---- */

int st_log_close(st_log_t *log, st_log_offsets_t *final) {
    st_guard_blocking("log close (fsync, producer snapshot)", log->name);
    int rc = KP_OK;
    if (!log->offline) {
        /* trim the active segment's indexes now, so that the flush below
         * makes their final size durable before the caller writes the
         * clean-shutdown marker that tells the next open to trust them */
        st_segment_t *act = log_active(log);
        if (act->active) rc = st_seg_seal(act);
        int rc1 = st_log_flush(log);
        if (rc == KP_OK) rc = rc1;
        int rc2 = st_ps_snapshot_write(&log->ps, log->dir, log_active(log)->next_offset);
        if (rc == KP_OK) rc = rc2;
    }
    if (final) {
        final->log_start_offset = log->log_start;
        final->recovery_point = log->recovery_point;
        final->high_watermark = log->hw;
        final->log_end_offset = log_active(log)->next_offset;
        final->cleaner_offset = log->cleaned_upto;
    }
    for (size_t i = 0; i < log->nsegs; i++) {
        int r = st_seg_close(&log->segs[i]);
        if (rc == KP_OK) rc = r;
    }
    log->nsegs = 0;
    free_log(log);
    return rc;
}

int st_log_delete(st_log_t *log) {
    st_guard_blocking("log directory removal", log->name);
    char dir[ST_PATH_MAX];
    memcpy(dir, log->dir, sizeof dir);
    for (size_t i = 0; i < log->nsegs; i++)
        if (st_seg_close(&log->segs[i]) != KP_OK) { /* deleting */ }
    log->nsegs = 0;
    free_log(log);
    DIR *d = opendir(dir);
    if (!d) return ST_ERR_IO;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char p[ST_PATH_MAX + 260];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    if (rmdir(dir) != 0) return ST_ERR_IO;
    return KP_OK;
}

void st_log_discard(st_log_t *log) {
    for (size_t i = 0; i < log->nsegs; i++) {
        st_segment_t *s = &log->segs[i];
        /* no trimming of the preallocated indexes: the files are going away */
        st_index_release(&s->oidx);
        st_index_release(&s->tidx);
        st_seg_release_fd(s);
    }
    log->nsegs = 0;
    free_log(log);
}

void st_log_purge_deleted(const char *dir) {
    st_guard_blocking("unlink of deleted segments", dir);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!has_suffix(e->d_name, ".deleted")) continue;
        char p[ST_PATH_MAX + 260];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
}

/* ---- state ---- */

int64_t st_log_start_offset(const st_log_t *log) { return log->log_start; }
int64_t st_log_end_offset(const st_log_t *log) { return log_active(log)->next_offset; }
int64_t st_log_recovery_point(const st_log_t *log) { return log->recovery_point; }
int64_t st_log_high_watermark(const st_log_t *log) { return log->hw; }
int64_t st_log_cleaner_offset(const st_log_t *log) { return log->cleaned_upto; }
int64_t st_log_active_base_offset(const st_log_t *log) { return log_active(log)->base_offset; }
size_t st_log_segment_count(const st_log_t *log) { return log->nsegs; }
const char *st_log_dir(const st_log_t *log) { return log->dir; }
const st_log_config_t *st_log_config(const st_log_t *log) { return &log->cfg; }

void st_log_set_config(st_log_t *log, const st_log_config_t *cfg) {
    uint32_t max = log->cfg.index_max_bytes;
    log->cfg = *cfg;
    clamp_config(&log->cfg);
    log->cfg.index_max_bytes = max; /* takes effect at the next roll would need a remap; keep */
}

void st_log_set_high_watermark(st_log_t *log, int64_t hw) {
    int64_t leo = st_log_end_offset(log);
    log->hw = hw < log->log_start ? log->log_start : hw > leo ? leo : hw;
}

uint64_t st_log_size_bytes(const st_log_t *log) {
    uint64_t t = 0;
    for (size_t i = 0; i < log->nsegs; i++) t += log->segs[i].size_bytes;
    return t;
}

st_epoch_cache_t *st_log_epochs(st_log_t *log) { return &log->epochs; }
const st_producer_state_t *st_log_producers(const st_log_t *log) { return &log->ps; }

void st_log_end_offset_for_epoch(const st_log_t *log, int32_t epoch, int32_t *found_epoch, int64_t *end_offset) {
    st_epoch_cache_end_offset(&log->epochs, epoch, st_log_end_offset(log), found_epoch, end_offset);
}

/* ---- flush ---- */

int st_log_flush(st_log_t *log) {
    st_guard_blocking("fsync", log->name);
    if (log->offline) return ST_ERR_OFFLINE;
    int64_t leo = st_log_end_offset(log);
    size_t i0 = log_seg_for(log, log->recovery_point);
    int idx_rc = KP_OK;
    for (size_t i = 0; i < i0; i++) {
        /* segments rolled at the recovery point: their data is durable but
         * their trimmed indexes may not be (the trim follows the data's
         * last fsync). Indexes are derived: a failure here keeps the log
         * online but fails the flush, so a clean close is not claimed. */
        st_segment_t *s = &log->segs[i];
        int rc = st_index_flush(&s->oidx);
        if (rc == KP_OK) rc = st_index_flush(&s->tidx);
        if (rc != KP_OK) {
            st_logf(ST_LOG_WARN, "partition %s: fsync of the indexes of segment %020" PRId64 " failed (%s)",
                    log->name, s->base_offset, strerror(errno));
            idx_rc = ST_ERR_IO;
        }
    }
    for (size_t i = i0; i < log->nsegs; i++) {
        st_segment_t *s = &log->segs[i];
        int rc = st_io_fsync(s->log_fd);
        if (rc == KP_OK) rc = st_index_flush(&s->oidx);
        if (rc == KP_OK) rc = st_index_flush(&s->tidx);
        if (rc != KP_OK) {
            /* the kernel may have dropped the dirty pages: nothing past the
             * recovery point can be trusted any more */
            log->offline = true;
            st_logf(ST_LOG_ERROR, "partition %s: fsync of segment %020" PRId64 " failed (%s); the log is now "
                    "offline until restart", log->name, s->base_offset, strerror(errno));
            return ST_ERR_IO;
        }
    }
    if (log->dir_dirty) {
        if (st_io_fsync_dir(log->dir) != KP_OK) {
            log->offline = true;
            st_logf(ST_LOG_ERROR, "partition %s: fsync of directory %s failed (%s); the log is now offline "
                    "until restart", log->name, log->dir, strerror(errno));
            return ST_ERR_IO;
        }
        log->dir_dirty = false;
    }
    log->recovery_point = leo;
    log->unflushed_msgs = 0;
    return idx_rc;
}

int st_log_dup_sync_fd(const st_log_t *log) {
    if (log->offline || log->dir_dirty) return -1;
    if (log_seg_for(log, log->recovery_point) != log->nsegs - 1) return -1;
    return fcntl(log_active(log)->log_fd, F_DUPFD_CLOEXEC, 0);
}

bool st_log_flush_due(const st_log_t *log, int64_t now_ms) {
    if (log->offline || log->sync_inflight || log->unflushed_msgs == 0) return false;
    return log->unflushed_msgs >= log->cfg.flush_messages ||
           (log->cfg.flush_ms != INT64_MAX && now_ms - log->last_flush_ms >= log->cfg.flush_ms);
}

int st_log_maybe_flush(st_log_t *log, int64_t now_ms) {
    if (!st_log_flush_due(log, now_ms)) return KP_OK;
    log->last_flush_ms = now_ms;
    int rc = st_log_flush(log);
    if (rc != KP_OK && !log->offline) {
        /* A failed fsync may have dropped the pages it could not write; a
         * later fsync that succeeds would prove nothing. The log refuses
         * further work until a restart re-validates its tail (recovery). */
        log->offline = true;
        st_logf(ST_LOG_ERROR, "partition %s: flush failed; the log is now offline until restart", log->name);
    }
    return rc;
}
