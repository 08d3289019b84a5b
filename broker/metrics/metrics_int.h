/* Private structures of the metrics registry, shared by metrics.c (the
 * registry and hot path) and metrics_render.c (the text format). */
#ifndef SKIFF_BROKER_METRICS_INT_H
#define SKIFF_BROKER_METRICS_INT_H

#include <stdbool.h>

#include "broker/metrics/metrics.h"

typedef struct bk_mx_metric bk_mx_metric_t;

struct bk_mx_series {
    bk_mx_metric_t *metric;  /* owner; outlives the series */
    bk_mx_type_t type;       /* copy of metric->type, checked on the hot path */
    bool sink;               /* accepts updates, never rendered */
    uint64_t counter;        /* BK_MX_COUNTER */
    double gauge;            /* BK_MX_GAUGE, or a collector's emitted value */
    bk_mx_value_fn fn;       /* gauge read at render when set */
    void *fn_arg;
    double sum;              /* BK_MX_HISTOGRAM */
    uint64_t count;
    uint64_t *buckets;       /* bucket_count + 1 (last: above every bound),
                                not cumulative; inside this allocation */
    char *values[BK_MX_LABELS_MAX]; /* inside this allocation */
};

struct bk_mx_metric {
    char *name;
    char *help;
    bk_mx_type_t type;
    uint32_t label_count;
    char *labels[BK_MX_LABELS_MAX];
    uint32_t bucket_count;
    double bounds[BK_MX_BUCKETS_MAX];
    uint32_t series_max;
    uint32_t series_count;        /* entries of series[] in use */
    uint32_t series_cap;          /* allocated entries, <= series_max */
    bk_mx_series_t **series;      /* sorted by label values */
    bk_mx_series_t *sink;
    uint64_t dropped;
    bk_mx_collect_fn collect;     /* when set, series[] stays empty */
    void *collect_arg;
};

struct bk_mx {
    uint32_t count;
    bk_mx_metric_t *metrics[BK_MX_METRICS_MAX];
};

/* Collector output of one scrape: series owned by the emit, sorted before
 * rendering and freed after. */
struct bk_mx_emit {
    bk_mx_metric_t *metric;
    bk_mx_series_t **items;
    uint32_t count;
    uint32_t cap;
};

/* A new series of `mt` with copies of values[0..label_count), or NULL when
 * out of memory. The caller has validated the values. */
bk_mx_series_t *bk_mx_series_alloc(bk_mx_metric_t *mt, const char *const *values);

/* True if values[0..n) are acceptable label values (UTF-8, bounded). */
bool bk_mx_values_ok(uint32_t n, const char *const *values);

/* Orders series by label values, label by label, bytewise. */
int bk_mx_series_cmp(const bk_mx_series_t *a, const bk_mx_series_t *b);

#endif
