/* cl_admin.c — admin requests (see cl_admin.h). */
#include "clients/cl_admin.h"

#include <stdlib.h>
#include <string.h>

#include "protocol/kp_errors.h"

int cl_admin_call(cl_client_t *c, int32_t target, const char *coord_key, int8_t key_type, int16_t api, int16_t ver,
                  const void *req, void **resp, kp_arena_t *a, cl_check_fn check, void *ctx, cl_err_t *e) {
    int rc = CL_OK;
    for (int attempt = 1;; attempt++) {
        int32_t node = target;
        rc = CL_OK;
        if (coord_key) {
            rc = cl_client_coordinator(c, coord_key, key_type, &node, e);
        } else if (target == CL_TARGET_CONTROLLER) {
            if (!c->md) rc = cl_client_metadata(c, NULL, 0, e);
            node = (rc == CL_OK && c->md->controller_id >= 0 && cl_client_node_info(c, c->md->controller_id))
                       ? c->md->controller_id : CL_TARGET_ANY;
        }
        if (rc == CL_OK) rc = cl_client_call(c, node, api, ver, req, resp, NULL, a, e);
        if (rc == CL_OK && check) rc = check(*resp, ctx, e);
        if (rc == CL_OK || !cl_retry_again(&c->retry, attempt, rc, e ? e->kafka_code : 0)) break;
        cl_sleep_ms(cl_retry_backoff_ms(&c->retry, attempt + 1));
        if (target == CL_TARGET_CONTROLLER && cl_client_metadata(c, NULL, 0, e) != CL_OK) {
            /* the next attempt reports the failure */
        }
    }
    return rc;
}

/* cl_admin_call with a group coordinator (group non-NULL) or a node target. */
static int call_retry(cl_client_t *c, int32_t target, const char *group, int16_t api, int16_t ver, const void *req,
                      void **resp, kp_arena_t *a, cl_check_fn check, void *ctx, cl_err_t *e) {
    return cl_admin_call(c, target, group, 0, api, ver, req, resp, a, check, ctx, e);
}

static char *dup_until(const char *s, char stop) {
    const char *p = strchr(s, stop);
    size_t n = p ? (size_t)(p - s) : strlen(s);
    char *r = malloc(n + 1);
    if (r) {
        memcpy(r, s, n);
        r[n] = '\0';
    }
    return r;
}

static int check_create_topics(const void *resp, void *ctx, cl_err_t *e) {
    const kp_create_topics_response_t *r = resp;
    for (int32_t i = 0; i < r->topics.count; i++) {
        const kp_create_topics_response_creatable_topic_result_t *t = &r->topics.items[i];
        if (t->error_code != 0)
            return cl_err_kafka(e, t->error_code, "topic '%.*s'%s%.*s", (int)t->name.len, (const char *)t->name.p,
                                t->error_message.len ? ": " : "", (int)t->error_message.len, (const char *)t->error_message.p);
    }
    return r->topics.count > 0 ? CL_OK : cl_err_set(e, CL_E_PROTO, "CreateTopics answer names no topic");
}

int cl_admin_create_topic(cl_client_t *c, const char *name, int32_t partitions, int16_t rf,
                          const char *const *configs, int nconfigs, cl_err_t *e) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)16 << 20);
    kp_create_topics_request_t req;
    kp_create_topics_request_init(&req);
    kp_create_topics_request_creatable_topic_t t;
    kp_create_topics_request_creatable_topic_init(&t);
    t.name = cl_str(name);
    t.num_partitions = partitions;
    t.replication_factor = rf;
    req.timeout_ms = c->timeout_ms;
    char **keys = calloc((size_t)nconfigs + 1, sizeof *keys);
    int rc = keys ? CL_OK : cl_err_set(e, CL_E_NOMEM, "out of memory");
    t.configs.items = kp_arena_alloc(&a, sizeof *t.configs.items * ((size_t)nconfigs + 1));
    t.configs.count = nconfigs;
    for (int i = 0; rc == CL_OK && i < nconfigs; i++) {
        const char *eq = strchr(configs[i], '=');
        if (!eq || eq == configs[i]) {
            rc = cl_err_set(e, CL_E_USAGE, "config '%s' is not key=value", configs[i]);
            break;
        }
        keys[i] = dup_until(configs[i], '=');
        kp_create_topics_request_creatable_topic_config_init(&t.configs.items[i]);
        t.configs.items[i].name = cl_str(keys[i] ? keys[i] : "");
        t.configs.items[i].value = cl_str(eq + 1);
    }
    req.topics.items = &t;
    req.topics.count = 1;
    void *resp = NULL;
    if (rc == CL_OK)
        rc = call_retry(c, CL_TARGET_CONTROLLER, NULL, KP_API_CREATE_TOPICS, CL_VER_CREATE_TOPICS, &req, &resp, &a,
                        check_create_topics, NULL, e);
    for (int i = 0; keys && i < nconfigs; i++) free(keys[i]);
    free(keys);
    kp_arena_free(&a);
    return rc;
}

