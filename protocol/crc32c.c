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

__attribute__((target("sse4.2"))) uint32_t kp_crc32c_hw(uint32_t crc, const void *buf, size_t n) {
    if (!kp_crc32c_have_hw()) return 0;
    const uint8_t *p = buf;
    uint32_t c0 = ~crc;
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
    return ~hw_one(c0, p, n);
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
int kp_crc32c_have_hw(void) { return 0; }
#endif

uint32_t kp_crc32c(uint32_t crc, const void *buf, size_t n) {
    return kp_crc32c_have_hw() ? kp_crc32c_hw(crc, buf, n) : kp_crc32c_portable(crc, buf, n);
}

const char *kp_crc32c_impl_name(void) { return kp_crc32c_have_hw() ? "sse4.2" : "portable" ; }
