/* group_cg.h — the KIP-848 consumer group protocol as pure functions
 * (ConsumerGroupHeartbeat, ConsumerGroupDescribe, the ConsumerGroup* records
 * of __consumer_offsets), on the same coordinator (bk_grp_coord_t) and the
 * same group table as the classic protocol: a group is a consumer group when
 * bk_grp_t.cg is set; committed offsets are shared by both kinds.
 *
 * Same contract as group.h: no I/O, no clock reads; records to append and
 * slices of answers go to a bk_grp_out_t; state changes at once; the log is
 * the truth (a failed append drops the core, which is rebuilt by replay).
 *
 * Topics: the caller passes the image's topics (bk_grp_cg_topics_t, sorted
 * by name) with every call that may assign; `gen` must change whenever they
 * may have changed (the metadata offset), so the core re-resolves
 * subscriptions only then.
 *
 * Reconciliation (KIP-848): the group epoch moves on every membership,
 * subscription or subscribed-topic change; the target assignment is then
 * computed at once (assignment epoch = group epoch). Each member moves
 * towards its target on its own heartbeats: partitions it must give up are
 * revoked first (member epoch unchanged, they stay "pending revocation"
 * until a heartbeat's owned partitions no longer hold them); only then does
 * it get the new epoch and those of its target partitions that no other
 * member owns or is revoking. Invariant (test/sim/sim_cgroup.c): no
 * partition is ever in two members' assigned-or-revoking sets. */
#ifndef SKIFF_BK_GROUP_CG_H
#define SKIFF_BK_GROUP_CG_H

#include <regex.h>

#include "broker/group/group.h"

#define BK_GRP_CG_REGEX_MAX 4096      /* bytes of one subscription regex */
#define BK_GRP_CG_TOPICS_MAX 10000    /* subscribed topic names per member */
#define BK_GRP_CG_PARTS_MAX 1000000   /* partitions one assignment may hold */

/* Member states (ConsumerGroupCurrentMemberAssignmentValue.State). */
#define BK_GRP_CG_STABLE 0
#define BK_GRP_CG_UNREVOKED 1
#define BK_GRP_CG_UNRELEASED 2

/* group.consumer.migration.policy */
typedef enum {
    BK_GRP_CG_MIGRATE_DISABLED = 0,
    BK_GRP_CG_MIGRATE_UPGRADE = 1,
    BK_GRP_CG_MIGRATE_DOWNGRADE = 2,
    BK_GRP_CG_MIGRATE_BIDIRECTIONAL = 3,
} bk_grp_cg_migration_t;

/* Server-side assignors (group.consumer.assignors, the member's ServerAssignor). */
typedef enum { BK_GRP_CG_UNIFORM = 0, BK_GRP_CG_RANGE = 1, BK_GRP_CG_NASSIGNORS } bk_grp_cg_assignor_t;
const char *bk_grp_cg_assignor_name(bk_grp_cg_assignor_t a);
bool bk_grp_cg_assignor_parse(kp_str_t name, bk_grp_cg_assignor_t *out);

typedef struct {
    kp_uuid_t topic;
    int32_t partition;
} bk_grp_cg_tp_t;

/* A set of partitions: sorted by (topic id bytes, partition), no duplicates. */
typedef struct {
    bk_grp_cg_tp_t *v;
    size_t n;
} bk_grp_cg_tps_t;

typedef struct {
    bk_grp_str_t member_id, instance_id, rack_id, client_id, client_host;
    bk_grp_str_t *topics;                 /* subscribed names */
    size_t ntopics;
    bk_grp_str_t regex;                   /* null: none */
    regex_t *re;                          /* compiled regex (POSIX ERE), or NULL */
    bk_grp_str_t assignor;                /* ServerAssignor; null: the group's */
    int32_t rebalance_timeout_ms;
    int32_t epoch, prev_epoch;            /* -2: a static member that left */
    int8_t state;                         /* BK_GRP_CG_STABLE / UNREVOKED / UNRELEASED */
    bk_grp_cg_tps_t assigned, revoking, target;
    int64_t heartbeat_ms;                 /* the session runs from here */
    int64_t revoke_deadline_ms;           /* UNREVOKED: fenced after this */
} bk_grp_cg_member_t;

