/* log_read.c — locating and reading batches: fetch ranges, copies,
 * timestamp lookups, and the batch iterator the other log files use. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/kp_compress.h"
#include "storage/log_internal.h"

int log_iter_seek(const st_log_t *log, int64_t offset, log_iter_t *it) {
    it->si = log_seg_for(log, offset);
    st_hdr_win_reset(&it->win);
    kp_batch_t h;
    return st_seg_find_win(&log->segs[it->si], offset, &it->pos, &h, &it->win);
}

int log_iter_next(const st_log_t *log, log_iter_t *it, kp_batch_t *h, const st_segment_t **seg, uint64_t *pos) {
    while (it->si < log->nsegs) {
        const st_segment_t *s = &log->segs[it->si];
        if (it->pos >= s->size_bytes) {
            it->si++;
            it->pos = 0;
            continue;
        }
        int rc = st_seg_read_header_win(s, it->pos, h, &it->win);
        if (rc != KP_OK) return rc == KP_ERR_TRUNCATED ? KP_ERR_CORRUPT : rc;
        *seg = s;
        *pos = it->pos;
        it->pos += h->size;
        return 1;
    }
    return 0;
}

int log_load_batch(const st_segment_t *seg, uint64_t pos, size_t size, uint8_t **buf, size_t *cap,
                   kp_batch_t *full) {
    if (size > ST_SEGMENT_BYTES_MAX) return KP_ERR_TOO_LARGE;
    if (size > *cap) {
        uint8_t *nb = realloc(*buf, size);
        if (!nb) return KP_ERR_NOMEM;
        *buf = nb;
        *cap = size;
    }
    ssize_t n = pread(seg->log_fd, *buf, size, (off_t)pos);
    if (n < 0) return ST_ERR_IO;
    if ((size_t)n != size) return KP_ERR_CORRUPT;
    kp_rd_t r;
    kp_rd_init(&r, *buf, size);
    return kp_batch_read(&r, full);
}

/* Furthest batch start reachable from pos without passing limit_pos or
 * offsets >= end_offset, found in the offset index (every batch between
 * is whole and below end_offset). Saves walking headers one by one. */
static uint64_t index_jump(const st_segment_t *s, uint64_t pos, uint64_t limit_pos, int64_t end_offset,
                           int64_t *jump_offset) {
    if (s->oidx.count == 0 || end_offset <= s->base_offset) return pos;
    uint64_t lp = limit_pos > UINT32_MAX ? UINT32_MAX : limit_pos;
    int64_t rel_end = end_offset - 1 - s->base_offset;
    int64_t a = st_oidx_lookup_pos(&s->oidx, (uint32_t)lp);
    int64_t b = st_oidx_lookup(&s->oidx, rel_end > UINT32_MAX ? UINT32_MAX : (uint32_t)rel_end);
    int64_t i = a < b ? a : b;
    if (i < 0) return pos;
    uint32_t rel, ip;
    st_oidx_get(&s->oidx, (uint32_t)i, &rel, &ip);
    *jump_offset = s->base_offset + rel;
    return ip > pos ? ip : pos;
}

