/* Topic-level configs (CreateTopics configs, AlterConfigs /
 * IncrementalAlterConfigs / DescribeConfigs on topic resources).
 *
 * Each topic config has Kafka's topic name and defaults to a broker key
 * (retention.ms <- log.retention.ms|minutes|hours, segment.bytes <-
 * log.segment.bytes, ...). A topic stores only its overrides, as parsed
 * numbers (every topic config is numeric, boolean or from a fixed set), so
 * a bk_cfg_topic_t is small and copyable. The effective value is the
 * override if set, else the broker's current effective value (which may
 * itself be dynamic), so a broker-level change reaches every topic that has
 * no override. */
#ifndef SKIFF_BROKER_CONFIG_TOPIC_H
#define SKIFF_BROKER_CONFIG_TOPIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/config/config.h"
#include "broker/config/config_kafka.h"

/* X(ID, "topic name", broker key, TYPE, min, max)
 * TYPE/allowed follow the broker key except where the range differs. */
#define BK_CFG_TOPIC_KEYS(X) \
  X(CLEANUP_POLICY, "cleanup.policy", LOG_CLEANUP_POLICY, 0, 0) \
  X(COMPRESSION_TYPE, "compression.type", COMPRESSION_TYPE, 0, 0) \
  X(DELETE_RETENTION_MS, "delete.retention.ms", LOG_CLEANER_DELETE_RETENTION_MS, 0, BK_CFG_I64MAX) \
  X(FILE_DELETE_DELAY_MS, "file.delete.delay.ms", LOG_SEGMENT_DELETE_DELAY_MS, 0, BK_CFG_I64MAX) \
  X(FLUSH_MESSAGES, "flush.messages", LOG_FLUSH_INTERVAL_MESSAGES, 1, BK_CFG_I64MAX) \
  X(FLUSH_MS, "flush.ms", LOG_FLUSH_INTERVAL_MS, 0, BK_CFG_I64MAX) \
  X(INDEX_INTERVAL_BYTES, "index.interval.bytes", LOG_INDEX_INTERVAL_BYTES, 0, BK_CFG_I32MAX) \
  X(MAX_COMPACTION_LAG_MS, "max.compaction.lag.ms", LOG_CLEANER_MAX_COMPACTION_LAG_MS, 1, BK_CFG_I64MAX) \
  X(MAX_MESSAGE_BYTES, "max.message.bytes", MESSAGE_MAX_BYTES, 0, BK_CFG_MESSAGE_BYTES_CAP) \
  X(MESSAGE_DOWNCONVERSION_ENABLE, "message.downconversion.enable", LOG_MESSAGE_DOWNCONVERSION_ENABLE, 0, 0) \
  X(MESSAGE_TIMESTAMP_TYPE, "message.timestamp.type", LOG_MESSAGE_TIMESTAMP_TYPE, 0, 0) \
  X(MIN_CLEANABLE_DIRTY_RATIO, "min.cleanable.dirty.ratio", LOG_CLEANER_MIN_CLEANABLE_RATIO, 0, 1) \
  X(MIN_COMPACTION_LAG_MS, "min.compaction.lag.ms", LOG_CLEANER_MIN_COMPACTION_LAG_MS, 0, BK_CFG_I64MAX) \
  X(MIN_INSYNC_REPLICAS, "min.insync.replicas", MIN_INSYNC_REPLICAS, 1, BK_CFG_I32MAX) \
  X(PREALLOCATE, "preallocate", LOG_PREALLOCATE, 0, 0) \
  X(RETENTION_BYTES, "retention.bytes", LOG_RETENTION_BYTES, -1, BK_CFG_I64MAX) \
  X(RETENTION_MS, "retention.ms", LOG_RETENTION_MS, -1, BK_CFG_I64MAX) \
  X(SEGMENT_BYTES, "segment.bytes", LOG_SEGMENT_BYTES, 14, BK_CFG_I32MAX) \
  X(SEGMENT_INDEX_BYTES, "segment.index.bytes", LOG_INDEX_SIZE_MAX_BYTES, 4, BK_CFG_INDEX_BYTES_CAP) \
  X(SEGMENT_JITTER_MS, "segment.jitter.ms", LOG_ROLL_JITTER_MS, 0, BK_CFG_I64MAX) \
  X(SEGMENT_MS, "segment.ms", LOG_ROLL_MS, 1, BK_CFG_I64MAX) \
  X(UNCLEAN_LEADER_ELECTION_ENABLE, "unclean.leader.election.enable", UNCLEAN_LEADER_ELECTION_ENABLE, 0, 0)

