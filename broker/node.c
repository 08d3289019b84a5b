/* broker/node.c — node lifecycle: start-up, commit path, periodic work,
 * graceful shutdown (see node.h). */
#include "broker/node.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "broker/core/credentials.h"
#include "broker/core/quota.h"
#include "broker/admin/admin_quorum.h"
#include "broker/admin/admin_ops.h"
#include "broker/admin/admin_auth.h"
#include "broker/admin/admin_routes.h"
#include "broker/node_metrics.h"
#include "broker/api/dispatch.h"
#include "broker/api/fetch.h"
#include "broker/api/prepare.h"
#include "broker/replication/purgatory.h"
#include "broker/group/group_driver.h"
#include "broker/txn/txn_driver.h"
#include "broker/meta/meta_log.h"
#include "broker/node_dynconf.h"
#include "broker/replication/cleaner.h"
#include "broker/node_fds.h"
#include "broker/node_tls.h"
#include "broker/replication/parts.h"
#include "broker/replication/replica.h"
#include "broker/replication/scrubber.h"
#include "broker/quorum/quorum.h"
#include "broker/config/ip_overrides.h"
#include "kp_msgs.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_header.h"
#include "broker/net/quorum_client.h"
#include "broker/cluster/broker_lifecycle.h"
#include "broker/cluster/forward.h"
#include "storage/st_checkpoint.h"
#include "storage/st_guard.h"
#include "storage/st_status.h"


static int fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

/* mkdir -p */
static int mkdirs(const char *path) {
    char tmp[ST_PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) return -1;
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    return 0;
}

/* ---- configs ------------------------------------------------------------ */


static void log_cfg_cb(void *ctx, const char *topic, st_log_config_t *out) {
    bk_node_log_config(ctx, topic, out);
}

typedef struct { char dir[ST_PATH_MAX + 300]; } purge_t;   /* a trash directory to remove */

/* Worker job: removes a renamed (deleted) partition directory. Touches only
 * its own argument. */
static int trash_job(void *arg) {
    const char *dir = ((purge_t *)arg)->dir;
    DIR *d = opendir(dir);
    if (!d) return ST_ERR_IO;
    struct dirent *e;
    char p[sizeof ((purge_t *)0)->dir + 260];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        (void)unlink(p);
    }
    closedir(d);
    return rmdir(dir) == 0 ? KP_OK : ST_ERR_IO;
}

static void trash_done(void *arg, int status) {
    if (status != KP_OK) st_logf(ST_LOG_WARN, "could not remove %s; it is removed at the next start", ((purge_t *)arg)->dir);
    free(arg);
}

static void trash_cb(void *ctx, const char *path) {
    bk_node_t *n = ctx;
    purge_t *j = malloc(sizeof *j);
    if (!j) return;
    snprintf(j->dir, sizeof j->dir, "%s", path);
    /* no pool yet (start-up replay) or queue full: the next start removes it */
    if (!n->pool || bk_net_worker_submit(n->pool, trash_job, trash_done, j) != BK_NET_OK) free(j);
}

/* Deleted partitions whose removal a crash interrupted. */
static void trash_leftovers(bk_node_t *n) {
    for (size_t i = 0; i < n->ndirs; i++) {
        DIR *d = opendir(n->dirs[i].path);
        if (!d) continue;
        struct dirent *e;
        char p[ST_PATH_MAX + 300];
        while ((e = readdir(d)) != NULL) {
            if (!bk_repl_parts_is_trash(e->d_name)) continue;
            snprintf(p, sizeof p, "%s/%s", n->dirs[i].path, e->d_name);
            trash_cb(n, p);
        }
        closedir(d);
    }
}

static void reconfig_one(bk_repl_part_t *p, void *ctx) {
    if (!p->log) return;
    st_log_config_t lc;
    bk_node_log_config(ctx, p->topic, &lc);
    st_log_set_config(p->log, &lc);
}

void bk_broker_configs_changed(bk_node_t *n) { bk_repl_parts_each(n->parts, reconfig_one, n); }

/* Logs opened on the pool are in place: a coordinator partition may now
 * load. */
static void parts_opened(void *ctx) {
    bk_node_t *n = ctx;
    if (n->stopping) return;
    bk_repl_replica_attach_opened(n);
    if (n->groups) bk_grp_gd_sync(n->groups);
}

static bool net_limits(bk_node_t *n);

/* ---- commit path ---------------------------------------------------------- */

