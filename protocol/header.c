/* header.c — request/response headers and whole-frame decode/encode. */
#include <assert.h>
#include <stdlib.h>

#include "protocol/kp_header.h"

static bool flexible_at(const kp_api_info_t *api, int16_t version) {
    return api && kp_ver_in(version, api->flex_lo, api->flex_hi);
}

int kp_request_header_version(int16_t api_key, int16_t api_version) {
    if (api_key == KP_API_CONTROLLED_SHUTDOWN_KEY && api_version == 0) return 0;
    return flexible_at(kp_api_info(api_key), api_version) ? 2 : 1;
}

int kp_response_header_version(int16_t api_key, int16_t api_version) {
    if (api_key == KP_API_API_VERSIONS) return 0;
    return flexible_at(kp_api_info(api_key), api_version) ? 1 : 0;
}

int kp_request_header_decode(kp_rd_t *r, int hv, kp_request_header_t *h) {
    assert(hv >= 0 && hv <= 2);
    h->client_id = kp_slice_cstr("");
    int rc;
    if ((rc = kp_rd_i16(r, &h->api_key)) || (rc = kp_rd_i16(r, &h->api_version)) ||
        (rc = kp_rd_i32(r, &h->correlation_id)))
        return rc;
    if (hv >= 1) {
        kp_str_t id;
        if ((rc = kp_rd_string(r, true, &id))) return rc;
        if (id.p) h->client_id = id;
    }
    if (hv == 2) return kp_rd_tags(r, NULL, NULL);   /* no known header tags */
    return KP_OK;
}

int kp_request_header_encode(kp_wr_t *w, int hv, const kp_request_header_t *h) {
    assert(hv >= 0 && hv <= 2);
    int rc;
    if ((rc = kp_wr_i16(w, h->api_key)) || (rc = kp_wr_i16(w, h->api_version)) ||
        (rc = kp_wr_i32(w, h->correlation_id)))
        return rc;
    if (hv >= 1 && (rc = kp_wr_string(w, h->client_id))) return rc;
    if (hv == 2) return kp_wr_uvarint(w, 0);
    return KP_OK;
}

int kp_response_header_decode(kp_rd_t *r, int hv, int32_t *correlation_id) {
    assert(hv == 0 || hv == 1);
    int rc = kp_rd_i32(r, correlation_id);
    if (rc || hv == 0) return rc;
    return kp_rd_tags(r, NULL, NULL);
}

int kp_response_header_encode(kp_wr_t *w, int hv, int32_t correlation_id) {
    assert(hv == 0 || hv == 1);
    int rc = kp_wr_i32(w, correlation_id);
    if (rc || hv == 0) return rc;
    return kp_wr_uvarint(w, 0);
}

/* Bytes left in a frame after its body: a request ignores them, a response
 * refuses them (kp_header.h, "Trailing-bytes policy"). */
typedef enum { TRAILING_IGNORED, TRAILING_REFUSED } trailing_t;

/* Decodes a body of descriptor d from the rest of r. The body itself is read
 * by its schema either way: a body cut short is an error in both modes. */
static int decode_body(kp_rd_t *r, const kp_struct_desc_t *d, int16_t version, trailing_t trailing,
                       void **body_out, kp_arena_t *a) {
    void *body = kp_arena_alloc(a, d->size_bytes);
    if (!body) return kp_rd_fail(r, KP_ERR_NOMEM);
    int rc = kp_decode(d, r, version, body, a);
    if (rc) return rc;
    if (trailing == TRAILING_REFUSED && kp_rd_remaining(r) != 0) return kp_rd_fail(r, KP_ERR_BAD_LENGTH);
    *body_out = body;
    return KP_OK;
}

int kp_request_decode(const uint8_t *frame, size_t len, kp_request_header_t *h, void **body_out,
                      kp_arena_t *a) {
    assert(h && body_out && a);
    *body_out = NULL;
    kp_rd_t r;
    kp_rd_init(&r, frame, len);
    /* api key, version and correlation id sit at fixed offsets in every
     * header version: read them first so an unsupported request can still
     * be answered or logged. */
    int rc = kp_request_header_decode(&r, 0, h);
    if (rc) return rc;
    const kp_api_info_t *api = kp_api_info(h->api_key);
    bool supported = api && kp_ver_in(h->api_version, api->min_version, api->max_version);
    if (!api) return KP_ERR_UNSUPPORTED;
    kp_rd_init(&r, frame, len);
    rc = kp_request_header_decode(&r, kp_request_header_version(h->api_key, h->api_version), h);
    if (rc) return rc;
    if (!supported) return KP_ERR_UNSUPPORTED;
    return decode_body(&r, api->request, h->api_version, TRAILING_IGNORED, body_out, a);
}

