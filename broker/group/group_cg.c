/* group_cg.c — ConsumerGroupHeartbeat (KIP-848) on the pure core: members,
 * group and member epochs, target assignment, reconciliation, timeouts,
 * static membership, migration of empty groups between the protocols.
 * See group_cg.h for the model and the invariant. */
#include "broker/group/group_cg_int.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- members ---------------------------------------------------------------- */

void cg_member_free(bk_grp_cg_member_t *m) {
    gs_free(&m->member_id);
    gs_free(&m->instance_id);
    gs_free(&m->rack_id);
    gs_free(&m->client_id);
    gs_free(&m->client_host);
    for (size_t i = 0; i < m->ntopics; i++) gs_free(&m->topics[i]);
    free(m->topics);
    gs_free(&m->regex);
    if (m->re) { regfree(m->re); free(m->re); }
    gs_free(&m->assignor);
    cg_tps_free(&m->assigned);
    cg_tps_free(&m->revoking);
    cg_tps_free(&m->target);
    memset(m, 0, sizeof *m);
}

void cg_free(bk_grp_t *g) {
    if (!g->cg) return;
    for (size_t i = 0; i < g->cg->nmembers; i++) cg_member_free(&g->cg->members[i]);
    free(g->cg->members);
    free(g->cg);
    g->cg = NULL;
}

ptrdiff_t cg_member_idx(const bk_grp_cg_t *cg, kp_str_t member_id) {
    for (size_t i = 0; i < cg->nmembers; i++)
        if (gs_eq(&cg->members[i].member_id, member_id)) return (ptrdiff_t)i;
    return -1;
}

static ptrdiff_t static_idx(const bk_grp_cg_t *cg, kp_str_t instance_id) {
    if (!instance_id.p) return -1;
    for (size_t i = 0; i < cg->nmembers; i++)
        if (gs_eq(&cg->members[i].instance_id, instance_id)) return (ptrdiff_t)i;
    return -1;
}

/* Anchored as Kafka matches (the whole name): "^(" regex ")$". */
int cg_member_compile(bk_grp_cg_member_t *m) {
    if (m->re) { regfree(m->re); free(m->re); m->re = NULL; }
    if (!m->regex.p || m->regex.len == 0) return KP_OK;
    if (m->regex.len > BK_GRP_CG_REGEX_MAX || memchr(m->regex.p, 0, m->regex.len)) return KP_ERR_BAD_VALUE;
    char *pat = grp_xalloc(m->regex.len + 5);
    memcpy(pat, "^(", 2);
    memcpy(pat + 2, m->regex.p, m->regex.len);
    memcpy(pat + 2 + m->regex.len, ")$", 3);
    regex_t *re = grp_xalloc(sizeof *re);
    int rc = regcomp(re, pat, REG_EXTENDED);
    free(pat);
    if (rc != 0) { free(re); return KP_ERR_BAD_VALUE; }
    m->re = re;
    return KP_OK;
}

static void member_del(bk_grp_cg_t *cg, size_t i) {
    cg_member_free(&cg->members[i]);
    memmove(&cg->members[i], &cg->members[i + 1], (cg->nmembers - i - 1) * sizeof *cg->members);
    cg->nmembers--;
}

static bk_grp_cg_assignor_t pick_assignor(const bk_grp_coord_t *c, const bk_grp_cg_t *cg);

/* ---- states ------------------------------------------------------------------ */

static bool reconciling(const bk_grp_cg_t *cg) {
    for (size_t i = 0; i < cg->nmembers; i++) {
        const bk_grp_cg_member_t *m = &cg->members[i];
        if (m->epoch == -2) continue;
        if (m->epoch != cg->assignment_epoch || m->state != BK_GRP_CG_STABLE) return true;
    }
    return false;
}

const char *bk_grp_cg_state_name(const bk_grp_t *g) {
    const bk_grp_cg_t *cg = g->cg;
    if (!cg || cg->nmembers == 0) return "Empty";
    if (cg->epoch > cg->assignment_epoch) return "Assigning";
    return reconciling(cg) ? "Reconciling" : "Stable";
}

const char *bk_grp_type_name(const bk_grp_t *g) { return g->cg ? "consumer" : "classic"; }

