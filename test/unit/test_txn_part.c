/* Unit tests for the partition side of transactions (broker/txn_part.c):
 * LSO, marker admission and application with aborted-index entries,
 * DescribeProducers; and the pending transactional offsets
 * (broker/group/group_txn_offsets.c). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/group/group_txn_offsets.h"
#include "broker/txn/txn_part.h"
#include "protocol/kp_errors.h"

/* A transactional batch of n records at first_offset. */
static void txn_batch(st_producer_state_t *ps, int64_t pid, int16_t epoch, int32_t seq, int64_t first, int32_t n,
                      bool transactional) {
    ck_assert_int_eq(st_ps_update(ps, pid, epoch, seq, seq + n - 1, first, first + n - 1, 1000 + first,
                                  transactional),
                     KP_OK);
}

START_TEST(test_lso_and_markers) {
    st_producer_state_t ps;
    ck_assert_int_eq(st_ps_init(&ps), KP_OK);
    ck_assert_int_eq(bk_txn_part_lso(&ps, 0), 0);
    txn_batch(&ps, 1, 0, 0, 10, 3, true);    /* A: 10..12 */
    txn_batch(&ps, 2, 0, 0, 15, 2, true);    /* B: 15..16 */
    txn_batch(&ps, 3, 0, 0, 17, 1, false);   /* C: idempotent, not transactional */
    txn_batch(&ps, 1, 0, 3, 18, 2, true);    /* A again: the txn still starts at 10 */
    ck_assert_int_eq(bk_txn_part_lso(&ps, 20), 10);
    ck_assert_int_eq(bk_txn_part_lso(&ps, 5), 5);     /* LSO <= HW */
    ck_assert_int_eq(bk_txn_part_lso(&ps, 10), 10);

    st_aborted_txn_t ab;
    bool has;
    /* abort A at 21: entry (1, 10, 21, LSO = B's first offset) */
    ck_assert_int_eq(bk_txn_part_check_marker(&ps, 1, 0, 5), KP_ERROR_NONE);
    ck_assert_int_eq(bk_txn_part_apply_marker(&ps, 1, 0, 5, 21, false, 2000, &ab, &has), KP_OK);
    ck_assert(has);
    ck_assert_int_eq(ab.producer_id, 1);
    ck_assert_int_eq(ab.first_offset, 10);
    ck_assert_int_eq(ab.last_offset, 21);
    ck_assert_int_eq(ab.last_stable_offset, 15);
    ck_assert_int_eq(bk_txn_part_lso(&ps, 22), 15);
    /* commit B at 22: no entry; nothing open: LSO = HW */
    ck_assert_int_eq(bk_txn_part_apply_marker(&ps, 2, 0, 5, 22, true, 2001, &ab, &has), KP_OK);
    ck_assert(!has);
    ck_assert_int_eq(bk_txn_part_lso(&ps, 23), 23);
    /* an abort with no open transaction still gets an entry at the marker */
    ck_assert_int_eq(bk_txn_part_apply_marker(&ps, 9, 0, 5, 30, false, 2002, &ab, &has), KP_OK);
    ck_assert(has);
    ck_assert_int_eq(ab.first_offset, 30);
    ck_assert_int_eq(ab.last_offset, 30);
    ck_assert_int_eq(ab.last_stable_offset, 31);

    /* marker admission after the coordinator epoch 5 markers */
    ck_assert_int_eq(bk_txn_part_check_marker(&ps, 1, -1, 5), KP_ERROR_INVALID_PRODUCER_EPOCH);
    ck_assert_int_eq(bk_txn_part_check_marker(&ps, 1, 0, 4), KP_ERROR_TRANSACTION_COORDINATOR_FENCED);
    ck_assert_int_eq(bk_txn_part_check_marker(&ps, 1, 1, 6), KP_ERROR_NONE);
    ck_assert_int_eq(bk_txn_part_check_marker(&ps, 424242, 0, 0), KP_ERROR_NONE);
    /* a bumped-epoch abort (coordinator timeout) fences the old epoch */
    txn_batch(&ps, 1, 0, 5, 31, 1, true);
    ck_assert_int_eq(bk_txn_part_apply_marker(&ps, 1, 1, 5, 32, false, 2003, &ab, &has), KP_OK);
    ck_assert_int_eq(ab.first_offset, 31);
    ck_assert_int_eq(bk_txn_part_check_marker(&ps, 1, 0, 5), KP_ERROR_INVALID_PRODUCER_EPOCH);

    /* DescribeProducers */
    bk_txn_producer_t pr[8];
    size_t n = bk_txn_part_producers(&ps, pr, 8);
    ck_assert_uint_eq(n, 4);
    ck_assert_int_eq(pr[0].producer_id, 1);
    ck_assert_int_eq(pr[0].producer_epoch, 1);
    ck_assert_int_eq(pr[0].coordinator_epoch, 5);
    ck_assert_int_eq(pr[0].current_txn_start_offset, -1);
    ck_assert_int_eq(pr[2].producer_id, 3);
    ck_assert_int_eq(pr[2].last_sequence, 0);
    ck_assert_int_eq(pr[2].last_timestamp_ms, 1017);
    ck_assert_int_eq(pr[3].producer_id, 9);
    ck_assert_int_eq(pr[3].last_sequence, -1);
    txn_batch(&ps, 3, 0, 1, 40, 2, true);
    n = bk_txn_part_producers(&ps, pr, 8);
    ck_assert_int_eq(pr[2].current_txn_start_offset, 40);
    ck_assert_int_eq(pr[2].last_sequence, 2);
    ck_assert_uint_eq(bk_txn_part_producers(&ps, pr, 1), 4);   /* count when out is short */
    st_ps_free(&ps);
}
END_TEST

