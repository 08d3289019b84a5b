/* broker/group/group_replay.c — a group core loaded from its __consumer_offsets
 * log, transactional offsets resolved at their markers (group_replay.h). */
#include "broker/group/group_replay.h"

#include <stdlib.h>
#include <string.h>

#include "broker/group/group_driver.h"
#include "protocol/kp_batch.h"

#define REPLAY_CHUNK_BYTES ((size_t)1 << 20)

/* Records of transactional batches (TxnOffsetCommit), held during a replay
 * until their producer's marker: COMMIT loads them, ABORT drops them; those
 * still open at the end become the driver's pending offsets. */
typedef struct {
    int64_t pid;
    uint8_t *key, *value;        /* value NULL: null */
    size_t klen, vlen;
} stashed_t;

typedef struct {
    stashed_t *v;
    size_t n, cap, bytes;
} stash_t;

static void stash_drop(stash_t *s, size_t i) {
    free(s->v[i].key);
    free(s->v[i].value);
    s->bytes -= s->v[i].klen + s->v[i].vlen;
    memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof *s->v);
    s->n--;
}

static int stash_add(stash_t *s, int64_t pid, kp_bytes_t key, kp_bytes_t value) {
    if (s->bytes + key.len + value.len > BK_GRP_GD_TXN_STASH_MAX_BYTES) return KP_ERR_TOO_LARGE;
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 16;
        stashed_t *nv = realloc(s->v, nc * sizeof *nv);
        if (!nv) return KP_ERR_NOMEM;
        s->v = nv;
        s->cap = nc;
    }
    stashed_t *e = &s->v[s->n];
    e->pid = pid;
    e->klen = key.len;
    e->vlen = value.p ? value.len : 0;
    e->key = malloc(key.len ? key.len : 1);
    e->value = value.p ? malloc(value.len ? value.len : 1) : NULL;
    if (!e->key || (value.p && !e->value)) { free(e->key); free(e->value); return KP_ERR_NOMEM; }
    memcpy(e->key, key.p, key.len);
    if (value.p && value.len) memcpy(e->value, value.p, value.len);
    s->bytes += e->klen + e->vlen;
    s->n++;
    return KP_OK;
}

/* A COMMIT/ABORT marker of pid: its held records are loaded or dropped. */
static int stash_end(bk_grp_coord_t *c, stash_t *s, int64_t pid, bool commit) {
    for (size_t i = 0; i < s->n;) {
        if (s->v[i].pid != pid) { i++; continue; }
        if (commit) {
            kp_bytes_t k = { s->v[i].key, s->v[i].klen };
            kp_bytes_t v = s->v[i].value ? (kp_bytes_t){ s->v[i].value, s->v[i].vlen } : kp_slice_null();
            int rc = bk_grp_load_record(c, k, v);
            if (rc != KP_OK) return rc;
        }
        stash_drop(s, i);
    }
    return KP_OK;
}

static int replay_marker(bk_grp_coord_t *c, const kp_batch_t *b, kp_arena_t *scratch, stash_t *s) {
    if (b->producer_id < 0 || s->n == 0) return KP_OK;
    kp_batch_info_t info;
    kp_arena_reset(scratch);
    int rc = kp_batch_validate(b, 0, scratch, BK_GRP_GD_REPLAY_BATCH_MAX_BYTES, &info);
    if (rc != KP_OK) return rc;
    kp_record_iter_t it;
    kp_record_iter_init(&it, b, info.records, info.records_len);
    kp_record_t rec;
    int16_t type = -1;
    if (kp_record_iter_next(&it, &rec) != 1 || kp_control_key_read(rec.key, &type) != KP_OK) return KP_ERR_CORRUPT;
    if (type != KP_CONTROL_COMMIT && type != KP_CONTROL_ABORT) return KP_OK;
    return stash_end(c, s, b->producer_id, type == KP_CONTROL_COMMIT);
}

