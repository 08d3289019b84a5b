/* Unit tests for finalized features (broker/meta/features.h,
 * ctrl_features.c, the FeatureLevel record in image_apply.c and
 * image_snapshot.c): the new-cluster bootstrap (once), every UpdateFeatures
 * rule at v0/v1/v2, all-or-nothing, validate_only, invalid records refused
 * by apply, and a snapshot that keeps the levels (level 0 included). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "broker/meta/features_update.h"
#include "test/unit/ctrl_test_util.h"

static kp_update_features_request_feature_update_key_t upd(const char *name, int16_t level, int8_t type) {
    kp_update_features_request_feature_update_key_t u;
    kp_update_features_request_feature_update_key_init(&u);
    u.feature = kp_slice_cstr(name);
    u.max_version_level = level;
    u.upgrade_type = type;
    u.allow_downgrade = type != 1;
    return u;
}

/* Decides one request on cl's image and commits what it emits; returns the
 * number of records. */
static size_t decide(cl_t *cl, int16_t ver, kp_update_features_request_feature_update_key_t *u, int32_t n,
                     bool validate_only, kp_update_features_response_t *r) {
    kp_update_features_request_t q;
    kp_update_features_request_init(&q);
    q.feature_updates.items = u;
    q.feature_updates.count = n;
    q.validate_only = validate_only;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    ck_assert_int_eq(bk_meta_features_update(&cl->img, &q, ver, &cl->arena, &recs, r), KP_OK);
    return commit(cl, &recs);
}

static void bootstrapped(cl_t *cl) {
    cl_init_cfg(cl, &(bk_meta_ctrl_config_t){ 0 }, 1);
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_features_bootstrap(&cl->img, &recs);
    ck_assert_uint_eq(commit(cl, &recs), BK_META_FEATURES_N);
}

START_TEST(test_bootstrap_once) {
    cl_t cl;
    cl_init_cfg(&cl, &(bk_meta_ctrl_config_t){ 0 }, 1);
    ck_assert_int_eq(cl.img.features_epoch, -1);
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_features_bootstrap(&cl.img, &recs);
    ck_assert_uint_eq(commit(&cl, &recs), BK_META_FEATURES_N);
    const bk_meta_feature_def_t *d = bk_meta_feature_defs();
    for (int i = 0; i < BK_META_FEATURES_N; i++) ck_assert_int_eq(cl.img.feature_level[i], d[i].new_cluster_level);
    ck_assert_int_eq(cl.img.feature_level[BK_META_FEATURE_GROUP_VERSION], 1);
    ck_assert_int_eq(cl.img.feature_level[BK_META_FEATURE_TRANSACTION_VERSION], 2);   /* Kafka 4.0's */
    ck_assert_int_eq(cl.img.features_epoch, BK_META_FEATURES_N - 1);
    bk_meta_ctrl_features_bootstrap(&cl.img, &recs);
    ck_assert_uint_eq(recs.n, 0);                       /* finalized already: nothing */
    bk_meta_recs_free(&recs);
    cl_free(&cl);
}
END_TEST

