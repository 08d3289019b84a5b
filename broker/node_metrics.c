/* broker/node_metrics.c — see node_metrics.h. */
#include "broker/node_metrics.h"
#include "broker/replication/replica.h"

#include <sys/resource.h>
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "broker/api/dispatch.h"
#include "broker/api/fetch.h"
#include "broker/core/quota.h"
#include "broker/net/mem.h"
#include "broker/replication/purgatory.h"
#include "broker/metrics/metrics_catalogue.h"
#include "broker/replication/cleaner.h"
#include "broker/replication/parts.h"
#include "broker/quorum/quorum.h"
#include "broker/group/group_driver.h"
#include "broker/api/api_metrics.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_codec.h"



typedef struct { bk_mx_emit_t *e; } emit_ctx_t;

static void emit_size(bk_repl_part_t *p, void *ctx) {
    emit_ctx_t *c = ctx;
    if (!p->log) return;
    char part[16];
    snprintf(part, sizeof part, "%d", p->partition);
    bk_mx_emit(c->e, (const char *[]){ p->topic, part }, (double)st_log_size_bytes(p->log));
}

static void collect_log_sizes(bk_mx_emit_t *e, void *arg) {
    bk_node_t *n = arg;
    emit_ctx_t c = { e };
    if (n->parts) bk_repl_parts_each(n->parts, emit_size, &c);
}

/* One bk_net_t serves every Kafka listener and counts them together: one
 * series, listener="kafka". */
static void collect_conns(bk_mx_emit_t *e, void *arg) {
    bk_node_t *n = arg;
    bk_net_stats_t st = { 0 };
    if (n->net) bk_net_stats(n->net, &st);
    bk_mx_emit(e, (const char *[]){ "kafka" }, (double)st.conns_open);
}

static void collect_accepted(bk_mx_emit_t *e, void *arg) {
    bk_node_t *n = arg;
    bk_net_stats_t st = { 0 };
    if (n->net) bk_net_stats(n->net, &st);
    bk_mx_emit(e, (const char *[]){ "kafka" }, (double)st.conns_total);
}

/* Transport pressure: descriptors, request memory, accept failures, the
 * connections the node closed or refused (issue 16). */
static void collect_net(bk_mx_emit_t *e, void *arg, int what) {
    bk_node_t *n = arg;
    bk_net_stats_t st = { 0 };
    if (n->net) bk_net_stats(n->net, &st);
    switch (what) {
    case 0:
        bk_mx_emit(e, (const char *[]){ "fds" }, (double)st.accept_emfile);
        bk_mx_emit(e, (const char *[]){ "other" }, (double)(st.accept_failures - st.accept_emfile));
        break;
    case 1:
        bk_mx_emit(e, (const char *[]){ "idle" }, (double)st.conns_idle_closed);
        bk_mx_emit(e, (const char *[]){ "write_stall" }, (double)st.conns_stall_closed);
        bk_mx_emit(e, (const char *[]){ "bad_frame" }, (double)st.conns_bad_frame);
        break;
    default:
        bk_mx_emit(e, (const char *[]){ "max_connections" }, (double)(st.conns_rejected - st.conns_rejected_ip));
        bk_mx_emit(e, (const char *[]){ "per_ip" }, (double)st.conns_rejected_ip);
        break;
    }
}
static void collect_accept_failures(bk_mx_emit_t *e, void *arg) { collect_net(e, arg, 0); }

/* Per network loop (num.network.threads): connections and hand-offs. */
static void collect_loops(bk_mx_emit_t *e, void *arg, bool frames) {
    bk_node_t *n = arg;
    if (!n->net) return;
    for (uint32_t i = 0; i < bk_net_loops(n->net); i++) {
        bk_net_loop_stats_t ls;
        bk_net_loop_stats(n->net, i, &ls);
        char name[12];
        snprintf(name, sizeof name, "%u", i);
        bk_mx_emit(e, (const char *[]){ name }, (double)(frames ? ls.frames_posted : ls.conns_open));
    }
}
static void collect_loop_conns(bk_mx_emit_t *e, void *arg) { collect_loops(e, arg, false); }

