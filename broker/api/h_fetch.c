/* broker/api/h_fetch.c — Fetch and its sessions; see fetch.h.
 *
 * Data path: st_log_read gives file ranges (fd, pos, len) of whole batches;
 * they go into the response as external records (kp_records_t.ext points at
 * the st_read_result_t in the request arena) and dispatch.c splices them in
 * with sendfile, so bytes on disk are the bytes on the wire. Versions below
 * 10 need the batches inspected (zstd is refused with
 * UNSUPPORTED_COMPRESSION_TYPE) and below 4 down-converted to magic 0/1:
 * old clients only. That copy, check and conversion runs on the worker pool
 * (fetch_convert_int.h: the loop takes the file ranges, the job reads and
 * converts, the answer is built when it is done), or inline on the loop
 * when the pool's queue is full.
 *
 * Limits (KIP-74): partition_max_bytes per partition, max_bytes (v3+) for
 * the response, and the first partition with data returns at least one
 * whole batch even when it is larger. The upper bound is the HW
 * (read_uncommitted) or the LSO (read_committed; = HW while no transaction
 * is open).
 *
 * A fetch that must wait is handed to the fetch purgatory
 * (replication/purgatory.h) under each partition it reads, with two
 * callbacks: fwait_ready (enough bytes, an error or session news now?) and
 * fwait_done (answer). */
#include "broker/api/fetch.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/api/dispatch.h"
#include "broker/meta/acl.h"
#include "broker/api/fetch_convert_int.h"
#include "broker/api/fetch_session.h"
#include "storage/st_fdref.h"
#include "broker/net/worker.h"
#include "broker/replication/part_metrics.h"
#include "broker/replication/purgatory.h"
#include "broker/replication/replica.h"
#include "protocol/kp_errors.h"
#include "storage/st_log.h"

/* One partition to fetch: from the request (full fetch) or from the
 * session (incremental fetch), copied into the request arena so that a
 * waiting fetch does not depend on the session staying put. */
typedef struct {
    kp_str_t topic;               /* name (< v13) */
    kp_uuid_t topic_id;           /* v13+ */
    int32_t partition;
    int32_t current_leader_epoch;
    int64_t fetch_offset;
    int32_t max_bytes;
    bool filter;                  /* incremental: include only with news */
    int64_t last_hw, last_lso, last_start;
    int32_t last_fetched_epoch;   /* v12+ */
    bool replica;                 /* a follower's fetch: judged by its core */
    bk_repl_replica_verdict_t verdict; /* set once, when the request arrives */
    const fconv_part_t *copy;     /* < v10: the records the copy path made (NULL: none) */
} ftarget_t;

/* A partition's read made by can_answer (on arrival, or asked by the
 * purgatory), kept for an answer given at once (issue 19: the log was
 * walked twice per partition, once to count bytes, once to answer). */
typedef struct {
    st_read_result_t rr;
    int64_t end;                  /* the upper bound it read to */
    uint64_t max;                 /* the byte limit it read with (ST_READ_MIN_ONE) */
} fpre_t;

typedef struct {
    ftarget_t *v;
    size_t n;
    int32_t session_id;           /* answered; 0 = no session */
    int16_t error;                /* top-level (session errors) */
    bool copied;                  /* < v10: the copy path has run, `copy` is set */
    fpre_t **pre;                 /* per target, or NULL: the reads of the last can_answer
                                   * that said yes, valid only for the answer given right
                                   * after it (nothing ran between: on arrival, or the
                                   * purgatory's ready -> done); NULL otherwise */
    fpre_t **keep;                /* plan->n slots behind `pre`, made once per fetch */
    fpre_t *slots;                /* plan->n reads those slots point to: a waiting fetch
                                   * asked again on every append reuses them (the
                                   * request arena does not grow per ask) */
} fplan_t;

/* A fetch in the purgatory (request arena: lives until the answer). */
typedef struct {
    bk_api_req_t *req;
    fplan_t *plan;
} fwait_t;

struct bk_fetch_state {
    bk_node_t *n;
    bk_api_fs_cache_t sessions;
    bk_api_fetch_stats_t stats;   /* bk_api_fetch_stats */
};

typedef kp_fetch_response_partition_data_t fpart_t;

bk_node_fetch_state_t *bk_api_fetch_new(bk_node_t *n) {
    bk_node_fetch_state_t *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->n = n;
    int64_t slots = bk_cfg_int(n->cfg, BK_CFG_MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS);
    if (bk_api_fs_cache_init(&f->sessions, (size_t)slots, (uint64_t)bk_net_now_ms() ^ (uint64_t)n->id << 32) != KP_OK) {
        free(f);
        return NULL;
    }
    return f;
}

