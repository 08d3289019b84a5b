/* broker/net/conn.c — one Kafka connection: frame reading, the response-slot ring
 * that keeps answers in request order, backpressure and closing.
 *
 * Lifetime: a connection is freed only from its own deferred `resume` event or
 * at the end of pump(), never inside a call that a caller could still be
 * holding the pointer across. bk_net_conn_close() marks it closed and schedules
 * the free, so a bk_net_conn_t * stays valid until control returns to the loop.
 *
 * The socket is driven directly, not through a bufferevent:
 * - Input: libevent 2.1 reads at most 4096 bytes per read event, so a 16 KB
 *   produce request cost ~4 loop passes (epoll_wait + FIONREAD ioctl + readv
 *   each) plus an evbuffer_pullup copy to make it contiguous. Here one
 *   recv(2) takes what the socket holds into a flat buffer that is made
 *   large enough for the whole current frame, so a frame is handed to the
 *   handler where it was read. Bound: the buffer holds max(chunk, one frame
 *   + 4) bytes, and the chunk is at most request_max_bytes + 4; a frame's
 *   room grows with its bytes, not its size prefix (README "Bounds").
 * - Output: a bufferevent writes only from an EV_WRITE callback, i.e. every
 *   batch of responses cost an epoll_ctl to add the event, one more loop
 *   pass, the writev, and an epoll_ctl to remove it. Here pump() writes what
 *   its pass produced at once; only what the socket does not take waits for
 *   write_ev. */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <event2/buffer.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>

#include "broker/net/clock.h"
#include "broker/net/mem.h"
#include "broker/net/net_int.h"
#include "broker/net/tls.h"

static void pump(bk_net_conn_t *c);
static void report_written(bk_net_conn_t *c);

static uint64_t inflight(const bk_net_conn_t *c) {
    assert(c->seq_flush <= c->seq_next);
    return c->seq_next - c->seq_flush;
}

/* Default input buffer size: large enough that one recv(2) usually takes
 * several pipelined requests, never above the one-frame bound. */
#define IN_CHUNK_BYTES ((size_t)64 << 10)

static size_t in_chunk(const bk_net_t *net) {
    size_t frame_max = (size_t)net->cfg.request_max_bytes + 4;
    return frame_max < IN_CHUNK_BYTES ? frame_max : IN_CHUNK_BYTES;
}

static uint32_t load_be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Input buffers above the chunk are mmap'd, not malloc'd: munmap gives
 * their pages back to the system the moment the frame is handed out or the
 * connection closes. (glibc's malloc raises its mmap threshold to the size
 * of the last freed mmap'd block, up to 32 MiB, so 1..32 MiB buffers would
 * end up in the heap, where freed memory often stays in the process: 30
 * connections with 100 MiB partial frames left 3.1 GB RSS behind.) A loop
 * keeps one mapping of at most BK_NET_BIG_SPARE_MAX for its next big frame
 * (big_free). */
static size_t page_round(size_t n) {
    const size_t page = 4096;
    return (n + page - 1) / page * page;
}

/* Gives `bytes` of queued.max.request.bytes back and wakes the waiters
 * (`here`: the loop whose thread this is). Any thread. */
void bk__budget_release(bk_net_t *net, net_loop_t *here, size_t bytes) {
    if (bytes == 0) return;
    uint64_t before = __atomic_fetch_sub(&net->queued_bytes, (uint64_t)bytes, __ATOMIC_ACQ_REL);
    assert(before >= bytes);
    (void)before;
    if (!net->freeing) bk__net_mem_released(net, here);
}

/* A frame of `len` bytes read in a chunk (not in a mapping of its own). */
static bool frame_small(const bk_net_t *net, size_t len) {
    return 4 + len <= in_chunk(net);
}

void bk__frame_release(bk_net_t *net, net_loop_t *here, size_t len) {
    size_t cost = bk_net_mem_block_bytes(len);
    if (frame_small(net, len)) {
        uint64_t before = __atomic_fetch_sub(&net->small_bytes, (uint64_t)cost, __ATOMIC_ACQ_REL);
        assert(before >= cost);
        (void)before;
    }
    bk__budget_release(net, here, cost);
}

