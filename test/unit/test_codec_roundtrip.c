/* Codec round trip: for every API, request and response, every valid version
 * (and the standalone messages), pseudo-random messages (seeded) are encoded,
 * decoded, re-encoded and compared byte for byte and as JSON; the computed
 * size must equal the bytes written, and every proper prefix of the encoding
 * must fail to decode. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kp_msgs.h"
#include "protocol/kp_codec.h"
#include "protocol/kp_header.h"

#define SEEDS_PER_VERSION 6
#define MAX_ARRAY_ELEMS 3
#define ENC_BUF_BYTES (1 << 20)

static uint64_t rng_state;

static uint64_t rnd(void) {
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static uint32_t rnd_below(uint32_t n) { return (uint32_t)(rnd() % n); }

static const uint8_t pool[] = "abcdefghijklmnopqrstuvwxyz0123456789-._ \"\\\x01\xc3\xa9xyz";

static kp_slice_t rnd_slice(bool nullable) {
    if (nullable && rnd_below(4) == 0) return kp_slice_null();
    size_t len = rnd_below(10);
    size_t off = rnd_below((uint32_t)(sizeof pool - 1 - len));
    kp_slice_t s = { pool + off, len };
    return s;
}

static void fill_struct(const kp_struct_desc_t *d, int16_t v, void *msg, kp_arena_t *a);

static void fill_scalar(uint8_t t, bool nullable, void *p) {
    uint64_t x = rnd();
    switch (t) {
    case KP_T_INT8: { int8_t y = (int8_t)x; memcpy(p, &y, 1); break; }
    case KP_T_INT16: case KP_T_UINT16: { uint16_t y = (uint16_t)x; memcpy(p, &y, 2); break; }
    case KP_T_INT32: case KP_T_UINT32: { uint32_t y = (uint32_t)x; memcpy(p, &y, 4); break; }
    case KP_T_INT64: memcpy(p, &x, 8); break;
    case KP_T_BOOL: { bool y = x & 1; memcpy(p, &y, sizeof y); break; }
    case KP_T_FLOAT64: { double y = (double)(int32_t)x / 7.0; memcpy(p, &y, sizeof y); break; }
    case KP_T_UUID: {
        kp_uuid_t u;
        for (int i = 0; i < 16; i++) u.b[i] = (uint8_t)rnd();
        memcpy(p, &u, sizeof u);
        break;
    }
    case KP_T_STRING: case KP_T_BYTES: {
        kp_slice_t s = rnd_slice(nullable);
        memcpy(p, &s, sizeof s);
        break;
    }
    case KP_T_RECORDS: {
        kp_records_t r = { rnd_slice(true), NULL, 0 };
        memcpy(p, &r, sizeof r);
        break;
    }
    default: ck_abort_msg("bad scalar type %d", t);
    }
}

static size_t elem_size(uint8_t t, const kp_struct_desc_t *sub) {
    switch (t) {
    case KP_T_INT8: return 1;
    case KP_T_INT16: case KP_T_UINT16: return 2;
    case KP_T_INT32: case KP_T_UINT32: return 4;
    case KP_T_INT64: return 8;
    case KP_T_FLOAT64: return sizeof(double);
    case KP_T_BOOL: return sizeof(bool);
    case KP_T_UUID: return sizeof(kp_uuid_t);
    case KP_T_STRING: case KP_T_BYTES: return sizeof(kp_slice_t);
    case KP_T_RECORDS: return sizeof(kp_records_t);
    default: return sub->size_bytes;
    }
}

static void fill_field(const kp_field_desc_t *f, int16_t v, void *p, kp_arena_t *a) {
    bool nullable = kp_ver_in(v, f->null_lo, f->null_hi);
    if (f->type == KP_T_ARRAY) {
        struct { void *items; int32_t count; } arr = { NULL, 0 };
        if (nullable && rnd_below(4) == 0) {
            arr.count = -1;
        } else {
            arr.count = (int32_t)rnd_below(MAX_ARRAY_ELEMS + 1);
            size_t esz = elem_size(f->elem, f->sub);
            arr.items = arr.count ? kp_arena_alloc(a, (size_t)arr.count * esz) : NULL;
            for (int32_t i = 0; i < arr.count; i++) {
                void *it = (char *)arr.items + (size_t)i * esz;
                if (f->elem == KP_T_STRUCT) fill_struct(f->sub, v, it, a);
                else fill_scalar(f->elem, false, it);
            }
        }
        memcpy(p, &arr, sizeof arr);
    } else if (f->type == KP_T_STRUCT) {
        if (!(f->flags & KP_FD_PTR)) {
            fill_struct(f->sub, v, p, a);
            return;
        }
        void *q = NULL;
        if (!nullable || rnd_below(3) != 0) {
            q = kp_arena_alloc(a, f->sub->size_bytes);
            fill_struct(f->sub, v, q, a);
        }
        memcpy(p, &q, sizeof q);
    } else {
        fill_scalar(f->type, nullable, p);
    }
}

static void fill_struct(const kp_struct_desc_t *d, int16_t v, void *msg, kp_arena_t *a) {
    kp_msg_init(d, msg);
    for (uint16_t i = 0; i < d->nfields; i++) {
        const kp_field_desc_t *f = &d->fields[i];
        if (!kp_ver_in(v, f->ver_lo, f->ver_hi)) continue;
        bool tagged = f->tag >= 0 && kp_ver_in(v, f->tag_lo, f->tag_hi);
        if (tagged && rnd_below(3) == 0) continue;   /* leave the tagged field unset */
        fill_field(f, v, (char *)msg + f->offset, a);
    }
}

