/* broker/net/mem.h — size-class block pool for what the request path
 * allocates per request (issue 19, README "Block pool"): frame copies,
 * response scratch, and libevent's own buffer chains and file segments
 * (bk_net_mem_for_libevent). Blocks are 2^k bytes, 64 B .. 1 MiB; a thread
 * keeps a small cache per class and gives surplus to a node-wide depot that
 * other threads take from, so a block allocated on the state loop and freed
 * on a network loop (a response chain) comes back without malloc. Larger
 * requests go to malloc and back to free, unpooled.
 *
 * Any thread. A block from bk_net_mem_alloc is freed with bk_net_mem_free
 * (never free()); a pointer of another allocator given to it aborts (a
 * header check), as does a double free. */
#ifndef SKIFF_BK_NET_MEM_H
#define SKIFF_BK_NET_MEM_H

#include <stddef.h>
#include <stdint.h>

#define BK_NET_MEM_MIN_SHIFT 6
#define BK_NET_MEM_CLASSES 15
#define BK_NET_MEM_MIN_BYTES ((size_t)1 << BK_NET_MEM_MIN_SHIFT)
#define BK_NET_MEM_MAX_BYTES (BK_NET_MEM_MIN_BYTES << (BK_NET_MEM_CLASSES - 1))

/* A block of at least n bytes (n == 0: a minimal one), 16-byte aligned;
 * NULL when out of memory. */
void *bk_net_mem_alloc(size_t n);
/* Gives a block back (NULL: nothing). */
void bk_net_mem_free(void *p);
/* realloc(3)'s contract on pool blocks: the same block while n fits its
 * class; n == 0 frees and returns NULL. */
void *bk_net_mem_realloc(void *p, size_t n);
/* The bytes a block for n bytes really has: its class's size, or n above
 * BK_NET_MEM_MAX_BYTES. */
size_t bk_net_mem_block_bytes(size_t n);

/* Makes libevent allocate through this pool (event_set_mem_functions).
 * Call before any other libevent call of the process: a block libevent
 * got from malloc and then freed here would abort. */
void bk_net_mem_for_libevent(void);

/* Frees the calling thread's cache and the depot (end of main, tests).
 * Blocks still out stay valid and are pooled again when freed. */
void bk_net_mem_trim(void);

typedef struct {
    uint64_t fresh;         /* pooled-class blocks new from malloc: cache and depot empty */
    uint64_t unpooled;      /* allocations above the largest class */
    uint64_t released;      /* blocks freed to the system: caches and depot full */
    uint64_t depot_bytes;   /* bytes in the depot now */
} bk_net_mem_stats_t;
void bk_net_mem_stats(bk_net_mem_stats_t *out);

#endif
