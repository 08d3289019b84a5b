/* st_status.h — storage status codes and the operator log hook.
 *
 * Storage functions return KP_OK or a negative status: the protocol's KP_ERR_*
 * (malformed batch bytes) or one of the ST_ERR_* below (disk and log state).
 */
#ifndef SKIFF_ST_STATUS_H
#define SKIFF_ST_STATUS_H

#include <stdarg.h>

#include "protocol/kp_wire.h"

/* X(NAME, value, description); the range is storage's share of the status
 * space (the table above KP_STATUS_LIST in protocol/kp_wire.h). */
#define ST_STATUS_MIN (-39)
#define ST_STATUS_MAX (-20)
#define ST_STATUS_LIST(X) \
    X(ST_ERR_IO, -20, "i/o error")                          /* a syscall failed; errno is logged */ \
    X(ST_ERR_OFFLINE, -21, "log offline (corruption)")      /* unrecoverable corruption; refuse all work */ \
    X(ST_ERR_OUT_OF_RANGE, -22, "offset out of range")      /* below log start or above log end */ \
    X(ST_ERR_BAD_OFFSET, -23, "offsets not increasing")     /* follower append not increasing / contiguous */ \
    X(ST_ERR_EXISTS, -24, "already exists")                 /* file or partition already present */ \
    X(ST_ERR_NOT_FOUND, -25, "not found")                   /* file, partition or entry absent */

enum {
#define ST_STATUS_ENUM_(name, value, text) name = value,
    ST_STATUS_LIST(ST_STATUS_ENUM_)
#undef ST_STATUS_ENUM_
};

#define ST_STATUS_IN_RANGE_(name, value, text) \
    _Static_assert((value) >= ST_STATUS_MIN && (value) <= ST_STATUS_MAX, #name " is outside ST_STATUS_MIN..MAX");
ST_STATUS_LIST(ST_STATUS_IN_RANGE_)
#undef ST_STATUS_IN_RANGE_
_Static_assert(ST_STATUS_MAX < KP_STATUS_MIN || KP_STATUS_MAX < ST_STATUS_MIN,
               "storage and protocol status ranges overlap");

/* Description of any KP_ERR_* / ST_ERR_* status. Never NULL. */
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
