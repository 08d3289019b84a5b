/* Metrics registry: registration, series lookup, hot-path updates and the
 * scrape-time collectors' emit. Rendering lives in metrics_render.c. */
#include "broker/metrics/metrics_int.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- checks */

static bool name_char_ok(char c, bool first, bool colon_ok) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
    if (colon_ok && c == ':') return true;
    return !first && c >= '0' && c <= '9';
}

static bool name_ok(const char *s, bool colon_ok) {
    if (s == NULL || s[0] == '\0' || strlen(s) > BK_MX_NAME_MAX_BYTES) return false;
    for (size_t i = 0; s[i] != '\0'; i++) {
        if (!name_char_ok(s[i], i == 0, colon_ok)) return false;
    }
    return true;
}

/* Length of the valid UTF-8 sequence at s[0..n) (n >= 1), or 0 if invalid
 * (overlong forms, surrogates, above U+10FFFF, truncated). */
static size_t utf8_seq_len(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf) { len = 2; cp = c & 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { len = 3; cp = c & 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { len = 4; cp = c & 0x07; }
    else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) return 0;
    if (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) return 0;
    return len;
}

static bool utf8_ok(const char *s, size_t max_bytes) {
    size_t n = strlen(s);
    if (n > max_bytes) return false;
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t l = utf8_seq_len(p + i, n - i);
        if (l == 0) return false;
        i += l;
    }
    return true;
}

bool bk_mx_values_ok(uint32_t n, const char *const *values) {
    assert(n <= BK_MX_LABELS_MAX);
    for (uint32_t i = 0; i < n; i++) {
        assert(values[i] != NULL);
        if (!utf8_ok(values[i], BK_MX_LABEL_VALUE_MAX_BYTES)) return false;
    }
    return true;
}

static bool labels_ok(const bk_mx_desc_t *d) {
    if (d->label_count > BK_MX_LABELS_MAX) return false;
    for (uint32_t i = 0; i < d->label_count; i++) {
        const char *l = d->labels[i];
        if (!name_ok(l, false) || strncmp(l, "__", 2) == 0) return false;
        if (d->type == BK_MX_HISTOGRAM && strcmp(l, "le") == 0) return false;
        for (uint32_t j = 0; j < i; j++) {
            if (strcmp(l, d->labels[j]) == 0) return false;
        }
    }
    return true;
}

static bool buckets_ok(const bk_mx_desc_t *d) {
    if (d->type != BK_MX_HISTOGRAM) return d->bucket_count == 0 && d->buckets == NULL;
    if (d->bucket_count == 0 || d->bucket_count > BK_MX_BUCKETS_MAX || d->buckets == NULL)
        return false;
    for (uint32_t i = 0; i < d->bucket_count; i++) {
        if (!isfinite(d->buckets[i])) return false;
        if (i > 0 && !(d->buckets[i] > d->buckets[i - 1])) return false;
    }
    return true;
}

static bool desc_ok(const bk_mx_t *m, const bk_mx_desc_t *d) {
    if (d->type != BK_MX_COUNTER && d->type != BK_MX_GAUGE && d->type != BK_MX_HISTOGRAM)
        return false;
    if (!name_ok(d->name, true) || d->help == NULL) return false;
    if (!utf8_ok(d->help, BK_MX_HELP_MAX_BYTES)) return false;
    if (d->series_max > BK_MX_SERIES_MAX_LIMIT) return false;
    if (!labels_ok(d) || !buckets_ok(d)) return false;
    for (uint32_t i = 0; i < m->count; i++) {
        if (strcmp(m->metrics[i]->name, d->name) == 0) return false;
    }
    return true;
}

/* ------------------------------------------------------------- lifetime */

bk_mx_t *bk_mx_new(void) {
    return calloc(1, sizeof(bk_mx_t));
}

static void metric_free(bk_mx_metric_t *mt) {
    if (mt == NULL) return;
    for (uint32_t i = 0; i < mt->series_count; i++) free(mt->series[i]);
    free(mt->series);
    free(mt->sink);
    for (uint32_t i = 0; i < mt->label_count; i++) free(mt->labels[i]);
    free(mt->name);
    free(mt->help);
    free(mt);
}

void bk_mx_free(bk_mx_t *m) {
    if (m == NULL) return;
    for (uint32_t i = 0; i < m->count; i++) metric_free(m->metrics[i]);
    free(m);
}

