/* Streaming JSON writer; see json.h for the contract. */
#include "broker/http/json.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

static void emit(bk_http_json_t *j, const void *p, size_t n) {
    if (j->err != KP_OK || n == 0)
        return;
    if (evbuffer_add(j->out, p, n) != 0)
        j->err = KP_ERR_NOMEM;
}

static void emit_c(bk_http_json_t *j, char c) { emit(j, &c, 1); }

/* Called before every value: checks the grammar and writes the separator. */
static void before_value(bk_http_json_t *j) {
    if (j->depth == 0) {
        assert(!j->top_done && "json: second top-level value");
        return;
    }
    if (j->kind[j->depth - 1] == '{') {
        assert(j->key_pending && "json: value inside an object without a key");
        j->key_pending = false;
        return;
    }
    if (j->has_item[j->depth - 1])
        emit_c(j, ',');
    j->has_item[j->depth - 1] = true;
}

/* Called after every complete value (scalar or closed container). */
static void after_value(bk_http_json_t *j) {
    if (j->depth == 0)
        j->top_done = true;
}

void bk_http_json_init(bk_http_json_t *j, struct evbuffer *out) {
    assert(out != NULL);
    memset(j, 0, sizeof *j);
    j->out = out;
    j->err = KP_OK;
}

static void open_container(bk_http_json_t *j, char kind) {
    before_value(j);
    assert(j->depth < BK_HTTP_JSON_DEPTH_MAX && "json: nesting too deep");
    j->kind[j->depth] = kind;
    j->has_item[j->depth] = false;
    j->depth++;
    emit_c(j, kind);
}

static void close_container(bk_http_json_t *j, char kind) {
    assert(j->depth > 0 && "json: close without open");
    assert(j->kind[j->depth - 1] == kind && "json: mismatched close");
    assert(!j->key_pending && "json: object closed after a key");
    j->depth--;
    emit_c(j, kind == '{' ? '}' : ']');
    after_value(j);
}

void bk_http_json_obj_begin(bk_http_json_t *j) { open_container(j, '{'); }
void bk_http_json_obj_end(bk_http_json_t *j) { close_container(j, '{'); }
void bk_http_json_arr_begin(bk_http_json_t *j) { open_container(j, '['); }
void bk_http_json_arr_end(bk_http_json_t *j) { close_container(j, '['); }

/* Length of the valid UTF-8 sequence at s[0..n), or 0 if it is invalid
 * (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF). */
static size_t utf8_valid_len(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
    } else
        return 0;
    if (n < len)
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

/* Bytes of the maximal invalid subsequence at s (called only where
 * utf8_valid_len() failed): the lead byte plus the continuation bytes that
 * still fit a well-formed sequence. One U+FFFD replaces each such run (the
 * Unicode "maximal subpart" practice). */
static size_t utf8_invalid_len(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    size_t want = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c <= 0xef ? 3
                : c >= 0xc2 && c <= 0xdf ? 2 : 1;
    unsigned char lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
    unsigned char hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
    size_t i = 1;
    while (i < want && i < n && s[i] >= lo && s[i] <= hi) {
        i++;
        lo = 0x80;
        hi = 0xbf;
    }
    assert(i < want || want == 1);
    return i;
}

