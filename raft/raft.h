/* raft.h — the pure KRaft-style consensus core (KIP-595 + pre-vote KIP-996).
 *
 * The core is a state machine: raft_step(state, event, now_ms) returns a
 * raft_ready_t saying what the driver must do. It never reads a clock, a
 * socket or a file, and its only randomness is a PRNG seeded from the config,
 * so a run replays exactly from (seed, event sequence).
 *
 * Offsets follow Kafka: the log holds offsets [log_start, log_end); the high
 * watermark (HW) is the first offset that is NOT committed, so an entry at
 * offset o is committed once o < HW.
 *
 * The driver loop (one thread, the node's event loop):
 *
 *     raft_ready_t rd = raft_step(r, &ev, now_ms);
 *     1. if rd.hard_state_changed: write + fsync rd.hard_state (quorum-state)
 *     2. if rd.snapshot_install:   write + fsync rd.snapshot (replaces state)
 *     3. if rd.truncate:           truncate the log to rd.truncate_to (durably)
 *     4. append rd.entries[0..n_entries) (written; may be fsynced later, then
 *        report RAFT_EV_PERSISTED with the durable end offset)
 *     5. if rd.log_start_changed:  may delete the log prefix < rd.log_start
 *     6. send rd.msgs[0..n_msgs) (the driver copies what it sends)
 *     7. apply committed entries up to rd.high_watermark
 *     8. raft_advance(r, &rd)
 *
 * Between 5 and 6 the driver calls raft_ready_persisted(&rd), after 6
 * raft_ready_sent(&rd); raft_ready_sent and raft_advance assert the order.
 *
 * Messages never depend on log entries that are not yet durable: a leader
 * counts its own log end for the HW only up to the PERSISTED offset, and a
 * follower sends a Fetch only when its whole log is durable. Messages DO
 * depend on rd.hard_state (a vote, a new epoch), which is why steps 1-3 come
 * before step 6. raft_advance asserts that the ready it gets is the one most
 * recently returned, and raft_step asserts that the previous ready was
 * advanced, so a driver cannot interleave two readies.
 *
 * Pointers inside a ready (entries, message entries, snapshot bytes) point
 * into the core and stay valid until raft_advance; the driver copies them.
 */
#ifndef SKIFF_RAFT_H
#define SKIFF_RAFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RAFT_MUST_CHECK __attribute__((warn_unused_result))

/* Bounds (compile-time; per-run limits live in raft_config_t). */
#define RAFT_VOTERS_MAX 7          /* voters in the quorum */
#define RAFT_OBSERVERS_MAX 16      /* observers the leader tracks */
#define RAFT_READY_MSGS_MAX 32     /* messages one step may emit */
#define RAFT_NO_NODE (-1)
#define RAFT_CLUSTER_ID_MAX 64     /* bytes of a cluster id (Kafka's are 22) */
/* The highest epoch a node ever enters. A message naming a higher one is
 * refused: from INT32_MAX no election could follow (the next epoch does not
 * fit), so a node pushed there would be wedged for good. */
#define RAFT_EPOCH_MAX (INT32_MAX - 1)
/* How far above our epoch an election request (Vote, BeginQuorumEpoch,
 * EndQuorumEpoch) may be before it is refused. With pre-vote an epoch grows
 * by one per election, and a voter that fell far behind catches up from the
 * responses to its own requests (which cannot be forged on the wire), so
 * this only bounds how many epochs one forged request can burn. */
#define RAFT_EPOCH_JUMP_MAX 1000

/* Status codes of the raft layer (0 = success): X(NAME, value, description).
 * The range is raft's share of skiff's status space (the table above
 * KP_STATUS_LIST in protocol/kp_wire.h; the core includes only libc, so the
 * check against the other ranges is in broker/core/status.h). */
#define RAFT_STATUS_MIN (-59)
#define RAFT_STATUS_MAX (-40)
#define RAFT_STATUS_LIST(X) \
    X(RAFT_ERR_NOT_LEADER, -40, "not the raft leader")      /* propose on a node that is not the leader */ \
    X(RAFT_ERR_TOO_MANY, -41, "raft proposal bound reached") /* pending-proposal / log bound reached */ \
    X(RAFT_ERR_TOO_LARGE, -42, "raft payload too large")    /* payload or snapshot over its byte bound */ \
    X(RAFT_ERR_NOMEM, -43, "raft out of memory")                                                        \
    X(RAFT_ERR_BAD_VALUE, -44, "raft invalid argument")     /* e.g. snapshot beyond HW */

