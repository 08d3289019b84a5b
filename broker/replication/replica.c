/* broker/replication/replica.c — the replica manager: one core per held partition,
 * created from the log and fed by the image; executes core outputs. See
 * replica.h. */
#include "broker/replication/replica_int.h"

#include <assert.h>
#include <stdatomic.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/config/config_topic.h"
#include "broker/replication/parts.h"
#include "broker/metrics/metrics_catalogue.h"
#include "broker/replication/purgatory.h"
#include "broker/net/mem.h"
#include "protocol/kp_errors.h"
#include "storage/st_status.h"

#define RP_FETCH_BACKOFF_MS 100     /* errors; empty answers wait a tenth */
#define RP_FETCH_TIMEOUT_EXTRA_MS 2000
#define RP_ALTER_RETRY_MS 2000

int64_t bk_rp_now_ms(void) { return bk_net_now_ms(); }

bk_repl_t *bk_repl_replica_core(const bk_repl_part_t *p) { return p && p->rp ? p->rp->core : NULL; }

/* ---- the node-wide state ------------------------------------------------------ */

/* One partition's core timer (bk_rp_t.tick_ev) fired. */
static void on_core_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    bk_rp_t *rp = arg;
    bk_node_t *n = rp->n;
    rp->tick_at = INT64_MAX;
    if (n->stopping || !n->parts) return;
    bk_repl_part_t *p = bk_repl_parts_get(n->parts, &rp->topic_id, rp->partition);
    assert(p && p->rp == rp);   /* rp_free frees the timer with the core */
    bk_repl_out_t out;
    bk_repl_tick(rp->core, bk_net_now_ms(), &out);
    bk_rp_exec(n, p, &out, NULL);
}

/* Arms rp's timer for the core's next due time when that is earlier than
 * the time it is armed for. A later due time leaves it: the early firing
 * finds nothing to do and re-arms (cheaper than re-arming on every
 * produce, which moves deadlines later). */
static void rp_schedule(bk_rp_t *rp) {
    int64_t due = bk_repl_next_tick_ms(rp->core);
    if (due == INT64_MAX || due >= rp->tick_at) return;
    int64_t wait = due - bk_net_now_ms();
    if (wait < 1) wait = 1;   /* the loop's cached clock may lag: never a 0 ms spin */
    struct timeval tv = { (time_t)(wait / 1000), (suseconds_t)(wait % 1000) * 1000 };
    if (event_add(rp->tick_ev, &tv) != 0) {
        /* cannot happen for a timer in a live base; the partition would stall */
        fprintf(stderr, "skiff: node %d: partition %d: core timer not armed\n", rp->n->id, rp->partition);
        return;
    }
    rp->tick_at = due;
}

static void on_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    bk_node_t *n = arg;
    if (n->stopping || !n->parts) return;
    bk_fetcher_tick(n, bk_net_now_ms());
    bk_alter_tick(n, bk_net_now_ms());
}

struct bk_repl_rm *bk_rm_get(bk_node_t *n) {
    if (n->rm) return n->rm;
    if (n->stopping) return NULL;   /* bk_repl_replica_stop has run or will */
    struct bk_repl_rm *rm = calloc(1, sizeof *rm);
    if (!rm) return NULL;
    rm->n = n;
    rm->next_ack_id = 1;
    rm->timer = event_new(n->base, -1, EV_PERSIST, on_timer, n);
    struct timeval tv = { 0, BK_REPL_REPLICA_TICK_MS * 1000 };
    if (!rm->timer || event_add(rm->timer, &tv) != 0) {
        if (rm->timer) event_free(rm->timer);
        free(rm);
        return NULL;
    }
    n->rm = rm;
    return rm;
}

/* ---- core construction -------------------------------------------------------- */

int32_t bk_replica_min_insync(const bk_cfg_t *cfg, const bk_cfg_topic_t *tc) {
    int64_t v = bk_cfg_topic_int(cfg, tc, BK_CFG_TC_MIN_INSYNC_REPLICAS);
    return v > INT32_MAX ? INT32_MAX : v < 1 ? 1 : (int32_t)v;
}

static int32_t min_insync_of(bk_node_t *n, const char *topic) {
    return bk_replica_min_insync(n->cfg, bk_node_topic_config(n, topic));
}

