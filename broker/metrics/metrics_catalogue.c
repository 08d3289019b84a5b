/* The one place where skiff's metric names are declared (see
 * metrics_catalogue.h), plus the GET /metrics handler. */
#include "broker/metrics/metrics_catalogue.h"

#include <assert.h>

#include <event2/buffer.h>

/* Request latency in seconds: 0.5 ms .. 10 s, the spread between an
 * in-memory Metadata answer and a Fetch parked for its max_wait. */
static const double latency_buckets_s[] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};
#define N_LATENCY (uint32_t)(sizeof latency_buckets_s / sizeof latency_buckets_s[0])

/* Per-API series: Kafka has < 100 APIs. Per-topic and per-partition series
 * are bounded well above what one node should hold; past that they are
 * dropped and counted rather than grown. */
#define API_SERIES_MAX 128
/* (api, error) pairs: most APIs can answer only a handful of codes. */
#define API_ERROR_SERIES_MAX 2048
#define TOPIC_SERIES_MAX 4096
#define PARTITION_SERIES_MAX 16384
#define QUOTA_SERIES_MAX 4096       /* client quota entities in use (core/quota.h) */

#define C BK_MX_COUNTER
#define G BK_MX_GAUGE
#define H BK_MX_HISTOGRAM

static const bk_mx_desc_t catalogue[BK_MX_CATALOGUE_COUNT] = {
    [BK_MX_REQUESTS_TOTAL] = { "skiff_requests_total",
        "Kafka requests received, by API.", C, 1, { "api" }, 0, NULL, API_SERIES_MAX },
    [BK_MX_REQUEST_ERRORS_TOTAL] = { "skiff_request_errors_total",
        "Error codes in Kafka responses, by API and error (one per erroring field: a Produce "
        "answer with two failed partitions counts two).", C, 2, { "api", "error" }, 0, NULL,
        API_ERROR_SERIES_MAX },
    [BK_MX_REQUEST_LATENCY_SECONDS] = { "skiff_request_latency_seconds",
        "Time from a request's frame being read to its response being queued, by API.",
        H, 1, { "api" }, N_LATENCY, latency_buckets_s, API_SERIES_MAX },
    [BK_MX_BYTES_IN_TOTAL] = { "skiff_bytes_in_total",
        "Record batch bytes appended by producers, by topic.", C, 1, { "topic" }, 0, NULL,
        TOPIC_SERIES_MAX },
    [BK_MX_BYTES_OUT_TOTAL] = { "skiff_bytes_out_total",
        "Record batch bytes sent to consumers and followers, by topic.", C, 1, { "topic" },
        0, NULL, TOPIC_SERIES_MAX },
    [BK_MX_FETCH_RECORD_BYTES_TOTAL] = { "skiff_fetch_record_bytes_total",
        "Record bytes put in Fetch answers, by path: file (file ranges sent with sendfile, or "
        "by kTLS / the TLS pipe: never copied by skiff) or copy (read into memory: Fetch "
        "below v10, which needs batches inspected or down-converted).", C, 1, { "path" }, 0,
        NULL, 0 },
    [BK_MX_FETCH_CONVERTED_TOTAL] = { "skiff_fetch_converted_total",
        "Record sets (one partition of one answer) of Fetch below v10 read, checked for zstd and, "
        "below v4, down-converted, by where the work ran: worker (the worker pool, num.io.threads) "
        "or inline (the state loop, when the pool's queue was full).", C, 1, { "where" }, 0,
        NULL, 0 },
    [BK_MX_MESSAGES_IN_TOTAL] = { "skiff_messages_in_total",
        "Records appended by producers, by topic.", C, 1, { "topic" }, 0, NULL,
        TOPIC_SERIES_MAX },
    [BK_MX_PARTITIONS_LEADER] = { "skiff_partitions_leader",
        "Partitions this node leads.", G, 0, { 0 }, 0, NULL, 0 },
    [BK_MX_UNDER_REPLICATED_PARTITIONS] = { "skiff_under_replicated_partitions",
        "Partitions led by this node whose ISR is smaller than their replica set.",
        G, 0, { 0 }, 0, NULL, 0 },
    [BK_MX_OFFLINE_PARTITIONS] = { "skiff_offline_partitions",
        "Partitions without a live leader (reported by the active controller).",
        G, 0, { 0 }, 0, NULL, 0 },
    [BK_MX_ISR_SHRINKS_TOTAL] = { "skiff_isr_shrinks_total",
        "Replicas removed from an ISR of a partition this node leads.", C, 0, { 0 }, 0,
        NULL, 0 },
    [BK_MX_ISR_EXPANDS_TOTAL] = { "skiff_isr_expands_total",
        "Replicas added to an ISR of a partition this node leads.", C, 0, { 0 }, 0, NULL, 0 },
    [BK_MX_SCRUB_BYTES_TOTAL] = { "skiff_scrub_bytes_total",
        "Bytes of rolled segments the scrubber re-read and found good (skiff.scrubber.*).", C, 0, { 0 }, 0,
        NULL, 0 },
    [BK_MX_SCRUB_CORRUPTIONS_TOTAL] = { "skiff_scrub_corruptions_total",
        "Corrupt batches the scrubber found in rolled segments (each logged with file, byte and offset).", C, 0,
        { 0 }, 0, NULL, 0 },
    [BK_MX_RAFT_EPOCH] = { "skiff_raft_epoch",
        "Current epoch (term) of the metadata quorum as seen by this node.", G, 0, { 0 }, 0,
        NULL, 0 },
    [BK_MX_RAFT_LEADER_ID] = { "skiff_raft_leader_id",
        "Node id of the metadata quorum leader, -1 when unknown.", G, 0, { 0 }, 0, NULL, 0 },
    [BK_MX_RAFT_COMMIT_LAG_RECORDS] = { "skiff_raft_commit_lag_records",
        "Metadata log records on this node not yet committed (log end - high watermark).",
        G, 0, { 0 }, 0, NULL, 0 },
    [BK_MX_RAFT_ELECTIONS_TOTAL] = { "skiff_raft_elections_total",
        "Elections this node started as a candidate.", C, 0, { 0 }, 0, NULL, 0 },
    [BK_MX_LOG_SIZE_BYTES] = { "skiff_log_size_bytes",
        "Bytes on disk of each partition log held by this node.", G, 2,
        { "topic", "partition" }, 0, NULL, PARTITION_SERIES_MAX },
    [BK_MX_CONNECTIONS] = { "skiff_connections",
        "Open client connections, by listener.", G, 1, { "listener" }, 0, NULL, 0 },
    [BK_MX_CONNECTIONS_ACCEPTED_TOTAL] = { "skiff_connections_accepted_total",
        "Connections accepted, by listener.", C, 1, { "listener" }, 0, NULL, 0 },
    [BK_MX_PURGATORY_OPERATIONS] = { "skiff_purgatory_operations",
        "Requests waiting in a purgatory (produce acks=all, fetch max_wait).", G, 1,
        { "purgatory" }, 0, NULL, 0 },
    [BK_MX_OPEN_FDS] = { "skiff_open_fds",
        "File descriptors open in the process.", G, 0, { 0 }, 0, NULL, 0 },
    [BK_MX_OPEN_FDS_LIMIT] = { "skiff_open_fds_limit",
        "Soft limit on open file descriptors (RLIMIT_NOFILE).", G, 0, { 0 }, 0, NULL, 0 },
    [BK_MX_REQUEST_MEMORY_BYTES] = { "skiff_request_memory_bytes",
        "Request bytes buffered above the read chunk over all connections (counted against "
        "queued.max.request.bytes).", G, 0, { 0 }, 0, NULL, 0 },
    [BK_MX_REQUEST_MEMORY_BUDGET_BYTES] = { "skiff_request_memory_budget_bytes",
        "queued.max.request.bytes; -1 when unbounded.", G, 0, { 0 }, 0, NULL, 0 },
    [BK_MX_REQUEST_MEMORY_WAITING] = { "skiff_request_memory_waiting_connections",
        "Connections not read because the request memory budget is spent.", G, 0, { 0 }, 0, NULL, 0 },
    [BK_MX_ACCEPT_FAILURES_TOTAL] = { "skiff_accept_failures_total",
        "Failed accepts, by reason (fds: EMFILE/ENFILE).", C, 1, { "reason" }, 0, NULL, 0 },
    [BK_MX_CONNECTIONS_CLOSED_TOTAL] = { "skiff_connections_closed_total",
        "Connections closed by the node, by reason (idle: connections.max.idle.ms; write_stall: "
        "socket.write.stall.ms; bad_frame).", C, 1, { "reason" }, 0, NULL, 0 },
    [BK_MX_CONNECTIONS_REFUSED_TOTAL] = { "skiff_connections_refused_total",
        "Connections closed at accept, by limit (max_connections, per_ip).", C, 1, { "limit" }, 0,
        NULL, 0 },
    [BK_MX_NET_LOOP_CONNECTIONS] = { "skiff_net_loop_connections",
        "Kafka connections whose socket each network loop serves (num.network.threads; loop 0 is the "
        "state loop).", G, 1, { "loop" }, 0, NULL, 0 },
    [BK_MX_NET_LOOP_FRAMES_TOTAL] = { "skiff_net_loop_frames_total",
        "Requests a network loop handed to the state loop (0 for loop 0, which needs no hand-off).", C, 1,
        { "loop" }, 0, NULL, 0 },
    [BK_MX_MEM_POOL_BLOCKS_TOTAL] = { "skiff_mem_pool_blocks_total",
        "Block pool of the request path (frames, response buffers): fresh = blocks malloc'd because "
        "the pool had none free (flat once warm), unpooled = requests above 1 MiB, released = free "
        "blocks given back to the system past the pool's bounds.", C, 1, { "event" }, 0, NULL, 0 },
    [BK_MX_MEM_POOL_DEPOT_BYTES] = { "skiff_mem_pool_depot_bytes",
        "Bytes of free blocks the block pool keeps for any thread (at most 1 MiB per size class).", G, 0,
        { 0 }, 0, NULL, 0 },
    [BK_MX_LOG_LINES_SUPPRESSED_TOTAL] = { "skiff_log_lines_suppressed_total",
        "Connection log lines suppressed by the rate limit.", C, 0, { 0 }, 0, NULL, 0 },
    [BK_MX_CLEANER_PASSES_TOTAL] = { "skiff_cleaner_passes_total",
        "Log cleaner passes committed (compacted logs).", C, 0, { 0 }, 0, NULL, 0 },
    [BK_MX_CLEANER_BYTES_READ_TOTAL] = { "skiff_cleaner_bytes_read_total",
        "Bytes of log the cleaner read (dirty and cleaned sections).", C, 0, { 0 }, 0, NULL, 0 },
    [BK_MX_CLEANER_BYTES_WRITTEN_TOTAL] = { "skiff_cleaner_bytes_written_total",
        "Bytes of cleaned segments the cleaner wrote.", C, 0, { 0 }, 0, NULL, 0 },
    [BK_MX_CLEANER_RECORDS_REMOVED_TOTAL] = { "skiff_cleaner_records_removed_total",
        "Records the cleaner removed: superseded, aborted, expired tombstones.", C, 0, { 0 }, 0, NULL, 0 },
    [BK_MX_CLEANER_LAST_PASS_SECONDS] = { "skiff_cleaner_last_pass_timestamp_seconds",
        "Unix time of the cleaner's last committed pass (0 = none yet).", G, 0, { 0 }, 0, NULL, 0 },
    [BK_MX_CLEANER_MAX_DIRTY_RATIO] = { "skiff_cleaner_max_dirty_ratio",
        "Largest dirty ratio of a compacted log held here, at the cleaner's last run.", G, 0, { 0 }, 0,
        NULL, 0 },
    [BK_MX_CLEANER_UNCLEANABLE_LOGS] = { "skiff_cleaner_uncleanable_logs",
        "Compacted logs the cleaner gave up on (a build failed, e.g. a corrupt segment).", G, 0, { 0 }, 0,
        NULL, 0 },
    /* client quotas (core/quota.h): one series per quota entity as it
     * applies to a client; user / client_id "" = no such part */
    [BK_MX_QUOTA_USED_TOTAL] = { "skiff_quota_used_total",
        "Use recorded against a client quota: bytes (producer_byte_rate, consumer_byte_rate) or ms of loop "
        "time (request_percentage).", C, 3, { "quota", "user", "client_id" }, 0, NULL, QUOTA_SERIES_MAX },
    [BK_MX_QUOTA_THROTTLE_MS_TOTAL] = { "skiff_quota_throttle_time_ms_total",
        "Throttle time handed out for a client quota (throttle_time_ms, channel muted).", C, 3,
        { "quota", "user", "client_id" }, 0, NULL, QUOTA_SERIES_MAX },
    [BK_MX_QUOTA_THROTTLED_TOTAL] = { "skiff_quota_throttled_requests_total",
        "Requests answered with a throttle time for a client quota.", C, 3, { "quota", "user", "client_id" }, 0,
        NULL, QUOTA_SERIES_MAX },
    [BK_MX_QUOTA_LIMIT] = { "skiff_quota_limit",
        "The client quota in force per second (bytes, or ms of loop time = request_percentage x 10).", G, 3,
        { "quota", "user", "client_id" }, 0, NULL, QUOTA_SERIES_MAX },
    [BK_MX_PRODUCE_BATCHES_PRECHECKED_TOTAL] = { "skiff_produce_batches_prechecked_total",
        "Produced batches appended whose CRC and records were checked before the state loop "
        "(on the network thread that read them).", C, 0, { 0 }, 0, NULL, 0 },
    [BK_MX_QUOTA_UNTRACKED_TOTAL] = { "skiff_quota_untracked_total",
        "Client quota uses not tracked (the bounded table was full of entries still owing credit): "
        "those requests were not throttled.", C, 0, { 0 }, 0, NULL, 0 },
};

#undef C
#undef G
#undef H

const bk_mx_desc_t *bk_mx_catalogue_desc(bk_mx_id_t id) {
    assert((uint32_t)id < BK_MX_CATALOGUE_COUNT);
    return &catalogue[id];
}

int bk_mx_catalogue_register(bk_mx_t *m) {
    for (uint32_t i = 0; i < BK_MX_CATALOGUE_COUNT; i++) {
        uint32_t id;
        int rc = bk_mx_register(m, &catalogue[i], &id);
        assert(rc != KP_ERR_BAD_VALUE && rc != KP_ERR_TOO_LARGE);
        if (rc != KP_OK) return rc;
        assert(id == i); /* the registry was empty */
    }
    return KP_OK;
}

void bk_mx_serve(bk_http_req_t *req, void *ctx) {
    bk_mx_t *m = ctx;
    assert(m != NULL);
    if (bk_mx_render(m, bk_http_body(req)) != KP_OK) {
        bk_http_reply_error(req, 500, "metrics rendering ran out of memory");
        return;
    }
    bk_http_reply_raw(req, 200, BK_MX_CONTENT_TYPE);
}