static void peak_note(bk_net_t *net, uint64_t now) {
    uint64_t peak = __atomic_load_n(&net->queued_bytes_peak, __ATOMIC_RELAXED);
    while (now > peak &&
           !__atomic_compare_exchange_n(&net->queued_bytes_peak, &peak, now, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
}

/* Reserves a small frame's block: against queued.max.request.bytes
 * counting only small frames' blocks (their own share: big frames' partial
 * reservations, which wait for their peers' bytes, must not starve small
 * requests, as they do not starve the chunks those are read in), and
 * counted in queued_bytes with the rest. */
static bool small_reserve(bk_net_t *net, size_t cost) {
    uint64_t cur = __atomic_load_n(&net->small_bytes, __ATOMIC_ACQUIRE);
    do {
        if (net->cfg.queued_bytes_max >= 0 && cur + cost > (uint64_t)net->cfg.queued_bytes_max) return false;
    } while (!__atomic_compare_exchange_n(&net->small_bytes, &cur, cur + cost, false, __ATOMIC_ACQ_REL,
                                          __ATOMIC_ACQUIRE));
    peak_note(net, __atomic_add_fetch(&net->queued_bytes, (uint64_t)cost, __ATOMIC_ACQ_REL));
    return true;
}

static void big_unmap(uint8_t *p, size_t cap) {
    /* munmap of a mapping we made with this length cannot fail */
    if (munmap(p, cap) != 0) assert(!"munmap of an input buffer failed");
}

/* A mapping the loop is done with: kept as the loop's spare when it is the
 * size of an ordinary big request (BK_NET_BIG_SPARE_MAX) and the loop has
 * none, so that a stream of 100 KiB..1 MiB produce requests does not map
 * and unmap one per request (TLB shootdowns on the loop); else unmapped.
 * One spare per loop: what it keeps is bounded, and a peer's 100 MiB frame
 * still gives its memory back the moment it is handed out. */
static void big_free(net_loop_t *loop, uint8_t *p, size_t cap, size_t counted) {
    if (cap <= BK_NET_BIG_SPARE_MAX && !loop->big_spare) {
        loop->big_spare = p;
        loop->big_spare_cap = cap;
    } else {
        big_unmap(p, cap);
    }
    bk__budget_release(loop->net, loop, counted);
}

/* Reserves `counted` bytes of queued.max.request.bytes in place of
 * `old_big` bytes this connection holds: one node-wide budget shared by
 * every loop, so an atomic compare-and-swap. With `swap` the old bytes
 * leave the count in the same step (the caller frees their memory without
 * releasing them); without, the caller releases them later (big_free) and
 * the count holds both meanwhile. */
static bool budget_reserve(bk_net_t *net, size_t old_big, size_t counted, bool swap) {
    uint64_t cur = __atomic_load_n(&net->queued_bytes, __ATOMIC_ACQUIRE);
    uint64_t now;
    for (;;) {
        assert(cur >= old_big);
        if (net->cfg.queued_bytes_max >= 0 && cur - old_big + counted > (uint64_t)net->cfg.queued_bytes_max)
            return false;
        now = (swap ? cur - old_big : cur) + counted;
        if (__atomic_compare_exchange_n(&net->queued_bytes, &cur, now, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            break;
    }
    peak_note(net, now);
    return true;
}

/* Gives an empty connection's buffer back: chunk-sized ones to the pool
 * (or free()), big ones to the system and the budget. */
static void in_release(bk_net_conn_t *c) {
    assert(c->in_len == 0);
    c->in_off = 0;
    if (!c->in) return;
    net_loop_t *loop = c->loop;
    if (c->in_big) big_free(loop, c->in, c->in_map, c->in_counted);
    else if (c->in_cap == in_chunk(c->net) && loop->in_pool_n < BK_NET_IN_POOL_MAX) loop->in_pool[loop->in_pool_n++] = c->in;
    else free(c->in);
    c->in = NULL;
    c->in_cap = 0;
    c->in_big = false;
}

void bk__conn_in_pool_free(net_loop_t *loop) {
    while (loop->in_pool_n > 0) free(loop->in_pool[--loop->in_pool_n]);
    if (loop->big_spare) big_unmap(loop->big_spare, loop->big_spare_cap);
    loop->big_spare = NULL;
    loop->big_spare_cap = 0;
}

typedef enum { ROOM_OK, ROOM_NOMEM, ROOM_WAIT } room_t;

/* Makes room after the unconsumed input for the next read: for the rest of
 * the current frame when its size prefix is in, else for a chunk. The
 * unconsumed bytes (at most one partial frame: complete ones were handed
 * out before reading resumes) move to the front only when the frame would
 * not fit behind them.
 *
 * A frame above the chunk gets one mapping of its whole size, counted at
 * once against queued.max.request.bytes (as Kafka's memory pool does): a
 * connection either holds its frame's reservation or waits with no more
 * than a chunk. Growing reservations piecemeal instead deadlocks: two
 * connections each holding half the budget, each waiting for the other's
 * half (test_request_budget_pauses_reading). The reservation is address
 * space: anonymous pages are only backed once bytes are written into them
 * (MAP_NORESERVE: no commit charge either), so memory follows the bytes a
 * peer has sent, never the size it announced (10,000 connections announcing
 * 100 MiB and sending little hold little; the budget bounds the
 * reservations).
 *
 * ROOM_WAIT when the reservation would exceed the budget (the caller pauses
 * this connection until memory is released); ROOM_NOMEM when the system
 * refuses. Chunk-sized buffers are not counted: they are bounded by
 * connections x 64 KiB, and they keep small requests (metadata, fetches,
 * small produce batches) served while large partial frames hold the budget. */
static room_t in_make_room(bk_net_conn_t *c) {
    bk_net_t *net = c->net;
    net_loop_t *loop = c->loop;
    size_t chunk = in_chunk(net);
    size_t want = chunk;
    if (c->in_len >= 4) {
        /* pump() has already closed on a bad size, so this one is valid */
        int32_t size = (int32_t)load_be32(c->in + c->in_off);
        assert(size >= 0 && size <= net->cfg.request_max_bytes);
        if (4 + (size_t)size > want) want = 4 + (size_t)size;
    }
    assert(want > c->in_len); /* a complete frame would have been handed out */
    if (!c->in) {
        assert(c->in_len == 0 && c->in_off == 0 && want <= chunk);
        if (loop->in_pool_n > 0) {
            c->in = loop->in_pool[--loop->in_pool_n];
        } else {
            c->in = malloc(chunk);
            if (!c->in) return ROOM_NOMEM;
        }
        c->in_cap = chunk;
        c->in_big = false;
        return ROOM_OK;
    }
    if (c->in_off + want <= c->in_cap) return ROOM_OK;
    if (want <= c->in_cap) {
        memmove(c->in, c->in + c->in_off, c->in_len);
        c->in_off = 0;
        return ROOM_OK;
    }
    /* a frame above the chunk (or above the mapping a previous frame
     * left): one mapping of its size, within the budget */
    size_t cap = page_round(want);
    size_t counted = want - 4; /* the frame's size: a budget of socket.request.max.bytes holds one */
    /* a mapping already held (a smaller frame's, with this frame's first
     * bytes behind it) gives its reservation to the new one in the same
     * step: only the growth is added (counting both at once could pass the
     * budget), and munmap'ing it releases nothing, so no loop's waiters
     * are woken for memory that did not come back */
    size_t old_big = c->in_big ? c->in_counted : 0;
    if (!budget_reserve(net, old_big, counted, true)) return ROOM_WAIT;
    void *m;
    size_t map = cap;
    if (loop->big_spare && loop->big_spare_cap >= cap) {
        /* the spare, used up to `cap` only: reads stop at the frame's end
         * plus the page rounding, as in a mapping of this frame's size
         * (in_unmap moves that slack, < 4 KiB, to a chunk) */
        m = loop->big_spare;
        map = loop->big_spare_cap;
        loop->big_spare = NULL;
        loop->big_spare_cap = 0;
    } else {
        m = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    }
    if (m == MAP_FAILED) {
        bk__budget_release(net, loop, counted - old_big);   /* the old mapping keeps its own */
        return ROOM_NOMEM;
    }
    memcpy(m, c->in + c->in_off, c->in_len); /* what arrived of this frame so far */
    if (c->in_big) big_free(loop, c->in, c->in_map, 0);
    else if (c->in_cap == chunk && loop->in_pool_n < BK_NET_IN_POOL_MAX) loop->in_pool[loop->in_pool_n++] = c->in;
    else free(c->in);
    c->in = m;
    c->in_off = 0;
    c->in_cap = cap;
    c->in_map = map;
    c->in_big = true;
    c->in_counted = counted;
    return ROOM_OK;
}

/* Queued output, with what TLS took out of `out` but SSL_write has not
 * taken yet (0 on a plain connection). */
static size_t output_len(const bk_net_conn_t *c) {
    return evbuffer_get_length(c->out) + c->tp_len;
}

/* Adds or deletes ev to match `want`; *on mirrors whether it is added. */
static int set_event(struct event *ev, bool *on, bool want) {
    if (*on == want) return 0;
    int rc = want ? event_add(ev, NULL) : event_del(ev);
    if (rc == 0) *on = want;
    return rc;
}

static conn_slot_t *ring_at(bk_net_conn_t *c, uint64_t seq) {
    return &c->ring[seq % c->net->cfg.inflight_max];
}

/* Run pump (or the deferred free) later from the loop, never re-entrantly. */
static void schedule_resume(bk_net_conn_t *c) {
    event_active(c->resume_ev, EV_TIMEOUT, 1);
}

static void drop_slots(bk_net_conn_t *c) {
    for (uint64_t s = c->seq_flush; s < c->seq_next; s++) {
        conn_slot_t *slot = ring_at(c, s);
        if (slot->body) evbuffer_free(slot->body);
        slot->body = NULL;
        slot->state = SLOT_PENDING;
    }
    LST_SUB(&c->loop->stats, requests_inflight, inflight(c));
    c->seq_flush = c->seq_next;
}

void bk_net_conn_close(bk_net_conn_t *c) {
    if (c->session) {
        bk__session_close(c);
        return;
    }
    if (c->closed) return;
    c->closed = true;
    /* Close the socket now so the peer sees it at once, even if the loop
     * stops before the deferred free. Inside pump() the handler may still be
     * reading its frame from the input buffer: there the socket closes when
     * pump() returns. */
    /* close(2) waits for the deferred free (the descriptor must outlive
     * every event on it); shutdown(2) makes the FIN leave now. Queued output
     * is dropped with the connection. */
    (void)shutdown(c->fd, SHUT_RDWR);
    /* event_del only fails for an event without a base: not ours */
    if (set_event(c->read_ev, &c->reading, false) != 0 || set_event(c->write_ev, &c->writing, false) != 0)
        assert(!"event_del failed");
    drop_slots(c);
    if (c->mem_wait) {
        c->mem_wait = false;
        LST_SUB(&c->loop->stats, mem_waiting, 1);
        event_del(c->hup_ev);
    }
    if (!c->loop->remote) {
        /* a remote loop's connection counts until its CLOSED event
         * reaches the state loop (loop.c) */
        assert(c->net->stats.conns_open > 0 && c->loop->assigned > 0);
        c->net->stats.conns_open--;
        c->loop->assigned--;
        bk__net_conn_closed(c->net);
    }
    if (!c->in_pump) schedule_resume(c);
}

/* Close a draining connection once nothing of it is left to send. */
static void maybe_finish_close(bk_net_conn_t *c) {
    if (c->closed || !c->closing) return;
    if (inflight(c) == 0 && output_len(c) == 0) bk_net_conn_close(c);
}

/* Move completed slots, oldest first, to the socket's output. Stops at the
 * first slot still pending: that is what keeps responses in request order. */
static void flush_slots(bk_net_conn_t *c) {
    while (c->seq_flush < c->seq_next) {
        conn_slot_t *slot = ring_at(c, c->seq_flush);
        if (slot->state == SLOT_PENDING) break;
        if (slot->state == SLOT_READY) {
            size_t len = evbuffer_get_length(slot->body);
            assert(len <= INT32_MAX);
            uint8_t prefix[4] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16),
                                  (uint8_t)(len >> 8), (uint8_t)len };
            /* the stall clock starts when output starts waiting */
            if (output_len(c) == 0) c->write_ok_ms = bk__net_mono_ms();
            /* add_buffer moves the chains (file segments included): no copy.
             * The prefix goes in front of the body, not after c->out's last
             * chain: that may be a file range, after which libevent sizes a
             * new chain by the range's file offset (a 4-byte add became a
             * megabyte allocation). Encoders leave room for it in front. */
            if (evbuffer_prepend(slot->body, prefix, sizeof prefix) != 0 || evbuffer_add_buffer(c->out, slot->body) != 0) {
                evbuffer_free(slot->body);
                slot->body = NULL;
                slot->state = SLOT_PENDING;
                bk_net_conn_close(c);
                return;
            }
            LST_ADD(&c->loop->stats, bytes_out, sizeof prefix + len);
            bk__body_recycle(c->loop, slot->body);   /* emptied: the state loop reuses it */
        }
        slot->body = NULL;
        slot->state = SLOT_PENDING;
        c->seq_flush++;
        LST_SUB(&c->loop->stats, requests_inflight, 1);
    }
}

/* Pause reading while the in-flight or output bound is reached (Kafka mutes
 * a channel the same way); resume when both are below their bounds. */
static void update_read(bk_net_conn_t *c) {
    if (c->closed) return;
    /* A draining connection keeps reading only to discard: unread bytes in
     * the kernel would turn our final close into a RST, and a RST can make
     * the peer lose the responses we just flushed. */
    bool can_read = !c->mem_wait && (c->closing || (!c->muted && inflight(c) < c->net->cfg.inflight_max &&
                                                    output_len(c) < c->net->cfg.output_max_bytes));
    if (set_event(c->read_ev, &c->reading, can_read) != 0) {
        fprintf(stderr, "skiff: net: closing connection %s: cannot %s reading\n", c->peer,
                can_read ? "resume" : "pause");
        bk_net_conn_close(c);
        return;
    }
    /* bytes OpenSSL has already decrypted make no read event: ask for one */
    if (c->ssl && c->reading && bk__tls_pending(c)) event_active(c->read_ev, EV_READ, 1);
}

/* Cork while the output is more than one piece: libevent writes a file
 * range with its own sendfile(2), between writev(2)s of the bytes around
 * it, and with TCP_NODELAY each call would leave as its own segment (a
 * Fetch answer at the log's tail: header, a few hundred bytes of records,
 * 3 bytes of tail = three segments, three wake-ups of the reader). Corked,
 * the pieces leave together when the cork comes off at the end of the
 * pass. One piece (a Produce answer) goes as before, no extra call. */
static void set_cork(const bk_net_conn_t *c, int on) {
    /* a refused cork only costs segments: nothing to carry */
    if (setsockopt(c->fd, IPPROTO_TCP, TCP_CORK, &on, sizeof on) != 0) return;
}

static void write_plain(bk_net_conn_t *c) {
    bool cork = evbuffer_get_contiguous_space(c->out) < evbuffer_get_length(c->out);
    bool failed = false;
    if (cork) set_cork(c, 1);
    while (output_len(c) > 0) {
        errno = 0;
        int n = evbuffer_write(c->out, c->fd);
        if (n > 0) {
            c->active_ms = c->write_ok_ms = bk__net_mono_ms();
            c->written_total += (uint64_t)n;
            continue;
        }
        /* libevent 2.1 returns 0, not -1, when sendfile(2) of a file range
         * meets a full socket (EAGAIN): that is "wait", not EOF. Closing
         * there cut off every consumer whose socket filled while a Fetch
         * answer was sent from a file (found by t_net_output.sh). A 0 with
         * errno untouched (sendfile at the end of a truncated file) still
         * closes: waiting would spin on a writable socket. */
        failed = !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
        break;
    }
    if (cork) set_cork(c, 0);
    if (failed) bk_net_conn_close(c);
}

/* Writes the queued output until it is empty or the socket is full; waits
 * for write_ev only in the second case. Bounded by the socket buffer. A
 * write error, or a write of 0 bytes, closes (as BEV_EVENT_ERROR/EOF). */
static void write_out(bk_net_conn_t *c) {
    assert(!c->closed);
    if (c->ssl && !c->ktls_send) {
        /* nothing is queued before the handshake: frames come after it */
        if (c->hs_done && bk__tls_write(c) != 0) {
            bk_net_log_close(c->net, "tls write failed", "net: closing connection %s on listener %s: TLS write "
                             "failed", c->peer, c->listener);
            bk_net_conn_close(c);
            return;
        }
    } else {
        write_plain(c);
        if (c->closed) return;
    }
    if (set_event(c->write_ev, &c->writing, output_len(c) > 0 || c->hs_wants_write) != 0) {
        fprintf(stderr, "skiff: net: closing connection %s: cannot wait for the socket to drain\n", c->peer);
        bk_net_conn_close(c);
        return;
    }
    report_written(c);
}

/* A network loop tells the session what it wrote once the output is at
 * most half its bound and half a bound has been written since the last
 * report: enough for a session holding frames at the bound to go on (all
 * it posted written = at least a bound unreported), at most one message
 * per output_max_bytes / 2 written. */
static void report_written(bk_net_conn_t *c) {
    if (!c->loop->remote || c->closed) return;
    size_t half = c->net->cfg.output_max_bytes / 2;
    if (output_len(c) > half || c->written_total - c->written_reported < half) return;
    net_msg_t *m = bk__msg_evt(c->loop, MSG_WRITTEN, c->id);
    if (!m) return;   /* the next write reports it */
    m->seq = c->written_total;
    c->written_reported = c->written_total;
    bk__loop_post_batched(&c->loop->evq, m);
}

static void close_bad_frame(bk_net_conn_t *c, int32_t size) {
    const uint8_t *p = c->in + c->in_off;
    /* a TLS record header (handshake, version 3.x) where a size should be */
    if (!c->ssl && p[0] == 0x16 && p[1] == 0x03)
        bk_net_log_close(c->net, "tls on a plain listener", "net: closing connection %s on listener %s: it sent a "
                         "TLS handshake to a %s listener", c->peer, c->listener,
                         c->security == BK_NET_SEC_SASL_PLAINTEXT ? "SASL_PLAINTEXT" : "PLAINTEXT");
    else
        bk_net_log_close(c->net, "bad frame size", "net: closing connection %s: frame size %d is negative or above "
                         "socket.request.max.bytes %d", c->peer, size, c->net->cfg.request_max_bytes);
    LST_ADD(&c->loop->stats, conns_bad_frame, 1);
    bk_net_conn_close(c);
}

/* Stop reading this connection until queued.max.request.bytes has room
 * (bk__conn_mem_retry). Idempotent. */
static void mem_pause(bk_net_conn_t *c) {
    if (c->mem_wait) return;
    c->mem_wait = true;
    LST_ADD(&c->loop->stats, mem_waiting, 1);
    LST_ADD(&c->loop->stats, mem_waits, 1);
    if (event_add(c->hup_ev, NULL) != 0)   /* then only the idle timeout frees its budget */
        fprintf(stderr, "skiff: connection %s: cannot watch for the peer leaving while paused for memory\n",
                c->peer);
    update_read(c);
}

/* The connection got its reservation after all (a pump from another
 * event retried it): reading may go on. */
static void mem_unpause(bk_net_conn_t *c) {
    if (!c->mem_wait) return;
    c->mem_wait = false;
    LST_SUB(&c->loop->stats, mem_waiting, 1);
    event_del(c->hup_ev);
}

/* A network loop posted the big frame at the start of its mapping, whose
 * reservation the frame's block took over (handle_one): the bytes read
 * behind it (at most the page rounding's slack, < 4 KiB) move to a chunk
 * and the mapping goes, uncounted. false when out of memory. */
static bool in_unmap(bk_net_conn_t *c) {
    net_loop_t *loop = c->loop;
    size_t chunk = in_chunk(c->net);
    assert(c->in_big && c->in_counted == 0);
    assert(c->in_len < chunk);
    uint8_t *buf = NULL;
    if (c->in_len > 0) {
        buf = loop->in_pool_n > 0 ? loop->in_pool[--loop->in_pool_n] : malloc(chunk);
        if (!buf) return false;
        memcpy(buf, c->in + c->in_off, c->in_len);
    }
    big_free(loop, c->in, c->in_map, 0);
    c->in = buf;
    c->in_cap = buf ? chunk : 0;
    c->in_off = 0;
    c->in_big = false;
    return true;
}

/* A network loop's frame: copied into its own block (its bytes reserved in
 * queued.max.request.bytes by the caller: `cost`), prepared, posted to the
 * state loop (session.c hands it to on_frame and releases the cost when
 * on_frame returns, or bk__msg_free when the frame is dropped). */
static bool post_frame(bk_net_conn_t *c, const uint8_t *frame, size_t len, size_t cost) {
    bk_net_t *net = c->net;
    net_msg_t *m = bk__msg_evt(c->loop, MSG_FRAME, c->id);
    uint8_t *block = bk_net_mem_alloc(len);
    (void)cost;
    assert(!block || bk_net_mem_block_bytes(len) == cost);
    if (!m || !block) {
        if (m) bk__msg_free(net, m);
        bk_net_mem_free(block);
        return false;
    }
    memcpy(block, frame, len);
    LST_ADD(&c->loop->stats, frame_copy_bytes, len);
    LST_ADD(&c->loop->stats, frames_posted, 1);
    m->seq = c->seq_current;
    m->frame = block;
    m->len = len;
    m->prepared = net->cfg.on_prepare && c->prepare_on ? net->cfg.on_prepare(block, len, net->cfg.ctx) : NULL;
    bk__loop_post_batched(&c->loop->evq, m);
    return true;
}

/* A network loop hands a complete frame of `size` bytes over: its block
 * is reserved in queued.max.request.bytes first (frames held for a slow or
 * blocked state loop are bounded like frames being read), else the
 * connection pauses. A big frame's mapping already holds its reservation:
 * the block takes it over (counting both would never fit a budget of
 * socket.request.max.bytes). A small frame's block (read in a chunk) is
 * bounded by the budget among small blocks only (small_reserve): so
 * request memory is at most the budget for big frames plus the budget for
 * small frames' copies, plus the chunks. false: not handed over (paused or
 * closed). */
static bool hand_over(bk_net_conn_t *c, const uint8_t *frame, size_t size) {
    size_t cost = bk_net_mem_block_bytes(size);
    bool ok;
    if (c->in_big) {
        /* on a network loop a mapping holds exactly its one big frame,
         * at its start (in_unmap once it is posted) */
        assert(c->in_off == 0 && c->in_counted == size && !frame_small(c->net, size));
        ok = budget_reserve(c->net, c->in_counted, cost, true);
    } else {
        assert(frame_small(c->net, size));
        ok = small_reserve(c->net, cost);
    }
    if (!ok) {
        mem_pause(c);
        return false;
    }
    if (c->in_big) c->in_counted = 0;   /* the block's now */
    mem_unpause(c);
    conn_slot_t *slot = ring_at(c, c->seq_next);
    assert(slot->state == SLOT_PENDING && slot->body == NULL);
    (void)slot;
    c->seq_current = c->seq_next++;
    LST_ADD(&c->loop->stats, requests_inflight, 1);
    LST_ADD(&c->loop->stats, requests_total, 1);
    LST_ADD(&c->loop->stats, bytes_in, 4 + size);
    /* the frame is answered later by a RESPOND command like any deferred
     * answer */
    ok = post_frame(c, frame, size, cost);
    if (!ok) bk__frame_release(c->net, c->loop, size);
    c->in_off += 4 + size;
    c->in_len -= 4 + size;
    if (ok && c->in_big) ok = in_unmap(c);
    if (!ok) {
        bk_net_log_close(c->net, "out of memory for input", "net: closing connection %s: out of memory "
                         "for a frame", c->peer);
        bk_net_conn_close(c);
        return false;
    }
    return true;
}

/* Hand one complete frame to the handler. Returns false when no complete
 * frame is buffered or the connection closed. */
static bool handle_one(bk_net_conn_t *c) {
    if (c->in_len < 4) return false;
    const uint8_t *p = c->in + c->in_off;
    int32_t size = (int32_t)load_be32(p);
    if (size < 0 || size > c->net->cfg.request_max_bytes) {
        close_bad_frame(c, size);
        return false;
    }
    if (c->in_len - 4 < (size_t)size) return false;
    /* The frame is contiguous where it was read (in_make_room): no copy. */
    static const uint8_t empty[1];
    const uint8_t *frame = size ? p + 4 : empty;
    /* a network loop: the frame goes to the state loop in its own block
     * (the one copy), prepared here */
    if (c->loop->remote) return hand_over(c, frame, (size_t)size);
    conn_slot_t *slot = ring_at(c, c->seq_next);
    assert(slot->state == SLOT_PENDING && slot->body == NULL);
    c->seq_current = c->seq_next++;
    LST_ADD(&c->loop->stats, requests_inflight, 1);
    LST_ADD(&c->loop->stats, requests_total, 1);
    LST_ADD(&c->loop->stats, bytes_in, 4 + (size_t)size);
    c->frame = frame;
    c->frame_len = (size_t)size;
    c->frame_taken = false;
    /* With one loop the hook would run here, on the state loop, right
     * before on_frame: nothing moves off the loop and the request would be
     * decoded twice, so on_frame does all the checks itself. */
    c->prepared = c->net->cfg.on_prepare && c->prepare_on && c->net->cfg.loops > 1
                      ? c->net->cfg.on_prepare(frame, (size_t)size, c->net->cfg.ctx)
                      : NULL;
    c->in_handler = true;
    c->net->cfg.on_frame(c, frame, (size_t)size, c->net->cfg.ctx);
    c->in_handler = false;
    c->frame = NULL;
    if (c->prepared) {
        c->net->cfg.prepared_free(c->prepared);
        c->prepared = NULL;
    }
    if (c->closed) return false;
    /* the buffer cannot have moved: only read_cb() resizes it, never re-entered */
    assert(p == c->in + c->in_off);
    c->in_off += 4 + (size_t)size;
    c->in_len -= 4 + (size_t)size;
    return true;
}

/* The frame lies in the connection's input buffer, which the next frames
 * reuse: a handler that keeps it gets its own block, the one user-space
 * copy of these bytes (the socket read them into place, see in_make_room). */
uint8_t *bk_net_conn_take_frame(bk_net_conn_t *c) {
    if (c->session) return bk__session_take_frame(c);
    assert(c->in_handler);
    assert(c->frame != NULL);
    assert(!c->frame_taken);        /* one owner per frame */
    c->frame_taken = true;
    /* a block of the pool, like a network loop's copy: bk_net_mem_free
     * gives either back */
    uint8_t *own = bk_net_mem_alloc(c->frame_len);
    if (!own) return NULL;
    memcpy(own, c->frame, c->frame_len);
    LST_ADD(&c->loop->stats, frame_copy_bytes, c->frame_len);
    return own;
}

void *bk_net_conn_prepared(const bk_net_conn_t *c) {
    assert(c->in_handler);
    return c->prepared;
}

void *bk_net_conn_take_prepared(bk_net_conn_t *c) {
    assert(c->in_handler);
    void *p = c->prepared;
    c->prepared = NULL;
    return p;
}

/* True while the handler may get another frame: open, not draining, below
 * the in-flight and output bounds. */
static bool can_handle(const bk_net_conn_t *c) {
    return !c->closed && !c->closing && !c->muted && c->paused == 0 && inflight(c) < c->net->cfg.inflight_max &&
           output_len(c) < c->net->cfg.output_max_bytes;
}

/* Hand buffered frames to the handler while the bounds allow. Each pass is
 * bounded by the in-flight bound plus the frames whose handlers answered at
 * once, i.e. by the input buffer (README "Bounds"). */
static void pump(bk_net_conn_t *c) {
    assert(!c->in_pump);
    c->in_pump = true;
    flush_slots(c);
    if (c->closing && !c->closed) c->in_len = 0; /* discard */
    /* Frames until none is complete or a bound is hit, then write. Writing
     * may bring the output back under its bound: go on then, else reading
     * could resume (update_read) with a complete frame still buffered, which
     * no read event would ever hand out. Each outer pass hands out a frame
     * or ends, so this is bounded by the buffered input. */
    bool more = true;
    while (more) {
        while (can_handle(c)) {
            if (!handle_one(c)) {
                more = false;
                break;
            }
            flush_slots(c);
        }
        if (c->closed) break;
        write_out(c);
        more = more && can_handle(c);
    }
    c->in_pump = false;
    if (c->closed) {
        bk__net_conn_free(c->net, c);
        return;
    }
    if (c->in_len == 0) in_release(c);
    update_read(c);
    maybe_finish_close(c);
}

/* The peer of a connection paused for the budget went away (EV_CLOSED: the
 * read event is off, so EOF would otherwise go unseen and its partial frame
 * would hold the budget). */
static void hup_cb(evutil_socket_t fd, short what, void *arg) {
    bk_net_conn_t *c = arg;
    if (!c->closed && !c->in_pump) bk_net_conn_close(c);
}

static void resume_cb(evutil_socket_t fd, short what, void *arg) {
    bk_net_conn_t *c = arg;
    if (c->closed) bk__net_conn_free(c->net, c);
    else pump(c);
}

/* The socket is readable (read_ev is only added while reading is allowed):
 * one recv(2) into the room in_make_room() gives, then hand out the frames.
 * Level-triggered, so what a short buffer leaves in the socket comes back on
 * the next loop pass. EOF or an error closes, as a bufferevent would. */
/* The TLS handshake's turn (read or write event before it finished):
 * true when it is done and the connection may go on. */
static bool tls_handshake(bk_net_conn_t *c) {
    bk_net_tls_hs_t hs = bk__tls_handshake(c);
    if (hs == BK_NET_TLS_HS_FAILED) {
        bk_net_conn_close(c);
        return false;
    }
    if (set_event(c->write_ev, &c->writing, c->hs_wants_write) != 0) {
        bk_net_conn_close(c);
        return false;
    }
    return hs == BK_NET_TLS_HS_DONE;
}

static void read_cb(evutil_socket_t fd, short what, void *arg) {
    bk_net_conn_t *c = arg;
    assert(!c->closed && !c->in_pump && c->reading);
    if (c->ssl && !c->hs_done && !tls_handshake(c)) return;
    /* a handler may have asked to close while later frames were buffered;
     * from then on everything read is discarded (pump() does the same) */
    if (c->closing) c->in_len = 0;
    room_t room_rc = in_make_room(c);
    if (room_rc == ROOM_WAIT) {
        /* queued.max.request.bytes spent: read nothing more from this
         * socket until memory is released (bk__conn_mem_retry) */
        assert(!c->mem_wait);
        mem_pause(c);
        return;
    }
    if (room_rc == ROOM_NOMEM) {
        bk_net_log_close(c->net, "out of memory for input", "net: closing connection %s: out of memory for input",
                         c->peer);
        bk_net_conn_close(c);
        return;
    }
    size_t room = c->in_cap - c->in_off - c->in_len;
    assert(room > 0);
    ssize_t n;
    if (c->ssl) {
        n = bk__tls_read(c, c->in + c->in_off + c->in_len, room);
        if (n == 0) {
            if (c->in_len == 0) in_release(c);
            return;
        }
    } else {
        n = recv(fd, c->in + c->in_off + c->in_len, room, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            if (c->in_len == 0) in_release(c);
            return;
        }
    }
    if (n <= 0) {
        bk_net_conn_close(c); /* EOF or a socket error: as BEV_EVENT_EOF / _ERROR */
        return;
    }
    assert((size_t)n <= room);
    c->in_len += (size_t)n;
    c->active_ms = bk__net_mono_ms();
    pump(c);
}

/* The socket takes output again (write_ev is only added while output
 * waits). Like the bufferevent's low watermark, the pump runs (resume
 * reading, finish a close) once the output is down to half its bound. */
static void write_cb(evutil_socket_t fd, short what, void *arg) {
    bk_net_conn_t *c = arg;
    assert(!c->closed && !c->in_pump && c->writing);
    if (c->ssl && !c->hs_done) {
        /* the handshake's bytes went out; its next step may read */
        if (tls_handshake(c)) update_read(c);
        return;
    }
    write_out(c);
    if (!c->closed && output_len(c) <= c->net->cfg.output_max_bytes / 2) pump(c);
}

void bk__conn_set_peer(bk_net_conn_t *c, const struct sockaddr *sa, int salen) {
    char host[48] = "?";
    uint16_t port = 0;
    if (sa->sa_family == AF_INET && salen >= (int)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in4 = (const void *)sa;
        evutil_inet_ntop(AF_INET, &in4->sin_addr, host, sizeof host);
        port = ntohs(in4->sin_port);
        memcpy(c->addr, &in4->sin_addr, 4);
        c->addr_len = 4;
    } else if (sa->sa_family == AF_INET6 && salen >= (int)sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const void *)sa;
        evutil_inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
        memcpy(c->addr, &in6->sin6_addr, 16);
        c->addr_len = 16;
    }
    snprintf(c->peer, sizeof c->peer, "%s:%u", host, (unsigned)port);
}

bk_net_conn_t *bk__conn_new(net_loop_t *loop, net_listener_t *l, evutil_socket_t fd, const struct sockaddr *sa,
                            int salen, struct ssl_st *ssl) {
    bk_net_t *net = loop->net;
    bk_net_conn_t *c = calloc(1, sizeof *c);
    if (!c) {
        if (ssl) SSL_free(ssl);
        evutil_closesocket(fd);
        return NULL;
    }
    c->net = net;
    c->loop = loop;
    c->fd = fd;
    c->listener = l->name;
    c->lst = l;
    c->security = l->security;
    c->prepare_on = bk__sec_prepares(l->security);
    memcpy(c->principal, BK_NET_PRINCIPAL_ANONYMOUS, sizeof BK_NET_PRINCIPAL_ANONYMOUS);
    c->ring = calloc(net->cfg.inflight_max, sizeof *c->ring);
    c->out = evbuffer_new();
    c->resume_ev = event_new(loop->base, -1, 0, resume_cb, c);
    c->read_ev = event_new(loop->base, fd, EV_READ | EV_PERSIST, read_cb, c);
    c->write_ev = event_new(loop->base, fd, EV_WRITE | EV_PERSIST, write_cb, c);
    c->hup_ev = event_new(loop->base, fd, EV_CLOSED | EV_PERSIST, hup_cb, c);
    if (!c->ring || !c->out || !c->resume_ev || !c->read_ev || !c->write_ev || !c->hup_ev) goto fail;
    /* file ranges (bk_net_resp_add_file) go out with sendfile(2), not mmap */
    if (evbuffer_set_flags(c->out, EVBUFFER_FLAG_DRAINS_TO_FD) != 0) goto fail;
    bk__conn_set_peer(c, sa, salen);
    c->active_ms = c->write_ok_ms = bk__net_mono_ms();
    if (ssl) {
        struct ssl_st *s = ssl;
        ssl = NULL;
        if (bk__tls_conn_start(c, s) != 0) goto fail;
    }
    if (set_event(c->read_ev, &c->reading, true) != 0) goto fail;
    c->lnext = loop->conns;
    if (loop->conns) loop->conns->lprev = c;
    loop->conns = c;
    return c;
fail:
    if (ssl) SSL_free(ssl);
    bk__tls_conn_free(c);
    if (c->read_ev) event_free(c->read_ev); /* also deletes it if added */
    if (c->write_ev) event_free(c->write_ev);
    if (c->hup_ev) event_free(c->hup_ev);
    if (c->out) evbuffer_free(c->out);
    evutil_closesocket(fd);
    if (c->resume_ev) event_free(c->resume_ev);
    free(c->ring);
    free(c);
    return NULL;
}

void bk__conn_free(bk_net_conn_t *c) {
    assert(c->closed);
    assert(!c->in_pump);
    assert(!c->session);
    net_loop_t *loop = c->loop;
    if (c->lprev) c->lprev->lnext = c->lnext;
    else loop->conns = c->lnext;
    if (c->lnext) c->lnext->lprev = c->lprev;
    event_free(c->resume_ev); /* also cancels a pending activation */
    event_free(c->read_ev);   /* read_ev, write_ev: deleted by bk_net_conn_close already */
    event_free(c->write_ev);
    event_free(c->hup_ev);
    if (c->mute_ev) event_free(c->mute_ev);
    evbuffer_free(c->out);
    if (c->auth_free) c->auth_free(c->auth);
    bk__tls_conn_free(c);
    /* nothing to do about a failing close(2): the descriptor is gone either way */
    if (evutil_closesocket(c->fd) != 0) { /* see above */ }
    if (c->in_big) {
        c->in_len = 0;
        in_release(c);
    }
    free(c->in);
    free(c->ring);
    free(c);
}

/* The mute is over: hand out what was buffered meanwhile and read again. */
static void mute_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    bk_net_conn_t *c = arg;
    c->muted = false;
    if (!c->in_pump) schedule_resume(c);
}

