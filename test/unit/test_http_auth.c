/* Unit tests for the admin port's authentication (issue 17):
 * broker/http/basic_auth.c (the Authorization header parser), the
 * credential cache (auth_cache_int.h) and the access rules of admin.c,
 * through a real evhttp server on 127.0.0.1 port 0 queried over a raw TCP
 * socket while the test pumps the loop: 401 with WWW-Authenticate without
 * or with bad credentials (the bad ones only after the failure delay), 403
 * for a non-super user on a POST, 200 for the right principal, open
 * routes, the cache sparing the check, the check rate bound (429). TLS is
 * covered by test/integration/t_sec_admin.sh (curl against real certs). */
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

#include <event2/event.h>

#include "broker/http/admin.h"
#include "broker/http/auth_cache_int.h"
#include "broker/http/basic_auth.h"
#include "protocol/kp_base64.h"

#define RESP_MAX 16384
#define DEADLINE_MS 5000

/* ---- the parser ---- */

static int parse(const char *h, char *u, char *p) {
    return bk_http_basic_parse(h, strlen(h), u, BK_HTTP_BASIC_USER_MAX + 1, p, BK_HTTP_BASIC_PASSWORD_MAX + 1);
}

START_TEST(test_basic_parse_ok) {
    char u[BK_HTTP_BASIC_USER_MAX + 1], p[BK_HTTP_BASIC_PASSWORD_MAX + 1];
    /* "alice:s3cret" */
    ck_assert_int_eq(parse("Basic YWxpY2U6czNjcmV0", u, p), KP_OK);
    ck_assert_str_eq(u, "alice");
    ck_assert_str_eq(p, "s3cret");
    /* scheme in any case, several spaces, trailing space; "a:b:c" -> user a, password b:c */
    ck_assert_int_eq(parse("bAsIc   YTpiOmM=  ", u, p), KP_OK);
    ck_assert_str_eq(u, "a");
    ck_assert_str_eq(p, "b:c");
    /* empty password "bob:" */
    ck_assert_int_eq(parse("Basic Ym9iOg==", u, p), KP_OK);
    ck_assert_str_eq(u, "bob");
    ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_basic_parse_refused) {
    char u[BK_HTTP_BASIC_USER_MAX + 1], p[BK_HTTP_BASIC_PASSWORD_MAX + 1];
    static const char *const bad[] = {
        "", "Basic", "Basic ", "Bearer YWxpY2U6czNjcmV0", "BasicYWxpY2U6czNjcmV0",
        "Basic YWxpY2U6czNjcmV0=",   /* length not a multiple of 4 */
        "Basic YWxpY2U6czNjcm=0",    /* padding inside */
        "Basic =WxpY2U6czNjcmV0",
        "Basic YWxp*2U6czNjcmV0",    /* not base64 */
        "Basic YWxpY2U=",            /* "alice": no colon */
        "Basic OnB3",                /* ":pw": empty user */
        "Basic YQBiOmM=",            /* "a\0b:c": NUL */
        "Basic YQpiOmM=",            /* "a\nb:c": control byte */
        "Basic YWxp Y2U6czNjcmV0",   /* space inside */
        "Basic Ym9iOo==",            /* "bob:" with non-zero padding bits */
        "Basic YTpiOmN=",            /* "a:b:c" likewise, one '=' */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        strcpy(u, "x");
        ck_assert_msg(parse(bad[i], u, p) == KP_ERR_BAD_VALUE, "accepted: '%s'", bad[i]);
        ck_assert_str_eq(u, "");
    }
    /* NULL header */
    ck_assert_int_eq(bk_http_basic_parse(NULL, 0, u, sizeof u, p, sizeof p), KP_ERR_BAD_VALUE);
    /* the length bound is honoured: "Basic YWxpY2U6czNjcmV0" cut anywhere is
     * refused or (cut at a 4-char group) a prefix of alice's password; the
     * copy is exactly n bytes so ASan catches a read past it */
    const char *ok = "Basic YWxpY2U6czNjcmV0";
    for (size_t n = 0; n < strlen(ok); n++) {
        char *copy = malloc(n ? n : 1);
        memcpy(copy, ok, n);
        int rc = bk_http_basic_parse(copy, n, u, sizeof u, p, sizeof p);
        ck_assert(rc == KP_OK || rc == KP_ERR_BAD_VALUE);
        if (rc == KP_OK) {
            ck_assert_str_eq(u, "alice");
            ck_assert(strncmp(p, "s3cret", strlen(p)) == 0 && strlen(p) < 6);
        }
        free(copy);
    }
}
END_TEST

