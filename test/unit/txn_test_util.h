/* txn_test_util.h — a harness around the pure transaction coordinator for
 * the test_txn*.c programs: a producer-id allocator, an in-memory
 * __transaction_state log, and helpers that play the broker's part
 * (append records, report writes done, collect and acknowledge markers). */
#ifndef SKIFF_TXN_TEST_UTIL_H
#define SKIFF_TXN_TEST_UTIL_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "broker/txn/txn.h"
#include "protocol/kp_errors.h"

typedef struct {
    uint8_t *key, *value;          /* value NULL = tombstone */
    size_t key_len, value_len;
} trec_t;

typedef struct {
    char *id;
    int64_t pid;
    int16_t epoch;
    bool commit;
    int32_t coord_epoch;
    char *topic;
    int32_t partition;
} tmarker_t;

typedef struct {
    bk_txn_coord_t c;
    trec_t log[4096];              /* bound: tests write far fewer */
    size_t nlog;
    tmarker_t markers[4096];       /* markers sent and not acknowledged */
    size_t nmarkers;
    int64_t next_pid;
    bool pid_fail;
    int64_t now;
} tctx_t;

static inline bool t_alloc(void *ctx, int64_t *pid) {
    tctx_t *t = ctx;
    if (t->pid_fail) return false;
    *pid = t->next_pid++;
    return true;
}

static inline void t_start(tctx_t *t, int32_t coord_epoch, int64_t max_timeout_ms, int64_t expiration_ms) {
    memset(t, 0, sizeof *t);
    bk_txn_config_t cfg;
    bk_txn_config_defaults(&cfg);
    if (max_timeout_ms) cfg.timeout_max_ms = max_timeout_ms;
    if (expiration_ms) cfg.id_expiration_ms = expiration_ms;
    bk_txn_coord_init(&t->c, &cfg, coord_epoch, t_alloc, t);
    t->next_pid = 1000;
}

static inline void t_clear_markers(tctx_t *t) {
    for (size_t i = 0; i < t->nmarkers; i++) {
        free(t->markers[i].id);
        free(t->markers[i].topic);
    }
    t->nmarkers = 0;
}

static inline void t_stop(tctx_t *t) {
    bk_txn_coord_free(&t->c);
    for (size_t i = 0; i < t->nlog; i++) {
        free(t->log[i].key);
        free(t->log[i].value);
    }
    t_clear_markers(t);
}

static inline void t_take_markers(tctx_t *t, const bk_txn_out_t *o) {
    for (size_t i = 0; i < o->nmarkers; i++) {
        const bk_txn_markers_t *m = &o->markers[i];
        for (size_t j = 0; j < m->nparts; j++) {
            ck_assert_uint_lt(t->nmarkers, 4096);
            t->markers[t->nmarkers++] = (tmarker_t){ strdup(m->transactional_id), m->producer_id,
                                                     m->producer_epoch, m->commit, m->coordinator_epoch,
                                                     strdup(m->parts[j].topic), m->parts[j].partition };
        }
    }
}

/* Appends o's records (status NONE: to the log) and reports each written
 * with status; follow-up records (Complete*) are handled the same way.
 * Returns the answer of the first write_done and its pid/epoch. */
static inline int16_t t_flush_st(tctx_t *t, bk_txn_out_t *o, int16_t status, int64_t *pid, int16_t *epoch) {
    ck_assert_int_eq(o->err, KP_OK);
    t_take_markers(t, o);
    int16_t first = KP_ERROR_NONE;
    for (size_t i = 0; i < o->nrecs; i++) {
        if (status == KP_ERROR_NONE) {
            ck_assert_uint_lt(t->nlog, 4096);
            trec_t *r = &t->log[t->nlog++];
            r->key = o->recs[i].key;
            r->key_len = o->recs[i].key_len;
            r->value = o->recs[i].value;
            r->value_len = o->recs[i].value_len;
            o->recs[i].key = o->recs[i].value = NULL;   /* the log owns them now */
        }
        bk_txn_out_t d;
        bk_txn_out_init(&d);
        bk_txn_write_done(&t->c, o->rec_ids[i], status, t->now, &d);
        if (i == 0) {
            first = d.error;
            if (pid) *pid = d.producer_id;
            if (epoch) *epoch = d.producer_epoch;
        }
        (void)t_flush_st(t, &d, KP_ERROR_NONE, NULL, NULL);
        bk_txn_out_free(&d);
    }
    return first;
}

static inline int16_t t_flush(tctx_t *t, bk_txn_out_t *o) { return t_flush_st(t, o, KP_ERROR_NONE, NULL, NULL); }

