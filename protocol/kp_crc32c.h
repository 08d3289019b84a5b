/* kp_crc32c.h — CRC-32C (Castagnoli), as record batches v2 use it.
 *
 * The implementation is picked once at run time: the SSE4.2 crc32
 * instruction where the CPU has it, a table-driven loop elsewhere.
 * Both give the same answers; tests run both.
 */
#ifndef SKIFF_KP_CRC32C_H
#define SKIFF_KP_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extends `crc` (0 to start) over n bytes. kp_crc32c(0, "123456789", 9)
 * is 0xE3069283. */
uint32_t kp_crc32c(uint32_t crc, const void *buf, size_t n);

/* The individual implementations, for tests and benchmarks. */
uint32_t kp_crc32c_portable(uint32_t crc, const void *buf, size_t n);
/* Returns 0 and does nothing useful when the CPU lacks SSE4.2: check
 * kp_crc32c_have_hw() first. */
uint32_t kp_crc32c_hw(uint32_t crc, const void *buf, size_t n);
int kp_crc32c_have_hw(void);
/* The two hardware paths kp_crc32c_hw chooses between (each returns 0 when
 * the CPU lacks it): 3 interleaved SSE4.2 crc32q streams, and AVX-512
 * VPCLMULQDQ folding (used from 512 bytes on when the CPU and OS have it). */
uint32_t kp_crc32c_sse42(uint32_t crc, const void *buf, size_t n);
uint32_t kp_crc32c_vpclmul(uint32_t crc, const void *buf, size_t n);
int kp_crc32c_have_vpclmul(void);
/* Name of the implementation kp_crc32c uses for large buffers
 * ("avx512-vpclmulqdq", "sse4.2" or "portable"). */
const char *kp_crc32c_impl_name(void);

#endif
