/* wire.c — Kafka primitive reader/writer; see kp_wire.h for the contract. */
#include "protocol/kp_wire.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

const char *kp_status_str(int status) {
    switch (status) {
    case KP_OK: return "ok";
#define KP_STATUS_CASE_(name, value, text) case name: return text;
    KP_STATUS_LIST(KP_STATUS_CASE_)
#undef KP_STATUS_CASE_
    default: return "unknown status";
    }
}

kp_slice_t kp_slice_cstr(const char *s) {
    kp_slice_t out = { (const uint8_t *)s, s ? strlen(s) : 0 };
    return out;
}

bool kp_slice_eq(kp_slice_t a, kp_slice_t b) {
    if ((a.p == NULL) != (b.p == NULL)) return false;
    return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

bool kp_slice_eq_cstr(kp_slice_t a, const char *s) { return kp_slice_eq(a, kp_slice_cstr(s)); }

bool kp_slice_has_nul(kp_slice_t s) { return s.len > 0 && memchr(s.p, '\0', s.len) != NULL; }

char *kp_slice_strdup(kp_slice_t s) {
    /* A NUL inside would silently cut the C string ("a\0b" -> "a"). */
    if (kp_slice_has_nul(s)) return NULL;
    char *c = malloc(s.len + 1);
    if (!c) return NULL;
    if (s.len) memcpy(c, s.p, s.len);
    c[s.len] = '\0';
    return c;
}

/* ---- reader ------------------------------------------------------------ */

void kp_rd_init(kp_rd_t *r, const void *buf, size_t len) {
    assert(buf != NULL || len == 0);
    r->buf = buf;
    r->len = len;
    r->pos = 0;
    r->err = KP_OK;
}

int kp_rd_fail(kp_rd_t *r, int status) {
    assert(status != KP_OK);
    if (r->err == KP_OK) r->err = status;
    return r->err;
}

/* Returns a pointer to the next n bytes and advances, or NULL on failure. */
static const uint8_t *take(kp_rd_t *r, size_t n) {
    if (r->err) return NULL;
    if (n > r->len - r->pos) {
        kp_rd_fail(r, KP_ERR_TRUNCATED);
        return NULL;
    }
    const uint8_t *p = r->buf + r->pos;
    r->pos += n;
    return p;
}

int kp_rd_i8(kp_rd_t *r, int8_t *v) {
    const uint8_t *p = take(r, 1);
    if (!p) return r->err;
    *v = (int8_t)p[0];
    return KP_OK;
}

int kp_rd_i16(kp_rd_t *r, int16_t *v) {
    const uint8_t *p = take(r, 2);
    if (!p) return r->err;
    *v = (int16_t)kp_load_be16(p);
    return KP_OK;
}

int kp_rd_u16(kp_rd_t *r, uint16_t *v) {
    const uint8_t *p = take(r, 2);
    if (!p) return r->err;
    *v = kp_load_be16(p);
    return KP_OK;
}

int kp_rd_i32(kp_rd_t *r, int32_t *v) {
    const uint8_t *p = take(r, 4);
    if (!p) return r->err;
    *v = (int32_t)kp_load_be32(p);
    return KP_OK;
}

int kp_rd_u32(kp_rd_t *r, uint32_t *v) {
    const uint8_t *p = take(r, 4);
    if (!p) return r->err;
    *v = kp_load_be32(p);
    return KP_OK;
}

int kp_rd_i64(kp_rd_t *r, int64_t *v) {
    const uint8_t *p = take(r, 8);
    if (!p) return r->err;
    *v = (int64_t)kp_load_be64(p);
    return KP_OK;
}

int kp_rd_bool(kp_rd_t *r, bool *v) {
    const uint8_t *p = take(r, 1);
    if (!p) return r->err;
    *v = p[0] != 0;
    return KP_OK;
}

int kp_rd_f64(kp_rd_t *r, double *v) {
    const uint8_t *p = take(r, 8);
    if (!p) return r->err;
    uint64_t bits = kp_load_be64(p);
    memcpy(v, &bits, sizeof *v);
    return KP_OK;
}

int kp_rd_uuid(kp_rd_t *r, kp_uuid_t *v) {
    const uint8_t *p = take(r, 16);
    if (!p) return r->err;
    memcpy(v->b, p, 16);
    return KP_OK;
}

/* Unsigned LEB128 with at most max_bytes bytes; the last byte may only carry
 * the bits that still fit in `bits`. */
static int rd_uleb(kp_rd_t *r, unsigned max_bytes, unsigned bits, uint64_t *v) {
    uint64_t out = 0;
    for (unsigned i = 0; i < max_bytes; i++) {
        const uint8_t *p = take(r, 1);
        if (!p) return r->err;
        unsigned shift = 7 * i;
        uint64_t part = (uint64_t)(p[0] & 0x7f);
        if (shift + 7 > bits && (part >> (bits - shift)) != 0) return kp_rd_fail(r, KP_ERR_BAD_VARINT);
        out |= part << shift;
        if ((p[0] & 0x80) == 0) {
            *v = out;
            return KP_OK;
        }
    }
    return kp_rd_fail(r, KP_ERR_BAD_VARINT);
}

int kp_rd_uvarint(kp_rd_t *r, uint32_t *v) {
    uint64_t x = 0;
    int rc = rd_uleb(r, 5, 32, &x);
    if (rc) return rc;
    *v = (uint32_t)x;
    return KP_OK;
}

int kp_rd_uvarlong(kp_rd_t *r, uint64_t *v) { return rd_uleb(r, 10, 64, v); }

int kp_rd_varint(kp_rd_t *r, int32_t *v) {
    uint32_t u = 0;
    int rc = kp_rd_uvarint(r, &u);
    if (rc) return rc;
    *v = (int32_t)((u >> 1) ^ (~(u & 1) + 1));
    return KP_OK;
}

int kp_rd_varlong(kp_rd_t *r, int64_t *v) {
    uint64_t u = 0;
    int rc = kp_rd_uvarlong(r, &u);
    if (rc) return rc;
    *v = (int64_t)((u >> 1) ^ (~(u & 1) + 1));
    return KP_OK;
}

int kp_rd_raw(kp_rd_t *r, size_t n, kp_slice_t *out) {
    const uint8_t *p = take(r, n);
    if (!p) return r->err;
    out->p = p;
    out->len = n;
    return KP_OK;
}

int kp_rd_skip(kp_rd_t *r, size_t n) { return take(r, n) ? KP_OK : r->err; }

/* A length of -1 is null; other negatives are errors. A present empty value
 * gets a non-NULL pointer so that it stays distinguishable from null. */
static int rd_sized(kp_rd_t *r, int64_t n, bool nullable, kp_slice_t *out) {
    if (n == -1) {
        if (!nullable) return kp_rd_fail(r, KP_ERR_BAD_LENGTH);
        *out = kp_slice_null();
        return KP_OK;
    }
    if (n < 0) return kp_rd_fail(r, KP_ERR_BAD_LENGTH);
    if ((uint64_t)n > kp_rd_remaining(r)) return kp_rd_fail(r, KP_ERR_TRUNCATED);
    out->p = r->buf + r->pos;
    out->len = (size_t)n;
    r->pos += (size_t)n;
    return KP_OK;
}

int kp_rd_string(kp_rd_t *r, bool nullable, kp_str_t *out) {
    int16_t n = 0;
    int rc = kp_rd_i16(r, &n);
    if (rc) return rc;
    return rd_sized(r, n, nullable, out);
}

int kp_rd_compact_string(kp_rd_t *r, bool nullable, kp_str_t *out) {
    uint32_t n = 0;
    int rc = kp_rd_uvarint(r, &n);
    if (rc) return rc;
    if (n - 1 > INT16_MAX && n != 0) return kp_rd_fail(r, KP_ERR_BAD_LENGTH);
    return rd_sized(r, (int64_t)n - 1, nullable, out);
}

int kp_rd_bytes(kp_rd_t *r, bool nullable, kp_bytes_t *out) {
    int32_t n = 0;
    int rc = kp_rd_i32(r, &n);
    if (rc) return rc;
    return rd_sized(r, n, nullable, out);
}

int kp_rd_compact_bytes(kp_rd_t *r, bool nullable, kp_bytes_t *out) {
    uint32_t n = 0;
    int rc = kp_rd_uvarint(r, &n);
    if (rc) return rc;
    return rd_sized(r, (int64_t)n - 1, nullable, out);
}

static int rd_count(kp_rd_t *r, int64_t n, bool nullable, size_t min_elem_bytes, int32_t *count) {
    assert(min_elem_bytes >= 1);
    if (n == -1) {
        if (!nullable) return kp_rd_fail(r, KP_ERR_BAD_LENGTH);
        *count = -1;
        return KP_OK;
    }
    if (n < 0 || n > KP_ARRAY_COUNT_MAX) return kp_rd_fail(r, KP_ERR_BAD_LENGTH);
    if ((uint64_t)n > kp_rd_remaining(r) / min_elem_bytes) return kp_rd_fail(r, KP_ERR_TRUNCATED);
    *count = (int32_t)n;
    return KP_OK;
}

int kp_rd_array_len(kp_rd_t *r, bool nullable, size_t min_elem_bytes, int32_t *count) {
    int32_t n = 0;
    int rc = kp_rd_i32(r, &n);
    if (rc) return rc;
    return rd_count(r, n, nullable, min_elem_bytes, count);
}

int kp_rd_compact_array_len(kp_rd_t *r, bool nullable, size_t min_elem_bytes, int32_t *count) {
    uint32_t n = 0;
    int rc = kp_rd_uvarint(r, &n);
    if (rc) return rc;
    return rd_count(r, (int64_t)n - 1, nullable, min_elem_bytes, count);
}

int kp_rd_tags(kp_rd_t *r, kp_tag_fn on_tag, void *ctx) {
    uint32_t n = 0;
    int rc = kp_rd_uvarint(r, &n);
    if (rc) return rc;
    if (n > KP_TAGGED_FIELDS_MAX) return kp_rd_fail(r, KP_ERR_BAD_LENGTH);
    /* each field takes at least 2 bytes (tag + size) */
    if (n > kp_rd_remaining(r) / 2) return kp_rd_fail(r, KP_ERR_TRUNCATED);
    int64_t prev = -1;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t tag = 0, size = 0;
        kp_slice_t payload;
        if ((rc = kp_rd_uvarint(r, &tag)) || (rc = kp_rd_uvarint(r, &size))) return rc;
        if ((int64_t)tag <= prev) return kp_rd_fail(r, KP_ERR_BAD_VALUE);
        prev = tag;
        if ((rc = kp_rd_raw(r, size, &payload))) return rc;
        if (on_tag && (rc = on_tag(ctx, tag, payload)) != KP_OK) return kp_rd_fail(r, rc);
    }
    return KP_OK;
}

