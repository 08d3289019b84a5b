/* kp_sasl.h — SASL mechanisms' message formats and key math: PLAIN
 * (RFC 4616) and SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677), for
 * BOTH sides of an exchange (the broker is a server; the clients/ library
 * and the node's outgoing peer connections are clients).
 *
 * Pure functions over bytes: no socket, no clock, no randomness of its own
 * (nonces are passed in, so tests replay an exchange exactly; callers take
 * them from RAND_bytes). Every input token is external and read with bounds
 * checks; tokens longer than KP_SASL_TOKEN_MAX are refused before parsing.
 * Secrets are compared in constant time (CRYPTO_memcmp).
 *
 * Statuses: KP_OK; KP_ERR_BAD_VALUE for a malformed token or a value the
 * mechanism forbids; KP_ERR_TOO_LARGE for a token or name over its bound;
 * KP_ERR_UNSUPPORTED for an unknown mechanism or a SCRAM extension the
 * server does not serve; KP_ERR_CORRUPT for an exchange whose proof (server
 * side) or signature (client side) does not verify — the one status that
 * means "wrong credentials". KP_ERR_NOMEM when OpenSSL fails.
 */
#ifndef SKIFF_KP_SASL_H
#define SKIFF_KP_SASL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"

/* Bound on one SASL token of either mechanism. Kafka's SCRAM messages are a
 * few hundred bytes; PLAIN is two names and a password. */
#define KP_SASL_TOKEN_MAX 4096
/* Bound on a user name (after SCRAM's =2C / =3D unescaping) and on a
 * password: the principal "User:<name>" must fit net's 255-byte principal. */
#define KP_SASL_NAME_MAX 240
#define KP_SASL_PASSWORD_MAX 1024
/* SCRAM: iterations at least this many (RFC 7677 recommends 4096; Kafka's
 * ScramMechanism minimum), at most KP_SCRAM_ITERATIONS_MAX (Kafka's 16384). */
#define KP_SCRAM_ITERATIONS_MIN 4096
#define KP_SCRAM_ITERATIONS_MAX 16384
#define KP_SCRAM_HASH_MAX 64 /* SHA-512 */
#define KP_SCRAM_SALT_MAX 128
/* Nonce bound (printable, no ','): each side's part and the combined one. */
#define KP_SCRAM_NONCE_MAX 256
#define KP_SCRAM_MSG_MAX 1024

typedef enum kp_sasl_mech {
    KP_SASL_MECH_PLAIN = 1,
    KP_SASL_MECH_SCRAM_SHA_256 = 2,
    KP_SASL_MECH_SCRAM_SHA_512 = 3,
} kp_sasl_mech_t;

/* Mechanism by its IANA name ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512",
 * exact case). KP_ERR_UNSUPPORTED for any other name (GSSAPI, OAUTHBEARER). */
KP_MUST_CHECK int kp_sasl_mech_parse(kp_slice_t name, kp_sasl_mech_t *out);
/* The IANA name; never NULL ("?" for a value outside the enum). */
const char *kp_sasl_mech_name(kp_sasl_mech_t mech);
bool kp_sasl_mech_is_scram(kp_sasl_mech_t mech);
/* Kafka's AlterUserScramCredentials mechanism numbers: 1 = SCRAM-SHA-256,
 * 2 = SCRAM-SHA-512 (0 = UNKNOWN). KP_ERR_UNSUPPORTED for others. */
KP_MUST_CHECK int kp_sasl_mech_from_scram_type(int8_t type, kp_sasl_mech_t *out);
int8_t kp_sasl_mech_scram_type(kp_sasl_mech_t mech);

/* Constant-time comparison of two byte strings (length leaks, content not). */
bool kp_sasl_ct_equal(const void *a, size_t a_len, const void *b, size_t b_len);

/* ---- PLAIN (RFC 4616): [authzid] NUL authcid NUL passwd ----------------- */
typedef struct kp_sasl_plain {
    kp_slice_t authzid; /* empty when absent; slices into the token */
    kp_slice_t user;
    kp_slice_t password;
} kp_sasl_plain_t;

