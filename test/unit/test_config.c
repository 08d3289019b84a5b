/* Unit tests for broker/config*.c: both etc files for every node, Kafka's
 * defaults, precedence (default < file < [node.N] < --set; ms over minutes
 * over hours), every error path with its location, malformed files at every
 * byte, the command-line front end, dynamic broker changes and topic
 * configs (validation, effective values, DescribeConfigs rows). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/config/config.h"
#include "broker/config/config_topic.h"
#include "test/unit/cfg_test_util.h"

static void setup(void) { cfg_tmp_setup("skiff-config-"); }

static void write_n(const char *text, size_t n) {
    /* A fresh file each time: rewriting a truncated file makes ext4 flush it
     * on close (auto_da_alloc), which made this test take seconds. */
    unlink(path);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, n, f), n);
    fclose(f);
}

static void write_text(const char *text) { write_n(text, strlen(text)); }

/* BASE followed by `extra`, loaded for `node` with `sets`. */
static bk_cfg_t *load(const char *extra, int32_t node, const char *const *sets, size_t nsets,
                         bk_cfg_err_t *err) {
    /* A BASE line whose key `extra` sets again becomes "#", so line numbers
     * stay put and there is no duplicate key. */
    char text[8192] = "";
    const char *p = BASE;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t klen = (size_t)(strchr(p, '=') - p) + 1;
        bool dup = false;
        for (const char *e = extra; e && *e; e = strchr(e, '\n') ? strchr(e, '\n') + 1 : NULL)
            dup |= strncmp(e, p, klen) == 0;
        strncat(text, dup ? "#\n" : p, dup ? 2 : (size_t)(nl - p) + 1);
        p = nl + 1;
    }
    strncat(text, extra, sizeof text - strlen(text) - 1);
    write_text(text);
    return bk_cfg_load(path, node, sets, nsets, err);
}

static bk_cfg_t *load_ok(const char *extra) {
    bk_cfg_err_t err;
    bk_cfg_t *cfg = load(extra, -1, NULL, 0, &err);
    ck_assert_msg(cfg != NULL, "load failed: %s", err.msg);
    return cfg;
}

/* Expects load(extra) to fail with exactly "<path><suffix>". */
static void expect_err(const char *extra, int32_t node, const char *const *sets, size_t nsets,
                       const char *suffix) {
    bk_cfg_err_t err;
    bk_cfg_t *cfg = load(extra, node, sets, nsets, &err);
    char want[2048];
    snprintf(want, sizeof want, "%s%s", path, suffix);
    ck_assert_msg(cfg == NULL, "accepted: %s", extra);
    ck_assert_str_eq(err.msg, want);
}

/* Expects failure with exactly `msg` (no path prefix: --set and arg errors). */
static void expect_err_exact(const char *extra, const char *const *sets, size_t nsets,
                             const char *msg) {
    bk_cfg_err_t err;
    bk_cfg_t *cfg = load(extra, -1, sets, nsets, &err);
    ck_assert_msg(cfg == NULL, "accepted");
    ck_assert_str_eq(err.msg, msg);
}

/* --- the shipped files ------------------------------------------------- */

START_TEST(test_single_node_conf) {
    int32_t nodes[] = { -1, 1 };
    for (size_t i = 0; i < 2; i++) {
        bk_cfg_err_t err;
        bk_cfg_t *cfg = bk_cfg_load("etc/single-node.conf", nodes[i], NULL, 0, &err);
        ck_assert_msg(cfg != NULL, "%s", err.msg);
        ck_assert_int_eq(bk_cfg_node_id(cfg), 1);
        ck_assert(bk_cfg_is_broker(cfg) && bk_cfg_is_controller(cfg));
        size_t n;
        const bk_cfg_listener_t *l = bk_cfg_advertised(cfg, &n);
        ck_assert_uint_eq(n, 1);
        ck_assert_str_eq(l[0].name, "PLAINTEXT");
        ck_assert_str_eq(l[0].host, "127.0.0.1");
        ck_assert_uint_eq(l[0].port, 9092);
        const bk_cfg_voter_t *v = bk_cfg_voters(cfg, &n);
        ck_assert_uint_eq(n, 1);
        ck_assert_int_eq(v[0].id, 1);
        ck_assert_uint_eq(v[0].port, 9192);
        ck_assert_str_eq(bk_cfg_admin_listener(cfg), "127.0.0.1:9644");
        ck_assert_uint_eq(bk_cfg_log_dir_count(cfg), 1);
        ck_assert_str_eq(bk_cfg_log_dir(cfg, 0), "./data/single");
        ck_assert_str_eq(bk_cfg_metadata_log_dir(cfg), "./data/single");
        bk_cfg_free(cfg);
    }
    bk_cfg_err_t err;
    ck_assert_ptr_null(bk_cfg_load("etc/single-node.conf", 2, NULL, 0, &err));
    ck_assert_str_eq(err.msg, "etc/single-node.conf:12: node.id=1 but --node 2");
}
END_TEST

START_TEST(test_cluster_conf_every_node) {
    for (int32_t node = 1; node <= 3; node++) {
        bk_cfg_err_t err;
        bk_cfg_t *cfg = bk_cfg_load("etc/cluster.conf", node, NULL, 0, &err);
        ck_assert_msg(cfg != NULL, "node %d: %s", node, err.msg);
        ck_assert_int_eq(bk_cfg_node_id(cfg), node);
        ck_assert_str_eq(bk_cfg_str(cfg, BK_CFG_CLUSTER_ID), "1fIEe0JbQl2pWDBo-WU3OA");
        size_t n;
        const bk_cfg_listener_t *l = bk_cfg_listeners(cfg, &n);
        ck_assert_uint_eq(n, 2);
        ck_assert_str_eq(l[0].name, "PLAINTEXT");
        ck_assert_uint_eq(l[0].port, 9091 + node);
        ck_assert(!l[0].controller);
        ck_assert_str_eq(l[1].name, "CONTROLLER");
        ck_assert_uint_eq(l[1].port, 9191 + node);
        ck_assert(l[1].controller);
        const bk_cfg_listener_t *a = bk_cfg_advertised(cfg, &n);
        ck_assert_uint_eq(n, 1);
        ck_assert_str_eq(a[0].host, "127.0.0.1");
        ck_assert_uint_eq(a[0].port, 9091 + node);
        const bk_cfg_voter_t *v = bk_cfg_voters(cfg, &n);
        ck_assert_uint_eq(n, 3);
        for (int k = 0; k < 3; k++) {
            ck_assert_int_eq(v[k].id, k + 1);
            ck_assert_str_eq(v[k].host, "127.0.0.1");
            ck_assert_uint_eq(v[k].port, 9192 + k);
        }
        char want[64];
        snprintf(want, sizeof want, "127.0.0.1:%d", 9643 + node);
        ck_assert_str_eq(bk_cfg_admin_listener(cfg), want);
        snprintf(want, sizeof want, "./data/node-%d", node);
        ck_assert_str_eq(bk_cfg_log_dir(cfg, 0), want);
        /* --set applies to the node being started */
        bk_cfg_free(cfg);
        const char *sets[] = { "log.dirs=/tmp/x" };
        cfg = bk_cfg_load("etc/cluster.conf", node, sets, 1, &err);
        ck_assert_msg(cfg != NULL, "%s", err.msg);
        ck_assert_str_eq(bk_cfg_log_dir(cfg, 0), "/tmp/x");
        bk_cfg_free(cfg);
    }
    bk_cfg_err_t err;
    ck_assert_ptr_null(bk_cfg_load("etc/cluster.conf", -1, NULL, 0, &err));
    ck_assert_str_eq(err.msg, "etc/cluster.conf: the file describes 3 nodes ([node.N] sections); "
                              "choose one with --node N");
    ck_assert_ptr_null(bk_cfg_load("etc/cluster.conf", 4, NULL, 0, &err));
    ck_assert_str_eq(err.msg, "etc/cluster.conf: no section [node.4] for --node 4");
}
END_TEST