int bk_net_conn_mute_until(bk_net_conn_t *c, int64_t until_mono_ms) {
    if (c->session) return bk__session_mute_until(c, until_mono_ms);
    if (c->closed) return BK_NET_ERR_GONE;
    int64_t now = (int64_t)(bk_net_mono_ns() / 1000000u);
    if (until_mono_ms <= now) return BK_NET_OK;
    if (c->muted && until_mono_ms <= c->mute_until_ms) return BK_NET_OK;   /* a longer mute stands */
    if (!c->mute_ev) {
        c->mute_ev = evtimer_new(c->loop->base, mute_cb, c);
        if (!c->mute_ev) return BK_NET_ERR_SYS;
    }
    int64_t ms = until_mono_ms - now;
    struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000) };
    if (evtimer_add(c->mute_ev, &tv) != 0) return BK_NET_ERR_SYS;
    c->muted = true;
    c->mute_until_ms = until_mono_ms;
    /* inside the handler pump() sees the flag at its next frame and turns
     * reading off on its way out; outside it, stop reading now */
    if (!c->in_pump) update_read(c);
    return BK_NET_OK;
}

bool bk_net_conn_muted(const bk_net_conn_t *c) { return c->muted; }

void bk_net_conn_pause(bk_net_conn_t *c) {
    if (c->session) { bk__session_pause(c); return; }
    c->paused++;
    /* reading goes on up to the in-flight bound: frames wait in the input
     * buffer, as behind a slot not yet answered */
}

