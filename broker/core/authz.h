/* authz.h — the authorization decision of a node: Kafka's StandardAuthorizer
 * over the ACL bindings of the committed image (meta/acl.h), switched on by
 * authorizer.class.name, with super.users and
 * allow.everyone.if.no.acl.found. Loop thread only. */
#ifndef SKIFF_BROKER_CORE_AUTHZ_H
#define SKIFF_BROKER_CORE_AUTHZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/config/config.h"
#include "broker/meta/acl.h"

typedef struct bk_node bk_node_t;

#define BK_NODE_AUTHORIZER_CLASS "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

/* Reads authorizer.class.name and allow.everyone.if.no.acl.found into
 * *on / *everyone. -1 with a message for a class skiff does not implement
 * (a key that is accepted must act). */
int bk_node_authz_config(const bk_cfg_t *cfg, bool *on, bool *everyone, char *err, size_t len);

/* True when the authorizer is on. */
bool bk_node_authz_on(const bk_node_t *node);

/* May `principal` ("User:NAME") from `host` (an address, no port) do `op`
 * on resource (rtype, name)? Always true with the authorizer off and for
 * super users; else the image's ACLs decide (DENY wins), and with no ACL
 * on the resource allow.everyone.if.no.acl.found. */
bool bk_node_authorize(const bk_node_t *node, const char *principal, const char *host, int8_t op, int8_t rtype,
                       const char *name);

/* "127.0.0.1:5555" / "[::1]:5555" -> the address alone, in out. */
void bk_node_authz_host(const char *peer, char *out, size_t cap);

#endif
