/* broker/cluster/forward.h — requests that change metadata, reaching a node that is
 * not the active controller, are forwarded to it.
 *
 * The request frame is sent unchanged (same correlation id, same version)
 * to the controller's Kafka listener (its endpoint from the image) over one
 * connection per controller; its answer is relayed unchanged to the client
 * once this node has applied the change: after the answer, we wait until a
 * Fetch sent to the leader after it has been answered (bk_quorum_fetch_prompt:
 * sent at once, never held), at most BK_CLUSTER_FORWARD_CATCHUP_MS. A controller that lost its
 * role meanwhile answers NOT_CONTROLLER itself, which the client handles.
 * Without a known controller nothing is forwarded: the local handler answers
 * NOT_CONTROLLER. Auto-creation (Metadata) is forwarded as a CreateTopics.
 * Threading: loop thread only. */
#ifndef SKIFF_BK_FORWARD_H
#define SKIFF_BK_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/net/net.h"
#include "kp_msgs.h"
#include "broker/cluster/topics.h"

typedef struct bk_node bk_node_t;

#define BK_CLUSTER_FORWARD_CATCHUP_MS 3000
#define BK_CLUSTER_FORWARD_INFLIGHT_MAX 64

/* The api key of a request frame (its first two bytes; len >= 2). */
static inline int16_t bk_cluster_frame_api(const uint8_t *frame) {
    return (int16_t)((uint16_t)frame[0] << 8 | frame[1]);
}

/* The metadata-changing APIs a node that is not the active controller
 * forwards. Inline so the data path (Produce, Fetch) decides "not mine"
 * without a call into the quorum. */
static inline bool bk_cluster_forwarded_api(int16_t k) {
    return k == KP_API_CREATE_TOPICS || k == KP_API_DELETE_TOPICS || k == KP_API_CREATE_PARTITIONS ||
           k == KP_API_ALTER_CONFIGS || k == KP_API_INCREMENTAL_ALTER_CONFIGS || k == KP_API_ELECT_LEADERS ||
           k == KP_API_ALTER_PARTITION_REASSIGNMENTS || k == KP_API_ALTER_USER_SCRAM_CREDENTIALS ||
           k == KP_API_CREATE_ACLS || k == KP_API_DELETE_ACLS ||
           k == KP_API_UPDATE_FEATURES ||
           k == KP_API_ALTER_CLIENT_QUOTAS;
}

/* Takes the frame when it must go to the controller: returns true and
 * completes the connection's current slot later. False: handle it here. */
bool bk_cluster_forward_frame(bk_node_t *n, bk_net_conn_t *conn, const uint8_t *frame, size_t len);

/* Auto-creation through the controller; done(arg, status) once the topics
 * exist here (or the attempt failed). False when there is nothing to forward
 * to (no quorum, or this node is the controller). */
bool bk_cluster_forward_auto_create(bk_node_t *n, const char *const *names, size_t cnt, bk_cluster_topics_done_fn done,
                            void *arg);

/* A CreateTopics of the given topics (borrowed; encoded at once) through
 * the controller; done(arg, status) as for bk_cluster_forward_auto_create (e.g. the
 * group coordinator's __consumer_offsets with its partitions, RF and
 * configs). False when there is nothing to forward to. */
bool bk_cluster_forward_create_topics(bk_node_t *n, const kp_create_topics_request_creatable_topic_t *t, size_t cnt,
                              bk_cluster_topics_done_fn done, void *arg);

/* The answer of a forwarded request: status KP_OK with the controller's
 * response frame (after its size; valid during the call only), else the
 * failure (controller lost, out of memory) with NULL. */
typedef void (*bk_cluster_forward_resp_fn)(void *arg, int status, const uint8_t *resp, size_t len);

/* Sends a request frame (header and body, without the size prefix) of a
 * forwarded API (bk_cluster_forwarded_api) to the active controller, as a
 * client's would be (the admin port's topic actions on a node that is not
 * the controller); done is called once, after this node has applied the
 * change (or waited BK_CLUSTER_FORWARD_CATCHUP_MS). False: nothing to
 * forward to (no quorum, this node leads it, no controller known) or
 * BK_CLUSTER_FORWARD_INFLIGHT_MAX in flight; done is then not called. */
bool bk_cluster_forward_request(bk_node_t *n, const uint8_t *frame, size_t len, bk_cluster_forward_resp_fn done,
                                void *arg);

/* Frees the connection and fails pending forwards (node shutdown). */
void bk_cluster_forward_stop(bk_node_t *n);

#endif
