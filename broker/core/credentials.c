/* credentials.c — SASL settings per listener, PLAIN users, SCRAM lookups
 * and super.users (credentials.h). */
#include "broker/core/credentials.h"
#include "broker/core/authz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "broker/config/jaas.h"
#include "broker/core/node.h"

typedef struct {
    char name[BK_CFG_LISTENER_NAME_MAX + 1];
    unsigned mechs;
    kp_sasl_mech_t order[3];
    size_t norder;
    bk_cfg_jaas_t jaas;
    bool has_jaas;
} sasl_listener_t;

struct bk_node_sasl {
    sasl_listener_t l[BK_CFG_LISTENERS_MAX];
    size_t n;
    char *super[BK_NODE_SUPER_USERS_MAX];
    size_t nsuper;
    uint8_t secret[32];
    bk_node_scram_boot_state_t boot;
};

bk_node_scram_boot_state_t *bk_node_scram_boot_state(bk_node_t *node) {
    return node->sasl ? &node->sasl->boot : NULL;
}

static const sasl_listener_t *find(const bk_node_t *node, const char *listener) {
    if (!node->sasl || !listener) return NULL;
    for (size_t i = 0; i < node->sasl->n; i++)
        if (strcmp(node->sasl->l[i].name, listener) == 0) return &node->sasl->l[i];
    return NULL;
}

void bk_node_sasl_free(bk_node_t *node) {
    struct bk_node_sasl *s = node->sasl;
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) bk_cfg_jaas_free(&s->l[i].jaas);
    for (size_t i = 0; i < s->nsuper; i++) free(s->super[i]);
    OPENSSL_cleanse(s->secret, sizeof s->secret);
    free(s);
    node->sasl = NULL;
}

/* Kafka's listener.name.<listener> form is lower-case. */
static const char *lower(const char *name) {
    static char buf[BK_CFG_LISTENER_NAME_MAX + 1];
    size_t i = 0;
    for (; name[i] && i < BK_CFG_LISTENER_NAME_MAX; i++)
        buf[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
    buf[i] = 0;
    return buf;
}

static int mechs_parse(const char *text, const char *lname, sasl_listener_t *l, bool log, char *err, size_t len) {
    const char *p = text ? text : "";
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        const char *e = p;
        while (*e && *e != ',') e++;
        const char *t = e;
        while (t > p && t[-1] == ' ') t--;
        if (t > p) {
            kp_slice_t name = { (const uint8_t *)p, (size_t)(t - p) };
            kp_sasl_mech_t m;
            if (kp_sasl_mech_parse(name, &m) == KP_OK) {
                if (!(l->mechs & (1u << m))) l->order[l->norder++] = m;
                l->mechs |= 1u << m;
            } else if (kp_slice_eq_cstr(name, "GSSAPI") || kp_slice_eq_cstr(name, "OAUTHBEARER")) {
                if (log)
                    fprintf(stderr, "skiff: listener %s: sasl.enabled.mechanisms: %.*s is not served by skiff; ignored\n",
                            lname, (int)name.len, (const char *)name.p);
            } else {
                snprintf(err, len, "listener %s: sasl.enabled.mechanisms: unknown mechanism '%.*s' "
                         "(skiff serves PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", lname, (int)name.len,
                         (const char *)name.p);
                return -1;
            }
        }
        p = e;
    }
    if (l->mechs == 0) {
        snprintf(err, len, "listener %s is SASL but sasl.enabled.mechanisms ('%s') holds no mechanism "
                 "skiff serves: set listener.name.%s.sasl.enabled.mechanisms (or sasl.enabled.mechanisms) "
                 "to PLAIN, SCRAM-SHA-256 and/or SCRAM-SHA-512", lname, text ? text : "", lower(lname));
        return -1;
    }
    return 0;
}

static int super_parse(struct bk_node_sasl *s, const char *text, char *err, size_t len) {
    const char *p = text ? text : "";
    while (*p) {
        while (*p == ' ' || *p == ';') p++;
        const char *e = p;
        while (*e && *e != ';') e++;
        const char *t = e;
        while (t > p && t[-1] == ' ') t--;
        if (t > p) {
            if (s->nsuper >= BK_NODE_SUPER_USERS_MAX || (size_t)(t - p) > BK_NET_PRINCIPAL_MAX) {
                snprintf(err, len, "super.users: more than %d entries or an entry over %d bytes",
                         BK_NODE_SUPER_USERS_MAX, BK_NET_PRINCIPAL_MAX);
                return -1;
            }
            if ((size_t)(t - p) < 6 || memcmp(p, "User:", 5) != 0) {
                snprintf(err, len, "super.users: '%.*s' is not of the form User:NAME (entries separated by ';')",
                         (int)(t - p > 100 ? 100 : t - p), p);
                return -1;
            }
            char *v = strndup(p, (size_t)(t - p));
            if (!v) { snprintf(err, len, "out of memory"); return -1; }
            s->super[s->nsuper++] = v;
        }
        p = e;
    }
    return 0;
}

