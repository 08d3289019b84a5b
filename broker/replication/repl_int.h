/* repl_int.h — internals of the replication core shared by broker/repl_*.c.
 * Not for other files: use broker/repl.h. */
#ifndef SKIFF_BK_REPL_INT_H
#define SKIFF_BK_REPL_INT_H

#include "broker/replication/repl.h"

/* Leader's view of one follower. */
typedef struct repl_peer {
    int32_t id;
    int64_t leo;                  /* BK_REPL_NO_OFFSET until it fetches */
    int64_t last_fetch_ms;
    int64_t last_fetch_leader_leo;/* leader LEO at that fetch */
    int64_t last_caught_up_ms;    /* Kafka's lastCaughtUpTimeMs */
} repl_peer_t;

typedef struct repl_wait {
    uint64_t id;
    int64_t base_offset;
    int64_t required_offset;      /* complete when HW >= this */
    int64_t deadline_ms;
} repl_wait_t;

struct bk_repl {
    bk_repl_config_t cfg;
    bk_repl_role_t role;
    int32_t leader_id;
    int32_t leader_epoch;
    int32_t partition_epoch;
    int32_t replicas[BK_REPL_REPLICAS_MAX];
    uint32_t n_replicas;
    int32_t isr[BK_REPL_REPLICAS_MAX];    /* committed ISR (from controller) */
    uint32_t n_isr;

    /* abstract log */
    int64_t log_start;
    int64_t leo;
    int64_t hw;
    bk_repl_epoch_t epochs[BK_REPL_EPOCHS_MAX];
    uint32_t n_epochs;

    /* leader */
    int64_t epoch_start_offset;   /* LEO when it became leader */
    repl_peer_t peers[BK_REPL_REPLICAS_MAX];
    uint32_t n_peers;
    bool alter_pending;           /* counted in the maximal ISR until resolved */
    bool alter_wait_image;        /* outcome unknown: stop re-sending */
    uint64_t alter_seq;
    bk_repl_alter_req_t alter_inflight;
    int64_t alter_sent_ms;
    int64_t alter_backoff_until_ms;   /* after a refused proposal */
    repl_wait_t waits[BK_REPL_WAITS_MAX];
    uint32_t n_waits;

    /* follower */
    bool fetch_inflight;
    uint64_t fetch_seq;
    int64_t fetch_sent_ms;
    int64_t fetch_offset_sent;
    int64_t next_fetch_ms;
};

/* When the role's tick can next act (repl_leader.c, repl_follower.c). */
int64_t bk_repl_i_leader_next_tick(const bk_repl_t *r);
int64_t bk_repl_i_follower_next_tick(const bk_repl_t *r);

/* Clears every action of an out struct (each public entry point does). */
static inline void bk_repl_i_out_reset(bk_repl_out_t *out) {
    out->truncate = false;
    out->n_append = 0;
    out->hw_changed = false;
    out->send_fetch = false;
    out->alter = false;
    out->n_acks = 0;
}

/* epoch cache (repl_epochs.c) */
int32_t bk_repl_i_latest_epoch(const bk_repl_t *r);
void bk_repl_i_assign_epoch(bk_repl_t *r, int32_t epoch, int64_t start);
void bk_repl_i_truncate(bk_repl_t *r, int64_t offset);
bool bk_repl_i_ids_has(const int32_t *ids, uint32_t n, int32_t id);

/* leader (repl_leader.c) */
void bk_repl_i_become_leader(bk_repl_t *r, int64_t now_ms, bk_repl_out_t *out);
/* The replica set changed under the same leadership (a reassignment): peers
 * follow r->replicas; new ones start unknown and not caught up. */
void bk_repl_i_sync_peers(bk_repl_t *r);
void bk_repl_i_apply_isr(bk_repl_t *r, int32_t partition_epoch,
                         const int32_t *isr, uint32_t n_isr, int64_t now_ms,
                         bk_repl_out_t *out);
void bk_repl_i_fail_waits(bk_repl_t *r, int16_t error, bk_repl_out_t *out);
void bk_repl_i_leader_tick(bk_repl_t *r, int64_t now_ms, bk_repl_out_t *out);

/* follower (repl_follower.c) */
void bk_repl_i_become_follower(bk_repl_t *r, int64_t now_ms, bk_repl_out_t *out);
void bk_repl_i_follower_tick(bk_repl_t *r, int64_t now_ms, bk_repl_out_t *out);

#endif
