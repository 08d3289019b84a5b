/* broker/node_metrics.h — the node's metrics: registry owned by the node,
 * per-API request handles cached at start, scrape-time readers for values
 * that live elsewhere (log sizes, raft epoch/leader, partition counts).
 * Loop thread only, like the registry itself. */
#ifndef SKIFF_BK_NODE_METRICS_H
#define SKIFF_BK_NODE_METRICS_H

#include <stdint.h>

#include "broker/node.h"
#include "broker/replication/parts.h"

/* Monotonic clock in ns (request latency). */
uint64_t bk_mono_ns(void);

/* Creates n->metrics with the whole catalogue and its readers. Returns KP_OK
 * or KP_ERR_NOMEM (n->metrics left NULL or freed by bk_node_metrics_free). */
KP_MUST_CHECK int bk_node_metrics_start(bk_node_t *n);

/* Frees n->metrics (after bk_admin_stop: the /metrics route holds it). */
void bk_node_metrics_free(bk_node_t *n);

/* One request of `api_key` answered `start_ns` (bk_mono_ns) ago. No-op
 * without metrics or for a key we do not serve. */
void bk_node_metrics_request(bk_node_t *n, int16_t api_key, uint64_t start_ns);

/* Produced / fetched bytes and records of partition p's topic. The topic's
 * series are looked up once per bk_part_t and kept in it (O(1) after). */
void bk_node_metrics_topic_in(bk_node_t *n, bk_part_t *p, uint64_t bytes, uint64_t records);
void bk_node_metrics_topic_out(bk_node_t *n, bk_part_t *p, uint64_t bytes);

/* Counts the error codes `resp` (a kp_<api>_response_t of api_key at
 * version) carries into skiff_request_errors_total{api,error}
 * (resp_errors.h). The walk is one pass over the response's fields; a
 * series is looked up only for a non-zero code. */
void bk_node_metrics_response(bk_node_t *n, int16_t api_key, int16_t version, const void *resp);

#endif
