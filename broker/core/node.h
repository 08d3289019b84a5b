/* broker/core/node.h — the node context: one skiff node's state, as every
 * subsystem above core/ sees it.
 *
 * bk_node_t holds the node's identity, its borrowed config, the committed
 * metadata image and controller soft state, and opaque pointers to each
 * subsystem (replication, coordinators, quorum, net, ...). This header
 * includes only the folders below core/ (meta, quorum, config, net, http);
 * a subsystem that calls another one includes that one's header itself, so
 * the #include lines show the real dependencies (broker/README.md, Layers).
 * Building and stopping the node (which needs every subsystem) lives in
 * broker/node.h, the root wiring.
 *
 * No globals: everything a request handler needs hangs off bk_node_t, so
 * that partitions can later be sharded over several loops. The node is owned
 * by the loop thread (the one dispatching `base`); nothing here is locked.
 *
 * Start-up order (bk_broker_start): log dirs (mkdir, checkpoints, clean marker
 * taken), metadata log replayed into the image (single voter) or the raft
 * quorum rebuilt from quorum-state + snapshot + log (quorum.h), this node
 * registered and unfenced through the controller (a quorum of one is its own
 * controller; with the quorum, asynchronously: broker_lifecycle.h),
 * partition logs opened for the image's partitions, worker pool, Kafka
 * listeners, admin port. Stop (bk_broker_shutdown): listeners close, in-flight
 * requests finish (waiting fetches are answered at once), logs are flushed
 * and closed, checkpoints and the clean-shutdown marker are written, then
 * `done` runs. */
#ifndef SKIFF_BK_CORE_NODE_H
#define SKIFF_BK_CORE_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/config/config.h"
#include "broker/config/config_topic.h"
#include "broker/meta/controller.h"
#include "broker/meta/image.h"
#include "broker/net/clock.h"
#include "broker/net/net.h"
#include "broker/net/worker.h"
#include "storage/st_logdirs.h"

struct event;
struct event_base;
typedef struct bk_meta_log bk_meta_log_t;
typedef struct bk_repl_parts bk_repl_parts_t;
typedef struct bk_fetch_state bk_node_fetch_state_t;
typedef struct bk_repl_purg bk_repl_purg_t;
typedef struct bk_grp_gd bk_grp_gd_t;
typedef struct bk_txn_td bk_txn_td_t;
typedef struct bk_quorum bk_quorum_t;
struct bk_lifecycle;
struct bk_node_mx;
typedef struct bk_mx bk_mx_t;
typedef struct bk_http bk_http_t;

#define BK_NODE_ERR_MAX 512
#define BK_NODE_HOST_NAME_MAX 255
#define BK_NODE_CLUSTER_ID_MAX 64
#define BK_NODE_TICK_MS 1000            /* retention / flush / checkpoint timer
                                           (decided on the loop, done on the pool) */
#define BK_NODE_CHECKPOINT_EVERY_TICKS 60

typedef struct bk_node bk_node_t;
typedef void (*bk_node_stopped_fn)(bk_node_t *node, void *arg);

/* One advertised listener of this node. */
typedef struct bk_node_adv {
    char name[BK_CFG_LISTENER_NAME_MAX + 1];
    char host[BK_NODE_HOST_NAME_MAX + 1];
    uint16_t port;
} bk_node_adv_t;

/* Topic overrides resolved from the image's Config records (topic_configs.c):
 * one heap entry per topic that has records, kept in name order. */
typedef struct bk_node_topic_cfg bk_node_topic_cfg_t;
typedef struct {
    bk_node_topic_cfg_t **v;                 /* sorted by name (strcmp) */
    size_t n;
    uint64_t gen;                       /* img.configs_gen they were resolved from */
} bk_node_topic_cfgs_t;

struct bk_node {
    struct event_base *base;            /* borrowed */
    bk_cfg_t *cfg;                   /* borrowed; dynamic changes write to it */
    int32_t id;
    char cluster_id[BK_NODE_CLUSTER_ID_MAX + 1];

    bk_meta_image_t img;                     /* committed metadata */
    uint64_t configs_gen;               /* img.configs_gen at the last commit hook */
    bk_node_topic_cfgs_t topic_cfgs;         /* img's topic Config records, resolved */
    bk_meta_ctrl_t ctrl;                     /* controller soft state (quorum of one) */
    bk_meta_log_t *meta;                /* who commits metadata records: the local
                                           committer (single voter) ... */
    bk_quorum_t *quorum;                /* ... or the raft quorum (quorum.h) */
    struct bk_lifecycle *life;          /* registration + heartbeats (quorum only) */
    struct fwd_state *fwd;              /* forwarding to the controller (forward.h) */
    bk_repl_parts_t *parts;                  /* partition logs this node holds */
    st_logdir_t *dirs;                  /* log.dirs, loaded at start */
    size_t ndirs;
    st_logdir_t meta_dir;               /* metadata.log.dir when not one of them */
    int meta_dir_idx;                   /* index into dirs, or -1 = meta_dir */
    bk_node_fetch_state_t *fetch;            /* Fetch sessions (api/fetch.h) */
    struct bk_api_req_pool *req_pool;        /* finished requests kept for reuse (api/dispatch.h) */
    uint64_t reqs_live;                 /* requests taken in and not finished (api/dispatch.c):
                                           0 again once bk_broker_free returned */
    bk_repl_purg_t *purg;                    /* waiting fetches, keyed by partition
                                           (replication/purgatory.h) */
    bk_grp_gd_t *groups;                    /* group coordinator driver */
    struct bk_repl_rm *rm;                   /* replication driver (replica.h) */
    struct bk_repl_scrub *scrub;                /* rolled-segment scrubber (replication/scrubber.h) */
    bk_txn_td_t *txns;                      /* transaction coordinator driver */
    int64_t broker_epoch;

