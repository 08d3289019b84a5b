/* repl_epochs.c — the leader-epoch cache of the abstract log (KIP-101). */
#include <assert.h>
#include <string.h>

#include "broker/replication/repl_int.h"

bool bk_repl_i_ids_has(const int32_t *ids, uint32_t n, int32_t id) {
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] == id) return true;
    return false;
}

int32_t bk_repl_i_latest_epoch(const bk_repl_t *r) {
    return r->n_epochs ? r->epochs[r->n_epochs - 1].epoch : BK_REPL_NO_EPOCH;
}

/* Records that `epoch` starts at `start`. Entries that conflict (epoch >=
 * `epoch` or start >= `start`) are dropped first, as Kafka's cache does, so
 * the cache stays strictly ascending in both. Full cache: the oldest entry
 * goes (bound BK_REPL_EPOCHS_MAX). */
void bk_repl_i_assign_epoch(bk_repl_t *r, int32_t epoch, int64_t start) {
    assert(epoch >= 0);
    if (r->n_epochs && bk_repl_i_latest_epoch(r) == epoch) return;
    while (r->n_epochs &&
           (r->epochs[r->n_epochs - 1].epoch >= epoch ||
            r->epochs[r->n_epochs - 1].start_offset >= start))
        r->n_epochs--;
    if (r->n_epochs == BK_REPL_EPOCHS_MAX) {
        memmove(r->epochs, r->epochs + 1, (BK_REPL_EPOCHS_MAX - 1) * sizeof r->epochs[0]);
        r->n_epochs--;
    }
    r->epochs[r->n_epochs++] = (bk_repl_epoch_t){ epoch, start };
}

/* Drops offsets >= `offset` from the abstract log and its epoch cache. */
void bk_repl_i_truncate(bk_repl_t *r, int64_t offset) {
    assert(offset >= r->log_start);
    if (offset < r->leo) r->leo = offset;
    /* also entries starting exactly at the end: an epoch with no records */
    while (r->n_epochs && r->epochs[r->n_epochs - 1].start_offset >= offset)
        r->n_epochs--;
    if (r->hw > offset) r->hw = offset;
}

/* Kafka's LeaderEpochFileCache.endOffsetFor. */
void bk_repl_epoch_end_offset(const bk_repl_t *r, int32_t epoch,
                              int32_t *out_epoch, int64_t *out_end) {
    *out_epoch = BK_REPL_NO_EPOCH;
    *out_end = BK_REPL_NO_OFFSET;
    if (epoch == BK_REPL_NO_EPOCH || r->n_epochs == 0) return;
    if (epoch == bk_repl_i_latest_epoch(r)) {
        *out_epoch = epoch;
        *out_end = r->leo;
        return;
    }
    uint32_t hi = 0;   /* first entry with a higher epoch */
    while (hi < r->n_epochs && r->epochs[hi].epoch <= epoch) hi++;
    if (hi == r->n_epochs) return;          /* epoch beyond the latest */
    *out_end = r->epochs[hi].start_offset;
    *out_epoch = hi == 0 ? epoch : r->epochs[hi - 1].epoch;
}
