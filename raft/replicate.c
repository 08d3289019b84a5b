/* replicate.c — pull replication (KIP-595 Fetch), the high watermark,
 * FetchSnapshot, proposals and snapshot bookkeeping.
 *
 * Leader: validates (fetch_offset, last_fetched_epoch) against its epoch
 * history; a valid fetch proves the follower's log equals the leader's below
 * fetch_offset, so fetch_offset is that voter's replicated end. The HW is the
 * largest end replicated on a majority (the leader's own end counts only once
 * durable) and moves only when the entry below it is of the current epoch.
 *
 * Follower: fetches only when its whole log is durable (so fetch_offset never
 * overstates what survives a crash), matches each response to the request by
 * its echoed (fetch_offset, last_epoch), truncates on a diverging hint and
 * downloads a snapshot when told its offset is below the leader's log start. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "raft/raft_int.h"

static raft_peer_t *peer_for(raft_t *r, int32_t id) {
    int idx = raft_voter_index(r, id);
    if (idx >= 0) return &r->voters[idx];
    for (size_t i = 0; i < r->n_observers; i++)
        if (r->observers[i].id == id) return &r->observers[i];
    if (r->n_observers == RAFT_OBSERVERS_MAX) return NULL;   /* served, untracked */
    raft_peer_t *p = &r->observers[r->n_observers++];
    memset(p, 0, sizeof *p);
    p->id = id;
    p->match_end = -1;
    p->last_fetch_ms = -1;
    p->last_caught_up_ms = -1;
    return p;
}

/* Cost: O(voters^2) insertion sort per call, voters <= RAFT_VOTERS_MAX. */
void raft_leader_update_hw(raft_t *r) {
    assert(r->role == RAFT_LEADER);
    int64_t ends[RAFT_VOTERS_MAX];
    size_t n = r->cfg.n_voters;
    for (size_t i = 0; i < n; i++) {
        int64_t v = r->voters[i].id == r->cfg.node_id ? r->persisted_end : r->voters[i].match_end;
        size_t j = i;
        while (j > 0 && ends[j - 1] < v) {
            ends[j] = ends[j - 1];
            j--;
        }
        ends[j] = v;
    }
    int64_t c = ends[raft_majority(r) - 1];
    if (c <= r->hw) return;
    assert(c - 1 >= r->log.start);
    /* Raft's rule: only entries of the current epoch commit by counting */
    if (rlog_at(&r->log, c - 1)->epoch != r->hs.epoch) return;
    raft_set_hw(r, c);
}

typedef enum { FETCH_VALID, FETCH_DIVERGING, FETCH_SNAPSHOT } fetch_verdict_t;

static fetch_verdict_t validate_fetch(const raft_t *r, int64_t fo, int32_t lfe,
                                      rlog_epoch_end_t *div) {
    const rlog_t *l = &r->log;
    if (fo < l->start) return FETCH_SNAPSHOT;
    if (fo == l->start)
        return fo == 0 || lfe == l->snap.epoch ? FETCH_VALID : FETCH_SNAPSHOT;
    *div = rlog_end_offset_for_epoch(l, lfe);
    if (!div->found) {
        if (l->start > 0) return FETCH_SNAPSHOT;
        div->epoch = 0;
        div->end_offset = 0;
        return FETCH_DIVERGING;
    }
    if (div->epoch != lfe || fo > div->end_offset) return FETCH_DIVERGING;
    return FETCH_VALID;
}

static void fill_entries(const raft_t *r, int64_t fo, raft_msg_t *resp) {
    int64_t end = rlog_end(&r->log);
    size_t bytes = 0;
    uint32_t n = 0;
    while (fo + n < end && n < r->cfg.fetch_entries_max) {
        const raft_entry_t *e = rlog_at(&r->log, fo + n);
        if (n > 0 && bytes + e->len > r->cfg.fetch_bytes_max) break;
        bytes += e->len;
        n++;
    }
    resp->u.fetch_resp.entries = n ? rlog_at(&r->log, fo) : NULL;
    resp->u.fetch_resp.n_entries = n;
}

static void leader_record_fetch(raft_t *r, raft_peer_t *p, int64_t fo, int64_t now_ms) {
    if (p->match_end < fo) p->match_end = fo;
    if (fo >= rlog_end(&r->log)) p->last_caught_up_ms = now_ms;
    if (raft_voter_index(r, p->id) >= 0) raft_leader_update_hw(r);
}