    int64_t pid_next, pid_end;          /* producer-id block [next, end) */

    bk_net_worker_pool_t *pool;
    struct bk_repl_cleaner *cleaner;    /* log cleaner (replication/cleaner.h) */
    bk_net_t *net;
    bk_net_tls_t *tls[BK_CFG_LISTENERS_MAX];  /* per bk_cfg_listeners() index: SSL / SASL_SSL (node_tls.c) */
    bk_net_tls_t *peer_tls[2];                /* client side to brokers / controllers (bk_net_qc_target_t) */
    bk_net_tls_t *admin_tls;                  /* the admin port's, admin.security.protocol=SSL (admin_auth.c) */
    bk_http_t *admin;
    struct bk_node_sasl *sasl;          /* SASL mechanisms, PLAIN users, super.users (credentials.h) */
    bool authz_on;                      /* authorizer.class.name set (authz.h) */
    bool authz_everyone;                /* allow.everyone.if.no.acl.found */
    struct bk_node_quotas *quotas;      /* client quota use (quota.h); NULL = not enforced */
    bk_mx_t *metrics;              /* GET /metrics (node_metrics.h) */
    struct bk_node_mx *mx;              /* cached per-API series */
    struct event *tick;
    uint64_t ticks;

    char adv_host[BK_NODE_HOST_NAME_MAX + 1];/* advertised Kafka address (the first of adv) */
    uint16_t adv_port;
    uint16_t kafka_port;                /* first bound Kafka port */
    /* every advertised listener, in advertised.listeners order: what the
     * node registers, and what Metadata answers per client listener */
    bk_node_adv_t adv[BK_CFG_LISTENERS_MAX];
    size_t nadv;
    uint16_t listen_port[BK_CFG_LISTENERS_MAX]; /* bound port per bk_cfg_listeners() index (0: none) */

    bool stopping;
    /* set by the wiring (broker/node.c): runs after every commit applied to
     * the image, from the quorum or the local committer */
    void (*after_commit)(bk_node_t *n);
    bk_node_stopped_fn on_stopped;
    void *on_stopped_arg;
    /* set by the wiring: stops the node gracefully (as SIGTERM does) and
     * makes the process exit with `status` (exit_status) instead of 0; for a
     * refusal the operator must see, e.g. a node id another live process
     * holds (broker/cluster/broker_lifecycle.c) */
    void (*request_exit)(bk_node_t *n, int status);
    int exit_status;
};


/* The topic's overrides, as resolved from the image's Config records when
 * they were applied (bk_node_topic_configs_sync): a lookup by name, no
 * parsing. Never NULL: a topic without overrides (or an unknown one) gets
 * the empty set. If the image's configs changed since the last sync (a path
 * that applied records without the commit hook), it syncs first. The
 * pointer is valid until the topic's Config records next change: use it
 * now, do not keep it across a commit. */
const bk_cfg_topic_t *bk_node_topic_config(bk_node_t *n, const char *topic);

/* Re-resolves the topic overrides from n->img's Config records: runs on the
 * commit path when they changed (bk_broker_dynconf_sync). Unknown or invalid
 * (name, value) pairs are skipped with one warning, logged when the pair is
 * first seen, not again at each sync or lookup. An entry of a topic that
 * keeps records keeps its address. KP_OK, or KP_ERR_NOMEM with the previous
 * resolution left in place (the next sync or lookup retries). */
KP_MUST_CHECK int bk_node_topic_configs_sync(bk_node_t *n);
/* Frees the resolved overrides (node teardown). */
void bk_node_topic_configs_free(bk_node_t *n);

/* Commits a controller decision: `recs` (owned by the caller, who frees it
 * after this returns) go through the metadata committer; on commit the
 * image is updated and bk_broker_after_commit runs; then done(arg, status). */
typedef void (*bk_node_commit_fn)(void *arg, int status);
void bk_node_commit(bk_node_t *n, const bk_meta_recs_t *recs, bk_node_commit_fn done, void *arg);

/* The Kafka error for a failed commit status: NOT_CONTROLLER when this node
 * is not (or no longer) the active controller, else UNKNOWN_SERVER_ERROR. */
int16_t bk_node_commit_error(int status);

/* The image a controller decision must be computed against: committed
 * metadata plus decisions proposed but not yet applied (see
 * bk_quorum_decision_image); the committed image with the local committer.
 * Valid until the next return to the loop. */
const bk_meta_image_t *bk_node_decision_image(bk_node_t *n);

/* The active controller (raft leader; this node with the local committer),
 * -1 when unknown. */
int32_t bk_node_controller_id(const bk_node_t *n);
/* The endpoint of broker `b` for `listener` (Kafka's rule: a client gets the
 * brokers' endpoints of the listener it came in on), or NULL when b has
 * none of that name. listener NULL: the inter-broker listener
 * (inter.broker.listener.name, else this node's first advertised listener),
 * falling back to b's first endpoint. */
const bk_meta_endpoint_t *bk_node_broker_endpoint(const bk_node_t *n, const bk_meta_broker_t *b, const char *listener);
/* Quorum leader epoch (0 with the local committer) and high watermark. */
int32_t bk_node_quorum_epoch(const bk_node_t *n);
int64_t bk_node_metadata_hw(const bk_node_t *n);

/* Effective log settings of a topic (its overrides, else the broker's). */
void bk_node_log_config(bk_node_t *n, const char *topic, st_log_config_t *out);

/* Unlinks the "*.deleted" files of partition directory `dir` on the worker
 * pool (leftovers; the segments DeleteRecords puts below the log start are
 * removed by the node's timer, see bk_repl_parts_tick). */
void bk_node_purge_later(bk_node_t *n, const char *dir);


#endif
