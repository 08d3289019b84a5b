/* image_quota.c — client quotas in the image (ClientQuota records; image.h).
 *
 * A sorted array of entities by (user kind, user, client kind, client):
 * lookups are a binary search, so Kafka's precedence for one connection is
 * at most 8 searches, O(log entities) each. An insert or removal is a
 * memmove, O(entities): quotas change rarely and BK_META_QUOTAS_MAX bounds
 * them. Every record is checked whole before the image changes, so a
 * failed apply changes nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "broker/meta/image_internal.h"

static const char *const key_names[BK_META_QUOTA_KEYS] = {
    "producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate",
};

const char *bk_meta_quota_key_name(int k) {
    return k >= 0 && k < BK_META_QUOTA_KEYS ? key_names[k] : NULL;
}

int bk_meta_quota_key_of(const char *name, size_t len) {
    for (int k = 0; k < BK_META_QUOTA_KEYS; k++)
        if (strlen(key_names[k]) == len && memcmp(key_names[k], name, len) == 0) return k;
    return -1;
}

/* Kafka's byte rates are longs; request_percentage and
 * controller_mutation_rate (partitions per second) are doubles */
bool bk_meta_quota_key_integral(int k) {
    return k != BK_META_QUOTA_REQUEST_PERCENTAGE && k != BK_META_QUOTA_CONTROLLER_MUTATION_RATE;
}

static int cmp(int uk, const char *u, int ck, const char *c, const bk_meta_quota_t *q) {
    if (uk != q->user_kind) return (uk > q->user_kind) - (uk < q->user_kind);
    int r = strcmp(u, q->user);
    if (r) return r;
    if (ck != q->client_kind) return (ck > q->client_kind) - (ck < q->client_kind);
    return strcmp(c, q->client);
}

static size_t pos(const bk_meta_image_t *img, int uk, const char *u, int ck, const char *c, bool *found) {
    size_t lo = 0, hi = img->nquotas;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp(uk, u, ck, c, &img->quotas[mid]) > 0) lo = mid + 1;
        else hi = mid;
    }
    *found = lo < img->nquotas && cmp(uk, u, ck, c, &img->quotas[lo]) == 0;
    return lo;
}

const bk_meta_quota_t *bk_meta_image_quota(const bk_meta_image_t *img, int user_kind, const char *user,
                                           int client_kind, const char *client) {
    bool found;
    size_t i = pos(img, user_kind, user_kind == BK_META_QE_NAME ? user : "", client_kind,
                   client_kind == BK_META_QE_NAME ? client : "", &found);
    return found ? &img->quotas[i] : NULL;
}

const bk_meta_quota_t *bk_meta_image_quota_for(const bk_meta_image_t *img, const char *user, const char *client,
                                               int k) {
    if (img->nquotas == 0) return NULL;
    static const uint8_t order[8][2] = {
        { BK_META_QE_NAME, BK_META_QE_NAME },    { BK_META_QE_NAME, BK_META_QE_DEFAULT },
        { BK_META_QE_NAME, BK_META_QE_NONE },    { BK_META_QE_DEFAULT, BK_META_QE_NAME },
        { BK_META_QE_DEFAULT, BK_META_QE_DEFAULT }, { BK_META_QE_DEFAULT, BK_META_QE_NONE },
        { BK_META_QE_NONE, BK_META_QE_NAME },    { BK_META_QE_NONE, BK_META_QE_DEFAULT },
    };
    for (int i = 0; i < 8; i++) {
        if (!client && order[i][1] == BK_META_QE_NAME) continue;
        const bk_meta_quota_t *q = bk_meta_image_quota(img, order[i][0], user, order[i][1], client ? client : "");
        if (q && (q->has & (1u << k))) return q;
    }
    return NULL;
}

static bool name_ok(const char *s) { return s && strlen(s) <= BK_META_QUOTA_NAME_MAX; }

int img_quota_apply(bk_meta_image_t *img, const Skiff__Metadata__ClientQuota *r) {
    int uk = BK_META_QE_NONE, ck = BK_META_QE_NONE;
    const char *u = "", *c = "";
    if (r->n_entity < 1 || r->n_entity > 2 || !r->key) return KP_ERR_BAD_VALUE;
    for (size_t i = 0; i < r->n_entity; i++) {
        const Skiff__Metadata__ClientQuotaEntity *e = r->entity[i];
        if (!e->entity_type) return KP_ERR_BAD_VALUE;
        int kind = e->entity_name ? BK_META_QE_NAME : BK_META_QE_DEFAULT;
        if (e->entity_name && !name_ok(e->entity_name)) return KP_ERR_BAD_VALUE;
        if (strcmp(e->entity_type, "user") == 0 && uk == BK_META_QE_NONE) {
            uk = kind;
            if (e->entity_name) u = e->entity_name;
        } else if (strcmp(e->entity_type, "client-id") == 0 && ck == BK_META_QE_NONE) {
            ck = kind;
            if (e->entity_name) c = e->entity_name;
        } else {
            return KP_ERR_BAD_VALUE;    /* unknown type or a type twice */
        }
    }
    int k = bk_meta_quota_key_of(r->key, strlen(r->key));
    if (k < 0) return KP_ERR_BAD_VALUE;
    bool remove = r->has_remove && r->remove;
    if (!remove && (!r->has_value || !isfinite(r->value) || r->value <= 0)) return KP_ERR_BAD_VALUE;
    bool found;
    size_t i = pos(img, uk, u, ck, c, &found);
    if (remove) {
        if (!found) return KP_OK;       /* Kafka: removing an absent key is no change */
        bk_meta_quota_t *q = &img->quotas[i];
        q->has &= (uint8_t)~(1u << k);
        q->value[k] = 0;
        if (q->has == 0) {
            free(q->user);
            free(q->client);
            memmove(q, q + 1, (img->nquotas - i - 1) * sizeof *q);
            img->nquotas--;
        }
        img->quotas_gen++;
        return KP_OK;
    }
    if (!found) {
        if (img->nquotas >= BK_META_QUOTAS_MAX) return KP_ERR_BAD_VALUE;
        if (img->nquotas == img->cap_quotas) {
            size_t ncap = img->cap_quotas ? img->cap_quotas * 2 : 16;
            bk_meta_quota_t *nq = realloc(img->quotas, ncap * sizeof *nq);
            if (!nq) return KP_ERR_NOMEM;
            img->quotas = nq;
            img->cap_quotas = ncap;
        }
        char *uu = strdup(u), *cc = strdup(c);
        if (!uu || !cc) {
            free(uu);
            free(cc);
            return KP_ERR_NOMEM;
        }
        memmove(&img->quotas[i + 1], &img->quotas[i], (img->nquotas - i) * sizeof *img->quotas);
        memset(&img->quotas[i], 0, sizeof img->quotas[i]);
        img->quotas[i].user_kind = (uint8_t)uk;
        img->quotas[i].client_kind = (uint8_t)ck;
        img->quotas[i].user = uu;
        img->quotas[i].client = cc;
        img->nquotas++;
    }
    img->quotas[i].has |= (uint8_t)(1u << k);
    img->quotas[i].value[k] = r->value;
    img->quotas_gen++;
    return KP_OK;
}

void img_quota_free(bk_meta_image_t *img) {
    for (size_t i = 0; i < img->nquotas; i++) {
        free(img->quotas[i].user);
        free(img->quotas[i].client);
    }
    free(img->quotas);
    img->quotas = NULL;
    img->nquotas = img->cap_quotas = 0;
}
