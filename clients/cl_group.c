/* cl_group.c — consumer-group membership with the range assignor. */
#include "clients/cl_group.h"

#include <stdlib.h>
#include <string.h>

#include "clients/cl_admin.h"
#include "protocol/kp_errors.h"

void cl_range_assign(int32_t nmembers, int32_t npartitions, int32_t index, int32_t *first, int32_t *count) {
    int32_t per = nmembers > 0 ? npartitions / nmembers : 0;
    int32_t extra = nmembers > 0 ? npartitions % nmembers : 0;
    *first = per * index + (index < extra ? index : extra);
    *count = per + (index < extra ? 1 : 0);
}

int cl_group_init(cl_group_t *g, cl_client_t *cl, const char *group, const char *topic, int32_t npartitions,
                  cl_err_t *e) {
    memset(g, 0, sizeof *g);
    g->cl = cl;
    g->generation = -1;
    g->coordinator = -1;
    g->npartitions = npartitions;
    g->session_timeout_ms = 10000;
    g->heartbeat_interval_ms = 1000;
    if (strlen(group) >= sizeof g->group || strlen(topic) >= sizeof g->topic)
        return cl_err_set(e, CL_E_USAGE, "group or topic name too long");
    strcpy(g->group, group);
    strcpy(g->topic, topic);
    g->assigned = calloc((size_t)npartitions + 1, 1);
    return g->assigned ? CL_OK : cl_err_set(e, CL_E_NOMEM, "out of memory");
}

/* int16 version 0 + the v0 message, into the arena. */
static int encode_v0(const kp_struct_desc_t *d, const void *msg, kp_arena_t *a, kp_bytes_t *out) {
    size_t n = 0;
    if (kp_encoded_size(d, 0, msg, &n) != KP_OK) return KP_ERR_BAD_VALUE;
    uint8_t *buf = kp_arena_alloc(a, n + 2);
    if (!buf) return KP_ERR_NOMEM;
    kp_wr_t w;
    kp_wr_init(&w, buf, n + 2);
    int rc = kp_wr_i16(&w, 0);
    if (rc == KP_OK) rc = kp_encode(d, &w, 0, msg, NULL);
    out->p = buf;
    out->len = w.pos;
    return rc;
}

static int cmp_member(const void *x, const void *y) {
    const kp_join_group_response_join_group_response_member_t *a = x, *b = y;
    size_t n = a->member_id.len < b->member_id.len ? a->member_id.len : b->member_id.len;
    int c = n ? memcmp(a->member_id.p, b->member_id.p, n) : 0;
    return c ? c : (a->member_id.len > b->member_id.len) - (a->member_id.len < b->member_id.len);
}

/* The leader's SyncGroup assignments: range over the members (all are
 * assumed to subscribe to our one topic, as skiffctl members do). */
static int leader_assignments(cl_group_t *g, kp_join_group_response_t *jr, kp_sync_group_request_t *sr, kp_arena_t *a) {
    int32_t m = jr->members.count;
    qsort(jr->members.items, (size_t)m, sizeof *jr->members.items, cmp_member);
    sr->assignments.items = kp_arena_alloc(a, sizeof *sr->assignments.items * (size_t)(m + 1));
    if (!sr->assignments.items) return KP_ERR_NOMEM;
    sr->assignments.count = m;
    for (int32_t i = 0; i < m; i++) {
        int32_t first = 0, count = 0;
        cl_range_assign(m, g->npartitions, i, &first, &count);
        kp_consumer_protocol_assignment_t asg;
        kp_consumer_protocol_assignment_init(&asg);
        kp_consumer_protocol_assignment_topic_partition_t tp;
        kp_consumer_protocol_assignment_topic_partition_init(&tp);
        tp.topic = cl_str(g->topic);
        tp.partitions.items = kp_arena_alloc(a, sizeof(int32_t) * (size_t)(count + 1));
        if (!tp.partitions.items) return KP_ERR_NOMEM;
        tp.partitions.count = count;
        for (int32_t k = 0; k < count; k++) tp.partitions.items[k] = first + k;
        asg.assigned_partitions.items = &tp;
        asg.assigned_partitions.count = 1;
        kp_sync_group_request_sync_group_request_assignment_init(&sr->assignments.items[i]);
        sr->assignments.items[i].member_id = jr->members.items[i].member_id;
        int rc = encode_v0(&kp_consumer_protocol_assignment_desc, &asg, a, &sr->assignments.items[i].assignment);
        if (rc != KP_OK) return rc;
    }
    return KP_OK;
}

