/* broker/cluster/forward.c — forwarding metadata changes to the active controller
 * (see forward.h). */
#include "broker/cluster/forward.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kp_msgs.h"
#include "protocol/kp_header.h"
#include "broker/core/node.h"
#include "broker/quorum/quorum.h"
#include "broker/net/quorum_client.h"

typedef struct fwd {
    bk_node_t *n;
    bool has_slot;               /* answer a client slot ... */
    bk_net_slot_t slot;
    bk_cluster_topics_done_fn done;      /* ... or call back (auto-creation) */
    bk_cluster_forward_resp_fn resp_done; /* ... or hand over the answer (admin port) */
    void *arg;
    uint8_t *resp;               /* the controller's answer (after the size) */
    size_t resp_len;
    int status;
    uint64_t fetch_mark;         /* bk_quorum_fetch_prompt when the answer came */
    int64_t deadline_ms;
    struct fwd *next;
} fwd_t;

typedef struct fwd_state {
    bk_net_qc_peer_t *peer;          /* to the controller's Kafka listener */
    int32_t peer_for;            /* controller id it connects to */
    fwd_t *waiting;              /* answered, waiting for the local catch-up */
    struct event *timer;
    size_t inflight;
} fwd_state_t;

static fwd_state_t *state(bk_node_t *n) { return n->fwd; }

static void finish(fwd_t *f) {
    bk_node_t *n = f->n;
    if (f->has_slot) {
        struct evbuffer *b = evbuffer_new();
        if (b && f->resp && evbuffer_add(b, f->resp, f->resp_len) == 0) {
            (void)bk_net_respond(n->net, f->slot, b);
        } else {
            if (b) evbuffer_free(b);
            bk_net_conn_t *c = bk_net_conn(n->net, f->slot.conn_id);
            if (c) bk_net_conn_close(c);   /* no answer to give: the client retries */
        }
    } else if (f->resp_done) {
        f->resp_done(f->arg, f->status, f->status == KP_OK ? f->resp : NULL, f->status == KP_OK ? f->resp_len : 0);
    } else {
        f->done(f->arg, f->status);
    }
    free(f->resp);
    free(f);
}

/* Completes forwards whose change this node has applied (or that waited
 * long enough). */
static void on_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    bk_node_t *n = arg;
    fwd_state_t *s = state(n);
    if (!s || !n->quorum) return;
    int64_t now = bk_net_now_ms();
    uint64_t seen = bk_quorum_fetch_answered(n->quorum);
    fwd_t **pp = &s->waiting;
    while (*pp) {
        fwd_t *f = *pp;
        if (seen >= f->fetch_mark || now >= f->deadline_ms || bk_quorum_is_leader(n->quorum)) {
            *pp = f->next;
            finish(f);
        } else {
            pp = &f->next;
        }
    }
}

static void on_response(void *ctx, int32_t peer_id, const bk_net_qc_pending_t *p, const uint8_t *frame, size_t len) {
    (void)peer_id;
    bk_node_t *n = ctx;
    fwd_t *f = p->arg;
    fwd_state_t *s = state(n);
    if (s && s->inflight) s->inflight--;
    if (!frame) {
        f->status = BK_QUORUM_NOT_LEADER;
        finish(f);
        return;
    }
    f->resp = malloc(len ? len : 1);
    if (!f->resp) { f->status = KP_ERR_NOMEM; finish(f); return; }
    memcpy(f->resp, frame, len);
    f->resp_len = len;
    f->status = KP_OK;
    if (!s || !n->quorum) { finish(f); return; }
    f->fetch_mark = bk_quorum_fetch_prompt(n->quorum);
    f->deadline_ms = bk_net_now_ms() + BK_CLUSTER_FORWARD_CATCHUP_MS;
    f->next = s->waiting;
    s->waiting = f;
}

static fwd_state_t *ensure(bk_node_t *n) {
    if (n->fwd) return n->fwd;
    fwd_state_t *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->peer_for = -1;
    s->timer = event_new(n->base, -1, EV_PERSIST, on_timer, n);
    struct timeval tv = { 0, 20 * 1000 };
    if (!s->timer || event_add(s->timer, &tv) != 0) {
        if (s->timer) event_free(s->timer);
        free(s);
        return NULL;
    }
    n->fwd = s;
    return s;
}

/* The peer for the current controller's Kafka listener, or NULL. */
static bk_net_qc_peer_t *controller_peer(bk_node_t *n, fwd_state_t *s) {
    int32_t c = bk_quorum_leader(n->quorum);
    if (c < 0 || c == n->id) return NULL;
    if (s->peer && s->peer_for == c) return s->peer;
    const bk_meta_broker_t *b = bk_meta_image_broker(&n->img, c);
    if (!b || b->nendpoints == 0) return NULL;
    bk_net_qc_free(s->peer);   /* requests still out on the old one fail: clients retry */
    const bk_meta_endpoint_t *ep = bk_node_broker_endpoint(n, b, NULL); /* the inter-broker listener */
    s->peer = bk_net_qc_new(n->base, c, ep->host, ep->port, on_response, n);
    s->peer_for = s->peer ? c : -1;
    return s->peer;
}

