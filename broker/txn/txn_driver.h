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
 * Also here: the partition-leader side of a marker (bk_txn_td_write_marker,
 * used by the local path and the WriteTxnMarkers handler); on
 * __consumer_offsets a replicated marker completes the producer's pending
 * TxnOffsetCommit offsets, which the group driver holds
 * (bk_grp_gd_txn_complete).
 *
 * Requests come in decoded, with a completion callback (see "requests"
 * below): this folder never sees the dispatcher's request object.
 *
 * Threading: loop thread only (like every bk_node_t part). */
#ifndef SKIFF_BK_TXN_DRIVER_H
#define SKIFF_BK_TXN_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kp_msgs.h"
#include "broker/core/node.h"
#include "broker/txn/txn.h"

#define BK_TXN_TD_TOPIC "__transaction_state"
#define BK_TXN_TD_TICK_MS 250                    /* timeouts + marker re-sends */
#define BK_TXN_TD_MARKER_RESEND_MS 5000          /* a marker request unanswered this long is re-sent */
#define BK_TXN_TD_DRAIN_ROUNDS_MAX 64            /* records -> markers -> records rounds per call */
#define BK_TXN_TD_WRITE_TIMEOUT_MS 5000          /* a log write or marker not replicated by then fails (retriable) */
#define BK_TXN_TD_REPLAY_BATCH_MAX_BYTES ((size_t)128 << 20)
#define BK_TXN_TD_INFLIGHT_MAX 4096              /* marker requests out to other leaders */
#define BK_TXN_TD_PEERS_MAX 256                  /* other brokers we talk to */
#define BK_TXN_TD_LIST_MAX 100000                /* transactions listed per ListTransactions */

typedef struct bk_txn_td bk_txn_td_t;

/* Creates the driver of node n and starts its timer; no core is loaded until
 * the first bk_txn_td_sync (the node calls it once the group driver has loaded).
 * NULL when out of memory. */
bk_txn_td_t *bk_txn_td_new(bk_node_t *n);
/* Stops the timer and the peer connections (before the net drains). Idempotent. */
void bk_txn_td_stop(bk_txn_td_t *td);
/* Frees everything (after bk_txn_td_stop). NULL is allowed. */
void bk_txn_td_free(bk_txn_td_t *td);

/* Follows leadership of __transaction_state: loads a core for each newly
 * led partition (replay, then the markers of Prepare* transactions are
 * sent), drops the cores of partitions lost. Cheap when nothing changed. */
void bk_txn_td_sync(bk_txn_td_t *td);

/* FindCoordinator key type 1: the leader of partition
 * bk_txn_partition_for(key) of __transaction_state; creates the topic on
 * first use (COORDINATOR_NOT_AVAILABLE meanwhile). host points into the image. */
int16_t bk_txn_td_find(bk_txn_td_t *td, kp_str_t key, int32_t *node_id, const char **host, int32_t *port);

/* The core owning transactional_id (NUL-terminated) on this node and its
 * partition, or NULL with *err = COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR. */
bk_txn_coord_t *bk_txn_td_coord(bk_txn_td_t *td, const char *transactional_id, int32_t *pidx, int16_t *err);

/* The answer of one request after its core call has been completed. */
typedef struct {
    int16_t error;
    int64_t producer_id;
    int16_t producer_epoch;
} bk_txn_td_answer_t;

/* Cores by __transaction_state partition (ListTransactions, admin): NULL
 * when not led here; ncoords is the partition count seen so far. */
int32_t bk_txn_td_ncoords(const bk_txn_td_t *td);
bk_txn_coord_t *bk_txn_td_coord_at(bk_txn_td_t *td, int32_t p);

/* The final answer of one request's core call: called exactly once, maybe
 * before bk_td_finish returns, maybe later (its records replicated). */
typedef void (*bk_txn_td_answer_fn)(void *ctx, const bk_txn_td_answer_t *ans);

/* Completion of one marker written on a led partition (bk_txn_td_write_marker):
 * err NONE once replicated to the ISR, else REQUEST_TIMED_OUT /
 * NOT_LEADER_OR_FOLLOWER / NOT_ENOUGH_REPLICAS_AFTER_APPEND (not final:
 * the coordinator re-sends). */
typedef void (*bk_txn_td_marker_fn)(void *ctx, int16_t err);

/* Partition-leader side of one marker: checks it (bk_txn_part_check_marker)
 * and appends a COMMIT/ABORT control batch to the local log (storage ends
 * the producer's transaction, indexes an abort, moves the LSO), then waits
 * (acks=all, BK_TXN_TD_WRITE_TIMEOUT_MS) until the ISR has it, as Kafka writes
 * markers with acks=-1; on a __consumer_offsets partition the producer's
 * pending offsets are then committed or dropped. Returns true when the
 * answer comes later through fn(ctx, err), exactly once; false when *err
 * is final now: NONE, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER,
 * KAFKA_STORAGE_ERROR, INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_
 * FENCED, REQUEST_TIMED_OUT. */
