/* sim_raft.c — deterministic simulation of a raft quorum (raft/ core).
 *
 * K voters (3 or 5) and one observer run the pure core in one process with a
 * fake clock and a seeded network that drops, delays, reorders, duplicates
 * and partitions messages. Leaders resign gracefully now and then. Nodes
 * crash and restart with only what they made
 * durable: the hard state, the snapshot and the fsynced log prefix. A client
 * proposes entries at random times. After every step the checker verifies:
 *   - at most one leader per epoch, observers never campaign or vote;
 *   - committed entries (offset < HW on some node) never change on any node
 *     whose HW covers them, and the newest leader holds all of them;
 *   - every node applies the same committed sequence (hash chain);
 *   - HW monotone per node (per incarnation), epoch monotone per node;
 * and at the end that, once every fault healed, a leader was elected and an
 * entry proposed after the heal committed everywhere within a bound.
 *
 * A nemesis also injects forged requests during the faults, as any client
 * reaching a controller port could: election requests from ids that are not
 * voters, requests of another cluster, epochs at or near INT32_MAX or far
 * above the target's, a second leader named for the current epoch, Votes,
 * BeginQuorumEpochs and EndQuorumEpochs for a higher epoch from a voter's id
 * while a leader is alive, Fetches from unknown ids. Those that must change
 * nothing are checked to leave the target's hard state alone (and a
 * leader's role); the properties above must hold with them too.
 *
 * usage: sim_raft                       default quick set
 *        sim_raft --seeds N [--nodes K] seeds 1..N
 *        sim_raft --seed S [--nodes K] [--verbose]
 */
#include <assert.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raft/raft.h"

#define SIM_NODES_MAX 6            /* 5 voters + 1 observer */
#define SIM_OBSERVER_ID 100
#define SIM_NET_MAX 8192           /* in-flight messages; more are dropped */
#define SIM_OFFSETS_MAX 8192       /* committed offsets tracked */
#define SIM_EPOCHS_MAX 4096
#define SIM_TICK_MS 10
#define SIM_FAULT_MS 6000          /* faults happen in [0, FAULT_MS) */
#define SIM_HEAL_BOUND_MS 4000     /* progress must resume within this */
#define SIM_SNAP_EVERY 40          /* applied entries between snapshots */
#define SIM_CLUSTER_ID "sim-cluster-0"
#define SIM_STRANGER_ID 77         /* a node id no one has configured */

/* ---- the run ----------------------------------------------------------- */

typedef struct sim_entry {
    int64_t offset;
    int32_t epoch;
    raft_entry_type_t type;
    uint64_t id;                   /* client proposal id (0 for LeaderChange) */
} sim_entry_t;

typedef struct sim_msg {
    int64_t at_ms;
    uint64_t seq;
    raft_msg_t m;
    raft_entry_t *entries;         /* owned copies */
    uint8_t *blob;                 /* owned payload / snapshot bytes */
} sim_msg_t;

typedef struct sim_node {
    int32_t id;
    bool voter;
    bool up;
    int64_t restart_ms;
    raft_t *r;
    /* durable */
    raft_hard_state_t hs;
    raft_snapshot_id_t snap;
    uint64_t snap_hash;
    /* the log as written: [log_start, log_start + n); durable below durable_end */
    sim_entry_t *log;
    size_t n, cap;
    int64_t log_start;
    int64_t durable_end;
    int64_t fsync_ms;              /* pending fsync, -1 none */
    /* state machine */
    int64_t applied_end;
    uint64_t applied_hash;
    /* checker */
    int64_t hw_seen;
    int32_t epoch_seen;
    int64_t next_tick_ms;
    int group;                     /* partition group */
} sim_node_t;

typedef struct sim {
    uint64_t seed;
    uint64_t rng;
    int k;                         /* voters */
    int n;                         /* nodes (voters + observer) */
    bool verbose;
    int64_t now_ms;
    sim_node_t nodes[SIM_NODES_MAX];
    sim_msg_t *heap[SIM_NET_MAX];
    size_t n_heap;
    uint64_t msg_seq;
    bool partitioned;
    int64_t heal_ms;
    uint64_t next_id;
    /* global truth */
    sim_entry_t committed[SIM_OFFSETS_MAX];
    bool known[SIM_OFFSETS_MAX];
    int32_t max_committed_epoch;
    uint64_t chain[SIM_OFFSETS_MAX + 1];   /* hash of committed [0, o) */
    int64_t chain_end;
    int32_t leader_of[SIM_EPOCHS_MAX];
    uint64_t first_id_after_heal;   /* ids >= this were proposed after the heal */
    /* per-seed fault profile, so the seeds cover mild to harsh runs */
    unsigned crash_x1000;          /* crash chance per ms, in 1/1000 */
    unsigned partition_x1000;      /* partition toggle chance per ms */
    unsigned drop_x1000;
    unsigned nemesis_x1000;        /* forged request chance per ms */
    uint64_t forged, forged_moved; /* injected; of those, ones that moved a node */
    size_t fetch_entries_max;
    int64_t fsync_delay_max_ms;    /* unsynced entries are lost on a crash */
    char fail[512];
    uint64_t steps;
} sim_t;

