/* cl_conn.c — blocking broker connection: connect with deadline, frame I/O,
 * ApiVersions negotiation. */
#include "clients/cl_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clients/cl_sasl.h"
#include "kp_msgs.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_header.h"

int cl_parse_hostport(const char *s, char *host, size_t host_bytes, int *port, cl_err_t *e) {
    const char *colon = NULL, *h = s;
    size_t hlen;
    if (s[0] == '[') {
        const char *rb = strchr(s, ']');
        if (!rb || rb[1] != ':') return cl_err_set(e, CL_E_USAGE, "bad address '%s' (want [v6]:port)", s);
        h = s + 1;
        hlen = (size_t)(rb - h);
        colon = rb + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon) return cl_err_set(e, CL_E_USAGE, "bad address '%s' (want host:port)", s);
        hlen = (size_t)(colon - s);
    }
    if (hlen == 0 || hlen >= host_bytes) return cl_err_set(e, CL_E_USAGE, "bad host in address '%s'", s);
    char *end = NULL;
    errno = 0;
    long p = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end != '\0' || p < 1 || p > 65535)
        return cl_err_set(e, CL_E_USAGE, "bad port in address '%s'", s);
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (int)p;
    return CL_OK;
}

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_deadline(int fd, int timeout_ms) {
    struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

void cl_conn_set_timeout(cl_conn_t *c, int timeout_ms) {
    c->timeout_ms = timeout_ms;
    if (c->fd >= 0) set_deadline(c->fd, timeout_ms);
}

static int connect_deadline(const struct addrinfo *ai, int timeout_ms) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) return -1;
    int fl = fcntl(fd, F_GETFL, 0);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) goto fail;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        if (errno != EINPROGRESS) goto fail;
        struct pollfd pfd = { .fd = fd, .events = POLLOUT };
        int n = poll(&pfd, 1, timeout_ms);
        if (n == 0) errno = ETIMEDOUT;
        if (n <= 0) goto fail;
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0) goto fail;
        if (soerr) { errno = soerr; goto fail; }
    }
    if (fcntl(fd, F_SETFL, fl) < 0) goto fail;
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    set_deadline(fd, timeout_ms);
    return fd;
fail: {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
}

static int negotiate(cl_conn_t *c, cl_err_t *e) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)4 << 20);
    kp_api_versions_request_t req;
    kp_api_versions_request_init(&req);
    void *body = NULL;
    /* v0: every broker answers it, and its response is never flexible */
    for (int i = 0; i < CL_API_KEYS_MAX; i++) c->ver_max[i] = -1;
    c->ver_max[KP_API_API_VERSIONS] = 0;
    int rc = cl_conn_call(c, KP_API_API_VERSIONS, 0, &req, false, &body, NULL, &a, e);
    if (rc == CL_OK) {
        const kp_api_versions_response_t *resp = body;
        if (resp->error_code != 0) {
            rc = cl_err_kafka(e, resp->error_code, "ApiVersions from %s:%d", c->host, c->port);
        } else {
            for (int32_t i = 0; i < resp->api_keys.count; i++) {
                const kp_api_versions_response_api_version_t *v = &resp->api_keys.items[i];
                if (v->api_key >= 0 && v->api_key < CL_API_KEYS_MAX && v->max_version >= v->min_version)
                    c->ver_max[v->api_key] = v->max_version;
            }
        }
    }
    kp_arena_free(&a);
    return rc;
}

int cl_conn_open_raw(cl_conn_t *c, const char *host, int port, int timeout_ms, cl_err_t *e) {
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->node_id = -1;
    c->port = port;
    c->timeout_ms = timeout_ms;
    c->next_corr_id = 1;
    snprintf(c->host, sizeof c->host, "%s", host);
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    int gai = getaddrinfo(host, portstr, &hints, &res);
    if (gai != 0) return cl_err_set(e, CL_E_CONNECT, "cannot resolve %s:%d: %s", host, port, gai_strerror(gai));
    int last_errno = 0;
    for (struct addrinfo *ai = res; ai && c->fd < 0; ai = ai->ai_next) {
        c->fd = connect_deadline(ai, timeout_ms);
        if (c->fd < 0) last_errno = errno;
    }
    freeaddrinfo(res);
    if (c->fd < 0)
        return cl_err_set(e, CL_E_CONNECT, "cannot connect to %s:%d: %s", host, port, strerror(last_errno));
    return CL_OK;
}

int cl_conn_open_raw_tls(cl_conn_t *c, const char *host, int port, int timeout_ms, cl_tls_t *tls, cl_err_t *e) {
    int rc = cl_conn_open_raw(c, host, port, timeout_ms, e);
    if (rc != CL_OK || !tls) return rc;
    rc = cl_tls_connect(tls, c->fd, host, port, &c->tls, e);
    if (rc != CL_OK) cl_conn_close(c);
    return rc;
}

