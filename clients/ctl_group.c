/* ctl_group.c — `skiffctl group list|describe|delete|reset-offsets`.
 *
 * describe shows the group's state and members, and per committed
 * partition the committed offset, the log end (high watermark) and the lag.
 * reset-offsets commits new offsets for one topic (memberless commit: the
 * group must be empty, as with Kafka's tool); --dry-run only prints them.
 */
#include <stdlib.h>
#include <string.h>

#include "clients/cl_admin.h"
#include "clients/cl_consumer.h"
#include "clients/cl_ctl.h"
#include "clients/cl_out.h"
#include "protocol/kp_errors.h"

static const cl_opt_t group_opts[] = {
    CL_CTL_GLOBAL_OPTS,
    { "--topic", "-t", "TOPIC", false, "reset-offsets: the topic to reset" },
    { "--to-earliest", NULL, NULL, false, "reset-offsets: to the log start" },
    { "--to-latest", NULL, NULL, false, "reset-offsets: to the log end" },
    { "--to-offset", NULL, "N", false, "reset-offsets: to offset N (every partition)" },
    { "--to-timestamp", NULL, "MS", false, "reset-offsets: to the first record at or after MS" },
    { "--shift-by", NULL, "N", false, "reset-offsets: move the committed offsets by N (may be negative)" },
    { "--dry-run", NULL, NULL, false, "reset-offsets: print the new offsets, commit nothing" },
};
#define GROUP_NOPTS ((int)(sizeof group_opts / sizeof group_opts[0]))

static const char *group_usage =
    "skiffctl group list\n"
    "       skiffctl group describe GROUP\n"
    "       skiffctl group delete GROUP\n"
    "       skiffctl group reset-offsets GROUP --topic T (--to-earliest|--to-latest|--to-offset N|\n"
    "                                        --to-timestamp MS|--shift-by N) [--dry-run]";

typedef struct list_state {
    cl_ctl_t *ctx;
    cl_table_t t;
    cl_json_t j;
} list_state_t;

static void on_group(void *arg, int32_t node, const kp_list_groups_response_listed_group_t *g) {
    list_state_t *s = arg;
    char id[256], type[64], state[64], n[16];
    cl_strz(g->group_id, id, sizeof id);
    cl_strz(g->protocol_type, type, sizeof type);
    cl_strz(g->group_state, state, sizeof state);
    if (s->ctx->json) {
        cl_json_obj(&s->j);
        cl_json_key(&s->j, "group"); cl_json_str(&s->j, id);
        cl_json_key(&s->j, "protocol_type"); cl_json_str(&s->j, type);
        cl_json_key(&s->j, "state"); cl_json_str(&s->j, state[0] ? state : NULL);
        cl_json_key(&s->j, "coordinator"); cl_json_int(&s->j, node);
        cl_json_obj_end(&s->j);
    } else {
        snprintf(n, sizeof n, "%d", node);
        const char *row[] = { id, type[0] ? type : "-", state[0] ? state : "-", n };
        cl_table_add(&s->t, row);
    }
}

static int do_list(cl_ctl_t *ctx, cl_client_t *c) {
    list_state_t s = { .ctx = ctx };
    static const char *hdr[] = { "group", "protocol_type", "state", "coordinator" };
    if (ctx->json) { cl_json_init(&s.j, ctx->out); cl_json_arr(&s.j); }
    else cl_table_init(&s.t, 4, hdr);
    cl_err_t e;
    cl_err_clear(&e);
    int rc = cl_admin_list_groups(c, on_group, &s, &e);
    if (ctx->json) { cl_json_arr_end(&s.j); if (rc == CL_OK) cl_json_end(&s.j); else fputc('\n', ctx->out); }
    else { if (rc == CL_OK) cl_table_print(&s.t, ctx->out); cl_table_free(&s.t); }
    return rc == CL_OK ? CL_EXIT_OK : cl_ctl_fail(ctx, &e);
}

