/* cl_args.h — command-line parsing for skiffctl.
 *
 * A command declares its options in a table; cl_args_parse sorts argv into
 * positionals and option values. Accepted forms: "--name value",
 * "--name=value", "-x value" (short alias), flags without a value, and "--"
 * to end options. An unknown option or a missing value is CL_E_USAGE with a
 * message naming it. Bounds: CL_ARGS_POS_MAX positionals, CL_ARGS_REPEAT_MAX
 * values per repeatable option.
 */
#ifndef SKIFF_CL_ARGS_H
#define SKIFF_CL_ARGS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "clients/cl_err.h"

#define CL_ARGS_POS_MAX 16
#define CL_ARGS_OPTS_MAX 48
#define CL_ARGS_REPEAT_MAX 64

typedef struct cl_opt {
    const char *name;         /* "--partitions" */
    const char *alias;        /* "-p" or NULL */
    const char *value_name;   /* "N" when the option takes a value, NULL for a flag */
    bool repeatable;
    const char *help;
} cl_opt_t;

typedef struct cl_args {
    const cl_opt_t *opts;     /* the table parsed against (not owned) */
    int nopts;
    const char *pos[CL_ARGS_POS_MAX];
    int npos;
    const char *val[CL_ARGS_OPTS_MAX][CL_ARGS_REPEAT_MAX];
    int nval[CL_ARGS_OPTS_MAX];   /* times each option was given */
} cl_args_t;

/* Parses argv[0..argc) (no program name) against opts[0..nopts). Strings in
 * out point into argv. */
CL_MUST_CHECK int cl_args_parse(int argc, char **argv, const cl_opt_t *opts, int nopts, cl_args_t *out, cl_err_t *e);
/* Last value of option `name`, or NULL when not given. */
const char *cl_args_get(const cl_args_t *a, const char *name);
/* Times `name` was given (flags and options alike). */
int cl_args_count(const cl_args_t *a, const char *name);
/* i-th value of a repeatable option. */
const char *cl_args_at(const cl_args_t *a, const char *name, int i);

/* Parses a decimal integer in [lo, hi]; `what` names it in the message. */
CL_MUST_CHECK int cl_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out, const char *what, cl_err_t *e);
/* Parses acks: "0", "1", "all" or "-1". */
CL_MUST_CHECK int cl_parse_acks(const char *s, int16_t *out, cl_err_t *e);
/* Parses a size with optional k/m/g suffix (powers of 1024). */
CL_MUST_CHECK int cl_parse_size(const char *s, int64_t *out, const char *what, cl_err_t *e);

/* Writes the option table as help lines ("  --name N, -x   help"). */
void cl_args_help(FILE *f, const cl_opt_t *opts, int nopts);

#endif
