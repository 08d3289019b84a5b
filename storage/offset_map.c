/* offset_map.c — fixed-size open-addressing map of key hashes to offsets. */
#include "storage/st_offset_map.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* 64-bit multiply-xorshift hash over 8-byte words; two seeds give two
 * independent hashes. Not cryptographic: like Kafka's MD5 use, a chosen-key
 * collision could make the cleaner drop a record; keys come from producers
 * of the topic, who can overwrite any key anyway. */
static uint64_t mix(uint64_t x) {
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ull;
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ull;
    x ^= x >> 32;
    return x;
}

static uint64_t hash64(const uint8_t *p, size_t n, uint64_t seed) {
    uint64_t h = seed ^ (n * 0x9E3779B97F4A7C15ull);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = mix(h ^ w) + 0x632BE59BD9B4E019ull;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    return mix(h ^ w ^ ((uint64_t)n << 56));
}

int st_offset_map_init(st_offset_map_t *m, size_t buffer_bytes) {
    size_t slots = buffer_bytes / sizeof(st_offset_map_slot_t);
    if (slots < 16) return KP_ERR_TOO_LARGE;
    size_t cap = 16;
    while (cap * 2 <= slots) cap *= 2;
    m->slots = malloc(cap * sizeof *m->slots);
    if (!m->slots) return KP_ERR_NOMEM;
    m->cap = cap;
    m->max_count = cap / 4 * 3;
    st_offset_map_clear(m);
    return KP_OK;
}

void st_offset_map_free(st_offset_map_t *m) {
    free(m->slots);
    m->slots = NULL;
    m->cap = m->count = m->max_count = 0;
}

void st_offset_map_clear(st_offset_map_t *m) {
    for (size_t i = 0; i < m->cap; i++) m->slots[i].offset = -1;
    m->count = 0;
}

static st_offset_map_slot_t *probe(const st_offset_map_t *m, uint64_t h1, uint64_t h2) {
    /* bounded: the table is never more than 3/4 full, so an empty slot exists */
    for (size_t i = (size_t)h1 & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        st_offset_map_slot_t *s = &m->slots[i];
        if (s->offset < 0 || (s->h1 == h1 && s->h2 == h2)) return s;
    }
}

bool st_offset_map_put(st_offset_map_t *m, const uint8_t *key, size_t len, int64_t offset) {
    assert(offset >= 0);
    uint64_t h1 = hash64(key, len, 0x243F6A8885A308D3ull), h2 = hash64(key, len, 0x13198A2E03707344ull);
    st_offset_map_slot_t *s = probe(m, h1, h2);
    if (s->offset < 0) {
        if (m->count >= m->max_count) return false;
        s->h1 = h1;
        s->h2 = h2;
        m->count++;
    }
    if (offset > s->offset) s->offset = offset;
    return true;
}

int64_t st_offset_map_get(const st_offset_map_t *m, const uint8_t *key, size_t len) {
    uint64_t h1 = hash64(key, len, 0x243F6A8885A308D3ull), h2 = hash64(key, len, 0x13198A2E03707344ull);
    return probe(m, h1, h2)->offset;
}
