/* cl_args.c — option table parsing (see cl_args.h). */
#include "clients/cl_args.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int find_opt(const cl_opt_t *opts, int nopts, const char *arg, size_t len) {
    for (int i = 0; i < nopts; i++) {
        if (strlen(opts[i].name) == len && strncmp(opts[i].name, arg, len) == 0) return i;
        if (opts[i].alias && strlen(opts[i].alias) == len && strncmp(opts[i].alias, arg, len) == 0) return i;
    }
    return -1;
}

static int add_value(cl_args_t *out, int idx, const char *v, cl_err_t *e) {
    const cl_opt_t *o = &out->opts[idx];
    if (!o->repeatable) {
        out->val[idx][0] = v; /* the last one given wins */
        out->nval[idx]++;
        return CL_OK;
    }
    if (out->nval[idx] == CL_ARGS_REPEAT_MAX)
        return cl_err_set(e, CL_E_USAGE, "%s given more than %d times", o->name, CL_ARGS_REPEAT_MAX);
    out->val[idx][out->nval[idx]++] = v;
    return CL_OK;
}

int cl_args_parse(int argc, char **argv, const cl_opt_t *opts, int nopts, cl_args_t *out, cl_err_t *e) {
    memset(out, 0, sizeof *out);
    if (nopts > CL_ARGS_OPTS_MAX) return cl_err_set(e, CL_E_USAGE, "too many options declared");
    out->opts = opts;
    out->nopts = nopts;
    bool only_pos = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (only_pos || a[0] != '-' || a[1] == '\0' || (a[1] >= '0' && a[1] <= '9')) {
            if (out->npos == CL_ARGS_POS_MAX) return cl_err_set(e, CL_E_USAGE, "too many arguments");
            out->pos[out->npos++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) { only_pos = true; continue; }
        const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        int idx = find_opt(opts, nopts, a, len);
        if (idx < 0) return cl_err_set(e, CL_E_USAGE, "unknown option '%.*s' (see --help)", (int)len, a);
        const char *v = NULL;
        if (opts[idx].value_name) {
            if (eq) v = eq + 1;
            else if (i + 1 < argc) v = argv[++i];
            else return cl_err_set(e, CL_E_USAGE, "option %s needs a value (%s)", opts[idx].name, opts[idx].value_name);
        } else if (eq) {
            return cl_err_set(e, CL_E_USAGE, "option %s takes no value", opts[idx].name);
        } else {
            v = "";
        }
        int rc = add_value(out, idx, v, e);
        if (rc != CL_OK) return rc;
    }
    return CL_OK;
}

static int index_of(const cl_args_t *a, const char *name) {
    for (int i = 0; i < a->nopts; i++)
        if (strcmp(a->opts[i].name, name) == 0) return i;
    return -1;
}

const char *cl_args_get(const cl_args_t *a, const char *name) {
    int i = index_of(a, name);
    if (i < 0 || a->nval[i] == 0) return NULL;
    return a->opts[i].repeatable ? a->val[i][a->nval[i] - 1] : a->val[i][0];
}

int cl_args_count(const cl_args_t *a, const char *name) {
    int i = index_of(a, name);
    return i < 0 ? 0 : a->nval[i];
}

const char *cl_args_at(const cl_args_t *a, const char *name, int k) {
    int i = index_of(a, name);
    if (i < 0 || k < 0 || k >= a->nval[i] || k >= CL_ARGS_REPEAT_MAX) return NULL;
    return a->val[i][k];
}

int cl_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out, const char *what, cl_err_t *e) {
    char *end = NULL;
    errno = 0;
    long long v = s ? strtoll(s, &end, 10) : 0;
    if (!s || !*s || errno || *end != '\0')
        return cl_err_set(e, CL_E_USAGE, "%s: '%s' is not an integer", what, s ? s : "");
    if (v < lo || v > hi)
        return cl_err_set(e, CL_E_USAGE, "%s: %lld is outside [%lld, %lld]", what, v, (long long)lo, (long long)hi);
    *out = v;
    return CL_OK;
}

int cl_parse_acks(const char *s, int16_t *out, cl_err_t *e) {
    if (strcmp(s, "all") == 0 || strcmp(s, "-1") == 0) { *out = -1; return CL_OK; }
    if (strcmp(s, "0") == 0) { *out = 0; return CL_OK; }
    if (strcmp(s, "1") == 0) { *out = 1; return CL_OK; }
    return cl_err_set(e, CL_E_USAGE, "--acks: '%s' (want 0, 1 or all)", s);
}

int cl_parse_size(const char *s, int64_t *out, const char *what, cl_err_t *e) {
    char buf[32];
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n >= sizeof buf) return cl_err_set(e, CL_E_USAGE, "%s: bad size '%s'", what, s ? s : "");
    memcpy(buf, s, n + 1);
    int64_t mult = 1;
    char last = buf[n - 1];
    if (last == 'k' || last == 'K') mult = 1024;
    else if (last == 'm' || last == 'M') mult = 1024 * 1024;
    else if (last == 'g' || last == 'G') mult = 1024LL * 1024 * 1024;
    if (mult > 1) buf[n - 1] = '\0';
    int64_t v = 0;
    int rc = cl_parse_i64(buf, 0, INT64_MAX / mult, &v, what, e);
    if (rc != CL_OK) return rc;
    *out = v * mult;
    return CL_OK;
}

void cl_args_help(FILE *f, const cl_opt_t *opts, int nopts) {
    for (int i = 0; i < nopts; i++) {
        char left[96];
        snprintf(left, sizeof left, "%s%s%s%s%s", opts[i].name, opts[i].value_name ? " " : "",
                 opts[i].value_name ? opts[i].value_name : "", opts[i].alias ? ", " : "", opts[i].alias ? opts[i].alias : "");
        fprintf(f, "  %-28s %s%s\n", left, opts[i].help, opts[i].repeatable ? " (repeatable)" : "");
    }
}