/* --- defaults ------------------------------------------------------------ */

START_TEST(test_defaults_are_kafkas) {
    /* Values from Kafka's broker configuration documentation. */
    struct { bk_cfg_key_t k; int64_t v; } ints[] = {
        { BK_CFG_NUM_PARTITIONS, 1 },
        { BK_CFG_DEFAULT_REPLICATION_FACTOR, 1 },
        { BK_CFG_LOG_SEGMENT_BYTES, 1073741824 },
        { BK_CFG_LOG_ROLL_HOURS, 168 },
        { BK_CFG_LOG_RETENTION_HOURS, 168 },
        { BK_CFG_LOG_RETENTION_BYTES, -1 },
        { BK_CFG_LOG_RETENTION_CHECK_INTERVAL_MS, 300000 },
        { BK_CFG_LOG_INDEX_INTERVAL_BYTES, 4096 },
        { BK_CFG_LOG_INDEX_SIZE_MAX_BYTES, 10485760 },
        { BK_CFG_LOG_FLUSH_INTERVAL_MESSAGES, INT64_MAX },
        { BK_CFG_LOG_CLEANER_DEDUPE_BUFFER_SIZE, 134217728 },
        { BK_CFG_LOG_CLEANER_DELETE_RETENTION_MS, 86400000 },
        { BK_CFG_LOG_CLEANER_MIN_COMPACTION_LAG_MS, 0 },
        { BK_CFG_LOG_CLEANER_MAX_COMPACTION_LAG_MS, INT64_MAX },
        { BK_CFG_LOG_SEGMENT_DELETE_DELAY_MS, 60000 },
        { BK_CFG_MESSAGE_MAX_BYTES, 1048588 },
        { BK_CFG_SOCKET_REQUEST_MAX_BYTES, 104857600 },
        { BK_CFG_FETCH_MAX_BYTES, 57671680 },
        { BK_CFG_MIN_INSYNC_REPLICAS, 1 },
        { BK_CFG_REPLICA_LAG_TIME_MAX_MS, 30000 },
        { BK_CFG_REPLICA_FETCH_MAX_BYTES, 1048576 },
        { BK_CFG_REPLICA_FETCH_WAIT_MAX_MS, 500 },
        { BK_CFG_OFFSETS_TOPIC_NUM_PARTITIONS, 50 },
        { BK_CFG_OFFSETS_TOPIC_REPLICATION_FACTOR, 3 },
        { BK_CFG_OFFSETS_RETENTION_MINUTES, 10080 },
        { BK_CFG_GROUP_INITIAL_REBALANCE_DELAY_MS, 3000 },
        { BK_CFG_GROUP_MIN_SESSION_TIMEOUT_MS, 6000 },
        { BK_CFG_GROUP_MAX_SESSION_TIMEOUT_MS, 1800000 },
        { BK_CFG_TRANSACTION_STATE_LOG_NUM_PARTITIONS, 50 },
        { BK_CFG_TRANSACTION_STATE_LOG_REPLICATION_FACTOR, 3 },
        { BK_CFG_TRANSACTION_MAX_TIMEOUT_MS, 900000 },
        { BK_CFG_TRANSACTIONAL_ID_EXPIRATION_MS, 604800000 },
        { BK_CFG_BROKER_SESSION_TIMEOUT_MS, 9000 },
        { BK_CFG_BROKER_HEARTBEAT_INTERVAL_MS, 2000 },
        { BK_CFG_CONTROLLER_QUORUM_ELECTION_TIMEOUT_MS, 1000 },
        { BK_CFG_CONTROLLER_QUORUM_FETCH_TIMEOUT_MS, 2000 },
        { BK_CFG_NUM_IO_THREADS, 8 },
        { BK_CFG_CONNECTIONS_MAX_IDLE_MS, 600000 },
    };
    struct { bk_cfg_key_t k; bool v; } bools[] = {
        { BK_CFG_AUTO_CREATE_TOPICS_ENABLE, true },
        { BK_CFG_UNCLEAN_LEADER_ELECTION_ENABLE, false },
        { BK_CFG_AUTO_LEADER_REBALANCE_ENABLE, true },
        { BK_CFG_DELETE_TOPIC_ENABLE, true },
        { BK_CFG_LOG_CLEANER_ENABLE, true },
        { BK_CFG_LOG_PREALLOCATE, false },
    };
    struct { bk_cfg_key_t k; const char *v; } strs[] = {
        { BK_CFG_LOG_CLEANUP_POLICY, "delete" },
        { BK_CFG_LOG_MESSAGE_TIMESTAMP_TYPE, "CreateTime" },
        { BK_CFG_COMPRESSION_TYPE, "producer" },
        { BK_CFG_LOG_DIR, "/tmp/kafka-logs" },
    };
    bk_cfg_key_t nulls[] = { BK_CFG_LOG_RETENTION_MS, BK_CFG_LOG_RETENTION_MINUTES,
                             BK_CFG_LOG_ROLL_MS, BK_CFG_LOG_FLUSH_INTERVAL_MS, BK_CFG_BROKER_RACK,
                             BK_CFG_LOG_DIRS, BK_CFG_METADATA_LOG_DIR, BK_CFG_ADVERTISED_LISTENERS };
    bk_cfg_t *cfg = load_ok("");
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        ck_assert_msg(bk_cfg_int(cfg, ints[i].k) == ints[i].v, "%s", bk_cfg_desc(ints[i].k)->name);
        ck_assert_int_eq(bk_cfg_source(cfg, ints[i].k), BK_CFG_SRC_DEFAULT);
    }
    for (size_t i = 0; i < sizeof bools / sizeof bools[0]; i++)
        ck_assert_msg(bk_cfg_bool(cfg, bools[i].k) == bools[i].v, "%s", bk_cfg_desc(bools[i].k)->name);
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        ck_assert_str_eq(bk_cfg_str(cfg, strs[i].k), strs[i].v);
    for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
        ck_assert_msg(bk_cfg_is_null(cfg, nulls[i]), "%s", bk_cfg_desc(nulls[i])->name);
    ck_assert(bk_cfg_double(cfg, BK_CFG_LOG_CLEANER_MIN_CLEANABLE_RATIO) == 0.5);
    ck_assert(bk_cfg_retention_ms(cfg) == 7LL * 24 * 3600 * 1000);
    ck_assert(bk_cfg_roll_ms(cfg) == 7LL * 24 * 3600 * 1000);
    ck_assert(bk_cfg_roll_jitter_ms(cfg) == 0);
    ck_assert(bk_cfg_flush_ms(cfg) == INT64_MAX);
    ck_assert_str_eq(bk_cfg_log_dir(cfg, 0), "/tmp/kafka-logs"); /* log.dir fallback */
    bk_cfg_free(cfg);
}
END_TEST

/* Every key in the table: its default parses, names are unique, dynamic keys
 * are never free-form strings (topic overrides store numbers only). */
