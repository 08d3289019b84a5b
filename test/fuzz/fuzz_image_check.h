/* fuzz_image_check.h — structural invariants of a bk_meta_image_t, shared by the
 * image fuzz targets (header-only: test/fuzz/fuzz_*.c are the targets).
 * Every violation aborts, which libFuzzer reports as a crash. */
#ifndef SKIFF_FUZZ_IMAGE_CHECK_H
#define SKIFF_FUZZ_IMAGE_CHECK_H

#include <stdlib.h>
#include <string.h>

#include "broker/meta/image.h"

#define FUZZ_CHANGES_MAX 4096 /* bound on change notifications taken at once */

static bool fz_ids_ok(const bk_meta_ids_t *s) {
    if (s->n < 0 || s->n > BK_META_REPLICAS_MAX) return false;
    for (int32_t i = 0; i < s->n; i++) {
        if (s->v[i] < 0) return false;
        for (int32_t j = 0; j < i; j++)
            if (s->v[j] == s->v[i]) return false;
    }
    return true;
}

static bool fz_subset(const bk_meta_ids_t *a, const bk_meta_ids_t *of) {
    for (int32_t i = 0; i < a->n; i++)
        if (!bk_meta_ids_has(of, a->v[i])) return false;
    return true;
}

/* image.h: leader in the ISR, ISR/adding/removing within replicas, adding
 * and removing disjoint, epochs non-negative. */
static void fz_check_partition(const bk_meta_partition_t *p, int32_t id) {
    if (p->id != id) abort();
    if (!fz_ids_ok(&p->replicas) || !fz_ids_ok(&p->isr) || !fz_ids_ok(&p->adding) || !fz_ids_ok(&p->removing))
        abort();
    if (p->replicas.n < 1) abort();
    if (!fz_subset(&p->isr, &p->replicas) || !fz_subset(&p->adding, &p->replicas) ||
        !fz_subset(&p->removing, &p->replicas))
        abort();
    for (int32_t i = 0; i < p->adding.n; i++)
        if (bk_meta_ids_has(&p->removing, p->adding.v[i])) abort();
    if (p->leader != -1 && !bk_meta_ids_has(&p->isr, p->leader)) abort();
    if (p->leader_epoch < 0 || p->partition_epoch < 0) abort();
}

static void fz_check_brokers(const bk_meta_image_t *img) {
    if (img->nbrokers > BK_META_BROKERS_MAX || img->nbrokers > img->cap_brokers) abort();
    for (size_t i = 0; i < img->nbrokers; i++) {
        const bk_meta_broker_t *b = &img->brokers[i];
        if (b->id < 0 || (i > 0 && img->brokers[i - 1].id >= b->id)) abort();
        if (bk_meta_image_broker(img, b->id) != b) abort();
        if (b->nendpoints < 0 || b->nendpoints > BK_META_ENDPOINTS_MAX) abort();
        for (int32_t e = 0; e < b->nendpoints; e++)
            if (!b->endpoints[e].listener || !b->endpoints[e].host) abort();
        if (b->rack && !b->rack[0]) abort();
    }
}

static void fz_check_topics(const bk_meta_image_t *img) {
    if (img->ntopics > BK_META_TOPICS_MAX || img->ntopics > img->cap_topics) abort();
    for (size_t i = 0; i < img->ntopics; i++) {
        const bk_meta_topic_t *t = img->by_name[i];
        size_t len = strlen(t->name);
        if (len < 1 || len > BK_META_TOPIC_NAME_MAX || bk_meta_uuid_is_zero(&t->id)) abort();
        if (i > 0 && strcmp(img->by_name[i - 1]->name, t->name) >= 0) abort();
        if (i > 0 && memcmp(img->by_id[i - 1]->id.b, img->by_id[i]->id.b, BK_META_UUID_BYTES) >= 0) abort();
        if (bk_meta_image_topic_by_name(img, t->name) != t || bk_meta_image_topic_by_id(img, &t->id) != t) abort();
        if (t->nparts < 0 || t->nparts > BK_META_PARTITIONS_MAX) abort();
        for (int32_t p = 0; p < t->nparts; p++) {
            fz_check_partition(&t->parts[p], p);
            if (bk_meta_image_partition(img, &t->id, p) != &t->parts[p]) abort();
            if (bk_meta_image_leader(img, &t->id, p) != t->parts[p].leader) abort();
        }
        if (bk_meta_image_partition(img, &t->id, t->nparts) != NULL) abort();
    }
}

