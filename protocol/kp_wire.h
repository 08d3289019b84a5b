/* kp_wire.h — bounds-checked reader and writer for Kafka wire primitives.
 *
 * Every byte that comes from outside (socket, disk, fixture) is read through
 * kp_rd_t; nothing else in skiff does pointer arithmetic on external bytes.
 *
 * Errors are sticky: the first failure sets r->err and every later call on the
 * same reader fails too, so a decoder may check once per struct. Each call
 * still returns its status (warn_unused_result) so that no caller can forget.
 *
 * The writer works in two modes: with a buffer it writes and fails with
 * KP_ERR_OVERFLOW when the buffer is short; with buf == NULL it only counts,
 * which is how encoders compute a message's size without a second code path.
 */
#ifndef SKIFF_KP_WIRE_H
#define SKIFF_KP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KP_MUST_CHECK __attribute__((warn_unused_result))

/* Status codes of the protocol layer (0 = success, negative = failure).
 *
 * Every layer that returns int statuses owns its own range of negative
 * numbers, so a status that crosses layers (storage passes KP_ERR_* up
 * unchanged; a worker's done status is the job's result or the pool's own
 * BK_NET_ERR_CANCELLED) names exactly one cause:
 *   protocol  KP_ERR_*    [-19, -1]      this file
 *   storage   ST_ERR_*    [-39, -20]     storage/st_status.h
 *   raft      RAFT_ERR_*  [-59, -40]     raft/raft.h
 *   broker    BK_NET_ERR_*    [-119, -100]   broker/net/net.h
 *             BK_QUORUM_* [-219, -200]   broker/quorum/quorum.h
 * Each header asserts at compile time that its codes lie in its range and
 * that its range misses the ranges of the layers it includes;
 * broker/core/status.h checks all of them pairwise and names any status
 * (bk_node_status_str). Kafka's wire error codes (KP_ERROR_*, kp_errors.h) are a
 * different thing: int16 fields of responses, never returned as a status.
 *
 * X(NAME, value, description) */
#define KP_STATUS_MIN (-19)
#define KP_STATUS_MAX (-1)
#define KP_STATUS_LIST(X) \
    X(KP_ERR_TRUNCATED, -1, "truncated input")                          /* fewer bytes than the field needs */ \
    X(KP_ERR_BAD_LENGTH, -2, "bad length or count")                     /* negative (non-null) or absurd length/count */ \
    X(KP_ERR_BAD_VARINT, -3, "malformed varint")                        /* longer than its type allows */ \
    X(KP_ERR_OVERFLOW, -4, "output buffer too small")                   /* writer: destination too small */ \
    X(KP_ERR_BAD_VALUE, -5, "invalid field value")                      /* not valid for the field */ \
    X(KP_ERR_NOMEM, -6, "out of memory")                                /* allocation failed or arena cap reached */ \
    X(KP_ERR_UNSUPPORTED, -7, "unsupported api, version or codec")      /* unknown api key / version / codec */ \
    X(KP_ERR_CORRUPT, -8, "corrupt data (checksum or structure)")       /* checksum or structural corruption */ \
    X(KP_ERR_TOO_LARGE, -9, "exceeds configured limit")                 /* exceeds a configured cap */

enum {
    KP_OK = 0,
#define KP_STATUS_ENUM_(name, value, text) name = value,
    KP_STATUS_LIST(KP_STATUS_ENUM_)
#undef KP_STATUS_ENUM_
};

