/* compress_tls.c — per-thread decompression state kept across calls.
 *
 * A produced compressed batch used to cost each time: the library's context
 * (LZ4F_dctx, ZSTD_DCtx, zlib's inflate state and window) created and freed,
 * and the growing output buffer malloc'd and freed (codecs whose stream
 * does not declare its size). A broker decompresses on a few long-lived
 * threads (the state loop; the network threads once they run the prepare
 * hook), so each thread keeps one of each: created on first use, reset
 * before each stream, freed when the thread exits (a pthread key's
 * destructor; the main thread's stays until exit, reachable from its TLS).
 * The output buffer is kept up to KP_TLS_BUF_RETAIN_BYTES. */
#include <lz4frame.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "protocol/compress_int.h"

#define KP_TLS_BUF_RETAIN_BYTES ((size_t)8 << 20)

typedef struct {
    LZ4F_dctx *lz4;
    ZSTD_DCtx *zstd;
    z_stream z;
    bool z_ready;          /* inflateInit2 done */
    uint8_t *buf;          /* a kept gbuf, or NULL (lent out) */
    size_t buf_alloc;
} tls_t;

static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool key_ok;
static __thread tls_t *tl;

static void tls_free(void *p) {
    tls_t *t = p;
    if (!t) return;
    if (t->lz4) LZ4F_freeDecompressionContext(t->lz4);
    if (t->zstd) ZSTD_freeDCtx(t->zstd);
    if (t->z_ready) inflateEnd(&t->z);
    free(t->buf);
    free(t);
    tl = NULL;
}

static void key_init(void) { key_ok = pthread_key_create(&key, tls_free) == 0; }

static tls_t *tls_get(void) {
    if (tl) return tl;
    if (pthread_once(&once, key_init) != 0 || !key_ok) return NULL;
    tls_t *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    if (pthread_setspecific(key, t) != 0) {
        free(t);
        return NULL;
    }
    tl = t;
    return t;
}

LZ4F_dctx *kp_tls_lz4_dctx(void) {
    tls_t *t = tls_get();
    if (!t) return NULL;
    if (!t->lz4 && LZ4F_isError(LZ4F_createDecompressionContext(&t->lz4, LZ4F_VERSION))) {
        t->lz4 = NULL;
        return NULL;
    }
    LZ4F_resetDecompressionContext(t->lz4);   /* a previous stream may have stopped half way */
    return t->lz4;
}

ZSTD_DCtx *kp_tls_zstd_dctx(void) {
    tls_t *t = tls_get();
    if (!t) return NULL;
    if (!t->zstd && !(t->zstd = ZSTD_createDCtx())) return NULL;
    if (ZSTD_isError(ZSTD_DCtx_reset(t->zstd, ZSTD_reset_session_only))) return NULL;
    return t->zstd;
}

z_stream *kp_tls_gzip_inflate(void) {
    tls_t *t = tls_get();
    if (!t) return NULL;
    if (!t->z_ready) {
        memset(&t->z, 0, sizeof t->z);
        if (inflateInit2(&t->z, 15 + 16) != Z_OK) return NULL;
        t->z_ready = true;
    } else if (inflateReset2(&t->z, 15 + 16) != Z_OK) {
        return NULL;
    }
    return &t->z;
}

void kp_tls_gbuf_take(kp_gbuf_t *g) {
    tls_t *t = tls_get();
    if (!t || !t->buf || g->p) return;
    g->p = t->buf;
    g->alloc = t->buf_alloc < g->limit ? t->buf_alloc : g->limit;   /* never past the cap */
    t->buf = NULL;
    t->buf_alloc = 0;
}

void kp_tls_gbuf_give(kp_gbuf_t *g) {
    tls_t *t = tls_get();
    if (g->fixed || !g->p) return;
    if (t && !t->buf && g->alloc <= KP_TLS_BUF_RETAIN_BYTES) {
        t->buf = g->p;
        t->buf_alloc = g->alloc;
    } else {
        free(g->p);
    }
    g->p = NULL;
    g->len = g->alloc = 0;
}
