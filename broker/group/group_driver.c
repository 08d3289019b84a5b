/* broker/group/group_driver.c — cores per led __consumer_offsets partition,
 * records appended before answers, held Join/Sync requests, the timer
 * (see group_driver.h; answers waiting for replication: group_wait.c). */
#include "broker/group/group_driver.h"
#include "broker/group/group_driver_int.h"
#include "broker/group/group_replay.h"

#include <assert.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "broker/meta/controller.h"
#include "broker/cluster/forward.h"
#include "broker/cluster/internal_topic.h"
#include "broker/quorum/quorum.h"
#include "broker/replication/partition.h"
#include "broker/replication/parts.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_errors.h"
#include "storage/st_log.h"
#include "storage/st_status.h"

static void grp_config(const bk_cfg_t *cfg, bk_grp_config_t *g) {
    bk_grp_config_defaults(g);
    g->num_partitions = (int32_t)bk_cfg_int(cfg, BK_CFG_OFFSETS_TOPIC_NUM_PARTITIONS);
    g->min_session_timeout_ms = (int32_t)bk_cfg_int(cfg, BK_CFG_GROUP_MIN_SESSION_TIMEOUT_MS);
    g->max_session_timeout_ms = (int32_t)bk_cfg_int(cfg, BK_CFG_GROUP_MAX_SESSION_TIMEOUT_MS);
    g->initial_rebalance_delay_ms = (int32_t)bk_cfg_int(cfg, BK_CFG_GROUP_INITIAL_REBALANCE_DELAY_MS);
    int64_t max = bk_cfg_int(cfg, BK_CFG_GROUP_MAX_SIZE);
    g->max_size = (int32_t)(max > BK_GRP_MEMBERS_MAX ? BK_GRP_MEMBERS_MAX : max);
    g->offsets_retention_ms = bk_cfg_int(cfg, BK_CFG_OFFSETS_RETENTION_MINUTES) * 60000;
    g->cg_session_timeout_ms = (int32_t)bk_cfg_int(cfg, BK_CFG_GROUP_CONSUMER_SESSION_TIMEOUT_MS);
    g->cg_heartbeat_interval_ms = (int32_t)bk_cfg_int(cfg, BK_CFG_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS);
    int64_t cmax = bk_cfg_int(cfg, BK_CFG_GROUP_CONSUMER_MAX_SIZE);
    g->cg_max_size = (int32_t)(cmax > BK_GRP_MEMBERS_MAX ? BK_GRP_MEMBERS_MAX : cmax);
    g->cg_migration = (int)bk_cfg_int(cfg, BK_CFG_GROUP_CONSUMER_MIGRATION_POLICY);
    /* the list's order matters (the first is the default): parse its text */
    const char *as = bk_cfg_str(cfg, BK_CFG_GROUP_CONSUMER_ASSIGNORS);
    g->cg_assignors[0] = g->cg_assignors[1] = -1;
    for (int k = 0; as && *as && k < 2;) {
        const char *e = strchr(as, ',');
        size_t n = e ? (size_t)(e - as) : strlen(as);
        kp_str_t name = { (const uint8_t *)as, n };
        bk_grp_cg_assignor_t a;
        if (bk_grp_cg_assignor_parse(name, &a)) g->cg_assignors[k++] = (int)a;
        if (!e) break;
        as = e + 1;
    }
    if (g->cg_assignors[0] < 0) g->cg_assignors[0] = BK_GRP_CG_UNIFORM;   /* an empty list: Kafka's default */
}

static const bk_meta_topic_t *offsets_topic(const bk_grp_gd_t *gd) {
    return bk_meta_image_topic_by_name(&gd->node->img, BK_GRP_GD_TOPIC);
}

/* ---- held requests ----------------------------------------------------- */

uint64_t bk_gd_token(bk_grp_gd_t *gd) { return ++gd->next_token; }

bool bk_gd_hold(bk_grp_gd_t *gd, uint64_t token, int32_t partition, bool join, bk_grp_gd_done_fn done,
                bk_grp_gd_alive_fn alive, void *arg) {
    assert(done != NULL);
    if (gd->stopped || gd->nheld >= BK_GRP_GD_HELD_MAX) return false;
    if (gd->nheld == gd->held_cap) {
        size_t ncap = gd->held_cap ? gd->held_cap * 2 : 64;
        held_t *nv = realloc(gd->held, ncap * sizeof *nv);
        if (!nv) return false;
        gd->held = nv;
        gd->held_cap = ncap;
    }
    gd->held[gd->nheld++] = (held_t){ token, partition, join, done, alive, arg };
    return true;
}

