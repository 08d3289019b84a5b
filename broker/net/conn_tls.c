/* broker/net/conn_tls.c — TLS on an accepted connection (net_int.h):
 * the non-blocking handshake on the loop, SSL_read into the connection's
 * frame buffer, and output through SSL_write.
 *
 * Output: with kTLS send on (OpenSSL 3 with SSL_OP_ENABLE_KTLS and the
 * kernel's tls ULP) the kernel encrypts, and conn.c writes the output as on
 * a plain socket: writev for bytes, sendfile(2) for file ranges (zero
 * copy kept). Otherwise "read-encrypt-write": at most BK_NET_TLS_CHUNK
 * bytes of the output at a time are moved by libevent's own writev /
 * sendfile(2) into the net's pipe and read back into the connection's
 * chunk, then SSL_write encrypts them. libevent has no way to read a file
 * range out of an evbuffer (the chain is only for sendfile), and this way
 * a 50 MiB fetch answer costs 64 KiB of memory per connection, not 50 MiB.
 * The chunk exists only while the connection has output waiting. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "broker/net/net_int.h"
#include "broker/net/tls.h"

/* On the state loop: the context is the listener's current one (a reload
 * swaps it there), and the SSL keeps its own reference to it. */
SSL *bk__tls_ssl_new(SSL_CTX *ctx) {
    ERR_clear_error();
    SSL *ssl = SSL_new(ctx);
    if (!ssl) ERR_clear_error();
    return ssl;
}

int bk__tls_conn_start(bk_net_conn_t *c, SSL *ssl) {
    ERR_clear_error();
    c->ssl = ssl;
    if (SSL_set_fd(c->ssl, c->fd) != 1) {
        SSL_free(c->ssl);
        c->ssl = NULL;
        ERR_clear_error();
        return -1;
    }
    SSL_set_accept_state(c->ssl);
    c->born_ms = bk__net_mono_ms();
    return 0;
}

void bk__tls_conn_free(bk_net_conn_t *c) {
    if (c->ssl) SSL_free(c->ssl);
    c->ssl = NULL;
    free(c->tp);
    c->tp = NULL;
}

bool bk__tls_pending(const bk_net_conn_t *c) { return c->ssl && c->hs_done && SSL_pending(c->ssl) > 0; }

/* Why a handshake failed, for the log line, and the limiter's cause (one
 * per kind, so a burst of one kind does not hide the others): the
 * certificate check's own words when it was that, a hint for the usual
 * plaintext-on-TLS mistake. */
static const char *hs_reason(bk_net_conn_t *c, int ret, int e, char *why, size_t len) {
    long vr = SSL_get_verify_result(c->ssl);
    unsigned long last = ERR_peek_last_error();
    if (vr != X509_V_OK && ERR_GET_REASON(last) == SSL_R_CERTIFICATE_VERIFY_FAILED) {
        snprintf(why, len, "client certificate refused: %s", X509_verify_cert_error_string(vr));
        ERR_clear_error();
        return "tls certificate refused";
    }
    if (last == 0 && (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SSL)) {
        snprintf(why, len, "%s", e == SSL_ERROR_SYSCALL && ret < 0 ? strerror(errno)
                                 : "the peer closed the connection before the handshake finished");
        return "tls peer left";
    }
    int reason = ERR_GET_REASON(last);
    char ssl_err[200];
    bk_net_tls_error(ssl_err, sizeof ssl_err);
    bool plain = reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_HTTP_REQUEST ||
                 reason == SSL_R_UNKNOWN_PROTOCOL || reason == SSL_R_PACKET_LENGTH_TOO_LONG;
    snprintf(why, len, "%s%s", ssl_err, plain ? " (a plaintext client on a TLS listener?)" : "");
    return plain ? "tls plaintext client" : reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE
                                            ? "tls no client certificate" : "tls handshake failed";
}

static void log_path(bk_net_conn_t *c) {
    if (__atomic_exchange_n(&c->lst->path_logged, true, __ATOMIC_RELAXED)) return;
    char why[160] = "";
    if (c->ktls_send) {
        fprintf(stderr, "skiff: net: listener %s: kTLS send on (fetch data leaves by sendfile)\n", c->listener);
    } else {
        (void)bk_net_tls_ktls_available(why, sizeof why);
        fprintf(stderr, "skiff: net: listener %s: read-encrypt-write (%d KiB chunks; kTLS send off: %s)\n",
                c->listener, BK_NET_TLS_CHUNK / 1024, why);
    }
}

/* The mapped principal of a client certificate (rc: the mapping's status)
 * onto the connection (loop 0) or its session (loops 1..): false, logged,
 * when no rule maps the subject (the caller closes). */
static bool take_principal(bk_net_conn_t *c, int rc, const char *principal) {
    if (rc != 0) {
        bk_net_log_close(c->net, "tls principal", "net: closing connection %s on listener %s: no rule of "
                         "ssl.principal.mapping.rules maps the certificate subject '%s'", c->peer, c->listener,
                         principal);
        return false;
    }
    bk_net_conn_set_principal(c, principal);
    if (strcmp(principal, BK_NET_PRINCIPAL_ANONYMOUS) != 0)
        (void)bk__net_ratelog(c->net, "tls client certificate",
                              "net: connection %s on listener %s: client certificate, principal %s", c->peer,
                              c->listener, principal);
    return true;
}

