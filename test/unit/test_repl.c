/* Unit tests for broker/repl*.c, the pure replication core: the KIP-101
 * scenarios, fetch validation by leader epoch, min.insync.replicas, acks=all
 * completion, ISR shrink/expand timing and AlterPartition handling. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "broker/replication/repl.h"

static bk_repl_config_t cfg_for(int32_t id) {
    bk_repl_config_t c;
    bk_repl_config_default(&c);
    c.node_id = id;
    c.min_insync = 2;
    c.lag_max_ms = 1000;
    c.fetch_backoff_ms = 100;
    c.fetch_timeout_ms = 500;
    c.alter_retry_ms = 200;
    return c;
}

static bk_repl_t *mk(int32_t id, int64_t leo, int64_t hw, const bk_repl_epoch_t *ep,
                     uint32_t n_ep, bool mutate) {
    bk_repl_config_t c = cfg_for(id);
    c.test_truncate_to_hw = mutate;
    bk_repl_restore_t rs = { .log_start = 0, .leo = leo, .hw_checkpoint = hw,
                             .epochs = ep, .n_epochs = n_ep };
    bk_repl_t *r = bk_repl_new(&c, &rs);
    ck_assert_ptr_nonnull(r);
    return r;
}

/* Replicas {0,1,2} unless n_rep says fewer; ISR given. */
static bk_repl_image_t image(int32_t leader, int32_t le, int32_t pe,
                             const int32_t *isr, uint32_t n_isr) {
    bk_repl_image_t img = { .leader_id = leader, .leader_epoch = le, .partition_epoch = pe,
                            .replicas = { 0, 1, 2 }, .n_replicas = 3 };
    memcpy(img.isr, isr, n_isr * sizeof isr[0]);
    img.n_isr = n_isr;
    return img;
}

static bk_repl_fetch_req_t freq(int32_t from, int32_t to, int32_t le, int64_t off,
                                int32_t last_epoch) {
    return (bk_repl_fetch_req_t){ .replica_id = from, .leader_id = to,
                                  .current_leader_epoch = le, .fetch_offset = off,
                                  .last_fetched_epoch = last_epoch, .seq = 1 };
}

static const int32_t ISR012[] = { 0, 1, 2 };
static const int32_t ISR01[] = { 0, 1 };
static const int32_t ISR0[] = { 0 };

/* A leader (node 0) of epoch `le` over a log of `leo` records of epoch 0. */
static bk_repl_t *leader(int32_t le, int64_t leo, const int32_t *isr, uint32_t n_isr) {
    bk_repl_epoch_t ep[] = { { 0, 0 } };
    bk_repl_t *r = mk(0, leo, 0, ep, leo ? 1 : 0, false);
    bk_repl_image_t img = image(0, le, 0, isr, n_isr);
    bk_repl_out_t out;
    bk_repl_on_image(r, &img, 0, &out);
    ck_assert_int_eq(bk_repl_role(r), BK_REPL_LEADER);
    return r;
}

static int16_t fetch(bk_repl_t *r, bk_repl_fetch_req_t q, int64_t now,
                     bk_repl_fetch_resp_t *resp, bk_repl_out_t *out) {
    bk_repl_on_fetch(r, &q, now, resp, out);
    return resp->error;
}

START_TEST(test_fetch_epoch_errors) {
    bk_repl_t *r = leader(5, 0, ISR012, 3);
    bk_repl_fetch_resp_t resp;
    bk_repl_out_t out;
    ck_assert_int_eq(fetch(r, freq(1, 0, 4, 0, -1), 0, &resp, &out), KP_ERROR_FENCED_LEADER_EPOCH);
    ck_assert_int_eq(fetch(r, freq(1, 0, 6, 0, -1), 0, &resp, &out), KP_ERROR_UNKNOWN_LEADER_EPOCH);
    ck_assert_int_eq(fetch(r, freq(7, 0, 5, 0, -1), 0, &resp, &out), KP_ERROR_NOT_LEADER_OR_FOLLOWER);
    ck_assert_int_eq(fetch(r, freq(1, 0, 5, 0, -1), 0, &resp, &out), KP_ERROR_NONE);
    ck_assert(!resp.diverging);
    /* a follower is not a leader */
    bk_repl_t *f = mk(1, 0, 0, NULL, 0, false);
    bk_repl_image_t img = image(0, 5, 0, ISR012, 3);
    bk_repl_on_image(f, &img, 0, &out);
    ck_assert_int_eq(bk_repl_role(f), BK_REPL_FOLLOWER);
    ck_assert(out.send_fetch);
    ck_assert_int_eq(out.fetch.current_leader_epoch, 5);
    ck_assert_int_eq(out.fetch.leader_id, 0);
    ck_assert_int_eq(fetch(f, freq(2, 1, 5, 0, -1), 0, &resp, &out), KP_ERROR_NOT_LEADER_OR_FOLLOWER);
    /* a stale image changes nothing */
    img = image(1, 4, 9, ISR012, 3);
    bk_repl_on_image(f, &img, 0, &out);
    ck_assert_int_eq(bk_repl_leader_epoch(f), 5);
    ck_assert_int_eq(bk_repl_leader_id(f), 0);
    bk_repl_free(f);
    bk_repl_free(r);
}
END_TEST

START_TEST(test_new_rejects_bad_restore) {
    bk_repl_config_t c = cfg_for(0);
    bk_repl_epoch_t bad[] = { { 3, 0 }, { 2, 5 } };
    bk_repl_restore_t rs = { .leo = 10, .epochs = bad, .n_epochs = 2 };
    ck_assert_ptr_null(bk_repl_new(&c, &rs));
    bk_repl_restore_t rs2 = { .log_start = 5, .leo = 4 };
    ck_assert_ptr_null(bk_repl_new(&c, &rs2));
    c.min_insync = 0;
    bk_repl_restore_t ok = { .leo = 0 };
    ck_assert_ptr_null(bk_repl_new(&c, &ok));
    /* HW checkpoint beyond the log is clamped */
    c = cfg_for(0);
    bk_repl_restore_t hi = { .leo = 3, .hw_checkpoint = 9 };
    bk_repl_t *r = bk_repl_new(&c, &hi);
    ck_assert_int_eq(bk_repl_hw(r), 3);
    bk_repl_free(r);
}
END_TEST

/* KIP-101 case 1: follower B has offsets 0..1 but its HW checkpoint says 1;
 * it restarts; the leader dies before B fetches again; B becomes leader.
 * Truncating to the HW on restart would lose offset 1, which leader A had
 * already acknowledged (A's HW was 2). With epochs, B keeps it. */
