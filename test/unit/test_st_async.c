/* Unit tests for the split (owner / worker / owner) forms of the blocking
 * log operations: the fsync job (st_log_sync_*), retention detached on the
 * owner and removed by a job (st_log_retention_detach / st_log_drop_*),
 * deferred removal after DeleteRecords, and the loop-thread guard
 * (st_guard.h) that makes a blocking call on the loop visible — counted,
 * or fatal. Jobs run on the test thread here (the worker pool is
 * test_parts_open's); what matters is that a job needs nothing but itself. */
#include "test/unit/st_test_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include "storage/st_guard.h"

static st_log_config_t small_cfg(void) {
    st_log_config_t c;
    st_log_config_default(&c);
    c.segment_bytes = 4096;
    c.index_interval_bytes = 300;
    c.index_max_bytes = 4096;
    return c;
}

static void append_n(st_log_t *log, int n, int recs, int64_t ts) {
    uint8_t buf[65536];
    for (int i = 0; i < n; i++) {
        size_t len = tu_batch(buf, sizeof buf, recs, ts + i, (uint32_t)i, 20);
        st_append_info_t info;
        ck_assert_int_eq(st_log_append(log, buf, len, 3, 5000, &info), KP_OK);
    }
}

static bool file_exists(const char *dir, int64_t base, const char *suffix) {
    char p[700];
    snprintf(p, sizeof p, "%s/%020lld%s", dir, (long long)base, suffix);
    struct stat st;
    return stat(p, &st) == 0;
}

/* Closes the log, removes its directory. */
static void close_rm(st_log_t *log, char *dir) {
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}

/* One whole fsync job at now: begun, run, ended as ran. */
static void sync_once(st_log_t *log, int64_t now) {
    st_log_sync_t *j = NULL;
    ck_assert_int_eq(st_log_sync_begin(log, now, &j), KP_OK);
    ck_assert_int_eq(st_log_sync_run(j), KP_OK);
    ck_assert_int_eq(st_log_sync_end(log, j, true), KP_OK);
}

/* Retention at now must detach something: the drop job; *deleted its count. */
static st_log_drop_t *detach(st_log_t *log, int64_t now, int *deleted) {
    st_log_drop_t *d = NULL;
    ck_assert_int_eq(st_log_retention_detach(log, now, &d, deleted), KP_OK);
    ck_assert_ptr_nonnull(d);
    return d;
}

static void setup(void) {
    tu_log_capture();
    st_guard_leave_loop();
    st_guard_set_fatal(false);
    st_guard_reset();
}

/* ---- fsync jobs ---------------------------------------------------------------- */

/* flush.messages: due after 4 messages; one job at a time; the recovery
 * point moves only at the end, to what the job covered; appends made while
 * it ran make the next one due. */
START_TEST(test_sync_job_moves_recovery_point_at_end) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    cfg.flush_messages = 4;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    append_n(log, 1, 2, 100);
    ck_assert(!st_log_flush_due(log, 0));
    append_n(log, 1, 2, 100);
    ck_assert(st_log_flush_due(log, 0));
    st_log_sync_t *j = NULL;
    ck_assert_int_eq(st_log_sync_begin(log, 0, &j), KP_OK);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(st_log_sync_target(j), 4);
    /* in flight: never a second one, whatever arrives meanwhile */
    ck_assert(!st_log_flush_due(log, 0));
    append_n(log, 3, 2, 100);
    ck_assert(!st_log_flush_due(log, 0));
    ck_assert_int_eq(st_log_recovery_point(log), 0);
    ck_assert_int_eq(st_log_sync_run(j), KP_OK);
    ck_assert_int_eq(st_log_recovery_point(log), 0);   /* the job never touches the log */
    ck_assert_int_eq(st_log_sync_end(log, j, true), KP_OK);
    ck_assert_int_eq(st_log_recovery_point(log), 4);
    ck_assert(st_log_flush_due(log, 0));                /* 6 messages came meanwhile */
    ck_assert_int_eq(st_log_sync_begin(log, 0, &j), KP_OK);
    ck_assert_int_eq(st_log_sync_target(j), 10);
    ck_assert_int_eq(st_log_sync_run(j), KP_OK);
    ck_assert_int_eq(st_log_sync_end(log, j, true), KP_OK);
    ck_assert_int_eq(st_log_recovery_point(log), 10);
    ck_assert(!st_log_flush_due(log, 0));
    /* nothing to do: no job */
    ck_assert_int_eq(st_log_sync_begin(log, 0, &j), KP_OK);
    ck_assert_ptr_null(j);
    ck_assert(!st_log_flush_due(log, 0));
    close_rm(log, dir);
}
END_TEST

