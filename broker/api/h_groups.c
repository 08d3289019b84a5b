/* broker/api/h_groups.c — FindCoordinator and the classic group protocol:
 * JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ListGroups, DescribeGroups,
 * DeleteGroups. Each decoded request goes to the group driver
 * (group_driver.h: the core of the group's __consumer_offsets partition,
 * records appended and replicated); its completion callback builds the
 * answer here, keeping the response-side version rules. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/api/groups_int.h"
#include "broker/meta/acl.h"
#include "broker/group/group_driver.h"
#include "broker/txn/txn_driver.h"
#include "protocol/kp_errors.h"

#define KEY_TYPE_GROUP 0
#define KEY_TYPE_TXN 1

/* Non-nullable in old versions: null -> "". */
static kp_str_t nn(kp_str_t s) { return kp_slice_is_null(s) ? bk_api_str("") : s; }

/* ---- FindCoordinator ----------------------------------------------------- */

static int16_t find_one(bk_api_req_t *req, int8_t key_type, kp_str_t key, int32_t *node, kp_str_t *host,
                        int32_t *port) {
    const char *h = "";
    int16_t e;
    if (key_type == KEY_TYPE_GROUP) {
        e = bk_grp_gd_find(req->node->groups, key, node, &h, port);
    } else if (key_type == KEY_TYPE_TXN && req->node->txns) {
        e = bk_txn_td_find(req->node->txns, key, node, &h, port);
    } else {
        *node = -1;
        *port = -1;
        e = key_type == KEY_TYPE_TXN ? KP_ERROR_COORDINATOR_NOT_AVAILABLE : KP_ERROR_INVALID_REQUEST;
    }
    /* the coordinator's endpoint on the listener the client came in on */
    const bk_meta_broker_t *b = e == 0 && *node >= 0 ? bk_meta_image_broker(&req->node->img, *node) : NULL;
    const bk_meta_endpoint_t *ep = b ? bk_node_broker_endpoint(req->node, b, req->listener) : NULL;
    if (b && !ep) {
        *node = -1;
        *port = -1;
        h = "";
        e = KP_ERROR_COORDINATOR_NOT_AVAILABLE;
    } else if (ep) {
        h = ep->host;
        *port = ep->port;
    }
    *host = bk_api_str(h);
    return e;
}

/* FindCoordinator needs DESCRIBE on the group / transactional id. */
static int16_t coord_denied(bk_api_req_t *req, int8_t key_type, kp_str_t key) {
    if (key_type == 1)
        return bk_api_authorized_str(req, BK_META_OP_DESCRIBE, BK_META_RES_TRANSACTIONAL_ID, key)
                   ? 0 : KP_ERROR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    return bk_api_authorized_str(req, BK_META_OP_DESCRIBE, BK_META_RES_GROUP, key) ? 0 : KP_ERROR_GROUP_AUTHORIZATION_FAILED;
}

/* The group APIs need READ on the group: answered before the coordinator
 * sees the request. */
static bool group_denied(bk_api_req_t *req, kp_str_t group, void (*done)(void *, const bk_grp_gd_result_t *)) {
    if (bk_api_authorized_str(req, BK_META_OP_READ, BK_META_RES_GROUP, group)) return false;
    bk_grp_gd_result_t res;
    memset(&res, 0, sizeof res);
    res.error = KP_ERROR_GROUP_AUTHORIZATION_FAILED;
    done(req, &res);
    return true;
}

