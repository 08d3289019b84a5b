/* broker/admin/admin_lag.c — the "offsets" part of GET /v1/groups/{id}: committed
 * offset, the partition's end and the lag, per committed partition.
 *
 * The end is the partition leader's high watermark (what a consumer can
 * read; what ListOffsets latest answers and Kafka's consumer-groups tool
 * shows as LOG-END-OFFSET). The coordinator seldom leads every partition a
 * group consumes, so for partitions led elsewhere this node sends one
 * ListOffsets (latest, read_uncommitted) per leader over a connection of
 * its own and replies once all have answered, or after LAG_TIMEOUT_MS with
 * null ends for those that did not (a down leader must not hang the
 * endpoint). Cost: one round trip per leader, in parallel; nothing cached,
 * so the lag is never older than the request. */
#include "broker/admin/admin_ops.h"

#include <assert.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "broker/group/group_driver.h"
#include "broker/net/quorum_client.h"
#include "protocol/kp_header.h"

/* Committed partitions reported per group; beyond it "offsets_truncated". */
#define GROUP_OFFSETS_MAX 4096
/* How long the reply waits for the leaders' ListOffsets answers. */
#define LAG_TIMEOUT_MS 2000
/* Leaders asked per request (one connection each). */
#define LAG_PEERS_MAX 64
#define LIST_OFFSETS_VERSION 2
#define LATEST_TIMESTAMP (-1)

typedef struct {
    char *topic;                /* owned */
    int32_t partition;
    int64_t committed;
    int64_t end;                /* -1 unknown */
    int32_t leader;             /* -1: none; asked when != this node */
} lag_row_t;

typedef struct {
    bk_node_t *node;
    bk_http_req_t *req;
    lag_row_t *rows;
    size_t nrows, total;
    bk_net_qc_peer_t *peers[LAG_PEERS_MAX];
    int32_t corr[LAG_PEERS_MAX];
    size_t npeers, pending;
    struct event *timer;
    bool done;
} lookup_t;

static void write_offsets(bk_http_json_t *j, const lookup_t *l) {
    int64_t sum = 0;
    bk_http_json_key(j, "offsets");
    bk_http_json_arr_begin(j);
    for (size_t i = 0; i < l->nrows; i++) {
        const lag_row_t *r = &l->rows[i];
        bk_http_json_obj_begin(j);
        bk_http_json_kv_str(j, "topic", r->topic);
        bk_http_json_kv_i64(j, "partition", r->partition);
        bk_http_json_kv_i64(j, "committed_offset", r->committed);
        if (r->end >= 0) bk_http_json_kv_i64(j, "log_end_offset", r->end);
        else bk_http_json_kv_null(j, "log_end_offset");
        if (r->end >= 0 && r->committed >= 0) {
            int64_t lag = r->end > r->committed ? r->end - r->committed : 0;
            bk_http_json_kv_i64(j, "lag", lag);
            sum += lag;
        } else {
            bk_http_json_kv_null(j, "lag");
        }
        bk_http_json_obj_end(j);
    }
    bk_http_json_arr_end(j);
    bk_http_json_kv_i64(j, "total_lag", sum);
    bk_http_json_kv_bool(j, "offsets_truncated", l->total > l->nrows);
}

static void lookup_free(lookup_t *l) {
    for (size_t i = 0; i < l->npeers; i++) bk_net_qc_free(l->peers[i]);   /* reports the rest lost: ignored */
    if (l->timer) event_free(l->timer);
    for (size_t i = 0; i < l->nrows; i++) free(l->rows[i].topic);
    free(l->rows);
    free(l);
}

/* Timer (timeout, or activated when the last answer came): reply and free.
 * Never runs inside a peer's read callback, so freeing the peers is safe. */
static void finish(evutil_socket_t fd, short what, void *arg) {
    (void)fd; (void)what;
    lookup_t *l = arg;
    l->done = true;
    /* bk_http_stop (node shutdown) already freed the request: drop it. */
    if (l->node->admin) {
        bk_http_json_t *j = bk_http_admin_json(l->req);
        write_offsets(j, l);
        bk_http_json_obj_end(j);
        bk_http_reply_json(l->req, 200);
    }
    lookup_free(l);
}

