/* compress.c — codec dispatch, the bounded output buffer, kp_batch_records. */
#include "protocol/kp_compress.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/compress_int.h"

#define GBUF_FIRST_BYTES ((size_t)64 << 10)

void kp_gbuf_init(kp_gbuf_t *g, size_t limit) {
    g->p = NULL;
    g->len = 0;
    g->alloc = 0;
    g->limit = limit;
    g->probe = 0;
    g->fixed = false;
}

void kp_gbuf_init_fixed(kp_gbuf_t *g, uint8_t *p, size_t size) {
    g->p = p;
    g->len = 0;
    g->alloc = size;
    g->limit = size;
    g->probe = 0;
    g->fixed = true;
}

int kp_gbuf_reserve(kp_gbuf_t *g, size_t want) {
    if (g->alloc - g->len >= want && g->alloc > g->len) return KP_OK;
    if (g->len >= g->limit) return KP_ERR_TOO_LARGE;
    if (g->fixed) return KP_OK; /* room left, just not grown: callers check sizes */
    size_t need = g->len + (want ? want : 1);
    if (need < g->len || need > g->limit) need = g->limit;
    size_t size = g->alloc ? g->alloc : GBUF_FIRST_BYTES;
    while (size < need && size <= SIZE_MAX / 2) size *= 2;
    if (size > g->limit) size = g->limit;
    if (size < need) size = need;
    if (size <= g->alloc) return KP_OK;
    uint8_t *p = realloc(g->p, size);
    if (p == NULL) return KP_ERR_NOMEM;
    g->p = p;
    g->alloc = size;
    return KP_OK;
}

int kp_gbuf_window(kp_gbuf_t *g, size_t want, uint8_t **dst, size_t *room) {
    if (g->len >= g->limit) {
        *dst = &g->probe;
        *room = 1;
        return KP_OK;
    }
    int rc = kp_gbuf_reserve(g, want);
    if (rc) return rc;
    *dst = g->p + g->len;
    *room = g->alloc - g->len;
    return KP_OK;
}

int kp_gbuf_commit(kp_gbuf_t *g, const uint8_t *dst, size_t produced) {
    if (dst == &g->probe) return produced ? KP_ERR_TOO_LARGE : KP_OK;
    assert(produced <= g->alloc - g->len);
    g->len += produced;
    return KP_OK;
}

int kp_gbuf_to_arena(kp_gbuf_t *g, kp_arena_t *a, const uint8_t **out, size_t *out_len) {
    uint8_t *dst = kp_arena_alloc(a, g->len ? g->len : 1);
    if (dst == NULL) {
        kp_gbuf_free(g);
        return KP_ERR_NOMEM;
    }
    if (g->len) memcpy(dst, g->p, g->len);
    *out = dst;
    *out_len = g->len;
    kp_gbuf_free(g);
    return KP_OK;
}

void kp_gbuf_free(kp_gbuf_t *g) {
    if (!g->fixed) free(g->p);
    g->p = NULL;
    g->len = g->alloc = 0;
}

const char *kp_codec_name(kp_codec_t codec) {
    switch (codec) {
    case KP_CODEC_NONE: return "none";
    case KP_CODEC_GZIP: return "gzip";
    case KP_CODEC_SNAPPY: return "snappy";
    case KP_CODEC_LZ4: return "lz4";
    case KP_CODEC_ZSTD: return "zstd";
    }
    return "unknown";
}

int kp_compress(kp_codec_t codec, const uint8_t *src, size_t n, kp_arena_t *a, const uint8_t **out,
                size_t *out_len) {
    switch (codec) {
    case KP_CODEC_GZIP: return kp_gzip_compress(src, n, a, out, out_len);
    case KP_CODEC_SNAPPY: return kp_snappy_compress(src, n, a, out, out_len);
    case KP_CODEC_LZ4: return kp_lz4_compress(src, n, a, out, out_len);
    case KP_CODEC_ZSTD: return kp_zstd_compress(src, n, a, out, out_len);
    case KP_CODEC_NONE: break;
    }
    return KP_ERR_UNSUPPORTED;
}

/* A guess of the output size, so that the buffer is allocated once rather
 * than grown by doubling (each growth copies and touches fresh pages). Only
 * a hint: it is clamped to the cap, and a wrong one costs a realloc. Large
 * untouched allocations cost no page faults, so erring high is cheap. */
