/* sasl.c — PLAIN and SCRAM-SHA-256/512 primitives (kp_sasl.h).
 *
 * Every token is read through kp_rd_t-style bounds: a token is first checked
 * against KP_SASL_TOKEN_MAX, then split into attributes by scanning a
 * (pointer, length) pair; nothing here relies on NUL termination of input.
 * Output is written only through bounded appends (`ob_*`), which fail with
 * KP_ERR_OVERFLOW instead of truncating. */
#include "protocol/kp_base64.h"
#include "protocol/kp_sasl.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

/* ---- small bounded output buffer ---------------------------------------- */
typedef struct ob {
    uint8_t *p;
    size_t cap;
    size_t len;
    int err;
} ob_t;

static void ob_put(ob_t *o, const void *p, size_t n) {
    if (o->err) return;
    if (n > o->cap - o->len) { o->err = KP_ERR_OVERFLOW; return; }
    memcpy(o->p + o->len, p, n);
    o->len += n;
}
static void ob_str(ob_t *o, const char *s) { ob_put(o, s, strlen(s)); }

/* ---- mechanisms ---------------------------------------------------------- */
int kp_sasl_mech_parse(kp_slice_t name, kp_sasl_mech_t *out) {
    if (kp_slice_eq_cstr(name, "PLAIN")) *out = KP_SASL_MECH_PLAIN;
    else if (kp_slice_eq_cstr(name, "SCRAM-SHA-256")) *out = KP_SASL_MECH_SCRAM_SHA_256;
    else if (kp_slice_eq_cstr(name, "SCRAM-SHA-512")) *out = KP_SASL_MECH_SCRAM_SHA_512;
    else return KP_ERR_UNSUPPORTED;
    return KP_OK;
}

const char *kp_sasl_mech_name(kp_sasl_mech_t mech) {
    switch (mech) {
    case KP_SASL_MECH_PLAIN: return "PLAIN";
    case KP_SASL_MECH_SCRAM_SHA_256: return "SCRAM-SHA-256";
    case KP_SASL_MECH_SCRAM_SHA_512: return "SCRAM-SHA-512";
    }
    return "?";
}

bool kp_sasl_mech_is_scram(kp_sasl_mech_t mech) {
    return mech == KP_SASL_MECH_SCRAM_SHA_256 || mech == KP_SASL_MECH_SCRAM_SHA_512;
}

int kp_sasl_mech_from_scram_type(int8_t type, kp_sasl_mech_t *out) {
    if (type == 1) { *out = KP_SASL_MECH_SCRAM_SHA_256; return KP_OK; }
    if (type == 2) { *out = KP_SASL_MECH_SCRAM_SHA_512; return KP_OK; }
    return KP_ERR_UNSUPPORTED;
}

int8_t kp_sasl_mech_scram_type(kp_sasl_mech_t mech) {
    if (mech == KP_SASL_MECH_SCRAM_SHA_256) return 1;
    if (mech == KP_SASL_MECH_SCRAM_SHA_512) return 2;
    return 0;
}

bool kp_sasl_ct_equal(const void *a, size_t a_len, const void *b, size_t b_len) {
    if (a_len != b_len) return false;
    if (a_len == 0) return true;
    return CRYPTO_memcmp(a, b, a_len) == 0;
}

/* ---- PLAIN --------------------------------------------------------------- */
int kp_sasl_plain_parse(const void *tok, size_t len, kp_sasl_plain_t *out) {
    memset(out, 0, sizeof *out);
    if (len > KP_SASL_TOKEN_MAX) return KP_ERR_TOO_LARGE;
    const uint8_t *p = tok;
    kp_slice_t part[3];
    size_t start = 0, n = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || p[i] == 0) {
            if (n == 3) return KP_ERR_BAD_VALUE; /* a third NUL */
            part[n].p = p + start;
            part[n].len = i - start;
            n++;
            start = i + 1;
        }
    }
    if (n != 3) return KP_ERR_BAD_VALUE;
    if (part[1].len == 0 || part[2].len == 0) return KP_ERR_BAD_VALUE;
    if (part[1].len > KP_SASL_NAME_MAX || part[2].len > KP_SASL_PASSWORD_MAX ||
        part[0].len > KP_SASL_NAME_MAX)
        return KP_ERR_TOO_LARGE;
    if (part[0].len > 0 && !kp_slice_eq(part[0], part[1])) return KP_ERR_BAD_VALUE;
    out->authzid = part[0];
    out->user = part[1];
    out->password = part[2];
    return KP_OK;
}

