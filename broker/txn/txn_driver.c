/* broker/txn/txn_driver.c — cores per led __transaction_state partition,
 * records appended before answers, the timer (see txn_driver.h). */
#include "broker/txn/txn_driver.h"

#include <assert.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/meta/controller.h"
#include "broker/cluster/internal_topic.h"
#include "broker/replication/parts.h"
#include "broker/txn/txn_driver_int.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_errors.h"
#include "storage/st_log.h"
#include "storage/st_status.h"

#define REPLAY_CHUNK_BYTES ((size_t)1 << 20)
#define TXN_SEGMENT_BYTES "104857600"

static const bk_meta_topic_t *txn_topic(const bk_txn_td_t *td) {
    return bk_meta_image_topic_by_name(&td->node->img, BK_TXN_TD_TOPIC);
}

bk_repl_part_t *td_led_part(bk_txn_td_t *td, int32_t partition) {
    const bk_meta_topic_t *t = txn_topic(td);
    if (!t || partition < 0 || partition >= t->nparts) return NULL;
    bk_repl_part_t *p = bk_repl_parts_get(td->node->parts, &t->id, partition);
    return p && p->leader && p->log ? p : NULL;
}

/* ---- loading ---------------------------------------------------------------- */

static int replay_batch(bk_txn_coord_t *c, const kp_batch_t *b, kp_arena_t *scratch) {
    if (kp_batch_is_control(b)) return KP_OK;
    kp_batch_info_t info;
    kp_arena_reset(scratch);
    int rc = kp_batch_validate(b, 0, scratch, BK_TXN_TD_REPLAY_BATCH_MAX_BYTES, &info);
    if (rc != KP_OK) return rc;
    kp_record_iter_t it;
    kp_record_iter_init(&it, b, info.records, info.records_len);
    kp_record_t rec;
    while ((rc = kp_record_iter_next(&it, &rec)) == 1) {
        if (!rec.key.p) continue;
        rc = bk_txn_load(c, rec.key.p, rec.key.len, rec.value.p, rec.value.len);
        if (rc != KP_OK) return rc;
    }
    return rc;
}

typedef struct {
    bk_txn_coord_t *c;
    kp_arena_t scratch;
} replay_t;

static int replay_one(void *ctx, const kp_batch_t *b) {
    replay_t *rp = ctx;
    return replay_batch(rp->c, b, &rp->scratch);
}

/* Replays [log start, LEO) of the partition into c. */
static int replay(bk_txn_coord_t *c, st_log_t *log) {
    replay_t rp = { c, { 0 } };
    kp_arena_init(&rp.scratch, BK_TXN_TD_REPLAY_BATCH_MAX_BYTES * 2);
    int rc = st_log_scan_batches(log, REPLAY_CHUNK_BYTES, BK_TXN_TD_REPLAY_BATCH_MAX_BYTES, replay_one, &rp);
    kp_arena_free(&rp.scratch);
    return rc;
}

static void drop_core(bk_txn_td_t *td, int32_t i) {
    if (!td->coords[i]) return;
    td_flights_drop(td, i);
    bk_txn_coord_free(td->coords[i]);
    free(td->coords[i]);
    td->coords[i] = NULL;
}

static void start_core(bk_txn_td_t *td, int32_t i, bk_repl_part_t *p) {
    bk_txn_coord_t *c = malloc(sizeof *c);
    if (!c) return;
    bk_txn_coord_init(c, &td->cfg, p->leader_epoch, td_alloc_pid, td);
    int rc = replay(c, p->log);
    if (rc != KP_OK) {
        /* Serving from a partial state could re-use producer ids or lose a
         * Prepare*: stay not-coordinator for this partition. */
        fprintf(stderr, "skiff: node %d: %s-%d: cannot load transactions: %s\n", td->node->id, BK_TXN_TD_TOPIC, i,
                st_status_str(rc));
        bk_txn_coord_free(c);
        free(c);
        return;
    }
    td->coords[i] = c;
    bk_txn_out_t out;
    bk_txn_out_init(&out);
    bk_txn_load_done(c, bk_net_now_ms(), &out);   /* Prepare*: finish the job */
    bk_td_finish(td, i, &out, NULL, NULL, NULL);
}

static bool resize(bk_txn_td_t *td, int32_t n) {
    if (n <= td->ncoords) return true;
    bk_txn_coord_t **nv = realloc(td->coords, (size_t)n * sizeof *nv);
    if (!nv) return false;
    for (int32_t i = td->ncoords; i < n; i++) nv[i] = NULL;
    td->coords = nv;
    td->ncoords = n;
    return true;
}

