/* replica_int.h — internals shared by replica.c, fetcher.c and
 * replica_alter.c. Not for other files: use broker/replica.h. */
#ifndef SKIFF_BK_REPLICA_INT_H
#define SKIFF_BK_REPLICA_INT_H

#include "broker/replication/replica.h"

struct event;
typedef struct fetcher fetcher_t;

/* An acks=all produce partition waiting for the core. */
typedef struct rp_wait {
    uint64_t id;
    bk_replica_ack_fn fn;
    void *ctx;
    void *part_ctx;
    struct rp_wait *next;
} rp_wait_t;

/* Driver state of one held partition (bk_part_t.rp). */
typedef struct bk_rp {
    bk_repl_t *core;
    bool want_fetch;                 /* the core asked for `fetch`, not sent yet */
    bk_repl_fetch_req_t fetch;
    uint64_t alter_seq;              /* the proposal last sent */
    rp_wait_t *waits;                /* at most BK_REPL_WAITS_MAX */
    uint32_t n_waits;
} bk_rp_t;

#define BK_FETCHERS_MAX 1024         /* = source brokers (BK_BROKERS_MAX) */

struct bk_rm {
    bk_node_t *n;
    struct event *timer;
    uint64_t next_ack_id;
    fetcher_t *fetchers[BK_FETCHERS_MAX];
    size_t nfetchers;
    bk_replica_stats_t st;
};

/* Follower's batches from a fetch response, for the append action. */
typedef struct {
    const uint8_t *data;             /* first batch; batches back to back */
    size_t sizes[BK_REPL_BATCHES_MAX];
    uint32_t n;
} rp_src_t;

/* Executes a core output on p in the contract order (replica.c). src: the
 * follower's batches (NULL for other outputs). */
void bk_rp_exec(bk_node_t *n, bk_part_t *p, const bk_repl_out_t *out, const rp_src_t *src);
struct bk_rm *bk_rm_get(bk_node_t *n);
int64_t bk_rp_now_ms(void);

/* Follower whose LEO is below the leader's log start: empties the log,
 * restarts it at new_start and rebuilds the core (Kafka's
 * truncateFullyAndStartAt). */
void bk_replica_restart_log(bk_node_t *n, bk_part_t *p, int64_t new_start);

/* fetcher.c */
void bk_fetcher_kick(bk_node_t *n, int32_t leader_id);
void bk_fetcher_tick(bk_node_t *n, int64_t now_ms);
void bk_fetcher_free_all(struct bk_rm *rm);

/* replica_alter.c */
void bk_alter_send(bk_node_t *n, bk_part_t *p, const bk_repl_alter_req_t *a);

#endif
