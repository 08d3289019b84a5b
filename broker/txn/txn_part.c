/* txn_part.c — partition-side transaction helpers (see txn_part.h). */
#include <stdlib.h>
#include <string.h>

#include "broker/txn/txn_part.h"
#include "protocol/kp_errors.h"

int16_t bk_txn_part_check_marker(const st_producer_state_t *ps, int64_t producer_id, int16_t producer_epoch,
                                 int32_t coordinator_epoch) {
    const st_ps_entry_t *e = st_ps_get(ps, producer_id);
    if (!e) return KP_ERROR_NONE;
    if (producer_epoch < e->epoch) return KP_ERROR_INVALID_PRODUCER_EPOCH;
    if (coordinator_epoch < e->coordinator_epoch) return KP_ERROR_TRANSACTION_COORDINATOR_FENCED;
    return KP_ERROR_NONE;
}

int64_t bk_txn_part_lso(const st_producer_state_t *ps, int64_t hw) {
    int64_t fu = st_ps_first_unstable_offset(ps);
    return fu >= 0 && fu < hw ? fu : hw;
}

int bk_txn_part_apply_marker(st_producer_state_t *ps, int64_t producer_id, int16_t producer_epoch,
                             int32_t coordinator_epoch, int64_t marker_offset, bool commit, int64_t ts_ms,
                             st_aborted_txn_t *aborted, bool *has_aborted) {
    int64_t first;
    *has_aborted = false;
    int rc = st_ps_end_txn(ps, producer_id, producer_epoch, coordinator_epoch, marker_offset, ts_ms, &first);
    if (rc != KP_OK || commit) return rc;
    int64_t fu = st_ps_first_unstable_offset(ps);
    aborted->producer_id = producer_id;
    aborted->first_offset = first >= 0 ? first : marker_offset;
    aborted->last_offset = marker_offset;
    aborted->last_stable_offset = fu >= 0 ? fu : marker_offset + 1;
    *has_aborted = true;
    return KP_OK;
}

static int by_pid(const void *a, const void *b) {
    int64_t x = ((const bk_txn_producer_t *)a)->producer_id, y = ((const bk_txn_producer_t *)b)->producer_id;
    return (x > y) - (x < y);
}

size_t bk_txn_part_producers(const st_producer_state_t *ps, bk_txn_producer_t *out, size_t max) {
    size_t n = 0;
    for (size_t i = 0; i < ps->cap; i++) {
        const st_ps_entry_t *e = &ps->slots[i];
        if (e->producer_id == -1) continue;
        if (n < max) {
            bk_txn_producer_t *p = &out[n];
            p->producer_id = e->producer_id;
            p->producer_epoch = e->epoch;
            p->last_sequence = e->n_batches ? e->batches[e->n_batches - 1].last_seq : -1;
            p->last_timestamp_ms = e->last_timestamp_ms;
            p->coordinator_epoch = e->coordinator_epoch;
            p->current_txn_start_offset = e->txn_first_offset;
        }
        n++;
    }
    if (out && n) qsort(out, n < max ? n : max, sizeof *out, by_pid);
    return n;
}

bool bk_txn_part_marker_final(int16_t error) {
    return error == KP_ERROR_NONE || error == KP_ERROR_INVALID_PRODUCER_EPOCH ||
           error == KP_ERROR_TRANSACTION_COORDINATOR_FENCED;
}