static int read_assignment(cl_group_t *g, kp_bytes_t b, kp_arena_t *a, cl_err_t *e) {
    memset(g->assigned, 0, (size_t)g->npartitions);
    g->nassigned = 0;
    if (b.len == 0) return CL_OK; /* no partitions for us */
    kp_rd_t r;
    kp_rd_init(&r, b.p, b.len);
    int16_t ver = 0;
    kp_consumer_protocol_assignment_t asg;
    if (kp_rd_i16(&r, &ver) != KP_OK || ver < 0 ||
        kp_consumer_protocol_assignment_decode(&r, ver > 3 ? 3 : ver, &asg, a) != KP_OK)
        return cl_err_set(e, CL_E_PROTO, "malformed assignment for group '%s'", g->group);
    for (int32_t i = 0; i < asg.assigned_partitions.count; i++) {
        const kp_consumer_protocol_assignment_topic_partition_t *tp = &asg.assigned_partitions.items[i];
        if (!cl_str_eq(tp->topic, g->topic)) continue;
        for (int32_t k = 0; k < tp->partitions.count; k++) {
            int32_t p = tp->partitions.items[k];
            if (p >= 0 && p < g->npartitions && !g->assigned[p]) { g->assigned[p] = 1; g->nassigned++; }
        }
    }
    return CL_OK;
}

/* One JoinGroup + SyncGroup round. Returns CL_OK, or CL_E_KAFKA with the
 * code (MEMBER_ID_REQUIRED / REBALANCE_IN_PROGRESS / ... for the caller). */
static int join_round(cl_group_t *g, kp_arena_t *a, cl_err_t *e) {
    kp_consumer_protocol_subscription_t sub;
    kp_consumer_protocol_subscription_init(&sub);
    kp_str_t topic = cl_str(g->topic);
    sub.topics.items = &topic;
    sub.topics.count = 1;
    kp_join_group_request_t jq;
    kp_join_group_request_init(&jq);
    jq.group_id = cl_str(g->group);
    jq.session_timeout_ms = g->session_timeout_ms;
    jq.rebalance_timeout_ms = g->session_timeout_ms;
    jq.member_id = cl_str(g->member_id);
    jq.protocol_type = cl_str("consumer");
    kp_join_group_request_join_group_request_protocol_t proto;
    kp_join_group_request_join_group_request_protocol_init(&proto);
    proto.name = cl_str("range");
    if (encode_v0(&kp_consumer_protocol_subscription_desc, &sub, a, &proto.metadata) != KP_OK)
        return cl_err_set(e, CL_E_PROTO, "cannot encode the subscription");
    jq.protocols.items = &proto;
    jq.protocols.count = 1;
    void *resp = NULL;
    /* the coordinator holds a JoinGroup until the round completes (up to the
     * rebalance timeout): wait that long plus a margin, not the usual deadline */
    int saved_ms = g->cl->timeout_ms;
    g->cl->timeout_ms = g->session_timeout_ms + CL_GROUP_JOIN_MARGIN_MS;
    int rc = cl_client_call(g->cl, g->coordinator, KP_API_JOIN_GROUP, CL_VER_JOIN_GROUP, &jq, &resp, NULL, a, e);
    g->cl->timeout_ms = saved_ms;
    if (rc != CL_OK) return rc;
    kp_join_group_response_t *jr = resp;
    if (jr->member_id.len) cl_strz(jr->member_id, g->member_id, sizeof g->member_id);
    if (jr->error_code) return cl_err_kafka(e, jr->error_code, "JoinGroup '%s'", g->group);
    g->generation = jr->generation_id;
    g->leader = cl_str_eq(jr->leader, g->member_id);
    kp_sync_group_request_t sq;
    kp_sync_group_request_init(&sq);
    sq.group_id = jq.group_id;
    sq.generation_id = g->generation;
    sq.member_id = cl_str(g->member_id);
    if (g->leader && leader_assignments(g, jr, &sq, a) != KP_OK)
        return cl_err_set(e, CL_E_PROTO, "cannot encode assignments");
    rc = cl_client_call(g->cl, g->coordinator, KP_API_SYNC_GROUP, CL_VER_SYNC_GROUP, &sq, &resp, NULL, a, e);
    if (rc != CL_OK) return rc;
    const kp_sync_group_response_t *sr = resp;
    if (sr->error_code) return cl_err_kafka(e, sr->error_code, "SyncGroup '%s'", g->group);
    g->last_heartbeat_us = cl_now_us();
    return read_assignment(g, sr->assignment, a, e);
}

