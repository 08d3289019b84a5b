/* group.h — the classic group coordinator as pure functions.
 *
 * One bk_grp_coord_t is the coordinator state of ONE __consumer_offsets
 * partition that this node leads. Every call takes (state, request, now_ms)
 * and returns Kafka error codes, responses and the records to append to that
 * partition, collected in a bk_grp_out_t. No I/O, no clock reads, no globals;
 * one event-loop thread owns a coordinator.
 *
 * The driver's contract (see broker/README.md "Group coordinator"):
 *  1. Before a request, bk_grp_owner_error() says NOT_COORDINATOR /
 *     COORDINATOR_LOAD_IN_PROGRESS; every request function checks it too.
 *  2. After any call, append out->recs (in order) to the partition. Send
 *     out->resps and the call's direct results only once those records are
 *     committed (acks=all): an acknowledged commit is never lost.
 *  3. The state is updated at once, before the append. If an append fails,
 *     the driver must drop this coordinator (answer NOT_COORDINATOR) and
 *     rebuild it from the log: the log is the truth.
 *  4. JoinGroup and SyncGroup answers may be delayed. The driver passes an
 *     opaque token (e.g. its response slot) with each; the answer appears
 *     exactly once, in the out->resps of this call or of a later call (join,
 *     sync, leave, tick, ...), tagged with the token.
 *     A token is answered at most once; bk_grp_coord_free drops unanswered
 *     tokens (the driver answers them NOT_COORDINATOR itself).
 *  5. Call bk_grp_tick() periodically (<= 100 ms apart; cost O(groups +
 *     members)) and bk_grp_expire_offsets() every
 *     offsets.retention.check.interval.ms (cost O(offsets)).
 *
 * Strings in requests are kp_str_t slices (a null slice = null); nothing in
 * a request is retained: the coordinator copies what it keeps. Slices in
 * bk_grp_out_t live in out's arena until bk_grp_out_reset/free. Pointers
 * into the coordinator's own state (bk_grp_find, bk_grp_describe) are valid
 * until the next mutating call.
 */
#ifndef SKIFF_BK_GROUP_H
#define SKIFF_BK_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_arena.h"
#include "protocol/kp_wire.h"

#define BK_GRP_MEMBERS_MAX 10000             /* hard bound on group.max.size */
#define BK_GRP_PROTOCOLS_MAX 64              /* protocols one member may offer */
#define BK_GRP_GROUPS_MAX (1 << 20)          /* groups per coordinator partition */
#define BK_GRP_OFFSETS_MAX (1 << 20)         /* committed partitions per group */
#define BK_GRP_NEW_MEMBER_TIMEOUT_MS 300000  /* Kafka's new-member join timeout */
#define BK_GRP_OUT_ARENA_BYTES ((size_t)256 << 20)

/* Record key types in __consumer_offsets (the INT16 before the key). */
#define BK_GRP_KEY_OFFSET_V0 0
#define BK_GRP_KEY_OFFSET 1
#define BK_GRP_KEY_GROUP 2
#define BK_GRP_VALUE_GROUP_VERSION 3         /* GroupMetadataValue we write */
/* KIP-848 consumer groups (group_cg.h) */
#define BK_GRP_KEY_CG_METADATA 3
#define BK_GRP_KEY_CG_PARTITIONS 4
#define BK_GRP_KEY_CG_MEMBER 5
#define BK_GRP_KEY_CG_TARGET_META 6
#define BK_GRP_KEY_CG_TARGET 7
#define BK_GRP_KEY_CG_CURRENT 8

typedef enum {
    BK_GRP_EMPTY = 0,
    BK_GRP_PREPARING_REBALANCE,
    BK_GRP_COMPLETING_REBALANCE,
    BK_GRP_STABLE,
    BK_GRP_DEAD,
} bk_grp_state_t;

/* Kafka's state names ("Empty", "PreparingRebalance", ...). Never NULL. */
const char *bk_grp_state_name(bk_grp_state_t s);
/* Case-insensitive parse of a Kafka state name; false when unknown. */
bool bk_grp_state_parse(kp_str_t name, bk_grp_state_t *out);

/* Owned string/bytes: p is malloc'd and NUL-terminated; p == NULL is null. */
typedef struct {
    char *p;
    size_t len;
} bk_grp_str_t;

typedef struct {
    bk_grp_str_t name;
    bk_grp_str_t metadata;
} bk_grp_protocol_t;

