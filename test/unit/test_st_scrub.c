/* Scrub (st_log_scrub_*, issue 16 finding 9) and the replica append's CRC
 * check: a clean log scrubs clean, byte for byte of its rolled segments; a
 * flipped byte in a rolled segment is found at its batch with file, byte
 * and offset; a budget splits a segment over jobs; a segment truncated
 * meanwhile gives no verdict; the active segment is never read; a replica
 * append of a damaged batch is refused. */
#include "test/unit/st_test_util.h"

#include <fcntl.h>
#include <sys/stat.h>

static st_log_config_t cfg_small(void) {
    st_log_config_t c;
    st_log_config_default(&c);
    c.segment_bytes = 2048;
    c.index_interval_bytes = 200;
    c.index_max_bytes = 1200;
    return c;
}

/* 40 batches of 2 records (~160 bytes): offsets 0..79, several segments. */
static st_log_t *fill(const char *dir) {
    st_log_config_t cfg = cfg_small();
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    uint8_t buf[4096];
    for (int i = 0; i < 40; i++) {
        size_t len = tu_batch(buf, sizeof buf, 2, 100 + i * 10, (uint32_t)i, 30);
        st_append_info_t info;
        ck_assert_int_eq(st_log_append(log, buf, len, 0, 0, &info), KP_OK);
    }
    ck_assert_uint_ge(st_log_segment_count(log), 3);
    return log;
}

/* Scrubs every rolled segment with jobs of at most budget bytes; returns
 * the bytes read; *bad gets the first corruption (corrupt false if none). */
static uint64_t scrub_all(st_log_t *log, uint64_t budget, st_scrub_result_t *bad, int *jobs) {
    int64_t base = 0, pos_off = 0;
    uint64_t pos = 0, total = 0;
    memset(bad, 0, sizeof *bad);
    *jobs = 0;
    for (;;) {
        st_log_scrub_t *j = NULL;
        ck_assert_int_eq(st_log_scrub_begin(log, base, pos, pos_off, budget, &j), KP_OK);
        if (!j) return total;
        ck_assert_int_eq(st_log_scrub_run(j), KP_OK);
        st_scrub_result_t r;
        ck_assert_int_eq(st_log_scrub_end(log, j, &r), KP_OK);
        (*jobs)++;
        total += r.bytes;
        if (r.corrupt) {
            *bad = r;
            return total;
        }
        if (r.seg_done) {
            base = r.seg_base + 1;
            pos = 0;
        } else {
            ck_assert_uint_gt(r.next_pos, pos);   /* progress */
            base = r.seg_base;
            pos = r.next_pos;
            pos_off = r.next_offset;
        }
    }
}

