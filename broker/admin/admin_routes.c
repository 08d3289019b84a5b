/* broker/admin/admin_routes.c — /v1/cluster, /v1/topics, /v1/topics/{name}. */
#include "broker/admin/admin_routes.h"
#include "broker/admin/admin_int.h"

#include <stdio.h>
#include <string.h>

#include "broker/meta/meta_log.h"
#include "broker/net/clock.h"
#include "broker/replication/parts.h"
#include "storage/st_cleaner.h"

static void uuid_text(const bk_meta_uuid_t *u, char out[37]) {
    static const char hx[] = "0123456789abcdef";
    int k = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[k++] = '-';
        out[k++] = hx[u->b[i] >> 4];
        out[k++] = hx[u->b[i] & 15];
    }
    out[k] = '\0';
}

static void get_cluster(bk_http_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_kv_str(j, "cluster_id", n->cluster_id);
    bk_http_json_kv_i64(j, "node_id", n->id);
    /* the raft leader is the active controller (with the local committer: this node) */
    bk_http_json_kv_i64(j, "controller_id", bk_node_controller_id(n));
    bk_http_json_kv_i64(j, "leader_id", bk_node_controller_id(n));
    bk_http_json_kv_i64(j, "leader_epoch", bk_node_quorum_epoch(n));
    bk_http_json_kv_i64(j, "high_watermark", bk_node_metadata_hw(n));
    bk_http_json_key(j, "brokers");
    bk_http_json_arr_begin(j);
    for (size_t i = 0; i < n->img.nbrokers; i++) {
        const bk_meta_broker_t *b = &n->img.brokers[i];
        bk_http_json_obj_begin(j);
        bk_http_json_kv_i64(j, "node_id", b->id);
        bk_http_json_kv_str(j, "host", b->nendpoints ? b->endpoints[0].host : NULL);
        if (b->nendpoints) bk_http_json_kv_i64(j, "port", b->endpoints[0].port);
        else bk_http_json_kv_null(j, "port");
        /* host/port above are the first listener's (kept for scripts that
         * read them); every advertised listener as in /v1/brokers */
        admin_json_listeners(j, b);
        bk_http_json_kv_str(j, "rack", b->rack);
        bk_http_json_kv_bool(j, "fenced", b->fenced);
        bk_http_json_obj_end(j);
    }
    bk_http_json_arr_end(j);
    bk_http_json_obj_end(j);
    bk_http_reply_json(req, 200);
}


/* The console's summary of a topic (issue 21): partitions with an ISR
 * smaller than the replica set, partitions without a leader, and the bytes
 * of this node's replicas (a node knows only its own logs' sizes). One pass
 * over the partitions: O(partitions) per topic, no I/O. */
static void topic_state(bk_http_json_t *j, bk_node_t *n, const bk_meta_topic_t *t) {
    int64_t under = 0, offline = 0;
    uint64_t size = 0;
    for (int32_t i = 0; i < t->nparts; i++) {
        const bk_meta_partition_t *p = &t->parts[i];
        if (p->leader < 0) offline++;
        else if (p->isr.n < p->replicas.n) under++;
        bk_repl_part_t *bp = bk_repl_parts_get(n->parts, &t->id, p->id);
        if (bp && bp->log) size += st_log_size_bytes(bp->log);
    }
    bk_http_json_kv_i64(j, "under_replicated_partitions", under);
    bk_http_json_kv_i64(j, "offline_partitions", offline);
    bk_http_json_kv_u64(j, "size_bytes", size);
}

static void get_topics(bk_http_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_key(j, "topics");
    bk_http_json_arr_begin(j);
    for (size_t i = 0; i < n->img.ntopics; i++) {
        const bk_meta_topic_t *t = n->img.by_name[i];
        char id[37];
        uuid_text(&t->id, id);
        bk_http_json_obj_begin(j);
        bk_http_json_kv_str(j, "name", t->name);
        bk_http_json_kv_str(j, "topic_id", id);
        bk_http_json_kv_i64(j, "partitions", t->nparts);
        bk_http_json_kv_i64(j, "replication_factor", t->nparts ? t->parts[0].replicas.n : 0);
        bk_http_json_kv_bool(j, "internal", bk_meta_topic_is_internal(t->name));
        topic_state(j, n, t);
        bk_http_json_obj_end(j);
    }
    bk_http_json_arr_end(j);
    bk_http_json_obj_end(j);
    bk_http_reply_json(req, 200);
}

