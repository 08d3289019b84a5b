/* crc32c.c — CRC-32C with a hardware path and a portable fallback.
 *
 * Portable: slicing-by-8 tables (8 KiB), about 1 byte/cycle.
 * Hardware: the SSE4.2 crc32q instruction, 8 bytes per instruction. Its
 * latency is 3 cycles, so a single dependency chain runs at a third of the
 * unit's throughput; three independent streams over thirds of a block, joined
 * with a "shift by 4 KiB of zeros" operator (a GF(2) matrix turned into four
 * 256-entry tables at start-up, so 8 lookups per 12 KiB) reach roughly 3x that.
 */
#include "protocol/kp_crc32c.h"

#include <assert.h>
#include <string.h>

#define POLY 0x82f63b78u /* reflected Castagnoli polynomial */

static uint32_t table[8][256];

/* Tables are built before main so that no thread ever sees them half-built. */
__attribute__((constructor)) static void build_tables(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++) table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

static inline uint64_t load_le64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

uint32_t kp_crc32c_portable(uint32_t crc, const void *buf, size_t n) {
    const uint8_t *p = buf;
    crc = ~crc;
    while (n >= 8) {
        uint64_t v = load_le64(p) ^ crc;
        crc = table[7][v & 0xff] ^ table[6][(v >> 8) & 0xff] ^ table[5][(v >> 16) & 0xff] ^
              table[4][(v >> 24) & 0xff] ^ table[3][(v >> 32) & 0xff] ^ table[2][(v >> 40) & 0xff] ^
              table[1][(v >> 48) & 0xff] ^ table[0][v >> 56];
        p += 8;
        n -= 8;
    }
    while (n--) crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    return ~crc;
}

/* ---- combining: crc(A || B) from crc(A), crc(B) and len(B) --------------
 * GF(2) matrix method (zlib's crc32_combine idea, written for our
 * polynomial). Costs ~32 matrix squarings per call; we call it twice per
 * 12 KiB of hardware CRC. */
static uint32_t gf2_times(const uint32_t *mat, uint32_t vec) {
    uint32_t sum = 0;
    for (int i = 0; vec; vec >>= 1, i++)
        if (vec & 1) sum ^= mat[i];
    return sum;
}

static void gf2_square(uint32_t *sq, const uint32_t *mat) {
    for (int n = 0; n < 32; n++) sq[n] = gf2_times(mat, mat[n]);
}

/* Operator that appends `len` zero bytes to a (pre/post-inverted) CRC state. */
static void zeros_operator(uint32_t out[32], size_t len) {
    uint32_t odd[32], even[32];
    odd[0] = POLY;
    for (int n = 1; n < 32; n++) odd[n] = 1u << (n - 1);
    gf2_square(even, odd); /* 2 zero bits */
    gf2_square(odd, even); /* 4 zero bits */
    /* identity */
    uint32_t acc[32];
    for (int n = 0; n < 32; n++) acc[n] = 1u << n;
    uint32_t tmp[32];
    do {
        gf2_square(even, odd); /* 1 zero byte, then doubling */
        if (len & 1) {
            for (int n = 0; n < 32; n++) tmp[n] = gf2_times(even, acc[n]);
            memcpy(acc, tmp, sizeof acc);
        }
        len >>= 1;
        if (!len) break;
        gf2_square(odd, even);
        if (len & 1) {
            for (int n = 0; n < 32; n++) tmp[n] = gf2_times(odd, acc[n]);
            memcpy(acc, tmp, sizeof acc);
        }
        len >>= 1;
    } while (len);
    memcpy(out, acc, sizeof acc);
}

#if defined(__x86_64__)
#include <cpuid.h>

#define HW_BLOCK 4096 /* bytes per stream per round */
/* The operator "append HW_BLOCK zero bytes" as 4 byte-indexed tables (4 KiB):
 * applying it is 4 lookups, where the bit-serial matrix product costs ~32
 * data-dependent branches — as much time as the CRC of the block itself. */
static uint32_t shift_tab[4][256];

__attribute__((constructor)) static void build_shift(void) {
    uint32_t op[32];
    zeros_operator(op, HW_BLOCK);
    for (int k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 256; b++) shift_tab[k][b] = gf2_times(op, b << (8 * k));
}

