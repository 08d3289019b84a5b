/* kp_request_encode_alloc / kp_response_encode_alloc: the heap frame is
 * exactly what kp_request_encode / kp_response_encode write into a caller's
 * buffer (known answer, every API x version), and a failing encode returns
 * its status, allocates nothing and leaves *out / *out_len alone. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "kp_msgs.h"
#include "protocol/kp_header.h"

#define S(lit) kp_slice_cstr(lit)

static kp_arena_t arena;

static void setup(void) { kp_arena_init(&arena, 16 << 20); }
static void teardown(void) { kp_arena_free(&arena); }

/* ApiVersions v0: header v1 (key 18, version 0, corr 5, client "hi"), empty
 * body; the bytes are written from the protocol spec, not by our encoder. */
START_TEST(test_kat_api_versions_v0) {
    static const uint8_t want[] = { 0, 0, 0, 12, 0x00, 0x12, 0x00, 0x00, 0, 0, 0, 5, 0x00, 0x02, 'h', 'i' };
    kp_api_versions_request_t q;
    kp_api_versions_request_init(&q);
    kp_request_header_t h = { KP_API_API_VERSIONS, 0, 5, S("hi") };
    uint8_t *buf = NULL;
    size_t len = 0;
    ck_assert_int_eq(kp_request_encode_alloc(&h, &q, &buf, &len), KP_OK);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(len, sizeof want);
    ck_assert_mem_eq(buf, want, sizeof want);
    free(buf);
}
END_TEST

/* Every API x version's default request: the heap frame equals the one
 * written into a large buffer, its size prefix says len - 4, and it decodes
 * back to the header it was given. */
START_TEST(test_every_request_matches_encoder) {
    static uint8_t frame[4096];
    size_t checked = 0;
    for (size_t i = 0; i < kp_api_count; i++) {
        const kp_api_info_t *api = kp_api_at(i);
        for (int16_t v = api->min_version; v <= api->max_version; v++) {
            void *msg = kp_arena_alloc(&arena, api->request->size_bytes);
            ck_assert_ptr_nonnull(msg);
            memset(msg, 0, api->request->size_bytes);
            kp_msg_init(api->request, msg);
            kp_request_header_t h = { .api_key = api->api_key, .api_version = v,
                                      .correlation_id = 1000 + (int32_t)i, .client_id = S("alloc") };
            kp_wr_t w;
            kp_wr_init(&w, frame, sizeof frame);
            ck_assert_int_eq(kp_request_encode(&w, &h, msg), KP_OK);
            uint8_t *buf = NULL;
            size_t len = 0;
            int rc = kp_request_encode_alloc(&h, msg, &buf, &len);
            ck_assert_msg(rc == KP_OK, "%s v%d: %s", api->name, v, kp_status_str(rc));
            ck_assert_uint_eq(len, w.pos);
            ck_assert_mem_eq(buf, frame, len);
            uint32_t size = (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 | (uint32_t)buf[2] << 8 | buf[3];
            ck_assert_uint_eq(size, len - 4);
            kp_request_header_t h2;
            void *body = NULL;
            ck_assert_int_eq(kp_request_decode(buf + 4, len - 4, &h2, &body, &arena), KP_OK);
            ck_assert_int_eq(h2.api_key, h.api_key);
            ck_assert_int_eq(h2.api_version, v);
            ck_assert_int_eq(h2.correlation_id, h.correlation_id);
            ck_assert(kp_slice_eq_cstr(h2.client_id, "alloc"));
            free(buf);
            checked++;
        }
    }
    ck_assert_uint_gt(checked, 200);
}
END_TEST

/* A status from the encoder comes back unchanged; nothing is allocated (the
 * ASan build's leak check would see it) and the outputs keep their values. */
START_TEST(test_errors_leave_outputs) {
    uint8_t sentinel = 0;
    uint8_t *buf = &sentinel;
    size_t len = 77;
    kp_api_versions_request_t av;
    kp_api_versions_request_init(&av);
    kp_request_header_t unknown = { 999, 0, 1, S("x") };
    ck_assert_int_eq(kp_request_encode_alloc(&unknown, &av, &buf, &len), KP_ERR_UNSUPPORTED);
    ck_assert_ptr_eq(buf, &sentinel);
    ck_assert_uint_eq(len, 77);
    /* count > 0 with items NULL is refused by the body encoder */
    kp_metadata_request_t md;
    kp_metadata_request_init(&md);
    md.topics.count = 2;
    md.topics.items = NULL;
    kp_request_header_t h = { KP_API_METADATA, 12, 1, S("x") };
    ck_assert_int_eq(kp_request_encode_alloc(&h, &md, &buf, &len), KP_ERR_BAD_VALUE);
    ck_assert_ptr_eq(buf, &sentinel);
    ck_assert_uint_eq(len, 77);
    ck_assert_int_eq(kp_response_encode_alloc(999, 0, 1, &av, &buf, &len), KP_ERR_UNSUPPORTED);
    ck_assert_ptr_eq(buf, &sentinel);
    ck_assert_uint_eq(len, 77);
}
END_TEST

/* Responses: ApiVersions v0 (header v0) by hand, and a flexible one
 * (Metadata v12, header v1) against kp_response_encode. */
START_TEST(test_responses) {
    static const uint8_t want[] = { 0, 0, 0, 16, 0, 0, 0, 7, 0x00, 0x00, 0, 0, 0, 1,
                                    0x00, 0x12, 0x00, 0x00, 0x00, 0x04 };
    kp_api_versions_response_api_version_t k = { .api_key = 18, .min_version = 0, .max_version = 4 };
    kp_api_versions_response_t r;
    kp_api_versions_response_init(&r);
    r.api_keys.items = &k;
    r.api_keys.count = 1;
    uint8_t *buf = NULL;
    size_t len = 0;
    ck_assert_int_eq(kp_response_encode_alloc(KP_API_API_VERSIONS, 0, 7, &r, &buf, &len), KP_OK);
    ck_assert_uint_eq(len, sizeof want);
    ck_assert_mem_eq(buf, want, sizeof want);
    free(buf);

    kp_metadata_response_t m;
    kp_metadata_response_init(&m);
    m.cluster_id = S("c-1");
    m.controller_id = 3;
    uint8_t frame[256];
    kp_wr_t w;
    kp_wr_init(&w, frame, sizeof frame);
    ck_assert_int_eq(kp_response_encode(&w, KP_API_METADATA, 12, 9, &m, NULL), KP_OK);
    ck_assert_int_eq(kp_response_encode_alloc(KP_API_METADATA, 12, 9, &m, &buf, &len), KP_OK);
    ck_assert_uint_eq(len, w.pos);
    ck_assert_mem_eq(buf, frame, len);
    int32_t corr = 0;
    void *body = NULL;
    ck_assert_int_eq(kp_response_decode(KP_API_METADATA, 12, buf + 4, len - 4, &corr, &body, &arena), KP_OK);
    ck_assert_int_eq(corr, 9);
    ck_assert_int_eq(((kp_metadata_response_t *)body)->controller_id, 3);
    free(buf);
}
END_TEST

int main(void) {
    Suite *s = suite_create("frame_alloc");
    TCase *tc = tcase_create("frame_alloc");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_kat_api_versions_v0);
    tcase_add_test(tc, test_every_request_matches_encoder);
    tcase_add_test(tc, test_errors_leave_outputs);
    tcase_add_test(tc, test_responses);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
