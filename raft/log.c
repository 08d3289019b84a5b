/* log.c — the in-core raft log: entries with owned payloads plus the epoch
 * history used for divergence checks (KIP-595's end offset for epoch).
 *
 * Entries live in one array indexed by offset - start. Dropping a prefix
 * memmoves the tail: O(n) per snapshot, which happens rarely and on a log
 * bounded by log_entries_max; a ring buffer would avoid the copy but make
 * every pointer handed out in a ready harder to reason about. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "raft/raft_int.h"

int rlog_init(rlog_t *l, const raft_snapshot_id_t *snap) {
    memset(l, 0, sizeof *l);
    if (snap != NULL && snap->end_offset > 0) {
        l->snap = *snap;
        l->start = snap->end_offset;
    }
    return RAFT_OK;
}

void rlog_free(rlog_t *l) {
    for (size_t i = 0; i < l->n; i++) free((void *)l->e[i].data);
    free(l->e);
    free(l->hist);
    memset(l, 0, sizeof *l);
}

const raft_entry_t *rlog_at(const rlog_t *l, int64_t offset) {
    if (offset < l->start || offset >= rlog_end(l)) return NULL;
    return &l->e[offset - l->start];
}

int32_t rlog_epoch_before(const rlog_t *l, int64_t offset) {
    assert(offset >= l->start);
    assert(offset <= rlog_end(l));
    if (offset == l->start) return l->snap.epoch;
    return l->e[offset - 1 - l->start].epoch;
}

static int hist_push(rlog_t *l, int32_t epoch, int64_t start) {
    if (l->n_hist > 0) {
        assert(epoch > l->hist[l->n_hist - 1].epoch);
        assert(start >= l->hist[l->n_hist - 1].start);
    }
    if (l->n_hist == l->hist_cap) {
        size_t cap = l->hist_cap ? l->hist_cap * 2 : 8;
        rlog_epoch_t *h = realloc(l->hist, cap * sizeof *h);
        if (h == NULL) return RAFT_ERR_NOMEM;
        l->hist = h;
        l->hist_cap = cap;
    }
    l->hist[l->n_hist].epoch = epoch;
    l->hist[l->n_hist].start = start;
    l->n_hist++;
    return RAFT_OK;
}

int rlog_append(rlog_t *l, int32_t epoch, raft_entry_type_t type, const uint8_t *data,
                uint32_t len) {
    assert(epoch >= rlog_last_epoch(l));
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        raft_entry_t *e = realloc(l->e, cap * sizeof *e);
        if (e == NULL) return RAFT_ERR_NOMEM;
        l->e = e;
        l->cap = cap;
    }
    uint8_t *copy = NULL;
    if (len > 0) {
        copy = malloc(len);
        if (copy == NULL) return RAFT_ERR_NOMEM;
        memcpy(copy, data, len);
    }
    if (l->n_hist == 0 || l->hist[l->n_hist - 1].epoch < epoch) {
        if (hist_push(l, epoch, rlog_end(l)) != RAFT_OK) {
            free(copy);
            return RAFT_ERR_NOMEM;
        }
    }
    raft_entry_t *e = &l->e[l->n];
    e->offset = rlog_end(l);
    e->epoch = epoch;
    e->type = type;
    e->data = copy;
    e->len = len;
    l->n++;
    return RAFT_OK;
}

void rlog_truncate(rlog_t *l, int64_t offset) {
    assert(offset >= l->start);
    assert(offset <= rlog_end(l));
    while (rlog_end(l) > offset) {
        l->n--;
        free((void *)l->e[l->n].data);
        l->e[l->n].data = NULL;
    }
    while (l->n_hist > 0 && l->hist[l->n_hist - 1].start >= offset) l->n_hist--;
}

void rlog_drop_prefix(rlog_t *l, const raft_snapshot_id_t *snap) {
    int64_t end = snap->end_offset;
    assert(end > l->start);
    if (end >= rlog_end(l)) {
        rlog_truncate(l, l->start);
        l->n_hist = 0;
        l->start = end;
        l->snap = *snap;
        return;
    }
    size_t drop = (size_t)(end - l->start);
    assert(l->e[drop - 1].epoch == snap->epoch);
    for (size_t i = 0; i < drop; i++) free((void *)l->e[i].data);
    memmove(l->e, l->e + drop, (l->n - drop) * sizeof *l->e);
    l->n -= drop;
    l->start = end;
    l->snap = *snap;
    /* keep the epoch that covers `end` (clamped) and every later one */
    size_t keep = 0;
    while (keep + 1 < l->n_hist && l->hist[keep + 1].start <= end) keep++;
    memmove(l->hist, l->hist + keep, (l->n_hist - keep) * sizeof *l->hist);
    l->n_hist -= keep;
    if (l->n_hist > 0 && l->hist[0].start < end) l->hist[0].start = end;
}

rlog_epoch_end_t rlog_end_offset_for_epoch(const rlog_t *l, int32_t epoch) {
    rlog_epoch_end_t out = { false, 0, 0 };
    for (size_t i = l->n_hist; i-- > 0;) {
        if (l->hist[i].epoch <= epoch) {
            out.found = true;
            out.epoch = l->hist[i].epoch;
            out.end_offset = i + 1 < l->n_hist ? l->hist[i + 1].start : rlog_end(l);
            return out;
        }
    }
    /* no entry epoch <= `epoch`: the snapshot's epoch ends at log start */
    if (l->snap.epoch <= epoch && (l->start > 0 || l->n_hist == 0)) {
        out.found = true;
        out.epoch = l->snap.epoch;
        out.end_offset = l->n_hist > 0 ? l->hist[0].start : rlog_end(l);
    }
    return out;
}
