/* broker/group/group_driver.h — the group coordinator's network side: one pure
 * core (bk_grp_coord_t, group.h) per __consumer_offsets partition this node
 * leads, the records the cores emit appended to that partition's log before
 * any answer leaves, delayed JoinGroup/SyncGroup answers held by token, and
 * a 100 ms timer driving bk_grp_tick.
 *
 * Threading: loop thread only (like every bk_node_t part). */
#ifndef SKIFF_BK_GROUP_DRIVER_H
#define SKIFF_BK_GROUP_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kp_msgs.h"
#include "broker/core/node.h"
#include "broker/group/group.h"
#include "broker/group/group_cg.h"

#define BK_GRP_GD_TOPIC "__consumer_offsets"
#define BK_GRP_GD_TICK_MS 100                  /* session / rebalance timer period */
#define BK_GRP_GD_EXPIRE_EVERY_TICKS 6000      /* offsets retention check: every 10 min */
#define BK_GRP_GD_HELD_MAX 100000              /* Join/Sync requests waiting per node; also
                                              the bound of answers waiting for replication */
#define BK_GRP_GD_COMMIT_TIMEOUT_MS 5000       /* Kafka's offsets.commit.timeout.ms default: an
                                              append not replicated by then fails its answers */
#define BK_GRP_GD_REPLAY_BATCH_MAX_BYTES ((size_t)128 << 20) /* largest batch replayed */
#define BK_GRP_GD_TXN_STASH_MAX_BYTES ((size_t)64 << 20)     /* open transactional offsets held in a replay */

typedef struct bk_grp_gd bk_grp_gd_t;

/* Creates the driver of node n (its config gives the group settings) and
 * starts its timer. NULL when out of memory. */
bk_grp_gd_t *bk_grp_gd_new(bk_node_t *n);
/* Answers every held request (COORDINATOR_NOT_AVAILABLE) and stops the
 * timer: call before the net drains at shutdown. Idempotent. */
void bk_grp_gd_stop(bk_grp_gd_t *gd);
/* Frees every core (after bk_grp_gd_stop). NULL is allowed. */
void bk_grp_gd_free(bk_grp_gd_t *gd);

/* Follows leadership of __consumer_offsets: a core for each partition this
 * node now leads (loaded by replaying its log), dropped for each it lost
 * (held requests answered NOT_COORDINATOR). Cheap when nothing changed. */
void bk_grp_gd_sync(bk_grp_gd_t *gd);

/* The core owning group_id on this node, or NULL with *err =
 * COORDINATOR_NOT_AVAILABLE (topic missing) or NOT_COORDINATOR. A core
 * still loading is returned (its calls answer COORDINATOR_LOAD_IN_PROGRESS). */
bk_grp_coord_t *bk_grp_gd_coord(bk_grp_gd_t *gd, kp_str_t group_id, int16_t *err);

/* The core of __consumer_offsets partition p, or NULL (not led / absent). */
bk_grp_coord_t *bk_grp_gd_coord_at(bk_grp_gd_t *gd, int32_t p);

/* FindCoordinator for one key: fills node/host/port of the leader of the
 * key's __consumer_offsets partition (host points into the image, valid
 * until the next commit) and returns the error (NONE,
 * COORDINATOR_NOT_AVAILABLE while the topic is being created or the
 * partition has no leader). Starts the topic's creation on first use. */
int16_t bk_grp_gd_find(bk_grp_gd_t *gd, kp_str_t key, int32_t *node_id, const char **host, int32_t *port);

/* Held JoinGroup / SyncGroup requests by kind (the group purgatory, for
 * /metrics): JoinGroup into *joins, SyncGroup into *syncs. O(held); gd may
 * be NULL (both 0). */
void bk_grp_gd_held_counts(const bk_grp_gd_t *gd, size_t *joins, size_t *syncs);
/* Answers waiting for replication now (tests, metrics). */
size_t bk_grp_gd_waiting(const bk_grp_gd_t *gd);

