/* cl_tls.h — TLS for clients/' blocking connections (OpenSSL).
 *
 * A cl_tls_t holds what every connection of one client shares: the trusted
 * CAs (ssl.ca.location, else the system's), the client certificate and key
 * for mutual TLS (ssl.certificate.location / ssl.key.location, the key
 * decrypted with ssl.key.password), TLS 1.2 at least. Each connection then
 * runs its handshake on an already connected blocking socket whose send and
 * receive deadlines are set (SO_SNDTIMEO / SO_RCVTIMEO bound the handshake
 * and every read and write). The broker's certificate is always verified
 * against the CAs; its name is checked against the address we dialled (DNS
 * name or IP address in the subjectAltName) unless
 * ssl.endpoint.identification.algorithm=none.
 *
 * Errors read "TLS: certificate verify failed: <reason> (host:port)" or
 * "TLS handshake with host:port failed: <reason>".
 */
#ifndef SKIFF_CL_TLS_H
#define SKIFF_CL_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "clients/cl_err.h"
#include "clients/cl_props.h"

typedef struct cl_tls cl_tls_t;         /* shared per client (an SSL_CTX) */
typedef struct cl_tls_conn cl_tls_conn_t; /* one connection (an SSL) */

/* Builds the shared context from sec's ssl.* settings. A file that cannot
 * be loaded is CL_E_USAGE naming the key, the file and OpenSSL's reason. */
CL_MUST_CHECK int cl_tls_new(const cl_sec_t *sec, cl_tls_t **out, cl_err_t *e);
void cl_tls_free(cl_tls_t *t);

/* Runs the client handshake on connected socket fd (not owned) to
 * host:port. On CL_OK *out is the connection; on failure CL_E_CONNECT (or
 * CL_E_TIMEOUT) with a message saying why. */
CL_MUST_CHECK int cl_tls_connect(cl_tls_t *t, int fd, const char *host, int port, cl_tls_conn_t **out,
                                 cl_err_t *e);
/* Writes up to n bytes; returns the count (> 0), or -1 with *err an errno
 * value (EAGAIN: the deadline passed; 0: closed or a TLS error). */
ssize_t cl_tls_send(cl_tls_conn_t *c, const void *p, size_t n, int *err);
/* Reads up to n bytes; 0 when the peer closed; -1 as cl_tls_send. */
ssize_t cl_tls_recv(cl_tls_conn_t *c, void *p, size_t n, int *err);
/* OpenSSL's reason for the last failed cl_tls_send / cl_tls_recv that
 * returned -1 with *err 0 ("" otherwise). */
const char *cl_tls_last_error(const cl_tls_conn_t *c);
/* After a failed write: when the broker has already sent something (with
 * TLS 1.3 a refused client certificate arrives as an alert after our
 * handshake finished), reads it without waiting so that
 * cl_tls_last_error names the alert. fd is the connection's socket. */
void cl_tls_read_pending_alert(cl_tls_conn_t *c, int fd);
/* Sends close_notify (best effort, never waits for the answer) and frees. */
void cl_tls_close(cl_tls_conn_t *c);
/* "TLSv1.3" etc. for logs and tests. */
const char *cl_tls_version(const cl_tls_conn_t *c);

#endif