int kp_sasl_plain_build(const char *user, const char *password, uint8_t *buf, size_t cap,
                        size_t *len) {
    size_t ul = strlen(user), pl = strlen(password);
    if (ul == 0 || pl == 0 || ul > KP_SASL_NAME_MAX || pl > KP_SASL_PASSWORD_MAX)
        return KP_ERR_BAD_VALUE;
    ob_t o = { buf, cap, 0, KP_OK };
    ob_put(&o, "", 1);
    ob_put(&o, user, ul);
    ob_put(&o, "", 1);
    ob_put(&o, password, pl);
    if (o.err) return o.err;
    *len = o.len;
    return KP_OK;
}

/* ---- hashes -------------------------------------------------------------- */
size_t kp_scram_hash_len(kp_sasl_mech_t mech) {
    if (mech == KP_SASL_MECH_SCRAM_SHA_256) return 32;
    if (mech == KP_SASL_MECH_SCRAM_SHA_512) return 64;
    return 0;
}

static const EVP_MD *mech_md(kp_sasl_mech_t mech) {
    if (mech == KP_SASL_MECH_SCRAM_SHA_256) return EVP_sha256();
    if (mech == KP_SASL_MECH_SCRAM_SHA_512) return EVP_sha512();
    return NULL;
}

static int hmac(kp_sasl_mech_t mech, const uint8_t *key, size_t key_len, const void *msg,
                size_t msg_len, uint8_t *out) {
    unsigned int n = 0;
    if (!HMAC(mech_md(mech), key, (int)key_len, msg, msg_len, out, &n)) return KP_ERR_NOMEM;
    assert(n == kp_scram_hash_len(mech));
    return KP_OK;
}

static int digest(kp_sasl_mech_t mech, const uint8_t *msg, size_t len, uint8_t *out) {
    unsigned int n = 0;
    if (!EVP_Digest(msg, len, out, &n, mech_md(mech), NULL)) return KP_ERR_NOMEM;
    assert(n == kp_scram_hash_len(mech));
    return KP_OK;
}

int kp_scram_salted_password(kp_sasl_mech_t mech, const void *password, size_t password_len,
                             const uint8_t *salt, size_t salt_len, int32_t iterations,
                             uint8_t *out) {
    if (!kp_sasl_mech_is_scram(mech) || iterations < 1 || password_len > KP_SASL_PASSWORD_MAX ||
        salt_len > KP_SCRAM_SALT_MAX)
        return KP_ERR_BAD_VALUE;
    if (!PKCS5_PBKDF2_HMAC(password, (int)password_len, salt, (int)salt_len, iterations,
                           mech_md(mech), (int)kp_scram_hash_len(mech), out))
        return KP_ERR_NOMEM;
    return KP_OK;
}

int kp_scram_cred_from_salted(kp_sasl_mech_t mech, const uint8_t *salted, size_t salted_len,
                              const uint8_t *salt, size_t salt_len, int32_t iterations,
                              kp_scram_cred_t *out) {
    size_t hl = kp_scram_hash_len(mech);
    if (hl == 0 || salted_len != hl || salt_len == 0 || salt_len > KP_SCRAM_SALT_MAX ||
        iterations < 1)
        return KP_ERR_BAD_VALUE;
    memset(out, 0, sizeof *out);
    out->mech = mech;
    out->iterations = iterations;
    memcpy(out->salt, salt, salt_len);
    out->salt_len = salt_len;
    uint8_t client_key[KP_SCRAM_HASH_MAX];
    int st = hmac(mech, salted, hl, "Client Key", 10, client_key);
    if (st == KP_OK) st = digest(mech, client_key, hl, out->stored_key);
    if (st == KP_OK) st = hmac(mech, salted, hl, "Server Key", 10, out->server_key);
    OPENSSL_cleanse(client_key, sizeof client_key);
    return st;
}

int kp_scram_cred_from_password(kp_sasl_mech_t mech, const char *password, const uint8_t *salt,
                                size_t salt_len, int32_t iterations, kp_scram_cred_t *out) {
    uint8_t salted[KP_SCRAM_HASH_MAX];
    int st = kp_scram_salted_password(mech, password, strlen(password), salt, salt_len,
                                      iterations, salted);
    if (st == KP_OK)
        st = kp_scram_cred_from_salted(mech, salted, kp_scram_hash_len(mech), salt, salt_len,
                                       iterations, out);
    OPENSSL_cleanse(salted, sizeof salted);
    return st;
}

