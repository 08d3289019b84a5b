/* broker/replication/cleaner.c — the node's log cleaner (see cleaner.h). */
#include "broker/replication/cleaner.h"

#include <assert.h>
#include <event2/event.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/config/config_keys.h"
#include "broker/config/config_topic.h"
#include "broker/net/clock.h"
#include "broker/net/worker.h"
#include "broker/replication/parts.h"
#include "storage/st_cleaner.h"
#include "storage/st_guard.h"
#include "storage/st_status.h"

struct bk_repl_cleaner {
    bk_node_t *n;
    struct event *timer;
    bk_net_worker_pool_t *pool;  /* dedicated threads; NULL until the first pass */
    uint32_t pool_threads;
    uint32_t running;
    atomic_bool stop;            /* read by builds (io hook) */
    /* throttle, shared by the builds: a virtual clock of when the bytes
     * processed so far may have been processed at the configured rate */
    pthread_mutex_t thr_mu;
    double thr_rate;             /* bytes per second; <= 0 or huge = none */
    int64_t thr_next_ns;
    bk_repl_cleaner_stats_t st;
    struct clean_job *committing; /* built plans being swapped in, step by step */
};

typedef struct clean_job {
    bk_repl_cleaner_t *c;
    st_clean_plan_t *plan;       /* NULL once the job aborted it */
    st_cleaner_stats_t stats;
    bk_meta_uuid_t topic_id;
    int32_t partition;
    uint64_t log_gen;
    char topic[BK_META_TOPIC_NAME_MAX + 1];
    int64_t started_ms;
    int64_t build_ns;            /* time st_cleaner_build took (its thread) */
    int64_t commit_us;           /* loop time spent in commit steps so far */
    int64_t commit_max_us;       /* the longest step */
    int commit_rc;               /* st_cleaner_commit_some's, while finish runs */
    struct event *step;          /* commit: one segment per loop turn */
    struct clean_job *next;      /* in bk_repl_cleaner.committing */
} clean_job_t;

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Build threads: throttle (log.cleaner.io.max.bytes.per.second) and stop. */
static int io_hook(void *ctx, uint64_t bytes) {
    bk_repl_cleaner_t *c = ctx;
    if (atomic_load(&c->stop)) return BK_NET_ERR_CANCELLED;
    int64_t now = mono_ns(), wait = 0;
    pthread_mutex_lock(&c->thr_mu);
    if (c->thr_rate > 0 && c->thr_rate < 1e15) {
        if (c->thr_next_ns < now) c->thr_next_ns = now;
        c->thr_next_ns += (int64_t)((double)bytes * 1e9 / c->thr_rate);
        wait = c->thr_next_ns - now;
    }
    pthread_mutex_unlock(&c->thr_mu);
    /* sleep in slices so a stop is noticed within 50 ms */
    while (wait > 1000000 && !atomic_load(&c->stop)) {
        int64_t slice = wait < 50000000 ? wait : 50000000;
        struct timespec ts = { slice / 1000000000, slice % 1000000000 };
        nanosleep(&ts, NULL);
        wait -= slice;
    }
    return atomic_load(&c->stop) ? BK_NET_ERR_CANCELLED : KP_OK;
}

static int build_job(void *arg) {
    clean_job_t *j = arg;
    int64_t t0 = mono_ns();
    int rc = st_cleaner_build(j->plan, &j->stats);
    j->build_ns = mono_ns() - t0;
    if (rc != KP_OK) {
        st_cleaner_abort(j->plan);  /* removes its .cleaned files here, off the loop */
        j->plan = NULL;
    }
    return rc;
}

static void schedule(bk_repl_cleaner_t *c, int64_t ms);

/* The job is over (committed, aborted or failed): counts, frees, and the
 * next run comes at once after a pass that cleaned something. */
static void job_end(clean_job_t *j, bool cleaned) {
    bk_repl_cleaner_t *c = j->c;
    assert(c->running > 0);
    c->running--;
    for (clean_job_t **pp = &c->committing; *pp; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            break;
        }
    if (j->step) event_free(j->step);
    free(j);
    if (!atomic_load(&c->stop)) schedule(c, cleaned ? 0 : -1);
}

