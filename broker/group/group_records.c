/* group_records.c — the coordinator's records in __consumer_offsets, in
 * Kafka's format (CoordinatorRecordSerde): key = INT16 record type (which is
 * also the key's version) + key message; value = INT16 value version + value
 * message; a null value is a tombstone. Types: 0/1 OffsetCommit, 2
 * GroupMetadata, 3-8 the KIP-848 consumer groups' (group_cg_records.c);
 * newer types (share groups, ...) are skipped. */
#include "broker/group/group_int.h"
#include "broker/group/group_cg.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "kp_msgs.h"

/* Version prefix + message into out's arena. Fails (sticky out->err) for a
 * field the format cannot hold (e.g. a string over 32767 bytes). */
static kp_bytes_t encode(bk_grp_out_t *out, const kp_struct_desc_t *d, int16_t version,
                         const void *msg) {
    kp_bytes_t r = kp_slice_cstr("");
    size_t n = 0;
    int st = kp_encoded_size(d, version, msg, &n);
    uint8_t *buf = st == KP_OK ? kp_arena_alloc(&out->arena, n + 2) : NULL;
    if (st == KP_OK && !buf) st = KP_ERR_NOMEM;
    if (st != KP_OK) { out->err = out->err ? out->err : st; return r; }
    kp_wr_t w;
    kp_wr_init(&w, buf, n + 2);
    st = kp_wr_i16(&w, version);
    if (st == KP_OK) st = kp_encode(d, &w, version, msg, NULL);
    assert(st != KP_OK || w.pos == n + 2);
    if (st != KP_OK) { out->err = out->err ? out->err : st; return r; }
    r.p = buf;
    r.len = n + 2;
    return r;
}

static void add_rec(bk_grp_out_t *o, kp_bytes_t key, kp_bytes_t value) {
    grp_reserve((void **)&o->recs, &o->recs_cap, o->nrecs + 1, sizeof *o->recs);
    o->recs[o->nrecs].key = key;
    o->recs[o->nrecs].value = value;
    o->nrecs++;
}

static kp_bytes_t group_key(bk_grp_out_t *o, kp_str_t group_id) {
    kp_group_metadata_key_t k;
    kp_group_metadata_key_init(&k);
    k.group = group_id;
    return encode(o, &kp_group_metadata_key_desc, BK_GRP_KEY_GROUP, &k);
}

static kp_bytes_t offset_key(bk_grp_out_t *o, kp_str_t group_id, kp_str_t topic, int32_t part) {
    kp_offset_commit_key_t k;
    kp_offset_commit_key_init(&k);
    k.group = group_id;
    k.topic = topic;
    k.partition = part;
    return encode(o, &kp_offset_commit_key_desc, BK_GRP_KEY_OFFSET, &k);
}

void rec_group(bk_grp_out_t *o, const bk_grp_t *g) {
    kp_group_metadata_value_t v;
    kp_group_metadata_value_init(&v);
    v.protocol_type = g->protocol_type.p ? gs_slice(&g->protocol_type) : kp_slice_cstr("");
    v.generation = g->generation;
    v.protocol = gs_slice(&g->protocol);
    v.leader = gs_slice(&g->leader);
    v.current_state_timestamp = g->state_ts_ms;
    size_t n = g->nmembers;
    v.members.items = kp_arena_alloc(&o->arena, (n ? n : 1) * sizeof *v.members.items);
    if (!v.members.items) { o->err = KP_ERR_NOMEM; return; }
    v.members.count = (int32_t)n;
    for (size_t i = 0; i < n; i++) {
        const bk_grp_member_t *m = &g->members[i];
        kp_group_metadata_value_member_metadata_t *x = &v.members.items[i];
        kp_group_metadata_value_member_metadata_init(x);
        x->member_id = gs_slice(&m->member_id);
        x->group_instance_id = gs_slice(&m->instance_id);
        x->client_id = gs_slice(&m->client_id);
        x->client_host = gs_slice(&m->client_host);
        x->rebalance_timeout = m->rebalance_timeout_ms;
        x->session_timeout = m->session_timeout_ms;
        x->subscription = bk_grp_member_metadata(g, m);
        x->assignment = gs_slice(&m->assignment);
    }
    kp_bytes_t key = group_key(o, gs_slice(&g->id));
    add_rec(o, key, encode(o, &kp_group_metadata_value_desc, BK_GRP_VALUE_GROUP_VERSION, &v));
}

