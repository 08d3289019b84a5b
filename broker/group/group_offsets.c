/* group_offsets.c — OffsetCommit, OffsetFetch, OffsetDelete, retention and
 * lag. A group's offsets are an array sorted by (topic, partition): lookups
 * are O(log n), an insert moves the tail (O(n)); a tree was not worth it for
 * the partition counts groups consume. */
#include "broker/group/group_int.h"
#include "broker/group/group_cg.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "kp_msgs.h"

static int cmp_tp(const bk_grp_offset_t *o, kp_str_t topic, int32_t partition) {
    size_t n = o->topic.len < topic.len ? o->topic.len : topic.len;
    int r = n ? memcmp(o->topic.p, topic.p, n) : 0;
    if (r) return r;
    if (o->topic.len != topic.len) return o->topic.len < topic.len ? -1 : 1;
    return o->partition < partition ? -1 : o->partition > partition;
}

ptrdiff_t grp_offset_idx(const bk_grp_t *g, kp_str_t topic, int32_t partition, size_t *ins) {
    size_t lo = 0, hi = g->noffsets;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = cmp_tp(&g->offsets[mid], topic, partition);
        if (r == 0) { if (ins) *ins = mid; return (ptrdiff_t)mid; }
        if (r < 0) lo = mid + 1; else hi = mid;
    }
    if (ins) *ins = lo;
    return -1;
}

void grp_offset_del(bk_grp_t *g, size_t i) {
    assert(i < g->noffsets);
    gs_free(&g->offsets[i].topic);
    gs_free(&g->offsets[i].metadata);
    memmove(&g->offsets[i], &g->offsets[i + 1], (g->noffsets - i - 1) * sizeof *g->offsets);
    g->noffsets--;
}

/* The slot for (topic, partition), inserted when absent; NULL at the bound. */
static bk_grp_offset_t *offset_slot(bk_grp_t *g, kp_str_t topic, int32_t partition) {
    size_t ins;
    ptrdiff_t i = grp_offset_idx(g, topic, partition, &ins);
    if (i >= 0) return &g->offsets[i];
    if (g->noffsets >= BK_GRP_OFFSETS_MAX) return NULL;
    grp_reserve((void **)&g->offsets, &g->offsets_cap, g->noffsets + 1, sizeof *g->offsets);
    memmove(&g->offsets[ins + 1], &g->offsets[ins], (g->noffsets - ins) * sizeof *g->offsets);
    bk_grp_offset_t *o = &g->offsets[ins];
    memset(o, 0, sizeof *o);
    gs_set(&o->topic, topic.p ? topic : kp_slice_cstr(""));
    o->partition = partition;
    g->noffsets++;
    return o;
}

/* ---- OffsetCommit ------------------------------------------------------------ */

/* Kafka's doCommitOffsets checks. */
static int16_t commit_check(bk_grp_t *g, const bk_grp_commit_t *req) {
    if (g->state == BK_GRP_DEAD) return KP_ERROR_COORDINATOR_NOT_AVAILABLE;
    /* a consumer group: the generation field carries the member epoch */
    if (g->cg) return bk_grp_cg_member_check(g, req->member_id, req->generation);
    if (grp_fenced(g, req->member_id, req->instance_id)) return KP_ERROR_FENCED_INSTANCE_ID;
    if (req->generation < 0 && g->state == BK_GRP_EMPTY) return KP_ERROR_NONE;   /* simple */
    if (g->state == BK_GRP_COMPLETING_REBALANCE) return KP_ERROR_REBALANCE_IN_PROGRESS;
    if (grp_member_idx(g, req->member_id) < 0) return KP_ERROR_UNKNOWN_MEMBER_ID;
    if (req->generation != g->generation) return KP_ERROR_ILLEGAL_GENERATION;
    return KP_ERROR_NONE;
}

/* commit time + retention (>= 0), both possibly from the client: saturates
 * at INT64_MAX (never expires) instead of overflowing */
static int64_t expire_at(int64_t commit_ts_ms, int64_t retention_ms) {
    assert(retention_ms >= 0);
    return commit_ts_ms > INT64_MAX - retention_ms ? INT64_MAX : commit_ts_ms + retention_ms;
}