static bool forward_bytes(bk_node_t *n, const uint8_t *frame, size_t len, fwd_t *f) {
    fwd_state_t *s = ensure(n);
    if (!s || s->inflight >= BK_CLUSTER_FORWARD_INFLIGHT_MAX) return false;
    bk_net_qc_peer_t *p = controller_peer(n, s);
    if (!p) return false;
    uint8_t *buf = malloc(len + 4);
    if (!buf) return false;
    buf[0] = (uint8_t)(len >> 24); buf[1] = (uint8_t)(len >> 16); buf[2] = (uint8_t)(len >> 8); buf[3] = (uint8_t)len;
    memcpy(buf + 4, frame, len);
    bk_net_qc_pending_t pend;
    memset(&pend, 0, sizeof pend);
    pend.kind = BK_NET_QC_FORWARD;
    pend.arg = f;
    int rc = bk_net_qc_send(p, buf, len + 4, &pend, bk_net_now_ms());
    free(buf);
    if (rc != 0) return false;
    s->inflight++;
    return true;
}

bool bk_cluster_forward_frame(bk_node_t *n, bk_net_conn_t *conn, const uint8_t *frame, size_t len) {
    if (len < 2 || !bk_cluster_forwarded_api(bk_cluster_frame_api(frame))) return false;
    if (!n->quorum || bk_quorum_is_leader(n->quorum)) return false;
    fwd_t *f = calloc(1, sizeof *f);
    if (!f) return false;
    f->n = n;
    f->has_slot = true;
    f->slot = bk_net_conn_slot(conn);
    if (!forward_bytes(n, frame, len, f)) { free(f); return false; }
    return true;
}

bool bk_cluster_forward_create_topics(bk_node_t *n, const kp_create_topics_request_creatable_topic_t *t, size_t cnt,
                              bk_cluster_topics_done_fn done, void *arg) {
    if (!n->quorum || bk_quorum_is_leader(n->quorum) || cnt == 0 || cnt > 1000) return false;
    kp_create_topics_request_t b;
    kp_create_topics_request_init(&b);
    b.topics.items = (kp_create_topics_request_creatable_topic_t *)t;
    b.topics.count = (int32_t)cnt;
    b.timeout_ms = 5000;
    kp_request_header_t h = { KP_API_CREATE_TOPICS, 4, 0, kp_slice_cstr("skiff-autocreate") };
    uint8_t *buf = NULL;
    size_t need = 0;
    bool ok = kp_request_encode_alloc(&h, &b, &buf, &need) == KP_OK;
    fwd_t *f = ok ? calloc(1, sizeof *f) : NULL;
    if (f) {
        f->n = n;
        f->done = done;
        f->arg = arg;
    }
    /* the encoded frame carries its size prefix; forward_bytes adds one */
    bool sent = f && forward_bytes(n, buf + 4, need - 4, f);
    if (f && !sent) free(f);
    free(buf);
    return sent;
}

bool bk_cluster_forward_request(bk_node_t *n, const uint8_t *frame, size_t len, bk_cluster_forward_resp_fn done,
                                void *arg) {
    if (!n->quorum || bk_quorum_is_leader(n->quorum) || len < 2 ||
        !bk_cluster_forwarded_api(bk_cluster_frame_api(frame)))
        return false;
    fwd_t *f = calloc(1, sizeof *f);
    if (!f) return false;
    f->n = n;
    f->resp_done = done;
    f->arg = arg;
    if (!forward_bytes(n, frame, len, f)) { free(f); return false; }
    return true;
}

bool bk_cluster_forward_auto_create(bk_node_t *n, const char *const *names, size_t cnt, bk_cluster_topics_done_fn done,
                            void *arg) {
    if (cnt == 0 || cnt > 1000) return false;
    kp_create_topics_request_creatable_topic_t *t = calloc(cnt, sizeof *t);
    if (!t) return false;
    for (size_t i = 0; i < cnt; i++) {
        kp_create_topics_request_creatable_topic_init(&t[i]);
        t[i].name = kp_slice_cstr(names[i]);
        t[i].num_partitions = -1;       /* the controller's num.partitions */
        t[i].replication_factor = -1;   /* and default.replication.factor */
    }
    bool sent = bk_cluster_forward_create_topics(n, t, cnt, done, arg);
    free(t);
    return sent;
}

void bk_cluster_forward_stop(bk_node_t *n) {
    fwd_state_t *s = state(n);
    if (!s) return;
    n->fwd = NULL;
    bk_net_qc_free(s->peer);   /* reports in-flight forwards lost: they finish */
    while (s->waiting) {
        fwd_t *f = s->waiting;
        s->waiting = f->next;
        finish(f);
    }
    if (s->timer) event_free(s->timer);
    free(s);
}
