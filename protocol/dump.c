/* dump.c — JSON text of a decoded message, for tests, tools and debugging.
 * Not on any hot path: output grows by doubling, capped at DUMP_MAX_BYTES. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_codec.h"

#define DUMP_MAX_BYTES ((size_t)256 << 20)

typedef struct {
    char *p;
    size_t len, cap;
    bool failed;
} sbuf_t;

static void sb_put(sbuf_t *b, const char *s, size_t n) {
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *q = cap <= DUMP_MAX_BYTES ? realloc(b->p, cap) : NULL;
        if (!q) {
            b->failed = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_str(sbuf_t *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_fmt(sbuf_t *b, const char *fmt, ...) {
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) sb_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void sb_hex(sbuf_t *b, const uint8_t *p, size_t n) {
    static const char hx[] = "0123456789abcdef";
    sb_put(b, "\"", 1);
    for (size_t i = 0; i < n && !b->failed; i++) {
        char two[2] = { hx[p[i] >> 4], hx[p[i] & 15] };
        sb_put(b, two, 2);
    }
    sb_put(b, "\"", 1);
}

/* JSON string; bytes >= 0x80 pass through (assumed UTF-8). */
static void sb_jstr(sbuf_t *b, kp_str_t s) {
    if (!s.p) {
        sb_str(b, "null");
        return;
    }
    sb_put(b, "\"", 1);
    for (size_t i = 0; i < s.len; i++) {
        uint8_t ch = s.p[i];
        if (ch == '"' || ch == '\\') {
            char esc[2] = { '\\', (char)ch };
            sb_put(b, esc, 2);
        } else if (ch < 0x20) {
            sb_fmt(b, "\\u%04x", ch);
        } else {
            sb_put(b, (const char *)&ch, 1);
        }
    }
    sb_put(b, "\"", 1);
}

static void dump_struct(sbuf_t *b, const kp_struct_desc_t *d, int16_t v, const void *msg);

static void dump_scalar(sbuf_t *b, uint8_t t, const void *p) {
    switch (t) {
    case KP_T_INT8: { int8_t x; memcpy(&x, p, 1); sb_fmt(b, "%d", x); break; }
    case KP_T_INT16: { int16_t x; memcpy(&x, p, 2); sb_fmt(b, "%d", x); break; }
    case KP_T_INT32: { int32_t x; memcpy(&x, p, 4); sb_fmt(b, "%" PRId32, x); break; }
    case KP_T_INT64: { int64_t x; memcpy(&x, p, 8); sb_fmt(b, "%" PRId64, x); break; }
    case KP_T_UINT16: { uint16_t x; memcpy(&x, p, 2); sb_fmt(b, "%u", x); break; }
    case KP_T_UINT32: { uint32_t x; memcpy(&x, p, 4); sb_fmt(b, "%" PRIu32, x); break; }
    case KP_T_BOOL: { bool x; memcpy(&x, p, sizeof x); sb_str(b, x ? "true" : "false"); break; }
    case KP_T_FLOAT64: {
        double x;
        memcpy(&x, p, sizeof x);
        if (isfinite(x)) sb_fmt(b, "%.17g", x);
        else sb_str(b, "null");   /* JSON has no NaN/Inf */
        break;
    }
    case KP_T_UUID: {
        const kp_uuid_t *u = p;
        sb_hex(b, u->b, sizeof u->b);
        break;
    }
    case KP_T_STRING: { kp_str_t s; memcpy(&s, p, sizeof s); sb_jstr(b, s); break; }
    case KP_T_BYTES: {
        kp_bytes_t s;
        memcpy(&s, p, sizeof s);
        if (s.p) sb_hex(b, s.p, s.len);
        else sb_str(b, "null");
        break;
    }
    case KP_T_RECORDS: {
        const kp_records_t *r = p;
        if (r->ext) sb_fmt(b, "{\"external_bytes\":%zu}", r->ext_len);
        else if (r->bytes.p) sb_hex(b, r->bytes.p, r->bytes.len);
        else sb_str(b, "null");
        break;
    }
    default: sb_str(b, "null"); break;
    }
}

static size_t elem_size(uint8_t t, const kp_struct_desc_t *sub) {
    switch (t) {
    case KP_T_INT8: return 1;
    case KP_T_INT16: case KP_T_UINT16: return 2;
    case KP_T_INT32: case KP_T_UINT32: return 4;
    case KP_T_INT64: return 8;
    case KP_T_FLOAT64: return sizeof(double);
    case KP_T_BOOL: return sizeof(bool);
    case KP_T_UUID: return sizeof(kp_uuid_t);
    case KP_T_STRING: case KP_T_BYTES: return sizeof(kp_slice_t);
    case KP_T_RECORDS: return sizeof(kp_records_t);
    default: return sub->size_bytes;
    }
}

static void dump_field(sbuf_t *b, const kp_field_desc_t *f, int16_t v, const void *p) {
    if (f->type == KP_T_ARRAY) {
        struct { void *items; int32_t count; } a;
        memcpy(&a, p, sizeof a);
        if (a.count < 0) {
            sb_str(b, "null");
            return;
        }
        size_t esz = elem_size(f->elem, f->sub);
        sb_str(b, "[");
        for (int32_t i = 0; i < a.count && !b->failed; i++) {
            if (i) sb_str(b, ",");
            const void *it = (const char *)a.items + (size_t)i * esz;
            if (f->elem == KP_T_STRUCT) dump_struct(b, f->sub, v, it);
            else dump_scalar(b, f->elem, it);
        }
        sb_str(b, "]");
    } else if (f->type == KP_T_STRUCT) {
        const void *q = p;
        if (f->flags & KP_FD_PTR) memcpy(&q, p, sizeof q);
        if (q) dump_struct(b, f->sub, v, q);
        else sb_str(b, "null");
    } else {
        dump_scalar(b, f->type, p);
    }
}

static void dump_struct(sbuf_t *b, const kp_struct_desc_t *d, int16_t v, const void *msg) {
    sb_str(b, "{");
    bool first = true;
    for (uint16_t i = 0; i < d->nfields; i++) {
        const kp_field_desc_t *f = &d->fields[i];
        if (!kp_ver_in(v, f->ver_lo, f->ver_hi)) continue;
        if (!first) sb_str(b, ",");
        first = false;
        sb_str(b, "\"");
        sb_str(b, f->name);
        sb_str(b, "\":");
        dump_field(b, f, v, (const char *)msg + f->offset);
    }
    sb_str(b, "}");
}

int kp_dump_json(const kp_struct_desc_t *d, int16_t version, const void *msg, char **out_json) {
    sbuf_t b = { 0 };
    dump_struct(&b, d, version, msg);
    if (b.failed) {
        free(b.p);
        *out_json = NULL;
        return KP_ERR_NOMEM;
    }
    *out_json = b.p;
    return KP_OK;
}