/* ---- resolving a requested partition ---------------------------------------- */

typedef struct {
    const bk_meta_topic_t *t;
    bk_repl_part_t *p;
    int16_t err;
} target_t;

static bool by_id(const bk_api_req_t *req) { return req->hdr.api_version >= 13; }

static const bk_meta_topic_t *topic_of(bk_api_req_t *req, const ftarget_t *ft) {
    if (by_id(req)) return bk_meta_image_topic_by_id(&req->node->img, (const bk_meta_uuid_t *)ft->topic_id.b);
    return bk_meta_image_topic_by_slice(&req->node->img, ft->topic);
}

static int32_t replica_id_of(const bk_api_req_t *req);

static target_t resolve(bk_api_req_t *req, const ftarget_t *fp) {
    const bk_meta_topic_t *t = topic_of(req, fp);
    target_t x = { t, NULL, 0 };
    if (!t || fp->partition < 0 || fp->partition >= t->nparts) {
        x.err = by_id(req) && !t ? KP_ERROR_UNKNOWN_TOPIC_ID : KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
        return x;
    }
    /* a consumer needs READ on the topic (replica fetches passed
     * bk_api_node_rpc_check: CLUSTER_ACTION) */
    if (!fp->replica && replica_id_of(req) < 0 && !bk_api_authorized(req, BK_META_OP_READ, BK_META_RES_TOPIC, t->name)) {
        x.t = NULL;
        x.err = KP_ERROR_TOPIC_AUTHORIZATION_FAILED;
        return x;
    }
    x.p = bk_repl_parts_get(req->node->parts, &t->id, fp->partition);
    if (!x.p || !x.p->leader) { x.err = KP_ERROR_NOT_LEADER_OR_FOLLOWER; return x; }
    if (!x.p->log) { x.err = x.p->opening ? KP_ERROR_NOT_LEADER_OR_FOLLOWER : KP_ERROR_KAFKA_STORAGE_ERROR; return x; }
    if (fp->replica) {            /* epochs and position: the core's verdict */
        x.err = fp->verdict.error;
        return x;
    }
    if (fp->current_leader_epoch >= 0 && fp->current_leader_epoch != x.p->leader_epoch) {
        x.err = fp->current_leader_epoch < x.p->leader_epoch ? KP_ERROR_FENCED_LEADER_EPOCH : KP_ERROR_UNKNOWN_LEADER_EPOCH;
        return x;
    }
    int64_t off = fp->fetch_offset;
    if (off < st_log_start_offset(x.p->log) || off > st_log_end_offset(x.p->log)) x.err = KP_ERROR_OFFSET_OUT_OF_RANGE;
    return x;
}

/* Replica id of a fetch (-1: a consumer). */
static int32_t replica_id_of(const bk_api_req_t *req) {
    const kp_fetch_request_t *q = req->body;
    return req->hdr.api_version >= 15 ? q->replica_state.replica_id : q->replica_id;
}

/* Followers read up to the LEO (they must copy what is not yet committed);
 * consumers up to the HW, or the LSO for read_committed. */
static int64_t upper_bound(const bk_api_req_t *req, const st_log_t *log) {
    const kp_fetch_request_t *q = req->body;
    if (replica_id_of(req) >= 0) return st_log_end_offset(log);
    return q->isolation_level == 1 ? st_log_last_stable_offset(log) : st_log_high_watermark(log);
}

static uint64_t part_max(const ftarget_t *fp) {
    return fp->max_bytes > 0 ? (uint64_t)fp->max_bytes : 0;
}

/* Bytes a response would carry now, stopping at `enough`; true when some
 * partition has an error or news for an incremental session (answered at
 * once, as Kafka does). keep (NULL, or plan->keep and plan->slots): each
 * read is made into the target's slot and pointed to from keep for
 * respond_fetch; targets not read leave their keep entry NULL. */
static bool available(bk_api_req_t *req, const fplan_t *plan, uint64_t enough, uint64_t *bytes, fpre_t **keep,
                      fpre_t *slots) {
    *bytes = 0;
    if (plan->error) return true;
    for (size_t i = 0; i < plan->n; i++) {
        const ftarget_t *fp = &plan->v[i];
        target_t x = resolve(req, fp);
        if (x.err || (fp->replica && fp->verdict.diverging)) return true;
        if (fp->filter && (fp->last_hw != st_log_high_watermark(x.p->log) ||
                           fp->last_start != st_log_start_offset(x.p->log)))
            return true;
        int64_t end = upper_bound(req, x.p->log);
        if (fp->fetch_offset >= end) continue;
        fpre_t local, *pre = keep ? &slots[i] : &local;
        pre->end = end;
        pre->max = part_max(fp);
        if (st_log_read(x.p->log, fp->fetch_offset, pre->max, end, ST_READ_MIN_ONE, &pre->rr) != KP_OK) return true;
        if (keep) keep[i] = pre;
        *bytes += pre->rr.total_bytes;
        if (*bytes >= enough) return false;
    }
    return false;
}

