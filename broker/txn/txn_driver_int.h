/* broker/txn/txn_driver_int.h — private to txn_driver.c / txn_markers.c. */
#ifndef SKIFF_BK_TXN_DRIVER_INT_H
#define SKIFF_BK_TXN_DRIVER_INT_H

#include "broker/replication/parts.h"
#include "broker/net/quorum_client.h"
#include "broker/txn/txn_driver.h"

/* One WriteTxnMarkers request out to another leader. */
typedef struct td_flight {
    uint64_t seq;                /* matches the bk_qc pending arg */
    int32_t pidx;                /* our __transaction_state partition */
    int32_t coord_epoch;         /* core epoch when sent (a reload ignores old answers) */
    int32_t broker;
    char *id;                    /* transactional id (owned) */
    int64_t producer_id;
    int16_t producer_epoch;
    bool commit;
    bk_txn_tp_t *parts;          /* owned topic strings */
    size_t nparts;
    int64_t sent_ms;
    struct td_flight *next;
} td_flight_t;

typedef struct {
    int32_t broker;
    bk_net_qc_peer_t *peer;
    char host[256];
    int32_t port;
} td_peer_t;

/* One produce waiting for its coordinator's verification (txn_verify.c). */
typedef struct td_verify {
    uint64_t seq;                /* TD_VERIFY_SEQ_BIT set */
    bk_txn_td_verify_fn fn;
    void *ctx;
    int16_t version;             /* 4: VerifyOnly, 5: add (transactions v2) */
    struct td_verify *next;
} td_verify_t;

#define TD_VERIFY_SEQ_BIT ((uint64_t)1 << 62)

struct bk_txn_td {
    bk_node_t *node;
    bk_txn_config_t cfg;
    bk_txn_coord_t **coords;     /* [ncoords]; NULL: not led here */
    int32_t ncoords;
    td_peer_t peers[BK_TXN_TD_PEERS_MAX];
    size_t npeers;
    td_flight_t *flights;        /* marker requests out */
    size_t nflights;
    td_verify_t *verifies;       /* verifications out */
    size_t nverifies;
    struct event *timer;
    bool creating;               /* __transaction_state creation in flight */
    bool pid_refill;             /* producer-id block request in flight */
    bool stopped;
};

/* txn_driver.c: partition `partition` of __transaction_state when this node
 * leads it with an open log, else NULL. */
bk_repl_part_t *td_led_part(bk_txn_td_t *td, int32_t partition);

/* txn_write.c */
/* Completes a core call made for transactional_id on partition pidx:
 * appends out's records (one batch) and tells the replication driver
 * (acks=all, deadline BK_TXN_TD_WRITE_TIMEOUT_MS); once the HW passes them (or
 * the wait fails: timeout, leadership lost) each write is reported with
 * bk_txn_write_done, the markers that result are sent (the local ones wait
 * for their own replication), and whatever that produces is appended the
 * same way. fn(ctx, ans) gets the request's answer once the write it waits
 * for is done (at once when out->wait is false); fn NULL: nobody waits (the
 * timer, marker answers, a load). A core dropped or reloaded meanwhile
 * answers NOT_COORDINATOR: a new coordinator acts only on what it
 * replayed. Resets out. */
void bk_td_finish(bk_txn_td_t *td, int32_t pidx, bk_txn_out_t *out, const char *transactional_id,
                  bk_txn_td_answer_fn fn, void *ctx);

/* txn_markers.c */
/* Sends or applies every marker of m (local partitions at once: acks go to
 * bk_txn_marker_done into out). */
void td_send_markers(bk_txn_td_t *td, int32_t pidx, const bk_txn_markers_t *m, bk_txn_out_t *out);
/* True while a marker request for (pidx, id) is out and young. */
bool td_in_flight(const bk_txn_td_t *td, int32_t pidx, const char *id, int64_t now_ms);
/* Forgets flights of partition pidx (core dropped) or all (pidx < 0). */
void td_flights_drop(bk_txn_td_t *td, int32_t pidx);
void td_peers_free(bk_txn_td_t *td);
/* Sends one request to broker's Kafka listener; the answer (or its loss)
 * comes to txn_markers.c's on_resp with pend.arg = seq. 0 when sent. */
int td_send_frame(bk_txn_td_t *td, int32_t broker, int16_t api, int16_t ver, const void *body, uint64_t seq);

/* txn_verify.c */
/* The answer (frame NULL: lost) of verification seq. */
void td_verify_answer(bk_txn_td_t *td, uint64_t seq, int32_t corr, const uint8_t *frame, size_t len);
/* Answers every verification out with NOT_ENOUGH_REPLICAS (stop). */
void td_verify_drop_all(bk_txn_td_t *td);
/* bk_txn_alloc_pid_fn: the node's producer-id block; starts a refill when empty. */
bool td_alloc_pid(void *ctx, int64_t *producer_id);

#endif
