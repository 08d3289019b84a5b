/* Unit tests for the raft Fetch long-poll bookkeeping (broker/quorum_hold.c)
 * and the MaxWaitMs round trip of the raft Fetch encoding (quorum_rpc.c):
 * the wait bound against the fetch and request timeouts, which answers are
 * held (only empty ones carrying the HW the follower was last told), when a
 * held Fetch is due (deadline, log end, HW, epoch, role), a peer's newer
 * Fetch superseding its held one, and the table bounds. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "broker/quorum/quorum_hold.h"
#include "broker/quorum/quorum_rpc.h"
#include "protocol/kp_arena.h"

static raft_msg_t empty_resp(int32_t to, int64_t hw) {
    raft_msg_t m;
    memset(&m, 0, sizeof m);
    m.type = RAFT_MSG_FETCH_RESP;
    m.from = 1;
    m.to = to;
    m.epoch = 3;
    m.u.fetch_resp.high_watermark = hw;
    return m;
}

static bk_quorum_hold_entry_t entry(int32_t from, int64_t deadline, int64_t end, int64_t hw, int32_t epoch) {
    bk_quorum_hold_entry_t e;
    memset(&e, 0, sizeof e);
    e.req.type = RAFT_MSG_FETCH_REQ;
    e.req.from = from;
    e.deadline_ms = deadline;
    e.log_end = end;
    e.hw = hw;
    e.epoch = epoch;
    e.slot.seq = (uint64_t)from;
    return e;
}

START_TEST(test_wait_bound) {
    /* Kafka's defaults (fetch 2000, request 2000): the 500 ms cap */
    ck_assert_int_eq(bk_quorum_hold_wait_ms(2000, 2000), 500);
    /* the tests' fast fetch timeout: a quarter of it */
    ck_assert_int_eq(bk_quorum_hold_wait_ms(500, 2000), 125);
    ck_assert_int_eq(bk_quorum_hold_wait_ms(2000, 400), 100);
    ck_assert_int_eq(bk_quorum_hold_wait_ms(3, 2000), 0);      /* below 1 ms: never hold */
    ck_assert_int_eq(bk_quorum_hold_wait_ms(1, 1), 0);
}
END_TEST

START_TEST(test_only_nothing_new_is_held) {
    bk_quorum_hold_t *h = malloc(sizeof *h);
    ck_assert_ptr_nonnull(h);
    bk_quorum_hold_init(h, 500);
    raft_msg_t m = empty_resp(2, 10);
    /* a follower not answered yet in this leadership: answered at once */
    ck_assert(!bk_quorum_hold_should_hold(h, &m));
    bk_quorum_hold_told(h, 2, 10);
    ck_assert(bk_quorum_hold_should_hold(h, &m));
    /* a new HW for it, entries, divergence, snapshot or an error: at once */
    raft_msg_t x = empty_resp(2, 11);
    ck_assert(!bk_quorum_hold_should_hold(h, &x));
    x = m; x.u.fetch_resp.n_entries = 1;
    ck_assert(!bk_quorum_hold_should_hold(h, &x));
    x = m; x.u.fetch_resp.diverging = true;
    ck_assert(!bk_quorum_hold_should_hold(h, &x));
    x = m; x.u.fetch_resp.need_snapshot = true;
    ck_assert(!bk_quorum_hold_should_hold(h, &x));
    x = m; x.error = 6;
    ck_assert(!bk_quorum_hold_should_hold(h, &x));
    x = m; x.type = RAFT_MSG_VOTE_RESP;
    ck_assert(!bk_quorum_hold_should_hold(h, &x));
    /* another follower's memory is its own */
    raft_msg_t other = empty_resp(3, 10);
    ck_assert(!bk_quorum_hold_should_hold(h, &other));
    /* a new leadership forgets what was told */
    bk_quorum_hold_forget(h);
    ck_assert(!bk_quorum_hold_should_hold(h, &m));
    /* wait 0 never holds */
    bk_quorum_hold_init(h, 0);
    bk_quorum_hold_told(h, 2, 10);
    ck_assert(!bk_quorum_hold_should_hold(h, &m));
    free(h);
}
END_TEST

START_TEST(test_due_conditions) {
    bk_quorum_hold_t *h = malloc(sizeof *h);
    ck_assert_ptr_nonnull(h);
    bk_quorum_hold_init(h, 500);
    bk_quorum_hold_entry_t out;
    bk_quorum_hold_entry_t e = entry(2, 1500, 40, 38, 3);
    ck_assert(bk_quorum_hold_add(h, &e));
    ck_assert_uint_eq(h->held_total, 1);
    /* nothing moved, before the deadline: stays */
    ck_assert(!bk_quorum_hold_take_due(h, 1499, 40, 38, 3, true, &out));
    ck_assert_uint_eq(h->n, 1);
    /* each change alone releases it */
    struct { int64_t now, end, hw; int32_t epoch; bool leader; } moves[] = {
        { 1500, 40, 38, 3, true },   /* deadline */
        { 1000, 41, 38, 3, true },   /* log end */
        { 1000, 40, 39, 3, true },   /* HW */
        { 1000, 40, 38, 4, true },   /* epoch */
        { 1000, 40, 38, 3, false },  /* role */
    };
    for (size_t i = 0; i < sizeof moves / sizeof moves[0]; i++) {
        if (h->n == 0) ck_assert(bk_quorum_hold_add(h, &e));
        ck_assert(bk_quorum_hold_take_due(h, moves[i].now, moves[i].end, moves[i].hw, moves[i].epoch, moves[i].leader,
                                    &out));
        ck_assert_int_eq(out.req.from, 2);
        ck_assert_int_eq(out.deadline_ms, 1500);
        ck_assert_uint_eq(h->n, 0);
        ck_assert(!bk_quorum_hold_take_due(h, 9999, 0, 0, 0, false, &out));
    }
    free(h);
}
END_TEST

