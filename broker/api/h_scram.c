/* broker/api/h_scram.c — DescribeUserScramCredentials (50) v0 from the
 * image, AlterUserScramCredentials (51) v0 as a controller decision
 * (forwarded to the controller like the other metadata changes: forward.h).
 *
 * Kafka's rules (KIP-554): one result per user, in order of first mention;
 * a user's changes are all applied or none. Per user, the first error of:
 * an empty name (UNACCEPTABLE_CREDENTIAL), an unknown mechanism
 * (UNSUPPORTED_SASL_MECHANISM), a (user, mechanism) named twice in the
 * request (DUPLICATE_RESOURCE), iterations outside 4096..16384, an empty
 * salt or a salted password of the wrong length (UNACCEPTABLE_CREDENTIAL), a
 * deletion of a credential that does not exist (RESOURCE_NOT_FOUND). The
 * controller derives StoredKey/ServerKey from the salted password (three
 * hashes: no PBKDF2); the password itself never reaches the broker.
 * Entries are grouped by sorting (O(n log n)), never compared pairwise. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/meta/acl.h"
#include "broker/meta/records.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_sasl.h"

/* ---- Describe ---------------------------------------------------------- */

typedef kp_describe_user_scram_credentials_response_describe_user_scram_credentials_result_t dres_t;
typedef kp_describe_user_scram_credentials_response_credential_info_t dinfo_t;

static int fill_user(bk_api_req_t *req, const bk_meta_scram_t *c, size_t n, dres_t *r) {
    dinfo_t *ci = bk_api_req_alloc(req, n, sizeof *ci);
    if (!ci) return KP_ERR_NOMEM;
    for (size_t k = 0; k < n; k++) {
        ci[k].mechanism = c[k].mechanism;
        ci[k].iterations = c[k].iterations;
    }
    r->credential_infos.items = ci;
    r->credential_infos.count = (int32_t)n;
    return KP_OK;
}

static int slice_cmp(kp_str_t a, kp_str_t b) {
    size_t m = a.len < b.len ? a.len : b.len;
    int r = m ? memcmp(a.p, b.p, m) : 0;
    return r ? r : (a.len > b.len) - (a.len < b.len);
}

static int name_idx_cmp(const void *x, const void *y, void *ctx) {
    const kp_describe_user_scram_credentials_request_user_name_t *u = ctx;
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    int r = slice_cmp(u[a].name, u[b].name);
    return r ? r : (a > b) - (a < b);
}

