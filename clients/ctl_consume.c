/* ctl_consume.c — `skiffctl consume TOPIC`.
 *
 * Start: --from-beginning, --offset N (with --partition), --timestamp MS,
 * --group G (starts at G's committed offsets, else --from-beginning's or the
 * end; commits when done and on SIGINT/SIGTERM), default: the end. Without
 * --join the group's offsets are read and committed without joining
 * (generation -1: the group must have no active members, as with Kafka's
 * offset tools); with --join skiffctl is a member (range assignment,
 * heartbeats, rejoin and commit at each rebalance). Stops after
 * --count records, or when every partition read is caught up unless --follow.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "clients/cl_admin.h"
#include "clients/cl_consumer.h"
#include "clients/cl_ctl.h"
#include "clients/cl_group.h"
#include "clients/cl_out.h"
#include "protocol/kp_batch.h"

static const cl_opt_t consume_opts[] = {
    CL_CTL_GLOBAL_OPTS,
    { "--from-beginning", NULL, NULL, false, "start at the earliest offset" },
    { "--offset", "-o", "N", false, "start at offset N (of --partition, else of every partition)" },
    { "--timestamp", NULL, "MS", false, "start at the first record with timestamp >= MS" },
    { "--partition", "-p", "N", false, "consume only partition N" },
    { "--group", "-g", "GROUP", false, "start at GROUP's committed offsets and commit when done" },
    { "--join", NULL, NULL, false, "with --group: join it as a member (range assignment, heartbeats)" },
    { "--count", "-n", "N", false, "stop after N records" },
    { "--format", "-f", "FMT", false, "kcat-style format: %t %p %o %k %v %T %h %K %V (default %v\\n)" },
    { "--follow", NULL, NULL, false, "keep waiting for new records" },
};
#define CONSUME_NOPTS ((int)(sizeof consume_opts / sizeof consume_opts[0]))

void cl_ctl_format_msg(FILE *f, const char *fmt, const cl_msg_t *m) {
    for (const char *p = fmt; *p; p++) {
        if (*p == '\\' && p[1]) {
            p++;
            fputc(*p == 'n' ? '\n' : *p == 't' ? '\t' : *p, f);
            continue;
        }
        if (*p != '%' || !p[1]) { fputc(*p, f); continue; }
        switch (*++p) {
        case 't': fputs(m->topic, f); break;
        case 'p': fprintf(f, "%d", m->partition); break;
        case 'o': fprintf(f, "%lld", (long long)m->offset); break;
        case 'T': fprintf(f, "%lld", (long long)m->timestamp); break;
        case 'k': if (m->key.p) fwrite(m->key.p, 1, m->key.len, f); break;
        case 'v': if (m->value.p) fwrite(m->value.p, 1, m->value.len, f); break;
        case 'K': fprintf(f, "%lld", m->key.p ? (long long)m->key.len : -1LL); break;
        case 'V': fprintf(f, "%lld", m->value.p ? (long long)m->value.len : -1LL); break;
        case 'h': {
            kp_rd_t r;
            kp_rd_init(&r, m->headers.p, m->headers.len);
            kp_str_t k;
            kp_bytes_t v;
            for (int i = 0; kp_record_header_next(&r, &k, &v) == 1; i++)
                fprintf(f, "%s%.*s=%.*s", i ? "," : "", (int)k.len, (const char *)k.p, (int)v.len,
                        v.p ? (const char *)v.p : "");
            break;
        }
        case '%': fputc('%', f); break;
        default: fputc('%', f); fputc(*p, f);
        }
    }
}

static void msg_json(FILE *f, const cl_msg_t *m) {
    cl_json_t j;
    cl_json_init(&j, f);
    cl_json_obj(&j);
    cl_json_key(&j, "topic"); cl_json_str(&j, m->topic);
    cl_json_key(&j, "partition"); cl_json_int(&j, m->partition);
    cl_json_key(&j, "offset"); cl_json_int(&j, m->offset);
    cl_json_key(&j, "timestamp"); cl_json_int(&j, m->timestamp);
    cl_json_key(&j, "key"); cl_json_strn(&j, (const char *)m->key.p, m->key.len);
    cl_json_key(&j, "value"); cl_json_strn(&j, (const char *)m->value.p, m->value.len);
    cl_json_key(&j, "headers");
    cl_json_obj(&j);
    kp_rd_t r;
    kp_rd_init(&r, m->headers.p, m->headers.len);
    kp_str_t k;
    kp_bytes_t v;
    while (kp_record_header_next(&r, &k, &v) == 1) {
        char kz[256];
        cl_json_key(&j, cl_strz(k, kz, sizeof kz));
        cl_json_strn(&j, (const char *)v.p, v.len);
    }
    cl_json_obj_end(&j);
    cl_json_obj_end(&j);
    cl_json_end(&j);
}

typedef struct consume_state {
    cl_ctl_t *ctx;
    const char *fmt;
    int32_t only_partition;   /* -1 = all */
    int64_t left;             /* records still wanted, -1 = unbounded */
} consume_state_t;

