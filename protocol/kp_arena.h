/* kp_arena.h — bump allocator for decoded messages.
 *
 * A decoded request owns no heap pointers of its own: its arrays live in one
 * arena that is reset when the request is answered. The arena has a byte cap
 * so that no input can make a decoder allocate without bound.
 */
#ifndef SKIFF_KP_ARENA_H
#define SKIFF_KP_ARENA_H

#include <stddef.h>

typedef struct kp_arena_chunk kp_arena_chunk_t;

typedef struct kp_arena {
    kp_arena_chunk_t *head;   /* newest chunk first */
    size_t used_bytes;        /* bytes handed out since the last reset */
    size_t cap_bytes;         /* kp_arena_alloc fails past this */
} kp_arena_t;

#define KP_ARENA_DEFAULT_CAP_BYTES ((size_t)256 << 20)

void kp_arena_init(kp_arena_t *a, size_t cap_bytes);
/* Zeroed, 16-byte aligned memory, or NULL when the cap or malloc fails.
 * Valid until kp_arena_reset / kp_arena_free. */
void *kp_arena_alloc(kp_arena_t *a, size_t n);
/* Forget every allocation but keep the first chunk for reuse. */
void kp_arena_reset(kp_arena_t *a);
/* Forget every allocation and keep the largest chunk of at most
 * retain_max_bytes (free the others): for a scratch arena reused across
 * requests, whose blocks (decompressed batches) may be larger than the
 * first chunk, so that a steady load allocates nothing after warm-up while
 * a rare huge batch does not stay held. */
void kp_arena_reset_retain(kp_arena_t *a, size_t retain_max_bytes);
void kp_arena_free(kp_arena_t *a);

#endif
