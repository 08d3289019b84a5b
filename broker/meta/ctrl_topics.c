/* ctrl_topics.c — CreateTopics, DeleteTopics, CreatePartitions. */
#include "broker/meta/controller.h"
#include "broker/meta/ctrl_internal.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/config/config_topic.h"
#include "protocol/kp_errors.h"

bool bk_meta_ctrl_topic_name_valid(const char *name, char *msg, size_t msglen) {
    if (!name || !name[0]) {
        snprintf(msg, msglen, "Topic name is illegal, it can't be empty");
        return false;
    }
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        snprintf(msg, msglen, "Topic name cannot be \".\" or \"..\"");
        return false;
    }
    size_t len = strnlen(name, BK_META_TOPIC_NAME_MAX + 1);
    if (len > BK_META_TOPIC_NAME_MAX) {
        snprintf(msg, msglen, "Topic name is illegal, it can't be longer than %d characters",
                 BK_META_TOPIC_NAME_MAX);
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        char ch = name[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                  ch == '.' || ch == '_' || ch == '-';
        if (!ok) {
            snprintf(msg, msglen, "Topic name contains a character other than "
                                  "ASCII alphanumerics, '.', '_' and '-'");
            return false;
        }
    }
    return true;
}

/* One partition of a manual assignment: 1..BK_META_REPLICAS_MAX distinct usable
 * brokers; rf > 0 also requires that many. */
static int16_t check_assignment(const bk_meta_image_t *img, const bk_meta_ctrl_assignment_t *a, int32_t rf,
                                bk_meta_ids_t *out, char *msg, size_t msglen) {
    if (a->nbrokers == 0 || a->nbrokers > BK_META_REPLICAS_MAX || !a->brokers) {
        snprintf(msg, msglen, "The manual partition assignment for partition %d has %zu replicas.",
                 (int)a->partition, a->nbrokers);
        return KP_ERROR_INVALID_REPLICA_ASSIGNMENT;
    }
    if (rf > 0 && (size_t)rf != a->nbrokers) {
        snprintf(msg, msglen, "All partitions in the manual partition assignment must have the "
                              "same number of replicas.");
        return KP_ERROR_INVALID_REPLICA_ASSIGNMENT;
    }
    out->n = 0;
    for (size_t i = 0; i < a->nbrokers; i++) {
        int32_t b = a->brokers[i];
        if (bk_meta_ids_has(out, b)) {
            snprintf(msg, msglen, "The manual partition assignment includes broker %d twice.", (int)b);
            return KP_ERROR_INVALID_REPLICA_ASSIGNMENT;
        }
        if (!bk_meta_image_broker_usable(img, b)) {
            snprintf(msg, msglen, "The manual partition assignment includes broker %d, but no "
                                  "such broker is registered and unfenced.", (int)b);
            return KP_ERROR_INVALID_REPLICA_ASSIGNMENT;
        }
        bk_meta_ids_add(out, b);
    }
    return KP_ERROR_NONE;
}

/* The manual assignment of CreateTopics: partitions 0..n-1, each once. */
static int16_t check_manual(const bk_meta_image_t *img, const bk_meta_ctrl_create_topic_t *t,
                            bk_meta_ids_t *out, char *msg, size_t msglen) {
    size_t n = t->nassignments;
    if (n > BK_META_CREATE_PARTITIONS_MAX) {
        snprintf(msg, msglen, "Too many partitions: %zu.", n);
        return KP_ERROR_INVALID_PARTITIONS;
    }
    bool *seen = calloc(n, sizeof *seen);
    if (!seen) return KP_ERROR_UNKNOWN_SERVER_ERROR;
    int16_t err = KP_ERROR_NONE;
    int32_t rf = (int32_t)t->assignments[0].nbrokers;
    for (size_t i = 0; i < n && !err; i++) {
        const bk_meta_ctrl_assignment_t *a = &t->assignments[i];
        if (a->partition < 0 || (size_t)a->partition >= n || seen[a->partition]) {
            snprintf(msg, msglen, "Partitions must be numbered 0 to %zu, each once; got %d.",
                     n - 1, (int)a->partition);
            err = KP_ERROR_INVALID_REPLICA_ASSIGNMENT;
            break;
        }
        seen[a->partition] = true;
        err = check_assignment(img, a, rf, &out[a->partition], msg, msglen);
    }
    free(seen);
    return err;
}