void bk_broker_after_commit(bk_node_t *n) {
    /* Config records reach every node's running config and open logs here
     * (not only the node that handled the request); only when they changed:
     * re-configuring every log per commit is O(partitions). */
    bool cfg_changed = n->img.configs_gen != n->configs_gen;
    n->configs_gen = n->img.configs_gen;
    if (cfg_changed) {
        bk_broker_dynconf_sync(n);
        /* the broker settings the running node reads once, not per use */
        bk_repl_cleaner_kick(n->cleaner);   /* a changed ratio or lag acts now, not after the backoff */
        if (n->net && !net_limits(n))
            fprintf(stderr, "skiff: node %d: new connection limits not applied; the previous ones stay\n", n->id);
    }
    size_t max = bk_meta_image_pending_changes(&n->img);
    if (max == 0 || !n->parts) {
        if (!n->parts) (void)bk_meta_image_take_changes(&n->img, NULL, 0);
        else if (cfg_changed) bk_broker_configs_changed(n);
        return;
    }
    bk_meta_change_t *ch = malloc(max * sizeof *ch);
    if (!ch) {
        st_logf(ST_LOG_ERROR, "node %d: out of memory applying %zu partition changes", n->id, max);
        return;
    }
    size_t cnt = bk_meta_image_take_changes(&n->img, ch, max);
    assert(cnt <= max);
    bk_repl_replica_before_apply(n, ch, cnt);
    size_t failed = bk_repl_parts_apply(n->parts, &n->img, ch, cnt, log_cfg_cb, n, trash_cb, bk_net_now_ms());
    bk_repl_replica_after_apply(n, ch, cnt);
    if (failed)
        st_logf(ST_LOG_ERROR, "node %d: %zu partitions could not be opened; they are offline", n->id, failed);
    free(ch);
    if (cfg_changed) bk_broker_configs_changed(n);
    if (n->groups) bk_grp_gd_sync(n->groups);
    if (n->txns) bk_txn_td_sync(n->txns);
}


/* ---- start-up ----------------------------------------------------------------- */

static int load_dirs(bk_node_t *n, char *err, size_t len) {
    n->ndirs = bk_cfg_log_dir_count(n->cfg);
    n->dirs = calloc(n->ndirs, sizeof *n->dirs);
    if (!n->dirs) return fail(err, len, "out of memory");
    const char *meta = bk_cfg_metadata_log_dir(n->cfg);
    n->meta_dir_idx = -1;
    for (size_t i = 0; i < n->ndirs; i++) {
        const char *d = bk_cfg_log_dir(n->cfg, i);
        if (mkdirs(d) != 0) return fail(err, len, "log dir %s: cannot create: %s", d, strerror(errno));
        if (st_logdir_load(&n->dirs[i], d) != KP_OK) return fail(err, len, "log dir %s: cannot load", d);
        if (strcmp(d, meta) == 0) n->meta_dir_idx = (int)i;
    }
    if (n->meta_dir_idx < 0) {
        if (mkdirs(meta) != 0) return fail(err, len, "metadata.log.dir %s: cannot create: %s", meta, strerror(errno));
        if (st_logdir_load(&n->meta_dir, meta) != KP_OK) return fail(err, len, "metadata.log.dir %s: cannot load", meta);
    }
    return 0;
}

/* meta.properties: written at first start, checked afterwards (a log dir
 * of another cluster or node must not be served). */
static int check_meta_props(bk_node_t *n, const char *dir, char *err, size_t len) {
    char cid[BK_NODE_CLUSTER_ID_MAX + 1];
    int32_t nid = -1;
    int rc = st_meta_read(dir, cid, sizeof cid, &nid);
    if (rc == ST_ERR_NOT_FOUND) {
        if (st_meta_write(dir, n->cluster_id, n->id) != KP_OK)
            return fail(err, len, "%s/meta.properties: cannot write", dir);
        return 0;
    }
    if (rc != KP_OK) return fail(err, len, "%s/meta.properties: unreadable (%s)", dir, st_status_str(rc));
    if (nid != n->id) return fail(err, len, "%s/meta.properties: node.id %d, but this is node %d", dir, nid, n->id);
    if (strcmp(cid, n->cluster_id) != 0)
        return fail(err, len, "%s/meta.properties: cluster.id %s, but the config says %s", dir, cid, n->cluster_id);
    return 0;
}

static int pick_cluster_id(bk_node_t *n, char *err, size_t len) {
    const char *cid = bk_cfg_str(n->cfg, BK_CFG_CLUSTER_ID);
    if (cid && *cid) {
        snprintf(n->cluster_id, sizeof n->cluster_id, "%s", cid);
        return 0;
    }
    /* No cluster.id: keep the one in the first log dir, else make one. */
    int32_t nid;
    if (st_meta_read(bk_cfg_log_dir(n->cfg, 0), n->cluster_id, sizeof n->cluster_id, &nid) == KP_OK) return 0;
    uint8_t r[16];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) return fail(err, len, "getrandom failed");
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (int i = 0; i < 22; i++) n->cluster_id[i] = b64[(r[i % 16] + i) & 63];
    n->cluster_id[22] = '\0';
    return 0;
}

/* Every advertised listener (name, host, port): an empty host is this
 * machine's name, port 0 the port the listener of that name bound. */
