/* broker/api/h_configs.c — DescribeConfigs, AlterConfigs (legacy: the request
 * replaces every override of the resource), IncrementalAlterConfigs (SET,
 * DELETE; APPEND/SUBTRACT only for cleanup.policy-style lists are refused
 * with INVALID_CONFIG), for topic (2) and broker (4) resources.
 *
 * Changes are Config metadata records committed through the committer, so
 * they survive restart and reach every node once the quorum exists. After
 * the commit the node applies them at once: topic settings go to the open
 * logs (retention, segment size, max.message.bytes, ... take effect without
 * restart) and broker keys go to the config's dynamic layer
 * (bk_cfg_set_dynamic). A resource with any invalid entry changes
 * nothing (INVALID_CONFIG with the reason).
 *
 * Authorization (Kafka): DescribeConfigs DESCRIBE_CONFIGS, the Alters
 * ALTER_CONFIGS, on the topic (TOPIC_AUTHORIZATION_FAILED) or, for a
 * broker resource, on the cluster (CLUSTER_AUTHORIZATION_FAILED); a refused
 * resource is answered that error and changes nothing, the others go on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/config/config_topic.h"
#include "broker/api/dispatch.h"
#include "broker/meta/acl.h"
#include "protocol/kp_errors.h"

#define CFG_ERR_MAX 256

/* ---- DescribeConfigs ----------------------------------------------------------- */

typedef kp_describe_configs_response_describe_configs_resource_result_t drow_t;

typedef struct {
    bk_api_req_t *req;
    const kp_describe_configs_request_describe_configs_resource_t *rq;
    drow_t *rows;
    int32_t n, cap;
    int err;
    bool documentation;     /* IncludeDocumentation (v3+) */
} describe_ctx_t;

static bool wanted(const kp_describe_configs_request_describe_configs_resource_t *rq, const char *name) {
    if (rq->configuration_keys.count < 0) return true;
    size_t len = strlen(name);
    for (int32_t i = 0; i < rq->configuration_keys.count; i++) {
        kp_str_t k = rq->configuration_keys.items[i];
        if (k.len == len && memcmp(k.p, name, len) == 0) return true;
    }
    return false;
}

static void add_row(const bk_cfg_entry_t *e, void *arg) {
    describe_ctx_t *c = arg;
    if (c->err || !wanted(c->rq, e->name)) return;
    if (c->n == c->cap) { c->err = KP_ERR_TOO_LARGE; return; }
    drow_t *o = &c->rows[c->n++];
    kp_describe_configs_response_describe_configs_resource_result_init(o);
    /* the entry's strings may be temporary: copy them into the arena */
    o->name = bk_api_str(bk_api_req_cstr(c->req, bk_api_str(e->name)));
    o->value = e->value ? bk_api_str(bk_api_req_cstr(c->req, bk_api_str(e->value))) : kp_slice_null();
    o->read_only = e->read_only;
    if (c->req->hdr.api_version == 0) o->is_default = e->is_default;
    o->config_source = (int8_t)e->source;
    o->is_sensitive = e->sensitive;
    o->config_type = (int8_t)e->config_type;
    o->synonyms.count = 0;
    /* what skiff does with the key ("stored only (no effect in skiff)") */
    o->documentation = c->documentation && e->documentation
                           ? bk_api_str(bk_api_req_cstr(c->req, bk_api_str(e->documentation)))
                           : kp_slice_null();
    if (!o->name.p || (e->value && !o->value.p) || (c->documentation && e->documentation && !o->documentation.p))
        c->err = KP_ERR_NOMEM;
}

static bool broker_name_ok(const bk_node_t *n, kp_str_t name, bool *cluster_default) {
    char buf[16];
    *cluster_default = name.len == 0;
    if (name.len == 0) return true;
    snprintf(buf, sizeof buf, "%d", n->id);
    return name.len == strlen(buf) && memcmp(name.p, buf, name.len) == 0;
}

/* A topic's stored value of one config, from the Config records of the image. */
typedef struct {
    const bk_meta_img_config_t *c;
    size_t n;
} topic_configs_t;

static const char *topic_config_lookup(void *arg, const char *name) {
    const topic_configs_t *t = arg;
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->c[i].name, name) == 0) return t->c[i].value;
    return NULL;
}