/* The block pool is process-wide (net/mem.h): a node in a test process
 * with others reports the process's figures. */
static void collect_mem_pool(bk_mx_emit_t *e, void *arg) {
    (void)arg;
    bk_net_mem_stats_t st;
    bk_net_mem_stats(&st);
    bk_mx_emit(e, (const char *[]){ "fresh" }, (double)st.fresh);
    bk_mx_emit(e, (const char *[]){ "unpooled" }, (double)st.unpooled);
    bk_mx_emit(e, (const char *[]){ "released" }, (double)st.released);
}
static double read_mem_depot(void *arg) {
    (void)arg;
    bk_net_mem_stats_t st;
    bk_net_mem_stats(&st);
    return (double)st.depot_bytes;
}
static void collect_loop_frames(bk_mx_emit_t *e, void *arg) { collect_loops(e, arg, true); }
static void collect_closed(bk_mx_emit_t *e, void *arg) { collect_net(e, arg, 1); }
static void collect_refused(bk_mx_emit_t *e, void *arg) { collect_net(e, arg, 2); }

static double read_fds(void *arg) {
    uint64_t open_fds = 0, limit = 0;
    (void)arg;
    return bk_net_fd_usage(&open_fds, &limit) == BK_NET_OK ? (double)open_fds : -1;
}
static double read_fds_limit(void *arg) {
    /* the limit alone: no walk of /proc/self/fd (read_fds does one per scrape) */
    struct rlimit rl;
    (void)arg;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return -1;
    return (double)rl.rlim_cur;
}
static double read_req_mem(void *arg) {
    bk_node_t *n = arg;
    bk_net_stats_t st = { 0 };
    if (n->net) bk_net_stats(n->net, &st);
    return (double)st.queued_bytes;
}
static double read_req_budget(void *arg) {
    bk_node_t *n = arg;
    if (!n->net) return (double)bk_cfg_int(n->cfg, BK_CFG_QUEUED_MAX_REQUEST_BYTES);
    bk_net_pressure_t np;
    bk_net_pressure(n->net, &np);   /* the budget the net enforces */
    return (double)np.request_memory_budget;
}
static double read_mem_waiting(void *arg) {
    bk_node_t *n = arg;
    bk_net_stats_t st = { 0 };
    if (n->net) bk_net_stats(n->net, &st);
    return (double)st.mem_waiting;
}
static void collect_log_suppressed(bk_mx_emit_t *e, void *arg) {
    bk_node_t *n = arg;
    bk_net_stats_t st = { 0 };
    if (n->net) bk_net_stats(n->net, &st);
    bk_mx_emit(e, NULL, (double)st.log_suppressed);
}

static void collect_prechecked(bk_mx_emit_t *e, void *arg) {
    bk_node_t *n = arg;
    bk_mx_emit(e, NULL, n->parts ? (double)bk_repl_parts_prechecked_batches(n->parts) : 0.0);
}

/* Fetch record bytes by path (broker/api/fetch.h): "copy" stays 0 while
 * every Fetch is v10+ (zero copy, issue 19). */
static void collect_fetch_bytes(bk_mx_emit_t *e, void *arg) {
    bk_node_t *n = arg;
    bk_api_fetch_stats_t st;
    bk_api_fetch_stats(n->fetch, &st);
    bk_mx_emit(e, (const char *[]){ "file" }, (double)st.file_bytes);
    bk_mx_emit(e, (const char *[]){ "copy" }, (double)st.copy_bytes);
}

/* Fetch below v10: where its copy, zstd check and down-conversion ran
 * (broker/api/fetch_convert_int.h); "inline" grows only when the worker
 * pool's queue is full. */
