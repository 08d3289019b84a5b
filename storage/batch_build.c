/* batch_build.c — uncompressed RecordBatch v2 encoder. */
#include "storage/st_batch_build.h"

#include <assert.h>

#include "protocol/kp_batch.h"
#include "protocol/kp_crc32c.h"

static size_t varbytes_size(kp_bytes_t b) {
    if (kp_slice_is_null(b)) return kp_varint_size(-1);
    return kp_varint_size((int32_t)b.len) + b.len;
}

static size_t record_body_size(const st_batch_hdr_t *h, const st_rec_t *r) {
    return 1 + kp_varlong_size(r->timestamp - h->base_timestamp) + kp_varint_size(r->offset_delta) +
           varbytes_size(r->key) + varbytes_size(r->value) + kp_varint_size(r->headers_count) + r->headers.len;
}

size_t st_batch_encoded_size(const st_batch_hdr_t *h, const st_rec_t *recs, int32_t n) {
    size_t total = KP_BATCH_HEADER_BYTES;
    for (int32_t i = 0; i < n; i++) {
        size_t body = record_body_size(h, &recs[i]);
        total += kp_varint_size((int32_t)body) + body;
    }
    return total;
}

static int wr_varbytes(kp_wr_t *w, kp_bytes_t b) {
    if (kp_slice_is_null(b)) return kp_wr_varint(w, -1);
    int rc = kp_wr_varint(w, (int32_t)b.len);
    return rc ? rc : kp_wr_raw(w, b.p, b.len);
}

static int wr_record(kp_wr_t *w, const st_batch_hdr_t *h, const st_rec_t *r) {
    int rc;
    if ((rc = kp_wr_varint(w, (int32_t)record_body_size(h, r))) || (rc = kp_wr_i8(w, 0)) ||
        (rc = kp_wr_varlong(w, r->timestamp - h->base_timestamp)) || (rc = kp_wr_varint(w, r->offset_delta)) ||
        (rc = wr_varbytes(w, r->key)) || (rc = wr_varbytes(w, r->value)) ||
        (rc = kp_wr_varint(w, r->headers_count)) || (rc = kp_wr_raw(w, r->headers.p, r->headers.len)))
        return rc;
    return KP_OK;
}

int st_batch_encode(const st_batch_hdr_t *h, const st_rec_t *recs, int32_t n, uint8_t *out, size_t cap,
                    size_t *len) {
    assert((h->attributes & KP_BATCH_COMPRESSION_MASK) == 0);
    assert(n >= 0);
    size_t total = st_batch_encoded_size(h, recs, n);
    if (total > cap || total - KP_BATCH_LOG_OVERHEAD > INT32_MAX) return KP_ERR_OVERFLOW;
    kp_wr_t w;
    kp_wr_init(&w, out, cap);
    int rc;
    if ((rc = kp_wr_i64(&w, h->base_offset)) || (rc = kp_wr_i32(&w, (int32_t)(total - KP_BATCH_LOG_OVERHEAD))) ||
        (rc = kp_wr_i32(&w, h->leader_epoch)) || (rc = kp_wr_i8(&w, KP_BATCH_MAGIC_V2)) ||
        (rc = kp_wr_u32(&w, 0)) || (rc = kp_wr_i16(&w, h->attributes)) ||
        (rc = kp_wr_i32(&w, h->last_offset_delta)) || (rc = kp_wr_i64(&w, h->base_timestamp)) ||
        (rc = kp_wr_i64(&w, h->max_timestamp)) || (rc = kp_wr_i64(&w, h->producer_id)) ||
        (rc = kp_wr_i16(&w, h->producer_epoch)) || (rc = kp_wr_i32(&w, h->base_sequence)) ||
        (rc = kp_wr_i32(&w, n)))
        return rc;
    for (int32_t i = 0; i < n; i++)
        if ((rc = wr_record(&w, h, &recs[i]))) return rc;
    assert(w.pos == total);
    st_batch_restamp_crc(out, total);
    *len = total;
    return KP_OK;
}

void st_batch_restamp_crc(uint8_t *batch, size_t size) {
    assert(size >= KP_BATCH_HEADER_BYTES);
    uint32_t crc = kp_crc32c(0, batch + KP_BATCH_ATTR_OFFSET, size - KP_BATCH_ATTR_OFFSET);
    kp_store_be32(batch + KP_BATCH_CRC_OFFSET, crc);
}
