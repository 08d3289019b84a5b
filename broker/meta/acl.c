/* acl.c — the ACL bindings of the image and the authorization decision
 * (acl.h). One hash table of resource patterns (type, pattern type, name)
 * with open addressing; each pattern holds its entries. Patterns emptied by
 * removals stay in the table (cheap, and no tombstones to handle). */
#include "broker/meta/acl.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_wire.h"

typedef struct {
    char *principal;
    char *host;
    int8_t op;
    int8_t perm;
} ent_t;

typedef struct {
    int8_t rtype, ptype;
    char *name;
    size_t name_len;
    uint64_t h;
    ent_t *e;
    size_t n, cap;
} pat_t;

struct bk_meta_acls {
    pat_t **slot;
    size_t cap;             /* power of two */
    size_t used;            /* patterns in the table */
    size_t count;           /* bindings */
    size_t nprefixed[8];    /* PREFIXED bindings per resource type */
    uint64_t gen;
};

#define FNV_OFF 1469598103934665603ULL
#define FNV_PRIME 1099511628211ULL

static uint64_t h_seed(int8_t rtype, int8_t ptype) {
    uint64_t h = FNV_OFF;
    h = (h ^ (uint8_t)rtype) * FNV_PRIME;
    h = (h ^ (uint8_t)ptype) * FNV_PRIME;
    return h;
}

static uint64_t h_step(uint64_t h, uint8_t c) { return (h ^ c) * FNV_PRIME; }

static uint64_t h_full(int8_t rtype, int8_t ptype, const char *name, size_t len) {
    uint64_t h = h_seed(rtype, ptype);
    for (size_t i = 0; i < len; i++) h = h_step(h, (uint8_t)name[i]);
    return h;
}

bk_meta_acls_t *bk_meta_acls_new(void) {
    bk_meta_acls_t *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->cap = 64;
    s->slot = calloc(s->cap, sizeof *s->slot);
    if (!s->slot) { free(s); return NULL; }
    return s;
}

static void pat_free(pat_t *p) {
    for (size_t i = 0; i < p->n; i++) {
        free(p->e[i].principal);
        free(p->e[i].host);
    }
    free(p->e);
    free(p->name);
    free(p);
}

void bk_meta_acls_free(bk_meta_acls_t *s) {
    if (!s) return;
    for (size_t i = 0; i < s->cap; i++)
        if (s->slot[i]) pat_free(s->slot[i]);
    free(s->slot);
    free(s);
}

static pat_t *find(const bk_meta_acls_t *s, int8_t rtype, int8_t ptype, const char *name, size_t len, uint64_t h) {
    size_t mask = s->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        pat_t *p = s->slot[i];
        if (!p) return NULL;
        if (p->h == h && p->rtype == rtype && p->ptype == ptype && p->name_len == len &&
            memcmp(p->name, name, len) == 0)
            return p;
    }
}

static void place(pat_t **slot, size_t cap, pat_t *p) {
    size_t mask = cap - 1;
    size_t i = (size_t)p->h & mask;
    while (slot[i]) i = (i + 1) & mask;
    slot[i] = p;
}

static int grow(bk_meta_acls_t *s) {
    size_t ncap = s->cap * 2;
    pat_t **ns = calloc(ncap, sizeof *ns);
    if (!ns) return KP_ERR_NOMEM;
    for (size_t i = 0; i < s->cap; i++)
        if (s->slot[i]) place(ns, ncap, s->slot[i]);
    free(s->slot);
    s->slot = ns;
    s->cap = ncap;
    return KP_OK;
}

static bool text_ok(const char *t, bool may_be_empty) {
    if (!t) return false;
    size_t n = strnlen(t, BK_META_ACL_TEXT_MAX + 1);
    return n <= BK_META_ACL_TEXT_MAX && (may_be_empty || n > 0);
}

const char *bk_meta_acl_valid(const bk_meta_acl_t *a) {
    if (a->resource_type < BK_META_RES_TOPIC || a->resource_type > BK_META_RES_USER)
        return "Invalid resource type";
    if (a->pattern_type != BK_META_PAT_LITERAL && a->pattern_type != BK_META_PAT_PREFIXED)
        return "Invalid pattern type: must be LITERAL or PREFIXED";
    if (!text_ok(a->resource_name, false)) return "Resource name must be 1 to 1024 bytes";
    if (a->resource_type == BK_META_RES_CLUSTER &&
        (a->pattern_type != BK_META_PAT_LITERAL || strcmp(a->resource_name, BK_META_ACL_CLUSTER_NAME) != 0))
        return "The only valid name for the CLUSTER resource is kafka-cluster";
    if (!text_ok(a->principal, false)) return "Principal must be 1 to 1024 bytes";
    const char *colon = strchr(a->principal, ':');
    if (!colon || colon == a->principal || colon[1] == '\0') return "Principal must be of the form Type:name";
    if (!text_ok(a->host, false)) return "Host must be 1 to 1024 bytes";
    if (a->operation < BK_META_OP_ALL || a->operation > BK_META_OP_DESCRIBE_TOKENS)
        return "Invalid operation";
    if (a->permission != BK_META_PERM_ALLOW && a->permission != BK_META_PERM_DENY)
        return "Invalid permission type";
    return NULL;
}

