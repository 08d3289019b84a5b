/* Unit tests for broker/replica_wire.c: the replica Fetch request decodes
 * back (with the generated codec the leader uses) to what was asked, and
 * batch descriptions of a fetch answer are exact for every truncation of
 * the records (only whole batches, never an over-read). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/net/mem.h"
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
    bk_net_mem_free(buf);
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


/* The answer our leader gives to a replica fetch of n partitions: one topic
 * entry per partition, no records (an idle cluster after a restart). Frame
 * without its size prefix, malloc'd. */
static uint8_t *make_empty_answer(size_t n, int32_t corr, size_t *len) {
    kp_fetch_response_t r;
    kp_fetch_response_init(&r);
    kp_fetch_response_fetchable_topic_response_t *ts = calloc(n, sizeof *ts);
    kp_fetch_response_partition_data_t *ps = calloc(n, sizeof *ps);
    ck_assert_ptr_nonnull(ts);
    ck_assert_ptr_nonnull(ps);
    for (size_t i = 0; i < n; i++) {
        kp_fetch_response_fetchable_topic_response_init(&ts[i]);
        kp_fetch_response_partition_data_init(&ps[i]);
        memset(ts[i].topic_id.b, (int)(i % 251) + 1, 16);
        ps[i].partition_index = (int32_t)i;
        ps[i].high_watermark = 10;
        ps[i].last_stable_offset = 10;
        ts[i].partitions.items = &ps[i];
        ts[i].partitions.count = 1;
    }
    r.responses.items = ts;
    r.responses.count = (int32_t)n;
    size_t cap = 4096 + n * 128;
    uint8_t *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    kp_wr_t w;
    kp_wr_init(&w, buf, cap);
    ck_assert_int_eq(kp_response_encode(&w, KP_API_FETCH, BK_REPL_RW_FETCH_VERSION, corr, &r, NULL), KP_OK);
    free(ts);
    free(ps);
    *len = w.pos - 4;
    memmove(buf, buf + 4, *len);
    return buf;
}

/* Issue 22: a follower asking 1,000 partitions of one leader could not
 * decode the (empty) answer: the arena was capped at twice the frame, and
 * an empty partition decodes to ~3x its wire bytes ("bad replica fetch
 * answer ... (out of memory)", the same 1,000 partitions failing forever). */
START_TEST(test_decode_thousands_of_empty_partitions) {
    static const size_t counts[] = { 1, 999, 1000, 3000, 10000 };
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        size_t n = counts[c], len = 0;
        uint8_t *frame = make_empty_answer(n, 42, &len);
        kp_arena_t a;
        kp_arena_init(&a, 0);
        int32_t corr = 0;
        const void *body = NULL;
        int rc = bk_repl_rw_fetch_decode(frame, len, n, 10 << 20, &a, &corr, &body);
        ck_assert_msg(rc == KP_OK, "%zu partitions: %s", n, kp_status_str(rc));
        const kp_fetch_response_t *r = body;
        ck_assert_int_eq(corr, 42);
        ck_assert_int_eq(r->responses.count, (int32_t)n);
        ck_assert_int_eq(r->responses.items[n - 1].partitions.items[0].partition_index, (int32_t)(n - 1));
        kp_arena_free(&a);
        free(frame);
    }
}
END_TEST

/* Claimed counts and lengths far beyond the bytes present: refused without
 * allocating for the claim (the arena holds only what the bytes make). */
