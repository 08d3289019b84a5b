/* broker/api/h_reassign.c — ElectLeaders, AlterPartitionReassignments and
 * ListPartitionReassignments on the wire. The first two change metadata:
 * a non-controller has forwarded them (forward.c) before they get here; on
 * the controller the decision (reassign.c) is committed and the answer sent
 * once committed, as CreateTopics does. A node that is not the controller
 * (no known controller to forward to) answers NOT_CONTROLLER per partition
 * through the failed commit. ListPartitionReassignments reads the local
 * image.
 * Authorization (Kafka): ElectLeaders and AlterPartitionReassignments need
 * ALTER on the cluster, ListPartitionReassignments DESCRIBE; refused:
 * CLUSTER_AUTHORIZATION_FAILED at the top level and on every requested
 * partition, nothing decided. */
#include "broker/api/dispatch.h"
#include "broker/meta/acl.h"
#include "broker/meta/reassign.h"

#include <stdio.h>

#include "protocol/kp_errors.h"

typedef struct {
    bk_api_req_t *req;
    kp_elect_leaders_response_t r;
} elect_ctx_t;

static void elect_answer(void *arg, int status) {
    elect_ctx_t *c = arg;
    if (status != KP_OK) bk_meta_elect_commit_failed(&c->r, bk_node_commit_error(status));
    bk_api_req_respond(c->req, &c->r);   /* frees req, whose arena holds c */
}

static bool cluster_may(bk_api_req_t *req, int8_t op) {
    return bk_api_authorized(req, op, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME);
}

typedef kp_elect_leaders_response_replica_election_result_t el_res_t;
typedef kp_elect_leaders_response_partition_result_t el_part_t;

static void elect_refused(bk_api_req_t *req) {
    const kp_elect_leaders_request_t *q = req->body;
    size_t nt = q->topic_partitions.count > 0 ? (size_t)q->topic_partitions.count : 0;
    kp_elect_leaders_response_t r;
    kp_elect_leaders_response_init(&r);
    r.error_code = KP_ERROR_CLUSTER_AUTHORIZATION_FAILED;
    el_res_t *ts = bk_api_req_alloc(req, nt, sizeof *ts);
    if (!ts && nt) { bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < nt; i++) {
        const kp_elect_leaders_request_topic_partitions_t *t = &q->topic_partitions.items[i];
        size_t np = t->partitions.count > 0 ? (size_t)t->partitions.count : 0;
        el_part_t *ps = bk_api_req_alloc(req, np, sizeof *ps);
        if (!ps && np) { bk_api_req_close(req, "out of memory"); return; }
        kp_elect_leaders_response_replica_election_result_init(&ts[i]);
        ts[i].topic = t->topic;
        for (size_t k = 0; k < np; k++) {
            kp_elect_leaders_response_partition_result_init(&ps[k]);
            ps[k].partition_id = t->partitions.items[k];
            ps[k].error_code = KP_ERROR_CLUSTER_AUTHORIZATION_FAILED;
            ps[k].error_message = bk_api_str(kp_error_name(KP_ERROR_CLUSTER_AUTHORIZATION_FAILED));
        }
        ts[i].partition_result.items = ps;
        ts[i].partition_result.count = (int32_t)np;
    }
    r.replica_election_results.items = ts;
    r.replica_election_results.count = (int32_t)nt;
    bk_api_req_respond(req, &r);
}

void bk_api_h_elect_leaders(bk_api_req_t *req) {
    if (!cluster_may(req, BK_META_OP_ALTER)) { elect_refused(req); return; }
    bk_node_t *n = req->node;
    elect_ctx_t *c = bk_api_req_alloc(req, 1, sizeof *c);
    if (!c) { bk_api_req_close(req, "out of memory"); return; }
    c->req = req;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    if (bk_meta_elect_leaders_decide(&n->ctrl, bk_node_decision_image(n), req->body, &req->arena, &recs, &c->r) != KP_OK) {
        bk_meta_recs_free(&recs);
        bk_api_req_close(req, "out of memory");
        return;
    }
    if (recs.err != KP_OK) {
        bk_meta_recs_free(&recs);
        bk_meta_elect_commit_failed(&c->r, KP_ERROR_UNKNOWN_SERVER_ERROR);
        bk_api_req_respond(req, &c->r);
        return;
    }
    if (recs.n > 0) fprintf(stderr, "skiff: node %d: ElectLeaders: %zu leader change(s)\n", n->id, recs.n);
    bk_node_commit(n, &recs, elect_answer, c);
    bk_meta_recs_free(&recs);
}

