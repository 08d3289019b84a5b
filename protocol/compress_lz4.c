/* compress_lz4.c — LZ4 frame format via lz4frame.h.
 *
 * Written like Kafka's Lz4BlockOutputStream: 64 KiB independent blocks, no
 * content size, no content checksum. Read: exactly one frame, independent
 * blocks, no dictionary id (what Kafka can read); liblz4 checks the rest; the
 * one quirk we handle by hand is old Kafka's header checksum for magic-0
 * message sets (computed over the 4 magic bytes too). With
 * KP_DECOMP_LZ4_LEGACY_HC we do not check it: we hand liblz4 a copy of the
 * frame header carrying the correct checksum, then the rest of the input. */
#include <lz4frame.h>
#include <string.h>

#include "protocol/compress_int.h"
#include "protocol/kp_compress.h"

#define STEP_BYTES ((size_t)64 << 10)
#define LZ4_MAGIC 0x184D2204u
#define LZ4_MAX_HEADER_BYTES 19 /* magic 4 + FLG + BD + size 8 + dictID 4 + HC */

int kp_lz4_compress(const uint8_t *src, size_t n, kp_arena_t *a, const uint8_t **out, size_t *len) {
    LZ4F_preferences_t prefs;
    memset(&prefs, 0, sizeof prefs);
    prefs.frameInfo.blockSizeID = LZ4F_max64KB;
    prefs.frameInfo.blockMode = LZ4F_blockIndependent;
    prefs.frameInfo.contentChecksumFlag = LZ4F_noContentChecksum;
    size_t bound = LZ4F_compressFrameBound(n, &prefs);
    uint8_t *dst = kp_arena_alloc(a, bound);
    if (dst == NULL) return KP_ERR_NOMEM;
    size_t r = LZ4F_compressFrame(dst, bound, src, n, &prefs);
    if (LZ4F_isError(r)) return KP_ERR_NOMEM;
    *out = dst;
    *len = r;
    return KP_OK;
}

/* xxHash32 with seed 0 for inputs shorter than 16 bytes (a frame descriptor),
 * from the published xxHash specification. */
static uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
static uint32_t xxh32_short(const uint8_t *p, size_t n) {
    const uint32_t P1 = 2654435761u, P2 = 2246822519u, P3 = 3266489917u, P4 = 668265263u, P5 = 374761393u;
    uint32_t h = P5 + (uint32_t)n;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        uint32_t k = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16 | (uint32_t)p[i + 3] << 24;
        h = rotl32(h + k * P3, 17) * P4;
    }
    for (; i < n; i++) h = rotl32(h + p[i] * P5, 11) * P1;
    h ^= h >> 15;
    h *= P2;
    h ^= h >> 13;
    h *= P3;
    h ^= h >> 16;
    return h;
}

/* Kafka's reader (Lz4BlockInputStream) takes one frame with independent
 * blocks and no dictionary id; a frame it cannot read must not get into the
 * log, or Java consumers would fail on it later. liblz4 checks the rest. */
static int check_kafka_frame(const uint8_t *src, size_t n) {
    if (n < 5) return KP_ERR_CORRUPT;
    uint8_t flg = src[4];
    if (!(flg & 0x20) || (flg & 0x01)) return KP_ERR_CORRUPT;
    return KP_OK;
}

/* Copies the frame header into hdr with a recomputed checksum byte. */
static int fix_legacy_header(const uint8_t *src, size_t n, uint8_t hdr[LZ4_MAX_HEADER_BYTES], size_t *hdr_len) {
    if (n < 7) return KP_ERR_CORRUPT;
    uint32_t magic = (uint32_t)src[0] | (uint32_t)src[1] << 8 | (uint32_t)src[2] << 16 | (uint32_t)src[3] << 24;
    if (magic != LZ4_MAGIC) return KP_ERR_CORRUPT;
    uint8_t flg = src[4];
    size_t desc = 2 + ((flg & 0x08) ? 8 : 0) + ((flg & 0x01) ? 4 : 0);
    if (n < 4 + desc + 1) return KP_ERR_CORRUPT;
    memcpy(hdr, src, 4 + desc);
    hdr[4 + desc] = (uint8_t)(xxh32_short(src + 4, desc) >> 8);
    *hdr_len = 4 + desc + 1;
    return KP_OK;
}

/* Feeds all of src to the decoder; *hint = liblz4's last return (0 = frame done). */
static int feed(LZ4F_dctx *d, const uint8_t *src, size_t n, kp_gbuf_t *g, size_t *hint) {
    size_t pos = 0;
    for (;;) {
        uint8_t *dst;
        size_t room;
        int rc = kp_gbuf_window(g, STEP_BYTES, &dst, &room);
        if (rc) return rc;
        size_t out_n = room, in_n = n - pos;
        size_t r = LZ4F_decompress(d, dst, &out_n, src + pos, &in_n, NULL);
        if (LZ4F_isError(r)) return KP_ERR_CORRUPT;
        if ((rc = kp_gbuf_commit(g, dst, out_n))) return rc;
        pos += in_n;
        *hint = r;
        if (r == 0 && pos < n) return KP_ERR_CORRUPT; /* bytes after the frame */
        if (pos == n && (out_n < room || r == 0)) return KP_OK; /* 0: frame done and flushed */
    }
}

int kp_lz4_decompress(const uint8_t *src, size_t n, unsigned flags, kp_gbuf_t *g) {
    LZ4F_dctx *d = kp_tls_lz4_dctx();      /* this thread's, reset */
    bool own = d == NULL;
    if (own && LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION))) return KP_ERR_NOMEM;
    size_t hint = 1;
    int rc = check_kafka_frame(src, n);
    size_t skip = 0;
    if (rc == KP_OK && (flags & KP_DECOMP_LZ4_LEGACY_HC)) {
        uint8_t hdr[LZ4_MAX_HEADER_BYTES];
        rc = fix_legacy_header(src, n, hdr, &skip);
        if (rc == KP_OK) rc = feed(d, hdr, skip, g, &hint);
    }
    if (rc == KP_OK) rc = feed(d, src + skip, n - skip, g, &hint);
    if (rc == KP_OK && hint != 0) rc = KP_ERR_CORRUPT; /* frame not finished */
    if (own) LZ4F_freeDecompressionContext(d);
    return rc;
}
