/* The broker configuration keys: one table, Kafka's names and defaults.
 *
 * X(ID, "name", TYPE, default, min, max, allowed, flags)
 *   TYPE     INT (int32), SHORT (int16), LONG (int64), DOUBLE, BOOL, STRING,
 *            LIST (comma-separated), ENUM (one of `allowed`)
 *   default  text as a user would write it, or NULL: no value ("null" in
 *            Kafka's docs); such keys are optional or derived from others
 *   min/max  inclusive range for numeric types (DOUBLE uses them as whole
 *            numbers: 0..1 for ratios)
 *   allowed  comma-separated values for ENUM, and for a LIST whose items
 *            must come from a fixed set (process.roles, log.cleanup.policy)
 *   flags    BK_CFG_CF_REQUIRED  start-up fails without a value
 *            BK_CFG_CF_DYNAMIC   may change at run time (AlterConfigs on a
 *                            broker resource); otherwise read-only
 *            BK_CFG_CF_SENSITIVE value is never shown (DescribeConfigs, logs)
 * Adding a key is one line here; the loader, --set, DescribeConfigs and the
 * tests pick it up. Keys that only skiff has: admin.* (the admin port),
 * cluster.id,
 * max.replicas.per.node, socket.write.stall.ms, skiff.scrubber.*. */
#ifndef SKIFF_BROKER_CONFIG_KEYS_H
#define SKIFF_BROKER_CONFIG_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"

#define BK_CFG_I32MAX 2147483647LL
#define BK_CFG_I16MAX 32767LL
#define BK_CFG_I64MAX INT64_MAX
#define BK_CFG_LMAXS "9223372036854775807"

/* skiff's caps where Kafka's range is open but a value would do damage
 * here (issue 16); bk_cfg_parse_value names the cap and why when a value
 * passes it, and kafka_keys.tsv's note column documents them.
 * - index files: each of a segment's two indexes is created at
 *   segment.index.bytes (sparse) and mapped whole, so 2 GiB made two 2 GiB
 *   maps per partition. 64 MiB holds 8M offset entries (32 GiB of log at the
 *   default index.interval.bytes, far beyond a 2 GiB segment); a full index
 *   only rolls the segment early.
 * - batch bytes: a batch is received, CRC-checked and validated whole in
 *   memory; 1 GiB is far beyond any client's batch and Kafka's default. */
#define BK_CFG_INDEX_BYTES_CAP (64LL << 20)
#define BK_CFG_MESSAGE_BYTES_CAP (1LL << 30)

