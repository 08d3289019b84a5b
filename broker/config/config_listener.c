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

int cfg_lov_set(bk_cfg_t *cfg, const char *k, size_t kn, const char *v, size_t vn, int32_t line) {
    char *name = lov_name(k, kn);
    char *value = malloc(vn + 1);
    if (name == NULL || value == NULL) {
        free(name);
        free(value);
        return KP_ERR_NOMEM;
    }
    memcpy(value, v, vn);
    value[vn] = '\0';
    for (size_t i = 0; i < cfg->nlov; i++)
        if (strcmp(cfg->lov[i].name, name) == 0) {
            free(name);
            free(cfg->lov[i].value);
            cfg->lov[i].value = value;
            cfg->lov[i].line = line;
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
    cfg->lov[cfg->nlov++] = (cfg_lov_t){ name, value, line };
    return KP_OK;
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

const char *bk_cfg_listener_str(const bk_cfg_t *cfg, const char *listener, const char *key) {
    size_t ln = strlen(listener), kn = strlen(key);
    for (size_t i = 0; i < cfg->nlov; i++) {
        const char *n = cfg->lov[i].name;
        if (strlen(n) != PREFIX_LEN + ln + 1 + kn) continue;
        bool same = n[PREFIX_LEN + ln] == '.' && memcmp(n + PREFIX_LEN + ln + 1, key, kn) == 0;
        for (size_t j = 0; same && j < ln; j++)
            same = n[PREFIX_LEN + j] == (char)tolower((unsigned char)listener[j]);
        if (same) return cfg->lov[i].value;
    }
    bk_cfg_key_t k = bk_cfg_key_by_name(key, kn);
    if (k != BK_CFG__COUNT) return bk_cfg_is_null(cfg, k) ? NULL : bk_cfg_str(cfg, k);
    const bk_cfg_kkey_t *kk = bk_cfg_kkey_find(key, kn, BK_CFG_SCOPE_BROKER);
    if (kk == NULL) return NULL;
    bk_cfg_source_t src;
    return cfg_kval(cfg, kk, &src);
}