const char *bk_grp_group_state_name(const bk_grp_t *g) {
    return g->cg ? bk_grp_cg_state_name(g) : bk_grp_state_name(g->state);
}

static void sync_state(bk_grp_t *g, int64_t now_ms) {
    bk_grp_state_t s = g->cg && g->cg->nmembers > 0 ? BK_GRP_STABLE : BK_GRP_EMPTY;
    if (s != g->state) grp_set_state(g, s, now_ms);
}

void cg_load_done(bk_grp_coord_t *c, bk_grp_t *g, int64_t now_ms) {
    g->cg->assignor = pick_assignor(c, g->cg);   /* not a record: the members' preferences say it */
    for (size_t i = 0; i < g->cg->nmembers; i++) {
        g->cg->members[i].heartbeat_ms = now_ms;
        if (g->cg->members[i].state == BK_GRP_CG_UNREVOKED)
            g->cg->members[i].revoke_deadline_ms = now_ms + g->cg->members[i].rebalance_timeout_ms;
    }
    g->state = g->cg->nmembers > 0 ? BK_GRP_STABLE : BK_GRP_EMPTY;
}

int16_t bk_grp_cg_member_check(const bk_grp_t *g, kp_str_t member_id, int32_t epoch) {
    if (!g->cg) return KP_ERROR_NONE;
    if (epoch < 0 && (!member_id.p || member_id.len == 0)) return KP_ERROR_NONE;   /* simple consumer */
    ptrdiff_t i = cg_member_idx(g->cg, member_id);
    if (i < 0) return KP_ERROR_UNKNOWN_MEMBER_ID;
    int32_t cur = g->cg->members[i].epoch;
    if (epoch > cur) return KP_ERROR_FENCED_MEMBER_EPOCH;
    if (epoch < cur) return KP_ERROR_STALE_MEMBER_EPOCH;
    return KP_ERROR_NONE;
}

/* ---- epochs and targets --------------------------------------------------- */

/* The assignor of the group: the one most members ask for (ServerAssignor),
 * ties and no preference going to group.consumer.assignors' order. */
static bk_grp_cg_assignor_t pick_assignor(const bk_grp_coord_t *c, const bk_grp_cg_t *cg) {
    size_t votes[BK_GRP_CG_NASSIGNORS] = { 0 };
    for (size_t i = 0; i < cg->nmembers; i++) {
        bk_grp_cg_assignor_t a;
        if (cg->members[i].assignor.p && bk_grp_cg_assignor_parse(gs_slice(&cg->members[i].assignor), &a)) votes[a]++;
    }
    int best = c->cfg.cg_assignors[0] >= 0 ? c->cfg.cg_assignors[0] : BK_GRP_CG_UNIFORM;
    for (int k = 0; k < 2; k++) {
        int a = c->cfg.cg_assignors[k];
        if (a >= 0 && votes[a] > votes[best]) best = a;
    }
    return (bk_grp_cg_assignor_t)best;
}

/* cg_sub_hash of the subscriptions as they are now. */
static uint64_t subs_hash(const bk_grp_cg_t *cg, const bk_grp_cg_topics_t *topics) {
    cg_subs_t subs;
    cg_subs_build(&subs, cg, topics);
    uint64_t h = cg_sub_hash(topics, &subs);
    cg_subs_free(&subs);
    return h;
}

/* A new group epoch and, at once, its target assignment (records: epoch,
 * subscribed topics' metadata, every member's target). */
static void bump(bk_grp_coord_t *c, bk_grp_t *g, const bk_grp_cg_topics_t *topics, bk_grp_out_t *out) {
    bk_grp_cg_t *cg = g->cg;
    kp_str_t gid = gs_slice(&g->id);
    cg->epoch++;
    cg_subs_t subs;
    cg_subs_build(&subs, cg, topics);
    cg->sub_hash = cg_sub_hash(topics, &subs);
    cg->hash_known = true;
    cg->topics_gen = topics->gen;
    cg_rec_partitions(out, gid, topics, &subs);
    cg_rec_epoch(out, gid, cg);
    cg_assign(cg, pick_assignor(c, cg), topics, &subs);
    cg_subs_free(&subs);
    cg->assignment_epoch = cg->epoch;
    cg_rec_target(out, gid, cg);
}

