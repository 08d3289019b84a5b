/* cl_sasl_login.c — SaslHandshake + SaslAuthenticate on a connection,
 * driving the state machine of cl_sasl.c (see cl_sasl.h). */
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clients/cl_conn.h"
#include "clients/cl_sasl.h"
#include "kp_msgs.h"
#include "protocol/kp_errors.h"

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "A, B, C" from the broker's enabled mechanisms (cut to the buffer). */
static void mech_list(const kp_sasl_handshake_response_t *r, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < r->mechanisms.count && used + 1 < n; i++) {
        kp_str_t m = r->mechanisms.items[i];
        int k = snprintf(buf + used, n - used, "%s%.*s", i ? ", " : "", (int)(m.len > 64 ? 64 : m.len),
                         (const char *)m.p);
        if (k < 0) break;
        used += (size_t)k < n - used ? (size_t)k : n - used - 1;
    }
    if (!buf[0]) snprintf(buf, n, "none");
}

static int handshake(cl_conn_t *c, const cl_sec_t *sec, kp_arena_t *a, cl_err_t *e) {
    const char *mech = cl_sasl_mech_name(sec->mechanism);
    if (cl_conn_version(c, KP_API_SASL_HANDSHAKE, 1) != 1)
        return cl_err_kafka(e, KP_ERROR_UNSUPPORTED_VERSION,
                            "%s:%d does not offer SaslHandshake v1 (security.protocol=%s; is it a SASL listener?)",
                            c->host, c->port, cl_sec_proto_name(sec->protocol));
    kp_sasl_handshake_request_t req;
    kp_sasl_handshake_request_init(&req);
    req.mechanism.p = (const uint8_t *)mech;
    req.mechanism.len = strlen(mech);
    void *body = NULL;
    int rc = cl_conn_call(c, KP_API_SASL_HANDSHAKE, 1, &req, false, &body, NULL, a, e);
    if (rc != CL_OK) return rc;
    const kp_sasl_handshake_response_t *r = body;
    if (r->error_code == 0) return CL_OK;
    char list[256];
    mech_list(r, list, sizeof list);
    if (r->error_code == KP_ERROR_UNSUPPORTED_SASL_MECHANISM)
        return cl_err_kafka(e, r->error_code, "SASL mechanism %s is not enabled on %s:%d (enabled: %s)", mech,
                            c->host, c->port, list);
    if (r->error_code == KP_ERROR_ILLEGAL_SASL_STATE)
        return cl_err_kafka(e, r->error_code, "SaslHandshake %s with %s:%d (is it a SASL listener? security.protocol=%s)",
                            mech, c->host, c->port, cl_sec_proto_name(sec->protocol));
    return cl_err_kafka(e, r->error_code, "SaslHandshake %s with %s:%d", mech, c->host, c->port);
}

/* The broker refused: "SASL authentication failed: <its message> (...)". */
static int auth_refused(cl_conn_t *c, const cl_sec_t *sec, int16_t code, kp_str_t msg, cl_err_t *e) {
    const char *name = kp_error_name(code);
    if (msg.p && msg.len)
        cl_err_set(e, CL_E_KAFKA, "SASL authentication failed: %.*s (%s; user '%s', %s at %s:%d)",
                   (int)(msg.len > 200 ? 200 : msg.len), (const char *)msg.p, name ? name : "?", sec->username,
                   cl_sasl_mech_name(sec->mechanism), c->host, c->port);
    else
        cl_err_set(e, CL_E_KAFKA, "SASL authentication failed: %s (user '%s', %s at %s:%d)", name ? name : "?",
                   sec->username, cl_sasl_mech_name(sec->mechanism), c->host, c->port);
    if (e) e->kafka_code = code;
    return CL_E_KAFKA;
}

int cl_sasl_login(cl_conn_t *c, const cl_sec_t *sec, cl_err_t *e) {
    c->sasl_sec = sec;
    c->session_end_ms = 0; /* no re-authentication while logging in */
    c->session_len_ms = 0;
    kp_arena_t a;
    kp_arena_init(&a, (size_t)1 << 20);
    cl_sasl_t s;
    int rc = cl_sasl_init(&s, sec->mechanism, sec->username, sec->password, NULL, e);
    if (rc == CL_OK) rc = handshake(c, sec, &a, e);
    int16_t ver = cl_conn_version(c, KP_API_SASL_AUTHENTICATE, 2);
    if (rc == CL_OK && ver < 1)
        rc = cl_err_kafka(e, KP_ERROR_UNSUPPORTED_VERSION, "%s:%d does not offer SaslAuthenticate v1+", c->host,
                          c->port);
    static const uint8_t nothing[1];
    const uint8_t *in = nothing;
    size_t in_len = 0;
    uint8_t token[CL_SASL_TOKEN_MAX_BYTES];
    bool done = false;
    for (int round = 0; rc == CL_OK && !done; round++) {
        size_t tlen = 0;
        rc = cl_sasl_step(&s, in, in_len, token, sizeof token, &tlen, &done, e);
        if (rc != CL_OK || done) break;
        if (round == CL_SASL_ROUNDS_MAX) {
            rc = cl_err_set(e, CL_E_PROTO, "SASL: more than %d rounds with %s:%d", CL_SASL_ROUNDS_MAX, c->host,
                            c->port);
            break;
        }
        kp_sasl_authenticate_request_t req;
        kp_sasl_authenticate_request_init(&req);
        req.auth_bytes.p = token;
        req.auth_bytes.len = tlen;
        void *body = NULL;
        rc = cl_conn_call(c, KP_API_SASL_AUTHENTICATE, ver, &req, false, &body, NULL, &a, e);
        if (rc != CL_OK) break;
        const kp_sasl_authenticate_response_t *r = body;
        if (r->error_code != 0) {
            rc = auth_refused(c, sec, r->error_code, r->error_message, e);
            break;
        }
        in = r->auth_bytes.p ? r->auth_bytes.p : nothing;
        in_len = r->auth_bytes.len;
        if (r->session_lifetime_ms > 0) {
            c->session_len_ms = r->session_lifetime_ms;
            c->session_end_ms = mono_ms() + r->session_lifetime_ms;
        }
    }
    if (rc != CL_OK) c->session_end_ms = c->session_len_ms = 0;
    cl_sasl_free(&s);
    OPENSSL_cleanse(token, sizeof token); /* PLAIN's token holds the password */
    kp_arena_free(&a);
    return rc;
}

bool cl_sasl_reauth_due(const cl_conn_t *c, int64_t now_ms) {
    if (!c->sasl_sec || c->session_end_ms <= 0) return false;
    int64_t margin = c->session_len_ms / 10;
    if (margin > CL_SASL_REAUTH_MARGIN_MS) margin = CL_SASL_REAUTH_MARGIN_MS;
    return now_ms >= c->session_end_ms - margin;
}
