/* group_cg_records.c — the consumer groups' records in __consumer_offsets,
 * Kafka's ConsumerGroup* types (key = INT16 type + key, value = INT16
 * version 0 + value, null value = tombstone):
 *   3 ConsumerGroupMetadata          group epoch
 *   4 ConsumerGroupPartitionMetadata subscribed topics (id, name, partitions)
 *   5 ConsumerGroupMemberMetadata    a member's subscription and identity
 *   6 ConsumerGroupTargetAssignmentMetadata  assignment epoch
 *   7 ConsumerGroupTargetAssignmentMember    a member's target
 *   8 ConsumerGroupCurrentMemberAssignment   a member's epochs, state,
 *                                     assigned and pending-revocation partitions
 * A replay rebuilds every group exactly: epochs, targets, current
 * assignments (sessions restart at load). Loading is strict: a record that
 * does not decode fails the partition's load, like the classic records. */
#include "broker/group/group_cg_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "kp_msgs.h"

/* Partitions of one topic out of a sorted set, as the records' and
 * answers' (TopicId, Partitions[]) lists; T is the generated struct type. */
#define FILL_TPS(T, arr, set, arena, okvar)                                                       \
    do {                                                                                          \
        size_t nt_ = 0;                                                                           \
        for (size_t i_ = 0; i_ < (set)->n; i_++)                                                  \
            if (i_ == 0 || memcmp((set)->v[i_].topic.b, (set)->v[i_ - 1].topic.b, 16) != 0) nt_++; \
        T *t_ = kp_arena_alloc((arena), (nt_ ? nt_ : 1) * sizeof(T));                             \
        int32_t *p_ = kp_arena_alloc((arena), ((set)->n ? (set)->n : 1) * sizeof(int32_t));       \
        (okvar) = t_ && p_;                                                                       \
        if (!(okvar)) break;                                                                      \
        size_t k_ = 0;                                                                            \
        for (size_t i_ = 0; i_ < (set)->n; i_++) {                                                \
            if (i_ == 0 || memcmp((set)->v[i_].topic.b, (set)->v[i_ - 1].topic.b, 16) != 0) {     \
                memset(&t_[k_], 0, sizeof(T));                                                    \
                t_[k_].topic_id = (set)->v[i_].topic;                                             \
                t_[k_].partitions.items = &p_[i_];                                                \
                k_++;                                                                             \
            }                                                                                     \
            p_[i_] = (set)->v[i_].partition;                                                      \
            t_[k_ - 1].partitions.count++;                                                        \
        }                                                                                         \
        (arr).items = t_;                                                                         \
        (arr).count = (int32_t)nt_;                                                               \
    } while (0)

/* Types 3, 4 and 6 share one key layout (GroupId), 5, 7 and 8 another
 * (GroupId, MemberId); each schema is valid at its own type only. */
static const kp_struct_desc_t *group_key_desc(int16_t type) {
    return type == BK_GRP_KEY_CG_METADATA     ? &kp_consumer_group_metadata_key_desc
           : type == BK_GRP_KEY_CG_PARTITIONS ? &kp_consumer_group_partition_metadata_key_desc
                                              : &kp_consumer_group_target_assignment_metadata_key_desc;
}

static const kp_struct_desc_t *member_key_desc(int16_t type) {
    return type == BK_GRP_KEY_CG_MEMBER   ? &kp_consumer_group_member_metadata_key_desc
           : type == BK_GRP_KEY_CG_TARGET ? &kp_consumer_group_target_assignment_member_key_desc
                                          : &kp_consumer_group_current_member_assignment_key_desc;
}

static kp_bytes_t key_group(bk_grp_out_t *o, int16_t type, kp_str_t gid) {
    kp_consumer_group_metadata_key_t k;
    kp_consumer_group_metadata_key_init(&k);
    k.group_id = gid;
    return grp_rec_encode(o, group_key_desc(type), type, &k);
}

