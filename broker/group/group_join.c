/* group_join.c — JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the
 * timeouts: the classic rebalance state machine
 *   Empty -> PreparingRebalance -> CompletingRebalance -> Stable -> ...
 * Members and protocols are scanned linearly: groups are bounded by
 * group.max.size and are small in practice; a hash index was not worth it. */
#include "broker/group/group_int.h"
#include "broker/group/group_cg.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* prefix + "-" + a version-4 UUID, as Kafka names members. */
static bk_grp_str_t make_member_id(bk_grp_coord_t *c, kp_str_t prefix) {
    uint64_t hi = splitmix64(&c->rng), lo = splitmix64(&c->rng);
    hi = (hi & ~0xF000ull) | 0x4000ull;
    lo = (lo & ~(3ull << 62)) | (2ull << 62);
    char uuid[40];
    snprintf(uuid, sizeof uuid, "%08" PRIx64 "-%04" PRIx64 "-%04" PRIx64 "-%04" PRIx64 "-%012" PRIx64,
             hi >> 32, (hi >> 16) & 0xFFFF, hi & 0xFFFF, lo >> 48, lo & (uint64_t)0xFFFFFFFFFFFF);
    size_t n = prefix.p ? prefix.len : 0;
    bk_grp_str_t s = { grp_xalloc(n + 1 + 36 + 1), n + 1 + 36 };
    if (n) memcpy(s.p, prefix.p, n);
    s.p[n] = '-';
    memcpy(s.p + n + 1, uuid, 36);
    return s;
}

/* ---- protocols ------------------------------------------------------------- */

static const bk_grp_protocol_t *member_protocol(const bk_grp_member_t *m, kp_str_t name) {
    for (size_t k = 0; k < m->nprotocols; k++)
        if (gs_eq(&m->protocols[k].name, name)) return &m->protocols[k];
    return NULL;
}

/* Every member except `skip` offers `name`. */
static bool all_support(const bk_grp_t *g, kp_str_t name, ptrdiff_t skip) {
    for (size_t i = 0; i < g->nmembers; i++)
        if ((ptrdiff_t)i != skip && !member_protocol(&g->members[i], name)) return false;
    return true;
}

/* Kafka's supportsProtocols: a first member needs a type and a protocol;
 * later ones the group's type and one protocol all other members offer. */
static bool supports_protocols(const bk_grp_t *g, const bk_grp_join_t *req, ptrdiff_t self) {
    if (req->nprotocols == 0 || !req->protocol_type.p || req->protocol_type.len == 0) return false;
    size_t others = g->nmembers - (self >= 0 ? 1 : 0);
    if (others == 0) return true;
    if (!gs_eq(&g->protocol_type, req->protocol_type)) return false;
    for (size_t k = 0; k < req->nprotocols; k++)
        if (all_support(g, req->protocols[k].name, self)) return true;
    return false;
}

/* Kafka's selectProtocol: among the protocols every member offers, each
 * member votes for its most preferred; most votes wins (a tie goes to the
 * first member's preference order, so the choice is deterministic). */
static kp_str_t select_protocol(const bk_grp_t *g) {
    assert(g->nmembers > 0);
    const bk_grp_member_t *first = &g->members[0];
    size_t best_votes = 0;
    kp_str_t best = kp_slice_null();
    for (size_t k = 0; k < first->nprotocols; k++) {
        kp_str_t cand = gs_slice(&first->protocols[k].name);
        if (!all_support(g, cand, -1)) continue;
        size_t votes = 0;
        for (size_t i = 0; i < g->nmembers; i++) {
            const bk_grp_member_t *m = &g->members[i];
            for (size_t j = 0; j < m->nprotocols; j++) {
                kp_str_t name = gs_slice(&m->protocols[j].name);
                if (!all_support(g, name, -1)) continue;
                if (kp_slice_eq(name, cand)) votes++;
                break;
            }
        }
        if (votes > best_votes) { best_votes = votes; best = cand; }
    }
    assert(best.p != NULL);   /* joins keep the intersection non-empty */
    return best;
}

