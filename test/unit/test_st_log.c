/* Unit tests for the partition log: append, read, roll, indexes at segment
 * edges, truncation, reopen, timestamps, retention. */
#include "test/unit/st_test_util.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "storage/st_checkpoint.h"

static int32_t g_epoch = 3;

static st_log_config_t small_cfg(void) {
    st_log_config_t c;
    st_log_config_default(&c);
    c.segment_bytes = 4096;
    c.index_interval_bytes = 300;
    c.index_max_bytes = 4096;
    return c;
}

/* Appends n batches of `recs` records; stores each batch's base offset. */
static void append_n(st_log_t *log, int n, int recs, int64_t ts0, int64_t *bases) {
    uint8_t buf[65536];
    for (int i = 0; i < n; i++) {
        size_t len = tu_batch(buf, sizeof buf, recs, ts0 + i * 10, (uint32_t)i, 20);
        st_append_info_t info;
        int64_t leo = st_log_end_offset(log);
        ck_assert_int_eq(st_log_append(log, buf, len, 3, 5000, &info), KP_OK);
        ck_assert_int_eq(info.base_offset, leo);
        ck_assert_int_eq(info.last_offset, leo + recs - 1);
        ck_assert_int_eq(st_log_end_offset(log), leo + recs);
        if (bases) bases[i] = info.base_offset;
    }
}

/* Reads the batch holding offset o and checks it is the one expected. */
static void expect_batch_at(st_log_t *log, int64_t o, int64_t want_base, int recs) {
    uint8_t buf[65536];
    size_t len;
    int64_t next;
    ck_assert_int_eq(st_log_read_copy(log, o, 1, -1, ST_READ_MIN_ONE, buf, sizeof buf, &len, &next), KP_OK);
    kp_rd_t r;
    kp_rd_init(&r, buf, len);
    kp_batch_t b;
    ck_assert_int_eq(kp_batch_read(&r, &b), KP_OK);
    ck_assert_int_eq(kp_batch_verify_crc(&b), KP_OK);
    ck_assert_int_eq(b.base_offset, want_base);
    ck_assert_int_eq(b.records_count, recs);
    ck_assert_int_eq(b.partition_leader_epoch, g_epoch);
    ck_assert_int_eq(next, want_base + recs);
    ck_assert_uint_eq(kp_rd_remaining(&r), 0);
}

/* st_log_scan: every batch exactly once, in order, in whole-batch chunks;
 * the buffer grows for a batch larger than it, and is refused beyond max. */
typedef struct { int64_t next; int batches; int calls; int stop_after; } scan_seen_t;

static int scan_cb(void *ctx, const uint8_t *chunk, size_t len) {
    scan_seen_t *s = ctx;
    s->calls++;
    kp_rd_t r;
    kp_rd_init(&r, chunk, len);
    while (kp_rd_remaining(&r) > 0) {
        kp_batch_t b;
        ck_assert_int_eq(kp_batch_read(&r, &b), KP_OK);
        ck_assert_int_eq(b.base_offset, s->next);
        s->next = b.base_offset + b.records_count;
        s->batches++;
    }
    return s->calls == s->stop_after ? KP_ERR_BAD_VALUE : KP_OK;
}

/* st_log_scan_batches: one call per batch, in offset order; the
 * callback's error stops the walk and is returned. */
static int batch_cb(void *ctx, const kp_batch_t *b) {
    scan_seen_t *s = ctx;
    ck_assert_int_eq(b->base_offset, s->next);
    s->next = b->base_offset + b->records_count;
    s->batches++;
    return s->batches == s->stop_after ? KP_ERR_BAD_VALUE : KP_OK;
}

