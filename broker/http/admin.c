/* Admin HTTP server framework: routing, path parameters, JSON replies.
 * See admin.h for the contract. */
#include "broker/http/admin.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "broker/config/hostport.h"
#include "broker/http/auth_cache_int.h"
#include "broker/http/basic_auth.h"

#define METHOD_MAX 8

typedef struct route {
    char method[METHOD_MAX];
    char *seg[BK_HTTP_SEGMENTS_MAX];    /* literal text or parameter name */
    bool is_param[BK_HTTP_SEGMENTS_MAX];
    size_t nseg;
    size_t nliteral;                     /* ranks matches: more literals win */
    bk_http_fn fn;
    void *ctx;
    bk_http_access_t access;
} route_t;

#define FAIL_LOG_INTERVAL_MS 10000

struct bk_http {
    struct event_base *base;
    struct evhttp *http;
    uint16_t port;
    route_t routes[BK_HTTP_ROUTES_MAX];
    size_t nroutes;
    bk_http_req_t *pending;             /* requests not yet replied */
    struct evconnlistener *listener;    /* evhttp's; re-enabled by bk_http_tick */
    SSL_CTX *tls;                       /* NULL: plain HTTP */
    bool auth_on;
    bk_http_auth_t auth;
    auth_cache_t cache;
    int64_t bucket_ms;                  /* start of the current 1 s check window */
    uint32_t bucket_checks;             /* checks run in it */
    int64_t fail_logged_ms;             /* last failure log line */
    uint64_t fail_suppressed;           /* failures not logged since */
    bk_http_auth_stats_t stats;
};

struct bk_http_req {
    bk_http_t *admin;
    struct evhttp_request *http;
    const route_t *route;
    char method[METHOD_MAX];
    char seg[BK_HTTP_SEGMENTS_MAX][BK_HTTP_SEGMENT_MAX + 1]; /* decoded */
    size_t nseg;
    struct evkeyvalq query;
    struct evbuffer *body;
    bk_http_json_t json;
    char principal[BK_HTTP_PRINCIPAL_MAX + 1]; /* "" = none */
    struct event *delay;                /* pending delayed 401 */
    bk_http_req_t *prev, *next;
};

static const char *method_name(enum evhttp_cmd_type cmd) {
    switch (cmd) {
    case EVHTTP_REQ_GET: return "GET";
    case EVHTTP_REQ_POST: return "POST";
    case EVHTTP_REQ_PUT: return "PUT";
    case EVHTTP_REQ_DELETE: return "DELETE";
    case EVHTTP_REQ_PATCH: return "PATCH";
    case EVHTTP_REQ_HEAD: return "HEAD";
    case EVHTTP_REQ_OPTIONS: return "OPTIONS";
    case EVHTTP_REQ_TRACE: return "TRACE";
    case EVHTTP_REQ_CONNECT: return "CONNECT";
    }
    return "UNKNOWN";
}

static const char *reason(int status) {
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 429: return "Too Many Requests";
    case 404: return "Not Found";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    }
    return "Status";
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Strict percent-decoding of s[0..n) into out (NUL-terminated, at most
 * BK_HTTP_SEGMENT_MAX bytes). '%' must be followed by two hex digits; an
 * encoded NUL is refused because every consumer treats values as C strings.
 * '+' stays '+' (it means space only in form bodies). */
static const char *decode_segment(const char *s, size_t n, char out[BK_HTTP_SEGMENT_MAX + 1]) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= n)
                return "truncated percent-escape in path";
            int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
            if (hi < 0 || lo < 0)
                return "invalid percent-escape in path";
            c = (char)(hi * 16 + lo);
            if (c == '\0')
                return "encoded NUL byte in path";
            i += 2;
        }
        if (o == BK_HTTP_SEGMENT_MAX)
            return "path segment too long";
        out[o++] = c;
    }
    out[o] = '\0';
    return NULL;
}

/* Splits the raw path into decoded segments; "/" has none. Returns NULL or a
 * message for a 400. */
static const char *split_path(bk_http_req_t *req, const char *path) {
    if (path == NULL || path[0] != '/')
        return "request path must start with '/'";
    req->nseg = 0;
    const char *p = path + 1;
    if (*p == '\0')
        return NULL;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (req->nseg == BK_HTTP_SEGMENTS_MAX)
            return "too many path segments";
        const char *why = decode_segment(p, n, req->seg[req->nseg]);
        if (why)
            return why;
        req->nseg++;
        if (slash == NULL)
            return NULL;
        p = slash + 1;
    }
}

