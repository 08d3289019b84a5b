/* image.c — metadata image storage, lookups and lifecycle. Applying records
 * is in image_apply.c, queries over many partitions in image_query.c,
 * snapshots in image_snapshot.c. */
#include "broker/meta/image.h"
#include "broker/meta/image_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

void bk_meta_image_init(bk_meta_image_t *img, int32_t local_id) {
    memset(img, 0, sizeof *img);
    img->last_offset = -1;
    img->last_epoch = -1;
    img->local_id = local_id;
    img->features_epoch = -1;
}

static void broker_free(bk_meta_broker_t *b) {
    for (int32_t i = 0; i < b->nendpoints; i++) {
        free(b->endpoints[i].listener);
        free(b->endpoints[i].host);
    }
    free(b->rack);
    memset(b, 0, sizeof *b);
}

void img_topic_free(bk_meta_topic_t *t) {
    if (!t) return;
    free(t->name);
    free(t->parts);
    free(t);
}

void img_config_free(bk_meta_img_config_t *c) {
    free(c->resource_name);
    free(c->name);
    free(c->value);
    memset(c, 0, sizeof *c);
}

void bk_meta_image_free(bk_meta_image_t *img) {
    for (size_t i = 0; i < img->nbrokers; i++) broker_free(&img->brokers[i]);
    for (size_t i = 0; i < img->ntopics; i++) img_topic_free(img->by_name[i]);
    for (size_t i = 0; i < img->nconfigs; i++) img_config_free(&img->configs[i]);
    img_scram_free(img);
    bk_meta_acls_free(img->acls);
    img->acls = NULL;
    uint64_t qgen = img->quotas_gen;
    img_quota_free(img);
    free(img->brokers);
    free(img->by_name);
    free(img->by_id);
    free(img->configs);
    free(img->touched);
    free(img->cluster_id);
    int32_t local = img->local_id;
    uint64_t gen = img->configs_gen;
    bk_meta_image_init(img, local);
    img->configs_gen = gen + 1;     /* the configs are gone: derived caches are stale */
    img->quotas_gen = qgen + 1;
}

int bk_meta_image_set_cluster_id(bk_meta_image_t *img, const char *cluster_id) {
    char *copy = NULL;
    if (cluster_id) {
        copy = strdup(cluster_id);
        if (!copy) return KP_ERR_NOMEM;
    }
    free(img->cluster_id);
    img->cluster_id = copy;
    return KP_OK;
}

void bk_meta_image_set_last_epoch(bk_meta_image_t *img, int32_t epoch) { img->last_epoch = epoch; }

/* ---- small sets ---------------------------------------------------------- */

bool bk_meta_ids_has(const bk_meta_ids_t *s, int32_t id) {
    for (int32_t i = 0; i < s->n; i++)
        if (s->v[i] == id) return true;
    return false;
}

void bk_meta_ids_add(bk_meta_ids_t *s, int32_t id) {
    assert(s->n < BK_META_REPLICAS_MAX);
    s->v[s->n++] = id;
}

void bk_meta_ids_remove(bk_meta_ids_t *s, int32_t id) {
    int32_t k = 0;
    for (int32_t i = 0; i < s->n; i++)
        if (s->v[i] != id) s->v[k++] = s->v[i];
    s->n = k;
}

bool bk_meta_ids_equal(const bk_meta_ids_t *a, const bk_meta_ids_t *b) {
    if (a->n != b->n) return false;
    for (int32_t i = 0; i < a->n; i++)
        if (a->v[i] != b->v[i]) return false;
    return true;
}

bool bk_meta_uuid_is_zero(const bk_meta_uuid_t *u) {
    for (int i = 0; i < BK_META_UUID_BYTES; i++)
        if (u->b[i]) return false;
    return true;
}

/* ---- binary searches ------------------------------------------------------
 * Each returns the index where the key is or would be inserted; *found says
 * which. */

size_t img_broker_pos(const bk_meta_image_t *img, int32_t id, bool *found) {
    size_t lo = 0, hi = img->nbrokers;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (img->brokers[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    *found = lo < img->nbrokers && img->brokers[lo].id == id;
    return lo;
}

size_t img_name_pos(const bk_meta_image_t *img, const char *name, bool *found) {
    size_t lo = 0, hi = img->ntopics;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(img->by_name[mid]->name, name) < 0) lo = mid + 1;
        else hi = mid;
    }
    *found = lo < img->ntopics && strcmp(img->by_name[lo]->name, name) == 0;
    return lo;
}

