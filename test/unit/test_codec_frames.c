/* Known-answer bytes written by hand from the Kafka protocol spec, tagged
 * fields, null vs empty, malformed input, the encoder's version policy, the
 * external-records splice path and header version rules. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kp_msgs.h"
#include "protocol/kp_header.h"

#define S(lit) kp_slice_cstr(lit)

static kp_arena_t arena;

static void setup(void) { kp_arena_init(&arena, 16 << 20); }
static void teardown(void) { kp_arena_free(&arena); }

/* Encodes with the generic engine into buf; returns bytes written. */
static size_t enc(const kp_struct_desc_t *d, int16_t v, const void *m, uint8_t *buf, size_t cap) {
    kp_wr_t w;
    kp_wr_init(&w, buf, cap);
    int rc = kp_encode(d, &w, v, m, NULL);
    ck_assert_msg(rc == KP_OK, "encode %s v%d: %s", d->name, v, kp_status_str(rc));
    return w.pos;
}

static int dec(const kp_struct_desc_t *d, int16_t v, const uint8_t *p, size_t n, void *out) {
    kp_rd_t r;
    kp_rd_init(&r, p, n);
    int rc = kp_decode(d, &r, v, out, &arena);
    if (rc == KP_OK && kp_rd_remaining(&r) != 0) return KP_ERR_BAD_LENGTH;
    return rc;
}

/* ApiVersions v0 request frame: header v1 only, empty body. */
START_TEST(test_kat_api_versions_v0_request) {
    static const uint8_t frame[] = { 0, 0, 0, 12, 0x00, 0x12, 0x00, 0x00, 0, 0, 0, 5, 0x00, 0x02, 'h', 'i' };
    kp_request_header_t h;
    void *body = NULL;
    ck_assert_int_eq(kp_request_decode(frame + 4, sizeof frame - 4, &h, &body, &arena), KP_OK);
    ck_assert_int_eq(h.api_key, KP_API_API_VERSIONS);
    ck_assert_int_eq(h.api_version, 0);
    ck_assert_int_eq(h.correlation_id, 5);
    ck_assert(kp_slice_eq_cstr(h.client_id, "hi"));
    ck_assert_ptr_nonnull(body);
    uint8_t out[64];
    kp_wr_t w;
    kp_wr_init(&w, out, sizeof out);
    ck_assert_int_eq(kp_request_encode(&w, &h, body), KP_OK);
    ck_assert_uint_eq(w.pos, sizeof frame);
    ck_assert_mem_eq(out, frame, sizeof frame);
}
END_TEST

/* ApiVersions v0 response body: error_code, [api_key min max]. */
START_TEST(test_kat_api_versions_v0_response) {
    static const uint8_t want[] = { 0x00, 0x00, 0, 0, 0, 2, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09,
                                    0x00, 0x12, 0x00, 0x00, 0x00, 0x04 };
    kp_api_versions_response_api_version_t keys[2] = {
        { .api_key = 0, .min_version = 0, .max_version = 9 },
        { .api_key = 18, .min_version = 0, .max_version = 4 },
    };
    kp_api_versions_response_t m;
    kp_api_versions_response_init(&m);
    m.api_keys.items = keys;
    m.api_keys.count = 2;
    m.throttle_time_ms = 77;   /* ignorable, absent in v0: dropped */
    uint8_t out[64];
    kp_wr_t w;
    kp_wr_init(&w, out, sizeof out);
    ck_assert_int_eq(kp_api_versions_response_encode(&w, 0, &m), KP_OK);
    ck_assert_uint_eq(w.pos, sizeof want);
    ck_assert_mem_eq(out, want, sizeof want);
    kp_api_versions_response_t back;
    ck_assert_int_eq(dec(&kp_api_versions_response_desc, 0, want, sizeof want, &back), KP_OK);
    ck_assert_int_eq(back.api_keys.count, 2);
    ck_assert_int_eq(back.api_keys.items[1].api_key, 18);
    ck_assert_int_eq(back.api_keys.items[1].max_version, 4);
    ck_assert_int_eq(back.throttle_time_ms, 0);
}
END_TEST

/* Metadata v0 request: [topic name]. */
START_TEST(test_kat_metadata_v0_request) {
    static const uint8_t want[] = { 0, 0, 0, 2, 0x00, 0x03, 'f', 'o', 'o', 0x00, 0x01, 'b' };
    kp_metadata_request_metadata_request_topic_t t[2];
    kp_metadata_request_metadata_request_topic_init(&t[0]);
    kp_metadata_request_metadata_request_topic_init(&t[1]);
    t[0].name = S("foo");
    t[1].name = S("b");
    kp_metadata_request_t m;
    kp_metadata_request_init(&m);
    m.topics.items = t;
    m.topics.count = 2;
    uint8_t out[64];
    ck_assert_uint_eq(enc(&kp_metadata_request_desc, 0, &m, out, sizeof out), sizeof want);
    ck_assert_mem_eq(out, want, sizeof want);
    kp_metadata_request_t back;
    ck_assert_int_eq(dec(&kp_metadata_request_desc, 0, want, sizeof want, &back), KP_OK);
    ck_assert(kp_slice_eq_cstr(back.topics.items[0].name, "foo"));
    ck_assert(back.allow_auto_topic_creation);   /* absent in v0: default true */
}
END_TEST