/* The header text of n raw bytes (out holds KP_B64_LEN(n) + 1). */
static void b64(const unsigned char *in, size_t n, char *out) {
    size_t o = 0;
    ck_assert_int_eq(kp_b64_encode(in, n, out, KP_B64_LEN(n) + 1, &o), KP_OK);
}

START_TEST(test_basic_parse_bounds) {
    char u[BK_HTTP_BASIC_USER_MAX + 1], p[BK_HTTP_BASIC_PASSWORD_MAX + 1];
    unsigned char raw[1200];
    char hdr[2000];
    /* longest user and password: accepted */
    memset(raw, 'u', BK_HTTP_BASIC_USER_MAX);
    raw[BK_HTTP_BASIC_USER_MAX] = ':';
    memset(raw + BK_HTTP_BASIC_USER_MAX + 1, 'p', BK_HTTP_BASIC_PASSWORD_MAX);
    strcpy(hdr, "Basic ");
    b64(raw, BK_HTTP_BASIC_USER_MAX + 1 + BK_HTTP_BASIC_PASSWORD_MAX, hdr + 6);
    ck_assert_int_eq(parse(hdr, u, p), KP_OK);
    ck_assert_uint_eq(strlen(u), BK_HTTP_BASIC_USER_MAX);
    ck_assert_uint_eq(strlen(p), BK_HTTP_BASIC_PASSWORD_MAX);
    /* one byte more in the user: too large */
    memset(raw, 'u', BK_HTTP_BASIC_USER_MAX + 1);
    raw[BK_HTTP_BASIC_USER_MAX + 1] = ':';
    raw[BK_HTTP_BASIC_USER_MAX + 2] = 'p';
    b64(raw, BK_HTTP_BASIC_USER_MAX + 3, hdr + 6);
    ck_assert_int_eq(parse(hdr, u, p), KP_ERR_TOO_LARGE);
    /* far too long a header: refused before decoding */
    memset(raw, 'x', sizeof raw);
    raw[3] = ':';
    b64(raw, sizeof raw, hdr + 6);
    ck_assert_int_eq(parse(hdr, u, p), KP_ERR_TOO_LARGE);
}
END_TEST

/* ---- the cache ---- */

START_TEST(test_cache) {
    auth_cache_t c;
    ck_assert_int_eq(auth_cache_init(&c, 1000), KP_OK);
    uint8_t a[AUTH_CACHE_DIGEST], b[AUTH_CACHE_DIGEST], a2[AUTH_CACHE_DIGEST];
    ck_assert(auth_cache_digest(&c, "alice", "pw", a));
    ck_assert(auth_cache_digest(&c, "alice", "pw2", b));
    ck_assert(auth_cache_digest(&c, "alice", "pw", a2));
    ck_assert_mem_eq(a, a2, AUTH_CACHE_DIGEST);
    ck_assert(memcmp(a, b, AUTH_CACHE_DIGEST) != 0);
    /* "ab"+"c" and "a"+"bc" differ (the separator) */
    uint8_t x[AUTH_CACHE_DIGEST], y[AUTH_CACHE_DIGEST];
    ck_assert(auth_cache_digest(&c, "ab", "c", x));
    ck_assert(auth_cache_digest(&c, "a", "bc", y));
    ck_assert(memcmp(x, y, AUTH_CACHE_DIGEST) != 0);
    ck_assert(!auth_cache_hit(&c, a, 100));
    auth_cache_add(&c, a, 100);
    ck_assert(auth_cache_hit(&c, a, 100));
    ck_assert(auth_cache_hit(&c, a, 1099));
    ck_assert(!auth_cache_hit(&c, a, 1100)); /* expired */
    ck_assert(!auth_cache_hit(&c, b, 500));
    /* a full table keeps working and the newest entry survives */
    for (int i = 0; i < 3 * AUTH_CACHE_ENTRIES; i++) {
        char pw[16];
        snprintf(pw, sizeof pw, "p%d", i);
        uint8_t d[AUTH_CACHE_DIGEST];
        ck_assert(auth_cache_digest(&c, "u", pw, d));
        auth_cache_add(&c, d, 2000 + i);
        ck_assert(auth_cache_hit(&c, d, 2000 + i));
    }
    auth_cache_clear(&c);
    ck_assert(!auth_cache_hit(&c, a, 150));
    /* ttl 0: nothing is kept */
    ck_assert_int_eq(auth_cache_init(&c, 0), KP_OK);
    auth_cache_add(&c, a, 100);
    ck_assert(!auth_cache_hit(&c, a, 100));
    /* two caches have different salts: the same credential hashes differently */
    auth_cache_t c2;
    ck_assert_int_eq(auth_cache_init(&c2, 10), KP_OK);
    ck_assert(auth_cache_digest(&c2, "alice", "pw", a2));
    ck_assert(memcmp(a, a2, AUTH_CACHE_DIGEST) != 0);
}
END_TEST

