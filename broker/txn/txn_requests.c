/* broker/txn/txn_requests.c — the transactional APIs on the driver (see
 * "requests" in txn_driver.h): each entry finds the id's core, runs the
 * core call and completes it with bk_td_finish (records appended and
 * replicated before the answer), or reads the cores for the admin queries.
 *
 * Memory: the C strings the core wants (ids, topic names, state filters)
 * are heap copies made here and freed before the entry returns; the core
 * copies what it keeps and bk_td_finish copies the id it waits on. So
 * nothing here points into the request after the entry returns. Bounds:
 * the arrays follow the decoded request's counts; ListTransactions stops
 * at BK_TXN_TD_LIST_MAX. */
#include "broker/txn/txn_driver_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "broker/group/group.h"
#include "broker/group/group_driver.h"
#include "protocol/kp_errors.h"

static size_t cnt(int32_t c) { return c > 0 ? (size_t)c : 0; }

static void answer_now(bk_txn_td_answer_fn fn, void *arg, int16_t err) {
    bk_txn_td_answer_t a = { err, -1, -1 };
    fn(arg, &a);
}

/* The core of transactional id `id`, or NULL with *err (td NULL:
 * COORDINATOR_NOT_AVAILABLE). */
static bk_txn_coord_t *coord_of(bk_txn_td_t *td, const char *id, int32_t *pidx, int16_t *err) {
    *pidx = -1;
    *err = KP_ERROR_COORDINATOR_NOT_AVAILABLE;
    return td ? bk_txn_td_coord(td, id, pidx, err) : NULL;
}

/* ---- client requests --------------------------------------------------------------- */

void bk_txn_td_init_producer_id(bk_txn_td_t *td, const kp_init_producer_id_request_t *q, int16_t version,
                            bk_txn_td_answer_fn fn, void *arg) {
    char *id = kp_slice_strdup(q->transactional_id);
    if (!id) { answer_now(fn, arg, KP_ERROR_UNKNOWN_SERVER_ERROR); return; }
    int32_t pidx = -1;
    int16_t err = KP_ERROR_INVALID_REQUEST;   /* an empty id */
    bk_txn_coord_t *c = id[0] ? coord_of(td, id, &pidx, &err) : NULL;
    if (!c) {
        free(id);
        answer_now(fn, arg, err);
        return;
    }
    /* KIP-360: v3+ names the producer's current id/epoch */
    bk_txn_init_req_t in = { id, q->transaction_timeout_ms, version >= 3 ? q->producer_id : -1,
                             version >= 3 ? q->producer_epoch : -1 };
    bk_txn_out_t out;
    bk_txn_out_init(&out);
    bk_txn_init_producer_id(c, &in, bk_net_now_ms(), &out);
    bk_td_finish(td, pidx, &out, id, fn, arg);
    free(id);
}

void bk_txn_td_add_partitions_txn(bk_txn_td_t *td, kp_str_t transactional_id, int64_t producer_id,
                                  int16_t producer_epoch, const bk_txn_td_topic_t *ts, int32_t ntopics,
                                  bk_txn_td_answer_fn fn, void *arg) {
    size_t nt = cnt(ntopics), total = 0;
    for (size_t i = 0; i < nt; i++) total += cnt(ts[i].partitions.count);
    char *id = kp_slice_strdup(transactional_id);
    char **names = calloc(nt ? nt : 1, sizeof *names);
    bk_txn_tp_t *tps = calloc(total ? total : 1, sizeof *tps);
    int16_t err = id && names && tps ? 0 : KP_ERROR_UNKNOWN_SERVER_ERROR;
    size_t n = 0;
    for (size_t i = 0; !err && i < nt; i++) {
        if (!(names[i] = kp_slice_strdup(ts[i].name))) { err = KP_ERROR_UNKNOWN_SERVER_ERROR; break; }
        for (size_t k = 0; k < cnt(ts[i].partitions.count); k++)
            tps[n++] = (bk_txn_tp_t){ names[i], ts[i].partitions.items[k] };
    }
    int32_t pidx = -1;
    bk_txn_coord_t *c = err ? NULL : coord_of(td, id, &pidx, &err);
    if (c) {
        assert(n == total);
        bk_txn_out_t out;
        bk_txn_out_init(&out);
        bk_txn_add_partitions(c, id, producer_id, producer_epoch, tps, n, bk_net_now_ms(), &out);   /* copies the topics it keeps */
        bk_td_finish(td, pidx, &out, id, fn, arg);
    } else {
        answer_now(fn, arg, err);
    }
    for (size_t i = 0; names && i < nt; i++) free(names[i]);
    free(names);
    free(tps);
    free(id);
}

