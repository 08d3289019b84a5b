/* broker/api/dispatch.c — frame -> decode -> handler -> encode -> slot. */
#include "broker/api/dispatch.h"

#include "broker/cluster/forward.h"
#include "broker/core/authz.h"
#include "broker/txn/txn_driver.h"

#include <assert.h>
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_errors.h"
#include "storage/st_log.h"
#include "storage/st_status.h"
#include "broker/api/api_metrics.h"
#include "broker/replication/parts.h"
#include "broker/core/quota.h"
#include "broker/net/clock.h"
#include "broker/net/mem.h"

#define V(key, fn) { key, 0, -1, fn }
static bk_api_entry_t table[] = {
    V(KP_API_PRODUCE, bk_api_h_produce),
    V(KP_API_FETCH, bk_api_h_fetch),
    V(KP_API_LIST_OFFSETS, bk_api_h_list_offsets),
    V(KP_API_METADATA, bk_api_h_metadata),
    V(KP_API_OFFSET_COMMIT, bk_api_h_offset_commit),
    V(KP_API_OFFSET_FETCH, bk_api_h_offset_fetch),
    V(KP_API_FIND_COORDINATOR, bk_api_h_find_coordinator),
    V(KP_API_JOIN_GROUP, bk_api_h_join_group),
    V(KP_API_HEARTBEAT, bk_api_h_heartbeat),
    V(KP_API_LEAVE_GROUP, bk_api_h_leave_group),
    V(KP_API_SYNC_GROUP, bk_api_h_sync_group),
    V(KP_API_DESCRIBE_GROUPS, bk_api_h_describe_groups),
    V(KP_API_LIST_GROUPS, bk_api_h_list_groups),
    V(KP_API_SASL_HANDSHAKE, bk_api_h_sasl_handshake),
    V(KP_API_API_VERSIONS, bk_api_h_api_versions),
    V(KP_API_CREATE_TOPICS, bk_api_h_create_topics),
    V(KP_API_DELETE_TOPICS, bk_api_h_delete_topics),
    V(KP_API_DELETE_RECORDS, bk_api_h_delete_records),
    V(KP_API_INIT_PRODUCER_ID, bk_api_h_init_producer_id),
    V(KP_API_OFFSET_FOR_LEADER_EPOCH, bk_api_h_offset_for_leader_epoch),
    V(KP_API_ADD_PARTITIONS_TO_TXN, bk_api_h_add_partitions_to_txn),
    V(KP_API_ADD_OFFSETS_TO_TXN, bk_api_h_add_offsets_to_txn),
    V(KP_API_END_TXN, bk_api_h_end_txn),
    V(KP_API_WRITE_TXN_MARKERS, bk_api_h_write_txn_markers),
    V(KP_API_TXN_OFFSET_COMMIT, bk_api_h_txn_offset_commit),
    V(KP_API_DESCRIBE_ACLS, bk_api_h_describe_acls),
    V(KP_API_CREATE_ACLS, bk_api_h_create_acls),
    V(KP_API_DELETE_ACLS, bk_api_h_delete_acls),
    V(KP_API_DESCRIBE_CONFIGS, bk_api_h_describe_configs),
    V(KP_API_ALTER_CONFIGS, bk_api_h_alter_configs),
    V(KP_API_DESCRIBE_LOG_DIRS, bk_api_h_describe_log_dirs),
    V(KP_API_SASL_AUTHENTICATE, bk_api_h_sasl_authenticate),
    V(KP_API_CREATE_PARTITIONS, bk_api_h_create_partitions),
    V(KP_API_DELETE_GROUPS, bk_api_h_delete_groups),
    V(KP_API_ELECT_LEADERS, bk_api_h_elect_leaders),
    V(KP_API_INCREMENTAL_ALTER_CONFIGS, bk_api_h_incremental_alter_configs),
    V(KP_API_ALTER_PARTITION_REASSIGNMENTS, bk_api_h_alter_partition_reassignments),
    V(KP_API_LIST_PARTITION_REASSIGNMENTS, bk_api_h_list_partition_reassignments),
    V(KP_API_OFFSET_DELETE, bk_api_h_offset_delete),
    V(KP_API_DESCRIBE_CLIENT_QUOTAS, bk_api_h_describe_client_quotas),
    V(KP_API_ALTER_CLIENT_QUOTAS, bk_api_h_alter_client_quotas),
    V(KP_API_DESCRIBE_USER_SCRAM_CREDENTIALS, bk_api_h_describe_user_scram_credentials),
    V(KP_API_ALTER_USER_SCRAM_CREDENTIALS, bk_api_h_alter_user_scram_credentials),
    V(KP_API_DESCRIBE_QUORUM, bk_api_h_describe_quorum),
    V(KP_API_UPDATE_FEATURES, bk_api_h_update_features),
    V(KP_API_DESCRIBE_CLUSTER, bk_api_h_describe_cluster),
    V(KP_API_DESCRIBE_PRODUCERS, bk_api_h_describe_producers),
    V(KP_API_DESCRIBE_TRANSACTIONS, bk_api_h_describe_transactions),
    V(KP_API_LIST_TRANSACTIONS, bk_api_h_list_transactions),
    V(KP_API_CONSUMER_GROUP_HEARTBEAT, bk_api_h_consumer_group_heartbeat),
    V(KP_API_CONSUMER_GROUP_DESCRIBE, bk_api_h_consumer_group_describe),
    V(KP_API_DESCRIBE_TOPIC_PARTITIONS, bk_api_h_describe_topic_partitions),
};
#undef V
#define NTABLE (sizeof table / sizeof table[0])

