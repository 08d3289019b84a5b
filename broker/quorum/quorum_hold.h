/* broker/quorum/quorum_hold.h — long-poll of raft Fetch on the leader (Kafka's
 * Fetch max_wait for the metadata partition), as bookkeeping the driver
 * (quorum.c) consults; the raft core stays without timers of its own.
 *
 * The driver steps every Fetch into the core at once (the follower's offset
 * must count for the high watermark without delay). When the answer would
 * carry nothing new for that follower — no entries, no error, no divergence
 * or snapshot, and the high watermark it was last told — the answer is not
 * sent: the request is held here. It is stepped again (and answered with
 * whatever the core says then) as soon as the leader's log end, high
 * watermark, epoch or role moves, or when its wait ends. Idle followers then
 * fetch a few times a second instead of every fetch interval, and a commit
 * reaches them as soon as it happens.
 *
 * The wait is short enough that a held Fetch never looks like a lost
 * leader: at most BK_QUORUM_HOLD_WAIT_MAX_MS and a quarter of both the fetch
 * timeout (the follower's leader-gone timer and the leader's check-quorum)
 * and the request timeout (the follower's connection deadline).
 *
 * Threading: loop thread only. Pure bookkeeping: no I/O, no clock reads. */
#ifndef SKIFF_BK_QUORUM_HOLD_H
#define SKIFF_BK_QUORUM_HOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/net/net.h"
#include "protocol/kp_header.h"
#include "raft/raft.h"

#define BK_QUORUM_HOLD_MAX 64             /* held Fetches; beyond it answers go out at once */
#define BK_QUORUM_HOLD_PEERS_MAX 64       /* fetchers whose last told HW is remembered */
#define BK_QUORUM_HOLD_WAIT_MAX_MS 500

/* One held Fetch: where its answer goes and the leader state it waits on. */
typedef struct {
    bk_net_slot_t slot;
    int16_t api_key, api_version;
    int32_t correlation_id;
    raft_msg_t req;                 /* the Fetch request (no pointers) */
    int64_t deadline_ms;
    int64_t log_end, hw;            /* leader state when held */
    int32_t epoch;
} bk_quorum_hold_entry_t;

typedef struct {
    int32_t id;
    int64_t hw;
} bk_quorum_hold_told_t;

typedef struct {
    bk_quorum_hold_entry_t v[BK_QUORUM_HOLD_MAX];
    size_t n;
    bk_quorum_hold_told_t told[BK_QUORUM_HOLD_PEERS_MAX];
    size_t ntold;
    int64_t wait_ms;                /* 0: never hold */
    uint64_t held_total;            /* Fetches held so far (for tests and figures) */
} bk_quorum_hold_t;

/* The wait: min(BK_QUORUM_HOLD_WAIT_MAX_MS, fetch_timeout_ms / 4,
 * request_timeout_ms / 4), 0 when that is below 1 ms. */
int64_t bk_quorum_hold_wait_ms(int64_t fetch_timeout_ms, int64_t request_timeout_ms);

/* Empty table with the given wait (0 disables holding). */
void bk_quorum_hold_init(bk_quorum_hold_t *h, int64_t wait_ms);

/* Forgets what every fetcher was told (a new leadership: the first answer
 * to each goes out at once). Held entries stay; the caller releases them. */
void bk_quorum_hold_forget(bk_quorum_hold_t *h);

/* Records that `peer` was just answered a Fetch carrying `hw`. When the table
 * is full the oldest-added peer is forgotten (it is then answered at once
 * next time). */
void bk_quorum_hold_told(bk_quorum_hold_t *h, int32_t peer, int64_t hw);

/* True when `resp` (the core's answer to a Fetch) tells its receiver
 * nothing new and there is room to hold it. */
bool bk_quorum_hold_should_hold(const bk_quorum_hold_t *h, const raft_msg_t *resp);

/* Holds e (true), or false when full. */
bool bk_quorum_hold_add(bk_quorum_hold_t *h, const bk_quorum_hold_entry_t *e);

/* Removes a held entry of `peer` into *out (true), false when it has none.
 * A newer Fetch from a peer supersedes its held one, which is then answered
 * first (answers on a connection go out in request order). */
bool bk_quorum_hold_take_peer(bk_quorum_hold_t *h, int32_t peer, bk_quorum_hold_entry_t *out);

/* Removes the first held entry that is due — its deadline passed, or the
 * leader state (log_end, hw, epoch, leader) differs from when it was held —
 * into *out and returns true; false when none is due. */
bool bk_quorum_hold_take_due(bk_quorum_hold_t *h, int64_t now_ms, int64_t log_end, int64_t hw, int32_t epoch,
                       bool leader, bk_quorum_hold_entry_t *out);

#endif
