/* libFuzzer target: a request frame through bk_api_prepare_frame (the
 * net's on_prepare: Produce decoded and each record set checked ahead of
 * the state loop, broker/api/prepare.h). Properties:
 *  - only a Produce frame that decodes gets a result, with one verdict per
 *    partition, found again by bk_api_prepared_part for exactly the bytes
 *    the state loop's own decode of the frame gives (and for no other
 *    offset, length or correlation id);
 *  - each verdict is what it claims, checked batch by batch with the
 *    reference calls: the nbatches_ok first batches pass the full
 *    kp_batch_validate (CRC included); at BK_REPL_PS_PRE_CRC the next batch's
 *    CRC is wrong; at BK_REPL_PS_PRE_RECORDS its CRC is right and its records
 *    fail (an error code, never 0);
 *  - it is deterministic: the same frame prepared again gives the same
 *    verdicts (the per-thread arenas are reused between calls);
 *  - a result freed and taken again comes from the free list (no leak,
 *    no growth: ASan/LSan watch the pool). */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "kp_msgs.h"
#include "broker/api/prepare.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_header.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_verdict(const uint8_t *recs, size_t len, const bk_repl_ps_pre_t *pre) {
    assert(pre->nbatches_ok >= 0);
    kp_arena_t a;
    kp_arena_init(&a, (size_t)128 << 20);
    kp_rd_t r;
    kp_rd_init(&r, recs, len);
    for (int32_t i = 0; i < pre->nbatches_ok; i++) {
        kp_batch_t b;
        assert(kp_batch_read(&r, &b) == KP_OK);
        kp_arena_reset(&a);
        assert(kp_batch_validate(&b, KP_VALIDATE_PRODUCER, &a, (size_t)64 << 20, NULL) == KP_OK);
    }
    if (pre->stage != BK_REPL_PS_PRE_NONE) {
        kp_batch_t b;
        assert(kp_batch_read(&r, &b) == KP_OK);
        if (pre->stage == BK_REPL_PS_PRE_CRC) {
            assert(kp_batch_verify_crc(&b) != KP_OK);
        } else {
            assert(pre->stage == BK_REPL_PS_PRE_RECORDS);
            assert(kp_batch_verify_crc(&b) == KP_OK);
            assert(pre->error != 0);
            kp_arena_reset(&a);
            assert(kp_batch_validate(&b, KP_VALIDATE_PRODUCER, &a, (size_t)64 << 20, NULL) != KP_OK);
        }
    } else {
        assert(pre->error == 0);
    }
    kp_arena_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bk_api_prepare_init();
    /* the frame in its own block, as the net hands it (no slack after it) */
    uint8_t *frame = malloc(size ? size : 1);
    assert(frame);
    if (size) memcpy(frame, data, size);
    bk_api_prepared_t *r = bk_api_prepare_frame(frame, size, NULL);
    kp_arena_t a;
    kp_arena_init(&a, (size_t)256 << 20);
    kp_request_header_t h;
    void *body = NULL;
    int rc = kp_request_decode(frame, size, &h, &body, &a);
    bool produce = rc == KP_OK && body && h.api_key == KP_API_PRODUCE;
    if (!produce) {
        assert(r == NULL);
    } else {
        const kp_produce_request_t *q = body;
        uint32_t idx = 0;
        size_t nparts = 0;
        for (int32_t i = 0; i < q->topic_data.count; i++) nparts += (size_t)q->topic_data.items[i].partition_data.count;
        assert((r == NULL) == (nparts == 0));
        /* prepared again: the same verdicts */
        bk_api_prepared_t *r2 = r ? bk_api_prepare_frame(frame, size, NULL) : NULL;
        for (int32_t i = 0; r && i < q->topic_data.count; i++) {
            const kp_produce_request_topic_produce_data_t *td = &q->topic_data.items[i];
            for (int32_t k = 0; k < td->partition_data.count; k++, idx++) {
                kp_bytes_t recs = td->partition_data.items[k].records.bytes;
                const bk_repl_ps_pre_t *pre = bk_api_prepared_part(r, frame, size, h.correlation_id, idx, recs.p, recs.len);
                if (recs.p == NULL || recs.len == 0) {
                    assert(pre == NULL);
                    continue;
                }
                assert(pre != NULL);
                /* bound to these bytes only */
                assert(!bk_api_prepared_part(r, frame, size, h.correlation_id + 1, idx, recs.p, recs.len));
                assert(!bk_api_prepared_part(r, frame, size + 1, h.correlation_id, idx, recs.p, recs.len));
                assert(!bk_api_prepared_part(r, frame, size, h.correlation_id, idx, recs.p, recs.len - 1));
                assert(!bk_api_prepared_part(r, frame, size, h.correlation_id, (uint32_t)nparts, recs.p, recs.len));
                const bk_repl_ps_pre_t *pre2 = bk_api_prepared_part(r2, frame, size, h.correlation_id, idx, recs.p,
                                                                    recs.len);
                assert(pre2 && pre2->nbatches_ok == pre->nbatches_ok && pre2->stage == pre->stage &&
                       pre2->error == pre->error);
                check_verdict(recs.p, recs.len, pre);
            }
        }
        bk_api_prepared_free(r2);
    }
    bk_api_prepared_free(r);
    kp_arena_free(&a);
    free(frame);
    bk_api_prepare_fini();
    return 0;
}
