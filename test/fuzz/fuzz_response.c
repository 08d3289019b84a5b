/* libFuzzer target: the first 4 bytes pick (api key index, version), the
 * rest is a response frame body (after the size). Decoded responses must
 * re-encode to a fixed point, like requests in fuzz_request.c. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "kp_msgs.h"
#include "protocol/kp_header.h"

#define FUZZ_OUT_BYTES (1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static uint8_t out1[FUZZ_OUT_BYTES], out2[FUZZ_OUT_BYTES];
    if (size < 2) return 0;
    const kp_api_info_t *api = kp_api_at(data[0] % kp_api_count);
    int16_t ver = (int16_t)(api->min_version + data[1] % (api->max_version - api->min_version + 1));
    data += 2;
    size -= 2;
    kp_arena_t a;
    kp_arena_init(&a, 64 << 20);
    int32_t corr = 0;
    void *body = NULL;
    if (kp_response_decode(api->api_key, ver, data, size, &corr, &body, &a) == KP_OK) {
        char *json = NULL;
        if (kp_dump_json(api->response, ver, body, &json) == KP_OK) free(json);
        kp_wr_t w;
        kp_wr_init(&w, out1, sizeof out1);
        int rc = kp_response_encode(&w, api->api_key, ver, corr, body, NULL);
        assert(rc == KP_OK || rc == KP_ERR_OVERFLOW);
        if (rc == KP_OK) {
            size_t n1 = w.pos;
            void *body2 = NULL;
            int32_t corr2 = 0;
            rc = kp_response_decode(api->api_key, ver, out1 + 4, n1 - 4, &corr2, &body2, &a);
            assert(rc == KP_OK && corr2 == corr);
            kp_wr_init(&w, out2, sizeof out2);
            rc = kp_response_encode(&w, api->api_key, ver, corr2, body2, NULL);
            assert(rc == KP_OK && w.pos == n1 && memcmp(out1, out2, n1) == 0);
        }
    }
    kp_arena_free(&a);
    return 0;
}
