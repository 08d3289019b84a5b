/* broker/api/h_groups.c — FindCoordinator and the classic group protocol:
 * JoinGroup, SyncGroup (answers held by token until the core emits them),
 * Heartbeat, LeaveGroup, ListGroups, DescribeGroups, DeleteGroups. Each
 * request -> the core of the group's __consumer_offsets partition
 * (group_driver.h) -> records appended -> answers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/group/group_driver.h"
#include "broker/txn/txn_driver.h"
#include "protocol/kp_errors.h"

#define KEY_TYPE_GROUP 0
#define KEY_TYPE_TXN 1

/* "/host" as Kafka reports client hosts (peer "host:port"). */
static kp_str_t client_host(bk_req_t *req) {
    const char *colon = strrchr(req->peer, ':');
    size_t n = colon ? (size_t)(colon - req->peer) : strlen(req->peer);
    char *s = bk_req_alloc(req, n + 2, 1);
    if (!s) return bk_str("");
    s[0] = '/';
    memcpy(s + 1, req->peer, n);
    return bk_str(s);
}

/* A view of a core-owned string (NULL stays null). */
static kp_str_t gs(bk_grp_str_t s) {
    kp_str_t r = { (const uint8_t *)s.p, s.len };
    return r;
}

/* Non-nullable in old versions: null -> "". */
static kp_str_t nn(kp_str_t s) { return kp_slice_is_null(s) ? bk_str("") : s; }

/* ---- FindCoordinator ----------------------------------------------------- */

static int16_t find_one(bk_req_t *req, int8_t key_type, kp_str_t key, int32_t *node, kp_str_t *host,
                        int32_t *port) {
    const char *h = "";
    int16_t e;
    if (key_type == KEY_TYPE_GROUP) {
        e = bk_gd_find(req->node->groups, key, node, &h, port);
    } else if (key_type == KEY_TYPE_TXN && req->node->txns) {
        e = bk_td_find(req->node->txns, key, node, &h, port);
    } else {
        *node = -1;
        *port = -1;
        e = key_type == KEY_TYPE_TXN ? KP_ERROR_COORDINATOR_NOT_AVAILABLE : KP_ERROR_INVALID_REQUEST;
    }
    *host = bk_str(h);
    return e;
}

void bk_h_find_coordinator(bk_req_t *req) {
    const kp_find_coordinator_request_t *q = req->body;
    kp_find_coordinator_response_t r;
    kp_find_coordinator_response_init(&r);
    if (req->hdr.api_version < 4) {
        r.error_code = find_one(req, q->key_type, q->key, &r.node_id, &r.host, &r.port);
        if (r.error_code) r.error_message = bk_str(kp_error_name(r.error_code));
        bk_req_respond(req, &r);
        return;
    }
    size_t n = q->coordinator_keys.count > 0 ? (size_t)q->coordinator_keys.count : 0;
    kp_find_coordinator_response_coordinator_t *cs = bk_req_alloc(req, n, sizeof *cs);
    if (!cs) { bk_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < n; i++) {
        kp_find_coordinator_response_coordinator_init(&cs[i]);
        cs[i].key = q->coordinator_keys.items[i];
        cs[i].error_code = find_one(req, q->key_type, cs[i].key, &cs[i].node_id, &cs[i].host, &cs[i].port);
        if (cs[i].error_code) cs[i].error_message = bk_str(kp_error_name(cs[i].error_code));
    }
    r.coordinators.items = cs;
    r.coordinators.count = (int32_t)n;
    bk_req_respond(req, &r);
}

/* ---- JoinGroup / SyncGroup answers ---------------------------------------- */

