/* broker/api/h_features.c — UpdateFeatures (57): changes finalized feature
 * levels (broker/meta/features.h). It changes metadata, so a node that is
 * not the controller forwards it (cluster/forward.h) before it gets here;
 * on the controller the decision (features_update.h) is committed and the
 * answer sent once committed, as ElectLeaders. The finalized levels are
 * read back by every node from its image (ApiVersions). */
#include "broker/api/dispatch.h"
#include "broker/meta/acl.h"
#include "broker/meta/features_update.h"

#include <stdio.h>

#include "protocol/kp_errors.h"

typedef struct {
    bk_api_req_t *req;
    kp_update_features_response_t r;
} features_ctx_t;

static void features_answer(void *arg, int status) {
    features_ctx_t *c = arg;
    if (status != KP_OK) bk_meta_features_commit_failed(&c->r, bk_node_commit_error(status));
    bk_api_req_respond(c->req, &c->r);   /* frees req, whose arena holds c */
}

void bk_api_h_update_features(bk_api_req_t *req) {
    bk_node_t *n = req->node;
    features_ctx_t *c = bk_api_req_alloc(req, 1, sizeof *c);
    if (!c) { bk_api_req_close(req, "out of memory"); return; }
    c->req = req;
    /* Kafka: ALTER on the cluster, else the top-level error, nothing changed */
    if (!bk_api_authorized(req, BK_META_OP_ALTER, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME)) {
        kp_update_features_response_init(&c->r);
        c->r.error_code = KP_ERROR_CLUSTER_AUTHORIZATION_FAILED;
        c->r.error_message = bk_api_str("Cluster authorization failed.");
        bk_api_req_respond(req, &c->r);
        return;
    }
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    if (bk_meta_features_update(bk_node_decision_image(n), req->body, req->hdr.api_version, &req->arena, &recs,
                                &c->r) != KP_OK) {
        bk_meta_recs_free(&recs);
        bk_api_req_close(req, "out of memory");
        return;
    }
    if (recs.err != KP_OK) {
        bk_meta_recs_free(&recs);
        bk_meta_features_commit_failed(&c->r, KP_ERROR_UNKNOWN_SERVER_ERROR);
        bk_api_req_respond(req, &c->r);
        return;
    }
    if (recs.n > 0) fprintf(stderr, "skiff: node %d: UpdateFeatures: %zu level change(s)\n", n->id, recs.n);
    bk_node_commit(n, &recs, features_answer, c);
    bk_meta_recs_free(&recs);
}