/* Versions come from the codec registry on first use: min..max_stable. */
static void table_init(void) {
    if (table[0].max_version >= 0) return;
    for (size_t i = 0; i < NTABLE; i++) {
        const kp_api_info_t *api = kp_api_info(table[i].api_key);
        assert(api != NULL);
        table[i].min_version = api->min_version;
        table[i].max_version = api->max_stable_version;
        assert(i == 0 || table[i - 1].api_key < table[i].api_key);
    }
}

const bk_api_entry_t *bk_api_dispatch_table(size_t *n) {
    table_init();
    *n = NTABLE;
    return table;
}

const bk_api_entry_t *bk_api_dispatch_find(int16_t api_key) {
    table_init();
    for (size_t i = 0; i < NTABLE; i++)
        if (table[i].api_key == api_key) return &table[i];
    return NULL;
}

/* The response encoding buffer of the thread (Fetch answers, whose file
 * ranges are spliced in by build_body): kept up to SCRATCH_KEEP_BYTES,
 * larger encodings use a one-off malloc. Thread-local: no lock whichever
 * loop encodes. */
#define SCRATCH_KEEP_BYTES ((size_t)256 << 10)
static _Thread_local uint8_t *scratch;
static _Thread_local size_t scratch_cap;

/* Finished requests of one node, for reuse: only the node's loop thread
 * touches it. */
struct bk_api_req_pool {
    bk_api_req_t *free;
    size_t n;
};

struct bk_api_req_pool *bk_api_req_pool_new(void) { return calloc(1, sizeof(struct bk_api_req_pool)); }

void bk_api_req_pool_free(struct bk_api_req_pool *pool) {
    if (!pool) return;
    bk_api_req_t *r = pool->free;
    while (r) {
        bk_api_req_t *next = r->pool_next;
        kp_arena_free(&r->arena);
        free(r);
        r = next;
    }
    free(pool);
}

/* A zeroed request with an empty arena: from the node's pool (keeping its
 * arena's retained chunk), else new. */
static bk_api_req_t *req_new(bk_node_t *n) {
    struct bk_api_req_pool *pool = n->req_pool;
    bk_api_req_t *req;
    if (pool && pool->free) {
        req = pool->free;
        pool->free = req->pool_next;
        pool->n--;
        kp_arena_t keep = req->arena;
        assert(keep.used_bytes == 0);
        memset(req, 0, sizeof *req);
        req->arena = keep;
    } else {
        req = calloc(1, sizeof *req);
        if (!req) return NULL;
        kp_arena_init(&req->arena, BK_API_REQ_ARENA_CAP_BYTES);
    }
    req->node = n;
    n->reqs_live++;
    return req;
}

