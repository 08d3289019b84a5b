/* broker/net/tls.h — TLS contexts for the Kafka listeners (server side) and
 * the outgoing peer connections (client side), from PEM files.
 *
 * A bk_net_tls_t holds the current OpenSSL context built from a
 * bk_net_tls_config_t (its strings are copied). bk_net_tls_reload builds a
 * new context from the same files: new connections get it, existing ones
 * keep the one they started with (OpenSSL counts the references); a
 * context that cannot be built (missing file, wrong password, key not
 * matching the certificate) leaves the old one in place and says why.
 * Threading: loop thread only. */
#ifndef SKIFF_BK_NET_TLS_H
#define SKIFF_BK_NET_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include "broker/net/net.h"

struct ssl_ctx_st;
struct ssl_st;

/* ssl.client.auth */
typedef enum bk_net_tls_auth {
    BK_NET_TLS_AUTH_NONE = 0,
    BK_NET_TLS_AUTH_REQUESTED,
    BK_NET_TLS_AUTH_REQUIRED
} bk_net_tls_auth_t;

/* A TLS handshake not finished this long after the accept is closed
 * (skiff only: Kafka has no such bound; a peer that sends half a
 * ClientHello would otherwise hold the connection until
 * connections.max.idle.ms). */
#define BK_NET_TLS_HANDSHAKE_MS 10000
/* Largest plaintext piece handed to SSL_write at once; also what a TLS
 * connection without kTLS holds of a file range in memory. */
#define BK_NET_TLS_CHUNK (64 * 1024)

typedef struct bk_net_tls_config {
    const char *listener;            /* for log lines ("SSL", "CONTROLLER") */
    const char *keystore_location;   /* PEM: certificate chain + private key; NULL: none (client only) */
    const char *key_password;        /* ssl.key.password for an encrypted key, or NULL */
    const char *truststore_location; /* PEM CA certificates, or NULL (system default for clients) */
    bk_net_tls_auth_t client_auth;   /* server side */
    const char *enabled_protocols;   /* "TLSv1.2,TLSv1.3" (NULL = both) */
    const char *cipher_suites;       /* Kafka/IANA names, comma-separated; NULL or "" = OpenSSL's defaults */
    const char *principal_rules;     /* ssl.principal.mapping.rules (NULL = DEFAULT) */
} bk_net_tls_config_t;

/* A server (client == false) or client context. NULL with the reason in
 * err (naming the file or key at fault). */
bk_net_tls_t *bk_net_tls_new(const bk_net_tls_config_t *cfg, bool client, char *err, size_t err_len);
void bk_net_tls_free(bk_net_tls_t *t);

/* Re-reads the files. 0, or -1 with the reason (the old context stays). */
BK_NET_MUST_CHECK int bk_net_tls_reload(bk_net_tls_t *t, char *err, size_t err_len);

/* New files (AlterConfigs of listener.name.<l>.ssl.keystore.location,
 * ssl.key.password, ssl.truststore.location): NULL keeps a path/password
 * as it is, "" clears it. Builds a context from them; on failure the old
 * files and context stay. 1 = changed, 0 = nothing differed, -1 = failed. */
BK_NET_MUST_CHECK int bk_net_tls_reconfigure(bk_net_tls_t *t, const char *keystore, const char *key_password,
                                            const char *truststore, char *err, size_t err_len);

/* The current context (a new SSL takes its own reference). */
struct ssl_ctx_st *bk_net_tls_ctx(const bk_net_tls_t *t);
const char *bk_net_tls_listener(const bk_net_tls_t *t);

/* The principal of a finished handshake: "User:" + the peer certificate's
 * subject (RFC 2253) mapped by the rules; "User:ANONYMOUS" without a
 * certificate. 0, or -1 when no rule maps the subject (Kafka refuses the
 * connection then) with the subject in out. */
BK_NET_MUST_CHECK int bk_net_tls_principal(const bk_net_tls_t *t, struct ssl_st *ssl, char *out, size_t out_len);
/* The same from the peer certificate (not consumed; NULL = none): for a
 * handshake finished on a network loop, mapped on the state loop. */
struct x509_st;
BK_NET_MUST_CHECK int bk_net_tls_cert_principal(const bk_net_tls_t *t, struct x509_st *cert, char *out, size_t out_len);

/* Kafka's ssl.cipher.suites (IANA names such as
 * TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 or TLS_AES_128_GCM_SHA256; OpenSSL's
 * own names are accepted too) -> OpenSSL's TLS 1.2 cipher list ("A:B") and
 * TLS 1.3 ciphersuites, through SSL_CIPHER_standard_name. 0, or -1 naming
 * the first unknown suite. */
BK_NET_MUST_CHECK int bk_net_tls_cipher_map(const char *suites, char *tls12, size_t tls12_len, char *tls13,
                                           size_t tls13_len, char *err, size_t err_len);

/* Whether this process can put TLS in the kernel (OpenSSL built with kTLS
 * and "tls" in /proc/sys/net/ipv4/tcp_available_ulp), with the reason. */
bool bk_net_tls_ktls_available(char *why, size_t why_len);

/* The last OpenSSL error of this thread as text (and the queue cleared). */
void bk_net_tls_error(char *out, size_t out_len);

#endif
