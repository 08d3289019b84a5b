/* broker/admin/admin_groups.c — GET /v1/groups and /v1/groups/{id}.
 *
 * A group lives in the core of the node that leads its __consumer_offsets
 * partition. This node answers from its own cores only and says so:
 * "coordinated_here" per group, "complete" on the list (true when this node
 * leads every __consumer_offsets partition, e.g. a single node). */
#include "broker/admin/admin_ops.h"

#include <stdio.h>
#include <string.h>

#include "broker/group/group_driver.h"

/* Arena for decoding one member's assignment. */
#define ASSIGN_ARENA_BYTES 65536

static int32_t offsets_partitions(const bk_node_t *n) {
    const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&n->img, BK_GRP_GD_TOPIC);
    return t ? t->nparts : 0;
}

static void str_or_null(bk_http_json_t *j, const char *k, bk_grp_str_t s) {
    if (s.p) { bk_http_json_key(j, k); bk_http_json_str_n(j, s.p, s.len); }
    else bk_http_json_kv_null(j, k);
}

typedef struct { bk_http_json_t *j; } list_ctx_t;

static void list_one(void *ctx, const bk_grp_t *g) {
    bk_http_json_t *j = ((list_ctx_t *)ctx)->j;
    bk_http_json_obj_begin(j);
    bk_http_json_key(j, "group_id");
    bk_http_json_str_n(j, g->id.p, g->id.len);
    bk_http_json_kv_str(j, "type", bk_grp_type_name(g));
    bk_http_json_kv_str(j, "state", bk_grp_group_state_name(g));
    if (g->cg) bk_http_json_kv_str(j, "protocol_type", "consumer");
    else str_or_null(j, "protocol_type", g->protocol_type);
    bk_http_json_kv_u64(j, "members", g->cg ? g->cg->nmembers : g->nmembers);
    bk_http_json_obj_end(j);
}

static void get_groups(bk_http_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    int32_t np = offsets_partitions(n);
    int32_t led = 0;
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_key(j, "groups");
    bk_http_json_arr_begin(j);
    list_ctx_t lc = { j };
    for (int32_t p = 0; p < np && n->groups; p++) {
        bk_grp_coord_t *c = bk_grp_gd_coord_at(n->groups, p);
        if (!c || c->loading) continue;
        led++;
        (void)bk_grp_list(c, NULL, 0, list_one, &lc);
    }
    bk_http_json_arr_end(j);
    bk_http_json_kv_i64(j, "coordinator_partitions_here", led);
    bk_http_json_kv_i64(j, "coordinator_partitions_total", np);
    bk_http_json_kv_bool(j, "complete", led == np);
    bk_http_json_obj_end(j);
    bk_http_reply_json(req, 200);
}

/* [{"topic", "partitions": [..]}] from ConsumerProtocolAssignment bytes;
 * null when not that format (another protocol type, or malformed). */
static void assignment(bk_http_json_t *j, const bk_grp_t *g, const bk_grp_member_t *m, kp_arena_t *a) {
    bk_http_json_key(j, "assignment");
    kp_rd_t r;
    kp_rd_init(&r, m->assignment.p, m->assignment.len);
    int16_t ver = 0;
    kp_consumer_protocol_assignment_t asg;
    bool consumer = g->protocol_type.p && g->protocol_type.len == 8 &&
                    memcmp(g->protocol_type.p, "consumer", 8) == 0;
    kp_arena_reset(a);
    if (!consumer || m->assignment.len == 0 || kp_rd_i16(&r, &ver) != KP_OK || ver < 0 ||
        kp_consumer_protocol_assignment_decode(&r, ver > 3 ? 3 : ver, &asg, a) != KP_OK) {
        bk_http_json_null(j);
        return;
    }
    bk_http_json_arr_begin(j);
    for (int32_t i = 0; i < asg.assigned_partitions.count; i++) {
        const kp_consumer_protocol_assignment_topic_partition_t *tp = &asg.assigned_partitions.items[i];
        bk_http_json_obj_begin(j);
        bk_http_json_key(j, "topic");
        bk_http_json_str_n(j, (const char *)tp->topic.p, tp->topic.len);
        bk_http_json_key(j, "partitions");
        bk_http_json_arr_begin(j);
        for (int32_t k = 0; k < tp->partitions.count; k++) bk_http_json_i64(j, tp->partitions.items[k]);
        bk_http_json_arr_end(j);
        bk_http_json_obj_end(j);
    }
    bk_http_json_arr_end(j);
}

static void members(bk_http_json_t *j, const bk_grp_t *g) {
    kp_arena_t a;
    kp_arena_init(&a, ASSIGN_ARENA_BYTES);
    bk_http_json_key(j, "members");
    bk_http_json_arr_begin(j);
    for (size_t i = 0; g && i < g->nmembers; i++) {
        const bk_grp_member_t *m = &g->members[i];
        bk_http_json_obj_begin(j);
        str_or_null(j, "member_id", m->member_id);
        str_or_null(j, "instance_id", m->instance_id);
        str_or_null(j, "client_id", m->client_id);
        str_or_null(j, "client_host", m->client_host);
        assignment(j, g, m, &a);
        bk_http_json_obj_end(j);
    }
    bk_http_json_arr_end(j);
    kp_arena_free(&a);
}

/* A KIP-848 partition set as [{topic, topic_id, partitions}] (names from
 * this node's image; null for a topic it no longer knows). */
