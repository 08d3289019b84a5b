/* broker/api/prepare.h — per-frame work done before dispatch, where it does
 * not hold up the loop that owns broker state (bk_net_prepare_fn).
 *
 * The net calls bk_api_prepare_frame on the network loop that read a frame
 * (with one loop: on that loop, right before bk_api_dispatch_frame). For a
 * Produce request it decodes the request and runs the state-free checks of
 * every partition's record set (bk_repl_ps_precheck: CRC, records,
 * decompression); the handler on the state loop then takes each verdict
 * for exactly the bytes it was computed on (bk_api_prepared_part) and
 * skips that work. Other APIs: nothing (NULL).
 *
 * Thread-safety: bk_api_prepare_frame may run on several threads at once.
 * It reads only the frame and keeps its memory per thread (a decode arena,
 * a scratch arena for decompressed records, a free list of results), so a
 * steady load allocates nothing after warm-up. A result may be freed on any
 * thread (bk_api_prepared_free): it goes back to the free list of the
 * thread that made it through a lock-free stack that only that thread
 * empties (whole, so no ABA).
 *
 * Lifetime: bk_api_prepare_init before the first frame, bk_api_prepare_fini
 * once no more frames are prepared (the net that calls it is gone);
 * counted, so several nodes in one process (tests) may each init and fini.
 * The last fini frees every thread's memory, except a pool with results
 * still out: the last of those freed (bk_api_prepared_free, any thread)
 * frees it. */
#ifndef SKIFF_BK_API_PREPARE_H
#define SKIFF_BK_API_PREPARE_H

#include <stddef.h>
#include <stdint.h>

#include "broker/replication/partition.h"

/* The verdict of one partition's record set, in request order (topic by
 * topic, partition by partition). */
typedef struct {
    uint32_t off;               /* the records' offset in the frame */
    uint32_t len;               /* their length */
    bk_repl_ps_pre_t pre;
} bk_api_prep_part_t;

typedef struct bk_api_prepared bk_api_prepared_t;

/* Results kept per thread for reuse; beyond these a returned one is freed. */
#define BK_API_PREP_FREE_MAX 64
/* A result's partition array kept for reuse up to this many entries. */
#define BK_API_PREP_PARTS_RETAIN 4096
/* The per-thread decode arena keeps at most this much between frames. */
#define BK_API_PREP_DECODE_RETAIN_BYTES ((size_t)1 << 20)

void bk_api_prepare_init(void);
void bk_api_prepare_fini(void);

/* bk_net_prepare_fn: a result for a Produce frame that decodes, else NULL.
 * ctx is not used (no broker state may be touched here). */
void *bk_api_prepare_frame(const uint8_t *frame, size_t len, void *ctx);
/* bk_net_prepared_free_fn. */
void bk_api_prepared_free(void *prepared);

/* The verdict for partition `index` (request order) of the request whose
 * frame is frame[0..frame_len) with correlation id `corr`, when `prepared`
 * was made for these very bytes: its records are at `records`, `len`
 * bytes, in that frame. NULL otherwise (the caller does the full checks). */
const bk_repl_ps_pre_t *bk_api_prepared_part(const bk_api_prepared_t *prepared, const uint8_t *frame,
                                             size_t frame_len, int32_t corr, uint32_t index,
                                             const uint8_t *records, size_t len);

/* Statistics of this process (tests, bench): results made, and those
 * that had to allocate (a new result or a larger partition array); the
 * per-thread pools not yet freed (a pool outlives the last fini while a
 * result of it is still out). */
typedef struct {
    uint64_t made;
    uint64_t allocated;
    uint64_t pools;
} bk_api_prep_stats_t;
bk_api_prep_stats_t bk_api_prepare_stats(void);

#endif
