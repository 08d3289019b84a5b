/* group_int.h — private helpers shared by the broker/group_*.c files. Not a public API.
 *
 * Memory: coordinator state is allocated with grp_xalloc/grp_xrealloc, which
 * assert on failure. Decision: the state must never be half-updated (a
 * rebalance touches many members), and a crashed coordinator is rebuilt from
 * __consumer_offsets by the next leader, so out-of-memory here is fatal
 * rather than an error path in every state transition. What clients can make
 * the state hold is bounded (group.max.size, BK_GRP_PROTOCOLS_MAX,
 * BK_GRP_OFFSETS_MAX, BK_GRP_GROUPS_MAX, and Kafka's INT16 string lengths).
 */
#ifndef SKIFF_BK_GROUP_INT_H
#define SKIFF_BK_GROUP_INT_H

#include "broker/group/group.h"
#include "protocol/kp_codec.h"
#include "protocol/kp_errors.h"

void *grp_xalloc(size_t n);
void *grp_xrealloc(void *p, size_t n);
/* Grows *v (elements of `size` bytes, capacity *cap) to hold need elements. */
void grp_reserve(void **v, size_t *cap, size_t need, size_t size);

/* ---- owned strings ---- */
kp_str_t gs_slice(const bk_grp_str_t *s);
bool gs_eq(const bk_grp_str_t *a, kp_str_t b);     /* null == null only */
void gs_set(bk_grp_str_t *d, kp_str_t s);          /* copies; frees the old value */
void gs_free(bk_grp_str_t *s);

/* ---- groups and members ---- */
bk_grp_t *grp_get(bk_grp_coord_t *c, kp_str_t id);
/* A new Empty group; NULL when BK_GRP_GROUPS_MAX groups exist. */
bk_grp_t *grp_create(bk_grp_coord_t *c, kp_str_t id, int64_t now_ms);
void grp_destroy(bk_grp_coord_t *c, bk_grp_t *g);
void grp_set_state(bk_grp_t *g, bk_grp_state_t s, int64_t now_ms);
/* Index of the member, or -1. */
ptrdiff_t grp_member_idx(const bk_grp_t *g, kp_str_t member_id);
ptrdiff_t grp_static_idx(const bk_grp_t *g, kp_str_t instance_id);
ptrdiff_t grp_pending_idx(const bk_grp_t *g, kp_str_t member_id);
void grp_member_free(bk_grp_member_t *m);
/* Removes member i (keeps join order); picks a new leader if it led. */
void grp_member_del(bk_grp_t *g, size_t i);
void grp_pending_del(bk_grp_t *g, size_t i);
bool grp_is_leader(const bk_grp_t *g, const bk_grp_member_t *m);
/* True when the given instance id maps to a member other than member_id. */
bool grp_fenced(const bk_grp_t *g, kp_str_t member_id, kp_str_t instance_id);

/* ---- out ---- */
kp_str_t out_copy(bk_grp_out_t *o, kp_str_t s);
bk_grp_resp_t *out_resp(bk_grp_out_t *o, bk_grp_resp_kind_t kind, uint64_t token);
/* A JoinGroup error answer. */
void out_join_error(bk_grp_out_t *o, uint64_t token, kp_str_t member_id, int16_t err);
void out_sync_error(bk_grp_out_t *o, uint64_t token, int16_t err);

/* ---- records (group_records.c) ---- */
void rec_group(bk_grp_out_t *o, const bk_grp_t *g);
void rec_group_tombstone(bk_grp_out_t *o, kp_str_t group_id);
void rec_offset(bk_grp_out_t *o, kp_str_t group_id, const bk_grp_offset_t *off);
void rec_offset_tombstone(bk_grp_out_t *o, kp_str_t group_id, kp_str_t topic, int32_t partition);

/* ---- rebalance (group_join.c) ---- */
/* Removes member i, answering its pending join/sync with `err`, then moves
 * the group on (rebalance or join completion). */
/* A request from member m at now_ms: its session starts again. */
static inline void grp_member_seen(bk_grp_member_t *m, int64_t now_ms) {
    m->heartbeat_ms = now_ms;
    m->request_ms = now_ms;
}
void grp_remove_member(bk_grp_coord_t *c, bk_grp_t *g, size_t i, int16_t err, int64_t now_ms,
                       bk_grp_out_t *out);

/* ---- records shared with group_cg_records.c ---- */
/* Version prefix + message into out's arena (sticky out->err on failure). */
kp_bytes_t grp_rec_encode(bk_grp_out_t *out, const struct kp_struct_desc *d, int16_t version, const void *msg);
/* Decodes a version-prefixed message wholly (arrays from a). */
int grp_rec_decode(kp_bytes_t in, const struct kp_struct_desc *d, int16_t *version, void *msg, kp_arena_t *a);
void grp_rec_add(bk_grp_out_t *o, kp_bytes_t key, kp_bytes_t value);

/* ---- consumer groups (group_cg*.c) ---- */
/* Frees g->cg (NULL allowed) and sets it NULL. */
void cg_free(bk_grp_t *g);
/* Tombstones of every ConsumerGroup* record of g (members, target,
 * epoch), and g->cg freed: an empty consumer group becoming classic, or
 * deleted. */
void cg_drop(bk_grp_t *g, bk_grp_out_t *out);
/* Loading ended: members' sessions start at now_ms. */
void cg_load_done(bk_grp_coord_t *c, bk_grp_t *g, int64_t now_ms);

/* ---- offsets (group_offsets.c) ---- */
ptrdiff_t grp_offset_idx(const bk_grp_t *g, kp_str_t topic, int32_t partition, size_t *ins);
void grp_offset_del(bk_grp_t *g, size_t i);

#endif
