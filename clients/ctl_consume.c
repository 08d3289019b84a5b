/* ctl_consume.c — `skiffctl consume TOPIC`.
 *
 * Start: --from-beginning, --offset N (with --partition), --timestamp MS,
 * --group G (the group's committed offsets, else --from-beginning's or the
 * end; commits the new positions when done — a memberless commit, so the
 * group must have no active members), default: the end. Stops after
 * --count records, or when every partition is caught up unless --follow.
 */
#include <stdlib.h>
#include <string.h>

#include "clients/cl_admin.h"
#include "clients/cl_consumer.h"
#include "clients/cl_ctl.h"
#include "clients/cl_out.h"
#include "protocol/kp_batch.h"

static const cl_opt_t consume_opts[] = {
    CL_CTL_GLOBAL_OPTS,
    { "--from-beginning", NULL, NULL, false, "start at the earliest offset" },
    { "--offset", "-o", "N", false, "start at offset N (of --partition, else of every partition)" },
    { "--timestamp", NULL, "MS", false, "start at the first record with timestamp >= MS" },
    { "--partition", "-p", "N", false, "consume only partition N" },
    { "--group", "-g", "GROUP", false, "start at GROUP's committed offsets and commit when done" },
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

static bool on_msg(void *arg, const cl_msg_t *m) {
    consume_state_t *s = arg;
    if (s->ctx->json) msg_json(s->ctx->out, m);
    else cl_ctl_format_msg(s->ctx->out, s->fmt, m);
    if (s->left > 0) s->left--;
    return s->left != 0;
}

/* Sets the start positions from the options. */
static int position(cl_ctl_t *ctx, cl_consumer_t *k, const cl_args_t *a, const char *group, int32_t only, cl_err_t *e) {
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
        for (int32_t i = 0; i < k->npartitions; i++)
            if (only < 0 || i == only) k->pos[i] = v;
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

static int consume_loop(cl_ctl_t *ctx, cl_consumer_t *k, consume_state_t *s, bool follow, cl_err_t *e) {
    k->only_partition = s->only_partition;
    for (;;) {
        int64_t got = 0;
        int rc = cl_consumer_poll(k, on_msg, s, &got, e);
        fflush(ctx->out);
        if (rc != CL_OK) return rc;
        if (s->left == 0) return CL_OK;
        if (!follow && cl_consumer_at_end(k)) return CL_OK;
    }
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
    const char *group = cl_args_get(&a, "--group");
    cl_client_t c;
    int ex = cl_ctl_connect(ctx, &c);
    if (ex != CL_EXIT_OK) { cl_client_close(&c); return ex; }
    cl_consumer_t k;
    rc = cl_consumer_open(&k, &c, a.pos[0], &e);
    if (rc == CL_OK && s.only_partition >= k.npartitions)
        rc = cl_err_set(&e, CL_E_USAGE, "--partition %d: topic %s has %d partitions", s.only_partition, a.pos[0], k.npartitions);
    if (rc == CL_OK) rc = position(ctx, &k, &a, group, s.only_partition, &e);
    if (rc == CL_OK) rc = consume_loop(ctx, &k, &s, cl_args_count(&a, "--follow") > 0, &e);
    if (rc == CL_OK && group) {
        /* with --partition only that partition was read: commit only it */
        for (int32_t i = 0; s.only_partition >= 0 && i < k.npartitions; i++)
            if (i != s.only_partition) k.pos[i] = -1;
        rc = cl_group_commit_offsets(&c, group, k.topic, k.pos, k.npartitions, &e);
    }
    ex = rc == CL_OK ? CL_EXIT_OK : cl_ctl_fail(ctx, &e);
    cl_consumer_close(&k);
    cl_client_close(&c);
    return ex;
}
