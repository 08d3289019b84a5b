/* Topic-level configs; see config_topic.h. */
#include "broker/config/config_topic.h"

#include "broker/config/config_int.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

typedef struct topic_desc {
    const char *name;
    bk_cfg_key_t broker;
    int64_t min, max;   /* numeric range for the topic level */
} topic_desc_t;

_Static_assert(BK_CFG_TC__COUNT <= 32, "bk_cfg_topic_t.set is a 32-bit mask");

static const topic_desc_t tdescs[BK_CFG_TC__COUNT] = {
#define BK_TC_DESC_(ID, NAME, BROKER, MIN, MAX) [BK_CFG_TC_##ID] = { NAME, BK_CFG_##BROKER, MIN, MAX },
    BK_CFG_TOPIC_KEYS(BK_TC_DESC_)
#undef BK_TC_DESC_
};

const char *bk_cfg_topic_key_name(bk_cfg_topic_key_t key) {
    assert((unsigned)key < BK_CFG_TC__COUNT);
    return tdescs[key].name;
}

bk_cfg_topic_key_t bk_cfg_topic_key_by_name(const char *name) {
    for (int k = 0; k < BK_CFG_TC__COUNT; k++)
        if (strcmp(tdescs[k].name, name) == 0)
            return (bk_cfg_topic_key_t)k;
    return BK_CFG_TC__COUNT;
}

bk_cfg_key_t bk_cfg_topic_key_broker(bk_cfg_topic_key_t key) {
    assert((unsigned)key < BK_CFG_TC__COUNT);
    return tdescs[key].broker;
}

/* The broker key's description with the topic-level range. */
static bk_cfg_desc_t topic_cfg_desc(bk_cfg_topic_key_t key) {
    bk_cfg_desc_t d = *bk_cfg_desc(tdescs[key].broker);
    d.name = tdescs[key].name;
    d.flags = 0;
    if (d.type == BK_CFG_CT_INT || d.type == BK_CFG_CT_LONG || d.type == BK_CFG_CT_SHORT ||
        d.type == BK_CFG_CT_DOUBLE) {
        d.min = tdescs[key].min;
        d.max = tdescs[key].max;
    }
    return d;
}

/* The key-table row of a topic config skiff only stores, or NULL. */
static const bk_cfg_kkey_t *stored_topic_key(const char *name) {
    const bk_cfg_kkey_t *k = bk_cfg_kkey_find(name, strlen(name), BK_CFG_SCOPE_TOPIC);
    return k != NULL && bk_cfg_kkey_stored_only(k) ? k : NULL;
}

bool bk_cfg_topic_known(const char *name) {
    return bk_cfg_topic_key_by_name(name) != BK_CFG_TC__COUNT || stored_topic_key(name) != NULL;
}

/* Kafka's own words, so clients and scripts see what Kafka would say. */
static int unknown(const char *name, char *why, size_t why_len) {
    snprintf(why, why_len, "Unknown topic config name: %.200s", name);
    return BK_CFG_INVALID_CONFIG;
}

/* A stored-only topic config: validated against its row, never kept in a
 * bk_cfg_topic_t (the Config records in the image hold it). */
static int check_stored(const bk_cfg_kkey_t *k, const char *value, char *why, size_t why_len) {
    if (value == NULL) {
        snprintf(why, why_len, "%s: null value", k->name);
        return BK_CFG_INVALID_CONFIG;
    }
    char reason[256];
    if (bk_cfg_kkey_check(k, value, strlen(value), NULL, reason, sizeof reason) != KP_OK) {
        snprintf(why, why_len, "invalid value '%.200s' for %s: %s", value, k->name, reason);
        return BK_CFG_INVALID_CONFIG;
    }
    return 0;
}

static int parse(bk_cfg_topic_key_t *key, bk_cfg_val_t *v, const char *name, const char *value,
                 char *why, size_t why_len) {
    *key = bk_cfg_topic_key_by_name(name);
    if (*key == BK_CFG_TC__COUNT)
        return unknown(name, why, why_len);
    if (value == NULL) {
        snprintf(why, why_len, "%s: null value", name);
        return BK_CFG_INVALID_CONFIG;
    }
    bk_cfg_desc_t d = topic_cfg_desc(*key);
    char reason[256];
    if (bk_cfg_parse_value(&d, value, strlen(value), v, reason, sizeof reason) != KP_OK) {
        snprintf(why, why_len, "invalid value '%.200s' for %s: %s", value, name, reason);
        return BK_CFG_INVALID_CONFIG;
    }
    if (d.type == BK_CFG_CT_LIST && v->i == 0) {
        snprintf(why, why_len, "%s: at least one of %s is needed", name, d.allowed);
        return BK_CFG_INVALID_CONFIG;
    }
    return 0;
}

