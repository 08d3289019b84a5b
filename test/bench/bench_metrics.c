/* Metrics hot path and scrape cost: ns per counter increment and per
 * histogram observation through a held handle, and the time to render the
 * catalogue with ~1000 per-topic series and a 1000-row collector. Fixed
 * iteration counts (well under a second in total); never asserts on time. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <event2/buffer.h>

#include "broker/metrics/metrics_catalogue.h"
#include "broker/api/resp_errors.h"
#include "kp_msgs.h"

#define OPS 20000000u
#define TOPICS 1000u
#define RENDERS 20u
#define LOOKUPS 2000000u
#define WALKS 200000u

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

static void count_code(void *ctx, int16_t code) { *(uint64_t *)ctx += (uint64_t)code; }

/* The error-code walk every response now gets (resp_errors.c), over a
 * Produce response of 1 and of 100 partitions without errors. */
static void bench_resp_errors(void) {
    static kp_produce_response_partition_produce_response_t ps[100];
    for (unsigned i = 0; i < 100; i++) kp_produce_response_partition_produce_response_init(&ps[i]);
    kp_produce_response_topic_produce_response_t t;
    kp_produce_response_topic_produce_response_init(&t);
    t.partition_responses.items = ps;
    kp_produce_response_t r;
    kp_produce_response_init(&r);
    r.responses.items = &t;
    r.responses.count = 1;
    uint64_t sink = 0;
    for (int32_t np = 1; np <= 100; np += 99) {
        t.partition_responses.count = np;
        double w0 = now_s();
        for (unsigned i = 0; i < WALKS; i++) sink += bk_api_resp_errors(KP_API_PRODUCE, 9, &r, count_code, &sink);
        double w1 = now_s();
        printf("error-code walk of a Produce response, %d partition(s): %.1f ns\n", np, (w1 - w0) * 1e9 / WALKS);
    }
    if (sink) printf("(unexpected errors %llu)\n", (unsigned long long)sink);
}

int main(void) {
    bk_mx_t *m = bk_mx_new();
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
    /* per-topic update on produce/fetch: by name (the old path) vs the
     * handle kept in bk_repl_part_t (the path now) */
    bk_mx_series_t *held = bk_mx_series(m, BK_MX_BYTES_IN_TOTAL, (const char *[]){ "t0500" });
    double l0 = now_s();
    for (unsigned i = 0; i < LOOKUPS; i++)
        bk_mx_inc(bk_mx_series(m, BK_MX_BYTES_IN_TOTAL, (const char *[]){ "t0500" }), 1);
    double l1 = now_s();
    for (unsigned i = 0; i < LOOKUPS; i++) bk_mx_inc(held, 1);
    double l2 = now_s();
    printf("per-topic inc among %u topics: by name %.1f ns/op, held handle %.2f ns/op\n", TOPICS,
           (l1 - l0) * 1e9 / LOOKUPS, (l2 - l1) * 1e9 / LOOKUPS);
    bench_resp_errors();
    bk_mx_set_collector(m, BK_MX_LOG_SIZE_BYTES, sizes, NULL);
    size_t bytes = 0;
    double t3 = now_s();
    for (unsigned r = 0; r < RENDERS; r++) {
        struct evbuffer *b = evbuffer_new();
        if (b == NULL || bk_mx_render(m, b) != KP_OK) return 1;
        bytes = evbuffer_get_length(b);
        evbuffer_free(b);
    }
    double t4 = now_s();
    printf("render: %.3f ms per scrape, %zu bytes (%u topic series + %u collected)\n",
           (t4 - t3) * 1e3 / RENDERS, bytes, TOPICS, TOPICS);
    bk_mx_free(m);
    return 0;
}
