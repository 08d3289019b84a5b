/* Unit tests for broker/meta/image_scram.c: SCRAM credential records on
 * the image (apply, replace, remove, refusals that change nothing), the
 * bootstrap marker, and snapshots (load -> snapshot is a fixed point). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "broker/meta/image.h"
#include "broker/meta/records.h"

static int apply_cred(bk_meta_image_t *img, int64_t off, const char *name, int mech, int iters, size_t keylen,
                      uint8_t fill) {
    uint8_t salt[16], k1[64], k2[64];
    memset(salt, fill, sizeof salt);
    memset(k1, fill + 1, sizeof k1);
    memset(k2, fill + 2, sizeof k2);
    Skiff__Metadata__UserScramCredential u = SKIFF__METADATA__USER_SCRAM_CREDENTIAL__INIT;
    u.name = (char *)name;
    u.has_mechanism = true; u.mechanism = mech;
    u.has_iterations = true; u.iterations = iters;
    u.has_salt = true; u.salt.data = salt; u.salt.len = sizeof salt;
    u.has_stored_key = true; u.stored_key.data = k1; u.stored_key.len = keylen;
    u.has_server_key = true; u.server_key.data = k2; u.server_key.len = keylen;
    Skiff__Metadata__MetadataRecord r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_USER_SCRAM_CREDENTIAL;
    r.user_scram_credential = &u;
    return bk_meta_image_apply(img, &r, off);
}

static int remove_cred(bk_meta_image_t *img, int64_t off, const char *name, int mech) {
    Skiff__Metadata__RemoveUserScramCredential d = SKIFF__METADATA__REMOVE_USER_SCRAM_CREDENTIAL__INIT;
    d.name = (char *)name;
    d.has_mechanism = true; d.mechanism = mech;
    Skiff__Metadata__MetadataRecord r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_REMOVE_USER_SCRAM_CREDENTIAL;
    r.remove_user_scram_credential = &d;
    return bk_meta_image_apply(img, &r, off);
}

START_TEST(test_apply_replace_remove) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    ck_assert_int_eq(apply_cred(&img, 0, "bob", 2, 8192, 64, 1), KP_OK);
    ck_assert_int_eq(apply_cred(&img, 1, "alice", 1, 4096, 32, 2), KP_OK);
    ck_assert_int_eq(apply_cred(&img, 2, "alice", 2, 4096, 64, 3), KP_OK);
    ck_assert_uint_eq(img.nscram, 3);
    ck_assert_str_eq(img.scram[0].name, "alice");       /* sorted by (name, mechanism) */
    ck_assert_int_eq(img.scram[1].mechanism, 2);
    size_t n;
    const bk_meta_scram_t *c = bk_meta_image_scram_user(&img, "alice", &n);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(c[0].mechanism, 1);
    ck_assert_ptr_null(bk_meta_image_scram_user(&img, "al", &n));
    /* replace keeps one entry with the new values */
    ck_assert_int_eq(apply_cred(&img, 3, "bob", 2, 16384, 64, 9), KP_OK);
    c = bk_meta_image_scram(&img, "bob", 2);
    ck_assert_int_eq(c->iterations, 16384);
    ck_assert_uint_eq(c->stored_key[0], 10);
    ck_assert_uint_eq(img.nscram, 3);
    ck_assert_int_eq(remove_cred(&img, 4, "alice", 1), KP_OK);
    ck_assert_ptr_null(bk_meta_image_scram(&img, "alice", 1));
    ck_assert_ptr_nonnull(bk_meta_image_scram(&img, "alice", 2));
    ck_assert_uint_eq(img.nscram, 2);
    bk_meta_image_free(&img);
}
END_TEST

START_TEST(test_refusals_change_nothing) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    ck_assert_int_eq(apply_cred(&img, 0, "bob", 1, 4096, 32, 1), KP_OK);
    ck_assert_int_eq(apply_cred(&img, 1, "bob", 1, 4095, 32, 1), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(apply_cred(&img, 1, "bob", 1, 16385, 32, 1), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(apply_cred(&img, 1, "bob", 1, 4096, 64, 1), KP_ERR_BAD_VALUE); /* key length */
    ck_assert_int_eq(apply_cred(&img, 1, "bob", 3, 4096, 32, 1), KP_ERR_BAD_VALUE); /* mechanism */
    ck_assert_int_eq(apply_cred(&img, 1, "", 1, 4096, 32, 1), KP_ERR_BAD_VALUE);
    char longname[300];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    ck_assert_int_eq(apply_cred(&img, 1, longname, 1, 4096, 32, 1), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(remove_cred(&img, 1, "bob", 2), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(remove_cred(&img, 1, "carol", 1), KP_ERR_BAD_VALUE);
    ck_assert_uint_eq(img.nscram, 1);
    ck_assert_int_eq(img.last_offset, 0);
    ck_assert_int_eq(bk_meta_image_scram(&img, "bob", 1)->stored_key[0], 2);
    bk_meta_image_free(&img);
}
END_TEST

START_TEST(test_snapshot_fixed_point) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    ck_assert_int_eq(apply_cred(&img, 0, "a,b=c", 1, 4096, 32, 1), KP_OK);
    ck_assert_int_eq(apply_cred(&img, 1, "zed", 2, 9000, 64, 5), KP_OK);
    Skiff__Metadata__ScramBootstrapDone d = SKIFF__METADATA__SCRAM_BOOTSTRAP_DONE__INIT;
    Skiff__Metadata__MetadataRecord r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_SCRAM_BOOTSTRAP_DONE;
    r.scram_bootstrap_done = &d;
    ck_assert_int_eq(bk_meta_image_apply(&img, &r, 2), KP_OK);
    ck_assert(img.scram_bootstrapped);
    uint8_t *s1, *s2;
    size_t l1, l2;
    ck_assert_int_eq(bk_meta_image_snapshot(&img, &s1, &l1), KP_OK);
    bk_meta_image_t b;
    bk_meta_image_init(&b, -1);
    ck_assert_int_eq(bk_meta_image_load(&b, s1, l1), KP_OK);
    ck_assert(b.scram_bootstrapped);
    ck_assert_uint_eq(b.nscram, 2);
    ck_assert_int_eq(bk_meta_image_scram(&b, "zed", 2)->iterations, 9000);
    ck_assert(memcmp(bk_meta_image_scram(&b, "a,b=c", 1)->server_key, img.scram[0].server_key, 32) == 0);
    ck_assert_int_eq(bk_meta_image_snapshot(&b, &s2, &l2), KP_OK);
    ck_assert_uint_eq(l1, l2);
    ck_assert(memcmp(s1, s2, l1) == 0);
    free(s1);
    free(s2);
    bk_meta_image_free(&b);
    bk_meta_image_free(&img);
    ck_assert(!img.scram_bootstrapped);
    ck_assert_uint_eq(img.nscram, 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("image_scram");
    TCase *tc = tcase_create("image_scram");
    tcase_add_test(tc, test_apply_replace_remove);
    tcase_add_test(tc, test_refusals_change_nothing);
    tcase_add_test(tc, test_snapshot_fixed_point);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