void bk_grp_gd_held_counts(const bk_grp_gd_t *gd, size_t *joins, size_t *syncs) {
    *joins = *syncs = 0;
    for (size_t i = 0; gd && i < gd->nheld; i++) {
        if (gd->held[i].join) (*joins)++;
        else (*syncs)++;
    }
}

/* Removes the request held for token into *h; false when there is none. */
static bool unhold(bk_grp_gd_t *gd, uint64_t token, held_t *h) {
    for (size_t i = 0; i < gd->nheld; i++) {
        if (gd->held[i].token != token) continue;
        *h = gd->held[i];
        gd->held[i] = gd->held[--gd->nheld];
        return true;
    }
    return false;
}

/* Answers every held request of a group partition (all when part < 0)
 * with `error`; like any Join/Sync answer it waits for what was appended
 * there (and so fails with it when the partition is being dropped). */
static void fail_held(bk_grp_gd_t *gd, int32_t part, int16_t error) {
    for (size_t i = 0; i < gd->nheld;) {
        if (part >= 0 && gd->held[i].partition != part) { i++; continue; }
        held_t h = gd->held[i];
        gd->held[i] = gd->held[--gd->nheld];
        bk_grp_gd_result_t res = { .error = error };
        bk_gd_reply(gd, &h.partition, 1, &res, h.done, h.arg);
    }
}

/* ---- appending ----------------------------------------------------------- */

bk_repl_part_t *bk_gd_led_part(bk_grp_gd_t *gd, int32_t partition) {
    const bk_meta_topic_t *t = offsets_topic(gd);
    if (!t || partition < 0 || partition >= t->nparts) return NULL;
    bk_repl_part_t *p = bk_repl_parts_get(gd->node->parts, &t->id, partition);
    return p && p->leader && p->log ? p : NULL;
}

int64_t bk_gd_hw_of(bk_grp_gd_t *gd, int32_t partition) {
    bk_repl_part_t *p = bk_gd_led_part(gd, partition);
    return p ? st_log_high_watermark(p->log) : -1;
}

/* The partition service's completion of a group append (bk_repl_ps_done_fn). */
static void records_replicated(void *ctx, void *part_ctx, const bk_repl_ps_result_t *res) {
    bk_gd_on_replicated(ctx, part_ctx, res->error);
}

/* One uncompressed batch of the records, appended through the partition
 * service. Durability is that of a produced batch on this node: in the log
 * (survives kill -9), fsynced by the partition's flush policy (Kafka's
 * log.flush.*), never per commit — an fsync per commit would stall the loop
 * thread (~100 commits/s measured). The replicas copy it like any produced
 * batch; answers computed from it wait until the HW passes it (acks=all
 * with a minimum ISR of one, as Kafka's coordinator: the commit is not
 * refused for a small ISR, only held until the ISR has it). */
static int append_recs(bk_grp_gd_t *gd, int32_t partition, const bk_grp_out_t *out, int64_t now, int64_t pid,
                       int16_t epoch) {
    bk_repl_part_t *p = bk_gd_led_part(gd, partition);
    if (!p) return ST_ERR_NOT_FOUND;
    kp_batch_opts_t o = kp_batch_opts_default();
    if (pid >= 0) {   /* TxnOffsetCommit: the producer's transactional batch */
        o.producer_id = pid;
        o.producer_epoch = epoch;
        o.flags = KP_BATCH_TRANSACTIONAL;
    }
    kp_batch_builder_t bb;
    kp_batch_builder_init(&bb, &o);
    int rc = KP_OK;
    for (size_t i = 0; i < out->nrecs && rc == KP_OK; i++) {
        kp_record_in_t r = { now, out->recs[i].key, out->recs[i].value, NULL, 0 };
        if (!out->recs[i].value.p) r.value = kp_slice_null();
        rc = kp_batch_builder_add(&bb, &r);
    }
    kp_arena_t a;
    kp_arena_init(&a, (size_t)1 << 30);
    const uint8_t *b = NULL;
    size_t len = 0;
    if (rc == KP_OK) rc = kp_batch_builder_finish(&bb, &a, &b, &len);
    kp_batch_builder_free(&bb);
    /* allocated before the append: nothing may fail after it */
    ack_t *ack = rc == KP_OK ? malloc(sizeof *ack) : NULL;
    if (rc == KP_OK && !ack) rc = KP_ERR_NOMEM;
    bk_repl_ps_result_t res = { 0, -1, -1, -1, -1, false };
    bool waits = false;
    if (rc == KP_OK) {
        bk_repl_ps_opts_t po = { .acks = -1, .min_insync = 1, .timeout_ms = BK_GRP_GD_COMMIT_TIMEOUT_MS, .leader_epoch = -1 };
        bk_repl_ps_set_t set = bk_repl_ps_set_internal((uint8_t *)b, len);
        ack->partition = partition;
        waits = bk_repl_ps_append(gd->node, p, &set, &po, records_replicated, gd, ack, &res);
        /* refused or not written (the service logged a failed write) */
        if (!waits && res.base_offset < 0) rc = res.error == KP_ERROR_KAFKA_STORAGE_ERROR ? ST_ERR_IO : ST_ERR_NOT_FOUND;
    }
    kp_arena_free(&a);
    if (!waits) free(ack);
    if (rc != KP_OK) return rc;
    int64_t end = res.last_offset + 1;
    if (waits) ack->end = end;   /* its completion comes from the loop, later */
    if (end > gd->need_end[partition]) gd->need_end[partition] = end;
    if (!waits && res.error) bk_gd_fail_waiters(gd, partition, end, res.error);
    return KP_OK;
}