/* ApiVersions v3 response (flexible): compact array, element tag section,
 * then tags 1 (FinalizedFeaturesEpoch, int64) and 3 (ZkMigrationReady). */
static const uint8_t av3[] = {
    0x00, 0x00,                                  /* error_code */
    0x02, 0x00, 0x12, 0x00, 0x00, 0x00, 0x04, 0x00,  /* [ {18,0,4} ] + no tags */
    0x00, 0x00, 0x00, 0x64,                      /* throttle_time_ms 100 */
    0x02,                                        /* two tagged fields */
    0x01, 0x08, 0, 0, 0, 0, 0, 0, 0, 0x07,       /* tag 1, 8 bytes: epoch 7 */
    0x03, 0x01, 0x01,                            /* tag 3, 1 byte: true */
};

START_TEST(test_kat_flexible_with_tags) {
    kp_api_versions_response_t back;
    ck_assert_int_eq(dec(&kp_api_versions_response_desc, 3, av3, sizeof av3, &back), KP_OK);
    ck_assert_int_eq(back.throttle_time_ms, 100);
    ck_assert(back.finalized_features_epoch == 7);
    ck_assert(back.zk_migration_ready);
    ck_assert_int_eq(back.supported_features.count, 0);

    kp_api_versions_response_api_version_t k = { .api_key = 18, .min_version = 0, .max_version = 4 };
    kp_api_versions_response_t m;
    kp_api_versions_response_init(&m);
    ck_assert(m.finalized_features_epoch == -1);   /* default -1 */
    m.api_keys.items = &k;
    m.api_keys.count = 1;
    m.throttle_time_ms = 100;
    m.finalized_features_epoch = 7;
    m.zk_migration_ready = true;
    uint8_t out[64];
    ck_assert_uint_eq(enc(&kp_api_versions_response_desc, 3, &m, out, sizeof out), sizeof av3);
    ck_assert_mem_eq(out, av3, sizeof av3);
    /* defaults are not written: back to an empty tag section */
    m.finalized_features_epoch = -1;
    m.zk_migration_ready = false;
    ck_assert_uint_eq(enc(&kp_api_versions_response_desc, 3, &m, out, sizeof out), 15);
    ck_assert_uint_eq(out[14], 0);
}
END_TEST

START_TEST(test_unknown_tags_skipped_and_bad_tags_rejected) {
    uint8_t b[64];
    memcpy(b, av3, 14);
    size_t n = 14;
    const uint8_t tags[] = { 0x03, 0x01, 0x08, 0, 0, 0, 0, 0, 0, 0, 0x07,
                             0x05, 0x03, 0xaa, 0xbb, 0xcc,   /* unknown tag 5 */
                             0x40, 0x00 };                    /* unknown tag 64, empty */
    memcpy(b + n, tags, sizeof tags);
    n += sizeof tags;
    kp_api_versions_response_t back;
    ck_assert_int_eq(dec(&kp_api_versions_response_desc, 3, b, n, &back), KP_OK);
    ck_assert(back.finalized_features_epoch == 7);
    ck_assert(!back.zk_migration_ready);

    /* descending tags */
    const uint8_t desc_tags[] = { 0x02, 0x03, 0x01, 0x01, 0x01, 0x08, 0, 0, 0, 0, 0, 0, 0, 0x07 };
    memcpy(b + 14, desc_tags, sizeof desc_tags);
    ck_assert_int_ne(dec(&kp_api_versions_response_desc, 3, b, 14 + sizeof desc_tags, &back), KP_OK);
    /* a known tag whose payload is too short for its type */
    const uint8_t short_tag[] = { 0x01, 0x01, 0x02, 0x00, 0x07 };
    memcpy(b + 14, short_tag, sizeof short_tag);
    ck_assert_int_eq(dec(&kp_api_versions_response_desc, 3, b, 14 + sizeof short_tag, &back),
                     KP_ERR_TRUNCATED);
    /* tag size running past the end */
    const uint8_t long_tag[] = { 0x01, 0x01, 0x30, 0x00 };
    memcpy(b + 14, long_tag, sizeof long_tag);
    ck_assert_int_eq(dec(&kp_api_versions_response_desc, 3, b, 14 + sizeof long_tag, &back),
                     KP_ERR_TRUNCATED);

    /* unknown tag inside an array element's tag section; a known tag whose
     * payload is longer than its value (tolerated) */
    const uint8_t nested[] = { 0x00, 0x00, 0x02, 0x00, 0x12, 0x00, 0x00, 0x00, 0x04,
                               0x01, 0x07, 0x02, 0xaa, 0xbb,          /* element tags */
                               0x00, 0x00, 0x00, 0x00,
                               0x01, 0x03, 0x02, 0x01, 0xee };        /* tag 3, 2 bytes */
    ck_assert_int_eq(dec(&kp_api_versions_response_desc, 3, nested, sizeof nested, &back), KP_OK);
    ck_assert_int_eq(back.api_keys.count, 1);
    ck_assert_int_eq(back.api_keys.items[0].max_version, 4);
    ck_assert(back.zk_migration_ready);
}
END_TEST

