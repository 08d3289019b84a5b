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

#include "broker/api/dispatch.h"
#include "broker/group/group.h"
#include "broker/group/group_txn_offsets.h"

#define BK_GD_TOPIC "__consumer_offsets"
#define BK_GD_TICK_MS 100                  /* session / rebalance timer period */
#define BK_GD_EXPIRE_EVERY_TICKS 6000      /* offsets retention check: every 10 min */
#define BK_GD_HELD_MAX 100000              /* Join/Sync requests waiting per node; also
                                              the bound of answers waiting for replication */
#define BK_GD_COMMIT_TIMEOUT_MS 5000       /* Kafka's offsets.commit.timeout.ms default: an
                                              append not replicated by then fails its answers */
#define BK_GD_REPLAY_BATCH_MAX_BYTES ((size_t)128 << 20) /* largest batch replayed */
#define BK_GD_TXN_STASH_MAX_BYTES ((size_t)64 << 20)     /* open transactional offsets held in a replay */

typedef struct bk_gd bk_gd_t;

/* Creates the driver of node n (its config gives the group settings) and
 * starts its timer. NULL when out of memory. */
bk_gd_t *bk_gd_new(bk_node_t *n);
/* Answers every held request (COORDINATOR_NOT_AVAILABLE) and stops the
 * timer: call before the net drains at shutdown. Idempotent. */
void bk_gd_stop(bk_gd_t *gd);
/* Frees every core (after bk_gd_stop). NULL is allowed. */
void bk_gd_free(bk_gd_t *gd);

/* Follows leadership of __consumer_offsets: a core for each partition this
 * node now leads (loaded by replaying its log), dropped for each it lost
 * (held requests answered NOT_COORDINATOR). Cheap when nothing changed. */
void bk_gd_sync(bk_gd_t *gd);

/* The core owning group_id on this node, or NULL with *err =
 * COORDINATOR_NOT_AVAILABLE (topic missing) or NOT_COORDINATOR. A core
 * still loading is returned (its calls answer COORDINATOR_LOAD_IN_PROGRESS). */
bk_grp_coord_t *bk_gd_coord(bk_gd_t *gd, kp_str_t group_id, int16_t *err);

/* The core of __consumer_offsets partition p, or NULL (not led / absent). */
bk_grp_coord_t *bk_gd_coord_at(bk_gd_t *gd, int32_t p);

/* FindCoordinator for one key: fills node/host/port of the leader of the
 * key's __consumer_offsets partition (host points into the image, valid
 * until the next commit) and returns the error (NONE,
 * COORDINATOR_NOT_AVAILABLE while the topic is being created or the
 * partition has no leader). Starts the topic's creation on first use. */
int16_t bk_gd_find(bk_gd_t *gd, kp_str_t key, int32_t *node_id, const char **host, int32_t *port);

/* A fresh token for a Join/Sync request. */
uint64_t bk_gd_token(bk_gd_t *gd);
/* Holds req until the core emits the answer for token (then
 * bk_h_group_answer(req, resp) runs). False when the table is full (the
 * caller answers an error itself). */
bool bk_gd_hold(bk_gd_t *gd, uint64_t token, bk_req_t *req);
/* Held requests by kind (the group purgatory, for /metrics): JoinGroup into
 * *joins, SyncGroup into *syncs. O(held); gd may be NULL (both 0). */
void bk_gd_held_counts(const bk_gd_t *gd, size_t *joins, size_t *syncs);

/* Completes one core call: appends out->recs to the core's partition log
 * (one batch; fsync by the flush policy, as for Produce) and then answers every held request whose answer is
 * in out->resps; resets out. Returns KP_OK, or the storage status when the
 * append failed (held answers then carry COORDINATOR_NOT_AVAILABLE; the
 * caller maps its own synchronous answer the same way). */
int bk_gd_finish(bk_gd_t *gd, bk_grp_coord_t *c, bk_grp_out_t *out);

/* Appends out->recs as the transactional batch of (producer_id, epoch)
 * (TxnOffsetCommit: visible once the producer's COMMIT marker follows; a
 * replay holds them until then). Resets out. KP_OK or the storage status. */
int bk_gd_append_txn(bk_gd_t *gd, bk_grp_coord_t *c, bk_grp_out_t *out, int64_t producer_id,
                     int16_t producer_epoch);
/* Answers req with resp (a kp_<api>_response_t, encoded now) once the
 * records this node appended to the __consumer_offsets partitions of the
 * groups (and, after a load, the whole log it replayed) are below their
 * high watermarks, i.e. on every ISR member — at once when they already
 * are (one replica: always). If replication fails (the wait times out after
 * BK_GD_COMMIT_TIMEOUT_MS, or leadership moves) the connection is closed
 * instead: clients rediscover the coordinator and retry. Frees req. */
void bk_gd_respond(bk_gd_t *gd, kp_str_t group_id, bk_req_t *req, const void *resp);
void bk_gd_respond_groups(bk_gd_t *gd, const kp_str_t *group_ids, size_t ngroups, bk_req_t *req,
                          const void *resp);
/* Answers waiting for replication now (tests, metrics). */
size_t bk_gd_waiting(const bk_gd_t *gd);

/* Answers a held JoinGroup/SyncGroup request with a core response, or with
 * `error` when resp is NULL (h_groups.c). Frees req. */
void bk_h_group_answer(bk_req_t *req, const bk_grp_resp_t *resp, int16_t error);

/* ---- transactional offsets (TxnOffsetCommit, KIP-447) -------------------
 * Offsets of a TxnOffsetCommit are held per __consumer_offsets partition
 * until their producer's marker reaches that partition. */

/* The pending offsets of partition p (NULL when p is not a partition seen
 * so far). Valid until the next bk_gd_sync. */
bk_grp_txn_offsets_t *bk_gd_txn_offsets(bk_gd_t *gd, int32_t p);
/* OffsetFetch require_stable: whether a transaction holds an offset of
 * (group, topic, partition) in partition p. gd NULL: false. */
bool bk_gd_txn_pending(const bk_gd_t *gd, int32_t p, kp_str_t group, kp_str_t topic, int32_t partition);
/* Whether producer_id holds pending offsets in partition p (its marker
 * there then needs a control batch: a replay resolves the transactional
 * batch only at one). gd NULL: false. */
bool bk_gd_txn_has_offsets(const bk_gd_t *gd, int32_t p, int64_t producer_id);
/* The producer's marker on partition p is replicated: COMMIT makes its
 * pending offsets the group's (appended again as plain records), ABORT
 * drops them; without a loaded core they are dropped either way (the
 * replay resolves them at the marker). gd NULL: nothing. */
void bk_gd_txn_complete(bk_gd_t *gd, int32_t p, int64_t producer_id, bool commit);

/* Lag of the group's committed partitions, like bk_grp_lags, against the
 * partition's high watermark where this node leads it (what ListOffsets
 * latest answers); -1 where this node does not lead it (the admin port asks
 * the leader, admin_lag.c). Returns
 * how many committed partitions there are (may exceed max); 0 with *err
 * set when this node does not coordinate the group. */
size_t bk_gd_lags(bk_gd_t *gd, kp_str_t group_id, bk_grp_lag_t *res, size_t max, int16_t *err);

#endif
