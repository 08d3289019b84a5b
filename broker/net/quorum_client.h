/* broker/net/quorum_client.h — outgoing connections from this node to the other
 * quorum voters' controller listeners (raft RPCs, BrokerRegistration,
 * BrokerHeartbeat). One libevent bufferevent per peer, connected on first
 * use and again after a failure (at most once per BK_NET_QC_RECONNECT_MS).
 *
 * Requests go out as whole frames; responses come back in request order, so
 * each peer keeps a FIFO of what it sent (bounded: BK_NET_QC_INFLIGHT_MAX; a
 * send beyond it is dropped, as raft tolerates lost messages). When the
 * connection fails, every pending request is reported with frame == NULL.
 * Every request has a deadline (pend->timeout_ms, or its kind's default):
 * one still unanswered by then means a silent peer (a black-holed network
 * sends no reset), so the connection is closed and every pending request
 * reported lost, as Kafka's NetworkClient disconnects on a request timeout
 * (answers come in order: nothing behind a lost one can arrive). Deadlines
 * are checked every BK_NET_QC_TIMEOUT_CHECK_MS while requests are pending.
 * Threading: loop thread only. */
#ifndef SKIFF_BK_QUORUM_CLIENT_H
#define SKIFF_BK_QUORUM_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "broker/net/net.h"
#include "raft/raft.h"

struct event_base;

#define BK_NET_QC_INFLIGHT_MAX 64
#define BK_NET_QC_RECONNECT_MS 200
#define BK_NET_QC_FRAME_MAX_BYTES (128u << 20)
#define BK_NET_QC_TIMEOUT_CHECK_MS 100
/* Default deadlines by kind (pend->timeout_ms == 0). Raft RPCs: like
 * controller.quorum.request.timeout.ms. Controller requests (registration,
 * heartbeat, AlterPartition): a few heartbeat intervals, well below
 * broker.session.timeout.ms (9000 by default). Forwards and replica fetches:
 * like a client's request.timeout.ms (the fetcher times its long-polls out
 * itself, sooner). */
#define BK_NET_QC_RAFT_TIMEOUT_MS 2000
#define BK_NET_QC_CONTROL_TIMEOUT_MS 4000
#define BK_NET_QC_LONG_TIMEOUT_MS 30000

typedef enum { BK_NET_QC_RAFT = 0, BK_NET_QC_REGISTER, BK_NET_QC_HEARTBEAT, BK_NET_QC_FORWARD, BK_NET_QC_REPL_FETCH, BK_NET_QC_ALTER } bk_net_qc_kind_t;

/* What was sent; the response handler gets it back. */
typedef struct {
    bk_net_qc_kind_t kind;
    int32_t corr;
    raft_msg_t req;          /* BK_NET_QC_RAFT: the request (no pointers used) */
    void *arg;               /* BK_NET_QC_FORWARD: the forwarded request */
    int32_t timeout_ms;      /* > 0: deadline after the send; 0: the kind's default */
    int64_t deadline_ms;     /* set by bk_net_qc_send (monotonic clock) */
} bk_net_qc_pending_t;

/* frame: response bytes after the size prefix, valid during the call; NULL
 * when the request was lost (connection failure or its deadline passed). */
typedef void (*bk_net_qc_resp_fn)(void *ctx, int32_t peer_id, const bk_net_qc_pending_t *p, const uint8_t *frame,
                              size_t len);

typedef struct bk_net_qc_peer bk_net_qc_peer_t;

/* Where a peer connection goes: a broker's inter-broker listener (the
 * default: forwards, replica fetches, transaction markers, lag queries) or
 * a voter's controller listener (raft, registration, heartbeats,
 * AlterPartition). */
typedef enum bk_net_qc_target { BK_NET_QC_TO_BROKER = 0, BK_NET_QC_TO_CONTROLLER = 1 } bk_net_qc_target_t;

#define BK_NET_QC_SASL_TEXT_MAX 255

/* How connections to a target are secured: TLS (SSL, SASL_SSL) with a
 * client context (tls.h: the node's own key store for mutual TLS, the
 * trust store for the peer; the peer's IP address must be in its
 * certificate), and for SASL_* the node's own login, sent before any
 * request (SaslHandshake + SaslAuthenticate; PLAIN, SCRAM-SHA-256/512). */
typedef struct bk_net_qc_security {
    bk_net_security_t security;
    bk_net_tls_t *tls;                          /* not owned; outlives every peer */
    char mechanism[32];
    char username[BK_NET_QC_SASL_TEXT_MAX + 1];
    char password[BK_NET_QC_SASL_TEXT_MAX + 1];
    /* non-empty: connections to this target cannot log in (why): each
     * attempt fails with this reason, logged once per 10 s per peer. A
     * single node never opens one, so this is no reason to refuse a start. */
    char unusable[256];
} bk_net_qc_security_t;

/* Process-wide (one node per process), set before the first connection;
 * PLAINTEXT until then. Copied. */
void bk_net_qc_set_security(bk_net_qc_target_t target, const bk_net_qc_security_t *sec);
/* Which target a peer is (BK_NET_QC_TO_BROKER when never called). Takes
 * effect from its next connection. */
void bk_net_qc_set_target(bk_net_qc_peer_t *p, bk_net_qc_target_t target);

/* A peer at numeric host:port; nothing is connected yet. NULL when out of
 * memory. */
bk_net_qc_peer_t *bk_net_qc_new(struct event_base *base, int32_t id, const char *host, uint16_t port,
                        bk_net_qc_resp_fn on_resp, void *ctx);
/* Closes the connection (pending requests are reported lost) and frees.
 * Must not be called from this peer's own response callback. */
void bk_net_qc_free(bk_net_qc_peer_t *p);

/* Sends a whole frame (size prefix included; `frame` is copied). Returns 0,
 * or -1 when the request was dropped (not connected within the reconnect
 * pause, FIFO full, out of memory). */
int bk_net_qc_send(bk_net_qc_peer_t *p, const uint8_t *frame, size_t len, const bk_net_qc_pending_t *pend, int64_t now_ms);

/* Writes queued request bytes now, waiting at most timeout_ms for the
 * socket (shutdown: an EndQuorumEpoch must leave before the process exits).
 * No-op without a connection (attempt). */
void bk_net_qc_flush(bk_net_qc_peer_t *p, int timeout_ms);

/* A fresh correlation id for this peer. */
int32_t bk_net_qc_next_corr(bk_net_qc_peer_t *p);
int32_t bk_net_qc_id(const bk_net_qc_peer_t *p);
/* Requests sent and not yet answered or reported lost. */
size_t bk_net_qc_pending_count(const bk_net_qc_peer_t *p);
/* Requests reported lost because their deadline passed (since bk_net_qc_new). */
uint64_t bk_net_qc_timeouts(const bk_net_qc_peer_t *p);

#endif