typedef enum bk_cfg_topic_key {
#define BK_CFG_TC_ENUM_(ID, ...) BK_CFG_TC_##ID,
    BK_CFG_TOPIC_KEYS(BK_CFG_TC_ENUM_)
#undef BK_CFG_TC_ENUM_
    BK_CFG_TC__COUNT
} bk_cfg_topic_key_t;

/* A topic's overrides. Zero-initialised = no overrides. */
typedef struct bk_cfg_topic {
    uint32_t set;                  /* bit per bk_cfg_topic_key_t */
    int64_t i[BK_CFG_TC__COUNT];       /* int/long/bool/enum index/list bitmask */
    double d[BK_CFG_TC__COUNT];        /* DOUBLE keys */
} bk_cfg_topic_t;

/* Name of a topic key, and lookup by name (BK_CFG_TC__COUNT if unknown). */
const char *bk_cfg_topic_key_name(bk_cfg_topic_key_t key);
bk_cfg_topic_key_t bk_cfg_topic_key_by_name(const char *name);
/* The broker key a topic key defaults to (its DescribeConfigs synonym). */
bk_cfg_key_t bk_cfg_topic_key_broker(bk_cfg_topic_key_t key);

/* Is `name` a topic config: one skiff acts on (above) or a stored-only one
 * of the key table (config_kafka.h; no effect in skiff)? */
bool bk_cfg_topic_known(const char *name);

/* Validates one (name, value) pair as CreateTopics / AlterConfigs must.
 * Every topic config of the key table is known; a stored-only one is
 * checked against its row. Returns 0, or BK_CFG_INVALID_CONFIG with a
 * message in why[0..why_len) for an unknown name (Kafka's "Unknown topic
 * config name: NAME"), a NULL or malformed value or one out of range. */
KP_MUST_CHECK int bk_cfg_topic_validate(const char *name, const char *value, char *why,
                                           size_t why_len);

/* Validates and stores an override; `value` NULL removes the override (the
 * topic follows the broker default again). A stored-only key is validated
 * and not kept in `tc` (nothing reads it; the caller's Config records hold
 * it). Same returns as validate; on error `tc` is unchanged. */
KP_MUST_CHECK int bk_cfg_topic_set(bk_cfg_topic_t *tc, const char *name, const char *value,
                                      char *why, size_t why_len);

/* Effective values: the override, else the broker's effective value with
 * Kafka's derivations (retention.ms from log.retention.ms|minutes|hours,
 * segment.ms from log.roll.ms|hours, segment.jitter.ms likewise, flush.ms
 * from log.flush.interval.ms or INT64_MAX). bk_cfg_topic_int serves
 * every non-DOUBLE key (bool 0/1, enum index, list bitmask). */
int64_t bk_cfg_topic_int(const bk_cfg_t *cfg, const bk_cfg_topic_t *tc,
                            bk_cfg_topic_key_t key);
double bk_cfg_topic_double(const bk_cfg_t *cfg, const bk_cfg_topic_t *tc,
                              bk_cfg_topic_key_t key);
/* The effective value as text (as DescribeConfigs shows it) into out. */
void bk_cfg_topic_text(const bk_cfg_t *cfg, const bk_cfg_topic_t *tc,
                          bk_cfg_topic_key_t key, char *out, size_t out_len);

/* Calls fn once per topic key, in table order, with value, source
 * (DYNAMIC_TOPIC for overrides, else the broker key's source), is_default,
 * read_only=false, sensitive=false and the broker key as synonym. */
void bk_cfg_topic_describe(const bk_cfg_t *cfg, const bk_cfg_topic_t *tc,
                              bk_cfg_entry_fn fn, void *ctx);

/* Looks up a topic's stored value of config `name` (NULL: not set). */
typedef const char *(*bk_cfg_lookup_fn)(void *ctx, const char *name);

/* Calls fn once per stored-only topic key of the key table (config_kafka.h)
 * with the topic's value from `lookup` (source DYNAMIC_TOPIC), else its
 * broker synonym's value, else Kafka's default; obsolete keys only when set.
 * The documentation field says "stored only (no effect in skiff)". */
void bk_cfg_topic_describe_stored(const bk_cfg_t *cfg, bk_cfg_lookup_fn lookup, void *lctx,
                                  bk_cfg_entry_fn fn, void *ctx);

#endif
