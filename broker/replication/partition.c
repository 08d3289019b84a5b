/* broker/replication/partition.c — the partition service; see partition.h.
 *
 * Produced bytes are validated here once, in place in the request's own
 * copy of the frame (dispatch.c): no copy of the records on this path
 * except a legacy (magic 0/1) set, which is converted into the request
 * arena. The only other buffer is the scratch arena kp_batch_validate
 * decompresses a compressed batch into, to check its records (bounded by
 * PS_DECOMP_CAP_BYTES per batch; the partition manager's, reused across
 * produces, reset before the append). The state-free checks (CRC, records)
 * can be done ahead, off the loop (bk_repl_ps_precheck). */
#include "broker/replication/partition.h"

#include <assert.h>
#include <stdio.h>

#include "broker/config/config_topic.h"
#include "broker/replication/part_metrics.h"
#include "broker/replication/purgatory.h"
#include "broker/replication/replica_int.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_msgset.h"
#include "storage/st_log.h"
#include "storage/st_status.h"

#define PS_DECOMP_CAP_BYTES ((size_t)64 << 20)  /* one batch, decompressed */
#define PS_LEGACY_MAGIC_OFFSET 16               /* offset(8) size(4) crc(4) magic */
#define PS_LEGACY_OVERHEAD_BYTES 12             /* offset + size before a message */

/* ---- step 1: find and check ------------------------------------------------------ */

int16_t bk_repl_ps_find(bk_node_t *n, const bk_meta_topic_t *t, int32_t partition, bk_repl_part_t **out) {
    *out = NULL;
    if (!t || partition < 0 || partition >= t->nparts) return KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
    bk_repl_part_t *p = bk_repl_parts_get(n->parts, &t->id, partition);
    if (!p || !p->leader) return KP_ERROR_NOT_LEADER_OR_FOLLOWER;
    /* a log being opened on the worker pool is retriable; one that failed is offline */
    if (!p->log) return p->opening ? KP_ERROR_NOT_LEADER_OR_FOLLOWER : KP_ERROR_KAFKA_STORAGE_ERROR;
    *out = p;
    return 0;
}

static int32_t min_insync_of(bk_node_t *n, const bk_repl_part_t *p, const bk_repl_ps_opts_t *o) {
    if (o->min_insync > 0) return o->min_insync;
    return bk_replica_min_insync(n->cfg, bk_node_topic_config(n, p->topic));
}

/* The leader epoch batches are stamped with is the partition's (from the
 * image); the replica core must lead that very epoch, or this node would
 * append for an epoch it no longer (or not yet) leads. */
static int16_t check(bk_node_t *n, bk_repl_part_t *p, const bk_repl_ps_opts_t *o, int32_t min_insync) {
    if (!p || !p->leader) return KP_ERROR_NOT_LEADER_OR_FOLLOWER;
    if (!p->log) return p->opening ? KP_ERROR_NOT_LEADER_OR_FOLLOWER : KP_ERROR_KAFKA_STORAGE_ERROR;
    const bk_repl_t *core = bk_repl_replica_core(p);
    if (!core || bk_repl_role(core) != BK_REPL_LEADER || bk_repl_leader_epoch(core) != p->leader_epoch)
        return KP_ERROR_NOT_LEADER_OR_FOLLOWER;
    if (o->leader_epoch >= 0 && o->leader_epoch != p->leader_epoch)
        return o->leader_epoch < p->leader_epoch ? KP_ERROR_FENCED_LEADER_EPOCH : KP_ERROR_UNKNOWN_LEADER_EPOCH;
    return bk_replica_check_produce(n, p, o->acks == -1, min_insync);
}

int16_t bk_repl_ps_check(bk_node_t *n, bk_repl_part_t *p, const bk_repl_ps_opts_t *o) {
    if (!p || !p->leader || !p->log) return check(n, p, o, 1);
    return check(n, p, o, min_insync_of(n, p, o));
}

