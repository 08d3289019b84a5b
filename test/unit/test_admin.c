/* Unit tests for broker/admin.c: a real evhttp server on 127.0.0.1 port 0,
 * queried from the same process over a raw TCP socket while the test pumps
 * the event loop. Covers 200/404/400 bodies and headers, path parameters,
 * percent-decoding, literal-over-parameter precedence, query strings,
 * deferred replies, route-table errors and bind errors. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "broker/http/admin.h"
#include "broker/config/hostport.h"

#define RESP_MAX 65536
#define DEADLINE_MS 5000

typedef struct resp {
    int status;
    char head[4096];
    char body[RESP_MAX];
} resp_t;

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sends `raw` to 127.0.0.1:port and collects the reply until the server
 * closes (requests carry Connection: close), pumping `base` meanwhile.
 * Bounded by DEADLINE_MS. */
static void exchange(struct event_base *base, uint16_t port, const char *raw, resp_t *out) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    size_t sent = 0, want = strlen(raw), got = 0;
    char buf[RESP_MAX + 4096];
    int64_t deadline = now_ms() + DEADLINE_MS;
    bool eof = false;
    while (!eof) {
        ck_assert_msg(now_ms() < deadline, "no reply in time");
        event_base_loop(base, EVLOOP_NONBLOCK);
        if (sent < want) {
            ssize_t n = send(fd, raw + sent, want - sent, MSG_NOSIGNAL);
            if (n > 0)
                sent += (size_t)n;
        }
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, 5) > 0) {
            ssize_t n = recv(fd, buf + got, sizeof buf - 1 - got, 0);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
                eof = true;
            else if (n > 0)
                got += (size_t)n;
            ck_assert_uint_lt(got, sizeof buf - 1);
        }
    }
    close(fd);
    buf[got] = '\0';
    char *sep = strstr(buf, "\r\n\r\n");
    ck_assert_ptr_nonnull(sep);
    size_t hl = (size_t)(sep - buf);
    ck_assert_uint_lt(hl, sizeof out->head);
    memcpy(out->head, buf, hl);
    out->head[hl] = '\0';
    snprintf(out->body, sizeof out->body, "%s", sep + 4);
    ck_assert_int_eq(sscanf(buf, "HTTP/1.1 %d", &out->status), 1);
}

static void get(struct event_base *base, uint16_t port, const char *method, const char *path,
                resp_t *out) {
    char raw[2048];
    snprintf(raw, sizeof raw, "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
             "Content-Length: 0\r\n\r\n", method, path);
    exchange(base, port, raw, out);
}

/* --- handlers used by the tests --- */

static void echo_topic(bk_http_req_t *req, void *ctx) {
    ck_assert_ptr_eq(ctx, (void *)0x1234);
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_kv_str(j, "name", bk_http_param(req, "name"));
    bk_http_json_kv_str(j, "missing", bk_http_param(req, "nope"));
    bk_http_json_kv_str(j, "q", bk_http_query(req, "q"));
    bk_http_json_obj_end(j);
    bk_http_reply_json(req, 200);
}

static void echo_partition(bk_http_req_t *req, void *ctx) {
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_kv_str(j, "topic", bk_http_param(req, "topic"));
    bk_http_json_kv_str(j, "partition", bk_http_param(req, "p"));
    bk_http_json_obj_end(j);
    bk_http_reply_json(req, 200);
}

static void literal_special(bk_http_req_t *req, void *ctx) {
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_kv_bool(j, "special", true);
    bk_http_json_obj_end(j);
    bk_http_reply_json(req, 200);
}

static void handler_error(bk_http_req_t *req, void *ctx) {
    bk_http_reply_error(req, 409, "topic '%s' exists", "a\"b");
}

static void metrics(bk_http_req_t *req, void *ctx) {
    evbuffer_add_printf(bk_http_body(req), "skiff_up 1\n");
    bk_http_reply_raw(req, 200, "text/plain; version=0.0.4; charset=utf-8");
}

