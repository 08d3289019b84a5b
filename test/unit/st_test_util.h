/* st_test_util.h — helpers shared by the storage tests (header-only so that
 * nothing is linked into other modules' tests). */
#ifndef SKIFF_ST_TEST_UTIL_H
#define SKIFF_ST_TEST_UTIL_H

#include <check.h>
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/kp_batch.h"
#include "storage/st_io.h"
#include "storage/st_log.h"

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(p);
}

static inline void tu_rmrf(const char *dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static inline char *tu_tmpdir(void) {
    char *t = strdup("/tmp/st_test_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(t));
    return t;
}

/* Captured log lines, for tests that expect an operator message. */
static char tu_log_buf[16384];
static size_t tu_log_len;
static void tu_log_fn(void *ctx, st_log_level_t lvl, const char *msg) {
    (void)ctx;
    int n = snprintf(tu_log_buf + tu_log_len, sizeof tu_log_buf - tu_log_len, "%d %s\n", (int)lvl, msg);
    if (n > 0 && (size_t)n < sizeof tu_log_buf - tu_log_len) tu_log_len += (size_t)n;
    if (getenv("ST_TEST_VERBOSE")) fprintf(stderr, "log: %s\n", msg);
}
static inline void tu_log_capture(void) {
    st_io_set_sync(getenv("ST_TEST_FSYNC") != NULL); /* see st_io_set_sync */
    tu_log_len = 0;
    tu_log_buf[0] = 0;
    st_set_log_fn(tu_log_fn, NULL);
}

/* Builds a batch of n records (offset deltas 0..n-1) with opts `o` through
 * protocol's builder into out[0..cap) (writable: appends patch it); returns
 * its size. */
static inline size_t tu_build(uint8_t *out, size_t cap, const kp_batch_opts_t *o, const kp_record_in_t *recs, int n) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)64 << 20);
    kp_batch_builder_t bb;
    kp_batch_builder_init(&bb, o);
    for (int i = 0; i < n; i++) ck_assert_int_eq(kp_batch_builder_add(&bb, &recs[i]), KP_OK);
    const uint8_t *p;
    size_t len;
    ck_assert_int_eq(kp_batch_builder_finish(&bb, &a, &p, &len), KP_OK);
    kp_batch_builder_free(&bb);
    ck_assert_uint_le(len, cap);
    memcpy(out, p, len);
    kp_arena_free(&a);
    return len;
}

/* A COMMIT or ABORT marker of producer pid/epoch (coordinator epoch 9,
 * timestamp ts) into out[0..cap); returns its size. */
static inline size_t tu_marker(uint8_t *out, size_t cap, int64_t pid, int16_t epoch, bool commit, int64_t ts) {
    kp_arena_t a;
    kp_arena_init(&a, 1 << 20);
    const uint8_t *p;
    size_t len;
    ck_assert_int_eq(kp_batch_build_txn_marker(pid, epoch, commit, 9, ts, &a, &p, &len), KP_OK);
    ck_assert_uint_le(len, cap);
    memcpy(out, p, len);
    kp_arena_free(&a);
    return len;
}

/* Builds one uncompressed batch of n records: key "k<seed>-<i>", value of
 * vlen bytes derived from seed, timestamps ts.. ; offsets start at 0. */
static inline size_t tu_batch(uint8_t *out, size_t cap, int n, int64_t ts, uint32_t seed, size_t vlen) {
    kp_record_in_t recs[512];
    char keys[512][24];
    uint8_t *vals = malloc((size_t)n * (vlen ? vlen : 1));
    ck_assert_int_le(n, 512);
    for (int i = 0; i < n; i++) {
        int kl = snprintf(keys[i], sizeof keys[i], "k%05u-%03d", seed, i);
        for (size_t j = 0; j < vlen; j++) vals[(size_t)i * vlen + j] = (uint8_t)(seed * 31 + i * 7 + j);
        recs[i] = (kp_record_in_t){ .timestamp = ts + i, .key = { (const uint8_t *)keys[i], (size_t)kl },
                                    .value = { vals + (size_t)i * vlen, vlen } };
    }
    kp_batch_opts_t o = kp_batch_opts_default();
    size_t len = tu_build(out, cap, &o, recs, n);
    free(vals);
    return len;
}

static inline st_log_t *tu_open(const char *parent, const st_log_config_t *cfg, int64_t rp, bool clean) {
    st_log_open_opts_t o = { .recovery_point = rp, .log_start_offset = 0, .high_watermark = 0,
                             .clean_shutdown = clean, .create = true, .now_ms = 1000 };
    st_log_t *log = NULL;
    int rc = st_log_open(parent, "t", 0, cfg, &o, &log);
    ck_assert_msg(rc == KP_OK, "open: %s", st_status_str(rc));
    return log;
}

/* Calls fn(batch, ctx) on every batch readable from `from` (CRC checked),
 * in order; returns the offset after the last one. */
typedef void (*tu_batch_fn)(const kp_batch_t *b, void *ctx);
static inline int64_t tu_each_batch(st_log_t *log, int64_t from, tu_batch_fn fn, void *ctx) {
    size_t cap = 1 << 22;
    uint8_t *buf = malloc(cap);
    int64_t off = from;
    for (;;) {
        size_t len;
        int64_t next;
        int rc = st_log_read_copy(log, off, cap, -1, ST_READ_MIN_ONE, buf, cap, &len, &next);
        ck_assert_msg(rc == KP_OK, "read at %lld: %s", (long long)off, st_status_str(rc));
        if (len == 0) break;
        kp_rd_t r;
        kp_rd_init(&r, buf, len);
        while (kp_rd_remaining(&r)) {
            kp_batch_t b;
            ck_assert_int_eq(kp_batch_read(&r, &b), KP_OK);
            ck_assert_int_eq(kp_batch_verify_crc(&b), KP_OK);
            fn(&b, ctx);
        }
        ck_assert_int_gt(next, off);
        off = next;
    }
    free(buf);
    return off;
}

static inline void tu_count_batch(const kp_batch_t *b, void *ctx) {
    (void)b;
    (*(int *)ctx)++;
}

/* Walks every batch readable from `from`, checking CRCs; returns the count
 * and the offset after the last one. */
static inline int tu_scan(st_log_t *log, int64_t from, int64_t *end) {
    int n = 0;
    *end = tu_each_batch(log, from, tu_count_batch, &n);
    return n;
}

/* How many files in dir have a name ending with suffix (-1: no dir). */
static inline int tu_count_suffix(const char *dir, const char *suffix) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    size_t sl = strlen(suffix);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l > sl && strcmp(e->d_name + l - sl, suffix) == 0) n++;
    }
    closedir(d);
    return n;
}

static inline int tu_run(Suite *s) {
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

#endif