int st_log_read(const st_log_t *log, int64_t offset, uint64_t max_bytes, int64_t end_offset, unsigned flags,
                st_read_result_t *out) {
    memset(out, 0, sizeof *out);
    if (log->offline) return ST_ERR_OFFLINE;
    int64_t leo = st_log_end_offset(log);
    if (offset < log->log_start || offset > leo) return ST_ERR_OUT_OF_RANGE;
    if (end_offset < 0 || end_offset > leo) end_offset = leo;
    out->first_offset = out->next_offset = offset;
    if (offset >= end_offset) return KP_OK;
    log_iter_t it;
    int rc = log_iter_seek(log, offset, &it);
    if (rc != KP_OK) return rc;
    bool first = true;
    while (it.si < log->nsegs && out->n <= ST_READ_RANGES_MAX) {
        const st_segment_t *s = &log->segs[it.si];
        if (it.pos >= s->size_bytes) {
            it.si++;
            it.pos = 0;
            continue;
        }
        if (out->n == ST_READ_RANGES_MAX) break;
        st_read_range_t *rg = &out->r[out->n];
        rg->fd = s->log_fd;
        rg->ref = s->log_ref;
        rg->pos = it.pos;
        rg->len = 0;
        uint64_t p = it.pos;
        bool stop = false;
        while (p < s->size_bytes) {
            if (out->total_bytes >= max_bytes) { stop = true; break; }
            uint64_t room = max_bytes - out->total_bytes;
            int64_t jump_offset = 0;
            uint64_t j = first ? p : index_jump(s, p, room > s->size_bytes ? s->size_bytes : p + room, end_offset,
                                                &jump_offset);
            if (j > p) {
                out->total_bytes += j - p;
                rg->len += j - p;
                out->next_offset = jump_offset;
                p = j;
                continue;
            }
            kp_batch_t h;
            rc = st_seg_read_header_win(s, p, &h, &it.win);
            if (rc != KP_OK) return rc == KP_ERR_TRUNCATED ? KP_ERR_CORRUPT : rc;
            if (kp_batch_last_offset(&h) >= end_offset) { stop = true; break; }
            if (out->total_bytes + h.size > max_bytes && !(first && (flags & ST_READ_MIN_ONE))) {
                stop = true;
                break;
            }
            if (first) out->first_offset = h.base_offset;
            first = false;
            out->next_offset = kp_batch_last_offset(&h) + 1;
            out->total_bytes += h.size;
            rg->len += h.size;
            p += h.size;
        }
        if (rg->len > 0) out->n++;
        if (stop) break;
        it.si++;
        it.pos = 0;
    }
    return KP_OK;
}

int st_log_read_copy(const st_log_t *log, int64_t offset, uint64_t max_bytes, int64_t end_offset, unsigned flags,
                     uint8_t *buf, size_t cap, size_t *len, int64_t *next_offset) {
    st_read_result_t res;
    *len = 0;
    int rc = st_log_read(log, offset, max_bytes < cap ? max_bytes : cap, end_offset, flags, &res);
    if (rc != KP_OK) return rc;
    if (res.total_bytes > cap) return KP_ERR_OVERFLOW;
    for (int i = 0; i < res.n; i++) {
        ssize_t n = pread(res.r[i].fd, buf + *len, res.r[i].len, (off_t)res.r[i].pos);
        if (n < 0) return ST_ERR_IO;
        if ((uint64_t)n != res.r[i].len) return KP_ERR_CORRUPT;
        *len += (size_t)n;
    }
    *next_offset = res.next_offset;
    return KP_OK;
}

/* Offset of the first record of `full` with timestamp >= ts (and that
 * timestamp in *found_ts). Compressed batches are decompressed (at most
 * records_max_bytes); when that fails the answer is batch-exact: the base
 * offset with the batch's max timestamp. */
static int64_t record_at_time(const st_log_t *log, const kp_batch_t *full, int64_t ts, int64_t *found_ts) {
    *found_ts = full->max_timestamp;
    kp_arena_t a;
    kp_arena_init(&a, (size_t)log->cfg.records_max_bytes + ((size_t)64 << 10));
    const uint8_t *recs;
    size_t len;
    int64_t off = full->base_offset;
    if (kp_batch_records(full, &a, (size_t)log->cfg.records_max_bytes, &recs, &len) == KP_OK) {
        kp_record_iter_t it;
        kp_record_t rec;
        kp_record_iter_init(&it, full, recs, len);
        while (kp_record_iter_next(&it, &rec) == 1) {
            if (rec.timestamp >= ts) {
                *found_ts = rec.timestamp;
                off = rec.offset;
                break;
            }
        }
    }
    kp_arena_free(&a);
    return off;
}

int st_log_offset_for_time(const st_log_t *log, int64_t ts, int64_t *offset, int64_t *found_ts) {
    for (size_t i = 0; i < log->nsegs; i++) {
        const st_segment_t *s = &log->segs[i];
        if (s->max_ts < ts || s->size_bytes == 0) continue;
        int64_t start = s->base_offset;
        int64_t e = st_tidx_lookup_before(&s->tidx, ts);
        if (e >= 0) {
            int64_t t;
            uint32_t rel;
            st_tidx_get(&s->tidx, (uint32_t)e, &t, &rel);
            start = s->base_offset + rel;
        }
        if (start < log->log_start) start = log->log_start;
        log_iter_t it;
        it.si = i;
        it.pos = 0;
        st_hdr_win_reset(&it.win);
        kp_batch_t h;
        int rc = st_seg_find_win(s, start, &it.pos, &h, &it.win);
        if (rc != KP_OK) return rc;
        const st_segment_t *seg;
        uint64_t pos;
        while ((rc = log_iter_next(log, &it, &h, &seg, &pos)) == 1) {
            if (h.max_timestamp < ts) continue;
            uint8_t *buf = NULL;
            size_t cap = 0;
            kp_batch_t full;
            rc = log_load_batch(seg, pos, h.size, &buf, &cap, &full);
            if (rc == KP_OK) {
                int64_t o = record_at_time(log, &full, ts, found_ts);
                *offset = o < log->log_start ? log->log_start : o;
            }
            free(buf);
            return rc;
        }
        return rc < 0 ? rc : ST_ERR_NOT_FOUND;
    }
    return ST_ERR_NOT_FOUND;
}

