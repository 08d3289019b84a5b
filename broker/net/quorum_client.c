/* broker/net/quorum_client.c — connections to the other voters (see
 * quorum_client.h). */
#include "broker/net/quorum_client.h"

#include <arpa/inet.h>
#include <assert.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "broker/net/qc_sasl_int.h"
#include "broker/net/tls.h"

/* How each target is secured (bk_net_qc_set_security). */
static bk_net_qc_security_t g_sec[2];

void bk_net_qc_set_security(bk_net_qc_target_t target, const bk_net_qc_security_t *sec) {
    assert(target == BK_NET_QC_TO_BROKER || target == BK_NET_QC_TO_CONTROLLER);
    g_sec[target] = *sec;
}

struct bk_net_qc_peer {
    struct event_base *base;
    int32_t id;
    char host[64];
    uint16_t port;
    struct bufferevent *bev;
    bool connected;
    int64_t last_attempt_ms;
    bk_net_qc_pending_t fifo[BK_NET_QC_INFLIGHT_MAX];
    size_t head, count;
    int32_t next_corr;
    bk_net_qc_resp_fn on_resp;
    void *ctx;
    struct event *timer;     /* deadline checks, armed while requests are pending */
    uint64_t timeouts;
    bk_net_qc_target_t target;
    /* SASL_*: requests wait in `held` until the login succeeded */
    bool authenticating;
    qc_sasl_t sasl;
    struct evbuffer *held;
    int64_t last_log_ms;     /* failures of TLS / SASL logged at most every 10 s */
};

void bk_net_qc_set_target(bk_net_qc_peer_t *p, bk_net_qc_target_t target) { p->target = target; }

static const bk_net_qc_security_t *sec_of(const bk_net_qc_peer_t *p) { return &g_sec[p->target]; }
static bool uses_tls(const bk_net_qc_security_t *s) {
    return s->security == BK_NET_SEC_SSL || s->security == BK_NET_SEC_SASL_SSL;
}
static bool uses_sasl(const bk_net_qc_security_t *s) {
    return s->security == BK_NET_SEC_SASL_PLAINTEXT || s->security == BK_NET_SEC_SASL_SSL;
}

int32_t bk_net_qc_id(const bk_net_qc_peer_t *p) { return p->id; }
size_t bk_net_qc_pending_count(const bk_net_qc_peer_t *p) { return p->count; }
uint64_t bk_net_qc_timeouts(const bk_net_qc_peer_t *p) { return p->timeouts; }

/* Deadlines use the monotonic clock: a wall-clock step must not expire (or
 * prolong) every request at once. */
static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int32_t default_timeout_ms(bk_net_qc_kind_t kind) {
    switch (kind) {
    case BK_NET_QC_RAFT: return BK_NET_QC_RAFT_TIMEOUT_MS;
    case BK_NET_QC_REGISTER:
    case BK_NET_QC_HEARTBEAT:
    case BK_NET_QC_ALTER: return BK_NET_QC_CONTROL_TIMEOUT_MS;
    case BK_NET_QC_FORWARD:
    case BK_NET_QC_REPL_FETCH: return BK_NET_QC_LONG_TIMEOUT_MS;
    }
    return BK_NET_QC_LONG_TIMEOUT_MS;
}

int32_t bk_net_qc_next_corr(bk_net_qc_peer_t *p) {
    p->next_corr = p->next_corr == INT32_MAX ? 1 : p->next_corr + 1;
    return p->next_corr;
}

bk_net_qc_peer_t *bk_net_qc_new(struct event_base *base, int32_t id, const char *host, uint16_t port,
                        bk_net_qc_resp_fn on_resp, void *ctx) {
    bk_net_qc_peer_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->base = base;
    p->id = id;
    snprintf(p->host, sizeof p->host, "%s", host);
    p->port = port;
    p->on_resp = on_resp;
    p->ctx = ctx;
    p->last_attempt_ms = -1;
    return p;
}

/* Drops the connection; every request pending on it is reported lost. A
 * handler may send again (on a new connection): those requests are not. */