static void advertised_address(bk_node_t *n) {
    size_t na = 0, nl = 0;
    const bk_cfg_listener_t *adv = bk_cfg_advertised(n->cfg, &na);
    const bk_cfg_listener_t *ls = bk_cfg_listeners(n->cfg, &nl);
    char me[BK_NODE_HOST_NAME_MAX + 1];
    if (gethostname(me, sizeof me) != 0) snprintf(me, sizeof me, "localhost");
    n->nadv = 0;
    for (size_t i = 0; i < na && n->nadv < BK_CFG_LISTENERS_MAX; i++) {
        bk_node_adv_t *a = &n->adv[n->nadv++];
        snprintf(a->name, sizeof a->name, "%s", adv[i].name);
        snprintf(a->host, sizeof a->host, "%s", adv[i].host[0] ? adv[i].host : me);
        a->port = adv[i].port;
        for (size_t k = 0; a->port == 0 && k < nl; k++)
            if (strcmp(ls[k].name, adv[i].name) == 0) a->port = n->listen_port[k];
        if (a->port == 0) a->port = n->kafka_port;
    }
    if (n->nadv == 0) {
        snprintf(n->adv[0].name, sizeof n->adv[0].name, "PLAINTEXT");
        snprintf(n->adv[0].host, sizeof n->adv[0].host, "%s", me);
        n->adv[0].port = n->kafka_port;
        n->nadv = 1;
    }
    snprintf(n->adv_host, sizeof n->adv_host, "%s", n->adv[0].host);
    n->adv_port = n->adv[0].port;
}

typedef struct { int status; } sync_t;
static void sync_done(void *arg, int status) { ((sync_t *)arg)->status = status; }

/* Registers this node and unfences it: the quorum of one is its own
 * controller, so both decisions are committed locally at start. */
static int register_self(bk_node_t *n, char *err, size_t len) {
    bk_meta_ctrl_endpoint_t eps[BK_CFG_LISTENERS_MAX];
    for (size_t i = 0; i < n->nadv; i++) eps[i] = (bk_meta_ctrl_endpoint_t){ n->adv[i].name, n->adv[i].host, n->adv[i].port };
    bk_meta_ctrl_register_t rq;
    memset(&rq, 0, sizeof rq);
    rq.broker_id = n->id;
    if (getrandom(rq.incarnation, sizeof rq.incarnation, 0) != (ssize_t)sizeof rq.incarnation)
        return fail(err, len, "getrandom failed");
    rq.incarnation[0] |= 1;   /* never all-zero */
    rq.endpoints = eps;
    rq.nendpoints = n->nadv;
    rq.rack = bk_cfg_is_null(n->cfg, BK_CFG_BROKER_RACK) ? NULL : bk_cfg_str(n->cfg, BK_CFG_BROKER_RACK);
    int64_t now = bk_net_now_ms();
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    int16_t e = bk_meta_ctrl_register(&n->ctrl, &n->img, &rq, bk_meta_log_next_offset(n->meta), now, &recs,
                                 &n->broker_epoch);
    /* a new cluster finalizes its feature levels with its first decision
     * (a quorum's controller does it in bk_meta_ctrl_tick) */
    if (e == 0) bk_meta_ctrl_features_bootstrap(&n->img, &recs);
    sync_t s = { -1 };
    if (e == 0) bk_node_commit(n, &recs, sync_done, &s);
    bk_meta_recs_free(&recs);
    if (e != 0 || s.status != KP_OK) return fail(err, len, "node %d: self-registration failed (error %d, status %d)", n->id, e, s.status);

    bk_meta_ctrl_heartbeat_t hb = { n->id, n->broker_epoch, n->img.last_offset, false, false };
    bk_meta_ctrl_heartbeat_result_t hr;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_heartbeat(&n->ctrl, &n->img, &hb, now, &recs, &hr);
    s.status = -1;
    if (hr.error == 0) bk_node_commit(n, &recs, sync_done, &s);
    bk_meta_recs_free(&recs);
    if (hr.error != 0 || s.status != KP_OK || hr.is_fenced)
        return fail(err, len, "node %d: could not unfence itself (error %d)", n->id, hr.error);
    return 0;
}

static bool validate_topic_config(const char *name, const char *value, char *err, size_t errlen) {
    return bk_cfg_topic_validate(name, value, err, errlen) == 0;
}

static void ctrl_setup(bk_node_t *n, uint64_t nofile) {
    bk_meta_ctrl_config_t cc;
    bk_meta_ctrl_config_defaults(&cc);
    cc.num_partitions = (int32_t)bk_cfg_int(n->cfg, BK_CFG_NUM_PARTITIONS);
    cc.default_replication_factor = (int16_t)bk_cfg_int(n->cfg, BK_CFG_DEFAULT_REPLICATION_FACTOR);
    cc.session_timeout_ms = bk_cfg_int(n->cfg, BK_CFG_BROKER_SESSION_TIMEOUT_MS);
    cc.unclean_leader_election = bk_cfg_bool(n->cfg, BK_CFG_UNCLEAN_LEADER_ELECTION_ENABLE);
    cc.leader_imbalance_pct = (int32_t)bk_cfg_int(n->cfg, BK_CFG_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE);
    cc.validate_config = validate_topic_config;
    cc.max_replicas_per_node = bk_broker_fds_replica_limit(n->cfg, nofile);
    char fds[32] = "unlimited";
    if (nofile != BK_BROKER_FDS_UNLIMITED) snprintf(fds, sizeof fds, "%llu", (unsigned long long)nofile);
    if (cc.max_replicas_per_node >= 0)
        fprintf(stderr, "skiff: node %d: open-file limit %s: at most %d partition replicas per node "
                        "(max.replicas.per.node)\n", n->id, fds, (int)cc.max_replicas_per_node);
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) seed = (uint64_t)bk_net_now_ms();
    bk_meta_ctrl_init(&n->ctrl, &cc, seed);
}