static kp_bytes_t key_member(bk_grp_out_t *o, int16_t type, kp_str_t gid, kp_str_t mid) {
    kp_consumer_group_member_metadata_key_t k;
    kp_consumer_group_member_metadata_key_init(&k);
    k.group_id = gid;
    k.member_id = mid;
    return grp_rec_encode(o, member_key_desc(type), type, &k);
}

void cg_rec_epoch(bk_grp_out_t *o, kp_str_t gid, const bk_grp_cg_t *cg) {
    kp_consumer_group_metadata_value_t v;
    kp_consumer_group_metadata_value_init(&v);
    v.epoch = cg->epoch;
    grp_rec_add(o, key_group(o, BK_GRP_KEY_CG_METADATA, gid), grp_rec_encode(o, &kp_consumer_group_metadata_value_desc, 0, &v));
}

void cg_rec_partitions(bk_grp_out_t *o, kp_str_t gid, const bk_grp_cg_topics_t *topics, const cg_subs_t *subs) {
    kp_consumer_group_partition_metadata_value_t v;
    kp_consumer_group_partition_metadata_value_init(&v);
    typedef kp_consumer_group_partition_metadata_value_topic_metadata_t tm_t;
    tm_t *ts = kp_arena_alloc(&o->arena, (topics->n ? topics->n : 1) * sizeof *ts);
    if (!ts) { o->err = KP_ERR_NOMEM; return; }
    size_t n = 0;
    for (size_t i = 0; i < topics->n; i++) {
        if (!subs->any[i]) continue;
        kp_consumer_group_partition_metadata_value_topic_metadata_init(&ts[n]);
        ts[n].topic_id = topics->v[i].id;
        ts[n].topic_name = topics->v[i].name;
        ts[n].num_partitions = topics->v[i].nparts;
        n++;
    }
    v.topics.items = ts;
    v.topics.count = (int32_t)n;
    grp_rec_add(o, key_group(o, BK_GRP_KEY_CG_PARTITIONS, gid),
                grp_rec_encode(o, &kp_consumer_group_partition_metadata_value_desc, 0, &v));
}

void cg_rec_member(bk_grp_out_t *o, kp_str_t gid, const bk_grp_cg_member_t *m) {
    kp_consumer_group_member_metadata_value_t v;
    kp_consumer_group_member_metadata_value_init(&v);
    v.instance_id = gs_slice(&m->instance_id);
    v.rack_id = gs_slice(&m->rack_id);
    v.client_id = m->client_id.p ? gs_slice(&m->client_id) : kp_slice_cstr("");
    v.client_host = m->client_host.p ? gs_slice(&m->client_host) : kp_slice_cstr("");
    kp_str_t *names = kp_arena_alloc(&o->arena, (m->ntopics ? m->ntopics : 1) * sizeof *names);
    if (!names) { o->err = KP_ERR_NOMEM; return; }
    for (size_t i = 0; i < m->ntopics; i++) names[i] = gs_slice(&m->topics[i]);
    v.subscribed_topic_names.items = names;
    v.subscribed_topic_names.count = (int32_t)m->ntopics;
    v.subscribed_topic_regex = gs_slice(&m->regex);
    v.rebalance_timeout_ms = m->rebalance_timeout_ms;
    v.server_assignor = gs_slice(&m->assignor);
    grp_rec_add(o, key_member(o, BK_GRP_KEY_CG_MEMBER, gid, gs_slice(&m->member_id)),
                grp_rec_encode(o, &kp_consumer_group_member_metadata_value_desc, 0, &v));
}