static void answer_join(bk_req_t *req, const bk_grp_resp_t *x, int16_t error) {
    int16_t v = req->hdr.api_version;
    kp_join_group_response_t r;
    kp_join_group_response_init(&r);
    r.generation_id = -1;
    r.protocol_name = v >= 7 ? kp_slice_null() : bk_str("");
    r.leader = bk_str("");
    r.member_id = bk_str("");
    r.error_code = error;
    if (x) {
        r.error_code = x->error;
        r.generation_id = x->generation;
        r.protocol_type = x->protocol_type;
        r.protocol_name = v >= 7 ? x->protocol : nn(x->protocol);
        r.leader = nn(x->leader);
        r.member_id = nn(x->member_id);
        /* before v9 a rejoining static leader simply runs the assignment again */
        r.skip_assignment = v >= 9 && x->skip_assignment;
        kp_join_group_response_join_group_response_member_t *ms = bk_req_alloc(req, x->nmembers, sizeof *ms);
        if (!ms) { bk_req_close(req, "out of memory"); return; }
        for (size_t i = 0; i < x->nmembers; i++) {
            kp_join_group_response_join_group_response_member_init(&ms[i]);
            ms[i].member_id = x->members[i].member_id;
            ms[i].group_instance_id = x->members[i].instance_id;
            ms[i].metadata = x->members[i].metadata;
        }
        r.members.items = ms;
        r.members.count = (int32_t)x->nmembers;
    }
    /* v0-v3 clients know nothing of MEMBER_ID_REQUIRED (never sent to them,
     * see require_known_member_id) */
    bk_gd_respond(req->node->groups, ((const kp_join_group_request_t *)req->body)->group_id, req, &r);
}

static void answer_sync(bk_req_t *req, const bk_grp_resp_t *x, int16_t error) {
    kp_sync_group_response_t r;
    kp_sync_group_response_init(&r);
    r.error_code = error;
    r.assignment = kp_slice_null();
    r.assignment.p = (const uint8_t *)"";
    if (x) {
        r.error_code = x->error;
        r.protocol_type = x->protocol_type;
        r.protocol_name = x->protocol;
        if (x->assignment.p) r.assignment = x->assignment;
    }
    bk_gd_respond(req->node->groups, ((const kp_sync_group_request_t *)req->body)->group_id, req, &r);
}

void bk_h_group_answer(bk_req_t *req, const bk_grp_resp_t *resp, int16_t error) {
    if (req->hdr.api_key == KP_API_JOIN_GROUP) answer_join(req, resp, error);
    else answer_sync(req, resp, error);
}

/* Runs a Join/Sync core call for a held request; answers it if the core
 * answered at once. */
typedef void (*core_call_fn)(bk_grp_coord_t *c, bk_req_t *req, uint64_t token, bk_grp_out_t *out);

static void held_call(bk_req_t *req, kp_str_t group_id, core_call_fn call) {
    bk_gd_t *gd = req->node->groups;
    int16_t err = 0;
    bk_grp_coord_t *c = bk_gd_coord(gd, group_id, &err);
    if (!c) { bk_h_group_answer(req, NULL, err); return; }
    uint64_t token = bk_gd_token(gd);
    if (!bk_gd_hold(gd, token, req)) { bk_h_group_answer(req, NULL, KP_ERROR_COORDINATOR_NOT_AVAILABLE); return; }
    bk_grp_out_t out;
    bk_grp_out_init(&out);
    call(c, req, token, &out);
    (void)bk_gd_finish(gd, c, &out);   /* answers req if its answer is out */
    bk_grp_out_free(&out);
}

static void join_call(bk_grp_coord_t *c, bk_req_t *req, uint64_t token, bk_grp_out_t *out) {
    const kp_join_group_request_t *q = req->body;
    size_t np = q->protocols.count > 0 ? (size_t)q->protocols.count : 0;
    bk_grp_protocol_in_t *ps = bk_req_alloc(req, np, sizeof *ps);
    bk_grp_join_t j;
    memset(&j, 0, sizeof j);
    j.group_id = q->group_id;
    j.member_id = nn(q->member_id);
    j.instance_id = q->group_instance_id;
    j.client_id = req->hdr.client_id;
    j.client_host = client_host(req);
    j.protocol_type = q->protocol_type;
    j.session_timeout_ms = q->session_timeout_ms;
    j.rebalance_timeout_ms = req->hdr.api_version >= 1 ? q->rebalance_timeout_ms : q->session_timeout_ms;
    for (size_t i = 0; ps && i < np; i++) {
        ps[i].name = q->protocols.items[i].name;
        ps[i].metadata = q->protocols.items[i].metadata;
    }
    j.protocols = ps;
    j.nprotocols = ps ? np : 0;
    j.require_known_member_id = req->hdr.api_version >= 4;
    j.token = token;
    bk_grp_join(c, &j, bk_now_ms(), out);
}

