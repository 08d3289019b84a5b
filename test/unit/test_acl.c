/* Unit tests for broker/meta/acl.c and image_acl.c: the StandardAuthorizer
 * decision (literal, wildcard, prefixed, DENY over ALLOW, implied
 * operations, host and principal wildcards, no-ACL), filters, removal, the
 * records on the image and snapshots (ACLs survive load). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/meta/acl.h"
#include "broker/meta/features.h"
#include "broker/meta/image.h"

static bk_meta_acl_t acl(int8_t rt, int8_t pt, const char *name, const char *pr, const char *host, int8_t op,
                         int8_t perm) {
    bk_meta_acl_t a = { rt, pt, name, pr, host, op, perm };
    return a;
}

#define T BK_META_RES_TOPIC
#define G BK_META_RES_GROUP
#define LIT BK_META_PAT_LITERAL
#define PRE BK_META_PAT_PREFIXED
#define ALLOW BK_META_PERM_ALLOW
#define DENY BK_META_PERM_DENY

START_TEST(test_decide) {
    bk_meta_acls_t *s = bk_meta_acls_new();
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(bk_meta_acls_decide(s, "User:a", "1.2.3.4", BK_META_OP_READ, T, "t"), BK_META_AUTHZ_NO_ACL);
    bk_meta_acl_t a = acl(T, LIT, "t", "User:a", "*", BK_META_OP_READ, ALLOW);
    ck_assert_int_eq(bk_meta_acls_add(s, &a), KP_OK);
    ck_assert_int_eq(bk_meta_acls_add(s, &a), KP_OK);   /* duplicate: no-op */
    ck_assert_uint_eq(bk_meta_acls_count(s), 1);
    ck_assert_int_eq(bk_meta_acls_decide(s, "User:a", "h", BK_META_OP_READ, T, "t"), BK_META_AUTHZ_ALLOW);
    /* READ implies DESCRIBE, not WRITE */
    ck_assert_int_eq(bk_meta_acls_decide(s, "User:a", "h", BK_META_OP_DESCRIBE, T, "t"), BK_META_AUTHZ_ALLOW);
    ck_assert_int_eq(bk_meta_acls_decide(s, "User:a", "h", BK_META_OP_WRITE, T, "t"), BK_META_AUTHZ_DENY);
    /* another principal on a resource with ACLs: denied; other resource: none */
    ck_assert_int_eq(bk_meta_acls_decide(s, "User:b", "h", BK_META_OP_READ, T, "t"), BK_META_AUTHZ_DENY);
    ck_assert_int_eq(bk_meta_acls_decide(s, "User:a", "h", BK_META_OP_READ, T, "u"), BK_META_AUTHZ_NO_ACL);
    ck_assert_int_eq(bk_meta_acls_decide(s, "User:a", "h", BK_META_OP_READ, G, "t"), BK_META_AUTHZ_NO_ACL);
    /* prefixed */
    bk_meta_acl_t p = acl(T, PRE, "pay", "User:b", "*", BK_META_OP_WRITE, ALLOW);
    ck_assert_int_eq(bk_meta_acls_add(s, &p), KP_OK);
    ck_assert_int_eq(bk_meta_acls_decide(s, "User:b", "h", BK_META_OP_WRITE, T, "payments"), BK_META_AUTHZ_ALLOW);
    ck_assert_int_eq(bk_meta_acls_decide(s, "User:b", "h", BK_META_OP_WRITE, T, "pay"), BK_META_AUTHZ_ALLOW);
    ck_assert_int_eq(bk_meta_acls_decide(s, "User:b", "h", BK_META_OP_WRITE, T, "pa"), BK_META_AUTHZ_NO_ACL);
    /* DENY beats ALLOW, DENY on ALL denies everything */
    bk_meta_acl_t d = acl(T, LIT, "payments", "User:*", "*", BK_META_OP_ALL, DENY);
    ck_assert_int_eq(bk_meta_acls_add(s, &d), KP_OK);
    ck_assert_int_eq(bk_meta_acls_decide(s, "User:b", "h", BK_META_OP_WRITE, T, "payments"), BK_META_AUTHZ_DENY);
    ck_assert_int_eq(bk_meta_acls_decide(s, "User:b", "h", BK_META_OP_WRITE, T, "payroll"), BK_META_AUTHZ_ALLOW);
    /* a DENY of READ does not deny DESCRIBE */
    bk_meta_acl_t dr = acl(T, LIT, "x", "User:c", "*", BK_META_OP_READ, DENY);
    bk_meta_acl_t ad = acl(T, LIT, "x", "User:c", "*", BK_META_OP_DESCRIBE, ALLOW);
    ck_assert_int_eq(bk_meta_acls_add(s, &dr), KP_OK);
    ck_assert_int_eq(bk_meta_acls_add(s, &ad), KP_OK);
    ck_assert_int_eq(bk_meta_acls_decide(s, "User:c", "h", BK_META_OP_DESCRIBE, T, "x"), BK_META_AUTHZ_ALLOW);
    ck_assert_int_eq(bk_meta_acls_decide(s, "User:c", "h", BK_META_OP_READ, T, "x"), BK_META_AUTHZ_DENY);
    /* host */
    bk_meta_acl_t hh = acl(G, LIT, "g", "User:a", "10.0.0.1", BK_META_OP_READ, ALLOW);
    ck_assert_int_eq(bk_meta_acls_add(s, &hh), KP_OK);
    ck_assert_int_eq(bk_meta_acls_decide(s, "User:a", "10.0.0.1", BK_META_OP_READ, G, "g"), BK_META_AUTHZ_ALLOW);
    ck_assert_int_eq(bk_meta_acls_decide(s, "User:a", "10.0.0.2", BK_META_OP_READ, G, "g"), BK_META_AUTHZ_DENY);
    /* literal wildcard resource */
    bk_meta_acl_t w = acl(G, LIT, "*", "User:z", "*", BK_META_OP_ALL, ALLOW);
    ck_assert_int_eq(bk_meta_acls_add(s, &w), KP_OK);
    ck_assert_int_eq(bk_meta_acls_decide(s, "User:z", "h", BK_META_OP_DELETE, G, "any"), BK_META_AUTHZ_ALLOW);
    /* ALTER_CONFIGS implies DESCRIBE_CONFIGS */
    bk_meta_acl_t ac = acl(T, LIT, "cfg", "User:a", "*", BK_META_OP_ALTER_CONFIGS, ALLOW);
    ck_assert_int_eq(bk_meta_acls_add(s, &ac), KP_OK);
    ck_assert_int_eq(bk_meta_acls_decide(s, "User:a", "h", BK_META_OP_DESCRIBE_CONFIGS, T, "cfg"), BK_META_AUTHZ_ALLOW);
    /* remove */
    ck_assert_int_eq(bk_meta_acls_remove(s, &d), KP_OK);
    ck_assert_int_eq(bk_meta_acls_decide(s, "User:b", "h", BK_META_OP_WRITE, T, "payments"), BK_META_AUTHZ_ALLOW);
    ck_assert_int_eq(bk_meta_acls_remove(s, &d), KP_OK);   /* absent: ok */
    bk_meta_acls_free(s);
}
END_TEST

