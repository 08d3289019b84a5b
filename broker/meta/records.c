/* records.c — packed record lists (see records.h). */
#include "broker/meta/records.h"

#include <stdlib.h>

void bk_meta_recs_init(bk_meta_recs_t *r) {
    r->v = NULL;
    r->n = r->cap = 0;
    r->err = KP_OK;
}

void bk_meta_recs_free(bk_meta_recs_t *r) {
    for (size_t i = 0; i < r->n; i++) free(r->v[i].data);
    free(r->v);
    bk_meta_recs_init(r);
}

int bk_meta_recs_add(bk_meta_recs_t *r, const Skiff__Metadata__MetadataRecord *rec) {
    if (r->err) return r->err;
    if (r->n >= BK_META_RECS_MAX) return r->err = KP_ERR_TOO_LARGE;
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        bk_meta_rec_t *v = realloc(r->v, cap * sizeof *v);
        if (!v) return r->err = KP_ERR_NOMEM;
        r->v = v;
        r->cap = cap;
    }
    size_t len = skiff__metadata__metadata_record__get_packed_size(rec);
    uint8_t *data = malloc(len ? len : 1);
    if (!data) return r->err = KP_ERR_NOMEM;
    size_t w = skiff__metadata__metadata_record__pack(rec, data);
    if (w != len) { free(data); return r->err = KP_ERR_CORRUPT; }
    r->v[r->n].data = data;
    r->v[r->n].len = len;
    r->n++;
    return KP_OK;
}

int bk_meta_recs_apply(const bk_meta_recs_t *r, bk_meta_image_t *img, int64_t first_offset) {
    if (r->err) return r->err;
    for (size_t i = 0; i < r->n; i++) {
        int rc = bk_meta_image_apply_bytes(img, r->v[i].data, r->v[i].len, first_offset + (int64_t)i);
        if (rc) return rc;
    }
    return KP_OK;
}

int bk_meta_recs_add_scram(bk_meta_recs_t *r, const char *name, const kp_scram_cred_t *k) {
    size_t kl = kp_scram_hash_len(k->mech);
    Skiff__Metadata__UserScramCredential u = SKIFF__METADATA__USER_SCRAM_CREDENTIAL__INIT;
    u.name = (char *)name;
    u.has_mechanism = true; u.mechanism = kp_sasl_mech_scram_type(k->mech);
    u.has_iterations = true; u.iterations = k->iterations;
    u.has_salt = true; u.salt.data = (uint8_t *)k->salt; u.salt.len = k->salt_len;
    u.has_stored_key = true; u.stored_key.data = (uint8_t *)k->stored_key; u.stored_key.len = kl;
    u.has_server_key = true; u.server_key.data = (uint8_t *)k->server_key; u.server_key.len = kl;
    Skiff__Metadata__MetadataRecord rec = SKIFF__METADATA__METADATA_RECORD__INIT;
    rec.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_USER_SCRAM_CREDENTIAL;
    rec.user_scram_credential = &u;
    return bk_meta_recs_add(r, &rec);
}