int cl_group_join(cl_group_t *g, cl_err_t *e) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)16 << 20);
    int rc = CL_OK;
    for (int tries = 0; tries < CL_GROUP_JOIN_TRIES_MAX; tries++) {
        kp_arena_reset(&a);
        rc = cl_client_coordinator(g->cl, g->group, 0, &g->coordinator, e);
        if (rc == CL_OK) rc = join_round(g, &a, e);
        if (rc == CL_OK) break;
        int16_t code = e ? e->kafka_code : 0;
        if (rc == CL_E_KAFKA && (code == KP_ERROR_MEMBER_ID_REQUIRED || code == KP_ERROR_REBALANCE_IN_PROGRESS))
            continue; /* the broker gave us an id / a new round began: join again now */
        if (rc == CL_E_KAFKA && (code == KP_ERROR_UNKNOWN_MEMBER_ID || code == KP_ERROR_ILLEGAL_GENERATION)) {
            g->member_id[0] = '\0';
            continue;
        }
        if (!cl_retry_again(&g->cl->retry, tries + 1, rc, code)) break;
        cl_sleep_ms(cl_retry_backoff_ms(&g->cl->retry, tries + 2));
    }
    kp_arena_free(&a);
    return rc;
}

int cl_group_heartbeat(cl_group_t *g, cl_err_t *e) {
    if (cl_now_us() - g->last_heartbeat_us < (int64_t)g->heartbeat_interval_ms * 1000) return CL_OK;
    kp_arena_t a;
    kp_arena_init(&a, (size_t)1 << 20);
    kp_heartbeat_request_t hq;
    kp_heartbeat_request_init(&hq);
    hq.group_id = cl_str(g->group);
    hq.generation_id = g->generation;
    hq.member_id = cl_str(g->member_id);
    void *resp = NULL;
    int rc = cl_client_call(g->cl, g->coordinator, KP_API_HEARTBEAT, CL_VER_HEARTBEAT, &hq, &resp, NULL, &a, e);
    if (rc == CL_OK) {
        int16_t code = ((const kp_heartbeat_response_t *)resp)->error_code;
        g->last_heartbeat_us = cl_now_us();
        if (code == KP_ERROR_REBALANCE_IN_PROGRESS || code == KP_ERROR_UNKNOWN_MEMBER_ID ||
            code == KP_ERROR_ILLEGAL_GENERATION || code == KP_ERROR_NOT_COORDINATOR)
            rc = CL_GROUP_REJOIN;
        else if (code)
            rc = cl_err_kafka(e, code, "Heartbeat '%s'", g->group);
    }
    kp_arena_free(&a);
    return rc;
}

int cl_group_commit(cl_group_t *g, const int64_t *offsets, cl_err_t *e) {
    return cl_group_commit_offsets_as(g->cl, g->group, g->topic, offsets, g->npartitions, g->generation, g->member_id, e);
}

void cl_group_close(cl_group_t *g) {
    if (g->member_id[0] && g->coordinator >= 0) {
        kp_arena_t a;
        kp_arena_init(&a, (size_t)1 << 20);
        kp_leave_group_request_t lq;
        kp_leave_group_request_init(&lq);
        lq.group_id = cl_str(g->group);
        lq.member_id = cl_str(g->member_id);
        void *resp = NULL;
        cl_err_t e;
        if (cl_client_call(g->cl, g->coordinator, KP_API_LEAVE_GROUP, CL_VER_LEAVE_GROUP, &lq, &resp, NULL, &a, &e) != CL_OK) {
            /* best effort: the session timeout removes us anyway */
        }
        kp_arena_free(&a);
    }
    free(g->assigned);
    g->assigned = NULL;
}
