/* broker/admin/admin_quorum.h — GET /v1/quorum on the admin port:
 *   {"leader_id", "leader_epoch", "high_watermark", "role", "node_id",
 *    "voters": [{"node_id", "log_end_offset", "lag", "last_fetch_ms",
 *                "last_caught_up_ms"}], "observers": [same]}
 * leader_id is -1 while there is no leader. Replica progress is known on the
 * leader only; elsewhere its fields are -1 (lag too). With the local
 * committer (single voter) the node reports itself as leader. */
#ifndef SKIFF_BK_ADMIN_QUORUM_H
#define SKIFF_BK_ADMIN_QUORUM_H

#include "broker/core/node.h"
#include "broker/http/admin.h"

/* Registers the route on n->admin. KP_OK or the bk_http_route status. */
KP_MUST_CHECK int bk_admin_quorum_add(bk_node_t *n);

#endif