int bk_node_sasl_init(bk_node_t *node, bool log, char *err, size_t len) {
    bk_node_sasl_free(node);
    struct bk_node_sasl *s = calloc(1, sizeof *s);
    if (!s) { snprintf(err, len, "out of memory"); return -1; }
    node->sasl = s;
    if (RAND_bytes(s->secret, sizeof s->secret) != 1) { snprintf(err, len, "RAND_bytes failed"); return -1; }
    if (super_parse(s, bk_cfg_str(node->cfg, BK_CFG_SUPER_USERS), err, len) != 0) return -1;
    if (bk_node_authz_config(node->cfg, &node->authz_on, &node->authz_everyone, err, len) != 0) return -1;
    if (bk_node_scram_boot_read(node->cfg, s->boot.v, &s->boot.n, err, len) != 0) return -1;
    size_t nl = 0;
    const bk_cfg_listener_t *ls = bk_cfg_listeners(node->cfg, &nl);
    bool secured = false;
    for (size_t i = 0; i < nl; i++) secured |= ls[i].security != BK_CFG_SEC_PLAINTEXT;
    if (log && secured && s->nsuper == 0)
        fprintf(stderr, "skiff: node %d: super.users is empty: node-to-node RPCs (raft, registration, "
                "replica fetches, ...) on SSL/SASL listeners are accepted from any authenticated principal\n",
                node->id);
    for (size_t i = 0; i < nl && s->n < BK_CFG_LISTENERS_MAX; i++) {
        if (ls[i].security != BK_CFG_SEC_SASL_PLAINTEXT && ls[i].security != BK_CFG_SEC_SASL_SSL) continue;
        sasl_listener_t *l = &s->l[s->n++];
        snprintf(l->name, sizeof l->name, "%s", ls[i].name);
        if (mechs_parse(bk_cfg_listener_str(node->cfg, l->name, "sasl.enabled.mechanisms"), l->name, l, log, err, len) != 0)
            return -1;
        const char *key = "plain.sasl.jaas.config";
        const char *jaas = bk_cfg_listener_str(node->cfg, l->name, key);
        if (!jaas) jaas = bk_cfg_listener_str(node->cfg, l->name, key = "sasl.jaas.config");
        if (jaas) {
            char why[200];
            int st = bk_cfg_jaas_parse(jaas, strlen(jaas), &l->jaas, why, sizeof why);
            if (st != KP_OK) {
                snprintf(err, len, "listener.name.%s.%s (or its fallback): %s", lower(l->name), key, why);
                return -1;
            }
            l->has_jaas = true;
        }
        if ((l->mechs & (1u << KP_SASL_MECH_PLAIN)) && (!l->has_jaas || l->jaas.nusers == 0)) {
            snprintf(err, len, "listener %s enables PLAIN but has no PLAIN users: set "
                     "listener.name.%s.plain.sasl.jaas.config with user_NAME=\"password\" entries",
                     l->name, lower(l->name));
            return -1;
        }
    }
    return 0;
}

unsigned bk_node_sasl_mechs(const bk_node_t *node, const char *listener) {
    const sasl_listener_t *l = find(node, listener);
    return l ? l->mechs : 0;
}

size_t bk_node_sasl_mech_names(const bk_node_t *node, const char *listener, const char **out) {
    const sasl_listener_t *l = find(node, listener);
    if (!l) return 0;
    for (size_t i = 0; i < l->norder; i++) out[i] = kp_sasl_mech_name(l->order[i]);
    return l->norder;
}

static bool plain_in(const sasl_listener_t *l, const char *user, const char *password) {
    if (!l->has_jaas) return false;
    const char *pw = bk_cfg_jaas_user(&l->jaas, user);
    /* an unknown user still pays one comparison, against itself */
    const char *ref = pw ? pw : password;
    bool eq = kp_sasl_ct_equal(ref, strlen(ref), password, strlen(password));
    return pw != NULL && eq;
}