/* ---- writer ------------------------------------------------------------ */

void kp_wr_init(kp_wr_t *w, void *buf, size_t cap) {
    w->buf = buf;
    w->cap = buf ? cap : 0;
    w->pos = 0;
    w->err = KP_OK;
}

/* Returns where to write n bytes (or NULL in count mode) after checking
 * space; on failure sets w->err and returns NULL with *ok false. */
static uint8_t *put(kp_wr_t *w, size_t n, bool *ok) {
    *ok = false;
    if (w->err) return NULL;
    if (w->buf == NULL) {
        w->pos += n;
        *ok = true;
        return NULL;
    }
    if (n > w->cap - w->pos) {
        w->err = KP_ERR_OVERFLOW;
        return NULL;
    }
    uint8_t *p = w->buf + w->pos;
    w->pos += n;
    *ok = true;
    return p;
}

int kp_wr_raw(kp_wr_t *w, const void *src, size_t n) {
    bool ok;
    uint8_t *p = put(w, n, &ok);
    if (!ok) return w->err;
    if (p && n) memcpy(p, src, n);
    return KP_OK;
}

int kp_wr_i8(kp_wr_t *w, int8_t v) {
    uint8_t b = (uint8_t)v;
    return kp_wr_raw(w, &b, 1);
}