START_TEST(test_null_vs_empty) {
    kp_metadata_request_t m;
    const uint8_t null_v1[] = { 0xff, 0xff, 0xff, 0xff };
    const uint8_t empty_v1[] = { 0, 0, 0, 0 };
    ck_assert_int_eq(dec(&kp_metadata_request_desc, 1, null_v1, 4, &m), KP_OK);
    ck_assert_int_eq(m.topics.count, -1);
    ck_assert_int_eq(dec(&kp_metadata_request_desc, 1, empty_v1, 4, &m), KP_OK);
    ck_assert_int_eq(m.topics.count, 0);
    /* null is not allowed in v0 */
    ck_assert_int_eq(dec(&kp_metadata_request_desc, 0, null_v1, 4, &m), KP_ERR_BAD_LENGTH);
    /* v9 flexible: 0 = null, 1 = empty; then 3 bools and a tag section */
    const uint8_t null_v9[] = { 0x00, 1, 0, 0, 0x00 };
    const uint8_t empty_v9[] = { 0x01, 1, 0, 0, 0x00 };
    ck_assert_int_eq(dec(&kp_metadata_request_desc, 9, null_v9, 5, &m), KP_OK);
    ck_assert_int_eq(m.topics.count, -1);
    ck_assert_int_eq(dec(&kp_metadata_request_desc, 9, empty_v9, 5, &m), KP_OK);
    ck_assert_int_eq(m.topics.count, 0);
    uint8_t out[32];
    ck_assert_uint_eq(enc(&kp_metadata_request_desc, 9, &m, out, sizeof out), 5);
    ck_assert_mem_eq(out, empty_v9, 5);
    /* nullable compact strings: null = 0x00, empty = 0x01 */
    kp_consumer_group_heartbeat_response_t hb;
    kp_consumer_group_heartbeat_response_init(&hb);
    ck_assert(kp_slice_is_null(hb.error_message));   /* default=null */
    ck_assert_uint_eq(enc(&kp_consumer_group_heartbeat_response_desc, 0, &hb, out, sizeof out), 18);
    ck_assert_uint_eq(out[6], 0x00);
    ck_assert_uint_eq(out[16], 0xff);                /* null assignment marker */
    hb.error_message = S("");
    ck_assert_uint_eq(enc(&kp_consumer_group_heartbeat_response_desc, 0, &hb, out, sizeof out), 18);
    ck_assert_uint_eq(out[6], 0x01);
    kp_consumer_group_heartbeat_response_t back;
    ck_assert_int_eq(dec(&kp_consumer_group_heartbeat_response_desc, 0, out, 18, &back), KP_OK);
    ck_assert(!kp_slice_is_null(back.error_message));
    ck_assert_uint_eq(back.error_message.len, 0);
    ck_assert(kp_slice_is_null(back.member_id));
    ck_assert_ptr_null(back.assignment);
}
END_TEST

START_TEST(test_malformed_lengths_and_varints) {
    kp_metadata_request_t m;
    const uint8_t huge[] = { 0x7f, 0xff, 0xff, 0xff, 0, 1, 'a' };
    ck_assert_int_ne(dec(&kp_metadata_request_desc, 1, huge, sizeof huge, &m), KP_OK);
    const uint8_t neg[] = { 0xff, 0xff, 0xff, 0xfe };
    ck_assert_int_eq(dec(&kp_metadata_request_desc, 1, neg, sizeof neg, &m), KP_ERR_BAD_LENGTH);
    const uint8_t neg_str[] = { 0, 0, 0, 1, 0xff, 0xfb };
    ck_assert_int_eq(dec(&kp_metadata_request_desc, 0, neg_str, sizeof neg_str, &m), KP_ERR_BAD_LENGTH);
    const uint8_t bad_varint[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 1, 0, 0, 0 };
    ck_assert_int_eq(dec(&kp_metadata_request_desc, 9, bad_varint, sizeof bad_varint, &m),
                     KP_ERR_BAD_VARINT);
    const uint8_t huge_compact[] = { 0xff, 0xff, 0xff, 0xff, 0x07, 1, 0, 0, 0 };
    ck_assert_int_ne(dec(&kp_metadata_request_desc, 9, huge_compact, sizeof huge_compact, &m), KP_OK);
    /* nullable struct marker other than -1 / 1 still means present (Kafka:
     * negative = null); a truncated struct after it fails */
    const uint8_t marker_only[] = { 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0x05 };
    kp_consumer_group_heartbeat_response_t hb;
    ck_assert_int_eq(dec(&kp_consumer_group_heartbeat_response_desc, 0, marker_only,
                         sizeof marker_only, &hb), KP_ERR_TRUNCATED);
    /* version outside the valid range */
    ck_assert_int_eq(dec(&kp_metadata_request_desc, 99, neg, sizeof neg, &m), KP_ERR_UNSUPPORTED);
    ck_assert_int_eq(dec(&kp_metadata_request_desc, -1, neg, sizeof neg, &m), KP_ERR_UNSUPPORTED);
}
END_TEST

