/* ctl_feature.c — `skiffctl feature list|upgrade|downgrade`: the cluster's
 * feature flags (KIP-584), as Kafka's kafka-features tool shows and sets
 * them.
 *
 * list reads ApiVersions (v3+: supported ranges, finalized levels and their
 * epoch) from the bootstrap broker. upgrade / downgrade send one
 * UpdateFeatures (v1: per-feature results) with every --feature NAME=LEVEL;
 * the broker forwards it to the controller. downgrade sends upgrade type 2
 * (safe), or 3 with --unsafe; --validate-only changes nothing. A refused
 * update prints the broker's message per feature and exits 1.
 */
#include <stdlib.h>
#include <string.h>

#include "clients/cl_ctl.h"
#include "clients/cl_out.h"
#include "protocol/kp_errors.h"

#define CL_VER_API_VERSIONS_FEATURES 4
#define CL_VER_UPDATE_FEATURES 1
#define FEATURES_MAX 16

static const cl_opt_t feat_opts[] = {
    CL_CTL_GLOBAL_OPTS,
    { "--feature", "-f", "NAME=LEVEL", true, "upgrade/downgrade: the feature and its new level (repeatable)" },
    { "--validate-only", NULL, NULL, false, "upgrade/downgrade: check only, change nothing" },
    { "--unsafe", NULL, NULL, false, "downgrade: allow a lossy downgrade (upgrade type 3)" },
};
#define FEAT_NOPTS ((int)(sizeof feat_opts / sizeof feat_opts[0]))

static const char *feat_usage =
    "skiffctl feature list\n"
    "       skiffctl feature upgrade --feature NAME=LEVEL... [--validate-only]\n"
    "       skiffctl feature downgrade --feature NAME=LEVEL... [--unsafe] [--validate-only]";

static int do_list(cl_ctl_t *ctx, cl_client_t *c) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)4 << 20);
    kp_api_versions_request_t req;
    kp_api_versions_request_init(&req);
    req.client_software_name = cl_str("skiffctl");
    req.client_software_version = cl_str("1");
    void *body = NULL;
    int16_t ver = -1;
    cl_err_t e;
    cl_err_clear(&e);
    int rc = cl_client_call(c, -1, KP_API_API_VERSIONS, CL_VER_API_VERSIONS_FEATURES, &req, &body, &ver, &a, &e);
    const kp_api_versions_response_t *r = body;
    if (rc == CL_OK && r->error_code != 0) rc = cl_err_kafka(&e, r->error_code, "ApiVersions");
    if (rc == CL_OK && ver < 3) rc = cl_err_set(&e, CL_E_PROTO, "the broker has no feature flags (ApiVersions v%d)", ver);
    if (rc != CL_OK) { kp_arena_free(&a); return cl_ctl_fail(ctx, &e); }
    static const char *hdr[] = { "feature", "supported_min", "supported_max", "finalized" };
    cl_table_t t;
    cl_table_init(&t, 4, hdr);
    cl_json_t j;
    if (ctx->json) {
        /* one object per supported feature, with its finalized level (0 = not finalized) */
        cl_json_init(&j, ctx->out);
        cl_json_obj(&j);
        cl_json_key(&j, "finalized_features_epoch"); cl_json_int(&j, r->finalized_features_epoch);
        cl_json_key(&j, "features"); cl_json_arr(&j);
    }
    for (int32_t i = 0; i < r->supported_features.count; i++) {
        const kp_api_versions_response_supported_feature_key_t *s = &r->supported_features.items[i];
        int level = 0;
        for (int32_t k = 0; k < r->finalized_features.count; k++)
            if (kp_slice_eq(r->finalized_features.items[k].name, s->name))
                level = r->finalized_features.items[k].max_version_level;
        char name[128], lo[8], hi[8], fin[8];
        cl_strz(s->name, name, sizeof name);
        if (ctx->json) {
            cl_json_obj(&j);
            cl_json_key(&j, "feature"); cl_json_str(&j, name);
            cl_json_key(&j, "supported_min"); cl_json_int(&j, s->min_version);
            cl_json_key(&j, "supported_max"); cl_json_int(&j, s->max_version);
            cl_json_key(&j, "finalized"); cl_json_int(&j, level);
            cl_json_obj_end(&j);
            continue;
        }
        snprintf(lo, sizeof lo, "%d", s->min_version);
        snprintf(hi, sizeof hi, "%d", s->max_version);
        snprintf(fin, sizeof fin, "%d", level);
        const char *row[] = { name, lo, hi, level > 0 ? fin : "-" };
        cl_table_add(&t, row);
    }
    if (ctx->json) {
        cl_json_arr_end(&j);
        cl_json_obj_end(&j);
        cl_json_end(&j);
    } else {
        cl_table_print(&t, ctx->out);
        fprintf(ctx->out, "finalized features epoch: %lld\n", (long long)r->finalized_features_epoch);
    }
    cl_table_free(&t);
    kp_arena_free(&a);
    return CL_EXIT_OK;
}