START_TEST(test_key_table_sane) {
    for (int k = 0; k < BK_CFG__COUNT; k++) {
        const bk_cfg_desc_t *d = bk_cfg_desc((bk_cfg_key_t)k);
        ck_assert_int_eq(bk_cfg_key_by_name(d->name, strlen(d->name)), k);
        if (d->flags & BK_CFG_CF_DYNAMIC)
            ck_assert_msg(d->type != BK_CFG_CT_STRING, "%s", d->name);
        if (d->flags & BK_CFG_CF_REQUIRED)
            ck_assert_ptr_null(d->def);
    }
    ck_assert_int_eq(bk_cfg_key_by_name("log.retention.msx", 17), BK_CFG__COUNT);
    for (int k = 0; k < BK_CFG_TC__COUNT; k++)
        ck_assert_int_eq(bk_cfg_topic_key_by_name(bk_cfg_topic_key_name((bk_cfg_topic_key_t)k)), k);
}
END_TEST

/* --- precedence ---------------------------------------------------------- */

START_TEST(test_precedence_file_section_set) {
    const char *text =
        "node.id=2\n"  /* overridden by the section's implied id */
        "process.roles=broker,controller\n"
        "listeners=PLAINTEXT://127.0.0.1:1,CONTROLLER://127.0.0.1:2\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
        "controller.listener.names=CONTROLLER\n"
        "controller.quorum.voters=1@h:2,2@h:2\n"
        "num.partitions=3\n"
        "log.segment.bytes=1000\n"
        "[node.1]\n"
        "num.partitions=4\n"
        "message.max.bytes=77\n"
        "[node.2]\n"
        "num.partitions=5\n";
    write_text(text);
    bk_cfg_err_t err;
    bk_cfg_t *cfg = bk_cfg_load(path, 1, NULL, 0, &err);
    ck_assert_msg(cfg != NULL, "%s", err.msg);
    ck_assert_int_eq(bk_cfg_node_id(cfg), 1);
    ck_assert_int_eq(bk_cfg_int(cfg, BK_CFG_NUM_PARTITIONS), 4);       /* section */
    ck_assert_int_eq(bk_cfg_int(cfg, BK_CFG_LOG_SEGMENT_BYTES), 1000); /* top level */
    ck_assert_int_eq(bk_cfg_int(cfg, BK_CFG_MESSAGE_MAX_BYTES), 77);
    ck_assert_int_eq(bk_cfg_source(cfg, BK_CFG_NUM_PARTITIONS), BK_CFG_SRC_STATIC_BROKER);
    bk_cfg_free(cfg);
    cfg = bk_cfg_load(path, 2, NULL, 0, &err);
    ck_assert_msg(cfg != NULL, "%s", err.msg);
    ck_assert_int_eq(bk_cfg_int(cfg, BK_CFG_NUM_PARTITIONS), 5);
    ck_assert_int_eq(bk_cfg_int(cfg, BK_CFG_MESSAGE_MAX_BYTES), 1048588); /* node 1 only */
    bk_cfg_free(cfg);
    const char *sets[] = { "num.partitions=6", "log.segment.bytes = 2000 ", "num.partitions=7" };
    cfg = bk_cfg_load(path, 1, sets, 3, &err);
    ck_assert_msg(cfg != NULL, "%s", err.msg);
    ck_assert_int_eq(bk_cfg_int(cfg, BK_CFG_NUM_PARTITIONS), 7); /* last --set wins */
    ck_assert_int_eq(bk_cfg_int(cfg, BK_CFG_LOG_SEGMENT_BYTES), 2000);
    bk_cfg_free(cfg);
}
END_TEST