static int check_delete_topics(const void *resp, void *ctx, cl_err_t *e) {
    const kp_delete_topics_response_t *r = resp;
    for (int32_t i = 0; i < r->responses.count; i++) {
        const kp_delete_topics_response_deletable_topic_result_t *t = &r->responses.items[i];
        if (t->error_code != 0)
            return cl_err_kafka(e, t->error_code, "topic '%.*s'", (int)t->name.len, (const char *)t->name.p);
    }
    return CL_OK;
}

int cl_admin_delete_topic(cl_client_t *c, const char *name, cl_err_t *e) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)16 << 20);
    kp_delete_topics_request_t req;
    kp_delete_topics_request_init(&req);
    kp_str_t n = cl_str(name);
    req.topic_names.items = &n;
    req.topic_names.count = 1;
    req.timeout_ms = c->timeout_ms;
    void *resp = NULL;
    int rc = call_retry(c, CL_TARGET_CONTROLLER, NULL, KP_API_DELETE_TOPICS, CL_VER_DELETE_TOPICS, &req, &resp, &a,
                        check_delete_topics, NULL, e);
    kp_arena_free(&a);
    return rc;
}

static int check_create_partitions(const void *resp, void *ctx, cl_err_t *e) {
    const kp_create_partitions_response_t *r = resp;
    for (int32_t i = 0; i < r->results.count; i++) {
        const kp_create_partitions_response_create_partitions_topic_result_t *t = &r->results.items[i];
        if (t->error_code != 0)
            return cl_err_kafka(e, t->error_code, "topic '%.*s'%s%.*s", (int)t->name.len, (const char *)t->name.p,
                                t->error_message.len ? ": " : "", (int)t->error_message.len, (const char *)t->error_message.p);
    }
    return CL_OK;
}

int cl_admin_create_partitions(cl_client_t *c, const char *name, int32_t count, cl_err_t *e) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)16 << 20);
    kp_create_partitions_request_t req;
    kp_create_partitions_request_init(&req);
    kp_create_partitions_request_create_partitions_topic_t t;
    kp_create_partitions_request_create_partitions_topic_init(&t);
    t.name = cl_str(name);
    t.count = count;
    t.assignments.count = -1;
    req.topics.items = &t;
    req.topics.count = 1;
    req.timeout_ms = c->timeout_ms;
    void *resp = NULL;
    int rc = call_retry(c, CL_TARGET_CONTROLLER, NULL, KP_API_CREATE_PARTITIONS, CL_VER_CREATE_PARTITIONS, &req, &resp,
                        &a, check_create_partitions, NULL, e);
    kp_arena_free(&a);
    return rc;
}

static int check_describe_configs(const void *resp, void *ctx, cl_err_t *e) {
    const kp_describe_configs_response_t *r = resp;
    if (r->results.count < 1) return cl_err_set(e, CL_E_PROTO, "DescribeConfigs answer has no result");
    const kp_describe_configs_response_describe_configs_result_t *x = &r->results.items[0];
    if (x->error_code != 0)
        return cl_err_kafka(e, x->error_code, "'%.*s'%s%.*s", (int)x->resource_name.len, (const char *)x->resource_name.p,
                            x->error_message.len ? ": " : "", (int)x->error_message.len, (const char *)x->error_message.p);
    return CL_OK;
}

