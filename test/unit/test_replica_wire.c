/* Unit tests for broker/replica_wire.c: the replica Fetch request decodes
 * back (with the generated codec the leader uses) to what was asked, and
 * batch descriptions of a fetch answer are exact for every truncation of
 * the records (only whole batches, never an over-read). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/replication/replica_wire.h"
#include "kp_msgs.h"
#include "protocol/kp_arena.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_header.h"

/* One v2 batch of `nrec` records at base offset `base`, leader epoch `epoch`. */
static size_t make_batch(uint8_t *dst, size_t cap, int64_t base, int32_t epoch, int nrec) {
    kp_batch_opts_t o = kp_batch_opts_default();
    kp_batch_builder_t bb;
    kp_batch_builder_init(&bb, &o);
    for (int i = 0; i < nrec; i++) {
        char v[16];
        int l = snprintf(v, sizeof v, "v%d", i);
        kp_record_in_t r = { 1000 + i, kp_slice_null(), { (const uint8_t *)v, (size_t)l }, NULL, 0 };
        ck_assert_int_eq(kp_batch_builder_add(&bb, &r), KP_OK);
    }
    kp_arena_t a;
    kp_arena_init(&a, 1 << 20);
    const uint8_t *b = NULL;
    size_t len = 0;
    ck_assert_int_eq(kp_batch_builder_finish(&bb, &a, &b, &len), KP_OK);
    ck_assert_uint_le(len, cap);
    memcpy(dst, b, len);
    kp_batch_patch_base_offset(dst, base);
    kp_batch_patch_leader_epoch(dst, epoch);
    kp_batch_builder_free(&bb);
    kp_arena_free(&a);
    return len;
}

START_TEST(test_request_round_trip) {
    bk_repl_rw_part_t parts[3];
    memset(parts, 0, sizeof parts);
    for (int i = 0; i < 3; i++) {
        memset(parts[i].topic_id, 0x10 + i, 16);
        parts[i].partition = 7 * i;
        parts[i].current_leader_epoch = 40 + i;
        parts[i].fetch_offset = 1000 * i + 5;
        parts[i].last_fetched_epoch = i == 0 ? -1 : 30 + i;
    }
    bk_repl_rw_fetch_opts_t o = { .replica_id = 2, .correlation_id = 77, .max_wait_ms = 500, .min_bytes = 1,
                             .max_bytes = 1 << 20, .partition_max_bytes = 4096 };
    uint8_t *buf = NULL;
    size_t len = 0;
    ck_assert_int_eq(bk_repl_rw_fetch_encode(&o, parts, 3, &buf, &len), KP_OK);
    uint32_t size = (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 | (uint32_t)buf[2] << 8 | buf[3];
    ck_assert_uint_eq(size + 4, len);
    kp_arena_t a;
    kp_arena_init(&a, 1 << 20);
    kp_request_header_t h;
    void *body = NULL;
    ck_assert_int_eq(kp_request_decode(buf + 4, len - 4, &h, &body, &a), KP_OK);
    ck_assert_int_eq(h.api_key, KP_API_FETCH);
    ck_assert_int_eq(h.api_version, BK_REPL_RW_FETCH_VERSION);
    ck_assert_int_eq(h.correlation_id, 77);
    const kp_fetch_request_t *q = body;
    ck_assert_int_eq(q->replica_id, 2);
    ck_assert_int_eq(q->max_wait_ms, 500);
    ck_assert_int_eq(q->session_epoch, -1);
    ck_assert_int_eq(q->topics.count, 3);
    for (int i = 0; i < 3; i++) {
        const kp_fetch_request_fetch_topic_t *t = &q->topics.items[i];
        ck_assert_int_eq(memcmp(t->topic_id.b, parts[i].topic_id, 16), 0);
        ck_assert_int_eq(t->partitions.count, 1);
        const kp_fetch_request_fetch_partition_t *p = &t->partitions.items[0];
        ck_assert_int_eq(p->partition, parts[i].partition);
        ck_assert_int_eq(p->current_leader_epoch, parts[i].current_leader_epoch);
        ck_assert(p->fetch_offset == parts[i].fetch_offset);
        ck_assert_int_eq(p->last_fetched_epoch, parts[i].last_fetched_epoch);
        ck_assert_int_eq(p->partition_max_bytes, 4096);
    }
    /* every truncation of the frame is refused by the decoder, never read past */
    for (size_t cut = 0; cut < len - 4; cut++) {
        kp_arena_reset(&a);
        uint8_t *c = malloc(cut ? cut : 1);
        memcpy(c, buf + 4, cut);
        ck_assert_int_ne(kp_request_decode(c, cut, &h, &body, &a), KP_OK);
        free(c);
    }
    kp_arena_free(&a);
    free(buf);
    ck_assert_int_ne(bk_repl_rw_fetch_encode(&o, parts, 0, &buf, &len), KP_OK);
}
END_TEST

START_TEST(test_describe_every_truncation) {
    uint8_t recs[8192];
    size_t ends[3], len = 0;
    int64_t bases[3] = { 100, 103, 108 };
    int32_t epochs[3] = { 4, 4, 6 };
    int counts[3] = { 3, 5, 1 };
    for (int i = 0; i < 3; i++) {
        len += make_batch(recs + len, sizeof recs - len, bases[i], epochs[i], counts[i]);
        ends[i] = len;
    }
    for (size_t cut = 0; cut <= len; cut++) {
        /* a heap copy of exactly `cut` bytes: ASan catches any over-read */
        uint8_t *c = malloc(cut ? cut : 1);
        memcpy(c, recs, cut);
        bk_repl_batch_t out[BK_REPL_BATCHES_MAX];
        size_t sizes[BK_REPL_BATCHES_MAX];
        uint32_t n = bk_repl_rw_describe_batches(c, cut, out, sizes, BK_REPL_BATCHES_MAX);
        uint32_t want = 0;
        while (want < 3 && ends[want] <= cut) want++;
        ck_assert_uint_eq(n, want);
        size_t at = 0;
        for (uint32_t i = 0; i < n; i++) {
            ck_assert(out[i].base_offset == bases[i]);
            ck_assert(out[i].last_offset == bases[i] + counts[i] - 1);
            ck_assert_int_eq(out[i].epoch, epochs[i]);
            at += sizes[i];
            ck_assert_uint_eq(at, ends[i]);
        }
        free(c);
    }
    bk_repl_batch_t out[BK_REPL_BATCHES_MAX];
    size_t sizes[BK_REPL_BATCHES_MAX];
    ck_assert_uint_eq(bk_repl_rw_describe_batches(recs, len, out, sizes, 2), 2);   /* the bound */
    ck_assert_uint_eq(bk_repl_rw_describe_batches(NULL, 0, out, sizes, 16), 0);
    /* damage the second batch's length: the description stops before it */
    uint8_t bad[8192];
    memcpy(bad, recs, len);
    bad[ends[0] + 8] = 0x7f;
    ck_assert_uint_eq(bk_repl_rw_describe_batches(bad, len, out, sizes, 16), 1);
}
END_TEST

int main(void) {
    Suite *s = suite_create("replica_wire");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_request_round_trip);
    tcase_add_test(tc, test_describe_every_truncation);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
