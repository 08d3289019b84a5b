/* broker/node_tls.c — see node_tls.h. */
#include "broker/node_tls.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "broker/admin/admin_auth.h"
#include "broker/config/jaas.h"
#include "broker/net/quorum_client.h"

#include "broker/net/tls.h"
#include "storage/st_status.h"

static bk_net_tls_auth_t auth_of(const char *v) {
    if (v && strcasecmp(v, "required") == 0) return BK_NET_TLS_AUTH_REQUIRED;
    if (v && strcasecmp(v, "requested") == 0) return BK_NET_TLS_AUTH_REQUESTED;
    return BK_NET_TLS_AUTH_NONE;
}

/* The node's own login (`username`/`password` of the JAAS value, as
 * Kafka's PlainLoginModule / ScramLoginModule read them), through the one
 * JAAS parser (broker/config/jaas.h); false when absent, malformed or too
 * long. */
static bool own_login(const char *jaas, char *user, size_t ucap, char *pw, size_t pcap) {
    bk_cfg_jaas_t j;
    char why[160];
    if (bk_cfg_jaas_parse(jaas, strlen(jaas), &j, why, sizeof why) != KP_OK) return false;
    bool ok = j.username && j.password && strlen(j.username) < ucap && strlen(j.password) < pcap;
    if (ok) {
        snprintf(user, ucap, "%s", j.username);
        snprintf(pw, pcap, "%s", j.password);
    }
    bk_cfg_jaas_free(&j);
    return ok;
}

static bool sasl_supported(const char *m, size_t n) {
    return (n == 5 && memcmp(m, "PLAIN", 5) == 0) || (n == 13 && memcmp(m, "SCRAM-SHA-256", 13) == 0) ||
           (n == 13 && memcmp(m, "SCRAM-SHA-512", 13) == 0);
}

/* The first of a mechanism list skiff logs in with, copied to out, or NULL. */
static const char *first_supported(const char *list, char *out, size_t cap) {
    for (const char *p = list; p && *p;) {
        while (*p == ' ' || *p == ',') p++;
        size_t n = strcspn(p, ", ");
        if (n && sasl_supported(p, n) && n < cap) {
            memcpy(out, p, n);
            out[n] = '\0';
            return out;
        }
        p += n;
    }
    return NULL;
}

/* How this node reaches one kind of peer: the security protocol of the
 * listener it connects to, a client TLS context from that listener's
 * ssl.* keys (the node's own key store is its identity for mutual TLS),
 * and for SASL_* its own login from the listener's JAAS config. */
static int peer_security(bk_node_t *n, bk_net_qc_target_t target, const char *listener, bk_cfg_key_t mech_key,
                         char *err, size_t len) {
    bk_cfg_security_t s = BK_CFG_SEC_PLAINTEXT;
    if (!listener || !bk_cfg_listener_security(n->cfg, listener, &s)) return 0; /* checked by the config */
    bk_net_qc_security_t qs;
    memset(&qs, 0, sizeof qs);
    qs.security = (bk_net_security_t)s;
    const char *what = target == BK_NET_QC_TO_CONTROLLER ? "controller" : "inter-broker";
    if (s == BK_CFG_SEC_SSL || s == BK_CFG_SEC_SASL_SSL) {
        bk_net_tls_config_t tc = {
            .listener = listener,
            .keystore_location = bk_cfg_listener_str(n->cfg, listener, "ssl.keystore.location"),
            .key_password = bk_cfg_listener_str(n->cfg, listener, "ssl.key.password"),
            .truststore_location = bk_cfg_listener_str(n->cfg, listener, "ssl.truststore.location"),
            .enabled_protocols = bk_cfg_listener_str(n->cfg, listener, "ssl.enabled.protocols"),
            .cipher_suites = bk_cfg_listener_str(n->cfg, listener, "ssl.cipher.suites"),
        };
        char why[512];
        n->peer_tls[target] = bk_net_tls_new(&tc, true, why, sizeof why);
        if (!n->peer_tls[target]) {
            snprintf(err, len, "%s connections (listener %s): %s", what, listener, why);
            return -1;
        }
        qs.tls = n->peer_tls[target];
    }
    if (s == BK_CFG_SEC_SASL_PLAINTEXT || s == BK_CFG_SEC_SASL_SSL) {
        const char *mech = bk_cfg_str(n->cfg, mech_key);
        if (!sasl_supported(mech, strlen(mech))) {
            if (bk_cfg_source(n->cfg, mech_key) != BK_CFG_SRC_DEFAULT) {
                snprintf(err, len, "%s=%s: the %s listener %s is %s; skiff logs in with PLAIN, SCRAM-SHA-256 or "
                         "SCRAM-SHA-512", bk_cfg_desc(mech_key)->name, mech, what, listener, bk_cfg_security_name(s));
                return -1;
            }
            /* Kafka's default (GSSAPI) left as it is: the first mechanism
             * the listener enables that skiff speaks */
            mech = first_supported(bk_cfg_listener_str(n->cfg, listener, "sasl.enabled.mechanisms"), qs.mechanism,
                                   sizeof qs.mechanism);
        }
        if (mech && mech != qs.mechanism) snprintf(qs.mechanism, sizeof qs.mechanism, "%s", mech);
        char key[64], lower[BK_CFG_LISTENER_NAME_MAX + 1];
        snprintf(key, sizeof key, "%s.sasl.jaas.config", qs.mechanism[0] ? qs.mechanism : "plain");
        for (char *p = key; *p; p++) *p = (char)tolower((unsigned char)*p);
        snprintf(lower, sizeof lower, "%s", listener);
        for (char *p = lower; *p; p++) *p = (char)tolower((unsigned char)*p);
        const char *jaas = bk_cfg_listener_str(n->cfg, listener, key);
        if (!jaas) jaas = bk_cfg_listener_str(n->cfg, listener, "sasl.jaas.config");
        if (!mech)
            snprintf(qs.unusable, sizeof qs.unusable, "%s is unset (GSSAPI) and listener %s enables none of PLAIN, "
                     "SCRAM-SHA-256, SCRAM-SHA-512", bk_cfg_desc(mech_key)->name, listener);
        else if (!jaas || !own_login(jaas, qs.username, sizeof qs.username, qs.password, sizeof qs.password))
            snprintf(qs.unusable, sizeof qs.unusable, "no own login: username=\"...\" password=\"...\" missing in "
                     "listener.name.%s.%s (or sasl.jaas.config)", lower, key);
        if (qs.unusable[0])
            st_logf(ST_LOG_WARN, "node %d: %s connections (listener %s, %s) cannot log in: %s", n->id, what, listener,
                    bk_cfg_security_name(s), qs.unusable);
    }
    bk_net_qc_set_security(target, &qs);
    if (s != BK_CFG_SEC_PLAINTEXT && !qs.unusable[0])
        st_logf(ST_LOG_INFO, "node %d: %s connections go to listener %s over %s%s%s", n->id, what, listener,
                bk_cfg_security_name(s), qs.mechanism[0] ? " as " : "", qs.mechanism[0] ? qs.username : "");
    return 0;
}