void bk_api_h_find_coordinator(bk_api_req_t *req) {
    const kp_find_coordinator_request_t *q = req->body;
    kp_find_coordinator_response_t r;
    kp_find_coordinator_response_init(&r);
    if (req->hdr.api_version < 4) {
        r.error_code = coord_denied(req, q->key_type, q->key);
        if (!r.error_code) r.error_code = find_one(req, q->key_type, q->key, &r.node_id, &r.host, &r.port);
        if (r.error_code) r.error_message = bk_api_str(kp_error_name(r.error_code));
        bk_api_req_respond(req, &r);
        return;
    }
    size_t n = q->coordinator_keys.count > 0 ? (size_t)q->coordinator_keys.count : 0;
    kp_find_coordinator_response_coordinator_t *cs = bk_api_req_alloc(req, n, sizeof *cs);
    if (!cs) { bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < n; i++) {
        kp_find_coordinator_response_coordinator_init(&cs[i]);
        cs[i].key = q->coordinator_keys.items[i];
        cs[i].error_code = coord_denied(req, q->key_type, cs[i].key);
        if (!cs[i].error_code)
            cs[i].error_code = find_one(req, q->key_type, cs[i].key, &cs[i].node_id, &cs[i].host, &cs[i].port);
        if (cs[i].error_code) cs[i].error_message = bk_api_str(kp_error_name(cs[i].error_code));
    }
    r.coordinators.items = cs;
    r.coordinators.count = (int32_t)n;
    bk_api_req_respond(req, &r);
}

/* ---- JoinGroup / SyncGroup ------------------------------------------------ */

/* A group answer that must not leave (its records may not be replicated):
 * closing the connection makes the client find the coordinator and retry. */
static bool unsent(bk_api_req_t *req, const bk_grp_gd_result_t *res) {
    if (!res->unsent) return false;
    bk_api_req_close(req, res->unsent);
    return true;
}

static void join_done(void *arg, const bk_grp_gd_result_t *res) {
    bk_api_req_t *req = arg;
    if (unsent(req, res)) return;
    int16_t v = req->hdr.api_version;
    const bk_grp_resp_t *x = res->resp;
    kp_join_group_response_t r;
    kp_join_group_response_init(&r);
    r.generation_id = -1;
    r.protocol_name = v >= 7 ? kp_slice_null() : bk_api_str("");
    r.leader = bk_api_str("");
    r.member_id = bk_api_str("");
    r.error_code = res->error;
    if (x) {
        r.error_code = x->error;
        r.generation_id = x->generation;
        r.protocol_type = x->protocol_type;
        r.protocol_name = v >= 7 ? x->protocol : nn(x->protocol);
        r.leader = nn(x->leader);
        r.member_id = nn(x->member_id);
        /* before v9 a rejoining static leader simply runs the assignment again */
        r.skip_assignment = v >= 9 && x->skip_assignment;
        kp_join_group_response_join_group_response_member_t *ms = bk_api_req_alloc(req, x->nmembers, sizeof *ms);
        if (!ms) { bk_api_req_close(req, "out of memory"); return; }
        for (size_t i = 0; i < x->nmembers; i++) {
            kp_join_group_response_join_group_response_member_init(&ms[i]);
            ms[i].member_id = x->members[i].member_id;
            ms[i].group_instance_id = x->members[i].instance_id;
            ms[i].metadata = x->members[i].metadata;
        }
        r.members.items = ms;
        r.members.count = (int32_t)x->nmembers;
    }
    bk_api_req_respond(req, &r);
}

static void sync_done(void *arg, const bk_grp_gd_result_t *res) {
    bk_api_req_t *req = arg;
    if (unsent(req, res)) return;
    const bk_grp_resp_t *x = res->resp;
    kp_sync_group_response_t r;
    kp_sync_group_response_init(&r);
    r.error_code = res->error;
    r.assignment = kp_slice_null();
    r.assignment.p = (const uint8_t *)"";
    if (x) {
        r.error_code = x->error;
        r.protocol_type = x->protocol_type;
        r.protocol_name = x->protocol;
        if (x->assignment.p) r.assignment = x->assignment;
    }
    bk_api_req_respond(req, &r);
}

/* A held Join/Sync answer can still reach its client: the connection is
 * open (a closed one drops the answer; the coordinator then does not start
 * the session the answer would have started). */
static bool req_alive(void *arg) {
    const bk_api_req_t *req = arg;
    return bk_net_conn(req->net, req->slot.conn_id) != NULL;
}

