/* cl_tls.c — OpenSSL client side for clients/ (see cl_tls.h). */
#include "clients/cl_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct cl_tls {
    SSL_CTX *ctx;
    bool verify_hostname;
    char key_password[CL_PROPS_VALUE_BYTES]; /* the PEM callback reads it while loading */
};

struct cl_tls_conn {
    SSL *ssl;
    char why[160];      /* OpenSSL's reason for the last failed read or write */
};

/* OpenSSL writes to the socket with write(2), which raises SIGPIPE when
 * the broker has gone; the plain path uses send(MSG_NOSIGNAL). A library
 * must not change the process's signal handlers, so SIGPIPE is blocked in
 * this thread around each OpenSSL call and one raised by it is consumed. */
typedef struct sigpipe_guard {
    sigset_t old;
    bool pending_before;
} sigpipe_guard_t;

static void sigpipe_block(sigpipe_guard_t *g) {
    sigset_t pipe_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigemptyset(&pending);
    (void)sigpending(&pending);
    g->pending_before = sigismember(&pending, SIGPIPE) == 1;
    (void)pthread_sigmask(SIG_BLOCK, &pipe_set, &g->old);
}

static void sigpipe_restore(sigpipe_guard_t *g) {
    sigset_t pipe_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigemptyset(&pending);
    if (!g->pending_before && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
        struct timespec zero = { 0, 0 };
        int saved = errno;
        (void)sigtimedwait(&pipe_set, NULL, &zero);
        errno = saved;
    }
    (void)pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* OpenSSL's most recent queued reason (cleared), or `fallback`. */
static const char *ossl_reason(char *buf, size_t n, const char *fallback) {
    unsigned long code = ERR_peek_last_error();
    if (!code) {
        snprintf(buf, n, "%s", fallback);
    } else {
        const char *r = ERR_reason_error_string(code);
        if (r) snprintf(buf, n, "%s", r);
        else ERR_error_string_n(code, buf, n);
    }
    ERR_clear_error();
    return buf;
}

int cl_tls_new(const cl_sec_t *sec, cl_tls_t **out, cl_err_t *e) {
    char why[160];
    *out = NULL;
    cl_tls_t *t = calloc(1, sizeof *t);
    if (!t) return cl_err_set(e, CL_E_NOMEM, "out of memory");
    ERR_clear_error();
    t->ctx = SSL_CTX_new(TLS_client_method());
    if (!t->ctx) {
        free(t);
        return cl_err_set(e, CL_E_NOMEM, "TLS: cannot create a context: %s", ossl_reason(why, sizeof why, "?"));
    }
    t->verify_hostname = sec->verify_hostname;
    int rc = CL_OK;
    if (SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION) != 1) {
        rc = cl_err_set(e, CL_E_USAGE, "TLS: cannot require TLS 1.2: %s", ossl_reason(why, sizeof why, "?"));
        goto fail;
    }
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
    /* a peer that closes without close_notify (HTTP servers do) reads as
     * an end of stream, as on a plain socket; Kafka frames carry their own
     * lengths, so a cut frame is still caught */
    SSL_CTX_set_options(t->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
    if (sec->ca_location[0]) {
        struct stat st;
        bool dir = stat(sec->ca_location, &st) == 0 && S_ISDIR(st.st_mode);
        if (SSL_CTX_load_verify_locations(t->ctx, dir ? NULL : sec->ca_location, dir ? sec->ca_location : NULL) != 1) {
            rc = cl_err_set(e, CL_E_USAGE, "TLS: cannot load ssl.ca.location %s: %s", sec->ca_location,
                            ossl_reason(why, sizeof why, strerror(errno)));
            goto fail;
        }
    } else if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
        rc = cl_err_set(e, CL_E_USAGE, "TLS: cannot load the system's CAs: %s", ossl_reason(why, sizeof why, "?"));
        goto fail;
    }
    if (sec->cert_location[0]) {
        if (SSL_CTX_use_certificate_chain_file(t->ctx, sec->cert_location) != 1) {
            rc = cl_err_set(e, CL_E_USAGE, "TLS: cannot load ssl.certificate.location %s: %s", sec->cert_location,
                            ossl_reason(why, sizeof why, strerror(errno)));
            goto fail;
        }
        /* the default PEM password callback reads the password from the
         * userdata; without ssl.key.password an encrypted key fails to
         * load instead of prompting on the terminal */
        snprintf(t->key_password, sizeof t->key_password, "%s", sec->key_password);
        SSL_CTX_set_default_passwd_cb_userdata(t->ctx, t->key_password);
        if (SSL_CTX_use_PrivateKey_file(t->ctx, sec->key_location, SSL_FILETYPE_PEM) != 1) {
            if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
                ERR_clear_error();
                rc = cl_err_set(e, CL_E_USAGE, "TLS: ssl.key.location %s does not match ssl.certificate.location %s",
                                sec->key_location, sec->cert_location);
            } else {
                rc = cl_err_set(e, CL_E_USAGE, "TLS: cannot load ssl.key.location %s: %s%s", sec->key_location,
                                ossl_reason(why, sizeof why, strerror(errno)),
                                sec->key_password[0] ? "" : " (an encrypted key needs ssl.key.password)");
            }
            goto fail;
        }
        if (SSL_CTX_check_private_key(t->ctx) != 1) {
            rc = cl_err_set(e, CL_E_USAGE, "TLS: ssl.key.location %s does not match ssl.certificate.location %s",
                            sec->key_location, sec->cert_location);
            goto fail;
        }
    }
    *out = t;
    return CL_OK;
