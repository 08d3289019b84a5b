/* broker/net/mem.c — the block pool of mem.h.
 *
 * Each block has a 16-byte header in front: a magic word saying whether it
 * is out (LIVE), in a list (FREE) or unpooled (BIG), its class, and the
 * link of the list it is in (or a BIG block's size). The link lives in the
 * header so that a free block's bytes can be poisoned under ASan: a use
 * after bk_net_mem_free is reported as it would be after free().
 *
 * Per thread: one list per class, at most cache_max(k) blocks (128 KiB of
 * them, 1..32: what a thread that only frees a class, as the state loop
 * does with network loops' frame blocks, keeps before handing a batch on). Node-wide: a depot per class under its own mutex, at most
 * depot_max(k) blocks (1 MiB of them, 2..256). A thread whose list is empty
 * takes a batch (half its cache) from the depot; one whose list is full
 * moves a batch there; what the depot has no room for goes back to the
 * system. So memory kept is bounded: per class 1 MiB in the depot plus
 * 128 KiB per thread (at least one block of the big classes), and a block
 * costs a lock only once per batch.
 *
 * A thread's list goes to the depot when the thread exits (a pthread key's
 * destructor), so a network loop's stop does not leak its cache. */
#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "broker/net/mem.h"

#if defined(__SANITIZE_ADDRESS__)
#define MEM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEM_ASAN 1
#endif
#endif
#ifdef MEM_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define MAGIC_LIVE 0x736b4c56u /* "skLV" */
#define MAGIC_FREE 0x736b4652u /* "skFR" */
#define MAGIC_BIG 0x736b4247u  /* "skBG" */

typedef struct blk {
    uint32_t magic;
    uint32_t cls;
    union {
        struct blk *next;   /* FREE: next in its list */
        size_t size;        /* BIG: the bytes asked for */
    } u;
} blk_t;
_Static_assert(sizeof(blk_t) == 16, "the header keeps malloc's 16-byte alignment");

#define HDR sizeof(blk_t)

typedef struct {
    blk_t *head[BK_NET_MEM_CLASSES];
    uint32_t n[BK_NET_MEM_CLASSES];
    bool registered;            /* the key's value is set: flushed at thread exit */
} tcache_t;

typedef struct {
    pthread_mutex_t mu;
    blk_t *head;
    uint32_t n;
} depot_t;

static __thread tcache_t tc;
static depot_t depot[BK_NET_MEM_CLASSES];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static bool key_ok;

/* slow paths only: no shared cache line written per block */
static uint64_t st_fresh, st_unpooled, st_released, st_depot_bytes;
#define STAT_ADD(v, n) ((void)__atomic_add_fetch(&(v), (uint64_t)(n), __ATOMIC_RELAXED))
#define STAT_SUB(v, n) ((void)__atomic_sub_fetch(&(v), (uint64_t)(n), __ATOMIC_RELAXED))

static size_t cls_bytes(uint32_t k) { return BK_NET_MEM_MIN_BYTES << k; }

static uint32_t clamp(size_t v, uint32_t lo, uint32_t hi) {
    return v < lo ? lo : v > hi ? hi : (uint32_t)v;
}
static uint32_t cache_max(uint32_t k) { return clamp(((size_t)128 << 10) / cls_bytes(k), 1, 32); }
static uint32_t depot_max(uint32_t k) { return clamp(((size_t)1 << 20) / cls_bytes(k), 2, 256); }
static uint32_t batch(uint32_t k) { return clamp(cache_max(k) / 2, 1, 64); }

static uint32_t cls_of(size_t n) {
    assert(n <= BK_NET_MEM_MAX_BYTES);
    if (n <= BK_NET_MEM_MIN_BYTES) return 0;
    /* the bit length of n - 1 is log2 of the power of two >= n */
    uint32_t k = (uint32_t)(64 - __builtin_clzll((unsigned long long)(n - 1))) - BK_NET_MEM_MIN_SHIFT;
    assert(k < BK_NET_MEM_CLASSES && cls_bytes(k) >= n && (k == 0 || cls_bytes(k - 1) < n));
    return k;
}

static void lock(depot_t *d) {
    if (pthread_mutex_lock(&d->mu) != 0) assert(!"mem depot mutex");
}
static void unlock(depot_t *d) {
    if (pthread_mutex_unlock(&d->mu) != 0) assert(!"mem depot mutex");
}

static void release_list(blk_t *b) {
    for (blk_t *next; b; b = next) {
        next = b->u.next;
        UNPOISON(b + 1, cls_bytes(b->cls));
        STAT_ADD(st_released, 1);
        free(b);
    }
}

/* Moves `count` blocks from the head of a thread list into the depot of
 * class k; those it has no room for go to the system. */
static void to_depot(uint32_t k, blk_t **head, uint32_t *n, uint32_t count) {
    assert(count <= *n);
    if (count == 0) return;
    blk_t *first = *head, *last = first;
    for (uint32_t i = 1; i < count; i++) last = last->u.next;
    *head = last->u.next;
    *n -= count;
    last->u.next = NULL;
    depot_t *d = &depot[k];
    blk_t *excess = NULL;
    lock(d);
    uint32_t room = depot_max(k) > d->n ? depot_max(k) - d->n : 0;
    uint32_t keep = count < room ? count : room;
    if (keep > 0) {
        blk_t *kl = first;
        for (uint32_t i = 1; i < keep; i++) kl = kl->u.next;
        excess = kl->u.next;
        kl->u.next = d->head;
        d->head = first;
        d->n += keep;
    } else {
        excess = first;
    }
    unlock(d);
    STAT_ADD(st_depot_bytes, (uint64_t)keep * cls_bytes(k));
    release_list(excess);
}

