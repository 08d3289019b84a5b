/* image_apply.c — applying one metadata record to the image.
 *
 * Every apply_* function validates the whole record before it mutates
 * anything, so a failed apply leaves the image as it was. */
#include "broker/meta/image.h"
#include "broker/meta/image_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* ---- validation helpers ---------------------------------------------------- */

static bool uuid_from(const ProtobufCBinaryData *d, bool has, bk_meta_uuid_t *out) {
    if (!has || d->len != BK_META_UUID_BYTES) return false;
    memcpy(out->b, d->data, BK_META_UUID_BYTES);
    return !bk_meta_uuid_is_zero(out);
}

/* Copies a repeated int32 field into a set: no duplicates, ids >= 0. */
static bool ids_from(const int32_t *v, size_t n, bk_meta_ids_t *out) {
    if (n > BK_META_REPLICAS_MAX) return false;
    out->n = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < 0 || bk_meta_ids_has(out, v[i])) return false;
        bk_meta_ids_add(out, v[i]);
    }
    return true;
}

static bool ids_subset(const bk_meta_ids_t *a, const bk_meta_ids_t *of) {
    for (int32_t i = 0; i < a->n; i++)
        if (!bk_meta_ids_has(of, a->v[i])) return false;
    return true;
}

/* The invariants every partition state in the image satisfies. */
static bool partition_valid(const bk_meta_partition_t *p) {
    if (p->replicas.n < 1) return false;
    if (!ids_subset(&p->isr, &p->replicas)) return false;
    if (!ids_subset(&p->adding, &p->replicas)) return false;
    if (!ids_subset(&p->removing, &p->replicas)) return false;
    for (int32_t i = 0; i < p->adding.n; i++)
        if (bk_meta_ids_has(&p->removing, p->adding.v[i])) return false;
    if (p->leader != -1 && !bk_meta_ids_has(&p->isr, p->leader)) return false;
    return p->leader_epoch >= 0 && p->partition_epoch >= 0;
}

/* ---- change tracking ------------------------------------------------------- */

static int8_t role_of(const bk_meta_partition_t *p, int32_t local) {
    if (p->leader == local) return 1;
    return bk_meta_ids_has(&p->replicas, local) ? 2 : 0;
}

int img_touch(bk_meta_image_t *img, const bk_meta_topic_t *t, bk_meta_partition_t *p) {
    if (img->local_id < 0 || p->touched) return KP_OK;
    if (img->ntouched == img->cap_touched) {
        size_t cap = img->cap_touched ? img->cap_touched * 2 : 64;
        bk_meta_touch_t *n = realloc(img->touched, cap * sizeof *n);
        if (!n) return KP_ERR_NOMEM;
        img->touched = n;
        img->cap_touched = cap;
    }
    bk_meta_touch_t *e = &img->touched[img->ntouched++];
    e->topic_id = t->id;
    e->partition = p->id;
    e->old_role = role_of(p, img->local_id);
    e->old_leader = p->leader;
    e->old_leader_epoch = p->leader_epoch;
    e->old_partition_epoch = p->partition_epoch;
    p->touched = true;
    return KP_OK;
}

size_t bk_meta_image_pending_changes(const bk_meta_image_t *img) { return img->ntouched; }

static bool change_for(const bk_meta_image_t *img, const bk_meta_touch_t *e, bk_meta_change_t *c) {
    const bk_meta_topic_t *t = bk_meta_image_topic_by_id(img, &e->topic_id);
    const bk_meta_partition_t *p = t && e->partition < t->nparts ? &t->parts[e->partition] : NULL;
    int8_t role = p ? role_of(p, img->local_id) : 0;
    memset(c, 0, sizeof *c);
    c->topic_id = e->topic_id;
    c->partition = e->partition;
    if (role == 0) {
        c->kind = BK_META_CHANGE_STOP;
        /* a replica removed by a reassignment (the only way out of a
         * replica set while the topic stays) is deleted, as Kafka's
         * StopReplica(delete=true): it was removed only once the target
         * replicas were in the ISR, or it was an unfinished copy (cancel) */
        c->deleted = true;
        c->leader = -1;
        return e->old_role != 0;
    }
    c->kind = role == 1 ? BK_META_CHANGE_LEADER : BK_META_CHANGE_FOLLOWER;
    c->leader = p->leader;
    c->leader_epoch = p->leader_epoch;
    c->partition_epoch = p->partition_epoch;
    return role != e->old_role || p->leader != e->old_leader ||
           p->leader_epoch != e->old_leader_epoch || p->partition_epoch != e->old_partition_epoch;
}

