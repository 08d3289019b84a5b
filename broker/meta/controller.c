/* controller.c — controller soft state and the helpers every decision uses:
 * PRNG, sessions, leader choice, record builders, dropping brokers. */
#include "broker/meta/controller.h"
#include "broker/meta/ctrl_internal.h"

#include <assert.h>
#include <string.h>

#include "protocol/kp_errors.h"

void bk_meta_ctrl_config_defaults(bk_meta_ctrl_config_t *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->num_partitions = 1;
    cfg->default_replication_factor = 1;
    cfg->session_timeout_ms = 9000;
    cfg->unclean_leader_election = false;
    cfg->producer_id_block_size = BK_META_PRODUCER_ID_BLOCK_SIZE;
    cfg->leader_imbalance_pct = 10;
    cfg->max_replicas_per_node = -1;
}

void bk_meta_ctrl_init(bk_meta_ctrl_t *c, const bk_meta_ctrl_config_t *cfg, uint64_t seed) {
    memset(c, 0, sizeof *c);
    c->cfg = *cfg;
    c->rng = seed;
}

/* splitmix64: small, seedable, and good enough to spread start offsets and
 * make UUIDs unique; not a cryptographic source (topic ids are not secrets). */
uint64_t ctrl_rand(bk_meta_ctrl_t *c) {
    uint64_t z = (c->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

bk_meta_uuid_t ctrl_new_topic_id(bk_meta_ctrl_t *c, const bk_meta_image_t *img) {
    bk_meta_uuid_t u;
    /* bounded: a collision with 2^122 random bits is not expected even once */
    for (int tries = 0; tries < 16; tries++) {
        uint64_t a = ctrl_rand(c), b = ctrl_rand(c);
        memcpy(u.b, &a, 8);
        memcpy(u.b + 8, &b, 8);
        u.b[6] = (uint8_t)((u.b[6] & 0x0f) | 0x40);     /* version 4 */
        u.b[8] = (uint8_t)((u.b[8] & 0x3f) | 0x80);     /* RFC 4122 variant */
        if (!bk_meta_uuid_is_zero(&u) && !bk_meta_image_topic_by_id(img, &u)) return u;
    }
    assert(!"topic id generator keeps colliding");
    return u;
}

bk_meta_session_t *ctrl_session(bk_meta_ctrl_t *c, const bk_meta_image_t *img, int32_t broker_id, int64_t now_ms) {
    for (size_t i = 0; i < c->nsessions; i++)
        if (c->sessions[i].broker_id == broker_id) return &c->sessions[i];
    if (c->nsessions == BK_META_BROKERS_MAX) {
        size_t k = 0;
        for (size_t i = 0; i < c->nsessions; i++)
            if (bk_meta_image_broker(img, c->sessions[i].broker_id)) c->sessions[k++] = c->sessions[i];
        c->nsessions = k;
    }
    assert(c->nsessions < BK_META_BROKERS_MAX);
    bk_meta_session_t *s = &c->sessions[c->nsessions++];
    s->broker_id = broker_id;
    s->last_heartbeat_ms = now_ms;
    s->heard = false;
    return s;
}

bool ctrl_alive(const bk_meta_image_t *img, const gone_t *gone, int32_t id) {
    if (gone)
        for (size_t i = 0; i < gone->n; i++)
            if (gone->ids[i] == id) return false;
    return bk_meta_image_broker_usable(img, id);
}

bool ctrl_unclean(const bk_meta_ctrl_t *c, const bk_meta_image_t *img, const bk_meta_topic_t *t) {
    const char *v = bk_meta_image_config(img, BK_META_RESOURCE_TOPIC, t->name,
                                    "unclean.leader.election.enable");
    if (!v) v = bk_meta_image_config(img, BK_META_RESOURCE_BROKER, "", "unclean.leader.election.enable");
    if (!v) return c->cfg.unclean_leader_election;
    return strcmp(v, "true") == 0;
}

int32_t ctrl_elect_from(const bk_meta_image_t *img, const bk_meta_ids_t *replicas, const bk_meta_ids_t *isr,
                        const gone_t *gone, bool unclean, bk_meta_ids_t *isr_out) {
    *isr_out = *isr;
    for (int32_t i = 0; i < replicas->n; i++) {
        int32_t r = replicas->v[i];
        if (bk_meta_ids_has(isr, r) && ctrl_alive(img, gone, r)) return r;
    }
    if (!unclean) return -1;
    for (int32_t i = 0; i < replicas->n; i++) {
        int32_t r = replicas->v[i];
        if (ctrl_alive(img, gone, r)) {
            isr_out->n = 0;
            bk_meta_ids_add(isr_out, r);
            return r;
        }
    }
    return -1;
}

int32_t bk_meta_ctrl_choose_leader(const bk_meta_image_t *img, const bk_meta_partition_t *p, bool unclean,
                              bk_meta_ids_t *isr_out) {
    return ctrl_elect_from(img, &p->replicas, &p->isr, NULL, unclean, isr_out);
}

/* ---- record builders ------------------------------------------------------- */

#define SET_IDS(msg, field, ids) \
    do { (msg)->field = (int32_t *)(ids)->v; (msg)->n_##field = (size_t)(ids)->n; } while (0)

int ctrl_emit_change(bk_meta_recs_t *out, const bk_meta_uuid_t *topic_id, int32_t partition,
                      const pchange_t *ch) {
    Skiff__Metadata__PartitionChange m = SKIFF__METADATA__PARTITION_CHANGE__INIT;
    m.has_topic_id = true;
    m.topic_id.len = BK_META_UUID_BYTES;
    m.topic_id.data = (uint8_t *)topic_id->b;
    m.has_partition_id = true;
    m.partition_id = partition;
    if (ch->has_leader) { m.has_leader = true; m.leader = ch->leader; }
    if (ch->isr) {
        m.has_isr_set = true; m.isr_set = true;
        SET_IDS(&m, isr, ch->isr);
    }
    if (ch->replicas) {
        assert(ch->adding && ch->removing);
        m.has_replicas_set = true; m.replicas_set = true;
        SET_IDS(&m, replicas, ch->replicas);
        SET_IDS(&m, adding_replicas, ch->adding);
        SET_IDS(&m, removing_replicas, ch->removing);
    }
    Skiff__Metadata__MetadataRecord r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_PARTITION_CHANGE;
    r.partition_change = &m;
    return bk_meta_recs_add(out, &r);
}

int ctrl_emit_fence(bk_meta_recs_t *out, const bk_meta_broker_t *b, bool fenced, bool in_shutdown) {
    Skiff__Metadata__BrokerFence m = SKIFF__METADATA__BROKER_FENCE__INIT;
    m.has_broker_id = true; m.broker_id = b->id;
    m.has_broker_epoch = true; m.broker_epoch = b->epoch;
    m.has_fenced = true; m.fenced = fenced;
    m.has_in_controlled_shutdown = true; m.in_controlled_shutdown = in_shutdown;
    Skiff__Metadata__MetadataRecord r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_BROKER_FENCE;
    r.broker_fence = &m;
    return bk_meta_recs_add(out, &r);
}

int ctrl_emit_new_partition(bk_meta_recs_t *out, const bk_meta_image_t *img, const bk_meta_uuid_t *topic_id,
                             int32_t partition, const bk_meta_ids_t *replicas) {
    bk_meta_ids_t isr = { 0 };
    for (int32_t i = 0; i < replicas->n; i++)
        if (bk_meta_image_broker_usable(img, replicas->v[i])) bk_meta_ids_add(&isr, replicas->v[i]);
    Skiff__Metadata__Partition m = SKIFF__METADATA__PARTITION__INIT;
    m.has_topic_id = true;
    m.topic_id.len = BK_META_UUID_BYTES;
    m.topic_id.data = (uint8_t *)topic_id->b;
    m.has_partition_id = true; m.partition_id = partition;
    SET_IDS(&m, replicas, replicas);
    SET_IDS(&m, isr, &isr);
    m.has_leader = true; m.leader = isr.n ? isr.v[0] : -1;
    m.has_leader_epoch = true; m.leader_epoch = 0;
    m.has_partition_epoch = true; m.partition_epoch = 0;
    Skiff__Metadata__MetadataRecord r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_PARTITION;
    r.partition = &m;
    return bk_meta_recs_add(out, &r);
}

/* ---- dropping brokers ------------------------------------------------------
 * Cost O(partitions x replicas x gone): a fence is rare and the partition walk
 * dominates; an index from broker to partitions would make it O(affected) but
 * must be kept in step with every apply, which is not worth it yet. */

static bool in_gone(const gone_t *gone, int32_t id) {
    for (size_t i = 0; i < gone->n; i++)
        if (gone->ids[i] == id) return true;
    return false;
}

static bool drop_one(const bk_meta_ctrl_t *c, const bk_meta_image_t *img, const bk_meta_topic_t *t,
                     const bk_meta_partition_t *p, const gone_t *gone, bk_meta_recs_t *out) {
    bk_meta_ids_t isr = p->isr;
    for (int32_t i = 0; i < p->isr.n; i++) {
        int32_t b = p->isr.v[i];
        if (in_gone(gone, b) && isr.n > 1) bk_meta_ids_remove(&isr, b);
    }
    int32_t leader = p->leader;
    bk_meta_ids_t isr2 = isr;
    if (leader == -1 || in_gone(gone, leader))
        leader = ctrl_elect_from(img, &p->replicas, &isr, gone, ctrl_unclean(c, img, t), &isr2);
    if (leader == p->leader && bk_meta_ids_equal(&isr2, &p->isr)) return false;
    /* a leaderless partition keeps its last ISR member so that it can come
     * back as leader without data loss */
    pchange_t ch = { .has_leader = leader != p->leader, .leader = leader, .isr = &isr2 };
    return ctrl_emit_change(out, &t->id, p->id, &ch) == KP_OK;   /* failed: out->err says so */
}

size_t ctrl_drop_brokers(const bk_meta_ctrl_t *c, const bk_meta_image_t *img, const gone_t *gone,
                         bk_meta_recs_t *out) {
    size_t changed = 0;
    for (size_t i = 0; i < img->ntopics; i++) {
        const bk_meta_topic_t *t = img->by_name[i];
        for (int32_t j = 0; j < t->nparts; j++) {
            const bk_meta_partition_t *p = &t->parts[j];
            bool touches = in_gone(gone, p->leader);
            for (int32_t k = 0; !touches && k < p->isr.n; k++) touches = in_gone(gone, p->isr.v[k]);
            if (touches && drop_one(c, img, t, p, gone, out)) changed++;
            if (out->err != KP_OK) return changed;     /* a failed add: the list is refused whole */
        }
    }
    return changed;
}
