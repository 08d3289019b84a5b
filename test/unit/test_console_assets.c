/* Unit tests for the embedded console (broker/admin/admin_console.c and the
 * table console/embed.py generates): every file under broker/admin/console/
 * with a served type is in the table byte for byte, and the admin port
 * serves exactly those bytes with its Content-Type, the strict CSP and an
 * ETag that a revalidation answers with 304. A real evhttp server on
 * 127.0.0.1 port 0, pumped by the test while a raw socket talks to it.
 * Run from the repository root (as `make test-unit` does). */
#include <check.h>
#include <dirent.h>
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

#include "broker/admin/admin_console.h"

#define CONSOLE_DIR "broker/admin/console"
#define FILE_MAX (1024 * 1024)
#define DEADLINE_MS 5000

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool served_type(const char *name) {
    const char *dot = strrchr(name, '.');
    return dot && (!strcmp(dot, ".html") || !strcmp(dot, ".css") || !strcmp(dot, ".js") || !strcmp(dot, ".svg"));
}

/* The whole file, malloc'd; *len its size. */
static unsigned char *slurp(const char *name, size_t *len) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", CONSOLE_DIR, name);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s (run from the repository root)", path);
    unsigned char *buf = malloc(FILE_MAX);
    ck_assert_ptr_nonnull(buf);
    *len = fread(buf, 1, FILE_MAX, f);
    ck_assert_uint_lt(*len, FILE_MAX);
    fclose(f);
    return buf;
}

typedef struct {
    int status;
    char head[4096];
    unsigned char *body;
    size_t body_len;
} resp_t;

/* One request over a fresh connection (Connection: close), reply read until
 * the server closes; the loop is pumped meanwhile. */
static void exchange(struct event_base *base, uint16_t port, const char *raw, resp_t *out) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
    size_t sent = 0, want = strlen(raw), got = 0, cap = FILE_MAX + 8192;
    unsigned char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    int64_t deadline = now_ms() + DEADLINE_MS;
    for (bool eof = false; !eof;) {
        ck_assert_msg(now_ms() < deadline, "no reply in time");
        event_base_loop(base, EVLOOP_NONBLOCK);
        if (sent < want) {
            ssize_t n = send(fd, raw + sent, want - sent, MSG_NOSIGNAL);
            if (n > 0) sent += (size_t)n;
        }
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, 5) > 0) {
            ssize_t n = recv(fd, buf + got, cap - got, 0);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) eof = true;
            else if (n > 0) got += (size_t)n;
            ck_assert_uint_lt(got, cap);
        }
    }
    close(fd);
    unsigned char *sep = memmem(buf, got, "\r\n\r\n", 4);
    ck_assert_ptr_nonnull(sep);
    size_t hl = (size_t)(sep - buf);
    ck_assert_uint_lt(hl, sizeof out->head);
    memcpy(out->head, buf, hl);
    out->head[hl] = '\0';
    out->body_len = got - hl - 4;
    out->body = malloc(out->body_len + 1);
    ck_assert_ptr_nonnull(out->body);
    memcpy(out->body, sep + 4, out->body_len);
    free(buf);
    ck_assert_int_eq(sscanf(out->head, "HTTP/1.1 %d", &out->status), 1);
}

static void get(struct event_base *base, uint16_t port, const char *path, const char *extra, resp_t *out) {
    char raw[1024];
    snprintf(raw, sizeof raw, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%s\r\n", path, extra ? extra : "");
    exchange(base, port, raw, out);
}

/* The value of header `name` in the reply head (case-insensitive name), or "". */
static const char *header(const resp_t *r, const char *name, char *out, size_t cap) {
    out[0] = '\0';
    size_t nl = strlen(name);
    for (const char *p = strstr(r->head, "\r\n"); p; p = strstr(p + 2, "\r\n"))
        if (strncasecmp(p + 2, name, nl) == 0 && p[2 + nl] == ':') {
            const char *v = p + 3 + nl;
            while (*v == ' ') v++;
            size_t n = strcspn(v, "\r\n");
            snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), v);
            break;
        }
    return out;
}

START_TEST(table_matches_files) {
    DIR *d = opendir(CONSOLE_DIR);
    ck_assert_msg(d != NULL, "cannot open %s", CONSOLE_DIR);
    size_t nfiles = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!served_type(e->d_name)) continue;
        nfiles++;
        size_t len;
        unsigned char *src = slurp(e->d_name, &len);
        const bk_admin_console_asset_t *a = bk_admin_console_find(e->d_name);
        ck_assert_msg(a != NULL, "%s is not embedded", e->d_name);
        ck_assert_uint_eq(a->len, len);
        ck_assert_msg(memcmp(a->data, src, len) == 0, "%s: embedded bytes differ", e->d_name);
        ck_assert_msg(a->etag[0] == '"' && strlen(a->etag) == 18, "%s: etag %s", e->d_name, a->etag);
        free(src);
    }
    closedir(d);
    ck_assert_uint_eq(nfiles, bk_admin_console_nassets);
    ck_assert_ptr_nonnull(bk_admin_console_find("index.html"));
    ck_assert_ptr_null(bk_admin_console_find("embed.py"));
    ck_assert_ptr_null(bk_admin_console_find("../index.html"));
    ck_assert_ptr_null(bk_admin_console_find(NULL));
}
END_TEST