static void ids(bk_http_json_t *j, const char *k, const bk_meta_ids_t *s) {
    bk_http_json_key(j, k);
    bk_http_json_arr_begin(j);
    for (int32_t i = 0; i < s->n; i++) bk_http_json_i64(j, s->v[i]);
    bk_http_json_arr_end(j);
}

typedef struct { bk_http_json_t *j; } cfg_ctx_t;

static void cfg_row(const bk_cfg_entry_t *e, void *ctx) {
    cfg_ctx_t *c = ctx;
    if (e->value) bk_http_json_kv_str(c->j, e->name, e->value);
    else bk_http_json_kv_null(c->j, e->name);
}

static void get_topic(bk_http_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    const char *name = bk_http_param(req, "name");
    const bk_meta_topic_t *t = name ? bk_meta_image_topic_by_name(&n->img, name) : NULL;
    if (!t) { bk_http_reply_error(req, 404, "unknown topic '%s'", name ? name : ""); return; }
    char id[37];
    uuid_text(&t->id, id);
    bk_http_json_t *j = bk_http_admin_json(req);
    bk_http_json_obj_begin(j);
    bk_http_json_kv_str(j, "name", t->name);
    bk_http_json_kv_str(j, "topic_id", id);
    bk_http_json_key(j, "configs");
    bk_http_json_obj_begin(j);
    cfg_ctx_t cc = { j };
    bk_cfg_topic_describe(n->cfg, bk_node_topic_config(n, t->name), cfg_row, &cc);
    bk_http_json_obj_end(j);
    bk_http_json_key(j, "partitions");
    bk_http_json_arr_begin(j);
    for (int32_t i = 0; i < t->nparts; i++) {
        const bk_meta_partition_t *p = &t->parts[i];
        bk_http_json_obj_begin(j);
        bk_http_json_kv_i64(j, "partition", p->id);
        bk_http_json_kv_i64(j, "leader", p->leader);
        bk_http_json_kv_i64(j, "leader_epoch", p->leader_epoch);
        ids(j, "replicas", &p->replicas);
        ids(j, "isr", &p->isr);
        ids(j, "adding_replicas", &p->adding);       /* non-empty while being reassigned */
        ids(j, "removing_replicas", &p->removing);
        bk_repl_part_t *bp = bk_repl_parts_get(n->parts, &t->id, p->id);
        if (bp && bp->log) {
            bk_http_json_kv_i64(j, "log_start_offset", st_log_start_offset(bp->log));
            bk_http_json_kv_i64(j, "high_watermark", st_log_high_watermark(bp->log));
            bk_http_json_kv_i64(j, "log_end_offset", st_log_end_offset(bp->log));
            bk_http_json_kv_u64(j, "size_bytes", st_log_size_bytes(bp->log));
            /* this node's replica: each replica compacts its own log */
            bk_http_json_kv_i64(j, "cleaner_offset", st_log_cleaner_offset(bp->log));
            bk_http_json_kv_f64(j, "dirty_ratio", st_log_dirty_ratio(bp->log, bk_net_now_ms()));
            bk_http_json_kv_bool(j, "uncleanable", bp->clean_bad_gen != 0 && bp->clean_bad_gen == bp->log_gen);
        } else {
            bk_http_json_kv_null(j, "log_start_offset");
            bk_http_json_kv_null(j, "high_watermark");
            bk_http_json_kv_null(j, "log_end_offset");
            bk_http_json_kv_null(j, "size_bytes");
            bk_http_json_kv_null(j, "cleaner_offset");
            bk_http_json_kv_null(j, "dirty_ratio");
            bk_http_json_kv_null(j, "uncleanable");
        }
        bk_http_json_obj_end(j);
    }
    bk_http_json_arr_end(j);
    bk_http_json_obj_end(j);
    bk_http_reply_json(req, 200);
}

int bk_admin_routes_add(bk_node_t *n) {
    int rc;
    if ((rc = bk_http_route(n->admin, "GET", "/v1/cluster", get_cluster, n)) != KP_OK) return rc;
    if ((rc = bk_http_route(n->admin, "GET", "/v1/topics", get_topics, n)) != KP_OK) return rc;
    return bk_http_route(n->admin, "GET", "/v1/topics/{name}", get_topic, n);
}
