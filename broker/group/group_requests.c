/* broker/group/group_requests.c — the group APIs on the driver (see
 * "requests" in group_driver.h): each entry turns a decoded request into
 * core calls on the group's core, completes them (records appended,
 * replication awaited) and hands the result to the caller's callback.
 *
 * Memory: what a core call needs beyond the request (its input arrays, the
 * per-item errors) is allocated here and freed before the entry returns;
 * a result that has to wait for replication is copied by bk_gd_reply. So
 * nothing here points into the request after the entry returns. Bounds:
 * the arrays follow the decoded request's counts (bytes that arrived,
 * capped by the request arena). */
#include "broker/group/group_driver_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "protocol/kp_errors.h"

static size_t cnt(int32_t c) { return c > 0 ? (size_t)c : 0; }

/* Non-nullable in old versions: null -> "". */
static kp_str_t nn(kp_str_t s) { return kp_slice_is_null(s) ? kp_slice_cstr("") : s; }

/* A request that could not get the memory to run: nothing was done, and the
 * caller closes the connection (the client retries). */
static void fail_nomem(bk_grp_gd_done_fn done, void *arg) {
    bk_grp_gd_result_t res = { .unsent = "out of memory" };
    done(arg, &res);
}

/* ---- JoinGroup / SyncGroup ------------------------------------------------- */

/* The core of group_id with the request held under *token, or NULL when
 * the request has been answered here (no core here, table full). */
static bk_grp_coord_t *hold_for(bk_grp_gd_t *gd, kp_str_t group_id, bool join, bk_grp_gd_done_fn done,
                                bk_grp_gd_alive_fn alive, void *arg, uint64_t *token) {
    int16_t err = 0;
    bk_grp_coord_t *c = bk_grp_gd_coord(gd, group_id, &err);
    if (c) {
        *token = bk_gd_token(gd);
        if (!bk_gd_hold(gd, *token, c->partition, join, done, alive, arg)) {
            c = NULL;
            err = KP_ERROR_COORDINATOR_NOT_AVAILABLE;
        }
    }
    if (!c) {
        bk_grp_gd_result_t res = { .error = err };
        bk_gd_reply_groups(gd, &group_id, 1, &res, done, arg);
    }
    return c;
}

void bk_grp_gd_join_group(bk_grp_gd_t *gd, const kp_join_group_request_t *q, int16_t version, kp_str_t client_id,
                      kp_str_t client_host, bk_grp_gd_done_fn done, bk_grp_gd_alive_fn alive, void *arg) {
    size_t np = cnt(q->protocols.count);
    bk_grp_protocol_in_t *ps = calloc(np ? np : 1, sizeof *ps);
    if (!ps) { fail_nomem(done, arg); return; }
    uint64_t token = 0;
    bk_grp_coord_t *c = hold_for(gd, q->group_id, true, done, alive, arg, &token);
    if (!c) { free(ps); return; }
    bk_grp_join_t j;
    memset(&j, 0, sizeof j);
    j.group_id = q->group_id;
    j.member_id = nn(q->member_id);
    j.instance_id = q->group_instance_id;
    j.client_id = client_id;
    j.client_host = client_host;
    j.protocol_type = q->protocol_type;
    j.session_timeout_ms = q->session_timeout_ms;
    j.rebalance_timeout_ms = version >= 1 ? q->rebalance_timeout_ms : q->session_timeout_ms;
    for (size_t i = 0; i < np; i++) {
        ps[i].name = q->protocols.items[i].name;
        ps[i].metadata = q->protocols.items[i].metadata;
    }
    j.protocols = ps;
    j.nprotocols = np;
    /* v0-v3 clients know nothing of MEMBER_ID_REQUIRED */
    j.require_known_member_id = version >= 4;
    j.token = token;
    bk_grp_out_t out;
    bk_grp_out_init(&out);
    bk_grp_join(c, &j, bk_net_now_ms(), &out);   /* copies what it keeps */
    free(ps);
    (void)bk_gd_finish(gd, c, &out);          /* delivers the answer if it is out */
    bk_grp_out_free(&out);
}

