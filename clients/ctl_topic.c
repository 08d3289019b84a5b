/* ctl_topic.c — `skiffctl topic create|list|describe|delete|alter-config|
 * add-partitions`. */
#include <stdlib.h>
#include <string.h>

#include "clients/cl_admin.h"
#include "clients/cl_consumer.h"
#include "clients/cl_ctl.h"
#include "clients/cl_out.h"
#include "protocol/kp_errors.h"

static const cl_opt_t topic_opts[] = {
    CL_CTL_GLOBAL_OPTS,
    { "--partitions", "-p", "N", false, "create: partition count (default: broker's num.partitions)" },
    { "--replicas", "-r", "N", false, "create: replication factor (default: broker's default)" },
    { "--config", "-c", "KEY=VALUE", true, "create: topic config" },
    { "--set", NULL, "KEY=VALUE", true, "alter-config: set a config" },
    { "--delete", NULL, "KEY", true, "alter-config: remove a config (back to the default)" },
    { "--count", NULL, "N", false, "add-partitions: new total partition count" },
    { "--internal", NULL, NULL, false, "list: include internal topics" },
};
#define TOPIC_NOPTS ((int)(sizeof topic_opts / sizeof topic_opts[0]))

static const char *topic_usage =
    "skiffctl topic create NAME [-p N] [-r N] [-c k=v]...\n"
    "       skiffctl topic list [--internal]\n"
    "       skiffctl topic describe NAME\n"
    "       skiffctl topic delete NAME\n"
    "       skiffctl topic alter-config NAME [--set k=v]... [--delete k]...\n"
    "       skiffctl topic add-partitions NAME --count N";

static void ints_str(char *buf, size_t n, const int32_t *v, int32_t count) {
    size_t used = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < count && used < n; i++) {
        int k = snprintf(buf + used, n - used, "%s%d", i ? "," : "", v[i]);
        if (k < 0) break;
        used += (size_t)k;
    }
}

static void ints_json(cl_json_t *j, const int32_t *v, int32_t count) {
    cl_json_arr(j);
    for (int32_t i = 0; i < count; i++) cl_json_int(j, v[i]);
    cl_json_arr_end(j);
}

/* Checks create's numbers before any connection is made (usage errors
 * must exit 2 even when no broker is up). */
static int create_numbers(const cl_args_t *a, int64_t *parts, int64_t *rf, cl_err_t *e) {
    const char *v;
    *parts = -1;
    *rf = -1;
    if ((v = cl_args_get(a, "--partitions")) && cl_parse_i64(v, 1, 1000000, parts, "--partitions", e) != CL_OK)
        return CL_E_USAGE;
    if ((v = cl_args_get(a, "--replicas")) && cl_parse_i64(v, 1, 32767, rf, "--replicas", e) != CL_OK)
        return CL_E_USAGE;
    return CL_OK;
}

static int do_create(cl_ctl_t *ctx, cl_client_t *c, const cl_args_t *a, const char *name) {
    int64_t parts = -1, rf = -1;
    cl_err_t e;
    cl_err_clear(&e);
    if (create_numbers(a, &parts, &rf, &e) != CL_OK) return cl_ctl_fail(ctx, &e);
    int n = cl_args_count(a, "--config");
    const char *cfgs[CL_ARGS_REPEAT_MAX];
    for (int i = 0; i < n; i++) cfgs[i] = cl_args_at(a, "--config", i);
    if (cl_admin_create_topic(c, name, (int32_t)parts, (int16_t)rf, cfgs, n, &e) != CL_OK) return cl_ctl_fail(ctx, &e);
    if (ctx->json) fprintf(ctx->out, "{\"created\":true,\"topic\":\"%s\"}\n", name);
    else fprintf(ctx->out, "created topic %s\n", name);
    return CL_EXIT_OK;
}