static int16_t check_configs(const bk_meta_ctrl_t *c, const bk_meta_ctrl_create_topic_t *t, char *msg,
                             size_t msglen) {
    for (size_t i = 0; i < t->nconfigs; i++) {
        const bk_meta_ctrl_kv_t *kv = &t->configs[i];
        if (!kv->name || !kv->name[0] || !kv->value) {
            snprintf(msg, msglen, "Null value not supported for topic configs: %s",
                     kv->name ? kv->name : "(null)");
            return KP_ERROR_INVALID_CONFIG;
        }
        msg[0] = '\0';
        if (c->cfg.validate_config && !c->cfg.validate_config(kv->name, kv->value, msg, msglen)) {
            if (!msg[0]) snprintf(msg, msglen, "Invalid value for config %s", kv->name);
            return KP_ERROR_INVALID_CONFIG;
        }
    }
    return KP_ERROR_NONE;
}

/* Kafka refuses names that differ only in '.' versus '_' (metric names
 * would collide). O(topics): creation is rare next to the partition work. */
static bool same_but_for_dots(const char *a, const char *b) {
    for (; *a && *b; a++, b++) {
        char x = *a == '.' ? '_' : *a, y = *b == '.' ? '_' : *b;
        if (x != y) return false;
    }
    return *a == *b;
}

static const char *colliding_topic(const bk_meta_image_t *img, const char *name) {
    if (!strchr(name, '.') && !strchr(name, '_')) return NULL;
    for (size_t i = 0; i < img->ntopics; i++) {
        const char *other = img->by_name[i]->name;
        if (strcmp(other, name) != 0 && same_but_for_dots(other, name)) return other;
    }
    return NULL;
}

static bool name_twice(const bk_meta_ctrl_create_topic_t *req, size_t n, size_t i) {
    for (size_t j = 0; j < n; j++)
        if (j != i && req[j].name && req[i].name && strcmp(req[j].name, req[i].name) == 0)
            return true;
    return false;
}

static KP_MUST_CHECK int emit_topic(bk_meta_recs_t *out, const char *name, const bk_meta_uuid_t *id) {
    Skiff__Metadata__Topic m = SKIFF__METADATA__TOPIC__INIT;
    m.name = (char *)name;
    m.has_topic_id = true;
    m.topic_id.len = BK_META_UUID_BYTES;
    m.topic_id.data = (uint8_t *)id->b;
    Skiff__Metadata__MetadataRecord r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_TOPIC;
    r.topic = &m;
    return bk_meta_recs_add(out, &r);
}

static KP_MUST_CHECK int emit_config(bk_meta_recs_t *out, const char *topic, const bk_meta_ctrl_kv_t *kv) {
    Skiff__Metadata__Config m = SKIFF__METADATA__CONFIG__INIT;
    m.has_resource_type = true; m.resource_type = BK_META_RESOURCE_TOPIC;
    m.resource_name = (char *)topic;
    m.name = (char *)kv->name;
    m.value = (char *)kv->value;
    Skiff__Metadata__MetadataRecord r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_CONFIG;
    r.config = &m;
    return bk_meta_recs_add(out, &r);
}

