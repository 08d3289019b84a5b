/* broker/cluster/rebalance.c — the periodic auto leader rebalance (rebalance.h). */
#include "broker/cluster/rebalance.h"

#include <stdio.h>

#include "broker/core/node.h"
#include "broker/meta/records.h"
#include "protocol/kp_wire.h"

/* n->ctrl outlives every commit callback (it is part of the node). */
static void rebalance_done(void *arg, int status) {
    bk_node_t *n = arg;
    n->ctrl.rebalance_inflight = false;
    if (status != KP_OK)
        fprintf(stderr, "skiff: node %d: leader rebalance not committed (status %d)\n", n->id, status);
}

size_t bk_cluster_rebalance_tick(bk_node_t *n, int64_t now_ms) {
    bk_meta_ctrl_t *c = &n->ctrl;
    if (!bk_cfg_bool(n->cfg, BK_CFG_AUTO_LEADER_REBALANCE_ENABLE) || c->rebalance_inflight) return 0;
    int64_t interval_ms = bk_cfg_int(n->cfg, BK_CFG_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS);
    interval_ms = interval_ms > INT64_MAX / 1000 ? INT64_MAX : interval_ms * 1000;
    if (c->rebalance_last_ms == 0) c->rebalance_last_ms = now_ms;   /* first interval starts now */
    if (now_ms - c->rebalance_last_ms < interval_ms) return 0;
    c->rebalance_last_ms = now_ms;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    size_t moved = bk_meta_ctrl_rebalance(c, bk_node_decision_image(n), &recs);
    if (recs.err != KP_OK || recs.n == 0) {
        bk_meta_recs_free(&recs);
        return 0;
    }
    fprintf(stderr, "skiff: node %d (controller): leader rebalance moves %zu leader(s) to their preferred replica\n",
            n->id, moved);
    c->rebalance_inflight = true;
    bk_node_commit(n, &recs, rebalance_done, n);
    bk_meta_recs_free(&recs);
    return moved;
}