START_TEST(test_scan_batches_one_call_each) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    append_n(log, 40, 3, 100, NULL);
    scan_seen_t s = { 0, 0, 0, -1 };
    ck_assert_int_eq(st_log_scan_batches(log, 1024, 1 << 20, batch_cb, &s), KP_OK);
    ck_assert_int_eq(s.batches, 40);
    ck_assert_int_eq(s.next, st_log_end_offset(log));
    scan_seen_t e = { 0, 0, 0, 7 };
    ck_assert_int_eq(st_log_scan_batches(log, 1024, 1 << 20, batch_cb, &e), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(e.batches, 7);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_scan_whole_log_in_chunks) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    append_n(log, 40, 3, 100, NULL);
    scan_seen_t s = { 0, 0, 0, -1 };
    ck_assert_int_eq(st_log_scan(log, 1024, 1 << 20, scan_cb, &s), KP_OK);
    ck_assert_int_eq(s.next, st_log_end_offset(log));
    ck_assert_int_eq(s.batches, 40);
    ck_assert_int_gt(s.calls, 1);                 /* 1 KiB chunks: several */
    /* a start buffer smaller than one batch grows (up to max) */
    scan_seen_t g = { 0, 0, 0, -1 };
    ck_assert_int_eq(st_log_scan(log, 16, 1 << 20, scan_cb, &g), KP_OK);
    ck_assert_int_eq(g.batches, 40);
    /* ... but never beyond max */
    scan_seen_t t = { 0, 0, 0, -1 };
    ck_assert_int_eq(st_log_scan(log, 16, 32, scan_cb, &t), KP_ERR_TOO_LARGE);
    ck_assert_int_eq(t.batches, 0);
    /* the callback's error stops the scan and is returned */
    scan_seen_t e = { 0, 0, 0, 2 };
    ck_assert_int_eq(st_log_scan(log, 1024, 1 << 20, scan_cb, &e), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(e.calls, 2);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_append_read_every_offset) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    int64_t bases[60];
    append_n(log, 60, 3, 100, bases);
    ck_assert_int_ge(st_log_segment_count(log), 3); /* rolled at 4 KiB */
    for (int i = 0; i < 60; i++)
        for (int k = 0; k < 3; k++) expect_batch_at(log, bases[i] + k, bases[i], 3);
    int64_t end;
    ck_assert_int_eq(tu_scan(log, 0, &end), 60);
    ck_assert_int_eq(end, 180);
    /* at LEO: nothing; beyond: out of range */
    st_read_result_t rr;
    ck_assert_int_eq(st_log_read(log, 180, 1000, -1, 0, &rr), KP_OK);
    ck_assert_int_eq(rr.n, 0);
    ck_assert_int_eq(st_log_read(log, 181, 1000, -1, 0, &rr), ST_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_segment_edges_and_reopen) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    int64_t bases[80];
    append_n(log, 80, 2, 100, bases);
    size_t nseg = st_log_segment_count(log);
    st_log_offsets_t fin;
    ck_assert_int_eq(st_log_close(log, &fin), KP_OK);
    ck_assert_int_eq(fin.log_end_offset, 160);
    ck_assert_int_eq(fin.recovery_point, 160);
    for (int pass = 0; pass < 2; pass++) {
        /* clean then unclean reopen: both must agree with what was written */
        log = tu_open(dir, &cfg, pass ? 0 : 160, pass == 0);
        ck_assert_uint_eq(st_log_segment_count(log), nseg);
        ck_assert_int_eq(st_log_end_offset(log), 160);
        for (int i = 0; i < 80; i++) {
            expect_batch_at(log, bases[i], bases[i], 2);
            expect_batch_at(log, bases[i] + 1, bases[i], 2);
        }
        /* the active segment's base and the one before it */
        int64_t ab = st_log_active_base_offset(log);
        expect_batch_at(log, ab, ab, 2);
        expect_batch_at(log, ab - 1, ab - 2, 2);
        append_n(log, 1, 2, 5000, NULL);
        ck_assert_int_eq(st_log_truncate_to(log, 160), KP_OK);
        ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    }
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_max_bytes_min_one_and_end_offset) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg;
    st_log_config_default(&cfg);
    cfg.index_interval_bytes = 100;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    append_n(log, 20, 4, 100, NULL);
    uint8_t one[4096];
    size_t bsz = tu_batch(one, sizeof one, 4, 0, 0, 20);
    st_read_result_t rr;
    ck_assert_int_eq(st_log_read(log, 0, bsz - 1, -1, 0, &rr), KP_OK);
    ck_assert_int_eq(rr.n, 0);
    ck_assert_int_eq(st_log_read(log, 0, bsz - 1, -1, ST_READ_MIN_ONE, &rr), KP_OK);
    ck_assert_int_eq(rr.n, 1);
    ck_assert_uint_eq(rr.total_bytes, bsz);
    ck_assert_int_eq(rr.next_offset, 4);
    /* 5.5 batches worth: exactly 5 whole batches */
    ck_assert_int_eq(st_log_read(log, 5, bsz * 5 + bsz / 2, -1, 0, &rr), KP_OK);
    ck_assert_uint_eq(rr.total_bytes, bsz * 5);
    ck_assert_int_eq(rr.first_offset, 4);
    ck_assert_int_eq(rr.next_offset, 24);
    ck_assert_uint_eq(rr.r[0].pos, bsz);
    /* HW-limited: only batches whose last offset < 10 */
    ck_assert_int_eq(st_log_read(log, 0, 1 << 20, 10, 0, &rr), KP_OK);
    ck_assert_int_eq(rr.next_offset, 8);
    ck_assert_uint_eq(rr.total_bytes, 2 * bsz);
    /* every (offset, max_bytes) pair: whole batches, boundaries agree */
    for (int64_t o = 0; o < 80; o += 3)
        for (uint64_t mb = 1; mb < bsz * 7; mb += 97) {
            ck_assert_int_eq(st_log_read(log, o, mb, -1, 0, &rr), KP_OK);
            ck_assert_uint_eq(rr.total_bytes % bsz, 0);
            ck_assert_uint_le(rr.total_bytes, mb);
            if (rr.n) ck_assert_int_eq(rr.next_offset, rr.first_offset + (int64_t)(rr.total_bytes / bsz) * 4);
        }
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_truncate_edges) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    int64_t targets[] = { 0, 1, 2, 37, 38, 39, 100, 119 };
    for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
        st_log_t *log = tu_open(dir, &cfg, 0, false);
        int64_t bases[60];
        append_n(log, 60, 2, 100, bases);
        int64_t target = targets[t];
        ck_assert_int_eq(st_log_truncate_to(log, target), KP_OK);
        int64_t want = target - target % 2; /* inside a batch: the whole batch goes */
        ck_assert_int_eq(st_log_end_offset(log), want);
        int64_t end;
        ck_assert_int_eq(tu_scan(log, 0, &end), (int)(want / 2));
        ck_assert_int_eq(end, want);
        /* appends continue at the new end and indexes still agree */
        append_n(log, 10, 2, 9000, NULL);
        for (int64_t o = 0; o < want + 20; o++) expect_batch_at(log, o, o - o % 2, 2);
        ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
        log = tu_open(dir, &cfg, 0, false);
        ck_assert_int_eq(st_log_end_offset(log), want + 20);
        for (int64_t o = 0; o < want + 20; o++) expect_batch_at(log, o, o - o % 2, 2);
        ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
        tu_rmrf(dir);
        ck_assert_int_eq(mkdir(dir, 0700), 0);
    }
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_log_append_time_and_timestamps) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    cfg.log_append_time = true;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    uint8_t buf[4096];
    size_t len = tu_batch(buf, sizeof buf, 5, 100, 1, 10);
    st_append_info_t info;
    ck_assert_int_eq(st_log_append(log, buf, len, 0, 777777, &info), KP_OK);
    ck_assert_int_eq(info.log_append_time_ms, 777777);
    kp_rd_t r;
    kp_rd_init(&r, buf, len);
    kp_batch_t b;
    ck_assert_int_eq(kp_batch_read(&r, &b), KP_OK);
    ck_assert_int_eq(kp_batch_verify_crc(&b), KP_OK);
    ck_assert(b.attributes & KP_BATCH_TIMESTAMP_LOG_APPEND);
    ck_assert_int_eq(b.max_timestamp, 777777);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);

    /* CreateTime: time index lookups across segments */
    cfg.log_append_time = false;
    log = tu_open(dir, &cfg, 0, false);
    append_n(log, 50, 3, 1000, NULL); /* batch i: ts 1000+10i .. +2 */
    for (int i = 0; i < 50; i++) {
        int64_t off, ts;
        ck_assert_int_eq(st_log_offset_for_time(log, 1000 + i * 10, &off, &ts), KP_OK);
        ck_assert_int_eq(off, i * 3);
        ck_assert_int_eq(st_log_offset_for_time(log, 1000 + i * 10 + 2, &off, &ts), KP_OK);
        ck_assert_int_eq(off, i * 3 + 2);
        ck_assert_int_eq(ts, 1000 + i * 10 + 2);
    }
    int64_t off, ts;
    ck_assert_int_eq(st_log_offset_for_time(log, 999999, &off, &ts), ST_ERR_NOT_FOUND);
    ck_assert_int_eq(st_log_max_timestamp(log, &ts, &off), KP_OK);
    ck_assert_int_eq(ts, 1000 + 49 * 10 + 2);
    ck_assert_int_eq(off, 49 * 3 + 2); /* the record holding the max, not its batch */
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    log = tu_open(dir, &cfg, 150, true);
    ck_assert_int_eq(st_log_max_timestamp(log, &ts, &off), KP_OK);
    ck_assert_int_eq(ts, 1000 + 49 * 10 + 2);
    ck_assert_int_eq(st_log_offset_for_time(log, 1000 + 250, &off, &ts), KP_OK);
    ck_assert_int_eq(off, 75);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_replica_append_keeps_offsets) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    uint8_t buf[4096];
    size_t len = tu_batch(buf, sizeof buf, 3, 100, 1, 10);
    kp_batch_patch_base_offset(buf, 10); /* a compacted leader: gap from 0 */
    kp_batch_patch_leader_epoch(buf, 7);
    st_append_info_t info;
    ck_assert_int_eq(st_log_append_replica(log, buf, len, 0, &info), KP_OK);
    ck_assert_int_eq(info.base_offset, 10);
    ck_assert_int_eq(st_log_end_offset(log), 13);
    kp_batch_patch_base_offset(buf, 12); /* overlaps: refused */
    ck_assert_int_eq(st_log_append_replica(log, buf, len, 0, &info), ST_ERR_BAD_OFFSET);
    ck_assert_int_eq(st_log_end_offset(log), 13);
    kp_batch_patch_base_offset(buf, 13);
    ck_assert_int_eq(st_log_append_replica(log, buf, len, 0, &info), KP_OK);
    int32_t ep;
    int64_t eo;
    st_log_end_offset_for_epoch(log, 7, &ep, &eo);
    ck_assert_int_eq(ep, 7);
    ck_assert_int_eq(eo, 16);
    g_epoch = 7;
    expect_batch_at(log, 5, 10, 3); /* the gap reads the next batch */
    g_epoch = 3;
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_bad_batches_refused) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    uint8_t buf[4096], copy[4096];
    size_t len = tu_batch(buf, sizeof buf, 3, 100, 1, 10);
    st_append_info_t info;
    for (size_t cut = 0; cut < len; cut++) {
        memcpy(copy, buf, len);
        ck_assert_int_ne(st_log_append(log, copy, cut, 0, 0, &info), KP_OK);
    }
    for (size_t i = 16; i < len; i += 3) { /* any flipped byte past the epoch */
        memcpy(copy, buf, len);
        copy[i] ^= 0x40;
        ck_assert_int_ne(st_log_append(log, copy, len, 0, 0, &info), KP_OK);
    }
    ck_assert_int_eq(st_log_end_offset(log), 0);
    ck_assert_uint_eq(st_log_size_bytes(log), 0);
    /* the pre-verified entry still refuses structural damage at every cut */
    for (size_t cut = 0; cut < len; cut++) {
        memcpy(copy, buf, len);
        ck_assert_int_ne(st_log_append_verified(log, copy, cut, 0, 0, &info), KP_OK);
    }
    memcpy(copy, buf, len);
    ck_assert_int_eq(st_log_append_verified(log, copy, len, 0, 0, &info), KP_OK);
    ck_assert_int_eq(info.base_offset, 0);
    ck_assert_int_eq(st_log_end_offset(log), 3);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

