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

static bool trace_on(void) {
    const char *e = getenv("SKIFF_REPL_TRACE");
    return e && *e == '1';
}

static void deliver(bk_node_t *n, const bk_meta_uuid_t *tid, int32_t partition, const bk_repl_alter_resp_t *resp0) {
    bk_repl_part_t *p = bk_repl_parts_get(n->parts, tid, partition);
    if (!p || !p->rp) return;
    if (trace_on())
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

/* ---- local decision (this node is the controller) ------------------------------- */

typedef struct {
    bk_node_t *n;
    bk_meta_uuid_t topic_id;
    int32_t partition;
    bk_repl_alter_req_t a;
    bk_meta_ctrl_alter_partition_result_t res;
} local_t;

static void local_done(void *arg, int status) {
    local_t *c = arg;
    if (status == KP_OK) {
        bk_repl_alter_resp_t r;
        fill_resp(&r, 0, c->res.leader_epoch, c->res.partition_epoch, c->res.isr.v, (size_t)c->res.isr.n);
        deliver(c->n, &c->topic_id, c->partition, &r);
    }
    free(c);
}

static void local_run(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    local_t *c = arg;
    bk_node_t *n = c->n;
    if (n->stopping || (n->quorum && !bk_quorum_is_leader(n->quorum))) { free(c); return; }
    bk_meta_ctrl_alter_partition_t rq = { n->id, n->broker_epoch, c->topic_id, c->partition, c->a.leader_epoch,
                                     c->a.partition_epoch, c->a.isr, c->a.n_isr };
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_alter_partition(&n->ctrl, &n->img, &rq, &recs, &c->res);
    if (c->res.error) {
        bk_meta_recs_free(&recs);
        bk_repl_alter_resp_t r;
        fill_resp(&r, c->res.error, c->a.leader_epoch, c->a.partition_epoch, NULL, 0);
        deliver(n, &c->topic_id, c->partition, &r);
        free(c);
        return;
    }
    bk_node_commit(n, &recs, local_done, c);
    bk_meta_recs_free(&recs);
}

/* ---- remote (another node is the controller) ----------------------------------------- */

static int send_remote(bk_node_t *n, const bk_repl_part_t *p, const bk_repl_alter_req_t *a) {
    kp_alter_partition_request_partition_data_t pd;
    kp_alter_partition_request_partition_data_init(&pd);
    pd.partition_index = p->partition;
    pd.leader_epoch = a->leader_epoch;
    pd.new_isr.items = (int32_t *)a->isr;
    pd.new_isr.count = (int32_t)a->n_isr;
    pd.partition_epoch = a->partition_epoch;
    kp_alter_partition_request_topic_data_t td;
    kp_alter_partition_request_topic_data_init(&td);
    memcpy(td.topic_id.b, p->topic_id.b, 16);
    td.partitions.items = &pd;
    td.partitions.count = 1;
    kp_alter_partition_request_t q;
    kp_alter_partition_request_init(&q);
    q.broker_id = n->id;
    q.broker_epoch = n->broker_epoch;
    q.topics.items = &td;
    q.topics.count = 1;
    int32_t corr = bk_quorum_corr(n->quorum);
    kp_request_header_t h = { KP_API_ALTER_PARTITION, ALTER_VERSION, corr, kp_slice_cstr("skiff-broker") };
    uint8_t buf[1024];
    kp_wr_t w;
    kp_wr_init(&w, buf, sizeof buf);
    if (kp_request_encode(&w, &h, &q) != KP_OK) return -1;
    return bk_quorum_send_to_leader(n->quorum, BK_NET_QC_ALTER, buf, w.pos, corr);
}

void bk_alter_send(bk_node_t *n, bk_repl_part_t *p, const bk_repl_alter_req_t *a) {
    if (n->stopping) return;
    if (trace_on())
        fprintf(stderr, "repl %d: %s-%d: AlterPartition isr %u (first %d) leader epoch %d partition epoch %d seq %llu %s\n",
                n->id, p->topic, p->partition, a->n_isr, a->n_isr ? a->isr[0] : -1, a->leader_epoch,
                a->partition_epoch, (unsigned long long)a->seq,
                n->quorum && !bk_quorum_is_leader(n->quorum) ? "remote" : "local");
    if (n->quorum && !bk_quorum_is_leader(n->quorum)) {
        if (send_remote(n, p, a) != 0)
            fprintf(stderr, "skiff: node %d: %s-%d: AlterPartition not sent (no controller); retried later\n", n->id,
                    p->topic, p->partition);
        return;
    }
    local_t *c = calloc(1, sizeof *c);
    if (!c) return;
    c->n = n;
    c->topic_id = p->topic_id;
    c->partition = p->partition;
    c->a = *a;
    struct timeval zero = { 0, 0 };
    if (event_base_once(n->base, -1, EV_TIMEOUT, local_run, c, &zero) != 0) free(c);
}

void bk_repl_replica_alter_response(bk_node_t *n, const uint8_t *frame, size_t len) {
    if (!frame) return;   /* lost: the core re-sends */
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
    char name[BK_META_TOPIC_NAME_MAX + 1];
    if (t->topic_name.len > BK_META_TOPIC_NAME_MAX) return NULL;
    memcpy(name, t->topic_name.p, t->topic_name.len);
    name[t->topic_name.len] = '\0';
    return bk_meta_image_topic_by_name(&n->img, name);
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