void bk_txn_td_add_partitions(bk_txn_td_t *td, const kp_add_partitions_to_txn_request_t *q, bk_txn_td_answer_fn fn,
                          void *arg) {
    bk_txn_td_add_partitions_txn(td, q->v3_and_below_transactional_id, q->v3_and_below_producer_id,
                                 q->v3_and_below_producer_epoch, q->v3_and_below_topics.items,
                                 q->v3_and_below_topics.count, fn, arg);
}

int16_t bk_txn_td_verify(bk_txn_td_t *td, kp_str_t transactional_id, int64_t producer_id, int16_t producer_epoch,
                         const char *topic, int32_t partition) {
    char *id = kp_slice_strdup(transactional_id);
    if (!id) return KP_ERROR_UNKNOWN_SERVER_ERROR;
    int32_t pidx = -1;
    int16_t err = KP_ERROR_INVALID_REQUEST;   /* an empty id */
    bk_txn_coord_t *c = id[0] ? coord_of(td, id, &pidx, &err) : NULL;
    if (c) err = bk_txn_verify(c, id, producer_id, producer_epoch, topic, partition);
    free(id);
    return err;
}

/* __consumer_offsets' partition count: the topic's, or the configured one
 * before it exists (the group's coordinator partition will be that). */
static int32_t offsets_partitions(const bk_node_t *n) {
    const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&n->img, BK_GRP_GD_TOPIC);
    return t && t->nparts > 0 ? t->nparts : (int32_t)bk_cfg_int(n->cfg, BK_CFG_OFFSETS_TOPIC_NUM_PARTITIONS);
}

void bk_txn_td_add_offsets(bk_txn_td_t *td, const kp_add_offsets_to_txn_request_t *q, bk_txn_td_answer_fn fn, void *arg) {
    char *id = kp_slice_strdup(q->transactional_id);
    int32_t pidx = -1;
    int16_t err = KP_ERROR_UNKNOWN_SERVER_ERROR;
    bk_txn_coord_t *c = id ? coord_of(td, id, &pidx, &err) : NULL;
    if (c) {
        int32_t gp = bk_grp_partition_for(q->group_id, offsets_partitions(td->node));
        bk_txn_out_t out;
        bk_txn_out_init(&out);
        bk_txn_add_offsets(c, id, q->producer_id, q->producer_epoch, gp, bk_net_now_ms(), &out);
        bk_td_finish(td, pidx, &out, id, fn, arg);
    } else {
        answer_now(fn, arg, err);
    }
    free(id);
}

int32_t bk_txn_td_offsets_partition(bk_txn_td_t *td, kp_str_t group) {
    return bk_grp_partition_for(group, offsets_partitions(td->node));
}

void bk_txn_td_add_offsets_implicit(bk_txn_td_t *td, kp_str_t transactional_id, int64_t producer_id,
                                    int16_t producer_epoch, kp_str_t group, bk_txn_td_answer_fn fn, void *arg) {
    kp_add_offsets_to_txn_request_t q;
    kp_add_offsets_to_txn_request_init(&q);
    q.transactional_id = transactional_id;
    q.producer_id = producer_id;
    q.producer_epoch = producer_epoch;
    q.group_id = group;
    bk_txn_td_add_offsets(td, &q, fn, arg);
}

