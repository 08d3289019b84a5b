/* Unit tests for raft/: specific scenarios driven by hand through a tiny
 * deterministic harness (a FIFO network with per-node cuts and a fake clock).
 * The randomized search for interleavings lives in test/sim/sim_raft.c. */
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "raft/raft.h"
#include "raft/raft_int.h"

#define T_NODES_MAX 6
#define T_QUEUE_MAX 4096
#define T_OBSERVER 100

typedef struct tmsg {
    raft_msg_t m;
    raft_entry_t *ents;
    uint8_t *blob;
} tmsg_t;

typedef struct tnode {
    int32_t id;
    raft_t *r;
    bool cut;                 /* isolated: its messages in and out are lost */
    bool manual_persist;      /* tests send PERSISTED themselves */
    raft_hard_state_t hs;     /* what the driver made durable */
    int hs_writes;
    raft_ready_t last;        /* the last ready (pointers dead after advance) */
    int truncations;
    int64_t last_truncate_to;
    int snapshot_installs;
    int grants_with_hs;       /* real votes whose ready carried the vote */
    int grants_without_hs;
    uint8_t snap_img[256];
    uint32_t snap_img_len;
} tnode_t;

typedef struct tc {
    tnode_t n[T_NODES_MAX];
    int count;
    int64_t now;
    tmsg_t q[T_QUEUE_MAX];
    size_t qn;
    size_t msgs_of_type[RAFT_MSG_TYPE_COUNT];
} tc_t;

static void copy_msg(tmsg_t *t, const raft_msg_t *m) {
    memset(t, 0, sizeof *t);
    t->m = *m;
    if (m->type == RAFT_MSG_FETCH_RESP && m->u.fetch_resp.n_entries) {
        uint32_t n = m->u.fetch_resp.n_entries;
        t->ents = calloc(n, sizeof *t->ents);
        size_t bytes = 0;
        for (uint32_t i = 0; i < n; i++) bytes += m->u.fetch_resp.entries[i].len;
        t->blob = malloc(bytes + 1);
        size_t pos = 0;
        for (uint32_t i = 0; i < n; i++) {
            t->ents[i] = m->u.fetch_resp.entries[i];
            if (t->ents[i].len) memcpy(t->blob + pos, t->ents[i].data, t->ents[i].len);
            t->ents[i].data = t->blob + pos;
            pos += t->ents[i].len;
        }
        t->m.u.fetch_resp.entries = t->ents;
    }
    if (m->type == RAFT_MSG_SNAP_RESP && m->u.snap_resp.len) {
        t->blob = malloc(m->u.snap_resp.len);
        memcpy(t->blob, m->u.snap_resp.data, m->u.snap_resp.len);
        t->m.u.snap_resp.data = t->blob;
    }
}

static tnode_t *node(tc_t *c, int32_t id) {
    for (int i = 0; i < c->count; i++)
        if (c->n[i].id == id) return &c->n[i];
    ck_abort_msg("no node %d", id);
    return NULL;
}

static raft_config_t cfg_for(int32_t id, int voters) {
    raft_config_t cfg;
    raft_config_default(&cfg);
    cfg.node_id = id;
    cfg.n_voters = (size_t)voters;
    for (int i = 0; i < voters; i++) cfg.voters[i] = i + 1;
    cfg.election_timeout_ms = 100;
    cfg.fetch_timeout_ms = 200;
    cfg.fetch_interval_ms = 20;
    cfg.seed = 7;
    return cfg;
}

static raft_ready_t step(tc_t *c, tnode_t *nd, const raft_event_t *ev);

static void persist_all(tc_t *c, tnode_t *nd) {
    raft_event_t ev = { .type = RAFT_EV_PERSISTED };
    ev.u.persisted_end = raft_log_end(nd->r);
    (void)step(c, nd, &ev);
}

/* The driver: persist, then send, then advance (the order under test). */
static raft_ready_t step(tc_t *c, tnode_t *nd, const raft_event_t *ev) {
    raft_ready_t rd = raft_step(nd->r, ev, c->now);
    if (rd.hard_state_changed) {
        nd->hs = rd.hard_state;
        nd->hs_writes++;
    }
    if (rd.truncate) {
        nd->truncations++;
        nd->last_truncate_to = rd.truncate_to;
    }
    if (rd.snapshot_install) {
        nd->snapshot_installs++;
        ck_assert_uint_le(rd.snapshot_len, sizeof nd->snap_img);
        memcpy(nd->snap_img, rd.snapshot_data, rd.snapshot_len);
        nd->snap_img_len = rd.snapshot_len;
    }
    raft_ready_persisted(&rd);
    for (uint32_t i = 0; i < rd.n_msgs; i++) {
        const raft_msg_t *m = &rd.msgs[i];
        c->msgs_of_type[m->type]++;
        if (m->type == RAFT_MSG_VOTE_RESP && m->u.vote_resp.granted && !m->u.vote_resp.prevote) {
            bool with = rd.hard_state_changed && rd.hard_state.voted_for == m->to &&
                        rd.hard_state.epoch == m->epoch;
            nd->grants_with_hs += with;
            nd->grants_without_hs += !with;
        }
        if (nd->cut || node(c, m->to)->cut) continue;
        ck_assert_uint_lt(c->qn, T_QUEUE_MAX);
        copy_msg(&c->q[c->qn++], m);
    }
    raft_ready_sent(&rd);
    raft_advance(nd->r, &rd);
    nd->last = rd;
    bool unsynced = rd.n_entries > 0;
    if (unsynced && !nd->manual_persist) persist_all(c, nd);
    return rd;
}

static void deliver_one(tc_t *c) {
    tmsg_t t = c->q[0];
    memmove(c->q, c->q + 1, (c->qn - 1) * sizeof c->q[0]);
    c->qn--;
    tnode_t *to = node(c, t.m.to);
    if (!to->cut) {
        raft_event_t ev = { .type = RAFT_EV_RECV };
        ev.u.msg = &t.m;
        (void)step(c, to, &ev);
    }
    free(t.ents);
    free(t.blob);
}

static void deliver_all(tc_t *c) {
    for (int i = 0; i < 100000 && c->qn > 0; i++) deliver_one(c);
    ck_assert_uint_eq(c->qn, 0);
}

static void drop_all(tc_t *c) {
    while (c->qn > 0) {
        c->qn--;
        free(c->q[c->qn].ents);
        free(c->q[c->qn].blob);
    }
}

static void tick(tc_t *c, tnode_t *nd) {
    raft_event_t ev = { .type = RAFT_EV_TICK };
    (void)step(c, nd, &ev);
}

/* Advances the clock by `ms` in 5 ms ticks, delivering everything each tick. */
static void run(tc_t *c, int64_t ms) {
    for (int64_t t = 0; t < ms; t += 5) {
        c->now += 5;
        for (int i = 0; i < c->count; i++) tick(c, &c->n[i]);
        deliver_all(c);
    }
}

static void tc_add(tc_t *c, int32_t id, int voters, const raft_config_t *override,
                   const raft_hard_state_t *hs, const raft_entry_t *ents, size_t n) {
    tnode_t *nd = &c->n[c->count++];
    memset(nd, 0, sizeof *nd);
    nd->id = id;
    raft_config_t cfg = override ? *override : cfg_for(id, voters);
    raft_hard_state_t fresh = { 0, RAFT_NO_NODE, RAFT_NO_NODE };
    nd->hs = hs ? *hs : fresh;
    nd->r = raft_new(&cfg, &nd->hs, NULL, NULL, 0, ents, n, c->now);
    ck_assert_ptr_nonnull(nd->r);
}

static tc_t *tc_new(int voters, bool observer) {
    tc_t *c = calloc(1, sizeof *c);
    for (int i = 1; i <= voters; i++) tc_add(c, i, voters, NULL, NULL, NULL, 0);
    if (observer) tc_add(c, T_OBSERVER, voters, NULL, NULL, NULL, 0);
    return c;
}

