/* Unit tests for the /v1/health verdict (broker/health.c): a known
 * controller with an image that has no registrations yet is not healthy
 * (issue 5), expected brokers that are missing or fenced are listed down
 * (ascending, repeats counted once, the list bounded), partitions without a
 * leader or a full ISR count, and the healthy case. Also the coordinator
 * lookup behind FindCoordinator (bk_cluster_internal_coordinator), which judges a
 * broker from the same image: not this node before its coordinator has
 * loaded, not a fenced or unknown leader. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "broker/meta/health.h"
#include "broker/cluster/internal_topic.h"
#include "broker/node.h"
#include "protocol/kp_errors.h"
#include "broker/meta/records.h"

typedef Skiff__Metadata__MetadataRecord rec_t;

static void apply_rec(bk_meta_image_t *img, rec_t *r, int64_t off) {
    size_t len = skiff__metadata__metadata_record__get_packed_size(r);
    uint8_t *buf = malloc(len + 1);
    ck_assert_ptr_nonnull(buf);
    skiff__metadata__metadata_record__pack(r, buf);
    ck_assert_int_eq(bk_meta_image_apply_bytes(img, buf, len, off), KP_OK);
    free(buf);
}

/* A registration record as the controller writes it (fenced unless told). */
static void reg(bk_meta_image_t *img, int32_t id, bool fenced, int64_t off) {
    Skiff__Metadata__Endpoint ep = SKIFF__METADATA__ENDPOINT__INIT;
    Skiff__Metadata__Endpoint *eps[1] = { &ep };
    ep.listener = "PLAINTEXT";
    ep.host = "127.0.0.1";
    ep.has_port = true;
    ep.port = (uint32_t)(9000 + id);
    uint8_t inc[16] = { 1, (uint8_t)id, (uint8_t)(id >> 8) };
    Skiff__Metadata__BrokerRegistration m = SKIFF__METADATA__BROKER_REGISTRATION__INIT;
    m.has_broker_id = true; m.broker_id = id;
    m.has_incarnation_id = true; m.incarnation_id.len = 16; m.incarnation_id.data = inc;
    m.has_broker_epoch = true; m.broker_epoch = off;
    m.n_endpoints = 1; m.endpoints = eps;
    m.has_fenced = true; m.fenced = fenced;
    rec_t r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_BROKER_REGISTRATION;
    r.broker_registration = &m;
    apply_rec(img, &r, off);
}

static void topic_with_part(bk_meta_image_t *img, uint8_t tag, const int32_t *reps, size_t nreps,
                            const int32_t *isr, size_t nisr, int32_t leader, int64_t off) {
    uint8_t id[16] = { 0xab };
    id[15] = tag;
    char name[16] = "t";
    name[1] = (char)('a' + tag);
    Skiff__Metadata__Topic t = SKIFF__METADATA__TOPIC__INIT;
    t.name = name;
    t.has_topic_id = true; t.topic_id.len = 16; t.topic_id.data = id;
    rec_t r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_TOPIC;
    r.topic = &t;
    apply_rec(img, &r, off);
    Skiff__Metadata__Partition p = SKIFF__METADATA__PARTITION__INIT;
    p.has_topic_id = true; p.topic_id.len = 16; p.topic_id.data = id;
    p.has_partition_id = true; p.partition_id = 0;
    p.replicas = (int32_t *)reps; p.n_replicas = nreps;
    p.isr = (int32_t *)isr; p.n_isr = nisr;
    p.has_leader = true; p.leader = leader;
    p.has_leader_epoch = true; p.has_partition_epoch = true;
    rec_t r2 = SKIFF__METADATA__METADATA_RECORD__INIT;
    r2.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_PARTITION;
    r2.partition = &p;
    apply_rec(img, &r2, off + 1);
}

static const int32_t THREE[] = { 1, 2, 3 };

START_TEST(test_known_controller_no_registrations_is_not_healthy) {
    /* the state every node is in between the first election and the first
     * committed registration: it used to read as healthy */
    bk_meta_image_t img;
    bk_meta_image_init(&img, 2);
    bk_meta_health_t h;
    bk_meta_health_judge(&img, 1, THREE, 3, &h);
    ck_assert(!h.healthy);
    ck_assert(!h.no_controller);
    ck_assert_uint_eq(h.ndown, 3);
    ck_assert_uint_eq(h.ndown_listed, 3);
    for (int i = 0; i < 3; i++) ck_assert_int_eq(h.down[i], i + 1);
    /* nothing expected and nothing registered: only the controller matters */
    bk_meta_health_judge(&img, 1, NULL, 0, &h);
    ck_assert(h.healthy);
    bk_meta_health_judge(&img, -1, NULL, 0, &h);
    ck_assert(!h.healthy);
    ck_assert(h.no_controller);
    bk_meta_image_free(&img);
}
END_TEST

START_TEST(test_registration_steps) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, 1);
    bk_meta_health_t h;
    int64_t off = 0;
    /* registered but fenced (as registrations land), in an order that is not
     * sorted, with one expected id repeated */
    const int32_t expected[] = { 3, 1, 2, 3, 1 };
    reg(&img, 3, true, off++);
    bk_meta_health_judge(&img, 1, expected, 5, &h);
    ck_assert(!h.healthy);
    ck_assert_uint_eq(h.ndown, 3);
    ck_assert_int_eq(h.down[0], 1);
    ck_assert_int_eq(h.down[1], 2);
    ck_assert_int_eq(h.down[2], 3);
    reg(&img, 3, false, off++);        /* unfenced */
    reg(&img, 1, false, off++);
    bk_meta_health_judge(&img, 1, expected, 5, &h);
    ck_assert(!h.healthy);
    ck_assert_uint_eq(h.ndown, 1);
    ck_assert_int_eq(h.down[0], 2);
    reg(&img, 2, false, off++);
    bk_meta_health_judge(&img, 1, expected, 5, &h);
    ck_assert(h.healthy);
    ck_assert_uint_eq(h.ndown, 0);
    /* a registered broker nobody expected still counts when fenced */
    reg(&img, 9, true, off++);
    bk_meta_health_judge(&img, 1, expected, 5, &h);
    ck_assert(!h.healthy);
    ck_assert_uint_eq(h.ndown, 1);
    ck_assert_int_eq(h.down[0], 9);
    bk_meta_health_judge(&img, -1, expected, 5, &h);
    ck_assert(h.no_controller);
    bk_meta_image_free(&img);
}
END_TEST

