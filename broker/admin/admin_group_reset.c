/* broker/admin/admin_group_reset.c — POST /v1/groups/{id}/offsets/reset
 * ?topic=T&to=earliest|latest|offset|timestamp[&offset=N|&timestamp=MS]
 * (issue 21): what `kafka-consumer-groups --reset-offsets --execute` does,
 * for every partition of one topic. As Kafka, only a group without members
 * (Empty, or unknown: the offsets then create it) may be reset; the new
 * offsets are committed through the group coordinator's OffsetCommit path
 * (generation -1, no member: the admin form) and the reply waits for it.
 *
 * Targets are what each partition's leader answers to ListOffsets (from
 * this node's log where it leads, else asked of the leader, admin_int.h):
 * earliest = log start, latest = high watermark, offset = clamped into
 * [log start, high watermark] (as Kafka's tool does), timestamp = the first
 * offset at or after it, else the high watermark. A leader that does not
 * answer in 2 s fails the reset (503); nothing is committed then. */
#include "broker/admin/admin_ops.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/admin/admin_int.h"
#include "broker/group/group_driver.h"
#include "broker/replication/parts.h"
#include "protocol/kp_errors.h"
#include "storage/st_log.h"

typedef enum { TO_EARLIEST, TO_LATEST, TO_OFFSET, TO_TIMESTAMP } to_t;

typedef struct {
    bk_node_t *node;
    bk_http_req_t *req;
    char group[256];
    char topic[256];
    to_t to;
    int64_t arg;
    /* per partition i: rows[2i] the asked bound (earliest, latest or the
     * timestamp's offset), rows[2i+1] latest (the clamp and the fallback) */
    admin_offset_row_t *rows;
    int32_t nparts;
    kp_offset_commit_request_t q;
    kp_offset_commit_request_offset_commit_request_topic_t t;
    kp_offset_commit_request_offset_commit_request_partition_t *parts;
} reset_ctx_t;

