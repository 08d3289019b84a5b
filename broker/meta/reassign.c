/* broker/meta/reassign.c — request -> controller decision -> response for
 * ElectLeaders, AlterPartitionReassignments and ListPartitionReassignments
 * (see reassign.h). No node, no I/O: the handlers in h_reassign.c commit. */
#include "broker/meta/reassign.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "protocol/kp_errors.h"

/* ---- helpers ----------------------------------------------------------------- */

/* A request string as a C string in the arena; NULL for a null string, one
 * holding a NUL byte (no topic has one), or no memory (*oom set). */
static const char *cstr(kp_arena_t *a, kp_str_t s, bool *oom) {
    if (kp_slice_is_null(s) || memchr(s.p, 0, s.len)) return NULL;
    char *c = kp_arena_alloc(a, s.len + 1);
    if (!c) { *oom = true; return NULL; }
    if (s.len) memcpy(c, s.p, s.len);
    return c;
}

static kp_str_t msg_of(int16_t err) {
    return err ? kp_slice_cstr(kp_error_name(err)) : kp_slice_null();
}

static size_t count_of(int32_t n) { return n > 0 ? (size_t)n : 0; }

/* The (topic, partition) pairs already decided in this request: an open-
 * addressing set sized at twice the request's partitions, so it never fills. */
typedef struct {
    const bk_meta_topic_t **t;
    int32_t *p;
    size_t cap;
} seen_t;

static bool seen_init(seen_t *s, kp_arena_t *a, size_t n) {
    s->cap = n * 2 + 1;
    s->t = kp_arena_alloc(a, s->cap * sizeof *s->t);
    s->p = kp_arena_alloc(a, s->cap * sizeof *s->p);
    return s->t && s->p;
}

/* false when the pair was already there */
static bool seen_add(seen_t *s, const bk_meta_topic_t *t, int32_t p) {
    uint64_t h = ((uint64_t)(uintptr_t)t * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)(uint32_t)p * 0xBF58476D1CE4E5B9ull);
    for (size_t i = (size_t)(h % s->cap), k = 0; k < s->cap; k++, i = (i + 1) % s->cap) {
        if (!s->t[i]) {
            s->t[i] = t;
            s->p[i] = p;
            return true;
        }
        if (s->t[i] == t && s->p[i] == p) return false;
    }
    assert(!"seen set full");   /* cap > entries by construction */
    return false;
}

/* The partition as named by the request, or NULL (unknown). */
static const bk_meta_topic_t *topic_of(const bk_meta_image_t *img, const char *name, int32_t p) {
    const bk_meta_topic_t *t = name ? bk_meta_image_topic_by_name(img, name) : NULL;
    return t && p >= 0 && p < t->nparts ? t : NULL;
}

/* ---- ElectLeaders ---------------------------------------------------------- */

typedef kp_elect_leaders_response_replica_election_result_t el_topic_t;
typedef kp_elect_leaders_response_partition_result_t el_part_t;

