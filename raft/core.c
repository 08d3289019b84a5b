/* core.c — construction, the step/advance cycle and the ready contract.
 * Role logic lives in election.c, replication in replicate.c. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "raft/raft_int.h"

const char *raft_status_str(int status) {
    switch (status) {
    case RAFT_OK: return "ok";
#define RAFT_STATUS_CASE_(name, value, text) case name: return text;
    RAFT_STATUS_LIST(RAFT_STATUS_CASE_)
#undef RAFT_STATUS_CASE_
    default: return "unknown status";
    }
}

void raft_config_default(raft_config_t *c) {
    memset(c, 0, sizeof *c);
    c->node_id = RAFT_NO_NODE;
    c->election_timeout_ms = 1000;
    c->fetch_timeout_ms = 2000;
    c->fetch_interval_ms = 100;
    c->seed = 1;
    c->fetch_entries_max = 256;
    c->fetch_bytes_max = 1 << 20;
    c->log_entries_max = 1 << 20;
    c->pending_entries_max = 4096;
    c->entry_bytes_max = 1 << 20;
    c->snapshot_bytes_max = 64u << 20;
}

/* splitmix64: tiny, seedable, good enough for election jitter */
static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int64_t raft_random_timeout(raft_t *r) {
    int64_t t = r->cfg.election_timeout_ms;
    return t + (int64_t)(rng_next(&r->rng) % (uint64_t)t);
}

int raft_voter_index(const raft_t *r, int32_t id) {
    for (size_t i = 0; i < r->cfg.n_voters; i++)
        if (r->cfg.voters[i] == id) return (int)i;
    return -1;
}

size_t raft_majority(const raft_t *r) { return r->cfg.n_voters / 2 + 1; }

static bool config_valid(const raft_config_t *c) {
    if (c->n_voters == 0 || c->n_voters > RAFT_VOTERS_MAX) return false;
    if (c->election_timeout_ms <= 0 || c->fetch_timeout_ms <= 0) return false;
    if (c->fetch_interval_ms <= 0 || c->fetch_entries_max == 0) return false;
    if (c->log_entries_max == 0 || c->pending_entries_max == 0) return false;
    for (size_t i = 0; i < c->n_voters; i++)
        for (size_t j = i + 1; j < c->n_voters; j++)
            if (c->voters[i] == c->voters[j]) return false;
    if (memchr(c->cluster_id, 0, sizeof c->cluster_id) == NULL) return false;
    return c->node_id >= 0;
}

static int load_entries(raft_t *r, const raft_entry_t *entries, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const raft_entry_t *e = &entries[i];
        if (e->offset != rlog_end(&r->log) || e->epoch < rlog_last_epoch(&r->log))
            return RAFT_ERR_BAD_VALUE;
        if (e->epoch > r->hs.epoch || e->epoch < 1) return RAFT_ERR_BAD_VALUE;
        if (e->len > r->cfg.entry_bytes_max || (e->len > 0 && e->data == NULL))
            return RAFT_ERR_BAD_VALUE;
        int rc = rlog_append(&r->log, e->epoch, e->type, e->data, e->len);
        if (rc != RAFT_OK) return rc;
    }
    return RAFT_OK;
}

/* Restart rules (KRaft): a node that was leader resigns, a node that knew
 * the leader follows it, anyone else is unattached (keeping its vote). */
static void initial_role(raft_t *r, int64_t now_ms) {
    r->election_deadline_ms = now_ms + raft_random_timeout(r);
    r->next_fetch_ms = now_ms;
    if (r->hs.leader_id == r->cfg.node_id) {
        r->role = RAFT_RESIGNED;
    } else if (r->hs.leader_id != RAFT_NO_NODE) {
        r->role = RAFT_FOLLOWER;
        r->fetch_deadline_ms = now_ms + r->cfg.fetch_timeout_ms;
    } else {
        r->role = RAFT_UNATTACHED;
    }
}