static bool route_matches_path(const route_t *rt, const bk_http_req_t *req) {
    if (rt->nseg != req->nseg)
        return false;
    for (size_t i = 0; i < rt->nseg; i++) {
        if (rt->is_param[i]) {
            if (req->seg[i][0] == '\0')
                return false;
        } else if (strcmp(rt->seg[i], req->seg[i]) != 0) {
            return false;
        }
    }
    return true;
}

static void req_free(bk_http_req_t *req) {
    bk_http_t *a = req->admin;
    if (req->prev)
        req->prev->next = req->next;
    else
        a->pending = req->next;
    if (req->next)
        req->next->prev = req->prev;
    evhttp_clear_headers(&req->query);
    if (req->delay)
        event_free(req->delay);
    evbuffer_free(req->body);
    free(req);
}

static void send_and_free(bk_http_req_t *req, int status, const char *content_type) {
    struct evkeyvalq *h = evhttp_request_get_output_headers(req->http);
    evhttp_add_header(h, "Content-Type", content_type);
    /* a handler may have set its own caching (bk_http_set_header) */
    if (evhttp_find_header(h, "Cache-Control") == NULL)
        evhttp_add_header(h, "Cache-Control", "no-store");
    evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
    evhttp_send_reply(req->http, status, reason(status), req->body);
    req_free(req);
}

void bk_http_reply_error(bk_http_req_t *req, int status, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    evbuffer_drain(req->body, evbuffer_get_length(req->body));
    bk_http_json_t j;
    bk_http_json_init(&j, req->body);
    bk_http_json_obj_begin(&j);
    bk_http_json_kv_str(&j, "error", msg);
    bk_http_json_obj_end(&j);
    if (bk_http_json_finish(&j) != KP_OK) {
        /* out of memory even for the error: send an empty 500 */
        evbuffer_drain(req->body, evbuffer_get_length(req->body));
        status = 500;
    }
    send_and_free(req, status, "application/json");
}

void bk_http_reply_json(bk_http_req_t *req, int status) {
    if (bk_http_json_finish(&req->json) != KP_OK) {
        bk_http_reply_error(req, 500, "out of memory building the response");
        return;
    }
    send_and_free(req, status, "application/json");
}

void bk_http_reply_raw(bk_http_req_t *req, int status, const char *content_type) {
    assert(content_type != NULL);
    send_and_free(req, status, content_type);
}

/* ---- authentication ------------------------------------------------------ */

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void reply_unauthorized(bk_http_req_t *req, const char *why) {
    if (req->admin->auth.basic)
        evhttp_add_header(evhttp_request_get_output_headers(req->http), "WWW-Authenticate",
                          "Basic realm=\"skiff\"");
    bk_http_reply_error(req, 401, "%s", why);
}

static void delayed_unauthorized(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    bk_http_req_t *req = arg;
    reply_unauthorized(req, "authentication failed");
}

static void peer_text(const bk_http_req_t *req, char *out, size_t cap) {
    char *addr = NULL;
    uint16_t port = 0;
    struct evhttp_connection *c = evhttp_request_get_connection(req->http);
    if (c)
        evhttp_connection_get_peer(c, &addr, &port);
    snprintf(out, cap, "%s:%u", addr ? addr : "?", (unsigned)port);
}

/* One line per FAIL_LOG_INTERVAL_MS at most: a guessing client must not
 * fill the log. */
static void log_failure(bk_http_t *a, const bk_http_req_t *req, const char *user, int64_t now_ms) {
    if (a->fail_logged_ms != 0 && now_ms - a->fail_logged_ms < FAIL_LOG_INTERVAL_MS) {
        a->fail_suppressed++;
        return;
    }
    char peer[80];
    peer_text(req, peer, sizeof peer);
    fprintf(stderr, "skiff: admin: authentication failed for user '%.64s' from %s (%llu more failures "
            "not logged in the last %d s)\n", user, peer, (unsigned long long)a->fail_suppressed,
            FAIL_LOG_INTERVAL_MS / 1000);
    a->fail_logged_ms = now_ms;
    a->fail_suppressed = 0;
}

