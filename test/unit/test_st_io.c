/* I/O failures injected through the st_io shim: failing (torn) writes,
 * fsyncs, renames and truncates return errors and leave a consistent log. */
#include "test/unit/st_test_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "storage/st_checkpoint.h"
#include "storage/st_io.h"

static st_log_config_t io_cfg(void) {
    st_log_config_t c;
    st_log_config_default(&c);
    c.segment_bytes = 1500;
    c.index_interval_bytes = 100;
    return c;
}

static void append_ok(st_log_t *log, int i) {
    uint8_t buf[4096];
    size_t len = tu_batch(buf, sizeof buf, 2, 100 + i, (uint32_t)i, 20);
    st_append_info_t info;
    ck_assert_int_eq(st_log_append(log, buf, len, 0, 0, &info), KP_OK);
}

START_TEST(test_failed_write_leaves_log_unchanged) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = io_cfg();
    cfg.segment_bytes = 1 << 20; /* no roll: the injected write is the append's */
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    for (int i = 0; i < 5; i++) append_ok(log, i);
    uint8_t buf[4096];
    for (int round = 0; round < 20; round++) {
        int64_t leo = st_log_end_offset(log);
        uint64_t size = st_log_size_bytes(log);
        size_t len = tu_batch(buf, sizeof buf, 2, 500, 99, 20);
        st_append_info_t info;
        st_io_inject(ST_IO_WRITE, 0, ENOSPC);
        ck_assert_int_eq(st_log_append(log, buf, len, 0, 0, &info), ST_ERR_IO);
        ck_assert_int_eq(st_log_end_offset(log), leo);
        ck_assert_uint_eq(st_log_size_bytes(log), size);
        append_ok(log, round + 10); /* the next append lands right after */
    }
    int64_t end;
    ck_assert_int_eq(tu_scan(log, 0, &end), 25);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    log = tu_open(dir, &cfg, 0, false);
    ck_assert_int_eq(tu_scan(log, 0, &end), 25);
    ck_assert_int_eq(end, 50);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_failed_truncate_after_failed_write_goes_offline) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = io_cfg();
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    append_ok(log, 0);
    uint8_t buf[4096];
    size_t len = tu_batch(buf, sizeof buf, 2, 500, 99, 20);
    st_append_info_t info;
    st_io_inject(ST_IO_WRITE, 0, EIO);
    st_io_inject(ST_IO_TRUNCATE, 0, EIO);
    tu_log_capture();
    ck_assert_int_eq(st_log_append(log, buf, len, 0, 0, &info), ST_ERR_IO);
    ck_assert_ptr_nonnull(strstr(tu_log_buf, "offline"));
    len = tu_batch(buf, sizeof buf, 2, 500, 99, 20);
    ck_assert_int_eq(st_log_append(log, buf, len, 0, 0, &info), ST_ERR_OFFLINE);
    st_read_result_t rr;
    ck_assert_int_eq(st_log_read(log, 0, 100, -1, 0, &rr), ST_ERR_OFFLINE);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    /* on restart the torn half-batch is cut by recovery */
    log = tu_open(dir, &cfg, 0, false);
    int64_t end;
    ck_assert_int_eq(tu_scan(log, 0, &end), 1);
    ck_assert_int_eq(end, 2);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_failed_fsync_is_reported) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = io_cfg();
    cfg.flush_messages = 4;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    append_ok(log, 0);
    ck_assert_int_eq(st_log_recovery_point(log), 0);
    ck_assert(!st_log_flush_due(log, 0));
    append_ok(log, 1); /* 4 messages: a flush is due; an append never fsyncs itself */
    ck_assert(st_log_flush_due(log, 0));
    ck_assert_int_eq(st_log_recovery_point(log), 0);
    ck_assert_int_eq(st_log_maybe_flush(log, 0), KP_OK);
    ck_assert_int_eq(st_log_recovery_point(log), 4);
    append_ok(log, 2);
    st_io_inject(ST_IO_FSYNC, 0, EIO);
    uint8_t buf[4096];
    size_t len = tu_batch(buf, sizeof buf, 2, 500, 99, 20);
    st_append_info_t info;
    ck_assert_int_eq(st_log_append(log, buf, len, 0, 0, &info), KP_OK);
    ck_assert_int_eq(st_log_maybe_flush(log, 0), ST_ERR_IO);
    /* the data is in the page cache but not known durable: the recovery
     * point did not move and the log refuses further work */
    ck_assert_int_eq(st_log_recovery_point(log), 4);
    ck_assert_int_eq(st_log_append(log, buf, len, 0, 0, &info), ST_ERR_OFFLINE);
    ck_assert_int_eq(st_log_flush(log), ST_ERR_OFFLINE);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK); /* offline: closes without flushing */
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_failed_rename_keeps_old_checkpoint) {
    char *dir = tu_tmpdir();
    char p[600];
    snprintf(p, sizeof p, "%s/recovery-point-offset-checkpoint", dir);
    st_tp_offset_t e = { "a", 0, 10 };
    ck_assert_int_eq(st_offset_ckpt_write(p, &e, 1), KP_OK);
    e.offset = 20;
    for (int op = ST_IO_WRITE; op <= ST_IO_RENAME; op++) {
        st_io_inject((st_io_op_t)op, 0, EIO);
        ck_assert_int_eq(st_offset_ckpt_write(p, &e, 1), ST_ERR_IO);
        st_tp_offset_t *r;
        size_t n;
        ck_assert_int_eq(st_offset_ckpt_read(p, &r, &n), KP_OK);
        ck_assert_uint_eq(n, 1);
        ck_assert_int_eq(r[0].offset, 10);
        free(r);
        /* no temp file ("<file>.<pid>-<seq>.tmp") left behind */
        DIR *dd = opendir(dir);
        ck_assert_ptr_nonnull(dd);
        for (struct dirent *de; (de = readdir(dd)) != NULL;)
            ck_assert_msg(strstr(de->d_name, ".tmp") == NULL, "left behind: %s", de->d_name);
        closedir(dd);
    }
    st_io_inject_clear();
    ck_assert_int_eq(st_offset_ckpt_write(p, &e, 1), KP_OK);
    st_tp_offset_t *r;
    size_t n;
    ck_assert_int_eq(st_offset_ckpt_read(p, &r, &n), KP_OK);
    ck_assert_int_eq(r[0].offset, 20);
    free(r);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_failed_roll_and_retention_rename) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = io_cfg();
    cfg.retention_bytes = 0;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    for (int i = 0; i < 30; i++) append_ok(log, i);
    size_t nseg = st_log_segment_count(log);
    ck_assert_uint_gt(nseg, 2);
    int deleted;
    st_io_inject(ST_IO_RENAME, 0, EIO);
    ck_assert_int_eq(st_log_apply_retention(log, 0, &deleted), ST_ERR_IO);
    /* whatever was renamed is gone from the log; the rest still reads */
    int64_t end;
    tu_scan(log, st_log_start_offset(log), &end);
    ck_assert_int_eq(end, 60);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* A checkpoint whose declared count exceeds what its bytes can hold is
 * refused before anything is allocated from that count; a minimal valid
 * file at the boundary still loads. */
static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_ckpt_count_beyond_file_refused) {
    char *dir = tu_tmpdir();
    char p[512];
    snprintf(p, sizeof p, "%s/ckpt", dir);
    st_tp_offset_t *r = NULL;
    size_t n = 0;
    write_text(p, "0\n1000000\n");
    ck_assert_int_eq(st_offset_ckpt_read(p, &r, &n), KP_ERR_CORRUPT);
    ck_assert_ptr_null(r);
    write_text(p, "0\n1\na 0 5\n");
    ck_assert_int_eq(st_offset_ckpt_read(p, &r, &n), KP_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(r[0].offset, 5);
    free(r);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

int main(void) {
    tu_log_capture();
    Suite *s = suite_create("st_io");
    TCase *tc = tcase_create("io");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_failed_write_leaves_log_unchanged);
    tcase_add_test(tc, test_ckpt_count_beyond_file_refused);
    tcase_add_test(tc, test_failed_truncate_after_failed_write_goes_offline);
    tcase_add_test(tc, test_failed_fsync_is_reported);
    tcase_add_test(tc, test_failed_rename_keeps_old_checkpoint);
    tcase_add_test(tc, test_failed_roll_and_retention_rename);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
