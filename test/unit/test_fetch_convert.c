/* Unit tests for the copy path of Fetch below v10 as a pool job
 * (broker/api/fetch_convert_int.h): st_log_read's greedy prefix rule, the
 * zstd check and down-conversion, and the budget rule of fconv_run — the
 * exact read, a prefix when the real total is larger than assumed, a stop
 * (new round) when it is smaller, read failures, oversize batches, the
 * answer budget, and the job's descriptors closed. Batches are written to a
 * temp file and read back through the job's own pread, as in the node. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/api/fetch_convert_int.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_compress.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_msgset.h"

static kp_arena_t arena;
static void setup(void) { kp_arena_init(&arena, (size_t)64 << 20); }
static void teardown(void) { kp_arena_free(&arena); }

/* One v2 batch of n records at base offset `base` (values "v<base+i>" padded
 * to vlen), codec c; *len its size. In the arena. */
static const uint8_t *batch(int64_t base, int n, size_t vlen, kp_codec_t c, size_t *len) {
    kp_batch_opts_t o = kp_batch_opts_default();
    o.codec = c;
    o.base_offset = base;
    kp_batch_builder_t bb;
    kp_batch_builder_init(&bb, &o);
    char v[4096];
    ck_assert_uint_lt(vlen, sizeof v);
    for (int i = 0; i < n; i++) {
        memset(v, 'a' + i % 26, vlen);
        int k = snprintf(v, sizeof v, "v%lld", (long long)(base + i));
        if ((size_t)k < vlen) v[k] = '-';
        kp_record_in_t r = { 1000 + i, kp_slice_null(), { (const uint8_t *)v, vlen }, NULL, 0 };
        ck_assert_int_eq(kp_batch_builder_add(&bb, &r), KP_OK);
    }
    const uint8_t *out;
    ck_assert_int_eq(kp_batch_builder_finish(&bb, &arena, &out, len), KP_OK);
    kp_batch_builder_free(&bb);
    return out;
}

/* A file of batches: append, then ranges of it. */
typedef struct {
    int fd;
    uint64_t size;
} tfile_t;

static tfile_t tfile(void) {
    char path[] = "/tmp/test_fetch_convert.XXXXXX";
    tfile_t f = { mkstemp(path), 0 };
    ck_assert_int_ge(f.fd, 0);
    unlink(path);
    return f;
}

static uint64_t put(tfile_t *f, const uint8_t *p, size_t n) {
    uint64_t at = f->size;
    ck_assert_int_eq(pwrite(f->fd, p, n, (off_t)at), (ssize_t)n);
    f->size += n;
    return at;
}

/* Marks p as read by the loop: one range [pos, pos+len) of f, a dup()ed fd. */
static void plan(fconv_part_t *p, tfile_t *f, uint64_t pos, uint64_t len, uint64_t part_max, uint64_t spec) {
    p->wants = true;
    p->read = true;
    p->part_max = part_max;
    p->spec_total = spec;
    p->total = len;
    p->nranges = 1;
    p->fd[0] = dup(f->fd);
    ck_assert_int_ge(p->fd[0], 0);
    p->fds_owned = true;
    p->pos[0] = pos;
    p->len[0] = len;
}