static int do_list(cl_ctl_t *ctx, cl_client_t *c, const cl_args_t *a) {
    cl_err_t e;
    cl_err_clear(&e);
    if (cl_client_metadata(c, NULL, 0, &e) != CL_OK) return cl_ctl_fail(ctx, &e);
    bool internal = cl_args_count(a, "--internal") > 0;
    cl_json_t j;
    cl_table_t t;
    static const char *hdr[] = { "name", "partitions", "replicas" };
    if (ctx->json) { cl_json_init(&j, ctx->out); cl_json_arr(&j); }
    else cl_table_init(&t, 3, hdr);
    for (int32_t i = 0; i < c->md->topics.count; i++) {
        const cl_md_topic_t *tp = &c->md->topics.items[i];
        if (tp->is_internal && !internal) continue;
        char name[256], np[16], rf[16];
        cl_strz(tp->name, name, sizeof name);
        int32_t nrep = tp->partitions.count > 0 ? tp->partitions.items[0].replica_nodes.count : 0;
        if (ctx->json) {
            cl_json_obj(&j);
            cl_json_key(&j, "name"); cl_json_str(&j, name);
            cl_json_key(&j, "partitions"); cl_json_int(&j, tp->partitions.count);
            cl_json_key(&j, "replication_factor"); cl_json_int(&j, nrep);
            cl_json_key(&j, "internal"); cl_json_bool(&j, tp->is_internal);
            cl_json_obj_end(&j);
        } else {
            snprintf(np, sizeof np, "%d", tp->partitions.count);
            snprintf(rf, sizeof rf, "%d", nrep);
            const char *row[] = { name, np, rf };
            cl_table_add(&t, row);
        }
    }
    if (ctx->json) { cl_json_arr_end(&j); cl_json_end(&j); }
    else { cl_table_print(&t, ctx->out); cl_table_free(&t); }
    return CL_EXIT_OK;
}

static void describe_partitions_table(cl_ctl_t *ctx, const cl_md_topic_t *tp, const int64_t *start, const int64_t *end) {
    static const char *hdr[] = { "partition", "leader", "epoch", "replicas", "isr", "offline", "log_start", "high_watermark" };
    cl_table_t t;
    cl_table_init(&t, 8, hdr);
    for (int32_t i = 0; i < tp->partitions.count; i++) {
        const cl_md_partition_t *p = &tp->partitions.items[i];
        char part[16], leader[16], epoch[16], reps[512], isr[512], off[512], s[24], h[24];
        snprintf(part, sizeof part, "%d", p->partition_index);
        snprintf(leader, sizeof leader, "%d", p->leader_id);
        snprintf(epoch, sizeof epoch, "%d", p->leader_epoch);
        ints_str(reps, sizeof reps, p->replica_nodes.items, p->replica_nodes.count);
        ints_str(isr, sizeof isr, p->isr_nodes.items, p->isr_nodes.count);
        ints_str(off, sizeof off, p->offline_replicas.items, p->offline_replicas.count);
        int32_t pi = p->partition_index;
        bool ok = pi >= 0 && pi < tp->partitions.count;
        snprintf(s, sizeof s, "%lld", ok && start ? (long long)start[pi] : -1LL);
        snprintf(h, sizeof h, "%lld", ok && end ? (long long)end[pi] : -1LL);
        const char *row[] = { part, leader, epoch, reps, isr, off[0] ? off : "-", s, h };
        cl_table_add(&t, row);
    }
    cl_table_print(&t, ctx->out);
    cl_table_free(&t);
}

static void describe_json(cl_ctl_t *ctx, const char *name, const cl_md_topic_t *tp, const int64_t *start,
                          const int64_t *end, const kp_describe_configs_response_describe_configs_result_t *cfg) {
    cl_json_t j;
    cl_json_init(&j, ctx->out);
    cl_json_obj(&j);
    cl_json_key(&j, "name"); cl_json_str(&j, name);
    cl_json_key(&j, "internal"); cl_json_bool(&j, tp->is_internal);
    cl_json_key(&j, "partitions");
    cl_json_arr(&j);
    for (int32_t i = 0; i < tp->partitions.count; i++) {
        const cl_md_partition_t *p = &tp->partitions.items[i];
        int32_t pi = p->partition_index;
        bool ok = pi >= 0 && pi < tp->partitions.count;
        cl_json_obj(&j);
        cl_json_key(&j, "partition"); cl_json_int(&j, pi);
        cl_json_key(&j, "error"); cl_json_str(&j, kp_error_name(p->error_code));
        cl_json_key(&j, "leader"); cl_json_int(&j, p->leader_id);
        cl_json_key(&j, "leader_epoch"); cl_json_int(&j, p->leader_epoch);
        cl_json_key(&j, "replicas"); ints_json(&j, p->replica_nodes.items, p->replica_nodes.count);
        cl_json_key(&j, "isr"); ints_json(&j, p->isr_nodes.items, p->isr_nodes.count);
        cl_json_key(&j, "offline_replicas"); ints_json(&j, p->offline_replicas.items, p->offline_replicas.count);
        cl_json_key(&j, "log_start_offset"); cl_json_int(&j, ok && start ? start[pi] : -1);
        cl_json_key(&j, "high_watermark"); cl_json_int(&j, ok && end ? end[pi] : -1);
        cl_json_obj_end(&j);
    }
    cl_json_arr_end(&j);
    cl_json_key(&j, "configs");
    cl_json_obj(&j);
    for (int32_t i = 0; cfg && i < cfg->configs.count; i++) {
        char k[256];
        cl_json_key(&j, cl_strz(cfg->configs.items[i].name, k, sizeof k));
        kp_str_t v = cfg->configs.items[i].value;
        cl_json_strn(&j, kp_slice_is_null(v) ? NULL : (const char *)v.p, v.len);
    }
    cl_json_obj_end(&j);
    cl_json_obj_end(&j);
    cl_json_end(&j);
}

