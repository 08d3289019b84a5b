/* broker/api/h_txn.c — the transactional client APIs: InitProducerId with a
 * transactional id, AddPartitionsToTxn v0-5 (v4+: the batched
 * broker-to-coordinator form with VerifyOnly, KIP-890), AddOffsetsToTxn, EndTxn,
 * TxnOffsetCommit, and the partition-leader side of WriteTxnMarkers.
 * The decoded requests go to the txn driver (txn_driver.h; TxnOffsetCommit
 * to the group driver), which appends and replicates the records before
 * its callback lets the answer be built here (with the version rules of
 * the answers: KIP-588's PRODUCER_FENCED for new versions only). */
#include <stdlib.h>
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/meta/acl.h"
#include "broker/group/group_driver.h"
#include "broker/txn/txn_driver.h"
#include "protocol/kp_errors.h"

/* A topic name as a C string in the request arena ("" when null or out of
 * memory; a NUL stays visible as "\0", so it names no topic). */
static const char *cid(bk_api_req_t *req, kp_str_t s) {
    char *c = kp_slice_is_null(s) ? NULL : bk_api_req_topic_cstr(req, s);
    return c ? c : "";
}

static int16_t fenced(const bk_api_req_t *req, int16_t e) {
    return bk_txn_fenced_error(req->hdr.api_key, req->hdr.api_version, e);
}

/* ---- InitProducerId ------------------------------------------------------------- */

static void init_pid_answer(void *ctx, const bk_txn_td_answer_t *ans) {
    bk_api_req_t *req = ctx;
    kp_init_producer_id_response_t r;
    kp_init_producer_id_response_init(&r);
    r.producer_id = ans->error ? -1 : ans->producer_id;
    r.producer_epoch = ans->error ? -1 : ans->producer_epoch;
    r.error_code = fenced(req, ans->error);
    bk_api_req_respond(req, &r);
}

void bk_api_h_init_producer_id_txn(bk_api_req_t *req) {
    bk_txn_td_init_producer_id(req->node->txns, req->body, req->hdr.api_version, init_pid_answer, req);
}

/* ---- AddPartitionsToTxn ------------------------------------------------------------ */

typedef kp_add_partitions_to_txn_request_add_partitions_to_txn_topic_t apt_topic_t;
typedef kp_add_partitions_to_txn_response_add_partitions_to_txn_topic_result_t apt_result_t;
typedef kp_add_partitions_to_txn_response_add_partitions_to_txn_partition_result_t apt_part_t;

/* Per-partition errors: unknown topics/partitions get UNKNOWN_TOPIC_OR_
 * PARTITION and the others OPERATION_NOT_ATTEMPTED (Kafka), else `all`. */
static bool fill_add_results(bk_api_req_t *req, const apt_topic_t *ts, int32_t nt, int16_t all, apt_result_t *res,
                             bool check) {
    bool any_unknown = false;
    for (int32_t pass = check ? 0 : 1; pass < 2; pass++) {
        for (int32_t i = 0; i < nt; i++) {
            char *name = bk_api_req_topic_cstr(req, ts[i].name);
            const bk_meta_topic_t *t = name ? bk_meta_image_topic_by_name(&req->node->img, name) : NULL;
            apt_part_t *ps = pass == 1 ? res[i].results_by_partition.items : NULL;
            for (int32_t k = 0; k < ts[i].partitions.count; k++) {
                int32_t p = ts[i].partitions.items[k];
                bool unknown = !t || p < 0 || p >= t->nparts;
                if (pass == 0) { any_unknown |= unknown; continue; }
                kp_add_partitions_to_txn_response_add_partitions_to_txn_partition_result_init(&ps[k]);
                ps[k].partition_index = p;
                ps[k].partition_error_code = !any_unknown ? all
                                            : unknown ? KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION
                                                      : KP_ERROR_OPERATION_NOT_ATTEMPTED;
            }
        }
    }
    return any_unknown;
}

/* The answer of AddPartitionsToTxn: its result arrays (in the request
 * arena) filled with the one error. */
typedef struct {
    bk_api_req_t *req;
    apt_result_t *res;
    int32_t nt;
} apt_ctx_t;