static bool protocols_match(const bk_grp_member_t *m, const bk_grp_join_t *req) {
    if (m->nprotocols != req->nprotocols) return false;
    for (size_t k = 0; k < m->nprotocols; k++)
        if (!gs_eq(&m->protocols[k].name, req->protocols[k].name) ||
            !gs_eq(&m->protocols[k].metadata, req->protocols[k].metadata))
            return false;
    return true;
}

/* Copies the request's client fields, timeouts and protocols into m. */
static void member_update(bk_grp_member_t *m, const bk_grp_join_t *req) {
    gs_set(&m->client_id, req->client_id.p ? req->client_id : kp_slice_cstr(""));
    gs_set(&m->client_host, req->client_host.p ? req->client_host : kp_slice_cstr(""));
    m->session_timeout_ms = req->session_timeout_ms;
    m->rebalance_timeout_ms = req->rebalance_timeout_ms;
    for (size_t k = 0; k < m->nprotocols; k++) {
        gs_free(&m->protocols[k].name);
        gs_free(&m->protocols[k].metadata);
    }
    m->protocols = grp_xrealloc(m->protocols, req->nprotocols * sizeof *m->protocols);
    m->nprotocols = req->nprotocols;
    for (size_t k = 0; k < req->nprotocols; k++) {
        memset(&m->protocols[k], 0, sizeof m->protocols[k]);
        gs_set(&m->protocols[k].name, req->protocols[k].name);
        kp_bytes_t md = req->protocols[k].metadata;
        gs_set(&m->protocols[k].metadata, md.p ? md : kp_slice_cstr(""));
    }
}

/* The member waits for the join to complete; an earlier wait is answered. */
static void await_join(bk_grp_member_t *m, uint64_t token, bk_grp_out_t *out) {
    if (m->awaiting_join)
        out_join_error(out, m->join_token, gs_slice(&m->member_id), KP_ERROR_REBALANCE_IN_PROGRESS);
    m->awaiting_join = true;
    m->join_token = token;
}

/* ---- join completion -------------------------------------------------------- */

static void join_answer(bk_grp_t *g, const bk_grp_member_t *m, uint64_t token, bool with_members,
                        bk_grp_out_t *out) {
    bk_grp_resp_t *r = out_resp(out, BK_GRP_RESP_JOIN, token);
    r->generation = g->generation;
    r->protocol_type = out_copy(out, gs_slice(&g->protocol_type));
    r->protocol = out_copy(out, gs_slice(&g->protocol));
    r->leader = out_copy(out, g->leader.p ? gs_slice(&g->leader) : kp_slice_cstr(""));
    r->member_id = out_copy(out, gs_slice(&m->member_id));
    if (!with_members) return;
    r->members = kp_arena_alloc(&out->arena, (g->nmembers ? g->nmembers : 1) * sizeof *r->members);
    if (!r->members) { out->err = KP_ERR_NOMEM; return; }
    r->nmembers = g->nmembers;
    for (size_t i = 0; i < g->nmembers; i++) {
        const bk_grp_member_t *x = &g->members[i];
        const bk_grp_protocol_t *p = member_protocol(x, gs_slice(&g->protocol));
        assert(p != NULL);
        r->members[i].member_id = out_copy(out, gs_slice(&x->member_id));
        r->members[i].instance_id = out_copy(out, gs_slice(&x->instance_id));
        r->members[i].metadata = out_copy(out, gs_slice(&p->metadata));
    }
}

static int32_t max_rebalance_timeout(const bk_grp_t *g) {
    int32_t t = 0;
    for (size_t i = 0; i < g->nmembers; i++)
        if (g->members[i].rebalance_timeout_ms > t) t = g->members[i].rebalance_timeout_ms;
    return t;
}