/* ---- the server ---- */

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
            if (n > 0) sent += (size_t)n;
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

static void req(struct event_base *base, uint16_t port, const char *method, const char *path,
                const char *user, const char *pw, resp_t *out) {
    char raw[2048], auth[1024] = "";
    if (user) {
        char cred[600], enc[900];
        snprintf(cred, sizeof cred, "%s:%s", user, pw);
        b64((const unsigned char *)cred, strlen(cred), enc);
        snprintf(auth, sizeof auth, "Authorization: Basic %s\r\n", enc);
    }
    snprintf(raw, sizeof raw, "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%s"
             "Content-Length: 0\r\n\r\n", method, path, auth);
    exchange(base, port, raw, out);
}

static int checks_run;
static bool check(void *ctx, const char *user, const char *pw) {
    (void)ctx;
    checks_run++;
    return (strcmp(user, "admin") == 0 && strcmp(pw, "adminpw") == 0) ||
           (strcmp(user, "alice") == 0 && strcmp(pw, "alicepw") == 0);
}
static bool is_super(void *ctx, const char *principal) {
    (void)ctx;
    return strcmp(principal, "User:admin") == 0;
}

static void whoami(bk_http_req_t *r, void *ctx) {
    bk_http_json_t *j = bk_http_admin_json(r);
    bk_http_json_obj_begin(j);
    bk_http_json_kv_str(j, "principal", bk_http_principal(r));
    bk_http_json_obj_end(j);
    bk_http_reply_json(r, 200);
}

static struct event_base *base;
static bk_http_t *admin;
static uint16_t port;

static void setup(void) {
    char err[256] = "";
    base = event_base_new();
    admin = bk_http_start(base, "127.0.0.1:0", err, sizeof err);
    ck_assert_msg(admin != NULL, "start: %s", err);
    port = bk_http_port(admin);
    ck_assert_int_eq(bk_http_route(admin, "GET", "/v1/who", whoami, NULL), KP_OK);
    ck_assert_int_eq(bk_http_route(admin, "POST", "/v1/act", whoami, NULL), KP_OK);
    ck_assert_int_eq(bk_http_route(admin, "GET", "/readyz", whoami, NULL), KP_OK);
    bk_http_auth_t a = { .basic = true, .check = check, .is_super = is_super, .cache_ms = 60000,
                         .fail_delay_ms = 200 };
    ck_assert_int_eq(bk_http_set_auth(admin, &a), KP_OK);
    ck_assert_int_eq(bk_http_route_access(admin, "GET", "/readyz", BK_HTTP_ACCESS_OPEN), KP_OK);
    ck_assert_int_eq(bk_http_route_access(admin, "GET", "/healthz", BK_HTTP_ACCESS_OPEN), KP_OK);
    checks_run = 0;
}

static void teardown(void) {
    bk_http_stop(admin);
    event_base_free(base);
}

START_TEST(test_no_credentials_401) {
    resp_t r;
    req(base, port, "GET", "/v1/who", NULL, NULL, &r);
    ck_assert_int_eq(r.status, 401);
    ck_assert_msg(strstr(r.head, "WWW-Authenticate: Basic realm=\"skiff\"") != NULL, "%s", r.head);
    ck_assert_int_eq(checks_run, 0);
    /* malformed header: 401 too, no check */
    exchange(base, port, "GET /v1/who HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
             "Authorization: Basic !!!!\r\n\r\n", &r);
    ck_assert_int_eq(r.status, 401);
    ck_assert_int_eq(checks_run, 0);
    /* an unknown path stays 404 (routing first) and unknown method 400 */
    req(base, port, "GET", "/v1/nothing", NULL, NULL, &r);
    ck_assert_int_eq(r.status, 404);
}
END_TEST

