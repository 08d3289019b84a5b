/* broker/node_metrics.h — the node's metrics: registry owned by the node,
 * scrape-time readers for values that live elsewhere (log sizes, raft
 * epoch/leader, partition counts). The per-API series are api/api_metrics.h,
 * the per-topic ones replication/part_metrics.h. Loop thread only, like the
 * registry itself. */
#ifndef SKIFF_BK_NODE_METRICS_H
#define SKIFF_BK_NODE_METRICS_H

#include "broker/node.h"

/* Creates n->metrics with the whole catalogue and its readers, and the
 * per-API series. Returns KP_OK or KP_ERR_NOMEM (n->metrics left NULL or
 * freed by bk_broker_metrics_free). */
KP_MUST_CHECK int bk_broker_metrics_start(bk_node_t *n);

/* Frees n->metrics (after bk_http_stop: the /metrics route holds it). */
void bk_broker_metrics_free(bk_node_t *n);

#endif
