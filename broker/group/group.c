/* group.c — coordinator table, owned strings, members, out lists, and the
 * coordinator partition of a group. */
#include "broker/group/group_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const STATE_NAMES[] = { "Empty", "PreparingRebalance", "CompletingRebalance",
                                           "Stable", "Dead" };

const char *bk_grp_state_name(bk_grp_state_t s) {
    return (unsigned)s <= BK_GRP_DEAD ? STATE_NAMES[s] : "Unknown";
}

bool bk_grp_state_parse(kp_str_t name, bk_grp_state_t *out) {
    for (int s = BK_GRP_EMPTY; s <= BK_GRP_DEAD; s++) {
        size_t n = strlen(STATE_NAMES[s]);
        if (name.p && name.len == n && strncasecmp((const char *)name.p, STATE_NAMES[s], n) == 0) {
            *out = (bk_grp_state_t)s;
            return true;
        }
    }
    return false;
}

void *grp_xalloc(size_t n) {
    void *p = calloc(1, n ? n : 1);
    assert(p != NULL);
    return p;
}

void *grp_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    assert(q != NULL);
    return q;
}

void grp_reserve(void **v, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return;
    size_t ncap = *cap ? *cap * 2 : 4;
    while (ncap < need) ncap *= 2;
    *v = grp_xrealloc(*v, ncap * size);
    *cap = ncap;
}

/* ---- owned strings ------------------------------------------------------- */

kp_str_t gs_slice(const bk_grp_str_t *s) {
    kp_str_t r = { (const uint8_t *)s->p, s->len };
    return r;
}

bool gs_eq(const bk_grp_str_t *a, kp_str_t b) {
    if (!a->p || !b.p) return !a->p && !b.p;
    return a->len == b.len && memcmp(a->p, b.p, b.len) == 0;
}

void gs_set(bk_grp_str_t *d, kp_str_t s) {
    char *p = NULL;
    if (s.p) {
        p = grp_xalloc(s.len + 1);
        memcpy(p, s.p, s.len);
    }
    free(d->p);
    d->p = p;
    d->len = s.p ? s.len : 0;
}

void gs_free(bk_grp_str_t *s) {
    free(s->p);
    s->p = NULL;
    s->len = 0;
}

/* ---- coordinator ------------------------------------------------------- */

void bk_grp_config_defaults(bk_grp_config_t *cfg) {
    cfg->num_partitions = 50;
    cfg->min_session_timeout_ms = 6000;
    cfg->max_session_timeout_ms = 1800000;
    cfg->initial_rebalance_delay_ms = 3000;
    cfg->max_size = BK_GRP_MEMBERS_MAX;
    cfg->offsets_retention_ms = 7LL * 24 * 3600 * 1000;
    cfg->offset_metadata_max_bytes = 4096;
    cfg->cg_session_timeout_ms = 45000;
    cfg->cg_heartbeat_interval_ms = 5000;
    cfg->cg_max_size = BK_GRP_MEMBERS_MAX;
    cfg->cg_assignors[0] = 0;                /* uniform */
    cfg->cg_assignors[1] = 1;                /* range */
    cfg->cg_migration = 3;                   /* bidirectional */
}

void bk_grp_coord_init(bk_grp_coord_t *c, const bk_grp_config_t *cfg, int32_t partition,
                       uint64_t seed) {
    assert(cfg->num_partitions > 0);
    assert(partition >= 0 && partition < cfg->num_partitions);
    assert(cfg->max_size > 0 && cfg->max_size <= BK_GRP_MEMBERS_MAX);
    memset(c, 0, sizeof *c);
    c->cfg = *cfg;
    c->partition = partition;
    c->loading = true;
    c->rng = seed;
}

void bk_grp_coord_free(bk_grp_coord_t *c) {
    while (c->ngroups > 0) grp_destroy(c, c->groups[c->ngroups - 1]);
    free(c->groups);
    memset(c, 0, sizeof *c);
}

/* Decodes one UTF-8 code point at s[*i] (advancing *i); invalid bytes give
 * U+FFFD one byte at a time, like Java's replacing decoder in most cases. */
static uint32_t utf8_next(const uint8_t *s, size_t n, size_t *i) {
    uint8_t b = s[*i];
    size_t need = 0;
    uint32_t cp = 0, lo = 0x80, hi = 0xBF;
    if (b < 0x80) { (*i)++; return b; }
    if (b >= 0xC2 && b <= 0xDF) { need = 1; cp = b & 0x1F; }
    else if (b >= 0xE0 && b <= 0xEF) {
        need = 2; cp = b & 0x0F;
        if (b == 0xE0) lo = 0xA0;
        if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3; cp = b & 0x07;
        if (b == 0xF0) lo = 0x90;
        if (b == 0xF4) hi = 0x8F;
    } else { (*i)++; return 0xFFFD; }
    for (size_t k = 1; k <= need; k++) {
        if (*i + k >= n || s[*i + k] < lo || s[*i + k] > hi) { (*i)++; return 0xFFFD; }
        cp = (cp << 6) | (s[*i + k] & 0x3F);
        lo = 0x80;
        hi = 0xBF;
    }
    *i += need + 1;
    return cp;
}

