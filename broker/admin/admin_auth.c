/* TLS and authentication of the admin port; see admin_auth.h.
 *
 * The TLS context is broker/net/tls.c's, as for every Kafka listener, from
 * the keys of the listener named ADMIN (listener.name.admin.ssl.*, else
 * ssl.*); built at start-up before the loop runs and re-read on SIGHUP. */
#include "broker/admin/admin_auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/ssl.h>

#include "broker/config/config.h"
#include "broker/core/authz.h"
#include "broker/core/credentials.h"
#include "broker/http/admin.h"
#include "broker/net/tls.h"

/* Kafka's default for connection.failed.authentication.delay.ms */
#define FAIL_DELAY_DEFAULT_MS 100

static const char *key(const bk_node_t *n, const char *k) {
    return bk_cfg_listener_str(n->cfg, BK_ADMIN_LISTENER_NAME, k);
}

static bk_net_tls_auth_t auth_of(const char *v) {
    if (v && strcmp(v, "required") == 0) return BK_NET_TLS_AUTH_REQUIRED;
    if (v && strcmp(v, "requested") == 0) return BK_NET_TLS_AUTH_REQUESTED;
    return BK_NET_TLS_AUTH_NONE;
}

/* The server context of the Kafka listeners (broker/net/tls.c), from the
 * ADMIN listener's keys: one TLS code path for every port. */
static int tls_start(bk_node_t *n, char *err, size_t len) {
    const char *ks = key(n, "ssl.keystore.location");
    if (ks == NULL || *ks == '\0') {
        snprintf(err, len, "admin.security.protocol=SSL needs listener.name.admin.ssl.keystore.location "
                 "(or ssl.keystore.location): a PEM file with the certificate chain and the key");
        return KP_ERR_BAD_VALUE;
    }
    bk_net_tls_config_t tc = {
        .listener = BK_ADMIN_LISTENER_NAME,
        .keystore_location = ks,
        .key_password = key(n, "ssl.key.password"),
        .truststore_location = key(n, "ssl.truststore.location"),
        .client_auth = auth_of(key(n, "ssl.client.auth")),
        .enabled_protocols = key(n, "ssl.enabled.protocols"),
        .cipher_suites = key(n, "ssl.cipher.suites"),
        .principal_rules = key(n, "ssl.principal.mapping.rules"),
    };
    char why[512];
    n->admin_tls = bk_net_tls_new(&tc, false, why, sizeof why);
    if (n->admin_tls == NULL) {
        snprintf(err, len, "admin port TLS: %s", why);
        return KP_ERR_BAD_VALUE;
    }
    if (bk_http_set_tls(n->admin, bk_net_tls_ctx(n->admin_tls)) != KP_OK) {
        snprintf(err, len, "admin port TLS: cannot install the TLS context");
        return KP_ERR_BAD_VALUE;
    }
    return KP_OK;
}

int bk_admin_auth_reload(bk_node_t *n) {
    if (n->admin_tls == NULL)
        return 0;
    char why[512];
    if (bk_net_tls_reload(n->admin_tls, why, sizeof why) != 0 ||
        bk_http_set_tls(n->admin, bk_net_tls_ctx(n->admin_tls)) != KP_OK) {
        fprintf(stderr, "skiff: admin port: certificate reload failed, the previous ones stay: %s\n", why);
        return -1;
    }
    fprintf(stderr, "skiff: admin port: certificates reloaded; new connections use them\n");
    return 0;
}

void bk_admin_auth_free(bk_node_t *n) {
    bk_net_tls_free(n->admin_tls);
    n->admin_tls = NULL;
}

/* ssl.principal.mapping.rules of the ADMIN listener, as for Kafka listeners. */
static bool cert_principal(void *ctx, SSL *ssl, char *out, size_t cap) {
    bk_node_t *n = ctx;
    return n->admin_tls && bk_net_tls_principal(n->admin_tls, ssl, out, cap) == 0;
}

