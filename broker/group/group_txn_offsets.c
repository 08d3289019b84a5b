/* broker/group/group_txn_offsets.c — pending transactional offsets (see
 * group_txn_offsets.h).
 * A flat array in arrival order: lookups are linear, which is fine for the
 * handful of partitions a transaction commits; bounded by
 * BK_GRP_TXN_OFFSETS_MAX. */
#include <stdlib.h>
#include <string.h>

#include "broker/group/group_txn_offsets.h"

void bk_grp_txn_offsets_init(bk_grp_txn_offsets_t *t) { memset(t, 0, sizeof *t); }

static void entry_free(bk_grp_txn_pending_t *o) {
    free(o->group);
    free(o->topic);
    free(o->metadata);
}

void bk_grp_txn_offsets_free(bk_grp_txn_offsets_t *t) {
    for (size_t i = 0; i < t->n; i++) entry_free(&t->v[i]);
    free(t->v);
    bk_grp_txn_offsets_init(t);
}

static bool same_key(const bk_grp_txn_pending_t *a, const char *group, const char *topic, int32_t partition) {
    return strcmp(a->group, group) == 0 && (topic == NULL || (strcmp(a->topic, topic) == 0 &&
                                                               a->partition == partition));
}

int bk_grp_txn_offsets_add(bk_grp_txn_offsets_t *t, const bk_grp_txn_pending_t *o) {
    if (!o->group || !o->topic || o->partition < 0) return KP_ERR_BAD_VALUE;
    bk_grp_txn_pending_t c = *o;
    c.group = strdup(o->group);
    c.topic = strdup(o->topic);
    c.metadata = o->metadata ? strdup(o->metadata) : NULL;
    if (!c.group || !c.topic || (o->metadata && !c.metadata)) {
        entry_free(&c);
        return KP_ERR_NOMEM;
    }
    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i].producer_id == o->producer_id && same_key(&t->v[i], o->group, o->topic, o->partition)) {
            entry_free(&t->v[i]);
            t->v[i] = c;
            return KP_OK;
        }
    }
    if (t->n >= BK_GRP_TXN_OFFSETS_MAX) {
        entry_free(&c);
        return KP_ERR_TOO_LARGE;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        bk_grp_txn_pending_t *v = realloc(t->v, cap * sizeof *v);
        if (!v) {
            entry_free(&c);
            return KP_ERR_NOMEM;
        }
        t->v = v;
        t->cap = cap;
    }
    t->v[t->n++] = c;
    return KP_OK;
}

/* Removes the entries for which drop() is true, keeping the order. */
static size_t compact(bk_grp_txn_offsets_t *t, bool (*drop)(const bk_grp_txn_pending_t *, const void *), const void *arg) {
    size_t w = 0, dropped = 0;
    for (size_t r = 0; r < t->n; r++) {
        if (drop(&t->v[r], arg)) {
            entry_free(&t->v[r]);
            dropped++;
        } else {
            t->v[w++] = t->v[r];
        }
    }
    t->n = w;
    return dropped;
}

static bool of_pid(const bk_grp_txn_pending_t *o, const void *arg) { return o->producer_id == *(const int64_t *)arg; }
static bool of_group(const bk_grp_txn_pending_t *o, const void *arg) { return strcmp(o->group, arg) == 0; }

size_t bk_grp_txn_offsets_complete(bk_grp_txn_offsets_t *t, int64_t producer_id, bool commit, bk_grp_txn_pending_fn fn,
                               void *ctx) {
    if (commit && fn)
        for (size_t i = 0; i < t->n; i++)
            if (t->v[i].producer_id == producer_id) fn(ctx, &t->v[i]);
    return compact(t, of_pid, &producer_id);
}

bool bk_grp_txn_offsets_pending(const bk_grp_txn_offsets_t *t, const char *group, const char *topic, int32_t partition) {
    for (size_t i = 0; group && i < t->n; i++)
        if (same_key(&t->v[i], group, topic, partition)) return true;
    return false;
}

bool bk_grp_txn_offsets_has_producer(const bk_grp_txn_offsets_t *t, int64_t producer_id) {
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].producer_id == producer_id) return true;
    return false;
}

size_t bk_grp_txn_offsets_drop_group(bk_grp_txn_offsets_t *t, const char *group) {
    return group ? compact(t, of_group, group) : 0;
}