static void abort_job(clean_job_t *j) {
    if (j->plan) {
        st_guard_allow_begin();   /* unlinks of .cleaned files */
        st_cleaner_abort(j->plan);
        st_guard_allow_end();
        j->plan = NULL;
    }
    j->c->st.aborted++;
}

static void arm_step(clean_job_t *j) {
    struct timeval zero = { 0, 0 };   /* next loop turn, after pending I/O */
    if (event_add(j->step, &zero) != 0) {
        st_logf(ST_LOG_ERROR, "cleaner: cannot arm a commit step of %s-%d", j->topic, j->partition);
        abort_job(j);
        job_end(j, false);
    }
}

static void pass_done(clean_job_t *j, int rc, int finish_rc);

/* Cleaner thread: the directory fsync and the closes of the replaced
 * segments' files (st_cleaner_finish), off the loop. */
static int finish_job(void *arg) {
    clean_job_t *j = arg;
    int rc = st_cleaner_finish(j->plan);
    j->plan = NULL;
    return rc;
}

static void finish_done(void *arg, int status) {
    clean_job_t *j = arg;
    if (j->plan) {
        /* cancelled before it ran (the pool freed at a stop): the closes
         * and the fsync here, once; the loop serves nothing then */
        st_guard_allow_begin();
        status = finish_job(j);
        st_guard_allow_end();
    }
    pass_done(j, j->commit_rc, status);
}

/* One commit step: one segment installed per loop turn (renames of files
 * the build prepared and a swap of the open segment in the log's array: no
 * fsync, open or index build), the partition looked up again each time. */
static void commit_step(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    clean_job_t *j = arg;
    bk_repl_cleaner_t *c = j->c;
    bk_node_t *n = c->n;
    bk_repl_part_t *p = n->parts ? bk_repl_parts_get(n->parts, &j->topic_id, j->partition) : NULL;
    if (!p || !p->log || p->log_gen != j->log_gen || atomic_load(&c->stop)) {
        abort_job(j);   /* deleted, re-created, closed or reassigned meanwhile */
        job_end(j, false);
        return;
    }
    int64_t t0 = mono_ns();
    bool done = false;
    /* Documented exception (broker/README.md, "Still on the loop"): five
     * metadata operations per segment (2 unlinks, 3 renames; no fsync, no
     * open, no read). They stay on the loop because the names they replace
     * are the log's, which retention, truncation and re-creation change on
     * the loop: done here, the check that the segment is still the planned
     * one and the renames are one step that nothing can come between. */
    st_guard_allow_begin();
    int rc = st_cleaner_commit_some(p->log, j->plan, 1, &j->stats, &done);
    st_guard_allow_end();
    int64_t us = (mono_ns() - t0) / 1000;
    j->commit_us += us;
    if (us > j->commit_max_us) j->commit_max_us = us;
    if (!done) {
        arm_step(j);
        return;
    }
    j->commit_rc = rc;
    /* the directory fsync and the closes of the replaced files: on a
     * cleaner thread; the partition stays busy (no new pass) until then */
    if (bk_net_worker_submit(c->pool, finish_job, finish_done, j) == BK_NET_OK) return;
    /* a full or stopped pool: the same work here, once (documented
     * exception, as for any job the pool refused) */
    st_guard_allow_begin();
    int frc = finish_job(j);
    st_guard_allow_end();
    pass_done(j, rc, frc);
}

