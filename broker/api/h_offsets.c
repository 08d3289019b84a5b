/* broker/api/h_offsets.c — OffsetCommit, OffsetFetch (v8+: several groups),
 * OffsetDelete: the group driver (group_driver.h) runs them on the group's
 * core (commits appended to __consumer_offsets and replicated before the
 * answer; partitions of topics that do not exist get UNKNOWN_TOPIC_OR_
 * PARTITION and never reach the core, as in Kafka); the completion
 * callbacks here build the answers for each version. */
#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/meta/acl.h"
#include "broker/group/group_driver.h"
#include "protocol/kp_errors.h"

static size_t cnt(int32_t c) { return c > 0 ? (size_t)c : 0; }

/* A group answer that must not leave (its records may not be replicated):
 * closing the connection makes the client find the coordinator and retry. */
static bool unsent(bk_api_req_t *req, const bk_grp_gd_result_t *res) {
    if (!res->unsent) return false;
    bk_api_req_close(req, res->unsent);
    return true;
}

/* READ on each topic of a request's topic array (OffsetCommit, OffsetDelete:
 * Kafka answers the refused ones TOPIC_AUTHORIZATION_FAILED and lets the
 * rest through). `items` holds `n` elements of `size` bytes, each with its
 * kp_str_t name at `name_off`. When some are refused: *denied_out[i] says
 * which, and *kept_out is a copy of the allowed elements (order kept, the
 * request's arena), *nkept_out their count. When none is: *denied_out and
 * *kept_out are NULL. False when out of memory: the request is then closed
 * (finished), the caller only returns. */
static bool allowed_topics(bk_api_req_t *req, const void *items, size_t n, size_t size, size_t name_off,
                           const bool **denied_out, void **kept_out, size_t *nkept_out) {
    *denied_out = NULL;
    *kept_out = NULL;
    *nkept_out = n;
    bool *denied = bk_api_req_alloc(req, n, sizeof *denied);
    if (!denied) goto nomem;
    const uint8_t *at = items;
    size_t nd = 0;
    for (size_t i = 0; i < n; i++) {
        kp_str_t name;
        memcpy(&name, at + i * size + name_off, sizeof name);
        nd += denied[i] = !bk_api_authorized_str(req, BK_META_OP_READ, BK_META_RES_TOPIC, name);
    }
    if (nd == 0) return true;
    uint8_t *keep = bk_api_req_alloc(req, n - nd, size);
    if (!keep) goto nomem;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!denied[i]) memcpy(keep + m++ * size, at + i * size, size);
    assert(m == n - nd);
    *denied_out = denied;
    *kept_out = keep;
    *nkept_out = m;
    return true;
nomem:
    bk_api_req_close(req, "out of memory");
    return false;
}

/* ---- OffsetCommit ------------------------------------------------------ */

typedef kp_offset_commit_response_offset_commit_response_topic_t crtopic_t;
typedef kp_offset_commit_response_offset_commit_response_partition_t crpart_t;

/* Topics the principal may not READ are left out of what the coordinator
 * sees (req->body then holds the rest) and answered
 * TOPIC_AUTHORIZATION_FAILED after it, as Kafka does. */
typedef struct {
    const kp_offset_commit_request_t *orig;
    const bool *denied;
} commit_authz_t;

