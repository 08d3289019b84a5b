/* Per-listener config values: Kafka's `listener.name.<listener>.<key>`
 * (listener name lower-case in Kafka's form; skiff lower-cases whatever it
 * gets, so "listener.name.SSL.x" and "listener.name.ssl.x" are one key).
 * They are kept as text beside the key table, checked against the key they
 * override when loaded, and read through bk_cfg_listener_str. */
#include "broker/config/config_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "protocol/kp_principal.h"

#define PREFIX_LEN (sizeof CFG_LOV_PREFIX - 1)
#define JAAS_SUFFIX ".sasl.jaas.config"
#define LOV_NAME_MAX 256

bool cfg_lov_is(const char *k, size_t kn) {
    return kn >= PREFIX_LEN && memcmp(k, CFG_LOV_PREFIX, PREFIX_LEN) == 0;
}

static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Splits "listener.name.L.K" into L and K; false when malformed. */
static bool split(const char *k, size_t kn, const char **l, size_t *ln, const char **rest, size_t *rn) {
    if (!cfg_lov_is(k, kn) || kn > LOV_NAME_MAX) return false;
    const char *p = k + PREFIX_LEN, *end = k + kn;
    const char *dot = memchr(p, '.', (size_t)(end - p));
    if (dot == NULL || dot == p || dot + 1 >= end) return false;
    for (const char *q = p; q < dot; q++)
        if (!name_char(*q)) return false;
    if ((size_t)(dot - p) > BK_CFG_LISTENER_NAME_MAX) return false;
    *l = p;
    *ln = (size_t)(dot - p);
    *rest = dot + 1;
    *rn = (size_t)(end - dot - 1);
    return true;
}

/* "<mechanism>.sasl.jaas.config": Kafka's per-mechanism JAAS key, which
 * exists only under a listener prefix. */
static bool is_jaas_key(const char *r, size_t rn) {
    size_t sn = sizeof JAAS_SUFFIX - 1;
    if (rn <= sn || memcmp(r + rn - sn, JAAS_SUFFIX, sn) != 0) return false;
    for (size_t i = 0; i < rn - sn; i++)
        if (!(isalnum((unsigned char)r[i]) || r[i] == '-' || r[i] == '_')) return false;
    return true;
}

int cfg_lov_check(const char *k, size_t kn, const char *v, size_t vn, char *why, size_t why_len) {
    const char *l, *r;
    size_t ln, rn;
    if (!split(k, kn, &l, &ln, &r, &rn)) {
        snprintf(why, why_len, "'%.*s': expected listener.name.<listener>.<key>", (int)(kn > 200 ? 200 : kn), k);
        return KP_ERR_BAD_VALUE;
    }
    bk_cfg_val_t *val = malloc(sizeof *val);
    if (val == NULL) {
        snprintf(why, why_len, "out of memory");
        return KP_ERR_BAD_VALUE;
    }
    int rc = KP_OK;
    bk_cfg_key_t key = bk_cfg_key_by_name(r, rn);
    const bk_cfg_kkey_t *kk = key == BK_CFG__COUNT ? bk_cfg_kkey_find(r, rn, BK_CFG_SCOPE_BROKER) : NULL;
    if (key != BK_CFG__COUNT)
        rc = bk_cfg_parse_value(bk_cfg_desc(key), v, vn, val, why, why_len);
    else if (kk != NULL)
        rc = bk_cfg_kkey_check(kk, v, vn, val, why, why_len);
    else if (is_jaas_key(r, rn)) {
        if (vn >= BK_CFG_VALUE_MAX) {
            snprintf(why, why_len, "value longer than %d bytes", BK_CFG_VALUE_MAX - 1);
            rc = KP_ERR_BAD_VALUE;
        }
    } else {
        snprintf(why, why_len, "unknown key '%.*s' (after listener.name.%.*s.)", (int)rn, r, (int)ln, l);
        rc = KP_ERR_BAD_VALUE;
    }
    free(val);
    return rc;
}

/* The stored form of a key: the listener part lower-cased. */
static char *lov_name(const char *k, size_t kn) {
    const char *l, *r;
    size_t ln, rn;
    if (!split(k, kn, &l, &ln, &r, &rn)) return NULL;
    char *s = malloc(kn + 1);
    if (s == NULL) return NULL;
    memcpy(s, k, kn);
    s[kn] = '\0';
    for (size_t i = 0; i < ln; i++) s[PREFIX_LEN + i] = (char)tolower((unsigned char)s[PREFIX_LEN + i]);
    return s;
}