static void kip101_case1(bool mutate) {
    bk_repl_epoch_t ep[] = { { 1, 0 } };
    bk_repl_t *b = mk(1, 2, 1, ep, 1, mutate);
    bk_repl_out_t out;
    bk_repl_image_t img = image(0, 1, 0, ISR01, 2);   /* A still leads */
    bk_repl_on_image(b, &img, 0, &out);
    ck_assert_int_eq(bk_repl_role(b), BK_REPL_FOLLOWER);
    if (mutate) {
        ck_assert(out.truncate);
        ck_assert_int_eq(out.truncate_to, 1);
        ck_assert_int_eq(bk_repl_leo(b), 1);        /* the bug: offset 1 gone */
    } else {
        ck_assert(!out.truncate);
        ck_assert_int_eq(out.fetch.fetch_offset, 2);
        ck_assert_int_eq(out.fetch.last_fetched_epoch, 1);
    }
    /* A dies; B is elected from the ISR */
    int32_t isr_b[] = { 1 };
    img = image(1, 2, 1, isr_b, 1);
    bk_repl_on_image(b, &img, 10, &out);
    ck_assert_int_eq(bk_repl_role(b), BK_REPL_LEADER);
    ck_assert_int_eq(bk_repl_leo(b), mutate ? 1 : 2);
    bk_repl_free(b);
}

START_TEST(test_kip101_hw_truncation_loss_impossible) { kip101_case1(false); }
END_TEST
START_TEST(test_kip101_mutation_loses_record) { kip101_case1(true); }
END_TEST

/* KIP-101 case 2: A (leader, epoch 1) has offsets 0..1, B only 0. Both die;
 * B returns first, leads epoch 2 and writes a different record at offset 1.
 * A returns with HW 2: by HW it would keep its offset 1 and the logs would
 * diverge. By epoch it truncates to 1 and copies B's record. */
START_TEST(test_kip101_divergence_impossible) {
    bk_repl_epoch_t ep1[] = { { 1, 0 } };
    bk_repl_t *b = mk(1, 1, 1, ep1, 1, false);
    bk_repl_out_t out;
    int32_t isr_b[] = { 1 };
    bk_repl_image_t img = image(1, 2, 3, isr_b, 1);
    bk_repl_on_image(b, &img, 0, &out);
    ck_assert_int_eq(bk_repl_role(b), BK_REPL_LEADER);
    ck_assert_int_eq(bk_repl_hw(b), 1);
    int64_t base;
    /* ISR {1} < min.insync 2: acks=all refused, acks=1 written */
    ck_assert_int_eq(bk_repl_produce(b, 1, true, 1, 100, 0, &base, &out), KP_ERROR_NOT_ENOUGH_REPLICAS);
    ck_assert_int_eq(bk_repl_leo(b), 1);
    ck_assert_int_eq(bk_repl_produce(b, 1, false, 2, 100, 0, &base, &out), KP_ERROR_NONE);
    ck_assert_int_eq(base, 1);
    ck_assert_int_eq(out.n_append, 1);
    ck_assert_int_eq(out.append[0].epoch, 2);

    bk_repl_t *a = mk(0, 2, 2, ep1, 1, false);
    img = image(1, 2, 3, isr_b, 1);
    bk_repl_on_image(a, &img, 0, &out);
    ck_assert_int_eq(bk_repl_role(a), BK_REPL_FOLLOWER);
    ck_assert(!out.truncate);
    ck_assert(out.send_fetch);
    ck_assert_int_eq(out.fetch.fetch_offset, 2);
    ck_assert_int_eq(out.fetch.last_fetched_epoch, 1);

    bk_repl_fetch_resp_t resp;
    bk_repl_out_t lout;
    bk_repl_on_fetch(b, &out.fetch, 1, &resp, &lout);
    ck_assert_int_eq(resp.error, KP_ERROR_NONE);
    ck_assert(resp.diverging);
    ck_assert_int_eq(resp.diverging_epoch, 1);
    ck_assert_int_eq(resp.diverging_end_offset, 1);
    bk_repl_on_fetch_resp(a, &resp, 2, &out);
    ck_assert(out.truncate);
    ck_assert_int_eq(out.truncate_to, 1);
    ck_assert_int_eq(bk_repl_leo(a), 1);
    ck_assert_int_eq(bk_repl_hw(a), 1);       /* HW cut with the log */
    ck_assert(out.send_fetch);                /* refetches at once */
    ck_assert_int_eq(out.fetch.fetch_offset, 1);

    bk_repl_on_fetch(b, &out.fetch, 3, &resp, &lout);
    ck_assert(!resp.diverging);
    resp.batches[0] = (bk_repl_batch_t){ 1, 1, 2 };   /* B's record, as the driver attaches */
    resp.n_batches = 1;
    bk_repl_on_fetch_resp(a, &resp, 4, &out);
    ck_assert_int_eq(out.n_append, 1);
    ck_assert_int_eq(bk_repl_leo(a), 2);
    bk_repl_epoch_t got[4];
    ck_assert_uint_eq(bk_repl_epochs(a, got, 4), 2);
    ck_assert_int_eq(got[1].epoch, 2);
    ck_assert_int_eq(got[1].start_offset, 1);
    bk_repl_free(a);
    bk_repl_free(b);
}
END_TEST

/* A restarted follower whose log is longer than the leader's and diverges in
 * two epochs walks back epoch by epoch (KIP-279). */
START_TEST(test_longer_divergent_follower_truncates) {
    bk_repl_epoch_t lep[] = { { 1, 0 }, { 2, 5 }, { 4, 7 } };
    bk_repl_t *l = mk(0, 10, 7, lep, 3, false);
    bk_repl_out_t out, lout;
    bk_repl_image_t img = image(0, 5, 0, ISR012, 3);
    bk_repl_on_image(l, &img, 0, &lout);
    bk_repl_epoch_t fep[] = { { 1, 0 }, { 2, 5 }, { 3, 8 } };
    bk_repl_t *f = mk(1, 12, 7, fep, 3, false);
    bk_repl_on_image(f, &img, 0, &out);
    ck_assert_int_eq(out.fetch.fetch_offset, 12);
    ck_assert_int_eq(out.fetch.last_fetched_epoch, 3);
    bk_repl_fetch_resp_t resp;
    bk_repl_on_fetch(l, &out.fetch, 1, &resp, &lout);
    ck_assert(resp.diverging);
    ck_assert_int_eq(resp.diverging_epoch, 2);
    ck_assert_int_eq(resp.diverging_end_offset, 7);
    bk_repl_on_fetch_resp(f, &resp, 2, &out);
    ck_assert(out.truncate);
    ck_assert_int_eq(out.truncate_to, 7);      /* min(leader 7, own end of epoch 2 = 8) */
    ck_assert_int_eq(out.fetch.fetch_offset, 7);
    ck_assert_int_eq(out.fetch.last_fetched_epoch, 2);
    bk_repl_on_fetch(l, &out.fetch, 3, &resp, &lout);
    ck_assert(!resp.diverging);
    ck_assert_int_eq(resp.error, KP_ERROR_NONE);
    /* the follower's HW never exceeded what it now holds */
    ck_assert_int_le(bk_repl_hw(f), bk_repl_leo(f));
    /* a fetch beyond the leader's end without an epoch is diverging too */
    bk_repl_fetch_req_t q = freq(2, 0, 5, 50, -1);
    bk_repl_on_fetch(l, &q, 4, &resp, &lout);
    ck_assert(resp.diverging);
    ck_assert_int_eq(resp.diverging_end_offset, 10);
    bk_repl_free(f);
    bk_repl_free(l);
}
END_TEST

