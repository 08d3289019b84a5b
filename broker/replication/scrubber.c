/* scrubber.c — see scrubber.h. */
#include "broker/replication/scrubber.h"

#include <assert.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/config/config.h"
#include "broker/config/config_keys.h"
#include "broker/metrics/metrics_catalogue.h"
#include "broker/metrics/metrics.h"
#include "broker/net/clock.h"
#include "broker/net/worker.h"
#include "broker/replication/parts.h"
#include "broker/replication/replica.h"
#include "storage/st_log.h"
#include "storage/st_status.h"

/* counted for the log line of a pass; bytes and corruptions are metrics */
typedef struct bk_repl_scrub_stats {
    uint64_t jobs, bytes, corruptions, repairs, passes;
} bk_repl_scrub_stats_t;

#define SCRUB_JOB_BYTES (256 * 1024)   /* read by one job on the worker pool */

typedef struct scrub_job scrub_job_t;

struct bk_repl_scrub {
    bk_node_t *n;
    struct event *timer;
    int64_t rate_bps;            /* skiff.scrubber.bytes.per.second */
    int64_t pass_interval_ms;
    int64_t tokens;              /* bytes we may read now (may go negative: whole batches) */
    int64_t last_ms;
    int64_t pause_until_ms;      /* after a pass */
    size_t part_idx;             /* slot of the partition being read (bk_repl_parts_slot) */
    int64_t seg_base;            /* next segment: the first rolled one with base >= this */
    uint64_t pos;                /* where to continue in it */
    int64_t pos_offset;          /* and the offset expected there */
    scrub_job_t *inflight;       /* at most one job */
    bk_repl_scrub_stats_t st;
};

struct scrub_job {
    struct bk_repl_scrub *s;          /* NULL once the scrubber stopped: the job frees itself */
    bk_meta_uuid_t topic_id;
    int32_t partition;
    uint64_t log_gen;
    st_log_scrub_t *job;
};

static int job_run(void *arg) { return st_log_scrub_run(((scrub_job_t *)arg)->job); }

static void next_partition(struct bk_repl_scrub *s) {
    s->part_idx++;
    s->seg_base = 0;
    s->pos = 0;
}

static void job_done(void *arg, int status) {
    scrub_job_t *j = arg;
    struct bk_repl_scrub *s = j->s;
    if (!s) { /* the scrubber stopped meanwhile */
        st_log_scrub_free(j->job);
        free(j);
        return;
    }
    assert(s->inflight == j);
    s->inflight = NULL;
    bk_node_t *n = s->n;
    bk_repl_part_t *p = bk_repl_parts_get(n->parts, &j->topic_id, j->partition);
    if (!p || !p->log || p->log_gen != j->log_gen || status == BK_NET_ERR_CANCELLED) {
        /* the log went (or was replaced) meanwhile: start that partition over */
        st_log_scrub_free(j->job);
        free(j);
        s->seg_base = 0;
        s->pos = 0;
        return;
    }
    st_scrub_result_t res;
    int rc = st_log_scrub_end(p->log, j->job, &res);
    free(j);
    s->tokens -= (int64_t)res.bytes;
    s->st.bytes += res.bytes;
    if (n->metrics && res.bytes) bk_mx_inc(bk_mx_series(n->metrics, BK_MX_SCRUB_BYTES_TOTAL, NULL), res.bytes);
    if (rc != KP_OK || status != KP_OK) {
        /* the segment changed meanwhile (truncation, retention, compaction)
         * or could not be read: no verdict; start the partition over */
        if (status != KP_OK)
            fprintf(stderr, "skiff: node %d: %s-%d: scrub read of %s failed (%s)\n", n->id, p->topic, p->partition,
                    res.path, st_status_str(status));
        s->seg_base = 0;
        s->pos = 0;
        if (status != KP_OK) next_partition(s);
        return;
    }
    if (res.corrupt) {
        s->st.corruptions++;
        if (n->metrics) bk_mx_inc(bk_mx_series(n->metrics, BK_MX_SCRUB_CORRUPTIONS_TOTAL, NULL), 1);
        if (bk_repl_replica_on_corrupt(n, p, res.bad_offset, res.path)) s->st.repairs++;
        next_partition(s);
        return;
    }
    if (res.seg_done) {
        s->seg_base = res.seg_base + 1;
        s->pos = 0;
    } else {
        s->seg_base = res.seg_base;
        s->pos = res.next_pos;
        s->pos_offset = res.next_offset;
    }
}

