/* broker/net/listener.c — bk_net_t: listeners, accepting, the connection table
 * (id -> connection, so late completions never follow a stale pointer) and
 * graceful shutdown.
 *
 * Connection ids are (generation << 32 | table index). Lookup is one array
 * read plus an id compare; a reused index has a new generation, so a slot of
 * a closed connection never reaches its successor. */
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <openssl/ssl.h>

#include "broker/net/clock.h"
#include "broker/net/net_int.h"
#include "broker/net/tls.h"

int64_t bk__net_mono_ms(void) { return (int64_t)(bk_net_mono_ns() / 1000000u); }

const char *bk_net_err_str(int status) {
    switch (status) {
    case BK_NET_OK: return "ok";
#define BK_STATUS_CASE_(name, value, text) case name: return text;
    BK_NET_STATUS_LIST(BK_STATUS_CASE_)
#undef BK_STATUS_CASE_
    default: return "unknown status";
    }
}

void bk_net_config_default(bk_net_config_t *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->request_max_bytes = BK_NET_REQUEST_MAX_BYTES_DEFAULT;
    cfg->inflight_max = BK_NET_INFLIGHT_MAX_DEFAULT;
    cfg->output_max_bytes = BK_NET_OUTPUT_MAX_BYTES_DEFAULT;
    cfg->conns_max = BK_NET_CONNS_MAX_DEFAULT;
    cfg->queued_bytes_max = BK_NET_QUEUED_BYTES_MAX_DEFAULT;
    cfg->idle_ms = BK_NET_IDLE_MS_DEFAULT;
    cfg->write_stall_ms = BK_NET_WRITE_STALL_MS_DEFAULT;
    cfg->loops = 1;
}

static bool config_valid(const bk_net_config_t *cfg) {
    return cfg->on_frame && (!cfg->on_prepare || cfg->prepared_free) && cfg->request_max_bytes >= 0 && cfg->inflight_max >= 1 &&
           cfg->inflight_max <= BK_NET_INFLIGHT_MAX_LIMIT && cfg->output_max_bytes >= 1 &&
           cfg->conns_max >= 1 && cfg->queued_bytes_max >= -1 && cfg->loops <= BK_NET_LOOPS_MAX;
}

static void stop_cb(evutil_socket_t fd, short what, void *arg);
static void accept_resume_cb(evutil_socket_t fd, short what, void *arg);

bk_net_t *bk_net_new(struct event_base *base, const bk_net_config_t *cfg) {
    assert(base && cfg);
    if (!config_valid(cfg)) return NULL;
    bk_net_t *net = calloc(1, sizeof *net);
    if (!net) return NULL;
    net->base = base;
    net->cfg = *cfg;
    if (net->cfg.loops == 0) net->cfg.loops = 1;
    if (pthread_mutex_init(&net->log_mu, NULL) != 0) {
        free(net);
        return NULL;
    }
    net->conns = calloc(cfg->conns_max, sizeof *net->conns);
    net->generation = calloc(cfg->conns_max, sizeof *net->generation);
    net->free_idx = calloc(cfg->conns_max, sizeof *net->free_idx);
    net->deadline_ev = evtimer_new(base, stop_cb, net);
    net->accept_ev = evtimer_new(base, accept_resume_cb, net);
    bk_net_ratelog_init(&net->close_log, BK_NET_RATELOG_BURST_DEFAULT, BK_NET_RATELOG_WINDOW_MS_DEFAULT);
    net->per_ip_max = INT64_MAX;
    net->accept_backoff_ms = BK_NET_ACCEPT_BACKOFF_MIN_MS;
    if (!net->conns || !net->generation || !net->free_idx || !net->deadline_ev || !net->accept_ev ||
        bk__loops_new(net) != 0 || bk__loops_start(net) != 0) {
        bk_net_free(net);
        return NULL;
    }
    /* pop order = 0, 1, 2, ... */
    for (uint32_t i = 0; i < cfg->conns_max; i++) net->free_idx[i] = cfg->conns_max - 1 - i;
    net->free_n = cfg->conns_max;
    net->conns_limit = cfg->conns_max;
    net->loop_next = net->cfg.loops > 1 ? 1 : 0;
    return net;
}