static void req_free(bk_api_req_t *req) {
    assert(req->node != NULL);
    assert(req->node->reqs_live > 0);   /* paired with req_new: freed once */
    req->node->reqs_live--;
    if (req->start_ns) bk_api_metrics_request(req->node, req->hdr.api_key, req->start_ns);
    /* back to the block pool (no malloc per frame once warm), also once
     * the net is gone (a request finished during bk_broker_free's teardown) */
    bk_net_mem_free(req->frame);
    req->frame = NULL;
    struct bk_api_req_pool *pool = req->node->req_pool;   /* NULL once bk_broker_free dropped it */
    if (pool && pool->n < BK_API_REQ_POOL_MAX) {
        kp_arena_reset_retain(&req->arena, BK_API_REQ_ARENA_RETAIN_BYTES);
        req->pool_next = pool->free;
        pool->free = req;
        pool->n++;
        return;
    }
    kp_arena_free(&req->arena);
    free(req);
}

void bk_api_req_drop(bk_api_req_t *req) { req_free(req); }

void bk_api_req_cache_drain(void) {
    free(scratch);
    scratch = NULL;
    scratch_cap = 0;
}

/* A buffer of at least `n` bytes for one encoding: the thread's scratch when
 * n <= SCRATCH_KEEP_BYTES (grown once, kept), else a block of the net's pool
 * the caller gives back with scratch_put. */
static uint8_t *scratch_get(size_t n) {
    if (n == 0) n = 1;
    if (n > SCRATCH_KEEP_BYTES) return bk_net_mem_alloc(n);   /* pooled up to 1 MiB */
    if (n > scratch_cap) {
        size_t cap = scratch_cap ? scratch_cap : 4096;
        while (cap < n) cap *= 2;
        if (cap > SCRATCH_KEEP_BYTES) cap = SCRATCH_KEEP_BYTES;
        uint8_t *nb = realloc(scratch, cap);
        if (!nb) return NULL;
        scratch = nb;
        scratch_cap = cap;
    }
    return scratch;
}

static void scratch_put(uint8_t *buf) {
    if (buf != scratch) bk_net_mem_free(buf);
}

void *bk_api_req_alloc(bk_api_req_t *req, size_t count, size_t size) {
    if (count == 0) count = 1;
    if (size != 0 && count > SIZE_MAX / size) return NULL;
    return kp_arena_alloc(&req->arena, count * size);
}

char *bk_api_req_cstr(bk_api_req_t *req, kp_str_t s) {
    if (kp_slice_has_nul(s)) {
        req->nul_refused = true;
        return NULL;
    }
    char *c = bk_api_req_alloc(req, s.len + 1, 1);
    if (c && s.len) memcpy(c, s.p, s.len);
    return c;
}

char *bk_api_req_topic_cstr(bk_api_req_t *req, kp_str_t s) {
    size_t nul = 0;
    for (size_t i = 0; i < s.len; i++) nul += s.p[i] == '\0';
    char *c = bk_api_req_alloc(req, s.len + nul + 1, 1);
    if (!c) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < s.len; i++) {
        if (s.p[i] == '\0') {
            c[k++] = '\\';
            c[k++] = '0';
        } else {
            c[k++] = (char)s.p[i];
        }
    }
    assert(k == s.len + nul);
    c[k] = '\0';
    return c;
}

int32_t bk_api_req_quota(bk_api_req_t *req, int key, double amount) {
    bk_node_t *n = req->node;
    if (!n->quotas || n->img.nquotas == 0) return 0;
    bk_net_conn_t *c = bk_net_conn(req->net, req->slot.conn_id);
    if (!c) return 0;
    /* the client id whole, as it arrived: quota.c keys it (no copy here) */
    int64_t now_ms = (int64_t)(bk_net_mono_ns() / 1000000u);
    int64_t t = bk_node_quota_record_id(n->quotas, &n->img, bk_net_conn_principal(c), req->hdr.client_id, key, amount,
                                        now_ms);
    if (t <= 0) return 0;
    if (bk_net_conn_mute_until(c, now_ms + t) != BK_NET_OK)
        bk_net_log_close(req->net, "quota mute failed", "node %d: cannot mute connection %s for its quota (%lld ms)",
                         n->id, req->peer, (long long)t);
    return (int32_t)t;
}

