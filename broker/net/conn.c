/* broker/net/conn.c — one Kafka connection: frame reading, the response-slot ring
 * that keeps answers in request order, backpressure and closing.
 *
 * Lifetime: a connection is freed only from its own deferred `resume` event or
 * at the end of pump(), never inside a call that a caller could still be
 * holding the pointer across. bk_conn_close() marks it closed and schedules
 * the free, so a bk_conn_t * stays valid until control returns to the loop. */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>

#include "broker/net/net_int.h"

static void pump(bk_conn_t *c);

static uint64_t inflight(const bk_conn_t *c) {
    assert(c->seq_flush <= c->seq_next);
    return c->seq_next - c->seq_flush;
}

static size_t output_len(const bk_conn_t *c) {
    return evbuffer_get_length(bufferevent_get_output(c->bev));
}

static conn_slot_t *ring_at(bk_conn_t *c, uint64_t seq) {
    return &c->ring[seq % c->net->cfg.inflight_max];
}

/* Run pump (or the deferred free) later from the loop, never re-entrantly. */
static void schedule_resume(bk_conn_t *c) {
    event_active(c->resume_ev, EV_TIMEOUT, 1);
}

static void drop_slots(bk_conn_t *c) {
    for (uint64_t s = c->seq_flush; s < c->seq_next; s++) {
        conn_slot_t *slot = ring_at(c, s);
        if (slot->body) evbuffer_free(slot->body);
        slot->body = NULL;
        slot->state = SLOT_PENDING;
    }
    c->net->stats.requests_inflight -= inflight(c);
    c->seq_flush = c->seq_next;
}

void bk_conn_close(bk_conn_t *c) {
    if (c->closed) return;
    c->closed = true;
    /* Close the socket now so the peer sees it at once, even if the loop
     * stops before the deferred free. Inside pump() the handler may still be
     * reading its frame from the input buffer: there the socket closes when
     * pump() returns. */
    /* libevent defers the close(2) of a freed bufferevent to the next loop
     * pass; shutdown(2) makes the FIN leave now. */
    evutil_socket_t fd = bufferevent_getfd(c->bev);
    if (fd >= 0) (void)shutdown(fd, SHUT_RDWR);
    if (c->in_pump) {
        bufferevent_disable(c->bev, EV_READ | EV_WRITE);
    } else {
        bufferevent_free(c->bev);
        c->bev = NULL;
    }
    drop_slots(c);
    assert(c->net->stats.conns_open > 0);
    c->net->stats.conns_open--;
    bk__net_conn_closed(c->net);
    if (!c->in_pump) schedule_resume(c);
}

/* Close a draining connection once nothing of it is left to send. */
static void maybe_finish_close(bk_conn_t *c) {
    if (c->closed || !c->closing) return;
    if (inflight(c) == 0 && output_len(c) == 0) bk_conn_close(c);
}

/* Move completed slots, oldest first, to the socket's output. Stops at the
 * first slot still pending: that is what keeps responses in request order. */
static void flush_slots(bk_conn_t *c) {
    while (c->seq_flush < c->seq_next) {
        conn_slot_t *slot = ring_at(c, c->seq_flush);
        if (slot->state == SLOT_PENDING) break;
        if (slot->state == SLOT_READY) {
            size_t len = evbuffer_get_length(slot->body);
            assert(len <= INT32_MAX);
            uint8_t prefix[4] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16),
                                  (uint8_t)(len >> 8), (uint8_t)len };
            /* add_buffer moves the chains (file segments included): no copy */
            if (bufferevent_write(c->bev, prefix, sizeof prefix) != 0 ||
                bufferevent_write_buffer(c->bev, slot->body) != 0) {
                evbuffer_free(slot->body);
                slot->body = NULL;
                slot->state = SLOT_PENDING;
                bk_conn_close(c);
                return;
            }
            c->net->stats.bytes_out += sizeof prefix + len;
            evbuffer_free(slot->body);
        }
        slot->body = NULL;
        slot->state = SLOT_PENDING;
        c->seq_flush++;
        c->net->stats.requests_inflight--;
    }
}

/* Pause reading while the in-flight or output bound is reached (Kafka mutes
 * a channel the same way); resume when both are below their bounds. */
static void update_read(bk_conn_t *c) {
    if (c->closed) return;
    /* A draining connection keeps reading only to discard: unread bytes in
     * the kernel would turn our final close into a RST, and a RST can make
     * the peer lose the responses we just flushed. */
    bool can_read = c->closing || (inflight(c) < c->net->cfg.inflight_max &&
                                   output_len(c) < c->net->cfg.output_max_bytes);
    if (can_read) bufferevent_enable(c->bev, EV_READ);
    else bufferevent_disable(c->bev, EV_READ);
}