static void tc_free(tc_t *c) {
    drop_all(c);
    for (int i = 0; i < c->count; i++) raft_free(c->n[i].r);
    free(c);
}

static int leaders(tc_t *c, tnode_t **out) {
    int k = 0;
    for (int i = 0; i < c->count; i++)
        if (raft_role(c->n[i].r) == RAFT_LEADER) {
            k++;
            if (out) *out = &c->n[i];
        }
    return k;
}

/* Forces node `id` to campaign now and runs until the cluster settles. */
static tnode_t *elect(tc_t *c, int32_t id) {
    tnode_t *nd = node(c, id);
    nd->r->election_deadline_ms = c->now;   /* white box: skip the wait */
    if (raft_role(nd->r) == RAFT_FOLLOWER) nd->r->fetch_deadline_ms = c->now;
    tick(c, nd);
    deliver_all(c);
    run(c, 50);
    ck_assert_int_eq(raft_role(nd->r), RAFT_LEADER);
    return nd;
}

static raft_ready_t propose(tc_t *c, tnode_t *nd, uint64_t v) {
    const uint8_t *data[1] = { (const uint8_t *)&v };
    uint32_t len[1] = { sizeof v };
    raft_event_t ev = { .type = RAFT_EV_PROPOSE };
    ev.u.propose.data = data;
    ev.u.propose.len = len;
    ev.u.propose.n = 1;
    return step(c, nd, &ev);
}

/* ---- tests ---------------------------------------------------------------- */

START_TEST(test_election_with_prevote) {
    tc_t *c = tc_new(3, false);
    tnode_t *n1 = node(c, 1);
    n1->r->election_deadline_ms = c->now;
    tick(c, n1);
    /* pre-vote: prospective, epoch unchanged, nothing persisted yet */
    ck_assert_int_eq(raft_role(n1->r), RAFT_PROSPECTIVE);
    ck_assert_int_eq(raft_epoch(n1->r), 0);
    ck_assert_int_eq(n1->hs_writes, 0);
    ck_assert_uint_eq(c->qn, 2);
    ck_assert(c->q[0].m.u.vote_req.prevote);
    ck_assert_int_eq(c->q[0].m.epoch, 1);
    /* receivers of a pre-vote keep their epoch */
    deliver_one(c);
    deliver_one(c);
    ck_assert_int_eq(raft_epoch(node(c, 2)->r), 0);
    ck_assert_int_eq(raft_epoch(node(c, 3)->r), 0);
    ck_assert_int_eq(node(c, 2)->hs_writes, 0);
    /* the grants make it a candidate: epoch 1, voted for itself, persisted */
    deliver_one(c);
    ck_assert_int_eq(raft_role(n1->r), RAFT_CANDIDATE);
    ck_assert_int_eq(n1->hs.epoch, 1);
    ck_assert_int_eq(n1->hs.voted_for, 1);
    deliver_all(c);
    ck_assert_int_eq(raft_role(n1->r), RAFT_LEADER);
    ck_assert_int_eq(leaders(c, NULL), 1);
    const raft_entry_t *lc = raft_entry_at(n1->r, 0);
    ck_assert_ptr_nonnull(lc);
    ck_assert_int_eq(lc->type, RAFT_ENTRY_LEADER_CHANGE);
    ck_assert_int_eq(lc->epoch, 1);
    run(c, 100);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(raft_leader(c->n[i].r), 1);
        ck_assert_int_eq(raft_high_watermark(c->n[i].r), 1);
    }
    ck_assert_int_eq(node(c, 2)->hs.voted_for, 1);
    tc_free(c);
}
END_TEST

START_TEST(test_partitioned_node_does_not_bump_epoch) {
    tc_t *c = tc_new(3, false);
    elect(c, 1);
    run(c, 50);
    tnode_t *n3 = node(c, 3);
    n3->cut = true;
    run(c, 1000);   /* n3 times out again and again; its pre-votes go nowhere */
    ck_assert_int_eq(raft_epoch(n3->r), 1);
    ck_assert(raft_role(n3->r) == RAFT_PROSPECTIVE || raft_role(n3->r) == RAFT_UNATTACHED);
    ck_assert_uint_gt(c->msgs_of_type[RAFT_MSG_VOTE_REQ], 2);
    n3->cut = false;
    run(c, 300);
    ck_assert_int_eq(raft_role(node(c, 1)->r), RAFT_LEADER);
    for (int i = 0; i < 3; i++) ck_assert_int_eq(raft_epoch(c->n[i].r), 1);
    ck_assert_int_eq(raft_role(n3->r), RAFT_FOLLOWER);
    ck_assert_int_eq(raft_leader(n3->r), 1);
    tc_free(c);
}
END_TEST

static void entries(raft_entry_t *e, const int32_t *epochs, size_t n) {
    for (size_t i = 0; i < n; i++) {
        e[i].offset = (int64_t)i;
        e[i].epoch = epochs[i];
        e[i].type = RAFT_ENTRY_DATA;
        e[i].data = (const uint8_t *)"x";
        e[i].len = 1;
    }
}

START_TEST(test_divergent_follower_truncates_by_epoch) {
    tc_t *c = calloc(1, sizeof *c);
    raft_entry_t good[5], bad[6];
    int32_t ge[5] = { 1, 1, 2, 2, 2 }, be[6] = { 1, 1, 3, 3, 3, 3 };
    entries(good, ge, 5);
    entries(bad, be, 6);
    raft_hard_state_t hs = { 3, RAFT_NO_NODE, RAFT_NO_NODE };
    raft_hard_state_t hs2 = { 3, 2, RAFT_NO_NODE };
    tc_add(c, 1, 3, NULL, &hs, good, 5);
    tc_add(c, 2, 3, NULL, &hs2, bad, 6);   /* epoch-3 entries nobody else has */
    tc_add(c, 3, 3, NULL, &hs, good, 5);
    tnode_t *n1 = elect(c, 1);             /* wins with node 3's vote */
    ck_assert_int_eq(raft_epoch(n1->r), 4);
    run(c, 100);
    tnode_t *n2 = node(c, 2);
    ck_assert_int_eq(n2->truncations, 1);
    /* leader says epoch 2 ends at 5; node 2 has no epoch 2, its epoch 1 ends at 2 */
    ck_assert_int_eq(n2->last_truncate_to, 2);
    ck_assert_int_eq(raft_log_end(n2->r), raft_log_end(n1->r));
    for (int64_t o = 0; o < raft_log_end(n1->r); o++)
        ck_assert_int_eq(raft_entry_at(n2->r, o)->epoch, raft_entry_at(n1->r, o)->epoch);
    ck_assert_int_eq(raft_high_watermark(n2->r), raft_log_end(n1->r));
    tc_free(c);
}
END_TEST

START_TEST(test_hw_only_after_majority) {
    tc_t *c = tc_new(5, false);
    tnode_t *n1 = elect(c, 1);
    run(c, 100);
    int64_t hw0 = raft_high_watermark(n1->r);
    n1->manual_persist = true;
    for (int id = 4; id <= 5; id++) node(c, id)->cut = true;
    raft_ready_t rd = propose(c, n1, 42);
    ck_assert_int_eq(rd.status, RAFT_OK);
    int64_t off = rd.propose_first_offset;
    ck_assert_int_eq(off, hw0);
    run(c, 100);   /* nodes 2, 3 have it; the leader's copy is not durable */
    ck_assert_int_eq(raft_log_end(node(c, 2)->r), off + 1);
    ck_assert_int_eq(raft_high_watermark(n1->r), hw0);
    persist_all(c, n1);   /* 3 of 5 now */
    ck_assert_int_eq(raft_high_watermark(n1->r), off + 1);
    run(c, 100);
    ck_assert_int_eq(raft_high_watermark(node(c, 2)->r), off + 1);
    ck_assert_int_eq(raft_high_watermark(node(c, 4)->r), hw0);   /* cut off: never told */
    tc_free(c);
}
END_TEST