/* flush.ms counts from when the last flush began. */
START_TEST(test_sync_flush_ms) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    cfg.flush_ms = 100;
    st_log_t *log = tu_open(dir, &cfg, 0, false);   /* opened at 1000 */
    ck_assert(!st_log_flush_due(log, 5000));          /* nothing appended */
    append_n(log, 1, 1, 100);
    ck_assert(!st_log_flush_due(log, 1099));
    ck_assert(st_log_flush_due(log, 1100));
    sync_once(log, 1100);
    append_n(log, 1, 1, 100);
    ck_assert(!st_log_flush_due(log, 1199));
    ck_assert(st_log_flush_due(log, 1200));
    close_rm(log, dir);
}
END_TEST

/* A job the pool never ran changes nothing, and the flush stays due. */
START_TEST(test_sync_not_ran_stays_due) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    cfg.flush_messages = 2;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    append_n(log, 2, 1, 100);
    st_log_sync_t *j = NULL;
    ck_assert_int_eq(st_log_sync_begin(log, 0, &j), KP_OK);
    ck_assert(!st_log_flush_due(log, 0));
    ck_assert_int_eq(st_log_sync_end(log, j, false), KP_OK);
    ck_assert_int_eq(st_log_recovery_point(log), 0);
    ck_assert(st_log_flush_due(log, 0));
    close_rm(log, dir);
}
END_TEST

/* A truncation while the job runs: the bytes it made durable may be gone
 * and replaced, so the recovery point must not move to its target. */
START_TEST(test_sync_after_truncation_keeps_recovery_point) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    cfg.flush_messages = 1;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    append_n(log, 10, 2, 100);
    st_log_sync_t *j = NULL;
    ck_assert_int_eq(st_log_sync_begin(log, 0, &j), KP_OK);
    ck_assert_int_eq(st_log_sync_target(j), 20);
    ck_assert_int_eq(st_log_truncate_to(log, 6), KP_OK);
    append_n(log, 5, 2, 100);                          /* new bytes at 6.. */
    ck_assert_int_eq(st_log_sync_run(j), KP_OK);
    ck_assert_int_eq(st_log_sync_end(log, j, true), KP_OK);
    ck_assert_int_eq(st_log_recovery_point(log), 0);
    /* the next job covers them */
    ck_assert(st_log_flush_due(log, 0));
    sync_once(log, 0);
    ck_assert_int_eq(st_log_recovery_point(log), 16);
    close_rm(log, dir);
}
END_TEST

/* A roll while the job runs creates a file the job's directory fsync did
 * not cover: the log stays dirty, so st_log_dup_sync_fd (raft) refuses. */
START_TEST(test_sync_roll_meanwhile_keeps_dir_dirty) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    cfg.flush_messages = 1;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    append_n(log, 1, 1, 100);
    sync_once(log, 0);
    int fd = st_log_dup_sync_fd(log);
    ck_assert_int_ge(fd, 0);                            /* clean: one file to sync */
    close(fd);
    st_log_sync_t *j = NULL;
    ck_assert_int_eq(st_log_sync_begin(log, 0, &j), KP_OK);
    ck_assert_ptr_null(j);
    append_n(log, 1, 1, 100);
    ck_assert_int_eq(st_log_sync_begin(log, 0, &j), KP_OK);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(st_log_roll(log, 6000), KP_OK);    /* a new segment file */
    ck_assert_int_eq(st_log_sync_run(j), KP_OK);
    ck_assert_int_eq(st_log_sync_end(log, j, true), KP_OK);
    ck_assert_int_eq(st_log_dup_sync_fd(log), -1);     /* the new file's entry is not durable */
    ck_assert_int_eq(st_log_flush(log), KP_OK);
    fd = st_log_dup_sync_fd(log);
    ck_assert_int_ge(fd, 0);
    close(fd);
    close_rm(log, dir);
}
END_TEST