void bk_api_h_join_group(bk_api_req_t *req) {
    if (group_denied(req, ((const kp_join_group_request_t *)req->body)->group_id, join_done)) return;
    bk_grp_gd_join_group(req->node->groups, req->body, req->hdr.api_version, req->hdr.client_id, api_client_host(req),
                     join_done, req_alive, req);
}

void bk_api_h_sync_group(bk_api_req_t *req) {
    if (group_denied(req, ((const kp_sync_group_request_t *)req->body)->group_id, sync_done)) return;
    bk_grp_gd_sync_group(req->node->groups, req->body, req->hdr.api_version, sync_done, req_alive, req);
}

/* ---- Heartbeat / LeaveGroup ------------------------------------------------ */

static void heartbeat_done(void *arg, const bk_grp_gd_result_t *res) {
    bk_api_req_t *req = arg;
    kp_heartbeat_response_t r;
    kp_heartbeat_response_init(&r);
    r.error_code = res->error;
    bk_api_req_respond(req, &r);
}

void bk_api_h_heartbeat(bk_api_req_t *req) {
    if (group_denied(req, ((const kp_heartbeat_request_t *)req->body)->group_id, heartbeat_done)) return;
    bk_grp_gd_heartbeat(req->node->groups, req->body, heartbeat_done, req);
}

static void leave_done(void *arg, const bk_grp_gd_result_t *res) {
    bk_api_req_t *req = arg;
    if (unsent(req, res)) return;
    const kp_leave_group_request_t *q = req->body;
    kp_leave_group_response_t r;
    kp_leave_group_response_init(&r);
    r.error_code = res->error;
    if (req->hdr.api_version < 3) {
        /* v0-2: one member, its error becomes the top-level error */
        if (r.error_code == 0 && res->nerrors > 0) r.error_code = res->errors[0];
    } else if (r.error_code == 0) {
        kp_leave_group_response_member_response_t *ms = bk_api_req_alloc(req, res->nerrors, sizeof *ms);
        if (!ms) { bk_api_req_close(req, "out of memory"); return; }
        for (size_t i = 0; i < res->nerrors; i++) {
            kp_leave_group_response_member_response_init(&ms[i]);
            ms[i].member_id = nn(q->members.items[i].member_id);
            ms[i].group_instance_id = q->members.items[i].group_instance_id;
            ms[i].error_code = res->errors[i];
        }
        r.members.items = ms;
        r.members.count = (int32_t)res->nerrors;
    }
    bk_api_req_respond(req, &r);
}

void bk_api_h_leave_group(bk_api_req_t *req) {
    if (group_denied(req, ((const kp_leave_group_request_t *)req->body)->group_id, leave_done)) return;
    bk_grp_gd_leave_group(req->node->groups, req->body, req->hdr.api_version, leave_done, req);
}

/* ---- ListGroups / DescribeGroups / DeleteGroups ----------------------------- */

static void list_done(void *arg, const bk_grp_gd_result_t *res) {
    bk_api_req_t *req = arg;
    if (unsent(req, res)) return;
    kp_list_groups_response_listed_group_t *v = bk_api_req_alloc(req, res->ngroups, sizeof *v);
    if (!v) { bk_api_req_close(req, "out of memory"); return; }
    /* DESCRIBE on the cluster lists every group, else only the groups the
     * principal may DESCRIBE (Kafka) */
    bool all = bk_api_authorized(req, BK_META_OP_DESCRIBE, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME);
    size_t k = 0;
    for (size_t i = 0; i < res->ngroups; i++) {
        const bk_grp_t *g = res->groups[i];
        if (!all && !bk_api_authorized_str(req, BK_META_OP_DESCRIBE, BK_META_RES_GROUP, api_grp_str(g->id))) continue;
        kp_list_groups_response_listed_group_init(&v[k]);
        v[k].group_id = api_grp_str(g->id);
        v[k].protocol_type = g->cg ? bk_api_str("consumer") : nn(api_grp_str(g->protocol_type));
        v[k].group_state = bk_api_str(bk_grp_group_state_name(g));
        v[k].group_type = bk_api_str(bk_grp_type_name(g));
        k++;
    }
    kp_list_groups_response_t r;
    kp_list_groups_response_init(&r);
    r.error_code = res->error;
    r.groups.items = v;
    r.groups.count = (int32_t)k;
    bk_api_req_respond(req, &r);
}