/* Raft's figure 8: an old-epoch entry on a majority is not committed until an
 * entry of the leader's own epoch is. Node 1 (log epochs 1,2) leads epoch 3
 * and hands node 2 one entry per fetch, so node 2 reports offset 2 (both old
 * entries) before it has the LeaderChange at offset 2. */
START_TEST(test_old_epoch_entries_not_committed_by_counting) {
    tc_t *c = calloc(1, sizeof *c);
    raft_entry_t e1[2], e0[1];
    int32_t ep1[2] = { 1, 2 }, ep0[1] = { 1 };
    entries(e1, ep1, 2);
    entries(e0, ep0, 1);
    raft_hard_state_t hs = { 2, RAFT_NO_NODE, RAFT_NO_NODE };
    raft_config_t cfg = cfg_for(1, 3);
    cfg.fetch_entries_max = 1;
    tc_add(c, 1, 3, &cfg, &hs, e1, 2);
    tc_add(c, 2, 3, NULL, &hs, e0, 1);
    tc_add(c, 3, 3, NULL, &hs, e0, 1);
    node(c, 3)->cut = true;
    tnode_t *n1 = node(c, 1), *n2 = node(c, 2);
    n1->r->election_deadline_ms = c->now;
    tick(c, n1);
    bool saw_fetch_at_2 = false;
    for (int i = 0; i < 1000 && c->qn > 0; i++) {
        tmsg_t *m = &c->q[0];
        bool fetch2 = m->m.type == RAFT_MSG_FETCH_REQ && m->m.to == 1 &&
                      m->m.u.fetch_req.fetch_offset == 2;
        deliver_one(c);
        if (fetch2) {
            saw_fetch_at_2 = true;
            /* offsets 0..1 are on 2 of 3 voters, but they are of epoch 2 */
            ck_assert_int_eq(raft_high_watermark(n1->r), 0);
        }
        int64_t hw = raft_high_watermark(n1->r);
        ck_assert(hw == 0 || hw == 3);
    }
    ck_assert(saw_fetch_at_2);
    ck_assert_int_eq(raft_role(n1->r), RAFT_LEADER);
    ck_assert_int_eq(raft_epoch(n1->r), 3);
    ck_assert_int_eq(raft_entry_at(n1->r, 2)->type, RAFT_ENTRY_LEADER_CHANGE);
    ck_assert_int_eq(raft_log_end(n2->r), 3);
    ck_assert_int_eq(raft_high_watermark(n1->r), 3);
    tc_free(c);
}
END_TEST

/* An idle log (every voter equally caught up): the tie goes to the next
 * voter in ring order, so repeated resignations reach every voter (they
 * used to bounce between the two lowest ids). */
START_TEST(test_repeated_resign_visits_every_voter) {
    tc_t *c = tc_new(3, false);
    tnode_t *leader = elect(c, 1);
    bool led[4] = { false, true, false, false };
    for (int k = 0; k < 2; k++) {
        run(c, 100);
        raft_event_t ev = { .type = RAFT_EV_RESIGN };
        raft_ready_t rd = step(c, leader, &ev);
        ck_assert_uint_eq(rd.n_msgs, 2);
        int32_t next = leader->id % 3 + 1;
        ck_assert_int_eq(rd.msgs[0].u.end_req.successors[0], next);
        deliver_all(c);
        tnode_t *now_leading = NULL;
        ck_assert_int_eq(leaders(c, &now_leading), 1);
        ck_assert_int_eq(now_leading->id, next);
        leader = now_leading;
        led[leader->id] = true;
    }
    ck_assert(led[1] && led[2] && led[3]);
    tc_free(c);
}
END_TEST

START_TEST(test_resign_triggers_immediate_election) {
    tc_t *c = tc_new(3, false);
    tnode_t *n1 = elect(c, 1);
    run(c, 100);
    int64_t t0 = c->now;
    raft_event_t ev = { .type = RAFT_EV_RESIGN };
    raft_ready_t rd = step(c, n1, &ev);
    ck_assert_uint_eq(rd.n_msgs, 2);
    ck_assert_int_eq(rd.msgs[0].type, RAFT_MSG_END_EPOCH_REQ);
    ck_assert_int_eq(raft_role(n1->r), RAFT_RESIGNED);
    deliver_all(c);   /* no clock movement: the first successor campaigns now */
    tnode_t *leader = NULL;
    ck_assert_int_eq(leaders(c, &leader), 1);
    ck_assert_int_ne(leader->id, 1);
    ck_assert_int_eq(raft_epoch(leader->r), 2);
    ck_assert_int_eq(c->now, t0);
    run(c, 100);
    ck_assert_int_eq(raft_role(n1->r), RAFT_FOLLOWER);
    ck_assert_int_eq(raft_leader(n1->r), leader->id);
    tc_free(c);
}
END_TEST

START_TEST(test_observer_never_votes) {
    tc_t *c = tc_new(3, true);
    tnode_t *ob = node(c, T_OBSERVER);
    for (int i = 0; i < 3; i++) node(c, i + 1)->cut = true;
    run(c, 2000);   /* far past every timeout: an observer never campaigns */
    ck_assert_int_eq(raft_role(ob->r), RAFT_UNATTACHED);
    ck_assert_int_eq(raft_epoch(ob->r), 0);
    for (int i = 0; i < 3; i++) node(c, i + 1)->cut = false;
    drop_all(c);
    /* a vote request sent to the observer is refused and nothing persisted */
    raft_msg_t m;
    memset(&m, 0, sizeof m);
    m.type = RAFT_MSG_VOTE_REQ;
    m.from = 1;
    m.to = T_OBSERVER;
    m.epoch = 1;
    m.leader_id = RAFT_NO_NODE;
    m.u.vote_req.last_epoch = 9;
    m.u.vote_req.log_end = 100;
    raft_event_t ev = { .type = RAFT_EV_RECV };
    ev.u.msg = &m;
    raft_ready_t rd = step(c, ob, &ev);
    int vote_resps = 0;
    for (uint32_t i = 0; i < rd.n_msgs; i++) {
        if (rd.msgs[i].type != RAFT_MSG_VOTE_RESP) continue;
        vote_resps++;
        ck_assert(!rd.msgs[i].u.vote_resp.granted);
    }
    ck_assert_int_eq(vote_resps, 1);
    ck_assert_int_eq(ob->hs.voted_for, RAFT_NO_NODE);
    drop_all(c);
    run(c, 500);   /* the voters elect a leader and the observer follows it */
    tnode_t *leader = NULL;
    ck_assert_int_eq(leaders(c, &leader), 1);
    ck_assert_int_eq(raft_role(ob->r), RAFT_FOLLOWER);
    ck_assert_int_eq(raft_log_end(ob->r), raft_log_end(leader->r));
    raft_quorum_info_t qi;
    raft_describe_quorum(leader->r, &qi);
    ck_assert_uint_eq(qi.n_observers, 1);
    ck_assert_int_eq(qi.observers[0].node_id, T_OBSERVER);
    ck_assert_int_eq(qi.observers[0].log_end_offset, raft_log_end(leader->r));
    tc_free(c);
}
END_TEST