void bk_net_free(bk_net_t *net) {
    if (!net) return;
    for (uint32_t i = 0; i < net->listeners_n; i++) evconnlistener_free(net->lst[i].ev);
    net->listeners_n = 0;
    /* the network loops first: their sockets close there, and what they
     * posted (frames, CLOSED) is taken here after the join */
    bk__loops_free(net);
    for (uint32_t i = 0; net->conns && i < net->cfg.conns_max; i++) {
        bk_net_conn_t *c = net->conns[i];
        if (!c) continue;
        if (c->session) {
            bk__session_free(c);
            net->conns[i] = NULL;
            continue;
        }
        bk_net_conn_close(c);
        bk__net_conn_free(net, c);
    }
    if (net->deadline_ev) event_free(net->deadline_ev);
    if (net->accept_ev) event_free(net->accept_ev);
    if (net->loops) {
        net_loop_t *l0 = &net->loops[0];
        if (l0->sweep_ev) event_free(l0->sweep_ev);
        bk__conn_in_pool_free(l0);
        if (l0->tls_pipe[0] >= 0) {
            close(l0->tls_pipe[0]);
            close(l0->tls_pipe[1]);
        }
        free(net->loops);
    }
    bk__pool_net_fini(net);
    pthread_mutex_destroy(&net->log_mu);
    free(net->conns);
    free(net->generation);
    free(net->free_idx);
    free(net);
}

void bk__net_conn_free(bk_net_t *net, bk_net_conn_t *c) {
    if (c->loop->remote) {
        /* a network loop's socket: the table entry is the session's,
         * released when CLOSED reaches the state loop */
        bk__loop_conn_gone(c);
        bk__conn_free(c);
        return;
    }
    assert(net->conns[c->index] == c);
    assert(net->free_n < net->cfg.conns_max);
    net->conns[c->index] = NULL;
    net->free_idx[net->free_n++] = c->index;
    bk__conn_free(c);
}

void bk__net_conn_closed(bk_net_t *net) {
    /* finish the shutdown from the loop, not from inside a connection */
    if (net->stopping && net->stats.conns_open == 0) event_active(net->deadline_ev, EV_TIMEOUT, 1);
}

bk_net_conn_t *bk_net_conn(bk_net_t *net, uint64_t conn_id) {
    uint32_t idx = (uint32_t)conn_id;
    if (idx >= net->cfg.conns_max) return NULL;
    bk_net_conn_t *c = net->conns[idx];
    if (!c || c->id != conn_id || !bk__conn_is_open(c)) return NULL;
    return c;
}

int bk_net_respond(bk_net_t *net, bk_net_slot_t slot, struct evbuffer *body) {
    assert(body);
    bk_net_conn_t *c = bk_net_conn(net, slot.conn_id);
    if (!c) {
        evbuffer_free(body);
        return BK_NET_ERR_GONE;
    }
    return bk_net_conn_respond(c, slot, body);
}

int bk_net_respond_none(bk_net_t *net, bk_net_slot_t slot) {
    bk_net_conn_t *c = bk_net_conn(net, slot.conn_id);
    if (!c) return BK_NET_ERR_GONE;
    return bk_net_conn_respond_none(c, slot);
}