int cl_conn_open_sec(cl_conn_t *c, const char *host, int port, int timeout_ms, const char *client_id,
                     const cl_sec_t *sec, cl_tls_t *tls, cl_err_t *e) {
    if (cl_sec_tls(sec) && !tls)
        return cl_err_set(e, CL_E_USAGE, "%s needs a TLS context", cl_sec_proto_name(sec->protocol));
    int rc = cl_conn_open_raw_tls(c, host, port, timeout_ms, cl_sec_tls(sec) ? tls : NULL, e);
    if (rc != CL_OK) return rc;
    c->client_id = client_id;
    rc = negotiate(c, e);
    /* Kafka allows ApiVersions before SASL (KIP-35/KIP-43): it tells which
     * SaslHandshake / SaslAuthenticate versions the broker speaks */
    if (rc == CL_OK && cl_sec_sasl(sec)) rc = cl_sasl_login(c, sec, e);
    if (rc != CL_OK) cl_conn_close(c);
    return rc;
}

int cl_conn_open(cl_conn_t *c, const char *host, int port, int timeout_ms, const char *client_id,
                 cl_err_t *e) {
    return cl_conn_open_sec(c, host, port, timeout_ms, client_id, NULL, NULL, e);
}

void cl_conn_close(cl_conn_t *c) {
    if (c->tls) cl_tls_close(c->tls);
    c->tls = NULL;
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
}

int16_t cl_conn_version(const cl_conn_t *c, int16_t api_key, int16_t our_max) {
    if (api_key < 0 || api_key >= CL_API_KEYS_MAX) return -1;
    int16_t theirs = c->ver_max[api_key];
    if (theirs < 0) return -1;
    const kp_api_info_t *api = kp_api_info(api_key);
    if (!api) return -1;
    int16_t v = theirs < our_max ? theirs : our_max;
    if (v > api->max_version) v = api->max_version;
    return v >= api->min_version ? v : -1;
}

/* A socket failure during a call: the connection is closed and the error
 * names the API, the address and what happened. */
static int io_fail(cl_conn_t *c, cl_err_t *e, const char *what, int err) {
    int st = (err == EAGAIN || err == EWOULDBLOCK || err == ETIMEDOUT) ? CL_E_TIMEOUT : CL_E_NETWORK;
    const char *tls_why = c->tls ? cl_tls_last_error(c->tls) : "";
    if (st == CL_E_TIMEOUT) cl_err_set(e, st, "%s %s:%d: timed out", what, c->host, c->port);
    else if (err) cl_err_set(e, st, "%s %s:%d: %s", what, c->host, c->port, strerror(err));
    else if (tls_why[0]) cl_err_set(e, st, "%s %s:%d: TLS: %s", what, c->host, c->port, tls_why);
    else if (!c->tls && !c->sasl_sec && c->answered <= 1)
        /* closed right after ApiVersions: a SASL listener closes on
         * anything but ApiVersions/Sasl* before authentication */
        cl_err_set(e, st, "%s %s:%d: connection closed by the broker (a SASL or TLS listener? see --command-config)",
                   what, c->host, c->port);
    else cl_err_set(e, st, "%s %s:%d: connection closed by the broker", what, c->host, c->port);
    cl_conn_close(c);
    return st;
}

/* One send or receive on the socket or through TLS; -1 with *err. */
static ssize_t io_send(cl_conn_t *c, const uint8_t *p, size_t n, int *err) {
    if (c->tls) return cl_tls_send(c->tls, p, n, err);
    ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
    if (k < 0) *err = errno;
    return k;
}

static ssize_t io_recv(cl_conn_t *c, uint8_t *p, size_t n, int *err) {
    if (c->tls) return cl_tls_recv(c->tls, p, n, err);
    ssize_t k = recv(c->fd, p, n, 0);
    if (k < 0) *err = errno;
    return k;
}

int cl_conn_send_all(cl_conn_t *c, const char *what, const void *buf, size_t n, cl_err_t *e) {
    const uint8_t *p = buf;
    if (!cl_conn_is_open(c)) return cl_err_set(e, CL_E_CONNECT, "not connected to %s:%d", c->host, c->port);
    while (n > 0) {
        int err = 0;
        ssize_t k = io_send(c, p, n, &err);
        if (k < 0 && err == EINTR) continue;
        if (k <= 0) {
            if (c->tls && err != EAGAIN) {
                /* the broker may have said why before closing (a TLS alert) */
                cl_tls_read_pending_alert(c->tls, c->fd);
                if (cl_tls_last_error(c->tls)[0]) err = 0;
            }
            return io_fail(c, e, what, k < 0 ? err : 0);
        }
        p += k;
        n -= (size_t)k;
    }
    return CL_OK;
}

