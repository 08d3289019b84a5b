/* compress_snappy.c — snappy, raw and in the xerial (snappy-java) framing.
 *
 * xerial: 16-byte header (magic 82 'SNAPPY' 00, INT32 version, INT32
 * min-compatible version), then blocks of INT32 big-endian length + one raw
 * snappy block. We write it (32 KiB input blocks, like SnappyOutputStream)
 * because every Kafka client reads it; we read it or a single raw block
 * (librdkafka), told apart by the magic as snappy-java does. */
#include <snappy-c.h>
#include <string.h>

#include "protocol/compress_int.h"

#define XERIAL_HEADER_BYTES 16
#define XERIAL_BLOCK_BYTES ((size_t)32 << 10)

static const uint8_t xerial_magic[8] = { 0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0 };

int kp_snappy_compress(const uint8_t *src, size_t n, kp_arena_t *a, const uint8_t **out, size_t *len) {
    size_t blocks = (n + XERIAL_BLOCK_BYTES - 1) / XERIAL_BLOCK_BYTES;
    size_t bound = XERIAL_HEADER_BYTES + blocks * (4 + snappy_max_compressed_length(XERIAL_BLOCK_BYTES));
    uint8_t *dst = kp_arena_alloc(a, bound);
    if (dst == NULL) return KP_ERR_NOMEM;
    memcpy(dst, xerial_magic, sizeof xerial_magic);
    kp_store_be32(dst + 8, 1);
    kp_store_be32(dst + 12, 1);
    size_t pos = XERIAL_HEADER_BYTES;
    for (size_t off = 0; off < n; off += XERIAL_BLOCK_BYTES) {
        size_t in = n - off < XERIAL_BLOCK_BYTES ? n - off : XERIAL_BLOCK_BYTES;
        size_t clen = bound - pos - 4;
        if (snappy_compress((const char *)src + off, in, (char *)dst + pos + 4, &clen) != SNAPPY_OK)
            return KP_ERR_NOMEM;
        kp_store_be32(dst + pos, (uint32_t)clen);
        pos += 4 + clen;
    }
    *out = dst;
    *len = pos;
    return KP_OK;
}

/* One raw snappy block appended to g. */
static int raw_block(const uint8_t *src, size_t n, kp_gbuf_t *g) {
    size_t ulen = 0;
    if (snappy_uncompressed_length((const char *)src, n, &ulen) != SNAPPY_OK) return KP_ERR_CORRUPT;
    if (ulen > g->limit - g->len) return KP_ERR_TOO_LARGE;
    if (ulen == 0) return snappy_validate_compressed_buffer((const char *)src, n) == SNAPPY_OK ? KP_OK
                                                                                                : KP_ERR_CORRUPT;
    int rc = kp_gbuf_reserve(g, ulen);
    if (rc) return rc;
    size_t got = ulen;
    if (snappy_uncompress((const char *)src, n, (char *)g->p + g->len, &got) != SNAPPY_OK || got != ulen)
        return KP_ERR_CORRUPT;
    g->len += got;
    return KP_OK;
}

int kp_snappy_decompress(const uint8_t *src, size_t n, kp_gbuf_t *g) {
    if (n < XERIAL_HEADER_BYTES || memcmp(src, xerial_magic, sizeof xerial_magic) != 0)
        return raw_block(src, n, g);
    kp_rd_t r;
    kp_rd_init(&r, src + XERIAL_HEADER_BYTES, n - XERIAL_HEADER_BYTES);
    while (kp_rd_remaining(&r) > 0) {
        int32_t blen = 0;
        kp_slice_t block;
        if (kp_rd_i32(&r, &blen) || blen < 0 || kp_rd_raw(&r, (size_t)blen, &block)) return KP_ERR_CORRUPT;
        int rc = raw_block(block.p, block.len, g);
        if (rc) return rc;
    }
    return KP_OK;
}

int kp_snappy_declared_size(const uint8_t *src, size_t n, size_t *size) {
    size_t ulen = 0;
    if (n < XERIAL_HEADER_BYTES || memcmp(src, xerial_magic, sizeof xerial_magic) != 0) {
        if (snappy_uncompressed_length((const char *)src, n, &ulen) != SNAPPY_OK) return KP_ERR_UNSUPPORTED;
        *size = ulen;
        return KP_OK;
    }
    kp_rd_t r;
    size_t total = 0;
    kp_rd_init(&r, src + XERIAL_HEADER_BYTES, n - XERIAL_HEADER_BYTES);
    while (kp_rd_remaining(&r) > 0) {
        int32_t blen = 0;
        kp_slice_t block;
        if (kp_rd_i32(&r, &blen) || blen < 0 || kp_rd_raw(&r, (size_t)blen, &block)) return KP_ERR_UNSUPPORTED;
        if (snappy_uncompressed_length((const char *)block.p, block.len, &ulen) != SNAPPY_OK) return KP_ERR_UNSUPPORTED;
        if (total + ulen < total) return KP_ERR_UNSUPPORTED;
        total += ulen;
    }
    *size = total;
    return KP_OK;
}