int32_t bk_grp_partition_for(kp_str_t group_id, int32_t num_partitions) {
    assert(num_partitions > 0);
    uint32_t h = 0;                          /* Java int arithmetic wraps */
    for (size_t i = 0; i < group_id.len;) {
        uint32_t cp = utf8_next(group_id.p, group_id.len, &i);
        if (cp >= 0x10000) {
            h = 31 * h + (0xD800 + ((cp - 0x10000) >> 10));
            h = 31 * h + (0xDC00 + ((cp - 0x10000) & 0x3FF));
        } else {
            h = 31 * h + cp;
        }
    }
    int64_t v = (int32_t)h;
    int64_t abs = v == INT32_MIN ? 0 : (v < 0 ? -v : v);   /* Kafka's Utils.abs */
    return (int32_t)(abs % num_partitions);
}

int16_t bk_grp_owner_error(const bk_grp_coord_t *c, kp_str_t group_id) {
    if (bk_grp_partition_for(group_id, c->cfg.num_partitions) != c->partition)
        return KP_ERROR_NOT_COORDINATOR;
    return c->loading ? KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS : KP_ERROR_NONE;
}

static int cmp_slice(kp_str_t a, kp_str_t b) {
    size_t n = a.len < b.len ? a.len : b.len;
    int r = n ? memcmp(a.p, b.p, n) : 0;
    if (r) return r;
    return a.len < b.len ? -1 : a.len > b.len;
}

/* Binary search; returns the index or -1, *ins = insertion point. */
static ptrdiff_t group_search(const bk_grp_coord_t *c, kp_str_t id, size_t *ins) {
    size_t lo = 0, hi = c->ngroups;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = cmp_slice(gs_slice(&c->groups[mid]->id), id);
        if (r == 0) { if (ins) *ins = mid; return (ptrdiff_t)mid; }
        if (r < 0) lo = mid + 1; else hi = mid;
    }
    if (ins) *ins = lo;
    return -1;
}

bk_grp_t *grp_get(bk_grp_coord_t *c, kp_str_t id) {
    ptrdiff_t i = group_search(c, id, NULL);
    return i < 0 ? NULL : c->groups[i];
}

const bk_grp_t *bk_grp_find(const bk_grp_coord_t *c, kp_str_t id) {
    ptrdiff_t i = group_search(c, id, NULL);
    return i < 0 ? NULL : c->groups[i];
}

bk_grp_t *grp_create(bk_grp_coord_t *c, kp_str_t id, int64_t now_ms) {
    size_t ins;
    assert(group_search(c, id, &ins) < 0);
    if (c->ngroups >= BK_GRP_GROUPS_MAX) return NULL;
    bk_grp_t *g = grp_xalloc(sizeof *g);
    gs_set(&g->id, id.p ? id : kp_slice_cstr(""));
    g->state = BK_GRP_EMPTY;
    g->state_ts_ms = now_ms;
    grp_reserve((void **)&c->groups, &c->groups_cap, c->ngroups + 1, sizeof *c->groups);
    memmove(&c->groups[ins + 1], &c->groups[ins], (c->ngroups - ins) * sizeof *c->groups);
    c->groups[ins] = g;
    c->ngroups++;
    return g;
}

void grp_destroy(bk_grp_coord_t *c, bk_grp_t *g) {
    size_t ins;
    ptrdiff_t i = group_search(c, gs_slice(&g->id), &ins);
    assert(i >= 0 && c->groups[i] == g);
    memmove(&c->groups[i], &c->groups[i + 1], (c->ngroups - (size_t)i - 1) * sizeof *c->groups);
    c->ngroups--;
    for (size_t k = 0; k < g->nmembers; k++) grp_member_free(&g->members[k]);
    for (size_t k = 0; k < g->npending; k++) gs_free(&g->pending[k].member_id);
    for (size_t k = 0; k < g->noffsets; k++) {
        gs_free(&g->offsets[k].topic);
        gs_free(&g->offsets[k].metadata);
    }
    free(g->members);
    free(g->pending);
    free(g->offsets);
    gs_free(&g->id);
    gs_free(&g->protocol_type);
    gs_free(&g->protocol);
    gs_free(&g->leader);
    cg_free(g);
    free(g);
}

void grp_set_state(bk_grp_t *g, bk_grp_state_t s, int64_t now_ms) {
    g->state = s;
    g->state_ts_ms = now_ms;
}

ptrdiff_t grp_member_idx(const bk_grp_t *g, kp_str_t member_id) {
    for (size_t i = 0; i < g->nmembers; i++)
        if (gs_eq(&g->members[i].member_id, member_id)) return (ptrdiff_t)i;
    return -1;
}

