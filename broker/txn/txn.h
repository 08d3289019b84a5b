/* txn.h — the transaction coordinator (KIP-98 / KIP-447) as pure code.
 *
 * One bk_txn_coord_t per `__transaction_state` partition this node leads.
 * Every call takes (coordinator state, request, now_ms) and fills a
 * bk_txn_out_t: the error to answer, records to append to that partition
 * (key + value, Kafka's exact bytes), and WriteTxnMarkers to send. No I/O,
 * no clock reads, no globals; one event-loop thread owns a coordinator.
 *
 * The write protocol (Kafka's "pending transition"): a call that changes a
 * transactional id's state returns out->wait = true and one record. The
 * caller appends it and, once it is durable (or failed), calls
 * bk_txn_write_done(id, append_error): only then does the state change and
 * the waiting request get its answer (out->error, out->producer_id/epoch).
 * While a write is in flight every other request for that id answers
 * CONCURRENT_TRANSACTIONS. When a PrepareCommit/PrepareAbort becomes durable,
 * out->markers says which partitions need a marker; each acknowledged one is
 * reported with bk_txn_marker_done; after the last, a CompleteCommit/
 * CompleteAbort record is emitted (same write protocol, nobody waits).
 *
 * Errors are Kafka error codes (protocol/kp_errors.h). PRODUCER_FENCED is
 * returned for every version: bk_txn_fenced_error() converts it for old
 * request versions.
 */
#ifndef SKIFF_BK_TXN_H
#define SKIFF_BK_TXN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"

#define BK_TXN_IDS_MAX ((size_t)1 << 20)    /* transactional ids per coordinator partition */
#define BK_TXN_PARTS_MAX 100000             /* partitions in one transaction */
#define BK_TXN_ID_MAX_BYTES 32767           /* a STRING's length limit */
#define BK_TXN_TOPIC_MAX_BYTES 249
#define BK_TXN_EPOCH_MAX 32767              /* Short.MaxValue */
#define BK_TXN_OFFSETS_TOPIC "__consumer_offsets"
#define BK_TXN_LOG_VALUE_VERSION 0          /* what we write (1 when client_txn_version
                                               is set); 0 and 1 are read */

/* TransactionState ids, as stored in TransactionLogValue.TransactionStatus. */
typedef enum {
    BK_TXN_EMPTY = 0,
    BK_TXN_ONGOING = 1,
    BK_TXN_PREPARE_COMMIT = 2,
    BK_TXN_PREPARE_ABORT = 3,
    BK_TXN_COMPLETE_COMMIT = 4,
    BK_TXN_COMPLETE_ABORT = 5,
    BK_TXN_DEAD = 6,
    BK_TXN_PREPARE_EPOCH_FENCE = 7,
} bk_txn_state_t;

#define BK_TXN_STATE_COUNT 8

/* A topic partition. In coordinator state and outputs the topic string is
 * owned (heap) by whoever holds the struct; in inputs it is borrowed. */
typedef struct {
    const char *topic;
    int32_t partition;
} bk_txn_tp_t;

/* What a transactional id's state is (Kafka's TransactionMetadata). */
typedef struct {
    bk_txn_state_t state;
    int64_t producer_id;
    int64_t prev_producer_id;    /* before the last id rotation, -1 (KIP-360 retries) */
    int16_t producer_epoch;      /* -1 = none yet */
    int16_t last_producer_epoch; /* before the last KIP-360 bump, -1; not persisted */
    int32_t timeout_ms;
    bk_txn_tp_t *parts;          /* owned, sorted by (topic, partition), unique */
    size_t nparts, cap;
    int64_t last_update_ms;
    int64_t start_ms;            /* -1 when no transaction is open */
    int16_t client_txn_version;  /* 2: the last EndTxn was v5 (transactions v2, its
                                    epoch bumped); else 0. Persisted as the log
                                    value's ClientTransactionVersion (value v1;
                                    v0 when 0), so a reloaded coordinator still
                                    recognises that EndTxn's retry */
} bk_txn_meta_t;

typedef struct {
    int64_t timeout_max_ms;        /* transaction.max.timeout.ms (900000) */
    int64_t id_expiration_ms;      /* transactional.id.expiration.ms (604800000) */
} bk_txn_config_t;

