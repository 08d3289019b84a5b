/* cl_client.h — skiff's C client: bootstrap, metadata cache, one lazy
 * connection per broker, and the request/response plumbing the produce,
 * fetch and admin files build on.
 *
 * Single-threaded; every call blocks up to the client's timeout. A cl_client_t
 * owns its connections and its metadata arena; pointers into the metadata
 * (cl_md_topic) stay valid until the next cl_client_metadata refresh.
 */
#ifndef SKIFF_CL_CLIENT_H
#define SKIFF_CL_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "clients/cl_conn.h"
#include "clients/cl_err.h"
#include "clients/cl_retry.h"
#include "kp_msgs.h"

/* Highest version of each API this library fills correctly. The caps keep
 * us below versions that change a field's meaning (Fetch v13 / DeleteTopics
 * v6 address topics by id, OffsetFetch v8 / FindCoordinator v4 batch
 * groups). The version sent is min(cap, broker max). */
#define CL_VER_PRODUCE 9
#define CL_VER_FETCH 12
/* ListOffsets v4+ adds only leader-epoch fencing, which we do not use; and
 * librdkafka's mock cluster (our test double) answers v4+ with 4 stray bytes. */
#define CL_VER_LIST_OFFSETS 3
#define CL_VER_METADATA 12
#define CL_VER_OFFSET_COMMIT 8
#define CL_VER_OFFSET_FETCH 7
#define CL_VER_FIND_COORDINATOR 3
#define CL_VER_DESCRIBE_GROUPS 5
#define CL_VER_CONSUMER_GROUP_DESCRIBE 0
#define CL_VER_LIST_GROUPS 4
#define CL_VER_INIT_PRODUCER_ID 4
#define CL_VER_CREATE_TOPICS 7
#define CL_VER_DELETE_TOPICS 5
#define CL_VER_DELETE_GROUPS 2
#define CL_VER_DESCRIBE_CONFIGS 4
#define CL_VER_INCR_ALTER_CONFIGS 1
#define CL_VER_CREATE_PARTITIONS 3
#define CL_VER_DESCRIBE_CLUSTER 1
#define CL_VER_DESCRIBE_QUORUM 1
#define CL_VER_DESCRIBE_PRODUCERS 0
#define CL_VER_DESCRIBE_TRANSACTIONS 0
#define CL_VER_LIST_TRANSACTIONS 0   /* v1 adds only a duration filter we do not offer */

#define CL_NODES_MAX 256            /* brokers we keep connections for */
#define CL_BOOTSTRAP_MAX 16         /* addresses in a --brokers list */
#define CL_TIMEOUT_MS_DEFAULT 10000

typedef kp_metadata_response_metadata_response_topic_t cl_md_topic_t;
typedef kp_metadata_response_metadata_response_partition_t cl_md_partition_t;

typedef struct cl_node {
    int32_t id;
    char host[CL_HOST_BYTES];
    int port;
    cl_conn_t conn;                 /* fd -1 until first use */
} cl_node_t;

typedef struct cl_client {
    char bootstrap[CL_BOOTSTRAP_MAX][CL_HOST_BYTES];
    int bootstrap_port[CL_BOOTSTRAP_MAX];
    int nbootstrap;
    char client_id[64];
    int timeout_ms;
    cl_retry_t retry;
    cl_conn_t boot;                 /* the bootstrap connection that worked */
    cl_node_t *nodes;               /* CL_NODES_MAX entries, nnodes used */
    int nnodes;
    kp_arena_t md_arena;            /* holds md and its frame */
    const kp_metadata_response_t *md; /* NULL before the first refresh */
    int16_t md_version;
    const cl_sec_t *sec;            /* how to connect (not owned), NULL = PLAINTEXT */
    cl_tls_t *tls;                  /* shared by every connection when sec uses TLS */
} cl_client_t;

/* Parses a comma list of host:port into c (at most CL_BOOTSTRAP_MAX) and
 * connects to the first that answers. timeout_ms bounds each connect and
 * each call. On failure (CL_E_CONNECT) the message names every address
 * tried. The client must be closed with cl_client_close even on failure. */
CL_MUST_CHECK int cl_client_open(cl_client_t *c, const char *brokers, const char *client_id, int timeout_ms,
                                 cl_err_t *e);
/* The same over TLS and/or SASL as `sec` says (NULL = PLAINTEXT; sec must
 * outlive the client): every connection the client makes (bootstrap, each
 * broker, coordinators) uses it. */
CL_MUST_CHECK int cl_client_open_sec(cl_client_t *c, const char *brokers, const char *client_id, int timeout_ms,
                                     const cl_sec_t *sec, cl_err_t *e);
void cl_client_close(cl_client_t *c);

/* Refreshes the metadata cache for `topics` (n names; n == 0 with
 * topics NULL = all topics). Does not auto-create topics. */
CL_MUST_CHECK int cl_client_metadata(cl_client_t *c, const char *const *topics, int n, cl_err_t *e);
/* Cached topic by name, or NULL. */
const cl_md_topic_t *cl_md_topic(const cl_client_t *c, const char *name);
/* Cached partition, or NULL. */
const cl_md_partition_t *cl_md_partition(const cl_md_topic_t *t, int32_t partition);
/* Host/port of a node from the cache; NULL when unknown. */
const cl_node_t *cl_client_node_info(const cl_client_t *c, int32_t node_id);

/* Sends req to node_id (-1: the bootstrap connection) and decodes the
 * response into *resp (in arena a). Opens the node's connection lazily.
 * See cl_conn_call for errors. */
CL_MUST_CHECK int cl_client_call(cl_client_t *c, int32_t node_id, int16_t api_key, int16_t our_max,
                                 const void *req, void **resp, int16_t *version_out, kp_arena_t *a,
                                 cl_err_t *e);
/* Version that a call to node_id would use (opening the connection if
 * needed), -1 when unsupported or unreachable. */
int16_t cl_client_version(cl_client_t *c, int32_t node_id, int16_t api_key, int16_t our_max);
/* Same without waiting for a response (acks=0 produce). */
CL_MUST_CHECK int cl_client_send(cl_client_t *c, int32_t node_id, int16_t api_key, int16_t our_max,
                                 const void *req, cl_err_t *e);
/* Node id of the coordinator of `key` (key_type 0 = group, 1 = txn),
 * retried while the error is retriable. */
CL_MUST_CHECK int cl_client_coordinator(cl_client_t *c, const char *key, int8_t key_type, int32_t *node_id,
                                        cl_err_t *e);

/* "abc" as a non-null kp_str_t (no copy). */
kp_str_t cl_str(const char *s);
/* Copies a slice into buf as a C string (truncating); returns buf. */
char *cl_strz(kp_str_t s, char *buf, size_t buf_bytes);
/* True when the slice equals the C string. */
bool cl_str_eq(kp_str_t s, const char *z);

#endif
