/* broker/group/group_wait.c — group answers that wait until their records in
 * __consumer_offsets are replicated (see bk_gd_respond in group_driver.h).
 *
 * An answer is encoded at once (its pointers are valid only now) and kept
 * with what it needs: for each coordinator partition it touches, the end of
 * the records appended there so far. It goes out when every such HW has
 * reached its need: on the acks=all completion of an append (all waiters
 * of that partition are checked) or on the driver's 100 ms tick (waits
 * after a load have no append of their own). Cost: a linear scan of the
 * waiters per completion; they are few (one per in-flight group request),
 * bounded by BK_GD_HELD_MAX. Order among waiters is kept. */
#include "broker/group/group_driver_int.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_errors.h"

static bool involves(const waiter_t *w, int32_t partition, int64_t end) {
    for (size_t k = 0; k < w->nneeds; k++)
        if ((partition < 0 || w->needs[k].partition == partition) && (end < 0 || w->needs[k].end <= end)) return true;
    return false;
}

static bool satisfied(bk_gd_t *gd, const waiter_t *w) {
    for (size_t k = 0; k < w->nneeds; k++)
        if (bk_gd_hw_of(gd, w->needs[k].partition) < w->needs[k].end) return false;
    return true;
}

static waiter_t take_waiter(bk_gd_t *gd, size_t i) {
    waiter_t w = gd->waiters[i];
    memmove(&gd->waiters[i], &gd->waiters[i + 1], (gd->nwaiters - i - 1) * sizeof w);   /* keep order */
    gd->nwaiters--;
    return w;
}

/* Sends the answers waiting on `partition` that the HWs now cover. */
void bk_gd_release_waiters(bk_gd_t *gd, int32_t partition) {
    for (size_t i = 0; i < gd->nwaiters;) {
        if (!involves(&gd->waiters[i], partition, -1) || !satisfied(gd, &gd->waiters[i])) { i++; continue; }
        waiter_t w = take_waiter(gd, i);
        free(w.needs);
        bk_req_send(w.req, w.body);
    }
}

/* Closes the connections of answers needing `partition` up to at most
 * `end` (partition < 0: every partition; end < 0: any end): their records
 * may not be replicated, and a closed connection makes every client
 * rediscover the coordinator and retry (the answer's own error fields are
 * already encoded). */
void bk_gd_fail_waiters(bk_gd_t *gd, int32_t partition, int64_t end, int16_t err) {
    for (size_t i = 0; i < gd->nwaiters;) {
        if (!involves(&gd->waiters[i], partition, end)) { i++; continue; }
        waiter_t w = take_waiter(gd, i);
        free(w.needs);
        evbuffer_free(w.body);
        bk_req_close(w.req, err == KP_ERROR_NOT_LEADER_OR_FOLLOWER ? "group coordinator moved before its records replicated"
                                                                   : "group records not replicated in time");
    }
}

void bk_gd_on_replicated(void *ctx, void *part_ctx, int16_t err) {
    bk_gd_t *gd = ctx;
    ack_t *ack = part_ctx;
    if (err) {
        fprintf(stderr, "skiff: node %d: %s-%d: group records up to %lld not replicated: %s\n", gd->node->id,
                BK_GD_TOPIC, ack->partition, (long long)ack->end, kp_error_name(err));
        bk_gd_fail_waiters(gd, ack->partition, ack->end, err);
    } else {
        bk_gd_release_waiters(gd, ack->partition);
    }
    free(ack);
}

void bk_gd_respond_groups(bk_gd_t *gd, const kp_str_t *group_ids, size_t ngroups, bk_req_t *req, const void *resp) {
    struct evbuffer *body = NULL;
    if (bk_req_encode(req, resp, &body) != KP_OK) {
        bk_req_close(req, "group answer could not be encoded");
        return;
    }
    need_t *needs = NULL;
    size_t n = 0;
    for (size_t g = 0; g < ngroups && gd->ncoords > 0 && !gd->stopped; g++) {
        int32_t part = bk_grp_partition_for(group_ids[g], gd->ncoords);
        int64_t need = gd->need_end[part];
        bool dup = false;
        for (size_t k = 0; k < n; k++) dup |= needs[k].partition == part;
        /* need 0: nothing appended there by this node (e.g. a NOT_COORDINATOR
         * answer for a partition led elsewhere, whose HW reads -1 here) */
        if (dup || need <= 0 || need <= bk_gd_hw_of(gd, part)) continue;
        need_t *nv = realloc(needs, (n + 1) * sizeof *nv);
        if (!nv) { n = SIZE_MAX; break; }
        needs = nv;
        needs[n++] = (need_t){ part, need };
    }
    if (n == 0) {
        free(needs);
        bk_req_send(req, body);
        return;
    }
    if (n == SIZE_MAX || gd->nwaiters >= BK_GD_HELD_MAX) goto full;
    if (gd->nwaiters == gd->waiters_cap) {
        size_t ncap = gd->waiters_cap ? gd->waiters_cap * 2 : 64;
        waiter_t *nv = realloc(gd->waiters, ncap * sizeof *nv);
        if (!nv) goto full;
        gd->waiters = nv;
        gd->waiters_cap = ncap;
    }
    gd->waiters[gd->nwaiters++] = (waiter_t){ req, body, needs, n };
    return;
full:
    free(needs);
    evbuffer_free(body);
    bk_req_close(req, "too many group answers waiting for replication");
}

void bk_gd_respond(bk_gd_t *gd, kp_str_t group_id, bk_req_t *req, const void *resp) {
    bk_gd_respond_groups(gd, &group_id, 1, req, resp);
}

size_t bk_gd_waiting(const bk_gd_t *gd) { return gd ? gd->nwaiters : 0; }