void bk_txn_td_end_txn(bk_txn_td_t *td, const kp_end_txn_request_t *q, int16_t version, bk_txn_td_answer_fn fn,
                       void *arg) {
    char *id = kp_slice_strdup(q->transactional_id);
    int32_t pidx = -1;
    int16_t err = KP_ERROR_UNKNOWN_SERVER_ERROR;
    bk_txn_coord_t *c = id ? coord_of(td, id, &pidx, &err) : NULL;
    if (c) {
        bk_txn_out_t out;
        bk_txn_out_init(&out);
        bk_txn_end_v(c, id, q->producer_id, q->producer_epoch, q->committed, version >= 5, bk_net_now_ms(), &out);
        bk_td_finish(td, pidx, &out, id, fn, arg);
    } else {
        answer_now(fn, arg, err);
    }
    free(id);
}

/* ---- queries ------------------------------------------------------------------------- */

static void query_nomem(bk_txn_td_query_fn fn, void *arg) {
    bk_txn_td_query_t res = { .unsent = "out of memory" };
    fn(arg, &res);
}

void bk_txn_td_describe_transactions(bk_txn_td_t *td, const kp_describe_transactions_request_t *q, bk_txn_td_query_fn fn,
                                 void *arg) {
    size_t n = cnt(q->transactional_ids.count);
    bk_txn_td_txn_t *v = calloc(n ? n : 1, sizeof *v);
    char **ids = calloc(n ? n : 1, sizeof *ids);
    bool ok = v && ids;
    for (size_t i = 0; ok && i < n; i++) ok = (ids[i] = kp_slice_strdup(q->transactional_ids.items[i])) != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        int32_t pidx = -1;
        bk_txn_coord_t *c = coord_of(td, ids[i], &pidx, &v[i].error);
        v[i].transactional_id = ids[i];
        if (c) v[i].error = bk_txn_describe(c, ids[i], &v[i].meta);
        if (v[i].error) v[i].meta = NULL;
    }
    if (ok) {
        bk_txn_td_query_t res = { .txns = v, .ntxns = n };
        fn(arg, &res);
    } else {
        query_nomem(fn, arg);
    }
    for (size_t i = 0; ids && i < n; i++) free(ids[i]);
    free(ids);
    free(v);
}

typedef struct {
    bk_txn_td_txn_t *v;
    size_t n, cap;
    bool nomem;
} list_ctx_t;

/* Pointers into the core: valid until it changes, i.e. past the callback. */
static void list_one(void *ctx, const char *id, const bk_txn_meta_t *m) {
    list_ctx_t *l = ctx;
    if (l->n >= BK_TXN_TD_LIST_MAX || l->nomem) return;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        bk_txn_td_txn_t *nv = realloc(l->v, nc * sizeof *nv);
        if (!nv) { l->nomem = true; return; }
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n++] = (bk_txn_td_txn_t){ id, 0, m };
}

void bk_txn_td_list_transactions(bk_txn_td_t *td, const kp_list_transactions_request_t *q, int16_t version,
                             bk_txn_td_query_fn fn, void *arg) {
    size_t ns = cnt(q->state_filters.count);
    size_t np = cnt(q->producer_id_filters.count);
    char **states = calloc(ns ? ns : 1, sizeof *states);
    bool *unknown = calloc(ns ? ns : 1, sizeof *unknown);
    bool ok = states && unknown;
    for (size_t i = 0; ok && i < ns; i++) ok = (states[i] = kp_slice_strdup(q->state_filters.items[i])) != NULL;
    list_ctx_t l = { NULL, 0, 0, false };
    if (ok) {
        int64_t duration = version >= 1 ? q->duration_filter : -1;
        int64_t now = bk_net_now_ms();
        int32_t ncoords = td ? bk_txn_td_ncoords(td) : 0;
        for (int32_t p = 0; p < ncoords; p++) {
            bk_txn_coord_t *c = bk_txn_td_coord_at(td, p);
            if (c)
                bk_txn_list(c, (const char *const *)states, ns, q->producer_id_filters.items, np, duration, now,
                            unknown, list_one, &l);
        }
        bk_txn_td_query_t res = { .error = l.nomem ? KP_ERROR_UNKNOWN_SERVER_ERROR : 0, .txns = l.v, .ntxns = l.n,
                              .unknown_states = unknown };
        fn(arg, &res);
    } else {
        query_nomem(fn, arg);
    }
    for (size_t i = 0; states && i < ns; i++) free(states[i]);
    free(states);
    free(unknown);
    free(l.v);
}
