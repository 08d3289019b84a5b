/* broker/net/ratelog.h — rate-limited log lines, one budget per cause.
 *
 * A hostile or broken peer can make the node log one line per connection
 * (a fuzzer made 14,588 in one run). Each cause (a constant string naming
 * it; copied) may print `burst` lines per `window_ms`; further lines of that cause
 * are counted, and the count is printed once the window ends ("... N more
 * lines like this suppressed"), from the next line of that cause or from
 * bk_net_ratelog_flush (the net calls it every second). Loop thread only;
 * no globals: each owner embeds its own bk_net_ratelog_t. */
#ifndef SKIFF_BK_NET_RATELOG_H
#define SKIFF_BK_NET_RATELOG_H

#include <stdbool.h>
#include <stdint.h>

/* Distinct causes tracked per limiter; a further cause shares the last entry. */
#define BK_NET_RATELOG_CAUSES 16
#define BK_NET_RATELOG_BURST_DEFAULT 5
#define BK_NET_RATELOG_WINDOW_MS_DEFAULT 10000

typedef struct {
    char cause[48];          /* "" = free entry; the cause, cut to 47 bytes */
    int64_t window_start_ms; /* start of the current window */
    uint32_t printed;        /* lines printed in the current window */
    uint64_t dropped;        /* lines suppressed in the current window */
} bk_net_ratelog_cause_t;

typedef struct {
    uint32_t burst;          /* lines per cause per window, >= 1 */
    int64_t window_ms;       /* >= 1 */
    uint64_t dropped_total;  /* every line suppressed since init */
    bk_net_ratelog_cause_t causes[BK_NET_RATELOG_CAUSES];
} bk_net_ratelog_t;

void bk_net_ratelog_init(bk_net_ratelog_t *rl, uint32_t burst, int64_t window_ms);

/* Prints "skiff: <fmt...>\n" to stderr unless `cause` has used its burst in
 * the current window; returns whether it printed. `cause` is copied (causes
 * equal in their first 47 bytes are one cause). */
bool bk_net_ratelog(bk_net_ratelog_t *rl, int64_t now_ms, const char *cause, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Ends the windows that are over, printing one line per cause that
 * suppressed lines in it. Returns the number of summary lines printed. */
uint32_t bk_net_ratelog_flush(bk_net_ratelog_t *rl, int64_t now_ms);

#endif
