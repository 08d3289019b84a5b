/* broker/cluster/topics.h — topic creation with the broker defaults, for
 * Metadata's auto-creation and the internal topics (topics.c). */
#ifndef SKIFF_BK_TOPICS_H
#define SKIFF_BK_TOPICS_H

#include <stddef.h>

#include "broker/core/node.h"
#include "broker/meta/controller.h"

typedef void (*bk_cluster_topics_done_fn)(void *arg, int status);

/* Creates topics `names[0..n)` with the defaults (num.partitions,
 * default.replication.factor) through the controller and the committer;
 * names that fail validation or already exist are skipped. `done` runs once
 * after the commit (possibly before this returns). */
void bk_cluster_topics_auto_create(bk_node_t *node, const char *const *names, size_t n,
                           bk_cluster_topics_done_fn done, void *arg);

#endif