START_TEST(test_peer_supersedes_and_bounds) {
    bk_quorum_hold_t *h = malloc(sizeof *h);
    ck_assert_ptr_nonnull(h);
    bk_quorum_hold_init(h, 500);
    for (int32_t i = 0; i < BK_QUORUM_HOLD_MAX; i++) {
        bk_quorum_hold_entry_t e = entry(100 + i, 1000 + i, 5, 5, 1);
        ck_assert(bk_quorum_hold_add(h, &e));
    }
    bk_quorum_hold_entry_t extra = entry(999, 1000, 5, 5, 1);
    ck_assert(!bk_quorum_hold_add(h, &extra));            /* full: the caller answers at once */
    bk_quorum_hold_told(h, 7, 5);
    raft_msg_t m = empty_resp(7, 5);
    ck_assert(!bk_quorum_hold_should_hold(h, &m));        /* no room */
    bk_quorum_hold_entry_t out;
    ck_assert(bk_quorum_hold_take_peer(h, 110, &out));
    ck_assert_int_eq(out.req.from, 110);
    ck_assert_int_eq(out.deadline_ms, 1010);
    ck_assert(!bk_quorum_hold_take_peer(h, 110, &out));
    ck_assert_uint_eq(h->n, BK_QUORUM_HOLD_MAX - 1);
    ck_assert(bk_quorum_hold_should_hold(h, &m));
    /* due ones come out oldest first, only those past their deadline */
    size_t n = 0;
    while (bk_quorum_hold_take_due(h, 1020, 5, 5, 1, true, &out)) {
        ck_assert_int_le(out.deadline_ms, 1020);
        n++;
    }
    ck_assert_uint_eq(n, 20);                       /* 1000..1020 without 1010 */
    /* the told table is bounded: the oldest peer is forgotten */
    bk_quorum_hold_init(h, 500);
    for (int32_t i = 0; i < BK_QUORUM_HOLD_PEERS_MAX + 1; i++) bk_quorum_hold_told(h, i, 1);
    ck_assert_uint_eq(h->ntold, BK_QUORUM_HOLD_PEERS_MAX);
    raft_msg_t first = empty_resp(0, 1), last = empty_resp(BK_QUORUM_HOLD_PEERS_MAX, 1);
    ck_assert(!bk_quorum_hold_should_hold(h, &first));
    ck_assert(bk_quorum_hold_should_hold(h, &last));
    bk_quorum_hold_told(h, BK_QUORUM_HOLD_PEERS_MAX, 2);        /* an update, not a new row */
    ck_assert_uint_eq(h->ntold, BK_QUORUM_HOLD_PEERS_MAX);
    free(h);
}
END_TEST

START_TEST(test_max_wait_round_trip) {
    raft_msg_t m;
    memset(&m, 0, sizeof m);
    m.type = RAFT_MSG_FETCH_REQ;
    m.from = 2;
    m.to = 1;
    m.epoch = 4;
    m.u.fetch_req.fetch_offset = 77;
    m.u.fetch_req.last_fetched_epoch = 3;
    int32_t waits[] = { 0, 125, 500, -5 };
    for (size_t i = 0; i < 4; i++) {
        uint8_t *frame = NULL;
        size_t len = 0;
        ck_assert_int_eq(bk_quorum_rpc_encode_fetch(&m, 9, "cid", waits[i], &frame, &len), KP_OK);
        kp_arena_t a;
        kp_arena_init(&a, 65536);
        kp_request_header_t hdr;
        raft_msg_t got;
        int32_t wait = -1;
        ck_assert_int_eq(bk_quorum_rpc_decode_request_wait(frame + 4, len - 4, 1, &a, &hdr, &got, &wait), KP_OK);
        ck_assert_int_eq(wait, waits[i] < 0 ? 0 : waits[i]);
        ck_assert_int_eq(got.u.fetch_req.fetch_offset, 77);
        ck_assert_int_eq(hdr.correlation_id, 9);
        /* every truncation is refused, never over-read */
        for (size_t cut = 0; cut < len - 4; cut++) {
            kp_arena_t b;
            kp_arena_init(&b, 65536);
            ck_assert_int_ne(bk_quorum_rpc_decode_request_wait(frame + 4, cut, 1, &b, &hdr, &got, &wait), KP_OK);
            kp_arena_free(&b);
        }
        kp_arena_free(&a);
        free(frame);
    }
    /* the plain encoder asks for no wait */
    uint8_t *frame = NULL;
    size_t len = 0;
    ck_assert_int_eq(bk_quorum_rpc_encode_request(&m, 10, "cid", &frame, &len), KP_OK);
    kp_arena_t a;
    kp_arena_init(&a, 65536);
    kp_request_header_t hdr;
    raft_msg_t got;
    int32_t wait = -1;
    ck_assert_int_eq(bk_quorum_rpc_decode_request_wait(frame + 4, len - 4, 1, &a, &hdr, &got, &wait), KP_OK);
    ck_assert_int_eq(wait, 0);
    kp_arena_free(&a);
    free(frame);
}
END_TEST

int main(void) {
    Suite *s = suite_create("quorum_hold");
    TCase *tc = tcase_create("quorum_hold");
    tcase_add_test(tc, test_wait_bound);
    tcase_add_test(tc, test_only_nothing_new_is_held);
    tcase_add_test(tc, test_due_conditions);
    tcase_add_test(tc, test_peer_supersedes_and_bounds);
    tcase_add_test(tc, test_max_wait_round_trip);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
