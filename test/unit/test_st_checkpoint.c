/* test_st_checkpoint.c — offset checkpoint files: write then read back is the
 * identity for thousands of partitions in several dirs, and writers of the
 * same file running at once (the periodic checkpoint on the worker pool, the
 * shutdown checkpoint, a second node's dir given twice) never leave a file
 * the reader calls malformed. Before each writer had its own temporary file,
 * two writers shared "<file>.tmp": one's O_TRUNC and shorter write under the
 * other's longer one gave "checkpoint file ... is malformed at line N". */
#include <check.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>

#include "st_test_util.h"
#include "storage/st_checkpoint.h"
#include "storage/st_logdirs.h"
#include "storage/st_status.h"

#define NPARTS 3000
#define NDIRS 3

static char g_topics[NPARTS][32];

/* Rows of `n` partitions whose offsets carry `salt` (one writer's view). */
static st_logdir_entry_t *rows_for(size_t n, int64_t salt) {
    st_logdir_entry_t *e = calloc(n, sizeof *e);
    ck_assert_ptr_nonnull(e);
    for (size_t i = 0; i < n; i++) {
        e[i].topic = g_topics[i];
        e[i].partition = (int32_t)(i % 50);
        e[i].offsets.log_start_offset = salt + (int64_t)i;
        e[i].offsets.recovery_point = salt + 2 * (int64_t)i;
        e[i].offsets.high_watermark = salt + 3 * (int64_t)i;
        e[i].offsets.log_end_offset = salt + 4 * (int64_t)i;
        e[i].offsets.cleaner_offset = i % 3 == 0 ? 0 : salt + 5 * (int64_t)i;
    }
    return e;
}

static void check_loaded(const st_logdir_t *ld, const st_logdir_entry_t *e, size_t n) {
    ck_assert_uint_eq(ld->n_rp, n);
    ck_assert_uint_eq(ld->n_hw, n);
    ck_assert_uint_eq(ld->n_start, n);
    ck_assert_uint_eq(ld->n_cleaner, n);
    for (size_t i = 0; i < n; i++) {
        ck_assert_str_eq(ld->cleaner[i].topic, e[i].topic);
        ck_assert_int_eq(ld->cleaner[i].partition, e[i].partition);
        ck_assert_int_eq(ld->rp[i].offset, e[i].offsets.recovery_point);
        ck_assert_int_eq(ld->hw[i].offset, e[i].offsets.high_watermark);
        ck_assert_int_eq(ld->start[i].offset, e[i].offsets.log_start_offset);
        ck_assert_int_eq(ld->cleaner[i].offset, e[i].offsets.cleaner_offset);
    }
}

START_TEST(roundtrip_many_partitions) {
    tu_log_capture();
    char *root = tu_tmpdir();
    char dirs[NDIRS][256];
    st_logdir_entry_t *e = rows_for(NPARTS, 1000);
    for (int d = 0; d < NDIRS; d++) {
        snprintf(dirs[d], sizeof dirs[d], "%s/d%d", root, d);
        ck_assert_int_eq(mkdir(dirs[d], 0755), 0);
        size_t n = NPARTS - (size_t)d * 700;   /* 3000, 2300, 1600 */
        ck_assert_int_eq(st_logdir_checkpoint(dirs[d], e, n), KP_OK);
    }
    for (int d = 0; d < NDIRS; d++) {
        st_logdir_t ld;
        ck_assert_int_eq(st_logdir_load(&ld, dirs[d]), KP_OK);
        check_loaded(&ld, e, NPARTS - (size_t)d * 700);
        st_logdir_free(&ld);
    }
    ck_assert_ptr_null(strstr(tu_log_buf, "malformed"));
    free(e);
    tu_rmrf(root);
    free(root);
}
END_TEST

typedef struct {
    const char *dir;
    size_t n;
    int64_t salt;
    int rounds;
    int failures;
} writer_t;

static void *writer_main(void *arg) {
    writer_t *w = arg;
    st_logdir_entry_t *e = rows_for(w->n, w->salt);
    for (int r = 0; r < w->rounds; r++)
        if (st_logdir_checkpoint(w->dir, e, w->n) != KP_OK) w->failures++;
    free(e);
    return NULL;
}

/* Four writers of one dir at once, with 3000, 1680, 6 and 0 rows: each file
 * read back afterwards is one writer's whole file, never a mix. */
START_TEST(concurrent_writers_same_dir) {
    tu_log_capture();
    char *root = tu_tmpdir();
    static const size_t counts[] = { NPARTS, 1680, 6, 0 };
    enum { NW = sizeof counts / sizeof counts[0] };
    for (int round = 0; round < 8; round++) {
        writer_t w[NW];
        pthread_t th[NW];
        for (int i = 0; i < NW; i++) {
            w[i] = (writer_t){ root, counts[i], (int64_t)i * 1000000, 4, 0 };
            ck_assert_int_eq(pthread_create(&th[i], NULL, writer_main, &w[i]), 0);
        }
        for (int i = 0; i < NW; i++) pthread_join(th[i], NULL);
        st_logdir_t ld;
        ck_assert_int_eq(st_logdir_load(&ld, root), KP_OK);
        ck_assert_msg(strstr(tu_log_buf, "malformed") == NULL, "round %d: %s", round, tu_log_buf);
        for (int i = 0; i < NW; i++) ck_assert_int_eq(w[i].failures, 0);   /* no rename of a vanished tmp */
        /* whole files: each one's count is one writer's */
        bool known = false;
        for (int i = 0; i < NW; i++) known |= ld.n_cleaner == counts[i];
        ck_assert(known);
        for (size_t k = 0; k < ld.n_cleaner; k++) {
            ck_assert_str_eq(ld.cleaner[k].topic, g_topics[k]);
        }
        st_logdir_free(&ld);
    }
    /* no temporary file left behind by a writer */
    DIR *d = opendir(root);
    ck_assert_ptr_nonnull(d);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) ck_assert_msg(strstr(de->d_name, ".tmp") == NULL, "left: %s", de->d_name);
    closedir(d);
    tu_rmrf(root);
    free(root);
}
END_TEST

/* A temporary file a crash left in the log dir is removed at load. */
START_TEST(stale_tmp_removed_at_load) {
    tu_log_capture();
    char *root = tu_tmpdir();
    char p[512];
    snprintf(p, sizeof p, "%s/cleaner-offset-checkpoint.123-4.tmp", root);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs("0\n5\nx 0", f);
    fclose(f);
    st_logdir_t ld;
    ck_assert_int_eq(st_logdir_load(&ld, root), KP_OK);
    st_logdir_free(&ld);
    ck_assert_int_ne(access(p, F_OK), 0);
    tu_rmrf(root);
    free(root);
}
END_TEST

int main(void) {
    for (size_t i = 0; i < NPARTS; i++)   /* before any thread: read-only after */
        snprintf(g_topics[i], sizeof g_topics[i], "topic.%03zu_x-%zu", i % 97, i / 97);
    Suite *s = suite_create("st_checkpoint");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, roundtrip_many_partitions);
    tcase_add_test(tc, concurrent_writers_same_dir);
    tcase_add_test(tc, stale_tmp_removed_at_load);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