static void close_bad_frame(bk_conn_t *c, int32_t size) {
    fprintf(stderr, "skiff: net: closing connection %s: frame size %d is negative or above "
            "socket.request.max.bytes %d\n", c->peer, size, c->net->cfg.request_max_bytes);
    c->net->stats.conns_bad_frame++;
    bk_conn_close(c);
}

/* Hand one complete frame to the handler. Returns false when no complete
 * frame is buffered or the connection closed. */
static bool handle_one(bk_conn_t *c) {
    struct evbuffer *in = bufferevent_get_input(c->bev);
    uint8_t hdr[4];
    if (evbuffer_copyout(in, hdr, sizeof hdr) < (ev_ssize_t)sizeof hdr) return false;
    int32_t size = (int32_t)((uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
                             (uint32_t)hdr[2] << 8 | hdr[3]);
    if (size < 0 || size > c->net->cfg.request_max_bytes) {
        close_bad_frame(c, size);
        return false;
    }
    if (evbuffer_get_length(in) < sizeof hdr + (size_t)size) return false;
    evbuffer_drain(in, sizeof hdr);
    /* Codecs need the frame contiguous (kp_rd_t); handlers that keep a
     * request need it owned (bk_conn_take_frame). At most one user-space
     * copy of its bytes serves both: a frame that lies in one input chain
     * (most small requests) is handed out in place, no copy; one spread over
     * chains (large Produce requests: a socket read fills at most a chain or
     * two) is copied out once into a heap block that a taking handler gets
     * as it is. evbuffer_pullup would copy the latter into a new chain, and
     * the handler would then copy it again. */
    static const uint8_t empty[1];
    const uint8_t *frame = empty;
    uint8_t *heap = NULL;
    if (size > 0 && evbuffer_get_contiguous_space(in) >= (size_t)size) {
        frame = evbuffer_pullup(in, size);          /* already contiguous: no copy */
    } else if (size > 0) {
        heap = malloc((size_t)size);
        if (heap && evbuffer_remove(in, heap, (size_t)size) != size) {
            free(heap);
            heap = NULL;
        }
        frame = heap;
        if (heap) c->net->stats.frame_copy_bytes += (size_t)size;
    }
    if (!frame) {
        bk_conn_close(c);
        return false;
    }
    conn_slot_t *slot = ring_at(c, c->seq_next);
    assert(slot->state == SLOT_PENDING && slot->body == NULL);
    c->seq_current = c->seq_next++;
    c->net->stats.requests_inflight++;
    c->net->stats.requests_total++;
    c->net->stats.bytes_in += sizeof hdr + (size_t)size;
    c->frame = frame;
    c->frame_len = (size_t)size;
    c->frame_heap = heap;
    c->frame_taken = false;
    c->in_handler = true;
    c->net->cfg.on_frame(c, frame, (size_t)size, c->net->cfg.ctx);
    c->in_handler = false;
    free(c->frame_heap);                            /* NULL when taken */
    c->frame_heap = NULL;
    c->frame = NULL;
    if (c->closed) return false;
    if (!heap) evbuffer_drain(in, (size_t)size);    /* a gathered frame was removed */
    return true;
}

uint8_t *bk_conn_take_frame(bk_conn_t *c) {
    assert(c->in_handler);
    assert(c->frame != NULL);
    assert(!c->frame_taken);        /* one owner per frame */
    c->frame_taken = true;
    if (c->frame_heap) {            /* gathered by handle_one: hand it over */
        uint8_t *own = c->frame_heap;
        c->frame_heap = NULL;
        return own;
    }
    /* in place in the input buffer, which is drained after the handler: the
     * one copy of this frame */
    uint8_t *own = malloc(c->frame_len ? c->frame_len : 1);
    if (!own) return NULL;
    memcpy(own, c->frame, c->frame_len);
    c->net->stats.frame_copy_bytes += c->frame_len;
    return own;
}

/* Hand buffered frames to the handler while the bounds allow. Each pass is
 * bounded by the in-flight bound plus the frames whose handlers answered at
 * once, i.e. by the input buffer (<= request_max_bytes + 4 by watermark). */
static void pump(bk_conn_t *c) {
    assert(!c->in_pump);
    c->in_pump = true;
    flush_slots(c);
    if (c->closing && !c->closed) {
        struct evbuffer *in = bufferevent_get_input(c->bev);
        evbuffer_drain(in, evbuffer_get_length(in));
    }
    while (!c->closed && !c->closing && inflight(c) < c->net->cfg.inflight_max &&
           output_len(c) < c->net->cfg.output_max_bytes) {
        if (!handle_one(c)) break;
        flush_slots(c);
    }
    c->in_pump = false;
    if (c->closed) {
        bk__net_conn_free(c->net, c);
        return;
    }
    update_read(c);
    maybe_finish_close(c);
}

static void resume_cb(evutil_socket_t fd, short what, void *arg) {
    bk_conn_t *c = arg;
    if (c->closed) bk__net_conn_free(c->net, c);
    else pump(c);
}

static void read_cb(struct bufferevent *bev, void *arg) {
    pump(arg);
}

static void write_cb(struct bufferevent *bev, void *arg) {
    pump(arg);
}

static void event_cb(struct bufferevent *bev, short what, void *arg) {
    bk_conn_t *c = arg;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) bk_conn_close(c);
}