static void disconnect(bk_net_qc_peer_t *p) {
    if (p->bev) bufferevent_free(p->bev);
    p->bev = NULL;
    p->connected = false;
    p->authenticating = false;
    if (p->held) evbuffer_drain(p->held, evbuffer_get_length(p->held));
    for (size_t n = p->count; n > 0 && p->count > 0; n--) {
        bk_net_qc_pending_t pend = p->fifo[p->head];
        p->head = (p->head + 1) % BK_NET_QC_INFLIGHT_MAX;
        p->count--;
        p->on_resp(p->ctx, p->id, &pend, NULL, 0);
    }
}

void bk_net_qc_free(bk_net_qc_peer_t *p) {
    if (!p) return;
    disconnect(p);
    if (p->timer) event_free(p->timer);
    if (p->held) evbuffer_free(p->held);
    free(p);
}

static void arm_timer(bk_net_qc_peer_t *p) {
    if (!p->timer || p->count == 0 || evtimer_pending(p->timer, NULL)) return;
    struct timeval tv = { 0, BK_NET_QC_TIMEOUT_CHECK_MS * 1000 };
    (void)evtimer_add(p->timer, &tv);   /* fails only on a broken base */
}

/* A pending request past its deadline: the peer is silent; drop the
 * connection (and with it every request behind that one). */
static void on_deadline(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    bk_net_qc_peer_t *p = arg;
    int64_t now = mono_ms();
    size_t expired = 0;
    for (size_t i = 0; i < p->count; i++) {
        const bk_net_qc_pending_t *e = &p->fifo[(p->head + i) % BK_NET_QC_INFLIGHT_MAX];
        if (e->deadline_ms <= now) expired++;
    }
    if (expired > 0) {
        fprintf(stderr, "skiff: peer %d (%s:%u): %zu request(s) unanswered past their deadline; "
                "closing the connection (%zu pending reported lost)\n", p->id, p->host, p->port, expired, p->count);
        p->timeouts += expired;
        disconnect(p);
    }
    arm_timer(p);
}

/* One line per peer per 10 s for a failing TLS handshake or login:
 * reconnects come every BK_NET_QC_RECONNECT_MS. */
static void peer_log(bk_net_qc_peer_t *p, const char *what, const char *why) {
    int64_t now = mono_ms();
    if (p->last_log_ms && now - p->last_log_ms < 10000) return;
    p->last_log_ms = now;
    fprintf(stderr, "skiff: peer %d (%s:%u): %s: %s; retrying\n", p->id, p->host, p->port, what, why);
}

/* A SASL answer while logging in: the next token, or the held requests
 * go out once authenticated. */
static void on_auth_frame(bk_net_qc_peer_t *p, const uint8_t *frame, size_t size) {
    char why[300];
    struct evbuffer *out = bufferevent_get_output(p->bev);
    int rc = qc_sasl_on_frame(&p->sasl, sec_of(p), frame, size, out, why, sizeof why);
    if (rc < 0) {
        peer_log(p, "SASL login failed", why);
        disconnect(p);
        return;
    }
    if (rc == 1) {
        p->authenticating = false;
        p->last_log_ms = 0;
        if (bufferevent_write_buffer(p->bev, p->held) != 0) disconnect(p);
    }
}