static bk_repl_t *core_from_log(bk_node_t *n, bk_repl_part_t *p) {
    bk_repl_config_t c;
    bk_repl_config_default(&c);
    c.node_id = n->id;
    c.min_insync = min_insync_of(n, p->topic);
    c.lag_max_ms = bk_cfg_int(n->cfg, BK_CFG_REPLICA_LAG_TIME_MAX_MS);
    c.fetch_backoff_ms = RP_FETCH_BACKOFF_MS;
    c.fetch_timeout_ms = bk_cfg_int(n->cfg, BK_CFG_REPLICA_FETCH_WAIT_MAX_MS) + RP_FETCH_TIMEOUT_EXTRA_MS;
    c.alter_retry_ms = RP_ALTER_RETRY_MS;
    c.empty_fetch_pause_ms = 0;   /* our leader parks empty fetches (long poll) */
    st_epoch_cache_t *ec = st_log_epochs(p->log);
    size_t first = ec->n > BK_REPL_EPOCHS_MAX ? ec->n - BK_REPL_EPOCHS_MAX : 0;
    bk_repl_epoch_t ep[BK_REPL_EPOCHS_MAX];
    uint32_t ne = 0;
    for (size_t i = first; i < ec->n; i++) ep[ne++] = (bk_repl_epoch_t){ ec->e[i].epoch, ec->e[i].start_offset };
    bk_repl_restore_t rs = {
        .log_start = st_log_start_offset(p->log),
        .leo = st_log_end_offset(p->log),
        .hw_checkpoint = st_log_high_watermark(p->log),
        .epochs = ep,
        .n_epochs = ne,
    };
    return bk_repl_new(&c, &rs);
}

static void fail_waits(bk_rp_t *rp, int16_t err) {
    while (rp->waits) {
        rp_wait_t *w = rp->waits;
        rp->waits = w->next;
        rp->n_waits--;
        w->res.error = err;
        w->fn(w->ctx, w->part_ctx, &w->res);
        bk_net_mem_free(w);
    }
}

static void rp_free(bk_node_t *n, bk_repl_part_t *p) {
    bk_rp_t *rp = p->rp;
    if (!rp) return;
    p->rp = NULL;
    if (n->rm) n->rm->st.acks_waiting -= rp->n_waits;
    fail_waits(rp, KP_ERROR_NOT_LEADER_OR_FOLLOWER);
    bk_repl_free(rp->core);
    event_free(rp->tick_ev);
    free(rp);
}

static void feed_image(bk_node_t *n, bk_repl_part_t *p) {
    const bk_meta_topic_t *t = bk_meta_image_topic_by_id(&n->img, &p->topic_id);
    if (!t || p->partition >= t->nparts || !p->rp) return;
    const bk_meta_partition_t *ip = &t->parts[p->partition];
    bk_repl_image_t im;
    memset(&im, 0, sizeof im);
    im.leader_id = ip->leader;
    im.leader_epoch = ip->leader_epoch;
    im.partition_epoch = ip->partition_epoch;
    for (int32_t i = 0; i < ip->replicas.n && im.n_replicas < BK_REPL_REPLICAS_MAX; i++)
        im.replicas[im.n_replicas++] = ip->replicas.v[i];
    for (int32_t i = 0; i < ip->isr.n && im.n_isr < BK_REPL_REPLICAS_MAX; i++) im.isr[im.n_isr++] = ip->isr.v[i];
    bk_repl_set_min_insync(p->rp->core, min_insync_of(n, p->topic));
    bk_repl_out_t out;
    int32_t old_epoch = bk_repl_leader_epoch(p->rp->core);
    bk_repl_on_image(p->rp->core, &im, bk_net_now_ms(), &out);
    if (bk_replica_trace_on() && bk_repl_leader_epoch(p->rp->core) != old_epoch) {
        bk_repl_epoch_t ep[BK_REPL_EPOCHS_MAX];
        uint32_t ne = bk_repl_epochs(p->rp->core, ep, BK_REPL_EPOCHS_MAX);
        fprintf(stderr, "repl %d: %s-%d: %s of epoch %d (leader %d), LEO %lld HW %lld, %u epochs, last (%d@%lld)\n",
                n->id, p->topic, p->partition,
                bk_repl_role(p->rp->core) == BK_REPL_LEADER ? "leader" : "follower",
                bk_repl_leader_epoch(p->rp->core), im.leader_id, (long long)bk_repl_leo(p->rp->core),
                (long long)bk_repl_hw(p->rp->core), ne, ne ? ep[ne - 1].epoch : -1,
                ne ? (long long)ep[ne - 1].start_offset : -1LL);
    }
    bk_rp_exec(n, p, &out, NULL);
    /* the log's HW is what readers see: always the core's */
    st_log_set_high_watermark(p->log, bk_repl_hw(p->rp->core));
}