bool bk_txn_td_write_marker(bk_node_t *n, const char *topic, int32_t partition, int64_t producer_id,
                        int16_t producer_epoch, bool commit, int32_t coordinator_epoch, bk_txn_td_marker_fn fn, void *ctx,
                        int16_t *err);

/* A producer id from the node's block; false when it is empty (a refill
 * has been started: committed here on the controller, else one id asked of
 * the controller). */
bool bk_txn_td_alloc_pid(bk_txn_td_t *td, int64_t *producer_id);

/* ---- requests ----------------------------------------------------------------
 * The transactional APIs as the Kafka handlers (broker/api/) call them: each
 * takes the decoded request (the codec's kp_*_request_t, and its version
 * where that changes the meaning) and answers through a callback called
 * exactly once, during the call or later; the driver keeps nothing of the
 * request once the entry returns (what a write needs later is copied) and
 * never touches it after the callback (the caller may free it there).
 * td NULL answers COORDINATOR_NOT_AVAILABLE. */

/* InitProducerId with a transactional id (v3+: the caller's producer
 * id/epoch, KIP-360): fn(arg, ans) with the id and epoch, once the record
 * is replicated. ans->error is the core's for every version: the caller
 * turns PRODUCER_FENCED into what old versions know
 * (bk_txn_fenced_error), as for the three below. */
void bk_txn_td_init_producer_id(bk_txn_td_t *td, const kp_init_producer_id_request_t *q, int16_t version,
                            bk_txn_td_answer_fn fn, void *arg);
/* AddPartitionsToTxn v0-3 (the v3_and_below fields): one error for the
 * whole request, which the caller copies to every partition. The caller
 * checks first that the partitions exist (Kafka answers unknown ones
 * without asking the coordinator). */
void bk_txn_td_add_partitions(bk_txn_td_t *td, const kp_add_partitions_to_txn_request_t *q, bk_txn_td_answer_fn fn,
                          void *arg);
/* The same for one transaction of an AddPartitionsToTxn v4+ batch (VerifyOnly
 * false): what v0-3 does with the request's single transaction. */
typedef kp_add_partitions_to_txn_request_add_partitions_to_txn_topic_t bk_txn_td_topic_t;
void bk_txn_td_add_partitions_txn(bk_txn_td_t *td, kp_str_t transactional_id, int64_t producer_id,
                                  int16_t producer_epoch, const bk_txn_td_topic_t *ts, int32_t ntopics,
                                  bk_txn_td_answer_fn fn, void *arg);
/* KIP-890 part 1 on the partition leader: before the first transactional
 * batch of a transaction on a partition is appended, the id's coordinator
 * must have that transaction Ongoing with that partition, or a batch that
 * no marker will ever end (a hanging transaction) could form. When the
 * coordinator is this node the local core verifies at once
 * (bk_txn_td_verify, mapped by bk_txn_td_produce_error).
 * When it is another broker, this sends it AddPartitionsToTxn v4 with
 * VerifyOnly and sets *waits: fn(ctx, err) follows exactly once, never
 * from inside this call, with NONE (append), INVALID_TXN_STATE /
 * INVALID_PRODUCER_EPOCH (refuse) or NOT_ENOUGH_REPLICAS (the coordinator
 * could not say: moved, loading, busy, unreachable, no answer within
 * BK_TXN_TD_WRITE_TIMEOUT_MS; retriable for every client, as Kafka maps
 * it). Without *waits fn is never called and the return says what to do
 * now: NONE only when verified (coordinated here and in the transaction;
 * with `add`, coordinated here: the caller adds), INVALID_TXN_STATE /
 * INVALID_PRODUCER_EPOCH (refuse; also an empty or over-long id),
 * NOT_ENOUGH_REPLICAS (no __transaction_state in the image yet — nobody
 * can verify, Kafka's COORDINATOR_NOT_AVAILABLE —, the coordinator
 * partition has no leader, the local core is not loaded, or the request
 * could not be sent). Never NONE unverified. */
typedef void (*bk_txn_td_verify_fn)(void *ctx, int16_t err);
/* add (transactions v2: Produce v12, TxnOffsetCommit v5; KIP-890 part 2):
 * the coordinator adds the partition to the transaction (AddPartitionsToTxn
 * v5 without VerifyOnly) instead of only checking it; when the coordinator
 * is this node the caller adds it itself (bk_txn_td_add_partitions_txn /
 * bk_txn_td_add_offsets_implicit). */
