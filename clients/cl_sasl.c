/* cl_sasl.c — the SASL client state machine (see cl_sasl.h). No I/O, no
 * clock: the exchange with the broker is cl_sasl_login.c. */
#include "clients/cl_sasl.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    return CL_OK;
}

void cl_sasl_free(cl_sasl_t *s) {
    OPENSSL_cleanse(s->nonce, sizeof s->nonce);
    s->state = CL_SASL_ST_FAILED;
}

static int fail(cl_sasl_t *s, int st, cl_err_t *e, const char *msg) {
    s->state = CL_SASL_ST_FAILED;
    return cl_err_set(e, st, "%s", msg);
}

/* PLAIN (RFC 4616): authzid empty, then authcid and password, NUL-separated. */
static int plain_step(cl_sasl_t *s, size_t in_len, uint8_t *out, size_t out_cap, size_t *out_len, bool *done,
                      cl_err_t *e) {
    if (s->state == CL_SASL_ST_START) {
        size_t u = strlen(s->user), p = strlen(s->password);
        if (u + p + 2 > out_cap) return fail(s, CL_E_USAGE, e, "SASL PLAIN: user name and password too long");
        out[0] = 0;
        memcpy(out + 1, s->user, u);
        out[1 + u] = 0;
        memcpy(out + 2 + u, s->password, p);
        *out_len = u + p + 2;
        s->state = CL_SASL_ST_SENT_FIRST;
        return CL_OK;
    }
    if (s->state == CL_SASL_ST_SENT_FIRST) {
        /* the broker accepted (an error would have come as an error code);
         * PLAIN's server answer carries nothing */
        if (in_len != 0) return fail(s, CL_E_PROTO, e, "SASL PLAIN: unexpected bytes from the server");
        s->state = CL_SASL_ST_DONE;
        *done = true;
        return CL_OK;
    }
    return fail(s, CL_E_PROTO, e, "SASL PLAIN: step after the end of the exchange");
}

int cl_sasl_step(cl_sasl_t *s, const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap, size_t *out_len,
                 bool *done, cl_err_t *e) {
    *done = false;
    *out_len = 0;
    if (s->state == CL_SASL_ST_DONE || s->state == CL_SASL_ST_FAILED)
        return fail(s, CL_E_PROTO, e, "SASL: step after the end of the exchange");
    if (s->mech == CL_SASL_PLAIN) return plain_step(s, in_len, out, out_cap, out_len, done, e);
    (void)in;
    return fail(s, CL_E_USAGE, e, "SASL: SCRAM is not built in yet");
}