void bk_grp_gd_sync_group(bk_grp_gd_t *gd, const kp_sync_group_request_t *q, int16_t version, bk_grp_gd_done_fn done,
                      bk_grp_gd_alive_fn alive, void *arg) {
    size_t na = cnt(q->assignments.count);
    bk_grp_assign_in_t *as = calloc(na ? na : 1, sizeof *as);
    if (!as) { fail_nomem(done, arg); return; }
    uint64_t token = 0;
    bk_grp_coord_t *c = hold_for(gd, q->group_id, false, done, alive, arg, &token);
    if (!c) { free(as); return; }
    bk_grp_sync_t s;
    memset(&s, 0, sizeof s);
    s.group_id = q->group_id;
    s.member_id = nn(q->member_id);
    s.instance_id = q->group_instance_id;
    s.generation = q->generation_id;
    s.protocol_type = version >= 5 ? q->protocol_type : kp_slice_null();
    s.protocol = version >= 5 ? q->protocol_name : kp_slice_null();
    for (size_t i = 0; i < na; i++) {
        as[i].member_id = q->assignments.items[i].member_id;
        as[i].assignment = q->assignments.items[i].assignment;
    }
    s.assignments = as;
    s.nassignments = na;
    s.token = token;
    bk_grp_out_t out;
    bk_grp_out_init(&out);
    bk_grp_sync(c, &s, bk_net_now_ms(), &out);
    free(as);
    (void)bk_gd_finish(gd, c, &out);
    bk_grp_out_free(&out);
}

/* ---- Heartbeat / LeaveGroup ------------------------------------------------- */

void bk_grp_gd_heartbeat(bk_grp_gd_t *gd, const kp_heartbeat_request_t *q, bk_grp_gd_done_fn done, void *arg) {
    bk_grp_gd_result_t res = { 0 };
    bk_grp_coord_t *c = bk_grp_gd_coord(gd, q->group_id, &res.error);
    if (c)
        res.error = bk_grp_heartbeat(c, q->group_id, nn(q->member_id), q->group_instance_id, q->generation_id,
                                     bk_net_now_ms());
    done(arg, &res);
}

void bk_grp_gd_leave_group(bk_grp_gd_t *gd, const kp_leave_group_request_t *q, int16_t version, bk_grp_gd_done_fn done,
                       void *arg) {
    kp_str_t gid = q->group_id;
    bool batched = version >= 3;
    size_t n = batched ? cnt(q->members.count) : 1;
    bk_grp_leave_in_t *in = calloc(n ? n : 1, sizeof *in);
    int16_t *errs = calloc(n ? n : 1, sizeof *errs);
    if (!in || !errs) { free(in); free(errs); fail_nomem(done, arg); return; }
    for (size_t i = 0; i < n; i++) {
        in[i].member_id = batched ? nn(q->members.items[i].member_id) : nn(q->member_id);
        in[i].instance_id = batched ? q->members.items[i].group_instance_id : kp_slice_null();
    }
    bk_grp_gd_result_t res = { .errors = errs, .nerrors = n };
    bk_grp_coord_t *c = bk_grp_gd_coord(gd, gid, &res.error);
    if (c) {
        bk_grp_out_t out;
        bk_grp_out_init(&out);
        res.error = bk_grp_leave(c, gid, in, n, bk_net_now_ms(), &out, errs);
        if (bk_gd_finish(gd, c, &out) != KP_OK && res.error == 0) res.error = KP_ERROR_COORDINATOR_NOT_AVAILABLE;
        bk_grp_out_free(&out);
    }
    free(in);
    bk_gd_reply_groups(gd, &gid, 1, &res, done, arg);
    free(errs);
}

/* ---- ListGroups / DescribeGroups / DeleteGroups -------------------------------- */

typedef struct {
    const bk_grp_t **v;
    size_t n, cap;
    bool nomem;
    const kp_list_groups_request_t *q;   /* its states (v4+) and types (v5+) filters */
} list_ctx_t;

/* Empty filter: all; else a case-insensitive match of one of its names
 * (unknown names match nothing). */
static bool filter_has(const kp_str_t *names, int32_t n, const char *name) {
    if (n <= 0) return true;
    size_t len = strlen(name);
    for (int32_t i = 0; i < n; i++)
        if (names[i].len == len && strncasecmp((const char *)names[i].p, name, len) == 0) return true;
    return false;
}