/* (Re)creates p's core from its log. Used at the first LEADER/FOLLOWER
 * change and whenever the log and the core disagree (a failed write). */
static void rp_build(bk_node_t *n, bk_repl_part_t *p) {
    rp_free(n, p);
    if (!p->log || !bk_rm_get(n)) return;
    bk_rp_t *rp = calloc(1, sizeof *rp);
    if (!rp) return;
    rp->n = n;
    rp->topic_id = p->topic_id;
    rp->partition = p->partition;
    rp->tick_at = INT64_MAX;
    rp->tick_ev = evtimer_new(n->base, on_core_timer, rp);
    rp->core = rp->tick_ev ? core_from_log(n, p) : NULL;
    if (!rp->core) {
        fprintf(stderr, "skiff: node %d: %s-%d: replica state cannot be built from the log%s\n", n->id, p->topic,
                p->partition, rp->tick_ev ? "" : " (out of memory)");
        if (rp->tick_ev) event_free(rp->tick_ev);
        free(rp);
        return;
    }
    p->rp = rp;
    rp_schedule(rp);
}

static void rebuild(bk_node_t *n, bk_repl_part_t *p, const char *why, int rc) {
    fprintf(stderr, "skiff: node %d: %s-%d: %s failed (%s); replica state rebuilt from the log\n", n->id, p->topic,
            p->partition, why, st_status_str(rc));
    rp_build(n, p);
    feed_image(n, p);
}

bool bk_repl_replica_on_corrupt(bk_node_t *n, bk_repl_part_t *p, int64_t bad_offset, const char *path) {
    if (!p->log) return false;
    bool follower = p->rp && bk_repl_role(p->rp->core) == BK_REPL_FOLLOWER;
    const bk_meta_topic_t *t = bk_meta_image_topic_by_id(&n->img, &p->topic_id);
    int32_t leader = t && p->partition < t->nparts ? t->parts[p->partition].leader : -1;
    int64_t start = st_log_start_offset(p->log);
    if (follower && leader >= 0 && leader != n->id && bad_offset >= start) {
        int rc = st_log_truncate_to(p->log, bad_offset);
        if (rc == KP_OK) {
            fprintf(stderr, "skiff: node %d: %s-%d: corrupt batch at offset %lld in %s; truncated to it, fetching "
                    "the rest again from leader %d\n", n->id, p->topic, p->partition, (long long)bad_offset, path,
                    leader);
            rp_build(n, p);
            feed_image(n, p);
            return true;
        }
        fprintf(stderr, "skiff: node %d: %s-%d: truncation to %lld after a corrupt batch failed (%s)\n", n->id,
                p->topic, p->partition, (long long)bad_offset, st_status_str(rc));
    }
    /* the only copy this node can trust is gone: never serve the bad batch */
    char why[700];
    snprintf(why, sizeof why, "corrupt batch at offset %lld in %s and no other copy to repair from (%s)",
             (long long)bad_offset, path, follower ? "no live leader" : "this node leads it");
    st_log_mark_offline(p->log, why);
    return false;
}

void bk_repl_replica_before_apply(bk_node_t *n, const bk_meta_change_t *ch, size_t cnt) {
    for (size_t i = 0; i < cnt; i++) {
        if (ch[i].kind != BK_META_CHANGE_STOP) continue;
        bk_repl_part_t *p = bk_repl_parts_get(n->parts, &ch[i].topic_id, ch[i].partition);
        if (p) rp_free(n, p);
    }
}

void bk_repl_replica_after_apply(bk_node_t *n, const bk_meta_change_t *ch, size_t cnt) {
    if (n->stopping) return;
    for (size_t i = 0; i < cnt; i++) {
        if (ch[i].kind == BK_META_CHANGE_STOP) continue;
        bk_repl_part_t *p = bk_repl_parts_get(n->parts, &ch[i].topic_id, ch[i].partition);
        if (!p || !p->log) continue;
        if (!p->rp) rp_build(n, p);
        feed_image(n, p);
    }
}