void bk_api_h_list_groups(bk_api_req_t *req) { bk_grp_gd_list_groups(req->node->groups, req->body, list_done, req); }

typedef kp_describe_groups_response_described_group_t dgroup_t;
typedef kp_describe_groups_response_described_group_member_t dmember_t;

/* A KIP-848 consumer group as DescribeGroups shows it: its state, protocol
 * type "consumer", the assignor as the protocol, its members without
 * metadata or assignment (ConsumerGroupDescribe has those). */
static int describe_consumer(bk_api_req_t *req, const bk_grp_t *g, dgroup_t *o) {
    const bk_grp_cg_t *cg = g->cg;
    o->group_state = bk_api_str(bk_grp_cg_state_name(g));
    o->protocol_type = bk_api_str("consumer");
    o->protocol_data = bk_api_str(cg->nmembers ? bk_grp_cg_assignor_name(cg->assignor) : "");
    dmember_t *ms = bk_api_req_alloc(req, cg->nmembers, sizeof *ms);
    if (!ms && cg->nmembers) return KP_ERR_NOMEM;
    for (size_t i = 0; i < cg->nmembers; i++) {
        const bk_grp_cg_member_t *m = &cg->members[i];
        kp_describe_groups_response_described_group_member_init(&ms[i]);
        ms[i].member_id = nn(api_grp_str(m->member_id));
        ms[i].group_instance_id = api_grp_str(m->instance_id);
        ms[i].client_id = nn(api_grp_str(m->client_id));
        ms[i].client_host = nn(api_grp_str(m->client_host));
        ms[i].member_metadata = bk_api_str("");
        ms[i].member_assignment = bk_api_str("");
    }
    o->members.items = ms;
    o->members.count = (int32_t)cg->nmembers;
    return KP_OK;
}

/* One group as DescribeGroups shows it: member metadata and assignment only
 * in Stable; no state to show is "Dead". */
static int describe_one(bk_api_req_t *req, kp_str_t id, int16_t error, const bk_grp_t *g, dgroup_t *o) {
    kp_describe_groups_response_described_group_init(o);
    o->group_id = id;
    o->error_code = error;
    o->group_state = bk_api_str("Dead");
    o->protocol_type = bk_api_str("");
    o->protocol_data = bk_api_str("");
    o->authorized_operations = INT32_MIN;
    if (error || !g) return KP_OK;
    if (g->cg) return describe_consumer(req, g, o);
    o->group_state = bk_api_str(bk_grp_state_name(g->state));
    o->protocol_type = nn(api_grp_str(g->protocol_type));
    o->protocol_data = nn(api_grp_str(g->protocol));
    dmember_t *ms = bk_api_req_alloc(req, g->nmembers, sizeof *ms);
    if (!ms) return KP_ERR_NOMEM;
    bool stable = g->state == BK_GRP_STABLE;
    for (size_t i = 0; i < g->nmembers; i++) {
        const bk_grp_member_t *m = &g->members[i];
        kp_describe_groups_response_described_group_member_init(&ms[i]);
        ms[i].member_id = nn(api_grp_str(m->member_id));
        ms[i].group_instance_id = api_grp_str(m->instance_id);
        ms[i].client_id = nn(api_grp_str(m->client_id));
        ms[i].client_host = nn(api_grp_str(m->client_host));
        ms[i].member_metadata = stable ? bk_grp_member_metadata(g, m) : bk_api_str("");
        if (!ms[i].member_metadata.p) ms[i].member_metadata = bk_api_str("");
        ms[i].member_assignment.p = (const uint8_t *)(stable && m->assignment.p ? m->assignment.p : "");
        ms[i].member_assignment.len = stable && m->assignment.p ? m->assignment.len : 0;
    }
    o->members.items = ms;
    o->members.count = (int32_t)g->nmembers;
    return KP_OK;
}