void cg_rec_target(bk_grp_out_t *o, kp_str_t gid, const bk_grp_cg_t *cg) {
    for (size_t i = 0; i < cg->nmembers; i++) {
        const bk_grp_cg_member_t *m = &cg->members[i];
        kp_consumer_group_target_assignment_member_value_t v;
        kp_consumer_group_target_assignment_member_value_init(&v);
        bool ok = false;
        FILL_TPS(kp_consumer_group_target_assignment_member_value_topic_partition_t, v.topic_partitions, &m->target,
                 &o->arena, ok);
        if (!ok) { o->err = KP_ERR_NOMEM; return; }
        grp_rec_add(o, key_member(o, BK_GRP_KEY_CG_TARGET, gid, gs_slice(&m->member_id)),
                    grp_rec_encode(o, &kp_consumer_group_target_assignment_member_value_desc, 0, &v));
    }
    kp_consumer_group_target_assignment_metadata_value_t v;
    kp_consumer_group_target_assignment_metadata_value_init(&v);
    v.assignment_epoch = cg->assignment_epoch;
    grp_rec_add(o, key_group(o, BK_GRP_KEY_CG_TARGET_META, gid),
                grp_rec_encode(o, &kp_consumer_group_target_assignment_metadata_value_desc, 0, &v));
}

void cg_rec_current(bk_grp_out_t *o, kp_str_t gid, const bk_grp_cg_member_t *m) {
    kp_consumer_group_current_member_assignment_value_t v;
    kp_consumer_group_current_member_assignment_value_init(&v);
    v.member_epoch = m->epoch;
    v.previous_member_epoch = m->prev_epoch;
    v.state = m->state;
    bool ok = false;
    FILL_TPS(kp_consumer_group_current_member_assignment_value_topic_partitions_t, v.assigned_partitions, &m->assigned,
             &o->arena, ok);
    if (ok)
        FILL_TPS(kp_consumer_group_current_member_assignment_value_topic_partitions_t, v.partitions_pending_revocation,
                 &m->revoking, &o->arena, ok);
    if (!ok) { o->err = KP_ERR_NOMEM; return; }
    grp_rec_add(o, key_member(o, BK_GRP_KEY_CG_CURRENT, gid, gs_slice(&m->member_id)),
                grp_rec_encode(o, &kp_consumer_group_current_member_assignment_value_desc, 0, &v));
}

/* Kafka's order: current assignment, target, then the member. */
void cg_rec_member_tombstones(bk_grp_out_t *o, kp_str_t gid, kp_str_t mid) {
    grp_rec_add(o, key_member(o, BK_GRP_KEY_CG_CURRENT, gid, mid), kp_slice_null());
    grp_rec_add(o, key_member(o, BK_GRP_KEY_CG_TARGET, gid, mid), kp_slice_null());
    grp_rec_add(o, key_member(o, BK_GRP_KEY_CG_MEMBER, gid, mid), kp_slice_null());
}

void cg_rec_group_tombstones(bk_grp_out_t *o, kp_str_t gid) {
    grp_rec_add(o, key_group(o, BK_GRP_KEY_CG_TARGET_META, gid), kp_slice_null());
    grp_rec_add(o, key_group(o, BK_GRP_KEY_CG_PARTITIONS, gid), kp_slice_null());
    grp_rec_add(o, key_group(o, BK_GRP_KEY_CG_METADATA, gid), kp_slice_null());
}

/* ---- loading ------------------------------------------------------------------ */

static bk_grp_t *load_group(bk_grp_coord_t *c, kp_str_t gid, bool create) {
    bk_grp_t *g = grp_get(c, gid);
    /* a classic group with members is tombstoned before it becomes a
     * consumer group: without that the log is not one we wrote */
    if (g && !g->cg && g->nmembers > 0) return NULL;
    if (!g && create) g = grp_create(c, gid, 0);
    if (!g) return NULL;
    if (!g->cg && create) {
        /* a classic group's records before these belong to a group that
         * became a consumer group (the classic tombstone came first) */
        g->cg = grp_xalloc(sizeof *g->cg);
        g->cg->topics_gen = -1;
    }
    return g->cg ? g : NULL;
}

/* Why load_group(c, gid, true) found no consumer group: a classic group
 * with members holds the id (KP_ERR_BAD_VALUE: a log we did not write —
 * a consumer group's records follow the classic group's tombstone), else
 * the group table is full (KP_ERR_TOO_LARGE). */
static int load_group_error(bk_grp_coord_t *c, kp_str_t gid) {
    const bk_grp_t *g = grp_get(c, gid);
    return g && !g->cg ? KP_ERR_BAD_VALUE : KP_ERR_TOO_LARGE;
}

