/* broker/core/quota.c — see quota.h.
 *
 * Entries live in a chained hash table keyed by (key, user part, client
 * part): a record is one hash and a short chain walk, plus the image's
 * precedence lookups (at most 8 binary searches), so O(log quotas) per
 * request. */
#include "broker/core/quota.h"

#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#define NBUCKETS 4096

typedef struct use {
    struct use *next;
    bk_node_quota_use_t u;
    bool digest;                /* client: a long / NUL-holding id's digest form (client_key) */
    double credit;              /* may go negative: the debt */
    int64_t at_ms;              /* when credit was last brought up to date */
    char names[];               /* user '\0' client '\0' */
} use_t;

struct bk_node_quotas {
    use_t *b[NBUCKETS];
    size_t n;
    uint64_t untracked;
    int64_t burst_ms, throttle_max_ms;
    bool swept;                 /* a sweep of the full table has run ... */
    int64_t swept_ms;           /* ... at this time */
};

bk_node_quotas_t *bk_node_quotas_new(int64_t burst_ms, int64_t throttle_max_ms) {
    assert(burst_ms >= 1 && throttle_max_ms >= 1);
    bk_node_quotas_t *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    q->burst_ms = burst_ms;
    q->throttle_max_ms = throttle_max_ms;
    return q;
}

void bk_node_quotas_free(bk_node_quotas_t *q) {
    if (!q) return;
    for (size_t i = 0; i < NBUCKETS; i++)
        for (use_t *e = q->b[i], *nx; e; e = nx) {
            nx = e->next;
            free(e);
        }
    free(q);
}

/* A client id as the table keys it (see bk_node_quota_record_id). */
typedef struct {
    bool digest;                               /* not a possible entity name */
    char name[BK_META_QUOTA_NAME_MAX + 1];     /* the id, or its digest form */
} client_key_t;

#define DIGEST_SHOWN 64         /* bytes of a long id shown before its digest */