void rec_group_tombstone(bk_grp_out_t *o, kp_str_t group_id) {
    add_rec(o, group_key(o, group_id), kp_slice_null());
}

/* Kafka writes value version 1 when the commit carries an expire time
 * (OffsetCommit v2-4 retention), else version 3. */
void rec_offset(bk_grp_out_t *o, kp_str_t group_id, const bk_grp_offset_t *off) {
    kp_offset_commit_value_t v;
    kp_offset_commit_value_init(&v);
    v.offset = off->offset;
    v.leader_epoch = off->leader_epoch;
    v.metadata = gs_slice(&off->metadata);
    v.commit_timestamp = off->commit_ts_ms;
    v.expire_timestamp = off->expire_ts_ms;
    int16_t version = off->expire_ts_ms >= 0 ? 1 : 3;
    kp_bytes_t key = offset_key(o, group_id, gs_slice(&off->topic), off->partition);
    add_rec(o, key, encode(o, &kp_offset_commit_value_desc, version, &v));
}

void rec_offset_tombstone(bk_grp_out_t *o, kp_str_t group_id, kp_str_t topic, int32_t partition) {
    add_rec(o, offset_key(o, group_id, topic, partition), kp_slice_null());
}

/* ---- loading -------------------------------------------------------------------- */

/* Reads the INT16 prefix and the message; the whole buffer must be used. */
static int decode(kp_bytes_t b, const kp_struct_desc_t *d, int16_t *version, void *msg,
                  kp_arena_t *a) {
    kp_rd_t r;
    kp_rd_init(&r, b.p, b.len);
    int st = kp_rd_i16(&r, version);
    if (st != KP_OK) return st;
    st = kp_decode(d, &r, *version, msg, a);
    if (st != KP_OK) return st;
    return kp_rd_remaining(&r) == 0 ? KP_OK : KP_ERR_BAD_LENGTH;
}

kp_bytes_t grp_rec_encode(bk_grp_out_t *out, const kp_struct_desc_t *d, int16_t version, const void *msg) {
    return encode(out, d, version, msg);
}

int grp_rec_decode(kp_bytes_t in, const kp_struct_desc_t *d, int16_t *version, void *msg, kp_arena_t *a) {
    return decode(in, d, version, msg, a);
}

void grp_rec_add(bk_grp_out_t *o, kp_bytes_t key, kp_bytes_t value) { add_rec(o, key, value); }

/* A group that only holds what a GroupMetadata tombstone or offset
 * tombstones left behind is forgotten (a consumer group's own records
 * decide for it). */
static void drop_if_bare(bk_grp_coord_t *c, bk_grp_t *g) {
    if (!g->cg && g->nmembers == 0 && g->noffsets == 0 && !g->protocol_type.p && g->generation == 0)
        grp_destroy(c, g);
}

static void clear_meta(bk_grp_t *g) {
    for (size_t i = 0; i < g->nmembers; i++) grp_member_free(&g->members[i]);
    g->nmembers = 0;
    gs_free(&g->protocol_type);
    gs_free(&g->protocol);
    gs_free(&g->leader);
    g->generation = 0;
}

static int check_group_value(const kp_group_metadata_value_t *v) {
    if (v->members.count < 0) return KP_ERR_BAD_VALUE;
    if (v->members.count > BK_GRP_MEMBERS_MAX) return KP_ERR_TOO_LARGE;
    if (v->members.count > 0 && (!v->protocol.p || !v->leader.p)) return KP_ERR_BAD_VALUE;
    if (v->generation < 0) return KP_ERR_BAD_VALUE;
    bool leader_found = v->members.count == 0;
    for (int32_t i = 0; i < v->members.count; i++) {
        kp_str_t id = v->members.items[i].member_id;
        if (kp_slice_eq(id, v->leader)) leader_found = true;
        for (int32_t j = 0; j < i; j++)
            if (kp_slice_eq(id, v->members.items[j].member_id)) return KP_ERR_BAD_VALUE;
    }
    return leader_found ? KP_OK : KP_ERR_BAD_VALUE;
}