static void add_partitions_respond(const apt_ctx_t *a) {
    kp_add_partitions_to_txn_response_t r;
    kp_add_partitions_to_txn_response_init(&r);
    r.results_by_topic_v3_and_below.items = a->res;
    r.results_by_topic_v3_and_below.count = a->nt;
    bk_api_req_respond(a->req, &r);
}

static void add_partitions_answer(void *ctx, const bk_txn_td_answer_t *ans) {
    apt_ctx_t *a = ctx;
    const kp_add_partitions_to_txn_request_t *q = a->req->body;
    (void)fill_add_results(a->req, q->v3_and_below_topics.items, a->nt, fenced(a->req, ans->error), a->res, false);
    add_partitions_respond(a);
}

/* WRITE on the transactional id of a transaction API (Kafka's first
 * check): 0 or TRANSACTIONAL_ID_AUTHORIZATION_FAILED. */
static int16_t txn_id_denied(bk_api_req_t *req, kp_str_t id) {
    return bk_api_authorized_str(req, BK_META_OP_WRITE, BK_META_RES_TRANSACTIONAL_ID, id)
               ? 0 : KP_ERROR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
}

static bool answer_denied(bk_api_req_t *req, int16_t err, void (*answer)(void *, const bk_txn_td_answer_t *)) {
    if (!err) return false;
    bk_txn_td_answer_t ans;
    memset(&ans, 0, sizeof ans);
    ans.error = err;
    answer(req, &ans);
    return true;
}

/* ---- AddPartitionsToTxn v4+ (KIP-890: the broker-to-coordinator batch) ------------------ */

typedef kp_add_partitions_to_txn_request_add_partitions_to_txn_transaction_t apt_txn_t;
typedef kp_add_partitions_to_txn_response_add_partitions_to_txn_result_t apt_txn_result_t;

/* One answer for the whole batch once every transaction has its results:
 * pending counts the adds still waiting, plus one while the handler runs. */
typedef struct {
    bk_api_req_t *req;
    apt_txn_result_t *res;
    int32_t ntxn;
    size_t pending;
} apt_batch_t;

typedef struct {
    apt_batch_t *b;
    int32_t i;                   /* its transaction */
} apt_one_t;

static void apt_batch_release(apt_batch_t *b) {
    if (--b->pending > 0) return;
    kp_add_partitions_to_txn_response_t r;
    kp_add_partitions_to_txn_response_init(&r);
    r.error_code = KP_ERROR_NONE;
    r.results_by_transaction.items = b->res;
    r.results_by_transaction.count = b->ntxn;
    bk_api_req_respond(b->req, &r);
}

static void apt_one_answer(void *ctx, const bk_txn_td_answer_t *ans) {
    apt_one_t *o = ctx;
    const kp_add_partitions_to_txn_request_t *q = o->b->req->body;
    const apt_txn_t *t = &q->transactions.items[o->i];
    (void)fill_add_results(o->b->req, t->topics.items, t->topics.count > 0 ? t->topics.count : 0,
                           fenced(o->b->req, ans->error), o->b->res[o->i].topic_results.items, false);
    apt_batch_release(o->b);
}

/* Each transaction of the batch on its own, as Kafka: unknown partitions
 * first (UNKNOWN_TOPIC_OR_PARTITION / OPERATION_NOT_ATTEMPTED), then
 * VerifyOnly ones checked at once per partition (bk_txn_td_verify, nothing
 * written), the others added like v0-3 and answered once their record is
 * replicated. */
