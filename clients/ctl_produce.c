/* ctl_produce.c — `skiffctl produce TOPIC`: one record per stdin line.
 *
 * With --key-separator SEP a line "KEY<SEP>VALUE" has a key (a line without
 * SEP is a value with a null key). --header k=v adds headers to every
 * record. Lines are bounded by LINE_MAX_BYTES; a longer line is an error
 * (exit 1) rather than a silently split record.
 */
#include <stdlib.h>
#include <string.h>

#include "clients/cl_ctl.h"
#include "clients/cl_out.h"
#include "clients/cl_producer.h"

#define LINE_MAX_BYTES ((size_t)1 << 20)

static const cl_opt_t produce_opts[] = {
    CL_CTL_GLOBAL_OPTS,
    { "--key-separator", "-K", "SEP", false, "split each line into KEY SEP VALUE" },
    { "--header", "-H", "KEY=VALUE", true, "add a header to every record" },
    { "--compression", "-z", "CODEC", false, "none|gzip|snappy|lz4|zstd (default none)" },
    { "--acks", "-a", "ACKS", false, "0, 1 or all (default all)" },
    { "--partition", "-p", "N", false, "send every record to partition N" },
    { "--idempotent", NULL, NULL, false, "idempotent producer (InitProducerId + sequences; needs acks=all)" },
    { "--batch-bytes", NULL, "SIZE", false, "max uncompressed batch size per partition (default 256k)" },
};
#define PRODUCE_NOPTS ((int)(sizeof produce_opts / sizeof produce_opts[0]))

/* Fills producer options from the shared produce/perf flags. */
int cl_ctl_producer_opts(cl_ctl_t *ctx, const cl_args_t *a, cl_producer_opts_t *o, cl_err_t *e);

int cl_ctl_producer_opts(cl_ctl_t *ctx, const cl_args_t *a, cl_producer_opts_t *o, cl_err_t *e) {
    *o = cl_producer_opts_default();
    o->timeout_ms = ctx->timeout_ms;
    const char *v;
    if ((v = cl_args_get(a, "--compression"))) {
        int codec = cl_codec_parse(v);
        if (codec < 0) return cl_err_set(e, CL_E_USAGE, "--compression: unknown codec '%s'", v);
        o->codec = (kp_codec_t)codec;
    }
    if ((v = cl_args_get(a, "--acks")) && cl_parse_acks(v, &o->acks, e) != CL_OK) return CL_E_USAGE;
    if ((v = cl_args_get(a, "--batch-bytes"))) {
        int64_t b = 0;
        if (cl_parse_size(v, &b, "--batch-bytes", e) != CL_OK) return CL_E_USAGE;
        if (b < 1024 || b > (64 << 20)) return cl_err_set(e, CL_E_USAGE, "--batch-bytes must be in [1k, 64m]");
        o->batch_bytes_max = (size_t)b;
    }
    o->idempotent = cl_args_count(a, "--idempotent") > 0;
    return CL_OK;
}

static int split_headers(const cl_args_t *a, kp_header_in_t *h, int *n, cl_err_t *e) {
    *n = cl_args_count(a, "--header");
    for (int i = 0; i < *n; i++) {
        const char *s = cl_args_at(a, "--header", i);
        const char *eq = strchr(s, '=');
        if (!eq || eq == s) return cl_err_set(e, CL_E_USAGE, "--header '%s' is not key=value", s);
        h[i].key.p = (const uint8_t *)s;
        h[i].key.len = (size_t)(eq - s);
        h[i].value.p = (const uint8_t *)eq + 1;
        h[i].value.len = strlen(eq + 1);
    }
    return CL_OK;
}

static int produce_lines(cl_ctl_t *ctx, cl_producer_t *p, const char *sep, int32_t partition,
                         const kp_header_in_t *hdrs, int nh, int64_t *count, cl_err_t *e) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = CL_OK;
    size_t seplen = sep ? strlen(sep) : 0;
    while (rc == CL_OK && (len = getline(&line, &cap, ctx->in)) >= 0) {
        if (len > 0 && line[len - 1] == '\n') line[--len] = '\0';
        if ((size_t)len > LINE_MAX_BYTES) { rc = cl_err_set(e, CL_E_IO, "line %lld longer than %zu bytes", (long long)*count + 1, LINE_MAX_BYTES); break; }
        kp_bytes_t key = kp_slice_null(), val = { (const uint8_t *)line, (size_t)len };
        char *at = seplen ? strstr(line, sep) : NULL;
        if (at) {
            key.p = (const uint8_t *)line;
            key.len = (size_t)(at - line);
            val.p = (const uint8_t *)at + seplen;
            val.len = (size_t)len - key.len - seplen;
        }
        rc = cl_producer_send(p, partition, key, val, hdrs, nh, -1, e);
        if (rc == CL_OK) (*count)++;
    }
    free(line);
    if (rc == CL_OK && ferror(ctx->in)) rc = cl_err_set(e, CL_E_IO, "error reading stdin");
    int frc = cl_producer_flush(p, rc == CL_OK ? e : NULL);
    return rc != CL_OK ? rc : frc;
}

int cl_ctl_produce(cl_ctl_t *ctx, int argc, char **argv) {
    cl_args_t a;
    int rc = cl_ctl_parse(ctx, argc, argv, produce_opts, PRODUCE_NOPTS,
                          "skiffctl produce TOPIC [options] < lines", &a);
    if (rc == -1) return CL_EXIT_OK;
    if (rc != CL_OK) return CL_EXIT_USAGE;
    if (a.npos != 1) return cl_ctl_usage(ctx, "produce needs one topic name");
    cl_err_t e;
    cl_err_clear(&e);
    cl_producer_opts_t po;
    kp_header_in_t hdrs[CL_ARGS_REPEAT_MAX];
    int nh = 0;
    int64_t part = -1;
    const char *v = cl_args_get(&a, "--partition");
    if (cl_ctl_producer_opts(ctx, &a, &po, &e) != CL_OK || split_headers(&a, hdrs, &nh, &e) != CL_OK ||
        (v && cl_parse_i64(v, 0, INT32_MAX, &part, "--partition", &e) != CL_OK))
        return cl_ctl_fail(ctx, &e);
    if (po.idempotent && po.acks != -1) return cl_ctl_usage(ctx, "--idempotent needs --acks all");
    cl_client_t c;
    int ex = cl_ctl_connect(ctx, &c);
    if (ex != CL_EXIT_OK) { cl_client_close(&c); return ex; }
    cl_producer_t p;
    int64_t count = 0;
    rc = cl_producer_open(&p, &c, a.pos[0], &po, &e);
    if (rc == CL_OK) rc = produce_lines(ctx, &p, cl_args_get(&a, "--key-separator"), (int32_t)part, hdrs, nh, &count, &e);
    if (ctx->json)
        fprintf(ctx->out, "{\"topic\":\"%s\",\"read\":%lld,\"acked\":%lld,\"failed\":%lld}\n", a.pos[0], (long long)count,
                (long long)p.acked_records, (long long)p.failed_records);
    else if (rc == CL_OK)
        fprintf(ctx->out, "produced %lld records to %s\n", (long long)p.acked_records, a.pos[0]);
    ex = rc == CL_OK ? CL_EXIT_OK : cl_ctl_fail(ctx, &e);
    cl_producer_close(&p);
    cl_client_close(&c);
    return ex;
}
