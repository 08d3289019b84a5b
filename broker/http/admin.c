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

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>

#include "broker/config/hostport.h"

#define METHOD_MAX 8

typedef struct route {
    char method[METHOD_MAX];
    char *seg[BK_HTTP_SEGMENTS_MAX];    /* literal text or parameter name */
    bool is_param[BK_HTTP_SEGMENTS_MAX];
    size_t nseg;
    size_t nliteral;                     /* ranks matches: more literals win */
    bk_http_fn fn;
    void *ctx;
} route_t;

struct bk_http {
    struct event_base *base;
    struct evhttp *http;
    uint16_t port;
    route_t routes[BK_HTTP_ROUTES_MAX];
    size_t nroutes;
    bk_http_req_t *pending;             /* requests not yet replied */
    struct evconnlistener *listener;    /* evhttp's; re-enabled by bk_http_tick */
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
    case 404: return "Not Found";
    case 403: return "Forbidden";
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
    best->fn(req, best->ctx); /* replies now or later (deferred) */
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
