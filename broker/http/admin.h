/* Admin HTTP/JSON server framework on libevent evhttp.
 *
 * One bk_http_t serves one address from the node's event loop. Endpoints are
 * routes: (method, pattern, handler, ctx). A pattern is a '/'-separated path
 * whose segments are literals or parameters written {name}; a parameter
 * matches exactly one non-empty path segment, percent-decoded. Adding an
 * endpoint is one bk_http_route() call plus a handler that writes JSON:
 *
 *   static void get_topic(bk_http_req_t *req, void *ctx) {
 *       bk_http_json_t *j = bk_http_admin_json(req);
 *       bk_http_json_obj_begin(j);
 *       bk_http_json_kv_str(j, "name", bk_http_param(req, "name"));
 *       bk_http_json_obj_end(j);
 *       bk_http_reply_json(req, 200);
 *   }
 *   bk_http_route(admin, "GET", "/v1/topics/{name}", get_topic, image);
 *
 * Answers the framework gives by itself, all with a JSON body
 * {"error": "..."} and Content-Type application/json:
 *   404  no route has this path;
 *   400  a route has this path but not this method, or the path or query is
 *        malformed (bad percent-encoding, encoded NUL, too many or too long
 *        segments);
 *   500  a handler's JSON could not be built (out of memory).
 * GET /healthz is built in: 200 {"status": "ok"}.
 *
 * Threading: everything runs on the loop thread that owns `base`. Handlers
 * must not block; a handler may reply before it returns or keep `req` and
 * reply later from the loop (a deferred reply), e.g. after a raft commit.
 * Every request must be replied to exactly once; the reply frees `req`. */
#ifndef SKIFF_BROKER_ADMIN_H
#define SKIFF_BROKER_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/http/json.h"
#include "protocol/kp_wire.h"

struct event_base;
struct evbuffer;
struct ssl_ctx_st;
struct ssl_st;

/* Bounds: routes per server, segments per path, bytes per segment, request
 * header and body sizes, idle connection timeout. */
#define BK_HTTP_ROUTES_MAX 64
#define BK_HTTP_SEGMENTS_MAX 16
#define BK_HTTP_SEGMENT_MAX 255
#define BK_HTTP_HEADERS_MAX_BYTES 16384
#define BK_HTTP_BODY_MAX_BYTES (1024 * 1024)
#define BK_HTTP_TIMEOUT_S 30

typedef struct bk_http bk_http_t;
typedef struct bk_http_req bk_http_req_t;
typedef void (*bk_http_fn)(bk_http_req_t *req, void *ctx);

/* Binds `host_port` ("127.0.0.1:9644"; port 0 picks a free port) on `base`
 * and starts serving. Returns the server (free with bk_http_stop) or NULL
 * with a message in err[0..err_len) naming the address. */
bk_http_t *bk_http_start(struct event_base *base, const char *host_port,
                           char *err, size_t err_len);

/* The bound port (useful after binding port 0). */
uint16_t bk_http_port(const bk_http_t *admin);

/* Stops listening, closes connections and frees the server. Requests still
 * held for a deferred reply are freed too: their holders must drop them
 * before calling this. NULL is a no-op. */
void bk_http_stop(bk_http_t *admin);

/* Registers a route. `method` is GET, POST, PUT, DELETE or PATCH; `pattern`
 * starts with '/' and has at most BK_HTTP_SEGMENTS_MAX segments, each a
 * non-empty literal or {name}. Strings are copied. Returns KP_OK,
 * KP_ERR_BAD_VALUE for a bad method/pattern or a (method, pattern) already
 * registered, KP_ERR_TOO_LARGE when BK_HTTP_ROUTES_MAX routes exist.
 * Literal segments win over parameters when both match. */
KP_MUST_CHECK int bk_http_route(bk_http_t *admin, const char *method, const char *pattern,
                                 bk_http_fn fn, void *ctx);

