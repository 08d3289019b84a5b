/* broker/api/h_acls.c — DescribeAcls (29) from the image; CreateAcls (30)
 * and DeleteAcls (31) as controller decisions (AccessControlEntry /
 * RemoveAccessControlEntry records, forwarded to the controller like the
 * other metadata changes: forward.h).
 *
 * Kafka's rules: with no authorizer every answer is SECURITY_DISABLED;
 * DescribeAcls needs DESCRIBE on the cluster, Create/DeleteAcls ALTER on the
 * cluster (CLUSTER_AUTHORIZATION_FAILED, per creation / per filter); an
 * invalid binding or filter is INVALID_REQUEST for that item alone. */
#include <stdlib.h>
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/core/authz.h"
#include "broker/meta/acl.h"
#include "broker/meta/records.h"
#include "protocol/kp_errors.h"

static const char *opt_cstr(bk_api_req_t *req, kp_str_t s, bool *bad) {
    if (!s.p) return NULL;                    /* null: any */
    const char *c = bk_api_req_cstr(req, s);
    if (!c) *bad = true;
    return c;
}

static kp_str_t dup_str(bk_api_req_t *req, const char *s) {
    size_t n = strlen(s);
    char *c = bk_api_req_alloc(req, n + 1, 1);
    if (!c) return kp_slice_null();
    memcpy(c, s, n);
    return (kp_str_t){ (const uint8_t *)c, n };
}

/* KP_OK, or the list's error (bk_meta_recs_add): the commit then refuses
 * the list and every entry answers its error. */
static KP_MUST_CHECK int emit(bk_meta_recs_t *recs, const bk_meta_acl_t *a, bool add) {
    Skiff__Metadata__AccessControlEntry e = SKIFF__METADATA__ACCESS_CONTROL_ENTRY__INIT;
    e.has_resource_type = true; e.resource_type = a->resource_type;
    e.resource_name = (char *)a->resource_name;
    e.has_pattern_type = true; e.pattern_type = a->pattern_type;
    e.principal = (char *)a->principal;
    e.host = (char *)a->host;
    e.has_operation = true; e.operation = a->operation;
    e.has_permission_type = true; e.permission_type = a->permission;
    Skiff__Metadata__RemoveAccessControlEntry r = SKIFF__METADATA__REMOVE_ACCESS_CONTROL_ENTRY__INIT;
    r.acl = &e;
    Skiff__Metadata__MetadataRecord rec = SKIFF__METADATA__METADATA_RECORD__INIT;
    if (add) {
        rec.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_ACCESS_CONTROL_ENTRY;
        rec.access_control_entry = &e;
    } else {
        rec.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_REMOVE_ACCESS_CONTROL_ENTRY;
        rec.remove_access_control_entry = &r;
    }
    return bk_meta_recs_add(recs, &rec);
}

/* ---- Describe ----------------------------------------------------------- */

typedef struct {
    const bk_meta_acl_filter_t *f;
    bk_meta_acl_t *v;
    size_t n, cap;
    bool oom;
} collect_t;

static bool collect(void *ctx, const bk_meta_acl_t *a) {
    collect_t *c = ctx;
    if (!bk_meta_acl_filter_match(c->f, a)) return true;
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 16;
        bk_meta_acl_t *nv = realloc(c->v, nc * sizeof *nv);
        if (!nv) { c->oom = true; return false; }
        c->v = nv;
        c->cap = nc;
    }
    c->v[c->n++] = *a;
    return true;
}

static int res_cmp(const void *x, const void *y) {
    const bk_meta_acl_t *a = x, *b = y;
    if (a->resource_type != b->resource_type) return a->resource_type - b->resource_type;
    if (a->pattern_type != b->pattern_type) return a->pattern_type - b->pattern_type;
    return strcmp(a->resource_name, b->resource_name);
}

static void filter_of(bk_api_req_t *req, bk_meta_acl_filter_t *f, int8_t rt, kp_str_t rn, int8_t pt, kp_str_t pr,
                      kp_str_t host, int8_t op, int8_t perm, bool *bad) {
    f->resource_type = rt;
    f->pattern_type = pt;
    f->resource_name = opt_cstr(req, rn, bad);
    f->principal = opt_cstr(req, pr, bad);
    f->host = opt_cstr(req, host, bad);
    f->operation = op;
    f->permission = perm;
}

