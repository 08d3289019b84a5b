/* election.c — roles, epochs, pre-vote (KIP-996), vote, BeginQuorumEpoch and
 * EndQuorumEpoch (KIP-595).
 *
 * Epoch rule: any message (except a pre-vote request, which is hypothetical)
 * that carries a higher epoch moves this node to that epoch, as follower when
 * the message names a leader, else unattached. A vote is cast at most once
 * per epoch and is in the hard state before the response leaves. */
#include <assert.h>
#include <string.h>

#include "raft/raft_int.h"

static void set_hs(raft_t *r, int32_t epoch, int32_t voted_for, int32_t leader) {
    assert(epoch >= r->hs.epoch);
    if (epoch == r->hs.epoch && voted_for == r->hs.voted_for && leader == r->hs.leader_id)
        return;
    /* within an epoch the vote and the leader are set once */
    if (epoch == r->hs.epoch) {
        assert(r->hs.voted_for == RAFT_NO_NODE || r->hs.voted_for == voted_for);
        assert(r->hs.leader_id == RAFT_NO_NODE || r->hs.leader_id == leader);
    }
    if (epoch > r->hs.epoch) r->leader_gone = false;
    if (epoch > r->hs.epoch || leader != r->hs.leader_id) r->leader_confirmed = leader == r->cfg.node_id;
    r->hs.epoch = epoch;
    r->hs.voted_for = voted_for;
    r->hs.leader_id = leader;
    r->hs_dirty = true;
}

static void clear_votes(raft_t *r) {
    memset(r->votes_granted, 0, sizeof r->votes_granted);
    memset(r->votes_rejected, 0, sizeof r->votes_rejected);
}

static size_t count_granted(const raft_t *r) {
    size_t n = 0;
    for (size_t i = 0; i < r->cfg.n_voters; i++) n += r->votes_granted[i];
    return n;
}

static void abort_snapshot_fetch(raft_t *r) {
    r->snap_fetching = false;
    r->snap_buf_len = 0;
}

void raft_become_unattached(raft_t *r, int32_t epoch, int64_t now_ms) {
    assert(epoch > r->hs.epoch);
    set_hs(r, epoch, RAFT_NO_NODE, RAFT_NO_NODE);
    r->role = RAFT_UNATTACHED;
    r->election_deadline_ms = now_ms + raft_random_timeout(r);
    r->next_fetch_ms = now_ms;
    abort_snapshot_fetch(r);
}

void raft_become_follower(raft_t *r, int32_t epoch, int32_t leader, int64_t now_ms) {
    assert(leader != r->cfg.node_id);
    if (epoch > r->hs.epoch)
        set_hs(r, epoch, RAFT_NO_NODE, leader);
    else
        set_hs(r, epoch, r->hs.voted_for, leader);
    r->role = RAFT_FOLLOWER;
    r->fetch_deadline_ms = now_ms + r->cfg.fetch_timeout_ms;
    r->next_fetch_ms = now_ms;
    abort_snapshot_fetch(r);
}

static void become_leader(raft_t *r, int64_t now_ms) {
    assert(r->role == RAFT_CANDIDATE);
    assert(r->hs.voted_for == r->cfg.node_id);
    set_hs(r, r->hs.epoch, r->hs.voted_for, r->cfg.node_id);
    r->role = RAFT_LEADER;
    r->leader_since_ms = now_ms;
    r->next_begin_ms = now_ms;   /* BeginQuorumEpoch goes out this step */
    for (size_t i = 0; i < r->cfg.n_voters; i++) {
        raft_peer_t *p = &r->voters[i];
        p->match_end = -1;
        p->last_fetch_ms = -1;
        p->last_caught_up_ms = -1;
        p->begin_acked = p->id == r->cfg.node_id;
        p->probe = false;
    }
    r->n_observers = 0;
    /* The LeaderChange entry: the first entry of the epoch, so that older
     * entries commit by the current-epoch counting rule. Exempt from the
     * proposal bounds (one per won election). */
    int rc = rlog_append(&r->log, r->hs.epoch, RAFT_ENTRY_LEADER_CHANGE, NULL, 0);
    assert(rc == RAFT_OK);
    raft_leader_update_hw(r);
}

