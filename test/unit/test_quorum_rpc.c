/* Unit tests for broker/quorum_rpc.c: every raft message type survives the
 * trip through Kafka frames (request -> server decode; response -> client
 * decode against the request it answers), entries keep offset/epoch/type/
 * payload, and malformed frames (truncated at every byte, wrong topic,
 * corrupted batch) are errors, never crashes. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "broker/quorum/quorum_rpc.h"

#define ARENA_BYTES (1u << 20)

static raft_msg_t request_of(raft_msg_type_t t) {
    raft_msg_t m;
    memset(&m, 0, sizeof m);
    m.type = t;
    m.from = 3;
    m.to = 1;
    m.epoch = 7;
    m.leader_id = RAFT_NO_NODE;
    switch (t) {
    case RAFT_MSG_VOTE_REQ: m.u.vote_req.prevote = true; m.u.vote_req.last_epoch = 6; m.u.vote_req.log_end = 1234; break;
    case RAFT_MSG_BEGIN_EPOCH_REQ: m.leader_id = 3; break;
    case RAFT_MSG_END_EPOCH_REQ:
        m.leader_id = 3;
        m.u.end_req.n_successors = 2;
        m.u.end_req.successors[0] = 2;
        m.u.end_req.successors[1] = 1;
        break;
    case RAFT_MSG_FETCH_REQ: m.u.fetch_req.fetch_offset = 99; m.u.fetch_req.last_fetched_epoch = 5; break;
    case RAFT_MSG_SNAP_REQ: m.u.snap_req.snapshot.end_offset = 500; m.u.snap_req.snapshot.epoch = 4; m.u.snap_req.position = 77; break;
    default: break;
    }
    return m;
}

/* Sends request `m` through encode + server decode; checks every field. */
static void check_request(raft_msg_type_t t) {
    raft_msg_t m = request_of(t);
    uint8_t *frame = NULL;
    size_t len = 0;
    ck_assert_int_eq(bk_quorum_rpc_encode_request(&m, 42, "cid", &frame, &len), KP_OK);
    ck_assert_uint_eq(((size_t)frame[0] << 24 | frame[1] << 16 | frame[2] << 8 | frame[3]) + 4, len);
    kp_arena_t a;
    kp_arena_init(&a, ARENA_BYTES);
    kp_request_header_t h;
    raft_msg_t d;
    ck_assert_int_eq(bk_quorum_rpc_decode_request(frame + 4, len - 4, 1, &a, &h, &d), KP_OK);
    ck_assert_int_eq(h.correlation_id, 42);
    ck_assert_int_eq(h.api_key, bk_quorum_rpc_api_key(t));
    ck_assert_int_eq(d.type, t);
    ck_assert_int_eq(d.from, 3);
    ck_assert_int_eq(d.to, 1);
    ck_assert_int_eq(d.epoch, 7);
    ck_assert_str_eq(d.cluster_id, "cid");   /* every request carries it */
    switch (t) {
    case RAFT_MSG_VOTE_REQ:
        ck_assert(d.u.vote_req.prevote);
        ck_assert_int_eq(d.u.vote_req.last_epoch, 6);
        ck_assert_int_eq(d.u.vote_req.log_end, 1234);
        break;
    case RAFT_MSG_BEGIN_EPOCH_REQ: ck_assert_int_eq(d.leader_id, 3); break;
    case RAFT_MSG_END_EPOCH_REQ:
        ck_assert_int_eq(d.u.end_req.n_successors, 2);
        ck_assert_int_eq(d.u.end_req.successors[0], 2);
        ck_assert_int_eq(d.u.end_req.successors[1], 1);
        break;
    case RAFT_MSG_FETCH_REQ:
        ck_assert_int_eq(d.u.fetch_req.fetch_offset, 99);
        ck_assert_int_eq(d.u.fetch_req.last_fetched_epoch, 5);
        break;
    case RAFT_MSG_SNAP_REQ:
        ck_assert_int_eq(d.u.snap_req.snapshot.end_offset, 500);
        ck_assert_int_eq(d.u.snap_req.snapshot.epoch, 4);
        ck_assert_int_eq(d.u.snap_req.position, 77);
        break;
    default: break;
    }
    /* truncated at every byte: an error, never a crash */
    for (size_t cut = 0; cut < len - 4; cut++) {
        kp_arena_reset(&a);
        ck_assert_int_ne(bk_quorum_rpc_decode_request(frame + 4, cut, 1, &a, &h, &d), KP_OK);
    }
    kp_arena_free(&a);
    free(frame);
}