/* A failed fsync in the job takes the log offline at the end. */
START_TEST(test_sync_failure_takes_log_offline) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    cfg.flush_messages = 1;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    append_n(log, 3, 1, 100);
    st_log_sync_t *j = NULL;
    ck_assert_int_eq(st_log_sync_begin(log, 0, &j), KP_OK);
    st_io_set_sync(true);   /* the injected failure needs the real call path */
    st_io_inject(ST_IO_FSYNC, 0, EIO);
    ck_assert_int_eq(st_log_sync_run(j), ST_ERR_IO);
    st_io_inject_clear();
    ck_assert_int_eq(st_log_sync_end(log, j, true), ST_ERR_IO);
    ck_assert_int_eq(st_log_recovery_point(log), 0);
    ck_assert(strstr(tu_log_buf, "offline") != NULL);
    uint8_t buf[4096];
    size_t len = tu_batch(buf, sizeof buf, 1, 1, 1, 10);
    st_append_info_t info;
    ck_assert_int_eq(st_log_append(log, buf, len, 3, 0, &info), ST_ERR_OFFLINE);
    ck_assert(!st_log_flush_due(log, 0));
    ck_assert_int_eq(st_log_sync_begin(log, 0, &j), ST_ERR_OFFLINE);
    close_rm(log, dir);
}
END_TEST

/* Closed, or deleted, while its fsync job runs: the job has its own
 * descriptors and paths, so it still runs cleanly, and is then freed
 * without the log (valgrind: no leak, no invalid access). */
START_TEST(test_sync_log_closed_or_deleted_meanwhile) {
    for (int del = 0; del < 2; del++) {
        char *dir = tu_tmpdir();
        st_log_config_t cfg = small_cfg();
        cfg.flush_messages = 1;
        st_log_t *log = tu_open(dir, &cfg, 0, false);
        append_n(log, 100, 2, 100);  /* several segments */
        ck_assert_int_gt(st_log_segment_count(log), 2);
        st_log_sync_t *j = NULL;
        ck_assert_int_eq(st_log_sync_begin(log, 0, &j), KP_OK);
        if (del) ck_assert_int_eq(st_log_delete(log), KP_OK);
        else ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
        st_io_set_sync(true);        /* real fsyncs on the job's descriptors */
        ck_assert_int_eq(st_log_sync_run(j), KP_OK);
        st_io_set_sync(false);
        st_log_sync_free(j);
        tu_rmrf(dir);
        free(dir);
    }
}
END_TEST

/* More segments past the recovery point than one job takes: it covers the
 * oldest ST_SYNC_SEGMENTS_MAX and leaves the flush due for the rest. */
START_TEST(test_sync_job_bounded) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    cfg.segment_bytes = 64;    /* one batch per segment */
    cfg.flush_messages = INT64_MAX;
    cfg.flush_ms = 1;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    append_n(log, ST_SYNC_SEGMENTS_MAX + 10, 1, 100);
    ck_assert_uint_eq(st_log_segment_count(log), ST_SYNC_SEGMENTS_MAX + 10);
    st_log_sync_t *j = NULL;
    ck_assert_int_eq(st_log_sync_begin(log, 5000, &j), KP_OK);
    ck_assert_int_eq(st_log_sync_target(j), ST_SYNC_SEGMENTS_MAX);
    ck_assert_int_eq(st_log_sync_run(j), KP_OK);
    ck_assert_int_eq(st_log_sync_end(log, j, true), KP_OK);
    ck_assert_int_eq(st_log_recovery_point(log), ST_SYNC_SEGMENTS_MAX);
    ck_assert(st_log_flush_due(log, 5001));
    ck_assert_int_eq(st_log_sync_begin(log, 5001, &j), KP_OK);
    ck_assert_int_eq(st_log_sync_target(j), ST_SYNC_SEGMENTS_MAX + 10);
    ck_assert_int_eq(st_log_sync_run(j), KP_OK);
    ck_assert_int_eq(st_log_sync_end(log, j, true), KP_OK);
    ck_assert_int_eq(st_log_recovery_point(log), st_log_end_offset(log));
    close_rm(log, dir);
}
END_TEST

/* ---- retention off the owner's thread ----------------------------------------- */

/* The segments leave the log at once (log start, reads, count); their files
 * stay until the job, which renames and unlinks them and the producer
 * snapshots below the new first segment; a reopen agrees. */
