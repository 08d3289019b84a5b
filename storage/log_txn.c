/* log_txn.c — producer state and aborted-transaction upkeep of a log. */
#include <assert.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/log_internal.h"

/* Reads the control record of a control batch: its type and, for
 * ABORT/COMMIT, the coordinator epoch (else -1). KP_ERR_CORRUPT when
 * malformed. Control batches are never compressed (Kafka writes them so). */
static int control_record(const kp_batch_t *full, int16_t *type, int32_t *coord_epoch) {
    if (kp_batch_codec(full) != KP_CODEC_NONE || full->records_count < 1) return KP_ERR_CORRUPT;
    kp_record_iter_t it;
    kp_record_t rec;
    kp_record_iter_init(&it, full, full->data + KP_BATCH_HEADER_BYTES, full->size - KP_BATCH_HEADER_BYTES);
    if (kp_record_iter_next(&it, &rec) != 1 || kp_control_key_read(rec.key, type) != KP_OK) return KP_ERR_CORRUPT;
    *coord_epoch = -1;
    if (*type != KP_CONTROL_ABORT && *type != KP_CONTROL_COMMIT) return KP_OK;
    return kp_txn_marker_value_read(rec.value, coord_epoch) == KP_OK ? KP_OK : KP_ERR_CORRUPT;
}

static int add_aborted(st_log_t *log, const st_aborted_txn_t *t) {
    if (log->n_aborted == log->cap_aborted) {
        size_t nc = log->cap_aborted ? log->cap_aborted * 2 : 8;
        if (nc > ST_TXN_ENTRIES_MAX) return KP_ERR_TOO_LARGE;
        st_aborted_txn_t *na = realloc(log->aborted, nc * sizeof *na);
        if (!na) return KP_ERR_NOMEM;
        log->aborted = na;
        log->cap_aborted = nc;
    }
    log->aborted[log->n_aborted++] = *t;
    return KP_OK;
}

int log_track_batch(st_log_t *log, const kp_batch_t *b, int64_t now_ms, bool index_aborts) {
    if (b->producer_id < 0) return KP_OK;
    if (!kp_batch_is_control(b)) {
        if (b->base_sequence < 0 && !kp_batch_is_transactional(b)) return KP_OK;
        int32_t first = b->base_sequence < 0 ? 0 : b->base_sequence;
        int32_t last = (int32_t)(((int64_t)first + b->last_offset_delta) % ((int64_t)INT32_MAX + 1));
        return st_ps_update(&log->ps, b->producer_id, b->producer_epoch, first, last, b->base_offset,
                            kp_batch_last_offset(b), b->max_timestamp, kp_batch_is_transactional(b));
    }
    assert(b->data);
    int16_t type;
    int32_t coord_epoch;
    int rc = control_record(b, &type, &coord_epoch);
    if (rc != KP_OK) return rc;
    if (type != KP_CONTROL_ABORT && type != KP_CONTROL_COMMIT) return KP_OK;
    int64_t first = -1;
    rc = st_ps_end_txn(&log->ps, b->producer_id, b->producer_epoch, coord_epoch, b->base_offset, b->max_timestamp,
                       &first);
    if (rc != KP_OK || type != KP_CONTROL_ABORT || !index_aborts) return rc;
    int64_t fu = st_ps_first_unstable_offset(&log->ps);
    st_aborted_txn_t t = {
        .producer_id = b->producer_id,
        .first_offset = first >= 0 ? first : b->base_offset,
        .last_offset = b->base_offset,
        .last_stable_offset = fu >= 0 ? fu : b->base_offset + 1,
    };
    char path[ST_PATH_MAX];
    const st_segment_t *seg = &log->segs[log_seg_for(log, b->base_offset)];
    st_seg_path(path, sizeof path, log->dir, seg->base_offset, ".txnindex");
    rc = st_txn_index_append(path, &t);
    if (rc != KP_OK) return rc;
    return add_aborted(log, &t);
}

int log_load_aborted(st_log_t *log, int64_t drop_from) {
    log->n_aborted = 0;
    for (size_t i = 0; i < log->nsegs; i++) {
        char path[ST_PATH_MAX];
        st_seg_path(path, sizeof path, log->dir, log->segs[i].base_offset, ".txnindex");
        size_t before = log->n_aborted;
        int rc = st_txn_index_load(path, &log->aborted, &log->n_aborted, &log->cap_aborted);
        if (rc == KP_ERR_CORRUPT) {
            st_logf(ST_LOG_WARN, "partition %s: %s is corrupt; dropping its entries", log->name, path);
            log->n_aborted = before;
            if (st_txn_index_truncate(path, 0) != KP_OK) return ST_ERR_IO;
            continue;
        }
        if (rc != KP_OK) return rc;
        size_t keep = before;
        while (keep < log->n_aborted && log->aborted[keep].last_offset < drop_from) keep++;
        if (keep < log->n_aborted) {
            log->n_aborted = keep;
            if (st_txn_index_truncate(path, keep - before) != KP_OK) return ST_ERR_IO;
        }
    }
    return KP_OK;
}

