/* broker/net/loop.c — the network loops (num.network.threads): loop 0 is
 * the state loop's own event_base; loops 1..N-1 are threads, each with an
 * event_base serving the sockets handed to it. Between a network loop and
 * the state loop run two FIFOs (net_queue_t): commands one way (open a
 * socket, respond, close, mute), events the other (principal, frame,
 * closed). See README "Network loops".
 *
 * A queue is a mutex + list and an eventfd the reader's event watches.
 * The writer writes the eventfd only when it found the list empty; the
 * reader reads the eventfd before it takes the list, so a message added
 * after the take always makes a new wake-up. One wake-up drains a batch. */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "broker/net/mem.h"
#include "broker/net/net_int.h"

/* Frees a message and whatever it still owns (both sides). */
void bk__msg_free(bk_net_t *net, net_msg_t *m) {
    if (m->body) evbuffer_free(m->body);
    if (m->frame) {
        /* frames are dropped on the state loop (held, closing, freeing) */
        assert(m->type == MSG_FRAME && m->home);
        bk_net_mem_free(m->frame);
        bk__frame_release(net, &net->loops[0], m->len);
    }
    if (m->prepared) net->cfg.prepared_free(m->prepared);
    if (m->cert) X509_free(m->cert);
    if (m->ssl_ctx) SSL_CTX_free(m->ssl_ctx);
    if (m->fd >= 0) evutil_closesocket(m->fd);
    bk__msg_recycle(m);
}

static void wake(net_queue_t *q) {
    uint64_t one = 1;
    while (write(q->efd, &one, sizeof one) < 0 && errno == EINTR) {}
}

void bk__loop_post(net_queue_t *q, net_msg_t *m) {
    m->next = NULL;
    bk__queue_lock(q);
    /* a batched post's wake still due goes now too: its writer's loop
     * may never run its flush again (bk_net_free's STOP comes after the
     * state loop has stopped) */
    bool was_empty = q->head == NULL || q->wake_due;
    q->wake_due = false;
    if (q->tail) q->tail->next = m;
    else q->head = m;
    q->tail = m;
    bk__queue_unlock(q);
    /* an eventfd write fails only if the counter would overflow (never:
     * the reader resets it) or on EINTR */
    if (was_empty) wake(q);
}

void bk__loop_post_batched(net_queue_t *q, net_msg_t *m) {
    m->next = NULL;
    bk__queue_lock(q);
    if (!q->head) q->wake_due = true;
    if (q->tail) q->tail->next = m;
    else q->head = m;
    q->tail = m;
    bk__queue_unlock(q);
    if (q->flush_armed) return;
    q->flush_armed = true;
    event_active(q->flush_ev, EV_TIMEOUT, 1);
}

static void flush_now(net_queue_t *q) {
    bk__queue_lock(q);
    bool due = q->wake_due;
    q->wake_due = false;
    bk__queue_unlock(q);
    if (due) wake(q);
}

static void flush_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    net_queue_t *q = arg;
    q->flush_armed = false;
    flush_now(q);
}

void bk__loops_flush(bk_net_t *net) {
    for (uint32_t i = 1; i < net->cfg.loops; i++) flush_now(&net->loops[i].cmd);
}

static net_msg_t *queue_take(net_queue_t *q) {
    uint64_t v;
    while (read(q->efd, &v, sizeof v) < 0 && errno == EINTR) {}   /* EAGAIN: nothing to reset */
    bk__queue_lock(q);
    net_msg_t *m = q->head;
    q->head = q->tail = NULL;
    bk__queue_unlock(q);
    return m;
}

static int queue_init(net_queue_t *q, struct event_base *reader, struct event_base *writer, event_callback_fn cb,
                      void *arg) {
    q->efd = -1;
    if (pthread_mutex_init(&q->mu, NULL) != 0) return -1;
    q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (q->efd < 0) return -1;
    q->ev = event_new(reader, q->efd, EV_READ | EV_PERSIST, cb, arg);
    if (!q->ev || event_add(q->ev, NULL) != 0) return -1;
    q->flush_ev = event_new(writer, -1, 0, flush_cb, q);
    return q->flush_ev ? 0 : -1;
}

static void queue_fini(bk_net_t *net, net_queue_t *q) {
    if (q->ev) event_free(q->ev);
    q->ev = NULL;
    if (q->flush_ev) event_free(q->flush_ev);
    q->flush_ev = NULL;
    if (q->efd >= 0) {
        for (net_msg_t *m = queue_take(q), *next; m; m = next) {
            next = m->next;
            bk__msg_free(net, m);
        }
        bk__pool_queue_fini(q);
        close(q->efd);
        pthread_mutex_destroy(&q->mu);
    }
    q->efd = -1;
}

static bk_net_conn_t *loop_lookup(net_loop_t *loop, uint64_t id) {
    uint32_t idx = (uint32_t)id;
    assert(idx < loop->net->cfg.conns_max);
    bk_net_conn_t *c = loop->table[idx];
    return c && c->id == id ? c : NULL;
}

