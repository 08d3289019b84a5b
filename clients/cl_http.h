/* cl_http.h — a minimal HTTP/1.0 GET for skiff's admin port.
 *
 * One request per connection ("Connection: close"), body read to EOF,
 * bounded by CL_HTTP_BODY_MAX_BYTES. Enough for GET /v1/quorum and friends;
 * not a general HTTP client (no chunked encoding, no redirects).
 */
#ifndef SKIFF_CL_HTTP_H
#define SKIFF_CL_HTTP_H

#include <stddef.h>

#include "clients/cl_err.h"

#define CL_HTTP_BODY_MAX_BYTES ((size_t)16 << 20)

/* GET http://addr/path. On CL_OK *status is the HTTP status and *body a
 * malloc'd NUL-terminated body (caller frees). CL_E_CONNECT names addr. */
CL_MUST_CHECK int cl_http_get(const char *addr, const char *path, int timeout_ms, int *status, char **body,
                              size_t *body_len, cl_err_t *e);
/* Splits a raw HTTP response (head + body) in buf[0..n): status code and
 * body offset. CL_E_PROTO when the status line or header end is missing. */
CL_MUST_CHECK int cl_http_parse_response(const char *buf, size_t n, int *status, size_t *body_off, cl_err_t *e);

#endif
