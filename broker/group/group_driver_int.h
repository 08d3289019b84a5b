/* broker/group/group_driver_int.h — the group driver's state, shared by
 * group_driver.c (cores, appends, held Join/Sync requests, timer),
 * group_requests.c (the request entry points) and group_wait.c (answers
 * waiting for their records to replicate). Private to those files.
 * Threading: loop thread only. */
#ifndef SKIFF_BK_GROUP_DRIVER_INT_H
#define SKIFF_BK_GROUP_DRIVER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/group/group_driver.h"
#include "broker/group/group_txn_offsets.h"
#include "broker/replication/parts.h"

/* A JoinGroup / SyncGroup waiting for the core's answer to its token. */
typedef struct {
    uint64_t token;
    int32_t partition;                  /* the core's (answers wait on it) */
    bool join;                          /* JoinGroup, else SyncGroup (metrics) */
    bk_grp_gd_done_fn done;
    bk_grp_gd_alive_fn alive;           /* NULL: always reachable */
    void *arg;
} held_t;

/* An answer whose records must replicate first, sent once the HW of every
 * partition it needs reaches that need's end (the records are then on
 * every ISR member). Most answers need one partition; a DeleteGroups of
 * several groups may need several. */
typedef struct {
    int32_t partition;
    int64_t end;
} need_t;

/* A result copied out of the request and the core (group_wait.c). */
typedef struct gd_answer gd_answer_t;

typedef struct {
    gd_answer_t *ans;                   /* owned */
    need_t *needs;                      /* owned */
    size_t nneeds;
} waiter_t;

/* What an acks=all wait of one append reports back (bk_replica_appended). */
typedef struct {
    int32_t partition;
    int64_t end;
} ack_t;

/* A topic of the image the driver last looked at (group_topics.c). */
typedef struct {
    char *name;                         /* owned */
    bk_meta_uuid_t id;
} gd_topic_t;

struct bk_grp_gd {
    bk_node_t *node;
    bk_grp_config_t cfg;
    bk_grp_coord_t **coords;            /* [ncoords]; NULL: not led here */
    int32_t ncoords;
    held_t *held;
    size_t nheld, held_cap;
    uint64_t next_token;
    uint64_t ticks;
    struct event *timer;
    bool creating;                      /* __consumer_offsets creation in flight */
    bool stopped;
    int64_t *need_end;                  /* [ncoords]: answers on a partition wait
                                           until its HW reaches this offset */
    bk_grp_txn_offsets_t *pend;         /* [ncoords]: TxnOffsetCommit offsets waiting for
                                           their producer's marker; kept while a core
                                           is absent, rebuilt by its next replay */
    waiter_t *waiters;                  /* answers waiting for the HW, in order */
    size_t nwaiters, waiters_cap;
    gd_topic_t *topics;                 /* [ntopics] sorted by name: the image's topics
                                           at metadata offset topics_at */
    size_t ntopics;
    int64_t topics_at;
    bool topics_known;                  /* false until the first look */
    bk_grp_cg_topic_t *cg_topics;       /* the image's topics for the consumer groups'
                                           cores (names point into the image) */
    size_t ncg_topics;
    int64_t cg_topics_at;               /* image offset they were taken at; -2 never */
};

/* The led, open partition `partition` of __consumer_offsets, or NULL. */
bk_repl_part_t *bk_gd_led_part(bk_grp_gd_t *gd, int32_t partition);
/* Its HW where this node leads it; -1 otherwise (nothing waiting on it can
 * be released here). */
int64_t bk_gd_hw_of(bk_grp_gd_t *gd, int32_t partition);

/* group_driver.c -------------------------------------------------------- */

/* Completes one core call: appends out->recs to the core's partition log
 * (one batch; fsync by the flush policy, as for Produce) and then answers
 * every held request whose answer is in out->resps; resets out. Returns
 * KP_OK, or the storage status when the append failed (held answers then
 * carry COORDINATOR_NOT_AVAILABLE; the caller maps its own synchronous
 * answer the same way). */
