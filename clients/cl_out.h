/* cl_out.h — skiffctl output: aligned text tables for people, JSON for
 * scripts.
 *
 * Table: rows of cells copied in (bounded by CL_TABLE_ROWS_MAX rows of
 * CL_TABLE_COLS_MAX columns); printed with each column as wide as its
 * widest cell, headers in upper case.
 * JSON: a streaming writer that inserts commas and escapes strings (RFC 8259:
 * quote, backslash and control characters; bytes >= 0x80 are passed through,
 * so UTF-8 stays UTF-8). Nesting is bounded by CL_JSON_DEPTH_MAX.
 */
#ifndef SKIFF_CL_OUT_H
#define SKIFF_CL_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CL_TABLE_COLS_MAX 16
#define CL_TABLE_ROWS_MAX 1000000
#define CL_JSON_DEPTH_MAX 32

typedef struct cl_table {
    int ncols;
    const char *headers[CL_TABLE_COLS_MAX];
    char **cells;             /* nrows * ncols, malloc'd */
    int nrows, cap_rows;
    bool overflow;            /* a row was dropped (bound or malloc) */
} cl_table_t;

/* Headers are not copied (use string literals). */
void cl_table_init(cl_table_t *t, int ncols, const char *const *headers);
/* Adds a row of ncols cells (copied; NULL prints as "-"). */
void cl_table_add(cl_table_t *t, const char *const *cells);
void cl_table_print(const cl_table_t *t, FILE *f);
void cl_table_free(cl_table_t *t);

typedef struct cl_json {
    FILE *f;
    int depth;
    bool first[CL_JSON_DEPTH_MAX];  /* nothing written yet at this level */
    bool after_key;
} cl_json_t;

void cl_json_init(cl_json_t *j, FILE *f);
void cl_json_obj(cl_json_t *j);       /* { */
void cl_json_obj_end(cl_json_t *j);   /* } */
void cl_json_arr(cl_json_t *j);       /* [ */
void cl_json_arr_end(cl_json_t *j);   /* ] */
void cl_json_key(cl_json_t *j, const char *k);
void cl_json_str(cl_json_t *j, const char *s);            /* NULL -> null */
void cl_json_strn(cl_json_t *j, const char *s, size_t n); /* s NULL -> null */
void cl_json_int(cl_json_t *j, int64_t v);
void cl_json_num(cl_json_t *j, double v);
void cl_json_bool(cl_json_t *j, bool v);
void cl_json_null(cl_json_t *j);
/* Ends the top-level value with a newline. */
void cl_json_end(cl_json_t *j);
/* Writes s[0..n) as a quoted, escaped JSON string. */
void cl_json_escape(FILE *f, const char *s, size_t n);

#endif
