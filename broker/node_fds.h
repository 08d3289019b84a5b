/* broker/node_fds.h — the node's file-descriptor budget (issue 16 finding 4).
 *
 * One CreateTopics of 15,000 partitions used to exhaust RLIMIT_NOFILE (every
 * replica holds its segments' .log files open): accept, produce and fetch
 * failed and thousands of partitions stayed offline. At start the node
 * raises its soft open-file limit to the hard one and derives from it how
 * many partition replicas it may host; the controller refuses creations
 * beyond that (controller.h: cfg.max_replicas_per_node, POLICY_VIOLATION). */
#ifndef SKIFF_BK_NODE_FDS_H
#define SKIFF_BK_NODE_FDS_H

#include <stdint.h>

#include "broker/config/config.h"

/* RLIM_INFINITY as a count */
#define BK_BROKER_FDS_UNLIMITED UINT64_MAX

/* Raises the soft RLIMIT_NOFILE to the hard limit (a failure is logged and
 * the old limit kept) and returns the soft limit in force afterwards
 * (BK_BROKER_FDS_UNLIMITED when unlimited). Call once at start-up, before
 * the logs are opened. */
uint64_t bk_broker_fds_raise(int32_t node_id);

/* The replicas-per-node limit: max.replicas.per.node when >= 0, else
 * bk_meta_ctrl_replicas_for_fds(nofile) (-1 = no limit when the fd limit is
 * unlimited). */
int32_t bk_broker_fds_replica_limit(const bk_cfg_t *cfg, uint64_t nofile);

#endif