static void list_one(void *ctx, const bk_grp_t *g) {
    list_ctx_t *l = ctx;
    if (l->nomem) return;
    /* a consumer group's states (Assigning, Reconciling, ...) and type
     * (KIP-848's filter: "classic" / "consumer") by name */
    if (!filter_has(l->q->states_filter.items, l->q->states_filter.count, bk_grp_group_state_name(g))) return;
    if (!filter_has(l->q->types_filter.items, l->q->types_filter.count, bk_grp_type_name(g))) return;
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 64;
        const bk_grp_t **nv = realloc(l->v, ncap * sizeof *nv);
        if (!nv) { l->nomem = true; return; }
        l->v = nv;
        l->cap = ncap;
    }
    l->v[l->n++] = g;
}

void bk_grp_gd_list_groups(bk_grp_gd_t *gd, const kp_list_groups_request_t *q, bk_grp_gd_done_fn done, void *arg) {
    list_ctx_t l = { NULL, 0, 0, false, q };
    bk_grp_gd_result_t res = { 0 };
    bk_grp_gd_sync(gd);
    const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&gd->node->img, BK_GRP_GD_TOPIC);
    for (int32_t p = 0; t && p < t->nparts; p++) {
        bk_grp_coord_t *c = bk_grp_gd_coord_at(gd, p);
        if (!c) continue;
        /* a loading core reports its error whatever the filters */
        int16_t err = bk_grp_list(c, NULL, 0, list_one, &l);
        if (err) res.error = err;
    }
    if (l.nomem) {
        free(l.v);
        fail_nomem(done, arg);
        return;
    }
    res.groups = l.v;
    res.ngroups = l.n;
    done(arg, &res);
    free(l.v);
}

void bk_grp_gd_describe_groups(bk_grp_gd_t *gd, const kp_describe_groups_request_t *q, bk_grp_gd_done_fn done, void *arg) {
    size_t n = cnt(q->groups.count);
    int16_t *errs = calloc(n ? n : 1, sizeof *errs);
    const bk_grp_t **gs = calloc(n ? n : 1, sizeof *gs);
    if (!errs || !gs) { free(errs); free(gs); fail_nomem(done, arg); return; }
    /* Once synced, a lookup below can only add cores, never drop one whose
     * groups the earlier entries already point at. */
    bk_grp_gd_sync(gd);
    for (size_t i = 0; i < n; i++) {
        kp_str_t id = q->groups.items[i];
        bk_grp_coord_t *c = bk_grp_gd_coord(gd, id, &errs[i]);
        if (c) errs[i] = bk_grp_describe(c, id, &gs[i]);
        if (errs[i]) gs[i] = NULL;
    }
    bk_grp_gd_result_t res = { .errors = errs, .nerrors = n, .groups = gs, .ngroups = n };
    done(arg, &res);
    free(errs);
    free(gs);
}

void bk_grp_gd_delete_groups(bk_grp_gd_t *gd, const kp_delete_groups_request_t *q, bk_grp_gd_done_fn done, void *arg) {
    size_t n = cnt(q->groups_names.count);
    int16_t *errs = calloc(n ? n : 1, sizeof *errs);
    if (!errs) { fail_nomem(done, arg); return; }
    bk_grp_out_t out;
    bk_grp_out_init(&out);
    for (size_t i = 0; i < n; i++) {
        kp_str_t id = q->groups_names.items[i];
        bk_grp_coord_t *c = bk_grp_gd_coord(gd, id, &errs[i]);
        if (!c) continue;
        errs[i] = bk_grp_delete(c, id, bk_net_now_ms(), &out);
        if (bk_gd_finish(gd, c, &out) != KP_OK && errs[i] == 0) errs[i] = KP_ERROR_COORDINATOR_NOT_AVAILABLE;
    }
    bk_grp_out_free(&out);
    bk_grp_gd_result_t res = { .errors = errs, .nerrors = n };
    bk_gd_reply_groups(gd, q->groups_names.items, n, &res, done, arg);
    free(errs);
}

/* ---- OffsetCommit ---------------------------------------------------------------- */

