/* txn_meta.c — transaction metadata values, the id table, output lists. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "broker/txn/txn_int.h"
#include "protocol/kp_errors.h"

void txn_meta_init(bk_txn_meta_t *m) {
    memset(m, 0, sizeof *m);
    m->state = BK_TXN_EMPTY;
    m->producer_id = -1;
    m->prev_producer_id = -1;
    m->producer_epoch = -1;
    m->last_producer_epoch = -1;
    m->last_update_ms = -1;
    m->start_ms = -1;
}

void txn_meta_clear_parts(bk_txn_meta_t *m) {
    for (size_t i = 0; i < m->nparts; i++) free((void *)m->parts[i].topic);
    m->nparts = 0;
}

void bk_txn_meta_free(bk_txn_meta_t *m) {
    txn_meta_clear_parts(m);
    free(m->parts);
    m->parts = NULL;
    m->cap = 0;
}

int txn_meta_copy(bk_txn_meta_t *dst, const bk_txn_meta_t *src) {
    *dst = *src;
    dst->parts = NULL;
    dst->nparts = dst->cap = 0;
    for (size_t i = 0; i < src->nparts; i++) {
        const char *t = src->parts[i].topic;
        int rc = txn_meta_add(dst, t, strlen(t), src->parts[i].partition);
        if (rc != KP_OK) {
            bk_txn_meta_free(dst);
            return rc;
        }
    }
    return KP_OK;
}

static int tp_cmp(const char *topic, size_t topic_len, int32_t partition, const bk_txn_tp_t *b) {
    size_t blen = strlen(b->topic);
    int c = memcmp(topic, b->topic, topic_len < blen ? topic_len : blen);
    if (c == 0 && topic_len != blen) c = topic_len < blen ? -1 : 1;
    if (c == 0 && partition != b->partition) c = partition < b->partition ? -1 : 1;
    return c;
}

/* Binary search: index of the first element >= (topic, partition). */
static size_t tp_lower(const bk_txn_meta_t *m, const char *topic, size_t topic_len, int32_t partition) {
    size_t lo = 0, hi = m->nparts;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tp_cmp(topic, topic_len, partition, &m->parts[mid]) > 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

long txn_meta_find(const bk_txn_meta_t *m, const char *topic, int32_t partition) {
    size_t len = strlen(topic);
    size_t i = tp_lower(m, topic, len, partition);
    if (i < m->nparts && tp_cmp(topic, len, partition, &m->parts[i]) == 0) return (long)i;
    return -1;
}

int txn_meta_add(bk_txn_meta_t *m, const char *topic, size_t topic_len, int32_t partition) {
    size_t i = tp_lower(m, topic, topic_len, partition);
    if (i < m->nparts && tp_cmp(topic, topic_len, partition, &m->parts[i]) == 0) return KP_OK;
    if (m->nparts >= BK_TXN_PARTS_MAX) return KP_ERR_TOO_LARGE;
    if (m->nparts == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 8;
        bk_txn_tp_t *p = realloc(m->parts, cap * sizeof *p);
        if (!p) return KP_ERR_NOMEM;
        m->parts = p;
        m->cap = cap;
    }
    char *t = malloc(topic_len + 1);
    if (!t) return KP_ERR_NOMEM;
    memcpy(t, topic, topic_len);
    t[topic_len] = '\0';
    memmove(&m->parts[i + 1], &m->parts[i], (m->nparts - i) * sizeof *m->parts);
    m->parts[i].topic = t;
    m->parts[i].partition = partition;
    m->nparts++;
    return KP_OK;
}

/* ---- the id table: sorted array of entry pointers -------------------------- */

bk_txn_entry_t *txn_find(const bk_txn_coord_t *c, const char *id, size_t *pos) {
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = strcmp(c->v[mid]->id, id);
        if (r == 0) {
            if (pos) *pos = mid;
            return c->v[mid];
        }
        if (r < 0) lo = mid + 1;
        else hi = mid;
    }
    if (pos) *pos = lo;
    return NULL;
}

bk_txn_entry_t *txn_insert(bk_txn_coord_t *c, const char *id, size_t pos) {
    if (c->n >= BK_TXN_IDS_MAX) return NULL;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        bk_txn_entry_t **v = realloc(c->v, cap * sizeof *v);
        if (!v) return NULL;
        c->v = v;
        c->cap = cap;
    }
    bk_txn_entry_t *e = calloc(1, sizeof *e);
    char *dup = e ? strdup(id) : NULL;
    if (!dup) {
        free(e);
        return NULL;
    }
    e->id = dup;
    txn_meta_init(&e->cur);
    txn_meta_init(&e->next);
    memmove(&c->v[pos + 1], &c->v[pos], (c->n - pos) * sizeof *c->v);
    c->v[pos] = e;
    c->n++;
    return e;
}

void txn_entry_free(bk_txn_entry_t *e) {
    if (!e) return;
    bk_txn_meta_free(&e->cur);
    bk_txn_meta_free(&e->next);
    free(e->acked);
    free(e->id);
    free(e);
}

void txn_remove(bk_txn_coord_t *c, size_t pos) {
    assert(pos < c->n);
    txn_entry_free(c->v[pos]);
    memmove(&c->v[pos], &c->v[pos + 1], (c->n - pos - 1) * sizeof *c->v);
    c->n--;
}