static void take_answer(lookup_t *l, const kp_list_offsets_response_t *rsp) {
    for (int32_t t = 0; t < rsp->topics.count; t++) {
        const kp_list_offsets_response_list_offsets_topic_response_t *tr = &rsp->topics.items[t];
        for (int32_t k = 0; k < tr->partitions.count; k++) {
            const kp_list_offsets_response_list_offsets_partition_response_t *pr = &tr->partitions.items[k];
            if (pr->error_code != 0 || pr->offset < 0) continue;
            for (size_t i = 0; i < l->nrows; i++) {
                lag_row_t *r = &l->rows[i];
                if (r->partition == pr->partition_index && strlen(r->topic) == tr->name.len &&
                    memcmp(r->topic, tr->name.p, tr->name.len) == 0)
                    r->end = pr->offset;
            }
        }
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
            take_answer(l, body);
        kp_arena_free(&a);
    }
    assert(l->pending > 0);
    if (--l->pending == 0) event_active(l->timer, EV_TIMEOUT, 0);
}

/* One ListOffsets for every row led by `leader`; 0 when sent. */
static int ask_leader(lookup_t *l, int32_t leader) {
    const bk_meta_broker_t *b = bk_meta_image_broker(&l->node->img, leader);
    if (!b || b->nendpoints == 0 || l->npeers == LAG_PEERS_MAX) return -1;
    size_t n = 0;
    for (size_t i = 0; i < l->nrows; i++) n += l->rows[i].leader == leader;
    kp_list_offsets_request_list_offsets_topic_t *ts = calloc(n, sizeof *ts);
    kp_list_offsets_request_list_offsets_partition_t *ps = calloc(n, sizeof *ps);
    int rc = -1;
    uint8_t *buf = NULL;
    if (!ts || !ps) goto out;
    size_t k = 0;
    for (size_t i = 0; i < l->nrows; i++) {   /* one topic entry per row: simple, and valid */
        if (l->rows[i].leader != leader) continue;
        kp_list_offsets_request_list_offsets_topic_init(&ts[k]);
        kp_list_offsets_request_list_offsets_partition_init(&ps[k]);
        ts[k].name = kp_slice_cstr(l->rows[i].topic);
        ps[k].partition_index = l->rows[i].partition;
        ps[k].timestamp = LATEST_TIMESTAMP;
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
                              kp_slice_cstr("skiff-admin-lag") };
    kp_wr_t w;
    kp_wr_init_count(&w);
    if (kp_request_encode(&w, &h, &q) != KP_OK || (buf = malloc(w.pos)) == NULL) goto out;
    size_t need = w.pos;
    kp_wr_init(&w, buf, need);
    if (kp_request_encode(&w, &h, &q) != KP_OK) goto out;
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

/* Rows from the coordinator's committed offsets; ends known here filled. */
static int fill_rows(lookup_t *l, bk_node_t *n, kp_str_t group) {
    static bk_grp_lag_t lags[GROUP_OFFSETS_MAX];   /* loop thread only */
    int16_t err = 0;
    l->total = bk_grp_gd_lags(n->groups, group, lags, GROUP_OFFSETS_MAX, &err);
    l->nrows = l->total < GROUP_OFFSETS_MAX ? l->total : GROUP_OFFSETS_MAX;
    l->rows = calloc(l->nrows ? l->nrows : 1, sizeof *l->rows);
    if (!l->rows) return -1;
    for (size_t i = 0; i < l->nrows; i++) {
        const bk_grp_offset_t *o = lags[i].committed;
        lag_row_t *r = &l->rows[i];
        r->topic = strndup(o->topic.p, o->topic.len);
        if (!r->topic) return -1;
        r->partition = o->partition;
        r->committed = o->offset;
        r->end = lags[i].log_end_offset;
        const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&n->img, r->topic);
        r->leader = t && o->partition >= 0 && o->partition < t->nparts ? t->parts[o->partition].leader : -1;
    }
    return 0;
}

void bk_admin_group_offsets(bk_http_req_t *req, bk_node_t *n, kp_str_t group) {
    lookup_t *l = calloc(1, sizeof *l);
    if (!l || fill_rows(l, n, group) != 0 ||
        (l->timer = event_new(n->base, -1, 0, finish, l)) == NULL) {
        if (l) lookup_free(l);
        bk_http_reply_error(req, 500, "out of memory");
        return;
    }
    l->node = n;
    l->req = req;
    for (size_t i = 0; i < l->nrows; i++) {
        int32_t leader = l->rows[i].leader;
        bool asked = leader < 0 || leader == n->id || l->rows[i].end >= 0;
        for (size_t k = 0; k < i && !asked; k++) asked = l->rows[k].leader == leader;
        if (!asked) (void)ask_leader(l, leader);   /* not sent: those ends stay null */
    }
    if (l->pending == 0) {
        finish(-1, EV_TIMEOUT, l);
        return;
    }
    struct timeval tv = { LAG_TIMEOUT_MS / 1000, (LAG_TIMEOUT_MS % 1000) * 1000 };
    if (event_add(l->timer, &tv) != 0) finish(-1, EV_TIMEOUT, l);
}