size_t bk_meta_image_take_changes(bk_meta_image_t *img, bk_meta_change_t *out, size_t max) {
    size_t total = 0;
    for (size_t i = 0; i < img->ntouched; i++) {
        const bk_meta_touch_t *e = &img->touched[i];
        bk_meta_change_t c;
        if (change_for(img, e, &c)) {
            if (total < max) out[total] = c;
            total++;
        }
        const bk_meta_topic_t *t = bk_meta_image_topic_by_id(img, &e->topic_id);
        if (t && e->partition < t->nparts) t->parts[e->partition].touched = false;
    }
    img->ntouched = 0;
    return total;
}

/* ---- brokers --------------------------------------------------------------- */

static char *dup_or_null(const char *s, bool *oom) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *oom = true;
    return d;
}

static int apply_registration(bk_meta_image_t *img, const Skiff__Metadata__BrokerRegistration *r,
                              int64_t offset) {
    if (!r->has_broker_id || r->broker_id < 0) return KP_ERR_BAD_VALUE;
    if (r->has_incarnation_id && r->incarnation_id.len != BK_META_UUID_BYTES) return KP_ERR_BAD_VALUE;
    if (r->n_endpoints > BK_META_ENDPOINTS_MAX) return KP_ERR_BAD_VALUE;
    bool found;
    size_t pos = img_broker_pos(img, r->broker_id, &found);
    if (!found && img->nbrokers >= BK_META_BROKERS_MAX) return KP_ERR_BAD_VALUE;
    bk_meta_broker_t b;
    memset(&b, 0, sizeof b);
    b.id = r->broker_id;
    if (r->has_incarnation_id) memcpy(b.incarnation, r->incarnation_id.data, BK_META_UUID_BYTES);
    b.epoch = r->has_broker_epoch ? r->broker_epoch : offset;
    b.fenced = r->has_fenced ? r->fenced : true;
    bool oom = false;
    b.rack = r->rack && r->rack[0] ? dup_or_null(r->rack, &oom) : NULL;
    for (size_t i = 0; i < r->n_endpoints; i++) {
        const Skiff__Metadata__Endpoint *e = r->endpoints[i];
        b.endpoints[i].listener = dup_or_null(e->listener ? e->listener : "", &oom);
        b.endpoints[i].host = dup_or_null(e->host ? e->host : "", &oom);
        b.endpoints[i].port = (uint16_t)(e->has_port && e->port <= 65535 ? e->port : 0);
        b.nendpoints++;
    }
    if (!oom && !found && img->nbrokers == img->cap_brokers) {
        size_t cap = img->cap_brokers ? img->cap_brokers * 2 : 8;
        bk_meta_broker_t *n = realloc(img->brokers, cap * sizeof *n);
        if (n) { img->brokers = n; img->cap_brokers = cap; }
        else oom = true;
    }
    if (oom) {
        for (int32_t i = 0; i < b.nendpoints; i++) {
            free(b.endpoints[i].listener);
            free(b.endpoints[i].host);
        }
        free(b.rack);
        return KP_ERR_NOMEM;
    }
    if (found) {
        bk_meta_broker_t *old = &img->brokers[pos];
        for (int32_t i = 0; i < old->nendpoints; i++) {
            free(old->endpoints[i].listener);
            free(old->endpoints[i].host);
        }
        free(old->rack);
    } else {
        memmove(&img->brokers[pos + 1], &img->brokers[pos],
                (img->nbrokers - pos) * sizeof img->brokers[0]);
        img->nbrokers++;
    }
    img->brokers[pos] = b;
    return KP_OK;
}