const char *bk_meta_acl_filter_valid(const bk_meta_acl_filter_t *f) {
    if (f->resource_type <= BK_META_RES_UNKNOWN || f->resource_type > BK_META_RES_USER) return "Invalid resource type";
    if (f->pattern_type <= BK_META_PAT_UNKNOWN || f->pattern_type > BK_META_PAT_PREFIXED) return "Invalid pattern type";
    if (f->operation <= BK_META_OP_UNKNOWN || f->operation > BK_META_OP_DESCRIBE_TOKENS) return "Invalid operation";
    if (f->permission <= BK_META_PERM_UNKNOWN || f->permission > BK_META_PERM_ALLOW) return "Invalid permission type";
    return NULL;
}

static int ent_find(const pat_t *p, const bk_meta_acl_t *a) {
    for (size_t i = 0; i < p->n; i++)
        if (p->e[i].op == a->operation && p->e[i].perm == a->permission && strcmp(p->e[i].principal, a->principal) == 0 &&
            strcmp(p->e[i].host, a->host) == 0)
            return (int)i;
    return -1;
}

int bk_meta_acls_add(bk_meta_acls_t *s, const bk_meta_acl_t *a) {
    if (bk_meta_acl_valid(a)) return KP_ERR_BAD_VALUE;
    size_t len = strlen(a->resource_name);
    uint64_t h = h_full(a->resource_type, a->pattern_type, a->resource_name, len);
    pat_t *p = find(s, a->resource_type, a->pattern_type, a->resource_name, len, h);
    if (p && ent_find(p, a) >= 0) return KP_OK;
    if (s->count >= BK_META_ACL_MAX) return KP_ERR_BAD_VALUE;
    if (!p) {
        if ((s->used + 1) * 2 > s->cap && grow(s) != KP_OK) return KP_ERR_NOMEM;
        p = calloc(1, sizeof *p);
        if (!p) return KP_ERR_NOMEM;
        p->name = strdup(a->resource_name);
        if (!p->name) { free(p); return KP_ERR_NOMEM; }
        p->rtype = a->resource_type;
        p->ptype = a->pattern_type;
        p->name_len = len;
        p->h = h;
        place(s->slot, s->cap, p);
        s->used++;
    }
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 4;
        ent_t *ne = realloc(p->e, nc * sizeof *ne);
        if (!ne) return KP_ERR_NOMEM;
        p->e = ne;
        p->cap = nc;
    }
    ent_t e = { strdup(a->principal), strdup(a->host), a->operation, a->permission };
    if (!e.principal || !e.host) { free(e.principal); free(e.host); return KP_ERR_NOMEM; }
    p->e[p->n++] = e;
    s->count++;
    if (a->pattern_type == BK_META_PAT_PREFIXED) s->nprefixed[a->resource_type]++;
    s->gen++;
    return KP_OK;
}

int bk_meta_acls_remove(bk_meta_acls_t *s, const bk_meta_acl_t *a) {
    if (bk_meta_acl_valid(a)) return KP_ERR_BAD_VALUE;
    size_t len = strlen(a->resource_name);
    uint64_t h = h_full(a->resource_type, a->pattern_type, a->resource_name, len);
    pat_t *p = find(s, a->resource_type, a->pattern_type, a->resource_name, len, h);
    int i = p ? ent_find(p, a) : -1;
    if (i < 0) return KP_OK;
    free(p->e[i].principal);
    free(p->e[i].host);
    p->e[i] = p->e[p->n - 1];
    p->n--;
    assert(s->count > 0);
    s->count--;
    if (a->pattern_type == BK_META_PAT_PREFIXED) s->nprefixed[a->resource_type]--;
    s->gen++;
    return KP_OK;
}

size_t bk_meta_acls_count(const bk_meta_acls_t *s) { return s ? s->count : 0; }
uint64_t bk_meta_acls_gen(const bk_meta_acls_t *s) { return s ? s->gen : 0; }

void bk_meta_acls_each(const bk_meta_acls_t *s, bk_meta_acl_visit_fn fn, void *ctx) {
    if (!s) return;
    for (size_t i = 0; i < s->cap; i++) {
        const pat_t *p = s->slot[i];
        if (!p) continue;
        for (size_t k = 0; k < p->n; k++) {
            bk_meta_acl_t a = { p->rtype, p->ptype, p->name, p->e[k].principal, p->e[k].host, p->e[k].op, p->e[k].perm };
            if (!fn(ctx, &a)) return;
        }
    }
}

