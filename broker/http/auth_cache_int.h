/* broker/http/auth_cache_int.h — private to broker/http/: the admin port's
 * cache of HTTP Basic credentials already checked, so the credential check
 * (PBKDF2 for a SCRAM credential: thousands of HMACs) runs once per user and
 * password per `ttl_ms`, not on every request.
 *
 * Entries are keyed by SHA-256(process-random salt || user || 0 || password):
 * the password is never kept, and the salt makes the digests useless outside
 * this process. A fixed table of AUTH_CACHE_ENTRIES; a full table replaces
 * the entry that expires first. Only successful checks are cached: a
 * corrected password works at once, and a credential that was removed or
 * changed stays usable here for at most ttl_ms (documented in the README).
 * Loop thread only. */
#ifndef SKIFF_BK_HTTP_AUTH_CACHE_INT_H
#define SKIFF_BK_HTTP_AUTH_CACHE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"

#define AUTH_CACHE_ENTRIES 128
#define AUTH_CACHE_DIGEST 32

typedef struct auth_cache_entry {
    uint8_t digest[AUTH_CACHE_DIGEST];
    int64_t expires_ms; /* 0 = free slot */
} auth_cache_entry_t;

typedef struct auth_cache {
    uint8_t salt[16];
    int64_t ttl_ms;     /* 0 disables the cache */
    auth_cache_entry_t e[AUTH_CACHE_ENTRIES];
} auth_cache_t;

/* Random salt, empty table. KP_OK or KP_ERR_NOMEM when no random bytes. */
KP_MUST_CHECK int auth_cache_init(auth_cache_t *c, int64_t ttl_ms);

/* The digest of (user, password) under c's salt. false when hashing failed. */
KP_MUST_CHECK bool auth_cache_digest(const auth_cache_t *c, const char *user, const char *password,
                                     uint8_t out[AUTH_CACHE_DIGEST]);

/* true when `d` was added less than ttl_ms before now_ms. Compares every
 * live entry in constant time (no early exit on a matching prefix). */
bool auth_cache_hit(const auth_cache_t *c, const uint8_t d[AUTH_CACHE_DIGEST], int64_t now_ms);

/* Remembers `d` until now_ms + ttl_ms (no-op with ttl 0). */
void auth_cache_add(auth_cache_t *c, const uint8_t d[AUTH_CACHE_DIGEST], int64_t now_ms);

/* Forgets every entry (e.g. credentials changed). */
void auth_cache_clear(auth_cache_t *c);

#endif
