/* cl_conn.h — one blocking connection to one Kafka broker.
 *
 * Blocking sockets with a per-call deadline (connect, send, receive): right
 * for a CLI and scripts, not for a server. On open the connection asks
 * ApiVersions (v0, which every broker answers) and afterwards every call is
 * sent at min(our highest version we can encode correctly, the broker's max);
 * an API the broker lacks fails with UNSUPPORTED_VERSION before sending.
 *
 * A response frame is read into the caller's arena, so the decoded body and
 * its string slices live exactly as long as that arena.
 *
 * Security (cl_conn_open_sec): with SSL / SASL_SSL the TLS handshake runs
 * right after connect; with SASL_* the SASL exchange (cl_sasl.h) runs after
 * ApiVersions, before anything else is sent, and a failure closes the
 * connection with "SASL authentication failed: <the broker's message>".
 */
#ifndef SKIFF_CL_CONN_H
#define SKIFF_CL_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "clients/cl_err.h"
#include "clients/cl_props.h"
#include "clients/cl_tls.h"
#include "protocol/kp_arena.h"

#define CL_API_KEYS_MAX 128                 /* api keys we track versions for */
#define CL_FRAME_MAX_BYTES ((size_t)128 << 20) /* bound on one response frame */
#define CL_HOST_BYTES 256

typedef struct cl_conn {
    int fd;                          /* -1 when closed */
    char host[CL_HOST_BYTES];
    int port;
    int32_t node_id;                 /* -1 for a bootstrap connection */
    int timeout_ms;                  /* per call */
    int32_t next_corr_id;
    const char *client_id;           /* not owned; must outlive the conn */
    int16_t ver_max[CL_API_KEYS_MAX];  /* broker's max version, -1 = unsupported */
    cl_tls_conn_t *tls;              /* NULL on a plaintext connection */
    const cl_sec_t *sasl_sec;        /* SASL settings (not owned), NULL without SASL */
    int64_t session_end_ms;          /* monotonic end of the SASL session, 0 = none */
    int64_t session_len_ms;          /* its lifetime as the broker gave it */
    int64_t answered;                /* responses received (ApiVersions included) */
} cl_conn_t;

/* Connects to host:port within timeout_ms and negotiates versions. On error
 * the message names the address; c->fd is -1. client_id must outlive c. */
CL_MUST_CHECK int cl_conn_open(cl_conn_t *c, const char *host, int port, int timeout_ms,
                               const char *client_id, cl_err_t *e);
/* The same with a security setting: sec NULL or PLAINTEXT = cl_conn_open;
 * for SSL / SASL_SSL `tls` (shared, not owned, must outlive c) is required.
 * SASL failures are CL_E_KAFKA (SASL_AUTHENTICATION_FAILED,
 * UNSUPPORTED_SASL_MECHANISM, ...); TLS failures CL_E_CONNECT. */
CL_MUST_CHECK int cl_conn_open_sec(cl_conn_t *c, const char *host, int port, int timeout_ms, const char *client_id,
                                   const cl_sec_t *sec, cl_tls_t *tls, cl_err_t *e);
/* Connects without any Kafka exchange (for the admin HTTP port); with
 * `tls` non-NULL the TLS handshake runs too. */
CL_MUST_CHECK int cl_conn_open_raw_tls(cl_conn_t *c, const char *host, int port, int timeout_ms, cl_tls_t *tls,
                                       cl_err_t *e);
/* Connects without any Kafka exchange (for the admin HTTP port). */
CL_MUST_CHECK int cl_conn_open_raw(cl_conn_t *c, const char *host, int port, int timeout_ms, cl_err_t *e);
/* Changes the per-call deadline (send and receive) of an open connection. */
void cl_conn_set_timeout(cl_conn_t *c, int timeout_ms);
/* Closes the socket (idempotent). */
void cl_conn_close(cl_conn_t *c);
static inline bool cl_conn_is_open(const cl_conn_t *c) { return c->fd >= 0; }

/* Version to use for api_key: min(our_max, broker max), or -1 when the
 * broker has no version <= our_max. */
int16_t cl_conn_version(const cl_conn_t *c, int16_t api_key, int16_t our_max);

/* Sends `req` (a kp_<api>_request_t) and, unless no_response, waits for the
 * matching response, decoded into *resp (allocated in `a`, slices into the
 * frame, which also lives in `a`). *version_out (may be NULL) receives the
 * version used. On a socket error or timeout the connection is closed and
 * CL_E_CONNECT / CL_E_TIMEOUT returned. */
CL_MUST_CHECK int cl_conn_call(cl_conn_t *c, int16_t api_key, int16_t our_max, const void *req,
                               bool no_response, void **resp, int16_t *version_out, kp_arena_t *a,
                               cl_err_t *e);

/* Writes all n bytes (TLS when the connection has it); `what` names the
 * operation in the error. On failure the connection is closed. */
CL_MUST_CHECK int cl_conn_send_all(cl_conn_t *c, const char *what, const void *p, size_t n, cl_err_t *e);
/* Reads exactly n bytes; as cl_conn_send_all. */
CL_MUST_CHECK int cl_conn_recv_all(cl_conn_t *c, const char *what, void *p, size_t n, cl_err_t *e);
/* Reads what is available, up to n bytes, into p: *got 0 = the peer
 * closed. On failure the connection is closed. */
CL_MUST_CHECK int cl_conn_recv_some(cl_conn_t *c, const char *what, void *p, size_t n, size_t *got, cl_err_t *e);

/* Parses "host:port" (IPv6 as "[::1]:9092") into host/port.
 * CL_E_USAGE when malformed. */
CL_MUST_CHECK int cl_parse_hostport(const char *s, char *host, size_t host_bytes, int *port, cl_err_t *e);

#endif
