/* broker/node_metrics.h — the node's metrics: registry owned by the node,
 * per-API request handles cached at start, scrape-time readers for values
 * that live elsewhere (log sizes, raft epoch/leader, partition counts).
 * Loop thread only, like the registry itself. */
#ifndef SKIFF_BK_NODE_METRICS_H
#define SKIFF_BK_NODE_METRICS_H

#include <stdint.h>

#include "broker/node.h"

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

/* Produced / fetched bytes and records of `topic` (a series lookup). */
void bk_node_metrics_topic_in(bk_node_t *n, const char *topic, uint64_t bytes, uint64_t records);
void bk_node_metrics_topic_out(bk_node_t *n, const char *topic, uint64_t bytes);

#endif