/* ---- the plan: request and session ------------------------------------------------ */

static void target_from_session(ftarget_t *t, const bk_api_fs_part_t *p) {
    memset(t, 0, sizeof *t);
    t->topic = bk_api_str(p->topic);
    t->topic_id = p->topic_id;
    t->partition = p->partition;
    t->current_leader_epoch = p->current_leader_epoch;
    t->fetch_offset = p->fetch_offset;
    t->max_bytes = p->max_bytes;
    t->filter = true;
    t->last_hw = p->last_hw;
    t->last_lso = p->last_lso;
    t->last_start = p->last_start;
    t->last_fetched_epoch = -1;   /* sessions do not keep it */
}

static int plan_from_request(bk_api_req_t *req, fplan_t *plan) {
    const kp_fetch_request_t *q = req->body;
    size_t n = 0;
    for (int32_t i = 0; i < q->topics.count; i++)
        n += q->topics.items[i].partitions.count > 0 ? (size_t)q->topics.items[i].partitions.count : 0;
    plan->v = bk_api_req_alloc(req, n, sizeof *plan->v);
    if (!plan->v) return KP_ERR_NOMEM;
    plan->n = 0;
    for (int32_t i = 0; i < q->topics.count; i++) {
        const kp_fetch_request_fetch_topic_t *ft = &q->topics.items[i];
        for (int32_t k = 0; k < ft->partitions.count; k++) {
            const kp_fetch_request_fetch_partition_t *fp = &ft->partitions.items[k];
            ftarget_t *t = &plan->v[plan->n++];
            memset(t, 0, sizeof *t);
            t->topic = ft->topic;
            t->topic_id = ft->topic_id;
            t->partition = fp->partition;
            t->current_leader_epoch = fp->current_leader_epoch;
            t->fetch_offset = fp->fetch_offset;
            t->max_bytes = fp->partition_max_bytes;
            t->last_fetched_epoch = fp->last_fetched_epoch;
        }
    }
    return KP_OK;
}

/* Applies an incremental request to its session (KIP-227): named
 * partitions are added or updated, forgotten ones removed. */
static int16_t session_update(bk_api_req_t *req, bk_api_fs_t *s) {
    const kp_fetch_request_t *q = req->body;
    bool id = by_id(req);
    for (int32_t i = 0; i < q->topics.count; i++) {
        const kp_fetch_request_fetch_topic_t *ft = &q->topics.items[i];
        for (int32_t k = 0; k < ft->partitions.count; k++) {
            const kp_fetch_request_fetch_partition_t *fp = &ft->partitions.items[k];
            if (bk_api_fs_part_upsert(s, id, ft->topic, &ft->topic_id, fp->partition, fp->fetch_offset,
                                  fp->partition_max_bytes, fp->current_leader_epoch) != KP_OK)
                return KP_ERROR_UNKNOWN_SERVER_ERROR;
        }
    }
    for (int32_t i = 0; i < q->forgotten_topics_data.count; i++) {
        const kp_fetch_request_forgotten_topic_t *ft = &q->forgotten_topics_data.items[i];
        for (int32_t k = 0; k < ft->partitions.count; k++)
            bk_api_fs_part_forget(s, id, ft->topic, &ft->topic_id, ft->partitions.items[k]);
    }
    return 0;
}

