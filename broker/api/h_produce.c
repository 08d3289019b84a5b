/* broker/api/h_produce.c — Produce.
 *
 * Per partition: find the log (UNKNOWN_TOPIC_OR_PARTITION /
 * NOT_LEADER_OR_FOLLOWER / KAFKA_STORAGE_ERROR), check acks and
 * min.insync.replicas, size limits (a batch above max.message.bytes:
 * MESSAGE_TOO_LARGE; the set above segment.bytes: RECORD_LIST_TOO_LARGE),
 * validate every batch in place (CRC: CORRUPT_MESSAGE; bad records:
 * INVALID_RECORD; zstd below v7: UNSUPPORTED_COMPRESSION_TYPE; control
 * batches from a producer: INVALID_RECORD), run the idempotence check
 * (duplicates get their original offsets; OUT_OF_ORDER_SEQUENCE_NUMBER,
 * INVALID_PRODUCER_EPOCH, UNKNOWN_PRODUCER_ID), convert legacy magic 0/1
 * sets to one v2 batch, then append (offsets and leader epoch are patched
 * into the request buffer in place: no copy) and wake waiting fetches.
 *
 * Transactional batches need the request's transactional id (else
 * INVALID_RECORD); when this node coordinates that id, the partition must be
 * in its ongoing transaction (INVALID_TXN_STATE, bk_td_check_produce).
 * Storage opens the producer's transaction at the first batch (the LSO
 * stops there) and the coordinator's marker ends it.
 *
 * acks=0 gets no response; if any partition failed, the connection is
 * closed instead so that the producer refreshes its metadata (NOTES §1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/replication/part_metrics.h"
#include "broker/api/dispatch.h"
#include "broker/replication/fetch.h"
#include "broker/replication/parts.h"
#include "broker/replication/replica.h"
#include "broker/txn/txn_driver.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_msgset.h"
#include "storage/st_log.h"

#define PRODUCE_DECOMP_CAP_BYTES ((size_t)64 << 20)  /* one batch, decompressed */
#define LEGACY_MAGIC_OFFSET 16                      /* offset(8) size(4) crc(4) magic */

typedef kp_produce_response_partition_produce_response_t presp_t;

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

typedef struct {
    int64_t dup_first;      /* >= 0: the whole set is a retried duplicate ... */
    int64_t dup_last;       /* ... of the records at [dup_first, dup_last] */
    int64_t txn_pid;        /* >= 0: the set holds a transactional batch of this producer */
    int16_t txn_epoch;
} check_t;

/* Validates a v2 batch set; fills chk for the duplicate case. */
static int16_t check_batches(bk_req_t *req, const st_log_t *log, const uint8_t *buf, size_t len,
                             int64_t max_message_bytes, check_t *chk) {
    kp_rd_t r;
    kp_rd_init(&r, buf, len);
    int nbatches = 0;
    int64_t prev_pid = -1;
    int32_t prev_last_seq = -1;
    kp_arena_t scratch;
    kp_arena_init(&scratch, PRODUCE_DECOMP_CAP_BYTES * 2);
    int16_t err = 0;
    while (kp_rd_remaining(&r) > 0 && err == 0) {
        kp_batch_t b;
        int rc = kp_batch_read(&r, &b);
        if (rc != KP_OK) { err = KP_ERROR_CORRUPT_MESSAGE; break; }
        nbatches++;
        if ((int64_t)b.size > max_message_bytes) { err = KP_ERROR_MESSAGE_TOO_LARGE; break; }
        if (kp_batch_verify_crc(&b) != KP_OK) { err = KP_ERROR_CORRUPT_MESSAGE; break; }
        if (kp_batch_is_control(&b)) { err = KP_ERROR_INVALID_RECORD; break; }
        if (kp_batch_is_transactional(&b)) {
            const kp_produce_request_t *q = req->body;
            if (kp_slice_is_null(q->transactional_id)) { err = KP_ERROR_INVALID_RECORD; break; }
            chk->txn_pid = b.producer_id;
            chk->txn_epoch = b.producer_epoch;
        }
        if (kp_batch_codec(&b) == KP_CODEC_ZSTD && req->hdr.api_version < 7) {
            err = KP_ERROR_UNSUPPORTED_COMPRESSION_TYPE;
            break;
        }
        kp_arena_reset(&scratch);
        /* the CRC was checked above, first (CORRUPT_MESSAGE wins over the rest) */
        rc = kp_batch_validate(&b, KP_VALIDATE_PRODUCER | KP_VALIDATE_CRC_VERIFIED, &scratch,
                               PRODUCE_DECOMP_CAP_BYTES, NULL);
        if (rc != KP_OK) { err = status_error(rc); break; }
        if (b.producer_id < 0) continue;
        if (b.producer_id == prev_pid) {
            /* a later batch of the same producer in this set follows the
             * previous one directly (the state is only updated on append) */
            if (b.base_sequence != (int32_t)((uint32_t)prev_last_seq + 1u)) err = KP_ERROR_OUT_OF_ORDER_SEQUENCE_NUMBER;
        } else {
            int64_t df = -1, dl = -1;
            st_ps_verdict_t v = st_log_producer_check(log, &b, &df, &dl);
            if (v == ST_PS_DUPLICATE && nbatches == 1 && kp_rd_remaining(&r) == 0) {
                chk->dup_first = df;
                chk->dup_last = dl;
                break;
            }
            err = verdict_error(v);
        }
        prev_pid = b.producer_id;
        prev_last_seq = (int32_t)((uint32_t)b.base_sequence + (uint32_t)b.last_offset_delta);
    }
    if (err == 0 && nbatches == 0) err = KP_ERROR_CORRUPT_MESSAGE;
    kp_arena_free(&scratch);
    return err;
}

