/* cl_txn.c — ListTransactions, DescribeTransactions, DescribeProducers
 * (see cl_txn.h). */
#include "clients/cl_txn.h"

#include "clients/cl_admin.h"
#include "protocol/kp_errors.h"

/* ---- ListTransactions ------------------------------------------------------ */

static int check_list(const void *resp, void *ctx, cl_err_t *e) {
    const kp_list_transactions_response_t *r = resp;
    return r->error_code ? cl_err_kafka(e, r->error_code, "ListTransactions at node %d", *(const int32_t *)ctx) : CL_OK;
}

int cl_admin_list_transactions(cl_client_t *c, const cl_txn_filter_t *f, cl_txn_list_fn fn, void *ctx, cl_err_t *e) {
    if (f && (f->nstates > CL_TXN_FILTERS_MAX || f->nproducer_ids > CL_TXN_FILTERS_MAX || f->nstates < 0 ||
              f->nproducer_ids < 0))
        return cl_err_set(e, CL_E_USAGE, "at most %d state and %d producer id filters", CL_TXN_FILTERS_MAX,
                          CL_TXN_FILTERS_MAX);
    int rc = cl_client_metadata(c, NULL, 0, e);
    if (rc != CL_OK) return rc;
    kp_list_transactions_request_t req;
    kp_list_transactions_request_init(&req);
    kp_str_t states[CL_TXN_FILTERS_MAX];
    int64_t pids[CL_TXN_FILTERS_MAX];
    for (int i = 0; f && i < f->nstates; i++) states[i] = cl_str(f->states[i]);
    for (int i = 0; f && i < f->nproducer_ids; i++) pids[i] = f->producer_ids[i];
    req.state_filters.items = states;
    req.state_filters.count = f ? f->nstates : 0;
    req.producer_id_filters.items = pids;
    req.producer_id_filters.count = f ? f->nproducer_ids : 0;
    /* ids copied first: a retry may refresh the metadata under us */
    int32_t ids[CL_NODES_MAX];
    int n = 0;
    for (int32_t i = 0; i < c->md->brokers.count && n < CL_NODES_MAX; i++) ids[n++] = c->md->brokers.items[i].node_id;
    kp_arena_t a;
    kp_arena_init(&a, (size_t)64 << 20);
    for (int i = 0; i < n && rc == CL_OK; i++) {
        kp_arena_reset(&a);
        void *resp = NULL;
        rc = cl_admin_call(c, ids[i], NULL, 0, KP_API_LIST_TRANSACTIONS, CL_VER_LIST_TRANSACTIONS, &req, &resp, &a,
                           check_list, &ids[i], e);
        if (rc == CL_OK) fn(ctx, ids[i], resp);
    }
    kp_arena_free(&a);
    return rc;
}

/* ---- DescribeTransactions ---------------------------------------------------- */

static int check_describe(const void *resp, void *ctx, cl_err_t *e) {
    const kp_describe_transactions_response_t *r = resp;
    if (r->transaction_states.count != 1)
        return cl_err_set(e, CL_E_PROTO, "DescribeTransactions answered %d states for one id",
                          r->transaction_states.count);
    int16_t code = r->transaction_states.items[0].error_code;
    return code ? cl_err_kafka(e, code, "transactional id '%s'", (const char *)ctx) : CL_OK;
}

int cl_admin_describe_transaction(cl_client_t *c, const char *txn_id, kp_arena_t *a,
                                  const kp_describe_transactions_response_transaction_state_t **out,
                                  int32_t *coordinator, cl_err_t *e) {
    kp_describe_transactions_request_t req;
    kp_describe_transactions_request_init(&req);
    kp_str_t id = cl_str(txn_id);
    req.transactional_ids.items = &id;
    req.transactional_ids.count = 1;
    void *resp = NULL;
    int rc = cl_admin_call(c, 0, txn_id, 1, KP_API_DESCRIBE_TRANSACTIONS, CL_VER_DESCRIBE_TRANSACTIONS, &req, &resp,
                           a, check_describe, (void *)txn_id, e);
    if (rc != CL_OK) return rc;
    *out = &((const kp_describe_transactions_response_t *)resp)->transaction_states.items[0];
    if (coordinator) {
        cl_err_t ce;  /* naming the coordinator is a courtesy: its failure is not the call's */
        cl_err_clear(&ce);
        if (cl_client_coordinator(c, txn_id, 1, coordinator, &ce) != CL_OK) *coordinator = -1;
    }
    return CL_OK;
}

/* ---- DescribeProducers ------------------------------------------------------- */

typedef kp_describe_producers_response_partition_response_t dp_part_t;