typedef struct {
    bk_grp_str_t member_id;
    bk_grp_str_t instance_id;                /* null: dynamic member */
    bk_grp_str_t client_id, client_host;
    int32_t session_timeout_ms, rebalance_timeout_ms;
    bk_grp_protocol_t *protocols;            /* in preference order */
    size_t nprotocols;
    bk_grp_str_t assignment;                 /* of the current generation ("" none) */
    int64_t heartbeat_ms;                    /* the session runs from here: the last
                                                request, or a held Join/Sync answer
                                                handed to the member since */
    int64_t request_ms;                      /* the member's last request (Join, Sync,
                                                Heartbeat, OffsetCommit) */
    bool is_new;                             /* joined, not yet through a generation */
    bool awaiting_join, awaiting_sync;
    uint64_t join_token, sync_token;
} bk_grp_member_t;

typedef struct {
    bk_grp_str_t member_id;                  /* handed out with MEMBER_ID_REQUIRED */
    int64_t deadline_ms;
} bk_grp_pending_t;

typedef struct {
    bk_grp_str_t topic;
    int32_t partition;
    int64_t offset;
    int32_t leader_epoch;                    /* -1 unknown */
    bk_grp_str_t metadata;
    int64_t commit_ts_ms;
    int64_t expire_ts_ms;                    /* -1: retention decides */
} bk_grp_offset_t;

typedef struct {
    bk_grp_str_t id;
    bk_grp_state_t state;
    int64_t state_ts_ms;                     /* when the state last changed */
    int32_t generation;
    bk_grp_str_t protocol_type;              /* null: offsets only (simple consumer) */
    bk_grp_str_t protocol;                   /* null: none selected */
    bk_grp_str_t leader;                     /* null: no leader */
    bk_grp_member_t *members;                /* join order; members[0] leads if none */
    size_t nmembers, members_cap;
    bk_grp_pending_t *pending;
    size_t npending, pending_cap;
    bk_grp_offset_t *offsets;                /* sorted by (topic, partition) */
    size_t noffsets, offsets_cap;
    int64_t join_deadline_ms;                /* Preparing: join completes by then;
                                                Completing: members must have synced */
    bool initial_delay;                      /* first rebalance of an empty group */
    bool new_member_added;                   /* ... and someone joined since the last delay */
    int64_t initial_remaining_ms;            /* rebalance time left to extend the delay */
    struct bk_grp_cg *cg;                    /* KIP-848 consumer group (group_cg.h);
                                                NULL: a classic group. Its `state` is
                                                then Empty or Stable (has members) */
} bk_grp_t;

typedef struct {
    int32_t num_partitions;                  /* partitions of __consumer_offsets (the driver:
                                                the image's count; offsets.topic.num.partitions,
                                                50, only sizes a new topic) */
    int32_t min_session_timeout_ms;          /* group.min.session.timeout.ms (6000) */
    int32_t max_session_timeout_ms;          /* group.max.session.timeout.ms (1800000) */
    int32_t initial_rebalance_delay_ms;      /* group.initial.rebalance.delay.ms (3000) */
    int32_t max_size;                        /* group.max.size, <= BK_GRP_MEMBERS_MAX */
    int64_t offsets_retention_ms;            /* offsets.retention.minutes (7 days) */
    int32_t offset_metadata_max_bytes;       /* offset.metadata.max.bytes (4096) */
    int32_t cg_session_timeout_ms;           /* group.consumer.session.timeout.ms (45000) */
    int32_t cg_heartbeat_interval_ms;        /* group.consumer.heartbeat.interval.ms (5000) */
    int32_t cg_max_size;                     /* group.consumer.max.size, <= BK_GRP_MEMBERS_MAX */
    int cg_assignors[2];                     /* group.consumer.assignors (bk_grp_cg_assignor_t),
                                                first = default; -1 = none */
    int cg_migration;                        /* group.consumer.migration.policy (bk_grp_cg_migration_t) */
} bk_grp_config_t;

typedef struct {
    bk_grp_config_t cfg;
    int32_t partition;                       /* the __consumer_offsets partition */
    bool loading;                            /* until bk_grp_load_done */
    uint64_t rng;                            /* splitmix64, for member ids */
    bk_grp_t **groups;                       /* sorted by id */
    size_t ngroups, groups_cap;
} bk_grp_coord_t;

/* ---- results ------------------------------------------------------------- */

typedef enum { BK_GRP_RESP_JOIN = 1, BK_GRP_RESP_SYNC } bk_grp_resp_kind_t;

typedef struct {
    kp_str_t member_id, instance_id;
    kp_bytes_t metadata;                     /* of the selected protocol */
} bk_grp_join_member_t;

