/* broker/api/h_txn_admin.c — operator APIs on transactions (KIP-664):
 * DescribeTransactions and ListTransactions (the txn driver reads the
 * coordinator cores this node holds; the answers are built here) and
 * DescribeProducers (from a led partition's producer state).
 * Authorization (Kafka): DescribeTransactions DESCRIBE on each
 * transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and lists
 * only the topics the principal may DESCRIBE; ListTransactions lists only
 * the ids it may DESCRIBE; DescribeProducers READ on each topic (else
 * TOPIC_AUTHORIZATION_FAILED per partition). */
#include <stdlib.h>
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/meta/acl.h"
#include "broker/replication/parts.h"
#include "broker/txn/txn_driver.h"
#include "broker/txn/txn_part.h"
#include "protocol/kp_errors.h"
#include "storage/st_log.h"

#define PRODUCERS_MAX 100000     /* producers described per partition */

/* ---- DescribeTransactions ------------------------------------------------------- */

typedef kp_describe_transactions_response_transaction_state_t dt_state_t;
typedef kp_describe_transactions_response_topic_data_t dt_topic_t;

static void describe_one(bk_api_req_t *req, kp_str_t sid, const bk_txn_td_txn_t *x, dt_state_t *o) {
    kp_describe_transactions_response_transaction_state_init(o);
    o->transactional_id = sid;
    o->transaction_state = bk_api_str("");
    o->transaction_start_time_ms = -1;
    o->producer_id = -1;
    o->producer_epoch = -1;
    o->error_code = x->error;
    if (!bk_api_authorized_str(req, BK_META_OP_DESCRIBE, BK_META_RES_TRANSACTIONAL_ID, sid)) {
        o->error_code = KP_ERROR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
        return;
    }
    const bk_txn_meta_t *m = x->meta;
    if (x->error || !m) return;
    o->transaction_state = bk_api_str(bk_txn_state_name(m->state));
    o->transaction_timeout_ms = m->timeout_ms;
    o->transaction_start_time_ms = m->start_ms;
    o->producer_id = m->producer_id;
    o->producer_epoch = m->producer_epoch;
    dt_topic_t *ts = bk_api_req_alloc(req, m->nparts, sizeof *ts);
    int32_t *ps = bk_api_req_alloc(req, m->nparts, sizeof *ps);
    if (!ts || !ps) { o->error_code = KP_ERROR_UNKNOWN_SERVER_ERROR; return; }
    size_t nt = 0;
    bool skip = false;                          /* the current topic may not be described */
    for (size_t i = 0; i < m->nparts; i++) {   /* parts are sorted by topic */
        ps[i] = m->parts[i].partition;
        bool first = i == 0 || strcmp(m->parts[i - 1].topic, m->parts[i].topic) != 0;
        if (first) skip = !bk_api_authorized(req, BK_META_OP_DESCRIBE, BK_META_RES_TOPIC, m->parts[i].topic);
        if (skip) continue;
        if (first) {
            kp_describe_transactions_response_topic_data_init(&ts[nt]);
            char *t = bk_api_req_alloc(req, strlen(m->parts[i].topic) + 1, 1);
            if (!t) { o->error_code = KP_ERROR_UNKNOWN_SERVER_ERROR; return; }
            strcpy(t, m->parts[i].topic);
            ts[nt].topic = bk_api_str(t);
            ts[nt].partitions.items = &ps[i];
            ts[nt].partitions.count = 0;
            nt++;
        }
        ts[nt - 1].partitions.count++;
    }
    o->topics.items = ts;
    o->topics.count = (int32_t)nt;
}

static void describe_done(void *arg, const bk_txn_td_query_t *res) {
    bk_api_req_t *req = arg;
    if (res->unsent) { bk_api_req_close(req, res->unsent); return; }
    const kp_describe_transactions_request_t *q = req->body;
    dt_state_t *v = bk_api_req_alloc(req, res->ntxns, sizeof *v);
    if (!v) { bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < res->ntxns; i++) describe_one(req, q->transactional_ids.items[i], &res->txns[i], &v[i]);
    kp_describe_transactions_response_t r;
    kp_describe_transactions_response_init(&r);
    r.transaction_states.items = v;
    r.transaction_states.count = (int32_t)res->ntxns;
    bk_api_req_respond(req, &r);
}

void bk_api_h_describe_transactions(bk_api_req_t *req) {
    bk_txn_td_describe_transactions(req->node->txns, req->body, describe_done, req);
}

/* ---- ListTransactions ------------------------------------------------------------- */

typedef kp_list_transactions_response_transaction_state_t lt_state_t;

