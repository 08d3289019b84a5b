/* broker/admin/admin_ops.c — see admin_ops.h. */
#include "broker/admin/admin_ops.h"

#include <stdio.h>
#include <string.h>

#include "broker/admin/admin_console.h"
#include "broker/admin/admin_int.h"
#include "broker/admin/admin_records.h"
#include "broker/meta/health.h"
#include "broker/net/net.h"
#include "broker/metrics/metrics_catalogue.h"
#include "broker/quorum/quorum.h"

/* Metadata records the node may trail the committed high watermark by and
 * still count as caught up (a record committed between two heartbeats). */
#define READY_META_LAG_MAX 0

static int64_t meta_applied_next(const bk_node_t *n) { return n->img.last_offset + 1; }

/* The transport's side of health (issue 16): descriptors, request memory,
 * accepts. */
static void net_json(bk_http_json_t *j, const bk_node_t *n, const bk_net_pressure_t *np) {
    bk_net_stats_t st = { 0 };
    if (n->net) bk_net_stats(n->net, &st);
    bk_http_json_kv_u64(j, "open_fds", np->fds_open);
    if (np->fds_limit == UINT64_MAX) bk_http_json_kv_i64(j, "open_fds_limit", -1);
    else bk_http_json_kv_u64(j, "open_fds_limit", np->fds_limit);
    bk_http_json_kv_u64(j, "request_memory_bytes", np->request_memory_bytes);
    bk_http_json_kv_i64(j, "request_memory_budget_bytes", np->request_memory_budget);
    bk_http_json_kv_u64(j, "request_memory_waiting_connections", st.mem_waiting);
    bk_http_json_kv_u64(j, "accept_failures", st.accept_failures);
    /* num.network.threads: what each loop serves (loop 0 is the state loop) */
    bk_http_json_key(j, "network_loops");
    bk_http_json_arr_begin(j);
    for (uint32_t i = 0; n->net && i < bk_net_loops(n->net); i++) {
        bk_net_loop_stats_t ls;
        bk_net_loop_stats(n->net, i, &ls);
        bk_http_json_obj_begin(j);
        bk_http_json_kv_u64(j, "loop", i);
        bk_http_json_kv_u64(j, "connections", ls.conns_open);
        bk_http_json_kv_u64(j, "frames_handed_off", ls.frames_posted);
        bk_http_json_obj_end(j);
    }
    bk_http_json_arr_end(j);
}

static void get_health(bk_http_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    /* every quorum voter registers as a broker, and so does this node */
    int32_t expected[RAFT_VOTERS_MAX + 1];
    size_t nv = 0, ne = 0;
    const bk_cfg_voter_t *v = bk_cfg_voters(n->cfg, &nv);
    for (size_t i = 0; i < nv && ne < RAFT_VOTERS_MAX; i++) expected[ne++] = v[i].id;
    expected[ne++] = n->id;
    bk_meta_health_t h;
    bk_meta_health_judge(&n->img, bk_node_controller_id(n), expected, ne, &h);
    bk_net_pressure_t np;
    bk_net_pressure(n->net, &np);
    bool healthy = h.healthy && !np.fds_exhausted && !np.accept_failing && !np.memory_exhausted;
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_kv_bool(j, "healthy", healthy);
    bk_http_json_key(j, "unhealthy_reasons");
    bk_http_json_arr_begin(j);
    if (h.no_controller) bk_http_json_str(j, "no_elected_controller");
    if (h.ndown) bk_http_json_str(j, "nodes_down");
    if (h.leaderless) bk_http_json_str(j, "leaderless_partitions");
    if (h.under) bk_http_json_str(j, "under_replicated_partitions");
    if (np.fds_exhausted) bk_http_json_str(j, "file_descriptors_exhausted");
    if (np.accept_failing) bk_http_json_str(j, "accept_failing");
    if (np.memory_exhausted) bk_http_json_str(j, "request_memory_exhausted");
    bk_http_json_arr_end(j);
    bk_http_json_kv_i64(j, "controller_id", bk_node_controller_id(n));
    bk_http_json_key(j, "nodes_down");
    bk_http_json_arr_begin(j);
    for (size_t i = 0; i < h.ndown_listed; i++) bk_http_json_i64(j, h.down[i]);
    bk_http_json_arr_end(j);
    bk_http_json_kv_u64(j, "leaderless_partitions", h.leaderless);
    bk_http_json_kv_u64(j, "under_replicated_partitions", h.under);
    net_json(j, n, &np);
    bk_http_json_obj_end(j);
    bk_http_reply_json(req, 200);
}

/* NULL when ready, else why not. A node that cannot take new connections
 * or read requests is not ready to serve more clients. */
