/* broker/group/group_wait.c — group answers that wait until their records in
 * __consumer_offsets are replicated (see "requests" in group_driver.h).
 *
 * An answer is delivered at once when nothing it needs is unreplicated (one
 * replica: always), without a copy. Otherwise its result is copied (the
 * core's pointers and the caller's request are valid only now) and kept
 * with what it needs: for each coordinator partition it touches, the end of
 * the records appended there so far. It is delivered when every such HW has
 * reached its need: on the acks=all completion of an append (all waiters of
 * that partition are checked) or on the driver's 100 ms tick (waits after a
 * load have no append of their own). Cost: a linear scan of the waiters per
 * completion; they are few (one per in-flight group request), bounded by
 * BK_GRP_GD_HELD_MAX. Order among waiters is kept. */
#include "broker/group/group_driver_int.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_errors.h"

/* A copied result: everything res points to lives in the same allocation,
 * right after the struct (sized exactly: many commits may wait at once). */
struct gd_answer {
    bk_grp_gd_done_fn done;
    void *arg;
    bk_grp_gd_result_t res;
};

#define ALIGN_BYTES 16
static const uint8_t empty_bytes[1];     /* where copied empty (not null) slices point */

static size_t al(size_t n) { return (n + ALIGN_BYTES - 1) & ~(size_t)(ALIGN_BYTES - 1); }

/* Bytes of res's copy after the struct. */
static size_t copy_bytes(const bk_grp_gd_result_t *res) {
    size_t n = al(res->nerrors * sizeof *res->errors);
    if (res->cg_hb)
        n += al(sizeof *res->cg_hb) + al(res->cg_hb->member_id.len) +
             al(res->cg_hb->nassignment * sizeof *res->cg_hb->assignment);
    const bk_grp_resp_t *r = res->resp;
    if (!r) return n;
    n += al(sizeof *r) + al(r->protocol_type.len) + al(r->protocol.len) + al(r->leader.len) + al(r->member_id.len) +
         al(r->assignment.len) + al(r->nmembers * sizeof *r->members);
    for (size_t i = 0; i < r->nmembers; i++)
        n += al(r->members[i].member_id.len) + al(r->members[i].instance_id.len) + al(r->members[i].metadata.len);
    return n;
}

typedef struct {
    uint8_t *p, *end;
} bump_t;

static void *bump(bump_t *b, size_t n) {
    void *at = b->p;
    b->p += al(n);
    assert(b->p <= b->end);   /* copy_bytes counted exactly this */
    return at;
}

/* *s copied into b (null stays null, empty stays empty). */
static void copy_slice(bump_t *b, kp_slice_t *s) {
    if (!s->p) return;
    if (s->len == 0) { s->p = empty_bytes; return; }
    uint8_t *p = bump(b, s->len);
    memcpy(p, s->p, s->len);
    s->p = p;
}

static const bk_grp_resp_t *copy_resp(bump_t *b, const bk_grp_resp_t *in) {
    bk_grp_resp_t *r = bump(b, sizeof *r);
    *r = *in;
    copy_slice(b, &r->protocol_type);
    copy_slice(b, &r->protocol);
    copy_slice(b, &r->leader);
    copy_slice(b, &r->member_id);
    copy_slice(b, &r->assignment);
    r->members = in->nmembers ? bump(b, in->nmembers * sizeof *r->members) : NULL;
    for (size_t i = 0; i < in->nmembers; i++) {
        r->members[i] = in->members[i];
        copy_slice(b, &r->members[i].member_id);
        copy_slice(b, &r->members[i].instance_id);
        copy_slice(b, &r->members[i].metadata);
    }
    return r;
}

/* A copy of res that outlives the call, or NULL (out of memory). Only what
 * the writing requests fill is copied: reads never wait. */
static gd_answer_t *answer_new(const bk_grp_gd_result_t *res, bk_grp_gd_done_fn done, void *arg) {
    assert(res->groups == NULL && res->ngroups == 0);
    assert(res->fetched == NULL && res->nfetched == 0);
    size_t head = al(sizeof(gd_answer_t)), body = copy_bytes(res);
    gd_answer_t *ans = malloc(head + body);
    if (!ans) return NULL;
    bump_t b = { (uint8_t *)ans + head, (uint8_t *)ans + head + body };
    ans->done = done;
    ans->arg = arg;
    ans->res = (bk_grp_gd_result_t){ .error = res->error, .nerrors = res->nerrors };
    if (res->nerrors > 0) {
        int16_t *e = bump(&b, res->nerrors * sizeof *e);
        memcpy(e, res->errors, res->nerrors * sizeof *e);
        ans->res.errors = e;
    }
    if (res->resp) ans->res.resp = copy_resp(&b, res->resp);
    if (res->cg_hb) {
        bk_grp_cg_hb_resp_t *h = bump(&b, sizeof *h);
        *h = *res->cg_hb;
        copy_slice(&b, &h->member_id);
        if (h->nassignment > 0) {
            bk_grp_cg_tp_t *v = bump(&b, h->nassignment * sizeof *v);
            memcpy(v, res->cg_hb->assignment, h->nassignment * sizeof *v);
            h->assignment = v;
        }
        ans->res.cg_hb = h;
    }
    assert(b.p == b.end);
    return ans;
}

/* Calls the caller back (unsent: why the answer must not leave) and frees ans. */
static void answer_deliver(gd_answer_t *ans, const char *unsent) {
    ans->res.unsent = unsent;
    ans->done(ans->arg, &ans->res);
    free(ans);
}

static bool involves(const waiter_t *w, int32_t partition, int64_t end) {
    for (size_t k = 0; k < w->nneeds; k++)
        if ((partition < 0 || w->needs[k].partition == partition) && (end < 0 || w->needs[k].end <= end)) return true;
    return false;
}