static inline uint32_t shift_block(uint32_t x) {
    return shift_tab[0][x & 0xff] ^ shift_tab[1][(x >> 8) & 0xff] ^ shift_tab[2][(x >> 16) & 0xff] ^
           shift_tab[3][x >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t hw_one(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c = crc;
    while (n >= 8) {
        c = __builtin_ia32_crc32di(c, load_le64(p));
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32;
}

/* 3 interleaved crc32q streams over 12 KiB rounds; raw (non-inverted) state. */
__attribute__((target("sse4.2"))) static uint32_t sse42_raw(uint32_t c0, const uint8_t *p, size_t n) {
    while (n >= 3 * HW_BLOCK) {
        uint64_t a = c0, b = 0, c = 0;
        const uint8_t *pa = p, *pb = p + HW_BLOCK, *pc = p + 2 * HW_BLOCK;
        for (size_t i = 0; i < HW_BLOCK; i += 8) {
            a = __builtin_ia32_crc32di(a, load_le64(pa + i));
            b = __builtin_ia32_crc32di(b, load_le64(pb + i));
            c = __builtin_ia32_crc32di(c, load_le64(pc + i));
        }
        /* raw (non-inverted) states combine linearly: shift and xor */
        uint32_t ab = shift_block((uint32_t)a) ^ (uint32_t)b;
        c0 = shift_block(ab) ^ (uint32_t)c;
        p += 3 * HW_BLOCK;
        n -= 3 * HW_BLOCK;
    }
    return hw_one(c0, p, n);
}

/* ---- AVX-512 VPCLMULQDQ folding ------------------------------------------
 * crc32q retires 8 bytes per cycle at best, below memcpy on recent cores.
 * Carry-less multiplication folds 64 bytes per instruction pair instead:
 * a 128-bit lane x standing for bytes [i, i+16) is replaced by
 * clmul(x.lo, K_lo) ^ clmul(x.hi, K_hi), a 16-byte value with the same CRC
 * contribution D bytes later (x * t^(8D) mod P), and xored into the data
 * there. Each (K_lo, K_hi) pair is the 64-bit solution of
 *   crc_raw(clmul(v, K_lo)) == crc_raw(v || D + 8 zero bytes),
 *   crc_raw(clmul(v, K_hi)) == crc_raw(v || D zero bytes)   for all v,
 * found by GF(2) elimination (and checked against a bitwise CRC in
 * test_crc32c). At the end the 16-byte remainder has the CRC of everything
 * folded so far, so two crc32q instructions reduce it. */
#define FOLD16_LO 0x3743f7bd00000000ull
#define FOLD16_HI 0x3171d43000000000ull
#define FOLD64_LO 0x1c19243b00000000ull
#define FOLD64_HI 0x75bba45b00000000ull
#define FOLD256_LO 0xe9a5d8be00000000ull
#define FOLD256_HI 0x1426a81500000000ull
#define VPCLMUL_MIN_BYTES 512

#include <immintrin.h>

#define VP_TARGET __attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2")))

VP_TARGET static inline __m512i fold512(__m512i x, __m512i k, __m512i next) {
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11),
                                     next, 0x96); /* a ^ b ^ c */
}

VP_TARGET static inline __m128i fold128(__m128i x, __m128i k, __m128i next) {
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next);
}

VP_TARGET static __m512i splat_pair(uint64_t lo, uint64_t hi) {
    return _mm512_set_epi64((long long)hi, (long long)lo, (long long)hi, (long long)lo, (long long)hi, (long long)lo,
                            (long long)hi, (long long)lo);
}