/* "topic:0,1 topic2:3" from a member's ConsumerProtocolAssignment bytes. */
static void assignment_str(kp_bytes_t b, char *buf, size_t n, kp_arena_t *a) {
    buf[0] = '\0';
    kp_rd_t r;
    kp_rd_init(&r, b.p, b.len);
    int16_t ver = 0;
    kp_consumer_protocol_assignment_t asg;
    if (!b.p || kp_rd_i16(&r, &ver) != KP_OK || ver < 0) return;
    if (ver > 3) ver = 3; /* newer versions only append fields */
    if (kp_consumer_protocol_assignment_decode(&r, ver, &asg, a) != KP_OK) return;
    size_t used = 0;
    for (int32_t i = 0; i < asg.assigned_partitions.count && used < n; i++) {
        const kp_consumer_protocol_assignment_topic_partition_t *tp = &asg.assigned_partitions.items[i];
        int k = snprintf(buf + used, n - used, "%s%.*s:", i ? " " : "", (int)tp->topic.len, (const char *)tp->topic.p);
        if (k < 0) return;
        used += (size_t)k;
        for (int32_t j = 0; j < tp->partitions.count && used < n; j++) {
            k = snprintf(buf + used, n - used, "%s%d", j ? "," : "", tp->partitions.items[j]);
            if (k < 0) return;
            used += (size_t)k;
        }
    }
}

/* Log-end offsets of every committed topic, indexed [topic][partition]. */
static int64_t *ends_for(cl_client_t *c, kp_str_t topic, int32_t *n, cl_err_t *e) {
    char name[256];
    cl_strz(topic, name, sizeof name);
    const char *names[1] = { name };
    if (cl_client_metadata(c, names, 1, e) != CL_OK) return NULL;
    const cl_md_topic_t *t = cl_md_topic(c, name);
    if (!t || t->error_code) { cl_err_kafka(e, t ? t->error_code : KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION, "topic '%s'", name); return NULL; }
    *n = t->partitions.count;
    int64_t *end = calloc((size_t)*n + 1, sizeof *end);
    if (!end) { cl_err_set(e, CL_E_NOMEM, "out of memory"); return NULL; }
    if (cl_list_offsets(c, name, CL_OFFSET_LATEST, end, *n, e) != CL_OK) { free(end); return NULL; }
    return end;
}

static int describe_offsets(cl_ctl_t *ctx, cl_client_t *c, const char *group, cl_json_t *j, cl_err_t *e) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)64 << 20);
    const kp_offset_fetch_response_t *of = NULL;
    int rc = cl_group_fetch_all_offsets(c, group, &a, &of, e);
    static const char *hdr[] = { "topic", "partition", "committed", "log_end", "lag" };
    cl_table_t t;
    cl_table_init(&t, 5, hdr);
    if (j) { cl_json_key(j, "offsets"); cl_json_arr(j); }
    int64_t total_lag = 0;
    for (int32_t i = 0; rc == CL_OK && i < of->topics.count; i++) {
        const kp_offset_fetch_response_offset_fetch_response_topic_t *tp = &of->topics.items[i];
        int32_t n = 0;
        int64_t *end = ends_for(c, tp->name, &n, e);
        if (!end) { rc = e->status; break; }
        char name[256];
        cl_strz(tp->name, name, sizeof name);
        for (int32_t k = 0; k < tp->partitions.count; k++) {
            const kp_offset_fetch_response_offset_fetch_response_partition_t *p = &tp->partitions.items[k];
            int64_t le = p->partition_index >= 0 && p->partition_index < n ? end[p->partition_index] : -1;
            int64_t lag = (le >= 0 && p->committed_offset >= 0 && le > p->committed_offset) ? le - p->committed_offset : 0;
            total_lag += lag;
            if (j) {
                cl_json_obj(j);
                cl_json_key(j, "topic"); cl_json_str(j, name);
                cl_json_key(j, "partition"); cl_json_int(j, p->partition_index);
                cl_json_key(j, "committed_offset"); cl_json_int(j, p->committed_offset);
                cl_json_key(j, "log_end_offset"); cl_json_int(j, le);
                cl_json_key(j, "lag"); cl_json_int(j, lag);
                cl_json_obj_end(j);
            } else {
                char ps[16], cs[24], es[24], ls[24];
                snprintf(ps, sizeof ps, "%d", p->partition_index);
                snprintf(cs, sizeof cs, "%lld", (long long)p->committed_offset);
                snprintf(es, sizeof es, "%lld", (long long)le);
                snprintf(ls, sizeof ls, "%lld", (long long)lag);
                const char *row[] = { name, ps, cs, es, ls };
                cl_table_add(&t, row);
            }
        }
        free(end);
    }
    if (j) {
        cl_json_arr_end(j);
        cl_json_key(j, "total_lag"); cl_json_int(j, total_lag);
    } else if (rc == CL_OK) {
        fprintf(ctx->out, "\n");
        cl_table_print(&t, ctx->out);
        fprintf(ctx->out, "\ntotal lag: %lld\n", (long long)total_lag);
    }
    cl_table_free(&t);
    kp_arena_free(&a);
    return rc;
}