void bk_net_conn_resume(bk_net_conn_t *c) {
    if (c->session) { bk__session_resume(c); return; }
    assert(c->paused > 0);
    if (--c->paused == 0 && !c->closed && !c->in_pump) schedule_resume(c);
}

void bk_net_conn_set_prepare(bk_net_conn_t *c, bool on) {
    if (c->prepare_on == on || c->closed) return;
    c->prepare_on = on;
    if (!c->session) return;
    /* the socket side reads and prepares: tell its loop (FIFO with the
     * frames' answers, so frames read from now on follow it) */
    net_msg_t *m = bk__msg_cmd(c->loop, MSG_PREPARE, c->id);
    if (!m) return;     /* out of memory: frames stay unprepared, on_frame checks them */
    m->seq = on;
    bk__loop_post_batched(&c->loop->cmd, m);
}

uint64_t bk_net_conn_id(const bk_net_conn_t *c) { return c->id; }

const char *bk_net_conn_peer(const bk_net_conn_t *c) { return c->peer; }

bk_net_security_t bk_net_conn_security(const bk_net_conn_t *c) { return c->security; }

const char *bk_net_conn_listener(const bk_net_conn_t *c) { return c->listener; }

const char *bk_net_conn_principal(const bk_net_conn_t *c) { return c->principal; }

