/* TLS and authentication of the admin port; see admin_auth.h.
 *
 * The TLS context is built here (not in broker/net) because the admin port
 * is evhttp's, not a Kafka listener: it only needs a server SSL_CTX from the
 * same keys a listener reads (listener.name.admin.ssl.*, else ssl.*), PEM
 * only. It is built once at start-up, before the loop runs (the file reads
 * do not block a running loop). */
#include "broker/admin/admin_auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "broker/config/config.h"
#include "broker/core/authz.h"
#include "broker/core/credentials.h"
#include "broker/http/admin.h"

/* Kafka's default for connection.failed.authentication.delay.ms */
#define FAIL_DELAY_DEFAULT_MS 100

static const char *key(const bk_node_t *n, const char *k) {
    return bk_cfg_listener_str(n->cfg, BK_ADMIN_LISTENER_NAME, k);
}

static int fail_ssl(char *err, size_t len, const char *what, const char *file) {
    unsigned long e = ERR_get_error();
    char why[256] = "";
    if (e)
        ERR_error_string_n(e, why, sizeof why);
    ERR_clear_error();
    snprintf(err, len, "admin port TLS: %s%s%s%s%s", what, file ? " '" : "", file ? file : "",
             file ? "'" : "", why[0] ? ": " : "");
    size_t n = strlen(err);
    if (why[0] && n < len)
        snprintf(err + n, len - n, "%s", why);
    return KP_ERR_BAD_VALUE;
}

/* ssl.key.password for an encrypted PEM key (the config outlives the ctx). */
static int key_password(char *buf, int size, int rwflag, void *u) {
    (void)rwflag;
    const char *pw = u;
    size_t n = strlen(pw);
    if (n == 0 || size <= 0 || n >= (size_t)size)
        return 0; /* no ssl.key.password: the key cannot be decrypted */
    memcpy(buf, pw, n);
    return (int)n;
}

/* ssl.enabled.protocols (Kafka's list, e.g. "TLSv1.2,TLSv1.3") -> the
 * lowest and highest version; anything else is refused. */
static int protocols(const char *list, int *lo, int *hi, char *err, size_t len) {
    *lo = 0;
    *hi = 0;
    if (list == NULL || *list == '\0') {
        *lo = TLS1_2_VERSION;
        return KP_OK;
    }
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        size_t k = strcspn(p, ", ");
        int v = 0;
        if (k == 7 && strncmp(p, "TLSv1.2", 7) == 0) v = TLS1_2_VERSION;
        else if (k == 7 && strncmp(p, "TLSv1.3", 7) == 0) v = TLS1_3_VERSION;
        else if (k > 0) {
            snprintf(err, len, "admin port TLS: ssl.enabled.protocols: '%.*s' is not TLSv1.2 or TLSv1.3",
                     (int)k, p);
            return KP_ERR_BAD_VALUE;
        }
        if (v && (*lo == 0 || v < *lo)) *lo = v;
        if (v && v > *hi) *hi = v;
        p += k;
    }
    if (*lo == 0) {
        snprintf(err, len, "admin port TLS: ssl.enabled.protocols is empty");
        return KP_ERR_BAD_VALUE;
    }
    return KP_OK;
}

