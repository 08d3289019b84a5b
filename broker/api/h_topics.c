/* broker/api/h_topics.c — CreateTopics, DeleteTopics, CreatePartitions and
 * auto-creation: request -> controller decision (validation, assignment,
 * every Kafka error code: see controller.h) -> records committed through
 * the metadata committer -> answer once committed. validate_only runs the
 * same decision and commits nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/cluster/forward.h"
#include "broker/cluster/topics.h"
#include "broker/meta/acl.h"
#include "protocol/kp_errors.h"

/* ---- CreateTopics ------------------------------------------------------- */

typedef struct {
    bk_api_req_t *req;
    kp_create_topics_response_t r;
    bk_meta_ctrl_create_result_t *res;
} create_ctx_t;

static void create_answer(void *arg, int status) {
    create_ctx_t *c = arg;
    kp_create_topics_response_t *r = &c->r;
    for (int32_t i = 0; i < r->topics.count; i++) {
        kp_create_topics_response_creatable_topic_result_t *t = &r->topics.items[i];
        const bk_meta_ctrl_create_result_t *x = &c->res[i];
        t->error_code = status != KP_OK && x->error == 0 ? bk_node_commit_error(status) : x->error;
        t->error_message = t->error_code ? bk_api_str(x->message[0] ? x->message : kp_error_name(t->error_code))
                                         : kp_slice_null();
        memcpy(t->topic_id.b, x->topic_id.b, 16);
        t->num_partitions = t->error_code ? -1 : x->num_partitions;
        t->replication_factor = t->error_code ? -1 : x->replication_factor;
        t->configs.count = 0;
    }
    bk_api_req_respond(c->req, r);   /* frees req, whose arena holds c */
}

static int build_create(bk_api_req_t *req, bk_meta_ctrl_create_topic_t *out) {
    const kp_create_topics_request_t *q = req->body;
    for (int32_t i = 0; i < q->topics.count; i++) {
        const kp_create_topics_request_creatable_topic_t *t = &q->topics.items[i];
        bk_meta_ctrl_create_topic_t *o = &out[i];
        o->name = bk_api_req_topic_cstr(req, t->name);
        o->num_partitions = t->num_partitions;
        o->replication_factor = t->replication_factor;
        size_t na = t->assignments.count > 0 ? (size_t)t->assignments.count : 0;
        bk_meta_ctrl_assignment_t *as = bk_api_req_alloc(req, na, sizeof *as);
        size_t nc = t->configs.count > 0 ? (size_t)t->configs.count : 0;
        bk_meta_ctrl_kv_t *kv = bk_api_req_alloc(req, nc, sizeof *kv);
        if (!o->name || !as || !kv) return KP_ERR_NOMEM;
        for (size_t k = 0; k < na; k++) {
            as[k].partition = t->assignments.items[k].partition_index;
            as[k].brokers = t->assignments.items[k].broker_ids.items;
            as[k].nbrokers = t->assignments.items[k].broker_ids.count > 0 ? (size_t)t->assignments.items[k].broker_ids.count : 0;
        }
        for (size_t k = 0; k < nc; k++) {
            kv[k].name = bk_api_req_cstr(req, t->configs.items[k].name);
            kv[k].value = kp_slice_is_null(t->configs.items[k].value) ? NULL : bk_api_req_cstr(req, t->configs.items[k].value);
            /* NULL from a present value: out of memory or a NUL byte (refused,
             * not cut; the close names it) — never "no value" */
            if (!kv[k].name || (!kv[k].value && !kp_slice_is_null(t->configs.items[k].value))) return KP_ERR_NOMEM;
        }
        o->assignments = as;
        o->nassignments = na;
        o->configs = kv;
        o->nconfigs = nc;
    }
    return KP_OK;
}