VP_TARGET static uint32_t vpclmul_raw(uint32_t raw, const uint8_t *p, size_t n) {
    assert(n >= 256);
    const __m512i k256 = splat_pair(FOLD256_LO, FOLD256_HI), k64 = splat_pair(FOLD64_LO, FOLD64_HI);
    const __m128i k16 = _mm_set_epi64x((long long)FOLD16_HI, (long long)FOLD16_LO);
    /* the running state enters as an xor into the first 4 data bytes */
    __m512i a0 = _mm512_xor_si512(_mm512_loadu_si512(p), _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)raw)));
    __m512i a1 = _mm512_loadu_si512(p + 64), a2 = _mm512_loadu_si512(p + 128), a3 = _mm512_loadu_si512(p + 192);
    p += 256;
    n -= 256;
    for (; n >= 256; p += 256, n -= 256) { /* 4 independent chains hide the clmul latency */
        a0 = fold512(a0, k256, _mm512_loadu_si512(p));
        a1 = fold512(a1, k256, _mm512_loadu_si512(p + 64));
        a2 = fold512(a2, k256, _mm512_loadu_si512(p + 128));
        a3 = fold512(a3, k256, _mm512_loadu_si512(p + 192));
    }
    a1 = fold512(a0, k64, a1);
    a2 = fold512(a1, k64, a2);
    a3 = fold512(a2, k64, a3);
    for (; n >= 64; p += 64, n -= 64) a3 = fold512(a3, k64, _mm512_loadu_si512(p));
    __m128i x = _mm512_extracti32x4_epi32(a3, 0);
    x = fold128(x, k16, _mm512_extracti32x4_epi32(a3, 1));
    x = fold128(x, k16, _mm512_extracti32x4_epi32(a3, 2));
    x = fold128(x, k16, _mm512_extracti32x4_epi32(a3, 3));
    for (; n >= 16; p += 16, n -= 16) x = fold128(x, k16, _mm_loadu_si128((const __m128i *)(const void *)p));
    uint64_t c = __builtin_ia32_crc32di(0, (uint64_t)_mm_cvtsi128_si64(x));
    c = __builtin_ia32_crc32di(c, (uint64_t)_mm_extract_epi64(x, 1));
    return hw_one((uint32_t)c, p, n);
}

int kp_crc32c_have_vpclmul(void) {
    static int have = -1;
    if (have < 0) {
        unsigned a, b, c, d;
        /* __builtin_cpu_supports also checks that the OS saves ZMM state */
        have = kp_crc32c_have_hw() && __builtin_cpu_supports("avx512f") && __get_cpuid_count(7, 0, &a, &b, &c, &d) &&
                       (c & (1u << 10)) /* VPCLMULQDQ */
                   ? 1
                   : 0;
    }
    return have;
}

uint32_t kp_crc32c_sse42(uint32_t crc, const void *buf, size_t n) {
    if (!kp_crc32c_have_hw()) return 0;
    return ~sse42_raw(~crc, buf, n);
}

uint32_t kp_crc32c_vpclmul(uint32_t crc, const void *buf, size_t n) {
    if (!kp_crc32c_have_vpclmul()) return 0;
    return n >= 256 ? ~vpclmul_raw(~crc, buf, n) : ~sse42_raw(~crc, buf, n);
}

uint32_t kp_crc32c_hw(uint32_t crc, const void *buf, size_t n) {
    if (!kp_crc32c_have_hw()) return 0;
    if (n >= VPCLMUL_MIN_BYTES && kp_crc32c_have_vpclmul()) return ~vpclmul_raw(~crc, buf, n);
    return ~sse42_raw(~crc, buf, n);
}

int kp_crc32c_have_hw(void) {
    static int have = -1;
    if (have < 0) {
        unsigned a, b, c, d;
        have = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2) ? 1 : 0;
    }
    return have;
}
#else
uint32_t kp_crc32c_hw(uint32_t crc, const void *buf, size_t n) {
    (void)crc; (void)buf; (void)n;
    return 0;
}
uint32_t kp_crc32c_sse42(uint32_t crc, const void *buf, size_t n) { return kp_crc32c_hw(crc, buf, n); }
uint32_t kp_crc32c_vpclmul(uint32_t crc, const void *buf, size_t n) { return kp_crc32c_hw(crc, buf, n); }
int kp_crc32c_have_hw(void) { return 0; }
int kp_crc32c_have_vpclmul(void) { return 0; }
#endif

uint32_t kp_crc32c(uint32_t crc, const void *buf, size_t n) {
    return kp_crc32c_have_hw() ? kp_crc32c_hw(crc, buf, n) : kp_crc32c_portable(crc, buf, n);
}

const char *kp_crc32c_impl_name(void) {
    return kp_crc32c_have_vpclmul() ? "avx512-vpclmulqdq" : kp_crc32c_have_hw() ? "sse4.2" : "portable";
}