static bk_node_t *node_with_admin(struct event_base *base, uint16_t *port) {
    bk_node_t *n = calloc(1, sizeof *n);   /* the console's handlers read no node state */
    ck_assert_ptr_nonnull(n);
    char err[256];
    n->admin = bk_http_start(base, "127.0.0.1:0", err, sizeof err);
    ck_assert_msg(n->admin != NULL, "%s", err);
    ck_assert_int_eq(bk_admin_console_add(n), KP_OK);
    *port = bk_http_port(n->admin);
    return n;
}

START_TEST(served_bytes_equal_files) {
    struct event_base *base = event_base_new();
    uint16_t port;
    bk_node_t *n = node_with_admin(base, &port);
    char v[1024];
    for (size_t i = 0; i < bk_admin_console_nassets; i++) {
        const bk_admin_console_asset_t *a = &bk_admin_console_assets[i];
        char path[300];
        snprintf(path, sizeof path, "/ui/%s", a->name);
        resp_t r;
        get(base, port, path, NULL, &r);
        ck_assert_int_eq(r.status, 200);
        size_t len;
        unsigned char *src = slurp(a->name, &len);
        ck_assert_uint_eq(r.body_len, len);
        ck_assert_msg(memcmp(r.body, src, len) == 0, "%s: served bytes differ from the file", a->name);
        ck_assert_str_eq(header(&r, "Content-Type", v, sizeof v), a->content_type);
        ck_assert_str_eq(header(&r, "Content-Security-Policy", v, sizeof v), BK_ADMIN_CONSOLE_CSP);
        ck_assert_str_eq(header(&r, "ETag", v, sizeof v), a->etag);
        ck_assert_str_eq(header(&r, "Cache-Control", v, sizeof v), "no-cache");
        ck_assert_str_eq(header(&r, "X-Content-Type-Options", v, sizeof v), "nosniff");
        free(src);
        free(r.body);
        /* revalidation: the same tag (also in a list, or weak) -> 304, no body */
        char inm[128];
        snprintf(inm, sizeof inm, "If-None-Match: \"x\", W/%s\r\n", a->etag);
        get(base, port, path, inm, &r);
        ck_assert_int_eq(r.status, 304);
        ck_assert_uint_eq(r.body_len, 0);
        free(r.body);
        get(base, port, path, "If-None-Match: \"0000000000000000\"\r\n", &r);
        ck_assert_int_eq(r.status, 200);
        free(r.body);
    }
    resp_t r;
    get(base, port, "/", NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(header(&r, "Content-Type", v, sizeof v), "text/html; charset=utf-8");
    ck_assert_uint_eq(r.body_len, bk_admin_console_find("index.html")->len);
    free(r.body);
    get(base, port, "/ui/nope.js", NULL, &r);
    ck_assert_int_eq(r.status, 404);
    free(r.body);
    get(base, port, "/ui/..%2Findex.html", NULL, &r);
    ck_assert_int_eq(r.status, 404);
    free(r.body);
    bk_http_stop(n->admin);
    free(n);
    event_base_free(base);
}
END_TEST

/* index.html carries no inline script or style: the CSP would block them */
START_TEST(index_has_no_inline_code) {
    const bk_admin_console_asset_t *a = bk_admin_console_find("index.html");
    char *s = strndup((const char *)a->data, a->len);
    ck_assert_ptr_nonnull(s);
    for (char *p = strstr(s, "<script"); p; p = strstr(p + 1, "<script"))
        ck_assert_msg(strncmp(p, "<script src=", 12) == 0, "inline <script> in index.html");
    ck_assert_ptr_null(strstr(s, "<style"));
    ck_assert_ptr_null(strstr(s, " style="));
    ck_assert_ptr_null(strstr(s, " onclick="));
    ck_assert_ptr_null(strstr(s, "http://"));
    ck_assert_ptr_null(strstr(s, "https://"));
    free(s);
}
END_TEST

int main(void) {
    Suite *s = suite_create("console_assets");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, table_matches_files);
    tcase_add_test(tc, served_bytes_equal_files);
    tcase_add_test(tc, index_has_no_inline_code);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
