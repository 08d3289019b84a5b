/* Node configuration: loading, precedence, validation, typed access,
 * dynamic (run-time) broker changes and DescribeConfigs iteration.
 *
 * File format (Kafka-like properties, one file for a whole cluster):
 *   key=value          whitespace around key and value is trimmed
 *   # comment, ! comment, blank lines
 *   [node.N]           following keys apply only to node N, up to the next
 *                      section header; node.id is implied by the section
 * Precedence, lowest first: built-in default (Kafka's) < top-level key <
 * [node.N] key < --set key=value (in order given) < dynamic per-cluster
 * default < dynamic per-broker value. A file with sections needs --node N
 * unless it has exactly one section; every key in every section is checked,
 * so a typo for another node is caught too.
 *
 * Every error names where it came from, e.g.
 *   etc/cluster.conf:12: unknown key 'log.retention.msx'
 *   --set log.retention.ms=abc: expected a non-negative integer
 *   etc/cluster.conf: missing required key 'process.roles'
 *
 * The key table (names, types, defaults, ranges) is in config_keys.h;
 * topic-level configs are in config_topic.h. */
#ifndef SKIFF_BROKER_CONFIG_H
#define SKIFF_BROKER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/config/config_keys.h"
#include "broker/config/hostport.h"
#include "protocol/kp_wire.h"

/* Bounds on what a config may contain. */
#define BK_CFG_FILE_MAX_BYTES (1024 * 1024)
#define BK_CFG_LINE_MAX 4096
#define BK_CFG_ENTRIES_MAX 4096      /* key=value lines in one file */
#define BK_CFG_SECTIONS_MAX 256
#define BK_CFG_SETS_MAX 256          /* --set flags */
#define BK_CFG_LISTENERS_MAX 8
#define BK_CFG_VOTERS_MAX 32
#define BK_CFG_LOG_DIRS_MAX 16
#define BK_CFG_LISTENER_NAME_MAX 63
#define BK_CFG_ERR_MAX 1024

/* Kafka error code for a rejected config (INVALID_CONFIG). */
#define BK_CFG_INVALID_CONFIG 40

/* Kafka's DescribeConfigs ConfigSource codes. */
typedef enum bk_cfg_source {
    BK_CFG_SRC_UNKNOWN = 0,
    BK_CFG_SRC_DYNAMIC_TOPIC = 1,
    BK_CFG_SRC_DYNAMIC_BROKER = 2,
    BK_CFG_SRC_DYNAMIC_DEFAULT_BROKER = 3,
    BK_CFG_SRC_STATIC_BROKER = 4,
    BK_CFG_SRC_DEFAULT = 5,
} bk_cfg_source_t;

/* Kafka's security protocols (listener.security.protocol.map). */
typedef enum bk_cfg_security {
    BK_CFG_SEC_PLAINTEXT = 0,
    BK_CFG_SEC_SSL,
    BK_CFG_SEC_SASL_PLAINTEXT,
    BK_CFG_SEC_SASL_SSL
} bk_cfg_security_t;

typedef struct bk_cfg_listener {
    char name[BK_CFG_LISTENER_NAME_MAX + 1]; /* "PLAINTEXT", "CONTROLLER" */
    char host[BK_CFG_HOST_MAX + 1];                 /* "" = all interfaces */
    uint16_t port;
    bool controller;                            /* named in controller.listener.names */
    bk_cfg_security_t security;                 /* from listener.security.protocol.map */
} bk_cfg_listener_t;

/* "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL". */
const char *bk_cfg_security_name(bk_cfg_security_t s);

typedef struct bk_cfg_voter {
    int32_t id;
    char host[BK_CFG_HOST_MAX + 1];
    uint16_t port;
} bk_cfg_voter_t;

typedef struct bk_cfg bk_cfg_t;

typedef struct bk_cfg_err {
    char msg[BK_CFG_ERR_MAX];
} bk_cfg_err_t;

/* Loads the config of node `node_id` (-1: not given) from `path`, applies
 * the `nsets` "key=value" overrides in `sets` (later ones win), fills in
 * defaults and checks every value and the rules between keys. Returns a new
 * config (free with bk_cfg_free) or NULL with the reason in err->msg. */
bk_cfg_t *bk_cfg_load(const char *path, int32_t node_id, const char *const *sets,
                            size_t nsets, bk_cfg_err_t *err);

/* Command-line front end: accepts exactly --config FILE (required),
 * --node N, --set key=value (repeatable), also as --opt=value; argv[0] is
 * skipped. Anything else is an error naming the argument. */
bk_cfg_t *bk_cfg_load_args(int argc, char *const *argv, bk_cfg_err_t *err);

void bk_cfg_free(bk_cfg_t *cfg);

/* The path the config was loaded from. */
const char *bk_cfg_path(const bk_cfg_t *cfg);

/* Calls fn once for each stored-only or obsolete broker key (config_kafka.h)
 * the config file or --set gives a value, with its name and what skiff
 * does with it (bk_cfg_kkey_doc): such a key is accepted so that a Kafka
 * config file loads, but it changes nothing, and the operator must be told
 * (main.c logs one line each at start-up). Returns how many. */
typedef void (*bk_cfg_stored_fn)(void *ctx, const char *name, const char *value, const char *doc);
size_t bk_cfg_stored_set(const bk_cfg_t *cfg, bk_cfg_stored_fn fn, void *ctx);

