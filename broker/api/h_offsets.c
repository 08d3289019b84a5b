/* broker/api/h_offsets.c — OffsetCommit, OffsetFetch (v8+: several groups),
 * OffsetDelete on the group's core (group_driver.h). Commits are appended
 * to __consumer_offsets and fsynced before the answer. Partitions of topics
 * that do not exist get UNKNOWN_TOPIC_OR_PARTITION and never reach the
 * core (Kafka does the same). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/group/group_driver.h"
#include "broker/txn/txn_driver.h"
#include "protocol/kp_errors.h"

typedef kp_offset_commit_request_offset_commit_request_topic_t ctopic_t;
typedef kp_offset_commit_response_offset_commit_response_topic_t crtopic_t;
typedef kp_offset_commit_response_offset_commit_response_partition_t crpart_t;

static bool part_exists(bk_req_t *req, kp_str_t topic, int32_t partition) {
    char name[BK_TOPIC_NAME_MAX + 1];
    if (topic.len > BK_TOPIC_NAME_MAX) return false;
    memcpy(name, topic.p, topic.len);
    name[topic.len] = '\0';
    const bk_topic_t *t = bk_image_topic_by_name(&req->node->img, name);
    return t && partition >= 0 && partition < t->nparts;
}

static size_t cnt(int32_t c) { return c > 0 ? (size_t)c : 0; }

/* ---- OffsetCommit ------------------------------------------------------ */

/* The partitions that exist, in request order, into the core's commit. */
static int build_commit(bk_req_t *req, bk_grp_commit_t *cm, crtopic_t *rt, int16_t top_err) {
    const kp_offset_commit_request_t *q = req->body;
    size_t total = 0;
    for (int32_t i = 0; i < q->topics.count; i++) total += cnt(q->topics.items[i].partitions.count);
    bk_grp_commit_part_t *ps = bk_req_alloc(req, total, sizeof *ps);
    if (!ps) return KP_ERR_NOMEM;
    size_t n = 0;
    for (size_t i = 0; i < cnt(q->topics.count); i++) {
        const ctopic_t *t = &q->topics.items[i];
        size_t np = cnt(t->partitions.count);
        crpart_t *rp = bk_req_alloc(req, np, sizeof *rp);
        if (!rp) return KP_ERR_NOMEM;
        kp_offset_commit_response_offset_commit_response_topic_init(&rt[i]);
        rt[i].name = t->name;
        rt[i].partitions.items = rp;
        rt[i].partitions.count = (int32_t)np;
        for (size_t k = 0; k < np; k++) {
            const kp_offset_commit_request_offset_commit_request_partition_t *p = &t->partitions.items[k];
            kp_offset_commit_response_offset_commit_response_partition_init(&rp[k]);
            rp[k].partition_index = p->partition_index;
            rp[k].error_code = top_err;
            if (top_err) continue;
            if (!part_exists(req, t->name, p->partition_index)) {
                rp[k].error_code = KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
                continue;
            }
            rp[k].error_code = -1;   /* filled from the core's errors below */
            ps[n].topic = t->name;
            ps[n].partition = p->partition_index;
            ps[n].offset = p->committed_offset;
            ps[n].leader_epoch = p->committed_leader_epoch;
            ps[n].metadata = p->committed_metadata;
            ps[n].commit_ts_ms = p->commit_timestamp;
            n++;
        }
    }
    cm->group_id = q->group_id;
    cm->member_id = kp_slice_is_null(q->member_id) ? bk_str("") : q->member_id;
    cm->instance_id = q->group_instance_id;
    cm->generation = q->generation_id_or_member_epoch;
    cm->retention_ms = q->retention_time_ms;
    cm->parts = ps;
    cm->nparts = n;
    return KP_OK;
}