START_TEST(test_valid_and_filters) {
    bk_meta_acl_t bad = acl(BK_META_RES_CLUSTER, LIT, "c", "User:a", "*", BK_META_OP_ALTER, ALLOW);
    ck_assert_ptr_nonnull(bk_meta_acl_valid(&bad));
    bad = acl(T, BK_META_PAT_MATCH, "t", "User:a", "*", BK_META_OP_ALTER, ALLOW);
    ck_assert_ptr_nonnull(bk_meta_acl_valid(&bad));
    bad = acl(T, LIT, "t", "nocolon", "*", BK_META_OP_ALTER, ALLOW);
    ck_assert_ptr_nonnull(bk_meta_acl_valid(&bad));
    bad = acl(T, LIT, "t", "User:a", "*", BK_META_OP_ANY, ALLOW);
    ck_assert_ptr_nonnull(bk_meta_acl_valid(&bad));
    bk_meta_acl_t ok = acl(T, PRE, "pay", "User:a", "*", BK_META_OP_READ, ALLOW);
    ck_assert_ptr_null(bk_meta_acl_valid(&ok));
    bk_meta_acl_filter_t f = { BK_META_RES_ANY, BK_META_PAT_ANY, NULL, NULL, NULL, BK_META_OP_ANY, BK_META_PERM_ANY };
    ck_assert(bk_meta_acl_filter_match(&f, &ok));
    f.pattern_type = BK_META_PAT_MATCH;
    f.resource_name = "payments";
    ck_assert(bk_meta_acl_filter_match(&f, &ok));
    f.resource_name = "other";
    ck_assert(!bk_meta_acl_filter_match(&f, &ok));
    f.pattern_type = LIT;
    f.resource_name = "pay";
    ck_assert(!bk_meta_acl_filter_match(&f, &ok));
    f.pattern_type = PRE;
    ck_assert(bk_meta_acl_filter_match(&f, &ok));
    f.principal = "User:b";
    ck_assert(!bk_meta_acl_filter_match(&f, &ok));
}
END_TEST

