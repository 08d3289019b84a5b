/* producer_state.c — producer id table, sequence checks, snapshots. */
#include "storage/st_producer_state.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_crc32c.h"
#include "storage/st_checkpoint.h"
#include "storage/st_segment.h"
#include "storage/st_status.h"

#define SNAP_MAGIC 0x534b5053u /* "SKPS" */
#define SNAP_VERSION 1
#define SNAP_ENTRY_BYTES (8 + 2 + 4 + 8 + 8 + 1 + ST_PS_BATCHES_KEPT * 24)

static size_t hash_pid(int64_t pid) {
    uint64_t x = (uint64_t)pid * 0x9E3779B97F4A7C15ull;
    return (size_t)(x ^ (x >> 29));
}

static void free_slots(st_ps_entry_t *s, size_t cap) {
    for (size_t i = 0; i < cap; i++) s[i].producer_id = -1;
}

int st_ps_init(st_producer_state_t *ps) {
    ps->cap = 16;
    ps->count = 0;
    ps->slots = malloc(ps->cap * sizeof *ps->slots);
    if (!ps->slots) return KP_ERR_NOMEM;
    free_slots(ps->slots, ps->cap);
    return KP_OK;
}

void st_ps_free(st_producer_state_t *ps) {
    free(ps->slots);
    ps->slots = NULL;
    ps->cap = ps->count = 0;
}

void st_ps_clear(st_producer_state_t *ps) {
    free_slots(ps->slots, ps->cap);
    ps->count = 0;
}

static st_ps_entry_t *find(const st_producer_state_t *ps, int64_t pid) {
    for (size_t i = hash_pid(pid) & (ps->cap - 1), n = 0; n < ps->cap; i = (i + 1) & (ps->cap - 1), n++) {
        if (ps->slots[i].producer_id == pid) return &ps->slots[i];
        if (ps->slots[i].producer_id == -1) return NULL;
    }
    return NULL;
}

const st_ps_entry_t *st_ps_get(const st_producer_state_t *ps, int64_t pid) { return find(ps, pid); }

static void place(st_ps_entry_t *slots, size_t cap, const st_ps_entry_t *e) {
    size_t i = hash_pid(e->producer_id) & (cap - 1);
    while (slots[i].producer_id != -1) i = (i + 1) & (cap - 1);
    slots[i] = *e;
}

static int rehash(st_producer_state_t *ps, size_t cap) {
    st_ps_entry_t *ns = malloc(cap * sizeof *ns);
    if (!ns) return KP_ERR_NOMEM;
    free_slots(ns, cap);
    for (size_t i = 0; i < ps->cap; i++)
        if (ps->slots[i].producer_id != -1) place(ns, cap, &ps->slots[i]);
    free(ps->slots);
    ps->slots = ns;
    ps->cap = cap;
    return KP_OK;
}

static int get_or_add(st_producer_state_t *ps, int64_t pid, st_ps_entry_t **out) {
    st_ps_entry_t *e = find(ps, pid);
    if (!e) {
        if (ps->count >= ST_PS_PRODUCERS_MAX) return KP_ERR_TOO_LARGE;
        if ((ps->count + 1) * 2 > ps->cap) {
            int rc = rehash(ps, ps->cap * 2);
            if (rc) return rc;
        }
        st_ps_entry_t fresh;
        memset(&fresh, 0, sizeof fresh);
        fresh.producer_id = pid;
        fresh.epoch = -1;
        fresh.coordinator_epoch = -1;
        fresh.txn_first_offset = -1;
        place(ps->slots, ps->cap, &fresh);
        ps->count++;
        e = find(ps, pid);
        assert(e);
    }
    *out = e;
    return KP_OK;
}

static bool next_seq_ok(int32_t last, int32_t first) {
    return first == (last == INT32_MAX ? 0 : last + 1);
}