void bk_api_h_create_topics(bk_api_req_t *req) {
    const kp_create_topics_request_t *q = req->body;
    bk_node_t *n = req->node;
    size_t cnt = q->topics.count > 0 ? (size_t)q->topics.count : 0;
    create_ctx_t *c = bk_api_req_alloc(req, 1, sizeof *c);
    bk_meta_ctrl_create_topic_t *in = bk_api_req_alloc(req, cnt, sizeof *in);
    kp_create_topics_response_creatable_topic_result_t *out = bk_api_req_alloc(req, cnt, sizeof *out);
    if (!c || !in || !out) { bk_api_req_close(req, "out of memory"); return; }
    c->req = req;
    c->res = bk_api_req_alloc(req, cnt, sizeof *c->res);
    if (!c->res || build_create(req, in) != KP_OK) { bk_api_req_close(req, "out of memory"); return; }
    kp_create_topics_response_init(&c->r);
    for (size_t i = 0; i < cnt; i++) {
        kp_create_topics_response_creatable_topic_result_init(&out[i]);
        out[i].name = q->topics.items[i].name;
    }
    c->r.topics.items = out;
    c->r.topics.count = (int32_t)cnt;
    /* CREATE on the cluster, else on each topic; a refused topic is left
     * out of the decision (TOPIC_AUTHORIZATION_FAILED) */
    bool all = bk_api_authorized(req, BK_META_OP_CREATE, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME);
    size_t m = 0;
    size_t *map = bk_api_req_alloc(req, cnt, sizeof *map);
    bk_meta_ctrl_create_result_t *res2 = bk_api_req_alloc(req, cnt, sizeof *res2);
    if (!map || !res2) { bk_api_req_close(req, "out of memory"); return; }
    bk_api_mq_t mq;
    bk_api_mq_begin(req, &mq);
    for (size_t i = 0; i < cnt; i++) {
        if (!all && !bk_api_authorized(req, BK_META_OP_CREATE, BK_META_RES_TOPIC, in[i].name)) {
            c->res[i].error = KP_ERROR_TOPIC_AUTHORIZATION_FAILED;
        } else if (!bk_api_mq_admit(req, &mq, bk_api_mq_partitions(req, (int32_t)i))) {
            c->res[i].error = KP_ERROR_THROTTLING_QUOTA_EXCEEDED;
        } else {
            in[m] = in[i];
            map[m++] = i;
        }
    }
    c->r.throttle_time_ms = bk_api_mq_throttle(req, &mq);
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_create_topics(&n->ctrl, bk_node_decision_image(n), in, m, q->validate_only, &recs, res2);
    for (size_t k = 0; k < m; k++) c->res[map[k]] = res2[k];
    if (recs.err != KP_OK) {
        for (size_t i = 0; i < cnt; i++) c->res[i].error = KP_ERROR_UNKNOWN_SERVER_ERROR;
        bk_meta_recs_free(&recs);
        create_answer(c, recs.err);
        return;
    }
    bk_node_commit(n, &recs, create_answer, c);
    bk_meta_recs_free(&recs);
}

/* ---- DeleteTopics ------------------------------------------------------- */

typedef struct {
    bk_api_req_t *req;
    kp_delete_topics_response_t r;
    bk_meta_ctrl_delete_result_t *res;
} delete_ctx_t;

static void delete_answer(void *arg, int status) {
    delete_ctx_t *c = arg;
    for (int32_t i = 0; i < c->r.responses.count; i++) {
        kp_delete_topics_response_deletable_topic_result_t *t = &c->r.responses.items[i];
        t->error_code = status != KP_OK && c->res[i].error == 0 ? bk_node_commit_error(status) : c->res[i].error;
        memcpy(t->topic_id.b, c->res[i].id.b, 16);
        if (t->error_code) t->error_message = bk_api_str(kp_error_name(t->error_code));
    }
    bk_api_req_respond(c->req, &c->r);
}