START_TEST(test_epoch_end_offset) {
    bk_repl_epoch_t ep[] = { { 2, 3 }, { 4, 7 }, { 6, 9 } };
    bk_repl_t *r = mk(0, 12, 0, ep, 3, false);
    int32_t e;
    int64_t end;
    bk_repl_epoch_end_offset(r, 6, &e, &end);
    ck_assert_int_eq(e, 6); ck_assert_int_eq(end, 12);
    bk_repl_epoch_end_offset(r, 5, &e, &end);
    ck_assert_int_eq(e, 4); ck_assert_int_eq(end, 9);
    bk_repl_epoch_end_offset(r, 4, &e, &end);
    ck_assert_int_eq(e, 4); ck_assert_int_eq(end, 9);
    bk_repl_epoch_end_offset(r, 1, &e, &end);   /* older than all: its start */
    ck_assert_int_eq(e, 1); ck_assert_int_eq(end, 3);
    bk_repl_epoch_end_offset(r, 7, &e, &end);   /* newer than all: unknown */
    ck_assert_int_eq(e, BK_REPL_NO_EPOCH); ck_assert_int_eq(end, BK_REPL_NO_OFFSET);
    bk_repl_epoch_end_offset(r, BK_REPL_NO_EPOCH, &e, &end);
    ck_assert_int_eq(end, BK_REPL_NO_OFFSET);
    bk_repl_free(r);
}
END_TEST

/* acks=all: completes when the ISR has it; HW = min LEO over the ISR; a
 * new leader's HW waits until every ISR member fetched. */
START_TEST(test_acks_all_completes_at_hw) {
    bk_repl_t *r = leader(1, 0, ISR012, 3);
    bk_repl_out_t out;
    int64_t base;
    ck_assert_int_eq(bk_repl_produce(r, 3, true, 7, 1000, 0, &base, &out), KP_ERROR_NONE);
    ck_assert_int_eq(base, 0);
    ck_assert_int_eq(out.append[0].last_offset, 2);
    ck_assert_int_eq(out.n_acks, 0);
    ck_assert_int_eq(bk_repl_max_readable(r), 0);
    bk_repl_fetch_resp_t resp;
    fetch(r, freq(1, 0, 1, 3, 1), 10, &resp, &out);
    ck_assert(!resp.diverging);
    ck_assert_int_eq(bk_repl_hw(r), 0);       /* replica 2 never fetched */
    ck_assert_int_eq(out.n_acks, 0);
    fetch(r, freq(2, 0, 1, 2, 1), 11, &resp, &out);
    ck_assert_int_eq(bk_repl_hw(r), 2);
    ck_assert(out.hw_changed);
    ck_assert_int_eq(out.n_acks, 0);          /* needs 3 */
    fetch(r, freq(2, 0, 1, 3, 1), 12, &resp, &out);
    ck_assert_int_eq(bk_repl_hw(r), 3);
    ck_assert_int_eq(resp.high_watermark, 3);
    ck_assert_int_eq(out.n_acks, 1);
    ck_assert_int_eq(out.acks[0].id, 7);
    ck_assert_int_eq(out.acks[0].error, KP_ERROR_NONE);
    ck_assert_int_eq(bk_repl_max_readable(r), 3);
    /* HW never goes back, even when a follower reports less */
    fetch(r, freq(2, 0, 1, 1, 1), 13, &resp, &out);
    ck_assert_int_eq(bk_repl_hw(r), 3);
    bk_repl_free(r);
}
END_TEST

/* Issue 6 (nemesis loss): a retried duplicate of an idempotent producer is
 * already in the leader's log, but that does not make it replicated. A
 * leader restarted after kill -9 holds a tail [4, 10) beyond its HW that the
 * followers may lack; answering the retry at once acknowledged records a
 * follower then lost by taking over. The wait completes only at HW >= end. */
START_TEST(test_duplicate_waits_for_hw) {
    bk_repl_epoch_t ep[] = { { 0, 0 } };
    bk_repl_t *r = mk(0, 10, 4, ep, 1, false);
    bk_repl_image_t img = image(0, 1, 0, ISR012, 3);
    bk_repl_out_t out;
    bk_repl_on_image(r, &img, 0, &out);
    ck_assert_int_eq(bk_repl_role(r), BK_REPL_LEADER);
    ck_assert_int_eq(bk_repl_hw(r), 4);
    /* below the HW: answered in the same output */
    ck_assert_int_eq(bk_repl_wait_replicated(r, 0, 3, 1, 1000, 0, &out), KP_ERROR_NONE);
    ck_assert_int_eq(out.n_acks, 1);
    ck_assert_int_eq(out.acks[0].id, 1);
    ck_assert_int_eq(out.acks[0].error, KP_ERROR_NONE);
    ck_assert_int_eq(out.acks[0].base_offset, 0);
    /* the unreplicated tail: NOT answered now */
    ck_assert_int_eq(bk_repl_wait_replicated(r, 4, 10, 2, 1000, 0, &out), KP_ERROR_NONE);
    ck_assert_int_eq(out.n_acks, 0);
    ck_assert_uint_eq(bk_repl_n_waits(r), 1);
    /* ranges the log does not hold are refused, no wait added */
    ck_assert_int_eq(bk_repl_wait_replicated(r, 8, 12, 9, 1000, 0, &out), KP_ERROR_INVALID_RECORD);
    ck_assert_int_eq(bk_repl_wait_replicated(r, 5, 5, 9, 1000, 0, &out), KP_ERROR_INVALID_RECORD);
    ck_assert_int_eq(bk_repl_wait_replicated(r, -1, 2, 9, 1000, 0, &out), KP_ERROR_INVALID_RECORD);
    ck_assert_uint_eq(bk_repl_n_waits(r), 1);
    /* one follower has the tail, the other not yet: still waiting */
    bk_repl_fetch_resp_t resp;
    fetch(r, freq(1, 0, 1, 10, 0), 10, &resp, &out);
    ck_assert(!resp.diverging);
    fetch(r, freq(2, 0, 1, 4, 0), 11, &resp, &out);
    ck_assert_int_eq(bk_repl_hw(r), 4);
    ck_assert_int_eq(out.n_acks, 0);
    fetch(r, freq(2, 0, 1, 10, 0), 12, &resp, &out);
    ck_assert_int_eq(bk_repl_hw(r), 10);
    ck_assert_int_eq(out.n_acks, 1);
    ck_assert_int_eq(out.acks[0].id, 2);
    ck_assert_int_eq(out.acks[0].error, KP_ERROR_NONE);
    ck_assert_int_eq(out.acks[0].base_offset, 4);
    /* deadline and leadership loss fail it like a fresh append's wait */
    int64_t base;
    ck_assert_int_eq(bk_repl_produce(r, 1, false, 0, 0, 20, &base, &out), KP_ERROR_NONE);
    ck_assert_int_eq(bk_repl_wait_replicated(r, 10, 11, 3, 50, 20, &out), KP_ERROR_NONE);
    ck_assert_int_eq(out.n_acks, 0);
    bk_repl_tick(r, 50, &out);
    ck_assert_int_eq(out.n_acks, 1);
    ck_assert_int_eq(out.acks[0].error, KP_ERROR_REQUEST_TIMED_OUT);
    ck_assert_int_eq(bk_repl_wait_replicated(r, 10, 11, 4, 1000, 60, &out), KP_ERROR_NONE);
    img = image(1, 2, 0, ISR012, 3);
    bk_repl_on_image(r, &img, 70, &out);
    ck_assert_int_eq(out.n_acks, 1);
    ck_assert_int_eq(out.acks[0].id, 4);
    ck_assert_int_eq(out.acks[0].error, KP_ERROR_NOT_LEADER_OR_FOLLOWER);
    ck_assert_int_eq(bk_repl_wait_replicated(r, 0, 3, 5, 1000, 80, &out), KP_ERROR_NOT_LEADER_OR_FOLLOWER);
    bk_repl_free(r);
    /* committed ISR below min.insync: refused before waiting */
    r = leader(1, 5, ISR0, 1);
    ck_assert_int_eq(bk_repl_wait_replicated(r, 0, 5, 6, 1000, 0, &out), KP_ERROR_NOT_ENOUGH_REPLICAS);
    ck_assert_uint_eq(bk_repl_n_waits(r), 0);
    bk_repl_free(r);
}
END_TEST