/* Whether another member than skip owns (assigned or revoking) tp. */
static bool owned_elsewhere(const bk_grp_cg_t *cg, size_t skip, const bk_grp_cg_tp_t *tp) {
    for (size_t i = 0; i < cg->nmembers; i++)
        if (i != skip && (cg_tps_has(&cg->members[i].assigned, tp) || cg_tps_has(&cg->members[i].revoking, tp)))
            return true;
    return false;
}

/* Moves member i towards its target (KIP-848's CurrentAssignmentBuilder):
 * revoke first, then the new epoch with the target partitions nobody else
 * holds. owned: what the member says it owns (NULL: not said). Returns
 * whether its assignment or epoch changed (the answer then carries it). */
static bool reconcile(bk_grp_t *g, size_t i, const bk_grp_cg_tps_t *owned, int64_t now_ms, bk_grp_out_t *out) {
    bk_grp_cg_t *cg = g->cg;
    bk_grp_cg_member_t *m = &cg->members[i];
    bool changed = false;
    if (m->revoking.n > 0) {
        /* the member confirms a revocation by no longer listing them */
        bk_grp_cg_tps_t still = owned ? cg_tps_and(&m->revoking, owned) : (bk_grp_cg_tps_t){ NULL, 0 };
        bool done = owned && still.n == 0;
        cg_tps_free(&still);
        if (!done) return false;
        cg_tps_free(&m->revoking);
        changed = true;
    }
    bk_grp_cg_tps_t give_up = cg_tps_minus(&m->assigned, &m->target);
    if (give_up.n > 0) {
        bk_grp_cg_tps_t keep = cg_tps_and(&m->assigned, &m->target);
        cg_tps_free(&m->assigned);
        cg_tps_free(&m->revoking);   /* empty here, but may hold an allocation (a loaded set) */
        m->assigned = keep;
        m->revoking = give_up;
        m->state = BK_GRP_CG_UNREVOKED;
        m->revoke_deadline_ms = now_ms + (m->rebalance_timeout_ms > 0 ? m->rebalance_timeout_ms : 300000);
        cg_rec_current(out, gs_slice(&g->id), m);
        return true;
    }
    cg_tps_free(&give_up);
    /* every target partition free of other owners; the rest later */
    bk_grp_cg_tps_t grant = { grp_xalloc((m->target.n ? m->target.n : 1) * sizeof *grant.v), 0 };
    for (size_t k = 0; k < m->target.n; k++)
        if (cg_tps_has(&m->assigned, &m->target.v[k]) || !owned_elsewhere(cg, i, &m->target.v[k]))
            grant.v[grant.n++] = m->target.v[k];
    int8_t st = grant.n == m->target.n ? BK_GRP_CG_STABLE : BK_GRP_CG_UNRELEASED;
    if (!cg_tps_eq(&grant, &m->assigned) || m->epoch != cg->assignment_epoch || st != m->state || changed) {
        cg_tps_free(&m->assigned);
        m->assigned = grant;
        if (m->epoch != cg->assignment_epoch) {
            m->prev_epoch = m->epoch;
            m->epoch = cg->assignment_epoch;
        }
        m->state = st;
        cg_rec_current(out, gs_slice(&g->id), m);
        return true;
    }
    cg_tps_free(&grant);
    return false;
}

/* Removes member i (left, fenced or expired): tombstones, a new epoch. */
static void remove_member(bk_grp_coord_t *c, bk_grp_t *g, size_t i, const bk_grp_cg_topics_t *topics, int64_t now_ms,
                          bk_grp_out_t *out) {
    cg_rec_member_tombstones(out, gs_slice(&g->id), gs_slice(&g->cg->members[i].member_id));
    member_del(g->cg, i);
    bump(c, g, topics, out);
    sync_state(g, now_ms);
}

void cg_drop(bk_grp_t *g, bk_grp_out_t *out) {
    if (!g->cg) return;
    kp_str_t gid = gs_slice(&g->id);
    for (size_t i = 0; i < g->cg->nmembers; i++)
        cg_rec_member_tombstones(out, gid, gs_slice(&g->cg->members[i].member_id));
    cg_rec_group_tombstones(out, gid);
    cg_free(g);
}

/* ---- heartbeat ---------------------------------------------------------------- */

static void fail(bk_grp_cg_hb_resp_t *r, int16_t err, const char *msg) {
    r->error = err;
    r->message = msg;
}

