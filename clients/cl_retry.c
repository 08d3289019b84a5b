/* cl_retry.c — retry policy (see cl_retry.h). */
#include "clients/cl_retry.h"

#include <time.h>

#include "clients/cl_err.h"
#include "protocol/kp_errors.h"

cl_retry_t cl_retry_default(void) {
    cl_retry_t p = { CL_RETRY_ATTEMPTS_DEFAULT, CL_RETRY_BACKOFF_MS_DEFAULT, CL_RETRY_BACKOFF_MAX_MS_DEFAULT };
    return p;
}

int cl_retry_backoff_ms(const cl_retry_t *p, int attempt) {
    if (attempt <= 1) return 0;
    int64_t ms = p->backoff_ms;
    /* doubling stops once past the cap, so the loop is bounded by ~31 steps */
    for (int i = 2; i < attempt && ms < p->backoff_max_ms; i++) ms *= 2;
    return ms > p->backoff_max_ms ? p->backoff_max_ms : (int)ms;
}

bool cl_retry_again(const cl_retry_t *p, int attempt, int status, int16_t kafka_code) {
    if (attempt >= p->attempts_max) return false;
    if (status == CL_E_CONNECT || status == CL_E_TIMEOUT || status == CL_E_NETWORK) return true;
    return status == CL_E_KAFKA && kp_error_retriable(kafka_code);
}

void cl_sleep_ms(int ms) {
    if (ms <= 0) return;
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0) {
    }
}

int64_t cl_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