START_TEST(test_acks_timeout_and_leadership_loss) {
    bk_repl_t *r = leader(1, 0, ISR01, 2);
    bk_repl_out_t out;
    int64_t base;
    ck_assert_int_eq(bk_repl_produce(r, 1, true, 1, 100, 0, &base, &out), KP_ERROR_NONE);
    ck_assert_int_eq(bk_repl_produce(r, 1, true, 2, 500, 0, &base, &out), KP_ERROR_NONE);
    bk_repl_tick(r, 99, &out);
    ck_assert_int_eq(out.n_acks, 0);
    bk_repl_tick(r, 100, &out);
    ck_assert_int_eq(out.n_acks, 1);
    ck_assert_int_eq(out.acks[0].id, 1);
    ck_assert_int_eq(out.acks[0].error, KP_ERROR_REQUEST_TIMED_OUT);
    bk_repl_image_t img = image(1, 2, 1, ISR01, 2);
    bk_repl_on_image(r, &img, 200, &out);
    ck_assert_int_eq(bk_repl_role(r), BK_REPL_FOLLOWER);
    ck_assert_int_eq(out.n_acks, 1);
    ck_assert_int_eq(out.acks[0].id, 2);
    ck_assert_int_eq(out.acks[0].error, KP_ERROR_NOT_LEADER_OR_FOLLOWER);
    ck_assert_int_eq(bk_repl_produce(r, 1, true, 3, 500, 0, &base, &out), KP_ERROR_NOT_LEADER_OR_FOLLOWER);
    bk_repl_free(r);
}
END_TEST

/* The ISR shrinks below min.insync before the HW reaches the batch: the
 * produce completes with NOT_ENOUGH_REPLICAS_AFTER_APPEND. */
START_TEST(test_not_enough_replicas_after_append) {
    bk_repl_t *r = leader(1, 0, ISR01, 2);
    bk_repl_out_t out;
    int64_t base;
    ck_assert_int_eq(bk_repl_produce(r, 2, true, 9, 10000, 0, &base, &out), KP_ERROR_NONE);
    bk_repl_image_t img = image(0, 1, 1, ISR0, 1);
    bk_repl_on_image(r, &img, 10, &out);
    ck_assert_int_eq(bk_repl_hw(r), 2);
    ck_assert_int_eq(out.n_acks, 1);
    ck_assert_int_eq(out.acks[0].error, KP_ERROR_NOT_ENOUGH_REPLICAS_AFTER_APPEND);
    ck_assert_int_eq(bk_repl_produce(r, 1, true, 10, 10000, 0, &base, &out), KP_ERROR_NOT_ENOUGH_REPLICAS);
    ck_assert_int_eq(bk_repl_leo(r), 2);     /* refused before append */
    bk_repl_free(r);
}
END_TEST

/* Kafka's caught-up time: a follower always one batch behind is still caught
 * up as of its previous fetch, and is removed only lag_max_ms after that. */
START_TEST(test_isr_shrink_timing) {
    bk_repl_t *r = leader(1, 0, ISR01, 2);
    bk_repl_out_t out;
    bk_repl_fetch_resp_t resp;
    int64_t base;
    fetch(r, freq(1, 0, 1, 0, -1), 0, &resp, &out);            /* at LEO: caught up at 0 */
    ck_assert_int_eq(bk_repl_produce(r, 1, false, 0, 0, 100, &base, &out), KP_ERROR_NONE);
    fetch(r, freq(1, 0, 1, 0, -1), 600, &resp, &out);          /* behind; reached LEO of t=0 */
    ck_assert_int_eq(bk_repl_produce(r, 1, false, 0, 0, 900, &base, &out), KP_ERROR_NONE);
    fetch(r, freq(1, 0, 1, 1, 1), 1200, &resp, &out);          /* behind; reached LEO of t=600 */
    ck_assert(!resp.diverging);
    bk_repl_tick(r, 1600, &out);
    ck_assert(!out.alter);                                     /* 1600 - 600 = lag, not over */
    bk_repl_tick(r, 1601, &out);
    ck_assert(out.alter);
    ck_assert_uint_eq(out.alter_req.n_isr, 1);
    ck_assert_int_eq(out.alter_req.isr[0], 0);
    ck_assert_int_eq(out.alter_req.leader_epoch, 1);
    ck_assert_int_eq(out.alter_req.partition_epoch, 0);
    /* until committed the follower still counts for the HW */
    ck_assert_int_eq(bk_repl_hw(r), 1);
    /* one proposal in flight; retried after alter_retry_ms */
    bk_repl_tick(r, 1700, &out);
    ck_assert(!out.alter);
    bk_repl_tick(r, 1801, &out);
    ck_assert(out.alter);
    bk_repl_alter_resp_t ar = { .error = KP_ERROR_NONE, .leader_epoch = 1,
                                .partition_epoch = 1, .isr = { 0 }, .n_isr = 1 };
    bk_repl_on_alter_resp(r, &ar, 1810, &out);
    ck_assert_int_eq(bk_repl_partition_epoch(r), 1);
    ck_assert_int_eq(bk_repl_hw(r), 2);       /* ISR {0}: HW = leader LEO */
    int32_t isr[4];
    ck_assert_uint_eq(bk_repl_isr(r, isr, 4), 1);
    bk_repl_free(r);
}
END_TEST

