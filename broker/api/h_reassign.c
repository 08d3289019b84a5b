/* broker/api/h_reassign.c — ElectLeaders, AlterPartitionReassignments and
 * ListPartitionReassignments on the wire. The first two change metadata:
 * a non-controller has forwarded them (forward.c) before they get here; on
 * the controller the decision (reassign.c) is committed and the answer sent
 * once committed, as CreateTopics does. A node that is not the controller
 * (no known controller to forward to) answers NOT_CONTROLLER per partition
 * through the failed commit. ListPartitionReassignments reads the local
 * image. */
#include "broker/api/dispatch.h"
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

void bk_api_h_elect_leaders(bk_api_req_t *req) {
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

void bk_api_h_alter_partition_reassignments(bk_api_req_t *req) {
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
    if (bk_meta_list_reassign_answer(&req->node->img, req->body, &req->arena, &r) != KP_OK) {
        bk_api_req_close(req, "out of memory");
        return;
    }
    bk_api_req_respond(req, &r);
}
