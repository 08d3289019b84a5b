/* codec.c — the one engine that walks the generated descriptor tables
 * (kp_msgs.c) to init, decode, encode and size every Kafka message.
 *
 * Recursion follows the schema's struct nesting, which kpgen.py checks is
 * acyclic, so the stack depth is bounded by the deepest schema (< 8 levels).
 * Loops are bounded by field counts (schema) and array counts, which the
 * reader checks against the bytes left before anything is allocated.
 */
#include <assert.h>
#include <string.h>

#include "protocol/kp_codec.h"

typedef struct {
    void *items;
    int32_t count;
} any_array_t;

/* Every KP_ARRAY(T) has this layout; the engine relies on it. */
static_assert(sizeof(KP_ARRAY(int8_t)) == sizeof(any_array_t), "array layout");
static_assert(offsetof(any_array_t, count) == sizeof(void *), "array layout");

static any_array_t load_array(const void *p) {
    any_array_t a;
    memcpy(&a, p, sizeof a);
    return a;
}

static void store_array(void *p, void *items, int32_t count) {
    any_array_t a = { items, count };
    memcpy(p, &a, sizeof a);
}

static void *load_ptr(const void *p) {
    void *v;
    memcpy(&v, p, sizeof v);
    return v;
}

static bool is_tagged(const kp_field_desc_t *f, int16_t v) {
    return f->tag >= 0 && kp_ver_in(v, f->tag_lo, f->tag_hi);
}

static bool is_nullable(const kp_field_desc_t *f, int16_t v) {
    return kp_ver_in(v, f->null_lo, f->null_hi);
}

/* Size in memory of one array element. */
static size_t elem_c_size(uint8_t t, const kp_struct_desc_t *sub) {
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
    case KP_T_STRUCT: return sub->size_bytes;
    default: assert(!"bad element type"); return 1;
    }
}

static size_t struct_min_wire(const kp_struct_desc_t *d, int16_t v, bool flex);

/* Fewest bytes one value of type t can take on the wire. */
static size_t min_wire(uint8_t t, const kp_struct_desc_t *sub, int16_t v, bool flex) {
    switch (t) {
    case KP_T_INT8: case KP_T_BOOL: return 1;
    case KP_T_INT16: case KP_T_UINT16: return 2;
    case KP_T_INT32: case KP_T_UINT32: return 4;
    case KP_T_INT64: case KP_T_FLOAT64: return 8;
    case KP_T_UUID: return 16;
    case KP_T_STRING: return flex ? 1 : 2;
    case KP_T_BYTES: case KP_T_RECORDS: case KP_T_ARRAY: return flex ? 1 : 4;
    case KP_T_STRUCT: return struct_min_wire(sub, v, flex);
    default: assert(!"bad type"); return 1;
    }
}

static size_t struct_min_wire(const kp_struct_desc_t *d, int16_t v, bool flex) {
    size_t n = flex ? 1 : 0;   /* the tagged-field count */
    for (uint16_t i = 0; i < d->nfields; i++) {
        const kp_field_desc_t *f = &d->fields[i];
        if (!kp_ver_in(v, f->ver_lo, f->ver_hi) || is_tagged(f, v)) continue;
        if (f->type == KP_T_STRUCT && (f->flags & KP_FD_PTR) && is_nullable(f, v)) n += 1;
        else n += min_wire(f->type, f->sub, v, flex);
    }
    return n;
}

/* ---- defaults ------------------------------------------------------------ */

static void set_int(void *p, uint8_t t, int64_t x) {
    switch (t) {
    case KP_T_INT8: { int8_t y = (int8_t)x; memcpy(p, &y, 1); break; }
    case KP_T_INT16: { int16_t y = (int16_t)x; memcpy(p, &y, 2); break; }
    case KP_T_INT32: { int32_t y = (int32_t)x; memcpy(p, &y, 4); break; }
    case KP_T_INT64: memcpy(p, &x, 8); break;
    case KP_T_UINT16: { uint16_t y = (uint16_t)x; memcpy(p, &y, 2); break; }
    case KP_T_UINT32: { uint32_t y = (uint32_t)x; memcpy(p, &y, 4); break; }
    case KP_T_BOOL: { bool y = x != 0; memcpy(p, &y, sizeof y); break; }
    default: assert(!"not an integer type");
    }
}

