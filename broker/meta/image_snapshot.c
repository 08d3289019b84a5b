/* image_snapshot.c — image <-> MetadataSnapshot bytes.
 *
 * A snapshot is the list of records that rebuilds the image when replayed on
 * an empty one: registrations (+ a BrokerFence for brokers in controlled
 * shutdown), then per topic its Topic record and one Partition record per
 * partition, then configs, then the producer-id block. Everything is emitted
 * in the image's sorted order, so equal images give identical bytes. The
 * temporary protobuf structures live in one arena and point into the image
 * (no string copies); the only copy is the packed output buffer. */
#include "broker/meta/image.h"
#include "broker/meta/image_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_arena.h"

typedef Skiff__Metadata__MetadataRecord rec_t;

typedef struct {
    kp_arena_t arena;
    rec_t **recs;
    size_t n, cap;
    bool oom;
} snap_t;

static void *snap_alloc(snap_t *s, size_t n) {
    void *p = kp_arena_alloc(&s->arena, n);
    if (!p) s->oom = true;
    return p;
}

static rec_t *snap_rec(snap_t *s) {
    if (s->oom) return NULL;
    rec_t *r = snap_alloc(s, sizeof *r);
    if (!r) return NULL;
    assert(s->n < s->cap);
    skiff__metadata__metadata_record__init(r);
    s->recs[s->n++] = r;
    return r;
}

