/* libFuzzer target: request frame (bytes after the size) -> header -> body
 * dispatch. Properties:
 *  - whatever decodes re-encodes, decodes again and re-encodes to the same
 *    bytes (the codec's output is a fixed point);
 *  - requests are read by their schema: bytes after the body are ignored
 *    (as Kafka does), so the re-encoded frame followed by extra bytes decodes
 *    to the same message;
 *  - a body cut short is refused: the re-encoded frame one byte short does
 *    not decode (this also proves the decoder reads every byte the encoder
 *    writes). */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "kp_msgs.h"
#include "protocol/kp_header.h"

#define FUZZ_OUT_BYTES (1 << 20)
#define FUZZ_TRAILING_BYTES 3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decodes frame (n bytes, no size prefix) and re-encodes it into out;
 * returns the re-encoded length or 0 when the decode fails. */
static size_t reencode(const uint8_t *frame, size_t n, kp_arena_t *a, uint8_t *out, size_t cap,
                       kp_request_header_t *h) {
    void *body = NULL;
    if (kp_request_decode(frame, n, h, &body, a) != KP_OK) return 0;
    kp_wr_t w;
    kp_wr_init(&w, out, cap);
    int rc = kp_request_encode(&w, h, body);
    assert(rc == KP_OK);
    return w.pos;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static uint8_t out1[FUZZ_OUT_BYTES + FUZZ_TRAILING_BYTES], out2[FUZZ_OUT_BYTES];
    kp_arena_t a;
    kp_arena_init(&a, 64 << 20);
    kp_request_header_t h;
    void *body = NULL;
    int rc = kp_request_decode(data, size, &h, &body, &a);
    if (rc == KP_OK) {
        const kp_api_info_t *api = kp_api_info(h.api_key);
        assert(api && body);
        char *json = NULL;
        if (kp_dump_json(api->request, h.api_version, body, &json) == KP_OK) free(json);
        kp_wr_t w;
        kp_wr_init(&w, out1, FUZZ_OUT_BYTES);
        rc = kp_request_encode(&w, &h, body);
        /* re-encoding can only fail for lack of room */
        assert(rc == KP_OK || rc == KP_ERR_OVERFLOW);
        if (rc == KP_OK) {
            size_t n1 = w.pos;
            assert(n1 >= 4);
            kp_request_header_t h2;
            /* the canonical frame itself: a fixed point */
            size_t n2 = reencode(out1 + 4, n1 - 4, &a, out2, sizeof out2, &h2);
            assert(n2 == n1 && memcmp(out1, out2, n1) == 0);
            assert(h2.api_key == h.api_key && h2.api_version == h.api_version);
            /* followed by extra bytes: the same message */
            memset(out1 + n1, 0xa5, FUZZ_TRAILING_BYTES);
            n2 = reencode(out1 + 4, n1 - 4 + FUZZ_TRAILING_BYTES, &a, out2, sizeof out2, &h2);
            assert(n2 == n1 && memcmp(out1, out2, n1) == 0);
            /* one byte short: refused */
            assert(reencode(out1 + 4, n1 - 5, &a, out2, sizeof out2, &h2) == 0);
        }
    } else {
        assert(body == NULL);
    }
    kp_arena_free(&a);
    return 0;
}