/* Wraps body bytes in a request header v1/v2 frame (no size prefix). */
static size_t frame_of(uint8_t *out, int16_t key, int16_t ver, bool v2, const uint8_t *body, size_t n) {
    uint8_t hdr[] = { (uint8_t)(key >> 8), (uint8_t)key, (uint8_t)(ver >> 8), (uint8_t)ver,
                      0, 0, 0, 42, 0x00, 0x01, 'c' };
    memcpy(out, hdr, sizeof hdr);
    size_t pos = sizeof hdr;
    if (v2) out[pos++] = 0x00;
    memcpy(out + pos, body, n);
    return pos + n;
}

START_TEST(test_request_dispatch) {
    uint8_t f[128];
    kp_request_header_t h;
    void *body = NULL;
    /* Metadata v1, one topic "ab" */
    const uint8_t md[] = { 0, 0, 0, 1, 0, 2, 'a', 'b' };
    size_t n = frame_of(f, KP_API_METADATA, 1, false, md, sizeof md);
    ck_assert_int_eq(kp_request_decode(f, n, &h, &body, &arena), KP_OK);
    kp_metadata_request_t *m = body;
    ck_assert_int_eq(m->topics.count, 1);
    ck_assert(kp_slice_eq_cstr(m->topics.items[0].name, "ab"));
    ck_assert(kp_slice_eq_cstr(h.client_id, "c"));
    /* bytes after the body are ignored, as Kafka does (librdkafka 2.0.x sends
     * them): the body decodes as if they were not there */
    f[n] = 0x00;
    f[n + 1] = 0x07;
    ck_assert_int_eq(kp_request_decode(f, n + 2, &h, &body, &arena), KP_OK);
    m = body;
    ck_assert_int_eq(m->topics.count, 1);
    ck_assert(kp_slice_eq_cstr(m->topics.items[0].name, "ab"));
    /* a body cut short is still refused */
    ck_assert_int_eq(kp_request_decode(f, n - 1, &h, &body, &arena), KP_ERR_TRUNCATED);
    /* truncated header */
    ck_assert_int_eq(kp_request_decode(f, 7, &h, &body, &arena), KP_ERR_TRUNCATED);
    ck_assert_int_eq(kp_request_decode(f, 9, &h, &body, &arena), KP_ERR_TRUNCATED);
    /* unknown api key: unsupported, fixed header fields still set */
    n = frame_of(f, 999, 0, false, md, 0);
    ck_assert_int_eq(kp_request_decode(f, n, &h, &body, &arena), KP_ERR_UNSUPPORTED);
    ck_assert_int_eq(h.api_key, 999);
    ck_assert_int_eq(h.correlation_id, 42);
    ck_assert_ptr_null(body);
    /* Produce v99: unsupported */
    n = frame_of(f, KP_API_PRODUCE, 99, true, md, 0);
    ck_assert_int_eq(kp_request_decode(f, n, &h, &body, &arena), KP_ERR_UNSUPPORTED);
    /* ApiVersions v99: unsupported, but the header is fully read (v2 by the
     * flexible rule) so the broker can answer UNSUPPORTED_VERSION */
    const uint8_t future[] = { 0xde, 0xad };
    n = frame_of(f, KP_API_API_VERSIONS, 99, true, future, sizeof future);
    ck_assert_int_eq(kp_request_decode(f, n, &h, &body, &arena), KP_ERR_UNSUPPORTED);
    ck_assert_int_eq(h.api_key, KP_API_API_VERSIONS);
    ck_assert_int_eq(h.api_version, 99);
    ck_assert_int_eq(h.correlation_id, 42);
    ck_assert(kp_slice_eq_cstr(h.client_id, "c"));
    /* null client id reads as "" */
    n = frame_of(f, KP_API_METADATA, 1, false, md, sizeof md);
    f[8] = 0xff;
    f[9] = 0xff;
    memmove(f + 10, f + 11, n - 11);
    ck_assert_int_eq(kp_request_decode(f, n - 1, &h, &body, &arena), KP_OK);
    ck_assert(!kp_slice_is_null(h.client_id));
    ck_assert_uint_eq(h.client_id.len, 0);
}
END_TEST

/* Every API x version: the default request followed by 1..3 extra bytes
 * decodes to the same message (re-encodes to the frame without them); the
 * same frame one byte short is refused. Responses keep refusing extra bytes. */