static void attach_one(bk_repl_part_t *p, void *ctx) {
    if (!p->log || p->rp) return;
    rp_build(ctx, p);
    feed_image(ctx, p);
}

void bk_repl_replica_attach_opened(bk_node_t *n) {
    if (!n->stopping && n->parts) bk_repl_parts_each(n->parts, attach_one, n);
}

static void free_one(bk_repl_part_t *p, void *ctx) { rp_free(ctx, p); }

void bk_repl_replica_stop(bk_node_t *n) {
    if (n->parts) bk_repl_parts_each(n->parts, free_one, n);
    struct bk_repl_rm *rm = n->rm;
    if (!rm) return;
    bk_fetcher_free_all(rm);
    bk_alter_free(rm);
    if (rm->timer) event_free(rm->timer);
    free(rm);
    n->rm = NULL;
}

bool bk_replica_trace_on(void) {
    /* -1: not read yet; any thread may read it first, all read the same */
    static atomic_int on = -1;
    int v = atomic_load_explicit(&on, memory_order_relaxed);
    if (v < 0) {
        const char *e = getenv("SKIFF_REPL_TRACE");
        v = e && *e == '1';
        atomic_store_explicit(&on, v, memory_order_relaxed);
    }
    return v == 1;
}

/* ---- executing a core output ------------------------------------------------- */

static void complete_acks(bk_node_t *n, bk_rp_t *rp, const bk_repl_out_t *out) {
    for (uint32_t i = 0; i < out->n_acks; i++) {
        rp_wait_t **pp = &rp->waits;
        while (*pp && (*pp)->id != out->acks[i].id) pp = &(*pp)->next;
        rp_wait_t *w = *pp;
        if (!w) continue;   /* its produce already finished (immediate completion) */
        *pp = w->next;
        rp->n_waits--;
        if (n->rm) n->rm->st.acks_waiting--;
        w->res.error = out->acks[i].error;
        w->fn(w->ctx, w->part_ctx, &w->res);
        bk_net_mem_free(w);
    }
}

static bool follower_append(bk_node_t *n, bk_repl_part_t *p, const bk_repl_out_t *out, const rp_src_t *src) {
    if (!src || out->n_append > src->n) {
        rebuild(n, p, "append (no bytes for the core's batches)", KP_ERR_BAD_VALUE);
        return false;
    }
    size_t len = 0;
    for (uint32_t i = 0; i < out->n_append; i++) len += src->sizes[i];
    st_append_info_t info;
    int64_t now = bk_net_now_ms();
    /* straight from the answer frame: a replica append patches nothing */
    int rc = st_log_append_replica(p->log, src->data, len, now, &info);
    /* flush.messages / flush.ms: the fsync runs on the worker pool */
    if (rc == KP_OK) bk_repl_parts_flush_maybe(n->parts, p, now);
    if (rc != KP_OK || st_log_end_offset(p->log) != bk_repl_leo(p->rp->core)) {
        rebuild(n, p, "follower append", rc);
        return false;
    }
    return true;
}

void bk_rp_exec(bk_node_t *n, bk_repl_part_t *p, const bk_repl_out_t *out, const rp_src_t *src) {
    bk_rp_t *rp = p->rp;
    if (!rp) return;
    if (out->truncate) {
        int rc = st_log_truncate_to(p->log, out->truncate_to);
        if (rc != KP_OK) { rebuild(n, p, "truncate", rc); return; }
        fprintf(stderr, "skiff: node %d: %s-%d: truncated to offset %lld (leader epoch %d)\n", n->id, p->topic,
                p->partition, (long long)out->truncate_to, bk_repl_leader_epoch(rp->core));
    }
    /* A leader's append happened before the core was told (bk_replica_appended). */
    if (out->n_append && bk_repl_role(rp->core) == BK_REPL_FOLLOWER && !follower_append(n, p, out, src)) return;
    if (out->hw_changed) {
        st_log_set_high_watermark(p->log, out->hw);
        bk_repl_purg_notify_soon(n->purg, &p->topic_id, p->partition);   /* NULL while the node starts */
    }
    if (out->send_fetch) {
        rp->want_fetch = true;
        rp->fetch = out->send_fetch ? out->fetch : rp->fetch;
        bk_fetcher_kick(n, out->fetch.leader_id);
    }
    if (out->alter) {
        if (n->rm) {
            int32_t cur[BK_REPL_REPLICAS_MAX];
            uint32_t nc = bk_repl_isr(rp->core, cur, BK_REPL_REPLICAS_MAX);
            bool shrink = out->alter_req.n_isr < nc;
            if (shrink) n->rm->st.isr_shrinks++;
            else n->rm->st.isr_expands++;
            if (n->metrics)
                bk_mx_inc(bk_mx_series(n->metrics, shrink ? BK_MX_ISR_SHRINKS_TOTAL : BK_MX_ISR_EXPANDS_TOTAL, NULL), 1);
        }
        rp->alter_seq = out->alter_req.seq;
        bk_alter_send(n, p, &out->alter_req);
    }
    rp_schedule(rp);   /* every core call ends here: its next due time may have moved */
    complete_acks(n, rp, out);
}