static void post_body(bk_http_req_t *req, void *ctx) {
    struct evbuffer *in = bk_http_request_body(req);
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_kv_u64(j, "len", evbuffer_get_length(in));
    bk_http_json_kv_str(j, "method", bk_http_method(req));
    bk_http_json_obj_end(j);
    bk_http_reply_json(req, 202);
}

/* Deferred reply: the handler parks the request; a timer answers it. */
static bk_http_req_t *parked;
static void reply_parked(evutil_socket_t fd, short what, void *arg) {
    bk_http_json_t *j = bk_http_admin_json(parked);
    bk_http_json_obj_begin(j);
    bk_http_json_kv_str(j, "deferred", "yes");
    bk_http_json_obj_end(j);
    bk_http_reply_json(parked, 200);
    parked = NULL;
}
static void park(bk_http_req_t *req, void *ctx) {
    struct event_base *base = ctx;
    parked = req;
    struct timeval tv = { 0, 20000 };
    ck_assert_int_eq(event_base_once(base, -1, EV_TIMEOUT, reply_parked, NULL, &tv), 0);
}
static void park_forever(bk_http_req_t *req, void *ctx) { parked = req; }

static void noop(bk_http_req_t *req, void *ctx) { bk_http_reply_error(req, 500, "noop"); }

/* --- fixture --- */

static struct event_base *base;
static bk_http_t *admin;
static uint16_t port;

static void setup(void) {
    char err[256] = "";
    base = event_base_new();
    ck_assert_ptr_nonnull(base);
    admin = bk_http_start(base, "127.0.0.1:0", err, sizeof err);
    ck_assert_msg(admin != NULL, "start: %s", err);
    port = bk_http_port(admin);
    ck_assert_uint_gt(port, 0);
    ck_assert_int_eq(bk_http_route(admin, "GET", "/v1/topics/{name}", echo_topic, (void *)0x1234), KP_OK);
    ck_assert_int_eq(bk_http_route(admin, "GET", "/v1/topics/special", literal_special, NULL), KP_OK);
    ck_assert_int_eq(bk_http_route(admin, "GET", "/v1/topics/{topic}/partitions/{p}", echo_partition, NULL), KP_OK);
    ck_assert_int_eq(bk_http_route(admin, "DELETE", "/v1/topics/{name}", handler_error, NULL), KP_OK);
    ck_assert_int_eq(bk_http_route(admin, "GET", "/metrics", metrics, NULL), KP_OK);
    ck_assert_int_eq(bk_http_route(admin, "POST", "/v1/echo", post_body, NULL), KP_OK);
    ck_assert_int_eq(bk_http_route(admin, "GET", "/v1/slow", park, base), KP_OK);
}

static void teardown(void) {
    bk_http_stop(admin);
    admin = NULL;
    event_base_free(base);
    base = NULL;
}

static void assert_json_ct(const resp_t *r) {
    ck_assert_msg(strstr(r->head, "\r\nContent-Type: application/json\r\n") != NULL,
                  "headers: %s", r->head);
}

START_TEST(test_healthz) {
    resp_t r;
    get(base, port, "GET", "/healthz", &r);
    ck_assert_int_eq(r.status, 200);
    assert_json_ct(&r);
    ck_assert_str_eq(r.body, "{\"status\":\"ok\"}");
}
END_TEST

START_TEST(test_unknown_path_404) {
    resp_t r;
    get(base, port, "GET", "/v1/nothing/here", &r);
    ck_assert_int_eq(r.status, 404);
    assert_json_ct(&r);
    ck_assert_str_eq(r.body, "{\"error\":\"no such endpoint: /v1/nothing/here\"}");
    get(base, port, "GET", "/", &r);
    ck_assert_int_eq(r.status, 404);
    get(base, port, "GET", "/v1/topics/", &r); /* empty parameter does not match */
    ck_assert_int_eq(r.status, 404);
    get(base, port, "GET", "/healthz/", &r);
    ck_assert_int_eq(r.status, 404);
}
END_TEST