/* The inter-broker listener: inter.broker.listener.name, else the first
 * advertised listener (the rule of bk_node_broker_endpoint). */
static const char *inter_broker_listener(const bk_node_t *n) {
    if (!bk_cfg_is_null(n->cfg, BK_CFG_INTER_BROKER_LISTENER_NAME)) return bk_cfg_str(n->cfg, BK_CFG_INTER_BROKER_LISTENER_NAME);
    size_t na = 0;
    const bk_cfg_listener_t *adv = bk_cfg_advertised(n->cfg, &na);
    return na > 0 ? adv[0].name : NULL;
}

int bk_broker_tls_start(bk_node_t *n, char *err, size_t len) {
    char ctl[BK_CFG_LISTENER_NAME_MAX + 1] = "";
    const char *names = bk_cfg_str(n->cfg, BK_CFG_CONTROLLER_LISTENER_NAMES);
    size_t cn = strcspn(names, ",");
    if (cn < sizeof ctl) {
        memcpy(ctl, names, cn);
        ctl[cn] = '\0';
    }
    if (peer_security(n, BK_NET_QC_TO_CONTROLLER, ctl[0] ? ctl : NULL, BK_CFG_SASL_MECHANISM_CONTROLLER_PROTOCOL, err,
                      len) != 0 ||
        peer_security(n, BK_NET_QC_TO_BROKER, inter_broker_listener(n), BK_CFG_SASL_MECHANISM_INTER_BROKER_PROTOCOL,
                      err, len) != 0)
        return -1;
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
    if (bk_admin_auth_reload(n) != 0) failed++;
    return failed;
}

void bk_broker_tls_sync(bk_node_t *n) {
    size_t nl = 0;
    const bk_cfg_listener_t *ls = bk_cfg_listeners(n->cfg, &nl);
    for (size_t i = 0; i < nl; i++) {
        if (!n->tls[i]) continue;
        const char *ks = bk_cfg_listener_str(n->cfg, ls[i].name, "ssl.keystore.location");
        const char *pw = bk_cfg_listener_str(n->cfg, ls[i].name, "ssl.key.password");
        const char *ts = bk_cfg_listener_str(n->cfg, ls[i].name, "ssl.truststore.location");
        char why[512];
        int rc = bk_net_tls_reconfigure(n->tls[i], ks ? ks : "", pw ? pw : "", ts ? ts : "", why, sizeof why);
        if (rc > 0)
            st_logf(ST_LOG_INFO, "node %d: listener %s: new TLS files (%s); new connections use them", n->id,
                    ls[i].name, ks ? ks : "");
        else if (rc < 0)
            st_logf(ST_LOG_WARN, "node %d: listener %s: the new TLS files are refused, the previous ones stay: %s",
                    n->id, ls[i].name, why);
    }
}

void bk_broker_tls_free(bk_node_t *n) {
    bk_net_qc_security_t plain;
    memset(&plain, 0, sizeof plain);
    bk_net_qc_set_security(BK_NET_QC_TO_CONTROLLER, &plain);
    bk_net_qc_set_security(BK_NET_QC_TO_BROKER, &plain);
    for (size_t i = 0; i < 2; i++) {
        bk_net_tls_free(n->peer_tls[i]);
        n->peer_tls[i] = NULL;
    }
    for (size_t i = 0; i < BK_CFG_LISTENERS_MAX; i++) {
        bk_net_tls_free(n->tls[i]);
        n->tls[i] = NULL;
    }
}