/* 0, or the error of a resource the principal may not `op` (DESCRIBE_CONFIGS
 * or ALTER_CONFIGS): topics by name, every other type on the cluster. */
static int16_t config_denied(bk_api_req_t *req, int8_t type, kp_str_t name, int8_t op) {
    if (type == BK_META_RESOURCE_TOPIC)
        return bk_api_authorized_str(req, op, BK_META_RES_TOPIC, name) ? 0 : KP_ERROR_TOPIC_AUTHORIZATION_FAILED;
    return bk_api_authorized(req, op, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME)
               ? 0 : KP_ERROR_CLUSTER_AUTHORIZATION_FAILED;
}

static void describe_one(bk_api_req_t *req, const kp_describe_configs_request_describe_configs_resource_t *rq,
                         kp_describe_configs_response_describe_configs_result_t *o) {
    bk_node_t *n = req->node;
    kp_describe_configs_response_describe_configs_result_init(o);
    o->resource_type = rq->resource_type;
    o->resource_name = rq->resource_name;
    o->error_message = kp_slice_null();
    o->configs.count = 0;
    o->error_code = config_denied(req, rq->resource_type, rq->resource_name, BK_META_OP_DESCRIBE_CONFIGS);
    if (o->error_code) { o->error_message = bk_api_str(kp_error_name(o->error_code)); return; }
    const kp_describe_configs_request_t *q = req->body;
    describe_ctx_t c = { req, rq, NULL, 0, (int32_t)(BK_CFG__COUNT + BK_CFG_TC__COUNT + bk_cfg_kkey_count()), 0,
                         req->hdr.api_version >= 3 && q->include_documentation };
    c.rows = bk_api_req_alloc(req, (size_t)c.cap, sizeof *c.rows);
    if (!c.rows) { o->error_code = KP_ERROR_UNKNOWN_SERVER_ERROR; return; }
    if (rq->resource_type == BK_META_RESOURCE_TOPIC) {
        char *name = bk_api_req_topic_cstr(req, rq->resource_name);
        if (!name || !bk_meta_image_topic_by_name(&n->img, name)) {
            o->error_code = KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
            o->error_message = bk_api_str("unknown topic");
            return;
        }
        bk_cfg_topic_describe(n->cfg, bk_node_topic_config(n, name), add_row, &c);
        topic_configs_t tc = { NULL, 0 };
        tc.c = bk_meta_image_configs(&n->img, BK_META_RESOURCE_TOPIC, name, &tc.n);
        bk_cfg_topic_describe_stored(n->cfg, topic_config_lookup, &tc, add_row, &c);
    } else if (rq->resource_type == BK_META_RESOURCE_BROKER) {
        bool def;
        if (!broker_name_ok(n, rq->resource_name, &def)) {
            o->error_code = KP_ERROR_INVALID_REQUEST;
            o->error_message = bk_api_str("not this broker's id");
            return;
        }
        bk_cfg_describe_broker(n->cfg, add_row, &c);
    } else {
        o->error_code = KP_ERROR_INVALID_REQUEST;
        o->error_message = bk_api_str("unsupported resource type");
        return;
    }
    if (c.err) { o->error_code = KP_ERROR_UNKNOWN_SERVER_ERROR; return; }
    o->configs.items = c.rows;
    o->configs.count = c.n;
}

void bk_api_h_describe_configs(bk_api_req_t *req) {
    const kp_describe_configs_request_t *q = req->body;
    kp_describe_configs_response_t r;
    memset(&r, 0, sizeof r);
    kp_describe_configs_response_init(&r);
    size_t nr = q->resources.count > 0 ? (size_t)q->resources.count : 0;
    kp_describe_configs_response_describe_configs_result_t *rs = bk_api_req_alloc(req, nr, sizeof *rs);
    if (!rs) { bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < nr; i++) describe_one(req, &q->resources.items[i], &rs[i]);
    r.results.items = rs;
    r.results.count = (int32_t)nr;
    bk_api_req_respond(req, &r);
}

/* ---- altering ------------------------------------------------------------------- */

/* One requested change, normalised from either API. */
typedef struct {
    const char *name;
    const char *value;      /* NULL = remove the override */
} change_t;

typedef struct {
    int8_t type;
    char *name;             /* topic name or broker id text */
    bool cluster_default;
    change_t *ch;
    size_t nch;
    int16_t error;
    char message[CFG_ERR_MAX];
} resource_t;

