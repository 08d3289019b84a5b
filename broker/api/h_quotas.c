/* broker/api/h_quotas.c — DescribeClientQuotas (48) from the image and
 * AlterClientQuotas (49) as a controller decision (forwarded to the
 * controller like the other metadata changes: cluster/forward.h).
 *
 * Entities are "user" and "client-id", each at most once, a null name
 * being the type's default (Kafka's ClientQuotaEntity). Kafka's "ip"
 * entity (connection_creation_rate) is not served: INVALID_REQUEST saying
 * so. Keys: producer_byte_rate, consumer_byte_rate (whole numbers),
 * request_percentage and controller_mutation_rate (partitions per second,
 * enforced where CreateTopics/CreatePartitions/DeleteTopics arrive:
 * h_mutation_quota.c). Per Alter entry the first error
 * of: no entity, an unknown or repeated entity type, a name over 255 bytes
 * or holding a NUL, an unknown key, a key twice in the entry, a value not
 * a positive finite number (or not whole for the integral keys) — all
 * INVALID_REQUEST with a message; entries without error become ClientQuota
 * records, one per op, committed together (validate_only: none). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/meta/acl.h"
#include "broker/meta/records.h"
#include "protocol/kp_errors.h"

static bool slice_eq(kp_str_t s, const char *lit) {
    size_t n = strlen(lit);
    return s.p && s.len == n && memcmp(s.p, lit, n) == 0;
}

/* ---- Describe ---------------------------------------------------------- */

typedef struct {
    int kind;                   /* -1: the filter says nothing of this type */
    int match;                  /* 0 exact, 1 default, 2 any specified */
    kp_str_t name;
} part_filter_t;

static bool part_matches(const part_filter_t *f, int kind, const char *name, bool strict) {
    if (f->kind < 0) return !strict || kind == BK_META_QE_NONE;
    if (kind == BK_META_QE_NONE) return false;
    if (f->match == 1) return kind == BK_META_QE_DEFAULT;
    if (f->match == 2) return true;
    return kind == BK_META_QE_NAME && strlen(name) == f->name.len && memcmp(name, f->name.p, f->name.len) == 0;
}

static void describe_error_code(bk_api_req_t *req, int16_t code, const char *msg) {
    kp_describe_client_quotas_response_t r;
    kp_describe_client_quotas_response_init(&r);
    r.error_code = code;
    r.error_message = bk_api_str(msg);
    r.entries.items = NULL;
    r.entries.count = -1;       /* null: the request failed as a whole */
    bk_api_req_respond(req, &r);
}

static void describe_error(bk_api_req_t *req, const char *msg) {
    describe_error_code(req, KP_ERROR_INVALID_REQUEST, msg);
}

