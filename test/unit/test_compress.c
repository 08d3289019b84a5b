/* Unit tests for protocol/compress*.c: round trips for every codec, the
 * output cap (exact fit, one byte short, compression bombs), raw and xerial
 * snappy, lz4 frames from other writers and the old-Kafka header checksum,
 * multi-member / multi-frame input, garbage and truncation. */
#include <check.h>
#include <lz4frame.h>
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "protocol/kp_compress.h"

static const kp_codec_t codecs[] = { KP_CODEC_GZIP, KP_CODEC_SNAPPY, KP_CODEC_LZ4, KP_CODEC_ZSTD };
#define NCODECS (sizeof codecs / sizeof codecs[0])
#define MIB ((size_t)1 << 20)

static kp_arena_t arena;
static void setup(void) { kp_arena_init(&arena, (size_t)512 << 20); }
static void teardown(void) { kp_arena_free(&arena); }

/* Half random, half repetitive, so that codecs both match and miss. */
static uint8_t *sample(size_t n, unsigned seed) {
    uint8_t *b = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(b);
    srand(seed);
    for (size_t i = 0; i < n; i++) b[i] = (i / 512) % 2 ? (uint8_t)rand() : (uint8_t)("skiff"[i % 5]);
    return b;
}

START_TEST(test_round_trip_every_codec_and_size) {
    size_t sizes[] = { 0, 1, 100, 32768, 32769, 65536, 65537, 300000 };
    for (size_t c = 0; c < NCODECS; c++) {
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            size_t n = sizes[s];
            uint8_t *src = sample(n, (unsigned)(n + c));
            const uint8_t *z, *back;
            size_t zlen, blen;
            ck_assert_int_eq(kp_compress(codecs[c], src, n, &arena, &z, &zlen), KP_OK);
            ck_assert_int_eq(kp_decompress(codecs[c], z, zlen, n + 1, 0, &arena, &back, &blen), KP_OK);
            ck_assert_uint_eq(blen, n);
            if (n) ck_assert_mem_eq(back, src, n);
            /* the cap is inclusive: exactly n fits, n - 1 does not */
            ck_assert_int_eq(kp_decompress(codecs[c], z, zlen, n, 0, &arena, &back, &blen), KP_OK);
            if (n > 0)
                ck_assert_int_eq(kp_decompress(codecs[c], z, zlen, n - 1, 0, &arena, &back, &blen), KP_ERR_TOO_LARGE);
            free(src);
            kp_arena_reset(&arena);
        }
    }
}
END_TEST

START_TEST(test_compression_bomb_hits_cap) {
    size_t n = 64 * MIB;
    uint8_t *zeros = calloc(1, n);
    ck_assert_ptr_nonnull(zeros);
    for (size_t c = 0; c < NCODECS; c++) {
        const uint8_t *z, *out;
        size_t zlen, olen;
        ck_assert_int_eq(kp_compress(codecs[c], zeros, n, &arena, &z, &zlen), KP_OK);
        ck_assert_uint_lt(zlen, n / 20); /* small input ... */
        size_t before = arena.used_bytes;
        ck_assert_int_eq(kp_decompress(codecs[c], z, zlen, MIB, 0, &arena, &out, &olen), KP_ERR_TOO_LARGE);
        ck_assert_uint_eq(arena.used_bytes, before); /* ... never expanded in memory */
        kp_arena_reset(&arena);
    }
    free(zeros);
}
END_TEST

START_TEST(test_garbage_is_an_error) {
    uint8_t junk[4096];
    srand(1);
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)rand();
    for (size_t c = 0; c < NCODECS; c++) {
        const uint8_t *out;
        size_t olen;
        ck_assert_int_ne(kp_decompress(codecs[c], junk, sizeof junk, MIB, 0, &arena, &out, &olen), KP_OK);
        ck_assert_int_ne(kp_decompress(codecs[c], junk, 0, MIB, 0, &arena, &out, &olen), KP_OK);
    }
    const uint8_t *out;
    size_t olen;
    ck_assert_int_eq(kp_decompress((kp_codec_t)5, junk, 10, MIB, 0, &arena, &out, &olen), KP_ERR_UNSUPPORTED);
    ck_assert_int_eq(kp_compress(KP_CODEC_NONE, junk, 10, &arena, &out, &olen), KP_ERR_UNSUPPORTED);
}
END_TEST