/* ---- requests --------------------------------------------------------------
 * The group APIs as the Kafka handlers (broker/api/) call them. Each entry
 * takes the decoded request (the codec's kp_*_request_t, and its version
 * where that changes the meaning) and finishes it by calling done(arg, res)
 * exactly once: during the call or later. The driver keeps nothing of the
 * request once the entry returns (what it needs later is copied), and it
 * never touches the request after calling done (the caller may free it
 * there). res and everything it points to are valid only during done: the
 * caller builds its answer from it there.
 *
 * An answer that rests on records this node appended to __consumer_offsets
 * (this request's, earlier ones' on the same partitions, or a log replayed
 * after a load) is delivered only once those records are on every ISR
 * member: the partitions' high watermarks passed them (at once with one
 * replica; Kafka's coordinator appends with acks=all too). When that fails
 * (not replicated within BK_GRP_GD_COMMIT_TIMEOUT_MS, leadership moved, the
 * driver stopped, BK_GRP_GD_HELD_MAX answers waiting, out of memory),
 * res->unsent says why and the caller must not answer: it closes the
 * connection, which every client takes as "find the coordinator again and
 * retry". Answers that only read (Heartbeat, ListGroups, DescribeGroups,
 * OffsetFetch) never wait. */

/* One partition's committed offset as OffsetFetch answers it. */
typedef struct {
    kp_str_t topic;
    int32_t partition;
    int64_t offset;                     /* -1: nothing committed */
    int32_t leader_epoch;               /* -1: unknown */
    kp_str_t metadata;                  /* "" when none */
    int16_t error;                      /* UNSTABLE_OFFSET_COMMIT (require_stable) or NONE */
} bk_grp_gd_offset_t;

/* OffsetFetch of one group. */
typedef struct {
    kp_str_t group_id;
    int16_t error;                      /* the group's error */
    const bk_grp_gd_offset_t *offsets;      /* see bk_grp_gd_offset_fetch */
    size_t noffsets;
} bk_grp_gd_fetched_t;

/* What a request produced; each entry says which fields it fills (the
 * others are NULL / 0). */
typedef struct {
    const char *unsent;                 /* NULL: answer; else why not (close) */
    int16_t error;                      /* the request's top-level error */
    const bk_grp_resp_t *resp;          /* JoinGroup / SyncGroup: the core's answer;
                                           NULL: `error` alone */
    const int16_t *errors;              /* per item, in request order */
    size_t nerrors;
    const bk_grp_t *const *groups;      /* ListGroups / DescribeGroups */
    size_t ngroups;
    const bk_grp_gd_fetched_t *fetched;     /* OffsetFetch: per group */
    size_t nfetched;
    const bk_grp_cg_hb_resp_t *cg_hb;   /* ConsumerGroupHeartbeat: the core's answer */
} bk_grp_gd_result_t;

typedef void (*bk_grp_gd_done_fn)(void *arg, const bk_grp_gd_result_t *res);
/* Whether the requester of a held Join/Sync (its arg) can still receive an
 * answer (its connection is open). Asked just before a held answer is
 * delivered: when it cannot, the session that answer would start does not
 * start (bk_grp_answer_lost), so a client gone without LeaveGroup expires
 * a session after its last request. NULL: always reachable. */
typedef bool (*bk_grp_gd_alive_fn)(void *arg);

/* JoinGroup: res->resp, or res->error alone. Held until the core completes
 * the join (bound BK_GRP_GD_HELD_MAX). client_id and client_host (Kafka's
 * "/host") describe the member; the core copies them. Version rules: v0
 * has no rebalance timeout (the session timeout is used), MEMBER_ID_REQUIRED
 * only for v4+. */
void bk_grp_gd_join_group(bk_grp_gd_t *gd, const kp_join_group_request_t *q, int16_t version, kp_str_t client_id,
                      kp_str_t client_host, bk_grp_gd_done_fn done, bk_grp_gd_alive_fn alive, void *arg);
/* SyncGroup: res->resp, or res->error alone; protocol type and name are
 * checked only v5+. Held like a join. */
void bk_grp_gd_sync_group(bk_grp_gd_t *gd, const kp_sync_group_request_t *q, int16_t version, bk_grp_gd_done_fn done,
                      bk_grp_gd_alive_fn alive, void *arg);
/* Heartbeat: res->error. */
void bk_grp_gd_heartbeat(bk_grp_gd_t *gd, const kp_heartbeat_request_t *q, bk_grp_gd_done_fn done, void *arg);
/* LeaveGroup: res->error (top level) and res->errors per member — v3+ the
 * members of q->members in order, v0-2 one (q->member_id). */
void bk_grp_gd_leave_group(bk_grp_gd_t *gd, const kp_leave_group_request_t *q, int16_t version, bk_grp_gd_done_fn done,
                       void *arg);
/* ListGroups: res->groups of every core this node holds that pass the
 * states filter (unknown names match nothing) and the types filter
 * ("classic" only exists); res->error when a core is still loading. */