void bk_net_stats(const bk_net_t *net, bk_net_stats_t *out) {
    *out = net->stats;
    for (uint32_t i = 0; i < net->cfg.loops; i++) {
        const net_loop_stats_t *st = &net->loops[i].stats;
        out->conns_bad_frame += LST_GET(st, conns_bad_frame);
        out->requests_inflight += LST_GET(st, requests_inflight);
        out->requests_total += LST_GET(st, requests_total);
        out->bytes_in += LST_GET(st, bytes_in);
        out->bytes_out += LST_GET(st, bytes_out);
        out->frame_copy_bytes += LST_GET(st, frame_copy_bytes);
        out->conns_idle_closed += LST_GET(st, conns_idle_closed);
        out->conns_stall_closed += LST_GET(st, conns_stall_closed);
        out->mem_waits += LST_GET(st, mem_waits);
        out->mem_waiting += LST_GET(st, mem_waiting);
        out->pool_allocs += LST_GET(st, pool_allocs);
    }
    out->queued_bytes = __atomic_load_n(&net->queued_bytes, __ATOMIC_RELAXED);
    out->queued_bytes_peak = __atomic_load_n(&net->queued_bytes_peak, __ATOMIC_RELAXED);
    bk_net_t *mnet = (bk_net_t *)net;   /* the mutex, not the net, changes */
    if (pthread_mutex_lock(&mnet->log_mu) != 0) assert(!"log mutex");
    out->log_suppressed = net->close_log.dropped_total;
    if (pthread_mutex_unlock(&mnet->log_mu) != 0) assert(!"log mutex");
}

uint32_t bk_net_loops(const bk_net_t *net) { return net->cfg.loops; }

void bk_net_loop_stats(const bk_net_t *net, uint32_t i, bk_net_loop_stats_t *out) {
    assert(i < net->cfg.loops);
    const net_loop_t *l = &net->loops[i];
    out->conns_open = l->assigned;
    out->frames_posted = LST_GET(&l->stats, frames_posted);
    out->bytes_in = LST_GET(&l->stats, bytes_in);
    out->bytes_out = LST_GET(&l->stats, bytes_out);
}

void bk_net_set_conns_limit(bk_net_t *net, int64_t limit) {
    if (limit < 0) limit = 0;
    net->conns_limit = limit > (int64_t)net->cfg.conns_max ? net->cfg.conns_max : (uint32_t)limit;
}