void bk_api_h_describe_user_scram_credentials(bk_api_req_t *req) {
    const kp_describe_user_scram_credentials_request_t *q = req->body;
    const bk_meta_image_t *img = &req->node->img;
    kp_describe_user_scram_credentials_response_t r;
    kp_describe_user_scram_credentials_response_init(&r);
    r.error_message = kp_slice_null();
    /* Kafka: DESCRIBE on the cluster, else the whole request fails */
    if (!bk_api_authorized(req, BK_META_OP_DESCRIBE, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME)) {
        r.error_code = KP_ERROR_CLUSTER_AUTHORIZATION_FAILED;
        r.error_message = bk_api_str(kp_error_name(KP_ERROR_CLUSTER_AUTHORIZATION_FAILED));
        bk_api_req_respond(req, &r);
        return;
    }
    if (q->users.count <= 0) {
        /* every user with a credential: runs of equal names in the image */
        size_t users = 0;
        for (size_t i = 0; i < img->nscram; i++)
            if (i == 0 || strcmp(img->scram[i].name, img->scram[i - 1].name) != 0) users++;
        dres_t *rs = bk_api_req_alloc(req, users, sizeof *rs);
        if (!rs) { bk_api_req_close(req, "out of memory"); return; }
        size_t u = 0;
        for (size_t i = 0; i < img->nscram;) {
            size_t n = 0;
            const bk_meta_scram_t *c = bk_meta_image_scram_user(img, img->scram[i].name, &n);
            kp_describe_user_scram_credentials_response_describe_user_scram_credentials_result_init(&rs[u]);
            rs[u].error_message = kp_slice_null();
            rs[u].user = bk_api_str(c->name);
            if (fill_user(req, c, n, &rs[u]) != KP_OK) { bk_api_req_close(req, "out of memory"); return; }
            u++;
            i += n;
        }
        r.results.items = rs;
        r.results.count = (int32_t)u;
        bk_api_req_respond(req, &r);
        return;
    }
    size_t cnt = (size_t)q->users.count;
    dres_t *rs = bk_api_req_alloc(req, cnt, sizeof *rs);
    int32_t *ord = bk_api_req_alloc(req, cnt, sizeof *ord);
    bool *dup = bk_api_req_alloc(req, cnt, sizeof *dup);
    if (!rs || !ord || !dup) { bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < cnt; i++) ord[i] = (int32_t)i;
    qsort_r(ord, cnt, sizeof *ord, name_idx_cmp, q->users.items);
    for (size_t i = 1; i < cnt; i++)
        if (slice_cmp(q->users.items[ord[i]].name, q->users.items[ord[i - 1]].name) == 0)
            dup[ord[i]] = dup[ord[i - 1]] = true;
    for (size_t i = 0; i < cnt; i++) {
        kp_describe_user_scram_credentials_response_describe_user_scram_credentials_result_init(&rs[i]);
        rs[i].error_message = kp_slice_null();
        kp_str_t name = q->users.items[i].name;
        rs[i].user = name;
        if (dup[i]) {
            rs[i].error_code = KP_ERROR_DUPLICATE_RESOURCE;
            rs[i].error_message = bk_api_str("Cannot describe SCRAM credentials for the same user twice in a single request");
            continue;
        }
        char *cname = bk_api_req_cstr(req, name);
        size_t n = 0;
        const bk_meta_scram_t *c = cname ? bk_meta_image_scram_user(img, cname, &n) : NULL;
        if (!c) {
            rs[i].error_code = KP_ERROR_RESOURCE_NOT_FOUND;
            rs[i].error_message = bk_api_str("Attempt to describe a user credential that does not exist");
            continue;
        }
        if (fill_user(req, c, n, &rs[i]) != KP_OK) { bk_api_req_close(req, "out of memory"); return; }
    }
    r.results.items = rs;
    r.results.count = (int32_t)cnt;
    bk_api_req_respond(req, &r);
}

/* ---- Alter ---------------------------------------------------------------- */

typedef struct {
    kp_str_t name;
    int8_t mech;
    int32_t idx;        /* deletions first (0..nd), then upsertions */
} entry_t;

typedef struct {
    kp_str_t name;
    int16_t error;
    const char *message;
    int32_t first;      /* entry index of the first mention, for the answer order */
} user_t;

typedef struct {
    bk_api_req_t *req;
    user_t *users;
    size_t nusers;
} alter_ctx_t;

static int entry_cmp(const void *x, const void *y) {
    const entry_t *a = x, *b = y;
    int r = slice_cmp(a->name, b->name);
    if (r) return r;
    if (a->mech != b->mech) return (a->mech > b->mech) - (a->mech < b->mech);
    return (a->idx > b->idx) - (a->idx < b->idx);
}

static int user_first_cmp(const void *x, const void *y) {
    const user_t *a = x, *b = y;
    return (a->first > b->first) - (a->first < b->first);
}

static void set_err(user_t *u, int16_t code, const char *msg) {
    if (u->error) return;
    u->error = code;
    u->message = msg;
}

static void alter_answer(void *arg, int status) {
    alter_ctx_t *c = arg;
    kp_alter_user_scram_credentials_response_t r;
    kp_alter_user_scram_credentials_response_init(&r);
    kp_alter_user_scram_credentials_response_alter_user_scram_credentials_result_t *rs =
        bk_api_req_alloc(c->req, c->nusers, sizeof *rs);
    if (!rs) { bk_api_req_close(c->req, "out of memory"); free(c); return; }
    for (size_t i = 0; i < c->nusers; i++) {
        kp_alter_user_scram_credentials_response_alter_user_scram_credentials_result_init(&rs[i]);
        rs[i].user = c->users[i].name;
        int16_t e = c->users[i].error ? c->users[i].error : status != KP_OK ? bk_node_commit_error(status) : 0;
        rs[i].error_code = e;
        rs[i].error_message = e ? bk_api_str(c->users[i].error ? c->users[i].message : kp_error_name(e)) : kp_slice_null();
    }
    r.results.items = rs;
    r.results.count = (int32_t)c->nusers;
    bk_api_req_t *req = c->req;
    free(c);
    bk_api_req_respond(req, &r);
}

