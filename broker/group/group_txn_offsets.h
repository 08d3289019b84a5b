/* broker/group/group_txn_offsets.h — offsets committed inside transactions
 * (TxnOffsetCommit, KIP-98 / KIP-447), pending until the producer's
 * transaction ends.
 *
 * They are group coordinator state of __consumer_offsets (the group replay
 * rebuilds them, OffsetFetch require_stable reads them), so they live here;
 * the transaction side only reports the marker (bk_grp_gd_txn_complete).
 * The group driver keeps one bk_grp_txn_offsets_t per __consumer_offsets
 * partition it leads. A TxnOffsetCommit adds entries keyed by (producer id,
 * group, topic, partition); a later one of the same producer for the same
 * key replaces it. The COMMIT/ABORT marker the transaction coordinator
 * writes to that partition completes them: commit hands each to the group
 * side (which makes it visible unless a commit appended later to the log
 * already superseded it: compare record_offset), abort drops them. Pure:
 * no I/O, no clock; independent of the group core. */
#ifndef SKIFF_BK_GROUP_TXN_OFFSETS_H
#define SKIFF_BK_GROUP_TXN_OFFSETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"

#define BK_GRP_TXN_OFFSETS_MAX ((size_t)1 << 20)   /* pending offsets per offsets partition */
#define BK_GRP_TXN_GROUP_MAX_BYTES 32767           /* a group id is a STRING */
#define BK_GRP_TXN_TOPIC_MAX_BYTES 249             /* a topic name */

typedef struct {
    int64_t producer_id;
    char *group;                 /* owned */
    char *topic;                 /* owned */
    int32_t partition;
    int64_t offset;
    int32_t leader_epoch;        /* -1 = unknown */
    char *metadata;              /* owned, NULL = null */
    int64_t commit_ts_ms;
    int64_t record_offset;       /* offset of its record in __consumer_offsets */
} bk_grp_txn_pending_t;

typedef struct {
    bk_grp_txn_pending_t *v;          /* in arrival order */
    size_t n, cap;
} bk_grp_txn_offsets_t;

void bk_grp_txn_offsets_init(bk_grp_txn_offsets_t *t);
void bk_grp_txn_offsets_free(bk_grp_txn_offsets_t *t);

/* Adds (or replaces) the pending offset of *o's (producer, group, topic,
 * partition); the strings are copied. KP_ERR_NOMEM, KP_ERR_TOO_LARGE (bound),
 * KP_ERR_BAD_VALUE (NULL group/topic, partition < 0). */
KP_MUST_CHECK int bk_grp_txn_offsets_add(bk_grp_txn_offsets_t *t, const bk_grp_txn_pending_t *o);

typedef void (*bk_grp_txn_pending_fn)(void *ctx, const bk_grp_txn_pending_t *o);

/* The producer's transaction ended: commit calls fn for each of its pending
 * offsets (in arrival order; fn may be NULL), abort does not; both drop
 * them. Returns how many there were. */
size_t bk_grp_txn_offsets_complete(bk_grp_txn_offsets_t *t, int64_t producer_id, bool commit, bk_grp_txn_pending_fn fn,
                               void *ctx);

/* Whether some transaction holds a pending offset for (group, topic,
 * partition): OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT
 * then (KIP-447). topic NULL: any partition of the group. */
bool bk_grp_txn_offsets_pending(const bk_grp_txn_offsets_t *t, const char *group, const char *topic, int32_t partition);

/* Whether the producer holds any pending offset here. */
bool bk_grp_txn_offsets_has_producer(const bk_grp_txn_offsets_t *t, int64_t producer_id);

/* Drops every pending offset of a group (group deleted). Returns how many. */
size_t bk_grp_txn_offsets_drop_group(bk_grp_txn_offsets_t *t, const char *group);

#endif