/* One JoinGroup or SyncGroup answer for the request that carried `token`. */
typedef struct {
    bk_grp_resp_kind_t kind;
    uint64_t token;
    int16_t error;
    int32_t generation;                      /* join: -1 on error */
    kp_str_t protocol_type, protocol;        /* null when none */
    kp_str_t leader, member_id;              /* join */
    bool skip_assignment;                    /* join v9+: static leader rejoined */
    bk_grp_join_member_t *members;           /* join: the leader only */
    size_t nmembers;
    kp_bytes_t assignment;                   /* sync */
} bk_grp_resp_t;

/* One __consumer_offsets record: key, and value (value.p == NULL: tombstone). */
typedef struct {
    kp_bytes_t key, value;
} bk_grp_rec_t;

typedef struct {
    kp_arena_t arena;                        /* owns every slice below */
    bk_grp_resp_t *resps;
    size_t nresps, resps_cap;
    bk_grp_rec_t *recs;
    size_t nrecs, recs_cap;
    size_t members_expired;                  /* session / rebalance / join timeouts */
    size_t rebalances_completed;             /* joins completed (new generations) */
    size_t offsets_expired;
    int err;                                 /* sticky: KP_OK or KP_ERR_NOMEM */
} bk_grp_out_t;

void bk_grp_out_init(bk_grp_out_t *o);
/* Empties o (frees its arena memory); o stays usable. */
void bk_grp_out_reset(bk_grp_out_t *o);
void bk_grp_out_free(bk_grp_out_t *o);
/* The response for `token` in o, or NULL when it is still pending. */
const bk_grp_resp_t *bk_grp_out_find(const bk_grp_out_t *o, uint64_t token);

/* ---- coordinator ---------------------------------------------------------- */

/* Kafka's defaults (see bk_grp_config_t). */
void bk_grp_config_defaults(bk_grp_config_t *cfg);
/* A coordinator for `partition`, in the loading state, with no groups. */
void bk_grp_coord_init(bk_grp_coord_t *c, const bk_grp_config_t *cfg, int32_t partition,
                       uint64_t seed);
void bk_grp_coord_free(bk_grp_coord_t *c);

/* Java's Utils.abs(groupId.hashCode()) % num_partitions, String.hashCode over
 * the UTF-16 code units of the UTF-8 group id (an invalid UTF-8 byte counts
 * as one U+FFFD; Java's decoder agrees for most malformed input).
 * num_partitions > 0. */
int32_t bk_grp_partition_for(kp_str_t group_id, int32_t num_partitions);

/* NOT_COORDINATOR when the group belongs to another partition,
 * COORDINATOR_LOAD_IN_PROGRESS while loading, else NONE. */
int16_t bk_grp_owner_error(const bk_grp_coord_t *c, kp_str_t group_id);

/* The group, or NULL. */
const bk_grp_t *bk_grp_find(const bk_grp_coord_t *c, kp_str_t group_id);

/* ---- membership ----------------------------------------------------------- */

typedef struct {
    kp_str_t name;
    kp_bytes_t metadata;
} bk_grp_protocol_in_t;

typedef struct {
    kp_str_t group_id;
    kp_str_t member_id;                      /* "" on a first join */
    kp_str_t instance_id;                    /* null: dynamic member */
    kp_str_t client_id, client_host;
    kp_str_t protocol_type;
    int32_t session_timeout_ms;
    int32_t rebalance_timeout_ms;            /* v0: pass session_timeout_ms */
    const bk_grp_protocol_in_t *protocols;
    size_t nprotocols;
    bool require_known_member_id;            /* JoinGroup v4+ */
    uint64_t token;
} bk_grp_join_t;

/* JoinGroup. The answer for req->token lands in out->resps now or later. */
void bk_grp_join(bk_grp_coord_t *c, const bk_grp_join_t *req, int64_t now_ms,
                 bk_grp_out_t *out);

typedef struct {
    kp_str_t member_id;
    kp_bytes_t assignment;
} bk_grp_assign_in_t;

typedef struct {
    kp_str_t group_id, member_id, instance_id;
    int32_t generation;
    kp_str_t protocol_type, protocol;        /* v5+; null: not checked */
    const bk_grp_assign_in_t *assignments;   /* the leader's; others send none */
    size_t nassignments;
    uint64_t token;
} bk_grp_sync_t;

/* SyncGroup. The answer for req->token lands in out->resps now or later. */
void bk_grp_sync(bk_grp_coord_t *c, const bk_grp_sync_t *req, int64_t now_ms,
                 bk_grp_out_t *out);