enum {
    RAFT_OK = 0,
#define RAFT_STATUS_ENUM_(name, value, text) name = value,
    RAFT_STATUS_LIST(RAFT_STATUS_ENUM_)
#undef RAFT_STATUS_ENUM_
};

#define RAFT_STATUS_IN_RANGE_(name, value, text) \
    _Static_assert((value) >= RAFT_STATUS_MIN && (value) <= RAFT_STATUS_MAX, #name " is outside RAFT_STATUS_MIN..MAX");
RAFT_STATUS_LIST(RAFT_STATUS_IN_RANGE_)
#undef RAFT_STATUS_IN_RANGE_

/* Description of a RAFT_ERR_* status ("ok" for RAFT_OK, "unknown status"
 * otherwise). Never NULL. */
const char *raft_status_str(int status);

/* Kafka error codes carried in raft messages (same numbers as on the wire). */
enum {
    RAFT_KERR_NONE = 0,
    RAFT_KERR_NOT_LEADER_OR_FOLLOWER = 6,
    RAFT_KERR_INVALID_REQUEST = 42,
    RAFT_KERR_FENCED_LEADER_EPOCH = 74,
    RAFT_KERR_UNKNOWN_LEADER_EPOCH = 75,
    RAFT_KERR_SNAPSHOT_NOT_FOUND = 98,
    RAFT_KERR_POSITION_OUT_OF_RANGE = 99,
    RAFT_KERR_INCONSISTENT_CLUSTER_ID = 104,
};

typedef enum raft_role {
    RAFT_UNATTACHED = 0,   /* no leader known in this epoch (may have voted) */
    RAFT_PROSPECTIVE,      /* running a pre-vote; epoch unchanged */
    RAFT_CANDIDATE,        /* bumped the epoch and voted for itself */
    RAFT_LEADER,
    RAFT_FOLLOWER,         /* knows the leader of its epoch and fetches */
    RAFT_RESIGNED,         /* was leader, stepped down; waits for the next epoch */
} raft_role_t;

typedef enum raft_entry_type {
    RAFT_ENTRY_DATA = 0,
    RAFT_ENTRY_LEADER_CHANGE = 1,  /* first entry of every leader epoch */
} raft_entry_type_t;

/* One log entry. In a ready or message, data points into the core. */
typedef struct raft_entry {
    int64_t offset;
    int32_t epoch;
    raft_entry_type_t type;
    const uint8_t *data;
    uint32_t len;
} raft_entry_t;

/* The `quorum-state` content; fsynced before any message that depends on it. */
typedef struct raft_hard_state {
    int32_t epoch;
    int32_t voted_for;   /* RAFT_NO_NODE if no vote cast in `epoch` */
    int32_t leader_id;   /* RAFT_NO_NODE if unknown in `epoch` */
} raft_hard_state_t;

/* A snapshot covers offsets < end_offset; epoch is the epoch of offset
 * end_offset-1. end_offset == 0 means "no snapshot". */
typedef struct raft_snapshot_id {
    int64_t end_offset;
    int32_t epoch;
} raft_snapshot_id_t;

typedef struct raft_config {
    int32_t node_id;
    char cluster_id[RAFT_CLUSTER_ID_MAX + 1];   /* requests must carry exactly
                                                   this one ("" in tests) */
    int32_t voters[RAFT_VOTERS_MAX];   /* node ids; node_id absent = observer */
    size_t n_voters;
    int64_t election_timeout_ms;       /* randomized in [t, 2t) */
    int64_t fetch_timeout_ms;          /* follower: no leader contact -> pre-vote;
                                          leader: no majority fetching -> resign */
    int64_t fetch_interval_ms;         /* re-send interval for Fetch / BeginEpoch */
    uint64_t seed;                     /* PRNG seed (election jitter) */
    size_t fetch_entries_max;          /* entries per Fetch response */
    size_t fetch_bytes_max;            /* payload bytes per Fetch response and
                                          per FetchSnapshot chunk */
    size_t log_entries_max;            /* entries held in the in-core log */
    size_t pending_entries_max;        /* leader: uncommitted entries */
    size_t entry_bytes_max;            /* one payload */
    size_t snapshot_bytes_max;         /* one snapshot image */
} raft_config_t;

/* Fills sane defaults (timeouts 1000/2000/100 ms etc.); caller sets node_id,
 * voters and seed afterwards. */
void raft_config_default(raft_config_t *c);

typedef enum raft_msg_type {
    RAFT_MSG_VOTE_REQ = 0,
    RAFT_MSG_VOTE_RESP,
    RAFT_MSG_BEGIN_EPOCH_REQ,
    RAFT_MSG_BEGIN_EPOCH_RESP,
    RAFT_MSG_END_EPOCH_REQ,
    RAFT_MSG_END_EPOCH_RESP,
    RAFT_MSG_FETCH_REQ,
    RAFT_MSG_FETCH_RESP,
    RAFT_MSG_SNAP_REQ,
    RAFT_MSG_SNAP_RESP,
    RAFT_MSG_TYPE_COUNT,
} raft_msg_type_t;

/* A raft RPC. Every message carries the sender's epoch and the leader it
 * knows for that epoch (Kafka's CurrentLeader), so any reply can fence. */
typedef struct raft_msg {
    raft_msg_type_t type;
    int32_t from;
    int32_t to;
    int32_t epoch;
    int32_t leader_id;
    int16_t error;          /* RAFT_KERR_* in responses */
    char cluster_id[RAFT_CLUSTER_ID_MAX + 1];   /* requests: the sender's
                                                   cluster (checked against
                                                   cfg.cluster_id); responses
                                                   carry none on the wire */
    union {
        struct {            /* Vote / PreVote request */
            bool prevote;
            int32_t last_epoch;       /* epoch of the candidate's last entry */
            int64_t log_end;          /* candidate's log end offset */
        } vote_req;
        struct {
            bool prevote;
            bool granted;
        } vote_resp;
        struct {            /* EndQuorumEpoch: successors, best first */
            int32_t successors[RAFT_VOTERS_MAX];
            uint32_t n_successors;
        } end_req;
        struct {
            int64_t fetch_offset;
            int32_t last_fetched_epoch;
        } fetch_req;
        struct {
            int64_t req_fetch_offset;     /* echo of the request: matches the */
            int32_t req_last_epoch;       /* reply to what the follower asked */
            int64_t high_watermark;
            int64_t log_start;
            bool diverging;               /* truncate to diverging_end */
            int32_t diverging_epoch;
            int64_t diverging_end;
            bool need_snapshot;           /* fetch snapshot `snapshot` first */
            raft_snapshot_id_t snapshot;
            const raft_entry_t *entries;
            uint32_t n_entries;
        } fetch_resp;
        struct {
            raft_snapshot_id_t snapshot;
            int64_t position;
        } snap_req;
        struct {
            raft_snapshot_id_t snapshot;
            int64_t size;
            int64_t position;
            const uint8_t *data;
            uint32_t len;
        } snap_resp;
    } u;
} raft_msg_t;

typedef enum raft_event_type {
    RAFT_EV_TICK = 0,        /* timers only */
    RAFT_EV_RECV,            /* a message arrived */
    RAFT_EV_PROPOSE,         /* leader: append entries */
    RAFT_EV_RESIGN,          /* leader: step down gracefully (EndQuorumEpoch) */
    RAFT_EV_PERSISTED,       /* log durable up to (exclusive) offset */
    RAFT_EV_SNAPSHOT_TAKEN,  /* a snapshot exists; core may drop the prefix */
} raft_event_type_t;

typedef struct raft_event {
    raft_event_type_t type;
    union {
        const raft_msg_t *msg;                 /* RECV */
        struct {                               /* PROPOSE */
            const uint8_t *const *data;
            const uint32_t *len;
            uint32_t n;
        } propose;
        int64_t persisted_end;                 /* PERSISTED: every entry below
                                                  it, in the log as it is now,
                                                  is durable. An fsync that
                                                  raced with a truncation
                                                  reports at most the
                                                  truncation offset. */
        struct {                               /* SNAPSHOT_TAKEN */
            raft_snapshot_id_t id;             /* end_offset <= HW */
            const uint8_t *data;
            uint32_t len;
        } snapshot;
    } u;
} raft_event_t;

/* What the driver must do after a step (order in the header comment). */
typedef struct raft_ready {
    uint64_t seq;                       /* identifies this ready for advance */
    bool hard_state_changed;
    raft_hard_state_t hard_state;
    bool snapshot_install;              /* follower: install this snapshot and */
    raft_snapshot_id_t snapshot;        /* reset the state machine to it      */
    const uint8_t *snapshot_data;
    uint32_t snapshot_len;
    bool truncate;                      /* drop log offsets >= truncate_to */
    int64_t truncate_to;
    const raft_entry_t *entries;        /* append, contiguous, after truncate */
    uint32_t n_entries;
    bool log_start_changed;             /* prefix < log_start may be deleted */
    int64_t log_start;
    bool hw_changed;
    int64_t high_watermark;
    int status;                         /* PROPOSE / SNAPSHOT_TAKEN result:
                                           RAFT_OK or RAFT_ERR_* */
    int64_t propose_first_offset;       /* PROPOSE: offsets given, inclusive */
    int64_t propose_last_offset;
    raft_msg_t msgs[RAFT_READY_MSGS_MAX];
    uint32_t n_msgs;
    bool done_persisted;                /* set by raft_ready_persisted */
    bool done_sent;                     /* set by raft_ready_sent */
} raft_ready_t;

/* The driver calls this once steps 1-5 are done: hard state, snapshot and
 * truncation durable, entries written. */
void raft_ready_persisted(raft_ready_t *rd);
/* The driver calls this after handing rd->msgs to the network. Asserts that
 * raft_ready_persisted came first: that is the persisted-before-send rule. */
void raft_ready_sent(raft_ready_t *rd);

typedef struct raft raft_t;

/* Creates a core from its durable state: the quorum-state `hs` (epoch 0 for
 * a fresh node), the latest snapshot (`snap` may be NULL; bytes copied) and
 * the durable log entries after it (copied; contiguous from snap->end_offset
 * or 0). Returns NULL on allocation failure or invalid input. Free with
 * raft_free. */
RAFT_MUST_CHECK raft_t *raft_new(const raft_config_t *cfg, const raft_hard_state_t *hs,
                                 const raft_snapshot_id_t *snap, const uint8_t *snap_data,
                                 uint32_t snap_len, const raft_entry_t *entries,
                                 size_t n_entries, int64_t now_ms);
void raft_free(raft_t *r);

/* Feeds one event; see the header comment for what the driver must do with
 * the result. The previous ready must have been advanced. */
raft_ready_t raft_step(raft_t *r, const raft_event_t *ev, int64_t now_ms);
/* Tells the core the driver did everything `done` asked. */
void raft_advance(raft_t *r, const raft_ready_t *done);

/* Read-only accessors. */
raft_role_t raft_role(const raft_t *r);
int32_t raft_epoch(const raft_t *r);
int32_t raft_leader(const raft_t *r);
int32_t raft_node_id(const raft_t *r);
int64_t raft_high_watermark(const raft_t *r);
int64_t raft_log_start(const raft_t *r);
int64_t raft_log_end(const raft_t *r);
raft_hard_state_t raft_hard_state(const raft_t *r);
raft_snapshot_id_t raft_snapshot(const raft_t *r);
/* Entry at `offset` (log_start <= offset < log_end), else NULL. Valid until
 * the next raft_step. */
const raft_entry_t *raft_entry_at(const raft_t *r, int64_t offset);
/* Next time the core wants a TICK (the driver may tick more often). */
int64_t raft_next_timer_ms(const raft_t *r);
const char *raft_role_str(raft_role_t role);
const char *raft_msg_type_str(raft_msg_type_t t);

/* DescribeQuorum data (meaningful on the leader; others report -1s). */
typedef struct raft_replica_state {
    int32_t node_id;
    int64_t log_end_offset;     /* -1 unknown */
    int64_t last_fetch_ms;      /* -1 never */
    int64_t last_caught_up_ms;  /* -1 never */
} raft_replica_state_t;

typedef struct raft_quorum_info {
    int32_t leader_id;
    int32_t leader_epoch;
    int64_t high_watermark;
    raft_replica_state_t voters[RAFT_VOTERS_MAX];
    size_t n_voters;
    raft_replica_state_t observers[RAFT_OBSERVERS_MAX];
    size_t n_observers;
} raft_quorum_info_t;

void raft_describe_quorum(const raft_t *r, raft_quorum_info_t *out);

#endif