/* The connection limits of the config (max.connections and the per-address
 * ones) into the net: at start and after every config change. The override
 * list was checked at load (config_resolve.c), so a failure here is a bug. */
static bool net_limits(bk_node_t *n) {
    bk_net_set_conns_limit(n->net, bk_cfg_int(n->cfg, BK_CFG_MAX_CONNECTIONS));
    bk_cfg_ip_override_t ov[BK_CFG_IP_OVERRIDES_MAX];
    bk_net_ip_limit_t lim[BK_CFG_IP_OVERRIDES_MAX];
    size_t nov = 0;
    char why[160];
    if (bk_cfg_ip_overrides_parse(bk_cfg_str(n->cfg, BK_CFG_MAX_CONNECTIONS_PER_IP_OVERRIDES), ov, &nov, why,
                                  sizeof why) != KP_OK) {
        fprintf(stderr, "skiff: node %d: max.connections.per.ip.overrides: %s\n", n->id, why);
        return false;
    }
    for (size_t i = 0; i < nov; i++) {
        memcpy(lim[i].addr, ov[i].addr, sizeof lim[i].addr);
        lim[i].addr_len = ov[i].addr_len;
        lim[i].max = ov[i].max;
    }
    if (bk_net_set_ip_limits(n->net, bk_cfg_int(n->cfg, BK_CFG_MAX_CONNECTIONS_PER_IP), lim, nov) != BK_NET_OK) {
        fprintf(stderr, "skiff: node %d: per-address connection limits refused by the listener\n", n->id);
        return false;
    }
    return true;
}

/* config/ and net/ see nothing of each other: the wiring converts. */
_Static_assert((int)BK_CFG_SEC_PLAINTEXT == (int)BK_NET_SEC_PLAINTEXT && (int)BK_CFG_SEC_SSL == (int)BK_NET_SEC_SSL &&
               (int)BK_CFG_SEC_SASL_PLAINTEXT == (int)BK_NET_SEC_SASL_PLAINTEXT &&
               (int)BK_CFG_SEC_SASL_SSL == (int)BK_NET_SEC_SASL_SSL, "security enums agree");

/* num.network.threads (its range bounds it to BK_NET_LOOPS_MAX), or one
 * loop per core when unset, at most BK_NET_LOOPS_MAX (broker/net/README.md
 * "Network loops": figures of 1 vs 2 loops on this 2-core machine). */
static uint32_t net_loops(const bk_cfg_t *cfg) {
    if (!bk_cfg_is_null(cfg, BK_CFG_NUM_NETWORK_THREADS)) return (uint32_t)bk_cfg_int(cfg, BK_CFG_NUM_NETWORK_THREADS);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    return cores > BK_NET_LOOPS_MAX ? BK_NET_LOOPS_MAX : (uint32_t)cores;
}

static int start_net(bk_node_t *n, char *err, size_t len) {
    bk_net_config_t nc;
    bk_net_config_default(&nc);
    nc.request_max_bytes = (int32_t)bk_cfg_int(n->cfg, BK_CFG_SOCKET_REQUEST_MAX_BYTES);
    nc.queued_bytes_max = bk_cfg_int(n->cfg, BK_CFG_QUEUED_MAX_REQUEST_BYTES);
    nc.idle_ms = bk_cfg_int(n->cfg, BK_CFG_CONNECTIONS_MAX_IDLE_MS);
    nc.write_stall_ms = bk_cfg_int(n->cfg, BK_CFG_SOCKET_WRITE_STALL_MS);
    nc.on_frame = bk_api_dispatch_frame;
    /* Produce's CRC and record checks, before dispatch (api/prepare.h):
     * on the network loop that read the frame once there are several */
    nc.on_prepare = bk_api_prepare_frame;
    nc.prepared_free = bk_api_prepared_free;
    nc.ctx = n;
    nc.loops = net_loops(n->cfg);
    if (bk_broker_metrics_start(n) != KP_OK) return fail(err, len, "out of memory (metrics)");
    n->net = bk_net_new(n->base, &nc);
    if (!n->net) return fail(err, len, "cannot create the network server");
    bk_api_prepare_init();      /* ended after bk_net_free (bk_broker_free) */
    if (!(n->req_pool = bk_api_req_pool_new())) return fail(err, len, "out of memory (request pool)");
    fprintf(stderr, "skiff: node %d: %u network loop%s (num.network.threads%s)\n", n->id, nc.loops,
            nc.loops == 1 ? "" : "s", bk_cfg_is_null(n->cfg, BK_CFG_NUM_NETWORK_THREADS) ? " unset: one per core" : "");
    if (!net_limits(n)) return fail(err, len, "max.connections.per.ip.overrides: cannot be applied");
    size_t nl = 0;
    const bk_cfg_listener_t *ls = bk_cfg_listeners(n->cfg, &nl);
    for (size_t i = 0; i < nl; i++) {
        if (ls[i].controller) continue;   /* the raft driver will serve it */
        const char *host = ls[i].host[0] ? ls[i].host : "0.0.0.0";
        uint16_t bound = 0;
        bk_net_listener_config_t lc = { .name = ls[i].name, .host = host, .port = ls[i].port,
                                        .security = (bk_net_security_t)ls[i].security, .tls = n->tls[i] };
        if (bk_net_listen_on(n->net, &lc, &bound) != BK_NET_OK)
            return fail(err, len, "listener %s://%s:%u: cannot listen: %s", ls[i].name, host, ls[i].port,
                        strerror(errno));
        if (n->kafka_port == 0) n->kafka_port = bound;
        n->listen_port[i] = bound;
    }
    if (n->kafka_port == 0) return fail(err, len, "no Kafka listener in 'listeners'");
    return 0;
}

