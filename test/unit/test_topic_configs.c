/* test_topic_configs.c — topic overrides resolved once per change of the
 * image's Config records (broker/core/topic_configs.c): a lookup returns the
 * resolved overrides without parsing or logging; a bad value is warned once,
 * when it is first resolved, not per lookup or per later sync; an entry
 * keeps its address while its topic keeps records; a path that changes the
 * image without the commit hook (apply, snapshot load) is caught by the
 * image's configs_gen and resolved at the next lookup; bk_node_log_config
 * follows the overrides. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/core/node.h"
#include "broker/meta/image.h"
#include "storage/st_status.h"

typedef Skiff__Metadata__MetadataRecord rec_t;

static int warnings;          /* "ignored" lines logged */
static char last_warning[1024];
static void log_fn(void *ctx, st_log_level_t lvl, const char *msg) {
    (void)ctx;
    if (lvl == ST_LOG_WARN && strstr(msg, "ignored")) {
        warnings++;
        snprintf(last_warning, sizeof last_warning, "%s", msg);
    }
}

static int64_t next_off;
static void config(bk_meta_image_t *img, const char *topic, const char *name, const char *value) {
    Skiff__Metadata__Config m = SKIFF__METADATA__CONFIG__INIT;
    m.has_resource_type = true;
    m.resource_type = BK_META_RESOURCE_TOPIC;
    m.resource_name = (char *)topic;
    m.name = (char *)name;
    m.value = (char *)value;
    rec_t r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_CONFIG;
    r.config = &m;
    ck_assert_int_eq(bk_meta_image_apply(img, &r, next_off++), KP_OK);
}

static bk_node_t node;

static void setup(void) {
    memset(&node, 0, sizeof node);
    bk_cfg_err_t err;
    node.cfg = bk_cfg_load("etc/single-node.conf", 1, NULL, 0, &err);
    ck_assert_msg(node.cfg != NULL, "%s", err.msg);
    node.id = 1;
    bk_meta_image_init(&node.img, 1);
    next_off = 0;
    warnings = 0;
    st_set_log_fn(log_fn, NULL);
}

static void teardown(void) {
    bk_node_topic_configs_free(&node);
    bk_meta_image_free(&node.img);
    bk_cfg_free(node.cfg);
    st_set_log_fn(NULL, NULL);
}

static void sync_now(void) { ck_assert_int_eq(bk_node_topic_configs_sync(&node), KP_OK); }

static bool is_set(const bk_cfg_topic_t *tc, bk_cfg_topic_key_t k) { return (tc->set >> k) & 1u; }

START_TEST(test_no_overrides) {
    sync_now();
    const bk_cfg_topic_t *a = bk_node_topic_config(&node, "a");
    ck_assert_ptr_nonnull(a);
    ck_assert_uint_eq(a->set, 0);
    ck_assert_ptr_eq(bk_node_topic_config(&node, "zzz"), a);   /* one shared empty set */
    ck_assert_int_eq(bk_cfg_topic_int(node.cfg, a, BK_CFG_TC_RETENTION_MS),
                     bk_cfg_retention_ms(node.cfg));
}
END_TEST

START_TEST(test_resolved_once_warned_once) {
    config(&node.img, "orders", "retention.ms", "1000");
    config(&node.img, "orders", "segment.bytes", "abc");          /* bad: skipped */
    config(&node.img, "orders", "max.message.bytes", "2048");
    config(&node.img, "other", "min.insync.replicas", "2");
    sync_now();
    ck_assert_int_eq(warnings, 1);
    ck_assert_ptr_nonnull(strstr(last_warning, "topic orders"));
    ck_assert_ptr_nonnull(strstr(last_warning, "segment.bytes=abc"));
    const bk_cfg_topic_t *o = bk_node_topic_config(&node, "orders");
    ck_assert(is_set(o, BK_CFG_TC_RETENTION_MS));
    ck_assert(is_set(o, BK_CFG_TC_MAX_MESSAGE_BYTES));
    ck_assert(!is_set(o, BK_CFG_TC_SEGMENT_BYTES));
    ck_assert_int_eq(bk_cfg_topic_int(node.cfg, o, BK_CFG_TC_RETENTION_MS), 1000);
    ck_assert_int_eq(bk_cfg_topic_int(node.cfg, o, BK_CFG_TC_MAX_MESSAGE_BYTES), 2048);
    ck_assert_int_eq(bk_cfg_topic_int(node.cfg, o, BK_CFG_TC_SEGMENT_BYTES),
                     bk_cfg_int(node.cfg, BK_CFG_LOG_SEGMENT_BYTES));
    /* the request path: a lookup per produced partition parses and logs nothing */
    for (int i = 0; i < 10000; i++) {
        ck_assert_ptr_eq(bk_node_topic_config(&node, "orders"), o);
        ck_assert_int_eq(bk_cfg_topic_int(node.cfg, bk_node_topic_config(&node, "other"),
                                             BK_CFG_TC_MIN_INSYNC_REPLICAS), 2);
    }
    ck_assert_int_eq(warnings, 1);
    /* another topic's change re-resolves everything but does not re-warn,
     * and "orders" keeps its address */
    config(&node.img, "other", "retention.ms", "5");
    sync_now();
    ck_assert_int_eq(warnings, 1);
    ck_assert_ptr_eq(bk_node_topic_config(&node, "orders"), o);
    ck_assert_int_eq(bk_cfg_topic_int(node.cfg, bk_node_topic_config(&node, "other"), BK_CFG_TC_RETENTION_MS), 5);
    /* a new bad value is a new warning, once */
    config(&node.img, "orders", "segment.bytes", "xyz");
    sync_now();
    sync_now();
    ck_assert_int_eq(warnings, 2);
    ck_assert_ptr_nonnull(strstr(last_warning, "segment.bytes=xyz"));
    /* fixed: no warning, the value applies */
    config(&node.img, "orders", "segment.bytes", "1048576");
    sync_now();
    ck_assert_int_eq(warnings, 2);
    ck_assert_ptr_eq(bk_node_topic_config(&node, "orders"), o);
    ck_assert_int_eq(bk_cfg_topic_int(node.cfg, o, BK_CFG_TC_SEGMENT_BYTES), 1048576);
}
END_TEST