/* The address of an accepted peer as raw bytes (4 or 16; 0 = unknown). */
static uint8_t sa_addr(const struct sockaddr *sa, int salen, uint8_t out[16]) {
    if (sa->sa_family == AF_INET && salen >= (int)sizeof(struct sockaddr_in)) {
        memcpy(out, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        return 4;
    }
    if (sa->sa_family == AF_INET6 && salen >= (int)sizeof(struct sockaddr_in6)) {
        memcpy(out, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
        return 16;
    }
    return 0;
}

/* Connections allowed from this address (overrides first). */
static int64_t ip_limit(const bk_net_t *net, const uint8_t *addr, uint8_t len) {
    for (uint32_t i = 0; i < net->ip_over_n; i++)
        if (net->ip_over[i].addr_len == len && memcmp(net->ip_over[i].addr, addr, len) == 0) return net->ip_over[i].max;
    return net->per_ip_max;
}

/* Open connections from this address: a scan of the table, done only when
 * a limit below the node's could apply (O(table) per accept then; a hash
 * by address is the optimisation not taken while tables are 10,000). */
static int64_t ip_count(const bk_net_t *net, const uint8_t *addr, uint8_t len) {
    int64_t n = 0;
    for (uint32_t i = 0; i < net->cfg.conns_max; i++) {
        const bk_net_conn_t *c = net->conns[i];
        if (c && !c->closed && c->addr_len == len && memcmp(c->addr, addr, len) == 0) n++;
    }
    return n;
}

/* The loop with the fewest connections, round robin among equals (the
 * state loop's own counts like the others; the first goes to loop 1, so
 * with few connections they are on network loops, off the state loop). */
static net_loop_t *pick_loop(bk_net_t *net) {
    uint32_t n = net->cfg.loops, best = net->loop_next % n;
    for (uint32_t k = 1; k < n; k++) {
        uint32_t i = (net->loop_next + k) % n;
        if (net->loops[i].assigned < net->loops[best].assigned) best = i;
    }
    net->loop_next = best + 1;
    return &net->loops[best];
}

static void accept_cb(struct evconnlistener *ev, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg) {
    net_listener_t *l = arg;
    bk_net_t *net = l->net;
    net->accept_backoff_ms = BK_NET_ACCEPT_BACKOFF_MIN_MS; /* accepting works again */
    if (net->stopping || net->free_n == 0 || net->stats.conns_open >= net->conns_limit) {
        net->stats.conns_rejected++;
        if (!net->stopping)
            bk_net_log_close(net, "max.connections", "net: refusing a connection: %llu open, max.connections %u",
                             (unsigned long long)net->stats.conns_open, net->conns_limit);
        evutil_closesocket(fd);
        return;
    }
    uint8_t addr[16];
    uint8_t alen = sa_addr(sa, salen, addr);
    int64_t limit = alen ? ip_limit(net, addr, alen) : INT64_MAX;
    if (limit < (int64_t)net->conns_limit && ip_count(net, addr, alen) >= limit) {
        net->stats.conns_rejected++;
        net->stats.conns_rejected_ip++;
        char host[48] = "?";
        evutil_inet_ntop(alen == 4 ? AF_INET : AF_INET6, addr, host, sizeof host);
        bk_net_log_close(net, "max.connections.per.ip", "net: refusing a connection from %s: %lld open from it "
                         "(max.connections.per.ip / overrides)", host, (long long)limit);
        evutil_closesocket(fd);
        return;
    }
    int one = 1;
    /* Responses are whole frames written at once; do not let Nagle hold them. */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    net_loop_t *loop = pick_loop(net);
    /* TLS: the SSL is made where the socket lives. A network loop gets a
     * reference to the listener's current context (a reload between the
     * accept and the handshake is seen as on loop 0) and makes the SSL
     * itself: SSL_new's allocations stay off the state loop. */
    SSL *ssl = NULL;
    SSL_CTX *ssl_ctx = NULL;
    if (l->tls && loop->remote) {
        ssl_ctx = bk_net_tls_ctx(l->tls);
        if (SSL_CTX_up_ref(ssl_ctx) != 1) ssl_ctx = NULL;
    } else if (l->tls) {
        ssl = bk__tls_ssl_new(bk_net_tls_ctx(l->tls));
    }
    if (l->tls && !ssl && !ssl_ctx) {
        net->stats.conns_rejected++;
        evutil_closesocket(fd);
        return;
    }
    bk_net_conn_t *c = loop->remote ? bk__session_new(net, loop, l, sa, salen)
                                    : bk__conn_new(loop, l, fd, sa, salen, ssl); /* closes fd on failure */
    if (!c) {
        if (loop->remote) {
            if (ssl_ctx) SSL_CTX_free(ssl_ctx);
            evutil_closesocket(fd);
        }
        net->stats.conns_rejected++;
        return;
    }
    uint32_t idx = net->free_idx[--net->free_n];
    assert(net->conns[idx] == NULL);
    c->index = idx;
    c->id = (uint64_t)++net->generation[idx] << 32 | idx;
    net->conns[idx] = c;
    net->stats.conns_open++;
    net->stats.conns_total++;
    loop->assigned++;
    if (loop->remote) bk__loop_hand_off(loop, c, l, fd, sa, salen, ssl_ctx);
}

static void accept_resume_cb(evutil_socket_t fd, short what, void *arg) {
    bk_net_t *net = arg;
    if (!net->accept_paused) return;
    net->accept_paused = false;
    for (uint32_t i = 0; i < net->listeners_n; i++)
        if (evconnlistener_enable(net->lst[i].ev) != 0)
            fprintf(stderr, "skiff: net: cannot resume accepting on a listener\n");
}

/* accept(2) failed (EMFILE, ENFILE, ENOBUFS, ...): the pending connection
 * stays in the backlog and the listening socket stays readable, so going
 * on would spin the loop at 100% CPU. Count it, stop accepting for a
 * back-off that doubles while accepts keep failing (50 ms .. 1 s), then
 * try again. */
static void accept_error_cb(struct evconnlistener *ev, void *arg) {
    bk_net_t *net = ((net_listener_t *)arg)->net;
    int err = EVUTIL_SOCKET_ERROR();
    net->stats.accept_failures++;
    int64_t now = bk__net_mono_ms();
    if (now <= 0) now = 1; /* 0 means never */
    net->stats.accept_fail_last_ms = now;
    if (err == EMFILE || err == ENFILE) {
        net->stats.accept_emfile++;
        net->accept_emfile_last_ms = now;
    }
    bk_net_log_close(net, "accept failed", "net: accept failed: %s; not accepting for %lld ms",
                     evutil_socket_error_to_string(err), (long long)net->accept_backoff_ms);
    if (net->accept_paused || net->stopping) return;
    net->accept_paused = true;
    for (uint32_t i = 0; i < net->listeners_n; i++) (void)evconnlistener_disable(net->lst[i].ev);
    struct timeval tv = { .tv_sec = net->accept_backoff_ms / 1000, .tv_usec = (net->accept_backoff_ms % 1000) * 1000 };
    if (evtimer_add(net->accept_ev, &tv) != 0) accept_resume_cb(-1, 0, net);
    net->accept_backoff_ms *= 2;
    if (net->accept_backoff_ms > BK_NET_ACCEPT_BACKOFF_MAX_MS) net->accept_backoff_ms = BK_NET_ACCEPT_BACKOFF_MAX_MS;
}

int bk_net_set_ip_limits(bk_net_t *net, int64_t per_ip, const bk_net_ip_limit_t *v, size_t n) {
    if (n > BK_NET_IP_OVERRIDES_MAX) return BK_NET_ERR_INVALID;
    for (size_t i = 0; i < n; i++)
        if (v[i].addr_len != 4 && v[i].addr_len != 16) return BK_NET_ERR_INVALID;
    for (size_t i = 0; i < n; i++) {
        memcpy(net->ip_over[i].addr, v[i].addr, sizeof v[i].addr);
        net->ip_over[i].addr_len = v[i].addr_len;
        net->ip_over[i].max = v[i].max < 0 ? 0 : v[i].max;
    }
    net->ip_over_n = (uint32_t)n;
    net->per_ip_max = per_ip < 0 ? 0 : per_ip;
    return BK_NET_OK;
}

int bk_net_listen(bk_net_t *net, const char *host, uint16_t port, uint16_t *bound_port) {
    bk_net_listener_config_t lc = { .name = "PLAINTEXT", .host = host, .port = port,
                                    .security = BK_NET_SEC_PLAINTEXT, .tls = NULL };
    return bk_net_listen_on(net, &lc, bound_port);
}

int bk_net_listen_on(bk_net_t *net, const bk_net_listener_config_t *lc, uint16_t *bound_port) {
    if (net->stopping) return BK_NET_ERR_STOPPED;
    if (net->listeners_n == BK_NET_LISTENERS_MAX) return BK_NET_ERR_FULL;
    bool wants_tls = lc->security == BK_NET_SEC_SSL || lc->security == BK_NET_SEC_SASL_SSL;
    if (!lc->name || strlen(lc->name) > BK_NET_LISTENER_NAME_MAX || wants_tls != (lc->tls != NULL))
        return BK_NET_ERR_INVALID;
    /* one pipe per loop for TLS output (conn_tls.c), made before the
     * loop's thread can use it (it reads tls_pipe only for connections
     * of a TLS listener, handed to it after this) */
    for (uint32_t i = 0; wants_tls && i < net->cfg.loops; i++) {
        net_loop_t *lp = &net->loops[i];
        if (lp->tls_pipe[0] >= 0) continue;
        int p[2];
        if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) return BK_NET_ERR_SYS;
        /* the pipe holds one chunk of TLS output (conn_tls.c); Linux's
         * default of 64 KiB is the chunk, asked for in case it is not */
        int cap = fcntl(p[1], F_SETPIPE_SZ, BK_NET_TLS_CHUNK);
        if (cap < 0) cap = fcntl(p[1], F_GETPIPE_SZ);
        lp->tls_pipe_cap = cap <= 0 ? 4096 : cap > BK_NET_TLS_CHUNK ? BK_NET_TLS_CHUNK : cap;
        lp->tls_pipe[0] = p[0];
        lp->tls_pipe[1] = p[1];
    }
    const char *host = lc->host;
    uint16_t port = lc->port;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    int sslen;
    struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    /* numeric literals only: name resolution would block the loop */
    if (evutil_inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons(port);
        sslen = (int)sizeof *in4;
    } else if (evutil_inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
        sslen = (int)sizeof *in6;
    } else {
        return BK_NET_ERR_INVALID;
    }
    /* IPV6ONLY: "::" and "0.0.0.0" on one port are two listeners, not a clash */
    unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE |
                     (ss.ss_family == AF_INET6 ? LEV_OPT_BIND_IPV6ONLY : 0);
    net_listener_t *nl = &net->lst[net->listeners_n];
    memset(nl, 0, sizeof *nl);
    nl->net = net;
    snprintf(nl->name, sizeof nl->name, "%s", lc->name);
    nl->security = lc->security;
    nl->tls = lc->tls;
    struct evconnlistener *l = evconnlistener_new_bind(net->base, accept_cb, nl, flags,
                                                       BK_NET_BACKLOG, (struct sockaddr *)&ss, sslen);
    if (!l) return BK_NET_ERR_SYS;
    evconnlistener_set_error_cb(l, accept_error_cb);
    if (bound_port) {
        struct sockaddr_storage got;
        socklen_t gotlen = sizeof got;
        if (getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&got, &gotlen) != 0) {
            evconnlistener_free(l);
            return BK_NET_ERR_SYS;
        }
        *bound_port = got.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&got)->sin6_port)
                                                : ntohs(((struct sockaddr_in *)&got)->sin_port);
    }
    nl->ev = l;
    net->listeners_n++;
    return BK_NET_OK;
}

