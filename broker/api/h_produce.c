/* broker/api/h_produce.c — Produce.
 *
 * Decodes the request and hands each partition to the partition service
 * (replication/partition.h), which checks leadership and acks (UNKNOWN_
 * TOPIC_OR_PARTITION / NOT_LEADER_OR_FOLLOWER / KAFKA_STORAGE_ERROR /
 * NOT_ENOUGH_REPLICAS), validates the batches once (sizes, CRC, records,
 * idempotence, legacy conversion), appends (offsets and leader epoch are
 * patched into the request buffer in place: no copy), wakes waiting
 * fetches and, for acks=all, holds the partition until its replicas have
 * it. The error codes are listed in partition.h.
 *
 * Transactional batches need the request's transactional id (else
 * INVALID_RECORD); when this node coordinates that id, the partition must be
 * in its ongoing transaction (INVALID_TXN_STATE, bk_txn_td_check_produce), which
 * is checked here, between validation and append (the service sits below
 * the coordinators). Storage opens the producer's transaction at the first
 * batch (the LSO stops there) and the coordinator's marker ends it.
 *
 * acks=0 gets no response; if any partition failed, the connection is
 * closed instead so that the producer refreshes its metadata (NOTES §1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/meta/acl.h"
#include "broker/replication/partition.h"
#include "broker/txn/txn_driver.h"
#include "protocol/kp_errors.h"

typedef kp_produce_response_partition_produce_response_t presp_t;

/* A produce whose acks=all partitions wait for the replicas: answered when
 * `pending` drops to 0 (it starts at 1 for the handler itself). Lives in
 * the request arena, which stays until the answer. */
typedef struct {
    bk_api_req_t *req;
    kp_produce_response_t r;
    int pending;
} pwait_t;

static void fail_partition(presp_t *o, int16_t err) {
    o->error_code = err;
    o->base_offset = -1;
    o->error_message = bk_api_str(kp_error_name(err));
}

static void pw_release(pwait_t *pw) {
    if (--pw->pending == 0) bk_api_req_respond(pw->req, &pw->r);
}

/* An acks=all partition's completion (bk_repl_ps_done_fn). */
static void ack_done(void *ctx, void *part_ctx, const bk_repl_ps_result_t *res) {
    if (res->error) fail_partition(part_ctx, res->error);
    pw_release(ctx);
}

static void produce_partition(bk_api_req_t *req, pwait_t *pw, const bk_meta_topic_t *t, int16_t acks,
                              const kp_produce_request_partition_produce_data_t *pd, presp_t *o) {
    bk_node_t *n = req->node;
    const kp_produce_request_t *q = req->body;
    o->index = pd->index;
    o->base_offset = -1;
    o->log_append_time_ms = -1;
    o->log_start_offset = -1;
    bk_repl_part_t *p = NULL;
    if ((o->error_code = bk_repl_ps_find(n, t, pd->index, &p)) != 0) return;
    bk_repl_ps_opts_t opts = { .acks = acks, .min_insync = 0, .timeout_ms = q->timeout_ms, .leader_epoch = -1 };
    bk_repl_ps_producer_t pr = { req->hdr.api_version, !kp_slice_is_null(q->transactional_id) };
    bk_repl_ps_set_t set;
    /* The request frame is our own heap copy (dispatch.c): the service
     * patches offsets and epochs into it in place. */
    o->error_code = bk_repl_ps_validate(n, p, &opts, &pr, (uint8_t *)pd->records.bytes.p, pd->records.bytes.len,
                                   &req->arena, &set);
    if (o->error_code) return;
    if (set.txn_pid >= 0 && set.dup_first < 0 && n->txns)
        o->error_code = bk_txn_td_check_produce(n->txns, q->transactional_id, set.txn_pid, set.txn_epoch, t->name,
                                            pd->index);
    if (o->error_code) return;
    bk_repl_ps_result_t res;
    bool waits = bk_repl_ps_append(n, p, &set, &opts, ack_done, pw, o, &res);
    o->log_start_offset = res.log_start_offset;
    if (!waits && res.error) {
        fail_partition(o, res.error);
        return;
    }
    o->base_offset = res.base_offset;
    o->log_append_time_ms = res.log_append_time_ms;
    if (waits) pw->pending++;
}