fail:
    cl_tls_free(t);
    return rc;
}

void cl_tls_free(cl_tls_t *t) {
    if (!t) return;
    SSL_CTX_free(t->ctx);
    OPENSSL_cleanse(t->key_password, sizeof t->key_password);
    free(t);
}

/* What to check the broker's certificate against: its IP address when we
 * dialled one, else the DNS name (also sent as SNI). */
static int set_peer_name(SSL *ssl, const char *host, bool verify) {
    unsigned char addr[16];
    bool is_ip = inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
    if (!is_ip && SSL_set_tlsext_host_name(ssl, host) != 1) return -1;
    if (!verify) return 0;
    if (is_ip) return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 ? 0 : -1;
    return SSL_set1_host(ssl, host) == 1 ? 0 : -1;
}

int cl_tls_connect(cl_tls_t *t, int fd, const char *host, int port, cl_tls_conn_t **out, cl_err_t *e) {
    char why[160];
    *out = NULL;
    ERR_clear_error();
    cl_tls_conn_t *c = calloc(1, sizeof *c);
    if (!c) return cl_err_set(e, CL_E_NOMEM, "out of memory");
    c->ssl = SSL_new(t->ctx);
    if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1 || set_peer_name(c->ssl, host, t->verify_hostname) != 0) {
        int rc = cl_err_set(e, CL_E_NOMEM, "TLS: cannot set up a connection to %s:%d: %s", host, port,
                            ossl_reason(why, sizeof why, "?"));
        cl_tls_close(c);
        return rc;
    }
    errno = 0;
    sigpipe_guard_t g;
    sigpipe_block(&g);
    int r = SSL_connect(c->ssl);
    sigpipe_restore(&g);
    if (r == 1) {
        *out = c;
        return CL_OK;
    }
    int err = SSL_get_error(c->ssl, r), saved_errno = errno;
    long vr = SSL_get_verify_result(c->ssl);
    int rc;
    if (vr != X509_V_OK) {
        ERR_clear_error();
        rc = cl_err_set(e, CL_E_CONNECT, "TLS: certificate verify failed: %s (%s:%d)",
                        X509_verify_cert_error_string(vr), host, port);
    } else if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        ERR_clear_error();
        rc = cl_err_set(e, CL_E_TIMEOUT, "TLS handshake with %s:%d timed out", host, port);
    } else if ((err == SSL_ERROR_SYSCALL && ERR_peek_last_error() == 0) ||
               ERR_GET_REASON(ERR_peek_last_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        ERR_clear_error();
        /* a plaintext listener reads our ClientHello as a bad frame and
         * hangs up: a close or a reset */
        bool hangup = saved_errno == 0 || saved_errno == ECONNRESET || saved_errno == EPIPE;
        rc = cl_err_set(e, CL_E_CONNECT, "TLS handshake with %s:%d failed: %s%s", host, port,
                        saved_errno ? strerror(saved_errno) : "connection closed by the broker",
                        hangup ? " (is it a TLS listener?)" : "");
    } else {
        rc = cl_err_set(e, CL_E_CONNECT, "TLS handshake with %s:%d failed: %s", host, port,
                        ossl_reason(why, sizeof why, "protocol error"));
    }
    cl_tls_close(c);
    return rc;
}