/* The pass is over and durable (or failed): counts and frees the job. */
static void pass_done(clean_job_t *j, int rc, int finish_rc) {
    bk_repl_cleaner_t *c = j->c;
    bk_node_t *n = c->n;
    bk_repl_part_t *p = n->parts ? bk_repl_parts_get(n->parts, &j->topic_id, j->partition) : NULL;
    bool same = p && p->log && p->log_gen == j->log_gen;
    if (same) p->clean_busy_gen = 0;
    bool cleaned = false;
    if (finish_rc != KP_OK && same) {
        /* the swap may not be durable: no further pass on this log (one that
         * drops tombstones needs the previous pass on disk) until reopened */
        p->clean_bad_gen = p->log_gen;
        st_logf(ST_LOG_ERROR, "cleaner: partition %s-%d: directory fsync after the swap failed (%s); uncleanable "
                "until it is opened again", j->topic, j->partition, st_status_str(finish_rc));
    }
    if (rc == KP_OK && same) {
        c->st.passes++;
        c->st.bytes_read += j->stats.bytes_read;
        c->st.bytes_written += j->stats.bytes_written;
        c->st.records_removed += (uint64_t)(j->stats.records_dropped + j->stats.tombstones_dropped);
        c->st.segments_cleaned += (uint64_t)j->stats.segments_cleaned;
        c->st.last_pass_ms = bk_net_now_ms();
        cleaned = j->stats.segments_cleaned > 0 && finish_rc == KP_OK;
        /* kept tombstones got a delete horizon: a pass after it drops
         * them even if nothing new is written (Kafka: KIP-534) */
        const st_log_config_t *lc = st_log_config(p->log);
        p->clean_due_ms = j->stats.tombstones_kept > 0 && lc->delete_retention_ms < INT64_MAX / 2
                              ? bk_net_now_ms() + lc->delete_retention_ms + 1
                              : -1;
        /* the figures test/bench/run-cleaner-bench.sh reads */
        st_logf(ST_LOG_INFO,
                "cleaner: partition %s-%d: %" PRIu64 " dirty bytes mapped, %" PRIu64
                " bytes written, build %" PRId64 " ms, commit %" PRId64 " us on the loop in %d step(s), longest %"
                PRId64 " us",
                j->topic, j->partition, j->stats.bytes_read, j->stats.bytes_written,
                (j->build_ns + 500000) / 1000000, j->commit_us, j->stats.segments_cleaned, j->commit_max_us);
    } else if (rc != KP_OK) {
        st_logf(ST_LOG_ERROR, "cleaner: partition %s-%d: commit failed: %s", j->topic, j->partition,
                st_status_str(rc));
    }
    job_end(j, cleaned);
}

static void build_done(void *arg, int status) {
    clean_job_t *j = arg;
    bk_repl_cleaner_t *c = j->c;
    bk_node_t *n = c->n;
    bk_repl_part_t *p = n->parts ? bk_repl_parts_get(n->parts, &j->topic_id, j->partition) : NULL;
    bool same = p && p->log && p->log_gen == j->log_gen;
    if (status == KP_OK && same && j->plan && !atomic_load(&c->stop)) {
        j->step = event_new(n->base, -1, 0, commit_step, j);
        if (j->step) {
            j->next = c->committing;
            c->committing = j;
            arm_step(j);
            return;
        }
    }
    if (same) p->clean_busy_gen = 0;
    abort_job(j);
    if (status != KP_OK && status != BK_NET_ERR_CANCELLED && same) {
        p->clean_bad_gen = p->log_gen;
        st_logf(ST_LOG_ERROR, "cleaner: partition %s-%d is uncleanable (%s); skipped until it is opened again",
                j->topic, j->partition, st_status_str(status));
    }
    job_end(j, false);
}

/* ---- selection ----------------------------------------------------------- */

typedef struct {
    bk_repl_cleaner_t *c;
    int64_t now;
    bk_repl_part_t *best;
    bool best_forced;
    double best_ratio;
    double max_ratio;
    uint32_t uncleanable;
} pick_t;