/* "t6:0,1,2 t7:0" of a KIP-848 assignment. */
static void cg_assignment_str(const kp_consumer_group_describe_response_assignment_t *as, char *out, size_t cap) {
    size_t o = 0;
    out[0] = 0;
    for (int32_t i = 0; i < as->topic_partitions.count && o < cap; i++) {
        const kp_consumer_group_describe_response_topic_partitions_t *t = &as->topic_partitions.items[i];
        o += (size_t)snprintf(out + o, cap - o, "%s%.*s:", i ? " " : "", (int)t->topic_name.len,
                              (const char *)t->topic_name.p);
        for (int32_t k = 0; k < t->partitions.count && o < cap; k++)
            o += (size_t)snprintf(out + o, cap - o, "%s%d", k ? "," : "", t->partitions.items[k]);
    }
}

/* The end of both describes: the members (text: the table when there are
 * any; JSON: the members array closed), then the committed offsets, then
 * the JSON object closed. Frees t and a (the answer the rows point into). */
static int describe_tail(cl_ctl_t *ctx, cl_client_t *c, const char *group, cl_table_t *t, int32_t nmembers,
                         cl_json_t *j, kp_arena_t *a) {
    if (j) cl_json_arr_end(j);
    else if (nmembers > 0) { fputc('\n', ctx->out); cl_table_print(t, ctx->out); }
    cl_table_free(t);
    kp_arena_free(a);
    cl_err_t e;
    cl_err_clear(&e);
    int rc = describe_offsets(ctx, c, group, j, &e);
    if (j) { cl_json_obj_end(j); cl_json_end(j); }
    return rc == CL_OK ? CL_EXIT_OK : cl_ctl_fail(ctx, &e);
}

/* A KIP-848 consumer group (ConsumerGroupDescribe): epochs, assignor,
 * members with their epochs, current and target assignments. -1 (nothing
 * printed) when the coordinator does not describe it so (a classic group,
 * or a broker without API 69): the caller shows it the classic way. */
static int describe_consumer(cl_ctl_t *ctx, cl_client_t *c, const char *group) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)64 << 20);
    const kp_consumer_group_describe_response_described_group_t *g = NULL;
    cl_err_t e;
    cl_err_clear(&e);
    int rc = cl_admin_describe_consumer_group(c, group, &a, &g, &e);
    if (rc != CL_OK) { kp_arena_free(&a); return -1; }
    char state[64], assignor[64];
    cl_strz(g->group_state, state, sizeof state);
    cl_strz(g->assignor_name, assignor, sizeof assignor);
    cl_json_t j;
    if (ctx->json) {
        cl_json_init(&j, ctx->out);
        cl_json_obj(&j);
        cl_json_key(&j, "group"); cl_json_str(&j, group);
        cl_json_key(&j, "type"); cl_json_str(&j, "consumer");
        cl_json_key(&j, "state"); cl_json_str(&j, state);
        cl_json_key(&j, "group_epoch"); cl_json_int(&j, g->group_epoch);
        cl_json_key(&j, "assignment_epoch"); cl_json_int(&j, g->assignment_epoch);
        cl_json_key(&j, "assignor"); cl_json_str(&j, assignor);
        cl_json_key(&j, "members"); cl_json_arr(&j);
    } else {
        fprintf(ctx->out, "group: %s  type: consumer  state: %s  group epoch: %d  assignment epoch: %d  assignor: %s  members: %d\n",
                group, state, g->group_epoch, g->assignment_epoch, assignor, g->members.count);
    }
    static const char *hdr[] = { "member", "epoch", "client_id", "host", "assignment", "target" };
    cl_table_t t;
    cl_table_init(&t, 6, hdr);
    for (int32_t i = 0; i < g->members.count; i++) {
        const kp_consumer_group_describe_response_member_t *m = &g->members.items[i];
        char mid[256], cid[256], host[256], ep[16], asg[1024], tgt[1024];
        cl_strz(m->member_id, mid, sizeof mid);
        cl_strz(m->client_id, cid, sizeof cid);
        cl_strz(m->client_host, host, sizeof host);
        snprintf(ep, sizeof ep, "%d", m->member_epoch);
        cg_assignment_str(&m->assignment, asg, sizeof asg);
        cg_assignment_str(&m->target_assignment, tgt, sizeof tgt);
        if (ctx->json) {
            cl_json_obj(&j);
            cl_json_key(&j, "member_id"); cl_json_str(&j, mid);
            cl_json_key(&j, "member_epoch"); cl_json_int(&j, m->member_epoch);
            cl_json_key(&j, "client_id"); cl_json_str(&j, cid);
            cl_json_key(&j, "client_host"); cl_json_str(&j, host);
            cl_json_key(&j, "assignment"); cl_json_str(&j, asg);
            cl_json_key(&j, "target_assignment"); cl_json_str(&j, tgt);
            cl_json_obj_end(&j);
        } else {
            const char *row[] = { mid, ep, cid, host, asg[0] ? asg : "-", tgt[0] ? tgt : "-" };
            cl_table_add(&t, row);
        }
    }
    return describe_tail(ctx, c, group, &t, g->members.count, ctx->json ? &j : NULL, &a);
}