START_TEST(test_retention_ms_over_minutes_over_hours) {
    struct { const char *extra; int64_t want; } cases[] = {
        { "", 168LL * 3600000 },
        { "log.retention.hours=1\n", 3600000 },
        { "log.retention.hours=1\nlog.retention.minutes=2\n", 120000 },
        { "log.retention.minutes=2\nlog.retention.hours=1\n", 120000 },
        { "log.retention.hours=1\nlog.retention.minutes=2\nlog.retention.ms=5\n", 5 },
        { "log.retention.ms=5\nlog.retention.hours=1\n", 5 },
        { "log.retention.ms=-1\nlog.retention.hours=1\n", -1 },
        { "log.retention.hours=-1\n", -1 },
        { "log.retention.minutes=-1\n", -1 },
        { "log.retention.ms=0\n", 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bk_cfg_t *cfg = load_ok(cases[i].extra);
        ck_assert_msg(bk_cfg_retention_ms(cfg) == cases[i].want, "case %zu: %lld", i,
                      (long long)bk_cfg_retention_ms(cfg));
        bk_cfg_free(cfg);
    }
    bk_cfg_t *cfg = load_ok("log.roll.hours=2\nlog.roll.jitter.hours=1\n");
    ck_assert(bk_cfg_roll_ms(cfg) == 7200000);
    ck_assert(bk_cfg_roll_jitter_ms(cfg) == 3600000);
    bk_cfg_free(cfg);
    cfg = load_ok("log.roll.hours=2\nlog.roll.ms=9\nlog.roll.jitter.ms=3\nlog.flush.interval.ms=4\n");
    ck_assert(bk_cfg_roll_ms(cfg) == 9);
    ck_assert(bk_cfg_roll_jitter_ms(cfg) == 3);
    ck_assert(bk_cfg_flush_ms(cfg) == 4);
    bk_cfg_free(cfg);
}
END_TEST

START_TEST(test_value_syntax_accepted) {
    bk_cfg_t *cfg = load_ok(
        "  # indented comment\n"
        "! bang comment\n"
        "\n"
        "   auto.create.topics.enable =  FALSE  \r\n"
        "log.cleanup.policy= compact , delete\n"
        "log.dirs=/a, /b ,/c\n"
        "metadata.log.dir=/m\n"
        "broker.rack=rack 1\n"
        "log.cleaner.min.cleanable.ratio=0.25\n"
        "log.message.timestamp.type=LogAppendTime\n"
        "cluster.id=\n");
    ck_assert(!bk_cfg_bool(cfg, BK_CFG_AUTO_CREATE_TOPICS_ENABLE));
    ck_assert_int_eq(bk_cfg_int(cfg, BK_CFG_LOG_CLEANUP_POLICY), 3);
    ck_assert_str_eq(bk_cfg_str(cfg, BK_CFG_LOG_CLEANUP_POLICY), "compact,delete");
    ck_assert_uint_eq(bk_cfg_log_dir_count(cfg), 3);
    ck_assert_str_eq(bk_cfg_log_dir(cfg, 1), "/b");
    ck_assert_str_eq(bk_cfg_metadata_log_dir(cfg), "/m");
    ck_assert_str_eq(bk_cfg_str(cfg, BK_CFG_BROKER_RACK), "rack 1");
    ck_assert(bk_cfg_double(cfg, BK_CFG_LOG_CLEANER_MIN_CLEANABLE_RATIO) == 0.25);
    ck_assert_int_eq(bk_cfg_int(cfg, BK_CFG_LOG_MESSAGE_TIMESTAMP_TYPE), 1);
    ck_assert_str_eq(bk_cfg_str(cfg, BK_CFG_CLUSTER_ID), "");
    bk_cfg_free(cfg);
    /* a file with exactly one section needs no --node; no trailing newline */
    const char *one = "[node.7]\nprocess.roles=broker\nlisteners=PLAINTEXT://:1,CONTROLLER://:2\n"
                      "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
                      "controller.listener.names=CONTROLLER\ncontroller.quorum.voters=1@h:2";
    write_text(one);
    bk_cfg_err_t err;
    cfg = bk_cfg_load(path, -1, NULL, 0, &err);
    ck_assert_msg(cfg != NULL, "%s", err.msg);
    ck_assert_int_eq(bk_cfg_node_id(cfg), 7);
    ck_assert(bk_cfg_is_broker(cfg) && !bk_cfg_is_controller(cfg));
    size_t n;
    const bk_cfg_listener_t *a = bk_cfg_advertised(cfg, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(a[0].host, "");
    bk_cfg_free(cfg);
}
END_TEST

/* --- errors -------------------------------------------------------------- */

START_TEST(test_file_errors_name_line_and_key) {
    expect_err("log.retention.msx=5\n", -1, NULL, 0, ":7: unknown key 'log.retention.msx'");
    expect_err("\n\nlog.retention.ms=abc\n", -1, NULL, 0,
               ":9: log.retention.ms=abc: expected an integer >= -1 and <= 9223372036854775807");
    expect_err("num.partitions=0\n", -1, NULL, 0, ":7: num.partitions=0: expected a positive integer");
    expect_err("log.flush.interval.ms=-5\n", -1, NULL, 0,
               ":7: log.flush.interval.ms=-5: expected a non-negative integer");
    expect_err("num.partitions=2147483648\n", -1, NULL, 0,
               ":7: num.partitions=2147483648: expected a positive integer");
    expect_err("log.retention.bytes=99999999999999999999\n", -1, NULL, 0,
               ":7: log.retention.bytes=99999999999999999999: expected an integer >= -1 and <= "
               "9223372036854775807");
    expect_err("num.partitions=1x\n", -1, NULL, 0, ":7: num.partitions=1x: expected a positive integer");
    expect_err("num.partitions=+1\n", -1, NULL, 0, ":7: num.partitions=+1: expected a positive integer");
    expect_err("num.partitions=\n", -1, NULL, 0, ":7: num.partitions=: expected a positive integer");
    expect_err("offsets.topic.replication.factor=32768\n", -1, NULL, 0,
               ":7: offsets.topic.replication.factor=32768: expected a positive integer");
    expect_err("auto.create.topics.enable=yes\n", -1, NULL, 0,
               ":7: auto.create.topics.enable=yes: expected true or false");
    expect_err("log.cleanup.policy=delete,,compact\n", -1, NULL, 0,
               ":7: log.cleanup.policy=delete,,compact: empty item in comma-separated list");
    expect_err("log.cleanup.policy=remove\n", -1, NULL, 0,
               ":7: log.cleanup.policy=remove: list item 'remove' is not one of delete,compact");
    expect_err("log.cleanup.policy=delete,delete\n", -1, NULL, 0,
               ":7: log.cleanup.policy=delete,delete: list item 'delete' repeated");
    expect_err("compression.type=brotli\n", -1, NULL, 0,
               ":7: compression.type=brotli: expected one of uncompressed,zstd,lz4,snappy,gzip,producer");
    expect_err("log.cleaner.min.cleanable.ratio=1.5\n", -1, NULL, 0,
               ":7: log.cleaner.min.cleanable.ratio=1.5: expected a number in [0, 1]");
    expect_err("log.cleaner.min.cleanable.ratio=nan\n", -1, NULL, 0,
               ":7: log.cleaner.min.cleanable.ratio=nan: expected a number in [0, 1]");
    expect_err("just words\n", -1, NULL, 0, ":7: expected key=value, got 'just words'");
    expect_err(" = 5\n", -1, NULL, 0, ":7: empty key before '='");
    expect_err("num.partitions=2\nnum.partitions=3\n", -1, NULL, 0,
               ":8: duplicate key 'num.partitions' (first set at line 7)");
    expect_err("[node.1]\n[node.1]\n", -1, NULL, 0, ":8: duplicate section [node.1] (first at line 7)");
    expect_err("[node.x]\n", -1, NULL, 0, ":7: malformed section header '[node.x]' (expected [node.N])");
    expect_err("[node.1\n", -1, NULL, 0, ":7: malformed section header '[node.1' (expected [node.N])");
    expect_err("[node.]\n", -1, NULL, 0, ":7: malformed section header '[node.]' (expected [node.N])");
    expect_err("[broker]\n", -1, NULL, 0, ":7: malformed section header '[broker]' (expected [node.N])");
    expect_err("[node.99999999999]\n", -1, NULL, 0,
               ":7: malformed section header '[node.99999999999]' (expected [node.N])");
    expect_err("[node.2]\nnode.id=3\n", 2, NULL, 0,
               ":8: node.id=3 inside [node.2] (the section implies node.id)");
    expect_err("[node.2]\nbogus=1\n[node.1]\n", 1, NULL, 0, ":8: unknown key 'bogus'"); /* other node's typo */
    expect_err("", 5, NULL, 0, ":1: node.id=1 but --node 5");
}
END_TEST

START_TEST(test_set_errors) {
    const char *s1[] = { "log.retention.ms=abc" };
    expect_err_exact("", s1, 1, "--set log.retention.ms=abc: expected an integer >= -1 and <= 9223372036854775807");
    const char *s2[] = { "num.partitions=abc" };
    expect_err_exact("", s2, 1, "--set num.partitions=abc: expected a positive integer");
    const char *s3[] = { "log.index.interval.bytes=abc" };
    expect_err_exact("", s3, 1, "--set log.index.interval.bytes=abc: expected a non-negative integer");
    const char *s4[] = { "nonsense" };
    expect_err_exact("", s4, 1, "--set nonsense: expected key=value");
    const char *s5[] = { "log.retention.msx=1" };
    expect_err_exact("", s5, 1, "--set log.retention.msx=1: unknown key 'log.retention.msx'");
    const char *s6[] = { "node.id=9" };
    bk_cfg_err_t err;
    ck_assert_ptr_null(load("", 1, s6, 1, &err));
    ck_assert_str_eq(err.msg, "--set node.id=9: conflicts with --node 1");
    /* without --node, --set node.id is an ordinary override; node 9 then is
     * a controller outside the voters */
    ck_assert_ptr_null(load("", -1, s6, 1, &err));
    char want[512];
    snprintf(want, sizeof want, "%s:6: node 9 has process.roles controller but is not in "
             "controller.quorum.voters", path);
    ck_assert_str_eq(err.msg, want);
}
END_TEST

START_TEST(test_missing_required_and_io_errors) {
    bk_cfg_err_t err;
    write_text("process.roles=broker\n");
    ck_assert_ptr_null(bk_cfg_load(path, -1, NULL, 0, &err));
    char want[512];
    snprintf(want, sizeof want, "%s: missing required key 'node.id'", path);
    ck_assert_str_eq(err.msg, want);
    write_text("node.id=1\n");
    ck_assert_ptr_null(bk_cfg_load(path, -1, NULL, 0, &err));
    snprintf(want, sizeof want, "%s: missing required key 'process.roles'", path);
    ck_assert_str_eq(err.msg, want);
    ck_assert_ptr_null(bk_cfg_load("/nonexistent/skiff.conf", -1, NULL, 0, &err));
    ck_assert_str_eq(err.msg, "/nonexistent/skiff.conf: cannot open: No such file or directory");
    ck_assert_ptr_null(bk_cfg_load(dir, -1, NULL, 0, &err)); /* a directory */
    snprintf(want, sizeof want, "%s: not a regular file", dir);
    ck_assert_str_eq(err.msg, want);
    write_n("node.id=1\n\0x=1\n", 15);
    ck_assert_ptr_null(bk_cfg_load(path, -1, NULL, 0, &err));
    snprintf(want, sizeof want, "%s: file contains a NUL byte (not a text file?)", path);
    ck_assert_str_eq(err.msg, want);
    /* a line over BK_CFG_LINE_MAX */
    char *big = malloc(BK_CFG_LINE_MAX + 64);
    memset(big, 'x', BK_CFG_LINE_MAX + 10);
    memcpy(big, "broker.rack=", 12);
    big[BK_CFG_LINE_MAX + 10] = '\n';
    write_n(big, BK_CFG_LINE_MAX + 11);
    ck_assert_ptr_null(bk_cfg_load(path, -1, NULL, 0, &err));
    snprintf(want, sizeof want, "%s:1: line longer than %d bytes", path, BK_CFG_LINE_MAX);
    ck_assert_str_eq(err.msg, want);
    /* a file over BK_CFG_FILE_MAX_BYTES */
    char *huge = malloc(BK_CFG_FILE_MAX_BYTES + 1);
    for (size_t i = 0; i <= BK_CFG_FILE_MAX_BYTES; i++)
        huge[i] = i % 64 == 63 ? '\n' : '#';
    write_n(huge, BK_CFG_FILE_MAX_BYTES + 1);
    free(huge);
    ck_assert_ptr_null(bk_cfg_load(path, -1, NULL, 0, &err));
    snprintf(want, sizeof want, "%s: file larger than %d bytes", path, BK_CFG_FILE_MAX_BYTES);
    ck_assert_str_eq(err.msg, want);
    free(big);
}
END_TEST

START_TEST(test_cross_key_errors) {
    expect_err("listeners=PLAINTEXT//x:1\n", -1, NULL, 0,
               ":7: listeners: 'PLAINTEXT//x:1': expected NAME://host:port");
    expect_err("listeners=plain://x:1\n", -1, NULL, 0,
               ":7: listeners: listener name 'plain' must be upper-case letters, digits or '_'");
    expect_err("listeners=PLAINTEXT://x:99999,CONTROLLER://x:29192\n", -1, NULL, 0,
               ":7: listeners: 'PLAINTEXT://x:99999': port out of range 0..65535");
    expect_err("listeners=PLAINTEXT://x:1,PLAINTEXT://x:2\n", -1, NULL, 0,
               ":7: listeners: listener name 'PLAINTEXT' used twice");
    expect_err("listeners=\n", -1, NULL, 0, ":7: listeners: at least one listener needed");
    expect_err("listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:TLS\n"
               "listeners=PLAINTEXT://x:1,CONTROLLER://x:29192,SSL://x:3\n", -1, NULL, 0,
               ":7: listener SSL maps to TLS; expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL");
    expect_err("listeners=PLAINTEXT://x:1,CONTROLLER://x:29192,SSL://x:3\n", -1, NULL, 0,
               ":4: listener SSL has no entry in listener.security.protocol.map (add SSL:PLAINTEXT, SSL:SSL, SSL:SASL_PLAINTEXT or SSL:SASL_SSL)");
    expect_err("listeners=PLAINTEXT://x:1,CONTROLLER://x:29192,EXTRA://x:3\n", -1, NULL, 0,
               ":4: listener EXTRA has no entry in listener.security.protocol.map (add EXTRA:PLAINTEXT, EXTRA:SSL, EXTRA:SASL_PLAINTEXT or EXTRA:SASL_SSL)");
    expect_err("controller.listener.names=\n", -1, NULL, 0,
               ":7: controller.listener.names must name the listener(s) the quorum uses");
    expect_err("controller.listener.names=QUORUM\n", -1, NULL, 0,
               ":7: controller.listener.names=QUORUM: no such listener in listeners");
    expect_err("listeners=CONTROLLER://x:29192\n", -1, NULL, 0,
               ":7: listeners: a broker needs a listener not named in controller.listener.names");
    expect_err("inter.broker.listener.name=CONTROLLER\n", -1, NULL, 0,
               ":7: inter.broker.listener.name=CONTROLLER: no such broker listener");
    expect_err("advertised.listeners=OTHER://h:1\n", -1, NULL, 0,
               ":7: advertised.listeners: OTHER is not in listeners");
    expect_err("advertised.listeners=CONTROLLER://h:1\n", -1, NULL, 0,
               ":7: advertised.listeners: CONTROLLER is a controller listener and must not be "
               "advertised to clients");
    expect_err("controller.quorum.voters=\n", -1, NULL, 0,
               ":7: controller.quorum.voters is empty; list the quorum as id@host:port,...");
    expect_err("controller.quorum.voters=1:h:1\n", -1, NULL, 0,
               ":7: controller.quorum.voters: '1:h:1': expected id@host:port");
    expect_err("controller.quorum.voters=x@h:1\n", -1, NULL, 0,
               ":7: controller.quorum.voters: 'x@h:1': node id is not a number");
    expect_err("controller.quorum.voters=1@h\n", -1, NULL, 0,
               ":7: controller.quorum.voters: '1@h': expected host:port");
    expect_err("controller.quorum.voters=1@:5\n", -1, NULL, 0,
               ":7: controller.quorum.voters: '1@:5': voters need a host and a port");
    expect_err("controller.quorum.voters=1@h:29192,1@g:2\n", -1, NULL, 0,
               ":7: controller.quorum.voters: node 1 listed twice");
    expect_err("controller.quorum.voters=2@h:29192\n", -1, NULL, 0,
               ":7: node 1 has process.roles controller but is not in controller.quorum.voters");
    expect_err("process.roles=broker\n", -1, NULL, 0,
               ":7: node 1 is in controller.quorum.voters but process.roles lacks controller");
    expect_err("controller.quorum.voters=1@127.0.0.1:29193\n", -1, NULL, 0,
               ":7: controller.quorum.voters puts node 1 at 127.0.0.1:29193 but its CONTROLLER "
               "listener is on port 29192");
    expect_err("process.roles=\n", -1, NULL, 0, ":7: process.roles=: at least one role needed");
    expect_err("process.roles=worker\n", -1, NULL, 0,
               ":7: process.roles=worker: list item 'worker' is not one of broker,controller");
    expect_err("log.dirs=/a,/a\n", -1, NULL, 0, ":7: log.dirs: '/a' listed twice");
    expect_err("log.dirs=\n", -1, NULL, 0, ":7: log.dirs: at least one directory needed");
    expect_err("log.dir=\n", -1, NULL, 0, ":7: log.dir: at least one directory needed");
    expect_err("log.dirs=/1,/2,/3,/4,/5,/6,/7,/8,/9,/10,/11,/12,/13,/14,/15,/16,/17\n", -1, NULL, 0,
               ":7: log.dirs: more than 16 directories");
    expect_err("metadata.log.dir=\n", -1, NULL, 0, ":7: metadata.log.dir is empty");
    expect_err("group.min.session.timeout.ms=2000000\n", -1, NULL, 0,
               ":7: group.min.session.timeout.ms must not exceed group.max.session.timeout.ms");
    expect_err("broker.heartbeat.interval.ms=9000\n", -1, NULL, 0,
               ":7: broker.heartbeat.interval.ms must be below broker.session.timeout.ms");
    expect_err("admin.listener=localhost\n", -1, NULL, 0,
               ":7: admin.listener=localhost: expected host:port");
    /* a default that breaks a rule is reported as such */
    expect_err("broker.session.timeout.ms=1000\n", -1, NULL, 0,
               " (default of broker.heartbeat.interval.ms): broker.heartbeat.interval.ms must be "
               "below broker.session.timeout.ms");
    bk_cfg_t *cfg = load_ok("admin.listener=\n"); /* disabled */
    ck_assert_str_eq(bk_cfg_admin_listener(cfg), "");
    bk_cfg_free(cfg);
}
END_TEST

/* Issue 17: an admin port on a non-loopback address must authenticate
 * (HTTP Basic or a required client certificate) unless admin.allow.insecure
 * says otherwise; the refusal names admin.listener's line. */
static void expect_err_has(const char *extra, const char *part) {
    bk_cfg_err_t err;
    bk_cfg_t *cfg = load(extra, -1, NULL, 0, &err);
    ck_assert_msg(cfg == NULL, "loaded: %s", extra);
    ck_assert_msg(strstr(err.msg, part) != NULL, "'%s' not in: %s", part, err.msg);
}

START_TEST(test_admin_exposure) {
    static const char *const refused[] = {
        "admin.listener=0.0.0.0:9644\n",
        "admin.listener=:9644\n",
        "admin.listener=10.1.2.3:9644\n",
        "admin.listener=[::]:9644\n",
        /* TLS alone, or with a merely requested certificate, authenticates no one */
        "admin.listener=0.0.0.0:9644\nadmin.security.protocol=SSL\n",
        "admin.listener=0.0.0.0:9644\nadmin.security.protocol=SSL\nlistener.name.admin.ssl.client.auth=requested\n",
        /* a required certificate on a plain HTTP port means nothing */
        "admin.listener=0.0.0.0:9644\nlistener.name.admin.ssl.client.auth=required\n",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        expect_err_has(refused[i], "or accept the risk with admin.allow.insecure=true");
    expect_err_has("admin.listener=0.0.0.0:9644\n", "/t.conf:7: admin.listener=0.0.0.0:9644 binds 0.0.0.0, reachable");
    static const char *const accepted[] = {
        "admin.listener=127.0.0.1:9644\n",
        "admin.listener=127.8.9.10:9644\n",
        "admin.listener=localhost:9644\n",
        "admin.listener=[::1]:9644\n",
        "admin.listener=0.0.0.0:9644\nadmin.authentication=basic\n",
        "admin.listener=0.0.0.0:9644\nadmin.security.protocol=SSL\nlistener.name.admin.ssl.client.auth=required\n",
        "admin.listener=0.0.0.0:9644\nadmin.security.protocol=SSL\nssl.client.auth=required\n",
        "admin.listener=0.0.0.0:9644\nadmin.allow.insecure=true\n",
    };
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++)
        bk_cfg_free(load_ok(accepted[i]));
    expect_err_has("admin.authentication=token\n", ":7: admin.authentication");
    expect_err_has("admin.security.protocol=SASL_SSL\n", ":7: admin.security.protocol");
    expect_err_has("admin.authentication.cache.ms=3600001\n", ":7: admin.authentication.cache.ms");
}
END_TEST

/* Every prefix of a valid file and every single-byte corruption of it either
 * loads or fails with a message; nothing crashes or reads out of bounds
 * (run under ASan by `make asan`). */
START_TEST(test_malformed_at_every_byte) {
    char text[4096];
    snprintf(text, sizeof text, "%s[node.1]\nnum.partitions=3\nlog.dirs=/a,/b\n", BASE);
    size_t n = strlen(text);
    static const char subst[] = { '\0', '\n', '=', '[', ',', '\xff', ':' };
    size_t ok = 0;
    for (size_t cut = 0; cut <= n; cut++) {
        write_n(text, cut);
        bk_cfg_err_t err = { "" };
        bk_cfg_t *cfg = bk_cfg_load(path, 1, NULL, 0, &err);
        ck_assert(cfg != NULL || err.msg[0] != '\0');
        ok += cfg != NULL;
        bk_cfg_free(cfg);
    }
    ck_assert_uint_ge(ok, 1); /* at least the whole file */
    for (size_t i = 0; i < n; i++) {
        for (size_t s = 0; s < sizeof subst; s++) {
            char copy[4096];
            memcpy(copy, text, n);
            copy[i] = subst[s];
            write_n(copy, n);
            bk_cfg_err_t err = { "" };
            bk_cfg_t *cfg = bk_cfg_load(path, 1, NULL, 0, &err);
            ck_assert(cfg != NULL || err.msg[0] != '\0');
            bk_cfg_free(cfg);
        }
    }
}
END_TEST

START_TEST(test_load_args) {
    char text[4096];
    snprintf(text, sizeof text, "%s", BASE);
    write_text(text);
    bk_cfg_err_t err;
    char *argv1[] = { "skiff", "--config", path, "--node", "1", "--set", "num.partitions=9",
                      "--set=log.dirs=/x" };
    bk_cfg_t *cfg = bk_cfg_load_args(8, argv1, &err);
    ck_assert_msg(cfg != NULL, "%s", err.msg);
    ck_assert_int_eq(bk_cfg_int(cfg, BK_CFG_NUM_PARTITIONS), 9);
    ck_assert_str_eq(bk_cfg_log_dir(cfg, 0), "/x");
    ck_assert_str_eq(bk_cfg_path(cfg), path);
    bk_cfg_free(cfg);
    char cfgarg[256];
    snprintf(cfgarg, sizeof cfgarg, "--config=%s", path);
    char *argv2[] = { "skiff", cfgarg };
    cfg = bk_cfg_load_args(2, argv2, &err);
    ck_assert_msg(cfg != NULL, "%s", err.msg);
    bk_cfg_free(cfg);
    char *argv3[] = { "skiff", "--node", "1" };
    ck_assert_ptr_null(bk_cfg_load_args(3, argv3, &err));
    ck_assert_str_eq(err.msg, "missing --config FILE (usage: skiff --config FILE [--node N] "
                              "[--set key=value ...])");
    char *argv4[] = { "skiff", "--config", path, "--nodes", "1" };
    ck_assert_ptr_null(bk_cfg_load_args(5, argv4, &err));
    ck_assert_str_eq(err.msg, "unknown argument '--nodes' (usage: skiff --config FILE [--node N] "
                              "[--set key=value ...])");
    char *argv5[] = { "skiff", "--config", path, "--node", "one" };
    ck_assert_ptr_null(bk_cfg_load_args(5, argv5, &err));
    ck_assert_str_eq(err.msg, "--node one: expected a node id (0..2147483647)");
    char *argv6[] = { "skiff", "--config", path, "--set" };
    ck_assert_ptr_null(bk_cfg_load_args(4, argv6, &err));
    ck_assert_str_eq(err.msg, "--set: missing value");
    char *argv7[] = { "skiff", "--config", path, "--set", "log.retention.ms=abc" };
    ck_assert_ptr_null(bk_cfg_load_args(5, argv7, &err));
    ck_assert_str_eq(err.msg, "--set log.retention.ms=abc: expected an integer >= -1 and <= "
                              "9223372036854775807");
}
END_TEST

/* --- dynamic broker config and describe --------------------------------- */

#define ROWS_MAX 512   /* > every key of the key table (config_kafka.h) */

typedef struct rows {
    int n;
    char names[ROWS_MAX][64];
    char values[ROWS_MAX][128];
    bool value_null[ROWS_MAX];
    bk_cfg_source_t source[ROWS_MAX];
    bool is_default[ROWS_MAX], read_only[ROWS_MAX];
    char synonym[ROWS_MAX][64];
    int type[ROWS_MAX];
} rows_t;

static void collect(const bk_cfg_entry_t *e, void *ctx) {
    rows_t *r = ctx;
    ck_assert_int_lt(r->n, ROWS_MAX);
    snprintf(r->names[r->n], 64, "%s", e->name);
    snprintf(r->values[r->n], 128, "%s", e->value ? e->value : "");
    r->value_null[r->n] = e->value == NULL;
    r->source[r->n] = e->source;
    r->is_default[r->n] = e->is_default;
    r->read_only[r->n] = e->read_only;
    r->type[r->n] = e->config_type;
    snprintf(r->synonym[r->n], 64, "%s", e->synonym ? e->synonym : "");
    r->n++;
}

static int find_row(const rows_t *r, const char *name) {
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->names[i], name) == 0)
            return i;
    ck_abort_msg("no row %s", name);
    return -1;
}

