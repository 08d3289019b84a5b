/* compress_gzip.c — gzip via zlib. Several concatenated members are read
 * (java.util.zip.GZIPInputStream does the same); bytes after the last member
 * are corruption. */
#include <limits.h>
#include <zlib.h>

#include "protocol/compress_int.h"

#define STEP_BYTES ((size_t)64 << 10)

int kp_gzip_compress(const uint8_t *src, size_t n, kp_arena_t *a, const uint8_t **out, size_t *len) {
    if (n > UINT_MAX / 2) return KP_ERR_TOO_LARGE;
    z_stream z = { 0 };
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return KP_ERR_NOMEM;
    uLong bound = deflateBound(&z, (uLong)n);
    uint8_t *dst = kp_arena_alloc(a, bound);
    if (dst == NULL) {
        deflateEnd(&z);
        return KP_ERR_NOMEM;
    }
    z.next_in = (Bytef *)(uintptr_t)src;
    z.avail_in = (uInt)n;
    z.next_out = dst;
    z.avail_out = (uInt)bound;
    int zr = deflate(&z, Z_FINISH);
    size_t produced = z.total_out;
    deflateEnd(&z);
    if (zr != Z_STREAM_END) return KP_ERR_NOMEM;
    *out = dst;
    *len = produced;
    return KP_OK;
}

int kp_gzip_decompress(const uint8_t *src, size_t n, kp_gbuf_t *g) {
    if (n > UINT_MAX / 2) return KP_ERR_TOO_LARGE;
    z_stream zown = { 0 };
    z_stream *z = kp_tls_gzip_inflate();   /* this thread's, reset */
    bool own = z == NULL;
    if (own) {
        if (inflateInit2(&zown, 15 + 16) != Z_OK) return KP_ERR_NOMEM;
        z = &zown;
    }
    z->next_in = (Bytef *)(uintptr_t)src;
    z->avail_in = (uInt)n;
    int rc = KP_OK;
    for (;;) {
        uint8_t *dst;
        size_t room;
        if ((rc = kp_gbuf_window(g, STEP_BYTES, &dst, &room))) break;
        if (room > UINT_MAX / 2) room = UINT_MAX / 2;
        z->next_out = dst;
        z->avail_out = (uInt)room;
        int zr = inflate(z, Z_NO_FLUSH);
        if ((rc = kp_gbuf_commit(g, dst, room - z->avail_out))) break;
        if (zr == Z_STREAM_END) {
            if (z->avail_in == 0) break;
            if (inflateReset(z) != Z_OK) { rc = KP_ERR_CORRUPT; break; }
            continue;
        }
        if (zr == Z_OK) continue;
        if (zr == Z_BUF_ERROR && z->avail_in > 0 && z->avail_out == 0) continue;
        rc = zr == Z_MEM_ERROR ? KP_ERR_NOMEM : KP_ERR_CORRUPT; /* truncated or bad data */
        break;
    }
    if (own) inflateEnd(z);
    return rc;
}