void bk_h_join_group(bk_req_t *req) {
    const kp_join_group_request_t *q = req->body;
    held_call(req, q->group_id, join_call);
}

static void sync_call(bk_grp_coord_t *c, bk_req_t *req, uint64_t token, bk_grp_out_t *out) {
    const kp_sync_group_request_t *q = req->body;
    size_t na = q->assignments.count > 0 ? (size_t)q->assignments.count : 0;
    bk_grp_assign_in_t *as = bk_req_alloc(req, na, sizeof *as);
    bk_grp_sync_t s;
    memset(&s, 0, sizeof s);
    s.group_id = q->group_id;
    s.member_id = nn(q->member_id);
    s.instance_id = q->group_instance_id;
    s.generation = q->generation_id;
    s.protocol_type = req->hdr.api_version >= 5 ? q->protocol_type : kp_slice_null();
    s.protocol = req->hdr.api_version >= 5 ? q->protocol_name : kp_slice_null();
    for (size_t i = 0; as && i < na; i++) {
        as[i].member_id = q->assignments.items[i].member_id;
        as[i].assignment = q->assignments.items[i].assignment;
    }
    s.assignments = as;
    s.nassignments = as ? na : 0;
    s.token = token;
    bk_grp_sync(c, &s, bk_now_ms(), out);
}

void bk_h_sync_group(bk_req_t *req) {
    const kp_sync_group_request_t *q = req->body;
    held_call(req, q->group_id, sync_call);
}

/* ---- Heartbeat / LeaveGroup ------------------------------------------------ */

void bk_h_heartbeat(bk_req_t *req) {
    const kp_heartbeat_request_t *q = req->body;
    kp_heartbeat_response_t r;
    kp_heartbeat_response_init(&r);
    bk_grp_coord_t *c = bk_gd_coord(req->node->groups, q->group_id, &r.error_code);
    if (c)
        r.error_code = bk_grp_heartbeat(c, q->group_id, nn(q->member_id), q->group_instance_id,
                                        q->generation_id, bk_now_ms());
    bk_req_respond(req, &r);
}

void bk_h_leave_group(bk_req_t *req) {
    const kp_leave_group_request_t *q = req->body;
    bool batched = req->hdr.api_version >= 3;
    size_t n = batched ? (q->members.count > 0 ? (size_t)q->members.count : 0) : 1;
    bk_grp_leave_in_t *in = bk_req_alloc(req, n, sizeof *in);
    int16_t *errs = bk_req_alloc(req, n, sizeof *errs);
    kp_leave_group_response_member_response_t *ms = bk_req_alloc(req, n, sizeof *ms);
    if (!in || !errs || !ms) { bk_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < n; i++) {
        in[i].member_id = batched ? nn(q->members.items[i].member_id) : nn(q->member_id);
        in[i].instance_id = batched ? q->members.items[i].group_instance_id : kp_slice_null();
    }
    kp_leave_group_response_t r;
    kp_leave_group_response_init(&r);
    bk_gd_t *gd = req->node->groups;
    bk_grp_coord_t *c = bk_gd_coord(gd, q->group_id, &r.error_code);
    if (c) {
        bk_grp_out_t out;
        bk_grp_out_init(&out);
        r.error_code = bk_grp_leave(c, q->group_id, in, n, bk_now_ms(), &out, errs);
        if (bk_gd_finish(gd, c, &out) != KP_OK && r.error_code == 0)
            r.error_code = KP_ERROR_COORDINATOR_NOT_AVAILABLE;
        bk_grp_out_free(&out);
    }
    if (!batched) {
        if (r.error_code == 0 && c) r.error_code = errs[0];
    } else if (r.error_code == 0) {
        for (size_t i = 0; i < n; i++) {
            kp_leave_group_response_member_response_init(&ms[i]);
            ms[i].member_id = in[i].member_id;
            ms[i].group_instance_id = in[i].instance_id;
            ms[i].error_code = errs[i];
        }
        r.members.items = ms;
        r.members.count = (int32_t)n;
    }
    bk_gd_respond(gd, q->group_id, req, &r);
}

