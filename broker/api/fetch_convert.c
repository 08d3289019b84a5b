/* broker/api/fetch_convert.c — the copy path of Fetch below v10 as a worker
 * job; see fetch_convert_int.h for the split and the budget rule.
 *
 * Cost, per partition the job decides: one pread of its ranges into a
 * buffer of exactly their size (the former inline path zeroed a buffer of
 * the whole budget, up to 64 MiB, in the request arena), and for v0-3 one
 * decompression and one conversion per batch in a scratch arena reset per
 * batch (so at most one decompressed batch is held), appended to one
 * growing output buffer. Copies: disk -> buffer (needed: the bytes are
 * inspected), and for v0-3 the converted sets into the output and then
 * into a memfd. The answer splices file ranges (fconv_answer_ranges): v4-9
 * the log's own bytes again (read twice from the page cache rather than
 * copied twice on the state loop), v0-3 the memfd. Not done: a header-only
 * walk for v4-9 (the zstd check needs only each batch's attributes), which
 * would save the first read; the whole read keeps one code path with the
 * down-conversion and costs the pool, not the loop. */
#include "broker/api/fetch_convert_int.h"
#include "storage/st_fdref.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "broker/api/dispatch.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_compress.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_msgset.h"

fconv_t *fconv_new(int16_t version, uint64_t max_total, size_t n) {
    assert(version >= 0 && version < 10);
    fconv_t *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->parts = calloc(n ? n : 1, sizeof *c->parts);
    if (!c->parts) { free(c); return NULL; }
    c->version = version;
    c->max_total = max_total;
    c->n = n;
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < ST_READ_RANGES_MAX; k++) c->parts[i].fd[k] = -1;
        c->parts[i].out_fd = -1;
    }
    return c;
}

static void close_fds(fconv_part_t *p) {
    for (int i = 0; i < p->nranges; i++) {
        if (p->fds_owned && p->ref[i]) st_fdref_release(p->ref[i]);
        else if (p->fds_owned && p->fd[i] >= 0) (void)close(p->fd[i]);   /* a dup read-only: nothing to flush */
        p->fd[i] = -1;
        p->ref[i] = NULL;
    }
    p->fds_owned = false;
}

void fconv_part_reset(fconv_part_t *p) {
    close_fds(p);
    assert(!p->decided && !p->mem && p->out_fd < 0);   /* decided partitions are never planned again */
    memset(p, 0, sizeof *p);
    for (int i = 0; i < ST_READ_RANGES_MAX; i++) p->fd[i] = -1;
    p->out_fd = -1;
}

void fconv_free(fconv_t *c) {
    if (!c) return;
    for (size_t i = 0; i < c->n; i++) {
        close_fds(&c->parts[i]);
        free(c->parts[i].mem);
        if (c->parts[i].out_fd >= 0) (void)close(c->parts[i].out_fd);
    }
    free(c->parts);
    free(c);
}

size_t fconv_cap(uint64_t max) {
    size_t cap = max < FCONV_COPY_CAP_BYTES ? (size_t)max : FCONV_COPY_CAP_BYTES;
    return cap < FCONV_COPY_MIN_BYTES ? FCONV_COPY_MIN_BYTES : cap;
}

long long fconv_prefix(const uint8_t *buf, size_t len, uint64_t max_bytes, unsigned flags) {
    kp_rd_t r;
    kp_rd_init(&r, buf, len);
    uint64_t took = 0;
    bool first = true;
    while (kp_rd_remaining(&r) > 0) {
        kp_batch_t b;
        if (kp_batch_read(&r, &b) != KP_OK) return -1;
        /* st_log_read's rule: a batch that passes the budget ends the read,
         * unless it is the first and MIN_ONE asks for one */
        if (took + b.size > max_bytes && !(first && (flags & ST_READ_MIN_ONE))) break;
        took += b.size;
        first = false;
    }
    assert(took <= len);
    return (long long)took;
}

/* Appends n bytes to the growing output (*out, *len, *cap): false when out
 * of memory. The bound FCONV_OUT_MAX_BYTES is the caller's. */