/* Splits a PLAIN token. user and password must be non-empty, within
 * KP_SASL_NAME_MAX / KP_SASL_PASSWORD_MAX, without NUL; an authzid, when
 * present, must equal the user (Kafka's PlainSaslServer refuses another). */
KP_MUST_CHECK int kp_sasl_plain_parse(const void *tok, size_t len, kp_sasl_plain_t *out);
/* Writes "\0user\0password" to buf; *len its size. KP_ERR_OVERFLOW when cap
 * is short, KP_ERR_BAD_VALUE for empty or NUL-holding parts. */
KP_MUST_CHECK int kp_sasl_plain_build(const char *user, const char *password, uint8_t *buf,
                                      size_t cap, size_t *len);

/* ---- SCRAM key math ------------------------------------------------------ */
size_t kp_scram_hash_len(kp_sasl_mech_t mech); /* 32 or 64; 0 for PLAIN */

/* What a server stores for a user (never the password). */
typedef struct kp_scram_cred {
    kp_sasl_mech_t mech;
    int32_t iterations;
    uint8_t salt[KP_SCRAM_SALT_MAX];
    size_t salt_len;
    uint8_t stored_key[KP_SCRAM_HASH_MAX];
    uint8_t server_key[KP_SCRAM_HASH_MAX];
} kp_scram_cred_t;

/* SaltedPassword = PBKDF2-HMAC(password, salt, iterations) (Hi() of RFC
 * 5802); out holds kp_scram_hash_len(mech) bytes. Slow on purpose (a few
 * ms at 4096): never on the event loop. */
KP_MUST_CHECK int kp_scram_salted_password(kp_sasl_mech_t mech, const void *password,
                                           size_t password_len, const uint8_t *salt,
                                           size_t salt_len, int32_t iterations, uint8_t *out);
/* ClientKey = HMAC(SaltedPassword, "Client Key"), StoredKey = H(ClientKey),
 * ServerKey = HMAC(SaltedPassword, "Server Key"), from a salted password (what
 * AlterUserScramCredentials carries). Cheap (three hashes). */
KP_MUST_CHECK int kp_scram_cred_from_salted(kp_sasl_mech_t mech, const uint8_t *salted,
                                            size_t salted_len, const uint8_t *salt,
                                            size_t salt_len, int32_t iterations,
                                            kp_scram_cred_t *out);
/* Both steps from a password (PBKDF2 + the above). */
KP_MUST_CHECK int kp_scram_cred_from_password(kp_sasl_mech_t mech, const char *password,
                                              const uint8_t *salt, size_t salt_len,
                                              int32_t iterations, kp_scram_cred_t *out);
/* True when password derives cred (PBKDF2 at cred's iterations; slow). */
bool kp_scram_cred_check_password(const kp_scram_cred_t *cred, const char *password);

/* ---- SCRAM server ---------------------------------------------------------
 * 1. kp_scram_server_client_first(s, mech, token)   -> s->user (unescaped)
 * 2. the caller looks the credential up (or makes a fake one for an unknown
 *    user, so that the failure looks the same), then
 *    kp_scram_server_first(s, cred, nonce)          -> server-first message
 * 3. kp_scram_server_final(s, cred, token)          -> server-final message,
 *    KP_OK when the proof verifies, KP_ERR_CORRUPT when it does not.
 * No PBKDF2 on this side: only hashes and HMACs. */
typedef struct kp_scram_server {
    kp_sasl_mech_t mech;
    int step; /* 0 fresh, 1 client-first read, 2 server-first sent, 3 done */
    char user[KP_SASL_NAME_MAX + 1];
    size_t user_len;
    bool token_auth; /* client asked for tokenauth=true (delegation tokens) */
    char gs2[KP_SASL_NAME_MAX * 3 + 16]; /* gs2 header as sent, for c= */
    size_t gs2_len;
    char client_first_bare[KP_SCRAM_MSG_MAX];
    size_t cfb_len;
    char server_first[KP_SCRAM_MSG_MAX];
    size_t sf_len;
    char nonce[KP_SCRAM_NONCE_MAX * 2 + 1]; /* client nonce + server nonce */
    size_t client_nonce_len;
    size_t nonce_len;
} kp_scram_server_t;