static void on_read(struct bufferevent *bev, void *arg) {
    bk_net_qc_peer_t *p = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    while (p->authenticating) {
        uint8_t hdr[4];
        if (evbuffer_copyout(in, hdr, 4) != 4) return;
        uint32_t size = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
        if (size > KP_SASL_TOKEN_MAX + 1024) {
            peer_log(p, "SASL login failed", "answer too large");
            disconnect(p);
            return;
        }
        if (evbuffer_get_length(in) < 4 + (size_t)size) return;
        evbuffer_drain(in, 4);
        uint8_t *frame = evbuffer_pullup(in, size);
        if (!frame && size > 0) { disconnect(p); return; }
        on_auth_frame(p, frame, size);
        if (!p->bev) return;
        evbuffer_drain(in, size);
    }
    for (;;) {
        uint8_t hdr[4];
        if (evbuffer_copyout(in, hdr, 4) != 4) return;
        uint32_t size = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
        if (size > BK_NET_QC_FRAME_MAX_BYTES || p->count == 0) {
            fprintf(stderr, "skiff: raft peer %d: bad response frame (size %u, %zu pending); reconnecting\n",
                    p->id, size, p->count);
            disconnect(p);
            return;
        }
        if (evbuffer_get_length(in) < 4 + (size_t)size) return;
        evbuffer_drain(in, 4);
        uint8_t *frame = evbuffer_pullup(in, size);
        if (!frame && size > 0) { disconnect(p); return; }
        bk_net_qc_pending_t pend = p->fifo[p->head];
        p->head = (p->head + 1) % BK_NET_QC_INFLIGHT_MAX;
        p->count--;
        /* the handler may send (and so touch the FIFO) but never frees p */
        p->on_resp(p->ctx, p->id, &pend, frame, size);
        if (!p->bev) return;
        evbuffer_drain(in, size);
    }
}

static void on_event(struct bufferevent *bev, short what, void *arg) {
    (void)bev;
    bk_net_qc_peer_t *p = arg;
    if (what & BEV_EVENT_CONNECTED) {
        p->connected = true;
        /* As on accepted sockets: a replica fetch or a raft message is one
         * small write that must not wait for the ACK of the one before
         * (Nagle), or an acks=all produce waits with it. Best effort: a
         * socket without it still works. */
        int one = 1;
        evutil_socket_t fd = bufferevent_getfd(bev);
        if (fd >= 0) (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return;
    }
    if (what & (BEV_EVENT_ERROR | BEV_EVENT_EOF)) {
        unsigned long e = uses_tls(sec_of(p)) ? bufferevent_get_openssl_error(bev) : 0;
        if (e) {
            char why[256];
            ERR_error_string_n(e, why, sizeof why);
            SSL *ssl = bufferevent_openssl_get_ssl(bev);
            long vr = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
            if (vr != X509_V_OK)
                snprintf(why, sizeof why, "peer certificate refused: %s", X509_verify_cert_error_string(vr));
            peer_log(p, "TLS handshake failed", why);
        } else if (p->authenticating) {
            peer_log(p, "SASL login failed", "the peer closed the connection");
        }
        while (bev && bufferevent_get_openssl_error(bev)) {} /* the queue of this connection */
        disconnect(p);
    }
}

static int connect_peer(bk_net_qc_peer_t *p, int64_t now_ms) {
    if (p->bev) return 0;
    if (p->last_attempt_ms >= 0 && now_ms - p->last_attempt_ms < BK_NET_QC_RECONNECT_MS) return -1;
    p->last_attempt_ms = now_ms;
    if (sec_of(p)->unusable[0]) {
        peer_log(p, "cannot log in", sec_of(p)->unusable);
        return -1;
    }
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t sl;
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, p->host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons(p->port);
        sl = sizeof *s4;
    } else if (inet_pton(AF_INET6, p->host, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(p->port);
        sl = sizeof *s6;
    } else {
        return -1;
    }
    const bk_net_qc_security_t *sec = sec_of(p);
    if (uses_tls(sec)) {
        SSL *ssl = sec->tls ? SSL_new(bk_net_tls_ctx(sec->tls)) : NULL;
        /* the peer is named by its address: that address must be in its
         * certificate (Kafka's ssl.endpoint.identification.algorithm=https) */
        if (!ssl || X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), p->host) != 1) {
            if (ssl) SSL_free(ssl);
            ERR_clear_error();
            return -1;
        }
        p->bev = bufferevent_openssl_socket_new(p->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
        if (!p->bev) {
            SSL_free(ssl);
            return -1;
        }
        bufferevent_openssl_set_allow_dirty_shutdown(p->bev, 1);
    } else {
        p->bev = bufferevent_socket_new(p->base, -1, BEV_OPT_CLOSE_ON_FREE);
    }
    if (!p->bev) return -1;
    bufferevent_setcb(p->bev, on_read, NULL, on_event, p);
    if (bufferevent_enable(p->bev, EV_READ | EV_WRITE) != 0 ||
        bufferevent_socket_connect(p->bev, (struct sockaddr *)&ss, (int)sl) != 0) {
        bufferevent_free(p->bev);
        p->bev = NULL;
        return -1;
    }
    if (uses_sasl(sec)) {
        char why[300];
        if ((!p->held && !(p->held = evbuffer_new())) ||
            qc_sasl_start(&p->sasl, sec, bufferevent_get_output(p->bev), why, sizeof why) != 0) {
            peer_log(p, "SASL login failed", p->held ? why : "out of memory");
            bufferevent_free(p->bev);
            p->bev = NULL;
            return -1;
        }
        p->authenticating = true;
    }
    return 0;
}

