/* broker/cluster/lifecycle_sched.c — broker lifecycle round pacing (see
 * lifecycle_sched.h). */
#include "broker/cluster/lifecycle_sched.h"

#include <assert.h>

void bk_cluster_lc_sched_init(bk_cluster_lc_sched_t *s) {
    s->registered = false;
    s->fenced = true;
    s->last_sent_ms = INT64_MIN;
}

bool bk_cluster_lc_sched_due(const bk_cluster_lc_sched_t *s, int64_t now_ms, int64_t interval_ms) {
    assert(interval_ms > 0);
    if (s->last_sent_ms == INT64_MIN || !s->registered) return true;
    int64_t pace_ms = s->fenced && interval_ms > BK_CLUSTER_LC_FENCED_HB_MS ? BK_CLUSTER_LC_FENCED_HB_MS : interval_ms;
    return now_ms - s->last_sent_ms >= pace_ms;
}

void bk_cluster_lc_sched_sent(bk_cluster_lc_sched_t *s, int64_t now_ms) { s->last_sent_ms = now_ms; }

void bk_cluster_lc_sched_registered(bk_cluster_lc_sched_t *s) {
    s->registered = true;
    s->fenced = true;
    s->last_sent_ms = INT64_MIN;
}

void bk_cluster_lc_sched_heartbeat_ok(bk_cluster_lc_sched_t *s, bool is_fenced) { s->fenced = is_fenced; }

void bk_cluster_lc_sched_unregistered(bk_cluster_lc_sched_t *s) {
    s->registered = false;
    s->fenced = true;
    s->last_sent_ms = INT64_MIN;
}

void bk_cluster_lc_sched_retry_now(bk_cluster_lc_sched_t *s) { s->last_sent_ms = INT64_MIN; }