#define BK_CFG_KEYS(X) \
  X(NODE_ID, "node.id", INT, NULL, 0, BK_CFG_I32MAX, NULL, BK_CFG_CF_REQUIRED) \
  X(PROCESS_ROLES, "process.roles", LIST, NULL, 0, 0, "broker,controller", BK_CFG_CF_REQUIRED) \
  X(CLUSTER_ID, "cluster.id", STRING, NULL, 0, 0, NULL, 0) \
  X(LISTENERS, "listeners", LIST, "PLAINTEXT://:9092", 0, 0, NULL, 0) \
  X(ADVERTISED_LISTENERS, "advertised.listeners", LIST, NULL, 0, 0, NULL, 0) \
  X(LISTENER_SECURITY_PROTOCOL_MAP, "listener.security.protocol.map", LIST, \
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", 0, 0, NULL, 0) \
  X(INTER_BROKER_LISTENER_NAME, "inter.broker.listener.name", STRING, NULL, 0, 0, NULL, 0) \
  X(CONTROLLER_LISTENER_NAMES, "controller.listener.names", LIST, NULL, 0, 0, NULL, 0) \
  X(CONTROLLER_QUORUM_VOTERS, "controller.quorum.voters", LIST, "", 0, 0, NULL, 0) \
  X(ADMIN_LISTENER, "admin.listener", STRING, "127.0.0.1:9644", 0, 0, NULL, 0) \
  X(ADMIN_SECURITY_PROTOCOL, "admin.security.protocol", ENUM, "PLAINTEXT", 0, 0, "PLAINTEXT,SSL", 0) \
  X(ADMIN_AUTHENTICATION, "admin.authentication", ENUM, "none", 0, 0, "none,basic", 0) \
  X(ADMIN_AUTHENTICATION_CACHE_MS, "admin.authentication.cache.ms", LONG, "30000", 0, 3600000, NULL, 0) \
  X(ADMIN_PROBES_OPEN, "admin.probes.open", BOOL, "true", 0, 0, NULL, 0) \
  X(ADMIN_ALLOW_INSECURE, "admin.allow.insecure", BOOL, "false", 0, 0, NULL, 0) \
  X(LOG_DIRS, "log.dirs", LIST, NULL, 0, 0, NULL, 0) \
  X(LOG_DIR, "log.dir", STRING, "/tmp/kafka-logs", 0, 0, NULL, 0) \
  X(METADATA_LOG_DIR, "metadata.log.dir", STRING, NULL, 0, 0, NULL, 0) \
  X(METADATA_LOG_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS, "metadata.log.max.record.bytes.between.snapshots", LONG, "20971520", 1, BK_CFG_I64MAX, NULL, 0) \
  X(BROKER_RACK, "broker.rack", STRING, NULL, 0, 0, NULL, 0) \
  X(NUM_PARTITIONS, "num.partitions", INT, "1", 1, BK_CFG_I32MAX, NULL, 0) \
  X(DEFAULT_REPLICATION_FACTOR, "default.replication.factor", INT, "1", 1, BK_CFG_I16MAX, NULL, 0) \
  X(MAX_REPLICAS_PER_NODE, "max.replicas.per.node", INT, "-1", -1, BK_CFG_I32MAX, NULL, 0) \
  X(AUTO_CREATE_TOPICS_ENABLE, "auto.create.topics.enable", BOOL, "true", 0, 0, NULL, 0) \
  X(DELETE_TOPIC_ENABLE, "delete.topic.enable", BOOL, "true", 0, 0, NULL, 0) \
  X(LOG_SEGMENT_BYTES, "log.segment.bytes", INT, "1073741824", 14, BK_CFG_I32MAX, NULL, BK_CFG_CF_DYNAMIC) \
  X(LOG_ROLL_MS, "log.roll.ms", LONG, NULL, 1, BK_CFG_I64MAX, NULL, BK_CFG_CF_DYNAMIC) \
  X(LOG_ROLL_HOURS, "log.roll.hours", INT, "168", 1, BK_CFG_I32MAX, NULL, 0) \
  X(LOG_ROLL_JITTER_MS, "log.roll.jitter.ms", LONG, NULL, 0, BK_CFG_I64MAX, NULL, BK_CFG_CF_DYNAMIC) \
  X(LOG_ROLL_JITTER_HOURS, "log.roll.jitter.hours", INT, "0", 0, BK_CFG_I32MAX, NULL, 0) \
  X(LOG_RETENTION_MS, "log.retention.ms", LONG, NULL, -1, BK_CFG_I64MAX, NULL, BK_CFG_CF_DYNAMIC) \
  X(LOG_RETENTION_MINUTES, "log.retention.minutes", INT, NULL, -1, BK_CFG_I32MAX, NULL, 0) \
  X(LOG_RETENTION_HOURS, "log.retention.hours", INT, "168", -1, BK_CFG_I32MAX, NULL, 0) \
  X(LOG_RETENTION_BYTES, "log.retention.bytes", LONG, "-1", -1, BK_CFG_I64MAX, NULL, BK_CFG_CF_DYNAMIC) \
  X(LOG_RETENTION_CHECK_INTERVAL_MS, "log.retention.check.interval.ms", LONG, "300000", 1, BK_CFG_I64MAX, NULL, 0) \
  X(LOG_CLEANUP_POLICY, "log.cleanup.policy", LIST, "delete", 0, 0, "delete,compact", BK_CFG_CF_DYNAMIC) \
  X(LOG_INDEX_INTERVAL_BYTES, "log.index.interval.bytes", INT, "4096", 0, BK_CFG_I32MAX, NULL, BK_CFG_CF_DYNAMIC) \
  X(LOG_INDEX_SIZE_MAX_BYTES, "log.index.size.max.bytes", INT, "10485760", 4, BK_CFG_INDEX_BYTES_CAP, NULL, BK_CFG_CF_DYNAMIC) \
  X(LOG_FLUSH_INTERVAL_MESSAGES, "log.flush.interval.messages", LONG, BK_CFG_LMAXS, 1, BK_CFG_I64MAX, NULL, BK_CFG_CF_DYNAMIC) \
  X(LOG_FLUSH_INTERVAL_MS, "log.flush.interval.ms", LONG, NULL, 0, BK_CFG_I64MAX, NULL, BK_CFG_CF_DYNAMIC) \
  X(LOG_PREALLOCATE, "log.preallocate", BOOL, "false", 0, 0, NULL, BK_CFG_CF_DYNAMIC) \
  X(LOG_SEGMENT_DELETE_DELAY_MS, "log.segment.delete.delay.ms", LONG, "60000", 0, BK_CFG_I64MAX, NULL, BK_CFG_CF_DYNAMIC) \
  X(LOG_CLEANER_ENABLE, "log.cleaner.enable", BOOL, "true", 0, 0, NULL, 0) \
  X(SKIFF_SCRUBBER_ENABLE, "skiff.scrubber.enable", BOOL, "true", 0, 0, NULL, 0) \
  X(SKIFF_SCRUBBER_BYTES_PER_SECOND, "skiff.scrubber.bytes.per.second", LONG, "1048576", 1, BK_CFG_I64MAX, NULL, 0) \
  X(SKIFF_SCRUBBER_PASS_INTERVAL_MS, "skiff.scrubber.pass.interval.ms", LONG, "86400000", 0, BK_CFG_I64MAX, NULL, 0) \
  X(LOG_CLEANER_THREADS, "log.cleaner.threads", INT, "1", 0, 16, NULL, BK_CFG_CF_DYNAMIC) \
  X(LOG_CLEANER_DEDUPE_BUFFER_SIZE, "log.cleaner.dedupe.buffer.size", LONG, "134217728", 0, BK_CFG_I64MAX, NULL, BK_CFG_CF_DYNAMIC) \
  X(LOG_CLEANER_BACKOFF_MS, "log.cleaner.backoff.ms", LONG, "15000", 0, BK_CFG_I64MAX, NULL, BK_CFG_CF_DYNAMIC) \
  X(LOG_CLEANER_IO_MAX_BYTES_PER_SECOND, "log.cleaner.io.max.bytes.per.second", DOUBLE, "1.7976931348623157E308", 0, BK_CFG_I64MAX, NULL, BK_CFG_CF_DYNAMIC) \
  X(LOG_CLEANER_MIN_CLEANABLE_RATIO, "log.cleaner.min.cleanable.ratio", DOUBLE, "0.5", 0, 1, NULL, BK_CFG_CF_DYNAMIC) \
  X(LOG_CLEANER_DELETE_RETENTION_MS, "log.cleaner.delete.retention.ms", LONG, "86400000", 0, BK_CFG_I64MAX, NULL, BK_CFG_CF_DYNAMIC) \
  X(LOG_CLEANER_MIN_COMPACTION_LAG_MS, "log.cleaner.min.compaction.lag.ms", LONG, "0", 0, BK_CFG_I64MAX, NULL, BK_CFG_CF_DYNAMIC) \
  X(LOG_CLEANER_MAX_COMPACTION_LAG_MS, "log.cleaner.max.compaction.lag.ms", LONG, BK_CFG_LMAXS, 1, BK_CFG_I64MAX, NULL, BK_CFG_CF_DYNAMIC) \
  X(LOG_MESSAGE_TIMESTAMP_TYPE, "log.message.timestamp.type", ENUM, "CreateTime", 0, 0, "CreateTime,LogAppendTime", BK_CFG_CF_DYNAMIC) \
  X(LOG_MESSAGE_DOWNCONVERSION_ENABLE, "log.message.downconversion.enable", BOOL, "true", 0, 0, NULL, BK_CFG_CF_DYNAMIC) \
  X(COMPRESSION_TYPE, "compression.type", ENUM, "producer", 0, 0, "uncompressed,zstd,lz4,snappy,gzip,producer", BK_CFG_CF_DYNAMIC) \
  X(MESSAGE_MAX_BYTES, "message.max.bytes", INT, "1048588", 0, BK_CFG_MESSAGE_BYTES_CAP, NULL, BK_CFG_CF_DYNAMIC) \
  X(SOCKET_REQUEST_MAX_BYTES, "socket.request.max.bytes", INT, "104857600", 1, BK_CFG_I32MAX, NULL, 0) \
  X(FETCH_MAX_BYTES, "fetch.max.bytes", INT, "57671680", 1024, BK_CFG_I32MAX, NULL, 0) \
  X(MIN_INSYNC_REPLICAS, "min.insync.replicas", INT, "1", 1, BK_CFG_I32MAX, NULL, BK_CFG_CF_DYNAMIC) \
  X(UNCLEAN_LEADER_ELECTION_ENABLE, "unclean.leader.election.enable", BOOL, "false", 0, 0, NULL, BK_CFG_CF_DYNAMIC) \
  X(REPLICA_LAG_TIME_MAX_MS, "replica.lag.time.max.ms", LONG, "30000", 1, BK_CFG_I64MAX, NULL, 0) \
  X(REPLICA_FETCH_MAX_BYTES, "replica.fetch.max.bytes", INT, "1048576", 0, BK_CFG_I32MAX, NULL, 0) \
  X(REPLICA_FETCH_WAIT_MAX_MS, "replica.fetch.wait.max.ms", INT, "500", 0, BK_CFG_I32MAX, NULL, 0) \
  X(REPLICA_FETCH_MIN_BYTES, "replica.fetch.min.bytes", INT, "1", 1, BK_CFG_I32MAX, NULL, 0) \
  X(NUM_REPLICA_FETCHERS, "num.replica.fetchers", INT, "1", 1, BK_CFG_I32MAX, NULL, 0) \
  X(OFFSETS_TOPIC_NUM_PARTITIONS, "offsets.topic.num.partitions", INT, "50", 1, BK_CFG_I32MAX, NULL, 0) \
  X(OFFSETS_TOPIC_REPLICATION_FACTOR, "offsets.topic.replication.factor", SHORT, "3", 1, BK_CFG_I16MAX, NULL, 0) \
  X(OFFSETS_TOPIC_SEGMENT_BYTES, "offsets.topic.segment.bytes", INT, "104857600", 1, BK_CFG_I32MAX, NULL, 0) \
  X(OFFSETS_RETENTION_MINUTES, "offsets.retention.minutes", INT, "10080", 1, BK_CFG_I32MAX, NULL, 0) \
  X(GROUP_INITIAL_REBALANCE_DELAY_MS, "group.initial.rebalance.delay.ms", INT, "3000", 0, BK_CFG_I32MAX, NULL, 0) \
  X(GROUP_MIN_SESSION_TIMEOUT_MS, "group.min.session.timeout.ms", INT, "6000", 0, BK_CFG_I32MAX, NULL, 0) \
  X(GROUP_MAX_SESSION_TIMEOUT_MS, "group.max.session.timeout.ms", INT, "1800000", 0, BK_CFG_I32MAX, NULL, 0) \
  X(GROUP_MAX_SIZE, "group.max.size", INT, "2147483647", 1, BK_CFG_I32MAX, NULL, 0) \
  X(GROUP_CONSUMER_SESSION_TIMEOUT_MS, "group.consumer.session.timeout.ms", INT, "45000", 1, BK_CFG_I32MAX, NULL, 0) \
  X(GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS, "group.consumer.heartbeat.interval.ms", INT, "5000", 1, BK_CFG_I32MAX, NULL, 0) \
  X(GROUP_CONSUMER_MAX_SIZE, "group.consumer.max.size", INT, "2147483647", 1, BK_CFG_I32MAX, NULL, 0) \
  X(GROUP_CONSUMER_ASSIGNORS, "group.consumer.assignors", LIST, "uniform,range", 0, 0, "uniform,range", 0) \
  X(GROUP_CONSUMER_MIGRATION_POLICY, "group.consumer.migration.policy", ENUM, "bidirectional", 0, 0, \
    "disabled,upgrade,downgrade,bidirectional", 0) \
  X(TRANSACTION_STATE_LOG_NUM_PARTITIONS, "transaction.state.log.num.partitions", INT, "50", 1, BK_CFG_I32MAX, NULL, 0) \
  X(TRANSACTION_STATE_LOG_REPLICATION_FACTOR, "transaction.state.log.replication.factor", SHORT, "3", 1, BK_CFG_I16MAX, NULL, 0) \
  X(TRANSACTION_STATE_LOG_MIN_ISR, "transaction.state.log.min.isr", INT, "2", 1, BK_CFG_I32MAX, NULL, 0) \
  X(TRANSACTION_MAX_TIMEOUT_MS, "transaction.max.timeout.ms", INT, "900000", 1, BK_CFG_I32MAX, NULL, 0) \
  X(TRANSACTIONAL_ID_EXPIRATION_MS, "transactional.id.expiration.ms", INT, "604800000", 1, BK_CFG_I32MAX, NULL, 0) \
  X(PRODUCER_ID_EXPIRATION_MS, "producer.id.expiration.ms", INT, "86400000", 1, BK_CFG_I32MAX, NULL, 0) \
  X(MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS, "max.incremental.fetch.session.cache.slots", INT, "1000", 0, BK_CFG_I32MAX, NULL, 0) \
  X(BROKER_SESSION_TIMEOUT_MS, "broker.session.timeout.ms", INT, "9000", 1, BK_CFG_I32MAX, NULL, 0) \
  X(BROKER_HEARTBEAT_INTERVAL_MS, "broker.heartbeat.interval.ms", INT, "2000", 1, BK_CFG_I32MAX, NULL, 0) \
  X(CONTROLLER_QUORUM_ELECTION_TIMEOUT_MS, "controller.quorum.election.timeout.ms", INT, "1000", 1, BK_CFG_I32MAX, NULL, 0) \
  X(CONTROLLER_QUORUM_ELECTION_BACKOFF_MAX_MS, "controller.quorum.election.backoff.max.ms", INT, "1000", 1, BK_CFG_I32MAX, NULL, 0) \
  X(CONTROLLER_QUORUM_FETCH_TIMEOUT_MS, "controller.quorum.fetch.timeout.ms", INT, "2000", 1, BK_CFG_I32MAX, NULL, 0) \
  X(CONTROLLER_QUORUM_REQUEST_TIMEOUT_MS, "controller.quorum.request.timeout.ms", INT, "2000", 1, BK_CFG_I32MAX, NULL, 0) \
  X(AUTO_LEADER_REBALANCE_ENABLE, "auto.leader.rebalance.enable", BOOL, "true", 0, 0, NULL, 0) \
  X(LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS, "leader.imbalance.check.interval.seconds", LONG, "300", 1, BK_CFG_I64MAX, NULL, 0) \
  X(LEADER_IMBALANCE_PER_BROKER_PERCENTAGE, "leader.imbalance.per.broker.percentage", INT, "10", 0, 100, NULL, 0) \
  X(NUM_IO_THREADS, "num.io.threads", INT, "8", 1, 64, NULL, 0) \
  X(SKIFF_IO_QUEUED_MAX_JOBS, "skiff.io.queued.max.jobs", INT, "1024", 1, 65536, NULL, 0) \
  X(NUM_NETWORK_THREADS, "num.network.threads", INT, NULL, 1, 64, NULL, 0) \
  X(QUEUED_MAX_REQUESTS, "queued.max.requests", INT, "500", 1, BK_CFG_I32MAX, NULL, 0) \
  X(CONNECTIONS_MAX_IDLE_MS, "connections.max.idle.ms", LONG, "600000", 0, BK_CFG_I64MAX, NULL, 0) \
  X(QUOTA_WINDOW_NUM, "quota.window.num", INT, "11", 1, BK_CFG_I32MAX, NULL, 0) \
  X(QUOTA_WINDOW_SIZE_SECONDS, "quota.window.size.seconds", INT, "1", 1, BK_CFG_I32MAX, NULL, 0) \
  X(SASL_ENABLED_MECHANISMS, "sasl.enabled.mechanisms", LIST, "GSSAPI", 0, 0, NULL, 0) \
  X(SASL_JAAS_CONFIG, "sasl.jaas.config", STRING, NULL, 0, 0, NULL, BK_CFG_CF_SENSITIVE) \
  X(SUPER_USERS, "super.users", STRING, NULL, 0, 0, NULL, 0) \
  X(AUTHORIZER_CLASS_NAME, "authorizer.class.name", STRING, "", 0, 0, NULL, 0) \
  X(ALLOW_EVERYONE_IF_NO_ACL_FOUND, "allow.everyone.if.no.acl.found", BOOL, "false", 0, 0, NULL, 0) \
  X(CONNECTIONS_MAX_REAUTH_MS, "connections.max.reauth.ms", LONG, "0", 0, BK_CFG_I64MAX, NULL, 0) \
  X(CONNECTION_FAILED_AUTHENTICATION_DELAY_MS, "connection.failed.authentication.delay.ms", INT, "100", 0, BK_CFG_I32MAX, NULL, 0) \
  X(MAX_CONNECTIONS, "max.connections", INT, "2147483647", 0, BK_CFG_I32MAX, NULL, BK_CFG_CF_DYNAMIC) \
  X(MAX_CONNECTIONS_PER_IP, "max.connections.per.ip", INT, "2147483647", 0, BK_CFG_I32MAX, NULL, BK_CFG_CF_DYNAMIC) \
  X(MAX_CONNECTIONS_PER_IP_OVERRIDES, "max.connections.per.ip.overrides", STRING, "", 0, 0, NULL, 0) \
  X(QUEUED_MAX_REQUEST_BYTES, "queued.max.request.bytes", LONG, "268435456", -1, BK_CFG_I64MAX, NULL, 0) \
  X(SOCKET_WRITE_STALL_MS, "socket.write.stall.ms", LONG, "60000", 0, BK_CFG_I64MAX, NULL, 0) \
  X(SSL_KEYSTORE_TYPE, "ssl.keystore.type", STRING, "PEM", 0, 0, NULL, 0) \
  X(SSL_KEYSTORE_LOCATION, "ssl.keystore.location", STRING, NULL, 0, 0, NULL, 0) \
  X(SSL_KEY_PASSWORD, "ssl.key.password", STRING, NULL, 0, 0, NULL, BK_CFG_CF_SENSITIVE) \
  X(SSL_TRUSTSTORE_TYPE, "ssl.truststore.type", STRING, "PEM", 0, 0, NULL, 0) \
  X(SSL_TRUSTSTORE_LOCATION, "ssl.truststore.location", STRING, NULL, 0, 0, NULL, 0) \
  X(SSL_CLIENT_AUTH, "ssl.client.auth", ENUM, "none", 0, 0, "required,requested,none", 0) \
  X(SSL_PRINCIPAL_MAPPING_RULES, "ssl.principal.mapping.rules", STRING, "DEFAULT", 0, 0, NULL, 0) \
  X(SSL_ENABLED_PROTOCOLS, "ssl.enabled.protocols", LIST, "TLSv1.2,TLSv1.3", 0, 0, "TLSv1.2,TLSv1.3", 0) \
  X(SSL_CIPHER_SUITES, "ssl.cipher.suites", LIST, "", 0, 0, NULL, 0) \
  X(SASL_MECHANISM_CONTROLLER_PROTOCOL, "sasl.mechanism.controller.protocol", STRING, "GSSAPI", 0, 0, NULL, 0) \
  X(SASL_MECHANISM_INTER_BROKER_PROTOCOL, "sasl.mechanism.inter.broker.protocol", STRING, "GSSAPI", 0, 0, NULL, 0)

/* Key ids: BK_CFG_NODE_ID, ... */
typedef enum bk_cfg_key {
#define BK_CFG_ENUM_(ID, ...) BK_CFG_##ID,
    BK_CFG_KEYS(BK_CFG_ENUM_)
#undef BK_CFG_ENUM_
    BK_CFG__COUNT
} bk_cfg_key_t;

typedef enum bk_cfg_type {
    BK_CFG_CT_INT, BK_CFG_CT_SHORT, BK_CFG_CT_LONG, BK_CFG_CT_DOUBLE, BK_CFG_CT_BOOL,
    BK_CFG_CT_STRING, BK_CFG_CT_LIST, BK_CFG_CT_ENUM,
} bk_cfg_type_t;

enum { BK_CFG_CF_REQUIRED = 1, BK_CFG_CF_DYNAMIC = 2, BK_CFG_CF_SENSITIVE = 4 };

/* One key's description (static, never freed). */
typedef struct bk_cfg_desc {
    const char *name;
    bk_cfg_type_t type;
    const char *def;       /* NULL: no default */
    int64_t min, max;      /* numeric types only */
    const char *allowed;   /* ENUM values / LIST item set, comma-separated */
    unsigned flags;
} bk_cfg_desc_t;

/* Longest value text accepted for any key (bounds every stored value). */
#define BK_CFG_VALUE_MAX 1024

/* Kafka's DescribeConfigs ConfigType codes. */
enum {
    BK_CFG_TYPE_BOOLEAN = 1, BK_CFG_TYPE_STRING = 2, BK_CFG_TYPE_INT = 3,
    BK_CFG_TYPE_SHORT = 4, BK_CFG_TYPE_LONG = 5, BK_CFG_TYPE_DOUBLE = 6,
    BK_CFG_TYPE_LIST = 7, BK_CFG_TYPE_CLASS = 8, BK_CFG_TYPE_PASSWORD = 9,
};

/* The description of `key` (asserted in range). */
const bk_cfg_desc_t *bk_cfg_desc(bk_cfg_key_t key);

/* Looks a key up by its exact name; returns BK_CFG__COUNT if unknown. */
bk_cfg_key_t bk_cfg_key_by_name(const char *name, size_t len);

/* Kafka's ConfigType code for a type (for DescribeConfigs v3+). */
int bk_cfg_type_code(bk_cfg_type_t type, unsigned flags);

/* A parsed value. For ENUM `i` is the index into `allowed`; for a LIST with
 * `allowed` it is a bitmask of the items present. `text` is canonical for
 * numeric/enum types and verbatim (trimmed) for STRING/LIST. */
typedef struct bk_cfg_val {
    bool is_null;
    int64_t i;
    double d;
    char text[BK_CFG_VALUE_MAX];
} bk_cfg_val_t;

/* Parses `s[0..len)` for a key of description `d` into `out`. An empty
 * string is a value for STRING/LIST and an error for the other types.
 * Returns KP_OK, or KP_ERR_BAD_VALUE with a message (without key or
 * location; the caller adds them) in why[0..why_len). */
KP_MUST_CHECK int bk_cfg_parse_value(const bk_cfg_desc_t *d, const char *s, size_t len,
                                     bk_cfg_val_t *out, char *why, size_t why_len);

#endif