void raft_on_fetch_req(raft_t *r, const raft_msg_t *m, int64_t now_ms) {
    int64_t fo = m->u.fetch_req.fetch_offset;
    int32_t lfe = m->u.fetch_req.last_fetched_epoch;
    raft_msg_t resp = raft_msg_new(r, RAFT_MSG_FETCH_RESP, m->from);
    resp.u.fetch_resp.req_fetch_offset = fo;
    resp.u.fetch_resp.req_last_epoch = lfe;
    resp.u.fetch_resp.log_start = r->log.start;
    resp.u.fetch_resp.high_watermark = r->hw;
    if (m->epoch < r->hs.epoch) {
        resp.error = RAFT_KERR_FENCED_LEADER_EPOCH;
    } else if (m->epoch > r->hs.epoch) {
        resp.error = RAFT_KERR_UNKNOWN_LEADER_EPOCH;
    } else if (r->role != RAFT_LEADER) {
        resp.error = RAFT_KERR_NOT_LEADER_OR_FOLLOWER;
    } else if (fo < 0 || lfe < 0 || lfe > r->hs.epoch) {
        resp.error = RAFT_KERR_POSITION_OUT_OF_RANGE;
    } else {
        raft_peer_t *p = peer_for(r, m->from);
        if (p != NULL) {
            p->last_fetch_ms = now_ms;
            p->probe = false;
        }
        rlog_epoch_end_t div = { false, 0, 0 };
        switch (validate_fetch(r, fo, lfe, &div)) {
        case FETCH_SNAPSHOT:
            resp.u.fetch_resp.need_snapshot = true;
            resp.u.fetch_resp.snapshot = r->log.snap;
            break;
        case FETCH_DIVERGING:
            resp.u.fetch_resp.diverging = true;
            resp.u.fetch_resp.diverging_epoch = div.epoch;
            resp.u.fetch_resp.diverging_end = div.end_offset;
            break;
        case FETCH_VALID:
            if (p != NULL) leader_record_fetch(r, p, fo, now_ms);
            fill_entries(r, fo, &resp);
            break;
        }
        resp.u.fetch_resp.high_watermark = r->hw;
    }
    raft_emit(r, &resp);
}

static bool resp_is_current(const raft_t *r, const raft_msg_t *m) {
    return r->role == RAFT_FOLLOWER && m->from == r->hs.leader_id && m->epoch == r->hs.epoch;
}

static void send_snap_req(raft_t *r, int64_t now_ms) {
    raft_msg_t m = raft_msg_new(r, RAFT_MSG_SNAP_REQ, r->hs.leader_id);
    m.u.snap_req.snapshot = r->snap_want;
    m.u.snap_req.position = r->snap_buf_len;
    raft_emit(r, &m);
    r->next_fetch_ms = now_ms + r->cfg.fetch_interval_ms;
}

static void follower_truncate(raft_t *r, int32_t epoch, int64_t end) {
    rlog_epoch_end_t mine = rlog_end_offset_for_epoch(&r->log, epoch);
    int64_t to = r->log.start;
    if (mine.found) to = mine.end_offset < end ? mine.end_offset : end;
    if (to < r->log.start) to = r->log.start;
    if (to > rlog_end(&r->log)) to = rlog_end(&r->log);
    raft_truncate(r, to);   /* asserts to >= HW: committed entries match */
}

static void follower_append(raft_t *r, const raft_msg_t *m) {
    uint32_t n = m->u.fetch_resp.n_entries;
    for (uint32_t i = 0; i < n; i++) {
        const raft_entry_t *e = &m->u.fetch_resp.entries[i];
        if (e->offset != rlog_end(&r->log) || e->epoch < rlog_last_epoch(&r->log)) break;
        if (e->epoch > r->hs.epoch || e->len > r->cfg.entry_bytes_max) break;
        if (r->log.n >= r->cfg.log_entries_max) break;   /* wait for a snapshot */
        if (rlog_append(&r->log, e->epoch, e->type, e->data, e->len) != RAFT_OK) break;
    }
    int64_t hw = m->u.fetch_resp.high_watermark;
    int64_t end = rlog_end(&r->log);
    raft_set_hw(r, hw < end ? hw : end);
}

