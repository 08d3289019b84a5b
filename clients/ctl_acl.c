/* ctl_acl.c — `skiffctl acl add|list|remove`: ACL bindings through
 * CreateAcls / DescribeAcls / DeleteAcls (v3, flexible), like kafka-acls.
 * --producer --topic T is WRITE, DESCRIBE and CREATE on the topic plus
 * IDEMPOTENT_WRITE on the cluster; --consumer --topic T --group G is READ
 * and DESCRIBE on the topic plus READ on the group. Codes are Kafka's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clients/cl_admin.h"
#include "clients/cl_ctl.h"
#include "clients/cl_out.h"
#include "protocol/kp_errors.h"

#define ACL_VER 3
#define R_TOPIC 2
#define R_GROUP 3
#define R_CLUSTER 4
#define R_TXN 5
#define P_ANY 1
#define P_LITERAL 3
#define P_PREFIXED 4
#define OP_ANY 1
#define PERM_ANY 1
#define PERM_DENY 2
#define PERM_ALLOW 3

static const char *const RES[] = { "UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID",
                                   "DELEGATION_TOKEN", "USER" };
static const char *const PAT[] = { "UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED" };
static const char *const OPS[] = { "UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
                                   "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE",
                                   "CREATE_TOKENS", "DESCRIBE_TOKENS" };
static const char *const PERM[] = { "UNKNOWN", "ANY", "DENY", "ALLOW" };
#define NAME(tab, v) ((v) >= 0 && (size_t)(v) < sizeof tab / sizeof tab[0] ? tab[v] : "UNKNOWN")

static const cl_opt_t acl_opts[] = {
    CL_CTL_GLOBAL_OPTS,
    { "--principal", NULL, "User:NAME", false, "add: who (required); list, remove: filter" },
    { "--operation", NULL, "OP", true, "READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, "
                                       "DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALL" },
    { "--topic", NULL, "T", false, "resource: a topic" },
    { "--group", NULL, "G", false, "resource: a consumer group" },
    { "--cluster", NULL, NULL, false, "resource: the cluster" },
    { "--transactional-id", NULL, "T", false, "resource: a transactional id" },
    { "--prefixed", NULL, NULL, false, "the resource name is a prefix (PREFIXED pattern)" },
    { "--deny", NULL, NULL, false, "a DENY binding (default ALLOW)" },
    { "--host", NULL, "H", false, "the client address it applies to (default *)" },
    { "--producer", NULL, NULL, false, "add/remove: WRITE, DESCRIBE, CREATE on --topic, IDEMPOTENT_WRITE on the cluster" },
    { "--consumer", NULL, NULL, false, "add/remove: READ, DESCRIBE on --topic, READ on --group" },
};
#define ACL_NOPTS ((int)(sizeof acl_opts / sizeof acl_opts[0]))

static const char *acl_usage =
    "skiffctl acl add --principal User:NAME (--operation OP ... | --producer | --consumer)\n"
    "                 (--topic T | --group G | --cluster | --transactional-id T) [--prefixed] [--deny] [--host H]\n"
    "       skiffctl acl list [--principal User:NAME] [--topic T | --group G | --cluster | --transactional-id T]\n"
    "       skiffctl acl remove [same selectors as add; no --operation: every operation]";

typedef struct {
    int8_t rtype;
    const char *name;
    int8_t op;
} binding_t;

static int op_parse(const char *s) {
    for (size_t i = 2; i < sizeof OPS / sizeof OPS[0]; i++)
        if (!strcasecmp(s, OPS[i])) return (int)i;
    return -1;
}

/* The bindings the options name: up to 16. Returns the count, -1 after a
 * usage message. ops_needed: add needs an operation, remove does not. */
