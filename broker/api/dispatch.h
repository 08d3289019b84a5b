/* broker/api/dispatch.h — one Kafka request from frame to response.
 *
 * bk_api_dispatch_frame (the net's on_frame) takes the frame from the net into a
 * bk_api_req_t (bk_net_conn_take_frame: the net's pointer is only valid during the
 * call, handlers finish later, and Produce patches offsets into the batches
 * in place; at most one user-space copy), decodes it with kp_request_decode and
 * calls the API's handler. Every handler must finish the request exactly
 * once with bk_api_req_respond / bk_api_req_respond_none / bk_api_req_close, now or
 * later (Fetch waits in the purgatory; commits may complete later). The
 * finish call frees the request.
 *
 * Protocol rules kept here (NOTES.md §1-2): an unknown API key, a version
 * outside what we serve, or a malformed request closes the connection with
 * no answer (nothing else on the node is affected); ApiVersions with a
 * version above ours gets the v0-layout UNSUPPORTED_VERSION answer listing
 * only ApiVersions itself. Responses go out in request order through the
 * net's response slots, whatever order handlers finish in. */
#ifndef SKIFF_BK_DISPATCH_H
#define SKIFF_BK_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kp_msgs.h"
#include "protocol/kp_arena.h"
#include "protocol/kp_header.h"
#include "broker/net/net.h"
#include "broker/core/node.h"

#define BK_API_REQ_ARENA_CAP_BYTES ((size_t)256 << 20)   /* decode + response arrays */
/* Finished requests kept per node for reuse, each with its arena's largest
 * chunk up to the retain size: a steady load allocates no request and no
 * arena memory (issue 19). At most 64 x 256 KiB held. */
#define BK_API_REQ_POOL_MAX 64
#define BK_API_REQ_ARENA_RETAIN_BYTES ((size_t)256 << 10)

typedef struct bk_api_req {
    bk_node_t *node;
    bk_net_t *net;              /* the listener the request came in on */
    bk_net_slot_t slot;
    kp_request_header_t hdr;
    void *body;                 /* kp_<api>_request_t, in `arena` */
    kp_arena_t arena;           /* request arrays and response arrays */
    uint8_t *frame;             /* owned (taken from the net); body slices point into it */
    size_t frame_len;
    char peer[64];
    char listener[BK_NET_LISTENER_NAME_MAX + 1]; /* the listener's name (Metadata answers its endpoints) */
    uint64_t start_ns;          /* bk_net_mono_ns at frame arrival (latency metric) */
    bool nul_refused;           /* bk_api_req_cstr met a string holding a NUL */
    char principal[BK_NET_PRINCIPAL_MAX + 1]; /* the connection's, at arrival (authorization) */
    char host[64];              /* the peer address without the port (ACL host matching) */
    void *aux;                  /* a handler's own state, in the arena (h_offsets.c) */
    bool node_forwarded;        /* a controller-bound request a node forwarded (h_authz.c): the
                                   client's rights were checked where it connected */
    struct bk_api_req *pool_next; /* the node's free list (dispatch.c), while unused */
    const struct bk_api_prepared *prepared; /* what bk_api_prepare_frame made of this frame
                                   (prepare.h), or NULL; the net frees it when the
                                   handler's first call returns: a handler takes it
                                   (and clears this) at entry, uses it only in that call */
} bk_api_req_t;

typedef void (*bk_api_handler_fn)(bk_api_req_t *req);

/* The node's pool of finished requests (n->req_pool): created with the
 * node's net, freed last (after everything that may finish a request).
 * With no pool, requests are allocated and freed one by one. */
struct bk_api_req_pool *bk_api_req_pool_new(void);
void bk_api_req_pool_free(struct bk_api_req_pool *pool);

/* The served APIs: key, our max version (= the codec's max stable version
 * unless a handler caps it) and handler. ApiVersions advertises exactly
 * this table. */
typedef struct {
    int16_t api_key;
    int16_t min_version;
    int16_t max_version;
    bk_api_handler_fn fn;
} bk_api_entry_t;