#define KP_STATUS_IN_RANGE_(name, value, text) \
    _Static_assert((value) >= KP_STATUS_MIN && (value) <= KP_STATUS_MAX, #name " is outside KP_STATUS_MIN..MAX");
KP_STATUS_LIST(KP_STATUS_IN_RANGE_)
#undef KP_STATUS_IN_RANGE_

/* Description of a KP_ERR_* status ("ok" for KP_OK, "unknown status" for
 * any other value). Never NULL. */
const char *kp_status_str(int status);

/* A byte range. p == NULL means a null string/bytes value (len is then 0).
 * Decoded slices point into the reader's buffer: they live as long as it. */
typedef struct kp_slice {
    const uint8_t *p;
    size_t len;
} kp_slice_t;

typedef kp_slice_t kp_str_t;
typedef kp_slice_t kp_bytes_t;

typedef struct kp_uuid {
    uint8_t b[16];
} kp_uuid_t;

static inline bool kp_slice_is_null(kp_slice_t s) { return s.p == NULL; }
static inline kp_slice_t kp_slice_null(void) { kp_slice_t s = { NULL, 0 }; return s; }
/* Slice over a NUL-terminated C string (NULL gives the null slice). */
kp_slice_t kp_slice_cstr(const char *s);
/* True when the slice holds exactly the C string s. */
bool kp_slice_eq_cstr(kp_slice_t a, const char *s);
bool kp_slice_eq(kp_slice_t a, kp_slice_t b);
/* True when the slice holds a NUL byte: such a string cannot become a C
 * string without being cut, so callers that need one refuse it. */
bool kp_slice_has_nul(kp_slice_t s);
/* A heap C string (free()) of s: "" for the null slice. NULL when out of
 * memory or when s holds a NUL (refused, never truncated: "a\0b" must not
 * become "a"). */
char *kp_slice_strdup(kp_slice_t s);

typedef struct kp_rd {
    const uint8_t *buf;
    size_t len;
    size_t pos;
    int err;
} kp_rd_t;

void kp_rd_init(kp_rd_t *r, const void *buf, size_t len);
static inline size_t kp_rd_remaining(const kp_rd_t *r) { return r->err ? 0 : r->len - r->pos; }
static inline bool kp_rd_ok(const kp_rd_t *r) { return r->err == KP_OK; }
/* Marks the reader failed with `status` (if not already failed); returns it. */
int kp_rd_fail(kp_rd_t *r, int status);

KP_MUST_CHECK int kp_rd_i8(kp_rd_t *r, int8_t *v);
KP_MUST_CHECK int kp_rd_i16(kp_rd_t *r, int16_t *v);
KP_MUST_CHECK int kp_rd_i32(kp_rd_t *r, int32_t *v);
KP_MUST_CHECK int kp_rd_i64(kp_rd_t *r, int64_t *v);
KP_MUST_CHECK int kp_rd_u16(kp_rd_t *r, uint16_t *v);
KP_MUST_CHECK int kp_rd_u32(kp_rd_t *r, uint32_t *v);
KP_MUST_CHECK int kp_rd_bool(kp_rd_t *r, bool *v);
KP_MUST_CHECK int kp_rd_f64(kp_rd_t *r, double *v);
KP_MUST_CHECK int kp_rd_uuid(kp_rd_t *r, kp_uuid_t *v);
KP_MUST_CHECK int kp_rd_uvarint(kp_rd_t *r, uint32_t *v);   /* <= 5 bytes */
KP_MUST_CHECK int kp_rd_uvarlong(kp_rd_t *r, uint64_t *v);  /* <= 10 bytes */
KP_MUST_CHECK int kp_rd_varint(kp_rd_t *r, int32_t *v);     /* zigzag */
KP_MUST_CHECK int kp_rd_varlong(kp_rd_t *r, int64_t *v);    /* zigzag */
/* n raw bytes as a slice into the buffer (no copy). */
KP_MUST_CHECK int kp_rd_raw(kp_rd_t *r, size_t n, kp_slice_t *out);
KP_MUST_CHECK int kp_rd_skip(kp_rd_t *r, size_t n);

/* Length-prefixed strings and bytes. `nullable` false makes a null an error
 * (KP_ERR_BAD_LENGTH). Classic strings are capped at INT16_MAX bytes. */
KP_MUST_CHECK int kp_rd_string(kp_rd_t *r, bool nullable, kp_str_t *out);         /* INT16 len */
KP_MUST_CHECK int kp_rd_compact_string(kp_rd_t *r, bool nullable, kp_str_t *out); /* uvarint len+1 */
KP_MUST_CHECK int kp_rd_bytes(kp_rd_t *r, bool nullable, kp_bytes_t *out);        /* INT32 len */
KP_MUST_CHECK int kp_rd_compact_bytes(kp_rd_t *r, bool nullable, kp_bytes_t *out);
/* Decoder limits (Kafka 4.x's): an array of more elements, or a tagged-field
 * section of more fields, is KP_ERR_BAD_LENGTH whatever the bytes left. No
 * request we serve needs more; the bound caps the work and memory one frame
 * can ask for even when socket.request.max.bytes is raised. */
#define KP_ARRAY_COUNT_MAX 1000000
#define KP_TAGGED_FIELDS_MAX 10000

/* Array element counts: -1 means null (only when nullable). The count is
 * checked against KP_ARRAY_COUNT_MAX and against the bytes left, at
 * `min_elem_bytes` each (>= 1), so a hostile count can never make a caller
 * allocate more than the input allows. */
KP_MUST_CHECK int kp_rd_array_len(kp_rd_t *r, bool nullable, size_t min_elem_bytes, int32_t *count);
KP_MUST_CHECK int kp_rd_compact_array_len(kp_rd_t *r, bool nullable, size_t min_elem_bytes,
                                          int32_t *count);

/* Tagged-field section: calls on_tag for each field (tag, payload slice);
 * the callback returns KP_OK to go on. A NULL callback skips every field.
 * Tags must be strictly ascending; more than KP_TAGGED_FIELDS_MAX fields is
 * KP_ERR_BAD_LENGTH. */
typedef int (*kp_tag_fn)(void *ctx, uint32_t tag, kp_slice_t payload);
KP_MUST_CHECK int kp_rd_tags(kp_rd_t *r, kp_tag_fn on_tag, void *ctx);

typedef struct kp_wr {
    uint8_t *buf;   /* NULL: count only */
    size_t cap;
    size_t pos;
    int err;
} kp_wr_t;

void kp_wr_init(kp_wr_t *w, void *buf, size_t cap);
static inline void kp_wr_init_count(kp_wr_t *w) { kp_wr_init(w, NULL, 0); }
static inline bool kp_wr_ok(const kp_wr_t *w) { return w->err == KP_OK; }

KP_MUST_CHECK int kp_wr_i8(kp_wr_t *w, int8_t v);
KP_MUST_CHECK int kp_wr_i16(kp_wr_t *w, int16_t v);
KP_MUST_CHECK int kp_wr_i32(kp_wr_t *w, int32_t v);
KP_MUST_CHECK int kp_wr_i64(kp_wr_t *w, int64_t v);
KP_MUST_CHECK int kp_wr_u16(kp_wr_t *w, uint16_t v);
KP_MUST_CHECK int kp_wr_u32(kp_wr_t *w, uint32_t v);
KP_MUST_CHECK int kp_wr_bool(kp_wr_t *w, bool v);
KP_MUST_CHECK int kp_wr_f64(kp_wr_t *w, double v);
KP_MUST_CHECK int kp_wr_uuid(kp_wr_t *w, const kp_uuid_t *v);
KP_MUST_CHECK int kp_wr_uvarint(kp_wr_t *w, uint32_t v);
KP_MUST_CHECK int kp_wr_uvarlong(kp_wr_t *w, uint64_t v);
KP_MUST_CHECK int kp_wr_varint(kp_wr_t *w, int32_t v);
KP_MUST_CHECK int kp_wr_varlong(kp_wr_t *w, int64_t v);
KP_MUST_CHECK int kp_wr_raw(kp_wr_t *w, const void *p, size_t n);
KP_MUST_CHECK int kp_wr_string(kp_wr_t *w, kp_str_t s);          /* null slice -> -1 */
KP_MUST_CHECK int kp_wr_compact_string(kp_wr_t *w, kp_str_t s);  /* null slice -> 0 */
KP_MUST_CHECK int kp_wr_bytes(kp_wr_t *w, kp_bytes_t b);
KP_MUST_CHECK int kp_wr_compact_bytes(kp_wr_t *w, kp_bytes_t b);
KP_MUST_CHECK int kp_wr_array_len(kp_wr_t *w, int32_t count);          /* -1 = null */
KP_MUST_CHECK int kp_wr_compact_array_len(kp_wr_t *w, int32_t count);  /* -1 = null */
/* Reserve n bytes to fill in later (e.g. a length); returns their offset. */
KP_MUST_CHECK int kp_wr_reserve(kp_wr_t *w, size_t n, size_t *off);
/* Overwrite 4 bytes at a reserved offset (ignored in count mode). */
void kp_wr_patch_i32(kp_wr_t *w, size_t off, int32_t v);

/* Sizes of varints, for size computations without a writer. */
size_t kp_uvarint_size(uint32_t v);
size_t kp_uvarlong_size(uint64_t v);
size_t kp_varint_size(int32_t v);
size_t kp_varlong_size(int64_t v);

/* Big-endian loads/stores on memory the caller has already bounds-checked. */
static inline uint16_t kp_load_be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline uint32_t kp_load_be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t kp_load_be64(const uint8_t *p) {
    return ((uint64_t)kp_load_be32(p) << 32) | kp_load_be32(p + 4);
}
static inline void kp_store_be16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void kp_store_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static inline void kp_store_be64(uint8_t *p, uint64_t v) {
    kp_store_be32(p, (uint32_t)(v >> 32));
    kp_store_be32(p + 4, (uint32_t)v);
}

#endif