static void consider(bk_repl_part_t *p, void *arg) {
    pick_t *k = arg;
    if (!p->log) return;
    if (p->clean_bad_gen == p->log_gen) {
        k->uncleanable++;
        return;
    }
    const st_log_config_t *lc = st_log_config(p->log);
    if (!(lc->cleanup_policy & ST_CLEANUP_COMPACT)) return;
    double ratio = st_log_dirty_ratio(p->log, k->now);
    if (ratio > k->max_ratio) k->max_ratio = ratio;
    if (p->clean_busy_gen == p->log_gen) return;
    if (p->clean_due_ms == 0) {
        /* first look at this log: opened with a cleaned part, its tombstones'
         * horizons are unknown, so one pass after delete.retention.ms */
        bool cleaned = st_log_cleaner_offset(p->log) > 0 && lc->delete_retention_ms < INT64_MAX / 2;
        p->clean_due_ms = cleaned ? k->now + lc->delete_retention_ms : -1;
    }
    bool forced = p->clean_due_ms > 0 && k->now >= p->clean_due_ms;
    if (!forced && ratio > 0) {
        const bk_cfg_topic_t *tc = bk_node_topic_config(k->c->n, p->topic);
        int64_t max_lag = bk_cfg_topic_int(k->c->n->cfg, tc, BK_CFG_TC_MAX_COMPACTION_LAG_MS);
        int64_t ts = st_log_first_dirty_timestamp(p->log, k->now);
        forced = ts >= 0 && max_lag < INT64_MAX && k->now - ts > max_lag;
    }
    if (!forced && (ratio <= 0 || ratio < lc->min_cleanable_dirty_ratio)) return;
    if (k->best && (k->best_forced > forced || (k->best_forced == forced && k->best_ratio >= ratio))) return;
    k->best = p;
    k->best_forced = forced;
    k->best_ratio = ratio;
}

static uint32_t wanted_threads(const bk_cfg_t *cfg) {
    /* the key's range (config_keys.h) is the pool's bound: refused there, never cut here */
    _Static_assert(BK_REPL_CLEANER_THREADS_MAX == 16, "log.cleaner.threads' maximum (config_keys.h)");
    int64_t t = bk_cfg_int(cfg, BK_CFG_LOG_CLEANER_THREADS);
    assert(t >= 0 && t <= BK_REPL_CLEANER_THREADS_MAX);
    return (uint32_t)t;
}

/* The pool has `want` threads; re-created only while no build runs. */
static bool ensure_pool(bk_repl_cleaner_t *c, uint32_t want) {
    if (c->pool && c->pool_threads >= want) return true;
    if (c->running > 0) return c->pool != NULL;
    if (c->pool) bk_net_worker_pool_free(c->pool, true);
    c->pool = bk_net_worker_pool_new(c->n->base, want, want);
    c->pool_threads = c->pool ? want : 0;
    if (!c->pool) st_logf(ST_LOG_ERROR, "cleaner: cannot start %u threads", want);
    return c->pool != NULL;
}

/* Prepares the chosen log's plan and hands it to a cleaner thread. */
static bool start_one(bk_repl_cleaner_t *c, bk_repl_part_t *p, bool forced, uint32_t threads, int64_t now) {
    const bk_cfg_t *cfg = c->n->cfg;
    int64_t dedupe = bk_cfg_int(cfg, BK_CFG_LOG_CLEANER_DEDUPE_BUFFER_SIZE) / (threads ? threads : 1);
    st_cleaner_config_t cc = { .dedupe_buffer_bytes = (size_t)dedupe, .ignore_dirty_ratio = forced,
                               .io_fn = io_hook, .io_ctx = c };
    clean_job_t *j = calloc(1, sizeof *j);
    if (!j) return false;
    int rc = st_cleaner_prepare(p->log, &cc, now, &j->plan, &j->stats);
    if (rc != KP_OK || !j->plan) {
        if (rc != KP_OK) {
            p->clean_bad_gen = p->log_gen;
            st_logf(ST_LOG_ERROR, "cleaner: partition %s-%d is uncleanable (%s)", p->topic, p->partition,
                    st_status_str(rc));
        }
        if (forced) p->clean_due_ms = -1;
        free(j);
        return rc == KP_OK;
    }
    j->c = c;
    j->topic_id = p->topic_id;
    j->partition = p->partition;
    j->log_gen = p->log_gen;
    memcpy(j->topic, p->topic, sizeof j->topic);
    j->started_ms = now;
    if (bk_net_worker_submit(c->pool, build_job, build_done, j) != BK_NET_OK) {
        st_guard_allow_begin();
        st_cleaner_abort(j->plan);
        st_guard_allow_end();
        free(j);
        return false;
    }
    p->clean_busy_gen = p->log_gen;
    if (forced) p->clean_due_ms = -1;
    c->running++;
    return true;
}