static void post_closed(net_loop_t *loop, uint64_t id, net_msg_t *spare) {
    net_msg_t *m = spare ? spare : bk__msg_evt(loop, MSG_CLOSED, id);
    /* without memory for it the session would hold its table entry
     * forever: better to stop than to leak the entry silently */
    if (!m) {
        fprintf(stderr, "skiff: net: out of memory reporting a closed connection\n");
        abort();
    }
    net_loop_t *home = m->home;
    bool home_loop = m->home_loop;
    memset(m, 0, sizeof *m);
    m->home = home;
    m->home_loop = home_loop;
    m->type = MSG_CLOSED;
    m->conn_id = id;
    m->fd = -1;
    bk__loop_post(&loop->evq, m);
}

void bk__loop_conn_gone(bk_net_conn_t *c) {
    net_loop_t *loop = c->loop;
    uint32_t idx = (uint32_t)c->id;
    if (loop->table[idx] == c) loop->table[idx] = NULL;
    post_closed(loop, c->id, NULL);
}

static void close_all(net_loop_t *loop) {
    while (loop->conns) {
        bk_net_conn_t *c = loop->conns;
        bk_net_conn_close(c);
        assert(!c->in_pump);
        bk__net_conn_free(loop->net, c);
    }
}

/* Commands, on the network loop's thread (loop 0: only MEM_WAKE). */
static void cmd_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    net_loop_t *loop = arg;
    bk_net_t *net = loop->net;
    for (net_msg_t *m = queue_take(&loop->cmd), *next; m; m = next) {
        next = m->next;
        bk_net_conn_t *c = NULL;
        if (m->type != MSG_OPEN && m->type != MSG_MEM_WAKE && m->type != MSG_STOP) c = loop_lookup(loop, m->conn_id);
        bk_net_slot_t slot = { .conn_id = m->conn_id, .seq = m->seq };
        int rc = BK_NET_OK;
        switch (m->type) {
        case MSG_OPEN: {
            /* TLS: the SSL holds its own reference to the context */
            SSL *ssl = m->ssl_ctx ? bk__tls_ssl_new(m->ssl_ctx) : NULL;
            bool no_ssl = m->ssl_ctx && !ssl;
            if (m->ssl_ctx) SSL_CTX_free(m->ssl_ctx);
            m->ssl_ctx = NULL;
            if (no_ssl) {
                evutil_closesocket(m->fd);
                post_closed(loop, m->conn_id, m);
                m = NULL;
                break;
            }
            c = bk__conn_new(loop, m->lst, m->fd, (const struct sockaddr *)&m->sa, m->salen, ssl);
            m->fd = -1;     /* taken in all cases */
            if (!c) {
                post_closed(loop, m->conn_id, m);
                m = NULL;
                break;
            }
            c->id = m->conn_id;
            c->index = (uint32_t)m->conn_id;
            assert(loop->table[c->index] == NULL);
            loop->table[c->index] = c;
            break;
        }
        case MSG_RESPOND:
            if (c) rc = bk_net_conn_respond(c, slot, m->body);
            else bk__body_recycle(loop, m->body);   /* not flushed: freed unless empty */
            m->body = NULL;
            break;
        case MSG_NONE:
            if (c) rc = bk_net_conn_respond_none(c, slot);
            break;
        case MSG_CLOSE:
            if (c) bk_net_conn_close(c);
            break;
        case MSG_CLOSING:
            if (c) bk_net_conn_close_after_flush(c);
            break;
        case MSG_MUTE:
            if (c) rc = bk_net_conn_mute_until(c, m->until_ms);
            break;
        case MSG_PREPARE:
            if (c) c->prepare_on = m->seq != 0;
            break;
        case MSG_MEM_WAKE:
            bk__conn_mem_retry(loop);
            break;
        case MSG_STOP:
            close_all(loop);
            if (event_base_loopbreak(loop->base) != 0) assert(!"loopbreak");
            break;
        default:
            assert(!"not a command");
        }
        /* GONE: the socket closed meanwhile (its CLOSED is on its way);
         * anything else means the state side and the socket disagree */
        if (rc != BK_NET_OK && rc != BK_NET_ERR_GONE) {
            fprintf(stderr, "skiff: net: loop %u: command %d on connection %llu: %s\n", loop->index, (int)m->type,
                    (unsigned long long)slot.conn_id, bk_net_err_str(rc));
            /* a refused answer: the session counted its bytes as posted
             * output that will never be written (it would hold the
             * connection's frames for good) and the client would wait for
             * it forever; the CLOSED this posts frees the session */
            if (c && (m->type == MSG_RESPOND || m->type == MSG_NONE)) bk_net_conn_close(c);
        }
        if (m) bk__msg_free(net, m);
    }
}

/* Events of one network loop, on the state loop. */
static void evq_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    net_loop_t *loop = arg;
    for (net_msg_t *m = queue_take(&loop->evq), *next; m; m = next) {
        next = m->next;
        bk__session_event(loop->net, m);
    }
}

static void sweep_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    bk__conn_sweep(arg);
}