/* The group for a consumer-protocol request, created or converted (an
 * empty classic group, group.consumer.migration.policy) when join. NULL
 * with resp->error set otherwise. */
static bk_grp_t *consumer_group(bk_grp_coord_t *c, kp_str_t gid, bool join, int64_t now_ms, bk_grp_out_t *out,
                                bk_grp_cg_hb_resp_t *r) {
    bk_grp_t *g = grp_get(c, gid);
    if (g && g->cg) return g;
    if (!join) { fail(r, KP_ERROR_GROUP_ID_NOT_FOUND, "unknown consumer group"); return NULL; }
    if (g) {
        bool may = c->cfg.cg_migration == BK_GRP_CG_MIGRATE_UPGRADE ||
                   c->cfg.cg_migration == BK_GRP_CG_MIGRATE_BIDIRECTIONAL;
        if (g->nmembers > 0 || g->npending > 0 || g->state != BK_GRP_EMPTY || !may) {
            fail(r, KP_ERROR_GROUP_ID_NOT_FOUND, "the group is a classic group");
            return NULL;
        }
        /* its committed offsets stay; the classic metadata goes */
        if (g->protocol_type.p || g->generation > 0) rec_group_tombstone(out, gid);
        gs_free(&g->protocol_type);
        gs_free(&g->protocol);
        gs_free(&g->leader);
        g->generation = 0;
    } else if (!(g = grp_create(c, gid, now_ms))) {
        fail(r, KP_ERROR_COORDINATOR_NOT_AVAILABLE, "too many groups");
        return NULL;
    }
    g->cg = grp_xalloc(sizeof *g->cg);
    g->cg->topics_gen = -1;
    return g;
}

/* Kafka's member id: 22 characters of a random UUID in URL-safe base64. */
static kp_str_t new_member_id(bk_grp_coord_t *c, char *buf) {
    static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (int i = 0; i < 22; i++) {
        c->rng += 0x9E3779B97F4A7C15ULL;
        uint64_t z = c->rng;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        buf[i] = B64[(z ^ (z >> 31)) & 63];
    }
    buf[22] = 0;
    return kp_slice_cstr(buf);
}

static void set_topics(bk_grp_cg_member_t *m, const kp_str_t *t, size_t n) {
    for (size_t i = 0; i < m->ntopics; i++) gs_free(&m->topics[i]);
    free(m->topics);
    m->topics = grp_xalloc((n ? n : 1) * sizeof *m->topics);
    m->ntopics = n;
    for (size_t i = 0; i < n; i++) gs_set(&m->topics[i], t[i].p ? t[i] : kp_slice_cstr(""));
}

static bool topics_eq(const bk_grp_cg_member_t *m, const kp_str_t *t, size_t n) {
    if (m->ntopics != n) return false;
    for (size_t i = 0; i < n; i++)
        if (!gs_eq(&m->topics[i], t[i])) return false;
    return true;
}