START_TEST(test_snapshot_install_for_lagging_node) {
    tc_t *c = calloc(1, sizeof *c);
    for (int i = 1; i <= 3; i++) {
        raft_config_t cfg = cfg_for(i, 3);
        cfg.fetch_bytes_max = 16;   /* the 100-byte image moves in 7 chunks */
        tc_add(c, i, 3, &cfg, NULL, NULL, 0);
    }
    tnode_t *n1 = elect(c, 1), *n3 = node(c, 3);
    run(c, 50);
    n3->cut = true;
    for (uint64_t v = 0; v < 20; v++) ck_assert_int_eq(propose(c, n1, v).status, RAFT_OK);
    run(c, 100);
    int64_t hw = raft_high_watermark(n1->r);
    ck_assert_int_eq(hw, 21);
    uint8_t img[100];
    for (int i = 0; i < 100; i++) img[i] = (uint8_t)(i * 7);
    raft_event_t ev = { .type = RAFT_EV_SNAPSHOT_TAKEN };
    ev.u.snapshot.id.end_offset = hw;
    ev.u.snapshot.id.epoch = raft_entry_at(n1->r, hw - 1)->epoch;
    ev.u.snapshot.data = img;
    ev.u.snapshot.len = sizeof img;
    raft_ready_t rd = step(c, n1, &ev);
    ck_assert_int_eq(rd.status, RAFT_OK);
    ck_assert(rd.log_start_changed);
    ck_assert_int_eq(raft_log_start(n1->r), hw);
    ck_assert_ptr_null(raft_entry_at(n1->r, hw - 1));
    /* a snapshot beyond the HW is refused */
    ev.u.snapshot.id.end_offset = hw + 5;
    ck_assert_int_eq(step(c, n1, &ev).status, RAFT_ERR_BAD_VALUE);
    ck_assert_int_eq(propose(c, n1, 99).status, RAFT_OK);
    n3->cut = false;
    run(c, 300);
    ck_assert_int_eq(n3->snapshot_installs, 1);
    ck_assert_uint_eq(n3->snap_img_len, sizeof img);
    ck_assert_mem_eq(n3->snap_img, img, sizeof img);
    ck_assert_int_eq(raft_log_start(n3->r), hw);
    ck_assert_int_eq(raft_log_end(n3->r), raft_log_end(n1->r));
    ck_assert_int_eq(raft_high_watermark(n3->r), raft_high_watermark(n1->r));
    ck_assert_uint_ge(c->msgs_of_type[RAFT_MSG_SNAP_REQ], 7);
    tc_free(c);
}
END_TEST

START_TEST(test_vote_persisted_in_same_ready_as_response) {
    tc_t *c = tc_new(3, false);
    tnode_t *n1 = node(c, 1), *n2 = node(c, 2);
    n1->r->election_deadline_ms = c->now;
    tick(c, n1);
    deliver_all(c);
    /* node 2 granted a real vote: the ready carrying the VoteResp also
     * carried the hard state with the vote, to be fsynced before sending */
    ck_assert_int_eq(n2->hs.epoch, 1);
    ck_assert_int_eq(n2->hs.voted_for, 1);
    ck_assert_int_eq(n2->grants_with_hs + node(c, 3)->grants_with_hs, 2);
    run(c, 2000);   /* and over a longer run: never a grant without its vote */
    for (int i = 0; i < 3; i++) ck_assert_int_eq(c->n[i].grants_without_hs, 0);
    (void)n1;
    tc_free(c);
}
END_TEST

START_TEST(test_vote_ready_order_by_hand) {
    raft_config_t cfg = cfg_for(2, 3);
    raft_hard_state_t hs = { 0, RAFT_NO_NODE, RAFT_NO_NODE };
    raft_t *r = raft_new(&cfg, &hs, NULL, NULL, 0, NULL, 0, 0);
    ck_assert_ptr_nonnull(r);
    raft_msg_t m;
    memset(&m, 0, sizeof m);
    m.type = RAFT_MSG_VOTE_REQ;
    m.from = 1;
    m.to = 2;
    m.epoch = 1;
    m.leader_id = RAFT_NO_NODE;
    raft_event_t ev = { .type = RAFT_EV_RECV };
    ev.u.msg = &m;
    raft_ready_t rd = raft_step(r, &ev, 0);
    ck_assert(rd.hard_state_changed);
    ck_assert_int_eq(rd.hard_state.voted_for, 1);
    ck_assert_uint_eq(rd.n_msgs, 1);
    ck_assert(rd.msgs[0].u.vote_resp.granted);
    raft_ready_persisted(&rd);
    raft_ready_sent(&rd);
    raft_advance(r, &rd);
    /* a second candidate in the same epoch is refused: one vote per epoch */
    m.from = 3;
    rd = raft_step(r, &ev, 1);
    ck_assert(!rd.hard_state_changed);
    ck_assert(!rd.msgs[0].u.vote_resp.granted);
    raft_ready_persisted(&rd);
    raft_ready_sent(&rd);
    raft_advance(r, &rd);
    raft_free(r);
}
END_TEST

START_TEST(test_send_before_persist_aborts) {
    raft_config_t cfg = cfg_for(2, 3);
    raft_hard_state_t hs = { 0, RAFT_NO_NODE, RAFT_NO_NODE };
    raft_t *r = raft_new(&cfg, &hs, NULL, NULL, 0, NULL, 0, 0);
    raft_event_t ev = { .type = RAFT_EV_TICK };
    raft_ready_t rd = raft_step(r, &ev, 0);
    raft_ready_sent(&rd);   /* must abort: persisted was not marked */
}
END_TEST

START_TEST(test_advance_without_persist_aborts) {
    raft_config_t cfg = cfg_for(2, 3);
    raft_hard_state_t hs = { 0, RAFT_NO_NODE, RAFT_NO_NODE };
    raft_t *r = raft_new(&cfg, &hs, NULL, NULL, 0, NULL, 0, 0);
    raft_event_t ev = { .type = RAFT_EV_TICK };
    raft_ready_t rd = raft_step(r, &ev, 0);
    raft_advance(r, &rd);
}
END_TEST

START_TEST(test_step_without_advance_aborts) {
    raft_config_t cfg = cfg_for(2, 3);
    raft_hard_state_t hs = { 0, RAFT_NO_NODE, RAFT_NO_NODE };
    raft_t *r = raft_new(&cfg, &hs, NULL, NULL, 0, NULL, 0, 0);
    raft_event_t ev = { .type = RAFT_EV_TICK };
    (void)raft_step(r, &ev, 0);
    (void)raft_step(r, &ev, 1);
}
END_TEST

START_TEST(test_follower_fetches_only_durable_log) {
    tc_t *c = tc_new(3, false);
    tnode_t *n1 = elect(c, 1), *n2 = node(c, 2);
    run(c, 50);
    n2->manual_persist = true;
    for (uint64_t v = 0; v < 3; v++) (void)propose(c, n1, v);
    size_t fetches = c->msgs_of_type[RAFT_MSG_FETCH_REQ];
    int64_t end_before = raft_log_end(n2->r);
    c->now += 25;
    tick(c, n2);   /* fetch interval passed: fetches at its (durable) end */
    ck_assert_uint_eq(c->msgs_of_type[RAFT_MSG_FETCH_REQ], fetches + 1);
    deliver_all(c);   /* entries arrive, are written, not yet durable */
    ck_assert_int_gt(raft_log_end(n2->r), end_before);
    size_t after = c->msgs_of_type[RAFT_MSG_FETCH_REQ];
    for (int i = 0; i < 5; i++) {   /* 125 ms: past the fetch interval, not the timeout */
        c->now += 25;
        tick(c, n2);
    }
    ck_assert_uint_eq(c->msgs_of_type[RAFT_MSG_FETCH_REQ], after);   /* silent */
    persist_all(c, n2);   /* now it fetches, reporting the durable end */
    ck_assert_uint_eq(c->msgs_of_type[RAFT_MSG_FETCH_REQ], after + 1);
    ck_assert_int_eq(c->q[c->qn - 1].m.u.fetch_req.fetch_offset, raft_log_end(n2->r));
    tc_free(c);
}
END_TEST

