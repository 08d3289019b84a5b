/* kp_header.h — Kafka request/response headers and whole-frame helpers.
 *
 * Header versions (NOTES.md §1.1-1.2): request header v2 iff the request
 * version is flexible, else v1 (ControlledShutdown v0: v0); response header v1
 * iff flexible, except ApiVersions responses, which always use v0. The client
 * id is always a classic INT16-length string; a null client id reads as "".
 *
 * Trailing-bytes policy: kp_request_decode reads a request by its schema and
 * ignores bytes left after the body, as Kafka does: librdkafka 2.0.x sends
 * ListGroups v4 with one extra byte and OffsetFetch v7 with three, and a
 * broker that refused them would break those clients' admin calls. A body
 * cut short is still an error. kp_response_decode (our own clients and
 * inter-broker calls) keeps refusing trailing bytes (KP_ERR_BAD_LENGTH): there
 * they would mean a schema mismatch on our side.
 */
#ifndef SKIFF_KP_HEADER_H
#define SKIFF_KP_HEADER_H

#include "kp_msgs.h"
#include "protocol/kp_codec.h"

#define KP_API_CONTROLLED_SHUTDOWN_KEY 7

typedef struct kp_request_header {
    int16_t api_key;
    int16_t api_version;
    int32_t correlation_id;
    kp_str_t client_id;   /* never null after decode ("" for a null id) */
} kp_request_header_t;

/* Header version (0, 1 or 2) for a request of (api_key, api_version). An
 * unknown api key gives 1. Versions above an API's range follow its flexible
 * rule (so an ApiVersions v9 request is read with header v2). */
int kp_request_header_version(int16_t api_key, int16_t api_version);
/* Response header version (0 or 1). */
int kp_response_header_version(int16_t api_key, int16_t api_version);

KP_MUST_CHECK int kp_request_header_decode(kp_rd_t *r, int header_version, kp_request_header_t *h);
KP_MUST_CHECK int kp_request_header_encode(kp_wr_t *w, int header_version, const kp_request_header_t *h);
KP_MUST_CHECK int kp_response_header_decode(kp_rd_t *r, int header_version, int32_t *correlation_id);
KP_MUST_CHECK int kp_response_header_encode(kp_wr_t *w, int header_version, int32_t correlation_id);

/* Decodes one request frame (the bytes after the 4-byte size): header, then
 * the body for (api_key, api_version), allocated with its arrays in `a`; the
 * body's slices point into `frame`. *body_out is a kp_<api>_request_t.
 * Returns KP_OK, or:
 *  KP_ERR_UNSUPPORTED — unknown api key or version outside the valid range;
 *    h->api_key, api_version and correlation_id are still set (client_id too
 *    when the header parsed), *body_out is NULL. For ApiVersions the broker
 *    answers UNSUPPORTED_VERSION; for other APIs it closes the connection.
 *  any reader error — malformed or truncated header or body. Bytes after
 *    the body are not an error (policy above). */
KP_MUST_CHECK int kp_request_decode(const uint8_t *frame, size_t len, kp_request_header_t *h,
                                    void **body_out, kp_arena_t *a);

/* Decodes one response frame (bytes after the size) of (api_key, version):
 * correlation id into *correlation_id, body (kp_<api>_response_t) allocated
 * in `a`. Errors as kp_request_decode, plus KP_ERR_BAD_LENGTH for bytes
 * after the body. */
KP_MUST_CHECK int kp_response_decode(int16_t api_key, int16_t api_version, const uint8_t *frame,
                                     size_t len, int32_t *correlation_id, void **body_out,
                                     kp_arena_t *a);

/* Writes a whole request frame: 4-byte size, header (version chosen by the
 * rule above), body `body` (a kp_<api>_request_t of h->api_key). */
KP_MUST_CHECK int kp_request_encode(kp_wr_t *w, const kp_request_header_t *h, const void *body);

/* kp_request_encode into a new heap buffer of exactly the frame's size (4-byte
 * size prefix included). KP_OK: *out (the caller free()s it) and *out_len are
 * set. Otherwise the encoder's status (KP_ERR_UNSUPPORTED, KP_ERR_BAD_VALUE,
 * ...) or KP_ERR_NOMEM; nothing is allocated and *out, *out_len are left as
 * they were. */
KP_MUST_CHECK int kp_request_encode_alloc(const kp_request_header_t *h, const void *body, uint8_t **out,
                                          size_t *out_len);

/* Writes a whole response frame: 4-byte size, response header, body. The
 * size includes external records bytes, which are reported through opts
 * (may be NULL when the body has none); the caller sends them at the splice
 * offsets. */
KP_MUST_CHECK int kp_response_encode(kp_wr_t *w, int16_t api_key, int16_t api_version,
                                     int32_t correlation_id, const void *body, kp_enc_opts_t *opts);

/* kp_response_encode of a body without external records (opts NULL) into a
 * new heap buffer, with kp_request_encode_alloc's contract. */
KP_MUST_CHECK int kp_response_encode_alloc(int16_t api_key, int16_t api_version, int32_t correlation_id,
                                           const void *body, uint8_t **out, size_t *out_len);

#endif
