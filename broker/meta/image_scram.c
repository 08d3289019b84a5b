/* image_scram.c — SCRAM credentials in the image (UserScramCredential,
 * RemoveUserScramCredential, ScramBootstrapDone records; image.h).
 *
 * A sorted array by (name, mechanism): lookups are a binary search; an
 * insert or removal is a memmove, O(credentials) — users change rarely and
 * the bound (BK_META_SCRAM_MAX) keeps it small. Every record is checked
 * whole before the image changes, so a failed apply changes nothing. */
#include <stdlib.h>
#include <string.h>

#include "broker/meta/image_internal.h"

size_t bk_meta_scram_key_len(int32_t mechanism) {
    return mechanism == 1 ? 32 : mechanism == 2 ? 64 : 0;
}

static int cmp(const char *name, int8_t mech, const bk_meta_scram_t *c) {
    int r = strcmp(name, c->name);
    if (r) return r;
    return (mech > c->mechanism) - (mech < c->mechanism);
}

/* First position >= (name, mech). */
static size_t pos(const bk_meta_image_t *img, const char *name, int8_t mech, bool *found) {
    size_t lo = 0, hi = img->nscram;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp(name, mech, &img->scram[mid]) > 0) lo = mid + 1;
        else hi = mid;
    }
    *found = lo < img->nscram && cmp(name, mech, &img->scram[lo]) == 0;
    return lo;
}

const bk_meta_scram_t *bk_meta_image_scram(const bk_meta_image_t *img, const char *name, int8_t mechanism) {
    bool found;
    size_t i = pos(img, name, mechanism, &found);
    return found ? &img->scram[i] : NULL;
}

const bk_meta_scram_t *bk_meta_image_scram_user(const bk_meta_image_t *img, const char *name, size_t *n) {
    bool found;
    size_t i = pos(img, name, 0, &found), e = i;
    while (e < img->nscram && strcmp(img->scram[e].name, name) == 0) e++;
    *n = e - i;
    return *n ? &img->scram[i] : NULL;
}

static bool name_ok(const char *name) {
    size_t n = name ? strlen(name) : 0;
    return n > 0 && n <= BK_META_SCRAM_NAME_MAX;
}

int img_scram_apply(bk_meta_image_t *img, const Skiff__Metadata__UserScramCredential *r) {
    size_t kl = bk_meta_scram_key_len(r->mechanism);
    if (!name_ok(r->name) || !r->has_mechanism || kl == 0 || !r->has_iterations ||
        r->iterations < BK_META_SCRAM_ITER_MIN || r->iterations > BK_META_SCRAM_ITER_MAX ||
        !r->has_salt || r->salt.len == 0 || r->salt.len > BK_META_SCRAM_SALT_MAX ||
        !r->has_stored_key || r->stored_key.len != kl || !r->has_server_key || r->server_key.len != kl)
        return KP_ERR_BAD_VALUE;
    bk_meta_scram_t c;
    memset(&c, 0, sizeof c);
    c.mechanism = (int8_t)r->mechanism;
    c.iterations = r->iterations;
    c.salt_len = (uint8_t)r->salt.len;
    memcpy(c.salt, r->salt.data, r->salt.len);
    memcpy(c.stored_key, r->stored_key.data, kl);
    memcpy(c.server_key, r->server_key.data, kl);
    bool found;
    size_t i = pos(img, r->name, c.mechanism, &found);
    if (found) {
        c.name = img->scram[i].name;
        img->scram[i] = c;
        return KP_OK;
    }
    if (img->nscram >= BK_META_SCRAM_MAX) return KP_ERR_BAD_VALUE;
    if (img->nscram == img->cap_scram) {
        size_t cap = img->cap_scram ? img->cap_scram * 2 : 8;
        bk_meta_scram_t *v = realloc(img->scram, cap * sizeof *v);
        if (!v) return KP_ERR_NOMEM;
        img->scram = v;
        img->cap_scram = cap;
    }
    c.name = strdup(r->name);
    if (!c.name) return KP_ERR_NOMEM;
    memmove(&img->scram[i + 1], &img->scram[i], (img->nscram - i) * sizeof c);
    img->scram[i] = c;
    img->nscram++;
    return KP_OK;
}

int img_scram_remove(bk_meta_image_t *img, const Skiff__Metadata__RemoveUserScramCredential *r) {
    if (!name_ok(r->name) || !r->has_mechanism || bk_meta_scram_key_len(r->mechanism) == 0)
        return KP_ERR_BAD_VALUE;
    bool found;
    size_t i = pos(img, r->name, (int8_t)r->mechanism, &found);
    if (!found) return KP_ERR_BAD_VALUE; /* the controller removes only what exists */
    free(img->scram[i].name);
    memset(&img->scram[i], 0, sizeof img->scram[i]);
    memmove(&img->scram[i], &img->scram[i + 1], (img->nscram - i - 1) * sizeof img->scram[0]);
    img->nscram--;
    return KP_OK;
}

void img_scram_free(bk_meta_image_t *img) {
    for (size_t i = 0; i < img->nscram; i++) {
        free(img->scram[i].name);
        memset(&img->scram[i], 0, sizeof img->scram[i]);
    }
    free(img->scram);
    img->scram = NULL;
    img->nscram = img->cap_scram = 0;
    img->scram_bootstrapped = false;
}
