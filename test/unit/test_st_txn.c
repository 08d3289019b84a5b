/* Leader epoch cache, producer state (idempotence, snapshots, restarts),
 * transaction markers, the aborted-transaction index and the LSO; log dirs. */
#include "test/unit/st_test_util.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "storage/st_epoch_cache.h"
#include "storage/st_logdirs.h"
#include "storage/st_producer_state.h"

static size_t pid_batch(uint8_t *out, size_t cap, int64_t pid, int16_t epoch, int32_t seq, int n, bool txn) {
    kp_record_in_t recs[16];
    for (int i = 0; i < n; i++)
        recs[i] = (kp_record_in_t){ .timestamp = 10 + i, .key = kp_slice_cstr("k"), .value = kp_slice_cstr("v") };
    kp_batch_opts_t o = kp_batch_opts_default();
    o.flags = txn ? KP_BATCH_TRANSACTIONAL : 0;
    o.producer_id = pid;
    o.producer_epoch = epoch;
    o.base_sequence = seq;
    return tu_build(out, cap, &o, recs, n);
}

static int64_t app(st_log_t *log, uint8_t *buf, size_t len) {
    st_append_info_t info;
    ck_assert_int_eq(st_log_append(log, buf, len, 2, 100, &info), KP_OK);
    return info.base_offset;
}