void bk_grp_gd_offset_commit(bk_grp_gd_t *gd, const kp_offset_commit_request_t *q, bk_grp_gd_done_fn done, void *arg) {
    kp_str_t gid = q->group_id;
    size_t total = 0;
    for (size_t i = 0; i < cnt(q->topics.count); i++) total += cnt(q->topics.items[i].partitions.count);
    int16_t *errs = calloc(total ? total : 1, sizeof *errs);
    int16_t *cerrs = calloc(total ? total : 1, sizeof *cerrs);
    bk_grp_commit_part_t *ps = calloc(total ? total : 1, sizeof *ps);
    if (!errs || !cerrs || !ps) { free(errs); free(cerrs); free(ps); fail_nomem(done, arg); return; }
    int16_t top = 0;
    bk_grp_coord_t *c = bk_grp_gd_coord(gd, gid, &top);
    /* the partitions that exist, in request order, into the core's commit;
     * the others are answered here (Kafka stores nothing for them) */
    size_t n = 0, k = 0;
    for (size_t i = 0; i < cnt(q->topics.count); i++) {
        const kp_offset_commit_request_offset_commit_request_topic_t *t = &q->topics.items[i];
        for (size_t j = 0; j < cnt(t->partitions.count); j++, k++) {
            const kp_offset_commit_request_offset_commit_request_partition_t *p = &t->partitions.items[j];
            if (top) { errs[k] = top; continue; }
            if (!bk_gd_part_exists(gd, t->name, p->partition_index)) {
                errs[k] = KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
                continue;
            }
            errs[k] = -1;   /* the core's, below */
            ps[n++] = (bk_grp_commit_part_t){ t->name, p->partition_index, p->committed_offset,
                                              p->committed_leader_epoch, p->committed_metadata, p->commit_timestamp };
        }
    }
    assert(k == total);
    if (c && n > 0) {
        /* generation -1 with an empty member id is a simple consumer */
        bk_grp_commit_t cm = { gid, nn(q->member_id), q->group_instance_id, q->generation_id_or_member_epoch,
                               q->retention_time_ms, ps, n };
        bk_grp_out_t out;
        bk_grp_out_init(&out);
        (void)bk_grp_offset_commit(c, &cm, bk_net_now_ms(), &out, cerrs);
        if (bk_gd_finish(gd, c, &out) != KP_OK)
            for (size_t i = 0; i < n; i++)
                if (cerrs[i] == 0) cerrs[i] = KP_ERROR_COORDINATOR_NOT_AVAILABLE;
        bk_grp_out_free(&out);
    }
    for (size_t i = 0, j = 0; i < total; i++)
        if (errs[i] == -1) errs[i] = cerrs[j++];
    free(cerrs);
    free(ps);
    bk_grp_gd_result_t res = { .errors = errs, .nerrors = total };
    bk_gd_reply_groups(gd, &gid, 1, &res, done, arg);
    free(errs);
}

/* ---- OffsetFetch ------------------------------------------------------------------- */

/* One listed topic of either OffsetFetch layout (v0-7 / v8+). */
typedef struct {
    kp_str_t name;
    const int32_t *parts;
    size_t nparts;
} ftopic_in_t;

/* As OffsetFetch answers it: no leader epoch or metadata without an offset. */
static bk_grp_gd_offset_t fetched_offset(kp_str_t topic, int32_t partition, int64_t offset, int32_t epoch, kp_str_t md) {
    bk_grp_gd_offset_t o = { topic, partition, offset, offset < 0 ? -1 : epoch,
                         offset < 0 || kp_slice_is_null(md) ? kp_slice_cstr("") : md, 0 };
    return o;
}

/* Every committed partition of the group (sorted by topic, partition). */
static int fetch_all(bk_grp_coord_t *c, bk_grp_gd_fetched_t *f) {
    const bk_grp_offset_t *offs = NULL;
    size_t n = 0;
    f->error = bk_grp_offset_fetch_all(c, f->group_id, &offs, &n);
    bk_grp_gd_offset_t *v = calloc(n ? n : 1, sizeof *v);
    if (!v) return KP_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        kp_str_t topic = { (const uint8_t *)offs[i].topic.p, offs[i].topic.len };
        kp_str_t md = { (const uint8_t *)offs[i].metadata.p, offs[i].metadata.len };
        v[i] = fetched_offset(topic, offs[i].partition, offs[i].offset, offs[i].leader_epoch, md);
    }
    f->offsets = v;
    f->noffsets = n;
    return KP_OK;
}

