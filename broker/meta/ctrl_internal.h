/* ctrl_internal.h — helpers shared by the controller files; not a public API. */
#ifndef SKIFF_BK_CTRL_INTERNAL_H
#define SKIFF_BK_CTRL_INTERNAL_H

#include "broker/meta/controller.h"

/* Brokers treated as unusable on top of what the image says (being fenced or
 * shut down by the decision under construction). */
typedef struct {
    const int32_t *ids;
    size_t n;
} gone_t;

/* A PartitionChange under construction; NULL/false fields stay unchanged. */
typedef struct {
    bool has_leader;
    int32_t leader;
    const bk_meta_ids_t *isr;
    const bk_meta_ids_t *replicas;       /* with adding and removing (both non-NULL) */
    const bk_meta_ids_t *adding;
    const bk_meta_ids_t *removing;
} pchange_t;

uint64_t ctrl_rand(bk_meta_ctrl_t *c);
bk_meta_uuid_t ctrl_new_topic_id(bk_meta_ctrl_t *c, const bk_meta_image_t *img);
/* Usable in the image and not in `gone`. */
bool ctrl_alive(const bk_meta_image_t *img, const gone_t *gone, int32_t id);
/* unclean.leader.election.enable for a topic: its config, else the default. */
bool ctrl_unclean(const bk_meta_ctrl_t *c, const bk_meta_image_t *img, const bk_meta_topic_t *t);
/* Leader choice: the first replica (in replica order) in `isr` that is alive;
 * with `unclean`, else the first alive replica, and *isr_out becomes just it.
 * -1 when none. *isr_out starts as a copy of isr. */
int32_t ctrl_elect_from(const bk_meta_image_t *img, const bk_meta_ids_t *replicas, const bk_meta_ids_t *isr,
                        const gone_t *gone, bool unclean, bk_meta_ids_t *isr_out);
/* Record builders (ctrl_emit_*): KP_OK, or the list's error
 * (bk_meta_recs_add). A decision that meets an error stops building and
 * reports nothing as done (no result claims a record that is not in the
 * list); the list keeps its error, so the caller's commit refuses it. */
KP_MUST_CHECK int ctrl_emit_change(bk_meta_recs_t *out, const bk_meta_uuid_t *topic_id, int32_t partition,
                                   const pchange_t *ch);
KP_MUST_CHECK int ctrl_emit_fence(bk_meta_recs_t *out, const bk_meta_broker_t *b, bool fenced, bool in_shutdown);
/* For every partition: leaders in `gone` move within the ISR (or to -1),
 * members of `gone` leave ISRs that stay non-empty. Returns changes emitted;
 * stops at a failed add (out->err set). */
size_t ctrl_drop_brokers(const bk_meta_ctrl_t *c, const bk_meta_image_t *img, const gone_t *gone,
                         bk_meta_recs_t *out);
/* The session of a broker, created (last heartbeat now_ms) when missing;
 * sessions of unregistered brokers are dropped when the table is full. */
bk_meta_session_t *ctrl_session(bk_meta_ctrl_t *c, const bk_meta_image_t *img, int32_t broker_id, int64_t now_ms);
/* Replica assignment for partitions [first, first + n) with rf replicas over
 * the usable brokers; out[n]. Returns an error code. */
int16_t ctrl_assign(bk_meta_ctrl_t *c, const bk_meta_image_t *img, int32_t first, int32_t n, int32_t rf,
                    bk_meta_ids_t *out, char *msg, size_t msglen);
/* Replicas per broker (ctrl_limits.c): counted from the image, then grown by
 * each decision of a request so that several topics of one CreateTopics
 * count together. */
typedef struct {
    int32_t id[BK_META_BROKERS_MAX];
    int64_t n[BK_META_BROKERS_MAX];
    size_t count;
} ctrl_load_t;
void ctrl_load_init(ctrl_load_t *l, const bk_meta_image_t *img);
void ctrl_load_add(ctrl_load_t *l, const bk_meta_ids_t *reps, int32_t n);
/* POLICY_VIOLATION (with a message naming broker and limit) when adding the
 * n partitions `reps` would put more than cfg.max_replicas_per_node replicas
 * on a broker that gets one of them; NONE otherwise or without a limit. */
int16_t ctrl_load_check(const bk_meta_ctrl_t *c, const ctrl_load_t *l, const bk_meta_ids_t *reps, int32_t n,
                        char *msg, size_t msglen);
/* Emits a Partition record for a new partition with these replicas: ISR = the
 * usable replicas, leader = the first of them. */
KP_MUST_CHECK int ctrl_emit_new_partition(bk_meta_recs_t *out, const bk_meta_image_t *img,
                                          const bk_meta_uuid_t *topic_id, int32_t partition,
                                          const bk_meta_ids_t *replicas);

#endif
