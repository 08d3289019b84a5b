/* Metrics hot path and scrape cost: ns per counter increment and per
 * histogram observation through a held handle, and the time to render the
 * catalogue with ~1000 per-topic series and a 1000-row collector. Fixed
 * iteration counts (well under a second in total); never asserts on time. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <event2/buffer.h>

#include "broker/metrics_catalogue.h"

#define OPS 20000000u
#define TOPICS 1000u
#define RENDERS 20u

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sizes(bk_mx_emit_t *e, void *arg) {
    for (unsigned i = 0; i < TOPICS; i++) {
        char t[16];
        snprintf(t, sizeof t, "t%04u", i);
        bk_mx_emit(e, (const char *[]){ t, "0" }, (double)i * 4096);
    }
}

int main(void) {
    bk_metrics_t *m = bk_metrics_new();
    if (m == NULL || bk_mx_catalogue_register(m) != KP_OK) return 1;
    bk_mx_series_t *c = bk_mx_series(m, BK_MX_REQUESTS_TOTAL, (const char *[]){ "Produce" });
    bk_mx_series_t *h = bk_mx_series(m, BK_MX_REQUEST_LATENCY_SECONDS,
                                     (const char *[]){ "Produce" });
    double t0 = now_s();
    for (unsigned i = 0; i < OPS; i++) bk_mx_inc(c, 1);
    double t1 = now_s();
    for (unsigned i = 0; i < OPS; i++) bk_mx_observe(h, (double)(i & 1023) * 1e-4);
    double t2 = now_s();
    printf("counter inc: %.2f ns/op; histogram observe: %.2f ns/op (total %llu)\n",
           (t1 - t0) * 1e9 / OPS, (t2 - t1) * 1e9 / OPS,
           (unsigned long long)(bk_mx_counter_value(c) + bk_mx_histogram_count(h)));
    for (unsigned i = 0; i < TOPICS; i++) {
        char t[16];
        snprintf(t, sizeof t, "t%04u", i);
        bk_mx_inc(bk_mx_series(m, BK_MX_BYTES_IN_TOTAL, (const char *[]){ t }), i);
    }
    bk_mx_set_collector(m, BK_MX_LOG_SIZE_BYTES, sizes, NULL);
    size_t bytes = 0;
    double t3 = now_s();
    for (unsigned r = 0; r < RENDERS; r++) {
        struct evbuffer *b = evbuffer_new();
        if (b == NULL || bk_metrics_render(m, b) != KP_OK) return 1;
        bytes = evbuffer_get_length(b);
        evbuffer_free(b);
    }
    double t4 = now_s();
    printf("render: %.3f ms per scrape, %zu bytes (%u topic series + %u collected)\n",
           (t4 - t3) * 1e3 / RENDERS, bytes, TOPICS, TOPICS);
    bk_metrics_free(m);
    return 0;
}
