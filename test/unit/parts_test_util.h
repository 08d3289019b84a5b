/* parts_test_util.h — what the partition manager's worker-pool tests
 * (test_parts_open.c, test_parts_io.c) share: a gate job that holds a pool
 * thread until opened, one registered and unfenced broker (node 1 leads
 * everything), the controller records of a topic's creation or deletion,
 * and feeding the image's changes to the partitions. Header-only. */
#ifndef SKIFF_PARTS_TEST_UTIL_H
#define SKIFF_PARTS_TEST_UTIL_H

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "broker/meta/controller.h"
#include "broker/meta/meta_log.h"
#include "broker/replication/parts.h"

/* The slow worker job that fills a pool slot until gate_open. */
typedef struct { pthread_mutex_t mu; pthread_cond_t cv; bool go; } gate_t;
static inline int gate_job(void *arg) {
    gate_t *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->go) pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    return 0;
}
static inline void gate_done(void *arg, int status) { (void)arg; (void)status; }
static inline void gate_open(gate_t *g) {
    pthread_mutex_lock(&g->mu);
    g->go = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Whether dir/name exists. */
static inline bool pt_exists(const char *dir, const char *name) {
    char path[600];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

typedef void (*pt_commit_fn)(void *ctx, bk_meta_recs_t *recs);

/* Registers broker 1 and heartbeats it unfenced, each through commit. */
static inline void pt_register_leader(bk_meta_ctrl_t *c, bk_meta_image_t *img, bk_meta_log_t *m,
                                      pt_commit_fn commit, void *ctx) {
    bk_meta_ctrl_endpoint_t ep = { "PLAINTEXT", "127.0.0.1", 9000 };
    bk_meta_ctrl_register_t rq;
    memset(&rq, 0, sizeof rq);
    rq.broker_id = 1;
    rq.incarnation[0] = 1;
    rq.endpoints = &ep;
    rq.nendpoints = 1;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    int64_t epoch = 0;
    ck_assert_int_eq(bk_meta_ctrl_register(c, img, &rq, bk_meta_log_next_offset(m), 0, &recs, &epoch), 0);
    commit(ctx, &recs);
    bk_meta_ctrl_heartbeat_t hb = { 1, epoch, img->last_offset, false, false };
    bk_meta_ctrl_heartbeat_result_t hr;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_heartbeat(c, img, &hb, 0, &recs, &hr);
    commit(ctx, &recs);
}

/* Into *recs (initialized here): the creation of topic name with parts
 * partitions of one replica, which must succeed. */
static inline void pt_create_recs(bk_meta_ctrl_t *c, const bk_meta_image_t *img, const char *name, int32_t parts,
                                  bk_meta_recs_t *recs) {
    bk_meta_ctrl_create_topic_t t = { name, parts, 1, NULL, 0, NULL, 0 };
    bk_meta_ctrl_create_result_t res;
    bk_meta_recs_init(recs);
    bk_meta_ctrl_create_topics(c, img, &t, 1, false, recs, &res);
    ck_assert_int_eq(res.error, 0);
}

/* Into *recs (initialized here): the deletion of topic name, which must
 * succeed. */
static inline void pt_delete_recs(bk_meta_ctrl_t *c, const bk_meta_image_t *img, const char *name,
                                  bk_meta_recs_t *recs) {
    bk_meta_ctrl_delete_topic_t del = { name, { { 0 } } };
    bk_meta_ctrl_delete_result_t dres;
    bk_meta_recs_init(recs);
    bk_meta_ctrl_delete_topics(c, img, &del, 1, recs, &dres);
    ck_assert_int_eq(dres.error, 0);
}

/* Applies the image's pending changes to p; the number that failed. */
static inline size_t pt_feed(bk_repl_parts_t *p, bk_meta_image_t *img, bk_repl_parts_cfg_fn cfg, void *ctx,
                             bk_repl_parts_trash_fn trash) {
    size_t max = bk_meta_image_pending_changes(img);
    bk_meta_change_t *ch = calloc(max + 1, sizeof *ch);
    size_t n = bk_meta_image_take_changes(img, ch, max);
    size_t failed = bk_repl_parts_apply(p, img, ch, n, cfg, ctx, trash, 0);
    free(ch);
    return failed;
}

#endif
