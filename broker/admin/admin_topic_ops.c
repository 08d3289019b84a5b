/* broker/admin/admin_topic_ops.c — the console's topic actions (issue 21):
 *   POST   /v1/topics?name=&partitions=&replication_factor=&config.KEY=VALUE
 *   DELETE /v1/topics/{name}
 *   POST   /v1/topics/{name}/partitions?count=
 *   POST   /v1/topics/{name}/configs?key=&value=     (no value: the default)
 * Each is decided by the active controller with the same functions the Kafka
 * handlers call (bk_meta_ctrl_create_topics, _delete_topics,
 * _create_partitions, _topic_config) and replied after the commit (deferred,
 * as the elect route). On another node the same change is sent to the
 * controller as the Kafka request a client would send (CreateTopics v4,
 * DeleteTopics v1, CreatePartitions v1, IncrementalAlterConfigs v0) through
 * the node's forwarding (bk_cluster_forward_request), and answered once this
 * node has applied it. Arguments are query parameters, so no request body is
 * parsed. A browser's cross-site
 * POST is refused (admin_ops.h, bk_admin_same_origin). */
#include "broker/admin/admin_ops.h"
#include "broker/admin/admin_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/keyvalq_struct.h>

#include "broker/cluster/forward.h"
#include "broker/meta/records.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_header.h"

#define CREATE_CONFIGS_MAX 64   /* config.* parameters of one create */

typedef enum { OP_CREATE, OP_DELETE, OP_PARTITIONS, OP_CONFIG } op_t;

typedef struct {
    bk_node_t *node;
    bk_http_req_t *req;
    op_t op;
    char topic[256];
    char key[256];
    char value[1024];
    bool has_value;
    int32_t partitions;
    int16_t rf;
    int16_t api, ver;        /* of the forwarded request */
} op_ctx_t;

#define ANSWER_ARENA_BYTES (1u << 20)   /* decoding the controller's answer */

/* A Kafka error as an HTTP status: what does not exist 404, what exists or
 * conflicts with the cluster's state 409, the rest of the refusals 400. */
static int http_status(int16_t err) {
    switch (err) {
    case KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION: case KP_ERROR_UNKNOWN_TOPIC_ID: return 404;
    case KP_ERROR_TOPIC_ALREADY_EXISTS: case KP_ERROR_NOT_CONTROLLER: return 409;
    default: return 400;
    }
}

static void reply_kafka_error(bk_http_req_t *req, int16_t err, const char *msg) {
    bk_http_reply_error(req, http_status(err), "%s%s%s", kp_error_name(err), msg && msg[0] ? ": " : "", msg ? msg : "");
}

static void reply_ok(op_ctx_t *c) {
    bk_node_t *n = c->node;
    bk_http_json_t *j = bk_http_admin_json(c->req);
    bk_http_json_obj_begin(j);
    bk_http_json_kv_str(j, "name", c->topic);
    const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&n->img, c->topic);
    switch (c->op) {
    case OP_CREATE:
    case OP_PARTITIONS:
        bk_http_json_kv_i64(j, "partitions", t ? t->nparts : c->partitions);
        bk_http_json_kv_i64(j, "replication_factor", t && t->nparts ? t->parts[0].replicas.n : c->rf);
        break;
    case OP_DELETE:
        bk_http_json_kv_bool(j, "deleted", true);
        break;
    case OP_CONFIG:
        bk_http_json_kv_str(j, "key", c->key);
        bk_http_json_kv_str(j, "value", c->has_value ? c->value : NULL);
        break;
    }
    bk_http_json_obj_end(j);
    bk_http_reply_json(c->req, 200);
}

static void committed(void *arg, int status) {
    op_ctx_t *c = arg;
    /* bk_http_stop (node shutdown) already freed the request: drop it */
    if (c->node->admin) {
        if (status != KP_OK) bk_http_reply_error(c->req, 503, "not committed: %s", kp_error_name(bk_node_commit_error(status)));
        else reply_ok(c);
    }
    free(c);
}

/* Commits recs (consumed) and replies after; replies itself on failure. */
static void commit(op_ctx_t *c, bk_meta_recs_t *recs) {
    bk_node_commit(c->node, recs, committed, c);
    bk_meta_recs_free(recs);
}