static bk_grp_cg_member_t *load_member(bk_grp_t *g, kp_str_t mid, bool create) {
    bk_grp_cg_t *cg = g->cg;
    ptrdiff_t i = cg_member_idx(cg, mid);
    if (i >= 0) return &cg->members[i];
    if (!create) return NULL;
    if (cg->nmembers >= BK_GRP_MEMBERS_MAX) return NULL;
    grp_reserve((void **)&cg->members, &cg->members_cap, cg->nmembers + 1, sizeof *cg->members);
    bk_grp_cg_member_t *m = &cg->members[cg->nmembers++];
    memset(m, 0, sizeof *m);
    gs_set(&m->member_id, mid);
    /* as its metadata record would say them (never null there) */
    gs_set(&m->client_id, kp_slice_cstr(""));
    gs_set(&m->client_host, kp_slice_cstr(""));
    m->rebalance_timeout_ms = -1;
    return m;
}

/* The (TopicId, Partitions[]) lists of a record as a set; T the generated type. */
#define LOAD_TPS(arr, set, okvar)                                                               \
    do {                                                                                        \
        size_t n_ = 0;                                                                          \
        (okvar) = (arr).count >= 0;                                                             \
        for (int32_t i_ = 0; (okvar) && i_ < (arr).count; i_++) {                               \
            if ((arr).items[i_].partitions.count < 0) (okvar) = false;                          \
            else n_ += (size_t)(arr).items[i_].partitions.count;                                \
        }                                                                                       \
        if (!(okvar) || n_ > BK_GRP_CG_PARTS_MAX) { (okvar) = false; break; }                   \
        bk_grp_cg_tp_t *v_ = grp_xalloc((n_ ? n_ : 1) * sizeof *v_);                            \
        size_t k_ = 0;                                                                          \
        for (int32_t i_ = 0; i_ < (arr).count; i_++)                                            \
            for (int32_t j_ = 0; j_ < (arr).items[i_].partitions.count; j_++) {                 \
                v_[k_].topic = (arr).items[i_].topic_id;                                        \
                v_[k_++].partition = (arr).items[i_].partitions.items[j_];                      \
            }                                                                                   \
        cg_tps_set((set), v_, k_);                                                              \
        free(v_);                                                                               \
    } while (0)

static int load_member_meta(bk_grp_coord_t *c, kp_str_t gid, kp_str_t mid, kp_bytes_t value, kp_arena_t *a) {
    if (!value.p) {
        bk_grp_t *g = load_group(c, gid, false);
        ptrdiff_t i = g ? cg_member_idx(g->cg, mid) : -1;
        if (i >= 0) {
            cg_member_free(&g->cg->members[i]);
            memmove(&g->cg->members[i], &g->cg->members[i + 1], (g->cg->nmembers - (size_t)i - 1) * sizeof *g->cg->members);
            g->cg->nmembers--;
        }
        return KP_OK;
    }
    kp_consumer_group_member_metadata_value_t v;
    int16_t ver;
    int st = grp_rec_decode(value, &kp_consumer_group_member_metadata_value_desc, &ver, &v, a);
    if (st != KP_OK) return st;
    if (v.subscribed_topic_names.count < 0 || v.subscribed_topic_names.count > BK_GRP_CG_TOPICS_MAX) return KP_ERR_BAD_VALUE;
    bk_grp_t *g = load_group(c, gid, true);
    if (!g) return load_group_error(c, gid);
    bk_grp_cg_member_t *m = load_member(g, mid, true);
    if (!m) return KP_ERR_TOO_LARGE;
    gs_set(&m->instance_id, v.instance_id);
    gs_set(&m->rack_id, v.rack_id);
    gs_set(&m->client_id, v.client_id);
    gs_set(&m->client_host, v.client_host);
    for (size_t i = 0; i < m->ntopics; i++) gs_free(&m->topics[i]);
    free(m->topics);
    m->ntopics = (size_t)v.subscribed_topic_names.count;
    m->topics = grp_xalloc((m->ntopics ? m->ntopics : 1) * sizeof *m->topics);
    for (size_t i = 0; i < m->ntopics; i++) {
        kp_str_t t = v.subscribed_topic_names.items[i];
        gs_set(&m->topics[i], t.p ? t : kp_slice_cstr(""));
    }
    gs_set(&m->regex, v.subscribed_topic_regex.len ? v.subscribed_topic_regex : kp_slice_null());
    /* a regex that no longer compiles here subscribes to nothing (it was
     * accepted when written; the log must still load) */
    if (cg_member_compile(m) != KP_OK) gs_free(&m->regex);
    m->rebalance_timeout_ms = v.rebalance_timeout_ms;
    gs_set(&m->assignor, v.server_assignor);
    return KP_OK;
}

