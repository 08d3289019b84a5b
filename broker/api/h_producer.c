/* broker/api/h_producer.c — InitProducerId (idempotent producers).
 *
 * InitProducerId without a transactional id hands out ids from a block the
 * controller allocates (ProducerIdBlock record, committed before any id of
 * it is used, so an id is never handed out twice across restarts). A
 * request that names its current id/epoch (v3+, KIP-360) gets the epoch
 * bumped, or a fresh id once the epoch would overflow.
 *
 * FindCoordinator lives in h_groups.c (group driver). InitProducerId with
 * a transactional id goes to the transaction coordinator (h_txn.c). */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/meta/acl.h"
#include "broker/txn/txn_driver.h"
#include "protocol/kp_errors.h"

typedef struct {
    bk_api_req_t *req;
    int64_t first;
    int32_t count;
} alloc_ctx_t;

static void answer_pid(bk_api_req_t *req, int16_t err, int64_t pid, int16_t epoch) {
    kp_init_producer_id_response_t r;
    memset(&r, 0, sizeof r);
    kp_init_producer_id_response_init(&r);
    r.error_code = err;
    r.producer_id = err ? -1 : pid;
    r.producer_epoch = err ? -1 : epoch;
    bk_api_req_respond(req, &r);
}

static void hand_out(bk_api_req_t *req) {
    bk_node_t *n = req->node;
    assert(n->pid_next < n->pid_end);
    answer_pid(req, 0, n->pid_next++, 0);
}

static void block_committed(void *arg, int status) {
    alloc_ctx_t *c = arg;
    bk_node_t *n = c->req->node;
    if (status != KP_OK) { answer_pid(c->req, KP_ERROR_UNKNOWN_SERVER_ERROR, -1, -1); return; }
    n->pid_next = c->first;
    n->pid_end = c->first + c->count;
    hand_out(c->req);
}

void bk_api_h_init_producer_id(bk_api_req_t *req) {
    const kp_init_producer_id_request_t *q = req->body;
    bk_node_t *n = req->node;
    /* WRITE on the transactional id, else IDEMPOTENT_WRITE on the cluster */
    if (!kp_slice_is_null(q->transactional_id) &&
        !bk_api_authorized_str(req, BK_META_OP_WRITE, BK_META_RES_TRANSACTIONAL_ID, q->transactional_id)) {
        answer_pid(req, KP_ERROR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1);
        return;
    }
    if (kp_slice_is_null(q->transactional_id) &&
        !bk_api_authorized(req, BK_META_OP_IDEMPOTENT_WRITE, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME)) {
        answer_pid(req, KP_ERROR_CLUSTER_AUTHORIZATION_FAILED, -1, -1);
        return;
    }
    if (!kp_slice_is_null(q->transactional_id)) {   /* the transaction coordinator's */
        bk_api_h_init_producer_id_txn(req);
        return;
    }
    if (q->producer_id >= 0 && q->producer_epoch >= 0 && q->producer_epoch < INT16_MAX - 1) {
        answer_pid(req, 0, q->producer_id, (int16_t)(q->producer_epoch + 1));
        return;
    }
    if (n->pid_next < n->pid_end) { hand_out(req); return; }
    if (bk_node_controller_id(n) != n->id && n->txns) {
        /* Only the controller commits blocks: one id is asked of it (the
         * transaction driver's allocator); the client retries meanwhile. */
        int64_t pid = -1;
        if (bk_txn_td_alloc_pid(n->txns, &pid)) answer_pid(req, 0, pid, 0);
        else answer_pid(req, KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS, -1, -1);
        return;
    }
    alloc_ctx_t *c = bk_api_req_alloc(req, 1, sizeof *c);
    if (!c) { bk_api_req_close(req, "out of memory"); return; }
    c->req = req;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    int16_t e = bk_meta_ctrl_alloc_producer_ids(&n->ctrl, bk_node_decision_image(n), n->id, n->broker_epoch, &recs, &c->first, &c->count);
    if (e != 0 || c->count <= 0) {
        bk_meta_recs_free(&recs);
        answer_pid(req, e ? e : KP_ERROR_UNKNOWN_SERVER_ERROR, -1, -1);
        return;
    }
    bk_node_commit(n, &recs, block_committed, c);
    bk_meta_recs_free(&recs);
}