typedef struct bk_grp_cg {
    int32_t epoch;                        /* group epoch */
    int32_t assignment_epoch;             /* of the target assignment */
    bk_grp_cg_assignor_t assignor;        /* the one last used */
    bk_grp_cg_member_t *members;          /* join order */
    size_t nmembers, members_cap;
    uint64_t sub_hash;                    /* subscribed topics' metadata at the last epoch */
    int64_t topics_gen;                   /* bk_grp_cg_topics_t.gen last looked at */
    bool hash_known;                      /* sub_hash is valid */
} bk_grp_cg_t;

typedef struct {
    kp_str_t name;
    kp_uuid_t id;
    int32_t nparts;
} bk_grp_cg_topic_t;

typedef struct {
    const bk_grp_cg_topic_t *v;           /* sorted by name */
    size_t n;
    int64_t gen;
} bk_grp_cg_topics_t;

/* ---- ConsumerGroupHeartbeat ----------------------------------------------- */

typedef struct {
    kp_str_t group_id, member_id;
    int32_t member_epoch;
    kp_str_t instance_id, rack_id;        /* null: unchanged */
    int32_t rebalance_timeout_ms;         /* -1: unchanged */
    const kp_str_t *topics;               /* ntopics < 0: unchanged (null) */
    int32_t ntopics;
    kp_str_t regex;                       /* null: unchanged; "" clears */
    kp_str_t assignor;                    /* null: unchanged */
    const bk_grp_cg_tp_t *owned;          /* nowned < 0: unchanged (null) */
    int32_t nowned;                       /* > BK_GRP_CG_PARTS_MAX: refused (INVALID_REQUEST) unread */
    kp_str_t client_id, client_host;
} bk_grp_cg_hb_t;

typedef struct {
    int16_t error;
    const char *message;                  /* static text, or NULL */
    kp_str_t member_id;                   /* in out's arena; null: none */
    int32_t member_epoch;
    int32_t heartbeat_interval_ms;
    bool has_assignment;                  /* false: null (unchanged) */
    const bk_grp_cg_tp_t *assignment;     /* in out's arena */
    size_t nassignment;
} bk_grp_cg_hb_resp_t;

void bk_grp_cg_heartbeat(bk_grp_coord_t *c, const bk_grp_cg_hb_t *req, const bk_grp_cg_topics_t *topics,
                         int64_t now_ms, bk_grp_out_t *out, bk_grp_cg_hb_resp_t *resp);

/* Session timeouts (group.consumer.session.timeout.ms), revocations not done
 * within the member's rebalance timeout, and subscribed topics that changed
 * (new partitions, new topics a regex matches, deleted topics). */
void bk_grp_cg_tick(bk_grp_coord_t *c, const bk_grp_cg_topics_t *topics, int64_t now_ms, bk_grp_out_t *out);

/* ---- offsets and admin ----------------------------------------------------- */

/* OffsetCommit / OffsetFetch by a member of a consumer group: NONE for a
 * simple consumer (epoch < 0 and no member id), UNKNOWN_MEMBER_ID,
 * STALE_MEMBER_EPOCH (an older epoch), FENCED_MEMBER_EPOCH (a newer one). */
int16_t bk_grp_cg_member_check(const bk_grp_t *g, kp_str_t member_id, int32_t epoch);

/* Kafka's consumer group state names: Empty, Assigning, Reconciling, Stable. */
const char *bk_grp_cg_state_name(const bk_grp_t *g);
/* "classic" or "consumer". */
const char *bk_grp_type_name(const bk_grp_t *g);
/* The group's state name whichever its kind. */
const char *bk_grp_group_state_name(const bk_grp_t *g);

/* ---- persistence (group_cg_records.c) ---------------------------------------- */
/* Replays a ConsumerGroup* record (key types 3-8) while loading. */
KP_MUST_CHECK int bk_grp_cg_load_record(bk_grp_coord_t *c, int16_t type, kp_bytes_t key, kp_bytes_t value);

#endif