void bk_net_conn_set_principal(bk_net_conn_t *c, const char *principal) {
    assert(principal != NULL);
    size_t n = strnlen(principal, BK_NET_PRINCIPAL_MAX);
    memcpy(c->principal, principal, n);
    c->principal[n] = '\0';
}

void *bk_net_conn_auth(const bk_net_conn_t *c) { return c->auth; }

void bk_net_conn_set_auth(bk_net_conn_t *c, void *state, void (*free_fn)(void *state)) {
    if (c->auth != state && c->auth_free) c->auth_free(c->auth);
    c->auth = state;
    c->auth_free = state ? free_fn : NULL;
}

bk_net_slot_t bk_net_conn_slot(const bk_net_conn_t *c) {
    assert(c->in_handler);
    return (bk_net_slot_t){ .conn_id = c->id, .seq = c->seq_current };
}

/* Common checks for completing a slot; consumes `body` on failure. */
static int complete(bk_net_conn_t *c, bk_net_slot_t slot, slot_state_t state, struct evbuffer *body) {
    if (c->session) return bk__session_complete(c, slot, state == SLOT_NONE, body);
    if (c->closed) {
        if (body) evbuffer_free(body);
        return BK_NET_ERR_GONE;
    }
    bool valid = slot.conn_id == c->id && slot.seq >= c->seq_flush && slot.seq < c->seq_next &&
                 ring_at(c, slot.seq)->state == SLOT_PENDING;
    if (!valid) {
        if (body) evbuffer_free(body);
        return BK_NET_ERR_INVALID;
    }
    if (body && evbuffer_get_length(body) > INT32_MAX) {
        /* Unanswerable: the client would wait forever, so cut it off. */
        evbuffer_free(body);
        fprintf(stderr, "skiff: net: closing connection %s: response above 2 GiB\n", c->peer);
        bk_net_conn_close(c);
        return BK_NET_ERR_INVALID;
    }
    conn_slot_t *s = ring_at(c, slot.seq);
    s->state = state;
    s->body = body;
    if (!c->in_pump) schedule_resume(c); /* flush + resume reading from the loop */
    return BK_NET_OK;
}