/* Issue 16 finding 9: an ISR follower fetching below the HW has lost
 * committed data (the scrubber truncated a corrupt batch away): it leaves
 * the ISR at once, not after the lag time, and the HW does not move back. */
START_TEST(test_isr_member_below_hw_leaves_now) {
    bk_repl_t *r = leader(1, 0, ISR012, 3);
    bk_repl_out_t out;
    bk_repl_fetch_resp_t resp;
    int64_t base;
    ck_assert_int_eq(bk_repl_produce(r, 4, false, 0, 0, 0, &base, &out), KP_ERROR_NONE);
    fetch(r, freq(1, 0, 1, 4, 1), 10, &resp, &out);
    fetch(r, freq(2, 0, 1, 4, 1), 10, &resp, &out);
    ck_assert_int_eq(bk_repl_hw(r), 4);
    ck_assert(!out.alter);
    fetch(r, freq(2, 0, 1, 2, 1), 20, &resp, &out);   /* follower 2 truncated to 2 */
    ck_assert(out.alter);
    ck_assert_uint_eq(out.alter_req.n_isr, 2);
    ck_assert_int_eq(out.alter_req.isr[0], 0);
    ck_assert_int_eq(out.alter_req.isr[1], 1);
    ck_assert_int_eq(bk_repl_hw(r), 4);                /* never back */
    ck_assert_int_eq(resp.high_watermark, 4);
    /* a follower at or above the HW is not touched */
    bk_repl_t *r2 = leader(1, 0, ISR012, 3);
    ck_assert_int_eq(bk_repl_produce(r2, 4, false, 0, 0, 0, &base, &out), KP_ERROR_NONE);
    fetch(r2, freq(1, 0, 1, 4, 1), 10, &resp, &out);
    fetch(r2, freq(2, 0, 1, 4, 1), 10, &resp, &out);
    fetch(r2, freq(2, 0, 1, 4, 1), 20, &resp, &out);
    ck_assert(!out.alter);
    bk_repl_free(r2);
    bk_repl_free(r);
}
END_TEST

START_TEST(test_isr_not_shrunk_at_leo) {
    bk_repl_t *r = leader(1, 0, ISR01, 2);
    bk_repl_out_t out;
    bk_repl_fetch_resp_t resp;
    fetch(r, freq(1, 0, 1, 0, -1), 0, &resp, &out);
    bk_repl_tick(r, 5000, &out);          /* idle partition, follower at LEO */
    ck_assert(!out.alter);
    bk_repl_free(r);
}
END_TEST

/* Expansion: LEO >= HW and >= the start of this leader's epoch. */
START_TEST(test_isr_expand) {
    bk_repl_epoch_t ep[] = { { 0, 0 } };
    bk_repl_t *r = mk(0, 4, 4, ep, 1, false);
    bk_repl_out_t out;
    bk_repl_image_t img = image(0, 3, 5, ISR01, 2);
    bk_repl_on_image(r, &img, 0, &out);
    bk_repl_fetch_resp_t resp;
    int64_t base;
    fetch(r, freq(1, 0, 3, 4, 0), 1, &resp, &out);
    ck_assert_int_eq(bk_repl_produce(r, 2, false, 0, 0, 2, &base, &out), KP_ERROR_NONE);
    fetch(r, freq(1, 0, 3, 6, 3), 3, &resp, &out);
    ck_assert_int_eq(bk_repl_hw(r), 6);
    fetch(r, freq(2, 0, 3, 3, 0), 4, &resp, &out);     /* below HW: not yet */
    ck_assert(!out.alter);
    fetch(r, freq(2, 0, 3, 6, 3), 5, &resp, &out);
    ck_assert(out.alter);
    ck_assert_uint_eq(out.alter_req.n_isr, 3);
    ck_assert_int_eq(out.alter_req.isr[2], 2);
    ck_assert_int_eq(out.alter_req.partition_epoch, 5);
    uint64_t seq = out.alter_req.seq;
    /* a stale partition epoch is refused: whether a re-send was applied is
     * unknown, so replica 2 keeps counting and nothing is re-sent until the
     * image brings the truth */
    bk_repl_alter_resp_t ar = { .error = KP_ERROR_INVALID_UPDATE_VERSION, .req_seq = seq,
                                .partition_epoch = 6 };
    bk_repl_on_alter_resp(r, &ar, 6, &out);
    ck_assert_int_eq(bk_repl_partition_epoch(r), 5);
    bk_repl_tick(r, 500, &out);
    ck_assert(!out.alter);
    ck_assert_int_eq(bk_repl_produce(r, 1, false, 0, 0, 501, &base, &out), KP_ERROR_NONE);
    fetch(r, freq(1, 0, 3, 7, 3), 502, &resp, &out);
    ck_assert_int_eq(bk_repl_hw(r), 6);      /* replica 2 (pending) is at 6 */
    fetch(r, freq(2, 0, 3, 6, 3), 503, &resp, &out);
    ck_assert(!out.alter);
    img = image(0, 3, 6, ISR012, 3);
    bk_repl_on_image(r, &img, 510, &out);
    ck_assert_int_eq(bk_repl_partition_epoch(r), 6);
    int32_t isr[4];
    ck_assert_uint_eq(bk_repl_isr(r, isr, 4), 3);
    /* now replica 2 holds the HW as a committed member */
    ck_assert_int_eq(bk_repl_produce(r, 1, true, 1, 1000, 511, &base, &out), KP_ERROR_NONE);
    fetch(r, freq(1, 0, 3, 8, 3), 512, &resp, &out);
    ck_assert_int_eq(bk_repl_hw(r), 6);
    ck_assert_int_eq(out.n_acks, 0);
    fetch(r, freq(2, 0, 3, 8, 3), 513, &resp, &out);
    ck_assert_int_eq(bk_repl_hw(r), 8);
    ck_assert_int_eq(out.n_acks, 1);
    bk_repl_free(r);
}
END_TEST

/* A reassignment changes the replica set under the same leader epoch: an
 * added replica may fetch at once and joins the ISR when caught up; a
 * removed one is refused. */
