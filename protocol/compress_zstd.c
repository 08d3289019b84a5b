/* compress_zstd.c — zstd frames via the streaming API (several frames are
 * read one after another; the window size stays under libzstd's default
 * limit, so a hostile header cannot ask for more than 128 MiB of window). */
#include <zstd.h>
#include <zstd_errors.h>

#include "protocol/compress_int.h"

#define STEP_BYTES ((size_t)64 << 10)
#define ZSTD_LEVEL 3

int kp_zstd_compress(const uint8_t *src, size_t n, kp_arena_t *a, const uint8_t **out, size_t *len) {
    size_t bound = ZSTD_compressBound(n);
    uint8_t *dst = kp_arena_alloc(a, bound);
    if (dst == NULL) return KP_ERR_NOMEM;
    size_t r = ZSTD_compress(dst, bound, src, n, ZSTD_LEVEL);
    if (ZSTD_isError(r)) return KP_ERR_NOMEM;
    *out = dst;
    *len = r;
    return KP_OK;
}

int kp_zstd_decompress(const uint8_t *src, size_t n, kp_gbuf_t *g) {
    ZSTD_DCtx *d = kp_tls_zstd_dctx();     /* this thread's, reset */
    bool own = d == NULL;
    if (own && (d = ZSTD_createDCtx()) == NULL) return KP_ERR_NOMEM;
    ZSTD_inBuffer in = { src, n, 0 };
    size_t hint = 1;
    int rc = KP_OK;
    for (;;) {
        uint8_t *dst;
        size_t room;
        if ((rc = kp_gbuf_window(g, STEP_BYTES, &dst, &room))) break;
        ZSTD_outBuffer o = { dst, room, 0 };
        hint = ZSTD_decompressStream(d, &o, &in);
        if (ZSTD_isError(hint)) {
            rc = ZSTD_getErrorCode(hint) == ZSTD_error_memory_allocation ? KP_ERR_NOMEM : KP_ERR_CORRUPT;
            break;
        }
        if ((rc = kp_gbuf_commit(g, dst, o.pos))) break;
        if (in.pos == in.size && (o.pos < room || hint == 0)) break; /* 0: frame done and flushed */
    }
    if (rc == KP_OK && hint != 0) rc = KP_ERR_CORRUPT; /* truncated frame */
    if (own) ZSTD_freeDCtx(d);
    return rc;
}

int kp_zstd_declared_size(const uint8_t *src, size_t n, size_t *size) {
    unsigned long long cs = ZSTD_getFrameContentSize(src, n);
    if (cs == ZSTD_CONTENTSIZE_UNKNOWN || cs == ZSTD_CONTENTSIZE_ERROR || cs > SIZE_MAX) return KP_ERR_UNSUPPORTED;
    size_t frame = ZSTD_findFrameCompressedSize(src, n);
    if (ZSTD_isError(frame) || frame != n) return KP_ERR_UNSUPPORTED; /* several frames: sum unknown */
    *size = (size_t)cs;
    return KP_OK;
}