int bk_gd_finish(bk_grp_gd_t *gd, bk_grp_coord_t *c, bk_grp_out_t *out) {
    int rc = out->err;
    if (rc == KP_OK && out->nrecs > 0) rc = append_recs(gd, c->partition, out, bk_net_now_ms(), -1, -1);
    if (rc != KP_OK)
        fprintf(stderr, "skiff: node %d: %s-%d: group records not written: %s\n", gd->node->id,
                BK_GRP_GD_TOPIC, c->partition, st_status_str(rc));
    for (size_t i = 0; i < out->nresps; i++) {
        held_t h;
        if (!unhold(gd, out->resps[i].token, &h)) continue;   /* failed meanwhile */
        /* the member cannot get this answer: the session it would start
         * must not start (asked before done, which frees the request) */
        if (h.alive && !h.alive(h.arg)) bk_grp_answer_lost(c, out->resps[i].token);
        bk_grp_gd_result_t res = { .error = KP_ERROR_COORDINATOR_NOT_AVAILABLE };
        if (rc == KP_OK) res = (bk_grp_gd_result_t){ .resp = &out->resps[i] };
        bk_gd_reply(gd, &h.partition, 1, &res, h.done, h.arg);
    }
    bk_grp_out_reset(out);
    return rc;
}

int bk_gd_append_txn(bk_grp_gd_t *gd, bk_grp_coord_t *c, bk_grp_out_t *out, int64_t producer_id,
                     int16_t producer_epoch) {
    int rc = out->err;
    if (rc == KP_OK && out->nrecs > 0)
        rc = append_recs(gd, c->partition, out, bk_net_now_ms(), producer_id, producer_epoch);
    bk_grp_out_reset(out);
    return rc;
}

/* ---- loading ------------------------------------------------------------------ */

static void drop_core(bk_grp_gd_t *gd, int32_t i) {
    if (!gd->coords[i]) return;
    fail_held(gd, i, KP_ERROR_NOT_COORDINATOR);
    bk_gd_fail_waiters(gd, i, -1, KP_ERROR_NOT_LEADER_OR_FOLLOWER);
    gd->need_end[i] = 0;
    bk_grp_coord_free(gd->coords[i]);
    free(gd->coords[i]);
    gd->coords[i] = NULL;
}

/* `nparts`: the partitions __consumer_offsets has in the image. A group's
 * partition follows from that count, never from offsets.topic.num.partitions,
 * which only sizes the topic when it is created: a node restarted with
 * another value (or the default) must place groups where FindCoordinator
 * (which reads the image) sends them, as Kafka does. */