void bk_txn_td_sync(bk_txn_td_t *td) {
    if (td->stopped) return;
    const bk_meta_topic_t *t = txn_topic(td);
    int32_t n = t ? t->nparts : 0;
    if (t && !resize(td, n)) return;
    for (int32_t i = 0; i < td->ncoords; i++) {
        bk_repl_part_t *p = i < n ? td_led_part(td, i) : NULL;
        if (!p) drop_core(td, i);
        else if (td->coords[i] && td->coords[i]->coordinator_epoch != p->leader_epoch) {
            drop_core(td, i);      /* led again at a new epoch: reload */
            start_core(td, i, p);
        } else if (!td->coords[i]) start_core(td, i, p);
    }
}

bk_txn_coord_t *bk_txn_td_coord(bk_txn_td_t *td, const char *transactional_id, int32_t *pidx, int16_t *err) {
    const bk_meta_topic_t *t = txn_topic(td);
    *pidx = -1;
    if (td->stopped || !t || t->nparts <= 0) { *err = KP_ERROR_COORDINATOR_NOT_AVAILABLE; return NULL; }
    int32_t i = bk_txn_partition_for(transactional_id, t->nparts);
    if (i >= td->ncoords || !td->coords[i]) bk_txn_td_sync(td);
    if (i >= td->ncoords || !td->coords[i]) { *err = KP_ERROR_NOT_COORDINATOR; return NULL; }
    *err = 0;
    *pidx = i;
    return td->coords[i];
}

int32_t bk_txn_td_ncoords(const bk_txn_td_t *td) { return td->ncoords; }

bk_txn_coord_t *bk_txn_td_coord_at(bk_txn_td_t *td, int32_t p) {
    return p >= 0 && p < td->ncoords ? td->coords[p] : NULL;
}

int16_t bk_txn_td_check_produce(bk_txn_td_t *td, kp_str_t transactional_id, int64_t producer_id, int16_t epoch,
                            const char *topic, int32_t partition) {
    const bk_meta_topic_t *t = txn_topic(td);
    if (!t || t->nparts <= 0 || transactional_id.len > BK_TXN_ID_MAX_BYTES || !transactional_id.p)
        return KP_ERROR_NONE;
    char *id = kp_slice_strdup(transactional_id);
    if (!id) return KP_ERROR_NONE;
    int32_t i = bk_txn_partition_for(id, t->nparts);
    const bk_txn_meta_t *m = i < td->ncoords && td->coords[i] ? bk_txn_get(td->coords[i], id) : NULL;
    free(id);
    if (!m || m->producer_id != producer_id) return KP_ERROR_NONE;
    if (epoch < m->producer_epoch) return KP_ERROR_INVALID_PRODUCER_EPOCH;   /* fenced (e.g. timed out) */
    if (epoch != m->producer_epoch) return KP_ERROR_NONE;
    if (m->state != BK_TXN_ONGOING) return KP_ERROR_INVALID_TXN_STATE;
    for (size_t k = 0; k < m->nparts; k++)
        if (m->parts[k].partition == partition && strcmp(m->parts[k].topic, topic) == 0) return KP_ERROR_NONE;
    return KP_ERROR_INVALID_TXN_STATE;
}

/* ---- FindCoordinator --------------------------------------------------------- */

static void created(void *arg, int status) {
    bk_txn_td_t *td = arg;
    td->creating = false;
    if (status != KP_OK)
        fprintf(stderr, "skiff: node %d: creating %s failed: %s\n", td->node->id, BK_TXN_TD_TOPIC, st_status_str(status));
    bk_txn_td_sync(td);
}

/* Exactly as the group driver creates __consumer_offsets (internal_topic.h). */
static void create_topic(bk_txn_td_t *td) {
    bk_node_t *n = td->node;
    if (td->creating || td->stopped) return;
    bk_meta_ctrl_kv_t kv[] = { { "cleanup.policy", "compact" }, { "segment.bytes", TXN_SEGMENT_BYTES },
                          { "compression.type", "producer" } };
    td->creating = bk_cluster_internal_topic_create(
        n, BK_TXN_TD_TOPIC, (int32_t)bk_cfg_int(n->cfg, BK_CFG_TRANSACTION_STATE_LOG_NUM_PARTITIONS),
        bk_cfg_int(n->cfg, BK_CFG_TRANSACTION_STATE_LOG_REPLICATION_FACTOR), kv, 3, created, td);
}