/* The principal of a verified client certificate on a TLS connection. */
static bool cert_principal(bk_http_req_t *req) {
    bk_http_t *a = req->admin;
    if (a->tls == NULL || a->auth.cert_principal == NULL)
        return false;
    struct evhttp_connection *c = evhttp_request_get_connection(req->http);
    struct bufferevent *bev = c ? evhttp_connection_get_bufferevent(c) : NULL;
    SSL *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;
    if (ssl == NULL || SSL_get_verify_result(ssl) != X509_V_OK)
        return false;
    X509 *cert = SSL_get1_peer_certificate(ssl);
    if (cert == NULL)
        return false; /* no certificate: X509_V_OK says nothing then */
    X509_free(cert);
    bool ok = a->auth.cert_principal(a->auth.ctx, ssl, req->principal, sizeof req->principal);
    if (!ok)
        req->principal[0] = '\0';
    return ok && req->principal[0] != '\0';
}

/* Basic credentials: KP_OK with req->principal set; otherwise the request
 * has been replied to (or a delayed 401 is armed) and the status says why. */
static int basic_principal(bk_http_req_t *req) {
    bk_http_t *a = req->admin;
    const char *hdr = evhttp_find_header(evhttp_request_get_input_headers(req->http), "Authorization");
    if (!a->auth.basic || hdr == NULL) {
        reply_unauthorized(req, "authentication required");
        return KP_ERR_BAD_VALUE;
    }
    char user[BK_HTTP_BASIC_USER_MAX + 1], pw[BK_HTTP_BASIC_PASSWORD_MAX + 1];
    if (bk_http_basic_parse(hdr, strlen(hdr), user, sizeof user, pw, sizeof pw) != KP_OK) {
        reply_unauthorized(req, "malformed Authorization header (expected Basic credentials)");
        return KP_ERR_BAD_VALUE;
    }
    int64_t now = mono_ms();
    uint8_t d[AUTH_CACHE_DIGEST];
    bool digest_ok = auth_cache_digest(&a->cache, user, pw, d);
    if (digest_ok && auth_cache_hit(&a->cache, d, now)) {
        a->stats.cache_hits++;
    } else {
        if (now - a->bucket_ms >= 1000) {
            a->bucket_ms = now;
            a->bucket_checks = 0;
        }
        if (a->bucket_checks >= BK_HTTP_AUTH_CHECKS_PER_S) {
            a->stats.throttled++;
            evhttp_add_header(evhttp_request_get_output_headers(req->http), "Retry-After", "1");
            bk_http_reply_error(req, 429, "too many credential checks; retry in a second");
            OPENSSL_cleanse(pw, sizeof pw);
            return KP_ERR_BAD_VALUE;
        }
        a->bucket_checks++;
        a->stats.checks++;
        bool ok = a->auth.check(a->auth.ctx, user, pw);
        if (!ok) {
            OPENSSL_cleanse(pw, sizeof pw);
            a->stats.failures++;
            log_failure(a, req, user, now);
            struct timeval tv = { (time_t)(a->auth.fail_delay_ms / 1000),
                                  (suseconds_t)(a->auth.fail_delay_ms % 1000) * 1000 };
            req->delay = evtimer_new(a->base, delayed_unauthorized, req);
            if (req->delay == NULL || evtimer_add(req->delay, &tv) != 0)
                reply_unauthorized(req, "authentication failed");
            return KP_ERR_BAD_VALUE;
        }
        if (digest_ok)
            auth_cache_add(&a->cache, d, now);
    }
    OPENSSL_cleanse(pw, sizeof pw);
    snprintf(req->principal, sizeof req->principal, "User:%s", user);
    return KP_OK;
}

static bk_http_access_t route_access(const route_t *rt) {
    if (rt->access != BK_HTTP_ACCESS_DEFAULT)
        return rt->access;
    return strcmp(rt->method, "GET") == 0 ? BK_HTTP_ACCESS_PRINCIPAL : BK_HTTP_ACCESS_SUPER;
}

/* A browser sends a request another site makes it send (a form POST needs
 * no CORS preflight) to this port, with the Basic credentials it holds for
 * it, or to an unauthenticated loopback port on its machine: cross-site
 * request forgery. Such requests carry Origin; a mutating (non-GET) request
 * whose Origin's host:port is not the Host it was sent to is refused.
 * Clients other than browsers send no Origin. */
