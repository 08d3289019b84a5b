/* cl_out.c — tables and JSON (see cl_out.h). */
#include "clients/cl_out.h"

#include <assert.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

void cl_table_init(cl_table_t *t, int ncols, const char *const *headers) {
    assert(ncols > 0 && ncols <= CL_TABLE_COLS_MAX);
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    for (int i = 0; i < ncols; i++) t->headers[i] = headers[i];
}

void cl_table_add(cl_table_t *t, const char *const *cells) {
    if (t->nrows == CL_TABLE_ROWS_MAX) { t->overflow = true; return; }
    if (t->nrows == t->cap_rows) {
        int cap = t->cap_rows ? t->cap_rows * 2 : 16;
        char **p = realloc(t->cells, sizeof *p * (size_t)cap * (size_t)t->ncols);
        if (!p) { t->overflow = true; return; }
        t->cells = p;
        t->cap_rows = cap;
    }
    for (int c = 0; c < t->ncols; c++) t->cells[t->nrows * t->ncols + c] = strdup(cells[c] ? cells[c] : "-");
    t->nrows++;
}

void cl_table_print(const cl_table_t *t, FILE *f) {
    size_t w[CL_TABLE_COLS_MAX];
    for (int c = 0; c < t->ncols; c++) w[c] = strlen(t->headers[c]);
    for (int r = 0; r < t->nrows; r++)
        for (int c = 0; c < t->ncols; c++) {
            const char *s = t->cells[r * t->ncols + c];
            size_t n = s ? strlen(s) : 1;
            if (n > w[c]) w[c] = n;
        }
    for (int c = 0; c < t->ncols; c++) {
        for (const char *h = t->headers[c]; *h; h++) fputc(toupper((unsigned char)*h), f);
        if (c + 1 < t->ncols) fprintf(f, "%*s", (int)(w[c] - strlen(t->headers[c]) + 2), "");
    }
    fputc('\n', f);
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *s = t->cells[r * t->ncols + c];
            if (!s) s = "?"; /* strdup failed */
            if (c + 1 < t->ncols) fprintf(f, "%-*s  ", (int)w[c], s);
            else fputs(s, f);
        }
        fputc('\n', f);
    }
    if (t->overflow) fprintf(f, "(some rows were not shown)\n");
}

void cl_table_free(cl_table_t *t) {
    for (int i = 0; i < t->nrows * t->ncols; i++) free(t->cells[i]);
    free(t->cells);
    t->cells = NULL;
    t->nrows = t->cap_rows = 0;
}

void cl_json_escape(FILE *f, const char *s, size_t n) {
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default:
            if (c < 0x20 || c == 0x7f) fprintf(f, "\\u%04x", c);
            else fputc(c, f);
        }
    }
    fputc('"', f);
}

void cl_json_init(cl_json_t *j, FILE *f) {
    memset(j, 0, sizeof *j);
    j->f = f;
    j->first[0] = true;
}

/* Comma before a value unless it follows a key or opens a level. */
static void before_value(cl_json_t *j) {
    if (j->after_key) { j->after_key = false; return; }
    if (!j->first[j->depth]) fputc(',', j->f);
    j->first[j->depth] = false;
}

static void open_level(cl_json_t *j, char ch) {
    before_value(j);
    fputc(ch, j->f);
    assert(j->depth + 1 < CL_JSON_DEPTH_MAX);
    j->depth++;
    j->first[j->depth] = true;
}

static void close_level(cl_json_t *j, char ch) {
    assert(j->depth > 0);
    j->depth--;
    fputc(ch, j->f);
}

void cl_json_obj(cl_json_t *j) { open_level(j, '{'); }
void cl_json_obj_end(cl_json_t *j) { close_level(j, '}'); }
void cl_json_arr(cl_json_t *j) { open_level(j, '['); }
void cl_json_arr_end(cl_json_t *j) { close_level(j, ']'); }

void cl_json_key(cl_json_t *j, const char *k) {
    before_value(j);
    cl_json_escape(j->f, k, strlen(k));
    fputc(':', j->f);
    j->after_key = true;
}

void cl_json_strn(cl_json_t *j, const char *s, size_t n) {
    before_value(j);
    if (s) cl_json_escape(j->f, s, n);
    else fputs("null", j->f);
}

void cl_json_str(cl_json_t *j, const char *s) { cl_json_strn(j, s, s ? strlen(s) : 0); }

void cl_json_int(cl_json_t *j, int64_t v) {
    before_value(j);
    fprintf(j->f, "%lld", (long long)v);
}

void cl_json_num(cl_json_t *j, double v) {
    before_value(j);
    fprintf(j->f, "%.3f", v);
}

void cl_json_bool(cl_json_t *j, bool v) {
    before_value(j);
    fputs(v ? "true" : "false", j->f);
}

void cl_json_null(cl_json_t *j) {
    before_value(j);
    fputs("null", j->f);
}

void cl_json_end(cl_json_t *j) {
    assert(j->depth == 0);
    fputc('\n', j->f);
}