int cl_conn_recv_all(cl_conn_t *c, const char *what, void *buf, size_t n, cl_err_t *e) {
    uint8_t *p = buf;
    if (!cl_conn_is_open(c)) return cl_err_set(e, CL_E_CONNECT, "not connected to %s:%d", c->host, c->port);
    while (n > 0) {
        int err = 0;
        ssize_t k = io_recv(c, p, n, &err);
        if (k < 0 && err == EINTR) continue;
        if (k <= 0) return io_fail(c, e, what, k < 0 ? err : 0);
        p += k;
        n -= (size_t)k;
    }
    return CL_OK;
}

int cl_conn_recv_some(cl_conn_t *c, const char *what, void *buf, size_t n, size_t *got, cl_err_t *e) {
    if (!cl_conn_is_open(c)) return cl_err_set(e, CL_E_CONNECT, "not connected to %s:%d", c->host, c->port);
    for (;;) {
        int err = 0;
        ssize_t k = io_recv(c, buf, n, &err);
        if (k < 0 && err == EINTR) continue;
        if (k < 0) return io_fail(c, e, what, err);
        *got = (size_t)k;
        return CL_OK;
    }
}

static int encode_request(cl_conn_t *c, int16_t api_key, int16_t ver, const void *req, int32_t corr,
                          uint8_t **out, size_t *len, cl_err_t *e) {
    kp_request_header_t h = { .api_key = api_key, .api_version = ver, .correlation_id = corr };
    h.client_id.p = (const uint8_t *)(c->client_id ? c->client_id : "skiffctl");
    h.client_id.len = strlen((const char *)h.client_id.p);
    int rc = kp_request_encode_alloc(&h, req, out, len);
    if (rc == KP_ERR_NOMEM) return cl_err_set(e, CL_E_NOMEM, "out of memory encoding api %d", api_key);
    if (rc != KP_OK) return cl_err_set(e, CL_E_PROTO, "cannot encode api %d v%d (status %d)", api_key, ver, rc);
    return CL_OK;
}

int cl_conn_call(cl_conn_t *c, int16_t api_key, int16_t our_max, const void *req, bool no_response,
                 void **resp, int16_t *version_out, kp_arena_t *a, cl_err_t *e) {
    if (!cl_conn_is_open(c)) return cl_err_set(e, CL_E_CONNECT, "not connected to %s:%d", c->host, c->port);
    if (cl_sasl_reauth_due(c, mono_ms())) {
        /* KIP-368: the broker closes a connection whose session ended;
         * log in again on the same connection before that */
        int rc = cl_sasl_login(c, c->sasl_sec, e);
        if (rc != CL_OK) {
            cl_conn_close(c);
            return rc;
        }
    }
    int16_t ver = cl_conn_version(c, api_key, our_max);
    const kp_api_info_t *api = kp_api_info(api_key);
    if (ver < 0)
        return cl_err_kafka(e, KP_ERROR_UNSUPPORTED_VERSION, "%s:%d does not support %s", c->host, c->port,
                            api ? api->name : "this API");
    if (version_out) *version_out = ver;
    int32_t corr = c->next_corr_id++;
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = encode_request(c, api_key, ver, req, corr, &buf, &len, e);
    if (rc != CL_OK) return rc;
    char what[96];
    snprintf(what, sizeof what, "%s v%d to", api ? api->name : "request", ver);
    rc = cl_conn_send_all(c, what, buf, len, e);
    free(buf);
    if (rc != CL_OK || no_response) return rc;
    uint8_t szb[4];
    snprintf(what, sizeof what, "%s v%d response from", api ? api->name : "request", ver);
    if ((rc = cl_conn_recv_all(c, what, szb, 4, e)) != CL_OK) return rc;
    uint32_t size = kp_load_be32(szb);
    if (size < 4 || size > CL_FRAME_MAX_BYTES) {
        cl_conn_close(c);
        return cl_err_set(e, CL_E_PROTO, "bad response size %u from %s:%d", size, c->host, c->port);
    }
    uint8_t *frame = kp_arena_alloc(a, size);
    if (!frame) return cl_err_set(e, CL_E_NOMEM, "no memory for a %u-byte response", size);
    if ((rc = cl_conn_recv_all(c, what, frame, size, e)) != CL_OK) return rc;
    int32_t got_corr = 0;
    int kr = kp_response_decode(api_key, ver, frame, size, &got_corr, resp, a);
    if (kr != KP_OK) {
        cl_conn_close(c);
        return cl_err_set(e, CL_E_PROTO, "malformed %s v%d response from %s:%d (status %d)",
                          api ? api->name : "?", ver, c->host, c->port, kr);
    }
    if (got_corr != corr) {
        cl_conn_close(c);
        return cl_err_set(e, CL_E_PROTO, "correlation id %d != %d from %s:%d", got_corr, corr, c->host, c->port);
    }
    c->answered++;
    return CL_OK;
}