static int apply(bk_meta_image_t *img, int64_t off, const bk_meta_acl_t *a, bool add) {
    Skiff__Metadata__AccessControlEntry e = SKIFF__METADATA__ACCESS_CONTROL_ENTRY__INIT;
    e.has_resource_type = true; e.resource_type = a->resource_type;
    e.resource_name = (char *)a->resource_name;
    e.has_pattern_type = true; e.pattern_type = a->pattern_type;
    e.principal = (char *)a->principal;
    e.host = (char *)a->host;
    e.has_operation = true; e.operation = a->operation;
    e.has_permission_type = true; e.permission_type = a->permission;
    Skiff__Metadata__RemoveAccessControlEntry r = SKIFF__METADATA__REMOVE_ACCESS_CONTROL_ENTRY__INIT;
    r.acl = &e;
    Skiff__Metadata__MetadataRecord rec = SKIFF__METADATA__METADATA_RECORD__INIT;
    if (add) {
        rec.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_ACCESS_CONTROL_ENTRY;
        rec.access_control_entry = &e;
    } else {
        rec.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_REMOVE_ACCESS_CONTROL_ENTRY;
        rec.remove_access_control_entry = &r;
    }
    return bk_meta_image_apply(img, &rec, off);
}

START_TEST(test_image_records_and_snapshot) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    char name[32];
    int64_t off = 0;
    for (int i = 0; i < 10000; i++) {
        snprintf(name, sizeof name, "topic-%d", i);
        bk_meta_acl_t a = acl(T, LIT, name, "User:a", "*", BK_META_OP_WRITE, ALLOW);
        ck_assert_int_eq(apply(&img, off++, &a, true), KP_OK);
    }
    bk_meta_acl_t bad = acl(T, BK_META_PAT_ANY, "t", "User:a", "*", BK_META_OP_WRITE, ALLOW);
    ck_assert_int_ne(apply(&img, off++, &bad, true), KP_OK);
    bk_meta_acl_t gone = acl(T, LIT, "topic-7", "User:a", "*", BK_META_OP_WRITE, ALLOW);
    ck_assert_int_eq(apply(&img, off++, &gone, false), KP_OK);
    ck_assert_uint_eq(bk_meta_acls_count(img.acls), 9999);
    uint8_t *snap = NULL;
    size_t len = 0;
    ck_assert_int_eq(bk_meta_image_snapshot(&img, &snap, &len), KP_OK);
    bk_meta_image_t b;
    bk_meta_image_init(&b, -1);
    ck_assert_int_eq(bk_meta_image_load(&b, snap, len), KP_OK);
    ck_assert_uint_eq(bk_meta_acls_count(b.acls), 9999);
    ck_assert_int_eq(bk_meta_acls_decide(b.acls, "User:a", "h", BK_META_OP_WRITE, T, "topic-9999"), BK_META_AUTHZ_ALLOW);
    ck_assert_int_eq(bk_meta_acls_decide(b.acls, "User:a", "h", BK_META_OP_WRITE, T, "topic-7"), BK_META_AUTHZ_NO_ACL);
    /* snapshot -> load -> snapshot is a fixed point (bindings sorted) */
    uint8_t *snap2 = NULL;
    size_t len2 = 0;
    ck_assert_int_eq(bk_meta_image_snapshot(&b, &snap2, &len2), KP_OK);
    ck_assert_uint_eq(len, len2);
    ck_assert(memcmp(snap, snap2, len) == 0);
    free(snap2);
    free(snap);
    bk_meta_image_free(&b);
    bk_meta_image_free(&img);
}
END_TEST

