/* broker/cluster/internal_topic.h — creation of an internal topic (__consumer_offsets,
 * __transaction_state) on first use, the way Kafka does it: replication
 * factor min(wanted, usable brokers); decided and committed here when this
 * node is the controller, otherwise sent to the controller as a CreateTopics
 * (forward.h). One mechanism for both coordinators. Loop thread only. */
#ifndef SKIFF_BK_INTERNAL_TOPIC_H
#define SKIFF_BK_INTERNAL_TOPIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/meta/controller.h"
#include "broker/core/node.h"
#include "broker/cluster/topics.h"

#define BK_CLUSTER_INTERNAL_TOPIC_CONFIGS_MAX 8

/* Starts creating `name` with nparts partitions and the configs kv[0..nkv)
 * (borrowed; nkv <= BK_CLUSTER_INTERNAL_TOPIC_CONFIGS_MAX). True when a creation is
 * under way: done(arg, status) follows exactly once. False (logged) when
 * nothing was started: no usable broker, the controller refused, or there is
 * no controller to forward to; the caller retries on its next lookup. */
bool bk_cluster_internal_topic_create(bk_node_t *n, const char *name, int32_t nparts, int64_t rf_wanted,
                              const bk_meta_ctrl_kv_t *kv, size_t nkv, bk_cluster_topics_done_fn done, void *arg);

/* FindCoordinator's answer for a coordinator that lives on the leader of an
 * internal topic's partition `p`: its id and Kafka endpoint (borrowed from
 * the image). `ready_here` says whether this node, when it is that leader,
 * has its coordinator loaded: until then the answer is
 * COORDINATOR_NOT_AVAILABLE, which every client retries by asking again,
 * where answering "it is me" would send it into COORDINATOR_LOAD_IN_PROGRESS,
 * an error some clients (kafkajs' sendOffsets) do not retry. */
int16_t bk_cluster_internal_coordinator(const bk_node_t *n, const bk_meta_partition_t *p, bool ready_here, int32_t *node_id,
                                const char **host, int32_t *port);

#endif
