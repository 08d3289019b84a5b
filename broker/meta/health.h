/* broker/meta/health.h — the cluster health verdict of GET /v1/health, as a pure
 * function of a metadata image (no node, no clock), so that it can be tested
 * without processes.
 *
 * A broker that should exist but is not registered counts as down: right
 * after start every node's image is empty until the registrations commit,
 * and "no fenced broker" alone then read as healthy while the controller
 * had no broker to place a replica on (issue 5: CreateTopics RF 3 refused
 * with "available brokers: 0" after every node said healthy).
 */
#ifndef SKIFF_BK_HEALTH_H
#define SKIFF_BK_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/meta/image.h"

#define BK_META_HEALTH_DOWN_LIST_MAX 64      /* ids listed in down[]; ndown counts all */

typedef struct {
    bool healthy;
    bool no_controller;                 /* controller_id < 0 */
    size_t ndown;                       /* fenced or expected-but-unregistered brokers */
    int32_t down[BK_META_HEALTH_DOWN_LIST_MAX];   /* the first of them, ascending ids */
    size_t ndown_listed;
    size_t leaderless;                  /* partitions without a leader */
    size_t under;                       /* led partitions with ISR < replicas */
} bk_meta_health_t;

/* Judges img: healthy when a controller is known (controller_id >= 0), every
 * id in expected[0..nexpected) is registered, no registered broker is
 * fenced, and every partition has a leader and a full ISR. expected may hold
 * repeats and may be NULL when nexpected is 0 (the node passes its quorum
 * voters and itself: every node of a quorum registers as a broker). Fills
 * *out; reads img only. Cost O(brokers x expected + partitions). */
void bk_meta_health_judge(const bk_meta_image_t *img, int32_t controller_id, const int32_t *expected,
                     size_t nexpected, bk_meta_health_t *out);

#endif
