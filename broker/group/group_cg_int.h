/* group_cg_int.h — private helpers of the consumer group files
 * (group_cg.c, group_cg_assign.c, group_cg_records.c). Not a public API. */
#ifndef SKIFF_BK_GROUP_CG_INT_H
#define SKIFF_BK_GROUP_CG_INT_H

#include "broker/group/group_cg.h"
#include "broker/group/group_int.h"

/* ---- partition sets (group_cg_assign.c) ---- */
int cg_tp_cmp(const bk_grp_cg_tp_t *a, const bk_grp_cg_tp_t *b);
bool cg_tps_has(const bk_grp_cg_tps_t *s, const bk_grp_cg_tp_t *tp);
void cg_tps_free(bk_grp_cg_tps_t *s);
/* *d = a copy of v[n] sorted and deduplicated (frees the old *d). */
void cg_tps_set(bk_grp_cg_tps_t *d, const bk_grp_cg_tp_t *v, size_t n);
/* a \ b and a ∩ b (new sets). */
bk_grp_cg_tps_t cg_tps_minus(const bk_grp_cg_tps_t *a, const bk_grp_cg_tps_t *b);
bk_grp_cg_tps_t cg_tps_and(const bk_grp_cg_tps_t *a, const bk_grp_cg_tps_t *b);
bool cg_tps_eq(const bk_grp_cg_tps_t *a, const bk_grp_cg_tps_t *b);

/* Whether member m subscribes to topic name (names or regex). Internal
 * topics (names starting "__") never match a regex. */
bool cg_subscribed(const bk_grp_cg_member_t *m, kp_str_t name);
/* Who subscribes to what, resolved once: sub[t * nmembers + i] for topic t
 * of the view and member i, any[t] for "some member". One cg_subscribed
 * (a name scan, a regexec) per (member, topic) per use — the assignors,
 * the hash and the partitions record read it per partition instead of
 * matching the regex again. Memory: topics x members bytes, for the
 * duration of one call (a group epoch bump or a topics check). */
typedef struct {
    uint8_t *sub, *any;
    size_t ntopics, nmembers;
} cg_subs_t;
void cg_subs_build(cg_subs_t *s, const bk_grp_cg_t *cg, const bk_grp_cg_topics_t *topics);
void cg_subs_free(cg_subs_t *s);
static inline bool cg_subs_has(const cg_subs_t *s, size_t t, size_t member) {
    return s->sub[t * s->nmembers + member] != 0;
}
/* The new target of every member of cg (members' `target` replaced),
 * with assignor a, over the topics their subscriptions (subs, built for
 * cg and topics) resolve to. */
void cg_assign(bk_grp_cg_t *cg, bk_grp_cg_assignor_t a, const bk_grp_cg_topics_t *topics, const cg_subs_t *subs);
/* FNV-1a over the (name, id, partitions) of the topics any member of cg
 * subscribes to: it changes when a subscribed topic appears, goes or grows. */
uint64_t cg_sub_hash(const bk_grp_cg_topics_t *topics, const cg_subs_t *subs);

/* ---- records (group_cg_records.c) ---- */
void cg_rec_epoch(bk_grp_out_t *o, kp_str_t gid, const bk_grp_cg_t *cg);
void cg_rec_partitions(bk_grp_out_t *o, kp_str_t gid, const bk_grp_cg_topics_t *topics, const cg_subs_t *subs);
void cg_rec_member(bk_grp_out_t *o, kp_str_t gid, const bk_grp_cg_member_t *m);
void cg_rec_target(bk_grp_out_t *o, kp_str_t gid, const bk_grp_cg_t *cg);   /* every member + metadata */
void cg_rec_current(bk_grp_out_t *o, kp_str_t gid, const bk_grp_cg_member_t *m);
void cg_rec_member_tombstones(bk_grp_out_t *o, kp_str_t gid, kp_str_t member_id);
void cg_rec_group_tombstones(bk_grp_out_t *o, kp_str_t gid);

/* ---- members (group_cg.c) ---- */
void cg_member_free(bk_grp_cg_member_t *m);
ptrdiff_t cg_member_idx(const bk_grp_cg_t *cg, kp_str_t member_id);
/* Compiles m->regex into m->re: KP_OK, or KP_ERR_BAD_VALUE when invalid. */
int cg_member_compile(bk_grp_cg_member_t *m);

#endif
