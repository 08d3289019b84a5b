/* bench_crc32c — CRC-32C throughput on 64 KiB buffers (AVX-512 VPCLMULQDQ
 * folding, SSE4.2 3-way and portable), as MB/s and as a ratio to memcpy of the same buffers in the same
 * run (goal for hw: >= 1.0); then compress/decompress MB/s per codec on a
 * 1 MiB records-like sample. Prints figures; asserts nothing but sanity. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "protocol/kp_compress.h"
#include "protocol/kp_crc32c.h"

#define BUF_BYTES ((size_t)64 << 10)
#define NBUF 16            /* 1 MiB working set: cache-resident, like a fresh batch */
#define ROUNDS 600         /* ~600 MiB per measurement */
#define CODEC_BYTES ((size_t)1 << 20)
#define CODEC_ROUNDS 20

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static volatile uint32_t sink;

static double crc_mbs(uint32_t (*f)(uint32_t, const void *, size_t), uint8_t **bufs, int rounds) {
    double t0 = now_s();
    uint32_t acc = 0;
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < NBUF; i++) acc ^= f(0, bufs[i], BUF_BYTES);
    double dt = now_s() - t0;
    sink = acc;
    return (double)rounds * NBUF * BUF_BYTES / dt / 1e6;
}

/* Copies each buffer to its own destination, as a real copy would. */
static double memcpy_mbs(uint8_t **bufs, uint8_t **dst, int rounds) {
    double t0 = now_s();
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < NBUF; i++) {
            memcpy(dst[i], bufs[i], BUF_BYTES);
            sink ^= dst[i][(size_t)(r * 7 + i) % BUF_BYTES];
        }
    double dt = now_s() - t0;
    return (double)rounds * NBUF * BUF_BYTES / dt / 1e6;
}

static void bench_codecs(void) {
    uint8_t *src = malloc(CODEC_BYTES);
    size_t pos = 0;
    for (int i = 0; pos < CODEC_BYTES; i++) { /* JSON-ish records, moderately compressible */
        char rec[128];
        int n = snprintf(rec, sizeof rec, "{\"id\":%d,\"user\":\"u%05d\",\"amount\":%d.%02d,\"ok\":%s}\n", i,
                         (i * 7919) % 100000, (i * 31) % 1000, i % 100, i % 3 ? "true" : "false");
        size_t take = (size_t)n < CODEC_BYTES - pos ? (size_t)n : CODEC_BYTES - pos;
        memcpy(src + pos, rec, take);
        pos += take;
    }
    kp_arena_t a;
    kp_arena_init(&a, (size_t)64 << 20);
    for (int c = KP_CODEC_GZIP; c <= KP_CODEC_ZSTD; c++) {
        const uint8_t *z = NULL, *out;
        size_t zlen = 0, olen = 0;
        double t0 = now_s();
        for (int r = 0; r < CODEC_ROUNDS; r++) {
            kp_arena_reset(&a);
            if (kp_compress((kp_codec_t)c, src, CODEC_BYTES, &a, &z, &zlen) != KP_OK) abort();
        }
        double tc = now_s() - t0;
        kp_arena_t d; /* per-request arena, reset each time as the broker does */
        kp_arena_init(&d, (size_t)64 << 20);
        t0 = now_s();
        for (int r = 0; r < CODEC_ROUNDS; r++, kp_arena_reset(&d))
            if (kp_decompress((kp_codec_t)c, z, zlen, CODEC_BYTES, 0, &d, &out, &olen) != KP_OK || olen != CODEC_BYTES)
                abort();
        double td = now_s() - t0;
        kp_arena_free(&d);
        printf("%-7s ratio %5.2f  compress %7.1f MB/s  decompress %7.1f MB/s\n", kp_codec_name((kp_codec_t)c),
               (double)CODEC_BYTES / (double)zlen, CODEC_ROUNDS * CODEC_BYTES / tc / 1e6,
               CODEC_ROUNDS * CODEC_BYTES / td / 1e6);
        kp_arena_reset(&a);
    }
    kp_arena_free(&a);
    free(src);
}

int main(void) {
    uint8_t *bufs[NBUF], *dst[NBUF];
    srand(1);
    for (int i = 0; i < NBUF; i++) {
        bufs[i] = malloc(BUF_BYTES);
        dst[i] = calloc(1, BUF_BYTES);
        for (size_t k = 0; k < BUF_BYTES; k++) bufs[i][k] = (uint8_t)rand();
    }
    /* sanity: both implementations agree before we time them */
    uint32_t want = kp_crc32c_portable(0, bufs[0], BUF_BYTES);
    if ((kp_crc32c_have_hw() && kp_crc32c_sse42(0, bufs[0], BUF_BYTES) != want) ||
        (kp_crc32c_have_vpclmul() && kp_crc32c_vpclmul(0, bufs[0], BUF_BYTES) != want)) {
        fprintf(stderr, "bench_crc32c: implementations disagree\n");
        return 1;
    }
    crc_mbs(kp_crc32c, bufs, 20); /* warm up */
    /* best of 3 interleaved runs: the machine is shared, take the least disturbed */
    double mc = 0, hw = 0, vp = 0, port = 0;
    for (int k = 0; k < 3; k++) {
        double m = memcpy_mbs(bufs, dst, ROUNDS / 3);
        double h = kp_crc32c_have_hw() ? crc_mbs(kp_crc32c_sse42, bufs, ROUNDS / 3) : 0;
        double v = kp_crc32c_have_vpclmul() ? crc_mbs(kp_crc32c_vpclmul, bufs, ROUNDS / 3) : 0;
        double p = crc_mbs(kp_crc32c_portable, bufs, ROUNDS / 12);
        mc = m > mc ? m : mc;
        hw = h > hw ? h : hw;
        vp = v > vp ? v : vp;
        port = p > port ? p : port;
    }
    printf("crc32c on %zu KiB buffers, %d of them (%s in use), best of 3\n", BUF_BYTES >> 10, NBUF,
           kp_crc32c_impl_name());
    printf("memcpy    %8.1f MB/s\n", mc);
    if (kp_crc32c_have_vpclmul())
        printf("vpclmul   %8.1f MB/s  = %.2fx memcpy (goal >= 1.0)\n", vp, vp / mc);
    else
        printf("vpclmul   not available on this CPU\n");
    if (kp_crc32c_have_hw())
        printf("sse4.2    %8.1f MB/s  = %.2fx memcpy%s\n", hw, hw / mc, kp_crc32c_have_vpclmul() ? "" : " (goal >= 1.0)");
    else
        printf("sse4.2    not available on this CPU\n");
    printf("portable  %8.1f MB/s  = %.2fx memcpy\n", port, port / mc);
    bench_codecs();
    for (int i = 0; i < NBUF; i++) {
        free(bufs[i]);
        free(dst[i]);
    }
    return 0;
}