START_TEST(test_propose_bounds_and_not_leader) {
    tc_t *c = calloc(1, sizeof *c);
    for (int i = 1; i <= 3; i++) {
        raft_config_t cfg = cfg_for(i, 3);
        cfg.pending_entries_max = 4;
        cfg.entry_bytes_max = 8;
        tc_add(c, i, 3, &cfg, NULL, NULL, 0);
    }
    tnode_t *n1 = elect(c, 1);
    run(c, 50);
    ck_assert_int_eq(propose(c, node(c, 2), 1).status, RAFT_ERR_NOT_LEADER);
    for (int i = 2; i <= 3; i++) node(c, i)->cut = true;
    int ok = 0;
    for (uint64_t v = 0; v < 10; v++) ok += propose(c, n1, v).status == RAFT_OK;
    ck_assert_int_eq(ok, 4);   /* nothing commits: the pending bound holds */
    ck_assert_int_eq(propose(c, n1, 1).status, RAFT_ERR_TOO_MANY);
    uint8_t big[9] = { 0 };
    const uint8_t *data[1] = { big };
    uint32_t len[1] = { sizeof big };
    raft_event_t ev = { .type = RAFT_EV_PROPOSE };
    ev.u.propose.data = data;
    ev.u.propose.len = len;
    ev.u.propose.n = 1;
    for (int i = 2; i <= 3; i++) node(c, i)->cut = false;
    run(c, 100);
    ck_assert_int_eq(step(c, n1, &ev).status, RAFT_ERR_TOO_LARGE);
    tc_free(c);
}
END_TEST

START_TEST(test_stale_epoch_fetch_is_fenced) {
    tc_t *c = tc_new(3, false);
    tnode_t *n1 = elect(c, 1);
    run(c, 50);
    drop_all(c);
    raft_msg_t m;
    memset(&m, 0, sizeof m);
    m.type = RAFT_MSG_FETCH_REQ;
    m.from = 2;
    m.to = 1;
    m.epoch = 0;
    m.leader_id = RAFT_NO_NODE;
    raft_event_t ev = { .type = RAFT_EV_RECV };
    ev.u.msg = &m;
    raft_ready_t rd = step(c, n1, &ev);
    ck_assert_uint_eq(rd.n_msgs, 1);
    ck_assert_int_eq(rd.msgs[0].error, RAFT_KERR_FENCED_LEADER_EPOCH);
    ck_assert_int_eq(rd.msgs[0].epoch, 1);
    ck_assert_int_eq(rd.msgs[0].leader_id, 1);
    m.epoch = 1;
    m.u.fetch_req.last_fetched_epoch = 7;   /* an epoch that never existed */
    m.u.fetch_req.fetch_offset = 1;
    rd = step(c, n1, &ev);
    ck_assert_int_eq(rd.msgs[0].error, RAFT_KERR_POSITION_OUT_OF_RANGE);
    m.u.fetch_req.last_fetched_epoch = 0;
    m.u.fetch_req.fetch_offset = -3;
    rd = step(c, n1, &ev);
    ck_assert_int_eq(rd.msgs[0].error, RAFT_KERR_POSITION_OUT_OF_RANGE);
    ck_assert_int_eq(raft_role(n1->r), RAFT_LEADER);
    drop_all(c);
    tc_free(c);
}
END_TEST

START_TEST(test_leader_without_quorum_resigns) {
    tc_t *c = tc_new(3, false);
    tnode_t *n1 = elect(c, 1);
    run(c, 50);
    node(c, 2)->cut = true;
    node(c, 3)->cut = true;
    run(c, 400);   /* > fetch_timeout without a majority fetching */
    ck_assert_int_ne(raft_role(n1->r), RAFT_LEADER);
    ck_assert_int_eq(propose(c, n1, 5).status, RAFT_ERR_NOT_LEADER);
    tc_free(c);
}
END_TEST

START_TEST(test_non_voter_cannot_raise_epoch) {
    tc_t *c = tc_new(3, true);
    tnode_t *n1 = elect(c, 1);
    run(c, 50);
    drop_all(c);
    raft_msg_t m;
    memset(&m, 0, sizeof m);
    m.from = T_OBSERVER;
    m.to = 1;
    m.epoch = 40;
    m.leader_id = RAFT_NO_NODE;
    raft_event_t ev = { .type = RAFT_EV_RECV };
    ev.u.msg = &m;
    raft_msg_type_t types[3] = { RAFT_MSG_VOTE_REQ, RAFT_MSG_BEGIN_EPOCH_REQ, RAFT_MSG_END_EPOCH_REQ };
    for (int i = 0; i < 3; i++) {
        m.type = types[i];
        raft_ready_t rd = step(c, n1, &ev);
        ck_assert(!rd.hard_state_changed);
        ck_assert_int_eq(raft_epoch(n1->r), 1);
        ck_assert_int_eq(raft_role(n1->r), RAFT_LEADER);
    }
    /* a response naming a leader that is not a voter is ignored too */
    m.type = RAFT_MSG_FETCH_RESP;
    m.from = 2;
    m.leader_id = 77;
    ck_assert(!step(c, n1, &ev).hard_state_changed);
    ck_assert_int_eq(raft_epoch(n1->r), 1);
    /* a fetch from a higher epoch: UNKNOWN_LEADER_EPOCH, nothing changes */
    m.type = RAFT_MSG_FETCH_REQ;
    m.from = T_OBSERVER;
    m.leader_id = RAFT_NO_NODE;
    raft_ready_t rd = step(c, n1, &ev);
    ck_assert(!rd.hard_state_changed);
    ck_assert_int_eq(rd.msgs[0].error, RAFT_KERR_UNKNOWN_LEADER_EPOCH);
    ck_assert_int_eq(raft_role(n1->r), RAFT_LEADER);
    drop_all(c);
    tc_free(c);
}
END_TEST

/* A forged request: what any client reaching a controller port can send. */
static raft_msg_t forged(raft_msg_type_t type, int32_t from, int32_t to, int32_t epoch) {
    raft_msg_t m;
    memset(&m, 0, sizeof m);
    m.type = type;
    m.from = from;
    m.to = to;
    m.epoch = epoch;
    m.leader_id = type == RAFT_MSG_VOTE_REQ ? RAFT_NO_NODE : from;
    return m;
}

static raft_ready_t recv_one(tc_t *c, tnode_t *nd, const raft_msg_t *m) {
    raft_event_t ev = { .type = RAFT_EV_RECV };
    ev.u.msg = m;
    return step(c, nd, &ev);
}

/* KIP-996: while a voter hears from its leader, a Vote, BeginQuorumEpoch or
 * EndQuorumEpoch for a higher epoch naming another voter is rejected and
 * changes nothing, on the followers and on the leader; once the leader is
 * gone (fetch timeout), the same Vote is granted. */
