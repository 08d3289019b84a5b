/* broker/admin_txn.c — GET /v1/transactions: the transactional ids of the
 * transaction coordinator cores this node holds (an id lives on the leader
 * of its __transaction_state partition), as ListTransactions +
 * DescribeTransactions would show them, with "complete" = this node holds
 * every partition (e.g. a single node). */
#include "broker/admin_ops.h"

#include <string.h>

#include "broker/txn_driver.h"

#define TXN_LIST_MAX 100000           /* ids listed; beyond it "truncated" */

typedef struct {
    bk_json_t *j;
    size_t n;
} list_ctx_t;

static void list_one(void *ctx, const char *id, const bk_txn_meta_t *m) {
    list_ctx_t *l = ctx;
    if (l->n++ >= TXN_LIST_MAX) return;
    bk_json_t *j = l->j;
    bk_json_obj_begin(j);
    bk_json_kv_str(j, "transactional_id", id);
    bk_json_kv_str(j, "state", bk_txn_state_name(m->state));
    bk_json_kv_i64(j, "producer_id", m->producer_id);
    bk_json_kv_i64(j, "producer_epoch", m->producer_epoch);
    bk_json_kv_i64(j, "timeout_ms", m->timeout_ms);
    bk_json_kv_i64(j, "start_ms", m->start_ms);
    bk_json_key(j, "partitions");
    bk_json_arr_begin(j);
    for (size_t i = 0; i < m->nparts; i++) {
        bk_json_obj_begin(j);
        bk_json_kv_str(j, "topic", m->parts[i].topic);
        bk_json_kv_i64(j, "partition", m->parts[i].partition);
        bk_json_obj_end(j);
    }
    bk_json_arr_end(j);
    bk_json_obj_end(j);
}

static void get_txns(bk_admin_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    const bk_topic_t *t = bk_image_topic_by_name(&n->img, BK_TD_TOPIC);
    int32_t np = t ? t->nparts : 0, led = 0;
    bk_json_t *j = bk_admin_json(req);
    bk_json_obj_begin(j);
    bk_json_key(j, "transactions");
    bk_json_arr_begin(j);
    list_ctx_t lc = { j, 0 };
    for (int32_t p = 0; p < np && n->txns; p++) {
        bk_txn_coord_t *c = bk_td_coord_at(n->txns, p);
        if (!c) continue;
        led++;
        bk_txn_list(c, NULL, 0, NULL, 0, -1, bk_now_ms(), NULL, list_one, &lc);
    }
    bk_json_arr_end(j);
    bk_json_kv_bool(j, "truncated", lc.n > TXN_LIST_MAX);
    bk_json_kv_i64(j, "coordinator_partitions_here", led);
    bk_json_kv_i64(j, "coordinator_partitions_total", np);
    bk_json_kv_bool(j, "complete", led == np);
    bk_json_obj_end(j);
    bk_admin_reply_json(req, 200);
}

int bk_admin_txn_add(bk_node_t *n) {
    return bk_admin_route(n->admin, "GET", "/v1/transactions", get_txns, n);
}
