/* broker/txn/txn_driver.h — the transaction coordinator's network side (issue 9),
 * shaped like the group driver (group_driver.h): one pure core
 * (bk_txn_coord_t, txn.h) per `__transaction_state` partition this node
 * leads, loaded by replaying the partition, dropped when leadership goes;
 * every record a core emits is appended to that partition and replicated
 * (the HW passes it) before the request it belongs to is answered or the
 * transaction moves on; WriteTxnMarkers go to each partition
 * leader (appended here when this node leads it, else sent to the leader's
 * Kafka listener); a timer drives bk_txn_tick (transaction.timeout.ms) and
 * re-sends markers that are still missing.
 *
 * Also here: the partition-leader side of a marker (bk_td_write_marker,
 * used by the local path and the WriteTxnMarkers handler) and the offsets
 * of TxnOffsetCommit, held per __consumer_offsets partition until the
 * marker (txn_offsets.h) and then committed through the group core.
 *
 * Threading: loop thread only (like every bk_node_t part). */
#ifndef SKIFF_BK_TXN_DRIVER_H
#define SKIFF_BK_TXN_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/api/dispatch.h"
#include "broker/txn/txn.h"

#define BK_TD_TOPIC "__transaction_state"
#define BK_TD_TICK_MS 250                    /* timeouts + marker re-sends */
#define BK_TD_MARKER_RESEND_MS 5000          /* a marker request unanswered this long is re-sent */
#define BK_TD_DRAIN_ROUNDS_MAX 64            /* records -> markers -> records rounds per call */
#define BK_TD_WRITE_TIMEOUT_MS 5000          /* a log write or marker not replicated by then fails (retriable) */
#define BK_TD_REPLAY_BATCH_MAX_BYTES ((size_t)128 << 20)
#define BK_TD_INFLIGHT_MAX 4096              /* marker requests out to other leaders */
#define BK_TD_PEERS_MAX 256                  /* other brokers we talk to */

typedef struct bk_td bk_td_t;

/* Creates the driver of node n and starts its timer; no core is loaded until
 * the first bk_td_sync (the node calls it once the group driver has loaded).
 * NULL when out of memory. */
bk_td_t *bk_td_new(bk_node_t *n);
/* Stops the timer and the peer connections (before the net drains). Idempotent. */
void bk_td_stop(bk_td_t *td);
/* Frees everything (after bk_td_stop). NULL is allowed. */
void bk_td_free(bk_td_t *td);

/* Follows leadership of __transaction_state: loads a core for each newly
 * led partition (replay, then the markers of Prepare* transactions are
 * sent), drops the cores of partitions lost. Cheap when nothing changed. */
void bk_td_sync(bk_td_t *td);

/* FindCoordinator key type 1: the leader of partition
 * bk_txn_partition_for(key) of __transaction_state; creates the topic on
 * first use (COORDINATOR_NOT_AVAILABLE meanwhile). host points into the image. */
int16_t bk_td_find(bk_td_t *td, kp_str_t key, int32_t *node_id, const char **host, int32_t *port);

/* The core owning transactional_id (NUL-terminated) on this node and its
 * partition, or NULL with *err = COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR. */
bk_txn_coord_t *bk_td_coord(bk_td_t *td, const char *transactional_id, int32_t *pidx, int16_t *err);

/* The answer of one request after its core call has been completed. */
typedef struct {
    int16_t error;
    int64_t producer_id;
    int16_t producer_epoch;
} bk_td_answer_t;

/* Cores by __transaction_state partition (ListTransactions, admin): NULL
 * when not led here; ncoords is the partition count seen so far. */
int32_t bk_td_ncoords(const bk_td_t *td);
bk_txn_coord_t *bk_td_coord_at(bk_td_t *td, int32_t p);

/* The final answer of one request's core call: called exactly once, maybe
 * before bk_td_finish returns, maybe later (its records replicated). */
typedef void (*bk_td_answer_fn)(void *ctx, const bk_td_answer_t *ans);

/* Completes a core call made for transactional_id on partition pidx:
 * appends out's records (one batch) and tells the replication driver
 * (acks=all, deadline BK_TD_WRITE_TIMEOUT_MS); once the HW passes them (or
 * the wait fails: timeout, leadership lost) each write is reported with
 * bk_txn_write_done, the markers that result are sent (the local ones wait
 * for their own replication), and whatever that produces is appended the
 * same way. fn(ctx, ans) gets the request's answer once the write it waits
 * for is done (at once when out->wait is false); fn NULL: nobody waits (the
 * timer, marker answers, a load). A core dropped or reloaded meanwhile
 * answers NOT_COORDINATOR: a new coordinator acts only on what it
 * replayed. Resets out. */
void bk_td_finish(bk_td_t *td, int32_t pidx, bk_txn_out_t *out, const char *transactional_id,
                  bk_td_answer_fn fn, void *ctx);

/* Completion of one marker written on a led partition (bk_td_write_marker):
 * err NONE once replicated to the ISR, else REQUEST_TIMED_OUT /
 * NOT_LEADER_OR_FOLLOWER / NOT_ENOUGH_REPLICAS_AFTER_APPEND (not final:
 * the coordinator re-sends). */
typedef void (*bk_td_marker_fn)(void *ctx, int16_t err);

/* Partition-leader side of one marker: checks it (bk_txn_part_check_marker)
 * and appends a COMMIT/ABORT control batch to the local log (storage ends
 * the producer's transaction, indexes an abort, moves the LSO), then waits
 * (acks=all, BK_TD_WRITE_TIMEOUT_MS) until the ISR has it, as Kafka writes
 * markers with acks=-1; on a __consumer_offsets partition the producer's
 * pending offsets are then committed or dropped. Returns true when the
 * answer comes later through fn(ctx, err), exactly once; false when *err
 * is final now: NONE, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER,
 * KAFKA_STORAGE_ERROR, INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_
 * FENCED, REQUEST_TIMED_OUT. */
bool bk_td_write_marker(bk_node_t *n, const char *topic, int32_t partition, int64_t producer_id,
                        int16_t producer_epoch, bool commit, int32_t coordinator_epoch, bk_td_marker_fn fn, void *ctx,
                        int16_t *err);

/* A producer id from the node's block; false when it is empty (a refill
 * has been started: committed here on the controller, else one id asked of
 * the controller). */
bool bk_td_alloc_pid(bk_td_t *td, int64_t *producer_id);

/* Produce of a transactional batch: NONE; INVALID_PRODUCER_EPOCH for an
 * epoch older than the coordinator's; INVALID_TXN_STATE when this
 * node coordinates the id and the partition is not in its ongoing
 * transaction for (producer_id, epoch). Coordinated elsewhere: NONE (as
 * Kafka before KIP-890, the partition leader does not ask). */
int16_t bk_td_check_produce(bk_td_t *td, kp_str_t transactional_id, int64_t producer_id, int16_t epoch,
                            const char *topic, int32_t partition);

/* Handlers (h_txn.c, h_txn_admin.c). */
void bk_h_init_producer_id_txn(bk_req_t *req);
void bk_h_add_partitions_to_txn(bk_req_t *req);
void bk_h_add_offsets_to_txn(bk_req_t *req);
void bk_h_end_txn(bk_req_t *req);
void bk_h_write_txn_markers(bk_req_t *req);
void bk_h_txn_offset_commit(bk_req_t *req);
void bk_h_describe_transactions(bk_req_t *req);
void bk_h_list_transactions(bk_req_t *req);
void bk_h_describe_producers(bk_req_t *req);

#endif
