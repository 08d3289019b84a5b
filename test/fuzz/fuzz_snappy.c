/* libFuzzer target: snappy decompression with a 1 MiB output cap. */
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_compress.h"

#define CAP_BYTES ((size_t)1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kp_arena_t a;
    kp_arena_init(&a, 2 * CAP_BYTES);
    const uint8_t *out;
    size_t len;
    unsigned flags = 0;
    if (kp_decompress(KP_CODEC_SNAPPY, data, size, CAP_BYTES, flags, &a, &out, &len) == KP_OK && len > CAP_BYTES)
        __builtin_trap();
    kp_arena_free(&a);
    return 0;
}