static int64_t get_int(const void *p, uint8_t t) {
    switch (t) {
    case KP_T_INT8: { int8_t y; memcpy(&y, p, 1); return y; }
    case KP_T_INT16: { int16_t y; memcpy(&y, p, 2); return y; }
    case KP_T_INT32: { int32_t y; memcpy(&y, p, 4); return y; }
    case KP_T_INT64: { int64_t y; memcpy(&y, p, 8); return y; }
    case KP_T_UINT16: { uint16_t y; memcpy(&y, p, 2); return y; }
    case KP_T_UINT32: { uint32_t y; memcpy(&y, p, 4); return y; }
    case KP_T_BOOL: { bool y; memcpy(&y, p, sizeof y); return y ? 1 : 0; }
    default: assert(!"not an integer type"); return 0;
    }
}

static const uint8_t empty_bytes[1];

static void set_default(const kp_field_desc_t *f, void *p) {
    bool dnull = f->flags & KP_FD_DEFAULT_NULL;
    switch (f->type) {
    case KP_T_FLOAT64: memcpy(p, &f->def_f64, sizeof(double)); break;
    case KP_T_UUID: case KP_T_RECORDS: break;   /* zero / null */
    case KP_T_STRING: {
        kp_str_t s = kp_slice_null();
        if (!dnull) {
            /* most string fields default to "": no strlen for them (every
             * struct decoded or initialised passes here, issue 19) */
            const char *d = f->def_str ? f->def_str : "";
            s.p = (const uint8_t *)d;
            s.len = d[0] ? strlen(d) : 0;
        }
        memcpy(p, &s, sizeof s);
        break;
    }
    case KP_T_BYTES: {
        kp_bytes_t b = { dnull ? NULL : empty_bytes, 0 };
        memcpy(p, &b, sizeof b);
        break;
    }
    case KP_T_ARRAY: store_array(p, NULL, dnull ? -1 : 0); break;
    case KP_T_STRUCT:
        if (!(f->flags & KP_FD_PTR)) kp_msg_init(f->sub, p);
        break;
    default:
        if (f->def_int) set_int(p, f->type, f->def_int);
        break;
    }
}

void kp_msg_init(const kp_struct_desc_t *d, void *msg) {
    assert(d && msg);
    memset(msg, 0, d->size_bytes);
    for (uint16_t i = 0; i < d->nfields; i++) {
        const kp_field_desc_t *f = &d->fields[i];
        set_default(f, (char *)msg + f->offset);
    }
}

static bool struct_is_default(const kp_struct_desc_t *d, const void *msg, bool lenient);

/* Whether the value at p equals the field's default. `lenient` also accepts
 * null for empty and empty for null (used for fields a version lacks). */
