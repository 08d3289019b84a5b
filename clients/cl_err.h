/* cl_err.h — how clients/ reports failure.
 *
 * Every fallible cl_ function returns a cl_status_t and fills a cl_err_t
 * with a one-line message for people ("NOT_LEADER_OR_FOLLOWER: produce to
 * orders-3 via node 2"). Kafka error codes keep their Kafka names
 * (kp_error_name). skiffctl maps the status to its exit code with
 * cl_exit_code, the contract scripts rely on.
 */
#ifndef SKIFF_CL_ERR_H
#define SKIFF_CL_ERR_H

#include <stdint.h>

#define CL_MUST_CHECK __attribute__((warn_unused_result))

typedef enum cl_status {
    CL_OK = 0,
    CL_E_KAFKA = 1,     /* the broker answered with a Kafka error code */
    CL_E_USAGE = 2,     /* bad arguments from the caller */
    CL_E_CONNECT = 3,   /* cannot connect to (or lost) a broker */
    CL_E_PROTO = 4,     /* malformed or unexpected response */
    CL_E_TIMEOUT = 5,   /* no answer within the deadline */
    CL_E_NOMEM = 6,
    CL_E_IO = 7,        /* local I/O (stdin, files) */
    CL_E_NETWORK = 8,   /* connected, then the connection broke mid-call */
} cl_status_t;

/* Exit codes of skiffctl (documented in clients/README.md). */
#define CL_EXIT_OK 0
#define CL_EXIT_FAIL 1      /* Kafka or operation error */
#define CL_EXIT_USAGE 2     /* usage error */
#define CL_EXIT_CONNECT 3   /* cannot connect */

#define CL_ERR_MSG_BYTES 512

typedef struct cl_err {
    int status;           /* cl_status_t */
    int16_t kafka_code;   /* valid when status == CL_E_KAFKA */
    char msg[CL_ERR_MSG_BYTES];
} cl_err_t;

/* Clears e to CL_OK. */
void cl_err_clear(cl_err_t *e);
/* Sets status and a printf message; returns `status` so callers can
 * `return cl_err_set(...)`. e may be NULL. */
int cl_err_set(cl_err_t *e, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Sets CL_E_KAFKA with `code`; the message is "NAME: <fmt>". */
int cl_err_kafka(cl_err_t *e, int16_t code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* skiffctl exit code for a status: 0, 1, 2 or 3. */
int cl_exit_code(int status);
/* Short name of a status ("connect", "kafka", ...). */
const char *cl_status_name(int status);

#endif