START_TEST(test_requests_round_trip) {
    check_request(RAFT_MSG_VOTE_REQ);
    check_request(RAFT_MSG_BEGIN_EPOCH_REQ);
    check_request(RAFT_MSG_END_EPOCH_REQ);
    check_request(RAFT_MSG_FETCH_REQ);
    check_request(RAFT_MSG_SNAP_REQ);
}
END_TEST

START_TEST(test_vote_not_prevote) {
    raft_msg_t m = request_of(RAFT_MSG_VOTE_REQ);
    m.u.vote_req.prevote = false;
    uint8_t *frame = NULL;
    size_t len = 0;
    ck_assert_int_eq(bk_quorum_rpc_encode_request(&m, 1, NULL, &frame, &len), KP_OK);
    kp_arena_t a;
    kp_arena_init(&a, ARENA_BYTES);
    kp_request_header_t h;
    raft_msg_t d;
    ck_assert_int_eq(bk_quorum_rpc_decode_request(frame + 4, len - 4, 1, &a, &h, &d), KP_OK);
    ck_assert(!d.u.vote_req.prevote);
    kp_arena_free(&a);
    free(frame);
}
END_TEST

/* The response to `req` built by the "server", decoded by the "client". */
static void round_trip_response(const raft_msg_t *req, const raft_msg_t *resp, raft_msg_t *out, kp_arena_t *a,
                                uint8_t **frame_out, size_t *len_out) {
    kp_request_header_t h = { bk_quorum_rpc_api_key(req->type), bk_quorum_rpc_api_version(req->type), 9, kp_slice_cstr("x") };
    ck_assert_int_eq(bk_quorum_rpc_encode_response(resp, &h, frame_out, len_out), KP_OK);
    int32_t corr = -1;
    ck_assert_int_eq(bk_quorum_rpc_decode_response(req, *frame_out + 4, *len_out - 4, a, &corr, out), KP_OK);
    ck_assert_int_eq(corr, 9);
    ck_assert_int_eq(out->type, req->type + 1);
    ck_assert_int_eq(out->from, req->to);
    ck_assert_int_eq(out->to, req->from);
    ck_assert_int_eq(out->epoch, resp->epoch);
    ck_assert_int_eq(out->leader_id, resp->leader_id);
    ck_assert_int_eq(out->error, resp->error);
}

static raft_msg_t response_to(const raft_msg_t *req) {
    raft_msg_t r;
    memset(&r, 0, sizeof r);
    r.type = req->type + 1;
    r.from = req->to;
    r.to = req->from;
    r.epoch = 8;
    r.leader_id = 2;
    r.error = RAFT_KERR_FENCED_LEADER_EPOCH;
    return r;
}

START_TEST(test_simple_responses) {
    raft_msg_type_t types[] = { RAFT_MSG_VOTE_REQ, RAFT_MSG_BEGIN_EPOCH_REQ, RAFT_MSG_END_EPOCH_REQ };
    for (size_t i = 0; i < 3; i++) {
        raft_msg_t req = request_of(types[i]);
        raft_msg_t resp = response_to(&req), out;
        if (types[i] == RAFT_MSG_VOTE_REQ) { resp.u.vote_resp.granted = true; resp.u.vote_resp.prevote = true; }
        kp_arena_t a;
        kp_arena_init(&a, ARENA_BYTES);
        uint8_t *frame;
        size_t len;
        round_trip_response(&req, &resp, &out, &a, &frame, &len);
        if (types[i] == RAFT_MSG_VOTE_REQ) {
            ck_assert(out.u.vote_resp.granted);
            ck_assert(out.u.vote_resp.prevote);   /* from the request */
        }
        for (size_t cut = 0; cut < len - 4; cut++) {
            int32_t corr;
            kp_arena_reset(&a);
            ck_assert_int_ne(bk_quorum_rpc_decode_response(&req, frame + 4, cut, &a, &corr, &out), KP_OK);
        }
        kp_arena_free(&a);
        free(frame);
    }
}
END_TEST

