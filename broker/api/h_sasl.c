/* broker/api/h_sasl.c — SASL on SASL_PLAINTEXT / SASL_SSL listeners:
 * SaslHandshake (17) v0-1, SaslAuthenticate (36) v0-2, the unframed tokens
 * that follow a v0 handshake, the gate that lets nothing else through
 * before authentication, re-authentication (KIP-368) and the delayed
 * failure answer.
 *
 * Per-connection state (`sasl_conn_t`) hangs off the connection through
 * bk_net_conn_set_auth (freed with it). States:
 *   START      nothing yet: ApiVersions and SaslHandshake only
 *   HANDSHAKEN a v1 handshake chose a mechanism: SaslAuthenticate tokens
 *   RAW        a v0 handshake chose one: the next frames are bare tokens
 *              (4-byte length + token, no request header), answered bare
 *   AUTH       authenticated: every API; SaslHandshake v1 starts a
 *              re-authentication (same mechanism, same principal)
 *   FAILED     the failure answer is waiting for its delay; then closed
 * Kafka's rules kept: a request other than ApiVersions / SaslHandshake /
 * SaslAuthenticate before authentication closes the connection; SASL
 * requests on a listener without SASL get ILLEGAL_SASL_STATE; a mechanism
 * not enabled gets UNSUPPORTED_SASL_MECHANISM with the enabled list and the
 * connection closes; a session past connections.max.reauth.ms is closed on
 * its next request that is not a re-authentication.
 *
 * CPU on the loop: PLAIN is a constant-time compare; SCRAM's server side
 * needs no PBKDF2 (the image holds StoredKey/ServerKey): three HMACs and a
 * hash per exchange. An unknown user goes through the same exchange with a
 * credential derived from the name (credentials.h), so a failure never
 * tells whether the user exists. */
#include <event2/event.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/cluster/forward.h"
#include "broker/core/authz.h"
#include "broker/core/credentials.h"
#include "broker/net/clock.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_sasl.h"

enum { ST_START, ST_HANDSHAKEN, ST_RAW, ST_AUTH, ST_FAILED };
enum { STEP_CONTINUE, STEP_DONE, STEP_FAIL };

/* The one message of every failure: never which part was wrong. */
#define FAIL_MSG_FMT "Authentication failed during authentication due to invalid credentials with SASL mechanism %s"

typedef struct sasl_conn {
    int st;
    bool reauth;                    /* an exchange on an authenticated connection */
    kp_sasl_mech_t mech;
    /* the SCRAM exchange in progress (about 4 KiB): allocated by the
     * handshake, freed when the exchange ends, so an authenticated
     * connection keeps only this small struct */
    struct scram_x {
        kp_scram_server_t srv;
        kp_scram_cred_t cred;
        bool known;
    } *x;
    char user[KP_SASL_NAME_MAX + 1];
    char principal[BK_NET_PRINCIPAL_MAX + 1]; /* set once authenticated */
    int64_t expiry_ms;              /* bk_net_now_ms() bound of the session; 0 = none */
} sasl_conn_t;

static bool is_sasl(const bk_net_conn_t *c) {
    bk_net_security_t s = bk_net_conn_security(c);
    return s == BK_NET_SEC_SASL_PLAINTEXT || s == BK_NET_SEC_SASL_SSL;
}

static void exchange_end(sasl_conn_t *s) {
    if (!s->x) return;
    OPENSSL_cleanse(s->x, sizeof *s->x);
    free(s->x);
    s->x = NULL;
}

static void sasl_free(void *p) {
    sasl_conn_t *s = p;
    exchange_end(s);
    OPENSSL_cleanse(s, sizeof *s);
    free(s);
}

static sasl_conn_t *state_of(bk_net_conn_t *c) {
    sasl_conn_t *s = bk_net_conn_auth(c);
    if (s) return s;
    s = calloc(1, sizeof *s);
    if (!s) return NULL;
    bk_net_conn_set_auth(c, s, sasl_free);
    return s;
}

/* ---- the exchange (both framings) ------------------------------------- */

/* One client token -> the server's answer in out. On STEP_DONE `s->user`
 * holds the authenticated name. */