/* ---- step 2: validate a producer's bytes ----------------------------------------- */

static int16_t status_error(int rc) {
    switch (rc) {
    case KP_ERR_BAD_VALUE: return KP_ERROR_INVALID_RECORD;
    case KP_ERR_TOO_LARGE: return KP_ERROR_RECORD_LIST_TOO_LARGE;
    case KP_ERR_NOMEM: return KP_ERROR_UNKNOWN_SERVER_ERROR;
    case KP_ERR_UNSUPPORTED: return KP_ERROR_UNSUPPORTED_COMPRESSION_TYPE;
    default: return KP_ERROR_CORRUPT_MESSAGE;
    }
}

static int16_t verdict_error(st_ps_verdict_t v) {
    switch (v) {
    case ST_PS_OK: return 0;
    case ST_PS_DUPLICATE: return KP_ERROR_DUPLICATE_SEQUENCE_NUMBER;
    case ST_PS_OUT_OF_ORDER: return KP_ERROR_OUT_OF_ORDER_SEQUENCE_NUMBER;
    case ST_PS_FENCED: return KP_ERROR_INVALID_PRODUCER_EPOCH;
    case ST_PS_UNKNOWN_PRODUCER: return KP_ERROR_UNKNOWN_PRODUCER_ID;
    }
    return KP_ERROR_UNKNOWN_SERVER_ERROR;
}

/* Retained between produces by the loop's scratch arena (and a prepare
 * thread's): a decompressed batch up to this size costs no malloc after
 * the first; a larger one is freed at the next reset. */
#define PS_SCRATCH_RETAIN_BYTES ((size_t)8 << 20)

/* Every batch of the v2 set: header, size, CRC (the one CRC pass of a
 * produced batch), not a control batch, a transactional batch only with a
 * transactional id, zstd only from v7, records (decompressed into the
 * partition manager's scratch arena, reused across produces), idempotence.
 * Fills the duplicate / transaction fields. With pre, the CRC and
 * record checks of the batches it covers are taken from it (done ahead,
 * bk_repl_ps_precheck) in the place they hold in this order. */
