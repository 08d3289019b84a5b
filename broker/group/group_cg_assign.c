/* group_cg_assign.c — partition sets and the server-side assignors of the
 * consumer group protocol: `uniform` (Kafka's default: balanced, sticky)
 * and `range` (per topic, contiguous ranges over the members sorted by id,
 * so members subscribed to co-partitioned topics get the same partition
 * numbers). Cost: O(members x partitions) per assignment (groups are small;
 * an assignment runs only when the group epoch moves). */
#include "broker/group/group_cg_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* ---- partition sets ---------------------------------------------------------- */

int cg_tp_cmp(const bk_grp_cg_tp_t *a, const bk_grp_cg_tp_t *b) {
    int r = memcmp(a->topic.b, b->topic.b, sizeof a->topic.b);
    if (r) return r;
    return a->partition < b->partition ? -1 : a->partition > b->partition;
}

static int tp_qcmp(const void *a, const void *b) { return cg_tp_cmp(a, b); }

bool cg_tps_has(const bk_grp_cg_tps_t *s, const bk_grp_cg_tp_t *tp) {
    return s->n > 0 && bsearch(tp, s->v, s->n, sizeof *s->v, tp_qcmp) != NULL;
}

void cg_tps_free(bk_grp_cg_tps_t *s) {
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

void cg_tps_set(bk_grp_cg_tps_t *d, const bk_grp_cg_tp_t *v, size_t n) {
    bk_grp_cg_tp_t *nv = grp_xalloc((n ? n : 1) * sizeof *nv);
    if (n) memcpy(nv, v, n * sizeof *nv);
    qsort(nv, n, sizeof *nv, tp_qcmp);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || cg_tp_cmp(&nv[k - 1], &nv[i]) != 0) nv[k++] = nv[i];
    free(d->v);
    d->v = nv;
    d->n = k;
}

static bk_grp_cg_tps_t filter(const bk_grp_cg_tps_t *a, const bk_grp_cg_tps_t *b, bool keep_in_b) {
    bk_grp_cg_tps_t r = { grp_xalloc((a->n ? a->n : 1) * sizeof *r.v), 0 };
    for (size_t i = 0; i < a->n; i++)
        if (cg_tps_has(b, &a->v[i]) == keep_in_b) r.v[r.n++] = a->v[i];
    return r;
}

bk_grp_cg_tps_t cg_tps_minus(const bk_grp_cg_tps_t *a, const bk_grp_cg_tps_t *b) { return filter(a, b, false); }
bk_grp_cg_tps_t cg_tps_and(const bk_grp_cg_tps_t *a, const bk_grp_cg_tps_t *b) { return filter(a, b, true); }

bool cg_tps_eq(const bk_grp_cg_tps_t *a, const bk_grp_cg_tps_t *b) {
    return a->n == b->n && (a->n == 0 || memcmp(a->v, b->v, a->n * sizeof *a->v) == 0);
}

/* ---- subscriptions ---------------------------------------------------------- */

bool cg_subscribed(const bk_grp_cg_member_t *m, kp_str_t name) {
    for (size_t i = 0; i < m->ntopics; i++)
        if (gs_eq(&m->topics[i], name)) return true;
    if (!m->re || name.len == 0) return false;
    /* Kafka resolves regexes against non-internal topics only */
    if (name.len >= 2 && name.p[0] == '_' && name.p[1] == '_') return false;
    char buf[256];
    char *s = name.len < sizeof buf ? buf : grp_xalloc(name.len + 1);
    memcpy(s, name.p, name.len);
    s[name.len] = 0;
    regmatch_t mt;
    bool ok = regexec(m->re, s, 1, &mt, 0) == 0 && mt.rm_so == 0 && (size_t)mt.rm_eo == name.len;
    if (s != buf) free(s);
    return ok;
}