static int step(bk_node_t *n, const char *listener, sasl_conn_t *s, const uint8_t *tok, size_t len,
                uint8_t *out, size_t cap, size_t *out_len) {
    *out_len = 0;
    if (s->mech == KP_SASL_MECH_PLAIN) {
        kp_sasl_plain_t p;
        if (kp_sasl_plain_parse(tok, len, &p) != KP_OK) return STEP_FAIL;
        char pw[KP_SASL_PASSWORD_MAX + 1];
        memcpy(s->user, p.user.p, p.user.len);
        s->user[p.user.len] = 0;
        memcpy(pw, p.password.p, p.password.len);
        pw[p.password.len] = 0;
        bool ok = bk_node_sasl_plain_check(n, listener, s->user, pw);
        OPENSSL_cleanse(pw, sizeof pw);
        return ok ? STEP_DONE : STEP_FAIL;
    }
    struct scram_x *x = s->x;
    if (!x) return STEP_FAIL;
    if (x->srv.step == 0) {
        kp_scram_server_init(&x->srv, s->mech);
        if (kp_scram_server_client_first(&x->srv, tok, len) != KP_OK) return STEP_FAIL;
        if (x->srv.token_auth) return STEP_FAIL; /* delegation tokens: not served */
        memcpy(s->user, x->srv.user, x->srv.user_len + 1);
        bk_node_scram_lookup(n, s->user, s->mech, &x->cred, &x->known);
        uint8_t rnd[24];
        char nonce[40];
        size_t nl;
        if (RAND_bytes(rnd, sizeof rnd) != 1 || kp_scram_nonce_make(rnd, sizeof rnd, nonce, sizeof nonce, &nl) != KP_OK)
            return STEP_FAIL;
        if (kp_scram_server_first(&x->srv, &x->cred, nonce, nl, out, cap, out_len) != KP_OK) return STEP_FAIL;
        return STEP_CONTINUE;
    }
    int st = kp_scram_server_final(&x->srv, &x->cred, tok, len, out, cap, out_len);
    if (st != KP_OK || !x->known) { *out_len = 0; return STEP_FAIL; }
    return STEP_DONE;
}

/* Authenticated: principal, session lifetime. False when a re-authentication
 * names another principal (Kafka refuses it). */
static bool succeed(bk_node_t *n, bk_net_conn_t *c, sasl_conn_t *s) {
    char principal[BK_NET_PRINCIPAL_MAX + 1];
    snprintf(principal, sizeof principal, "User:%s", s->user);
    if (s->reauth && strcmp(principal, s->principal) != 0) return false;
    memcpy(s->principal, principal, sizeof principal);
    bk_net_conn_set_principal(c, principal);
    bk_net_conn_set_prepare(c, true);   /* produce checks may now run on the network loops */
    int64_t life = bk_cfg_int(n->cfg, BK_CFG_CONNECTIONS_MAX_REAUTH_MS);
    s->expiry_ms = life > 0 ? bk_net_now_ms() + life : 0;
    s->st = ST_AUTH;
    s->reauth = false;
    exchange_end(s);
    return true;
}

/* ---- delayed failure ------------------------------------------------- */

typedef struct {
    struct event *ev;
    bk_api_req_t *req;              /* SaslAuthenticate: answered; NULL for a bare token */
    bk_net_t *net;
    bk_net_slot_t slot;
    kp_sasl_authenticate_response_t resp;
    char msg[160];
} delayed_t;

static void delayed_fire(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    delayed_t *d = arg;
    if (d->req) {
        d->resp.error_message = bk_api_str(d->msg);
        bk_api_req_respond(d->req, &d->resp);
    } else {
        (void)bk_net_respond_none(d->net, d->slot);
    }
    event_free(d->ev);
    free(d);
}

/* The connection reads nothing more; its slot is completed after
 * connection.failed.authentication.delay.ms (a timer, never a sleep), then
 * the connection closes once that answer is flushed. */
