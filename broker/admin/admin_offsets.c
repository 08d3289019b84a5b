/* broker/admin/admin_offsets.c — see admin_int.h. Cost: one round trip per
 * leader, in parallel, over connections of its own; nothing cached, so an
 * answer is never older than the request. */
#include "broker/admin/admin_int.h"

#include <assert.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "broker/net/quorum_client.h"
#include "protocol/kp_header.h"

#define LIST_OFFSETS_VERSION 2

typedef struct {
    bk_node_t *node;
    admin_offset_row_t *rows;
    size_t nrows;
    admin_offsets_fn done_fn;
    void *arg;
    bk_net_qc_peer_t *peers[ADMIN_OFFSETS_PEERS_MAX];   /* peer id = the leader it asks */
    size_t npeers, pending;
    struct event *timer;
    bool done;
} lookup_t;

static void lookup_free(lookup_t *l) {
    for (size_t i = 0; i < l->npeers; i++) bk_net_qc_free(l->peers[i]);   /* reports the rest lost: ignored */
    if (l->timer) event_free(l->timer);
    free(l);
}

/* Timer (timeout, or activated when the last answer came): hand over and
 * free. Never runs inside a peer's read callback, so freeing the peers is
 * safe. */
static void finish(evutil_socket_t fd, short what, void *arg) {
    (void)fd; (void)what;
    lookup_t *l = arg;
    l->done = true;
    l->done_fn(l->arg, l->rows, l->nrows);
    lookup_free(l);
}

static bool asked_of(const lookup_t *l, const admin_offset_row_t *r, int32_t leader, int32_t self) {
    return r->offset < 0 && r->leader == leader && leader >= 0 && leader != self;
}

/* The k-th topic entry of the answer is the k-th row asked of that leader. */
static void take_answer(lookup_t *l, int32_t leader, const kp_list_offsets_response_t *rsp) {
    int32_t t = 0;
    for (size_t i = 0; i < l->nrows && t < rsp->topics.count; i++) {
        admin_offset_row_t *r = &l->rows[i];
        if (!asked_of(l, r, leader, l->node->id)) continue;
        const kp_list_offsets_response_list_offsets_topic_response_t *tr = &rsp->topics.items[t++];
        if (tr->partitions.count != 1 || strlen(r->topic) != tr->name.len || memcmp(r->topic, tr->name.p, tr->name.len) != 0)
            continue;   /* not the row asked: leave it unknown */
        const kp_list_offsets_response_list_offsets_partition_response_t *pr = tr->partitions.items;
        if (pr->partition_index == r->partition && pr->error_code == 0 && pr->offset >= 0) r->offset = pr->offset;
    }
}

static void on_answer(void *ctx, int32_t peer_id, const bk_net_qc_pending_t *p, const uint8_t *frame, size_t len) {
    lookup_t *l = ctx;
    if (l->done) return;
    if (frame) {
        kp_arena_t a;
        kp_arena_init(&a, 65536);
        int32_t corr = 0;
        void *body = NULL;
        if (kp_response_decode(KP_API_LIST_OFFSETS, LIST_OFFSETS_VERSION, frame, len, &corr, &body, &a) == KP_OK &&
            corr == p->corr)
            take_answer(l, peer_id, body);
        kp_arena_free(&a);
    }
    assert(l->pending > 0);
    if (--l->pending == 0) event_active(l->timer, EV_TIMEOUT, 0);
}

/* One ListOffsets for every row asked of `leader`; 0 when sent. */
static int ask_leader(lookup_t *l, int32_t leader) {
    const bk_meta_broker_t *b = bk_meta_image_broker(&l->node->img, leader);
    if (!b || b->nendpoints == 0 || l->npeers == ADMIN_OFFSETS_PEERS_MAX) return -1;
    size_t n = 0;
    for (size_t i = 0; i < l->nrows; i++) n += asked_of(l, &l->rows[i], leader, l->node->id);
    kp_list_offsets_request_list_offsets_topic_t *ts = calloc(n, sizeof *ts);
    kp_list_offsets_request_list_offsets_partition_t *ps = calloc(n, sizeof *ps);
    int rc = -1;
    uint8_t *buf = NULL;
    if (!ts || !ps) goto out;
    size_t k = 0;
    for (size_t i = 0; i < l->nrows; i++) {   /* one topic entry per row: simple, and valid */
        if (!asked_of(l, &l->rows[i], leader, l->node->id)) continue;
        kp_list_offsets_request_list_offsets_topic_init(&ts[k]);
        kp_list_offsets_request_list_offsets_partition_init(&ps[k]);
        ts[k].name = kp_slice_cstr(l->rows[i].topic);
        ps[k].partition_index = l->rows[i].partition;
        ps[k].timestamp = l->rows[i].timestamp;
        ts[k].partitions.items = &ps[k];
        ts[k].partitions.count = 1;
        k++;
    }
    kp_list_offsets_request_t q;
    kp_list_offsets_request_init(&q);
    q.replica_id = -1;
    q.topics.items = ts;
    q.topics.count = (int32_t)n;
    const bk_meta_endpoint_t *ep = bk_node_broker_endpoint(l->node, b, NULL); /* the inter-broker listener */
    bk_net_qc_peer_t *peer = bk_net_qc_new(l->node->base, leader, ep->host, ep->port, on_answer, l);
    if (!peer) goto out;
    l->peers[l->npeers++] = peer;
    kp_request_header_t h = { KP_API_LIST_OFFSETS, LIST_OFFSETS_VERSION, bk_net_qc_next_corr(peer),
                              kp_slice_cstr("skiff-admin") };
    size_t need = 0;
    if (kp_request_encode_alloc(&h, &q, &buf, &need) != KP_OK) goto out;
    bk_net_qc_pending_t pend;
    memset(&pend, 0, sizeof pend);
    pend.kind = BK_NET_QC_FORWARD;
    pend.corr = h.correlation_id;
    if (bk_net_qc_send(peer, buf, need, &pend, bk_net_now_ms()) != 0) goto out;
    l->pending++;
    rc = 0;
out:
    free(buf);
    free(ts);
    free(ps);
    return rc;
}

int admin_offsets_lookup(bk_node_t *n, admin_offset_row_t *rows, size_t nrows, admin_offsets_fn done, void *arg) {
    lookup_t *l = calloc(1, sizeof *l);
    if (!l || (l->timer = event_new(n->base, -1, 0, finish, l)) == NULL) {
        free(l);
        return -1;
    }
    *l = (lookup_t){ .node = n, .rows = rows, .nrows = nrows, .done_fn = done, .arg = arg, .timer = l->timer };
    for (size_t i = 0; i < nrows; i++) {
        int32_t leader = rows[i].leader;
        bool asked = !asked_of(l, &rows[i], leader, n->id);
        for (size_t k = 0; k < i && !asked; k++) asked = asked_of(l, &rows[k], leader, n->id);
        if (!asked) (void)ask_leader(l, leader);   /* not sent: those rows stay unknown */
    }
    if (l->pending == 0) {
        finish(-1, EV_TIMEOUT, l);
        return 0;
    }
    struct timeval tv = { ADMIN_OFFSETS_TIMEOUT_MS / 1000, (ADMIN_OFFSETS_TIMEOUT_MS % 1000) * 1000 };
    if (event_add(l->timer, &tv) != 0) finish(-1, EV_TIMEOUT, l);
    return 0;
}