typedef struct {
    bk_api_req_t *req;
    kp_alter_partition_reassignments_response_t r;
} reassign_ctx_t;

static void reassign_answer(void *arg, int status) {
    reassign_ctx_t *c = arg;
    if (status != KP_OK) bk_meta_reassign_commit_failed(&c->r, bk_node_commit_error(status));
    bk_api_req_respond(c->req, &c->r);
}

typedef kp_alter_partition_reassignments_response_reassignable_topic_response_t ar_res_t;
typedef kp_alter_partition_reassignments_response_reassignable_partition_response_t ar_part_t;

static void reassign_refused(bk_api_req_t *req) {
    const kp_alter_partition_reassignments_request_t *q = req->body;
    size_t nt = q->topics.count > 0 ? (size_t)q->topics.count : 0;
    kp_alter_partition_reassignments_response_t r;
    kp_alter_partition_reassignments_response_init(&r);
    r.error_code = KP_ERROR_CLUSTER_AUTHORIZATION_FAILED;
    r.error_message = bk_api_str(kp_error_name(KP_ERROR_CLUSTER_AUTHORIZATION_FAILED));
    ar_res_t *ts = bk_api_req_alloc(req, nt, sizeof *ts);
    if (!ts && nt) { bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < nt; i++) {
        const kp_alter_partition_reassignments_request_reassignable_topic_t *t = &q->topics.items[i];
        size_t np = t->partitions.count > 0 ? (size_t)t->partitions.count : 0;
        ar_part_t *ps = bk_api_req_alloc(req, np, sizeof *ps);
        if (!ps && np) { bk_api_req_close(req, "out of memory"); return; }
        kp_alter_partition_reassignments_response_reassignable_topic_response_init(&ts[i]);
        ts[i].name = t->name;
        for (size_t k = 0; k < np; k++) {
            kp_alter_partition_reassignments_response_reassignable_partition_response_init(&ps[k]);
            ps[k].partition_index = t->partitions.items[k].partition_index;
            ps[k].error_code = KP_ERROR_CLUSTER_AUTHORIZATION_FAILED;
            ps[k].error_message = r.error_message;
        }
        ts[i].partitions.items = ps;
        ts[i].partitions.count = (int32_t)np;
    }
    r.responses.items = ts;
    r.responses.count = (int32_t)nt;
    bk_api_req_respond(req, &r);
}

void bk_api_h_alter_partition_reassignments(bk_api_req_t *req) {
    if (!cluster_may(req, BK_META_OP_ALTER)) { reassign_refused(req); return; }
    bk_node_t *n = req->node;
    reassign_ctx_t *c = bk_api_req_alloc(req, 1, sizeof *c);
    if (!c) { bk_api_req_close(req, "out of memory"); return; }
    c->req = req;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    if (bk_meta_reassign_decide(&n->ctrl, bk_node_decision_image(n), req->body, &req->arena, &recs, &c->r) != KP_OK) {
        bk_meta_recs_free(&recs);
        bk_api_req_close(req, "out of memory");
        return;
    }
    if (recs.err != KP_OK) {
        bk_meta_recs_free(&recs);
        bk_meta_reassign_commit_failed(&c->r, KP_ERROR_UNKNOWN_SERVER_ERROR);
        bk_api_req_respond(req, &c->r);
        return;
    }
    if (recs.n > 0) fprintf(stderr, "skiff: node %d: AlterPartitionReassignments: %zu change(s)\n", n->id, recs.n);
    bk_node_commit(n, &recs, reassign_answer, c);
    bk_meta_recs_free(&recs);
}

void bk_api_h_list_partition_reassignments(bk_api_req_t *req) {
    kp_list_partition_reassignments_response_t r;
    if (!cluster_may(req, BK_META_OP_DESCRIBE)) {
        kp_list_partition_reassignments_response_init(&r);
        r.error_code = KP_ERROR_CLUSTER_AUTHORIZATION_FAILED;
        r.error_message = bk_api_str(kp_error_name(KP_ERROR_CLUSTER_AUTHORIZATION_FAILED));
        bk_api_req_respond(req, &r);
        return;
    }
    if (bk_meta_list_reassign_answer(&req->node->img, req->body, &req->arena, &r) != KP_OK) {
        bk_api_req_close(req, "out of memory");
        return;
    }
    bk_api_req_respond(req, &r);
}
