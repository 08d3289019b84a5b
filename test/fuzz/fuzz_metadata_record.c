/* libFuzzer target: metadata log records applied to an image
 * (bk_meta_image_apply_bytes), as a follower replays the metadata log.
 *
 * Input: a sequence of records "u16 length (big-endian), bytes" (length
 * clamped to what is left), applied at offsets 0, 1, 2, ... to one image
 * (local node id 1, so change notifications are computed). After each:
 *  - a failed apply leaves the image byte-for-byte as it was (its snapshot
 *    is unchanged) and returns a documented status;
 *  - the image satisfies every structural invariant (fuzz_image_check.h);
 *  - re-applying the same offset is refused (offsets only grow).
 * At the end the image's snapshot loads into an equal image. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/meta/image.h"
#include "test/fuzz/fuzz_image_check.h"

#define RECS_MAX 256 /* bound on records per input */

static void snap(const bk_meta_image_t *img, uint8_t **out, size_t *len) {
    if (bk_meta_image_snapshot(img, out, len) != KP_OK) abort();
}

static bool same(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, 1);
    size_t at = 0;
    int64_t off = 0;
    for (int n = 0; n < RECS_MAX && size - at >= 2; n++) {
        size_t len = (size_t)(data[at] << 8 | data[at + 1]);
        at += 2;
        if (len > size - at) len = size - at;
        uint8_t *before;
        size_t before_len;
        snap(&img, &before, &before_len);
        int rc = bk_meta_image_apply_bytes(&img, data + at, len, off);
        if (rc == KP_OK) {
            if (img.last_offset != off) abort();
            if (bk_meta_image_apply_bytes(&img, data + at, len, off) != KP_ERR_BAD_VALUE) abort();
            off++;
        } else {
            if (rc != KP_ERR_CORRUPT && rc != KP_ERR_BAD_VALUE) abort();
            uint8_t *after;
            size_t after_len;
            snap(&img, &after, &after_len);
            if (!same(before, before_len, after, after_len)) abort();
            free(after);
        }
        free(before);
        fz_check_image(&img);
        at += len;
    }
    uint8_t *s1, *s2;
    size_t l1, l2;
    snap(&img, &s1, &l1);
    bk_meta_image_t again;
    bk_meta_image_init(&again, -1);
    if (bk_meta_image_load(&again, s1, l1) != KP_OK) abort();
    snap(&again, &s2, &l2);
    if (!same(s1, l1, s2, l2)) abort();
    free(s1);
    free(s2);
    bk_meta_image_free(&again);
    bk_meta_image_free(&img);
    return 0;
}