/* Starts the next job if tokens allow; skips partitions with nothing rolled. */
static void start_job(struct bk_repl_scrub *s, int64_t now_ms) {
    bk_node_t *n = s->n;
    /* one step per slot: a tick touches each slot at most once (it used to
     * walk the whole table to find each candidate: O(partitions^2)) */
    for (;;) {
        if (s->part_idx < bk_repl_parts_slots(n->parts) && !bk_repl_parts_slot(n->parts, s->part_idx)) {
            next_partition(s);   /* empty slot or no log */
            continue;
        }
        bk_repl_part_t *p = bk_repl_parts_slot(n->parts, s->part_idx);
        if (!p) {
            /* a whole pass over every partition is over */
            s->part_idx = 0;
            s->seg_base = 0;
            s->pos = 0;
            s->st.passes++;
            fprintf(stderr, "skiff: node %d: scrub pass %llu done (so far: %llu jobs, %llu bytes, %llu corrupt batches, "
                    "%llu repairs started)\n", n->id, (unsigned long long)s->st.passes, (unsigned long long)s->st.jobs,
                    (unsigned long long)s->st.bytes, (unsigned long long)s->st.corruptions,
                    (unsigned long long)s->st.repairs);
            s->pause_until_ms = now_ms + s->pass_interval_ms;
            return;
        }
        st_log_scrub_t *job = NULL;
        /* at most SCRUB_JOB_BYTES per job: the pool's threads serve requests too */
        uint64_t budget = (uint64_t)(s->tokens < SCRUB_JOB_BYTES ? s->tokens : SCRUB_JOB_BYTES);
        int rc = st_log_scrub_begin(p->log, s->seg_base, s->pos, s->pos_offset, budget, &job);
        if (rc != KP_OK || !job) {
            next_partition(s);
            continue;
        }
        scrub_job_t *j = calloc(1, sizeof *j);
        if (!j) {
            st_log_scrub_free(job);
            return;
        }
        *j = (scrub_job_t){ s, p->topic_id, p->partition, p->log_gen, job };
        if (bk_net_worker_submit(n->pool, job_run, job_done, j) != BK_NET_OK) {
            /* pool full or stopping: try again on a later tick */
            st_log_scrub_free(job);
            free(j);
            return;
        }
        s->inflight = j;
        s->st.jobs++;
        return;
    }
}

static void on_tick(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    struct bk_repl_scrub *s = arg;
    int64_t now = bk_net_now_ms();
    int64_t dt = now - s->last_ms;
    s->last_ms = now;
    if (dt > 0) {
        /* refill; bank at most one second's worth */
        int64_t add = s->rate_bps / 1000 * dt + s->rate_bps % 1000 * dt / 1000;
        s->tokens = s->tokens + add > s->rate_bps ? s->rate_bps : s->tokens + add;
    }
    if (s->inflight || s->n->stopping || s->tokens <= 0 || now < s->pause_until_ms) return;
    start_job(s, now);
}

int bk_repl_scrub_start(bk_node_t *n) {
    if (!bk_cfg_bool(n->cfg, BK_CFG_SKIFF_SCRUBBER_ENABLE)) return KP_OK;
    struct bk_repl_scrub *s = calloc(1, sizeof *s);
    if (!s) return KP_ERR_NOMEM;
    s->n = n;
    s->rate_bps = bk_cfg_int(n->cfg, BK_CFG_SKIFF_SCRUBBER_BYTES_PER_SECOND);
    s->pass_interval_ms = bk_cfg_int(n->cfg, BK_CFG_SKIFF_SCRUBBER_PASS_INTERVAL_MS);
    assert(s->rate_bps >= 1);
    s->last_ms = bk_net_now_ms();
    s->timer = event_new(n->base, -1, EV_PERSIST, on_tick, s);
    struct timeval tv = { 0, BK_REPL_SCRUB_TICK_MS * 1000 };
    if (!s->timer || event_add(s->timer, &tv) != 0) {
        if (s->timer) event_free(s->timer);
        free(s);
        return KP_ERR_NOMEM;
    }
    n->scrub = s;
    return KP_OK;
}

void bk_repl_scrub_stop(bk_node_t *n) {
    struct bk_repl_scrub *s = n->scrub;
    if (!s) return;
    if (s->timer) event_free(s->timer);
    if (s->inflight) s->inflight->s = NULL;   /* its completion frees it */
    free(s);
    n->scrub = NULL;
}