bool kp_scram_cred_check_password(const kp_scram_cred_t *cred, const char *password) {
    kp_scram_cred_t other;
    if (kp_scram_cred_from_password(cred->mech, password, cred->salt, cred->salt_len,
                                    cred->iterations, &other) != KP_OK)
        return false;
    size_t hl = kp_scram_hash_len(cred->mech);
    bool a = kp_sasl_ct_equal(other.stored_key, hl, cred->stored_key, hl);
    bool b = kp_sasl_ct_equal(other.server_key, hl, cred->server_key, hl);
    return a && b;
}

/* ---- SCRAM names and attributes ----------------------------------------- */
int kp_scram_name_escape(const char *name, size_t len, char *out, size_t cap, size_t *out_len) {
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        const char *rep = name[i] == ',' ? "=2C" : name[i] == '=' ? "=3D" : NULL;
        size_t n = rep ? 3 : 1;
        if (cap - o < n + 1) return KP_ERR_OVERFLOW;
        if (rep) memcpy(out + o, rep, 3);
        else out[o] = name[i];
        o += n;
    }
    if (cap - o < 1) return KP_ERR_OVERFLOW;
    out[o] = 0;
    *out_len = o;
    return KP_OK;
}

int kp_scram_name_unescape(const char *in, size_t len, char *out, size_t cap, size_t *out_len) {
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c = in[i];
        if (c == ',' || c == 0) return KP_ERR_BAD_VALUE;
        if (c == '=') {
            if (len - i < 3) return KP_ERR_BAD_VALUE;
            if (in[i + 1] == '2' && in[i + 2] == 'C') c = ',';
            else if (in[i + 1] == '3' && in[i + 2] == 'D') c = '=';
            else return KP_ERR_BAD_VALUE;
            i += 2;
        }
        if (cap - o < 2) return KP_ERR_TOO_LARGE;
        out[o++] = c;
    }
    out[o] = 0;
    *out_len = o;
    return KP_OK;
}

/* One "x=value" attribute of a comma-separated SCRAM message. */
typedef struct attr {
    char key;
    const char *val;
    size_t len;
} attr_t;

/* Reads the next attribute at *pos of msg[0..len); *pos moves past its comma.
 * A single-letter key is required; extensions (longer keys) come back with
 * key '*' and val the whole "name=value". */
static int next_attr(const char *msg, size_t len, size_t *pos, attr_t *a) {
    if (*pos >= len) return KP_ERR_BAD_VALUE;
    size_t s = *pos, e = s;
    while (e < len && msg[e] != ',') e++;
    if (e + 1 == len) return KP_ERR_BAD_VALUE; /* a trailing comma */
    *pos = e < len ? e + 1 : e;
    if (e - s >= 2 && msg[s + 1] == '=') {
        a->key = msg[s];
        a->val = msg + s + 2;
        a->len = e - s - 2;
        if (!((a->key >= 'a' && a->key <= 'z') || (a->key >= 'A' && a->key <= 'Z')))
            return KP_ERR_BAD_VALUE;
        return KP_OK;
    }
    /* extension "name=value" with a longer name (Kafka: tokenauth=true) */
    const char *eq = memchr(msg + s, '=', e - s);
    if (!eq || eq == msg + s) return KP_ERR_BAD_VALUE;
    a->key = '*';
    a->val = msg + s;
    a->len = e - s;
    return KP_OK;
}

static bool nonce_ok(const char *p, size_t n) {
    if (n == 0 || n > KP_SCRAM_NONCE_MAX) return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] < 0x21 || p[i] > 0x7e || p[i] == ',') return false;
    return true;
}

static bool printable(const void *tok, size_t len) {
    const uint8_t *p = tok;
    for (size_t i = 0; i < len; i++)
        if (p[i] == 0) return false;
    return true;
}

/* ---- SCRAM server ---------------------------------------------------------- */
void kp_scram_server_init(kp_scram_server_t *s, kp_sasl_mech_t mech) {
    memset(s, 0, sizeof *s);
    assert(kp_sasl_mech_is_scram(mech));
    s->mech = mech;
}

