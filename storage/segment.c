/* segment.c — segment files, batch header walks and index upkeep. */
#include "storage/st_segment.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/st_io.h"
#include "storage/st_status.h"

static const char *const k_suffixes[] = { ".log", ".index", ".timeindex", ".txnindex" };
#define N_SUFFIXES (sizeof k_suffixes / sizeof k_suffixes[0])

void st_seg_path(char *buf, size_t cap, const char *dir, int64_t base, const char *suffix) {
    int n = snprintf(buf, cap, "%s/%020" PRId64 "%s", dir, base, suffix);
    assert(n > 0 && (size_t)n < cap);
}

static void reset_state(st_segment_t *s, const char *dir, int64_t base, bool active) {
    s->base_offset = base;
    s->next_offset = base;
    s->log_fd = -1;
    s->log_ref = NULL;
    s->size_bytes = 0;
    s->oidx.fd = -1;
    s->tidx.fd = -1;
    s->active = active;
    s->max_ts = -1;
    s->max_ts_offset = base;
    s->last_tidx_ts = INT64_MIN;
    s->bytes_since_index = 0;
    s->created_ms = -1;
    s->dir = dir;
}

static void ensure_exists(const char *path) {
    int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) close(fd);
}

static int open_indexes(st_segment_t *s, bool writable, uint32_t index_max_bytes) {
    char p[ST_PATH_MAX];
    /* a missing index is legal input: it opens empty and gets rebuilt */
    st_seg_path(p, sizeof p, s->dir, s->base_offset, ".index");
    ensure_exists(p);
    st_seg_path(p, sizeof p, s->dir, s->base_offset, ".timeindex");
    ensure_exists(p);
    st_seg_path(p, sizeof p, s->dir, s->base_offset, ".index");
    if (st_index_open(&s->oidx, p, ST_OIDX_ENTRY_BYTES, writable, index_max_bytes) != KP_OK) return ST_ERR_IO;
    st_seg_path(p, sizeof p, s->dir, s->base_offset, ".timeindex");
    if (st_index_open(&s->tidx, p, ST_TIDX_ENTRY_BYTES, writable, index_max_bytes) != KP_OK) {
        int saved = errno;
        if (st_index_close(&s->oidx) != KP_OK) { /* already failing */ }
        errno = saved;
        return ST_ERR_IO;
    }
    if (s->tidx.count > 0) {
        uint32_t rel;
        st_tidx_get(&s->tidx, s->tidx.count - 1, &s->last_tidx_ts, &rel);
    }
    return KP_OK;
}

/* Puts the just-opened log_fd in its refcounted holder (closed on failure). */
static int hold_fd(st_segment_t *s) {
    s->log_ref = st_fdref_new(s->log_fd);
    if (s->log_ref) return KP_OK;
    st_logf(ST_LOG_ERROR, "segment %s/%020" PRId64 ": out of memory", s->dir, s->base_offset);
    close(s->log_fd);
    s->log_fd = -1;
    return KP_ERR_NOMEM;
}

void st_seg_release_fd(st_segment_t *s) {
    if (s->log_ref) {
        assert(st_fdref_fd(s->log_ref) == s->log_fd);
        st_fdref_release(s->log_ref);
    } else if (s->log_fd >= 0) {
        close(s->log_fd);   /* a descriptor nobody shares (a plain view) */
    }
    s->log_ref = NULL;
    s->log_fd = -1;
}

