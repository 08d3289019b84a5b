/* broker/replication/replica_alter.c — AlterPartition (ISR changes) between a leader's
 * replica core and the active controller.
 *
 * Leader side: on the active controller itself (or with the local
 * committer) the decision runs here, deferred to the next loop turn so a
 * commit never runs inside a core's action; elsewhere an AlterPartition v2
 * (topic ids, plain ISR) goes to the raft leader's controller listener on
 * the lifecycle connection. The answer feeds bk_repl_on_alter_resp; the
 * image change the commit makes reaches the core through the normal change
 * notifications. A lost request is re-sent by the core (alter_retry_ms).
 *
 * Controller side: bk_repl_replica_serve_alter runs bk_meta_ctrl_alter_partition for
 * every partition of the request, commits the records as one decision and
 * answers after the commit. */
#include "broker/replication/replica_int.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/meta/controller.h"
#include "broker/quorum/quorum.h"
#include "broker/net/quorum_client.h"
#include "broker/meta/records.h"
#include "kp_msgs.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_header.h"

#define ALTER_VERSION 2
#define ALTER_SERVE_PARTS_MAX 10000     /* partitions in one served request */

static void deliver(bk_node_t *n, const bk_meta_uuid_t *tid, int32_t partition, const bk_repl_alter_resp_t *resp0) {
    bk_repl_part_t *p = bk_repl_parts_get(n->parts, tid, partition);
    if (!p || !p->rp) return;
    if (bk_replica_trace_on())
        fprintf(stderr, "repl %d: %s-%d: AlterPartition answer error %d leader epoch %d partition epoch %d isr %u\n",
                n->id, p->topic, p->partition, resp0->error, resp0->leader_epoch, resp0->partition_epoch,
                resp0->n_isr);
    bk_repl_alter_resp_t resp = *resp0;
    resp.req_seq = p->rp->alter_seq;
    bk_repl_out_t out;
    bk_repl_on_alter_resp(p->rp->core, &resp, bk_net_now_ms(), &out);
    bk_rp_exec(n, p, &out, NULL);
}

static void fill_resp(bk_repl_alter_resp_t *r, int16_t err, int32_t leader_epoch, int32_t partition_epoch,
                      const int32_t *isr, size_t nisr) {
    memset(r, 0, sizeof *r);
    r->error = err;
    r->leader_epoch = leader_epoch;
    r->partition_epoch = partition_epoch;
    for (size_t i = 0; i < nisr && r->n_isr < BK_REPL_REPLICAS_MAX; i++) r->isr[r->n_isr++] = isr[i];
}

/* ---- batching ---------------------------------------------------------------------
 * Kafka's leaders send one AlterPartition per broker carrying every pending
 * ISR change, with at most one in flight. Sending one request per partition
 * overran the lifecycle connection's queue (BK_NET_QC_INFLIGHT_MAX) after a
 * restart of a node leading ~2,000 partitions: every send beyond it failed,
 * was logged as "no controller" and re-sent by each core 2 s later, some
 * 350 lines a second, and the ISRs never grew back. Here a proposal queues
 * (once per partition: a newer one replaces it), the queue is flushed on
 * the next loop turn in batches of BK_ALTER_BATCH_MAX, one batch in flight
 * (remote request or local commit); the answer flushes the next. A batch
 * that cannot be sent stays queued and is re-tried every ALTER_RETRY_MS;
 * that condition is logged once per ALTER_LOG_INTERVAL_MS with a count.
 * Bounds: the queue holds at most one entry per partition led here. */

#define BK_ALTER_BATCH_MAX 2000          /* partitions in one request (server takes 10,000) */
#define ALTER_RETRY_MS 100               /* a batch that could not be sent */
#define ALTER_INFLIGHT_MAX_MS 30000      /* a batch never answered is forgotten */
#define ALTER_LOG_INTERVAL_MS 10000

typedef struct {
    bk_meta_uuid_t topic_id;
    int32_t partition;
    bk_repl_alter_req_t a;
    bk_meta_ctrl_alter_partition_result_t res;
} alter_item_t;

/* A batch decided here (this node is the controller) and committed once. */
typedef struct {
    bk_node_t *n;
    uint64_t gen;
    size_t cnt;
    alter_item_t items[];
} local_t;