static void commit_done(void *arg, const bk_grp_gd_result_t *res) {
    bk_api_req_t *req = arg;
    if (unsent(req, res)) return;
    const kp_offset_commit_request_t *q = req->body;
    const commit_authz_t *az = req->aux;
    size_t nd = 0;
    for (size_t i = 0; az && i < cnt(az->orig->topics.count); i++) nd += az->denied[i];
    size_t nt = cnt(q->topics.count), k = 0;
    crtopic_t *rt = bk_api_req_alloc(req, nt + nd, sizeof *rt);
    if (!rt) { bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < nt; i++) {
        size_t np = cnt(q->topics.items[i].partitions.count);
        crpart_t *rp = bk_api_req_alloc(req, np, sizeof *rp);
        if (!rp) { bk_api_req_close(req, "out of memory"); return; }
        kp_offset_commit_response_offset_commit_response_topic_init(&rt[i]);
        rt[i].name = q->topics.items[i].name;
        for (size_t j = 0; j < np; j++, k++) {
            kp_offset_commit_response_offset_commit_response_partition_init(&rp[j]);
            rp[j].partition_index = q->topics.items[i].partitions.items[j].partition_index;
            rp[j].error_code = res->errors[k];
        }
        rt[i].partitions.items = rp;
        rt[i].partitions.count = (int32_t)np;
    }
    for (size_t i = 0, o = nt; az && i < cnt(az->orig->topics.count); i++) {
        if (!az->denied[i]) continue;
        const kp_offset_commit_request_offset_commit_request_topic_t *t = &az->orig->topics.items[i];
        size_t np = cnt(t->partitions.count);
        crpart_t *rp = bk_api_req_alloc(req, np, sizeof *rp);
        if (!rp) { bk_api_req_close(req, "out of memory"); return; }
        kp_offset_commit_response_offset_commit_response_topic_init(&rt[o]);
        rt[o].name = t->name;
        for (size_t j = 0; j < np; j++) {
            kp_offset_commit_response_offset_commit_response_partition_init(&rp[j]);
            rp[j].partition_index = t->partitions.items[j].partition_index;
            rp[j].error_code = res->error ? res->error : KP_ERROR_TOPIC_AUTHORIZATION_FAILED;
        }
        rt[o].partitions.items = rp;
        rt[o].partitions.count = (int32_t)np;
        o++;
    }
    kp_offset_commit_response_t r;
    kp_offset_commit_response_init(&r);
    r.topics.items = rt;
    r.topics.count = (int32_t)(nt + nd);
    bk_api_req_respond(req, &r);
}

void bk_api_h_offset_commit(bk_api_req_t *req) {
    const kp_offset_commit_request_t *q = req->body;
    size_t nt = cnt(q->topics.count), total = 0;
    for (size_t i = 0; i < nt; i++) total += cnt(q->topics.items[i].partitions.count);
    if (!bk_api_authorized_str(req, BK_META_OP_READ, BK_META_RES_GROUP, q->group_id)) {
        /* READ on the group first: every partition answers the group error */
        int16_t *errs = bk_api_req_alloc(req, total, sizeof *errs);
        if (!errs) { bk_api_req_close(req, "out of memory"); return; }
        for (size_t i = 0; i < total; i++) errs[i] = KP_ERROR_GROUP_AUTHORIZATION_FAILED;
        bk_grp_gd_result_t res;
        memset(&res, 0, sizeof res);
        res.errors = errs;
        res.nerrors = total;
        commit_done(req, &res);
        return;
    }
    typedef kp_offset_commit_request_offset_commit_request_topic_t ctopic_t;
    const bool *denied = NULL;
    void *keep = NULL;
    size_t m = 0;
    if (!allowed_topics(req, q->topics.items, nt, sizeof(ctopic_t), offsetof(ctopic_t, name), &denied, &keep, &m))
        return;
    if (denied) {
        kp_offset_commit_request_t *q2 = bk_api_req_alloc(req, 1, sizeof *q2);
        commit_authz_t *az = bk_api_req_alloc(req, 1, sizeof *az);
        if (!q2 || !az) { bk_api_req_close(req, "out of memory"); return; }
        *q2 = *q;
        q2->topics.items = keep;
        q2->topics.count = (int32_t)m;
        *az = (commit_authz_t){ q, denied };
        req->aux = az;
        req->body = q2;
    }
    bk_grp_gd_offset_commit(req->node->groups, req->body, commit_done, req);
}

/* ---- OffsetFetch ------------------------------------------------------- */

typedef kp_offset_fetch_response_offset_fetch_response_topics_t ftopic_t;
typedef kp_offset_fetch_response_offset_fetch_response_partitions_t fpart_t;
typedef kp_offset_fetch_request_offset_fetch_request_topics_t qtopic_t;

static void fpart_set(fpart_t *o, const bk_grp_gd_offset_t *x) {
    kp_offset_fetch_response_offset_fetch_response_partitions_init(o);
    o->partition_index = x->partition;
    o->committed_offset = x->offset;
    o->committed_leader_epoch = x->leader_epoch;
    o->metadata = x->metadata;
    o->error_code = x->error;
}

/* Every committed partition of the group, grouped by topic (the driver
 * gives them sorted by topic, partition). */