raft_t *raft_new(const raft_config_t *cfg, const raft_hard_state_t *hs,
                 const raft_snapshot_id_t *snap, const uint8_t *snap_data, uint32_t snap_len,
                 const raft_entry_t *entries, size_t n_entries, int64_t now_ms) {
    if (!config_valid(cfg) || hs == NULL || hs->epoch < 0 || hs->epoch > RAFT_EPOCH_MAX) return NULL;
    if (snap != NULL && snap->end_offset > 0 &&
        (snap_len > cfg->snapshot_bytes_max || snap->epoch > hs->epoch))
        return NULL;
    raft_t *r = calloc(1, sizeof *r);
    if (r == NULL) return NULL;
    r->cfg = *cfg;
    r->hs = *hs;
    r->rng = cfg->seed ^ ((uint64_t)(uint32_t)cfg->node_id << 32);
    r->is_voter = raft_voter_index(r, cfg->node_id) >= 0;
    r->leader_confirmed = hs->leader_id == cfg->node_id;   /* a restart confirms no one else */
    if (!r->is_voter && hs->voted_for != RAFT_NO_NODE) goto fail;
    (void)rlog_init(&r->log, snap);
    if (snap != NULL && snap->end_offset > 0) {
        r->snap_data = malloc(snap_len ? snap_len : 1);
        if (r->snap_data == NULL) goto fail;
        if (snap_len) memcpy(r->snap_data, snap_data, snap_len);
        r->snap_len = snap_len;
    }
    if (load_entries(r, entries, n_entries) != RAFT_OK) goto fail;
    r->persisted_end = rlog_end(&r->log);
    r->unsaved_from = rlog_end(&r->log);
    r->hw = r->log.start;
    r->hw_reported = r->hw;
    for (size_t i = 0; i < cfg->n_voters; i++) r->voters[i].id = cfg->voters[i];
    initial_role(r, now_ms);
    return r;
fail:
    raft_free(r);
    return NULL;
}

void raft_free(raft_t *r) {
    if (r == NULL) return;
    rlog_free(&r->log);
    free(r->snap_data);
    free(r->snap_buf);
    free(r);
}

raft_msg_t raft_msg_new(const raft_t *r, raft_msg_type_t type, int32_t to) {
    raft_msg_t m;
    memset(&m, 0, sizeof m);
    m.type = type;
    m.from = r->cfg.node_id;
    m.to = to;
    m.epoch = r->hs.epoch;
    memcpy(m.cluster_id, r->cfg.cluster_id, sizeof m.cluster_id);
    /* a resigned leader is no leader: advertising it would pull voters back
     * into following a node that no longer serves fetches */
    bool gone = r->leader_gone ||
                (r->hs.leader_id == r->cfg.node_id && r->role != RAFT_LEADER);
    m.leader_id = gone ? RAFT_NO_NODE : r->hs.leader_id;
    return m;
}

void raft_emit(raft_t *r, const raft_msg_t *m) {
    assert(r->rd != NULL);
    assert(r->rd->n_msgs < RAFT_READY_MSGS_MAX);
    assert(m->to != r->cfg.node_id);
    r->rd->msgs[r->rd->n_msgs++] = *m;
}

void raft_set_hw(raft_t *r, int64_t hw) {
    if (hw <= r->hw) return;   /* the HW never moves backwards on a node */
    assert(hw <= rlog_end(&r->log));
    r->hw = hw;
}

void raft_truncate(raft_t *r, int64_t offset) {
    assert(offset >= r->hw);   /* committed entries are never truncated */
    rlog_truncate(&r->log, offset);
    if (r->persisted_end > offset) r->persisted_end = offset;
    if (!r->truncate_pending || offset < r->truncate_to) r->truncate_to = offset;
    if (r->unsaved_from > offset) {
        r->truncate_pending = true;
        r->unsaved_from = offset;
    }
}