/* The table (sorted by key) and its length. */
const bk_api_entry_t *bk_api_dispatch_table(size_t *n);
/* The entry for `api_key`, or NULL when we do not serve it. */
const bk_api_entry_t *bk_api_dispatch_find(int16_t api_key);

/* bk_net_frame_fn for bk_net_config_t.on_frame; ctx is the bk_node_t. */
void bk_api_dispatch_frame(bk_net_conn_t *conn, const uint8_t *frame, size_t len, void *ctx);
/* One frame that arrived on another listener of the node (`net`, e.g. the
 * controller listener): served by its handler from the table above, without
 * forwarding, answered on `net`. The caller decides which APIs it lets
 * through; the frame is taken from `conn` as in bk_api_dispatch_frame, so this
 * runs inside the net's frame callback of `conn`. */
void bk_api_dispatch_frame_on(bk_node_t *n, bk_net_t *net, bk_net_conn_t *conn, const uint8_t *frame, size_t len);

/* Encodes `resp` (a kp_<api>_response_t of the request's api and version)
 * and completes the slot. Records fields whose `ext` is set must point at a
 * st_read_result_t: their file ranges are sent with sendfile. If encoding
 * fails the connection is closed (a bug or a bound hit; logged). Frees req. */
void bk_api_req_respond(bk_api_req_t *req, const void *resp);
/* No response bytes (acks=0 Produce). Frees req. */
void bk_api_req_respond_none(bk_api_req_t *req);
/* Closes the connection after earlier responses flush. Frees req. */
void bk_api_req_close(bk_api_req_t *req, const char *why);
/* Frees req with no answer and touches no net: only for a request finished
 * after the node's net was freed (bk_broker_free without a graceful stop,
 * when the worker pool is freed and calls its jobs' completions), where no
 * connection or slot is left to answer on. */
void bk_api_req_drop(bk_api_req_t *req);
/* Finished requests are kept for reuse in the node's pool
 * (bk_api_req_pool_new, the state loop's) and Fetch responses are encoded in
 * a per-thread scratch buffer (at most 256 KiB; the other APIs straight into
 * their evbuffer): steady-state requests make no heap allocation in
 * dispatch. This frees the calling thread's scratch (at shutdown, or when a
 * loop thread ends). */
void bk_api_req_cache_drain(void);

/* Arena allocation for response arrays: count * size bytes, zeroed. On
 * failure returns NULL (the caller answers an error or closes). */
void *bk_api_req_alloc(bk_api_req_t *req, size_t count, size_t size);
/* A C string copy of a decoded string in the arena ("" for null). NULL
 * when out of memory or when s holds a NUL byte: such a string is refused,
 * never cut at the NUL ("a\0b" must not become "a"). Callers answer NULL
 * by closing (bk_api_req_close then names the NUL as the reason) or with
 * an error code. */
char *bk_api_req_cstr(bk_api_req_t *req, kp_str_t s);

/* Client quotas (core/quota.h): records `amount` of quota key `key`
 * (bk_meta_quota_key_t) against the request's principal and client id;
 * when over the quota, mutes the connection for the throttle time (KIP-219)
 * and returns it (ms) for the response's throttle_time_ms; 0 otherwise (no
 * quota, within it, or the connection has gone). */
int32_t bk_api_req_quota(bk_api_req_t *req, int key, double amount);
/* A topic name as a C string for lookups and validation: like
 * bk_api_req_cstr, but a NUL byte is written as the two characters "\0".
 * A backslash is not a topic-name character, so the result matches no
 * topic and fails bk_meta_ctrl_topic_name_valid, and the per-topic error
 * Kafka gives for a bad name (INVALID_TOPIC_EXCEPTION,
 * UNKNOWN_TOPIC_OR_PARTITION) is answered. NULL only when out of memory. */
char *bk_api_req_topic_cstr(bk_api_req_t *req, kp_str_t s);
/* A slice of a NUL-terminated string (no copy). */
kp_str_t bk_api_str(const char *s);

