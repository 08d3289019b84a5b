/* status.c — status names and the operator log hook. */
#include "storage/st_status.h"

#include <stdio.h>

static st_log_fn g_log_fn;
static void *g_log_ctx;

const char *st_status_str(int status) {
    switch (status) {
#define ST_STATUS_CASE_(name, value, text) case name: return text;
    ST_STATUS_LIST(ST_STATUS_CASE_)
#undef ST_STATUS_CASE_
    default: return kp_status_str(status);
    }
}

void st_set_log_fn(st_log_fn fn, void *ctx) {
    g_log_fn = fn;
    g_log_ctx = ctx;
}

void st_logf(st_log_level_t level, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (g_log_fn) {
        g_log_fn(g_log_ctx, level, msg);
        return;
    }
    static const char *names[] = { "DEBUG", "INFO", "WARN", "ERROR" };
    fprintf(stderr, "storage %s: %s\n", names[level & 3], msg);
}