void bk_api_h_describe_acls(bk_api_req_t *req) {
    const kp_describe_acls_request_t *q = req->body;
    kp_describe_acls_response_t r;
    kp_describe_acls_response_init(&r);
    r.error_message = kp_slice_null();
    if (!bk_node_authz_on(req->node)) {
        r.error_code = KP_ERROR_SECURITY_DISABLED;
        r.error_message = bk_api_str("No Authorizer is configured on the broker");
        bk_api_req_respond(req, &r);
        return;
    }
    if (!bk_api_authorized(req, BK_META_OP_DESCRIBE, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME)) {
        r.error_code = KP_ERROR_CLUSTER_AUTHORIZATION_FAILED;
        bk_api_req_respond(req, &r);
        return;
    }
    bk_meta_acl_filter_t f;
    bool bad = false;
    filter_of(req, &f, q->resource_type_filter, q->resource_name_filter, q->pattern_type_filter, q->principal_filter,
              q->host_filter, q->operation, q->permission_type, &bad);
    const char *why = bad ? "a filter string holds a NUL byte" : bk_meta_acl_filter_valid(&f);
    if (why) {
        r.error_code = KP_ERROR_INVALID_REQUEST;
        r.error_message = bk_api_str(why);
        bk_api_req_respond(req, &r);
        return;
    }
    collect_t c = { &f, NULL, 0, 0, false };
    bk_meta_acls_each(req->node->img.acls, collect, &c);
    if (c.oom) { free(c.v); bk_api_req_close(req, "out of memory"); return; }
    qsort(c.v, c.n, sizeof *c.v, res_cmp);
    size_t nres = 0;
    for (size_t i = 0; i < c.n; i++) nres += i == 0 || res_cmp(&c.v[i], &c.v[i - 1]) != 0;
    kp_describe_acls_response_describe_acls_resource_t *rs = bk_api_req_alloc(req, nres, sizeof *rs);
    kp_describe_acls_response_acl_description_t *ds = bk_api_req_alloc(req, c.n, sizeof *ds);
    if (!rs || !ds) { free(c.v); bk_api_req_close(req, "out of memory"); return; }
    size_t k = 0;
    for (size_t i = 0; i < c.n; i++) {
        if (i == 0 || res_cmp(&c.v[i], &c.v[i - 1]) != 0) {
            kp_describe_acls_response_describe_acls_resource_init(&rs[k]);
            rs[k].resource_type = c.v[i].resource_type;
            rs[k].resource_name = bk_api_str(c.v[i].resource_name);
            rs[k].pattern_type = c.v[i].pattern_type;
            rs[k].acls.items = &ds[i];
            k++;
        }
        kp_describe_acls_response_acl_description_init(&ds[i]);
        ds[i].principal = bk_api_str(c.v[i].principal);
        ds[i].host = bk_api_str(c.v[i].host);
        ds[i].operation = c.v[i].operation;
        ds[i].permission_type = c.v[i].permission;
        rs[k - 1].acls.count++;
    }
    r.resources.items = rs;
    r.resources.count = (int32_t)nres;
    free(c.v);
    /* encoded now, while the image strings it points at are unchanged */
    bk_api_req_respond(req, &r);
}

/* ---- Create --------------------------------------------------------------- */

typedef struct {
    bk_api_req_t *req;
    int16_t *err;
    const char **msg;
    size_t n;
} create_ctx_t;

static void create_answer(void *arg, int status) {
    create_ctx_t *c = arg;
    kp_create_acls_response_t r;
    kp_create_acls_response_init(&r);
    kp_create_acls_response_acl_creation_result_t *rs = bk_api_req_alloc(c->req, c->n, sizeof *rs);
    bk_api_req_t *req = c->req;
    if (!rs) { free(c); bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < c->n; i++) {
        kp_create_acls_response_acl_creation_result_init(&rs[i]);
        int16_t e = c->err[i] ? c->err[i] : status != KP_OK ? bk_node_commit_error(status) : 0;
        rs[i].error_code = e;
        rs[i].error_message = e ? bk_api_str(c->msg[i] ? c->msg[i] : kp_error_name(e)) : kp_slice_null();
    }
    r.results.items = rs;
    r.results.count = (int32_t)c->n;
    free(c);
    bk_api_req_respond(req, &r);
}

void bk_api_h_create_acls(bk_api_req_t *req) {
    const kp_create_acls_request_t *q = req->body;
    size_t n = q->creations.count > 0 ? (size_t)q->creations.count : 0;
    create_ctx_t *c = calloc(1, sizeof *c);
    int16_t *err = bk_api_req_alloc(req, n, sizeof *err);
    const char **msg = bk_api_req_alloc(req, n, sizeof *msg);
    if (!c || !err || !msg) { free(c); bk_api_req_close(req, "out of memory"); return; }
    *c = (create_ctx_t){ req, err, msg, n };
    bool on = bk_node_authz_on(req->node);
    bool may = bk_api_authorized(req, BK_META_OP_ALTER, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME);
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    for (size_t i = 0; i < n; i++) {
        const kp_create_acls_request_acl_creation_t *x = &q->creations.items[i];
        if (!on) { err[i] = KP_ERROR_SECURITY_DISABLED; msg[i] = "No Authorizer is configured on the broker"; continue; }
        if (!may) { err[i] = KP_ERROR_CLUSTER_AUTHORIZATION_FAILED; continue; }
        bool bad = false;
        bk_meta_acl_t a = { x->resource_type, x->resource_pattern_type, opt_cstr(req, x->resource_name, &bad),
                            opt_cstr(req, x->principal, &bad), opt_cstr(req, x->host, &bad), x->operation,
                            x->permission_type };
        const char *why = bad ? "a string holds a NUL byte"
                          : (!a.resource_name || !a.principal || !a.host) ? "null resource name, principal or host"
                                                                          : bk_meta_acl_valid(&a);
        if (why) { err[i] = KP_ERROR_INVALID_REQUEST; msg[i] = why; continue; }
        /* failed: the list's error stays set (later adds are no-ops), the
         * commit refuses the list and every creation answers it */
        if (emit(&recs, &a, true) != KP_OK) continue;
    }
    bk_node_commit(req->node, &recs, create_answer, c);
    bk_meta_recs_free(&recs);
}