/* The common entry: same origin. NULL once answered. */
static op_ctx_t *begin(bk_http_req_t *req, bk_node_t *n, op_t op) {
    if (!bk_admin_same_origin(req)) return NULL;
    op_ctx_t *c = calloc(1, sizeof *c);
    if (!c) { bk_http_reply_error(req, 500, "out of memory"); return NULL; }
    c->node = n;
    c->req = req;
    c->op = op;
    return c;
}

static bool is_controller(const bk_node_t *n) { return bk_node_controller_id(n) == n->id; }

/* The controller's answer to a forwarded request: its first result. */
static void forwarded(void *arg, int status, const uint8_t *resp, size_t len) {
    op_ctx_t *c = arg;
    if (!admin_forward_answered(c->node, c->req, status)) { free(c); return; }
    kp_arena_t a;
    kp_arena_init(&a, ANSWER_ARENA_BYTES);
    int32_t cid;
    void *body = NULL;
    int16_t err = KP_ERROR_UNKNOWN_SERVER_ERROR;
    kp_str_t msg = kp_slice_null();
    if (kp_response_decode(c->api, c->ver, resp, len, &cid, &body, &a) == KP_OK) {
        if (c->op == OP_CREATE && ((kp_create_topics_response_t *)body)->topics.count == 1) {
            const kp_create_topics_response_creatable_topic_result_t *t = ((kp_create_topics_response_t *)body)->topics.items;
            err = t->error_code;
            msg = t->error_message;
            if (!err) { c->partitions = t->num_partitions; c->rf = t->replication_factor; }
        } else if (c->op == OP_DELETE && ((kp_delete_topics_response_t *)body)->responses.count == 1) {
            err = ((kp_delete_topics_response_t *)body)->responses.items[0].error_code;
            msg = ((kp_delete_topics_response_t *)body)->responses.items[0].error_message;
        } else if (c->op == OP_PARTITIONS && ((kp_create_partitions_response_t *)body)->results.count == 1) {
            err = ((kp_create_partitions_response_t *)body)->results.items[0].error_code;
            msg = ((kp_create_partitions_response_t *)body)->results.items[0].error_message;
        } else if (c->op == OP_CONFIG && ((kp_incremental_alter_configs_response_t *)body)->responses.count == 1) {
            err = ((kp_incremental_alter_configs_response_t *)body)->responses.items[0].error_code;
            msg = ((kp_incremental_alter_configs_response_t *)body)->responses.items[0].error_message;
        }
    }
    if (err) {
        char m[BK_META_CTRL_MESSAGE_MAX];
        snprintf(m, sizeof m, "%.*s", (int)(msg.len < sizeof m ? msg.len : sizeof m - 1), msg.p ? (const char *)msg.p : "");
        reply_kafka_error(c->req, err, m);
    } else {
        reply_ok(c);
    }
    kp_arena_free(&a);
    free(c);
}

/* Forwards (api, ver, body) to the controller; when it cannot, the request
 * was answered (admin_forward) and c is freed. */
static void forward(op_ctx_t *c, int16_t api, int16_t ver, const void *body) {
    c->api = api;
    c->ver = ver;
    if (!admin_forward(c->node, c->req, api, ver, body, forwarded, c)) free(c);
}

static bool set_topic(op_ctx_t *c, const char *name) {
    if (!name || !name[0] || strlen(name) >= sizeof c->topic) {
        bk_http_reply_error(c->req, 400, "a topic name of 1..249 characters is needed");
        return false;
    }
    snprintf(c->topic, sizeof c->topic, "%s", name);
    return true;
}

