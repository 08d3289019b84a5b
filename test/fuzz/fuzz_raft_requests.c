/* libFuzzer target: raft requests from anyone who reaches a controller port
 * (issue 16, finding 1), through the wire decoder (broker/quorum/quorum_rpc.c)
 * into the pure core (raft/). Node 1 of voters {1,2,3} follows node 2 at
 * epoch 5 with a few entries; the input is a sequence of operations:
 *   op & 0x80: a raw frame (u16 length + bytes) -> bk_quorum_rpc_decode_request;
 *   else:      a request built from fields the input picks (type, sender,
 *              epoch from a table of edge values, cluster id, positions),
 *              encoded with bk_quorum_rpc_encode_request and decoded back;
 * the clock moves by (op & 0x3f) * 5 ms and the core is ticked after each.
 * Properties (beyond every assertion inside the core holding):
 *  - the epoch never exceeds RAFT_EPOCH_MAX, never decreases, and one
 *    request raises it by at most RAFT_EPOCH_JUMP_MAX;
 *  - a request of another cluster, or an election request from a
 *    non-voter, leaves the hard state alone;
 *  - a request never makes node 1 leader (that takes vote answers). */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "broker/quorum/quorum_rpc.h"
#include "raft/raft.h"

#define FUZZ_CLUSTER "fuzz-cluster-id"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    const uint8_t *p;
    size_t n, i;
} in_t;

static uint8_t u8(in_t *in) { return in->i < in->n ? in->p[in->i++] : 0; }
static uint32_t u32(in_t *in) {
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) v = v << 8 | u8(in);
    return v;
}

static int32_t pick_epoch(in_t *in, int32_t e) {
    switch (u8(in) % 12) {
    case 0: return e - 1;
    case 1: return e;
    case 2: return e + 1;
    case 3: return e + 2;
    case 4: return e + RAFT_EPOCH_JUMP_MAX;
    case 5: return e + RAFT_EPOCH_JUMP_MAX + 1;
    case 6: return RAFT_EPOCH_MAX;
    case 7: return RAFT_EPOCH_MAX - 1;
    case 8: return INT32_MAX;
    case 9: return -1;
    case 10: return INT32_MIN;
    default: return (int32_t)u32(in);
    }
}

static raft_ready_t step(raft_t *r, const raft_event_t *ev, int64_t now) {
    raft_ready_t rd = raft_step(r, ev, now);
    raft_ready_persisted(&rd);
    raft_ready_sent(&rd);
    raft_advance(r, &rd);
    return rd;
}

static bool election(raft_msg_type_t t) {
    return t == RAFT_MSG_VOTE_REQ || t == RAFT_MSG_BEGIN_EPOCH_REQ || t == RAFT_MSG_END_EPOCH_REQ;
}