static int build_plan(bk_api_req_t *req, bk_node_fetch_state_t *f, fplan_t *plan) {
    const kp_fetch_request_t *q = req->body;
    memset(plan, 0, sizeof *plan);
    int32_t sid = req->hdr.api_version >= 7 ? q->session_id : 0;
    int32_t epoch = req->hdr.api_version >= 7 ? q->session_epoch : -1;
    if (epoch <= 0) {                       /* -1: sessionless; 0: (re)start a session */
        if (sid != 0) bk_api_fs_remove(&f->sessions, sid);
        int rc = plan_from_request(req, plan);
        if (rc != KP_OK || epoch < 0) return rc;
        bk_api_fs_t *s = bk_api_fs_create(&f->sessions, bk_net_now_ms());
        if (!s) return KP_OK;               /* cache full: no session */
        if (session_update(req, s) != 0) { bk_api_fs_remove(&f->sessions, s->id); return KP_OK; }
        plan->session_id = s->id;
        return KP_OK;
    }
    bk_api_fs_t *s = bk_api_fs_find(&f->sessions, sid);
    if (!s) { plan->error = KP_ERROR_FETCH_SESSION_ID_NOT_FOUND; return KP_OK; }
    if (s->epoch != epoch) { plan->error = KP_ERROR_INVALID_FETCH_SESSION_EPOCH; return KP_OK; }
    plan->error = session_update(req, s);
    if (plan->error) { bk_api_fs_remove(&f->sessions, sid); return KP_OK; }
    s->epoch = epoch == INT32_MAX ? 1 : epoch + 1;
    s->last_used_ms = bk_net_now_ms();
    plan->session_id = sid;
    plan->v = bk_api_req_alloc(req, s->n, sizeof *plan->v);
    if (!plan->v) return KP_ERR_NOMEM;
    plan->n = s->n;
    for (size_t i = 0; i < s->n; i++) target_from_session(&plan->v[i], &s->parts[i]);
    return KP_OK;
}

/* ---- building the response ----------------------------------------------------- */

#define ABORTED_MAX 100000   /* aborted transactions listed per partition answer */

/* read_committed (v4+): the aborted transactions overlapping the records
 * returned, [from, upper), from the log's .txnindex entries. */
static void add_aborted(bk_api_req_t *req, const st_log_t *log, int64_t from, int64_t upper, fpart_t *o) {
    const kp_fetch_request_t *q = req->body;
    if (q->isolation_level != 1 || req->hdr.api_version < 4 || upper <= from) return;
    st_aborted_txn_t few[64];
    st_aborted_txn_t *v = few;
    size_t n = st_log_aborted_txns(log, from, upper, few, 64);
    if (n == 64 && (v = malloc(ABORTED_MAX * sizeof *v)) != NULL) n = st_log_aborted_txns(log, from, upper, v, ABORTED_MAX);
    if (!v) v = few;
    kp_fetch_response_aborted_transaction_t *a = n ? bk_api_req_alloc(req, n, sizeof *a) : NULL;
    for (size_t i = 0; a && i < n; i++) {
        kp_fetch_response_aborted_transaction_init(&a[i]);
        a[i].producer_id = v[i].producer_id;
        a[i].first_offset = v[i].first_offset;
    }
    if (v != few) free(v);
    if (a) {
        o->aborted_transactions.items = a;
        o->aborted_transactions.count = (int32_t)n;
    }
}

/* Fills one partition's answer; false when an incremental session's
 * partition has nothing new and is left out. */
/* The arrival read when it is what this read would return: same upper
 * bound and limit, and MIN_ONE made no difference (the first batch fit). */
static const st_read_result_t *pre_read(const fpre_t *pre, int64_t end, uint64_t max, unsigned flags) {
    if (!pre || pre->end != end || pre->max != max) return NULL;
    if (!(flags & ST_READ_MIN_ONE) && pre->rr.total_bytes > max) return NULL;
    return &pre->rr;
}

