/* replica_int.h — internals shared by replica.c, fetcher.c and
 * replica_alter.c. Not for other files: use broker/replica.h. */
#ifndef SKIFF_BK_REPLICA_INT_H
#define SKIFF_BK_REPLICA_INT_H

#include "broker/replication/partition.h"
#include "broker/replication/replica.h"

struct event;
typedef struct fetcher fetcher_t;

/* An acks=all append waiting for the core (the produce purgatory). */
typedef struct rp_wait {
    uint64_t id;
    bk_repl_ps_done_fn fn;
    void *ctx;
    void *part_ctx;
    bk_repl_ps_result_t res;              /* handed to fn with the final error */
    struct rp_wait *next;
} rp_wait_t;

/* Driver state of one held partition (bk_repl_part_t.rp). */
typedef struct bk_rp {
    bk_repl_t *core;
    bool want_fetch;                 /* the core asked for `fetch`, not sent yet */
    bk_repl_fetch_req_t fetch;
    uint64_t alter_seq;              /* the proposal last sent */
    bool alter_queued;               /* alter_req waits in the node's AlterPartition queue */
    bk_repl_alter_req_t alter_req;   /* the proposal to send (latest) */
    rp_wait_t *waits;                /* at most BK_REPL_WAITS_MAX */
    uint32_t n_waits;
    /* The core's timer: one libevent timer per partition, armed for
     * bk_repl_next_tick_ms after every core call (bk_rp_exec), so a node
     * with 10,000 idle partitions does not tick each one 100 times a
     * second. The callback finds the partition again by its ids (slots
     * move when the partition table grows). */
    struct event *tick_ev;
    int64_t tick_at;                 /* armed for this time; INT64_MAX: not armed */
    bk_node_t *n;
    bk_meta_uuid_t topic_id;
    int32_t partition;
} bk_rp_t;

#define BK_FETCHERS_MAX 1024         /* = source brokers (BK_META_BROKERS_MAX) */

/* A partition whose proposal waits for the next AlterPartition batch. */
typedef struct {
    bk_meta_uuid_t topic_id;
    int32_t partition;
} bk_alter_key_t;

struct bk_repl_rm {
    bk_node_t *n;
    /* AlterPartition batching (replica_alter.c): proposals queue here, one
     * request (or one local commit) carries up to BK_ALTER_BATCH_MAX of
     * them, at most one in flight. */
    bk_alter_key_t *aq;
    size_t naq, cap_aq;
    struct event *alter_ev;          /* flush on the next loop turn */
    bool alter_inflight;
    uint64_t alter_gen;              /* numbers each batch; a stale completion is ignored */
    int64_t alter_sent_ms;
    int64_t alter_try_ms;            /* last failed send (retry pacing) */
    int64_t alter_log_ms;            /* last "not sent" line; others counted */
    uint64_t alter_unsent;
    struct event *timer;
    uint64_t next_ack_id;
    fetcher_t *fetchers[BK_FETCHERS_MAX];
    size_t nfetchers;
    bk_repl_replica_stats_t st;
};

/* Follower's batches from a fetch response, for the append action. */
typedef struct {
    const uint8_t *data;             /* first batch; batches back to back */
    size_t sizes[BK_REPL_BATCHES_MAX];
    uint32_t n;
} rp_src_t;

/* Executes a core output on p in the contract order (replica.c). src: the
 * follower's batches (NULL for other outputs). */
void bk_rp_exec(bk_node_t *n, bk_repl_part_t *p, const bk_repl_out_t *out, const rp_src_t *src);
struct bk_repl_rm *bk_rm_get(bk_node_t *n);
int64_t bk_rp_now_ms(void);

/* Follower whose LEO is below the leader's log start: empties the log,
 * restarts it at new_start and rebuilds the core (Kafka's
 * truncateFullyAndStartAt). */
void bk_replica_restart_log(bk_node_t *n, bk_repl_part_t *p, int64_t new_start);

/* ---- the partition service's side (partition.c only) ----
 * Every leader append reaches the core through these, called by the
 * partition service: nothing else appends to a led partition. */

/* min.insync.replicas of a topic with overrides tc, as the core takes it:
 * clamped to [1, INT32_MAX]. */
int32_t bk_replica_min_insync(const bk_cfg_t *cfg, const bk_cfg_topic_t *tc);

/* Before appending: NOT_LEADER_OR_FOLLOWER when the core is not leader,
 * NOT_ENOUGH_REPLICAS for acks=all when the ISR is below min_insync,
 * REQUEST_TIMED_OUT when the wait bound is reached; 0 = go ahead. Sets the
 * core's min.insync to min_insync. */
int16_t bk_replica_check_produce(bk_node_t *n, bk_repl_part_t *p, bool acks_all, int32_t min_insync);

/* After a leader append of [info->base_offset, info->last_offset]: the core
 * counts it, the HW and waiters follow. With acks_all, returns true when
 * the caller must wait: fn(ctx, part_ctx, res') comes later, exactly once,
 * res' being *res (the offsets) with the final error. Returns false when
 * done now; res->error is then the final error (0 = ok). */
bool bk_replica_appended(bk_node_t *n, bk_repl_part_t *p, const st_append_info_t *info, bool acks_all,
                         int64_t deadline_ms, bk_repl_ps_done_fn fn, void *ctx, void *part_ctx, bk_repl_ps_result_t *res);

/* An acks=all retried duplicate of an idempotent producer, whose records
 * are already in the log at [res->base_offset, res->last_offset]: answered
 * like a fresh append, once the HW covers them (never at once just because
 * the log has them: the ISR may not). Same return/callback contract as
 * bk_replica_appended; res->error may also be NOT_ENOUGH_REPLICAS (ISR
 * below min.insync) or NOT_ENOUGH_REPLICAS_AFTER_APPEND (offsets not on
 * the core's log). Call after bk_replica_check_produce. */
bool bk_replica_wait_duplicate(bk_node_t *n, bk_repl_part_t *p, int64_t deadline_ms, bk_repl_ps_done_fn fn, void *ctx,
                               void *part_ctx, bk_repl_ps_result_t *res);
/* SKIFF_REPL_TRACE=1 in the environment at the first call: replication
 * trace lines on stderr. Read once (issue 19: getenv ran on every replica
 * fetch served, a walk of the environment per partition per fetch). */
bool bk_replica_trace_on(void);

/* fetcher.c */
void bk_fetcher_kick(bk_node_t *n, int32_t leader_id);
void bk_fetcher_tick(bk_node_t *n, int64_t now_ms);
void bk_fetcher_free_all(struct bk_repl_rm *rm);

/* replica_alter.c: queues p's proposal a for the next batch (never sends
 * or commits inside the caller: the batch goes on the next loop turn). */
void bk_alter_send(bk_node_t *n, bk_repl_part_t *p, const bk_repl_alter_req_t *a);
/* From the replica timer: re-tries a batch that could not be sent. */
void bk_alter_tick(bk_node_t *n, int64_t now_ms);
/* Frees the queue and its event (bk_repl_replica_stop). */
void bk_alter_free(struct bk_repl_rm *rm);

#endif
