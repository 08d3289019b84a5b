/* broker/api/resp_errors.c — see resp_errors.h. */
#include "broker/api/resp_errors.h"

#include <assert.h>
#include <string.h>

#include "protocol/kp_codec.h"

/* Kafka messages nest at most a few levels (Fetch: response > topic >
 * partition > aborted txn); the bound only guards against a cyclic
 * descriptor. */
#define WALK_DEPTH_MAX 16

static bool is_error_field(const kp_field_desc_t *f) {
    if (f->type != KP_T_INT16) return false;
    size_t n = strlen(f->name);
    return strcmp(f->name, "error_code") == 0 ||
           (n > 11 && strcmp(f->name + n - 11, "_error_code") == 0);
}

static uint64_t walk(const kp_struct_desc_t *d, const uint8_t *msg, int16_t v, int depth,
                     bk_api_resp_err_fn fn, void *ctx) {
    assert(depth < WALK_DEPTH_MAX);
    uint64_t cnt = 0;
    for (uint16_t i = 0; i < d->nfields; i++) {
        const kp_field_desc_t *f = &d->fields[i];
        if (!kp_ver_in(v, f->ver_lo, f->ver_hi)) continue;
        const uint8_t *p = msg + f->offset;
        if (is_error_field(f)) {
            int16_t code;
            memcpy(&code, p, sizeof code);
            if (code != 0) { cnt++; fn(ctx, code); }
        } else if (f->type == KP_T_STRUCT && f->sub) {
            const uint8_t *sub = p;
            if (f->flags & KP_FD_PTR) memcpy(&sub, p, sizeof sub);
            if (sub) cnt += walk(f->sub, sub, v, depth + 1, fn, ctx);
        } else if (f->type == KP_T_ARRAY && f->elem == KP_T_STRUCT && f->sub) {
            KP_ARRAY(uint8_t) arr;
            memcpy(&arr, p, sizeof arr);
            for (int32_t k = 0; arr.items && k < arr.count; k++)
                cnt += walk(f->sub, arr.items + (size_t)k * f->sub->size_bytes, v, depth + 1, fn, ctx);
        }
    }
    return cnt;
}

uint64_t bk_api_resp_errors(int16_t api_key, int16_t version, const void *resp, bk_api_resp_err_fn fn, void *ctx) {
    const kp_api_info_t *api = kp_api_info(api_key);
    if (!api || !api->response || !resp) return 0;
    return walk(api->response, resp, version, 0, fn, ctx);
}
