/* broker/node_tls.h — the TLS contexts of the node's listeners: built at
 * start from each SSL / SASL_SSL listener's ssl.* keys (per-listener
 * overrides first, bk_cfg_listener_str), reloaded on SIGHUP. */
#ifndef SKIFF_BROKER_NODE_TLS_H
#define SKIFF_BROKER_NODE_TLS_H

#include <stddef.h>

#include "broker/core/node.h"

/* n->tls[i] for every TLS listener i of bk_cfg_listeners(). 0, or -1 with
 * the reason in err. */
int bk_broker_tls_start(bk_node_t *n, char *err, size_t len);
/* Re-reads every listener's certificate files (SIGHUP): new connections get
 * the new context; a listener whose files fail keeps the old one. Logs one
 * line per listener. Returns how many failed. */
int bk_broker_tls_reload(bk_node_t *n);
/* After dynamic configs changed (node_dynconf.c): a listener whose
 * keystore / key password / trust store now differs gets a new context
 * from the new files (new connections), or keeps the old one and logs why. */
void bk_broker_tls_sync(bk_node_t *n);
void bk_broker_tls_free(bk_node_t *n);

#endif