START_TEST(test_truncated_stream_is_an_error) {
    size_t n = 100000;
    uint8_t *src = sample(n, 9);
    for (size_t c = 0; c < NCODECS; c++) {
        const uint8_t *z, *out;
        size_t zlen, olen;
        ck_assert_int_eq(kp_compress(codecs[c], src, n, &arena, &z, &zlen), KP_OK);
        for (size_t cut = 1; cut < zlen; cut += (cut < 64 ? 1 : 97)) {
            int rc = kp_decompress(codecs[c], z, cut, 2 * n, 0, &arena, &out, &olen);
            /* xerial snappy has no end marker: a cut between blocks decodes
             * to a shorter output, which the batch CRC catches instead */
            if (codecs[c] == KP_CODEC_SNAPPY && rc == KP_OK) ck_assert_uint_lt(olen, n);
            else ck_assert_int_ne(rc, KP_OK);
        }
        /* trailing garbage after a complete stream */
        uint8_t *longer = malloc(zlen + 3);
        memcpy(longer, z, zlen);
        memcpy(longer + zlen, "\x01\x02\x03", 3);
        ck_assert_int_ne(kp_decompress(codecs[c], longer, zlen + 3, 2 * n, 0, &arena, &out, &olen), KP_OK);
        free(longer);
        kp_arena_reset(&arena);
    }
    free(src);
}
END_TEST

START_TEST(test_snappy_raw_and_xerial) {
    size_t n = 50000;
    uint8_t *src = sample(n, 4);
    /* raw snappy, as librdkafka sends it */
    size_t zlen = snappy_max_compressed_length(n);
    char *raw = malloc(zlen);
    ck_assert_int_eq(snappy_compress((const char *)src, n, raw, &zlen), SNAPPY_OK);
    const uint8_t *out;
    size_t olen;
    ck_assert_int_eq(kp_decompress(KP_CODEC_SNAPPY, (uint8_t *)raw, zlen, n, 0, &arena, &out, &olen), KP_OK);
    ck_assert_uint_eq(olen, n);
    ck_assert_mem_eq(out, src, n);
    ck_assert_int_eq(kp_decompress(KP_CODEC_SNAPPY, (uint8_t *)raw, zlen, n - 1, 0, &arena, &out, &olen),
                     KP_ERR_TOO_LARGE);
    /* our output carries the xerial header (magic, version 1, compat 1) */
    const uint8_t *z;
    ck_assert_int_eq(kp_compress(KP_CODEC_SNAPPY, src, n, &arena, &z, &zlen), KP_OK);
    ck_assert_mem_eq(z, "\x82SNAPPY\0\0\0\0\x01\0\0\0\x01", 16);
    /* hand-made xerial stream: two blocks of different sizes */
    size_t a = 1000, b = n - 1000;
    size_t ca = snappy_max_compressed_length(a), cb = snappy_max_compressed_length(b);
    uint8_t *x = malloc(16 + 8 + ca + cb);
    memcpy(x, "\x82SNAPPY\0\0\0\0\x01\0\0\0\x01", 16);
    ck_assert_int_eq(snappy_compress((const char *)src, a, (char *)x + 20, &ca), SNAPPY_OK);
    kp_store_be32(x + 16, (uint32_t)ca);
    ck_assert_int_eq(snappy_compress((const char *)src + a, b, (char *)x + 24 + ca, &cb), SNAPPY_OK);
    kp_store_be32(x + 20 + ca, (uint32_t)cb);
    ck_assert_int_eq(kp_decompress(KP_CODEC_SNAPPY, x, 24 + ca + cb, n, 0, &arena, &out, &olen), KP_OK);
    ck_assert_uint_eq(olen, n);
    ck_assert_mem_eq(out, src, n);
    /* a block length running past the end, and a negative one */
    kp_store_be32(x + 20 + ca, (uint32_t)cb + 1);
    ck_assert_int_eq(kp_decompress(KP_CODEC_SNAPPY, x, 24 + ca + cb, n, 0, &arena, &out, &olen), KP_ERR_CORRUPT);
    kp_store_be32(x + 20 + ca, 0x80000000u);
    ck_assert_int_eq(kp_decompress(KP_CODEC_SNAPPY, x, 24 + ca + cb, n, 0, &arena, &out, &olen), KP_ERR_CORRUPT);
    free(x);
    free(raw);
    free(src);
}
END_TEST

/* Streams that declare their size (raw snappy, zstd frames with a content
 * size) are checked against the cap before decoding and must not lie. */