START_TEST(test_trailing_bytes_every_request) {
    static uint8_t frame[4096], out[4096];
    size_t checked = 0;
    for (size_t i = 0; i < kp_api_count; i++) {
        const kp_api_info_t *api = kp_api_at(i);
        for (int16_t v = api->min_version; v <= api->max_version; v++) {
            void *msg = kp_arena_alloc(&arena, api->request->size_bytes);
            ck_assert_ptr_nonnull(msg);
            memset(msg, 0, api->request->size_bytes);
            kp_msg_init(api->request, msg);
            kp_request_header_t h = { .api_key = api->api_key, .api_version = v,
                                      .correlation_id = 9, .client_id = S("c") };
            kp_wr_t w;
            kp_wr_init(&w, frame, sizeof frame - 3);
            ck_assert_int_eq(kp_request_encode(&w, &h, msg), KP_OK);
            size_t n = w.pos;
            for (size_t extra = 1; extra <= 3; extra++) {
                memset(frame + n, 0, extra);
                kp_request_header_t h2;
                void *body = NULL;
                int rc = kp_request_decode(frame + 4, n - 4 + extra, &h2, &body, &arena);
                ck_assert_msg(rc == KP_OK, "%s v%d + %zu bytes: %s", api->name, v, extra,
                              kp_status_str(rc));
                kp_wr_init(&w, out, sizeof out);
                ck_assert_int_eq(kp_request_encode(&w, &h2, body), KP_OK);
                ck_assert_uint_eq(w.pos, n);
                ck_assert_mem_eq(out, frame, n);
            }
            kp_request_header_t h3;
            void *body = NULL;
            ck_assert_msg(kp_request_decode(frame + 4, n - 5, &h3, &body, &arena) != KP_OK,
                          "%s v%d: a body one byte short decoded", api->name, v);
            checked++;
        }
    }
    ck_assert_uint_gt(checked, 200);   /* 261 api x version pairs today */
    /* a response frame with a byte after the body is still refused */
    const uint8_t resp[] = { 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0 };  /* corr 7, err 0, no keys, + 1 */
    int32_t corr = 0;
    void *body = NULL;
    ck_assert_int_eq(kp_response_decode(KP_API_API_VERSIONS, 0, resp, sizeof resp - 1, &corr, &body, &arena),
                     KP_OK);
    ck_assert_int_eq(kp_response_decode(KP_API_API_VERSIONS, 0, resp, sizeof resp, &corr, &body, &arena),
                     KP_ERR_BAD_LENGTH);
}
END_TEST

START_TEST(test_header_versions) {
    ck_assert_int_eq(kp_request_header_version(KP_API_METADATA, 9), 2);
    ck_assert_int_eq(kp_request_header_version(KP_API_METADATA, 8), 1);
    ck_assert_int_eq(kp_request_header_version(KP_API_API_VERSIONS, 3), 2);
    ck_assert_int_eq(kp_request_header_version(KP_API_API_VERSIONS, 2), 1);
    ck_assert_int_eq(kp_request_header_version(7, 0), 0);   /* ControlledShutdown v0 */
    ck_assert_int_eq(kp_request_header_version(KP_API_PRODUCE, 9), 2);
    ck_assert_int_eq(kp_response_header_version(KP_API_API_VERSIONS, 3), 0);
    ck_assert_int_eq(kp_response_header_version(KP_API_METADATA, 9), 1);
    ck_assert_int_eq(kp_response_header_version(KP_API_METADATA, 8), 0);
    ck_assert_int_eq(kp_response_header_version(KP_API_FETCH, 12), 1);
    ck_assert_int_eq(kp_response_header_version(KP_API_VOTE, 0), 1);
    ck_assert_int_eq(kp_response_header_version(KP_API_OFFSET_DELETE, 0), 0);
    /* response header v1 carries a tag section */
    uint8_t out[8];
    kp_wr_t w;
    kp_wr_init(&w, out, sizeof out);
    ck_assert_int_eq(kp_response_header_encode(&w, 1, 0x01020304), KP_OK);
    const uint8_t want[] = { 1, 2, 3, 4, 0 };
    ck_assert_uint_eq(w.pos, 5);
    ck_assert_mem_eq(out, want, 5);
}
END_TEST

START_TEST(test_encode_version_policy) {
    uint8_t out[256];
    kp_wr_t w;
    kp_produce_request_t p;
    kp_produce_request_init(&p);
    p.transactional_id = S("tx");   /* v3+, not ignorable */
    kp_wr_init(&w, out, sizeof out);
    ck_assert_int_eq(kp_produce_request_encode(&w, 2, &p), KP_ERR_UNSUPPORTED);
    kp_wr_init(&w, out, sizeof out);
    ck_assert_int_eq(kp_produce_request_encode(&w, 3, &p), KP_OK);
    p.transactional_id = kp_slice_null();
    kp_wr_init(&w, out, sizeof out);
    ck_assert_int_eq(kp_produce_request_encode(&w, 2, &p), KP_OK);

    kp_metadata_request_t m;
    kp_metadata_request_init(&m);
    m.allow_auto_topic_creation = false;   /* v4+, not ignorable */
    kp_wr_init(&w, out, sizeof out);
    ck_assert_int_eq(kp_metadata_request_encode(&w, 3, &m), KP_ERR_UNSUPPORTED);
    m.allow_auto_topic_creation = true;
    kp_wr_init(&w, out, sizeof out);
    ck_assert_int_eq(kp_metadata_request_encode(&w, 3, &m), KP_OK);
    /* null array where the version does not allow null: written as empty */
    m.topics.count = -1;
    kp_wr_init(&w, out, sizeof out);
    ck_assert_int_eq(kp_metadata_request_encode(&w, 0, &m), KP_OK);
    ck_assert_uint_eq(w.pos, 4);
    ck_assert_uint_eq(out[3], 0);
    /* count > 0 without items, or count < -1 */
    m.topics.count = 2;
    kp_wr_init(&w, out, sizeof out);
    ck_assert_int_eq(kp_metadata_request_encode(&w, 1, &m), KP_ERR_BAD_VALUE);
    m.topics.count = -2;
    kp_wr_init(&w, out, sizeof out);
    ck_assert_int_eq(kp_metadata_request_encode(&w, 1, &m), KP_ERR_BAD_VALUE);
    /* unknown version, short buffer */
    m.topics.count = 0;
    kp_wr_init(&w, out, sizeof out);
    ck_assert_int_eq(kp_metadata_request_encode(&w, 13, &m), KP_ERR_UNSUPPORTED);
    kp_wr_init(&w, out, 3);
    ck_assert_int_eq(kp_metadata_request_encode(&w, 1, &m), KP_ERR_OVERFLOW);
}
END_TEST