/* ACL bindings, a client quota and feature levels in one image: the
 * snapshot counts every record it emits (snap_count) and loads back. */
START_TEST(test_snapshot_with_quotas_and_features) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    int64_t off = 0;
    /* more bindings than the count's slack (producer id, SCRAM bootstrap),
     * so a count that forgot them would trip snap_rec's assertion */
    const int8_t ops[] = { BK_META_OP_READ, BK_META_OP_WRITE, BK_META_OP_DESCRIBE, BK_META_OP_ALTER };
    for (size_t i = 0; i < sizeof ops; i++) {
        bk_meta_acl_t a = acl(T, LIT, "t", "User:a", "*", ops[i], ALLOW);
        ck_assert_int_eq(apply(&img, off++, &a, true), KP_OK);
    }
    for (int k = 0; k < BK_META_QUOTA_KEYS; k++) {
        Skiff__Metadata__ClientQuotaEntity e = SKIFF__METADATA__CLIENT_QUOTA_ENTITY__INIT, *ep = &e;
        e.entity_type = (char *)"user";
        e.entity_name = (char *)"a";
        Skiff__Metadata__ClientQuota q = SKIFF__METADATA__CLIENT_QUOTA__INIT;
        q.n_entity = 1;
        q.entity = &ep;
        q.key = (char *)bk_meta_quota_key_name(k);
        q.has_value = true; q.value = 2.5 + k;
        Skiff__Metadata__MetadataRecord r = SKIFF__METADATA__METADATA_RECORD__INIT;
        r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_CLIENT_QUOTA;
        r.client_quota = &q;
        if (k == BK_META_QUOTA_PRODUCER_BYTE_RATE || k == BK_META_QUOTA_CONSUMER_BYTE_RATE) q.value = 1000 + k;
        ck_assert_int_eq(bk_meta_image_apply(&img, &r, off++), KP_OK);
    }
    for (int i = 0; i < BK_META_FEATURES_N; i++) {
        Skiff__Metadata__FeatureLevel f = SKIFF__METADATA__FEATURE_LEVEL__INIT;
        f.name = (char *)bk_meta_feature_defs()[i].name;
        f.has_level = true; f.level = 0;
        Skiff__Metadata__MetadataRecord r = SKIFF__METADATA__METADATA_RECORD__INIT;
        r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_FEATURE_LEVEL;
        r.feature_level = &f;
        ck_assert_int_eq(bk_meta_image_apply(&img, &r, off++), KP_OK);
    }
    uint8_t *snap = NULL, *snap2 = NULL;
    size_t len = 0, len2 = 0;
    ck_assert_int_eq(bk_meta_image_snapshot(&img, &snap, &len), KP_OK);
    bk_meta_image_t b;
    bk_meta_image_init(&b, -1);
    ck_assert_int_eq(bk_meta_image_load(&b, snap, len), KP_OK);
    ck_assert_uint_eq(bk_meta_acls_count(b.acls), 4);
    ck_assert_uint_eq(b.nquotas, 1);
    ck_assert_int_ge(b.features_epoch, 0);
    ck_assert_int_eq(bk_meta_image_snapshot(&b, &snap2, &len2), KP_OK);
    ck_assert_uint_eq(len, len2);
    ck_assert(memcmp(snap, snap2, len) == 0);
    free(snap2);
    free(snap);
    bk_meta_image_free(&b);
    bk_meta_image_free(&img);
}
END_TEST

int main(void) {
    Suite *s = suite_create("acl");
    TCase *tc = tcase_create("acl");
    tcase_add_test(tc, test_decide);
    tcase_add_test(tc, test_valid_and_filters);
    tcase_add_test(tc, test_image_records_and_snapshot);
    tcase_add_test(tc, test_snapshot_with_quotas_and_features);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