int kp_wr_bool(kp_wr_t *w, bool v) { return kp_wr_i8(w, v ? 1 : 0); }

int kp_wr_u16(kp_wr_t *w, uint16_t v) {
    uint8_t b[2];
    kp_store_be16(b, v);
    return kp_wr_raw(w, b, 2);
}

int kp_wr_i16(kp_wr_t *w, int16_t v) { return kp_wr_u16(w, (uint16_t)v); }

int kp_wr_u32(kp_wr_t *w, uint32_t v) {
    uint8_t b[4];
    kp_store_be32(b, v);
    return kp_wr_raw(w, b, 4);
}

int kp_wr_i32(kp_wr_t *w, int32_t v) { return kp_wr_u32(w, (uint32_t)v); }

int kp_wr_i64(kp_wr_t *w, int64_t v) {
    uint8_t b[8];
    kp_store_be64(b, (uint64_t)v);
    return kp_wr_raw(w, b, 8);
}

int kp_wr_f64(kp_wr_t *w, double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return kp_wr_i64(w, (int64_t)bits);
}

int kp_wr_uuid(kp_wr_t *w, const kp_uuid_t *v) { return kp_wr_raw(w, v->b, 16); }

int kp_wr_uvarlong(kp_wr_t *w, uint64_t v) {
    uint8_t b[10];
    size_t n = 0;
    while (v >= 0x80) {
        b[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (uint8_t)v;
    return kp_wr_raw(w, b, n);
}

int kp_wr_uvarint(kp_wr_t *w, uint32_t v) { return kp_wr_uvarlong(w, v); }

int kp_wr_varint(kp_wr_t *w, int32_t v) {
    return kp_wr_uvarint(w, ((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}

int kp_wr_varlong(kp_wr_t *w, int64_t v) {
    return kp_wr_uvarlong(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

int kp_wr_string(kp_wr_t *w, kp_str_t s) {
    if (s.p == NULL) return kp_wr_i16(w, -1);
    if (s.len > INT16_MAX) {
        if (!w->err) w->err = KP_ERR_BAD_LENGTH;
        return w->err;
    }
    int rc = kp_wr_i16(w, (int16_t)s.len);
    return rc ? rc : kp_wr_raw(w, s.p, s.len);
}

int kp_wr_compact_string(kp_wr_t *w, kp_str_t s) {
    if (s.p != NULL && s.len > INT16_MAX) {
        if (!w->err) w->err = KP_ERR_BAD_LENGTH;
        return w->err;
    }
    return kp_wr_compact_bytes(w, s);
}

int kp_wr_bytes(kp_wr_t *w, kp_bytes_t b) {
    if (b.p == NULL) return kp_wr_i32(w, -1);
    if (b.len > INT32_MAX) {
        if (!w->err) w->err = KP_ERR_BAD_LENGTH;
        return w->err;
    }
    int rc = kp_wr_i32(w, (int32_t)b.len);
    return rc ? rc : kp_wr_raw(w, b.p, b.len);
}

int kp_wr_compact_bytes(kp_wr_t *w, kp_bytes_t b) {
    if (b.p == NULL) return kp_wr_uvarint(w, 0);
    if (b.len >= UINT32_MAX) {
        if (!w->err) w->err = KP_ERR_BAD_LENGTH;
        return w->err;
    }
    int rc = kp_wr_uvarint(w, (uint32_t)b.len + 1);
    return rc ? rc : kp_wr_raw(w, b.p, b.len);
}

int kp_wr_array_len(kp_wr_t *w, int32_t count) {
    assert(count >= -1);
    return kp_wr_i32(w, count);
}

int kp_wr_compact_array_len(kp_wr_t *w, int32_t count) {
    assert(count >= -1);
    return kp_wr_uvarint(w, (uint32_t)(count + 1));
}

int kp_wr_reserve(kp_wr_t *w, size_t n, size_t *off) {
    bool ok;
    size_t at = w->pos;
    uint8_t *p = put(w, n, &ok);
    if (!ok) return w->err;
    if (p) memset(p, 0, n);
    *off = at;
    return KP_OK;
}

void kp_wr_patch_i32(kp_wr_t *w, size_t off, int32_t v) {
    if (w->buf == NULL) return;
    assert(off + 4 <= w->pos);
    kp_store_be32(w->buf + off, (uint32_t)v);
}

size_t kp_uvarlong_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t kp_uvarint_size(uint32_t v) { return kp_uvarlong_size(v); }
size_t kp_varint_size(int32_t v) { return kp_uvarint_size(((uint32_t)v << 1) ^ (uint32_t)(v >> 31)); }
size_t kp_varlong_size(int64_t v) { return kp_uvarlong_size(((uint64_t)v << 1) ^ (uint64_t)(v >> 63)); }