bk_net_tls_hs_t bk__tls_handshake(bk_net_conn_t *c) {
    ERR_clear_error();
    int r = SSL_do_handshake(c->ssl);
    if (r == 1) {
        c->hs_done = true;
        c->hs_wants_write = false;
#ifdef BIO_get_ktls_send
        c->ktls_send = BIO_get_ktls_send(SSL_get_wbio(c->ssl)) == 1;
#endif
        if (c->loop->remote) {
            /* the mapping rules are the state loop's (a reconfigure
             * changes them there): the certificate goes to the session,
             * ahead of any frame of this connection (one FIFO) */
            X509 *cert = SSL_get1_peer_certificate(c->ssl);
            if (cert) {
                net_msg_t *m = bk__msg_evt(c->loop, MSG_PRINCIPAL, c->id);
                if (!m) {
                    X509_free(cert);
                    bk_net_log_close(c->net, "out of memory", "net: closing connection %s: out of memory",
                                     c->peer);
                    return BK_NET_TLS_HS_FAILED;
                }
                m->cert = cert;
                bk__loop_post_batched(&c->loop->evq, m);
            }
            log_path(c);
            return BK_NET_TLS_HS_DONE;
        }
        char principal[BK_NET_PRINCIPAL_MAX + 1];
        int rc = bk_net_tls_principal(c->lst->tls, c->ssl, principal, sizeof principal);
        if (!take_principal(c, rc, principal)) return BK_NET_TLS_HS_FAILED;
        log_path(c);
        return BK_NET_TLS_HS_DONE;
    }
    int e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ) {
        c->hs_wants_write = false;
        return BK_NET_TLS_HS_WAIT;
    }
    if (e == SSL_ERROR_WANT_WRITE) {
        c->hs_wants_write = true;
        return BK_NET_TLS_HS_WAIT;
    }
    char why[300];
    const char *cause = hs_reason(c, r, e, why, sizeof why);
    bk_net_log_close(c->net, cause, "net: closing connection %s on listener %s: TLS handshake failed: %s", c->peer,
                     c->listener, why);
    return BK_NET_TLS_HS_FAILED;
}

ssize_t bk__tls_read(bk_net_conn_t *c, uint8_t *buf, size_t len) {
    /* SSL_read gives at most one TLS record (<= 16 KiB) per call: read on
     * until the room is full or the socket has nothing more, as one recv
     * does on a plain connection (one loop pass per record cost produce
     * throughput over TLS). An error after some bytes is met again by the
     * next read. */
    size_t got = 0;
    while (got < len) {
        ERR_clear_error();
        size_t want = len - got;
        int n = SSL_read(c->ssl, buf + got, want > INT_MAX ? INT_MAX : (int)want);
        if (n > 0) {
            got += (size_t)n;
            continue;
        }
        int e = SSL_get_error(c->ssl, n);
        /* WANT_WRITE on a read: OpenSSL answers a key update; the socket's
         * next writable moment (any output) carries it */
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
        if (got > 0) {
            ERR_clear_error();
            break;
        }
        if (e == SSL_ERROR_SSL) {
            char why[200];
            bk_net_tls_error(why, sizeof why);
            bk_net_log_close(c->net, "tls error", "net: closing connection %s on listener %s: TLS: %s", c->peer,
                             c->listener, why);
        }
        ERR_clear_error();
        return -1; /* close_notify, EOF or an error */
    }
    return (ssize_t)got;
}

/* Moves at most one chunk of the output into c->tp through the pipe. */
static int take_chunk(bk_net_conn_t *c) {
    net_loop_t *net = c->loop;   /* the pipe of this loop (one thread) */
    size_t avail = evbuffer_get_length(c->out);
    if (!c->tp && !(c->tp = malloc(BK_NET_TLS_CHUNK))) return -1;
    size_t want = avail < (size_t)net->tls_pipe_cap ? avail : (size_t)net->tls_pipe_cap;
    int n = evbuffer_write_atmost(c->out, net->tls_pipe[1], (ev_ssize_t)want);
    if (n <= 0) return -1; /* a file range past the end of its file (truncated), or the pipe failed */
    size_t got = 0;
    while (got < (size_t)n) {
        ssize_t r = read(net->tls_pipe[0], c->tp + got, (size_t)n - got);
        if (r > 0) got += (size_t)r;
        else if (r < 0 && errno == EINTR) continue;
        else {
            /* the pipe was empty before and holds n bytes: cannot happen;
             * empty it so the next connection does not get these bytes */
            char junk[4096];
            while (read(net->tls_pipe[0], junk, sizeof junk) > 0) {}
            return -1;
        }
    }
    c->tp_off = 0;
    c->tp_len = got;
    return 0;
}

int bk__tls_write(bk_net_conn_t *c) {
    for (;;) {
        if (c->tp_len == 0) {
            if (evbuffer_get_length(c->out) == 0) break;
            if (take_chunk(c) != 0) return -1;
        }
        ERR_clear_error();
        int w = SSL_write(c->ssl, c->tp + c->tp_off, (int)c->tp_len);
        if (w > 0) {
            c->tp_off += (size_t)w;
            c->tp_len -= (size_t)w;
            c->written_total += (uint64_t)w;
            c->active_ms = c->write_ok_ms = bk__net_mono_ms();
            continue;
        }
        int e = SSL_get_error(c->ssl, w);
        if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) return 0;
        ERR_clear_error();
        return -1;
    }
    free(c->tp); /* idle connections hold no chunk */
    c->tp = NULL;
    return 0;
}

bool bk__tls_session_principal(bk_net_conn_t *s, X509 *cert) {
    char principal[BK_NET_PRINCIPAL_MAX + 1];
    int rc = bk_net_tls_cert_principal(s->lst->tls, cert, principal, sizeof principal);
    X509_free(cert);
    return take_principal(s, rc, principal);
}