static int topics_all(bk_api_req_t *req, const bk_grp_gd_fetched_t *f, ftopic_t **out, size_t *nout) {
    ftopic_t *ts = bk_api_req_alloc(req, f->noffsets, sizeof *ts);
    fpart_t *ps = bk_api_req_alloc(req, f->noffsets, sizeof *ps);
    if (!ts || !ps) return KP_ERR_NOMEM;
    size_t nt = 0;
    for (size_t i = 0; i < f->noffsets; i++) {
        const bk_grp_gd_offset_t *o = &f->offsets[i];
        if (nt == 0 || !kp_slice_eq(ts[nt - 1].name, o->topic)) {
            kp_offset_fetch_response_offset_fetch_response_topics_init(&ts[nt]);
            ts[nt].name = o->topic;
            ts[nt].partitions.items = &ps[i];
            nt++;
        }
        fpart_set(&ps[i], o);
        ts[nt - 1].partitions.count++;
    }
    *out = ts;
    *nout = nt;
    return KP_OK;
}

/* The listed topics (names[nt], their partition counts) in request order:
 * the driver's offsets follow the same order. */
static int topics_listed(bk_api_req_t *req, const bk_grp_gd_fetched_t *f, const qtopic_t *qt, size_t nt, ftopic_t **out) {
    ftopic_t *ts = bk_api_req_alloc(req, nt, sizeof *ts);
    if (!ts) return KP_ERR_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < nt; i++) {
        size_t np = cnt(qt[i].partition_indexes.count);
        fpart_t *ps = bk_api_req_alloc(req, np, sizeof *ps);
        if (!ps || k + np > f->noffsets) return KP_ERR_NOMEM;
        kp_offset_fetch_response_offset_fetch_response_topics_init(&ts[i]);
        ts[i].name = qt[i].name;
        for (size_t j = 0; j < np; j++, k++) fpart_set(&ps[j], &f->offsets[k]);
        ts[i].partitions.items = ps;
        ts[i].partitions.count = (int32_t)np;
    }
    *out = ts;
    return KP_OK;
}

/* DESCRIBE on each topic (Kafka): a listed topic the principal may not
 * describe answers TOPIC_AUTHORIZATION_FAILED on each partition with no
 * offset; from "every committed partition" it is left out. Read-only: the
 * offsets were read, nothing changed. */
static void topics_authorize(bk_api_req_t *req, ftopic_t *ts, size_t *nt, bool listed) {
    size_t k = 0;
    for (size_t i = 0; i < *nt; i++) {
        if (bk_api_authorized_str(req, BK_META_OP_DESCRIBE, BK_META_RES_TOPIC, ts[i].name)) {
            ts[k++] = ts[i];
            continue;
        }
        if (!listed) continue;
        for (int32_t j = 0; j < ts[i].partitions.count; j++) {
            fpart_t *p = &ts[i].partitions.items[j];
            p->committed_offset = -1;
            p->committed_leader_epoch = -1;
            p->metadata = bk_api_str("");
            p->error_code = KP_ERROR_TOPIC_AUTHORIZATION_FAILED;
        }
        ts[k++] = ts[i];
    }
    *nt = k;
}

/* One group's topics: listed (nq >= 0) or every committed partition. */
static int fetch_topics(bk_api_req_t *req, const bk_grp_gd_fetched_t *f, const qtopic_t *qt, int32_t nq, ftopic_t **ts,
                        size_t *nt) {
    *ts = NULL;
    *nt = 0;
    int rc;
    if (nq < 0) {
        rc = topics_all(req, f, ts, nt);
    } else {
        *nt = (size_t)nq;
        rc = topics_listed(req, f, qt, (size_t)nq, ts);
    }
    if (rc == KP_OK) topics_authorize(req, *ts, nt, nq >= 0);
    return rc;
}

