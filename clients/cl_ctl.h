/* cl_ctl.h — skiffctl's command families (ctl_*.c), shared by the
 * skiffctl.c dispatcher and the unit tests.
 *
 * Every command: cl_ctl_<family>(ctx, argc, argv) with argv starting after
 * the family word; returns an exit code (CL_EXIT_*). Errors go to ctx->err
 * as "skiffctl: <message>"; results to ctx->out (table, or JSON with --json).
 */
#ifndef SKIFF_CL_CTL_H
#define SKIFF_CL_CTL_H

#include <stdbool.h>
#include <stdio.h>

#include "clients/cl_args.h"
#include "clients/cl_client.h"
#include "clients/cl_err.h"
#include "clients/cl_props.h"

#define CL_CTL_BROKERS_DEFAULT "127.0.0.1:9092"  /* node 1 of etc/cluster.conf */
#define CL_CTL_ADMIN_DEFAULT "127.0.0.1:9644"

typedef struct cl_ctl {
    const char *brokers;      /* --brokers, else $SKIFF_BROKERS, else default */
    const char *admin;        /* --admin, else $SKIFF_ADMIN, else default */
    bool json;
    int timeout_ms;
    FILE *out, *err;
    FILE *in;                 /* produce reads lines from here */
    bool have_sec;            /* --command-config given: sec holds it */
    cl_sec_t sec;             /* security settings from --command-config */
} cl_ctl_t;

/* Options every command accepts; a command's table starts with these. */
#define CL_CTL_GLOBAL_OPTS \
    { "--brokers", "-b", "HOST:PORT,...", false, "Kafka listeners to bootstrap from (env SKIFF_BROKERS)" }, \
    { "--admin", NULL, "[https://]HOST:PORT", false, "admin HTTP port (env SKIFF_ADMIN)" }, \
    { "--json", NULL, NULL, false, "JSON output for scripts" }, \
    { "--timeout-ms", NULL, "MS", false, "per-request timeout (default 10000)" }, \
    { "--command-config", NULL, "FILE", false, "client properties: security.protocol, sasl.*, ssl.* (librdkafka names)" }, \
    { "--help", "-h", NULL, false, "show this help" }
#define CL_CTL_GLOBAL_NOPTS 6

/* Parses argv against opts, applies the global options to ctx. Returns
 * CL_OK, CL_E_USAGE (message printed), or -1 when --help was printed. */
int cl_ctl_parse(cl_ctl_t *ctx, int argc, char **argv, const cl_opt_t *opts, int nopts, const char *usage,
                 cl_args_t *a);
/* Opens a client on ctx->brokers (with --command-config's security); prints the error and returns its exit
 * code on failure, else 0. */
int cl_ctl_connect(cl_ctl_t *ctx, cl_client_t *c);
/* Prints "skiffctl: <msg>" and returns cl_exit_code(e->status). */
int cl_ctl_fail(cl_ctl_t *ctx, const cl_err_t *e);
/* Prints a usage error and returns CL_EXIT_USAGE. */
int cl_ctl_usage(cl_ctl_t *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int cl_ctl_cluster(cl_ctl_t *ctx, int argc, char **argv);
int cl_ctl_broker(cl_ctl_t *ctx, int argc, char **argv);
int cl_ctl_topic(cl_ctl_t *ctx, int argc, char **argv);
int cl_ctl_produce(cl_ctl_t *ctx, int argc, char **argv);
int cl_ctl_consume(cl_ctl_t *ctx, int argc, char **argv);
int cl_ctl_group(cl_ctl_t *ctx, int argc, char **argv);
int cl_ctl_perf(cl_ctl_t *ctx, int argc, char **argv);
int cl_ctl_txn(cl_ctl_t *ctx, int argc, char **argv);
int cl_ctl_producers(cl_ctl_t *ctx, int argc, char **argv);
int cl_ctl_user(cl_ctl_t *ctx, int argc, char **argv);
int cl_ctl_acl(cl_ctl_t *ctx, int argc, char **argv);
int cl_ctl_feature(cl_ctl_t *ctx, int argc, char **argv);
int cl_ctl_quota(cl_ctl_t *ctx, int argc, char **argv);

/* Top level: argv[0] is the family word. */
int cl_ctl_main(cl_ctl_t *ctx, int argc, char **argv);

/* Formats one consumed record with a kcat-like format: %t topic,
 * %p partition, %o offset, %k key, %v value, %T timestamp, %h headers
 * (k=v,...), %K / %V key / value length, \n \t \\ escapes. */
struct cl_msg;
void cl_ctl_format_msg(FILE *f, const char *fmt, const struct cl_msg *m);

/* A latency sample standing for `weight` records (a batch's records all
 * share its latency). */
typedef struct cl_sample {
    double value;
    int64_t weight;
} cl_sample_t;
/* Weighted nearest-rank percentile: sorts s[0..n) by value and returns the
 * smallest value with at least p% (0 < p <= 100) of the total weight at or
 * below it; 0 when n == 0. */
double cl_ctl_percentile(cl_sample_t *s, size_t n, double p);

#endif