static SSL_CTX *tls_ctx(const bk_node_t *n, char *err, size_t len) {
    const char *ks = key(n, "ssl.keystore.location");
    const char *kst = key(n, "ssl.keystore.type");
    const char *tst = key(n, "ssl.truststore.type");
    const char *ts = key(n, "ssl.truststore.location");
    const char *pw = key(n, "ssl.key.password");
    const char *ca = key(n, "ssl.client.auth");
    const char *ciphers = key(n, "ssl.cipher.suites");
    if (ks == NULL || *ks == '\0') {
        snprintf(err, len, "admin.security.protocol=SSL needs listener.name.admin.ssl.keystore.location "
                 "(or ssl.keystore.location): a PEM file with the certificate chain and the key");
        return NULL;
    }
    /* Kafka's default type is JKS, so an unset type reads as JKS here: it is
     * let through and the PEM read below fails on a real JKS file */
    if ((kst && *kst && strcmp(kst, "PEM") != 0 && strcmp(kst, "JKS") != 0) ||
        (tst && *tst && strcmp(tst, "PEM") != 0 && strcmp(tst, "JKS") != 0)) {
        snprintf(err, len, "admin port TLS: only PEM key and trust stores are supported "
                 "(ssl.keystore.type / ssl.truststore.type = PEM)");
        return NULL;
    }
    bool want = ca && strcmp(ca, "requested") == 0, need = ca && strcmp(ca, "required") == 0;
    if (ca && *ca && !want && !need && strcmp(ca, "none") != 0) {
        snprintf(err, len, "admin port TLS: ssl.client.auth=%s: expected none, requested or required", ca);
        return NULL;
    }
    if ((want || need) && (ts == NULL || *ts == '\0')) {
        snprintf(err, len, "admin port TLS: ssl.client.auth=%s needs listener.name.admin.ssl.truststore.location "
                 "(or ssl.truststore.location): the CA certificates client certificates are checked against", ca);
        return NULL;
    }
    int lo, hi;
    if (protocols(key(n, "ssl.enabled.protocols"), &lo, &hi, err, len) != KP_OK)
        return NULL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        fail_ssl(err, len, "cannot create the TLS context", NULL);
        return NULL;
    }
    if (SSL_CTX_set_min_proto_version(ctx, lo) != 1 || (hi && SSL_CTX_set_max_proto_version(ctx, hi) != 1)) {
        fail_ssl(err, len, "cannot set the protocol versions", NULL);
        goto fail;
    }
    if (ciphers && *ciphers && SSL_CTX_set_cipher_list(ctx, ciphers) != 1 &&
        SSL_CTX_set_ciphersuites(ctx, ciphers) != 1) {
        fail_ssl(err, len, "ssl.cipher.suites: no usable cipher in", ciphers);
        goto fail;
    }
    /* always our callback: without one OpenSSL asks the terminal for the
     * pass phrase of an encrypted key, and start-up would hang on it */
    SSL_CTX_set_default_passwd_cb(ctx, key_password);
    SSL_CTX_set_default_passwd_cb_userdata(ctx, (void *)(pw ? pw : ""));
    if (SSL_CTX_use_certificate_chain_file(ctx, ks) != 1) {
        fail_ssl(err, len, "cannot read a PEM certificate chain (ssl.keystore.type=PEM) from", ks);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, ks, SSL_FILETYPE_PEM) != 1) {
        fail_ssl(err, len, "cannot read the private key (encrypted without or with a wrong ssl.key.password?) from", ks);
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        fail_ssl(err, len, "the private key does not match the certificate in", ks);
        goto fail;
    }
    if (ts && *ts && SSL_CTX_load_verify_locations(ctx, ts, NULL) != 1) {
        fail_ssl(err, len, "cannot read the trust store", ts);
        goto fail;
    }
    if (want || need) {
        static const unsigned char sid[] = "skiff-admin";
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | (need ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0), NULL);
        if (SSL_CTX_set_session_id_context(ctx, sid, sizeof sid - 1) != 1) {
            fail_ssl(err, len, "cannot set the session id context", NULL);
            goto fail;
        }
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

/* Kafka's default mapping (ssl.principal.mapping.rules=DEFAULT): the
 * subject's distinguished name in RFC 2253 form, "User:CN=x,OU=y,...". */
static bool cert_principal(void *ctx, SSL *ssl, char *out, size_t cap) {
    (void)ctx;
    X509 *cert = SSL_get0_peer_certificate(ssl);
    if (cert == NULL)
        return false;
    BIO *b = BIO_new(BIO_s_mem());
    if (b == NULL)
        return false;
    bool ok = false;
    if (X509_NAME_print_ex(b, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253) >= 0) {
        char *p = NULL;
        long n = BIO_get_mem_data(b, &p);
        if (n > 0 && (size_t)n + 5 < cap && memchr(p, '\0', (size_t)n) == NULL) {
            memcpy(out, "User:", 5);
            memcpy(out + 5, p, (size_t)n);
            out[5 + n] = '\0';
            ok = true;
        }
    }
    BIO_free(b);
    return ok;
}

