/* ctl_common.c — skiffctl plumbing shared by every command family. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "clients/cl_ctl.h"

int cl_ctl_fail(cl_ctl_t *ctx, const cl_err_t *e) {
    fprintf(ctx->err, "skiffctl: %s\n", e->msg[0] ? e->msg : cl_status_name(e->status));
    return cl_exit_code(e->status);
}

int cl_ctl_usage(cl_ctl_t *ctx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("skiffctl: ", ctx->err);
    vfprintf(ctx->err, fmt, ap);
    fputs(" (see --help)\n", ctx->err);
    va_end(ap);
    return CL_EXIT_USAGE;
}

int cl_ctl_parse(cl_ctl_t *ctx, int argc, char **argv, const cl_opt_t *opts, int nopts, const char *usage,
                 cl_args_t *a) {
    cl_err_t e;
    cl_err_clear(&e);
    if (cl_args_parse(argc, argv, opts, nopts, a, &e) != CL_OK) {
        fprintf(ctx->err, "skiffctl: %s\n", e.msg);
        return CL_E_USAGE;
    }
    if (cl_args_count(a, "--help")) {
        fprintf(ctx->out, "usage: %s\n\noptions:\n", usage);
        cl_args_help(ctx->out, opts, nopts);
        fprintf(ctx->out, "\nexit codes: 0 ok, 1 Kafka or operation error, 2 usage error, 3 cannot connect\n");
        return -1;
    }
    const char *v;
    if ((v = cl_args_get(a, "--brokers"))) ctx->brokers = v;
    if ((v = cl_args_get(a, "--admin"))) ctx->admin = v;
    if (cl_args_count(a, "--json")) ctx->json = true;
    if ((v = cl_args_get(a, "--timeout-ms"))) {
        int64_t ms = 0;
        if (cl_parse_i64(v, 1, 3600 * 1000, &ms, "--timeout-ms", &e) != CL_OK) {
            fprintf(ctx->err, "skiffctl: %s\n", e.msg);
            return CL_E_USAGE;
        }
        ctx->timeout_ms = (int)ms;
    }
    if ((v = cl_args_get(a, "--command-config"))) {
        if (cl_props_load(v, &ctx->sec, &e) != CL_OK) {
            fprintf(ctx->err, "skiffctl: %s\n", e.msg);
            return CL_E_USAGE;
        }
        ctx->have_sec = true;
    }
    return CL_OK;
}

int cl_ctl_connect(cl_ctl_t *ctx, cl_client_t *c) {
    cl_err_t e;
    cl_err_clear(&e);
    if (cl_client_open_sec(c, ctx->brokers, "skiffctl", ctx->timeout_ms, ctx->have_sec ? &ctx->sec : NULL, &e) !=
        CL_OK)
        return cl_ctl_fail(ctx, &e);
    return CL_EXIT_OK;
}

static int cmp_sample(const void *a, const void *b) {
    double x = ((const cl_sample_t *)a)->value, y = ((const cl_sample_t *)b)->value;
    return x < y ? -1 : x > y;
}

double cl_ctl_percentile(cl_sample_t *s, size_t n, double p) {
    if (n == 0) return 0;
    qsort(s, n, sizeof *s, cmp_sample);
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) total += s[i].weight;
    /* nearest rank over the weights: the first sample whose running weight
     * reaches ceil(p% of the total) */
    double need = p / 100.0 * (double)total;
    int64_t acc = 0;
    for (size_t i = 0; i < n; i++) {
        acc += s[i].weight;
        if ((double)acc >= need && acc > 0) return s[i].value;
    }
    return s[n - 1].value;
}