static bool is_default(const kp_field_desc_t *f, const void *p, bool lenient) {
    bool dnull = f->flags & KP_FD_DEFAULT_NULL;
    switch (f->type) {
    case KP_T_FLOAT64: { double x; memcpy(&x, p, sizeof x); return x == f->def_f64; }
    case KP_T_UUID: {
        static const kp_uuid_t zero;
        return memcmp(p, &zero, sizeof zero) == 0;
    }
    case KP_T_STRING: {
        kp_str_t s;
        memcpy(&s, p, sizeof s);
        if (!s.p) return dnull || (lenient && !(f->def_str && f->def_str[0]));
        if (dnull) return lenient && s.len == 0;
        const char *d = f->def_str ? f->def_str : "";
        return s.len == (d[0] ? strlen(d) : 0) && memcmp(s.p, d, s.len) == 0;
    }
    case KP_T_BYTES: {
        kp_bytes_t b;
        memcpy(&b, p, sizeof b);
        if (!b.p) return dnull || lenient;
        return b.len == 0 && (!dnull || lenient);
    }
    case KP_T_RECORDS: {
        const kp_records_t *r = p;
        if (r->ext) return false;
        return r->bytes.p == NULL || (lenient && r->bytes.len == 0);
    }
    case KP_T_ARRAY: {
        any_array_t a = load_array(p);
        if (a.count == -1) return dnull || lenient;
        return a.count == 0 && (!dnull || lenient);
    }
    case KP_T_STRUCT:
        if (f->flags & KP_FD_PTR) {
            const void *q = load_ptr(p);
            if (!q) return true;
            return (lenient || !dnull) && struct_is_default(f->sub, q, lenient);
        }
        return struct_is_default(f->sub, p, lenient);
    default:
        return get_int(p, f->type) == f->def_int;
    }
}

static bool struct_is_default(const kp_struct_desc_t *d, const void *msg, bool lenient) {
    for (uint16_t i = 0; i < d->nfields; i++) {
        const kp_field_desc_t *f = &d->fields[i];
        if (!is_default(f, (const char *)msg + f->offset, lenient)) return false;
    }
    return true;
}

/* ---- decode -------------------------------------------------------------- */

typedef struct {
    kp_rd_t *r;
    kp_arena_t *a;
    int16_t ver;
    bool flex;
} dctx_t;

static int dec_struct(const dctx_t *c, const kp_struct_desc_t *d, void *out);

static int dec_scalar(const dctx_t *c, uint8_t t, bool nullable, void *p) {
    kp_rd_t *r = c->r;
    switch (t) {
    case KP_T_INT8: return kp_rd_i8(r, p);
    case KP_T_INT16: return kp_rd_i16(r, p);
    case KP_T_INT32: return kp_rd_i32(r, p);
    case KP_T_INT64: return kp_rd_i64(r, p);
    case KP_T_UINT16: return kp_rd_u16(r, p);
    case KP_T_UINT32: return kp_rd_u32(r, p);
    case KP_T_FLOAT64: return kp_rd_f64(r, p);
    case KP_T_BOOL: return kp_rd_bool(r, p);
    case KP_T_UUID: return kp_rd_uuid(r, p);
    case KP_T_STRING:
        return c->flex ? kp_rd_compact_string(r, nullable, p) : kp_rd_string(r, nullable, p);
    case KP_T_BYTES:
        return c->flex ? kp_rd_compact_bytes(r, nullable, p) : kp_rd_bytes(r, nullable, p);
    case KP_T_RECORDS: {
        kp_records_t *rec = p;
        memset(rec, 0, sizeof *rec);
        return c->flex ? kp_rd_compact_bytes(r, true, &rec->bytes)
                       : kp_rd_bytes(r, true, &rec->bytes);
    }
    default: assert(!"bad scalar type"); return kp_rd_fail(r, KP_ERR_BAD_VALUE);
    }
}

static int dec_array(const dctx_t *c, const kp_field_desc_t *f, void *p) {
    bool nullable = is_nullable(f, c->ver);
    size_t min = min_wire(f->elem, f->sub, c->ver, c->flex);
    int32_t n = 0;
    int rc = c->flex ? kp_rd_compact_array_len(c->r, nullable, min ? min : 1, &n)
                     : kp_rd_array_len(c->r, nullable, min ? min : 1, &n);
    if (rc) return rc;
    if (n <= 0) {
        store_array(p, NULL, n);
        return KP_OK;
    }
    /* Allocated up front, but never from the count alone: the reader has
     * checked n <= KP_ARRAY_COUNT_MAX and n * min <= bytes left, so this is
     * at most (bytes left) * esz / min, a constant factor of the frame's
     * bytes fixed by the schema, and the arena's cap bounds it per request. */
    size_t esz = elem_c_size(f->elem, f->sub);
    char *items = c->a ? kp_arena_alloc(c->a, (size_t)n * esz) : NULL;
    if (!items) return kp_rd_fail(c->r, KP_ERR_NOMEM);
    store_array(p, items, n);
    for (int32_t i = 0; i < n; i++) {
        void *it = items + (size_t)i * esz;
        rc = f->elem == KP_T_STRUCT ? dec_struct(c, f->sub, it) : dec_scalar(c, f->elem, false, it);
        if (rc) return rc;
    }
    return KP_OK;
}

