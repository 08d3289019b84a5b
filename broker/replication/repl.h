/* repl.h — the pure replication core of one partition replica (issue 6).
 *
 * Like raft/raft.h and broker/controller.h, this is a state machine: every
 * call takes (state, event, now_ms) and fills a bk_repl_out_t saying what the
 * driver must do. It never reads a clock, a socket or a file. The log is
 * modelled abstractly: log end offset (LEO), the leader-epoch cache
 * (epoch -> start offset), and the high watermark (HW). The driver owns the
 * bytes (storage/st_log.h) and mirrors the core's truncate/append actions.
 *
 * Offsets follow Kafka: the log holds [log_start, leo); HW is the first offset
 * NOT committed; consumers may read offsets < HW only.
 *
 * Driver contract for a bk_repl_out_t, in this order:
 *   1. out.truncate:  truncate the log (and epoch cache) to out.truncate_to
 *   2. out.append[]:  append these batches (leader: the batch just produced
 *                     gets these offsets/epoch; follower: exactly the leader's
 *                     batches from the fetch response)
 *   3. out.hw_changed: publish out.hw to readers; checkpoint it lazily
 *   4. out.send_fetch: send out.fetch to out.fetch.leader_id
 *   5. out.alter:     send an AlterPartition request out.alter_req
 *   6. out.acks[]:    complete these acks=all produce waits
 * Out structs are filled by the core; pointers in them point nowhere (all
 * content is copied), so they live as long as the caller keeps them.
 *
 * Safety rules (KIP-101 / KIP-279 / KIP-320):
 * - A follower never truncates to its HW. It fetches with (fetch offset, last
 *   fetched epoch); the leader answers a diverging (epoch, end offset) from
 *   its epoch cache and the follower truncates to min(that end, its own end
 *   of that epoch), repeating until the epochs agree.
 * - Leader HW = min LEO over the maximal ISR (committed ISR plus members of a
 *   pending expansion); it never moves backwards. A new leader starts with
 *   every follower LEO unknown, so its HW waits for the whole ISR to fetch.
 * - The ISR changes only through the controller (AlterPartition); the leader
 *   applies it when the image (or the AlterPartition response) carries a
 *   newer partition epoch.
 */
#ifndef SKIFF_BK_REPL_H
#define SKIFF_BK_REPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_errors.h"

#define BK_REPL_MUST_CHECK __attribute__((warn_unused_result))

/* Bounds (compile-time). */
#define BK_REPL_REPLICAS_MAX 8     /* replicas of one partition */
#define BK_REPL_EPOCHS_MAX 256     /* epoch cache entries; the oldest is
                                      dropped when full (see README) */
#define BK_REPL_BATCHES_MAX 16     /* batches in one fetch response */
#define BK_REPL_WAITS_MAX 256      /* pending acks=all produces */
#define BK_REPL_NO_NODE (-1)
#define BK_REPL_NO_EPOCH (-1)
#define BK_REPL_NO_OFFSET (-1)

typedef enum bk_repl_role {
    BK_REPL_NONE = 0,    /* not a replica of this partition (or stopped) */
    BK_REPL_LEADER,
    BK_REPL_FOLLOWER,    /* leader_id may be BK_REPL_NO_NODE (offline) */
} bk_repl_role_t;

typedef struct bk_repl_config {
    int32_t node_id;
    int32_t min_insync;            /* min.insync.replicas */
    int64_t lag_max_ms;            /* replica.lag.time.max.ms */
    int64_t fetch_backoff_ms;      /* replica.fetch.backoff.ms */
    int64_t fetch_timeout_ms;      /* in-flight fetch given up after this */
    int64_t alter_retry_ms;        /* unanswered AlterPartition re-sent */
    uint32_t fetch_batches_max;    /* <= BK_REPL_BATCHES_MAX */
    /* Pause before fetching again after an answer with no data for this
     * partition; < 0: fetch_backoff_ms / 10 (a leader that answers at once).
     * The broker sets 0: its leader parks an empty fetch for
     * replica.fetch.wait.max.ms, and a partition left out of the next fetch
     * to that leader could only join after that fetch returns — every
     * acks=all write to it then waited up to max.wait (seen as ~0.5 s steps
     * per transaction step, issue 9). */
    int64_t empty_fetch_pause_ms;
    /* TEST-ONLY mutation for the simulation's self-check: a follower that
     * starts following truncates to its HW (pre-KIP-101 behaviour) instead of
     * relying on epochs. Never set outside tests. */
    bool test_truncate_to_hw;
} bk_repl_config_t;

/* Kafka defaults (min.insync 1, lag 30000 ms, backoff 1000 ms ...). */
void bk_repl_config_default(bk_repl_config_t *c);

/* One entry of the leader-epoch cache: `epoch` starts at `start_offset`. */
typedef struct bk_repl_epoch {
    int32_t epoch;
    int64_t start_offset;
} bk_repl_epoch_t;

/* A record batch described by its offsets and leader epoch. */
typedef struct bk_repl_batch {
    int64_t base_offset;
    int64_t last_offset;   /* inclusive */
    int32_t epoch;
} bk_repl_batch_t;