static int do_describe(cl_ctl_t *ctx, cl_client_t *c, const char *name) {
    cl_err_t e;
    cl_err_clear(&e);
    const char *names[1] = { name };
    if (cl_client_metadata(c, names, 1, &e) != CL_OK) return cl_ctl_fail(ctx, &e);
    const cl_md_topic_t *tp = cl_md_topic(c, name);
    if (!tp || tp->error_code != 0) {
        cl_err_kafka(&e, tp ? tp->error_code : KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION, "topic '%s'", name);
        return cl_ctl_fail(ctx, &e);
    }
    int32_t n = tp->partitions.count;
    int64_t *start = calloc((size_t)n + 1, sizeof *start), *end = calloc((size_t)n + 1, sizeof *end);
    int ex = CL_EXIT_OK;
    if (!start || !end) { cl_err_set(&e, CL_E_NOMEM, "out of memory"); ex = cl_ctl_fail(ctx, &e); goto out; }
    if (cl_list_offsets(c, name, CL_OFFSET_EARLIEST, start, n, &e) != CL_OK ||
        cl_list_offsets(c, name, CL_OFFSET_LATEST, end, n, &e) != CL_OK) {
        /* the partition layout is still worth showing; offsets read -1 */
        fprintf(ctx->err, "skiffctl: warning: offsets of %s not available: %s\n", name, e.msg);
        for (int32_t i = 0; i < n; i++) start[i] = end[i] = -1;
        if (e.status == CL_E_CONNECT) { ex = cl_ctl_fail(ctx, &e); goto out; }
    }
    tp = cl_md_topic(c, name); /* list offsets may have refreshed the cache */
    if (!tp) { cl_err_kafka(&e, KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION, "topic '%s'", name); ex = cl_ctl_fail(ctx, &e); goto out; }
    kp_arena_t a;
    kp_arena_init(&a, (size_t)16 << 20);
    const kp_describe_configs_response_describe_configs_result_t *cfg = NULL;
    cl_err_t ce;
    cl_err_clear(&ce);
    if (cl_admin_describe_configs(c, CL_RESOURCE_TOPIC, name, &a, &cfg, &ce) != CL_OK) cfg = NULL; /* shown as none */
    tp = cl_md_topic(c, name);
    if (ctx->json) {
        describe_json(ctx, name, tp, start, end, cfg);
    } else {
        int32_t nrep = tp->partitions.count > 0 ? tp->partitions.items[0].replica_nodes.count : 0;
        fprintf(ctx->out, "topic: %s  partitions: %d  replication factor: %d%s\n\n", name, tp->partitions.count, nrep,
                tp->is_internal ? "  (internal)" : "");
        describe_partitions_table(ctx, tp, start, end);
        if (cfg) {
            fprintf(ctx->out, "\nconfigs (set on the topic):\n");
            for (int32_t i = 0; i < cfg->configs.count; i++) {
                const kp_describe_configs_response_describe_configs_resource_result_t *r = &cfg->configs.items[i];
                if (r->config_source != 1 && r->config_source != -1) continue; /* 1 = topic config */
                if (r->config_source == -1 && r->is_default) continue;
                fprintf(ctx->out, "  %.*s=%.*s\n", (int)r->name.len, (const char *)r->name.p, (int)r->value.len,
                        r->value.p ? (const char *)r->value.p : "");
            }
        } else {
            fprintf(ctx->out, "\nconfigs: not available (%s)\n", ce.msg);
        }
    }
    kp_arena_free(&a);
out:
    free(start);
    free(end);
    return ex;
}