int bk_cfg_topic_validate(const char *name, const char *value, char *why, size_t why_len) {
    const bk_cfg_kkey_t *sk = stored_topic_key(name);
    if (sk != NULL)
        return check_stored(sk, value, why, why_len);
    bk_cfg_topic_key_t key;
    bk_cfg_val_t v;
    return parse(&key, &v, name, value, why, why_len);
}

int bk_cfg_topic_set(bk_cfg_topic_t *tc, const char *name, const char *value, char *why,
                        size_t why_len) {
    const bk_cfg_kkey_t *sk = stored_topic_key(name);
    if (sk != NULL)
        return value == NULL ? 0 : check_stored(sk, value, why, why_len);
    bk_cfg_topic_key_t key;
    bk_cfg_val_t v;
    if (value == NULL) {
        key = bk_cfg_topic_key_by_name(name);
        if (key == BK_CFG_TC__COUNT)
            return unknown(name, why, why_len);
        tc->set &= ~(1u << key);
        return 0;
    }
    int rc = parse(&key, &v, name, value, why, why_len);
    if (rc != 0)
        return rc;
    tc->i[key] = v.i;
    tc->d[key] = v.d;
    tc->set |= 1u << key;
    return 0;
}

/* The broker default for a topic key, with Kafka's derivations. */
static int64_t broker_int(const bk_cfg_t *cfg, bk_cfg_topic_key_t key) {
    switch (key) {
    case BK_CFG_TC_RETENTION_MS: return bk_cfg_retention_ms(cfg);
    case BK_CFG_TC_SEGMENT_MS: return bk_cfg_roll_ms(cfg);
    case BK_CFG_TC_SEGMENT_JITTER_MS: return bk_cfg_roll_jitter_ms(cfg);
    case BK_CFG_TC_FLUSH_MS: return bk_cfg_flush_ms(cfg);
    default: return bk_cfg_int(cfg, tdescs[key].broker);
    }
}

int64_t bk_cfg_topic_int(const bk_cfg_t *cfg, const bk_cfg_topic_t *tc,
                            bk_cfg_topic_key_t key) {
    assert((unsigned)key < BK_CFG_TC__COUNT);
    assert(bk_cfg_desc(tdescs[key].broker)->type != BK_CFG_CT_DOUBLE);
    if (tc && (tc->set & (1u << key)))
        return tc->i[key];
    return broker_int(cfg, key);
}

double bk_cfg_topic_double(const bk_cfg_t *cfg, const bk_cfg_topic_t *tc,
                              bk_cfg_topic_key_t key) {
    assert((unsigned)key < BK_CFG_TC__COUNT);
    assert(bk_cfg_desc(tdescs[key].broker)->type == BK_CFG_CT_DOUBLE);
    if (tc && (tc->set & (1u << key)))
        return tc->d[key];
    return bk_cfg_double(cfg, tdescs[key].broker);
}

/* Text of an enum index or list bitmask over the comma-separated `allowed`. */
static void allowed_text(const char *allowed, int64_t v, bool mask, char *out, size_t out_len) {
    size_t o = 0;
    int idx = 0;
    const char *p = allowed;
    out[0] = '\0';
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        bool take = mask ? (v & (1LL << idx)) != 0 : v == idx;
        if (take && o + n + 2 < out_len) {
            if (o > 0)
                out[o++] = ',';
            memcpy(out + o, p, n);
            o += n;
            out[o] = '\0';
        }
        if (comma == NULL)
            return;
        p = comma + 1;
        idx++;
    }
}

void bk_cfg_topic_text(const bk_cfg_t *cfg, const bk_cfg_topic_t *tc,
                          bk_cfg_topic_key_t key, char *out, size_t out_len) {
    const bk_cfg_desc_t *d = bk_cfg_desc(tdescs[key].broker);
    switch (d->type) {
    case BK_CFG_CT_DOUBLE:
        snprintf(out, out_len, "%g", bk_cfg_topic_double(cfg, tc, key));
        return;
    case BK_CFG_CT_BOOL:
        snprintf(out, out_len, "%s", bk_cfg_topic_int(cfg, tc, key) ? "true" : "false");
        return;
    case BK_CFG_CT_ENUM:
    case BK_CFG_CT_LIST:
        allowed_text(d->allowed, bk_cfg_topic_int(cfg, tc, key), d->type == BK_CFG_CT_LIST, out,
                     out_len);
        return;
    default:
        snprintf(out, out_len, "%" PRId64, bk_cfg_topic_int(cfg, tc, key));
        return;
    }
}