int kp_scram_server_client_first(kp_scram_server_t *s, const void *tok, size_t len) {
    if (s->step != 0) return KP_ERR_BAD_VALUE;
    if (len > KP_SCRAM_MSG_MAX) return KP_ERR_TOO_LARGE;
    if (!printable(tok, len)) return KP_ERR_BAD_VALUE;
    const char *m = tok;
    size_t pos = 0;
    /* gs2-cbind-flag */
    if (len < 3) return KP_ERR_BAD_VALUE;
    if (m[0] == 'p') return KP_ERR_UNSUPPORTED; /* channel binding asked: not served */
    if ((m[0] != 'n' && m[0] != 'y') || m[1] != ',') return KP_ERR_BAD_VALUE;
    pos = 2;
    /* [a=authzid] */
    char authz[KP_SASL_NAME_MAX + 1];
    size_t authz_len = 0;
    bool has_authz = false;
    if (pos < len && m[pos] != ',') {
        attr_t a;
        int st = next_attr(m, len, &pos, &a);
        if (st != KP_OK) return st;
        if (a.key != 'a') return KP_ERR_BAD_VALUE;
        st = kp_scram_name_unescape(a.val, a.len, authz, sizeof authz, &authz_len);
        if (st != KP_OK) return st;
        has_authz = true;
    } else {
        pos++; /* the empty authzid's comma */
    }
    if (pos > len) return KP_ERR_BAD_VALUE;
    s->gs2_len = pos;
    if (s->gs2_len >= sizeof s->gs2) return KP_ERR_TOO_LARGE;
    memcpy(s->gs2, m, pos);
    /* client-first-bare */
    size_t bare = pos;
    attr_t a;
    int st = next_attr(m, len, &pos, &a);
    if (st != KP_OK) return st;
    if (a.key == 'm') return KP_ERR_UNSUPPORTED; /* mandatory extension */
    if (a.key != 'n') return KP_ERR_BAD_VALUE;
    st = kp_scram_name_unescape(a.val, a.len, s->user, sizeof s->user, &s->user_len);
    if (st != KP_OK) return st;
    if (s->user_len == 0) return KP_ERR_BAD_VALUE;
    st = next_attr(m, len, &pos, &a);
    if (st != KP_OK) return st;
    if (a.key != 'r' || !nonce_ok(a.val, a.len)) return KP_ERR_BAD_VALUE;
    memcpy(s->nonce, a.val, a.len);
    s->client_nonce_len = a.len;
    s->nonce_len = a.len;
    while (pos < len) {
        st = next_attr(m, len, &pos, &a);
        if (st != KP_OK) return st;
        if (a.key != '*') return KP_ERR_BAD_VALUE;
        if (a.len == 14 && memcmp(a.val, "tokenauth=true", 14) == 0) s->token_auth = true;
    }
    if (has_authz && (authz_len != s->user_len || memcmp(authz, s->user, authz_len) != 0))
        return KP_ERR_BAD_VALUE;
    s->cfb_len = len - bare;
    memcpy(s->client_first_bare, m + bare, s->cfb_len);
    s->step = 1;
    return KP_OK;
}

int kp_scram_server_first(kp_scram_server_t *s, const kp_scram_cred_t *cred, const char *nonce,
                          size_t nonce_len, uint8_t *out, size_t cap, size_t *out_len) {
    if (s->step != 1 || cred->mech != s->mech) return KP_ERR_BAD_VALUE;
    if (nonce_len < 8 || nonce_len > 128 || !nonce_ok(nonce, nonce_len)) return KP_ERR_BAD_VALUE;
    if (cred->iterations < KP_SCRAM_ITERATIONS_MIN) return KP_ERR_BAD_VALUE;
    if (s->nonce_len + nonce_len >= sizeof s->nonce) return KP_ERR_TOO_LARGE;
    memcpy(s->nonce + s->nonce_len, nonce, nonce_len);
    s->nonce_len += nonce_len;
    int st;
    char salt[KP_SCRAM_SALT_MAX * 2];
    size_t sl;
    st = kp_b64_encode(cred->salt, cred->salt_len, salt, sizeof salt, &sl);
    if (st != KP_OK) return st;
    char it[16];
    snprintf(it, sizeof it, "%d", (int)cred->iterations);
    ob_t o = { (uint8_t *)s->server_first, sizeof s->server_first, 0, KP_OK };
    ob_str(&o, "r=");
    ob_put(&o, s->nonce, s->nonce_len);
    ob_str(&o, ",s=");
    ob_put(&o, salt, sl);
    ob_str(&o, ",i=");
    ob_str(&o, it);
    if (o.err) return o.err;
    s->sf_len = o.len;
    if (cap < o.len) return KP_ERR_OVERFLOW;
    memcpy(out, s->server_first, o.len);
    *out_len = o.len;
    s->step = 2;
    return KP_OK;
}

