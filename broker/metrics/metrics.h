/* Metrics registry and Prometheus text rendering (exposition format 0.0.4).
 *
 * A bk_mx_t is owned by the node (no globals) and used only from the
 * node's loop thread: there are no atomics and no locks. Work on a pool
 * thread posts its result to the loop and counts there.
 *
 * Shape:
 *   metric  = name + help + type + label names (+ buckets for a histogram),
 *             registered once; its id is the registration order (0, 1, ...).
 *   series  = one label-value tuple of a metric. bk_mx_series() finds or
 *             creates it and returns a handle that stays valid until
 *             bk_mx_free(). The hot path keeps the handle and calls
 *             bk_mx_inc / bk_mx_set / bk_mx_observe: O(1) (a histogram scans
 *             at most BK_MX_BUCKETS_MAX bounds), no allocation, no lookup.
 *   bounds  = at most `series_max` series per metric (default
 *             BK_MX_SERIES_MAX_DEFAULT). A series that would exceed it, or
 *             whose label values are invalid (not UTF-8, longer than
 *             BK_MX_LABEL_VALUE_MAX_BYTES) or could not be allocated, is not
 *             created: bk_mx_series() returns the metric's sink (a handle that
 *             accepts every update and is never rendered) and counts one drop
 *             in skiff_metrics_series_dropped_total{metric="<name>"}.
 *   values that live elsewhere (partition sizes, purgatory lengths) are read
 *             at scrape time: a per-series callback (bk_mx_set_fn) or a
 *             per-metric collector (bk_mx_set_collector) that emits every
 *             series of the metric on each scrape.
 *
 * Rendering order is deterministic: metrics in registration order, series
 * sorted by their label values (bytewise, label by label), then the built-in
 * drop counter. A histogram renders _bucket{le=...} cumulatively, ending with
 * le="+Inf" (== _count), then _sum and _count. */
#ifndef SKIFF_BROKER_METRICS_H
#define SKIFF_BROKER_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"

struct evbuffer;

/* Bounds: metrics per registry, labels per metric, histogram buckets (without
 * +Inf), bytes per metric/label name, bytes per label value, series per
 * metric (default and hard limit), help text bytes. */
#define BK_MX_METRICS_MAX 128
#define BK_MX_LABELS_MAX 4
#define BK_MX_BUCKETS_MAX 24
#define BK_MX_NAME_MAX_BYTES 96
#define BK_MX_LABEL_VALUE_MAX_BYTES 256
#define BK_MX_SERIES_MAX_DEFAULT 1024
#define BK_MX_SERIES_MAX_LIMIT 65536
#define BK_MX_HELP_MAX_BYTES 512

/* Content-Type of the rendered text. */
#define BK_MX_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

typedef enum { BK_MX_COUNTER = 1, BK_MX_GAUGE = 2, BK_MX_HISTOGRAM = 3 } bk_mx_type_t;

/* A metric's declaration. Strings and `buckets` are copied at registration.
 * name: [a-zA-Z_:][a-zA-Z0-9_:]*; label names: [a-zA-Z_][a-zA-Z0-9_]*, not
 * starting with "__", distinct, and not "le" for a histogram. buckets: only
 * for a histogram, 1..BK_MX_BUCKETS_MAX finite, strictly increasing upper
 * bounds (+Inf is implicit). series_max: 0 = BK_MX_SERIES_MAX_DEFAULT. */
typedef struct bk_mx_desc {
    const char *name;
    const char *help;
    bk_mx_type_t type;
    uint32_t label_count;
    const char *labels[BK_MX_LABELS_MAX];
    uint32_t bucket_count;
    const double *buckets;
    uint32_t series_max;
} bk_mx_desc_t;

typedef struct bk_mx bk_mx_t;
typedef struct bk_mx_series bk_mx_series_t;
typedef struct bk_mx_emit bk_mx_emit_t;

/* Scrape-time value of one series (bk_mx_set_fn). Runs on the loop thread
 * during bk_mx_render; must not touch the registry. */
typedef double (*bk_mx_value_fn)(void *arg);

