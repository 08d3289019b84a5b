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
#include <sys/socket.h>

#include <event2/buffer.h>

#include "broker/net/net_int.h"

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
}

static bool config_valid(const bk_net_config_t *cfg) {
    return cfg->on_frame && cfg->request_max_bytes >= 0 && cfg->inflight_max >= 1 &&
           cfg->inflight_max <= BK_NET_INFLIGHT_MAX_LIMIT && cfg->output_max_bytes >= 1 &&
           cfg->conns_max >= 1;
}

static void stop_cb(evutil_socket_t fd, short what, void *arg);

bk_net_t *bk_net_new(struct event_base *base, const bk_net_config_t *cfg) {
    assert(base && cfg);
    if (!config_valid(cfg)) return NULL;
    bk_net_t *net = calloc(1, sizeof *net);
    if (!net) return NULL;
    net->base = base;
    net->cfg = *cfg;
    net->conns = calloc(cfg->conns_max, sizeof *net->conns);
    net->generation = calloc(cfg->conns_max, sizeof *net->generation);
    net->free_idx = calloc(cfg->conns_max, sizeof *net->free_idx);
    net->deadline_ev = evtimer_new(base, stop_cb, net);
    if (!net->conns || !net->generation || !net->free_idx || !net->deadline_ev) {
        bk_net_free(net);
        return NULL;
    }
    /* pop order = 0, 1, 2, ... */
    for (uint32_t i = 0; i < cfg->conns_max; i++) net->free_idx[i] = cfg->conns_max - 1 - i;
    net->free_n = cfg->conns_max;
    net->conns_limit = cfg->conns_max;
    return net;
}

void bk_net_free(bk_net_t *net) {
    if (!net) return;
    for (uint32_t i = 0; i < net->listeners_n; i++) evconnlistener_free(net->listeners[i]);
    net->listeners_n = 0;
    for (uint32_t i = 0; net->conns && i < net->cfg.conns_max; i++) {
        bk_net_conn_t *c = net->conns[i];
        if (!c) continue;
        bk_net_conn_close(c);
        bk__net_conn_free(net, c);
    }
    if (net->deadline_ev) event_free(net->deadline_ev);
    bk__conn_in_pool_free(net);
    free(net->conns);
    free(net->generation);
    free(net->free_idx);
    free(net);
}

void bk__net_conn_free(bk_net_t *net, bk_net_conn_t *c) {
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

void bk_net_stats(const bk_net_t *net, bk_net_stats_t *out) { *out = net->stats; }

void bk_net_set_conns_limit(bk_net_t *net, int64_t limit) {
    if (limit < 0) limit = 0;
    net->conns_limit = limit > (int64_t)net->cfg.conns_max ? net->cfg.conns_max : (uint32_t)limit;
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg) {
    bk_net_t *net = arg;
    if (net->stopping || net->free_n == 0 || net->stats.conns_open >= net->conns_limit) {
        net->stats.conns_rejected++;
        evutil_closesocket(fd);
        return;
    }
    int one = 1;
    /* Responses are whole frames written at once; do not let Nagle hold them. */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    bk_net_conn_t *c = bk__conn_new(net, fd, sa, salen); /* closes fd on failure */
    if (!c) {
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
}

static void accept_error_cb(struct evconnlistener *l, void *arg) {
    /* EMFILE and friends: libevent keeps the listener; say so and carry on. */
    fprintf(stderr, "skiff: net: accept failed: %s; still listening\n",
            evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
}

int bk_net_listen(bk_net_t *net, const char *host, uint16_t port, uint16_t *bound_port) {
    if (net->stopping) return BK_NET_ERR_STOPPED;
    if (net->listeners_n == BK_NET_LISTENERS_MAX) return BK_NET_ERR_FULL;
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
    struct evconnlistener *l = evconnlistener_new_bind(net->base, accept_cb, net, flags,
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
    net->listeners[net->listeners_n++] = l;
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
    for (uint32_t i = 0; i < net->listeners_n; i++) evconnlistener_free(net->listeners[i]);
    net->listeners_n = 0;
    for (uint32_t i = 0; i < net->cfg.conns_max; i++) {
        bk_net_conn_t *c = net->conns[i];
        if (c && bk__conn_is_open(c)) bk_net_conn_close_after_flush(c);
    }
    struct timeval tv = { .tv_sec = deadline_ms / 1000, .tv_usec = (deadline_ms % 1000) * 1000 };
    evtimer_add(net->deadline_ev, &tv);
    if (net->stats.conns_open == 0) event_active(net->deadline_ev, EV_TIMEOUT, 1);
    return BK_NET_OK;
}