static void list_done(void *arg, const bk_txn_td_query_t *res) {
    bk_api_req_t *req = arg;
    if (res->unsent) { bk_api_req_close(req, res->unsent); return; }
    const kp_list_transactions_request_t *q = req->body;
    lt_state_t *v = bk_api_req_alloc(req, res->ntxns, sizeof *v);
    size_t nv = 0;
    size_t ns = q->state_filters.count > 0 ? (size_t)q->state_filters.count : 0;
    kp_str_t *unk = bk_api_req_alloc(req, ns, sizeof *unk);
    if (!v || !unk) { bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < res->ntxns; i++) {
        const bk_txn_td_txn_t *x = &res->txns[i];
        if (!bk_api_authorized(req, BK_META_OP_DESCRIBE, BK_META_RES_TRANSACTIONAL_ID, x->transactional_id)) continue;
        char *s = bk_api_req_alloc(req, strlen(x->transactional_id) + 1, 1);
        if (!s) { bk_api_req_close(req, "out of memory"); return; }
        strcpy(s, x->transactional_id);
        kp_list_transactions_response_transaction_state_init(&v[nv]);
        v[nv].transactional_id = bk_api_str(s);
        v[nv].producer_id = x->meta->producer_id;
        v[nv++].transaction_state = bk_api_str(bk_txn_state_name(x->meta->state));
    }
    int32_t nu = 0;
    for (size_t i = 0; i < ns; i++)
        if (res->unknown_states[i]) unk[nu++] = q->state_filters.items[i];
    kp_list_transactions_response_t r;
    kp_list_transactions_response_init(&r);
    r.error_code = res->error;
    r.unknown_state_filters.items = unk;
    r.unknown_state_filters.count = nu;
    r.transaction_states.items = v;
    r.transaction_states.count = (int32_t)nv;
    bk_api_req_respond(req, &r);
}

void bk_api_h_list_transactions(bk_api_req_t *req) {
    bk_txn_td_list_transactions(req->node->txns, req->body, req->hdr.api_version, list_done, req);
}

/* ---- DescribeProducers --------------------------------------------------------------- */

typedef kp_describe_producers_response_topic_response_t dp_topic_t;
typedef kp_describe_producers_response_partition_response_t dp_part_t;
typedef kp_describe_producers_response_producer_state_t dp_prod_t;

static void producers_of(bk_api_req_t *req, const bk_meta_topic_t *t, int32_t partition, dp_part_t *o) {
    kp_describe_producers_response_partition_response_init(o);
    o->partition_index = partition;
    o->error_message = kp_slice_null();
    if (!t || partition < 0 || partition >= t->nparts) { o->error_code = KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION; return; }
    bk_repl_part_t *p = bk_repl_parts_get(req->node->parts, &t->id, partition);
    if (!p || !p->leader) { o->error_code = KP_ERROR_NOT_LEADER_OR_FOLLOWER; return; }
    if (!p->log) { o->error_code = KP_ERROR_KAFKA_STORAGE_ERROR; return; }
    const st_producer_state_t *ps = st_log_producers(p->log);
    size_t n = bk_txn_part_producers(ps, NULL, 0);
    if (n > PRODUCERS_MAX) n = PRODUCERS_MAX;
    bk_txn_producer_t *v = calloc(n ? n : 1, sizeof *v);
    dp_prod_t *out = bk_api_req_alloc(req, n, sizeof *out);
    if (!v || !out) { free(v); o->error_code = KP_ERROR_UNKNOWN_SERVER_ERROR; return; }
    size_t got = bk_txn_part_producers(ps, v, n);
    if (got > n) got = n;
    for (size_t i = 0; i < got; i++) {
        kp_describe_producers_response_producer_state_init(&out[i]);
        out[i].producer_id = v[i].producer_id;
        out[i].producer_epoch = v[i].producer_epoch;
        out[i].last_sequence = v[i].last_sequence;
        out[i].last_timestamp = v[i].last_timestamp_ms;
        out[i].coordinator_epoch = v[i].coordinator_epoch;
        out[i].current_txn_start_offset = v[i].current_txn_start_offset;
    }
    free(v);
    o->active_producers.items = out;
    o->active_producers.count = (int32_t)got;
}

void bk_api_h_describe_producers(bk_api_req_t *req) {
    const kp_describe_producers_request_t *q = req->body;
    int32_t nt = q->topics.count > 0 ? q->topics.count : 0;
    dp_topic_t *ts = bk_api_req_alloc(req, (size_t)nt, sizeof *ts);
    if (!ts) { bk_api_req_close(req, "out of memory"); return; }
    for (int32_t i = 0; i < nt; i++) {
        const kp_describe_producers_request_topic_request_t *t = &q->topics.items[i];
        int32_t np = t->partition_indexes.count > 0 ? t->partition_indexes.count : 0;
        kp_describe_producers_response_topic_response_init(&ts[i]);
        ts[i].name = t->name;
        dp_part_t *ps = bk_api_req_alloc(req, (size_t)np, sizeof *ps);
        char *name = bk_api_req_topic_cstr(req, t->name);
        if (!ps || !name) { bk_api_req_close(req, "out of memory"); return; }
        const bk_meta_topic_t *topic = bk_meta_image_topic_by_name(&req->node->img, name);
        bool denied = !bk_api_authorized(req, BK_META_OP_READ, BK_META_RES_TOPIC, name);
        for (int32_t k = 0; k < np; k++) {
            if (!denied) { producers_of(req, topic, t->partition_indexes.items[k], &ps[k]); continue; }
            kp_describe_producers_response_partition_response_init(&ps[k]);
            ps[k].partition_index = t->partition_indexes.items[k];
            ps[k].error_code = KP_ERROR_TOPIC_AUTHORIZATION_FAILED;
            ps[k].error_message = kp_slice_null();
        }
        ts[i].partitions.items = ps;
        ts[i].partitions.count = np;
    }
    kp_describe_producers_response_t r;
    kp_describe_producers_response_init(&r);
    r.topics.items = ts;
    r.topics.count = nt;
    bk_api_req_respond(req, &r);
}
