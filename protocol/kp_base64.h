/* kp_base64.h — base64 text (RFC 4648), the one codec of the tree: SASL/SCRAM
 * attributes and the bootstrap file (standard, padded), HTTP Basic
 * credentials (standard, padded), the admin console's record bytes
 * (standard), partition.metadata's topic id (URL-safe, unpadded: Kafka's
 * Uuid text).
 *
 * Pure, no allocation. Decoding reads external text through explicit
 * lengths only and is strict, so each byte string has exactly one text:
 * no whitespace, no characters of the other alphabet, padding only where
 * RFC 4648 puts it (and required for the standard form), the bits that
 * padding drops zero (RFC 4648 3.5 lets a decoder refuse others). Work is
 * linear in the text; output never passes `cap`.
 *
 * Statuses: KP_OK; KP_ERR_BAD_VALUE for malformed text; KP_ERR_OVERFLOW when
 * `cap` is short (the output then holds a prefix of the result).
 */
#ifndef SKIFF_KP_BASE64_H
#define SKIFF_KP_BASE64_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"

/* Text length of n bytes: padded standard form / unpadded URL form (no NUL). */
#define KP_B64_LEN(n) ((((size_t)(n) + 2) / 3) * 4)
#define KP_B64URL_LEN(n) (((size_t)(n) / 3) * 4 + ((size_t)(n) % 3 ? (size_t)(n) % 3 + 1 : 0))

/* Standard alphabet ('+', '/'), '=' padding. Writes the text and a NUL:
 * cap >= KP_B64_LEN(len) + 1 or KP_ERR_OVERFLOW (nothing written).
 * *out_len excludes the NUL. */
KP_MUST_CHECK int kp_b64_encode(const uint8_t *in, size_t len, char *out, size_t cap, size_t *out_len);
/* Decodes padded standard text in[0..len) (len a multiple of 4; "" is the
 * empty string) into out[0..cap); *out_len = bytes written. */
KP_MUST_CHECK int kp_b64_decode(const char *in, size_t len, uint8_t *out, size_t cap, size_t *out_len);

/* URL-safe alphabet ('-', '_'), no padding; otherwise as above
 * (cap >= KP_B64URL_LEN(len) + 1; a text whose length is 1 mod 4 is malformed). */
KP_MUST_CHECK int kp_b64url_encode(const uint8_t *in, size_t len, char *out, size_t cap, size_t *out_len);
KP_MUST_CHECK int kp_b64url_decode(const char *in, size_t len, uint8_t *out, size_t cap, size_t *out_len);

#endif
