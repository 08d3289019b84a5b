/* arena.c — chunked bump allocator; see kp_arena.h. */
#include "protocol/kp_arena.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_MIN_BYTES ((size_t)16 << 10)
#define ALIGN 16

struct kp_arena_chunk {
    kp_arena_chunk_t *next;
    size_t size;
    size_t used;
    _Alignas(ALIGN) unsigned char data[];
};

void kp_arena_init(kp_arena_t *a, size_t cap_bytes) {
    a->head = NULL;
    a->used_bytes = 0;
    a->cap_bytes = cap_bytes;
}

void *kp_arena_alloc(kp_arena_t *a, size_t n) {
    size_t need = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (need < n || need > a->cap_bytes - a->used_bytes || a->used_bytes > a->cap_bytes) return NULL;
    kp_arena_chunk_t *c = a->head;
    if (c == NULL || c->size - c->used < need) {
        size_t size = need > CHUNK_MIN_BYTES ? need : CHUNK_MIN_BYTES;
        c = malloc(sizeof *c + size);
        if (c == NULL) return NULL;
        c->next = a->head;
        c->size = size;
        c->used = 0;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += need;
    a->used_bytes += need;
    memset(p, 0, n);
    assert(((uintptr_t)p % ALIGN) == 0);
    return p;
}

void kp_arena_reset(kp_arena_t *a) {
    if (a->head == NULL) return;
    /* keep the oldest chunk: it is the one sized for ordinary requests */
    kp_arena_chunk_t *c = a->head;
    while (c->next != NULL) {
        kp_arena_chunk_t *next = c->next;
        free(c);
        c = next;
    }
    c->used = 0;
    a->head = c;
    a->used_bytes = 0;
}

void kp_arena_reset_retain(kp_arena_t *a, size_t retain_max_bytes) {
    kp_arena_chunk_t *keep = NULL;
    for (kp_arena_chunk_t *c = a->head; c != NULL; c = c->next)
        if (c->size <= retain_max_bytes && (keep == NULL || c->size > keep->size)) keep = c;
    kp_arena_chunk_t *c = a->head;
    while (c != NULL) {
        kp_arena_chunk_t *next = c->next;
        if (c != keep) free(c);
        c = next;
    }
    if (keep != NULL) {
        keep->used = 0;
        keep->next = NULL;
    }
    a->head = keep;
    a->used_bytes = 0;
}

void kp_arena_free(kp_arena_t *a) {
    kp_arena_chunk_t *c = a->head;
    while (c != NULL) {
        kp_arena_chunk_t *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->used_bytes = 0;
}
