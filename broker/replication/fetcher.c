/* broker/replication/fetcher.c — follower fetchers: one connection per source broker
 * (its Kafka listener, from the image's registration), one Fetch in flight
 * carrying every partition followed from it whose core asked for a fetch.
 *
 * Fetch v13 (BK_REPL_RW_FETCH_VERSION): ReplicaId = this node, sessionless
 * (session epoch -1), per partition the current leader epoch, the fetch
 * offset (our LEO) and the last fetched epoch; the leader long-polls
 * replica.fetch.wait.max.ms. The answer's batches are described to the core
 * (base, last offset, epoch) and the ones it accepts are appended verbatim
 * (st_log_append_replica keeps offsets and epochs). A lost request, a
 * failed send or an undecodable answer is an error for every partition in
 * it (the core backs off); a request unanswered for the core's fetch
 * timeout drops the connection. */
#include "broker/replication/replica_int.h"

#include <assert.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/net/mem.h"
#include "broker/net/quorum_client.h"
#include "broker/replication/replica_wire.h"
#include "kp_msgs.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_header.h"

#define FETCH_MAX_BYTES (10 << 20)       /* whole answer */
#define FETCH_TIMEOUT_EXTRA_MS 3000      /* beyond the long-poll wait */

typedef struct {
    bk_meta_uuid_t topic_id;
    int32_t partition;
    bk_repl_fetch_req_t req;
} fsent_t;

/* A partition that wants a fetch from this source, while one is chosen. */
typedef struct {
    uint32_t pos;
    bk_repl_part_t *p;
} fcand_t;

struct fetcher {
    bk_node_t *n;
    int32_t id;                      /* source broker */
    char host[BK_NODE_HOST_NAME_MAX + 1];
    uint16_t port;
    bk_net_qc_peer_t *qc;
    bool inflight;
    int32_t corr;
    int64_t sent_ms;
    fsent_t *sent;                   /* the request in flight: nsent of cap_sent */
    uint32_t *sent_pos;              /* per sent partition: its iteration position */
    bool *sent_got;                  /* per sent partition: its answer had records */
    size_t nsent, cap_sent;          /* (the three arrays have cap_sent entries) */
    bool capped;                     /* the cap left wanting partitions out */
    uint32_t cursor;                 /* round-robin start (bk_repl_rw_rr_pick) */
    fcand_t *cand;                   /* scratch of send_now: ncand of cap_cand */
    uint32_t *cand_pos, *picked;     /* same capacity as cand */
    size_t ncand, cap_cand;
    bool cand_short;                 /* a candidate did not fit (allocation failed) */
    int64_t bad_log_ms;              /* last "bad answer" line; others counted */
    uint32_t bad_suppressed;
    struct event *retry;             /* re-send after a lost connection */
    kp_arena_t arena;                /* answers are decoded here, reused (one chunk kept) */
};

static void on_resp(void *ctx, int32_t peer_id, const bk_net_qc_pending_t *pend, const uint8_t *frame, size_t len);
static void send_now(fetcher_t *f);
static bool fetcher_for_id(fetcher_t *f);

#define FETCH_RETRY_MS 50                /* after a lost connection */

static void on_retry(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    fetcher_t *f = arg;
    if (f->n && !f->inflight && !f->n->stopping && fetcher_for_id(f)) send_now(f);
}

static fetcher_t *find(struct bk_repl_rm *rm, int32_t id) {
    for (size_t i = 0; i < rm->nfetchers; i++)
        if (rm->fetchers[i]->id == id) return rm->fetchers[i];
    return NULL;
}

/* The fetcher for broker `id`, (re)connected to its registered address. */
static fetcher_t *fetcher_for(bk_node_t *n, int32_t id) {
    struct bk_repl_rm *rm = bk_rm_get(n);
    if (!rm || id < 0 || id == n->id) return NULL;
    const bk_meta_broker_t *b = bk_meta_image_broker(&n->img, id);
    if (!b || b->nendpoints == 0) return NULL;
    const bk_meta_endpoint_t *ep = bk_node_broker_endpoint(n, b, NULL); /* the inter-broker listener */
    fetcher_t *f = find(rm, id);
    if (f && (strcmp(f->host, ep->host) != 0 || f->port != ep->port) && !f->inflight) {
        bk_net_qc_peer_t *qc = f->qc;   /* moved: reconnect to the new address */
        f->qc = NULL;
        bk_net_qc_free(qc);
    }
    if (!f) {
        if (rm->nfetchers >= BK_FETCHERS_MAX) return NULL;
        f = calloc(1, sizeof *f);
        if (!f) return NULL;
        f->n = n;
        f->id = id;
        f->retry = evtimer_new(n->base, on_retry, f);
        if (!f->retry) { free(f); return NULL; }
        kp_arena_init(&f->arena, 0);
        rm->fetchers[rm->nfetchers++] = f;
    }
    if (!f->qc) {
        snprintf(f->host, sizeof f->host, "%s", ep->host);
        f->port = ep->port;
        f->qc = bk_net_qc_new(n->base, id, f->host, f->port, on_resp, f);
    }
    return f->qc ? f : NULL;
}

