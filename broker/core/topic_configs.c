/* broker/core/topic_configs.c — topic overrides resolved once per change of
 * the image's Config records, looked up by name on the request path.
 *
 * The image keeps Config records as strings. Resolving them (validate and
 * parse every override into a bk_cfg_topic_t) used to happen in every
 * lookup: per partition of every Produce, per acks=all check of the replica
 * manager and the transaction markers, and it logged a warning for each bad
 * value each time. Now bk_node_topic_configs_sync resolves every topic that
 * has records when the records change (the commit path: bk_broker_dynconf_sync),
 * and a lookup is a binary search over the resolved entries.
 *
 * Cost: a sync is O(topic Config records) and re-resolves every topic, not
 * only the changed ones: exact without diffing, and configs change rarely
 * (the same commit already re-configures every open log). A lookup is
 * O(log topics-with-overrides) strcmp. Hanging the entry on the image's
 * bk_meta_topic_t would make it O(1) but tie meta/ to the resolved form (config
 * parsing, warnings) and to topic lifetimes; not worth it at these sizes.
 *
 * Warn once: each entry keeps the (name, value) pairs its last resolution
 * rejected; a pair the previous resolution of the same topic rejected too is
 * not logged again. The pairs are few (normally none): memory is bounded by
 * the image's records.
 *
 * Loop thread only, like the image. */
#include "broker/core/node.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "storage/st_status.h"

typedef struct {
    char *name;
    char *value;
    char why[128];                  /* bk_cfg_topic_set's reason */
} pair_t;

struct bk_node_topic_cfg {
    char *topic;
    bk_cfg_topic_t tc;
    pair_t *rejected;               /* refused by the last resolution (warned) */
    size_t nrejected;
};

static void entry_free(bk_node_topic_cfg_t *e) {
    if (!e) return;
    for (size_t i = 0; i < e->nrejected; i++) {
        free(e->rejected[i].name);
        free(e->rejected[i].value);
    }
    free(e->rejected);
    free(e->topic);
    free(e);
}

static bool was_rejected(const bk_node_topic_cfg_t *old, const char *name, const char *value) {
    if (!old) return false;
    for (size_t i = 0; i < old->nrejected; i++)
        if (strcmp(old->rejected[i].name, name) == 0 && strcmp(old->rejected[i].value, value) == 0) return true;
    return false;
}

/* A fresh entry for the records c[0..cnt) of one topic (same resource
 * name, cnt >= 1). Warnings are not logged here (see commit_entry). NULL
 * when out of memory. */
static bk_node_topic_cfg_t *resolve(const bk_meta_img_config_t *c, size_t cnt) {
    assert(cnt >= 1);
    bk_node_topic_cfg_t *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->topic = strdup(c[0].resource_name);
    if (!e->topic) goto fail;
    for (size_t i = 0; i < cnt; i++) {
        assert(c[i].resource_type == BK_META_RESOURCE_TOPIC);
        assert(strcmp(c[i].resource_name, e->topic) == 0);
        char why[sizeof ((pair_t *)0)->why];
        if (bk_cfg_topic_set(&e->tc, c[i].name, c[i].value, why, sizeof why) == 0) continue;
        if (!e->rejected) {
            e->rejected = calloc(cnt, sizeof *e->rejected);   /* at most one per record */
            if (!e->rejected) goto fail;
        }
        assert(e->nrejected < cnt);
        pair_t *p = &e->rejected[e->nrejected++];
        memcpy(p->why, why, sizeof p->why);
        p->name = strdup(c[i].name);
        p->value = strdup(c[i].value ? c[i].value : "");
        if (!p->name || !p->value) goto fail;
    }
    return e;
fail:
    entry_free(e);
    return NULL;
}

/* Logs the pairs `fresh` rejected that `old` (the same topic's previous
 * resolution, or NULL) had not rejected already. */
