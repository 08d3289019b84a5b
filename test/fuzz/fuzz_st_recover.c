/* Fuzz target: arbitrary bytes as a segment file (plus a few bytes of
 * arbitrary index), opened after an "unclean shutdown" with recovery point
 * 0. Recovery must never crash or over-read, and whatever it keeps must be
 * whole batches with valid CRCs and increasing offsets. */
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

static void put(const char *name, const uint8_t *p, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/t-0/%s", g_dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) abort();
    if (n && write(fd, p, n) != (ssize_t)n) abort();
    close(fd);
}

static void cleanup(void) {
    char pdir[128];
    snprintf(pdir, sizeof pdir, "%s/t-0", g_dir);
    rmdir(pdir);
    rmdir(g_dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_dir[0]) {
        strcpy(g_dir, "/tmp/fuzz_st_XXXXXX");
        if (!mkdtemp(g_dir)) abort();
        atexit(cleanup);
        st_set_log_fn(quiet, NULL);
        st_io_set_sync(false);
    }
    char pdir[128];
    snprintf(pdir, sizeof pdir, "%s/t-0", g_dir);
    mkdir(pdir, 0755);
    size_t idx = size > 0 ? data[0] % 17 : 0; /* first byte: how much goes to the index */
    if (idx > size) idx = size;
    const uint8_t *idx_bytes = size ? data + 1 : data;
    if (idx > 0 && idx > size - 1) idx = size - 1;
    put("00000000000000000000.index", idx_bytes, idx);
    size_t off = size ? 1 + idx : 0;
    put("00000000000000000000.log", data + off, size - off);
    st_log_config_t cfg;
    st_log_config_default(&cfg);
    cfg.index_interval_bytes = 64;
    cfg.index_max_bytes = 4096;
    st_log_open_opts_t o = { .recovery_point = 0 };
    st_log_t *log;
    if (st_log_open(g_dir, "t", 0, &cfg, &o, &log) != KP_OK) abort(); /* nothing is below the recovery point */
    static uint8_t buf[1 << 20];
    int64_t at = 0, last = -1;
    for (;;) {
        size_t len;
        int64_t next;
        if (st_log_read_copy(log, at, sizeof buf, -1, ST_READ_MIN_ONE, buf, sizeof buf, &len, &next) != KP_OK) abort();
        if (len == 0) break;
        kp_rd_t r;
        kp_rd_init(&r, buf, len);
        while (kp_rd_remaining(&r)) {
            kp_batch_t b;
            if (kp_batch_read(&r, &b) != KP_OK || kp_batch_verify_crc(&b) != KP_OK) abort();
            if (b.base_offset <= last) abort();
            last = kp_batch_last_offset(&b);
        }
        at = next;
    }
    if (at != st_log_end_offset(log)) abort();
    if (st_log_delete(log) != KP_OK) abort();
    return 0;
}