typedef struct {
    const char *topic;
    int32_t partition;
    const dp_part_t *found;
} dp_check_t;

static int check_producers(const void *resp, void *ctx, cl_err_t *e) {
    const kp_describe_producers_response_t *r = resp;
    dp_check_t *k = ctx;
    for (int32_t i = 0; i < r->topics.count; i++) {
        if (!cl_str_eq(r->topics.items[i].name, k->topic)) continue;
        for (int32_t j = 0; j < r->topics.items[i].partitions.count; j++) {
            const dp_part_t *p = &r->topics.items[i].partitions.items[j];
            if (p->partition_index != k->partition) continue;
            if (p->error_code)
                return cl_err_kafka(e, p->error_code, "producers of %s-%d%s%.*s", k->topic, k->partition,
                                    p->error_message.len > 0 ? ": " : "", (int)p->error_message.len,
                                    (const char *)p->error_message.p);
            k->found = p;
            return CL_OK;
        }
    }
    return cl_err_set(e, CL_E_PROTO, "DescribeProducers answer lacks %s-%d", k->topic, k->partition);
}

/* Leader of topic-partition from the cache, or a Kafka error. */
static int leader_of(cl_client_t *c, const char *topic, int32_t partition, int32_t *leader, cl_err_t *e) {
    const cl_md_topic_t *t = cl_md_topic(c, topic);
    if (!t || t->error_code)
        return cl_err_kafka(e, t ? t->error_code : KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION, "topic '%s'", topic);
    const cl_md_partition_t *p = cl_md_partition(t, partition);
    if (!p) return cl_err_kafka(e, KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION, "%s-%d", topic, partition);
    if (p->leader_id < 0) return cl_err_kafka(e, KP_ERROR_LEADER_NOT_AVAILABLE, "%s-%d", topic, partition);
    *leader = p->leader_id;
    return CL_OK;
}

static int producers_one(cl_client_t *c, const char *topic, int32_t partition, kp_arena_t *a, cl_producers_fn fn,
                         void *ctx, cl_err_t *e) {
    kp_describe_producers_request_t req;
    kp_describe_producers_request_init(&req);
    kp_describe_producers_request_topic_request_t t;
    kp_describe_producers_request_topic_request_init(&t);
    t.name = cl_str(topic);
    t.partition_indexes.items = &partition;
    t.partition_indexes.count = 1;
    req.topics.items = &t;
    req.topics.count = 1;
    const char *names[1] = { topic };
    int rc = CL_OK;
    for (int attempt = 1;; attempt++) {
        kp_arena_reset(a);
        int32_t leader = -1;
        void *resp = NULL;
        dp_check_t k = { topic, partition, NULL };
        /* the caller refreshed the metadata; a retry means the leader moved */
        rc = attempt == 1 ? CL_OK : cl_client_metadata(c, names, 1, e);
        if (rc == CL_OK) rc = leader_of(c, topic, partition, &leader, e);
        if (rc == CL_OK)
            rc = cl_client_call(c, leader, KP_API_DESCRIBE_PRODUCERS, CL_VER_DESCRIBE_PRODUCERS, &req, &resp, NULL, a,
                                e);
        if (rc == CL_OK) rc = check_producers(resp, &k, e);
        if (rc == CL_OK) {
            fn(ctx, partition, leader, k.found);
            return CL_OK;
        }
        if (!cl_retry_again(&c->retry, attempt, rc, e ? e->kafka_code : 0)) return rc;
        cl_sleep_ms(cl_retry_backoff_ms(&c->retry, attempt + 1));
    }
}

int cl_admin_describe_producers(cl_client_t *c, const char *topic, int32_t partition, cl_producers_fn fn, void *ctx,
                                cl_err_t *e) {
    const char *names[1] = { topic };
    int rc = cl_client_metadata(c, names, 1, e);
    if (rc != CL_OK) return rc;
    const cl_md_topic_t *t = cl_md_topic(c, topic);
    if (!t || t->error_code)
        return cl_err_kafka(e, t ? t->error_code : KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION, "topic '%s'", topic);
    int32_t n = t->partitions.count;  /* t may move on a refresh: keep the count only */
    if (partition >= n) return cl_err_kafka(e, KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION, "%s-%d", topic, partition);
    kp_arena_t a;
    kp_arena_init(&a, (size_t)64 << 20);
    for (int32_t p = partition < 0 ? 0 : partition; rc == CL_OK && p < (partition < 0 ? n : partition + 1); p++)
        rc = producers_one(c, topic, p, &a, fn, ctx, e);
    kp_arena_free(&a);
    return rc;
}
