/* broker/admin/admin_group_reset.c — POST /v1/groups/{id}/offsets/reset
 * ?topic=T&to=earliest|latest|offset|timestamp[&offset=N|&timestamp=MS]
 * (issue 21): what `kafka-consumer-groups --reset-offsets --execute` does,
 * for every partition of one topic. As Kafka, only a group without members
 * (Empty, or unknown: the offsets then create it) may be reset; the new
 * offsets are committed through the group coordinator's OffsetCommit path
 * (generation -1, no member: the admin form) and the reply waits for it.
 *
 * Targets come from this node's replicas (it must host every partition of
 * the topic): earliest = log start, latest = high watermark, offset =
 * clamped into [log start, high watermark] (as Kafka's tool does), timestamp
 * = the first offset at or after it (ListOffsets' lookup), else the high
 * watermark. A follower's high watermark may trail the leader's by what is
 * in flight; the group then re-reads those records. */
#include "broker/admin/admin_ops.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/group/group_driver.h"
#include "broker/replication/parts.h"
#include "protocol/kp_errors.h"
#include "storage/st_log.h"

typedef struct {
    bk_node_t *node;
    bk_http_req_t *req;
    char group[256];
    char topic[256];
    kp_offset_commit_request_t q;
    kp_offset_commit_request_offset_commit_request_topic_t t;
    kp_offset_commit_request_offset_commit_request_partition_t *parts;
} reset_ctx_t;

static void reset_free(reset_ctx_t *c) {
    free(c->parts);
    free(c);
}

static void reset_done(void *arg, const bk_grp_gd_result_t *res) {
    reset_ctx_t *c = arg;
    bk_http_req_t *req = c->req;
    /* bk_http_stop (node shutdown) already freed the request: drop it */
    if (!c->node->admin) { reset_free(c); return; }
    int16_t err = res->unsent ? KP_ERROR_COORDINATOR_NOT_AVAILABLE : res->error;
    int32_t bad = -1;
    for (size_t i = 0; !err && i < res->nerrors; i++)
        if (res->errors[i]) { err = res->errors[i]; bad = c->parts[i].partition_index; }
    if (err) {
        if (bad >= 0) bk_http_reply_error(req, 409, "%s on partition %d: group %s not reset", kp_error_name(err), bad, c->group);
        else bk_http_reply_error(req, 409, "%s: group %s not reset", kp_error_name(err), c->group);
        reset_free(c);
        return;
    }
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_kv_str(j, "group_id", c->group);
    bk_http_json_kv_str(j, "topic", c->topic);
    bk_http_json_key(j, "partitions");
    bk_http_json_arr_begin(j);
    for (int32_t i = 0; i < c->t.partitions.count; i++) {
        bk_http_json_obj_begin(j);
        bk_http_json_kv_i64(j, "partition", c->parts[i].partition_index);
        bk_http_json_kv_i64(j, "offset", c->parts[i].committed_offset);
        bk_http_json_obj_end(j);
    }
    bk_http_json_arr_end(j);
    bk_http_json_obj_end(j);
    bk_http_reply_json(req, 200);
    reset_free(c);
}

static bool parse_i64(const char *s, int64_t *out) {
    if (!s || !*s) return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end || errno) return false;
    *out = v;
    return true;
}

typedef enum { TO_EARLIEST, TO_LATEST, TO_OFFSET, TO_TIMESTAMP } to_t;

/* The target of one partition on its local log. */
static int64_t target(const st_log_t *log, to_t to, int64_t arg) {
    int64_t start = st_log_start_offset(log), hw = st_log_high_watermark(log);
    switch (to) {
    case TO_EARLIEST: return start;
    case TO_LATEST: return hw;
    case TO_OFFSET: return arg < start ? start : arg > hw ? hw : arg;
    case TO_TIMESTAMP: {
        int64_t off, ts;
        if (st_log_offset_for_time(log, arg, &off, &ts) != KP_OK) return hw;
        return off < start ? start : off > hw ? hw : off;
    }
    }
    return hw;
}

