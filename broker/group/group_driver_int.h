/* broker/group/group_driver_int.h — the group driver's state, shared by
 * group_driver.c (cores, appends, held Join/Sync requests, timer) and
 * group_wait.c (answers waiting for their records to replicate). Private
 * to those two files. Threading: loop thread only. */
#ifndef SKIFF_BK_GROUP_DRIVER_INT_H
#define SKIFF_BK_GROUP_DRIVER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/group/group_driver.h"
#include "broker/replication/parts.h"

struct evbuffer;

typedef struct {
    uint64_t token;
    bk_req_t *req;
} held_t;

/* An answer encoded after its records were appended, sent once the HW of
 * every partition it needs reaches that need's end (the records are then
 * on every ISR member). Most answers need one partition; a DeleteGroups
 * of several groups may need several. */
typedef struct {
    int32_t partition;
    int64_t end;
} need_t;

typedef struct {
    bk_req_t *req;
    struct evbuffer *body;
    need_t *needs;                      /* owned */
    size_t nneeds;
} waiter_t;

/* What an acks=all wait of one append reports back (bk_replica_appended). */
typedef struct {
    int32_t partition;
    int64_t end;
} ack_t;

struct bk_gd {
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
    waiter_t *waiters;                  /* encoded answers waiting for the HW */
    size_t nwaiters, waiters_cap;
};

/* The led, open partition `partition` of __consumer_offsets, or NULL. */
bk_part_t *bk_gd_led_part(bk_gd_t *gd, int32_t partition);
/* Its HW where this node leads it; -1 otherwise (nothing waiting on it can
 * be released here). */
int64_t bk_gd_hw_of(bk_gd_t *gd, int32_t partition);

/* group_wait.c: sends the answers waiting on `partition` that the HWs now
 * cover; closes the connections of those needing `partition` up to `end`
 * (partition < 0: all; end < 0: any end); the acks=all completion of one
 * append (ctx = gd, part_ctx = its ack_t, freed here). */
void bk_gd_release_waiters(bk_gd_t *gd, int32_t partition);
void bk_gd_fail_waiters(bk_gd_t *gd, int32_t partition, int64_t end, int16_t err);
void bk_gd_on_replicated(void *ctx, void *part_ctx, int16_t err);

#endif