static bool fill_partition(bk_api_req_t *req, const ftarget_t *fp, const fpre_t *pre, fpart_t *o, uint64_t *total,
                           uint64_t max_total) {
    kp_fetch_response_partition_data_init(o);
    o->partition_index = fp->partition;
    o->records.bytes.p = (const uint8_t *)"";
    o->records.bytes.len = 0;
    o->aborted_transactions.count = 0;
    o->high_watermark = -1;
    o->last_stable_offset = -1;
    o->log_start_offset = -1;
    target_t x = resolve(req, fp);
    if (x.p && x.p->log) {
        o->high_watermark = st_log_high_watermark(x.p->log);
        o->last_stable_offset = st_log_last_stable_offset(x.p->log);
        o->log_start_offset = st_log_start_offset(x.p->log);
    }
    if (x.err) { o->error_code = x.err; return true; }
    if (fp->replica && fp->verdict.diverging) {   /* KIP-320: the follower truncates first */
        o->diverging_epoch.epoch = fp->verdict.diverging_epoch;
        o->diverging_epoch.end_offset = fp->verdict.diverging_end_offset;
        return true;
    }
    st_log_t *log = x.p->log;
    int64_t end = upper_bound(req, log);
    uint64_t max = part_max(fp);
    if (max > max_total - *total) max = max_total - *total;
    unsigned flags = *total == 0 ? ST_READ_MIN_ONE : 0;   /* KIP-74 */
    if (fp->fetch_offset < end && *total < max_total) {
        if (req->hdr.api_version < 10) {
            /* read, checked and converted by the copy path before this
             * answer (copy_continue); the same budget rule, in the same order */
            const fconv_part_t *cp = fp->copy;
            uint64_t sent = 0;
            if (cp && cp->decided) {
                o->error_code = cp->error;
                if (cp->ext.n > 0) {   /* spliced (sendfile): no copy on this loop */
                    o->records.ext = &cp->ext;
                    o->records.ext_len = (size_t)cp->ext.total_bytes;
                    o->records.bytes = kp_slice_null();
                } else if (cp->bytes) {   /* else the empty records set above ("", not null) */
                    o->records.bytes.p = cp->bytes;
                    o->records.bytes.len = cp->bytes_len;
                }
                sent = cp->sent;
            }
            *total += sent;
            req->node->fetch->stats.copy_bytes += sent;
            if (sent) bk_repl_part_metrics_out(req->node->metrics, x.p, sent);
        } else {
            const st_read_result_t *rr = pre_read(pre, end, max, flags);
            st_read_result_t *fresh = rr ? NULL : bk_api_req_alloc(req, 1, sizeof *fresh);
            if (!rr && !fresh) o->error_code = KP_ERROR_UNKNOWN_SERVER_ERROR;
            else if (!rr && st_log_read(log, fp->fetch_offset, max, end, flags, fresh) != KP_OK)
                o->error_code = KP_ERROR_KAFKA_STORAGE_ERROR;
            else if (!rr) rr = fresh;
            if (o->error_code == 0 && rr->n > 0) {
                o->records.ext = rr;
                o->records.ext_len = (size_t)rr->total_bytes;
                o->records.bytes = kp_slice_null();
                *total += rr->total_bytes;
                req->node->fetch->stats.file_bytes += rr->total_bytes;
                bk_repl_part_metrics_out(req->node->metrics, x.p, rr->total_bytes);
                add_aborted(req, log, fp->fetch_offset, rr->next_offset, o);
            }
        }
        if (req->hdr.api_version < 10) add_aborted(req, log, fp->fetch_offset, end, o);
    }
    if (!fp->filter || o->error_code) return true;
    bool has_records = o->records.ext != NULL || o->records.bytes.len > 0;
    return has_records || o->high_watermark != fp->last_hw || o->last_stable_offset != fp->last_lso ||
           o->log_start_offset != fp->last_start;
}

static bool same_topic(const bk_api_req_t *req, const ftarget_t *a, const ftarget_t *b) {
    if (by_id(req)) return memcmp(a->topic_id.b, b->topic_id.b, 16) == 0;
    return a->topic.len == b->topic.len && memcmp(a->topic.p, b->topic.p, a->topic.len) == 0;
}

/* Remembers in session s what this answer told the client about the
 * plan's i-th partition. */
static void session_note(bk_api_req_t *req, bk_api_fs_t *s, size_t i, const ftarget_t *t, const fpart_t *o) {
    bk_api_fs_part_t *p = bk_api_fs_part_find_near(s, i, by_id(req), t->topic, &t->topic_id, t->partition);
    if (!p) return;
    p->last_hw = o->high_watermark;
    p->last_lso = o->last_stable_offset;
    p->last_start = o->log_start_offset;
}

/* The records a response may carry (KIP-74 max_bytes, v3+), and for a
 * consumer at most the broker's fetch.max.bytes (KIP-541: a client cannot
 * make the node build answers larger than that). Followers are bounded by
 * their own replica.fetch.response.max.bytes, sent as max_bytes. Still at
 * least one batch: the first partition with data reads with MIN_ONE. */
static uint64_t response_max_bytes(const bk_api_req_t *req) {
    const kp_fetch_request_t *q = req->body;
    uint64_t max = req->hdr.api_version >= 3 && q->max_bytes > 0 ? (uint64_t)q->max_bytes : UINT64_MAX;
    if (replica_id_of(req) < 0) {
        int64_t node_max = bk_cfg_int(req->node->cfg, BK_CFG_FETCH_MAX_BYTES);
        assert(node_max >= 1024);   /* the key's range */
        if ((uint64_t)node_max < max) max = (uint64_t)node_max;
    }
    return max;
}

/* ---- the copy path (Fetch < v10) on the worker pool ------------------------------ */

static void respond_fetch(bk_api_req_t *req, fplan_t *plan);

/* Plans the round from c->next (fetch_convert_int.h): per partition still to
 * decide, what the state says now — the bound, the budget assumed from the
 * partitions before it, the file ranges of whole batches (the log's own
 * fds). True when some partition has bytes to read. */
