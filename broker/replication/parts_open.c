/* broker/replication/parts_open.c — partition logs opened, closed and deleted off the
 * loop (see parts_open.h). */
#include "broker/replication/parts_open.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/st_guard.h"

/* One job: the loop fills it, the worker opens, the loop takes it back. */
typedef struct {
    bk_repl_popen_t *o;               /* read on the loop only */
    size_t n;
    bk_repl_popen_item_t items[];
} batch_t;

struct bk_repl_popen {
    bk_net_worker_pool_t *pool;
    bk_repl_popen_done_fn done;
    void *ctx;
    bk_repl_popen_item_t *q;          /* FIFO [head, head + len) of waiting opens */
    size_t head, len, cap;
    batch_t *running[BK_REPL_POPEN_JOBS_MAX];   /* batches on the pool */
    size_t nrunning;
    bool kicking;                /* inside bk_repl_popen_kick: no recursion */
};

bk_repl_popen_t *bk_repl_popen_new(bk_net_worker_pool_t *pool, bk_repl_popen_done_fn done, void *ctx) {
    assert(pool && done);
    bk_repl_popen_t *o = calloc(1, sizeof *o);
    if (!o) return NULL;
    o->pool = pool;
    o->done = done;
    o->ctx = ctx;
    return o;
}

size_t bk_repl_popen_pending(const bk_repl_popen_t *o) {
    size_t n = o->len;
    for (size_t i = 0; i < o->nrunning; i++) n += o->running[i]->n;
    return n;
}

/* Whether `it` names a partition directory an operation on the pool is
 * working on: such an item waits, so operations on one directory run in the
 * order queued and never overlap. */
static bool busy_dir(const bk_repl_popen_t *o, const bk_repl_popen_item_t *it) {
    for (size_t b = 0; b < o->nrunning; b++) {
        const batch_t *bt = o->running[b];
        for (size_t i = 0; i < bt->n; i++) {
            const bk_repl_popen_item_t *x = &bt->items[i];
            if (x->partition == it->partition && x->dir == it->dir && strcmp(x->topic, it->topic) == 0) return true;
        }
    }
    return false;
}

/* A deletion: nothing of the log is worth writing (no flush, no producer
 * snapshot); the rename is atomic, so a restart never sees half a
 * partition under its real name. */