static void run(bk_repl_cleaner_t *c) {
    bk_node_t *n = c->n;
    if (atomic_load(&c->stop) || n->stopping || !n->parts) return;
    const bk_cfg_t *cfg = n->cfg;
    double rate = bk_cfg_double(cfg, BK_CFG_LOG_CLEANER_IO_MAX_BYTES_PER_SECOND);
    pthread_mutex_lock(&c->thr_mu);
    c->thr_rate = rate;
    pthread_mutex_unlock(&c->thr_mu);
    uint32_t threads = wanted_threads(cfg);
    bool enabled = bk_cfg_bool(cfg, BK_CFG_LOG_CLEANER_ENABLE) && threads > 0;
    int64_t now = bk_net_now_ms();
    for (;;) {
        pick_t k = { .c = c, .now = now };
        bk_repl_parts_each(n->parts, consider, &k);
        c->st.max_dirty_ratio = k.max_ratio;
        c->st.uncleanable = k.uncleanable;
        if (!enabled || !k.best || c->running >= threads || !ensure_pool(c, threads)) break;
        if (c->running >= c->pool_threads) break;
        if (!start_one(c, k.best, k.best_forced, threads, now)) break;
    }
    c->st.running = c->running;
}

static void on_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    bk_repl_cleaner_t *c = arg;
    run(c);
    schedule(c, -1);
}

/* ms < 0: the configured backoff. */
static void schedule(bk_repl_cleaner_t *c, int64_t ms) {
    if (ms < 0) {
        ms = bk_cfg_int(c->n->cfg, BK_CFG_LOG_CLEANER_BACKOFF_MS);
        if (ms < BK_REPL_CLEANER_BACKOFF_MIN_MS) ms = BK_REPL_CLEANER_BACKOFF_MIN_MS;
    }
    if (ms > 0 && event_pending(c->timer, EV_TIMEOUT, NULL)) return; /* an earlier run is armed */
    struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000) };
    if (event_add(c->timer, &tv) != 0) st_logf(ST_LOG_ERROR, "cleaner: cannot arm its timer");
}

bk_repl_cleaner_t *bk_repl_cleaner_new(bk_node_t *n) {
    bk_repl_cleaner_t *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->n = n;
    atomic_init(&c->stop, false);
    if (pthread_mutex_init(&c->thr_mu, NULL) != 0) {
        free(c);
        return NULL;
    }
    c->timer = event_new(n->base, -1, 0, on_timer, c);
    if (!c->timer) {
        pthread_mutex_destroy(&c->thr_mu);
        free(c);
        return NULL;
    }
    schedule(c, -1);
    return c;
}

void bk_repl_cleaner_kick(bk_repl_cleaner_t *c) {
    if (!c) return;
    event_del(c->timer);
    schedule(c, 0);
}

void bk_repl_cleaner_free(bk_repl_cleaner_t *c) {
    if (!c) return;
    atomic_store(&c->stop, true);
    event_free(c->timer);
    /* running builds see the stop at their next batch; every done runs
     * before this returns and aborts its plan */
    if (c->pool) bk_net_worker_pool_free(c->pool, false);
    while (c->committing) { /* plans between two commit steps */
        clean_job_t *j = c->committing;
        abort_job(j);
        job_end(j, false);
    }
    assert(c->running == 0);
    pthread_mutex_destroy(&c->thr_mu);
    free(c);
}

void bk_repl_cleaner_stats(const bk_repl_cleaner_t *c, bk_repl_cleaner_stats_t *out) {
    if (!c) {
        memset(out, 0, sizeof *out);
        return;
    }
    *out = c->st;
    out->running = c->running;
}
