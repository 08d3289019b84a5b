/* broker/replication/replica_wire.h — the bytes of a replica fetch (pure: no node, no
 * I/O), used by the follower fetchers (fetcher.c) and tested on their own
 * (test/unit/test_replica_wire.c).
 *
 * Request: Fetch BK_REPL_RW_FETCH_VERSION (13: topic ids, LastFetchedEpoch,
 * DivergingEpoch in the answer), ReplicaId = the follower, sessionless
 * (session epoch -1), one topic entry per partition.
 * Answer: each partition's records are described batch by batch (base,
 * last offset, leader epoch, byte size) for the replica core; a partial
 * last batch (the leader may cut a set at max bytes) is not described. */
#ifndef SKIFF_BK_REPLICA_WIRE_H
#define SKIFF_BK_REPLICA_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "broker/replication/repl.h"
#include "protocol/kp_wire.h"

#define BK_REPL_RW_FETCH_VERSION 13

typedef struct {
    uint8_t topic_id[16];
    int32_t partition;
    int32_t current_leader_epoch;
    int64_t fetch_offset;
    int32_t last_fetched_epoch;
} bk_repl_rw_part_t;

typedef struct {
    int32_t replica_id;
    int32_t correlation_id;
    int32_t max_wait_ms;
    int32_t min_bytes;
    int32_t max_bytes;
    int32_t partition_max_bytes;
} bk_repl_rw_fetch_opts_t;

/* Encodes the whole request frame (size prefix included) into a malloc'd
 * buffer *out (caller frees) of *len bytes. KP_ERR_NOMEM / encoder errors;
 * n must be >= 1. */
KP_MUST_CHECK int bk_repl_rw_fetch_encode(const bk_repl_rw_fetch_opts_t *o, const bk_repl_rw_part_t *parts, size_t n, uint8_t **out,
                                     size_t *len);

/* Describes the whole v2 batches at the start of recs[0..len): up to `max`
 * (<= BK_REPL_BATCHES_MAX) of them into out[] (offsets, epoch) and sizes[]
 * (bytes). Stops at the first incomplete or malformed batch. Returns the
 * count. */
uint32_t bk_repl_rw_describe_batches(const uint8_t *recs, size_t len, bk_repl_batch_t *out, size_t *sizes,
                                uint32_t max);

#endif
