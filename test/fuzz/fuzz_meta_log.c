/* libFuzzer target: replay of the metadata log at start-up (bk_meta_log_open
 * over __cluster_metadata-0), differential against applying the same
 * records directly.
 *
 * Input: batches, each "u8 flags, u8 record count, then per record u16
 * length + value bytes" (lengths clamped). flags bit 0: a gzip batch (replay
 * refuses compressed batches), bit 1: a KRaft control batch instead (its
 * records are skipped). The batches are built with valid CRCs and appended
 * to a fresh log in a temp dir (so mutations reach the replay rather than
 * the CRC check); then:
 *  - bk_meta_log_open succeeds exactly when every record of every
 *    uncompressed data batch applies in order to an empty image, and then
 *    its image equals that reference image (same snapshot bytes);
 *  - a failure names the offset in its message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/meta/meta_log.h"
#include "protocol/kp_arena.h"
#include "protocol/kp_batch.h"
#include "storage/st_io.h"
#include "storage/st_status.h"
#include "test/fuzz/fuzz_image_check.h"

#define BATCHES_MAX 16
#define RECORDS_MAX 32   /* per batch */

static char g_dir[64];

static void quiet(void *ctx, st_log_level_t lvl, const char *msg) {
    (void)ctx; (void)lvl; (void)msg;
}

static void snap(const bk_meta_image_t *img, uint8_t **out, size_t *len) {
    if (bk_meta_image_snapshot(img, out, len) != KP_OK) abort();
}

static st_log_t *open_log(void) {
    st_log_config_t cfg;
    st_log_config_default(&cfg);
    st_log_open_opts_t o = { .recovery_point = 0, .create = true };
    st_log_t *log;
    if (st_log_open(g_dir, BK_META_TOPIC, 0, &cfg, &o, &log) != KP_OK) abort();
    return log;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_dir[0]) {
        strcpy(g_dir, "/tmp/fuzz_meta_XXXXXX");
        if (!mkdtemp(g_dir)) abort();
        st_set_log_fn(quiet, NULL);
        st_io_set_sync(false);
    }
    st_log_t *log = open_log();
    bk_meta_image_t ref;
    bk_meta_image_init(&ref, -1);
    bool ref_ok = true;
    kp_arena_t a;
    kp_arena_init(&a, (size_t)8 << 20);
    size_t at = 0;
    for (int nb = 0; nb < BATCHES_MAX && size - at >= 2; nb++) {
        uint8_t flags = data[at], count = data[at + 1] % (RECORDS_MAX + 1);
        at += 2;
        kp_batch_opts_t o = kp_batch_opts_default();
        if (flags & 1) o.codec = KP_CODEC_GZIP;
        kp_batch_builder_t bb;
        kp_batch_builder_init(&bb, &o);
        const uint8_t *vals[RECORDS_MAX];
        size_t lens[RECORDS_MAX];
        for (uint8_t i = 0; i < count && size - at >= 2; i++) {
            size_t len = (size_t)(data[at] << 8 | data[at + 1]);
            at += 2;
            if (len > size - at) len = size - at;
            vals[i] = data + at;
            lens[i] = len;
            kp_record_in_t r = { .timestamp = 1, .key = kp_slice_null(), .value = { data + at, len } };
            if (kp_batch_builder_add(&bb, &r) != KP_OK) abort();
            at += len;
        }
        int32_t n = bb.count;
        const uint8_t *buf;
        size_t blen;
        int rc;
        if (flags & 2) {
            kp_bytes_t v = { (const uint8_t *)"\0\0\0\0", 4 };
            rc = kp_batch_build_kraft_control(2, v, 1, 0, -1, &a, &buf, &blen);
        } else {
            rc = kp_batch_builder_finish(&bb, &a, &buf, &blen);
        }
        kp_batch_builder_free(&bb);
        if (rc != KP_OK || (!(flags & 2) && n == 0)) continue; /* an empty data batch: nothing to store */
        uint8_t *copy = malloc(blen);
        if (!copy) abort();
        memcpy(copy, buf, blen);
        st_append_info_t info;
        if (st_log_append(log, copy, blen, 0, 1, &info) != KP_OK) abort();
        free(copy);
        if (flags & 2) continue;
        for (int32_t i = 0; i < n && ref_ok; i++) {
            if (flags & 1) { ref_ok = false; break; }   /* replay refuses compressed batches */
            ref_ok = bk_meta_image_apply_bytes(&ref, vals[i], lens[i], info.base_offset + i) == KP_OK;
        }
    }
    kp_arena_free(&a);
    st_log_offsets_t fin;
    if (st_log_close(log, &fin) != KP_OK) abort();

    st_logdir_t ld;
    if (st_logdir_load(&ld, g_dir) != KP_OK) abort();
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    char err[512] = "";
    bk_meta_log_t *m = bk_meta_log_open(&ld, &img, 1, err, sizeof err);
    if ((m != NULL) != ref_ok) abort();
    if (m) {
        fz_check_image(&img);
        uint8_t *s1, *s2;
        size_t l1, l2;
        snap(&img, &s1, &l1);
        snap(&ref, &s2, &l2);
        if (l1 != l2 || memcmp(s1, s2, l1) != 0) abort();
        free(s1);
        free(s2);
        if (bk_meta_log_close(m, NULL) != KP_OK) abort();
    } else if (!strstr(err, "offset")) {
        abort();
    }
    st_logdir_free(&ld);
    bk_meta_image_free(&img);
    bk_meta_image_free(&ref);
    log = open_log();
    if (st_log_delete(log) != KP_OK) abort();
    return 0;
}
