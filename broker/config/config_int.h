/* Private to config*.c: the config object and shared helpers. */
#ifndef SKIFF_BROKER_CONFIG_INT_H
#define SKIFF_BROKER_CONFIG_INT_H

#include "broker/config/config.h"
#include "broker/config/config_kafka.h"

#define CFG_PATH_MAX 512

enum { DYN_BROKER = 0, DYN_DEFAULT = 1 };

/* Values of the stored-only broker keys (config_kafka.h), by layer: the
 * config file / --set, then the two dynamic levels as in `dyn`. */
enum { KV_DYN_BROKER = DYN_BROKER, KV_DYN_DEFAULT = DYN_DEFAULT, KV_STATIC = 2, KV__LAYERS = 3 };

struct bk_cfg {
    char path[CFG_PATH_MAX];
    bk_cfg_val_t val[BK_CFG__COUNT];           /* static value or default */
    uint8_t source[BK_CFG__COUNT];             /* BK_CFG_SRC_STATIC_BROKER / DEFAULT */
    int32_t line[BK_CFG__COUNT];               /* file line; 0 = --set; -1 = default */
    bk_cfg_val_t dyn[2][BK_CFG__COUNT];        /* DYN_BROKER / DYN_DEFAULT */
    bool dyn_set[2][BK_CFG__COUNT];
    bk_cfg_listener_t listeners[BK_CFG_LISTENERS_MAX];
    size_t nlisteners;
    bk_cfg_listener_t advertised[BK_CFG_LISTENERS_MAX];
    size_t nadvertised;
    bk_cfg_voter_t voters[BK_CFG_VOTERS_MAX];
    size_t nvoters;
    char log_dirs[BK_CFG_LOG_DIRS_MAX][BK_CFG_VALUE_MAX];
    size_t nlog_dirs;
    /* kval[layer][bk_cfg_kkey_index(k)]: heap text or NULL (not set), for
     * the STORED / OBSOLETE broker rows only; bk_cfg_kkey_count() each. */
    char **kval[KV__LAYERS];
    /* listener.name.<listener>.<key> values (config_listener.c), in the
     * order set; a later set of the same name replaces the earlier one. */
    struct cfg_lov *lov;
    size_t nlov, lov_cap;
};

/* One per-listener value: `name` is the whole key with the listener part
 * lower-cased ("listener.name.ssl.ssl.keystore.location"). */
typedef struct cfg_lov {
    char *name;
    char *value;
    int32_t line;   /* file line; 0 = --set */
} cfg_lov_t;

#define CFG_LOV_PREFIX "listener.name."

/* True when k[0..kn) starts with "listener.name.". */
bool cfg_lov_is(const char *k, size_t kn);
/* Checks a per-listener key and its value: the listener part is letters,
 * digits or '_', the rest is a broker key (of either table) or
 * "<mechanism>.sasl.jaas.config"; the value must parse as that key's value.
 * Returns KP_OK or KP_ERR_BAD_VALUE with the reason in why. */
KP_MUST_CHECK int cfg_lov_check(const char *k, size_t kn, const char *v, size_t vn, char *why, size_t why_len);
/* Stores (or replaces) a checked per-listener value. KP_OK or KP_ERR_NOMEM. */
KP_MUST_CHECK int cfg_lov_set(bk_cfg_t *cfg, const char *k, size_t kn, const char *v, size_t vn, int32_t line);
void cfg_lov_free(bk_cfg_t *cfg);

/* Writes "PATH:LINE", "--set" or "PATH (default)" for where `key` got its
 * value, for error messages. */
void cfg_where(const bk_cfg_t *cfg, bk_cfg_key_t key, char *out, size_t out_len);

/* The effective value of a stored-only broker key (dynamic per-broker >
 * dynamic default > file / --set > Kafka's default) and where it came
 * from; NULL (source DEFAULT) when it has none. */
const char *cfg_kval(const bk_cfg_t *cfg, const bk_cfg_kkey_t *k, bk_cfg_source_t *source);

/* Replaces the text of a stored-only key at `layer` (NULL removes it).
 * Returns KP_OK or KP_ERR_NOMEM (nothing changed). */
KP_MUST_CHECK int cfg_kval_set(bk_cfg_t *cfg, int layer, const bk_cfg_kkey_t *k, const char *text);

/* Checks the rules between keys and fills the parsed views. Returns KP_OK or
 * KP_ERR_BAD_VALUE with err->msg set. */
KP_MUST_CHECK int cfg_resolve(bk_cfg_t *cfg, bk_cfg_err_t *err);

#endif
