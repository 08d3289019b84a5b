/* bench_image: the metadata image and controller without I/O.
 * Creates 1,000 topics x 10 partitions (RF 3 over 5 brokers) through the
 * controller and applies the records, then fences a broker, snapshots and
 * reloads the image. Prints time per step and image bytes per partition
 * (heap growth measured with mallinfo2). One run, well under a second. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/meta/controller.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t heap_bytes(void) {
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static int64_t next_offset;

static void commit(bk_meta_image_t *img, bk_meta_recs_t *r) {
    if (r->err || bk_meta_recs_apply(r, img, next_offset) != KP_OK) {
        fprintf(stderr, "bench_image: apply failed\n");
        exit(1);
    }
    next_offset += (int64_t)r->n;
    bk_meta_recs_free(r);
}

static void add_brokers(bk_meta_ctrl_t *ctrl, bk_meta_image_t *img, int32_t n) {
    bk_meta_recs_t r;
    bk_meta_recs_init(&r);
    for (int32_t b = 1; b <= n; b++) {
        bk_meta_ctrl_endpoint_t ep = { "PLAINTEXT", "127.0.0.1", (uint16_t)(9000 + b) };
        bk_meta_ctrl_register_t req = { .broker_id = b, .endpoints = &ep, .nendpoints = 1 };
        req.incarnation[0] = (uint8_t)b;
        int64_t epoch;
        if (bk_meta_ctrl_register(ctrl, img, &req, next_offset, 0, &r, &epoch)) exit(1);
        commit(img, &r);
        bk_meta_ctrl_heartbeat_t hb = { b, epoch, next_offset, false, false };
        bk_meta_ctrl_heartbeat_result_t res;
        bk_meta_ctrl_heartbeat(ctrl, img, &hb, 0, &r, &res);
        commit(img, &r);
    }
}

int main(void) {
    enum { BROKERS = 5, TOPICS = 1000, PARTS = 10 };
    bk_meta_image_t img;
    bk_meta_image_init(&img, 1);
    bk_meta_ctrl_config_t cfg;
    bk_meta_ctrl_config_defaults(&cfg);
    bk_meta_ctrl_t *ctrl = malloc(sizeof *ctrl);
    bk_meta_ctrl_init(ctrl, &cfg, 42);
    add_brokers(ctrl, &img, BROKERS);
    bk_meta_recs_t r;
    bk_meta_recs_init(&r);
    size_t heap0 = heap_bytes();
    double t0 = now_s();
    for (int i = 0; i < TOPICS; i++) {
        char name[32];
        snprintf(name, sizeof name, "topic-%04d", i);
        bk_meta_ctrl_create_topic_t t = { .name = name, .num_partitions = PARTS, .replication_factor = 3 };
        bk_meta_ctrl_create_result_t res;
        bk_meta_ctrl_create_topics(ctrl, &img, &t, 1, false, &r, &res);
        if (res.error) return 1;
        commit(&img, &r);
    }
    double t1 = now_s();
    size_t heap1 = heap_bytes();
    size_t pending = bk_meta_image_pending_changes(&img);
    bk_meta_change_t *ch = malloc((pending + 1) * sizeof *ch);
    size_t nch = bk_meta_image_take_changes(&img, ch, pending);
    double t2 = now_s();
    bk_meta_ctrl_tick(ctrl, &img, 0, &r);                      /* sessions start */
    commit(&img, &r);
    bk_meta_ctrl_heartbeat_t hb = { 2, bk_meta_image_broker(&img, 2)->epoch, next_offset, true, false };
    bk_meta_ctrl_heartbeat_result_t hres;
    double t3a = now_s();
    bk_meta_ctrl_heartbeat(ctrl, &img, &hb, 0, &r, &hres);     /* broker 2 asks to be fenced */
    size_t moved = r.n;
    commit(&img, &r);
    double t3 = now_s();
    uint8_t *snap;
    size_t len;
    if (bk_meta_image_snapshot(&img, &snap, &len)) return 1;
    double t4 = now_s();
    bk_meta_image_t copy;
    bk_meta_image_init(&copy, -1);
    if (bk_meta_image_load(&copy, snap, len)) return 1;
    double t5 = now_s();
    int parts = TOPICS * PARTS;
    printf("bench_image: %d topics x %d partitions (RF 3, %d brokers)\n", TOPICS, PARTS, BROKERS);
    printf("  create via controller + apply: %.1f ms total, %.1f us per topic\n",
           (t1 - t0) * 1e3, (t1 - t0) * 1e6 / TOPICS);
    printf("  image heap: %.0f bytes per partition (bk_meta_partition_t = %zu)\n",
           (double)(heap1 - heap0) / parts, sizeof(bk_meta_partition_t));
    printf("  change notification for node 1: %zu partitions, %.2f ms\n", nch, (t2 - t1) * 1e3);
    printf("  fence broker 2: %zu records, %.2f ms (decide + apply)\n", moved, (t3 - t3a) * 1e3);
    printf("  snapshot: %zu bytes, write %.1f ms, load %.1f ms\n", len, (t4 - t3) * 1e3,
           (t5 - t4) * 1e3);
    free(snap);
    free(ch);
    free(ctrl);
    bk_meta_image_free(&copy);
    bk_meta_image_free(&img);
    return 0;
}