static KP_MUST_CHECK int emit(bk_meta_recs_t *out, int32_t type, const char *rname, const char *name,
                               const char *value) {
    Skiff__Metadata__Config m = SKIFF__METADATA__CONFIG__INIT;
    m.has_resource_type = true;
    m.resource_type = type;
    m.resource_name = (char *)rname;
    m.name = (char *)name;
    m.value = (char *)value;
    Skiff__Metadata__MetadataRecord r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_CONFIG;
    r.config = &m;
    return bk_meta_recs_add(out, &r);
}

/* Validates a resource's changes; sets res->error/message on the first bad one. */
static void validate(bk_node_t *n, resource_t *res) {
    if (res->type == BK_META_RESOURCE_TOPIC) {
        if (!bk_meta_image_topic_by_name(bk_node_decision_image(n), res->name)) {
            res->error = KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
            snprintf(res->message, sizeof res->message, "unknown topic '%s'", res->name);
            return;
        }
        for (size_t i = 0; i < res->nch; i++) {
            /* every topic config of Kafka is known (config_kafka.h); an
             * unknown name gets Kafka's INVALID_CONFIG "Unknown topic config name" */
            if (!bk_cfg_topic_known(res->ch[i].name)) {
                snprintf(res->message, sizeof res->message, "Unknown topic config name: %s", res->ch[i].name);
                res->error = KP_ERROR_INVALID_CONFIG;
                return;
            }
            if (res->ch[i].value && bk_cfg_topic_validate(res->ch[i].name, res->ch[i].value, res->message,
                                                          sizeof res->message) != 0) {
                res->error = KP_ERROR_INVALID_CONFIG;
                return;
            }
        }
        return;
    }
    if (res->type != BK_META_RESOURCE_BROKER) {
        res->error = KP_ERROR_INVALID_REQUEST;
        snprintf(res->message, sizeof res->message, "unsupported resource type %d", res->type);
        return;
    }
    for (size_t i = 0; i < res->nch; i++)
        if (bk_cfg_set_dynamic(n->cfg, res->ch[i].name, res->ch[i].value, res->cluster_default, true,
                                  res->message, sizeof res->message) != 0) {
            res->error = KP_ERROR_INVALID_CONFIG;
            return;
        }
}

/* KP_OK, or the list's error (bk_meta_recs_add): the commit then refuses
 * the whole list and every resource answers it (alter_answer). */
static KP_MUST_CHECK int emit_resource(const resource_t *res, bk_meta_recs_t *out) {
    const char *rname = res->type == BK_META_RESOURCE_BROKER && res->cluster_default ? "" : res->name;
    for (size_t i = 0; i < res->nch; i++) {
        int rc = emit(out, res->type, rname, res->ch[i].name, res->ch[i].value);
        if (rc != KP_OK) return rc;
    }
    return KP_OK;
}

typedef struct {
    bk_api_req_t *req;
    resource_t *res;
    size_t nres;
    bool replace;
    bool incremental;
} alter_ctx_t;

static void apply_broker_dynamic(bk_node_t *n, const resource_t *res) {
    char why[CFG_ERR_MAX];
    for (size_t i = 0; i < res->nch; i++)
        if (bk_cfg_set_dynamic(n->cfg, res->ch[i].name, res->ch[i].value, res->cluster_default, false, why,
                                  sizeof why) != 0)
            fprintf(stderr, "skiff: node %d: committed broker config %s not applied: %s\n", n->id,
                    res->ch[i].name, why);
}

/* Legacy AlterConfigs replaces the whole set: every current override the
 * request does not name becomes a removal. */
static int add_removals(bk_api_req_t *req, resource_t *res) {
    const char *rname = res->type == BK_META_RESOURCE_BROKER && res->cluster_default ? "" : res->name;
    size_t cnt = 0;
    const bk_meta_img_config_t *cur = bk_meta_image_configs(bk_node_decision_image(req->node), res->type, rname, &cnt);
    change_t *all = bk_api_req_alloc(req, res->nch + cnt, sizeof *all);
    if (!all) return KP_ERR_NOMEM;
    if (res->nch) memcpy(all, res->ch, res->nch * sizeof *all);
    size_t n = res->nch;
    for (size_t k = 0; k < cnt; k++) {
        bool named = false;
        for (size_t i = 0; i < res->nch && !named; i++) named = strcmp(res->ch[i].name, cur[k].name) == 0;
        if (named) continue;
        /* a copy: the image frees its string when the removal applies,
         * before the answer reads the change again */
        size_t len = strlen(cur[k].name);
        char *name = bk_api_req_alloc(req, len + 1, 1);
        if (!name) return KP_ERR_NOMEM;
        memcpy(name, cur[k].name, len + 1);
        all[n++] = (change_t){ name, NULL };
    }
    res->ch = all;
    res->nch = n;
    return KP_OK;
}