static int lov_put(bk_cfg_t *cfg, int level, const char *k, size_t kn, const char *v, size_t vn, int32_t line) {
    char *name = lov_name(k, kn);
    char *value = v ? malloc(vn + 1) : NULL;
    if (name == NULL || (v && value == NULL)) {
        free(name);
        free(value);
        return KP_ERR_NOMEM;
    }
    if (v) {
        memcpy(value, v, vn);
        value[vn] = '\0';
    }
    for (size_t i = 0; i < cfg->nlov; i++)
        if (cfg->lov[i].level == level && strcmp(cfg->lov[i].name, name) == 0) {
            free(name);
            free(cfg->lov[i].value);
            if (value) {
                cfg->lov[i].value = value;
                cfg->lov[i].line = line;
            } else {
                free(cfg->lov[i].name);
                cfg->lov[i] = cfg->lov[--cfg->nlov];
            }
            return KP_OK;
        }
    if (!value) {
        free(name);
        return KP_OK;
    }
    if (cfg->nlov == cfg->lov_cap) {
        size_t cap = cfg->lov_cap ? 2 * cfg->lov_cap : 16;
        cfg_lov_t *grown = realloc(cfg->lov, cap * sizeof *grown);
        if (grown == NULL) {
            free(name);
            free(value);
            return KP_ERR_NOMEM;
        }
        cfg->lov = grown;
        cfg->lov_cap = cap;
    }
    cfg->lov[cfg->nlov++] = (cfg_lov_t){ name, value, line, level };
    return KP_OK;
}

int cfg_lov_set(bk_cfg_t *cfg, const char *k, size_t kn, const char *v, size_t vn, int32_t line) {
    return lov_put(cfg, LOV_STATIC, k, kn, v, vn, line);
}

int cfg_lov_set_dynamic(bk_cfg_t *cfg, int level, const char *k, const char *v) {
    return lov_put(cfg, level, k, strlen(k), v, v ? strlen(v) : 0, 0);
}

void cfg_lov_free(bk_cfg_t *cfg) {
    for (size_t i = 0; i < cfg->nlov; i++) {
        free(cfg->lov[i].name);
        free(cfg->lov[i].value);
    }
    free(cfg->lov);
    cfg->lov = NULL;
    cfg->nlov = cfg->lov_cap = 0;
}

/* The per-listener value of `level`, or NULL. */
static const cfg_lov_t *lov_find(const bk_cfg_t *cfg, int level, const char *listener, const char *key) {
    size_t ln = strlen(listener), kn = strlen(key);
    for (size_t i = 0; i < cfg->nlov; i++) {
        const char *n = cfg->lov[i].name;
        if (cfg->lov[i].level != level || strlen(n) != PREFIX_LEN + ln + 1 + kn) continue;
        bool same = n[PREFIX_LEN + ln] == '.' && memcmp(n + PREFIX_LEN + ln + 1, key, kn) == 0;
        for (size_t j = 0; same && j < ln; j++)
            same = n[PREFIX_LEN + j] == (char)tolower((unsigned char)listener[j]);
        if (same) return &cfg->lov[i];
    }
    return NULL;
}

const char *bk_cfg_listener_str(const bk_cfg_t *cfg, const char *listener, const char *key) {
    /* dynamic per-broker > dynamic cluster default > file / --set */
    static const int order[] = { DYN_BROKER, DYN_DEFAULT, LOV_STATIC };
    for (size_t o = 0; o < sizeof order / sizeof order[0]; o++) {
        const cfg_lov_t *l = lov_find(cfg, order[o], listener, key);
        if (l) return l->value;
    }
    size_t kn = strlen(key);
    bk_cfg_key_t k = bk_cfg_key_by_name(key, kn);
    if (k != BK_CFG__COUNT) return bk_cfg_is_null(cfg, k) ? NULL : bk_cfg_str(cfg, k);
    const bk_cfg_kkey_t *kk = bk_cfg_kkey_find(key, kn, BK_CFG_SCOPE_BROKER);
    if (kk == NULL) return NULL;
    bk_cfg_source_t src;
    return cfg_kval(cfg, kk, &src);
}

/* Kafka lets these change per listener at run time (dynamic SSL keystore
 * update): new connections use the new files. */
static const char *const lov_dynamic[] = { "ssl.keystore.location", "ssl.key.password", "ssl.truststore.location" };

int cfg_lov_dynamic(bk_cfg_t *cfg, const char *name, const char *value, bool cluster_default, bool validate_only,
                    char *why, size_t why_len) {
    const char *l, *r;
    size_t ln, rn;
    if (!split(name, strlen(name), &l, &ln, &r, &rn)) {
        snprintf(why, why_len, "'%.200s': expected listener.name.<listener>.<key>", name);
        return BK_CFG_INVALID_CONFIG;
    }
    bool ok = false;
    for (size_t i = 0; i < sizeof lov_dynamic / sizeof lov_dynamic[0]; i++)
        ok |= strlen(lov_dynamic[i]) == rn && memcmp(lov_dynamic[i], r, rn) == 0;
    if (!ok) {
        snprintf(why, why_len, "broker config '%.200s' cannot be changed without a restart (per listener at run "
                 "time: ssl.keystore.location, ssl.key.password, ssl.truststore.location)", name);
        return BK_CFG_INVALID_CONFIG;
    }
    if (cluster_default) {
        snprintf(why, why_len, "'%.200s' is set for one broker, not as a cluster default", name);
        return BK_CFG_INVALID_CONFIG;
    }
    char reason[256];
    if (value && cfg_lov_check(name, strlen(name), value, strlen(value), reason, sizeof reason) != KP_OK) {
        snprintf(why, why_len, "%.200s=%.200s: %s", name, value, reason);
        return BK_CFG_INVALID_CONFIG;
    }
    if (!validate_only && cfg_lov_set_dynamic(cfg, DYN_BROKER, name, value) != KP_OK) {
        snprintf(why, why_len, "out of memory");
        return BK_CFG_INVALID_CONFIG;
    }
    return 0;
}

