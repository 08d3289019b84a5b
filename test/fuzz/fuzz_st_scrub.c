/* Fuzz target: the scrubber's reader (storage/log_scrub.c) over arbitrary
 * bytes of a rolled segment. A log gets one rolled segment of real batches
 * of the input's length (at least one batch), whose file is then
 * overwritten in place with the input (same size, so the log's idea of the
 * segment holds), and is scrubbed with a budget taken from the input's
 * first byte, job after job. The scrub must never crash, over-read or
 * allocate from a length field; it must end (each job advances or stops);
 * and a verdict "good to the end" is only given when every batch really
 * parses with a valid CRC and increasing offsets. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protocol/kp_batch.h"
#include "storage/st_io.h"
#include "storage/st_log.h"

static char g_dir[64];

static void quiet(void *ctx, st_log_level_t lvl, const char *msg) {
    (void)ctx; (void)lvl; (void)msg;
}

static void rm_partition(void) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s/t-0", g_dir);
    if (system(cmd) != 0) abort();
}

static void cleanup(void) {
    rm_partition();
    rmdir(g_dir);
}

/* Every batch of bytes[0..n) parses, has a valid CRC, and offsets increase. */
static int all_good(const uint8_t *bytes, size_t n) {
    kp_rd_t r;
    kp_rd_init(&r, bytes, n);
    int64_t last = -1;
    while (kp_rd_remaining(&r)) {
        kp_batch_t b;
        if (kp_batch_read(&r, &b) != KP_OK || kp_batch_verify_crc(&b) != KP_OK) return 0;
        if (b.base_offset <= last) return 0;
        last = kp_batch_last_offset(&b);
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_dir[0]) {
        strcpy(g_dir, "/tmp/fuzz_scrub_XXXXXX");
        if (!mkdtemp(g_dir)) abort();
        atexit(cleanup);
        st_set_log_fn(quiet, NULL);
        st_io_set_sync(false);
    }
    if (size < 2) return 0;
    uint64_t budget = 1 + (uint64_t)data[0] * 16;
    const uint8_t *seg = data + 1;
    size_t seg_len = size - 1;
    st_log_config_t cfg;
    st_log_config_default(&cfg);
    cfg.index_max_bytes = 4096;
    st_log_open_opts_t o = { .create = true };
    st_log_t *log;
    if (st_log_open(g_dir, "t", 0, &cfg, &o, &log) != KP_OK) abort();
    /* real batches until the segment is at least seg_len bytes, then roll */
    static uint8_t batch[256];
    kp_arena_t a;
    kp_arena_init(&a, 1 << 16);
    kp_batch_builder_t bb;
    kp_batch_opts_t bo = kp_batch_opts_default();
    kp_batch_builder_init(&bb, &bo);
    kp_record_in_t rec = { .timestamp = 1, .value = { (const uint8_t *)"v", 1 } };
    if (kp_batch_builder_add(&bb, &rec) != KP_OK) abort();
    const uint8_t *p;
    size_t blen;
    if (kp_batch_builder_finish(&bb, &a, &p, &blen) != KP_OK || blen > sizeof batch) abort();
    kp_batch_builder_free(&bb);
    size_t written = 0;
    while (written < seg_len) {
        memcpy(batch, p, blen);
        st_append_info_t info;
        if (st_log_append(log, batch, blen, 0, 1, &info) != KP_OK) abort();
        written += blen;
    }
    kp_arena_free(&a);
    if (st_log_roll(log, 1) != KP_OK) abort();
    /* the rolled file: the input, padded with zeros to the segment's size */
    char path[160];
    snprintf(path, sizeof path, "%s/t-0/00000000000000000000.log", g_dir);
    int fd = open(path, O_WRONLY);
    if (fd < 0) abort();
    uint8_t *img = calloc(1, written);
    if (!img) abort();
    memcpy(img, seg, seg_len);
    if (pwrite(fd, img, written, 0) != (ssize_t)written) abort();
    close(fd);
    int64_t base = 0, pos_off = 0;
    uint64_t pos = 0, jobs = 0;
    int done_good = 0, corrupt = 0;
    for (;;) {
        st_log_scrub_t *j = NULL;
        if (st_log_scrub_begin(log, base, pos, pos_off, budget, &j) != KP_OK) abort();
        if (!j) break;
        if (st_log_scrub_run(j) != KP_OK) abort();
        st_scrub_result_t r;
        if (st_log_scrub_end(log, j, &r) != KP_OK) abort();
        if (++jobs > written + 2) abort();   /* every job advances */
        if (r.corrupt) {
            if (r.bad_pos >= written) abort();
            corrupt = 1;
            break;
        }
        if (r.seg_done) {
            done_good = 1;
            base = r.seg_base + 1;
            pos = 0;
        } else {
            if (r.next_pos <= pos) abort();
            base = r.seg_base;
            pos = r.next_pos;
            pos_off = r.next_offset;
        }
    }
    if (done_good && !all_good(img, written)) abort();
    if (!done_good && !corrupt) abort();
    free(img);
    if (st_log_close(log, NULL) != KP_OK) abort();
    rm_partition();
    return 0;
}