static void batch_done(bk_node_t *n, uint64_t gen) {
    struct bk_repl_rm *rm = n->rm;
    if (!rm || !rm->alter_inflight || rm->alter_gen != gen) return;
    rm->alter_inflight = false;
    if (rm->naq > 0 && rm->alter_ev) {
        struct timeval zero = { 0, 0 };
        (void)evtimer_add(rm->alter_ev, &zero);
    }
}

static void local_done(void *arg, int status) {
    local_t *c = arg;
    for (size_t i = 0; i < c->cnt && status == KP_OK; i++) {
        alter_item_t *it = &c->items[i];
        if (it->res.error) continue;         /* answered before the commit */
        bk_repl_alter_resp_t r;
        fill_resp(&r, 0, it->res.leader_epoch, it->res.partition_epoch, it->res.isr.v, (size_t)it->res.isr.n);
        deliver(c->n, &it->topic_id, it->partition, &r);
    }
    batch_done(c->n, c->gen);
    free(c);
}

/* Decides and commits the batch here; refused partitions are answered at
 * once, the rest after the commit. Returns 0 (the batch owns c) or -1. */
static int run_local(bk_node_t *n, local_t *c) {
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    size_t ok = 0;
    for (size_t i = 0; i < c->cnt; i++) {
        alter_item_t *it = &c->items[i];
        bk_meta_ctrl_alter_partition_t rq = { n->id, n->broker_epoch, it->topic_id, it->partition, it->a.leader_epoch,
                                              it->a.partition_epoch, it->a.isr, it->a.n_isr };
        bk_meta_ctrl_alter_partition(&n->ctrl, &n->img, &rq, &recs, &it->res);
        if (!it->res.error) { ok++; continue; }
        bk_repl_alter_resp_t r;
        fill_resp(&r, it->res.error, it->a.leader_epoch, it->a.partition_epoch, NULL, 0);
        deliver(n, &it->topic_id, it->partition, &r);
    }
    if (recs.err) { bk_meta_recs_free(&recs); return -1; }
    if (ok == 0 || recs.n == 0) {
        bk_meta_recs_free(&recs);
        local_done(c, KP_OK);
        return 0;
    }
    bk_node_commit(n, &recs, local_done, c);
    bk_meta_recs_free(&recs);
    return 0;
}

/* One AlterPartition v2 for the batch, to the raft leader's controller
 * listener. 0 = sent (the answer comes through bk_repl_replica_alter_response). */
static int send_remote(bk_node_t *n, const local_t *c) {
    kp_alter_partition_request_topic_data_t *ts = calloc(c->cnt, sizeof *ts);
    kp_alter_partition_request_partition_data_t *ps = calloc(c->cnt, sizeof *ps);
    size_t cap = 256 + c->cnt * (64 + 4 * BK_REPL_REPLICAS_MAX);
    uint8_t *buf = malloc(cap);
    int rc = -1;
    if (!ts || !ps || !buf) goto out;
    /* one topic entry per partition: the controller serves any grouping */
    for (size_t i = 0; i < c->cnt; i++) {
        const alter_item_t *it = &c->items[i];
        kp_alter_partition_request_partition_data_init(&ps[i]);
        ps[i].partition_index = it->partition;
        ps[i].leader_epoch = it->a.leader_epoch;
        ps[i].new_isr.items = (int32_t *)it->a.isr;
        ps[i].new_isr.count = (int32_t)it->a.n_isr;
        ps[i].partition_epoch = it->a.partition_epoch;
        kp_alter_partition_request_topic_data_init(&ts[i]);
        memcpy(ts[i].topic_id.b, it->topic_id.b, 16);
        ts[i].partitions.items = &ps[i];
        ts[i].partitions.count = 1;
    }
    kp_alter_partition_request_t q;
    kp_alter_partition_request_init(&q);
    q.broker_id = n->id;
    q.broker_epoch = n->broker_epoch;
    q.topics.items = ts;
    q.topics.count = (int32_t)c->cnt;
    int32_t corr = bk_quorum_corr(n->quorum);
    kp_request_header_t h = { KP_API_ALTER_PARTITION, ALTER_VERSION, corr, kp_slice_cstr("skiff-broker") };
    kp_wr_t w;
    kp_wr_init(&w, buf, cap);
    if (kp_request_encode(&w, &h, &q) != KP_OK) goto out;
    rc = bk_quorum_send_to_leader(n->quorum, BK_NET_QC_ALTER, buf, w.pos, corr);
out:
    free(ts);
    free(ps);
    free(buf);
    return rc;
}

