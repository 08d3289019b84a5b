/* Private to config*.c: the config object and shared helpers. */
#ifndef SKIFF_BROKER_CONFIG_INT_H
#define SKIFF_BROKER_CONFIG_INT_H

#include "broker/config/config.h"

#define CFG_PATH_MAX 512

enum { DYN_BROKER = 0, DYN_DEFAULT = 1 };

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
};

/* Writes "PATH:LINE", "--set" or "PATH (default)" for where `key` got its
 * value, for error messages. */
void cfg_where(const bk_cfg_t *cfg, bk_cfg_key_t key, char *out, size_t out_len);

/* Checks the rules between keys and fills the parsed views. Returns KP_OK or
 * KP_ERR_BAD_VALUE with err->msg set. */
KP_MUST_CHECK int cfg_resolve(bk_cfg_t *cfg, bk_cfg_err_t *err);

#endif