static void start_core(bk_grp_gd_t *gd, int32_t i, int32_t nparts, bk_repl_part_t *p) {
    bk_grp_coord_t *c = malloc(sizeof *c);
    uint64_t seed = 0;
    if (!c) return;
    if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) seed = (uint64_t)bk_net_now_ms() ^ (uint64_t)i;
    bk_grp_config_t cfg = gd->cfg;
    cfg.num_partitions = nparts;
    bk_grp_coord_init(c, &cfg, i, seed);
    bk_grp_txn_offsets_free(&gd->pend[i]);   /* rebuilt from the log by the replay */
    int rc = bk_grp_gd_replay(c, p->log, &gd->pend[i]);
    if (rc != KP_OK) {
        /* Serving from a partial state could hand out wrong offsets: stay
         * not-coordinator for this partition (clients keep retrying). */
        fprintf(stderr, "skiff: node %d: %s-%d: cannot load groups: %s\n", gd->node->id, BK_GRP_GD_TOPIC, i,
                st_status_str(rc));
        bk_grp_coord_free(c);
        free(c);
        return;
    }
    bk_grp_load_done(c, bk_net_now_ms());
    /* Kafka's rule: a new coordinator serves the whole log it has; what lies
     * above the HW is replicated by its followers before answers built on it
     * go out. */
    gd->need_end[i] = st_log_end_offset(p->log);
    gd->coords[i] = c;
}

static bool resize(bk_grp_gd_t *gd, int32_t n) {
    if (n <= gd->ncoords) return true;
    bk_grp_coord_t **nv = realloc(gd->coords, (size_t)n * sizeof *nv);
    if (!nv) return false;
    gd->coords = nv;
    int64_t *ne = realloc(gd->need_end, (size_t)n * sizeof *ne);
    if (!ne) return false;
    gd->need_end = ne;
    bk_grp_txn_offsets_t *np = realloc(gd->pend, (size_t)n * sizeof *np);
    if (!np) return false;
    gd->pend = np;
    for (int32_t i = gd->ncoords; i < n; i++) { nv[i] = NULL; ne[i] = 0; bk_grp_txn_offsets_init(&np[i]); }
    gd->ncoords = n;
    return true;
}

void bk_grp_gd_sync(bk_grp_gd_t *gd) {
    if (gd->stopped) return;
    const bk_meta_topic_t *t = offsets_topic(gd);
    int32_t n = t ? t->nparts : 0;
    if (t && !resize(gd, n)) return;
    for (int32_t i = 0; i < gd->ncoords; i++) {
        bk_repl_part_t *p = i < n ? bk_gd_led_part(gd, i) : NULL;
        if (!p) drop_core(gd, i);
        else if (gd->coords[i] && gd->coords[i]->cfg.num_partitions != n) {
            /* the topic gained partitions: groups move (Kafka's hash) */
            drop_core(gd, i);
            start_core(gd, i, n, p);
        } else if (!gd->coords[i]) start_core(gd, i, n, p);
    }
    bk_gd_topics_sync(gd);
}

bk_grp_coord_t *bk_grp_gd_coord(bk_grp_gd_t *gd, kp_str_t group_id, int16_t *err) {
    const bk_meta_topic_t *t = offsets_topic(gd);
    if (!t || t->nparts <= 0) { *err = KP_ERROR_COORDINATOR_NOT_AVAILABLE; return NULL; }
    int32_t i = bk_grp_partition_for(group_id, t->nparts);
    if (i >= gd->ncoords || !gd->coords[i]) bk_grp_gd_sync(gd);
    if (i >= gd->ncoords || !gd->coords[i]) {
        /* led here but its log is still opening (or replaying): Kafka's
         * retriable "loading", not a redirect the client may give up on */
        *err = t->parts[i].leader == gd->node->id ? KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS : KP_ERROR_NOT_COORDINATOR;
        return NULL;
    }
    *err = 0;
    return gd->coords[i];
}

bk_grp_coord_t *bk_grp_gd_coord_at(bk_grp_gd_t *gd, int32_t p) {
    return p >= 0 && p < gd->ncoords ? gd->coords[p] : NULL;
}

bool bk_gd_part_exists(const bk_grp_gd_t *gd, kp_str_t topic, int32_t partition) {
    const bk_meta_topic_t *t = bk_meta_image_topic_by_slice(&gd->node->img, topic);
    return t && partition >= 0 && partition < t->nparts;
}

/* ---- transactional offsets ------------------------------------------------ */

bk_grp_txn_offsets_t *bk_gd_txn_offsets(bk_grp_gd_t *gd, int32_t p) {
    return p >= 0 && p < gd->ncoords ? &gd->pend[p] : NULL;
}