/* false: the digest could not be computed (out of memory in OpenSSL). */
static bool client_key(kp_str_t id, client_key_t *out) {
    if (id.len <= BK_META_QUOTA_NAME_MAX && !kp_slice_has_nul(id)) {
        out->digest = false;
        if (id.len) memcpy(out->name, id.p, id.len);
        out->name[id.len] = '\0';
        return true;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdl = 0;
    if (EVP_Digest(id.p, id.len, md, &mdl, EVP_sha256(), NULL) != 1 || mdl != 32) return false;
    size_t shown = id.len < DIGEST_SHOWN ? id.len : DIGEST_SHOWN, k = 0;
    for (size_t i = 0; i < shown; i++) out->name[k++] = id.p[i] ? (char)id.p[i] : '?';
    k += (size_t)snprintf(out->name + k, sizeof out->name - k, "...sha256:");
    for (unsigned i = 0; i < mdl; i++) k += (size_t)snprintf(out->name + k, sizeof out->name - k, "%02x", md[i]);
    assert(k < sizeof out->name);
    out->digest = true;
    return true;
}

static uint32_t hash(int k, const char *u, const char *c) {
    uint32_t h = 2166136261u ^ (uint32_t)k;
    for (const char *p = u; *p; p++) h = (h ^ (uint8_t)*p) * 16777619u;
    h = (h ^ 0xffu) * 16777619u;
    for (const char *p = c; *p; p++) h = (h ^ (uint8_t)*p) * 16777619u;
    return h % NBUCKETS;
}

static void refill(use_t *e, int64_t now_ms, int64_t burst_ms) {
    double cap = e->u.limit * (double)burst_ms / 1000.0;
    if (now_ms > e->at_ms) e->credit += e->u.limit * (double)(now_ms - e->at_ms) / 1000.0;
    if (e->credit > cap) e->credit = cap;
    if (now_ms > e->at_ms) e->at_ms = now_ms;
}

/* Drops every entry whose credit is full again (a fresh one is the same). */
static void sweep(bk_node_quotas_t *q, int64_t now_ms) {
    for (size_t i = 0; i < NBUCKETS; i++)
        for (use_t **pp = &q->b[i]; *pp;) {
            use_t *e = *pp;
            refill(e, now_ms, q->burst_ms);
            if (e->credit >= e->u.limit * (double)q->burst_ms / 1000.0) {
                *pp = e->next;
                free(e);
                q->n--;
            } else {
                pp = &e->next;
            }
        }
}

static use_t *find(bk_node_quotas_t *q, int k, const char *u, const char *c, bool digest, double limit,
                   int64_t now_ms) {
    uint32_t h = hash(k, u, c);
    for (use_t *e = q->b[h]; e; e = e->next)
        if (e->u.key == k && e->digest == digest && strcmp(e->u.user, u) == 0 && strcmp(e->u.client, c) == 0)
            return e;
    /* Full: one sweep (65536 entries) per BK_NODE_QUOTA_FULL_SWEEP_MS at
     * most. Sweeping for every new key cost a walk of the whole table per
     * request while it stayed full (a client rotating its id can keep it
     * so); between sweeps a new key is untracked (counted). */
    if (q->n >= BK_NODE_QUOTA_USES_MAX &&
        (!q->swept || now_ms - q->swept_ms >= BK_NODE_QUOTA_FULL_SWEEP_MS || now_ms < q->swept_ms)) {
        sweep(q, now_ms);
        q->swept = true;
        q->swept_ms = now_ms;
    }
    if (q->n >= BK_NODE_QUOTA_USES_MAX) return NULL;
    size_t ul = strlen(u), cl = strlen(c);
    use_t *e = calloc(1, sizeof *e + ul + cl + 2);
    if (!e) return NULL;
    memcpy(e->names, u, ul + 1);
    memcpy(e->names + ul + 1, c, cl + 1);
    e->u.key = k;
    e->digest = digest;
    e->u.user = e->names;
    e->u.client = e->names + ul + 1;
    e->u.limit = limit;
    e->credit = limit * (double)q->burst_ms / 1000.0;   /* a new client starts with a full allowance */
    e->at_ms = now_ms;
    e->next = q->b[h];
    q->b[h] = e;
    q->n++;
    return e;
}

int64_t bk_node_quota_record(bk_node_quotas_t *q, const bk_meta_image_t *img, const char *principal,
                             const char *client_id, int k, double amount, int64_t now_ms) {
    return bk_node_quota_record_id(q, img, principal, kp_slice_cstr(client_id ? client_id : ""), k, amount, now_ms);
}

int64_t bk_node_quota_record_id(bk_node_quotas_t *q, const bk_meta_image_t *img, const char *principal,
                                kp_str_t client_id, int k, double amount, int64_t now_ms) {
    assert(k >= 0 && k < BK_META_QUOTA_KEYS);
    if (!q || img->nquotas == 0) return 0;
    const char *user = principal && strncmp(principal, "User:", 5) == 0 ? principal + 5 : "";
    client_key_t ck;
    if (!client_key(client_id, &ck)) {
        q->untracked++;
        return 0;
    }
    const char *client = ck.name;
    const bk_meta_quota_t *m = bk_meta_image_quota_for(img, user, ck.digest ? NULL : client, k);
    if (!m) return 0;
    /* request_percentage is a share of one thread: n % = n * 10 ms of
     * loop time per second (the amount is in ms) */
    double limit = k == BK_META_QUOTA_REQUEST_PERCENTAGE ? m->value[k] * 10.0 : m->value[k];
    assert(limit > 0);
    /* the entry is per entity as it applies to this client: the matched
     * entity's parts, with the client's own names (Kafka's metric tags) */
    const char *eu = m->user_kind != BK_META_QE_NONE ? user : "";
    const char *ec = m->client_kind != BK_META_QE_NONE ? client : "";
    use_t *e = find(q, k, eu, ec, m->client_kind != BK_META_QE_NONE && ck.digest, limit, now_ms);
    if (!e) {
        q->untracked++;
        return 0;
    }
    if (e->u.limit != limit) {          /* the quota changed: keep the debt, new rate */
        refill(e, now_ms, q->burst_ms);
        e->u.limit = limit;
    }
    refill(e, now_ms, q->burst_ms);
    e->credit -= amount;
    e->u.used_total += amount;
    if (e->credit >= 0) return 0;
    double ms = ceil(-e->credit / limit * 1000.0);
    int64_t t = ms > (double)q->throttle_max_ms ? q->throttle_max_ms : (int64_t)ms;
    e->u.throttled++;
    e->u.throttle_ms_total += (uint64_t)t;
    return t;
}

void bk_node_quotas_each(const bk_node_quotas_t *q, void (*fn)(void *arg, const bk_node_quota_use_t *u),
                         void *arg) {
    if (!q) return;
    for (size_t i = 0; i < NBUCKETS; i++)
        for (const use_t *e = q->b[i]; e; e = e->next) fn(arg, &e->u);
}

uint64_t bk_node_quotas_untracked(const bk_node_quotas_t *q) { return q ? q->untracked : 0; }