START_TEST(test_replica_set_change_same_epoch) {
    bk_repl_epoch_t ep[] = { { 0, 0 } };
    bk_repl_t *r = mk(0, 4, 4, ep, 1, false);
    bk_repl_out_t out;
    bk_repl_image_t img = image(0, 2, 3, ISR01, 2);
    img.n_replicas = 2;                          /* replicas {0,1} */
    bk_repl_on_image(r, &img, 0, &out);
    bk_repl_fetch_resp_t resp;
    ck_assert_int_eq(fetch(r, freq(3, 0, 2, 0, -1), 1, &resp, &out), KP_ERROR_NOT_LEADER_OR_FOLLOWER);
    fetch(r, freq(1, 0, 2, 4, 0), 2, &resp, &out);
    /* {0,1} -> target {1,3} + removing {0}: replicas {1,3,0}, same epoch */
    img = image(0, 2, 4, ISR01, 2);
    img.replicas[0] = 1; img.replicas[1] = 3; img.replicas[2] = 0;
    bk_repl_on_image(r, &img, 10, &out);
    ck_assert_int_eq(bk_repl_leader_epoch(r), 2);
    ck_assert_int_eq(fetch(r, freq(3, 0, 2, 0, -1), 11, &resp, &out), KP_ERROR_NONE);
    ck_assert(!out.alter);                        /* below the HW */
    ck_assert_int_eq(fetch(r, freq(3, 0, 2, 4, 0), 12, &resp, &out), KP_ERROR_NONE);
    ck_assert(out.alter);
    ck_assert_uint_eq(out.alter_req.n_isr, 3);
    ck_assert_int_eq(out.alter_req.isr[2], 3);
    ck_assert_int_eq(out.alter_req.partition_epoch, 4);
    /* 1 is removed (replicas {0,3}): its fetches are refused from now on */
    int32_t isr03[] = { 0, 3 };
    img = image(0, 2, 5, isr03, 2);
    img.replicas[0] = 0; img.replicas[1] = 3;
    img.n_replicas = 2;
    bk_repl_on_image(r, &img, 20, &out);
    ck_assert_int_eq(fetch(r, freq(1, 0, 2, 4, 0), 21, &resp, &out), KP_ERROR_NOT_LEADER_OR_FOLLOWER);
    ck_assert_int_eq(fetch(r, freq(3, 0, 2, 4, 0), 22, &resp, &out), KP_ERROR_NONE);
    bk_repl_free(r);
}
END_TEST

/* Regression (sim seed 21056): a stale error answer must not drop a pending
 * expansion, or the HW passes the new member while the controller may have
 * put it in the ISR. Only INELIGIBLE_REPLICA for this very proposal at its
 * own partition epoch means "not applied". */
START_TEST(test_alter_error_keeps_pending_expansion) {
    bk_repl_t *r = leader(1, 0, ISR01, 2);
    bk_repl_out_t out;
    bk_repl_fetch_resp_t resp;
    int64_t base;
    ck_assert_int_eq(bk_repl_produce(r, 2, false, 0, 0, 0, &base, &out), KP_ERROR_NONE);
    fetch(r, freq(1, 0, 1, 2, 1), 1, &resp, &out);
    ck_assert_int_eq(bk_repl_hw(r), 2);
    fetch(r, freq(2, 0, 1, 2, 1), 2, &resp, &out);    /* caught up: expand */
    ck_assert(out.alter);
    uint64_t seq = out.alter_req.seq;
    ck_assert_int_eq(bk_repl_produce(r, 2, true, 5, 1000, 3, &base, &out), KP_ERROR_NONE);
    fetch(r, freq(1, 0, 1, 4, 1), 4, &resp, &out);
    ck_assert_int_eq(bk_repl_hw(r), 2);               /* pending member 2 counts */
    bk_repl_alter_resp_t stale = { .error = KP_ERROR_INVALID_UPDATE_VERSION,
                                   .req_seq = seq - 1, .partition_epoch = 0 };
    bk_repl_on_alter_resp(r, &stale, 5, &out);        /* an older proposal's answer */
    ck_assert_int_eq(bk_repl_hw(r), 2);
    bk_repl_alter_resp_t iuv = { .error = KP_ERROR_INVALID_UPDATE_VERSION,
                                 .req_seq = seq, .partition_epoch = 1 };
    bk_repl_on_alter_resp(r, &iuv, 6, &out);          /* maybe applied by a re-send */
    ck_assert_int_eq(bk_repl_hw(r), 2);
    ck_assert_int_eq(out.n_acks, 0);
    /* the image says it was applied: member 2 is committed */
    bk_repl_image_t img = image(0, 1, 1, ISR012, 3);
    bk_repl_on_image(r, &img, 7, &out);
    ck_assert_int_eq(bk_repl_hw(r), 2);
    fetch(r, freq(2, 0, 1, 4, 1), 8, &resp, &out);
    ck_assert_int_eq(bk_repl_hw(r), 4);
    ck_assert_int_eq(out.n_acks, 1);
    ck_assert_int_eq(out.acks[0].error, KP_ERROR_NONE);
    bk_repl_free(r);
}
END_TEST

START_TEST(test_alter_ineligible_drops_proposal) {
    bk_repl_t *r = leader(1, 0, ISR01, 2);
    bk_repl_out_t out;
    bk_repl_fetch_resp_t resp;
    fetch(r, freq(1, 0, 1, 0, -1), 1, &resp, &out);
    fetch(r, freq(2, 0, 1, 0, -1), 2, &resp, &out);
    ck_assert(out.alter);
    bk_repl_alter_resp_t inel = { .error = KP_ERROR_INELIGIBLE_REPLICA,
                                  .req_seq = out.alter_req.seq, .partition_epoch = 0 };
    bk_repl_on_alter_resp(r, &inel, 3, &out);
    bk_repl_tick(r, 4, &out);
    ck_assert(!out.alter);                            /* dropped, not re-sent */
    fetch(r, freq(2, 0, 1, 0, -1), 100, &resp, &out);
    ck_assert(!out.alter);                            /* backoff */
    fetch(r, freq(2, 0, 1, 0, -1), 203, &resp, &out);
    ck_assert(out.alter);                             /* proposed again */
    bk_repl_free(r);
}
END_TEST

/* Follower: stale and duplicated answers change nothing; errors back off;
 * HW learnt is capped by its own LEO; batches must continue the log. */