START_TEST(test_update_rules) {
    cl_t cl;
    bootstrapped(&cl);
    int64_t epoch = cl.img.features_epoch;
    kp_update_features_response_t r;
    struct { const char *name; int16_t level; int8_t type; int16_t want; } bad[] = {
        { "group.version", 0, 1, KP_ERROR_INVALID_UPDATE_VERSION },        /* downgrade as upgrade */
        { "group.version", 2, 1, KP_ERROR_INVALID_UPDATE_VERSION },        /* above supported */
        { "metadata.version", 26, 1, KP_ERROR_INVALID_UPDATE_VERSION },
        { "metadata.version", 24, 3, KP_ERROR_INVALID_UPDATE_VERSION },    /* no metadata downgrade */
        { "metadata.version", 0, 3, KP_ERROR_INVALID_UPDATE_VERSION },     /* nor removal */
        { "transaction.version", 3, 1, KP_ERROR_INVALID_UPDATE_VERSION },  /* above supported */
        { "nope", 1, 1, KP_ERROR_INVALID_UPDATE_VERSION },
        { "group.version", 1, 4, KP_ERROR_INVALID_UPDATE_VERSION },        /* unknown type */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kp_update_features_request_feature_update_key_t u = upd(bad[i].name, bad[i].level, bad[i].type);
        ck_assert_uint_eq(decide(&cl, 1, &u, 1, false, &r), 0);
        ck_assert_int_eq(r.error_code, 0);
        ck_assert_int_eq(r.results.count, 1);
        ck_assert_int_eq(r.results.items[0].error_code, bad[i].want);
        ck_assert_ptr_nonnull(r.results.items[0].error_message.p);
        /* v2: the same error at the top, no results */
        ck_assert_uint_eq(decide(&cl, 2, &u, 1, false, &r), 0);
        ck_assert_int_eq(r.error_code, bad[i].want);
        ck_assert_int_eq(r.results.count, 0);
    }
    /* a feature twice: INVALID_REQUEST at the top */
    kp_update_features_request_feature_update_key_t two[2] = { upd("group.version", 0, 2), upd("group.version", 1, 1) };
    ck_assert_uint_eq(decide(&cl, 1, two, 2, false, &r), 0);
    ck_assert_int_eq(r.error_code, KP_ERROR_INVALID_REQUEST);
    /* one bad update: nothing applied, the good one NONE */
    kp_update_features_request_feature_update_key_t mix[2] = { upd("group.version", 0, 2), upd("metadata.version", 99, 1) };
    ck_assert_uint_eq(decide(&cl, 1, mix, 2, false, &r), 0);
    ck_assert_int_eq(r.results.items[0].error_code, 0);
    ck_assert_int_eq(r.results.items[1].error_code, KP_ERROR_INVALID_UPDATE_VERSION);
    /* validate_only: NONE, nothing emitted */
    kp_update_features_request_feature_update_key_t down = upd("group.version", 0, 2);
    ck_assert_uint_eq(decide(&cl, 1, &down, 1, true, &r), 0);
    ck_assert_int_eq(r.results.items[0].error_code, 0);
    ck_assert_int_eq(cl.img.features_epoch, epoch);
    ck_assert_int_eq(cl.img.feature_level[BK_META_FEATURE_GROUP_VERSION], 1);
    /* the same level: NONE, no record */
    kp_update_features_request_feature_update_key_t same = upd("group.version", 1, 1);
    ck_assert_uint_eq(decide(&cl, 1, &same, 1, false, &r), 0);
    ck_assert_int_eq(r.results.items[0].error_code, 0);
    /* safe downgrade (v1) and v0's allow_downgrade remove it; upgrades bring it back */
    ck_assert_uint_eq(decide(&cl, 1, &down, 1, false, &r), 1);
    ck_assert_int_eq(cl.img.feature_level[BK_META_FEATURE_GROUP_VERSION], 0);
    ck_assert_int_gt(cl.img.features_epoch, epoch);
    ck_assert_uint_eq(decide(&cl, 0, &same, 1, false, &r), 1);
    ck_assert_int_eq(cl.img.feature_level[BK_META_FEATURE_GROUP_VERSION], 1);
    kp_update_features_request_feature_update_key_t neg = upd("group.version", -1, 2);   /* < 1: removal */
    ck_assert_uint_eq(decide(&cl, 0, &neg, 1, false, &r), 1);
    ck_assert_int_eq(cl.img.feature_level[BK_META_FEATURE_GROUP_VERSION], 0);
    /* transactions v2 is on for a new cluster (as in Kafka 4.0) and can be
     * turned off (back to v1) and on again */
    ck_assert_int_eq(cl.img.feature_level[BK_META_FEATURE_TRANSACTION_VERSION], 2);
    kp_update_features_request_feature_update_key_t tv2 = upd("transaction.version", 2, 1);
    ck_assert_uint_eq(decide(&cl, 1, &tv2, 1, false, &r), 0);   /* the same level: no record */
    ck_assert_int_eq(r.results.items[0].error_code, 0);
    kp_update_features_request_feature_update_key_t tv0 = upd("transaction.version", 0, 2);
    ck_assert_uint_eq(decide(&cl, 1, &tv0, 1, false, &r), 1);
    ck_assert_int_eq(cl.img.feature_level[BK_META_FEATURE_TRANSACTION_VERSION], 0);
    ck_assert_uint_eq(decide(&cl, 1, &tv2, 1, false, &r), 1);
    ck_assert_int_eq(cl.img.feature_level[BK_META_FEATURE_TRANSACTION_VERSION], 2);
    /* an upgrade sent as a downgrade type is refused */
    kp_update_features_request_feature_update_key_t upd_as_down = upd("group.version", 1, 2);
    ck_assert_uint_eq(decide(&cl, 1, &upd_as_down, 1, false, &r), 0);
    ck_assert_int_eq(r.results.items[0].error_code, KP_ERROR_INVALID_UPDATE_VERSION);
    cl_free(&cl);
}
END_TEST

static int apply_level(bk_meta_image_t *img, const char *name, int32_t level, int64_t off) {
    Skiff__Metadata__FeatureLevel m = SKIFF__METADATA__FEATURE_LEVEL__INIT;
    m.name = (char *)name;
    m.has_level = level >= -100;
    m.level = level;
    Skiff__Metadata__MetadataRecord rec = SKIFF__METADATA__METADATA_RECORD__INIT;
    rec.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_FEATURE_LEVEL;
    rec.feature_level = &m;
    return bk_meta_image_apply(img, &rec, off);
}

START_TEST(test_apply_and_snapshot) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    ck_assert_int_eq(apply_level(&img, "nope", 1, 0), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(apply_level(&img, "group.version", 2, 0), KP_ERR_BAD_VALUE);    /* above this binary */
    ck_assert_int_eq(apply_level(&img, "group.version", -1, 0), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(apply_level(&img, "group.version", -1000, 0), KP_ERR_BAD_VALUE); /* no level */
    ck_assert_int_eq(img.features_epoch, -1);
    ck_assert_int_eq(apply_level(&img, "metadata.version", 25, 5), KP_OK);
    ck_assert_int_eq(apply_level(&img, "group.version", 0, 6), KP_OK);
    ck_assert_int_eq(img.features_epoch, 6);
    uint8_t *snap = NULL;
    size_t len = 0;
    ck_assert_int_eq(bk_meta_image_snapshot(&img, &snap, &len), KP_OK);
    bk_meta_image_t back;
    bk_meta_image_init(&back, -1);
    ck_assert_int_eq(bk_meta_image_load(&back, snap, len), KP_OK);
    ck_assert_int_eq(back.feature_level[BK_META_FEATURE_METADATA_VERSION], 25);
    ck_assert_int_eq(back.feature_level[BK_META_FEATURE_GROUP_VERSION], 0);
    ck_assert_int_ge(back.features_epoch, 0);     /* finalized (level 0 kept): no bootstrap again */
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_features_bootstrap(&back, &recs);
    ck_assert_uint_eq(recs.n, 0);
    bk_meta_recs_free(&recs);
    free(snap);
    bk_meta_image_free(&back);
    bk_meta_image_free(&img);
}
END_TEST

int main(void) {
    Suite *s = suite_create("features");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_bootstrap_once);
    tcase_add_test(tc, test_update_rules);
    tcase_add_test(tc, test_apply_and_snapshot);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf == 0 ? 0 : 1;
}