static void fail_later(bk_node_t *n, bk_net_t *net, bk_net_conn_t *c, sasl_conn_t *s, bk_api_req_t *req,
                       bk_net_slot_t slot) {
    s->st = ST_FAILED;
    exchange_end(s);
    bk_net_log_close(net, "sasl authentication failed",
                     "node %d: SASL authentication failed for user '%s' from %s on %s (mechanism %s); closing",
                     n->id, s->user[0] ? s->user : "?", bk_net_conn_peer(c), bk_net_conn_listener(c),
                     kp_sasl_mech_name(s->mech));
    bk_net_conn_close_after_flush(c);
    delayed_t *d = calloc(1, sizeof *d);
    if (d) {
        d->req = req;
        d->net = net;
        d->slot = slot;
        snprintf(d->msg, sizeof d->msg, FAIL_MSG_FMT, kp_sasl_mech_name(s->mech));
        kp_sasl_authenticate_response_init(&d->resp);
        d->resp.error_code = KP_ERROR_SASL_AUTHENTICATION_FAILED;
        d->ev = evtimer_new(n->base, delayed_fire, d);
    }
    int64_t delay = bk_cfg_int(n->cfg, BK_CFG_CONNECTION_FAILED_AUTHENTICATION_DELAY_MS);
    struct timeval tv = { (time_t)(delay / 1000), (suseconds_t)(delay % 1000) * 1000 };
    if (!d || !d->ev || evtimer_add(d->ev, &tv) != 0) {
        if (d && d->ev) event_free(d->ev);
        free(d);
        if (req) bk_api_req_close(req, NULL);
        else (void)bk_net_respond_none(net, slot);
    }
}

/* ---- the gate ---------------------------------------------------------- */

static void gate_close(bk_node_t *n, bk_net_t *net, bk_net_conn_t *c, const char *why, int16_t api) {
    bk_net_log_close(net, why, "node %d: closing connection %s on %s (api %d): %s", n->id, bk_net_conn_peer(c),
                     bk_net_conn_listener(c), api, why);
    bk_net_conn_close_after_flush(c);
    (void)bk_net_conn_respond_none(c, bk_net_conn_slot(c));
}

/* A bare token after a v0 handshake. */
static void raw_token(bk_node_t *n, bk_net_t *net, bk_net_conn_t *c, sasl_conn_t *s, const uint8_t *frame,
                      size_t len) {
    uint8_t out[KP_SCRAM_MSG_MAX];
    size_t ol = 0;
    int r = step(n, bk_net_conn_listener(c), s, frame, len, out, sizeof out, &ol);
    if (r == STEP_DONE && !succeed(n, c, s)) r = STEP_FAIL;
    if (r == STEP_FAIL) {
        fail_later(n, net, c, s, NULL, bk_net_conn_slot(c));
        return;
    }
    /* PLAIN's success is an empty token; SCRAM's answers are its messages */
    (void)bk_net_conn_respond_bytes(c, bk_net_conn_slot(c), out, ol);
}

bool bk_api_sasl_gate(bk_node_t *n, bk_net_t *net, bk_net_conn_t *c, const uint8_t *frame, size_t len) {
    if (!is_sasl(c)) return false;
    sasl_conn_t *s = state_of(c);
    int16_t api = len >= 2 ? bk_cluster_frame_api(frame) : -1;
    if (!s) {
        gate_close(n, net, c, "out of memory (SASL state)", api);
        return true;
    }
    switch (s->st) {
    case ST_RAW:
        raw_token(n, net, c, s, frame, len);
        return true;
    case ST_FAILED:
        gate_close(n, net, c, "request after a failed SASL authentication", api);
        return true;
    default:
        break;
    }
    bool sasl_api = api == KP_API_SASL_HANDSHAKE || api == KP_API_SASL_AUTHENTICATE;
    if (s->st == ST_AUTH && !s->reauth) {
        if (s->expiry_ms && bk_net_now_ms() >= s->expiry_ms && !sasl_api) {
            gate_close(n, net, c, "SASL session expired (connections.max.reauth.ms) without re-authentication", api);
            return true;
        }
        return false;
    }
    if (sasl_api || (api == KP_API_API_VERSIONS && !s->reauth)) return false;
    gate_close(n, net, c, s->reauth ? "request during SASL re-authentication"
                                     : "request before SASL authentication", api);
    return true;
}

/* ---- handlers ----------------------------------------------------------- */

static bk_net_conn_t *req_conn(bk_api_req_t *req) { return bk_net_conn(req->net, req->slot.conn_id); }