#define IDS(msg, field, ids) \
    do { (msg)->field = (int32_t *)(ids).v; (msg)->n_##field = (size_t)(ids).n; } while (0)

static void snap_broker(snap_t *s, const bk_meta_broker_t *b) {
    rec_t *r = snap_rec(s);
    Skiff__Metadata__BrokerRegistration *m = snap_alloc(s, sizeof *m);
    Skiff__Metadata__Endpoint **eps = snap_alloc(s, (b->nendpoints + 1) * sizeof *eps);
    if (!r || !m || !eps) return;
    skiff__metadata__broker_registration__init(m);
    m->has_broker_id = true; m->broker_id = b->id;
    m->has_incarnation_id = true;
    m->incarnation_id.len = BK_META_UUID_BYTES;
    m->incarnation_id.data = (uint8_t *)b->incarnation;
    m->has_broker_epoch = true; m->broker_epoch = b->epoch;
    m->rack = b->rack;
    m->has_fenced = true; m->fenced = b->fenced;
    for (int32_t i = 0; i < b->nendpoints; i++) {
        Skiff__Metadata__Endpoint *e = snap_alloc(s, sizeof *e);
        if (!e) return;
        skiff__metadata__endpoint__init(e);
        e->listener = b->endpoints[i].listener;
        e->host = b->endpoints[i].host;
        e->has_port = true; e->port = b->endpoints[i].port;
        eps[i] = e;
    }
    m->n_endpoints = (size_t)b->nendpoints;
    m->endpoints = eps;
    r->record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_BROKER_REGISTRATION;
    r->broker_registration = m;
    if (!b->in_controlled_shutdown) return;
    rec_t *f = snap_rec(s);
    Skiff__Metadata__BrokerFence *fm = snap_alloc(s, sizeof *fm);
    if (!f || !fm) return;
    skiff__metadata__broker_fence__init(fm);
    fm->has_broker_id = true; fm->broker_id = b->id;
    fm->has_in_controlled_shutdown = true; fm->in_controlled_shutdown = true;
    f->record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_BROKER_FENCE;
    f->broker_fence = fm;
}

static void snap_topic(snap_t *s, const bk_meta_topic_t *t) {
    rec_t *r = snap_rec(s);
    Skiff__Metadata__Topic *m = snap_alloc(s, sizeof *m);
    if (!r || !m) return;
    skiff__metadata__topic__init(m);
    m->name = t->name;
    m->has_topic_id = true;
    m->topic_id.len = BK_META_UUID_BYTES;
    m->topic_id.data = (uint8_t *)t->id.b;
    r->record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_TOPIC;
    r->topic = m;
    for (int32_t i = 0; i < t->nparts; i++) {
        const bk_meta_partition_t *p = &t->parts[i];
        rec_t *pr = snap_rec(s);
        Skiff__Metadata__Partition *pm = snap_alloc(s, sizeof *pm);
        if (!pr || !pm) return;
        skiff__metadata__partition__init(pm);
        pm->has_topic_id = true;
        pm->topic_id = m->topic_id;
        pm->has_partition_id = true; pm->partition_id = p->id;
        IDS(pm, replicas, p->replicas);
        IDS(pm, isr, p->isr);
        IDS(pm, adding_replicas, p->adding);
        IDS(pm, removing_replicas, p->removing);
        pm->has_leader = true; pm->leader = p->leader;
        pm->has_leader_epoch = true; pm->leader_epoch = p->leader_epoch;
        pm->has_partition_epoch = true; pm->partition_epoch = p->partition_epoch;
        pr->record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_PARTITION;
        pr->partition = pm;
    }
}

static void snap_config(snap_t *s, const bk_meta_img_config_t *c) {
    rec_t *r = snap_rec(s);
    Skiff__Metadata__Config *m = snap_alloc(s, sizeof *m);
    if (!r || !m) return;
    skiff__metadata__config__init(m);
    m->has_resource_type = true; m->resource_type = c->resource_type;
    m->resource_name = c->resource_name;
    m->name = c->name;
    m->value = c->value;
    r->record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_CONFIG;
    r->config = m;
}

static void snap_pid(snap_t *s, int64_t next) {
    rec_t *r = snap_rec(s);
    Skiff__Metadata__ProducerIdBlock *m = snap_alloc(s, sizeof *m);
    if (!r || !m) return;
    skiff__metadata__producer_id_block__init(m);
    m->has_next_producer_id = true; m->next_producer_id = next;
    r->record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_PRODUCER_ID_BLOCK;
    r->producer_id_block = m;
}

static void snap_scram(snap_t *s, const bk_meta_scram_t *c) {
    rec_t *r = snap_rec(s);
    Skiff__Metadata__UserScramCredential *m = snap_alloc(s, sizeof *m);
    if (!r || !m) return;
    skiff__metadata__user_scram_credential__init(m);
    size_t kl = bk_meta_scram_key_len(c->mechanism);
    m->name = c->name;
    m->has_mechanism = true; m->mechanism = c->mechanism;
    m->has_iterations = true; m->iterations = c->iterations;
    m->has_salt = true; m->salt.data = (uint8_t *)c->salt; m->salt.len = c->salt_len;
    m->has_stored_key = true; m->stored_key.data = (uint8_t *)c->stored_key; m->stored_key.len = kl;
    m->has_server_key = true; m->server_key.data = (uint8_t *)c->server_key; m->server_key.len = kl;
    r->record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_USER_SCRAM_CREDENTIAL;
    r->user_scram_credential = m;
}

static void snap_scram_done(snap_t *s) {
    rec_t *r = snap_rec(s);
    Skiff__Metadata__ScramBootstrapDone *m = snap_alloc(s, sizeof *m);
    if (!r || !m) return;
    skiff__metadata__scram_bootstrap_done__init(m);
    r->record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_SCRAM_BOOTSTRAP_DONE;
    r->scram_bootstrap_done = m;
}

static bool snap_acl(void *ctx, const bk_meta_acl_t *a) {
    snap_t *s = ctx;
    rec_t *r = snap_rec(s);
    Skiff__Metadata__AccessControlEntry *m = snap_alloc(s, sizeof *m);
    if (!r || !m) return false;
    img_acl_to_record(a, m);
    r->record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_ACCESS_CONTROL_ENTRY;
    r->access_control_entry = m;
    return true;
}

typedef struct {
    bk_meta_acl_t *v;
    size_t n, cap;
} acl_list_t;

static bool acl_collect(void *ctx, const bk_meta_acl_t *a) {
    acl_list_t *l = ctx;
    if (l->n == l->cap) return false;   /* cap = the count: cannot happen */
    l->v[l->n++] = *a;
    return true;
}

static int acl_cmp(const void *x, const void *y) {
    const bk_meta_acl_t *a = x, *b = y;
    int r;
    if (a->resource_type != b->resource_type) return a->resource_type - b->resource_type;
    if (a->pattern_type != b->pattern_type) return a->pattern_type - b->pattern_type;
    if ((r = strcmp(a->resource_name, b->resource_name)) != 0) return r;
    if ((r = strcmp(a->principal, b->principal)) != 0) return r;
    if ((r = strcmp(a->host, b->host)) != 0) return r;
    if (a->operation != b->operation) return a->operation - b->operation;
    return a->permission - b->permission;
}

/* The bindings sorted, so that snapshot -> load -> snapshot is a fixed
 * point whatever order the hash table holds them in. */
static void snap_acls(snap_t *s, const bk_meta_image_t *img) {
    size_t n = bk_meta_acls_count(img->acls);
    if (n == 0) return;
    acl_list_t l = { malloc(n * sizeof *l.v), 0, n };
    if (!l.v) { s->oom = true; return; }
    bk_meta_acls_each(img->acls, acl_collect, &l);
    assert(l.n == n);
    qsort(l.v, l.n, sizeof *l.v, acl_cmp);
    for (size_t i = 0; i < l.n; i++)
        if (!snap_acl(s, &l.v[i])) break;
    free(l.v);
}

/* Every feature, level 0 too: a snapshot of a cluster whose levels were
 * finalized must not look like a new cluster (which gets the defaults). */
static void snap_feature(snap_t *s, int i, int16_t level) {
    rec_t *r = snap_rec(s);
    Skiff__Metadata__FeatureLevel *m = snap_alloc(s, sizeof *m);
    if (!r || !m) return;
    skiff__metadata__feature_level__init(m);
    m->name = (char *)bk_meta_feature_defs()[i].name;
    m->has_level = true; m->level = level;
    r->record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_FEATURE_LEVEL;
    r->feature_level = m;
}

static void snap_quota(snap_t *s, const bk_meta_quota_t *q, int k) {
    rec_t *r = snap_rec(s);
    Skiff__Metadata__ClientQuota *m = snap_alloc(s, sizeof *m);
    size_t ne = (q->user_kind != BK_META_QE_NONE) + (q->client_kind != BK_META_QE_NONE);
    Skiff__Metadata__ClientQuotaEntity *e = snap_alloc(s, ne * sizeof *e);
    Skiff__Metadata__ClientQuotaEntity **ep = snap_alloc(s, ne * sizeof *ep);
    if (!r || !m || !e || !ep) return;
    skiff__metadata__client_quota__init(m);
    size_t i = 0;
    if (q->user_kind != BK_META_QE_NONE) {
        skiff__metadata__client_quota_entity__init(&e[i]);
        e[i].entity_type = (char *)"user";
        e[i].entity_name = q->user_kind == BK_META_QE_NAME ? q->user : NULL;
        ep[i] = &e[i]; i++;
    }
    if (q->client_kind != BK_META_QE_NONE) {
        skiff__metadata__client_quota_entity__init(&e[i]);
        e[i].entity_type = (char *)"client-id";
        e[i].entity_name = q->client_kind == BK_META_QE_NAME ? q->client : NULL;
        ep[i] = &e[i]; i++;
    }
    m->n_entity = ne;
    m->entity = ep;
    m->key = (char *)bk_meta_quota_key_name(k);
    m->has_value = true; m->value = q->value[k];
    r->record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_CLIENT_QUOTA;
    r->client_quota = m;
}

static size_t snap_count(const bk_meta_image_t *img) {
    size_t n = 2 * img->nbrokers + img->ntopics + img->nconfigs + img->nscram + 2 + BK_META_FEATURES_N;
    n += bk_meta_acls_count(img->acls);
    n += (size_t)BK_META_QUOTA_KEYS * img->nquotas;
    for (size_t i = 0; i < img->ntopics; i++) n += (size_t)img->by_name[i]->nparts;
    return n;
}

int bk_meta_image_snapshot(const bk_meta_image_t *img, uint8_t **out, size_t *len) {
    snap_t s;
    memset(&s, 0, sizeof s);
    kp_arena_init(&s.arena, KP_ARENA_DEFAULT_CAP_BYTES * 4);
    s.cap = snap_count(img);
    s.recs = malloc(s.cap * sizeof *s.recs);
    if (!s.recs) s.oom = true;
    for (size_t i = 0; i < img->nbrokers; i++) snap_broker(&s, &img->brokers[i]);
    for (size_t i = 0; i < img->ntopics; i++) snap_topic(&s, img->by_name[i]);
    for (size_t i = 0; i < img->nconfigs; i++) snap_config(&s, &img->configs[i]);
    if (img->next_producer_id > 0) snap_pid(&s, img->next_producer_id);
    for (size_t i = 0; i < img->nscram; i++) snap_scram(&s, &img->scram[i]);
    if (img->scram_bootstrapped) snap_scram_done(&s);
    snap_acls(&s, img);
    if (img->features_epoch >= 0)
        for (int i = 0; i < BK_META_FEATURES_N; i++) snap_feature(&s, i, img->feature_level[i]);
    for (size_t i = 0; i < img->nquotas; i++)
        for (int k = 0; k < BK_META_QUOTA_KEYS; k++)
            if (img->quotas[i].has & (1u << k)) snap_quota(&s, &img->quotas[i], k);
    int rc = KP_ERR_NOMEM;
    if (!s.oom) {
        Skiff__Metadata__MetadataSnapshot m = SKIFF__METADATA__METADATA_SNAPSHOT__INIT;
        m.has_last_offset = true; m.last_offset = img->last_offset;
        m.has_last_epoch = true; m.last_epoch = img->last_epoch;
        m.cluster_id = img->cluster_id;
        m.n_records = s.n;
        m.records = s.recs;
        *len = skiff__metadata__metadata_snapshot__get_packed_size(&m);
        *out = malloc(*len ? *len : 1);
        if (*out) {
            size_t w = skiff__metadata__metadata_snapshot__pack(&m, *out);
            assert(w == *len);
            rc = KP_OK;
        }
    }
    free(s.recs);
    kp_arena_free(&s.arena);
    return rc;
}

/* ---- load ------------------------------------------------------------------ */

static int replay(bk_meta_image_t *n, const Skiff__Metadata__MetadataSnapshot *m) {
    int64_t off = m->has_last_offset ? m->last_offset : -1;
    for (size_t i = 0; i < m->n_records; i++) {
        int rc = img_apply(n, m->records[i], off);
        if (rc) return rc;
    }
    n->last_offset = off;
    n->last_epoch = m->has_last_epoch ? m->last_epoch : -1;
    return bk_meta_image_set_cluster_id(n, m->cluster_id);
}

/* Moves the old image's notification state to the loaded one: old roles of
 * every partition the old image had, and "no role" for partitions new to it. */
static int carry_touches(bk_meta_image_t *old, bk_meta_image_t *n) {
    for (size_t i = 0; i < old->ntopics; i++) {
        bk_meta_topic_t *t = old->by_name[i];
        for (int32_t j = 0; j < t->nparts; j++) {
            int rc = img_touch(old, t, &t->parts[j]);
            if (rc) return rc;
        }
    }
    n->local_id = old->local_id;
    for (size_t i = 0; i < old->ntouched; i++) {
        const bk_meta_touch_t *e = &old->touched[i];
        const bk_meta_topic_t *t = bk_meta_image_topic_by_id(n, &e->topic_id);
        if (t && e->partition < t->nparts) t->parts[e->partition].touched = true;
    }
    free(n->touched);
    n->touched = old->touched;
    n->ntouched = old->ntouched;
    n->cap_touched = old->cap_touched;
    old->touched = NULL;
    old->ntouched = old->cap_touched = 0;
    for (size_t i = 0; i < n->ntopics; i++) {
        bk_meta_topic_t *t = n->by_name[i];
        for (int32_t j = 0; j < t->nparts; j++) {
            bk_meta_partition_t *p = &t->parts[j];
            if (p->touched) continue;
            bk_meta_partition_t none = { .id = p->id, .leader = -1 };
            int rc = img_touch(n, t, &none);
            if (rc) return rc;
            p->touched = true;
        }
    }
    return KP_OK;
}

int bk_meta_image_load(bk_meta_image_t *img, const uint8_t *data, size_t len) {
    Skiff__Metadata__MetadataSnapshot *m =
        skiff__metadata__metadata_snapshot__unpack(NULL, len, data);
    if (!m) return KP_ERR_CORRUPT;
    bk_meta_image_t n;
    bk_meta_image_init(&n, -1);
    int rc = replay(&n, m);
    skiff__metadata__metadata_snapshot__free_unpacked(m, NULL);
    if (rc == KP_OK && img->local_id >= 0) rc = carry_touches(img, &n);
    if (rc != KP_OK) {
        bk_meta_image_free(&n);
        return rc == KP_ERR_NOMEM ? rc : KP_ERR_BAD_VALUE;
    }
    n.local_id = img->local_id;
    bk_meta_image_free(img);
    n.configs_gen = img->configs_gen + 1;   /* every config may differ */
    *img = n;
    return KP_OK;
}

bk_meta_image_t *bk_meta_image_copy(const bk_meta_image_t *src) {
    bk_meta_image_t *img = calloc(1, sizeof *img);
    if (!img) return NULL;
    /* loaded as local -1: no touches to carry (O(partitions) of entries the
     * copy would only discard); the local id is set after */
    bk_meta_image_init(img, -1);
    uint8_t *snap = NULL;
    size_t len = 0;
    int rc = bk_meta_image_snapshot(src, &snap, &len);
    if (rc == KP_OK) rc = bk_meta_image_load(img, snap, len);
    free(snap);
    if (rc != KP_OK) {
        bk_meta_image_free(img);
        free(img);
        return NULL;
    }
    img->local_id = src->local_id;
    (void)bk_meta_image_take_changes(img, NULL, 0);   /* a copy drives nothing */
    return img;
}