void bk_api_h_delete_topics(bk_api_req_t *req) {
    const kp_delete_topics_request_t *q = req->body;
    bk_node_t *n = req->node;
    bool by_state = req->hdr.api_version >= 6;
    int32_t cnt32 = by_state ? q->topics.count : q->topic_names.count;
    size_t cnt = cnt32 > 0 ? (size_t)cnt32 : 0;
    delete_ctx_t *c = bk_api_req_alloc(req, 1, sizeof *c);
    bk_meta_ctrl_delete_topic_t *in = bk_api_req_alloc(req, cnt, sizeof *in);
    kp_delete_topics_response_deletable_topic_result_t *out = bk_api_req_alloc(req, cnt, sizeof *out);
    if (!c || !in || !out) { bk_api_req_close(req, "out of memory"); return; }
    c->req = req;
    c->res = bk_api_req_alloc(req, cnt, sizeof *c->res);
    if (!c->res) { bk_api_req_close(req, "out of memory"); return; }
    kp_delete_topics_response_init(&c->r);
    for (size_t i = 0; i < cnt; i++) {
        kp_str_t name = by_state ? q->topics.items[i].name : q->topic_names.items[i];
        kp_delete_topics_response_deletable_topic_result_init(&out[i]);
        out[i].name = name;
        in[i].name = kp_slice_is_null(name) ? NULL : bk_api_req_topic_cstr(req, name);
        if (by_state) memcpy(in[i].id.b, q->topics.items[i].topic_id.b, 16);
    }
    c->r.responses.items = out;
    c->r.responses.count = (int32_t)cnt;
    if (!bk_cfg_bool(n->cfg, BK_CFG_DELETE_TOPIC_ENABLE)) {
        for (size_t i = 0; i < cnt; i++) c->res[i].error = KP_ERROR_TOPIC_DELETION_DISABLED;
        delete_answer(c, KP_OK);
        return;
    }
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    /* DELETE on each topic (by name, or by the name its id has); a refused
     * topic is left out of the decision (TOPIC_AUTHORIZATION_FAILED), as is
     * one over the controller mutation quota (THROTTLING_QUOTA_EXCEEDED) */
    bk_api_mq_t mq;
    bk_api_mq_begin(req, &mq);
    size_t m = 0;
    size_t *map = bk_api_req_alloc(req, cnt, sizeof *map);
    bk_meta_ctrl_delete_topic_t *in2 = bk_api_req_alloc(req, cnt, sizeof *in2);
    bk_meta_ctrl_delete_result_t *res2 = bk_api_req_alloc(req, cnt, sizeof *res2);
    if (!map || !in2 || !res2) { bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < cnt; i++) {
        const char *nm = in[i].name;
        if (!nm) {
            const bk_meta_topic_t *t = bk_meta_image_topic_by_id(&n->img, &in[i].id);
            nm = t ? t->name : NULL;
        }
        if (nm && !bk_api_authorized(req, BK_META_OP_DELETE, BK_META_RES_TOPIC, nm)) {
            c->res[i].error = KP_ERROR_TOPIC_AUTHORIZATION_FAILED;
        } else if (!bk_api_mq_admit(req, &mq, bk_api_mq_partitions(req, (int32_t)i))) {
            c->res[i].error = KP_ERROR_THROTTLING_QUOTA_EXCEEDED;
        } else {
            in2[m] = in[i];
            map[m++] = i;
        }
    }
    c->r.throttle_time_ms = bk_api_mq_throttle(req, &mq);
    bk_meta_ctrl_delete_topics(&n->ctrl, bk_node_decision_image(n), in2, m, &recs, res2);
    for (size_t k = 0; k < m; k++) c->res[map[k]] = res2[k];
    for (size_t i = 0; i < cnt; i++)
        if (c->res[i].error == 0 && in[i].name)
            fprintf(stderr, "skiff: node %d: deleting topic %s\n", n->id, in[i].name);
    bk_node_commit(n, &recs, delete_answer, c);
    bk_meta_recs_free(&recs);
}

/* ---- CreatePartitions ----------------------------------------------------- */

typedef struct {
    bk_api_req_t *req;
    kp_create_partitions_response_t r;
    int16_t *errors;
    char (*msgs)[BK_META_CTRL_MESSAGE_MAX];
} cparts_ctx_t;

static void cparts_answer(void *arg, int status) {
    cparts_ctx_t *c = arg;
    for (int32_t i = 0; i < c->r.results.count; i++) {
        kp_create_partitions_response_create_partitions_topic_result_t *t = &c->r.results.items[i];
        t->error_code = status != KP_OK && c->errors[i] == 0 ? bk_node_commit_error(status) : c->errors[i];
        t->error_message = t->error_code ? bk_api_str(c->msgs[i][0] ? c->msgs[i] : kp_error_name(t->error_code))
                                         : kp_slice_null();
    }
    bk_api_req_respond(c->req, &c->r);
}

