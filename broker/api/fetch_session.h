/* broker/api/fetch_session.h — the incremental fetch session cache (KIP-227).
 *
 * A session remembers, per partition a consumer fetches, the fetch offset and
 * limits it last sent and the HW / LSO / log start offset the broker last
 * answered, so that an incremental request only names what changed and an
 * incremental response only carries partitions with news. Pure data: no
 * I/O, no clock (the caller passes now_ms); owned by the loop thread.
 *
 * Bounds: `slots` sessions (max.incremental.fetch.session.cache.slots; 0 =
 * no sessions), BK_API_FS_PARTS_MAX partitions per session. When the cache is
 * full a new session evicts the least recently used one idle for at least
 * BK_API_FS_EVICT_IDLE_MS, else no session is created (the client gets session
 * id 0 and keeps doing full fetches). */
#ifndef SKIFF_BK_FETCH_SESSION_H
#define SKIFF_BK_FETCH_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"

#define BK_API_FS_PARTS_MAX 100000
#define BK_API_FS_EVICT_IDLE_MS 120000
#define BK_API_FS_NEVER (-2)          /* last_* before the first answer */

typedef struct {
    char *topic;                  /* owned; "" when fetched by topic id */
    kp_uuid_t topic_id;           /* zero when fetched by name */
    int32_t partition;
    int64_t fetch_offset;
    int32_t max_bytes;
    int32_t current_leader_epoch;
    int64_t last_hw, last_lso, last_start;
} bk_api_fs_part_t;

typedef struct {
    int32_t id;                   /* > 0; 0 = free slot */
    int32_t epoch;                /* the epoch the next request must carry */
    int64_t last_used_ms;
    bk_api_fs_part_t *parts;
    size_t n, cap;
} bk_api_fs_t;

typedef struct {
    bk_api_fs_t *v;                   /* `slots` entries */
    size_t slots;
    size_t used;
    uint64_t rng;                 /* session ids */
} bk_api_fs_cache_t;

/* KP_OK or KP_ERR_NOMEM. */
KP_MUST_CHECK int bk_api_fs_cache_init(bk_api_fs_cache_t *c, size_t slots, uint64_t seed);
void bk_api_fs_cache_free(bk_api_fs_cache_t *c);

/* The session with `id`, or NULL. Valid until the next create/remove. */
bk_api_fs_t *bk_api_fs_find(bk_api_fs_cache_t *c, int32_t id);
/* A new empty session (epoch 1) with a fresh id, or NULL when the cache is
 * full of recently used sessions (or has no slots). */
bk_api_fs_t *bk_api_fs_create(bk_api_fs_cache_t *c, int64_t now_ms);
void bk_api_fs_remove(bk_api_fs_cache_t *c, int32_t id);

/* Partition lookup by (name or id, partition): by id when `by_id`. */
bk_api_fs_part_t *bk_api_fs_part_find(bk_api_fs_t *s, bool by_id, kp_str_t topic, const kp_uuid_t *topic_id,
                              int32_t partition);
/* The same, trying parts[hint] first: a fetch plan lists a session's
 * partitions in the session's order, so noting an answer of n partitions
 * costs O(n) instead of n linear searches. */
bk_api_fs_part_t *bk_api_fs_part_find_near(bk_api_fs_t *s, size_t hint, bool by_id, kp_str_t topic,
                                           const kp_uuid_t *topic_id, int32_t partition);
/* Adds (last_* = BK_API_FS_NEVER) or updates the partition's request fields.
 * KP_ERR_TOO_LARGE past BK_API_FS_PARTS_MAX, KP_ERR_NOMEM. */
KP_MUST_CHECK int bk_api_fs_part_upsert(bk_api_fs_t *s, bool by_id, kp_str_t topic, const kp_uuid_t *topic_id,
                                    int32_t partition, int64_t fetch_offset, int32_t max_bytes,
                                    int32_t current_leader_epoch);
/* Removes the partition if present (order of the rest is kept). */
void bk_api_fs_part_forget(bk_api_fs_t *s, bool by_id, kp_str_t topic, const kp_uuid_t *topic_id, int32_t partition);

#endif
