/* Unit tests for client quotas: ClientQuota records in the image
 * (broker/meta/image_quota.c: apply, remove, invalid records, Kafka's
 * precedence, snapshot round trip) and the use tracker
 * (broker/core/quota.c: throttle times, refill, which clients share an
 * allowance). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/core/quota.h"
#include "broker/meta/image.h"

/* user / client: NULL = no such part, "" = the default entity, else a name */
static int quota(bk_meta_image_t *img, const char *user, const char *client, const char *key, double v, bool rm,
                 int64_t off) {
    Skiff__Metadata__ClientQuotaEntity e[2], *ep[2] = { &e[0], &e[1] };
    size_t n = 0;
    if (user) {
        skiff__metadata__client_quota_entity__init(&e[n]);
        e[n].entity_type = "user";
        e[n].entity_name = *user ? (char *)user : NULL;
        n++;
    }
    if (client) {
        skiff__metadata__client_quota_entity__init(&e[n]);
        e[n].entity_type = "client-id";
        e[n].entity_name = *client ? (char *)client : NULL;
        n++;
    }
    Skiff__Metadata__ClientQuota q = SKIFF__METADATA__CLIENT_QUOTA__INIT;
    q.n_entity = n;
    q.entity = ep;
    q.key = (char *)key;
    q.has_value = !rm; q.value = v;
    q.has_remove = true; q.remove = rm;
    Skiff__Metadata__MetadataRecord r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_CLIENT_QUOTA;
    r.client_quota = &q;
    size_t len = skiff__metadata__metadata_record__get_packed_size(&r);
    uint8_t *buf = malloc(len + 1);
    ck_assert_ptr_nonnull(buf);
    skiff__metadata__metadata_record__pack(&r, buf);
    int rc = bk_meta_image_apply_bytes(img, buf, len, off);
    free(buf);
    return rc;
}

static double limit_for(const bk_meta_image_t *img, const char *user, const char *client, int k) {
    const bk_meta_quota_t *q = bk_meta_image_quota_for(img, user, client, k);
    return q ? q->value[k] : -1;
}

#define PBR BK_META_QUOTA_PRODUCER_BYTE_RATE
#define CBR BK_META_QUOTA_CONSUMER_BYTE_RATE

/* Each of Kafka's 8 levels wins over every level below it: added from the
 * lowest up, the answer moves to each new level in turn; then removed from
 * the top down, it falls back level by level. */
START_TEST(test_precedence_levels) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    static const char *const lv[8][2] = {
        { NULL, "" }, { NULL, "c" }, { "", NULL }, { "", "" }, { "", "c" }, { "u", NULL }, { "u", "" }, { "u", "c" },
    };
    int64_t off = 0;
    ck_assert(limit_for(&img, "u", "c", PBR) < 0);
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(quota(&img, lv[i][0], lv[i][1], "producer_byte_rate", 100 + i, false, off++), KP_OK);
        ck_assert(limit_for(&img, "u", "c", PBR) == 100 + i);
    }
    /* another user and client only see the default levels */
    ck_assert(limit_for(&img, "v", "d", PBR) == 103);     /* (default user, default client) */
    ck_assert(limit_for(&img, "u", "d", PBR) == 106);     /* (u, default client) */
    ck_assert(limit_for(&img, "v", "c", PBR) == 104);     /* (default user, c) */
    for (int i = 7; i > 0; i--) {
        ck_assert_int_eq(quota(&img, lv[i][0], lv[i][1], "producer_byte_rate", 0, true, off++), KP_OK);
        ck_assert(limit_for(&img, "u", "c", PBR) == 100 + i - 1);
    }
    /* precedence is per key: a consumer quota at a lower level still applies */
    ck_assert_int_eq(quota(&img, "u", "c", "producer_byte_rate", 7, false, off++), KP_OK);
    ck_assert_int_eq(quota(&img, NULL, "c", "consumer_byte_rate", 9, false, off++), KP_OK);
    ck_assert(limit_for(&img, "u", "c", PBR) == 7);
    ck_assert(limit_for(&img, "u", "c", CBR) == 9);
    bk_meta_image_free(&img);
}
END_TEST