static uint8_t *buf1, *buf2;
static size_t truncation_checks;

/* With KP_SEED_DIR set, the first message of some versions is also written
 * as a fuzz seed: DIR/fuzz_request/NAME (request frame after the size) and
 * DIR/fuzz_response/NAME (api index byte, version offset byte, response
 * frame after the size), the input layouts of test/fuzz/fuzz_*.c. */
static void write_seed(const kp_struct_desc_t *d, int16_t v, const uint8_t *body, size_t n) {
    const char *dir = getenv("KP_SEED_DIR");
    if (!dir) return;
    for (size_t i = 0; i < kp_api_count; i++) {
        const kp_api_info_t *api = kp_api_at(i);
        bool req = api->request == d;
        if (!req && api->response != d) continue;
        if (v != api->min_version && v != api->max_version && v != kp_api_first_flexible(api)) return;
        uint8_t hdr[32];
        kp_wr_t w;
        kp_wr_init(&w, hdr, sizeof hdr);
        size_t pre = 0;
        if (req) {
            kp_request_header_t h = { api->api_key, v, 7, kp_slice_cstr("seed") };
            ck_assert_int_eq(kp_request_header_encode(&w, kp_request_header_version(api->api_key, v), &h), KP_OK);
        } else {
            hdr[0] = (uint8_t)i;
            hdr[1] = (uint8_t)(v - api->min_version);
            w.pos = pre = 2;
            ck_assert_int_eq(kp_response_header_encode(&w, kp_response_header_version(api->api_key, v), 7), KP_OK);
        }
        char path[512];
        snprintf(path, sizeof path, "%s/fuzz_%s/%s_v%d.bin", dir, req ? "request" : "response", d->name, v);
        FILE *f = fopen(path, "wb");
        ck_assert_msg(f != NULL, "cannot write %s", path);
        ck_assert_uint_eq(fwrite(hdr, 1, w.pos, f), w.pos);
        ck_assert_uint_eq(fwrite(body, 1, n, f), n);
        fclose(f);
        return;
    }
}

