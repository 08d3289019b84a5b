/* batch_validate.c — the checks a broker runs on a batch it did not build. */
#include <assert.h>

#include "protocol/kp_batch.h"
#include "protocol/kp_compress.h"
#include "protocol/record_fast_int.h"

/* Header-only rules, before touching the records. */
static int check_header(const kp_batch_t *b, unsigned flags) {
    int64_t last;
    if (__builtin_add_overflow(b->base_offset, (int64_t)b->last_offset_delta, &last)) return KP_ERR_CORRUPT;
    if (b->producer_id < -1 || b->producer_epoch < -1 || b->base_sequence < -1) return KP_ERR_BAD_VALUE;
    if (!(flags & KP_VALIDATE_PRODUCER)) return KP_OK;
    if (b->records_count == 0) return KP_ERR_BAD_VALUE;
    if (b->attributes & KP_BATCH_DELETE_HORIZON) return KP_ERR_BAD_VALUE;
    if (b->last_offset_delta != b->records_count - 1) return KP_ERR_BAD_VALUE;
    if (kp_batch_is_transactional(b) && b->producer_id < 0) return KP_ERR_BAD_VALUE;
    if (b->producer_id >= 0 && (b->producer_epoch < 0 || b->base_sequence < 0) && !kp_batch_is_control(b))
        return KP_ERR_BAD_VALUE;
    return KP_OK;
}

/* Per-record rules given the previous record's offset delta. */
static int check_record(const kp_batch_t *b, unsigned flags, const kp_record_t *rec, int32_t prev_delta,
                        int32_t index) {
    if (flags & KP_VALIDATE_PRODUCER) {
        if (rec->offset_delta != index) return KP_ERR_BAD_VALUE;
    } else if (rec->offset_delta <= prev_delta || rec->offset_delta > b->last_offset_delta) {
        return KP_ERR_BAD_VALUE;
    }
    bool log_append = (b->attributes & KP_BATCH_TIMESTAMP_LOG_APPEND) != 0;
    /* the iterator adds baseTimestamp + delta with wrap-around; recover the
     * delta (exact in modular arithmetic) to see whether the sum overflowed */
    int64_t delta = (int64_t)((uint64_t)rec->timestamp - (uint64_t)b->base_timestamp), sum;
    if (!log_append && (rec->timestamp < -1 || __builtin_add_overflow(b->base_timestamp, delta, &sum)))
        return KP_ERR_BAD_VALUE;
    if (kp_batch_is_control(b)) {
        int16_t type;
        if (kp_control_key_read(rec->key, &type) != KP_OK) return KP_ERR_BAD_VALUE;
    }
    return KP_OK;
}

/* Fast path of the record checks: walks a records section whose records all
 * have short varints (record_fast_int.h) applying check_record's rules and
 * the end checks, without materialising kp_record_t. True only when the
 * checked loop below would return KP_OK with the same max timestamp; false
 * on anything else (including every invalid batch), and the checked loop
 * then decides. Control batches always take the checked loop (their keys
 * are parsed). About 40 % fewer instructions per small record than the
 * iterator (callgrind), and record checks were most of a produce's
 * user-space CPU. */