void bk_cfg_for_each_dynamic_listener(const bk_cfg_t *cfg, void (*fn)(const char *name, void *ctx), void *ctx) {
    /* a copy of the names: fn may remove values */
    char names[64][LOV_NAME_MAX + 1];
    size_t n = 0;
    for (size_t i = 0; i < cfg->nlov && n < 64; i++)
        if (cfg->lov[i].level == DYN_BROKER) snprintf(names[n++], sizeof names[0], "%s", cfg->lov[i].name);
    for (size_t i = 0; i < n; i++) fn(names[i], ctx);
}

/* --- the ssl.* keys of every listener ------------------------------------ */

/* Where `key` of `listener` got its value: "PATH:LINE" or "--set ..." of a
 * listener.name.* override, else of the top-level key. */
static void lov_where(const bk_cfg_t *cfg, const char *listener, bk_cfg_key_t key, char *out, size_t len) {
    const char *name = bk_cfg_desc(key)->name;
    size_t ln = strlen(listener), kn = strlen(name);
    for (size_t i = 0; i < cfg->nlov; i++) {
        const char *n = cfg->lov[i].name;
        if (strlen(n) != PREFIX_LEN + ln + 1 + kn || strcmp(n + PREFIX_LEN + ln + 1, name) != 0) continue;
        bool same = true;
        for (size_t j = 0; same && j < ln; j++) same = n[PREFIX_LEN + j] == (char)tolower((unsigned char)listener[j]);
        if (!same) continue;
        if (cfg->lov[i].line > 0) snprintf(out, len, "%s:%d: %s", cfg->path, cfg->lov[i].line, n);
        else snprintf(out, len, "--set %s", n);
        return;
    }
    char w[CFG_PATH_MAX + 128];
    cfg_where(cfg, key, w, sizeof w);
    snprintf(out, len, "%s: %s", w, name);
}

static int tls_fail(const bk_cfg_t *cfg, const char *listener, bk_cfg_key_t key, bk_cfg_err_t *err,
                    const char *value, const char *what) {
    char where[CFG_PATH_MAX + 256];
    lov_where(cfg, listener, key, where, sizeof where);
    snprintf(err->msg, sizeof err->msg, "%.500s=%.200s: %.250s", where, value ? value : "", what);
    return KP_ERR_BAD_VALUE;
}

/* The PEM-only store types, the key store of a TLS listener, and the
 * principal mapping rules (parsed here so a bad rule stops the start, not
 * the first client). Checked for every listener, TLS or not: a key that is
 * accepted must act, so a JKS type is refused wherever it is given. */
int cfg_check_tls(bk_cfg_t *cfg, bk_cfg_err_t *err) {
    static const bk_cfg_key_t types[] = { BK_CFG_SSL_KEYSTORE_TYPE, BK_CFG_SSL_TRUSTSTORE_TYPE };
    for (size_t i = 0; i < cfg->nlisteners; i++) {
        const bk_cfg_listener_t *l = &cfg->listeners[i];
        for (size_t k = 0; k < 2; k++) {
            const char *v = bk_cfg_listener_str(cfg, l->name, bk_cfg_desc(types[k])->name);
            if (v && strcasecmp(v, "PEM") != 0)
                return tls_fail(cfg, l->name, types[k], err, v,
                                "skiff reads PEM files only (convert with openssl: "
                                "`openssl pkcs12 -in store.p12 -nodes -out store.pem`) and needs type PEM");
        }
        bool tls = l->security == BK_CFG_SEC_SSL || l->security == BK_CFG_SEC_SASL_SSL;
        if (!tls) continue;
        const char *ks = bk_cfg_listener_str(cfg, l->name, "ssl.keystore.location");
        if (!ks || !*ks) {
            snprintf(err->msg, sizeof err->msg, "%.400s: listener %s is %s and needs a key store: set "
                     "ssl.keystore.location (or listener.name.%s.ssl.keystore.location) to a PEM file with the "
                     "certificate chain and the private key", cfg->path, l->name, bk_cfg_security_name(l->security),
                     l->name);
            /* the listener part in Kafka's lower-case form */
            char *p = strstr(err->msg, "listener.name.");
            if (p)
                for (p += PREFIX_LEN; *p && *p != '.'; p++) *p = (char)tolower((unsigned char)*p);
            return KP_ERR_BAD_VALUE;
        }
        const char *rules = bk_cfg_listener_str(cfg, l->name, "ssl.principal.mapping.rules");
        char why[256];
        kp_principal_rules_t *r = kp_principal_rules_parse(rules ? rules : "DEFAULT", why, sizeof why);
        if (!r) return tls_fail(cfg, l->name, BK_CFG_SSL_PRINCIPAL_MAPPING_RULES, err, rules, why);
        kp_principal_rules_free(r);
    }
    return KP_OK;
}
