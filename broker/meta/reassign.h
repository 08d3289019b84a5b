/* broker/meta/reassign.h — ElectLeaders (43), AlterPartitionReassignments (45)
 * and ListPartitionReassignments (46): the mapping between a decoded request,
 * the controller's decisions (controller.h) and the response, kept apart
 * from the connection so it can be tested without a node.
 *
 * The decide functions run the controller decision for every partition of
 * the request against `img` (the controller's decision image), append the
 * records to `out`, and fill `r` with one result per requested partition
 * (arrays allocated from `a`; strings point into the request or are
 * static). After the records are committed, bk_meta_reassign_commit_failed /
 * bk_meta_elect_commit_failed turn every NONE result into the commit's error.
 * A partition named twice in one request gets INVALID_REQUEST for the
 * repeat and emits nothing (two decisions on one image would conflict).
 *
 * The handlers (bk_api_h_* in dispatch.h) forward to the active controller
 * (forward.c) for 43 and 45; 46 is answered from the local image. */
#ifndef SKIFF_BK_REASSIGN_H
#define SKIFF_BK_REASSIGN_H

#include <stdbool.h>
#include <stdint.h>

#include "kp_msgs.h"
#include "protocol/kp_arena.h"
#include "broker/meta/controller.h"

/* ElectLeaders (v0 decodes as election type 0, preferred). Null topic list: every partition of every topic; partitions whose
 * election was not needed are left out of the answer (KIP-460). An unknown
 * election type: top-level and per-partition INVALID_REQUEST, nothing
 * emitted. Returns KP_OK or KP_ERR_NOMEM (then answer nothing). */
KP_MUST_CHECK int bk_meta_elect_leaders_decide(bk_meta_ctrl_t *c, const bk_meta_image_t *img,
                                          const kp_elect_leaders_request_t *q, kp_arena_t *a,
                                          bk_meta_recs_t *out, kp_elect_leaders_response_t *r);
void bk_meta_elect_commit_failed(kp_elect_leaders_response_t *r, int16_t error);

/* AlterPartitionReassignments: null replicas cancel (NO_REASSIGNMENT_IN_PROGRESS
 * when none), INVALID_REPLICA_ASSIGNMENT for empty / duplicate / unknown
 * brokers, UNKNOWN_TOPIC_OR_PARTITION. Returns KP_OK or KP_ERR_NOMEM. */
KP_MUST_CHECK int bk_meta_reassign_decide(bk_meta_ctrl_t *c, const bk_meta_image_t *img,
                                     const kp_alter_partition_reassignments_request_t *q, kp_arena_t *a,
                                     bk_meta_recs_t *out, kp_alter_partition_reassignments_response_t *r);
void bk_meta_reassign_commit_failed(kp_alter_partition_reassignments_response_t *r, int16_t error);

/* ListPartitionReassignments from `img`: null topics = every partition being
 * reassigned; named partitions that are not being reassigned (or do not
 * exist) are left out, as Kafka does. Returns KP_OK or KP_ERR_NOMEM. */
KP_MUST_CHECK int bk_meta_list_reassign_answer(const bk_meta_image_t *img,
                                          const kp_list_partition_reassignments_request_t *q,
                                          kp_arena_t *a, kp_list_partition_reassignments_response_t *r);

#endif