void kp_scram_server_init(kp_scram_server_t *s, kp_sasl_mech_t mech);
/* Parses "gs2-header client-first-bare": n,[a=authzid],n=user,r=nonce[,ext].
 * A channel-binding flag 'p' is refused (no channel binding); 'y' and 'n'
 * are accepted. An authzid other than the user is refused (as Kafka). */
KP_MUST_CHECK int kp_scram_server_client_first(kp_scram_server_t *s, const void *tok, size_t len);
/* Builds "r=<client nonce><server nonce>,s=<salt b64>,i=<iterations>".
 * The server nonce is printable text without ',' (kp_scram_nonce_make), 8
 * to 128 characters. */
KP_MUST_CHECK int kp_scram_server_first(kp_scram_server_t *s, const kp_scram_cred_t *cred,
                                        const char *nonce, size_t nonce_len, uint8_t *out,
                                        size_t cap, size_t *out_len);
/* Parses "c=<b64 gs2>,r=<nonce>,p=<proof b64>", checks the channel binding
 * and nonce (it must end with the combined nonce, as Kafka checks:
 * librdkafka 2.0 repeats its own part in front), verifies the proof against cred (constant time) and writes
 * "v=<server signature b64>". KP_ERR_CORRUPT for a proof that does not verify
 * (out untouched); KP_ERR_BAD_VALUE for a malformed token. */
KP_MUST_CHECK int kp_scram_server_final(kp_scram_server_t *s, const kp_scram_cred_t *cred,
                                        const void *tok, size_t len, uint8_t *out, size_t cap,
                                        size_t *out_len);

/* ---- SCRAM client ---------------------------------------------------------
 * 1. kp_scram_client_first(c, mech, user, nonce)   -> "n,,n=<user>,r=<nonce>"
 * 2. kp_scram_client_final(c, password, server-first) -> client-final (PBKDF2)
 * 3. kp_scram_client_verify(c, server-final)        -> KP_OK when v= matches;
 *    KP_ERR_CORRUPT for a wrong signature or an e= error from the server. */
typedef struct kp_scram_client {
    kp_sasl_mech_t mech;
    int step;
    char client_first_bare[KP_SCRAM_MSG_MAX];
    size_t cfb_len;
    char nonce[KP_SCRAM_NONCE_MAX + 1];
    size_t nonce_len;
    uint8_t server_signature[KP_SCRAM_HASH_MAX];
} kp_scram_client_t;

KP_MUST_CHECK int kp_scram_client_first(kp_scram_client_t *c, kp_sasl_mech_t mech,
                                        const char *user, const char *nonce, size_t nonce_len,
                                        uint8_t *out, size_t cap, size_t *out_len);
/* Iterations below KP_SCRAM_ITERATIONS_MIN or above 10x the maximum are
 * refused (a hostile server must not make the client spin). */
KP_MUST_CHECK int kp_scram_client_final(kp_scram_client_t *c, const char *password,
                                        const void *server_first, size_t len, uint8_t *out,
                                        size_t cap, size_t *out_len);
KP_MUST_CHECK int kp_scram_client_verify(kp_scram_client_t *c, const void *server_final,
                                         size_t len);

/* A nonce as text: base64 of rand_len (6..64) random bytes the caller took
 * from RAND_bytes; out needs 4 * ((rand_len + 2) / 3) + 1 bytes. */
KP_MUST_CHECK int kp_scram_nonce_make(const uint8_t *rand, size_t rand_len, char *out, size_t cap,
                                      size_t *out_len);

/* SCRAM name escaping (RFC 5802 saslname): ',' -> "=2C", '=' -> "=3D".
 * escape: KP_ERR_OVERFLOW when cap is short. unescape: KP_ERR_BAD_VALUE for
 * any other '=' sequence or a ',' (NUL-terminated output). */
KP_MUST_CHECK int kp_scram_name_escape(const char *name, size_t len, char *out, size_t cap,
                                       size_t *out_len);
KP_MUST_CHECK int kp_scram_name_unescape(const char *in, size_t len, char *out, size_t cap,
                                         size_t *out_len);

#endif