kp_str_t bk_api_str(const char *s) {
    kp_str_t r = { (const uint8_t *)s, s ? strlen(s) : 0 };
    return r;
}

/* ---- responses ------------------------------------------------------- */

typedef struct {
    size_t off;
    const st_read_result_t *rr;
} splice_t;

typedef struct {
    bk_api_req_t *req;
    splice_t *v;
    size_t n, cap;
} splices_t;

static int on_splice(void *ctx, size_t off, const void *ext, size_t ext_len) {
    splices_t *s = ctx;
    const st_read_result_t *rr = ext;
    if (rr->total_bytes != ext_len) return KP_ERR_BAD_VALUE;
    if (s->n == s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 16;
        splice_t *nv = bk_api_req_alloc(s->req, ncap, sizeof *nv);
        if (!nv) return KP_ERR_NOMEM;
        if (s->n) memcpy(nv, s->v, s->n * sizeof *nv);
        s->v = nv;
        s->cap = ncap;
    }
    s->v[s->n].off = off;
    s->v[s->n].rr = rr;
    s->n++;
    return KP_OK;
}

/* Appends n bytes to body in a chain sized for n. Not evbuffer_add: after
 * a file range libevent sizes the next chain from the file chain's
 * "buffer_len", which is the range's file offset plus its length — a
 * fetch 1 MB into a segment allocated (mmap'd, then munmap'd on the
 * network loop) a 1 MB chain for a few dozen bytes of response tail, and
 * up to a segment's size deep in a big one. */
static int body_add_mem(struct evbuffer *body, const uint8_t *p, size_t n) {
    if (n == 0) return KP_OK;
    struct evbuffer_iovec v;
    if (evbuffer_reserve_space(body, (ev_ssize_t)n, &v, 1) != 1 || v.iov_len < n) return KP_ERR_NOMEM;
    memcpy(v.iov_base, p, n);
    v.iov_len = n;
    return evbuffer_commit_space(body, &v, 1) == 0 ? KP_OK : KP_ERR_NOMEM;
}

/* A sent (or dropped) file range gives up its segment reference: on the
 * network loop that freed it, or here when adding it failed. */
static void release_range(struct evbuffer_file_segment const *seg, int flags, void *ctx) {
    (void)seg, (void)flags;
    st_fdref_release(ctx);
}

/* Body = encoded bytes (without the 4-byte size, which the net adds) with
 * the file ranges inserted at their splice points. */
static int build_body(const uint8_t *buf, size_t len, const splices_t *s, struct evbuffer *body) {
    /* From byte 0, then the 4 size bytes drained: the net's size prefix
     * then fits in front of the first chain without another allocation. */
    size_t pos = 0;
    for (size_t i = 0; i < s->n; i++) {
        assert(s->v[i].off >= pos && s->v[i].off <= len);
        if (body_add_mem(body, buf + pos, s->v[i].off - pos) != KP_OK) return KP_ERR_NOMEM;
        pos = s->v[i].off;
        const st_read_result_t *rr = s->v[i].rr;
        for (int k = 0; k < rr->n; k++) {
            const st_read_range_t *g = &rr->r[k];
            int rc;
            if (g->ref) {
                /* the segment's refcounted descriptor: no dup()+close per
                 * range; the reference keeps it open until sent */
                st_fdref_hold(g->ref);
                rc = bk_net_resp_add_file_held(body, g->fd, (int64_t)g->pos, (int64_t)g->len, release_range, g->ref);
            } else {
                rc = bk_net_resp_add_file(body, g->fd, (int64_t)g->pos, (int64_t)g->len);
            }
            if (rc != BK_NET_OK) return KP_ERR_NOMEM;
        }
    }
    if (body_add_mem(body, buf + pos, len - pos) != KP_OK) return KP_ERR_NOMEM;
    return evbuffer_drain(body, 4) == 0 ? KP_OK : KP_ERR_NOMEM;
}

