/* broker/admin/admin_console.c — serves the embedded console (see
 * admin_console.h). The bytes are static: the reply references them without
 * a copy (evbuffer_add_reference), so a page load costs no allocation of the
 * asset's size. */
#include "broker/admin/admin_console.h"

#include <string.h>

#include <event2/buffer.h>

const bk_admin_console_asset_t *bk_admin_console_find(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < bk_admin_console_nassets; i++)
        if (strcmp(bk_admin_console_assets[i].name, name) == 0) return &bk_admin_console_assets[i];
    return NULL;
}

/* If-None-Match is a list of quoted tags or "*" (RFC 9110 13.1.2); a weak
 * prefix W/ compares equal too (weak comparison is what GET uses). */
static bool etag_matches(const char *inm, const char *etag) {
    if (!inm) return false;
    size_t el = strlen(etag);
    for (const char *p = inm; *p;) {
        while (*p == ' ' || *p == ',' || *p == '\t') p++;
        if (*p == '*') return true;
        if (strncmp(p, "W/", 2) == 0) p += 2;
        if (strncmp(p, etag, el) == 0 && (p[el] == '\0' || p[el] == ',' || p[el] == ' ')) return true;
        while (*p && *p != ',') p++;
    }
    return false;
}

static void serve(bk_http_req_t *req, const bk_admin_console_asset_t *a) {
    if (!a) {
        bk_http_reply_error(req, 404, "no such console file: %s", bk_http_path(req));
        return;
    }
    /* headers are constants of ours: evhttp refuses only CR/LF inside */
    if (bk_http_set_header(req, "Content-Security-Policy", BK_ADMIN_CONSOLE_CSP) != KP_OK ||
        bk_http_set_header(req, "ETag", a->etag) != KP_OK ||
        bk_http_set_header(req, "Cache-Control", "no-cache") != KP_OK ||
        bk_http_set_header(req, "X-Frame-Options", "DENY") != KP_OK ||
        bk_http_set_header(req, "Referrer-Policy", "no-referrer") != KP_OK) {
        bk_http_reply_error(req, 500, "cannot set the console's response headers");
        return;
    }
    if (etag_matches(bk_http_header(req, "If-None-Match"), a->etag)) {
        bk_http_reply_raw(req, 304, a->content_type);
        return;
    }
    if (a->len && evbuffer_add_reference(bk_http_body(req), a->data, a->len, NULL, NULL) != 0) {
        bk_http_reply_error(req, 500, "out of memory");
        return;
    }
    bk_http_reply_raw(req, 200, a->content_type);
}

static void get_index(bk_http_req_t *req, void *ctx) {
    (void)ctx;
    serve(req, bk_admin_console_find("index.html"));
}

static void get_file(bk_http_req_t *req, void *ctx) {
    (void)ctx;
    serve(req, bk_admin_console_find(bk_http_param(req, "file")));
}

int bk_admin_console_add(bk_node_t *n) {
    int rc;
    if ((rc = bk_http_route(n->admin, "GET", "/", get_index, n)) != KP_OK) return rc;
    return bk_http_route(n->admin, "GET", "/ui/{file}", get_file, n);
}