/* Kafka's onCompleteJoin: drop members that did not rejoin, start the next
 * generation and answer every waiting join (the leader gets the members).
 * The GroupMetadata record is written when the generation becomes durable:
 * at SyncGroup (Stable, with assignments) or here when the group empties. A
 * record of a generation without assignments would let a new coordinator
 * answer SyncGroup with empty assignments; with the previous generation in
 * the log, members of the new one get ILLEGAL_GENERATION and rejoin. */
static void complete_join(bk_grp_coord_t *c, bk_grp_t *g, int64_t now_ms, bk_grp_out_t *out) {
    (void)c;
    assert(g->state == BK_GRP_PREPARING_REBALANCE);
    for (size_t i = g->nmembers; i-- > 0;) {
        bk_grp_member_t *m = &g->members[i];
        if (m->awaiting_join) continue;
        assert(!m->awaiting_sync);
        grp_member_del(g, i);
        out->members_expired++;
    }
    g->generation++;
    g->initial_delay = false;
    gs_free(&g->protocol);
    out->rebalances_completed++;
    if (g->nmembers == 0) {
        gs_free(&g->leader);
        grp_set_state(g, BK_GRP_EMPTY, now_ms);
        rec_group(out, g);
        return;
    }
    gs_set(&g->protocol, select_protocol(g));
    if (!g->leader.p) gs_set(&g->leader, gs_slice(&g->members[0].member_id));
    grp_set_state(g, BK_GRP_COMPLETING_REBALANCE, now_ms);
    g->join_deadline_ms = now_ms + max_rebalance_timeout(g);   /* sync deadline */
    for (size_t i = 0; i < g->nmembers; i++) {
        bk_grp_member_t *m = &g->members[i];
        gs_set(&m->assignment, kp_slice_cstr(""));
        m->is_new = false;
        m->awaiting_join = false;
        m->heartbeat_ms = now_ms;
        join_answer(g, m, m->join_token, grp_is_leader(g, m), out);
    }
}

static void maybe_complete_join(bk_grp_coord_t *c, bk_grp_t *g, int64_t now_ms,
                                bk_grp_out_t *out) {
    if (g->state != BK_GRP_PREPARING_REBALANCE || g->initial_delay || g->npending > 0) return;
    for (size_t i = 0; i < g->nmembers; i++)
        if (!g->members[i].awaiting_join) return;
    complete_join(c, g, now_ms, out);
}

/* Kafka's maybePrepareRebalance followed by a first completion attempt. */
static void rebalance(bk_grp_coord_t *c, bk_grp_t *g, int64_t now_ms, bk_grp_out_t *out) {
    if (g->state == BK_GRP_COMPLETING_REBALANCE) {
        for (size_t i = 0; i < g->nmembers; i++) {
            bk_grp_member_t *m = &g->members[i];
            gs_set(&m->assignment, kp_slice_cstr(""));
            if (!m->awaiting_sync) continue;
            m->awaiting_sync = false;
            out_sync_error(out, m->sync_token, KP_ERROR_REBALANCE_IN_PROGRESS);
        }
    }
    if (g->state == BK_GRP_PREPARING_REBALANCE) {
        maybe_complete_join(c, g, now_ms, out);
        return;
    }
    int32_t timeout_ms = max_rebalance_timeout(g);
    if (g->state == BK_GRP_EMPTY) {
        /* group.initial.rebalance.delay.ms (Kafka's InitialDelayedJoin): wait
         * for more members, extending the wait by the delay while they come,
         * for at most the rebalance timeout in all. */
        int32_t delay_ms = c->cfg.initial_rebalance_delay_ms;
        g->initial_delay = delay_ms > 0;
        g->new_member_added = false;
        g->initial_remaining_ms = timeout_ms > delay_ms ? timeout_ms - delay_ms : 0;
        g->join_deadline_ms = now_ms + delay_ms;
    } else {
        g->join_deadline_ms = now_ms + timeout_ms;
    }
    grp_set_state(g, BK_GRP_PREPARING_REBALANCE, now_ms);
    maybe_complete_join(c, g, now_ms, out);
}