static void warn_new_rejections(const bk_node_topic_cfg_t *fresh, const bk_node_topic_cfg_t *old) {
    for (size_t i = 0; i < fresh->nrejected; i++) {
        const pair_t *p = &fresh->rejected[i];
        if (was_rejected(old, p->name, p->value)) continue;
        st_logf(ST_LOG_WARN, "topic %s: committed config %s=%s ignored (the broker default applies): %s",
                fresh->topic, p->name, p->value, p->why);
    }
}

int bk_node_topic_configs_sync(bk_node_t *n) {
    const bk_meta_image_t *img = &n->img;
    bk_node_topic_cfgs_t *cur = &n->topic_cfgs;
    /* the topic records are one contiguous run of the (type, resource,
     * name)-sorted array */
    size_t first = 0;
    while (first < img->nconfigs && img->configs[first].resource_type != BK_META_RESOURCE_TOPIC) first++;
    size_t end = first, ntopics = 0;
    while (end < img->nconfigs && img->configs[end].resource_type == BK_META_RESOURCE_TOPIC) {
        if (end == first || strcmp(img->configs[end].resource_name, img->configs[end - 1].resource_name) != 0)
            ntopics++;
        end++;
    }
    /* Phase 1, may fail: resolve every topic into fresh entries; nothing of
     * the current resolution changes yet. */
    bk_node_topic_cfg_t **fresh = ntopics ? calloc(ntopics, sizeof *fresh) : NULL;
    if (ntopics && !fresh) return KP_ERR_NOMEM;
    size_t k = 0;
    for (size_t i = first; i < end;) {
        size_t j = i + 1;
        while (j < end && strcmp(img->configs[j].resource_name, img->configs[i].resource_name) == 0) j++;
        assert(k < ntopics);
        fresh[k] = resolve(&img->configs[i], j - i);
        if (!fresh[k]) {
            for (size_t x = 0; x < k; x++) entry_free(fresh[x]);
            free(fresh);
            return KP_ERR_NOMEM;
        }
        assert(k == 0 || strcmp(fresh[k - 1]->topic, fresh[k]->topic) < 0);
        k++;
        i = j;
    }
    assert(k == ntopics);
    /* Phase 2, cannot fail: a topic that had an entry keeps its address (its
     * content is replaced); the others get the fresh one; entries of topics
     * without records any more are freed. Both lists are in strcmp order. */
    size_t o = 0;
    for (size_t i = 0; i < ntopics; i++) {
        while (o < cur->n && strcmp(cur->v[o]->topic, fresh[i]->topic) < 0) entry_free(cur->v[o++]);
        bk_node_topic_cfg_t *old = o < cur->n && strcmp(cur->v[o]->topic, fresh[i]->topic) == 0 ? cur->v[o++] : NULL;
        warn_new_rejections(fresh[i], old);
        if (!old) continue;
        bk_node_topic_cfg_t tmp = *old;          /* swap contents: old keeps its address */
        *old = *fresh[i];
        *fresh[i] = tmp;
        entry_free(fresh[i]);
        fresh[i] = old;
    }
    while (o < cur->n) entry_free(cur->v[o++]);
    free(cur->v);
    cur->v = fresh;
    cur->n = ntopics;
    cur->gen = img->configs_gen;
    return KP_OK;
}

void bk_node_topic_configs_free(bk_node_t *n) {
    bk_node_topic_cfgs_t *cur = &n->topic_cfgs;
    for (size_t i = 0; i < cur->n; i++) entry_free(cur->v[i]);
    free(cur->v);
    memset(cur, 0, sizeof *cur);
}

const bk_cfg_topic_t *bk_node_topic_config(bk_node_t *n, const char *topic) {
    static const bk_cfg_topic_t no_overrides;   /* zero = none set; never written */
    bk_node_topic_cfgs_t *cur = &n->topic_cfgs;
    if (cur->gen != n->img.configs_gen && bk_node_topic_configs_sync(n) != KP_OK)
        st_logf(ST_LOG_ERROR, "node %d: out of memory resolving topic configs; topic %s uses the previous ones",
                n->id, topic);
    size_t lo = 0, hi = cur->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(cur->v[mid]->topic, topic);
        if (c == 0) return &cur->v[mid]->tc;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return &no_overrides;
}