static bool copy_plan(bk_api_req_t *req, const fplan_t *plan, fconv_t *c) {
    uint64_t spec = c->total;
    bool work = false;
    for (size_t i = c->next; i < plan->n; i++) {
        fconv_part_t *p = &c->parts[i];
        fconv_part_reset(p);
        const ftarget_t *fp = &plan->v[i];
        target_t x = resolve(req, fp);
        if (x.err || (fp->replica && fp->verdict.diverging)) continue;
        st_log_t *log = x.p->log;
        int64_t end = upper_bound(req, log);
        if (fp->fetch_offset >= end) continue;
        p->wants = true;
        p->part_max = part_max(fp);
        p->spec_total = spec;
        if (spec >= c->max_total) continue;   /* assumed full: a later round reads it if not */
        uint64_t room = c->max_total - spec, max = p->part_max < room ? p->part_max : room;
        size_t cap = fconv_cap(max);
        st_read_result_t rr;
        if (st_log_read(log, fp->fetch_offset, max < cap ? max : cap, end, spec == 0 ? ST_READ_MIN_ONE : 0, &rr) != KP_OK) {
            p->read_failed = true;            /* answers nothing: assumed 0 bytes */
            continue;
        }
        p->read = true;
        if (rr.total_bytes > cap) { p->oversize = true; continue; }   /* answers nothing, see decide() */
        assert(rr.n >= 0 && rr.n <= ST_READ_RANGES_MAX);
        p->total = rr.total_bytes;
        p->nranges = rr.n;
        for (int k = 0; k < rr.n; k++) {
            p->fd[k] = rr.r[k].fd;
            p->ref[k] = rr.r[k].ref;
            p->pos[k] = rr.r[k].pos;
            p->len[k] = rr.r[k].len;
        }
        spec += rr.total_bytes;
        work |= rr.total_bytes > 0;
    }
    return work;
}

/* The job's own descriptors for the round (the log may close or replace its
 * segments meanwhile). False when one cannot be made (none left owned). */
static bool copy_dup(fconv_t *c) {
    for (size_t i = c->next; i < c->n; i++) {
        fconv_part_t *p = &c->parts[i];
        for (int k = 0; k < p->nranges; k++) {
            if (p->ref[k]) {
                /* the segment's refcounted descriptor (as a sent range
                 * holds it): kept open for the job and the answer, no dup() */
                st_fdref_hold(p->ref[k]);
                p->fds_owned = true;
                continue;
            }
            int fd = dup(p->fd[k]);
            if (fd < 0) {
                p->nranges = k;   /* only the dup()s made are closed, never the log's own fd */
                for (size_t j = c->next; j <= i; j++) fconv_part_reset(&c->parts[j]);
                return false;
            }
            p->fd[k] = fd;
            p->fds_owned = true;
        }
    }
    return true;
}

static void copy_continue(fconv_t *c);

/* A round on the pool answers after the frame handler returned: the
 * connection takes no further frame until this answer is queued, so that
 * the output bound applies to the next one as it does to an answer given
 * at once (else a client that does not read could have inflight_max
 * converted answers queued at once). Undone once, when c ends. */
static void copy_pause(fconv_t *c) {
    if (c->paused) return;
    bk_net_conn_t *conn = bk_net_conn(c->req->net, c->req->slot.conn_id);
    if (!conn) return;
    bk_net_conn_pause(conn);
    c->paused = true;
}

/* `n` and `conn_id` taken before the answer: it frees the request. */
static void copy_end(fconv_t *c, bk_node_t *n, uint64_t conn_id) {
    if (c->paused) {
        bk_net_conn_t *conn = n->net ? bk_net_conn(n->net, conn_id) : NULL;
        if (conn) bk_net_conn_resume(conn);   /* gone: nothing left to resume */
    }
    fconv_free(c);
}

/* The pool ran a round: count it, go on (state loop). */
static void copy_done(void *arg, int status) {
    fconv_t *c = arg;
    bk_api_req_t *req = c->req;
    bk_node_t *n = req->node;
    if (!n->net) {
        /* bk_broker_free without a graceful stop freed the net before the
         * pool: nothing can be answered, but the request, its arena and
         * frame, and the descriptors the job held are freed here (the node
         * may be freed inside a process that goes on: tests, embedding) */
        fconv_free(c);
        bk_api_req_drop(req);
        return;
    }
    if (status != KP_OK) {   /* cancelled: the pool stopped before it ran */
        copy_end(c, n, req->slot.conn_id);
        bk_api_req_close(req, "fetch conversion cancelled (node stopping)");
        return;
    }
    n->fetch->stats.sets_worker += c->sets_read;
    copy_continue(c);
}

/* Rounds until one is handed to the pool (copy_done goes on) or every
 * partition is decided: then the answer, as for v10+ (respond_fetch). */
