/* cl_err.c — error values and the exit-code mapping of skiffctl. */
#include "clients/cl_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "protocol/kp_errors.h"

void cl_err_clear(cl_err_t *e) {
    if (!e) return;
    e->status = CL_OK;
    e->kafka_code = 0;
    e->msg[0] = '\0';
}

int cl_err_set(cl_err_t *e, int status, const char *fmt, ...) {
    if (!e) return status;
    e->status = status;
    e->kafka_code = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return status;
}

int cl_err_kafka(cl_err_t *e, int16_t code, const char *fmt, ...) {
    if (!e) return CL_E_KAFKA;
    e->status = CL_E_KAFKA;
    e->kafka_code = code;
    int n = snprintf(e->msg, sizeof e->msg, "%s: ", kp_error_name(code));
    if (n < 0 || (size_t)n >= sizeof e->msg) return CL_E_KAFKA;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg + n, sizeof e->msg - (size_t)n, fmt, ap);
    va_end(ap);
    return CL_E_KAFKA;
}

int cl_exit_code(int status) {
    switch (status) {
    case CL_OK: return CL_EXIT_OK;
    case CL_E_USAGE: return CL_EXIT_USAGE;
    case CL_E_CONNECT: return CL_EXIT_CONNECT;
    default: return CL_EXIT_FAIL;
    }
}

const char *cl_status_name(int status) {
    static const char *names[] = { "ok", "kafka", "usage", "connect", "protocol", "timeout", "nomem", "io", "network" };
    if (status < 0 || (size_t)status >= sizeof names / sizeof names[0]) return "unknown";
    return names[status];
}