START_TEST(test_declared_sizes) {
    const char *text = "declared size, declared size, declared size, declared size!"; /* 60 bytes */
    size_t n = strlen(text), zlen = snappy_max_compressed_length(n);
    char raw[128];
    ck_assert_int_eq(snappy_compress(text, n, raw, &zlen), SNAPPY_OK);
    ck_assert_uint_eq((uint8_t)raw[0], n); /* 1-byte varint length */
    const uint8_t *out;
    size_t olen;
    ck_assert_int_eq(kp_decompress(KP_CODEC_SNAPPY, (uint8_t *)raw, zlen, n - 1, 0, &arena, &out, &olen),
                     KP_ERR_TOO_LARGE);
    size_t before = arena.used_bytes;
    raw[0] = 100; /* claims more than it holds */
    ck_assert_int_eq(kp_decompress(KP_CODEC_SNAPPY, (uint8_t *)raw, zlen, MIB, 0, &arena, &out, &olen), KP_ERR_CORRUPT);
    raw[0] = 10; /* claims less */
    ck_assert_int_eq(kp_decompress(KP_CODEC_SNAPPY, (uint8_t *)raw, zlen, MIB, 0, &arena, &out, &olen), KP_ERR_CORRUPT);
    raw[0] = 0x7f;
    ck_assert_int_eq(kp_decompress(KP_CODEC_SNAPPY, (uint8_t *)raw, zlen, 100, 0, &arena, &out, &olen), KP_ERR_TOO_LARGE);
    ck_assert_uint_le(arena.used_bytes - before, 256); /* nothing big was allocated */
    /* zstd: a frame with a content size over the cap is refused up front */
    uint8_t *big = calloc(1, 4 * MIB);
    size_t zb = ZSTD_compressBound(4 * MIB);
    uint8_t *z = malloc(zb);
    zb = ZSTD_compress(z, zb, big, 4 * MIB, 1);
    ck_assert(!ZSTD_isError(zb));
    ck_assert_uint_eq(ZSTD_getFrameContentSize(z, zb), 4 * MIB);
    before = arena.used_bytes;
    ck_assert_int_eq(kp_decompress(KP_CODEC_ZSTD, z, zb, MIB, 0, &arena, &out, &olen), KP_ERR_TOO_LARGE);
    ck_assert_uint_eq(arena.used_bytes, before);
    ck_assert_int_eq(kp_decompress(KP_CODEC_ZSTD, z, zb, 4 * MIB, 0, &arena, &out, &olen), KP_OK);
    ck_assert_uint_eq(olen, 4 * MIB);
    ck_assert_mem_eq(out, big, 4 * MIB);
    free(z);
    free(big);
}
END_TEST

/* An lz4 frame made by liblz4 with other settings than ours. */
static size_t lz4_frame(const uint8_t *src, size_t n, uint8_t **out, bool checksums, bool linked) {
    LZ4F_preferences_t p;
    memset(&p, 0, sizeof p);
    p.frameInfo.blockSizeID = linked ? LZ4F_max64KB : LZ4F_max256KB; /* one block would be made independent */
    p.frameInfo.blockMode = linked ? LZ4F_blockLinked : LZ4F_blockIndependent;
    p.frameInfo.contentChecksumFlag = checksums ? LZ4F_contentChecksumEnabled : LZ4F_noContentChecksum;
    p.frameInfo.blockChecksumFlag = checksums ? LZ4F_blockChecksumEnabled : LZ4F_noBlockChecksum;
    p.frameInfo.contentSize = checksums ? n : 0;
    size_t bound = LZ4F_compressFrameBound(n, &p);
    *out = malloc(bound);
    size_t r = LZ4F_compressFrame(*out, bound, src, n, &p);
    ck_assert(!LZ4F_isError(r));
    return r;
}