void bk_api_h_produce(bk_api_req_t *req) {
    const kp_produce_request_t *q = req->body;
    bk_node_t *n = req->node;
    int16_t acks = q->acks;
    bool bad_acks = acks != 0 && acks != 1 && acks != -1;
    pwait_t *pw = bk_api_req_alloc(req, 1, sizeof *pw);
    if (!pw) { bk_api_req_close(req, "out of memory"); return; }
    pw->req = req;
    pw->pending = 1;
    kp_produce_response_t *rp = &pw->r;
    kp_produce_response_init(rp);
    size_t nt = q->topic_data.count > 0 ? (size_t)q->topic_data.count : 0;
    kp_produce_response_topic_produce_response_t *ts = bk_api_req_alloc(req, nt, sizeof *ts);
    if (!ts) { bk_api_req_close(req, "out of memory"); return; }
    /* every allocation before the first append: once a partition waits for
     * its replicas the request can no longer be closed */
    presp_t **pss = bk_api_req_alloc(req, nt, sizeof *pss);
    char **names = bk_api_req_alloc(req, nt, sizeof *names);
    if (!pss || !names) { bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < nt; i++) {
        const kp_produce_request_topic_produce_data_t *td = &q->topic_data.items[i];
        size_t np = td->partition_data.count > 0 ? (size_t)td->partition_data.count : 0;
        pss[i] = bk_api_req_alloc(req, np, sizeof *pss[i]);
        names[i] = bk_api_req_topic_cstr(req, td->name);
        if (!pss[i] || !names[i]) { bk_api_req_close(req, "out of memory"); return; }
    }
    bool any_error = false;
    /* Kafka's checks, before any append: WRITE on the transactional id
     * (every partition fails), then WRITE on each topic (its partitions) */
    int16_t txn_denied = !kp_slice_is_null(q->transactional_id) &&
                                 !bk_api_authorized_str(req, BK_META_OP_WRITE, BK_META_RES_TRANSACTIONAL_ID,
                                                        q->transactional_id)
                             ? KP_ERROR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                             : 0;
    for (size_t i = 0; i < nt; i++) {
        const kp_produce_request_topic_produce_data_t *td = &q->topic_data.items[i];
        int16_t denied = txn_denied ? txn_denied
                         : bk_api_authorized(req, BK_META_OP_WRITE, BK_META_RES_TOPIC, names[i])
                             ? 0
                             : KP_ERROR_TOPIC_AUTHORIZATION_FAILED;
        kp_produce_response_topic_produce_response_init(&ts[i]);
        ts[i].name = td->name;
        size_t np = td->partition_data.count > 0 ? (size_t)td->partition_data.count : 0;
        presp_t *ps = pss[i];
        const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&n->img, names[i]);
        for (size_t k = 0; k < np; k++) {
            kp_produce_response_partition_produce_response_init(&ps[k]);
            if (bad_acks || denied) {
                ps[k].index = td->partition_data.items[k].index;
                ps[k].base_offset = -1;
                ps[k].log_append_time_ms = -1;
                ps[k].log_start_offset = -1;
                ps[k].error_code = bad_acks ? KP_ERROR_INVALID_REQUIRED_ACKS : denied;
            } else {
                produce_partition(req, pw, t, acks, &td->partition_data.items[k], &ps[k]);
            }
            if (ps[k].error_code) {
                any_error = true;
                ps[k].error_message = bk_api_str(kp_error_name(ps[k].error_code));
            }
        }
        ts[i].partition_responses.items = ps;
        ts[i].partition_responses.count = (int32_t)np;
    }
    if (acks == 0) {
        if (any_error) bk_api_req_close(req, "acks=0 produce failed");
        else bk_api_req_respond_none(req);
        return;
    }
    rp->responses.items = ts;
    rp->responses.count = (int32_t)nt;
    pw_release(pw);
}