static void add_partitions_batch(bk_api_req_t *req) {
    const kp_add_partitions_to_txn_request_t *q = req->body;
    int32_t ntxn = q->transactions.count > 0 ? q->transactions.count : 0;
    apt_batch_t *b = bk_api_req_alloc(req, 1, sizeof *b);
    apt_txn_result_t *res = bk_api_req_alloc(req, (size_t)ntxn, sizeof *res);
    apt_one_t *ones = bk_api_req_alloc(req, (size_t)ntxn, sizeof *ones);
    if (!b || !res || !ones) { bk_api_req_close(req, "out of memory"); return; }
    *b = (apt_batch_t){ req, res, ntxn, 1 };
    for (int32_t i = 0; i < ntxn; i++) {
        const apt_txn_t *t = &q->transactions.items[i];
        int32_t nt = t->topics.count > 0 ? t->topics.count : 0;
        kp_add_partitions_to_txn_response_add_partitions_to_txn_result_init(&res[i]);
        res[i].transactional_id = t->transactional_id;
        apt_result_t *tr = bk_api_req_alloc(req, (size_t)nt, sizeof *tr);
        if (!tr) { bk_api_req_close(req, "out of memory"); return; }
        res[i].topic_results.items = tr;
        res[i].topic_results.count = nt;
        for (int32_t k = 0; k < nt; k++) {
            int32_t np = t->topics.items[k].partitions.count > 0 ? t->topics.items[k].partitions.count : 0;
            kp_add_partitions_to_txn_response_add_partitions_to_txn_topic_result_init(&tr[k]);
            tr[k].name = t->topics.items[k].name;
            tr[k].results_by_partition.items = bk_api_req_alloc(req, (size_t)np, sizeof(apt_part_t));
            tr[k].results_by_partition.count = np;
            if (!tr[k].results_by_partition.items) { bk_api_req_close(req, "out of memory"); return; }
        }
    }
    for (int32_t i = 0; i < ntxn; i++) {
        const apt_txn_t *t = &q->transactions.items[i];
        int32_t nt = res[i].topic_results.count;
        if (fill_add_results(req, t->topics.items, nt, 0, res[i].topic_results.items, true)) continue;
        if (t->verify_only) {
            for (int32_t k = 0; k < nt; k++) {
                const char *topic = cid(req, t->topics.items[k].name);
                apt_part_t *ps = res[i].topic_results.items[k].results_by_partition.items;
                for (int32_t j = 0; j < res[i].topic_results.items[k].results_by_partition.count; j++)
                    ps[j].partition_error_code = fenced(req, bk_txn_td_verify(req->node->txns, t->transactional_id,
                                                                              t->producer_id, t->producer_epoch,
                                                                              topic, ps[j].partition_index));
            }
            continue;
        }
        ones[i] = (apt_one_t){ b, i };
        b->pending++;
        bk_txn_td_add_partitions_txn(req->node->txns, t->transactional_id, t->producer_id, t->producer_epoch,
                                     t->topics.items, nt, apt_one_answer, &ones[i]);
    }
    apt_batch_release(b);
}

void bk_api_h_add_partitions_to_txn(bk_api_req_t *req) {
    const kp_add_partitions_to_txn_request_t *q = req->body;
    if (req->hdr.api_version >= 4) { add_partitions_batch(req); return; }
    const apt_topic_t *ts = q->v3_and_below_topics.items;
    int32_t nt = q->v3_and_below_topics.count > 0 ? q->v3_and_below_topics.count : 0;
    apt_result_t *res = bk_api_req_alloc(req, (size_t)nt, sizeof *res);
    apt_ctx_t *actx = bk_api_req_alloc(req, 1, sizeof *actx);
    if (!res || !actx) { bk_api_req_close(req, "out of memory"); return; }
    *actx = (apt_ctx_t){ req, res, nt };
    for (int32_t i = 0; i < nt; i++) {
        int32_t np = ts[i].partitions.count > 0 ? ts[i].partitions.count : 0;
        kp_add_partitions_to_txn_response_add_partitions_to_txn_topic_result_init(&res[i]);
        res[i].name = ts[i].name;
        res[i].results_by_partition.items = bk_api_req_alloc(req, (size_t)np, sizeof(apt_part_t));
        res[i].results_by_partition.count = np;
        if (!res[i].results_by_partition.items) { bk_api_req_close(req, "out of memory"); return; }
    }
    int16_t denied = txn_id_denied(req, q->v3_and_below_transactional_id);
    if (denied) {
        (void)fill_add_results(req, ts, nt, denied, res, false);
        add_partitions_respond(actx);
        return;
    }
    /* WRITE on every topic, else the refused ones TOPIC_AUTHORIZATION_FAILED
     * and the rest OPERATION_NOT_ATTEMPTED, nothing added (Kafka) */
    bool any_topic_denied = false;
    for (int32_t i = 0; i < nt; i++)
        any_topic_denied |= !bk_api_authorized_str(req, BK_META_OP_WRITE, BK_META_RES_TOPIC, ts[i].name);
    if (any_topic_denied) {
        for (int32_t i = 0; i < nt; i++) {
            int16_t e = bk_api_authorized_str(req, BK_META_OP_WRITE, BK_META_RES_TOPIC, ts[i].name)
                            ? KP_ERROR_OPERATION_NOT_ATTEMPTED : KP_ERROR_TOPIC_AUTHORIZATION_FAILED;
            for (int32_t k = 0; k < res[i].results_by_partition.count; k++) {
                apt_part_t *pp = &res[i].results_by_partition.items[k];
                kp_add_partitions_to_txn_response_add_partitions_to_txn_partition_result_init(pp);
                pp->partition_index = ts[i].partitions.items[k];
                pp->partition_error_code = e;
            }
        }
        add_partitions_respond(actx);
        return;
    }
    if (fill_add_results(req, ts, nt, 0, res, true)) {   /* unknown partitions: filled per partition */
        add_partitions_respond(actx);
        return;
    }
    bk_txn_td_add_partitions(req->node->txns, q, add_partitions_answer, actx);
}