static int elect_named(bk_meta_ctrl_t *c, const bk_meta_image_t *img, const kp_elect_leaders_request_t *q,
                       bk_meta_elect_type_t type, bool bad_type, kp_arena_t *a, bk_meta_recs_t *out,
                       kp_elect_leaders_response_t *r) {
    size_t nt = count_of(q->topic_partitions.count), total = 0;
    for (size_t i = 0; i < nt; i++) total += count_of(q->topic_partitions.items[i].partitions.count);
    el_topic_t *ts = kp_arena_alloc(a, (nt ? nt : 1) * sizeof *ts);
    seen_t seen;
    if (!ts || !seen_init(&seen, a, total)) return KP_ERR_NOMEM;
    bool oom = false;
    for (size_t i = 0; i < nt; i++) {
        const kp_elect_leaders_request_topic_partitions_t *rq = &q->topic_partitions.items[i];
        size_t np = count_of(rq->partitions.count);
        el_part_t *ps = kp_arena_alloc(a, (np ? np : 1) * sizeof *ps);
        const char *name = cstr(a, rq->topic, &oom);
        if (!ps || oom) return KP_ERR_NOMEM;
        kp_elect_leaders_response_replica_election_result_init(&ts[i]);
        ts[i].topic = rq->topic;
        for (size_t k = 0; k < np; k++) {
            int32_t pid = rq->partitions.items[k];
            const bk_meta_topic_t *t = topic_of(img, name, pid);
            int16_t err;
            if (bad_type) err = KP_ERROR_INVALID_REQUEST;
            else if (!t) err = KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
            else if (!seen_add(&seen, t, pid)) err = KP_ERROR_INVALID_REQUEST;
            else err = bk_meta_ctrl_elect(c, img, type, name, pid, out);
            kp_elect_leaders_response_partition_result_init(&ps[k]);
            ps[k].partition_id = pid;
            ps[k].error_code = err;
            ps[k].error_message = msg_of(err);
        }
        ts[i].partition_result.items = ps;
        ts[i].partition_result.count = (int32_t)np;
    }
    r->replica_election_results.items = ts;
    r->replica_election_results.count = (int32_t)nt;
    return KP_OK;
}

/* Every partition; only those where an election was needed are answered. */
static int elect_all(bk_meta_ctrl_t *c, const bk_meta_image_t *img, bk_meta_elect_type_t type, kp_arena_t *a,
                     bk_meta_recs_t *out, kp_elect_leaders_response_t *r) {
    el_topic_t *ts = kp_arena_alloc(a, (img->ntopics ? img->ntopics : 1) * sizeof *ts);
    if (!ts) return KP_ERR_NOMEM;
    size_t nt = 0;
    for (size_t i = 0; i < img->ntopics; i++) {
        const bk_meta_topic_t *t = img->by_name[i];
        el_part_t *ps = kp_arena_alloc(a, (t->nparts ? (size_t)t->nparts : 1) * sizeof *ps);
        if (!ps) return KP_ERR_NOMEM;
        size_t np = 0;
        for (int32_t j = 0; j < t->nparts; j++) {
            int16_t err = bk_meta_ctrl_elect(c, img, type, t->name, j, out);
            if (err == KP_ERROR_ELECTION_NOT_NEEDED) continue;
            kp_elect_leaders_response_partition_result_init(&ps[np]);
            ps[np].partition_id = j;
            ps[np].error_code = err;
            ps[np].error_message = msg_of(err);
            np++;
        }
        if (np == 0) continue;
        /* the name outlives this image: the answer is sent after the commit */
        size_t len = strlen(t->name);
        char *name = kp_arena_alloc(a, len + 1);
        if (!name) return KP_ERR_NOMEM;
        memcpy(name, t->name, len);
        kp_elect_leaders_response_replica_election_result_init(&ts[nt]);
        ts[nt].topic = (kp_str_t){ (const uint8_t *)name, len };
        ts[nt].partition_result.items = ps;
        ts[nt].partition_result.count = (int32_t)np;
        nt++;
    }
    r->replica_election_results.items = ts;
    r->replica_election_results.count = (int32_t)nt;
    return KP_OK;
}

int bk_meta_elect_leaders_decide(bk_meta_ctrl_t *c, const bk_meta_image_t *img, const kp_elect_leaders_request_t *q,
                            kp_arena_t *a, bk_meta_recs_t *out, kp_elect_leaders_response_t *r) {
    kp_elect_leaders_response_init(r);
    bool bad_type = q->election_type != BK_META_ELECT_PREFERRED && q->election_type != BK_META_ELECT_UNCLEAN;
    bk_meta_elect_type_t type = bad_type ? BK_META_ELECT_PREFERRED : (bk_meta_elect_type_t)q->election_type;
    if (bad_type) r->error_code = KP_ERROR_INVALID_REQUEST;
    if (q->topic_partitions.count < 0)
        return bad_type ? KP_OK : elect_all(c, img, type, a, out, r);
    return elect_named(c, img, q, type, bad_type, a, out, r);
}