START_TEST(test_live_leader_rejects_higher_epoch_requests) {
    tc_t *c = tc_new(3, false);
    tnode_t *n1 = elect(c, 1), *n2 = node(c, 2);
    run(c, 50);
    drop_all(c);
    int32_t e = raft_epoch(n1->r);
    raft_msg_type_t types[3] = { RAFT_MSG_VOTE_REQ, RAFT_MSG_BEGIN_EPOCH_REQ, RAFT_MSG_END_EPOCH_REQ };
    int32_t epochs[2] = { e + 1, e + 500 };
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < 2; k++)
            for (int who = 1; who <= 2; who++) {
                tnode_t *to = node(c, who);
                raft_msg_t m = forged(types[t], 3, who, epochs[k]);
                m.u.vote_req.last_epoch = 1000;   /* a log "newer" than anyone's */
                m.u.vote_req.log_end = 1000000;
                raft_ready_t rd = recv_one(c, to, &m);
                ck_assert(!rd.hard_state_changed);
                ck_assert_int_eq(raft_epoch(to->r), e);
                ck_assert_int_eq(raft_leader(to->r), 1);
                ck_assert_uint_eq(rd.n_msgs, 1);
                ck_assert_int_eq(rd.msgs[0].epoch, e);
                if (types[t] == RAFT_MSG_VOTE_REQ) ck_assert(!rd.msgs[0].u.vote_resp.granted);
                drop_all(c);
            }
    ck_assert_int_eq(raft_role(n1->r), RAFT_LEADER);
    ck_assert_int_eq(raft_role(n2->r), RAFT_FOLLOWER);
    /* the leader goes away: after the fetch timeout the vote is granted */
    n1->cut = true;
    c->now += 250;   /* past fetch_timeout_ms = 200, no tick in between */
    raft_msg_t m = forged(RAFT_MSG_VOTE_REQ, 3, 2, e + 1);
    m.u.vote_req.last_epoch = 1000;
    m.u.vote_req.log_end = 1000000;
    raft_ready_t rd = recv_one(c, n2, &m);
    ck_assert(rd.hard_state_changed);
    ck_assert_int_eq(rd.hard_state.epoch, e + 1);
    ck_assert_int_eq(rd.hard_state.voted_for, 3);
    ck_assert(rd.msgs[0].u.vote_resp.granted);
    drop_all(c);
    tc_free(c);
}
END_TEST

/* No message can move a node to an epoch after which no election can
 * follow, nor jump its epoch by more than RAFT_EPOCH_JUMP_MAX. */
START_TEST(test_epoch_bounds) {
    tc_t *c = tc_new(3, false);
    tnode_t *n2 = node(c, 2);   /* unattached, no leader: would grant */
    int32_t bad[4] = { INT32_MAX, RAFT_EPOCH_MAX + 1, RAFT_EPOCH_JUMP_MAX + 1, -5 };
    raft_msg_type_t types[3] = { RAFT_MSG_VOTE_REQ, RAFT_MSG_BEGIN_EPOCH_REQ, RAFT_MSG_END_EPOCH_REQ };
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < 4; k++) {
            raft_msg_t m = forged(types[t], 3, 2, bad[k]);
            raft_ready_t rd = recv_one(c, n2, &m);
            ck_assert(!rd.hard_state_changed);
            ck_assert_int_eq(raft_epoch(n2->r), 0);
            ck_assert_uint_eq(rd.n_msgs, 1);
            ck_assert_int_eq(rd.msgs[0].error, RAFT_KERR_INVALID_REQUEST);
            drop_all(c);
        }
    /* within the jump: granted (nothing alive to protect) */
    raft_msg_t ok = forged(RAFT_MSG_VOTE_REQ, 3, 2, RAFT_EPOCH_JUMP_MAX);
    ck_assert(recv_one(c, n2, &ok).hard_state_changed);
    ck_assert_int_eq(raft_epoch(n2->r), RAFT_EPOCH_JUMP_MAX);
    drop_all(c);
    /* a response above the bound is dropped */
    raft_msg_t resp = forged(RAFT_MSG_VOTE_RESP, 1, 2, INT32_MAX);
    resp.leader_id = 1;
    ck_assert(!recv_one(c, n2, &resp).hard_state_changed);
    ck_assert_int_eq(raft_epoch(n2->r), RAFT_EPOCH_JUMP_MAX);
    drop_all(c);
    tc_free(c);
    /* a quorum-state beyond the bound is refused at start; at the bound the
     * node follows but never campaigns */
    raft_config_t cfg = cfg_for(1, 3);
    raft_hard_state_t hs = { INT32_MAX, RAFT_NO_NODE, RAFT_NO_NODE };
    ck_assert_ptr_null(raft_new(&cfg, &hs, NULL, NULL, 0, NULL, 0, 0));
    c = calloc(1, sizeof *c);
    raft_hard_state_t top = { RAFT_EPOCH_MAX, RAFT_NO_NODE, RAFT_NO_NODE };
    tc_add(c, 1, 3, NULL, &top, NULL, 0);
    run(c, 1000);
    ck_assert_int_eq(raft_role(c->n[0].r), RAFT_UNATTACHED);
    ck_assert_int_eq(raft_epoch(c->n[0].r), RAFT_EPOCH_MAX);
    tc_free(c);
}
END_TEST

/* Requests of another cluster (or naming none) are answered
 * INCONSISTENT_CLUSTER_ID and change nothing; a response carrying that
 * error is ignored. */
START_TEST(test_foreign_cluster_refused) {
    tc_t *c = calloc(1, sizeof *c);
    raft_config_t cfg = cfg_for(2, 3);
    strcpy(cfg.cluster_id, "Ab3_cluster-xyz");
    tc_add(c, 1, 3, NULL, NULL, NULL, 0);
    tc_add(c, 2, 3, &cfg, NULL, NULL, 0);
    tc_add(c, 3, 3, NULL, NULL, NULL, 0);
    tnode_t *n2 = node(c, 2);
    const char *ids[3] = { "", "Ab3_cluster-xyZ", "Ab3_cluster-xyz-" };
    raft_msg_type_t types[4] = { RAFT_MSG_VOTE_REQ, RAFT_MSG_BEGIN_EPOCH_REQ, RAFT_MSG_END_EPOCH_REQ,
                                 RAFT_MSG_FETCH_REQ };
    for (int t = 0; t < 4; t++)
        for (int k = 0; k < 3; k++) {
            raft_msg_t m = forged(types[t], 3, 2, 1);
            strcpy(m.cluster_id, ids[k]);
            raft_ready_t rd = recv_one(c, n2, &m);
            ck_assert(!rd.hard_state_changed);
            ck_assert_int_eq(raft_epoch(n2->r), 0);
            ck_assert_uint_eq(rd.n_msgs, 1);
            ck_assert_int_eq(rd.msgs[0].error, RAFT_KERR_INCONSISTENT_CLUSTER_ID);
            ck_assert_str_eq(rd.msgs[0].cluster_id, "Ab3_cluster-xyz");
            drop_all(c);
        }
    raft_msg_t resp = forged(RAFT_MSG_BEGIN_EPOCH_RESP, 3, 2, 4);
    resp.error = RAFT_KERR_INCONSISTENT_CLUSTER_ID;
    ck_assert(!recv_one(c, n2, &resp).hard_state_changed);
    /* the right id is served */
    raft_msg_t m = forged(RAFT_MSG_VOTE_REQ, 3, 2, 1);
    strcpy(m.cluster_id, "Ab3_cluster-xyz");
    raft_ready_t rd = recv_one(c, n2, &m);
    ck_assert(rd.hard_state_changed);
    ck_assert(rd.msgs[0].u.vote_resp.granted);
    drop_all(c);
    tc_free(c);
}
END_TEST

/* A BeginQuorumEpoch naming a second leader for the current epoch (forged
 * from another voter's id) is ignored, not an assertion failure. */
START_TEST(test_second_leader_for_epoch_ignored) {
    tc_t *c = tc_new(3, false);
    tnode_t *n1 = elect(c, 1);
    run(c, 50);
    drop_all(c);
    int32_t e = raft_epoch(n1->r);
    for (int who = 1; who <= 2; who++) {
        tnode_t *to = node(c, who);
        raft_msg_t m = forged(RAFT_MSG_BEGIN_EPOCH_REQ, 3, who, e);
        raft_ready_t rd = recv_one(c, to, &m);
        ck_assert(!rd.hard_state_changed);
        ck_assert_int_eq(raft_leader(to->r), 1);
        drop_all(c);
    }
    ck_assert_int_eq(raft_role(n1->r), RAFT_LEADER);
    /* after the leader resigned (followers: leader gone) the same holds */
    raft_event_t rs = { .type = RAFT_EV_RESIGN };
    (void)step(c, n1, &rs);
    deliver_all(c);
    raft_msg_t m = forged(RAFT_MSG_BEGIN_EPOCH_REQ, 3, 2, e);
    (void)recv_one(c, node(c, 2), &m);
    ck_assert_int_ne(raft_role(node(c, 2)->r), RAFT_FOLLOWER);
    drop_all(c);
    tc_free(c);
}
END_TEST