static bool cross_origin(const bk_http_req_t *req) {
    struct evkeyvalq *h = evhttp_request_get_input_headers(req->http);
    const char *origin = evhttp_find_header(h, "Origin");
    if (origin == NULL)
        return false;
    const char *host = evhttp_find_header(h, "Host");
    const char *sep = strstr(origin, "://");
    if (host == NULL || sep == NULL)
        return true;
    return strcmp(sep + 3, host) != 0;
}

/* true: route the request (req->principal set when one was needed); false:
 * it has been answered (401/403/429) or a delayed 401 is pending. */
static bool authorize(bk_http_req_t *req, const route_t *rt) {
    bk_http_t *a = req->admin;
    /* with or without authentication: an unauthenticated loopback port is
     * as reachable from a browser on that machine */
    if (strcmp(rt->method, "GET") != 0 && cross_origin(req)) {
        a->stats.forbidden++;
        bk_http_reply_error(req, 403, "cross-origin %s refused (Origin does not match Host)", req->method);
        return false;
    }
    if (!a->auth_on)
        return true;
    bk_http_access_t acc = route_access(rt);
    if (acc == BK_HTTP_ACCESS_OPEN)
        return true;
    if (!cert_principal(req) && basic_principal(req) != KP_OK)
        return false;
    assert(req->principal[0] != '\0');
    if (acc == BK_HTTP_ACCESS_PRINCIPAL && a->auth.may_read && !a->auth.may_read(a->auth.ctx, req->principal)) {
        a->stats.forbidden++;
        bk_http_reply_error(req, 403, "%s may not read the cluster (authorizer: DESCRIBE on the cluster); %s %s",
                            req->principal, req->method, bk_http_path(req));
        return false;
    }
    if (acc == BK_HTTP_ACCESS_SUPER && !a->auth.is_super(a->auth.ctx, req->principal)) {
        a->stats.forbidden++;
        bk_http_reply_error(req, 403, "%s is not a super user (super.users); %s %s needs one",
                            req->principal, req->method, bk_http_path(req));
        return false;
    }
    return true;
}

/* Picks the route for the request, or answers 400/404 itself. */
static void dispatch(bk_http_req_t *req) {
    bk_http_t *a = req->admin;
    const route_t *best = NULL;
    bool path_known = false;
    for (size_t i = 0; i < a->nroutes; i++) {
        const route_t *rt = &a->routes[i];
        if (!route_matches_path(rt, req))
            continue;
        path_known = true;
        if (strcmp(rt->method, req->method) == 0 &&
            (best == NULL || rt->nliteral > best->nliteral))
            best = rt;
    }
    if (best == NULL) {
        if (path_known)
            bk_http_reply_error(req, 400, "method %s not allowed for %s", req->method,
                                 bk_http_path(req));
        else
            bk_http_reply_error(req, 404, "no such endpoint: %s", bk_http_path(req));
        return;
    }
    req->route = best;
    if (!authorize(req, best))
        return; /* replied (or will: a delayed 401) */
    best->fn(req, best->ctx); /* replies now or later (deferred) */
}

static bool on_tls(struct evhttp_request *http) {
    struct evhttp_connection *c = evhttp_request_get_connection(http);
    struct bufferevent *bev = c ? evhttp_connection_get_bufferevent(c) : NULL;
    return bev && bufferevent_openssl_get_ssl(bev) != NULL;
}

static void on_request(struct evhttp_request *http, void *arg) {
    bk_http_t *a = arg;
    bk_http_req_t *req = calloc(1, sizeof *req);
    struct evbuffer *body = evbuffer_new();
    if (req == NULL || body == NULL) {
        free(req);
        if (body)
            evbuffer_free(body);
        evhttp_send_error(http, 503, "out of memory");
        return;
    }
    req->admin = a;
    req->http = http;
    req->body = body;
    req->query.tqh_first = NULL; /* TAILQ_INIT without sys/queue.h */
    req->query.tqh_last = &req->query.tqh_first;
    bk_http_json_init(&req->json, body);
    req->next = a->pending;
    if (a->pending)
        a->pending->prev = req;
    a->pending = req;
    snprintf(req->method, sizeof req->method, "%s",
             method_name(evhttp_request_get_command(http)));
    if (a->tls && !on_tls(http)) {
        bk_http_reply_error(req, 503, "TLS could not be set up for this connection");
        return;
    }

    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(http);
    const char *why = split_path(req, uri ? evhttp_uri_get_path(uri) : NULL);
    if (why) {
        bk_http_reply_error(req, 400, "%s", why);
        return;
    }
    const char *q = uri ? evhttp_uri_get_query(uri) : NULL;
    if (q && evhttp_parse_query_str(q, &req->query) != 0) {
        bk_http_reply_error(req, 400, "malformed query string");
        return;
    }
    dispatch(req);
}