/* The decoded value of path parameter `name`, or NULL if the matched pattern
 * has no such parameter. Valid until the reply. Never contains NUL; may
 * contain any other byte, including '/' written as %2F. */
const char *bk_http_param(const bk_http_req_t *req, const char *name);

/* The decoded value of query key `key` ("?key=v"), or NULL if absent. */
const char *bk_http_query(const bk_http_req_t *req, const char *key);

/* Every decoded query pair, in order (for a key repeated or a family of
 * keys, e.g. "config.*"). Valid until the reply. */
struct evkeyvalq;
const struct evkeyvalq *bk_http_query_all(const bk_http_req_t *req);

/* Request method ("GET", ...), raw path (still percent-encoded) and body
 * (may be empty). Valid until the reply. */
const char *bk_http_method(const bk_http_req_t *req);
const char *bk_http_path(const bk_http_req_t *req);
struct evbuffer *bk_http_request_body(bk_http_req_t *req);

/* The value of request header `name` (case-insensitive), or NULL. Valid
 * until the reply. */
const char *bk_http_header(const bk_http_req_t *req, const char *name);

/* Sets response header `name` to `value` (replacing an earlier one) for the
 * reply to come. Every reply carries X-Content-Type-Options: nosniff and,
 * unless a handler set Cache-Control, Cache-Control: no-store. Returns KP_OK,
 * or KP_ERR_BAD_VALUE for a name or value evhttp refuses (CR/LF inside). */
KP_MUST_CHECK int bk_http_set_header(bk_http_req_t *req, const char *name, const char *value);

/* The JSON writer over the response body (one document per response). */
bk_http_json_t *bk_http_admin_json(bk_http_req_t *req);

/* The response body as raw bytes, for non-JSON replies (e.g. /metrics). */
struct evbuffer *bk_http_body(bk_http_req_t *req);

/* Sends the JSON document written through bk_http_admin_json() with `status` and
 * Content-Type application/json, then frees `req`. If the document could not
 * be built (out of memory) a 500 error is sent instead. */
void bk_http_reply_json(bk_http_req_t *req, int status);

/* Discards anything written so far and sends {"error": message} with
 * `status`, then frees `req`. The message is printf-formatted, truncated at
 * 1 KiB and escaped. */