static void collect_fetch_converted(bk_mx_emit_t *e, void *arg) {
    bk_node_t *n = arg;
    bk_api_fetch_stats_t st;
    bk_api_fetch_stats(n->fetch, &st);
    bk_mx_emit(e, (const char *[]){ "inline" }, (double)st.sets_inline);
    bk_mx_emit(e, (const char *[]){ "worker" }, (double)st.sets_worker);
}

/* Produce with acks=-1 waits in the replication driver (replica.h). */
static void collect_purgatory(bk_mx_emit_t *e, void *arg) {
    bk_node_t *n = arg;
    size_t joins, syncs;
    bk_grp_gd_held_counts(n->groups, &joins, &syncs);
    bk_repl_replica_stats_t rs;
    bk_repl_replica_stats(n, &rs);
    bk_mx_emit(e, (const char *[]){ "fetch" }, (double)bk_repl_purg_waiting(n->purg));
    bk_mx_emit(e, (const char *[]){ "produce" }, (double)rs.acks_waiting);
    bk_mx_emit(e, (const char *[]){ "group_join" }, (double)joins);
    bk_mx_emit(e, (const char *[]){ "group_sync" }, (double)syncs);
    bk_mx_emit(e, (const char *[]){ "group_commit" }, (double)bk_grp_gd_waiting(n->groups));
}

/* Client quotas: one series per tracked use (core/quota.h), per metric. */
typedef struct {
    bk_mx_emit_t *e;
    int what;   /* 0 used, 1 throttle ms, 2 throttled, 3 limit */
} quota_emit_t;

static void emit_quota_use(void *arg, const bk_node_quota_use_t *u) {
    quota_emit_t *q = arg;
    const char *labels[] = { bk_meta_quota_key_name(u->key), u->user, u->client };
    double v = q->what == 0 ? u->used_total : q->what == 1 ? (double)u->throttle_ms_total
             : q->what == 2 ? (double)u->throttled : u->limit;
    bk_mx_emit(q->e, labels, v);
}

static void collect_quota_untracked(bk_mx_emit_t *e, void *arg) {
    bk_mx_emit(e, NULL, (double)bk_node_quotas_untracked(((bk_node_t *)arg)->quotas));
}

static void collect_quota_used(bk_mx_emit_t *e, void *arg) {
    quota_emit_t q = { e, 0 };
    bk_node_quotas_each(((bk_node_t *)arg)->quotas, emit_quota_use, &q);
}
static void collect_quota_throttle(bk_mx_emit_t *e, void *arg) {
    quota_emit_t q = { e, 1 };
    bk_node_quotas_each(((bk_node_t *)arg)->quotas, emit_quota_use, &q);
}
static void collect_quota_throttled(bk_mx_emit_t *e, void *arg) {
    quota_emit_t q = { e, 2 };
    bk_node_quotas_each(((bk_node_t *)arg)->quotas, emit_quota_use, &q);
}
static void collect_quota_limit(bk_mx_emit_t *e, void *arg) {
    quota_emit_t q = { e, 3 };
    bk_node_quotas_each(((bk_node_t *)arg)->quotas, emit_quota_use, &q);
}

static void collect_elections(bk_mx_emit_t *e, void *arg) {
    bk_node_t *n = arg;
    bk_mx_emit(e, NULL, n->quorum ? (double)bk_quorum_elections(n->quorum) : 0);
}

static double read_epoch(void *arg) { return (double)bk_node_quorum_epoch(arg); }
static double read_leader(void *arg) { return (double)bk_node_controller_id(arg); }

static double read_commit_lag(void *arg) {
    bk_node_t *n = arg;
    if (!n->quorum) return 0;
    int64_t lag = bk_quorum_next_offset(n->quorum) - bk_node_metadata_hw(n);
    return lag > 0 ? (double)lag : 0;
}

typedef struct { const bk_node_t *n; int leaders, under; } count_ctx_t;

