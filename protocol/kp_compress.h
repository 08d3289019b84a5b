/* kp_compress.h — the four Kafka codecs over a batch's records section.
 *
 * Compression writes the libraries' own formats: gzip (zlib, gzip wrapper),
 * snappy in the xerial/snappy-java framing (what Java clients write; 32 KiB
 * blocks), lz4 frame (64 KiB independent blocks, no content checksum, as
 * Kafka's Lz4BlockOutputStream), zstd frame (level 3).
 *
 * Decompression accepts what real clients send: gzip (several members
 * allowed), snappy raw (librdkafka) or xerial-framed (detected by the magic),
 * one lz4 frame with independent blocks (Kafka's reader rejects linked
 * blocks, so we must not store them), zstd frames (several allowed).
 *
 * Every decompression takes `cap_bytes`, a hard cap on the output: input that
 * would expand past it fails with KP_ERR_TOO_LARGE before more than
 * cap_bytes (+ one library step) is ever allocated. Malformed input is
 * KP_ERR_CORRUPT. Output lives in the caller's arena (valid until the arena
 * is reset); temporary buffers are freed before return.
 */
#ifndef SKIFF_KP_COMPRESS_H
#define SKIFF_KP_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_arena.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_wire.h"

/* Decompression flags. */
#define KP_DECOMP_LZ4_LEGACY_HC 0x1 /* magic-0 message sets: lz4 header
                                     * checksum computed by old Kafka over the
                                     * magic too; it is not checked */

/* Compresses n bytes of src with `codec` (not KP_CODEC_NONE) into the arena.
 * out and out_len receive the compressed bytes. KP_ERR_NOMEM when the arena cap
 * is hit, KP_ERR_UNSUPPORTED for an unknown codec. */
KP_MUST_CHECK int kp_compress(kp_codec_t codec, const uint8_t *src, size_t n, kp_arena_t *a,
                              const uint8_t **out, size_t *out_len);

/* Decompresses n bytes of src into the arena, at most cap_bytes of output.
 * flags: KP_DECOMP_*. KP_ERR_TOO_LARGE past the cap, KP_ERR_CORRUPT for
 * malformed or truncated input or trailing garbage. */
KP_MUST_CHECK int kp_decompress(kp_codec_t codec, const uint8_t *src, size_t n, size_t cap_bytes,
                                unsigned flags, kp_arena_t *a, const uint8_t **out, size_t *out_len);

/* Name of a codec ("none", "gzip", ...), "unknown" otherwise. */
const char *kp_codec_name(kp_codec_t codec);

/* The records section of batch `b`, ready for kp_record_iter_init: for an
 * uncompressed batch a slice of the batch itself (no copy), otherwise the
 * decompressed bytes in arena `a` (at most cap_bytes). */
KP_MUST_CHECK int kp_batch_records(const kp_batch_t *b, kp_arena_t *a, size_t cap_bytes,
                                   const uint8_t **records, size_t *len);

#endif
