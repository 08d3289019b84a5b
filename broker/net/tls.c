/* broker/net/tls.c — OpenSSL contexts from PEM files, certificate reload,
 * the principal of a client certificate, Kafka cipher names (tls.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "broker/net/tls.h"
#include "protocol/kp_principal.h"

#define TLS_PATH_MAX 1024
#define TLS_TEXT_MAX 2048

struct bk_net_tls {
    bool client;
    char listener[BK_NET_LISTENER_NAME_MAX + 1];
    char keystore[TLS_PATH_MAX];      /* "" = none */
    char password[TLS_TEXT_MAX];
    bool has_password;
    char truststore[TLS_PATH_MAX];    /* "" = none */
    bk_net_tls_auth_t auth;
    char protocols[128];
    char ciphers[TLS_TEXT_MAX];
    kp_principal_rules_t *rules;
    SSL_CTX *ctx;
};

void bk_net_tls_error(char *out, size_t out_len) {
    unsigned long e = ERR_peek_last_error();
    if (e == 0) snprintf(out, out_len, "unknown TLS error");
    else ERR_error_string_n(e, out, out_len);
    ERR_clear_error();
}

static int fail(char *err, size_t len, const char *fmt, const char *a, const char *b) {
    char ssl_err[256];
    bk_net_tls_error(ssl_err, sizeof ssl_err);
    snprintf(err, len, fmt, a, b ? b : ssl_err);
    return -1;
}

static bool copy(char *dst, size_t cap, const char *src) {
    if (!src) src = "";
    size_t n = strlen(src);
    if (n >= cap) return false;
    memcpy(dst, src, n + 1);
    return true;
}

/* The password callback: the configured ssl.key.password, never a prompt
 * on the terminal (OpenSSL's default when no callback is set). */
static int password_cb(char *buf, int size, int rwflag, void *u) {
    const bk_net_tls_t *t = u;
    if (!t->has_password) return 0;
    size_t n = strlen(t->password);
    if (n > (size_t)size) return 0;
    memcpy(buf, t->password, n);
    return (int)n;
}

int bk_net_tls_cipher_map(const char *suites, char *tls12, size_t tls12_len, char *tls13, size_t tls13_len,
                          char *err, size_t err_len) {
    tls12[0] = tls13[0] = '\0';
    if (!suites || !*suites) return 0;
    SSL_CTX *ctx = SSL_CTX_new(TLS_method());
    if (!ctx) return fail(err, err_len, "ssl.cipher.suites: %s%s", "", NULL);
    SSL *ssl = NULL;
    if (SSL_CTX_set_cipher_list(ctx, "ALL:COMPLEMENTOFALL") != 1 ||
        SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:"
                                      "TLS_AES_128_CCM_SHA256:TLS_AES_128_CCM_8_SHA256") != 1 ||
        !(ssl = SSL_new(ctx))) {
        SSL_CTX_free(ctx);
        return fail(err, err_len, "ssl.cipher.suites: %s%s", "", NULL);
    }
    STACK_OF(SSL_CIPHER) *all = SSL_get_ciphers(ssl);
    int rc = 0;
    size_t n12 = 0, n13 = 0;
    const char *p = suites;
    while (*p && rc == 0) {
        while (*p == ' ' || *p == ',') p++;
        size_t len = strcspn(p, ", ");
        if (len == 0) break;
        char name[128];
        if (len >= sizeof name) {
            snprintf(err, err_len, "ssl.cipher.suites: '%.60s...' is no cipher suite", p);
            rc = -1;
            break;
        }
        memcpy(name, p, len);
        name[len] = '\0';
        p += len;
        const SSL_CIPHER *found = NULL;
        for (int i = 0; all && i < sk_SSL_CIPHER_num(all) && !found; i++) {
            const SSL_CIPHER *c = sk_SSL_CIPHER_value(all, i);
            const char *std = SSL_CIPHER_standard_name(c);
            if ((std && strcmp(std, name) == 0) || strcmp(SSL_CIPHER_get_name(c), name) == 0) found = c;
        }
        if (!found) {
            snprintf(err, err_len, "ssl.cipher.suites: unknown cipher suite '%s' (Kafka/IANA names such as "
                     "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 or TLS_AES_128_GCM_SHA256)", name);
            rc = -1;
            break;
        }
        bool v13 = strcmp(SSL_CIPHER_get_version(found), "TLSv1.3") == 0;
        char *out = v13 ? tls13 : tls12;
        size_t *n = v13 ? &n13 : &n12, cap = v13 ? tls13_len : tls12_len;
        const char *oname = SSL_CIPHER_get_name(found);
        int w = snprintf(out + *n, cap - *n, "%s%s", *n ? ":" : "", oname);
        if (w < 0 || (size_t)w >= cap - *n) {
            snprintf(err, err_len, "ssl.cipher.suites: list too long");
            rc = -1;
            break;
        }
        *n += (size_t)w;
    }
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    return rc;
}

