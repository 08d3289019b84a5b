/* libFuzzer target: request frame (bytes after the size) -> header -> body
 * dispatch. Whatever decodes must re-encode, decode again and re-encode to
 * the same bytes (the codec's output is a fixed point). */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "kp_msgs.h"
#include "protocol/kp_header.h"

#define FUZZ_OUT_BYTES (1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static uint8_t out1[FUZZ_OUT_BYTES], out2[FUZZ_OUT_BYTES];
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
        kp_wr_init(&w, out1, sizeof out1);
        rc = kp_request_encode(&w, &h, body);
        /* re-encoding can only fail for lack of room */
        assert(rc == KP_OK || rc == KP_ERR_OVERFLOW);
        if (rc == KP_OK) {
            size_t n1 = w.pos;
            kp_request_header_t h2;
            void *body2 = NULL;
            rc = kp_request_decode(out1 + 4, n1 - 4, &h2, &body2, &a);
            assert(rc == KP_OK);
            assert(h2.api_key == h.api_key && h2.api_version == h.api_version);
            kp_wr_init(&w, out2, sizeof out2);
            rc = kp_request_encode(&w, &h2, body2);
            assert(rc == KP_OK);
            assert(w.pos == n1 && memcmp(out1, out2, n1) == 0);
        }
    } else {
        assert(body == NULL);
    }
    kp_arena_free(&a);
    return 0;
}