int cl_admin_describe_configs(cl_client_t *c, int8_t type, const char *name, kp_arena_t *a,
                              const kp_describe_configs_response_describe_configs_result_t **out, cl_err_t *e) {
    kp_describe_configs_request_t req;
    kp_describe_configs_request_init(&req);
    kp_describe_configs_request_describe_configs_resource_t r;
    kp_describe_configs_request_describe_configs_resource_init(&r);
    r.resource_type = type;
    r.resource_name = cl_str(name);
    r.configuration_keys.count = -1;
    req.resources.items = &r;
    req.resources.count = 1;
    /* broker configs must be asked of that broker */
    int32_t target = CL_TARGET_ANY;
    if (type == CL_RESOURCE_BROKER) target = atoi(name);
    void *resp = NULL;
    int rc = call_retry(c, target, NULL, KP_API_DESCRIBE_CONFIGS, CL_VER_DESCRIBE_CONFIGS, &req, &resp, a,
                        check_describe_configs, NULL, e);
    if (rc == CL_OK) *out = &((const kp_describe_configs_response_t *)resp)->results.items[0];
    return rc;
}

static int check_alter_configs(const void *resp, void *ctx, cl_err_t *e) {
    const kp_incremental_alter_configs_response_t *r = resp;
    for (int32_t i = 0; i < r->responses.count; i++) {
        const kp_incremental_alter_configs_response_alter_configs_resource_response_t *x = &r->responses.items[i];
        if (x->error_code != 0)
            return cl_err_kafka(e, x->error_code, "'%.*s'%s%.*s", (int)x->resource_name.len,
                                (const char *)x->resource_name.p, x->error_message.len ? ": " : "",
                                (int)x->error_message.len, (const char *)x->error_message.p);
    }
    return CL_OK;
}

int cl_admin_alter_configs(cl_client_t *c, int8_t type, const char *name, const char *const *sets, int nsets,
                           const char *const *deletes, int ndeletes, cl_err_t *e) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)16 << 20);
    kp_incremental_alter_configs_request_t req;
    kp_incremental_alter_configs_request_init(&req);
    kp_incremental_alter_configs_request_alter_configs_resource_t r;
    kp_incremental_alter_configs_request_alter_configs_resource_init(&r);
    r.resource_type = type;
    r.resource_name = cl_str(name);
    int n = nsets + ndeletes;
    r.configs.items = kp_arena_alloc(&a, sizeof *r.configs.items * ((size_t)n + 1));
    r.configs.count = n;
    char **keys = calloc((size_t)n + 1, sizeof *keys);
    int rc = (keys && r.configs.items) ? CL_OK : cl_err_set(e, CL_E_NOMEM, "out of memory");
    for (int i = 0; rc == CL_OK && i < n; i++) {
        kp_incremental_alter_configs_request_alterable_config_t *cfg = &r.configs.items[i];
        kp_incremental_alter_configs_request_alterable_config_init(cfg);
        if (i < nsets) {
            const char *eq = strchr(sets[i], '=');
            if (!eq || eq == sets[i]) { rc = cl_err_set(e, CL_E_USAGE, "'%s' is not key=value", sets[i]); break; }
            keys[i] = dup_until(sets[i], '=');
            cfg->name = cl_str(keys[i] ? keys[i] : "");
            cfg->config_operation = 0; /* SET */
            cfg->value = cl_str(eq + 1);
        } else {
            cfg->name = cl_str(deletes[i - nsets]);
            cfg->config_operation = 1; /* DELETE */
            cfg->value = kp_slice_null();
        }
    }
    req.resources.items = &r;
    req.resources.count = 1;
    int32_t target = type == CL_RESOURCE_BROKER ? atoi(name) : CL_TARGET_ANY;
    void *resp = NULL;
    if (rc == CL_OK)
        rc = call_retry(c, target, NULL, KP_API_INCREMENTAL_ALTER_CONFIGS, CL_VER_INCR_ALTER_CONFIGS, &req, &resp,
                        &a, check_alter_configs, NULL, e);
    for (int i = 0; keys && i < n; i++) free(keys[i]);
    free(keys);
    kp_arena_free(&a);
    return rc;
}

static int check_list_groups(const void *resp, void *ctx, cl_err_t *e) {
    const kp_list_groups_response_t *r = resp;
    return r->error_code ? cl_err_kafka(e, r->error_code, "ListGroups") : CL_OK;
}