static void send_votes(raft_t *r, bool prevote) {
    for (size_t i = 0; i < r->cfg.n_voters; i++) {
        int32_t id = r->cfg.voters[i];
        if (id == r->cfg.node_id) continue;
        raft_msg_t m = raft_msg_new(r, RAFT_MSG_VOTE_REQ, id);
        m.u.vote_req.prevote = prevote;
        if (prevote) {   /* the epoch it would run for */
            m.epoch = r->hs.epoch + 1;
            m.leader_id = RAFT_NO_NODE;
        }
        m.u.vote_req.last_epoch = rlog_last_epoch(&r->log);
        m.u.vote_req.log_end = rlog_end(&r->log);
        raft_emit(r, &m);
    }
}

static void become_candidate(raft_t *r, int64_t now_ms) {
    assert(r->is_voter);
    assert(r->hs.epoch < RAFT_EPOCH_MAX);   /* raft_election_timers */
    set_hs(r, r->hs.epoch + 1, r->cfg.node_id, RAFT_NO_NODE);
    r->role = RAFT_CANDIDATE;
    r->election_deadline_ms = now_ms + raft_random_timeout(r);
    clear_votes(r);
    r->votes_granted[raft_voter_index(r, r->cfg.node_id)] = true;
    if (count_granted(r) >= raft_majority(r)) {
        become_leader(r, now_ms);
        return;
    }
    send_votes(r, false);
}

void raft_become_prospective(raft_t *r, int64_t now_ms) {
    assert(r->is_voter);
    r->role = RAFT_PROSPECTIVE;
    r->election_deadline_ms = now_ms + raft_random_timeout(r);
    clear_votes(r);
    r->votes_granted[raft_voter_index(r, r->cfg.node_id)] = true;
    abort_snapshot_fetch(r);
    if (count_granted(r) >= raft_majority(r)) {
        become_candidate(r, now_ms);
        return;
    }
    send_votes(r, true);
}

void raft_resign(raft_t *r, int64_t now_ms) {
    assert(r->role == RAFT_LEADER);
    r->role = RAFT_RESIGNED;
    r->election_deadline_ms = now_ms + raft_random_timeout(r);
    /* successors: voters by replicated offset, most caught-up first; ties
     * (an idle log) in ring order after this node, so that repeated
     * resignations visit every voter instead of bouncing between the two
     * lowest ids (the stable insertion below keeps that order) */
    int32_t succ[RAFT_VOTERS_MAX];
    int64_t match[RAFT_VOTERS_MAX];
    uint32_t n = 0;
    size_t self = 0;
    for (size_t i = 0; i < r->cfg.n_voters; i++)
        if (r->voters[i].id == r->cfg.node_id) self = i;
    for (size_t k = 1; k <= r->cfg.n_voters; k++) {
        size_t i = (self + k) % r->cfg.n_voters;
        if (r->voters[i].id == r->cfg.node_id) continue;
        uint32_t j = n++;
        while (j > 0 && match[j - 1] < r->voters[i].match_end) {
            succ[j] = succ[j - 1];
            match[j] = match[j - 1];
            j--;
        }
        succ[j] = r->voters[i].id;
        match[j] = r->voters[i].match_end;
    }
    for (uint32_t i = 0; i < n; i++) {
        raft_msg_t m = raft_msg_new(r, RAFT_MSG_END_EPOCH_REQ, succ[i]);
        memcpy(m.u.end_req.successors, succ, n * sizeof succ[0]);
        m.u.end_req.n_successors = n;
        raft_emit(r, &m);
    }
}

/* KIP-996: a leader we heard from within the fetch timeout (or we are the
 * leader: check quorum resigns us once a majority stops fetching). */
static bool leader_alive(const raft_t *r, int64_t now_ms) {
    if (r->role == RAFT_LEADER) return true;
    return r->role == RAFT_FOLLOWER && !r->leader_gone && now_ms < r->fetch_deadline_ms;
}