void cg_subs_build(cg_subs_t *s, const bk_grp_cg_t *cg, const bk_grp_cg_topics_t *topics) {
    size_t nt = topics->n, nm = cg->nmembers;
    s->ntopics = nt;
    s->nmembers = nm;
    s->sub = grp_xalloc((nt * nm > 0 ? nt * nm : 1) * sizeof *s->sub);
    s->any = grp_xalloc((nt ? nt : 1) * sizeof *s->any);
    for (size_t t = 0; t < nt; t++) {
        s->any[t] = 0;
        for (size_t i = 0; i < nm; i++) {
            /* static members that left count too: they keep their partitions */
            s->sub[t * nm + i] = cg_subscribed(&cg->members[i], topics->v[t].name);
            s->any[t] |= s->sub[t * nm + i];
        }
    }
}

void cg_subs_free(cg_subs_t *s) {
    free(s->sub);
    free(s->any);
    s->sub = s->any = NULL;
}

uint64_t cg_sub_hash(const bk_grp_cg_topics_t *topics, const cg_subs_t *subs) {
    assert(subs->ntopics == topics->n);
    uint64_t h = 1469598103934665603ULL;
#define MIX(p, n)                                                          \
    for (size_t q_ = 0; q_ < (n); q_++) { h ^= ((const uint8_t *)(p))[q_]; h *= 1099511628211ULL; }
    for (size_t i = 0; i < topics->n; i++) {
        const bk_grp_cg_topic_t *t = &topics->v[i];
        if (!subs->any[i]) continue;
        MIX(t->name.p, t->name.len);
        MIX(t->id.b, sizeof t->id.b);
        MIX(&t->nparts, sizeof t->nparts);
    }
#undef MIX
    return h;
}

/* ---- assignors --------------------------------------------------------------- */

static const char *const ASSIGNORS[BK_GRP_CG_NASSIGNORS] = { "uniform", "range" };

const char *bk_grp_cg_assignor_name(bk_grp_cg_assignor_t a) {
    return (unsigned)a < BK_GRP_CG_NASSIGNORS ? ASSIGNORS[a] : "unknown";
}

bool bk_grp_cg_assignor_parse(kp_str_t name, bk_grp_cg_assignor_t *out) {
    for (int i = 0; i < BK_GRP_CG_NASSIGNORS; i++)
        if (kp_slice_eq_cstr(name, ASSIGNORS[i])) { *out = (bk_grp_cg_assignor_t)i; return true; }
    /* Kafka's class names are accepted too (group.consumer.assignors takes them) */
    if (kp_slice_eq_cstr(name, "org.apache.kafka.coordinator.group.assignor.UniformAssignor")) {
        *out = BK_GRP_CG_UNIFORM;
        return true;
    }
    if (kp_slice_eq_cstr(name, "org.apache.kafka.coordinator.group.assignor.RangeAssignor")) {
        *out = BK_GRP_CG_RANGE;
        return true;
    }
    return false;
}

typedef struct {
    bk_grp_cg_tp_t *v;
    size_t n, cap;
} tpvec_t;

static void push(tpvec_t *x, kp_uuid_t topic, int32_t p) {
    grp_reserve((void **)&x->v, &x->cap, x->n + 1, sizeof *x->v);
    x->v[x->n].topic = topic;
    x->v[x->n].partition = p;
    x->n++;
}

static int id_cmp(const bk_grp_cg_member_t *x, const bk_grp_cg_member_t *y) {
    size_t n = x->member_id.len < y->member_id.len ? x->member_id.len : y->member_id.len;
    int r = n ? memcmp(x->member_id.p, y->member_id.p, n) : 0;
    if (r) return r;
    return x->member_id.len < y->member_id.len ? -1 : x->member_id.len > y->member_id.len;
}

/* Member indexes sorted by member id (range's order; ties in uniform).
 * Insertion sort: qsort has no context argument in C11 and groups are small. */
static void sort_by_id(const bk_grp_cg_t *cg, size_t *order) {
    for (size_t i = 0; i < cg->nmembers; i++) {
        size_t v = i, j = i;
        while (j > 0 && id_cmp(&cg->members[order[j - 1]], &cg->members[v]) > 0) { order[j] = order[j - 1]; j--; }
        order[j] = v;
    }
}