static void on_tick(evutil_socket_t fd, short what, void *arg);

/* bk_net_worker_submit for the metadata committer (meta/ may not include net/). */
static int meta_submit(void *pool, int (*job)(void *arg), void (*done)(void *arg, int status), void *arg) {
    return bk_net_worker_submit(pool, job, done, arg) == BK_NET_OK ? 0 : -1;
}

/* Dynamic broker configs committed earlier (cluster default, then this
 * node's own) go back into the config's dynamic layer at start-up. */
static void restore_broker_configs(bk_node_t *n) {
    char self[16], why[256];
    snprintf(self, sizeof self, "%d", n->id);
    const char *names[2] = { "", self };
    for (int k = 0; k < 2; k++) {
        size_t cnt = 0;
        const bk_meta_img_config_t *c = bk_meta_image_configs(&n->img, BK_META_RESOURCE_BROKER, names[k], &cnt);
        for (size_t i = 0; i < cnt; i++)
            if (bk_cfg_set_dynamic(n->cfg, c[i].name, c[i].value, k == 0, false, why, sizeof why) != 0)
                st_logf(ST_LOG_WARN, "node %d: stored broker config %s ignored: %s", n->id, c[i].name, why);
    }
}

static void open_initial_parts(bk_node_t *n) { bk_broker_after_commit(n); }

/* ---- the quorum's calls outward (quorum.h, bk_quorum_env_t) ------------------- */

static void quorum_applied(void *ctx) { bk_broker_after_commit(ctx); }
static void quorum_role_changed(void *ctx, bool leader) { bk_cluster_lifecycle_role_changed(ctx, leader); }

/* Non-raft requests on the controller listener: DescribeQuorum (KIP-595
 * tools ask the controller listener too) gets the Kafka listener's handler,
 * answered on this one; AlterPartition goes to the replica manager (the
 * controller's side of ISR changes); registration and heartbeats to the
 * broker lifecycle. Anything else closes the connection. */
static void serve_controller_listener(void *ctx, bk_net_conn_t *conn, const uint8_t *frame, size_t len) {
    bk_node_t *n = ctx;
    kp_arena_t a;
    kp_arena_init(&a, len * 4 + 65536);
    kp_request_header_t h;
    void *body = NULL;
    int rc = kp_request_decode(frame, len, &h, &body, &a);
    if (rc == KP_OK && h.api_key == KP_API_DESCRIBE_QUORUM) {
        kp_arena_free(&a);
        bk_api_dispatch_frame_on(n, bk_quorum_net(n->quorum), conn, frame, len);
        return;
    }
    if (rc == KP_OK && h.api_key == KP_API_ALTER_PARTITION) bk_repl_replica_serve_alter(n, conn, &h, body);
    else if (rc == KP_OK && (h.api_key == KP_API_BROKER_REGISTRATION || h.api_key == KP_API_BROKER_HEARTBEAT))
        bk_cluster_lifecycle_serve(n, conn, &h, body, &a);
    else bk_net_conn_close(conn);
    kp_arena_free(&a);
}

/* Every frame on the controller listener first: the SASL exchange on a
 * SASL controller listener (ApiVersions and the two SASL APIs are served
 * here), then the node check: on SSL/SASL, a principal not in super.users
 * may send nothing but DescribeQuorum (read-only); anything else closes the
 * connection before raft or the controller sees it. */
static bool admit_controller_frame(void *ctx, bk_net_conn_t *conn, const uint8_t *frame, size_t len) {
    bk_node_t *n = ctx;
    bk_net_t *net = bk_quorum_net(n->quorum);
    if (bk_api_sasl_gate(n, net, conn, frame, len)) return false;
    int16_t api = len >= 2 ? bk_cluster_frame_api(frame) : -1;
    if (api == KP_API_SASL_HANDSHAKE || api == KP_API_SASL_AUTHENTICATE || api == KP_API_API_VERSIONS) {
        bk_api_dispatch_frame_on(n, net, conn, frame, len);
        return false;
    }
    if (api == KP_API_DESCRIBE_QUORUM || bk_node_peer_allowed(n, conn)) return true;
    bk_net_log_close(net, "controller rpc from a non-super-user",
                     "node %d: controller listener: api %d from %s (principal %s) refused: not in super.users; closing",
                     n->id, api, bk_net_conn_peer(conn), bk_net_conn_principal(conn));
    bk_net_conn_close(conn);
    return false;
}

