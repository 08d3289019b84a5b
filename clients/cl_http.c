/* cl_http.c — HTTP/1.0 GET over a blocking socket (see cl_http.h). */
#include "clients/cl_http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clients/cl_conn.h"

int cl_http_parse_response(const char *buf, size_t n, int *status, size_t *body_off, cl_err_t *e) {
    if (n < 12 || memcmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ')
        return cl_err_set(e, CL_E_PROTO, "not an HTTP response");
    int code = 0;
    for (int i = 9; i < 12; i++) {
        if (buf[i] < '0' || buf[i] > '9') return cl_err_set(e, CL_E_PROTO, "bad HTTP status line");
        code = code * 10 + (buf[i] - '0');
    }
    for (size_t i = 0; i + 3 < n; i++) {
        if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n') {
            *status = code;
            *body_off = i + 4;
            return CL_OK;
        }
    }
    return cl_err_set(e, CL_E_PROTO, "HTTP response has no end of headers");
}

int cl_http_get(const char *addr, const char *path, int timeout_ms, int *status, char **body, size_t *body_len,
                cl_err_t *e) {
    char host[CL_HOST_BYTES];
    int port = 0;
    int rc = cl_parse_hostport(addr, host, sizeof host, &port, e);
    if (rc != CL_OK) return rc;
    /* reuse the Kafka connection's connect-with-deadline, without negotiation */
    cl_conn_t c;
    rc = cl_conn_open_raw(&c, host, port, timeout_ms, e);
    if (rc != CL_OK) return rc;
    char req[1024];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s\r\nAccept: application/json\r\nConnection: close\r\n\r\n",
                     path, addr);
    if (n < 0 || (size_t)n >= sizeof req) { cl_conn_close(&c); return cl_err_set(e, CL_E_USAGE, "path too long"); }
    if (send(c.fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
        rc = cl_err_set(e, CL_E_NETWORK, "send to %s: %s", addr, strerror(errno));
        cl_conn_close(&c);
        return rc;
    }
    size_t cap = 8192, len = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        if (len == cap) {
            if (cap >= CL_HTTP_BODY_MAX_BYTES) { rc = cl_err_set(e, CL_E_PROTO, "response from %s too large", addr); break; }
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) break;
            buf = nb;
            cap *= 2;
        }
        ssize_t k = recv(c.fd, buf + len, cap - len, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) { rc = cl_err_set(e, CL_E_NETWORK, "receive from %s: %s", addr, strerror(errno)); break; }
        if (k == 0) break;
        len += (size_t)k;
    }
    cl_conn_close(&c);
    if (!buf) return cl_err_set(e, CL_E_NOMEM, "out of memory");
    size_t off = 0;
    if (rc == CL_OK) rc = cl_http_parse_response(buf, len, status, &off, e);
    if (rc != CL_OK) { free(buf); return rc; }
    memmove(buf, buf + off, len - off);
    buf[len - off] = '\0';
    *body = buf;
    *body_len = len - off;
    return CL_OK;
}
