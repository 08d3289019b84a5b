/* cl_http.h — a minimal HTTP/1.0 GET for skiff's admin port (plain or
 * TLS, optionally with HTTP Basic credentials).
 *
 * One request per connection ("Connection: close"), body read to EOF,
 * bounded by CL_HTTP_BODY_MAX_BYTES. Enough for GET /v1/quorum and friends;
 * not a general HTTP client (no chunked encoding, no redirects).
 */
#ifndef SKIFF_CL_HTTP_H
#define SKIFF_CL_HTTP_H

#include <stddef.h>

#include "clients/cl_err.h"
#include "clients/cl_props.h"

#define CL_HTTP_BODY_MAX_BYTES ((size_t)16 << 20)

/* GET http://addr/path. On CL_OK *status is the HTTP status and *body a
 * malloc'd NUL-terminated body (caller frees). CL_E_CONNECT names addr. */
CL_MUST_CHECK int cl_http_get(const char *addr, const char *path, int timeout_ms, int *status, char **body,
                              size_t *body_len, cl_err_t *e);
/* The same with security: addr may be "host:port", "http://host:port" or
 * "https://host:port" (TLS, checked with sec's ssl.* settings as a Kafka
 * connection is; the system's CAs when sec is NULL); sec's admin.username /
 * admin.password, when set, go as `Authorization: Basic`. sec may be NULL. */
CL_MUST_CHECK int cl_http_get_sec(const char *addr, const char *path, int timeout_ms, const cl_sec_t *sec,
                                  int *status, char **body, size_t *body_len, cl_err_t *e);
/* Splits a raw HTTP response (head + body) in buf[0..n): status code and
 * body offset. CL_E_PROTO when the status line or header end is missing. */
CL_MUST_CHECK int cl_http_parse_response(const char *buf, size_t n, int *status, size_t *body_off, cl_err_t *e);

#endif