/* ---- AddOffsetsToTxn / EndTxn ----------------------------------------------------- */

static void add_offsets_answer(void *ctx, const bk_txn_td_answer_t *ans) {
    bk_api_req_t *req = ctx;
    kp_add_offsets_to_txn_response_t r;
    kp_add_offsets_to_txn_response_init(&r);
    r.error_code = fenced(req, ans->error);
    bk_api_req_respond(req, &r);
}

void bk_api_h_add_offsets_to_txn(bk_api_req_t *req) {
    const kp_add_offsets_to_txn_request_t *q = req->body;
    int16_t denied = txn_id_denied(req, q->transactional_id);
    if (!denied && !bk_api_authorized_str(req, BK_META_OP_READ, BK_META_RES_GROUP, q->group_id))
        denied = KP_ERROR_GROUP_AUTHORIZATION_FAILED;
    if (answer_denied(req, denied, add_offsets_answer)) return;
    bk_txn_td_add_offsets(req->node->txns, req->body, add_offsets_answer, req);
}

static void end_txn_answer(void *ctx, const bk_txn_td_answer_t *ans) {
    bk_api_req_t *req = ctx;
    kp_end_txn_response_t r;
    kp_end_txn_response_init(&r);
    r.error_code = fenced(req, ans->error);
    /* v5: the id/epoch of the next transaction (the epoch bumped) */
    r.producer_id = req->hdr.api_version >= 5 ? ans->producer_id : -1;
    r.producer_epoch = req->hdr.api_version >= 5 ? ans->producer_epoch : -1;
    bk_api_req_respond(req, &r);
}

void bk_api_h_end_txn(bk_api_req_t *req) {
    const kp_end_txn_request_t *q = req->body;
    if (answer_denied(req, txn_id_denied(req, q->transactional_id), end_txn_answer)) return;
    bk_txn_td_end_txn(req->node->txns, req->body, req->hdr.api_version, end_txn_answer, req);
}

/* ---- WriteTxnMarkers (partition leader side) ----------------------------------------- */

typedef kp_write_txn_markers_response_writable_txn_marker_result_t wm_result_t;
typedef kp_write_txn_markers_response_writable_txn_marker_topic_result_t wm_topic_t;
typedef kp_write_txn_markers_response_writable_txn_marker_partition_result_t wm_part_t;

/* A WriteTxnMarkers request answered once every marker it wrote is
 * replicated (or failed): pending counts the partitions still waiting,
 * plus one while the handler itself runs. */
typedef struct {
    bk_api_req_t *req;
    wm_result_t *ms;
    int32_t nm;
    size_t pending;
} wm_state_t;

