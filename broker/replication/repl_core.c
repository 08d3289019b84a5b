/* repl_core.c — construction, metadata images, ticks and accessors of the
 * pure replication core (broker/repl.h). */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "broker/replication/repl_int.h"

void bk_repl_config_default(bk_repl_config_t *c) {
    memset(c, 0, sizeof *c);
    c->node_id = BK_REPL_NO_NODE;
    c->min_insync = 1;
    c->lag_max_ms = 30000;
    c->fetch_backoff_ms = 1000;
    c->fetch_timeout_ms = 30000;
    c->alter_retry_ms = 1000;
    c->fetch_batches_max = BK_REPL_BATCHES_MAX;
    c->empty_fetch_pause_ms = -1;
}

static bool restore_valid(const bk_repl_restore_t *rs) {
    if (rs->log_start < 0 || rs->leo < rs->log_start) return false;
    if (rs->n_epochs > BK_REPL_EPOCHS_MAX) return false;
    if (rs->n_epochs && !rs->epochs) return false;
    for (uint32_t i = 0; i < rs->n_epochs; i++) {
        if (rs->epochs[i].epoch < 0 || rs->epochs[i].start_offset < 0) return false;
        if (i && (rs->epochs[i].epoch <= rs->epochs[i - 1].epoch ||
                  rs->epochs[i].start_offset < rs->epochs[i - 1].start_offset))
            return false;
    }
    return true;
}

bk_repl_t *bk_repl_new(const bk_repl_config_t *cfg, const bk_repl_restore_t *rs) {
    if (!cfg || !rs || !restore_valid(rs)) return NULL;
    if (cfg->min_insync < 1 || cfg->fetch_batches_max == 0 ||
        cfg->fetch_batches_max > BK_REPL_BATCHES_MAX || cfg->lag_max_ms <= 0)
        return NULL;
    bk_repl_t *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->cfg = *cfg;
    r->role = BK_REPL_NONE;
    r->leader_id = BK_REPL_NO_NODE;
    r->leader_epoch = BK_REPL_NO_EPOCH;
    r->partition_epoch = BK_REPL_NO_EPOCH;
    r->log_start = rs->log_start;
    r->leo = rs->leo;
    r->hw = rs->hw_checkpoint;
    if (r->hw < r->log_start) r->hw = r->log_start;
    if (r->hw > r->leo) r->hw = r->leo;
    if (rs->n_epochs) memcpy(r->epochs, rs->epochs, rs->n_epochs * sizeof rs->epochs[0]);
    r->n_epochs = rs->n_epochs;
    while (r->n_epochs && r->epochs[r->n_epochs - 1].start_offset > r->leo)
        r->n_epochs--;   /* a cache entry past the log end is meaningless */
    return r;
}

void bk_repl_free(bk_repl_t *r) { free(r); }

static bool image_valid(const bk_repl_image_t *img) {
    if (img->n_replicas > BK_REPL_REPLICAS_MAX || img->n_isr > BK_REPL_REPLICAS_MAX)
        return false;
    return img->leader_epoch >= 0 && img->partition_epoch >= 0;
}

void bk_repl_on_image(bk_repl_t *r, const bk_repl_image_t *img, int64_t now_ms,
                      bk_repl_out_t *out) {
    bk_repl_i_out_reset(out);
    if (!image_valid(img)) return;
    if (img->leader_epoch < r->leader_epoch) return;
    bool new_epoch = img->leader_epoch > r->leader_epoch;
    if (!new_epoch && img->partition_epoch <= r->partition_epoch) return;
    memcpy(r->replicas, img->replicas, img->n_replicas * sizeof img->replicas[0]);
    r->n_replicas = img->n_replicas;
    if (!new_epoch) {   /* same leadership, new ISR (or replica set) */
        if (r->role == BK_REPL_LEADER) {
            bk_repl_i_sync_peers(r);
            bk_repl_i_apply_isr(r, img->partition_epoch, img->isr, img->n_isr, now_ms, out);
        } else {
            r->partition_epoch = img->partition_epoch;
            memcpy(r->isr, img->isr, img->n_isr * sizeof img->isr[0]);
            r->n_isr = img->n_isr;
        }
        return;
    }
    if (r->role == BK_REPL_LEADER) bk_repl_i_fail_waits(r, KP_ERROR_NOT_LEADER_OR_FOLLOWER, out);
    r->leader_epoch = img->leader_epoch;
    r->partition_epoch = img->partition_epoch;
    r->leader_id = img->leader_id;
    memcpy(r->isr, img->isr, img->n_isr * sizeof img->isr[0]);
    r->n_isr = img->n_isr;
    r->alter_pending = false;     /* a new leader epoch kills any proposal */
    r->alter_wait_image = false;
    r->fetch_inflight = false;
    if (img->leader_id == r->cfg.node_id)
        bk_repl_i_become_leader(r, now_ms, out);
    else if (bk_repl_i_ids_has(img->replicas, img->n_replicas, r->cfg.node_id))
        bk_repl_i_become_follower(r, now_ms, out);
    else
        r->role = BK_REPL_NONE;
}

void bk_repl_tick(bk_repl_t *r, int64_t now_ms, bk_repl_out_t *out) {
    bk_repl_i_out_reset(out);
    if (r->role == BK_REPL_LEADER) bk_repl_i_leader_tick(r, now_ms, out);
    else if (r->role == BK_REPL_FOLLOWER) bk_repl_i_follower_tick(r, now_ms, out);
}

int64_t bk_repl_next_tick_ms(const bk_repl_t *r) {
    if (r->role == BK_REPL_LEADER) return bk_repl_i_leader_next_tick(r);
    if (r->role == BK_REPL_FOLLOWER) return bk_repl_i_follower_next_tick(r);
    return INT64_MAX;
}

bk_repl_role_t bk_repl_role(const bk_repl_t *r) { return r->role; }
int32_t bk_repl_leader_epoch(const bk_repl_t *r) { return r->leader_epoch; }
int32_t bk_repl_partition_epoch(const bk_repl_t *r) { return r->partition_epoch; }
int32_t bk_repl_leader_id(const bk_repl_t *r) { return r->leader_id; }
int64_t bk_repl_leo(const bk_repl_t *r) { return r->leo; }
int64_t bk_repl_hw(const bk_repl_t *r) { return r->hw; }
int64_t bk_repl_max_readable(const bk_repl_t *r) { return r->hw; }
uint32_t bk_repl_n_waits(const bk_repl_t *r) { return r->n_waits; }

uint32_t bk_repl_isr(const bk_repl_t *r, int32_t *ids, uint32_t cap) {
    uint32_t n = r->n_isr < cap ? r->n_isr : cap;
    memcpy(ids, r->isr, n * sizeof ids[0]);
    return r->n_isr;
}

uint32_t bk_repl_epochs(const bk_repl_t *r, bk_repl_epoch_t *e, uint32_t cap) {
    uint32_t n = r->n_epochs < cap ? r->n_epochs : cap;
    memcpy(e, r->epochs, n * sizeof e[0]);
    return r->n_epochs;
}

void bk_repl_set_min_insync(bk_repl_t *r, int32_t min_insync) {
    r->cfg.min_insync = min_insync < 1 ? 1 : min_insync;
}