/* Maps a failed SSL_read / SSL_write to an errno-style value, keeping
 * OpenSSL's reason in c->why. */
static int io_error(cl_tls_conn_t *c, int r) {
    int err = SSL_get_error(c->ssl, r);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        ERR_clear_error();
        return EAGAIN; /* SO_RCVTIMEO / SO_SNDTIMEO passed */
    }
    if (err == SSL_ERROR_SYSCALL && ERR_peek_last_error() == 0) return errno;
    ossl_reason(c->why, sizeof c->why, "TLS error");
    return 0;
}

ssize_t cl_tls_send(cl_tls_conn_t *c, const void *p, size_t n, int *err) {
    errno = 0;
    c->why[0] = '\0';
    int want = n > (size_t)INT32_MAX ? INT32_MAX : (int)n;
    sigpipe_guard_t g;
    sigpipe_block(&g);
    int r = SSL_write(c->ssl, p, want);
    sigpipe_restore(&g);
    if (r > 0) return r;
    *err = io_error(c, r);
    return -1;
}

ssize_t cl_tls_recv(cl_tls_conn_t *c, void *p, size_t n, int *err) {
    errno = 0;
    c->why[0] = '\0';
    int want = n > (size_t)INT32_MAX ? INT32_MAX : (int)n;
    sigpipe_guard_t g;
    sigpipe_block(&g); /* a read may write too (TLS 1.3 key updates) */
    int r = SSL_read(c->ssl, p, want);
    sigpipe_restore(&g);
    if (r > 0) return r;
    if (SSL_get_error(c->ssl, r) == SSL_ERROR_ZERO_RETURN) return 0;
    *err = io_error(c, r);
    return -1;
}

const char *cl_tls_last_error(const cl_tls_conn_t *c) { return c->why; }

void cl_tls_read_pending_alert(cl_tls_conn_t *c, int fd) {
    struct pollfd p = { .fd = fd, .events = POLLIN };
    if (poll(&p, 1, 0) != 1) return;
    uint8_t junk[256];
    int err = 0;
    /* a record before the alert is dropped: the connection is closing */
    for (int i = 0; i < 4 && !c->why[0]; i++)
        if (cl_tls_recv(c, junk, sizeof junk, &err) <= 0) break;
}

void cl_tls_close(cl_tls_conn_t *c) {
    if (!c) return;
    if (c->ssl) {
        /* one close_notify, not waiting for the broker's: the socket is
         * closed right after, and a blocking wait could stall a CLI */
        if (SSL_is_init_finished(c->ssl)) {
            sigpipe_guard_t g;
            sigpipe_block(&g);
            (void)SSL_shutdown(c->ssl);
            sigpipe_restore(&g);
        }
        SSL_free(c->ssl);
    }
    ERR_clear_error();
    free(c);
}

const char *cl_tls_version(const cl_tls_conn_t *c) { return SSL_get_version(c->ssl); }