int st_seg_create(st_segment_t *s, const char *dir, int64_t base, uint32_t index_max_bytes, int64_t now_ms) {
    reset_state(s, dir, base, true);
    char p[ST_PATH_MAX];
    st_seg_path(p, sizeof p, dir, base, ".log");
    s->log_fd = open(p, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (s->log_fd < 0) {
        st_logf(ST_LOG_ERROR, "cannot create segment %s: %s", p, strerror(errno));
        return ST_ERR_IO;
    }
    if (hold_fd(s) != KP_OK) {
        unlink(p);
        return KP_ERR_NOMEM;
    }
    /* stale index files from a truncated-away segment would be read as ours */
    st_seg_path(p, sizeof p, dir, base, ".index");
    unlink(p);
    st_seg_path(p, sizeof p, dir, base, ".timeindex");
    unlink(p);
    st_seg_path(p, sizeof p, dir, base, ".txnindex");
    unlink(p);
    if (open_indexes(s, true, index_max_bytes) != KP_OK) {
        st_logf(ST_LOG_ERROR, "cannot create index of segment %s/%020" PRId64 ": %s", dir, base, strerror(errno));
        st_seg_release_fd(s);
        return ST_ERR_IO;
    }
    s->created_ms = now_ms;
    return KP_OK;
}

int st_seg_open(st_segment_t *s, const char *dir, int64_t base, bool active, uint32_t index_max_bytes) {
    reset_state(s, dir, base, active);
    char p[ST_PATH_MAX];
    st_seg_path(p, sizeof p, dir, base, ".log");
    s->log_fd = open(p, O_RDWR | O_CLOEXEC);
    struct stat st;
    if (s->log_fd < 0 || fstat(s->log_fd, &st) != 0) {
        st_logf(ST_LOG_ERROR, "cannot open segment %s: %s", p, strerror(errno));
        if (s->log_fd >= 0) close(s->log_fd);
        s->log_fd = -1;
        return ST_ERR_IO;
    }
    s->size_bytes = (uint64_t)st.st_size;
    s->created_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
    if (hold_fd(s) != KP_OK) return KP_ERR_NOMEM;
    if (open_indexes(s, active, index_max_bytes) != KP_OK) {
        st_logf(ST_LOG_ERROR, "cannot open index of segment %s: %s", p, strerror(errno));
        st_seg_release_fd(s);
        return ST_ERR_IO;
    }
    return KP_OK;
}

/* Final time index entry so that a closed segment's max timestamp is its
 * last time index entry (open then needs no scan). */
static void final_time_entry(st_segment_t *s) {
    if (s->max_ts < 0 || s->max_ts <= s->last_tidx_ts || st_index_full(&s->tidx)) return;
    uint32_t rel = (uint32_t)(s->max_ts_offset - s->base_offset);
    if (s->tidx.count > 0) {
        int64_t ts;
        uint32_t lr;
        st_tidx_get(&s->tidx, s->tidx.count - 1, &ts, &lr);
        if (rel <= lr) return;
    }
    st_tidx_append(&s->tidx, s->max_ts, rel);
    s->last_tidx_ts = s->max_ts;
}

int st_seg_seal(st_segment_t *s) {
    assert(s->active);
    final_time_entry(s);
    int rc = st_index_seal(&s->oidx);
    int rc2 = st_index_seal(&s->tidx);
    s->active = false;
    return rc ? rc : rc2;
}

int st_seg_close(st_segment_t *s) {
    if (s->active) final_time_entry(s);
    int rc = st_index_close(&s->oidx);
    int rc2 = st_index_close(&s->tidx);
    st_seg_release_fd(s);
    return rc ? rc : rc2;
}

/* Parses a 61-byte header (protocol's checks) and refuses a negative base
 * offset, which no log holds. */
static int parse_header(const uint8_t *buf, kp_batch_t *h) {
    int rc = kp_batch_read_header(buf, KP_BATCH_HEADER_BYTES, h);
    if (rc != KP_OK) return rc;
    return h->base_offset < 0 ? KP_ERR_BAD_VALUE : KP_OK;
}

void st_hdr_win_reset(st_hdr_win_t *w) {
    w->seg = NULL;
    w->fd = -1;
    w->pos = 0;
    w->len = 0;
}

/* The 61 bytes at pos when w holds them all (for the same open file). */
static const uint8_t *win_lookup(const st_hdr_win_t *w, const st_segment_t *s, uint64_t pos) {
    if (!w || w->seg != s || w->fd != s->log_fd || pos < w->pos) return NULL;
    uint64_t at = pos - w->pos;
    if (at > w->len || w->len - at < KP_BATCH_HEADER_BYTES) return NULL;
    return w->buf + at;
}

int st_seg_read_header_win(const st_segment_t *s, uint64_t pos, kp_batch_t *h, st_hdr_win_t *w) {
    if (pos >= s->size_bytes) return KP_ERR_TRUNCATED;
    if (s->size_bytes - pos < KP_BATCH_LOG_OVERHEAD) return KP_ERR_TRUNCATED;
    uint8_t one[KP_BATCH_HEADER_BYTES];
    const uint8_t *buf = s->size_bytes - pos >= KP_BATCH_HEADER_BYTES ? win_lookup(w, s, pos) : NULL;
    size_t n = KP_BATCH_HEADER_BYTES;
    if (!buf) {
        /* one pread: the whole window from pos (bounded by the segment's
         * size), or just this header without a window; near the end both
         * read what is there, and a short result is judged below */
        uint8_t *dst = w ? w->buf : one;
        size_t cap = w ? sizeof w->buf : sizeof one;
        size_t want = s->size_bytes - pos < cap ? (size_t)(s->size_bytes - pos) : cap;
        if (w) {
            st_hdr_win_reset(w);
            w->fills++;
        }
        ssize_t got = pread(s->log_fd, dst, want, (off_t)pos);
        if (got < 0) return ST_ERR_IO;
        assert((size_t)got <= want);
        if (w) {
            w->seg = s;
            w->fd = s->log_fd;
            w->pos = pos;
            w->len = (size_t)got;
        }
        buf = dst;
        n = (size_t)got < KP_BATCH_HEADER_BYTES ? (size_t)got : KP_BATCH_HEADER_BYTES;
    }
    if (n < KP_BATCH_HEADER_BYTES) {
        /* a short tail: torn if its length field claims more than is there */
        if (n < KP_BATCH_LOG_OVERHEAD) return KP_ERR_TRUNCATED;
        int32_t len = (int32_t)kp_load_be32(buf + 8);
        if (len >= KP_BATCH_HEADER_BYTES - KP_BATCH_LOG_OVERHEAD) return KP_ERR_TRUNCATED;
        return KP_ERR_BAD_LENGTH;
    }
    int rc = parse_header(buf, h);
    if (rc != KP_OK) return rc;
    if (h->size > s->size_bytes - pos) return KP_ERR_TRUNCATED;
    return KP_OK;
}

int st_seg_read_header(const st_segment_t *s, uint64_t pos, kp_batch_t *h) {
    return st_seg_read_header_win(s, pos, h, NULL);
}

void st_seg_note_batch(st_segment_t *s, const kp_batch_t *h, uint64_t pos, uint32_t interval_bytes) {
    assert(h->base_offset >= s->next_offset);
    assert(kp_batch_last_offset(h) - s->base_offset <= ST_REL_OFFSET_MAX);
    uint32_t rel = (uint32_t)(h->base_offset - s->base_offset);
    if (h->max_timestamp > s->max_ts) {
        s->max_ts = h->max_timestamp;
        s->max_ts_offset = h->base_offset;
    }
    if (s->bytes_since_index >= interval_bytes && pos > 0) {
        /* both indexes are preallocated; when one is full the log rolls
         * before the next append, so at most this entry is skipped */
        if (s->oidx.writable && !st_index_full(&s->oidx)) st_oidx_append(&s->oidx, rel, (uint32_t)pos);
        if (s->tidx.writable && s->max_ts > s->last_tidx_ts && !st_index_full(&s->tidx)) {
            uint32_t trel = (uint32_t)(s->max_ts_offset - s->base_offset);
            bool ok = true;
            if (s->tidx.count > 0) {
                int64_t lt;
                uint32_t lr;
                st_tidx_get(&s->tidx, s->tidx.count - 1, &lt, &lr);
                ok = trel > lr;
            }
            if (ok) {
                st_tidx_append(&s->tidx, s->max_ts, trel);
                s->last_tidx_ts = s->max_ts;
            }
        }
        s->bytes_since_index = 0;
    }
    s->bytes_since_index += h->size;
    s->next_offset = kp_batch_last_offset(h) + 1;
}

static int verify_batch_crc(const st_segment_t *s, uint64_t pos, const kp_batch_t *h, uint8_t **buf,
                            size_t *cap) {
    if (h->size > *cap) {
        uint8_t *nb = realloc(*buf, h->size);
        if (!nb) return KP_ERR_NOMEM;
        *buf = nb;
        *cap = h->size;
    }
    ssize_t n = pread(s->log_fd, *buf, h->size, (off_t)pos);
    if (n < 0) return ST_ERR_IO;
    if ((size_t)n != h->size) return KP_ERR_TRUNCATED;
    kp_rd_t r;
    kp_rd_init(&r, *buf, h->size);
    kp_batch_t full;
    int rc = kp_batch_read(&r, &full);
    if (rc != KP_OK) return rc;
    return kp_batch_verify_crc(&full);
}

int st_seg_scan(st_segment_t *s, uint64_t pos, bool rebuild, bool verify_crc, uint32_t interval_bytes,
                st_scan_result_t *res) {
    uint8_t *buf = NULL;
    size_t cap = 0;
    if (rebuild) {
        assert(pos == 0);
        assert(s->oidx.writable || s->oidx.count == 0 || !s->active);
        st_index_reset(&s->oidx);
        st_index_reset(&s->tidx);
        s->last_tidx_ts = INT64_MIN;
        s->max_ts = -1;
        s->max_ts_offset = s->base_offset;
        s->bytes_since_index = 0;
        s->next_offset = s->base_offset;
    }
    res->status = KP_OK;
    res->first_bad_offset = -1;
    st_hdr_win_t w; /* not zero-initialised: 16 KiB memset per call */
    st_hdr_win_reset(&w);
    while (pos < s->size_bytes) {
        kp_batch_t h;
        int rc = st_seg_read_header_win(s, pos, &h, &w);
        if (rc == KP_OK && (h.base_offset < s->next_offset || h.base_offset < s->base_offset ||
                            kp_batch_last_offset(&h) - s->base_offset > ST_REL_OFFSET_MAX))
            rc = KP_ERR_CORRUPT;
        if (rc == KP_OK && verify_crc) rc = verify_batch_crc(s, pos, &h, &buf, &cap);
        if (rc != KP_OK) {
            res->status = rc;
            if (rc != KP_ERR_TRUNCATED || s->size_bytes - pos >= KP_BATCH_LOG_OVERHEAD)
                res->first_bad_offset = (rc == KP_ERR_CORRUPT || rc == KP_ERR_TRUNCATED) ? h.base_offset : -1;
            break;
        }
        st_seg_note_batch(s, &h, pos, interval_bytes);
        pos += h.size;
    }
    free(buf);
    res->valid_bytes = pos;
    return res->status == ST_ERR_IO || res->status == KP_ERR_NOMEM ? res->status : KP_OK;
}

int st_seg_find(const st_segment_t *s, int64_t offset, uint64_t *pos, kp_batch_t *h) {
    st_hdr_win_t w; /* not zero-initialised: 16 KiB memset per call */
    st_hdr_win_reset(&w);
    return st_seg_find_win(s, offset, pos, h, &w);
}

int st_seg_find_win(const st_segment_t *s, int64_t offset, uint64_t *pos, kp_batch_t *h, st_hdr_win_t *w) {
    uint64_t p = 0;
    if (offset > s->base_offset && s->oidx.count > 0) {
        int64_t rel = offset - s->base_offset;
        int64_t i = st_oidx_lookup(&s->oidx, rel > UINT32_MAX ? UINT32_MAX : (uint32_t)rel);
        if (i >= 0) {
            uint32_t r, ip;
            st_oidx_get(&s->oidx, (uint32_t)i, &r, &ip);
            p = ip;
        }
    }
    /* walk: bounded by index.interval.bytes plus one batch in a healthy
     * segment, by the segment size otherwise; one window of reads holds
     * the whole walk of a healthy segment */
    while (p < s->size_bytes) {
        int rc = st_seg_read_header_win(s, p, h, w);
        if (rc != KP_OK) return rc == KP_ERR_TRUNCATED ? KP_ERR_CORRUPT : rc;
        if (kp_batch_last_offset(h) >= offset) break;
        p += h->size;
    }
    *pos = p < s->size_bytes ? p : s->size_bytes;
    return KP_OK;
}

int st_seg_truncate(st_segment_t *s, uint64_t pos, int64_t next_offset, uint32_t interval_bytes) {
    assert(pos <= s->size_bytes);
    if (st_io_ftruncate(s->log_fd, pos) != KP_OK) return ST_ERR_IO;
    s->size_bytes = pos;
    st_index_truncate(&s->oidx, st_oidx_count_below_pos(&s->oidx, (uint32_t)pos));
    uint32_t rel_limit = next_offset - s->base_offset > UINT32_MAX ? UINT32_MAX
                                                                   : (uint32_t)(next_offset - s->base_offset);
    st_index_truncate(&s->tidx, st_tidx_count_below_rel(&s->tidx, rel_limit));
    st_scan_result_t res;
    int rc = st_seg_load_tail(s, false, interval_bytes, &res);
    if (rc != KP_OK) return rc;
    if (res.status != KP_OK) return KP_ERR_CORRUPT;
    assert(s->next_offset <= next_offset);
    s->next_offset = next_offset;
    return KP_OK;
}

int st_seg_load_tail(st_segment_t *s, bool verify_crc, uint32_t interval_bytes, st_scan_result_t *res) {
    uint64_t from = 0;
    s->max_ts = -1;
    s->max_ts_offset = s->base_offset;
    s->last_tidx_ts = INT64_MIN;
    if (s->tidx.count > 0) {
        uint32_t rel;
        st_tidx_get(&s->tidx, s->tidx.count - 1, &s->last_tidx_ts, &rel);
        s->max_ts = s->last_tidx_ts;
        s->max_ts_offset = s->base_offset + rel;
    }
    s->next_offset = s->base_offset;
    if (s->oidx.count > 0) {
        uint32_t rel, ip;
        st_oidx_get(&s->oidx, s->oidx.count - 1, &rel, &ip);
        from = ip;
        s->next_offset = s->base_offset + rel;
    }
    s->bytes_since_index = 0;
    return st_seg_scan(s, from, false, verify_crc, interval_bytes, res);
}

/* True when no batch after the last offset index entry (after the first
 * batch when there is none) should have had one by st_seg_note_batch's rule:
 * an entry for the batch at pos > 0 once interval_bytes were written since
 * the previous entry. Catches an index cut short (or emptied) whose file is
 * still well-formed. Cost: the headers of at most ~interval_bytes of
 * batches plus one (one window pread for a healthy segment); the walk stops at the first batch that
 * should have had an entry. An unparsable header ends the walk: judging the
 * tail is st_seg_load_tail's job. */
static bool oidx_complete(const st_segment_t *s, uint32_t interval_bytes) {
    uint64_t pos = 0;
    if (s->oidx.count > 0) {
        uint32_t rel, ipos;
        st_oidx_get(&s->oidx, s->oidx.count - 1, &rel, &ipos);
        pos = ipos;
    }
    uint64_t since = 0;
    st_hdr_win_t w; /* not zero-initialised: 16 KiB memset per call */
    st_hdr_win_reset(&w);
    while (pos < s->size_bytes) {
        if (since >= interval_bytes && pos > 0) return false;
        kp_batch_t h;
        if (st_seg_read_header_win(s, pos, &h, &w) != KP_OK) return true;
        since += h.size;
        pos += h.size;
    }
    return true;
}

bool st_seg_indexes_ok(const st_segment_t *s, uint64_t rel_limit, uint32_t interval_bytes) {
    if (s->oidx.ragged || s->tidx.ragged) return false;
    if (!st_oidx_sane(&s->oidx, s->size_bytes, rel_limit) || !st_tidx_sane(&s->tidx, rel_limit)) return false;
    if (s->size_bytes > 0 && s->tidx.count == 0 && !s->active) return false;
    kp_batch_t h;
    if (s->tidx.count > 0) {
        /* the last time entry names the batch that raised the max: check it
         * (a zeroed one-entry file is otherwise well-formed) */
        int64_t ts;
        uint32_t trel;
        uint64_t tpos;
        st_tidx_get(&s->tidx, s->tidx.count - 1, &ts, &trel);
        if (st_seg_find(s, s->base_offset + trel, &tpos, &h) != KP_OK || tpos >= s->size_bytes) return false;
        if (h.base_offset != s->base_offset + trel || h.max_timestamp != ts) return false;
    }
    if (s->oidx.count > 0) {
        uint32_t rel, pos;
        st_oidx_get(&s->oidx, s->oidx.count - 1, &rel, &pos);
        if (st_seg_read_header(s, pos, &h) != KP_OK) return false;
        if (h.base_offset != s->base_offset + rel) return false;
    }
    /* (this used to accept no entries only up to 2 intervals of bytes: a
     * segment of one large batch has no entry by the rule, and was rebuilt
     * on every start) */
    return oidx_complete(s, interval_bytes);
}

int st_seg_reindex(st_segment_t *s, uint32_t index_max_bytes, bool verify_crc, uint32_t interval_bytes,
                   st_scan_result_t *res) {
    bool was_active = s->active;
    int rc = st_index_close(&s->oidx);
    int rc2 = st_index_close(&s->tidx);
    (void)rc;
    (void)rc2; /* the files are replaced below either way */
    char p[ST_PATH_MAX];
    st_seg_path(p, sizeof p, s->dir, s->base_offset, ".index");
    unlink(p);
    st_seg_path(p, sizeof p, s->dir, s->base_offset, ".timeindex");
    unlink(p);
    s->active = true;
    rc = open_indexes(s, true, index_max_bytes);
    if (rc != KP_OK) {
        s->active = was_active;
        return rc;
    }
    rc = st_seg_scan(s, 0, true, verify_crc, interval_bytes, res);
    if (rc == KP_OK && !was_active) rc = st_seg_seal(s);
    s->active = was_active;
    return rc;
}

int st_seg_rename_all(const char *dir, int64_t base, const char *suffix) {
    for (size_t i = 0; i < N_SUFFIXES; i++) {
        char from[ST_PATH_MAX], to[ST_PATH_MAX];
        st_seg_path(from, sizeof from, dir, base, k_suffixes[i]);
        int n = snprintf(to, sizeof to, "%s%s", from, suffix);
        assert(n > 0 && (size_t)n < sizeof to);
        if (access(from, F_OK) != 0) continue;
        if (st_io_rename(from, to) != KP_OK) {
            st_logf(ST_LOG_ERROR, "cannot rename %s to %s: %s", from, to, strerror(errno));
            return ST_ERR_IO;
        }
    }
    return KP_OK;
}

void st_seg_unlink_all(const char *dir, int64_t base, const char *suffix) {
    for (size_t i = 0; i < N_SUFFIXES; i++) {
        char p[ST_PATH_MAX], q[ST_PATH_MAX];
        st_seg_path(p, sizeof p, dir, base, k_suffixes[i]);
        int n = snprintf(q, sizeof q, "%s%s", p, suffix);
        assert(n > 0 && (size_t)n < sizeof q);
        unlink(q);
    }
}