/* One message: fill, size, encode, decode, re-encode, compare, truncate. */
static void round_trip(const kp_struct_desc_t *d, int16_t v, uint64_t seed, bool truncate) {
    rng_state = seed * 0x9e3779b97f4a7c15ULL + 1;
    kp_arena_t a1, a2;
    kp_arena_init(&a1, 64 << 20);
    kp_arena_init(&a2, 64 << 20);
    void *msg = kp_arena_alloc(&a1, d->size_bytes);
    fill_struct(d, v, msg, &a1);

    size_t size = 0;
    ck_assert_msg(kp_encoded_size(d, v, msg, &size) == KP_OK, "%s v%d size", d->name, v);
    kp_wr_t w;
    kp_wr_init(&w, buf1, ENC_BUF_BYTES);
    int rc = kp_encode(d, &w, v, msg, NULL);
    ck_assert_msg(rc == KP_OK, "%s v%d encode: %s", d->name, v, kp_status_str(rc));
    ck_assert_msg(w.pos == size, "%s v%d size %zu != written %zu", d->name, v, size, w.pos);

    kp_rd_t r;
    kp_rd_init(&r, buf1, w.pos);
    void *back = kp_arena_alloc(&a2, d->size_bytes);
    rc = kp_decode(d, &r, v, back, &a2);
    ck_assert_msg(rc == KP_OK, "%s v%d seed %llu decode: %s", d->name, v, (unsigned long long)seed,
                  kp_status_str(rc));
    ck_assert_msg(kp_rd_remaining(&r) == 0, "%s v%d: %zu bytes left", d->name, v, kp_rd_remaining(&r));

    kp_wr_t w2;
    kp_wr_init(&w2, buf2, ENC_BUF_BYTES);
    ck_assert_int_eq(kp_encode(d, &w2, v, back, NULL), KP_OK);
    ck_assert_msg(w2.pos == w.pos && memcmp(buf1, buf2, w.pos) == 0, "%s v%d re-encoding differs",
                  d->name, v);

    char *j1 = NULL, *j2 = NULL;
    ck_assert_int_eq(kp_dump_json(d, v, msg, &j1), KP_OK);
    ck_assert_int_eq(kp_dump_json(d, v, back, &j2), KP_OK);
    ck_assert_msg(strcmp(j1, j2) == 0, "%s v%d JSON differs:\n%s\n%s", d->name, v, j1, j2);
    free(j1);
    free(j2);

    if (truncate) write_seed(d, v, buf1, w.pos);
    if (truncate) {
        for (size_t n = 0; n < w.pos; n++) {
            /* an exact-size copy, so ASan sees any read past the prefix */
            uint8_t *cut = malloc(n ? n : 1);
            memcpy(cut, buf1, n);
            kp_arena_reset(&a2);
            kp_rd_t t;
            kp_rd_init(&t, cut, n);
            void *o = kp_arena_alloc(&a2, d->size_bytes);
            ck_assert_msg(kp_decode(d, &t, v, o, &a2) != KP_OK, "%s v%d: prefix %zu of %zu decoded",
                          d->name, v, n, w.pos);
            free(cut);
            truncation_checks++;
        }
    }
    kp_arena_free(&a1);
    kp_arena_free(&a2);
}

static void all_versions(const kp_struct_desc_t *d, size_t *count) {
    for (int16_t v = d->valid_lo; v <= d->valid_hi; v++) {
        for (uint64_t s = 1; s <= SEEDS_PER_VERSION; s++) {
            round_trip(d, v, s + (uint64_t)v * 1000, s == 1);
            (*count)++;
        }
    }
}

START_TEST(test_every_api_every_version) {
    size_t count = 0;
    ck_assert_uint_ge(kp_api_count, 58);
    for (size_t i = 0; i < kp_api_count; i++) {
        const kp_api_info_t *api = kp_api_at(i);
        ck_assert_ptr_nonnull(api);
        ck_assert_ptr_eq(kp_api_info(api->api_key), api);
        all_versions(api->request, &count);
        all_versions(api->response, &count);
    }
    printf("round-tripped %zu messages, %zu truncated prefixes rejected\n", count,
           truncation_checks);
}
END_TEST

START_TEST(test_standalone_messages) {
    const char *names[] = { "ConsumerProtocolSubscription", "ConsumerProtocolAssignment",
                            "LeaderChangeMessage", "SnapshotHeaderRecord", "SnapshotFooterRecord",
                            "VotersRecord", "KRaftVersionRecord", "GroupMetadataKey",
                            "GroupMetadataValue", "OffsetCommitKey", "OffsetCommitValue" };
    size_t count = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const kp_struct_desc_t *d = kp_message_desc(names[i]);
        ck_assert_msg(d != NULL, "%s missing", names[i]);
        all_versions(d, &count);
    }
    ck_assert_ptr_null(kp_message_desc("NoSuchMessage"));
    ck_assert_uint_gt(count, 7);
}
END_TEST