void bk_api_h_create_partitions(bk_api_req_t *req) {
    const kp_create_partitions_request_t *q = req->body;
    bk_node_t *n = req->node;
    size_t cnt = q->topics.count > 0 ? (size_t)q->topics.count : 0;
    cparts_ctx_t *c = bk_api_req_alloc(req, 1, sizeof *c);
    bk_meta_ctrl_create_partitions_t *in = bk_api_req_alloc(req, cnt, sizeof *in);
    kp_create_partitions_response_create_partitions_topic_result_t *out = bk_api_req_alloc(req, cnt, sizeof *out);
    if (!c || !in || !out) { bk_api_req_close(req, "out of memory"); return; }
    c->req = req;
    c->errors = bk_api_req_alloc(req, cnt, sizeof *c->errors);
    c->msgs = bk_api_req_alloc(req, cnt, sizeof *c->msgs);
    if (!c->errors || !c->msgs) { bk_api_req_close(req, "out of memory"); return; }
    kp_create_partitions_response_init(&c->r);
    for (size_t i = 0; i < cnt; i++) {
        const kp_create_partitions_request_create_partitions_topic_t *t = &q->topics.items[i];
        kp_create_partitions_response_create_partitions_topic_result_init(&out[i]);
        out[i].name = t->name;
        in[i].name = bk_api_req_topic_cstr(req, t->name);
        in[i].count = t->count;
        size_t na = t->assignments.count > 0 ? (size_t)t->assignments.count : 0;
        bk_meta_ctrl_assignment_t *as = bk_api_req_alloc(req, na, sizeof *as);
        if (!in[i].name || !as) { bk_api_req_close(req, "out of memory"); return; }
        for (size_t k = 0; k < na; k++) {
            as[k].partition = -1;
            as[k].brokers = t->assignments.items[k].broker_ids.items;
            as[k].nbrokers = t->assignments.items[k].broker_ids.count > 0 ? (size_t)t->assignments.items[k].broker_ids.count : 0;
        }
        in[i].assignments = as;
        in[i].nassignments = na;
    }
    c->r.results.items = out;
    c->r.results.count = (int32_t)cnt;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    /* ALTER on each topic (Kafka): refused topics answer
     * TOPIC_AUTHORIZATION_FAILED and are left out of the decision */
    bk_meta_ctrl_create_partitions_t *in2 = bk_api_req_alloc(req, cnt, sizeof *in2);
    int16_t *err2 = bk_api_req_alloc(req, cnt, sizeof *err2);
    char (*msg2)[BK_META_CTRL_MESSAGE_MAX] = bk_api_req_alloc(req, cnt, sizeof *msg2);
    size_t *map = bk_api_req_alloc(req, cnt, sizeof *map);
    if ((!in2 || !err2 || !msg2 || !map) && cnt) {
        bk_meta_recs_free(&recs);
        bk_api_req_close(req, "out of memory");
        return;
    }
    size_t m = 0;
    bk_api_mq_t mq;
    bk_api_mq_begin(req, &mq);
    for (size_t i = 0; i < cnt; i++) {
        c->errors[i] = 0;
        c->msgs[i][0] = '\0';
        if (!bk_api_authorized(req, BK_META_OP_ALTER, BK_META_RES_TOPIC, in[i].name)) {
            c->errors[i] = KP_ERROR_TOPIC_AUTHORIZATION_FAILED;
        } else if (!bk_api_mq_admit(req, &mq, bk_api_mq_partitions(req, (int32_t)i))) {
            c->errors[i] = KP_ERROR_THROTTLING_QUOTA_EXCEEDED;
        } else {
            in2[m] = in[i];
            map[m++] = i;
        }
    }
    c->r.throttle_time_ms = bk_api_mq_throttle(req, &mq);
    bk_meta_ctrl_create_partitions(&n->ctrl, bk_node_decision_image(n), in2, m, q->validate_only, &recs, err2, msg2);
    for (size_t k = 0; k < m; k++) {
        c->errors[map[k]] = err2[k];
        memcpy(c->msgs[map[k]], msg2[k], sizeof msg2[k]);
    }
    bk_node_commit(n, &recs, cparts_answer, c);
    bk_meta_recs_free(&recs);
}