/* Deadline reached or every connection gone: close the rest, report once. */
static void stop_cb(evutil_socket_t fd, short what, void *arg) {
    bk_net_t *net = arg;
    if (!net->stopped_fn) return;
    event_del(net->deadline_ev);
    for (uint32_t i = 0; i < net->cfg.conns_max; i++) {
        bk_net_conn_t *c = net->conns[i];
        if (c && bk__conn_is_open(c)) {
            fprintf(stderr, "skiff: net: shutdown deadline: closing connection %s with requests "
                    "in flight\n", c->peer);
            bk_net_conn_close(c);
        }
    }
    bk__loops_flush(net);   /* stopped_fn may stop the state loop before its flush */
    bk_net_stopped_fn fn = net->stopped_fn;
    net->stopped_fn = NULL;
    fn(net, net->stopped_arg);
}

int bk_net_shutdown(bk_net_t *net, uint32_t deadline_ms, bk_net_stopped_fn done, void *arg) {
    assert(done);
    if (net->stopping) return BK_NET_ERR_STOPPED;
    net->stopping = true;
    net->stopped_fn = done;
    net->stopped_arg = arg;
    for (uint32_t i = 0; i < net->listeners_n; i++) evconnlistener_free(net->lst[i].ev);
    net->listeners_n = 0;
    net->accept_paused = false;
    event_del(net->accept_ev);
    for (uint32_t i = 0; i < net->cfg.conns_max; i++) {
        bk_net_conn_t *c = net->conns[i];
        if (c && bk__conn_is_open(c)) bk_net_conn_close_after_flush(c);
    }
    struct timeval tv = { .tv_sec = deadline_ms / 1000, .tv_usec = (deadline_ms % 1000) * 1000 };
    evtimer_add(net->deadline_ev, &tv);
    if (net->stats.conns_open == 0) event_active(net->deadline_ev, EV_TIMEOUT, 1);
    return BK_NET_OK;
}