static int dec_field(const dctx_t *c, const kp_field_desc_t *f, void *p) {
    if (f->type == KP_T_ARRAY) return dec_array(c, f, p);
    if (f->type != KP_T_STRUCT) return dec_scalar(c, f->type, is_nullable(f, c->ver), p);
    if (!(f->flags & KP_FD_PTR)) return dec_struct(c, f->sub, p);
    if (is_nullable(f, c->ver)) {
        int8_t marker = 0;
        int rc = kp_rd_i8(c->r, &marker);
        if (rc) return rc;
        if (marker < 0) {
            void *none = NULL;
            memcpy(p, &none, sizeof none);
            return KP_OK;
        }
    }
    void *q = c->a ? kp_arena_alloc(c->a, f->sub->size_bytes) : NULL;
    if (!q) return kp_rd_fail(c->r, KP_ERR_NOMEM);
    memcpy(p, &q, sizeof q);
    return dec_struct(c, f->sub, q);
}

typedef struct {
    const dctx_t *c;
    const kp_struct_desc_t *d;
    void *out;
} tagctx_t;

/* A tagged field's payload is decoded from its own slice, so a payload that
 * is shorter than its value fails and one that is longer is ignored (the
 * remainder may be a newer extension of the field). */
static int on_tag(void *ctx, uint32_t tag, kp_slice_t payload) {
    const tagctx_t *t = ctx;
    for (uint16_t i = 0; i < t->d->ntagged; i++) {
        const kp_field_desc_t *f = &t->d->fields[t->d->tag_order[i]];
        if ((uint32_t)f->tag != tag || !is_tagged(f, t->c->ver)) continue;
        kp_rd_t sub;
        kp_rd_init(&sub, payload.p, payload.len);
        dctx_t c2 = *t->c;
        c2.r = &sub;
        c2.flex = true;
        return dec_field(&c2, f, (char *)t->out + f->offset);
    }
    return KP_OK;   /* unknown tag: skipped */
}

static int dec_struct(const dctx_t *c, const kp_struct_desc_t *d, void *out) {
    kp_msg_init(d, out);
    for (uint16_t i = 0; i < d->nfields; i++) {
        const kp_field_desc_t *f = &d->fields[i];
        if (!kp_ver_in(c->ver, f->ver_lo, f->ver_hi) || is_tagged(f, c->ver)) continue;
        int rc = dec_field(c, f, (char *)out + f->offset);
        if (rc) return rc;
    }
    if (!c->flex) return KP_OK;
    tagctx_t t = { c, d, out };
    return kp_rd_tags(c->r, on_tag, &t);
}

int kp_decode(const kp_struct_desc_t *d, kp_rd_t *r, int16_t version, void *out, kp_arena_t *a) {
    assert(d && r && out);
    if (!kp_ver_in(version, d->valid_lo, d->valid_hi)) return kp_rd_fail(r, KP_ERR_UNSUPPORTED);
    if (r->err) return r->err;
    dctx_t c = { r, a, version, kp_desc_flexible(d, version) };
    int rc = dec_struct(&c, d, out);
    return rc ? kp_rd_fail(r, rc) : KP_OK;
}

/* ---- encode -------------------------------------------------------------- */

typedef struct {
    kp_wr_t *w;
    kp_enc_opts_t *opts;
    int16_t ver;
    bool flex;
} ectx_t;

static int wfail(kp_wr_t *w, int rc) {
    if (w->err == KP_OK) w->err = rc;
    return w->err;
}