static volatile sig_atomic_t stop_requested;
static void on_stop_signal(int sig) { (void)sig; stop_requested = 1; }

static bool on_msg(void *arg, const cl_msg_t *m) {
    consume_state_t *s = arg;
    if (s->ctx->json) msg_json(s->ctx->out, m);
    else cl_ctl_format_msg(s->ctx->out, s->fmt, m);
    if (s->left > 0) s->left--;
    return s->left != 0;
}

/* Start positions of the active partitions from the options; with a group,
 * committed offsets win over the --from-beginning / end default. */
static int position(cl_consumer_t *k, const cl_args_t *a, const char *group, cl_err_t *e) {
    const char *off = cl_args_get(a, "--offset"), *ts = cl_args_get(a, "--timestamp");
    bool begin = cl_args_count(a, "--from-beginning") > 0;
    int64_t v = 0;
    int rc = cl_consumer_seek(k, begin ? CL_OFFSET_EARLIEST : CL_OFFSET_LATEST, e);
    if (rc != CL_OK) return rc;
    if (ts) {
        if ((rc = cl_parse_i64(ts, 0, INT64_MAX, &v, "--timestamp", e)) != CL_OK) return rc;
        return cl_consumer_seek(k, v, e);
    }
    if (off) {
        if ((rc = cl_parse_i64(off, 0, INT64_MAX, &v, "--offset", e)) != CL_OK) return rc;
        for (int32_t i = 0; i < k->npartitions; i++) k->pos[i] = v;
        return CL_OK;
    }
    if (group) {
        int64_t *committed = calloc((size_t)k->npartitions + 1, sizeof *committed);
        if (!committed) return cl_err_set(e, CL_E_NOMEM, "out of memory");
        rc = cl_group_fetch_offsets(k->cl, group, k->topic, committed, k->npartitions, e);
        for (int32_t i = 0; rc == CL_OK && i < k->npartitions; i++)
            if (committed[i] >= 0) k->pos[i] = committed[i];
        free(committed);
    }
    return rc;
}

/* Positions of the partitions we do not read are not ours to commit. */
static int commit_active(cl_consumer_t *k, cl_group_t *g, const char *group, cl_err_t *e) {
    int64_t *offs = calloc((size_t)k->npartitions + 1, sizeof *offs);
    if (!offs) return cl_err_set(e, CL_E_NOMEM, "out of memory");
    for (int32_t i = 0; i < k->npartitions; i++) offs[i] = k->active[i] ? k->pos[i] : -1;
    int rc = g ? cl_group_commit(g, offs, e) : cl_group_commit_offsets(k->cl, group, k->topic, offs, k->npartitions, e);
    free(offs);
    return rc;
}

/* Joins the group and positions the consumer on the partitions assigned. */
static int join_and_position(cl_consumer_t *k, cl_group_t *g, const cl_args_t *a, cl_err_t *e) {
    int rc = cl_group_join(g, e);
    if (rc != CL_OK) return rc;
    memcpy(k->active, g->assigned, (size_t)k->npartitions);
    return position(k, a, g->group, e);
}

static int consume_loop(cl_ctl_t *ctx, cl_consumer_t *k, cl_group_t *g, const cl_args_t *a, consume_state_t *s,
                        bool follow, cl_err_t *e) {
    while (!stop_requested) {
        int64_t got = 0;
        int rc = cl_consumer_poll(k, on_msg, s, &got, e);
        fflush(ctx->out);
        if (rc != CL_OK) return rc;
        if (s->left == 0) return CL_OK;
        if (g) {
            rc = cl_group_heartbeat(g, e);
            if (rc == CL_GROUP_REJOIN) {
                cl_err_t ce;
                if (commit_active(k, g, NULL, &ce) != CL_OK) {
                    /* a commit refused during the rebalance: the next owner re-reads */
                }
                rc = join_and_position(k, g, a, e);
            }
            if (rc != CL_OK) return rc;
        }
        if (!follow && cl_consumer_at_end(k)) return CL_OK;
        if (g && g->nassigned == 0 && follow) cl_sleep_ms(100); /* idle member: wait for a rebalance */
    }
    return CL_OK;
}