/* Optional integer query parameter in [lo, hi]; def when absent. */
static bool int_param(bk_http_req_t *req, const char *k, long lo, long hi, long def, long *out) {
    const char *s = bk_http_query(req, k);
    *out = def;
    if (!s) return true;
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi) {
        bk_http_reply_error(req, 400, "%s must be an integer in [%ld, %ld]", k, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

static void post_create(bk_http_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    long np, rf;
    if (!int_param(req, "partitions", 1, INT32_MAX, -1, &np) || !int_param(req, "replication_factor", 1, INT16_MAX, -1, &rf))
        return;
    op_ctx_t *c = begin(req, n, OP_CREATE);
    if (!c) return;
    if (!set_topic(c, bk_http_query(req, "name"))) { free(c); return; }
    c->partitions = (int32_t)np;
    c->rf = (int16_t)rf;
    bk_meta_ctrl_kv_t kv[CREATE_CONFIGS_MAX];
    size_t nkv = 0;
    const struct evkeyvalq *q = bk_http_query_all(req);
    for (const struct evkeyval *e = q->tqh_first; e; e = e->next.tqe_next) {
        if (strncmp(e->key, "config.", 7) != 0) continue;
        if (nkv == CREATE_CONFIGS_MAX) { free(c); bk_http_reply_error(req, 400, "at most %d config.* parameters", CREATE_CONFIGS_MAX); return; }
        kv[nkv++] = (bk_meta_ctrl_kv_t){ e->key + 7, e->value };
    }
    if (!is_controller(n)) {
        kp_create_topics_request_creatable_topic_config_t cf[CREATE_CONFIGS_MAX];
        for (size_t i = 0; i < nkv; i++) {
            kp_create_topics_request_creatable_topic_config_init(&cf[i]);
            cf[i].name = kp_slice_cstr(kv[i].name);
            cf[i].value = kp_slice_cstr(kv[i].value);
        }
        kp_create_topics_request_creatable_topic_t ct;
        kp_create_topics_request_creatable_topic_init(&ct);
        ct.name = kp_slice_cstr(c->topic);
        ct.num_partitions = c->partitions;
        ct.replication_factor = c->rf;
        ct.configs.items = cf;
        ct.configs.count = (int32_t)nkv;
        kp_create_topics_request_t kq;
        kp_create_topics_request_init(&kq);
        kq.topics.items = &ct;
        kq.topics.count = 1;
        kq.timeout_ms = 30000;
        forward(c, KP_API_CREATE_TOPICS, 4, &kq);
        return;
    }
    bk_meta_ctrl_create_topic_t t = { .name = c->topic, .num_partitions = c->partitions, .replication_factor = c->rf,
                                      .configs = kv, .nconfigs = nkv };
    bk_meta_ctrl_create_result_t res;
    memset(&res, 0, sizeof res);
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_create_topics(&n->ctrl, bk_node_decision_image(n), &t, 1, false, &recs, &res);
    if (res.error) {
        bk_meta_recs_free(&recs);
        free(c);
        reply_kafka_error(req, res.error, res.message);
        return;
    }
    c->partitions = res.num_partitions;
    c->rf = res.replication_factor;
    commit(c, &recs);
}

static void delete_topic(bk_http_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    op_ctx_t *c = begin(req, n, OP_DELETE);
    if (!c) return;
    if (!set_topic(c, bk_http_param(req, "name"))) { free(c); return; }
    if (!is_controller(n)) {
        kp_str_t name = kp_slice_cstr(c->topic);
        kp_delete_topics_request_t q;
        kp_delete_topics_request_init(&q);
        q.topic_names.items = &name;
        q.topic_names.count = 1;
        q.timeout_ms = 30000;
        forward(c, KP_API_DELETE_TOPICS, 1, &q);
        return;
    }
    bk_meta_ctrl_delete_topic_t d = { .name = c->topic };
    bk_meta_ctrl_delete_result_t res;
    memset(&res, 0, sizeof res);
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_delete_topics(&n->ctrl, bk_node_decision_image(n), &d, 1, &recs, &res);
    if (res.error) {
        bk_meta_recs_free(&recs);
        free(c);
        reply_kafka_error(req, res.error, NULL);
        return;
    }
    commit(c, &recs);
}

static void post_partitions(bk_http_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    long count;
    if (!int_param(req, "count", 1, INT32_MAX, -1, &count)) return;
    if (count < 0) { bk_http_reply_error(req, 400, "count (the new total number of partitions) is needed"); return; }
    op_ctx_t *c = begin(req, n, OP_PARTITIONS);
    if (!c) return;
    if (!set_topic(c, bk_http_param(req, "name"))) { free(c); return; }
    c->partitions = (int32_t)count;
    if (!is_controller(n)) {
        kp_create_partitions_request_create_partitions_topic_t ct;
        kp_create_partitions_request_create_partitions_topic_init(&ct);
        ct.name = kp_slice_cstr(c->topic);
        ct.count = c->partitions;
        ct.assignments.items = NULL;
        ct.assignments.count = -1;   /* null: the controller assigns */
        kp_create_partitions_request_t q;
        kp_create_partitions_request_init(&q);
        q.topics.items = &ct;
        q.topics.count = 1;
        q.timeout_ms = 30000;
        forward(c, KP_API_CREATE_PARTITIONS, 1, &q);
        return;
    }
    bk_meta_ctrl_create_partitions_t cp = { .name = c->topic, .count = c->partitions };
    int16_t err = 0;
    char msg[1][BK_META_CTRL_MESSAGE_MAX];
    msg[0][0] = '\0';
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_create_partitions(&n->ctrl, bk_node_decision_image(n), &cp, 1, false, &recs, &err, msg);
    if (err) {
        bk_meta_recs_free(&recs);
        free(c);
        reply_kafka_error(req, err, msg[0]);
        return;
    }
    commit(c, &recs);
}

static void post_config(bk_http_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    const char *key = bk_http_query(req, "key"), *value = bk_http_query(req, "value");
    if (!key || !key[0] || strlen(key) >= 256 || (value && strlen(value) >= 1024)) {
        bk_http_reply_error(req, 400, "key (a topic config name) is needed; value (optional) at most 1023 bytes");
        return;
    }
    op_ctx_t *c = begin(req, n, OP_CONFIG);
    if (!c) return;
    if (!set_topic(c, bk_http_param(req, "name"))) { free(c); return; }
    snprintf(c->key, sizeof c->key, "%s", key);
    c->has_value = value != NULL;
    if (value) snprintf(c->value, sizeof c->value, "%s", value);
    if (!is_controller(n)) {
        kp_incremental_alter_configs_request_alterable_config_t ac;
        kp_incremental_alter_configs_request_alterable_config_init(&ac);
        ac.name = kp_slice_cstr(c->key);
        ac.config_operation = value ? 0 : 1;   /* SET, DELETE */
        ac.value = value ? kp_slice_cstr(c->value) : kp_slice_null();
        kp_incremental_alter_configs_request_alter_configs_resource_t r;
        kp_incremental_alter_configs_request_alter_configs_resource_init(&r);
        r.resource_type = BK_META_RESOURCE_TOPIC;
        r.resource_name = kp_slice_cstr(c->topic);
        r.configs.items = &ac;
        r.configs.count = 1;
        kp_incremental_alter_configs_request_t q;
        kp_incremental_alter_configs_request_init(&q);
        q.resources.items = &r;
        q.resources.count = 1;
        forward(c, KP_API_INCREMENTAL_ALTER_CONFIGS, 0, &q);
        return;
    }
    char msg[BK_META_CTRL_MESSAGE_MAX];
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    int16_t err = bk_meta_ctrl_topic_config(bk_node_decision_image(n), c->topic, c->key, value ? c->value : NULL, &recs,
                                            msg, sizeof msg);
    if (err) {
        bk_meta_recs_free(&recs);
        free(c);
        reply_kafka_error(req, err, msg);
        return;
    }
    commit(c, &recs);
}

bool bk_admin_same_origin(bk_http_req_t *req) {
    const char *origin = bk_http_header(req, "Origin"), *host = bk_http_header(req, "Host");
    if (!origin) return true;   /* not a browser's cross-site request (curl, skiffctl) */
    const char *rest = strncmp(origin, "http://", 7) == 0 ? origin + 7 : strncmp(origin, "https://", 8) == 0 ? origin + 8 : NULL;
    if (rest && host && strcmp(rest, host) == 0) return true;
    bk_http_reply_error(req, 403, "cross-origin request refused (Origin %s is not this admin port)", origin);
    return false;
}

int bk_admin_topic_ops_add(bk_node_t *n) {
    int rc;
    if ((rc = bk_http_route(n->admin, "POST", "/v1/topics", post_create, n)) != KP_OK) return rc;
    if ((rc = bk_http_route(n->admin, "DELETE", "/v1/topics/{name}", delete_topic, n)) != KP_OK) return rc;
    if ((rc = bk_http_route(n->admin, "POST", "/v1/topics/{name}/partitions", post_partitions, n)) != KP_OK) return rc;
    return bk_http_route(n->admin, "POST", "/v1/topics/{name}/configs", post_config, n);
}