static int replay_batch(bk_grp_coord_t *c, const kp_batch_t *b, kp_arena_t *scratch, stash_t *s) {
    if (kp_batch_is_control(b)) return replay_marker(c, b, scratch, s);
    kp_batch_info_t info;
    kp_arena_reset(scratch);
    int rc = kp_batch_validate(b, 0, scratch, BK_GRP_GD_REPLAY_BATCH_MAX_BYTES, &info);
    if (rc != KP_OK) return rc;
    bool txn = kp_batch_is_transactional(b) && b->producer_id >= 0;
    kp_record_iter_t it;
    kp_record_iter_init(&it, b, info.records, info.records_len);
    kp_record_t rec;
    while ((rc = kp_record_iter_next(&it, &rec)) == 1) {
        if (!rec.key.p) continue;
        rc = txn ? stash_add(s, b->producer_id, rec.key, rec.value) : bk_grp_load_record(c, rec.key, rec.value);
        if (rc != KP_OK) return rc;
    }
    return rc;
}

/* Offsets of transactions still open at the end of the replay: pending
 * (in the txn driver) until their marker arrives. */
static int stash_to_pending(bk_grp_txn_offsets_t *pend, stash_t *s) {
    if (!pend) return KP_OK;
    int rc = KP_OK;
    for (size_t i = 0; i < s->n && rc == KP_OK; i++) {
        kp_arena_t a;
        kp_arena_init(&a, 4096 + (s->v[i].klen + s->v[i].vlen) * 16);
        bk_grp_txn_offset_t t;
        kp_bytes_t k = { s->v[i].key, s->v[i].klen };
        kp_bytes_t v = s->v[i].value ? (kp_bytes_t){ s->v[i].value, s->v[i].vlen } : kp_slice_null();
        /* a name with a NUL cannot have been accepted (refused, not cut, since
         * issue 16): such a record is not ours to replay, and no reason to fail */
        if (bk_grp_decode_txn_offset(k, v, &a, &t) == KP_OK && !kp_slice_has_nul(t.group) &&
            !kp_slice_has_nul(t.topic) && !kp_slice_has_nul(t.metadata)) {   /* other record types: not ours */
            char *g = kp_slice_strdup(t.group), *tp = kp_slice_strdup(t.topic), *md = t.metadata.p ? kp_slice_strdup(t.metadata) : NULL;
            bk_grp_txn_pending_t o = { s->v[i].pid, g, tp, t.partition, t.offset, t.leader_epoch, md, t.commit_ts_ms, -1 };
            rc = g && tp && (md || !t.metadata.p) ? bk_grp_txn_offsets_add(pend, &o) : KP_ERR_NOMEM;
            free(g);
            free(tp);
            free(md);
        }
        kp_arena_free(&a);
    }
    return rc;
}

/* Replays [log start, LEO) of the partition into c. */
typedef struct {
    bk_grp_coord_t *c;
    kp_arena_t scratch;
    stash_t stash;
} replay_t;

static int replay_one(void *ctx, const kp_batch_t *b) {
    replay_t *rp = ctx;
    return replay_batch(rp->c, b, &rp->scratch, &rp->stash);
}

int bk_grp_gd_replay(bk_grp_coord_t *c, st_log_t *log, bk_grp_txn_offsets_t *pend) {
    replay_t rp = { c, { 0 }, { NULL, 0, 0, 0 } };
    kp_arena_init(&rp.scratch, BK_GRP_GD_REPLAY_BATCH_MAX_BYTES * 2);
    int rc = st_log_scan_batches(log, REPLAY_CHUNK_BYTES, BK_GRP_GD_REPLAY_BATCH_MAX_BYTES, replay_one, &rp);
    if (rc == KP_OK) rc = stash_to_pending(pend, &rp.stash);
    while (rp.stash.n) stash_drop(&rp.stash, rp.stash.n - 1);
    free(rp.stash.v);
    kp_arena_free(&rp.scratch);
    return rc;
}