START_TEST(test_changes_without_sync_are_seen) {
    sync_now();
    ck_assert_uint_eq(bk_node_topic_config(&node, "t")->set, 0);
    /* applied without the commit hook: the image's configs_gen moved */
    config(&node.img, "t", "retention.ms", "77");
    ck_assert_int_eq(bk_cfg_topic_int(node.cfg, bk_node_topic_config(&node, "t"), BK_CFG_TC_RETENTION_MS), 77);
    /* removal of the only override: the topic has none again */
    config(&node.img, "t", "retention.ms", NULL);
    ck_assert_uint_eq(bk_node_topic_config(&node, "t")->set, 0);
    /* a snapshot load replaces every config */
    config(&node.img, "t", "retention.ms", "88");
    config(&node.img, "u", "retention.ms", "99");
    ck_assert_int_eq(bk_cfg_topic_int(node.cfg, bk_node_topic_config(&node, "u"), BK_CFG_TC_RETENTION_MS), 99);
    uint8_t *snap;
    size_t len;
    ck_assert_int_eq(bk_meta_image_snapshot(&node.img, &snap, &len), KP_OK);
    config(&node.img, "u", "retention.ms", "1");
    ck_assert_int_eq(bk_cfg_topic_int(node.cfg, bk_node_topic_config(&node, "u"), BK_CFG_TC_RETENTION_MS), 1);
    ck_assert_int_eq(bk_meta_image_load(&node.img, snap, len), KP_OK);
    free(snap);
    ck_assert_int_eq(bk_cfg_topic_int(node.cfg, bk_node_topic_config(&node, "u"), BK_CFG_TC_RETENTION_MS), 99);
    ck_assert_int_eq(bk_cfg_topic_int(node.cfg, bk_node_topic_config(&node, "t"), BK_CFG_TC_RETENTION_MS), 88);
}
END_TEST

START_TEST(test_log_config_follows) {
    config(&node.img, "c", "retention.ms", "4242");
    config(&node.img, "c", "cleanup.policy", "compact");
    config(&node.img, "c", "message.timestamp.type", "LogAppendTime");
    sync_now();
    st_log_config_t lc;
    bk_node_log_config(&node, "c", &lc);
    ck_assert_int_eq(lc.retention_ms, 4242);
    ck_assert_uint_eq(lc.cleanup_policy, 2);   /* bitmask of "delete,compact": compact */
    ck_assert(lc.log_append_time);
    bk_node_log_config(&node, "d", &lc);          /* no overrides: the broker's */
    ck_assert_int_eq(lc.retention_ms, bk_cfg_retention_ms(node.cfg));
    ck_assert(!lc.log_append_time);
}
END_TEST

START_TEST(test_many_topics_sorted) {
    char name[32], val[32];
    for (int i = 999; i >= 0; i--) {       /* reverse order on purpose */
        snprintf(name, sizeof name, "t%d", i);
        snprintf(val, sizeof val, "%d", 1000 + i);
        config(&node.img, name, "retention.ms", val);
    }
    sync_now();
    ck_assert_uint_eq(node.topic_cfgs.n, 1000);
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "t%d", i);
        ck_assert_int_eq(bk_cfg_topic_int(node.cfg, bk_node_topic_config(&node, name), BK_CFG_TC_RETENTION_MS),
                         1000 + i);
    }
    ck_assert_uint_eq(bk_node_topic_config(&node, "t")->set, 0);
    ck_assert_uint_eq(bk_node_topic_config(&node, "t1000")->set, 0);
    /* every record of half the topics removed: their entries go */
    for (int i = 0; i < 1000; i += 2) {
        snprintf(name, sizeof name, "t%d", i);
        config(&node.img, name, "retention.ms", NULL);
    }
    sync_now();
    ck_assert_uint_eq(node.topic_cfgs.n, 500);
    ck_assert_uint_eq(bk_node_topic_config(&node, "t2")->set, 0);
    ck_assert_int_eq(bk_cfg_topic_int(node.cfg, bk_node_topic_config(&node, "t3"), BK_CFG_TC_RETENTION_MS), 1003);
}
END_TEST

int main(void) {
    Suite *s = suite_create("topic_configs");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_no_overrides);
    tcase_add_test(tc, test_resolved_once_warned_once);
    tcase_add_test(tc, test_changes_without_sync_are_seen);
    tcase_add_test(tc, test_log_config_follows);
    tcase_add_test(tc, test_many_topics_sorted);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
