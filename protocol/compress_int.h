/* compress_int.h — internals shared by the codec files (not a public header).
 *
 * kp_gbuf_t is a malloc'd output buffer that grows by doubling but never past
 * `limit` bytes: the codecs decompress into it, and kp_gbuf_to_arena hands
 * the result to the caller's arena and frees it.
 */
#ifndef SKIFF_COMPRESS_INT_H
#define SKIFF_COMPRESS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_arena.h"
#include "protocol/kp_wire.h"

typedef struct kp_gbuf {
    uint8_t *p;
    size_t len;       /* bytes written */
    size_t alloc;     /* bytes allocated */
    size_t limit;     /* hard cap on len */
    uint8_t probe;    /* 1-byte window offered once len == limit */
    bool fixed;       /* p is the caller's memory of exactly `limit` bytes */
} kp_gbuf_t;

void kp_gbuf_init(kp_gbuf_t *g, size_t limit);
/* A buffer over caller memory (e.g. an arena block sized from a declared
 * output length): never grown or freed; output past its size is refused
 * (kp_decompress reports it as KP_ERR_CORRUPT: the stream lied). */
void kp_gbuf_init_fixed(kp_gbuf_t *g, uint8_t *p, size_t size);
/* Makes room for at least `want` more bytes (fewer if the limit is near, but
 * at least 1); KP_ERR_TOO_LARGE when len == limit, KP_ERR_NOMEM on malloc. */
KP_MUST_CHECK int kp_gbuf_reserve(kp_gbuf_t *g, size_t want);
static inline size_t kp_gbuf_room(const kp_gbuf_t *g) { return g->alloc - g->len; }
/* Output window for one library call: normally free space of the buffer
 * (grown by up to `want`); once the buffer holds `limit` bytes, the 1-byte
 * probe, so that a library can still report "end of stream" with no output.
 * kp_gbuf_commit then fails with KP_ERR_TOO_LARGE if the probe was written. */
KP_MUST_CHECK int kp_gbuf_window(kp_gbuf_t *g, size_t want, uint8_t **dst, size_t *room);
KP_MUST_CHECK int kp_gbuf_commit(kp_gbuf_t *g, const uint8_t *dst, size_t produced);
/* Copies the contents into the arena, then frees the buffer. */
KP_MUST_CHECK int kp_gbuf_to_arena(kp_gbuf_t *g, kp_arena_t *a, const uint8_t **out, size_t *out_len);
void kp_gbuf_free(kp_gbuf_t *g);

/* Per-thread decompression state (compress_tls.c): the library contexts,
 * reset and ready for a new stream (NULL when one cannot be had: the
 * caller makes its own), and a kept output buffer lent to a kp_gbuf_t
 * (take: into an empty gbuf; give: back, or freed past the retained
 * size). */
struct LZ4F_dctx_s;
struct ZSTD_DCtx_s;
struct z_stream_s;
struct LZ4F_dctx_s *kp_tls_lz4_dctx(void);
struct ZSTD_DCtx_s *kp_tls_zstd_dctx(void);
struct z_stream_s *kp_tls_gzip_inflate(void);
void kp_tls_gbuf_take(kp_gbuf_t *g);
void kp_tls_gbuf_give(kp_gbuf_t *g);

/* Per codec (flags as in kp_decompress). Output: a filled kp_gbuf_t. */
KP_MUST_CHECK int kp_gzip_compress(const uint8_t *src, size_t n, kp_arena_t *a, const uint8_t **out, size_t *len);
KP_MUST_CHECK int kp_gzip_decompress(const uint8_t *src, size_t n, kp_gbuf_t *g);
KP_MUST_CHECK int kp_snappy_compress(const uint8_t *src, size_t n, kp_arena_t *a, const uint8_t **out, size_t *len);
KP_MUST_CHECK int kp_snappy_decompress(const uint8_t *src, size_t n, kp_gbuf_t *g);
KP_MUST_CHECK int kp_lz4_compress(const uint8_t *src, size_t n, kp_arena_t *a, const uint8_t **out, size_t *len);
KP_MUST_CHECK int kp_lz4_decompress(const uint8_t *src, size_t n, unsigned flags, kp_gbuf_t *g);
KP_MUST_CHECK int kp_zstd_compress(const uint8_t *src, size_t n, kp_arena_t *a, const uint8_t **out, size_t *len);
KP_MUST_CHECK int kp_zstd_decompress(const uint8_t *src, size_t n, kp_gbuf_t *g);

/* The exact output size when the stream declares it (raw or xerial snappy; a
 * single zstd frame with a content size): KP_OK and *size, else
 * KP_ERR_UNSUPPORTED (unknown, or malformed: the decoder will say which). */
KP_MUST_CHECK int kp_snappy_declared_size(const uint8_t *src, size_t n, size_t *size);
KP_MUST_CHECK int kp_zstd_declared_size(const uint8_t *src, size_t n, size_t *size);

#endif