START_TEST(test_retention_detach_then_drop) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    cfg.retention_ms = 1000;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    append_n(log, 100, 2, 100);
    size_t before = st_log_segment_count(log);
    ck_assert_int_gt(before, 3);
    char pdir[600];
    snprintf(pdir, sizeof pdir, "%s/t-0", dir);
    int logs_before = tu_count_suffix(pdir, ".log");
    ck_assert_int_eq(logs_before, (int)before);
    ck_assert_int_gt(tu_count_suffix(pdir, ".snapshot"), 1);
    st_log_drop_t *d = NULL;
    int deleted = -1;
    ck_assert_int_eq(st_log_retention_detach(log, 1050, &d, &deleted), KP_OK);   /* all young */
    ck_assert_ptr_null(d);
    ck_assert_int_eq(deleted, 0);
    d = detach(log, 100000, &deleted);
    ck_assert_int_eq((size_t)deleted, before - 1);
    ck_assert_uint_eq(st_log_drop_count(d), before - 1);
    ck_assert_str_eq(st_log_drop_dir(d), pdir);
    int64_t start = st_log_active_base_offset(log);
    ck_assert_int_eq(st_log_segment_count(log), 1);
    ck_assert_int_eq(st_log_start_offset(log), start);
    st_read_result_t rr;
    ck_assert_int_eq(st_log_read(log, 0, 100, -1, 0, &rr), ST_ERR_OUT_OF_RANGE);
    /* nothing on disk changed yet: the owner renamed nothing */
    ck_assert_int_eq(tu_count_suffix(pdir, ".log"), logs_before);
    ck_assert_int_eq(tu_count_suffix(pdir, ".deleted"), 0);
    ck_assert(file_exists(pdir, 0, ".log"));
    /* appends go on meanwhile */
    append_n(log, 3, 2, 200000);
    ck_assert_int_eq(st_log_drop_run(d), KP_OK);
    st_log_drop_free(d);
    ck_assert(!file_exists(pdir, 0, ".log"));
    ck_assert(!file_exists(pdir, 0, ".index"));
    ck_assert(!file_exists(pdir, 0, ".timeindex"));
    ck_assert(file_exists(pdir, start, ".log"));
    ck_assert_int_eq(tu_count_suffix(pdir, ".deleted"), 0);
    ck_assert_int_eq(tu_count_suffix(pdir, ".log"), (int)st_log_segment_count(log));
    /* snapshots below the first kept segment went with them */
    DIR *dd = opendir(pdir);
    struct dirent *e;
    while ((e = readdir(dd)) != NULL)
        if (strlen(e->d_name) == 29 && strcmp(e->d_name + 20, ".snapshot") == 0)
            ck_assert_int_ge(strtoll(e->d_name, NULL, 10), start);
    closedir(dd);
    int64_t leo = st_log_end_offset(log);
    st_log_offsets_t fin;
    ck_assert_int_eq(st_log_close(log, &fin), KP_OK);
    ck_assert_int_eq(fin.log_start_offset, start);
    log = tu_open(dir, &cfg, fin.recovery_point, true);
    ck_assert_int_eq(st_log_start_offset(log), start);
    ck_assert_int_eq(st_log_end_offset(log), leo);
    close_rm(log, dir);
}
END_TEST

/* A crash before the job ran: the files are still segments, below the
 * checkpointed log start; the reopened log holds them and the next
 * retention takes them again. */
START_TEST(test_retention_detached_not_dropped_survives_reopen) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    cfg.retention_ms = 1000;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    append_n(log, 60, 2, 100);
    int deleted = 0;
    st_log_drop_t *d = detach(log, 100000, &deleted);
    st_log_drop_free(d);                                /* never ran */
    st_log_offsets_t fin;
    ck_assert_int_eq(st_log_close(log, &fin), KP_OK);
    st_log_open_opts_t o = { .recovery_point = fin.recovery_point, .log_start_offset = fin.log_start_offset,
                             .clean_shutdown = true, .create = false, .now_ms = 0 };
    ck_assert_int_eq(st_log_open(dir, "t", 0, &cfg, &o, &log), KP_OK);
    ck_assert_int_eq(st_log_start_offset(log), fin.log_start_offset);
    ck_assert_int_gt(st_log_segment_count(log), 1);
    st_log_set_deferred_removal(log, true);
    d = detach(log, 100000, &deleted);
    ck_assert_int_eq(st_log_drop_run(d), KP_OK);
    st_log_drop_free(d);
    ck_assert_int_eq(st_log_segment_count(log), 1);
    close_rm(log, dir);
}
END_TEST