bk_mx_series_t *bk_mx_series_alloc(bk_mx_metric_t *mt, const char *const *values) {
    size_t nb = mt->type == BK_MX_HISTOGRAM ? (size_t)mt->bucket_count + 1 : 0;
    size_t size = sizeof(bk_mx_series_t) + nb * sizeof(uint64_t);
    for (uint32_t i = 0; i < mt->label_count; i++) size += strlen(values[i]) + 1;
    bk_mx_series_t *s = calloc(1, size);
    if (s == NULL) return NULL;
    s->metric = mt;
    s->type = mt->type;
    char *p = (char *)(s + 1);
    if (nb > 0) {
        s->buckets = (uint64_t *)(void *)p;
        p += nb * sizeof(uint64_t);
    }
    for (uint32_t i = 0; i < mt->label_count; i++) {
        size_t n = strlen(values[i]) + 1;
        memcpy(p, values[i], n);
        s->values[i] = p;
        p += n;
    }
    assert(p == (char *)s + size);
    return s;
}

static bk_mx_metric_t *metric_new(const bk_mx_desc_t *d) {
    bk_mx_metric_t *mt = calloc(1, sizeof *mt);
    if (mt == NULL) return NULL;
    mt->type = d->type;
    mt->series_max = d->series_max ? d->series_max : BK_MX_SERIES_MAX_DEFAULT;
    mt->name = strdup(d->name);
    mt->help = strdup(d->help);
    bool ok = mt->name != NULL && mt->help != NULL;
    for (uint32_t i = 0; i < d->label_count; i++) {
        mt->labels[i] = strdup(d->labels[i]);
        mt->label_count = i + 1;
        ok = ok && mt->labels[i] != NULL;
    }
    mt->bucket_count = d->bucket_count;
    if (d->bucket_count > 0)
        memcpy(mt->bounds, d->buckets, d->bucket_count * sizeof(double));
    if (ok) {
        static const char *const sink_values[BK_MX_LABELS_MAX] = { "", "", "", "" };
        mt->sink = bk_mx_series_alloc(mt, sink_values);
        ok = mt->sink != NULL;
    }
    if (!ok) {
        metric_free(mt);
        return NULL;
    }
    mt->sink->sink = true;
    return mt;
}

int bk_mx_register(bk_mx_t *m, const bk_mx_desc_t *d, uint32_t *id_out) {
    assert(m != NULL && d != NULL && id_out != NULL);
    if (!desc_ok(m, d)) return KP_ERR_BAD_VALUE;
    if (m->count == BK_MX_METRICS_MAX) return KP_ERR_TOO_LARGE;
    bk_mx_metric_t *mt = metric_new(d);
    if (mt == NULL) return KP_ERR_NOMEM;
    /* A metric without labels has exactly one series: create it now so it
     * renders (as 0) before its first update. */
    if (mt->label_count == 0) {
        mt->series = calloc(1, sizeof *mt->series);
        mt->series_cap = 1;
        bk_mx_series_t *s = mt->series ? bk_mx_series_alloc(mt, NULL) : NULL;
        if (s == NULL) {
            metric_free(mt);
            return KP_ERR_NOMEM;
        }
        mt->series[0] = s;
        mt->series_count = 1;
    }
    *id_out = m->count;
    m->metrics[m->count++] = mt;
    return KP_OK;
}

/* --------------------------------------------------------------- series */

int bk_mx_series_cmp(const bk_mx_series_t *a, const bk_mx_series_t *b) {
    assert(a->metric == b->metric);
    for (uint32_t i = 0; i < a->metric->label_count; i++) {
        int c = strcmp(a->values[i], b->values[i]);
        if (c != 0) return c;
    }
    return 0;
}

static int values_cmp(const bk_mx_metric_t *mt, const char *const *values,
                      const bk_mx_series_t *s) {
    for (uint32_t i = 0; i < mt->label_count; i++) {
        int c = strcmp(values[i], s->values[i]);
        if (c != 0) return c;
    }
    return 0;
}

/* Index of the first series not below `values`; *found if it is equal. */
static uint32_t series_search(const bk_mx_metric_t *mt, const char *const *values, bool *found) {
    uint32_t lo = 0, hi = mt->series_count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (values_cmp(mt, values, mt->series[mid]) > 0) lo = mid + 1;
        else hi = mid;
    }
    *found = lo < mt->series_count && values_cmp(mt, values, mt->series[lo]) == 0;
    return lo;
}

static bool series_room(bk_mx_metric_t *mt) {
    if (mt->series_count == mt->series_max) return false;
    if (mt->series_count < mt->series_cap) return true;
    uint32_t cap = mt->series_cap ? mt->series_cap * 2 : 8;
    if (cap > mt->series_max) cap = mt->series_max;
    bk_mx_series_t **n = realloc(mt->series, cap * sizeof *n);
    if (n == NULL) return false;
    mt->series = n;
    mt->series_cap = cap;
    return true;
}