void log_forget_aborted_below(st_log_t *log, int64_t start) {
    size_t k = 0;
    while (k < log->n_aborted && log->aborted[k].last_offset < start) k++;
    if (k == 0) return;
    memmove(log->aborted, log->aborted + k, (log->n_aborted - k) * sizeof *log->aborted);
    log->n_aborted -= k;
}

/* Newest readable snapshot <= limit loaded into ps; snapshots beyond
 * leo are stale and removed. Returns the offset replay must start at. */
static int64_t load_snapshot(st_log_t *log, int64_t limit, int64_t leo) {
    DIR *d = opendir(log->dir);
    int64_t offs[64];
    size_t n = 0;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            size_t l = strlen(e->d_name);
            if (l != 29 || strcmp(e->d_name + 20, ".snapshot") != 0) continue;
            char *end;
            long long v = strtoll(e->d_name, &end, 10);
            if (end != e->d_name + 20 || v < 0) continue;
            if (v > leo) {
                char p[ST_PATH_MAX];
                st_seg_path(p, sizeof p, log->dir, v, ".snapshot");
                unlink(p);
                continue;
            }
            if (v > limit) continue;
            if (n < sizeof offs / sizeof offs[0]) {
                offs[n++] = v;
            } else {
                size_t min = 0; /* keep the 64 newest: replace the oldest */
                for (size_t i = 1; i < n; i++) if (offs[i] < offs[min]) min = i;
                if (v > offs[min]) offs[min] = v;
            }
        }
        closedir(d);
    }
    while (n > 0) {
        size_t best = 0;
        for (size_t i = 1; i < n; i++) if (offs[i] > offs[best]) best = i;
        char p[ST_PATH_MAX];
        st_seg_path(p, sizeof p, log->dir, offs[best], ".snapshot");
        if (st_ps_snapshot_read(&log->ps, p) == KP_OK) return offs[best];
        st_logf(ST_LOG_WARN, "partition %s: producer snapshot %s unreadable; trying an older one", log->name, p);
        offs[best] = offs[--n];
    }
    st_ps_clear(&log->ps);
    return log->segs[0].base_offset;
}

int log_rebuild_producers(st_log_t *log, int64_t index_from) {
    int64_t leo = st_log_end_offset(log);
    int64_t from = load_snapshot(log, index_from < leo ? index_from : leo, leo);
    if (from >= leo) return KP_OK;
    log_iter_t it;
    int rc = log_iter_seek(log, from, &it);
    if (rc != KP_OK) return rc;
    uint8_t *buf = NULL;
    size_t cap = 0;
    for (;;) {
        kp_batch_t h, full;
        const st_segment_t *seg;
        uint64_t pos;
        rc = log_iter_next(log, &it, &h, &seg, &pos);
        if (rc <= 0) break;
        if (h.base_offset < from || h.producer_id < 0) continue;
        const kp_batch_t *use = &h;
        if (kp_batch_is_control(&h)) {
            if ((rc = log_load_batch(seg, pos, h.size, &buf, &cap, &full)) != KP_OK) break;
            use = &full;
        }
        rc = log_track_batch(log, use, h.max_timestamp, h.base_offset >= index_from);
        if (rc != KP_OK) break;
    }
    free(buf);
    if (rc < 0)
        st_logf(ST_LOG_ERROR, "partition %s: rebuilding producer state failed: %s", log->name, st_status_str(rc));
    return rc < 0 ? rc : KP_OK;
}

void st_log_expire_producers(st_log_t *log, int64_t now_ms) {
    st_ps_expire(&log->ps, now_ms, log->cfg.producer_id_expiration_ms);
}

int64_t st_log_first_unstable_offset(const st_log_t *log) { return st_ps_first_unstable_offset(&log->ps); }

int64_t st_log_last_stable_offset(const st_log_t *log) {
    int64_t fu = st_log_first_unstable_offset(log);
    return fu >= 0 && fu < log->hw ? fu : log->hw;
}

size_t st_log_aborted_txns(const st_log_t *log, int64_t from, int64_t upper, st_aborted_txn_t *out, size_t max) {
    size_t n = 0;
    for (size_t i = 0; i < log->n_aborted && n < max; i++) {
        const st_aborted_txn_t *t = &log->aborted[i];
        if (t->last_offset >= from && t->first_offset < upper) out[n++] = *t;
    }
    return n;
}