int cl_admin_list_groups(cl_client_t *c, cl_group_fn fn, void *ctx, cl_err_t *e) {
    int rc = cl_client_metadata(c, NULL, 0, e);
    if (rc != CL_OK) return rc;
    kp_arena_t a;
    kp_arena_init(&a, (size_t)64 << 20);
    kp_list_groups_request_t req;
    kp_list_groups_request_init(&req);
    int32_t ids[CL_NODES_MAX];
    int n = 0;
    for (int32_t i = 0; i < c->md->brokers.count && n < CL_NODES_MAX; i++) ids[n++] = c->md->brokers.items[i].node_id;
    for (int i = 0; i < n && rc == CL_OK; i++) {
        kp_arena_reset(&a);
        void *resp = NULL;
        rc = call_retry(c, ids[i], NULL, KP_API_LIST_GROUPS, CL_VER_LIST_GROUPS, &req, &resp, &a, check_list_groups,
                        NULL, e);
        if (rc != CL_OK) break;
        const kp_list_groups_response_t *r = resp;
        for (int32_t k = 0; k < r->groups.count; k++) fn(ctx, ids[i], &r->groups.items[k]);
    }
    kp_arena_free(&a);
    return rc;
}

static int check_describe_groups(const void *resp, void *ctx, cl_err_t *e) {
    const kp_describe_groups_response_t *r = resp;
    if (r->groups.count < 1) return cl_err_set(e, CL_E_PROTO, "DescribeGroups answer has no group");
    const kp_describe_groups_response_described_group_t *g = &r->groups.items[0];
    if (g->error_code != 0)
        return cl_err_kafka(e, g->error_code, "group '%.*s'", (int)g->group_id.len, (const char *)g->group_id.p);
    return CL_OK;
}

int cl_admin_describe_group(cl_client_t *c, const char *group, kp_arena_t *a,
                            const kp_describe_groups_response_described_group_t **out, cl_err_t *e) {
    kp_describe_groups_request_t req;
    kp_describe_groups_request_init(&req);
    kp_str_t g = cl_str(group);
    req.groups.items = &g;
    req.groups.count = 1;
    void *resp = NULL;
    int rc = call_retry(c, 0, group, KP_API_DESCRIBE_GROUPS, CL_VER_DESCRIBE_GROUPS, &req, &resp, a,
                        check_describe_groups, NULL, e);
    if (rc == CL_OK) *out = &((const kp_describe_groups_response_t *)resp)->groups.items[0];
    return rc;
}

static int check_cg_describe(const void *resp, void *ctx, cl_err_t *e) {
    const kp_consumer_group_describe_response_t *r = resp;
    if (r->groups.count < 1) return cl_err_set(e, CL_E_PROTO, "ConsumerGroupDescribe answer has no group");
    const kp_consumer_group_describe_response_described_group_t *g = &r->groups.items[0];
    if (g->error_code != 0)
        return cl_err_kafka(e, g->error_code, "group '%.*s'", (int)g->group_id.len, (const char *)g->group_id.p);
    return CL_OK;
}

int cl_admin_describe_consumer_group(cl_client_t *c, const char *group, kp_arena_t *a,
                                     const kp_consumer_group_describe_response_described_group_t **out, cl_err_t *e) {
    kp_consumer_group_describe_request_t req;
    kp_consumer_group_describe_request_init(&req);
    kp_str_t g = cl_str(group);
    req.group_ids.items = &g;
    req.group_ids.count = 1;
    void *resp = NULL;
    int rc = call_retry(c, 0, group, KP_API_CONSUMER_GROUP_DESCRIBE, CL_VER_CONSUMER_GROUP_DESCRIBE, &req, &resp, a,
                        check_cg_describe, NULL, e);
    if (rc == CL_OK) *out = &((const kp_consumer_group_describe_response_t *)resp)->groups.items[0];
    return rc;
}

static int check_delete_groups(const void *resp, void *ctx, cl_err_t *e) {
    const kp_delete_groups_response_t *r = resp;
    for (int32_t i = 0; i < r->results.count; i++)
        if (r->results.items[i].error_code != 0)
            return cl_err_kafka(e, r->results.items[i].error_code, "group '%.*s'", (int)r->results.items[i].group_id.len,
                                (const char *)r->results.items[i].group_id.p);
    return CL_OK;
}

int cl_admin_delete_group(cl_client_t *c, const char *group, cl_err_t *e) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)1 << 20);
    kp_delete_groups_request_t req;
    kp_delete_groups_request_init(&req);
    kp_str_t g = cl_str(group);
    req.groups_names.items = &g;
    req.groups_names.count = 1;
    void *resp = NULL;
    int rc = call_retry(c, 0, group, KP_API_DELETE_GROUPS, CL_VER_DELETE_GROUPS, &req, &resp, &a, check_delete_groups,
                        NULL, e);
    kp_arena_free(&a);
    return rc;
}