int16_t bk_txn_td_find(bk_txn_td_t *td, kp_str_t key, int32_t *node_id, const char **host, int32_t *port) {
    *node_id = -1;
    *host = "";
    *port = -1;
    if (key.len == 0 || !key.p || key.len > BK_TXN_ID_MAX_BYTES) return KP_ERROR_INVALID_REQUEST;
    const bk_meta_topic_t *t = txn_topic(td);
    if (!t) {
        create_topic(td);
        return KP_ERROR_COORDINATOR_NOT_AVAILABLE;
    }
    char *id = kp_slice_strdup(key);
    if (!id) return KP_ERROR_COORDINATOR_NOT_AVAILABLE;
    int32_t i = bk_txn_partition_for(id, t->nparts);
    free(id);
    if (t->parts[i].leader == td->node->id && (i >= td->ncoords || !td->coords[i])) bk_txn_td_sync(td);
    bool ready = i < td->ncoords && td->coords[i];
    return bk_cluster_internal_coordinator(td->node, &t->parts[i], ready, node_id, host, port);
}

/* ---- timer ------------------------------------------------------------------- */

typedef struct {
    char **ids;
    size_t n, cap;
} idlist_t;

static void collect(void *ctx, const char *id, const bk_txn_meta_t *meta) {
    (void)meta;
    idlist_t *l = ctx;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        char **nv = realloc(l->ids, nc * sizeof *nv);
        if (!nv) return;
        l->ids = nv;
        l->cap = nc;
    }
    char *d = strdup(id);
    if (d) l->ids[l->n++] = d;
}

/* Re-sends the markers of Prepare* transactions nobody is waiting on. */
static void resend_markers(bk_txn_td_t *td, int32_t i, int64_t now) {
    static const char *const prep[] = { "PrepareCommit", "PrepareAbort" };
    bool unknown[2];
    idlist_t l = { NULL, 0, 0 };
    bk_txn_list(td->coords[i], prep, 2, NULL, 0, -1, now, unknown, collect, &l);
    for (size_t k = 0; k < l.n; k++) {
        if (td->coords[i] && !td_in_flight(td, i, l.ids[k], now)) {
            bk_txn_out_t out;
            bk_txn_out_init(&out);
            if (bk_txn_pending_markers(td->coords[i], l.ids[k], &out)) bk_td_finish(td, i, &out, NULL, NULL, NULL);
            else bk_txn_out_free(&out);
        }
        free(l.ids[k]);
    }
    free(l.ids);
}

static void on_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    bk_txn_td_t *td = arg;
    if (td->stopped || td->node->stopping) return;
    bk_txn_td_sync(td);
    int64_t now = bk_net_now_ms();
    for (int32_t i = 0; i < td->ncoords; i++) {
        if (!td->coords[i]) continue;
        bk_txn_out_t out;
        bk_txn_out_init(&out);
        bk_txn_tick(td->coords[i], now, &out);
        bk_td_finish(td, i, &out, NULL, NULL, NULL);
        if (td->coords[i]) resend_markers(td, i, now);
    }
}

bk_txn_td_t *bk_txn_td_new(bk_node_t *n) {
    bk_txn_td_t *td = calloc(1, sizeof *td);
    if (!td) return NULL;
    td->node = n;
    bk_txn_config_defaults(&td->cfg);
    td->cfg.timeout_max_ms = bk_cfg_int(n->cfg, BK_CFG_TRANSACTION_MAX_TIMEOUT_MS);
    td->cfg.id_expiration_ms = bk_cfg_int(n->cfg, BK_CFG_TRANSACTIONAL_ID_EXPIRATION_MS);
    td->timer = event_new(n->base, -1, EV_PERSIST, on_timer, td);
    struct timeval tv = { 0, BK_TXN_TD_TICK_MS * 1000 };
    if (!td->timer || event_add(td->timer, &tv) != 0) {
        if (td->timer) event_free(td->timer);
        free(td);
        return NULL;
    }
    return td;   /* cores load at the first bk_txn_td_sync (after the group driver's) */
}

void bk_txn_td_stop(bk_txn_td_t *td) {
    if (!td || td->stopped) return;
    td->stopped = true;
    if (td->timer) { event_free(td->timer); td->timer = NULL; }
    td_flights_drop(td, -1);
    td_verify_drop_all(td);
    td_peers_free(td);
}

void bk_txn_td_free(bk_txn_td_t *td) {
    if (!td) return;
    bk_txn_td_stop(td);
    for (int32_t i = 0; i < td->ncoords; i++)
        if (td->coords[i]) { bk_txn_coord_free(td->coords[i]); free(td->coords[i]); }
    free(td->coords);
    free(td);
}
