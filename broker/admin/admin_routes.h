/* broker/admin/admin_routes.h — the node's admin endpoints (issue 4, first part):
 * GET /v1/cluster, GET /v1/topics, GET /v1/topics/{name} (GET /healthz is
 * built into admin.c). Keys are a contract; see broker/README.md. */
#ifndef SKIFF_BK_ADMIN_ROUTES_H
#define SKIFF_BK_ADMIN_ROUTES_H

#include "broker/core/node.h"
#include "broker/http/admin.h"

/* Registers the routes on n->admin. KP_OK or the bk_http_route error. */
KP_MUST_CHECK int bk_admin_routes_add(bk_node_t *n);

#endif
