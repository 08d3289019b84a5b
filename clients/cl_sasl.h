/* cl_sasl.h — the client side of SASL: a pure state machine per mechanism
 * (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and the Kafka exchange that drives
 * it on a connection.
 *
 * The state machine reads no socket and no clock (randomness for the SCRAM
 * nonce comes from the caller through cl_sasl_init's `nonce`): feed it the
 * server's token, get the next client token. Tokens:
 *   PLAIN          client: "\0user\0password"; server: empty; done.
 *   SCRAM-SHA-*    client-first -> server-first -> client-final ->
 *                  server-final (its signature verified, so a server that
 *                  does not know the password cannot pass itself off as
 *                  the broker); the SCRAM messages and key math are
 *                  protocol/kp_sasl.h's.
 *
 * The exchange (cl_sasl_login): SaslHandshake v1 with the mechanism, then
 * SaslAuthenticate (v1 or v2, the highest both sides speak) once per client
 * token, at most CL_SASL_ROUNDS_MAX rounds. A broker error reads
 * "SASL authentication failed: <the broker's message> (...)" with the Kafka
 * code kept in e->kafka_code (status CL_E_KAFKA). When the broker gives the
 * session a lifetime (KIP-368), the connection re-authenticates before it
 * ends (cl_sasl_reauth_due).
 */
#ifndef SKIFF_CL_SASL_H
#define SKIFF_CL_SASL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clients/cl_err.h"
#include "clients/cl_props.h"

#define CL_SASL_ROUNDS_MAX 4         /* SaslAuthenticate round trips per login */
#define CL_SASL_TOKEN_MAX_BYTES 4096 /* a client token we build */
#define CL_SASL_NONCE_BYTES 24       /* random bytes behind the SCRAM client nonce */

typedef enum cl_sasl_state {
    CL_SASL_ST_START = 0,   /* nothing sent */
    CL_SASL_ST_SENT_FIRST,  /* PLAIN: the token; SCRAM: client-first */
    CL_SASL_ST_SENT_FINAL,  /* SCRAM: client-final */
    CL_SASL_ST_DONE,        /* authenticated (the server's last token checked) */
    CL_SASL_ST_FAILED,
} cl_sasl_state_t;

typedef struct cl_sasl {
    cl_sasl_mech_t mech;
    cl_sasl_state_t state;
    const char *user;       /* not owned; outlive the state machine */
    const char *password;
    uint8_t nonce[CL_SASL_NONCE_BYTES];
    void *scram;            /* SCRAM client state (kp_sasl's), NULL for PLAIN */
} cl_sasl_t;

/* Starts a state machine. `nonce` (CL_SASL_NONCE_BYTES random bytes) is
 * used by SCRAM only; NULL makes cl_sasl_init draw it from the OS. */
CL_MUST_CHECK int cl_sasl_init(cl_sasl_t *s, cl_sasl_mech_t mech, const char *user, const char *password,
                               const uint8_t *nonce, cl_err_t *e);
void cl_sasl_free(cl_sasl_t *s);
/* One step: `in` is the server's last token (ignored in START). On CL_OK,
 * either *done is true (authenticated; nothing more to send) or out[0..*out_len)
 * is the next token to send. A server token that does not fit the exchange
 * (a bad SCRAM message, a wrong server signature, a nonce the client did not
 * start) is CL_E_PROTO and the state becomes FAILED. */
CL_MUST_CHECK int cl_sasl_step(cl_sasl_t *s, const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap,
                               size_t *out_len, bool *done, cl_err_t *e);

struct cl_conn;
/* Runs the whole exchange on an open connection whose ApiVersions is
 * done (cl_conn_open_sec calls it). */
CL_MUST_CHECK int cl_sasl_login(struct cl_conn *c, const cl_sec_t *sec, cl_err_t *e);
/* True when the connection's SASL session ends within the next
 * CL_SASL_REAUTH_MARGIN_MS (or 10% of its lifetime, the smaller), so that
 * the next call should re-authenticate first. */
bool cl_sasl_reauth_due(const struct cl_conn *c, int64_t now_ms);
#define CL_SASL_REAUTH_MARGIN_MS 5000

#endif