START_TEST(test_prefix_is_st_log_read_rule) {
    size_t a, b, c;
    const uint8_t *x = batch(0, 3, 100, KP_CODEC_NONE, &a);
    const uint8_t *y = batch(3, 3, 100, KP_CODEC_NONE, &b);
    const uint8_t *z = batch(6, 3, 100, KP_CODEC_NONE, &c);
    uint8_t buf[4096];
    memcpy(buf, x, a);
    memcpy(buf + a, y, b);
    memcpy(buf + a + b, z, c);
    size_t all = a + b + c;
    ck_assert_int_eq(fconv_prefix(buf, all, all, 0), (long long)all);
    ck_assert_int_eq(fconv_prefix(buf, all, all - 1, 0), (long long)(a + b));
    ck_assert_int_eq(fconv_prefix(buf, all, a + b, 0), (long long)(a + b));
    ck_assert_int_eq(fconv_prefix(buf, all, a, 0), (long long)a);
    ck_assert_int_eq(fconv_prefix(buf, all, a - 1, 0), 0);
    /* KIP-74: the first batch even when larger, only the first */
    ck_assert_int_eq(fconv_prefix(buf, all, 1, ST_READ_MIN_ONE), (long long)a);
    ck_assert_int_eq(fconv_prefix(buf, all, 0, ST_READ_MIN_ONE), (long long)a);
    ck_assert_int_eq(fconv_prefix(buf, all, a + 1, ST_READ_MIN_ONE), (long long)a);
    ck_assert_int_eq(fconv_prefix(buf, 0, 100, ST_READ_MIN_ONE), 0);
    /* a header that does not parse: unknown, the caller reads again */
    buf[a + 16] = 1;   /* the second batch's magic */
    ck_assert_int_eq(fconv_prefix(buf, all, all, 0), -1);
    /* as st_log_read, the header of the batch that ends the read is parsed */
    ck_assert_int_eq(fconv_prefix(buf, all, a, 0), -1);
    ck_assert_int_eq(fconv_prefix(buf, a, a, 0), (long long)a);
}
END_TEST

START_TEST(test_cap_rule) {
    ck_assert_uint_eq(fconv_cap(0), FCONV_COPY_MIN_BYTES);
    ck_assert_uint_eq(fconv_cap(100), FCONV_COPY_MIN_BYTES);
    ck_assert_uint_eq(fconv_cap(5000), 5000);
    ck_assert_uint_eq(fconv_cap((uint64_t)1 << 40), FCONV_COPY_CAP_BYTES);
}
END_TEST

/* conversion of buf: a malloc'd copy the call takes */
static void convert(int16_t v, const uint8_t *src, size_t len, fconv_part_t *p) {
    memset(p, 0, sizeof *p);
    uint8_t *buf = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(buf);
    memcpy(buf, src, len);
    fconv_convert(v, buf, len, p);
}

START_TEST(test_convert_zstd_and_down_conversion) {
    size_t a, z, l;
    const uint8_t *plain = batch(0, 4, 50, KP_CODEC_NONE, &a);
    const uint8_t *zs = batch(4, 4, 50, KP_CODEC_ZSTD, &z);
    const uint8_t *lz = batch(8, 4, 500, KP_CODEC_LZ4, &l);
    uint8_t buf[8192];
    fconv_part_t p;
    /* v4-9: bytes as stored, up to a zstd batch; zstd first refused */
    memcpy(buf, plain, a);
    memcpy(buf + a, zs, z);
    convert(9, buf, a + z, &p);
    ck_assert_int_eq(p.error, 0);
    ck_assert_uint_eq(p.bytes_len, a);
    ck_assert_uint_eq(p.sent, a);
    ck_assert_mem_eq(p.bytes, plain, a);
    free(p.mem);
    convert(4, zs, z, &p);
    ck_assert_int_eq(p.error, KP_ERROR_UNSUPPORTED_COMPRESSION_TYPE);
    ck_assert_ptr_null(p.bytes);
    ck_assert_uint_eq(p.sent, 0);
    free(p.mem);
    /* v0-3: each batch decompressed and converted, as kp_batch_to_msgset does it */
    for (int16_t v = 0; v < 4; v++) {
        convert(v, lz, l, &p);
        ck_assert_int_eq(p.error, 0);
        kp_rd_t r;
        kp_batch_t b;
        kp_rd_init(&r, lz, l);
        ck_assert_int_eq(kp_batch_read(&r, &b), KP_OK);
        const uint8_t *recs, *ms;
        size_t rlen, mlen;
        ck_assert_int_eq(kp_batch_records(&b, &arena, FCONV_COPY_CAP_BYTES, &recs, &rlen), KP_OK);
        ck_assert_int_eq(kp_batch_to_msgset(&b, recs, rlen, v >= 2 ? 1 : 0, &arena, &ms, &mlen), KP_OK);
        ck_assert_uint_eq(p.bytes_len, mlen);
        ck_assert_mem_eq(p.bytes, ms, mlen);
        ck_assert_uint_gt(p.sent, l);   /* uncompressed: larger than the lz4 batch */
        free(p.mem);
    }
    /* v3: lz4, then zstd: the converted lz4 batch alone */
    memcpy(buf, lz, l);
    memcpy(buf + l, zs, z);
    convert(3, buf, l + z, &p);
    ck_assert_int_eq(p.error, 0);
    ck_assert_uint_gt(p.bytes_len, 0);
    free(p.mem);
    /* a damaged batch: CORRUPT_MESSAGE, no records */
    memcpy(buf, plain, a);
    buf[16] = 7;
    convert(9, buf, a, &p);
    ck_assert_int_eq(p.error, KP_ERROR_CORRUPT_MESSAGE);
    ck_assert_ptr_null(p.bytes);
    ck_assert_uint_eq(p.sent, 0);
    free(p.mem);
    /* nothing read: no error, empty */
    convert(2, buf, 0, &p);
    ck_assert_int_eq(p.error, 0);
    ck_assert_uint_eq(p.bytes_len, 0);
    free(p.mem);
}
END_TEST

