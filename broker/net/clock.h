/* broker/net/clock.h — the broker's one clock read. */
#ifndef SKIFF_BK_CLOCK_H
#define SKIFF_BK_CLOCK_H

#include <stdint.h>

/* Wall clock in ms (the only clock read; handlers pass it down). */
int64_t bk_net_now_ms(void);

/* Monotonic clock in ns (request latency). */
uint64_t bk_net_mono_ns(void);

#endif