void bk_meta_elect_commit_failed(kp_elect_leaders_response_t *r, int16_t error) {
    for (int32_t i = 0; i < r->replica_election_results.count; i++) {
        el_topic_t *t = &r->replica_election_results.items[i];
        for (int32_t k = 0; k < t->partition_result.count; k++) {
            el_part_t *p = &t->partition_result.items[k];
            if (p->error_code != 0) continue;
            p->error_code = error;
            p->error_message = msg_of(error);
        }
    }
}

/* ---- AlterPartitionReassignments ------------------------------------------- */

typedef kp_alter_partition_reassignments_response_reassignable_topic_response_t ar_topic_t;
typedef kp_alter_partition_reassignments_response_reassignable_partition_response_t ar_part_t;

int bk_meta_reassign_decide(bk_meta_ctrl_t *c, const bk_meta_image_t *img, const kp_alter_partition_reassignments_request_t *q,
                       kp_arena_t *a, bk_meta_recs_t *out, kp_alter_partition_reassignments_response_t *r) {
    kp_alter_partition_reassignments_response_init(r);
    size_t nt = count_of(q->topics.count), total = 0;
    for (size_t i = 0; i < nt; i++) total += count_of(q->topics.items[i].partitions.count);
    ar_topic_t *ts = kp_arena_alloc(a, (nt ? nt : 1) * sizeof *ts);
    seen_t seen;
    if (!ts || !seen_init(&seen, a, total)) return KP_ERR_NOMEM;
    bool oom = false;
    for (size_t i = 0; i < nt; i++) {
        const kp_alter_partition_reassignments_request_reassignable_topic_t *rq = &q->topics.items[i];
        size_t np = count_of(rq->partitions.count);
        ar_part_t *ps = kp_arena_alloc(a, (np ? np : 1) * sizeof *ps);
        const char *name = cstr(a, rq->name, &oom);
        if (!ps || oom) return KP_ERR_NOMEM;
        kp_alter_partition_reassignments_response_reassignable_topic_response_init(&ts[i]);
        ts[i].name = rq->name;
        for (size_t k = 0; k < np; k++) {
            const kp_alter_partition_reassignments_request_reassignable_partition_t *rp = &rq->partitions.items[k];
            const bk_meta_topic_t *t = topic_of(img, name, rp->partition_index);
            bk_meta_ctrl_reassign_t req = { name, rp->partition_index, rp->replicas.count < 0 ? NULL : rp->replicas.items,
                                       count_of(rp->replicas.count) };
            static const int32_t none[1] = { 0 };
            if (rp->replicas.count == 0) req.replicas = none;   /* empty, not cancel: rejected */
            int16_t err;
            if (!t) err = KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
            else if (!seen_add(&seen, t, rp->partition_index)) err = KP_ERROR_INVALID_REQUEST;
            else err = bk_meta_ctrl_reassign(c, img, &req, out);
            kp_alter_partition_reassignments_response_reassignable_partition_response_init(&ps[k]);
            ps[k].partition_index = rp->partition_index;
            ps[k].error_code = err;
            ps[k].error_message = msg_of(err);
        }
        ts[i].partitions.items = ps;
        ts[i].partitions.count = (int32_t)np;
    }
    r->responses.items = ts;
    r->responses.count = (int32_t)nt;
    return KP_OK;
}

void bk_meta_reassign_commit_failed(kp_alter_partition_reassignments_response_t *r, int16_t error) {
    for (int32_t i = 0; i < r->responses.count; i++) {
        ar_topic_t *t = &r->responses.items[i];
        for (int32_t k = 0; k < t->partitions.count; k++) {
            ar_part_t *p = &t->partitions.items[k];
            if (p->error_code != 0) continue;
            p->error_code = error;
            p->error_message = msg_of(error);
        }
    }
}