static int16_t check_batches(const st_log_t *log, const bk_repl_ps_producer_t *pr, const bk_repl_ps_pre_t *pre,
                             int64_t max_message_bytes, kp_arena_t *scratch, bk_repl_ps_set_t *set,
                             uint64_t *prechecked) {
    kp_rd_t r;
    kp_rd_init(&r, set->buf, set->len);
    int nbatches = 0;
    int64_t prev_pid = -1;
    int32_t prev_last_seq = -1;
    int16_t err = 0;
    while (kp_rd_remaining(&r) > 0 && err == 0) {
        kp_batch_t b;
        int rc = kp_batch_read(&r, &b);
        if (rc != KP_OK) { err = KP_ERROR_CORRUPT_MESSAGE; break; }
        /* what the precheck says of this batch */
        bool pre_ok = pre && nbatches < pre->nbatches_ok;
        uint8_t pre_stage = pre && nbatches == pre->nbatches_ok ? pre->stage : BK_REPL_PS_PRE_NONE;
        nbatches++;
        if ((int64_t)b.size > max_message_bytes) { err = KP_ERROR_MESSAGE_TOO_LARGE; break; }
        if (pre_stage == BK_REPL_PS_PRE_CRC) { err = KP_ERROR_CORRUPT_MESSAGE; break; }
        if (!pre_ok && pre_stage == BK_REPL_PS_PRE_NONE && kp_batch_verify_crc(&b) != KP_OK) {
            err = KP_ERROR_CORRUPT_MESSAGE;
            break;
        }
        if (kp_batch_is_control(&b)) { err = KP_ERROR_INVALID_RECORD; break; }
        if (kp_batch_is_transactional(&b)) {
            if (!pr->transactional) { err = KP_ERROR_INVALID_RECORD; break; }
            set->txn_pid = b.producer_id;
            set->txn_epoch = b.producer_epoch;
        }
        if (kp_batch_codec(&b) == KP_CODEC_ZSTD && pr->api_version < 7) {
            err = KP_ERROR_UNSUPPORTED_COMPRESSION_TYPE;
            break;
        }
        if (pre_stage == BK_REPL_PS_PRE_RECORDS) { err = pre->error; break; }
        if (pre_ok) {
            (*prechecked)++;
        } else {
            kp_arena_reset_retain(scratch, PS_SCRATCH_RETAIN_BYTES);
            /* the CRC was checked above, first (CORRUPT_MESSAGE wins over the rest) */
            rc = kp_batch_validate(&b, KP_VALIDATE_PRODUCER | KP_VALIDATE_CRC_VERIFIED, scratch, PS_DECOMP_CAP_BYTES,
                                   NULL);
            if (rc != KP_OK) { err = status_error(rc); break; }
        }
        if (b.producer_id < 0) continue;
        if (b.producer_id == prev_pid) {
            /* a later batch of the same producer in this set follows the
             * previous one directly (the state is only updated on append) */
            if (b.base_sequence != (int32_t)((uint32_t)prev_last_seq + 1u)) err = KP_ERROR_OUT_OF_ORDER_SEQUENCE_NUMBER;
        } else {
            int64_t df = -1, dl = -1;
            st_ps_verdict_t v = st_log_producer_check(log, &b, &df, &dl);
            if (v == ST_PS_DUPLICATE && nbatches == 1 && kp_rd_remaining(&r) == 0) {
                set->dup_first = df;
                set->dup_last = dl;
                break;
            }
            err = verdict_error(v);
        }
        prev_pid = b.producer_id;
        prev_last_seq = (int32_t)((uint32_t)b.base_sequence + (uint32_t)b.last_offset_delta);
    }
    if (err == 0 && nbatches == 0) err = KP_ERROR_CORRUPT_MESSAGE;
    /* the decompressed records are not needed past here: give back what
     * is above the retained chunk now, not at the next produce */
    kp_arena_reset_retain(scratch, PS_SCRATCH_RETAIN_BYTES);
    return err;
}

static bool is_legacy(const uint8_t *buf, size_t len) {
    return len > PS_LEGACY_MAGIC_OFFSET && buf[PS_LEGACY_MAGIC_OFFSET] < KP_BATCH_MAGIC_V2;
}

void bk_repl_ps_precheck(const uint8_t *buf, size_t len, int16_t api_version, kp_arena_t *scratch,
                         bk_repl_ps_pre_t *out) {
    *out = (bk_repl_ps_pre_t){ 0, BK_REPL_PS_PRE_NONE, 0 };
    if (buf == NULL || len == 0 || is_legacy(buf, len)) return;
    kp_rd_t r;
    kp_rd_init(&r, buf, len);
    while (kp_rd_remaining(&r) > 0) {
        kp_batch_t b;
        if (kp_batch_read(&r, &b) != KP_OK) return;     /* the loop reads it too: CORRUPT_MESSAGE */
        if (kp_batch_verify_crc(&b) != KP_OK) {
            out->stage = BK_REPL_PS_PRE_CRC;
            return;
        }
        /* refused on the loop before its records are looked at */
        if (kp_batch_codec(&b) == KP_CODEC_ZSTD && api_version < 7) return;
        kp_arena_reset_retain(scratch, PS_SCRATCH_RETAIN_BYTES);
        int rc = kp_batch_validate(&b, KP_VALIDATE_PRODUCER | KP_VALIDATE_CRC_VERIFIED, scratch, PS_DECOMP_CAP_BYTES,
                                   NULL);
        if (rc == KP_ERR_NOMEM) break;                 /* this thread's memory: the loop tries with its own */
        if (rc != KP_OK) {
            out->stage = BK_REPL_PS_PRE_RECORDS;
            out->error = status_error(rc);
            break;
        }
        assert(out->nbatches_ok < INT32_MAX);
        out->nbatches_ok++;
    }
    kp_arena_reset_retain(scratch, PS_SCRATCH_RETAIN_BYTES);
}