START_TEST(test_invalid_records_change_nothing) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    ck_assert_int_eq(quota(&img, "u", NULL, "producer_byte_rate", 10, false, 0), KP_OK);
    size_t n = img.nquotas;
    uint64_t gen = img.quotas_gen;
    ck_assert_int_eq(quota(&img, "u", NULL, "no_such_key", 10, false, 1), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(quota(&img, "u", NULL, "producer_byte_rate", -1, false, 2), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(quota(&img, "u", NULL, "producer_byte_rate", NAN, false, 3), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(quota(&img, NULL, NULL, "producer_byte_rate", 10, false, 4), KP_ERR_BAD_VALUE);
    char longname[300];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    ck_assert_int_eq(quota(&img, longname, NULL, "producer_byte_rate", 10, false, 5), KP_ERR_BAD_VALUE);
    ck_assert_uint_eq(img.nquotas, n);
    ck_assert_uint_eq(img.quotas_gen, gen);
    ck_assert(limit_for(&img, "u", "x", PBR) == 10);
    /* removing a key an entity does not have is no change, not an error */
    ck_assert_int_eq(quota(&img, "w", NULL, "producer_byte_rate", 0, true, 6), KP_OK);
    ck_assert_uint_eq(img.nquotas, n);
    bk_meta_image_free(&img);
}
END_TEST

START_TEST(test_snapshot_round_trip) {
    bk_meta_image_t img, back;
    bk_meta_image_init(&img, -1);
    bk_meta_image_init(&back, -1);
    int64_t off = 0;
    ck_assert_int_eq(quota(&img, "u", "c", "producer_byte_rate", 1000, false, off++), KP_OK);
    ck_assert_int_eq(quota(&img, "u", "c", "request_percentage", 12.5, false, off++), KP_OK);
    ck_assert_int_eq(quota(&img, "", NULL, "consumer_byte_rate", 2000, false, off++), KP_OK);
    ck_assert_int_eq(quota(&img, NULL, "", "consumer_byte_rate", 3000, false, off++), KP_OK);
    uint8_t *b = NULL, *b2 = NULL;
    size_t len = 0, len2 = 0;
    ck_assert_int_eq(bk_meta_image_snapshot(&img, &b, &len), KP_OK);
    ck_assert_int_eq(bk_meta_image_load(&back, b, len), KP_OK);
    ck_assert_uint_eq(back.nquotas, 3);
    const bk_meta_quota_t *q = bk_meta_image_quota(&back, BK_META_QE_NAME, "u", BK_META_QE_NAME, "c");
    ck_assert_ptr_nonnull(q);
    ck_assert(q->value[PBR] == 1000 && q->value[BK_META_QUOTA_REQUEST_PERCENTAGE] == 12.5);
    ck_assert(limit_for(&back, "z", "y", CBR) == 2000);
    ck_assert_int_eq(bk_meta_image_snapshot(&back, &b2, &len2), KP_OK);
    ck_assert_uint_eq(len, len2);
    ck_assert(memcmp(b, b2, len) == 0);   /* snapshot -> load -> snapshot is a fixed point */
    free(b);
    free(b2);
    bk_meta_image_free(&img);
    bk_meta_image_free(&back);
}
END_TEST

/* The tracker: a new client has one second's worth; beyond it the throttle
 * time is the debt over the rate; time refills the credit. */
START_TEST(test_throttle_times) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    ck_assert_int_eq(quota(&img, "u", NULL, "producer_byte_rate", 1000, false, 0), KP_OK);
    bk_node_quotas_t *q = bk_node_quotas_new(1000, 11000);
    ck_assert_ptr_nonnull(q);
    int64_t t = 10000;
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:u", "a", PBR, 1000, t), 0);   /* the first second */
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:u", "a", PBR, 500, t), 500);  /* 500 B in debt at 1000 B/s */
    /* the user quota is shared by the user's other client ids */
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:u", "b", PBR, 500, t), 1000);
    /* 1 s later the debt of 1000 B is paid */
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:u", "a", PBR, 1, t + 1000), 1);
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:u", "a", PBR, 0, t + 1001), 0);
    /* no quota for another user or for the consumer key */
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:v", "a", PBR, 1e9, t), 0);
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:u", "a", CBR, 1e9, t), 0);
    bk_node_quotas_free(q);
    bk_meta_image_free(&img);
}
END_TEST

typedef struct { int n; double used; } sum_t;
static void count_use(void *arg, const bk_node_quota_use_t *u) {
    sum_t *s = arg;
    s->n++;
    s->used += u->used_total;
}

/* A default entity gives each client its own allowance of its size. */
START_TEST(test_default_entity_per_client) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    ck_assert_int_eq(quota(&img, NULL, "", "consumer_byte_rate", 100, false, 0), KP_OK);
    ck_assert_int_eq(quota(&img, "", NULL, "request_percentage", 10, false, 1), KP_OK);
    bk_node_quotas_t *q = bk_node_quotas_new(1000, 11000);
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:x", "c1", CBR, 100, 0), 0);
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:x", "c2", CBR, 100, 0), 0);  /* not c1's allowance */
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:x", "c1", CBR, 10, 0), 100);
    /* request_percentage 10 % = 100 ms of loop time per second */
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:y", "c", BK_META_QUOTA_REQUEST_PERCENTAGE, 100, 0), 0);
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:y", "c", BK_META_QUOTA_REQUEST_PERCENTAGE, 50, 0), 500);
    sum_t s = { 0, 0 };
    bk_node_quotas_each(q, count_use, &s);
    ck_assert_int_eq(s.n, 3);
    ck_assert(s.used == 210 + 150);
    /* a lowered quota takes effect at once, the debt is kept */
    ck_assert_int_eq(quota(&img, NULL, "", "consumer_byte_rate", 10, false, 2), KP_OK);
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:x", "c1", CBR, 0, 0), 1000);
    bk_node_quotas_free(q);
    bk_meta_image_free(&img);
}
END_TEST

