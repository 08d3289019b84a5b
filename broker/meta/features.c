/* features.c — the known features and their supported levels.
 *
 * metadata.version: skiff's metadata log is its own (metadata.proto), so
 * the level says which Kafka release's API set a cluster is at for the
 * clients that look (Admin describeFeatures, tools); 25 is Kafka 4.0-IV3,
 * whose APIs (DescribeTopicPartitions, ConsumerGroupHeartbeat, ...) skiff
 * serves; 7 (3.3-IV3) is the lowest level a Kafka 4 cluster accepts. It can
 * be raised within the range, never lowered (Kafka refuses metadata
 * downgrades that lose information; skiff has no downgrade path at all).
 * group.version 1: the KIP-848 consumer group protocol (Kafka 4 clients use
 * it only when this is finalized >= 1), finalized on a new cluster.
 * transaction.version: 0..2 (1 = partition-side verification, which skiff
 * does at every level; 2 = transactions v2: Kafka 4 clients then send
 * Produce v12 / TxnOffsetCommit v5, whose leaders add the partitions to the
 * transaction, and EndTxn v5, which bumps the epoch per transaction).
 * A new cluster finalizes 2, as Kafka 4.0 does: Kafka 4 clients run
 * transactions v2 from the start (failover tested with the Java client,
 * t_java_txn_failover.sh: coordinator and leaders killed -9 under it);
 * clients that do not know v2 keep v1 whatever the level. An operator
 * goes back to v1 with `skiffctl feature downgrade --feature
 * transaction.version=0` (t_java_txn.sh runs both). */
#include "broker/meta/features.h"

#include <string.h>

static const bk_meta_feature_def_t defs[BK_META_FEATURES_N] = {
    [BK_META_FEATURE_METADATA_VERSION] = { "metadata.version", 7, 25, 25, 7 },
    [BK_META_FEATURE_GROUP_VERSION] = { "group.version", 0, 1, 1, 0 },
    [BK_META_FEATURE_TRANSACTION_VERSION] = { "transaction.version", 0, 2, 2, 0 },
};

const bk_meta_feature_def_t *bk_meta_feature_defs(void) { return defs; }

int bk_meta_feature_index(const char *name, size_t len) {
    for (int i = 0; i < BK_META_FEATURES_N; i++)
        if (strlen(defs[i].name) == len && memcmp(defs[i].name, name, len) == 0) return i;
    return -1;
}