void raft_on_epoch(raft_t *r, const raft_msg_t *m, int64_t now_ms) {
    if (m->type == RAFT_MSG_VOTE_REQ && m->u.vote_req.prevote) return;
    /* As in KRaft, a Fetch from a higher epoch is answered UNKNOWN_LEADER_EPOCH
     * and changes nothing: we will hear from that epoch's leader itself, and
     * an observer can never disturb the voters. */
    if (m->type == RAFT_MSG_FETCH_REQ || m->type == RAFT_MSG_SNAP_REQ) return;
    /* While our leader is alive, a request for a higher epoch is rejected
     * instead of followed (KIP-996): a real election needs a majority that
     * lost the leader, so at worst this delays following a new leader until
     * our own fetch timeout, while a stray or forged request (any client can
     * reach the controller port) cannot move a healthy quorum's epoch. The
     * rejection carries our epoch and leader. */
    if (m->type % 2 == 0 && m->epoch > r->hs.epoch && leader_alive(r, now_ms)) return;
    /* An EndQuorumEpoch only means something for the epoch we are in (its
     * leader resigns); one for another epoch tells us nothing to act on. */
    if (m->type == RAFT_MSG_END_EPOCH_REQ && m->epoch != r->hs.epoch) return;
    /* A second leader named for our epoch contradicts the one we know: at
     * most one was elected, so one of the two claims is stale or forged.
     * The one we know stands if it answered us as leader (or is us). Else
     * the new claim replaces it when it comes from the claimant itself (its
     * BeginQuorumEpoch, or an answer to us) or when the leader we know
     * answers us naming another: a forged claim cannot keep a node from the
     * real leader of the epoch. */
    if (m->epoch == r->hs.epoch && m->leader_id != RAFT_NO_NODE && r->hs.leader_id != RAFT_NO_NODE &&
        m->leader_id != r->hs.leader_id) {
        bool resp = m->type % 2 == 1;
        bool claimant = m->from == m->leader_id && m->error == RAFT_KERR_NONE &&
                        (resp || m->type == RAFT_MSG_BEGIN_EPOCH_REQ);
        bool denied = resp && m->from == r->hs.leader_id;
        /* naming us: we know whether we lead this epoch (we do not: we
         * know another leader for it) */
        if (r->leader_confirmed || (!claimant && !denied) || m->leader_id == r->cfg.node_id) return;
        assert(r->role != RAFT_LEADER && r->hs.leader_id != r->cfg.node_id);
        r->hs.leader_id = m->leader_id;   /* unconfirmed: may be replaced */
        r->hs_dirty = true;
        r->leader_gone = false;
        /* A claim is not contact with a leader: a follower keeps its fetch
         * deadline (else two phantom leaders naming each other, or a forger
         * alternating claims, keep it following nobody for ever), and only
         * the claimant itself makes a campaigning node follow. */
        if (r->role == RAFT_FOLLOWER) {
            r->next_fetch_ms = now_ms;
            abort_snapshot_fetch(r);
        } else if (claimant) {
            raft_become_follower(r, m->epoch, m->leader_id, now_ms);
        }
        return;
    }
    if (m->epoch > r->hs.epoch) {
        if (m->leader_id != RAFT_NO_NODE && m->leader_id != r->cfg.node_id)
            raft_become_follower(r, m->epoch, m->leader_id, now_ms);
        else
            raft_become_unattached(r, m->epoch, now_ms);
        return;
    }
    if (m->epoch == r->hs.epoch && m->leader_id != RAFT_NO_NODE &&
        m->leader_id != r->cfg.node_id && r->role != RAFT_FOLLOWER) {
        /* The leader of this epoch is known: stop campaigning and follow.
         * Once we believe it resigned, only a message from the leader itself
         * counts (a resigned leader never names itself): the belief may come
         * from a late reply sent before the leader was elected. */
        bool from_leader = m->from == m->leader_id && m->error == RAFT_KERR_NONE;
        if (r->leader_gone && !from_leader) return;
        /* A prospective node timed out on that leader itself: another voter
         * merely naming it (a pre-vote reply from a follower whose own fetch
         * timeout has not expired yet) must not pull it back, or two
         * survivors of a crashed leader take turns rejecting each other's
         * pre-votes forever (fetch timeouts carry no jitter). */
        if (r->role == RAFT_PROSPECTIVE && !from_leader) return;
        r->leader_gone = false;
        assert(r->role != RAFT_LEADER);
        assert(r->hs.leader_id == RAFT_NO_NODE || r->hs.leader_id == m->leader_id);
        raft_become_follower(r, m->epoch, m->leader_id, now_ms);
    }
}

/* Is a log ending at (last_epoch, end) at least as up to date as ours? */
static bool log_ok(const raft_t *r, int32_t last_epoch, int64_t end) {
    int32_t mine = rlog_last_epoch(&r->log);
    return last_epoch > mine || (last_epoch == mine && end >= rlog_end(&r->log));
}