START_TEST(test_wrong_password_delayed_401) {
    resp_t r;
    int64_t t0 = now_ms();
    req(base, port, "GET", "/v1/who", "alice", "wrong", &r);
    int64_t took = now_ms() - t0;
    ck_assert_int_eq(r.status, 401);
    ck_assert_msg(took >= 190, "401 after %lld ms, before the 200 ms failure delay", (long long)took);
    ck_assert_msg(strstr(r.head, "WWW-Authenticate: Basic") != NULL, "%s", r.head);
    ck_assert_msg(strstr(r.body, "wrong") == NULL && strstr(r.body, "alice") == NULL, "leaks: %s", r.body);
    req(base, port, "GET", "/v1/who", "mallory", "x", &r);
    ck_assert_int_eq(r.status, 401);
    bk_http_auth_stats_t st;
    bk_http_auth_stats(admin, &st);
    ck_assert_uint_eq(st.failures, 2);
}
END_TEST

START_TEST(test_principal_and_super) {
    resp_t r;
    req(base, port, "GET", "/v1/who", "alice", "alicepw", &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_msg(strstr(r.body, "\"principal\":\"User:alice\"") != NULL, "%s", r.body);
    req(base, port, "POST", "/v1/act", "alice", "alicepw", &r);
    ck_assert_int_eq(r.status, 403);
    ck_assert_msg(strstr(r.body, "super") != NULL, "%s", r.body);
    req(base, port, "POST", "/v1/act", "admin", "adminpw", &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_msg(strstr(r.body, "User:admin") != NULL, "%s", r.body);
    req(base, port, "POST", "/v1/act", NULL, NULL, &r);
    ck_assert_int_eq(r.status, 401);
    /* open routes: no principal needed, none reported */
    req(base, port, "GET", "/readyz", NULL, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_msg(strstr(r.body, "\"principal\":null") != NULL, "%s", r.body);
    req(base, port, "GET", "/healthz", NULL, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    /* the cache: alice twice, admin once -> two checks, one hit */
    bk_http_auth_stats_t st;
    bk_http_auth_stats(admin, &st);
    ck_assert_int_eq(checks_run, 2);
    ck_assert_uint_eq(st.checks, 2);
    ck_assert_uint_eq(st.cache_hits, 1);
    ck_assert_uint_eq(st.forbidden, 1);
}
END_TEST

START_TEST(test_cross_origin_refused) {
    resp_t r;
    static const char *const tmpl =
        "POST /v1/act HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n%s"
        "Authorization: Basic YWRtaW46YWRtaW5wdw==\r\nContent-Length: 0\r\n\r\n"; /* admin:adminpw */
    char raw[1024];
    snprintf(raw, sizeof raw, tmpl, (unsigned)port, "Origin: http://evil.example\r\n");
    exchange(base, port, raw, &r);
    ck_assert_int_eq(r.status, 403);
    ck_assert_msg(strstr(r.body, "cross-origin") != NULL, "%s", r.body);
    /* the console's own page: Origin = the Host it talks to */
    char same[96];
    snprintf(same, sizeof same, "Origin: http://127.0.0.1:%u\r\n", (unsigned)port);
    snprintf(raw, sizeof raw, tmpl, (unsigned)port, same);
    exchange(base, port, raw, &r);
    ck_assert_int_eq(r.status, 200);
    /* no Origin (curl, skiffctl): allowed */
    snprintf(raw, sizeof raw, tmpl, (unsigned)port, "");
    exchange(base, port, raw, &r);
    ck_assert_int_eq(r.status, 200);
    /* a GET is not a mutation: a cross-origin read is the browser's CORS business */
    req(base, port, "GET", "/v1/who", "admin", "adminpw", &r);
    ck_assert_int_eq(r.status, 200);
    /* without authentication too (a loopback port is reachable from a local browser) */
    char err[256];
    bk_http_t *open_srv = bk_http_start(base, "127.0.0.1:0", err, sizeof err);
    ck_assert_ptr_nonnull(open_srv);
    ck_assert_int_eq(bk_http_route(open_srv, "POST", "/v1/act", whoami, NULL), KP_OK);
    uint16_t op = bk_http_port(open_srv);
    snprintf(raw, sizeof raw, "POST /v1/act HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n"
             "Origin: http://evil.example\r\nContent-Length: 0\r\n\r\n", (unsigned)op);
    exchange(base, op, raw, &r);
    ck_assert_int_eq(r.status, 403);
    snprintf(raw, sizeof raw, "POST /v1/act HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n"
             "Content-Length: 0\r\n\r\n", (unsigned)op);
    exchange(base, op, raw, &r);
    ck_assert_int_eq(r.status, 200);
    bk_http_stop(open_srv);
}
END_TEST

START_TEST(test_check_rate_bound) {
    resp_t r;
    /* distinct wrong passwords are never cached: after BK_HTTP_AUTH_CHECKS_PER_S
     * checks in one second the rest get 429 without a check. Use a short
     * delay so the test stays quick. */
    bk_http_auth_t a = { .basic = true, .check = check, .is_super = is_super, .cache_ms = 60000,
                         .fail_delay_ms = 0 };
    ck_assert_int_eq(bk_http_set_auth(admin, &a), KP_OK);
    req(base, port, "GET", "/v1/who", "admin", "adminpw", &r); /* cached from here */
    ck_assert_int_eq(r.status, 200);
    int throttled = 0;
    int64_t t0 = now_ms();
    for (int i = 0; i < BK_HTTP_AUTH_CHECKS_PER_S + 4; i++) {
        char pw[32];
        snprintf(pw, sizeof pw, "guess%d", i);
        req(base, port, "GET", "/v1/who", "alice", pw, &r);
        if (r.status == 429) {
            throttled++;
            ck_assert_msg(strstr(r.head, "Retry-After: 1") != NULL, "%s", r.head);
        } else {
            ck_assert_int_eq(r.status, 401);
        }
    }
    /* the window is 1 s: only when the loop took less can the count be exact */
    if (now_ms() - t0 < 900) {
        ck_assert_int_eq(throttled, 5);
        ck_assert_int_eq(checks_run, BK_HTTP_AUTH_CHECKS_PER_S);
        /* a cached credential still passes while checks are exhausted */
        req(base, port, "GET", "/v1/who", "admin", "adminpw", &r);
        ck_assert_int_eq(r.status, 200);
        ck_assert_int_eq(checks_run, BK_HTTP_AUTH_CHECKS_PER_S);
    } else {
        ck_assert_int_le(checks_run, 2 * BK_HTTP_AUTH_CHECKS_PER_S);
    }
}
END_TEST

START_TEST(test_setup_errors) {
    bk_http_auth_t a = { .basic = true, .check = NULL, .is_super = is_super };
    ck_assert_int_eq(bk_http_set_auth(admin, &a), KP_ERR_BAD_VALUE);
    a.check = check;
    a.is_super = NULL;
    ck_assert_int_eq(bk_http_set_auth(admin, &a), KP_ERR_BAD_VALUE);
    a.is_super = is_super;
    a.cache_ms = -1;
    ck_assert_int_eq(bk_http_set_auth(admin, &a), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(bk_http_route_access(admin, "GET", "/v1/none", BK_HTTP_ACCESS_OPEN), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(bk_http_route_access(admin, "POST", "/v1/who", BK_HTTP_ACCESS_OPEN), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(bk_http_set_tls(admin, NULL), KP_ERR_BAD_VALUE);
}
END_TEST

int main(void) {
    Suite *s = suite_create("http_auth");
    TCase *tp = tcase_create("parse");
    tcase_add_test(tp, test_basic_parse_ok);
    tcase_add_test(tp, test_basic_parse_refused);
    tcase_add_test(tp, test_basic_parse_bounds);
    tcase_add_test(tp, test_cache);
    suite_add_tcase(s, tp);
    TCase *tc = tcase_create("server");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, test_no_credentials_401);
    tcase_add_test(tc, test_wrong_password_delayed_401);
    tcase_add_test(tc, test_principal_and_super);
    tcase_add_test(tc, test_cross_origin_refused);
    tcase_add_test(tc, test_check_rate_bound);
    tcase_add_test(tc, test_setup_errors);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
