/* broker/admin/admin_quorum.c — GET /v1/quorum (see admin_quorum.h). */
#include "broker/admin/admin_quorum.h"

#include <string.h>

#include "broker/http/json.h"
#include "broker/quorum/quorum.h"

static void replicas(bk_http_json_t *j, const char *key, const raft_replica_state_t *r, size_t n, int64_t hw) {
    bk_http_json_key(j, key);
    bk_http_json_arr_begin(j);
    for (size_t i = 0; i < n; i++) {
        bk_http_json_obj_begin(j);
        bk_http_json_kv_i64(j, "node_id", r[i].node_id);
        bk_http_json_kv_i64(j, "log_end_offset", r[i].log_end_offset);
        bk_http_json_kv_i64(j, "lag", r[i].log_end_offset < 0 || hw < 0 ? -1
                                 : (hw > r[i].log_end_offset ? hw - r[i].log_end_offset : 0));
        bk_http_json_kv_i64(j, "last_fetch_ms", r[i].last_fetch_ms);
        bk_http_json_kv_i64(j, "last_caught_up_ms", r[i].last_caught_up_ms);
        bk_http_json_obj_end(j);
    }
    bk_http_json_arr_end(j);
}

static void get_quorum(bk_http_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    raft_quorum_info_t qi;
    memset(&qi, 0, sizeof qi);
    const char *role = "leader";
    if (n->quorum) {
        bk_quorum_describe(n->quorum, &qi);
        role = bk_quorum_role(n->quorum);
        qi.leader_id = bk_quorum_leader(n->quorum);
        qi.high_watermark = bk_node_metadata_hw(n);
    } else {
        qi.leader_id = n->id;
        qi.high_watermark = bk_node_metadata_hw(n);
        qi.n_voters = 1;
        qi.voters[0] = (raft_replica_state_t){ n->id, qi.high_watermark, -1, -1 };
    }
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_kv_i64(j, "node_id", n->id);
    bk_http_json_kv_str(j, "role", role);
    bk_http_json_kv_i64(j, "leader_id", qi.leader_id);
    bk_http_json_kv_i64(j, "leader_epoch", n->quorum ? bk_node_quorum_epoch(n) : 0);
    bk_http_json_kv_i64(j, "high_watermark", qi.high_watermark);
    replicas(j, "voters", qi.voters, qi.n_voters, qi.high_watermark);
    replicas(j, "observers", qi.observers, qi.n_observers, qi.high_watermark);
    /* Fetches this node held as leader while nothing was new (long-poll) */
    bk_http_json_kv_u64(j, "fetches_held", n->quorum ? bk_quorum_fetches_held(n->quorum) : 0);
    bk_http_json_obj_end(j);
    bk_http_reply_json(req, 200);
}

int bk_admin_quorum_add(bk_node_t *n) { return bk_http_route(n->admin, "GET", "/v1/quorum", get_quorum, n); }