START_TEST(test_fetch_response_entries) {
    raft_msg_t req = request_of(RAFT_MSG_FETCH_REQ);
    raft_msg_t resp = response_to(&req), out;
    resp.error = 0;
    static const uint8_t p1[] = "first record", p3[] = "third";
    raft_entry_t e[3] = {
        { 100, 7, RAFT_ENTRY_DATA, p1, sizeof p1 },
        { 101, 8, RAFT_ENTRY_LEADER_CHANGE, NULL, 0 },
        { 102, 8, RAFT_ENTRY_DATA, p3, sizeof p3 },
    };
    resp.u.fetch_resp.high_watermark = 101;
    resp.u.fetch_resp.log_start = 10;
    resp.u.fetch_resp.diverging = true;
    resp.u.fetch_resp.diverging_epoch = 5;
    resp.u.fetch_resp.diverging_end = 90;
    resp.u.fetch_resp.entries = e;
    resp.u.fetch_resp.n_entries = 3;
    kp_arena_t a;
    kp_arena_init(&a, ARENA_BYTES);
    uint8_t *frame;
    size_t len;
    round_trip_response(&req, &resp, &out, &a, &frame, &len);
    ck_assert_int_eq(out.u.fetch_resp.req_fetch_offset, 99);
    ck_assert_int_eq(out.u.fetch_resp.req_last_epoch, 5);
    ck_assert_int_eq(out.u.fetch_resp.high_watermark, 101);
    ck_assert_int_eq(out.u.fetch_resp.log_start, 10);
    ck_assert(out.u.fetch_resp.diverging);
    ck_assert_int_eq(out.u.fetch_resp.diverging_epoch, 5);
    ck_assert_int_eq(out.u.fetch_resp.diverging_end, 90);
    ck_assert(!out.u.fetch_resp.need_snapshot);
    ck_assert_uint_eq(out.u.fetch_resp.n_entries, 3);
    for (int i = 0; i < 3; i++) {
        const raft_entry_t *d = &out.u.fetch_resp.entries[i];
        ck_assert_int_eq(d->offset, e[i].offset);
        ck_assert_int_eq(d->epoch, e[i].epoch);
        ck_assert_int_eq(d->type, e[i].type);
        ck_assert_uint_eq(d->len, e[i].len);
        if (e[i].len) ck_assert(memcmp(d->data, e[i].data, e[i].len) == 0);
    }
    /* a flipped payload byte breaks the batch CRC: refused */
    uint8_t *hit = memmem(frame, len, "first record", 12);
    ck_assert_ptr_nonnull(hit);
    hit[0] ^= 1;
    int32_t corr;
    kp_arena_reset(&a);
    ck_assert_int_ne(bk_quorum_rpc_decode_response(&req, frame + 4, len - 4, &a, &corr, &out), KP_OK);
    kp_arena_free(&a);
    free(frame);
}
END_TEST

START_TEST(test_fetch_response_snapshot_and_empty) {
    raft_msg_t req = request_of(RAFT_MSG_FETCH_REQ);
    raft_msg_t resp = response_to(&req), out;
    resp.u.fetch_resp.need_snapshot = true;
    resp.u.fetch_resp.snapshot.end_offset = 4000;
    resp.u.fetch_resp.snapshot.epoch = 3;
    kp_arena_t a;
    kp_arena_init(&a, ARENA_BYTES);
    uint8_t *frame;
    size_t len;
    round_trip_response(&req, &resp, &out, &a, &frame, &len);
    ck_assert(out.u.fetch_resp.need_snapshot);
    ck_assert(!out.u.fetch_resp.diverging);
    ck_assert_int_eq(out.u.fetch_resp.snapshot.end_offset, 4000);
    ck_assert_int_eq(out.u.fetch_resp.snapshot.epoch, 3);
    ck_assert_uint_eq(out.u.fetch_resp.n_entries, 0);
    kp_arena_free(&a);
    free(frame);
}
END_TEST

START_TEST(test_snapshot_response) {
    raft_msg_t req = request_of(RAFT_MSG_SNAP_REQ);
    raft_msg_t resp = response_to(&req), out;
    static const uint8_t chunk[] = { 1, 2, 3, 0, 255 };
    resp.u.snap_resp.snapshot.end_offset = 500;
    resp.u.snap_resp.snapshot.epoch = 4;
    resp.u.snap_resp.size = 1000;
    resp.u.snap_resp.position = 77;
    resp.u.snap_resp.data = chunk;
    resp.u.snap_resp.len = sizeof chunk;
    kp_arena_t a;
    kp_arena_init(&a, ARENA_BYTES);
    uint8_t *frame;
    size_t len;
    round_trip_response(&req, &resp, &out, &a, &frame, &len);
    ck_assert_int_eq(out.u.snap_resp.snapshot.end_offset, 500);
    ck_assert_int_eq(out.u.snap_resp.size, 1000);
    ck_assert_int_eq(out.u.snap_resp.position, 77);
    ck_assert_uint_eq(out.u.snap_resp.len, sizeof chunk);
    ck_assert(memcmp(out.u.snap_resp.data, chunk, sizeof chunk) == 0);
    kp_arena_free(&a);
    free(frame);
}
END_TEST