static sim_t *g_sim;   /* for the abort handler's replay line */
static const char *g_prog = "build/test/sim_raft";

static uint64_t rnd(sim_t *s) {
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static int64_t rnd_range(sim_t *s, int64_t lo, int64_t hi) {   /* [lo, hi] */
    return lo + (int64_t)(rnd(s) % (uint64_t)(hi - lo + 1));
}
static bool chance(sim_t *s, unsigned pct_x10) { return rnd(s) % 1000 < pct_x10; }

static void trace(sim_t *s, const char *fmt, ...) {
    if (!s->verbose) return;
    va_list ap;
    va_start(ap, fmt);
    printf("%7" PRId64 " ", s->now_ms);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

static void failf(sim_t *s, const char *fmt, ...) {
    if (s->fail[0]) return;
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(s->fail, sizeof s->fail, "t=%" PRId64 " ms: ", s->now_ms);
    vsnprintf(s->fail + n, sizeof s->fail - (size_t)n, fmt, ap);
    va_end(ap);
}

static uint64_t mix(uint64_t h, const sim_entry_t *e) {
    uint64_t v[4] = { (uint64_t)e->offset, (uint64_t)e->epoch, (uint64_t)e->type, e->id };
    for (int i = 0; i < 4; i++) {
        h ^= v[i] + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* ---- network: a binary heap by (at_ms, seq) ---------------------------- */

static bool msg_before(const sim_msg_t *a, const sim_msg_t *b) {
    return a->at_ms != b->at_ms ? a->at_ms < b->at_ms : a->seq < b->seq;
}

static void heap_push(sim_t *s, sim_msg_t *m) {
    size_t i = s->n_heap++;
    s->heap[i] = m;
    while (i > 0 && msg_before(s->heap[i], s->heap[(i - 1) / 2])) {
        sim_msg_t *t = s->heap[i];
        s->heap[i] = s->heap[(i - 1) / 2];
        s->heap[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static sim_msg_t *heap_pop(sim_t *s) {
    sim_msg_t *top = s->heap[0];
    s->heap[0] = s->heap[--s->n_heap];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->n_heap && msg_before(s->heap[l], s->heap[m])) m = l;
        if (r < s->n_heap && msg_before(s->heap[r], s->heap[m])) m = r;
        if (m == i) break;
        sim_msg_t *t = s->heap[i];
        s->heap[i] = s->heap[m];
        s->heap[m] = t;
        i = m;
    }
    return top;
}

static void msg_free(sim_msg_t *m) {
    free(m->entries);
    free(m->blob);
    free(m);
}

/* Deep copy: the core's pointers die at raft_advance. */
static sim_msg_t *msg_copy(const raft_msg_t *src) {
    sim_msg_t *m = calloc(1, sizeof *m);
    assert(m != NULL);
    m->m = *src;
    if (src->type == RAFT_MSG_FETCH_RESP && src->u.fetch_resp.n_entries) {
        uint32_t n = src->u.fetch_resp.n_entries;
        size_t bytes = 0;
        for (uint32_t i = 0; i < n; i++) bytes += src->u.fetch_resp.entries[i].len;
        m->entries = calloc(n, sizeof *m->entries);
        m->blob = malloc(bytes ? bytes : 1);
        assert(m->entries != NULL && m->blob != NULL);
        size_t pos = 0;
        for (uint32_t i = 0; i < n; i++) {
            m->entries[i] = src->u.fetch_resp.entries[i];
            if (m->entries[i].len) memcpy(m->blob + pos, m->entries[i].data, m->entries[i].len);
            m->entries[i].data = m->blob + pos;
            pos += m->entries[i].len;
        }
        m->m.u.fetch_resp.entries = m->entries;
    }
    if (src->type == RAFT_MSG_SNAP_RESP && src->u.snap_resp.len) {
        m->blob = malloc(src->u.snap_resp.len);
        assert(m->blob != NULL);
        memcpy(m->blob, src->u.snap_resp.data, src->u.snap_resp.len);
        m->m.u.snap_resp.data = m->blob;
    }
    return m;
}

static sim_node_t *node_by_id(sim_t *s, int32_t id) {
    for (int i = 0; i < s->n; i++)
        if (s->nodes[i].id == id) return &s->nodes[i];
    return NULL;
}

static bool faulty(const sim_t *s) { return s->now_ms < SIM_FAULT_MS; }

static void net_send(sim_t *s, const raft_msg_t *rm) {
    sim_node_t *from = node_by_id(s, rm->from), *to = node_by_id(s, rm->to);
    assert(from != NULL);
    if (to == NULL) return;   /* an answer to the nemesis's made-up sender */
    if (rm->type == RAFT_MSG_VOTE_RESP && rm->u.vote_resp.granted && !from->voter)
        failf(s, "observer %d granted a vote", rm->from);
    if (faulty(s) && (chance(s, s->drop_x1000) || from->group != to->group)) {
        trace(s, "drop %s %d->%d", raft_msg_type_str(rm->type), rm->from, rm->to);
        return;
    }
    int copies = faulty(s) && chance(s, 30) ? 2 : 1;
    for (int c = 0; c < copies; c++) {
        if (s->n_heap == SIM_NET_MAX) return;   /* a full network drops */
        sim_msg_t *m = msg_copy(rm);
        int64_t delay = rnd_range(s, 1, 15);
        if (faulty(s) && chance(s, 20)) delay = rnd_range(s, 50, 400);   /* reorder */
        m->at_ms = s->now_ms + delay;
        m->seq = ++s->msg_seq;
        heap_push(s, m);
    }
}

/* ---- the driver: persist, send, apply, advance -------------------------- */

static void log_push(sim_node_t *nd, const raft_entry_t *e) {
    assert(e->offset == nd->log_start + (int64_t)nd->n);
    if (nd->n == nd->cap) {
        nd->cap = nd->cap ? nd->cap * 2 : 256;
        nd->log = realloc(nd->log, nd->cap * sizeof *nd->log);
        assert(nd->log != NULL);
    }
    sim_entry_t *x = &nd->log[nd->n++];
    x->offset = e->offset;
    x->epoch = e->epoch;
    x->type = e->type;
    x->id = 0;
    if (e->type == RAFT_ENTRY_DATA) {
        assert(e->len == 8);
        memcpy(&x->id, e->data, 8);
    }
}

static void log_drop_prefix(sim_node_t *nd, int64_t start) {
    if (start <= nd->log_start) return;
    size_t drop = (size_t)(start - nd->log_start);
    if (drop > nd->n) drop = nd->n;
    memmove(nd->log, nd->log + drop, (nd->n - drop) * sizeof *nd->log);
    nd->n -= drop;
    nd->log_start = start;
    if (nd->durable_end < start) nd->durable_end = start;
}

static const sim_entry_t *log_at(const sim_node_t *nd, int64_t o) {
    if (o < nd->log_start || o >= nd->log_start + (int64_t)nd->n) return NULL;
    return &nd->log[o - nd->log_start];
}

static void extend_chain(sim_t *s) {
    while (s->chain_end < SIM_OFFSETS_MAX && s->known[s->chain_end]) {
        s->chain[s->chain_end + 1] = mix(s->chain[s->chain_end], &s->committed[s->chain_end]);
        s->chain_end++;
    }
}

static void snap_encode(uint8_t out[16], int64_t end, uint64_t hash) {
    memcpy(out, &end, 8);
    memcpy(out + 8, &hash, 8);
}

static void apply_snapshot(sim_t *s, sim_node_t *nd, const raft_ready_t *rd) {
    assert(rd->snapshot_len == 16);
    int64_t end;
    uint64_t hash;
    memcpy(&end, rd->snapshot_data, 8);
    memcpy(&hash, rd->snapshot_data + 8, 8);
    if (end != rd->snapshot.end_offset) failf(s, "node %d: snapshot end mismatch", nd->id);
    if (end > s->chain_end || s->chain[end] != hash)
        failf(s, "node %d installed a snapshot at %" PRId64 " that differs from history", nd->id,
              end);
    nd->snap = rd->snapshot;
    nd->snap_hash = hash;
    nd->n = 0;
    nd->log_start = end;
    nd->durable_end = end;
    nd->applied_end = end;
    nd->applied_hash = hash;
    trace(s, "node %d installed snapshot end=%" PRId64, nd->id, end);
}

static void apply_committed(sim_t *s, sim_node_t *nd) {
    int64_t hw = raft_high_watermark(nd->r);
    while (nd->applied_end < hw) {
        const sim_entry_t *e = log_at(nd, nd->applied_end);
        if (e == NULL) {
            failf(s, "node %d: committed offset %" PRId64 " missing from its log", nd->id,
                  nd->applied_end);
            return;
        }
        nd->applied_hash = mix(nd->applied_hash, e);
        nd->applied_end++;
        if (nd->applied_end <= s->chain_end && s->chain[nd->applied_end] != nd->applied_hash)
            failf(s, "node %d applied a different sequence at offset %" PRId64, nd->id,
                  nd->applied_end - 1);
    }
}

static raft_ready_t drive(sim_t *s, sim_node_t *nd, const raft_event_t *ev);

static void handle_ready(sim_t *s, sim_node_t *nd, raft_ready_t *rd) {
    if (rd->hard_state_changed) nd->hs = rd->hard_state;   /* fsynced */
    if (rd->snapshot_install) apply_snapshot(s, nd, rd);
    if (rd->truncate) {
        int64_t to = rd->truncate_to;
        assert(to >= nd->log_start && to <= nd->log_start + (int64_t)nd->n);
        nd->n = (size_t)(to - nd->log_start);
        if (nd->durable_end > to) nd->durable_end = to;
        trace(s, "node %d truncated to %" PRId64, nd->id, to);
    }
    for (uint32_t i = 0; i < rd->n_entries; i++) log_push(nd, &rd->entries[i]);
    if (rd->log_start_changed) log_drop_prefix(nd, rd->log_start);
    raft_ready_persisted(rd);
    for (uint32_t i = 0; i < rd->n_msgs; i++) net_send(s, &rd->msgs[i]);
    raft_ready_sent(rd);
    apply_committed(s, nd);
    raft_advance(nd->r, rd);
    if (nd->fsync_ms < 0 && nd->durable_end < nd->log_start + (int64_t)nd->n)
        nd->fsync_ms = s->now_ms + (faulty(s) && chance(s, 30) ? rnd_range(s, 100, 500)   /* stall */
                                                               : rnd_range(s, 0, s->fsync_delay_max_ms));
}

/* ---- invariants --------------------------------------------------------- */

static void check_committed(sim_t *s, sim_node_t *nd) {
    int64_t hw = raft_high_watermark(nd->r);
    for (int64_t o = raft_log_start(nd->r); o < hw; o++) {
        const raft_entry_t *e = raft_entry_at(nd->r, o);
        if (e == NULL || o >= SIM_OFFSETS_MAX) continue;
        sim_entry_t x = { o, e->epoch, e->type, 0 };
        if (e->type == RAFT_ENTRY_DATA) memcpy(&x.id, e->data, 8);
        if (!s->known[o]) {
            s->known[o] = true;
            s->committed[o] = x;
            if (x.epoch > s->max_committed_epoch) s->max_committed_epoch = x.epoch;
        } else if (memcmp(&s->committed[o], &x, sizeof x) != 0) {
            failf(s, "node %d: committed offset %" PRId64 " changed (epoch %d vs %d)", nd->id, o,
                  x.epoch, s->committed[o].epoch);
        }
    }
    extend_chain(s);
}

static void check_leader_complete(sim_t *s, sim_node_t *nd) {
    if (raft_epoch(nd->r) < s->max_committed_epoch) return;   /* stale leader */
    for (int64_t o = raft_log_start(nd->r); o < s->chain_end; o++) {
        const raft_entry_t *e = raft_entry_at(nd->r, o);
        if (e == NULL || e->epoch != s->committed[o].epoch) {
            failf(s, "leader %d (epoch %d) lacks committed offset %" PRId64, nd->id,
                  raft_epoch(nd->r), o);
            return;
        }
    }
}

static void check_node(sim_t *s, sim_node_t *nd) {
    raft_t *r = nd->r;
    int32_t epoch = raft_epoch(r);
    raft_role_t role = raft_role(r);
    if (epoch < nd->epoch_seen) failf(s, "node %d: epoch went back", nd->id);
    nd->epoch_seen = epoch;
    int64_t hw = raft_high_watermark(r);
    if (hw < nd->hw_seen) failf(s, "node %d: HW went back %" PRId64 " -> %" PRId64, nd->id,
                                nd->hw_seen, hw);
    nd->hw_seen = hw;
    if (!nd->voter && (role == RAFT_PROSPECTIVE || role == RAFT_CANDIDATE || role == RAFT_LEADER))
        failf(s, "observer %d became %s", nd->id, raft_role_str(role));
    if (role == RAFT_LEADER) {
        if (epoch >= SIM_EPOCHS_MAX) {
            failf(s, "epoch bound exceeded");
        } else if (s->leader_of[epoch] == RAFT_NO_NODE) {
            s->leader_of[epoch] = nd->id;
            trace(s, "node %d is leader of epoch %d", nd->id, epoch);
        } else if (s->leader_of[epoch] != nd->id) {
            failf(s, "two leaders in epoch %d: %d and %d", epoch, s->leader_of[epoch], nd->id);
        }
    }
    check_committed(s, nd);
    if (role == RAFT_LEADER) check_leader_complete(s, nd);
}

static raft_ready_t drive(sim_t *s, sim_node_t *nd, const raft_event_t *ev) {
    raft_role_t before = raft_role(nd->r);
    raft_ready_t rd = raft_step(nd->r, ev, s->now_ms);
    s->steps++;
    handle_ready(s, nd, &rd);
    if (raft_role(nd->r) != before)
        trace(s, "node %d %s -> %s epoch %d", nd->id, raft_role_str(before),
              raft_role_str(raft_role(nd->r)), raft_epoch(nd->r));
    check_node(s, nd);
    return rd;
}

/* ---- nodes: start, crash, restart --------------------------------------- */

static void node_start(sim_t *s, sim_node_t *nd) {
    raft_config_t c;
    raft_config_default(&c);
    c.node_id = nd->id;
    strcpy(c.cluster_id, SIM_CLUSTER_ID);
    c.n_voters = (size_t)s->k;
    for (int i = 0; i < s->k; i++) c.voters[i] = i + 1;
    c.election_timeout_ms = 150;
    c.fetch_timeout_ms = 300;
    c.fetch_interval_ms = 40;
    c.seed = s->seed * 1000003u + (uint64_t)s->now_ms;
    c.fetch_entries_max = s->fetch_entries_max;
    c.fetch_bytes_max = 64;   /* small: snapshots move in several chunks */
    c.pending_entries_max = 64;
    /* durable log entries to hand back: [log_start, durable_end) */
    size_t n = (size_t)(nd->durable_end - nd->log_start);
    assert(n <= nd->n);
    nd->n = n;   /* the unsynced tail is lost */
    raft_entry_t *ents = calloc(n ? n : 1, sizeof *ents);
    assert(ents != NULL);
    for (size_t i = 0; i < n; i++) {
        ents[i].offset = nd->log[i].offset;
        ents[i].epoch = nd->log[i].epoch;
        ents[i].type = nd->log[i].type;
        ents[i].data = nd->log[i].type == RAFT_ENTRY_DATA ? (const uint8_t *)&nd->log[i].id : NULL;
        ents[i].len = nd->log[i].type == RAFT_ENTRY_DATA ? 8 : 0;
    }
    uint8_t img[16];
    snap_encode(img, nd->snap.end_offset, nd->snap_hash);
    nd->r = raft_new(&c, &nd->hs, &nd->snap, img, sizeof img, ents, n, s->now_ms);
    free(ents);
    assert(nd->r != NULL);
    nd->up = true;
    nd->fsync_ms = -1;
    nd->applied_end = nd->snap.end_offset;
    nd->applied_hash = nd->snap_hash;
    nd->hw_seen = raft_high_watermark(nd->r);
    nd->next_tick_ms = s->now_ms;
}

static void node_crash(sim_t *s, sim_node_t *nd) {
    trace(s, "node %d CRASH (durable log end %" PRId64 " of %" PRId64 ")", nd->id, nd->durable_end,
          nd->log_start + (int64_t)nd->n);
    raft_free(nd->r);
    nd->r = NULL;
    nd->up = false;
    nd->restart_ms = s->now_ms + rnd_range(s, 50, 800);
}

/* ---- the nemesis: forged requests ----------------------------------------- */

static int32_t random_voter(sim_t *s) { return (int32_t)rnd_range(s, 1, s->k); }

/* Builds one forged request for a live node, delivered at once (the check
 * needs the target's state right before it). */
static void nemesis(sim_t *s) {
    sim_node_t *to = &s->nodes[rnd(s) % (uint64_t)s->n];
    if (!to->up) return;
    int32_t e = raft_epoch(to->r);
    raft_msg_t m;
    memset(&m, 0, sizeof m);
    m.to = to->id;
    m.leader_id = RAFT_NO_NODE;
    strcpy(m.cluster_id, SIM_CLUSTER_ID);
    static const raft_msg_type_t elect[3] = { RAFT_MSG_VOTE_REQ, RAFT_MSG_BEGIN_EPOCH_REQ,
                                              RAFT_MSG_END_EPOCH_REQ };
    m.type = elect[rnd(s) % 3];
    m.from = random_voter(s);
    bool must_not_move = true;
    const char *what = "";
    switch (rnd(s) % 7) {
    case 0: {   /* a voter's id, a slightly higher epoch: KIP-996's case */
        m.epoch = e + (int32_t)rnd_range(s, 1, 3);
        /* only a leader is sure to be alive here; a follower may be past
         * its fetch timeout, and then this is a legal request */
        must_not_move = raft_role(to->r) == RAFT_LEADER;
        what = "higher epoch";
        break;
    }
    case 1: {   /* epochs no election could follow, or far beyond ours */
        int32_t huge[4] = { INT32_MAX, RAFT_EPOCH_MAX + 1, -1,
                            e + RAFT_EPOCH_JUMP_MAX + (int32_t)rnd_range(s, 1, 1000) };
        m.epoch = huge[rnd(s) % 4];
        what = "huge epoch";
        break;
    }
    case 2:   /* not a voter */
        m.from = chance(s, 500) ? SIM_STRANGER_ID : SIM_OBSERVER_ID;
        m.epoch = e + (int32_t)rnd_range(s, 1, 3);
        what = "non-voter";
        break;
    case 3: {   /* another cluster, any request type */
        static const char *ids[3] = { "", "sim-cluster-1", "sim-cluster-0-" };
        strcpy(m.cluster_id, ids[rnd(s) % 3]);
        if (chance(s, 300)) m.type = RAFT_MSG_FETCH_REQ;
        m.epoch = e + (int32_t)rnd_range(s, 0, 3);
        what = "foreign cluster";
        break;
    }
    case 4:   /* a second leader for the current epoch */
        m.type = RAFT_MSG_BEGIN_EPOCH_REQ;
        m.epoch = e;
        if (raft_leader(to->r) == RAFT_NO_NODE || raft_leader(to->r) == m.from) return;
        /* a follower whose leader never answered it may take the claim
         * (the leader it knows may be the forged one); a leader never */
        must_not_move = raft_role(to->r) == RAFT_LEADER;
        what = "second leader";
        break;
    case 5:   /* the leader's id resigning the current epoch: legal, disruptive */
        m.type = RAFT_MSG_END_EPOCH_REQ;
        m.epoch = e;
        if (raft_leader(to->r) == RAFT_NO_NODE || raft_leader(to->r) == to->id) return;
        m.from = raft_leader(to->r);
        must_not_move = false;
        what = "end epoch";
        break;
    default:   /* a Fetch from an id nobody configured */
        m.type = RAFT_MSG_FETCH_REQ;
        m.from = SIM_STRANGER_ID;
        m.epoch = e;
        m.u.fetch_req.fetch_offset = raft_log_end(to->r);
        m.u.fetch_req.last_fetched_epoch = e;
        what = "stranger fetch";
        break;
    }
    if (m.from == to->id) return;
    if (m.type == RAFT_MSG_VOTE_REQ) {
        m.u.vote_req.prevote = chance(s, 300);
        m.u.vote_req.last_epoch = e + 1;   /* a log that looks newer */
        m.u.vote_req.log_end = raft_log_end(to->r) + 100;
    }
    if (m.type == RAFT_MSG_BEGIN_EPOCH_REQ || m.type == RAFT_MSG_END_EPOCH_REQ) m.leader_id = m.from;
    raft_hard_state_t before = raft_hard_state(to->r);
    bool was_leader = raft_role(to->r) == RAFT_LEADER;
    s->forged++;
    trace(s, "NEMESIS %s %s %d->%d epoch %d", what, raft_msg_type_str(m.type), m.from, m.to, m.epoch);
    raft_event_t ev = { .type = RAFT_EV_RECV };
    ev.u.msg = &m;
    (void)drive(s, to, &ev);
    raft_hard_state_t after = raft_hard_state(to->r);
    bool moved = memcmp(&before, &after, sizeof before) != 0;
    s->forged_moved += moved;
    if (must_not_move && moved)
        failf(s, "forged %s %s %d->%d epoch %d moved node %d: epoch %d vote %d leader %d -> "
              "epoch %d vote %d leader %d", what, raft_msg_type_str(m.type), m.from, m.to, m.epoch,
              to->id, before.epoch, before.voted_for, before.leader_id, after.epoch, after.voted_for,
              after.leader_id);
    if (was_leader && m.type % 2 == 0 && m.epoch > before.epoch && raft_role(to->r) != RAFT_LEADER &&
        raft_role(to->r) != RAFT_RESIGNED)
        failf(s, "forged %s made leader %d %s", raft_msg_type_str(m.type), to->id,
              raft_role_str(raft_role(to->r)));
    if (after.epoch > RAFT_EPOCH_MAX) failf(s, "node %d reached epoch %d", to->id, after.epoch);
}

/* ---- client, snapshots, faults ------------------------------------------ */

static sim_node_t *current_leader(sim_t *s) {
    sim_node_t *best = NULL;
    for (int i = 0; i < s->n; i++) {
        sim_node_t *nd = &s->nodes[i];
        if (!nd->up || raft_role(nd->r) != RAFT_LEADER) continue;
        if (best == NULL || raft_epoch(nd->r) > raft_epoch(best->r)) best = nd;
    }
    return best;
}

static void client_propose(sim_t *s) {
    sim_node_t *nd = current_leader(s);
    if (nd == NULL) return;
    uint32_t cnt = (uint32_t)rnd_range(s, 1, 3);
    uint64_t ids[3];
    const uint8_t *data[3];
    uint32_t len[3];
    for (uint32_t i = 0; i < cnt; i++) {
        ids[i] = ++s->next_id;
        data[i] = (const uint8_t *)&ids[i];
        len[i] = 8;
    }
    raft_event_t ev = { .type = RAFT_EV_PROPOSE };
    ev.u.propose.data = data;
    ev.u.propose.len = len;
    ev.u.propose.n = cnt;
    raft_ready_t rd = drive(s, nd, &ev);
    trace(s, "propose %u to %d: %d", cnt, nd->id, rd.status);
}

static void maybe_snapshot(sim_t *s, sim_node_t *nd) {
    if (nd->applied_end - raft_log_start(nd->r) < SIM_SNAP_EVERY || !chance(s, 100)) return;
    const raft_entry_t *e = raft_entry_at(nd->r, nd->applied_end - 1);
    assert(e != NULL);
    uint8_t img[16];
    snap_encode(img, nd->applied_end, nd->applied_hash);
    raft_event_t ev = { .type = RAFT_EV_SNAPSHOT_TAKEN };
    ev.u.snapshot.id.end_offset = nd->applied_end;
    ev.u.snapshot.id.epoch = e->epoch;
    ev.u.snapshot.data = img;
    ev.u.snapshot.len = sizeof img;
    /* the snapshot is durable before the core may drop the prefix */
    raft_snapshot_id_t old = nd->snap;
    uint64_t old_hash = nd->snap_hash;
    nd->snap = ev.u.snapshot.id;
    nd->snap_hash = nd->applied_hash;
    raft_ready_t rd = drive(s, nd, &ev);
    if (rd.status != RAFT_OK) {
        nd->snap = old;
        nd->snap_hash = old_hash;
        failf(s, "node %d: snapshot refused (%d)", nd->id, rd.status);
    }
    trace(s, "node %d snapshot at %" PRId64, nd->id, nd->applied_end);
}

static void faults(sim_t *s) {
    if (!faulty(s)) {
        if (s->partitioned) {
            for (int i = 0; i < s->n; i++) s->nodes[i].group = 0;
            s->partitioned = false;
        }
        return;
    }
    if (chance(s, s->partition_x1000)) {
        s->partitioned = !s->partitioned;
        for (int i = 0; i < s->n; i++)
            s->nodes[i].group = s->partitioned ? (int)(rnd(s) % 2) : 0;
        trace(s, "%s", s->partitioned ? "PARTITION" : "HEAL");
    }
    if (chance(s, 1)) {   /* graceful shutdown of the leader: EndQuorumEpoch */
        sim_node_t *nd = current_leader(s);
        if (nd != NULL) {
            raft_event_t ev = { .type = RAFT_EV_RESIGN };
            (void)drive(s, nd, &ev);
            trace(s, "node %d RESIGN", nd->id);
        }
    }
    if (chance(s, s->nemesis_x1000)) nemesis(s);
    if (chance(s, s->crash_x1000)) {
        /* leaders crash more often than the rest: that is where it hurts */
        sim_node_t *nd = current_leader(s);
        if (nd == NULL || chance(s, 500)) nd = &s->nodes[rnd(s) % (uint64_t)s->n];
        if (nd->up) node_crash(s, nd);
    }
}

/* ---- the event loop ------------------------------------------------------ */

static void deliver_due(sim_t *s) {
    while (s->n_heap > 0 && s->heap[0]->at_ms <= s->now_ms && !s->fail[0]) {
        sim_msg_t *m = heap_pop(s);
        sim_node_t *to = node_by_id(s, m->m.to);
        if (to->up) {
            trace(s, "recv %s %d->%d epoch %d leader %d err %d", raft_msg_type_str(m->m.type),
                  m->m.from, m->m.to, m->m.epoch, m->m.leader_id, m->m.error);
            raft_event_t ev = { .type = RAFT_EV_RECV };
            ev.u.msg = &m->m;
            (void)drive(s, to, &ev);
        }
        msg_free(m);
    }
}

static void node_timers(sim_t *s, sim_node_t *nd) {
    if (!nd->up) {
        if (s->now_ms >= nd->restart_ms || !faulty(s)) {
            node_start(s, nd);
            trace(s, "node %d RESTART epoch %d log end %" PRId64, nd->id, raft_epoch(nd->r),
                  raft_log_end(nd->r));
        }
        return;
    }
    if (nd->fsync_ms >= 0 && s->now_ms >= nd->fsync_ms) {
        nd->fsync_ms = -1;
        nd->durable_end = nd->log_start + (int64_t)nd->n;
        raft_event_t ev = { .type = RAFT_EV_PERSISTED };
        ev.u.persisted_end = nd->durable_end;
        (void)drive(s, nd, &ev);
    }
    if (s->now_ms >= nd->next_tick_ms) {
        nd->next_tick_ms = s->now_ms + SIM_TICK_MS;
        raft_event_t ev = { .type = RAFT_EV_TICK };
        (void)drive(s, nd, &ev);
        maybe_snapshot(s, nd);
    }
}

static void check_progress(sim_t *s) {
    /* the first committed entry proposed after the heal */
    int64_t at = -1;
    for (int64_t o = 0; o < s->chain_end && at < 0; o++)
        if (s->committed[o].type == RAFT_ENTRY_DATA &&
            s->committed[o].id >= s->first_id_after_heal)
            at = o;
    if (at < 0) {
        failf(s, "no entry proposed after the heal committed within %d ms", SIM_HEAL_BOUND_MS);
        return;
    }
    for (int i = 0; i < s->n; i++)
        if (s->nodes[i].applied_end <= at)
            failf(s, "node %d did not catch up after heal (applied %" PRId64 " <= %" PRId64 ")",
                  s->nodes[i].id, s->nodes[i].applied_end, at);
}

static void sim_init(sim_t *s, uint64_t seed, int k, bool verbose) {
    memset(s, 0, sizeof *s);
    s->seed = seed;
    s->rng = seed * 0x2545f4914f6cdd1dULL + (uint64_t)k;
    s->k = k;
    s->n = k + 1;
    s->verbose = verbose;
    s->heal_ms = SIM_FAULT_MS;
    s->crash_x1000 = (unsigned)rnd_range(s, 0, 4);
    s->partition_x1000 = (unsigned)rnd_range(s, 0, 3);
    s->drop_x1000 = (unsigned)rnd_range(s, 0, 150);
    s->fetch_entries_max = (size_t)rnd_range(s, 1, 8);
    s->fsync_delay_max_ms = rnd_range(s, 0, 60);
    s->nemesis_x1000 = (unsigned)rnd_range(s, 0, 20);
    for (int i = 0; i < SIM_EPOCHS_MAX; i++) s->leader_of[i] = RAFT_NO_NODE;
    for (int i = 0; i < s->n; i++) {
        sim_node_t *nd = &s->nodes[i];
        nd->id = i < k ? i + 1 : SIM_OBSERVER_ID;
        nd->voter = i < k;
        nd->hs.voted_for = RAFT_NO_NODE;
        nd->hs.leader_id = RAFT_NO_NODE;
        node_start(s, nd);
    }
}

static void sim_free(sim_t *s) {
    while (s->n_heap) msg_free(heap_pop(s));
    for (int i = 0; i < s->n; i++) {
        raft_free(s->nodes[i].r);
        free(s->nodes[i].log);
    }
}

/* Runs one seed; returns true when every invariant held. */
static bool sim_run(uint64_t seed, int k, bool verbose) {
    sim_t *s = calloc(1, sizeof *s);
    assert(s != NULL);
    g_sim = s;
    sim_init(s, seed, k, verbose);
    int64_t end_ms = SIM_FAULT_MS + SIM_HEAL_BOUND_MS;
    for (s->now_ms = 0; s->now_ms < end_ms && !s->fail[0]; s->now_ms++) {
        if (s->now_ms == s->heal_ms) s->first_id_after_heal = s->next_id + 1;
        faults(s);
        deliver_due(s);
        for (int i = 0; i < s->n && !s->fail[0]; i++) node_timers(s, &s->nodes[i]);
        if (chance(s, 50)) client_propose(s);
    }
    if (!s->fail[0]) check_progress(s);
    bool ok = !s->fail[0];
    if (!ok) printf("sim_raft: seed %" PRIu64 " nodes %d FAILED: %s\n", seed, k, s->fail);
    if (verbose)
        printf("seed %" PRIu64 ": %" PRIu64 " steps, committed %" PRId64 " entries, %" PRIu64
               " forged requests (%" PRIu64 " moved a node)\n", seed, s->steps, s->chain_end, s->forged,
               s->forged_moved);
    sim_free(s);
    g_sim = NULL;
    free(s);
    return ok;
}

static void on_abort(int sig) {
    (void)sig;
    /* aborts come from assert() on this thread, so stdio is usable: keep
     * the trace that led here */
    fflush(stdout);
    if (g_sim != NULL) {
        char buf[512];
        int n = snprintf(buf, sizeof buf,
                         "sim_raft: assertion failed at t=%" PRId64 " ms; replay: "
                         "%s --seed %" PRIu64 " --nodes %d --verbose\n",
                         g_sim->now_ms, g_prog, g_sim->seed, g_sim->k);
        if (n < 0 || n >= (int)sizeof buf) n = (int)strlen(buf);
        if (write(2, buf, (size_t)n) < 0) _exit(3);
    }
    signal(SIGABRT, SIG_DFL);
    abort();
}

int main(int argc, char **argv) {
    uint64_t seeds = 0, one = 0;
    int k = 0;
    bool verbose = false;
    g_prog = argv[0];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seeds") && i + 1 < argc) seeds = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) one = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--nodes") && i + 1 < argc) k = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--verbose")) verbose = true;
        else {
            fprintf(stderr, "usage: %s [--seeds N | --seed S [--verbose]] [--nodes 3|5]\n",
                    argv[0]);
            return 2;
        }
    }
    if (k != 0 && (k < 1 || k > SIM_NODES_MAX - 1)) {
        fprintf(stderr, "sim_raft: --nodes must be 1..%d\n", SIM_NODES_MAX - 1);
        return 2;
    }
    signal(SIGABRT, on_abort);
    if (one != 0) {
        int kk = k ? k : 3;
        if (!sim_run(one, kk, verbose)) {
            printf("replay: %s --seed %" PRIu64 " --nodes %d --verbose\n", g_prog, one, kk);
            return 1;
        }
        printf("sim_raft: seed %" PRIu64 " passed\n", one);
        return 0;
    }
    if (seeds == 0) seeds = 1000;   /* default quick set: 1000 seeds x {3, 5} nodes, ~8 s */
    uint64_t passed = 0;
    int ks[2] = { 3, 5 };
    int nk = k ? 1 : 2;
    if (k) ks[0] = k;
    for (uint64_t sd = 1; sd <= seeds; sd++) {
        for (int j = 0; j < nk; j++) {
            if (!sim_run(sd, ks[j], false)) {
                printf("replay: %s --seed %" PRIu64 " --nodes %d --verbose\n", g_prog, sd,
                       ks[j]);
                return 1;
            }
            passed++;
        }
    }
    char nodes[16];
    snprintf(nodes, sizeof nodes, k ? "%d" : "{3,5}", k);
    printf("sim_raft: %" PRIu64 " seeds passed (seeds 1..%" PRIu64 " x %s nodes)\n", passed,
           seeds, nodes);
    return 0;
}