/* The listed partitions in request order; c NULL: none committed. */
static int fetch_listed(bk_grp_gd_t *gd, bk_grp_coord_t *c, const ftopic_in_t *ts, size_t nt, bool require_stable,
                        bk_grp_gd_fetched_t *f) {
    size_t total = 0;
    for (size_t i = 0; i < nt; i++) total += ts[i].nparts;
    bk_grp_tp_t *tp = calloc(total ? total : 1, sizeof *tp);
    bk_grp_fetched_t *res = calloc(total ? total : 1, sizeof *res);
    bk_grp_gd_offset_t *v = calloc(total ? total : 1, sizeof *v);
    if (!tp || !res || !v) { free(tp); free(res); free(v); return KP_ERR_NOMEM; }
    size_t k = 0;
    for (size_t i = 0; i < nt; i++)
        for (size_t j = 0; j < ts[i].nparts; j++, k++) {
            tp[k] = (bk_grp_tp_t){ ts[i].name, ts[i].parts[j] };
            res[k] = (bk_grp_fetched_t){ -1, -1, kp_slice_cstr("") };
        }
    if (c && nt > 0) f->error = bk_grp_offset_fetch(c, f->group_id, tp, total, res);
    for (k = 0; k < total; k++) {
        v[k] = fetched_offset(tp[k].topic, tp[k].partition, res[k].offset, res[k].leader_epoch, res[k].metadata);
        /* KIP-447: a transaction holds an offset for it (bk_grp_gd_txn_complete) */
        if (c && require_stable && bk_gd_txn_pending(gd, c->partition, f->group_id, tp[k].topic, tp[k].partition))
            v[k].error = KP_ERROR_UNSTABLE_OFFSET_COMMIT;
    }
    free(tp);
    free(res);
    f->offsets = v;
    f->noffsets = total;
    return KP_OK;
}

/* One group: the listed topics, or every committed partition (nt < 0). */
static int fetch_group(bk_grp_gd_t *gd, kp_str_t gid, const ftopic_in_t *ts, int32_t nt, bool require_stable,
                       bk_grp_gd_fetched_t *f) {
    *f = (bk_grp_gd_fetched_t){ gid, 0, NULL, 0 };
    bk_grp_coord_t *c = bk_grp_gd_coord(gd, gid, &f->error);
    if (nt < 0) return c ? fetch_all(c, f) : KP_OK;
    return fetch_listed(gd, c, ts, (size_t)nt, require_stable, f);
}

/* The v0-7 topics (null: count -1) in the common layout. */
static ftopic_in_t *topics_v7(const kp_offset_fetch_request_t *q) {
    size_t n = cnt(q->topics.count);
    ftopic_in_t *ts = calloc(n ? n : 1, sizeof *ts);
    for (size_t i = 0; ts && i < n; i++)
        ts[i] = (ftopic_in_t){ q->topics.items[i].name, q->topics.items[i].partition_indexes.items,
                               cnt(q->topics.items[i].partition_indexes.count) };
    return ts;
}

static ftopic_in_t *topics_v8(const kp_offset_fetch_request_offset_fetch_request_group_t *g) {
    size_t n = cnt(g->topics.count);
    ftopic_in_t *ts = calloc(n ? n : 1, sizeof *ts);
    for (size_t i = 0; ts && i < n; i++)
        ts[i] = (ftopic_in_t){ g->topics.items[i].name, g->topics.items[i].partition_indexes.items,
                               cnt(g->topics.items[i].partition_indexes.count) };
    return ts;
}