int16_t bk_meta_ctrl_topic_config(const bk_meta_image_t *img, const char *topic, const char *name, const char *value,
                                  bk_meta_recs_t *out, char *msg, size_t msglen) {
    msg[0] = '\0';
    if (!bk_meta_image_topic_by_name(img, topic)) {
        snprintf(msg, msglen, "unknown topic '%s'", topic);
        return KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
    }
    if (!bk_cfg_topic_known(name)) {
        snprintf(msg, msglen, "Unknown topic config name: %s", name);
        return KP_ERROR_INVALID_CONFIG;
    }
    if (value && bk_cfg_topic_validate(name, value, msg, msglen) != 0) return KP_ERROR_INVALID_CONFIG;
    bk_meta_ctrl_kv_t kv = { name, value };
    return emit_config(out, topic, &kv) == KP_OK ? KP_ERROR_NONE : KP_ERROR_UNKNOWN_SERVER_ERROR;
}

/* Validates one CreateTopics item and, on success, fills reps[nparts]. */
static int16_t check_create(bk_meta_ctrl_t *c, const bk_meta_image_t *img, const bk_meta_ctrl_create_topic_t *t,
                            const ctrl_load_t *load, bk_meta_ids_t **reps, bk_meta_ctrl_create_result_t *res) {
    char *msg = res->message;
    size_t ml = sizeof res->message;
    if (!bk_meta_ctrl_topic_name_valid(t->name, msg, ml)) return KP_ERROR_INVALID_TOPIC_EXCEPTION;
    if (bk_meta_image_topic_by_name(img, t->name)) {
        snprintf(msg, ml, "Topic '%s' already exists.", t->name);
        return KP_ERROR_TOPIC_ALREADY_EXISTS;
    }
    const char *other = colliding_topic(img, t->name);
    if (other) {
        snprintf(msg, ml, "Topic '%.60s' collides with existing topic: %.60s", t->name, other);
        return KP_ERROR_INVALID_TOPIC_EXCEPTION;
    }
    bool manual = t->nassignments > 0;
    if (manual && (t->num_partitions != -1 || t->replication_factor != -1)) {
        snprintf(msg, ml, "Both numPartitions or replicationFactor and replicasAssignments "
                          "were set. Both cannot be used at the same time.");
        return KP_ERROR_INVALID_REQUEST;
    }
    int32_t np = manual ? (int32_t)t->nassignments
                        : t->num_partitions == -1 ? c->cfg.num_partitions : t->num_partitions;
    int32_t rf = manual ? (int32_t)t->assignments[0].nbrokers
                        : t->replication_factor == -1 ? c->cfg.default_replication_factor
                                                      : t->replication_factor;
    if (np <= 0 || np > BK_META_CREATE_PARTITIONS_MAX) {
        snprintf(msg, ml, "Number of partitions was set to an invalid value: %d.", (int)np);
        return KP_ERROR_INVALID_PARTITIONS;
    }
    if (!manual && rf <= 0) {
        snprintf(msg, ml, "Replication factor must be larger than 0, or -1 to use the default value.");
        return KP_ERROR_INVALID_REPLICATION_FACTOR;
    }
    res->num_partitions = np;
    res->replication_factor = (int16_t)rf;
    *reps = calloc((size_t)np, sizeof **reps);
    if (!*reps) return KP_ERROR_UNKNOWN_SERVER_ERROR;
    int16_t err = manual ? check_manual(img, t, *reps, msg, ml)
                         : ctrl_assign(c, img, 0, np, rf, *reps, msg, ml);
    if (err) return err;
    if ((err = check_configs(c, t, msg, ml))) return err;
    return ctrl_load_check(c, load, *reps, np, msg, ml);
}