static bk_meta_broker_t *broker_for(bk_meta_image_t *img, bool has_id, int32_t id, bool has_epoch,
                               int64_t epoch) {
    if (!has_id) return NULL;
    bool found;
    size_t pos = img_broker_pos(img, id, &found);
    if (!found) return NULL;
    if (has_epoch && img->brokers[pos].epoch != epoch) return NULL;
    return &img->brokers[pos];
}

static int apply_fence(bk_meta_image_t *img, const Skiff__Metadata__BrokerFence *r) {
    bk_meta_broker_t *b = broker_for(img, r->has_broker_id, r->broker_id, r->has_broker_epoch,
                                r->broker_epoch);
    if (!b) return KP_ERR_BAD_VALUE;
    if (r->has_fenced) b->fenced = r->fenced;
    if (r->has_in_controlled_shutdown) b->in_controlled_shutdown = r->in_controlled_shutdown;
    return KP_OK;
}

static int apply_unregistration(bk_meta_image_t *img, const Skiff__Metadata__BrokerUnregistration *r) {
    bk_meta_broker_t *b = broker_for(img, r->has_broker_id, r->broker_id, r->has_broker_epoch,
                                r->broker_epoch);
    if (!b) return KP_ERR_BAD_VALUE;
    size_t pos = (size_t)(b - img->brokers);
    for (int32_t i = 0; i < b->nendpoints; i++) {
        free(b->endpoints[i].listener);
        free(b->endpoints[i].host);
    }
    free(b->rack);
    memmove(&img->brokers[pos], &img->brokers[pos + 1],
            (img->nbrokers - pos - 1) * sizeof img->brokers[0]);
    img->nbrokers--;
    return KP_OK;
}

/* ---- topics and partitions ------------------------------------------------- */

static int apply_topic(bk_meta_image_t *img, const Skiff__Metadata__Topic *r) {
    bk_meta_uuid_t id;
    if (!uuid_from(&r->topic_id, r->has_topic_id, &id)) return KP_ERR_BAD_VALUE;
    if (!r->name || !r->name[0] || strlen(r->name) > BK_META_TOPIC_NAME_MAX) return KP_ERR_BAD_VALUE;
    bool found_name, found_id;
    size_t npos = img_name_pos(img, r->name, &found_name);
    size_t ipos = img_id_pos(img, &id, &found_id);
    if (found_name || found_id || img->ntopics >= BK_META_TOPICS_MAX) return KP_ERR_BAD_VALUE;
    if (img->ntopics == img->cap_topics) {
        size_t cap = img->cap_topics ? img->cap_topics * 2 : 16;
        bk_meta_topic_t **a = realloc(img->by_name, cap * sizeof *a);
        if (!a) return KP_ERR_NOMEM;
        img->by_name = a;
        bk_meta_topic_t **b = realloc(img->by_id, cap * sizeof *b);
        if (!b) return KP_ERR_NOMEM;
        img->by_id = b;
        img->cap_topics = cap;
    }
    bk_meta_topic_t *t = calloc(1, sizeof *t);
    if (!t || !(t->name = strdup(r->name))) {
        free(t);
        return KP_ERR_NOMEM;
    }
    t->id = id;
    memmove(&img->by_name[npos + 1], &img->by_name[npos], (img->ntopics - npos) * sizeof(void *));
    memmove(&img->by_id[ipos + 1], &img->by_id[ipos], (img->ntopics - ipos) * sizeof(void *));
    img->by_name[npos] = t;
    img->by_id[ipos] = t;
    img->ntopics++;
    return KP_OK;
}

static bk_meta_topic_t *topic_mut(bk_meta_image_t *img, const ProtobufCBinaryData *d, bool has) {
    bk_meta_uuid_t id;
    if (!uuid_from(d, has, &id)) return NULL;
    bool found;
    size_t pos = img_id_pos(img, &id, &found);
    return found ? img->by_id[pos] : NULL;
}

