/* broker/admin/admin_auth.h — TLS and authentication of the admin port
 * (issue 17), from the admin.* keys and listener.name.admin.ssl.*:
 * builds the SSL_CTX, wires HTTP Basic to the node's SASL credentials
 * (broker/core/credentials.h), the super-user check of POST routes, client
 * certificates as principals, and opens the probes. See broker/admin/README.md
 * "Authentication". */
#ifndef SKIFF_BK_ADMIN_AUTH_H
#define SKIFF_BK_ADMIN_AUTH_H

#include <stddef.h>

#include "broker/core/node.h"

/* The listener name under which the admin port's ssl.* overrides are read:
 * listener.name.admin.ssl.keystore.location, ... */
#define BK_ADMIN_LISTENER_NAME "ADMIN"

/* Applies TLS and authentication to n->admin (already started, routes
 * registered: the access levels are set per route). Call once, before the
 * loop runs. KP_OK, or an error with a message in err[0..len) naming the
 * key or file at fault. */
KP_MUST_CHECK int bk_admin_auth_setup(bk_node_t *n, char *err, size_t len);

/* SIGHUP: re-reads the admin port's certificate files; new connections get
 * them, a failed read keeps the old ones (logged). 0, or -1. */
int bk_admin_auth_reload(bk_node_t *n);

/* Frees the admin port's TLS context (after bk_http_stop). */
void bk_admin_auth_free(bk_node_t *n);

#endif