START_TEST(test_decode_claims_beyond_bytes) {
    size_t len = 0;
    uint8_t *frame = make_empty_answer(3, 7, &len);
    /* v13 answer: corr(4) header tags(1) throttle(4) error(2) session(4),
     * then the compact array length of responses: claim ~2^28 entries */
    size_t at = 4 + 1 + 4 + 2 + 4;
    uint8_t big[64];
    memcpy(big, frame, at);
    big[at] = 0xff; big[at + 1] = 0xff; big[at + 2] = 0xff; big[at + 3] = 0x7f;   /* uvarint */
    memcpy(big + at + 4, frame + at + 1, 16);
    kp_arena_t a;
    kp_arena_init(&a, 0);
    int32_t corr = 0;
    const void *body = NULL;
    ck_assert_int_ne(bk_repl_rw_fetch_decode(big, at + 20, 3, 10 << 20, &a, &corr, &body), KP_OK);
    ck_assert_uint_lt(a.used_bytes, 4096);
    kp_arena_free(&a);
    /* every truncation of a real answer fails cleanly */
    for (size_t cut = 0; cut < len; cut++) {
        ck_assert_int_ne(bk_repl_rw_fetch_decode(frame, cut, 3, 10 << 20, &a, &corr, &body), KP_OK);
        kp_arena_free(&a);
    }
    /* more partitions answered than asked, beyond the bound: refused */
    size_t blen = 0;
    uint8_t *many = make_empty_answer(5000, 7, &blen);
    ck_assert_int_ne(bk_repl_rw_fetch_decode(many, blen, 10, 1 << 10, &a, &corr, &body), KP_OK);
    ck_assert_uint_le(a.used_bytes, bk_repl_rw_answer_arena_bytes(10, blen, 1 << 10));
    kp_arena_free(&a);
    free(many);
    free(frame);
}
END_TEST

/* Model of a follower fetching `n` always-wanting partitions from a leader
 * that fills its answer in request order, `per_part` bytes each, and stops
 * at `max_bytes`; the request holds at most `cap` partitions. Returns the
 * number of partitions that got data within `rounds` fetches. */
static size_t rr_model(size_t n, size_t cap, size_t per_part, size_t max_bytes, int rounds) {
    uint32_t *pos = malloc(n * sizeof *pos), *picked = malloc(n * sizeof *picked), *rpos = malloc(n * sizeof *rpos);
    bool *got = malloc(n * sizeof *got), *ever = calloc(n, sizeof *ever);
    ck_assert(pos && picked && rpos && got && ever);
    for (size_t i = 0; i < n; i++) pos[i] = (uint32_t)(i * 3 + 1);   /* positions with gaps */
    uint32_t cursor = 0;
    for (int r = 0; r < rounds; r++) {
        size_t cnt = bk_repl_rw_rr_pick(pos, n, cursor, cap, picked);
        ck_assert_uint_eq(cnt, n < cap ? n : cap);
        size_t bytes = 0;
        for (size_t k = 0; k < cnt; k++) {
            rpos[k] = pos[picked[k]];
            got[k] = bytes + per_part <= max_bytes;
            if (got[k]) { bytes += per_part; ever[picked[k]] = true; }
        }
        cursor = bk_repl_rw_rr_next(rpos, got, cnt, cnt < n, cursor);
    }
    size_t served = 0;
    for (size_t i = 0; i < n; i++) served += ever[i];
    free(pos); free(picked); free(rpos); free(got); free(ever);
    return served;
}

/* Issue 22: with thousands of partitions the same first ones filled every
 * answer (and every capped request) and the rest starved. */
/* The leader groups consecutive partitions of one topic into one topic
 * entry (api/h_fetch.c): the cursor still meets each asked partition at
 * the next entry, and an answer in another order is still searched. */