/* "TLSv1.2,TLSv1.3" -> min and max protocol versions. */
static int protocol_range(const char *list, int *min, int *max, char *err, size_t err_len) {
    *min = *max = 0;
    const char *p = list && *list ? list : "TLSv1.2,TLSv1.3";
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        size_t len = strcspn(p, ", ");
        if (len == 0) break;
        int v;
        if (len == 7 && memcmp(p, "TLSv1.2", 7) == 0) v = TLS1_2_VERSION;
        else if (len == 7 && memcmp(p, "TLSv1.3", 7) == 0) v = TLS1_3_VERSION;
        else {
            snprintf(err, err_len, "ssl.enabled.protocols: '%.*s' is not supported (TLSv1.2, TLSv1.3)", (int)len, p);
            return -1;
        }
        if (!*min || v < *min) *min = v;
        if (!*max || v > *max) *max = v;
        p += len;
    }
    if (!*min) {
        snprintf(err, err_len, "ssl.enabled.protocols: empty");
        return -1;
    }
    return 0;
}

/* A new context from the files named in t. */
static SSL_CTX *build(bk_net_tls_t *t, char *err, size_t len) {
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(t->client ? TLS_client_method() : TLS_server_method());
    if (!ctx) {
        fail(err, len, "listener %s: cannot create a TLS context: %s", t->listener, NULL);
        return NULL;
    }
    int min, max;
    char c12[TLS_TEXT_MAX], c13[TLS_TEXT_MAX];
    if (protocol_range(t->protocols, &min, &max, err, len) != 0 ||
        bk_net_tls_cipher_map(t->ciphers, c12, sizeof c12, c13, sizeof c13, err, len) != 0)
        goto bad;
    /* a cipher list naming only one version's suites turns the other off */
    if (t->ciphers[0] && !c12[0] && min < TLS1_3_VERSION) min = TLS1_3_VERSION;
    if (t->ciphers[0] && !c13[0] && max > TLS1_2_VERSION) max = TLS1_2_VERSION;
    if (min > max) {
        snprintf(err, len, "listener %s: ssl.cipher.suites has no suite for ssl.enabled.protocols", t->listener);
        goto bad;
    }
    if (SSL_CTX_set_min_proto_version(ctx, min) != 1 || SSL_CTX_set_max_proto_version(ctx, max) != 1 ||
        (c12[0] && SSL_CTX_set_cipher_list(ctx, c12) != 1) || (c13[0] && SSL_CTX_set_ciphersuites(ctx, c13) != 1)) {
        fail(err, len, "listener %s: protocols or cipher suites refused: %s", t->listener, NULL);
        goto bad;
    }
    /* a peer that closes without close_notify (librdkafka does) is an
     * ordinary EOF, not a TLS error to log */
    long opts = SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_IGNORE_UNEXPECTED_EOF;
#ifdef SSL_OP_ENABLE_KTLS
    opts |= SSL_OP_ENABLE_KTLS; /* used only where the kernel has the tls ULP */
#endif
    SSL_CTX_set_options(ctx, opts);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_default_passwd_cb(ctx, password_cb);
    SSL_CTX_set_default_passwd_cb_userdata(ctx, t);
    if (t->keystore[0]) {
        if (SSL_CTX_use_certificate_chain_file(ctx, t->keystore) != 1) {
            fail(err, len, "ssl.keystore.location=%s: no PEM certificate chain: %s", t->keystore, NULL);
            goto bad;
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, t->keystore, SSL_FILETYPE_PEM) != 1) {
            if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
                fail(err, len, "ssl.keystore.location=%s: the private key does not match the certificate: %s",
                     t->keystore, NULL);
                goto bad;
            }
            fail(err, len, t->has_password ? "ssl.keystore.location=%s: cannot read the private key (wrong "
                 "ssl.key.password?): %s" : "ssl.keystore.location=%s: cannot read the private key (encrypted "
                 "without ssl.key.password?): %s", t->keystore, NULL);
            goto bad;
        }
        if (SSL_CTX_check_private_key(ctx) != 1) {
            fail(err, len, "ssl.keystore.location=%s: the private key does not match the certificate: %s",
                 t->keystore, NULL);
            goto bad;
        }
    }
    if (t->truststore[0]) {
        if (SSL_CTX_load_verify_locations(ctx, t->truststore, NULL) != 1) {
            fail(err, len, "ssl.truststore.location=%s: no PEM certificates: %s", t->truststore, NULL);
            goto bad;
        }
        if (!t->client) {
            STACK_OF(X509_NAME) *cas = SSL_load_client_CA_file(t->truststore);
            if (cas) SSL_CTX_set_client_CA_list(ctx, cas);
        }
    } else if (t->client && SSL_CTX_set_default_verify_paths(ctx) != 1) {
        fail(err, len, "listener %s: no trust store: %s", t->listener, NULL);
        goto bad;
    }
    if (t->client) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    } else {
        int mode = t->auth == BK_NET_TLS_AUTH_NONE ? SSL_VERIFY_NONE
                 : t->auth == BK_NET_TLS_AUTH_REQUESTED ? SSL_VERIFY_PEER
                 : SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
        if (t->auth != BK_NET_TLS_AUTH_NONE && !t->truststore[0]) {
            snprintf(err, len, "listener %s: ssl.client.auth=%s needs ssl.truststore.location", t->listener,
                     t->auth == BK_NET_TLS_AUTH_REQUIRED ? "required" : "requested");
            goto bad;
        }
        SSL_CTX_set_verify(ctx, mode, NULL);
        /* resumed sessions must not skip the client check */
        static const unsigned char sid[] = "skiff";
        if (SSL_CTX_set_session_id_context(ctx, sid, sizeof sid - 1) != 1) {
            fail(err, len, "listener %s: %s%s", t->listener, NULL);
            goto bad;
        }
    }
    return ctx;