void bk_api_h_sasl_handshake(bk_api_req_t *req) {
    const kp_sasl_handshake_request_t *q = req->body;
    bk_net_conn_t *c = req_conn(req);
    if (!c) { bk_api_req_respond_none(req); return; }
    kp_sasl_handshake_response_t r;
    kp_sasl_handshake_response_init(&r);
    const char *names[3];
    size_t nn = bk_node_sasl_mech_names(req->node, bk_net_conn_listener(c), names);
    kp_str_t *mv = bk_api_req_alloc(req, nn, sizeof *mv);
    if (!mv) { bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < nn; i++) mv[i] = bk_api_str(names[i]);
    r.mechanisms.items = mv;
    r.mechanisms.count = (int32_t)nn;
    if (!is_sasl(c)) {
        r.error_code = KP_ERROR_ILLEGAL_SASL_STATE;
        bk_api_req_respond(req, &r);
        return;
    }
    sasl_conn_t *s = state_of(c);
    if (!s) { bk_api_req_close(req, "out of memory"); return; }
    bool reauth = s->st == ST_AUTH;
    if ((s->st != ST_START && !reauth) || (reauth && req->hdr.api_version < 1)) {
        /* a second handshake, or a v0 one on an authenticated connection */
        r.error_code = KP_ERROR_ILLEGAL_SASL_STATE;
        bk_net_conn_close_after_flush(c);
        bk_api_req_respond(req, &r);
        return;
    }
    kp_sasl_mech_t m;
    unsigned enabled = bk_node_sasl_mechs(req->node, bk_net_conn_listener(c));
    if (kp_sasl_mech_parse(q->mechanism, &m) != KP_OK || !(enabled & (1u << m)) ||
        (reauth && m != s->mech)) {
        bk_net_log_close(req->net, "sasl mechanism not enabled",
                         "node %d: %s asked for SASL mechanism '%.*s', not enabled on %s; closing", req->node->id,
                         req->peer, (int)(q->mechanism.len > 40 ? 40 : q->mechanism.len),
                         q->mechanism.p ? (const char *)q->mechanism.p : "", bk_net_conn_listener(c));
        r.error_code = KP_ERROR_UNSUPPORTED_SASL_MECHANISM;
        bk_net_conn_close_after_flush(c);
        bk_api_req_respond(req, &r);
        return;
    }
    exchange_end(s);
    if (kp_sasl_mech_is_scram(m)) {
        s->x = calloc(1, sizeof *s->x);
        if (!s->x) { bk_api_req_close(req, "out of memory"); return; }
    }
    s->mech = m;
    s->reauth = reauth;
    s->user[0] = 0;
    if (!reauth) s->st = req->hdr.api_version == 0 ? ST_RAW : ST_HANDSHAKEN;
    bk_api_req_respond(req, &r);
}

void bk_api_h_sasl_authenticate(bk_api_req_t *req) {
    const kp_sasl_authenticate_request_t *q = req->body;
    bk_net_conn_t *c = req_conn(req);
    if (!c) { bk_api_req_respond_none(req); return; }
    kp_sasl_authenticate_response_t r;
    kp_sasl_authenticate_response_init(&r);
    r.error_message = kp_slice_null();
    if (!is_sasl(c)) {
        r.error_code = KP_ERROR_ILLEGAL_SASL_STATE;
        r.error_message = bk_api_str("SaslAuthenticate on a listener without SASL");
        bk_api_req_respond(req, &r);
        return;
    }
    sasl_conn_t *s = state_of(c);
    if (!s) { bk_api_req_close(req, "out of memory"); return; }
    if (!(s->st == ST_HANDSHAKEN || (s->st == ST_AUTH && s->reauth))) {
        r.error_code = KP_ERROR_ILLEGAL_SASL_STATE;
        r.error_message = bk_api_str("SaslAuthenticate without a SaslHandshake v1 first");
        bk_net_conn_close_after_flush(c);
        bk_api_req_respond(req, &r);
        return;
    }
    uint8_t *out = bk_api_req_alloc(req, KP_SCRAM_MSG_MAX, 1);
    if (!out) { bk_api_req_close(req, "out of memory"); return; }
    size_t ol = 0;
    int st = step(req->node, bk_net_conn_listener(c), s, q->auth_bytes.p, q->auth_bytes.len, out,
                  KP_SCRAM_MSG_MAX, &ol);
    if (st == STEP_DONE && !succeed(req->node, c, s)) st = STEP_FAIL;
    if (st == STEP_FAIL) {
        fail_later(req->node, req->net, c, s, req, req->slot);
        return;
    }
    r.auth_bytes.p = out;
    r.auth_bytes.len = ol;
    if (st == STEP_DONE && s->expiry_ms && req->hdr.api_version >= 1)
        r.session_lifetime_ms = bk_cfg_int(req->node->cfg, BK_CFG_CONNECTIONS_MAX_REAUTH_MS);
    bk_api_req_respond(req, &r);
}