/* The partition as the metadata image states it. */
typedef struct bk_repl_image {
    int32_t leader_id;             /* BK_REPL_NO_NODE = offline */
    int32_t leader_epoch;
    int32_t partition_epoch;
    int32_t replicas[BK_REPL_REPLICAS_MAX];
    uint32_t n_replicas;
    int32_t isr[BK_REPL_REPLICAS_MAX];
    uint32_t n_isr;
} bk_repl_image_t;

/* What survives a restart: the log (LEO + epoch cache) and the HW checkpoint. */
typedef struct bk_repl_restore {
    int64_t log_start;
    int64_t leo;
    int64_t hw_checkpoint;         /* clamped to [log_start, leo] */
    const bk_repl_epoch_t *epochs; /* ascending; copied */
    uint32_t n_epochs;
} bk_repl_restore_t;

/* A follower's replica fetch for this partition. */
typedef struct bk_repl_fetch_req {
    int32_t replica_id;
    int32_t leader_id;             /* whom it is sent to */
    int32_t current_leader_epoch;
    int64_t fetch_offset;
    int32_t last_fetched_epoch;    /* BK_REPL_NO_EPOCH when the log is empty */
    uint64_t seq;                  /* follower's request number; echoed */
} bk_repl_fetch_req_t;

/* The leader's answer. On error != NONE nothing else is meaningful except
 * leader_epoch. With `diverging`, the follower must truncate. Otherwise the
 * driver attaches the batches covering [fetch_offset, fetch_offset_end)
 * (batches[] of up to fetch_batches_max, starting exactly at fetch_offset). */
typedef struct bk_repl_fetch_resp {
    int16_t error;                 /* KP_ERROR_* */
    int32_t leader_epoch;          /* the leader's epoch */
    int64_t req_fetch_offset;      /* echo */
    uint64_t req_seq;              /* echo */
    int64_t high_watermark;
    int64_t leader_leo;
    int64_t log_start;
    bool diverging;
    int32_t diverging_epoch;
    int64_t diverging_end_offset;
    bk_repl_batch_t batches[BK_REPL_BATCHES_MAX];
    uint32_t n_batches;
} bk_repl_fetch_resp_t;

/* AlterPartition request (leader -> controller). */
typedef struct bk_repl_alter_req {
    int32_t leader_id;
    int32_t leader_epoch;
    int32_t partition_epoch;       /* the epoch the proposal is based on */
    int32_t isr[BK_REPL_REPLICAS_MAX];
    uint32_t n_isr;
    uint64_t seq;                  /* proposal number (re-sends keep it) */
} bk_repl_alter_req_t;

/* AlterPartition response (the driver matches it to the request and copies
 * the request's seq into req_seq). On NONE, the new state as the controller
 * wrote it. INELIGIBLE_REPLICA / OPERATION_NOT_ATTEMPTED with the proposal's
 * own partition epoch mean "not applied": the proposal is dropped. Any other
 * error (INVALID_UPDATE_VERSION, FENCED_LEADER_EPOCH, ...) leaves it
 * unknown whether a re-send was applied, so the leader keeps counting the
 * proposal (maximal ISR) and waits for the image, as Kafka does. */
typedef struct bk_repl_alter_resp {
    int16_t error;
    uint64_t req_seq;
    int32_t leader_epoch;
    int32_t partition_epoch;
    int32_t isr[BK_REPL_REPLICAS_MAX];
    uint32_t n_isr;
} bk_repl_alter_resp_t;

/* Completion of an acks=all produce. */
typedef struct bk_repl_ack {
    uint64_t id;                   /* the caller's produce id */
    int16_t error;                 /* NONE, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                                      REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER */
    int64_t base_offset;
} bk_repl_ack_t;

typedef struct bk_repl_out {
    bool truncate;
    int64_t truncate_to;
    bk_repl_batch_t append[BK_REPL_BATCHES_MAX];
    uint32_t n_append;
    bool hw_changed;
    int64_t hw;
    bool send_fetch;
    bk_repl_fetch_req_t fetch;
    bool alter;
    bk_repl_alter_req_t alter_req;
    bk_repl_ack_t acks[BK_REPL_WAITS_MAX];
    uint32_t n_acks;
} bk_repl_out_t;

typedef struct bk_repl bk_repl_t;

/* Creates a replica core (role NONE) over the restored log. Returns NULL on a
 * bad config/restore (NULL arguments, non-ascending epochs, leo < log_start)
 * or out of memory. Free with bk_repl_free. */
bk_repl_t *bk_repl_new(const bk_repl_config_t *cfg, const bk_repl_restore_t *rs);
void bk_repl_free(bk_repl_t *r);

/* A new metadata image for the partition. Stale images (older leader epoch,
 * or same leader epoch and not newer partition epoch) change nothing. A newer
 * leader epoch makes this node leader (leader_id == node_id), follower (in
 * replicas) or NONE; waits of a former leader fail NOT_LEADER_OR_FOLLOWER. */
void bk_repl_on_image(bk_repl_t *r, const bk_repl_image_t *img, int64_t now_ms,
                      bk_repl_out_t *out);