/* ---- produce --------------------------------------------------------------------- */

int16_t bk_replica_check_produce(bk_node_t *n, bk_repl_part_t *p, bool acks_all, int32_t min_insync) {
    (void)n;
    if (!p->rp || bk_repl_role(p->rp->core) != BK_REPL_LEADER) return KP_ERROR_NOT_LEADER_OR_FOLLOWER;
    bk_repl_set_min_insync(p->rp->core, min_insync);
    if (!acks_all) return 0;
    int32_t isr[BK_REPL_REPLICAS_MAX];
    if ((int32_t)bk_repl_isr(p->rp->core, isr, BK_REPL_REPLICAS_MAX) < min_insync) return KP_ERROR_NOT_ENOUGH_REPLICAS;
    if (bk_repl_n_waits(p->rp->core) >= BK_REPL_WAITS_MAX) return KP_ERROR_REQUEST_TIMED_OUT;
    return 0;
}

/* After the core registered wait `id` (acks_all) in *out: either it
 * completed in the same output (res->error = its error) or the driver keeps it
 * until complete_acks. Executes out. Returns true when the caller waits. */
static bool park_wait(bk_node_t *n, bk_repl_part_t *p, uint64_t id, bool acks_all, bk_repl_ps_done_fn fn, void *ctx,
                      void *part_ctx, bk_repl_out_t *out, bk_repl_ps_result_t *res) {
    bk_rp_t *rp = p->rp;
    bool done_now = !acks_all;
    for (uint32_t i = 0; i < out->n_acks; i++)
        if (out->acks[i].id == id) { done_now = true; res->error = out->acks[i].error; }
    if (!done_now) {
        rp_wait_t *w = bk_net_mem_alloc(sizeof *w);   /* one per acks=all batch: pooled */
        if (!w) { res->error = KP_ERROR_REQUEST_TIMED_OUT; done_now = true; }
        else {
            *w = (rp_wait_t){ id, fn, ctx, part_ctx, *res, rp->waits };
            rp->waits = w;
            rp->n_waits++;
            bk_rm_get(n)->st.acks_waiting++;
        }
    }
    bk_rp_exec(n, p, out, NULL);
    return !done_now;
}

bool bk_replica_appended(bk_node_t *n, bk_repl_part_t *p, const st_append_info_t *info, bool acks_all,
                         int64_t deadline_ms, bk_repl_ps_done_fn fn, void *ctx, void *part_ctx, bk_repl_ps_result_t *res) {
    res->error = 0;
    bk_rp_t *rp = p->rp;
    struct bk_repl_rm *rm = bk_rm_get(n);
    if (!rp || !rm) { res->error = KP_ERROR_NOT_LEADER_OR_FOLLOWER; return false; }
    int64_t nrec = info->last_offset - info->base_offset + 1;
    if (bk_repl_leo(rp->core) != info->base_offset || nrec <= 0 || nrec > UINT32_MAX) {
        /* someone appended behind the core's back: resynchronise */
        rebuild(n, p, "append bookkeeping", KP_ERR_BAD_VALUE);
        res->error = acks_all ? KP_ERROR_NOT_ENOUGH_REPLICAS_AFTER_APPEND : 0;
        return false;
    }
    uint64_t id = rm->next_ack_id++;
    int64_t base = 0;
    bk_repl_out_t out;
    int16_t e = bk_repl_produce(rp->core, (uint32_t)nrec, acks_all, id, deadline_ms, bk_net_now_ms(), &base, &out);
    if (e != KP_ERROR_NONE) {
        /* checked before the append; only a bug gets here */
        rebuild(n, p, "core produce", KP_ERR_BAD_VALUE);
        res->error = e;
        return false;
    }
    assert(base == info->base_offset);
    return park_wait(n, p, id, acks_all, fn, ctx, part_ctx, &out, res);
}