st_ps_verdict_t st_ps_check(const st_producer_state_t *ps, int64_t pid, int16_t epoch, int32_t first_seq,
                            int32_t last_seq, int64_t *dup_first, int64_t *dup_last) {
    const st_ps_entry_t *e = find(ps, pid);
    if (!e) return first_seq == 0 ? ST_PS_OK : ST_PS_UNKNOWN_PRODUCER;
    if (epoch < e->epoch) return ST_PS_FENCED;
    if (epoch > e->epoch) return first_seq == 0 ? ST_PS_OK : ST_PS_OUT_OF_ORDER;
    /* Same epoch, no batch of it yet: only a marker carried the epoch — a
     * transactions v2 EndTxn bumps it there (KIP-890), so the next
     * transaction's batches come with an epoch the state already has. Its
     * first batch must be sequence 0, as for a new epoch (Kafka's rule:
     * no known last sequence means 0 is next). Accepting any sequence here
     * took a pipelined second batch while the first was being retried
     * (NOT_ENOUGH_REPLICAS during a failover): the retry then met
     * OUT_OF_ORDER_SEQUENCE_NUMBER for ever (t_java_txn_failover.sh). */
    if (e->n_batches == 0) return first_seq == 0 ? ST_PS_OK : ST_PS_OUT_OF_ORDER;
    for (uint8_t i = 0; i < e->n_batches; i++) {
        const st_ps_batch_t *b = &e->batches[i];
        if (b->first_seq == first_seq && b->last_seq == last_seq) {
            *dup_first = b->first_offset;
            *dup_last = b->last_offset;
            return ST_PS_DUPLICATE;
        }
    }
    return next_seq_ok(e->batches[e->n_batches - 1].last_seq, first_seq) ? ST_PS_OK : ST_PS_OUT_OF_ORDER;
}

int st_ps_update(st_producer_state_t *ps, int64_t pid, int16_t epoch, int32_t first_seq, int32_t last_seq,
                 int64_t first_offset, int64_t last_offset, int64_t ts_ms, bool transactional) {
    st_ps_entry_t *e;
    int rc = get_or_add(ps, pid, &e);
    if (rc) return rc;
    if (epoch != e->epoch) {
        e->epoch = epoch;
        e->n_batches = 0;
    }
    if (e->n_batches == ST_PS_BATCHES_KEPT) {
        memmove(e->batches, e->batches + 1, (ST_PS_BATCHES_KEPT - 1) * sizeof e->batches[0]);
        e->n_batches--;
    }
    st_ps_batch_t *b = &e->batches[e->n_batches++];
    b->first_seq = first_seq;
    b->last_seq = last_seq;
    b->first_offset = first_offset;
    b->last_offset = last_offset;
    e->last_timestamp_ms = ts_ms;
    if (transactional && e->txn_first_offset < 0) e->txn_first_offset = first_offset;
    return KP_OK;
}

int st_ps_end_txn(st_producer_state_t *ps, int64_t pid, int16_t epoch, int32_t coordinator_epoch,
                  int64_t marker_offset, int64_t ts_ms, int64_t *txn_first) {
    st_ps_entry_t *e;
    int rc = get_or_add(ps, pid, &e);
    if (rc) return rc;
    *txn_first = e->txn_first_offset;
    e->txn_first_offset = -1;
    if (epoch > e->epoch) {
        e->epoch = epoch;
        e->n_batches = 0;
    }
    e->coordinator_epoch = coordinator_epoch;
    e->last_timestamp_ms = ts_ms;
    (void)marker_offset;
    return KP_OK;
}

int64_t st_ps_first_unstable_offset(const st_producer_state_t *ps) {
    int64_t best = -1;
    for (size_t i = 0; i < ps->cap; i++) {
        const st_ps_entry_t *e = &ps->slots[i];
        if (e->producer_id != -1 && e->txn_first_offset >= 0 && (best < 0 || e->txn_first_offset < best))
            best = e->txn_first_offset;
    }
    return best;
}

void st_ps_expire(st_producer_state_t *ps, int64_t now_ms, int64_t expiration_ms) {
    bool dropped = false;
    for (size_t i = 0; i < ps->cap; i++) {
        st_ps_entry_t *e = &ps->slots[i];
        if (e->producer_id == -1 || e->txn_first_offset >= 0) continue;
        if (e->last_timestamp_ms < now_ms - expiration_ms) {
            e->producer_id = -2; /* tombstone until the rehash below */
            ps->count--;
            dropped = true;
        }
    }
    if (!dropped) return;
    for (size_t i = 0; i < ps->cap; i++)
        if (ps->slots[i].producer_id == -2) ps->slots[i].producer_id = -1;
    if (rehash(ps, ps->cap) != KP_OK) { /* keeps the old table: still correct, only probes longer */ }
}

