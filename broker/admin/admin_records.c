/* broker/admin/admin_records.c — see admin_records.h.
 *
 * Cost: one st_log_read (index lookups, no data read) and at most
 * ST_READ_RANGES_MAX dup(2) on the loop; the worker reads at most
 * BK_ADMIN_RECORDS_READ_MAX_BYTES (or the first batch, if larger: MIN_ONE,
 * as Fetch) and decompresses each batch once. The descriptors are
 * duplicated so that retention or compaction closing a segment meanwhile
 * cannot make the worker read a reused descriptor. */
#include "broker/admin/admin_records.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "broker/admin/admin_ops.h"
#include "broker/net/worker.h"
#include "broker/replication/parts.h"
#include "protocol/kp_base64.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_compress.h"
#include "storage/st_log.h"

#define COUNT_DEFAULT 20
#define READ_DEFAULT_BYTES (1u << 20)

/* Base64 text of a field cut at BK_ADMIN_RECORDS_FIELD_MAX_BYTES, and its NUL. */
#define B64_MAX_BYTES (KP_B64_LEN(BK_ADMIN_RECORDS_FIELD_MAX_BYTES) + 1)

/* Writes b as base64 (null as null) through `out`, a scratch buffer of
 * B64_MAX_BYTES (heap: 87 KiB is too much for a worker's stack habits). */
static void b64(bk_http_json_t *j, kp_bytes_t b, char *out) {
    if (kp_slice_is_null(b)) { bk_http_json_null(j); return; }
    size_t n = b.len < BK_ADMIN_RECORDS_FIELD_MAX_BYTES ? b.len : BK_ADMIN_RECORDS_FIELD_MAX_BYTES;
    size_t o = 0;
    int rc = kp_b64_encode(b.p, n, out, B64_MAX_BYTES, &o);
    assert(rc == KP_OK);   /* the scratch buffer fits the longest field */
    (void)rc;
    bk_http_json_str_n(j, out, o);
}

/* One record's object; false (with *why) on malformed headers. */
static bool record_json(bk_http_json_t *j, const kp_record_t *rec, char *scratch, const char **why) {
    bk_http_json_obj_begin(j);
    bk_http_json_kv_i64(j, "offset", rec->offset);
    bk_http_json_kv_i64(j, "timestamp", rec->timestamp);
    bk_http_json_key(j, "key");
    b64(j, rec->key, scratch);
    bk_http_json_key(j, "value");
    b64(j, rec->value, scratch);
    bk_http_json_kv_bool(j, "truncated", rec->key.len > BK_ADMIN_RECORDS_FIELD_MAX_BYTES ||
                                         rec->value.len > BK_ADMIN_RECORDS_FIELD_MAX_BYTES);
    bk_http_json_key(j, "headers");
    bk_http_json_arr_begin(j);
    kp_rd_t hr;
    kp_rd_init(&hr, rec->headers.p, rec->headers.len);
    kp_str_t hk;
    kp_bytes_t hv;
    int rc = 0;   /* no headers: nothing read, nothing wrong */
    for (int32_t i = 0; i < rec->headers_count && (rc = kp_record_header_next(&hr, &hk, &hv)) == 1; i++) {
        bk_http_json_obj_begin(j);
        bk_http_json_key(j, "key");
        bk_http_json_str_n(j, (const char *)hk.p, hk.len < BK_ADMIN_RECORDS_FIELD_MAX_BYTES ? hk.len : BK_ADMIN_RECORDS_FIELD_MAX_BYTES);
        bk_http_json_key(j, "value");
        b64(j, hv, scratch);
        bk_http_json_obj_end(j);
    }
    bk_http_json_arr_end(j);
    bk_http_json_obj_end(j);
    if (rec->headers_count > 0 && rc < 0) { *why = "malformed record headers"; return false; }
    return true;
}