void bk_h_offset_commit(bk_req_t *req) {
    const kp_offset_commit_request_t *q = req->body;
    bk_gd_t *gd = req->node->groups;
    size_t nt = cnt(q->topics.count);
    crtopic_t *rt = bk_req_alloc(req, nt, sizeof *rt);
    if (!rt) { bk_req_close(req, "out of memory"); return; }
    int16_t top = 0;
    bk_grp_coord_t *c = bk_gd_coord(gd, q->group_id, &top);
    bk_grp_commit_t cm;
    memset(&cm, 0, sizeof cm);
    if (build_commit(req, &cm, rt, top) != KP_OK) { bk_req_close(req, "out of memory"); return; }
    int16_t *errs = bk_req_alloc(req, cm.nparts, sizeof *errs);
    if (!errs) { bk_req_close(req, "out of memory"); return; }
    if (c && cm.nparts > 0) {
        bk_grp_out_t out;
        bk_grp_out_init(&out);
        (void)bk_grp_offset_commit(c, &cm, bk_now_ms(), &out, errs);
        if (bk_gd_finish(gd, c, &out) != KP_OK)
            for (size_t i = 0; i < cm.nparts; i++)
                if (errs[i] == 0) errs[i] = KP_ERROR_COORDINATOR_NOT_AVAILABLE;
        bk_grp_out_free(&out);
    }
    size_t k = 0;
    for (size_t i = 0; i < nt; i++)
        for (int32_t j = 0; j < rt[i].partitions.count; j++)
            if (rt[i].partitions.items[j].error_code == -1) rt[i].partitions.items[j].error_code = errs[k++];
    kp_offset_commit_response_t r;
    kp_offset_commit_response_init(&r);
    r.topics.items = rt;
    r.topics.count = (int32_t)nt;
    bk_gd_respond(gd, q->group_id, req, &r);
}

/* ---- OffsetFetch ------------------------------------------------------- */

typedef kp_offset_fetch_response_offset_fetch_response_topics_t ftopic_t;
typedef kp_offset_fetch_response_offset_fetch_response_partitions_t fpart_t;
typedef kp_offset_fetch_request_offset_fetch_request_topics_t qtopic_t;

static void fpart_set(fpart_t *o, int32_t partition, int64_t offset, int32_t epoch, kp_str_t md) {
    kp_offset_fetch_response_offset_fetch_response_partitions_init(o);
    o->partition_index = partition;
    o->committed_offset = offset;
    o->committed_leader_epoch = offset < 0 ? -1 : epoch;
    o->metadata = offset < 0 || kp_slice_is_null(md) ? bk_str("") : md;
}

/* Every committed partition of the group, grouped by topic (offsets are
 * sorted by topic, partition). */
static int fetch_all(bk_req_t *req, bk_grp_coord_t *c, kp_str_t gid, ftopic_t **out, size_t *nout, int16_t *err) {
    const bk_grp_offset_t *offs = NULL;
    size_t n = 0;
    *err = bk_grp_offset_fetch_all(c, gid, &offs, &n);
    ftopic_t *ts = bk_req_alloc(req, n, sizeof *ts);
    fpart_t *ps = bk_req_alloc(req, n, sizeof *ps);
    if (!ts || !ps) return KP_ERR_NOMEM;
    size_t nt = 0;
    for (size_t i = 0; i < n; i++) {
        const bk_grp_offset_t *o = &offs[i];
        if (nt == 0 || ts[nt - 1].name.len != o->topic.len || memcmp(ts[nt - 1].name.p, o->topic.p, o->topic.len) != 0) {
            kp_offset_fetch_response_offset_fetch_response_topics_init(&ts[nt]);
            ts[nt].name.p = (const uint8_t *)o->topic.p;
            ts[nt].name.len = o->topic.len;
            ts[nt].partitions.items = &ps[i];
            nt++;
        }
        kp_str_t md = { (const uint8_t *)o->metadata.p, o->metadata.len };
        fpart_set(&ps[i], o->partition, o->offset, o->leader_epoch, md);
        ts[nt - 1].partitions.count++;
    }
    *out = ts;
    *nout = nt;
    return KP_OK;
}

