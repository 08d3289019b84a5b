/* Streaming JSON writer over a libevent evbuffer.
 *
 * The writer appends bytes as values are added; nothing is buffered inside
 * it, so its cost is one pass over the output. Misuse by the caller (a value
 * without a key inside an object, a key inside an array, closing what is not
 * open, nesting deeper than BK_HTTP_JSON_DEPTH_MAX, two top-level values) is a
 * programming error and is asserted. Allocation failure of the evbuffer is an
 * input-independent runtime error: it is sticky and reported by
 * bk_http_json_finish().
 *
 * Strings are written with full escaping: '"', '\\', the short escapes
 * \b \f \n \r \t, every other byte below 0x20 and 0x7f as \u00XX. Input that
 * is not valid UTF-8 (stray continuation bytes, overlong forms, surrogates,
 * code points above U+10FFFF, truncated sequences) is replaced by U+FFFD per
 * maximal invalid subsequence, so the output is always valid UTF-8 and valid
 * JSON. Non-finite doubles (NaN, +-Inf) have no JSON form and are written as
 * null. */
#ifndef SKIFF_BROKER_JSON_H
#define SKIFF_BROKER_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"

struct evbuffer;

/* Deepest nesting of objects/arrays; bounds the writer's stack. */
#define BK_HTTP_JSON_DEPTH_MAX 32

typedef struct bk_http_json {
    struct evbuffer *out;              /* borrowed; outlives the writer */
    uint32_t depth;                    /* open containers */
    char kind[BK_HTTP_JSON_DEPTH_MAX];      /* '{' or '[' per open container */
    bool has_item[BK_HTTP_JSON_DEPTH_MAX];  /* a member/element was written */
    bool key_pending;                  /* key written, value expected */
    bool top_done;                     /* the single top-level value is done */
    int err;                           /* sticky KP_OK / KP_ERR_NOMEM */
} bk_http_json_t;

/* Starts a document appended to `out` (borrowed, must outlive `j`). */
void bk_http_json_init(bk_http_json_t *j, struct evbuffer *out);

void bk_http_json_obj_begin(bk_http_json_t *j);
void bk_http_json_obj_end(bk_http_json_t *j);
void bk_http_json_arr_begin(bk_http_json_t *j);
void bk_http_json_arr_end(bk_http_json_t *j);

/* A member name; must be inside an object and followed by exactly one value.
 * `k` is NUL-terminated (bk_http_json_key) or `len` bytes (bk_http_json_key_n). */
void bk_http_json_key(bk_http_json_t *j, const char *k);
void bk_http_json_key_n(bk_http_json_t *j, const char *k, size_t len);

/* Values. bk_http_json_str(j, NULL) writes null. */
void bk_http_json_str(bk_http_json_t *j, const char *s);
void bk_http_json_str_n(bk_http_json_t *j, const char *s, size_t len);
void bk_http_json_i64(bk_http_json_t *j, int64_t v);
void bk_http_json_u64(bk_http_json_t *j, uint64_t v);
void bk_http_json_f64(bk_http_json_t *j, double v);
void bk_http_json_bool(bk_http_json_t *j, bool v);
void bk_http_json_null(bk_http_json_t *j);

/* Key + value shorthands for the common case inside an object. */
void bk_http_json_kv_str(bk_http_json_t *j, const char *k, const char *v);
void bk_http_json_kv_i64(bk_http_json_t *j, const char *k, int64_t v);
void bk_http_json_kv_u64(bk_http_json_t *j, const char *k, uint64_t v);
void bk_http_json_kv_f64(bk_http_json_t *j, const char *k, double v);
void bk_http_json_kv_bool(bk_http_json_t *j, const char *k, bool v);
void bk_http_json_kv_null(bk_http_json_t *j, const char *k);

/* Ends the document: asserts every container is closed and exactly one
 * top-level value was written. Returns KP_OK, or KP_ERR_NOMEM if the evbuffer
 * failed to grow at any point (the output is then incomplete). */
KP_MUST_CHECK int bk_http_json_finish(const bk_http_json_t *j);

#endif
