/* features_update.h — UpdateFeatures (57) decisions on the active
 * controller: request -> FeatureLevel records + answer. Pure. */
#ifndef SKIFF_BK_FEATURES_UPDATE_H
#define SKIFF_BK_FEATURES_UPDATE_H

#include "kp_msgs.h"
#include "protocol/kp_arena.h"
#include "broker/meta/image.h"
#include "broker/meta/records.h"

/* Decides `q` (decoded at `version`) against `img`: fills `r` (strings in
 * `a`) and, unless validate_only or any update fails (then nothing is
 * applied, as Kafka), adds one FeatureLevel record per changed feature to
 * `out`. Rules (Kafka's): a feature named twice -> INVALID_REQUEST at the
 * top; per feature INVALID_UPDATE_VERSION for an unknown name, a level
 * outside the supported range, a downgrade (or removal, level < 1) without
 * upgrade type 2/3 (v0: allow_downgrade), an upgrade with a downgrade type,
 * a metadata.version downgrade, an unknown upgrade type. v2 has no
 * per-feature results: the first error is the top-level one. KP_OK or
 * KP_ERR_NOMEM. */
KP_MUST_CHECK int bk_meta_features_update(const bk_meta_image_t *img, const kp_update_features_request_t *q,
                                          int16_t version, kp_arena_t *a, bk_meta_recs_t *out,
                                          kp_update_features_response_t *r);
/* A failed commit: every NONE becomes `error`. */
void bk_meta_features_commit_failed(kp_update_features_response_t *r, int16_t error);

#endif