/* v0-7 use a separate but field-for-field identical set of types. */
static int to_v7(bk_api_req_t *req, const ftopic_t *ts, size_t nt, int16_t err, kp_offset_fetch_response_t *r) {
    kp_offset_fetch_response_offset_fetch_response_topic_t *o = bk_api_req_alloc(req, nt, sizeof *o);
    if (!o) return KP_ERR_NOMEM;
    bool part_errors = req->hdr.api_version < 2;  /* no top-level error before v2 */
    for (size_t i = 0; i < nt; i++) {
        size_t np = cnt(ts[i].partitions.count);
        kp_offset_fetch_response_offset_fetch_response_partition_t *ps = bk_api_req_alloc(req, np, sizeof *ps);
        if (!ps) return KP_ERR_NOMEM;
        kp_offset_fetch_response_offset_fetch_response_topic_init(&o[i]);
        o[i].name = ts[i].name;
        for (size_t k = 0; k < np; k++) {
            const fpart_t *p = &ts[i].partitions.items[k];
            kp_offset_fetch_response_offset_fetch_response_partition_init(&ps[k]);
            ps[k].partition_index = p->partition_index;
            ps[k].committed_offset = p->committed_offset;
            ps[k].committed_leader_epoch = p->committed_leader_epoch;
            ps[k].metadata = p->metadata;
            ps[k].error_code = part_errors ? err : p->error_code;
        }
        o[i].partitions.items = ps;
        o[i].partitions.count = (int32_t)np;
    }
    r->topics.items = o;
    r->topics.count = (int32_t)nt;
    r->error_code = err;
    return KP_OK;
}

/* The v0-7 listed topics in the v8 layout (same fields). */
static qtopic_t *v7_topics(bk_api_req_t *req, const kp_offset_fetch_request_t *q) {
    qtopic_t *qt = bk_api_req_alloc(req, cnt(q->topics.count), sizeof *qt);
    for (size_t i = 0; qt && i < cnt(q->topics.count); i++) {
        qt[i].name = q->topics.items[i].name;
        qt[i].partition_indexes.items = q->topics.items[i].partition_indexes.items;
        qt[i].partition_indexes.count = q->topics.items[i].partition_indexes.count;
    }
    return qt;
}

/* OffsetFetch v8+ with some groups refused DESCRIBE: the request as sent
 * (req->body then holds the allowed groups) and which were refused. */
typedef struct {
    const kp_offset_fetch_request_t *orig;
    const bool *denied;
} fetch_authz_t;

static void fetch_done(void *arg, const bk_grp_gd_result_t *res) {
    bk_api_req_t *req = arg;
    if (unsent(req, res)) return;
    const kp_offset_fetch_request_t *q = req->body;
    kp_offset_fetch_response_t r;
    kp_offset_fetch_response_init(&r);
    if (req->hdr.api_version < 8) {
        ftopic_t *ts;
        size_t nt;
        /* null topics (v2+: all) arrive as count -1; v0-1 always list */
        qtopic_t *qt = v7_topics(req, q);
        if (!qt || res->nfetched != 1 || fetch_topics(req, &res->fetched[0], qt, q->topics.count, &ts, &nt) != KP_OK ||
            to_v7(req, ts, nt, res->fetched[0].error, &r) != KP_OK) {
            bk_api_req_close(req, "out of memory");
            return;
        }
        bk_api_req_respond(req, &r);
        return;
    }
    size_t ng = res->nfetched;
    const fetch_authz_t *az = req->aux;     /* set when some groups were refused */
    size_t no = az ? cnt(az->orig->groups.count) : 0;
    kp_offset_fetch_response_offset_fetch_response_group_t *gs = bk_api_req_alloc(req, ng + no, sizeof *gs);
    if (!gs) { bk_api_req_close(req, "out of memory"); return; }
    size_t nrefused = 0;
    for (size_t i = 0; i < no; i++) {     /* the refused ones after the others */
        if (!az->denied[i]) continue;
        kp_offset_fetch_response_offset_fetch_response_group_t *d = &gs[ng + nrefused++];
        kp_offset_fetch_response_offset_fetch_response_group_init(d);
        d->group_id = az->orig->groups.items[i].group_id;
        d->error_code = KP_ERROR_GROUP_AUTHORIZATION_FAILED;
    }
    for (size_t i = 0; i < ng; i++) {
        const kp_offset_fetch_request_offset_fetch_request_group_t *g = &q->groups.items[i];
        kp_offset_fetch_response_offset_fetch_response_group_init(&gs[i]);
        gs[i].group_id = g->group_id;
        gs[i].error_code = res->fetched[i].error;
        ftopic_t *ts;
        size_t nt;
        if (fetch_topics(req, &res->fetched[i], g->topics.items, g->topics.count, &ts, &nt) != KP_OK) {
            bk_api_req_close(req, "out of memory");
            return;
        }
        gs[i].topics.items = ts;
        gs[i].topics.count = (int32_t)nt;
    }
    r.groups.items = gs;
    r.groups.count = (int32_t)(ng + nrefused);
    bk_api_req_respond(req, &r);
}

