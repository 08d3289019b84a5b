/* cl_http.c — HTTP/1.0 GET over a blocking socket (see cl_http.h). */
#include "clients/cl_http.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clients/cl_conn.h"
#include "clients/cl_tls.h"
#include "protocol/kp_base64.h"

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

/* "Authorization: Basic <b64(user:password)>\r\n" into hdr, or "" without
 * credentials. */
static int basic_header(const cl_sec_t *sec, char *hdr, size_t n, cl_err_t *e) {
    hdr[0] = '\0';
    if (!sec || !sec->admin_username[0]) return CL_OK;
    char pair[2 * CL_PROPS_VALUE_BYTES + 2];
    int k = snprintf(pair, sizeof pair, "%s:%s", sec->admin_username, sec->admin_password);
    char b64[4 * ((sizeof pair + 2) / 3) + 1];
    size_t blen = 0;
    int rc = CL_OK;
    if (k < 0 || (size_t)k >= sizeof pair ||
        kp_b64_encode((const uint8_t *)pair, (size_t)k, b64, sizeof b64, &blen) != KP_OK ||
        (size_t)snprintf(hdr, n, "Authorization: Basic %s\r\n", b64) >= n)
        rc = cl_err_set(e, CL_E_USAGE, "admin.username / admin.password too long");
    OPENSSL_cleanse(pair, sizeof pair);
    OPENSSL_cleanse(b64, sizeof b64);
    return rc;
}

int cl_http_get(const char *addr, const char *path, int timeout_ms, int *status, char **body, size_t *body_len,
                cl_err_t *e) {
    return cl_http_get_sec(addr, path, timeout_ms, NULL, status, body, body_len, e);
}

int cl_http_get_sec(const char *addr, const char *path, int timeout_ms, const cl_sec_t *sec, int *status,
                    char **body, size_t *body_len, cl_err_t *e) {
    bool https = strncmp(addr, "https://", 8) == 0;
    const char *hp = https ? addr + 8 : strncmp(addr, "http://", 7) == 0 ? addr + 7 : addr;
    char host[CL_HOST_BYTES];
    int port = 0;
    int rc = cl_parse_hostport(hp, host, sizeof host, &port, e);
    if (rc != CL_OK) return rc;
    cl_tls_t *tls = NULL;
    if (https) {
        /* without settings: the system's CAs, hostname checked */
        static cl_sec_t defaults;
        if (!sec) {
            cl_sec_init(&defaults);
            sec = &defaults;
        }
        if ((rc = cl_tls_new(sec, &tls, e)) != CL_OK) return rc;
    }
    char auth[3 * CL_PROPS_VALUE_BYTES + 64];
    if ((rc = basic_header(sec, auth, sizeof auth, e)) != CL_OK) {
        cl_tls_free(tls);
        return rc;
    }
    /* reuse the Kafka connection's connect-with-deadline and TLS, without
     * any Kafka exchange */
    cl_conn_t c;
    rc = cl_conn_open_raw_tls(&c, host, port, timeout_ms, tls, e);
    if (rc != CL_OK) {
        OPENSSL_cleanse(auth, sizeof auth);
        cl_tls_free(tls);
        return rc;
    }
    char req[1024 + sizeof auth];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.0\r\nHost: %s\r\nAccept: application/json\r\n%sConnection: close\r\n\r\n", path,
                     hp, auth);
    OPENSSL_cleanse(auth, sizeof auth);
    if (n < 0 || (size_t)n >= sizeof req) {
        cl_conn_close(&c);
        cl_tls_free(tls);
        return cl_err_set(e, CL_E_USAGE, "path too long");
    }
    rc = cl_conn_send_all(&c, "HTTP request to", req, (size_t)n, e);
    OPENSSL_cleanse(req, sizeof req);
    size_t cap = 8192, len = 0;
    char *buf = rc == CL_OK ? malloc(cap + 1) : NULL;
    while (buf) {
        if (len == cap) {
            if (cap >= CL_HTTP_BODY_MAX_BYTES) { rc = cl_err_set(e, CL_E_PROTO, "response from %s too large", addr); break; }
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) break;
            buf = nb;
            cap *= 2;
        }
        size_t k = 0;
        if ((rc = cl_conn_recv_some(&c, "HTTP response from", buf + len, cap - len, &k, e)) != CL_OK) break;
        if (k == 0) break;
        len += k;
    }
    cl_conn_close(&c);
    cl_tls_free(tls);
    if (rc != CL_OK) {
        free(buf);
        return rc;
    }
    if (!buf) return cl_err_set(e, CL_E_NOMEM, "out of memory");
    size_t off = 0;
    rc = cl_http_parse_response(buf, len, status, &off, e);
    if (rc != CL_OK && !https) /* a TLS port closes (or sends an alert) on plain HTTP */
        rc = cl_err_set(e, CL_E_PROTO, "%s: no HTTP answer (an HTTPS port? then --admin https://%s)", addr, hp);
    if (rc != CL_OK) { free(buf); return rc; }
    memmove(buf, buf + off, len - off);
    buf[len - off] = '\0';
    *body = buf;
    *body_len = len - off;
    return CL_OK;
}