static int do_update(cl_ctl_t *ctx, cl_client_t *c, const cl_args_t *args, int8_t type) {
    int n = cl_args_count(args, "--feature");
    kp_update_features_request_feature_update_key_t u[FEATURES_MAX];
    char names[FEATURES_MAX][128];
    cl_err_t e;
    cl_err_clear(&e);
    for (int i = 0; i < n; i++) {
        const char *f = cl_args_at(args, "--feature", i);
        const char *eq = strchr(f, '=');
        if (!eq || eq == f || (size_t)(eq - f) >= sizeof names[i])
            return cl_ctl_usage(ctx, "--feature wants NAME=LEVEL, not '%s'", f);
        memcpy(names[i], f, (size_t)(eq - f));
        names[i][eq - f] = '\0';
        int64_t level = 0;
        if (cl_parse_i64(eq + 1, 0, INT16_MAX, &level, "feature level", &e) != CL_OK) return cl_ctl_usage(ctx, "%s", e.msg);
        kp_update_features_request_feature_update_key_init(&u[i]);
        u[i].feature = cl_str(names[i]);
        u[i].max_version_level = (int16_t)level;
        u[i].upgrade_type = type;
        /* allow_downgrade is v0's field: v1 (always sent here) carries upgrade_type */
    }
    kp_update_features_request_t req;
    kp_update_features_request_init(&req);
    req.timeout_ms = ctx->timeout_ms;
    req.feature_updates.items = u;
    req.feature_updates.count = n;
    req.validate_only = cl_args_count(args, "--validate-only") > 0;
    kp_arena_t a;
    kp_arena_init(&a, (size_t)1 << 20);
    void *body = NULL;
    int rc = cl_client_call(c, -1, KP_API_UPDATE_FEATURES, CL_VER_UPDATE_FEATURES, &req, &body, NULL, &a, &e);
    if (rc != CL_OK) { kp_arena_free(&a); return cl_ctl_fail(ctx, &e); }
    const kp_update_features_response_t *r = body;
    int bad = 0;
    if (r->error_code != 0) {
        char m[256];
        cl_strz(r->error_message, m, sizeof m);
        rc = cl_err_kafka(&e, r->error_code, "UpdateFeatures%s%s", m[0] ? ": " : "", m);
        kp_arena_free(&a);
        return cl_ctl_fail(ctx, &e);
    }
    /* one result per feature asked, each naming one of them (Kafka's
     * answer): anything else is not an answer to this request, and
     * printing nothing would look like success */
    bool answered = r->results.count == n;
    for (int32_t i = 0; answered && i < n; i++) {
        int hits = 0;
        for (int32_t k = 0; k < n; k++) hits += kp_slice_eq(r->results.items[i].feature, u[k].feature);
        answered = hits == 1;
    }
    if (!answered) {
        rc = cl_err_set(&e, CL_E_PROTO, "UpdateFeatures: the answer has %d result(s) for the %d feature(s) asked",
                        r->results.count, n);
        kp_arena_free(&a);
        return cl_ctl_fail(ctx, &e);
    }
    for (int32_t i = 0; i < r->results.count; i++) {
        const kp_update_features_response_updatable_feature_result_t *x = &r->results.items[i];
        char name[128], m[256];
        cl_strz(x->feature, name, sizeof name);
        cl_strz(x->error_message, m, sizeof m);
        if (x->error_code != 0) {
            bad++;
            fprintf(ctx->err, "skiffctl: %s: %s (%s)\n", name, m[0] ? m : "refused", kp_error_name(x->error_code));
        } else {
            fprintf(ctx->out, "%s: %s\n", name, req.validate_only ? "valid" : "done");
        }
    }
    kp_arena_free(&a);
    return bad ? CL_EXIT_FAIL : CL_EXIT_OK;
}

int cl_ctl_feature(cl_ctl_t *ctx, int argc, char **argv) {
    cl_args_t a;
    int rc = cl_ctl_parse(ctx, argc, argv, feat_opts, FEAT_NOPTS, feat_usage, &a);
    if (rc == -1) return CL_EXIT_OK;
    if (rc != CL_OK) return CL_EXIT_USAGE;
    if (a.npos != 1) return cl_ctl_usage(ctx, "feature needs one subcommand (list, upgrade, downgrade)");
    const char *sub = a.pos[0];
    bool list = !strcmp(sub, "list"), up = !strcmp(sub, "upgrade"), down = !strcmp(sub, "downgrade");
    if (!list && !up && !down) return cl_ctl_usage(ctx, "unknown feature subcommand '%s'", sub);
    int nf = cl_args_count(&a, "--feature");
    if (list && (nf || cl_args_count(&a, "--validate-only") || cl_args_count(&a, "--unsafe")))
        return cl_ctl_usage(ctx, "feature list takes no options of its own");
    if (!list && (nf < 1 || nf > FEATURES_MAX)) return cl_ctl_usage(ctx, "%s needs 1..%d --feature NAME=LEVEL", sub, FEATURES_MAX);
    if (up && cl_args_count(&a, "--unsafe")) return cl_ctl_usage(ctx, "--unsafe goes with downgrade");
    cl_client_t c;
    int ex = cl_ctl_connect(ctx, &c);
    if (ex == CL_EXIT_OK)
        ex = list ? do_list(ctx, &c) : do_update(ctx, &c, &a, up ? 1 : cl_args_count(&a, "--unsafe") ? 3 : 2);
    cl_client_close(&c);
    return ex;
}
