/* raft_int.h — internals shared by the raft/ .c files. Not a public header:
 * nothing outside raft/ includes it. */
#ifndef SKIFF_RAFT_INT_H
#define SKIFF_RAFT_INT_H

#include "raft/raft.h"

/* One epoch's start in the log: offsets [start, next.start) carry `epoch`. */
typedef struct rlog_epoch {
    int32_t epoch;
    int64_t start;
} rlog_epoch_t;

/* The in-core log: entries [start, start + n) with owned payload copies, the
 * epoch history of those entries, and the snapshot below `start`. */
typedef struct rlog {
    raft_entry_t *e;          /* e[i] holds offset start + i */
    size_t n;
    size_t cap;               /* <= log_entries_max + leader-change slack */
    int64_t start;
    raft_snapshot_id_t snap;  /* snap.end_offset == start whenever start > 0 */
    rlog_epoch_t *hist;       /* ascending epochs; hist[0].start >= start */
    size_t n_hist;
    size_t hist_cap;
} rlog_t;

int rlog_init(rlog_t *l, const raft_snapshot_id_t *snap);
void rlog_free(rlog_t *l);
static inline int64_t rlog_end(const rlog_t *l) { return l->start + (int64_t)l->n; }
/* Epoch of the entry at offset-1, i.e. the "last epoch" of a log ending at
 * `offset`; the snapshot epoch at start; 0 for an empty log from 0. */
int32_t rlog_epoch_before(const rlog_t *l, int64_t offset);
static inline int32_t rlog_last_epoch(const rlog_t *l) {
    return rlog_epoch_before(l, rlog_end(l));
}
const raft_entry_t *rlog_at(const rlog_t *l, int64_t offset);
/* Appends one entry at rlog_end (payload copied). RAFT_OK or RAFT_ERR_NOMEM. */
RAFT_MUST_CHECK int rlog_append(rlog_t *l, int32_t epoch, raft_entry_type_t type,
                                const uint8_t *data, uint32_t len);
/* Drops entries >= offset (start <= offset <= end). */
void rlog_truncate(rlog_t *l, int64_t offset);
/* Drops entries < snap->end_offset and records the snapshot. When the log
 * does not reach the snapshot's end, it is emptied and restarts there. */
void rlog_drop_prefix(rlog_t *l, const raft_snapshot_id_t *snap);
/* The largest epoch <= `epoch` known to this log and the end offset of that
 * epoch (start of the next epoch, or log end). found = false when every
 * epoch this log knows (including the snapshot's) is greater. */
typedef struct rlog_epoch_end {
    bool found;
    int32_t epoch;
    int64_t end_offset;
} rlog_epoch_end_t;
rlog_epoch_end_t rlog_end_offset_for_epoch(const rlog_t *l, int32_t epoch);

/* Per-replica progress as the leader sees it. */
typedef struct raft_peer {
    int32_t id;
    int64_t match_end;          /* validated fetch offset this epoch, -1 */
    int64_t last_fetch_ms;
    int64_t last_caught_up_ms;
    bool begin_acked;
    bool probe;                 /* asked for a higher epoch while not fetching:
                                   re-send BeginQuorumEpoch (election.c) */
} raft_peer_t;

struct raft {
    raft_config_t cfg;
    bool is_voter;
    raft_role_t role;
    raft_hard_state_t hs;
    bool hs_dirty;
    rlog_t log;
    int64_t persisted_end;      /* log durable below this */
    int64_t unsaved_from;       /* entries >= this not yet handed to driver */
    bool truncate_pending;
    int64_t truncate_to;
    int64_t hw;
    int64_t hw_reported;
    uint64_t rng;

    int64_t election_deadline_ms;
    int64_t fetch_deadline_ms;  /* follower: leader contact expires */
    int64_t next_fetch_ms;      /* follower/observer: next Fetch send */
    int64_t next_begin_ms;      /* leader: BeginQuorumEpoch re-send */
    int64_t leader_since_ms;
    bool votes_granted[RAFT_VOTERS_MAX];
    bool votes_rejected[RAFT_VOTERS_MAX];
    uint32_t observer_rr;
    bool leader_gone;           /* our epoch's leader resigned (EndQuorumEpoch) */
    bool leader_confirmed;      /* hs.leader_id answered one of our own
                                   requests as leader of hs.epoch (a request
                                   naming it may have been forged) */

    raft_peer_t voters[RAFT_VOTERS_MAX];
    raft_peer_t observers[RAFT_OBSERVERS_MAX];
    size_t n_observers;

    uint8_t *snap_data;         /* the latest snapshot image (owned) */
    uint32_t snap_len;
    bool snap_fetching;         /* follower: downloading snap_want */
    raft_snapshot_id_t snap_want;
    uint8_t *snap_buf;
    uint32_t snap_buf_len;
    uint32_t snap_buf_size;
    bool snap_install_pending;

    raft_ready_t *rd;           /* the ready being built by this step */
    uint64_t ready_seq;
    bool ready_outstanding;
};

/* core.c */
void raft_emit(raft_t *r, const raft_msg_t *m);
raft_msg_t raft_msg_new(const raft_t *r, raft_msg_type_t type, int32_t to);
int raft_voter_index(const raft_t *r, int32_t id);
size_t raft_majority(const raft_t *r);
int64_t raft_random_timeout(raft_t *r);
void raft_set_hw(raft_t *r, int64_t hw);
void raft_truncate(raft_t *r, int64_t offset);

/* election.c */
void raft_become_unattached(raft_t *r, int32_t epoch, int64_t now_ms);
void raft_become_follower(raft_t *r, int32_t epoch, int32_t leader, int64_t now_ms);
void raft_become_prospective(raft_t *r, int64_t now_ms);
void raft_resign(raft_t *r, int64_t now_ms);
/* The leader of our epoch stepped down; campaign after `delay_ms`. */
void raft_leader_gone(raft_t *r, int64_t now_ms);
void raft_on_epoch(raft_t *r, const raft_msg_t *m, int64_t now_ms);
void raft_on_vote_req(raft_t *r, const raft_msg_t *m, int64_t now_ms);
void raft_on_vote_resp(raft_t *r, const raft_msg_t *m, int64_t now_ms);
void raft_on_begin_req(raft_t *r, const raft_msg_t *m, int64_t now_ms);
void raft_on_begin_resp(raft_t *r, const raft_msg_t *m, int64_t now_ms);
void raft_on_end_req(raft_t *r, const raft_msg_t *m, int64_t now_ms);
void raft_election_timers(raft_t *r, int64_t now_ms);

/* replicate.c */
void raft_on_fetch_req(raft_t *r, const raft_msg_t *m, int64_t now_ms);
void raft_on_fetch_resp(raft_t *r, const raft_msg_t *m, int64_t now_ms);
void raft_on_snap_req(raft_t *r, const raft_msg_t *m, int64_t now_ms);
void raft_on_snap_resp(raft_t *r, const raft_msg_t *m, int64_t now_ms);
void raft_leader_update_hw(raft_t *r);
void raft_replication_timers(raft_t *r, int64_t now_ms);
int raft_propose(raft_t *r, const raft_event_t *ev);
int raft_snapshot_taken(raft_t *r, const raft_event_t *ev);

#endif