static int do_describe(cl_ctl_t *ctx, cl_client_t *c, const char *group) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)64 << 20);
    const kp_describe_groups_response_described_group_t *g = NULL;
    cl_err_t e;
    cl_err_clear(&e);
    int rc = cl_admin_describe_group(c, group, &a, &g, &e);
    if (rc != CL_OK) { kp_arena_free(&a); return cl_ctl_fail(ctx, &e); }
    char state[64], proto[64], ptype[64];
    cl_strz(g->group_state, state, sizeof state);
    cl_strz(g->protocol_data, proto, sizeof proto);
    cl_strz(g->protocol_type, ptype, sizeof ptype);
    /* skiff shows a KIP-848 group through DescribeGroups with protocol type
     * "consumer" and no member assignments: ask ConsumerGroupDescribe */
    if (strcmp(ptype, "consumer") == 0) {
        int r2 = describe_consumer(ctx, c, group);
        if (r2 != -1) { kp_arena_free(&a); return r2; }
    }
    cl_json_t j;
    if (ctx->json) {
        cl_json_init(&j, ctx->out);
        cl_json_obj(&j);
        cl_json_key(&j, "group"); cl_json_str(&j, group);
        cl_json_key(&j, "state"); cl_json_str(&j, state);
        cl_json_key(&j, "protocol_type"); cl_json_str(&j, ptype);
        cl_json_key(&j, "protocol"); cl_json_str(&j, proto);
        cl_json_key(&j, "members"); cl_json_arr(&j);
    } else {
        fprintf(ctx->out, "group: %s  state: %s  protocol: %s/%s  members: %d\n", group, state, ptype[0] ? ptype : "-",
                proto[0] ? proto : "-", g->members.count);
    }
    static const char *hdr[] = { "member", "client_id", "host", "assignment" };
    cl_table_t t;
    cl_table_init(&t, 4, hdr);
    for (int32_t i = 0; i < g->members.count; i++) {
        const kp_describe_groups_response_described_group_member_t *m = &g->members.items[i];
        char mid[256], cid[256], host[256], asg[1024];
        cl_strz(m->member_id, mid, sizeof mid);
        cl_strz(m->client_id, cid, sizeof cid);
        cl_strz(m->client_host, host, sizeof host);
        assignment_str(m->member_assignment, asg, sizeof asg, &a);
        if (ctx->json) {
            cl_json_obj(&j);
            cl_json_key(&j, "member_id"); cl_json_str(&j, mid);
            cl_json_key(&j, "client_id"); cl_json_str(&j, cid);
            cl_json_key(&j, "client_host"); cl_json_str(&j, host);
            cl_json_key(&j, "assignment"); cl_json_str(&j, asg);
            cl_json_obj_end(&j);
        } else {
            const char *row[] = { mid, cid, host, asg[0] ? asg : "-" };
            cl_table_add(&t, row);
        }
    }
    return describe_tail(ctx, c, group, &t, g->members.count, ctx->json ? &j : NULL, &a);
}