START_TEST(test_answer_find_grouped_and_reordered) {
    kp_fetch_response_partition_data_t pa[3], pb[1], pa2[1];
    kp_fetch_response_fetchable_topic_response_t ts[3];
    uint8_t a[16], b[16];
    memset(a, 0xa, 16);
    memset(b, 0xb, 16);
    for (int i = 0; i < 3; i++) {
        kp_fetch_response_fetchable_topic_response_init(&ts[i]);
        kp_fetch_response_partition_data_init(&pa[i]);
        pa[i].partition_index = i;
    }
    kp_fetch_response_partition_data_init(&pb[0]);
    kp_fetch_response_partition_data_init(&pa2[0]);
    pb[0].partition_index = 0;
    pa2[0].partition_index = 7;
    /* asked: a0 a1 a2 b0 a7; answered: a{0,1,2} b{0} a{7} */
    memcpy(ts[0].topic_id.b, a, 16);
    ts[0].partitions.items = pa;
    ts[0].partitions.count = 3;
    memcpy(ts[1].topic_id.b, b, 16);
    ts[1].partitions.items = pb;
    ts[1].partitions.count = 1;
    memcpy(ts[2].topic_id.b, a, 16);
    ts[2].partitions.items = pa2;
    ts[2].partitions.count = 1;
    kp_fetch_response_t r;
    kp_fetch_response_init(&r);
    r.responses.items = ts;
    r.responses.count = 3;
    bk_repl_rw_cursor_t c = { 0, 0 };
    ck_assert_ptr_eq(bk_repl_rw_answer_find(&r, &c, a, 0), &pa[0]);
    ck_assert_ptr_eq(bk_repl_rw_answer_find(&r, &c, a, 1), &pa[1]);
    ck_assert_ptr_eq(bk_repl_rw_answer_find(&r, &c, a, 2), &pa[2]);
    ck_assert_ptr_eq(bk_repl_rw_answer_find(&r, &c, b, 0), &pb[0]);
    ck_assert_ptr_eq(bk_repl_rw_answer_find(&r, &c, a, 7), &pa2[0]);
    ck_assert_int_eq(c.topic, 2);
    ck_assert_int_eq(c.part, 1);
    /* past the end, out of order, absent */
    ck_assert_ptr_eq(bk_repl_rw_answer_find(&r, &c, a, 1), &pa[1]);
    ck_assert_ptr_eq(bk_repl_rw_answer_find(&r, &c, a, 2), &pa[2]);   /* the cursor followed the search */
    ck_assert_ptr_null(bk_repl_rw_answer_find(&r, &c, b, 1));
    ck_assert_ptr_null(bk_repl_rw_answer_find(&r, &c, a, 3));
    c = (bk_repl_rw_cursor_t){ 0, 0 };
    ck_assert_ptr_eq(bk_repl_rw_answer_find(&r, &c, b, 0), &pb[0]);
    ck_assert_ptr_eq(bk_repl_rw_answer_find(&r, &c, a, 0), &pa[0]);
    /* an empty answer */
    r.responses.count = 0;
    c = (bk_repl_rw_cursor_t){ 0, 0 };
    ck_assert_ptr_null(bk_repl_rw_answer_find(&r, &c, a, 0));
}
END_TEST

START_TEST(test_round_robin_no_starvation) {
    /* byte limit: 10 of 3,000 partitions fit an answer -> 300 rounds serve all */
    ck_assert_uint_eq(rr_model(3000, 10000, 1 << 20, 10 << 20, 300), 3000);
    /* partition cap: 25,000 partitions, 10,000 per request, data for all */
    ck_assert_uint_eq(rr_model(25000, 10000, 1, 1 << 30, 3), 25000);
    /* idle partitions past the cap are still asked (cap hit, no data) */
    ck_assert_uint_eq(rr_model(25, 10, 1, 0, 3), 0);
    uint32_t pos[5] = { 2, 4, 6, 8, 10 }, picked[5];
    ck_assert_uint_eq(bk_repl_rw_rr_pick(pos, 5, 7, 3, picked), 3);
    ck_assert_uint_eq(picked[0], 3);
    ck_assert_uint_eq(picked[1], 4);
    ck_assert_uint_eq(picked[2], 0);
    uint32_t rp[3] = { 8, 10, 2 };
    bool none[3] = { false, false, false }, mid[3] = { false, true, false };
    ck_assert_uint_eq(bk_repl_rw_rr_next(rp, none, 3, true, 7), 3);
    ck_assert_uint_eq(bk_repl_rw_rr_next(rp, none, 3, false, 7), 7);
    ck_assert_uint_eq(bk_repl_rw_rr_next(rp, mid, 3, false, 7), 11);
}
END_TEST

int main(void) {
    Suite *s = suite_create("replica_wire");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_request_round_trip);
    tcase_add_test(tc, test_describe_every_truncation);
    tcase_add_test(tc, test_decode_thousands_of_empty_partitions);
    tcase_add_test(tc, test_decode_claims_beyond_bytes);
    tcase_add_test(tc, test_round_robin_no_starvation);
    tcase_add_test(tc, test_answer_find_grouped_and_reordered);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