/* AuthMessage = client-first-bare "," server-first "," client-final-without-proof */
static int auth_message(const char *cfb, size_t cfb_len, const char *sf, size_t sf_len,
                        const char *cf, size_t cf_len, uint8_t *buf, size_t cap, size_t *len) {
    ob_t o = { buf, cap, 0, KP_OK };
    ob_put(&o, cfb, cfb_len);
    ob_str(&o, ",");
    ob_put(&o, sf, sf_len);
    ob_str(&o, ",");
    ob_put(&o, cf, cf_len);
    *len = o.len;
    return o.err;
}

int kp_scram_server_final(kp_scram_server_t *s, const kp_scram_cred_t *cred, const void *tok,
                          size_t len, uint8_t *out, size_t cap, size_t *out_len) {
    if (s->step != 2 || cred->mech != s->mech) return KP_ERR_BAD_VALUE;
    if (len > KP_SCRAM_MSG_MAX) return KP_ERR_TOO_LARGE;
    if (!printable(tok, len)) return KP_ERR_BAD_VALUE;
    size_t hl = kp_scram_hash_len(s->mech);
    const char *m = tok;
    size_t pos = 0, without_proof = 0;
    attr_t a;
    int st = next_attr(m, len, &pos, &a);
    if (st != KP_OK) return st;
    if (a.key != 'c') return KP_ERR_BAD_VALUE;
    uint8_t cb[sizeof s->gs2];
    size_t cbl;
    if (a.len > (sizeof cb / 3) * 4) return KP_ERR_BAD_VALUE;
    st = kp_b64_decode(a.val, a.len, cb, sizeof cb, &cbl);
    if (st != KP_OK) return KP_ERR_BAD_VALUE;
    /* the channel binding repeats the gs2 header (no binding data: no 'p') */
    if (cbl != s->gs2_len || memcmp(cb, s->gs2, cbl) != 0) return KP_ERR_BAD_VALUE;
    st = next_attr(m, len, &pos, &a);
    if (st != KP_OK) return st;
    /* The nonce must END with ours (client + server part), as Kafka's
     * ScramSaslServer checks, not equal it as RFC 5802 says: librdkafka
     * 2.0.x sends its own nonce again in front of the combined one, and
     * Kafka accepts that. The proof still covers the bytes as sent. */
    if (a.key != 'r' || a.len < s->nonce_len || a.len > KP_SCRAM_NONCE_MAX * 3 ||
        memcmp(a.val + (a.len - s->nonce_len), s->nonce, s->nonce_len) != 0)
        return KP_ERR_BAD_VALUE;
    uint8_t proof[KP_SCRAM_HASH_MAX];
    size_t proof_len = 0;
    bool have_proof = false;
    while (pos < len) {
        size_t here = pos;
        st = next_attr(m, len, &pos, &a);
        if (st != KP_OK) return st;
        if (a.key == 'p') {
            if (pos != len || a.len > 4 * ((KP_SCRAM_HASH_MAX + 2) / 3)) return KP_ERR_BAD_VALUE;
            st = kp_b64_decode(a.val, a.len, proof, sizeof proof, &proof_len);
            if (st != KP_OK || proof_len != hl) return KP_ERR_BAD_VALUE;
            without_proof = here - 1; /* drop the comma before p= */
            have_proof = true;
        } else if (a.key != '*') {
            return KP_ERR_BAD_VALUE;
        }
    }
    if (!have_proof) return KP_ERR_BAD_VALUE;
    uint8_t am[KP_SCRAM_MSG_MAX * 3 + 2];
    size_t aml;
    st = auth_message(s->client_first_bare, s->cfb_len, s->server_first, s->sf_len, m,
                      without_proof, am, sizeof am, &aml);
    if (st != KP_OK) return st;
    uint8_t csig[KP_SCRAM_HASH_MAX], ckey[KP_SCRAM_HASH_MAX], stored[KP_SCRAM_HASH_MAX];
    st = hmac(s->mech, cred->stored_key, hl, am, aml, csig);
    if (st != KP_OK) return st;
    for (size_t i = 0; i < hl; i++) ckey[i] = proof[i] ^ csig[i];
    st = digest(s->mech, ckey, hl, stored);
    OPENSSL_cleanse(ckey, sizeof ckey);
    if (st != KP_OK) return st;
    s->step = 3;
    if (!kp_sasl_ct_equal(stored, hl, cred->stored_key, hl)) return KP_ERR_CORRUPT;
    uint8_t ssig[KP_SCRAM_HASH_MAX];
    st = hmac(s->mech, cred->server_key, hl, am, aml, ssig);
    if (st != KP_OK) return st;
    char sb[KP_SCRAM_HASH_MAX * 2];
    size_t sbl;
    st = kp_b64_encode(ssig, hl, sb, sizeof sb, &sbl);
    if (st != KP_OK) return st;
    ob_t o = { out, cap, 0, KP_OK };
    ob_str(&o, "v=");
    ob_put(&o, sb, sbl);
    if (o.err) return o.err;
    *out_len = o.len;
    return KP_OK;
}

