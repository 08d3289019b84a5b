/* libFuzzer target: the admin HTTP port (broker/admin.c on evhttp): path
 * splitting and percent-decoding, query parsing, routing, and the JSON
 * writer fed with the decoded (arbitrary, non-NUL) bytes.
 *
 * The input is sent as raw bytes on a loopback TCP connection to a server
 * bound to 127.0.0.1 port 0 (picked by the kernel), with routes that echo
 * their parameters, query and body size as JSON; the write side is then
 * shut down and the loop runs until the server closes the connection (at
 * most LOOP_LIMIT_MS). Properties: no crash or leak; any answer is an HTTP
 * status line; every application/json body is valid JSON in valid UTF-8. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "broker/http/admin.h"
#include "broker/http/json.h"

#define LOOP_LIMIT_MS 5000          /* a request that gets no answer by then is dropped */
#define RESPONSE_MAX_BYTES (1 << 20)

static struct event_base *g_base;
static bk_http_t *g_admin;

static void echo(bk_http_req_t *req, void *ctx) {
    const char *const *names = ctx;
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_kv_str(j, "method", bk_http_method(req));
    bk_http_json_kv_str(j, "path", bk_http_path(req));
    for (size_t i = 0; names[i]; i++) bk_http_json_kv_str(j, names[i], bk_http_param(req, names[i]));
    bk_http_json_kv_str(j, "q", bk_http_query(req, "q"));
    bk_http_json_kv_u64(j, "body", evbuffer_get_length(bk_http_request_body(req)));
    bk_http_json_obj_end(j);
    bk_http_reply_json(req, 200);
}

static void fail_route(bk_http_req_t *req, void *ctx) {
    (void)ctx;
    bk_http_reply_error(req, 409, "conflict on %s", bk_http_param(req, "name"));
}

static void setup(void) {
    static const char *topic_names[] = { "name", NULL };
    static const char *part_names[] = { "name", "p", NULL };
    static const char *none[] = { NULL };
    char err[256];
    g_base = event_base_new();
    if (!g_base) abort();
    g_admin = bk_http_start(g_base, "127.0.0.1:0", err, sizeof err);
    if (!g_admin) abort();
    if (bk_http_route(g_admin, "GET", "/v1/topics/{name}", echo, topic_names) != KP_OK ||
        bk_http_route(g_admin, "GET", "/v1/topics/{name}/partitions/{p}", echo, part_names) != KP_OK ||
        bk_http_route(g_admin, "POST", "/v1/topics/{name}", fail_route, NULL) != KP_OK ||
        bk_http_route(g_admin, "GET", "/v1/cluster", echo, none) != KP_OK)
        abort();
}

/* ---- a strict JSON + UTF-8 validator -------------------------------------- */

typedef struct { const uint8_t *p, *end; int depth; } js_t;

static void ws(js_t *s) {
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')) s->p++;
}

static bool utf8_char(js_t *s) {
    uint8_t c = *s->p;
    size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 0 || (size_t)(s->end - s->p) < n) return false;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1fu) : n == 3 ? (c & 0x0fu) : (c & 0x07u);
    for (size_t i = 1; i < n; i++) {
        if ((s->p[i] & 0xc0) != 0x80) return false;
        cp = cp << 6 | (s->p[i] & 0x3fu);
    }
    static const uint32_t min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    s->p += n;
    return true;
}

