/* broker/admin/admin_ops.h — operator endpoints of the admin port: GET /metrics,
 * /v1/health, /readyz, /v1/brokers, /v1/groups[/{id}], POST
 * /v1/quorum/resign. Contracts: issue 8 and broker/README.md "Admin port". */
#ifndef SKIFF_BK_ADMIN_OPS_H
#define SKIFF_BK_ADMIN_OPS_H

#include "broker/core/node.h"
#include "broker/http/admin.h"

/* Registers the routes on n->admin (handlers read node state on the loop
 * and never block). Returns KP_OK or bk_http_route's error. */
KP_MUST_CHECK int bk_admin_ops_add(bk_node_t *n);

/* GET /v1/groups and /v1/groups/{id} (admin_groups.c). */
KP_MUST_CHECK int bk_admin_groups_add(bk_node_t *n);
/* Writes "offsets", "total_lag" and "offsets_truncated" of the group this
 * node coordinates into req's open JSON object, closes it and replies 200
 * (admin_lag.c). Ends of partitions led by other nodes are asked of their
 * leaders, so the reply may come later from the loop (at most 2 s). */
void bk_admin_group_offsets(bk_http_req_t *req, bk_node_t *n, kp_str_t group);
/* POST /v1/partitions/{topic}/{partition}/elect (admin_elect.c). */
KP_MUST_CHECK int bk_admin_elect_add(bk_node_t *n);
/* The {topic} and {partition} path parameters of req, looked up in the
 * image (admin_elect.c): the topic with *partition set, or NULL once req has
 * been answered 400 (partition not decimal digits in 0..INT32_MAX) or 404
 * (no such topic or partition). */
const bk_meta_topic_t *bk_admin_partition_param(bk_http_req_t *req, bk_node_t *n, int32_t *partition);
/* GET /v1/transactions and /v1/partitions/{topic}/{partition}/producers
 * (admin_txn.c). */
KP_MUST_CHECK int bk_admin_txn_add(bk_node_t *n);

/* POST /v1/topics, DELETE /v1/topics/{name}, POST /v1/topics/{name}/partitions
 * and /configs: the console's topic actions through the controller
 * (admin_topic_ops.c). */
KP_MUST_CHECK int bk_admin_topic_ops_add(bk_node_t *n);
/* POST /v1/groups/{id}/offsets/reset (admin_group_reset.c). */
KP_MUST_CHECK int bk_admin_group_reset_add(bk_node_t *n);
/* True when req carries no Origin header or one naming this server's Host
 * (a browser's same-origin request); else answers 403 and returns false.
 * Routes that change the cluster call it first: a page of another site
 * cannot make a signed-in browser change the cluster (CSRF). */
bool bk_admin_same_origin(bk_http_req_t *req);

#endif