static int delete_one(bk_repl_popen_item_t *it) {
    if (it->remove_now) {
        int rc = st_log_delete(it->log);
        it->log = NULL;
        return rc;
    }
    char dir[ST_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", st_log_dir(it->log));
    st_log_discard(it->log);
    it->log = NULL;
    snprintf(it->trash, sizeof it->trash, "%s.%lld-delete", dir, (long long)it->opts.now_ms);
    if (rename(dir, it->trash) != 0) {
        st_logf(ST_LOG_WARN, "partition %s-%d: cannot rename %s to %s: %s", it->topic, it->partition, dir,
                it->trash, strerror(errno));
        return ST_ERR_IO;
    }
    return KP_OK;
}

static void run_one(bk_repl_popen_item_t *it) {
    switch (it->kind) {
    case BK_REPL_POPEN_OPEN:
        it->log = NULL;
        it->rc = st_log_open(it->parent, it->topic, it->partition, &it->cfg, &it->opts, &it->log);
        if (it->rc != KP_OK) it->log = NULL;
        break;
    case BK_REPL_POPEN_CLOSE:
        it->rc = st_log_close(it->log, NULL);
        it->log = NULL;
        break;
    case BK_REPL_POPEN_DELETE:
        it->rc = delete_one(it);
        break;
    }
}

/* Worker thread: touches only the batch (and the logs handed over in it). */
static int file_job(void *arg) {
    batch_t *bt = arg;
    for (size_t i = 0; i < bt->n; i++) run_one(&bt->items[i]);
    return KP_OK;
}

static void batch_done(void *arg, int status) {
    batch_t *bt = arg;
    bk_repl_popen_t *o = bt->o;
    bk_repl_popen_item_t *b = bt->items;
    size_t n = bt->n;
    size_t at = 0;
    while (at < o->nrunning && o->running[at] != bt) at++;
    assert(at < o->nrunning);
    o->running[at] = o->running[--o->nrunning];
    if (status != KP_OK) {
        /* cancelled before it ran (the pool was freed without draining: the
         * node is going away and the loop serves nothing): opens are not
         * done, but a log handed over must still be closed or deleted */
        st_guard_allow_begin();
        for (size_t i = 0; i < n; i++) {
            if (b[i].kind != BK_REPL_POPEN_OPEN) {
                run_one(&b[i]);
                continue;
            }
            b[i].log = NULL;
            b[i].rc = status;
        }
        st_guard_allow_end();
    }
    o->done(o->ctx, b, n);
    free(bt);
    bk_repl_popen_kick(o);
}

/* Starts batches while fewer than BK_REPL_POPEN_JOBS_MAX run: a batch is
 * the longest run of queued items from the head whose directories no
 * running batch touches (busy_dir), split so the queue spreads over the
 * free jobs: creating a log is mostly fsyncs, and the 50 logs of
 * __consumer_offsets opened one after another kept group coordinators
 * unavailable for ~0.5 s and more under load. A refused job runs here:
 * every operation completes. */
void bk_repl_popen_kick(bk_repl_popen_t *o) {
    if (o->kicking) return;
    o->kicking = true;
    while (o->nrunning < BK_REPL_POPEN_JOBS_MAX && o->len > 0) {
        size_t free_jobs = BK_REPL_POPEN_JOBS_MAX - o->nrunning;
        size_t want = (o->len + free_jobs - 1) / free_jobs;
        if (want > BK_REPL_POPEN_BATCH_MAX) want = BK_REPL_POPEN_BATCH_MAX;
        size_t n = 0;
        while (n < want && !busy_dir(o, &o->q[o->head + n])) n++;
        if (n == 0) break;   /* the head waits for a running batch on its directory */
        batch_t *bt = malloc(sizeof *bt + n * sizeof bt->items[0]);
        if (!bt) break;   /* retried at the next apply or completion */
        bt->o = o;
        bt->n = n;
        memcpy(bt->items, o->q + o->head, n * sizeof *bt->items);
        o->head += n;
        o->len -= n;
        if (o->len == 0) o->head = 0;
        o->running[o->nrunning++] = bt;
        if (bk_net_worker_submit(o->pool, file_job, batch_done, bt) != BK_NET_OK) {
            /* the pool is full (num.io.threads busy with 1024 jobs) or
             * stopping: doing it here is late but keeps every open, close
             * and deletion in order and complete (documented exception) */
            st_guard_allow_begin();
            (void)file_job(bt);
            st_guard_allow_end();
            batch_done(bt, KP_OK);
        }
    }
    o->kicking = false;
}

int bk_repl_popen_add(bk_repl_popen_t *o, const bk_repl_popen_item_t *it) {
    if (o->head + o->len == o->cap) {
        if (o->head > 0) {
            memmove(o->q, o->q + o->head, o->len * sizeof *o->q);
            o->head = 0;
        } else {
            size_t nc = o->cap ? o->cap * 2 : 64;
            bk_repl_popen_item_t *nq = realloc(o->q, nc * sizeof *nq);
            if (!nq) return KP_ERR_NOMEM;
            o->q = nq;
            o->cap = nc;
        }
    }
    o->q[o->head + o->len++] = *it;
    return KP_OK;
}

int bk_repl_popen_add_front(bk_repl_popen_t *o, const bk_repl_popen_item_t *it) {
    if (o->head == 0) {
        if (o->len == o->cap) {
            size_t nc = o->cap ? o->cap * 2 : 64;
            bk_repl_popen_item_t *nq = realloc(o->q, nc * sizeof *nq);
            if (!nq) return KP_ERR_NOMEM;
            o->q = nq;
            o->cap = nc;
        }
        memmove(o->q + 1, o->q, o->len * sizeof *o->q);
        o->head = 1;
    }
    o->q[--o->head] = *it;
    o->len++;
    return KP_OK;
}

void bk_repl_popen_free(bk_repl_popen_t *o) {
    if (!o) return;
    assert(o->nrunning == 0);
    /* only reachable when an allocation failed in bk_repl_popen_kick: the logs
     * handed over must not leak; the node is stopping */
    st_guard_allow_begin();
    for (size_t i = 0; i < o->len; i++) {
        bk_repl_popen_item_t *it = &o->q[o->head + i];
        if (it->kind != BK_REPL_POPEN_OPEN && it->log) run_one(it);
    }
    st_guard_allow_end();
    free(o->q);
    free(o);
}
