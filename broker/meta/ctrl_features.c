/* ctrl_features.c — finalized features on the controller: the new-cluster
 * bootstrap and the UpdateFeatures decision (features.h,
 * features_update.h). */
#include "broker/meta/controller.h"
#include "broker/meta/features_update.h"

#include <stdio.h>
#include <string.h>

#include "protocol/kp_errors.h"

static KP_MUST_CHECK int emit_level(bk_meta_recs_t *out, int i, int16_t level) {
    Skiff__Metadata__FeatureLevel m = SKIFF__METADATA__FEATURE_LEVEL__INIT;
    m.name = (char *)bk_meta_feature_defs()[i].name;
    m.has_level = true;
    m.level = level;
    Skiff__Metadata__MetadataRecord r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_FEATURE_LEVEL;
    r.feature_level = &m;
    return bk_meta_recs_add(out, &r);
}

void bk_meta_ctrl_features_bootstrap(const bk_meta_image_t *img, bk_meta_recs_t *out) {
    if (img->features_epoch >= 0) return;
    for (int i = 0; i < BK_META_FEATURES_N; i++)
        if (emit_level(out, i, bk_meta_feature_defs()[i].new_cluster_level) != KP_OK) return;   /* out->err: refused whole */
}

static kp_str_t msg(kp_arena_t *a, const char *fmt, const char *name, int level, int now) {
    char buf[200];
    int n = snprintf(buf, sizeof buf, fmt, name, level, now);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof buf) n = (int)sizeof buf - 1;
    char *p = kp_arena_alloc(a, (size_t)n + 1);
    if (!p) return kp_slice_null();
    memcpy(p, buf, (size_t)n + 1);
    kp_str_t s = { (const uint8_t *)p, (size_t)n };
    return s;
}

static void cname(kp_str_t s, char *buf, size_t n) {
    size_t l = s.len < n - 1 ? s.len : n - 1;
    if (l) memcpy(buf, s.p, l);
    buf[l] = '\0';
}

/* The error of one update (its message in *m), KP_ERROR_NONE when valid. */
static int16_t check_one(const bk_meta_image_t *img, const kp_update_features_request_feature_update_key_t *u,
                         int16_t version, kp_arena_t *a, kp_str_t *m, int *idx) {
    char name[64];
    cname(u->feature, name, sizeof name);
    int i = bk_meta_feature_index((const char *)u->feature.p, u->feature.len);
    *idx = i;
    if (i < 0) {
        *m = msg(a, "Unknown feature %s (requested level %d%.0d)", name, u->max_version_level, 0);
        return KP_ERROR_INVALID_UPDATE_VERSION;
    }
    const bk_meta_feature_def_t *d = &bk_meta_feature_defs()[i];
    int type = version == 0 ? (u->allow_downgrade ? 2 : 1) : u->upgrade_type;
    int level = u->max_version_level < 0 ? 0 : u->max_version_level;
    int cur = img->feature_level[i];
    if (type < 1 || type > 3) {
        *m = msg(a, "Feature %s: unknown upgrade type %d (current level %d)", name, type, cur);
        return KP_ERROR_INVALID_UPDATE_VERSION;
    }
    if (level > d->max_level || level < d->min_finalized || (level > 0 && level < d->min_level)) {
        *m = msg(a, "Feature %s: level %d is not within the supported range (current level %d)", name, level, cur);
        return KP_ERROR_INVALID_UPDATE_VERSION;
    }
    if (level < cur && type == 1) {
        *m = msg(a, "Feature %s: can't downgrade to level %d from %d without an upgrade type of safe or unsafe "
                    "downgrade", name, level, cur);
        return KP_ERROR_INVALID_UPDATE_VERSION;
    }
    if (level > cur && type != 1) {
        *m = msg(a, "Feature %s: can't downgrade to the newer level %d (current level %d)", name, level, cur);
        return KP_ERROR_INVALID_UPDATE_VERSION;
    }
    if (i == BK_META_FEATURE_METADATA_VERSION && level < cur) {
        *m = msg(a, "Feature %s: level %d is a downgrade of metadata.version (current %d), which is not supported",
                 name, level, cur);
        return KP_ERROR_INVALID_UPDATE_VERSION;
    }
    return KP_ERROR_NONE;
}

int bk_meta_features_update(const bk_meta_image_t *img, const kp_update_features_request_t *q, int16_t version,
                            kp_arena_t *a, bk_meta_recs_t *out, kp_update_features_response_t *r) {
    kp_update_features_response_init(r);
    r->error_message = kp_slice_null();
    int32_t n = q->feature_updates.count;
    kp_update_features_response_updatable_feature_result_t *res = NULL;
    int *idx = NULL;
    if (n > 0) {
        res = kp_arena_alloc(a, (size_t)n * sizeof *res);
        idx = kp_arena_alloc(a, (size_t)n * sizeof *idx);
        if (!res || !idx) return KP_ERR_NOMEM;
    }
    r->results.items = res;
    r->results.count = version <= 1 ? n : 0;
    for (int32_t k = 0; k < n; k++)
        for (int32_t j = 0; j < k; j++)
            if (kp_slice_eq(q->feature_updates.items[k].feature, q->feature_updates.items[j].feature)) {
                char name[64];
                cname(q->feature_updates.items[k].feature, name, sizeof name);
                r->error_code = KP_ERROR_INVALID_REQUEST;
                r->error_message = msg(a, "Feature %s was specified more than once (updates %d and %d)", name, j, k);
                r->results.count = 0;
                return KP_OK;
            }
    bool failed = false;
    for (int32_t k = 0; k < n; k++) {
        const kp_update_features_request_feature_update_key_t *u = &q->feature_updates.items[k];
        kp_update_features_response_updatable_feature_result_init(&res[k]);
        res[k].feature = u->feature;
        res[k].error_message = kp_slice_null();
        res[k].error_code = check_one(img, u, version, a, &res[k].error_message, &idx[k]);
        if (res[k].error_code != KP_ERROR_NONE && !failed) {
            failed = true;
            if (version >= 2) {
                r->error_code = res[k].error_code;
                r->error_message = res[k].error_message;
            }
        }
    }
    if (failed || q->validate_only) return KP_OK;
    for (int32_t k = 0; k < n; k++) {
        int level = q->feature_updates.items[k].max_version_level;
        if (level < 0) level = 0;
        /* a failed add leaves out->err set: the handler answers UNKNOWN_SERVER_ERROR */
        if ((img->feature_level[idx[k]] != level || img->features_epoch < 0) &&
            emit_level(out, idx[k], (int16_t)level) != KP_OK)
            break;
    }
    return KP_OK;
}

void bk_meta_features_commit_failed(kp_update_features_response_t *r, int16_t error) {
    if (r->error_code == KP_ERROR_NONE) r->error_code = error;
    for (int32_t k = 0; k < r->results.count; k++)
        if (r->results.items[k].error_code == KP_ERROR_NONE) r->results.items[k].error_code = error;
}