static void alter_answer(void *arg, int status) {
    alter_ctx_t *c = arg;
    bk_node_t *n = c->req->node;
    /* Committed broker configs need nothing more here: the commit applied
     * them to the image and the node's after-commit step (node.c) synced the
     * running config and every open log before this answer runs. This one
     * only makes the handling node's own change visible even when its image
     * lags (a forwarded request answered by the controller). */
    if (status == KP_OK)
        for (size_t i = 0; i < c->nres; i++)
            if (c->res[i].error == 0 && c->res[i].type == BK_META_RESOURCE_BROKER) apply_broker_dynamic(n, &c->res[i]);
    size_t nr = c->nres;
    /* both responses have the same layout: error, message, type, name */
    kp_alter_configs_response_alter_configs_resource_response_t *rs = bk_api_req_alloc(c->req, nr, sizeof *rs);
    if (!rs) { bk_api_req_close(c->req, "out of memory"); return; }
    for (size_t i = 0; i < nr; i++) {
        kp_alter_configs_response_alter_configs_resource_response_init(&rs[i]);
        rs[i].error_code = c->res[i].error ? c->res[i].error : status != KP_OK ? bk_node_commit_error(status) : 0;
        rs[i].error_message = rs[i].error_code ? bk_api_str(c->res[i].message[0] ? c->res[i].message : kp_error_name(rs[i].error_code))
                                               : kp_slice_null();
        rs[i].resource_type = c->res[i].type;
        rs[i].resource_name = bk_api_str(c->res[i].name);
    }
    if (c->incremental) {
        kp_incremental_alter_configs_response_t r;
        memset(&r, 0, sizeof r);
        kp_incremental_alter_configs_response_init(&r);
        r.responses.items = (kp_incremental_alter_configs_response_alter_configs_resource_response_t *)rs;
        r.responses.count = (int32_t)nr;
        bk_api_req_respond(c->req, &r);
    } else {
        kp_alter_configs_response_t r;
        memset(&r, 0, sizeof r);
        kp_alter_configs_response_init(&r);
        r.responses.items = rs;
        r.responses.count = (int32_t)nr;
        bk_api_req_respond(c->req, &r);
    }
}

static void alter_run(alter_ctx_t *c, bool validate_only) {
    bk_node_t *n = c->req->node;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    for (size_t i = 0; i < c->nres; i++) {
        resource_t *res = &c->res[i];
        if (res->error) continue;
        if (res->type == BK_META_RESOURCE_BROKER) {
            bool def;
            if (!broker_name_ok(n, bk_api_str(res->name), &def)) {
                res->error = KP_ERROR_INVALID_REQUEST;
                snprintf(res->message, sizeof res->message, "not this broker's id");
                continue;
            }
            res->cluster_default = def;
        }
        if (c->replace && add_removals(c->req, res) != KP_OK) {
            res->error = KP_ERROR_UNKNOWN_SERVER_ERROR;
            continue;
        }
        validate(n, res);
        if (res->error == 0 && !validate_only && emit_resource(res, &recs) != KP_OK) break;   /* refused whole */
    }
    bk_node_commit(n, &recs, alter_answer, c);
    bk_meta_recs_free(&recs);
}

static const char *cstr_or_null(bk_api_req_t *req, kp_str_t s) {
    return kp_slice_is_null(s) ? NULL : bk_api_req_cstr(req, s);
}

/* Config names and values become C strings: one holding a NUL byte is
 * refused with INVALID_CONFIG, never cut at the NUL. The change is left
 * harmless ("" and no value) because the resource is not applied. */
static bool refuse_nul(resource_t *r, change_t *ch, kp_str_t name, kp_str_t value) {
    if (!kp_slice_has_nul(name) && !kp_slice_has_nul(value)) return false;
    r->error = KP_ERROR_INVALID_CONFIG;
    snprintf(r->message, sizeof r->message, "a config name or value holds a NUL byte");
    ch->name = "";
    ch->value = NULL;
    return true;
}