static size_t size_hint(kp_codec_t codec, const uint8_t *src, size_t n) {
    if (codec == KP_CODEC_GZIP && n >= 18) /* ISIZE trailer: length mod 2^32 */
        return (size_t)src[n - 4] | (size_t)src[n - 3] << 8 | (size_t)src[n - 2] << 16 | (size_t)src[n - 1] << 24;
    return n <= SIZE_MAX / 8 ? 8 * n : n;
}

/* When the stream declares its output size: refuse a bomb before any work,
 * and otherwise decode straight into an arena block of that size (no
 * growing buffer, no copy). KP_ERR_UNSUPPORTED = size not declared. */
static int decompress_declared(kp_codec_t codec, const uint8_t *src, size_t n, size_t cap_bytes, kp_arena_t *a,
                               const uint8_t **out, size_t *out_len) {
    size_t size = 0;
    int rc = KP_ERR_UNSUPPORTED;
    if (codec == KP_CODEC_SNAPPY) rc = kp_snappy_declared_size(src, n, &size);
    else if (codec == KP_CODEC_ZSTD) rc = kp_zstd_declared_size(src, n, &size);
    if (rc) return rc;
    if (size > cap_bytes) return KP_ERR_TOO_LARGE;
    uint8_t *p = kp_arena_alloc(a, size ? size : 1);
    if (p == NULL) return KP_ERR_NOMEM;
    kp_gbuf_t g;
    kp_gbuf_init_fixed(&g, p, size);
    rc = codec == KP_CODEC_SNAPPY ? kp_snappy_decompress(src, n, &g) : kp_zstd_decompress(src, n, &g);
    if (rc == KP_OK && g.len != size) rc = KP_ERR_CORRUPT;
    if (rc) return rc == KP_ERR_TOO_LARGE ? KP_ERR_CORRUPT : rc; /* more than declared */
    *out = p;
    *out_len = size;
    return KP_OK;
}

int kp_decompress(kp_codec_t codec, const uint8_t *src, size_t n, size_t cap_bytes, unsigned flags,
                  kp_arena_t *a, const uint8_t **out, size_t *out_len) {
    int drc = decompress_declared(codec, src, n, cap_bytes, a, out, out_len);
    if (drc != KP_ERR_UNSUPPORTED) return drc;
    kp_gbuf_t g;
    kp_gbuf_init(&g, cap_bytes);
    kp_tls_gbuf_take(&g);           /* this thread's kept buffer, if any (compress_tls.c) */
    int rc;
    size_t hint = size_hint(codec, src, n);
    if (hint > cap_bytes) hint = cap_bytes;
    if (hint > 0 && (rc = kp_gbuf_reserve(&g, hint + 1 <= cap_bytes ? hint + 1 : hint)) != KP_OK) {
        kp_tls_gbuf_give(&g);
        return rc;
    }
    switch (codec) {
    case KP_CODEC_GZIP: rc = kp_gzip_decompress(src, n, &g); break;
    case KP_CODEC_SNAPPY: rc = kp_snappy_decompress(src, n, &g); break;
    case KP_CODEC_LZ4: rc = kp_lz4_decompress(src, n, flags, &g); break;
    case KP_CODEC_ZSTD: rc = kp_zstd_decompress(src, n, &g); break;
    default: rc = KP_ERR_UNSUPPORTED; break;
    }
    if (rc != KP_OK) {
        kp_tls_gbuf_give(&g);
        return rc;
    }
    assert(g.len <= cap_bytes);
    /* copied into the arena (the caller's lifetime); the buffer stays with
     * this thread for the next stream */
    uint8_t *dst = kp_arena_alloc(a, g.len ? g.len : 1);
    if (dst && g.len) memcpy(dst, g.p, g.len);
    *out = dst;
    *out_len = g.len;
    kp_tls_gbuf_give(&g);
    return dst ? KP_OK : KP_ERR_NOMEM;
}

int kp_batch_records(const kp_batch_t *b, kp_arena_t *a, size_t cap_bytes, const uint8_t **records,
                     size_t *len) {
    assert(b->size >= KP_BATCH_HEADER_BYTES);
    const uint8_t *sec = b->data + KP_BATCH_HEADER_BYTES;
    size_t sec_len = b->size - KP_BATCH_HEADER_BYTES;
    if (kp_batch_codec(b) == KP_CODEC_NONE) {
        *records = sec;
        *len = sec_len;
        return KP_OK;
    }
    return kp_decompress(kp_batch_codec(b), sec, sec_len, cap_bytes, 0, a, records, len);
}