static void log_unsent(bk_node_t *n, size_t cnt, int64_t now) {
    struct bk_repl_rm *rm = n->rm;
    rm->alter_unsent++;
    if (rm->alter_log_ms != 0 && now - rm->alter_log_ms < ALTER_LOG_INTERVAL_MS) return;
    int32_t l = bk_quorum_leader(n->quorum);
    fprintf(stderr,
            "skiff: node %d: AlterPartition for %zu partitions not sent (%s %d); %llu attempts failed in the "
            "last %d s; retrying every %d ms\n",
            n->id, cnt, l < 0 ? "no controller known, last" : "no connection to controller node", l,
            (unsigned long long)rm->alter_unsent, ALTER_LOG_INTERVAL_MS / 1000, ALTER_RETRY_MS);
    rm->alter_log_ms = now;
    rm->alter_unsent = 0;
}

/* Takes up to BK_ALTER_BATCH_MAX live proposals off the queue into a batch. */
static local_t *take_batch(bk_node_t *n) {
    struct bk_repl_rm *rm = n->rm;
    size_t want = rm->naq < BK_ALTER_BATCH_MAX ? rm->naq : BK_ALTER_BATCH_MAX;
    local_t *c = calloc(1, sizeof *c + want * sizeof c->items[0]);
    if (!c) return NULL;
    c->n = n;
    size_t k = 0;
    for (; k < rm->naq && c->cnt < want; k++) {
        bk_repl_part_t *p = bk_repl_parts_get(n->parts, &rm->aq[k].topic_id, rm->aq[k].partition);
        if (!p || !p->rp || !p->rp->alter_queued) continue;   /* gone, or rebuilt since */
        alter_item_t *it = &c->items[c->cnt++];
        it->topic_id = p->topic_id;
        it->partition = p->partition;
        it->a = p->rp->alter_req;
    }
    /* the taken prefix leaves the queue; its flags are cleared by the caller
     * once the batch is really on its way */
    memmove(rm->aq, rm->aq + k, (rm->naq - k) * sizeof rm->aq[0]);
    rm->naq -= k;
    return c;
}

/* Puts a batch that could not go back at the front of the queue. */
static void untake_batch(bk_node_t *n, local_t *c) {
    struct bk_repl_rm *rm = n->rm;
    /* room: the batch came off this queue and the queue never shrinks its
     * capacity, but entries may have been queued since */
    if (rm->naq + c->cnt > rm->cap_aq) {
        size_t cap = rm->naq + c->cnt;
        bk_alter_key_t *q = realloc(rm->aq, cap * sizeof *q);
        if (!q) {   /* dropped: their cores re-propose after alter_retry_ms */
            for (size_t i = 0; i < c->cnt; i++) {
                bk_repl_part_t *p = bk_repl_parts_get(n->parts, &c->items[i].topic_id, c->items[i].partition);
                if (p && p->rp) p->rp->alter_queued = false;
            }
            return;
        }
        rm->aq = q;
        rm->cap_aq = cap;
    }
    memmove(rm->aq + c->cnt, rm->aq, rm->naq * sizeof rm->aq[0]);
    for (size_t i = 0; i < c->cnt; i++) rm->aq[i] = (bk_alter_key_t){ c->items[i].topic_id, c->items[i].partition };
    rm->naq += c->cnt;
}

static void sent_batch(bk_node_t *n, const local_t *c) {
    for (size_t i = 0; i < c->cnt; i++) {
        bk_repl_part_t *p = bk_repl_parts_get(n->parts, &c->items[i].topic_id, c->items[i].partition);
        if (p && p->rp) p->rp->alter_queued = false;
    }
}