/* ---- ListPartitionReassignments -------------------------------------------- */

typedef kp_list_partition_reassignments_response_ongoing_topic_reassignment_t lr_topic_t;
typedef kp_list_partition_reassignments_response_ongoing_partition_reassignment_t lr_part_t;

static bool reassigning(const bk_meta_partition_t *p) { return p->adding.n > 0 || p->removing.n > 0; }

static void fill_part(lr_part_t *o, const bk_meta_partition_t *p) {
    kp_list_partition_reassignments_response_ongoing_partition_reassignment_init(o);
    o->partition_index = p->id;
    o->replicas.items = (int32_t *)p->replicas.v;
    o->replicas.count = p->replicas.n;
    o->adding_replicas.items = (int32_t *)p->adding.v;
    o->adding_replicas.count = p->adding.n;
    o->removing_replicas.items = (int32_t *)p->removing.v;
    o->removing_replicas.count = p->removing.n;
}

/* One topic's reassigning partitions: all of them (want NULL) or the named
 * ones. *np = 0 when there are none. */
static int list_topic(const bk_meta_topic_t *t, const int32_t *want, size_t nwant, bool all, kp_arena_t *a,
                      lr_part_t **out, size_t *np) {
    size_t cap = all ? (size_t)t->nparts : nwant;
    lr_part_t *ps = kp_arena_alloc(a, (cap ? cap : 1) * sizeof *ps);
    if (!ps) return KP_ERR_NOMEM;
    size_t n = 0;
    for (size_t k = 0; k < cap; k++) {
        int32_t pid = all ? (int32_t)k : want[k];
        if (pid < 0 || pid >= t->nparts || !reassigning(&t->parts[pid])) continue;
        bool dup = false;
        for (size_t m = 0; m < n && !dup; m++) dup = ps[m].partition_index == pid;
        if (!dup) fill_part(&ps[n++], &t->parts[pid]);
    }
    *out = ps;
    *np = n;
    return KP_OK;
}

int bk_meta_list_reassign_answer(const bk_meta_image_t *img, const kp_list_partition_reassignments_request_t *q,
                            kp_arena_t *a, kp_list_partition_reassignments_response_t *r) {
    kp_list_partition_reassignments_response_init(r);
    bool all = q->topics.count < 0;
    size_t nq = all ? img->ntopics : count_of(q->topics.count);
    lr_topic_t *ts = kp_arena_alloc(a, (nq ? nq : 1) * sizeof *ts);
    if (!ts) return KP_ERR_NOMEM;
    size_t nt = 0;
    bool oom = false;
    for (size_t i = 0; i < nq; i++) {
        const kp_list_partition_reassignments_request_list_partition_reassignments_topics_t *rq =
            all ? NULL : &q->topics.items[i];
        const bk_meta_topic_t *t = all ? img->by_name[i] : NULL;
        if (!all) {
            const char *name = cstr(a, rq->name, &oom);
            if (oom) return KP_ERR_NOMEM;
            t = name ? bk_meta_image_topic_by_name(img, name) : NULL;
        }
        if (!t) continue;   /* unknown topics are left out */
        lr_part_t *ps;
        size_t np;
        if (list_topic(t, all ? NULL : rq->partition_indexes.items, all ? 0 : count_of(rq->partition_indexes.count),
                       all, a, &ps, &np) != KP_OK)
            return KP_ERR_NOMEM;
        if (np == 0) continue;
        kp_list_partition_reassignments_response_ongoing_topic_reassignment_init(&ts[nt]);
        ts[nt].name = kp_slice_cstr(t->name);
        ts[nt].partitions.items = ps;
        ts[nt].partitions.count = (int32_t)np;
        nt++;
    }
    r->topics.items = ts;
    r->topics.count = (int32_t)nt;
    return KP_OK;
}
