/* broker/net/session.c — the state loop's side of a connection whose
 * socket lives on a network loop (README "Network loops"). Handlers get
 * the session as their bk_net_conn_t: what they read (id, peer, listener,
 * principal, auth, the frame in hand) is here; what they do to the socket
 * (respond, close, mute) is posted to the owning loop as a command.
 *
 * Lifetime: a session is freed when the loop's CLOSED event arrives (the
 * socket side is gone, so no event of it can follow), never inside a
 * handler. bk_net_conn_close on a session takes it out of lookup at once
 * (closed) and posts CLOSE; frames still on their way are dropped. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <openssl/x509.h>

#include "broker/net/clock.h"
#include "broker/net/mem.h"
#include "broker/net/net_int.h"

bk_net_conn_t *bk__session_new(bk_net_t *net, net_loop_t *loop, net_listener_t *l, const struct sockaddr *sa,
                               int salen) {
    bk_net_conn_t *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->net = net;
    s->loop = loop;
    s->session = true;
    s->fd = -1;
    s->listener = l->name;
    s->lst = l;
    s->security = l->security;
    s->prepare_on = bk__sec_prepares(l->security);
    memcpy(s->principal, BK_NET_PRINCIPAL_ANONYMOUS, sizeof BK_NET_PRINCIPAL_ANONYMOUS);
    s->ring = calloc(net->cfg.inflight_max, sizeof *s->ring);
    s->close_msg = bk__msg_cmd(loop, MSG_CLOSE, 0);
    if (!s->ring || !s->close_msg) {
        free(s->ring);
        if (s->close_msg) bk__msg_free(net, s->close_msg);
        free(s);
        return NULL;
    }
    bk__conn_set_peer(s, sa, salen);
    return s;
}

static void drop_held(bk_net_conn_t *s, bool answer_none) {
    bool lost = false;
    while (s->held) {
        net_msg_t *m = s->held;
        s->held = m->next;
        if (answer_none) {
            /* the socket side gave it a slot: complete it (no bytes) so a
             * draining connection can finish */
            net_msg_t *n = bk__msg_cmd(s->loop, MSG_NONE, s->id);
            if (n) {
                n->seq = m->seq;
                bk__loop_post_batched(&s->loop->cmd, n);
            } else {
                lost = true;
            }
        }
        bk__msg_free(s->net, m);
    }
    s->held_tail = NULL;
    /* out of memory: a slot never completed would keep the draining
     * connection (and its table entry) open for good; close it instead */
    if (lost) bk__session_close(s);
}

void bk__session_free(bk_net_conn_t *s) {
    assert(s->session && !s->in_handler);
    if (s->auth_free) s->auth_free(s->auth);
    drop_held(s, false);
    if (s->mute_ev) event_free(s->mute_ev);
    if (s->close_msg) bk__msg_free(s->net, s->close_msg);
    free(s->ring);
    free(s);
}

/* The socket side is gone: give back the table entry and the count. */
static void session_release(bk_net_t *net, bk_net_conn_t *s) {
    assert(net->conns[s->index] == s);
    assert(net->free_n < net->cfg.conns_max);
    net->conns[s->index] = NULL;
    net->free_idx[net->free_n++] = s->index;
    assert(net->stats.conns_open > 0 && s->loop->assigned > 0);
    net->stats.conns_open--;
    s->loop->assigned--;
    bk__session_free(s);
    bk__net_conn_closed(net);
}

