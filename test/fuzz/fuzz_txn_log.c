/* libFuzzer target: __transaction_state records (bk_txn_rec_decode) and
 * their replay into a coordinator (bk_txn_load).
 *
 * Input: a sequence of records, each "u16 key_len, u16 value_len (0xffff =
 * null value, a tombstone), key bytes, value bytes" (big-endian; lengths
 * clamped to what is left). For every record:
 *  - a decoded record re-encodes, and decoding that gives the same state and
 *    encoding it again the same bytes (the encoder writes value version 0,
 *    which has no previous_producer_id, and Empty writes no partitions);
 *  - bk_txn_load fails exactly when the decode did, and afterwards the
 *    coordinator holds what the record says (nothing for a tombstone/Dead).
 * Then load_done and a tick run on whatever was loaded. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/txn/txn.h"
#include "protocol/kp_errors.h"

#define RECS_MAX 64 /* bound on records per input */

static bool alloc_pid(void *ctx, int64_t *pid) {
    int64_t *next = ctx;
    *pid = (*next)++;
    return true;
}

static bool same_meta(const bk_txn_meta_t *a, const bk_txn_meta_t *b, bool parts_too) {
    if (a->state != b->state || a->producer_id != b->producer_id || a->producer_epoch != b->producer_epoch ||
        a->timeout_ms != b->timeout_ms || a->last_update_ms != b->last_update_ms || a->start_ms != b->start_ms)
        return false;
    if (!parts_too) return true;
    if (a->nparts != b->nparts) return false;
    for (size_t i = 0; i < a->nparts; i++)
        if (a->parts[i].partition != b->parts[i].partition || strcmp(a->parts[i].topic, b->parts[i].topic) != 0)
            return false;
    return true;
}

/* Parts are sorted by (topic, partition) and unique. */
static void check_parts(const bk_txn_meta_t *m) {
    for (size_t i = 1; i < m->nparts; i++) {
        int c = strcmp(m->parts[i - 1].topic, m->parts[i].topic);
        if (c > 0 || (c == 0 && m->parts[i - 1].partition >= m->parts[i].partition)) abort();
    }
}

static void roundtrip(const char *id, const bk_txn_meta_t *m, bool dead) {
    bk_txn_rec_t r1, r2;
    if (bk_txn_rec_encode(id, dead ? NULL : m, &r1) != KP_OK) abort();
    if ((r1.value == NULL) != dead) abort();
    char *id2;
    bk_txn_meta_t m2;
    bool dead2;
    if (bk_txn_rec_decode(r1.key, r1.key_len, r1.value, r1.value_len, &id2, &m2, &dead2) != KP_OK) abort();
    if (strcmp(id, id2) != 0 || dead2 != dead) abort();
    if (!dead) {
        if (!same_meta(m, &m2, m->state != BK_TXN_EMPTY)) abort();
        if (bk_txn_rec_encode(id2, &m2, &r2) != KP_OK) abort();
        if (r2.key_len != r1.key_len || memcmp(r2.key, r1.key, r1.key_len) != 0) abort();
        if (r2.value_len != r1.value_len || memcmp(r2.value, r1.value, r1.value_len) != 0) abort();
        bk_txn_rec_free(&r2);
        bk_txn_meta_free(&m2);
    }
    free(id2);
    bk_txn_rec_free(&r1);
}

/* The coordinator holds what the record said. */
static void check_loaded(const bk_txn_coord_t *c, const char *id, const bk_txn_meta_t *m, bool dead) {
    const bk_txn_meta_t *got = bk_txn_get(c, id);
    if (dead || m->state == BK_TXN_DEAD) {
        if (got) abort();
        return;
    }
    if (!got || !same_meta(got, m, true)) abort();
}

static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bk_txn_config_t cfg;
    bk_txn_config_defaults(&cfg);
    int64_t next_pid = 1000;
    bk_txn_coord_t c;
    bk_txn_coord_init(&c, &cfg, 3, alloc_pid, &next_pid);
    size_t at = 0;
    for (int n = 0; n < RECS_MAX && size - at >= 4; n++) {
        size_t klen = be16(data + at), vlen = be16(data + at + 2);
        bool null_value = vlen == 0xffff;
        at += 4;
        if (klen > size - at) klen = size - at;
        const uint8_t *key = data + at;
        at += klen;
        if (null_value) vlen = 0;
        if (vlen > size - at) vlen = size - at;
        const uint8_t *value = null_value ? NULL : data + at;
        at += vlen;

        char *id;
        bk_txn_meta_t m;
        bool dead;
        int rc = bk_txn_rec_decode(key, klen, value, vlen, &id, &m, &dead);
        int lrc = bk_txn_load(&c, key, klen, value, vlen);
        if ((rc == KP_OK) != (lrc == KP_OK)) abort();
        if (rc != KP_OK) {
            if (id != NULL) abort();
            continue;
        }
        if (!id || strlen(id) == 0 || dead != null_value) abort();
        if (!dead) check_parts(&m);
        roundtrip(id, &m, dead);
        check_loaded(&c, id, &m, dead);
        if (!dead) bk_txn_meta_free(&m);
        free(id);
    }
    bk_txn_out_t out;
    bk_txn_out_init(&out);
    bk_txn_load_done(&c, 1700000000000, &out);
    bk_txn_tick(&c, 1700000000000 + 86400000LL * 30, &out);
    bk_txn_out_free(&out);
    bk_txn_coord_free(&c);
    return 0;
}
