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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/replication/repl.h"
#include "kp_msgs.h"
#include "protocol/kp_arena.h"
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

/* Encodes the whole request frame (size prefix included) into a block of
 * the net's pool *out (caller gives it back with bk_net_mem_free) of *len
 * bytes. KP_ERR_NOMEM / encoder errors;
 * n must be >= 1. */
KP_MUST_CHECK int bk_repl_rw_fetch_encode(const bk_repl_rw_fetch_opts_t *o, const bk_repl_rw_part_t *parts, size_t n, uint8_t **out,
                                     size_t *len);

/* Bytes of decoded structure one answered partition may take beyond its
 * wire bytes (its topic entry + partition entry + alignment). */
#define BK_REPL_RW_ANSWER_PART_BYTES 256
#define BK_REPL_RW_ANSWER_FIXED_BYTES 65536

/* The arena cap for decoding the answer to a request of n_asked partitions
 * and max_bytes: what an honest answer can need, whatever the frame's size.
 * The decoded form of an answer is its structs (a topic and a partition
 * entry per partition asked: bounded by n_asked, not by the frame length,
 * since an empty partition decodes to ~3x its ~55 wire bytes) plus its
 * aborted-transaction lists (no larger decoded than on the wire, and part
 * of the max_bytes the leader keeps to); records stay slices of the frame.
 * Hard bound: max_bytes + n_asked * BK_REPL_RW_ANSWER_PART_BYTES + 64 KiB. */
size_t bk_repl_rw_answer_arena_bytes(size_t n_asked, size_t frame_len, int32_t max_bytes);
/* The arena chunk kept between answers: a steady stream of fetches decodes
 * without allocating, a rare large answer does not stay held. */
#define BK_REPL_RW_ARENA_KEEP_BYTES ((size_t)256 << 10)

/* Decodes the Fetch answer frame[0..len) (without its size prefix) to a
 * request of n_asked partitions and max_bytes into `a`, an initialised
 * arena (kp_arena_init) the caller keeps across answers: this empties it,
 * keeping one chunk of at most BK_REPL_RW_ARENA_KEEP_BYTES, and caps it as
 * above (caller frees it once done with answers). The
 * arena grows chunk by chunk with what the decoder finds in the bytes
 * present (every array count is checked against the bytes left before its
 * allocation), so a claimed count or length larger than the frame fails
 * with KP_ERR_* without allocating for it. */
KP_MUST_CHECK int bk_repl_rw_fetch_decode(const uint8_t *frame, size_t len, size_t n_asked, int32_t max_bytes,
                                          kp_arena_t *a, int32_t *corr, const void **resp);

/* Finding each asked partition in a decoded answer. The leader answers in
 * request order, but consecutive partitions of one topic share one topic
 * entry (api/h_fetch.c), so the answer's entry i is not request partition
 * i: the cursor walks the answer alongside the request and the next entry
 * is tried first; anything else (a leader answering in another order)
 * falls back to a search. Start with a zeroed cursor. */
typedef struct {
    int32_t topic;                 /* index into responses */
    int32_t part;                  /* index into that topic's partitions */
} bk_repl_rw_cursor_t;
/* The answer of (topic_id, partition) in r, or NULL; advances c past it. */
const kp_fetch_response_partition_data_t *bk_repl_rw_answer_find(const kp_fetch_response_t *r, bk_repl_rw_cursor_t *c,
                                                                 const uint8_t topic_id[16], int32_t partition);

/* Round-robin choice of the partitions of one replica Fetch, so that
 * neither the request's partition cap nor the answer's byte limit (the
 * leader fills partitions in request order and stops at max_bytes) starves
 * the same partitions every time.
 * pos[0..n): iteration positions of the partitions that want a fetch, in
 * increasing order. Picks up to max of them, starting at the first
 * position >= cursor and wrapping; writes their indexes into pos[] to
 * picked[] in request order. Returns the count. */
size_t bk_repl_rw_rr_pick(const uint32_t *pos, size_t n, uint32_t cursor, size_t max, uint32_t *picked);
/* The cursor for the next request: just after the last partition of the
 * request (in request order) that got records, so the partitions after it
 * — cut off by the byte limit or not yet answered — come first next time;
 * else just after the last one picked when the cap left some out; else
 * unchanged. req_pos[0..n): the request's positions in request order;
 * got_data[i]: partition i of the request got records. */
uint32_t bk_repl_rw_rr_next(const uint32_t *req_pos, const bool *got_data, size_t n, bool capped, uint32_t cursor);

/* Describes the whole v2 batches at the start of recs[0..len): up to `max`
 * (<= BK_REPL_BATCHES_MAX) of them into out[] (offsets, epoch) and sizes[]
 * (bytes). Stops at the first incomplete or malformed batch. Returns the
 * count. */
uint32_t bk_repl_rw_describe_batches(const uint8_t *recs, size_t len, bk_repl_batch_t *out, size_t *sizes,
                                uint32_t max);

#endif