static bool is_voter(int32_t id) { return id >= 1 && id <= 3; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    raft_config_t cfg;
    raft_config_default(&cfg);
    cfg.node_id = 1;
    strcpy(cfg.cluster_id, FUZZ_CLUSTER);
    cfg.n_voters = 3;
    for (int i = 0; i < 3; i++) cfg.voters[i] = i + 1;
    cfg.election_timeout_ms = 100;
    cfg.fetch_timeout_ms = 200;
    cfg.fetch_interval_ms = 20;
    raft_hard_state_t hs = { 5, 2, 2 };
    static const uint8_t payload[4] = { 1, 2, 3, 4 };
    raft_entry_t ents[3] = {
        { 0, 3, RAFT_ENTRY_LEADER_CHANGE, NULL, 0 },
        { 1, 3, RAFT_ENTRY_DATA, payload, sizeof payload },
        { 2, 5, RAFT_ENTRY_LEADER_CHANGE, NULL, 0 },
    };
    int64_t now = 1000;
    raft_t *r = raft_new(&cfg, &hs, NULL, NULL, 0, ents, 3, now);
    assert(r != NULL);
    in_t in = { data, size, 0 };
    kp_arena_t a;
    kp_arena_init(&a, 1 << 20);
    while (in.i < in.n) {
        uint8_t op = u8(&in);
        now += (int64_t)(op & 0x3f) * 5;
        raft_msg_t m;
        bool have = false;
        uint8_t *frame = NULL;
        size_t flen = 0;
        if (op & 0x80) {   /* raw bytes as a request frame (no size prefix) */
            size_t len = ((size_t)u8(&in) << 8 | u8(&in)) % 2048;
            if (len > in.n - in.i) len = in.n - in.i;
            kp_request_header_t h;
            have = bk_quorum_rpc_decode_request(in.p + in.i, len, 1, &a, &h, &m) == KP_OK;
            in.i += len;
        } else {           /* a request from chosen fields, through the codec */
            raft_msg_t q;
            memset(&q, 0, sizeof q);
            static const raft_msg_type_t types[5] = { RAFT_MSG_VOTE_REQ, RAFT_MSG_BEGIN_EPOCH_REQ,
                                                      RAFT_MSG_END_EPOCH_REQ, RAFT_MSG_FETCH_REQ,
                                                      RAFT_MSG_SNAP_REQ };
            q.type = types[u8(&in) % 5];
            q.from = (int32_t)(u8(&in) % 8) - 1;   /* -1..6: voters, self, strangers */
            q.to = 1;
            q.epoch = pick_epoch(&in, raft_epoch(r));
            q.leader_id = q.from;
            uint8_t f = u8(&in);
            q.u.vote_req.prevote = f & 1;
            if (q.type == RAFT_MSG_VOTE_REQ) {
                q.u.vote_req.last_epoch = pick_epoch(&in, raft_epoch(r));
                q.u.vote_req.log_end = (int64_t)(u8(&in) % 8) - 1;
            } else if (q.type == RAFT_MSG_END_EPOCH_REQ) {
                q.u.end_req.n_successors = u8(&in) % (RAFT_VOTERS_MAX + 1);
                for (uint32_t k = 0; k < q.u.end_req.n_successors; k++)
                    q.u.end_req.successors[k] = (int32_t)(u8(&in) % 8) - 1;
            } else if (q.type == RAFT_MSG_FETCH_REQ) {
                q.u.fetch_req.fetch_offset = (int64_t)(u8(&in) % 8) - 1;
                q.u.fetch_req.last_fetched_epoch = pick_epoch(&in, raft_epoch(r));
            } else if (q.type == RAFT_MSG_SNAP_REQ) {
                q.u.snap_req.snapshot.end_offset = (int64_t)(u8(&in) % 8) - 1;
                q.u.snap_req.snapshot.epoch = pick_epoch(&in, raft_epoch(r));
                q.u.snap_req.position = (int64_t)(u8(&in) % 8) - 1;
            }
            static const char *cids[4] = { FUZZ_CLUSTER, "", NULL, "fuzz-cluster-iD" };
            if (bk_quorum_rpc_encode_request(&q, 7, cids[(f >> 1) % 4], &frame, &flen) == KP_OK) {
                kp_request_header_t h;
                /* refused when a field is out of the wire's range (a
                 * negative replica id): that is the decoder's first check */
                have = bk_quorum_rpc_decode_request(frame + 4, flen - 4, 1, &a, &h, &m) == KP_OK;
            }
        }
        if (have) {
            raft_hard_state_t before = raft_hard_state(r);
            raft_event_t ev = { .type = RAFT_EV_RECV };
            ev.u.msg = &m;
            (void)step(r, &ev, now);
            raft_hard_state_t after = raft_hard_state(r);
            bool same = memcmp(&before, &after, sizeof before) == 0;
            assert(after.epoch >= before.epoch && after.epoch <= RAFT_EPOCH_MAX);
            assert((int64_t)after.epoch - before.epoch <= RAFT_EPOCH_JUMP_MAX);
            if (strcmp(m.cluster_id, FUZZ_CLUSTER) != 0) assert(same);
            if (election(m.type) && !is_voter(m.from)) assert(same);
            assert(raft_role(r) != RAFT_LEADER);
        }
        free(frame);
        kp_arena_reset(&a);
        raft_event_t tick = { .type = RAFT_EV_TICK };
        (void)step(r, &tick, now);
        assert(raft_role(r) != RAFT_LEADER);
    }
    kp_arena_free(&a);
    raft_free(r);
    return 0;
}
