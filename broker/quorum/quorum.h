/* broker/quorum/quorum.h — the raft driver: the node's metadata log committed by
 * the quorum of controller.quorum.voters instead of locally.
 *
 * It owns the raft core (raft/raft.h), the `__cluster_metadata-0` log on
 * storage/ (in metadata.log.dir), the `quorum-state` file and snapshot files
 * in that partition directory, the controller listener (raft RPCs,
 * BrokerRegistration, BrokerHeartbeat) and the connections to the other
 * voters. Every node applies committed records to n->img in offset order;
 * only the raft leader proposes (it is the active controller).
 *
 * Entries: one raft entry = one MetadataRecord = one offset (a batch of one
 * record on disk and on the wire; see quorum_rpc.h). A decision's records
 * are proposed together and appended in one step. A record that fails to
 * apply (two racing decisions on the leader, both computed against the same
 * image) is logged and skipped by every node alike; its proposer gets an
 * error.
 *
 * Durability: hard state is written atomically before the step's messages
 * are sent (on the loop: a vote must be durable before the reply); appended
 * entries are fsynced on the worker pool (a dup()ed descriptor, once
 * bk_quorum_set_pool gave one; inline before that and when the pool refuses)
 * and RAFT_EV_PERSISTED is reported in the job's completion.
 *
 * Threading: loop thread only. */
#ifndef SKIFF_BK_QUORUM_H
#define SKIFF_BK_QUORUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/config/config.h"
#include "broker/net/net.h"
#include "broker/meta/records.h"
#include "raft/raft.h"
#include "storage/st_logdirs.h"

#include "broker/meta/image.h"
#include "broker/net/worker.h"

typedef struct bk_quorum bk_quorum_t;

/* What the driver needs from the node around it: borrowed pointers that
 * outlive the quorum, and the calls it makes outward (all on the loop). The
 * quorum never sees the node itself, so quorum/ sits below core/. */
typedef struct bk_quorum_env {
    struct event_base *base;
    bk_cfg_t *cfg;
    int32_t id;                      /* this node */
    const char *cluster_id;
    bk_meta_image_t *img;                 /* committed entries are applied here */
    void *ctx;                       /* first argument of every call below */
    /* after one or more committed entries were applied to img */
    void (*after_apply)(void *ctx);
    /* this node became (true) or stopped being the quorum leader */
    void (*role_changed)(void *ctx, bool leader);
    /* every frame on the controller listener, first (NULL: all admitted):
     * false when the callee took it (a SASL exchange, or a refusal that
     * closed the connection) before it touches any raft state */
    bool (*admit)(void *ctx, bk_net_conn_t *conn, const uint8_t *frame, size_t len);
    /* a frame on the controller listener that is not a raft RPC (broker
     * registration and heartbeats, AlterPartition, DescribeQuorum) */
    void (*serve)(void *ctx, bk_net_conn_t *conn, const uint8_t *frame, size_t len);
    /* the answer (NULL frame: none) to a non-raft request sent with
     * bk_quorum_send_to_leader */
    void (*on_response)(void *ctx, int kind, int32_t corr, const uint8_t *frame, size_t len);
    /* per bk_cfg_listeners() index: the TLS context of an SSL / SASL_SSL
     * controller listener (not owned), NULL otherwise */
    bk_net_tls_t *const *listener_tls;
} bk_quorum_env_t;

#define BK_QUORUM_TICK_MS 10                 /* driver timer; raft ticks on it */
#define BK_QUORUM_FETCH_INTERVAL_MS 50       /* idle follower Fetch cadence */
#define BK_QUORUM_PENDING_MAX 4096           /* proposals waiting for commit */

/* Status for a proposal on a node that is not the leader (or lost it).
 * The quorum driver's share of the status space is [-219, -200] (the table
 * above KP_STATUS_LIST in protocol/kp_wire.h; checked in core/status.h). */
#define BK_QUORUM_STATUS_MIN (-219)
#define BK_QUORUM_STATUS_MAX (-200)
#define BK_QUORUM_NOT_LEADER (-200)

/* True when cfg asks for the raft quorum: more than one voter, or this node
 * is not a voter (an observer). A single voter keeps the local committer. */
bool bk_quorum_wanted(const bk_cfg_t *cfg);