static bool string(js_t *s) {
    if (s->p >= s->end || *s->p != '"') return false;
    s->p++;
    while (s->p < s->end && *s->p != '"') {
        if (*s->p < 0x20) return false;
        if (*s->p == '\\') {
            if (++s->p >= s->end) return false;
            if (*s->p == 'u') {
                if (s->end - s->p < 5) return false;
                for (int i = 1; i <= 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", s->p[i]) || !s->p[i]) return false;
                s->p += 5;
            } else if (strchr("\"\\/bfnrt", *s->p) && *s->p) {
                s->p++;
            } else {
                return false;
            }
        } else if (!utf8_char(s)) {
            return false;
        }
    }
    if (s->p >= s->end) return false;
    s->p++;
    return true;
}

static bool value(js_t *s);

static bool members(js_t *s, char close, bool keyed) {
    s->p++;
    ws(s);
    if (s->p < s->end && *s->p == close) { s->p++; return true; }
    for (;;) {
        ws(s);
        if (keyed) {
            if (!string(s)) return false;
            ws(s);
            if (s->p >= s->end || *s->p++ != ':') return false;
        }
        if (!value(s)) return false;
        ws(s);
        if (s->p >= s->end) return false;
        if (*s->p == close) { s->p++; return true; }
        if (*s->p++ != ',') return false;
    }
}

static bool value(js_t *s) {
    ws(s);
    if (s->p >= s->end || ++s->depth > 64) return false;
    bool ok;
    if (*s->p == '{') ok = members(s, '}', true);
    else if (*s->p == '[') ok = members(s, ']', false);
    else if (*s->p == '"') ok = string(s);
    else if ((size_t)(s->end - s->p) >= 4 && !memcmp(s->p, "null", 4)) { s->p += 4; ok = true; }
    else if ((size_t)(s->end - s->p) >= 4 && !memcmp(s->p, "true", 4)) { s->p += 4; ok = true; }
    else if ((size_t)(s->end - s->p) >= 5 && !memcmp(s->p, "false", 5)) { s->p += 5; ok = true; }
    else {
        const uint8_t *start = s->p;
        if (s->p < s->end && *s->p == '-') s->p++;
        while (s->p < s->end && ((*s->p >= '0' && *s->p <= '9') || *s->p == '.' || *s->p == 'e' ||
                                 *s->p == 'E' || *s->p == '+' || *s->p == '-'))
            s->p++;
        ok = s->p > start;
    }
    s->depth--;
    return ok;
}

static void check_json(const uint8_t *p, size_t n) {
    js_t s = { p, p + n, 0 };
    if (!value(&s)) abort();
    ws(&s);
    if (s.p != s.end) abort();
}

/* ---- one exchange ----------------------------------------------------------- */

typedef struct {
    int fd;
    struct event *ev;
    uint8_t *buf;
    size_t len;
    bool closed;
} client_t;

static void on_client(evutil_socket_t fd, short what, void *arg) {
    client_t *c = arg;
    (void)what;
    for (;;) {
        uint8_t tmp[4096];
        ssize_t r = recv(fd, tmp, sizeof tmp, MSG_DONTWAIT);
        if (r > 0) {
            size_t take = (size_t)r;
            if (c->len + take > RESPONSE_MAX_BYTES) take = RESPONSE_MAX_BYTES - c->len;
            memcpy(c->buf + c->len, tmp, take);
            c->len += take;
            continue;
        }
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
        c->closed = true; /* EOF or reset: the server is done with us */
        event_del(c->ev); /* an fd at EOF stays readable: stop watching it */
        return;
    }
}

static void on_timeout(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    *(bool *)arg = true;
}

/* Checks each response in buf (pipelined requests give several). evhttp
 * answers in the request's HTTP version (even "HTTP/0.0"), with a
 * Content-Length, or for 1.0 without one, delimited by the close. */
static void check_responses(const uint8_t *buf, size_t len, bool first_only) {
    static const char ct[] = "Content-Type: application/json";
    size_t at = 0;
    while (at < len) {
        if (len - at < 9 || memcmp(buf + at, "HTTP/", 5) != 0) abort();
        const uint8_t *hdr_end = memmem(buf + at, len - at, "\r\n\r\n", 4);
        if (!hdr_end) return; /* cut short: nothing more to check */
        size_t hlen = (size_t)(hdr_end - (buf + at)) + 4;
        if (first_only) return;
        const uint8_t *cl = memmem(buf + at, hlen, "Content-Length: ", 16);
        size_t body_len = cl ? strtoul((const char *)cl + 16, NULL, 10) : len - at - hlen;
        if (body_len > len - at - hlen) return;
        if (memmem(buf + at, hlen, ct, sizeof ct - 1) && body_len > 0) check_json(buf + at + hlen, body_len);
        at += hlen + body_len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_base) setup();
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons(bk_http_port(g_admin));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) abort();
    static uint8_t resp[RESPONSE_MAX_BYTES];
    client_t c = { fd, NULL, resp, 0, false };
    struct event *ev = event_new(g_base, fd, EV_READ | EV_PERSIST, on_client, &c);
    c.ev = ev;
    if (!ev || event_add(ev, NULL) != 0) abort();
    /* write everything; the server reads as the loop runs, so interleave */
    size_t sent = 0;
    for (int spins = 0; sent < size && spins < 100000; spins++) {
        ssize_t w = send(fd, data + sent, size - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w > 0) sent += (size_t)w;
        else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) break; /* server closed */
        if (c.closed) break;
        event_base_loop(g_base, EVLOOP_NONBLOCK);
    }
    shutdown(fd, SHUT_WR);
    bool timed_out = false;
    struct event *timer = evtimer_new(g_base, on_timeout, &timed_out);
    struct timeval limit = { LOOP_LIMIT_MS / 1000, (LOOP_LIMIT_MS % 1000) * 1000 };
    if (!timer || evtimer_add(timer, &limit) != 0) abort();
    while (!c.closed && !timed_out)
        if (event_base_loop(g_base, EVLOOP_ONCE) < 0) abort();
    event_free(timer);
    event_free(ev);
    close(fd);
    event_base_loop(g_base, EVLOOP_NONBLOCK); /* let the server see the close */
    /* HEAD answers carry a Content-Length but no body, so a pipelined
     * response after one cannot be delimited: check only the first */
    check_responses(resp, c.len, memmem(data, size, "HEAD", 4) != NULL);
    return 0;
}