static void post_reset(bk_http_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    if (!bk_admin_same_origin(req)) return;
    const char *gid = bk_http_param(req, "id"), *topic = bk_http_query(req, "topic"), *tos = bk_http_query(req, "to");
    to_t to;
    int64_t arg = 0;
    if (!tos) tos = "";
    if (!strcmp(tos, "earliest")) to = TO_EARLIEST;
    else if (!strcmp(tos, "latest")) to = TO_LATEST;
    else if (!strcmp(tos, "offset") && parse_i64(bk_http_query(req, "offset"), &arg) && arg >= 0) to = TO_OFFSET;
    else if (!strcmp(tos, "timestamp") && parse_i64(bk_http_query(req, "timestamp"), &arg)) to = TO_TIMESTAMP;
    else {
        bk_http_reply_error(req, 400, "to must be earliest, latest, offset (with offset=N >= 0) or timestamp (with timestamp=MS)");
        return;
    }
    if (!gid || strlen(gid) > 255 || !topic || strlen(topic) > 255) {
        bk_http_reply_error(req, 400, "topic is needed (and names are at most 255 bytes)");
        return;
    }
    const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&n->img, topic);
    if (!t) { bk_http_reply_error(req, 404, "unknown topic '%s'", topic); return; }
    kp_str_t id = kp_slice_cstr(gid);
    int16_t cerr = 0;
    bk_grp_coord_t *co = n->groups ? bk_grp_gd_coord(n->groups, id, &cerr) : NULL;
    if (!co || co->loading) {
        bk_http_reply_error(req, co ? 503 : 409, "node %d does not coordinate group '%s' (%s): use the node that lists it in /v1/groups",
                            n->id, gid, kp_error_name(cerr ? cerr : KP_ERROR_NOT_COORDINATOR));
        return;
    }
    const bk_grp_t *g = NULL;
    if (bk_grp_describe(co, id, &g) == 0 && g && g->state != BK_GRP_EMPTY && g->state != BK_GRP_DEAD) {
        bk_http_reply_error(req, 409, "group '%s' is %s with %zu members: only an empty group can be reset (stop its consumers)",
                            gid, bk_grp_state_name(g->state), g->nmembers);
        return;
    }
    reset_ctx_t *c = calloc(1, sizeof *c);
    if (c) c->parts = calloc(t->nparts ? (size_t)t->nparts : 1, sizeof *c->parts);
    if (!c || !c->parts) {
        if (c) free(c);
        bk_http_reply_error(req, 500, "out of memory");
        return;
    }
    c->node = n;
    c->req = req;
    snprintf(c->group, sizeof c->group, "%s", gid);
    snprintf(c->topic, sizeof c->topic, "%s", topic);
    for (int32_t i = 0; i < t->nparts; i++) {
        bk_repl_part_t *bp = bk_repl_parts_get(n->parts, &t->id, i);
        if (!bp || !bp->log) {
            reset_free(c);
            bk_http_reply_error(req, 409, "node %d holds no replica of %s-%d: reset from a node that hosts every partition", n->id,
                                topic, i);
            return;
        }
        kp_offset_commit_request_offset_commit_request_partition_init(&c->parts[i]);
        c->parts[i].partition_index = i;
        c->parts[i].committed_offset = target(bp->log, to, arg);
        c->parts[i].committed_leader_epoch = -1;
        c->parts[i].commit_timestamp = -1;
    }
    kp_offset_commit_request_offset_commit_request_topic_init(&c->t);
    c->t.name = kp_slice_cstr(c->topic);
    c->t.partitions.items = c->parts;
    c->t.partitions.count = t->nparts;
    kp_offset_commit_request_init(&c->q);
    c->q.group_id = kp_slice_cstr(c->group);
    c->q.generation_id_or_member_epoch = -1;   /* the admin form: no member */
    c->q.member_id = kp_slice_cstr("");
    c->q.group_instance_id = kp_slice_null();
    c->q.retention_time_ms = -1;
    c->q.topics.items = &c->t;
    c->q.topics.count = 1;
    bk_grp_gd_offset_commit(n->groups, &c->q, reset_done, c);
}

int bk_admin_group_reset_add(bk_node_t *n) {
    return bk_http_route(n->admin, "POST", "/v1/groups/{id}/offsets/reset", post_reset, n);
}