static void count_part(bk_repl_part_t *p, void *ctx) {
    count_ctx_t *c = ctx;
    if (!p->leader) return;
    c->leaders++;
    const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&c->n->img, p->topic);
    if (t && p->partition < t->nparts) {
        const bk_meta_partition_t *ip = &t->parts[p->partition];
        if (ip->isr.n < ip->replicas.n) c->under++;
    }
}

static count_ctx_t count(bk_node_t *n) {
    count_ctx_t c = { n, 0, 0 };
    if (n->parts) bk_repl_parts_each(n->parts, count_part, &c);
    return c;
}

static double read_leaders(void *arg) { return count(arg).leaders; }
static double read_under(void *arg) { return count(arg).under; }

static double read_offline(void *arg) {
    bk_node_t *n = arg;
    size_t off = 0;
    for (size_t i = 0; i < n->img.ntopics; i++) {
        const bk_meta_topic_t *t = n->img.by_name[i];
        for (int32_t k = 0; k < t->nparts; k++)
            if (t->parts[k].leader < 0) off++;
    }
    return (double)off;
}

static bk_repl_cleaner_stats_t cleaner_stats(void *arg) {
    bk_node_t *n = arg;
    bk_repl_cleaner_stats_t st;
    bk_repl_cleaner_stats(n->cleaner, &st);
    return st;
}

static void collect_cleaner_passes(bk_mx_emit_t *e, void *arg) { bk_mx_emit(e, NULL, (double)cleaner_stats(arg).passes); }
static void collect_cleaner_read(bk_mx_emit_t *e, void *arg) { bk_mx_emit(e, NULL, (double)cleaner_stats(arg).bytes_read); }
static void collect_cleaner_written(bk_mx_emit_t *e, void *arg) {
    bk_mx_emit(e, NULL, (double)cleaner_stats(arg).bytes_written);
}
static void collect_cleaner_removed(bk_mx_emit_t *e, void *arg) {
    bk_mx_emit(e, NULL, (double)cleaner_stats(arg).records_removed);
}
static double read_cleaner_last(void *arg) { return (double)cleaner_stats(arg).last_pass_ms / 1000.0; }
static double read_cleaner_ratio(void *arg) { return cleaner_stats(arg).max_dirty_ratio; }
static double read_cleaner_bad(void *arg) { return (double)cleaner_stats(arg).uncleanable; }

static void gauge_fn(bk_node_t *n, bk_mx_id_t id, bk_mx_value_fn fn) {
    bk_mx_set_fn(bk_mx_series(n->metrics, id, NULL), fn, n);
}


