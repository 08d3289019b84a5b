/* ctrl_limits.c — the replicas-per-node limit (issue 16 finding 4).
 *
 * Every partition replica a node hosts holds at least one file descriptor
 * (its active segment's .log; rolled segments hold one each too), so one
 * CreateTopics of 15,000 partitions exhausted RLIMIT_NOFILE: accept, produce
 * and fetch failed and thousands of partitions stayed offline. The
 * controller refuses topic creation and partition increases that would put
 * more replicas on a broker than cfg.max_replicas_per_node, with
 * POLICY_VIOLATION naming the broker and the limit. Cost: one walk over the
 * image's partitions per request (requests that create partitions are rare
 * next to the partition work they cause); not kept incrementally, which
 * would need the image to maintain per-broker counts on every change.
 *
 * The limit is the controller's own (its config or its fd limit) applied to
 * every broker: brokers do not report their fd limit in their registration,
 * so a cluster's nodes are expected to share one (or set
 * max.replicas.per.node explicitly to the smallest node's value). */
#include "broker/meta/controller.h"
#include "broker/meta/ctrl_internal.h"

#include <stdio.h>

#include "protocol/kp_errors.h"

int32_t bk_meta_ctrl_replicas_for_fds(uint64_t nofile) {
    /* fds for everything that is not a partition: listeners, connections,
     * the metadata log, worker pipes, checkpoints being written */
    uint64_t reserve = nofile / 4 < BK_META_FD_RESERVE_MAX ? nofile / 4 : BK_META_FD_RESERVE_MAX;
    uint64_t n = (nofile - reserve) / BK_META_FDS_PER_REPLICA;
    return n > INT32_MAX ? INT32_MAX : (int32_t)n;
}

static int64_t *slot(ctrl_load_t *l, int32_t broker) {
    for (size_t i = 0; i < l->count; i++)
        if (l->id[i] == broker) return &l->n[i];
    if (l->count == BK_META_BROKERS_MAX) return NULL;   /* more ids than brokers: not counted */
    l->id[l->count] = broker;
    l->n[l->count] = 0;
    return &l->n[l->count++];
}

void ctrl_load_init(ctrl_load_t *l, const bk_meta_image_t *img) {
    l->count = 0;
    for (size_t t = 0; t < img->ntopics; t++) {
        const bk_meta_topic_t *tp = img->by_name[t];
        for (int32_t p = 0; p < tp->nparts; p++) ctrl_load_add(l, &tp->parts[p].replicas, 1);
    }
}

void ctrl_load_add(ctrl_load_t *l, const bk_meta_ids_t *reps, int32_t n) {
    for (int32_t p = 0; p < n; p++)
        for (int32_t r = 0; r < reps[p].n; r++) {
            int64_t *c = slot(l, reps[p].v[r]);
            if (c) (*c)++;
        }
}

int16_t ctrl_load_check(const bk_meta_ctrl_t *c, const ctrl_load_t *l, const bk_meta_ids_t *reps, int32_t n,
                        char *msg, size_t msglen) {
    int32_t max = c->cfg.max_replicas_per_node;
    if (max < 0) return KP_ERROR_NONE;
    ctrl_load_t after = *l;
    ctrl_load_add(&after, reps, n);
    for (size_t i = 0; i < after.count; i++) {
        int64_t added = after.n[i] - (i < l->count ? l->n[i] : 0);
        if (added > 0 && after.n[i] > max) {
            snprintf(msg, msglen, "This would place %lld partition replicas on broker %d, above its limit of %d "
                                  "(max.replicas.per.node; by default derived from the open-file limit)",
                     (long long)after.n[i], (int)after.id[i], (int)max);
            return KP_ERROR_POLICY_VIOLATION;
        }
    }
    return KP_ERROR_NONE;
}