static void alter_flush(bk_node_t *n) {
    struct bk_repl_rm *rm = n->rm;
    if (!rm || n->stopping || rm->alter_inflight || rm->naq == 0) return;
    int64_t now = bk_net_now_ms();
    local_t *c = take_batch(n);
    if (!c) return;                                  /* re-tried by the tick */
    if (c->cnt == 0) { free(c); return; }
    c->gen = ++rm->alter_gen;
    bool remote = n->quorum && !bk_quorum_is_leader(n->quorum);
    if (bk_replica_trace_on())
        fprintf(stderr, "repl %d: AlterPartition batch of %zu partitions %s\n", n->id, c->cnt, remote ? "remote" : "local");
    rm->alter_inflight = true;
    rm->alter_sent_ms = now;
    if (remote) {
        int rc = send_remote(n, c);
        if (rc == 0) sent_batch(n, c);
        else {
            rm->alter_inflight = false;
            rm->alter_try_ms = now;
            log_unsent(n, c->cnt, now);
            untake_batch(n, c);
        }
        free(c);
        return;
    }
    sent_batch(n, c);
    if (run_local(n, c) != 0) {
        rm->alter_inflight = false;
        free(c);
    }
}

static void on_alter_ev(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    alter_flush(arg);
}

void bk_alter_send(bk_node_t *n, bk_repl_part_t *p, const bk_repl_alter_req_t *a) {
    struct bk_repl_rm *rm = n->rm;
    if (n->stopping || !rm || !p->rp) return;
    if (bk_replica_trace_on())
        fprintf(stderr, "repl %d: %s-%d: AlterPartition isr %u (first %d) leader epoch %d partition epoch %d seq %llu\n",
                n->id, p->topic, p->partition, a->n_isr, a->n_isr ? a->isr[0] : -1, a->leader_epoch,
                a->partition_epoch, (unsigned long long)a->seq);
    p->rp->alter_req = *a;                            /* a newer proposal replaces a queued one */
    if (!p->rp->alter_queued) {
        if (rm->naq == rm->cap_aq) {
            size_t cap = rm->cap_aq ? rm->cap_aq * 2 : 64;
            bk_alter_key_t *q = realloc(rm->aq, cap * sizeof *q);
            if (!q) return;                           /* the core re-proposes after alter_retry_ms */
            rm->aq = q;
            rm->cap_aq = cap;
        }
        rm->aq[rm->naq++] = (bk_alter_key_t){ p->topic_id, p->partition };
        p->rp->alter_queued = true;
    }
    if (!rm->alter_ev) rm->alter_ev = evtimer_new(n->base, on_alter_ev, n);
    if (rm->alter_ev && !evtimer_pending(rm->alter_ev, NULL)) {
        struct timeval zero = { 0, 0 };
        (void)evtimer_add(rm->alter_ev, &zero);
    }
}

void bk_alter_tick(bk_node_t *n, int64_t now_ms) {
    struct bk_repl_rm *rm = n->rm;
    if (!rm) return;
    if (rm->alter_inflight && now_ms - rm->alter_sent_ms > ALTER_INFLIGHT_MAX_MS) rm->alter_inflight = false;
    if (!rm->alter_inflight && rm->naq > 0 && now_ms - rm->alter_try_ms >= ALTER_RETRY_MS) alter_flush(n);
}

void bk_alter_free(struct bk_repl_rm *rm) {
    if (rm->alter_ev) event_free(rm->alter_ev);
    rm->alter_ev = NULL;
    free(rm->aq);
    rm->aq = NULL;
    rm->naq = rm->cap_aq = 0;
    rm->alter_inflight = false;
}