START_TEST(test_dynamic_broker_config) {
    bk_cfg_t *cfg = load_ok("log.retention.hours=2\n");
    char why[256];
    ck_assert_int_eq(bk_cfg_set_dynamic(cfg, "node.id", "2", false, false, why, sizeof why),
                     BK_CFG_INVALID_CONFIG);
    ck_assert_str_eq(why, "broker config 'node.id' cannot be changed without a restart");
    ck_assert_int_eq(bk_cfg_set_dynamic(cfg, "no.such", "2", false, false, why, sizeof why),
                     BK_CFG_INVALID_CONFIG);
    ck_assert_str_eq(why, "unknown broker config 'no.such'");
    ck_assert_int_eq(bk_cfg_set_dynamic(cfg, "log.retention.ms", "-7", false, false, why, sizeof why),
                     BK_CFG_INVALID_CONFIG);
    ck_assert_str_eq(why, "log.retention.ms=-7: expected an integer >= -1 and <= 9223372036854775807");
    /* validate_only changes nothing */
    ck_assert_int_eq(bk_cfg_set_dynamic(cfg, "log.retention.ms", "5", false, true, why, sizeof why), 0);
    ck_assert(bk_cfg_retention_ms(cfg) == 7200000);
    /* cluster default, then per-broker on top, then removal in reverse */
    ck_assert_int_eq(bk_cfg_set_dynamic(cfg, "log.retention.ms", "5", true, false, why, sizeof why), 0);
    ck_assert(bk_cfg_retention_ms(cfg) == 5);
    ck_assert_int_eq(bk_cfg_source(cfg, BK_CFG_LOG_RETENTION_MS), BK_CFG_SRC_DYNAMIC_DEFAULT_BROKER);
    ck_assert_int_eq(bk_cfg_set_dynamic(cfg, "log.retention.ms", "6", false, false, why, sizeof why), 0);
    ck_assert(bk_cfg_retention_ms(cfg) == 6);
    ck_assert_int_eq(bk_cfg_source(cfg, BK_CFG_LOG_RETENTION_MS), BK_CFG_SRC_DYNAMIC_BROKER);
    /* topics without an override follow the broker */
    ck_assert(bk_cfg_topic_int(cfg, NULL, BK_CFG_TC_RETENTION_MS) == 6);
    ck_assert_int_eq(bk_cfg_set_dynamic(cfg, "log.retention.ms", NULL, false, false, why, sizeof why), 0);
    ck_assert(bk_cfg_retention_ms(cfg) == 5);
    ck_assert_int_eq(bk_cfg_set_dynamic(cfg, "log.retention.ms", NULL, true, false, why, sizeof why), 0);
    ck_assert(bk_cfg_retention_ms(cfg) == 7200000);
    ck_assert_int_eq(bk_cfg_source(cfg, BK_CFG_LOG_RETENTION_MS), BK_CFG_SRC_DEFAULT);
    ck_assert_int_eq(bk_cfg_set_dynamic(cfg, "log.cleanup.policy", "compact", false, false, why, sizeof why), 0);
    ck_assert_str_eq(bk_cfg_str(cfg, BK_CFG_LOG_CLEANUP_POLICY), "compact");
    ck_assert_int_eq(bk_cfg_set_dynamic(cfg, "min.insync.replicas", "0", false, false, why, sizeof why),
                     BK_CFG_INVALID_CONFIG);
    ck_assert_int_eq(bk_cfg_int(cfg, BK_CFG_MIN_INSYNC_REPLICAS), 1);

    rows_t *r = calloc(1, sizeof *r);
    bk_cfg_describe_broker(cfg, collect, r);
    /* the keys skiff acts on, then the stored-only ones (obsolete: once set) */
    int stored = 0;
    for (size_t k = 0; k < bk_cfg_kkey_count(); k++)
        stored += bk_cfg_kkey_at(k)->scope == BK_CFG_SCOPE_BROKER &&
                  bk_cfg_kkey_at(k)->status == BK_CFG_STATUS_STORED;
    ck_assert_int_eq(r->n, BK_CFG__COUNT + stored);
    int i = find_row(r, "log.retention.hours");
    ck_assert_str_eq(r->values[i], "2");
    ck_assert_int_eq(r->source[i], BK_CFG_SRC_STATIC_BROKER);
    ck_assert(!r->is_default[i] && r->read_only[i]);
    i = find_row(r, "log.cleanup.policy");
    ck_assert_int_eq(r->source[i], BK_CFG_SRC_DYNAMIC_BROKER);
    ck_assert(!r->read_only[i]);
    ck_assert_int_eq(r->type[i], BK_CFG_TYPE_LIST);
    i = find_row(r, "num.partitions");
    ck_assert(r->is_default[i]);
    ck_assert_int_eq(r->source[i], BK_CFG_SRC_DEFAULT);
    ck_assert_int_eq(r->type[i], BK_CFG_TYPE_INT);
    i = find_row(r, "log.retention.ms");
    ck_assert(r->value_null[i]);
    free(r);
    bk_cfg_free(cfg);
}
END_TEST