static void assign_range(bk_grp_cg_t *cg, const bk_grp_cg_topics_t *topics, const cg_subs_t *subs,
                         const size_t *order, tpvec_t *out) {
    size_t *in = grp_xalloc((cg->nmembers ? cg->nmembers : 1) * sizeof *in);
    for (size_t t = 0; t < topics->n; t++) {
        size_t k = 0;
        for (size_t i = 0; i < cg->nmembers; i++)
            if (cg_subs_has(subs, t, order[i])) in[k++] = order[i];
        if (k == 0) continue;
        int32_t np = topics->v[t].nparts, base = np / (int32_t)k, extra = np % (int32_t)k, p = 0;
        for (size_t i = 0; i < k; i++) {
            int32_t cnt = base + ((int32_t)i < extra ? 1 : 0);
            for (int32_t j = 0; j < cnt; j++) push(&out[in[i]], topics->v[t].id, p++);
        }
    }
    free(in);
}

/* A partition left for the second pass of uniform, with its topic's index
 * in the view (no lookup by id then). */
typedef struct {
    bk_grp_cg_tp_t tp;
    size_t t;
} left_t;

/* uniform: every member first keeps up to floor(total / members) of its
 * previous target (stickiness), then each remaining partition goes to the
 * subscribed member holding the fewest (its previous owner on a tie, then
 * member id order): balanced within one partition for a common
 * subscription, greedy-balanced otherwise. Subscriptions come from subs
 * (resolved once per member and topic): before, a regex was matched again
 * per partition and member, and each left partition searched its topic by
 * id over the whole view. */
static void assign_uniform(bk_grp_cg_t *cg, const bk_grp_cg_topics_t *topics, const cg_subs_t *subs,
                           const size_t *order, tpvec_t *out) {
    size_t total = 0, nm = cg->nmembers;
    for (size_t t = 0; t < topics->n; t++)
        if (subs->any[t]) total += (size_t)topics->v[t].nparts;
    size_t quota = nm ? total / nm : 0;
    left_t *left = NULL;
    size_t nleft = 0, left_cap = 0;
    for (size_t t = 0; t < topics->n; t++) {
        const bk_grp_cg_topic_t *tp = &topics->v[t];
        if (!subs->any[t]) continue;     /* no member subscribes: no previous owner keeps it either */
        for (int32_t p = 0; p < tp->nparts; p++) {
            bk_grp_cg_tp_t x = { tp->id, p };
            ptrdiff_t prev = -1;
            for (size_t i = 0; i < nm && prev < 0; i++)
                if (cg_subs_has(subs, t, i) && cg_tps_has(&cg->members[i].target, &x)) prev = (ptrdiff_t)i;
            if (prev >= 0 && out[prev].n < quota) {
                push(&out[prev], tp->id, p);
            } else {
                grp_reserve((void **)&left, &left_cap, nleft + 1, sizeof *left);
                left[nleft++] = (left_t){ x, t };
            }
        }
    }
    for (size_t k = 0; k < nleft; k++) {
        const bk_grp_cg_tp_t *x = &left[k].tp;
        size_t t = left[k].t;
        ptrdiff_t best = -1;
        for (size_t o = 0; o < nm; o++) {
            size_t i = order[o];
            if (!cg_subs_has(subs, t, i)) continue;
            if (best < 0 || out[i].n < out[best].n ||
                (out[i].n == out[best].n && cg_tps_has(&cg->members[i].target, x) &&
                 !cg_tps_has(&cg->members[best].target, x)))
                best = (ptrdiff_t)i;
        }
        if (best >= 0) push(&out[best], x->topic, x->partition);
    }
    free(left);
}

void cg_assign(bk_grp_cg_t *cg, bk_grp_cg_assignor_t a, const bk_grp_cg_topics_t *topics, const cg_subs_t *subs) {
    assert(subs->ntopics == topics->n && subs->nmembers == cg->nmembers);
    size_t nm = cg->nmembers;
    size_t *order = grp_xalloc((nm ? nm : 1) * sizeof *order);
    tpvec_t *out = grp_xalloc((nm ? nm : 1) * sizeof *out);
    sort_by_id(cg, order);
    if (a == BK_GRP_CG_RANGE) assign_range(cg, topics, subs, order, out);
    else assign_uniform(cg, topics, subs, order, out);
    for (size_t i = 0; i < nm; i++) {
        cg_tps_set(&cg->members[i].target, out[i].v, out[i].n);
        free(out[i].v);
    }
    free(out);
    free(order);
    cg->assignor = a;
}