void bk_http_reply_error(bk_http_req_t *req, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sends bk_http_body() as is with `status` and `content_type`, then frees
 * `req`. */
void bk_http_reply_raw(bk_http_req_t *req, int status, const char *content_type);

/* ---- TLS and authentication (issue 17) ----------------------------------
 *
 * TLS: with bk_http_set_tls every connection accepted from then on runs TLS
 * (bufferevent_openssl over the accepted socket, server side). A request
 * that nevertheless arrives without TLS (the TLS object could not be made
 * for that connection) is answered 503 and never routed.
 *
 * Authentication: once bk_http_set_auth is called, every route needs an
 * access level; by default GET and HEAD need a principal and every other
 * method a super user; bk_http_route_access changes one route (e.g. open
 * probes). For a request that needs one, the principal is
 *  1. the mapped subject of a verified client certificate (TLS, when
 *     `cert_principal` is set and the client sent one), else
 *  2. "User:NAME" from `Authorization: Basic` (when `basic`), checked by
 *     `check` unless the same user and password passed within `cache_ms`
 *     (auth_cache_int.h). Checks not answered by the cache are bounded to
 *     BK_HTTP_AUTH_CHECKS_PER_S (429 with Retry-After beyond): a check of a
 *     SCRAM credential runs PBKDF2 on the loop (4096 iterations of
 *     HMAC-SHA-512: ~8 ms measured on the 2-core test box), so the bound
 *     caps that at ~40 ms of loop time per second even under a guessing
 *     attack, while an operator's tools pay it once per cache period.
 *     Not taken: PBKDF2 on the worker pool; the credential source
 *     (bk_node_cred_check) reads the image and is loop-only.
 * Answers: no or malformed credentials -> 401 at once; wrong credentials ->
 * 401 after `fail_delay_ms` (a timer: the loop never waits), logged at most
 * once per 10 s with the number suppressed; both 401 carry
 * `WWW-Authenticate: Basic realm="skiff"` when `basic`. A principal that is
 * not a super user on a super-user route -> 403.
 * With or without authentication, a request other than GET that carries an
 * Origin header whose host:port is not its Host (a browser sent it for
 * another site: cross-site request forgery) -> 403. */
#define BK_HTTP_AUTH_CHECKS_PER_S 5
#define BK_HTTP_PRINCIPAL_MAX 255

typedef enum bk_http_access {
    BK_HTTP_ACCESS_DEFAULT = 0,  /* by method: GET/HEAD principal, others super user */
    BK_HTTP_ACCESS_OPEN,         /* no principal needed */
    BK_HTTP_ACCESS_PRINCIPAL,    /* any authenticated principal */
    BK_HTTP_ACCESS_SUPER,        /* a principal `is_super` accepts */
} bk_http_access_t;

typedef struct bk_http_auth {
    bool basic;          /* accept Authorization: Basic */
    /* true when user/password is a valid credential. Runs on the loop and
     * may be slow (bounded as above). Required when `basic`. */
    bool (*check)(void *ctx, const char *user, const char *password);
    /* true when `principal` ("User:NAME") is a super user. Required. */
    bool (*is_super)(void *ctx, const char *principal);
    /* true when `principal` may use the routes that need a principal (GET);
     * NULL: every authenticated principal may. */
    bool (*may_read)(void *ctx, const char *principal);
    /* Maps the verified client certificate of a finished handshake `ssl`
     * (an OpenSSL SSL whose peer sent a certificate that verified) to a
     * principal written to out[0..cap) ("User:..."); false when it cannot.
     * NULL: certificates are not principals. */
    bool (*cert_principal)(void *ctx, struct ssl_st *ssl, char *out, size_t cap);
    void *ctx;
    int64_t cache_ms;       /* >= 0; 0: every request is checked */
    int64_t fail_delay_ms;  /* >= 0 */
} bk_http_auth_t;

/* Serves TLS with `ctx` (an OpenSSL SSL_CTX; the server takes a reference)
 * on connections accepted from now on. KP_OK or KP_ERR_BAD_VALUE. */
KP_MUST_CHECK int bk_http_set_tls(bk_http_t *admin, struct ssl_ctx_st *ctx);

/* Turns authentication on with `auth` (copied). KP_OK, KP_ERR_BAD_VALUE
 * for a missing callback, KP_ERR_NOMEM when the cache cannot be seeded. */
KP_MUST_CHECK int bk_http_set_auth(bk_http_t *admin, const bk_http_auth_t *auth);

/* Sets the access level of the registered route (method, pattern).
 * KP_OK or KP_ERR_BAD_VALUE when no such route exists. */
KP_MUST_CHECK int bk_http_route_access(bk_http_t *admin, const char *method, const char *pattern,
                                       bk_http_access_t access);

/* The principal the request was authenticated as ("User:NAME"), or NULL
 * (open route, or authentication off). Valid until the reply. */
const char *bk_http_principal(const bk_http_req_t *req);

/* Counters of the admin port's authentication (for tests and metrics). */
typedef struct bk_http_auth_stats {
    uint64_t checks;       /* credential checks run (cache misses) */
    uint64_t cache_hits;
    uint64_t failures;     /* 401 after a failed check */
    uint64_t forbidden;    /* 403 */
    uint64_t throttled;    /* 429 */
} bk_http_auth_stats_t;
void bk_http_auth_stats(const bk_http_t *admin, bk_http_auth_stats_t *out);

/* Once a second (the node's timer): accept again if an accept failure
 * (EMFILE, ...) paused the admin listener. No-op otherwise; admin may be
 * NULL. */
void bk_http_tick(bk_http_t *admin);

#endif