static void reset_free(reset_ctx_t *c) {
    free(c->parts);
    free(c->rows);
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

/* ListOffsets' timestamp for the bound a target needs first. */
static int64_t asked_timestamp(to_t to, int64_t arg) {
    return to == TO_EARLIEST || to == TO_OFFSET ? -2 : to == TO_LATEST ? -1 : arg;
}

/* Both rows of partition i from the leader's log here, as ListOffsets
 * answers them (a timestamp with no record that late: -1). */
static void rows_from_log(admin_offset_row_t *r, const st_log_t *log) {
    int64_t start = st_log_start_offset(log), hw = st_log_high_watermark(log), off, ts;
    if (r[0].timestamp == -2) r[0].offset = start;
    else if (r[0].timestamp == -1) r[0].offset = hw;
    else r[0].offset = st_log_offset_for_time(log, r[0].timestamp, &off, &ts) == KP_OK ? off : -1;
    r[1].offset = hw;
}

/* The offset to commit from partition i's two rows; -1 when unknown. */
static int64_t target(const reset_ctx_t *c, int32_t i) {
    int64_t first = c->rows[2 * i].offset, latest = c->rows[2 * i + 1].offset;
    if (latest < 0) return -1;
    switch (c->to) {
    case TO_EARLIEST: return first;
    case TO_LATEST: return latest;
    case TO_OFFSET: return first < 0 ? -1 : c->arg < first ? first : c->arg > latest ? latest : c->arg;
    case TO_TIMESTAMP: return first >= 0 && first <= latest ? first : latest;   /* none that late: the end */
    }
    return -1;
}

/* The bounds are known (or the lookup timed out): commit. */
static void bounds_known(void *arg, admin_offset_row_t *rows, size_t n) {
    (void)rows; (void)n;
    reset_ctx_t *c = arg;
    bk_node_t *nd = c->node;
    if (!nd->admin) { reset_free(c); return; }   /* node stopping: the request is gone */
    for (int32_t i = 0; i < c->nparts; i++) {
        int64_t off = target(c, i);
        if (off < 0) {
            bk_http_reply_error(c->req, 503, "the leader of %s-%d (node %d) did not tell its offsets: group %s not reset; retry",
                                c->topic, i, c->rows[2 * i].leader, c->group);
            reset_free(c);
            return;
        }
        kp_offset_commit_request_offset_commit_request_partition_init(&c->parts[i]);
        c->parts[i].partition_index = i;
        c->parts[i].committed_offset = off;
        c->parts[i].committed_leader_epoch = -1;
        c->parts[i].commit_timestamp = -1;
    }
    /* the group may have gained members while the leaders were asked */
    kp_str_t id = kp_slice_cstr(c->group);
    int16_t cerr = 0;
    bk_grp_coord_t *co = nd->groups ? bk_grp_gd_coord(nd->groups, id, &cerr) : NULL;
    const bk_grp_t *g = NULL;
    if (!co || co->loading || (bk_grp_describe(co, id, &g) == 0 && g && g->state != BK_GRP_EMPTY && g->state != BK_GRP_DEAD)) {
        bk_http_reply_error(c->req, 409, "group '%s' changed (members joined or its coordinator moved): not reset", c->group);
        reset_free(c);
        return;
    }
    kp_offset_commit_request_offset_commit_request_topic_init(&c->t);
    c->t.name = kp_slice_cstr(c->topic);
    c->t.partitions.items = c->parts;
    c->t.partitions.count = c->nparts;
    kp_offset_commit_request_init(&c->q);
    c->q.group_id = kp_slice_cstr(c->group);
    c->q.generation_id_or_member_epoch = -1;   /* the admin form: no member */
    c->q.member_id = kp_slice_cstr("");
    c->q.group_instance_id = kp_slice_null();
    c->q.retention_time_ms = -1;
    c->q.topics.items = &c->t;
    c->q.topics.count = 1;
    bk_grp_gd_offset_commit(nd->groups, &c->q, reset_done, c);
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
    size_t np = t->nparts ? (size_t)t->nparts : 1;
    if (c) {
        c->parts = calloc(np, sizeof *c->parts);
        c->rows = calloc(2 * np, sizeof *c->rows);
    }
    if (!c || !c->parts || !c->rows) {
        if (c) reset_free(c);
        bk_http_reply_error(req, 500, "out of memory");
        return;
    }
    c->node = n;
    c->req = req;
    c->to = to;
    c->arg = arg;
    c->nparts = t->nparts;
    snprintf(c->group, sizeof c->group, "%s", gid);
    snprintf(c->topic, sizeof c->topic, "%s", topic);
    for (int32_t i = 0; i < t->nparts; i++) {
        admin_offset_row_t *r = &c->rows[2 * i];
        r[0] = (admin_offset_row_t){ c->topic, i, asked_timestamp(to, arg), t->parts[i].leader, -1 };
        r[1] = (admin_offset_row_t){ c->topic, i, -1, t->parts[i].leader, -1 };
        if (r[0].leader < 0) {
            reset_free(c);
            bk_http_reply_error(req, 409, "%s-%d has no leader: group %s not reset", topic, i, gid);
            return;
        }
        /* led here: this node's log is the partition's */
        bk_repl_part_t *bp = r[0].leader == n->id ? bk_repl_parts_get(n->parts, &t->id, i) : NULL;
        if (bp && bp->log) rows_from_log(r, bp->log);
    }
    /* the rest: ListOffsets to their leaders, as Kafka's tool asks */
    if (admin_offsets_lookup(n, c->rows, 2 * (size_t)t->nparts, bounds_known, c) != 0) {
        reset_free(c);
        bk_http_reply_error(req, 500, "out of memory");
    }
}

int bk_admin_group_reset_add(bk_node_t *n) {
    return bk_http_route(n->admin, "POST", "/v1/groups/{id}/offsets/reset", post_reset, n);
}