/* fetcher_for for an existing fetcher: its connection, remade if needed. */
static bool fetcher_for_id(fetcher_t *f) { return fetcher_for(f->n, f->id) == f; }

/* ---- sending ------------------------------------------------------------------ */

typedef struct {
    fetcher_t *f;
    uint32_t pos;                    /* iteration position of the next partition */
} collect_t;

/* Grows the candidate scratch to hold one more; allocation follows the
 * partitions actually followed from this source (never an outside count). */
static bool cand_room(fetcher_t *f) {
    if (f->ncand < f->cap_cand) return true;
    size_t cap = f->cap_cand ? f->cap_cand * 2 : 256;
    fcand_t *c = realloc(f->cand, cap * sizeof *c);
    if (c) f->cand = c;
    uint32_t *ps = c ? realloc(f->cand_pos, cap * sizeof *ps) : NULL;
    if (ps) f->cand_pos = ps;
    uint32_t *pk = ps ? realloc(f->picked, cap * sizeof *pk) : NULL;
    if (pk) f->picked = pk;
    if (!pk) return false;
    f->cap_cand = cap;
    return true;
}

static void collect(bk_repl_part_t *p, void *ctx) {
    collect_t *c = ctx;
    fetcher_t *f = c->f;
    uint32_t pos = c->pos++;
    if (!p->rp || !p->rp->want_fetch || p->rp->fetch.leader_id != f->id) return;
    if (!cand_room(f)) { f->cand_short = true; return; }
    f->cand[f->ncand] = (fcand_t){ pos, p };
    f->cand_pos[f->ncand++] = pos;
}

/* Chooses the request: every partition wanting a fetch from this source,
 * or BK_REPL_FETCHER_PARTS_MAX of them round-robin from the cursor. */
static void choose(fetcher_t *f) {
    f->nsent = 0;
    f->ncand = 0;
    f->cand_short = false;
    collect_t c = { f, 0 };
    bk_repl_parts_each(f->n->parts, collect, &c);
    if (f->ncand == 0) return;
    size_t cnt = bk_repl_rw_rr_pick(f->cand_pos, f->ncand, f->cursor, BK_REPL_FETCHER_PARTS_MAX, f->picked);
    if (cnt > f->cap_sent) {
        fsent_t *s = realloc(f->sent, cnt * sizeof *s);
        if (s) f->sent = s;
        uint32_t *ps = s ? realloc(f->sent_pos, cnt * sizeof *ps) : NULL;
        if (ps) f->sent_pos = ps;
        bool *pg = ps ? realloc(f->sent_got, cnt * sizeof *pg) : NULL;
        if (pg) { f->sent_got = pg; f->cap_sent = cnt; }
        else cnt = f->cap_sent;      /* fewer this time; the rest stay wanting */
    }
    f->capped = f->cand_short || cnt < f->ncand;
    for (size_t k = 0; k < cnt; k++) {
        const fcand_t *cd = &f->cand[f->picked[k]];
        bk_repl_part_t *p = cd->p;
        p->rp->want_fetch = false;
        f->sent_pos[f->nsent] = cd->pos;
        f->sent[f->nsent++] = (fsent_t){ p->topic_id, p->partition, p->rp->fetch };
    }
}

/* Every partition of the request gets an error answer (core backs off). */
static void fail_sent(fetcher_t *f, int16_t err) {
    bk_node_t *n = f->n;
    size_t cnt = f->nsent;
    f->nsent = 0;
    f->inflight = false;
    if (n->rm) n->rm->st.fetch_errors++;
    for (size_t i = 0; i < cnt; i++) {
        bk_repl_part_t *p = bk_repl_parts_get(n->parts, &f->sent[i].topic_id, f->sent[i].partition);
        if (!p || !p->rp) continue;
        bk_repl_fetch_resp_t r;
        memset(&r, 0, sizeof r);
        r.error = err;
        r.leader_epoch = f->sent[i].req.current_leader_epoch;
        r.req_fetch_offset = f->sent[i].req.fetch_offset;
        r.req_seq = f->sent[i].req.seq;
        bk_repl_out_t out;
        bk_repl_on_fetch_resp(p->rp->core, &r, bk_net_now_ms(), &out);
        bk_rp_exec(n, p, &out, NULL);
    }
}

