/* fdref.c — the refcounted segment descriptor (st_fdref.h). */
#include "storage/st_fdref.h"

#include <assert.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct st_fdref {
    atomic_int refs;
    int fd;
};

st_fdref_t *st_fdref_new(int fd) {
    assert(fd >= 0);
    st_fdref_t *r = malloc(sizeof *r);
    if (!r) return NULL;
    atomic_init(&r->refs, 1);
    r->fd = fd;
    return r;
}

void st_fdref_hold(st_fdref_t *r) {
    /* relaxed: the holder already has a reference, so nothing can free it */
    int old = atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
    assert(old > 0 && old < INT_MAX);
}

void st_fdref_release(st_fdref_t *r) {
    /* acq_rel: every user's reads of the file happen before the close */
    int old = atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel);
    assert(old > 0);
    if (old != 1) return;
    /* a read-only use of the descriptor ends here: nothing to flush, and
     * an error of close() would leave nothing to do */
    (void)close(r->fd);
    free(r);
}

int st_fdref_fd(const st_fdref_t *r) { return r->fd; }