/* ---- Delete ----------------------------------------------------------------- */

typedef struct {
    bk_api_req_t *req;
    kp_delete_acls_response_delete_acls_filter_result_t *fr;
    size_t n;
} delete_ctx_t;

static void delete_answer(void *arg, int status) {
    delete_ctx_t *c = arg;
    kp_delete_acls_response_t r;
    kp_delete_acls_response_init(&r);
    for (size_t i = 0; i < c->n; i++) {
        if (c->fr[i].error_code || status == KP_OK) continue;
        /* the records did not commit: the filter's deletions did not happen */
        c->fr[i].error_code = bk_node_commit_error(status);
        c->fr[i].error_message = bk_api_str(kp_error_name(c->fr[i].error_code));
        c->fr[i].matching_acls.count = 0;
    }
    r.filter_results.items = c->fr;
    r.filter_results.count = (int32_t)c->n;
    bk_api_req_t *req = c->req;
    free(c);
    bk_api_req_respond(req, &r);
}

void bk_api_h_delete_acls(bk_api_req_t *req) {
    const kp_delete_acls_request_t *q = req->body;
    size_t n = q->filters.count > 0 ? (size_t)q->filters.count : 0;
    delete_ctx_t *c = calloc(1, sizeof *c);
    kp_delete_acls_response_delete_acls_filter_result_t *fr = bk_api_req_alloc(req, n, sizeof *fr);
    if (!c || !fr) { free(c); bk_api_req_close(req, "out of memory"); return; }
    *c = (delete_ctx_t){ req, fr, n };
    bool on = bk_node_authz_on(req->node);
    bool may = bk_api_authorized(req, BK_META_OP_ALTER, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME);
    const bk_meta_image_t *img = bk_node_decision_image(req->node);
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    for (size_t i = 0; i < n; i++) {
        const kp_delete_acls_request_delete_acls_filter_t *x = &q->filters.items[i];
        kp_delete_acls_response_delete_acls_filter_result_init(&fr[i]);
        fr[i].error_message = kp_slice_null();
        if (!on) {
            fr[i].error_code = KP_ERROR_SECURITY_DISABLED;
            fr[i].error_message = bk_api_str("No Authorizer is configured on the broker");
            continue;
        }
        if (!may) { fr[i].error_code = KP_ERROR_CLUSTER_AUTHORIZATION_FAILED; continue; }
        bk_meta_acl_filter_t f;
        bool bad = false;
        filter_of(req, &f, x->resource_type_filter, x->resource_name_filter, x->pattern_type_filter,
                  x->principal_filter, x->host_filter, x->operation, x->permission_type, &bad);
        const char *why = bad ? "a filter string holds a NUL byte" : bk_meta_acl_filter_valid(&f);
        if (why) {
            fr[i].error_code = KP_ERROR_INVALID_REQUEST;
            fr[i].error_message = bk_api_str(why);
            continue;
        }
        collect_t cl = { &f, NULL, 0, 0, false };
        bk_meta_acls_each(img->acls, collect, &cl);
        kp_delete_acls_response_delete_acls_matching_acl_t *m = cl.oom ? NULL : bk_api_req_alloc(req, cl.n, sizeof *m);
        if (!m) {
            free(cl.v);
            fr[i].error_code = KP_ERROR_UNKNOWN_SERVER_ERROR;
            fr[i].error_message = bk_api_str("out of memory");
            continue;
        }
        for (size_t k = 0; k < cl.n; k++) {
            const bk_meta_acl_t *a = &cl.v[k];
            kp_delete_acls_response_delete_acls_matching_acl_init(&m[k]);
            m[k].error_message = kp_slice_null();
            /* copies: the image's strings go away when the removal applies */
            m[k].resource_type = a->resource_type;
            m[k].resource_name = dup_str(req, a->resource_name);
            m[k].pattern_type = a->pattern_type;
            m[k].principal = dup_str(req, a->principal);
            m[k].host = dup_str(req, a->host);
            m[k].operation = a->operation;
            m[k].permission_type = a->permission;
            /* failed: the list's error stays set, the commit refuses it
             * and delete_answer reports it for every filter */
            if (emit(&recs, a, false) != KP_OK) continue;
        }
        fr[i].matching_acls.items = m;
        fr[i].matching_acls.count = (int32_t)cl.n;
        free(cl.v);
    }
    bk_node_commit(req->node, &recs, delete_answer, c);
    bk_meta_recs_free(&recs);
}
