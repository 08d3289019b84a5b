/* ctrl_assign.c — replica assignment for new partitions.
 *
 * The usable brokers are put in one list: sorted by id, or, when brokers sit
 * in more than one rack, interleaved across racks (first broker of each rack,
 * then the second of each, ...) so that neighbours in the list are in
 * different racks. Partition i gets its leader at list[(start + i) % n]
 * (leaders round-robin from a random start, so leaders spread evenly); its
 * j-th follower is looked for at (leader + 1 + (shift + j - 1) % (n - 1)) % n,
 * where `shift` starts random and grows by one every n partitions so that
 * followers of a broker's partitions spread over the other brokers. This is
 * the scheme Kafka's original assignment uses. Rack awareness: if the looked-
 * for broker's rack already holds a replica of the partition while some rack
 * holds none, the next broker in the list that fixes that is taken instead.
 * Cost O(partitions x rf x brokers) in the worst case.
 */
#include "broker/meta/controller.h"
#include "broker/meta/ctrl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_errors.h"

typedef struct {
    int32_t id;
    const char *rack;               /* "" = none */
} slot_t;

static int cmp_rack_id(const void *a, const void *b) {
    const slot_t *x = a, *y = b;
    int r = strcmp(x->rack, y->rack);
    if (r) return r;
    return (x->id > y->id) - (x->id < y->id);
}

/* Fills list[] (usable brokers, rack-interleaved) and returns the rack count. */
static size_t broker_list(const bk_meta_image_t *img, slot_t *list, size_t *n) {
    slot_t sorted[BK_META_BROKERS_MAX];
    size_t m = 0;
    for (size_t i = 0; i < img->nbrokers; i++) {
        const bk_meta_broker_t *b = &img->brokers[i];
        if (b->fenced || b->in_controlled_shutdown) continue;
        sorted[m].id = b->id;
        sorted[m].rack = b->rack ? b->rack : "";
        m++;
    }
    qsort(sorted, m, sizeof sorted[0], cmp_rack_id);
    /* rack groups: start index and length of each */
    size_t start[BK_META_BROKERS_MAX], len[BK_META_BROKERS_MAX], nracks = 0, maxlen = 0;
    for (size_t i = 0; i < m; i++) {
        if (i == 0 || strcmp(sorted[i].rack, sorted[i - 1].rack) != 0) {
            start[nracks] = i;
            len[nracks++] = 0;
        }
        len[nracks - 1]++;
        if (len[nracks - 1] > maxlen) maxlen = len[nracks - 1];
    }
    *n = 0;
    for (size_t round = 0; round < maxlen; round++)
        for (size_t r = 0; r < nracks; r++)
            if (round < len[r]) list[(*n)++] = sorted[start[r] + round];
    return nracks;
}

static bool rack_used(const slot_t *list, size_t n, const bk_meta_ids_t *chosen, const char *rack) {
    for (int32_t i = 0; i < chosen->n; i++)
        for (size_t k = 0; k < n; k++)
            if (list[k].id == chosen->v[i] && strcmp(list[k].rack, rack) == 0) return true;
    return false;
}

static size_t racks_covered(const slot_t *list, size_t n, const bk_meta_ids_t *chosen) {
    size_t covered = 0;
    for (int32_t i = 0; i < chosen->n; i++) {
        const char *rack = "";
        for (size_t k = 0; k < n; k++)
            if (list[k].id == chosen->v[i]) rack = list[k].rack;
        bool seen = false;
        for (int32_t j = 0; j < i && !seen; j++)
            for (size_t k = 0; k < n; k++)
                if (list[k].id == chosen->v[j] && strcmp(list[k].rack, rack) == 0) seen = true;
        if (!seen) covered++;
    }
    return covered;
}

static int32_t pick_follower(const slot_t *list, size_t n, size_t nracks, size_t want,
                             const bk_meta_ids_t *chosen) {
    bool need_new_rack = racks_covered(list, n, chosen) < nracks;
    for (size_t k = 0; k < n; k++) {
        const slot_t *s = &list[(want + k) % n];
        if (bk_meta_ids_has(chosen, s->id)) continue;
        if (need_new_rack && rack_used(list, n, chosen, s->rack)) continue;
        return s->id;
    }
    for (size_t k = 0; k < n; k++) {       /* racks exhausted: any broker not chosen */
        const slot_t *s = &list[(want + k) % n];
        if (!bk_meta_ids_has(chosen, s->id)) return s->id;
    }
    return -1;
}

int16_t ctrl_assign(bk_meta_ctrl_t *c, const bk_meta_image_t *img, int32_t first, int32_t nparts,
                    int32_t rf, bk_meta_ids_t *out, char *msg, size_t msglen) {
    slot_t list[BK_META_BROKERS_MAX];
    size_t n;
    size_t nracks = broker_list(img, list, &n);
    if (rf < 1 || rf > BK_META_REPLICAS_MAX || (size_t)rf > n) {
        snprintf(msg, msglen, "Replication factor: %d larger than available brokers: %zu.",
                 (int)rf, n);
        return KP_ERROR_INVALID_REPLICATION_FACTOR;
    }
    size_t start = (size_t)(ctrl_rand(c) % n);
    size_t shift = (size_t)(ctrl_rand(c) % n);
    for (int32_t i = 0; i < nparts; i++) {
        size_t p = (size_t)first + (size_t)i;
        if (i > 0 && p % n == 0) shift++;
        size_t lead = (p + start) % n;
        bk_meta_ids_t *r = &out[i];
        r->n = 0;
        bk_meta_ids_add(r, list[lead].id);
        for (int32_t j = 1; j < rf; j++) {
            size_t want = (lead + 1 + (shift + (size_t)j - 1) % (n - 1)) % n;
            int32_t id = pick_follower(list, n, nracks, want, r);
            if (id < 0) return KP_ERROR_INVALID_REPLICATION_FACTOR;
            bk_meta_ids_add(r, id);
        }
    }
    return KP_ERROR_NONE;
}