/* The answer of a request: at once, or after its record is written. */
static inline int16_t t_answer(tctx_t *t, bk_txn_out_t *o) {
    int16_t e = o->error;
    if (o->wait) e = t_flush(t, o);
    else ck_assert_uint_eq(o->nrecs, 0);   /* an immediate answer writes nothing */
    bk_txn_out_free(o);
    return e;
}

static inline int16_t t_init(tctx_t *t, const char *id, int32_t timeout_ms, int64_t *pid, int16_t *epoch) {
    bk_txn_out_t o;
    bk_txn_out_init(&o);
    bk_txn_init_req_t req = { id, timeout_ms, -1, -1 };
    bk_txn_init_producer_id(&t->c, &req, t->now, &o);
    int16_t e = o.error;
    if (o.wait) {
        e = t_flush_st(t, &o, KP_ERROR_NONE, pid, epoch);
    } else {
        if (pid) *pid = o.producer_id;
        if (epoch) *epoch = o.producer_epoch;
    }
    bk_txn_out_free(&o);
    return e;
}

static inline int16_t t_add(tctx_t *t, const char *id, int64_t pid, int16_t epoch, const bk_txn_tp_t *tps, size_t n) {
    bk_txn_out_t o;
    bk_txn_out_init(&o);
    bk_txn_add_partitions(&t->c, id, pid, epoch, tps, n, t->now, &o);
    return t_answer(t, &o);
}

static inline int16_t t_end(tctx_t *t, const char *id, int64_t pid, int16_t epoch, bool commit) {
    bk_txn_out_t o;
    bk_txn_out_init(&o);
    bk_txn_end(&t->c, id, pid, epoch, commit, t->now, &o);
    return t_answer(t, &o);
}

static inline void t_tick(tctx_t *t) {
    bk_txn_out_t o;
    bk_txn_out_init(&o);
    bk_txn_tick(&t->c, t->now, &o);
    (void)t_flush(t, &o);
    bk_txn_out_free(&o);
}

/* Acknowledges marker i (and forgets it). */
static inline void t_ack(tctx_t *t, size_t i) {
    ck_assert_uint_lt(i, t->nmarkers);
    tmarker_t m = t->markers[i];
    t->markers[i] = t->markers[--t->nmarkers];
    bk_txn_out_t o;
    bk_txn_out_init(&o);
    bk_txn_marker_done(&t->c, m.id, m.pid, m.epoch, (bk_txn_tp_t){ m.topic, m.partition }, t->now, &o);
    (void)t_flush(t, &o);
    bk_txn_out_free(&o);
    free(m.id);
    free(m.topic);
}

static inline void t_ack_all(tctx_t *t) {
    while (t->nmarkers) t_ack(t, t->nmarkers - 1);
}

/* Decodes log record i. */
static inline void t_decode(const tctx_t *t, size_t i, char **id, bk_txn_meta_t *m, bool *dead) {
    const trec_t *r = &t->log[i];
    ck_assert_int_eq(bk_txn_rec_decode(r->key, r->key_len, r->value, r->value_len, id, m, dead), KP_OK);
}

/* A fresh coordinator rebuilt from the first n log records of t. */
static inline void t_replay(const tctx_t *t, size_t n, tctx_t *into) {
    t_start(into, t->c.coordinator_epoch + 1, t->c.cfg.timeout_max_ms, t->c.cfg.id_expiration_ms);
    into->next_pid = t->next_pid;
    into->now = t->now;
    for (size_t i = 0; i < n; i++) {
        const trec_t *r = &t->log[i];
        ck_assert_int_eq(bk_txn_load(&into->c, r->key, r->key_len, r->value, r->value_len), KP_OK);
    }
    bk_txn_out_t o;
    bk_txn_out_init(&o);
    bk_txn_load_done(&into->c, into->now, &o);
    (void)t_flush(into, &o);
    bk_txn_out_free(&o);
}

/* A deep copy of m (for comparing later). Returns 0. */
static inline int txn_meta_snapshot(const bk_txn_meta_t *m, bk_txn_meta_t *out) {
    *out = *m;
    out->parts = calloc(m->nparts ? m->nparts : 1, sizeof *out->parts);
    ck_assert_ptr_nonnull(out->parts);
    out->cap = m->nparts ? m->nparts : 1;
    for (size_t i = 0; i < m->nparts; i++)
        out->parts[i] = (bk_txn_tp_t){ strdup(m->parts[i].topic), m->parts[i].partition };
    return 0;
}

#endif
