/* txn_int.h — private to the transaction coordinator (txn*.c). */
#ifndef SKIFF_BK_TXN_INT_H
#define SKIFF_BK_TXN_INT_H

#include "broker/txn/txn.h"

/* What a record in flight was written for: decides the answer and the next
 * step when bk_txn_write_done reports it. */
typedef enum {
    TXN_W_NONE = 0,
    TXN_W_INIT,            /* InitProducerId waits: answer pid/epoch */
    TXN_W_ADD,             /* AddPartitions / AddOffsets wait: answer NONE */
    TXN_W_END,             /* EndTxn waits: answer NONE */
    TXN_W_FENCE_ABORT,     /* InitProducerId aborting the previous instance's txn */
    TXN_W_TIMEOUT_ABORT,   /* tick aborting an expired txn: nobody waits */
    TXN_W_COMPLETE,        /* Complete* after the last marker: nobody waits */
    TXN_W_EXPIRE,          /* tombstone of an expired id: nobody waits */
} txn_wait_t;

struct bk_txn_entry {
    char *id;
    bk_txn_meta_t cur;             /* the durable state */
    bool pending;                  /* a record for `next` is in flight */
    txn_wait_t wait;
    bk_txn_meta_t next;            /* the state once that record is durable */
    int16_t epoch_before_fence;    /* FENCE/TIMEOUT abort: cur epoch to restore on failure */
    bool *acked;                   /* PrepareX: one per cur.parts, NULL otherwise */
    size_t unacked;
    bool complete_due;             /* every marker acked; Complete* still to be written */
};

/* txn_meta.c */
void txn_meta_init(bk_txn_meta_t *m);
KP_MUST_CHECK int txn_meta_copy(bk_txn_meta_t *dst, const bk_txn_meta_t *src);
void txn_meta_clear_parts(bk_txn_meta_t *m);
/* Index of tp in m->parts, or -1. */
long txn_meta_find(const bk_txn_meta_t *m, const char *topic, int32_t partition);
/* Inserts tp (copying the topic) keeping the order; present = no-op.
 * KP_ERR_NOMEM, KP_ERR_TOO_LARGE (BK_TXN_PARTS_MAX). */
KP_MUST_CHECK int txn_meta_add(bk_txn_meta_t *m, const char *topic, size_t topic_len, int32_t partition);

bk_txn_entry_t *txn_find(const bk_txn_coord_t *c, const char *id, size_t *pos);
/* New entry at sorted position pos (from txn_find); NULL on NOMEM / bound. */
bk_txn_entry_t *txn_insert(bk_txn_coord_t *c, const char *id, size_t pos);
void txn_remove(bk_txn_coord_t *c, size_t pos);
void txn_entry_free(bk_txn_entry_t *e);

/* Emits the record for e->next (or a tombstone when tombstone) and marks
 * e pending with `wait`; false (out->err set) when out of memory, e unchanged
 * except that e->next is freed. */
bool txn_emit(bk_txn_coord_t *c, bk_txn_entry_t *e, txn_wait_t wait, bool tombstone, bk_txn_out_t *out);
/* Adds a markers item for e->cur (its unacked partitions) to out. */
void txn_out_markers(const bk_txn_coord_t *c, const bk_txn_entry_t *e, bk_txn_out_t *out);
/* e->cur just became PrepareCommit/PrepareAbort: set up acks, emit markers
 * (or the Complete* record at once when there are no partitions). */
void txn_start_markers(bk_txn_coord_t *c, bk_txn_entry_t *e, int64_t now_ms, bk_txn_out_t *out);
/* Emits the Complete* record for e (PrepareX, all acked). */
void txn_emit_complete(bk_txn_coord_t *c, bk_txn_entry_t *e, int64_t now_ms, bk_txn_out_t *out);
/* Fences e's producer and emits PrepareAbort with the bumped epoch. */
void txn_fence_abort(bk_txn_coord_t *c, bk_txn_entry_t *e, txn_wait_t wait, int64_t now_ms,
                     bk_txn_out_t *out);

static inline bool txn_epoch_exhausted(int16_t epoch) { return epoch >= BK_TXN_EPOCH_MAX - 1; }

#endif
