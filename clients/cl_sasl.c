/* cl_sasl.c — the SASL client state machine (see cl_sasl.h). No I/O, no
 * clock: the exchange with the broker is cl_sasl_login.c. */
#include "clients/cl_sasl.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_sasl.h"

int cl_sasl_init(cl_sasl_t *s, cl_sasl_mech_t mech, const char *user, const char *password, const uint8_t *nonce,
                 cl_err_t *e) {
    memset(s, 0, sizeof *s);
    s->mech = mech;
    s->user = user;
    s->password = password;
    s->state = CL_SASL_ST_START;
    if (mech != CL_SASL_PLAIN && mech != CL_SASL_SCRAM_SHA_256 && mech != CL_SASL_SCRAM_SHA_512)
        return cl_err_set(e, CL_E_USAGE, "SASL: unsupported mechanism");
    if (!user || !*user || !password || !*password)
        return cl_err_set(e, CL_E_USAGE, "SASL: %s needs a user name and a password", cl_sasl_mech_name(mech));
    if (nonce) memcpy(s->nonce, nonce, sizeof s->nonce);
    else if (RAND_bytes(s->nonce, (int)sizeof s->nonce) != 1)
        return cl_err_set(e, CL_E_IO, "SASL: no random bytes for the nonce");
    if (mech != CL_SASL_PLAIN) {
        s->scram = calloc(1, sizeof(kp_scram_client_t));
        if (!s->scram) return cl_err_set(e, CL_E_NOMEM, "out of memory");
    }
    return CL_OK;
}

void cl_sasl_free(cl_sasl_t *s) {
    OPENSSL_cleanse(s->nonce, sizeof s->nonce);
    if (s->scram) OPENSSL_cleanse(s->scram, sizeof(kp_scram_client_t));
    free(s->scram);
    s->scram = NULL;
    s->state = CL_SASL_ST_FAILED;
}

static int fail(cl_sasl_t *s, int st, cl_err_t *e, const char *msg) {
    s->state = CL_SASL_ST_FAILED;
    return cl_err_set(e, st, "%s", msg);
}

static kp_sasl_mech_t kp_mech(cl_sasl_mech_t m) {
    return m == CL_SASL_SCRAM_SHA_512 ? KP_SASL_MECH_SCRAM_SHA_512 : KP_SASL_MECH_SCRAM_SHA_256;
}

/* PLAIN (RFC 4616): one token, and an empty answer when accepted (a refusal
 * comes as an error code, which the exchange handles). */
static int plain_step(cl_sasl_t *s, size_t in_len, uint8_t *out, size_t out_cap, size_t *out_len, bool *done,
                      cl_err_t *e) {
    if (s->state == CL_SASL_ST_START) {
        if (kp_sasl_plain_build(s->user, s->password, out, out_cap, out_len) != KP_OK)
            return fail(s, CL_E_USAGE, e, "SASL PLAIN: user name or password too long");
        s->state = CL_SASL_ST_SENT_FIRST;
        return CL_OK;
    }
    if (in_len != 0) return fail(s, CL_E_PROTO, e, "SASL PLAIN: unexpected bytes from the server");
    s->state = CL_SASL_ST_DONE;
    *done = true;
    return CL_OK;
}

/* SCRAM (RFC 5802 / 7677) through kp_sasl's client: first, final (the
 * PBKDF2 happens there), then the server's signature checked. */
static int scram_step(cl_sasl_t *s, const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap,
                      size_t *out_len, bool *done, cl_err_t *e) {
    kp_scram_client_t *sc = s->scram;
    int kr;
    switch (s->state) {
    case CL_SASL_ST_START: {
        char nonce[4 * ((CL_SASL_NONCE_BYTES + 2) / 3) + 1];
        size_t nlen = 0;
        kr = kp_scram_nonce_make(s->nonce, sizeof s->nonce, nonce, sizeof nonce, &nlen);
        if (kr == KP_OK)
            kr = kp_scram_client_first(sc, kp_mech(s->mech), s->user, nonce, nlen, out, out_cap, out_len);
        if (kr != KP_OK) return fail(s, CL_E_USAGE, e, "SASL SCRAM: user name too long or not valid");
        s->state = CL_SASL_ST_SENT_FIRST;
        return CL_OK;
    }
    case CL_SASL_ST_SENT_FIRST:
        kr = kp_scram_client_final(sc, s->password, in, in_len, out, out_cap, out_len);
        if (kr != KP_OK) {
            s->state = CL_SASL_ST_FAILED;
            return cl_err_set(e, CL_E_PROTO, "SASL SCRAM: the server's first message is not acceptable (%s)",
                              kp_status_str(kr));
        }
        s->state = CL_SASL_ST_SENT_FINAL;
        return CL_OK;
    case CL_SASL_ST_SENT_FINAL:
        kr = kp_scram_client_verify(sc, in, in_len);
        if (kr != KP_OK)
            return fail(s, CL_E_PROTO, e,
                        kr == KP_ERR_CORRUPT ? "SASL SCRAM: the server's signature does not verify (it does not "
                                               "know this user's credential)"
                                             : "SASL SCRAM: malformed server-final message");
        s->state = CL_SASL_ST_DONE;
        *done = true;
        return CL_OK;
    default: return fail(s, CL_E_PROTO, e, "SASL SCRAM: step after the end of the exchange");
    }
}

int cl_sasl_step(cl_sasl_t *s, const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap, size_t *out_len,
                 bool *done, cl_err_t *e) {
    *done = false;
    *out_len = 0;
    if (s->state == CL_SASL_ST_DONE || s->state == CL_SASL_ST_FAILED)
        return fail(s, CL_E_PROTO, e, "SASL: step after the end of the exchange");
    if (s->mech == CL_SASL_PLAIN) return plain_step(s, in_len, out, out_cap, out_len, done, e);
    return scram_step(s, in, in_len, out, out_cap, out_len, done, e);
}
