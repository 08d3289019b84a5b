/* log_scrub.c — background re-read of rolled segments (see st_log.h,
 * "scrub"): split like the flush, so the reading happens on a worker.
 *
 * The job owns a dup() of one rolled segment's .log and walks its batches
 * from a byte position: each header through kp_batch_read_header, the
 * offsets increasing, then the batch's CRC-32C computed over the file in
 * chunks of ST_SCRUB_CHUNK_BYTES, so memory is one chunk whatever size a
 * (possibly damaged) length field claims. A rolled segment is immutable
 * until retention, compaction or truncation replace it; the owner's end
 * step drops a verdict when one of those happened meanwhile. Cost: one
 * pread per header plus size/64 KiB preads per batch, and one CRC pass. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/kp_crc32c.h"
#include "storage/log_internal.h"
#include "storage/st_guard.h"

#define ST_SCRUB_CHUNK_BYTES 65536
_Static_assert(sizeof(((st_scrub_result_t *)0)->path) == ST_PATH_MAX, "scrub path size");

struct st_log_scrub {
    const st_log_t *origin;      /* compared, never dereferenced off the owner */
    uint64_t trunc_gen;
    int fd;                      /* dup of the segment's .log; -1 once closed */
    int64_t base;                /* the segment's base offset */
    int64_t next_offset;         /* the segment's end offset (last + 1) */
    uint64_t size;               /* the segment's size at begin */
    uint64_t pos;                /* where this job starts */
    int64_t pos_offset;          /* the first offset the batch at pos may hold */
    uint64_t max_bytes;
    st_scrub_result_t res;
    char name[ST_TOPIC_MAX + 16];
};

int st_log_scrub_begin(st_log_t *log, int64_t from_base, uint64_t pos, int64_t pos_offset, uint64_t max_bytes,
                       st_log_scrub_t **out) {
    *out = NULL;
    if (log->offline) return ST_ERR_OFFLINE;
    if (max_bytes == 0) max_bytes = 1;
    /* the first rolled segment at or after from_base (never the active one) */
    size_t i = log_seg_for(log, from_base);
    if (i < log->nsegs && log->segs[i].base_offset < from_base) i++;
    if (i + 1 >= log->nsegs) return KP_OK;
    const st_segment_t *s = &log->segs[i];
    assert(!s->active);
    if (s->base_offset != from_base || pos > s->size_bytes || pos_offset < s->base_offset) pos = 0;
    st_log_scrub_t *j = calloc(1, sizeof *j);
    if (!j) return KP_ERR_NOMEM;
    j->fd = fcntl(s->log_fd, F_DUPFD_CLOEXEC, 0);
    if (j->fd < 0) {
        free(j);
        return ST_ERR_IO;
    }
    j->origin = log;
    j->trunc_gen = log->trunc_gen;
    j->base = s->base_offset;
    j->next_offset = s->next_offset;
    j->size = s->size_bytes;
    j->pos = pos;
    j->pos_offset = pos == 0 ? s->base_offset : pos_offset;
    j->max_bytes = max_bytes;
    memcpy(j->name, log->name, sizeof j->name);
    j->res.seg_base = s->base_offset;
    j->res.next_pos = pos;
    j->res.next_offset = j->pos_offset;
    j->res.bad_offset = -1;
    st_seg_path(j->res.path, sizeof j->res.path, log->dir, s->base_offset, ".log");
    *out = j;
    return KP_OK;
}

/* CRC-32C of file bytes [from, to) in chunks. */
static int crc_range(int fd, uint64_t from, uint64_t to, uint8_t *chunk, uint32_t *crc) {
    uint32_t c = 0;
    while (from < to) {
        size_t want = to - from < ST_SCRUB_CHUNK_BYTES ? (size_t)(to - from) : ST_SCRUB_CHUNK_BYTES;
        ssize_t n = pread(fd, chunk, want, (off_t)from);
        if (n < 0) return ST_ERR_IO;
        if (n == 0) return KP_ERR_TRUNCATED;
        c = kp_crc32c(c, chunk, (size_t)n);
        from += (uint64_t)n;
    }
    *crc = c;
    return KP_OK;
}

