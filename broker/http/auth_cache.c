/* The admin port's cache of checked Basic credentials; see auth_cache_int.h. */
#include "broker/http/auth_cache_int.h"

#include <assert.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

int auth_cache_init(auth_cache_t *c, int64_t ttl_ms) {
    assert(ttl_ms >= 0);
    memset(c, 0, sizeof *c);
    c->ttl_ms = ttl_ms;
    if (RAND_bytes(c->salt, (int)sizeof c->salt) != 1)
        return KP_ERR_NOMEM;
    return KP_OK;
}

bool auth_cache_digest(const auth_cache_t *c, const char *user, const char *password,
                       uint8_t out[AUTH_CACHE_DIGEST]) {
    static const uint8_t zero = 0;
    unsigned int n = 0;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    bool ok = md != NULL && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
              EVP_DigestUpdate(md, c->salt, sizeof c->salt) == 1 &&
              EVP_DigestUpdate(md, user, strlen(user)) == 1 && EVP_DigestUpdate(md, &zero, 1) == 1 &&
              EVP_DigestUpdate(md, password, strlen(password)) == 1 &&
              EVP_DigestFinal_ex(md, out, &n) == 1 && n == AUTH_CACHE_DIGEST;
    EVP_MD_CTX_free(md);
    return ok;
}

bool auth_cache_hit(const auth_cache_t *c, const uint8_t d[AUTH_CACHE_DIGEST], int64_t now_ms) {
    bool hit = false;
    for (size_t i = 0; i < AUTH_CACHE_ENTRIES; i++) {
        bool live = c->e[i].expires_ms != 0 && c->e[i].expires_ms > now_ms;
        bool same = CRYPTO_memcmp(c->e[i].digest, d, AUTH_CACHE_DIGEST) == 0;
        hit |= live & same;
    }
    return hit;
}

void auth_cache_add(auth_cache_t *c, const uint8_t d[AUTH_CACHE_DIGEST], int64_t now_ms) {
    if (c->ttl_ms == 0)
        return;
    size_t victim = 0;
    for (size_t i = 0; i < AUTH_CACHE_ENTRIES; i++) {
        if (c->e[i].expires_ms != 0 && memcmp(c->e[i].digest, d, AUTH_CACHE_DIGEST) == 0) {
            victim = i; /* refresh the same credential rather than hold it twice */
            break;
        }
        if (c->e[i].expires_ms < c->e[victim].expires_ms)
            victim = i; /* free slots (0) and expired ones sort first */
    }
    memcpy(c->e[victim].digest, d, AUTH_CACHE_DIGEST);
    c->e[victim].expires_ms = now_ms + c->ttl_ms;
    assert(c->e[victim].expires_ms > 0);
}

void auth_cache_clear(auth_cache_t *c) {
    for (size_t i = 0; i < AUTH_CACHE_ENTRIES; i++)
        c->e[i].expires_ms = 0;
}