/* Legacy magic 0/1: validated and converted to one uncompressed v2 batch
 * in `arena` (recompressing would cost CPU on a path only old clients
 * use); the arena's memory is the caller's and writable. */
static int16_t convert_legacy(bk_repl_ps_set_t *set, kp_arena_t *arena) {
    const uint8_t *b = NULL;
    size_t blen = 0;
    int rc = kp_msgset_to_batch(set->buf, set->len, KP_MSGSET_ASSIGN_OFFSETS, KP_CODEC_NONE, arena,
                                PS_DECOMP_CAP_BYTES, &b, &blen);
    if (rc != KP_OK) return status_error(rc);
    set->buf = (uint8_t *)b;
    set->len = blen;
    return 0;
}

static void set_init(bk_repl_ps_set_t *set, uint8_t *buf, size_t len) {
    *set = (bk_repl_ps_set_t){ .buf = buf, .len = len, .dup_first = -1, .dup_last = -1, .txn_pid = -1, .txn_epoch = -1 };
}

int16_t bk_repl_ps_validate(bk_node_t *n, bk_repl_part_t *p, const bk_repl_ps_opts_t *o, const bk_repl_ps_producer_t *pr, uint8_t *buf,
                       size_t len, kp_arena_t *arena, bk_repl_ps_set_t *set) {
    return bk_repl_ps_validate_pre(n, p, o, pr, NULL, buf, len, arena, set);
}

int16_t bk_repl_ps_validate_pre(bk_node_t *n, bk_repl_part_t *p, const bk_repl_ps_opts_t *o,
                                const bk_repl_ps_producer_t *pr, const bk_repl_ps_pre_t *pre, uint8_t *buf,
                                size_t len, kp_arena_t *arena, bk_repl_ps_set_t *set) {
    set_init(set, buf, len);
    if (!p || !p->leader || !p->log) return check(n, p, o, 1);
    /* one lookup (resolved when the topic's configs last changed) for
     * min.insync, segment.bytes, max.message.bytes */
    const bk_cfg_topic_t *tcp = bk_node_topic_config(n, p->topic);
    set->min_insync = o->min_insync > 0 ? o->min_insync : bk_replica_min_insync(n->cfg, tcp);
    int16_t err = check(n, p, o, set->min_insync);
    if (err) return err;
    if (buf == NULL || len == 0) return KP_ERROR_CORRUPT_MESSAGE;
    if ((int64_t)len > bk_cfg_topic_int(n->cfg, tcp, BK_CFG_TC_SEGMENT_BYTES)) return KP_ERROR_RECORD_LIST_TOO_LARGE;
    int64_t max_msg = bk_cfg_topic_int(n->cfg, tcp, BK_CFG_TC_MAX_MESSAGE_BYTES);
    if (is_legacy(buf, len)) {
        if ((int64_t)len > max_msg + PS_LEGACY_OVERHEAD_BYTES) return KP_ERROR_MESSAGE_TOO_LARGE;
        if ((err = convert_legacy(set, arena)) != 0) return err;
        pre = NULL;          /* a precheck is of the bytes received, not of the converted batch */
    }
    uint64_t prechecked = 0;
    if ((err = check_batches(p->log, pr, pre, max_msg, bk_repl_parts_scratch(n->parts), set, &prechecked)) != 0)
        return err;
    set->crc_verified = true;
    bk_repl_parts_prechecked_add(n->parts, prechecked);
    return 0;
}

bk_repl_ps_set_t bk_repl_ps_set_internal(uint8_t *buf, size_t len) {
    bk_repl_ps_set_t set;
    set_init(&set, buf, len);
    return set;
}

/* ---- steps 3-4: append and complete ----------------------------------------------- */

/* The one flush decision of a leader append (flush.messages / flush.ms):
 * when due, the fsync runs on the worker pool (parts.h); acks never wait
 * for it (Kafka's meaning of the flush settings). A failed fsync takes the
 * log offline in its completion. */