bad:
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return NULL;
}

bk_net_tls_t *bk_net_tls_new(const bk_net_tls_config_t *cfg, bool client, char *err, size_t err_len) {
    bk_net_tls_t *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    t->client = client;
    t->auth = cfg->client_auth;
    t->has_password = cfg->key_password != NULL;
    if (!copy(t->listener, sizeof t->listener, cfg->listener) || !copy(t->keystore, sizeof t->keystore, cfg->keystore_location) ||
        !copy(t->password, sizeof t->password, cfg->key_password) ||
        !copy(t->truststore, sizeof t->truststore, cfg->truststore_location) ||
        !copy(t->protocols, sizeof t->protocols, cfg->enabled_protocols) ||
        !copy(t->ciphers, sizeof t->ciphers, cfg->cipher_suites)) {
        snprintf(err, err_len, "listener %s: a TLS setting is too long", cfg->listener ? cfg->listener : "?");
        free(t);
        return NULL;
    }
    if (!client && !t->keystore[0]) {
        snprintf(err, err_len, "listener %s: TLS needs ssl.keystore.location", t->listener);
        free(t);
        return NULL;
    }
    char why[256];
    t->rules = kp_principal_rules_parse(cfg->principal_rules ? cfg->principal_rules : "DEFAULT", why, sizeof why);
    if (!t->rules) {
        snprintf(err, err_len, "listener %s: %s", t->listener, why);
        free(t);
        return NULL;
    }
    t->ctx = build(t, err, err_len);
    if (!t->ctx) {
        bk_net_tls_free(t);
        return NULL;
    }
    return t;
}

void bk_net_tls_free(bk_net_tls_t *t) {
    if (!t) return;
    SSL_CTX_free(t->ctx);
    kp_principal_rules_free(t->rules);
    OPENSSL_cleanse(t->password, sizeof t->password);
    free(t);
}

