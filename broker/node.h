/* broker/node.h — building, running and stopping one skiff node: the root
 * wiring, the only code that includes every subsystem (broker/README.md,
 * Layers). The node's state is broker/core/node.h.
 *
 * Start-up order (bk_broker_start): log dirs (mkdir, checkpoints, clean marker
 * taken), metadata log replayed into the image (single voter) or the raft
 * quorum rebuilt from quorum-state + snapshot + log (quorum/quorum.h), this
 * node registered and unfenced through the controller (a quorum of one is its
 * own controller; with the quorum, asynchronously: cluster/broker_lifecycle.h),
 * partition logs opened for the image's partitions, worker pool, Kafka
 * listeners, admin port. Stop (bk_broker_shutdown): listeners close, in-flight
 * requests finish (waiting fetches are answered at once), logs are flushed
 * and closed, checkpoints and the clean-shutdown marker are written, then
 * `done` runs. */
#ifndef SKIFF_BK_NODE_H
#define SKIFF_BK_NODE_H

#include "broker/core/node.h"

/* Builds and starts the node on `base` with `cfg` (both borrowed; must
 * outlive the node). Returns 0, or -1 with a message in err naming what
 * failed (a dir, an address, a record offset). On failure the node is
 * left for bk_broker_free. */
KP_MUST_CHECK int bk_broker_start(bk_node_t *n, struct event_base *base, bk_cfg_t *cfg,
                                char *err, size_t err_len);

/* Graceful stop; `done` runs on the loop once connections have drained and
 * every log is closed with checkpoints and markers written. */
void bk_broker_shutdown(bk_node_t *n, bk_node_stopped_fn done, void *arg);

/* Frees whatever the node still owns (after shutdown or a failed start). */
void bk_broker_free(bk_node_t *n);

/* Applies the image's pending partition changes to the partition manager
 * (open/create leaders, close/delete stopped ones). Runs after every commit
 * (it is the node's after_commit hook). */
void bk_broker_after_commit(bk_node_t *n);

/* Re-reads effective log settings for every open partition (after a config
 * change). */
void bk_broker_configs_changed(bk_node_t *n);

#endif
