/* cl_consumer.h — list offsets, fetch, and a simple one-topic consumer.
 *
 * The consumer keeps a position per partition and fetches from every leader
 * in turn (one Fetch request per leader per poll). Records of a batch that
 * begins before the position (compressed batches are returned whole) are
 * skipped; control batches (transaction markers) are never delivered.
 * Positions come from ListOffsets (earliest / latest / by timestamp), from
 * explicit offsets, or from a group's committed offsets (cl_group.h).
 */
#ifndef SKIFF_CL_CONSUMER_H
#define SKIFF_CL_CONSUMER_H

#include <stdbool.h>
#include <stdint.h>

#include "clients/cl_client.h"

#define CL_OFFSET_LATEST (-1)
#define CL_OFFSET_EARLIEST (-2)
#define CL_FETCH_PARTITION_BYTES_DEFAULT (1 << 20)
#define CL_FETCH_PARTITION_BYTES_MAX (64 << 20)   /* growth bound for one huge batch */
#define CL_FETCH_DECOMPRESS_CAP_BYTES ((size_t)64 << 20)

/* ListOffsets of every partition of `topic` (must be in the metadata cache)
 * at `timestamp` (CL_OFFSET_LATEST, CL_OFFSET_EARLIEST, or ms since the
 * epoch: the first offset whose timestamp is >= it, -1 when none).
 * out has n entries, indexed by partition; n = the topic's partition count. */
CL_MUST_CHECK int cl_list_offsets(cl_client_t *c, const char *topic, int64_t timestamp, int64_t *out, int32_t n,
                                  cl_err_t *e);

typedef struct cl_msg {
    const char *topic;
    int32_t partition;
    int64_t offset;
    int64_t timestamp;
    kp_bytes_t key;           /* null slice = null key */
    kp_bytes_t value;         /* null slice = tombstone */
    int32_t headers_count;
    kp_slice_t headers;       /* walk with kp_record_header_next */
} cl_msg_t;

/* Called per record; return false to stop the poll early (the record is
 * consumed: the position moves past it). */
typedef bool (*cl_msg_fn)(void *ctx, const cl_msg_t *m);

typedef struct cl_consumer {
    cl_client_t *cl;          /* not owned */
    char topic[256];
    int32_t npartitions;
    int64_t *pos;             /* next offset to read, per partition */
    int64_t *hw;              /* high watermark seen, -1 before any fetch */
    int max_wait_ms;
    int32_t partition_max_bytes;
    uint8_t *active;          /* per partition: 1 = fetch it (all 1 after open) */
    bool stopped;             /* a callback returned false */
} cl_consumer_t;

/* Looks the topic up; positions start at CL_OFFSET_EARLIEST's offsets only
 * after a seek. Close with cl_consumer_close even on failure. */
CL_MUST_CHECK int cl_consumer_open(cl_consumer_t *k, cl_client_t *cl, const char *topic, cl_err_t *e);
void cl_consumer_close(cl_consumer_t *k);
/* Every partition to the offset ListOffsets gives for `timestamp` (a
 * timestamp past the last record seeks to the end). */
CL_MUST_CHECK int cl_consumer_seek(cl_consumer_t *k, int64_t timestamp, cl_err_t *e);
/* One Fetch per leader; delivers records through fn. *delivered (may be
 * NULL) receives the number delivered. */
CL_MUST_CHECK int cl_consumer_poll(cl_consumer_t *k, cl_msg_fn fn, void *ctx, int64_t *delivered, cl_err_t *e);
/* Fetch only partition p (p < 0: every partition). */
void cl_consumer_only(cl_consumer_t *k, int32_t p);
/* True when every active partition's position is at its high watermark. */
bool cl_consumer_at_end(const cl_consumer_t *k);

#endif