void grp_remove_member(bk_grp_coord_t *c, bk_grp_t *g, size_t i, int16_t err, int64_t now_ms,
                       bk_grp_out_t *out) {
    bk_grp_member_t *m = &g->members[i];
    if (m->awaiting_join) out_join_error(out, m->join_token, gs_slice(&m->member_id), err);
    if (m->awaiting_sync) out_sync_error(out, m->sync_token, err);
    grp_member_del(g, i);
    if (g->state == BK_GRP_STABLE || g->state == BK_GRP_COMPLETING_REBALANCE)
        rebalance(c, g, now_ms, out);
    else
        maybe_complete_join(c, g, now_ms, out);
}

/* ---- JoinGroup -------------------------------------------------------------- */

static void add_member(bk_grp_coord_t *c, bk_grp_t *g, bk_grp_str_t id, const bk_grp_join_t *req,
                       int64_t now_ms, bk_grp_out_t *out) {
    grp_reserve((void **)&g->members, &g->members_cap, g->nmembers + 1, sizeof *g->members);
    bk_grp_member_t *m = &g->members[g->nmembers++];
    memset(m, 0, sizeof *m);
    m->member_id = id;
    gs_set(&m->instance_id, req->instance_id);
    gs_set(&m->assignment, kp_slice_cstr(""));
    member_update(m, req);
    m->is_new = true;
    grp_member_seen(m, now_ms);
    await_join(m, req->token, out);
    if (g->nmembers == 1) gs_set(&g->protocol_type, req->protocol_type);
    if (!g->leader.p) gs_set(&g->leader, gs_slice(&id));
    if (g->state == BK_GRP_PREPARING_REBALANCE && g->initial_delay) g->new_member_added = true;
    rebalance(c, g, now_ms, out);
}

/* A restarting static member takes over its old member id. In Stable, with
 * the same selected protocol, there is no rebalance: it gets the current
 * generation back (the leader its members, skip_assignment) and keeps its
 * assignment; the old id is fenced. */
static void replace_static(bk_grp_coord_t *c, bk_grp_t *g, size_t s, bk_grp_str_t new_id,
                           const bk_grp_join_t *req, int64_t now_ms, bk_grp_out_t *out) {
    bk_grp_member_t *m = &g->members[s];
    kp_str_t old_id = gs_slice(&m->member_id);
    if (m->awaiting_join) out_join_error(out, m->join_token, old_id, KP_ERROR_FENCED_INSTANCE_ID);
    if (m->awaiting_sync) out_sync_error(out, m->sync_token, KP_ERROR_FENCED_INSTANCE_ID);
    m->awaiting_join = m->awaiting_sync = false;
    bool leader = grp_is_leader(g, m);
    gs_free(&m->member_id);
    m->member_id = new_id;
    if (leader) gs_set(&g->leader, gs_slice(&new_id));
    member_update(m, req);
    grp_member_seen(m, now_ms);
    if (g->state == BK_GRP_STABLE && kp_slice_eq(select_protocol(g), gs_slice(&g->protocol))) {
        bk_grp_resp_t *r;
        join_answer(g, m, req->token, leader, out);
        r = &out->resps[out->nresps - 1];
        r->skip_assignment = leader;
        rec_group(out, g);
        return;
    }
    assert(g->state != BK_GRP_EMPTY && g->state != BK_GRP_DEAD);
    await_join(m, req->token, out);
    rebalance(c, g, now_ms, out);
}