typedef struct {
    size_t off;
    const void *ext;
    size_t len;
    int calls;
} splice_rec_t;

static int on_splice(void *ctx, size_t off, const void *ext, size_t len) {
    splice_rec_t *s = ctx;
    s->off = off;
    s->ext = ext;
    s->len = len;
    s->calls++;
    return KP_OK;
}

static void fetch_response(kp_fetch_response_t *m, kp_fetch_response_fetchable_topic_response_t *t,
                           kp_fetch_response_partition_data_t *pd, kp_records_t rec) {
    kp_fetch_response_init(m);
    kp_fetch_response_fetchable_topic_response_init(t);
    kp_fetch_response_partition_data_init(pd);
    t->topic = S("orders");
    pd->partition_index = 3;
    pd->high_watermark = 1000;
    pd->records = rec;
    t->partitions.items = pd;
    t->partitions.count = 1;
    m->responses.items = t;
    m->responses.count = 1;
}

START_TEST(test_external_records_splice) {
    static const uint8_t data[40] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
    for (int16_t v = 4; v <= 12; v += 8) {   /* classic and flexible */
        kp_fetch_response_t m;
        kp_fetch_response_fetchable_topic_response_t t;
        kp_fetch_response_partition_data_t pd;
        kp_records_t ext = { kp_slice_null(), data, sizeof data };
        fetch_response(&m, &t, &pd, ext);
        uint8_t out[256];
        kp_wr_t w;
        kp_wr_init(&w, out, sizeof out);
        ck_assert_int_eq(kp_response_encode(&w, KP_API_FETCH, v, 9, &m, NULL), KP_ERR_UNSUPPORTED);
        splice_rec_t s = { 0 };
        kp_enc_opts_t opts = { on_splice, &s, 0 };
        kp_wr_init(&w, out, sizeof out);
        ck_assert_int_eq(kp_response_encode(&w, KP_API_FETCH, v, 9, &m, &opts), KP_OK);
        ck_assert_int_eq(s.calls, 1);
        ck_assert_ptr_eq(s.ext, data);
        ck_assert_uint_eq(s.len, sizeof data);
        ck_assert_uint_eq(opts.ext_bytes, sizeof data);
        /* assemble header bytes + external bytes + rest, as the broker will */
        uint8_t frame[512];
        memcpy(frame, out, s.off);
        memcpy(frame + s.off, data, sizeof data);
        memcpy(frame + s.off + sizeof data, out + s.off, w.pos - s.off);
        size_t flen = w.pos + sizeof data;
        ck_assert_uint_eq(kp_load_be32(frame), flen - 4);
        /* identical to the inline encoding of the same records */
        kp_records_t inl = { { data, sizeof data }, NULL, 0 };
        fetch_response(&m, &t, &pd, inl);
        uint8_t want[512];
        kp_wr_init(&w, want, sizeof want);
        ck_assert_int_eq(kp_response_encode(&w, KP_API_FETCH, v, 9, &m, NULL), KP_OK);
        ck_assert_uint_eq(w.pos, flen);
        ck_assert_mem_eq(frame, want, flen);
        /* count mode counts the external bytes */
        kp_records_t ext2 = { kp_slice_null(), data, sizeof data };
        fetch_response(&m, &t, &pd, ext2);
        size_t size = 0;
        ck_assert_int_eq(kp_fetch_response_size(v, &m, &size), KP_OK);
        ck_assert_uint_eq(size, flen - 4 - (v >= 12 ? 5 : 4));
        /* and it decodes back */
        int32_t corr = 0;
        void *body = NULL;
        ck_assert_int_eq(kp_response_decode(KP_API_FETCH, v, frame + 4, flen - 4, &corr, &body, &arena),
                         KP_OK);
        kp_fetch_response_t *back = body;
        ck_assert_int_eq(corr, 9);
        ck_assert_uint_eq(back->responses.items[0].partitions.items[0].records.bytes.len, sizeof data);
        ck_assert_mem_eq(back->responses.items[0].partitions.items[0].records.bytes.p, data, sizeof data);
    }
}
END_TEST