/* The partition directory was deleted and re-created under its name
 * before the job ran: the job must not touch the new log's files, even
 * those with the same names. */
START_TEST(test_drop_never_touches_a_recreated_directory) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    cfg.retention_ms = 1000;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    append_n(log, 60, 2, 100);
    int deleted = 0;
    st_log_drop_t *d = detach(log, 100000, &deleted);
    char pdir[600], trash[700];
    snprintf(pdir, sizeof pdir, "%s/t-0", dir);
    snprintf(trash, sizeof trash, "%s.1-delete", pdir);
    st_log_discard(log);
    ck_assert_int_eq(rename(pdir, trash), 0);
    log = tu_open(dir, &cfg, 0, false);                 /* a new t-0 with 00..0.log */
    append_n(log, 30, 2, 100);
    ck_assert(file_exists(pdir, 0, ".log"));
    ck_assert_int_eq(st_log_drop_run(d), KP_OK);
    st_log_drop_free(d);
    ck_assert(file_exists(pdir, 0, ".log"));
    ck_assert(file_exists(pdir, 0, ".index"));
    ck_assert_int_eq(tu_count_suffix(pdir, ".deleted"), 0);
    int64_t end;
    ck_assert_int_eq(tu_scan(log, 0, &end), 30);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    /* and a job whose directory is simply gone does nothing */
    log = tu_open(dir, &cfg, 0, true);
    append_n(log, 60, 2, 100000);
    d = detach(log, 1000000, &deleted);
    ck_assert_int_eq(st_log_delete(log), KP_OK);
    ck_assert_int_eq(st_log_drop_run(d), KP_OK);
    st_log_drop_free(d);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* DeleteRecords on a log with deferred removal: the start moves, no file
 * is touched; retention (whatever the cleanup policy) then takes the
 * segments wholly below the start; restarting below them is refused. */
START_TEST(test_deferred_advance_start) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    cfg.cleanup_policy = ST_CLEANUP_COMPACT;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    st_log_set_deferred_removal(log, true);
    append_n(log, 60, 2, 100);
    size_t before = st_log_segment_count(log);
    int64_t leo = st_log_end_offset(log);
    char pdir[600];
    snprintf(pdir, sizeof pdir, "%s/t-0", dir);
    ck_assert_int_eq(st_log_advance_start(log, leo - 2), KP_OK);
    ck_assert_int_eq(st_log_start_offset(log), leo - 2);
    ck_assert_uint_eq(st_log_segment_count(log), before);
    ck_assert_int_eq(tu_count_suffix(pdir, ".deleted"), 0);
    ck_assert(file_exists(pdir, 0, ".log"));
    st_read_result_t rr;
    ck_assert_int_eq(st_log_read(log, 0, 100, -1, 0, &rr), ST_ERR_OUT_OF_RANGE);
    int deleted = 0;
    st_log_drop_t *d = detach(log, 0, &deleted);
    ck_assert_int_eq((size_t)deleted, before - 1);
    ck_assert_int_eq(st_log_drop_run(d), KP_OK);
    st_log_drop_free(d);
    ck_assert(!file_exists(pdir, 0, ".log"));
    ck_assert_int_eq(st_log_start_offset(log), leo - 2);
    /* a restart below a removed segment could collide with a pending rename */
    ck_assert_int_eq(st_log_truncate_fully(log, 0, 0), ST_ERR_BAD_OFFSET);
    ck_assert_int_eq(st_log_truncate_fully(log, leo + 100, 0), KP_OK);
    ck_assert_int_eq(st_log_start_offset(log), leo + 100);
    close_rm(log, dir);
}
END_TEST

/* ---- the loop-thread guard ------------------------------------------------------ */

/* On a thread marked as the loop, every blocking storage call counts
 * (and is logged); the split forms' owner halves do not; an allow scope
 * and other threads are exempt. */