START_TEST(test_bad_method_400) {
    resp_t r;
    get(base, port, "POST", "/healthz", &r);
    ck_assert_int_eq(r.status, 400);
    assert_json_ct(&r);
    ck_assert_str_eq(r.body, "{\"error\":\"method POST not allowed for /healthz\"}");
    get(base, port, "PUT", "/v1/topics/x", &r);
    ck_assert_int_eq(r.status, 400);
}
END_TEST

START_TEST(test_path_params_and_decoding) {
    resp_t r;
    get(base, port, "GET", "/v1/topics/orders", &r);
    ck_assert_int_eq(r.status, 200);
    assert_json_ct(&r);
    ck_assert_str_eq(r.body, "{\"name\":\"orders\",\"missing\":null,\"q\":null}");
    get(base, port, "GET", "/v1/topics/a%2Fb%20c%41%22?q=1%2B1", &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "{\"name\":\"a/b cA\\\"\",\"missing\":null,\"q\":\"1+1\"}");
    get(base, port, "GET", "/v1/topics/%7f%0a", &r); /* control bytes come back escaped */
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "{\"name\":\"\\u007f\\n\",\"missing\":null,\"q\":null}");
    get(base, port, "GET", "/v1/topics/orders/partitions/7", &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "{\"topic\":\"orders\",\"partition\":\"7\"}");
    get(base, port, "GET", "/v1/%74opics/x", &r); /* literals match decoded text */
    ck_assert_int_eq(r.status, 200);
}
END_TEST

START_TEST(test_literal_beats_param) {
    resp_t r;
    get(base, port, "GET", "/v1/topics/special", &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "{\"special\":true}");
}
END_TEST

START_TEST(test_malformed_path_400) {
    const char *bad[] = { "/v1/topics/%zz", "/v1/topics/%4", "/v1/topics/%", "/v1/topics/a%00b",
                          "/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        resp_t r;
        get(base, port, "GET", bad[i], &r);
        ck_assert_msg(r.status == 400, "%s -> %d", bad[i], r.status);
        assert_json_ct(&r);
        ck_assert_msg(strncmp(r.body, "{\"error\":\"", 10) == 0, "%s -> %s", bad[i], r.body);
    }
    /* a segment longer than BK_HTTP_SEGMENT_MAX */
    char path[600] = "/v1/topics/";
    memset(path + strlen(path), 'x', BK_HTTP_SEGMENT_MAX + 1);
    resp_t r;
    get(base, port, "GET", path, &r);
    ck_assert_int_eq(r.status, 400);
    ck_assert_str_eq(r.body, "{\"error\":\"path segment too long\"}");
    /* exactly BK_HTTP_SEGMENT_MAX is fine */
    path[strlen("/v1/topics/") + BK_HTTP_SEGMENT_MAX] = '\0';
    get(base, port, "GET", path, &r);
    ck_assert_int_eq(r.status, 200);
}
END_TEST

START_TEST(test_handler_error_metrics_post) {
    resp_t r;
    get(base, port, "DELETE", "/v1/topics/x", &r);
    ck_assert_int_eq(r.status, 409);
    ck_assert_str_eq(r.body, "{\"error\":\"topic 'a\\\"b' exists\"}");
    get(base, port, "GET", "/metrics", &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.head, "Content-Type: text/plain; version=0.0.4"));
    ck_assert_str_eq(r.body, "skiff_up 1\n");
    exchange(base, port, "POST /v1/echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
             "Content-Length: 5\r\n\r\nhello", &r);
    ck_assert_int_eq(r.status, 202);
    ck_assert_str_eq(r.body, "{\"len\":5,\"method\":\"POST\"}");
}
END_TEST

