/* libFuzzer target: the copy path of Fetch below v10 on bytes read from a
 * log (broker/api/fetch_convert_int.h): st_log_read's prefix rule and the
 * zstd check / down-conversion, on any bytes. Input: one byte (version,
 * MIN_ONE), two bytes of budget, then the batches. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "broker/api/fetch_convert_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3) return 0;
    int16_t version = (int16_t)(data[0] % 10);
    unsigned flags = data[0] & 0x80 ? ST_READ_MIN_ONE : 0;
    uint64_t max = (uint64_t)data[1] << 8 | data[2];
    data += 3;
    size -= 3;
    long long k = fconv_prefix(data, size, max, flags);
    assert(k >= -1 && k <= (long long)size);
    size_t len = k < 0 ? size : (size_t)k;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) return 0;
    if (len) memcpy(buf, data, len);
    fconv_part_t p;
    memset(&p, 0, sizeof p);
    fconv_convert(version, buf, len, &p);   /* takes buf */
    assert(p.sent == p.bytes_len);
    assert(!p.error || (!p.bytes && p.sent == 0));
    if (version >= 4 && p.bytes) assert(p.bytes_len <= len && memcmp(p.bytes, data, p.bytes_len) == 0);
    free(p.mem);
    return 0;
}