static bool check(void *ctx, const char *user, const char *password) {
    return bk_node_cred_check(ctx, user, password);
}

/* With the authorizer on (issue 18) the admin port follows the ACLs of
 * its authenticated principal: a change (POST) needs ALTER on the cluster,
 * a read (GET) DESCRIBE on the cluster; super users always pass. The
 * address is not known here, so only host "*" bindings apply. */
static bool is_super(void *ctx, const char *principal) {
    const bk_node_t *n = ctx;
    if (bk_node_is_super_user(n, principal)) return true;
    return bk_node_authz_on(n) &&
           bk_node_authorize(n, principal, "", BK_META_OP_ALTER, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME);
}

static bool may_read(void *ctx, const char *principal) {
    const bk_node_t *n = ctx;
    return !bk_node_authz_on(n) ||
           bk_node_authorize(n, principal, "", BK_META_OP_DESCRIBE, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME);
}

int bk_admin_auth_setup(bk_node_t *n, char *err, size_t len) {
    bk_http_t *a = n->admin;
    const bk_cfg_t *cfg = n->cfg;
    bool tls = strcmp(bk_cfg_str(cfg, BK_CFG_ADMIN_SECURITY_PROTOCOL), "SSL") == 0;
    bool basic = strcmp(bk_cfg_str(cfg, BK_CFG_ADMIN_AUTHENTICATION), "basic") == 0;
    bool certs = false;
    if (tls) {
        if (tls_start(n, err, len) != KP_OK)
            return KP_ERR_BAD_VALUE;
        const char *ca = key(n, "ssl.client.auth");
        certs = ca && (strcmp(ca, "required") == 0 || strcmp(ca, "requested") == 0);
    }
    if (!basic && !certs) {
        fprintf(stderr, "skiff: admin port on %s: %s, no authentication (admin.authentication=none)\n",
                bk_cfg_admin_listener(cfg), tls ? "TLS" : "plain HTTP");
        return KP_OK;
    }
    const char *d = key(n, "connection.failed.authentication.delay.ms");
    bk_http_auth_t auth = {
        .basic = basic,
        .check = check,
        .is_super = is_super,
        .may_read = may_read,
        .cert_principal = certs ? cert_principal : NULL,
        .ctx = n,
        .cache_ms = bk_cfg_int(cfg, BK_CFG_ADMIN_AUTHENTICATION_CACHE_MS),
        .fail_delay_ms = d && *d ? strtoll(d, NULL, 10) : FAIL_DELAY_DEFAULT_MS,
    };
    if (auth.fail_delay_ms < 0)
        auth.fail_delay_ms = FAIL_DELAY_DEFAULT_MS;
    int rc = bk_http_set_auth(a, &auth);
    if (rc != KP_OK) {
        snprintf(err, len, "admin port: cannot turn authentication on (%s)", kp_status_str(rc));
        return rc;
    }
    if (bk_cfg_bool(cfg, BK_CFG_ADMIN_PROBES_OPEN) &&
        (bk_http_route_access(a, "GET", "/healthz", BK_HTTP_ACCESS_OPEN) != KP_OK ||
         bk_http_route_access(a, "GET", "/readyz", BK_HTTP_ACCESS_OPEN) != KP_OK)) {
        snprintf(err, len, "admin port: cannot open /healthz and /readyz to probes");
        return KP_ERR_BAD_VALUE;
    }
    fprintf(stderr, "skiff: admin port on %s: %s, authentication:%s%s; GET needs a principal, POST a super "
            "user (super.users)%s\n", bk_cfg_admin_listener(cfg), tls ? "TLS" : "plain HTTP",
            basic ? " HTTP Basic (SASL credentials)" : "", certs ? " client certificates" : "",
            bk_cfg_bool(cfg, BK_CFG_ADMIN_PROBES_OPEN) ? "; /healthz and /readyz open" : "");
    return KP_OK;
}