void bk__loop_hand_off(net_loop_t *loop, bk_net_conn_t *s, net_listener_t *l, evutil_socket_t fd,
                       const struct sockaddr *sa, int salen, SSL_CTX *ssl_ctx) {
    net_msg_t *m = bk__msg_cmd(loop, MSG_OPEN, s->id);
    if (!m) {
        if (ssl_ctx) SSL_CTX_free(ssl_ctx);
        evutil_closesocket(fd);
        /* as if the loop had refused it: the CLOSED path frees the session */
        net_msg_t *c = bk__msg_new(MSG_CLOSED, s->id);
        if (c) bk__session_event(loop->net, c);
        else bk__session_close(s);
        return;
    }
    m->fd = fd;
    if (salen > (int)sizeof m->sa) salen = (int)sizeof m->sa;
    memcpy(&m->sa, sa, (size_t)salen);
    m->salen = salen;
    m->lst = l;
    m->ssl_ctx = ssl_ctx;
    bk__loop_post_batched(&loop->cmd, m);
}

void bk__net_mem_released(bk_net_t *net, net_loop_t *here) {
    for (uint32_t i = 0; i < net->cfg.loops; i++) {
        net_loop_t *l = &net->loops[i];
        if (l->stopped || LST_GET(&l->stats, mem_waiting) == 0) continue;
        if (l == here) {
            bk__conn_mem_retry(l);
            continue;
        }
        /* another thread's connections: wake it (its sweep retries too,
         * for a pause that raced with this release) */
        net_msg_t *m = bk__msg_new(MSG_MEM_WAKE, 0);
        if (m) bk__loop_post(&l->cmd, m);
    }
}

static void *loop_main(void *arg) {
    net_loop_t *loop = arg;
    bk__pool_thread_enter(loop);
    if (event_base_loop(loop->base, EVLOOP_NO_EXIT_ON_EMPTY) < 0)
        fprintf(stderr, "skiff: net: network loop %u failed\n", loop->index);
    return NULL;
}

int bk__loops_new(bk_net_t *net) {
    uint32_t n = net->cfg.loops;
    net->loops = calloc(n, sizeof *net->loops);
    if (!net->loops) return -1;
    const struct timeval sec = { 1, 0 };
    for (uint32_t i = 0; i < n; i++) {
        net_loop_t *l = &net->loops[i];
        l->net = net;
        l->index = i;
        l->remote = i > 0;
        l->tls_pipe[0] = l->tls_pipe[1] = -1;
        l->cmd.efd = l->evq.efd = -1;
        l->base = i == 0 ? net->base : event_base_new();
        if (!l->base) return -1;
        if (queue_init(&l->cmd, l->base, net->base, cmd_cb, l) != 0) return -1;
        if (l->remote) {
            l->table = calloc(net->cfg.conns_max, sizeof *l->table);
            if (!l->table || queue_init(&l->evq, net->base, l->base, evq_cb, l) != 0) return -1;
        }
        l->sweep_ev = event_new(l->base, -1, EV_PERSIST, sweep_cb, l);
        if (!l->sweep_ev || event_add(l->sweep_ev, &sec) != 0) return -1;
    }
    return 0;
}

int bk__loops_start(bk_net_t *net) {
    for (uint32_t i = 1; i < net->cfg.loops; i++) {
        net_loop_t *l = &net->loops[i];
        if (pthread_create(&l->thread, NULL, loop_main, l) != 0) return -1;
        l->started = true;
    }
    return 0;
}

void bk__loops_free(bk_net_t *net) {
    if (!net->loops) return;
    net->freeing = true;
    for (uint32_t i = 1; i < net->cfg.loops; i++) {
        net_loop_t *l = &net->loops[i];
        if (!l->started) continue;
        net_msg_t *m = bk__msg_new(MSG_STOP, 0);
        if (!m) {
            fprintf(stderr, "skiff: net: out of memory stopping network loop %u\n", i);
            abort();
        }
        bk__loop_post(&l->cmd, m);
        if (pthread_join(l->thread, NULL) != 0) assert(!"pthread_join");
        l->started = false;
    }
    for (uint32_t i = 1; i < net->cfg.loops; i++) {
        net_loop_t *l = &net->loops[i];
        l->stopped = true;
        if (l->base) close_all(l);   /* a loop whose thread never ran */
        /* what the loop posted: frames are dropped, CLOSED frees sessions */
        if (l->evq.efd >= 0)
            for (net_msg_t *m = queue_take(&l->evq), *next; m; m = next) {
                next = m->next;
                bk__session_event(net, m);
            }
        queue_fini(net, &l->evq);
        queue_fini(net, &l->cmd);
        bk__pool_loop_fini(l);
        if (l->sweep_ev) event_free(l->sweep_ev);
        l->sweep_ev = NULL;
        bk__conn_in_pool_free(l);
        if (l->tls_pipe[0] >= 0) {
            close(l->tls_pipe[0]);
            close(l->tls_pipe[1]);
        }
        free(l->table);
        l->table = NULL;
        if (l->base) event_base_free(l->base);
        l->base = NULL;
    }
    queue_fini(net, &net->loops[0].cmd);
}
