/* msgset_convert.c — legacy message set <-> one v2 batch. */
#include <assert.h>
#include <stdbool.h>
#include <string.h>
#include <zlib.h>

#include "protocol/kp_compress.h"
#include "protocol/kp_msgset.h"

int kp_msgset_to_batch(const uint8_t *buf, size_t len, unsigned flags, kp_codec_t codec, kp_arena_t *a,
                       size_t cap_bytes, const uint8_t **out, size_t *out_len) {
    kp_msgset_iter_t it;
    kp_legacy_msg_t m;
    kp_msgset_iter_init(&it, buf, len, a, cap_bytes);
    kp_batch_opts_t o = kp_batch_opts_default();
    o.codec = codec;
    kp_batch_builder_t bb;
    bool started = false;
    int rc;
    int32_t n = 0;
    while ((rc = kp_msgset_iter_next(&it, &m)) == 1) {
        if (!started) {
            o.base_offset = (flags & KP_MSGSET_ASSIGN_OFFSETS) ? 0 : m.offset;
            kp_batch_builder_init(&bb, &o);
            started = true;
        }
        int64_t delta = n;
        bool bad = !(flags & KP_MSGSET_ASSIGN_OFFSETS) && __builtin_sub_overflow(m.offset, o.base_offset, &delta);
        kp_record_in_t rec = { .timestamp = m.timestamp, .key = m.key, .value = m.value };
        rc = (bad || delta < 0 || delta > INT32_MAX) ? KP_ERR_BAD_VALUE
                                                     : kp_batch_builder_add_at(&bb, (int32_t)delta, &rec);
        if (rc) break;
        n++;
    }
    if (!started) return rc < 0 ? rc : KP_ERR_BAD_VALUE;
    if (rc == 0) rc = kp_batch_builder_finish(&bb, a, out, out_len);
    kp_batch_builder_free(&bb);
    return rc;
}

static size_t msg_bytes(int8_t magic, const kp_record_t *r) {
    return KP_BATCH_LOG_OVERHEAD + (magic == 0 ? KP_MSG_V0_MIN_BYTES : KP_MSG_V1_MIN_BYTES) + r->key.len + r->value.len;
}

static int write_msg(kp_wr_t *w, int8_t magic, int8_t attrs, const kp_record_t *r) {
    size_t start = w->pos;
    size_t size = msg_bytes(magic, r) - KP_BATCH_LOG_OVERHEAD;
    int rc;
    if ((rc = kp_wr_i64(w, r->offset)) || (rc = kp_wr_i32(w, (int32_t)size)) || (rc = kp_wr_u32(w, 0)) ||
        (rc = kp_wr_i8(w, magic)) || (rc = kp_wr_i8(w, attrs)))
        return rc;
    if (magic == 1 && (rc = kp_wr_i64(w, r->timestamp))) return rc;
    if ((rc = kp_wr_bytes(w, r->key)) || (rc = kp_wr_bytes(w, r->value))) return rc;
    assert(w->pos - start == size + KP_BATCH_LOG_OVERHEAD);
    uint8_t *m = w->buf + start + KP_BATCH_LOG_OVERHEAD;
    kp_store_be32(m, (uint32_t)crc32(0, m + 4, (uInt)(size - 4)));
    return KP_OK;
}

int kp_batch_to_msgset(const kp_batch_t *b, const uint8_t *records, size_t len, int8_t magic, kp_arena_t *a,
                       const uint8_t **out, size_t *out_len) {
    if (magic != 0 && magic != 1) return KP_ERR_UNSUPPORTED;
    if (kp_batch_is_control(b)) {
        *out = (const uint8_t *)"";
        *out_len = 0;
        return KP_OK;
    }
    int8_t attrs = (magic == 1 && (b->attributes & KP_BATCH_TIMESTAMP_LOG_APPEND)) ? KP_MSG_TIMESTAMP_LOG_APPEND : 0;
    kp_record_iter_t it;
    kp_record_t r;
    int rc;
    size_t total = 0;
    kp_record_iter_init(&it, b, records, len);
    while ((rc = kp_record_iter_next(&it, &r)) == 1) {
        if (r.key.len > INT32_MAX / 2 || r.value.len > INT32_MAX / 2) return KP_ERR_TOO_LARGE;
        total += msg_bytes(magic, &r);
    }
    if (rc < 0) return rc;
    uint8_t *dst = kp_arena_alloc(a, total ? total : 1);
    if (dst == NULL) return KP_ERR_NOMEM;
    kp_wr_t w;
    kp_wr_init(&w, dst, total);
    kp_record_iter_init(&it, b, records, len);
    while ((rc = kp_record_iter_next(&it, &r)) == 1)
        if ((rc = write_msg(&w, magic, attrs, &r))) return rc;
    if (rc < 0) return rc;
    assert(w.pos == total);
    *out = dst;
    *out_len = total;
    return KP_OK;
}
