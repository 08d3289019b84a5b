/* cl_producer.h — batching producer for one topic.
 *
 * Records are added to a per-partition RecordBatch v2 builder (protocol/'s
 * kp_batch_builder, compressed with the chosen codec when the batch is
 * finished). cl_producer_flush sends every open batch, one Produce request
 * per leader, waits for the acks and retries retriable errors (bounded, with
 * backoff, refreshing metadata in between) — the same bytes, so with
 * idempotence the broker drops duplicates by sequence number.
 *
 * Bounds: a batch holds at most opts.batch_bytes_max of uncompressed
 * records; cl_producer_send flushes everything when a batch fills, so at
 * most one batch per partition is buffered and one is in flight.
 */
#ifndef SKIFF_CL_PRODUCER_H
#define SKIFF_CL_PRODUCER_H

#include <stdbool.h>
#include <stdint.h>

#include "clients/cl_client.h"
#include "protocol/kp_batch.h"

#define CL_BATCH_BYTES_DEFAULT ((size_t)256 << 10)

typedef struct cl_producer_opts {
    int16_t acks;             /* 0, 1 or -1 (all) */
    kp_codec_t codec;
    bool idempotent;          /* needs acks=-1 */
    size_t batch_bytes_max;   /* per partition, uncompressed */
    int timeout_ms;           /* Produce request timeout */
    /* Called once per batch when it is acknowledged (status CL_OK) or given
     * up (status != CL_OK, err says why). created_us is when its first
     * record was added (cl_now_us clock). May be NULL. */
    void (*on_batch)(void *ctx, int32_t partition, int64_t base_offset, int32_t records, int64_t created_us,
                     int status, const cl_err_t *err);
    void *ctx;
} cl_producer_opts_t;

cl_producer_opts_t cl_producer_opts_default(void);

typedef struct cl_pbatch {
    kp_batch_builder_t bb;
    bool open;
    int64_t created_us;
} cl_pbatch_t;

typedef struct cl_producer {
    cl_client_t *cl;          /* not owned */
    char topic[256];
    int32_t npartitions;
    cl_producer_opts_t opts;
    cl_pbatch_t *batches;     /* npartitions */
    int32_t *next_seq;        /* npartitions, idempotence only */
    int64_t producer_id;      /* -1 when not idempotent */
    int16_t producer_epoch;
    int32_t sticky;           /* partition for records without a key */
    int64_t acked_records, failed_records;
} cl_producer_t;

/* Looks the topic up (UNKNOWN_TOPIC_OR_PARTITION if absent), gets a producer
 * id when idempotent. Free with cl_producer_close even on failure. */
CL_MUST_CHECK int cl_producer_open(cl_producer_t *p, cl_client_t *cl, const char *topic,
                                   const cl_producer_opts_t *opts, cl_err_t *e);
/* Adds one record (bytes are copied). partition -1 = partitioner. headers
 * may be NULL. Flushes all batches first when this one is full; a flush
 * failure is returned (the record is then not added). */
CL_MUST_CHECK int cl_producer_send(cl_producer_t *p, int32_t partition, kp_bytes_t key, kp_bytes_t value,
                                   const kp_header_in_t *headers, int32_t headers_count, int64_t timestamp_ms,
                                   cl_err_t *e);
/* Sends every open batch and waits for the acks (none for acks=0).
 * Returns the first error of a batch that could not be delivered. */
CL_MUST_CHECK int cl_producer_flush(cl_producer_t *p, cl_err_t *e);
void cl_producer_close(cl_producer_t *p);

/* Parses "none|gzip|snappy|lz4|zstd"; -1 when unknown. */
int cl_codec_parse(const char *s);

#endif