/* ---- SCRAM client ---------------------------------------------------------- */
int kp_scram_nonce_make(const uint8_t *rand, size_t rand_len, char *out, size_t cap,
                        size_t *out_len) {
    if (rand_len < 6 || rand_len > 64) return KP_ERR_BAD_VALUE;
    return kp_b64_encode(rand, rand_len, out, cap, out_len);
}

int kp_scram_client_first(kp_scram_client_t *c, kp_sasl_mech_t mech, const char *user,
                          const char *nonce, size_t nonce_len, uint8_t *out, size_t cap,
                          size_t *out_len) {
    memset(c, 0, sizeof *c);
    if (!kp_sasl_mech_is_scram(mech)) return KP_ERR_BAD_VALUE;
    size_t ul = strlen(user);
    if (ul == 0 || ul > KP_SASL_NAME_MAX || nonce_len < 8 || nonce_len > 128 ||
        !nonce_ok(nonce, nonce_len))
        return KP_ERR_BAD_VALUE;
    c->mech = mech;
    memcpy(c->nonce, nonce, nonce_len);
    c->nonce_len = nonce_len;
    int st;
    char esc[KP_SASL_NAME_MAX * 3 + 1];
    size_t el;
    st = kp_scram_name_escape(user, ul, esc, sizeof esc, &el);
    if (st != KP_OK) return st;
    ob_t o = { (uint8_t *)c->client_first_bare, sizeof c->client_first_bare, 0, KP_OK };
    ob_str(&o, "n=");
    ob_put(&o, esc, el);
    ob_str(&o, ",r=");
    ob_put(&o, c->nonce, c->nonce_len);
    if (o.err) return o.err;
    c->cfb_len = o.len;
    ob_t w = { out, cap, 0, KP_OK };
    ob_str(&w, "n,,");
    ob_put(&w, c->client_first_bare, c->cfb_len);
    if (w.err) return w.err;
    *out_len = w.len;
    c->step = 1;
    return KP_OK;
}