/* Legacy magic 0/1: validated and converted to one uncompressed v2 batch
 * (recompressing would cost CPU on a path only old clients use). The batch
 * lives in the request arena, which we own and may patch. */
static int16_t convert_legacy(bk_req_t *req, const uint8_t *buf, size_t len, uint8_t **out, size_t *out_len) {
    const uint8_t *b = NULL;
    size_t blen = 0;
    int rc = kp_msgset_to_batch(buf, len, KP_MSGSET_ASSIGN_OFFSETS, KP_CODEC_NONE, &req->arena,
                                PRODUCE_DECOMP_CAP_BYTES, &b, &blen);
    if (rc != KP_OK) return status_error(rc);
    *out = (uint8_t *)b;   /* arena memory: ours and writable */
    *out_len = blen;
    return 0;
}

/* A produce whose acks=all partitions wait for the replicas: answered when
 * `pending` drops to 0 (it starts at 1 for the handler itself). Lives in
 * the request arena, which stays until the answer. */
typedef struct {
    bk_req_t *req;
    kp_produce_response_t r;
    int pending;
} pwait_t;

static void fail_partition(presp_t *o, int16_t err) {
    o->error_code = err;
    o->base_offset = -1;
    o->error_message = bk_str(kp_error_name(err));
}

static void pw_release(pwait_t *pw) {
    if (--pw->pending == 0) bk_req_respond(pw->req, &pw->r);
}

static void ack_done(void *ctx, void *part_ctx, int16_t err) {
    if (err) fail_partition(part_ctx, err);
    pw_release(ctx);
}

static void produce_partition(bk_req_t *req, pwait_t *pw, const bk_topic_t *t, int16_t acks,
                              const kp_produce_request_partition_produce_data_t *pd, presp_t *o) {
    bk_node_t *n = req->node;
    o->index = pd->index;
    o->base_offset = -1;
    o->log_append_time_ms = -1;
    o->log_start_offset = -1;
    if (!t || pd->index < 0 || pd->index >= t->nparts) { o->error_code = KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION; return; }
    bk_part_t *p = bk_parts_get(n->parts, &t->id, pd->index);
    if (!p || !p->leader) { o->error_code = KP_ERROR_NOT_LEADER_OR_FOLLOWER; return; }
    if (!p->log) { o->error_code = p->opening ? KP_ERROR_NOT_LEADER_OR_FOLLOWER : KP_ERROR_KAFKA_STORAGE_ERROR; return; }
    bk_topic_config_t tc;
    bk_node_topic_config(n, t->name, &tc);
    int64_t min_isr = bk_topic_config_int(n->cfg, &tc, BK_TC_MIN_INSYNC_REPLICAS);
    o->error_code = bk_replica_check_produce(n, p, acks == -1, min_isr > INT32_MAX ? INT32_MAX : (int32_t)min_isr);
    if (o->error_code) return;
    const kp_bytes_t *rec = &pd->records.bytes;
    if (rec->p == NULL || rec->len == 0) { o->error_code = KP_ERROR_CORRUPT_MESSAGE; return; }
    if ((int64_t)rec->len > bk_topic_config_int(n->cfg, &tc, BK_TC_SEGMENT_BYTES)) {
        o->error_code = KP_ERROR_RECORD_LIST_TOO_LARGE;
        return;
    }
    int64_t max_msg = bk_topic_config_int(n->cfg, &tc, BK_TC_MAX_MESSAGE_BYTES);
    /* The request frame is our own heap copy (dispatch.c): appending patches
     * offsets and epochs into it in place. */
    uint8_t *buf = (uint8_t *)rec->p;
    size_t len = rec->len;
    check_t chk = { -1, -1, -1, -1 };
    if (len > LEGACY_MAGIC_OFFSET && buf[LEGACY_MAGIC_OFFSET] < KP_BATCH_MAGIC_V2) {
        if ((int64_t)len > max_msg + 12) { o->error_code = KP_ERROR_MESSAGE_TOO_LARGE; return; }
        o->error_code = convert_legacy(req, buf, len, &buf, &len);
        if (o->error_code) return;
    }
    o->error_code = check_batches(req, p->log, buf, len, max_msg, &chk);
    if (o->error_code) return;
    if (chk.txn_pid >= 0 && chk.dup_first < 0 && n->txns)
        o->error_code = bk_td_check_produce(n->txns, ((const kp_produce_request_t *)req->body)->transactional_id,
                                            chk.txn_pid, chk.txn_epoch, t->name, pd->index);
    if (o->error_code) return;
    o->log_start_offset = st_log_start_offset(p->log);
    const kp_produce_request_t *q = req->body;
    int64_t now = bk_now_ms();
    int64_t deadline = now + (q->timeout_ms > 0 ? q->timeout_ms : 0);
    if (chk.dup_first >= 0) {      /* retried batch: its original offsets */
        o->base_offset = chk.dup_first;
        /* acks=all: only once replicated, like the original append (a
         * restarted leader holds the batch its followers may lack) */
        int16_t err = 0;
        if (acks == -1 && bk_replica_wait_duplicate(n, p, chk.dup_first, chk.dup_last, deadline, ack_done, pw, o, &err))
            pw->pending++;
        else if (err) fail_partition(o, err);
        return;
    }
    st_append_info_t info;
    int rc = st_log_append(p->log, buf, len, p->leader_epoch, now, &info);
    if (rc != KP_OK) {
        fprintf(stderr, "skiff: node %d: append to %s-%d failed: %s\n", n->id, t->name, pd->index,
                st_status_str(rc));
        o->error_code = rc == KP_ERR_CORRUPT ? KP_ERROR_CORRUPT_MESSAGE
                      : rc == KP_ERR_BAD_VALUE ? KP_ERROR_INVALID_RECORD : KP_ERROR_KAFKA_STORAGE_ERROR;
        return;
    }
    if (st_log_maybe_flush(p->log, now) != KP_OK)
        fprintf(stderr, "skiff: node %d: flush of %s-%d failed\n", n->id, t->name, pd->index);
    o->base_offset = info.base_offset;
    o->log_append_time_ms = info.log_append_time_ms;
    bk_part_metrics_in(n->metrics, p, info.bytes, (uint64_t)(info.last_offset - info.base_offset + 1));
    /* followers long-poll: wake them (and nobody else: consumers wait for the HW) */
    bk_fetch_notify(n->fetch, p);
    int16_t err = 0;
    if (bk_replica_appended(n, p, &info, acks == -1, deadline, ack_done, pw, o, &err)) pw->pending++;
    else if (err) fail_partition(o, err);
}