/* A full table is swept at most once per BK_NODE_QUOTA_FULL_SWEEP_MS
 * (issue 19 review: it was swept for every new key while full): a new key
 * between two sweeps is untracked even when entries could be dropped, and
 * counted; the next interval's sweep makes room again. */
START_TEST(test_full_table_sweeps_once_per_interval) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    ck_assert_int_eq(quota(&img, NULL, "", "producer_byte_rate", 1000, false, 0), KP_OK);
    bk_node_quotas_t *q = bk_node_quotas_new(1000, 11000);
    ck_assert_ptr_nonnull(q);
    char id[32];
    /* fill it at t=0 with clients that each used 1 B: not full credit, so
     * not droppable at t=0; refilled (droppable) 1 ms later */
    for (int i = 0; i < BK_NODE_QUOTA_USES_MAX; i++) {
        snprintf(id, sizeof id, "c%d", i);
        ck_assert_int_eq(bk_node_quota_record(q, &img, "User:u", id, PBR, 1, 0), 0);
    }
    ck_assert_uint_eq(bk_node_quotas_untracked(q), 0);
    /* t=0: full, the first sweep drops nothing: untracked */
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:u", "new-0", PBR, 5000, 0), 0);
    ck_assert_uint_eq(bk_node_quotas_untracked(q), 1);
    /* t=500: every entry could go, but the last sweep was 500 ms ago */
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:u", "new-1", PBR, 5000, 500), 0);
    ck_assert_uint_eq(bk_node_quotas_untracked(q), 2);
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:u", "new-2", PBR, 5000, 999), 0);
    ck_assert_uint_eq(bk_node_quotas_untracked(q), 3);
    /* t=1000: a sweep again, which makes room: tracked and throttled */
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:u", "new-3", PBR, 5000, 1000), 4000);
    ck_assert_uint_eq(bk_node_quotas_untracked(q), 3);
    sum_t s = { 0, 0 };
    bk_node_quotas_each(q, count_use, &s);
    ck_assert_int_eq(s.n, 1);
    bk_node_quotas_free(q);
    bk_meta_image_free(&img);
}
END_TEST

static void find_digest(void *arg, const bk_node_quota_use_t *u) {
    int *n = arg;
    if (strstr(u->client, "...sha256:") && strncmp(u->client, "xxxx", 4) == 0 && strlen(u->client) == 64 + 10 + 64) (*n)++;
}