static bool out_append(uint8_t **out, size_t *len, size_t *cap, const uint8_t *p, size_t n) {
    if (*len + n > *cap) {
        size_t ncap = (*len + n) * 2;
        if (ncap > FCONV_OUT_MAX_BYTES) ncap = FCONV_OUT_MAX_BYTES;
        uint8_t *nb = realloc(*out, ncap ? ncap : 1);
        if (!nb) return false;
        *out = nb;
        *cap = ncap;
    }
    if (n) memcpy(*out + *len, p, n);
    *len += n;
    return true;
}

void fconv_convert(int16_t version, uint8_t *buf, size_t len, fconv_part_t *p) {
    p->error = 0;
    p->bytes = NULL;
    p->bytes_len = 0;
    p->sent = 0;
    kp_rd_t r;
    kp_rd_init(&r, buf, len);
    kp_arena_t scratch;
    kp_arena_init(&scratch, BK_API_REQ_ARENA_CAP_BYTES);
    uint8_t *conv = NULL;
    size_t conv_len = 0, conv_cap = 0;
    while (kp_rd_remaining(&r) > 0) {
        kp_batch_t b;
        if (kp_batch_read(&r, &b) != KP_OK) { p->error = KP_ERROR_CORRUPT_MESSAGE; break; }
        if (kp_batch_codec(&b) == KP_CODEC_ZSTD) {
            /* no zstd below v10 (KIP-110): refused when it comes first, else
             * the answer stops before it and the client comes back for it */
            if (b.data == buf) p->error = KP_ERROR_UNSUPPORTED_COMPRESSION_TYPE;
            len = (size_t)(b.data - buf);
            break;
        }
        if (version >= 4) continue;
        const uint8_t *recs = NULL, *ms = NULL;
        size_t rlen = 0, mlen = 0;
        kp_arena_reset(&scratch);
        if (kp_batch_records(&b, &scratch, FCONV_COPY_CAP_BYTES, &recs, &rlen) != KP_OK ||
            kp_batch_to_msgset(&b, recs, rlen, version >= 2 ? 1 : 0, &scratch, &ms, &mlen) != KP_OK) {
            p->error = KP_ERROR_CORRUPT_MESSAGE;
            break;
        }
        if (conv_len + mlen > FCONV_OUT_MAX_BYTES) {
            if (b.data == buf) p->error = KP_ERROR_CORRUPT_MESSAGE;
            break;
        }
        if (!out_append(&conv, &conv_len, &conv_cap, ms, mlen)) { p->error = KP_ERROR_UNKNOWN_SERVER_ERROR; break; }
    }
    kp_arena_free(&scratch);
    /* an error answers no records: the former path left the partition's
     * records empty on every error */
    if (version < 4) {
        free(buf);
        p->mem = conv;
        if (!p->error) { p->bytes = conv; p->bytes_len = conv_len; }
    } else {
        free(conv);
        p->mem = buf;
        if (!p->error) { p->bytes = buf; p->bytes_len = len; }
    }
    p->sent = p->bytes_len;
}

/* Writes n bytes to a new memfd: its fd, or -1. */
static int memfd_of(const uint8_t *p, size_t n) {
    int fd = memfd_create("skiff-fetch-converted", MFD_CLOEXEC);
    if (fd < 0) return -1;
    for (size_t done = 0; done < n;) {
        ssize_t w = write(fd, p + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) { (void)close(fd); return -1; }
        done += (size_t)w;
    }
    return fd;
}