static int no_splice(void *ctx, size_t off, const void *ext, size_t ext_len) {
    (void)ctx, (void)off, (void)ext, (void)ext_len;
    return KP_ERR_UNSUPPORTED;
}

/* A response without file ranges (every API but Fetch), encoded straight
 * into the evbuffer's own space: no intermediate heap buffer and no copy.
 * KP_ERR_UNSUPPORTED when it holds a file range after all (the caller then
 * takes the general path). */
static int encode_direct(bk_api_req_t *req, const void *resp, size_t size, struct evbuffer **body_out) {
    struct evbuffer *body = bk_net_body_new(req->net);
    if (!body) return KP_ERR_NOMEM;
    struct evbuffer_iovec v;
    int rc = KP_ERR_NOMEM;
    if (evbuffer_reserve_space(body, (ev_ssize_t)size, &v, 1) == 1 && v.iov_len >= size) {
        kp_wr_t w;
        kp_wr_init(&w, v.iov_base, size);
        kp_enc_opts_t opts = { no_splice, NULL, 0 };
        rc = kp_response_encode(&w, req->hdr.api_key, req->hdr.api_version, req->hdr.correlation_id, resp, &opts);
        if (rc == KP_OK) {
            assert(w.pos == size && size >= 4);
            v.iov_len = w.pos;
            /* the net writes the size prefix itself: drop the encoder's */
            if (evbuffer_commit_space(body, &v, 1) != 0 || evbuffer_drain(body, 4) != 0) rc = KP_ERR_NOMEM;
        }
    }
    if (rc != KP_OK) {
        evbuffer_free(body);
        return rc;
    }
    *body_out = body;
    return KP_OK;
}

/* Encodes `resp` into a new evbuffer (*body_out, owned by the caller). */
static int req_encode(bk_api_req_t *req, const void *resp, struct evbuffer **body_out) {
    int16_t key = req->hdr.api_key, ver = req->hdr.api_version;
    kp_wr_t w;
    kp_wr_init_count(&w);
    kp_enc_opts_t count_opts = { on_splice, NULL, 0 };
    int rc = kp_response_encode(&w, key, ver, req->hdr.correlation_id, resp, &count_opts);
    if (rc == KP_OK && key != KP_API_FETCH) {
        int drc = encode_direct(req, resp, w.pos, body_out);
        if (drc == KP_OK) bk_api_metrics_response(req->node, key, ver, resp);
        if (drc != KP_ERR_UNSUPPORTED) return drc;
    }
    uint8_t *buf = NULL;
    splices_t sp = { req, NULL, 0, 0 };
    struct evbuffer *body = NULL;
    if (rc == KP_OK) {
        /* Copy note: the response is encoded once into this buffer, then
         * moved into the evbuffer (one memcpy); record bytes from disk are
         * never copied (sendfile). The buffer is the thread's scratch. */
        buf = scratch_get(w.pos);
        if (!buf) rc = KP_ERR_NOMEM;
    }
    if (rc == KP_OK) {
        size_t cap = w.pos;
        kp_wr_init(&w, buf, cap);
        kp_enc_opts_t opts = { on_splice, &sp, 0 };
        rc = kp_response_encode(&w, key, ver, req->hdr.correlation_id, resp, &opts);
    }
    if (rc == KP_OK) {
        body = bk_net_body_new(req->net);
        rc = body ? build_body(buf, w.pos, &sp, body) : KP_ERR_NOMEM;
    }
    scratch_put(buf);
    if (rc != KP_OK) {
        if (body) evbuffer_free(body);
        return rc;
    }
    bk_api_metrics_response(req->node, key, ver, resp);
    *body_out = body;
    return KP_OK;
}