int bk_gd_finish(bk_grp_gd_t *gd, bk_grp_coord_t *c, bk_grp_out_t *out);
/* Appends out->recs as the transactional batch of (producer_id, epoch)
 * (TxnOffsetCommit: visible once the producer's COMMIT marker follows; a
 * replay holds them until then). Resets out. KP_OK or the storage status. */
int bk_gd_append_txn(bk_grp_gd_t *gd, bk_grp_coord_t *c, bk_grp_out_t *out, int64_t producer_id,
                     int16_t producer_epoch);
/* A fresh token, and the table of held Join/Sync requests: false when it
 * is full (BK_GRP_GD_HELD_MAX) or the driver stopped (the caller answers an
 * error itself). The answer for the token is delivered by bk_gd_finish. */
uint64_t bk_gd_token(bk_grp_gd_t *gd);
bool bk_gd_hold(bk_grp_gd_t *gd, uint64_t token, int32_t partition, bool join, bk_grp_gd_done_fn done,
                bk_grp_gd_alive_fn alive, void *arg);
/* The pending transactional offsets of partition p, NULL when p is not a
 * partition seen so far. Valid until the next bk_grp_gd_sync. */
bk_grp_txn_offsets_t *bk_gd_txn_offsets(bk_grp_gd_t *gd, int32_t p);
/* OffsetFetch require_stable: whether a transaction holds an offset of
 * (group, topic, partition) in partition p. */
bool bk_gd_txn_pending(const bk_grp_gd_t *gd, int32_t p, kp_str_t group, kp_str_t topic, int32_t partition);
/* Whether partition topic/partition exists in this node's image. */
bool bk_gd_part_exists(const bk_grp_gd_t *gd, kp_str_t topic, int32_t partition);

/* group_topics.c -------------------------------------------------------- */

/* Drops the committed offsets of topics deleted (or deleted and
 * re-created) since the last call, from every loaded core; the first call
 * only remembers the image's topics. Cheap when the image did not move. */
void bk_gd_topics_sync(bk_grp_gd_t *gd);
void bk_gd_topics_free(bk_grp_gd_t *gd);

/* group_cg_driver.c ----------------------------------------------------- */

/* The image's topics as the consumer group cores take them (rebuilt when
 * the image moved); an empty view when out of memory. */
bk_grp_cg_topics_t bk_gd_cg_topics(bk_grp_gd_t *gd);
void bk_gd_cg_topics_free(bk_grp_gd_t *gd);

/* group_wait.c ---------------------------------------------------------- */

/* Delivers res to done(arg) once the records this node appended so far to
 * the given __consumer_offsets partitions (or to the partitions of the
 * groups) are replicated: at once when they are, else later from a copy
 * (res->unsent set when they fail to be). res must not be a read's
 * (groups / fetched are never copied). */
void bk_gd_reply(bk_grp_gd_t *gd, const int32_t *parts, size_t nparts, const bk_grp_gd_result_t *res, bk_grp_gd_done_fn done,
                 void *arg);
void bk_gd_reply_groups(bk_grp_gd_t *gd, const kp_str_t *group_ids, size_t ngroups, const bk_grp_gd_result_t *res,
                        bk_grp_gd_done_fn done, void *arg);
/* Sends the answers waiting on `partition` that the HWs now cover; fails
 * those needing `partition` up to `end` (partition < 0: all; end < 0: any
 * end); the acks=all completion of one append (ctx = gd, part_ctx = its
 * ack_t, freed here). */
void bk_gd_release_waiters(bk_grp_gd_t *gd, int32_t partition);
void bk_gd_fail_waiters(bk_grp_gd_t *gd, int32_t partition, int64_t end, int16_t err);
void bk_gd_on_replicated(void *ctx, void *part_ctx, int16_t err);

#endif
