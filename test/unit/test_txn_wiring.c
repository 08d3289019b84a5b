/* test_txn_wiring.c — the pieces the transaction driver wires together,
 * through the same calls it makes: COMMIT/ABORT control batches appended to
 * a real log (kp_batch_build_txn_marker + st_log_append, as
 * bk_txn_td_write_marker does) move the LSO and fill the aborted-transaction
 * index that read_committed fetches return, across a restart; pending
 * TxnOffsetCommit offsets reach the group core only on commit
 * (bk_grp_offset_commit_txn) and TxnOffsetCommit's member check; the
 * dispatch table serves the transaction APIs at the versions clients use. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/group/group.h"
#include "broker/group/group_txn_offsets.h"
#include "broker/txn/txn_part.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_errors.h"
#include "storage/st_log.h"
#include "test/unit/st_test_util.h"

#define S(x) kp_slice_cstr(x)

/* Appends one transactional (or plain) batch of n records for pid. */
static int64_t append_data(st_log_t *log, int64_t pid, int32_t seq, int n, bool txn) {
    kp_record_in_t recs[8];
    ck_assert_int_le(n, 8);
    for (int i = 0; i < n; i++)
        recs[i] = (kp_record_in_t){ .timestamp = 1000 + i, .key = S("k"), .value = S("v") };
    kp_batch_opts_t o = kp_batch_opts_default();
    o.producer_id = pid;
    o.producer_epoch = 0;
    o.base_sequence = seq;
    if (txn) o.flags = KP_BATCH_TRANSACTIONAL;
    uint8_t buf[4096];
    size_t len = tu_build(buf, sizeof buf, &o, recs, n);
    st_append_info_t info;
    ck_assert_int_eq(st_log_append(log, buf, len, 0, 1000, &info), KP_OK);
    st_log_set_high_watermark(log, st_log_end_offset(log));
    return info.base_offset;
}

/* The driver's marker write: built by protocol, appended as a batch. */
static int64_t append_marker(st_log_t *log, int64_t pid, int16_t epoch, bool commit, int32_t coord_epoch) {
    kp_arena_t a;
    kp_arena_init(&a, 1 << 16);
    const uint8_t *b;
    size_t len;
    ck_assert_int_eq(kp_batch_build_txn_marker(pid, epoch, commit, coord_epoch, 2000, &a, &b, &len), KP_OK);
    st_append_info_t info;
    ck_assert_int_eq(st_log_append(log, (uint8_t *)b, len, 0, 2000, &info), KP_OK);
    kp_arena_free(&a);
    st_log_set_high_watermark(log, st_log_end_offset(log));
    return info.base_offset;
}

static void check_state(st_log_t *log) {
    /* A (7) aborted 0..2 at 6, B (8) committed at 7, C (9) still open from 8 */
    ck_assert_int_eq(st_log_last_stable_offset(log), 8);
    st_aborted_txn_t v[4];
    size_t n = st_log_aborted_txns(log, 0, 8, v, 4);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(v[0].producer_id, 7);
    ck_assert_int_eq(v[0].first_offset, 0);
    ck_assert_int_eq(v[0].last_offset, 6);
    ck_assert_uint_eq(st_log_aborted_txns(log, 3, 8, v, 4), 1);   /* overlaps the fetch window */
    ck_assert_uint_eq(st_log_aborted_txns(log, 7, 8, v, 4), 0);   /* window after its marker */
    const st_ps_entry_t *e = st_ps_get(st_log_producers(log), 7);
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(e->txn_first_offset, -1);
    ck_assert_int_eq(e->coordinator_epoch, 4);
    /* a marker from an older coordinator epoch or producer epoch is refused */
    ck_assert_int_eq(bk_txn_part_check_marker(st_log_producers(log), 7, 0, 3), KP_ERROR_TRANSACTION_COORDINATOR_FENCED);
    ck_assert_int_eq(bk_txn_part_check_marker(st_log_producers(log), 7, -1, 4), KP_ERROR_INVALID_PRODUCER_EPOCH);
    ck_assert_int_eq(bk_txn_part_check_marker(st_log_producers(log), 9, 0, 4), KP_ERROR_NONE);
}