static void join_new(bk_grp_coord_t *c, bk_grp_t *g, const bk_grp_join_t *req, int64_t now_ms,
                     bk_grp_out_t *out) {
    ptrdiff_t s = grp_static_idx(g, req->instance_id);
    if (s >= 0) {
        replace_static(c, g, (size_t)s, make_member_id(c, req->instance_id), req, now_ms, out);
        return;
    }
    if (g->nmembers + g->npending >= (size_t)c->cfg.max_size) {
        out_join_error(out, req->token, kp_slice_cstr(""), KP_ERROR_GROUP_MAX_SIZE_REACHED);
        return;
    }
    if (req->instance_id.p) {
        add_member(c, g, make_member_id(c, req->instance_id), req, now_ms, out);
        return;
    }
    bk_grp_str_t id = make_member_id(c, req->client_id);
    if (!req->require_known_member_id) {
        add_member(c, g, id, req, now_ms, out);
        return;
    }
    /* KIP-394: hand out the id, count it against the size, and wait for the
     * member to come back with it within its session timeout. */
    grp_reserve((void **)&g->pending, &g->pending_cap, g->npending + 1, sizeof *g->pending);
    g->pending[g->npending].member_id = id;
    g->pending[g->npending].deadline_ms = now_ms + req->session_timeout_ms;
    g->npending++;
    out_join_error(out, req->token, gs_slice(&id), KP_ERROR_MEMBER_ID_REQUIRED);
}

static void join_known(bk_grp_coord_t *c, bk_grp_t *g, const bk_grp_join_t *req, ptrdiff_t self,
                       int64_t now_ms, bk_grp_out_t *out) {
    ptrdiff_t p = grp_pending_idx(g, req->member_id);
    if (p >= 0 && self < 0) {
        bk_grp_str_t id = g->pending[p].member_id;
        g->pending[p].member_id.p = NULL;
        grp_pending_del(g, (size_t)p);
        add_member(c, g, id, req, now_ms, out);
        return;
    }
    int16_t err = KP_ERROR_NONE;
    if (grp_fenced(g, req->member_id, req->instance_id)) err = KP_ERROR_FENCED_INSTANCE_ID;
    else if (self < 0) err = KP_ERROR_UNKNOWN_MEMBER_ID;
    if (err) { out_join_error(out, req->token, req->member_id, err); return; }
    bk_grp_member_t *m = &g->members[self];
    grp_member_seen(m, now_ms);
    bool same = protocols_match(m, req);
    if (g->state == BK_GRP_COMPLETING_REBALANCE && same) {
        join_answer(g, m, req->token, grp_is_leader(g, m), out);
        return;
    }
    if (g->state == BK_GRP_STABLE && same && !grp_is_leader(g, m)) {
        join_answer(g, m, req->token, false, out);
        return;
    }
    assert(g->state != BK_GRP_EMPTY && g->state != BK_GRP_DEAD);
    member_update(m, req);
    await_join(m, req->token, out);
    rebalance(c, g, now_ms, out);
}

static int16_t join_check(const bk_grp_coord_t *c, const bk_grp_join_t *req) {
    int16_t err = bk_grp_owner_error(c, req->group_id);
    if (err) return err;
    if (!req->group_id.p || req->group_id.len == 0) return KP_ERROR_INVALID_GROUP_ID;
    if (req->session_timeout_ms < c->cfg.min_session_timeout_ms ||
        req->session_timeout_ms > c->cfg.max_session_timeout_ms)
        return KP_ERROR_INVALID_SESSION_TIMEOUT;
    if (req->rebalance_timeout_ms <= 0 || req->nprotocols > BK_GRP_PROTOCOLS_MAX)
        return KP_ERROR_INVALID_REQUEST;
    for (size_t k = 0; k < req->nprotocols; k++)
        if (!req->protocols[k].name.p) return KP_ERROR_INVALID_REQUEST;
    return KP_ERROR_NONE;
}

