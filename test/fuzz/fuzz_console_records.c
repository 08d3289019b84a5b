/* libFuzzer target: the console's record walker (bk_admin_records_json,
 * broker/admin/admin_records.c), which turns log bytes read from a
 * partition into the JSON of GET /v1/partitions/{t}/{p}/records.
 *
 * The input is a run of record batches. Before the walk the target rewrites
 * each batch's CRC-32C (when the declared length fits the input), so that
 * the fuzzer reaches the record, header and decompression paths instead of
 * stopping at the checksum. The first input byte picks the start offset and
 * the record count bound. Properties: no crash, no leak, no read outside
 * the input; the JSON document is complete (every container closed) and
 * the walk never reports a next offset below its start. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "broker/admin/admin_records.h"
#include "protocol/kp_crc32c.h"

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

static void fix_crcs(uint8_t *b, size_t n) {
    for (size_t pos = 0; n - pos >= 61;) {
        uint32_t blen = be32(b + pos + 8);
        if (blen < 49 || blen > n - pos - 12) return;
        size_t size = (size_t)blen + 12;
        uint32_t crc = kp_crc32c(0, b + pos + 21, size - 21);
        b[pos + 17] = (uint8_t)(crc >> 24);
        b[pos + 18] = (uint8_t)(crc >> 16);
        b[pos + 19] = (uint8_t)(crc >> 8);
        b[pos + 20] = (uint8_t)crc;
        pos += size;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t ctl = data[0];
    size_t n = size - 1;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) return 0;
    memcpy(buf, data + 1, n);
    fix_crcs(buf, n);
    struct evbuffer *out = evbuffer_new();
    if (!out) { free(buf); return 0; }
    bk_http_json_t j;
    bk_http_json_init(&j, out);
    int64_t from = ctl & 0x0f, next;
    const char *why;
    bk_admin_records_json(buf, n, from, 1 + (ctl >> 4) * 31, &j, &next, &why);
    if (bk_http_json_finish(&j) != KP_OK && evbuffer_get_length(out) > 0) abort();
    if (next < from) abort();
    evbuffer_free(out);
    free(buf);
    return 0;
}
