/* ctl_quota.c — `skiffctl quota set|list`: client quotas through
 * AlterClientQuotas (49, to the controller) and DescribeClientQuotas (48).
 *
 * The entity: --user U, --client-id C, both (the (user, client-id) pair),
 * or --default (the default user entity; with --client-id C: the default
 * user's quota for C; Kafka's kafka-configs --entity-default). A rate of 0
 * removes that key from the entity (kafka-configs --delete-config). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clients/cl_admin.h"
#include "clients/cl_ctl.h"
#include "clients/cl_out.h"
#include "protocol/kp_errors.h"

#define CL_VER_DESCRIBE_CLIENT_QUOTAS 1
#define CL_VER_ALTER_CLIENT_QUOTAS 1

static const cl_opt_t quota_opts[] = {
    CL_CTL_GLOBAL_OPTS,
    { "--user", NULL, "U", false, "set: the user entity (the principal User:U)" },
    { "--client-id", NULL, "C", false, "set: the client-id entity (with --user: the pair)" },
    { "--default", NULL, NULL, false, "set: the default user entity" },
    { "--producer-byte-rate", NULL, "N", false, "set: bytes/s produced (0 removes)" },
    { "--consumer-byte-rate", NULL, "N", false, "set: bytes/s fetched (0 removes)" },
    { "--request-percentage", NULL, "N", false, "set: % of one request thread (0 removes)" },
    { "--controller-mutation-rate", NULL, "N", false, "set: topic/partition mutations/s (0 removes)" },
};
#define QUOTA_NOPTS ((int)(sizeof quota_opts / sizeof quota_opts[0]))

static const char *quota_usage =
    "skiffctl quota set (--user U | --client-id C | --user U --client-id C | --default [--client-id C])\n"
    "                   [--producer-byte-rate N] [--consumer-byte-rate N] [--request-percentage N]\n"
    "                   [--controller-mutation-rate N]\n"
    "       skiffctl quota list";

static const char *const keys[] = { "producer_byte_rate", "consumer_byte_rate", "request_percentage",
                                    "controller_mutation_rate" };
static const char *const key_opts[] = { "--producer-byte-rate", "--consumer-byte-rate", "--request-percentage",
                                        "--controller-mutation-rate" };
#define NKEYS 4

static int check_alter(const void *resp, void *ctx, cl_err_t *e) {
    const kp_alter_client_quotas_response_t *r = resp;
    (void)ctx;
    for (int32_t i = 0; i < r->entries.count; i++)
        if (r->entries.items[i].error_code)
            return cl_err_kafka(e, r->entries.items[i].error_code, "alter quota%s%.*s",
                                r->entries.items[i].error_message.len ? ": " : "",
                                (int)r->entries.items[i].error_message.len,
                                (const char *)r->entries.items[i].error_message.p);
    if (r->entries.count != 1) return cl_err_set(e, CL_E_PROTO, "AlterClientQuotas answer has %d entries", r->entries.count);
    return CL_OK;
}

static int check_describe(const void *resp, void *ctx, cl_err_t *e) {
    const kp_describe_client_quotas_response_t *r = resp;
    (void)ctx;
    if (r->error_code)
        return cl_err_kafka(e, r->error_code, "describe quotas%s%.*s", r->error_message.len ? ": " : "",
                            (int)r->error_message.len, (const char *)r->error_message.p);
    return CL_OK;
}

static void print_value(FILE *f, double v) {
    if (v == floor(v) && fabs(v) < 1e15) fprintf(f, "%.0f", v);
    else fprintf(f, "%g", v);
}

static int do_list(cl_ctl_t *ctx, cl_client_t *c) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)64 << 20);
    kp_describe_client_quotas_request_t req;
    kp_describe_client_quotas_request_init(&req);
    req.components.count = 0;   /* no filter: every entity */
    void *resp = NULL;
    cl_err_t e;
    cl_err_clear(&e);
    if (cl_admin_call(c, CL_TARGET_ANY, NULL, 0, KP_API_DESCRIBE_CLIENT_QUOTAS, CL_VER_DESCRIBE_CLIENT_QUOTAS, &req,
                      &resp, &a, check_describe, NULL, &e) != CL_OK) {
        kp_arena_free(&a);
        return cl_ctl_fail(ctx, &e);
    }
    const kp_describe_client_quotas_response_t *r = resp;
    cl_json_t j;
    cl_table_t t;
    static const char *const hdr[] = { "user", "client-id", "key", "value" };
    if (ctx->json) {
        cl_json_init(&j, ctx->out);
        cl_json_arr(&j);
    } else {
        cl_table_init(&t, 4, hdr);
    }
    for (int32_t i = 0; i < r->entries.count; i++) {
        const kp_describe_client_quotas_response_entry_data_t *en = &r->entries.items[i];
        /* "-" no such part, "<default>" the default entity (kafka-configs' word) */
        char user[300] = "-", client[300] = "-";
        for (int32_t k = 0; k < en->entity.count; k++) {
            const kp_describe_client_quotas_response_entity_data_t *p = &en->entity.items[k];
            char *dst = p->entity_type.len == 4 && !memcmp(p->entity_type.p, "user", 4) ? user : client;
            if (kp_slice_is_null(p->entity_name)) snprintf(dst, 300, "<default>");
            else cl_strz(p->entity_name, dst, 300);
        }
        for (int32_t k = 0; k < en->values.count; k++) {
            char key[64], val[64];
            cl_strz(en->values.items[k].key, key, sizeof key);
            double v = en->values.items[k].value;
            if (ctx->json) {
                cl_json_obj(&j);
                cl_json_key(&j, "user"); if (strcmp(user, "-")) cl_json_str(&j, user); else cl_json_null(&j);
                cl_json_key(&j, "client_id"); if (strcmp(client, "-")) cl_json_str(&j, client); else cl_json_null(&j);
                cl_json_key(&j, "key"); cl_json_str(&j, key);
                cl_json_key(&j, "value"); cl_json_num(&j, v);
                cl_json_obj_end(&j);
            } else {
                if (v == floor(v) && fabs(v) < 1e15) snprintf(val, sizeof val, "%.0f", v);
                else snprintf(val, sizeof val, "%g", v);
                const char *cells[] = { user, client, key, val };
                cl_table_add(&t, cells);
            }
        }
    }
    if (ctx->json) {
        cl_json_arr_end(&j);
        cl_json_end(&j);
    } else {
        cl_table_print(&t, ctx->out);
        cl_table_free(&t);
    }
    kp_arena_free(&a);
    return CL_EXIT_OK;
}