bk_mx_series_t *bk_mx_series(bk_mx_t *m, uint32_t id, const char *const *values) {
    assert(m != NULL && id < m->count);
    bk_mx_metric_t *mt = m->metrics[id];
    assert(mt->collect == NULL);
    assert(values != NULL || mt->label_count == 0);
    if (mt->label_count == 0) return mt->series[0];
    if (!bk_mx_values_ok(mt->label_count, values)) goto drop;
    bool found;
    uint32_t at = series_search(mt, values, &found);
    if (found) return mt->series[at];
    if (!series_room(mt)) goto drop;
    bk_mx_series_t *s = bk_mx_series_alloc(mt, values);
    if (s == NULL) goto drop;
    memmove(&mt->series[at + 1], &mt->series[at],
            (mt->series_count - at) * sizeof *mt->series);
    mt->series[at] = s;
    mt->series_count++;
    assert(mt->series_count <= mt->series_max);
    return s;
drop:
    mt->dropped++;
    return mt->sink;
}

/* -------------------------------------------------------------- updates */

void bk_mx_inc(bk_mx_series_t *h, uint64_t n) {
    assert(h->type == BK_MX_COUNTER);
    h->counter += n;
}

void bk_mx_set(bk_mx_series_t *h, double v) {
    assert(h->type == BK_MX_GAUGE);
    h->gauge = v;
}

void bk_mx_add(bk_mx_series_t *h, double delta) {
    assert(h->type == BK_MX_GAUGE);
    h->gauge += delta;
}

/* Linear scan over at most BK_MX_BUCKETS_MAX bounds: with ~15 latency
 * buckets it beats a binary search's branch misses; bounded either way. */
void bk_mx_observe(bk_mx_series_t *h, double v) {
    assert(h->type == BK_MX_HISTOGRAM);
    if (isnan(v)) return;
    const bk_mx_metric_t *mt = h->metric;
    uint32_t i = 0;
    while (i < mt->bucket_count && v > mt->bounds[i]) i++;
    h->buckets[i]++;
    h->count++;
    h->sum += v;
}

uint64_t bk_mx_counter_value(const bk_mx_series_t *h) {
    assert(h->type == BK_MX_COUNTER);
    return h->counter;
}

double bk_mx_gauge_value(const bk_mx_series_t *h) {
    assert(h->type == BK_MX_GAUGE);
    return h->gauge;
}

uint64_t bk_mx_histogram_count(const bk_mx_series_t *h) {
    assert(h->type == BK_MX_HISTOGRAM);
    return h->count;
}

int bk_mx_is_sink(const bk_mx_series_t *h) {
    return h->sink;
}

uint64_t bk_mx_dropped(const bk_mx_t *m, uint32_t id) {
    assert(m != NULL && id < m->count);
    return m->metrics[id]->dropped;
}

/* ----------------------------------------------------------- scrape time */

void bk_mx_set_fn(bk_mx_series_t *h, bk_mx_value_fn fn, void *arg) {
    assert(h->type == BK_MX_GAUGE);
    if (h->sink) return;
    h->fn = fn;
    h->fn_arg = fn ? arg : NULL;
}

void bk_mx_set_collector(bk_mx_t *m, uint32_t id, bk_mx_collect_fn fn, void *arg) {
    assert(m != NULL && id < m->count);
    bk_mx_metric_t *mt = m->metrics[id];
    assert(mt->type == BK_MX_COUNTER || mt->type == BK_MX_GAUGE);
    assert(fn != NULL);            /* for the metric's lifetime: no way back */
    assert(mt->collect == NULL);
    /* A labelled metric must not have series of its own; an unlabelled one
     * drops its pre-created series (nobody may hold its handle). */
    assert(mt->label_count == 0 || mt->series_count == 0);
    for (uint32_t i = 0; i < mt->series_count; i++) free(mt->series[i]);
    mt->series_count = 0;
    mt->collect = fn;
    mt->collect_arg = arg;
}

static bool emit_room(bk_mx_emit_t *e) {
    if (e->count == e->metric->series_max) return false;
    if (e->count < e->cap) return true;
    uint32_t cap = e->cap ? e->cap * 2 : 16;
    if (cap > e->metric->series_max) cap = e->metric->series_max;
    bk_mx_series_t **n = realloc(e->items, cap * sizeof *n);
    if (n == NULL) return false;
    e->items = n;
    e->cap = cap;
    return true;
}

void bk_mx_emit(bk_mx_emit_t *e, const char *const *values, double v) {
    bk_mx_metric_t *mt = e->metric;
    assert(values != NULL || mt->label_count == 0);
    if (!bk_mx_values_ok(mt->label_count, values) || !emit_room(e)) {
        mt->dropped++;
        return;
    }
    bk_mx_series_t *s = bk_mx_series_alloc(mt, values);
    if (s == NULL) {
        mt->dropped++;
        return;
    }
    s->gauge = v;
    e->items[e->count++] = s;
}
