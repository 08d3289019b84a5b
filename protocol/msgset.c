/* msgset.c — legacy message set reader (magic 0/1) with wrapper flattening. */
#include "protocol/kp_msgset.h"

#include <assert.h>
#include <zlib.h>

#include "protocol/kp_compress.h"

#define MAGIC_POS 16 /* within an entry: offset 8 + size 4 + crc 4 */

typedef struct entry {
    int64_t offset;
    int8_t magic;
    int8_t attributes;
    int64_t timestamp;
    kp_bytes_t key, value;
} entry_t;

/* The magic byte of the entry whose size field was just read (it sits after
 * the 4-byte CRC / leader epoch in every format), or -1 if not there. */
static int8_t peek_magic(const kp_rd_t *r) {
    kp_rd_t p = *r;
    int8_t magic = -1;
    if (kp_rd_skip(&p, 4) || kp_rd_i8(&p, &magic)) return -1;
    return magic;
}

/* Reads one entry. A partial entry is KP_ERR_TRUNCATED; everything else
 * wrong with it is KP_ERR_CORRUPT (or UNSUPPORTED for a magic-2 batch). */
static int read_entry(kp_rd_t *r, entry_t *e) {
    int32_t size = 0;
    kp_slice_t msg;
    if (kp_rd_remaining(r) < KP_BATCH_LOG_OVERHEAD) return kp_rd_fail(r, KP_ERR_TRUNCATED);
    if (kp_rd_i64(r, &e->offset) || kp_rd_i32(r, &size)) return r->err;
    int8_t magic = peek_magic(r);
    if (size < 0 || (size_t)size < KP_MSG_V0_MIN_BYTES)
        return kp_rd_fail(r, magic == KP_BATCH_MAGIC_V2 ? KP_ERR_UNSUPPORTED : KP_ERR_CORRUPT);
    if ((size_t)size > kp_rd_remaining(r))
        return kp_rd_fail(r, magic > 1 ? KP_ERR_UNSUPPORTED : KP_ERR_TRUNCATED);
    if (kp_rd_raw(r, (size_t)size, &msg)) return r->err;
    kp_rd_t m;
    kp_rd_init(&m, msg.p, msg.len);
    uint32_t crc = 0;
    if (kp_rd_u32(&m, &crc) || kp_rd_i8(&m, &e->magic) || kp_rd_i8(&m, &e->attributes)) return kp_rd_fail(r, KP_ERR_CORRUPT);
    if (e->magic != 0 && e->magic != 1) return kp_rd_fail(r, e->magic == 2 ? KP_ERR_UNSUPPORTED : KP_ERR_CORRUPT);
    if (e->magic == 1 && (size_t)size < KP_MSG_V1_MIN_BYTES) return kp_rd_fail(r, KP_ERR_CORRUPT);
    if (crc32(0, msg.p + 4, (uInt)(msg.len - 4)) != crc) return kp_rd_fail(r, KP_ERR_CORRUPT);
    e->timestamp = -1;
    if (e->magic == 1 && kp_rd_i64(&m, &e->timestamp)) return kp_rd_fail(r, KP_ERR_CORRUPT);
    if (kp_rd_bytes(&m, true, &e->key) || kp_rd_bytes(&m, true, &e->value) || kp_rd_remaining(&m) != 0)
        return kp_rd_fail(r, KP_ERR_CORRUPT);
    /* other attribute bits are ignored, as Kafka's LegacyRecord does */
    if ((e->attributes & KP_BATCH_COMPRESSION_MASK) > KP_CODEC_LZ4) return kp_rd_fail(r, KP_ERR_BAD_VALUE);
    return KP_OK;
}

void kp_msgset_iter_init(kp_msgset_iter_t *it, const uint8_t *buf, size_t len, kp_arena_t *a, size_t cap_bytes) {
    kp_rd_init(&it->outer, buf, len);
    it->arena = a;
    it->cap_bytes = cap_bytes;
    it->in_wrapper = false;
}

/* Inner offsets of a wrapper as scan_inner found them. */
typedef struct inner_offsets {
    int64_t last;             /* the last entry's (magic 1 wrappers count from it) */
    int64_t min, max;
} inner_offsets_t;

/* Checks every inner entry of a wrapper and collects its offsets. Neither
 * their order nor their sign is checked: Kafka ignores magic 0 inner offsets
 * and rewrites non-sequential magic 1 ones rather than refusing them, and
 * Sarama (default version 0.8.2) puts every inner message of a gzip/snappy
 * wrapper at offset 0. What is refused is an offset that overflows once
 * adjusted (open_wrapper). Cost: one pass over the decompressed set. */