/* The batch at pos: KP_OK and its header in *h, or why it is bad. */
static int check_batch(const st_log_scrub_t *j, uint64_t pos, int64_t expect_min, uint8_t *chunk, kp_batch_t *h) {
    if (j->size - pos < KP_BATCH_HEADER_BYTES) return KP_ERR_TRUNCATED;
    ssize_t n = pread(j->fd, chunk, KP_BATCH_HEADER_BYTES, (off_t)pos);
    if (n < 0) return ST_ERR_IO;
    if (n != KP_BATCH_HEADER_BYTES) return KP_ERR_TRUNCATED;
    int rc = kp_batch_read_header(chunk, KP_BATCH_HEADER_BYTES, h);
    if (rc != KP_OK) return rc;
    if (h->size > j->size - pos) return KP_ERR_TRUNCATED;
    if (h->base_offset < expect_min || kp_batch_last_offset(h) >= j->next_offset) return KP_ERR_CORRUPT;
    uint32_t crc;
    rc = crc_range(j->fd, pos + KP_BATCH_ATTR_OFFSET, pos + h->size, chunk, &crc);
    if (rc != KP_OK) return rc;
    return crc == h->crc ? KP_OK : KP_ERR_CORRUPT;
}

int st_log_scrub_run(st_log_scrub_t *j) {
    st_guard_blocking("segment scrub", j->name);
    uint8_t *chunk = malloc(ST_SCRUB_CHUNK_BYTES);
    if (!chunk) return KP_ERR_NOMEM;
    uint64_t pos = j->pos;
    int64_t expect_min = j->pos_offset;   /* the next batch starts at or after it */
    int rc = KP_OK;
    while (pos < j->size && j->res.bytes < j->max_bytes) {
        kp_batch_t h;
        rc = check_batch(j, pos, expect_min, chunk, &h);
        if (rc == ST_ERR_IO) break;
        if (rc != KP_OK) {
            j->res.corrupt = true;
            j->res.status = rc;
            j->res.bad_pos = pos;
            /* the batch's own base offset may be the damaged field: report
             * the first offset not proven good instead */
            j->res.bad_offset = expect_min;
            rc = KP_OK;
            break;
        }
        j->res.bytes += h.size;
        j->res.batches++;
        pos += h.size;
        expect_min = kp_batch_last_offset(&h) + 1;
    }
    j->res.next_pos = pos;
    j->res.next_offset = expect_min;
    j->res.seg_done = pos >= j->size && !j->res.corrupt;
    free(chunk);
    close(j->fd);
    j->fd = -1;
    return rc;
}

int st_log_scrub_end(st_log_t *log, st_log_scrub_t *j, st_scrub_result_t *res) {
    assert(j->origin == log);
    *res = j->res;
    int rc = KP_OK;
    /* still the same immutable segment? (truncation, retention or
     * compaction meanwhile: no verdict, the caller starts over) */
    size_t i = log_seg_for(log, j->base);
    if (log->trunc_gen != j->trunc_gen || i + 1 >= log->nsegs || log->segs[i].base_offset != j->base ||
        log->segs[i].size_bytes != j->size || log->segs[i].next_offset != j->next_offset)
        rc = ST_ERR_NOT_FOUND;
    if (rc == KP_OK && res->corrupt)
        st_logf(ST_LOG_ERROR, "partition %s: scrub found a corrupt batch (%s) in %s at byte %" PRIu64
                " (offset %" PRId64 ")", log->name, st_status_str(res->status), res->path, res->bad_pos,
                res->bad_offset);
    st_log_scrub_free(j);
    return rc;
}

void st_log_scrub_free(st_log_scrub_t *j) {
    if (!j) return;
    if (j->fd >= 0) close(j->fd);
    free(j);
}

void st_log_mark_offline(st_log_t *log, const char *why) {
    if (log->offline) return;
    log->offline = true;
    st_logf(ST_LOG_ERROR, "partition %s: %s; the log is now offline until restart", log->name, why);
}