static int apply_partition(bk_meta_image_t *img, const Skiff__Metadata__Partition *r) {
    bk_meta_topic_t *t = topic_mut(img, &r->topic_id, r->has_topic_id);
    if (!t || !r->has_partition_id || r->partition_id < 0 || r->partition_id > t->nparts ||
        r->partition_id >= BK_META_PARTITIONS_MAX)
        return KP_ERR_BAD_VALUE;
    bk_meta_partition_t p;
    memset(&p, 0, sizeof p);
    p.id = r->partition_id;
    if (!ids_from(r->replicas, r->n_replicas, &p.replicas) || !ids_from(r->isr, r->n_isr, &p.isr) ||
        !ids_from(r->adding_replicas, r->n_adding_replicas, &p.adding) ||
        !ids_from(r->removing_replicas, r->n_removing_replicas, &p.removing))
        return KP_ERR_BAD_VALUE;
    p.leader = r->has_leader ? r->leader : -1;
    p.leader_epoch = r->has_leader_epoch ? r->leader_epoch : 0;
    p.partition_epoch = r->has_partition_epoch ? r->partition_epoch : 0;
    if (!partition_valid(&p)) return KP_ERR_BAD_VALUE;
    bool appended = p.id == t->nparts;
    if (appended) {
        bk_meta_partition_t *n = realloc(t->parts, (size_t)(t->nparts + 1) * sizeof *n);
        if (!n) return KP_ERR_NOMEM;
        t->parts = n;
        /* a new partition: the local node had no role in it before */
        bk_meta_partition_t *slot = &t->parts[t->nparts++];
        memset(slot, 0, sizeof *slot);
        slot->id = p.id;
        slot->leader = -1;
    }
    bk_meta_partition_t *dst = &t->parts[p.id];
    int rc = img_touch(img, t, dst);
    if (rc) {
        if (appended) t->nparts--;
        return rc;
    }
    p.touched = dst->touched;
    *dst = p;
    return KP_OK;
}

/* Builds the state a PartitionChange leads to, into *p (a copy). */
static bool change_state(const Skiff__Metadata__PartitionChange *r, bk_meta_partition_t *p) {
    if (r->has_leader) {
        if (r->leader < -1) return false;
        if (r->leader != p->leader) {
            if (p->leader_epoch == INT32_MAX) return false; /* no epoch left: refuse, never wrap */
            p->leader_epoch++;
        }
        p->leader = r->leader;
    }
    if (r->has_isr_set && r->isr_set && !ids_from(r->isr, r->n_isr, &p->isr)) return false;
    if (r->has_replicas_set && r->replicas_set) {
        if (!ids_from(r->replicas, r->n_replicas, &p->replicas) ||
            !ids_from(r->adding_replicas, r->n_adding_replicas, &p->adding) ||
            !ids_from(r->removing_replicas, r->n_removing_replicas, &p->removing))
            return false;
    }
    if (p->partition_epoch == INT32_MAX) return false;
    p->partition_epoch++;
    return partition_valid(p);
}

static int apply_partition_change(bk_meta_image_t *img, const Skiff__Metadata__PartitionChange *r) {
    bk_meta_topic_t *t = topic_mut(img, &r->topic_id, r->has_topic_id);
    if (!t || !r->has_partition_id || r->partition_id < 0 || r->partition_id >= t->nparts)
        return KP_ERR_BAD_VALUE;
    bk_meta_partition_t *dst = &t->parts[r->partition_id];
    bk_meta_partition_t p = *dst;
    if (!change_state(r, &p)) return KP_ERR_BAD_VALUE;
    int rc = img_touch(img, t, dst);
    if (rc) return rc;
    p.touched = dst->touched;
    *dst = p;
    return KP_OK;
}

static void remove_resource_configs(bk_meta_image_t *img, int32_t type, const char *rname) {
    bool found;
    size_t first = img_config_pos(img, type, rname, NULL, &found);
    size_t end = first;
    while (end < img->nconfigs && img->configs[end].resource_type == type &&
           strcmp(img->configs[end].resource_name, rname) == 0)
        img_config_free(&img->configs[end++]);
    if (end == first) return;       /* also keeps a NULL configs array out of memmove */
    memmove(&img->configs[first], &img->configs[end],
            (img->nconfigs - end) * sizeof img->configs[0]);
    img->nconfigs -= end - first;
    img->configs_gen++;
}