START_TEST(test_follower_responses) {
    bk_repl_t *f = mk(1, 0, 0, NULL, 0, false);
    bk_repl_out_t out;
    bk_repl_image_t img = image(0, 2, 0, ISR012, 3);
    bk_repl_on_image(f, &img, 0, &out);
    ck_assert(out.send_fetch);
    uint64_t seq = out.fetch.seq;
    bk_repl_fetch_resp_t resp = { .error = KP_ERROR_NONE, .leader_epoch = 2,
                                  .req_fetch_offset = 0, .req_seq = seq + 5,
                                  .high_watermark = 2 };
    resp.batches[0] = (bk_repl_batch_t){ 0, 1, 2 };
    resp.n_batches = 1;
    bk_repl_on_fetch_resp(f, &resp, 1, &out);                 /* wrong seq */
    ck_assert_int_eq(bk_repl_leo(f), 0);
    resp.req_seq = seq;
    resp.batches[0].base_offset = 1;                          /* gap */
    bk_repl_on_fetch_resp(f, &resp, 1, &out);
    ck_assert_int_eq(bk_repl_leo(f), 0);
    ck_assert(!out.send_fetch);                               /* backs off */
    bk_repl_tick(f, 50, &out);
    ck_assert(!out.send_fetch);
    bk_repl_tick(f, 101, &out);
    ck_assert(out.send_fetch);
    resp.req_seq = out.fetch.seq;
    resp.batches[0] = (bk_repl_batch_t){ 0, 1, 2 };
    resp.high_watermark = 5;
    bk_repl_on_fetch_resp(f, &resp, 102, &out);
    ck_assert_int_eq(bk_repl_leo(f), 2);
    ck_assert_int_eq(bk_repl_hw(f), 2);                       /* min(5, LEO) */
    ck_assert_int_eq(out.n_append, 1);
    ck_assert(out.send_fetch);
    bk_repl_on_fetch_resp(f, &resp, 103, &out);               /* duplicate */
    ck_assert_int_eq(out.n_append, 0);
    ck_assert_int_eq(bk_repl_leo(f), 2);
    /* FENCED: back off and wait for the image */
    bk_repl_fetch_resp_t fenced = { .error = KP_ERROR_FENCED_LEADER_EPOCH, .leader_epoch = 2,
                                    .req_fetch_offset = 2, .req_seq = out.fetch.seq };
    bk_repl_on_fetch_resp(f, &fenced, 104, &out);
    ck_assert(!out.send_fetch);
    /* lost answer: timeout then backoff */
    bk_repl_tick(f, 300, &out);
    ck_assert(out.send_fetch);
    bk_repl_tick(f, 700, &out);
    ck_assert(!out.send_fetch);
    bk_repl_tick(f, 900, &out);                 /* timed out: backoff to 1000 */
    ck_assert(!out.send_fetch);
    bk_repl_tick(f, 999, &out);
    ck_assert(!out.send_fetch);
    bk_repl_tick(f, 1000, &out);
    ck_assert(out.send_fetch);
    bk_repl_free(f);
}
END_TEST

/* An answer with no data for the partition: with a leader that answers at
 * once the follower pauses (fetch_backoff_ms / 10); with one that parks
 * empty fetches (the broker's, empty_fetch_pause_ms = 0) it fetches again
 * at once, so the partition is in the next fetch to that leader and its
 * next write wakes it (else acks=all waited up to max.wait; issue 9). */
static bool refetch_after_empty(int64_t pause_ms) {
    bk_repl_config_t c = cfg_for(1);
    c.empty_fetch_pause_ms = pause_ms;
    bk_repl_restore_t rs = { .log_start = 0, .leo = 0, .hw_checkpoint = 0, .epochs = NULL, .n_epochs = 0 };
    bk_repl_t *f = bk_repl_new(&c, &rs);
    ck_assert_ptr_nonnull(f);
    bk_repl_out_t out;
    bk_repl_image_t img = image(0, 2, 0, ISR012, 3);
    bk_repl_on_image(f, &img, 0, &out);
    ck_assert(out.send_fetch);
    bk_repl_fetch_resp_t resp = { .error = KP_ERROR_NONE, .leader_epoch = 2, .req_fetch_offset = 0,
                                  .req_seq = out.fetch.seq, .high_watermark = 0 };
    bk_repl_on_fetch_resp(f, &resp, 10, &out);
    bool at_once = out.send_fetch;
    if (!at_once) {
        bk_repl_tick(f, 10 + c.fetch_backoff_ms / 10 - 1, &out);
        ck_assert(!out.send_fetch);
        bk_repl_tick(f, 10 + c.fetch_backoff_ms / 10, &out);
        ck_assert(out.send_fetch);
    }
    bk_repl_free(f);
    return at_once;
}

START_TEST(test_empty_answer_refetch) {
    ck_assert(!refetch_after_empty(-1));
    ck_assert(refetch_after_empty(0));
}
END_TEST

/* bk_repl_next_tick_ms is what the driver arms a partition's timer for:
 * a tick before it must do nothing (else an action would be late), and a
 * tick at or after it must act or move it past now (else the driver would
 * spin). Checked before every step of random leader and follower runs. */
static bool out_empty(const bk_repl_out_t *o) {
    return !o->truncate && !o->n_append && !o->hw_changed && !o->send_fetch && !o->alter && !o->n_acks;
}

static void check_tick_at(bk_repl_t *r, int64_t now, unsigned seed, int step);

/* Ticks at now, or (half the time) exactly at due - 1 and at due: the
 * boundaries, where an off-by-one would show. Returns the time reached. */
static int64_t check_tick(bk_repl_t *r, int64_t now, unsigned seed, int step) {
    int64_t due = bk_repl_next_tick_ms(r);
    if (due != INT64_MAX && due > now && rand() % 2) {
        check_tick_at(r, due - 1, seed, step);
        check_tick_at(r, due, seed, step);
        return due;
    }
    check_tick_at(r, now, seed, step);
    return now;
}

static void check_tick_at(bk_repl_t *r, int64_t now, unsigned seed, int step) {
    int64_t due = bk_repl_next_tick_ms(r);
    int64_t hw = bk_repl_hw(r);
    int32_t isr[4];
    uint32_t n_isr = bk_repl_isr(r, isr, 4);
    uint32_t waits = bk_repl_n_waits(r);
    bk_repl_out_t out;
    bk_repl_tick(r, now, &out);
    if (now < due) {
        ck_assert_msg(out_empty(&out) && bk_repl_next_tick_ms(r) == due && bk_repl_hw(r) == hw &&
                          bk_repl_isr(r, isr, 4) == n_isr && bk_repl_n_waits(r) == waits,
                      "seed %u step %d: tick at %lld before due %lld acted", seed, step, (long long)now,
                      (long long)due);
    } else {
        ck_assert_msg(!out_empty(&out) || bk_repl_next_tick_ms(r) > now,
                      "seed %u step %d: due %lld, tick at %lld did nothing and stays due", seed, step,
                      (long long)due, (long long)now);
    }
}

