/* kp_codec.h — the table-driven Kafka message codec.
 *
 * protocol/gen/kpgen.py turns protocol/schema/NAME.kps into C structs and
 * constant descriptor tables (build/gen/kp_msgs.[ch]); this one engine walks
 * those tables to decode, encode, size, initialise and dump any message.
 *
 * Decoding: strings, bytes and records are slices into the reader's buffer
 * (no copy); arrays and nullable struct fields are allocated from the caller's
 * arena. Array counts are checked against the bytes left before allocating.
 * Fields absent in the version read hold their schema default.
 *
 * Encoding policy (see protocol/README.md):
 *  - a field the version lacks must hold its default unless it is ignorable,
 *    else KP_ERR_UNSUPPORTED (a null and an empty string/bytes/array both
 *    count as default there, as does a NULL nullable struct);
 *  - a null string/bytes/array in a version where the field is not nullable
 *    is written as empty; a NULL struct pointer there is KP_ERR_BAD_VALUE;
 *  - tagged fields are written only when they differ from their default, in
 *    ascending tag order; unknown tags met while decoding are skipped.
 */
#ifndef SKIFF_KP_CODEC_H
#define SKIFF_KP_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_arena.h"
#include "protocol/kp_wire.h"

/* Every array field has this layout; count -1 = null array. */
#define KP_ARRAY(T) struct { T *items; int32_t count; }

/* A `records` field. Inline: `bytes` (null slice = null records).
 * External (ext_len > 0 or ext != NULL): the encoder writes only the length
 * prefix (ext_len) and reports a splice point through kp_enc_opts_t.on_splice;
 * the caller sends ext_len bytes from `ext` (e.g. a file range) at that point.
 * `ext` is opaque to the codec. Decoding always yields inline records. */
typedef struct kp_records {
    kp_bytes_t bytes;
    const void *ext;
    size_t ext_len;
} kp_records_t;

static inline bool kp_records_is_external(const kp_records_t *r) { return r->ext != NULL; }

/* Splice callback: `off` is the offset in the writer's buffer where the
 * external bytes belong (bytes before it were written, the bytes written next
 * follow them on the wire). Return KP_OK to go on. */
typedef int (*kp_splice_fn)(void *ctx, size_t off, const void *ext, size_t ext_len);

typedef struct kp_enc_opts {
    kp_splice_fn on_splice;   /* required when a records field is external */
    void *ctx;
    size_t ext_bytes;         /* out: total external bytes reported */
} kp_enc_opts_t;

typedef enum {
    KP_T_INT8 = 1, KP_T_INT16, KP_T_INT32, KP_T_INT64, KP_T_UINT16, KP_T_UINT32,
    KP_T_FLOAT64, KP_T_BOOL, KP_T_UUID, KP_T_STRING, KP_T_BYTES, KP_T_RECORDS,
    KP_T_STRUCT, KP_T_ARRAY,
} kp_type_t;

enum {
    KP_FD_IGNORABLE = 1,     /* may be dropped when the version lacks it */
    KP_FD_DEFAULT_NULL = 2,  /* schema default is null */
    KP_FD_PTR = 4,           /* nullable struct field, held as a pointer */
};

struct kp_struct_desc;

/* One field. Version ranges are inclusive [lo, hi]; lo > hi means "none". */
typedef struct kp_field_desc {
    const char *name;          /* snake_case, used in JSON dumps */
    uint32_t offset;           /* offsetof in the C struct */
    uint8_t type;              /* kp_type_t */
    uint8_t elem;              /* array element type (KP_T_ARRAY only) */
    uint8_t flags;             /* KP_FD_* */
    int16_t ver_lo, ver_hi;    /* versions the field exists in */
    int16_t null_lo, null_hi;  /* versions in which it may be null */
    int16_t tag_lo, tag_hi;    /* versions in which it is a tagged field */
    int32_t tag;               /* -1: never tagged */
    int64_t def_int;           /* default of integer and bool fields */
    double def_f64;
    const char *def_str;       /* string default; NULL = null or not a string */
    const struct kp_struct_desc *sub;  /* struct / struct-array element */
} kp_field_desc_t;

