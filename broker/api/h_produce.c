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
 * INVALID_RECORD); the partition must be in the id's ongoing transaction
 * (KIP-890 part 1): when this node coordinates that id it is checked at
 * once (INVALID_TXN_STATE, bk_txn_td_check_produce); when another broker
 * does, the first batch of the transaction on this partition waits for
 * that coordinator's AddPartitionsToTxn VerifyOnly verdict
 * (bk_txn_td_verify_remote) and is validated again before its append.
 * Both between validation and append (the service sits below the
 * coordinators). While a first batch waits, the connection's next frames
 * wait too (verify_begin below: Kafka's one request per connection). Storage opens the producer's transaction at the first
 * batch (the LSO stops there) and the coordinator's marker ends it.
 *
 * acks=0 gets no response; if any partition failed, the connection is
 * closed instead so that the producer refreshes its metadata (NOTES §1). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/api/prepare.h"
#include "broker/meta/acl.h"
#include "broker/replication/partition.h"
#include "broker/txn/txn_driver.h"
#include "protocol/kp_errors.h"
#include "storage/st_log.h"
#include "storage/st_producer_state.h"

typedef kp_produce_response_partition_produce_response_t presp_t;

/* A produce whose acks=all partitions wait for the replicas: answered when
 * `pending` drops to 0 (it starts at 1 for the handler itself). Lives in
 * the request arena, which stays until the answer. */
typedef struct {
    bk_api_req_t *req;
    kp_produce_response_t r;
    int pending;
    int verifying;               /* partitions waiting for their coordinator (below) */
    bool paused;                 /* the connection was paused for them */
} pwait_t;

static void fail_partition(presp_t *o, int16_t err) {
    o->error_code = err;
    o->base_offset = -1;
    o->error_message = bk_api_str(kp_error_name(err));
}

/* The request's size counts against producer_byte_rate (as in Kafka),
 * once, when the answer is ready. */
static void pw_release(pwait_t *pw) {
    if (--pw->pending != 0) return;
    pw->r.throttle_time_ms = bk_api_req_quota(pw->req, BK_META_QUOTA_PRODUCER_BYTE_RATE, (double)pw->req->frame_len);
    bk_api_req_respond(pw->req, &pw->r);
}

/* An acks=all partition's completion (bk_repl_ps_done_fn). */
static void ack_done(void *ctx, void *part_ctx, const bk_repl_ps_result_t *res) {
    if (res->error) fail_partition(part_ctx, res->error);
    pw_release(ctx);
}

/* While a first transactional batch waits for its coordinator, the
 * connection hands no further frame to the handlers (bk_net_conn_pause),
 * as Kafka serves one request per connection at a time: the producer's
 * next batch for that partition is pipelined behind it, and validated
 * now it would meet a producer state without its predecessor —
 * OUT_OF_ORDER_SEQUENCE_NUMBER, answered after the predecessor's success,
 * which the client cannot retry (the transaction fails). Seen with
 * transactions v2, where every transaction's first batch per partition
 * waits for the implicit add (t_java_txn_failover.sh). Undone when the
 * request's last such partition has been appended or failed. */
static void verify_begin(pwait_t *pw) {
    if (pw->verifying++ > 0 || pw->paused) return;
    bk_net_conn_t *conn = bk_net_conn(pw->req->net, pw->req->slot.conn_id);
    if (!conn) return;   /* gone: no later frame to hold */
    bk_net_conn_pause(conn);
    pw->paused = true;
}

static void verify_end(pwait_t *pw) {
    assert(pw->verifying > 0);
    if (--pw->verifying > 0 || !pw->paused) return;
    pw->paused = false;
    bk_net_conn_t *conn = bk_net_conn(pw->req->net, pw->req->slot.conn_id);
    if (conn) bk_net_conn_resume(conn);   /* closed meanwhile: nothing to resume */
}

/* A partition whose first transactional batch waits for the verdict of
 * its coordinator on another broker (KIP-890 part 1). */
typedef struct {
    pwait_t *pw;
    const char *topic;           /* in the request arena */
    int16_t acks;
    const kp_produce_request_partition_produce_data_t *pd;
    presp_t *o;
    bk_txn_td_topic_t tp;        /* a local add (v12): the partition */
    int32_t part;
} pverify_t;

static void produce_partition(bk_api_req_t *req, pwait_t *pw, const bk_meta_topic_t *t, const char *topic,
                              int16_t acks, const kp_produce_request_partition_produce_data_t *pd, presp_t *o,
                              bool verified, const bk_repl_ps_pre_t *pre);

static void verified(void *ctx, int16_t err) {
    pverify_t *v = ctx;
    bk_api_req_t *req = v->pw->req;
    if (err) {
        fail_partition(v->o, err);
    } else {
        /* validated again: the partition's state may have moved meanwhile */
        const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&req->node->img, v->topic);
        produce_partition(req, v->pw, t, v->topic, v->acks, v->pd, v->o, true, NULL);
        if (v->o->error_code) fail_partition(v->o, v->o->error_code);
    }
    verify_end(v->pw);   /* appended or failed: the next frame may come */
    pw_release(v->pw);
}

/* A local add's answer (v12, coordinated here). */
static void added(void *ctx, const bk_txn_td_answer_t *ans) {
    verified(ctx, bk_txn_td_produce_error(ans->error));
}