/* Source of a topic key's broker default: the synonym that decided it. */
static bk_cfg_source_t broker_source(const bk_cfg_t *cfg, bk_cfg_topic_key_t key) {
    bk_cfg_key_t k = tdescs[key].broker;
    if (key == BK_CFG_TC_RETENTION_MS && bk_cfg_is_null(cfg, k))
        k = bk_cfg_is_null(cfg, BK_CFG_LOG_RETENTION_MINUTES) ? BK_CFG_LOG_RETENTION_HOURS
                                                                  : BK_CFG_LOG_RETENTION_MINUTES;
    else if (key == BK_CFG_TC_SEGMENT_MS && bk_cfg_is_null(cfg, k))
        k = BK_CFG_LOG_ROLL_HOURS;
    else if (key == BK_CFG_TC_SEGMENT_JITTER_MS && bk_cfg_is_null(cfg, k))
        k = BK_CFG_LOG_ROLL_JITTER_HOURS;
    return bk_cfg_source(cfg, k);
}

void bk_cfg_topic_describe(const bk_cfg_t *cfg, const bk_cfg_topic_t *tc,
                              bk_cfg_entry_fn fn, void *ctx) {
    for (int k = 0; k < BK_CFG_TC__COUNT; k++) {
        char text[BK_CFG_VALUE_MAX];
        bk_cfg_topic_key_t key = (bk_cfg_topic_key_t)k;
        const bk_cfg_desc_t *d = bk_cfg_desc(tdescs[k].broker);
        bk_cfg_topic_text(cfg, tc, key, text, sizeof text);
        bk_cfg_entry_t e = {
            .name = tdescs[k].name,
            .value = text,
            .source = (tc && (tc->set & (1u << k))) ? BK_CFG_SRC_DYNAMIC_TOPIC : broker_source(cfg, key),
            .config_type = bk_cfg_type_code(d->type, 0),
            .synonym = bk_cfg_desc(tdescs[k].broker)->name,
        };
        const bk_cfg_kkey_t *kk = bk_cfg_kkey_find(tdescs[k].name, strlen(tdescs[k].name), BK_CFG_SCOPE_TOPIC);
        char doc[512];
        if (kk != NULL) {
            bk_cfg_kkey_doc(kk, doc, sizeof doc);
            e.documentation = doc;
        }
        e.is_default = e.source == BK_CFG_SRC_DEFAULT;
        fn(&e, ctx);
    }
}

/* The broker default of a stored-only topic key: its broker synonym's
 * effective value (a key skiff acts on, or another stored-only one), else
 * Kafka's default. */
static const char *stored_default(const bk_cfg_t *cfg, const bk_cfg_kkey_t *k, bk_cfg_source_t *source) {
    *source = BK_CFG_SRC_DEFAULT;
    if (k->synonym == NULL)
        return k->def;
    bk_cfg_key_t bk = bk_cfg_key_by_name(k->synonym, strlen(k->synonym));
    if (bk != BK_CFG__COUNT) {
        *source = bk_cfg_source(cfg, bk);
        const char *v = bk_cfg_str(cfg, bk);
        return v ? v : k->def;
    }
    const bk_cfg_kkey_t *b = bk_cfg_kkey_find(k->synonym, strlen(k->synonym), BK_CFG_SCOPE_BROKER);
    if (b == NULL || !bk_cfg_kkey_stored_only(b))
        return k->def;
    const char *v = cfg_kval(cfg, b, source);
    if (*source == BK_CFG_SRC_DEFAULT)
        return k->def;   /* the topic's own default, as Kafka shows it */
    return v;
}

void bk_cfg_topic_describe_stored(const bk_cfg_t *cfg, bk_cfg_lookup_fn lookup, void *lctx,
                                  bk_cfg_entry_fn fn, void *ctx) {
    for (size_t i = 0; i < bk_cfg_kkey_count(); i++) {
        const bk_cfg_kkey_t *k = bk_cfg_kkey_at(i);
        if (k->scope != BK_CFG_SCOPE_TOPIC || !bk_cfg_kkey_stored_only(k))
            continue;
        const char *value = lookup ? lookup(lctx, k->name) : NULL;
        bk_cfg_source_t source = BK_CFG_SRC_DYNAMIC_TOPIC;
        if (value == NULL)
            value = stored_default(cfg, k, &source);
        if (k->status == BK_CFG_STATUS_OBSOLETE && source == BK_CFG_SRC_DEFAULT)
            continue;   /* as for brokers: obsolete keys only once set */
        char doc[512];
        bk_cfg_kkey_doc(k, doc, sizeof doc);
        bk_cfg_entry_t e = {
            .name = k->name,
            .value = value,
            .source = source,
            .is_default = source == BK_CFG_SRC_DEFAULT,
            .config_type = bk_cfg_kkey_type_code(k),
            .synonym = k->synonym,
            .documentation = doc,
        };
        fn(&e, ctx);
    }
}