void fconv_answer_ranges(int16_t version, fconv_part_t *p) {
    assert(p->decided && !p->error && p->ext.n == 0);
    if (p->bytes_len == 0) return;   /* the empty set: nothing to splice */
    memset(&p->ext, 0, sizeof p->ext);
    if (version >= 4) {
        /* the log's own fds (an inline round) may be closed by the time a
         * later round's job is done: those bytes stay in memory */
        if (!p->fds_owned) return;
        /* the bytes are a prefix of the ranges read: answer the ranges
         * themselves (the dup()s stay open until fconv_free) */
        uint64_t left = p->bytes_len;
        for (int i = 0; i < p->nranges && left > 0; i++) {
            uint64_t take = p->len[i] < left ? p->len[i] : left;
            p->ext.r[p->ext.n++] = (st_read_range_t){ .fd = p->fd[i], .ref = p->ref[i], .pos = p->pos[i], .len = take };
            left -= take;
        }
        assert(left == 0);
    } else {
        int fd = memfd_of(p->bytes, p->bytes_len);
        if (fd < 0) return;          /* kept in memory: the answer copies it */
        p->out_fd = fd;
        p->ext.r[0] = (st_read_range_t){ .fd = fd, .ref = NULL, .pos = 0, .len = p->bytes_len };
        p->ext.n = 1;
    }
    p->ext.total_bytes = p->bytes_len;
    free(p->mem);
    p->mem = NULL;
    p->bytes = NULL;
}

/* Reads p's ranges into a new buffer of p->total bytes: NULL on an error
 * (short read, I/O, out of memory). */
static uint8_t *read_ranges(const fconv_part_t *p) {
    uint8_t *buf = malloc(p->total ? p->total : 1);
    if (!buf) return NULL;
    size_t got = 0;
    for (int i = 0; i < p->nranges; i++) {
        assert(p->fd[i] >= 0);
        for (uint64_t done = 0; done < p->len[i];) {
            ssize_t n = pread(p->fd[i], buf + got, p->len[i] - done, (off_t)(p->pos[i] + done));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) { free(buf); return NULL; }
            done += (uint64_t)n;
            got += (size_t)n;
        }
    }
    assert(got == p->total);
    return buf;
}

/* Decides p with the real running total; false when the read cannot tell
 * (the loop reads p again, in a new round). */
static bool decide(fconv_t *c, fconv_part_t *p) {
    assert(c->total < c->max_total && p->spec_total <= c->total);
    bool exact = p->spec_total == c->total;
    uint64_t room = c->max_total - c->total;
    uint64_t max = p->part_max < room ? p->part_max : room;
    unsigned flags = c->total == 0 ? ST_READ_MIN_ONE : 0;   /* KIP-74 */
    size_t cap = fconv_cap(max);
    if (p->read_failed) {
        if (!exact) return false;
        p->error = KP_ERROR_KAFKA_STORAGE_ERROR;
        return true;
    }
    assert(p->read);
    if (p->oversize) {
        /* one batch larger than the copy buffer: the former path failed it
         * (st_log_read_copy: OVERFLOW) when MIN_ONE took it, else took nothing */
        if (flags & ST_READ_MIN_ONE) p->error = KP_ERROR_KAFKA_STORAGE_ERROR;
        return true;
    }
    uint8_t *buf = read_ranges(p);
    if (!buf) {
        if (!exact) return false;
        p->error = KP_ERROR_KAFKA_STORAGE_ERROR;
        return true;
    }
    if (p->total) c->sets_read++;
    size_t len = (size_t)p->total;
    if (!exact) {
        long long k = fconv_prefix(buf, len, max < cap ? max : cap, flags);
        if (k < 0) { free(buf); return false; }
        len = (size_t)k;
    }
    assert(len <= cap);   /* above the cap only with MIN_ONE, i.e. exact, i.e. oversize */
    fconv_convert(c->version, buf, len, p);
    p->decided = true;
    if (!p->error) fconv_answer_ranges(c->version, p);
    return true;
}

int fconv_run(void *arg) {
    fconv_t *c = arg;
    c->sets_read = 0;
    size_t i = c->next;
    for (; i < c->n; i++) {
        fconv_part_t *p = &c->parts[i];
        if (!p->wants || c->total >= c->max_total) { p->decided = true; continue; }
        /* the partition may take more than the loop assumed: read again */
        if (p->spec_total > c->total || !decide(c, p)) break;
        p->decided = true;
        c->total += p->sent;
    }
    c->next = i;
    /* the round's dup()s, read or not, but those an answer splices */
    for (size_t k = 0; k < c->n; k++)
        if (c->parts[k].ext.n == 0 || c->parts[k].out_fd >= 0) close_fds(&c->parts[k]);
    return KP_OK;
}