/* A record that fails to load changes nothing (decode and check first,
 * then create what it names), like the classic records. */
static int load_current(bk_grp_coord_t *c, kp_str_t gid, kp_str_t mid, kp_bytes_t value, kp_arena_t *a) {
    if (!value.p) {
        bk_grp_t *g = load_group(c, gid, false);
        bk_grp_cg_member_t *m = g ? load_member(g, mid, false) : NULL;
        if (m) { cg_tps_free(&m->assigned); cg_tps_free(&m->revoking); m->epoch = 0; }
        return KP_OK;
    }
    kp_consumer_group_current_member_assignment_value_t v;
    int16_t ver;
    int st = grp_rec_decode(value, &kp_consumer_group_current_member_assignment_value_desc, &ver, &v, a);
    if (st != KP_OK) return st;
    if (v.state < BK_GRP_CG_STABLE || v.state > BK_GRP_CG_UNRELEASED) return KP_ERR_BAD_VALUE;
    bk_grp_cg_tps_t assigned = { NULL, 0 }, revoking = { NULL, 0 };
    bool ok = false;
    LOAD_TPS(v.assigned_partitions, &assigned, ok);
    if (ok) LOAD_TPS(v.partitions_pending_revocation, &revoking, ok);
    bk_grp_t *g = ok ? load_group(c, gid, true) : NULL;
    bk_grp_cg_member_t *m = g ? load_member(g, mid, true) : NULL;
    if (!m) {
        cg_tps_free(&assigned);
        cg_tps_free(&revoking);
        return !ok ? KP_ERR_BAD_VALUE : !g ? load_group_error(c, gid) : KP_ERR_TOO_LARGE;
    }
    cg_tps_free(&m->assigned);
    cg_tps_free(&m->revoking);
    m->assigned = assigned;
    m->revoking = revoking;
    m->epoch = v.member_epoch;
    m->prev_epoch = v.previous_member_epoch;
    m->state = v.state;
    return KP_OK;
}

static int load_target(bk_grp_coord_t *c, kp_str_t gid, kp_str_t mid, kp_bytes_t value, kp_arena_t *a) {
    if (!value.p) {
        bk_grp_t *g = load_group(c, gid, false);
        bk_grp_cg_member_t *m = g ? load_member(g, mid, false) : NULL;
        if (m) cg_tps_free(&m->target);
        return KP_OK;
    }
    kp_consumer_group_target_assignment_member_value_t v;
    int16_t ver;
    int st = grp_rec_decode(value, &kp_consumer_group_target_assignment_member_value_desc, &ver, &v, a);
    if (st != KP_OK) return st;
    bk_grp_cg_tps_t target = { NULL, 0 };
    bool ok = false;
    LOAD_TPS(v.topic_partitions, &target, ok);
    bk_grp_t *g = ok ? load_group(c, gid, true) : NULL;
    bk_grp_cg_member_t *m = g ? load_member(g, mid, true) : NULL;
    if (!m) {
        cg_tps_free(&target);
        return !ok ? KP_ERR_BAD_VALUE : !g ? load_group_error(c, gid) : KP_ERR_TOO_LARGE;
    }
    cg_tps_free(&m->target);
    m->target = target;
    return KP_OK;
}

/* Group-level records: epoch (3), subscribed metadata (4), target epoch (6).
 * The tombstone of 3 ends the consumer group (Kafka writes it last). */