START_TEST(test_epoch_cache) {
    char *dir = tu_tmpdir();
    st_epoch_cache_t c;
    ck_assert_int_eq(st_epoch_cache_open(&c, dir), KP_OK);
    int32_t e;
    int64_t o;
    st_epoch_cache_end_offset(&c, 5, 100, &e, &o);
    ck_assert_int_eq(e, -1);
    ck_assert_int_eq(o, -1);
    ck_assert_int_eq(st_epoch_cache_assign(&c, 1, 0), KP_OK);
    ck_assert_int_eq(st_epoch_cache_assign(&c, 1, 5), KP_OK); /* same epoch: no-op */
    ck_assert_int_eq(st_epoch_cache_assign(&c, 3, 10), KP_OK);
    ck_assert_int_eq(st_epoch_cache_assign(&c, 4, 20), KP_OK);
    st_epoch_cache_end_offset(&c, 0, 30, &e, &o);
    ck_assert_int_eq(e, -1);
    st_epoch_cache_end_offset(&c, 1, 30, &e, &o);
    ck_assert_int_eq(e, 1);
    ck_assert_int_eq(o, 10);
    st_epoch_cache_end_offset(&c, 2, 30, &e, &o); /* unknown epoch: the one below it */
    ck_assert_int_eq(e, 1);
    ck_assert_int_eq(o, 10);
    st_epoch_cache_end_offset(&c, 4, 30, &e, &o);
    ck_assert_int_eq(e, 4);
    ck_assert_int_eq(o, 30);
    st_epoch_cache_end_offset(&c, 9, 30, &e, &o);
    ck_assert_int_eq(e, 4);
    ck_assert_int_eq(o, 30);
    st_epoch_cache_free(&c);
    /* persisted in Kafka's text format */
    char p[600], *txt;
    size_t len;
    snprintf(p, sizeof p, "%s/leader-epoch-checkpoint", dir);
    ck_assert_int_eq(st_read_small_file(p, 4096, &txt, &len), KP_OK);
    ck_assert_str_eq(txt, "0\n3\n1 0\n3 10\n4 20\n");
    free(txt);
    ck_assert_int_eq(st_epoch_cache_open(&c, dir), KP_OK);
    ck_assert_int_eq(st_epoch_cache_latest(&c), 4);
    ck_assert_int_eq(st_epoch_cache_truncate_end(&c, 20), KP_OK);
    ck_assert_int_eq(st_epoch_cache_latest(&c), 3);
    ck_assert_int_eq(st_epoch_cache_truncate_start(&c, 12), KP_OK);
    ck_assert_uint_eq(c.n, 1);
    ck_assert_int_eq(c.e[0].start_offset, 12);
    /* a divergent history is replaced by a new leader's */
    ck_assert_int_eq(st_epoch_cache_assign(&c, 5, 11), KP_OK);
    ck_assert_uint_eq(c.n, 1);
    ck_assert_int_eq(c.e[0].epoch, 5);
    st_epoch_cache_free(&c);
    /* malformed files are ignored */
    const char *bad[] = { "1\n0\n", "0\n2\n1 0\n", "0\n2\n3 0\n1 5\n", "0\n1\nx 0\n" };
    for (size_t i = 0; i < 4; i++) {
        int fd = open(p, O_WRONLY | O_TRUNC);
        ck_assert_int_eq(write(fd, bad[i], strlen(bad[i])), (ssize_t)strlen(bad[i]));
        close(fd);
        ck_assert_int_eq(st_epoch_cache_open(&c, dir), KP_OK);
        ck_assert_uint_eq(c.n, 0);
        st_epoch_cache_free(&c);
    }
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_producer_state_rules) {
    st_producer_state_t ps;
    ck_assert_int_eq(st_ps_init(&ps), KP_OK);
    int64_t df, dl;
    ck_assert_int_eq(st_ps_check(&ps, 7, 0, 0, 4, &df, &dl), ST_PS_OK);
    ck_assert_int_eq(st_ps_check(&ps, 7, 0, 3, 4, &df, &dl), ST_PS_UNKNOWN_PRODUCER);
    for (int i = 0; i < 7; i++) ck_assert_int_eq(st_ps_update(&ps, 7, 0, i * 5, i * 5 + 4, i * 5, i * 5 + 4, 0, false), KP_OK);
    /* the last 5 batches are duplicates with their original offsets */
    for (int i = 2; i < 7; i++) {
        ck_assert_int_eq(st_ps_check(&ps, 7, 0, i * 5, i * 5 + 4, &df, &dl), ST_PS_DUPLICATE);
        ck_assert_int_eq(df, i * 5);
        ck_assert_int_eq(dl, i * 5 + 4);
    }
    ck_assert_int_eq(st_ps_check(&ps, 7, 0, 0, 4, &df, &dl), ST_PS_OUT_OF_ORDER); /* too old to know */
    ck_assert_int_eq(st_ps_check(&ps, 7, 0, 35, 36, &df, &dl), ST_PS_OK);
    ck_assert_int_eq(st_ps_check(&ps, 7, 0, 36, 36, &df, &dl), ST_PS_OUT_OF_ORDER);
    ck_assert_int_eq(st_ps_check(&ps, 7, 1, 0, 0, &df, &dl), ST_PS_OK);       /* epoch bump */
    ck_assert_int_eq(st_ps_check(&ps, 7, 1, 5, 5, &df, &dl), ST_PS_OUT_OF_ORDER);
    ck_assert_int_eq(st_ps_update(&ps, 7, 1, 0, 0, 40, 40, 0, false), KP_OK);
    ck_assert_int_eq(st_ps_check(&ps, 7, 0, 35, 35, &df, &dl), ST_PS_FENCED);
    /* transactions v2: the marker of EndTxn v5 carries the bumped epoch
     * (here 2) before any batch of it; the next transaction's batches then
     * come with that epoch and must start at sequence 0, a pipelined later
     * batch first is out of order (its predecessor is being retried) */
    int64_t txn_first = -1;
    ck_assert_int_eq(st_ps_end_txn(&ps, 7, 2, 0, 41, 0, &txn_first), KP_OK);
    ck_assert_int_eq(st_ps_check(&ps, 7, 2, 1, 1, &df, &dl), ST_PS_OUT_OF_ORDER);
    ck_assert_int_eq(st_ps_check(&ps, 7, 2, 0, 0, &df, &dl), ST_PS_OK);
    ck_assert_int_eq(st_ps_update(&ps, 7, 2, 0, 0, 42, 42, 0, false), KP_OK);
    ck_assert_int_eq(st_ps_check(&ps, 7, 2, 1, 1, &df, &dl), ST_PS_OK);
    ck_assert_int_eq(st_ps_check(&ps, 7, 1, 1, 1, &df, &dl), ST_PS_FENCED);   /* the epoch before the bump */
    /* a marker for a producer never seen (its batches were elsewhere) */
    ck_assert_int_eq(st_ps_end_txn(&ps, 9, 4, 0, 43, 0, &txn_first), KP_OK);
    ck_assert_int_eq(st_ps_check(&ps, 9, 4, 3, 3, &df, &dl), ST_PS_OUT_OF_ORDER);
    ck_assert_int_eq(st_ps_check(&ps, 9, 4, 0, 3, &df, &dl), ST_PS_OK);
    /* sequence wrap-around */
    ck_assert_int_eq(st_ps_update(&ps, 8, 0, INT32_MAX - 1, INT32_MAX, 0, 1, 0, false), KP_OK);
    ck_assert_int_eq(st_ps_check(&ps, 8, 0, 0, 3, &df, &dl), ST_PS_OK);
    /* many producers: table growth keeps every entry */
    for (int64_t p = 100; p < 5000; p++) ck_assert_int_eq(st_ps_update(&ps, p, 0, 0, 0, p, p, p, false), KP_OK);
    for (int64_t p = 100; p < 5000; p++) ck_assert_int_eq(st_ps_check(&ps, p, 0, 0, 0, &df, &dl), ST_PS_DUPLICATE);
    st_ps_expire(&ps, 3000 + 1000, 1000);  /* idle since before 3000: gone */
    ck_assert_ptr_null(st_ps_get(&ps, 2000));
    ck_assert_ptr_nonnull(st_ps_get(&ps, 3500));
    /* snapshot round trip, and a damaged snapshot is refused */
    char *dir = tu_tmpdir();
    ck_assert_int_eq(st_ps_snapshot_write(&ps, dir, 42), KP_OK);
    st_producer_state_t ps2;
    ck_assert_int_eq(st_ps_init(&ps2), KP_OK);
    char p[600];
    snprintf(p, sizeof p, "%s/00000000000000000042.snapshot", dir);
    ck_assert_int_eq(st_ps_snapshot_read(&ps2, p), KP_OK);
    ck_assert_uint_eq(ps2.count, ps.count);
    ck_assert_int_eq(st_ps_check(&ps2, 3500, 0, 0, 0, &df, &dl), ST_PS_DUPLICATE);
    ck_assert_int_eq(df, 3500);
    ck_assert_ptr_null(st_ps_get(&ps2, 7)); /* expired above */
    ck_assert_int_eq(st_ps_check(&ps2, 8, 0, 0, 3, &df, &dl), ST_PS_OK);
    struct stat st;
    ck_assert_int_eq(stat(p, &st), 0);
    for (off_t at = 0; at < st.st_size; at += 1 + st.st_size / 61) { /* header, entries, CRC */
        int fd = open(p, O_RDWR);
        uint8_t b;
        ck_assert_int_eq(pread(fd, &b, 1, at), 1);
        b ^= 1;
        ck_assert_int_eq(pwrite(fd, &b, 1, at), 1);
        ck_assert_int_eq(st_ps_snapshot_read(&ps2, p), KP_ERR_CORRUPT);
        b ^= 1;
        ck_assert_int_eq(pwrite(fd, &b, 1, at), 1);
        close(fd);
    }
    ck_assert_int_eq(truncate(p, st.st_size - 1), 0);
    ck_assert_int_eq(st_ps_snapshot_read(&ps2, p), KP_ERR_CORRUPT);
    st_ps_free(&ps2);
    st_ps_free(&ps);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_log_idempotence_survives_restart) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg;
    st_log_config_default(&cfg);
    cfg.segment_bytes = 250;
    uint8_t buf[4096];
    for (int mode = 0; mode < 3; mode++) { /* clean close, unclean (no snapshot at end), truncation */
        st_log_t *log = tu_open(dir, &cfg, 0, false);
        for (int i = 0; i < 12; i++) app(log, buf, pid_batch(buf, sizeof buf, 77, 0, i * 3, 3, false));
        ck_assert_int_gt(st_log_segment_count(log), 2);
        st_log_offsets_t fin = { 0 };
        if (mode == 0) {
            ck_assert_int_eq(st_log_close(log, &fin), KP_OK);
            log = tu_open(dir, &cfg, fin.recovery_point, true);
        } else if (mode == 1) {
            /* simulate a crash: remove the close snapshot, reopen unclean */
            ck_assert_int_eq(st_log_close(log, &fin), KP_OK);
            char p[600];
            snprintf(p, sizeof p, "%s/t-0/%020lld.snapshot", dir, (long long)fin.log_end_offset);
            ck_assert_int_eq(unlink(p), 0);
            log = tu_open(dir, &cfg, 0, false);
        } else {
            ck_assert_int_eq(st_log_truncate_to(log, 30), KP_OK);
        }
        int64_t end = st_log_end_offset(log);
        kp_batch_t b;
        kp_rd_t r;
        size_t len = pid_batch(buf, sizeof buf, 77, 0, (int32_t)(end / 3 - 1) * 3, 3, false);
        kp_rd_init(&r, buf, len);
        ck_assert_int_eq(kp_batch_read(&r, &b), KP_OK);
        int64_t df, dl;
        ck_assert_int_eq(st_log_producer_check(log, &b, &df, &dl), ST_PS_DUPLICATE);
        ck_assert_int_eq(df, end - 3);
        ck_assert_int_eq(dl, end - 1);
        len = pid_batch(buf, sizeof buf, 77, 0, (int32_t)end, 3, false);
        kp_rd_init(&r, buf, len);
        ck_assert_int_eq(kp_batch_read(&r, &b), KP_OK);
        ck_assert_int_eq(st_log_producer_check(log, &b, &df, &dl), ST_PS_OK);
        ck_assert_int_eq(st_log_delete(log), KP_OK);
    }
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_transactions_lso_and_aborted_index) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg;
    st_log_config_default(&cfg);
    cfg.segment_bytes = 500;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    uint8_t buf[4096];
    app(log, buf, pid_batch(buf, sizeof buf, 1, 0, 0, 2, true));  /* 0-1  pid1 txn */
    app(log, buf, pid_batch(buf, sizeof buf, 2, 0, 0, 2, true));  /* 2-3  pid2 txn */
    app(log, buf, pid_batch(buf, sizeof buf, 3, 0, 0, 2, false)); /* 4-5  plain idempotent */
    st_log_set_high_watermark(log, st_log_end_offset(log));
    ck_assert_int_eq(st_log_first_unstable_offset(log), 0);
    ck_assert_int_eq(st_log_last_stable_offset(log), 0);
    app(log, buf, tu_marker(buf, sizeof buf, 1, 0, false, 50));          /* 6 abort pid1 */
    ck_assert_int_eq(st_log_first_unstable_offset(log), 2);
    app(log, buf, pid_batch(buf, sizeof buf, 1, 0, 2, 2, true));  /* 7-8 pid1 new txn */
    app(log, buf, tu_marker(buf, sizeof buf, 2, 0, true, 50));           /* 9 commit pid2 */
    ck_assert_int_eq(st_log_first_unstable_offset(log), 7);
    app(log, buf, tu_marker(buf, sizeof buf, 1, 0, false, 50));          /* 10 abort pid1 */
    ck_assert_int_eq(st_log_first_unstable_offset(log), -1);
    st_log_set_high_watermark(log, 11);
    ck_assert_int_eq(st_log_last_stable_offset(log), 11);
    st_aborted_txn_t out[8];
    size_t n = st_log_aborted_txns(log, 0, 11, out, 8);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(out[0].producer_id, 1);
    ck_assert_int_eq(out[0].first_offset, 0);
    ck_assert_int_eq(out[0].last_offset, 6);
    ck_assert_int_eq(out[0].last_stable_offset, 2);
    ck_assert_int_eq(out[1].first_offset, 7);
    ck_assert_int_eq(out[1].last_offset, 10);
    ck_assert_uint_eq(st_log_aborted_txns(log, 7, 8, out, 8), 1);
    ck_assert_uint_eq(st_log_aborted_txns(log, 11, 20, out, 8), 0);
    ck_assert_uint_eq(st_log_aborted_txns(log, 0, 1, out, 8), 1);
    /* .txnindex holds 34-byte entries */
    char cmd[700];
    snprintf(cmd, sizeof cmd, "cat %s/t-0/*.txnindex | wc -c", dir);
    FILE *f = popen(cmd, "r");
    int bytes = 0;
    ck_assert_int_eq(fscanf(f, "%d", &bytes), 1);
    pclose(f);
    ck_assert_int_eq(bytes, 2 * 34);
    /* reopen unclean from 0: the index is rebuilt, not duplicated */
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    log = tu_open(dir, &cfg, 0, false);
    ck_assert_uint_eq(st_log_aborted_txns(log, 0, 100, out, 8), 2);
    f = popen(cmd, "r");
    ck_assert_int_eq(fscanf(f, "%d", &bytes), 1);
    pclose(f);
    ck_assert_int_eq(bytes, 2 * 34);
    /* truncation below the second abort removes it and reopens pid1's txn */
    ck_assert_int_eq(st_log_truncate_to(log, 10), KP_OK);
    ck_assert_uint_eq(st_log_aborted_txns(log, 0, 100, out, 8), 1);
    ck_assert_int_eq(st_log_first_unstable_offset(log), 7);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    log = tu_open(dir, &cfg, 10, true);
    ck_assert_uint_eq(st_log_aborted_txns(log, 0, 100, out, 8), 1);
    ck_assert_int_eq(st_log_first_unstable_offset(log), 7);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_logdirs_placement_and_checkpoints) {
    char *a = tu_tmpdir(), *b = tu_tmpdir();
    const char *dirs[2] = { a, b };
    st_log_config_t cfg;
    st_log_config_default(&cfg);
    int counts[2] = { 0, 0 };
    for (int p = 0; p < 6; p++) {
        int d = st_logdirs_pick(dirs, 2);
        ck_assert_int_ge(d, 0);
        counts[d]++;
        st_log_open_opts_t o = { .create = true };
        st_log_t *log;
        ck_assert_int_eq(st_log_open(dirs[d], "orders", p, &cfg, &o, &log), KP_OK);
        uint8_t buf[4096];
        size_t len = tu_batch(buf, sizeof buf, 3, 1, (uint32_t)p, 5);
        st_append_info_t info;
        ck_assert_int_eq(st_log_append(log, buf, len, 0, 0, &info), KP_OK);
        st_log_set_high_watermark(log, 2);
        st_logdir_entry_t e = { "orders", p, { 0 } };
        ck_assert_int_eq(st_log_close(log, &e.offsets), KP_OK);
        ck_assert_int_eq(st_logdir_checkpoint(dirs[d], &e, 1), KP_OK);
        ck_assert_int_eq(st_clean_marker_write(dirs[d]), KP_OK);
    }
    ck_assert_int_eq(counts[0], 3);
    ck_assert_int_eq(counts[1], 3);
    st_logdir_t ld;
    ck_assert_int_eq(st_logdir_load(&ld, a), KP_OK);
    ck_assert(ld.was_clean);
    ck_assert_uint_eq(ld.n_rp, 1);
    st_log_open_opts_t o;
    st_logdir_opts_for(&ld, ld.rp[0].topic, ld.rp[0].partition, 0, &o);
    ck_assert(o.clean_shutdown);
    ck_assert_int_eq(o.recovery_point, 3);
    ck_assert_int_eq(o.high_watermark, 2);
    ck_assert_int_eq(o.cleaner_offset, 0);
    ck_assert_uint_eq(ld.n_cleaner, 1);
    st_logdir_opts_for(&ld, "other", 0, 0, &o);
    ck_assert(!o.clean_shutdown);
    st_logdir_free(&ld);
    ck_assert_int_eq(st_logdir_load(&ld, a), KP_OK);
    ck_assert(!ld.was_clean); /* the marker was taken */
    st_logdir_free(&ld);
    tu_rmrf(a);
    tu_rmrf(b);
    free(a);
    free(b);
}
END_TEST

int main(void) {
    tu_log_capture();
    Suite *s = suite_create("st_txn");
    TCase *tc = tcase_create("txn");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_epoch_cache);
    tcase_add_test(tc, test_producer_state_rules);
    tcase_add_test(tc, test_log_idempotence_survives_restart);
    tcase_add_test(tc, test_transactions_lso_and_aborted_index);
    tcase_add_test(tc, test_logdirs_placement_and_checkpoints);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
