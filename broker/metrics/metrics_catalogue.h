/* The catalogue of skiff's metrics: every name, help text, type and label
 * set in one table (metrics_catalogue.c), registered in enum order so the
 * enum value is the metric id:
 *
 *   bk_mx_t *m = bk_mx_new();
 *   if (m == NULL || bk_mx_catalogue_register(m) != KP_OK) fail;
 *   bk_mx_series_t *h = bk_mx_series(m, BK_MX_REQUESTS_TOTAL,
 *                                    (const char *[]){ "Produce" });
 *   bk_mx_inc(h, 1);
 *
 * Names follow Prometheus conventions: skiff_ prefix, base units (seconds,
 * bytes) last, _total on counters. */
#ifndef SKIFF_BROKER_METRICS_CATALOGUE_H
#define SKIFF_BROKER_METRICS_CATALOGUE_H

#include "broker/http/admin.h"
#include "broker/metrics/metrics.h"

typedef enum {
    BK_MX_REQUESTS_TOTAL,          /* counter   {api} */
    BK_MX_REQUEST_ERRORS_TOTAL,    /* counter   {api} top-level or any partition error */
    BK_MX_REQUEST_LATENCY_SECONDS, /* histogram {api} frame read -> response queued */
    BK_MX_BYTES_IN_TOTAL,          /* counter   {topic} produced record batch bytes */
    BK_MX_BYTES_OUT_TOTAL,         /* counter   {topic} fetched record batch bytes */
    BK_MX_FETCH_RECORD_BYTES_TOTAL, /* counter  {path} ("file": sendfile, "copy": read into memory) */
    BK_MX_FETCH_CONVERTED_TOTAL,   /* counter   {where} ("worker", "inline") Fetch < v10 record sets */
    BK_MX_MESSAGES_IN_TOTAL,       /* counter   {topic} produced records */
    BK_MX_PARTITIONS_LEADER,       /* gauge     partitions this node leads */
    BK_MX_UNDER_REPLICATED_PARTITIONS, /* gauge led here with ISR < replicas */
    BK_MX_OFFLINE_PARTITIONS,      /* gauge     cluster-wide, no live leader */
    BK_MX_ISR_SHRINKS_TOTAL,       /* counter */
    BK_MX_ISR_EXPANDS_TOTAL,       /* counter */
    BK_MX_SCRUB_BYTES_TOTAL,       /* counter   rolled-segment bytes re-read by the scrubber */
    BK_MX_SCRUB_CORRUPTIONS_TOTAL, /* counter   corrupt batches the scrubber found */
    BK_MX_RAFT_EPOCH,              /* gauge     current raft epoch (term) */
    BK_MX_RAFT_LEADER_ID,          /* gauge     -1 when unknown */
    BK_MX_RAFT_COMMIT_LAG_RECORDS, /* gauge     log end offset - committed offset */
    BK_MX_RAFT_ELECTIONS_TOTAL,    /* counter   elections this node started */
    BK_MX_LOG_SIZE_BYTES,          /* gauge     {topic, partition} (collector) */
    BK_MX_CONNECTIONS,             /* gauge     {listener} open now */
    BK_MX_CONNECTIONS_ACCEPTED_TOTAL, /* counter {listener} */
    BK_MX_PURGATORY_OPERATIONS,    /* gauge     {purgatory} ("produce", "fetch") */
    BK_MX_OPEN_FDS,                /* gauge     descriptors open in the process */
    BK_MX_OPEN_FDS_LIMIT,          /* gauge     RLIMIT_NOFILE soft limit */
    BK_MX_REQUEST_MEMORY_BYTES,    /* gauge     request buffers counted against the budget */
    BK_MX_REQUEST_MEMORY_BUDGET_BYTES, /* gauge queued.max.request.bytes, -1 unbounded */
    BK_MX_REQUEST_MEMORY_WAITING,  /* gauge     connections paused for the budget */
    BK_MX_ACCEPT_FAILURES_TOTAL,   /* counter   {reason} ("fds", "other") */
    BK_MX_CONNECTIONS_CLOSED_TOTAL,/* counter   {reason} ("idle", "write_stall", "bad_frame") */
    BK_MX_CONNECTIONS_REFUSED_TOTAL, /* counter {limit} ("max_connections", "per_ip") */
    BK_MX_NET_LOOP_CONNECTIONS,    /* gauge     {loop} Kafka connections served by each network loop */
    BK_MX_NET_LOOP_FRAMES_TOTAL,   /* counter   {loop} frames a network loop handed to the state loop */
    BK_MX_MEM_POOL_BLOCKS_TOTAL,   /* counter   {event} block pool (net/mem.h): fresh, unpooled, released */
    BK_MX_MEM_POOL_DEPOT_BYTES,    /* gauge     bytes of free blocks in the block pool's depot */
    BK_MX_LOG_LINES_SUPPRESSED_TOTAL, /* counter rate-limited log lines not printed */
    BK_MX_CLEANER_PASSES_TOTAL,    /* counter   log cleaner passes committed */
    BK_MX_CLEANER_BYTES_READ_TOTAL,   /* counter */
    BK_MX_CLEANER_BYTES_WRITTEN_TOTAL, /* counter */
    BK_MX_CLEANER_RECORDS_REMOVED_TOTAL, /* counter */
    BK_MX_CLEANER_LAST_PASS_SECONDS, /* gauge   wall clock of the last pass, 0 = none */
    BK_MX_CLEANER_MAX_DIRTY_RATIO, /* gauge     largest dirty ratio of a compacted log */
    BK_MX_CLEANER_UNCLEANABLE_LOGS, /* gauge    logs the cleaner gave up on */
    BK_MX_QUOTA_USED_TOTAL,        /* counter   {quota,user,client_id} bytes / ms of loop time recorded */
    BK_MX_QUOTA_THROTTLE_MS_TOTAL, /* counter   {quota,user,client_id} throttle time handed out */
    BK_MX_QUOTA_THROTTLED_TOTAL,   /* counter   {quota,user,client_id} requests throttled */
    BK_MX_QUOTA_LIMIT,             /* gauge     {quota,user,client_id} per second */
    BK_MX_PRODUCE_BATCHES_PRECHECKED_TOTAL, /* counter produced batches whose CRC and records
                                   were checked before the state loop (api/prepare.h) */
    BK_MX_QUOTA_UNTRACKED_TOTAL,   /* counter   quota uses not tracked (table full: not throttled) */
    BK_MX_CATALOGUE_COUNT
} bk_mx_id_t;

/* The table entry of metric `id` (< BK_MX_CATALOGUE_COUNT). */
const bk_mx_desc_t *bk_mx_catalogue_desc(bk_mx_id_t id);

/* Registers the whole catalogue into `m`, which must be empty (asserted), so
 * each metric's id equals its bk_mx_id_t. Returns KP_OK or KP_ERR_NOMEM (the
 * table itself is checked by the unit test, so BAD_VALUE is asserted). */
KP_MUST_CHECK int bk_mx_catalogue_register(bk_mx_t *m);

/* Admin route handler for GET /metrics; ctx is the node's bk_mx_t.
 * Replies 200 with the rendering (BK_MX_CONTENT_TYPE), or 500 when it
 * could not be built. */
void bk_mx_serve(bk_http_req_t *req, void *ctx);

#endif
