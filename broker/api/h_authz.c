/* broker/api/h_authz.c — the authorization helpers of the handlers, and the
 * check a controller-bound request passes before a node forwards it: the
 * controller sees the forwarding node's principal (a super user / node
 * principal), so the client's own rights are checked where it connected. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "broker/api/dispatch.h"
#include "broker/cluster/forward.h"
#include "broker/core/authz.h"
#include "broker/core/credentials.h"
#include "broker/meta/acl.h"

bool bk_api_authorized(const bk_api_req_t *req, int8_t op, int8_t rtype, const char *name) {
    if (req->node_forwarded) return true;
    return bk_node_authorize(req->node, req->principal, req->host, op, rtype, name);
}

/* inter.broker.listener.name, else the first listener that is not a
 * controller listener (the config's rule for the inter-broker one). */
static bool is_inter_broker_listener(const bk_node_t *n, const char *name) {
    const char *ib = bk_cfg_str(n->cfg, BK_CFG_INTER_BROKER_LISTENER_NAME);
    if (ib && *ib) return strcasecmp(ib, name) == 0;
    size_t nl = 0;
    const bk_cfg_listener_t *ls = bk_cfg_listeners(n->cfg, &nl);
    for (size_t i = 0; i < nl; i++)
        if (!ls[i].controller) return strcasecmp(ls[i].name, name) == 0;
    return false;
}

bool bk_api_node_forwarded(bk_node_t *n, bk_net_conn_t *conn, int16_t api) {
    return bk_node_authz_on(n) && bk_cluster_forwarded_api(api) && is_inter_broker_listener(n, bk_net_conn_listener(conn)) &&
           bk_node_peer_allowed(n, conn);
}

bool bk_api_authorized_str(bk_api_req_t *req, int8_t op, int8_t rtype, kp_str_t name) {
    if (!bk_node_authz_on(req->node) || req->node_forwarded) return true;
    if (bk_node_is_super_user(req->node, req->principal)) return true;
    char buf[256];
    if (name.len >= sizeof buf || (name.len && memchr(name.p, '\0', name.len))) {
        char *c = bk_api_req_cstr(req, name);
        return c && bk_api_authorized(req, op, rtype, c);
    }
    if (name.len) memcpy(buf, name.p, name.len);
    buf[name.len] = '\0';
    return bk_api_authorized(req, op, rtype, buf);
}

static bool cluster_may(bk_api_req_t *req, int8_t op) {
    return bk_api_authorized(req, op, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME);
}

static bool resource_may(bk_api_req_t *req, int8_t type, kp_str_t name) {
    if (type == BK_META_RESOURCE_TOPIC) return bk_api_authorized_str(req, BK_META_OP_ALTER_CONFIGS, BK_META_RES_TOPIC, name);
    return cluster_may(req, BK_META_OP_ALTER_CONFIGS);
}

/* Every item the request names allowed? */
static bool all_allowed(bk_api_req_t *req) {
    switch (req->hdr.api_key) {
    case KP_API_CREATE_TOPICS: {
        if (cluster_may(req, BK_META_OP_CREATE)) return true;
        const kp_create_topics_request_t *q = req->body;
        for (int32_t i = 0; i < q->topics.count; i++)
            if (!bk_api_authorized_str(req, BK_META_OP_CREATE, BK_META_RES_TOPIC, q->topics.items[i].name)) return false;
        return true;
    }
    case KP_API_DELETE_TOPICS: {
        const kp_delete_topics_request_t *q = req->body;
        if (req->hdr.api_version >= 6) {
            for (int32_t i = 0; i < q->topics.count; i++) {
                kp_str_t nm = q->topics.items[i].name;
                if (kp_slice_is_null(nm)) return false;      /* by id: served here, resolved by the handler */
                if (!bk_api_authorized_str(req, BK_META_OP_DELETE, BK_META_RES_TOPIC, nm)) return false;
            }
            return true;
        }
        for (int32_t i = 0; i < q->topic_names.count; i++)
            if (!bk_api_authorized_str(req, BK_META_OP_DELETE, BK_META_RES_TOPIC, q->topic_names.items[i])) return false;
        return true;
    }
    case KP_API_CREATE_PARTITIONS: {
        const kp_create_partitions_request_t *q = req->body;
        for (int32_t i = 0; i < q->topics.count; i++)
            if (!bk_api_authorized_str(req, BK_META_OP_ALTER, BK_META_RES_TOPIC, q->topics.items[i].name)) return false;
        return true;
    }
    case KP_API_ALTER_CONFIGS: {   /* ALTER_CONFIGS on each topic, the cluster for the rest */
        const kp_alter_configs_request_t *q = req->body;
        for (int32_t i = 0; i < q->resources.count; i++)
            if (!resource_may(req, q->resources.items[i].resource_type, q->resources.items[i].resource_name))
                return false;
        return true;
    }
    case KP_API_INCREMENTAL_ALTER_CONFIGS: {
        const kp_incremental_alter_configs_request_t *q = req->body;
        for (int32_t i = 0; i < q->resources.count; i++)
            if (!resource_may(req, q->resources.items[i].resource_type, q->resources.items[i].resource_name))
                return false;
        return true;
    }
    case KP_API_ALTER_CLIENT_QUOTAS:
        return cluster_may(req, BK_META_OP_ALTER_CONFIGS);
    default:   /* ACLs, ElectLeaders, reassignments, SCRAM credentials, UpdateFeatures */
        return cluster_may(req, BK_META_OP_ALTER);
    }
}

bool bk_api_forward_authorized(bk_node_t *n, bk_net_conn_t *conn, const uint8_t *frame, size_t len) {
    bool authz = bk_node_authz_on(n);
    int16_t k = bk_cluster_frame_api(frame);
    /* controller_mutation_rate is counted here too (h_mutation_quota.c):
     * for super users as well, and without an authorizer */
    bool mq = n->quotas && n->img.nquotas > 0 &&
              (k == KP_API_CREATE_TOPICS || k == KP_API_DELETE_TOPICS || k == KP_API_CREATE_PARTITIONS);
    if (!authz && !mq) return true;
    const char *principal = bk_net_conn_principal(conn);
    bool trusted = !authz || bk_node_is_super_user(n, principal);
    if (trusted && !mq) return true;
    bk_api_req_t req;
    memset(&req, 0, sizeof req);
    req.node = n;
    snprintf(req.principal, sizeof req.principal, "%s", principal);
    bk_node_authz_host(bk_net_conn_peer(conn), req.host, sizeof req.host);
    kp_arena_init(&req.arena, BK_API_REQ_ARENA_CAP_BYTES);
    bool ok = false;
    /* a frame that does not decode is forwarded as before: the
     * controller answers it as it answers any bad frame */
    if (kp_request_decode(frame, len, &req.hdr, &req.body, &req.arena) != KP_OK) ok = true;
    else ok = (trusted || all_allowed(&req)) && bk_api_mq_forward(&req, conn);
    kp_arena_free(&req.arena);
    return ok;
}

