/* broker/core/status.h — one status space for the whole node.
 *
 * Each layer returns int statuses from its own range of negative numbers
 * (the table above KP_STATUS_LIST in protocol/kp_wire.h): protocol KP_ERR_*,
 * storage ST_ERR_*, raft RAFT_ERR_*, the broker's BK_NET_ERR_* (net, worker
 * pool) and the quorum driver's BK_QUORUM_*. Statuses cross layers all the
 * time (storage passes protocol codes up, a worker job's result and the
 * pool's BK_NET_ERR_CANCELLED reach the same callback, a commit's done gets a
 * raft, quorum or image status), so a number must name one cause only.
 * This header is the one place that sees every range; it proves at compile
 * time that they are pairwise disjoint (each list header proves that its
 * codes lie in its own range). test/unit/test_status.c checks that every
 * code has a distinct value and a name. */
#ifndef SKIFF_BK_CORE_STATUS_H
#define SKIFF_BK_CORE_STATUS_H

#include "broker/net/net.h"
#include "broker/quorum/quorum.h"
#include "protocol/kp_wire.h"
#include "raft/raft.h"
#include "storage/st_status.h"

#define BK_NODE_STATUS_RANGES_DISJOINT_(a, b) (a##_STATUS_MAX < b##_STATUS_MIN || b##_STATUS_MAX < a##_STATUS_MIN)
_Static_assert(BK_NODE_STATUS_RANGES_DISJOINT_(KP, ST), "protocol and storage status ranges overlap");
_Static_assert(BK_NODE_STATUS_RANGES_DISJOINT_(KP, RAFT), "protocol and raft status ranges overlap");
_Static_assert(BK_NODE_STATUS_RANGES_DISJOINT_(KP, BK_NET), "protocol and broker status ranges overlap");
_Static_assert(BK_NODE_STATUS_RANGES_DISJOINT_(KP, BK_QUORUM), "protocol and quorum status ranges overlap");
_Static_assert(BK_NODE_STATUS_RANGES_DISJOINT_(ST, RAFT), "storage and raft status ranges overlap");
_Static_assert(BK_NODE_STATUS_RANGES_DISJOINT_(ST, BK_NET), "storage and broker status ranges overlap");
_Static_assert(BK_NODE_STATUS_RANGES_DISJOINT_(ST, BK_QUORUM), "storage and quorum status ranges overlap");
_Static_assert(BK_NODE_STATUS_RANGES_DISJOINT_(RAFT, BK_NET), "raft and broker status ranges overlap");
_Static_assert(BK_NODE_STATUS_RANGES_DISJOINT_(RAFT, BK_QUORUM), "raft and quorum status ranges overlap");
_Static_assert(BK_NODE_STATUS_RANGES_DISJOINT_(BK_NET, BK_QUORUM), "broker and quorum status ranges overlap");
_Static_assert(BK_QUORUM_NOT_LEADER >= BK_QUORUM_STATUS_MIN && BK_QUORUM_NOT_LEADER <= BK_QUORUM_STATUS_MAX,
               "BK_QUORUM_NOT_LEADER is outside BK_QUORUM_STATUS_MIN..MAX");
/* every range is below 0: 0 is success in every layer */
_Static_assert(KP_STATUS_MAX < 0 && ST_STATUS_MAX < 0 && RAFT_STATUS_MAX < 0 && BK_NET_STATUS_MAX < 0 &&
               BK_QUORUM_STATUS_MAX < 0, "a status range reaches 0 or above");

/* Description of a status of any layer: "ok" for 0, the owning layer's
 * description for a known code, "unknown status" otherwise. Never NULL. */
const char *bk_node_status_str(int status);

#endif