/* Target offsets for reset-offsets into want[0..n). */
static int reset_targets(cl_client_t *c, const cl_args_t *a, const char *group, const char *topic, int64_t *cur,
                         int64_t *want, int32_t n, cl_err_t *e) {
    int modes = cl_args_count(a, "--to-earliest") + cl_args_count(a, "--to-latest") + cl_args_count(a, "--to-offset") +
                cl_args_count(a, "--to-timestamp") + cl_args_count(a, "--shift-by");
    if (modes != 1) return cl_err_set(e, CL_E_USAGE, "reset-offsets needs exactly one --to-*/--shift-by option");
    int rc = cl_group_fetch_offsets(c, group, topic, cur, n, e);
    if (rc != CL_OK) return rc;
    int64_t v = 0;
    const char *s;
    if (cl_args_count(a, "--to-earliest")) return cl_list_offsets(c, topic, CL_OFFSET_EARLIEST, want, n, e);
    if (cl_args_count(a, "--to-latest")) return cl_list_offsets(c, topic, CL_OFFSET_LATEST, want, n, e);
    if ((s = cl_args_get(a, "--to-offset"))) {
        if ((rc = cl_parse_i64(s, 0, INT64_MAX, &v, "--to-offset", e)) != CL_OK) return rc;
        for (int32_t i = 0; i < n; i++) want[i] = v;
        return CL_OK;
    }
    if ((s = cl_args_get(a, "--to-timestamp"))) {
        if ((rc = cl_parse_i64(s, 0, INT64_MAX, &v, "--to-timestamp", e)) != CL_OK) return rc;
        if ((rc = cl_list_offsets(c, topic, v, want, n, e)) != CL_OK) return rc;
        int64_t *end = calloc((size_t)n + 1, sizeof *end);
        if (!end) return cl_err_set(e, CL_E_NOMEM, "out of memory");
        rc = cl_list_offsets(c, topic, CL_OFFSET_LATEST, end, n, e);
        for (int32_t i = 0; rc == CL_OK && i < n; i++) if (want[i] < 0) want[i] = end[i];
        free(end);
        return rc;
    }
    s = cl_args_get(a, "--shift-by");
    if ((rc = cl_parse_i64(s, INT32_MIN, INT32_MAX, &v, "--shift-by", e)) != CL_OK) return rc;
    int64_t *lo = calloc((size_t)n + 1, sizeof *lo), *hi = calloc((size_t)n + 1, sizeof *hi);
    if (!lo || !hi) { free(lo); free(hi); return cl_err_set(e, CL_E_NOMEM, "out of memory"); }
    rc = cl_list_offsets(c, topic, CL_OFFSET_EARLIEST, lo, n, e);
    if (rc == CL_OK) rc = cl_list_offsets(c, topic, CL_OFFSET_LATEST, hi, n, e);
    for (int32_t i = 0; rc == CL_OK && i < n; i++) {
        int64_t base = cur[i] >= 0 ? cur[i] : lo[i];
        int64_t t = base + v;
        want[i] = t < lo[i] ? lo[i] : t > hi[i] ? hi[i] : t; /* clamped to the log, as Kafka's tool does */
    }
    free(lo);
    free(hi);
    return rc;
}

static int do_reset(cl_ctl_t *ctx, cl_client_t *c, const cl_args_t *a, const char *group) {
    const char *topic = cl_args_get(a, "--topic");
    if (!topic) return cl_ctl_usage(ctx, "reset-offsets needs --topic");
    cl_err_t e;
    cl_err_clear(&e);
    const char *names[1] = { topic };
    if (cl_client_metadata(c, names, 1, &e) != CL_OK) return cl_ctl_fail(ctx, &e);
    const cl_md_topic_t *t = cl_md_topic(c, topic);
    if (!t || t->error_code) {
        cl_err_kafka(&e, t ? t->error_code : KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION, "topic '%s'", topic);
        return cl_ctl_fail(ctx, &e);
    }
    int32_t n = t->partitions.count;
    int64_t *cur = calloc((size_t)n + 1, sizeof *cur), *want = calloc((size_t)n + 1, sizeof *want);
    int rc = (cur && want) ? reset_targets(c, a, group, topic, cur, want, n, &e) : cl_err_set(&e, CL_E_NOMEM, "out of memory");
    bool dry = cl_args_count(a, "--dry-run") > 0;
    if (rc == CL_OK && !dry) rc = cl_group_commit_offsets(c, group, topic, want, n, &e);
    if (rc == CL_OK) {
        static const char *hdr[] = { "topic", "partition", "old", "new" };
        cl_table_t tb;
        cl_json_t j;
        if (ctx->json) {
            cl_json_init(&j, ctx->out);
            cl_json_obj(&j);
            cl_json_key(&j, "group"); cl_json_str(&j, group);
            cl_json_key(&j, "dry_run"); cl_json_bool(&j, dry);
            cl_json_key(&j, "offsets"); cl_json_arr(&j);
        } else {
            cl_table_init(&tb, 4, hdr);
        }
        for (int32_t i = 0; i < n; i++) {
            if (ctx->json) {
                cl_json_obj(&j);
                cl_json_key(&j, "topic"); cl_json_str(&j, topic);
                cl_json_key(&j, "partition"); cl_json_int(&j, i);
                cl_json_key(&j, "old"); cl_json_int(&j, cur[i]);
                cl_json_key(&j, "new"); cl_json_int(&j, want[i]);
                cl_json_obj_end(&j);
            } else {
                char ps[16], os[24], ns[24];
                snprintf(ps, sizeof ps, "%d", i);
                snprintf(os, sizeof os, "%lld", (long long)cur[i]);
                snprintf(ns, sizeof ns, "%lld", (long long)want[i]);
                const char *row[] = { topic, ps, os, ns };
                cl_table_add(&tb, row);
            }
        }
        if (ctx->json) { cl_json_arr_end(&j); cl_json_obj_end(&j); cl_json_end(&j); }
        else {
            cl_table_print(&tb, ctx->out);
            cl_table_free(&tb);
            if (dry) fprintf(ctx->out, "(dry run: nothing committed)\n");
        }
    }
    free(cur);
    free(want);
    return rc == CL_OK ? CL_EXIT_OK : cl_ctl_fail(ctx, &e);
}