/* The engine applies the decoder limits to a real message: DescribeGroups v5
 * (flexible) with KP_ARRAY_COUNT_MAX empty group names decodes, one more is
 * refused although every byte is present; a tagged-field section of more than
 * KP_TAGGED_FIELDS_MAX fields is refused the same way. */
static size_t describe_groups_body(uint8_t *buf, size_t cap, uint32_t ngroups, uint32_t ntags) {
    kp_wr_t w;
    kp_wr_init(&w, buf, cap);
    int rc = kp_wr_uvarint(&w, ngroups + 1);
    for (uint32_t i = 0; i < ngroups && !rc; i++) rc = kp_wr_uvarint(&w, 1);   /* "" */
    if (!rc) rc = kp_wr_bool(&w, false);
    if (!rc) rc = kp_wr_uvarint(&w, ntags);
    for (uint32_t i = 0; i < ntags && !rc; i++) rc = kp_wr_uvarint(&w, 1000 + i) || kp_wr_uvarint(&w, 0);
    ck_assert_int_eq(rc, KP_OK);
    return w.pos;
}

START_TEST(test_decoder_limits) {
    size_t cap = (size_t)KP_ARRAY_COUNT_MAX + 64 + (size_t)(KP_TAGGED_FIELDS_MAX + 1) * 8;
    uint8_t *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    kp_arena_t big;
    kp_arena_init(&big, (size_t)64 << 20);
    struct { uint32_t groups, tags; int want; } cases[] = {
        { KP_ARRAY_COUNT_MAX, 0, KP_OK },
        { KP_ARRAY_COUNT_MAX + 1, 0, KP_ERR_BAD_LENGTH },
        { 1, KP_TAGGED_FIELDS_MAX, KP_OK },
        { 1, KP_TAGGED_FIELDS_MAX + 1, KP_ERR_BAD_LENGTH },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t n = describe_groups_body(buf, cap, cases[c].groups, cases[c].tags);
        kp_rd_t r;
        kp_rd_init(&r, buf, n);
        kp_describe_groups_request_t m;
        int rc = kp_describe_groups_request_decode(&r, 5, &m, &big);
        ck_assert_msg(rc == cases[c].want, "case %zu: %s", c, kp_status_str(rc));
        if (rc == KP_OK) {
            ck_assert_int_eq(m.groups.count, (int32_t)cases[c].groups);
            ck_assert_uint_eq(kp_rd_remaining(&r), 0);
        }
        kp_arena_reset(&big);
    }
    kp_arena_free(&big);
    free(buf);
}
END_TEST

START_TEST(test_json_dump) {
    kp_fetch_response_t m;
    kp_fetch_response_fetchable_topic_response_t t;
    kp_fetch_response_partition_data_t pd;
    static const uint8_t data[] = { 0xab, 0x01 };
    kp_records_t rec = { { data, 2 }, NULL, 0 };
    fetch_response(&m, &t, &pd, rec);
    t.topic = S("q\"x");
    char *j = NULL;
    ck_assert_int_eq(kp_dump_json(&kp_fetch_response_desc, 4, &m, &j), KP_OK);
    ck_assert_str_eq(j, "{\"throttle_time_ms\":0,\"responses\":[{\"topic\":\"q\\\"x\",\"partitions\":"
                        "[{\"partition_index\":3,\"error_code\":0,\"high_watermark\":1000,"
                        "\"last_stable_offset\":-1,\"aborted_transactions\":[],\"records\":\"ab01\"}]}]}");
    free(j);
    kp_api_versions_response_t av;
    kp_api_versions_response_init(&av);
    ck_assert_int_eq(kp_dump_json(&kp_api_versions_response_desc, 3, &av, &j), KP_OK);
    ck_assert_str_eq(j, "{\"error_code\":0,\"api_keys\":[],\"throttle_time_ms\":0,\"supported_features\":[],"
                        "\"finalized_features_epoch\":-1,\"finalized_features\":[],\"zk_migration_ready\":false}");
    free(j);
    /* uuid as 32 lowercase hex chars, null string as null */
    kp_metadata_response_metadata_response_topic_t mt;
    kp_metadata_response_metadata_response_topic_init(&mt);
    for (int i = 0; i < 16; i++) mt.topic_id.b[i] = (uint8_t)(0xf0 + i);
    mt.name = kp_slice_null();
    ck_assert_int_eq(kp_dump_json(&kp_metadata_response_metadata_response_topic_desc, 12, &mt, &j), KP_OK);
    ck_assert_ptr_nonnull(strstr(j, "\"name\":null,\"topic_id\":\"f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff\""));
    free(j);
}
END_TEST

/* Request frames encoded by an independent implementation (kafka-python
 * 2.0.2's protocol classes, librdkafka 2.0.2), as captured hex: each must decode, show the
 * values it was built with, and re-encode to the same bytes. */
