/* broker/config/ip_overrides.h — max.connections.per.ip.overrides
 * ("addr:count,addr:count", Kafka's format) parsed into addresses. */
#ifndef SKIFF_BROKER_IP_OVERRIDES_H
#define SKIFF_BROKER_IP_OVERRIDES_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"

/* Entries accepted in one list (each costs a compare per accept). */
#define BK_CFG_IP_OVERRIDES_MAX 64

typedef struct {
    uint8_t addr[16];   /* network order; IPv4 in the first 4 bytes */
    uint8_t addr_len;   /* 4 or 16 */
    int64_t max;        /* 0..INT32_MAX connections */
} bk_cfg_ip_override_t;

/* Parses `s` (NUL-terminated; "" = no entry) into out[0..*n). Entries are
 * "addr:count" separated by commas, blanks around them ignored; addr is a
 * numeric IPv4 or IPv6 literal (brackets allowed: "[::1]:5"); the count is
 * split at the last ':'. Host names are refused: resolving one would block
 * the event loop, and Kafka's own resolution happens once at start anyway.
 * Returns KP_OK, or KP_ERR_BAD_VALUE with the reason in `why` (why_len
 * bytes) and *n unchanged. */
KP_MUST_CHECK int bk_cfg_ip_overrides_parse(const char *s, bk_cfg_ip_override_t out[BK_CFG_IP_OVERRIDES_MAX],
                                            size_t *n, char *why, size_t why_len);

#endif