/* Only answers to our own Fetches show a live leader: BeginQuorumEpochs
 * forged in a dead leader's name do not keep its followers from electing a
 * new one. */
START_TEST(test_forged_begin_does_not_extend_leader_liveness) {
    tc_t *c = tc_new(3, false);
    tnode_t *n1 = elect(c, 1);
    run(c, 50);
    drop_all(c);
    int32_t e = raft_epoch(n1->r);
    n1->cut = true;   /* the leader is gone */
    for (int i = 0; i < 120; i++) {
        for (int32_t who = 2; who <= 3; who++) {
            raft_msg_t m = forged(RAFT_MSG_BEGIN_EPOCH_REQ, 1, who, e);
            (void)recv_one(c, node(c, who), &m);
        }
        run(c, 5);
    }
    ck_assert(raft_role(node(c, 2)->r) == RAFT_LEADER || raft_role(node(c, 3)->r) == RAFT_LEADER);
    ck_assert_int_gt(raft_epoch(node(c, 2)->r), e);
    ck_assert_int_gt(raft_epoch(node(c, 3)->r), e);
    tc_free(c);
}
END_TEST

/* A late NOT_LEADER reply (sent by the epoch's leader while it was still a
 * candidate) makes an observer think the leader left; the leader's own next
 * reply must win it back (found by sim seed 7991, 5 nodes). */
START_TEST(test_stale_not_leader_reply_does_not_strand_observer) {
    tc_t *c = tc_new(3, true);
    tnode_t *n1 = elect(c, 1), *ob = node(c, T_OBSERVER);
    run(c, 100);
    ck_assert_int_eq(raft_role(ob->r), RAFT_FOLLOWER);
    drop_all(c);
    raft_msg_t m;
    memset(&m, 0, sizeof m);
    m.type = RAFT_MSG_FETCH_RESP;
    m.from = 1;
    m.to = T_OBSERVER;
    m.epoch = 1;
    m.leader_id = RAFT_NO_NODE;
    m.error = RAFT_KERR_NOT_LEADER_OR_FOLLOWER;
    m.u.fetch_resp.req_fetch_offset = raft_log_end(ob->r);
    m.u.fetch_resp.req_last_epoch = 1;
    raft_event_t ev = { .type = RAFT_EV_RECV };
    ev.u.msg = &m;
    (void)step(c, ob, &ev);
    ck_assert_int_eq(raft_role(ob->r), RAFT_UNATTACHED);
    /* hearsay from another voter does not bring the old leader back */
    m.from = 2;
    m.leader_id = 1;
    m.error = RAFT_KERR_NOT_LEADER_OR_FOLLOWER;
    (void)step(c, ob, &ev);
    ck_assert_int_eq(raft_role(ob->r), RAFT_UNATTACHED);
    drop_all(c);
    run(c, 200);   /* discovery reaches the leader itself, which names itself */
    ck_assert_int_eq(raft_role(ob->r), RAFT_FOLLOWER);
    ck_assert_int_eq(raft_leader(ob->r), 1);
    ck_assert_int_eq(raft_role(n1->r), RAFT_LEADER);
    ck_assert_int_eq(raft_epoch(n1->r), 1);
    tc_free(c);
}
END_TEST

START_TEST(test_describe_quorum) {
    tc_t *c = tc_new(3, false);
    tnode_t *n1 = elect(c, 1);
    for (uint64_t v = 0; v < 5; v++) (void)propose(c, n1, v);
    node(c, 3)->cut = true;
    run(c, 100);
    int64_t t_now = c->now;
    raft_quorum_info_t qi;
    raft_describe_quorum(n1->r, &qi);
    ck_assert_int_eq(qi.leader_id, 1);
    ck_assert_int_eq(qi.leader_epoch, 1);
    ck_assert_int_eq(qi.high_watermark, 6);
    ck_assert_uint_eq(qi.n_voters, 3);
    ck_assert_int_eq(qi.voters[0].log_end_offset, 6);   /* the leader itself */
    ck_assert_int_eq(qi.voters[1].node_id, 2);
    ck_assert_int_eq(qi.voters[1].log_end_offset, 6);
    ck_assert_int_ge(qi.voters[1].last_fetch_ms, t_now - 25);
    ck_assert_int_ge(qi.voters[1].last_caught_up_ms, t_now - 25);
    /* node 3 was cut before it could fetch the proposals */
    ck_assert_int_lt(qi.voters[2].log_end_offset, 6);
    ck_assert_int_lt(qi.voters[2].last_fetch_ms, t_now - 90);
    ck_assert_uint_eq(qi.n_observers, 0);
    /* a follower knows the leader and HW but not the others' progress */
    raft_describe_quorum(node(c, 2)->r, &qi);
    ck_assert_int_eq(qi.leader_id, 1);
    ck_assert_int_eq(qi.voters[0].log_end_offset, -1);
    tc_free(c);
}
END_TEST

START_TEST(test_restart_keeps_epoch_and_vote) {
    raft_config_t cfg = cfg_for(1, 3);
    raft_hard_state_t hs = { 4, 3, RAFT_NO_NODE };
    raft_t *r = raft_new(&cfg, &hs, NULL, NULL, 0, NULL, 0, 0);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(raft_epoch(r), 4);
    ck_assert_int_eq(raft_hard_state(r).voted_for, 3);
    ck_assert_int_eq(raft_role(r), RAFT_UNATTACHED);
    raft_free(r);
    hs.leader_id = 1;   /* it was the leader: comes back resigned */
    r = raft_new(&cfg, &hs, NULL, NULL, 0, NULL, 0, 0);
    ck_assert_int_eq(raft_role(r), RAFT_RESIGNED);
    raft_free(r);
    hs.leader_id = 2;
    r = raft_new(&cfg, &hs, NULL, NULL, 0, NULL, 0, 0);
    ck_assert_int_eq(raft_role(r), RAFT_FOLLOWER);
    ck_assert_int_eq(raft_leader(r), 2);
    raft_free(r);
}
END_TEST

START_TEST(test_new_rejects_bad_input) {
    raft_config_t cfg = cfg_for(1, 3);
    raft_hard_state_t hs = { 2, RAFT_NO_NODE, RAFT_NO_NODE };
    raft_entry_t e[3];
    int32_t ep[3] = { 1, 2, 1 };
    entries(e, ep, 3);
    ck_assert_ptr_null(raft_new(&cfg, &hs, NULL, NULL, 0, e, 3, 0));   /* epoch goes back */
    ep[2] = 3;
    entries(e, ep, 3);
    ck_assert_ptr_null(raft_new(&cfg, &hs, NULL, NULL, 0, e, 3, 0));   /* beyond hs epoch */
    ep[2] = 2;
    entries(e, ep, 3);
    e[2].offset = 5;
    ck_assert_ptr_null(raft_new(&cfg, &hs, NULL, NULL, 0, e, 3, 0));   /* gap */
    e[2].offset = 2;
    raft_config_t small = cfg;
    small.entry_bytes_max = 0;   /* the 1-byte payloads are over the bound */
    ck_assert_ptr_null(raft_new(&small, &hs, NULL, NULL, 0, e, 3, 0));
    e[1].data = NULL;            /* a length without bytes */
    ck_assert_ptr_null(raft_new(&cfg, &hs, NULL, NULL, 0, e, 3, 0));
    e[1].data = e[0].data;
    raft_t *r = raft_new(&cfg, &hs, NULL, NULL, 0, e, 3, 0);
    ck_assert_ptr_nonnull(r);
    raft_free(r);
    raft_config_t bad = cfg;
    bad.n_voters = 0;
    ck_assert_ptr_null(raft_new(&bad, &hs, NULL, NULL, 0, NULL, 0, 0));
    bad = cfg;
    bad.voters[1] = bad.voters[0];
    ck_assert_ptr_null(raft_new(&bad, &hs, NULL, NULL, 0, NULL, 0, 0));
    bad = cfg;
    bad.node_id = 9;   /* an observer cannot have voted */
    raft_hard_state_t voted = { 2, 1, RAFT_NO_NODE };
    ck_assert_ptr_null(raft_new(&bad, &voted, NULL, NULL, 0, NULL, 0, 0));
}
END_TEST

