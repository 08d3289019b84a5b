/* ctl_user.c — `skiffctl user add|delete|list`: SCRAM credentials of users
 * (cl_scram.h). The password is salted and hashed here (PBKDF2); the broker
 * receives the salt and the salted password only. */
#include <stdlib.h>
#include <string.h>

#include "clients/cl_ctl.h"
#include "clients/cl_out.h"
#include "clients/cl_scram.h"
#include "protocol/kp_errors.h"

static const cl_opt_t user_opts[] = {
    CL_CTL_GLOBAL_OPTS,
    { "--mechanism", "-m", "MECH", false, "add, delete: SCRAM-SHA-256 or SCRAM-SHA-512" },
    { "--password", NULL, "PW", false, "add: the user's password" },
    { "--iterations", NULL, "N", false, "add: PBKDF2 iterations, 4096..16384 (default 4096)" },
};
#define USER_NOPTS ((int)(sizeof user_opts / sizeof user_opts[0]))

static const char *user_usage =
    "skiffctl user add NAME --mechanism SCRAM-SHA-256|SCRAM-SHA-512 --password PW [--iterations N]\n"
    "       skiffctl user delete NAME --mechanism SCRAM-SHA-256|SCRAM-SHA-512\n"
    "       skiffctl user list";

typedef struct user_row {
    char name[256];
    const char *mech;
    int32_t iterations;
} user_row_t;

static int cmp_row(const void *a, const void *b) {
    const user_row_t *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->mech, y->mech);
}

static const char *mech_str(int8_t type) {
    cl_sasl_mech_t m = cl_scram_mech(type);
    return m == CL_SASL_NONE ? "UNKNOWN" : cl_sasl_mech_name(m);
}

static int do_list(cl_ctl_t *ctx, cl_client_t *c) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)64 << 20);
    const kp_describe_user_scram_credentials_response_t *r = NULL;
    cl_err_t e;
    cl_err_clear(&e);
    if (cl_scram_describe_all(c, &a, &r, &e) != CL_OK) {
        kp_arena_free(&a);
        return cl_ctl_fail(ctx, &e);
    }
    /* one row per (user, mechanism), sorted; a user-level error is shown
     * in its row rather than failing the whole list */
    size_t n = 0;
    for (int32_t i = 0; i < r->results.count; i++) {
        int32_t k = r->results.items[i].credential_infos.count;
        n += k > 0 ? (size_t)k : 1;
    }
    user_row_t *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows) {
        kp_arena_free(&a);
        cl_err_set(&e, CL_E_NOMEM, "out of memory");
        return cl_ctl_fail(ctx, &e);
    }
    size_t at = 0;
    for (int32_t i = 0; i < r->results.count; i++) {
        const kp_describe_user_scram_credentials_response_describe_user_scram_credentials_result_t *u =
            &r->results.items[i];
        if (u->credential_infos.count <= 0) {
            cl_strz(u->user, rows[at].name, sizeof rows[at].name);
            rows[at].mech = u->error_code ? kp_error_name(u->error_code) : "-";
            rows[at++].iterations = -1;
        }
        for (int32_t k = 0; k < u->credential_infos.count; k++) {
            cl_strz(u->user, rows[at].name, sizeof rows[at].name);
            rows[at].mech = mech_str(u->credential_infos.items[k].mechanism);
            rows[at++].iterations = u->credential_infos.items[k].iterations;
        }
    }
    qsort(rows, at, sizeof *rows, cmp_row);
    if (ctx->json) {
        cl_json_t j;
        cl_json_init(&j, ctx->out);
        cl_json_arr(&j);
        for (size_t i = 0; i < at; i++) {
            cl_json_obj(&j);
            cl_json_key(&j, "user"); cl_json_str(&j, rows[i].name);
            cl_json_key(&j, "mechanism"); cl_json_str(&j, rows[i].mech);
            cl_json_key(&j, "iterations"); cl_json_int(&j, rows[i].iterations);
            cl_json_obj_end(&j);
        }
        cl_json_arr_end(&j);
        cl_json_end(&j);
    } else {
        static const char *const hdr[] = { "user", "mechanism", "iterations" };
        cl_table_t t;
        cl_table_init(&t, 3, hdr);
        for (size_t i = 0; i < at; i++) {
            char it[16];
            snprintf(it, sizeof it, "%d", rows[i].iterations);
            const char *cells[] = { rows[i].name, rows[i].mech, rows[i].iterations >= 0 ? it : "-" };
            cl_table_add(&t, cells);
        }
        cl_table_print(&t, ctx->out);
        cl_table_free(&t);
    }
    free(rows);
    kp_arena_free(&a);
    return CL_EXIT_OK;
}

