/* Unit tests for clients/cl_tls.c through cl_conn_open_sec, against an
 * in-process TLS server thread (OpenSSL, server side) that answers
 * ApiVersions. Certificates are made here with OpenSSL's API (a CA, a rogue
 * CA, a server certificate whose only SAN is IP 127.0.0.1, a client
 * certificate with an encrypted key): the broker verified against the CA,
 * the address checked against the SAN (and not with
 * ssl.endpoint.identification.algorithm=none), an untrusted CA refused,
 * mutual TLS with ssl.key.password (a wrong one refused when loading), a
 * missing client certificate named by the broker's alert, a plaintext
 * server named as such, and a server that never answers the handshake
 * (ended by the socket deadline). */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clients/cl_conn.h"
#include "clients/cl_tls.h"
#include "kp_msgs.h"
#include "protocol/kp_header.h"

/* certificates are made in main(), outside any test: a failure aborts */
#define MUST(x)                                                   \
    do {                                                          \
        if (!(x)) {                                               \
            fprintf(stderr, "test_cl_tls setup: %s failed\n", #x); \
            abort();                                              \
        }                                                         \
    } while (0)

static char dir[64];

static void path(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

static X509 *mkcert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key, const char *san, bool ca) {
    static long serial = 1;
    X509 *x = X509_new();
    MUST(x);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, key);
    X509_NAME *n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : n);
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer ? issuer : x, x, NULL, NULL, 0);
    const char *bc = ca ? "critical,CA:TRUE" : "CA:FALSE";
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints, bc);
    MUST(ext);
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    if (san) {
        ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name, san);
        MUST(ext);
        X509_add_ext(x, ext, -1);
        X509_EXTENSION_free(ext);
    }
    MUST(X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()) > 0);
    return x;
}

static void write_cert(const char *name, X509 *x) {
    char p[128];
    path(p, sizeof p, name);
    FILE *f = fopen(p, "w");
    MUST(f);
    MUST(PEM_write_X509(f, x) == 1);
    fclose(f);
}

static void write_key(const char *name, EVP_PKEY *k, const char *password) {
    char p[128];
    path(p, sizeof p, name);
    FILE *f = fopen(p, "w");
    MUST(f);
    MUST(PEM_write_PrivateKey(f, k, password ? EVP_aes_256_cbc() : NULL, (const unsigned char *)password,
                              password ? (int)strlen(password) : 0, NULL, NULL) == 1);
    fclose(f);
}

/* ca.pem, rogue.pem, srv.pem + srv.key (SAN IP:127.0.0.1 only), cli.pem +
 * cli.key (encrypted with "kpw") */
static void make_certs(void) {
    snprintf(dir, sizeof dir, "/tmp/test_cl_tls_XXXXXX");
    MUST(mkdtemp(dir));
    EVP_PKEY *cak = EVP_EC_gen("P-256"), *rk = EVP_EC_gen("P-256"), *sk = EVP_EC_gen("P-256"),
             *ck = EVP_EC_gen("P-256");
    MUST(cak && rk && sk && ck);
    X509 *ca = mkcert(cak, "test-ca", NULL, NULL, NULL, true);
    X509 *rogue = mkcert(rk, "rogue-ca", NULL, NULL, NULL, true);
    X509 *srv = mkcert(sk, "broker", ca, cak, "IP:127.0.0.1", false);
    X509 *cli = mkcert(ck, "client", ca, cak, NULL, false);
    write_cert("ca.pem", ca);
    write_cert("rogue.pem", rogue);
    write_cert("srv.pem", srv);
    write_key("srv.key", sk, NULL);
    write_cert("cli.pem", cli);
    write_key("cli.key", ck, "kpw");
    X509_free(ca);
    X509_free(rogue);
    X509_free(srv);
    X509_free(cli);
    EVP_PKEY_free(cak);
    EVP_PKEY_free(rk);
    EVP_PKEY_free(sk);
    EVP_PKEY_free(ck);
}