void raft_on_fetch_resp(raft_t *r, const raft_msg_t *m, int64_t now_ms) {
    if (!resp_is_current(r, m) || r->snap_fetching) return;
    if (m->error == RAFT_KERR_NOT_LEADER_OR_FOLLOWER && m->leader_id == RAFT_NO_NODE) {
        raft_leader_gone(r, now_ms);   /* our leader resigned or restarted */
        return;
    }
    if (m->error != RAFT_KERR_NONE) return;   /* re-sent after fetch_interval */
    if (m->leader_id == m->from) r->leader_confirmed = true;
    if (m->u.fetch_resp.req_fetch_offset != rlog_end(&r->log) ||
        m->u.fetch_resp.req_last_epoch != rlog_last_epoch(&r->log))
        return;   /* answers a request we no longer stand behind */
    r->fetch_deadline_ms = now_ms + r->cfg.fetch_timeout_ms;
    if (m->u.fetch_resp.need_snapshot) {
        if (m->u.fetch_resp.snapshot.end_offset <= rlog_end(&r->log)) return;
        r->snap_fetching = true;
        r->snap_want = m->u.fetch_resp.snapshot;
        r->snap_buf_len = 0;
        send_snap_req(r, now_ms);
        return;
    }
    if (m->u.fetch_resp.diverging) {
        follower_truncate(r, m->u.fetch_resp.diverging_epoch, m->u.fetch_resp.diverging_end);
        r->next_fetch_ms = now_ms;
        return;
    }
    follower_append(r, m);
    r->next_fetch_ms = m->u.fetch_resp.n_entries ? now_ms : now_ms + r->cfg.fetch_interval_ms;
}

void raft_on_snap_req(raft_t *r, const raft_msg_t *m, int64_t now_ms) {
    raft_msg_t resp = raft_msg_new(r, RAFT_MSG_SNAP_RESP, m->from);
    raft_snapshot_id_t want = m->u.snap_req.snapshot;
    int64_t pos = m->u.snap_req.position;
    resp.u.snap_resp.snapshot = want;
    resp.u.snap_resp.position = pos;
    if (m->epoch < r->hs.epoch) {
        resp.error = RAFT_KERR_FENCED_LEADER_EPOCH;
    } else if (m->epoch > r->hs.epoch) {
        resp.error = RAFT_KERR_UNKNOWN_LEADER_EPOCH;
    } else if (r->role != RAFT_LEADER) {
        resp.error = RAFT_KERR_NOT_LEADER_OR_FOLLOWER;
    } else if (r->log.snap.end_offset == 0 || want.end_offset != r->log.snap.end_offset ||
               want.epoch != r->log.snap.epoch) {
        resp.error = RAFT_KERR_SNAPSHOT_NOT_FOUND;
    } else if (pos < 0 || pos > (int64_t)r->snap_len) {
        resp.error = RAFT_KERR_POSITION_OUT_OF_RANGE;
    } else {
        raft_peer_t *p = peer_for(r, m->from);
        if (p != NULL) {
            p->last_fetch_ms = now_ms;
            p->probe = false;
        }
        size_t len = r->snap_len - (size_t)pos;
        if (len > r->cfg.fetch_bytes_max) len = r->cfg.fetch_bytes_max;
        resp.u.snap_resp.size = r->snap_len;
        resp.u.snap_resp.data = r->snap_data + pos;
        resp.u.snap_resp.len = (uint32_t)len;
    }
    raft_emit(r, &resp);
}

static void install_snapshot(raft_t *r) {
    raft_snapshot_id_t id = r->snap_want;
    assert(id.end_offset > rlog_end(&r->log));
    assert(id.end_offset > r->hw);
    free(r->snap_data);
    r->snap_data = r->snap_buf;
    r->snap_len = r->snap_buf_len;
    r->snap_buf = NULL;
    r->snap_buf_len = 0;
    r->snap_buf_size = 0;
    r->snap_fetching = false;
    rlog_drop_prefix(&r->log, &id);   /* empties the log: it restarts at id */
    r->persisted_end = id.end_offset;
    r->unsaved_from = id.end_offset;
    r->truncate_pending = false;
    r->snap_install_pending = true;
    raft_set_hw(r, id.end_offset);
}

static bool snap_chunk_ok(const raft_t *r, const raft_msg_t *m) {
    const raft_snapshot_id_t *id = &m->u.snap_resp.snapshot;
    int64_t size = m->u.snap_resp.size;
    if (id->end_offset != r->snap_want.end_offset || id->epoch != r->snap_want.epoch) return false;
    if (m->u.snap_resp.position != r->snap_buf_len) return false;
    if (size < 0 || (uint64_t)size > r->cfg.snapshot_bytes_max) return false;
    if (r->snap_buf_len > 0 && size != r->snap_buf_size) return false;
    return m->u.snap_resp.position + m->u.snap_resp.len <= size;
}