/* Timers: leader expires waits and proposes ISR shrinks; follower sends the
 * next fetch when due. Call it at bk_repl_next_tick_ms (or any time: early
 * calls do nothing). */
void bk_repl_tick(bk_repl_t *r, int64_t now_ms, bk_repl_out_t *out);

/* The earliest time at which bk_repl_tick can act or change state, given
 * the state now; INT64_MAX when only another event can make it act.
 * bk_repl_tick at any now_ms below it is a no-op; any other entry point may
 * move it (earlier or later), so a driver asks again after each call. This
 * lets the driver keep one timer per partition instead of ticking them all. */
int64_t bk_repl_next_tick_ms(const bk_repl_t *r);

/* Leader: a produce of `n_records` (> 0) records. Returns a Kafka error, and
 * on any error nothing is appended: NOT_LEADER_OR_FOLLOWER when not leader;
 * INVALID_RECORD for n_records == 0; with acks_all, NOT_ENOUGH_REPLICAS when
 * the committed ISR is smaller than min_insync and REQUEST_TIMED_OUT when
 * BK_REPL_WAITS_MAX waits are already pending. NONE: *base_offset set and
 * out->append[0] is the batch to write. With acks_all the completion comes
 * later in out->acks (id = `id`), REQUEST_TIMED_OUT at deadline_ms. */
int16_t bk_repl_produce(bk_repl_t *r, uint32_t n_records, bool acks_all,
                        uint64_t id, int64_t deadline_ms, int64_t now_ms,
                        int64_t *base_offset, bk_repl_out_t *out) BK_REPL_MUST_CHECK;

/* Leader: an acks=all produce whose records are ALREADY in the log at
 * [base_offset, end_offset) — an idempotent producer's retried duplicate.
 * It is answered like a fresh append: completion in out->acks (id = `id`)
 * once HW >= end_offset (at once when already there), REQUEST_TIMED_OUT at
 * deadline_ms, NOT_LEADER_OR_FOLLOWER on leadership loss. Answering it
 * before the HW reached it would acknowledge records a new leader from the
 * ISR may not have (issue 6, nemesis loss). Errors, with no wait added:
 * NOT_LEADER_OR_FOLLOWER, INVALID_RECORD (range not in [log start, LEO)),
 * NOT_ENOUGH_REPLICAS (committed ISR < min_insync), REQUEST_TIMED_OUT
 * (BK_REPL_WAITS_MAX waits pending). */
int16_t bk_repl_wait_replicated(bk_repl_t *r, int64_t base_offset, int64_t end_offset, uint64_t id,
                                int64_t deadline_ms, int64_t now_ms, bk_repl_out_t *out) BK_REPL_MUST_CHECK;

/* Leader: validates a follower's fetch and updates its LEO / caught-up time,
 * the HW and the ISR proposal. Fills *resp (the driver attaches batches). */
void bk_repl_on_fetch(bk_repl_t *r, const bk_repl_fetch_req_t *req,
                      int64_t now_ms, bk_repl_fetch_resp_t *resp,
                      bk_repl_out_t *out);

/* Follower: the answer to its fetch. Stale/duplicate answers are ignored. */
void bk_repl_on_fetch_resp(bk_repl_t *r, const bk_repl_fetch_resp_t *resp,
                           int64_t now_ms, bk_repl_out_t *out);

/* Leader: the controller's answer to its AlterPartition. */
void bk_repl_on_alter_resp(bk_repl_t *r, const bk_repl_alter_resp_t *resp,
                           int64_t now_ms, bk_repl_out_t *out);

/* OffsetForLeaderEpoch on this replica's log: the end offset of `epoch`
 * (start of the next higher epoch, or LEO for the latest) and the largest
 * epoch <= `epoch` it knows; (NO_EPOCH, NO_OFFSET) when unknown. */
void bk_repl_epoch_end_offset(const bk_repl_t *r, int32_t epoch,
                              int32_t *out_epoch, int64_t *out_end);

/* min.insync.replicas is a dynamic topic config: the driver refreshes it
 * before each produce (values < 1 count as 1). */
void bk_repl_set_min_insync(bk_repl_t *r, int32_t min_insync);

/* Accessors. */
bk_repl_role_t bk_repl_role(const bk_repl_t *r);
int32_t bk_repl_leader_epoch(const bk_repl_t *r);
int32_t bk_repl_partition_epoch(const bk_repl_t *r);
int32_t bk_repl_leader_id(const bk_repl_t *r);
int64_t bk_repl_leo(const bk_repl_t *r);
int64_t bk_repl_hw(const bk_repl_t *r);
/* The first offset a consumer may NOT read (= HW): consumers read < this. */
int64_t bk_repl_max_readable(const bk_repl_t *r);
/* Leader's ISR as applied (committed); returns the count, copies ids. */
uint32_t bk_repl_isr(const bk_repl_t *r, int32_t *ids, uint32_t cap);
uint32_t bk_repl_n_waits(const bk_repl_t *r);
/* Epoch cache copy; returns the count. */
uint32_t bk_repl_epochs(const bk_repl_t *r, bk_repl_epoch_t *e, uint32_t cap);

#endif
