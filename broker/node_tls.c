/* broker/node_tls.c — see node_tls.h. */
#include "broker/node_tls.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "broker/net/tls.h"
#include "storage/st_status.h"

static bk_net_tls_auth_t auth_of(const char *v) {
    if (v && strcasecmp(v, "required") == 0) return BK_NET_TLS_AUTH_REQUIRED;
    if (v && strcasecmp(v, "requested") == 0) return BK_NET_TLS_AUTH_REQUESTED;
    return BK_NET_TLS_AUTH_NONE;
}

int bk_broker_tls_start(bk_node_t *n, char *err, size_t len) {
    size_t nl = 0;
    const bk_cfg_listener_t *ls = bk_cfg_listeners(n->cfg, &nl);
    for (size_t i = 0; i < nl; i++) {
        if (ls[i].security != BK_CFG_SEC_SSL && ls[i].security != BK_CFG_SEC_SASL_SSL) continue;
        const char *name = ls[i].name;
        bk_net_tls_config_t tc = {
            .listener = name,
            .keystore_location = bk_cfg_listener_str(n->cfg, name, "ssl.keystore.location"),
            .key_password = bk_cfg_listener_str(n->cfg, name, "ssl.key.password"),
            .truststore_location = bk_cfg_listener_str(n->cfg, name, "ssl.truststore.location"),
            .client_auth = auth_of(bk_cfg_listener_str(n->cfg, name, "ssl.client.auth")),
            .enabled_protocols = bk_cfg_listener_str(n->cfg, name, "ssl.enabled.protocols"),
            .cipher_suites = bk_cfg_listener_str(n->cfg, name, "ssl.cipher.suites"),
            .principal_rules = bk_cfg_listener_str(n->cfg, name, "ssl.principal.mapping.rules"),
        };
        char why[512];
        n->tls[i] = bk_net_tls_new(&tc, false, why, sizeof why);
        if (!n->tls[i]) {
            snprintf(err, len, "listener %s: %s", name, why);
            return -1;
        }
        char kt[160];
        bool ktls = bk_net_tls_ktls_available(kt, sizeof kt);
        st_logf(ST_LOG_INFO, "node %d: listener %s (%s): TLS from %s, ssl.client.auth=%s; %s", n->id, name,
                bk_cfg_security_name(ls[i].security), tc.keystore_location,
                bk_cfg_listener_str(n->cfg, name, "ssl.client.auth"),
                ktls ? "kTLS available: fetch data should leave by sendfile" :
                       "kTLS unavailable, fetch data goes read-encrypt-write");
        if (!ktls) st_logf(ST_LOG_INFO, "node %d: listener %s: kTLS: %s", n->id, name, kt);
    }
    return 0;
}

int bk_broker_tls_reload(bk_node_t *n) {
    int failed = 0;
    size_t nl = 0;
    const bk_cfg_listener_t *ls = bk_cfg_listeners(n->cfg, &nl);
    for (size_t i = 0; i < nl; i++) {
        if (!n->tls[i]) continue;
        char why[512];
        if (bk_net_tls_reload(n->tls[i], why, sizeof why) == 0) {
            st_logf(ST_LOG_INFO, "node %d: listener %s: certificates reloaded; new connections use them", n->id,
                    ls[i].name);
        } else {
            failed++;
            st_logf(ST_LOG_WARN, "node %d: listener %s: certificate reload failed, the previous ones stay: %s",
                    n->id, ls[i].name, why);
        }
    }
    return failed;
}

void bk_broker_tls_free(bk_node_t *n) {
    for (size_t i = 0; i < BK_CFG_LISTENERS_MAX; i++) {
        bk_net_tls_free(n->tls[i]);
        n->tls[i] = NULL;
    }
}