void bk_api_h_offset_fetch(bk_api_req_t *req) {
    /* DESCRIBE on the group (v0-7: one group). v8+: per group, a refused
     * one answers GROUP_AUTHORIZATION_FAILED and never reaches the
     * coordinator (Kafka) */
    const kp_offset_fetch_request_t *q = req->body;
    bool ok = req->hdr.api_version < 8 ? bk_api_authorized_str(req, BK_META_OP_DESCRIBE, BK_META_RES_GROUP, q->group_id)
                                       : true;
    int32_t ndenied = 0;
    for (int32_t i = 0; req->hdr.api_version >= 8 && i < q->groups.count; i++)
        ndenied += !bk_api_authorized_str(req, BK_META_OP_DESCRIBE, BK_META_RES_GROUP, q->groups.items[i].group_id);
    if (ndenied > 0 && ndenied == q->groups.count) {
        kp_offset_fetch_response_offset_fetch_response_group_t *gs = bk_api_req_alloc(req, (size_t)ndenied, sizeof *gs);
        if (!gs) { bk_api_req_close(req, "out of memory"); return; }
        for (int32_t i = 0; i < ndenied; i++) {
            kp_offset_fetch_response_offset_fetch_response_group_init(&gs[i]);
            gs[i].group_id = q->groups.items[i].group_id;
            gs[i].error_code = KP_ERROR_GROUP_AUTHORIZATION_FAILED;
        }
        kp_offset_fetch_response_t r;
        kp_offset_fetch_response_init(&r);
        r.groups.items = gs;
        r.groups.count = ndenied;
        bk_api_req_respond(req, &r);
        return;
    }
    ok = ok && ndenied == 0;
    if (!ok && req->hdr.api_version < 8) {
        kp_offset_fetch_response_t r;
        kp_offset_fetch_response_init(&r);
        r.error_code = KP_ERROR_GROUP_AUTHORIZATION_FAILED;
        bk_api_req_respond(req, &r);
        return;
    }
    if (ndenied > 0) {      /* v8+, some refused: the coordinator sees the others */
        size_t ng = cnt(q->groups.count);
        bool *denied = bk_api_req_alloc(req, ng, sizeof *denied);
        kp_offset_fetch_request_offset_fetch_request_group_t *keep = bk_api_req_alloc(req, ng, sizeof *keep);
        kp_offset_fetch_request_t *q2 = bk_api_req_alloc(req, 1, sizeof *q2);
        fetch_authz_t *az = bk_api_req_alloc(req, 1, sizeof *az);
        if (!denied || !keep || !q2 || !az) { bk_api_req_close(req, "out of memory"); return; }
        size_t m = 0;
        for (size_t i = 0; i < ng; i++) {
            denied[i] = !bk_api_authorized_str(req, BK_META_OP_DESCRIBE, BK_META_RES_GROUP, q->groups.items[i].group_id);
            if (!denied[i]) keep[m++] = q->groups.items[i];
        }
        *q2 = *q;
        q2->groups.items = keep;
        q2->groups.count = (int32_t)m;
        *az = (fetch_authz_t){ q, denied };
        req->aux = az;
        req->body = q2;
        ok = true;
    }
    if (!ok) { bk_api_req_close(req, "OffsetFetch for a group the principal may not DESCRIBE"); return; }
    bk_grp_gd_offset_fetch(req->node->groups, req->body, req->hdr.api_version, fetch_done, req);
}

/* ---- OffsetDelete ------------------------------------------------------- */

/* Topics the principal may not READ are left out of what the coordinator
 * sees (req->body then holds the rest) and answered
 * TOPIC_AUTHORIZATION_FAILED, as Kafka does. */
typedef struct {
    const kp_offset_delete_request_t *orig;
    const bool *denied;
} delete_authz_t;

