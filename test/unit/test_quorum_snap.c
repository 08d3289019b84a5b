/* Unit tests for broker/quorum_snap.c: snapshot files round-trip, the
 * newest one is picked, prune keeps only the given one, and a damaged
 * newest file (flipped byte, truncation at every length, wrong length
 * field) is refused — never replaced by an older one silently. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/quorum/quorum_snap.h"

static char dir[256];

static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/test_qsnap.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void path_of(raft_snapshot_id_t id, char *out, size_t cap) {
    snprintf(out, cap, "%s/%020lld-%010d.checkpoint", dir, (long long)id.end_offset, id.epoch);
}

START_TEST(test_empty_dir_has_no_snapshot) {
    raft_snapshot_id_t id = { 5, 5 };
    uint8_t *d = (uint8_t *)1;
    size_t len = 9;
    ck_assert_int_eq(bk_quorum_snap_load_latest(dir, &id, &d, &len), KP_OK);
    ck_assert_int_eq(id.end_offset, 0);
    ck_assert_ptr_null(d);
}
END_TEST

START_TEST(test_newest_wins_and_prune) {
    static const uint8_t a[] = "image at 10", b[] = "image at 250!";
    raft_snapshot_id_t ia = { 10, 1 }, ib = { 250, 3 };
    ck_assert_int_eq(bk_quorum_snap_write(dir, ia, a, sizeof a), KP_OK);
    ck_assert_int_eq(bk_quorum_snap_write(dir, ib, b, sizeof b), KP_OK);
    raft_snapshot_id_t id;
    uint8_t *d;
    size_t len;
    ck_assert_int_eq(bk_quorum_snap_load_latest(dir, &id, &d, &len), KP_OK);
    ck_assert_int_eq(id.end_offset, 250);
    ck_assert_int_eq(id.epoch, 3);
    ck_assert_uint_eq(len, sizeof b);
    ck_assert(memcmp(d, b, len) == 0);
    free(d);
    bk_quorum_snap_prune(dir, ib);
    char p[600];
    path_of(ia, p, sizeof p);
    ck_assert_int_ne(access(p, F_OK), 0);
    path_of(ib, p, sizeof p);
    ck_assert_int_eq(access(p, F_OK), 0);
}
END_TEST

START_TEST(test_empty_image_round_trips) {
    raft_snapshot_id_t i0 = { 1, 1 };
    ck_assert_int_eq(bk_quorum_snap_write(dir, i0, NULL, 0), KP_OK);
    raft_snapshot_id_t id;
    uint8_t *d;
    size_t len = 7;
    ck_assert_int_eq(bk_quorum_snap_load_latest(dir, &id, &d, &len), KP_OK);
    ck_assert_uint_eq(len, 0);
    free(d);
}
END_TEST

static void rewrite(const char *p, const uint8_t *buf, size_t len) {
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
}

START_TEST(test_damaged_newest_refused) {
    static const uint8_t old[] = "older", img[] = "the newest image bytes";
    raft_snapshot_id_t io = { 5, 1 }, in = { 9, 2 };
    ck_assert_int_eq(bk_quorum_snap_write(dir, io, old, sizeof old), KP_OK);
    ck_assert_int_eq(bk_quorum_snap_write(dir, in, img, sizeof img), KP_OK);
    char p[600];
    path_of(in, p, sizeof p);
    uint8_t good[128];
    FILE *f = fopen(p, "rb");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(good, 1, sizeof good, f);
    fclose(f);
    ck_assert_uint_eq(n, 12 + sizeof img);
    raft_snapshot_id_t id;
    uint8_t *d;
    size_t len;
    /* every single flipped byte (CRC, length or data) */
    for (size_t i = 0; i < n; i++) {
        uint8_t bad[128];
        memcpy(bad, good, n);
        bad[i] ^= 0x40;
        rewrite(p, bad, n);
        d = NULL;
        ck_assert_int_ne(bk_quorum_snap_load_latest(dir, &id, &d, &len), KP_OK);
        ck_assert_ptr_null(d);
    }
    /* every truncation */
    for (size_t cut = 0; cut < n; cut++) {
        rewrite(p, good, cut);
        ck_assert_int_ne(bk_quorum_snap_load_latest(dir, &id, &d, &len), KP_OK);
    }
    /* restored: accepted again */
    rewrite(p, good, n);
    ck_assert_int_eq(bk_quorum_snap_load_latest(dir, &id, &d, &len), KP_OK);
    ck_assert_int_eq(id.end_offset, 9);
    free(d);
}
END_TEST

START_TEST(test_foreign_names_ignored) {
    char p[600];
    snprintf(p, sizeof p, "%s/00000000000000000099-0000000001.checkpoint.tmp", dir);
    rewrite(p, (const uint8_t *)"x", 1);
    snprintf(p, sizeof p, "%s/quorum-state", dir);
    rewrite(p, (const uint8_t *)"{}", 2);
    raft_snapshot_id_t id;
    uint8_t *d;
    size_t len;
    ck_assert_int_eq(bk_quorum_snap_load_latest(dir, &id, &d, &len), KP_OK);
    ck_assert_int_eq(id.end_offset, 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("quorum_snap");
    TCase *tc = tcase_create("files");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_empty_dir_has_no_snapshot);
    tcase_add_test(tc, test_newest_wins_and_prune);
    tcase_add_test(tc, test_empty_image_round_trips);
    tcase_add_test(tc, test_damaged_newest_refused);
    tcase_add_test(tc, test_foreign_names_ignored);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
