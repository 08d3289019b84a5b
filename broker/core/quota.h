/* broker/core/quota.h — client quota enforcement: what each (user,
 * client-id) used, and how long it must be throttled (issue 18).
 *
 * The limits come from the image's client quotas (ClientQuota records,
 * meta/image.h) with Kafka's precedence (bk_meta_image_quota_for). As in
 * Kafka's default quota callback, the use is kept per quota entity as it
 * applies to the connection: a (user, client-id) or user quota is shared
 * by every client of that user / pair, and a default entity gives each
 * user (client-id) its own allowance of the default's size.
 *
 * Measure: a credit per (key, entity) that refills at the quota's rate up
 * to `burst_ms` worth (quota.window.size.seconds) and is spent by what the
 * requests use; in debt, the throttle time is debt / rate — the time the
 * credit needs to be back at zero — capped at `throttle_max_ms`
 * (quota.window.num x quota.window.size.seconds; the rest of the debt
 * throttles the next requests) (Kafka's token bucket of KIP-599; Kafka's
 * byte-rate quotas use a sampled rate over quota.window.num windows
 * instead, which allows longer bursts; the long-run rate is the same).
 *
 * Pure: no I/O and no clock (the caller passes now_ms), one thread (the
 * loop). Bounded: at most BK_NODE_QUOTA_USES_MAX entries; when full, the
 * entries whose credit has refilled (they hold no state a fresh one would
 * not) are dropped by a sweep of the table, at most once per
 * BK_NODE_QUOTA_FULL_SWEEP_MS; if none can be (or the last sweep is more
 * recent), the use is not tracked (not throttled) and counted in
 * `untracked` (skiff_quota_untracked_total). */
#ifndef SKIFF_BK_NODE_QUOTA_H
#define SKIFF_BK_NODE_QUOTA_H

#include <stddef.h>
#include <stdint.h>

#include "broker/meta/image.h"

#define BK_NODE_QUOTA_USES_MAX 65536
#define BK_NODE_QUOTA_FULL_SWEEP_MS 1000   /* at most one sweep of a full table per this */

typedef struct bk_node_quotas bk_node_quotas_t;

/* One tracked use (what /metrics shows per entity). */
typedef struct {
    int key;                    /* bk_meta_quota_key_t */
    const char *user;           /* the entity's user part ("" when none) */
    const char *client;         /* its client-id part ("" when none) */
    double limit;               /* per second: bytes, ms of loop time (request_percentage x 10) */
    double used_total;          /* recorded since tracking began */
    uint64_t throttled;         /* requests answered with a throttle time */
    uint64_t throttle_ms_total;
} bk_node_quota_use_t;

/* burst_ms >= 1, throttle_max_ms >= 1; NULL when out of memory. */
bk_node_quotas_t *bk_node_quotas_new(int64_t burst_ms, int64_t throttle_max_ms);
void bk_node_quotas_free(bk_node_quotas_t *q);

/* Records `amount` of quota key `k` (bytes for the byte rates, ms of loop
 * time for request_percentage, whose n % allow n * 10 ms per second) used at now_ms by a client of
 * `principal` ("User:NAME"; the user name is the part after "User:") and
 * `client_id`, against `img`'s quotas. Returns the throttle time in ms: 0
 * when there is no quota or the use is within it. */
int64_t bk_node_quota_record(bk_node_quotas_t *q, const bk_meta_image_t *img, const char *principal,
                             const char *client_id, int k, double amount, int64_t now_ms);
/* The same for the request header's client id as it arrived (any length,
 * NULs included): ids are compared whole, as Kafka does. An id that can
 * be an entity's name (<= BK_META_QUOTA_NAME_MAX bytes, no NUL) is keyed
 * and matched by itself; any other matches only the default client-id
 * entity and is keyed by the SHA-256 of all its bytes (an entry stays
 * bounded whatever the id's length), shown in /metrics as
 * "<its first 64 bytes>...sha256:<hex>". bk_node_quota_record is this
 * with the C string's bytes. */
int64_t bk_node_quota_record_id(bk_node_quotas_t *q, const bk_meta_image_t *img, const char *principal,
                                kp_str_t client_id, int k, double amount, int64_t now_ms);

/* Calls fn for every tracked use (the order is unspecified). */
void bk_node_quotas_each(const bk_node_quotas_t *q, void (*fn)(void *arg, const bk_node_quota_use_t *u),
                         void *arg);
uint64_t bk_node_quotas_untracked(const bk_node_quotas_t *q);

#endif
