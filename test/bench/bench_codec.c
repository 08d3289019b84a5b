/* Codec throughput: a Produce v9 request carrying 100 partitions x one small
 * batch of RECORDS_PER_BATCH records, and a Fetch v13 request for 100
 * partitions. Each loop runs about BENCH_SECONDS; prints messages/s (records
 * inside the batches for Produce, requests for Fetch) and MB/s. Never asserts
 * on time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kp_msgs.h"

#define PARTITIONS 100
#define RECORDS_PER_BATCH 10
#define RECORD_BYTES 24
#define BATCH_BYTES (61 + RECORDS_PER_BATCH * RECORD_BYTES)
#define BENCH_SECONDS 1.0
#define OUT_BYTES (1 << 20)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint8_t batches[PARTITIONS][BATCH_BYTES];
static uint8_t out[OUT_BYTES];

/* The codec does not look inside record batches; the header still says what
 * the payload is, so a reader of the bench output can trust the count. */
static void fill_batch(uint8_t *b, int32_t partition) {
    memset(b, 0, BATCH_BYTES);
    kp_store_be32(b + 8, BATCH_BYTES - 12);
    kp_store_be32(b + 12, (uint32_t)-1);
    b[16] = 2;
    kp_store_be32(b + 23, RECORDS_PER_BATCH - 1);
    kp_store_be32(b + 57, RECORDS_PER_BATCH);
    b[60] = (uint8_t)partition;
}

typedef struct {
    const char *name;
    const kp_struct_desc_t *d;
    int16_t version;
    const void *msg;
    size_t msgs_per_op;
} bench_t;

static void run(const bench_t *b) {
    kp_wr_t w;
    kp_wr_init(&w, out, sizeof out);
    if (kp_encode(b->d, &w, b->version, b->msg, NULL) != KP_OK) {
        fprintf(stderr, "%s: encode failed\n", b->name);
        exit(1);
    }
    size_t len = w.pos;
    kp_arena_t a;
    kp_arena_init(&a, 64 << 20);
    void *dst = malloc(b->d->size_bytes);
    for (int phase = 0; phase < 2; phase++) {
        size_t ops = 0;
        double t0 = now_s(), el = 0;
        do {
            for (int i = 0; i < 200; i++) {
                int rc;
                if (phase == 0) {
                    kp_rd_t r;
                    kp_rd_init(&r, out, len);
                    kp_arena_reset(&a);
                    rc = kp_decode(b->d, &r, b->version, dst, &a);
                } else {
                    kp_wr_init(&w, out, sizeof out);
                    rc = kp_encode(b->d, &w, b->version, dst, NULL);
                }
                if (rc != KP_OK) {
                    fprintf(stderr, "%s: %s failed: %s\n", b->name, phase ? "encode" : "decode",
                            kp_status_str(rc));
                    exit(1);
                }
            }
            ops += 200;
            el = now_s() - t0;
        } while (el < BENCH_SECONDS);
        printf("%-28s %-6s %8zu bytes  %10.0f req/s  %12.0f msgs/s  %8.1f MB/s\n", b->name,
               phase ? "encode" : "decode", len, ops / el, ops * b->msgs_per_op / el,
               ops * (double)len / el / 1e6);
    }
    free(dst);
    kp_arena_free(&a);
}

int main(void) {
    kp_produce_request_partition_produce_data_t pd[PARTITIONS];
    kp_produce_request_topic_produce_data_t td[4];
    for (int i = 0; i < PARTITIONS; i++) {
        fill_batch(batches[i], i);
        kp_produce_request_partition_produce_data_init(&pd[i]);
        pd[i].index = i / 4;
        pd[i].records.bytes.p = batches[i];
        pd[i].records.bytes.len = BATCH_BYTES;
    }
    static const char *topics[4] = { "orders", "payments", "clicks", "audit-log" };
    for (int t = 0; t < 4; t++) {
        kp_produce_request_topic_produce_data_init(&td[t]);
        td[t].name = kp_slice_cstr(topics[t]);
        td[t].partition_data.items = &pd[t * (PARTITIONS / 4)];
        td[t].partition_data.count = PARTITIONS / 4;
    }
    kp_produce_request_t produce;
    kp_produce_request_init(&produce);
    produce.acks = -1;
    produce.timeout_ms = 30000;
    produce.topic_data.items = td;
    produce.topic_data.count = 4;

    kp_fetch_request_fetch_partition_t fp[PARTITIONS];
    for (int i = 0; i < PARTITIONS; i++) {
        kp_fetch_request_fetch_partition_init(&fp[i]);
        fp[i].partition = i;
        fp[i].fetch_offset = 123456789 + i;
        fp[i].partition_max_bytes = 1 << 20;
    }
    kp_fetch_request_fetch_topic_t ft;
    kp_fetch_request_fetch_topic_init(&ft);
    memset(ft.topic_id.b, 0x42, sizeof ft.topic_id.b);
    ft.partitions.items = fp;
    ft.partitions.count = PARTITIONS;
    kp_fetch_request_t fetch;
    kp_fetch_request_init(&fetch);
    fetch.max_wait_ms = 500;
    fetch.min_bytes = 1;
    fetch.topics.items = &ft;
    fetch.topics.count = 1;

    bench_t benches[] = {
        { "produce v9 100 partitions", &kp_produce_request_desc, 9, &produce,
          (size_t)PARTITIONS * RECORDS_PER_BATCH },
        { "fetch v13 100 partitions", &kp_fetch_request_desc, 13, &fetch, 1 },
    };
    for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++) run(&benches[i]);
    return 0;
}