static void copy_continue(fconv_t *c) {
    bk_api_req_t *req = c->req;
    fplan_t *plan = c->plan;
    bk_node_t *n = req->node;
    while (c->next < c->n) {
        bool work = copy_plan(req, plan, c);
        if (work && n->pool) {
            if (copy_dup(c)) {
                if (bk_net_worker_submit(n->pool, fconv_run, copy_done, c) == BK_NET_OK) {
                    copy_pause(c);
                    return;
                }
                for (size_t i = c->next; i < c->n; i++) fconv_part_reset(&c->parts[i]);
            }
            /* the pool's queue is full (BK_NET_ERR_FULL), it is stopping, or
             * no fd is left for a dup: the loop does the work itself, as
             * before this path existed, with the log's own fds read at once
             * (planned again: the dup()s were dropped). An old client is
             * slowed, never refused; counted as where="inline". */
            (void)copy_plan(req, plan, c);
        }
        (void)fconv_run(c);
        if (work) n->fetch->stats.sets_inline += c->sets_read;
    }
    for (size_t i = 0; i < plan->n; i++) plan->v[i].copy = &c->parts[i];
    plan->copied = true;
    plan->pre = NULL;   /* the pool ran meanwhile: reads of before are stale (unused below v10 anyway) */
    uint64_t conn_id = req->slot.conn_id;
    respond_fetch(req, plan);   /* finishes req; c's bytes were copied into the answer */
    copy_end(c, n, conn_id);
}

static void copy_start(bk_api_req_t *req, fplan_t *plan) {
    fconv_t *c = fconv_new(req->hdr.api_version, response_max_bytes(req), plan->n);
    if (!c) { bk_api_req_close(req, "out of memory"); return; }
    c->req = req;
    c->plan = plan;
    copy_continue(c);
}

static void respond_fetch(bk_api_req_t *req, fplan_t *plan) {
    if (req->hdr.api_version < 10 && !plan->error && !plan->copied) { copy_start(req, plan); return; }
    kp_fetch_response_t r;
    memset(&r, 0, sizeof r);
    kp_fetch_response_init(&r);
    r.error_code = plan->error;
    r.session_id = plan->error ? 0 : plan->session_id;
    /* at most one topic entry per target; consecutive targets of one topic share it */
    kp_fetch_response_fetchable_topic_response_t *ts = bk_api_req_alloc(req, plan->n, sizeof *ts);
    fpart_t *ps = bk_api_req_alloc(req, plan->n, sizeof *ps);
    if (!ts || !ps) { bk_api_req_close(req, "out of memory"); return; }
    uint64_t total = 0;
    uint64_t max_total = response_max_bytes(req);
    size_t nt = 0, np = 0;
    const ftarget_t *cur = NULL;
    /* looked up once per answer: the session may have gone while the fetch waited */
    bk_api_fs_t *s = plan->session_id ? bk_api_fs_find(&req->node->fetch->sessions, plan->session_id) : NULL;
    for (size_t i = 0; i < plan->n && !plan->error; i++) {
        const ftarget_t *t = &plan->v[i];
        if (!fill_partition(req, t, plan->pre ? plan->pre[i] : NULL, &ps[np], &total, max_total)) continue;
        if (s) session_note(req, s, i, t, &ps[np]);
        if (!cur || !same_topic(req, cur, t)) {
            kp_fetch_response_fetchable_topic_response_init(&ts[nt]);
            ts[nt].topic = t->topic;
            ts[nt].topic_id = t->topic_id;
            ts[nt].partitions.items = &ps[np];
            ts[nt].partitions.count = 0;
            nt++;
            cur = t;
        }
        ts[nt - 1].partitions.count++;
        np++;
    }
    r.responses.items = ts;
    r.responses.count = (int32_t)nt;
    /* consumers only: followers are not under client quotas. The bytes
     * answered count against consumer_byte_rate (Kafka counts the
     * response size; the records are nearly all of it) */
    if (replica_id_of(req) < 0)
        r.throttle_time_ms = bk_api_req_quota(req, BK_META_QUOTA_CONSUMER_BYTE_RATE, (double)total);
    bk_api_req_respond(req, &r);
}

/* ---- waiting in the purgatory --------------------------------------------------- */

static uint64_t min_bytes_of(const bk_api_req_t *req) {
    const kp_fetch_request_t *q = req->body;
    return q->min_bytes > 0 ? (uint64_t)q->min_bytes : 1;
}

/* Answer now: a partition error or session news, or min_bytes available.
 * A yes keeps its reads in plan->pre for the answer given right after
 * (issue 19: a woken follower fetch walked the log's tail twice, once to
 * count, once to answer); a no, or no room for the slots, leaves pre
 * NULL and the answer reads again. */