/* Queues `body` (taking it) on the request's slot and frees req. */
static void req_send(bk_api_req_t *req, struct evbuffer *body) {
    int nrc = bk_net_respond(req->net, req->slot, body);
    if (nrc == BK_NET_ERR_INVALID) {   /* e.g. a body above INT32_MAX: never leave the slot open */
        bk_api_req_close(req, "response could not be queued");
        return;
    }
    /* BK_NET_ERR_GONE: the client left; nothing to do */
    req_free(req);
}

void bk_api_req_respond(bk_api_req_t *req, const void *resp) {
    struct evbuffer *body = NULL;
    int rc = req_encode(req, resp, &body);
    if (rc != KP_OK) {
        bk_api_req_close(req, kp_status_str(rc));
        return;
    }
    req_send(req, body);
}

void bk_api_req_respond_none(bk_api_req_t *req) {
    (void)bk_net_respond_none(req->net, req->slot);
    req_free(req);
}

void bk_api_req_close(bk_api_req_t *req, const char *why) {
    bk_net_conn_t *c = bk_net_conn(req->net, req->slot.conn_id);
    /* one line per cause per 10 s at most: a fuzzer or a broken client
     * would otherwise log one line per connection (issue 16) */
    /* the handler saw NULL from bk_api_req_cstr; say the real cause */
    if (why && req->nul_refused) why = "a string field holds a NUL byte (refused, not truncated)";
    if (why)
        bk_net_log_close(req->net, why, "node %d: closing connection %s (api %d v%d corr %d): %s",
                         req->node->id, req->peer, req->hdr.api_key, req->hdr.api_version,
                         req->hdr.correlation_id, why);
    if (c) bk_net_conn_close_after_flush(c);
    (void)bk_net_respond_none(req->net, req->slot);
    req_free(req);
}

/* ---- requests -------------------------------------------------------- */

/* NOTES.md §2: v0 layout, header v0, error 35, only the ApiVersions entry. */
static void answer_unsupported_api_versions(bk_api_req_t *req) {
    const bk_api_entry_t *e = bk_api_dispatch_find(KP_API_API_VERSIONS);
    kp_api_versions_response_t r;
    memset(&r, 0, sizeof r);
    kp_api_versions_response_init(&r);
    kp_api_versions_response_api_version_t av = { KP_API_API_VERSIONS, e->min_version, e->max_version };
    r.error_code = KP_ERROR_UNSUPPORTED_VERSION;
    r.api_keys.items = &av;
    r.api_keys.count = 1;
    req->hdr.api_version = 0;
    bk_api_req_respond(req, &r);
}

void bk_api_dispatch_frame(bk_net_conn_t *conn, const uint8_t *frame, size_t len, void *ctx) {
    bk_node_t *n = ctx;
    /* SASL listeners: nothing but ApiVersions and the SASL exchange before
     * authentication; bare tokens after a v0 handshake (h_sasl.c) */
    if (bk_api_sasl_gate(n, n->net, conn, frame, len)) return;
    /* a metadata change reaching a node that is not the controller goes
     * there; the api test first keeps the data path out of the quorum */
    if (len >= 2 && bk_cluster_forwarded_api(bk_cluster_frame_api(frame)) &&
        bk_api_forward_authorized(n, conn, frame, len) && bk_cluster_forward_frame(n, conn, frame, len))
        return;
    bk_api_dispatch_frame_on(n, n->net, conn, frame, len);
}

