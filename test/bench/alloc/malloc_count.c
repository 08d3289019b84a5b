/* malloc_count.c — an LD_PRELOAD shim that counts heap allocations
 * (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign) made by
 * the process's main thread — skiff's event loop, which owns all broker
 * state — and by all threads, for test/bench/run-alloc-bench.sh.
 *
 * The counts are written every 50 ms to the file named by
 * $MALLOC_COUNT_OUT as one line "main=N all=M" (replaced atomically), so a
 * script can read them around a load while the process runs. The calls go
 * to glibc's __libc_* functions (no dlsym: it allocates itself). The
 * thread-local flag uses the initial-exec TLS model: a preloaded library
 * has static TLS, and the general-dynamic model may itself allocate on a
 * thread's first access. Not for production use. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static __thread int tl_main __attribute__((tls_model("initial-exec")));
static atomic_ulong n_main, n_all;

static inline void count(void) {
    atomic_fetch_add_explicit(&n_all, 1, memory_order_relaxed);
    if (tl_main) atomic_fetch_add_explicit(&n_main, 1, memory_order_relaxed);
}

void *malloc(size_t n) { count(); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { count(); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { count(); return __libc_realloc(p, n); }
void *memalign(size_t al, size_t n) { count(); return __libc_memalign(al, n); }
void *aligned_alloc(size_t al, size_t n) { count(); return __libc_memalign(al, n); }
int posix_memalign(void **out, size_t al, size_t n) {
    count();
    void *p = __libc_memalign(al, n);
    if (!p) return 12;   /* ENOMEM */
    *out = p;
    return 0;
}

static void *writer(void *arg) {
    const char *path = arg;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    for (;;) {
        char line[96];
        int len = snprintf(line, sizeof line, "main=%lu all=%lu\n", atomic_load(&n_main), atomic_load(&n_all));
        /* written aside and renamed: a reader never sees a half-written file */
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            bool ok = write(fd, line, (size_t)len) == len;
            close(fd);
            if (ok) rename(tmp, path);
        }
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    return NULL;
}

__attribute__((constructor)) static void start(void) {
    tl_main = 1;   /* constructors run on the main thread */
    const char *path = getenv("MALLOC_COUNT_OUT");
    if (!path || !*path) return;
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &at, writer, (void *)path) != 0) fprintf(stderr, "malloc_count: no writer thread\n");
    pthread_attr_destroy(&at);
}