/* Gives the next producer id from the node's producer-id block. Returns
 * false when none is available right now (the request then answers
 * COORDINATOR_LOAD_IN_PROGRESS, retriable). */
typedef bool (*bk_txn_alloc_pid_fn)(void *ctx, int64_t *producer_id);

typedef struct bk_txn_entry bk_txn_entry_t;

typedef struct {
    bk_txn_config_t cfg;
    int32_t coordinator_epoch;     /* leader epoch of our __transaction_state partition */
    bk_txn_alloc_pid_fn alloc_pid;
    void *alloc_ctx;
    bk_txn_entry_t **v;            /* sorted by transactional id */
    size_t n, cap;
} bk_txn_coord_t;

/* A record for __transaction_state (NOTES.md §5.4): key = INT16 0 +
 * TransactionLogKey v0; value = INT16 version + TransactionLogValue, or
 * NULL (a tombstone: the id is dead). */
typedef struct {
    uint8_t *key;
    size_t key_len;
    uint8_t *value;                /* NULL = tombstone */
    size_t value_len;
} bk_txn_rec_t;

/* WriteTxnMarkers work for one transaction: send a COMMIT/ABORT marker with
 * (producer_id, producer_epoch, coordinator_epoch) to every partition. */
typedef struct {
    char *transactional_id;
    int64_t producer_id;
    int16_t producer_epoch;
    bool commit;
    int32_t coordinator_epoch;
    bk_txn_tp_t *parts;            /* owned copies */
    size_t nparts;
} bk_txn_markers_t;

/* The result of one coordinator call. Zero it with bk_txn_out_init, free
 * with bk_txn_out_free (reusable after). Outputs accumulate across calls
 * until freed. err (KP_OK / KP_ERR_NOMEM) is sticky: when set the caller
 * drops everything and answers UNKNOWN_SERVER_ERROR (state is unchanged for
 * the id whose call failed). */
typedef struct {
    int16_t error;                 /* the answer, when !wait */
    bool wait;                     /* answer after bk_txn_write_done(id) */
    int64_t producer_id;           /* InitProducerId answer (-1 on error) */
    int16_t producer_epoch;
    bk_txn_rec_t *recs;            /* append in this order */
    char **rec_ids;                /* transactional id of each record (for write_done) */
    size_t nrecs, recs_cap;
    bk_txn_markers_t *markers;
    size_t nmarkers, markers_cap;
    int err;
} bk_txn_out_t;

void bk_txn_out_init(bk_txn_out_t *o);
void bk_txn_out_free(bk_txn_out_t *o);

/* Kafka's defaults (900000 ms, 7 days). */
void bk_txn_config_defaults(bk_txn_config_t *cfg);
/* Empty coordinator for a partition led at coordinator_epoch. alloc_pid
 * must not be NULL. */
void bk_txn_coord_init(bk_txn_coord_t *c, const bk_txn_config_t *cfg, int32_t coordinator_epoch,
                       bk_txn_alloc_pid_fn alloc_pid, void *alloc_ctx);
void bk_txn_coord_free(bk_txn_coord_t *c);

/* ---- client requests ------------------------------------------------------- */

typedef struct {
    const char *transactional_id;  /* NULL: idempotent producer (new id, epoch 0) */
    int32_t timeout_ms;            /* transaction.timeout.ms */
    int64_t producer_id;           /* KIP-360 (v3+): current id, else -1 */
    int16_t producer_epoch;        /* KIP-360 (v3+): current epoch, else -1 */
} bk_txn_init_req_t;

/* InitProducerId. Errors: INVALID_REQUEST (empty id), INVALID_TRANSACTION_
 * TIMEOUT (timeout <= 0 or > max), CONCURRENT_TRANSACTIONS (a write in
 * flight, or a transaction being completed: the previous instance's open
 * transaction is aborted first, answering CONCURRENT_TRANSACTIONS once the
 * PrepareAbort is durable; the client retries), PRODUCER_FENCED (KIP-360
 * id/epoch that is not current), COORDINATOR_LOAD_IN_PROGRESS (no producer
 * id available). Success: a new producer id the first time; afterwards the
 * same id with epoch + 1, or a new id (epoch 0) when the epoch is exhausted. */
void bk_txn_init_producer_id(bk_txn_coord_t *c, const bk_txn_init_req_t *req, int64_t now_ms,
                             bk_txn_out_t *out);