/* Election traffic only comes from voters: a request from anyone else
 * (a misconfigured node, an observer, a stray client) could otherwise raise
 * our epoch. Requests arrive from anyone who can reach the controller port,
 * so every field that could move our state is bounded here, before any of
 * it is looked at; responses come back on connections we opened. */
typedef enum { ADMIT_OK, ADMIT_DROP, ADMIT_REFUSE } admit_t;

static admit_t admit(const raft_t *r, const raft_msg_t *m, int16_t *err) {
    if (m->to != r->cfg.node_id || m->from == r->cfg.node_id) return ADMIT_DROP;
    if ((unsigned)m->type >= RAFT_MSG_TYPE_COUNT) return ADMIT_DROP;
    if (m->leader_id != RAFT_NO_NODE && raft_voter_index(r, m->leader_id) < 0) return ADMIT_DROP;
    if (m->type % 2 == 1) {
        /* a peer of another cluster says nothing about our epochs */
        if (m->error == RAFT_KERR_INCONSISTENT_CLUSTER_ID) return ADMIT_DROP;
        return m->epoch < 0 || m->epoch > RAFT_EPOCH_MAX ? ADMIT_DROP : ADMIT_OK;
    }
    if (memchr(m->cluster_id, 0, sizeof m->cluster_id) == NULL ||
        strcmp(m->cluster_id, r->cfg.cluster_id) != 0) {
        *err = RAFT_KERR_INCONSISTENT_CLUSTER_ID;
        return ADMIT_REFUSE;
    }
    bool election = m->type == RAFT_MSG_VOTE_REQ || m->type == RAFT_MSG_BEGIN_EPOCH_REQ ||
                    m->type == RAFT_MSG_END_EPOCH_REQ;
    /* an observer takes part in no election: it learns epochs from the
     * answers to its own Fetches (leaders send election requests to voters
     * only), so none of these can strand it in an epoch ahead of the
     * quorum's */
    if (election && raft_voter_index(r, m->from) < 0) return ADMIT_DROP;
    if (election && !r->is_voter) {
        *err = RAFT_KERR_NONE;   /* answered (a Vote: not granted), never acted on */
        return ADMIT_REFUSE;
    }
    if (m->epoch < 0 || m->epoch > RAFT_EPOCH_MAX ||
        (election && (int64_t)m->epoch > (int64_t)r->hs.epoch + RAFT_EPOCH_JUMP_MAX)) {
        *err = RAFT_KERR_INVALID_REQUEST;
        return ADMIT_REFUSE;
    }
    return ADMIT_OK;
}

/* Answers a refused request with `err` and our own epoch; nothing else
 * changes. */
static void refuse(raft_t *r, const raft_msg_t *m, int16_t err) {
    raft_msg_t resp = raft_msg_new(r, (raft_msg_type_t)(m->type + 1), m->from);
    resp.error = err;
    switch (m->type) {
    case RAFT_MSG_VOTE_REQ: resp.u.vote_resp.prevote = m->u.vote_req.prevote; break;
    case RAFT_MSG_FETCH_REQ:
        resp.u.fetch_resp.req_fetch_offset = m->u.fetch_req.fetch_offset;
        resp.u.fetch_resp.req_last_epoch = m->u.fetch_req.last_fetched_epoch;
        resp.u.fetch_resp.log_start = r->log.start;
        resp.u.fetch_resp.high_watermark = r->hw;
        break;
    case RAFT_MSG_SNAP_REQ:
        resp.u.snap_resp.snapshot = m->u.snap_req.snapshot;
        resp.u.snap_resp.position = m->u.snap_req.position;
        break;
    default: break;
    }
    raft_emit(r, &resp);
}