/* ---- ListGroups / DescribeGroups / DeleteGroups ----------------------------- */

typedef struct {
    bk_req_t *req;
    kp_list_groups_response_listed_group_t *v;
    size_t n, cap;
    const kp_str_t *types;
    size_t ntypes;
    bool nomem;
} list_ctx_t;

static bool type_match(const list_ctx_t *l, const bk_grp_t *g) {
    if (l->ntypes == 0) return true;
    for (size_t i = 0; i < l->ntypes; i++)   /* only classic groups exist here */
        if (l->types[i].len == 7 && strncasecmp((const char *)l->types[i].p, "classic", 7) == 0) return true;
    (void)g;
    return false;
}

static void list_one(void *ctx, const bk_grp_t *g) {
    list_ctx_t *l = ctx;
    if (l->nomem || !type_match(l, g)) return;
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 64;
        kp_list_groups_response_listed_group_t *nv = bk_req_alloc(l->req, ncap, sizeof *nv);
        if (!nv) { l->nomem = true; return; }
        if (l->n) memcpy(nv, l->v, l->n * sizeof *nv);
        l->v = nv;
        l->cap = ncap;
    }
    kp_list_groups_response_listed_group_t *o = &l->v[l->n++];
    kp_list_groups_response_listed_group_init(o);
    o->group_id = gs(g->id);
    o->protocol_type = nn(gs(g->protocol_type));
    o->group_state = bk_str(bk_grp_state_name(g->state));
    o->group_type = bk_str("classic");
}

void bk_h_list_groups(bk_req_t *req) {
    const kp_list_groups_request_t *q = req->body;
    bk_gd_t *gd = req->node->groups;
    size_t ns = q->states_filter.count > 0 ? (size_t)q->states_filter.count : 0;
    bk_grp_state_t *st = bk_req_alloc(req, ns, sizeof *st);
    if (!st) { bk_req_close(req, "out of memory"); return; }
    size_t k = 0;
    for (size_t i = 0; i < ns; i++)
        if (bk_grp_state_parse(q->states_filter.items[i], &st[k])) k++;
    kp_list_groups_response_t r;
    kp_list_groups_response_init(&r);
    list_ctx_t l = { req, NULL, 0, 0, q->types_filter.items,
                     q->types_filter.count > 0 ? (size_t)q->types_filter.count : 0, false };
    bk_gd_sync(gd);
    /* a state filter naming only unknown states matches nothing */
    bool none = ns > 0 && k == 0;
    const bk_topic_t *t = bk_image_topic_by_name(&req->node->img, BK_GD_TOPIC);
    for (int32_t p = 0; !none && t && p < t->nparts; p++) {
        int16_t err = 0;
        bk_grp_coord_t *c = bk_gd_coord_at(gd, p);
        if (!c) continue;
        err = bk_grp_list(c, st, k, list_one, &l);
        if (err) r.error_code = err;
    }
    if (l.nomem) { bk_req_close(req, "out of memory"); return; }
    r.groups.items = l.v;
    r.groups.count = (int32_t)l.n;
    bk_req_respond(req, &r);
}

typedef kp_describe_groups_response_described_group_t dgroup_t;
typedef kp_describe_groups_response_described_group_member_t dmember_t;