static void healthz(bk_http_req_t *req, void *ctx) {
    (void)ctx;
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_kv_str(j, "status", "ok");
    bk_http_json_obj_end(j);
    bk_http_reply_json(req, 200);
}

/* accept(2) failed (EMFILE when the node is out of descriptors). evhttp
 * sets no error callback, so libevent would log "Error from accept() call"
 * and the still-readable listening socket would spin the loop at 100% CPU.
 * Stop accepting; bk_http_tick (the node's 1 s timer) accepts again. The
 * callback's user data is evhttp's, not ours: hence no state here, and at
 * most one line per second. */
static void accept_failed(struct evconnlistener *l, void *arg) {
    (void)arg;
    int err = EVUTIL_SOCKET_ERROR();
    fprintf(stderr, "skiff: admin: accept failed: %s; not accepting for up to 1 s\n",
            evutil_socket_error_to_string(err));
    (void)evconnlistener_disable(l);
}

void bk_http_tick(bk_http_t *a) {
    if (a && a->listener && evconnlistener_enable(a->listener) != 0)
        fprintf(stderr, "skiff: admin: cannot resume accepting\n");
}

static int bind_address(bk_http_t *a, const char *host_port, char *err, size_t err_len) {
    char host[BK_CFG_HOST_MAX + 1];
    uint16_t port;
    const char *why = NULL;
    if (bk_cfg_hostport_parse(host_port, strlen(host_port), host, &port, &why) != KP_OK) {
        snprintf(err, err_len, "admin listener '%s': %s", host_port, why);
        return KP_ERR_BAD_VALUE;
    }
    struct evhttp_bound_socket *s =
        evhttp_bind_socket_with_handle(a->http, host[0] ? host : "0.0.0.0", port);
    if (s == NULL) {
        snprintf(err, err_len, "admin listener '%s': cannot bind (in use or bad address)",
                 host_port);
        return KP_ERR_BAD_VALUE;
    }
    a->listener = evhttp_bound_socket_get_listener(s);
    if (a->listener) evconnlistener_set_error_cb(a->listener, accept_failed);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    evutil_socket_t fd = evhttp_bound_socket_get_fd(s);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
        snprintf(err, err_len, "admin listener '%s': getsockname failed", host_port);
        return KP_ERR_BAD_VALUE;
    }
    a->port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                       : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return KP_OK;
}

bk_http_t *bk_http_start(struct event_base *base, const char *host_port, char *err,
                           size_t err_len) {
    assert(base != NULL && host_port != NULL);
    bk_http_t *a = calloc(1, sizeof *a);
    if (a == NULL) {
        snprintf(err, err_len, "admin listener '%s': out of memory", host_port);
        return NULL;
    }
    a->base = base;
    a->http = evhttp_new(base);
    if (a->http == NULL) {
        snprintf(err, err_len, "admin listener '%s': evhttp_new failed", host_port);
        goto fail;
    }
    evhttp_set_max_headers_size(a->http, BK_HTTP_HEADERS_MAX_BYTES);
    evhttp_set_max_body_size(a->http, BK_HTTP_BODY_MAX_BYTES);
    evhttp_set_timeout(a->http, BK_HTTP_TIMEOUT_S);
    evhttp_set_allowed_methods(a->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
                               EVHTTP_REQ_DELETE | EVHTTP_REQ_PATCH | EVHTTP_REQ_HEAD |
                               EVHTTP_REQ_OPTIONS);
    evhttp_set_gencb(a->http, on_request, a);
    if (bind_address(a, host_port, err, err_len) != KP_OK)
        goto fail;
    if (bk_http_route(a, "GET", "/healthz", healthz, NULL) != KP_OK) {
        snprintf(err, err_len, "admin listener '%s': cannot register /healthz", host_port);
        goto fail;
    }
    return a;
fail:
    bk_http_stop(a);
    return NULL;
}

