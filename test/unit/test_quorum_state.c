/* Unit tests for broker/quorum_state.c: the quorum-state file round-trips,
 * a missing file is a fresh state, and corrupt content (truncated at every
 * byte, wrong types, out-of-range values, missing keys, trailing garbage)
 * is refused with the file left as it was. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/quorum/quorum_state.h"

static char dir[256];

static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/test_qstate.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, BK_QUORUM_STATE_FILE);
    unlink(path);
    rmdir(dir);
}

static void write_raw(const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, BK_QUORUM_STATE_FILE);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

START_TEST(test_missing_file_is_fresh) {
    raft_hard_state_t hs = { 9, 9, 9 };
    char why[256];
    ck_assert_int_eq(bk_quorum_state_read(dir, &hs, why, sizeof why), KP_OK);
    ck_assert_int_eq(hs.epoch, 0);
    ck_assert_int_eq(hs.voted_for, RAFT_NO_NODE);
    ck_assert_int_eq(hs.leader_id, RAFT_NO_NODE);
}
END_TEST

START_TEST(test_write_read_round_trip) {
    raft_hard_state_t in[] = { { 0, -1, -1 }, { 7, 2, 3 }, { INT32_MAX, 1, -1 } };
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        ck_assert_int_eq(bk_quorum_state_write(dir, &in[i]), KP_OK);
        raft_hard_state_t out = { -5, -5, -5 };
        char why[256];
        ck_assert_int_eq(bk_quorum_state_read(dir, &out, why, sizeof why), KP_OK);
        ck_assert_int_eq(out.epoch, in[i].epoch);
        ck_assert_int_eq(out.voted_for, in[i].voted_for);
        ck_assert_int_eq(out.leader_id, in[i].leader_id);
    }
    /* no temp file ("<file>.<pid>-<seq>.tmp", one per writer) is left behind */
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) ck_assert_msg(strstr(de->d_name, ".tmp") == NULL, "left behind: %s", de->d_name);
    closedir(d);
}
END_TEST

START_TEST(test_kafka_style_text_parses) {
    /* whitespace, key order and extra integer keys are accepted */
    const char *t = " { \"voted_id\" : 3 ,\n\"leader_epoch\":12, \"leader_id\":-1, \"data_version\":0, \"x\":5 }\n";
    raft_hard_state_t hs;
    char why[128];
    ck_assert_int_eq(bk_quorum_state_parse(t, strlen(t), &hs, why, sizeof why), KP_OK);
    ck_assert_int_eq(hs.epoch, 12);
    ck_assert_int_eq(hs.voted_for, 3);
    ck_assert_int_eq(hs.leader_id, -1);
}
END_TEST

START_TEST(test_truncated_at_every_byte) {
    raft_hard_state_t hs = { 41, 2, 2 };
    char buf[256];
    int n = bk_quorum_state_format(&hs, buf, sizeof buf);
    ck_assert_int_gt(n, 0);
    /* the trailing newline may go; anything shorter than the closing brace may not */
    size_t brace = (size_t)(strrchr(buf, '}') - buf);
    for (size_t cut = 0; cut <= brace; cut++) {
        raft_hard_state_t out = { 1, 1, 1 };
        char why[128];
        ck_assert_int_eq(bk_quorum_state_parse(buf, cut, &out, why, sizeof why), KP_ERR_CORRUPT);
        ck_assert_int_eq(out.epoch, 1);   /* untouched */
    }
}
END_TEST

START_TEST(test_corrupt_files_refused) {
    const char *bad[] = {
        "",
        "[]",
        "{}",
        "{\"leader_id\":1,\"leader_epoch\":2}",                          /* voted_id missing */
        "{\"leader_id\":1,\"leader_epoch\":\"2\",\"voted_id\":1}",       /* string value */
        "{\"leader_id\":1,\"leader_epoch\":-2,\"voted_id\":1}",          /* negative epoch */
        "{\"leader_id\":-7,\"leader_epoch\":2,\"voted_id\":1}",          /* id below -1 */
        "{\"leader_id\":1,\"leader_epoch\":2147483648,\"voted_id\":1}",  /* over int32 */
        "{\"leader_id\":1,\"leader_epoch\":02,\"voted_id\":1}",          /* leading zero */
        "{\"leader_id\":1,\"leader_epoch\":2,\"voted_id\":1}x",          /* trailing garbage */
        "{\"leader_id\":1,\"leader_epoch\":2,\"voted_id\":1,\"data_version\":1}",
        "{\"leader_id\":1 \"leader_epoch\":2,\"voted_id\":1}",           /* missing comma */
        "{\"lead\\u0065r_id\":1,\"leader_epoch\":2,\"voted_id\":1}",     /* escapes not ours */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_raw(bad[i]);
        raft_hard_state_t hs = { 3, 3, 3 };
        char why[512] = "";
        ck_assert_msg(bk_quorum_state_read(dir, &hs, why, sizeof why) != KP_OK, "accepted: %s", bad[i]);
        ck_assert_ptr_nonnull(strstr(why, BK_QUORUM_STATE_FILE));   /* the message names the file */
        ck_assert_int_eq(hs.epoch, 3);
    }
}
END_TEST

START_TEST(test_oversized_file_refused) {
    char *big = malloc(BK_QUORUM_STATE_MAX_BYTES + 100);
    ck_assert_ptr_nonnull(big);
    memset(big, ' ', BK_QUORUM_STATE_MAX_BYTES + 99);
    big[BK_QUORUM_STATE_MAX_BYTES + 99] = '\0';
    write_raw(big);
    free(big);
    raft_hard_state_t hs;
    char why[512];
    ck_assert_int_ne(bk_quorum_state_read(dir, &hs, why, sizeof why), KP_OK);
}
END_TEST

START_TEST(test_format_bounds) {
    raft_hard_state_t hs = { 1, 2, 3 };
    char small[8];
    ck_assert_int_eq(bk_quorum_state_format(&hs, small, sizeof small), -1);
}
END_TEST

int main(void) {
    Suite *s = suite_create("quorum_state");
    TCase *tc = tcase_create("file");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_missing_file_is_fresh);
    tcase_add_test(tc, test_write_read_round_trip);
    tcase_add_test(tc, test_kafka_style_text_parses);
    tcase_add_test(tc, test_truncated_at_every_byte);
    tcase_add_test(tc, test_corrupt_files_refused);
    tcase_add_test(tc, test_oversized_file_refused);
    tcase_add_test(tc, test_format_bounds);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
