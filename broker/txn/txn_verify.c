/* broker/txn/txn_verify.c — KIP-890 part 1 on a partition leader whose
 * producer's transaction is coordinated by another broker: one
 * AddPartitionsToTxn v4 VerifyOnly request per verification, over the
 * driver's peer connection to that broker (txn_markers.c), answered to the
 * produce that waits (see bk_txn_td_verify_remote in txn_driver.h). A lost
 * request (connection failure, bk_qc deadline) answers NOT_ENOUGH_REPLICAS:
 * the producer retries, and the retry verifies again. */
#include "broker/txn/txn_driver_int.h"

#include <stdlib.h>
#include <string.h>

#include "protocol/kp_errors.h"
#include "protocol/kp_header.h"

#define VERIFY_REQ_VERSION 4
#define ADD_REQ_VERSION 5           /* the add of transactions v2 (KIP-890 part 2) */

static uint64_t next_verify = 1;              /* loop thread only */

/* What a produce answers for the coordinator's verdict on its partition:
 * the coordinator's "cannot say now" errors become NOT_ENOUGH_REPLICAS,
 * which every client retries (Kafka's mapping for clients before
 * TRANSACTION_ABORTABLE); a fenced producer gets INVALID_PRODUCER_EPOCH. */
int16_t bk_txn_td_produce_error(int16_t e) {
    switch (e) {
    case KP_ERROR_NONE:
    case KP_ERROR_INVALID_TXN_STATE:
        return e;
    case KP_ERROR_PRODUCER_FENCED:
    case KP_ERROR_INVALID_PRODUCER_EPOCH:
        return KP_ERROR_INVALID_PRODUCER_EPOCH;
    case KP_ERROR_INVALID_PRODUCER_ID_MAPPING:
        return KP_ERROR_INVALID_TXN_STATE;    /* no such transaction: nothing may be appended */
    default:
        return KP_ERROR_NOT_ENOUGH_REPLICAS;
    }
}

static td_verify_t *verify_take(bk_txn_td_t *td, uint64_t seq) {
    for (td_verify_t **pp = &td->verifies; *pp; pp = &(*pp)->next)
        if ((*pp)->seq == seq) {
            td_verify_t *v = *pp;
            *pp = v->next;
            td->nverifies--;
            return v;
        }
    return NULL;
}