static int scan_inner(const uint8_t *p, size_t n, int8_t wrapper_magic, inner_offsets_t *o) {
    kp_rd_t r;
    kp_rd_init(&r, p, n);
    int count = 0;
    entry_t e;
    while (kp_rd_remaining(&r) > 0) {
        int rc = read_entry(&r, &e);
        if (rc) return rc == KP_ERR_BAD_VALUE ? rc : KP_ERR_CORRUPT;
        if (e.magic != wrapper_magic || (e.attributes & KP_BATCH_COMPRESSION_MASK) != 0) return KP_ERR_CORRUPT;
        if (count == 0 || e.offset < o->min) o->min = e.offset;
        if (count == 0 || e.offset > o->max) o->max = e.offset;
        o->last = e.offset;
        count++;
    }
    return count > 0 ? KP_OK : KP_ERR_CORRUPT;
}

static int open_wrapper(kp_msgset_iter_t *it, const entry_t *w) {
    kp_codec_t codec = (kp_codec_t)(w->attributes & KP_BATCH_COMPRESSION_MASK);
    if (kp_slice_is_null(w->value)) return KP_ERR_CORRUPT;
    const uint8_t *inner;
    size_t inner_len;
    unsigned flags = w->magic == 0 ? KP_DECOMP_LZ4_LEGACY_HC : 0;
    int rc = kp_decompress(codec, w->value.p, w->value.len, it->cap_bytes, flags, it->arena, &inner, &inner_len);
    if (rc) return rc == KP_ERR_TOO_LARGE || rc == KP_ERR_NOMEM ? rc : KP_ERR_CORRUPT;
    inner_offsets_t off = { 0, 0, 0 };
    if ((rc = scan_inner(inner, inner_len, w->magic, &off))) return rc;
    assert(off.min <= off.last && off.last <= off.max);
    kp_rd_init(&it->inner, inner, inner_len);
    it->offset_adjust = 0;
    if (w->magic == 1 && w->offset != 0 && __builtin_sub_overflow(w->offset, off.last, &it->offset_adjust))
        return KP_ERR_CORRUPT;
    /* every inner offset lies in [min, max], so adjusting both ends proves
     * that no absolute offset overflows */
    int64_t abs_min, abs_max;
    if (__builtin_add_overflow(off.min, it->offset_adjust, &abs_min) ||
        __builtin_add_overflow(off.max, it->offset_adjust, &abs_max))
        return KP_ERR_CORRUPT;
    it->wrapper_timestamp = w->timestamp;
    it->wrapper_log_append = w->magic == 1 && (w->attributes & KP_MSG_TIMESTAMP_LOG_APPEND) != 0;
    it->wrapper_codec = codec;
    it->in_wrapper = true;
    return KP_OK;
}

static void fill(kp_legacy_msg_t *m, const entry_t *e) {
    m->offset = e->offset;
    m->magic = e->magic;
    m->attributes = e->attributes;
    m->timestamp = e->timestamp;
    m->key = e->key;
    m->value = e->value;
    m->wrapper_codec = KP_CODEC_NONE;
}

int kp_msgset_iter_next(kp_msgset_iter_t *it, kp_legacy_msg_t *msg) {
    entry_t e;
    int rc;
    for (;;) {
        if (it->outer.err) return it->outer.err;
        if (it->in_wrapper) {
            if (kp_rd_remaining(&it->inner) > 0) {
                rc = read_entry(&it->inner, &e);
                assert(rc == KP_OK); /* scan_inner checked every entry */
                fill(msg, &e);
                msg->offset += it->offset_adjust;
                if (it->wrapper_log_append) msg->timestamp = it->wrapper_timestamp;
                msg->wrapper_codec = it->wrapper_codec;
                return 1;
            }
            it->in_wrapper = false;
        }
        if (kp_rd_remaining(&it->outer) == 0) return 0;
        if ((rc = read_entry(&it->outer, &e))) return rc;
        if ((e.attributes & KP_BATCH_COMPRESSION_MASK) == KP_CODEC_NONE) {
            fill(msg, &e);
            return 1;
        }
        if ((rc = open_wrapper(it, &e))) return kp_rd_fail(&it->outer, rc);
    }
}

int kp_msgset_validate(const uint8_t *buf, size_t len, kp_arena_t *a, size_t cap_bytes, int32_t *count) {
    kp_msgset_iter_t it;
    kp_legacy_msg_t m;
    kp_msgset_iter_init(&it, buf, len, a, cap_bytes);
    int rc;
    int32_t n = 0;
    while ((rc = kp_msgset_iter_next(&it, &m)) == 1) {
        if (n == INT32_MAX) return KP_ERR_TOO_LARGE;
        n++;
    }
    if (rc == 0 && count) *count = n;
    return rc;
}