static void tcache_flush(void *arg) {
    (void)arg;
    for (uint32_t k = 0; k < BK_NET_MEM_CLASSES; k++) to_depot(k, &tc.head[k], &tc.n[k], tc.n[k]);
    /* a free after this (another key's destructor) registers again */
    tc.registered = false;
}

static void init_once(void) {
    for (uint32_t k = 0; k < BK_NET_MEM_CLASSES; k++)
        if (pthread_mutex_init(&depot[k].mu, NULL) != 0) abort();
    key_ok = pthread_key_create(&key, tcache_flush) == 0;
}

static void tcache_register(void) {
    if (tc.registered) return;
    if (pthread_once(&once, init_once) != 0) abort();
    /* without the key (never seen: a process has 1024) the cache of an
     * exiting thread stays allocated: bounded, not a correctness matter */
    if (key_ok && pthread_setspecific(key, &tc) != 0) return;
    tc.registered = true;
}

size_t bk_net_mem_block_bytes(size_t n) {
    return n > BK_NET_MEM_MAX_BYTES ? n : cls_bytes(cls_of(n));
}

void *bk_net_mem_alloc(size_t n) {
    if (n > BK_NET_MEM_MAX_BYTES) {
        if (n > SIZE_MAX - HDR) return NULL;
        blk_t *b = malloc(HDR + n);
        if (!b) return NULL;
        b->magic = MAGIC_BIG;
        b->cls = BK_NET_MEM_CLASSES;
        b->u.size = n;
        STAT_ADD(st_unpooled, 1);
        return b + 1;
    }
    uint32_t k = cls_of(n);
    tcache_register();
    if (tc.n[k] == 0) {
        depot_t *d = &depot[k];
        uint32_t want = batch(k);
        lock(d);
        while (d->n > 0 && tc.n[k] < want) {
            blk_t *b = d->head;
            d->head = b->u.next;
            d->n--;
            b->u.next = tc.head[k];
            tc.head[k] = b;
            tc.n[k]++;
        }
        unlock(d);
        STAT_SUB(st_depot_bytes, (uint64_t)tc.n[k] * cls_bytes(k));
    }
    blk_t *b = tc.head[k];
    if (b) {
        tc.head[k] = b->u.next;
        tc.n[k]--;
        assert(b->magic == MAGIC_FREE && b->cls == k);
        UNPOISON(b + 1, cls_bytes(k));
    } else {
        b = malloc(HDR + cls_bytes(k));
        if (!b) return NULL;
        b->cls = k;
        STAT_ADD(st_fresh, 1);
    }
    b->magic = MAGIC_LIVE;
    b->u.next = NULL;
    return b + 1;
}

static blk_t *hdr_of(void *p) {
    blk_t *b = (blk_t *)p - 1;
    /* a pointer of another allocator, or freed twice */
    if (b->magic != MAGIC_LIVE && b->magic != MAGIC_BIG) abort();
    return b;
}

void bk_net_mem_free(void *p) {
    if (!p) return;
    blk_t *b = hdr_of(p);
    if (b->magic == MAGIC_BIG) {
        b->magic = 0;
        free(b);
        return;
    }
    uint32_t k = b->cls;
    assert(k < BK_NET_MEM_CLASSES);
    b->magic = MAGIC_FREE;
    POISON(b + 1, cls_bytes(k));
    tcache_register();
    if (tc.n[k] >= cache_max(k)) to_depot(k, &tc.head[k], &tc.n[k], batch(k));
    b->u.next = tc.head[k];
    tc.head[k] = b;
    tc.n[k]++;
}

void *bk_net_mem_realloc(void *p, size_t n) {
    if (!p) return bk_net_mem_alloc(n);
    if (n == 0) {
        bk_net_mem_free(p);
        return NULL;
    }
    blk_t *b = hdr_of(p);
    size_t have;
    if (b->magic == MAGIC_BIG) {
        have = b->u.size;
        if (n > BK_NET_MEM_MAX_BYTES) {
            if (n > SIZE_MAX - HDR) return NULL;
            blk_t *nb = realloc(b, HDR + n);
            if (!nb) return NULL;
            nb->u.size = n;
            return nb + 1;
        }
    } else {
        have = cls_bytes(b->cls);
        if (n <= have) return p;
    }
    void *q = bk_net_mem_alloc(n);
    if (!q) return NULL;
    memcpy(q, p, have < n ? have : n);
    bk_net_mem_free(p);
    return q;
}

void bk_net_mem_for_libevent(void) {
    event_set_mem_functions(bk_net_mem_alloc, bk_net_mem_realloc, bk_net_mem_free);
}

void bk_net_mem_trim(void) {
    for (uint32_t k = 0; k < BK_NET_MEM_CLASSES; k++) {
        blk_t *list = tc.head[k];
        tc.head[k] = NULL;
        tc.n[k] = 0;
        release_list(list);
    }
    if (pthread_once(&once, init_once) != 0) abort();
    for (uint32_t k = 0; k < BK_NET_MEM_CLASSES; k++) {
        depot_t *d = &depot[k];
        lock(d);
        blk_t *list = d->head;
        uint32_t n = d->n;
        d->head = NULL;
        d->n = 0;
        unlock(d);
        STAT_SUB(st_depot_bytes, (uint64_t)n * cls_bytes(k));
        release_list(list);
    }
}

void bk_net_mem_stats(bk_net_mem_stats_t *out) {
    out->fresh = __atomic_load_n(&st_fresh, __ATOMIC_RELAXED);
    out->unpooled = __atomic_load_n(&st_unpooled, __ATOMIC_RELAXED);
    out->released = __atomic_load_n(&st_released, __ATOMIC_RELAXED);
    out->depot_bytes = __atomic_load_n(&st_depot_bytes, __ATOMIC_RELAXED);
}
