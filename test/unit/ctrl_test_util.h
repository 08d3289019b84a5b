/* ctrl_test_util.h — a controller with its image for the test programs that
 * drive controller decisions (test_controller.c, test_reassign.c): records
 * are applied as if committed, brokers registered and unfenced the way the
 * lifecycle does it, ISR changes sent as a leader's AlterPartition. */
#ifndef SKIFF_CTRL_TEST_UTIL_H
#define SKIFF_CTRL_TEST_UTIL_H

#include <check.h>
#include <stdbool.h>

#include "broker/meta/controller.h"
#include "protocol/kp_arena.h"
#include "protocol/kp_errors.h"

typedef struct {
    bk_meta_image_t img;
    bk_meta_ctrl_t ctrl;
    int64_t next_offset;
    int64_t now_ms;
    kp_arena_t arena;            /* for decoded answers built by the tests */
} cl_t;

static inline void cl_init_cfg(cl_t *cl, const bk_meta_ctrl_config_t *cfg, uint64_t seed) {
    bk_meta_image_init(&cl->img, -1);
    bk_meta_ctrl_init(&cl->ctrl, cfg, seed);
    cl->next_offset = 0;
    cl->now_ms = 1000;
    kp_arena_init(&cl->arena, KP_ARENA_DEFAULT_CAP_BYTES);
}

static inline void cl_free(cl_t *cl) {
    bk_meta_image_free(&cl->img);
    kp_arena_free(&cl->arena);
}

/* Applies the records as committed and empties recs; returns how many there
 * were. (Plain if + ck_abort_msg: ck_assert marks libcheck's pipe even when
 * it passes, and the randomized runs commit millions of times.) */
static inline size_t commit(cl_t *cl, bk_meta_recs_t *recs) {
    if (recs->err != KP_OK) ck_abort_msg("records failed: %d", recs->err);
    if (bk_meta_recs_apply(recs, &cl->img, cl->next_offset) != KP_OK) ck_abort_msg("records do not apply");
    size_t n = recs->n;
    cl->next_offset += (int64_t)n;
    bk_meta_recs_free(recs);
    bk_meta_recs_init(recs);
    return n;
}

/* Registers broker id (fenced), then unfences it with a caught-up
 * heartbeat; returns its broker epoch. */
static inline int64_t add_broker(cl_t *cl, int32_t id, const char *rack) {
    bk_meta_ctrl_endpoint_t ep = { "PLAINTEXT", "127.0.0.1", (uint16_t)(9000 + id) };
    bk_meta_ctrl_register_t req = { .broker_id = id, .endpoints = &ep, .nendpoints = 1, .rack = rack };
    req.incarnation[0] = 7;
    req.incarnation[1] = (uint8_t)id;
    bk_meta_recs_t r;
    bk_meta_recs_init(&r);
    int64_t epoch = -1;
    ck_assert_int_eq(bk_meta_ctrl_register(&cl->ctrl, &cl->img, &req, cl->next_offset, cl->now_ms, &r, &epoch),
                     KP_ERROR_NONE);
    commit(cl, &r);
    ck_assert(bk_meta_image_broker(&cl->img, id)->fenced);
    ck_assert_int_eq(bk_meta_image_broker(&cl->img, id)->epoch, epoch);
    bk_meta_ctrl_heartbeat_t hb = { id, epoch, cl->next_offset, false, false };
    bk_meta_ctrl_heartbeat_result_t res;
    bk_meta_ctrl_heartbeat(&cl->ctrl, &cl->img, &hb, cl->now_ms, &r, &res);
    ck_assert_int_eq(res.error, KP_ERROR_NONE);
    ck_assert(!res.is_fenced);
    commit(cl, &r);
    ck_assert(!bk_meta_image_broker(&cl->img, id)->fenced);
    return epoch;
}

/* One heartbeat of broker id, caught up; its records committed. Returns its
 * error; *res (may be NULL) gets the whole answer. */
static inline int16_t heartbeat(cl_t *cl, int32_t id, bool want_fence, bool want_shutdown,
                                bk_meta_ctrl_heartbeat_result_t *res) {
    const bk_meta_broker_t *b = bk_meta_image_broker(&cl->img, id);
    bk_meta_ctrl_heartbeat_t hb = { id, b ? b->epoch : 0, cl->next_offset, want_fence, want_shutdown };
    bk_meta_ctrl_heartbeat_result_t scratch;
    if (!res) res = &scratch;
    bk_meta_recs_t r;
    bk_meta_recs_init(&r);
    bk_meta_ctrl_heartbeat(&cl->ctrl, &cl->img, &hb, cl->now_ms, &r, res);
    commit(cl, &r);
    return res->error;
}

/* Sets a partition's ISR through AlterPartition from its leader; returns
 * the error (records committed either way). */
static inline int16_t alter_isr(cl_t *cl, const char *topic, int32_t p, const int32_t *isr, size_t n) {
    const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&cl->img, topic);
    ck_assert_ptr_nonnull(t);
    const bk_meta_partition_t *pp = &t->parts[p];
    bk_meta_ctrl_alter_partition_t req = { pp->leader, bk_meta_image_broker(&cl->img, pp->leader)->epoch, t->id, p,
                                      pp->leader_epoch, pp->partition_epoch, isr, n };
    bk_meta_ctrl_alter_partition_result_t res;
    bk_meta_recs_t r;
    bk_meta_recs_init(&r);
    bk_meta_ctrl_alter_partition(&cl->ctrl, &cl->img, &req, &r, &res);
    commit(cl, &r);
    return res.error;
}

#endif
