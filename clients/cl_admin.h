/* cl_admin.h — topics, partitions, configs, groups and cluster metadata.
 *
 * Each call sends one request, retries retriable errors (bounded by the
 * client's retry policy; NOT_CONTROLLER / NOT_COORDINATOR re-resolve the
 * target first), and turns the first per-resource error into a cl_err_t
 * naming the resource ("TOPIC_ALREADY_EXISTS: topic 'orders': ...").
 * Calls that return a decoded response allocate it in the caller's arena;
 * it lives until that arena is reset.
 */
#ifndef SKIFF_CL_ADMIN_H
#define SKIFF_CL_ADMIN_H

#include <stdbool.h>
#include <stdint.h>

#include "clients/cl_client.h"

#define CL_RESOURCE_TOPIC 2
#define CL_RESOURCE_BROKER 4

/* Target of an admin request. */
#define CL_TARGET_ANY (-1)
#define CL_TARGET_CONTROLLER (-2)

/* Checks a decoded response; returns CL_OK or fills e (a Kafka error with
 * the resource named). */
typedef int (*cl_check_fn)(const void *resp, void *ctx, cl_err_t *e);

/* Sends req (API `api`, our highest version `ver`) to `target` — a node id,
 * CL_TARGET_ANY or CL_TARGET_CONTROLLER — or, when coord_key is non-NULL, to
 * the coordinator of coord_key (key_type 0 = group, 1 = transactional id),
 * resolved again before each attempt. The decoded response is stored in
 * *resp (in arena a) and passed to check (may be NULL). Retriable failures
 * are retried under the client's retry policy. */
CL_MUST_CHECK int cl_admin_call(cl_client_t *c, int32_t target, const char *coord_key, int8_t key_type, int16_t api,
                                int16_t ver, const void *req, void **resp, kp_arena_t *a, cl_check_fn check,
                                void *ctx, cl_err_t *e);

/* Creates a topic. partitions / rf of -1 take the broker's defaults.
 * configs: n "key=value" strings. */
CL_MUST_CHECK int cl_admin_create_topic(cl_client_t *c, const char *name, int32_t partitions, int16_t rf,
                                        const char *const *configs, int nconfigs, cl_err_t *e);
CL_MUST_CHECK int cl_admin_delete_topic(cl_client_t *c, const char *name, cl_err_t *e);
/* Grows a topic to `count` partitions in total. */
CL_MUST_CHECK int cl_admin_create_partitions(cl_client_t *c, const char *name, int32_t count, cl_err_t *e);
/* DescribeConfigs of one resource (CL_RESOURCE_*); *out points into a. */
CL_MUST_CHECK int cl_admin_describe_configs(cl_client_t *c, int8_t type, const char *name, kp_arena_t *a,
                                            const kp_describe_configs_response_describe_configs_result_t **out,
                                            cl_err_t *e);
/* IncrementalAlterConfigs: sets ("key=value") and deletes ("key"). */
CL_MUST_CHECK int cl_admin_alter_configs(cl_client_t *c, int8_t type, const char *name, const char *const *sets,
                                         int nsets, const char *const *deletes, int ndeletes, cl_err_t *e);

/* One group from ListGroups; node_id is the broker that listed it. */
typedef void (*cl_group_fn)(void *ctx, int32_t node_id, const kp_list_groups_response_listed_group_t *g);
/* Lists groups on every broker in the metadata (refreshed first). */
CL_MUST_CHECK int cl_admin_list_groups(cl_client_t *c, cl_group_fn fn, void *ctx, cl_err_t *e);
CL_MUST_CHECK int cl_admin_describe_group(cl_client_t *c, const char *group, kp_arena_t *a,
                                          const kp_describe_groups_response_described_group_t **out, cl_err_t *e);
/* ConsumerGroupDescribe (KIP-848 consumer groups: epochs, assignments). */
CL_MUST_CHECK int cl_admin_describe_consumer_group(cl_client_t *c, const char *group, kp_arena_t *a,
                                                   const kp_consumer_group_describe_response_described_group_t **out,
                                                   cl_err_t *e);
CL_MUST_CHECK int cl_admin_delete_group(cl_client_t *c, const char *group, cl_err_t *e);

/* Committed offsets of `group` for partitions 0..n-1 of `topic`
 * (-1 = none committed). */
CL_MUST_CHECK int cl_group_fetch_offsets(cl_client_t *c, const char *group, const char *topic, int64_t *out,
                                         int32_t n, cl_err_t *e);
/* Every topic `group` has committed offsets for; *out points into a. */
CL_MUST_CHECK int cl_group_fetch_all_offsets(cl_client_t *c, const char *group, kp_arena_t *a,
                                             const kp_offset_fetch_response_t **out, cl_err_t *e);
/* Commits offsets[0..n) for partitions 0..n-1 of topic (entries < 0 are
 * skipped) as a simple, memberless commit (generation -1): allowed only while
 * the group has no active members, as for kafka-consumer-groups
 * --reset-offsets. */
CL_MUST_CHECK int cl_group_commit_offsets(cl_client_t *c, const char *group, const char *topic,
                                          const int64_t *offsets, int32_t n, cl_err_t *e);

/* Same as a member of generation `generation` (member_id non-NULL). */
CL_MUST_CHECK int cl_group_commit_offsets_as(cl_client_t *c, const char *group, const char *topic,
                                             const int64_t *offsets, int32_t n, int32_t generation,
                                             const char *member_id, cl_err_t *e);

/* DescribeCluster; *out points into a. UNSUPPORTED_VERSION when the broker
 * lacks it (callers then fall back to Metadata). */
CL_MUST_CHECK int cl_admin_describe_cluster(cl_client_t *c, kp_arena_t *a, const kp_describe_cluster_response_t **out,
                                            cl_err_t *e);
/* DescribeQuorum of __cluster_metadata-0; *out points into a. */
CL_MUST_CHECK int cl_admin_describe_quorum(cl_client_t *c, kp_arena_t *a, const kp_describe_quorum_response_t **out,
                                           cl_err_t *e);

#endif
