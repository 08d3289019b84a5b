/* Unit tests for storage's building blocks: index files, the batch encoder,
 * segment header parsing at every byte, meta.properties, log dir placement. */
#include "test/unit/st_test_util.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sys/stat.h>

#include "storage/st_checkpoint.h"
#include "storage/st_fdref.h"
#include "storage/st_index.h"
#include "storage/st_logdirs.h"
#include "storage/st_segment.h"

START_TEST(test_offset_index_lookups) {
    char *dir = tu_tmpdir();
    char p[600];
    snprintf(p, sizeof p, "%s/x.index", dir);
    st_index_t idx;
    ck_assert_int_eq(st_index_open(&idx, p, ST_OIDX_ENTRY_BYTES, true, 8 * 10 + 5), KP_OK);
    ck_assert_uint_eq(idx.count, 0);
    ck_assert_int_eq(st_oidx_lookup(&idx, 5), -1);
    for (uint32_t i = 0; i < 10; i++) {
        ck_assert(!st_index_full(&idx));
        st_oidx_append(&idx, 10 + i * 10, 100 + i * 1000);
    }
    ck_assert(st_index_full(&idx)); /* 85 bytes hold 10 entries */
    ck_assert_int_eq(st_oidx_lookup(&idx, 9), -1);
    ck_assert_int_eq(st_oidx_lookup(&idx, 10), 0);
    ck_assert_int_eq(st_oidx_lookup(&idx, 19), 0);
    ck_assert_int_eq(st_oidx_lookup(&idx, 20), 1);
    ck_assert_int_eq(st_oidx_lookup(&idx, 100), 9);
    ck_assert_int_eq(st_oidx_lookup(&idx, UINT32_MAX), 9);
    ck_assert_int_eq(st_oidx_lookup_pos(&idx, 99), -1);
    ck_assert_int_eq(st_oidx_lookup_pos(&idx, 100), 0);
    ck_assert_int_eq(st_oidx_lookup_pos(&idx, 1099), 0);
    ck_assert_int_eq(st_oidx_lookup_pos(&idx, 1100), 1);
    ck_assert_uint_eq(st_oidx_count_below_pos(&idx, 1100), 1);
    ck_assert_uint_eq(st_oidx_count_below_pos(&idx, 1101), 2);
    ck_assert(st_oidx_sane(&idx, 100000, 1000));
    ck_assert(!st_oidx_sane(&idx, 9100, 1000));  /* a position past the log */
    ck_assert(!st_oidx_sane(&idx, 100000, 100)); /* a relative offset too big */
    st_index_truncate(&idx, 4);
    ck_assert_int_eq(st_oidx_lookup(&idx, 100), 3);
    st_oidx_append(&idx, 45, 3500);
    ck_assert_int_eq(st_index_close(&idx), KP_OK);
    struct stat st;
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_int_eq(st.st_size, 5 * 8); /* trimmed on close */
    ck_assert_int_eq(st_index_open(&idx, p, ST_OIDX_ENTRY_BYTES, false, 0), KP_OK);
    ck_assert_uint_eq(idx.count, 5);
    uint32_t rel, pos;
    st_oidx_get(&idx, 4, &rel, &pos);
    ck_assert_uint_eq(rel, 45);
    ck_assert_uint_eq(pos, 3500);
    /* big-endian on disk */
    ck_assert_int_eq(st_index_close(&idx), KP_OK);
    int fd = open(p, O_RDONLY);
    uint8_t raw[8];
    ck_assert_int_eq(pread(fd, raw, 8, 32), 8);
    close(fd);
    ck_assert_uint_eq(kp_load_be32(raw), 45);
    ck_assert_uint_eq(kp_load_be32(raw + 4), 3500);
    /* a ragged tail is ignored */
    ck_assert_int_eq(truncate(p, 5 * 8 + 3), 0);
    ck_assert_int_eq(st_index_open(&idx, p, ST_OIDX_ENTRY_BYTES, false, 0), KP_OK);
    ck_assert_uint_eq(idx.count, 5);
    ck_assert_int_eq(st_index_close(&idx), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_time_index_lookups) {
    char *dir = tu_tmpdir();
    char p[600];
    snprintf(p, sizeof p, "%s/x.timeindex", dir);
    st_index_t idx;
    ck_assert_int_eq(st_index_open(&idx, p, ST_TIDX_ENTRY_BYTES, true, 4096), KP_OK);
    for (uint32_t i = 0; i < 20; i++) st_tidx_append(&idx, 1000 + i * 100, i * 3 + 1);
    ck_assert_int_eq(st_tidx_lookup_before(&idx, 1000), -1);
    ck_assert_int_eq(st_tidx_lookup_before(&idx, 1001), 0);
    ck_assert_int_eq(st_tidx_lookup_before(&idx, 1100), 0);
    ck_assert_int_eq(st_tidx_lookup_before(&idx, 1101), 1);
    ck_assert_int_eq(st_tidx_lookup_before(&idx, INT64_MAX), 19);
    ck_assert_uint_eq(st_tidx_count_below_rel(&idx, 4), 1);
    ck_assert_uint_eq(st_tidx_count_below_rel(&idx, 5), 2);
    ck_assert(st_tidx_sane(&idx, 100));
    ck_assert(!st_tidx_sane(&idx, 50));
    ck_assert_int_eq(st_index_seal(&idx), KP_OK);
    ck_assert(!idx.writable);
    ck_assert_uint_eq(idx.map_bytes, 20 * 12);
    int64_t ts;
    uint32_t rel;
    st_tidx_get(&idx, 19, &ts, &rel);
    ck_assert_int_eq(ts, 2900);
    ck_assert_uint_eq(rel, 58);
    ck_assert_int_eq(st_index_close(&idx), KP_OK);
    /* an absent file cannot be opened read-only */
    snprintf(p, sizeof p, "%s/missing.timeindex", dir);
    ck_assert_int_eq(st_index_open(&idx, p, ST_TIDX_ENTRY_BYTES, false, 0), ST_ERR_IO);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_segment_header_every_cut) {
    char *dir = tu_tmpdir();
    st_segment_t s;
    ck_assert_int_eq(st_seg_create(&s, dir, 100, 4096, 0), KP_OK);
    uint8_t buf[4096];
    size_t len = tu_batch(buf, sizeof buf, 3, 10, 1, 20);
    kp_batch_patch_base_offset(buf, 100);
    ck_assert_int_eq(pwrite(s.log_fd, buf, len, 0), (ssize_t)len);
    for (size_t cut = 0; cut <= len; cut++) {
        s.size_bytes = cut;
        kp_batch_t h;
        int rc = st_seg_read_header(&s, 0, &h);
        if (cut == len) {
            ck_assert_int_eq(rc, KP_OK);
            ck_assert_int_eq(h.base_offset, 100);
            ck_assert_uint_eq(h.size, len);
        } else {
            ck_assert_msg(rc == KP_ERR_TRUNCATED, "cut %zu: %d", cut, rc);
        }
    }
    s.size_bytes = len;
    /* garbage in each header field is refused, never over-read */
    for (size_t at = 8; at < KP_BATCH_HEADER_BYTES; at++) {
        uint8_t save = buf[at];
        buf[at] = 0xff;
        ck_assert_int_eq(pwrite(s.log_fd, buf, len, 0), (ssize_t)len);
        kp_batch_t h;
        int rc = st_seg_read_header(&s, 0, &h);
        if (rc == KP_OK) ck_assert_uint_le(h.size, len);
        buf[at] = save;
    }
    st_scan_result_t res;
    ck_assert_int_eq(pwrite(s.log_fd, buf, len, 0), (ssize_t)len);
    ck_assert_int_eq(st_seg_scan(&s, 0, true, true, 100, &res), KP_OK);
    ck_assert_int_eq(res.status, KP_OK);
    ck_assert_int_eq(s.next_offset, 103);
    ck_assert_int_eq(s.max_ts, 12);
    ck_assert_int_eq(st_seg_close(&s), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* Same fields from a plain header read and a windowed one (one check per
 * step: check(3) reports every passing assertion through a pipe). */
static bool hdr_same(const kp_batch_t *a, const kp_batch_t *b) {
    return a->base_offset == b->base_offset && a->size == b->size && a->batch_length == b->batch_length &&
           a->partition_leader_epoch == b->partition_leader_epoch && a->magic == b->magic && a->crc == b->crc &&
           a->attributes == b->attributes && a->last_offset_delta == b->last_offset_delta &&
           a->base_timestamp == b->base_timestamp && a->max_timestamp == b->max_timestamp &&
           a->producer_id == b->producer_id && a->producer_epoch == b->producer_epoch &&
           a->base_sequence == b->base_sequence && a->records_count == b->records_count;
}

typedef struct {
    int steps, straddles;
    uint64_t fills;
} walk_stats_t;

/* Walks batch headers from pos to the first error or the end, each step
 * read plainly and through one window: every step must agree (status,
 * fields), at most max_steps + 1 reads. Counts the headers that began inside the window but ended past
 * it (a refill mid-window). */
static void walk_both(const st_segment_t *s, uint64_t pos, st_hdr_win_t *w, walk_stats_t *ws, int max_steps) {
    st_hdr_win_reset(w);
    w->fills = 0;
    for (int k = 0; k <= max_steps; k++) {
        if (w->seg && pos >= w->pos && pos < w->pos + w->len && w->pos + w->len - pos < KP_BATCH_HEADER_BYTES &&
            pos + KP_BATCH_HEADER_BYTES <= s->size_bytes)
            ws->straddles++;
        kp_batch_t a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        int ra = st_seg_read_header(s, pos, &a);
        int rb = st_seg_read_header_win(s, pos, &b, w);
        if (ra != rb || (ra == KP_OK && !hdr_same(&a, &b)))
            ck_abort_msg("at %" PRIu64 " (size %" PRIu64 "): plain %d, window %d", pos, s->size_bytes, ra, rb);
        if (ra != KP_OK) break;
        ws->steps++;
        pos += a.size;
    }
    ws->fills += w->fills;
}

/* The windowed header walk (issue 19: one pread per 16 KiB of headers, not
 * per header) gives exactly the plain reads' results: headers split across
 * the window's end, batches larger than the window, every cut of a torn
 * tail (size known larger than the file, too), a corrupt header mid-window;
 * and st_seg_find agrees with a linear search for every offset. */
START_TEST(test_segment_header_window) {
    char *dir = tu_tmpdir();
    st_segment_t s;
    ck_assert_int_eq(st_seg_create(&s, dir, 0, 1 << 16, 0), KP_OK);
    size_t cap = 1 << 20, len = 0;
    uint8_t *file = malloc(cap);
    uint64_t starts[1024];
    int nb = 0;
    int64_t off = 0;
    uint8_t one[64 << 10];
    for (int i = 0; i < 420; i++) {
        /* mostly 1-3 records of 20-150 B; a 20 KiB and a 40 KiB batch (one
         * and more than two windows) in the middle */
        int n = 1 + i % 3;
        size_t vlen = 20 + (size_t)(i * 37) % 131;
        if (i == 150) { n = 100; vlen = 200; }
        if (i == 300) { n = 200; vlen = 200; }
        size_t bl = tu_batch(one, sizeof one, n, 1000 + i, (uint32_t)i, vlen);
        kp_batch_patch_base_offset(one, off);
        ck_assert_uint_le(len + bl, cap);
        memcpy(file + len, one, bl);
        starts[nb++] = len;
        len += bl;
        off += n;
    }
    ck_assert_int_eq(pwrite(s.log_fd, file, len, 0), (ssize_t)len);
    s.size_bytes = len;
    st_hdr_win_t *w = malloc(sizeof *w);
    walk_stats_t ws = { 0 };
    walk_both(&s, 0, w, &ws, INT32_MAX);
    ck_assert_int_eq(ws.steps, nb);
    /* ~80 KiB of headers-and-bodies: a handful of reads, not one per batch */
    ck_assert_msg(ws.fills * 20 <= (uint64_t)nb, "%" PRIu64 " preads for %d headers", ws.fills, nb);
    for (int i = 1; i < nb; i++) walk_both(&s, starts[i], w, &ws, 100);   /* past a window end from each */
    ck_assert_msg(ws.straddles > 0, "no header crossed a window's end");

    /* torn tails: every cut in the last three batches, and around the big
     * batches' ends; the size as known and the file agree, then the file
     * is shorter than the size the log believes */
    for (int mode = 0; mode < 2; mode++) {
        for (int bi = 0; bi < nb; bi++) {
            bool near_big = bi == 149 || bi == 150 || bi == 151 || bi == 299 || bi == 300 || bi == 301;
            if (bi < nb - 3 && !near_big) continue;
            uint64_t to = bi + 1 < nb ? starts[bi + 1] : len;
            /* every byte near a batch's ends, a sample in between; the
             * file only shrinks (mode 1 cuts from the end) */
            uint64_t cuts[2048];
            int nc = 0;
            for (uint64_t cut = starts[bi]; cut <= to; cut += cut - starts[bi] < 100 || to - cut < 100 ? 1 : 97) {
                if (nc >= 2048) ck_abort_msg("too many cuts");
                cuts[nc++] = cut;
            }
            for (int ci = 0; ci < nc; ci++) {
                uint64_t cut = cuts[mode == 0 ? ci : nc - 1 - ci];
                if (mode == 0) {
                    s.size_bytes = cut;
                } else {
                    ck_assert_int_eq(ftruncate(s.log_fd, (off_t)cut), 0);
                    s.size_bytes = len;
                }
                walk_both(&s, starts[bi > 2 ? bi - 3 : 0], w, &ws, 5);
                walk_both(&s, starts[bi], w, &ws, 5);
            }
            if (mode == 1) ck_assert_int_eq(pwrite(s.log_fd, file, len, 0), (ssize_t)len);
        }
    }
    s.size_bytes = len;

    /* garbage in a header the window holds: the same refusal */
    for (int bi = 5; bi < 12; bi++) {
        for (size_t at = 8; at < KP_BATCH_HEADER_BYTES; at += 4) {
            uint8_t save = file[starts[bi] + at];
            uint8_t bad = 0xff;
            ck_assert_int_eq(pwrite(s.log_fd, &bad, 1, (off_t)(starts[bi] + at)), 1);
            walk_both(&s, starts[3], w, &ws, 12);
            ck_assert_int_eq(pwrite(s.log_fd, &save, 1, (off_t)(starts[bi] + at)), 1);
        }
    }

    /* st_seg_find (windowed walk from the index entry) against a linear
     * search, with an offset index every 4 KiB */
    st_scan_result_t res;
    ck_assert_int_eq(st_seg_scan(&s, 0, true, false, 4096, &res), KP_OK);
    ck_assert_int_eq(res.status, KP_OK);
    ck_assert_uint_gt(s.oidx.count, 5);
    int bi = 0;
    int64_t base = 0;
    for (int64_t o = 0; o <= off; o++) {
        while (bi < nb) {
            kp_batch_t h;
            if (st_seg_read_header(&s, starts[bi], &h) != KP_OK) ck_abort_msg("header %d", bi);
            if (kp_batch_last_offset(&h) >= o) {
                base = h.base_offset;
                break;
            }
            bi++;
        }
        uint64_t pos;
        kp_batch_t h;
        int rc = st_seg_find(&s, o, &pos, &h);
        if (rc != KP_OK || pos != (bi < nb ? starts[bi] : len) || (bi < nb && h.base_offset != base))
            ck_abort_msg("find %" PRId64 ": rc %d, pos %" PRIu64 ", base %" PRId64, o, rc, pos, h.base_offset);
    }
    free(w);
    free(file);
    ck_assert_int_eq(st_seg_close(&s), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

static void *release_in_thread(void *arg) {
    st_fdref_release(arg);
    return NULL;
}

/* The refcounted segment descriptor: open while any reference is held,
 * closed by the last release whichever thread makes it (a network loop). */
START_TEST(test_fdref_last_release_closes) {
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    st_fdref_t *r = st_fdref_new(fd);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(st_fdref_fd(r), fd);
    enum { N = 8 };
    pthread_t th[N];
    for (int i = 0; i < N; i++) st_fdref_hold(r);
    st_fdref_release(r);   /* the owner's: N remain */
    ck_assert_int_ne(fcntl(fd, F_GETFD), -1);
    for (int i = 0; i < N - 1; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, release_in_thread, r), 0);
    for (int i = 0; i < N - 1; i++) ck_assert_int_eq(pthread_join(th[i], NULL), 0);
    ck_assert_int_ne(fcntl(fd, F_GETFD), -1);   /* one left */
    ck_assert_int_eq(pthread_create(&th[N - 1], NULL, release_in_thread, r), 0);
    ck_assert_int_eq(pthread_join(th[N - 1], NULL), 0);
    ck_assert_int_eq(fcntl(fd, F_GETFD), -1);    /* the last release closed it */
}
END_TEST

START_TEST(test_meta_properties_malformed) {
    char *dir = tu_tmpdir();
    char p[600];
    snprintf(p, sizeof p, "%s/meta.properties", dir);
    const char *bad[] = { "version=1\ncluster.id=abc\n", "version=1\nnode.id=3\n", "cluster.id=\nnode.id=3\n",
                          "cluster.id=a\nnode.id=x\n", "cluster.id=a\nnode.id=-1\n" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *f = fopen(p, "w");
        fputs(bad[i], f);
        fclose(f);
        char cid[32];
        int32_t node;
        ck_assert_msg(st_meta_read(dir, cid, sizeof cid, &node) == KP_ERR_CORRUPT, "accepted %s", bad[i]);
    }
    char big[64];
    memset(big, 'x', sizeof big);
    big[63] = 0;
    ck_assert_int_eq(st_meta_write(dir, big, 1), KP_OK);
    char small[8];
    int32_t node;
    ck_assert_int_eq(st_meta_read(dir, small, sizeof small, &node), KP_ERR_CORRUPT); /* does not fit: refused */
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_logdirs_pick_edges) {
    char *a = tu_tmpdir(), *b = tu_tmpdir();
    char p[600];
    snprintf(p, sizeof p, "%s/orders-0", a);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/not-a-partition-x", b);   /* ignored: no numeric suffix */
    ck_assert_int_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/other-3", b);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/other-4", b);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    const char *dirs[3] = { "/nonexistent/skiff", a, b };
    ck_assert_int_eq(st_logdirs_pick(dirs, 3), 1);
    ck_assert_int_eq(st_logdirs_pick(dirs, 1), -1);
    const char *two[2] = { b, a };
    ck_assert_int_eq(st_logdirs_pick(two, 2), 1);
    tu_rmrf(a);
    tu_rmrf(b);
    free(a);
    free(b);
}
END_TEST

int main(void) {
    tu_log_capture();
    Suite *s = suite_create("st_parts");
    TCase *tc = tcase_create("parts");
    tcase_add_test(tc, test_offset_index_lookups);
    tcase_add_test(tc, test_time_index_lookups);
    tcase_add_test(tc, test_segment_header_every_cut);
    tcase_add_test(tc, test_segment_header_window);
    tcase_add_test(tc, test_fdref_last_release_closes);
    tcase_add_test(tc, test_meta_properties_malformed);
    tcase_add_test(tc, test_logdirs_pick_edges);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