size_t img_id_pos(const bk_meta_image_t *img, const bk_meta_uuid_t *id, bool *found) {
    size_t lo = 0, hi = img->ntopics;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (memcmp(img->by_id[mid]->id.b, id->b, BK_META_UUID_BYTES) < 0) lo = mid + 1;
        else hi = mid;
    }
    *found = lo < img->ntopics && memcmp(img->by_id[lo]->id.b, id->b, BK_META_UUID_BYTES) == 0;
    return lo;
}

static int config_cmp(int32_t type, const char *rname, const char *name, const bk_meta_img_config_t *c) {
    if (type != c->resource_type) return type < c->resource_type ? -1 : 1;
    int r = strcmp(rname, c->resource_name);
    if (r) return r;
    if (!name) return -1;           /* NULL name sorts before every name of the resource */
    return strcmp(name, c->name);
}

size_t img_config_pos(const bk_meta_image_t *img, int32_t type, const char *rname, const char *name,
                      bool *found) {
    size_t lo = 0, hi = img->nconfigs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (config_cmp(type, rname, name, &img->configs[mid]) > 0) lo = mid + 1;
        else hi = mid;
    }
    *found = name && lo < img->nconfigs && config_cmp(type, rname, name, &img->configs[lo]) == 0;
    return lo;
}

/* ---- lookups --------------------------------------------------------------- */

bool bk_meta_topic_is_internal(const char *name) { return name[0] == '_' && name[1] == '_'; }

const bk_meta_topic_t *bk_meta_image_topic_by_name(const bk_meta_image_t *img, const char *name) {
    bool found;
    size_t i = img_name_pos(img, name, &found);
    return found ? img->by_name[i] : NULL;
}

const bk_meta_topic_t *bk_meta_image_topic_by_slice(const bk_meta_image_t *img, kp_str_t name) {
    /* a name with a NUL would be cut ("a\0b" -> "a"): it names no topic */
    if (!name.p || name.len > BK_META_TOPIC_NAME_MAX || kp_slice_has_nul(name)) return NULL;
    char c[BK_META_TOPIC_NAME_MAX + 1];
    memcpy(c, name.p, name.len);
    c[name.len] = '\0';
    return bk_meta_image_topic_by_name(img, c);
}

const bk_meta_topic_t *bk_meta_image_topic_by_id(const bk_meta_image_t *img, const bk_meta_uuid_t *id) {
    bool found;
    size_t i = img_id_pos(img, id, &found);
    return found ? img->by_id[i] : NULL;
}

const bk_meta_partition_t *bk_meta_image_partition(const bk_meta_image_t *img, const bk_meta_uuid_t *topic_id,
                                         int32_t partition) {
    const bk_meta_topic_t *t = bk_meta_image_topic_by_id(img, topic_id);
    if (!t || partition < 0 || partition >= t->nparts) return NULL;
    assert(t->parts[partition].id == partition);
    return &t->parts[partition];
}

const bk_meta_broker_t *bk_meta_image_broker(const bk_meta_image_t *img, int32_t broker_id) {
    bool found;
    size_t i = img_broker_pos(img, broker_id, &found);
    return found ? &img->brokers[i] : NULL;
}

int32_t bk_meta_image_leader(const bk_meta_image_t *img, const bk_meta_uuid_t *topic_id, int32_t partition) {
    const bk_meta_partition_t *p = bk_meta_image_partition(img, topic_id, partition);
    return p ? p->leader : -1;
}

bool bk_meta_image_broker_usable(const bk_meta_image_t *img, int32_t broker_id) {
    const bk_meta_broker_t *b = bk_meta_image_broker(img, broker_id);
    return b && !b->fenced && !b->in_controlled_shutdown;
}

size_t bk_meta_image_unfenced_count(const bk_meta_image_t *img) {
    size_t n = 0;
    for (size_t i = 0; i < img->nbrokers; i++)
        if (!img->brokers[i].fenced) n++;
    return n;
}

const bk_meta_img_config_t *bk_meta_image_configs(const bk_meta_image_t *img, int32_t resource_type,
                                    const char *resource_name, size_t *n) {
    bool found;
    size_t first = img_config_pos(img, resource_type, resource_name, NULL, &found);
    size_t end = first;
    while (end < img->nconfigs && img->configs[end].resource_type == resource_type &&
           strcmp(img->configs[end].resource_name, resource_name) == 0)
        end++;
    *n = end - first;
    return *n ? &img->configs[first] : NULL;
}

const char *bk_meta_image_config(const bk_meta_image_t *img, int32_t resource_type,
                            const char *resource_name, const char *name) {
    bool found;
    size_t i = img_config_pos(img, resource_type, resource_name, name, &found);
    return found ? img->configs[i].value : NULL;
}