static bool can_answer(bk_api_req_t *req, fplan_t *plan) {
    plan->pre = NULL;
    if (!plan->keep && plan->n) {
        plan->keep = bk_api_req_alloc(req, plan->n, sizeof *plan->keep);
        plan->slots = plan->keep ? bk_api_req_alloc(req, plan->n, sizeof *plan->slots) : NULL;
        if (!plan->slots) plan->keep = NULL;
    }
    if (plan->keep) memset(plan->keep, 0, plan->n * sizeof *plan->keep);
    uint64_t bytes = 0, min_bytes = min_bytes_of(req);
    bool yes = available(req, plan, min_bytes, &bytes, plan->keep, plan->slots) || bytes >= min_bytes;
    if (yes) plan->pre = plan->keep;
    return yes;
}

static bool fwait_ready(void *ctx) {
    fwait_t *w = ctx;
    return can_answer(w->req, w->plan);
}

/* Ready (plan->pre: its reads), timed out or flushed (plan->pre NULL: the
 * last ask said no, or none was made). */
static void fwait_done(void *ctx) {
    fwait_t *w = ctx;
    respond_fetch(w->req, w->plan);
}

/* Parks the fetch under each partition of its plan. False when the
 * purgatory refuses (full, out of memory): the caller answers now. Every
 * target resolves here (can_answer was false, so none has an error). */
static bool park(bk_api_req_t *req, fplan_t *plan, int32_t wait_ms) {
    bk_node_t *n = req->node;
    fwait_t *w = bk_api_req_alloc(req, 1, sizeof *w);
    bk_repl_purg_key_t *keys = plan->n ? bk_api_req_alloc(req, plan->n, sizeof *keys) : NULL;
    if (!w || (plan->n && !keys)) return false;
    size_t nk = 0;
    for (size_t i = 0; i < plan->n; i++) {
        target_t x = resolve(req, &plan->v[i]);
        if (!x.p) continue;   /* cannot happen (see above); nothing to wake it then */
        keys[nk].topic_id = x.p->topic_id;
        keys[nk].partition = x.p->partition;
        nk++;
    }
    *w = (fwait_t){ req, plan };
    return bk_repl_purg_wait(n->purg, keys, nk, wait_ms, fwait_ready, fwait_done, w) == KP_OK;
}

void bk_api_fetch_stats(const bk_node_fetch_state_t *f, bk_api_fetch_stats_t *out) {
    *out = f ? f->stats : (bk_api_fetch_stats_t){ 0 };
}

void bk_api_fetch_free(bk_node_fetch_state_t *f) {
    if (!f) return;
    bk_api_fs_cache_free(&f->sessions);
    free(f);
}

/* A follower's fetch: each partition goes through its core once, on
 * arrival (follower LEO, caught-up time, HW, divergence). */
static void judge_replica_fetch(bk_api_req_t *req, fplan_t *plan) {
    int32_t rid = replica_id_of(req);
    for (size_t i = 0; i < plan->n; i++) {
        ftarget_t *fp = &plan->v[i];
        const bk_meta_topic_t *t = topic_of(req, fp);
        bk_repl_part_t *p = t && fp->partition >= 0 && fp->partition < t->nparts
                           ? bk_repl_parts_get(req->node->parts, &t->id, fp->partition) : NULL;
        if (!p || !p->leader || !p->log) continue;   /* resolve() answers the error */
        fp->replica = true;
        bk_repl_replica_serve_fetch(req->node, p, rid, fp->current_leader_epoch, fp->fetch_offset,
                               fp->last_fetched_epoch, &fp->verdict);
    }
}

void bk_api_h_fetch(bk_api_req_t *req) {
    const kp_fetch_request_t *q = req->body;
    bk_node_t *n = req->node;
    bk_node_fetch_state_t *f = n->fetch;
    fplan_t *plan = bk_api_req_alloc(req, 1, sizeof *plan);
    if (!plan || build_plan(req, f, plan) != KP_OK) { bk_api_req_close(req, "out of memory"); return; }
    if (replica_id_of(req) >= 0) judge_replica_fetch(req, plan);
    int32_t wait_ms = q->max_wait_ms;
    if (wait_ms > BK_REPL_PURG_WAIT_MAX_MS) wait_ms = BK_REPL_PURG_WAIT_MAX_MS;
    /* a full purgatory answers at once with what there is */
    if (wait_ms <= 0 || n->stopping || !n->purg || can_answer(req, plan) || !park(req, plan, wait_ms))
        respond_fetch(req, plan);
}