static void fz_check_configs(const bk_meta_image_t *img) {
    if (img->nconfigs > BK_META_CONFIGS_MAX || img->nconfigs > img->cap_configs) abort();
    for (size_t i = 0; i < img->nconfigs; i++) {
        const bk_meta_img_config_t *c = &img->configs[i];
        if (c->resource_type != BK_META_RESOURCE_TOPIC && c->resource_type != BK_META_RESOURCE_BROKER) abort();
        if (!c->resource_name || !c->name || !c->name[0] || !c->value) abort();
        if (i > 0) {
            const bk_meta_img_config_t *a = &img->configs[i - 1];
            int o = a->resource_type != c->resource_type ? (a->resource_type < c->resource_type ? -1 : 1)
                                                         : strcmp(a->resource_name, c->resource_name);
            if (o == 0) o = strcmp(a->name, c->name);
            if (o >= 0) abort();
        }
        const char *v = bk_meta_image_config(img, c->resource_type, c->resource_name, c->name);
        if (v != c->value) abort();
    }
}

/* SCRAM credentials: sorted by (name, mechanism), within the record bounds,
 * each found by its own lookup. */
static void fz_check_scram(const bk_meta_image_t *img) {
    if (img->nscram > BK_META_SCRAM_MAX || img->nscram > img->cap_scram) abort();
    for (size_t i = 0; i < img->nscram; i++) {
        const bk_meta_scram_t *c = &img->scram[i];
        if (!c->name || !c->name[0] || strlen(c->name) > BK_META_SCRAM_NAME_MAX) abort();
        if (bk_meta_scram_key_len(c->mechanism) == 0) abort();
        if (c->iterations < BK_META_SCRAM_ITER_MIN || c->iterations > BK_META_SCRAM_ITER_MAX) abort();
        if (c->salt_len == 0 || c->salt_len > BK_META_SCRAM_SALT_MAX) abort();
        if (i > 0) {
            const bk_meta_scram_t *a = &img->scram[i - 1];
            int o = strcmp(a->name, c->name);
            if (o > 0 || (o == 0 && a->mechanism >= c->mechanism)) abort();
        }
        if (bk_meta_image_scram(img, c->name, c->mechanism) != c) abort();
    }
}

/* Checks everything, then drains the change notifications. */
static void fz_check_image(bk_meta_image_t *img) {
    fz_check_brokers(img);
    fz_check_topics(img);
    fz_check_configs(img);
    fz_check_scram(img);
    if (img->next_producer_id < 0) abort();
    size_t unfenced = 0;
    for (size_t i = 0; i < img->nbrokers; i++) unfenced += !img->brokers[i].fenced;
    if (bk_meta_image_unfenced_count(img) != unfenced) abort();
    static bk_meta_change_t changes[FUZZ_CHANGES_MAX];
    size_t pending = bk_meta_image_pending_changes(img);
    size_t n = bk_meta_image_take_changes(img, changes, FUZZ_CHANGES_MAX);
    if (n > pending || bk_meta_image_pending_changes(img) != 0) abort();
    for (size_t i = 0; i < n && i < FUZZ_CHANGES_MAX; i++) {
        const bk_meta_change_t *c = &changes[i];
        if (c->kind != BK_META_CHANGE_LEADER && c->kind != BK_META_CHANGE_FOLLOWER && c->kind != BK_META_CHANGE_STOP) abort();
        if (c->kind == BK_META_CHANGE_LEADER && c->leader != img->local_id) abort();
        if (c->kind != BK_META_CHANGE_STOP && !bk_meta_image_partition(img, &c->topic_id, c->partition)) abort();
        /* deleted: the local replica is gone — its topic deleted, or this
         * node taken out of the partition's replica set (a reassignment;
         * also a snapshot that gives the id to a topic elsewhere) */
        if (c->deleted) {
            const bk_meta_partition_t *p = bk_meta_image_partition(img, &c->topic_id, c->partition);
            if (p)
                for (int32_t k = 0; k < p->replicas.n; k++)
                    if (p->replicas.v[k] == img->local_id) abort();
        }
    }
}

#endif