/* ---- coordinator lifetime ---------------------------------------------------- */

void bk_txn_config_defaults(bk_txn_config_t *cfg) {
    cfg->timeout_max_ms = 900000;
    cfg->id_expiration_ms = 604800000;
}

void bk_txn_coord_init(bk_txn_coord_t *c, const bk_txn_config_t *cfg, int32_t coordinator_epoch,
                       bk_txn_alloc_pid_fn alloc_pid, void *alloc_ctx) {
    assert(alloc_pid != NULL);
    memset(c, 0, sizeof *c);
    c->cfg = *cfg;
    c->coordinator_epoch = coordinator_epoch;
    c->alloc_pid = alloc_pid;
    c->alloc_ctx = alloc_ctx;
}

void bk_txn_coord_free(bk_txn_coord_t *c) {
    for (size_t i = 0; i < c->n; i++) txn_entry_free(c->v[i]);
    free(c->v);
    c->v = NULL;
    c->n = c->cap = 0;
}

/* ---- outputs ------------------------------------------------------------------ */

void bk_txn_out_init(bk_txn_out_t *o) {
    memset(o, 0, sizeof *o);
    o->producer_id = -1;
    o->producer_epoch = -1;
}

static void markers_free(bk_txn_markers_t *m) {
    for (size_t i = 0; i < m->nparts; i++) free((void *)m->parts[i].topic);
    free(m->parts);
    free(m->transactional_id);
}

void bk_txn_out_free(bk_txn_out_t *o) {
    for (size_t i = 0; i < o->nrecs; i++) {
        bk_txn_rec_free(&o->recs[i]);
        free(o->rec_ids[i]);
    }
    free(o->recs);
    free(o->rec_ids);
    for (size_t i = 0; i < o->nmarkers; i++) markers_free(&o->markers[i]);
    free(o->markers);
    bk_txn_out_init(o);
}

/* Appends rec (taking ownership) for id; false on NOMEM (rec freed). */
static bool out_add_rec(bk_txn_out_t *o, const char *id, bk_txn_rec_t *rec) {
    if (o->nrecs == o->recs_cap) {
        size_t cap = o->recs_cap ? o->recs_cap * 2 : 4;
        bk_txn_rec_t *r = realloc(o->recs, cap * sizeof *r);
        if (r) o->recs = r;
        char **ids = r ? realloc(o->rec_ids, cap * sizeof *ids) : NULL;
        if (ids) o->rec_ids = ids;
        if (!r || !ids) goto nomem;
        o->recs_cap = cap;
    }
    char *dup = strdup(id);
    if (!dup) goto nomem;
    o->rec_ids[o->nrecs] = dup;
    o->recs[o->nrecs++] = *rec;
    return true;
nomem:
    bk_txn_rec_free(rec);
    o->err = KP_ERR_NOMEM;
    return false;
}

bool txn_emit(bk_txn_coord_t *c, bk_txn_entry_t *e, txn_wait_t wait, bool tombstone, bk_txn_out_t *out) {
    (void)c;
    assert(!e->pending);
    bk_txn_rec_t rec;
    int rc = out->err == KP_OK ? bk_txn_rec_encode(e->id, tombstone ? NULL : &e->next, &rec) : out->err;
    if (rc != KP_OK) {
        out->err = KP_ERR_NOMEM;
        bk_txn_meta_free(&e->next);
        return false;
    }
    if (!out_add_rec(out, e->id, &rec)) {
        bk_txn_meta_free(&e->next);
        return false;
    }
    e->pending = true;
    e->wait = wait;
    return true;
}

void txn_out_markers(const bk_txn_coord_t *c, const bk_txn_entry_t *e, bk_txn_out_t *out) {
    if (out->err != KP_OK) return;
    if (out->nmarkers == out->markers_cap) {
        size_t cap = out->markers_cap ? out->markers_cap * 2 : 4;
        bk_txn_markers_t *m = realloc(out->markers, cap * sizeof *m);
        if (!m) {
            out->err = KP_ERR_NOMEM;
            return;
        }
        out->markers = m;
        out->markers_cap = cap;
    }
    bk_txn_markers_t *m = &out->markers[out->nmarkers];
    memset(m, 0, sizeof *m);
    m->producer_id = e->cur.producer_id;
    m->producer_epoch = e->cur.producer_epoch;
    m->commit = e->cur.state == BK_TXN_PREPARE_COMMIT;
    m->coordinator_epoch = c->coordinator_epoch;
    m->transactional_id = strdup(e->id);
    m->parts = calloc(e->unacked ? e->unacked : 1, sizeof *m->parts);
    bool ok = m->transactional_id && m->parts;
    for (size_t i = 0; ok && i < e->cur.nparts; i++) {
        if (e->acked && e->acked[i]) continue;
        char *t = strdup(e->cur.parts[i].topic);
        if (!t) ok = false;
        else m->parts[m->nparts++] = (bk_txn_tp_t){ t, e->cur.parts[i].partition };
    }
    if (!ok) {
        markers_free(m);
        out->err = KP_ERR_NOMEM;
        return;
    }
    out->nmarkers++;
}