static void on_recv(raft_t *r, const raft_msg_t *m, int64_t now_ms) {
    int16_t err = RAFT_KERR_NONE;
    switch (admit(r, m, &err)) {
    case ADMIT_DROP: return;
    case ADMIT_REFUSE: refuse(r, m, err); return;
    case ADMIT_OK: break;
    }
    raft_on_epoch(r, m, now_ms);
    switch (m->type) {
    case RAFT_MSG_VOTE_REQ: raft_on_vote_req(r, m, now_ms); break;
    case RAFT_MSG_VOTE_RESP: raft_on_vote_resp(r, m, now_ms); break;
    case RAFT_MSG_BEGIN_EPOCH_REQ: raft_on_begin_req(r, m, now_ms); break;
    case RAFT_MSG_BEGIN_EPOCH_RESP: raft_on_begin_resp(r, m, now_ms); break;
    case RAFT_MSG_END_EPOCH_REQ: raft_on_end_req(r, m, now_ms); break;
    case RAFT_MSG_END_EPOCH_RESP: break;
    case RAFT_MSG_FETCH_REQ: raft_on_fetch_req(r, m, now_ms); break;
    case RAFT_MSG_FETCH_RESP: raft_on_fetch_resp(r, m, now_ms); break;
    case RAFT_MSG_SNAP_REQ: raft_on_snap_req(r, m, now_ms); break;
    case RAFT_MSG_SNAP_RESP: raft_on_snap_resp(r, m, now_ms); break;
    case RAFT_MSG_TYPE_COUNT: break;
    }
}

static void on_persisted(raft_t *r, int64_t end) {
    assert(end <= rlog_end(&r->log));
    assert(end <= r->unsaved_from);   /* cannot be durable before written */
    if (end > r->persisted_end) r->persisted_end = end;
    if (r->role == RAFT_LEADER) raft_leader_update_hw(r);
}

static void fill_ready(raft_t *r, raft_ready_t *rd) {
    if (r->hs_dirty) {
        rd->hard_state_changed = true;
        rd->hard_state = r->hs;
    }
    if (r->snap_install_pending) {
        rd->snapshot_install = true;
        rd->snapshot = r->log.snap;
        rd->snapshot_data = r->snap_data;
        rd->snapshot_len = r->snap_len;
    }
    rd->truncate = r->truncate_pending;
    rd->truncate_to = r->truncate_to;
    int64_t end = rlog_end(&r->log);
    if (end > r->unsaved_from) {
        rd->entries = rlog_at(&r->log, r->unsaved_from);
        rd->n_entries = (uint32_t)(end - r->unsaved_from);
    }
    rd->log_start = r->log.start;
    if (r->hw != r->hw_reported) {
        rd->hw_changed = true;
        r->hw_reported = r->hw;
    }
    rd->high_watermark = r->hw;
}

raft_ready_t raft_step(raft_t *r, const raft_event_t *ev, int64_t now_ms) {
    assert(!r->ready_outstanding);   /* the previous ready was not advanced */
    raft_ready_t rd;
    memset(&rd, 0, sizeof rd);
    rd.seq = ++r->ready_seq;
    rd.propose_first_offset = -1;
    rd.propose_last_offset = -1;
    r->rd = &rd;
    int64_t start_before = r->log.start;
    int32_t epoch_before = r->hs.epoch;
    switch (ev->type) {
    case RAFT_EV_TICK: break;
    case RAFT_EV_RECV: on_recv(r, ev->u.msg, now_ms); break;
    case RAFT_EV_PROPOSE: rd.status = raft_propose(r, ev); break;
    case RAFT_EV_RESIGN:
        if (r->role == RAFT_LEADER) raft_resign(r, now_ms);
        break;
    case RAFT_EV_PERSISTED: on_persisted(r, ev->u.persisted_end); break;
    case RAFT_EV_SNAPSHOT_TAKEN: rd.status = raft_snapshot_taken(r, ev); break;
    }
    raft_election_timers(r, now_ms);
    raft_replication_timers(r, now_ms);
    assert(r->hs.epoch >= epoch_before);   /* epochs never go back */
    fill_ready(r, &rd);
    rd.log_start_changed = r->log.start != start_before;
    r->rd = NULL;
    r->ready_outstanding = true;
    return rd;
}

