/* cl_retry.h — bounded retries with capped exponential backoff.
 *
 * A request is retried only when its Kafka error is retriable
 * (kp_error_retriable) or the connection failed, and at most attempts_max
 * times in all. Pure functions: the caller sleeps.
 */
#ifndef SKIFF_CL_RETRY_H
#define SKIFF_CL_RETRY_H

#include <stdbool.h>
#include <stdint.h>

typedef struct cl_retry {
    int attempts_max;        /* total tries, >= 1 */
    int backoff_ms;          /* wait before the 2nd try */
    int backoff_max_ms;      /* cap on any one wait */
} cl_retry_t;

#define CL_RETRY_ATTEMPTS_DEFAULT 5
#define CL_RETRY_BACKOFF_MS_DEFAULT 100
#define CL_RETRY_BACKOFF_MAX_MS_DEFAULT 1000

cl_retry_t cl_retry_default(void);
/* Wait before try number `attempt` (1-based; attempt 1 waits 0):
 * backoff_ms * 2^(attempt-2), capped at backoff_max_ms. */
int cl_retry_backoff_ms(const cl_retry_t *p, int attempt);
/* True when try `attempt` (1-based) failed with `status` (cl_status_t) /
 * `kafka_code` and another try is allowed. */
bool cl_retry_again(const cl_retry_t *p, int attempt, int status, int16_t kafka_code);
/* Sleeps ms milliseconds (no-op for ms <= 0). */
void cl_sleep_ms(int ms);
/* Monotonic clock in microseconds. */
int64_t cl_now_us(void);

#endif