int16_t bk_txn_td_verify_remote(bk_txn_td_t *td, kp_str_t transactional_id, int64_t producer_id,
                                int16_t producer_epoch, const char *topic, int32_t partition, bool add,
                                bk_txn_td_verify_fn fn, void *ctx, bool *waits) {
    *waits = false;
    if (!td || td->stopped) return KP_ERROR_NOT_ENOUGH_REPLICAS;
    /* No coordinator can hold an empty or over-long id (FindCoordinator
     * refuses it): there is no transaction to append to. */
    if (!transactional_id.p || transactional_id.len == 0 || transactional_id.len > BK_TXN_ID_MAX_BYTES)
        return KP_ERROR_INVALID_TXN_STATE;
    /* No __transaction_state (yet, or not in this node's image yet): nobody
     * can verify, so the batch is not verified — Kafka answers the
     * coordinator's COORDINATOR_NOT_AVAILABLE, which a produce turns into
     * the retriable NOT_ENOUGH_REPLICAS. Passing it unverified let a batch
     * open a transaction no marker would ever end. */
    const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&td->node->img, BK_TXN_TD_TOPIC);
    if (!t || t->nparts <= 0) return bk_txn_td_produce_error(KP_ERROR_COORDINATOR_NOT_AVAILABLE);
    char *id = kp_slice_strdup(transactional_id);
    if (!id) return KP_ERROR_NOT_ENOUGH_REPLICAS;
    int32_t i = bk_txn_partition_for(id, t->nparts);
    free(id);
    int32_t leader = t->parts[i].leader;
    /* Coordinated here: an add (v2) is the caller's, through the core; a
     * verification asks the local core exactly as a remote leader would
     * (unknown id, not loaded yet, not in the transaction: not NONE). */
    if (leader == td->node->id)
        return add ? KP_ERROR_NONE
                   : bk_txn_td_produce_error(bk_txn_td_verify(td, transactional_id, producer_id, producer_epoch,
                                                              topic, partition));
    if (leader < 0 || td->nverifies >= BK_TXN_TD_INFLIGHT_MAX) return KP_ERROR_NOT_ENOUGH_REPLICAS;
    td_verify_t *v = calloc(1, sizeof *v);
    if (!v) return KP_ERROR_NOT_ENOUGH_REPLICAS;
    v->seq = TD_VERIFY_SEQ_BIT | next_verify++;
    v->fn = fn;
    v->ctx = ctx;
    v->version = add ? ADD_REQ_VERSION : VERIFY_REQ_VERSION;
    int32_t part = partition;
    kp_add_partitions_to_txn_request_add_partitions_to_txn_topic_t tp;
    kp_add_partitions_to_txn_request_add_partitions_to_txn_topic_init(&tp);
    tp.name = kp_slice_cstr(topic);
    tp.partitions.items = &part;
    tp.partitions.count = 1;
    kp_add_partitions_to_txn_request_add_partitions_to_txn_transaction_t tx;
    kp_add_partitions_to_txn_request_add_partitions_to_txn_transaction_init(&tx);
    tx.transactional_id = transactional_id;
    tx.producer_id = producer_id;
    tx.producer_epoch = producer_epoch;
    tx.verify_only = !add;
    tx.topics.items = &tp;
    tx.topics.count = 1;
    kp_add_partitions_to_txn_request_t q;
    kp_add_partitions_to_txn_request_init(&q);
    q.transactions.items = &tx;
    q.transactions.count = 1;
    if (td_send_frame(td, leader, KP_API_ADD_PARTITIONS_TO_TXN, v->version, &q, v->seq) != 0) {
        free(v);
        return KP_ERROR_NOT_ENOUGH_REPLICAS;
    }
    v->next = td->verifies;
    td->verifies = v;
    td->nverifies++;
    *waits = true;
    return KP_ERROR_NONE;
}

/* The partition's error in a v4 answer of one transaction with one
 * partition: the top-level error when set, NOT_ENOUGH_REPLICAS when the
 * answer does not have the partition. */
static int16_t verdict(const kp_add_partitions_to_txn_response_t *r) {
    if (r->error_code != KP_ERROR_NONE) return r->error_code;
    if (r->results_by_transaction.count != 1) return KP_ERROR_NOT_ENOUGH_REPLICAS;
    const kp_add_partitions_to_txn_response_add_partitions_to_txn_result_t *x = &r->results_by_transaction.items[0];
    if (x->topic_results.count != 1 || x->topic_results.items[0].results_by_partition.count != 1)
        return KP_ERROR_NOT_ENOUGH_REPLICAS;
    return x->topic_results.items[0].results_by_partition.items[0].partition_error_code;
}

void td_verify_answer(bk_txn_td_t *td, uint64_t seq, int32_t corr, const uint8_t *frame, size_t len) {
    td_verify_t *v = verify_take(td, seq);
    if (!v) return;
    int16_t err = KP_ERROR_NOT_ENOUGH_REPLICAS;
    if (frame) {
        kp_arena_t a;
        kp_arena_init(&a, (size_t)1 << 20);
        int32_t got = 0;
        void *body = NULL;
        if (kp_response_decode(KP_API_ADD_PARTITIONS_TO_TXN, v->version, frame, len, &got, &body, &a) == KP_OK &&
            got == corr)
            err = bk_txn_td_produce_error(verdict(body));
        kp_arena_free(&a);
    }
    v->fn(v->ctx, err);
    free(v);
}

void td_verify_drop_all(bk_txn_td_t *td) {
    while (td->verifies) {
        td_verify_t *v = td->verifies;
        td->verifies = v->next;
        td->nverifies--;
        v->fn(v->ctx, KP_ERROR_NOT_ENOUGH_REPLICAS);
        free(v);
    }
}