/* The listed partitions (topics[n]); c == NULL: every partition gets err. */
static int fetch_listed(bk_req_t *req, bk_grp_coord_t *c, kp_str_t gid, const qtopic_t *qt, size_t n,
                        ftopic_t **out, int16_t *err) {
    ftopic_t *ts = bk_req_alloc(req, n, sizeof *ts);
    if (!ts) return KP_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        size_t np = cnt(qt[i].partition_indexes.count);
        bk_grp_tp_t *tp = bk_req_alloc(req, np, sizeof *tp);
        bk_grp_fetched_t *res = bk_req_alloc(req, np, sizeof *res);
        fpart_t *ps = bk_req_alloc(req, np, sizeof *ps);
        if (!tp || !res || !ps) return KP_ERR_NOMEM;
        for (size_t k = 0; k < np; k++) {
            tp[k].topic = qt[i].name;
            tp[k].partition = qt[i].partition_indexes.items[k];
            res[k].offset = -1;
            res[k].leader_epoch = -1;
            res[k].metadata = bk_str("");
        }
        if (c) *err = bk_grp_offset_fetch(c, gid, tp, np, res);
        kp_offset_fetch_response_offset_fetch_response_topics_init(&ts[i]);
        ts[i].name = qt[i].name;
        for (size_t k = 0; k < np; k++) fpart_set(&ps[k], tp[k].partition, res[k].offset, res[k].leader_epoch, res[k].metadata);
        /* KIP-447: a transaction holds an offset for it (txn_driver.h) */
        const kp_offset_fetch_request_t *q = req->body;
        for (size_t k = 0; c && q->require_stable && req->hdr.api_version >= 7 && k < np; k++)
            if (bk_gd_txn_pending(req->node->groups, c->partition, gid, tp[k].topic, tp[k].partition))
                ps[k].error_code = KP_ERROR_UNSTABLE_OFFSET_COMMIT;
        ts[i].partitions.items = ps;
        ts[i].partitions.count = (int32_t)np;
    }
    *out = ts;
    return KP_OK;
}

static int fetch_group(bk_req_t *req, kp_str_t gid, const qtopic_t *qt, int32_t nq, ftopic_t **ts, size_t *nt,
                       int16_t *err) {
    *err = 0;
    *ts = NULL;
    *nt = 0;
    bk_grp_coord_t *c = bk_gd_coord(req->node->groups, gid, err);
    if (nq < 0) return c ? fetch_all(req, c, gid, ts, nt, err) : KP_OK;
    *nt = (size_t)nq;
    return fetch_listed(req, c, gid, qt, (size_t)nq, ts, err);
}

