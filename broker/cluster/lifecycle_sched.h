/* broker/cluster/lifecycle_sched.h — when this broker's next BrokerRegistration /
 * BrokerHeartbeat round is due (pure: no clock, no I/O; the caller passes
 * now_ms). As in Kafka's BrokerLifecycleManager: the first heartbeat goes
 * right after a registration is acknowledged, and a broker the controller
 * still reports fenced (it has not caught up to its registration offset)
 * heartbeats every BK_CLUSTER_LC_FENCED_HB_MS, not every
 * broker.heartbeat.interval.ms — otherwise a restarted broker stays fenced
 * (its partitions leaderless) for up to two intervals after it restarts.
 * Threading: none (plain data). */
#ifndef SKIFF_BK_LIFECYCLE_SCHED_H
#define SKIFF_BK_LIFECYCLE_SCHED_H

#include <stdbool.h>
#include <stdint.h>

/* Pace of rounds while unregistered or fenced (Kafka: 10 ms while
 * starting; ours is the lifecycle timer's tick). */
#define BK_CLUSTER_LC_FENCED_HB_MS 200

typedef struct {
    bool registered;          /* the controller acknowledged our registration */
    bool fenced;              /* as the controller last reported (true until told otherwise) */
    int64_t last_sent_ms;     /* start of the last round; INT64_MIN: none (due at once) */
} bk_cluster_lc_sched_t;

/* Unregistered and fenced, nothing sent yet. */
void bk_cluster_lc_sched_init(bk_cluster_lc_sched_t *s);
/* True when a new round may start at now_ms (no round being in flight is
 * the caller's business). interval_ms: broker.heartbeat.interval.ms (> 0). */
bool bk_cluster_lc_sched_due(const bk_cluster_lc_sched_t *s, int64_t now_ms, int64_t interval_ms);
/* A round starts at now_ms. */
void bk_cluster_lc_sched_sent(bk_cluster_lc_sched_t *s, int64_t now_ms);
/* The controller acknowledged our registration: fenced until a heartbeat
 * says otherwise, and the first heartbeat is due at once. */
void bk_cluster_lc_sched_registered(bk_cluster_lc_sched_t *s);
/* A heartbeat answer without error: is_fenced as the controller says. */
void bk_cluster_lc_sched_heartbeat_ok(bk_cluster_lc_sched_t *s, bool is_fenced);
/* The controller no longer knows our epoch (STALE_BROKER_EPOCH /
 * BROKER_ID_NOT_REGISTERED): register again, at once. */
void bk_cluster_lc_sched_unregistered(bk_cluster_lc_sched_t *s);
/* The round in flight was abandoned (controller changed): the next one is
 * due at once. */
void bk_cluster_lc_sched_retry_now(bk_cluster_lc_sched_t *s);

#endif