/* Client ids are compared whole (issue 19 review: the handlers copied them
 * into 256 bytes, so two ids sharing their first 255 bytes shared one
 * allowance, and such an id got the quota named by its 255-byte prefix). */
START_TEST(test_long_client_ids_compared_whole) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    char prefix[BK_META_QUOTA_NAME_MAX + 1], a[300], b[300];
    memset(prefix, 'x', BK_META_QUOTA_NAME_MAX);
    prefix[BK_META_QUOTA_NAME_MAX] = 0;
    snprintf(a, sizeof a, "%sA", prefix);
    snprintf(b, sizeof b, "%sB", prefix);
    ck_assert_int_eq(quota(&img, NULL, "", "producer_byte_rate", 1000, false, 0), KP_OK);
    ck_assert_int_eq(quota(&img, NULL, prefix, "producer_byte_rate", 1e9, false, 1), KP_OK);
    ck_assert_int_eq(quota(&img, NULL, "a", "producer_byte_rate", 1e9, false, 2), KP_OK);
    bk_node_quotas_t *q = bk_node_quotas_new(1000, 11000);
    ck_assert_ptr_nonnull(q);
    /* a: the default's 1000 B/s, not the quota named by its prefix */
    ck_assert_int_eq(bk_node_quota_record_id(q, &img, "User:u", kp_slice_cstr(a), PBR, 5000, 0), 4000);
    /* b: its own allowance, not a's debt */
    ck_assert_int_eq(bk_node_quota_record_id(q, &img, "User:u", kp_slice_cstr(b), PBR, 100, 0), 0);
    ck_assert_int_eq(bk_node_quota_record_id(q, &img, "User:u", kp_slice_cstr(a), PBR, 0, 0), 4000);
    /* the prefix itself is the named entity */
    ck_assert_int_eq(bk_node_quota_record_id(q, &img, "User:u", kp_slice_cstr(prefix), PBR, 5000, 0), 0);
    /* a NUL does not end the id: "a\0b" is not "a" */
    kp_str_t nul = { (const uint8_t *)"a\0b", 3 };
    ck_assert_int_eq(bk_node_quota_record_id(q, &img, "User:u", nul, PBR, 5000, 0), 4000);
    ck_assert_int_eq(bk_node_quota_record_id(q, &img, "User:u", kp_slice_cstr("a"), PBR, 5000, 0), 0);
    /* the C-string entry point is the same keying */
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:u", a, PBR, 0, 0), 4000);
    int digests = 0;
    bk_node_quotas_each(q, find_digest, &digests);
    ck_assert_int_eq(digests, 2);                      /* a and b, shown as prefix...sha256:hex */
    ck_assert_uint_eq(bk_node_quotas_untracked(q), 0);
    bk_node_quotas_free(q);
    bk_meta_image_free(&img);
}
END_TEST

/* quota.window.size.seconds sets the allowance, quota.window.num x size
 * caps one throttle; the debt beyond the cap throttles the next request. */
START_TEST(test_windows) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    ck_assert_int_eq(quota(&img, "u", NULL, "producer_byte_rate", 1000, false, 0), KP_OK);
    bk_node_quotas_t *q = bk_node_quotas_new(3000, 6000);
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:u", "a", PBR, 3000, 0), 0);   /* 3 s of allowance */
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:u", "a", PBR, 10000, 0), 6000); /* 10 s of debt, capped */
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:u", "a", PBR, 0, 6000), 4000);  /* what is left */
    ck_assert_int_eq(bk_node_quota_record(q, &img, "User:u", "a", PBR, 0, 10000), 0);
    bk_node_quotas_free(q);
    bk_meta_image_free(&img);
}
END_TEST

int main(void) {
    Suite *s = suite_create("quota");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_precedence_levels);
    tcase_add_test(tc, test_invalid_records_change_nothing);
    tcase_add_test(tc, test_snapshot_round_trip);
    tcase_add_test(tc, test_throttle_times);
    tcase_add_test(tc, test_default_entity_per_client);
    tcase_add_test(tc, test_windows);
    tcase_add_test(tc, test_full_table_sweeps_once_per_interval);
    tcase_add_test(tc, test_long_client_ids_compared_whole);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