/* AddPartitionsToTxn v0-v3 (one error for the whole request; the broker
 * copies it to every partition). INVALID_PRODUCER_ID_MAPPING (unknown id or
 * other producer id), PRODUCER_FENCED (other epoch), CONCURRENT_TRANSACTIONS
 * (write in flight, or PrepareCommit/PrepareAbort), INVALID_TXN_STATE
 * (Dead / fencing), INVALID_REQUEST (too many partitions / bad names).
 * Partitions already in an Ongoing transaction answer NONE at once. */
void bk_txn_add_partitions(bk_txn_coord_t *c, const char *transactional_id, int64_t producer_id,
                           int16_t producer_epoch, const bk_txn_tp_t *parts, size_t nparts,
                           int64_t now_ms, bk_txn_out_t *out);

/* KIP-890 verification of one partition (AddPartitionsToTxn v4+ with
 * VerifyOnly): NONE when the id's transaction is Ongoing with this producer
 * id and epoch and holds the partition. INVALID_PRODUCER_ID_MAPPING
 * (unknown id, other producer id), PRODUCER_FENCED (other epoch),
 * CONCURRENT_TRANSACTIONS (a write in flight or Prepare*: the client
 * retries), INVALID_TXN_STATE (no transaction open, or the partition not in
 * it: the produce that asked must not append). Changes nothing. */
int16_t bk_txn_verify(const bk_txn_coord_t *c, const char *transactional_id, int64_t producer_id,
                      int16_t producer_epoch, const char *topic, int32_t partition);

/* AddOffsetsToTxn: adds __consumer_offsets-<offsets_partition> (the group's
 * coordinator partition, computed by the caller). Same errors. */
void bk_txn_add_offsets(bk_txn_coord_t *c, const char *transactional_id, int64_t producer_id,
                        int16_t producer_epoch, int32_t offsets_partition, int64_t now_ms,
                        bk_txn_out_t *out);

/* EndTxn v0-v4. Ongoing -> PrepareCommit/PrepareAbort (wait; on durability
 * out->markers lists the partitions). A retry after completion of the same
 * kind answers NONE, while completing CONCURRENT_TRANSACTIONS; the other
 * kind, or Empty, INVALID_TXN_STATE. Identity errors as AddPartitions. */
void bk_txn_end(bk_txn_coord_t *c, const char *transactional_id, int64_t producer_id,
                int16_t producer_epoch, bool commit, int64_t now_ms, bk_txn_out_t *out);

/* EndTxn at any version: bump_epoch (v5, transactions v2, KIP-890) also
 * bumps the producer epoch with the PrepareCommit/PrepareAbort record (the
 * markers carry it; not when the epoch is at its end) and answers
 * out->producer_id/epoch, the ones the next transaction uses; a retry with
 * the epoch before that bump answers as a retry of v0-4 does, with the
 * current id/epoch. */
void bk_txn_end_v(bk_txn_coord_t *c, const char *transactional_id, int64_t producer_id,
                  int16_t producer_epoch, bool commit, bool bump_epoch, int64_t now_ms, bk_txn_out_t *out);

/* ---- completions and time --------------------------------------------------- */

/* The record emitted for transactional_id has been appended (append_error
 * NONE) or has failed (the produce error; the transition is undone and the
 * waiting request answers NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE /
 * UNKNOWN_SERVER_ERROR as Kafka maps it). Unknown id or nothing in flight:
 * no-op with out->error NONE. */
void bk_txn_write_done(bk_txn_coord_t *c, const char *transactional_id, int16_t append_error,
                       int64_t now_ms, bk_txn_out_t *out);

/* A marker for (producer_id, producer_epoch) was written on tp (or tp no
 * longer exists). Stale or duplicate acks are ignored. After the last one a
 * Complete* record is emitted (out->nrecs grows). */
void bk_txn_marker_done(bk_txn_coord_t *c, const char *transactional_id, int64_t producer_id,
                        int16_t producer_epoch, bk_txn_tp_t tp, int64_t now_ms, bk_txn_out_t *out);

/* Markers still missing for a PrepareCommit/PrepareAbort id (added to
 * out->markers; for re-sending after an error). false when none. */
bool bk_txn_pending_markers(const bk_txn_coord_t *c, const char *transactional_id, bk_txn_out_t *out);