int16_t bk_txn_td_verify_remote(bk_txn_td_t *td, kp_str_t transactional_id, int64_t producer_id,
                                int16_t producer_epoch, const char *topic, int32_t partition, bool add,
                                bk_txn_td_verify_fn fn, void *ctx, bool *waits);
/* What a produce answers for a coordinator's error on its partition: NONE,
 * INVALID_TXN_STATE (also for an unknown id / other producer id),
 * INVALID_PRODUCER_EPOCH (fenced), else NOT_ENOUGH_REPLICAS (retriable:
 * the coordinator could not say now). */
int16_t bk_txn_td_produce_error(int16_t coordinator_error);
/* The __consumer_offsets partition of `group` (its coordinator partition). */
int32_t bk_txn_td_offsets_partition(bk_txn_td_t *td, kp_str_t group);
/* TxnOffsetCommit v5 on the transaction's coordinator (this node): adds
 * that partition to the ongoing transaction as AddOffsetsToTxn does. */
void bk_txn_td_add_offsets_implicit(bk_txn_td_t *td, kp_str_t transactional_id, int64_t producer_id,
                                    int16_t producer_epoch, kp_str_t group, bk_txn_td_answer_fn fn, void *arg);

/* KIP-890 verification (AddPartitionsToTxn v4+ VerifyOnly): is `topic`-
 * `partition` in the ongoing transaction of this id with this producer id
 * and epoch? NONE, or the core's error (bk_txn_verify); NOT_COORDINATOR /
 * COORDINATOR_NOT_AVAILABLE when the id is not coordinated here. At once,
 * nothing written. */
int16_t bk_txn_td_verify(bk_txn_td_t *td, kp_str_t transactional_id, int64_t producer_id, int16_t producer_epoch,
                         const char *topic, int32_t partition);
/* AddOffsetsToTxn: adds the group's __consumer_offsets partition. */
void bk_txn_td_add_offsets(bk_txn_td_t *td, const kp_add_offsets_to_txn_request_t *q, bk_txn_td_answer_fn fn, void *arg);
/* EndTxn: answered once PrepareCommit/PrepareAbort is replicated (the
 * markers follow). v5 (transactions v2) bumps the epoch with it and the
 * answer carries the producer id/epoch of the next transaction. */
void bk_txn_td_end_txn(bk_txn_td_t *td, const kp_end_txn_request_t *q, int16_t version, bk_txn_td_answer_fn fn,
                       void *arg);

/* One transactional id as DescribeTransactions / ListTransactions show it. */
typedef struct {
    const char *transactional_id;
    int16_t error;                       /* Describe: NOT_COORDINATOR, TRANSACTIONAL_ID_NOT_FOUND, ... */
    const bk_txn_meta_t *meta;           /* NULL unless error is NONE */
} bk_txn_td_txn_t;

/* What a query produced, valid only during the callback. */
typedef struct {
    const char *unsent;                  /* NULL: answer; else why not (out of memory: close) */
    int16_t error;                       /* ListTransactions' top-level error */
    const bk_txn_td_txn_t *txns;
    size_t ntxns;
    const bool *unknown_states;          /* ListTransactions: per q->state_filters, not a state */
} bk_txn_td_query_t;

typedef void (*bk_txn_td_query_fn)(void *arg, const bk_txn_td_query_t *res);

/* DescribeTransactions: res->txns per q->transactional_ids, from the cores
 * this node holds (ids coordinated elsewhere: NOT_COORDINATOR, as Kafka;
 * clients ask each broker). Answered during the call. */
void bk_txn_td_describe_transactions(bk_txn_td_t *td, const kp_describe_transactions_request_t *q, bk_txn_td_query_fn fn,
                                 void *arg);
/* ListTransactions: res->txns matching the state, producer id and (v1+)
 * duration filters over every core this node holds, at most
 * BK_TXN_TD_LIST_MAX; res->error UNKNOWN_SERVER_ERROR when the list could not
 * be completed (out of memory). Answered during the call. */
void bk_txn_td_list_transactions(bk_txn_td_t *td, const kp_list_transactions_request_t *q, int16_t version,
                             bk_txn_td_query_fn fn, void *arg);

/* Produce of a transactional batch: NONE; INVALID_PRODUCER_EPOCH for an
 * epoch older than the coordinator's; INVALID_TXN_STATE when this
 * node coordinates the id and the partition is not in its ongoing
 * transaction for (producer_id, epoch). Coordinated elsewhere: NONE (as
 * Kafka before KIP-890, the partition leader does not ask). */
int16_t bk_txn_td_check_produce(bk_txn_td_t *td, kp_str_t transactional_id, int64_t producer_id, int16_t epoch,
                            const char *topic, int32_t partition);

#endif
