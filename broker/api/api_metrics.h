/* broker/api/api_metrics.h — per-API request counts, latency and error
 * codes, counted by the dispatcher in the node's registry (n->metrics,
 * created by broker/node_metrics.c). */
#ifndef SKIFF_BK_API_METRICS_H
#define SKIFF_BK_API_METRICS_H

#include <stdint.h>

#include "broker/core/node.h"

/* Creates the per-API series (n->mx) for every API of the dispatch table;
 * n->metrics must exist. KP_OK or KP_ERR_NOMEM. */
KP_MUST_CHECK int bk_api_metrics_start(bk_node_t *n);
void bk_api_metrics_free(bk_node_t *n);

/* One request of `api_key` answered `start_ns` (bk_net_mono_ns) ago. No-op
 * before bk_api_metrics_start or for an api key without series. */
void bk_api_metrics_request(bk_node_t *n, int16_t api_key, uint64_t start_ns);

/* Counts the error codes `resp` (a kp_<api>_response_t of api_key at
 * version) carries, per API and error name. */
void bk_api_metrics_response(bk_node_t *n, int16_t api_key, int16_t version, const void *resp);

#endif