/* The held Join/Sync answer for `token` could not be handed over: the
 * requester's connection had closed. The session that answer started
 * (join completion, assignment propagation) is taken back: the member's
 * session runs from its last request again, so a member that went away
 * without LeaveGroup (librdkafka's close of a static member) expires
 * session.timeout.ms after its last request, at the next tick past that,
 * not a session after a join that completed without it. No-op when no
 * member has that token. O(groups + members). */
void bk_grp_answer_lost(bk_grp_coord_t *c, uint64_t token);

/* Heartbeat: the error to answer (NONE, REBALANCE_IN_PROGRESS, ...). */
int16_t bk_grp_heartbeat(bk_grp_coord_t *c, kp_str_t group_id, kp_str_t member_id,
                         kp_str_t instance_id, int32_t generation, int64_t now_ms);

typedef struct {
    kp_str_t member_id;                      /* "" with an instance id: look it up */
    kp_str_t instance_id;
} bk_grp_leave_in_t;

/* LeaveGroup (v3+ batches members; v0-2 pass one member). errors[n] gets a
 * per-member error; the return value is the top-level error (for v0-2 the
 * driver answers errors[0] when the top level is NONE). */
int16_t bk_grp_leave(bk_grp_coord_t *c, kp_str_t group_id, const bk_grp_leave_in_t *members,
                     size_t n, int64_t now_ms, bk_grp_out_t *out, int16_t *errors);

/* Session, pending-member, rebalance and initial-delay timeouts. */
void bk_grp_tick(bk_grp_coord_t *c, int64_t now_ms, bk_grp_out_t *out);

/* ---- offsets -------------------------------------------------------------- */

typedef struct {
    kp_str_t topic;
    int32_t partition;
} bk_grp_tp_t;

typedef struct {
    kp_str_t topic;
    int32_t partition;
    int64_t offset;
    int32_t leader_epoch;                    /* -1 unknown */
    kp_str_t metadata;                       /* null is stored as "" */
    int64_t commit_ts_ms;                    /* v1 only; -1: now */
} bk_grp_commit_part_t;

typedef struct {
    kp_str_t group_id, member_id, instance_id;
    int32_t generation;                      /* -1: simple consumer */
    int64_t retention_ms;                    /* v2-4; -1: the broker's retention */
    const bk_grp_commit_part_t *parts;
    size_t nparts;
} bk_grp_commit_t;

/* OffsetCommit: errors[nparts] per partition. Returns the error that all
 * partitions share (NONE when they differ or all succeeded). */
int16_t bk_grp_offset_commit(bk_grp_coord_t *c, const bk_grp_commit_t *req, int64_t now_ms,
                             bk_grp_out_t *out, int16_t *errors);

/* One offset of a TxnOffsetCommit as its __consumer_offsets record
 * (written in a transactional batch of the producer, made visible by the
 * COMMIT marker; group_driver replays it so). Strings borrowed. */
typedef struct {
    kp_str_t group, topic;
    int32_t partition;
    int64_t offset;
    int32_t leader_epoch;
    kp_str_t metadata;                       /* null is stored as "" */
    int64_t commit_ts_ms;
} bk_grp_txn_offset_t;

/* Adds its OffsetCommit record (value v3) to o->recs. */
void bk_grp_rec_txn_offset(bk_grp_out_t *o, const bk_grp_txn_offset_t *t);
/* Decodes an OffsetCommit record (strings point into key/value or a);
 * KP_ERR_BAD_VALUE for another record type or a tombstone. */
KP_MUST_CHECK int bk_grp_decode_txn_offset(kp_bytes_t key, kp_bytes_t value, kp_arena_t *a, bk_grp_txn_offset_t *t);

/* TxnOffsetCommit's member check (NONE for generation -1 or an unknown
 * group), and the commit of a transaction's offsets at its COMMIT marker
 * (no member check; creates the group when absent). */
int16_t bk_grp_txn_commit_check(bk_grp_coord_t *c, const bk_grp_commit_t *req);
int16_t bk_grp_offset_commit_txn(bk_grp_coord_t *c, const bk_grp_commit_t *req, int64_t now_ms,
                                 bk_grp_out_t *out, int16_t *errors);

typedef struct {
    int64_t offset;                          /* -1: nothing committed */
    int32_t leader_epoch;
    kp_str_t metadata;                       /* points into the coordinator */
} bk_grp_fetched_t;

/* OffsetFetch of listed partitions (res[n]); an unknown group or partition
 * gives offset -1. Returns the group-level error. */