START_TEST(test_guard_counts_blocking_calls_on_the_loop) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    cfg.flush_messages = 1;
    cfg.retention_ms = 1000;
    st_log_t *log = tu_open(dir, &cfg, 0, false);      /* not the loop yet */
    append_n(log, 60, 2, 100);
    ck_assert_uint_eq(st_guard_violations(), 0);
    st_guard_enter_loop();
    ck_assert(st_guard_on_loop());
    /* the owner halves: no violation */
    st_log_sync_t *j = NULL;
    ck_assert_int_eq(st_log_sync_begin(log, 0, &j), KP_OK);
    int deleted = 0;
    st_log_set_deferred_removal(log, true);
    ck_assert_int_eq(st_log_advance_start(log, 10), KP_OK);
    st_log_drop_t *d = detach(log, 100000, &deleted);
    ck_assert_int_eq(st_log_sync_end(log, j, false), KP_OK);
    ck_assert_uint_eq(st_guard_violations(), 0);
    /* the blocking forms: each one counts */
    ck_assert_int_eq(st_log_drop_run(d), KP_OK);
    ck_assert_uint_eq(st_guard_violations(), 1);
    ck_assert(strstr(tu_log_buf, "on the event loop thread") != NULL);
    ck_assert_int_eq(st_log_flush(log), KP_OK);
    ck_assert_uint_eq(st_guard_violations(), 2);
    append_n(log, 1, 1, 100);
    ck_assert_int_eq(st_log_maybe_flush(log, 0), KP_OK);
    ck_assert_uint_eq(st_guard_violations(), 3);
    st_log_purge_deleted(dir);
    ck_assert_uint_eq(st_guard_violations(), 4);
    /* inside an allow scope (a documented exception): not counted */
    st_guard_allow_begin();
    ck_assert_int_eq(st_log_flush(log), KP_OK);
    st_guard_allow_end();
    ck_assert_uint_eq(st_guard_violations(), 4);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);   /* counts itself and its flush */
    uint64_t v = st_guard_violations();
    ck_assert_uint_ge(v, 5);
    st_guard_leave_loop();
    log = tu_open(dir, &cfg, 0, true);                 /* off the loop: free */
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    ck_assert_uint_eq(st_guard_violations(), v);
    st_log_drop_free(d);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* Fatal mode (tests, SKIFF_LOOP_GUARD=abort): the first blocking call on
 * the loop aborts — this test passes only if it dies of SIGABRT. */
START_TEST(test_guard_fatal_aborts) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    append_n(log, 1, 1, 100);
    tu_rmrf(dir);   /* nothing cleans up after the abort; the open log needs no path */
    free(dir);
    st_guard_set_fatal(true);
    st_guard_enter_loop();
    int rc = st_log_flush(log);
    ck_abort_msg("not reached: the guard must abort (flush returned %d)", rc);
}
END_TEST

/* The same on a thread that is not the loop: nothing happens. */
START_TEST(test_guard_fatal_ignores_other_threads) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = small_cfg();
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    append_n(log, 1, 1, 100);
    st_guard_set_fatal(true);
    ck_assert_int_eq(st_log_flush(log), KP_OK);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    st_guard_set_fatal(false);
    ck_assert_uint_eq(st_guard_violations(), 0);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

int main(void) {
    Suite *s = suite_create("st_async");
    TCase *tc = tcase_create("async");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_sync_job_moves_recovery_point_at_end);
    tcase_add_test(tc, test_sync_flush_ms);
    tcase_add_test(tc, test_sync_not_ran_stays_due);
    tcase_add_test(tc, test_sync_after_truncation_keeps_recovery_point);
    tcase_add_test(tc, test_sync_roll_meanwhile_keeps_dir_dirty);
    tcase_add_test(tc, test_sync_failure_takes_log_offline);
    tcase_add_test(tc, test_sync_log_closed_or_deleted_meanwhile);
    tcase_add_test(tc, test_sync_job_bounded);
    tcase_add_test(tc, test_retention_detach_then_drop);
    tcase_add_test(tc, test_retention_detached_not_dropped_survives_reopen);
    tcase_add_test(tc, test_drop_never_touches_a_recreated_directory);
    tcase_add_test(tc, test_deferred_advance_start);
    tcase_add_test(tc, test_guard_counts_blocking_calls_on_the_loop);
    tcase_add_test_raise_signal(tc, test_guard_fatal_aborts, SIGABRT);
    tcase_add_test(tc, test_guard_fatal_ignores_other_threads);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