int bk_net_conn_respond(bk_net_conn_t *c, bk_net_slot_t slot, struct evbuffer *body) {
    assert(body);
    return complete(c, slot, SLOT_READY, body);
}

int bk_net_conn_respond_bytes(bk_net_conn_t *c, bk_net_slot_t slot, const void *bytes, size_t len) {
    struct evbuffer *body = bk_net_body_new(c->net);
    if (!body) return BK_NET_ERR_SYS;
    if (evbuffer_add(body, bytes, len) != 0) {
        evbuffer_free(body);
        return BK_NET_ERR_SYS;
    }
    return complete(c, slot, SLOT_READY, body);
}

int bk_net_conn_respond_none(bk_net_conn_t *c, bk_net_slot_t slot) {
    return complete(c, slot, SLOT_NONE, NULL);
}

void bk_net_conn_close_after_flush(bk_net_conn_t *c) {
    if (c->session) {
        bk__session_close_after_flush(c);
        return;
    }
    if (c->closed || c->closing) return;
    c->closing = true;
    /* whatever the peer sends from now on is read and discarded by pump();
     * pump() closes once every slot is answered and the output written
     * (write_cb runs it when the output drains) */
    if (!c->in_pump) schedule_resume(c);
}

bool bk__conn_is_open(const bk_net_conn_t *c) { return !c->closed; }