static const char *not_ready(const bk_node_t *n, const bk_net_pressure_t *np) {
    if (n->stopping) return "stopping";
    if (np->fds_exhausted) return "file descriptors exhausted";
    if (np->accept_failing) return "accept failing";
    if (np->memory_exhausted) return "request memory budget (queued.max.request.bytes) exhausted";
    const bk_meta_broker_t *b = bk_meta_image_broker(&n->img, n->id);
    if (!b) return "not registered";
    if (b->fenced) return "fenced";
    if (meta_applied_next(n) + READY_META_LAG_MAX < bk_node_metadata_hw(n))
        return "not caught up with the metadata log";
    return NULL;
}

static void get_readyz(bk_http_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    bk_net_pressure_t np;
    bk_net_pressure(n->net, &np);
    const char *why = not_ready(n, &np);
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_kv_str(j, "status", why ? "not_ready" : "ready");
    if (why) bk_http_json_kv_str(j, "reason", why);
    bk_http_json_kv_i64(j, "metadata_applied_offset", meta_applied_next(n));
    bk_http_json_kv_i64(j, "metadata_high_watermark", bk_node_metadata_hw(n));
    net_json(j, n, &np);
    bk_http_json_obj_end(j);
    bk_http_reply_json(req, why ? 503 : 200);
}

void admin_json_listeners(bk_http_json_t *j, const bk_meta_broker_t *b) {
    bk_http_json_key(j, "listeners");
    bk_http_json_arr_begin(j);
    for (int32_t k = 0; k < b->nendpoints; k++) {
        bk_http_json_obj_begin(j);
        bk_http_json_kv_str(j, "name", b->endpoints[k].listener);
        bk_http_json_kv_str(j, "host", b->endpoints[k].host);
        bk_http_json_kv_i64(j, "port", b->endpoints[k].port);
        bk_http_json_obj_end(j);
    }
    bk_http_json_arr_end(j);
}

static void get_brokers(bk_http_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_key(j, "brokers");
    bk_http_json_arr_begin(j);
    for (size_t i = 0; i < n->img.nbrokers; i++) {
        const bk_meta_broker_t *b = &n->img.brokers[i];
        bk_http_json_obj_begin(j);
        bk_http_json_kv_i64(j, "node_id", b->id);
        bk_http_json_kv_i64(j, "broker_epoch", b->epoch);
        admin_json_listeners(j, b);
        bk_http_json_kv_str(j, "rack", b->rack);
        bk_http_json_kv_bool(j, "fenced", b->fenced);
        bk_http_json_kv_bool(j, "in_controlled_shutdown", b->in_controlled_shutdown);
        bk_http_json_obj_end(j);
    }
    bk_http_json_arr_end(j);
    bk_http_json_obj_end(j);
    bk_http_reply_json(req, 200);
}

static void post_resign(bk_http_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    if (!n->quorum) {
        bk_http_reply_error(req, 400, "node %d runs a quorum of one (no raft quorum to resign from)", n->id);
        return;
    }
    if (!bk_quorum_is_leader(n->quorum)) {
        bk_http_reply_error(req, 409, "node %d is not the quorum leader (leader: %d)", n->id,
                             bk_quorum_leader(n->quorum));
        return;
    }
    int32_t epoch = bk_quorum_epoch(n->quorum);
    bk_quorum_resign(n->quorum);
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_kv_bool(j, "resigned", true);
    bk_http_json_kv_i64(j, "node_id", n->id);
    bk_http_json_kv_i64(j, "epoch", epoch);
    bk_http_json_obj_end(j);
    bk_http_reply_json(req, 200);
}

int bk_admin_ops_add(bk_node_t *n) {
    int rc;
    if ((rc = bk_admin_groups_add(n)) != KP_OK) return rc;
    if ((rc = bk_admin_elect_add(n)) != KP_OK) return rc;
    if ((rc = bk_admin_txn_add(n)) != KP_OK) return rc;
    if ((rc = bk_admin_console_add(n)) != KP_OK) return rc;
    if ((rc = bk_admin_records_add(n)) != KP_OK) return rc;
    if ((rc = bk_admin_topic_ops_add(n)) != KP_OK) return rc;
    if ((rc = bk_admin_group_reset_add(n)) != KP_OK) return rc;
    if ((rc = bk_http_route(n->admin, "GET", "/metrics", bk_mx_serve, n->metrics)) != KP_OK) return rc;
    if ((rc = bk_http_route(n->admin, "GET", "/v1/health", get_health, n)) != KP_OK) return rc;
    if ((rc = bk_http_route(n->admin, "GET", "/readyz", get_readyz, n)) != KP_OK) return rc;
    if ((rc = bk_http_route(n->admin, "GET", "/v1/brokers", get_brokers, n)) != KP_OK) return rc;
    return bk_http_route(n->admin, "POST", "/v1/quorum/resign", post_resign, n);
}