static int bindings(cl_ctl_t *ctx, const cl_args_t *a, bool ops_needed, binding_t *out) {
    const char *topic = cl_args_get(a, "--topic"), *group = cl_args_get(a, "--group");
    const char *txn = cl_args_get(a, "--transactional-id");
    bool cluster = (cl_args_count(a, "--cluster") > 0);
    bool producer = (cl_args_count(a, "--producer") > 0), consumer = (cl_args_count(a, "--consumer") > 0);
    int nops = cl_args_count(a, "--operation");
    int n = 0;
    if (producer || consumer) {
        if (nops) { cl_ctl_usage(ctx, "--producer/--consumer take no --operation"); return -1; }
        if (!topic) { cl_ctl_usage(ctx, "--producer/--consumer need --topic"); return -1; }
        if (producer) {
            out[n++] = (binding_t){ R_TOPIC, topic, 4 };
            out[n++] = (binding_t){ R_TOPIC, topic, 8 };
            out[n++] = (binding_t){ R_TOPIC, topic, 5 };
            out[n++] = (binding_t){ R_CLUSTER, "kafka-cluster", 12 };
            if (txn) {
                out[n++] = (binding_t){ R_TXN, txn, 4 };
                out[n++] = (binding_t){ R_TXN, txn, 8 };
            }
        }
        if (consumer) {
            if (!group) { cl_ctl_usage(ctx, "--consumer needs --group"); return -1; }
            out[n++] = (binding_t){ R_TOPIC, topic, 3 };
            out[n++] = (binding_t){ R_TOPIC, topic, 8 };
            out[n++] = (binding_t){ R_GROUP, group, 3 };
        }
        return n;
    }
    int nres = (topic != NULL) + (group != NULL) + (txn != NULL) + cluster;
    if (nres != 1) { cl_ctl_usage(ctx, "name one resource: --topic, --group, --cluster or --transactional-id"); return -1; }
    int8_t rt = topic ? R_TOPIC : group ? R_GROUP : txn ? R_TXN : R_CLUSTER;
    const char *name = topic ? topic : group ? group : txn ? txn : "kafka-cluster";
    if (nops == 0) {
        if (ops_needed) { cl_ctl_usage(ctx, "acl add needs --operation, --producer or --consumer"); return -1; }
        out[n++] = (binding_t){ rt, name, OP_ANY };
        return n;
    }
    for (int i = 0; i < nops && n < 16; i++) {
        int op = op_parse(cl_args_at(a, "--operation", i));
        if (op < 0) { cl_ctl_usage(ctx, "--operation: unknown '%s'", cl_args_at(a, "--operation", i)); return -1; }
        out[n++] = (binding_t){ rt, name, (int8_t)op };
    }
    return n;
}

static kp_str_t s_of(const char *s) { return s ? kp_slice_cstr(s) : kp_slice_null(); }

static int check_create(const void *resp, void *ctx, cl_err_t *e) {
    const kp_create_acls_response_t *r = resp;
    (void)ctx;
    for (int32_t i = 0; i < r->results.count; i++)
        if (r->results.items[i].error_code)
            return cl_err_kafka(e, r->results.items[i].error_code, "create ACL %d%s%.*s", i + 1,
                                r->results.items[i].error_message.len ? ": " : "",
                                (int)r->results.items[i].error_message.len,
                                (const char *)r->results.items[i].error_message.p);
    return CL_OK;
}

static int check_describe(const void *resp, void *ctx, cl_err_t *e) {
    const kp_describe_acls_response_t *r = resp;
    (void)ctx;
    if (r->error_code)
        return cl_err_kafka(e, r->error_code, "describe ACLs%s%.*s", r->error_message.len ? ": " : "",
                            (int)r->error_message.len, (const char *)r->error_message.p);
    return CL_OK;
}

static int check_delete(const void *resp, void *ctx, cl_err_t *e) {
    const kp_delete_acls_response_t *r = resp;
    (void)ctx;
    for (int32_t i = 0; i < r->filter_results.count; i++)
        if (r->filter_results.items[i].error_code)
            return cl_err_kafka(e, r->filter_results.items[i].error_code, "delete ACLs%s%.*s",
                                r->filter_results.items[i].error_message.len ? ": " : "",
                                (int)r->filter_results.items[i].error_message.len,
                                (const char *)r->filter_results.items[i].error_message.p);
    return CL_OK;
}

