/* broker/api/resp_errors.h — the error codes a response carries, for the
 * request-error metrics (skiff_request_errors_total{api,error}).
 *
 * Walks a kp_<api>_response_t with the codec's descriptor of the response
 * (no per-API code): every INT16 field named error_code (or ending in
 * _error_code) that exists in `version` and is non-zero is reported, in
 * nested structs and arrays too. A Produce response with three failed
 * partitions reports three codes, as Kafka's ErrorsPerSec counts
 * response.errorCounts(). Cost: one pass over the response's fields
 * (records are not looked at), less than encoding it once. */
#ifndef SKIFF_BK_RESP_ERRORS_H
#define SKIFF_BK_RESP_ERRORS_H

#include <stdint.h>

typedef void (*bk_api_resp_err_fn)(void *ctx, int16_t error_code);

/* Calls fn for each non-zero error code in resp (a response of api_key at
 * version; NULL or an unknown key reports nothing). Returns how many. */
uint64_t bk_api_resp_errors(int16_t api_key, int16_t version, const void *resp, bk_api_resp_err_fn fn, void *ctx);

#endif
