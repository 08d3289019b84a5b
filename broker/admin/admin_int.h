/* broker/admin/admin_int.h — private to broker/admin/: the partition-offset
 * lookup shared by the group lag (admin_lag.c) and the group offset reset
 * (admin_group_reset.c); forwarding a request to the active controller,
 * shared by the election (admin_elect.c) and the topic actions
 * (admin_topic_ops.c); a broker's listeners as JSON, shared by /v1/cluster
 * (admin_routes.c) and /v1/brokers (admin_ops.c). */
#ifndef SKIFF_BK_ADMIN_INT_H
#define SKIFF_BK_ADMIN_INT_H

#include <stddef.h>
#include <stdint.h>

#include "broker/cluster/forward.h"
#include "broker/core/node.h"
#include "broker/http/admin.h"

/* "listeners": [{name, host, port}] — every advertised listener of b. */
void admin_json_listeners(bk_http_json_t *j, const bk_meta_broker_t *b);

/* How long a lookup waits for the leaders' answers. */
#define ADMIN_OFFSETS_TIMEOUT_MS 2000
/* Leaders asked per lookup (one connection each). */
#define ADMIN_OFFSETS_PEERS_MAX 64

typedef struct {
    char *topic;          /* owned by the caller until done returns */
    int32_t partition;
    int64_t timestamp;    /* as ListOffsets: -1 latest (the HW), -2 earliest, else the first offset at or after it */
    int32_t leader;       /* -1: none */
    int64_t offset;       /* in: >= 0 when already known (not asked); out: -1 when unknown */
} admin_offset_row_t;

/* Called once, on the loop, with the rows (offsets filled where a leader
 * answered). The rows stay the caller's. */
typedef void (*admin_offsets_fn)(void *arg, admin_offset_row_t *rows, size_t n);

/* Asks each leader other than this node, in parallel, one ListOffsets for
 * its rows whose offset is still < 0 (one topic entry per row, answered in
 * request order: the same partition may be asked at two timestamps), and
 * calls done when all answered or after ADMIN_OFFSETS_TIMEOUT_MS (a down
 * leader leaves its rows at -1). Rows led here, or without leader, are not
 * asked: the caller fills them from its own logs. done may be called
 * before this returns (nothing to ask). Returns 0, or -1 (out of memory;
 * done not called). */
int admin_offsets_lookup(bk_node_t *n, admin_offset_row_t *rows, size_t nrows, admin_offsets_fn done, void *arg);

/* Sends one Kafka request (api, version, body) to the active controller on
 * behalf of admin route `req` (client id "skiff-admin"); done(arg, status,
 * answer) is called later, once, on the loop. True when sent. Otherwise
 * req has been answered here — 500 when the request cannot be encoded (out
 * of memory), 503 when no controller is known or it cannot take the request
 * now (the client retries) — done will not be called, and the caller frees
 * arg. */
bool admin_forward(bk_node_t *n, bk_http_req_t *req, int16_t api, int16_t ver, const void *body,
                   bk_cluster_forward_resp_fn done, void *arg);

/* The start of every `done` of admin_forward: false when there is nothing
 * to answer with — the admin port stopped (bk_http_stop freed req: not
 * touched) or the forwarding failed (req answered 503 here). The caller then
 * frees its context and returns; on true it decodes the answer. */
bool admin_forward_answered(const bk_node_t *n, bk_http_req_t *req, int status);

#endif