bool bk_node_sasl_plain_check(const bk_node_t *node, const char *listener, const char *user,
                              const char *password) {
    const sasl_listener_t *l = find(node, listener);
    return l && (l->mechs & (1u << KP_SASL_MECH_PLAIN)) && plain_in(l, user, password);
}

void bk_node_scram_lookup(const bk_node_t *node, const char *user, kp_sasl_mech_t mech,
                          kp_scram_cred_t *out, bool *known) {
    memset(out, 0, sizeof *out);
    const bk_meta_scram_t *c = bk_meta_image_scram(&node->img, user, kp_sasl_mech_scram_type(mech));
    size_t kl = kp_scram_hash_len(mech);
    if (c) {
        out->mech = mech;
        out->iterations = c->iterations;
        out->salt_len = c->salt_len;
        memcpy(out->salt, c->salt, c->salt_len);
        memcpy(out->stored_key, c->stored_key, kl);
        memcpy(out->server_key, c->server_key, kl);
        *known = true;
        return;
    }
    /* fake: HMAC-SHA-512(secret, tag | mech | name), first bytes */
    *known = false;
    out->mech = mech;
    out->iterations = KP_SCRAM_ITERATIONS_MIN;
    const char *tags[3] = { "salt", "stored", "server" };
    uint8_t *dst[3] = { out->salt, out->stored_key, out->server_key };
    /* 32-byte salt: what skiff format and most clients' Alter calls use */
    size_t lens[3] = { 32, kl, kl };
    for (int i = 0; i < 3; i++) {
        uint8_t msg[8 + KP_SASL_NAME_MAX + 1];
        size_t ul = strnlen(user, KP_SASL_NAME_MAX);
        size_t tl = strlen(tags[i]);
        memcpy(msg, tags[i], tl);
        msg[tl] = (uint8_t)mech;
        memcpy(msg + tl + 1, user, ul);
        uint8_t mac[64];
        unsigned int ml = 0;
        const uint8_t *secret = node->sasl ? node->sasl->secret : (const uint8_t *)"";
        if (!HMAC(EVP_sha512(), secret, node->sasl ? 32 : 0, msg, tl + 1 + ul, mac, &ml)) memset(mac, 0, sizeof mac);
        memcpy(dst[i], mac, lens[i]);
    }
    out->salt_len = 32;
}

bool bk_node_cred_check(const bk_node_t *node, const char *user, const char *password) {
    if (!user || !password || !user[0] || !password[0]) return false;
    bool ok = false;
    if (node->sasl)
        for (size_t i = 0; i < node->sasl->n; i++)
            if (plain_in(&node->sasl->l[i], user, password)) ok = true;
    if (ok) return true;
    for (int8_t m = 1; m <= 2; m++) {
        const bk_meta_scram_t *c = bk_meta_image_scram(&node->img, user, m);
        if (!c) continue;
        kp_sasl_mech_t mech;
        if (kp_sasl_mech_from_scram_type(m, &mech) != KP_OK) continue;
        kp_scram_cred_t k;
        bool known;
        bk_node_scram_lookup(node, user, mech, &k, &known);
        if (known && kp_scram_cred_check_password(&k, password)) return true;
    }
    return false;
}

bool bk_node_peer_allowed(const bk_node_t *node, const bk_net_conn_t *conn) {
    if (bk_net_conn_security(conn) == BK_NET_SEC_PLAINTEXT) return true;
    const char *principal = bk_net_conn_principal(conn);
    if (bk_node_is_super_user(node, principal)) return true;
    if (node->authz_on) {
        /* Kafka's rule with an authorizer: CLUSTER_ACTION on the cluster */
        char host[64];
        bk_node_authz_host(bk_net_conn_peer(conn), host, sizeof host);
        return bk_node_authorize(node, principal, host, BK_META_OP_CLUSTER_ACTION, BK_META_RES_CLUSTER,
                                 BK_META_ACL_CLUSTER_NAME);
    }
    return !node->sasl || node->sasl->nsuper == 0;
}

bool bk_node_is_super_user(const bk_node_t *node, const char *principal) {
    if (!node->sasl || !principal) return false;
    for (size_t i = 0; i < node->sasl->nsuper; i++)
        if (strcmp(node->sasl->super[i], principal) == 0) return true;
    return false;
}