static int16_t commit_one(const bk_grp_coord_t *c, bk_grp_t *g, const bk_grp_commit_t *req,
                          const bk_grp_commit_part_t *p, int64_t now_ms, bk_grp_out_t *out) {
    if (p->metadata.len > (size_t)c->cfg.offset_metadata_max_bytes)
        return KP_ERROR_OFFSET_METADATA_TOO_LARGE;
    bk_grp_offset_t *o = offset_slot(g, p->topic, p->partition);
    if (!o) return KP_ERROR_INVALID_COMMIT_OFFSET_SIZE;
    o->offset = p->offset;
    o->leader_epoch = p->leader_epoch;
    gs_set(&o->metadata, p->metadata.p ? p->metadata : kp_slice_cstr(""));
    o->commit_ts_ms = p->commit_ts_ms >= 0 ? p->commit_ts_ms : now_ms;
    o->expire_ts_ms = -1;
    if (req->retention_ms >= 0) o->expire_ts_ms = expire_at(o->commit_ts_ms, req->retention_ms);
    else if (p->commit_ts_ms >= 0) o->expire_ts_ms = expire_at(o->commit_ts_ms, c->cfg.offsets_retention_ms);
    rec_offset(out, gs_slice(&g->id), o);
    return KP_ERROR_NONE;
}

static int16_t fill(int16_t *errors, size_t n, int16_t err) {
    for (size_t k = 0; k < n; k++) errors[k] = err;
    return err;
}

int16_t bk_grp_offset_commit(bk_grp_coord_t *c, const bk_grp_commit_t *req, int64_t now_ms,
                             bk_grp_out_t *out, int16_t *errors) {
    int16_t err = bk_grp_owner_error(c, req->group_id);
    if (err) return fill(errors, req->nparts, err);
    bk_grp_t *g = grp_get(c, req->group_id);
    bool created = false;
    if (!g) {
        /* Only a consumer outside group management (generation -1) may
         * create a group by committing; anything else is from an old
         * generation of a group that is gone. */
        if (req->generation >= 0) return fill(errors, req->nparts, KP_ERROR_ILLEGAL_GENERATION);
        g = grp_create(c, req->group_id, now_ms);
        if (!g) return fill(errors, req->nparts, KP_ERROR_COORDINATOR_NOT_AVAILABLE);
        created = true;
    }
    err = commit_check(g, req);
    if (err) return fill(errors, req->nparts, err);
    ptrdiff_t m = grp_member_idx(g, req->member_id);
    /* Kafka's coordinator (classic groups, Stable or PreparingRebalance:
     * commit_check refuses CompletingRebalance) keeps the session of a
     * member that commits, as a heartbeat would */
    if (m >= 0) grp_member_seen(&g->members[m], now_ms);
    int16_t common = KP_ERROR_NONE;
    for (size_t k = 0; k < req->nparts; k++) {
        errors[k] = commit_one(c, g, req, &req->parts[k], now_ms, out);
        if (k == 0) common = errors[0];
        else if (errors[k] != common) common = KP_ERROR_NONE;
    }
    if (created && g->noffsets == 0) grp_destroy(c, g);
    return common;
}

/* Transactional offsets (txn_markers.c): TxnOffsetCommit checks the
 * member like a commit (generation -1: no check, KIP-447), and the COMMIT
 * marker later stores them without a second check (the group may have
 * rebalanced since; Kafka does not re-check either). */
int16_t bk_grp_txn_commit_check(bk_grp_coord_t *c, const bk_grp_commit_t *req) {
    int16_t err = bk_grp_owner_error(c, req->group_id);
    if (err) return err;
    bk_grp_t *g = grp_get(c, req->group_id);
    if (!g || req->generation < 0) return g && g->state == BK_GRP_DEAD ? KP_ERROR_COORDINATOR_NOT_AVAILABLE : 0;
    return commit_check(g, req);
}

int16_t bk_grp_offset_commit_txn(bk_grp_coord_t *c, const bk_grp_commit_t *req, int64_t now_ms,
                                 bk_grp_out_t *out, int16_t *errors) {
    int16_t err = bk_grp_owner_error(c, req->group_id);
    if (err) return fill(errors, req->nparts, err);
    bk_grp_t *g = grp_get(c, req->group_id);
    if (!g) g = grp_create(c, req->group_id, now_ms);
    if (!g || g->state == BK_GRP_DEAD) return fill(errors, req->nparts, KP_ERROR_COORDINATOR_NOT_AVAILABLE);
    int16_t common = KP_ERROR_NONE;
    for (size_t k = 0; k < req->nparts; k++) {
        errors[k] = commit_one(c, g, req, &req->parts[k], now_ms, out);
        if (errors[k]) common = errors[k];
    }
    return common;
}