static void ps_flush_policy(bk_node_t *n, bk_repl_part_t *p, int64_t now_ms) { bk_repl_parts_flush_maybe(n->parts, p, now_ms); }

static int16_t append_error(int rc) {
    if (rc == KP_ERR_CORRUPT) return KP_ERROR_CORRUPT_MESSAGE;
    if (rc == KP_ERR_BAD_VALUE) return KP_ERROR_INVALID_RECORD;
    return KP_ERROR_KAFKA_STORAGE_ERROR;
}

static bool append_duplicate(bk_node_t *n, bk_repl_part_t *p, const bk_repl_ps_set_t *set, const bk_repl_ps_opts_t *o,
                             int64_t deadline_ms, bk_repl_ps_done_fn fn, void *ctx, void *part_ctx, bk_repl_ps_result_t *res) {
    res->base_offset = set->dup_first;
    res->last_offset = set->dup_last;
    res->duplicate = true;
    /* acks=all: only once replicated, like the original append (a
     * restarted leader holds the batch its followers may lack) */
    if (o->acks != -1) return false;
    return bk_replica_wait_duplicate(n, p, deadline_ms, fn, ctx, part_ctx, res);
}

bool bk_repl_ps_append(bk_node_t *n, bk_repl_part_t *p, const bk_repl_ps_set_t *set, const bk_repl_ps_opts_t *o, bk_repl_ps_done_fn fn,
                  void *ctx, void *part_ctx, bk_repl_ps_result_t *res) {
    *res = (bk_repl_ps_result_t){ 0, -1, -1, -1, -1, false };
    assert(o->acks == 0 || o->acks == 1 || o->acks == -1);
    assert(o->acks != -1 || fn != NULL);
    int32_t min_insync = set->min_insync > 0 ? set->min_insync
                       : p && p->leader && p->log ? min_insync_of(n, p, o) : 1;
    if ((res->error = check(n, p, o, min_insync)) != 0) return false;
    res->log_start_offset = st_log_start_offset(p->log);
    int64_t now = bk_net_now_ms();
    int64_t deadline = now + (o->timeout_ms > 0 ? o->timeout_ms : 0);
    if (set->dup_first >= 0) return append_duplicate(n, p, set, o, deadline, fn, ctx, part_ctx, res);
    st_append_info_t info;
    int rc = set->crc_verified ? st_log_append_verified(p->log, set->buf, set->len, p->leader_epoch, now, &info)
                               : st_log_append(p->log, set->buf, set->len, p->leader_epoch, now, &info);
    if (rc == KP_OK) ps_flush_policy(n, p, now);
    if (rc != KP_OK) {
        fprintf(stderr, "skiff: node %d: append to %s-%d failed: %s\n", n->id, p->topic, p->partition,
                st_status_str(rc));
        res->error = append_error(rc);
        return false;
    }
    assert(info.last_offset >= info.base_offset);
    res->base_offset = info.base_offset;
    res->last_offset = info.last_offset;
    res->log_append_time_ms = info.log_append_time_ms;
    bk_repl_part_metrics_in(n->metrics, p, info.bytes, (uint64_t)(info.last_offset - info.base_offset + 1));
    /* The core counts the records; a HW it moves wakes this partition's
     * fetches from inside (bk_rp_exec). Otherwise only the LEO moved:
     * wake them here for the followers, which read up to the LEO (at the
     * end of this loop callback: a burst of appends wakes them once). */
    int64_t hw = st_log_high_watermark(p->log);
    bk_repl_purg_key_t key = { p->topic_id, p->partition };
    bool waits = bk_replica_appended(n, p, &info, o->acks == -1, deadline, fn, ctx, part_ctx, res);
    if (st_log_high_watermark(p->log) == hw) bk_repl_purg_notify_soon(n->purg, &key.topic_id, key.partition);
    return waits;
}
