/* libFuzzer target: legacy message sets (magic 0/1) incl. compressed
 * wrappers, and their conversion to one v2 batch. */
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_msgset.h"

#define CAP_BYTES ((size_t)1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kp_arena_t a;
    kp_arena_init(&a, 8 * CAP_BYTES);
    kp_msgset_iter_t it;
    kp_legacy_msg_t m;
    kp_msgset_iter_init(&it, data, size, &a, CAP_BYTES);
    while (kp_msgset_iter_next(&it, &m) == 1) {
    }
    const uint8_t *out;
    size_t len;
    (void)!kp_msgset_to_batch(data, size, 0, KP_CODEC_NONE, &a, CAP_BYTES, &out, &len);
    kp_arena_free(&a);
    return 0;
}
