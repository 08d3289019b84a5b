/* broker/core/node.c — the node context's own operations: the clock, a
 * topic's effective configs, the commit path to whichever committer the node
 * has (raft quorum or the local metadata log), controller lookups. */
#include "broker/core/node.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/meta/meta_log.h"
#include "broker/quorum/quorum.h"
#include "protocol/kp_errors.h"
#include "storage/st_log.h"
#include "storage/st_status.h"

/* ---- configs (topic overrides: topic_configs.c) --------------------------- */

void bk_node_log_config(bk_node_t *n, const char *topic, st_log_config_t *lc) {
    const bk_cfg_topic_t *tc = bk_node_topic_config(n, topic);
    const bk_cfg_t *cfg = n->cfg;
    st_log_config_default(lc);
    lc->segment_bytes = (uint64_t)bk_cfg_topic_int(cfg, tc, BK_CFG_TC_SEGMENT_BYTES);
    lc->segment_ms = bk_cfg_topic_int(cfg, tc, BK_CFG_TC_SEGMENT_MS);
    lc->index_interval_bytes = (uint32_t)bk_cfg_topic_int(cfg, tc, BK_CFG_TC_INDEX_INTERVAL_BYTES);
    lc->index_max_bytes = (uint32_t)bk_cfg_topic_int(cfg, tc, BK_CFG_TC_SEGMENT_INDEX_BYTES);
    lc->retention_ms = bk_cfg_topic_int(cfg, tc, BK_CFG_TC_RETENTION_MS);
    lc->retention_bytes = bk_cfg_topic_int(cfg, tc, BK_CFG_TC_RETENTION_BYTES);
    /* list bitmask in the order of the allowed list "delete,compact" */
    lc->cleanup_policy = (unsigned)bk_cfg_topic_int(cfg, tc, BK_CFG_TC_CLEANUP_POLICY);
    lc->flush_messages = bk_cfg_topic_int(cfg, tc, BK_CFG_TC_FLUSH_MESSAGES);
    lc->flush_ms = bk_cfg_topic_int(cfg, tc, BK_CFG_TC_FLUSH_MS);
    lc->log_append_time = bk_cfg_topic_int(cfg, tc, BK_CFG_TC_MESSAGE_TIMESTAMP_TYPE) == 1;
    lc->delete_retention_ms = bk_cfg_topic_int(cfg, tc, BK_CFG_TC_DELETE_RETENTION_MS);
    lc->min_compaction_lag_ms = bk_cfg_topic_int(cfg, tc, BK_CFG_TC_MIN_COMPACTION_LAG_MS);
    lc->min_cleanable_dirty_ratio = bk_cfg_topic_double(cfg, tc, BK_CFG_TC_MIN_CLEANABLE_DIRTY_RATIO);
    lc->producer_id_expiration_ms = bk_cfg_int(cfg, BK_CFG_PRODUCER_ID_EXPIRATION_MS);
}

/* ---- commit path ---------------------------------------------------------- */

typedef struct {
    bk_node_t *n;
    bk_node_commit_fn done;
    void *arg;
} commit_ctx_t;

static void committed(void *arg, int status, int64_t first_offset) {
    (void)first_offset;
    commit_ctx_t *c = arg;
    if (status == KP_OK && c->n->after_commit) c->n->after_commit(c->n);
    c->done(c->arg, status);
    free(c);
}

void bk_node_commit(bk_node_t *n, const bk_meta_recs_t *recs, bk_node_commit_fn done, void *arg) {
    commit_ctx_t *c = malloc(sizeof *c);
    if (!c) { done(arg, KP_ERR_NOMEM); return; }
    c->n = n;
    c->done = done;
    c->arg = arg;
    if (n->quorum) bk_quorum_propose(n->quorum, recs, committed, c);
    else bk_meta_log_propose(n->meta, recs, bk_net_now_ms(), committed, c);
}

int16_t bk_node_commit_error(int status) {
    return status == BK_QUORUM_NOT_LEADER ? KP_ERROR_NOT_CONTROLLER : KP_ERROR_UNKNOWN_SERVER_ERROR;
}

const bk_meta_image_t *bk_node_decision_image(bk_node_t *n) {
    if (n->quorum) return bk_quorum_decision_image(n->quorum);
    return n->meta ? bk_meta_log_decision_image(n->meta) : &n->img;
}

int32_t bk_node_controller_id(const bk_node_t *n) { return n->quorum ? bk_quorum_leader(n->quorum) : n->id; }

const bk_meta_endpoint_t *bk_node_broker_endpoint(const bk_node_t *n, const bk_meta_broker_t *b, const char *listener) {
    if (b->nendpoints == 0) return NULL;
    bool inter = listener == NULL;
    if (inter) {
        if (!bk_cfg_is_null(n->cfg, BK_CFG_INTER_BROKER_LISTENER_NAME))
            listener = bk_cfg_str(n->cfg, BK_CFG_INTER_BROKER_LISTENER_NAME);
        else if (n->nadv > 0)
            listener = n->adv[0].name;
    }
    for (int32_t k = 0; listener && k < b->nendpoints; k++)
        if (strcmp(b->endpoints[k].listener, listener) == 0) return &b->endpoints[k];
    return inter ? &b->endpoints[0] : NULL;
}
int32_t bk_node_quorum_epoch(const bk_node_t *n) { return n->quorum ? bk_quorum_epoch(n->quorum) : 0; }
int64_t bk_node_metadata_hw(const bk_node_t *n) {
    if (n->quorum) {
        st_log_offsets_t o;
        bk_quorum_offsets(n->quorum, &o);
        return o.high_watermark;
    }
    return n->meta ? bk_meta_log_next_offset(n->meta) : 0;
}

/* ---- removal of deleted segment files ------------------------------------ */

/* Partition logs defer their segment removal to the node's timer
 * (bk_repl_parts_tick: detached on the loop, renamed and unlinked on the pool),
 * so after DeleteRecords this job usually finds nothing; it still clears
 * "*.deleted" leftovers of a failed removal. */

typedef struct { char dir[ST_PATH_MAX + 300]; } purge_t;

static int purge_job(void *arg) {
    st_log_purge_deleted(((purge_t *)arg)->dir);
    return 0;
}
static void purge_done(void *arg, int status) { (void)status; free(arg); }

void bk_node_purge_later(bk_node_t *n, const char *dir) {
    purge_t *j = malloc(sizeof *j);
    if (!j) return;
    snprintf(j->dir, sizeof j->dir, "%s", dir);
    if (bk_net_worker_submit(n->pool, purge_job, purge_done, j) != BK_NET_OK) free(j);  /* next time */
}