static bool grant_prevote(const raft_t *r, const raft_msg_t *m, int64_t now_ms) {
    if (m->epoch <= r->hs.epoch) return false;   /* the candidate is behind */
    if (r->role == RAFT_LEADER) return false;
    if (r->role == RAFT_FOLLOWER && now_ms < r->fetch_deadline_ms) return false;
    return log_ok(r, m->u.vote_req.last_epoch, m->u.vote_req.log_end);
}

static bool grant_vote(const raft_t *r, const raft_msg_t *m) {
    if (m->epoch != r->hs.epoch) return false;
    if (r->hs.leader_id != RAFT_NO_NODE) return false;
    if (r->hs.voted_for != RAFT_NO_NODE && r->hs.voted_for != m->from) return false;
    return log_ok(r, m->u.vote_req.last_epoch, m->u.vote_req.log_end);
}

/* A voter that asks the leader for a higher epoch while it has not fetched
 * within the fetch timeout may be stranded in an epoch ahead of ours (a
 * vote it granted in an election that someone else won at a lower epoch,
 * or a request it could not tell from a forged one). It cannot come back:
 * epochs never go down, and with KIP-996 nobody with a live leader follows
 * it up. So the leader asks it directly with a BeginQuorumEpoch: the real
 * node answers with its own epoch, and a higher one makes us step down to
 * it (raft_on_epoch), so the next election runs above it. The request
 * itself changes nothing: a forged one from the id of a node that is down
 * only costs a BeginQuorumEpoch nobody answers. */
static void maybe_probe(raft_t *r, const raft_msg_t *m, int64_t now_ms) {
    if (r->role != RAFT_LEADER || m->epoch <= r->hs.epoch) return;
    int idx = raft_voter_index(r, m->from);
    if (idx < 0) return;
    raft_peer_t *p = &r->voters[idx];
    int64_t seen = p->last_fetch_ms > r->leader_since_ms ? p->last_fetch_ms : r->leader_since_ms;
    if (now_ms - seen < r->cfg.fetch_timeout_ms) return;
    if (!p->probe) r->next_begin_ms = now_ms;
    p->probe = true;
}

void raft_on_vote_req(raft_t *r, const raft_msg_t *m, int64_t now_ms) {
    bool prevote = m->u.vote_req.prevote;
    maybe_probe(r, m, now_ms);
    bool granted = false;
    if (r->is_voter && raft_voter_index(r, m->from) >= 0) {
        granted = prevote ? grant_prevote(r, m, now_ms) : grant_vote(r, m);
        if (granted && !prevote) {
            set_hs(r, r->hs.epoch, m->from, RAFT_NO_NODE);
            r->role = RAFT_UNATTACHED;
            r->election_deadline_ms = now_ms + raft_random_timeout(r);
        }
    }
    raft_msg_t resp = raft_msg_new(r, RAFT_MSG_VOTE_RESP, m->from);
    resp.u.vote_resp.prevote = prevote;
    resp.u.vote_resp.granted = granted;
    raft_emit(r, &resp);
}

void raft_on_vote_resp(raft_t *r, const raft_msg_t *m, int64_t now_ms) {
    int idx = raft_voter_index(r, m->from);
    if (idx < 0) return;
    bool prevote = m->u.vote_resp.prevote;
    if (prevote ? r->role != RAFT_PROSPECTIVE : r->role != RAFT_CANDIDATE) return;
    /* a real vote is only valid in our epoch; a pre-vote may come from a
     * voter that lags behind in epochs (pre-votes only gate liveness) */
    if (prevote ? m->epoch > r->hs.epoch : m->epoch != r->hs.epoch) return;
    if (!m->u.vote_resp.granted) {
        r->votes_rejected[idx] = true;
        return;
    }
    r->votes_granted[idx] = true;
    if (count_granted(r) < raft_majority(r)) return;
    if (prevote)
        become_candidate(r, now_ms);
    else
        become_leader(r, now_ms);
}

void raft_on_begin_req(raft_t *r, const raft_msg_t *m, int64_t now_ms) {
    (void)now_ms;
    raft_msg_t resp = raft_msg_new(r, RAFT_MSG_BEGIN_EPOCH_RESP, m->from);
    if (m->epoch < r->hs.epoch) resp.error = RAFT_KERR_FENCED_LEADER_EPOCH;
    /* Nothing else: raft_on_epoch made us follow the sender if it may (a
     * request for a higher epoch while our leader is alive, or naming a
     * second leader for ours, it left alone). A BeginQuorumEpoch does not
     * extend the fetch deadline: only answers to our own Fetches show a live
     * leader, and anyone can send a BeginQuorumEpoch naming a dead one. */
    raft_emit(r, &resp);
}