static int enc_struct(const ectx_t *c, const kp_struct_desc_t *d, const void *in);

static int enc_slice(const ectx_t *c, uint8_t t, bool nullable, kp_slice_t s) {
    if (!s.p && !nullable) s.p = empty_bytes;   /* documented leniency */
    if (t == KP_T_STRING) return c->flex ? kp_wr_compact_string(c->w, s) : kp_wr_string(c->w, s);
    return c->flex ? kp_wr_compact_bytes(c->w, s) : kp_wr_bytes(c->w, s);
}

static int enc_external(const ectx_t *c, const kp_records_t *rec) {
    kp_wr_t *w = c->w;
    if (rec->ext_len > INT32_MAX - 1) return wfail(w, KP_ERR_TOO_LARGE);
    int rc = c->flex ? kp_wr_uvarint(w, (uint32_t)rec->ext_len + 1)
                     : kp_wr_i32(w, (int32_t)rec->ext_len);
    if (rc) return rc;
    if (!w->buf) {   /* count mode: the external bytes are part of the size */
        w->pos += rec->ext_len;
        return KP_OK;
    }
    if (!c->opts || !c->opts->on_splice) return wfail(w, KP_ERR_UNSUPPORTED);
    rc = c->opts->on_splice(c->opts->ctx, w->pos, rec->ext, rec->ext_len);
    if (rc) return wfail(w, rc);
    c->opts->ext_bytes += rec->ext_len;
    return KP_OK;
}

static int enc_scalar(const ectx_t *c, uint8_t t, bool nullable, const void *p) {
    kp_wr_t *w = c->w;
    switch (t) {
    case KP_T_INT8: return kp_wr_i8(w, (int8_t)get_int(p, t));
    case KP_T_INT16: return kp_wr_i16(w, (int16_t)get_int(p, t));
    case KP_T_INT32: return kp_wr_i32(w, (int32_t)get_int(p, t));
    case KP_T_INT64: return kp_wr_i64(w, get_int(p, t));
    case KP_T_UINT16: return kp_wr_u16(w, (uint16_t)get_int(p, t));
    case KP_T_UINT32: return kp_wr_u32(w, (uint32_t)get_int(p, t));
    case KP_T_BOOL: return kp_wr_bool(w, get_int(p, t) != 0);
    case KP_T_FLOAT64: { double x; memcpy(&x, p, sizeof x); return kp_wr_f64(w, x); }
    case KP_T_UUID: return kp_wr_uuid(w, p);
    case KP_T_STRING: case KP_T_BYTES: {
        kp_slice_t s;
        memcpy(&s, p, sizeof s);
        return enc_slice(c, t, nullable, s);
    }
    case KP_T_RECORDS: {
        const kp_records_t *rec = p;
        if (rec->ext) return enc_external(c, rec);
        return enc_slice(c, KP_T_BYTES, true, rec->bytes);
    }
    default: assert(!"bad scalar type"); return wfail(w, KP_ERR_BAD_VALUE);
    }
}

static int enc_array(const ectx_t *c, const kp_field_desc_t *f, const void *p) {
    any_array_t a = load_array(p);
    bool nullable = is_nullable(f, c->ver);
    if (a.count < -1 || (a.count > 0 && !a.items)) return wfail(c->w, KP_ERR_BAD_VALUE);
    int32_t n = (a.count == -1 && !nullable) ? 0 : a.count;   /* documented leniency */
    int rc = c->flex ? kp_wr_compact_array_len(c->w, n) : kp_wr_array_len(c->w, n);
    if (rc) return rc;
    size_t esz = elem_c_size(f->elem, f->sub);
    for (int32_t i = 0; i < n; i++) {
        const void *it = (const char *)a.items + (size_t)i * esz;
        rc = f->elem == KP_T_STRUCT ? enc_struct(c, f->sub, it) : enc_scalar(c, f->elem, false, it);
        if (rc) return rc;
    }
    return KP_OK;
}