static int load_group(bk_grp_coord_t *c, kp_str_t id, kp_bytes_t value, kp_arena_t *a) {
    bk_grp_t *g = grp_get(c, id);
    if (!value.p) {
        if (g) { clear_meta(g); drop_if_bare(c, g); }
        return KP_OK;
    }
    kp_group_metadata_value_t v;
    int16_t version;
    int st = decode(value, &kp_group_metadata_value_desc, &version, &v, a);
    if (st == KP_OK) st = check_group_value(&v);
    if (st != KP_OK) return st;
    /* a consumer group that became classic (migration) wrote tombstones of
     * its records first; a classic record is never older than them */
    if (g && g->cg) cg_free(g);
    if (!g && !(g = grp_create(c, id, v.current_state_timestamp))) return KP_ERR_TOO_LARGE;
    clear_meta(g);
    /* Kafka writes "" for a group without a protocol: that is our null */
    if (v.protocol_type.len > 0) gs_set(&g->protocol_type, v.protocol_type);
    gs_set(&g->protocol, v.protocol);
    gs_set(&g->leader, v.leader);
    g->generation = v.generation;
    g->state_ts_ms = v.current_state_timestamp;
    grp_reserve((void **)&g->members, &g->members_cap, (size_t)v.members.count, sizeof *g->members);
    for (int32_t i = 0; i < v.members.count; i++) {
        const kp_group_metadata_value_member_metadata_t *x = &v.members.items[i];
        bk_grp_member_t *m = &g->members[g->nmembers++];
        memset(m, 0, sizeof *m);
        gs_set(&m->member_id, x->member_id);
        gs_set(&m->instance_id, x->group_instance_id);
        gs_set(&m->client_id, x->client_id);
        gs_set(&m->client_host, x->client_host);
        m->session_timeout_ms = x->session_timeout;
        m->rebalance_timeout_ms = x->rebalance_timeout >= 0 ? x->rebalance_timeout
                                                             : x->session_timeout;
        m->protocols = grp_xalloc(sizeof *m->protocols);
        m->nprotocols = 1;
        gs_set(&m->protocols[0].name, v.protocol);
        gs_set(&m->protocols[0].metadata, x->subscription.p ? x->subscription : kp_slice_cstr(""));
        gs_set(&m->assignment, x->assignment.p ? x->assignment : kp_slice_cstr(""));
    }
    return KP_OK;
}

static int load_offset(bk_grp_coord_t *c, const kp_offset_commit_key_t *k, kp_bytes_t value,
                       kp_arena_t *a) {
    bk_grp_t *g = grp_get(c, k->group);
    size_t ins = 0;
    ptrdiff_t i = g ? grp_offset_idx(g, k->topic, k->partition, &ins) : -1;
    if (!value.p) {
        if (i >= 0) { grp_offset_del(g, (size_t)i); drop_if_bare(c, g); }
        return KP_OK;
    }
    kp_offset_commit_value_t v;
    int16_t version;
    int st = decode(value, &kp_offset_commit_value_desc, &version, &v, a);
    if (st != KP_OK) return st;
    if (!g && !(g = grp_create(c, k->group, v.commit_timestamp))) return KP_ERR_TOO_LARGE;
    if (i < 0) {
        if (g->noffsets >= BK_GRP_OFFSETS_MAX) { drop_if_bare(c, g); return KP_ERR_TOO_LARGE; }
        grp_offset_idx(g, k->topic, k->partition, &ins);
        grp_reserve((void **)&g->offsets, &g->offsets_cap, g->noffsets + 1, sizeof *g->offsets);
        memmove(&g->offsets[ins + 1], &g->offsets[ins], (g->noffsets - ins) * sizeof *g->offsets);
        memset(&g->offsets[ins], 0, sizeof g->offsets[ins]);
        gs_set(&g->offsets[ins].topic, k->topic.p ? k->topic : kp_slice_cstr(""));
        g->offsets[ins].partition = k->partition;
        g->noffsets++;
        i = (ptrdiff_t)ins;
    }
    bk_grp_offset_t *o = &g->offsets[i];
    o->offset = v.offset;
    o->leader_epoch = v.leader_epoch;
    gs_set(&o->metadata, v.metadata.p ? v.metadata : kp_slice_cstr(""));
    o->commit_ts_ms = v.commit_timestamp;
    /* every negative value means "retention decides" (group_offsets.c); keep
     * one spelling, -1, or a rewrite (value v3) would not say the same */
    o->expire_ts_ms = v.expire_timestamp >= 0 ? v.expire_timestamp : -1;
    return KP_OK;
}

