/* broker/net/ratelog.c — see ratelog.h. Cost: a linear scan of at most
 * BK_NET_RATELOG_CAUSES entries per line; causes are few and fixed. */
#include "broker/net/ratelog.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void bk_net_ratelog_init(bk_net_ratelog_t *rl, uint32_t burst, int64_t window_ms) {
    assert(burst >= 1 && window_ms >= 1);
    memset(rl, 0, sizeof *rl);
    rl->burst = burst;
    rl->window_ms = window_ms;
}

static bk_net_ratelog_cause_t *find(bk_net_ratelog_t *rl, const char *cause, int64_t now_ms) {
    for (uint32_t i = 0; i < BK_NET_RATELOG_CAUSES; i++) {
        bk_net_ratelog_cause_t *c = &rl->causes[i];
        if (!c->cause[0]) {
            snprintf(c->cause, sizeof c->cause, "%s", cause[0] ? cause : "?");
            c->window_start_ms = now_ms;
            return c;
        }
        if (strncmp(c->cause, cause[0] ? cause : "?", sizeof c->cause - 1) == 0) return c;
    }
    return &rl->causes[BK_NET_RATELOG_CAUSES - 1]; /* shared by the rest */
}

/* Closes c's window if it is over: prints what it suppressed. */
static bool end_window(bk_net_ratelog_t *rl, bk_net_ratelog_cause_t *c, int64_t now_ms) {
    if (now_ms - c->window_start_ms < rl->window_ms) return false;
    bool said = false;
    if (c->dropped > 0) {
        fprintf(stderr, "skiff: %llu more lines like \"%s\" suppressed in the last %lld ms\n",
                (unsigned long long)c->dropped, c->cause, (long long)(now_ms - c->window_start_ms));
        said = true;
    }
    c->window_start_ms = now_ms;
    c->printed = 0;
    c->dropped = 0;
    return said;
}

bool bk_net_ratelog(bk_net_ratelog_t *rl, int64_t now_ms, const char *cause, const char *fmt, ...) {
    assert(cause && fmt);
    bk_net_ratelog_cause_t *c = find(rl, cause, now_ms);
    (void)end_window(rl, c, now_ms);
    if (c->printed >= rl->burst) {
        c->dropped++;
        rl->dropped_total++;
        return false;
    }
    c->printed++;
    va_list ap;
    va_start(ap, fmt);
    fputs("skiff: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return true;
}

uint32_t bk_net_ratelog_flush(bk_net_ratelog_t *rl, int64_t now_ms) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < BK_NET_RATELOG_CAUSES && rl->causes[i].cause[0]; i++)
        n += end_window(rl, &rl->causes[i], now_ms);
    return n;
}