/* Writes what it can of a frame straight to the socket when nothing is
 * queued ahead of it on a plain, connected, logged-in connection: handed
 * to the bufferevent, every request (a replica fetch per round trip, each
 * raft message) cost a write-event add, a loop pass and a delete around
 * its one writev. Returns the bytes written (0: none, the bufferevent
 * writes it all, and meets any socket error itself). */
static size_t send_direct(bk_net_qc_peer_t *p, const uint8_t *frame, size_t len) {
    if (!p->connected || p->authenticating || uses_tls(sec_of(p))) return 0;
    if (evbuffer_get_length(bufferevent_get_output(p->bev)) != 0) return 0;
    evutil_socket_t fd = bufferevent_getfd(p->bev);
    if (fd < 0) return 0;
    ssize_t n = send(fd, frame, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    return n > 0 ? (size_t)n : 0;
}

int bk_net_qc_send(bk_net_qc_peer_t *p, const uint8_t *frame, size_t len, const bk_net_qc_pending_t *pend, int64_t now_ms) {
    if (!p->timer) p->timer = evtimer_new(p->base, on_deadline, p);
    if (!p->timer) return -1;   /* no request without a deadline */
    if (connect_peer(p, now_ms) != 0) return -1;
    if (p->count >= BK_NET_QC_INFLIGHT_MAX) return -1;
    size_t sent = send_direct(p, frame, len);
    /* bytes queued before the connect completes are sent once it does;
     * before the SASL login they wait in `held` */
    if (sent < len && (p->authenticating ? evbuffer_add(p->held, frame, len) != 0
                                         : bufferevent_write(p->bev, frame + sent, len - sent) != 0)) {
        /* part of the frame is on the wire: the stream cannot go on */
        if (sent > 0) disconnect(p);
        return -1;
    }
    bk_net_qc_pending_t *e = &p->fifo[(p->head + p->count) % BK_NET_QC_INFLIGHT_MAX];
    *e = *pend;
    e->deadline_ms = mono_ms() + (pend->timeout_ms > 0 ? pend->timeout_ms : default_timeout_ms(pend->kind));
    p->count++;
    arm_timer(p);
    return 0;
}

void bk_net_qc_flush(bk_net_qc_peer_t *p, int timeout_ms) {
    /* a connect still in progress completes when the socket turns writable */
    if (!p->bev) return;
    /* TLS: the bufferevent encrypts; writing its plaintext to the socket
     * here would corrupt the stream. Best effort then (raft re-sends). */
    if (uses_tls(sec_of(p)) || p->authenticating) return;
    struct evbuffer *out = bufferevent_get_output(p->bev);
    evutil_socket_t fd = bufferevent_getfd(p->bev);
    if (fd < 0) return;
    /* the bufferevent freezes the start of its output (only it drains it);
     * thaw it while we write on its behalf */
    evbuffer_unfreeze(out, 1);
    /* bounded: at most timeout_ms of waiting in 10 ms polls */
    for (int waited = 0; evbuffer_get_length(out) > 0 && waited <= timeout_ms; waited += 10) {
        struct pollfd pfd = { fd, POLLOUT, 0 };
        if (poll(&pfd, 1, 10) < 0) break;
        if ((pfd.revents & POLLOUT) && evbuffer_write(out, fd) < 0 && errno != EAGAIN) break;
    }
    evbuffer_freeze(out, 1);
}