void bk_grp_join(bk_grp_coord_t *c, const bk_grp_join_t *req, int64_t now_ms, bk_grp_out_t *out) {
    int16_t err = join_check(c, req);
    if (err) { out_join_error(out, req->token, req->member_id, err); return; }
    bool unknown = !req->member_id.p || req->member_id.len == 0;
    bk_grp_t *g = grp_get(c, req->group_id);
    bool created = false;
    if (!g && !unknown) { out_join_error(out, req->token, req->member_id, KP_ERROR_UNKNOWN_MEMBER_ID); return; }
    if (!g) {
        g = grp_create(c, req->group_id, now_ms);
        created = true;
        if (!g) { out_join_error(out, req->token, req->member_id, KP_ERROR_COORDINATOR_NOT_AVAILABLE); return; }
    }
    if (g->cg) {
        /* a consumer group takes classic members only once empty, and only
         * when group.consumer.migration.policy allows the downgrade */
        bool may = c->cfg.cg_migration == BK_GRP_CG_MIGRATE_DOWNGRADE ||
                   c->cfg.cg_migration == BK_GRP_CG_MIGRATE_BIDIRECTIONAL;
        if (g->cg->nmembers > 0 || !may) {
            out_join_error(out, req->token, req->member_id, KP_ERROR_INCONSISTENT_GROUP_PROTOCOL);
            return;
        }
        cg_drop(g, out);   /* its records go; committed offsets stay */
        g->state = BK_GRP_EMPTY;
    }
    ptrdiff_t self = unknown ? -1 : grp_member_idx(g, req->member_id);
    if (!supports_protocols(g, req, self)) {
        out_join_error(out, req->token, req->member_id, KP_ERROR_INCONSISTENT_GROUP_PROTOCOL);
        if (created) grp_destroy(c, g);
        return;
    }
    if (unknown) join_new(c, g, req, now_ms, out);
    else join_known(c, g, req, self, now_ms, out);
}

/* ---- SyncGroup -------------------------------------------------------------- */

static void sync_answer(const bk_grp_t *g, const bk_grp_member_t *m, uint64_t token,
                        bk_grp_out_t *out) {
    bk_grp_resp_t *r = out_resp(out, BK_GRP_RESP_SYNC, token);
    r->generation = g->generation;
    r->protocol_type = out_copy(out, gs_slice(&g->protocol_type));
    r->protocol = out_copy(out, gs_slice(&g->protocol));
    r->assignment = out_copy(out, gs_slice(&m->assignment));
}

static int16_t sync_check(const bk_grp_coord_t *c, const bk_grp_t *g, const bk_grp_sync_t *req,
                          ptrdiff_t *idx) {
    int16_t err = bk_grp_owner_error(c, req->group_id);
    if (err) return err;
    if (!g) return KP_ERROR_UNKNOWN_MEMBER_ID;
    if (grp_fenced(g, req->member_id, req->instance_id)) return KP_ERROR_FENCED_INSTANCE_ID;
    *idx = grp_member_idx(g, req->member_id);
    if (*idx < 0) return KP_ERROR_UNKNOWN_MEMBER_ID;
    if (req->generation != g->generation) return KP_ERROR_ILLEGAL_GENERATION;
    if ((req->protocol_type.p && !gs_eq(&g->protocol_type, req->protocol_type)) ||
        (req->protocol.p && !gs_eq(&g->protocol, req->protocol)))
        return KP_ERROR_INCONSISTENT_GROUP_PROTOCOL;
    if (g->state == BK_GRP_PREPARING_REBALANCE) return KP_ERROR_REBALANCE_IN_PROGRESS;
    if (g->state != BK_GRP_COMPLETING_REBALANCE && g->state != BK_GRP_STABLE)
        return KP_ERROR_UNKNOWN_MEMBER_ID;
    return KP_ERROR_NONE;
}

/* The leader's assignment ends the rebalance: members it leaves out get an
 * empty assignment, ids it names that are not members are ignored. */