void bk_admin_records_json(const uint8_t *buf, size_t len, int64_t from, int32_t count_max,
                           bk_http_json_t *j, int64_t *next, const char **why) {
    *why = NULL;
    *next = from;
    int32_t written = 0;
    kp_rd_t r;
    kp_rd_init(&r, buf, len);
    kp_arena_t arena;
    kp_arena_init(&arena, BK_ADMIN_RECORDS_BATCH_MAX_BYTES + (1u << 20));
    bk_http_json_arr_begin(j);
    char *scratch = malloc(B64_MAX_BYTES);
    if (!scratch) { *why = "out of memory"; count_max = 0; }
    while (written < count_max && kp_rd_remaining(&r) > 0) {
        kp_batch_t b;
        int rc = kp_batch_read(&r, &b);
        if (rc == KP_ERR_TRUNCATED) break;              /* a partial batch at the end of a read */
        if (rc != KP_OK) { *why = "malformed record batch"; break; }
        if (kp_batch_verify_crc(&b) != KP_OK) { *why = "record batch CRC mismatch"; break; }
        if (kp_batch_is_control(&b) || kp_batch_last_offset(&b) < from) continue;
        const uint8_t *recs;
        size_t rlen;
        kp_arena_reset(&arena);
        if (kp_batch_records(&b, &arena, BK_ADMIN_RECORDS_BATCH_MAX_BYTES, &recs, &rlen) != KP_OK) {
            *why = "record batch cannot be decompressed (or is larger than 16 MiB)";
            break;
        }
        kp_record_iter_t it;
        kp_record_iter_init(&it, &b, recs, rlen);
        kp_record_t rec;
        while (written < count_max && (rc = kp_record_iter_next(&it, &rec)) == 1) {
            if (rec.offset < from) continue;
            if (!record_json(j, &rec, scratch, why)) break;
            written++;
            *next = rec.offset + 1;
        }
        if (*why) break;
        if (rc < 0) { *why = "malformed record"; break; }
    }
    bk_http_json_arr_end(j);
    free(scratch);
    kp_arena_free(&arena);
}

typedef struct {
    bk_node_t *node;
    bk_http_req_t *req;
    int32_t node_id;                 /* copied: the worker reads no node state */
    char topic[256];
    int32_t partition;
    int64_t from, log_start, hw;
    int32_t count;
    int fds[ST_READ_RANGES_MAX];
    uint64_t pos[ST_READ_RANGES_MAX], len[ST_READ_RANGES_MAX];
    int nranges;
    uint64_t total;
    struct evbuffer *out;            /* built on the worker */
    char err[160];
} read_job_t;

static void job_free(read_job_t *c) {
    for (int i = 0; i < c->nranges; i++)
        if (c->fds[i] >= 0) close(c->fds[i]);
    if (c->out) evbuffer_free(c->out);
    free(c);
}

/* Worker: read the ranges, decode, write the whole JSON document. */
static int read_job(void *arg) {
    read_job_t *c = arg;
    uint8_t *buf = malloc(c->total ? c->total : 1);
    c->out = evbuffer_new();
    if (!buf || !c->out) { free(buf); snprintf(c->err, sizeof c->err, "out of memory"); return KP_ERR_NOMEM; }
    size_t got = 0;
    for (int i = 0; i < c->nranges; i++) {
        for (uint64_t done = 0; done < c->len[i];) {
            ssize_t n = pread(c->fds[i], buf + got, c->len[i] - done, (off_t)(c->pos[i] + done));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                snprintf(c->err, sizeof c->err, "reading the log: %s", n < 0 ? strerror(errno) : "unexpected end of file");
                free(buf);
                return KP_ERR_BAD_VALUE;
            }
            done += (uint64_t)n;
            got += (size_t)n;
        }
    }
    bk_http_json_t j;
    bk_http_json_init(&j, c->out);
    bk_http_json_obj_begin(&j);
    bk_http_json_kv_str(&j, "topic", c->topic);
    bk_http_json_kv_i64(&j, "partition", c->partition);
    bk_http_json_kv_i64(&j, "node_id", c->node_id);
    bk_http_json_kv_i64(&j, "log_start_offset", c->log_start);
    bk_http_json_kv_i64(&j, "high_watermark", c->hw);
    bk_http_json_kv_i64(&j, "from_offset", c->from);
    bk_http_json_key(&j, "records");
    int64_t next;
    const char *why;
    bk_admin_records_json(buf, got, c->from, c->count, &j, &next, &why);
    bk_http_json_kv_i64(&j, "next_offset", next);
    bk_http_json_kv_str(&j, "error", why);
    bk_http_json_obj_end(&j);
    free(buf);
    if (bk_http_json_finish(&j) != KP_OK) { snprintf(c->err, sizeof c->err, "out of memory"); return KP_ERR_NOMEM; }
    return KP_OK;
}

