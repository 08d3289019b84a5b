/* cl_txn.h — operator views of transactions and producers (KIP-664):
 * ListTransactions on every broker, DescribeTransactions at a transactional
 * id's coordinator, DescribeProducers at each partition's leader.
 *
 * Retriable errors (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
 * NOT_LEADER_OR_FOLLOWER, ...) are retried under the client's retry policy,
 * re-resolving the coordinator or leader first; the first other error is
 * returned as a cl_err_t naming the resource ("TRANSACTIONAL_ID_NOT_FOUND:
 * transactional id 'app-1'"). Decoded responses handed to callbacks live
 * only for the duration of the callback.
 */
#ifndef SKIFF_CL_TXN_H
#define SKIFF_CL_TXN_H

#include <stdint.h>

#include "clients/cl_client.h"

#define CL_TXN_FILTERS_MAX 64   /* state or producer id filters per request */

/* Filters of ListTransactions; empty lists match everything. */
typedef struct cl_txn_filter {
    const char *const *states;  /* "Ongoing", "PrepareCommit", ... */
    int nstates;
    const int64_t *producer_ids;
    int nproducer_ids;
} cl_txn_filter_t;

/* One broker's ListTransactions answer (node_id = the broker asked). */
typedef void (*cl_txn_list_fn)(void *ctx, int32_t node_id, const kp_list_transactions_response_t *r);
/* Asks every broker in the metadata (refreshed first) for its transactions
 * matching f (NULL: all); calls fn once per broker. Stops at the first
 * broker that fails: a partial list is an error, not an answer. */
CL_MUST_CHECK int cl_admin_list_transactions(cl_client_t *c, const cl_txn_filter_t *f, cl_txn_list_fn fn, void *ctx,
                                             cl_err_t *e);

/* DescribeTransactions of one transactional id at its coordinator (FindCoordinator
 * key type 1). *out points into a; *coordinator (may be NULL) gets the node
 * that answered, -1 when it could not be looked up again afterwards. */
CL_MUST_CHECK int cl_admin_describe_transaction(cl_client_t *c, const char *txn_id, kp_arena_t *a,
                                                const kp_describe_transactions_response_transaction_state_t **out,
                                                int32_t *coordinator, cl_err_t *e);

/* The producers of one partition, as its leader (node `leader`) reported them. */
typedef void (*cl_producers_fn)(void *ctx, int32_t partition, int32_t leader,
                                const kp_describe_producers_response_partition_response_t *p);
/* DescribeProducers for `partition` of `topic` (< 0: every partition, in
 * order), each asked of the partition's current leader; calls fn once per
 * partition. An unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION. */
CL_MUST_CHECK int cl_admin_describe_producers(cl_client_t *c, const char *topic, int32_t partition,
                                              cl_producers_fn fn, void *ctx, cl_err_t *e);

#endif