void bk_grp_gd_list_groups(bk_grp_gd_t *gd, const kp_list_groups_request_t *q, bk_grp_gd_done_fn done, void *arg);
/* DescribeGroups: res->errors and res->groups per q->groups (group NULL:
 * no state to show, Kafka's "Dead"). */
void bk_grp_gd_describe_groups(bk_grp_gd_t *gd, const kp_describe_groups_request_t *q, bk_grp_gd_done_fn done, void *arg);
/* DeleteGroups: res->errors per q->groups_names. */
void bk_grp_gd_delete_groups(bk_grp_gd_t *gd, const kp_delete_groups_request_t *q, bk_grp_gd_done_fn done, void *arg);
/* OffsetCommit: res->errors per partition, topics then partitions in
 * request order. Partitions of topics that do not exist get
 * UNKNOWN_TOPIC_OR_PARTITION and are not stored. */
void bk_grp_gd_offset_commit(bk_grp_gd_t *gd, const kp_offset_commit_request_t *q, bk_grp_gd_done_fn done, void *arg);
/* OffsetFetch: res->fetched per group (v0-7: q->group_id; v8+: q->groups).
 * A group's offsets are the listed partitions in request order (offset -1
 * where nothing is committed, error UNSTABLE_OFFSET_COMMIT where a
 * transaction holds one and require_stable is set, v7+), or, for null
 * topics (v2+), every committed partition by (topic, partition). */
void bk_grp_gd_offset_fetch(bk_grp_gd_t *gd, const kp_offset_fetch_request_t *q, int16_t version, bk_grp_gd_done_fn done,
                        void *arg);
/* OffsetDelete: res->error and res->errors per partition in request order
 * (UNKNOWN_TOPIC_OR_PARTITION for partitions that do not exist). */
void bk_grp_gd_offset_delete(bk_grp_gd_t *gd, const kp_offset_delete_request_t *q, bk_grp_gd_done_fn done, void *arg);
/* TxnOffsetCommit: res->errors per partition in request order. Checked
 * like a commit (member and generation v3+), written as the producer's
 * transactional batch and held until its marker (bk_grp_gd_txn_complete).
 * gd NULL: every partition COORDINATOR_NOT_AVAILABLE. */
void bk_grp_gd_txn_offset_commit(bk_grp_gd_t *gd, const kp_txn_offset_commit_request_t *q, int16_t version,
                             bk_grp_gd_done_fn done, void *arg);

/* ConsumerGroupHeartbeat (KIP-848, group_cg_driver.c): res->cg_hb, or
 * res->error alone (no coordinator here); answered once its records are
 * replicated. client_id and client_host describe the member. */
void bk_grp_gd_cg_heartbeat(bk_grp_gd_t *gd, const kp_consumer_group_heartbeat_request_t *q, int16_t version,
                            kp_str_t client_id, kp_str_t client_host, bk_grp_gd_done_fn done, void *arg);
/* ConsumerGroupDescribe: res->errors and res->groups per q->group_ids
 * (GROUP_ID_NOT_FOUND for an unknown or classic group). */
void bk_grp_gd_cg_describe(bk_grp_gd_t *gd, const kp_consumer_group_describe_request_t *q, bk_grp_gd_done_fn done,
                           void *arg);

/* ---- transactional offsets (TxnOffsetCommit, KIP-447) -------------------
 * Offsets of a TxnOffsetCommit are held per __consumer_offsets partition
 * until their producer's marker reaches that partition. */

/* Whether producer_id holds pending offsets in partition p (its marker
 * there then needs a control batch: a replay resolves the transactional
 * batch only at one). gd NULL: false. */
bool bk_grp_gd_txn_has_offsets(const bk_grp_gd_t *gd, int32_t p, int64_t producer_id);
/* The producer's marker on partition p is replicated: COMMIT makes its
 * pending offsets the group's (appended again as plain records), ABORT
 * drops them; without a loaded core they are dropped either way (the
 * replay resolves them at the marker). gd NULL: nothing. */
void bk_grp_gd_txn_complete(bk_grp_gd_t *gd, int32_t p, int64_t producer_id, bool commit);

/* Lag of the group's committed partitions, like bk_grp_lags, against the
 * partition's high watermark where this node leads it (what ListOffsets
 * latest answers); -1 where this node does not lead it (the admin port asks
 * the leader, admin_lag.c). Returns
 * how many committed partitions there are (may exceed max); 0 with *err
 * set when this node does not coordinate the group. */
size_t bk_grp_gd_lags(bk_grp_gd_t *gd, kp_str_t group_id, bk_grp_lag_t *res, size_t max, int16_t *err);

#endif