int kp_response_decode(int16_t api_key, int16_t api_version, const uint8_t *frame, size_t len,
                       int32_t *correlation_id, void **body_out, kp_arena_t *a) {
    assert(correlation_id && body_out && a);
    *body_out = NULL;
    const kp_api_info_t *api = kp_api_info(api_key);
    if (!api || !kp_ver_in(api_version, api->min_version, api->max_version))
        return KP_ERR_UNSUPPORTED;
    kp_rd_t r;
    kp_rd_init(&r, frame, len);
    int rc = kp_response_header_decode(&r, kp_response_header_version(api_key, api_version),
                                       correlation_id);
    if (rc) return rc;
    return decode_body(&r, api->response, api_version, TRAILING_REFUSED, body_out, a);
}

/* Reserves the 4-byte size, runs the header+body writer, patches the size
 * (which counts external records bytes the writer did not write). */
static int finish_frame(kp_wr_t *w, size_t size_off, size_t ext_bytes) {
    size_t n = w->pos - size_off - 4 + ext_bytes;
    if (n > INT32_MAX) {
        if (w->err == KP_OK) w->err = KP_ERR_TOO_LARGE;
        return w->err;
    }
    kp_wr_patch_i32(w, size_off, (int32_t)n);
    return KP_OK;
}

int kp_request_encode(kp_wr_t *w, const kp_request_header_t *h, const void *body) {
    const kp_api_info_t *api = kp_api_info(h->api_key);
    if (!api) {
        if (w->err == KP_OK) w->err = KP_ERR_UNSUPPORTED;
        return w->err;
    }
    size_t off = 0;
    int rc;
    if ((rc = kp_wr_reserve(w, 4, &off)) ||
        (rc = kp_request_header_encode(w, kp_request_header_version(h->api_key, h->api_version), h)) ||
        (rc = kp_encode(api->request, w, h->api_version, body, NULL)))
        return rc;
    return finish_frame(w, off, 0);
}

int kp_response_encode(kp_wr_t *w, int16_t api_key, int16_t api_version, int32_t correlation_id,
                       const void *body, kp_enc_opts_t *opts) {
    const kp_api_info_t *api = kp_api_info(api_key);
    if (!api) {
        if (w->err == KP_OK) w->err = KP_ERR_UNSUPPORTED;
        return w->err;
    }
    size_t off = 0;
    size_t ext_before = opts ? opts->ext_bytes : 0;
    int rc;
    if ((rc = kp_wr_reserve(w, 4, &off)) ||
        (rc = kp_response_header_encode(w, kp_response_header_version(api_key, api_version),
                                        correlation_id)) ||
        (rc = kp_encode(api->response, w, api_version, body, opts)))
        return rc;
    /* in count mode the external bytes were already counted in w->pos */
    size_t ext = (w->buf && opts) ? opts->ext_bytes - ext_before : 0;
    return finish_frame(w, off, ext);
}

/* Both *_alloc encoders: a count pass sizes the frame, then exactly that many
 * bytes are allocated and written. Encoding twice costs a second walk of the
 * body; the other way (an estimate and a retry on overflow) would allocate
 * from a guess, and these frames are small control requests. */
typedef int (*frame_fn)(kp_wr_t *w, const void *ctx);

static int encode_alloc(frame_fn fn, const void *ctx, uint8_t **out, size_t *out_len) {
    assert(out && out_len);
    kp_wr_t w;
    kp_wr_init_count(&w);
    int rc = fn(&w, ctx);
    if (rc != KP_OK) return rc;
    size_t need = w.pos;
    assert(need >= 4);   /* the size prefix at least */
    uint8_t *buf = malloc(need);
    if (!buf) return KP_ERR_NOMEM;
    kp_wr_init(&w, buf, need);
    rc = fn(&w, ctx);
    if (rc != KP_OK) {
        free(buf);
        return rc;
    }
    assert(w.pos == need);
    *out = buf;
    *out_len = need;
    return KP_OK;
}

typedef struct {
    const kp_request_header_t *h;
    const void *body;
} req_frame_t;

static int req_frame(kp_wr_t *w, const void *ctx) {
    const req_frame_t *c = ctx;
    return kp_request_encode(w, c->h, c->body);
}

int kp_request_encode_alloc(const kp_request_header_t *h, const void *body, uint8_t **out, size_t *out_len) {
    assert(h);
    req_frame_t c = { h, body };
    return encode_alloc(req_frame, &c, out, out_len);
}

typedef struct {
    int16_t api_key, api_version;
    int32_t correlation_id;
    const void *body;
} resp_frame_t;

static int resp_frame(kp_wr_t *w, const void *ctx) {
    const resp_frame_t *c = ctx;
    return kp_response_encode(w, c->api_key, c->api_version, c->correlation_id, c->body, NULL);
}

int kp_response_encode_alloc(int16_t api_key, int16_t api_version, int32_t correlation_id, const void *body,
                             uint8_t **out, size_t *out_len) {
    resp_frame_t c = { api_key, api_version, correlation_id, body };
    return encode_alloc(resp_frame, &c, out, out_len);
}