/* --- topic configs ------------------------------------------------------- */

START_TEST(test_topic_validation) {
    struct { const char *name, *value; bool ok; } cases[] = {
        { "retention.ms", "-1", true }, { "retention.ms", "-2", false }, { "retention.ms", "x", false },
        { "retention.ms", "9223372036854775807", true }, { "retention.ms", "9223372036854775808", false },
        { "retention.bytes", "-1", true }, { "retention.bytes", "1024", true },
        { "segment.bytes", "14", true }, { "segment.bytes", "13", false },
        { "segment.bytes", "2147483648", false },
        { "segment.ms", "1", true }, { "segment.ms", "0", false },
        { "segment.index.bytes", "4", true }, { "segment.index.bytes", "3", false },
        { "segment.jitter.ms", "0", true },
        { "cleanup.policy", "compact", true }, { "cleanup.policy", "compact,delete", true },
        { "cleanup.policy", "", false }, { "cleanup.policy", "foo", false },
        { "compression.type", "zstd", true }, { "compression.type", "none", false },
        { "compression.type", "uncompressed", true },
        { "message.timestamp.type", "LogAppendTime", true },
        { "message.timestamp.type", "logappendtime", false },
        { "max.message.bytes", "0", true }, { "max.message.bytes", "-1", false },
        { "min.insync.replicas", "1", true }, { "min.insync.replicas", "0", false },
        { "min.cleanable.dirty.ratio", "0", true }, { "min.cleanable.dirty.ratio", "1", true },
        { "min.cleanable.dirty.ratio", "1.01", false }, { "min.cleanable.dirty.ratio", "-0.1", false },
        { "unclean.leader.election.enable", "true", true },
        { "unclean.leader.election.enable", "1", false },
        { "delete.retention.ms", "0", true }, { "min.compaction.lag.ms", "-1", false },
        { "max.compaction.lag.ms", "0", false }, { "flush.messages", "0", false },
        { "flush.ms", "0", true }, { "index.interval.bytes", "0", true },
        { "file.delete.delay.ms", "60000", true }, { "preallocate", "false", true },
        { "message.downconversion.enable", "false", true },
        { "log.retention.ms", "1", false }, /* broker name is not a topic config */
        { "retention.msx", "1", false },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char why[256] = "";
        int rc = bk_cfg_topic_validate(cases[i].name, cases[i].value, why, sizeof why);
        ck_assert_msg((rc == 0) == cases[i].ok, "%s=%s -> %d (%s)", cases[i].name, cases[i].value,
                      rc, why);
        if (!cases[i].ok) {
            ck_assert_int_eq(rc, BK_CFG_INVALID_CONFIG);
            ck_assert_msg(strstr(why, cases[i].name) != NULL, "message lacks name: %s", why);
        }
    }
    char why[256];
    ck_assert_int_eq(bk_cfg_topic_validate("retention.ms", NULL, why, sizeof why), BK_CFG_INVALID_CONFIG);
    ck_assert_str_eq(why, "retention.ms: null value");
    ck_assert_int_eq(bk_cfg_topic_validate("segment.bytes", "13", why, sizeof why), BK_CFG_INVALID_CONFIG);
    ck_assert_str_eq(why, "invalid value '13' for segment.bytes: expected an integer >= 14 and <= 2147483647");
    ck_assert_int_eq(bk_cfg_topic_validate("nope", "1", why, sizeof why), BK_CFG_INVALID_CONFIG);
    ck_assert_str_eq(why, "Unknown topic config name: nope");   /* Kafka's words */
}
END_TEST