bool bk_gd_txn_pending(const bk_grp_gd_t *gd, int32_t p, kp_str_t group, kp_str_t topic, int32_t partition) {
    if (!gd || p < 0 || p >= gd->ncoords || gd->pend[p].n == 0) return false;
    if (group.len > BK_GRP_TXN_GROUP_MAX_BYTES || topic.len > BK_GRP_TXN_TOPIC_MAX_BYTES) return false;
    char g[BK_GRP_TXN_GROUP_MAX_BYTES + 1], t[BK_GRP_TXN_TOPIC_MAX_BYTES + 1];
    memcpy(g, group.p, group.len);
    g[group.len] = '\0';
    memcpy(t, topic.p, topic.len);
    t[topic.len] = '\0';
    return bk_grp_txn_offsets_pending(&gd->pend[p], g, t, partition);
}

bool bk_grp_gd_txn_has_offsets(const bk_grp_gd_t *gd, int32_t p, int64_t producer_id) {
    return gd && p >= 0 && p < gd->ncoords && bk_grp_txn_offsets_has_producer(&gd->pend[p], producer_id);
}

typedef struct {
    bk_grp_gd_t *gd;
    bk_grp_coord_t *c;
    bk_grp_out_t *out;
} commit_ctx_t;

/* A committed transaction's offset becomes visible to the group. */
static void commit_offset(void *ctx, const bk_grp_txn_pending_t *o) {
    commit_ctx_t *cc = ctx;
    bk_grp_commit_part_t part = { kp_slice_cstr(o->topic), o->partition, o->offset, o->leader_epoch,
                                  o->metadata ? kp_slice_cstr(o->metadata) : kp_slice_null(), o->commit_ts_ms };
    bk_grp_commit_t req = { kp_slice_cstr(o->group), kp_slice_cstr(""), kp_slice_null(), -1, -1, &part, 1 };
    int16_t err = 0;
    (void)bk_grp_offset_commit_txn(cc->c, &req, bk_net_now_ms(), cc->out, &err);
    if (err)
        fprintf(stderr, "skiff: node %d: transactional offset of %s %s-%d not committed: %s\n", cc->gd->node->id,
                o->group, o->topic, o->partition, kp_error_name(err));
}

/* Without a loaded core the offsets are dropped either way: the marker's
 * control batch is then in the log (the transaction side appends one
 * whenever bk_grp_gd_txn_has_offsets), so the core's replay resolves the
 * transactional batch there, in log order. */
void bk_grp_gd_txn_complete(bk_grp_gd_t *gd, int32_t p, int64_t producer_id, bool commit) {
    if (!gd || p < 0 || p >= gd->ncoords) return;
    bk_grp_coord_t *c = gd->coords[p];
    bk_grp_out_t out;
    bk_grp_out_init(&out);
    commit_ctx_t cc = { gd, c, &out };
    (void)bk_grp_txn_offsets_complete(&gd->pend[p], producer_id, commit && c, c ? commit_offset : NULL, &cc);
    if (c) (void)bk_gd_finish(gd, c, &out);
    bk_grp_out_free(&out);
}

/* ---- FindCoordinator ------------------------------------------------------- */

static void created(void *arg, int status) {
    bk_grp_gd_t *gd = arg;
    gd->creating = false;
    if (status != KP_OK)
        fprintf(stderr, "skiff: node %d: creating %s failed: %s\n", gd->node->id, BK_GRP_GD_TOPIC,
                st_status_str(status));
    bk_grp_gd_sync(gd);
}

static void create_topic(bk_grp_gd_t *gd) {
    bk_node_t *n = gd->node;
    if (gd->creating) return;
    char seg[32];
    snprintf(seg, sizeof seg, "%lld", (long long)bk_cfg_int(n->cfg, BK_CFG_OFFSETS_TOPIC_SEGMENT_BYTES));
    bk_meta_ctrl_kv_t kv[] = { { "cleanup.policy", "compact" }, { "segment.bytes", seg },
                          { "compression.type", "producer" } };
    gd->creating = bk_cluster_internal_topic_create(n, BK_GRP_GD_TOPIC, gd->cfg.num_partitions,
                                            bk_cfg_int(n->cfg, BK_CFG_OFFSETS_TOPIC_REPLICATION_FACTOR), kv, 3,
                                            created, gd);
}