void bk_grp_gd_offset_fetch(bk_grp_gd_t *gd, const kp_offset_fetch_request_t *q, int16_t version, bk_grp_gd_done_fn done,
                        void *arg) {
    bool require_stable = version >= 7 && q->require_stable;
    size_t ng = version < 8 ? 1 : cnt(q->groups.count);
    bk_grp_gd_fetched_t *fs = calloc(ng ? ng : 1, sizeof *fs);
    int rc = fs ? KP_OK : KP_ERR_NOMEM;
    for (size_t i = 0; rc == KP_OK && i < ng; i++) {
        /* null topics (v2+: every committed partition) arrive as count -1 */
        ftopic_in_t *ts = version < 8 ? topics_v7(q) : topics_v8(&q->groups.items[i]);
        kp_str_t gid = version < 8 ? q->group_id : q->groups.items[i].group_id;
        int32_t nt = version < 8 ? q->topics.count : q->groups.items[i].topics.count;
        rc = ts ? fetch_group(gd, gid, ts, nt, require_stable, &fs[i]) : KP_ERR_NOMEM;
        free(ts);
        /* v9+: a consumer group's member fetching says who it is (KIP-848):
         * an unknown member or an old epoch gets the group-level error */
        if (rc == KP_OK && version >= 9 && !fs[i].error && !kp_slice_is_null(q->groups.items[i].member_id)) {
            int16_t e = 0;
            bk_grp_coord_t *c = bk_grp_gd_coord(gd, gid, &e);
            const bk_grp_t *g = c ? bk_grp_find(c, gid) : NULL;
            if (g && g->cg)
                fs[i].error = bk_grp_cg_member_check(g, q->groups.items[i].member_id, q->groups.items[i].member_epoch);
        }
    }
    if (rc == KP_OK) {
        bk_grp_gd_result_t res = { .fetched = fs, .nfetched = ng };
        done(arg, &res);
    } else {
        fail_nomem(done, arg);
    }
    for (size_t i = 0; fs && i < ng; i++) free((void *)fs[i].offsets);
    free(fs);
}

/* ---- OffsetDelete --------------------------------------------------------------------- */

void bk_grp_gd_offset_delete(bk_grp_gd_t *gd, const kp_offset_delete_request_t *q, bk_grp_gd_done_fn done, void *arg) {
    kp_str_t gid = q->group_id;
    size_t total = 0;
    for (size_t i = 0; i < cnt(q->topics.count); i++) total += cnt(q->topics.items[i].partitions.count);
    bk_grp_tp_t *tp = calloc(total ? total : 1, sizeof *tp);
    int16_t *errs = calloc(total ? total : 1, sizeof *errs);
    if (!tp || !errs) { free(tp); free(errs); fail_nomem(done, arg); return; }
    size_t n = 0;
    for (size_t i = 0; i < cnt(q->topics.count); i++)
        for (size_t k = 0; k < cnt(q->topics.items[i].partitions.count); k++)
            tp[n++] = (bk_grp_tp_t){ q->topics.items[i].name, q->topics.items[i].partitions.items[k].partition_index };
    bk_grp_gd_result_t res = { .errors = errs, .nerrors = n };
    bk_grp_coord_t *c = bk_grp_gd_coord(gd, gid, &res.error);
    if (c) {
        bk_grp_out_t out;
        bk_grp_out_init(&out);
        res.error = bk_grp_offset_delete(c, gid, tp, n, bk_net_now_ms(), &out, errs);
        if (bk_gd_finish(gd, c, &out) != KP_OK && res.error == 0) res.error = KP_ERROR_COORDINATOR_NOT_AVAILABLE;
        bk_grp_out_free(&out);
    }
    for (size_t k = 0; res.error == 0 && k < n; k++)
        if (!bk_gd_part_exists(gd, tp[k].topic, tp[k].partition)) errs[k] = KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
    free(tp);
    bk_gd_reply_groups(gd, &gid, 1, &res, done, arg);
    free(errs);
}

/* ---- TxnOffsetCommit ------------------------------------------------------------------- */

typedef kp_txn_offset_commit_request_txn_offset_commit_request_topic_t toc_topic_t;
typedef kp_txn_offset_commit_request_txn_offset_commit_request_partition_t toc_part_t;

/* The offsets of partitions that exist as the producer's transactional
 * batch in the group's __consumer_offsets partition (a replay holds them
 * until the marker). NONE, or COORDINATOR_NOT_AVAILABLE when the append
 * failed. */
static int16_t log_offsets(bk_grp_gd_t *gd, bk_grp_coord_t *c, const kp_txn_offset_commit_request_t *q, int16_t version,
                           int64_t now) {
    bk_grp_out_t out;
    bk_grp_out_init(&out);
    size_t n = 0;
    for (size_t i = 0; i < cnt(q->topics.count); i++) {
        const toc_topic_t *t = &q->topics.items[i];
        for (size_t k = 0; k < cnt(t->partitions.count); k++) {
            const toc_part_t *p = &t->partitions.items[k];
            if (!bk_gd_part_exists(gd, t->name, p->partition_index)) continue;
            bk_grp_txn_offset_t o = { q->group_id, t->name, p->partition_index, p->committed_offset,
                                      version >= 2 ? p->committed_leader_epoch : -1, p->committed_metadata, now };
            bk_grp_rec_txn_offset(&out, &o);
            n++;
        }
    }
    int rc = n ? bk_gd_append_txn(gd, c, &out, q->producer_id, q->producer_epoch) : KP_OK;
    bk_grp_out_free(&out);
    return rc == KP_OK ? 0 : KP_ERROR_COORDINATOR_NOT_AVAILABLE;
}