static void controller_answer(void *ctx, int kind, int32_t corr, const uint8_t *frame, size_t len) {
    if (kind == BK_NET_QC_ALTER) bk_repl_replica_alter_response(ctx, frame, len);
    else bk_cluster_lifecycle_on_response(ctx, kind, corr, frame, len);
}

/* The stop goes through the signal path main() installed (bk_net_signals):
 * the same graceful stop as SIGTERM, then main() exits with exit_status. */
static void request_exit(bk_node_t *n, int status) {
    n->exit_status = status;
    if (raise(SIGTERM) != 0) {
        fprintf(stderr, "skiff: node %d: cannot signal the stop: exiting now\n", n->id);
        exit(status);
    }
}

int bk_broker_start(bk_node_t *n, struct event_base *base, bk_cfg_t *cfg, char *err, size_t len) {
    memset(n, 0, sizeof *n);
    n->base = base;
    n->cfg = cfg;
    n->id = bk_cfg_node_id(cfg);
    /* before any log is opened: every partition replica holds files open */
    uint64_t nofile = bk_broker_fds_raise(n->id);
    n->meta_dir_idx = -1;
    bk_meta_image_init(&n->img, n->id);
    n->configs_gen = UINT64_MAX;   /* never a real generation: the first commit hook syncs */
    /* SASL settings first: a listener without a usable mechanism or with a
     * broken jaas config is refused before anything is opened */
    if (bk_node_sasl_init(n, true, err, len) != 0) return -1;
    /* Kafka's quota windows: the allowance holds one window, a single
     * throttle at most all of them (core/quota.h) */
    int64_t qwin_ms = bk_cfg_int(cfg, BK_CFG_QUOTA_WINDOW_SIZE_SECONDS) * 1000;   /* <= INT32_MAX * 1000 */
    int64_t qnum = bk_cfg_int(cfg, BK_CFG_QUOTA_WINDOW_NUM);
    /* throttle_time_ms is an int32 on the wire */
    int64_t qmax_ms = qnum > INT32_MAX / qwin_ms ? INT32_MAX : qwin_ms * qnum;
    n->quotas = bk_node_quotas_new(qwin_ms, qmax_ms);
    if (!n->quotas) return fail(err, len, "out of memory (client quotas)");
    if (pick_cluster_id(n, err, len) || load_dirs(n, err, len)) return -1;
    for (size_t i = 0; i < n->ndirs; i++)
        if (check_meta_props(n, n->dirs[i].path, err, len)) return -1;
    if (n->meta_dir_idx < 0 && check_meta_props(n, n->meta_dir.path, err, len)) return -1;
    if (bk_meta_image_set_cluster_id(&n->img, n->cluster_id) != KP_OK) return fail(err, len, "out of memory");
    const st_logdir_t *mld = n->meta_dir_idx >= 0 ? &n->dirs[n->meta_dir_idx] : &n->meta_dir;
    n->after_commit = bk_broker_after_commit;
    n->request_exit = request_exit;
    if (bk_broker_tls_start(n, err, len)) return -1;
    if (bk_quorum_wanted(cfg)) {
        bk_quorum_env_t env = { .base = base, .cfg = cfg, .id = n->id, .cluster_id = n->cluster_id, .img = &n->img,
                                .ctx = n, .after_apply = quorum_applied, .role_changed = quorum_role_changed,
                                .serve = serve_controller_listener, .on_response = controller_answer,
                                .listener_tls = n->tls,
                                .admit = admit_controller_frame };
        n->quorum = bk_quorum_open(&env, mld, err, len);
        if (!n->quorum) return -1;
    } else {
        n->meta = bk_meta_log_open(mld, &n->img, bk_net_now_ms(), err, len);
        if (!n->meta) return -1;
    }
    restore_broker_configs(n);
    n->parts = bk_repl_parts_new(n->dirs, n->ndirs);
    if (!n->parts) return fail(err, len, "out of memory");
    open_initial_parts(n);
    ctrl_setup(n, nofile);
    /* config_keys.h bounds num.io.threads by the pool's maximum: a larger
     * value is refused with the key's range, never silently cut */
    _Static_assert(BK_NET_WORKER_THREADS_MAX == 64, "num.io.threads' maximum (config_keys.h) is the pool's bound");
    uint32_t threads = (uint32_t)bk_cfg_int(cfg, BK_CFG_NUM_IO_THREADS);
    assert(threads >= 1 && threads <= BK_NET_WORKER_THREADS_MAX);
    /* the same for the queue: skiff.io.queued.max.jobs' range is the pool's */
    _Static_assert(BK_NET_WORKER_QUEUE_MAX_LIMIT == 65536, "skiff.io.queued.max.jobs' maximum (config_keys.h) is the pool's bound");
    uint32_t jobs_max = (uint32_t)bk_cfg_int(cfg, BK_CFG_SKIFF_IO_QUEUED_MAX_JOBS);
    assert(jobs_max >= 1 && jobs_max <= BK_NET_WORKER_QUEUE_MAX_LIMIT);
    n->pool = bk_net_worker_pool_new(base, threads, jobs_max);
    if (!n->pool) return fail(err, len, "cannot start %u worker threads", threads);
    if (n->quorum) bk_quorum_set_pool(n->quorum, n->pool);
    if (bk_repl_parts_set_pool(n->parts, n->pool, parts_opened, n) != KP_OK) return fail(err, len, "out of memory");
    trash_leftovers(n);
    n->cleaner = bk_repl_cleaner_new(n);
    if (!n->cleaner) return fail(err, len, "cannot start the log cleaner");
    n->fetch = bk_api_fetch_new(n);
    n->purg = bk_repl_purg_new(base, BK_REPL_PURG_WAITERS_MAX);
    if (!n->fetch || !n->purg) return fail(err, len, "out of memory");
    /* the txn cores load after the group cores: the markers a txn load
     * sends complete the groups' pending transactional offsets */
    n->txns = bk_txn_td_new(n);
    if (!n->txns) return fail(err, len, "cannot start the transaction coordinator");
    n->groups = bk_grp_gd_new(n);
    if (!n->groups) return fail(err, len, "cannot start the group coordinator");
    bk_txn_td_sync(n->txns);
    if (start_net(n, err, len)) return -1;
    advertised_address(n);
    if (!n->quorum && register_self(n, err, len)) return -1;
    /* registered (inline fsyncs at start-up): from now on metadata fsyncs
     * run on the pool, the commit in their completion */
    if (n->meta) bk_meta_log_set_pool(n->meta, meta_submit, n->pool);
    if (n->quorum && bk_cluster_lifecycle_start(n) != 0) return fail(err, len, "cannot start broker heartbeats");
    const char *al = bk_cfg_admin_listener(cfg);
    if (al && *al) {
        n->admin = bk_http_start(base, al, err, len);
        if (!n->admin) return -1;
        if (bk_admin_routes_add(n) != KP_OK || bk_admin_quorum_add(n) != KP_OK ||
            bk_admin_ops_add(n) != KP_OK)
            return fail(err, len, "admin routes could not be registered");
        if (bk_admin_auth_setup(n, err, len) != KP_OK) return -1;
    }
    if (bk_repl_scrub_start(n) != KP_OK) return fail(err, len, "cannot start the scrubber");
    n->tick = event_new(base, -1, EV_PERSIST, on_tick, n);
    struct timeval tv = { BK_NODE_TICK_MS / 1000, (BK_NODE_TICK_MS % 1000) * 1000 };
    if (!n->tick || event_add(n->tick, &tv) != 0) return fail(err, len, "cannot start the timer");
    /* from here on this thread is the event loop: storage calls that block
     * count (and with SKIFF_LOOP_GUARD=abort, abort) as violations */
    const char *guard = getenv("SKIFF_LOOP_GUARD");
    if (guard && strcmp(guard, "abort") == 0) st_guard_set_fatal(true);
    st_guard_enter_loop();
    fprintf(stderr, "skiff: node %d of cluster %s serving Kafka on port %u (advertised %s:%u), %zu partitions, metadata at offset %lld\n",
            n->id, n->cluster_id, n->kafka_port, n->adv_host, n->adv_port, bk_repl_parts_count(n->parts),
            (long long)n->img.last_offset);
    return 0;
}