int cl_ctl_group(cl_ctl_t *ctx, int argc, char **argv) {
    cl_args_t a;
    int rc = cl_ctl_parse(ctx, argc, argv, group_opts, GROUP_NOPTS, group_usage, &a);
    if (rc == -1) return CL_EXIT_OK;
    if (rc != CL_OK) return CL_EXIT_USAGE;
    if (a.npos < 1) return cl_ctl_usage(ctx, "group needs a subcommand");
    const char *sub = a.pos[0];
    bool list = !strcmp(sub, "list");
    if (!list && strcmp(sub, "describe") && strcmp(sub, "delete") && strcmp(sub, "reset-offsets"))
        return cl_ctl_usage(ctx, "unknown group subcommand '%s'", sub);
    if (list ? a.npos != 1 : a.npos != 2) return cl_ctl_usage(ctx, list ? "group list takes no name" : "group %s needs one group id", sub);
    if (!strcmp(sub, "reset-offsets")) {
        if (!cl_args_get(&a, "--topic")) return cl_ctl_usage(ctx, "reset-offsets needs --topic");
        int modes = cl_args_count(&a, "--to-earliest") + cl_args_count(&a, "--to-latest") + cl_args_count(&a, "--to-offset") +
                    cl_args_count(&a, "--to-timestamp") + cl_args_count(&a, "--shift-by");
        if (modes != 1) return cl_ctl_usage(ctx, "reset-offsets needs exactly one --to-*/--shift-by option");
        static const struct { const char *name; int64_t lo, hi; } nums[] = {
            { "--to-offset", 0, INT64_MAX }, { "--to-timestamp", 0, INT64_MAX }, { "--shift-by", INT32_MIN, INT32_MAX } };
        cl_err_t ue;
        int64_t v = 0;
        for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
            const char *s = cl_args_get(&a, nums[i].name);
            if (s && cl_parse_i64(s, nums[i].lo, nums[i].hi, &v, nums[i].name, &ue) != CL_OK) return cl_ctl_fail(ctx, &ue);
        }
    }
    cl_client_t c;
    int ex = cl_ctl_connect(ctx, &c);
    if (ex != CL_EXIT_OK) { cl_client_close(&c); return ex; }
    cl_err_t e;
    cl_err_clear(&e);
    if (list) ex = do_list(ctx, &c);
    else if (!strcmp(sub, "describe")) ex = do_describe(ctx, &c, a.pos[1]);
    else if (!strcmp(sub, "reset-offsets")) ex = do_reset(ctx, &c, &a, a.pos[1]);
    else if (cl_admin_delete_group(&c, a.pos[1], &e) != CL_OK) ex = cl_ctl_fail(ctx, &e);
    else if (ctx->json) fprintf(ctx->out, "{\"deleted\":true,\"group\":\"%s\"}\n", a.pos[1]);
    else fprintf(ctx->out, "deleted group %s\n", a.pos[1]);
    cl_client_close(&c);
    return ex;
}