/* ---- pending transactional offsets ------------------------------------------ */

typedef struct {
    int64_t offsets[8];
    char topics[8][16];
    size_t n;
} seen_t;

static void on_commit(void *ctx, const bk_grp_txn_pending_t *o) {
    seen_t *s = ctx;
    ck_assert_uint_lt(s->n, 8);
    s->offsets[s->n] = o->offset;
    snprintf(s->topics[s->n], sizeof s->topics[0], "%s", o->topic);
    s->n++;
}

static void add(bk_grp_txn_offsets_t *t, int64_t pid, const char *group, const char *topic, int32_t p, int64_t off) {
    bk_grp_txn_pending_t o = { pid, (char *)group, (char *)topic, p, off, -1, (char *)"meta", 1, off * 10 };
    ck_assert_int_eq(bk_grp_txn_offsets_add(t, &o), KP_OK);
}

START_TEST(test_pending_offsets) {
    bk_grp_txn_offsets_t t;
    bk_grp_txn_offsets_init(&t);
    add(&t, 1, "g", "in", 0, 5);
    add(&t, 1, "g", "in", 1, 6);
    add(&t, 2, "g", "in", 0, 9);
    add(&t, 1, "g", "in", 0, 7);   /* replaces pid 1's offset for in-0 */
    add(&t, 1, "h", "in", 0, 3);
    ck_assert_uint_eq(t.n, 4);
    ck_assert(bk_grp_txn_offsets_pending(&t, "g", "in", 0));
    ck_assert(bk_grp_txn_offsets_pending(&t, "g", "in", 1));
    ck_assert(!bk_grp_txn_offsets_pending(&t, "g", "in", 2));
    ck_assert(!bk_grp_txn_offsets_pending(&t, "g", "out", 0));
    ck_assert(bk_grp_txn_offsets_pending(&t, "g", NULL, 0));
    ck_assert(!bk_grp_txn_offsets_pending(&t, "nope", NULL, 0));

    /* commit of pid 1: both of its offsets of g, and h's, in arrival order */
    seen_t s = { .n = 0 };
    ck_assert_uint_eq(bk_grp_txn_offsets_complete(&t, 1, true, on_commit, &s), 3);
    ck_assert_uint_eq(s.n, 3);
    ck_assert_int_eq(s.offsets[0], 7);
    ck_assert_int_eq(s.offsets[1], 6);
    ck_assert_int_eq(s.offsets[2], 3);
    ck_assert(!bk_grp_txn_offsets_pending(&t, "g", "in", 1));
    ck_assert(bk_grp_txn_offsets_pending(&t, "g", "in", 0));    /* pid 2's */
    /* abort of pid 2: dropped, never applied */
    s.n = 0;
    ck_assert_uint_eq(bk_grp_txn_offsets_complete(&t, 2, false, on_commit, &s), 1);
    ck_assert_uint_eq(s.n, 0);
    ck_assert(!bk_grp_txn_offsets_pending(&t, "g", "in", 0));
    ck_assert_uint_eq(t.n, 0);
    ck_assert_uint_eq(bk_grp_txn_offsets_complete(&t, 2, true, on_commit, &s), 0);

    /* bad input, group deletion */
    bk_grp_txn_pending_t bad = { 1, NULL, (char *)"t", 0, 1, -1, NULL, 0, 0 };
    ck_assert_int_eq(bk_grp_txn_offsets_add(&t, &bad), KP_ERR_BAD_VALUE);
    bad.group = (char *)"g";
    bad.partition = -1;
    ck_assert_int_eq(bk_grp_txn_offsets_add(&t, &bad), KP_ERR_BAD_VALUE);
    add(&t, 5, "g", "a", 0, 1);
    add(&t, 6, "x", "a", 0, 1);
    add(&t, 5, "g", "b", 0, 1);
    ck_assert_uint_eq(bk_grp_txn_offsets_drop_group(&t, "g"), 2);
    ck_assert_uint_eq(t.n, 1);
    ck_assert(bk_grp_txn_offsets_pending(&t, "x", "a", 0));
    bk_grp_txn_offsets_free(&t);
}
END_TEST