uint16_t bk_http_port(const bk_http_t *admin) { return admin->port; }

void bk_http_stop(bk_http_t *a) {
    if (a == NULL)
        return;
    /* A deferred request whose client went away is detached from its
     * connection (libevent keeps it for our reply): free it here, since
     * evhttp_free only frees requests still on a connection. */
    for (bk_http_req_t *r = a->pending; r; r = r->next)
        if (r->http && evhttp_request_get_connection(r->http) == NULL) {
            evhttp_request_free(r->http);
            r->http = NULL;
        }
    a->listener = NULL;   /* evhttp_free frees it */
    if (a->http)
        evhttp_free(a->http); /* frees connections and their requests */
    while (a->pending) {
        bk_http_req_t *req = a->pending;
        req->http = NULL;
        req_free(req);
    }
    for (size_t i = 0; i < a->nroutes; i++)
        for (size_t k = 0; k < a->routes[i].nseg; k++)
            free(a->routes[i].seg[k]);
    if (a->tls)
        SSL_CTX_free(a->tls);
    OPENSSL_cleanse(&a->cache, sizeof a->cache);
    free(a);
}

static bool method_ok(const char *m) {
    static const char *const ok[] = { "GET", "POST", "PUT", "DELETE", "PATCH" };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (strcmp(m, ok[i]) == 0)
            return true;
    return false;
}

static bool same_route(const route_t *a, const route_t *b) {
    if (strcmp(a->method, b->method) != 0 || a->nseg != b->nseg)
        return false;
    for (size_t i = 0; i < a->nseg; i++) {
        if (a->is_param[i] != b->is_param[i])
            return false;
        if (!a->is_param[i] && strcmp(a->seg[i], b->seg[i]) != 0)
            return false;
    }
    return true;
}

/* Parses `pattern` into rt (allocating segment copies). */
static int parse_pattern(route_t *rt, const char *pattern) {
    if (pattern[0] != '/')
        return KP_ERR_BAD_VALUE;
    const char *p = pattern + 1;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || n > BK_HTTP_SEGMENT_MAX || rt->nseg == BK_HTTP_SEGMENTS_MAX)
            return KP_ERR_BAD_VALUE;
        bool param = p[0] == '{';
        if (param && (n < 3 || p[n - 1] != '}'))
            return KP_ERR_BAD_VALUE;
        const char *text = param ? p + 1 : p;
        size_t tn = param ? n - 2 : n;
        if (memchr(text, '{', tn) || memchr(text, '}', tn) || memchr(text, '%', tn))
            return KP_ERR_BAD_VALUE;
        rt->seg[rt->nseg] = strndup(text, tn);
        if (rt->seg[rt->nseg] == NULL)
            return KP_ERR_NOMEM;
        rt->is_param[rt->nseg] = param;
        rt->nliteral += param ? 0 : 1;
        rt->nseg++;
        if (slash == NULL)
            break;
        p = slash + 1;
        if (*p == '\0')
            return KP_ERR_BAD_VALUE; /* trailing '/' */
    }
    return KP_OK;
}

int bk_http_route(bk_http_t *a, const char *method, const char *pattern, bk_http_fn fn,
                   void *ctx) {
    assert(a != NULL && method != NULL && pattern != NULL && fn != NULL);
    if (a->nroutes == BK_HTTP_ROUTES_MAX)
        return KP_ERR_TOO_LARGE;
    if (!method_ok(method))
        return KP_ERR_BAD_VALUE;
    route_t rt;
    memset(&rt, 0, sizeof rt);
    snprintf(rt.method, sizeof rt.method, "%s", method);
    rt.fn = fn;
    rt.ctx = ctx;
    int rc = parse_pattern(&rt, pattern);
    for (size_t i = 0; rc == KP_OK && i < a->nroutes; i++)
        if (same_route(&a->routes[i], &rt))
            rc = KP_ERR_BAD_VALUE;
    if (rc != KP_OK) {
        for (size_t k = 0; k < rt.nseg; k++)
            free(rt.seg[k]);
        return rc;
    }
    a->routes[a->nroutes++] = rt;
    return KP_OK;
}