static bool satisfied(bk_grp_gd_t *gd, const waiter_t *w) {
    for (size_t k = 0; k < w->nneeds; k++)
        if (bk_gd_hw_of(gd, w->needs[k].partition) < w->needs[k].end) return false;
    return true;
}

static waiter_t take_waiter(bk_grp_gd_t *gd, size_t i) {
    waiter_t w = gd->waiters[i];
    memmove(&gd->waiters[i], &gd->waiters[i + 1], (gd->nwaiters - i - 1) * sizeof w);   /* keep order */
    gd->nwaiters--;
    return w;
}

/* Sends the answers waiting on `partition` that the HWs now cover. */
void bk_gd_release_waiters(bk_grp_gd_t *gd, int32_t partition) {
    for (size_t i = 0; i < gd->nwaiters;) {
        if (!involves(&gd->waiters[i], partition, -1) || !satisfied(gd, &gd->waiters[i])) { i++; continue; }
        waiter_t w = take_waiter(gd, i);
        free(w.needs);
        answer_deliver(w.ans, NULL);
    }
}

/* Fails the answers needing `partition` up to at most `end` (partition <
 * 0: every partition; end < 0: any end): their records may not be
 * replicated, so they are delivered unsent and the caller closes the
 * connection, which makes every client rediscover the coordinator and
 * retry. */
void bk_gd_fail_waiters(bk_grp_gd_t *gd, int32_t partition, int64_t end, int16_t err) {
    for (size_t i = 0; i < gd->nwaiters;) {
        if (!involves(&gd->waiters[i], partition, end)) { i++; continue; }
        waiter_t w = take_waiter(gd, i);
        free(w.needs);
        answer_deliver(w.ans, err == KP_ERROR_NOT_LEADER_OR_FOLLOWER ? "group coordinator moved before its records replicated"
                                                                      : "group records not replicated in time");
    }
}

void bk_gd_on_replicated(void *ctx, void *part_ctx, int16_t err) {
    bk_grp_gd_t *gd = ctx;
    ack_t *ack = part_ctx;
    if (err) {
        fprintf(stderr, "skiff: node %d: %s-%d: group records up to %lld not replicated: %s\n", gd->node->id,
                BK_GRP_GD_TOPIC, ack->partition, (long long)ack->end, kp_error_name(err));
        bk_gd_fail_waiters(gd, ack->partition, ack->end, err);
    } else {
        bk_gd_release_waiters(gd, ack->partition);
    }
    free(ack);
}

void bk_gd_reply(bk_grp_gd_t *gd, const int32_t *parts, size_t nparts, const bk_grp_gd_result_t *res, bk_grp_gd_done_fn done,
                 void *arg) {
    assert(done != NULL && res->unsent == NULL);
    need_t *needs = NULL;
    size_t n = 0;
    const char *unsent = NULL;
    for (size_t g = 0; g < nparts && !gd->stopped; g++) {
        int32_t part = parts[g];
        if (part < 0 || part >= gd->ncoords) continue;
        int64_t need = gd->need_end[part];
        bool dup = false;
        for (size_t k = 0; k < n; k++) dup |= needs[k].partition == part;
        /* need 0: nothing appended there by this node (e.g. a NOT_COORDINATOR
         * answer for a partition led elsewhere, whose HW reads -1 here) */
        if (dup || need <= 0 || need <= bk_gd_hw_of(gd, part)) continue;
        need_t *nv = realloc(needs, (n + 1) * sizeof *nv);
        if (!nv) { unsent = "out of memory"; break; }
        needs = nv;
        needs[n++] = (need_t){ part, need };
    }
    if (!unsent && n == 0) {
        done(arg, res);   /* nothing to wait for: no copy */
        return;
    }
    gd_answer_t *ans = NULL;
    if (!unsent && gd->nwaiters >= BK_GRP_GD_HELD_MAX) unsent = "too many group answers waiting for replication";
    if (!unsent && gd->nwaiters == gd->waiters_cap) {
        size_t ncap = gd->waiters_cap ? gd->waiters_cap * 2 : 64;
        waiter_t *nv = realloc(gd->waiters, ncap * sizeof *nv);
        if (nv) {
            gd->waiters = nv;
            gd->waiters_cap = ncap;
        } else {
            unsent = "out of memory";
        }
    }
    if (!unsent && !(ans = answer_new(res, done, arg))) unsent = "out of memory";
    if (unsent) {
        free(needs);
        bk_grp_gd_result_t failed = *res;
        failed.unsent = unsent;
        done(arg, &failed);
        return;
    }
    gd->waiters[gd->nwaiters++] = (waiter_t){ ans, needs, n };
}

void bk_gd_reply_groups(bk_grp_gd_t *gd, const kp_str_t *group_ids, size_t ngroups, const bk_grp_gd_result_t *res,
                        bk_grp_gd_done_fn done, void *arg) {
    int32_t one = -1;   /* -1: no partition (the -O1 build cannot see it is always set) */
    int32_t *parts = ngroups <= 1 ? &one : malloc(ngroups * sizeof *parts);
    if (!parts) {
        bk_grp_gd_result_t failed = *res;
        failed.unsent = "out of memory";
        done(arg, &failed);
        return;
    }
    size_t n = 0;
    for (size_t g = 0; g < ngroups && gd->ncoords > 0; g++) parts[n++] = bk_grp_partition_for(group_ids[g], gd->ncoords);
    bk_gd_reply(gd, parts, n, res, done, arg);
    if (parts != &one) free(parts);
}

size_t bk_grp_gd_waiting(const bk_grp_gd_t *gd) { return gd ? gd->nwaiters : 0; }

