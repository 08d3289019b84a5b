/* broker/cluster/broker_lifecycle.h — this node as a broker of the quorum's active
 * controller: BrokerRegistration at start (and again whenever the controller
 * does not know its epoch), BrokerHeartbeat every broker.heartbeat.interval.ms;
 * on the active controller, the serving side of both (controller decisions
 * bk_meta_ctrl_register / bk_meta_ctrl_heartbeat, answered once committed) and the
 * periodic bk_meta_ctrl_tick that fences silent brokers.
 * Threading: loop thread only. */
#ifndef SKIFF_BK_BROKER_LIFECYCLE_H
#define SKIFF_BK_BROKER_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/net/net.h"
#include "protocol/kp_arena.h"
#include "protocol/kp_header.h"

typedef struct bk_node bk_node_t;

/* Starts the heartbeat timer (first registration attempt right away). */
int bk_cluster_lifecycle_start(bk_node_t *n);
void bk_cluster_lifecycle_stop(bk_node_t *n);
/* The answer to a registration or heartbeat sent with
 * bk_quorum_send_to_leader (frame NULL: lost); corr is the request's correlation id (an answer to a round that
 * was abandoned is ignored). */
void bk_cluster_lifecycle_on_response(bk_node_t *n, int kind, int32_t corr, const uint8_t *frame, size_t len);
/* Serves a decoded BrokerRegistration or BrokerHeartbeat that reached the
 * controller listener (the wiring routes the other non-raft requests there:
 * DescribeQuorum to the Kafka handler, AlterPartition to the replica
 * manager). `a` holds hdr and body; it is the caller's, valid during the call. */
void bk_cluster_lifecycle_serve(bk_node_t *n, bk_net_conn_t *conn, const kp_request_header_t *hdr, void *body, kp_arena_t *a);
/* The raft leadership of this node changed. */
void bk_cluster_lifecycle_role_changed(bk_node_t *n, bool leader);

#endif
