/* features.h — the cluster's feature flags (KIP-584 / KIP-778): the
 * features this node knows, the levels it supports, the levels a new
 * cluster finalizes, and the UpdateFeatures decision. The finalized levels
 * themselves are in the image (`bk_meta_image_t.feature_level`), set by
 * FeatureLevel records of the metadata log. Pure: no I/O. */
#ifndef SKIFF_BK_FEATURES_H
#define SKIFF_BK_FEATURES_H

#include <stddef.h>
#include <stdint.h>

#define BK_META_FEATURES_N 3
/* Indexes into bk_meta_feature_defs() and bk_meta_image_t.feature_level. */
#define BK_META_FEATURE_METADATA_VERSION 0
#define BK_META_FEATURE_GROUP_VERSION 1
#define BK_META_FEATURE_TRANSACTION_VERSION 2

typedef struct {
    const char *name;               /* Kafka's feature name */
    int16_t min_level, max_level;   /* supported range (ApiVersions SupportedFeatures) */
    int16_t new_cluster_level;      /* finalized at a new cluster's first controller term */
    int16_t min_finalized;          /* lowest level UpdateFeatures may set (0 = may be removed) */
} bk_meta_feature_def_t;

/* The BK_META_FEATURES_N known features, in index order. */
const bk_meta_feature_def_t *bk_meta_feature_defs(void);
/* Index of the feature called name[0..len), or -1. */
int bk_meta_feature_index(const char *name, size_t len);

#endif