/* ---- periodic work ------------------------------------------------------------- */

/* The loop only decides; the disk work is the pool's (bk_repl_parts_tick:
 * retention removal and flush.ms fsyncs; the checkpoint files too). */
static void checkpoint_now(bk_node_t *n) {
    st_logdir_entry_t meta = { BK_META_TOPIC, 0, { 0 } };
    if (n->quorum) bk_quorum_offsets(n->quorum, &meta.offsets);
    else bk_meta_log_offsets(n->meta, &meta.offsets);
    bk_repl_parts_checkpoint_async(n->parts, n->meta_dir_idx >= 0 ? &meta : NULL, n->meta_dir_idx);
}

static void on_tick(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    bk_node_t *n = arg;
    if (n->stopping) return;
    n->ticks++;
    bk_http_tick(n->admin);   /* the admin port accepts again after an accept failure */
    bk_repl_parts_tick(n->parts, bk_net_now_ms());
    bk_node_scram_bootstrap_tick(n);   /* skiff format --add-scram, once per cluster */
    if (n->ticks % BK_NODE_CHECKPOINT_EVERY_TICKS == 0) checkpoint_now(n);
}

/* ---- shutdown ------------------------------------------------------------------ */

static void close_storage(bk_node_t *n) {
    st_logdir_entry_t meta = { BK_META_TOPIC, 0, { 0 } };
    int rc = KP_OK;
    bk_cluster_lifecycle_stop(n);
    if (n->meta || n->quorum) {
        rc = n->meta ? bk_meta_log_close(n->meta, &meta.offsets) : bk_quorum_close(n->quorum, &meta.offsets);
        n->meta = NULL;
        n->quorum = NULL;
        if (rc != KP_OK) st_logf(ST_LOG_ERROR, "node %d: metadata log close failed: %s", n->id, st_status_str(rc));
        if (n->meta_dir_idx < 0) {
            int r2 = st_logdir_checkpoint(n->meta_dir.path, &meta, 1);
            if (r2 != KP_OK && rc == KP_OK) rc = r2;
        }
    }
    if (n->parts) {
        int r2 = bk_repl_parts_close_all(n->parts, n->meta_dir_idx >= 0 ? &meta : NULL, n->meta_dir_idx);
        n->parts = NULL;
        if (r2 != KP_OK && rc == KP_OK) rc = r2;
    }
    if (rc != KP_OK) {
        st_logf(ST_LOG_ERROR, "node %d: shutdown was not clean (%s); no clean-shutdown marker written",
                n->id, st_status_str(rc));
        return;
    }
    for (size_t i = 0; i < n->ndirs; i++)
        if (st_clean_marker_write(n->dirs[i].path) != KP_OK)
            st_logf(ST_LOG_ERROR, "log dir %s: cannot write the clean-shutdown marker", n->dirs[i].path);
    if (n->meta_dir_idx < 0 && st_clean_marker_write(n->meta_dir.path) != KP_OK)
        st_logf(ST_LOG_ERROR, "log dir %s: cannot write the clean-shutdown marker", n->meta_dir.path);
}

