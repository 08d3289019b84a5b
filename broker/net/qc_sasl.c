/* broker/net/qc_sasl.c — SASL client of the peer connections (see
 * qc_sasl_int.h). The frames are the non-flexible versions (SaslHandshake
 * v1, SaslAuthenticate v1), written and read here by hand: four fields
 * each. Every length read from the peer is checked against what arrived.
 * SCRAM's PBKDF2 runs on the loop thread: once per connection (4096
 * iterations, a few ms), never per request. */
#include "broker/net/qc_sasl_int.h"

#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>
#include <openssl/rand.h>

#define API_SASL_HANDSHAKE 17
#define API_SASL_AUTHENTICATE 36
#define CLIENT_ID "skiff-peer"
#define FRAME_MAX (KP_SASL_TOKEN_MAX + 64)

typedef struct { uint8_t *b; size_t n, cap; bool bad; } wbuf_t;

static void put(wbuf_t *w, const void *p, size_t n) {
    if (w->bad || w->n + n > w->cap) { w->bad = true; return; }
    memcpy(w->b + w->n, p, n);
    w->n += n;
}
static void put16(wbuf_t *w, int v) { uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v }; put(w, b, 2); }
static void put32(wbuf_t *w, int64_t v) {
    uint8_t b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
    put(w, b, 4);
}
static void put_str(wbuf_t *w, const char *s) { put16(w, (int)strlen(s)); put(w, s, strlen(s)); }

/* size prefix + request header v1 + body, onto out */
static int send_req(qc_sasl_t *s, int api, const uint8_t *body, size_t blen, struct evbuffer *out) {
    uint8_t buf[FRAME_MAX];
    wbuf_t w = { buf, 0, sizeof buf, false };
    put32(&w, 0); /* the size, below */
    put16(&w, api);
    put16(&w, 1);
    put32(&w, ++s->corr);
    put_str(&w, CLIENT_ID);
    put(&w, body, blen);
    if (w.bad) return -1;
    uint32_t size = (uint32_t)(w.n - 4);
    buf[0] = (uint8_t)(size >> 24); buf[1] = (uint8_t)(size >> 16); buf[2] = (uint8_t)(size >> 8); buf[3] = (uint8_t)size;
    return evbuffer_add(out, buf, w.n) == 0 ? 0 : -1;
}

static int send_token(qc_sasl_t *s, const uint8_t *tok, size_t len, struct evbuffer *out) {
    uint8_t body[KP_SASL_TOKEN_MAX + 8];
    wbuf_t w = { body, 0, sizeof body, false };
    put32(&w, (int64_t)len);
    put(&w, tok, len);
    return w.bad ? -1 : send_req(s, API_SASL_AUTHENTICATE, body, w.n, out);
}

int qc_sasl_start(qc_sasl_t *s, const bk_net_qc_security_t *sec, struct evbuffer *out, char *why, size_t why_len) {
    memset(s, 0, sizeof *s);
    if (kp_sasl_mech_parse(kp_slice_cstr(sec->mechanism), &s->mech) != KP_OK) {
        snprintf(why, why_len, "SASL mechanism '%s' is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", sec->mechanism);
        return -1;
    }
    if (!sec->username[0]) {
        snprintf(why, why_len, "no SASL username for the node's own login (username=\"...\" in the jaas config)");
        return -1;
    }
    uint8_t body[64];
    wbuf_t w = { body, 0, sizeof body, false };
    put_str(&w, sec->mechanism);
    if (w.bad || send_req(s, API_SASL_HANDSHAKE, body, w.n, out) != 0) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    return 0;
}

typedef struct { const uint8_t *p; size_t n; bool bad; } rbuf_t;

static const uint8_t *take(rbuf_t *r, size_t n) {
    if (r->bad || r->n < n) { r->bad = true; return NULL; }
    const uint8_t *p = r->p;
    r->p += n;
    r->n -= n;
    return p;
}
static int64_t get(rbuf_t *r, int bytes) {
    const uint8_t *p = take(r, (size_t)bytes);
    int64_t v = 0;
    for (int i = 0; p && i < bytes; i++) v = v << 8 | p[i];
    if (bytes == 2) v = (int16_t)v;
    if (bytes == 4) v = (int32_t)v;
    return v;
}