static void describe_done(void *arg, const bk_grp_gd_result_t *res) {
    bk_api_req_t *req = arg;
    if (unsent(req, res)) return;
    const kp_describe_groups_request_t *q = req->body;
    size_t n = res->ngroups;
    dgroup_t *v = bk_api_req_alloc(req, n, sizeof *v);
    if (!v) { bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < n; i++)
        /* DESCRIBE on each group (describing has no effect, so the check
         * may follow the coordinator's answer) */
        if (describe_one(req, q->groups.items[i],
                         bk_api_authorized_str(req, BK_META_OP_DESCRIBE, BK_META_RES_GROUP, q->groups.items[i])
                             ? res->errors[i] : KP_ERROR_GROUP_AUTHORIZATION_FAILED,
                         res->groups[i], &v[i]) != KP_OK) {
            bk_api_req_close(req, "out of memory");
            return;
        }
    kp_describe_groups_response_t r;
    kp_describe_groups_response_init(&r);
    r.groups.items = v;
    r.groups.count = (int32_t)n;
    bk_api_req_respond(req, &r);
}

void bk_api_h_describe_groups(bk_api_req_t *req) {
    bk_grp_gd_describe_groups(req->node->groups, req->body, describe_done, req);
}

static void delete_done(void *arg, const bk_grp_gd_result_t *res) {
    bk_api_req_t *req = arg;
    if (unsent(req, res)) return;
    const kp_delete_groups_request_t *q = req->body;
    const kp_delete_groups_request_t *orig = req->aux ? req->aux : q;   /* groups refused DELETE were left out */
    size_t n = orig->groups_names.count > 0 ? (size_t)orig->groups_names.count : 0, k = 0;
    kp_delete_groups_response_deletable_group_result_t *rs = bk_api_req_alloc(req, n, sizeof *rs);
    if (!rs) { bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < n; i++) {
        kp_delete_groups_response_deletable_group_result_init(&rs[i]);
        rs[i].group_id = orig->groups_names.items[i];
        if (req->aux && !bk_api_authorized_str(req, BK_META_OP_DELETE, BK_META_RES_GROUP, rs[i].group_id))
            rs[i].error_code = KP_ERROR_GROUP_AUTHORIZATION_FAILED;
        else
            rs[i].error_code = k < res->nerrors ? res->errors[k++] : KP_ERROR_UNKNOWN_SERVER_ERROR;
    }
    kp_delete_groups_response_t r;
    kp_delete_groups_response_init(&r);
    r.results.items = rs;
    r.results.count = (int32_t)n;
    bk_api_req_respond(req, &r);
}

void bk_api_h_delete_groups(bk_api_req_t *req) {
    /* DELETE on each group: the refused ones never reach the coordinator */
    const kp_delete_groups_request_t *q = req->body;
    size_t n = q->groups_names.count > 0 ? (size_t)q->groups_names.count : 0, m = 0;
    for (size_t i = 0; i < n; i++)
        m += bk_api_authorized_str(req, BK_META_OP_DELETE, BK_META_RES_GROUP, q->groups_names.items[i]);
    if (m < n) {
        kp_delete_groups_request_t *q2 = bk_api_req_alloc(req, 1, sizeof *q2);
        kp_str_t *keep = bk_api_req_alloc(req, n, sizeof *keep);
        if (!q2 || !keep) { bk_api_req_close(req, "out of memory"); return; }
        *q2 = *q;
        m = 0;
        for (size_t i = 0; i < n; i++)
            if (bk_api_authorized_str(req, BK_META_OP_DELETE, BK_META_RES_GROUP, q->groups_names.items[i]))
                keep[m++] = q->groups_names.items[i];
        q2->groups_names.items = keep;
        q2->groups_names.count = (int32_t)m;
        req->aux = (void *)q;
        req->body = q2;
    }
    bk_grp_gd_delete_groups(req->node->groups, req->body, delete_done, req);
}