int cl_ctl_quota(cl_ctl_t *ctx, int argc, char **argv) {
    cl_args_t a;
    int rc = cl_ctl_parse(ctx, argc, argv, quota_opts, QUOTA_NOPTS, quota_usage, &a);
    if (rc == -1) return CL_EXIT_OK;
    if (rc != CL_OK) return CL_EXIT_USAGE;
    if (a.npos != 1) return cl_ctl_usage(ctx, "quota needs one subcommand (set, list)");
    bool set = !strcmp(a.pos[0], "set"), list = !strcmp(a.pos[0], "list");
    if (!set && !list) return cl_ctl_usage(ctx, "unknown quota subcommand '%s'", a.pos[0]);
    const char *user = cl_args_get(&a, "--user"), *client = cl_args_get(&a, "--client-id");
    bool dflt = cl_args_count(&a, "--default") > 0;
    kp_alter_client_quotas_request_op_data_t ops[NKEYS];
    int nops = 0;
    for (int k = 0; k < NKEYS; k++) {
        const char *s = cl_args_get(&a, key_opts[k]);
        if (!s) continue;
        if (list) return cl_ctl_usage(ctx, "quota list takes no %s", key_opts[k]);
        char *end = NULL;
        double v = strtod(s, &end);
        if (!*s || *end || !isfinite(v) || v < 0 || (k != 2 && v != floor(v)))
            return cl_ctl_usage(ctx, "%s: '%s' is not a %s >= 0", key_opts[k], s, k != 2 ? "whole number" : "number");
        kp_alter_client_quotas_request_op_data_init(&ops[nops]);
        ops[nops].key = cl_str(keys[k]);
        ops[nops].value = v;
        ops[nops].remove = v == 0;
        nops++;
    }
    if (list && (user || client || dflt)) return cl_ctl_usage(ctx, "quota list takes no entity");
    if (set) {
        if (!user && !client && !dflt) return cl_ctl_usage(ctx, "quota set needs --user U, --client-id C or --default");
        if (user && dflt) return cl_ctl_usage(ctx, "--user and --default name two users");
        if (user && !*user) return cl_ctl_usage(ctx, "--user: empty name");
        if (nops == 0) return cl_ctl_usage(ctx, "quota set needs at least one rate");
    }
    cl_client_t c;
    int ex = cl_ctl_connect(ctx, &c);
    if (ex != CL_EXIT_OK) { cl_client_close(&c); return ex; }
    if (list) {
        ex = do_list(ctx, &c);
        cl_client_close(&c);
        return ex;
    }
    kp_alter_client_quotas_request_entity_data_t ent[2];
    int nent = 0;
    if (user || dflt) {
        kp_alter_client_quotas_request_entity_data_init(&ent[nent]);
        ent[nent].entity_type = cl_str("user");
        ent[nent].entity_name = dflt ? kp_slice_null() : cl_str(user);
        nent++;
    }
    if (client) {
        kp_alter_client_quotas_request_entity_data_init(&ent[nent]);
        ent[nent].entity_type = cl_str("client-id");
        ent[nent].entity_name = cl_str(client);
        nent++;
    }
    kp_alter_client_quotas_request_entry_data_t entry;
    kp_alter_client_quotas_request_entry_data_init(&entry);
    entry.entity.items = ent;
    entry.entity.count = nent;
    entry.ops.items = ops;
    entry.ops.count = nops;
    kp_alter_client_quotas_request_t req;
    kp_alter_client_quotas_request_init(&req);
    req.entries.items = &entry;
    req.entries.count = 1;
    kp_arena_t ar;
    kp_arena_init(&ar, (size_t)1 << 20);
    void *resp = NULL;
    cl_err_t e;
    cl_err_clear(&e);
    rc = cl_admin_call(&c, CL_TARGET_CONTROLLER, NULL, 0, KP_API_ALTER_CLIENT_QUOTAS, CL_VER_ALTER_CLIENT_QUOTAS, &req,
                       &resp, &ar, check_alter, NULL, &e);
    kp_arena_free(&ar);
    if (rc != CL_OK) {
        ex = cl_ctl_fail(ctx, &e);
    } else {
        for (int k = 0; k < nops; k++) {
            char key[64];
            cl_strz(ops[k].key, key, sizeof key);
            fprintf(ctx->out, "quota user=%s client-id=%s: %s ", dflt ? "<default>" : user ? user : "-",
                    client ? client : "-", key);
            if (ops[k].remove) fprintf(ctx->out, "removed\n");
            else { print_value(ctx->out, ops[k].value); fputc('\n', ctx->out); }
        }
    }
    cl_client_close(&c);
    return ex;
}