bool bk_replica_wait_duplicate(bk_node_t *n, bk_repl_part_t *p, int64_t deadline_ms, bk_repl_ps_done_fn fn, void *ctx,
                               void *part_ctx, bk_repl_ps_result_t *res) {
    res->error = 0;
    bk_rp_t *rp = p->rp;
    struct bk_repl_rm *rm = bk_rm_get(n);
    if (!rp || !rm) { res->error = KP_ERROR_NOT_LEADER_OR_FOLLOWER; return false; }
    assert(res->base_offset >= 0 && res->last_offset >= res->base_offset);
    uint64_t id = rm->next_ack_id++;
    bk_repl_out_t out;
    int16_t e = bk_repl_wait_replicated(rp->core, res->base_offset, res->last_offset + 1, id, deadline_ms,
                                        bk_net_now_ms(), &out);
    /* INVALID_RECORD: the producer state names offsets the core does not
     * hold (e.g. below the log start): never acknowledged as replicated */
    if (e != KP_ERROR_NONE) {
        res->error = e == KP_ERROR_INVALID_RECORD ? KP_ERROR_NOT_ENOUGH_REPLICAS_AFTER_APPEND : e;
        return false;
    }
    return park_wait(n, p, id, true, fn, ctx, part_ctx, &out, res);
}

/* ---- leader side of a replica fetch ---------------------------------------------- */

void bk_repl_replica_serve_fetch(bk_node_t *n, bk_repl_part_t *p, int32_t replica_id, int32_t current_leader_epoch,
                            int64_t fetch_offset, int32_t last_fetched_epoch, bk_repl_replica_verdict_t *v) {
    memset(v, 0, sizeof *v);
    if (!p->rp) { v->error = KP_ERROR_NOT_LEADER_OR_FOLLOWER; return; }
    if (bk_repl_role(p->rp->core) == BK_REPL_LEADER && fetch_offset < st_log_start_offset(p->log)) {
        /* below our log start (retention, DeleteRecords): the follower
         * restarts its log at our start (the answer carries it) */
        v->error = KP_ERROR_OFFSET_OUT_OF_RANGE;
        return;
    }
    bk_repl_fetch_req_t rq = {
        .replica_id = replica_id,
        .leader_id = n->id,
        .current_leader_epoch = current_leader_epoch,
        .fetch_offset = fetch_offset,
        .last_fetched_epoch = last_fetched_epoch,
        .seq = 0,
    };
    bk_repl_fetch_resp_t resp;
    bk_repl_out_t out;
    bk_repl_on_fetch(p->rp->core, &rq, bk_net_now_ms(), &resp, &out);
    v->error = resp.error;
    v->diverging = resp.diverging;
    v->diverging_epoch = resp.diverging_epoch;
    v->diverging_end_offset = resp.diverging_end_offset;
    if (!v->error && !v->diverging && fetch_offset > st_log_end_offset(p->log)) v->error = KP_ERROR_OFFSET_OUT_OF_RANGE;
    if (bk_replica_trace_on() && (v->diverging || v->error))
        fprintf(stderr, "repl %d: %s-%d: fetch from %d at %lld (last epoch %d, epoch %d): error %d diverging %d (%d@%lld)\n",
                n->id, p->topic, p->partition, replica_id, (long long)fetch_offset, last_fetched_epoch,
                current_leader_epoch, v->error, v->diverging, v->diverging_epoch, (long long)v->diverging_end_offset);
    bk_rp_exec(n, p, &out, NULL);
}

void bk_replica_restart_log(bk_node_t *n, bk_repl_part_t *p, int64_t new_start) {
    if (!p->log || new_start <= st_log_end_offset(p->log)) return;
    int rc = st_log_truncate_fully(p->log, new_start, bk_net_now_ms());
    fprintf(stderr, "skiff: node %d: %s-%d: leader's log starts at %lld, past ours: log restarted there (%s)\n",
            n->id, p->topic, p->partition, (long long)new_start, st_status_str(rc));
    rp_build(n, p);
    feed_image(n, p);
}

void bk_repl_replica_stats(const bk_node_t *n, bk_repl_replica_stats_t *out) {
    if (n->rm) *out = n->rm->st;
    else memset(out, 0, sizeof *out);
}
