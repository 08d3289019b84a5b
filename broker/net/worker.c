/* broker/net/worker.c — the worker pool: a mutex-guarded FIFO of jobs for the
 * threads, a FIFO of finished jobs for the loop, and an eventfd that wakes
 * the loop. One lock for both queues: jobs are coarse (milliseconds of disk
 * work), so contention is not worth a lock-free design. */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/event.h>

#include "broker/net/worker.h"

typedef struct {
    bk_net_job_fn job;
    bk_net_done_fn done;
    void *arg;
    int status;
} job_t;

/* FIFO of job indexes; capacity queue_max, so it can never overflow. */
typedef struct {
    uint32_t *idx;
    uint32_t head, len;
} fifo_t;

struct bk_net_worker_pool {
    uint32_t threads_n, queue_max;
    pthread_t *threads;
    uint32_t threads_started;
    job_t *jobs;           /* queue_max records */
    uint32_t *free_idx;    /* loop thread only */
    uint32_t free_n;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    fifo_t todo;           /* guarded by mu */
    fifo_t done;           /* guarded by mu */
    bool stop, drain;      /* guarded by mu */
    int efd;
    struct event *wake_ev;
    bk_net_worker_stats_t stats; /* loop thread only */
};

static void fifo_push(fifo_t *f, uint32_t cap, uint32_t v) {
    assert(f->len < cap);
    f->idx[(f->head + f->len++) % cap] = v;
}

static bool fifo_pop(fifo_t *f, uint32_t cap, uint32_t *v) {
    if (f->len == 0) return false;
    *v = f->idx[f->head];
    f->head = (f->head + 1) % cap;
    f->len--;
    return true;
}

static void *worker_main(void *arg) {
    bk_net_worker_pool_t *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->todo.len == 0) pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop && (!p->drain || p->todo.len == 0)) break;
        uint32_t i;
        bool got = fifo_pop(&p->todo, p->queue_max, &i);
        assert(got);
        pthread_mutex_unlock(&p->mu);
        p->jobs[i].status = p->jobs[i].job(p->jobs[i].arg);
        pthread_mutex_lock(&p->mu);
        fifo_push(&p->done, p->queue_max, i);
        uint64_t one = 1;
        /* eventfd write fails only if the counter would overflow 2^64-2 */
        ssize_t w = write(p->efd, &one, sizeof one);
        assert(w == (ssize_t)sizeof one);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void finish(bk_net_worker_pool_t *p, uint32_t i, int status) {
    job_t j = p->jobs[i];
    memset(&p->jobs[i], 0, sizeof p->jobs[i]);
    p->free_idx[p->free_n++] = i;
    assert(p->stats.outstanding > 0);
    p->stats.outstanding--;
    if (status == BK_NET_ERR_CANCELLED) p->stats.cancelled++;
    else p->stats.completed++;
    j.done(j.arg, status);
}

/* Deliver finished jobs. Bounded by queue_max per call: nothing else can be
 * in the done queue. */
static void deliver_done(bk_net_worker_pool_t *p) {
    for (uint32_t n = 0; n < p->queue_max; n++) {
        uint32_t i;
        pthread_mutex_lock(&p->mu);
        bool got = fifo_pop(&p->done, p->queue_max, &i);
        pthread_mutex_unlock(&p->mu);
        if (!got) return;
        finish(p, i, p->jobs[i].status);
    }
}

static void wake_cb(evutil_socket_t fd, short what, void *arg) {
    uint64_t n;
    while (read(fd, &n, sizeof n) > 0) {
    }
    deliver_done(arg);
}

bk_net_worker_pool_t *bk_net_worker_pool_new(struct event_base *base, uint32_t threads, uint32_t queue_max) {
    if (threads < 1 || threads > BK_NET_WORKER_THREADS_MAX || queue_max < 1 ||
        queue_max > BK_NET_WORKER_QUEUE_MAX_LIMIT)
        return NULL;
    bk_net_worker_pool_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->threads_n = threads;
    p->queue_max = queue_max;
    p->efd = -1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->threads = calloc(threads, sizeof *p->threads);
    p->jobs = calloc(queue_max, sizeof *p->jobs);
    p->free_idx = calloc(queue_max, sizeof *p->free_idx);
    p->todo.idx = calloc(queue_max, sizeof *p->todo.idx);
    p->done.idx = calloc(queue_max, sizeof *p->done.idx);
    if (!p->threads || !p->jobs || !p->free_idx || !p->todo.idx || !p->done.idx) goto fail;
    for (uint32_t i = 0; i < queue_max; i++) p->free_idx[i] = queue_max - 1 - i;
    p->free_n = queue_max;
    p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (p->efd < 0) goto fail;
    p->wake_ev = event_new(base, p->efd, EV_READ | EV_PERSIST, wake_cb, p);
    if (!p->wake_ev || event_add(p->wake_ev, NULL) != 0) goto fail;
    for (; p->threads_started < threads; p->threads_started++)
        if (pthread_create(&p->threads[p->threads_started], NULL, worker_main, p) != 0) goto fail;
    return p;
fail:
    bk_net_worker_pool_free(p, false);
    return NULL;
}

int bk_net_worker_submit(bk_net_worker_pool_t *p, bk_net_job_fn job, bk_net_done_fn done, void *arg) {
    assert(job && done);
    if (p->free_n == 0) {
        p->stats.rejected++;
        return BK_NET_ERR_FULL;
    }
    pthread_mutex_lock(&p->mu);
    if (p->stop) {
        pthread_mutex_unlock(&p->mu);
        p->stats.rejected++;
        return BK_NET_ERR_STOPPED;
    }
    uint32_t i = p->free_idx[--p->free_n];
    p->jobs[i] = (job_t){ .job = job, .done = done, .arg = arg };
    fifo_push(&p->todo, p->queue_max, i);
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    p->stats.submitted++;
    p->stats.outstanding++;
    return BK_NET_OK;
}

void bk_net_worker_stats(bk_net_worker_pool_t *p, bk_net_worker_stats_t *out) { *out = p->stats; }

void bk_net_worker_pool_free(bk_net_worker_pool_t *p, bool drain) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    p->drain = drain;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (uint32_t t = 0; t < p->threads_started; t++) pthread_join(p->threads[t], NULL);
    /* No thread is left: the queues are ours alone now. */
    if (p->jobs) {
        deliver_done(p);
        uint32_t i;
        while (fifo_pop(&p->todo, p->queue_max, &i)) finish(p, i, BK_NET_ERR_CANCELLED);
        assert(p->stats.outstanding == 0);
    }
    if (p->wake_ev) event_free(p->wake_ev);
    if (p->efd >= 0) close(p->efd);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->threads);
    free(p->jobs);
    free(p->free_idx);
    free(p->todo.idx);
    free(p->done.idx);
    free(p);
}