int16_t bk_grp_gd_find(bk_grp_gd_t *gd, kp_str_t key, int32_t *node_id, const char **host, int32_t *port) {
    *node_id = -1;
    *host = "";
    *port = -1;
    const bk_meta_topic_t *t = offsets_topic(gd);
    if (!t) {
        create_topic(gd);
        return KP_ERROR_COORDINATOR_NOT_AVAILABLE;
    }
    int32_t i = bk_grp_partition_for(key, t->nparts);
    if (t->parts[i].leader == gd->node->id && (i >= gd->ncoords || !gd->coords[i])) bk_grp_gd_sync(gd);
    bool ready = i < gd->ncoords && gd->coords[i];
    return bk_cluster_internal_coordinator(gd->node, &t->parts[i], ready, node_id, host, port);
}

/* ---- timer ------------------------------------------------------------------ */

static void on_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    bk_grp_gd_t *gd = arg;
    if (gd->stopped || gd->node->stopping) return;
    gd->ticks++;
    bk_grp_gd_sync(gd);
    int64_t now = bk_net_now_ms();
    bk_grp_out_t out;
    bk_grp_out_init(&out);
    for (int32_t i = 0; i < gd->ncoords; i++) {
        bk_grp_coord_t *c = gd->coords[i];
        if (!c) continue;
        if (gd->nwaiters) bk_gd_release_waiters(gd, i);   /* waits with no append of their own (loads) */
        bk_grp_tick(c, now, &out);
        bk_grp_cg_topics_t cgt = bk_gd_cg_topics(gd);
        bk_grp_cg_tick(c, &cgt, now, &out);
        if (gd->ticks % BK_GRP_GD_EXPIRE_EVERY_TICKS == 0) bk_grp_expire_offsets(c, now, &out);
        (void)bk_gd_finish(gd, c, &out);
    }
    bk_grp_out_free(&out);
}

bk_grp_gd_t *bk_grp_gd_new(bk_node_t *n) {
    bk_grp_gd_t *gd = calloc(1, sizeof *gd);
    if (!gd) return NULL;
    gd->node = n;
    gd->cg_topics_at = -2;
    grp_config(n->cfg, &gd->cfg);
    gd->timer = event_new(n->base, -1, EV_PERSIST, on_timer, gd);
    struct timeval tv = { 0, BK_GRP_GD_TICK_MS * 1000 };
    if (!gd->timer || event_add(gd->timer, &tv) != 0) {
        if (gd->timer) event_free(gd->timer);
        free(gd);
        return NULL;
    }
    bk_grp_gd_sync(gd);
    return gd;
}

void bk_grp_gd_stop(bk_grp_gd_t *gd) {
    if (!gd || gd->stopped) return;
    fail_held(gd, -1, KP_ERROR_COORDINATOR_NOT_AVAILABLE);
    bk_gd_fail_waiters(gd, -1, -1, KP_ERROR_COORDINATOR_NOT_AVAILABLE);
    gd->stopped = true;
    if (gd->timer) { event_free(gd->timer); gd->timer = NULL; }
}

void bk_grp_gd_free(bk_grp_gd_t *gd) {
    if (!gd) return;
    bk_grp_gd_stop(gd);
    for (int32_t i = 0; i < gd->ncoords; i++) {
        if (gd->coords[i]) { bk_grp_coord_free(gd->coords[i]); free(gd->coords[i]); }
        bk_grp_txn_offsets_free(&gd->pend[i]);
    }
    free(gd->coords);
    free(gd->pend);
    free(gd->need_end);
    free(gd->waiters);
    free(gd->held);
    bk_gd_topics_free(gd);
    bk_gd_cg_topics_free(gd);
    free(gd);
}

/* ---- lag ------------------------------------------------------------------- */

static int64_t end_of(void *ctx, kp_str_t topic, int32_t partition) {
    bk_grp_gd_t *gd = ctx;
    const bk_meta_topic_t *t = bk_meta_image_topic_by_slice(&gd->node->img, topic);
    if (!t || partition < 0 || partition >= t->nparts) return -1;
    /* Only the leader's high watermark is the partition's end as consumers
     * see it (ListOffsets latest); a follower's copy may lag. */
    if (t->parts[partition].leader != gd->node->id) return -1;
    bk_repl_part_t *p = bk_repl_parts_get(gd->node->parts, &t->id, partition);
    return p && p->log ? st_log_high_watermark(p->log) : -1;
}

size_t bk_grp_gd_lags(bk_grp_gd_t *gd, kp_str_t group_id, bk_grp_lag_t *res, size_t max, int16_t *err) {
    bk_grp_coord_t *c = bk_grp_gd_coord(gd, group_id, err);
    if (!c) return 0;
    return bk_grp_lags(c, group_id, end_of, gd, res, max);
}