/* Validation of the request alone (Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid). */
static bool valid(const bk_grp_cg_hb_t *q, bk_grp_cg_hb_resp_t *r) {
    if (!q->group_id.p || q->group_id.len == 0) { fail(r, KP_ERROR_INVALID_REQUEST, "GroupId can't be empty."); return false; }
    if (q->instance_id.p && q->instance_id.len == 0) {
        fail(r, KP_ERROR_INVALID_REQUEST, "InstanceId can't be empty.");
        return false;
    }
    if (q->member_epoch < -2) { fail(r, KP_ERROR_INVALID_REQUEST, "MemberEpoch is invalid."); return false; }
    if (q->member_epoch != 0 && (!q->member_id.p || q->member_id.len == 0)) {
        fail(r, KP_ERROR_INVALID_REQUEST, "MemberId can't be empty.");
        return false;
    }
    if (q->member_epoch == 0) {
        if (q->ntopics < 0 && !q->regex.p) {
            fail(r, KP_ERROR_INVALID_REQUEST, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.");
            return false;
        }
        if (q->nowned > 0) { fail(r, KP_ERROR_INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining."); return false; }
    }
    if (q->member_epoch == -2 && !q->instance_id.p) {
        fail(r, KP_ERROR_INVALID_REQUEST, "InstanceId can't be null when MemberEpoch is -2.");
        return false;
    }
    if (q->ntopics > BK_GRP_CG_TOPICS_MAX) { fail(r, KP_ERROR_INVALID_REQUEST, "too many subscribed topics"); return false; }
    /* What a member owns came from an assignment, which never holds more
     * than BK_GRP_CG_PARTS_MAX (the bound a record is loaded with): a
     * longer list is not one we gave, and it is refused before it is read
     * (owned may then be NULL: the driver does not flatten it). */
    if (q->nowned > BK_GRP_CG_PARTS_MAX) {
        fail(r, KP_ERROR_INVALID_REQUEST, "TopicPartitions holds more partitions than an assignment may.");
        return false;
    }
    for (int32_t k = 0; k < q->nowned; k++)
        if (q->owned[k].partition < 0) {
            fail(r, KP_ERROR_INVALID_REQUEST, "TopicPartitions holds a negative partition index.");
            return false;
        }
    bk_grp_cg_assignor_t a;
    if (q->assignor.p && !bk_grp_cg_assignor_parse(q->assignor, &a)) {
        fail(r, KP_ERROR_UNSUPPORTED_ASSIGNOR, "ServerAssignor is not supported (uniform, range).");
        return false;
    }
    return true;
}

/* The answer's assignment: what the member may use now. */
static void answer_assignment(const bk_grp_cg_member_t *m, bk_grp_out_t *out, bk_grp_cg_hb_resp_t *r) {
    bk_grp_cg_tp_t *v = kp_arena_alloc(&out->arena, (m->assigned.n ? m->assigned.n : 1) * sizeof *v);
    if (!v) { out->err = KP_ERR_NOMEM; return; }
    if (m->assigned.n) memcpy(v, m->assigned.v, m->assigned.n * sizeof *v);
    r->has_assignment = true;
    r->assignment = v;
    r->nassignment = m->assigned.n;
}

/* The member a request with epoch 0 joins as: an existing dynamic member
 * rejoining, a static member taking over its instance, or a new one. */
static ptrdiff_t join_member(bk_grp_coord_t *c, bk_grp_t *g, const bk_grp_cg_hb_t *q, bool *is_new,
                             bool *replaced, bk_grp_out_t *out, bk_grp_cg_hb_resp_t *r) {
    bk_grp_cg_t *cg = g->cg;
    char idbuf[23];
    kp_str_t mid = q->member_id.p && q->member_id.len > 0 ? q->member_id : new_member_id(c, idbuf);
    ptrdiff_t i = cg_member_idx(cg, mid);
    ptrdiff_t s = static_idx(cg, q->instance_id);
    if (s >= 0 && s != i) {
        bk_grp_cg_member_t *old = &cg->members[s];
        if (old->epoch != -2) {
            fail(r, KP_ERROR_UNRELEASED_INSTANCE_ID, "the static member's instance id is still in use");
            return -1;
        }
        /* the static member comes back: a new member id, its epoch and
         * assignment (no rebalance) */
        cg_rec_member_tombstones(out, gs_slice(&g->id), gs_slice(&old->member_id));
        gs_set(&old->member_id, mid);
        old->epoch = old->prev_epoch > 0 ? old->prev_epoch : cg->assignment_epoch;
        *is_new = false;
        *replaced = true;   /* its records are written again under the new id */
        /* ... after every other member's: last in join order, as a replay
         * of the log will have it */
        bk_grp_cg_member_t keep = cg->members[s];
        memmove(&cg->members[s], &cg->members[s + 1], (cg->nmembers - (size_t)s - 1) * sizeof *cg->members);
        cg->members[cg->nmembers - 1] = keep;
        return (ptrdiff_t)cg->nmembers - 1;
    }
    if (i >= 0) { *is_new = false; return i; }
    if (cg->nmembers >= (size_t)c->cfg.cg_max_size) {
        fail(r, KP_ERROR_GROUP_MAX_SIZE_REACHED, "the consumer group has reached its maximum size");
        return -1;
    }
    grp_reserve((void **)&cg->members, &cg->members_cap, cg->nmembers + 1, sizeof *cg->members);
    bk_grp_cg_member_t *m = &cg->members[cg->nmembers];
    memset(m, 0, sizeof *m);
    gs_set(&m->member_id, mid);
    m->rebalance_timeout_ms = -1;
    *is_new = true;
    return (ptrdiff_t)cg->nmembers++;
}

void bk_grp_cg_heartbeat(bk_grp_coord_t *c, const bk_grp_cg_hb_t *q, const bk_grp_cg_topics_t *topics,
                         int64_t now_ms, bk_grp_out_t *out, bk_grp_cg_hb_resp_t *r) {
    memset(r, 0, sizeof *r);
    r->member_epoch = -1;
    r->heartbeat_interval_ms = c->cfg.cg_heartbeat_interval_ms;
    int16_t err = bk_grp_owner_error(c, q->group_id);
    if (err) { fail(r, err, NULL); return; }
    if (!valid(q, r)) return;
    bool join = q->member_epoch == 0;
    bk_grp_t *g = consumer_group(c, q->group_id, join, now_ms, out, r);
    if (!g) return;
    bk_grp_cg_t *cg = g->cg;
    kp_str_t gid = gs_slice(&g->id);
    ptrdiff_t i;
    bool is_new = false, replaced = false;
    if (join) {
        i = join_member(c, g, q, &is_new, &replaced, out, r);
        if (i < 0) {
            if (cg->nmembers == 0 && g->noffsets == 0) grp_destroy(c, g);   /* created for nothing */
            return;
        }
    } else {
        i = cg_member_idx(cg, q->member_id);
        if (i < 0) { fail(r, KP_ERROR_UNKNOWN_MEMBER_ID, "unknown member id"); return; }
        bk_grp_cg_member_t *m = &cg->members[i];
        if (q->instance_id.p && !gs_eq(&m->instance_id, q->instance_id)) {
            fail(r, KP_ERROR_FENCED_INSTANCE_ID, "the instance id belongs to another member");
            return;
        }
        if (q->member_epoch == -1 || q->member_epoch == -2) {
            if (q->member_epoch == -2 && m->instance_id.p) {
                /* a static member leaving for a restart keeps its assignment
                 * for a session: only its epoch says it is away */
                m->prev_epoch = m->epoch;
                m->epoch = -2;
                m->heartbeat_ms = now_ms;
                cg_rec_current(out, gid, m);
            } else {
                remove_member(c, g, (size_t)i, topics, now_ms, out);
            }
            r->member_id = out_copy(out, q->member_id);
            r->member_epoch = q->member_epoch;
            return;
        }
        bk_grp_cg_tps_t owned_chk = { NULL, 0 };
        if (q->nowned >= 0) cg_tps_set(&owned_chk, q->owned, (size_t)q->nowned);
        if (q->member_epoch > m->epoch) {
            cg_tps_free(&owned_chk);
            fail(r, KP_ERROR_FENCED_MEMBER_EPOCH, "the member epoch is newer than the coordinator's");
            return;
        }
        if (q->member_epoch < m->epoch) {
            /* a lost answer: the previous epoch is fine while the member owns
             * nothing it should not (Kafka's isSubset check) */
            bk_grp_cg_tps_t extra = cg_tps_minus(&owned_chk, &m->assigned);
            bool ok = q->member_epoch == m->prev_epoch && q->nowned >= 0 && extra.n == 0;
            cg_tps_free(&extra);
            if (!ok) {
                cg_tps_free(&owned_chk);
                fail(r, KP_ERROR_FENCED_MEMBER_EPOCH, "the member epoch is fenced");
                return;
            }
        }
        cg_tps_free(&owned_chk);
    }
    bk_grp_cg_member_t *m = &cg->members[i];
    /* what the member says about itself */
    bool sub_changed = is_new, meta_changed = is_new;
    if (q->ntopics >= 0 && !topics_eq(m, q->topics, (size_t)q->ntopics)) {
        set_topics(m, q->topics, (size_t)q->ntopics);
        sub_changed = true;
    }
    if (q->regex.p && !gs_eq(&m->regex, q->regex)) {
        bk_grp_str_t old = m->regex;
        m->regex = (bk_grp_str_t){ NULL, 0 };
        gs_set(&m->regex, q->regex.len ? q->regex : kp_slice_null());
        if (cg_member_compile(m) != KP_OK) {
            gs_free(&m->regex);
            m->regex = old;
            (void)cg_member_compile(m);
            if (is_new) member_del(cg, (size_t)i);
            if (cg->nmembers == 0 && g->noffsets == 0 && cg->epoch == 0) grp_destroy(c, g);
            fail(r, KP_ERROR_INVALID_REGULAR_EXPRESSION, "SubscribedTopicRegex is not a valid POSIX extended regex");
            return;
        }
        gs_free(&old);
        sub_changed = true;
    }
    if (q->assignor.p && !gs_eq(&m->assignor, q->assignor)) { gs_set(&m->assignor, q->assignor); sub_changed = true; }
    if (q->instance_id.p && !gs_eq(&m->instance_id, q->instance_id)) { gs_set(&m->instance_id, q->instance_id); meta_changed = true; }
    if (q->rack_id.p && !gs_eq(&m->rack_id, q->rack_id)) { gs_set(&m->rack_id, q->rack_id); meta_changed = true; }
    if (q->rebalance_timeout_ms >= 0 && q->rebalance_timeout_ms != m->rebalance_timeout_ms) {
        m->rebalance_timeout_ms = q->rebalance_timeout_ms;
        meta_changed = true;
    }
    if (q->client_id.p && !gs_eq(&m->client_id, q->client_id)) { gs_set(&m->client_id, q->client_id); meta_changed = true; }
    if (q->client_host.p && !gs_eq(&m->client_host, q->client_host)) { gs_set(&m->client_host, q->client_host); meta_changed = true; }
    if (join && !is_new && m->epoch == -2) m->epoch = m->prev_epoch;
    m->heartbeat_ms = now_ms;
    if (sub_changed || meta_changed || replaced) cg_rec_member(out, gid, m);
    if (replaced) {
        cg_rec_target(out, gid, cg);
        cg_rec_current(out, gid, m);
    }
    /* a subscribed topic changed since the last epoch */
    bool topics_moved = false;
    if (!sub_changed && cg->topics_gen != topics->gen) {
        cg->topics_gen = topics->gen;
        topics_moved = !cg->hash_known || subs_hash(cg, topics) != cg->sub_hash;
    }
    if (sub_changed || topics_moved) bump(c, g, topics, out);
    sync_state(g, now_ms);
    bk_grp_cg_tps_t owned = { NULL, 0 };
    if (q->nowned >= 0) cg_tps_set(&owned, q->owned, (size_t)q->nowned);
    else if (join) cg_tps_set(&owned, NULL, 0);   /* a joining member owns nothing */
    bool changed = reconcile(g, (size_t)i, q->nowned >= 0 || join ? &owned : NULL, now_ms, out);
    m = &cg->members[i];
    /* the answer carries the assignment when it changed, on a join, or when
     * the member's view differs from ours (a lost answer) */
    if (changed || join || (q->nowned >= 0 && !cg_tps_eq(&owned, &m->assigned) && m->revoking.n == 0))
        answer_assignment(m, out, r);
    cg_tps_free(&owned);
    r->member_id = out_copy(out, gs_slice(&m->member_id));
    r->member_epoch = m->epoch;
}

/* ---- tick --------------------------------------------------------------------- */

void bk_grp_cg_tick(bk_grp_coord_t *c, const bk_grp_cg_topics_t *topics, int64_t now_ms, bk_grp_out_t *out) {
    if (c->loading) return;
    for (size_t k = 0; k < c->ngroups; k++) {
        bk_grp_t *g = c->groups[k];
        bk_grp_cg_t *cg = g->cg;
        if (!cg) continue;
        for (size_t i = 0; i < cg->nmembers;) {
            bk_grp_cg_member_t *m = &cg->members[i];
            bool expired = now_ms - m->heartbeat_ms > c->cfg.cg_session_timeout_ms;
            bool stuck = m->state == BK_GRP_CG_UNREVOKED && m->revoking.n > 0 && now_ms > m->revoke_deadline_ms;
            if (expired || stuck) {
                out->members_expired++;
                remove_member(c, g, i, topics, now_ms, out);
                continue;
            }
            i++;
        }
        if (cg->topics_gen != topics->gen && cg->nmembers > 0) {
            cg->topics_gen = topics->gen;
            if (!cg->hash_known || subs_hash(cg, topics) != cg->sub_hash) bump(c, g, topics, out);
        }
    }
}