/* The partition `topic`/`partition` if this node leads it with an open
 * log; else NULL with *err = UNKNOWN_TOPIC_OR_PARTITION,
 * NOT_LEADER_OR_FOLLOWER or KAFKA_STORAGE_ERROR. */
struct bk_repl_part;
struct bk_repl_part *bk_api_req_leader_part(bk_api_req_t *req, kp_str_t topic, int32_t partition, int16_t *err);

/* SASL gate (h_sasl.c), called first for every frame of a Kafka
 * listener: true when it took the frame (a bare SASL token after a v0
 * handshake, or a request refused before authentication / after the
 * session expired: connection closed); false on a listener without SASL and
 * for what may be served. */
bool bk_api_sasl_gate(bk_node_t *n, bk_net_t *net, bk_net_conn_t *conn, const uint8_t *frame, size_t len);

/* Replica fetches (replica id >= 0) and WriteTxnMarkers from a principal
 * not in super.users (credentials.h bk_node_peer_allowed): finishes req
 * (Fetch v7+ and WriteTxnMarkers: CLUSTER_AUTHORIZATION_FAILED; an older
 * Fetch, which has no top-level error: the connection closes)
 * and returns false, before the handler touches any state. */
bool bk_api_node_rpc_check(bk_api_req_t *req, bk_net_conn_t *conn);

/* Handlers (one file per family). */
void bk_api_h_sasl_handshake(bk_api_req_t *req);                   /* h_sasl.c */
void bk_api_h_sasl_authenticate(bk_api_req_t *req);
void bk_api_h_describe_client_quotas(bk_api_req_t *req);  /* h_quotas.c */
void bk_api_h_alter_client_quotas(bk_api_req_t *req);
void bk_api_h_describe_user_scram_credentials(bk_api_req_t *req);  /* h_scram.c */
void bk_api_h_describe_acls(bk_api_req_t *req);                    /* h_acls.c */
void bk_api_h_create_acls(bk_api_req_t *req);
void bk_api_h_delete_acls(bk_api_req_t *req);

/* Authorization (h_authz.c): may the request's principal do `op` on
 * (rtype, name)? Always true with the authorizer off (core/authz.h). */
bool bk_api_authorized(const bk_api_req_t *req, int8_t op, int8_t rtype, const char *name);
/* The same for a name given as a decoded string (NUL bytes: false). */
bool bk_api_authorized_str(bk_api_req_t *req, int8_t op, int8_t rtype, kp_str_t name);
/* A controller-bound request (forward.h) that arrived at a node that would
 * forward it: true when the principal may do all it asks, so it may go to
 * the controller (whose peer connection is a node principal); false: it is
 * served here, where the handler answers the authorization errors. It
 * also counts the controller mutation quota (bk_api_mq_forward), with or
 * without an authorizer. */
bool bk_api_forward_authorized(bk_node_t *n, bk_net_conn_t *conn, const uint8_t *frame, size_t len);
/* True for a controller-bound request (authorizer on) that came from a
 * node: on the inter-broker listener, from a connection node-to-node RPCs
 * accept (credentials.h bk_node_peer_allowed: PLAINTEXT, a super user or
 * CLUSTER_ACTION). Such a request was authorized at the node the client
 * reached, before forwarding (bk_api_forward_authorized). A PLAINTEXT
 * inter-broker listener is trusted as for the node RPCs: a secure
 * deployment must not expose one to clients. */
bool bk_api_node_forwarded(bk_node_t *n, bk_net_conn_t *conn, int16_t api);

/* controller_mutation_rate (h_mutation_quota.c, KIP-599) for CreateTopics,
 * CreatePartitions and DeleteTopics. In a handler: begin, then admit per
 * topic (false: THROTTLING_QUOTA_EXCEEDED, leave it out), then throttle
 * for the answer's throttle_time_ms (mutes the connection when in debt).
 * Off for validate_only, a request a node forwarded, or no quota. */