static int encode(fetcher_t *f, uint8_t **buf_out, size_t *len_out) {
    bk_node_t *n = f->n;
    bk_repl_rw_part_t *ps = bk_net_mem_alloc(f->nsent * sizeof *ps);   /* per fetch: pooled */
    if (!ps) return KP_ERR_NOMEM;
    for (size_t i = 0; i < f->nsent; i++) {
        const fsent_t *s = &f->sent[i];
        memcpy(ps[i].topic_id, s->topic_id.b, 16);
        ps[i].partition = s->partition;
        ps[i].current_leader_epoch = s->req.current_leader_epoch;
        ps[i].fetch_offset = s->req.fetch_offset;
        ps[i].last_fetched_epoch = s->req.last_fetched_epoch;
    }
    f->corr = bk_net_qc_next_corr(f->qc);
    bk_repl_rw_fetch_opts_t o = {
        .replica_id = n->id,
        .correlation_id = f->corr,
        .max_wait_ms = (int32_t)bk_cfg_int(n->cfg, BK_CFG_REPLICA_FETCH_WAIT_MAX_MS),
        .min_bytes = (int32_t)bk_cfg_int(n->cfg, BK_CFG_REPLICA_FETCH_MIN_BYTES),
        .max_bytes = FETCH_MAX_BYTES,
        .partition_max_bytes = (int32_t)bk_cfg_int(n->cfg, BK_CFG_REPLICA_FETCH_MAX_BYTES),
    };
    int rc = bk_repl_rw_fetch_encode(&o, ps, f->nsent, buf_out, len_out);
    bk_net_mem_free(ps);
    return rc;
}

static void send_now(fetcher_t *f) {
    /* f->sent is the request in flight: on_resp and fail_sent read it while
     * the cores run, and only a fetcher not in flight chooses anew */
    assert(!f->inflight);
    choose(f);
    if (f->nsent == 0) return;
    uint8_t *buf = NULL;
    size_t len = 0;
    int64_t now = bk_net_now_ms();
    bk_net_qc_pending_t pend;
    memset(&pend, 0, sizeof pend);
    pend.kind = BK_NET_QC_REPL_FETCH;
    f->inflight = true;
    f->sent_ms = now;
    if (encode(f, &buf, &len) != KP_OK) { fail_sent(f, KP_ERROR_UNKNOWN_SERVER_ERROR); return; }
    pend.corr = f->corr;
    int rc = bk_net_qc_send(f->qc, buf, len, &pend, now);
    bk_net_mem_free(buf);
    if (rc != 0) { fail_sent(f, KP_ERROR_NETWORK_EXCEPTION); return; }
    if (f->n->rm) f->n->rm->st.fetch_requests++;
}

void bk_fetcher_kick(bk_node_t *n, int32_t leader_id) {
    if (n->stopping) return;
    fetcher_t *f = fetcher_for(n, leader_id);
    if (!f) {
        /* no address (yet): the partitions wait; their cores time the fetch out */
        return;
    }
    if (!f->inflight) send_now(f);
}

void bk_fetcher_tick(bk_node_t *n, int64_t now_ms) {
    struct bk_repl_rm *rm = n->rm;
    if (!rm) return;
    int64_t limit = bk_cfg_int(n->cfg, BK_CFG_REPLICA_FETCH_WAIT_MAX_MS) + FETCH_TIMEOUT_EXTRA_MS;
    for (size_t i = 0; i < rm->nfetchers; i++) {
        fetcher_t *f = rm->fetchers[i];
        if (f->inflight && now_ms - f->sent_ms > limit) {
            /* unanswered (a stopped peer): drop the connection; the pending
             * request is reported lost through on_resp */
            bk_net_qc_peer_t *qc = f->qc;
            f->qc = NULL;      /* a kick from the callback makes a new one */
            bk_net_qc_free(qc);
            if (f->inflight) fail_sent(f, KP_ERROR_REQUEST_TIMED_OUT);
            if (fetcher_for(n, f->id) == f) send_now(f);   /* fetches queued meanwhile */
        }
    }
}

void bk_fetcher_free_all(struct bk_repl_rm *rm) {
    for (size_t i = 0; i < rm->nfetchers; i++) {
        fetcher_t *f = rm->fetchers[i];
        f->nsent = 0;          /* the cores are gone: nothing to report */
        f->inflight = false;
        bk_net_qc_peer_t *qc = f->qc;
        f->qc = NULL;
        f->n = NULL;
        bk_net_qc_free(qc);
        event_free(f->retry);
        kp_arena_free(&f->arena);
        free(f->sent);
        free(f->sent_pos);
        free(f->sent_got);
        free(f->cand);
        free(f->cand_pos);
        free(f->picked);
        free(f);
    }
    rm->nfetchers = 0;
}

/* ---- answers ----------------------------------------------------------------------- */

static void describe_batches(const kp_bytes_t *recs, bk_repl_fetch_resp_t *r, rp_src_t *src) {
    src->data = recs->p;
    r->n_batches = bk_repl_rw_describe_batches(recs->p, recs->len, r->batches, src->sizes, BK_REPL_BATCHES_MAX);
    src->n = r->n_batches;
}