int16_t bk_grp_offset_fetch(const bk_grp_coord_t *c, kp_str_t group_id, const bk_grp_tp_t *parts,
                            size_t n, bk_grp_fetched_t *res);
/* OffsetFetch of all partitions: *offs and *n view the group's sorted offsets
 * (NULL/0 for an unknown group). Returns the group-level error. */
int16_t bk_grp_offset_fetch_all(const bk_grp_coord_t *c, kp_str_t group_id,
                                const bk_grp_offset_t **offs, size_t *n);

/* OffsetDelete: errors[n] per partition (GROUP_SUBSCRIBED_TO_TOPIC where a
 * consumer-protocol member subscribes to the topic). Top-level error:
 * GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP (active non-consumer group), ... */
int16_t bk_grp_offset_delete(bk_grp_coord_t *c, kp_str_t group_id, const bk_grp_tp_t *parts,
                             size_t n, int64_t now_ms, bk_grp_out_t *out, int16_t *errors);

/* Drops expired offsets (tombstones) and removes Empty groups left with no
 * offsets (GroupMetadata tombstone). */
void bk_grp_expire_offsets(bk_grp_coord_t *c, int64_t now_ms, bk_grp_out_t *out);

/* Kafka's onPartitionsDeleted: drops (tombstones) every committed offset
 * for which gone(ctx, topic, partition) is true, in every group, and
 * removes Empty groups left with no offsets (GroupMetadata tombstone).
 * A topic deleted and re-created under its name must not hand its old
 * offsets to the new topic's consumers. Returns how many offsets went.
 * O(offsets) calls of gone. Nothing while loading. */
typedef bool (*bk_grp_gone_fn)(void *ctx, kp_str_t topic, int32_t partition);
size_t bk_grp_drop_offsets(bk_grp_coord_t *c, bk_grp_gone_fn gone, void *ctx, bk_grp_out_t *out);

/* Log end offset of a partition, or -1 when unknown. */
typedef int64_t (*bk_grp_leo_fn)(void *ctx, kp_str_t topic, int32_t partition);

typedef struct {
    const bk_grp_offset_t *committed;
    int64_t log_end_offset;                  /* -1 unknown */
    int64_t lag;                             /* max(0, LEO - committed); -1 unknown
                                                (no LEO, or committed < 0) */
} bk_grp_lag_t;

/* Lag of every committed partition of the group into res (at most max);
 * returns how many there are (may exceed max). */
size_t bk_grp_lags(const bk_grp_coord_t *c, kp_str_t group_id, bk_grp_leo_fn leo, void *ctx,
                   bk_grp_lag_t *res, size_t max);

/* ---- admin ---------------------------------------------------------------- */

typedef void (*bk_grp_list_fn)(void *ctx, const bk_grp_t *g);

/* ListGroups: calls fn for each group (id order) whose state is one of
 * states[nstates] (nstates 0: every state). Returns
 * COORDINATOR_LOAD_IN_PROGRESS (and lists nothing) while loading. */
int16_t bk_grp_list(const bk_grp_coord_t *c, const bk_grp_state_t *states, size_t nstates,
                 bk_grp_list_fn fn, void *ctx);

/* DescribeGroups: *g = the group (NULL: describe as state "Dead", no
 * members). Kafka sends member metadata/assignment only in Stable:
 * bk_grp_member_metadata gives the selected protocol's metadata. */
int16_t bk_grp_describe(const bk_grp_coord_t *c, kp_str_t group_id, const bk_grp_t **g);
kp_bytes_t bk_grp_member_metadata(const bk_grp_t *g, const bk_grp_member_t *m);

/* DeleteGroups (one group): GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, or NONE
 * with tombstones for every offset and the group. */
int16_t bk_grp_delete(bk_grp_coord_t *c, kp_str_t group_id, int64_t now_ms, bk_grp_out_t *out);

/* ---- persistence ---------------------------------------------------------- */

/* Replays one __consumer_offsets record (value.p == NULL: tombstone) while
 * loading. Unknown key types (newer coordinators' records) are skipped.
 * KP_ERR_* for a malformed record or a bound exceeded (the state is then
 * unchanged); the driver treats that as fatal for this partition. */
KP_MUST_CHECK int bk_grp_load_record(bk_grp_coord_t *c, kp_bytes_t key, kp_bytes_t value);
/* Ends loading: groups with members are Stable (same generation, sessions
 * start at now_ms), others Empty. */
void bk_grp_load_done(bk_grp_coord_t *c, int64_t now_ms);

#endif