typedef struct {
    wm_state_t *st;
    int16_t *error_code;         /* the partition's slot in the answer */
} wm_part_ctx_t;

static void wm_release(wm_state_t *st) {
    if (--st->pending > 0) return;
    kp_write_txn_markers_response_t r;
    kp_write_txn_markers_response_init(&r);
    r.markers.items = st->ms;
    r.markers.count = st->nm;
    bk_api_req_respond(st->req, &r);
}

static void wm_part_done(void *ctx, int16_t err) {
    wm_part_ctx_t *pc = ctx;
    *pc->error_code = err;
    wm_release(pc->st);
}

/* One partition's marker: its error now, or later through wm_part_done. */
static void wm_write(bk_api_req_t *req, wm_state_t *st, const kp_write_txn_markers_request_writable_txn_marker_t *m,
                     const char *name, wm_part_t *ps) {
    wm_part_ctx_t *pc = bk_api_req_alloc(req, 1, sizeof *pc);
    if (!pc) { ps->error_code = KP_ERROR_REQUEST_TIMED_OUT; return; }   /* retried by the coordinator */
    *pc = (wm_part_ctx_t){ st, &ps->error_code };
    st->pending++;
    if (!bk_txn_td_write_marker(req->node, name, ps->partition_index, m->producer_id, m->producer_epoch,
                            m->transaction_result, m->coordinator_epoch, wm_part_done, pc, &ps->error_code))
        st->pending--;
}

void bk_api_h_write_txn_markers(bk_api_req_t *req) {
    const kp_write_txn_markers_request_t *q = req->body;
    int32_t nm = q->markers.count > 0 ? q->markers.count : 0;
    wm_result_t *ms = bk_api_req_alloc(req, (size_t)nm, sizeof *ms);
    wm_state_t *st = bk_api_req_alloc(req, 1, sizeof *st);
    if (!ms || !st) { bk_api_req_close(req, "out of memory"); return; }
    *st = (wm_state_t){ req, ms, nm, 1 };
    for (int32_t i = 0; i < nm; i++) {
        const kp_write_txn_markers_request_writable_txn_marker_t *m = &q->markers.items[i];
        int32_t nt = m->topics.count > 0 ? m->topics.count : 0;
        kp_write_txn_markers_response_writable_txn_marker_result_init(&ms[i]);
        ms[i].producer_id = m->producer_id;
        wm_topic_t *ts = bk_api_req_alloc(req, (size_t)nt, sizeof *ts);
        ms[i].topics.items = ts;
        ms[i].topics.count = ts ? nt : 0;
        for (int32_t k = 0; ts && k < nt; k++) {
            const kp_write_txn_markers_request_writable_txn_marker_topic_t *t = &m->topics.items[k];
            int32_t np = t->partition_indexes.count > 0 ? t->partition_indexes.count : 0;
            kp_write_txn_markers_response_writable_txn_marker_topic_result_init(&ts[k]);
            ts[k].name = t->name;
            wm_part_t *ps = bk_api_req_alloc(req, (size_t)np, sizeof *ps);
            const char *name = cid(req, t->name);
            ts[k].partitions.items = ps;
            ts[k].partitions.count = ps ? np : 0;
            for (int32_t j = 0; ps && j < np; j++) {
                kp_write_txn_markers_response_writable_txn_marker_partition_result_init(&ps[j]);
                ps[j].partition_index = t->partition_indexes.items[j];
                wm_write(req, st, m, name, &ps[j]);
            }
        }
    }
    /* An allocation failure above leaves parts out of the answer: the
     * coordinator re-sends their markers (markers already written may be
     * waiting, so the request can no longer be closed here). */
    wm_release(st);
}

/* ---- TxnOffsetCommit ------------------------------------------------------------------ */

typedef kp_txn_offset_commit_response_txn_offset_commit_response_topic_t toc_topic_t;
typedef kp_txn_offset_commit_response_txn_offset_commit_response_partition_t toc_part_t;

/* TxnOffsetCommit with topics refused READ: the request as sent (req->body
 * then holds the allowed topics only) and which topics were refused. */
