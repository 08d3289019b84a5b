/* cl_group.h — classic consumer-group membership for one topic:
 * JoinGroup / SyncGroup / Heartbeat / LeaveGroup, protocol type "consumer",
 * the "range" assignor (Kafka's RangeAssignor: members sorted by id, each gets
 * a contiguous run of n/m partitions, the first n%m one more).
 *
 * Single-threaded: the caller calls cl_group_heartbeat between polls; a
 * rebalance announced there (REBALANCE_IN_PROGRESS) is reported as
 * CL_GROUP_REJOIN and the caller joins again.
 */
#ifndef SKIFF_CL_GROUP_H
#define SKIFF_CL_GROUP_H

#include <stdbool.h>
#include <stdint.h>

#include "clients/cl_client.h"

#define CL_VER_JOIN_GROUP 5
#define CL_VER_SYNC_GROUP 3
#define CL_VER_HEARTBEAT 3
#define CL_VER_LEAVE_GROUP 2
#define CL_GROUP_JOIN_TRIES_MAX 10   /* MEMBER_ID_REQUIRED / rebalance rounds per join */
#define CL_GROUP_REJOIN 100          /* cl_group_heartbeat: the group is rebalancing */
#define CL_GROUP_JOIN_MARGIN_MS 5000 /* JoinGroup deadline = rebalance timeout + this */

typedef struct cl_group {
    cl_client_t *cl;                  /* not owned */
    char group[256];
    char topic[256];
    int32_t npartitions;
    char member_id[256];
    int32_t generation;
    int32_t coordinator;
    bool leader;
    int session_timeout_ms;
    int heartbeat_interval_ms;
    int64_t last_heartbeat_us;
    uint8_t *assigned;                /* npartitions flags: 1 = ours */
    int32_t nassigned;
} cl_group_t;

/* Range assignment of `npartitions` among `nmembers` (sorted by id): member
 * `index` gets partitions [*first, *first + *count). */
void cl_range_assign(int32_t nmembers, int32_t npartitions, int32_t index, int32_t *first, int32_t *count);

/* Prepares membership of `group` for `topic` (npartitions from the caller's
 * metadata). No request is sent. Free with cl_group_close. */
CL_MUST_CHECK int cl_group_init(cl_group_t *g, cl_client_t *cl, const char *group, const char *topic,
                                int32_t npartitions, cl_err_t *e);
/* Joins (or rejoins) and syncs; on CL_OK `assigned` holds our partitions. */
CL_MUST_CHECK int cl_group_join(cl_group_t *g, cl_err_t *e);
/* Sends a heartbeat when one is due. CL_OK, CL_GROUP_REJOIN, or an error. */
int cl_group_heartbeat(cl_group_t *g, cl_err_t *e);
/* Commits offsets[0..n) (entries < 0 skipped) as this member/generation. */
CL_MUST_CHECK int cl_group_commit(cl_group_t *g, const int64_t *offsets, cl_err_t *e);
/* Leaves the group (best effort) and frees. */
void cl_group_close(cl_group_t *g);

#endif