ptrdiff_t grp_static_idx(const bk_grp_t *g, kp_str_t instance_id) {
    if (!instance_id.p) return -1;
    for (size_t i = 0; i < g->nmembers; i++)
        if (gs_eq(&g->members[i].instance_id, instance_id)) return (ptrdiff_t)i;
    return -1;
}

ptrdiff_t grp_pending_idx(const bk_grp_t *g, kp_str_t member_id) {
    for (size_t i = 0; i < g->npending; i++)
        if (gs_eq(&g->pending[i].member_id, member_id)) return (ptrdiff_t)i;
    return -1;
}

void grp_member_free(bk_grp_member_t *m) {
    gs_free(&m->member_id);
    gs_free(&m->instance_id);
    gs_free(&m->client_id);
    gs_free(&m->client_host);
    gs_free(&m->assignment);
    for (size_t k = 0; k < m->nprotocols; k++) {
        gs_free(&m->protocols[k].name);
        gs_free(&m->protocols[k].metadata);
    }
    free(m->protocols);
    memset(m, 0, sizeof *m);
}

void grp_member_del(bk_grp_t *g, size_t i) {
    assert(i < g->nmembers);
    bool was_leader = grp_is_leader(g, &g->members[i]);
    grp_member_free(&g->members[i]);
    memmove(&g->members[i], &g->members[i + 1], (g->nmembers - i - 1) * sizeof *g->members);
    g->nmembers--;
    if (was_leader) {
        gs_free(&g->leader);
        if (g->nmembers > 0) gs_set(&g->leader, gs_slice(&g->members[0].member_id));
    }
}

void grp_pending_del(bk_grp_t *g, size_t i) {
    assert(i < g->npending);
    gs_free(&g->pending[i].member_id);
    memmove(&g->pending[i], &g->pending[i + 1], (g->npending - i - 1) * sizeof *g->pending);
    g->npending--;
}

bool grp_is_leader(const bk_grp_t *g, const bk_grp_member_t *m) {
    return g->leader.p && gs_eq(&g->leader, gs_slice(&m->member_id));
}

bool grp_fenced(const bk_grp_t *g, kp_str_t member_id, kp_str_t instance_id) {
    ptrdiff_t s = grp_static_idx(g, instance_id);
    return s >= 0 && !gs_eq(&g->members[s].member_id, member_id);
}

/* ---- out ------------------------------------------------------------------ */

void bk_grp_out_init(bk_grp_out_t *o) {
    memset(o, 0, sizeof *o);
    kp_arena_init(&o->arena, BK_GRP_OUT_ARENA_BYTES);
}

void bk_grp_out_reset(bk_grp_out_t *o) {
    kp_arena_reset(&o->arena);
    o->nresps = o->nrecs = 0;
    o->members_expired = o->rebalances_completed = o->offsets_expired = 0;
    o->err = KP_OK;
}

void bk_grp_out_free(bk_grp_out_t *o) {
    kp_arena_free(&o->arena);
    free(o->resps);
    free(o->recs);
    memset(o, 0, sizeof *o);
}

const bk_grp_resp_t *bk_grp_out_find(const bk_grp_out_t *o, uint64_t token) {
    for (size_t i = 0; i < o->nresps; i++)
        if (o->resps[i].token == token) return &o->resps[i];
    return NULL;
}

kp_str_t out_copy(bk_grp_out_t *o, kp_str_t s) {
    if (!s.p) return s;
    uint8_t *p = kp_arena_alloc(&o->arena, s.len + 1);
    if (!p) {
        o->err = KP_ERR_NOMEM;
        return kp_slice_cstr("");
    }
    memcpy(p, s.p, s.len);
    kp_str_t r = { p, s.len };
    return r;
}

bk_grp_resp_t *out_resp(bk_grp_out_t *o, bk_grp_resp_kind_t kind, uint64_t token) {
    assert(bk_grp_out_find(o, token) == NULL);   /* a token is answered once */
    grp_reserve((void **)&o->resps, &o->resps_cap, o->nresps + 1, sizeof *o->resps);
    bk_grp_resp_t *r = &o->resps[o->nresps++];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->token = token;
    r->generation = -1;
    r->leader = r->member_id = kp_slice_cstr("");
    r->protocol_type = r->protocol = kp_slice_null();
    r->assignment = kp_slice_cstr("");
    return r;
}

void out_join_error(bk_grp_out_t *o, uint64_t token, kp_str_t member_id, int16_t err) {
    bk_grp_resp_t *r = out_resp(o, BK_GRP_RESP_JOIN, token);
    r->error = err;
    r->member_id = out_copy(o, member_id.p ? member_id : kp_slice_cstr(""));
}

void out_sync_error(bk_grp_out_t *o, uint64_t token, int16_t err) {
    bk_grp_resp_t *r = out_resp(o, BK_GRP_RESP_SYNC, token);
    r->error = err;
}