static void cg_set(bk_http_json_t *j, const char *k, const bk_grp_cg_tps_t *s, const bk_meta_image_t *img) {
    bk_http_json_key(j, k);
    bk_http_json_arr_begin(j);
    for (size_t i = 0; i < s->n;) {
        bk_meta_uuid_t id;
        memcpy(id.b, s->v[i].topic.b, sizeof id.b);
        const bk_meta_topic_t *t = bk_meta_image_topic_by_id(img, &id);
        bk_http_json_obj_begin(j);
        if (t) bk_http_json_kv_str(j, "topic", t->name);
        else bk_http_json_kv_null(j, "topic");
        char hex[33];
        for (int b = 0; b < 16; b++) snprintf(hex + 2 * b, 3, "%02x", id.b[b]);
        bk_http_json_kv_str(j, "topic_id", hex);
        bk_http_json_key(j, "partitions");
        bk_http_json_arr_begin(j);
        size_t k0 = i;
        for (; i < s->n && memcmp(s->v[i].topic.b, s->v[k0].topic.b, 16) == 0; i++) bk_http_json_i64(j, s->v[i].partition);
        bk_http_json_arr_end(j);
        bk_http_json_obj_end(j);
    }
    bk_http_json_arr_end(j);
}

/* A KIP-848 consumer group: epochs, assignor, members with their epochs,
 * states, assigned, pending-revocation and target partitions. */
static void consumer_group(bk_http_json_t *j, const bk_grp_t *g, const bk_meta_image_t *img) {
    static const char *const MSTATE[] = { "stable", "unrevoked_partitions", "unreleased_partitions" };
    const bk_grp_cg_t *cg = g->cg;
    bk_http_json_kv_str(j, "type", "consumer");
    bk_http_json_kv_str(j, "state", bk_grp_cg_state_name(g));
    bk_http_json_kv_i64(j, "group_epoch", cg->epoch);
    bk_http_json_kv_i64(j, "assignment_epoch", cg->assignment_epoch);
    bk_http_json_kv_str(j, "assignor", bk_grp_cg_assignor_name(cg->assignor));
    bk_http_json_key(j, "members");
    bk_http_json_arr_begin(j);
    for (size_t i = 0; i < cg->nmembers; i++) {
        const bk_grp_cg_member_t *m = &cg->members[i];
        bk_http_json_obj_begin(j);
        str_or_null(j, "member_id", m->member_id);
        str_or_null(j, "instance_id", m->instance_id);
        str_or_null(j, "client_id", m->client_id);
        str_or_null(j, "client_host", m->client_host);
        bk_http_json_kv_i64(j, "member_epoch", m->epoch);
        bk_http_json_kv_str(j, "member_state", (unsigned)m->state <= 2 ? MSTATE[m->state] : "unknown");
        bk_http_json_key(j, "subscribed_topics");
        bk_http_json_arr_begin(j);
        for (size_t t = 0; t < m->ntopics; t++) bk_http_json_str_n(j, m->topics[t].p, m->topics[t].len);
        bk_http_json_arr_end(j);
        str_or_null(j, "subscribed_regex", m->regex);
        cg_set(j, "assignment", &m->assigned, img);
        cg_set(j, "pending_revocation", &m->revoking, img);
        cg_set(j, "target_assignment", &m->target, img);
        bk_http_json_obj_end(j);
    }
    bk_http_json_arr_end(j);
}

static void get_group(bk_http_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    const char *name = bk_http_param(req, "id");
    kp_str_t id = kp_slice_cstr(name);
    int16_t err = 0;
    bk_grp_coord_t *c = n->groups ? bk_grp_gd_coord(n->groups, id, &err) : NULL;
    const bk_grp_t *g = NULL;
    if (c && !c->loading && bk_grp_describe(c, id, &g) == 0 && g == NULL) {
        bk_http_reply_error(req, 404, "unknown group '%s'", name);
        return;
    }
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_kv_str(j, "group_id", name);
    bk_http_json_kv_bool(j, "coordinated_here", c != NULL && !c->loading);
    if (!c || c->loading || !g) {
        bk_http_json_kv_str(j, "note", c ? "the coordinator is still loading this group"
                                    : "this node does not lead the group's __consumer_offsets partition; "
                                      "ask the coordinator (FindCoordinator)");
        bk_http_json_obj_end(j);
        bk_http_reply_json(req, 200);
        return;
    }
    if (g->cg) {
        consumer_group(j, g, &n->img);
        bk_admin_group_offsets(req, n, id);
        return;
    }
    bk_http_json_kv_str(j, "type", "classic");
    bk_http_json_kv_str(j, "state", bk_grp_state_name(g->state));
    bk_http_json_kv_i64(j, "generation", g->generation);
    str_or_null(j, "protocol_type", g->protocol_type);
    str_or_null(j, "protocol", g->protocol);
    str_or_null(j, "leader", g->leader);
    members(j, g);
    bk_admin_group_offsets(req, n, id);   /* closes the object and replies, maybe later */
}

int bk_admin_groups_add(bk_node_t *n) {
    int rc;
    if ((rc = bk_http_route(n->admin, "GET", "/v1/groups", get_groups, n)) != KP_OK) return rc;
    return bk_http_route(n->admin, "GET", "/v1/groups/{id}", get_group, n);
}