/* Hands partition s its answer; true when the answer carried records. */
static bool deliver(fetcher_t *f, const fsent_t *s, const kp_fetch_response_partition_data_t *pd, int16_t top_err) {
    bk_node_t *n = f->n;
    bk_repl_part_t *p = bk_repl_parts_get(n->parts, &s->topic_id, s->partition);
    if (!p || !p->rp) return false;
    bk_repl_fetch_resp_t r;
    memset(&r, 0, sizeof r);
    rp_src_t src = { 0 };
    r.leader_epoch = s->req.current_leader_epoch;
    r.req_fetch_offset = s->req.fetch_offset;
    r.req_seq = s->req.seq;
    if (top_err || !pd) {
        r.error = top_err ? top_err : KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
    } else if (pd->error_code == KP_ERROR_OFFSET_OUT_OF_RANGE && pd->log_start_offset > st_log_end_offset(p->log) &&
               s->req.fetch_offset == bk_repl_leo(p->rp->core)) {
        bk_replica_restart_log(n, p, pd->log_start_offset);
        return false;
    } else {
        r.error = pd->error_code;
        r.high_watermark = pd->high_watermark;
        r.log_start = pd->log_start_offset;
        if (pd->diverging_epoch.epoch >= 0 || pd->diverging_epoch.end_offset >= 0) {
            r.diverging = true;
            r.diverging_epoch = pd->diverging_epoch.epoch;
            r.diverging_end_offset = pd->diverging_epoch.end_offset;
        } else {
            describe_batches(&pd->records.bytes, &r, &src);
        }
    }
    bk_repl_out_t out;
    bk_repl_on_fetch_resp(p->rp->core, &r, bk_net_now_ms(), &out);
    bk_rp_exec(n, p, &out, &src);
    return r.n_batches > 0;
}

#define BAD_LOG_INTERVAL_MS 10000        /* one "bad answer" line per source per interval */

static void log_bad(fetcher_t *f, int rc) {
    int64_t now = bk_net_now_ms();
    if (f->bad_log_ms != 0 && now - f->bad_log_ms < BAD_LOG_INTERVAL_MS) { f->bad_suppressed++; return; }
    fprintf(stderr, "skiff: node %d: bad replica fetch answer from node %d (%s; %zu partitions asked); %u more since the last report\n",
            f->n->id, f->id, rc == KP_OK ? "correlation id" : kp_status_str(rc), f->nsent, f->bad_suppressed);
    f->bad_log_ms = now;
    f->bad_suppressed = 0;
}

static void on_resp(void *ctx, int32_t peer_id, const bk_net_qc_pending_t *pend, const uint8_t *frame, size_t len) {
    (void)peer_id;
    fetcher_t *f = ctx;
    if (!f->n || !f->inflight || pend->corr != f->corr) return;
    if (!frame) {
        /* connection lost; fetches queued behind this one go out on a new
         * connection (bk_qc paces reconnects; a refused send backs off) */
        fail_sent(f, KP_ERROR_NETWORK_EXCEPTION);
        struct timeval tv = { 0, FETCH_RETRY_MS * 1000 };
        (void)evtimer_add(f->retry, &tv);
        return;
    }
    kp_arena_t *a = &f->arena;
    int32_t corr = 0;
    const void *body = NULL;
    int rc = bk_repl_rw_fetch_decode(frame, len, f->nsent, FETCH_MAX_BYTES, a, &corr, &body);
    if (rc != KP_OK || corr != f->corr) {
        log_bad(f, rc);
        kp_arena_reset_retain(a, BK_REPL_RW_ARENA_KEEP_BYTES);
        fail_sent(f, KP_ERROR_CORRUPT_MESSAGE);
        return;
    }
    const kp_fetch_response_t *r = body;
    size_t cnt = f->nsent;
    f->nsent = 0;
    /* f->sent is read in place, as fail_sent does: the fetcher stays "in
     * flight" while the cores run, so nothing chooses a new request into
     * it (send_now asserts that); the cores' new fetch requests wait as
     * want_fetch and are gathered into one request below */
    bk_repl_rw_cursor_t cur = { 0, 0 };
    for (size_t i = 0; i < cnt; i++) {
        const fsent_t *s = &f->sent[i];
        f->sent_got[i] = deliver(f, s, bk_repl_rw_answer_find(r, &cur, s->topic_id.b, s->partition), r->error_code);
    }
    f->cursor = bk_repl_rw_rr_next(f->sent_pos, f->sent_got, cnt, f->capped, f->cursor);
    kp_arena_reset_retain(a, BK_REPL_RW_ARENA_KEEP_BYTES);
    f->inflight = false;
    if (f->n->rm && !f->n->stopping) send_now(f);
}