static int count_suffix(const char *dir, const char *suffix) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls %s/t-0 | grep -c '%s$'", dir, suffix);
    FILE *f = popen(cmd, "r");
    int n = 0;
    if (fscanf(f, "%d", &n) != 1) n = -1;
    pclose(f);
    return n;
}

START_TEST(test_retention_and_start_offset) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    cfg.retention_ms = 1000;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    append_n(log, 100, 2, 100, NULL);           /* old timestamps */
    size_t before = st_log_segment_count(log);
    ck_assert_int_gt(before, 2);
    int deleted = 0;
    /* now = 1050: everything up to ts 1000+ is young: nothing goes */
    ck_assert_int_eq(st_log_apply_retention(log, 1050, &deleted), KP_OK);
    ck_assert_int_eq(deleted, 0);
    ck_assert_int_eq(st_log_apply_retention(log, 100000, &deleted), KP_OK);
    ck_assert_int_eq((size_t)deleted, before - 1); /* never the active one */
    ck_assert_int_eq(st_log_segment_count(log), 1);
    ck_assert_int_eq(st_log_start_offset(log), st_log_active_base_offset(log));
    ck_assert_int_gt(count_suffix(dir, ".deleted"), 0);
    char pdir[600];
    snprintf(pdir, sizeof pdir, "%s/t-0", dir);
    st_log_purge_deleted(pdir);
    ck_assert_int_eq(count_suffix(dir, ".deleted"), 0);
    st_read_result_t rr;
    ck_assert_int_eq(st_log_read(log, 0, 100, -1, 0, &rr), ST_ERR_OUT_OF_RANGE);

    /* retention.bytes */
    cfg.retention_ms = -1;
    cfg.retention_bytes = 5000;
    st_log_set_config(log, &cfg);
    append_n(log, 60, 2, 100, NULL);
    ck_assert_int_eq(st_log_apply_retention(log, 100000, &deleted), KP_OK);
    ck_assert_int_gt(deleted, 0);
    ck_assert_uint_le(st_log_size_bytes(log), 5000 + 4096);
    ck_assert_uint_ge(st_log_size_bytes(log), 5000);

    /* DeleteRecords: start offset moves inside a segment */
    int64_t s0 = st_log_start_offset(log), leo = st_log_end_offset(log);
    ck_assert_int_eq(st_log_advance_start(log, s0 + 3), KP_OK);
    ck_assert_int_eq(st_log_start_offset(log), s0 + 3);
    ck_assert_int_eq(st_log_read(log, s0 + 2, 100, -1, 0, &rr), ST_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(st_log_read(log, s0 + 3, 100, -1, ST_READ_MIN_ONE, &rr), KP_OK);
    ck_assert_int_eq(rr.n, 1);
    ck_assert_int_eq(st_log_advance_start(log, leo + 1), ST_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(st_log_advance_start(log, leo - 2), KP_OK);
    ck_assert_int_eq(st_log_segment_count(log) <= 2, 1);
    st_log_offsets_t fin;
    ck_assert_int_eq(st_log_close(log, &fin), KP_OK);
    ck_assert_int_eq(fin.log_start_offset, leo - 2);
    st_log_open_opts_t o = { .recovery_point = fin.recovery_point, .log_start_offset = fin.log_start_offset,
                             .high_watermark = 0, .clean_shutdown = true, .create = false, .now_ms = 0 };
    ck_assert_int_eq(st_log_open(dir, "t", 0, &cfg, &o, &log), KP_OK);
    ck_assert_int_eq(st_log_start_offset(log), leo - 2);
    ck_assert_int_eq(st_log_high_watermark(log), leo - 2); /* clamped up to the start */
    ck_assert_int_eq(st_log_delete(log), KP_OK);
    struct stat st;
    ck_assert_int_ne(stat(pdir, &st), 0);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_roll_by_time_and_explicit) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg;
    st_log_config_default(&cfg);
    cfg.segment_ms = 100;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    uint8_t buf[4096];
    st_append_info_t info;
    size_t len = tu_batch(buf, sizeof buf, 1, 1, 1, 10);
    ck_assert_int_eq(st_log_append(log, buf, len, 0, 1000, &info), KP_OK);
    len = tu_batch(buf, sizeof buf, 1, 1, 1, 10);
    ck_assert_int_eq(st_log_append(log, buf, len, 0, 1050, &info), KP_OK);
    ck_assert_int_eq(st_log_segment_count(log), 1);
    len = tu_batch(buf, sizeof buf, 1, 1, 1, 10);
    ck_assert_int_eq(st_log_append(log, buf, len, 0, 1200, &info), KP_OK);
    ck_assert_int_eq(st_log_segment_count(log), 2);
    ck_assert_int_eq(st_log_active_base_offset(log), 2);
    ck_assert_int_eq(st_log_roll(log, 1300), KP_OK);
    ck_assert_int_eq(st_log_active_base_offset(log), 3);
    ck_assert_int_eq(st_log_roll(log, 1300), KP_OK); /* empty active: no-op */
    ck_assert_int_eq(st_log_segment_count(log), 3);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    log = tu_open(dir, &cfg, 3, true);
    ck_assert_int_eq(st_log_end_offset(log), 3);
    ck_assert_int_eq(st_log_segment_count(log), 3);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_index_full_rolls) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg;
    st_log_config_default(&cfg);
    cfg.index_interval_bytes = 1;
    cfg.index_max_bytes = 8 * 12; /* 8 offset entries, 8 time entries */
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    append_n(log, 40, 1, 100, NULL);
    ck_assert_int_ge(st_log_segment_count(log), 4);
    for (int64_t o = 0; o < 40; o++) expect_batch_at(log, o, o, 1);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    log = tu_open(dir, &cfg, 40, true);
    for (int64_t o = 0; o < 40; o++) expect_batch_at(log, o, o, 1);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_read_spans_two_segments_and_flush_ms) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    cfg.flush_ms = 100;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    int64_t bases[60];
    append_n(log, 60, 3, 100, bases);
    ck_assert_int_ge(st_log_segment_count(log), 3);
    /* from the last batch of the first segment, with room for more: the
     * result continues in the next segment as a second range */
    int64_t second = 0;
    for (int i = 0; i < 60; i++)
        if (bases[i] >= 3 && bases[i] == st_log_active_base_offset(log)) second = bases[i];
    st_read_result_t rr;
    int64_t first_seg_last = -1;
    for (int i = 1; i < 60; i++) {
        ck_assert_int_eq(st_log_read(log, bases[i], 1, -1, ST_READ_MIN_ONE, &rr), KP_OK);
        if (rr.r[0].pos == 0) { first_seg_last = bases[i - 1]; break; }
    }
    ck_assert_int_gt(first_seg_last, 0);
    ck_assert_int_eq(st_log_read(log, first_seg_last, 1 << 20, -1, 0, &rr), KP_OK);
    ck_assert_int_eq(rr.n, 2);
    ck_assert_int_ne(rr.r[0].fd, rr.r[1].fd);
    ck_assert_uint_eq(rr.r[1].pos, 0);
    ck_assert_uint_eq(rr.total_bytes, rr.r[0].len + rr.r[1].len);
    ck_assert_int_eq(rr.first_offset, first_seg_last);
    (void)second;
    /* flush.ms (the log opened at t=0): due from the first append on; an
     * append never fsyncs by itself */
    ck_assert_int_eq(st_log_recovery_point(log), 0);
    ck_assert(st_log_flush_due(log, 5000));
    ck_assert_int_eq(st_log_maybe_flush(log, 5000), KP_OK);
    ck_assert_int_eq(st_log_recovery_point(log), st_log_end_offset(log));
    append_n(log, 1, 3, 100, NULL);
    /* flushed at 5000: nothing again before 5100 */
    ck_assert(!st_log_flush_due(log, 5099));
    int64_t rp = st_log_recovery_point(log);
    ck_assert_int_eq(st_log_maybe_flush(log, 5050), KP_OK);
    ck_assert_int_eq(st_log_recovery_point(log), rp);
    ck_assert_int_eq(st_log_maybe_flush(log, 5100), KP_OK);
    ck_assert_int_eq(st_log_recovery_point(log), st_log_end_offset(log));
    /* truncate fully (follower out of range) restarts the log anywhere */
    ck_assert_int_eq(st_log_truncate_fully(log, 5000, 0), KP_OK);
    ck_assert_int_eq(st_log_start_offset(log), 5000);
    ck_assert_int_eq(st_log_end_offset(log), 5000);
    append_n(log, 2, 3, 100, NULL);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    log = tu_open(dir, &cfg, 0, false);
    ck_assert_int_eq(st_log_start_offset(log), 5000);
    ck_assert_int_eq(st_log_end_offset(log), 5006);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_topic_id_file) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    kp_uuid_t id, back;
    ck_assert_int_eq(st_log_read_topic_id(log, &back), ST_ERR_NOT_FOUND);
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < 16; i++) id.b[i] = (uint8_t)(round * 37 + i * 11 + (round == 1 ? 255 : 0));
        ck_assert_int_eq(st_log_write_topic_id(log, &id), KP_OK);
        ck_assert_int_eq(st_log_read_topic_id(log, &back), KP_OK);
        ck_assert_mem_eq(id.b, back.b, 16);
    }
    /* a known value: all-zero uuid is 22 'A's, as Kafka prints it */
    memset(id.b, 0, 16);
    ck_assert_int_eq(st_log_write_topic_id(log, &id), KP_OK);
    char p[600], *txt;
    size_t len;
    snprintf(p, sizeof p, "%s/t-0/partition.metadata", dir);
    ck_assert_int_eq(st_read_small_file(p, 256, &txt, &len), KP_OK);
    ck_assert_str_eq(txt, "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n");
    free(txt);
    const char *bad[] = { "version: 1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n", "version: 0\ntopic_id: AAAA\n",
                          "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAA*\n", "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAB\n",
                          "" };
    for (size_t i = 0; i < 5; i++) {
        FILE *f = fopen(p, "w");
        fputs(bad[i], f);
        fclose(f);
        ck_assert_int_eq(st_log_read_topic_id(log, &back), KP_ERR_CORRUPT);
    }
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* Timestamp lookups inside compressed batches are record-exact, for every
 * codec; a batch whose records are over records_max_bytes answers
 * batch-exact (base offset, batch max timestamp) instead of failing. */