void raft_on_begin_resp(raft_t *r, const raft_msg_t *m, int64_t now_ms) {
    (void)now_ms;
    int idx = raft_voter_index(r, m->from);
    if (r->role != RAFT_LEADER || idx < 0 || m->epoch != r->hs.epoch || m->error) return;
    r->voters[idx].begin_acked = true;
}

void raft_on_end_req(raft_t *r, const raft_msg_t *m, int64_t now_ms) {
    raft_msg_t resp = raft_msg_new(r, RAFT_MSG_END_EPOCH_RESP, m->from);
    if (m->epoch < r->hs.epoch) resp.error = RAFT_KERR_FENCED_LEADER_EPOCH;
    raft_emit(r, &resp);
    if (m->epoch != r->hs.epoch || r->role != RAFT_FOLLOWER || m->from != r->hs.leader_id)
        return;
    if (!r->is_voter) return;
    /* The leader is gone: stand for election now if we are its first choice,
     * later the further down the list we are, so the best log usually wins. */
    uint32_t pos = 0;
    while (pos < m->u.end_req.n_successors && pos < RAFT_VOTERS_MAX &&
           m->u.end_req.successors[pos] != r->cfg.node_id)
        pos++;
    raft_leader_gone(r, now_ms);
    r->election_deadline_ms = now_ms + (int64_t)pos * (r->cfg.election_timeout_ms / 4);
}

void raft_leader_gone(raft_t *r, int64_t now_ms) {
    r->leader_gone = true;
    r->role = RAFT_UNATTACHED;
    r->next_fetch_ms = now_ms;
    r->election_deadline_ms = now_ms + raft_random_timeout(r) - r->cfg.election_timeout_ms;
    abort_snapshot_fetch(r);
}

static size_t voters_fetching(const raft_t *r, int64_t now_ms) {
    size_t n = 0;
    for (size_t i = 0; i < r->cfg.n_voters; i++) {
        const raft_peer_t *p = &r->voters[i];
        int64_t seen = p->last_fetch_ms > r->leader_since_ms ? p->last_fetch_ms
                                                             : r->leader_since_ms;
        if (p->id == r->cfg.node_id || now_ms - seen < r->cfg.fetch_timeout_ms) n++;
    }
    return n;
}

static void leader_timers(raft_t *r, int64_t now_ms) {
    if (voters_fetching(r, now_ms) < raft_majority(r)) {
        raft_resign(r, now_ms);   /* check quorum: we cannot commit anyway */
        return;
    }
    if (now_ms < r->next_begin_ms) return;
    r->next_begin_ms = now_ms + r->cfg.fetch_interval_ms;
    for (size_t i = 0; i < r->cfg.n_voters; i++) {
        const raft_peer_t *p = &r->voters[i];
        if (!p->probe && (p->begin_acked || p->last_fetch_ms >= r->leader_since_ms)) continue;
        raft_msg_t m = raft_msg_new(r, RAFT_MSG_BEGIN_EPOCH_REQ, p->id);
        raft_emit(r, &m);
    }
}

void raft_election_timers(raft_t *r, int64_t now_ms) {
    if (r->role == RAFT_LEADER) {
        leader_timers(r, now_ms);
        return;
    }
    if (!r->is_voter) {
        if (r->role == RAFT_FOLLOWER && now_ms >= r->fetch_deadline_ms) {
            /* lost the leader: go back to discovering it */
            r->role = RAFT_UNATTACHED;
            r->next_fetch_ms = now_ms;
        }
        return;
    }
    /* no epoch after RAFT_EPOCH_MAX: a node there never campaigns (messages
     * above it are refused, and it takes ~2^31 elections to get there) */
    if (r->hs.epoch >= RAFT_EPOCH_MAX) return;
    if (r->role == RAFT_FOLLOWER) {
        if (now_ms >= r->fetch_deadline_ms) raft_become_prospective(r, now_ms);
        return;
    }
    if (now_ms >= r->election_deadline_ms) raft_become_prospective(r, now_ms);
}