static int enc_field(const ectx_t *c, const kp_field_desc_t *f, const void *p) {
    if (f->type == KP_T_ARRAY) return enc_array(c, f, p);
    if (f->type != KP_T_STRUCT) return enc_scalar(c, f->type, is_nullable(f, c->ver), p);
    if (!(f->flags & KP_FD_PTR)) return enc_struct(c, f->sub, p);
    const void *q = load_ptr(p);
    if (is_nullable(f, c->ver)) {
        int rc = kp_wr_i8(c->w, q ? 1 : -1);
        if (rc || !q) return rc;
    } else if (!q) {
        return wfail(c->w, KP_ERR_BAD_VALUE);
    }
    return enc_struct(c, f->sub, q);
}

static int enc_tags(const ectx_t *c, const kp_struct_desc_t *d, const void *in) {
    uint32_t n = 0;
    for (uint16_t i = 0; i < d->ntagged; i++) {
        const kp_field_desc_t *f = &d->fields[d->tag_order[i]];
        if (is_tagged(f, c->ver) && !is_default(f, (const char *)in + f->offset, false)) n++;
    }
    int rc = kp_wr_uvarint(c->w, n);
    for (uint16_t i = 0; i < d->ntagged && !rc; i++) {
        const kp_field_desc_t *f = &d->fields[d->tag_order[i]];
        const void *p = (const char *)in + f->offset;
        if (!is_tagged(f, c->ver) || is_default(f, p, false)) continue;
        /* size first (count mode), then the payload: tagged values are small */
        kp_wr_t cw;
        kp_wr_init_count(&cw);
        ectx_t cc = { &cw, NULL, c->ver, true };
        if ((rc = enc_field(&cc, f, p))) return wfail(c->w, rc);
        if (cw.pos > UINT32_MAX) return wfail(c->w, KP_ERR_TOO_LARGE);
        if ((rc = kp_wr_uvarint(c->w, (uint32_t)f->tag)) ||
            (rc = kp_wr_uvarint(c->w, (uint32_t)cw.pos)))
            return rc;
        rc = enc_field(c, f, p);
    }
    return rc;
}

static int enc_struct(const ectx_t *c, const kp_struct_desc_t *d, const void *in) {
    for (uint16_t i = 0; i < d->nfields; i++) {
        const kp_field_desc_t *f = &d->fields[i];
        const void *p = (const char *)in + f->offset;
        if (!kp_ver_in(c->ver, f->ver_lo, f->ver_hi)) {
            if (!(f->flags & KP_FD_IGNORABLE) && !is_default(f, p, true))
                return wfail(c->w, KP_ERR_UNSUPPORTED);
            continue;
        }
        if (is_tagged(f, c->ver)) continue;
        int rc = enc_field(c, f, p);
        if (rc) return rc;
    }
    return c->flex ? enc_tags(c, d, in) : KP_OK;
}

int kp_encode(const kp_struct_desc_t *d, kp_wr_t *w, int16_t version, const void *in,
              kp_enc_opts_t *opts) {
    assert(d && w && in);
    if (w->err) return w->err;
    if (!kp_ver_in(version, d->valid_lo, d->valid_hi)) return wfail(w, KP_ERR_UNSUPPORTED);
    ectx_t c = { w, opts, version, kp_desc_flexible(d, version) };
    int rc = enc_struct(&c, d, in);
    return rc ? wfail(w, rc) : KP_OK;
}

int kp_encoded_size(const kp_struct_desc_t *d, int16_t version, const void *in, size_t *size_bytes) {
    kp_wr_t w;
    kp_wr_init_count(&w);
    int rc = kp_encode(d, &w, version, in, NULL);
    *size_bytes = rc ? 0 : w.pos;
    return rc;
}

int16_t kp_api_first_flexible(const kp_api_info_t *api) {
    assert((api->flex_lo <= api->flex_hi ? api->flex_lo : -1) == api->first_flexible);
    return api->first_flexible;
}