static int apply_topic_removal(bk_meta_image_t *img, const Skiff__Metadata__TopicRemoval *r) {
    bk_meta_topic_t *t = topic_mut(img, &r->topic_id, r->has_topic_id);
    if (!t) return KP_ERR_BAD_VALUE;
    for (int32_t i = 0; i < t->nparts; i++) {
        int rc = img_touch(img, t, &t->parts[i]);
        if (rc) return rc;
    }
    bool found;
    size_t npos = img_name_pos(img, t->name, &found);
    assert(found);
    size_t ipos = img_id_pos(img, &t->id, &found);
    assert(found);
    remove_resource_configs(img, BK_META_RESOURCE_TOPIC, t->name);
    memmove(&img->by_name[npos], &img->by_name[npos + 1], (img->ntopics - npos - 1) * sizeof(void *));
    memmove(&img->by_id[ipos], &img->by_id[ipos + 1], (img->ntopics - ipos - 1) * sizeof(void *));
    img->ntopics--;
    img_topic_free(t);
    return KP_OK;
}

/* ---- configs and producer ids ---------------------------------------------- */

static int apply_config(bk_meta_image_t *img, const Skiff__Metadata__Config *r) {
    if (!r->has_resource_type || !r->resource_name || !r->name || !r->name[0])
        return KP_ERR_BAD_VALUE;
    if (r->resource_type != BK_META_RESOURCE_TOPIC && r->resource_type != BK_META_RESOURCE_BROKER)
        return KP_ERR_BAD_VALUE;
    bool found;
    size_t pos = img_config_pos(img, r->resource_type, r->resource_name, r->name, &found);
    if (!r->value) {                /* removal; removing an unset key is harmless */
        if (found) {
            img_config_free(&img->configs[pos]);
            memmove(&img->configs[pos], &img->configs[pos + 1],
                    (img->nconfigs - pos - 1) * sizeof img->configs[0]);
            img->nconfigs--;
            img->configs_gen++;
        }
        return KP_OK;
    }
    char *value = strdup(r->value);
    if (!value) return KP_ERR_NOMEM;
    if (found) {
        free(img->configs[pos].value);
        img->configs[pos].value = value;
        img->configs_gen++;
        return KP_OK;
    }
    if (img->nconfigs >= BK_META_CONFIGS_MAX) { free(value); return KP_ERR_BAD_VALUE; }
    if (img->nconfigs == img->cap_configs) {
        size_t cap = img->cap_configs ? img->cap_configs * 2 : 16;
        bk_meta_img_config_t *n = realloc(img->configs, cap * sizeof *n);
        if (!n) { free(value); return KP_ERR_NOMEM; }
        img->configs = n;
        img->cap_configs = cap;
    }
    bk_meta_img_config_t c = { r->resource_type, strdup(r->resource_name), strdup(r->name), value };
    if (!c.resource_name || !c.name) { img_config_free(&c); return KP_ERR_NOMEM; }
    memmove(&img->configs[pos + 1], &img->configs[pos], (img->nconfigs - pos) * sizeof c);
    img->configs[pos] = c;
    img->nconfigs++;
    img->configs_gen++;
    return KP_OK;
}

static int apply_pid_block(bk_meta_image_t *img, const Skiff__Metadata__ProducerIdBlock *r) {
    if (!r->has_next_producer_id || r->next_producer_id <= img->next_producer_id)
        return KP_ERR_BAD_VALUE;
    img->next_producer_id = r->next_producer_id;
    return KP_OK;
}

/* A level above what this binary supports means the cluster was finalized
 * by a newer node: this one must not serve it (Kafka refuses to start too). */
static int apply_feature_level(bk_meta_image_t *img, const Skiff__Metadata__FeatureLevel *r, int64_t offset) {
    if (!r->name || !r->has_level) return KP_ERR_BAD_VALUE;
    int i = bk_meta_feature_index(r->name, strlen(r->name));
    if (i < 0) return KP_ERR_BAD_VALUE;
    const bk_meta_feature_def_t *d = &bk_meta_feature_defs()[i];
    if (r->level < 0 || r->level > d->max_level) return KP_ERR_BAD_VALUE;
    img->feature_level[i] = (int16_t)r->level;
    img->features_epoch = offset;
    return KP_OK;
}

/* ---- dispatch -------------------------------------------------------------- */