static bool check(void *ctx, const char *user, const char *password) {
    return bk_node_cred_check(ctx, user, password);
}

/* With the authorizer on (issue 18) the admin port follows the ACLs of
 * its authenticated principal: a change (POST) needs ALTER on the cluster,
 * a read (GET) DESCRIBE on the cluster; super users always pass. The
 * address is not known here, so only host "*" bindings apply. */
static bool is_super(void *ctx, const char *principal) {
    const bk_node_t *n = ctx;
    if (bk_node_is_super_user(n, principal)) return true;
    return bk_node_authz_on(n) &&
           bk_node_authorize(n, principal, "", BK_META_OP_ALTER, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME);
}

static bool may_read(void *ctx, const char *principal) {
    const bk_node_t *n = ctx;
    return !bk_node_authz_on(n) ||
           bk_node_authorize(n, principal, "", BK_META_OP_DESCRIBE, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME);
}

int bk_admin_auth_setup(bk_node_t *n, char *err, size_t len) {
    bk_http_t *a = n->admin;
    const bk_cfg_t *cfg = n->cfg;
    bool tls = strcmp(bk_cfg_str(cfg, BK_CFG_ADMIN_SECURITY_PROTOCOL), "SSL") == 0;
    bool basic = strcmp(bk_cfg_str(cfg, BK_CFG_ADMIN_AUTHENTICATION), "basic") == 0;
    bool certs = false;
    if (tls) {
        SSL_CTX *ctx = tls_ctx(n, err, len);
        if (ctx == NULL)
            return KP_ERR_BAD_VALUE;
        int rc = bk_http_set_tls(a, ctx);
        SSL_CTX_free(ctx); /* the server holds its own reference */
        if (rc != KP_OK) {
            snprintf(err, len, "admin port TLS: cannot install the TLS context");
            return rc;
        }
        const char *ca = key(n, "ssl.client.auth");
        certs = ca && (strcmp(ca, "required") == 0 || strcmp(ca, "requested") == 0);
    }
    if (!basic && !certs) {
        fprintf(stderr, "skiff: admin port on %s: %s, no authentication (admin.authentication=none)\n",
                bk_cfg_admin_listener(cfg), tls ? "TLS" : "plain HTTP");
        return KP_OK;
    }
    const char *d = key(n, "connection.failed.authentication.delay.ms");
    bk_http_auth_t auth = {
        .basic = basic,
        .check = check,
        .is_super = is_super,
        .may_read = may_read,
        .cert_principal = certs ? cert_principal : NULL,
        .ctx = n,
        .cache_ms = bk_cfg_int(cfg, BK_CFG_ADMIN_AUTHENTICATION_CACHE_MS),
        .fail_delay_ms = d && *d ? strtoll(d, NULL, 10) : FAIL_DELAY_DEFAULT_MS,
    };
    if (auth.fail_delay_ms < 0)
        auth.fail_delay_ms = FAIL_DELAY_DEFAULT_MS;
    int rc = bk_http_set_auth(a, &auth);
    if (rc != KP_OK) {
        snprintf(err, len, "admin port: cannot turn authentication on (%s)", kp_status_str(rc));
        return rc;
    }
    if (bk_cfg_bool(cfg, BK_CFG_ADMIN_PROBES_OPEN) &&
        (bk_http_route_access(a, "GET", "/healthz", BK_HTTP_ACCESS_OPEN) != KP_OK ||
         bk_http_route_access(a, "GET", "/readyz", BK_HTTP_ACCESS_OPEN) != KP_OK)) {
        snprintf(err, len, "admin port: cannot open /healthz and /readyz to probes");
        return KP_ERR_BAD_VALUE;
    }
    fprintf(stderr, "skiff: admin port on %s: %s, authentication:%s%s; GET needs a principal, POST a super "
            "user (super.users)%s\n", bk_cfg_admin_listener(cfg), tls ? "TLS" : "plain HTTP",
            basic ? " HTTP Basic (SASL credentials)" : "", certs ? " client certificates" : "",
            bk_cfg_bool(cfg, BK_CFG_ADMIN_PROBES_OPEN) ? "; /healthz and /readyz open" : "");
    return KP_OK;
}