int bk_broker_metrics_start(bk_node_t *n) {
    n->metrics = bk_mx_new();
    if (!n->metrics || bk_mx_catalogue_register(n->metrics) != KP_OK) {
        bk_broker_metrics_free(n);
        return KP_ERR_NOMEM;
    }
    bk_mx_set_collector(n->metrics, BK_MX_LOG_SIZE_BYTES, collect_log_sizes, n);
    bk_mx_set_collector(n->metrics, BK_MX_CONNECTIONS, collect_conns, n);
    bk_mx_set_collector(n->metrics, BK_MX_CONNECTIONS_ACCEPTED_TOTAL, collect_accepted, n);
    bk_mx_set_collector(n->metrics, BK_MX_PURGATORY_OPERATIONS, collect_purgatory, n);
    bk_mx_set_collector(n->metrics, BK_MX_FETCH_RECORD_BYTES_TOTAL, collect_fetch_bytes, n);
    bk_mx_set_collector(n->metrics, BK_MX_FETCH_CONVERTED_TOTAL, collect_fetch_converted, n);
    bk_mx_set_collector(n->metrics, BK_MX_RAFT_ELECTIONS_TOTAL, collect_elections, n);
    bk_mx_set_collector(n->metrics, BK_MX_QUOTA_USED_TOTAL, collect_quota_used, n);
    bk_mx_set_collector(n->metrics, BK_MX_QUOTA_THROTTLE_MS_TOTAL, collect_quota_throttle, n);
    bk_mx_set_collector(n->metrics, BK_MX_QUOTA_THROTTLED_TOTAL, collect_quota_throttled, n);
    bk_mx_set_collector(n->metrics, BK_MX_QUOTA_LIMIT, collect_quota_limit, n);
    bk_mx_set_collector(n->metrics, BK_MX_CLEANER_PASSES_TOTAL, collect_cleaner_passes, n);
    bk_mx_set_collector(n->metrics, BK_MX_CLEANER_BYTES_READ_TOTAL, collect_cleaner_read, n);
    bk_mx_set_collector(n->metrics, BK_MX_CLEANER_BYTES_WRITTEN_TOTAL, collect_cleaner_written, n);
    bk_mx_set_collector(n->metrics, BK_MX_CLEANER_RECORDS_REMOVED_TOTAL, collect_cleaner_removed, n);
    gauge_fn(n, BK_MX_CLEANER_LAST_PASS_SECONDS, read_cleaner_last);
    gauge_fn(n, BK_MX_CLEANER_MAX_DIRTY_RATIO, read_cleaner_ratio);
    gauge_fn(n, BK_MX_CLEANER_UNCLEANABLE_LOGS, read_cleaner_bad);
    gauge_fn(n, BK_MX_RAFT_EPOCH, read_epoch);
    gauge_fn(n, BK_MX_RAFT_LEADER_ID, read_leader);
    gauge_fn(n, BK_MX_RAFT_COMMIT_LAG_RECORDS, read_commit_lag);
    gauge_fn(n, BK_MX_PARTITIONS_LEADER, read_leaders);
    gauge_fn(n, BK_MX_UNDER_REPLICATED_PARTITIONS, read_under);
    gauge_fn(n, BK_MX_OFFLINE_PARTITIONS, read_offline);
    bk_mx_set_collector(n->metrics, BK_MX_ACCEPT_FAILURES_TOTAL, collect_accept_failures, n);
    bk_mx_set_collector(n->metrics, BK_MX_CONNECTIONS_CLOSED_TOTAL, collect_closed, n);
    bk_mx_set_collector(n->metrics, BK_MX_NET_LOOP_CONNECTIONS, collect_loop_conns, n);
    bk_mx_set_collector(n->metrics, BK_MX_NET_LOOP_FRAMES_TOTAL, collect_loop_frames, n);
    bk_mx_set_collector(n->metrics, BK_MX_MEM_POOL_BLOCKS_TOTAL, collect_mem_pool, n);
    gauge_fn(n, BK_MX_MEM_POOL_DEPOT_BYTES, read_mem_depot);
    bk_mx_set_collector(n->metrics, BK_MX_CONNECTIONS_REFUSED_TOTAL, collect_refused, n);
    gauge_fn(n, BK_MX_OPEN_FDS, read_fds);
    gauge_fn(n, BK_MX_OPEN_FDS_LIMIT, read_fds_limit);
    gauge_fn(n, BK_MX_REQUEST_MEMORY_BYTES, read_req_mem);
    gauge_fn(n, BK_MX_REQUEST_MEMORY_BUDGET_BYTES, read_req_budget);
    gauge_fn(n, BK_MX_REQUEST_MEMORY_WAITING, read_mem_waiting);
    bk_mx_set_collector(n->metrics, BK_MX_LOG_LINES_SUPPRESSED_TOTAL, collect_log_suppressed, n);
    bk_mx_set_collector(n->metrics, BK_MX_PRODUCE_BATCHES_PRECHECKED_TOTAL, collect_prechecked, n);
    bk_mx_set_collector(n->metrics, BK_MX_QUOTA_UNTRACKED_TOTAL, collect_quota_untracked, n);
    if (bk_api_metrics_start(n) != KP_OK) {
        bk_broker_metrics_free(n);
        return KP_ERR_NOMEM;
    }
    return KP_OK;
}

void bk_broker_metrics_free(bk_node_t *n) {
    bk_mx_free(n->metrics);
    n->metrics = NULL;
    bk_api_metrics_free(n);
}




