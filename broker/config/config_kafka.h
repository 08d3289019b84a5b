/* The config key table: every broker and topic config key of Kafka 4.x
 * (and the ones Kafka 3.x had that 4.0 removed), with Kafka's type, default,
 * update mode, range, and what skiff does with the key.
 *
 * Source: broker/config/kafka_keys.tsv (imported once from Kafka's own
 * config definitions by broker/config/gen/import_kafka_keys.sh, then
 * committed); broker/config/gen/cfgkeys.py turns it into the C rows behind
 * this header (build/gen/broker/config/kafka_keys.inc) and into the
 * reference page broker/config/CONFIGURATION.md.
 *
 * Keys with status DYNAMIC or STATIC are the ones skiff acts on: they also
 * have a descriptor in config_keys.h (broker) or config_topic.h (topic),
 * which decides their parsing; the unit tests check the two tables agree.
 * STORED and OBSOLETE keys have only this row: they are validated against
 * it, stored (config file, --set, Config metadata records) and described,
 * and nothing reads them. */
#ifndef SKIFF_BROKER_CONFIG_KAFKA_H
#define SKIFF_BROKER_CONFIG_KAFKA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "protocol/kp_wire.h"

typedef enum bk_cfg_scope { BK_CFG_SCOPE_BROKER = 1, BK_CFG_SCOPE_TOPIC = 2 } bk_cfg_scope_t;

/* Kafka's ConfigDef types. */
typedef enum bk_cfg_ktype {
    BK_CFG_KT_BOOLEAN, BK_CFG_KT_STRING, BK_CFG_KT_INT, BK_CFG_KT_SHORT, BK_CFG_KT_LONG,
    BK_CFG_KT_DOUBLE, BK_CFG_KT_LIST, BK_CFG_KT_CLASS, BK_CFG_KT_PASSWORD,
} bk_cfg_ktype_t;

/* Kafka's dynamic update mode of a broker key; topic keys are TOPIC. */
typedef enum bk_cfg_mode {
    BK_CFG_MODE_READ_ONLY, BK_CFG_MODE_PER_BROKER, BK_CFG_MODE_CLUSTER_WIDE, BK_CFG_MODE_TOPIC,
} bk_cfg_mode_t;

/* What skiff does with the key. */
typedef enum bk_cfg_status {
    BK_CFG_STATUS_DYNAMIC,   /* acted on; AlterConfigs changes it at run time */
    BK_CFG_STATUS_STATIC,    /* acted on; read at start-up */
    BK_CFG_STATUS_STORED,    /* stored only (no effect in skiff) */
    BK_CFG_STATUS_OBSOLETE,  /* removed in Kafka 4.0: accepted and ignored */
} bk_cfg_status_t;

/* Checks taken from Kafka's validator (`valid`). */
enum { BK_CFG_KC_MIN = 1, BK_CFG_KC_MAX = 2, BK_CFG_KC_NONEMPTY = 4 };

/* One key (static, never freed). */
typedef struct bk_cfg_kkey {
    const char *name;
    uint8_t scope;          /* bk_cfg_scope_t */
    uint8_t type;           /* bk_cfg_ktype_t */
    uint8_t mode;           /* bk_cfg_mode_t */
    uint8_t status;         /* bk_cfg_status_t */
    unsigned check;         /* BK_CFG_KC_* */
    const char *def;        /* Kafka's default as text; NULL: none */
    double min, max;        /* with BK_CFG_KC_MIN / _MAX */
    const char *allowed;    /* comma-separated values (case-insensitive), or NULL */
    const char *valid;      /* Kafka's validator text, "" if none */
    const char *synonym;    /* topic keys: the broker key they default to, or NULL */
    const char *note;       /* "" if none */
} bk_cfg_kkey_t;

/* The rows, sorted by (name, scope). */
size_t bk_cfg_kkey_count(void);
const bk_cfg_kkey_t *bk_cfg_kkey_at(size_t i);
/* The row of name[0..len) in `scope`, or NULL: not a Kafka config name. */
const bk_cfg_kkey_t *bk_cfg_kkey_find(const char *name, size_t len, bk_cfg_scope_t scope);

/* Index of a row (bk_cfg_kkey_at(bk_cfg_kkey_index(k)) == k). */
size_t bk_cfg_kkey_index(const bk_cfg_kkey_t *k);

/* True for STORED and OBSOLETE: the row is all skiff knows of the key. */
bool bk_cfg_kkey_stored_only(const bk_cfg_kkey_t *k);

/* Checks value[0..len) against the row: its type, and for STORED keys the
 * range / allowed values / non-empty rule of Kafka's validator (OBSOLETE
 * keys only need the right type: they are ignored anyway). Returns KP_OK
 * with the canonical text in out->text (out may be NULL), or
 * KP_ERR_BAD_VALUE with the reason (without the key) in why. */
struct bk_cfg_val;
KP_MUST_CHECK int bk_cfg_kkey_check(const bk_cfg_kkey_t *k, const char *value, size_t len,
                                    struct bk_cfg_val *out, char *why, size_t why_len);

/* Kafka's DescribeConfigs ConfigType code (BK_CFG_TYPE_*, CLASS = 8). */
int bk_cfg_kkey_type_code(const bk_cfg_kkey_t *k);

/* Names as the reference writes them ("per-broker", "stored", "long"). */
const char *bk_cfg_kkey_scope_name(const bk_cfg_kkey_t *k);
const char *bk_cfg_kkey_type_name(const bk_cfg_kkey_t *k);
const char *bk_cfg_kkey_mode_name(const bk_cfg_kkey_t *k);
const char *bk_cfg_kkey_status_name(const bk_cfg_kkey_t *k);
/* One sentence for DescribeConfigs' documentation field and the reference:
 * the status, then the note ("stored only (no effect in skiff); TLS/SASL...").
 * Written into out. */
void bk_cfg_kkey_doc(const bk_cfg_kkey_t *k, char *out, size_t out_len);

/* `skiff --describe-config [KEY]`: with a key, every row of that name
 * (broker and/or topic) in full; without (NULL), one line per row. Returns
 * the number of rows printed (0: no such key). */
size_t bk_cfg_kkey_print(FILE *f, const char *name);

#endif