/* The authentication round after the handshake: the first token. */
static int first_token(qc_sasl_t *s, const bk_net_qc_security_t *sec, struct evbuffer *out, char *why, size_t why_len) {
    uint8_t tok[KP_SASL_TOKEN_MAX];
    size_t len = 0;
    int rc;
    if (s->mech == KP_SASL_MECH_PLAIN) {
        rc = kp_sasl_plain_build(sec->username, sec->password, tok, sizeof tok, &len);
    } else {
        uint8_t rnd[24];
        char nonce[64];
        size_t nlen = 0;
        if (RAND_bytes(rnd, sizeof rnd) != 1 || kp_scram_nonce_make(rnd, sizeof rnd, nonce, sizeof nonce, &nlen) != KP_OK) {
            snprintf(why, why_len, "no random nonce");
            return -1;
        }
        rc = kp_scram_client_first(&s->scram, s->mech, sec->username, nonce, nlen, tok, sizeof tok, &len);
    }
    if (rc != KP_OK || send_token(s, tok, len, out) != 0) {
        snprintf(why, why_len, "cannot build the %s token (%d)", kp_sasl_mech_name(s->mech), rc);
        return -1;
    }
    return 0;
}

int qc_sasl_on_frame(qc_sasl_t *s, const bk_net_qc_security_t *sec, const uint8_t *frame, size_t len,
                     struct evbuffer *out, char *why, size_t why_len) {
    rbuf_t r = { frame, len, false };
    int32_t corr = (int32_t)get(&r, 4);
    if (r.bad || corr != s->corr) {
        snprintf(why, why_len, "SASL answer with correlation id %d, expected %d", corr, s->corr);
        return -1;
    }
    int16_t err = (int16_t)get(&r, 2);
    if (s->step == 0) {
        /* SaslHandshake v1: error_code, mechanisms */
        if (r.bad || err != 0) {
            snprintf(why, why_len, "SaslHandshake refused %s (error %d: mechanism not enabled on the peer's listener?)",
                     sec->mechanism, err);
            return -1;
        }
        s->step = 1;
        return first_token(s, sec, out, why, why_len);
    }
    /* SaslAuthenticate v1: error_code, error_message, auth_bytes, session_lifetime_ms */
    int16_t mlen = (int16_t)get(&r, 2);
    const uint8_t *msg = mlen > 0 ? take(&r, (size_t)mlen) : NULL;
    int32_t tlen = (int32_t)get(&r, 4);
    const uint8_t *tok = tlen > 0 ? take(&r, (size_t)tlen) : NULL;
    if (r.bad || tlen < -1) {
        snprintf(why, why_len, "malformed SaslAuthenticate answer");
        return -1;
    }
    if (err != 0) {
        snprintf(why, why_len, "SASL %s login of '%s' refused (error %d%s%.*s)", kp_sasl_mech_name(s->mech),
                 sec->username, err, msg ? ": " : "", msg ? (int)mlen : 0, msg ? (const char *)msg : "");
        return -1;
    }
    if (s->mech == KP_SASL_MECH_PLAIN) return 1;
    size_t tl = tlen > 0 ? (size_t)tlen : 0;
    if (s->step == 1) {
        uint8_t fin[KP_SASL_TOKEN_MAX];
        size_t flen = 0;
        if (kp_scram_client_final(&s->scram, sec->password, tok ? tok : (const uint8_t *)"", tl, fin, sizeof fin,
                                  &flen) != KP_OK || send_token(s, fin, flen, out) != 0) {
            snprintf(why, why_len, "SCRAM: the server's first message is not acceptable");
            return -1;
        }
        s->step = 2;
        return 0;
    }
    if (kp_scram_client_verify(&s->scram, tok ? tok : (const uint8_t *)"", tl) != KP_OK) {
        snprintf(why, why_len, "SCRAM: the server's signature does not verify (not the real peer?)");
        return -1;
    }
    return 1;
}