int bk_net_tls_reload(bk_net_tls_t *t, char *err, size_t err_len) {
    SSL_CTX *ctx = build(t, err, err_len);
    if (!ctx) return -1;
    SSL_CTX_free(t->ctx); /* connections that use it hold their own reference */
    t->ctx = ctx;
    return 0;
}

int bk_net_tls_reconfigure(bk_net_tls_t *t, const char *keystore, const char *key_password, const char *truststore,
                           char *err, size_t err_len) {
    bool same = (!keystore || strcmp(keystore, t->keystore) == 0) &&
                (!truststore || strcmp(truststore, t->truststore) == 0) &&
                (!key_password || (key_password[0] ? t->has_password && strcmp(key_password, t->password) == 0
                                                   : !t->has_password));
    if (same) return 0;
    bk_net_tls_t old = *t; /* the strings; ctx and rules stay owned by t */
    if ((keystore && !copy(t->keystore, sizeof t->keystore, keystore)) ||
        (truststore && !copy(t->truststore, sizeof t->truststore, truststore)) ||
        (key_password && !copy(t->password, sizeof t->password, key_password))) {
        *t = old;
        snprintf(err, err_len, "listener %s: a TLS setting is too long", t->listener);
        return -1;
    }
    if (key_password) t->has_password = key_password[0] != '\0';
    SSL_CTX *ctx = build(t, err, err_len);
    if (!ctx) {
        *t = old;
        OPENSSL_cleanse(&old, sizeof old);
        return -1;
    }
    OPENSSL_cleanse(&old, sizeof old);
    SSL_CTX_free(t->ctx);
    t->ctx = ctx;
    return 1;
}

struct ssl_ctx_st *bk_net_tls_ctx(const bk_net_tls_t *t) { return t->ctx; }

const char *bk_net_tls_listener(const bk_net_tls_t *t) { return t->listener; }

int bk_net_tls_principal(const bk_net_tls_t *t, SSL *ssl, char *out, size_t out_len) {
    X509 *peer = SSL_get1_peer_certificate(ssl);
    int rc = bk_net_tls_cert_principal(t, peer, out, out_len);
    X509_free(peer);
    return rc;
}

int bk_net_tls_cert_principal(const bk_net_tls_t *t, X509 *peer, char *out, size_t out_len) {
    if (!peer) {
        snprintf(out, out_len, "%s", BK_NET_PRINCIPAL_ANONYMOUS);
        return 0;
    }
    char subject[KP_PRINCIPAL_TEXT_MAX + 1] = "";
    BIO *b = BIO_new(BIO_s_mem());
    int rc = -1;
    if (b && X509_NAME_print_ex(b, X509_get_subject_name(peer), 0, XN_FLAG_RFC2253) >= 0) {
        int n = BIO_read(b, subject, (int)sizeof subject - 1);
        subject[n > 0 ? n : 0] = '\0';
        char mapped[BK_NET_PRINCIPAL_MAX + 1];
        if (kp_principal_map(t->rules, subject, mapped, sizeof mapped - 5) == KP_OK) {
            snprintf(out, out_len, "User:%s", mapped);
            rc = 0;
        } else {
            snprintf(out, out_len, "%s", subject);
        }
    } else {
        snprintf(out, out_len, "(unreadable subject)");
    }
    BIO_free(b);
    ERR_clear_error();
    return rc;
}

bool bk_net_tls_ktls_available(char *why, size_t why_len) {
#ifndef SSL_OP_ENABLE_KTLS
    snprintf(why, why_len, "OpenSSL without kTLS");
    return false;
#else
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_available_ulp", "r");
    char line[256] = "";
    if (f) {
        if (!fgets(line, sizeof line, f)) line[0] = '\0';
        fclose(f);
    }
    for (char *p = strtok(line, " \n"); p; p = strtok(NULL, " \n"))
        if (strcmp(p, "tls") == 0) {
            snprintf(why, why_len, "kernel tls ULP loaded");
            return true;
        }
    snprintf(why, why_len, "the kernel's tls module is not loaded (tcp_available_ulp: %s)", f ? "no tls" : "unreadable");
    return false;
#endif
}