void raft_ready_persisted(raft_ready_t *rd) { rd->done_persisted = true; }

void raft_ready_sent(raft_ready_t *rd) {
    assert(rd->done_persisted);   /* persist before send */
    rd->done_sent = true;
}

void raft_advance(raft_t *r, const raft_ready_t *done) {
    assert(r->ready_outstanding);
    assert(done->seq == r->ready_seq);
    assert(done->done_persisted);
    assert(done->n_msgs == 0 || done->done_sent);
    r->ready_outstanding = false;
    r->hs_dirty = false;
    r->snap_install_pending = false;
    r->truncate_pending = false;
    r->unsaved_from = rlog_end(&r->log);
}

raft_role_t raft_role(const raft_t *r) { return r->role; }
int32_t raft_epoch(const raft_t *r) { return r->hs.epoch; }
int32_t raft_leader(const raft_t *r) { return r->hs.leader_id; }
int32_t raft_node_id(const raft_t *r) { return r->cfg.node_id; }
int64_t raft_high_watermark(const raft_t *r) { return r->hw; }
int64_t raft_log_start(const raft_t *r) { return r->log.start; }
int64_t raft_log_end(const raft_t *r) { return rlog_end(&r->log); }
raft_hard_state_t raft_hard_state(const raft_t *r) { return r->hs; }
raft_snapshot_id_t raft_snapshot(const raft_t *r) { return r->log.snap; }

const raft_entry_t *raft_entry_at(const raft_t *r, int64_t offset) {
    return rlog_at(&r->log, offset);
}

int64_t raft_next_timer_ms(const raft_t *r) {
    switch (r->role) {
    case RAFT_LEADER: return r->next_begin_ms;
    case RAFT_FOLLOWER:
        return r->next_fetch_ms < r->fetch_deadline_ms ? r->next_fetch_ms : r->fetch_deadline_ms;
    default:
        return r->is_voter ? r->election_deadline_ms : r->next_fetch_ms;
    }
}

const char *raft_role_str(raft_role_t role) {
    static const char *names[] = { "unattached", "prospective", "candidate",
                                   "leader", "follower", "resigned" };
    return (unsigned)role < 6 ? names[role] : "?";
}

const char *raft_msg_type_str(raft_msg_type_t t) {
    static const char *names[] = { "VoteReq", "VoteResp", "BeginEpochReq", "BeginEpochResp",
                                   "EndEpochReq", "EndEpochResp", "FetchReq", "FetchResp",
                                   "FetchSnapReq", "FetchSnapResp" };
    return (unsigned)t < RAFT_MSG_TYPE_COUNT ? names[t] : "?";
}

static void describe_peer(const raft_t *r, const raft_peer_t *p, raft_replica_state_t *o) {
    o->node_id = p->id;
    o->log_end_offset = p->match_end;
    o->last_fetch_ms = p->last_fetch_ms;
    o->last_caught_up_ms = p->last_caught_up_ms;
    if (p->id == r->cfg.node_id) o->log_end_offset = rlog_end(&r->log);
}

void raft_describe_quorum(const raft_t *r, raft_quorum_info_t *out) {
    memset(out, 0, sizeof *out);
    out->leader_id = r->hs.leader_id;
    out->leader_epoch = r->hs.epoch;
    out->high_watermark = r->hw;
    bool leader = r->role == RAFT_LEADER;
    out->n_voters = r->cfg.n_voters;
    for (size_t i = 0; i < r->cfg.n_voters; i++) {
        raft_replica_state_t *o = &out->voters[i];
        o->node_id = r->cfg.voters[i];
        o->log_end_offset = o->last_fetch_ms = o->last_caught_up_ms = -1;
        if (leader) describe_peer(r, &r->voters[i], o);
    }
    if (!leader) return;
    out->n_observers = r->n_observers;
    for (size_t i = 0; i < r->n_observers; i++)
        describe_peer(r, &r->observers[i], &out->observers[i]);
}