START_TEST(test_lz4_other_writers_and_legacy_checksum) {
    size_t n = 200000;
    uint8_t *src = sample(n, 8);
    const uint8_t *out;
    size_t olen;
    for (int v = 0; v < 3; v++) {
        uint8_t *f;
        size_t flen = lz4_frame(src, n, &f, v == 1, v == 2);
        if (v == 2) { /* linked blocks: Kafka cannot read them, so neither do we */
            ck_assert_int_eq(kp_decompress(KP_CODEC_LZ4, f, flen, n, 0, &arena, &out, &olen), KP_ERR_CORRUPT);
            free(f);
            continue;
        }
        ck_assert_int_eq(kp_decompress(KP_CODEC_LZ4, f, flen, n, 0, &arena, &out, &olen), KP_OK);
        ck_assert_uint_eq(olen, n);
        ck_assert_mem_eq(out, src, n);
        if (v == 1) { /* a damaged content checksum is caught */
            f[flen - 1] ^= 1;
            ck_assert_int_eq(kp_decompress(KP_CODEC_LZ4, f, flen, n, 0, &arena, &out, &olen), KP_ERR_CORRUPT);
        }
        free(f);
    }
    /* a wrong header checksum: corrupt for v1/v2 data, ignored for magic 0 */
    uint8_t *f;
    size_t flen = lz4_frame(src, n, &f, false, false);
    size_t hc_pos = 4 + 2; /* magic, FLG, BD: no content size here */
    f[hc_pos] ^= 0x5a;
    ck_assert_int_eq(kp_decompress(KP_CODEC_LZ4, f, flen, n, 0, &arena, &out, &olen), KP_ERR_CORRUPT);
    ck_assert_int_eq(kp_decompress(KP_CODEC_LZ4, f, flen, n, KP_DECOMP_LZ4_LEGACY_HC, &arena, &out, &olen), KP_OK);
    ck_assert_uint_eq(olen, n);
    ck_assert_mem_eq(out, src, n);
    /* the legacy path still rejects a bad magic and a cut header */
    ck_assert_int_eq(kp_decompress(KP_CODEC_LZ4, f, 6, n, KP_DECOMP_LZ4_LEGACY_HC, &arena, &out, &olen), KP_ERR_CORRUPT);
    f[0] ^= 1;
    ck_assert_int_eq(kp_decompress(KP_CODEC_LZ4, f, flen, n, KP_DECOMP_LZ4_LEGACY_HC, &arena, &out, &olen), KP_ERR_CORRUPT);
    free(f);
    free(src);
}
END_TEST

START_TEST(test_multi_member_gzip_multi_frame_zstd_single_frame_lz4) {
    const char *a = "first part, ", *b = "second part";
    size_t la = strlen(a), lb = strlen(b);
    const uint8_t *za, *zb, *out;
    size_t zla, zlb, olen;
    for (int k = 0; k < 3; k++) {
        kp_codec_t c = k == 2 ? KP_CODEC_LZ4 : k ? KP_CODEC_ZSTD : KP_CODEC_GZIP;
        ck_assert_int_eq(kp_compress(c, (const uint8_t *)a, la, &arena, &za, &zla), KP_OK);
        ck_assert_int_eq(kp_compress(c, (const uint8_t *)b, lb, &arena, &zb, &zlb), KP_OK);
        uint8_t *both = malloc(zla + zlb);
        memcpy(both, za, zla);
        memcpy(both + zla, zb, zlb);
        if (c == KP_CODEC_LZ4) { /* Kafka reads one lz4 frame only */
            ck_assert_int_eq(kp_decompress(c, both, zla + zlb, 100, 0, &arena, &out, &olen), KP_ERR_CORRUPT);
            free(both);
            continue;
        }
        ck_assert_int_eq(kp_decompress(c, both, zla + zlb, 100, 0, &arena, &out, &olen), KP_OK);
        ck_assert_uint_eq(olen, la + lb);
        ck_assert_mem_eq(out, "first part, second part", la + lb);
        free(both);
    }
    /* a zlib (not gzip) stream is not what Kafka sends */
    uLongf zl = compressBound(la);
    uint8_t zbuf[128];
    zl = sizeof zbuf;
    ck_assert_int_eq(compress(zbuf, &zl, (const Bytef *)a, la), Z_OK);
    ck_assert_int_eq(kp_decompress(KP_CODEC_GZIP, zbuf, zl, 100, 0, &arena, &out, &olen), KP_ERR_CORRUPT);
}
END_TEST

START_TEST(test_codec_names) {
    ck_assert_str_eq(kp_codec_name(KP_CODEC_NONE), "none");
    ck_assert_str_eq(kp_codec_name(KP_CODEC_ZSTD), "zstd");
    ck_assert_str_eq(kp_codec_name((kp_codec_t)9), "unknown");
}
END_TEST

int main(void) {
    Suite *s = suite_create("compress");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_round_trip_every_codec_and_size);
    tcase_add_test(tc, test_compression_bomb_hits_cap);
    tcase_add_test(tc, test_garbage_is_an_error);
    tcase_add_test(tc, test_truncated_stream_is_an_error);
    tcase_add_test(tc, test_snappy_raw_and_xerial);
    tcase_add_test(tc, test_declared_sizes);
    tcase_add_test(tc, test_lz4_other_writers_and_legacy_checksum);
    tcase_add_test(tc, test_multi_member_gzip_multi_frame_zstd_single_frame_lz4);
    tcase_add_test(tc, test_codec_names);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