static int load_group_rec(bk_grp_coord_t *c, int16_t type, kp_str_t gid, kp_bytes_t value, kp_arena_t *a) {
    if (!value.p) {
        bk_grp_t *g = load_group(c, gid, false);
        if (g && type == BK_GRP_KEY_CG_METADATA) {
            cg_free(g);
            if (g->noffsets == 0 && g->nmembers == 0 && !g->protocol_type.p) grp_destroy(c, g);
        }
        return KP_OK;
    }
    int16_t ver;
    int st;
    int32_t epoch = 0;
    uint64_t h = 1469598103934665603ULL;
    if (type == BK_GRP_KEY_CG_METADATA) {
        kp_consumer_group_metadata_value_t v;
        st = grp_rec_decode(value, &kp_consumer_group_metadata_value_desc, &ver, &v, a);
        epoch = v.epoch;
    } else if (type == BK_GRP_KEY_CG_TARGET_META) {
        kp_consumer_group_target_assignment_metadata_value_t v;
        st = grp_rec_decode(value, &kp_consumer_group_target_assignment_metadata_value_desc, &ver, &v, a);
        epoch = v.assignment_epoch;
    } else {
        /* the subscribed topics' metadata of the last epoch: the hash that
         * tells a later look whether they changed meanwhile (cg_sub_hash) */
        kp_consumer_group_partition_metadata_value_t v;
        st = grp_rec_decode(value, &kp_consumer_group_partition_metadata_value_desc, &ver, &v, a);
        if (st == KP_OK && v.topics.count < 0) st = KP_ERR_BAD_VALUE;
#define MIX(p, n)                                                          \
    for (size_t q_ = 0; q_ < (n); q_++) { h ^= ((const uint8_t *)(p))[q_]; h *= 1099511628211ULL; }
        for (int32_t i = 0; st == KP_OK && i < v.topics.count; i++) {
            const kp_consumer_group_partition_metadata_value_topic_metadata_t *t = &v.topics.items[i];
            MIX(t->topic_name.p, t->topic_name.len);
            MIX(t->topic_id.b, sizeof t->topic_id.b);
            MIX(&t->num_partitions, sizeof t->num_partitions);
        }
#undef MIX
    }
    if (st != KP_OK) return st;
    bk_grp_t *g = load_group(c, gid, true);
    if (!g) return load_group_error(c, gid);
    if (type == BK_GRP_KEY_CG_METADATA) g->cg->epoch = epoch;
    else if (type == BK_GRP_KEY_CG_TARGET_META) g->cg->assignment_epoch = epoch;
    else { g->cg->sub_hash = h; g->cg->hash_known = true; }
    return KP_OK;
}

int bk_grp_cg_load_record(bk_grp_coord_t *c, int16_t type, kp_bytes_t key, kp_bytes_t value) {
    assert(c->loading);
    kp_arena_t a;
    kp_arena_init(&a, 4096 + (key.len + value.len) * 16);
    int16_t kv;
    int st;
    if (type == BK_GRP_KEY_CG_METADATA || type == BK_GRP_KEY_CG_PARTITIONS || type == BK_GRP_KEY_CG_TARGET_META) {
        kp_consumer_group_metadata_key_t k;
        st = grp_rec_decode(key, group_key_desc(type), &kv, &k, &a);
        if (st == KP_OK) st = load_group_rec(c, type, k.group_id, value, &a);
    } else {
        kp_consumer_group_member_metadata_key_t k;
        st = grp_rec_decode(key, member_key_desc(type), &kv, &k, &a);
        if (st == KP_OK) {
            if (type == BK_GRP_KEY_CG_MEMBER) st = load_member_meta(c, k.group_id, k.member_id, value, &a);
            else if (type == BK_GRP_KEY_CG_TARGET) st = load_target(c, k.group_id, k.member_id, value, &a);
            else st = load_current(c, k.group_id, k.member_id, value, &a);
        }
    }
    kp_arena_free(&a);
    return st;
}