void raft_on_snap_resp(raft_t *r, const raft_msg_t *m, int64_t now_ms) {
    if (!resp_is_current(r, m) || !r->snap_fetching) return;
    if (m->error != RAFT_KERR_NONE) {
        r->snap_fetching = false;   /* start over from a Fetch */
        r->snap_buf_len = 0;
        r->next_fetch_ms = now_ms + r->cfg.fetch_interval_ms;
        return;
    }
    if (m->leader_id == m->from) r->leader_confirmed = true;
    if (!snap_chunk_ok(r, m)) return;
    r->fetch_deadline_ms = now_ms + r->cfg.fetch_timeout_ms;
    uint32_t size = (uint32_t)m->u.snap_resp.size;
    if (r->snap_buf_len == 0) {
        free(r->snap_buf);
        r->snap_buf = malloc(size ? size : 1);
        if (r->snap_buf == NULL) {
            r->snap_fetching = false;
            return;
        }
        r->snap_buf_size = size;
    }
    if (m->u.snap_resp.len) memcpy(r->snap_buf + r->snap_buf_len, m->u.snap_resp.data,
                                   m->u.snap_resp.len);
    r->snap_buf_len += m->u.snap_resp.len;
    if (r->snap_buf_len < size) {
        send_snap_req(r, now_ms);
        return;
    }
    install_snapshot(r);
    r->next_fetch_ms = now_ms;
}

static void send_fetch(raft_t *r, int32_t to, int64_t now_ms) {
    raft_msg_t m = raft_msg_new(r, RAFT_MSG_FETCH_REQ, to);
    m.u.fetch_req.fetch_offset = rlog_end(&r->log);
    m.u.fetch_req.last_fetched_epoch = rlog_last_epoch(&r->log);
    raft_emit(r, &m);
    r->next_fetch_ms = now_ms + r->cfg.fetch_interval_ms;
}

void raft_replication_timers(raft_t *r, int64_t now_ms) {
    if (now_ms < r->next_fetch_ms) return;
    if (r->persisted_end != rlog_end(&r->log)) return;   /* wait for PERSISTED */
    if (r->role == RAFT_FOLLOWER) {
        if (r->snap_fetching)
            send_snap_req(r, now_ms);
        else
            send_fetch(r, r->hs.leader_id, now_ms);
        return;
    }
    if (!r->is_voter && r->role == RAFT_UNATTACHED) {
        /* observer discovering the leader: any voter's answer names it */
        int32_t to = r->cfg.voters[r->observer_rr++ % r->cfg.n_voters];
        send_fetch(r, to, now_ms);
    }
}

int raft_propose(raft_t *r, const raft_event_t *ev) {
    if (r->role != RAFT_LEADER) return RAFT_ERR_NOT_LEADER;
    uint32_t n = ev->u.propose.n;
    if (n == 0) return RAFT_ERR_BAD_VALUE;
    if ((size_t)(rlog_end(&r->log) - r->hw) + n > r->cfg.pending_entries_max) return RAFT_ERR_TOO_MANY;
    if (r->log.n + n > r->cfg.log_entries_max) return RAFT_ERR_TOO_MANY;
    for (uint32_t i = 0; i < n; i++)
        if (ev->u.propose.len[i] > r->cfg.entry_bytes_max) return RAFT_ERR_TOO_LARGE;
    int64_t first = rlog_end(&r->log);
    for (uint32_t i = 0; i < n; i++) {
        int rc = rlog_append(&r->log, r->hs.epoch, RAFT_ENTRY_DATA, ev->u.propose.data[i],
                             ev->u.propose.len[i]);
        if (rc != RAFT_OK) return rc;   /* earlier entries stay: they are valid */
    }
    r->rd->propose_first_offset = first;
    r->rd->propose_last_offset = rlog_end(&r->log) - 1;
    return RAFT_OK;
}

int raft_snapshot_taken(raft_t *r, const raft_event_t *ev) {
    raft_snapshot_id_t id = ev->u.snapshot.id;
    if (id.end_offset <= r->log.start || id.end_offset > r->hw) return RAFT_ERR_BAD_VALUE;
    if (rlog_at(&r->log, id.end_offset - 1)->epoch != id.epoch) return RAFT_ERR_BAD_VALUE;
    if (ev->u.snapshot.len > r->cfg.snapshot_bytes_max) return RAFT_ERR_TOO_LARGE;
    uint8_t *copy = malloc(ev->u.snapshot.len ? ev->u.snapshot.len : 1);
    if (copy == NULL) return RAFT_ERR_NOMEM;
    if (ev->u.snapshot.len) memcpy(copy, ev->u.snapshot.data, ev->u.snapshot.len);
    free(r->snap_data);
    r->snap_data = copy;
    r->snap_len = ev->u.snapshot.len;
    rlog_drop_prefix(&r->log, &id);
    return RAFT_OK;
}