/* Is this the producer's first batch of its transaction on p (no open
 * transaction of that producer and epoch there yet)? Only that one is
 * verified, as Kafka does: later ones are in a transaction the partition
 * already knows is open. */
static bool first_of_txn(const bk_repl_part_t *p, int64_t pid, int16_t epoch) {
    const st_ps_entry_t *e = p->log ? st_ps_get(st_log_producers(p->log), pid) : NULL;
    return !e || e->txn_first_offset < 0 || e->epoch != epoch;
}

static void produce_partition(bk_api_req_t *req, pwait_t *pw, const bk_meta_topic_t *t, const char *topic,
                              int16_t acks, const kp_produce_request_partition_produce_data_t *pd, presp_t *o,
                              bool verified_already, const bk_repl_ps_pre_t *pre) {
    bk_node_t *n = req->node;
    const kp_produce_request_t *q = req->body;
    o->index = pd->index;
    o->base_offset = -1;
    o->log_append_time_ms = -1;
    o->log_start_offset = -1;
    bk_repl_part_t *p = NULL;
    if ((o->error_code = bk_repl_ps_find(n, t, pd->index, &p)) != 0) return;
    bk_repl_ps_opts_t opts = { .acks = acks, .min_insync = 0, .timeout_ms = q->timeout_ms, .leader_epoch = -1 };
    /* pre: the CRC and record checks already done for these bytes before
     * dispatch (prepare.h), or NULL: done here */
    bk_repl_ps_producer_t pr = { req->hdr.api_version, !kp_slice_is_null(q->transactional_id) };
    bk_repl_ps_set_t set;
    /* The request frame is our own heap copy (dispatch.c): the service
     * patches offsets and epochs into it in place. */
    o->error_code = bk_repl_ps_validate_pre(n, p, &opts, &pr, pre, (uint8_t *)pd->records.bytes.p,
                                            pd->records.bytes.len, &req->arena, &set);
    if (o->error_code) return;
    /* KIP-890: the first batch of a transaction here is appended only once
     * the coordinator says the transaction is open with this partition
     * (part 1: it verifies; v12 = transactions v2, part 2: it adds the
     * partition itself, the client did not). acks=0 is not waited for (no
     * answer to wait with; transactional producers use acks=all). */
    bool add = req->hdr.api_version >= 12;
    if (set.txn_pid >= 0 && set.dup_first < 0 && n->txns && !verified_already && acks != 0 &&
        first_of_txn(p, set.txn_pid, set.txn_epoch)) {
        pverify_t *v = bk_api_req_alloc(req, 1, sizeof *v);
        if (!v) { o->error_code = KP_ERROR_NOT_ENOUGH_REPLICAS; return; }
        *v = (pverify_t){ .pw = pw, .topic = topic, .acks = acks, .pd = pd, .o = o };
        bool waits = false;
        pw->pending++;      /* the callbacks below may run before these calls return */
        verify_begin(pw);   /* ended by verified(), or below when nothing waits */
        o->error_code = bk_txn_td_verify_remote(n->txns, q->transactional_id, set.txn_pid, set.txn_epoch, t->name,
                                                pd->index, add, verified, v, &waits);
        if (waits) return;
        if (!o->error_code && add) {   /* coordinated here: add it through the core, then append */
            v->part = pd->index;
            v->tp.name = kp_slice_cstr(topic);
            v->tp.partitions.items = &v->part;
            v->tp.partitions.count = 1;
            bk_txn_td_add_partitions_txn(n->txns, q->transactional_id, set.txn_pid, set.txn_epoch, &v->tp, 1, added, v);
            return;
        }
        pw->pending--;
        verify_end(pw);
        if (o->error_code) return;
    }
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
    /* the net frees it when this call returns: used in this call only */
    const bk_api_prepared_t *prep = req->prepared;
    req->prepared = NULL;
    uint32_t prep_i = 0;     /* request order, as prepare.c numbers them */
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
        for (size_t k = 0; k < np; k++, prep_i++) {
            kp_produce_response_partition_produce_response_init(&ps[k]);
            const kp_bytes_t recs = td->partition_data.items[k].records.bytes;
            if (bad_acks || denied) {
                ps[k].index = td->partition_data.items[k].index;
                ps[k].base_offset = -1;
                ps[k].log_append_time_ms = -1;
                ps[k].log_start_offset = -1;
                ps[k].error_code = bad_acks ? KP_ERROR_INVALID_REQUIRED_ACKS : denied;
            } else {
                const bk_repl_ps_pre_t *pre = bk_api_prepared_part(prep, req->frame, req->frame_len,
                                                                   req->hdr.correlation_id, prep_i, recs.p, recs.len);
                produce_partition(req, pw, t, names[i], acks, &td->partition_data.items[k], &ps[k], false, pre);
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
        /* no answer to carry a throttle time: the mute alone slows it */
        (void)bk_api_req_quota(req, BK_META_QUOTA_PRODUCER_BYTE_RATE, (double)req->frame_len);
        if (any_error) bk_api_req_close(req, "acks=0 produce failed");
        else bk_api_req_respond_none(req);
        return;
    }
    rp->responses.items = ts;
    rp->responses.count = (int32_t)nt;
    pw_release(pw);
}