static void row(cl_ctl_t *ctx, cl_table_t *t, cl_json_t *j, int8_t rt, kp_str_t name, int8_t pt, kp_str_t pr,
                kp_str_t host, int8_t op, int8_t perm) {
    char n[512], p[512], h[256];
    cl_strz(name, n, sizeof n);
    cl_strz(pr, p, sizeof p);
    cl_strz(host, h, sizeof h);
    if (ctx->json) {
        cl_json_obj(j);
        cl_json_key(j, "resource_type"); cl_json_str(j, NAME(RES, rt));
        cl_json_key(j, "resource_name"); cl_json_str(j, n);
        cl_json_key(j, "pattern_type"); cl_json_str(j, NAME(PAT, pt));
        cl_json_key(j, "principal"); cl_json_str(j, p);
        cl_json_key(j, "host"); cl_json_str(j, h);
        cl_json_key(j, "operation"); cl_json_str(j, NAME(OPS, op));
        cl_json_key(j, "permission"); cl_json_str(j, NAME(PERM, perm));
        cl_json_obj_end(j);
    } else {
        const char *cells[] = { NAME(RES, rt), n, NAME(PAT, pt), p, h, NAME(OPS, op), NAME(PERM, perm) };
        cl_table_add(t, cells);
    }
}

static const char *const HDR[] = { "resource", "name", "pattern", "principal", "host", "operation", "permission" };