int st_log_max_timestamp(const st_log_t *log, int64_t *ts, int64_t *offset) {
    int64_t best = -1, off = -1;
    for (size_t i = 0; i < log->nsegs; i++) {
        if (log->segs[i].size_bytes > 0 && log->segs[i].max_ts > best) {
            best = log->segs[i].max_ts;
            off = log->segs[i].max_ts_offset;
        }
    }
    if (off < 0) return ST_ERR_NOT_FOUND;
    /* off is the batch's base offset; find the record itself when readable */
    log_iter_t it;
    int rc = log_iter_seek(log, off, &it);
    kp_batch_t h, full;
    const st_segment_t *seg;
    uint64_t pos;
    if (rc == KP_OK && log_iter_next(log, &it, &h, &seg, &pos) == 1 && h.base_offset == off) {
        uint8_t *buf = NULL;
        size_t cap = 0;
        int64_t found_ts;
        if (log_load_batch(seg, pos, h.size, &buf, &cap, &full) == KP_OK) off = record_at_time(log, &full, best, &found_ts);
        free(buf);
    }
    *ts = best;
    *offset = off < log->log_start ? log->log_start : off;
    return KP_OK;
}

int st_log_scan(const st_log_t *log, size_t start_bytes, size_t max_bytes, st_log_chunk_fn fn, void *ctx) {
    assert(start_bytes > 0 && start_bytes <= max_bytes);
    size_t cap = start_bytes;
    uint8_t *buf = malloc(cap);
    if (!buf) return KP_ERR_NOMEM;
    int64_t off = st_log_start_offset(log), end = st_log_end_offset(log);
    int rc = KP_OK;
    while (rc == KP_OK && off < end) {
        size_t len = 0;
        int64_t next = off;
        rc = st_log_read_copy(log, off, cap, -1, ST_READ_MIN_ONE, buf, cap, &len, &next);
        /* the first batch is larger than the buffer: read_copy says
         * OVERFLOW (MIN_ONE) — grow and read it again */
        if (rc == KP_ERR_OVERFLOW || (rc == KP_OK && (len == 0 || next <= off))) {
            rc = KP_OK;
            if (cap >= max_bytes) { rc = KP_ERR_TOO_LARGE; break; }
            size_t nc = cap > max_bytes / 2 ? max_bytes : cap * 2;
            uint8_t *nb = realloc(buf, nc);
            if (!nb) { rc = KP_ERR_NOMEM; break; }
            buf = nb;
            cap = nc;
            continue;
        }
        if (rc != KP_OK) break;
        rc = fn(ctx, buf, len);
        off = next;
    }
    free(buf);
    return rc;
}

typedef struct {
    st_log_batch_fn fn;
    void *ctx;
} batch_walk_t;

static int walk_chunk(void *ctx, const uint8_t *chunk, size_t len) {
    const batch_walk_t *w = ctx;
    kp_rd_t r;
    kp_rd_init(&r, chunk, len);
    int rc = KP_OK;
    while (rc == KP_OK && kp_rd_remaining(&r) > 0) {
        kp_batch_t b;
        rc = kp_batch_read(&r, &b);
        if (rc == KP_OK) rc = w->fn(w->ctx, &b);
    }
    return rc;
}

int st_log_scan_batches(const st_log_t *log, size_t start_bytes, size_t max_bytes, st_log_batch_fn fn, void *ctx) {
    batch_walk_t w = { fn, ctx };
    return st_log_scan(log, start_bytes, max_bytes, walk_chunk, &w);
}