/* The context and nres resources of an Alter (replace) or Incremental
 * Alter request; NULL after closing the connection when out of memory. */
static alter_ctx_t *alter_ctx_new(bk_api_req_t *req, int32_t nres, bool replace) {
    size_t nr = nres > 0 ? (size_t)nres : 0;
    alter_ctx_t *c = bk_api_req_alloc(req, 1, sizeof *c);
    resource_t *res = bk_api_req_alloc(req, nr, sizeof *res);
    if (!c || !res) { bk_api_req_close(req, "out of memory"); return NULL; }
    *c = (alter_ctx_t){ req, res, nr, replace, !replace };
    return c;
}

/* Fills r's type, name and room for nch changes; false after closing the
 * connection when out of memory. */
static bool resource_init(bk_api_req_t *req, resource_t *r, int8_t type, kp_str_t name, int32_t nch) {
    r->type = type;
    r->error = config_denied(req, type, name, BK_META_OP_ALTER_CONFIGS);
    if (r->error) snprintf(r->message, sizeof r->message, "%s", kp_error_name(r->error));
    r->name = bk_api_req_topic_cstr(req, name);   /* a NUL shows as "\\0": matches no topic or broker */
    r->nch = nch > 0 ? (size_t)nch : 0;
    r->ch = bk_api_req_alloc(req, r->nch, sizeof *r->ch);
    if (!r->name || !r->ch) { bk_api_req_close(req, "out of memory"); return false; }
    return true;
}

void bk_api_h_alter_configs(bk_api_req_t *req) {
    const kp_alter_configs_request_t *q = req->body;
    alter_ctx_t *c = alter_ctx_new(req, q->resources.count, true);
    if (!c) return;
    resource_t *res = c->res;
    for (size_t i = 0; i < c->nres; i++) {
        const kp_alter_configs_request_alter_configs_resource_t *rq = &q->resources.items[i];
        if (!resource_init(req, &res[i], rq->resource_type, rq->resource_name, rq->configs.count)) return;
        if (res[i].error) continue;     /* refused: its changes are not looked at */
        for (size_t k = 0; k < res[i].nch; k++) {
            if (refuse_nul(&res[i], &res[i].ch[k], rq->configs.items[k].name, rq->configs.items[k].value)) break;
            res[i].ch[k].name = bk_api_req_cstr(req, rq->configs.items[k].name);
            res[i].ch[k].value = cstr_or_null(req, rq->configs.items[k].value);
        }
    }
    alter_run(c, q->validate_only);
}

void bk_api_h_incremental_alter_configs(bk_api_req_t *req) {
    const kp_incremental_alter_configs_request_t *q = req->body;
    alter_ctx_t *c = alter_ctx_new(req, q->resources.count, false);
    if (!c) return;
    resource_t *res = c->res;
    for (size_t i = 0; i < c->nres; i++) {
        const kp_incremental_alter_configs_request_alter_configs_resource_t *rq = &q->resources.items[i];
        if (!resource_init(req, &res[i], rq->resource_type, rq->resource_name, rq->configs.count)) return;
        if (res[i].error) continue;     /* refused: its changes are not looked at */
        for (size_t k = 0; k < res[i].nch; k++) {
            const kp_incremental_alter_configs_request_alterable_config_t *a = &rq->configs.items[k];
            if (refuse_nul(&res[i], &res[i].ch[k], a->name, a->value)) break;
            res[i].ch[k].name = bk_api_req_cstr(req, a->name);
            if (a->config_operation == 0) {
                res[i].ch[k].value = cstr_or_null(req, a->value);
                if (!res[i].ch[k].value) {
                    res[i].error = KP_ERROR_INVALID_CONFIG;
                    snprintf(res[i].message, sizeof res[i].message, "SET of '%s' without a value", res[i].ch[k].name);
                }
            } else if (a->config_operation == 1) {
                res[i].ch[k].value = NULL;
            } else {
                res[i].error = KP_ERROR_INVALID_CONFIG;
                snprintf(res[i].message, sizeof res[i].message, "operation %d (APPEND/SUBTRACT) is not supported",
                         a->config_operation);
            }
        }
    }
    alter_run(c, q->validate_only);
}