typedef struct kp_struct_desc {
    const char *name;          /* JSON name */
    uint32_t size_bytes;       /* sizeof the C struct */
    uint16_t nfields, ntagged;
    const kp_field_desc_t *fields;
    const uint16_t *tag_order; /* indices of tagged fields, ascending tag */
    int16_t valid_lo, valid_hi;  /* of the enclosing message */
    int16_t flex_lo, flex_hi;    /* flexible versions of the enclosing message */
} kp_struct_desc_t;

typedef struct kp_api_info {
    int16_t api_key;
    const char *name;          /* e.g. "ApiVersions" */
    int16_t min_version, max_version;   /* every version the codec handles */
    int16_t max_stable_version;         /* highest version to advertise */
    int16_t first_flexible;    /* first flexible version, -1 if none */
    int16_t flex_lo, flex_hi;  /* flexible versions: [flex_lo, flex_hi] (empty if lo > hi) */
    const kp_struct_desc_t *request;
    const kp_struct_desc_t *response;
} kp_api_info_t;

/* API registry (generated). kp_api_info: NULL for an unknown key.
 * kp_api_at(i) for i < kp_api_count iterates in ascending key order. */
const kp_api_info_t *kp_api_info(int16_t api_key);
const kp_api_info_t *kp_api_at(size_t i);
extern const size_t kp_api_count;
/* First flexible version of an API, or -1 when it has none. */
int16_t kp_api_first_flexible(const kp_api_info_t *api);
/* Descriptor of a standalone message by JSON name
 * (e.g. "ConsumerProtocolSubscription", "LeaderChangeMessage"), or NULL. */
const kp_struct_desc_t *kp_message_desc(const char *name);

static inline bool kp_ver_in(int16_t v, int16_t lo, int16_t hi) { return v >= lo && v <= hi; }
static inline bool kp_desc_flexible(const kp_struct_desc_t *d, int16_t v) {
    return kp_ver_in(v, d->flex_lo, d->flex_hi);
}

/* Sets every field of msg (d->size_bytes bytes) to its schema default:
 * a zeroed struct + init is a valid message of every version. */
void kp_msg_init(const kp_struct_desc_t *d, void *msg);

/* Decodes one message of `version` from r into out (which it initialises).
 * Slices point into r's buffer; arrays live in `a`. Bytes after the message
 * are left in r. Errors: KP_ERR_UNSUPPORTED (version outside valid range),
 * any reader error; on error r is failed and out is partly filled. */
KP_MUST_CHECK int kp_decode(const kp_struct_desc_t *d, kp_rd_t *r, int16_t version, void *out,
                            kp_arena_t *a);

/* Encodes `in` as `version` into w (count mode when w->buf is NULL).
 * opts may be NULL (then external records are KP_ERR_UNSUPPORTED). In count
 * mode external records are counted (their bytes are part of the message)
 * and no splice is reported; with a buffer they are not written. */
KP_MUST_CHECK int kp_encode(const kp_struct_desc_t *d, kp_wr_t *w, int16_t version, const void *in,
                            kp_enc_opts_t *opts);

/* Wire size of `in` as `version`, external records included. */
KP_MUST_CHECK int kp_encoded_size(const kp_struct_desc_t *d, int16_t version, const void *in,
                                  size_t *size_bytes);

/* JSON text of a message (fields present in `version`, snake_case names;
 * bytes/records as lowercase hex, uuid as 32 hex chars, null as null).
 * *out_json is malloc'd; the caller frees it. Returns KP_OK or KP_ERR_NOMEM. */
KP_MUST_CHECK int kp_dump_json(const kp_struct_desc_t *d, int16_t version, const void *msg,
                               char **out_json);

#endif
