/* authz.c — StandardAuthorizer decisions (authz.h). The cost of one
 * decision is that of bk_meta_acls_decide: hash lookups by resource, never
 * a scan of the bindings. */
#include "broker/core/authz.h"

#include <stdio.h>
#include <string.h>

#include "broker/core/credentials.h"
#include "broker/core/node.h"

int bk_node_authz_config(const bk_cfg_t *cfg, bool *on, bool *everyone, char *err, size_t len) {
    const char *cls = bk_cfg_str(cfg, BK_CFG_AUTHORIZER_CLASS_NAME);
    *everyone = bk_cfg_bool(cfg, BK_CFG_ALLOW_EVERYONE_IF_NO_ACL_FOUND);
    *on = false;
    if (!cls || !*cls) return 0;
    /* the ZooKeeper-era class name has the same ACL model: existing
     * configs keep their meaning */
    if (strcmp(cls, BK_NODE_AUTHORIZER_CLASS) == 0 || strcmp(cls, "kafka.security.authorizer.AclAuthorizer") == 0) {
        *on = true;
        return 0;
    }
    snprintf(err, len, "authorizer.class.name: '%s' is not implemented (use %s, or leave it empty)", cls,
             BK_NODE_AUTHORIZER_CLASS);
    return -1;
}

bool bk_node_authz_on(const bk_node_t *node) { return node->authz_on; }

bool bk_node_authorize(const bk_node_t *node, const char *principal, const char *host, int8_t op, int8_t rtype,
                       const char *name) {
    if (!node->authz_on) return true;
    if (bk_node_is_super_user(node, principal)) return true;
    switch (bk_meta_acls_decide(node->img.acls, principal, host, op, rtype, name)) {
    case BK_META_AUTHZ_ALLOW: return true;
    case BK_META_AUTHZ_DENY: return false;
    case BK_META_AUTHZ_NO_ACL: return node->authz_everyone;
    }
    return false;
}

void bk_node_authz_host(const char *peer, char *out, size_t cap) {
    if (!cap) return;
    const char *p = peer ? peer : "";
    size_t n;
    if (*p == '[') {
        const char *e = strchr(p, ']');
        p++;
        n = e ? (size_t)(e - p) : strlen(p);
    } else {
        const char *c = strrchr(p, ':');
        n = c ? (size_t)(c - p) : strlen(p);
    }
    if (n >= cap) n = cap - 1;
    memcpy(out, p, n);
    out[n] = '\0';
}
