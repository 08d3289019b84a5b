/* broker/replication/replica.h — the replication driver (issue 6): runs one pure
 * replica core (repl.h) per held partition and carries out its actions on
 * the partition log, the fetch purgatory, the produce waits, the follower
 * fetchers (fetcher.c) and AlterPartition (replica_alter.c).
 *
 * Wiring: the node calls bk_repl_replica_before_apply / bk_repl_replica_after_apply
 * around bk_repl_parts_apply with the image's change notifications; every
 * leader append comes from the partition service (partition.h), which
 * calls bk_replica_check_produce + bk_replica_appended (replica_int.h;
 * acks=all waits complete later through bk_repl_ps_done_fn); h_fetch.c hands
 * replica fetches (ReplicaId >= 0) to bk_repl_replica_serve_fetch. Every action of a
 * core output is executed in the contract order of repl.h.
 *
 * The published high watermark is the log's (st_log_set_high_watermark):
 * consumers, ListOffsets and checkpoints read it there, so they never see
 * past the core's HW.
 *
 * Threading: loop thread only. Bounds: BK_REPL_WAITS_MAX acks=all waits per
 * partition (beyond: REQUEST_TIMED_OUT before append), one Fetch in flight
 * per source broker carrying at most BK_REPL_FETCHER_PARTS_MAX partitions. */
#ifndef SKIFF_BK_REPLICA_H
#define SKIFF_BK_REPLICA_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/meta/image.h"
#include "broker/net/net.h"
#include "protocol/kp_header.h"
#include "broker/core/node.h"
#include "broker/replication/parts.h"
#include "broker/replication/repl.h"
#include "storage/st_log.h"

#define BK_REPL_REPLICA_TICK_MS 10          /* core timers (fetch due, ack deadlines) */
#define BK_REPL_FETCHER_PARTS_MAX 10000     /* partitions in one replica Fetch (chosen round-robin) */

struct bk_repl_rm;                          /* node-wide driver state (replica.c) */

/* STOP changes: the partition's core is freed before its slot goes; its
 * acks=all waits fail NOT_LEADER_OR_FOLLOWER. */
void bk_repl_replica_before_apply(bk_node_t *n, const bk_meta_change_t *ch, size_t cnt);
/* LEADER / FOLLOWER changes (after the logs are open): creates the core
 * from the log (LEO, epoch cache, HW checkpoint) when new, then feeds it
 * the image's state of the partition. */
void bk_repl_replica_after_apply(bk_node_t *n, const bk_meta_change_t *ch, size_t cnt);
/* Logs opened later on the worker pool (parts_open.c) are in place: builds
 * and feeds the core of every held partition that has a log but no core. */
void bk_repl_replica_attach_opened(bk_node_t *n);
/* Fails every wait, closes fetcher connections and frees every core
 * (graceful stop, before the logs close). Safe to call twice. */
void bk_repl_replica_stop(bk_node_t *n);

/* The scrubber (scrubber.h) found a corrupt batch at bad_offset in a rolled
 * segment (path) of p's log. A follower whose leader is another node
 * truncates its log to bad_offset and rebuilds its replica state from the
 * log, so it fetches that range again from the leader; until it has caught
 * up it is behind the leader like any lagging follower. Anything else (the
 * leader itself, or no known leader) cannot repair from another copy: the
 * log goes offline (st_log_mark_offline) so the bad batch is never served.
 * Returns true when a repair (truncation + re-fetch) started. */
bool bk_repl_replica_on_corrupt(bk_node_t *n, bk_repl_part_t *p, int64_t bad_offset, const char *path);

/* ---- produce ----
 * Leader appends and their acks=all waits (the produce purgatory) are
 * reached only through the partition service (partition.h); the driver's
 * side of it is in replica_int.h. */

/* ---- leader side of a replica fetch (h_fetch.c) ---- */

typedef struct {
    int16_t error;
    bool diverging;
    int32_t diverging_epoch;
    int64_t diverging_end_offset;
} bk_repl_replica_verdict_t;

/* Validates a follower's fetch of p (epochs, divergence), updates its LEO
 * and caught-up time, may move the HW (waking fetches and acks). */
void bk_repl_replica_serve_fetch(bk_node_t *n, bk_repl_part_t *p, int32_t replica_id, int32_t current_leader_epoch,
                            int64_t fetch_offset, int32_t last_fetched_epoch, bk_repl_replica_verdict_t *v);

/* ---- AlterPartition (replica_alter.c) ---- */

/* The controller's answer to our AlterPartition (lifecycle connection,
 * kind BK_NET_QC_ALTER); frame NULL = lost. */
void bk_repl_replica_alter_response(bk_node_t *n, const uint8_t *frame, size_t len);
/* Serves an AlterPartition on the controller listener (decoded by the
 * caller; body is valid only during the call): decides, commits, answers
 * after the commit (NOT_CONTROLLER when this node is not the leader). */
void bk_repl_replica_serve_alter(bk_node_t *n, bk_net_conn_t *conn, const kp_request_header_t *h, const void *body);

/* ---- state for admin / metrics ---- */

typedef struct {
    uint64_t isr_shrinks;              /* AlterPartition proposals that shrink */
    uint64_t isr_expands;              /* ... that expand */
    uint64_t acks_waiting;             /* acks=all produces waiting now */
    uint64_t fetch_requests;           /* replica fetches sent */
    uint64_t fetch_errors;             /* lost / failed replica fetches */
} bk_repl_replica_stats_t;
void bk_repl_replica_stats(const bk_node_t *n, bk_repl_replica_stats_t *out);

/* The core of p (NULL when none). */
bk_repl_t *bk_repl_replica_core(const bk_repl_part_t *p);

#endif
