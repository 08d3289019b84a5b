/* Prometheus text exposition format 0.0.4 for the metrics registry.
 *
 * One pass over the registry; collectors run into a scrape-local list that
 * is sorted and freed here. Cost: O(series) plus a sort of each collector's
 * output (the registry's own series are kept sorted on insertion). */
#include "broker/metrics/metrics_int.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

typedef struct {
    struct evbuffer *out;
    int err;  /* sticky KP_OK / KP_ERR_NOMEM */
} wr_t;

static void put_n(wr_t *w, const char *s, size_t n) {
    if (w->err == KP_OK && n > 0 && evbuffer_add(w->out, s, n) != 0) w->err = KP_ERR_NOMEM;
}

static void put(wr_t *w, const char *s) {
    put_n(w, s, strlen(s));
}

/* Escapes '\\' and '\n', and '"' when `quote` (label values; HELP text
 * escapes only the first two). Runs of plain bytes go out in one add. */
static void put_escaped(wr_t *w, const char *s, bool quote) {
    const char *run = s;
    for (; *s != '\0'; s++) {
        const char *esc = NULL;
        if (*s == '\\') esc = "\\\\";
        else if (*s == '\n') esc = "\\n";
        else if (quote && *s == '"') esc = "\\\"";
        if (esc == NULL) continue;
        put_n(w, run, (size_t)(s - run));
        put(w, esc);
        run = s + 1;
    }
    put_n(w, run, (size_t)(s - run));
}

/* Shortest of %.15g / %.17g that reads back as `v`; the format's spellings
 * for the non-finite values. */
static void fmt_double(char buf[40], double v) {
    if (isnan(v)) { strcpy(buf, "NaN"); return; }
    if (isinf(v)) { strcpy(buf, v > 0 ? "+Inf" : "-Inf"); return; }
    snprintf(buf, 40, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, 40, "%.17g", v);
}

static void put_double(wr_t *w, double v) {
    char buf[40];
    fmt_double(buf, v);
    put(w, buf);
}

static void put_u64(wr_t *w, uint64_t v) {
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    assert(n > 0 && (size_t)n < sizeof buf);
    put_n(w, buf, (size_t)n);
}

static const char *type_name(bk_mx_type_t t) {
    switch (t) {
    case BK_MX_COUNTER: return "counter";
    case BK_MX_GAUGE: return "gauge";
    case BK_MX_HISTOGRAM: return "histogram";
    }
    assert(!"unknown metric type");
    return "untyped";
}

static void put_header(wr_t *w, const char *name, const char *help, bk_mx_type_t t) {
    put(w, "# HELP ");
    put(w, name);
    put(w, " ");
    put_escaped(w, help, false);
    put(w, "\n# TYPE ");
    put(w, name);
    put(w, " ");
    put(w, type_name(t));
    put(w, "\n");
}

/* name{l1="v1",...,le="x"} — `le` NULL for no extra label. Writes no braces
 * when there is no label at all. */
static void put_series_name(wr_t *w, const char *name, const char *suffix,
                            const bk_mx_series_t *s, const char *le) {
    const bk_mx_metric_t *mt = s->metric;
    put(w, name);
    put(w, suffix);
    if (mt->label_count == 0 && le == NULL) return;
    put(w, "{");
    for (uint32_t i = 0; i < mt->label_count; i++) {
        if (i > 0) put(w, ",");
        put(w, mt->labels[i]);
        put(w, "=\"");
        put_escaped(w, s->values[i], true);
        put(w, "\"");
    }
    if (le != NULL) {
        if (mt->label_count > 0) put(w, ",");
        put(w, "le=\"");
        put(w, le);
        put(w, "\"");
    }
    put(w, "}");
}

static void put_histogram(wr_t *w, const bk_mx_series_t *s) {
    const bk_mx_metric_t *mt = s->metric;
    uint64_t cum = 0;
    char le[40];
    for (uint32_t i = 0; i <= mt->bucket_count; i++) {
        cum += s->buckets[i];
        if (i < mt->bucket_count) fmt_double(le, mt->bounds[i]);
        else strcpy(le, "+Inf");
        put_series_name(w, mt->name, "_bucket", s, le);
        put(w, " ");
        put_u64(w, cum);
        put(w, "\n");
    }
    assert(cum == s->count);
    put_series_name(w, mt->name, "_sum", s, NULL);
    put(w, " ");
    put_double(w, s->sum);
    put(w, "\n");
    put_series_name(w, mt->name, "_count", s, NULL);
    put(w, " ");
    put_u64(w, s->count);
    put(w, "\n");
}

static void put_series(wr_t *w, const bk_mx_series_t *s, bool collected) {
    const bk_mx_metric_t *mt = s->metric;
    if (mt->type == BK_MX_HISTOGRAM) {
        put_histogram(w, s);
        return;
    }
    put_series_name(w, mt->name, "", s, NULL);
    put(w, " ");
    if (collected) put_double(w, s->gauge);
    else if (mt->type == BK_MX_COUNTER) put_u64(w, s->counter);
    else put_double(w, s->fn ? s->fn(s->fn_arg) : s->gauge);
    put(w, "\n");
}

static int cmp_series_ptr(const void *a, const void *b) {
    return bk_mx_series_cmp(*(bk_mx_series_t *const *)a, *(bk_mx_series_t *const *)b);
}

static void put_collected(wr_t *w, bk_mx_metric_t *mt) {
    bk_mx_emit_t e = { .metric = mt };
    mt->collect(&e, mt->collect_arg);
    if (e.count > 1) qsort(e.items, e.count, sizeof *e.items, cmp_series_ptr);
    for (uint32_t i = 0; i < e.count; i++) {
        put_series(w, e.items[i], true);
        free(e.items[i]);
    }
    free(e.items);
}

static void put_metric(wr_t *w, bk_mx_metric_t *mt) {
    put_header(w, mt->name, mt->help, mt->type);
    if (mt->collect != NULL) {
        put_collected(w, mt);
        return;
    }
    for (uint32_t i = 0; i < mt->series_count; i++) {
        assert(i == 0 || bk_mx_series_cmp(mt->series[i - 1], mt->series[i]) < 0);
        put_series(w, mt->series[i], false);
    }
}

/* The registry's own health: one line per metric, in registration order. */
static void put_dropped(wr_t *w, const bk_mx_t *m) {
    static const char name[] = "skiff_metrics_series_dropped_total";
    put_header(w, name,
               "Series not created: over the metric's series bound, invalid label "
               "values, or out of memory.", BK_MX_COUNTER);
    for (uint32_t i = 0; i < m->count; i++) {
        put(w, name);
        put(w, "{metric=\"");
        put(w, m->metrics[i]->name);  /* a metric name needs no escaping */
        put(w, "\"} ");
        put_u64(w, m->metrics[i]->dropped);
        put(w, "\n");
    }
}

int bk_mx_render(bk_mx_t *m, struct evbuffer *out) {
    assert(m != NULL && out != NULL);
    wr_t w = { .out = out, .err = KP_OK };
    for (uint32_t i = 0; i < m->count; i++) put_metric(&w, m->metrics[i]);
    put_dropped(&w, m);
    return w.err;
}