START_TEST(test_deferred_reply) {
    resp_t r;
    get(base, port, "GET", "/v1/slow", &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "{\"deferred\":\"yes\"}");
    ck_assert_ptr_null(parked);
}
END_TEST

START_TEST(test_stop_with_parked_request) {
    /* A request never answered is freed by bk_http_stop (ASan checks leaks). */
    ck_assert_int_eq(bk_http_route(admin, "GET", "/v1/forever", park_forever, NULL), KP_OK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    const char *raw = "GET /v1/forever HTTP/1.1\r\nHost: x\r\n\r\n";
    ck_assert_int_eq(send(fd, raw, strlen(raw), 0), (ssize_t)strlen(raw));
    int64_t deadline = now_ms() + DEADLINE_MS;
    parked = NULL;
    while (parked == NULL) {
        ck_assert(now_ms() < deadline);
        event_base_loop(base, EVLOOP_NONBLOCK);
        usleep(1000);
    }
    parked = NULL;
    close(fd);
}
END_TEST

/* Connects, sends a request for `path` and pumps the loop until the
 * handler has parked it. Returns the client socket. */
static int send_and_park(const char *path) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    char raw[256];
    snprintf(raw, sizeof raw, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
    ck_assert_int_eq(send(fd, raw, strlen(raw), 0), (ssize_t)strlen(raw));
    int64_t deadline = now_ms() + DEADLINE_MS;
    parked = NULL;
    while (parked == NULL) {
        ck_assert(now_ms() < deadline);
        event_base_loop(base, EVLOOP_NONBLOCK);
        usleep(1000);
    }
    return fd;
}

/* Pumps the loop for `ms` so libevent notices a closed client. */
static void pump(int ms) {
    int64_t until = now_ms() + ms;
    while (now_ms() < until) {
        event_base_loop(base, EVLOOP_NONBLOCK);
        usleep(1000);
    }
}

START_TEST(test_reply_after_client_left) {
    ck_assert_int_eq(bk_http_route(admin, "GET", "/v1/forever", park_forever, NULL), KP_OK);
    int fd = send_and_park("/v1/forever");
    close(fd);
    pump(100);
    bk_http_req_t *req = parked;
    parked = NULL;
    bk_http_reply_error(req, 503, "too late"); /* must neither crash nor leak */
    resp_t r; /* and the server keeps serving */
    get(base, port, "GET", "/healthz", &r);
    ck_assert_int_eq(r.status, 200);
}
END_TEST

START_TEST(test_stop_with_orphaned_request) {
    /* client gone and no reply ever: bk_http_stop frees it (ASan: no leak) */
    ck_assert_int_eq(bk_http_route(admin, "GET", "/v1/forever", park_forever, NULL), KP_OK);
    int fd = send_and_park("/v1/forever");
    close(fd);
    pump(100);
    parked = NULL;
}
END_TEST

START_TEST(test_route_registration_errors) {
    ck_assert_int_eq(bk_http_route(admin, "GET", "/v1/topics/{name}", noop, NULL), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(bk_http_route(admin, "GET", "/v1/topics/{other}", noop, NULL), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(bk_http_route(admin, "FETCH", "/x", noop, NULL), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(bk_http_route(admin, "GET", "x", noop, NULL), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(bk_http_route(admin, "GET", "/a//b", noop, NULL), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(bk_http_route(admin, "GET", "/a/", noop, NULL), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(bk_http_route(admin, "GET", "/a/{}", noop, NULL), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(bk_http_route(admin, "GET", "/a/{b", noop, NULL), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(bk_http_route(admin, "GET", "/a/%41", noop, NULL), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(bk_http_route(admin, "GET", "/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q", noop, NULL),
                     KP_ERR_BAD_VALUE);
    /* fill the table: 8 registered in setup (incl. /healthz) */
    int added = 0, rc = KP_OK;
    for (int i = 0; rc == KP_OK && i < 2 * BK_HTTP_ROUTES_MAX; i++) {
        char p[32];
        snprintf(p, sizeof p, "/r%d", i);
        rc = bk_http_route(admin, "GET", p, noop, NULL);
        if (rc == KP_OK)
            added++;
    }
    ck_assert_int_eq(rc, KP_ERR_TOO_LARGE);
    ck_assert_int_eq(added, BK_HTTP_ROUTES_MAX - 8);
    resp_t r; /* the server still works with a full table */
    get(base, port, "GET", "/r0", &r);
    ck_assert_int_eq(r.status, 500);
    ck_assert_str_eq(r.body, "{\"error\":\"noop\"}");
}
END_TEST

START_TEST(test_bind_errors) {
    char err[256] = "";
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", port);
    ck_assert_ptr_null(bk_http_start(base, addr, err, sizeof err));
    ck_assert_msg(strstr(err, addr) != NULL && strstr(err, "cannot bind") != NULL, "%s", err);
    ck_assert_ptr_null(bk_http_start(base, "127.0.0.1", err, sizeof err));
    ck_assert_str_eq(err, "admin listener '127.0.0.1': expected host:port");
    ck_assert_ptr_null(bk_http_start(base, "127.0.0.1:70000", err, sizeof err));
    ck_assert_str_eq(err, "admin listener '127.0.0.1:70000': port out of range 0..65535");
}
END_TEST

START_TEST(test_hostport_parse) {
    char host[BK_CFG_HOST_MAX + 1];
    uint16_t p;
    const char *why;
    ck_assert_int_eq(bk_cfg_hostport_parse("h:1", 3, host, &p, &why), KP_OK);
    ck_assert_str_eq(host, "h"); ck_assert_uint_eq(p, 1);
    ck_assert_int_eq(bk_cfg_hostport_parse(":9092", 5, host, &p, &why), KP_OK);
    ck_assert_str_eq(host, ""); ck_assert_uint_eq(p, 9092);
    ck_assert_int_eq(bk_cfg_hostport_parse("[::1]:65535", 11, host, &p, &why), KP_OK);
    ck_assert_str_eq(host, "::1"); ck_assert_uint_eq(p, 65535);
    const char *bad[] = { "h", "h:", "h:x", "h:-1", "h:65536", "h:123456", "::1:5", "[::1]5",
                          "[::1", "a b:1", "a,b:1" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why = NULL;
        ck_assert_msg(bk_cfg_hostport_parse(bad[i], strlen(bad[i]), host, &p, &why) == KP_ERR_BAD_VALUE,
                      "%s accepted", bad[i]);
        ck_assert_ptr_nonnull(why);
    }
    /* every truncation of a valid address is either valid or an error, never a crash */
    const char *ok = "[fe80::1]:9644";
    for (size_t n = 0; n <= strlen(ok); n++) {
        int rc = bk_cfg_hostport_parse(ok, n, host, &p, &why);
        ck_assert(rc == KP_OK || rc == KP_ERR_BAD_VALUE);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("admin");
    TCase *tc = tcase_create("http");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, test_healthz);
    tcase_add_test(tc, test_unknown_path_404);
    tcase_add_test(tc, test_bad_method_400);
    tcase_add_test(tc, test_path_params_and_decoding);
    tcase_add_test(tc, test_literal_beats_param);
    tcase_add_test(tc, test_malformed_path_400);
    tcase_add_test(tc, test_handler_error_metrics_post);
    tcase_add_test(tc, test_deferred_reply);
    tcase_add_test(tc, test_stop_with_parked_request);
    tcase_add_test(tc, test_reply_after_client_left);
    tcase_add_test(tc, test_stop_with_orphaned_request);
    tcase_add_test(tc, test_route_registration_errors);
    tcase_add_test(tc, test_bind_errors);
    tcase_add_test(tc, test_hostport_parse);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