START_TEST(test_topic_effective_and_describe) {
    bk_cfg_t *cfg = load_ok("log.retention.minutes=3\nlog.segment.bytes=5000\n"
                               "log.roll.hours=1\nlog.cleaner.min.cleanable.ratio=0.3\n");
    bk_cfg_topic_t tc = { 0 };
    char why[256], text[64];
    /* defaults come from the broker, with Kafka's derivations */
    ck_assert(bk_cfg_topic_int(cfg, &tc, BK_CFG_TC_RETENTION_MS) == 180000);
    ck_assert(bk_cfg_topic_int(cfg, &tc, BK_CFG_TC_SEGMENT_BYTES) == 5000);
    ck_assert(bk_cfg_topic_int(cfg, &tc, BK_CFG_TC_SEGMENT_MS) == 3600000);
    ck_assert(bk_cfg_topic_int(cfg, &tc, BK_CFG_TC_FLUSH_MS) == INT64_MAX);
    ck_assert(bk_cfg_topic_int(cfg, &tc, BK_CFG_TC_MAX_MESSAGE_BYTES) == 1048588);
    ck_assert(bk_cfg_topic_double(cfg, &tc, BK_CFG_TC_MIN_CLEANABLE_DIRTY_RATIO) == 0.3);
    bk_cfg_topic_text(cfg, &tc, BK_CFG_TC_CLEANUP_POLICY, text, sizeof text);
    ck_assert_str_eq(text, "delete");
    /* overrides */
    ck_assert_int_eq(bk_cfg_topic_set(&tc, "retention.ms", "1000", why, sizeof why), 0);
    ck_assert_int_eq(bk_cfg_topic_set(&tc, "cleanup.policy", "compact,delete", why, sizeof why), 0);
    ck_assert_int_eq(bk_cfg_topic_set(&tc, "min.cleanable.dirty.ratio", "0.75", why, sizeof why), 0);
    ck_assert_int_eq(bk_cfg_topic_set(&tc, "message.timestamp.type", "LogAppendTime", why, sizeof why), 0);
    ck_assert_int_eq(bk_cfg_topic_set(&tc, "segment.bytes", "1", why, sizeof why), BK_CFG_INVALID_CONFIG);
    ck_assert(bk_cfg_topic_int(cfg, &tc, BK_CFG_TC_SEGMENT_BYTES) == 5000); /* unchanged on error */
    ck_assert(bk_cfg_topic_int(cfg, &tc, BK_CFG_TC_RETENTION_MS) == 1000);
    ck_assert(bk_cfg_topic_int(cfg, &tc, BK_CFG_TC_CLEANUP_POLICY) == 3);
    ck_assert(bk_cfg_topic_int(cfg, &tc, BK_CFG_TC_MESSAGE_TIMESTAMP_TYPE) == 1);
    ck_assert(bk_cfg_topic_double(cfg, &tc, BK_CFG_TC_MIN_CLEANABLE_DIRTY_RATIO) == 0.75);
    bk_cfg_topic_text(cfg, &tc, BK_CFG_TC_CLEANUP_POLICY, text, sizeof text);
    ck_assert_str_eq(text, "delete,compact");

    rows_t *r = calloc(1, sizeof *r);
    bk_cfg_topic_describe(cfg, &tc, collect, r);
    ck_assert_int_eq(r->n, BK_CFG_TC__COUNT);
    int i = find_row(r, "retention.ms");
    ck_assert_str_eq(r->values[i], "1000");
    ck_assert_int_eq(r->source[i], BK_CFG_SRC_DYNAMIC_TOPIC);
    ck_assert(!r->is_default[i] && !r->read_only[i]);
    ck_assert_str_eq(r->synonym[i], "log.retention.ms");
    ck_assert_int_eq(r->type[i], BK_CFG_TYPE_LONG);
    i = find_row(r, "segment.bytes");
    ck_assert_str_eq(r->values[i], "5000");
    ck_assert_int_eq(r->source[i], BK_CFG_SRC_STATIC_BROKER);
    i = find_row(r, "segment.ms");
    ck_assert_str_eq(r->values[i], "3600000");
    ck_assert_int_eq(r->source[i], BK_CFG_SRC_STATIC_BROKER); /* from log.roll.hours */
    i = find_row(r, "max.message.bytes");
    ck_assert_str_eq(r->values[i], "1048588");
    ck_assert(r->is_default[i]);
    ck_assert_int_eq(r->source[i], BK_CFG_SRC_DEFAULT);
    i = find_row(r, "min.cleanable.dirty.ratio");
    ck_assert_str_eq(r->values[i], "0.75");
    i = find_row(r, "message.timestamp.type");
    ck_assert_str_eq(r->values[i], "LogAppendTime");
    i = find_row(r, "compression.type");
    ck_assert_str_eq(r->values[i], "producer");
    ck_assert_int_eq(r->type[i], BK_CFG_TYPE_STRING);
    free(r);

    /* removing an override returns to the broker value */
    ck_assert_int_eq(bk_cfg_topic_set(&tc, "retention.ms", NULL, why, sizeof why), 0);
    ck_assert(bk_cfg_topic_int(cfg, &tc, BK_CFG_TC_RETENTION_MS) == 180000);
    ck_assert_int_eq(bk_cfg_topic_set(&tc, "bogus", NULL, why, sizeof why), BK_CFG_INVALID_CONFIG);
    bk_cfg_free(cfg);
}
END_TEST

int main(void) {
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_single_node_conf);
    tcase_add_test(tc, test_cluster_conf_every_node);
    tcase_add_test(tc, test_defaults_are_kafkas);
    tcase_add_test(tc, test_key_table_sane);
    tcase_add_test(tc, test_precedence_file_section_set);
    tcase_add_test(tc, test_retention_ms_over_minutes_over_hours);
    tcase_add_test(tc, test_value_syntax_accepted);
    tcase_add_test(tc, test_file_errors_name_line_and_key);
    tcase_add_test(tc, test_set_errors);
    tcase_add_test(tc, test_missing_required_and_io_errors);
    tcase_add_test(tc, test_cross_key_errors);
    tcase_add_test(tc, test_admin_exposure);
    tcase_add_test(tc, test_malformed_at_every_byte);
    tcase_add_test(tc, test_load_args);
    tcase_add_test(tc, test_dynamic_broker_config);
    tcase_add_test(tc, test_topic_validation);
    tcase_add_test(tc, test_topic_effective_and_describe);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