static void read_done(void *arg, int status) {
    read_job_t *c = arg;
    /* bk_http_stop (node shutdown) already freed the request: drop it */
    if (c->node->admin) {
        if (status == KP_OK && evbuffer_add_buffer(bk_http_body(c->req), c->out) == 0)
            bk_http_reply_raw(c->req, 200, "application/json");
        else
            bk_http_reply_error(c->req, status == BK_NET_ERR_CANCELLED ? 503 : 500, "%s",
                                c->err[0] ? c->err : "the read was cancelled (node stopping)");
    }
    job_free(c);
}

/* Query integer `k` in [lo, hi], `def` when absent; false once answered 400. */
static bool query_i64(bk_http_req_t *req, const char *k, int64_t lo, int64_t hi, int64_t def, int64_t *out) {
    const char *s = bk_http_query(req, k);
    *out = def;
    if (!s) return true;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi) {
        bk_http_reply_error(req, 400, "%s must be an integer in [%lld, %lld]", k, (long long)lo, (long long)hi);
        return false;
    }
    *out = v;
    return true;
}

static void get_records(bk_http_req_t *req, void *ctx) {
    bk_node_t *n = ctx;
    int32_t partition;
    const bk_meta_topic_t *t = bk_admin_partition_param(req, n, &partition);
    if (!t) return;
    int64_t offset, ts, count, max_bytes;
    if (!query_i64(req, "offset", 0, INT64_MAX, -1, &offset) || !query_i64(req, "timestamp", INT64_MIN, INT64_MAX, INT64_MIN, &ts) ||
        !query_i64(req, "count", 1, BK_ADMIN_RECORDS_COUNT_MAX, COUNT_DEFAULT, &count) ||
        !query_i64(req, "max_bytes", 1, BK_ADMIN_RECORDS_READ_MAX_BYTES, READ_DEFAULT_BYTES, &max_bytes))
        return;
    if ((offset >= 0) == (ts != INT64_MIN)) {
        bk_http_reply_error(req, 400, "give exactly one of offset and timestamp");
        return;
    }
    bk_repl_part_t *bp = bk_repl_parts_get(n->parts, &t->id, partition);
    if (!bp || !bp->log) {
        bk_http_reply_error(req, 409, "node %d holds no replica of %s-%d (replicas on nodes of /v1/topics/%s)", n->id,
                            t->name, partition, t->name);
        return;
    }
    int64_t start = st_log_start_offset(bp->log), hw = st_log_high_watermark(bp->log);
    if (ts != INT64_MIN) {
        int64_t found_ts;
        /* as ListOffsets by timestamp: none that late -> the end (nothing to show) */
        if (st_log_offset_for_time(bp->log, ts, &offset, &found_ts) != KP_OK) offset = hw;
    }
    if (offset < start) offset = start;   /* deleted by retention: the first kept record */
    read_job_t *c = calloc(1, sizeof *c);
    if (!c) { bk_http_reply_error(req, 500, "out of memory"); return; }
    *c = (read_job_t){ .node = n, .req = req, .node_id = n->id, .partition = partition, .from = offset, .log_start = start, .hw = hw,
                       .count = (int32_t)count };
    snprintf(c->topic, sizeof c->topic, "%s", t->name);
    st_read_result_t rr = { 0 };
    if (offset < hw && st_log_read(bp->log, offset, (uint64_t)max_bytes, hw, ST_READ_MIN_ONE, &rr) != KP_OK) {
        free(c);
        bk_http_reply_error(req, 503, "cannot read %s-%d at offset %lld on node %d", t->name, partition, (long long)offset, n->id);
        return;
    }
    if (rr.total_bytes > BK_ADMIN_RECORDS_BATCH_MAX_BYTES) {
        free(c);
        bk_http_reply_error(req, 413, "the batch at offset %lld is larger than 16 MiB", (long long)offset);
        return;
    }
    for (int i = 0; i < rr.n; i++) {
        c->fds[i] = dup(rr.r[i].fd);
        c->pos[i] = rr.r[i].pos;
        c->len[i] = rr.r[i].len;
        c->nranges = i + 1;
        if (c->fds[i] < 0) {
            job_free(c);
            bk_http_reply_error(req, 503, "no file descriptor free to read the log (%s)", strerror(errno));
            return;
        }
    }
    c->total = rr.total_bytes;
    if (bk_net_worker_submit(n->pool, read_job, read_done, c) != KP_OK) {
        job_free(c);
        bk_http_reply_error(req, 503, "the worker pool is busy; retry");
    }
}

int bk_admin_records_add(bk_node_t *n) {
    return bk_http_route(n->admin, "GET", "/v1/partitions/{topic}/{partition}/records", get_records, n);
}
