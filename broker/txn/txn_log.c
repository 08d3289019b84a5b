/* txn_log.c — __transaction_state records (Kafka's TransactionLog format):
 * key = INT16 0 + TransactionLogKey v0, value = INT16 version +
 * TransactionLogValue (null value = tombstone), and the replay that
 * rebuilds a coordinator from them. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "broker/txn/txn_int.h"
#include "kp_msgs.h"
#include "protocol/kp_arena.h"
#include "protocol/kp_errors.h"

#define TXN_KEY_VERSION 0
#define TXN_ARENA_BYTES ((size_t)64 << 20)   /* decode bound for one value */

void bk_txn_rec_free(bk_txn_rec_t *rec) {
    free(rec->key);
    free(rec->value);
    memset(rec, 0, sizeof *rec);
}

/* INT16 version + message, into a malloc'd buffer. */
static int encode_prefixed(const kp_struct_desc_t *d, int16_t version, const void *msg, uint8_t **out,
                           size_t *len) {
    size_t n;
    int rc = kp_encoded_size(d, version, msg, &n);
    if (rc != KP_OK) return rc;
    uint8_t *buf = malloc(n + 2);
    if (!buf) return KP_ERR_NOMEM;
    kp_wr_t w;
    kp_wr_init(&w, buf, n + 2);
    rc = kp_wr_i16(&w, version);
    if (rc == KP_OK) rc = kp_encode(d, &w, version, msg, NULL);
    if (rc != KP_OK) {
        free(buf);
        return rc;
    }
    assert(w.pos == n + 2);
    *out = buf;
    *len = w.pos;
    return KP_OK;
}

/* Partitions grouped by topic (meta->parts is sorted, so topics are runs).
 * Empty writes null, as Kafka does. */
static int value_parts(const bk_txn_meta_t *m, kp_transaction_log_value_t *v, kp_arena_t *a) {
    if (m->state == BK_TXN_EMPTY) {
        v->transaction_partitions.items = NULL;
        v->transaction_partitions.count = -1;
        return KP_OK;
    }
    size_t ntopics = 0;
    for (size_t i = 0; i < m->nparts; i++)
        ntopics += i == 0 || strcmp(m->parts[i].topic, m->parts[i - 1].topic) != 0;
    kp_transaction_log_value_partitions_schema_t *ts =
        ntopics ? kp_arena_alloc(a, ntopics * sizeof *ts) : NULL;
    int32_t *ids = m->nparts ? kp_arena_alloc(a, m->nparts * sizeof *ids) : NULL;
    if ((ntopics && !ts) || (m->nparts && !ids)) return KP_ERR_NOMEM;
    size_t t = 0;
    for (size_t i = 0; i < m->nparts; i++) {
        if (i == 0 || strcmp(m->parts[i].topic, m->parts[i - 1].topic) != 0) {
            kp_transaction_log_value_partitions_schema_init(&ts[t]);
            ts[t].topic = kp_slice_cstr(m->parts[i].topic);
            ts[t].partition_ids.items = &ids[i];
            t++;
        }
        ids[i] = m->parts[i].partition;
        ts[t - 1].partition_ids.count++;
    }
    v->transaction_partitions.items = ts;
    v->transaction_partitions.count = (int32_t)ntopics;
    return KP_OK;
}

int bk_txn_rec_encode(const char *transactional_id, const bk_txn_meta_t *meta, bk_txn_rec_t *rec) {
    memset(rec, 0, sizeof *rec);
    kp_transaction_log_key_t k;
    kp_transaction_log_key_init(&k);
    k.transactional_id = kp_slice_cstr(transactional_id);
    int rc = encode_prefixed(&kp_transaction_log_key_desc, TXN_KEY_VERSION, &k, &rec->key, &rec->key_len);
    if (rc != KP_OK || meta == NULL) return rc;
    kp_arena_t a;
    kp_arena_init(&a, TXN_ARENA_BYTES);
    kp_transaction_log_value_t v;
    kp_transaction_log_value_init(&v);
    v.producer_id = meta->producer_id;
    v.producer_epoch = meta->producer_epoch;
    v.transaction_timeout_ms = meta->timeout_ms;
    v.transaction_status = (int8_t)meta->state;
    v.transaction_last_update_timestamp_ms = meta->last_update_ms;
    v.transaction_start_timestamp_ms = meta->start_ms;
    v.client_transaction_version = meta->client_txn_version;
    rc = value_parts(meta, &v, &a);
    /* v1 only when there is a client transaction version to keep: every
     * transactions-v1 record stays byte for byte what it was (v0) */
    if (rc == KP_OK)
        rc = encode_prefixed(&kp_transaction_log_value_desc, meta->client_txn_version ? 1 : BK_TXN_LOG_VALUE_VERSION,
                             &v, &rec->value, &rec->value_len);
    kp_arena_free(&a);
    if (rc != KP_OK) bk_txn_rec_free(rec);
    return rc;
}

