/* libFuzzer target: metadata image snapshots (bk_meta_image_load).
 *
 * The whole input is snapshot bytes, loaded into an image that already
 * holds a small state (so that a failed load can be seen to leave it
 * unchanged and a good one to replace it, change notifications included).
 * Properties:
 *  - a failed load leaves the image byte-for-byte as it was;
 *  - a loaded image satisfies every structural invariant (fuzz_image_check.h);
 *  - snapshot -> load -> snapshot gives identical bytes, and the reloaded
 *    image's snapshot loads again (snapshots are a fixed point). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/meta/image.h"
#include "test/fuzz/fuzz_image_check.h"

#define LOCAL_ID 1

static void snap(const bk_meta_image_t *img, uint8_t **out, size_t *len) {
    if (bk_meta_image_snapshot(img, out, len) != KP_OK) abort();
}

static bool same(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* A topic with one partition led by LOCAL_ID and a config, via records. */
static void base_image(bk_meta_image_t *img) {
    bk_meta_image_init(img, LOCAL_ID);
    static const uint8_t id[BK_META_UUID_BYTES] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
    Skiff__Metadata__Topic t = SKIFF__METADATA__TOPIC__INIT;
    t.name = "base";
    t.has_topic_id = true;
    t.topic_id.len = BK_META_UUID_BYTES;
    t.topic_id.data = (uint8_t *)id;
    Skiff__Metadata__MetadataRecord r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_TOPIC;
    r.topic = &t;
    if (bk_meta_image_apply(img, &r, 0) != KP_OK) abort();
    int32_t reps[1] = { LOCAL_ID };
    Skiff__Metadata__Partition p = SKIFF__METADATA__PARTITION__INIT;
    p.has_topic_id = true;
    p.topic_id = t.topic_id;
    p.has_partition_id = true;
    p.n_replicas = p.n_isr = 1;
    p.replicas = p.isr = reps;
    p.has_leader = true;
    p.leader = LOCAL_ID;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_PARTITION;
    r.partition = &p;
    if (bk_meta_image_apply(img, &r, 1) != KP_OK) abort();
    bk_meta_change_t c[4];
    if (bk_meta_image_take_changes(img, c, 4) != 1) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bk_meta_image_t img;
    base_image(&img);
    uint8_t *before;
    size_t before_len;
    snap(&img, &before, &before_len);
    int rc = bk_meta_image_load(&img, data, size);
    if (rc != KP_OK) {
        if (rc != KP_ERR_CORRUPT && rc != KP_ERR_BAD_VALUE) abort();
        uint8_t *after;
        size_t after_len;
        snap(&img, &after, &after_len);
        if (!same(before, before_len, after, after_len)) abort(); /* unchanged on error */
        if (bk_meta_image_pending_changes(&img) != 0) abort();
        free(after);
    } else {
        fz_check_image(&img);
        uint8_t *s1, *s2;
        size_t l1, l2;
        snap(&img, &s1, &l1);
        bk_meta_image_t again;
        bk_meta_image_init(&again, -1);
        if (bk_meta_image_load(&again, s1, l1) != KP_OK) abort();
        fz_check_image(&again);
        snap(&again, &s2, &l2);
        if (!same(s1, l1, s2, l2)) abort();
        if (again.last_offset != img.last_offset || again.last_epoch != img.last_epoch) abort();
        if ((again.cluster_id == NULL) != (img.cluster_id == NULL) ||
            (img.cluster_id && strcmp(img.cluster_id, again.cluster_id) != 0))
            abort();
        bk_meta_image_free(&again);
        free(s1);
        free(s2);
    }
    free(before);
    bk_meta_image_free(&img);
    return 0;
}
