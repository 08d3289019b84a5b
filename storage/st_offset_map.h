/* st_offset_map.h — the cleaner's key -> latest offset map, fixed memory.
 *
 * Keys are stored as a 128-bit hash (two independent 64-bit hashes), as
 * Kafka stores an MD5, plus the offset: 24 bytes a slot. The table size is
 * fixed at creation from log.cleaner.dedupe.buffer.size and filled to at
 * most 3/4 so probes stay short; st_offset_map_put reports "full" and the
 * cleaner then cleans only up to where the map reached.
 */
#ifndef SKIFF_ST_OFFSET_MAP_H
#define SKIFF_ST_OFFSET_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"

typedef struct st_offset_map_slot {
    uint64_t h1, h2;
    int64_t offset;            /* -1 = empty */
} st_offset_map_slot_t;

typedef struct st_offset_map {
    st_offset_map_slot_t *slots;
    size_t cap;                /* power of two */
    size_t count, max_count;
} st_offset_map_t;

/* Sizes the map to at most buffer_bytes. KP_ERR_NOMEM, or KP_ERR_TOO_LARGE
 * when buffer_bytes holds fewer than 16 slots. */
KP_MUST_CHECK int st_offset_map_init(st_offset_map_t *m, size_t buffer_bytes);
void st_offset_map_free(st_offset_map_t *m);
void st_offset_map_clear(st_offset_map_t *m);
/* Records key -> offset (offsets only grow per key). false when the map is
 * full and key is new (nothing stored). */
bool st_offset_map_put(st_offset_map_t *m, const uint8_t *key, size_t len, int64_t offset);
/* Latest offset of key, or -1. */
int64_t st_offset_map_get(const st_offset_map_t *m, const uint8_t *key, size_t len);

#endif