static void deliver(bk_net_conn_t *s, net_msg_t *m) {
    bk_net_t *net = s->net;
    assert(m->seq == s->seq_next);   /* frames arrive in slot order */
    s->seq_next = m->seq + 1;
    s->seq_current = m->seq;
    s->frame = s->frame_block = m->frame;
    s->frame_len = m->len;
    s->frame_taken = false;
    s->prepared = m->prepared;
    m->frame = NULL;
    m->prepared = NULL;
    s->in_handler = true;
    net->cfg.on_frame(s, s->frame_block, s->frame_len, net->cfg.ctx);
    s->in_handler = false;
    if (!s->frame_taken) bk_net_mem_free(s->frame_block);
    s->frame = s->frame_block = NULL;
    /* out of the budget when the handler returns, taken or not (Kafka
     * releases a request's buffer when its handler returns): a taken
     * block is the handler's, given back with bk_net_mem_free, like
     * the copy bk_net_conn_take_frame makes on loop 0 */
    bk__frame_release(net, &net->loops[0], s->frame_len);
    if (s->prepared) {
        net->cfg.prepared_free(s->prepared);
        s->prepared = NULL;
    }
}

/* The socket's output is (by the estimate) at output_max_bytes. */
static bool out_full(const bk_net_conn_t *s) {
    return s->out_posted - s->out_reported >= s->net->cfg.output_max_bytes;
}

/* Hand held frames out while the session may take them. */
static void deliver_held(bk_net_conn_t *s) {
    while (s->held && !s->muted && s->paused == 0 && !s->closed && !s->closing && !out_full(s)) {
        net_msg_t *m = s->held;
        s->held = m->next;
        if (!s->held) s->held_tail = NULL;
        deliver(s, m);
        bk__msg_free(s->net, m);
    }
}

void bk__session_event(bk_net_t *net, net_msg_t *m) {
    uint32_t idx = (uint32_t)m->conn_id;
    bk_net_conn_t *s = idx < net->cfg.conns_max ? net->conns[idx] : NULL;
    if (s && (s->id != m->conn_id || !s->session)) s = NULL;
    if (net->freeing) {
        if (m->type == MSG_CLOSED && s) session_release(net, s);
        bk__msg_free(net, m);
        return;
    }
    switch (m->type) {
    case MSG_PRINCIPAL: {
        struct x509_st *cert = m->cert;
        m->cert = NULL;
        if (!s || s->closed) {
            X509_free(cert);
            break;
        }
        if (!bk__tls_session_principal(s, cert)) bk__session_close(s);
        break;
    }
    case MSG_FRAME:
        if (!s || s->closed) break;
        if (s->closing) {
            net_msg_t *n = bk__msg_cmd(s->loop, MSG_NONE, s->id);
            if (n) {
                n->seq = m->seq;
                bk__loop_post_batched(&s->loop->cmd, n);
            } else {
                bk__session_close(s);
            }
            break;
        }
        if (s->muted || s->paused || s->held || out_full(s)) {
            m->next = NULL;
            if (s->held_tail) s->held_tail->next = m;
            else s->held = m;
            s->held_tail = m;
            return;
        }
        deliver(s, m);
        break;
    case MSG_WRITTEN:
        if (!s || s->closed) break;
        if (m->seq > s->out_reported) s->out_reported = m->seq;
        deliver_held(s);
        break;
    case MSG_CLOSED:
        if (s) session_release(net, s);
        break;
    default:
        assert(!"not an event");
    }
    bk__msg_free(net, m);
}

static conn_slot_t *ring_at(bk_net_conn_t *s, uint64_t seq) {
    return &s->ring[seq % s->net->cfg.inflight_max];
}