static size_t unhex(const char *h, uint8_t *out, size_t cap) {
    size_t n = strlen(h) / 2;
    ck_assert_uint_le(n, cap);
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        ck_assert_int_eq(sscanf(h + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
    return n;
}

static void *decode_frame_hex(const char *hex, kp_request_header_t *h, uint8_t *buf, size_t cap,
                              size_t *len) {
    *len = unhex(hex, buf, cap);
    ck_assert_uint_eq(kp_load_be32(buf), *len - 4);
    void *body = NULL;
    ck_assert_int_eq(kp_request_decode(buf + 4, *len - 4, h, &body, &arena), KP_OK);
    ck_assert(kp_slice_eq_cstr(h->client_id, "cli") || kp_slice_eq_cstr(h->client_id, "skiff-test"));
    uint8_t out[512];
    kp_wr_t w;
    kp_wr_init(&w, out, sizeof out);
    ck_assert_int_eq(kp_request_encode(&w, h, body), KP_OK);
    ck_assert_uint_eq(w.pos, *len);
    ck_assert_mem_eq(out, buf, *len);
    return body;
}

START_TEST(test_kat_independent_client_frames) {
    uint8_t buf[512];
    size_t len;
    kp_request_header_t h;
    kp_metadata_request_t *md = decode_frame_hex(
        "0000001500030004000000030003636c690000000100017800", &h, buf, sizeof buf, &len);
    ck_assert_int_eq(h.api_version, 4);
    ck_assert_int_eq(h.correlation_id, 3);
    ck_assert(kp_slice_eq_cstr(md->topics.items[0].name, "x"));
    ck_assert(!md->allow_auto_topic_creation);
    kp_fetch_request_t *fe = decode_frame_hex(
        "0000003900010004000000070003636c69ffffffff000001f400000001000003e8000000000100017400000001"
        "000000000000000000000005000003e8", &h, buf, sizeof buf, &len);
    ck_assert_int_eq(fe->replica_id, -1);
    ck_assert_int_eq(fe->max_wait_ms, 500);
    ck_assert_int_eq(fe->max_bytes, 1000);
    ck_assert(fe->topics.items[0].partitions.items[0].fetch_offset == 5);
    ck_assert_int_eq(fe->topics.items[0].partitions.items[0].partition_max_bytes, 1000);
    kp_offset_commit_request_t *oc = decode_frame_hex(
        "0000003c00080002000000090003636c6900016700000001000163ffffffffffffffff0000000100017400000001"
        "00000000000000000000000500046d657461", &h, buf, sizeof buf, &len);
    ck_assert(kp_slice_eq_cstr(oc->group_id, "g"));
    ck_assert(oc->retention_time_ms == -1);
    ck_assert(kp_slice_eq_cstr(oc->topics.items[0].partitions.items[0].committed_metadata, "meta"));
    kp_create_topics_request_t *ct = decode_frame_hex(
        "00000040001300010000000a0003636c69000000010001740000000300010000000000000001000e636c65616e"
        "75702e706f6c6963790007636f6d706163740000006400", &h, buf, sizeof buf, &len);
    ck_assert_int_eq(ct->topics.items[0].num_partitions, 3);
    ck_assert(kp_slice_eq_cstr(ct->topics.items[0].configs.items[0].value, "compact"));
    ck_assert_int_eq(ct->timeout_ms, 100);
    kp_produce_request_t *pr = decode_frame_hex(
        "0000006e00000003000000060003636c69ffffffff000003e8000000010001740000000100000000000000460000"
        "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
        "00000000000000000000000000000000000000000000", &h, buf, sizeof buf, &len);
    ck_assert(kp_slice_is_null(pr->transactional_id));
    ck_assert_int_eq(pr->acks, -1);
    ck_assert_uint_eq(pr->topic_data.items[0].partition_data.items[0].records.bytes.len, 70);
    /* librdkafka 2.0.2 (confluent-kafka-python 1.7.0): ApiVersions v3, header v2, flexible */
    kp_api_versions_request_t *av = decode_frame_hex(
        "000000410012000300000001000a736b6966662d746573740017636f6e666c75656e742d6b61666b612d707974"
        "686f6e14312e372e302d72646b61666b612d322e302e3200", &h, buf, sizeof buf, &len);
    ck_assert(kp_slice_eq_cstr(av->client_software_name, "confluent-kafka-python"));
    ck_assert(kp_slice_eq_cstr(av->client_software_version, "1.7.0-rdkafka-2.0.2"));
}
END_TEST

int main(void) {
    Suite *s = suite_create("codec_frames");
    TCase *tc = tcase_create("frames");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_kat_api_versions_v0_request);
    tcase_add_test(tc, test_kat_api_versions_v0_response);
    tcase_add_test(tc, test_kat_metadata_v0_request);
    tcase_add_test(tc, test_kat_flexible_with_tags);
    tcase_add_test(tc, test_unknown_tags_skipped_and_bad_tags_rejected);
    tcase_add_test(tc, test_null_vs_empty);
    tcase_add_test(tc, test_malformed_lengths_and_varints);
    tcase_add_test(tc, test_request_dispatch);
    tcase_add_test(tc, test_trailing_bytes_every_request);
    tcase_add_test(tc, test_header_versions);
    tcase_add_test(tc, test_encode_version_policy);
    tcase_add_test(tc, test_external_records_splice);
    tcase_add_test(tc, test_json_dump);
    tcase_add_test(tc, test_decoder_limits);
    tcase_add_test(tc, test_kat_independent_client_frames);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