int st_ps_snapshot_write(const st_producer_state_t *ps, const char *dir, int64_t offset) {
    size_t cap = 32 + ps->count * SNAP_ENTRY_BYTES;
    uint8_t *buf = malloc(cap);
    if (!buf) return KP_ERR_NOMEM;
    kp_wr_t w;
    kp_wr_init(&w, buf, cap);
    int rc = kp_wr_u32(&w, SNAP_MAGIC) || kp_wr_u16(&w, SNAP_VERSION) || kp_wr_i64(&w, offset) ||
             kp_wr_u32(&w, (uint32_t)ps->count);
    for (size_t i = 0; i < ps->cap && !rc; i++) {
        const st_ps_entry_t *e = &ps->slots[i];
        if (e->producer_id == -1) continue;
        rc = kp_wr_i64(&w, e->producer_id) || kp_wr_i16(&w, e->epoch) || kp_wr_i32(&w, e->coordinator_epoch) ||
             kp_wr_i64(&w, e->txn_first_offset) || kp_wr_i64(&w, e->last_timestamp_ms) ||
             kp_wr_i8(&w, (int8_t)e->n_batches);
        for (int b = 0; b < ST_PS_BATCHES_KEPT && !rc; b++)
            rc = kp_wr_i32(&w, e->batches[b].first_seq) || kp_wr_i32(&w, e->batches[b].last_seq) ||
                 kp_wr_i64(&w, e->batches[b].first_offset) || kp_wr_i64(&w, e->batches[b].last_offset);
    }
    if (!rc) rc = kp_wr_u32(&w, kp_crc32c(0, buf, w.pos));
    assert(!rc);
    char path[ST_PATH_MAX];
    st_seg_path(path, sizeof path, dir, offset, ".snapshot");
    rc = st_atomic_write(path, buf, w.pos);
    free(buf);
    return rc;
}

static int read_entry(kp_rd_t *r, st_ps_entry_t *e) {
    int8_t n = 0;
    int rc = kp_rd_i64(r, &e->producer_id) || kp_rd_i16(r, &e->epoch) || kp_rd_i32(r, &e->coordinator_epoch) ||
             kp_rd_i64(r, &e->txn_first_offset) || kp_rd_i64(r, &e->last_timestamp_ms) || kp_rd_i8(r, &n);
    for (int b = 0; b < ST_PS_BATCHES_KEPT && !rc; b++)
        rc = kp_rd_i32(r, &e->batches[b].first_seq) || kp_rd_i32(r, &e->batches[b].last_seq) ||
             kp_rd_i64(r, &e->batches[b].first_offset) || kp_rd_i64(r, &e->batches[b].last_offset);
    if (rc || n < 0 || n > ST_PS_BATCHES_KEPT || e->producer_id < 0) return KP_ERR_CORRUPT;
    e->n_batches = (uint8_t)n;
    return KP_OK;
}

int st_ps_snapshot_read(st_producer_state_t *ps, const char *path) {
    char *raw;
    size_t len;
    int rc = st_read_small_file(path, 22 + (size_t)ST_PS_PRODUCERS_MAX * SNAP_ENTRY_BYTES, &raw, &len);
    if (rc != KP_OK) return rc;
    const uint8_t *buf = (const uint8_t *)raw;
    rc = KP_ERR_CORRUPT;
    if (len < 22 || kp_crc32c(0, buf, len - 4) != kp_load_be32(buf + len - 4)) goto done;
    kp_rd_t r;
    kp_rd_init(&r, buf, len - 4);
    uint32_t magic, count;
    uint16_t ver;
    int64_t off;
    if (kp_rd_u32(&r, &magic) || kp_rd_u16(&r, &ver) || kp_rd_i64(&r, &off) || kp_rd_u32(&r, &count)) goto done;
    if (magic != SNAP_MAGIC || ver != SNAP_VERSION || count > ST_PS_PRODUCERS_MAX) goto done;
    if ((size_t)count * SNAP_ENTRY_BYTES != kp_rd_remaining(&r)) goto done;
    st_ps_clear(ps);
    for (uint32_t i = 0; i < count; i++) {
        st_ps_entry_t e, *slot;
        if (read_entry(&r, &e) != KP_OK) goto done;
        if ((rc = get_or_add(ps, e.producer_id, &slot)) != KP_OK) goto done;
        *slot = e;
        rc = KP_ERR_CORRUPT;
    }
    rc = KP_OK;
done:
    if (rc != KP_OK) st_ps_clear(ps);
    free(raw);
    return rc;
}