/* Periodic work: aborts Ongoing transactions older than their timeout
 * (epoch bumped first, as Kafka does, so the old producer is fenced),
 * re-emits a Complete* record whose write failed, and writes a tombstone
 * for ids idle (Empty / Complete*) longer than id_expiration_ms. */
void bk_txn_tick(bk_txn_coord_t *c, int64_t now_ms, bk_txn_out_t *out);

/* ---- persistence (txn_log.c) ------------------------------------------------ */

/* Encodes the record for (id, meta). meta NULL = tombstone. KP_ERR_NOMEM. */
KP_MUST_CHECK int bk_txn_rec_encode(const char *transactional_id, const bk_txn_meta_t *meta,
                                    bk_txn_rec_t *rec);
void bk_txn_rec_free(bk_txn_rec_t *rec);

/* Decodes a record into *id (heap, NUL-terminated) and *meta (owned parts;
 * free with bk_txn_meta_free). *dead = tombstone (meta untouched).
 * KP_ERR_* for malformed bytes, an unknown key or value version, a status
 * outside 0..7, or a bound exceeded. */
KP_MUST_CHECK int bk_txn_rec_decode(const uint8_t *key, size_t key_len, const uint8_t *value,
                                    size_t value_len, char **id, bk_txn_meta_t *meta, bool *dead);

/* Replays one record of the partition (in log order). Fails with the
 * decode status, leaving the coordinator unchanged. */
KP_MUST_CHECK int bk_txn_load(bk_txn_coord_t *c, const uint8_t *key, size_t key_len,
                              const uint8_t *value, size_t value_len);

/* Ends a replay: every PrepareCommit/PrepareAbort transaction gets its
 * markers (out->markers), which the new coordinator must send to finish
 * the job; Ongoing ones resume their timeouts. */
void bk_txn_load_done(bk_txn_coord_t *c, int64_t now_ms, bk_txn_out_t *out);

void bk_txn_meta_free(bk_txn_meta_t *m);

/* ---- queries (txn_query.c) -------------------------------------------------- */

/* Kafka's state names ("Empty", "Ongoing", ..., "PrepareEpochFence"). */
const char *bk_txn_state_name(bk_txn_state_t s);
/* Parses a name; false when unknown. */
bool bk_txn_state_parse(const char *name, bk_txn_state_t *s);

/* The committed state of an id (not a write in flight), NULL if unknown.
 * Valid until the next call that changes the coordinator. */
const bk_txn_meta_t *bk_txn_get(const bk_txn_coord_t *c, const char *transactional_id);

/* DescribeTransactions for one id: TRANSACTIONAL_ID_NOT_FOUND or NONE with
 * *meta pointing into the coordinator (valid as for bk_txn_get). */
int16_t bk_txn_describe(const bk_txn_coord_t *c, const char *transactional_id,
                        const bk_txn_meta_t **meta);

typedef void (*bk_txn_list_fn)(void *ctx, const char *transactional_id, const bk_txn_meta_t *meta);

/* ListTransactions: calls fn for every id (in id order) whose state is in
 * states (n = 0: any), whose producer id is in pids (n = 0: any) and, when
 * duration_ms >= 0, whose now_ms - start_ms > duration_ms (Kafka's test, -1
 * start included). unknown[i] is set
 * for each state filter that is not a state name (caller-sized nstates). */
void bk_txn_list(const bk_txn_coord_t *c, const char *const *states, size_t nstates,
                 const int64_t *pids, size_t npids, int64_t duration_ms, int64_t now_ms,
                 bool *unknown, bk_txn_list_fn fn, void *ctx);

/* Kafka's partitionFor: abs(String.hashCode(id)) % n, with Utils.abs
 * (MIN_VALUE -> 0); hashCode over the UTF-16 code units of the UTF-8 id
 * (malformed bytes count as U+FFFD each). n >= 1. */
int32_t bk_txn_partition_for(const char *transactional_id, int32_t n);

/* PRODUCER_FENCED is new in InitProducerId v4, AddPartitionsToTxn v2,
 * AddOffsetsToTxn v2, EndTxn v2, TxnOffsetCommit v3 (KIP-588); older
 * versions get INVALID_PRODUCER_EPOCH. Other errors pass through. */
int16_t bk_txn_fenced_error(int16_t api_key, int16_t api_version, int16_t error);

#endif
