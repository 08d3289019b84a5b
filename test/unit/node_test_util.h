/* node_test_util.h — a real single-node broker for unit tests that drive
 * the node's own services (test_partition.c, test_fetch_inflight.c): node
 * 1, broker and controller, its local metadata committer, listeners on
 * port 0, no admin port, storage quiet and without real fsync
 * (tu_log_capture). Header-only.
 *
 *   nt_fx_t f;
 *   nt_init(&f, "cluster-id", "extra.key=value\n");   // writes the config, starts
 *   nt_create_topic(&f, "t", 1, NULL, 0);
 *   bk_repl_part_t *p = nt_part(&f, "t", 0);
 *   nt_stop(&f); nt_start(&f);                       // a graceful restart
 *   nt_free(&f);                                     // stops if running, removes the dir
 */
#ifndef SKIFF_NODE_TEST_UTIL_H
#define SKIFF_NODE_TEST_UTIL_H

#include <check.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/config/config.h"
#include "broker/meta/controller.h"
#include "broker/node.h"
#include "broker/replication/partition.h"
#include "protocol/kp_errors.h"
#include "test/unit/st_test_util.h"

typedef struct {
    char *dir;
    char conf[512];
    struct event_base *base;
    bk_cfg_t *cfg;
    bk_node_t n;
    bool started;
} nt_fx_t;

/* Loads f->conf and starts the node on a new event base. */
static inline void nt_start(nt_fx_t *f) {
    bk_cfg_err_t ce;
    f->cfg = bk_cfg_load(f->conf, 1, NULL, 0, &ce);
    ck_assert_msg(f->cfg != NULL, "config: %s", ce.msg);
    f->base = event_base_new();
    ck_assert_ptr_nonnull(f->base);
    char err[512];
    int rc = bk_broker_start(&f->n, f->base, f->cfg, err, sizeof err);
    ck_assert_msg(rc == 0, "start: %s", err);
    f->started = true;
}

static inline void nt__stopped(bk_node_t *n, void *arg) {
    (void)n;
    *(bool *)arg = true;
}

/* The graceful stop (bk_broker_shutdown until it says done), then free. */
static inline void nt_stop(nt_fx_t *f) {
    bool done = false;
    bk_broker_shutdown(&f->n, nt__stopped, &done);
    for (int i = 0; i < 2000 && !done; i++) event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    ck_assert(done);
    bk_broker_free(&f->n);
    bk_cfg_free(f->cfg);
    event_base_free(f->base);
    f->started = false;
}

/* A temp dir with node.conf (the fixed single-node lines, cluster.id, then
 * `extra`: whole lines, "" for none), and the node started on it. */
static inline void nt_init(nt_fx_t *f, const char *cluster_id, const char *extra) {
    memset(f, 0, sizeof *f);
    tu_log_capture();            /* quiet storage, no real fsync (st_io_set_sync) */
    f->dir = tu_tmpdir();
    snprintf(f->conf, sizeof f->conf, "%s/node.conf", f->dir);
    FILE *fp = fopen(f->conf, "w");
    ck_assert_ptr_nonnull(fp);
    fprintf(fp,
            "node.id=1\n"
            "cluster.id=%s\n"
            "process.roles=broker,controller\n"
            "controller.quorum.voters=1@127.0.0.1:1\n"
            "controller.listener.names=CONTROLLER\n"
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
            "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n"
            "admin.listener=\n"
            "log.dirs=%s/data\n"
            "%s",
            cluster_id, f->dir, extra);
    ck_assert_int_eq(fclose(fp), 0);
    nt_start(f);
}

/* Stops the node if it runs, removes the dir. */
static inline void nt_free(nt_fx_t *f) {
    if (f->started) nt_stop(f);
    tu_rmrf(f->dir);
    free(f->dir);
}

static inline void nt__on_commit(void *arg, int status) { *(int *)arg = status; }

/* Creates a topic of `parts` partitions, replication factor 1, through the
 * controller and the local committer, and waits until it is committed. */
static inline void nt_create_topic(nt_fx_t *f, const char *name, int32_t parts, const bk_meta_ctrl_kv_t *cfgs,
                                   size_t ncfgs) {
    bk_meta_ctrl_create_topic_t t = { name, parts, 1, NULL, 0, cfgs, ncfgs };
    bk_meta_ctrl_create_result_t res;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_create_topics(&f->n.ctrl, bk_node_decision_image(&f->n), &t, 1, false, &recs, &res);
    ck_assert_int_eq(res.error, 0);
    int status = -99;
    bk_node_commit(&f->n, &recs, nt__on_commit, &status);
    bk_meta_recs_free(&recs);
    /* the local committer commits in its fsync job's completion (pool) */
    for (int i = 0; i < 2000 && status == -99; i++) event_base_loop(f->base, EVLOOP_ONCE);
    ck_assert_int_eq(status, KP_OK);
}

/* The partition service's partition topic-partition (asserted found). */
static inline bk_repl_part_t *nt_part(nt_fx_t *f, const char *topic, int32_t partition) {
    bk_repl_part_t *p = NULL;
    ck_assert_int_eq(bk_repl_ps_find(&f->n, bk_meta_image_topic_by_name(&f->n.img, topic), partition, &p), 0);
    ck_assert_ptr_nonnull(p);
    return p;
}

/* An append's completion on a single replica: never called (acks=all is
 * done at once there). */
static inline void nt_never(void *ctx, void *part_ctx, const bk_repl_ps_result_t *res) {
    (void)ctx;
    (void)part_ctx;
    (void)res;
    ck_abort_msg("a single replica never waits");
}

#endif