typedef struct {
    bool on;
    bool strict;                /* a version that refuses topics (else it only throttles) */
} bk_api_mq_t;
void bk_api_mq_begin(bk_api_req_t *req, bk_api_mq_t *mq);
bool bk_api_mq_admit(bk_api_req_t *req, bk_api_mq_t *mq, double partitions);
int32_t bk_api_mq_throttle(bk_api_req_t *req, const bk_api_mq_t *mq);
/* The partitions topic i of the request mutates (created, added, deleted). */
double bk_api_mq_partitions(bk_api_req_t *req, int32_t i);
/* Before forwarding (req decoded from the frame, principal set): false when
 * the request must be answered here (a new version while in debt); else
 * its partitions are counted here, where the principal is known. */
bool bk_api_mq_forward(bk_api_req_t *req, bk_net_conn_t *conn);
void bk_api_h_alter_user_scram_credentials(bk_api_req_t *req);
void bk_api_h_api_versions(bk_api_req_t *req);
void bk_api_h_metadata(bk_api_req_t *req);
void bk_api_h_produce(bk_api_req_t *req);
void bk_api_h_fetch(bk_api_req_t *req);
void bk_api_h_list_offsets(bk_api_req_t *req);
void bk_api_h_find_coordinator(bk_api_req_t *req);
void bk_api_h_join_group(bk_api_req_t *req);
void bk_api_h_sync_group(bk_api_req_t *req);
void bk_api_h_heartbeat(bk_api_req_t *req);
void bk_api_h_leave_group(bk_api_req_t *req);
void bk_api_h_list_groups(bk_api_req_t *req);
void bk_api_h_describe_groups(bk_api_req_t *req);
void bk_api_h_consumer_group_heartbeat(bk_api_req_t *req);   /* h_cgroup.c */
void bk_api_h_consumer_group_describe(bk_api_req_t *req);
void bk_api_h_delete_groups(bk_api_req_t *req);
void bk_api_h_offset_commit(bk_api_req_t *req);
void bk_api_h_offset_fetch(bk_api_req_t *req);
void bk_api_h_offset_delete(bk_api_req_t *req);
void bk_api_h_init_producer_id(bk_api_req_t *req);
void bk_api_h_offset_for_leader_epoch(bk_api_req_t *req);
void bk_api_h_delete_records(bk_api_req_t *req);
void bk_api_h_create_topics(bk_api_req_t *req);
void bk_api_h_delete_topics(bk_api_req_t *req);
void bk_api_h_create_partitions(bk_api_req_t *req);
void bk_api_h_elect_leaders(bk_api_req_t *req);                    /* h_reassign.c */
void bk_api_h_update_features(bk_api_req_t *req);                  /* h_features.c */
void bk_api_h_describe_topic_partitions(bk_api_req_t *req);        /* h_describe_topic_partitions.c */
void bk_api_h_alter_partition_reassignments(bk_api_req_t *req);
void bk_api_h_list_partition_reassignments(bk_api_req_t *req);
void bk_api_h_describe_configs(bk_api_req_t *req);
void bk_api_h_alter_configs(bk_api_req_t *req);
void bk_api_h_incremental_alter_configs(bk_api_req_t *req);
void bk_api_h_describe_cluster(bk_api_req_t *req);
void bk_api_h_describe_quorum(bk_api_req_t *req);
void bk_api_h_describe_log_dirs(bk_api_req_t *req);
void bk_api_h_init_producer_id_txn(bk_api_req_t *req);             /* h_txn.c (from h_producer.c) */
void bk_api_h_add_partitions_to_txn(bk_api_req_t *req);
void bk_api_h_add_offsets_to_txn(bk_api_req_t *req);
void bk_api_h_end_txn(bk_api_req_t *req);
void bk_api_h_write_txn_markers(bk_api_req_t *req);
void bk_api_h_txn_offset_commit(bk_api_req_t *req);
void bk_api_h_describe_transactions(bk_api_req_t *req);            /* h_txn_admin.c */
void bk_api_h_list_transactions(bk_api_req_t *req);
void bk_api_h_describe_producers(bk_api_req_t *req);

#endif