int bk__session_complete(bk_net_conn_t *s, bk_net_slot_t slot, bool none, struct evbuffer *body) {
    if (s->closed) {
        if (body) evbuffer_free(body);
        return BK_NET_ERR_GONE;
    }
    bool valid = slot.conn_id == s->id && slot.seq >= s->seq_flush && slot.seq < s->seq_next &&
                 ring_at(s, slot.seq)->state == SLOT_PENDING;
    if (!valid) {
        if (body) evbuffer_free(body);
        return BK_NET_ERR_INVALID;
    }
    if (body && evbuffer_get_length(body) > INT32_MAX) {
        evbuffer_free(body);
        fprintf(stderr, "skiff: net: closing connection %s: response above 2 GiB\n", s->peer);
        bk__session_close(s);
        return BK_NET_ERR_INVALID;
    }
    net_msg_t *m = bk__msg_cmd(s->loop, none ? MSG_NONE : MSG_RESPOND, s->id);
    if (!m) {
        if (body) evbuffer_free(body);
        bk__session_close(s);   /* an unanswered slot would hang the client */
        return BK_NET_ERR_SYS;
    }
    ring_at(s, slot.seq)->state = SLOT_READY;
    while (s->seq_flush < s->seq_next && ring_at(s, s->seq_flush)->state == SLOT_READY) {
        ring_at(s, s->seq_flush)->state = SLOT_PENDING;
        s->seq_flush++;
    }
    m->seq = slot.seq;
    m->body = body;
    if (body) s->out_posted += 4 + evbuffer_get_length(body);
    bk__loop_post_batched(&s->loop->cmd, m);
    return BK_NET_OK;
}

void bk__session_close(bk_net_conn_t *s) {
    if (s->closed) return;
    s->closed = true;
    drop_held(s, false);
    if (s->mute_ev) event_del(s->mute_ev);
    net_msg_t *m = s->close_msg;
    s->close_msg = NULL;
    m->conn_id = s->id;
    bk__loop_post_batched(&s->loop->cmd, m);
}

void bk__session_close_after_flush(bk_net_conn_t *s) {
    if (s->closed || s->closing) return;
    net_msg_t *m = bk__msg_cmd(s->loop, MSG_CLOSING, s->id);
    if (!m) {
        bk__session_close(s);
        return;
    }
    s->closing = true;
    drop_held(s, true);
    if (s->closed) {                /* drop_held closed it (out of memory) */
        bk__msg_free(s->net, m);
        return;
    }
    bk__loop_post_batched(&s->loop->cmd, m);
}

void bk__session_pause(bk_net_conn_t *s) {
    s->paused++;   /* frames that arrive meanwhile wait in `held` */
}

void bk__session_resume(bk_net_conn_t *s) {
    assert(s->paused > 0);
    if (--s->paused == 0 && !s->closed && !s->in_handler) deliver_held(s);
}

static void session_mute_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    bk_net_conn_t *s = arg;
    s->muted = false;
    deliver_held(s);
}

int bk__session_mute_until(bk_net_conn_t *s, int64_t until_mono_ms) {
    if (s->closed) return BK_NET_ERR_GONE;
    int64_t now = (int64_t)(bk_net_mono_ns() / 1000000u);
    if (until_mono_ms <= now) return BK_NET_OK;
    if (s->muted && until_mono_ms <= s->mute_until_ms) return BK_NET_OK;   /* a longer mute stands */
    if (!s->mute_ev) {
        s->mute_ev = evtimer_new(s->net->base, session_mute_cb, s);
        if (!s->mute_ev) return BK_NET_ERR_SYS;
    }
    net_msg_t *m = bk__msg_cmd(s->loop, MSG_MUTE, s->id);
    if (!m) return BK_NET_ERR_SYS;
    int64_t ms = until_mono_ms - now;
    struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000) };
    if (evtimer_add(s->mute_ev, &tv) != 0) {
        bk__msg_free(s->net, m);
        return BK_NET_ERR_SYS;
    }
    s->muted = true;
    s->mute_until_ms = until_mono_ms;
    /* the socket side stops reading; frames already on their way wait in
     * `held` until the timer above ends the mute here */
    m->until_ms = until_mono_ms;
    bk__loop_post_batched(&s->loop->cmd, m);
    return BK_NET_OK;
}

uint8_t *bk__session_take_frame(bk_net_conn_t *s) {
    assert(s->in_handler);
    assert(s->frame != NULL);
    assert(!s->frame_taken);
    s->frame_taken = true;   /* the block the network loop copied: no second copy */
    return s->frame_block;
}