static int do_alter(cl_ctl_t *ctx, cl_client_t *c, const cl_args_t *a, const char *name) {
    int ns = cl_args_count(a, "--set"), nd = cl_args_count(a, "--delete");
    if (ns + nd == 0) return cl_ctl_usage(ctx, "alter-config needs --set k=v or --delete k");
    const char *sets[CL_ARGS_REPEAT_MAX], *dels[CL_ARGS_REPEAT_MAX];
    for (int i = 0; i < ns; i++) sets[i] = cl_args_at(a, "--set", i);
    for (int i = 0; i < nd; i++) dels[i] = cl_args_at(a, "--delete", i);
    cl_err_t e;
    cl_err_clear(&e);
    if (cl_admin_alter_configs(c, CL_RESOURCE_TOPIC, name, sets, ns, dels, nd, &e) != CL_OK) return cl_ctl_fail(ctx, &e);
    if (ctx->json) fprintf(ctx->out, "{\"altered\":true,\"topic\":\"%s\",\"set\":%d,\"deleted\":%d}\n", name, ns, nd);
    else fprintf(ctx->out, "altered topic %s (%d set, %d deleted)\n", name, ns, nd);
    return CL_EXIT_OK;
}

int cl_ctl_topic(cl_ctl_t *ctx, int argc, char **argv) {
    cl_args_t a;
    int rc = cl_ctl_parse(ctx, argc, argv, topic_opts, TOPIC_NOPTS, topic_usage, &a);
    if (rc == -1) return CL_EXIT_OK;
    if (rc != CL_OK) return CL_EXIT_USAGE;
    if (a.npos < 1) return cl_ctl_usage(ctx, "topic needs a subcommand");
    const char *sub = a.pos[0];
    bool list = !strcmp(sub, "list");
    static const char *subs[] = { "create", "describe", "delete", "alter-config", "add-partitions" };
    bool known = list;
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) known |= !strcmp(sub, subs[i]);
    if (!known) return cl_ctl_usage(ctx, "unknown topic subcommand '%s'", sub);
    if (list ? a.npos != 1 : a.npos != 2) return cl_ctl_usage(ctx, list ? "topic list takes no name" : "topic %s needs one topic name", sub);
    int64_t count = 0;
    cl_err_t e;
    cl_err_clear(&e);
    if (!strcmp(sub, "create")) {
        int64_t p, r;
        if (create_numbers(&a, &p, &r, &e) != CL_OK) return cl_ctl_fail(ctx, &e);
    }
    if (!strcmp(sub, "add-partitions")) {
        const char *v = cl_args_get(&a, "--count");
        if (!v) return cl_ctl_usage(ctx, "add-partitions needs --count N");
        if (cl_parse_i64(v, 1, 1000000, &count, "--count", &e) != CL_OK) return cl_ctl_fail(ctx, &e);
    }
    cl_client_t c;
    int ex = cl_ctl_connect(ctx, &c);
    if (ex != CL_EXIT_OK) { cl_client_close(&c); return ex; }
    const char *name = list ? NULL : a.pos[1];
    if (list) ex = do_list(ctx, &c, &a);
    else if (!strcmp(sub, "create")) ex = do_create(ctx, &c, &a, name);
    else if (!strcmp(sub, "describe")) ex = do_describe(ctx, &c, name);
    else if (!strcmp(sub, "alter-config")) ex = do_alter(ctx, &c, &a, name);
    else if (!strcmp(sub, "delete")) {
        if (cl_admin_delete_topic(&c, name, &e) != CL_OK) ex = cl_ctl_fail(ctx, &e);
        else if (ctx->json) fprintf(ctx->out, "{\"deleted\":true,\"topic\":\"%s\"}\n", name);
        else fprintf(ctx->out, "deleted topic %s\n", name);
    } else {
        if (cl_admin_create_partitions(&c, name, (int32_t)count, &e) != CL_OK) ex = cl_ctl_fail(ctx, &e);
        else if (ctx->json) fprintf(ctx->out, "{\"topic\":\"%s\",\"partitions\":%lld}\n", name, (long long)count);
        else fprintf(ctx->out, "topic %s now has %lld partitions\n", name, (long long)count);
    }
    cl_client_close(&c);
    return ex;
}