/* Holds one partition's offset until the producer's marker: NONE or the
 * error for that partition. */
static int16_t hold_offset(bk_grp_txn_offsets_t *pend, const kp_txn_offset_commit_request_t *q, int16_t version,
                           const char *group, const char *topic, const toc_part_t *p, int64_t now) {
    if (!pend) return KP_ERROR_UNKNOWN_SERVER_ERROR;
    char *md = kp_slice_is_null(p->committed_metadata) ? NULL : kp_slice_strdup(p->committed_metadata);
    if (!kp_slice_is_null(p->committed_metadata) && !md) return KP_ERROR_UNKNOWN_SERVER_ERROR;
    bk_grp_txn_pending_t o = { q->producer_id, (char *)group, (char *)topic, p->partition_index, p->committed_offset,
                               version >= 2 ? p->committed_leader_epoch : -1, md, now, -1 };
    int rc = bk_grp_txn_offsets_add(pend, &o);   /* copies the strings */
    free(md);
    return rc == KP_OK ? 0 : rc == KP_ERR_TOO_LARGE ? KP_ERROR_COORDINATOR_NOT_AVAILABLE : KP_ERROR_UNKNOWN_SERVER_ERROR;
}

void bk_grp_gd_txn_offset_commit(bk_grp_gd_t *gd, const kp_txn_offset_commit_request_t *q, int16_t version,
                             bk_grp_gd_done_fn done, void *arg) {
    kp_str_t gid = q->group_id;
    size_t total = 0;
    for (size_t i = 0; i < cnt(q->topics.count); i++) total += cnt(q->topics.items[i].partitions.count);
    int16_t *errs = calloc(total ? total : 1, sizeof *errs);
    char *group = kp_slice_strdup(gid);
    if (!errs || !group) { free(errs); free(group); fail_nomem(done, arg); return; }
    int64_t now = bk_net_now_ms();
    int16_t err = KP_ERROR_COORDINATOR_NOT_AVAILABLE;
    bk_grp_coord_t *c = gd ? bk_grp_gd_coord(gd, gid, &err) : NULL;
    if (c) {
        /* member and generation are checked only when given (v3+) */
        bk_grp_commit_t chk = { gid, version >= 3 ? q->member_id : kp_slice_cstr(""),
                                version >= 3 ? q->group_instance_id : kp_slice_null(),
                                version >= 3 ? q->generation_id : -1, -1, NULL, 0 };
        err = bk_grp_txn_commit_check(c, &chk);
    }
    bk_grp_txn_offsets_t *pend = c && !err ? bk_gd_txn_offsets(gd, c->partition) : NULL;
    if (!err) err = log_offsets(gd, c, q, version, now);
    size_t k = 0;
    for (size_t i = 0; i < cnt(q->topics.count); i++) {
        const toc_topic_t *t = &q->topics.items[i];
        char *topic = err ? NULL : kp_slice_strdup(t->name);
        for (size_t j = 0; j < cnt(t->partitions.count); j++, k++) {
            const toc_part_t *p = &t->partitions.items[j];
            errs[k] = err;
            if (errs[k]) continue;
            if (!bk_gd_part_exists(gd, t->name, p->partition_index)) errs[k] = KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
            else if (!topic) errs[k] = KP_ERROR_UNKNOWN_SERVER_ERROR;
            else errs[k] = hold_offset(pend, q, version, group, topic, p, now);
        }
        free(topic);
    }
    assert(k == total);
    free(group);
    bk_grp_gd_result_t res = { .errors = errs, .nerrors = total };
    /* like OffsetCommit: answered once the ISR has the batch */
    if (gd) bk_gd_reply_groups(gd, &gid, 1, &res, done, arg);
    else done(arg, &res);
    free(errs);
}