static bool fd_open(int fd) { return fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

/* The records p answers, from memory or from its file ranges (what the
 * answer splices), into out (cap bytes); their length. */
static size_t answered(const fconv_part_t *p, uint8_t *out, size_t cap) {
    if (p->ext.n == 0) {
        ck_assert_uint_le(p->bytes_len, cap);
        if (p->bytes_len) memcpy(out, p->bytes, p->bytes_len);
        return p->bytes_len;
    }
    ck_assert_ptr_null(p->bytes);
    ck_assert_uint_eq(p->ext.total_bytes, p->bytes_len);
    size_t got = 0;
    for (int i = 0; i < p->ext.n; i++) {
        ck_assert_uint_le(got + p->ext.r[i].len, cap);
        ck_assert_int_eq(pread(p->ext.r[i].fd, out + got, p->ext.r[i].len, (off_t)p->ext.r[i].pos), (ssize_t)p->ext.r[i].len);
        got += p->ext.r[i].len;
    }
    ck_assert_uint_eq(got, p->bytes_len);
    return got;
}

START_TEST(test_run_exact_prefix_and_stop) {
    tfile_t f = tfile();
    size_t a, b, c, z;
    const uint8_t *x = batch(0, 4, 300, KP_CODEC_NONE, &a);
    const uint8_t *y = batch(4, 4, 300, KP_CODEC_NONE, &b);
    const uint8_t *w = batch(8, 4, 300, KP_CODEC_NONE, &c);
    const uint8_t *zs = batch(0, 4, 300, KP_CODEC_ZSTD, &z);
    uint64_t px = put(&f, x, a), py = put(&f, y, b), pw = put(&f, w, c), pz = put(&f, zs, z);
    (void)py;
    (void)pw;

    /* v9, real == assumed everywhere: every read used whole */
    fconv_t *k = fconv_new(9, 1 << 20, 2);
    plan(&k->parts[0], &f, px, a + b, 1 << 20, 0);
    plan(&k->parts[1], &f, px, a + b + c, 1 << 20, a + b);
    int fd0 = k->parts[0].fd[0], fd1 = k->parts[1].fd[0];
    ck_assert_int_eq(fconv_run(k), KP_OK);
    ck_assert_uint_eq(k->next, 2);
    ck_assert(k->parts[0].decided && k->parts[1].decided);
    ck_assert_uint_eq(k->parts[0].bytes_len, a + b);
    ck_assert_uint_eq(k->parts[1].bytes_len, a + b + c);
    ck_assert_uint_eq(k->total, 2 * (a + b) + c);
    ck_assert_uint_eq(k->sets_read, 2);
    /* v4-9: answered as the ranges themselves, whose dup()s stay open for
     * the answer until fconv_free */
    uint8_t got[8192], all[8192];
    memcpy(all, x, a);
    memcpy(all + a, y, b);
    memcpy(all + a + b, w, c);
    ck_assert_int_eq(k->parts[1].ext.n, 1);
    ck_assert_uint_eq(answered(&k->parts[1], got, sizeof got), a + b + c);
    ck_assert_mem_eq(got, all, a + b + c);
    ck_assert(fd_open(fd0) && fd_open(fd1));
    fconv_free(k);
    ck_assert(!fd_open(fd0) && !fd_open(fd1));   /* closed with the context */

    /* v2: the first partition grows by its conversion, so the second has
     * less room than assumed: a prefix of what the loop read */
    uint64_t max_total = a + b + c + 200;
    k = fconv_new(2, max_total, 2);
    plan(&k->parts[0], &f, px, a, 1 << 20, 0);
    plan(&k->parts[1], &f, px, a + b + c, 1 << 20, a);
    ck_assert_int_eq(fconv_run(k), KP_OK);
    ck_assert_uint_eq(k->next, 2);
    uint64_t first = k->parts[0].sent;
    ck_assert_uint_gt(first, a);
    /* v0-3: the converted sets in a memfd the answer splices */
    ck_assert_int_eq(k->parts[0].ext.n, 1);
    ck_assert_int_ge(k->parts[0].out_fd, 0);
    /* what st_log_read would give with the real room, converted */
    long long want = fconv_prefix(all, a + b + c, max_total - first, 0);
    ck_assert_int_lt(want, (long long)(a + b + c));
    fconv_part_t ref;
    convert(2, all, (size_t)want, &ref);
    ck_assert_uint_eq(answered(&k->parts[1], got, sizeof got), ref.bytes_len);
    if (ref.bytes_len) ck_assert_mem_eq(got, ref.bytes, ref.bytes_len);
    free(ref.mem);
    fconv_free(k);

    /* v4: a zstd-first partition answers nothing, so the next one may take
     * more than it was read for: the job stops there (a new round) */
    k = fconv_new(4, 1 << 20, 3);
    plan(&k->parts[0], &f, pz, z, 1 << 20, 0);
    plan(&k->parts[1], &f, px, a, a, z);
    plan(&k->parts[2], &f, px, a, a, z + a);
    int fd2 = k->parts[2].fd[0];
    ck_assert_int_eq(fconv_run(k), KP_OK);
    ck_assert_uint_eq(k->next, 1);
    ck_assert(k->parts[0].decided && !k->parts[1].decided && !k->parts[2].decided);
    ck_assert_int_eq(k->parts[0].error, KP_ERROR_UNSUPPORTED_COMPRESSION_TYPE);
    ck_assert_uint_eq(k->total, 0);
    ck_assert(!fd_open(fd2));   /* unread ranges' dup()s closed too */
    /* the loop's next round, now with the real total: exact */
    fconv_part_reset(&k->parts[1]);
    fconv_part_reset(&k->parts[2]);
    plan(&k->parts[1], &f, px, a, a, 0);
    plan(&k->parts[2], &f, px, a, a, a);
    ck_assert_int_eq(fconv_run(k), KP_OK);
    ck_assert_uint_eq(k->next, 3);
    ck_assert_uint_eq(answered(&k->parts[1], got, sizeof got), a);
    ck_assert_mem_eq(got, x, a);
    ck_assert_uint_eq(k->total, 2 * a);
    fconv_free(k);

    /* two ranges (two segments), a zstd batch in the second: the ranges
     * answered end right before it */
    uint64_t p2 = put(&f, y, b);
    (void)put(&f, zs, z);
    k = fconv_new(6, 1 << 20, 1);
    fconv_part_t *q = &k->parts[0];
    plan(q, &f, px, a, 1 << 20, 0);
    q->nranges = 2;
    q->fd[1] = dup(f.fd);
    q->pos[1] = p2;
    q->len[1] = b + z;
    q->total = a + b + z;
    ck_assert_int_eq(fconv_run(k), KP_OK);
    ck_assert_int_eq(q->error, 0);
    ck_assert_int_eq(q->ext.n, 2);
    ck_assert_uint_eq(q->ext.r[0].len, a);
    ck_assert_uint_eq(q->ext.r[1].pos, p2);
    ck_assert_uint_eq(q->ext.r[1].len, b);
    ck_assert_uint_eq(answered(q, got, sizeof got), a + b);
    ck_assert_mem_eq(got, all, a + b);
    fconv_free(k);
    close(f.fd);
}
END_TEST

START_TEST(test_run_failures_oversize_and_budget) {
    tfile_t f = tfile();
    size_t a;
    const uint8_t *x = batch(0, 4, 300, KP_CODEC_NONE, &a);
    uint64_t px = put(&f, x, a);
    fconv_t *k = fconv_new(5, a, 6);
    /* 0: not asked (error / nothing below the bound): decided, nothing */
    /* 1: the read failed on the loop, exact: KAFKA_STORAGE_ERROR */
    k->parts[1].wants = true;
    k->parts[1].read_failed = true;
    /* 2: one batch larger than the copy cap with MIN_ONE (total 0): error */
    k->parts[2].wants = true;
    k->parts[2].read = true;
    k->parts[2].oversize = true;
    /* 3: a range the file does not hold (truncated meanwhile): exact, error */
    plan(&k->parts[3], &f, px + a, 100, 1 << 20, 0);
    /* 4: exact, the batch */
    plan(&k->parts[4], &f, px, a, 1 << 20, 0);
    /* 5: the budget is spent: decided, nothing */
    k->parts[5].wants = true;
    k->parts[5].spec_total = a;
    ck_assert_int_eq(fconv_run(k), KP_OK);
    ck_assert_uint_eq(k->next, 6);
    ck_assert(k->parts[0].decided && k->parts[0].error == 0 && !k->parts[0].bytes);
    ck_assert_int_eq(k->parts[1].error, KP_ERROR_KAFKA_STORAGE_ERROR);
    ck_assert_int_eq(k->parts[2].error, KP_ERROR_KAFKA_STORAGE_ERROR);
    ck_assert_int_eq(k->parts[3].error, KP_ERROR_KAFKA_STORAGE_ERROR);
    ck_assert_int_eq(k->parts[4].error, 0);
    ck_assert_uint_eq(k->parts[4].bytes_len, a);
    ck_assert(k->parts[5].decided && !k->parts[5].bytes);
    ck_assert_uint_eq(k->total, a);
    fconv_free(k);

    /* the same failures when the real total is above the assumed one: an
     * oversize batch without MIN_ONE is nothing; a failed read or pread
     * cannot tell what the smaller read would have held: a new round */
    k = fconv_new(5, 1 << 20, 4);
    plan(&k->parts[0], &f, px, a, 1 << 20, 0);
    k->parts[1] = (fconv_part_t){ .wants = true, .read = true, .oversize = true, .part_max = 1 << 20, .spec_total = 0,
                                  .fd = { -1, -1 }, .out_fd = -1 };
    k->parts[2] = (fconv_part_t){ .wants = true, .read_failed = true, .part_max = 1 << 20, .spec_total = 0,
                                  .fd = { -1, -1 }, .out_fd = -1 };
    ck_assert_int_eq(fconv_run(k), KP_OK);
    ck_assert_uint_eq(k->next, 2);
    ck_assert(k->parts[1].decided && k->parts[1].error == 0 && !k->parts[1].bytes);
    ck_assert(!k->parts[2].decided);
    fconv_free(k);

    /* inline (the log's own fds, not dup()ed): v4-9 records stay in memory,
     * the fd is left open; v0-3 still go to a memfd */
    for (int16_t v = 3; v <= 4; v++) {
        k = fconv_new(v, 1 << 20, 1);
        plan(&k->parts[0], &f, px, a, 1 << 20, 0);
        int own = k->parts[0].fd[0];
        k->parts[0].fds_owned = false;
        ck_assert_int_eq(fconv_run(k), KP_OK);
        ck_assert_int_eq(k->parts[0].ext.n, v >= 4 ? 0 : 1);
        ck_assert(v < 4 ? k->parts[0].bytes == NULL : k->parts[0].bytes != NULL);
        ck_assert(fd_open(own));
        fconv_free(k);
        ck_assert(fd_open(own));
        close(own);
    }
    close(f.fd);
}
END_TEST

int main(void) {
    Suite *s = suite_create("fetch_convert");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_prefix_is_st_log_read_rule);
    tcase_add_test(tc, test_cap_rule);
    tcase_add_test(tc, test_convert_zstd_and_down_conversion);
    tcase_add_test(tc, test_run_exact_prefix_and_stop);
    tcase_add_test(tc, test_run_failures_oversize_and_budget);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