const char *bk_http_param(const bk_http_req_t *req, const char *name) {
    const route_t *rt = req->route;
    if (rt == NULL)
        return NULL;
    for (size_t i = 0; i < rt->nseg; i++)
        if (rt->is_param[i] && strcmp(rt->seg[i], name) == 0)
            return req->seg[i];
    return NULL;
}

const char *bk_http_query(const bk_http_req_t *req, const char *key) {
    return evhttp_find_header(&req->query, key);
}

const struct evkeyvalq *bk_http_query_all(const bk_http_req_t *req) { return &req->query; }

const char *bk_http_method(const bk_http_req_t *req) { return req->method; }

const char *bk_http_path(const bk_http_req_t *req) {
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req->http);
    const char *p = uri ? evhttp_uri_get_path(uri) : NULL;
    return p ? p : "";
}

struct evbuffer *bk_http_request_body(bk_http_req_t *req) {
    return evhttp_request_get_input_buffer(req->http);
}

const char *bk_http_header(const bk_http_req_t *req, const char *name) {
    return req->http ? evhttp_find_header(evhttp_request_get_input_headers(req->http), name) : NULL;
}

int bk_http_set_header(bk_http_req_t *req, const char *name, const char *value) {
    assert(name != NULL && value != NULL);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req->http);
    (void)evhttp_remove_header(h, name); /* absent is fine: set, not append */
    return evhttp_add_header(h, name, value) == 0 ? KP_OK : KP_ERR_BAD_VALUE;
}

bk_http_json_t *bk_http_admin_json(bk_http_req_t *req) { return &req->json; }
struct evbuffer *bk_http_body(bk_http_req_t *req) { return req->body; }

/* ---- TLS ------------------------------------------------------------------ */

/* evhttp's bufferevent factory for each accepted connection. Returning NULL
 * would make evhttp use a plain socket: on_request then refuses the
 * request (503), so a failed SSL_new never serves cleartext. */
static struct bufferevent *tls_bev(struct event_base *base, void *arg) {
    bk_http_t *a = arg;
    SSL *ssl = SSL_new(a->tls);
    if (ssl == NULL)
        return NULL;
    struct bufferevent *bev =
        bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        SSL_free(ssl);
        return NULL;
    }
    /* curl and most HTTP clients close without close_notify */
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}

int bk_http_set_tls(bk_http_t *a, SSL_CTX *ctx) {
    assert(a != NULL);
    if (ctx == NULL || SSL_CTX_up_ref(ctx) != 1)
        return KP_ERR_BAD_VALUE;
    if (a->tls)
        SSL_CTX_free(a->tls);
    a->tls = ctx;
    evhttp_set_bevcb(a->http, tls_bev, a);
    return KP_OK;
}

int bk_http_set_auth(bk_http_t *a, const bk_http_auth_t *auth) {
    assert(a != NULL && auth != NULL);
    if (auth->is_super == NULL || (auth->basic && auth->check == NULL) || auth->cache_ms < 0 ||
        auth->fail_delay_ms < 0 || (!auth->basic && auth->cert_principal == NULL))
        return KP_ERR_BAD_VALUE;
    if (auth_cache_init(&a->cache, auth->cache_ms) != KP_OK)
        return KP_ERR_NOMEM;
    a->auth = *auth;
    a->auth_on = true;
    return KP_OK;
}

int bk_http_route_access(bk_http_t *a, const char *method, const char *pattern, bk_http_access_t access) {
    route_t rt;
    memset(&rt, 0, sizeof rt);
    snprintf(rt.method, sizeof rt.method, "%s", method);
    int rc = parse_pattern(&rt, pattern);
    bool found = false;
    for (size_t i = 0; rc == KP_OK && i < a->nroutes; i++)
        if (same_route(&a->routes[i], &rt)) {
            a->routes[i].access = access;
            found = true;
        }
    for (size_t k = 0; k < rt.nseg; k++)
        free(rt.seg[k]);
    return found ? KP_OK : KP_ERR_BAD_VALUE;
}

const char *bk_http_principal(const bk_http_req_t *req) {
    return req->principal[0] ? req->principal : NULL;
}

void bk_http_auth_stats(const bk_http_t *a, bk_http_auth_stats_t *out) { *out = a->stats; }