START_TEST(test_markers_move_lso_and_index_aborts) {
    tu_log_capture();
    char *dir = tu_tmpdir();
    st_log_config_t cfg;
    st_log_config_default(&cfg);
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    ck_assert_int_eq(append_data(log, 7, 0, 3, true), 0);     /* A 0..2 */
    ck_assert_int_eq(st_log_last_stable_offset(log), 0);
    ck_assert_int_eq(append_data(log, 8, 0, 2, true), 3);     /* B 3..4 */
    ck_assert_int_eq(append_data(log, 10, 0, 1, false), 5);   /* idempotent, not in a txn */
    ck_assert_int_eq(st_log_last_stable_offset(log), 0);
    ck_assert_int_eq(append_marker(log, 7, 0, false, 4), 6);  /* abort A */
    ck_assert_int_eq(st_log_last_stable_offset(log), 3);      /* B is the oldest open one */
    ck_assert_int_eq(append_marker(log, 8, 0, true, 4), 7);   /* commit B */
    ck_assert_int_eq(st_log_last_stable_offset(log), 8);      /* = HW */
    ck_assert_int_eq(append_data(log, 9, 0, 2, true), 8);     /* C 8..9 open */
    check_state(log);
    st_log_offsets_t fin;
    ck_assert_int_eq(st_log_close(log, &fin), KP_OK);
    /* restart (unclean: replayed from the snapshot + log) keeps it all */
    log = tu_open(dir, &cfg, 0, false);
    st_log_set_high_watermark(log, st_log_end_offset(log));
    check_state(log);
    ck_assert_int_eq(st_log_close(log, &fin), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* ---- pending offsets -> group ------------------------------------------------ */

typedef struct {
    bk_grp_coord_t *c;
    bk_grp_out_t *out;
    int calls;
} commit_ctx_t;

static void commit_one(void *ctx, const bk_grp_txn_pending_t *o) {
    commit_ctx_t *cc = ctx;
    bk_grp_commit_part_t part = { S(o->topic), o->partition, o->offset, o->leader_epoch, kp_slice_null(), -1 };
    bk_grp_commit_t req = { S(o->group), S(""), kp_slice_null(), -1, -1, &part, 1 };
    int16_t err = -1;
    ck_assert_int_eq(bk_grp_offset_commit_txn(cc->c, &req, 5000, cc->out, &err), KP_ERROR_NONE);
    ck_assert_int_eq(err, KP_ERROR_NONE);
    cc->calls++;
}

static int64_t fetched(bk_grp_coord_t *c, const char *group) {
    bk_grp_tp_t tp = { S("t"), 0 };
    bk_grp_fetched_t f;
    ck_assert_int_eq(bk_grp_offset_fetch(c, S(group), &tp, 1, &f), KP_ERROR_NONE);
    return f.offset;
}

START_TEST(test_txn_offsets_visible_only_on_commit) {
    bk_grp_config_t cfg;
    bk_grp_config_defaults(&cfg);
    cfg.num_partitions = 1;
    bk_grp_coord_t c;
    bk_grp_coord_init(&c, &cfg, 0, 1);
    bk_grp_load_done(&c, 0);
    bk_grp_txn_offsets_t pend;
    bk_grp_txn_offsets_init(&pend);
    bk_grp_txn_pending_t o = { 5, "g", "t", 0, 42, -1, NULL, 1000, -1 };
    ck_assert_int_eq(bk_grp_txn_offsets_add(&pend, &o), KP_OK);
    bk_grp_txn_pending_t o2 = { 6, "g", "t", 0, 99, -1, NULL, 1000, -1 };
    ck_assert_int_eq(bk_grp_txn_offsets_add(&pend, &o2), KP_OK);
    ck_assert_int_eq(fetched(&c, "g"), -1);                 /* pending: not visible */
    ck_assert(bk_grp_txn_offsets_pending(&pend, "g", "t", 0));

    bk_grp_out_t out;
    bk_grp_out_init(&out);
    commit_ctx_t cc = { &c, &out, 0 };
    ck_assert_uint_eq(bk_grp_txn_offsets_complete(&pend, 5, true, commit_one, &cc), 1);
    ck_assert_int_eq(cc.calls, 1);
    ck_assert_uint_ge(out.nrecs, 1);                          /* a record for __consumer_offsets */
    ck_assert_int_eq(fetched(&c, "g"), 42);
    ck_assert_uint_eq(bk_grp_txn_offsets_complete(&pend, 6, false, commit_one, &cc), 1);   /* abort */
    ck_assert_int_eq(cc.calls, 1);
    ck_assert_int_eq(fetched(&c, "g"), 42);
    ck_assert(!bk_grp_txn_offsets_pending(&pend, "g", NULL, -1));

    /* TxnOffsetCommit's member check */
    bk_grp_commit_t chk = { S("unknown"), S(""), kp_slice_null(), 3, -1, NULL, 0 };
    ck_assert_int_eq(bk_grp_txn_commit_check(&c, &chk), KP_ERROR_NONE);       /* no group yet */
    chk.group_id = S("g");
    chk.generation = -1;
    ck_assert_int_eq(bk_grp_txn_commit_check(&c, &chk), KP_ERROR_NONE);       /* KIP-447: no generation */
    chk.generation = 3;
    chk.member_id = S("nobody");
    ck_assert_int_eq(bk_grp_txn_commit_check(&c, &chk), KP_ERROR_UNKNOWN_MEMBER_ID);
    bk_grp_out_free(&out);
    bk_grp_txn_offsets_free(&pend);
    bk_grp_coord_free(&c);
}
END_TEST

/* TxnOffsetCommit's record: what the group replay loads at COMMIT and
 * decodes back into pending offsets when still open. */
START_TEST(test_txn_offset_record_roundtrip) {
    bk_grp_out_t out;
    bk_grp_out_init(&out);
    bk_grp_txn_offset_t in = { S("grp"), S("topic-x"), 4, 777, 3, S("meta"), 12345 };
    bk_grp_rec_txn_offset(&out, &in);
    ck_assert_int_eq(out.err, KP_OK);
    ck_assert_uint_eq(out.nrecs, 1);
    kp_bytes_t key = out.recs[0].key, value = out.recs[0].value;
    kp_arena_t a;
    kp_arena_init(&a, 1 << 20);
    bk_grp_txn_offset_t t;
    ck_assert_int_eq(bk_grp_decode_txn_offset(key, value, &a, &t), KP_OK);
    ck_assert(t.group.len == 3 && memcmp(t.group.p, "grp", 3) == 0);
    ck_assert(t.topic.len == 7 && memcmp(t.topic.p, "topic-x", 7) == 0);
    ck_assert(t.metadata.len == 4 && memcmp(t.metadata.p, "meta", 4) == 0);
    ck_assert_int_eq(t.partition, 4);
    ck_assert_int_eq(t.offset, 777);
    ck_assert_int_eq(t.leader_epoch, 3);
    ck_assert_int_eq(t.commit_ts_ms, 12345);
    /* truncated key or value at every byte: an error, never a crash */
    for (size_t n = 0; n < key.len; n++) {
        kp_arena_reset(&a);
        kp_bytes_t k = { key.p, n };
        ck_assert_int_ne(bk_grp_decode_txn_offset(k, value, &a, &t), KP_OK);
    }
    for (size_t n = 0; n < value.len; n++) {
        kp_arena_reset(&a);
        kp_bytes_t v = { value.p, n };
        ck_assert_int_ne(bk_grp_decode_txn_offset(key, v, &a, &t), KP_OK);
    }
    ck_assert_int_ne(bk_grp_decode_txn_offset(key, kp_slice_null(), &a, &t), KP_OK);   /* tombstone */
    /* the same record replayed (COMMIT seen) makes the offset the group's */
    bk_grp_config_t cfg;
    bk_grp_config_defaults(&cfg);
    cfg.num_partitions = 1;
    bk_grp_coord_t c;
    bk_grp_coord_init(&c, &cfg, 0, 1);
    ck_assert_int_eq(bk_grp_load_record(&c, key, value), KP_OK);
    bk_grp_load_done(&c, 0);
    bk_grp_tp_t tp = { S("topic-x"), 4 };
    bk_grp_fetched_t f;
    ck_assert_int_eq(bk_grp_offset_fetch(&c, S("grp"), &tp, 1, &f), KP_ERROR_NONE);
    ck_assert_int_eq(f.offset, 777);
    bk_grp_coord_free(&c);
    kp_arena_free(&a);
    bk_grp_out_free(&out);
}
END_TEST

START_TEST(test_dispatch_serves_txn_apis) {
    static const int16_t apis[] = { KP_API_INIT_PRODUCER_ID, KP_API_ADD_PARTITIONS_TO_TXN, KP_API_ADD_OFFSETS_TO_TXN,
                                    KP_API_END_TXN, KP_API_WRITE_TXN_MARKERS, KP_API_TXN_OFFSET_COMMIT,
                                    KP_API_DESCRIBE_PRODUCERS, KP_API_DESCRIBE_TRANSACTIONS,
                                    KP_API_LIST_TRANSACTIONS };
    for (size_t i = 0; i < sizeof apis / sizeof apis[0]; i++) {
        const bk_api_entry_t *e = bk_api_dispatch_find(apis[i]);
        ck_assert_msg(e != NULL, "api %d not served", apis[i]);
        ck_assert_int_eq(e->min_version, 0);
    }
    /* v4-5 is KIP-890's broker-to-coordinator batch (VerifyOnly), served
     * since issue 20; EndTxn v5 bumps the epoch (transactions v2) */
    ck_assert_int_eq(bk_api_dispatch_find(KP_API_ADD_PARTITIONS_TO_TXN)->max_version, 5);
    ck_assert_int_eq(bk_api_dispatch_find(KP_API_END_TXN)->max_version, 5);
}
END_TEST

int main(void) {
    Suite *s = suite_create("txn_wiring");
    TCase *tc = tcase_create("all");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_markers_move_lso_and_index_aborts);
    tcase_add_test(tc, test_txn_offsets_visible_only_on_commit);
    tcase_add_test(tc, test_txn_offset_record_roundtrip);
    tcase_add_test(tc, test_dispatch_serves_txn_apis);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