void bk_meta_ctrl_create_topics(bk_meta_ctrl_t *c, const bk_meta_image_t *img,
                           const bk_meta_ctrl_create_topic_t *req, size_t n, bool validate_only,
                           bk_meta_recs_t *out, bk_meta_ctrl_create_result_t *res) {
    /* heap: 12 KiB, and only needed with a limit */
    ctrl_load_t *load = c->cfg.max_replicas_per_node >= 0 ? malloc(sizeof *load) : NULL;
    if (load) ctrl_load_init(load, img);
    for (size_t i = 0; i < n; i++) {
        const bk_meta_ctrl_create_topic_t *t = &req[i];
        bk_meta_ctrl_create_result_t *r = &res[i];
        assert(t->nassignments == 0 || t->assignments);     /* the decoder's contract */
        assert(t->nconfigs == 0 || t->configs);
        memset(r, 0, sizeof *r);
        r->num_partitions = -1;
        r->replication_factor = -1;
        if (name_twice(req, n, i)) {
            r->error = KP_ERROR_INVALID_REQUEST;
            snprintf(r->message, sizeof r->message, "Create topics request from client contains "
                                                    "multiple entries for topic %s", t->name);
            continue;
        }
        bk_meta_ids_t *reps = NULL;
        if (c->cfg.max_replicas_per_node >= 0 && !load) {
            r->error = KP_ERROR_UNKNOWN_SERVER_ERROR;   /* out of memory: no check, no creation */
            continue;
        }
        r->error = check_create(c, img, t, load, &reps, r);
        if (r->error == KP_ERROR_NONE && load) ctrl_load_add(load, reps, r->num_partitions);
        if (r->error == KP_ERROR_NONE && !validate_only) {
            r->topic_id = ctrl_new_topic_id(c, img);
            int rc = emit_topic(out, t->name, &r->topic_id);
            for (int32_t p = 0; p < r->num_partitions && rc == KP_OK; p++)
                rc = ctrl_emit_new_partition(out, img, &r->topic_id, p, &reps[p]);
            for (size_t k = 0; k < t->nconfigs && rc == KP_OK; k++) rc = emit_config(out, t->name, &t->configs[k]);
            /* not built: this topic and (the list is refused whole) the others answer it */
            if (rc != KP_OK) r->error = KP_ERROR_UNKNOWN_SERVER_ERROR;
        }
        if (r->error != KP_ERROR_NONE) {
            r->num_partitions = -1;
            r->replication_factor = -1;
        }
        free(reps);
    }
    free(load);
}

void bk_meta_ctrl_delete_topics(bk_meta_ctrl_t *c, const bk_meta_image_t *img,
                           const bk_meta_ctrl_delete_topic_t *req, size_t n, bk_meta_recs_t *out,
                           bk_meta_ctrl_delete_result_t *res) {
    for (size_t i = 0; i < n; i++) {
        memset(&res[i], 0, sizeof res[i]);
        const bk_meta_topic_t *t = req[i].name ? bk_meta_image_topic_by_name(img, req[i].name)
                                          : bk_meta_image_topic_by_id(img, &req[i].id);
        if (!t) {
            res[i].error = req[i].name ? KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION
                                       : KP_ERROR_UNKNOWN_TOPIC_ID;
            continue;
        }
        res[i].id = t->id;
        bool repeat = false;
        for (size_t j = 0; j < i && !repeat; j++)
            repeat = res[j].error == KP_ERROR_NONE && memcmp(res[j].id.b, t->id.b, BK_META_UUID_BYTES) == 0;
        if (repeat) {
            res[i].error = KP_ERROR_INVALID_REQUEST;
            continue;
        }
        Skiff__Metadata__TopicRemoval m = SKIFF__METADATA__TOPIC_REMOVAL__INIT;
        m.has_topic_id = true;
        m.topic_id.len = BK_META_UUID_BYTES;
        m.topic_id.data = (uint8_t *)t->id.b;
        Skiff__Metadata__MetadataRecord r = SKIFF__METADATA__METADATA_RECORD__INIT;
        r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_TOPIC_REMOVAL;
        r.topic_removal = &m;
        if (bk_meta_recs_add(out, &r) != KP_OK) res[i].error = KP_ERROR_UNKNOWN_SERVER_ERROR;   /* refused whole */
    }
}