int kp_scram_client_final(kp_scram_client_t *c, const char *password, const void *server_first,
                          size_t len, uint8_t *out, size_t cap, size_t *out_len) {
    if (c->step != 1) return KP_ERR_BAD_VALUE;
    if (len > KP_SCRAM_MSG_MAX) return KP_ERR_TOO_LARGE;
    if (!printable(server_first, len)) return KP_ERR_BAD_VALUE;
    const char *m = server_first;
    size_t pos = 0, hl = kp_scram_hash_len(c->mech);
    attr_t r, s, i;
    if (next_attr(m, len, &pos, &r) != KP_OK || r.key != 'r' ||
        next_attr(m, len, &pos, &s) != KP_OK || s.key != 's' ||
        next_attr(m, len, &pos, &i) != KP_OK || i.key != 'i')
        return KP_ERR_BAD_VALUE;
    /* the combined nonce starts with ours and adds something */
    if (!nonce_ok(r.val, r.len) || r.len <= c->nonce_len ||
        memcmp(r.val, c->nonce, c->nonce_len) != 0)
        return KP_ERR_BAD_VALUE;
    uint8_t salt[KP_SCRAM_SALT_MAX];
    size_t salt_len;
    if (s.len == 0 || s.len > 4 * (KP_SCRAM_SALT_MAX / 3) ||
        kp_b64_decode(s.val, s.len, salt, sizeof salt, &salt_len) != KP_OK)
        return KP_ERR_BAD_VALUE;
    int64_t iters = 0;
    if (i.len == 0 || i.len > 9) return KP_ERR_BAD_VALUE;
    for (size_t k = 0; k < i.len; k++) {
        if (i.val[k] < '0' || i.val[k] > '9') return KP_ERR_BAD_VALUE;
        iters = iters * 10 + (i.val[k] - '0');
    }
    if (iters < KP_SCRAM_ITERATIONS_MIN || iters > 10 * KP_SCRAM_ITERATIONS_MAX)
        return KP_ERR_BAD_VALUE;
    uint8_t salted[KP_SCRAM_HASH_MAX];
    int st = kp_scram_salted_password(c->mech, password, strlen(password), salt, salt_len,
                                      (int32_t)iters, salted);
    if (st != KP_OK) return st;
    char without[KP_SCRAM_MSG_MAX];
    ob_t wp = { (uint8_t *)without, sizeof without, 0, KP_OK };
    ob_str(&wp, "c=biws,r="); /* base64("n,,") */
    ob_put(&wp, r.val, r.len);
    if (wp.err) return wp.err;
    uint8_t am[KP_SCRAM_MSG_MAX * 3 + 2];
    size_t aml;
    st = auth_message(c->client_first_bare, c->cfb_len, m, len, without, wp.len, am, sizeof am,
                      &aml);
    uint8_t ckey[KP_SCRAM_HASH_MAX], stored[KP_SCRAM_HASH_MAX], csig[KP_SCRAM_HASH_MAX],
        skey[KP_SCRAM_HASH_MAX];
    if (st == KP_OK) st = hmac(c->mech, salted, hl, "Client Key", 10, ckey);
    if (st == KP_OK) st = digest(c->mech, ckey, hl, stored);
    if (st == KP_OK) st = hmac(c->mech, stored, hl, am, aml, csig);
    if (st == KP_OK) st = hmac(c->mech, salted, hl, "Server Key", 10, skey);
    if (st == KP_OK) st = hmac(c->mech, skey, hl, am, aml, c->server_signature);
    OPENSSL_cleanse(salted, sizeof salted);
    if (st != KP_OK) return st;
    uint8_t proof[KP_SCRAM_HASH_MAX];
    for (size_t k = 0; k < hl; k++) proof[k] = ckey[k] ^ csig[k];
    OPENSSL_cleanse(ckey, sizeof ckey);
    char pb[KP_SCRAM_HASH_MAX * 2];
    size_t pbl;
    st = kp_b64_encode(proof, hl, pb, sizeof pb, &pbl);
    if (st != KP_OK) return st;
    ob_t o = { out, cap, 0, KP_OK };
    ob_put(&o, without, wp.len);
    ob_str(&o, ",p=");
    ob_put(&o, pb, pbl);
    if (o.err) return o.err;
    *out_len = o.len;
    c->step = 2;
    return KP_OK;
}

int kp_scram_client_verify(kp_scram_client_t *c, const void *server_final, size_t len) {
    if (c->step != 2) return KP_ERR_BAD_VALUE;
    if (len > KP_SCRAM_MSG_MAX) return KP_ERR_TOO_LARGE;
    const char *m = server_final;
    size_t pos = 0, hl = kp_scram_hash_len(c->mech);
    attr_t v;
    if (next_attr(m, len, &pos, &v) != KP_OK) return KP_ERR_BAD_VALUE;
    if (v.key == 'e') return KP_ERR_CORRUPT;
    if (v.key != 'v' || v.len > 4 * ((KP_SCRAM_HASH_MAX + 2) / 3)) return KP_ERR_BAD_VALUE;
    uint8_t sig[KP_SCRAM_HASH_MAX];
    size_t sl;
    if (kp_b64_decode(v.val, v.len, sig, sizeof sig, &sl) != KP_OK) return KP_ERR_BAD_VALUE;
    c->step = 3;
    return kp_sasl_ct_equal(sig, sl, c->server_signature, hl) ? KP_OK : KP_ERR_CORRUPT;
}