static bool records_ok_fast(const kp_batch_t *b, unsigned flags, const uint8_t *p, size_t len, int64_t *max_ts_out) {
    if (kp_batch_is_control(b)) return false;
    const uint8_t *end = p + len;
    bool producer = (flags & KP_VALIDATE_PRODUCER) != 0;
    bool log_append = (b->attributes & KP_BATCH_TIMESTAMP_LOG_APPEND) != 0;
    int32_t prev = -1;
    int64_t max_ts = -1;
    for (int32_t i = 0; i < b->records_count; i++) {
        uint32_t u;
        if (!fast_uleb3(&p, end, &u)) return false;
        int32_t rlen = unzigzag(u);
        if (rlen < 1 || (size_t)rlen > (size_t)(end - p)) return false;
        const uint8_t *q = p + 1, *rend = p + rlen; /* past the attributes byte */
        if (!fast_uleb3(&q, rend, &u)) return false;
        int64_t ts_delta = unzigzag(u);
        if (!fast_uleb3(&q, rend, &u)) return false;
        int32_t delta = unzigzag(u);
        kp_bytes_t key, value;
        if (!fast_varbytes(&q, rend, true, &key) || !fast_varbytes(&q, rend, true, &value)) return false;
        if (!fast_uleb3(&q, rend, &u)) return false;
        int32_t headers = unzigzag(u);
        if (headers < 0) return false;
        for (int32_t h = 0; h < headers; h++) {
            kp_bytes_t hk, hv;
            if (!fast_varbytes(&q, rend, false, &hk) || !fast_varbytes(&q, rend, true, &hv)) return false;
        }
        if (q != rend) return false;
        /* check_record */
        if (producer ? delta != i : (delta < 0 || delta <= prev || delta > b->last_offset_delta)) return false;
        int64_t ts = b->max_timestamp;
        if (!log_append && (__builtin_add_overflow(b->base_timestamp, ts_delta, &ts) || ts < -1)) return false;
        if (ts > max_ts) max_ts = ts;
        prev = delta;
        p = rend;
    }
    if (p != end) return false;
    if (producer && prev != b->last_offset_delta) return false;
    *max_ts_out = max_ts;
    return true;
}

int kp_batch_validate(const kp_batch_t *b, unsigned flags, kp_arena_t *a, size_t cap_bytes, kp_batch_info_t *info) {
    int rc;
    if (!(flags & KP_VALIDATE_CRC_VERIFIED) && kp_batch_verify_crc(b) != KP_OK) return KP_ERR_CORRUPT;
    if ((rc = check_header(b, flags))) return rc;
    const uint8_t *recs;
    size_t len;
    rc = kp_batch_records(b, a, cap_bytes, &recs, &len);
    if (rc == KP_ERR_UNSUPPORTED) rc = KP_ERR_CORRUPT;
    if (rc) return rc;
    int64_t fast_max_ts;
    if (!(flags & KP_VALIDATE_NO_FAST_PATH) && records_ok_fast(b, flags, recs, len, &fast_max_ts)) {
        if (info) {
            info->records = recs;
            info->records_len = len;
            info->max_record_timestamp = fast_max_ts;
        }
        return KP_OK;
    }
    kp_record_iter_t it;
    kp_record_iter_init(&it, b, recs, len);
    kp_record_t rec;
    int32_t prev = -1, index = 0;
    int64_t max_ts = -1;
    while ((rc = kp_record_iter_next(&it, &rec)) == 1) {
        if ((rc = check_record(b, flags, &rec, prev, index))) return rc;
        if (rec.timestamp > max_ts) max_ts = rec.timestamp;
        prev = rec.offset_delta;
        index++;
    }
    /* a negative offset delta is a bad field; anything else is broken structure */
    if (rc < 0) return rc == KP_ERR_BAD_VALUE ? KP_ERR_BAD_VALUE : KP_ERR_CORRUPT;
    assert(index == b->records_count);
    /* every delta is <= lastOffsetDelta (check_record); a stored batch may
     * end below it: compaction keeps the original last offset, as Kafka */
    if ((flags & KP_VALIDATE_PRODUCER) && prev != b->last_offset_delta) return KP_ERR_BAD_VALUE;
    if (info) {
        info->records = recs;
        info->records_len = len;
        info->max_record_timestamp = max_ts;
    }
    return KP_OK;
}

int kp_control_key_read(kp_bytes_t key, int16_t *type) {
    kp_rd_t r;
    int16_t version = 0;
    if (kp_slice_is_null(key)) return KP_ERR_BAD_VALUE;
    kp_rd_init(&r, key.p, key.len);
    if (kp_rd_i16(&r, &version) || kp_rd_i16(&r, type) || version < 0) return KP_ERR_BAD_VALUE;
    return KP_OK;
}

int kp_txn_marker_value_read(kp_bytes_t value, int32_t *coordinator_epoch) {
    kp_rd_t r;
    int16_t version = 0;
    if (kp_slice_is_null(value)) return KP_ERR_BAD_VALUE;
    kp_rd_init(&r, value.p, value.len);
    if (kp_rd_i16(&r, &version) || kp_rd_i32(&r, coordinator_epoch) || version < 0) return KP_ERR_BAD_VALUE;
    return KP_OK;
}