bk_conn_t *bk__conn_new(bk_net_t *net, evutil_socket_t fd, const struct sockaddr *sa, int salen) {
    bk_conn_t *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->net = net;
    c->ring = calloc(net->cfg.inflight_max, sizeof *c->ring);
    c->bev = bufferevent_socket_new(net->base, fd, BEV_OPT_CLOSE_ON_FREE);
    c->resume_ev = event_new(net->base, -1, 0, resume_cb, c);
    if (!c->ring || !c->bev || !c->resume_ev) goto fail;
    char host[48] = "?";
    uint16_t port = 0;
    if (sa->sa_family == AF_INET && salen >= (int)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in4 = (const void *)sa;
        evutil_inet_ntop(AF_INET, &in4->sin_addr, host, sizeof host);
        port = ntohs(in4->sin_port);
    } else if (sa->sa_family == AF_INET6 && salen >= (int)sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const void *)sa;
        evutil_inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
    }
    snprintf(c->peer, sizeof c->peer, "%s:%u", host, (unsigned)port);
    bufferevent_setcb(c->bev, read_cb, write_cb, event_cb, c);
    /* Input never holds more than one maximal frame: the request bound. */
    bufferevent_setwatermark(c->bev, EV_READ, 0, (size_t)net->cfg.request_max_bytes + 4);
    bufferevent_setwatermark(c->bev, EV_WRITE, net->cfg.output_max_bytes / 2, 0);
    if (bufferevent_enable(c->bev, EV_READ) != 0) goto fail;
    return c;
fail:
    if (c->bev) bufferevent_free(c->bev);
    else evutil_closesocket(fd);
    if (c->resume_ev) event_free(c->resume_ev);
    free(c->ring);
    free(c);
    return NULL;
}

void bk__conn_free(bk_conn_t *c) {
    assert(c->closed);
    assert(!c->in_pump);
    event_free(c->resume_ev); /* also cancels a pending activation */
    if (c->bev) bufferevent_free(c->bev);
    free(c->ring);
    free(c);
}

uint64_t bk_conn_id(const bk_conn_t *c) { return c->id; }

const char *bk_conn_peer(const bk_conn_t *c) { return c->peer; }

bk_slot_t bk_conn_slot(const bk_conn_t *c) {
    assert(c->in_handler);
    return (bk_slot_t){ .conn_id = c->id, .seq = c->seq_current };
}

/* Common checks for completing a slot; consumes `body` on failure. */
static int complete(bk_conn_t *c, bk_slot_t slot, slot_state_t state, struct evbuffer *body) {
    if (c->closed) {
        if (body) evbuffer_free(body);
        return BK_ERR_GONE;
    }
    bool valid = slot.conn_id == c->id && slot.seq >= c->seq_flush && slot.seq < c->seq_next &&
                 ring_at(c, slot.seq)->state == SLOT_PENDING;
    if (!valid) {
        if (body) evbuffer_free(body);
        return BK_ERR_INVALID;
    }
    if (body && evbuffer_get_length(body) > INT32_MAX) {
        /* Unanswerable: the client would wait forever, so cut it off. */
        evbuffer_free(body);
        fprintf(stderr, "skiff: net: closing connection %s: response above 2 GiB\n", c->peer);
        bk_conn_close(c);
        return BK_ERR_INVALID;
    }
    conn_slot_t *s = ring_at(c, slot.seq);
    s->state = state;
    s->body = body;
    if (!c->in_pump) schedule_resume(c); /* flush + resume reading from the loop */
    return BK_OK;
}

int bk_conn_respond(bk_conn_t *c, bk_slot_t slot, struct evbuffer *body) {
    assert(body);
    return complete(c, slot, SLOT_READY, body);
}

int bk_conn_respond_bytes(bk_conn_t *c, bk_slot_t slot, const void *bytes, size_t len) {
    struct evbuffer *body = evbuffer_new();
    if (!body) return BK_ERR_SYS;
    if (evbuffer_add(body, bytes, len) != 0) {
        evbuffer_free(body);
        return BK_ERR_SYS;
    }
    return complete(c, slot, SLOT_READY, body);
}

int bk_conn_respond_none(bk_conn_t *c, bk_slot_t slot) {
    return complete(c, slot, SLOT_NONE, NULL);
}

void bk_conn_close_after_flush(bk_conn_t *c) {
    if (c->closed || c->closing) return;
    c->closing = true;
    /* whatever the peer sends from now on is read and discarded by pump() */
    bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0); /* write_cb when empty */
    if (!c->in_pump) schedule_resume(c);
}

bool bk__conn_is_open(const bk_conn_t *c) { return !c->closed; }
