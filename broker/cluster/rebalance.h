/* broker/cluster/rebalance.h — auto.leader.rebalance.enable on the active
 * controller: every leader.imbalance.check.interval.seconds, the preferred
 * elections of bk_meta_ctrl_rebalance (controller.h) are committed through the
 * controller's normal write path (bk_node_commit). At most one rebalance
 * write is in flight; the first check comes one interval after this node
 * became the controller (bk_meta_ctrl_init clears the soft state).
 * Threading: loop thread only. */
#ifndef SKIFF_BK_REBALANCE_H
#define SKIFF_BK_REBALANCE_H

#include <stddef.h>
#include <stdint.h>

typedef struct bk_node bk_node_t;

/* Called from the controller's periodic tick (broker_lifecycle.c) while
 * this node is the active controller. Returns how many leader changes it
 * proposed (0 when disabled, not due, busy or balanced). */
size_t bk_cluster_rebalance_tick(bk_node_t *n, int64_t now_ms);

#endif