START_TEST(test_partitions_count) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, 1);
    int64_t off = 0;
    for (int32_t b = 1; b <= 3; b++) reg(&img, b, false, off++);
    bk_meta_health_t h;
    topic_with_part(&img, 0, THREE, 3, THREE, 3, 1, off);
    off += 2;
    bk_meta_health_judge(&img, 1, THREE, 3, &h);
    ck_assert(h.healthy);
    topic_with_part(&img, 1, THREE, 3, THREE, 2, 2, off);   /* ISR {1,2} of 3 */
    off += 2;
    bk_meta_health_judge(&img, 1, THREE, 3, &h);
    ck_assert(!h.healthy);
    ck_assert_uint_eq(h.under, 1);
    ck_assert_uint_eq(h.leaderless, 0);
    topic_with_part(&img, 2, THREE, 3, THREE + 2, 1, -1, off);   /* no leader */
    bk_meta_health_judge(&img, 1, THREE, 3, &h);
    ck_assert_uint_eq(h.under, 1);
    ck_assert_uint_eq(h.leaderless, 1);
    ck_assert_uint_eq(h.ndown, 0);
    bk_meta_image_free(&img);
}
END_TEST

START_TEST(test_down_list_bounded) {
    /* more down brokers than the list holds: all counted, the lowest ids
     * listed in order, whatever order they arrive in */
    bk_meta_image_t img;
    bk_meta_image_init(&img, 1);
    size_t total = BK_META_HEALTH_DOWN_LIST_MAX + 20;
    int64_t off = 0;
    for (size_t i = 0; i < total / 2; i++) reg(&img, (int32_t)(2 * i + 100), true, off++);   /* even */
    int32_t *expected = calloc(total, sizeof *expected);
    ck_assert_ptr_nonnull(expected);
    for (size_t i = 0; i < total / 2; i++) expected[i] = (int32_t)(total + 100 - 1 - 2 * i);    /* odd, descending */
    bk_meta_health_t h;
    bk_meta_health_judge(&img, 1, expected, total / 2, &h);
    ck_assert_uint_eq(h.ndown, total);
    ck_assert_uint_eq(h.ndown_listed, BK_META_HEALTH_DOWN_LIST_MAX);
    for (size_t i = 0; i < BK_META_HEALTH_DOWN_LIST_MAX; i++) ck_assert_int_eq(h.down[i], (int32_t)(100 + i));
    free(expected);
    bk_meta_image_free(&img);
}
END_TEST

START_TEST(test_coordinator_lookup) {
    bk_node_t *n = calloc(1, sizeof *n);
    ck_assert_ptr_nonnull(n);
    n->id = 1;
    bk_meta_image_init(&n->img, 1);
    reg(&n->img, 1, false, 0);
    reg(&n->img, 2, false, 1);
    reg(&n->img, 3, true, 2);
    bk_meta_partition_t p;
    memset(&p, 0, sizeof p);
    int32_t id;
    const char *host;
    int32_t port;
    p.leader = 1;   /* here, still opening/replaying: ask again, not "load in progress" */
    ck_assert_int_eq(bk_cluster_internal_coordinator(n, &p, false, &id, &host, &port), KP_ERROR_COORDINATOR_NOT_AVAILABLE);
    ck_assert_int_eq(id, -1);
    ck_assert_int_eq(bk_cluster_internal_coordinator(n, &p, true, &id, &host, &port), 0);
    ck_assert_int_eq(id, 1);
    ck_assert_int_eq(port, 9001);
    ck_assert_str_eq(host, "127.0.0.1");
    p.leader = 2;   /* elsewhere: that node judges its own loading */
    ck_assert_int_eq(bk_cluster_internal_coordinator(n, &p, false, &id, &host, &port), 0);
    ck_assert_int_eq(id, 2);
    ck_assert_int_eq(port, 9002);
    p.leader = 3;   /* fenced */
    ck_assert_int_eq(bk_cluster_internal_coordinator(n, &p, true, &id, &host, &port), KP_ERROR_COORDINATOR_NOT_AVAILABLE);
    p.leader = 4;   /* unknown */
    ck_assert_int_eq(bk_cluster_internal_coordinator(n, &p, true, &id, &host, &port), KP_ERROR_COORDINATOR_NOT_AVAILABLE);
    p.leader = -1;
    ck_assert_int_eq(bk_cluster_internal_coordinator(n, &p, true, &id, &host, &port), KP_ERROR_COORDINATOR_NOT_AVAILABLE);
    ck_assert_int_eq(port, -1);
    bk_meta_image_free(&n->img);
    free(n);
}
END_TEST

int main(void) {
    Suite *s = suite_create("health");
    TCase *tc = tcase_create("health");
    tcase_add_test(tc, test_known_controller_no_registrations_is_not_healthy);
    tcase_add_test(tc, test_registration_steps);
    tcase_add_test(tc, test_partitions_count);
    tcase_add_test(tc, test_down_list_bounded);
    tcase_add_test(tc, test_coordinator_lookup);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
