/* broker/admin/admin_console.h — the web console (issue 21): static HTML, CSS
 * and JavaScript under broker/admin/console/, embedded at build time by
 * console/embed.py into a generated table, served by the admin port at `/`
 * (index.html) and `/ui/{file}`. The page talks only to this node's JSON API.
 *
 * Every asset reply carries a strict Content-Security-Policy (default-src
 * 'self', no inline script or style), a strong ETag (SHA-256 prefix of the
 * bytes, 304 on If-None-Match) and Cache-Control: no-cache (the names are
 * not versioned, so the browser revalidates each load: one 304 per file). */
#ifndef SKIFF_BK_ADMIN_CONSOLE_H
#define SKIFF_BK_ADMIN_CONSOLE_H

#include <stddef.h>

#include "broker/core/node.h"
#include "broker/http/admin.h"

/* One embedded file. `name` is the file name under console/ (no folder),
 * `etag` the quoted strong validator. The bytes live as long as the
 * program. */
typedef struct bk_admin_console_asset {
    const char *name;
    const char *content_type;
    const unsigned char *data;
    size_t len;
    const char *etag;
} bk_admin_console_asset_t;

/* The generated table (build/gen/broker/admin/console_assets.c). */
extern const bk_admin_console_asset_t bk_admin_console_assets[];
extern const size_t bk_admin_console_nassets;

/* The asset named `name` (exact match), or NULL. */
const bk_admin_console_asset_t *bk_admin_console_find(const char *name);

/* The Content-Security-Policy every console reply carries. */
#define BK_ADMIN_CONSOLE_CSP                                                              \
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "         \
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; " \
    "form-action 'none'"

/* Registers GET / and GET /ui/{file} on n->admin. KP_OK or bk_http_route's
 * error. */
KP_MUST_CHECK int bk_admin_console_add(bk_node_t *n);

#endif