typedef struct {
    const kp_txn_offset_commit_request_t *orig;
    const bool *denied;          /* per orig topic */
} toc_refused_t;

static void txn_offset_commit_done(void *arg, const bk_grp_gd_result_t *res) {
    bk_api_req_t *req = arg;
    if (res->unsent) { bk_api_req_close(req, res->unsent); return; }   /* the client retries */
    const kp_txn_offset_commit_request_t *q = req->body;
    const toc_refused_t *rf = req->aux;   /* set when topics were refused READ */
    const kp_txn_offset_commit_request_t *orig = rf ? rf->orig : NULL;
    int32_t nt = q->topics.count > 0 ? q->topics.count : 0;
    int32_t no = orig && orig->topics.count > 0 ? orig->topics.count : 0;
    toc_topic_t *ts = bk_api_req_alloc(req, (size_t)(nt + no), sizeof *ts);
    if (!ts) { bk_api_req_close(req, "out of memory"); return; }
    size_t k = 0;
    for (int32_t i = 0; i < nt; i++) {
        const kp_txn_offset_commit_request_txn_offset_commit_request_topic_t *t = &q->topics.items[i];
        int32_t np = t->partitions.count > 0 ? t->partitions.count : 0;
        kp_txn_offset_commit_response_txn_offset_commit_response_topic_init(&ts[i]);
        ts[i].name = t->name;
        toc_part_t *ps = bk_api_req_alloc(req, (size_t)np, sizeof *ps);
        if (!ps || k + (size_t)np > res->nerrors) { bk_api_req_close(req, "out of memory"); return; }
        for (int32_t j = 0; j < np; j++, k++) {
            kp_txn_offset_commit_response_txn_offset_commit_response_partition_init(&ps[j]);
            ps[j].partition_index = t->partitions.items[j].partition_index;
            ps[j].error_code = res->errors[k];
        }
        ts[i].partitions.items = ps;
        ts[i].partitions.count = np;
    }
    int32_t o = nt;   /* then the refused topics, every partition TOPIC_AUTHORIZATION_FAILED */
    for (int32_t i = 0; i < no; i++) {
        const kp_txn_offset_commit_request_txn_offset_commit_request_topic_t *t = &orig->topics.items[i];
        if (!rf->denied[i]) continue;
        int32_t np = t->partitions.count > 0 ? t->partitions.count : 0;
        toc_part_t *ps = bk_api_req_alloc(req, (size_t)np, sizeof *ps);
        if (!ps) { bk_api_req_close(req, "out of memory"); return; }
        kp_txn_offset_commit_response_txn_offset_commit_response_topic_init(&ts[o]);
        ts[o].name = t->name;
        for (int32_t j = 0; j < np; j++) {
            kp_txn_offset_commit_response_txn_offset_commit_response_partition_init(&ps[j]);
            ps[j].partition_index = t->partitions.items[j].partition_index;
            ps[j].error_code = KP_ERROR_TOPIC_AUTHORIZATION_FAILED;
        }
        ts[o].partitions.items = ps;
        ts[o].partitions.count = np;
        o++;
    }
    kp_txn_offset_commit_response_t r;
    kp_txn_offset_commit_response_init(&r);
    r.topics.items = ts;
    r.topics.count = o;
    bk_api_req_respond(req, &r);
}

/* Every partition of the request answered with one error. */
static void txn_offset_commit_fail(bk_api_req_t *req, int16_t err) {
    const kp_txn_offset_commit_request_t *q = req->body;
    size_t n = 0;
    for (int32_t i = 0; i < q->topics.count; i++) n += q->topics.items[i].partitions.count > 0
                                                          ? (size_t)q->topics.items[i].partitions.count : 0;
    int16_t *errs = bk_api_req_alloc(req, n, sizeof *errs);
    if (!errs) { bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < n; i++) errs[i] = err;
    bk_grp_gd_result_t res = { .errors = errs, .nerrors = n };
    txn_offset_commit_done(req, &res);
}