START_TEST(test_timestamps_in_compressed_batches) {
    for (int c = KP_CODEC_GZIP; c <= KP_CODEC_ZSTD; c++) {
        char *dir = tu_tmpdir();
        st_log_config_t cfg = small_cfg();
        st_log_t *log = tu_open(dir, &cfg, 0, false);
        /* 10 batches of 8 records; record j of batch i: ts 5000 + 100i + 3j,
         * except that record 2 is older than record 1 (CreateTime allows) */
        for (int i = 0; i < 10; i++) {
            kp_record_in_t recs[8];
            char vals[8][8];
            for (int j = 0; j < 8; j++) {
                int vl = snprintf(vals[j], sizeof vals[j], "v%d", j);
                recs[j] = (kp_record_in_t){ .timestamp = 5000 + 100 * i + 3 * j - (j == 2 ? 5 : 0),
                                            .key = kp_slice_cstr("k"),
                                            .value = { (const uint8_t *)vals[j], (size_t)vl } };
            }
            kp_batch_opts_t o = kp_batch_opts_default();
            o.codec = (kp_codec_t)c;
            uint8_t buf[2048];
            size_t len = tu_build(buf, sizeof buf, &o, recs, 8);
            st_append_info_t info;
            ck_assert_int_eq(st_log_append(log, buf, len, 0, 1, &info), KP_OK);
        }
        for (int i = 0; i < 10; i++) {
            int64_t off, ts;
            ck_assert_int_eq(st_log_offset_for_time(log, 5000 + 100 * i + 7, &off, &ts), KP_OK);
            ck_assert_int_eq(off, i * 8 + 3); /* 5000+100i+9 is the first >= +7 */
            ck_assert_int_eq(ts, 5000 + 100 * i + 9);
            ck_assert_int_eq(st_log_offset_for_time(log, 5000 + 100 * i - 1, &off, &ts), KP_OK);
            ck_assert_int_eq(off, i * 8);
            ck_assert_int_eq(ts, 5000 + 100 * i);
        }
        int64_t off, ts;
        ck_assert_int_eq(st_log_max_timestamp(log, &ts, &off), KP_OK);
        ck_assert_int_eq(ts, 5000 + 900 + 21);
        ck_assert_int_eq(off, 79);
        /* records over the cap: batch-exact */
        cfg.records_max_bytes = 16;
        st_log_set_config(log, &cfg);
        ck_assert_int_eq(st_log_offset_for_time(log, 5000 + 300 + 7, &off, &ts), KP_OK);
        ck_assert_int_eq(off, 24);
        ck_assert_int_eq(ts, 5000 + 300 + 21);
        ck_assert_int_eq(st_log_max_timestamp(log, &ts, &off), KP_OK);
        ck_assert_int_eq(off, 72);
        ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
        tu_rmrf(dir);
        free(dir);
    }
}
END_TEST

int main(void) {
    tu_log_capture();
    Suite *s = suite_create("st_log");
    TCase *tc = tcase_create("log");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_append_read_every_offset);
    tcase_add_test(tc, test_segment_edges_and_reopen);
    tcase_add_test(tc, test_max_bytes_min_one_and_end_offset);
    tcase_add_test(tc, test_truncate_edges);
    tcase_add_test(tc, test_log_append_time_and_timestamps);
    tcase_add_test(tc, test_replica_append_keeps_offsets);
    tcase_add_test(tc, test_bad_batches_refused);
    tcase_add_test(tc, test_retention_and_start_offset);
    tcase_add_test(tc, test_roll_by_time_and_explicit);
    tcase_add_test(tc, test_index_full_rolls);
    tcase_add_test(tc, test_read_spans_two_segments_and_flush_ms);
    tcase_add_test(tc, test_topic_id_file);
    tcase_add_test(tc, test_timestamps_in_compressed_batches);
    tcase_add_test(tc, test_scan_whole_log_in_chunks);
    tcase_add_test(tc, test_scan_batches_one_call_each);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