/* ---- node-to-node RPCs on Kafka listeners ---------------------------- */

/* WriteTxnMarkers refused: CLUSTER_AUTHORIZATION_FAILED for every partition
 * of every marker, in the request's shape (arrays sized by what arrived).
 * False when out of memory (the caller closes). */
static bool deny_markers(bk_api_req_t *req) {
    const kp_write_txn_markers_request_t *q = req->body;
    size_t nm = q->markers.count > 0 ? (size_t)q->markers.count : 0;
    kp_write_txn_markers_response_writable_txn_marker_result_t *m = bk_api_req_alloc(req, nm, sizeof *m);
    if (!m) return false;
    for (size_t i = 0; i < nm; i++) {
        const kp_write_txn_markers_request_writable_txn_marker_t *qm = &q->markers.items[i];
        size_t nt = qm->topics.count > 0 ? (size_t)qm->topics.count : 0;
        kp_write_txn_markers_response_writable_txn_marker_topic_result_t *t = bk_api_req_alloc(req, nt, sizeof *t);
        if (!t) return false;
        for (size_t j = 0; j < nt; j++) {
            const kp_write_txn_markers_request_writable_txn_marker_topic_t *qt = &qm->topics.items[j];
            size_t np = qt->partition_indexes.count > 0 ? (size_t)qt->partition_indexes.count : 0;
            kp_write_txn_markers_response_writable_txn_marker_partition_result_t *pr = bk_api_req_alloc(req, np, sizeof *pr);
            if (!pr) return false;
            for (size_t k = 0; k < np; k++) {
                pr[k].partition_index = qt->partition_indexes.items[k];
                pr[k].error_code = KP_ERROR_CLUSTER_AUTHORIZATION_FAILED;
            }
            t[j].name = qt->name;
            t[j].partitions.items = pr;
            t[j].partitions.count = (int32_t)np;
        }
        m[i].producer_id = qm->producer_id;
        m[i].topics.items = t;
        m[i].topics.count = (int32_t)nt;
    }
    kp_write_txn_markers_response_t r;
    kp_write_txn_markers_response_init(&r);
    r.markers.items = m;
    r.markers.count = (int32_t)nm;
    bk_api_req_respond(req, &r);
    return true;
}

bool bk_api_node_rpc_check(bk_api_req_t *req, bk_net_conn_t *conn) {
    int16_t k = req->hdr.api_key;
    bool node_rpc = k == KP_API_WRITE_TXN_MARKERS;
    if (k == KP_API_FETCH) {
        const kp_fetch_request_t *q = req->body;
        node_rpc = (req->hdr.api_version >= 15 ? q->replica_state.replica_id : q->replica_id) >= 0;
    }
    /* AddPartitionsToTxn v4+ is the broker-to-coordinator batch (KIP-890):
     * with an authorizer Kafka wants CLUSTER_ACTION on the cluster for it */
    bool apt_batch = k == KP_API_ADD_PARTITIONS_TO_TXN && req->hdr.api_version >= 4 && bk_node_authz_on(req->node);
    node_rpc |= apt_batch;
    if (!node_rpc || bk_node_peer_allowed(req->node, conn)) return true;
    bk_net_log_close(req->net, "node rpc from a non-super-user",
                     "node %d: %s from %s (principal %s) refused: not in super.users", req->node->id,
                     k == KP_API_FETCH ? "replica Fetch" : apt_batch ? "AddPartitionsToTxn v4+" : "WriteTxnMarkers", req->peer, bk_net_conn_principal(conn));
    if (k == KP_API_FETCH && req->hdr.api_version >= 7) {
        kp_fetch_response_t r;
        kp_fetch_response_init(&r);
        r.error_code = KP_ERROR_CLUSTER_AUTHORIZATION_FAILED;
        bk_api_req_respond(req, &r);
        return false;
    }
    if (k == KP_API_WRITE_TXN_MARKERS && deny_markers(req)) return false;
    if (apt_batch) {
        kp_add_partitions_to_txn_response_t r;
        kp_add_partitions_to_txn_response_init(&r);
        r.error_code = KP_ERROR_CLUSTER_AUTHORIZATION_FAILED;
        bk_api_req_respond(req, &r);
        return false;
    }
    bk_api_req_close(req, "node RPC from a principal not in super.users");
    return false;
}