void bk_repl_replica_alter_response(bk_node_t *n, const uint8_t *frame, size_t len) {
    /* at most one batch in flight: this answer (or its loss) ends it */
    if (n->rm) batch_done(n, n->rm->alter_gen);
    if (!frame) return;   /* lost: the cores re-propose after alter_retry_ms */
    kp_arena_t a;
    kp_arena_init(&a, len * 4 + 65536);
    int32_t corr = 0;
    void *body = NULL;
    if (kp_response_decode(KP_API_ALTER_PARTITION, ALTER_VERSION, frame, len, &corr, &body, &a) != KP_OK) {
        kp_arena_free(&a);
        return;
    }
    const kp_alter_partition_response_t *r = body;
    for (int32_t i = 0; i < r->topics.count && r->error_code == 0; i++) {
        const kp_alter_partition_response_topic_data_t *t = &r->topics.items[i];
        bk_meta_uuid_t tid;
        memcpy(tid.b, t->topic_id.b, 16);
        for (int32_t k = 0; k < t->partitions.count; k++) {
            const kp_alter_partition_response_partition_data_t *pd = &t->partitions.items[k];
            bk_repl_part_t *p = bk_repl_parts_get(n->parts, &tid, pd->partition_index);
            if (!p || !p->rp) continue;
            bk_repl_alter_resp_t rr;
            int32_t pe = pd->partition_epoch;
            if (pd->error_code == KP_ERROR_INELIGIBLE_REPLICA || pd->error_code == KP_ERROR_OPERATION_NOT_ATTEMPTED)
                pe = bk_repl_partition_epoch(p->rp->core);   /* refused at the proposal's own epoch */
            fill_resp(&rr, pd->error_code, pd->leader_epoch, pe, pd->isr.items,
                      pd->isr.count > 0 ? (size_t)pd->isr.count : 0);
            deliver(n, &tid, pd->partition_index, &rr);
        }
    }
    kp_arena_free(&a);
}

/* ---- serving on the controller ------------------------------------------------------ */

typedef struct {
    bk_node_t *n;
    bk_net_slot_t slot;
    int16_t version;
    int32_t corr;
    kp_alter_partition_response_t resp;
    kp_alter_partition_response_topic_data_t *ts;
    kp_alter_partition_response_partition_data_t *ps;
    int32_t *isrs;                  /* BK_META_REPLICAS_MAX per partition */
} serve_t;

static void serve_free(serve_t *s) {
    free(s->ts);
    free(s->ps);
    free(s->isrs);
    free(s);
}

static void serve_answer(serve_t *s, int16_t top_error) {
    s->resp.error_code = top_error;
    if (top_error) s->resp.topics.count = 0;
    size_t cap = 4096 + (size_t)s->resp.topics.count * 64 + 0;
    for (int32_t i = 0; i < s->resp.topics.count; i++) cap += (size_t)s->resp.topics.items[i].partitions.count * 128;
    uint8_t *buf = malloc(cap);
    bk_net_t *net = bk_quorum_net(s->n->quorum);
    struct evbuffer *eb = evbuffer_new();
    kp_wr_t w;
    if (buf) kp_wr_init(&w, buf, cap);
    if (!buf || !eb || kp_response_encode(&w, KP_API_ALTER_PARTITION, s->version, s->corr, &s->resp, NULL) != KP_OK ||
        evbuffer_add(eb, buf + 4, w.pos - 4) != 0) {
        if (eb) evbuffer_free(eb);
        (void)bk_net_respond_none(net, s->slot);
    } else {
        (void)bk_net_respond(net, s->slot, eb);
    }
    free(buf);
    serve_free(s);
}

static void serve_done(void *arg, int status) {
    serve_t *s = arg;
    serve_answer(s, status == KP_OK ? 0 : KP_ERROR_NOT_CONTROLLER);
}

static const bk_meta_topic_t *req_topic(bk_node_t *n, int16_t version, const kp_alter_partition_request_topic_data_t *t) {
    if (version >= 2) return bk_meta_image_topic_by_id(&n->img, (const bk_meta_uuid_t *)t->topic_id.b);
    return bk_meta_image_topic_by_slice(&n->img, t->topic_name);
}