/* ---- OffsetFetch ----------------------------------------------------------------- */

int16_t bk_grp_offset_fetch(const bk_grp_coord_t *c, kp_str_t group_id, const bk_grp_tp_t *parts,
                            size_t n, bk_grp_fetched_t *res) {
    int16_t err = bk_grp_owner_error(c, group_id);
    const bk_grp_t *g = err ? NULL : bk_grp_find(c, group_id);
    for (size_t k = 0; k < n; k++) {
        ptrdiff_t i = g ? grp_offset_idx(g, parts[k].topic, parts[k].partition, NULL) : -1;
        res[k].offset = -1;
        res[k].leader_epoch = -1;
        res[k].metadata = kp_slice_cstr("");
        if (i < 0) continue;
        res[k].offset = g->offsets[i].offset;
        res[k].leader_epoch = g->offsets[i].leader_epoch;
        res[k].metadata = gs_slice(&g->offsets[i].metadata);
    }
    return err;
}

int16_t bk_grp_offset_fetch_all(const bk_grp_coord_t *c, kp_str_t group_id,
                                const bk_grp_offset_t **offs, size_t *n) {
    int16_t err = bk_grp_owner_error(c, group_id);
    const bk_grp_t *g = err ? NULL : bk_grp_find(c, group_id);
    *offs = g ? g->offsets : NULL;
    *n = g ? g->noffsets : 0;
    return err;
}

/* ---- OffsetDelete -------------------------------------------------------------------- */

/* True when some member's ConsumerProtocolSubscription (any offered
 * protocol) names `topic`, or when one cannot be decoded (then we cannot
 * prove the topic unused). */
static bool topic_subscribed(const bk_grp_t *g, kp_str_t topic) {
    for (size_t i = 0; i < g->nmembers; i++) {
        const bk_grp_member_t *m = &g->members[i];
        for (size_t k = 0; k < m->nprotocols; k++) {
            const bk_grp_str_t *md = &m->protocols[k].metadata;
            kp_rd_t r;
            kp_rd_init(&r, md->p, md->len);
            int16_t version;
            kp_consumer_protocol_subscription_t sub;
            kp_arena_t a;
            kp_arena_init(&a, 4096 + md->len * 16);
            int st = kp_rd_i16(&r, &version);
            if (st == KP_OK && version < 0) st = KP_ERR_BAD_VALUE;
            if (version > 3) version = 3;    /* newer versions extend v3 (Kafka does this) */
            if (st == KP_OK) st = kp_consumer_protocol_subscription_decode(&r, version, &sub, &a);
            bool found = st != KP_OK;
            for (int32_t t = 0; !found && t < sub.topics.count; t++)
                found = kp_slice_eq(sub.topics.items[t], topic);
            kp_arena_free(&a);
            if (found) return true;
        }
    }
    return false;
}

int16_t bk_grp_offset_delete(bk_grp_coord_t *c, kp_str_t group_id, const bk_grp_tp_t *parts,
                             size_t n, int64_t now_ms, bk_grp_out_t *out, int16_t *errors) {
    (void)now_ms;
    int16_t err = bk_grp_owner_error(c, group_id);
    bk_grp_t *g = err ? NULL : grp_get(c, group_id);
    if (!err && (!g || g->state == BK_GRP_DEAD)) err = KP_ERROR_GROUP_ID_NOT_FOUND;
    bool consumer = g && g->protocol_type.p && gs_eq(&g->protocol_type, kp_slice_cstr("consumer"));
    if (!err && g->state != BK_GRP_EMPTY && !consumer) err = KP_ERROR_NON_EMPTY_GROUP;
    if (err) { fill(errors, n, KP_ERROR_NONE); return err; }
    for (size_t k = 0; k < n; k++) {
        errors[k] = KP_ERROR_NONE;
        if (g->state != BK_GRP_EMPTY && topic_subscribed(g, parts[k].topic)) {
            errors[k] = KP_ERROR_GROUP_SUBSCRIBED_TO_TOPIC;
            continue;
        }
        ptrdiff_t i = grp_offset_idx(g, parts[k].topic, parts[k].partition, NULL);
        if (i < 0) continue;
        rec_offset_tombstone(out, group_id, parts[k].topic, parts[k].partition);
        grp_offset_del(g, (size_t)i);
    }
    return KP_ERROR_NONE;
}

