/* broker/replication/partition.h — the partition service: the one way to
 * append to a partition this node leads (bk_repl_ps_*).
 *
 * Every leader append goes through here — Produce (api/h_produce.c), the
 * group coordinator's __consumer_offsets records (group/group_driver.c),
 * the transaction coordinator's __transaction_state records
 * (txn/txn_write.c) and transaction markers (txn/txn_markers.c) — so each
 * step is written once:
 *
 *   1. find / check  bk_repl_ps_find, bk_repl_ps_check: the partition exists, this
 *                    node leads it at the leader epoch its replica core
 *                    leads (and the caller's, if given), the log is open;
 *                    acks=all: ISR >= min.insync.replicas, wait bound.
 *   2. validate      bk_repl_ps_validate (a producer's bytes) — sizes, legacy
 *                    conversion, every batch's header, CRC, records and
 *                    idempotence — once; or bk_repl_ps_set_internal for bytes
 *                    this node built (storage checks those).
 *   3. append        bk_repl_ps_append: offsets and leader epoch patched in
 *                    place, one write (st_log_append_verified when step 2
 *                    checked the CRCs: the CRC is verified once per
 *                    produced batch), producer state and epoch cache
 *                    (storage), the flush policy (one decision per
 *                    append, ps_flush_policy in partition.c), per-topic
 *                    metrics, the replica core told the records, the
 *                    fetch purgatory woken for this partition only;
 *   4. complete      acks 0/1: done when it returns; acks=all (-1): the
 *                    produce purgatory of the replication driver
 *                    (replica.c) holds the wait until the HW passes the
 *                    records, then the one callback type, bk_repl_ps_done_fn.
 *
 * Errors are Kafka codes, the same for every caller: UNKNOWN_TOPIC_OR_
 * PARTITION, NOT_LEADER_OR_FOLLOWER (not led, log still opening, the core
 * is not leader of the partition's epoch), KAFKA_STORAGE_ERROR (offline,
 * write or flush failed), FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (the
 * caller's epoch), NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT (wait bound or
 * deadline), NOT_ENOUGH_REPLICAS_AFTER_APPEND, and for produced bytes
 * CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE,
 * RECORD_LIST_TOO_LARGE, UNSUPPORTED_COMPRESSION_TYPE,
 * OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH,
 * UNKNOWN_PRODUCER_ID. A failed write is logged here, once, for an
 * operator ("append to T-P failed: ..."); callers log only what they do
 * about it.
 *
 * Invariants: after a successful append the core's LEO equals the log's
 * (no leader append happens behind the core); every appended record is
 * counted in skiff_{bytes,messages}_in_total of its topic; a waiting
 * acks=all append completes exactly once (HW, deadline, leadership lost,
 * node stopping).
 *
 * Threading: loop thread only. Nothing here blocks except what the flush
 * policy does (flush.messages / flush.ms: an fsync on the loop, as before;
 * moved off the loop by the asynchronous flush work, which changes only
 * ps_flush_policy). */
#ifndef SKIFF_BK_PARTITION_H
#define SKIFF_BK_PARTITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/core/node.h"
#include "broker/replication/parts.h"
#include "protocol/kp_arena.h"

/* How an append is acknowledged and checked. */
typedef struct {
    int16_t acks;              /* 0 or 1: done once in the leader's log;
                                  -1: once the HW passes the records */
    int32_t min_insync;        /* acks=-1: refused below this ISR size; 0 =
                                  the topic's min.insync.replicas */
    int64_t timeout_ms;        /* acks=-1: REQUEST_TIMED_OUT after this */
    int32_t leader_epoch;      /* the epoch the caller expects; -1: any */
} bk_repl_ps_opts_t;

/* The outcome of an append. */
typedef struct {
    int16_t error;             /* Kafka error code; 0 = ok */
    int64_t base_offset;       /* first offset of the records; -1 when nothing
                                  was appended (and none were already there) */
    int64_t last_offset;       /* -1 likewise */
    int64_t log_append_time_ms;/* -1 unless the topic stamps LogAppendTime */
    int64_t log_start_offset;  /* -1 when refused before the log was looked at */
    bool duplicate;            /* an idempotent retry: the records were
                                  already in the log at [base, last] */
} bk_repl_ps_result_t;

/* Completion of an acks=-1 append that had to wait: exactly once, with the
 * offsets of the result bk_repl_ps_append gave and the final error (0, NOT_
 * ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER).
 * On an error the records may still be in the log: they are just not
 * known to be replicated. `res` is valid during the call only. */
typedef void (*bk_repl_ps_done_fn)(void *ctx, void *part_ctx, const bk_repl_ps_result_t *res);

/* A batch set ready for bk_repl_ps_append (step 2). */
typedef struct {
    uint8_t *buf;              /* one or more v2 batches back to back; patched in place */
    size_t len;
    bool crc_verified;         /* only bk_repl_ps_validate sets it */
    int32_t min_insync;        /* resolved by bk_repl_ps_validate; 0 = not yet */
    int64_t dup_first;         /* >= 0: a retried duplicate of the records at */
    int64_t dup_last;          /*       [dup_first, dup_last]: nothing is appended */
    int64_t txn_pid;           /* >= 0: holds a transactional batch of this producer */
    int16_t txn_epoch;
} bk_repl_ps_set_t;

