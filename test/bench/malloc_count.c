/* test/bench/malloc_count.c — LD_PRELOAD shim counting heap allocations.
 *
 * Built by run-fetch-alloc-bench.sh (cc -shared -fPIC ... -ldl). Counts
 * malloc, calloc, realloc, posix_memalign/aligned_alloc calls of the whole
 * process (every thread) and writes "allocs <n>\n" to $MALLOC_COUNT_FILE
 * every 100 ms from its own thread (the file is replaced with rename(2), so
 * a reader never sees half a line). The counter is one relaxed atomic: the
 * shim adds no lock to the allocator.
 *
 * calloc during dlsym: glibc's dlsym may call calloc before the real one is
 * known; those few come from a small static pool (never freed back: free()
 * of a pool pointer is ignored). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_ulong g_allocs;
static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);

static _Alignas(16) unsigned char pool[8192];
static size_t pool_used;

static void resolve(void) {
    if (real_malloc) return;
    real_calloc = dlsym(RTLD_NEXT, "calloc");
    real_realloc = dlsym(RTLD_NEXT, "realloc");
    real_free = dlsym(RTLD_NEXT, "free");
    real_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    real_malloc = dlsym(RTLD_NEXT, "malloc");
}

static int in_pool(const void *p) {
    return (const unsigned char *)p >= pool && (const unsigned char *)p < pool + sizeof pool;
}

void *malloc(size_t n) {
    resolve();
    atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
    return real_malloc(n);
}

void *calloc(size_t a, size_t b) {
    if (!real_calloc) {                 /* dlsym's own allocation */
        size_t n = (a * b + 15) & ~(size_t)15;
        if (pool_used + n > sizeof pool) return NULL;
        void *p = pool + pool_used;
        pool_used += n;
        return p;                       /* static storage: already zero */
    }
    atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
    return real_calloc(a, b);
}

void *realloc(void *p, size_t n) {
    resolve();
    atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
    if (in_pool(p)) {
        void *q = real_malloc(n);
        size_t left = (size_t)(pool + sizeof pool - (unsigned char *)p);
        if (q) memcpy(q, p, n < left ? n : left);
        return q;
    }
    return real_realloc(p, n);
}

void free(void *p) {
    if (!p || in_pool(p)) return;
    resolve();
    real_free(p);
}

int posix_memalign(void **out, size_t al, size_t n) {
    resolve();
    atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
    return real_memalign(out, al, n);
}

void *aligned_alloc(size_t al, size_t n) {
    resolve();
    atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
    return real_aligned_alloc(al, n);
}

static void *reporter(void *arg) {
    const char *path = arg;
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) return NULL;
    for (;;) {
        FILE *f = fopen(tmp, "w");
        if (f) {
            fprintf(f, "allocs %lu\n", atomic_load(&g_allocs));
            if (fclose(f) == 0) rename(tmp, path);
        }
        usleep(100 * 1000);
    }
    return NULL;
}

__attribute__((constructor)) static void start(void) {
    resolve();
    const char *path = getenv("MALLOC_COUNT_FILE");
    if (!path || !*path) return;
    pthread_t t;
    if (pthread_create(&t, NULL, reporter, (void *)path) == 0) pthread_detach(t);
}
