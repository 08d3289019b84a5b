/* Parsing "host:port" addresses as written in config files and flags. */
#ifndef SKIFF_BROKER_HOSTPORT_H
#define SKIFF_BROKER_HOSTPORT_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"

/* Longest host part accepted (DNS names are at most 253 bytes). */
#define BK_CFG_HOST_MAX 255

/* Splits `s` (`len` bytes, need not be NUL-terminated) of the form host:port,
 * [v6addr]:port or :port (empty host = all interfaces) into `host` (NUL-
 * terminated, at most BK_CFG_HOST_MAX bytes, brackets removed) and `port`
 * (0..65535; 0 = pick a free port). Returns KP_OK or KP_ERR_BAD_VALUE with a
 * short reason in `why` (static string) for a missing ':', a bad or
 * out-of-range port, a host that is too long or holds spaces. */
KP_MUST_CHECK int bk_cfg_hostport_parse(const char *s, size_t len, char host[BK_CFG_HOST_MAX + 1],
                                    uint16_t *port, const char **why);

#endif