/* emit_*: KP_OK, or the list's error (bk_meta_recs_add): the list is then
 * not built further, the commit refuses it and every user answers it. */
static KP_MUST_CHECK int emit_upsert(bk_meta_recs_t *recs, const char *name, kp_sasl_mech_t mech,
                                     const kp_scram_cred_t *k) {
    assert(k->mech == mech);
    return bk_meta_recs_add_scram(recs, name, k);
}

static KP_MUST_CHECK int emit_remove(bk_meta_recs_t *recs, const char *name, int8_t mech) {
    Skiff__Metadata__RemoveUserScramCredential d = SKIFF__METADATA__REMOVE_USER_SCRAM_CREDENTIAL__INIT;
    d.name = (char *)name;
    d.has_mechanism = true; d.mechanism = mech;
    Skiff__Metadata__MetadataRecord rec = SKIFF__METADATA__METADATA_RECORD__INIT;
    rec.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_REMOVE_USER_SCRAM_CREDENTIAL;
    rec.remove_user_scram_credential = &d;
    return bk_meta_recs_add(recs, &rec);
}

void bk_api_h_alter_user_scram_credentials(bk_api_req_t *req) {
    const kp_alter_user_scram_credentials_request_t *q = req->body;
    size_t nd = q->deletions.count > 0 ? (size_t)q->deletions.count : 0;
    size_t nu = q->upsertions.count > 0 ? (size_t)q->upsertions.count : 0;
    size_t ne = nd + nu;
    entry_t *e = bk_api_req_alloc(req, ne, sizeof *e);
    user_t *users = bk_api_req_alloc(req, ne, sizeof *users);
    int32_t *user_of = bk_api_req_alloc(req, ne, sizeof *user_of);
    alter_ctx_t *c = calloc(1, sizeof *c);
    if (!e || !users || !user_of || !c) { free(c); bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < nd; i++)
        e[i] = (entry_t){ q->deletions.items[i].name, q->deletions.items[i].mechanism, (int32_t)i };
    for (size_t i = 0; i < nu; i++)
        e[nd + i] = (entry_t){ q->upsertions.items[i].name, q->upsertions.items[i].mechanism, (int32_t)(nd + i) };
    qsort(e, ne, sizeof *e, entry_cmp);
    /* group by user; DUPLICATE_RESOURCE for a (user, mechanism) pair twice */
    size_t n = 0;
    for (size_t i = 0; i < ne; i++) {
        if (i == 0 || slice_cmp(e[i].name, e[i - 1].name) != 0)
            users[n++] = (user_t){ e[i].name, 0, NULL, e[i].idx };
        user_t *u = &users[n - 1];
        if (e[i].idx < u->first) u->first = e[i].idx;
        user_of[e[i].idx] = (int32_t)(n - 1);
        if (i > 0 && slice_cmp(e[i].name, e[i - 1].name) == 0 && e[i].mech == e[i - 1].mech)
            set_err(u, KP_ERROR_DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request");
    }
    /* Kafka: ALTER on the cluster, else every user CLUSTER_AUTHORIZATION_FAILED */
    if (!bk_api_authorized(req, BK_META_OP_ALTER, BK_META_RES_CLUSTER, BK_META_ACL_CLUSTER_NAME))
        for (size_t i = 0; i < n; i++) {
            users[i].error = KP_ERROR_CLUSTER_AUTHORIZATION_FAILED;
            users[i].message = "Cluster authorization failed.";
        }
    const bk_meta_image_t *img = bk_node_decision_image(req->node);
    /* checks in request order, so the first error of a user is the first listed */
    for (size_t i = 0; i < ne; i++) {
        bool del = i < nd;
        kp_str_t name = del ? q->deletions.items[i].name : q->upsertions.items[i - nd].name;
        int8_t m = del ? q->deletions.items[i].mechanism : q->upsertions.items[i - nd].mechanism;
        user_t *u = &users[user_of[i]];
        kp_sasl_mech_t mech;
        if (name.len == 0) { set_err(u, KP_ERROR_UNACCEPTABLE_CREDENTIAL, "Username must not be empty"); continue; }
        if (name.len > KP_SASL_NAME_MAX || kp_slice_has_nul(name)) {
            set_err(u, KP_ERROR_UNACCEPTABLE_CREDENTIAL, "Username too long or holding a NUL byte");
            continue;
        }
        if (kp_sasl_mech_from_scram_type(m, &mech) != KP_OK) {
            set_err(u, KP_ERROR_UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism");
            continue;
        }
        if (del) {
            char *cn = bk_api_req_cstr(req, name);
            if (!cn || !bk_meta_image_scram(img, cn, m))
                set_err(u, KP_ERROR_RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist");
            continue;
        }
        const kp_alter_user_scram_credentials_request_scram_credential_upsertion_t *up = &q->upsertions.items[i - nd];
        if (up->iterations < KP_SCRAM_ITERATIONS_MIN) set_err(u, KP_ERROR_UNACCEPTABLE_CREDENTIAL, "Too few iterations");
        else if (up->iterations > KP_SCRAM_ITERATIONS_MAX) set_err(u, KP_ERROR_UNACCEPTABLE_CREDENTIAL, "Too many iterations");
        else if (up->salt.len == 0 || up->salt.len > KP_SCRAM_SALT_MAX)
            set_err(u, KP_ERROR_UNACCEPTABLE_CREDENTIAL, "Salt must be 1 to 128 bytes");
        else if (up->salted_password.len != kp_scram_hash_len(mech))
            set_err(u, KP_ERROR_UNACCEPTABLE_CREDENTIAL, "Salted password has the wrong length for the mechanism");
    }
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    for (size_t i = 0; i < ne; i++) {
        user_t *u = &users[user_of[i]];
        if (u->error) continue;
        bool del = i < nd;
        char *cn = bk_api_req_cstr(req, u->name);
        if (!cn) { set_err(u, KP_ERROR_UNKNOWN_SERVER_ERROR, "out of memory"); continue; }
        if (del) {
            if (emit_remove(&recs, cn, q->deletions.items[i].mechanism) != KP_OK) break;
            continue;
        }
        const kp_alter_user_scram_credentials_request_scram_credential_upsertion_t *up = &q->upsertions.items[i - nd];
        kp_sasl_mech_t mech;
        kp_scram_cred_t k;
        if (kp_sasl_mech_from_scram_type(up->mechanism, &mech) != KP_OK ||
            kp_scram_cred_from_salted(mech, up->salted_password.p, up->salted_password.len, up->salt.p,
                                      up->salt.len, up->iterations, &k) != KP_OK) {
            set_err(u, KP_ERROR_UNACCEPTABLE_CREDENTIAL, "Credential could not be derived");
            continue;
        }
        if (emit_upsert(&recs, cn, mech, &k) != KP_OK) break;
    }
    /* a user whose later entry failed after an earlier one was emitted: the
     * records were built in request order, so rebuild without such users */
    bool rebuild = false;
    for (size_t i = 0; i < n; i++) rebuild |= users[i].error == KP_ERROR_UNKNOWN_SERVER_ERROR ||
                                              users[i].error == KP_ERROR_UNACCEPTABLE_CREDENTIAL;
    if (rebuild && recs.n > 0 && recs.err == KP_OK) {
        bk_meta_recs_free(&recs);
        bk_meta_recs_init(&recs);
        for (size_t i = 0; i < ne; i++) {
            user_t *u = &users[user_of[i]];
            if (u->error) continue;
            char *cn = bk_api_req_cstr(req, u->name);
            if (!cn) { set_err(u, KP_ERROR_UNKNOWN_SERVER_ERROR, "out of memory"); continue; }
            if (i < nd) {
                if (emit_remove(&recs, cn, q->deletions.items[i].mechanism) != KP_OK) break;
                continue;
            }
            const kp_alter_user_scram_credentials_request_scram_credential_upsertion_t *up = &q->upsertions.items[i - nd];
            kp_sasl_mech_t mech;
            kp_scram_cred_t k;
            if (kp_sasl_mech_from_scram_type(up->mechanism, &mech) == KP_OK &&
                kp_scram_cred_from_salted(mech, up->salted_password.p, up->salted_password.len, up->salt.p,
                                          up->salt.len, up->iterations, &k) == KP_OK &&
                emit_upsert(&recs, cn, mech, &k) != KP_OK)
                break;
        }
    }
    qsort(users, n, sizeof *users, user_first_cmp);
    c->req = req;
    c->users = users;
    c->nusers = n;
    bk_node_commit(req->node, &recs, alter_answer, c);
    bk_meta_recs_free(&recs);
}