/* v0-7 use a separate but field-for-field identical set of types. */
static int to_v7(bk_req_t *req, const ftopic_t *ts, size_t nt, int16_t err, kp_offset_fetch_response_t *r) {
    kp_offset_fetch_response_offset_fetch_response_topic_t *o = bk_req_alloc(req, nt, sizeof *o);
    if (!o) return KP_ERR_NOMEM;
    bool part_errors = req->hdr.api_version < 2;  /* no top-level error before v2 */
    for (size_t i = 0; i < nt; i++) {
        size_t np = cnt(ts[i].partitions.count);
        kp_offset_fetch_response_offset_fetch_response_partition_t *ps = bk_req_alloc(req, np, sizeof *ps);
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

void bk_h_offset_fetch(bk_req_t *req) {
    const kp_offset_fetch_request_t *q = req->body;
    kp_offset_fetch_response_t r;
    kp_offset_fetch_response_init(&r);
    if (req->hdr.api_version < 8) {
        ftopic_t *ts;
        size_t nt;
        int16_t err;
        /* null topics (v2+: all) arrive as count -1; v0-1 always list */
        int32_t nq = q->topics.count;
        qtopic_t *qt = bk_req_alloc(req, cnt(nq), sizeof *qt);
        if (!qt) { bk_req_close(req, "out of memory"); return; }
        for (int32_t i = 0; i < nq; i++) {
            qt[i].name = q->topics.items[i].name;
            qt[i].partition_indexes.items = q->topics.items[i].partition_indexes.items;
            qt[i].partition_indexes.count = q->topics.items[i].partition_indexes.count;
        }
        if (fetch_group(req, q->group_id, qt, nq, &ts, &nt, &err) != KP_OK) { bk_req_close(req, "out of memory"); return; }
        if (to_v7(req, ts, nt, err, &r) != KP_OK) { bk_req_close(req, "out of memory"); return; }
        bk_req_respond(req, &r);
        return;
    }
    size_t ng = cnt(q->groups.count);
    kp_offset_fetch_response_offset_fetch_response_group_t *gs = bk_req_alloc(req, ng, sizeof *gs);
    if (!gs) { bk_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < ng; i++) {
        const kp_offset_fetch_request_offset_fetch_request_group_t *g = &q->groups.items[i];
        kp_offset_fetch_response_offset_fetch_response_group_init(&gs[i]);
        gs[i].group_id = g->group_id;
        ftopic_t *ts;
        size_t nt;
        if (fetch_group(req, g->group_id, g->topics.items, g->topics.count, &ts, &nt, &gs[i].error_code) != KP_OK) {
            bk_req_close(req, "out of memory");
            return;
        }
        gs[i].topics.items = ts;
        gs[i].topics.count = (int32_t)nt;
    }
    r.groups.items = gs;
    r.groups.count = (int32_t)ng;
    bk_req_respond(req, &r);
}

/* ---- OffsetDelete ------------------------------------------------------- */

void bk_h_offset_delete(bk_req_t *req) {
    const kp_offset_delete_request_t *q = req->body;
    bk_gd_t *gd = req->node->groups;
    kp_offset_delete_response_t r;
    kp_offset_delete_response_init(&r);
    size_t nt = cnt(q->topics.count), total = 0;
    for (size_t i = 0; i < nt; i++) total += cnt(q->topics.items[i].partitions.count);
    bk_grp_tp_t *tp = bk_req_alloc(req, total, sizeof *tp);
    int16_t *errs = bk_req_alloc(req, total, sizeof *errs);
    kp_offset_delete_response_offset_delete_response_topic_t *rt = bk_req_alloc(req, nt, sizeof *rt);
    if (!tp || !errs || !rt) { bk_req_close(req, "out of memory"); return; }
    size_t n = 0;
    for (size_t i = 0; i < nt; i++)
        for (size_t k = 0; k < cnt(q->topics.items[i].partitions.count); k++) {
            tp[n].topic = q->topics.items[i].name;
            tp[n].partition = q->topics.items[i].partitions.items[k].partition_index;
            n++;
        }
    bk_grp_coord_t *c = bk_gd_coord(gd, q->group_id, &r.error_code);
    if (c) {
        bk_grp_out_t out;
        bk_grp_out_init(&out);
        r.error_code = bk_grp_offset_delete(c, q->group_id, tp, n, bk_now_ms(), &out, errs);
        if (bk_gd_finish(gd, c, &out) != KP_OK && r.error_code == 0) r.error_code = KP_ERROR_COORDINATOR_NOT_AVAILABLE;
        bk_grp_out_free(&out);
    }
    if (r.error_code == 0) {
        n = 0;
        for (size_t i = 0; i < nt; i++) {
            size_t np = cnt(q->topics.items[i].partitions.count);
            kp_offset_delete_response_offset_delete_response_partition_t *ps = bk_req_alloc(req, np, sizeof *ps);
            if (!ps) { bk_req_close(req, "out of memory"); return; }
            kp_offset_delete_response_offset_delete_response_topic_init(&rt[i]);
            rt[i].name = q->topics.items[i].name;
            for (size_t k = 0; k < np; k++, n++) {
                kp_offset_delete_response_offset_delete_response_partition_init(&ps[k]);
                ps[k].partition_index = tp[n].partition;
                ps[k].error_code = part_exists(req, tp[n].topic, tp[n].partition) ? errs[n]
                                                                                 : KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
            }
            rt[i].partitions.items = ps;
            rt[i].partitions.count = (int32_t)np;
        }
        r.topics.items = rt;
        r.topics.count = (int32_t)nt;
    }
    bk_gd_respond(gd, q->group_id, req, &r);
}