static int16_t create_parts_one(bk_meta_ctrl_t *c, const bk_meta_image_t *img,
                                const bk_meta_ctrl_create_partitions_t *q, bool validate_only,
                                ctrl_load_t *load, bk_meta_recs_t *out, char *msg, size_t ml) {
    const bk_meta_topic_t *t = q->name ? bk_meta_image_topic_by_name(img, q->name) : NULL;
    if (!t) {
        snprintf(msg, ml, "This server does not host this topic-partition.");
        return KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
    }
    if (q->count <= t->nparts || q->count > BK_META_CREATE_PARTITIONS_MAX) {
        snprintf(msg, ml, "Topic currently has %d partitions, %d would not be an increase.",
                 (int)t->nparts, (int)q->count);
        return KP_ERROR_INVALID_PARTITIONS;
    }
    assert(q->nassignments == 0 || q->assignments);
    int32_t add = q->count - t->nparts;
    int32_t rf = t->nparts ? t->parts[0].replicas.n - t->parts[0].removing.n : 1;
    if (q->nassignments && q->nassignments != (size_t)add) {
        snprintf(msg, ml, "Increasing the number of partitions by %d but %zu assignments provided.",
                 (int)add, q->nassignments);
        return KP_ERROR_INVALID_REPLICA_ASSIGNMENT;
    }
    bk_meta_ids_t *reps = calloc((size_t)add, sizeof *reps);
    if (!reps) return KP_ERROR_UNKNOWN_SERVER_ERROR;
    int16_t err = KP_ERROR_NONE;
    if (q->nassignments)
        for (int32_t i = 0; i < add && !err; i++)
            err = check_assignment(img, &q->assignments[i], rf, &reps[i], msg, ml);
    else
        err = ctrl_assign(c, img, t->nparts, add, rf, reps, msg, ml);
    if (!err && c->cfg.max_replicas_per_node >= 0) {
        err = load ? ctrl_load_check(c, load, reps, add, msg, ml) : KP_ERROR_UNKNOWN_SERVER_ERROR;
        if (!err) ctrl_load_add(load, reps, add);   /* the request's next topics count these */
    }
    if (!err && !validate_only)
        for (int32_t i = 0; i < add && !err; i++)
            if (ctrl_emit_new_partition(out, img, &t->id, t->nparts + i, &reps[i]) != KP_OK)
                err = KP_ERROR_UNKNOWN_SERVER_ERROR;     /* not built; the list is refused whole */
    free(reps);
    return err;
}

void bk_meta_ctrl_create_partitions(bk_meta_ctrl_t *c, const bk_meta_image_t *img,
                               const bk_meta_ctrl_create_partitions_t *req, size_t n,
                               bool validate_only, bk_meta_recs_t *out, int16_t *errors,
                               char (*msgs)[BK_META_CTRL_MESSAGE_MAX]) {
    /* replicas per broker, grown by each topic's increase (ctrl_limits.c);
     * NULL without a limit, or out of memory (then every increase fails) */
    ctrl_load_t *load = c->cfg.max_replicas_per_node >= 0 ? malloc(sizeof *load) : NULL;
    if (load) ctrl_load_init(load, img);
    for (size_t i = 0; i < n; i++) {
        char scratch[BK_META_CTRL_MESSAGE_MAX];
        char *msg = msgs ? msgs[i] : scratch;
        msg[0] = '\0';
        bool twice = false;
        for (size_t j = 0; j < n && !twice; j++)
            twice = j != i && req[i].name && req[j].name && strcmp(req[i].name, req[j].name) == 0;
        if (twice) {
            errors[i] = KP_ERROR_INVALID_REQUEST;
            snprintf(msg, BK_META_CTRL_MESSAGE_MAX, "Duplicate topic in request.");
            continue;
        }
        errors[i] = create_parts_one(c, img, &req[i], validate_only, load, out, msg, BK_META_CTRL_MESSAGE_MAX);
    }
    free(load);
}
