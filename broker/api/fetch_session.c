/* broker/api/fetch_session.c — KIP-227 session cache (see fetch_session.h).
 * Lookups are linear over the slots and over a session's partitions: the
 * slot count is ~1000 and a consumer's partitions tens to hundreds; an index
 * would pay off only for far larger sessions. */
#include "broker/api/fetch_session.h"

#include <stdlib.h>
#include <string.h>

int bk_api_fs_cache_init(bk_api_fs_cache_t *c, size_t slots, uint64_t seed) {
    memset(c, 0, sizeof *c);
    c->slots = slots;
    c->rng = seed | 1;
    if (slots == 0) return KP_OK;
    c->v = calloc(slots, sizeof *c->v);
    return c->v ? KP_OK : KP_ERR_NOMEM;
}

static void session_clear(bk_api_fs_t *s) {
    for (size_t i = 0; i < s->n; i++) free(s->parts[i].topic);
    free(s->parts);
    memset(s, 0, sizeof *s);
}

void bk_api_fs_cache_free(bk_api_fs_cache_t *c) {
    for (size_t i = 0; i < c->slots; i++)
        if (c->v[i].id) session_clear(&c->v[i]);
    free(c->v);
    memset(c, 0, sizeof *c);
}

bk_api_fs_t *bk_api_fs_find(bk_api_fs_cache_t *c, int32_t id) {
    if (id <= 0) return NULL;
    for (size_t i = 0; i < c->slots; i++)
        if (c->v[i].id == id) return &c->v[i];
    return NULL;
}

static int32_t next_id(bk_api_fs_cache_t *c) {
    for (;;) {
        c->rng ^= c->rng << 13;
        c->rng ^= c->rng >> 7;
        c->rng ^= c->rng << 17;
        int32_t id = (int32_t)(c->rng & 0x7fffffff);
        if (id > 0 && !bk_api_fs_find(c, id)) return id;
    }
}

bk_api_fs_t *bk_api_fs_create(bk_api_fs_cache_t *c, int64_t now_ms) {
    bk_api_fs_t *slot = NULL, *lru = NULL;
    for (size_t i = 0; i < c->slots && !slot; i++) {
        if (c->v[i].id == 0) slot = &c->v[i];
        else if (!lru || c->v[i].last_used_ms < lru->last_used_ms) lru = &c->v[i];
    }
    if (!slot) {
        if (!lru || now_ms - lru->last_used_ms < BK_API_FS_EVICT_IDLE_MS) return NULL;
        session_clear(lru);
        c->used--;
        slot = lru;
    }
    slot->id = next_id(c);
    slot->epoch = 1;
    slot->last_used_ms = now_ms;
    c->used++;
    return slot;
}

void bk_api_fs_remove(bk_api_fs_cache_t *c, int32_t id) {
    bk_api_fs_t *s = bk_api_fs_find(c, id);
    if (!s) return;
    session_clear(s);
    c->used--;
}

static bool same(const bk_api_fs_part_t *p, bool by_id, kp_str_t topic, const kp_uuid_t *id, int32_t partition) {
    if (p->partition != partition) return false;
    if (by_id) return memcmp(p->topic_id.b, id->b, 16) == 0;
    return strlen(p->topic) == topic.len && memcmp(p->topic, topic.p, topic.len) == 0;
}

bk_api_fs_part_t *bk_api_fs_part_find(bk_api_fs_t *s, bool by_id, kp_str_t topic, const kp_uuid_t *topic_id,
                              int32_t partition) {
    for (size_t i = 0; i < s->n; i++)
        if (same(&s->parts[i], by_id, topic, topic_id, partition)) return &s->parts[i];
    return NULL;
}

bk_api_fs_part_t *bk_api_fs_part_find_near(bk_api_fs_t *s, size_t hint, bool by_id, kp_str_t topic,
                                           const kp_uuid_t *topic_id, int32_t partition) {
    if (hint < s->n && same(&s->parts[hint], by_id, topic, topic_id, partition)) return &s->parts[hint];
    return bk_api_fs_part_find(s, by_id, topic, topic_id, partition);
}

int bk_api_fs_part_upsert(bk_api_fs_t *s, bool by_id, kp_str_t topic, const kp_uuid_t *topic_id, int32_t partition,
                      int64_t fetch_offset, int32_t max_bytes, int32_t current_leader_epoch) {
    bk_api_fs_part_t *p = bk_api_fs_part_find(s, by_id, topic, topic_id, partition);
    if (!p) {
        if (s->n >= BK_API_FS_PARTS_MAX) return KP_ERR_TOO_LARGE;
        if (s->n == s->cap) {
            size_t ncap = s->cap ? s->cap * 2 : 8;
            bk_api_fs_part_t *np = realloc(s->parts, ncap * sizeof *np);
            if (!np) return KP_ERR_NOMEM;
            s->parts = np;
            s->cap = ncap;
        }
        p = &s->parts[s->n];
        memset(p, 0, sizeof *p);
        size_t len = by_id ? 0 : topic.len;
        p->topic = malloc(len + 1);
        if (!p->topic) return KP_ERR_NOMEM;
        if (len) memcpy(p->topic, topic.p, len);
        p->topic[len] = '\0';
        if (by_id) p->topic_id = *topic_id;
        p->partition = partition;
        p->last_hw = p->last_lso = p->last_start = BK_API_FS_NEVER;
        s->n++;
    }
    p->fetch_offset = fetch_offset;
    p->max_bytes = max_bytes;
    p->current_leader_epoch = current_leader_epoch;
    return KP_OK;
}

void bk_api_fs_part_forget(bk_api_fs_t *s, bool by_id, kp_str_t topic, const kp_uuid_t *topic_id, int32_t partition) {
    bk_api_fs_part_t *p = bk_api_fs_part_find(s, by_id, topic, topic_id, partition);
    if (!p) return;
    free(p->topic);
    size_t i = (size_t)(p - s->parts);
    memmove(&s->parts[i], &s->parts[i + 1], (s->n - i - 1) * sizeof *p);
    s->n--;
}