/* Opens the metadata log and quorum-state under ld, loads the latest
 * snapshot into env->img, rebuilds the raft core, and listens on the
 * controller listener. NULL with a message in err on failure. */
bk_quorum_t *bk_quorum_open(const bk_quorum_env_t *env, const st_logdir_t *ld, char *err, size_t err_len);

/* The worker pool for the metadata log's fsyncs (created after the quorum);
 * until then they run... see sync_kick in quorum.c. */
void bk_quorum_set_pool(bk_quorum_t *q, bk_net_worker_pool_t *pool);

/* done(arg, status, first_offset): status KP_OK once every record is
 * committed and applied to env->img; BK_QUORUM_NOT_LEADER, a RAFT_ERR_* or a
 * KP_ERR_* otherwise. Runs exactly once, never before this returns... except
 * for immediate failures, which are reported at once. */
typedef void (*bk_quorum_done_fn)(void *arg, int status, int64_t first_offset);
void bk_quorum_propose(bk_quorum_t *q, const bk_meta_recs_t *recs, bk_quorum_done_fn done, void *arg);

bool bk_quorum_is_leader(const bk_quorum_t *q);
/* The raft leader (= active controller) or -1. */
int32_t bk_quorum_leader(const bk_quorum_t *q);
/* The current raft epoch on this node. */
int32_t bk_quorum_epoch(const bk_quorum_t *q);
/* Elections this node started as a candidate since it opened (one per
 * epoch it stood in; pre-votes are not counted). */
uint64_t bk_quorum_elections(const bk_quorum_t *q);
/* The raft role as text ("leader", "follower", ...). */
const char *bk_quorum_role(const bk_quorum_t *q);
/* Offset the next proposed record gets (leader only meaningful). */
int64_t bk_quorum_next_offset(const bk_quorum_t *q);

/* The image controller decisions are computed against: the committed image
 * plus every entry appended to the log but not yet applied (Kafka's
 * "uncommitted" view), so that two decisions in flight never conflict (a
 * second CreateTopics of a name being created gets TOPIC_ALREADY_EXISTS).
 * Equals the committed image (n->img) when nothing is pending; else a copy
 * kept by the driver (caught up on each call), valid until the next return
 * to the loop. Falls back to
 * the committed image when the copy cannot be made (out of memory). */
const bk_meta_image_t *bk_quorum_decision_image(bk_quorum_t *q);
/* DescribeQuorum data (leader: replica progress; others: -1s). */
void bk_quorum_describe(const bk_quorum_t *q, raft_quorum_info_t *out);
/* Offsets of the metadata log for the log dir checkpoint. */
void bk_quorum_offsets(const bk_quorum_t *q, st_log_offsets_t *out);

/* Sends a whole request frame to the current leader's controller listener
 * (kind BK_NET_QC_REGISTER / BK_NET_QC_HEARTBEAT / BK_NET_QC_ALTER); the
 * answer goes to env->on_response. -1 when there is no leader or it was
 * dropped. */
int bk_quorum_send_to_leader(bk_quorum_t *q, int kind, const uint8_t *frame, size_t len, int32_t corr);
/* A fresh correlation id for a request to the leader. */
int32_t bk_quorum_corr(bk_quorum_t *q);

/* Asks that this node's next Fetch go out at once with MaxWaitMs 0 (not
 * queued behind one the leader may hold) and returns a mark: once
 * bk_quorum_fetch_answered(q) >= mark, a Fetch sent after this call has been
 * answered, so this node knows the leader's high watermark as of the call
 * (forward.c waits for that before relaying a forwarded answer). */
uint64_t bk_quorum_fetch_prompt(bk_quorum_t *q);
uint64_t bk_quorum_fetch_answered(const bk_quorum_t *q);
/* Fetches this node (as leader) has held so far (quorum_hold.h). */
uint64_t bk_quorum_fetches_held(const bk_quorum_t *q);

/* The controller listener's server (deferred answers: bk_net_respond). */
bk_net_t *bk_quorum_net(bk_quorum_t *q);

/* Graceful resignation (EndQuorumEpoch) when leader; a no-op otherwise. */
void bk_quorum_resign(bk_quorum_t *q);

/* Stops the listener and connections, flushes and closes the log. final
 * (may be NULL) gets the offsets for the checkpoint. */
int bk_quorum_close(bk_quorum_t *q, st_log_offsets_t *final);

#endif