START_TEST(test_log_epoch_history) {
    rlog_t l;
    ck_assert_int_eq(rlog_init(&l, NULL), RAFT_OK);
    int32_t ep[7] = { 1, 1, 3, 3, 3, 6, 6 };
    for (int i = 0; i < 7; i++)
        ck_assert_int_eq(rlog_append(&l, ep[i], RAFT_ENTRY_DATA, (const uint8_t *)"ab", 2), RAFT_OK);
    rlog_epoch_end_t x = rlog_end_offset_for_epoch(&l, 3);
    ck_assert(x.found);
    ck_assert_int_eq(x.epoch, 3);
    ck_assert_int_eq(x.end_offset, 5);
    x = rlog_end_offset_for_epoch(&l, 5);   /* largest <= 5 is 3 */
    ck_assert_int_eq(x.epoch, 3);
    ck_assert_int_eq(x.end_offset, 5);
    x = rlog_end_offset_for_epoch(&l, 9);
    ck_assert_int_eq(x.epoch, 6);
    ck_assert_int_eq(x.end_offset, 7);
    x = rlog_end_offset_for_epoch(&l, 0);
    ck_assert(!x.found);
    rlog_truncate(&l, 3);
    ck_assert_int_eq(rlog_end(&l), 3);
    ck_assert_int_eq(rlog_last_epoch(&l), 3);
    x = rlog_end_offset_for_epoch(&l, 9);
    ck_assert_int_eq(x.epoch, 3);
    ck_assert_int_eq(x.end_offset, 3);
    raft_snapshot_id_t s = { 3, 3 };
    rlog_drop_prefix(&l, &s);
    ck_assert_int_eq(l.start, 3);
    ck_assert_int_eq(rlog_end(&l), 3);
    ck_assert_int_eq(rlog_last_epoch(&l), 3);
    ck_assert_int_eq(rlog_append(&l, 4, RAFT_ENTRY_DATA, NULL, 0), RAFT_OK);
    x = rlog_end_offset_for_epoch(&l, 3);   /* the snapshot's epoch ends at start */
    ck_assert(x.found);
    ck_assert_int_eq(x.epoch, 3);
    ck_assert_int_eq(x.end_offset, 3);
    ck_assert_ptr_null(rlog_at(&l, 2));
    ck_assert_int_eq(rlog_at(&l, 3)->epoch, 4);
    rlog_free(&l);
}
END_TEST

START_TEST(test_single_voter_commits_after_persist) {
    tc_t *c = tc_new(1, false);
    tnode_t *n1 = node(c, 1);
    n1->manual_persist = true;
    run(c, 300);
    ck_assert_int_eq(raft_role(n1->r), RAFT_LEADER);
    ck_assert_int_eq(raft_high_watermark(n1->r), 0);
    persist_all(c, n1);
    ck_assert_int_eq(raft_high_watermark(n1->r), 1);
    raft_ready_t rd = propose(c, n1, 3);
    ck_assert_int_eq(rd.propose_first_offset, 1);
    ck_assert_int_eq(raft_high_watermark(n1->r), 1);
    rd = (persist_all(c, n1), n1->last);
    ck_assert(rd.hw_changed);
    ck_assert_int_eq(rd.high_watermark, 2);
    tc_free(c);
}
END_TEST

/* The leader of a 3-node quorum dies. Node 3 times out first; node 2, still
 * within its fetch timeout, rejects the pre-vote naming the dead leader.
 * Node 3 must stay prospective (a reply merely naming the leader is not the
 * leader): if it went back to following, the two survivors would take turns
 * rejecting each other forever, as fetch timeouts carry no jitter. */
START_TEST(test_survivors_elect_after_leader_crash) {
    tc_t *c = tc_new(3, false);
    tnode_t *l = elect(c, 1);
    run(c, 100);
    l->cut = true;   /* crashed */
    tnode_t *n2 = node(c, 2), *n3 = node(c, 3);
    /* node 3 times out now, node 2 a little later */
    n3->r->fetch_deadline_ms = c->now;
    n2->r->fetch_deadline_ms = c->now + 50;
    tick(c, n3);
    ck_assert_int_eq(raft_role(n3->r), RAFT_PROSPECTIVE);
    deliver_all(c);
    ck_assert_int_eq(raft_role(n2->r), RAFT_FOLLOWER);     /* rejected: its leader is fresh */
    ck_assert_int_eq(raft_role(n3->r), RAFT_PROSPECTIVE);  /* not pulled back */
    run(c, 1000);
    tnode_t *nl = NULL;
    ck_assert_int_eq(leaders(c, &nl) - (raft_role(l->r) == RAFT_LEADER), 1);
    ck_assert(nl == n2 || nl == n3);
    ck_assert_int_gt(raft_epoch(nl->r), 1);
    tc_free(c);
}
END_TEST

static Suite *raft_suite(void) {
    Suite *s = suite_create("raft");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_election_with_prevote);
    tcase_add_test(tc, test_survivors_elect_after_leader_crash);
    tcase_add_test(tc, test_partitioned_node_does_not_bump_epoch);
    tcase_add_test(tc, test_divergent_follower_truncates_by_epoch);
    tcase_add_test(tc, test_hw_only_after_majority);
    tcase_add_test(tc, test_old_epoch_entries_not_committed_by_counting);
    tcase_add_test(tc, test_resign_triggers_immediate_election);
    tcase_add_test(tc, test_repeated_resign_visits_every_voter);
    tcase_add_test(tc, test_observer_never_votes);
    tcase_add_test(tc, test_snapshot_install_for_lagging_node);
    tcase_add_test(tc, test_vote_persisted_in_same_ready_as_response);
    tcase_add_test(tc, test_vote_ready_order_by_hand);
    tcase_add_test_raise_signal(tc, test_send_before_persist_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_advance_without_persist_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_step_without_advance_aborts, SIGABRT);
    tcase_add_test(tc, test_follower_fetches_only_durable_log);
    tcase_add_test(tc, test_propose_bounds_and_not_leader);
    tcase_add_test(tc, test_stale_epoch_fetch_is_fenced);
    tcase_add_test(tc, test_leader_without_quorum_resigns);
    tcase_add_test(tc, test_non_voter_cannot_raise_epoch);
    tcase_add_test(tc, test_live_leader_rejects_higher_epoch_requests);
    tcase_add_test(tc, test_epoch_bounds);
    tcase_add_test(tc, test_foreign_cluster_refused);
    tcase_add_test(tc, test_second_leader_for_epoch_ignored);
    tcase_add_test(tc, test_forged_begin_does_not_extend_leader_liveness);
    tcase_add_test(tc, test_stale_not_leader_reply_does_not_strand_observer);
    tcase_add_test(tc, test_describe_quorum);
    tcase_add_test(tc, test_restart_keeps_epoch_and_vote);
    tcase_add_test(tc, test_new_rejects_bad_input);
    tcase_add_test(tc, test_log_epoch_history);
    tcase_add_test(tc, test_single_voter_commits_after_persist);
    suite_add_tcase(s, tc);
    return s;
}


int main(void) {
    SRunner *sr = srunner_create(raft_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