/* Issue 9: a leader that has just restarted answers WriteTxnMarkers with
 * UNKNOWN_TOPIC_OR_PARTITION until its metadata catches up; the coordinator
 * took that as final, completed the transaction without the marker, and the
 * TxnOffsetCommit offsets held on that leader stayed pending for ever. Only
 * a written or refused-for-good marker ends the coordinator's work. */
START_TEST(test_marker_answers_final_or_retried) {
    ck_assert(bk_txn_part_marker_final(KP_ERROR_NONE));
    ck_assert(bk_txn_part_marker_final(KP_ERROR_INVALID_PRODUCER_EPOCH));
    ck_assert(bk_txn_part_marker_final(KP_ERROR_TRANSACTION_COORDINATOR_FENCED));
    static const int16_t retried[] = { KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION, KP_ERROR_NOT_LEADER_OR_FOLLOWER,
                                       KP_ERROR_REQUEST_TIMED_OUT, KP_ERROR_NOT_ENOUGH_REPLICAS,
                                       KP_ERROR_NOT_ENOUGH_REPLICAS_AFTER_APPEND, KP_ERROR_KAFKA_STORAGE_ERROR,
                                       KP_ERROR_UNKNOWN_SERVER_ERROR, KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS };
    for (size_t i = 0; i < sizeof retried / sizeof retried[0]; i++) ck_assert(!bk_txn_part_marker_final(retried[i]));
}
END_TEST

/* bk_txn_td_write_marker's question: does this producer hold offsets here? */
START_TEST(test_pending_offsets_by_producer) {
    bk_grp_txn_offsets_t t;
    bk_grp_txn_offsets_init(&t);
    ck_assert(!bk_grp_txn_offsets_has_producer(&t, 5));
    add(&t, 5, "g", "a", 0, 1);
    add(&t, 6, "g", "a", 1, 2);
    ck_assert(bk_grp_txn_offsets_has_producer(&t, 5));
    ck_assert(bk_grp_txn_offsets_has_producer(&t, 6));
    ck_assert(!bk_grp_txn_offsets_has_producer(&t, 7));
    ck_assert_uint_eq(bk_grp_txn_offsets_complete(&t, 5, false, NULL, NULL), 1);
    ck_assert(!bk_grp_txn_offsets_has_producer(&t, 5));
    ck_assert(bk_grp_txn_offsets_has_producer(&t, 6));
    bk_grp_txn_offsets_free(&t);
}
END_TEST

int main(void) {
    Suite *s = suite_create("txn_part");
    TCase *tc = tcase_create("partition");
    tcase_add_test(tc, test_lso_and_markers);
    tcase_add_test(tc, test_pending_offsets);
    tcase_add_test(tc, test_marker_answers_final_or_retried);
    tcase_add_test(tc, test_pending_offsets_by_producer);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
