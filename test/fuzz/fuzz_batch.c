/* libFuzzer target: record batches — read, CRC, validate (both modes),
 * decompress with a small cap, iterate records and headers, down-convert. */
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_batch.h"
#include "protocol/kp_compress.h"
#include "protocol/kp_msgset.h"

#define CAP_BYTES ((size_t)1 << 20)

static void walk(const kp_batch_t *b, const uint8_t *recs, size_t len) {
    kp_record_iter_t it;
    kp_record_t rec;
    kp_record_iter_init(&it, b, recs, len);
    while (kp_record_iter_next(&it, &rec) == 1) {
        kp_rd_t h;
        kp_str_t k;
        kp_bytes_t v;
        kp_rd_init(&h, rec.headers.p, rec.headers.len);
        while (kp_record_header_next(&h, &k, &v) == 1) {
        }
        int16_t type;
        if (kp_batch_is_control(b) && kp_control_key_read(rec.key, &type) == KP_OK) {
            int32_t epoch;
            (void)!kp_txn_marker_value_read(rec.value, &epoch);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kp_arena_t a;
    kp_arena_init(&a, 8 * CAP_BYTES);
    kp_rd_t r;
    kp_rd_init(&r, data, size);
    kp_batch_t b;
    while (kp_batch_read(&r, &b) == KP_OK) {
        (void)!kp_batch_verify_crc(&b);
        kp_batch_info_t info;
        (void)!kp_batch_validate(&b, KP_VALIDATE_PRODUCER, &a, CAP_BYTES, &info);
        /* skip the CRC so that mutations reach the record decoder */
        const uint8_t *recs, *ms;
        size_t len, mlen;
        if (kp_batch_records(&b, &a, CAP_BYTES, &recs, &len) == KP_OK) {
            walk(&b, recs, len);
            (void)!kp_batch_to_msgset(&b, recs, len, 1, &a, &ms, &mlen);
        }
        kp_arena_reset(&a);
    }
    kp_arena_free(&a);
    return 0;
}