bool bk_meta_acl_filter_match(const bk_meta_acl_filter_t *f, const bk_meta_acl_t *a) {
    if (f->resource_type != BK_META_RES_ANY && f->resource_type != a->resource_type) return false;
    if (f->pattern_type == BK_META_PAT_MATCH) {
        if (f->resource_name) {
            bool lit = a->pattern_type == BK_META_PAT_LITERAL &&
                       (strcmp(a->resource_name, f->resource_name) == 0 ||
                        strcmp(a->resource_name, BK_META_ACL_WILDCARD) == 0);
            bool pre = a->pattern_type == BK_META_PAT_PREFIXED &&
                       strncmp(f->resource_name, a->resource_name, strlen(a->resource_name)) == 0;
            if (!lit && !pre) return false;
        }
    } else {
        if (f->pattern_type != BK_META_PAT_ANY && f->pattern_type != a->pattern_type) return false;
        if (f->resource_name && strcmp(f->resource_name, a->resource_name) != 0) return false;
    }
    if (f->principal && strcmp(f->principal, a->principal) != 0) return false;
    if (f->host && strcmp(f->host, a->host) != 0) return false;
    if (f->operation != BK_META_OP_ANY && f->operation != a->operation) return false;
    if (f->permission != BK_META_PERM_ANY && f->permission != a->permission) return false;
    return true;
}

/* Does an ALLOW for `have` grant `want`? */
static bool implies(int8_t have, int8_t want) {
    if (have == want || have == BK_META_OP_ALL) return true;
    if (want == BK_META_OP_DESCRIBE)
        return have == BK_META_OP_READ || have == BK_META_OP_WRITE || have == BK_META_OP_DELETE ||
               have == BK_META_OP_ALTER;
    if (want == BK_META_OP_DESCRIBE_CONFIGS) return have == BK_META_OP_ALTER_CONFIGS;
    return false;
}

typedef struct {
    const char *principal, *host;
    int8_t op;
    bool any, allow, deny;
} decide_t;

static void visit(decide_t *d, const pat_t *p) {
    if (!p || p->n == 0) return;
    d->any = true;
    for (size_t i = 0; i < p->n; i++) {
        const ent_t *e = &p->e[i];
        if (strcmp(e->principal, d->principal) != 0 && strcmp(e->principal, "User:*") != 0) continue;
        if (strcmp(e->host, BK_META_ACL_WILDCARD) != 0 && strcmp(e->host, d->host) != 0) continue;
        if (e->perm == BK_META_PERM_DENY) {
            if (e->op == d->op || e->op == BK_META_OP_ALL) d->deny = true;
        } else if (implies(e->op, d->op)) {
            d->allow = true;
        }
    }
}

bk_meta_authz_t bk_meta_acls_decide(const bk_meta_acls_t *s, const char *principal, const char *host, int8_t op,
                                    int8_t rtype, const char *name) {
    if (!s || s->count == 0) return BK_META_AUTHZ_NO_ACL;
    decide_t d = { principal ? principal : "", host ? host : "", op, false, false, false };
    size_t len = strlen(name);
    visit(&d, find(s, rtype, BK_META_PAT_LITERAL, name, len, h_full(rtype, BK_META_PAT_LITERAL, name, len)));
    visit(&d, find(s, rtype, BK_META_PAT_LITERAL, BK_META_ACL_WILDCARD, 1,
                   h_full(rtype, BK_META_PAT_LITERAL, BK_META_ACL_WILDCARD, 1)));
    if (rtype >= 0 && rtype < 8 && s->nprefixed[rtype] > 0) {
        uint64_t h = h_seed(rtype, BK_META_PAT_PREFIXED);
        for (size_t k = 0; k < len && !d.deny; k++) {
            h = h_step(h, (uint8_t)name[k]);
            visit(&d, find(s, rtype, BK_META_PAT_PREFIXED, name, k + 1, h));
        }
    }
    if (d.deny) return BK_META_AUTHZ_DENY;
    if (d.allow) return BK_META_AUTHZ_ALLOW;
    return d.any ? BK_META_AUTHZ_DENY : BK_META_AUTHZ_NO_ACL;
}

static const char *const RES[] = { "UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID",
                                   "DELEGATION_TOKEN", "USER" };
static const char *const PAT[] = { "UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED" };
static const char *const OPS[] = { "UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
                                   "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE",
                                   "CREATE_TOKENS", "DESCRIBE_TOKENS" };
static const char *const PERM[] = { "UNKNOWN", "ANY", "DENY", "ALLOW" };

#define NAME_OF(tab, t) ((t) >= 0 && (size_t)(t) < sizeof tab / sizeof tab[0] ? tab[t] : "UNKNOWN")
const char *bk_meta_res_name(int8_t t) { return NAME_OF(RES, t); }
const char *bk_meta_pat_name(int8_t t) { return NAME_OF(PAT, t); }
const char *bk_meta_op_name(int8_t t) { return NAME_OF(OPS, t); }
const char *bk_meta_perm_name(int8_t t) { return NAME_OF(PERM, t); }