void bk_h_produce(bk_req_t *req) {
    const kp_produce_request_t *q = req->body;
    bk_node_t *n = req->node;
    int16_t acks = q->acks;
    bool bad_acks = acks != 0 && acks != 1 && acks != -1;
    pwait_t *pw = bk_req_alloc(req, 1, sizeof *pw);
    if (!pw) { bk_req_close(req, "out of memory"); return; }
    pw->req = req;
    pw->pending = 1;
    kp_produce_response_t *rp = &pw->r;
    kp_produce_response_init(rp);
    size_t nt = q->topic_data.count > 0 ? (size_t)q->topic_data.count : 0;
    kp_produce_response_topic_produce_response_t *ts = bk_req_alloc(req, nt, sizeof *ts);
    if (!ts) { bk_req_close(req, "out of memory"); return; }
    /* every allocation before the first append: once a partition waits for
     * its replicas the request can no longer be closed */
    presp_t **pss = bk_req_alloc(req, nt, sizeof *pss);
    char **names = bk_req_alloc(req, nt, sizeof *names);
    if (!pss || !names) { bk_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < nt; i++) {
        const kp_produce_request_topic_produce_data_t *td = &q->topic_data.items[i];
        size_t np = td->partition_data.count > 0 ? (size_t)td->partition_data.count : 0;
        pss[i] = bk_req_alloc(req, np, sizeof *pss[i]);
        names[i] = bk_req_cstr(req, td->name);
        if (!pss[i] || !names[i]) { bk_req_close(req, "out of memory"); return; }
    }
    bool any_error = false;
    for (size_t i = 0; i < nt; i++) {
        const kp_produce_request_topic_produce_data_t *td = &q->topic_data.items[i];
        kp_produce_response_topic_produce_response_init(&ts[i]);
        ts[i].name = td->name;
        size_t np = td->partition_data.count > 0 ? (size_t)td->partition_data.count : 0;
        presp_t *ps = pss[i];
        const bk_topic_t *t = bk_image_topic_by_name(&n->img, names[i]);
        for (size_t k = 0; k < np; k++) {
            kp_produce_response_partition_produce_response_init(&ps[k]);
            if (bad_acks) {
                ps[k].index = td->partition_data.items[k].index;
                ps[k].base_offset = -1;
                ps[k].error_code = KP_ERROR_INVALID_REQUIRED_ACKS;
            } else {
                produce_partition(req, pw, t, acks, &td->partition_data.items[k], &ps[k]);
            }
            if (ps[k].error_code) {
                any_error = true;
                ps[k].error_message = bk_str(kp_error_name(ps[k].error_code));
            }
        }
        ts[i].partition_responses.items = ps;
        ts[i].partition_responses.count = (int32_t)np;
    }
    if (acks == 0) {
        if (any_error) bk_req_close(req, "acks=0 produce failed");
        else bk_req_respond_none(req);
        return;
    }
    rp->responses.items = ts;
    rp->responses.count = (int32_t)nt;
    pw_release(pw);
}
