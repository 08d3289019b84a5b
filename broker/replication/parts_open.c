/* broker/replication/parts_open.c — partition logs opened off the loop (see parts_open.h). */
#include "broker/replication/parts_open.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* One job: the loop fills it, the worker opens, the loop takes it back. */
typedef struct {
    bk_popen_t *o;               /* read on the loop only */
    size_t n;
    bk_popen_item_t items[];
} batch_t;

struct bk_popen {
    bk_worker_pool_t *pool;
    bk_popen_done_fn done;
    void *ctx;
    bk_popen_item_t *q;          /* FIFO [head, head + len) of waiting opens */
    size_t head, len, cap;
    batch_t *batch;              /* the running batch, or NULL */
    bool kicking;                /* inside bk_popen_kick: no recursion */
};

bk_popen_t *bk_popen_new(bk_worker_pool_t *pool, bk_popen_done_fn done, void *ctx) {
    assert(pool && done);
    bk_popen_t *o = calloc(1, sizeof *o);
    if (!o) return NULL;
    o->pool = pool;
    o->done = done;
    o->ctx = ctx;
    return o;
}

size_t bk_popen_pending(const bk_popen_t *o) { return o->len + (o->batch ? o->batch->n : 0); }

/* Worker thread: touches only the batch. */
static int open_job(void *arg) {
    batch_t *bt = arg;
    bk_popen_item_t *b = bt->items;
    for (size_t i = 0; i < bt->n; i++) {
        b[i].log = NULL;
        b[i].rc = st_log_open(b[i].parent, b[i].topic, b[i].partition, &b[i].cfg, &b[i].opts, &b[i].log);
        if (b[i].rc != KP_OK) b[i].log = NULL;
    }
    return KP_OK;
}


static void batch_done(void *arg, int status) {
    batch_t *bt = arg;
    bk_popen_t *o = bt->o;
    bk_popen_item_t *b = bt->items;
    size_t n = bt->n;
    assert(o->batch == bt);
    if (status != KP_OK) {
        /* cancelled before it ran: nothing was opened */
        for (size_t i = 0; i < n; i++) {
            b[i].log = NULL;
            b[i].rc = status;
        }
    }
    o->batch = NULL;
    o->done(o->ctx, b, n);
    free(bt);
    bk_popen_kick(o);
}

/* Starts the next batch. A refused job runs here: every open completes. */
void bk_popen_kick(bk_popen_t *o) {
    if (o->kicking) return;
    o->kicking = true;
    while (!o->batch && o->len > 0) {
        size_t n = o->len < BK_POPEN_BATCH_MAX ? o->len : BK_POPEN_BATCH_MAX;
        batch_t *bt = malloc(sizeof *bt + n * sizeof bt->items[0]);
        if (!bt) break;   /* retried at the next apply or completion */
        bt->o = o;
        bt->n = n;
        memcpy(bt->items, o->q + o->head, n * sizeof *bt->items);
        o->head += n;
        o->len -= n;
        if (o->len == 0) o->head = 0;
        o->batch = bt;
        if (bk_worker_submit(o->pool, open_job, batch_done, bt) != BK_OK) {
            (void)open_job(bt);
            batch_done(bt, KP_OK);
        }
    }
    o->kicking = false;
}

int bk_popen_add(bk_popen_t *o, const bk_popen_item_t *it) {
    if (o->head + o->len == o->cap) {
        if (o->head > 0) {
            memmove(o->q, o->q + o->head, o->len * sizeof *o->q);
            o->head = 0;
        } else {
            size_t nc = o->cap ? o->cap * 2 : 64;
            bk_popen_item_t *nq = realloc(o->q, nc * sizeof *nq);
            if (!nq) return KP_ERR_NOMEM;
            o->q = nq;
            o->cap = nc;
        }
    }
    o->q[o->head + o->len++] = *it;
    return KP_OK;
}

void bk_popen_free(bk_popen_t *o) {
    if (!o) return;
    assert(!o->batch);
    free(o->q);
    free(o);
}