/* The state-free part of validating a producer's record set, done ahead
 * of the state loop (bk_repl_ps_precheck, e.g. on the network thread that
 * read the frame): every batch's CRC and records (decompressed), from the
 * first, stopping at the first failure. bk_repl_ps_validate then skips that
 * work for the batches it covers and answers exactly what the full checks
 * answer (same codes, same precedence: the state checks of each batch —
 * max.message.bytes before its CRC, control / transactional / zstd before
 * its records — still run in their place on the loop). */
typedef enum {
    BK_REPL_PS_PRE_NONE = 0,   /* batch `nbatches_ok` and later not looked at */
    BK_REPL_PS_PRE_CRC,        /* batch `nbatches_ok`: its CRC is wrong */
    BK_REPL_PS_PRE_RECORDS,    /* batch `nbatches_ok`: CRC right, records refused with `error` */
} bk_repl_ps_pre_stage_t;

typedef struct {
    int32_t nbatches_ok;       /* batches, from the first, whose CRC and records passed */
    uint8_t stage;             /* bk_repl_ps_pre_stage_t, of batch nbatches_ok */
    int16_t error;             /* BK_REPL_PS_PRE_RECORDS: the Kafka error of its records */
} bk_repl_ps_pre_t;

/* What a Produce request says about its batches. */
typedef struct {
    int16_t api_version;       /* zstd needs v7+ */
    bool transactional;        /* the request names a transactional id */
} bk_repl_ps_producer_t;

/* The partition `partition` of topic t (NULL: unknown topic) for an
 * append: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (not led
 * here, or its log still opening), KAFKA_STORAGE_ERROR (offline); 0 and
 * *out set otherwise. *out is valid until the return to the loop. */
int16_t bk_repl_ps_find(bk_node_t *n, const bk_meta_topic_t *t, int32_t partition, bk_repl_part_t **out);

/* Step 1 alone (for a caller that must refuse before other checks of its
 * own, e.g. a marker's producer epoch): 0 when an append with o may go
 * ahead now. p may be NULL (NOT_LEADER_OR_FOLLOWER). */
int16_t bk_repl_ps_check(bk_node_t *n, bk_repl_part_t *p, const bk_repl_ps_opts_t *o);

/* Steps 1-2 for a producer's bytes buf[0..len) (the caller's writable
 * copy: offsets are later patched into it). Legacy magic 0/1 sets are
 * converted to one uncompressed v2 batch allocated in `arena`, which must
 * live until the append. 0: *set is ready for bk_repl_ps_append. */
int16_t bk_repl_ps_validate(bk_node_t *n, bk_repl_part_t *p, const bk_repl_ps_opts_t *o, const bk_repl_ps_producer_t *pr, uint8_t *buf,
                       size_t len, kp_arena_t *arena, bk_repl_ps_set_t *set);
/* The same, with `pre` = bk_repl_ps_precheck of exactly these bytes (or
 * NULL: the full checks): the CRC and record checks it covers are not done
 * again; the answer is the one the full checks give. */
int16_t bk_repl_ps_validate_pre(bk_node_t *n, bk_repl_part_t *p, const bk_repl_ps_opts_t *o,
                                const bk_repl_ps_producer_t *pr, const bk_repl_ps_pre_t *pre, uint8_t *buf,
                                size_t len, kp_arena_t *arena, bk_repl_ps_set_t *set);

/* The state-free checks of buf[0..len) (a producer's record set, read
 * only) into *out; thread-safe: it touches only buf, `scratch` (the
 * caller's, reset between batches; decompressed records go there, at most
 * 64 MiB per batch) and *out. It stops without a verdict (leaving the
 * batch to bk_repl_ps_validate) at a batch it cannot read, a legacy magic
 * 0/1 set (converted on the loop), zstd below api_version 7 (refused
 * there) and when `scratch` is out of memory. */
void bk_repl_ps_precheck(const uint8_t *buf, size_t len, int16_t api_version, kp_arena_t *scratch,
                         bk_repl_ps_pre_t *out);

/* A set this node built itself (coordinator records, markers): storage
 * checks each batch's header and CRC on append. */
bk_repl_ps_set_t bk_repl_ps_set_internal(uint8_t *buf, size_t len);

/* Steps 1, 3 and 4. Returns true when the append waits for its replicas
 * (acks=-1): fn(ctx, part_ctx, res) comes later, exactly once, never from
 * inside this call. Returns false when done now: *res is final and fn is
 * never called. In both cases *res holds the offsets assigned (or, for a
 * duplicate, the original ones) and log_start_offset. */
bool bk_repl_ps_append(bk_node_t *n, bk_repl_part_t *p, const bk_repl_ps_set_t *set, const bk_repl_ps_opts_t *o, bk_repl_ps_done_fn fn,
                  void *ctx, void *part_ctx, bk_repl_ps_result_t *res);

#endif