/* Reads INT16 version + message; the whole buffer must be consumed. */
static int decode_prefixed(const kp_struct_desc_t *d, const uint8_t *buf, size_t len, int16_t lo,
                           int16_t hi, void *msg, kp_arena_t *a) {
    kp_rd_t r;
    kp_rd_init(&r, buf, len);
    int16_t version;
    int rc = kp_rd_i16(&r, &version);
    if (rc != KP_OK) return rc;
    if (version < lo || version > hi) return KP_ERR_UNSUPPORTED;
    rc = kp_decode(d, &r, version, msg, a);
    if (rc != KP_OK) return rc;
    return kp_rd_remaining(&r) == 0 ? KP_OK : KP_ERR_BAD_LENGTH;
}

static int meta_from_value(const kp_transaction_log_value_t *v, bk_txn_meta_t *m) {
    if (v->transaction_status < 0 || v->transaction_status >= BK_TXN_STATE_COUNT) return KP_ERR_BAD_VALUE;
    /* -1 means "none" for all of these; anything lower is not Kafka's and
     * would break the time arithmetic */
    if (v->producer_epoch < -1 || v->transaction_timeout_ms < 0 || v->transaction_start_timestamp_ms < -1 ||
        v->transaction_last_update_timestamp_ms < -1)
        return KP_ERR_BAD_VALUE;
    txn_meta_init(m);
    m->state = (bk_txn_state_t)v->transaction_status;
    m->producer_id = v->producer_id;
    m->prev_producer_id = v->previous_producer_id;
    m->producer_epoch = v->producer_epoch;
    m->timeout_ms = v->transaction_timeout_ms;
    m->last_update_ms = v->transaction_last_update_timestamp_ms;
    m->start_ms = v->transaction_start_timestamp_ms;
    m->client_txn_version = v->client_transaction_version;
    for (int32_t t = 0; t < v->transaction_partitions.count; t++) {
        const kp_transaction_log_value_partitions_schema_t *ps = &v->transaction_partitions.items[t];
        if (ps->topic.len == 0 || ps->topic.len > BK_TXN_TOPIC_MAX_BYTES ||
            memchr(ps->topic.p, '\0', ps->topic.len))
            goto bad;
        for (int32_t i = 0; i < ps->partition_ids.count; i++) {
            int32_t p = ps->partition_ids.items[i];
            if (p < 0) goto bad;
            int rc = txn_meta_add(m, (const char *)ps->topic.p, ps->topic.len, p);
            if (rc != KP_OK) {
                bk_txn_meta_free(m);
                return rc;
            }
        }
    }
    return KP_OK;
bad:
    bk_txn_meta_free(m);
    return KP_ERR_BAD_VALUE;
}

int bk_txn_rec_decode(const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len,
                      char **id, bk_txn_meta_t *meta, bool *dead) {
    *id = NULL;
    if (!key) return KP_ERR_BAD_VALUE;
    kp_arena_t a;
    kp_arena_init(&a, TXN_ARENA_BYTES);
    kp_transaction_log_key_t k;
    int rc = decode_prefixed(&kp_transaction_log_key_desc, key, key_len, 0, 0, &k, &a);
    if (rc == KP_OK && (k.transactional_id.len == 0 || kp_slice_is_null(k.transactional_id) ||
                        memchr(k.transactional_id.p, '\0', k.transactional_id.len)))
        rc = KP_ERR_BAD_VALUE;
    *dead = value == NULL;
    if (rc == KP_OK && value) {
        kp_transaction_log_value_t v;
        rc = decode_prefixed(&kp_transaction_log_value_desc, value, value_len, 0, 1, &v, &a);
        if (rc == KP_OK) rc = meta_from_value(&v, meta);
    }
    if (rc == KP_OK) {
        *id = strndup((const char *)k.transactional_id.p, k.transactional_id.len);
        if (!*id) {
            rc = KP_ERR_NOMEM;
            if (value) bk_txn_meta_free(meta);
        }
    }
    kp_arena_free(&a);
    return rc;
}

int bk_txn_load(bk_txn_coord_t *c, const uint8_t *key, size_t key_len, const uint8_t *value,
                size_t value_len) {
    char *id;
    bk_txn_meta_t m;
    bool dead;
    int rc = bk_txn_rec_decode(key, key_len, value, value_len, &id, &m, &dead);
    if (rc != KP_OK) return rc;
    size_t pos;
    bk_txn_entry_t *e = txn_find(c, id, &pos);
    if (dead || m.state == BK_TXN_DEAD) {
        if (e) txn_remove(c, pos);
        if (!dead) bk_txn_meta_free(&m);
        free(id);
        return KP_OK;
    }
    if (!e && !(e = txn_insert(c, id, pos))) {
        bk_txn_meta_free(&m);
        free(id);
        return KP_ERR_NOMEM;
    }
    free(id);
    assert(!e->pending);
    bk_txn_meta_free(&e->cur);
    e->cur = m;
    free(e->acked);
    e->acked = NULL;
    e->unacked = 0;
    e->complete_due = false;
    return KP_OK;
}

void bk_txn_load_done(bk_txn_coord_t *c, int64_t now_ms, bk_txn_out_t *out) {
    for (size_t i = 0; i < c->n; i++) {
        bk_txn_entry_t *e = c->v[i];
        if (!e->pending && !e->acked &&
            (e->cur.state == BK_TXN_PREPARE_COMMIT || e->cur.state == BK_TXN_PREPARE_ABORT))
            txn_start_markers(c, e, now_ms, out);
    }
}