static void sync_leader(bk_grp_t *g, const bk_grp_sync_t *req, int64_t now_ms, bk_grp_out_t *out) {
    for (size_t i = 0; i < g->nmembers; i++) gs_set(&g->members[i].assignment, kp_slice_cstr(""));
    for (size_t k = 0; k < req->nassignments; k++) {
        ptrdiff_t i = grp_member_idx(g, req->assignments[k].member_id);
        kp_bytes_t a = req->assignments[k].assignment;
        if (i >= 0) gs_set(&g->members[i].assignment, a.p ? a : kp_slice_cstr(""));
    }
    grp_set_state(g, BK_GRP_STABLE, now_ms);
    rec_group(out, g);
    for (size_t i = 0; i < g->nmembers; i++) {
        bk_grp_member_t *m = &g->members[i];
        if (!m->awaiting_sync) continue;
        m->awaiting_sync = false;
        /* Kafka's propagateAssignment: the session restarts with the
         * answer (the member could not heartbeat while its sync was held;
         * bk_grp_answer_lost takes this back if the answer is lost) */
        m->heartbeat_ms = now_ms;
        sync_answer(g, m, m->sync_token, out);
    }
}

void bk_grp_sync(bk_grp_coord_t *c, const bk_grp_sync_t *req, int64_t now_ms, bk_grp_out_t *out) {
    bk_grp_t *g = grp_get(c, req->group_id);
    ptrdiff_t idx = -1;
    int16_t err = sync_check(c, g, req, &idx);
    if (err) { out_sync_error(out, req->token, err); return; }
    bk_grp_member_t *m = &g->members[idx];
    grp_member_seen(m, now_ms);
    if (g->state == BK_GRP_STABLE) { sync_answer(g, m, req->token, out); return; }
    if (m->awaiting_sync) out_sync_error(out, m->sync_token, KP_ERROR_REBALANCE_IN_PROGRESS);
    m->awaiting_sync = true;
    m->sync_token = req->token;
    if (grp_is_leader(g, m)) sync_leader(g, req, now_ms, out);
}

/* ---- Heartbeat and LeaveGroup ------------------------------------------------- */

int16_t bk_grp_heartbeat(bk_grp_coord_t *c, kp_str_t group_id, kp_str_t member_id,
                         kp_str_t instance_id, int32_t generation, int64_t now_ms) {
    int16_t err = bk_grp_owner_error(c, group_id);
    if (err) return err;
    bk_grp_t *g = grp_get(c, group_id);
    if (!g) return KP_ERROR_UNKNOWN_MEMBER_ID;
    if (grp_fenced(g, member_id, instance_id)) return KP_ERROR_FENCED_INSTANCE_ID;
    ptrdiff_t i = grp_member_idx(g, member_id);
    if (i < 0 || g->state == BK_GRP_EMPTY) return KP_ERROR_UNKNOWN_MEMBER_ID;
    if (generation != g->generation) return KP_ERROR_ILLEGAL_GENERATION;
    grp_member_seen(&g->members[i], now_ms);
    return g->state == BK_GRP_PREPARING_REBALANCE ? KP_ERROR_REBALANCE_IN_PROGRESS : KP_ERROR_NONE;
}

static int16_t leave_one(bk_grp_coord_t *c, bk_grp_t *g, const bk_grp_leave_in_t *x,
                         int64_t now_ms, bk_grp_out_t *out) {
    bool no_id = !x->member_id.p || x->member_id.len == 0;
    ptrdiff_t i;
    if (x->instance_id.p) {
        i = grp_static_idx(g, x->instance_id);
        if (i < 0) return KP_ERROR_UNKNOWN_MEMBER_ID;
        if (!no_id && !gs_eq(&g->members[i].member_id, x->member_id))
            return KP_ERROR_FENCED_INSTANCE_ID;
    } else {
        ptrdiff_t p = grp_pending_idx(g, x->member_id);
        if (p >= 0) {
            grp_pending_del(g, (size_t)p);
            maybe_complete_join(c, g, now_ms, out);
            return KP_ERROR_NONE;
        }
        i = grp_member_idx(g, x->member_id);
        if (i < 0) return KP_ERROR_UNKNOWN_MEMBER_ID;
    }
    grp_remove_member(c, g, (size_t)i, KP_ERROR_UNKNOWN_MEMBER_ID, now_ms, out);
    return KP_ERROR_NONE;
}