static void serve_partition(serve_t *s, int16_t version, int32_t broker_id, int64_t broker_epoch,
                            const bk_meta_topic_t *t, const kp_alter_partition_request_partition_data_t *pd,
                            kp_alter_partition_response_partition_data_t *o, int32_t *isr_out, bk_meta_recs_t *recs) {
    kp_alter_partition_response_partition_data_init(o);
    o->partition_index = pd->partition_index;
    o->leader_id = -1;
    int32_t isr[BK_META_REPLICAS_MAX];
    size_t nisr = 0;
    if (version >= 3) {
        for (int32_t i = 0; i < pd->new_isr_with_epochs.count && nisr < BK_META_REPLICAS_MAX; i++)
            isr[nisr++] = pd->new_isr_with_epochs.items[i].broker_id;
    } else {
        for (int32_t i = 0; i < pd->new_isr.count && nisr < BK_META_REPLICAS_MAX; i++) isr[nisr++] = pd->new_isr.items[i];
    }
    if (!t) { o->error_code = version >= 2 ? KP_ERROR_UNKNOWN_TOPIC_ID : KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION; return; }
    bk_meta_ctrl_alter_partition_t rq = { broker_id, broker_epoch, t->id, pd->partition_index, pd->leader_epoch,
                                     pd->partition_epoch, isr, nisr };
    bk_meta_ctrl_alter_partition_result_t res;
    bk_meta_ctrl_alter_partition(&s->n->ctrl, &s->n->img, &rq, recs, &res);
    o->error_code = res.error;
    if (res.error) return;
    o->leader_id = res.leader;
    o->leader_epoch = res.leader_epoch;
    o->partition_epoch = res.partition_epoch;
    memcpy(isr_out, res.isr.v, (size_t)res.isr.n * sizeof isr_out[0]);
    o->isr.items = isr_out;
    o->isr.count = res.isr.n;
}

void bk_repl_replica_serve_alter(bk_node_t *n, bk_net_conn_t *conn, const kp_request_header_t *h, const void *body) {
    const kp_alter_partition_request_t *q = body;
    serve_t *s = calloc(1, sizeof *s);
    if (!s) { bk_net_conn_close(conn); return; }
    s->n = n;
    s->slot = bk_net_conn_slot(conn);
    s->version = h->api_version;
    s->corr = h->correlation_id;
    kp_alter_partition_response_init(&s->resp);
    size_t nt = q->topics.count > 0 ? (size_t)q->topics.count : 0, np = 0;
    for (size_t i = 0; i < nt; i++) np += q->topics.items[i].partitions.count > 0 ? (size_t)q->topics.items[i].partitions.count : 0;
    if (np > ALTER_SERVE_PARTS_MAX) { serve_answer(s, KP_ERROR_INVALID_REQUEST); return; }
    s->ts = calloc(nt ? nt : 1, sizeof *s->ts);
    s->ps = calloc(np ? np : 1, sizeof *s->ps);
    s->isrs = calloc((np ? np : 1) * BK_META_REPLICAS_MAX, sizeof *s->isrs);
    if (!s->ts || !s->ps || !s->isrs) { serve_answer(s, KP_ERROR_UNKNOWN_SERVER_ERROR); return; }
    if (!bk_quorum_is_leader(n->quorum)) { serve_answer(s, KP_ERROR_NOT_CONTROLLER); return; }
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    size_t k = 0;
    for (size_t i = 0; i < nt; i++) {
        const kp_alter_partition_request_topic_data_t *td = &q->topics.items[i];
        const bk_meta_topic_t *t = req_topic(n, s->version, td);
        kp_alter_partition_response_topic_data_init(&s->ts[i]);
        s->ts[i].topic_name = td->topic_name;
        s->ts[i].topic_id = td->topic_id;
        s->ts[i].partitions.items = &s->ps[k];
        for (int32_t j = 0; j < td->partitions.count; j++, k++)
            serve_partition(s, s->version, q->broker_id, q->broker_epoch, t, &td->partitions.items[j], &s->ps[k],
                            &s->isrs[k * BK_META_REPLICAS_MAX], &recs);
        s->ts[i].partitions.count = td->partitions.count;
    }
    s->resp.topics.items = s->ts;
    s->resp.topics.count = (int32_t)nt;
    if (recs.err) { bk_meta_recs_free(&recs); serve_answer(s, KP_ERROR_UNKNOWN_SERVER_ERROR); return; }
    /* the request's strings point into the caller's arena: answered below
     * only after the commit, so copy nothing but ids (names are < v2) */
    for (size_t i = 0; i < nt; i++) s->ts[i].topic_name = kp_slice_null();
    if (recs.n == 0) { bk_meta_recs_free(&recs); serve_answer(s, 0); return; }
    bk_node_commit(n, &recs, serve_done, s);
    bk_meta_recs_free(&recs);
}