void bk_api_dispatch_frame_on(bk_node_t *n, bk_net_t *net, bk_net_conn_t *conn, const uint8_t *frame, size_t len) {
    assert(net != NULL);
    /* The request owns its frame: decoded fields point into it, handlers may
     * finish later (purgatory, commits, replication) and Produce patches
     * offsets into its batches. Taking it from the net is the one copy of
     * these bytes (net.h), not a second one on top of the net's. */
    (void)frame;                    /* the same bytes, taken from conn below */
    bk_api_req_t *req = req_new(n);
    uint8_t *own = req ? bk_net_conn_take_frame(conn) : NULL;
    if (!req || !own) {
        if (req) req_free(req);
        bk_net_conn_close_after_flush(conn);
        (void)bk_net_conn_respond_none(conn, bk_net_conn_slot(conn));
        return;
    }
    req->node = n;
    req->net = net;
    req->slot = bk_net_conn_slot(conn);
    snprintf(req->listener, sizeof req->listener, "%s", bk_net_conn_listener(conn));
    req->frame = own;
    req->frame_len = len;
    req->start_ns = bk_net_mono_ns();
    snprintf(req->peer, sizeof req->peer, "%s", bk_net_conn_peer(conn));
    snprintf(req->principal, sizeof req->principal, "%s", bk_net_conn_principal(conn));
    bk_node_authz_host(req->peer, req->host, sizeof req->host);

    int rc = kp_request_decode(own, len, &req->hdr, &req->body, &req->arena);
    const bk_api_entry_t *e = NULL;
    if (rc == KP_OK) {
        e = bk_api_dispatch_find(req->hdr.api_key);
        if (e && (req->hdr.api_version < e->min_version || req->hdr.api_version > e->max_version))
            e = NULL;
    }
    if (req->hdr.api_key == KP_API_API_VERSIONS &&
        (rc == KP_ERR_UNSUPPORTED || (rc == KP_OK && e == NULL))) {
        answer_unsupported_api_versions(req);
        return;
    }
    if (rc != KP_OK) {
        bk_api_req_close(req, rc == KP_ERR_UNSUPPORTED ? "unsupported api key or version"
                                                   : "malformed request");
        return;
    }
    if (!e) {
        bk_api_req_close(req, "api not served");
        return;
    }
    if (!bk_api_node_rpc_check(req, conn)) return;
    req->prepared = bk_net_conn_prepared(conn);
    req->node_forwarded = bk_api_node_forwarded(n, conn, req->hdr.api_key);
    if (!n->quotas || n->img.nquotas == 0) {
        e->fn(req);
        return;
    }
    /* request_percentage: the loop time the handler takes counts against
     * it (Kafka counts request handler and network thread time; the time a
     * request waits in a purgatory or for a commit is not the loop's and
     * is not counted). The client id is copied first, whole (quota.c
     * compares ids whole): req may be freed by the handler. A long id is
     * copied to the heap — allocation following bytes received. Throttled
     * by muting only: the answer may be gone. */
    uint8_t small[BK_META_QUOTA_NAME_MAX + 1];
    kp_str_t id = req->hdr.client_id;
    uint8_t *copy = id.len <= sizeof small ? small : malloc(id.len);
    if (!copy) {
        bk_api_req_close(req, "out of memory");
        return;
    }
    if (id.len) memcpy(copy, id.p, id.len);
    if (id.p) id.p = copy;
    uint64_t t0 = bk_net_mono_ns();
    e->fn(req);
    uint64_t t1 = bk_net_mono_ns();
    int64_t now_ms = (int64_t)(t1 / 1000000u);
    int64_t t = bk_node_quota_record_id(n->quotas, &n->img, bk_net_conn_principal(conn), id,
                                        BK_META_QUOTA_REQUEST_PERCENTAGE, (double)(t1 - t0) / 1e6, now_ms);
    if (copy != small) free(copy);
    if (t > 0 && bk_net_conn_mute_until(conn, now_ms + t) != BK_NET_OK)
        bk_net_log_close(net, "quota mute failed", "node %d: cannot mute connection %s for its request quota",
                         n->id, bk_net_conn_peer(conn));
}

bk_repl_part_t *bk_api_req_leader_part(bk_api_req_t *req, kp_str_t topic, int32_t partition, int16_t *err) {
    const bk_meta_topic_t *t = bk_meta_image_topic_by_slice(&req->node->img, topic);
    if (!t || partition < 0 || partition >= t->nparts) {
        *err = KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
        return NULL;
    }
    bk_repl_part_t *p = bk_repl_parts_get(req->node->parts, &t->id, partition);
    if (!p || !p->leader) { *err = KP_ERROR_NOT_LEADER_OR_FOLLOWER; return NULL; }
    if (!p->log) { *err = p->opening ? KP_ERROR_NOT_LEADER_OR_FOLLOWER : KP_ERROR_KAFKA_STORAGE_ERROR; return NULL; }
    *err = 0;
    return p;
}