static uint64_t rolled_bytes(const char *dir) {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls %s/t-0/*.log | sort | head -n -1 | xargs cat | wc -c", dir);
    FILE *f = popen(cmd, "r");
    unsigned long long n = 0;
    ck_assert_int_eq(fscanf(f, "%llu", &n), 1);
    pclose(f);
    return n;
}

START_TEST(test_scrub_clean_and_budget) {
    char *dir = tu_tmpdir();
    st_log_t *log = fill(dir);
    st_scrub_result_t bad;
    int jobs;
    uint64_t all = scrub_all(log, 1 << 30, &bad, &jobs);
    ck_assert(!bad.corrupt);
    ck_assert_uint_eq(all, rolled_bytes(dir));   /* every rolled byte, not the active segment */
    ck_assert_int_eq(jobs, (int)st_log_segment_count(log) - 1);
    int jobs_small;
    ck_assert_uint_eq(scrub_all(log, 300, &bad, &jobs_small), all);
    ck_assert(!bad.corrupt);
    ck_assert_int_gt(jobs_small, jobs);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_scrub_finds_flipped_byte) {
    char *dir = tu_tmpdir();
    st_log_t *log = fill(dir);
    /* the 2nd rolled segment: flip a byte inside its 2nd batch's records */
    char cmd[700], seg[700] = "";
    snprintf(cmd, sizeof cmd, "ls %s/t-0/*.log | sort | sed -n 2p", dir);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(fgets(seg, sizeof seg, f));
    pclose(f);
    seg[strcspn(seg, "\n")] = 0;
    int fd = open(seg, O_RDWR);
    ck_assert_int_ge(fd, 0);
    uint8_t hdr[61];
    ck_assert_int_eq(pread(fd, hdr, sizeof hdr, 0), 61);
    uint64_t second = 12 + kp_load_be32(hdr + 8);
    int64_t second_off = (int64_t)kp_load_be64(hdr) + 2;
    uint8_t b;
    ck_assert_int_eq(pread(fd, &b, 1, (off_t)second + 70), 1);
    b ^= 0x10;
    ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)second + 70), 1);
    close(fd);
    tu_log_capture();
    for (int round = 0; round < 2; round++) {
        st_scrub_result_t bad;
        int jobs;
        (void)scrub_all(log, round == 0 ? 1 << 30 : 100, &bad, &jobs);
        ck_assert(bad.corrupt);
        ck_assert_int_eq(bad.status, KP_ERR_CORRUPT);
        ck_assert_str_eq(bad.path, seg);
        ck_assert_uint_eq(bad.bad_pos, second);
        ck_assert_int_eq(bad.bad_offset, second_off);
    }
    ck_assert_ptr_nonnull(strstr(tu_log_buf, "scrub found a corrupt batch"));
    ck_assert_ptr_nonnull(strstr(tu_log_buf, seg));
    /* repair as a follower does: truncate there; the scrub is clean again */
    ck_assert_int_eq(st_log_truncate_to(log, second_off), KP_OK);
    st_scrub_result_t bad;
    int jobs;
    (void)scrub_all(log, 1 << 30, &bad, &jobs);
    ck_assert(!bad.corrupt);
    st_log_mark_offline(log, "test");
    st_log_scrub_t *j = NULL;
    ck_assert_int_eq(st_log_scrub_begin(log, 0, 0, 0, 100, &j), ST_ERR_OFFLINE);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_scrub_changed_segment_no_verdict) {
    char *dir = tu_tmpdir();
    st_log_t *log = fill(dir);
    st_log_scrub_t *j = NULL;
    ck_assert_int_eq(st_log_scrub_begin(log, 0, 0, 0, 1 << 30, &j), KP_OK);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(st_log_scrub_run(j), KP_OK);
    ck_assert_int_eq(st_log_truncate_to(log, 3), KP_OK);   /* the first segment changed meanwhile */
    st_scrub_result_t r;
    ck_assert_int_eq(st_log_scrub_end(log, j, &r), ST_ERR_NOT_FOUND);
    /* only the active segment is left: nothing to scrub */
    ck_assert_int_eq(st_log_scrub_begin(log, 0, 0, 0, 1 << 30, &j), KP_OK);
    ck_assert_ptr_null(j);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_replica_append_checks_crc) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = cfg_small();
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    uint8_t buf[4096];
    size_t len = tu_batch(buf, sizeof buf, 2, 100, 1, 30);
    buf[len - 3] ^= 0x01;   /* a record byte: inside the CRC */
    st_append_info_t info;
    ck_assert_int_eq(st_log_append_replica(log, buf, len, 0, &info), KP_ERR_CORRUPT);
    ck_assert_int_eq(st_log_end_offset(log), 0);
    buf[len - 3] ^= 0x01;
    ck_assert_int_eq(st_log_append_replica(log, buf, len, 0, &info), KP_OK);
    ck_assert_int_eq(st_log_end_offset(log), 2);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

int main(void) {
    Suite *s = suite_create("st_scrub");
    TCase *tc = tcase_create("scrub");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_scrub_clean_and_budget);
    tcase_add_test(tc, test_scrub_finds_flipped_byte);
    tcase_add_test(tc, test_scrub_changed_segment_no_verdict);
    tcase_add_test(tc, test_replica_append_checks_crc);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