static int check_offset_fetch(const void *resp, void *ctx, cl_err_t *e) {
    const kp_offset_fetch_response_t *r = resp;
    if (r->error_code != 0) return cl_err_kafka(e, r->error_code, "offset fetch of group '%s'", (const char *)ctx);
    for (int32_t i = 0; i < r->topics.count; i++)
        for (int32_t j = 0; j < r->topics.items[i].partitions.count; j++) {
            int16_t code = r->topics.items[i].partitions.items[j].error_code;
            if (code != 0)
                return cl_err_kafka(e, code, "offset fetch of group '%s' for %.*s-%d", (const char *)ctx,
                                    (int)r->topics.items[i].name.len, (const char *)r->topics.items[i].name.p,
                                    r->topics.items[i].partitions.items[j].partition_index);
        }
    return CL_OK;
}

int cl_group_fetch_all_offsets(cl_client_t *c, const char *group, kp_arena_t *a, const kp_offset_fetch_response_t **out,
                               cl_err_t *e) {
    kp_offset_fetch_request_t req;
    kp_offset_fetch_request_init(&req);
    req.group_id = cl_str(group);
    req.topics.count = -1; /* all topics (v2+) */
    void *resp = NULL;
    int rc = call_retry(c, 0, group, KP_API_OFFSET_FETCH, CL_VER_OFFSET_FETCH, &req, &resp, a, check_offset_fetch,
                        (void *)group, e);
    if (rc == CL_OK) *out = resp;
    return rc;
}

int cl_group_fetch_offsets(cl_client_t *c, const char *group, const char *topic, int64_t *out, int32_t n, cl_err_t *e) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)16 << 20);
    kp_offset_fetch_request_t req;
    kp_offset_fetch_request_init(&req);
    req.group_id = cl_str(group);
    kp_offset_fetch_request_offset_fetch_request_topic_t t;
    kp_offset_fetch_request_offset_fetch_request_topic_init(&t);
    t.name = cl_str(topic);
    t.partition_indexes.items = kp_arena_alloc(&a, sizeof(int32_t) * ((size_t)n + 1));
    if (!t.partition_indexes.items) { kp_arena_free(&a); return cl_err_set(e, CL_E_NOMEM, "out of memory"); }
    t.partition_indexes.count = n;
    for (int32_t i = 0; i < n; i++) { t.partition_indexes.items[i] = i; out[i] = -1; }
    req.topics.items = &t;
    req.topics.count = 1;
    void *resp = NULL;
    int rc = call_retry(c, 0, group, KP_API_OFFSET_FETCH, CL_VER_OFFSET_FETCH, &req, &resp, &a, check_offset_fetch,
                        (void *)group, e);
    if (rc == CL_OK) {
        const kp_offset_fetch_response_t *r = resp;
        for (int32_t i = 0; i < r->topics.count; i++) {
            if (!cl_str_eq(r->topics.items[i].name, topic)) continue;
            for (int32_t j = 0; j < r->topics.items[i].partitions.count; j++) {
                const kp_offset_fetch_response_offset_fetch_response_partition_t *p = &r->topics.items[i].partitions.items[j];
                if (p->partition_index >= 0 && p->partition_index < n) out[p->partition_index] = p->committed_offset;
            }
        }
    }
    kp_arena_free(&a);
    return rc;
}

static int check_offset_commit(const void *resp, void *ctx, cl_err_t *e) {
    const kp_offset_commit_response_t *r = resp;
    for (int32_t i = 0; i < r->topics.count; i++)
        for (int32_t j = 0; j < r->topics.items[i].partitions.count; j++) {
            int16_t code = r->topics.items[i].partitions.items[j].error_code;
            if (code != 0)
                return cl_err_kafka(e, code, "commit for group '%s' on %.*s-%d", (const char *)ctx,
                                    (int)r->topics.items[i].name.len, (const char *)r->topics.items[i].name.p,
                                    r->topics.items[i].partitions.items[j].partition_index);
        }
    return CL_OK;
}

int cl_group_commit_offsets(cl_client_t *c, const char *group, const char *topic, const int64_t *offsets, int32_t n,
                            cl_err_t *e) {
    return cl_group_commit_offsets_as(c, group, topic, offsets, n, -1, "", e);
}