static void write_escaped(bk_http_json_t *j, const char *str, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    size_t run = 0; /* start of bytes not yet written verbatim */
    size_t i = 0;
    emit_c(j, '"');
    while (i < n) {
        unsigned char c = s[i];
        char esc[6];
        size_t esc_n = 0, adv = 1;
        if (c == '"' || c == '\\') {
            esc[0] = '\\'; esc[1] = (char)c; esc_n = 2;
        } else if (c < 0x20 || c == 0x7f) {
            const char *shortf = c == '\b' ? "\\b" : c == '\f' ? "\\f"
                               : c == '\n' ? "\\n" : c == '\r' ? "\\r"
                               : c == '\t' ? "\\t" : NULL;
            if (shortf) {
                memcpy(esc, shortf, 2); esc_n = 2;
            } else {
                memcpy(esc, "\\u00", 4);
                esc[4] = hex[c >> 4]; esc[5] = hex[c & 15]; esc_n = 6;
            }
        } else if (c >= 0x80) {
            size_t v = utf8_valid_len(s + i, n - i);
            if (v > 0) {
                i += v;
                continue;
            }
            adv = utf8_invalid_len(s + i, n - i);
            memcpy(esc, "\xef\xbf\xbd", 3); esc_n = 3; /* U+FFFD */
        } else {
            i++;
            continue;
        }
        emit(j, s + run, i - run);
        emit(j, esc, esc_n);
        i += adv;
        run = i;
    }
    emit(j, s + run, n - run);
    emit_c(j, '"');
}

void bk_http_json_key_n(bk_http_json_t *j, const char *k, size_t len) {
    assert(j->depth > 0 && j->kind[j->depth - 1] == '{' && "json: key outside an object");
    assert(!j->key_pending && "json: two keys in a row");
    assert(k != NULL);
    if (j->has_item[j->depth - 1])
        emit_c(j, ',');
    j->has_item[j->depth - 1] = true;
    write_escaped(j, k, len);
    emit_c(j, ':');
    j->key_pending = true;
}

void bk_http_json_key(bk_http_json_t *j, const char *k) {
    assert(k != NULL);
    bk_http_json_key_n(j, k, strlen(k));
}

void bk_http_json_str_n(bk_http_json_t *j, const char *s, size_t len) {
    before_value(j);
    write_escaped(j, s, len);
    after_value(j);
}

static void write_raw_value(bk_http_json_t *j, const char *text) {
    before_value(j);
    emit(j, text, strlen(text));
    after_value(j);
}

void bk_http_json_str(bk_http_json_t *j, const char *s) {
    if (s == NULL)
        write_raw_value(j, "null");
    else
        bk_http_json_str_n(j, s, strlen(s));
}

void bk_http_json_i64(bk_http_json_t *j, int64_t v) {
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    write_raw_value(j, buf);
}

void bk_http_json_u64(bk_http_json_t *j, uint64_t v) {
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    write_raw_value(j, buf);
}

void bk_http_json_f64(bk_http_json_t *j, double v) {
    char buf[32];
    if (!isfinite(v)) {
        write_raw_value(j, "null");
        return;
    }
    /* %.17g round-trips every double; JSON has no leading '+' or "inf". */
    snprintf(buf, sizeof buf, "%.17g", v);
    write_raw_value(j, buf);
}

void bk_http_json_bool(bk_http_json_t *j, bool v) { write_raw_value(j, v ? "true" : "false"); }
void bk_http_json_null(bk_http_json_t *j) { write_raw_value(j, "null"); }

void bk_http_json_kv_str(bk_http_json_t *j, const char *k, const char *v) { bk_http_json_key(j, k); bk_http_json_str(j, v); }
void bk_http_json_kv_i64(bk_http_json_t *j, const char *k, int64_t v) { bk_http_json_key(j, k); bk_http_json_i64(j, v); }
void bk_http_json_kv_u64(bk_http_json_t *j, const char *k, uint64_t v) { bk_http_json_key(j, k); bk_http_json_u64(j, v); }
void bk_http_json_kv_f64(bk_http_json_t *j, const char *k, double v) { bk_http_json_key(j, k); bk_http_json_f64(j, v); }
void bk_http_json_kv_bool(bk_http_json_t *j, const char *k, bool v) { bk_http_json_key(j, k); bk_http_json_bool(j, v); }
void bk_http_json_kv_null(bk_http_json_t *j, const char *k) { bk_http_json_key(j, k); bk_http_json_null(j); }

int bk_http_json_finish(const bk_http_json_t *j) {
    assert(j->depth == 0 && "json: unclosed container");
    assert(!j->key_pending);
    assert(j->top_done && "json: empty document");
    return j->err;
}
