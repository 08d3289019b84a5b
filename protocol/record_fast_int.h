/* protocol/record_fast_int.h — private to batch.c and batch_validate.c: the
 * short-varint record decoding helpers of the fast paths (see "record fast
 * path" in batch.c). Each returns false, without moving *pp, on anything it
 * does not decode; the caller then leaves the record to the checked path. */
#ifndef SKIFF_KP_RECORD_FAST_INT_H
#define SKIFF_KP_RECORD_FAST_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"

/* Unsigned LEB128 of at most 3 bytes (21 bits): fits every varint and
 * varlong encoding without the over-long checks of rd_uleb. */
static inline bool fast_uleb3(const uint8_t **pp, const uint8_t *end, uint32_t *v) {
    const uint8_t *p = *pp;
    size_t n = (size_t)(end - p);
    if (n >= 1 && p[0] < 0x80) {
        *v = p[0];
        *pp = p + 1;
        return true;
    }
    if (n >= 2 && p[1] < 0x80) {
        *v = (uint32_t)(p[0] & 0x7f) | (uint32_t)p[1] << 7;
        *pp = p + 2;
        return true;
    }
    if (n >= 3 && p[1] >= 0x80 && p[2] < 0x80) {
        *v = (uint32_t)(p[0] & 0x7f) | (uint32_t)(p[1] & 0x7f) << 7 | (uint32_t)p[2] << 14;
        *pp = p + 3;
        return true;
    }
    return false;
}

/* zigzag of a value below 2^21: -2^20 .. 2^20 - 1 */
static inline int32_t unzigzag(uint32_t u) { return (int32_t)(u >> 1) ^ -(int32_t)(u & 1); }

/* A signed varint length and that many bytes; -1 is null when nullable. */
static inline bool fast_varbytes(const uint8_t **pp, const uint8_t *end, bool nullable, kp_bytes_t *out) {
    uint32_t u;
    const uint8_t *p = *pp;
    if (!fast_uleb3(&p, end, &u)) return false;
    int32_t n = unzigzag(u);
    if (n < 0) {
        if (n != -1 || !nullable) return false;
        *out = kp_slice_null();
        *pp = p;
        return true;
    }
    if ((size_t)n > (size_t)(end - p)) return false;
    out->p = p;
    out->len = (size_t)n;
    *pp = p + n;
    return true;
}

#endif