int cl_group_commit_offsets_as(cl_client_t *c, const char *group, const char *topic, const int64_t *offsets, int32_t n,
                               int32_t generation, const char *member_id, cl_err_t *e) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)16 << 20);
    kp_offset_commit_request_t req;
    kp_offset_commit_request_init(&req);
    req.group_id = cl_str(group);
    req.generation_id_or_member_epoch = generation;
    req.member_id = cl_str(member_id);
    kp_offset_commit_request_offset_commit_request_topic_t t;
    kp_offset_commit_request_offset_commit_request_topic_init(&t);
    t.name = cl_str(topic);
    t.partitions.items = kp_arena_alloc(&a, sizeof *t.partitions.items * ((size_t)n + 1));
    if (!t.partitions.items) { kp_arena_free(&a); return cl_err_set(e, CL_E_NOMEM, "out of memory"); }
    t.partitions.count = 0;
    for (int32_t i = 0; i < n; i++) {
        if (offsets[i] < 0) continue;
        kp_offset_commit_request_offset_commit_request_partition_t *p = &t.partitions.items[t.partitions.count++];
        kp_offset_commit_request_offset_commit_request_partition_init(p);
        p->partition_index = i;
        p->committed_offset = offsets[i];
        p->committed_metadata = cl_str("");
    }
    req.topics.items = &t;
    req.topics.count = 1;
    void *resp = NULL;
    int rc = t.partitions.count == 0 ? CL_OK
                                      : call_retry(c, 0, group, KP_API_OFFSET_COMMIT, CL_VER_OFFSET_COMMIT, &req, &resp,
                                                   &a, check_offset_commit, (void *)group, e);
    kp_arena_free(&a);
    return rc;
}

static int check_describe_cluster(const void *resp, void *ctx, cl_err_t *e) {
    const kp_describe_cluster_response_t *r = resp;
    return r->error_code ? cl_err_kafka(e, r->error_code, "DescribeCluster%s%.*s", r->error_message.len ? ": " : "",
                                        (int)r->error_message.len, (const char *)r->error_message.p)
                         : CL_OK;
}

int cl_admin_describe_cluster(cl_client_t *c, kp_arena_t *a, const kp_describe_cluster_response_t **out, cl_err_t *e) {
    kp_describe_cluster_request_t req;
    kp_describe_cluster_request_init(&req);
    void *resp = NULL;
    int rc = call_retry(c, CL_TARGET_ANY, NULL, KP_API_DESCRIBE_CLUSTER, CL_VER_DESCRIBE_CLUSTER, &req, &resp, a,
                        check_describe_cluster, NULL, e);
    if (rc == CL_OK) *out = resp;
    return rc;
}

static int check_describe_quorum(const void *resp, void *ctx, cl_err_t *e) {
    const kp_describe_quorum_response_t *r = resp;
    if (r->error_code) return cl_err_kafka(e, r->error_code, "DescribeQuorum");
    if (r->topics.count < 1 || r->topics.items[0].partitions.count < 1)
        return cl_err_set(e, CL_E_PROTO, "DescribeQuorum answer has no partition");
    int16_t code = r->topics.items[0].partitions.items[0].error_code;
    return code ? cl_err_kafka(e, code, "DescribeQuorum of __cluster_metadata-0") : CL_OK;
}

int cl_admin_describe_quorum(cl_client_t *c, kp_arena_t *a, const kp_describe_quorum_response_t **out, cl_err_t *e) {
    kp_describe_quorum_request_t req;
    kp_describe_quorum_request_init(&req);
    kp_describe_quorum_request_topic_data_t t;
    kp_describe_quorum_request_topic_data_init(&t);
    kp_describe_quorum_request_partition_data_t p;
    kp_describe_quorum_request_partition_data_init(&p);
    p.partition_index = 0;
    t.topic_name = cl_str("__cluster_metadata");
    t.partitions.items = &p;
    t.partitions.count = 1;
    req.topics.items = &t;
    req.topics.count = 1;
    void *resp = NULL;
    int rc = call_retry(c, CL_TARGET_ANY, NULL, KP_API_DESCRIBE_QUORUM, CL_VER_DESCRIBE_QUORUM, &req, &resp, a,
                        check_describe_quorum, NULL, e);
    if (rc == CL_OK) *out = resp;
    return rc;
}