START_TEST(test_entries_decode_rejects_bad_batches) {
    static const uint8_t p[] = "x";
    raft_entry_t e[2] = { { 5, 2, RAFT_ENTRY_DATA, p, 1 }, { 7, 2, RAFT_ENTRY_DATA, p, 1 } };
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    ck_assert_int_eq(bk_quorum_rpc_entries_encode(e, 2, &buf, &len, &cap), KP_OK);
    kp_arena_t a;
    kp_arena_init(&a, ARENA_BYTES);
    raft_entry_t *out;
    uint32_t n;
    /* offsets 5 then 7: not contiguous */
    ck_assert_int_ne(bk_quorum_rpc_entries_decode(buf, len, &a, &out, &n), KP_OK);
    /* one batch alone is fine; truncated anywhere it is not */
    size_t one = len / 2;
    ck_assert_int_eq(bk_quorum_rpc_entries_decode(buf, one, &a, &out, &n), KP_OK);
    ck_assert_uint_eq(n, 1);
    for (size_t cut = 1; cut < one; cut++) {
        kp_arena_reset(&a);
        ck_assert_int_ne(bk_quorum_rpc_entries_decode(buf, cut, &a, &out, &n), KP_OK);
    }
    /* epoch 0 is never a raft entry's epoch */
    raft_entry_t z = { 0, 0, RAFT_ENTRY_DATA, p, 1 };
    len = 0;
    ck_assert_int_eq(bk_quorum_rpc_entries_encode(&z, 1, &buf, &len, &cap), KP_OK);
    ck_assert_int_ne(bk_quorum_rpc_entries_decode(buf, len, &a, &out, &n), KP_OK);
    kp_arena_free(&a);
    free(buf);
}
END_TEST

/* The cluster id reaches the core as sent; a null one reads as "", and one
 * too long for the core (or with a NUL inside) is refused by the decoder. */
START_TEST(test_request_cluster_id) {
    raft_msg_t m = request_of(RAFT_MSG_VOTE_REQ);
    const char *ids[3] = { NULL, "", "MkU3OEVBNTcwNTJENDM2Qk" };
    const char *want[3] = { "", "", "MkU3OEVBNTcwNTJENDM2Qk" };
    for (int i = 0; i < 3; i++) {
        uint8_t *frame = NULL;
        size_t len = 0;
        ck_assert_int_eq(bk_quorum_rpc_encode_request(&m, 1, ids[i], &frame, &len), KP_OK);
        kp_arena_t a;
        kp_arena_init(&a, ARENA_BYTES);
        kp_request_header_t h;
        raft_msg_t d;
        ck_assert_int_eq(bk_quorum_rpc_decode_request(frame + 4, len - 4, 1, &a, &h, &d), KP_OK);
        ck_assert_str_eq(d.cluster_id, want[i]);
        kp_arena_free(&a);
        free(frame);
    }
    char big[RAFT_CLUSTER_ID_MAX + 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    for (int t = RAFT_MSG_VOTE_REQ; t < RAFT_MSG_TYPE_COUNT; t += 2) {
        raft_msg_t r = request_of((raft_msg_type_t)t);
        uint8_t *frame = NULL;
        size_t len = 0;
        ck_assert_int_eq(bk_quorum_rpc_encode_request(&r, 1, big, &frame, &len), KP_OK);
        kp_arena_t a;
        kp_arena_init(&a, ARENA_BYTES);
        kp_request_header_t h;
        raft_msg_t d;
        ck_assert_int_eq(bk_quorum_rpc_decode_request(frame + 4, len - 4, 1, &a, &h, &d), KP_ERR_BAD_VALUE);
        kp_arena_free(&a);
        free(frame);
    }
}
END_TEST

START_TEST(test_non_raft_api_is_unsupported) {
    /* an ApiVersions v0 request: header only, empty body */
    uint8_t f[] = { 0, 18, 0, 0, 0, 0, 0, 5, 0, 1, 'c' };
    kp_arena_t a;
    kp_arena_init(&a, ARENA_BYTES);
    kp_request_header_t h;
    raft_msg_t d;
    ck_assert_int_eq(bk_quorum_rpc_decode_request(f, sizeof f, 1, &a, &h, &d), KP_ERR_UNSUPPORTED);
    ck_assert_int_eq(h.api_key, 18);
    kp_arena_free(&a);
}
END_TEST

int main(void) {
    Suite *s = suite_create("quorum_rpc");
    TCase *tc = tcase_create("conversion");
    tcase_add_test(tc, test_requests_round_trip);
    tcase_add_test(tc, test_vote_not_prevote);
    tcase_add_test(tc, test_simple_responses);
    tcase_add_test(tc, test_fetch_response_entries);
    tcase_add_test(tc, test_fetch_response_snapshot_and_empty);
    tcase_add_test(tc, test_snapshot_response);
    tcase_add_test(tc, test_entries_decode_rejects_bad_batches);
    tcase_add_test(tc, test_non_raft_api_is_unsupported);
    tcase_add_test(tc, test_request_cluster_id);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