static void print_done(cl_ctl_t *ctx, const char *user, cl_sasl_mech_t m, const char *what, int32_t iterations) {
    if (ctx->json) {
        cl_json_t j;
        cl_json_init(&j, ctx->out);
        cl_json_obj(&j);
        cl_json_key(&j, "user"); cl_json_str(&j, user);
        cl_json_key(&j, "mechanism"); cl_json_str(&j, cl_sasl_mech_name(m));
        cl_json_key(&j, "result"); cl_json_str(&j, what);
        if (iterations > 0) { cl_json_key(&j, "iterations"); cl_json_int(&j, iterations); }
        cl_json_obj_end(&j);
        cl_json_end(&j);
    } else if (iterations > 0) {
        fprintf(ctx->out, "user '%s': %s credential %s (%d iterations)\n", user, cl_sasl_mech_name(m), what,
                iterations);
    } else {
        fprintf(ctx->out, "user '%s': %s credential %s\n", user, cl_sasl_mech_name(m), what);
    }
}

int cl_ctl_user(cl_ctl_t *ctx, int argc, char **argv) {
    cl_args_t a;
    int rc = cl_ctl_parse(ctx, argc, argv, user_opts, USER_NOPTS, user_usage, &a);
    if (rc == -1) return CL_EXIT_OK;
    if (rc != CL_OK) return CL_EXIT_USAGE;
    if (a.npos < 1) return cl_ctl_usage(ctx, "user needs a subcommand (add, delete, list)");
    const char *sub = a.pos[0];
    bool add = !strcmp(sub, "add"), del = !strcmp(sub, "delete"), list = !strcmp(sub, "list");
    if (!add && !del && !list) return cl_ctl_usage(ctx, "unknown user subcommand '%s'", sub);
    if (list ? a.npos != 1 : a.npos != 2)
        return cl_ctl_usage(ctx, list ? "user list takes no name" : "user %s needs one user name", sub);
    const char *mech_s = cl_args_get(&a, "--mechanism"), *pw = cl_args_get(&a, "--password");
    const char *iter_s = cl_args_get(&a, "--iterations");
    if (list && (mech_s || pw || iter_s)) return cl_ctl_usage(ctx, "user list takes no --mechanism/--password/--iterations");
    if (del && (pw || iter_s)) return cl_ctl_usage(ctx, "user delete takes no --password/--iterations");
    cl_sasl_mech_t m = CL_SASL_NONE;
    if (!list) {
        if (!mech_s) return cl_ctl_usage(ctx, "user %s needs --mechanism SCRAM-SHA-256|SCRAM-SHA-512", sub);
        m = cl_sasl_mech_parse(mech_s);
        if (m != CL_SASL_SCRAM_SHA_256 && m != CL_SASL_SCRAM_SHA_512)
            return cl_ctl_usage(ctx, "--mechanism: '%s' (want SCRAM-SHA-256 or SCRAM-SHA-512)", mech_s);
    }
    int64_t iterations = CL_SCRAM_ITERATIONS_DEFAULT;
    cl_err_t e;
    cl_err_clear(&e);
    if (add) {
        if (!pw || !*pw) return cl_ctl_usage(ctx, "user add needs --password PW");
        if (iter_s && cl_parse_i64(iter_s, CL_SCRAM_ITERATIONS_MIN, CL_SCRAM_ITERATIONS_MAX, &iterations,
                                   "--iterations", &e) != CL_OK)
            return cl_ctl_usage(ctx, "%s", e.msg);
    }
    const char *name = list ? NULL : a.pos[1];
    cl_client_t c;
    int ex = cl_ctl_connect(ctx, &c);
    if (ex == CL_EXIT_OK) {
        if (list) {
            ex = do_list(ctx, &c);
        } else {
            rc = add ? cl_scram_upsert(&c, name, m, pw, (int32_t)iterations, &e) : cl_scram_delete(&c, name, m, &e);
            if (rc != CL_OK) ex = cl_ctl_fail(ctx, &e);
            else print_done(ctx, name, m, add ? "set" : "deleted", add ? (int32_t)iterations : 0);
        }
    }
    cl_client_close(&c);
    return ex;
}
