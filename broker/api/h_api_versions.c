/* broker/api/h_api_versions.c — ApiVersions: every API this node serves, with
 * min..max_stable_version (the dispatch table). Advertising the full ranges
 * matters: librdkafka turns on MsgVer2 / zstd / LZ4 / group coordination
 * only when our ranges overlap its fixed ones, and kafka-python guesses the
 * broker release (and so its Produce/Fetch versions) from them (INDEX.md
 * "What a broker has to accept"). */
#include <ctype.h>
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/meta/features.h"
#include "protocol/kp_errors.h"

/* KIP-511: [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? */
static bool software_field_ok(kp_str_t s) {
    if (s.len == 0) return false;
    if (!isalnum(s.p[0]) || !isalnum(s.p[s.len - 1])) return false;
    for (size_t i = 0; i < s.len; i++)
        if (!isalnum(s.p[i]) && s.p[i] != '-' && s.p[i] != '.') return false;
    return true;
}

/* v3+: the features this node supports (KIP-584) and the cluster's
 * finalized levels from the image (broker/meta/features.h), epoch = offset
 * of the last FeatureLevel record. A feature at level 0 is not finalized:
 * not listed. v3 leaves out supported features whose minimum is 0 (the
 * schema's rule: v3 readers, e.g. Kafka 3.x Java clients, refuse a range
 * starting at 0; v4 readers take it). */
static int bk_api_features(bk_api_req_t *req, kp_api_versions_response_t *r) {
    const bk_meta_image_t *img = &req->node->img;
    const bk_meta_feature_def_t *d = bk_meta_feature_defs();
    kp_api_versions_response_supported_feature_key_t *sf = bk_api_req_alloc(req, BK_META_FEATURES_N, sizeof *sf);
    kp_api_versions_response_finalized_feature_key_t *ff = bk_api_req_alloc(req, BK_META_FEATURES_N, sizeof *ff);
    if (!sf || !ff) return KP_ERR_NOMEM;
    int32_t nf = 0, ns = 0;
    for (int i = 0; i < BK_META_FEATURES_N; i++) {
        if (d[i].min_level > 0 || req->hdr.api_version >= 4) {
            kp_api_versions_response_supported_feature_key_init(&sf[ns]);
            sf[ns].name = kp_slice_cstr(d[i].name);
            sf[ns].min_version = d[i].min_level;
            sf[ns].max_version = d[i].max_level;
            ns++;
        }
        if (img->feature_level[i] <= 0) continue;
        kp_api_versions_response_finalized_feature_key_init(&ff[nf]);
        ff[nf].name = kp_slice_cstr(d[i].name);
        ff[nf].min_version_level = img->feature_level[i];
        ff[nf].max_version_level = img->feature_level[i];
        nf++;
    }
    r->supported_features.items = sf;
    r->supported_features.count = ns;
    r->finalized_features.items = ff;
    r->finalized_features.count = nf;
    r->finalized_features_epoch = img->features_epoch;
    return KP_OK;
}

void bk_api_h_api_versions(bk_api_req_t *req) {
    const kp_api_versions_request_t *q = req->body;
    size_t n = 0;
    const bk_api_entry_t *t = bk_api_dispatch_table(&n);
    kp_api_versions_response_t r;
    memset(&r, 0, sizeof r);
    kp_api_versions_response_init(&r);
    kp_api_versions_response_api_version_t *av = bk_api_req_alloc(req, n, sizeof *av);
    if (!av) { bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < n; i++) {
        av[i].api_key = t[i].api_key;
        av[i].min_version = t[i].min_version;
        av[i].max_version = t[i].max_version;
    }
    r.api_keys.items = av;
    r.api_keys.count = (int32_t)n;
    if (bk_api_features(req, &r) != KP_OK) { bk_api_req_close(req, "out of memory"); return; }
    if (req->hdr.api_version >= 3 &&
        (!software_field_ok(q->client_software_name) || !software_field_ok(q->client_software_version)))
        r.error_code = KP_ERROR_INVALID_REQUEST;
    bk_api_req_respond(req, &r);
}