static int describe_one(bk_req_t *req, kp_str_t id, dgroup_t *o) {
    kp_describe_groups_response_described_group_init(o);
    o->group_id = id;
    o->group_state = bk_str("Dead");
    o->protocol_type = bk_str("");
    o->protocol_data = bk_str("");
    o->authorized_operations = INT32_MIN;
    bk_grp_coord_t *c = bk_gd_coord(req->node->groups, id, &o->error_code);
    if (!c) return KP_OK;
    const bk_grp_t *g = NULL;
    o->error_code = bk_grp_describe(c, id, &g);
    if (o->error_code || !g) return KP_OK;
    o->group_state = bk_str(bk_grp_state_name(g->state));
    o->protocol_type = nn(gs(g->protocol_type));
    o->protocol_data = nn(gs(g->protocol));
    dmember_t *ms = bk_req_alloc(req, g->nmembers, sizeof *ms);
    if (!ms) return KP_ERR_NOMEM;
    bool stable = g->state == BK_GRP_STABLE;
    for (size_t i = 0; i < g->nmembers; i++) {
        const bk_grp_member_t *m = &g->members[i];
        kp_describe_groups_response_described_group_member_init(&ms[i]);
        ms[i].member_id = nn(gs(m->member_id));
        ms[i].group_instance_id = gs(m->instance_id);
        ms[i].client_id = nn(gs(m->client_id));
        ms[i].client_host = nn(gs(m->client_host));
        ms[i].member_metadata = stable ? bk_grp_member_metadata(g, m) : bk_str("");
        if (!ms[i].member_metadata.p) ms[i].member_metadata = bk_str("");
        ms[i].member_assignment.p = (const uint8_t *)(stable && m->assignment.p ? m->assignment.p : "");
        ms[i].member_assignment.len = stable && m->assignment.p ? m->assignment.len : 0;
    }
    o->members.items = ms;
    o->members.count = (int32_t)g->nmembers;
    return KP_OK;
}

void bk_h_describe_groups(bk_req_t *req) {
    const kp_describe_groups_request_t *q = req->body;
    size_t n = q->groups.count > 0 ? (size_t)q->groups.count : 0;
    dgroup_t *gs = bk_req_alloc(req, n, sizeof *gs);
    if (!gs) { bk_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < n; i++)
        if (describe_one(req, q->groups.items[i], &gs[i]) != KP_OK) { bk_req_close(req, "out of memory"); return; }
    kp_describe_groups_response_t r;
    kp_describe_groups_response_init(&r);
    r.groups.items = gs;
    r.groups.count = (int32_t)n;
    bk_req_respond(req, &r);
}

void bk_h_delete_groups(bk_req_t *req) {
    const kp_delete_groups_request_t *q = req->body;
    bk_gd_t *gd = req->node->groups;
    size_t n = q->groups_names.count > 0 ? (size_t)q->groups_names.count : 0;
    kp_delete_groups_response_deletable_group_result_t *rs = bk_req_alloc(req, n, sizeof *rs);
    if (!rs) { bk_req_close(req, "out of memory"); return; }
    bk_grp_out_t out;
    bk_grp_out_init(&out);
    for (size_t i = 0; i < n; i++) {
        kp_delete_groups_response_deletable_group_result_init(&rs[i]);
        rs[i].group_id = q->groups_names.items[i];
        bk_grp_coord_t *c = bk_gd_coord(gd, rs[i].group_id, &rs[i].error_code);
        if (!c) continue;
        rs[i].error_code = bk_grp_delete(c, rs[i].group_id, bk_now_ms(), &out);
        if (bk_gd_finish(gd, c, &out) != KP_OK && rs[i].error_code == 0)
            rs[i].error_code = KP_ERROR_COORDINATOR_NOT_AVAILABLE;
    }
    bk_grp_out_free(&out);
    kp_delete_groups_response_t r;
    kp_delete_groups_response_init(&r);
    r.results.items = rs;
    r.results.count = (int32_t)n;
    bk_gd_respond_groups(gd, q->groups_names.items, n, req, &r);
}