static void net_stopped(bk_net_t *net, void *arg) {
    (void)net;
    bk_node_t *n = arg;
    /* the loop serves nothing any more: the final flush, close and
     * checkpoint below may block (graceful stop) */
    st_guard_leave_loop();
    if (n->pool) { bk_net_worker_pool_free(n->pool, true); n->pool = NULL; }
    close_storage(n);
    if (n->on_stopped) n->on_stopped(n, n->on_stopped_arg);
}

void bk_broker_shutdown(bk_node_t *n, bk_node_stopped_fn done, void *arg) {
    if (n->stopping) return;
    n->stopping = true;
    n->on_stopped = done;
    n->on_stopped_arg = arg;
    fprintf(stderr, "skiff: node %d: stopping (finishing in-flight requests)\n", n->id);
    if (n->quorum) bk_quorum_resign(n->quorum);   /* EndQuorumEpoch: the next election is immediate */
    if (n->admin) { bk_http_stop(n->admin); n->admin = NULL; }
    bk_admin_auth_free(n);
    bk_repl_purg_flush(n->purg);   /* waiting fetches answered now */
    bk_repl_cleaner_free(n->cleaner); /* builds stop at their next batch */
    n->cleaner = NULL;
    bk_repl_scrub_stop(n);
    bk_repl_replica_stop(n);
    bk_grp_gd_stop(n->groups);
    bk_txn_td_stop(n->txns);
    bk_cluster_forward_stop(n);
    if (!n->net || bk_net_shutdown(n->net, 10000, net_stopped, n) != BK_NET_OK) net_stopped(n->net, n);
}

void bk_broker_free(bk_node_t *n) {
    st_guard_leave_loop();
    if (n->tick) { event_free(n->tick); n->tick = NULL; }
    bk_repl_cleaner_free(n->cleaner);
    n->cleaner = NULL;
    if (n->admin) { bk_http_stop(n->admin); n->admin = NULL; }
    bk_admin_auth_free(n);
    bk_repl_purg_free(n->purg);
    n->purg = NULL;
    if (n->fetch) { bk_api_fetch_free(n->fetch); n->fetch = NULL; }
    bk_api_req_cache_drain();   /* this (the loop's) thread's cached requests */
    bk_repl_scrub_stop(n);
    bk_repl_replica_stop(n);
    bk_txn_td_free(n->txns);
    n->txns = NULL;
    bk_grp_gd_free(n->groups);
    n->groups = NULL;
    if (n->net) {
        bk_net_free(n->net);
        n->net = NULL;
        bk_api_prepare_fini();  /* no prepared result is left once the net is gone */
    }
    if (n->pool) { bk_net_worker_pool_free(n->pool, false); n->pool = NULL; }
    if (n->parts) { (void)bk_repl_parts_close_all(n->parts, NULL, -1); n->parts = NULL; }
    if (n->meta) { (void)bk_meta_log_close(n->meta, NULL); n->meta = NULL; }
    bk_cluster_lifecycle_stop(n);
    bk_cluster_forward_stop(n);
    if (n->quorum) { (void)bk_quorum_close(n->quorum, NULL); n->quorum = NULL; }
    for (size_t i = 0; i < n->ndirs; i++) st_logdir_free(&n->dirs[i]);
    free(n->dirs);
    n->dirs = NULL;
    st_logdir_free(&n->meta_dir);
    bk_node_topic_configs_free(n);
    bk_meta_image_free(&n->img);
    bk_broker_tls_free(n);       /* after the listeners and the quorum that use them */
    bk_node_sasl_free(n);
    bk_node_quotas_free(n->quotas);
    n->quotas = NULL;
    bk_broker_metrics_free(n);   /* last: in-flight requests count until the net is gone */
    bk_api_req_pool_free(n->req_pool);   /* a request finished from here on is freed at once */
    n->req_pool = NULL;
    /* every completion has run (pool, purgatory, coordinators): a request
     * still counted was never finished, a leak to find */
    if (n->reqs_live)
        st_logf(ST_LOG_ERROR, "node %d: %llu request(s) never finished at free", n->id,
                (unsigned long long)n->reqs_live);
}