static void offset_delete_done(void *arg, const bk_grp_gd_result_t *res) {
    bk_api_req_t *req = arg;
    if (unsent(req, res)) return;
    const kp_offset_delete_request_t *q = req->body;
    const delete_authz_t *az = req->aux;
    kp_offset_delete_response_t r;
    kp_offset_delete_response_init(&r);
    r.error_code = res->error;
    if (r.error_code == 0) {
        size_t nt = cnt(q->topics.count), k = 0, nd = 0;
        for (size_t i = 0; az && i < cnt(az->orig->topics.count); i++) nd += az->denied[i];
        kp_offset_delete_response_offset_delete_response_topic_t *rt = bk_api_req_alloc(req, nt + nd, sizeof *rt);
        if (!rt) { bk_api_req_close(req, "out of memory"); return; }
        for (size_t i = 0; i < nt; i++) {
            size_t np = cnt(q->topics.items[i].partitions.count);
            kp_offset_delete_response_offset_delete_response_partition_t *ps = bk_api_req_alloc(req, np, sizeof *ps);
            if (!ps) { bk_api_req_close(req, "out of memory"); return; }
            kp_offset_delete_response_offset_delete_response_topic_init(&rt[i]);
            rt[i].name = q->topics.items[i].name;
            for (size_t j = 0; j < np; j++, k++) {
                kp_offset_delete_response_offset_delete_response_partition_init(&ps[j]);
                ps[j].partition_index = q->topics.items[i].partitions.items[j].partition_index;
                ps[j].error_code = res->errors[k];
            }
            rt[i].partitions.items = ps;
            rt[i].partitions.count = (int32_t)np;
        }
        for (size_t i = 0, o = nt; az && i < cnt(az->orig->topics.count); i++) {
            if (!az->denied[i]) continue;
            const kp_offset_delete_request_offset_delete_request_topic_t *t = &az->orig->topics.items[i];
            size_t np = cnt(t->partitions.count);
            kp_offset_delete_response_offset_delete_response_partition_t *ps = bk_api_req_alloc(req, np, sizeof *ps);
            if (!ps) { bk_api_req_close(req, "out of memory"); return; }
            kp_offset_delete_response_offset_delete_response_topic_init(&rt[o]);
            rt[o].name = t->name;
            for (size_t j = 0; j < np; j++) {
                kp_offset_delete_response_offset_delete_response_partition_init(&ps[j]);
                ps[j].partition_index = t->partitions.items[j].partition_index;
                ps[j].error_code = KP_ERROR_TOPIC_AUTHORIZATION_FAILED;
            }
            rt[o].partitions.items = ps;
            rt[o].partitions.count = (int32_t)np;
            o++;
        }
        r.topics.items = rt;
        r.topics.count = (int32_t)(nt + nd);
    }
    bk_api_req_respond(req, &r);
}

/* DELETE on the group (else the top-level GROUP_AUTHORIZATION_FAILED,
 * nothing deleted), READ on each topic (Kafka). */
void bk_api_h_offset_delete(bk_api_req_t *req) {
    const kp_offset_delete_request_t *q = req->body;
    if (!bk_api_authorized_str(req, BK_META_OP_DELETE, BK_META_RES_GROUP, q->group_id)) {
        kp_offset_delete_response_t r;
        kp_offset_delete_response_init(&r);
        r.error_code = KP_ERROR_GROUP_AUTHORIZATION_FAILED;
        bk_api_req_respond(req, &r);
        return;
    }
    typedef kp_offset_delete_request_offset_delete_request_topic_t dtopic_t;
    size_t nt = cnt(q->topics.count);
    const bool *denied = NULL;
    void *keep = NULL;
    size_t m = 0;
    if (!allowed_topics(req, q->topics.items, nt, sizeof(dtopic_t), offsetof(dtopic_t, name), &denied, &keep, &m))
        return;
    if (denied) {
        kp_offset_delete_request_t *q2 = bk_api_req_alloc(req, 1, sizeof *q2);
        delete_authz_t *az = bk_api_req_alloc(req, 1, sizeof *az);
        if (!q2 || !az) { bk_api_req_close(req, "out of memory"); return; }
        *q2 = *q;
        q2->topics.items = keep;
        q2->topics.count = (int32_t)m;
        *az = (delete_authz_t){ q, denied };
        req->aux = az;
        req->body = q2;
    }
    bk_grp_gd_offset_delete(req->node->groups, req->body, offset_delete_done, req);
}