int img_apply(bk_meta_image_t *img, const Skiff__Metadata__MetadataRecord *rec, int64_t offset) {
    int rc;
    switch (rec->record_case) {
    case SKIFF__METADATA__METADATA_RECORD__RECORD_BROKER_REGISTRATION:
        rc = apply_registration(img, rec->broker_registration, offset); break;
    case SKIFF__METADATA__METADATA_RECORD__RECORD_BROKER_FENCE:
        rc = apply_fence(img, rec->broker_fence); break;
    case SKIFF__METADATA__METADATA_RECORD__RECORD_BROKER_UNREGISTRATION:
        rc = apply_unregistration(img, rec->broker_unregistration); break;
    case SKIFF__METADATA__METADATA_RECORD__RECORD_TOPIC:
        rc = apply_topic(img, rec->topic); break;
    case SKIFF__METADATA__METADATA_RECORD__RECORD_PARTITION:
        rc = apply_partition(img, rec->partition); break;
    case SKIFF__METADATA__METADATA_RECORD__RECORD_PARTITION_CHANGE:
        rc = apply_partition_change(img, rec->partition_change); break;
    case SKIFF__METADATA__METADATA_RECORD__RECORD_TOPIC_REMOVAL:
        rc = apply_topic_removal(img, rec->topic_removal); break;
    case SKIFF__METADATA__METADATA_RECORD__RECORD_CONFIG:
        rc = apply_config(img, rec->config); break;
    case SKIFF__METADATA__METADATA_RECORD__RECORD_PRODUCER_ID_BLOCK:
        rc = apply_pid_block(img, rec->producer_id_block); break;
    case SKIFF__METADATA__METADATA_RECORD__RECORD_NO_OP:
        rc = KP_OK; break;
    case SKIFF__METADATA__METADATA_RECORD__RECORD_USER_SCRAM_CREDENTIAL:
        rc = img_scram_apply(img, rec->user_scram_credential); break;
    case SKIFF__METADATA__METADATA_RECORD__RECORD_REMOVE_USER_SCRAM_CREDENTIAL:
        rc = img_scram_remove(img, rec->remove_user_scram_credential); break;
    case SKIFF__METADATA__METADATA_RECORD__RECORD_ACCESS_CONTROL_ENTRY:
        rc = img_acl_apply(img, rec->access_control_entry, true); break;
    case SKIFF__METADATA__METADATA_RECORD__RECORD_REMOVE_ACCESS_CONTROL_ENTRY:
        rc = rec->remove_access_control_entry && rec->remove_access_control_entry->acl
                 ? img_acl_apply(img, rec->remove_access_control_entry->acl, false)
                 : KP_ERR_BAD_VALUE;
        break;
    case SKIFF__METADATA__METADATA_RECORD__RECORD_CLIENT_QUOTA:
        rc = img_quota_apply(img, rec->client_quota); break;
    case SKIFF__METADATA__METADATA_RECORD__RECORD_SCRAM_BOOTSTRAP_DONE:
        img->scram_bootstrapped = true;
        rc = KP_OK; break;
    case SKIFF__METADATA__METADATA_RECORD__RECORD_FEATURE_LEVEL:
        rc = apply_feature_level(img, rec->feature_level, offset); break;
    default:
        rc = KP_ERR_BAD_VALUE; break;
    }
    if (rc == KP_OK) img->last_offset = offset;
    return rc;
}

int bk_meta_image_apply(bk_meta_image_t *img, const Skiff__Metadata__MetadataRecord *rec, int64_t offset) {
    assert(rec);
    if (offset <= img->last_offset) return KP_ERR_BAD_VALUE;
    return img_apply(img, rec, offset);
}

int bk_meta_image_apply_bytes(bk_meta_image_t *img, const uint8_t *data, size_t len, int64_t offset) {
    Skiff__Metadata__MetadataRecord *rec =
        skiff__metadata__metadata_record__unpack(NULL, len, data);
    if (!rec) return KP_ERR_CORRUPT;
    int rc = bk_meta_image_apply(img, rec, offset);
    skiff__metadata__metadata_record__free_unpacked(rec, NULL);
    return rc;
}
