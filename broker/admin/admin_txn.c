/* broker/admin/admin_txn.c — GET /v1/transactions: the transactional ids of the
 * transaction coordinator cores this node holds (an id lives on the leader
 * of its __transaction_state partition), as ListTransactions +
 * DescribeTransactions would show them, with "complete" = this node holds
 * every partition (e.g. a single node).
 * GET /v1/partitions/{topic}/{partition}/producers: the producers a partition
 * led by this node keeps state for, as DescribeProducers shows them; 409
 * naming the leader when this node does not lead it. */
#include "broker/admin/admin_ops.h"

#include <stdlib.h>
#include <string.h>

#include "broker/replication/parts.h"
#include "broker/txn/txn_driver.h"
#include "broker/txn/txn_part.h"
#include "storage/st_log.h"

#define TXN_LIST_MAX 100000           /* ids listed; beyond it "truncated" */
#define PRODUCERS_MAX 100000          /* producers listed; beyond it "truncated" */

typedef struct {
    bk_http_json_t *j;
    size_t n;
} list_ctx_t;

static void list_one(void *ctx, const char *id, const bk_txn_meta_t *m) {
    list_ctx_t *l = ctx;
    if (l->n++ >= TXN_LIST_MAX) return;
    bk_http_json_t *j = l->j;
    bk_http_json_obj_begin(j);
    bk_http_json_kv_str(j, "transactional_id", id);
    bk_http_json_kv_str(j, "state", bk_txn_state_name(m->state));
    bk_http_json_kv_i64(j, "producer_id", m->producer_id);
    bk_http_json_kv_i64(j, "producer_epoch", m->producer_epoch);
    bk_http_json_kv_i64(j, "timeout_ms", m->timeout_ms);
    bk_http_json_kv_i64(j, "start_ms", m->start_ms);
    bk_http_json_key(j, "partitions");
    bk_http_json_arr_begin(j);
    for (size_t i = 0; i < m->nparts; i++) {
        bk_http_json_obj_begin(j);
        bk_http_json_kv_str(j, "topic", m->parts[i].topic);
        bk_http_json_kv_i64(j, "partition", m->parts[i].partition);
        bk_http_json_obj_end(j);
    }
    bk_http_json_arr_end(j);
    bk_http_json_obj_end(j);
}

static void get_txns(bk_http_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&n->img, BK_TXN_TD_TOPIC);
    int32_t np = t ? t->nparts : 0, led = 0;
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_key(j, "transactions");
    bk_http_json_arr_begin(j);
    list_ctx_t lc = { j, 0 };
    for (int32_t p = 0; p < np && n->txns; p++) {
        bk_txn_coord_t *c = bk_txn_td_coord_at(n->txns, p);
        if (!c) continue;
        led++;
        bk_txn_list(c, NULL, 0, NULL, 0, -1, bk_net_now_ms(), NULL, list_one, &lc);
    }
    bk_http_json_arr_end(j);
    bk_http_json_kv_bool(j, "truncated", lc.n > TXN_LIST_MAX);
    bk_http_json_kv_i64(j, "coordinator_partitions_here", led);
    bk_http_json_kv_i64(j, "coordinator_partitions_total", np);
    bk_http_json_kv_bool(j, "complete", led == np);
    bk_http_json_obj_end(j);
    bk_http_reply_json(req, 200);
}

static void producers_json(bk_http_json_t *j, const bk_txn_producer_t *v, size_t n) {
    bk_http_json_key(j, "producers");
    bk_http_json_arr_begin(j);
    for (size_t i = 0; i < n; i++) {
        bk_http_json_obj_begin(j);
        bk_http_json_kv_i64(j, "producer_id", v[i].producer_id);
        bk_http_json_kv_i64(j, "producer_epoch", v[i].producer_epoch);
        bk_http_json_kv_i64(j, "last_sequence", v[i].last_sequence);
        bk_http_json_kv_i64(j, "last_timestamp_ms", v[i].last_timestamp_ms);
        bk_http_json_kv_i64(j, "coordinator_epoch", v[i].coordinator_epoch);
        bk_http_json_kv_i64(j, "current_txn_start_offset", v[i].current_txn_start_offset);
        bk_http_json_obj_end(j);
    }
    bk_http_json_arr_end(j);
}

static void get_producers(bk_http_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    const char *topic = bk_http_param(req, "topic");
    int32_t partition;
    const bk_meta_topic_t *t = bk_admin_partition_param(req, n, &partition);
    if (!t) return;
    bk_repl_part_t *p = bk_repl_parts_get(n->parts, &t->id, partition);
    if (!p || !p->leader) {
        bk_http_reply_error(req, 409, "node %d does not lead %s-%d (leader: %d)", n->id, topic, partition,
                             t->parts[partition].leader);
        return;
    }
    if (!p->log) {
        bk_http_reply_error(req, 503, "%s-%d is not open on node %d", topic, partition, n->id);
        return;
    }
    const st_producer_state_t *ps = st_log_producers(p->log);
    size_t total = bk_txn_part_producers(ps, NULL, 0);
    size_t cap = total < PRODUCERS_MAX ? total : PRODUCERS_MAX;
    bk_txn_producer_t *v = calloc(cap ? cap : 1, sizeof *v);
    if (!v) {
        bk_http_reply_error(req, 500, "out of memory");
        return;
    }
    size_t got = bk_txn_part_producers(ps, v, cap);
    if (got > cap) got = cap;
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_kv_str(j, "topic", topic);
    bk_http_json_kv_i64(j, "partition", partition);
    bk_http_json_kv_i64(j, "leader", n->id);
    producers_json(j, v, got);
    bk_http_json_kv_bool(j, "truncated", total > got);
    bk_http_json_obj_end(j);
    free(v);
    bk_http_reply_json(req, 200);
}

int bk_admin_txn_add(bk_node_t *n) {
    int rc = bk_http_route(n->admin, "GET", "/v1/transactions", get_txns, n);
    if (rc != KP_OK) return rc;
    return bk_http_route(n->admin, "GET", "/v1/partitions/{topic}/{partition}/producers", get_producers, n);
}