int cl_ctl_acl(cl_ctl_t *ctx, int argc, char **argv) {
    cl_args_t a;
    int rc = cl_ctl_parse(ctx, argc, argv, acl_opts, ACL_NOPTS, acl_usage, &a);
    if (rc == -1) return CL_EXIT_OK;
    if (rc != CL_OK) return CL_EXIT_USAGE;
    if (a.npos != 1) return cl_ctl_usage(ctx, "acl needs one subcommand (add, list, remove)");
    const char *sub = a.pos[0];
    bool add = !strcmp(sub, "add"), list = !strcmp(sub, "list"), rem = !strcmp(sub, "remove");
    if (!add && !list && !rem) return cl_ctl_usage(ctx, "unknown acl subcommand '%s'", sub);
    const char *principal = cl_args_get(&a, "--principal"), *host = cl_args_get(&a, "--host");
    bool prefixed = (cl_args_count(&a, "--prefixed") > 0), deny = (cl_args_count(&a, "--deny") > 0);
    if (add && !principal) return cl_ctl_usage(ctx, "acl add needs --principal User:NAME");
    if (principal && !strchr(principal, ':')) return cl_ctl_usage(ctx, "--principal: want Type:NAME, e.g. User:alice");
    binding_t b[16];
    int nb = 0;
    if (list) {
        bool any_res = cl_args_get(&a, "--topic") || cl_args_get(&a, "--group") || cl_args_count(&a, "--cluster") > 0 ||
                       cl_args_get(&a, "--transactional-id");
        if (any_res && (nb = bindings(ctx, &a, false, b)) < 0) return CL_EXIT_USAGE;
    } else if ((nb = bindings(ctx, &a, add, b)) < 0) {
        return CL_EXIT_USAGE;
    }
    cl_client_t c;
    int ex = cl_ctl_connect(ctx, &c);
    if (ex != CL_EXIT_OK) { cl_client_close(&c); return ex; }
    kp_arena_t ar;
    kp_arena_init(&ar, (size_t)64 << 20);
    cl_err_t e;
    cl_err_clear(&e);
    void *resp = NULL;
    if (add) {
        kp_create_acls_request_acl_creation_t cr[16];
        for (int i = 0; i < nb; i++) {
            kp_create_acls_request_acl_creation_init(&cr[i]);
            cr[i].resource_type = b[i].rtype;
            cr[i].resource_name = kp_slice_cstr(b[i].name);
            cr[i].resource_pattern_type = prefixed && b[i].rtype != R_CLUSTER ? P_PREFIXED : P_LITERAL;
            cr[i].principal = kp_slice_cstr(principal);
            cr[i].host = kp_slice_cstr(host ? host : "*");
            cr[i].operation = b[i].op;
            cr[i].permission_type = deny ? PERM_DENY : PERM_ALLOW;
        }
        kp_create_acls_request_t q;
        kp_create_acls_request_init(&q);
        q.creations.items = cr;
        q.creations.count = nb;
        rc = cl_admin_call(&c, CL_TARGET_ANY, NULL, 0, KP_API_CREATE_ACLS, ACL_VER, &q, &resp, &ar, check_create, NULL, &e);
        if (rc != CL_OK) ex = cl_ctl_fail(ctx, &e);
        else if (ctx->json) fprintf(ctx->out, "{\"created\":%d}\n", nb);
        else fprintf(ctx->out, "created %d ACL binding%s for %s\n", nb, nb == 1 ? "" : "s", principal);
    } else if (list) {
        /* one DescribeAcls per named binding's resource (or one for all) */
        cl_table_t t;
        cl_json_t j;
        if (ctx->json) { cl_json_init(&j, ctx->out); cl_json_arr(&j); } else cl_table_init(&t, 7, HDR);
        int nq = nb ? nb : 1;
        for (int i = 0; i < nq && ex == CL_EXIT_OK; i++) {
            if (i > 0 && b[i].rtype == b[i - 1].rtype && !strcmp(b[i].name, b[i - 1].name)) continue;
            kp_describe_acls_request_t q;
            kp_describe_acls_request_init(&q);
            q.resource_type_filter = nb ? b[i].rtype : 1;
            q.resource_name_filter = nb ? kp_slice_cstr(b[i].name) : kp_slice_null();
            q.pattern_type_filter = nb ? (prefixed ? P_PREFIXED : P_ANY) : P_ANY;
            q.principal_filter = s_of(principal);
            q.host_filter = s_of(host);
            q.operation = OP_ANY;
            q.permission_type = PERM_ANY;
            rc = cl_admin_call(&c, CL_TARGET_ANY, NULL, 0, KP_API_DESCRIBE_ACLS, ACL_VER, &q, &resp, &ar, check_describe,
                               NULL, &e);
            if (rc != CL_OK) { ex = cl_ctl_fail(ctx, &e); break; }
            const kp_describe_acls_response_t *r = resp;
            for (int32_t k = 0; k < r->resources.count; k++) {
                const kp_describe_acls_response_describe_acls_resource_t *res = &r->resources.items[k];
                for (int32_t m = 0; m < res->acls.count; m++) {
                    const kp_describe_acls_response_acl_description_t *d = &res->acls.items[m];
                    row(ctx, &t, &j, res->resource_type, res->resource_name, res->pattern_type, d->principal, d->host,
                        d->operation, d->permission_type);
                }
            }
        }
        if (ctx->json) { cl_json_arr_end(&j); cl_json_end(&j); }
        else { if (ex == CL_EXIT_OK) cl_table_print(&t, ctx->out); cl_table_free(&t); }
    } else {
        kp_delete_acls_request_delete_acls_filter_t f[16];
        for (int i = 0; i < nb; i++) {
            kp_delete_acls_request_delete_acls_filter_init(&f[i]);
            f[i].resource_type_filter = b[i].rtype;
            f[i].resource_name_filter = kp_slice_cstr(b[i].name);
            f[i].pattern_type_filter = prefixed && b[i].rtype != R_CLUSTER ? P_PREFIXED : P_LITERAL;
            f[i].principal_filter = s_of(principal);
            f[i].host_filter = s_of(host);
            f[i].operation = b[i].op;
            f[i].permission_type = cl_args_count(&a, "--deny") > 0 ? PERM_DENY : PERM_ANY;
        }
        kp_delete_acls_request_t q;
        kp_delete_acls_request_init(&q);
        q.filters.items = f;
        q.filters.count = nb;
        rc = cl_admin_call(&c, CL_TARGET_ANY, NULL, 0, KP_API_DELETE_ACLS, ACL_VER, &q, &resp, &ar, check_delete, NULL, &e);
        if (rc != CL_OK) {
            ex = cl_ctl_fail(ctx, &e);
        } else {
            const kp_delete_acls_response_t *r = resp;
            int n = 0;
            for (int32_t i = 0; i < r->filter_results.count; i++) n += r->filter_results.items[i].matching_acls.count;
            if (ctx->json) fprintf(ctx->out, "{\"removed\":%d}\n", n);
            else fprintf(ctx->out, "removed %d ACL binding%s\n", n, n == 1 ? "" : "s");
        }
    }
    kp_arena_free(&ar);
    cl_client_close(&c);
    return ex;
}
