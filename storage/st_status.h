/* st_status.h — storage status codes and the operator log hook.
 *
 * Storage functions return KP_OK or a negative status: the protocol's KP_ERR_*
 * (malformed batch bytes) or one of the ST_ERR_* below (disk and log state).
 */
#ifndef SKIFF_ST_STATUS_H
#define SKIFF_ST_STATUS_H

#include <stdarg.h>

#include "protocol/kp_wire.h"

enum {
    ST_ERR_IO = -20,           /* a syscall failed; errno is logged */
    ST_ERR_OFFLINE = -21,      /* the log found unrecoverable corruption; refuse all work */
    ST_ERR_OUT_OF_RANGE = -22, /* offset below log start or above log end */
    ST_ERR_BAD_OFFSET = -23,   /* follower append not increasing / not contiguous */
    ST_ERR_EXISTS = -24,       /* file or partition already present */
    ST_ERR_NOT_FOUND = -25,    /* file, partition or entry absent */
};

/* Human-readable name of any KP_ERR_* / ST_ERR_* status. Never NULL. */
const char *st_status_str(int status);

typedef enum st_log_level {
    ST_LOG_DEBUG = 0,
    ST_LOG_INFO = 1,
    ST_LOG_WARN = 2,
    ST_LOG_ERROR = 3,
} st_log_level_t;

/* Receives one formatted operator message (no trailing newline). */
typedef void (*st_log_fn)(void *ctx, st_log_level_t level, const char *msg);

/* Routes storage log lines to fn(ctx, ...); fn == NULL restores the default,
 * which prints "storage LEVEL: msg" to stderr. Call once at start-up, before
 * any log is opened (not synchronised). */
void st_set_log_fn(st_log_fn fn, void *ctx);

/* Formats and emits one line through the hook (messages over 1 KiB are cut). */
void st_logf(st_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