/* ---- retention ------------------------------------------------------------------------ */

/* Kafka 2.1+ (KIP-211): an explicit expire time wins; a group without a
 * protocol (offsets only) expires by commit time; a consumer group's offsets
 * start to age when it becomes Empty; an active group keeps its offsets
 * (Kafka also expires topics it no longer subscribes to: not done here). */
static bool offset_expired(const bk_grp_coord_t *c, const bk_grp_t *g, const bk_grp_offset_t *o,
                           int64_t now_ms) {
    int64_t keep_ms = c->cfg.offsets_retention_ms;
    if (o->expire_ts_ms >= 0) return now_ms >= o->expire_ts_ms;
    /* ts <= now - keep rather than now - ts >= keep: ts comes from the log
     * and may be any int64 (the subtraction could overflow) */
    if (!g->protocol_type.p) return o->commit_ts_ms <= now_ms - keep_ms;
    if (g->state == BK_GRP_EMPTY) return g->state_ts_ms <= now_ms - keep_ms;
    return false;
}

void bk_grp_expire_offsets(bk_grp_coord_t *c, int64_t now_ms, bk_grp_out_t *out) {
    if (c->loading) return;
    for (size_t k = c->ngroups; k-- > 0;) {
        bk_grp_t *g = c->groups[k];
        for (size_t i = g->noffsets; i-- > 0;) {
            if (!offset_expired(c, g, &g->offsets[i], now_ms)) continue;
            rec_offset_tombstone(out, gs_slice(&g->id), gs_slice(&g->offsets[i].topic),
                                 g->offsets[i].partition);
            grp_offset_del(g, i);
            out->offsets_expired++;
        }
        if (g->state != BK_GRP_EMPTY || g->noffsets || g->nmembers || g->npending) continue;
        cg_drop(g, out);   /* an empty consumer group's records go too (none for classic) */
        rec_group_tombstone(out, gs_slice(&g->id));
        grp_destroy(c, g);
    }
}

size_t bk_grp_drop_offsets(bk_grp_coord_t *c, bk_grp_gone_fn gone, void *ctx, bk_grp_out_t *out) {
    size_t dropped = 0;
    if (c->loading) return 0;
    for (size_t k = c->ngroups; k-- > 0;) {
        bk_grp_t *g = c->groups[k];
        size_t before = dropped;
        for (size_t i = g->noffsets; i-- > 0;) {
            if (!gone(ctx, gs_slice(&g->offsets[i].topic), g->offsets[i].partition)) continue;
            rec_offset_tombstone(out, gs_slice(&g->id), gs_slice(&g->offsets[i].topic),
                                 g->offsets[i].partition);
            grp_offset_del(g, i);
            dropped++;
        }
        if (dropped == before) continue;   /* groups untouched here stay as they are */
        if (g->state != BK_GRP_EMPTY || g->noffsets || g->nmembers || g->npending) continue;
        cg_drop(g, out);   /* an empty consumer group's records go too (none for classic) */
        rec_group_tombstone(out, gs_slice(&g->id));
        grp_destroy(c, g);
    }
    return dropped;
}

size_t bk_grp_lags(const bk_grp_coord_t *c, kp_str_t group_id, bk_grp_leo_fn leo, void *ctx,
                   bk_grp_lag_t *res, size_t max) {
    const bk_grp_t *g = bk_grp_find(c, group_id);
    if (!g) return 0;
    for (size_t i = 0; i < g->noffsets && i < max; i++) {
        const bk_grp_offset_t *o = &g->offsets[i];
        int64_t end = leo(ctx, gs_slice(&o->topic), o->partition);
        res[i].committed = o;
        res[i].log_end_offset = end;
        /* a negative committed offset (any int64 may be committed or
         * loaded) is no position: lag unknown, and end - offset cannot
         * overflow once both are >= 0 */
        res[i].lag = end < 0 || o->offset < 0 ? -1 : (end > o->offset ? end - o->offset : 0);
    }
    return g->noffsets;
}