/* Scrape-time producer of every series of one metric: calls bk_mx_emit()
 * once per series. Runs during bk_mx_render; must not touch the
 * registry other than through `e`. */
typedef void (*bk_mx_collect_fn)(bk_mx_emit_t *e, void *arg);

/* A new empty registry, or NULL when out of memory. Free with
 * bk_mx_free (NULL is a no-op); every handle dies with it. */
bk_mx_t *bk_mx_new(void);
void bk_mx_free(bk_mx_t *m);

/* Registers a metric. On success stores its id (registration order) in
 * *id_out and returns KP_OK. KP_ERR_BAD_VALUE: invalid desc (see
 * bk_mx_desc_t) or the name is already registered; KP_ERR_TOO_LARGE: the
 * registry already holds BK_MX_METRICS_MAX metrics; KP_ERR_NOMEM. */
KP_MUST_CHECK int bk_mx_register(bk_mx_t *m, const bk_mx_desc_t *d,
                                      uint32_t *id_out);

/* The series of metric `id` with label values values[0..label_count)
 * (NUL-terminated, copied; `values` may be NULL for a metric without labels).
 * Creates it (value 0) on first use. Never returns NULL: see "bounds" above
 * for the sink. Not for a metric with a collector (asserted). Cost: a binary
 * search over the metric's series, plus an insertion on first use. */
bk_mx_series_t *bk_mx_series(bk_mx_t *m, uint32_t id, const char *const *values);

/* Hot-path updates; `h` from bk_mx_series. Type mismatches are asserted. */
void bk_mx_inc(bk_mx_series_t *h, uint64_t n);      /* counter += n */
void bk_mx_set(bk_mx_series_t *h, double v);        /* gauge = v */
void bk_mx_add(bk_mx_series_t *h, double delta);    /* gauge += delta */
void bk_mx_observe(bk_mx_series_t *h, double v);    /* histogram; NaN ignored */

/* Current values, for tests and for the JSON endpoints. A gauge with a
 * callback returns the last set value, not the callback's. */
uint64_t bk_mx_counter_value(const bk_mx_series_t *h);
double bk_mx_gauge_value(const bk_mx_series_t *h);
uint64_t bk_mx_histogram_count(const bk_mx_series_t *h);

/* True if `h` is a metric's sink (the series was not created). */
int bk_mx_is_sink(const bk_mx_series_t *h);

/* Makes gauge series `h` read fn(arg) at each render instead of its stored
 * value. `arg` is borrowed and must outlive the registry or be cleared with
 * bk_mx_set_fn(h, NULL, NULL) before it goes. No-op on a sink. */
void bk_mx_set_fn(bk_mx_series_t *h, bk_mx_value_fn fn, void *arg);

/* Makes metric `id` (a counter or gauge without series of its own) render
 * whatever fn(e, arg) emits at each scrape, for the rest of the registry's
 * life (fn is not NULL; set once; an unlabelled metric's pre-created series
 * is freed, so no handle to it may be held). `arg` is borrowed and must
 * outlive the registry. Emitted series are bounded by the metric's series_max;
 * excess and invalid ones are dropped and counted. */
void bk_mx_set_collector(bk_mx_t *m, uint32_t id, bk_mx_collect_fn fn, void *arg);

/* Inside a collector: one series with label values values[0..label_count)
 * (copied) and value v. Emitting the same label values twice renders both
 * (the collector's bug, not checked). */
void bk_mx_emit(bk_mx_emit_t *e, const char *const *values, double v);

/* Series dropped so far for metric `id` (overflow, invalid labels, NOMEM). */
uint64_t bk_mx_dropped(const bk_mx_t *m, uint32_t id);

/* Appends the whole registry to `out` in the text exposition format 0.0.4.
 * Evaluates callbacks and collectors (a collector row that cannot be held
 * is dropped and counted, like any other drop). Returns KP_OK, or
 * KP_ERR_NOMEM when `out` could not grow (the output is then incomplete and
 * must not be served). */
KP_MUST_CHECK int bk_mx_render(bk_mx_t *m, struct evbuffer *out);

#endif