int cl_ctl_consume(cl_ctl_t *ctx, int argc, char **argv) {
    cl_args_t a;
    int rc = cl_ctl_parse(ctx, argc, argv, consume_opts, CONSUME_NOPTS, "skiffctl consume TOPIC [options]", &a);
    if (rc == -1) return CL_EXIT_OK;
    if (rc != CL_OK) return CL_EXIT_USAGE;
    if (a.npos != 1) return cl_ctl_usage(ctx, "consume needs one topic name");
    cl_err_t e;
    cl_err_clear(&e);
    consume_state_t s = { ctx, cl_args_get(&a, "--format"), -1, -1 };
    if (!s.fmt) s.fmt = "%v\\n";
    int64_t v = 0;
    const char *opt;
    if ((opt = cl_args_get(&a, "--count"))) {
        if (cl_parse_i64(opt, 1, INT64_MAX, &v, "--count", &e) != CL_OK) return cl_ctl_fail(ctx, &e);
        s.left = v;
    }
    if ((opt = cl_args_get(&a, "--partition"))) {
        if (cl_parse_i64(opt, 0, INT32_MAX, &v, "--partition", &e) != CL_OK) return cl_ctl_fail(ctx, &e);
        s.only_partition = (int32_t)v;
    }
    if (cl_args_count(&a, "--offset") && cl_args_count(&a, "--timestamp"))
        return cl_ctl_usage(ctx, "--offset and --timestamp exclude each other");
    /* every number is checked before connecting: usage errors exit 2 even
     * when no broker is up */
    if ((opt = cl_args_get(&a, "--offset")) && cl_parse_i64(opt, 0, INT64_MAX, &v, "--offset", &e) != CL_OK)
        return cl_ctl_fail(ctx, &e);
    if ((opt = cl_args_get(&a, "--timestamp")) && cl_parse_i64(opt, 0, INT64_MAX, &v, "--timestamp", &e) != CL_OK)
        return cl_ctl_fail(ctx, &e);
    if (cl_args_count(&a, "--join") && !cl_args_get(&a, "--group")) return cl_ctl_usage(ctx, "--join needs --group");
    const char *group = cl_args_get(&a, "--group");
    cl_client_t c;
    int ex = cl_ctl_connect(ctx, &c);
    if (ex != CL_EXIT_OK) { cl_client_close(&c); return ex; }
    cl_consumer_t k;
    cl_group_t g;
    memset(&g, 0, sizeof g);
    /* a member joins the group; with --partition (manual assignment) or a
     * broker without JoinGroup, offsets are read and committed memberless */
    bool member = group && cl_args_count(&a, "--join") > 0;
    if (member && s.only_partition >= 0) {
        cl_client_close(&c);
        return cl_ctl_usage(ctx, "--join and --partition exclude each other");
    }
    rc = cl_consumer_open(&k, &c, a.pos[0], &e);
    if (rc == CL_OK && s.only_partition >= k.npartitions)
        rc = cl_err_set(&e, CL_E_USAGE, "--partition %d: topic %s has %d partitions", s.only_partition, a.pos[0], k.npartitions);
    if (rc == CL_OK) cl_consumer_only(&k, s.only_partition);
    if (rc == CL_OK && member) rc = cl_group_init(&g, &c, group, a.pos[0], k.npartitions, &e);
    if (rc == CL_OK) rc = member ? join_and_position(&k, &g, &a, &e) : position(&k, &a, group, &e);
    void (*old_int)(int) = signal(SIGINT, on_stop_signal), (*old_term)(int) = signal(SIGTERM, on_stop_signal);
    if (rc == CL_OK) rc = consume_loop(ctx, &k, member ? &g : NULL, &a, &s, cl_args_count(&a, "--follow") > 0, &e);
    signal(SIGINT, old_int);
    signal(SIGTERM, old_term);
    if (rc == CL_OK && group) rc = commit_active(&k, member ? &g : NULL, group, &e);
    ex = rc == CL_OK ? CL_EXIT_OK : cl_ctl_fail(ctx, &e);
    if (member) cl_group_close(&g);
    cl_consumer_close(&k);
    cl_client_close(&c);
    return ex;
}