START_TEST(test_next_tick_is_exact) {
    for (unsigned seed = 1; seed <= 400; seed++) {
        srand(seed);
        bk_repl_t *r = leader(1, 0, seed % 2 ? ISR012 : ISR01, seed % 2 ? 3 : 2);
        bk_repl_out_t out;
        bk_repl_fetch_resp_t resp;
        int64_t now = 0, base;
        int32_t pe = 0;
        uint64_t alter_seq = 0;
        bk_repl_alter_req_t last_alter;
        memset(&last_alter, 0, sizeof last_alter);
        for (int step = 0; step < 200; step++) {
            now += rand() % 400;
            now = check_tick(r, now, seed, step);
            int ev = rand() % 5;
            if (ev == 0) {
                bool all = rand() % 2;
                int16_t e = bk_repl_produce(r, 1 + (uint32_t)(rand() % 3), all, (uint64_t)step,
                                            now + 50 + rand() % 2000, now, &base, &out);
                /* refused: under min.insync (a shrunk ISR) or all waits taken */
                if (e != KP_ERROR_NONE)
                    ck_assert(e == KP_ERROR_NOT_ENOUGH_REPLICAS || e == KP_ERROR_REQUEST_TIMED_OUT);
            } else if (ev == 1 || ev == 2) {
                int64_t leo = bk_repl_leo(r);
                int64_t off = leo - rand() % 4;
                if (off < 0) off = 0;
                fetch(r, freq(1 + rand() % 2, 0, 1, off, off > 0 ? 1 : -1), now, &resp, &out);
            } else if (ev == 3 && alter_seq) {
                int16_t errs[] = { KP_ERROR_NONE, KP_ERROR_INVALID_UPDATE_VERSION, KP_ERROR_INELIGIBLE_REPLICA,
                                   KP_ERROR_REQUEST_TIMED_OUT };
                bk_repl_alter_resp_t ar = { .error = errs[rand() % 4], .req_seq = alter_seq, .leader_epoch = 1,
                                            .partition_epoch = pe + 1 };
                if (ar.error == KP_ERROR_NONE) {
                    memcpy(ar.isr, last_alter.isr, last_alter.n_isr * sizeof ar.isr[0]);
                    ar.n_isr = last_alter.n_isr;
                    pe++;
                }
                bk_repl_on_alter_resp(r, &ar, now, &out);
                alter_seq = 0;
            } else if (ev == 4 && last_alter.n_isr && rand() % 3 == 0) {
                bk_repl_image_t img = image(0, 1, ++pe, last_alter.isr, last_alter.n_isr);
                bk_repl_on_image(r, &img, now, &out);
            } else {
                bk_repl_tick(r, now, &out);
            }
            if (out.alter) { alter_seq = out.alter_req.seq; last_alter = out.alter_req; }
        }
        bk_repl_free(r);

        /* a follower: answers (empty, error, stale) arrive at random times, or never */
        bk_repl_config_t c = cfg_for(1);
        bk_repl_restore_t rs = { .log_start = 0, .leo = 0, .hw_checkpoint = 0, .epochs = NULL, .n_epochs = 0 };
        bk_repl_t *f = bk_repl_new(&c, &rs);
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(bk_repl_next_tick_ms(f), INT64_MAX);   /* no role: nothing to time */
        bk_repl_image_t img = image(0, 2, 0, ISR012, 3);
        now = 0;
        bk_repl_on_image(f, &img, now, &out);
        uint64_t fseq = out.send_fetch ? out.fetch.seq : 0;
        for (int step = 0; step < 200; step++) {
            now += rand() % 300;
            now = check_tick(f, now, seed, 1000 + step);
            int ev = rand() % 3;
            if (ev == 0 && fseq) {
                bk_repl_fetch_resp_t fr = { .error = rand() % 4 ? KP_ERROR_NONE : KP_ERROR_NOT_LEADER_OR_FOLLOWER,
                                            .leader_epoch = 2, .req_fetch_offset = 0,
                                            .req_seq = rand() % 5 ? fseq : fseq - 1, .high_watermark = 0 };
                bk_repl_on_fetch_resp(f, &fr, now, &out);
            } else {
                bk_repl_tick(f, now, &out);
            }
            if (out.send_fetch) fseq = out.fetch.seq;
        }
        bk_repl_free(f);
    }
}
END_TEST

START_TEST(test_produce_bounds) {
    bk_repl_t *r = leader(1, 0, ISR01, 2);
    bk_repl_out_t out;
    int64_t base;
    ck_assert_int_eq(bk_repl_produce(r, 0, true, 0, 100, 0, &base, &out), KP_ERROR_INVALID_RECORD);
    for (uint64_t i = 0; i < BK_REPL_WAITS_MAX; i++)
        ck_assert_int_eq(bk_repl_produce(r, 1, true, i, 100, 0, &base, &out), KP_ERROR_NONE);
    ck_assert_uint_eq(bk_repl_n_waits(r), BK_REPL_WAITS_MAX);
    ck_assert_int_eq(bk_repl_produce(r, 1, true, 999, 100, 0, &base, &out), KP_ERROR_REQUEST_TIMED_OUT);
    ck_assert_int_eq(bk_repl_leo(r), BK_REPL_WAITS_MAX);
    ck_assert_int_eq(out.n_append, 0);
    /* acks=1 needs no wait slot */
    ck_assert_int_eq(bk_repl_produce(r, 1, false, 0, 100, 0, &base, &out), KP_ERROR_NONE);
    /* all of them complete in one step, in offset order */
    bk_repl_fetch_resp_t resp;
    fetch(r, freq(1, 0, 1, BK_REPL_WAITS_MAX + 1, 1), 5, &resp, &out);
    ck_assert_uint_eq(out.n_acks, BK_REPL_WAITS_MAX);
    for (uint32_t i = 0; i < out.n_acks; i++) {
        ck_assert_int_eq(out.acks[i].error, KP_ERROR_NONE);
        ck_assert_int_eq(out.acks[i].base_offset, (int64_t)i);
    }
    ck_assert_uint_eq(bk_repl_n_waits(r), 0);
    bk_repl_free(r);
}
END_TEST

START_TEST(test_not_a_replica_stops) {
    bk_repl_t *r = leader(1, 0, ISR01, 2);
    bk_repl_out_t out;
    bk_repl_image_t img = image(1, 2, 0, ISR01, 2);
    img.replicas[0] = 5;   /* reassigned away from node 0 */
    bk_repl_on_image(r, &img, 0, &out);
    ck_assert_int_eq(bk_repl_role(r), BK_REPL_NONE);
    bk_repl_tick(r, 100, &out);
    ck_assert(!out.send_fetch);
    bk_repl_free(r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("repl");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_fetch_epoch_errors);
    tcase_add_test(tc, test_new_rejects_bad_restore);
    tcase_add_test(tc, test_kip101_hw_truncation_loss_impossible);
    tcase_add_test(tc, test_kip101_mutation_loses_record);
    tcase_add_test(tc, test_kip101_divergence_impossible);
    tcase_add_test(tc, test_longer_divergent_follower_truncates);
    tcase_add_test(tc, test_epoch_end_offset);
    tcase_add_test(tc, test_acks_all_completes_at_hw);
    tcase_add_test(tc, test_duplicate_waits_for_hw);
    tcase_add_test(tc, test_acks_timeout_and_leadership_loss);
    tcase_add_test(tc, test_not_enough_replicas_after_append);
    tcase_add_test(tc, test_isr_shrink_timing);
    tcase_add_test(tc, test_isr_member_below_hw_leaves_now);
    tcase_add_test(tc, test_isr_not_shrunk_at_leo);
    tcase_add_test(tc, test_isr_expand);
    tcase_add_test(tc, test_replica_set_change_same_epoch);
    tcase_add_test(tc, test_alter_error_keeps_pending_expansion);
    tcase_add_test(tc, test_alter_ineligible_drops_proposal);
    tcase_add_test(tc, test_follower_responses);
    tcase_add_test(tc, test_empty_answer_refetch);
    tcase_add_test(tc, test_produce_bounds);
    tcase_add_test(tc, test_next_tick_is_exact);
    tcase_add_test(tc, test_not_a_replica_stops);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