/* Effective values (dynamic > static > default). bk_cfg_int serves INT,
 * SHORT, LONG, BOOL (0/1) and ENUM (index into the allowed list); asserts
 * the key has a value (check bk_cfg_is_null for keys without default).
 * bk_cfg_str returns the canonical text, or NULL for no value; valid
 * until the key is changed dynamically. */
int64_t bk_cfg_int(const bk_cfg_t *cfg, bk_cfg_key_t key);
bool bk_cfg_bool(const bk_cfg_t *cfg, bk_cfg_key_t key);
double bk_cfg_double(const bk_cfg_t *cfg, bk_cfg_key_t key);
const char *bk_cfg_str(const bk_cfg_t *cfg, bk_cfg_key_t key);
bool bk_cfg_is_null(const bk_cfg_t *cfg, bk_cfg_key_t key);
bk_cfg_source_t bk_cfg_source(const bk_cfg_t *cfg, bk_cfg_key_t key);
/* The effective value of `key` as a parsed value (text, i, d, is_null). */
const bk_cfg_val_t *bk_cfg_config_val(const bk_cfg_t *cfg, bk_cfg_key_t key);

/* Values derived from several keys, as Kafka derives them:
 * retention: log.retention.ms, else .minutes, else .hours; negative = -1
 * (unlimited). roll: log.roll.ms, else log.roll.hours. jitter likewise.
 * flush: log.flush.interval.ms, or INT64_MAX (never) when unset. */
int64_t bk_cfg_retention_ms(const bk_cfg_t *cfg);
int64_t bk_cfg_roll_ms(const bk_cfg_t *cfg);
int64_t bk_cfg_roll_jitter_ms(const bk_cfg_t *cfg);
int64_t bk_cfg_flush_ms(const bk_cfg_t *cfg);

int32_t bk_cfg_node_id(const bk_cfg_t *cfg);
bool bk_cfg_is_broker(const bk_cfg_t *cfg);
bool bk_cfg_is_controller(const bk_cfg_t *cfg);

/* Parsed views; arrays live as long as the config. `advertised` defaults to
 * the non-controller listeners when advertised.listeners is unset (an empty
 * host there means "this machine's name", to be filled in by the caller). */
const bk_cfg_listener_t *bk_cfg_listeners(const bk_cfg_t *cfg, size_t *n);
const bk_cfg_listener_t *bk_cfg_advertised(const bk_cfg_t *cfg, size_t *n);
const bk_cfg_voter_t *bk_cfg_voters(const bk_cfg_t *cfg, size_t *n);
/* log.dirs if set, else log.dir; at least one. */
size_t bk_cfg_log_dir_count(const bk_cfg_t *cfg);
const char *bk_cfg_log_dir(const bk_cfg_t *cfg, size_t i);
/* metadata.log.dir if set, else the first log dir. */
const char *bk_cfg_metadata_log_dir(const bk_cfg_t *cfg);
/* admin.listener; "" = admin port disabled. */
const char *bk_cfg_admin_listener(const bk_cfg_t *cfg);

/* Per-listener values (Kafka's `listener.name.<listener>.<key>`): the
 * value of `listener.name.<listener, lower-cased>.<key>` when the file or
 * --set gives one, else the effective value of the top-level broker key
 * `<key>` (a key skiff acts on or a stored-only one), else NULL. `key` may
 * also be a key that exists only per listener, such as
 * "plain.sasl.jaas.config" (Kafka's `<mechanism>.sasl.jaas.config`).
 * Valid until the config is changed or freed. */
const char *bk_cfg_listener_str(const bk_cfg_t *cfg, const char *listener, const char *key);

/* Dynamic broker config (AlterConfigs / IncrementalAlterConfigs on a broker
 * resource). `value` NULL deletes the dynamic value (falls back to the
 * static one). `cluster_default` selects the cluster-wide default level
 * (resource name "") instead of this broker's level. With `validate_only`
 * nothing changes. Every key of the key table (config_kafka.h) is known:
 * a stored-only key Kafka lets change at run time is validated and stored
 * (per-broker ones only for a broker id, as in Kafka). Returns 0, or
 * BK_CFG_INVALID_CONFIG with a message for a name that is no broker config,
 * a key that cannot change at run time, or a bad value. */
KP_MUST_CHECK int bk_cfg_set_dynamic(bk_cfg_t *cfg, const char *name, const char *value,
                                        bool cluster_default, bool validate_only,
                                        char *why, size_t why_len);

/* Calls fn with the name of every broker key AlterConfigs may change: the
 * dynamic keys skiff acts on, then the stored-only ones that are not
 * read-only in Kafka (config_kafka.h). */
void bk_cfg_for_each_dynamic(void (*fn)(const char *name, void *ctx), void *ctx);

/* One row of DescribeConfigs. */
typedef struct bk_cfg_entry {
    const char *name;
    const char *value;          /* NULL: no value (or sensitive) */
    bk_cfg_source_t source;
    bool is_default;            /* source == DEFAULT */
    bool read_only;
    bool sensitive;
    int config_type;            /* BK_CFG_TYPE_* */
    const char *synonym;        /* topic rows: the broker key they default to */
    const char *documentation;  /* what skiff does with the key (config_kafka.h), or NULL */
} bk_cfg_entry_t;

typedef void (*bk_cfg_entry_fn)(const bk_cfg_entry_t *e, void *ctx);

/* Calls fn once per broker key skiff acts on, in table order, then once per
 * stored-only key of the key table (config_kafka.h; obsolete ones only when
 * set). The entry's strings are valid during the call only. */
void bk_cfg_describe_broker(const bk_cfg_t *cfg, bk_cfg_entry_fn fn, void *ctx);

#endif