START_TEST(test_registry) {
    const kp_api_info_t *p = kp_api_info(KP_API_PRODUCE);
    ck_assert_ptr_nonnull(p);
    ck_assert_str_eq(p->name, "Produce");
    ck_assert_int_eq(p->api_key, 0);
    ck_assert_int_eq(kp_api_first_flexible(p), 9);
    ck_assert_int_eq(p->first_flexible, 9);
    ck_assert_int_eq(p->max_version, 12);
    ck_assert_int_eq(p->max_stable_version, 12);
    /* an `unstable` request only hides its latest version (EndTxn's v5 was
     * one until transactions v2 were served, issue 20) */
    for (int16_t k = 0; k < 100; k++) {
        const kp_api_info_t *x = kp_api_info(k);
        if (x && x->max_stable_version != x->max_version)
            ck_assert_int_eq(x->max_stable_version, x->max_version - 1);
    }
    const kp_api_info_t *et = kp_api_info(KP_API_END_TXN);
    ck_assert_int_eq(et->max_stable_version, et->max_version);
    ck_assert_ptr_eq(p->request, &kp_produce_request_desc);
    const kp_api_info_t *av = kp_api_info(KP_API_API_VERSIONS);
    ck_assert_int_eq(av->api_key, 18);
    ck_assert_int_eq(av->min_version, 0);
    ck_assert_int_eq(kp_api_first_flexible(av), 3);
    ck_assert_int_eq(kp_api_first_flexible(kp_api_info(KP_API_OFFSET_DELETE)), -1);
    ck_assert_ptr_null(kp_api_info(-1));
    ck_assert_ptr_null(kp_api_info(7));      /* ControlledShutdown: not served */
    ck_assert_ptr_null(kp_api_info(32767));
    ck_assert_ptr_null(kp_api_at(kp_api_count));
    for (size_t i = 1; i < kp_api_count; i++)
        ck_assert_int_lt(kp_api_at(i - 1)->api_key, kp_api_at(i)->api_key);
}
END_TEST

START_TEST(test_init_defaults) {
    kp_metadata_request_t m;
    memset(&m, 0x5a, sizeof m);
    kp_metadata_request_init(&m);
    ck_assert(m.allow_auto_topic_creation);   /* default=true */
    ck_assert_int_eq(m.topics.count, 0);
    kp_produce_request_t p;
    kp_produce_request_init(&p);
    ck_assert(kp_slice_is_null(p.transactional_id));   /* default=null */
    kp_fetch_request_t f;
    kp_fetch_request_init(&f);
    ck_assert_int_eq(f.replica_id, -1);
    ck_assert_int_eq(f.max_bytes, 0x7fffffff);
    kp_metadata_response_t r;
    kp_metadata_response_init(&r);
    ck_assert_int_eq(r.controller_id, -1);
    ck_assert(kp_slice_is_null(r.cluster_id));
    /* a zeroed + initialised message encodes in every version */
    for (int16_t v = 0; v <= kp_api_info(KP_API_FETCH)->max_version; v++) {
        size_t n = 0;
        ck_assert_int_eq(kp_fetch_request_size(v, &f, &n), KP_OK);
        ck_assert_uint_gt(n, 0);
    }
}
END_TEST

Suite *suite(void) {
    Suite *s = suite_create("codec_roundtrip");
    TCase *tc = tcase_create("all");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_every_api_every_version);
    tcase_add_test(tc, test_standalone_messages);
    tcase_add_test(tc, test_registry);
    tcase_add_test(tc, test_init_defaults);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    buf1 = malloc(ENC_BUF_BYTES);
    buf2 = malloc(ENC_BUF_BYTES);
    SRunner *sr = srunner_create(suite());
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    free(buf1);
    free(buf2);
    return failed ? 1 : 0;
}