void bk_api_h_describe_client_quotas(bk_api_req_t *req) {
    const kp_describe_client_quotas_request_t *q = req->body;
    /* Kafka: DESCRIBE_CONFIGS on the cluster, else the whole request fails */
    if (!bk_api_authorized(req, BK_META_OP_DESCRIBE_CONFIGS, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME)) {
        describe_error_code(req, KP_ERROR_CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.");
        return;
    }
    const bk_meta_image_t *img = &req->node->img;
    part_filter_t fu = { -1, 0, { NULL, 0 } }, fc = { -1, 0, { NULL, 0 } };
    for (int32_t i = 0; i < q->components.count; i++) {
        const kp_describe_client_quotas_request_component_data_t *c = &q->components.items[i];
        part_filter_t *f = slice_eq(c->entity_type, "user") ? &fu : slice_eq(c->entity_type, "client-id") ? &fc : NULL;
        if (!f) {
            describe_error(req, slice_eq(c->entity_type, "ip") ? "ip quotas are not served by skiff"
                                                              : "Unknown entity type in the filter");
            return;
        }
        if (f->kind >= 0) { describe_error(req, "An entity type appears more than once in the filter"); return; }
        if (c->match_type < 0 || c->match_type > 2) { describe_error(req, "Unknown match type"); return; }
        if (c->match_type == 0 && kp_slice_is_null(c->match))
            { describe_error(req, "The match field must be set for an exact match"); return; }
        if (c->match_type != 0 && !kp_slice_is_null(c->match))
            { describe_error(req, "The match field must be null unless the match is exact"); return; }
        f->kind = 1;
        f->match = c->match_type;
        f->name = c->match;
    }
    size_t n = 0;
    for (size_t i = 0; i < img->nquotas; i++) {
        const bk_meta_quota_t *e = &img->quotas[i];
        if (part_matches(&fu, e->user_kind, e->user, q->strict) && part_matches(&fc, e->client_kind, e->client, q->strict))
            n++;
    }
    kp_describe_client_quotas_response_entry_data_t *es = bk_api_req_alloc(req, n, sizeof *es);
    if (!es) { bk_api_req_close(req, "out of memory"); return; }
    size_t k = 0;
    for (size_t i = 0; i < img->nquotas; i++) {
        const bk_meta_quota_t *e = &img->quotas[i];
        if (!part_matches(&fu, e->user_kind, e->user, q->strict) || !part_matches(&fc, e->client_kind, e->client, q->strict))
            continue;
        kp_describe_client_quotas_response_entry_data_init(&es[k]);
        kp_describe_client_quotas_response_entity_data_t *en = bk_api_req_alloc(req, 2, sizeof *en);
        kp_describe_client_quotas_response_value_data_t *vs = bk_api_req_alloc(req, BK_META_QUOTA_KEYS, sizeof *vs);
        if (!en || !vs) { bk_api_req_close(req, "out of memory"); return; }
        int32_t ne = 0, nv = 0;
        if (e->user_kind != BK_META_QE_NONE) {
            kp_describe_client_quotas_response_entity_data_init(&en[ne]);
            en[ne].entity_type = bk_api_str("user");
            en[ne].entity_name = e->user_kind == BK_META_QE_NAME ? bk_api_str(e->user) : kp_slice_null();
            ne++;
        }
        if (e->client_kind != BK_META_QE_NONE) {
            kp_describe_client_quotas_response_entity_data_init(&en[ne]);
            en[ne].entity_type = bk_api_str("client-id");
            en[ne].entity_name = e->client_kind == BK_META_QE_NAME ? bk_api_str(e->client) : kp_slice_null();
            ne++;
        }
        for (int key = 0; key < BK_META_QUOTA_KEYS; key++) {
            if (!(e->has & (1u << key))) continue;
            kp_describe_client_quotas_response_value_data_init(&vs[nv]);
            vs[nv].key = bk_api_str(bk_meta_quota_key_name(key));
            vs[nv].value = e->value[key];
            nv++;
        }
        es[k].entity.items = en;
        es[k].entity.count = ne;
        es[k].values.items = vs;
        es[k].values.count = nv;
        k++;
    }
    kp_describe_client_quotas_response_t r;
    kp_describe_client_quotas_response_init(&r);
    r.error_message = kp_slice_null();
    r.entries.items = es;
    r.entries.count = (int32_t)n;
    bk_api_req_respond(req, &r);
}

/* ---- Alter --------------------------------------------------------------- */

typedef struct {
    bk_api_req_t *req;
    const char **err;           /* per entry: NULL = accepted */
    int16_t denied;             /* CLUSTER_AUTHORIZATION_FAILED for every entry, nothing done */
} alter_ctx_t;

/* The entry's entity as record parts (arena strings), or an error message. */
static const char *entry_check(bk_api_req_t *req, const kp_alter_client_quotas_request_entry_data_t *e,
                               Skiff__Metadata__ClientQuotaEntity *parts, size_t *nparts) {
    if (e->entity.count <= 0) return "The entity must name a user, a client-id or both";
    bool user = false, client = false;
    *nparts = 0;
    for (int32_t i = 0; i < e->entity.count; i++) {
        const kp_alter_client_quotas_request_entity_data_t *p = &e->entity.items[i];
        bool *seen = slice_eq(p->entity_type, "user") ? &user : slice_eq(p->entity_type, "client-id") ? &client : NULL;
        if (!seen) return slice_eq(p->entity_type, "ip") ? "ip quotas are not served by skiff" : "Unknown entity type";
        if (*seen) return "An entity type appears more than once in the entity";
        *seen = true;
        if (!kp_slice_is_null(p->entity_name) && p->entity_name.len > BK_META_QUOTA_NAME_MAX)
            return "The entity name is longer than 255 bytes";
        char *name = NULL;
        if (!kp_slice_is_null(p->entity_name)) {
            name = bk_api_req_cstr(req, p->entity_name);
            if (!name) return "The entity name holds a NUL byte";
        }
        skiff__metadata__client_quota_entity__init(&parts[*nparts]);
        parts[*nparts].entity_type = seen == &user ? (char *)"user" : (char *)"client-id";
        parts[*nparts].entity_name = name;
        (*nparts)++;
    }
    unsigned keys = 0;
    for (int32_t i = 0; i < e->ops.count; i++) {
        const kp_alter_client_quotas_request_op_data_t *o = &e->ops.items[i];
        int k = o->key.p ? bk_meta_quota_key_of((const char *)o->key.p, o->key.len) : -1;
        if (k < 0) return "Unknown quota key";
        if (keys & (1u << k)) return "A quota key appears more than once in the entry";
        keys |= 1u << k;
        if (o->remove) continue;
        if (!isfinite(o->value) || o->value <= 0) return "The quota value must be a positive number";
        if (bk_meta_quota_key_integral(k) && o->value != floor(o->value))
            return "The quota value of this key must be a whole number";
    }
    return NULL;
}

static void alter_answer(void *arg, int status) {
    alter_ctx_t *c = arg;
    bk_api_req_t *req = c->req;
    const kp_alter_client_quotas_request_t *q = req->body;
    size_t n = q->entries.count > 0 ? (size_t)q->entries.count : 0;
    kp_alter_client_quotas_response_t r;
    kp_alter_client_quotas_response_init(&r);
    kp_alter_client_quotas_response_entry_data_t *rs = bk_api_req_alloc(req, n, sizeof *rs);
    if (!rs) { free(c->err); free(c); bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < n; i++) {
        const kp_alter_client_quotas_request_entry_data_t *e = &q->entries.items[i];
        kp_alter_client_quotas_response_entry_data_init(&rs[i]);
        int16_t code = c->denied      ? c->denied
                       : c->err[i]    ? KP_ERROR_INVALID_REQUEST
                       : status != KP_OK ? bk_node_commit_error(status) : 0;
        rs[i].error_code = code;
        rs[i].error_message = c->err[i] ? bk_api_str(c->err[i]) : code ? bk_api_str(kp_error_name(code)) : kp_slice_null();
        size_t ne = e->entity.count > 0 ? (size_t)e->entity.count : 0;
        kp_alter_client_quotas_response_entity_data_t *en = bk_api_req_alloc(req, ne, sizeof *en);
        if (!en) { free(c->err); free(c); bk_api_req_close(req, "out of memory"); return; }
        for (size_t k = 0; k < ne; k++) {
            kp_alter_client_quotas_response_entity_data_init(&en[k]);
            en[k].entity_type = e->entity.items[k].entity_type;
            en[k].entity_name = e->entity.items[k].entity_name;
        }
        rs[i].entity.items = en;
        rs[i].entity.count = (int32_t)ne;
    }
    r.entries.items = rs;
    r.entries.count = (int32_t)n;
    free(c->err);
    free(c);
    bk_api_req_respond(req, &r);
}

void bk_api_h_alter_client_quotas(bk_api_req_t *req) {
    const kp_alter_client_quotas_request_t *q = req->body;
    size_t n = q->entries.count > 0 ? (size_t)q->entries.count : 0;
    alter_ctx_t *c = calloc(1, sizeof *c);
    const char **err = calloc(n ? n : 1, sizeof *err);
    if (!c || !err) { free(c); free(err); bk_api_req_close(req, "out of memory"); return; }
    c->req = req;
    c->err = err;
    /* Kafka: ALTER_CONFIGS on the cluster, else every entry is refused */
    if (!bk_api_authorized(req, BK_META_OP_ALTER_CONFIGS, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME)) {
        c->denied = KP_ERROR_CLUSTER_AUTHORIZATION_FAILED;
        alter_answer(c, KP_OK);
        return;
    }
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    for (size_t i = 0; i < n; i++) {
        const kp_alter_client_quotas_request_entry_data_t *e = &q->entries.items[i];
        Skiff__Metadata__ClientQuotaEntity parts[2];
        Skiff__Metadata__ClientQuotaEntity *pp[2] = { &parts[0], &parts[1] };
        size_t np = 0;
        /* at most 2 parts are accepted: a third is a repeated type */
        if (e->entity.count > 2) err[i] = "An entity type appears more than once in the entity";
        else err[i] = entry_check(req, e, parts, &np);
        if (err[i] || q->validate_only) continue;
        for (int32_t k = 0; k < e->ops.count; k++) {
            const kp_alter_client_quotas_request_op_data_t *o = &e->ops.items[k];
            Skiff__Metadata__ClientQuota m = SKIFF__METADATA__CLIENT_QUOTA__INIT;
            m.n_entity = np;
            m.entity = pp;
            m.key = (char *)bk_meta_quota_key_name(bk_meta_quota_key_of((const char *)o->key.p, o->key.len));
            m.has_remove = true; m.remove = o->remove;
            if (!o->remove) { m.has_value = true; m.value = o->value; }
            Skiff__Metadata__MetadataRecord rec = SKIFF__METADATA__METADATA_RECORD__INIT;
            rec.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_CLIENT_QUOTA;
            rec.client_quota = &m;
            /* failed: the list's error stays set and the commit below
             * refuses it; every entry answers that error */
            if (bk_meta_recs_add(&recs, &rec) != KP_OK) break;
        }
    }
    if (recs.n == 0 && recs.err == KP_OK) {     /* nothing to write (an error is not "nothing") */
        bk_meta_recs_free(&recs);
        alter_answer(c, KP_OK);
        return;
    }
    bk_node_commit(req->node, &recs, alter_answer, c);
    bk_meta_recs_free(&recs);
}