static void remove_certs(void) {
    const char *names[] = { "ca.pem", "rogue.pem", "srv.pem", "srv.key", "cli.pem", "cli.key" };
    char p[128];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        path(p, sizeof p, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

/* ---- the server ----------------------------------------------------------------- */

typedef struct srv {
    int lfd, port;
    pthread_t th;
    volatile int stop;
    bool tls;             /* false: a plaintext server that closes what it gets */
    bool silent;          /* accept and never answer (a handshake that stalls) */
    bool require_client;  /* mutual TLS */
    SSL_CTX *ctx;
    char peer_cn[64];     /* the client certificate's CN, when one came */
} srv_t;

static int ssl_read_all(SSL *s, uint8_t *p, int n) {
    while (n > 0) {
        int k = SSL_read(s, p, n);
        if (k <= 0) return -1;
        p += k;
        n -= k;
    }
    return 0;
}

/* Answers ApiVersions requests until the client goes. */
static void serve(srv_t *v, SSL *s) {
    for (;;) {
        uint8_t szb[4];
        if (ssl_read_all(s, szb, 4) != 0) return;
        uint32_t n = kp_load_be32(szb);
        if (n > 65536) return;
        uint8_t frame[65536];
        if (ssl_read_all(s, frame, (int)n) != 0) return;
        kp_arena_t a;
        kp_arena_init(&a, (size_t)1 << 20);
        kp_request_header_t h;
        void *body = NULL;
        if (kp_request_decode(frame, n, &h, &body, &a) != KP_OK || h.api_key != KP_API_API_VERSIONS) {
            kp_arena_free(&a);
            return;
        }
        kp_api_versions_response_t r;
        kp_api_versions_response_init(&r);
        r.api_keys.count = 1;
        r.api_keys.items = kp_arena_alloc(&a, sizeof *r.api_keys.items);
        kp_api_versions_response_api_version_init(&r.api_keys.items[0]);
        r.api_keys.items[0].api_key = KP_API_API_VERSIONS;
        r.api_keys.items[0].max_version = 3;
        kp_wr_t w;
        kp_wr_init_count(&w);
        ck_assert_int_eq(kp_response_encode(&w, h.api_key, h.api_version, h.correlation_id, &r, NULL), KP_OK);
        uint8_t out[4096];
        ck_assert_uint_le(w.pos, sizeof out);
        size_t len = w.pos;
        kp_wr_init(&w, out, len);
        ck_assert_int_eq(kp_response_encode(&w, h.api_key, h.api_version, h.correlation_id, &r, NULL), KP_OK);
        kp_arena_free(&a);
        if (SSL_write(s, out, (int)len) != (int)len) return;
    }
    (void)v;
}

static void *srv_main(void *arg) {
    srv_t *v = arg;
    while (!v->stop) {
        struct pollfd p = { .fd = v->lfd, .events = POLLIN };
        if (poll(&p, 1, 50) <= 0) continue;
        int fd = accept(v->lfd, NULL, NULL);
        if (fd < 0) continue;
        if (v->silent) { /* hold the connection, say nothing */
            while (!v->stop) {
                struct pollfd q = { .fd = fd, .events = 0 };
                (void)poll(&q, 1, 50);
            }
            close(fd);
            continue;
        }
        if (!v->tls) { /* read a little, then hang up as a Kafka listener does on a bad frame */
            uint8_t junk[64];
            (void)recv(fd, junk, sizeof junk, 0);
            close(fd);
            continue;
        }
        SSL *s = SSL_new(v->ctx);
        SSL_set_fd(s, fd);
        if (SSL_accept(s) == 1) {
            X509 *peer = SSL_get1_peer_certificate(s);
            if (peer) {
                X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, v->peer_cn,
                                          sizeof v->peer_cn);
                X509_free(peer);
            }
            serve(v, s);
            SSL_shutdown(s);
        }
        SSL_free(s);
        ERR_clear_error();
        close(fd);
    }
    return NULL;
}

static srv_t *srv_start(bool tls, bool require_client) {
    srv_t *v = calloc(1, sizeof *v);
    v->tls = tls;
    v->require_client = require_client;
    char p[128], k[128];
    v->ctx = SSL_CTX_new(TLS_server_method());
    path(p, sizeof p, "srv.pem");
    path(k, sizeof k, "srv.key");
    ck_assert_int_eq(SSL_CTX_use_certificate_chain_file(v->ctx, p), 1);
    ck_assert_int_eq(SSL_CTX_use_PrivateKey_file(v->ctx, k, SSL_FILETYPE_PEM), 1);
    if (require_client) {
        path(p, sizeof p, "ca.pem");
        ck_assert_int_eq(SSL_CTX_load_verify_locations(v->ctx, p, NULL), 1);
        SSL_CTX_set_verify(v->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    }
    v->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = 0 };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(v->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(v->lfd, 4), 0);
    socklen_t sl = sizeof sa;
    ck_assert_int_eq(getsockname(v->lfd, (struct sockaddr *)&sa, &sl), 0);
    v->port = ntohs(sa.sin_port);
    ck_assert_int_eq(pthread_create(&v->th, NULL, srv_main, v), 0);
    return v;
}

static void srv_stop(srv_t *v) {
    v->stop = 1;
    pthread_join(v->th, NULL);
    close(v->lfd);
    SSL_CTX_free(v->ctx);
    free(v);
}

/* Opens a connection to v at host with sec; returns the status, e filled. */
static int try_open_ms(srv_t *v, const char *host, const cl_sec_t *sec, cl_err_t *e, char *version, size_t vn,
                       int timeout_ms) {
    cl_tls_t *t = NULL;
    cl_err_clear(e);
    int rc = cl_tls_new(sec, &t, e);
    if (rc != CL_OK) return rc;
    cl_conn_t c;
    rc = cl_conn_open_sec(&c, host, v->port, timeout_ms, "t", sec, t, e);
    if (rc == CL_OK && version) snprintf(version, vn, "%s", cl_tls_version(c.tls));
    if (rc == CL_OK) cl_conn_close(&c);
    cl_tls_free(t);
    return rc;
}

static int try_open(srv_t *v, const char *host, const cl_sec_t *sec, cl_err_t *e, char *version, size_t vn) {
    return try_open_ms(v, host, sec, e, version, vn, 3000);
}

static void ssl_sec(cl_sec_t *s, const char *ca) {
    cl_sec_init(s);
    s->protocol = CL_SEC_SSL;
    path(s->ca_location, sizeof s->ca_location, ca);
}

START_TEST(test_tls_verify_and_hostname) {
    srv_t *v = srv_start(true, false);
    cl_sec_t s;
    cl_err_t e;
    char ver[32] = "";
    ssl_sec(&s, "ca.pem");
    ck_assert_msg(try_open(v, "127.0.0.1", &s, &e, ver, sizeof ver) == CL_OK, "%s", e.msg);
    ck_assert_msg(!strcmp(ver, "TLSv1.3") || !strcmp(ver, "TLSv1.2"), "%s", ver);
    /* the certificate names IP 127.0.0.1 only: "localhost" does not match */
    ck_assert_int_eq(try_open(v, "localhost", &s, &e, NULL, 0), CL_E_CONNECT);
    ck_assert_msg(strstr(e.msg, "TLS: certificate verify failed: hostname mismatch") == e.msg, "%s", e.msg);
    s.verify_hostname = false; /* ssl.endpoint.identification.algorithm=none */
    ck_assert_msg(try_open(v, "localhost", &s, &e, NULL, 0) == CL_OK, "%s", e.msg);
    /* a CA that did not sign the broker */
    ssl_sec(&s, "rogue.pem");
    ck_assert_int_eq(try_open(v, "127.0.0.1", &s, &e, NULL, 0), CL_E_CONNECT);
    ck_assert_msg(strstr(e.msg, "TLS: certificate verify failed: ") == e.msg, "%s", e.msg);
    ck_assert_int_eq(cl_exit_code(e.status), CL_EXIT_CONNECT);
    /* a CA file that is not there */
    ssl_sec(&s, "nope.pem");
    ck_assert_int_eq(try_open(v, "127.0.0.1", &s, &e, NULL, 0), CL_E_USAGE);
    ck_assert_msg(strstr(e.msg, "TLS: cannot load ssl.ca.location"), "%s", e.msg);
    srv_stop(v);
}
END_TEST

START_TEST(test_tls_mutual) {
    srv_t *v = srv_start(true, true);
    cl_sec_t s;
    cl_err_t e;
    ssl_sec(&s, "ca.pem");
    /* no client certificate: the broker's alert is in the message */
    ck_assert_int_ne(try_open(v, "127.0.0.1", &s, &e, NULL, 0), CL_OK);
    ck_assert_msg(strstr(e.msg, "certificate required") || strstr(e.msg, "handshake failure"), "%s", e.msg);
    /* the client certificate with its encrypted key */
    path(s.cert_location, sizeof s.cert_location, "cli.pem");
    path(s.key_location, sizeof s.key_location, "cli.key");
    snprintf(s.key_password, sizeof s.key_password, "kpw");
    ck_assert_msg(try_open(v, "127.0.0.1", &s, &e, NULL, 0) == CL_OK, "%s", e.msg);
    ck_assert_str_eq(v->peer_cn, "client");
    /* a wrong key password is refused when loading, naming the file */
    snprintf(s.key_password, sizeof s.key_password, "wrong");
    ck_assert_int_eq(try_open(v, "127.0.0.1", &s, &e, NULL, 0), CL_E_USAGE);
    ck_assert_msg(strstr(e.msg, "TLS: cannot load ssl.key.location"), "%s", e.msg);
    s.key_password[0] = '\0';
    ck_assert_int_eq(try_open(v, "127.0.0.1", &s, &e, NULL, 0), CL_E_USAGE);
    ck_assert_msg(strstr(e.msg, "needs ssl.key.password"), "%s", e.msg);
    /* a key that is not the certificate's */
    path(s.key_location, sizeof s.key_location, "srv.key");
    ck_assert_int_eq(try_open(v, "127.0.0.1", &s, &e, NULL, 0), CL_E_USAGE);
    ck_assert_msg(strstr(e.msg, "does not match"), "%s", e.msg);
    srv_stop(v);
}
END_TEST

START_TEST(test_tls_to_plaintext_server) {
    srv_t *v = srv_start(false, false);
    cl_sec_t s;
    cl_err_t e;
    ssl_sec(&s, "ca.pem");
    ck_assert_int_eq(try_open(v, "127.0.0.1", &s, &e, NULL, 0), CL_E_CONNECT);
    ck_assert_msg(strstr(e.msg, "is it a TLS listener?"), "%s", e.msg);
    srv_stop(v);
}
END_TEST

/* A server that accepts and never answers: the handshake ends at the
 * deadline (the socket's), as a timeout naming TLS. */
START_TEST(test_tls_stalled_handshake) {
    srv_t *v = srv_start(true, false);
    v->silent = true;
    cl_sec_t s;
    cl_err_t e;
    ssl_sec(&s, "ca.pem");
    /* CL_E_TIMEOUT comes only from the socket deadline (300 ms here) */
    ck_assert_int_eq(try_open_ms(v, "127.0.0.1", &s, &e, NULL, 0, 300), CL_E_TIMEOUT);
    ck_assert_msg(strstr(e.msg, "TLS handshake with 127.0.0.1:") && strstr(e.msg, "timed out"), "%s", e.msg);
    srv_stop(v);
}
END_TEST

int main(void) {
    make_certs();
    Suite *su = suite_create("cl_tls");
    TCase *tc = tcase_create("tls");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_tls_verify_and_hostname);
    tcase_add_test(tc, test_tls_mutual);
    tcase_add_test(tc, test_tls_to_plaintext_server);
    tcase_add_test(tc, test_tls_stalled_handshake);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    remove_certs();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