int16_t bk_grp_leave(bk_grp_coord_t *c, kp_str_t group_id, const bk_grp_leave_in_t *members,
                     size_t n, int64_t now_ms, bk_grp_out_t *out, int16_t *errors) {
    int16_t err = bk_grp_owner_error(c, group_id);
    if (err) return err;
    bk_grp_t *g = grp_get(c, group_id);
    for (size_t k = 0; k < n; k++)
        errors[k] = g ? leave_one(c, g, &members[k], now_ms, out) : KP_ERROR_UNKNOWN_MEMBER_ID;
    return KP_ERROR_NONE;
}

void bk_grp_answer_lost(bk_grp_coord_t *c, uint64_t token) {
    for (size_t k = 0; k < c->ngroups; k++) {
        bk_grp_t *g = c->groups[k];
        for (size_t i = 0; i < g->nmembers; i++) {
            bk_grp_member_t *m = &g->members[i];
            bool join = m->join_token == token && !m->awaiting_join;
            bool sync = m->sync_token == token && !m->awaiting_sync;
            if (!join && !sync) continue;
            /* never later than now: the tick may expire it at once */
            if (m->request_ms < m->heartbeat_ms) m->heartbeat_ms = m->request_ms;
            return;
        }
    }
}

/* ---- timeouts ------------------------------------------------------------------ */

static bool member_expired(const bk_grp_t *g, const bk_grp_member_t *m, int64_t now_ms) {
    if (m->awaiting_join)   /* old members are bounded by the rebalance timeout */
        return m->is_new && m->heartbeat_ms + BK_GRP_NEW_MEMBER_TIMEOUT_MS <= now_ms;
    if (m->awaiting_sync) return false;
    if (g->state == BK_GRP_COMPLETING_REBALANCE && g->join_deadline_ms <= now_ms)
        return true;        /* did not sync within the rebalance timeout */
    return m->heartbeat_ms + m->session_timeout_ms <= now_ms;
}

static void tick_group(bk_grp_coord_t *c, bk_grp_t *g, int64_t now_ms, bk_grp_out_t *out) {
    for (size_t i = g->npending; i-- > 0;) {
        if (g->pending[i].deadline_ms > now_ms) continue;
        grp_pending_del(g, i);
        out->members_expired++;
        maybe_complete_join(c, g, now_ms, out);
    }
    /* Each removal may move the group on, so rescan; bounded by nmembers. */
    for (bool again = true; again;) {
        again = false;
        for (size_t i = 0; i < g->nmembers; i++) {
            if (!member_expired(g, &g->members[i], now_ms)) continue;
            out->members_expired++;
            grp_remove_member(c, g, i, KP_ERROR_UNKNOWN_MEMBER_ID, now_ms, out);
            again = true;
            break;
        }
    }
    if (g->state != BK_GRP_PREPARING_REBALANCE || g->join_deadline_ms > now_ms) return;
    if (g->initial_delay && g->new_member_added && g->initial_remaining_ms > 0) {
        int64_t delay_ms = c->cfg.initial_rebalance_delay_ms;
        if (delay_ms > g->initial_remaining_ms) delay_ms = g->initial_remaining_ms;
        g->initial_remaining_ms -= delay_ms;
        g->new_member_added = false;
        g->join_deadline_ms = now_ms + delay_ms;
        return;
    }
    g->initial_delay = false;
    complete_join(c, g, now_ms, out);
}

void bk_grp_tick(bk_grp_coord_t *c, int64_t now_ms, bk_grp_out_t *out) {
    if (c->loading) return;
    for (size_t k = 0; k < c->ngroups; k++) tick_group(c, c->groups[k], now_ms, out);
}