/* Once the offsets partition is in the transaction: the group's part. */
static void txn_offset_commit_added(void *ctx, int16_t err) {
    bk_api_req_t *req = ctx;
    /* the "cannot say now" of a remote coordinator: retriable here too */
    if (err == KP_ERROR_NOT_ENOUGH_REPLICAS) err = KP_ERROR_COORDINATOR_NOT_AVAILABLE;
    if (err) { txn_offset_commit_fail(req, fenced(req, err)); return; }
    bk_grp_gd_txn_offset_commit(req->node->groups, req->body, req->hdr.api_version, txn_offset_commit_done, req);
}

static void txn_offset_commit_added_local(void *ctx, const bk_txn_td_answer_t *ans) {
    txn_offset_commit_added(ctx, ans->error);
}

/* Offsets of a transaction are the group coordinator's (group_driver.h):
 * written as the producer's transactional batch, held until its marker.
 * v5 (transactions v2, KIP-890 part 2): the client sent no AddOffsetsToTxn,
 * so the group's __consumer_offsets partition is added to the transaction
 * first, by its coordinator (here, or AddPartitionsToTxn v5 to another
 * broker). */
void bk_api_h_txn_offset_commit(bk_api_req_t *req) {
    const kp_txn_offset_commit_request_t *q = req->body;
    int16_t denied = txn_id_denied(req, q->transactional_id);
    if (!denied && !bk_api_authorized_str(req, BK_META_OP_READ, BK_META_RES_GROUP, q->group_id))
        denied = KP_ERROR_GROUP_AUTHORIZATION_FAILED;
    if (denied) { txn_offset_commit_fail(req, denied); return; }   /* nothing is written or added */
    /* READ on each topic (Kafka): refused topics are left out of what the
     * coordinator sees and answered TOPIC_AUTHORIZATION_FAILED; when none is
     * left nothing is written. */
    int32_t nq = q->topics.count > 0 ? q->topics.count : 0, nkeep = 0, nrefused = 0;
    bool *refused = bk_api_req_alloc(req, (size_t)nq, sizeof *refused);
    if (!refused && nq) { bk_api_req_close(req, "out of memory"); return; }
    for (int32_t i = 0; i < nq; i++)
        nrefused += refused[i] = !bk_api_authorized_str(req, BK_META_OP_READ, BK_META_RES_TOPIC, q->topics.items[i].name);
    if (nrefused > 0) {
        kp_txn_offset_commit_request_txn_offset_commit_request_topic_t *keep = bk_api_req_alloc(req, (size_t)nq,
                                                                                                   sizeof *keep);
        kp_txn_offset_commit_request_t *q2 = bk_api_req_alloc(req, 1, sizeof *q2);
        toc_refused_t *rf = bk_api_req_alloc(req, 1, sizeof *rf);
        if (!keep || !q2 || !rf) { bk_api_req_close(req, "out of memory"); return; }
        for (int32_t j = 0; j < nq; j++)
            if (!refused[j]) keep[nkeep++] = q->topics.items[j];
        *q2 = *q;
        q2->topics.items = keep;
        q2->topics.count = nkeep;
        *rf = (toc_refused_t){ q, refused };
        req->aux = rf;
        req->body = q2;
    }
    if (nrefused > 0 && nkeep == 0) {
        bk_grp_gd_result_t none = { .errors = NULL, .nerrors = 0 };
        txn_offset_commit_done(req, &none);
        return;
    }
    q = req->body;
    bk_txn_td_t *td = req->node->txns;
    if (req->hdr.api_version >= 5 && td) {
        int32_t part = bk_txn_td_offsets_partition(td, q->group_id);
        bool waits = false;
        int16_t err = bk_txn_td_verify_remote(td, q->transactional_id, q->producer_id, q->producer_epoch,
                                              "__consumer_offsets", part, true, txn_offset_commit_added, req, &waits);
        if (waits) return;
        if (err) { txn_offset_commit_added(req, err); return; }
        bk_txn_td_add_offsets_implicit(td, q->transactional_id, q->producer_id, q->producer_epoch, q->group_id,
                                       txn_offset_commit_added_local, req);
        return;
    }
    bk_grp_gd_txn_offset_commit(req->node->groups, req->body, req->hdr.api_version, txn_offset_commit_done, req);
}