/* Memory went back to the budget: every connection of this loop paused
 * for it tries again (one more read each; those that still do not fit
 * pause again). O(connections of the loop) per release, only while some
 * connection waits. Other loops are woken by bk__net_mem_released. */
void bk__conn_mem_retry(net_loop_t *loop) {
    for (bk_net_conn_t *c = loop->conns; c && LST_GET(&loop->stats, mem_waiting) > 0; c = c->lnext) {
        if (c->closed || !c->mem_wait) continue;
        mem_unpause(c);
        /* a pump: a network loop's connection may wait with a complete
         * frame buffered (its block did not fit), which no read hands out */
        if (!c->in_pump) schedule_resume(c);
    }
}

/* Once a second: close connections idle past connections.max.idle.ms
 * (nothing read or written and nothing in flight: a fetch waiting in the
 * purgatory keeps its connection) and those whose output has not moved for
 * write_stall_ms (a peer that stopped reading: its queued responses, file
 * ranges included, would be held for as long as it stays connected).
 * Connections paused for the budget try again (a release on another loop
 * that raced with their pause is seen here at the latest).
 * O(connections of the loop) per second. */
void bk__conn_sweep(net_loop_t *loop) {
    bk_net_t *net = loop->net;
    int64_t now = bk__net_mono_ms();
    if (LST_GET(&loop->stats, mem_waiting) > 0) bk__conn_mem_retry(loop);
    for (bk_net_conn_t *c = loop->conns; c; c = c->lnext) {
        if (c->closed || c->in_pump) continue;
        if (c->ssl && !c->hs_done && now - c->born_ms >= BK_NET_TLS_HANDSHAKE_MS) {
            bk_net_log_close(net, "tls handshake timeout", "net: closing connection %s on listener %s: TLS "
                             "handshake not finished after %d ms", c->peer, c->listener, BK_NET_TLS_HANDSHAKE_MS);
            bk_net_conn_close(c);
            continue;
        }
        if (net->cfg.write_stall_ms > 0 && output_len(c) > 0 && now - c->write_ok_ms >= net->cfg.write_stall_ms) {
            bk_net_log_close(net, "write stalled", "net: closing connection %s: %zu response bytes not taken "
                             "by the peer for %lld ms (socket.write.stall.ms)", c->peer, output_len(c),
                             (long long)(now - c->write_ok_ms));
            LST_ADD(&loop->stats, conns_stall_closed, 1);
            bk_net_conn_close(c);
            continue;
        }
        if (net->cfg.idle_ms > 0 && inflight(c) == 0 && output_len(c) == 0 && now - c->active_ms >= net->cfg.idle_ms) {
            bk_net_log_close(net, "idle", "net: closing connection %s: idle for %lld ms (connections.max.idle.ms)",
                             c->peer, (long long)(now - c->active_ms));
            LST_ADD(&loop->stats, conns_idle_closed, 1);
            bk_net_conn_close(c);
        }
    }
    if (loop->index == 0) {
        if (pthread_mutex_lock(&net->log_mu) != 0) assert(!"log mutex");
        (void)bk_net_ratelog_flush(&net->close_log, now);
        if (pthread_mutex_unlock(&net->log_mu) != 0) assert(!"log mutex");
    }
}

void bk_net_log_close(bk_net_t *net, const char *cause, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (len < 0) return;
    (void)bk__net_ratelog(net, cause, "%s", line);
}

/* The limiter is shared by every loop: one mutex (lines are rare). */
bool bk__net_ratelog(bk_net_t *net, const char *cause, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (len < 0) return false;
    if (pthread_mutex_lock(&net->log_mu) != 0) assert(!"log mutex");
    bool said = bk_net_ratelog(&net->close_log, bk__net_mono_ms(), cause, "%s", line);
    if (pthread_mutex_unlock(&net->log_mu) != 0) assert(!"log mutex");
    return said;
}