int bk_grp_load_record(bk_grp_coord_t *c, kp_bytes_t key, kp_bytes_t value) {
    assert(c->loading);
    kp_rd_t r;
    kp_rd_init(&r, key.p, key.len);
    int16_t type;
    int st = kp_rd_i16(&r, &type);
    if (st != KP_OK) return st;
    if (type >= BK_GRP_KEY_CG_METADATA && type <= BK_GRP_KEY_CG_CURRENT)
        return bk_grp_cg_load_record(c, type, key, value);
    if (type > BK_GRP_KEY_GROUP) return KP_OK;            /* share groups, streams, ... */
    if (type < 0) return KP_ERR_BAD_VALUE;
    kp_arena_t a;
    kp_arena_init(&a, 4096 + (key.len + value.len) * 16);   /* decoded arrays only */
    if (type == BK_GRP_KEY_GROUP) {
        kp_group_metadata_key_t k;
        int16_t v;
        st = decode(key, &kp_group_metadata_key_desc, &v, &k, &a);
        if (st == KP_OK) st = load_group(c, k.group, value, &a);
    } else {
        kp_offset_commit_key_t k;
        int16_t v;
        st = decode(key, &kp_offset_commit_key_desc, &v, &k, &a);
        if (st == KP_OK) st = load_offset(c, &k, value, &a);
    }
    kp_arena_free(&a);
    return st;
}

void bk_grp_load_done(bk_grp_coord_t *c, int64_t now_ms) {
    assert(c->loading);
    c->loading = false;
    for (size_t k = 0; k < c->ngroups; k++) {
        bk_grp_t *g = c->groups[k];
        g->state = g->nmembers > 0 ? BK_GRP_STABLE : BK_GRP_EMPTY;
        if (g->state_ts_ms < 0) g->state_ts_ms = now_ms;
        for (size_t i = 0; i < g->nmembers; i++) grp_member_seen(&g->members[i], now_ms);
        if (g->cg) cg_load_done(c, g, now_ms);
    }
}

/* ---- transactional offsets (TxnOffsetCommit, txn driver) ---------------------------- */

void bk_grp_rec_txn_offset(bk_grp_out_t *o, const bk_grp_txn_offset_t *t) {
    kp_offset_commit_value_t v;
    kp_offset_commit_value_init(&v);
    v.offset = t->offset;
    v.leader_epoch = t->leader_epoch;
    v.metadata = t->metadata.p ? t->metadata : kp_slice_cstr("");
    v.commit_timestamp = t->commit_ts_ms;
    v.expire_timestamp = -1;
    kp_bytes_t key = offset_key(o, t->group, t->topic, t->partition);
    add_rec(o, key, encode(o, &kp_offset_commit_value_desc, 3, &v));
}

int bk_grp_decode_txn_offset(kp_bytes_t key, kp_bytes_t value, kp_arena_t *a, bk_grp_txn_offset_t *t) {
    kp_rd_t r;
    kp_rd_init(&r, key.p, key.len);
    int16_t type;
    int st = kp_rd_i16(&r, &type);
    if (st != KP_OK) return st;
    if (type != BK_GRP_KEY_OFFSET || !value.p) return KP_ERR_BAD_VALUE;
    kp_offset_commit_key_t k;
    kp_offset_commit_value_t v;
    int16_t ver;
    st = decode(key, &kp_offset_commit_key_desc, &ver, &k, a);
    if (st == KP_OK) st = decode(value, &kp_offset_commit_value_desc, &ver, &v, a);
    if (st != KP_OK) return st;
    t->group = k.group;
    t->topic = k.topic;
    t->partition = k.partition;
    t->offset = v.offset;
    t->leader_epoch = v.leader_epoch;
    t->metadata = v.metadata;
    t->commit_ts_ms = v.commit_timestamp;
    return KP_OK;
}
