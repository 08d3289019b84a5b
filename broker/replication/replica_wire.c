/* broker/replication/replica_wire.c — replica fetch bytes; see replica_wire.h. */
#include "broker/replication/replica_wire.h"
#include "broker/net/mem.h"

#include <stdlib.h>
#include <string.h>

#include "kp_msgs.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_header.h"

#define RW_FIXED_BYTES 256        /* header + top-level fields */
#define RW_PART_BYTES 64          /* one topic entry with one partition (v13) */

int bk_repl_rw_fetch_encode(const bk_repl_rw_fetch_opts_t *o, const bk_repl_rw_part_t *parts, size_t n, uint8_t **out,
                       size_t *len) {
    if (n == 0 || n > INT32_MAX / RW_PART_BYTES) return KP_ERR_BAD_VALUE;
    kp_fetch_request_t q;
    kp_fetch_request_init(&q);
    q.replica_id = o->replica_id;
    q.max_wait_ms = o->max_wait_ms;
    q.min_bytes = o->min_bytes;
    q.max_bytes = o->max_bytes;
    q.session_id = 0;
    q.session_epoch = -1;
    /* per replica fetch: blocks of the pool, not malloc (issue 19) */
    kp_fetch_request_fetch_topic_t *ts = bk_net_mem_alloc(n * sizeof *ts);
    kp_fetch_request_fetch_partition_t *ps = bk_net_mem_alloc(n * sizeof *ps);
    size_t cap = RW_FIXED_BYTES + n * RW_PART_BYTES;
    uint8_t *buf = bk_net_mem_alloc(cap);
    int rc = ts && ps && buf ? KP_OK : KP_ERR_NOMEM;
    for (size_t i = 0; i < n && rc == KP_OK; i++) {
        kp_fetch_request_fetch_topic_init(&ts[i]);
        kp_fetch_request_fetch_partition_init(&ps[i]);
        memcpy(ts[i].topic_id.b, parts[i].topic_id, 16);
        ps[i].partition = parts[i].partition;
        ps[i].current_leader_epoch = parts[i].current_leader_epoch;
        ps[i].fetch_offset = parts[i].fetch_offset;
        ps[i].last_fetched_epoch = parts[i].last_fetched_epoch;
        ps[i].partition_max_bytes = o->partition_max_bytes > 0 ? o->partition_max_bytes : 1;
        ts[i].partitions.items = &ps[i];
        ts[i].partitions.count = 1;
    }
    q.topics.items = ts;
    q.topics.count = (int32_t)n;
    kp_request_header_t h = { KP_API_FETCH, BK_REPL_RW_FETCH_VERSION, o->correlation_id,
                              kp_slice_cstr("skiff-replica-fetcher") };
    kp_wr_t w;
    if (rc == KP_OK) {
        kp_wr_init(&w, buf, cap);
        rc = kp_request_encode(&w, &h, &q);
    }
    bk_net_mem_free(ts);
    bk_net_mem_free(ps);
    if (rc != KP_OK) { bk_net_mem_free(buf); return rc; }
    *out = buf;
    *len = w.pos;
    return KP_OK;
}

uint32_t bk_repl_rw_describe_batches(const uint8_t *recs, size_t len, bk_repl_batch_t *out, size_t *sizes,
                                uint32_t max) {
    if (!recs) return 0;
    if (max > BK_REPL_BATCHES_MAX) max = BK_REPL_BATCHES_MAX;
    kp_rd_t rd;
    kp_rd_init(&rd, recs, len);
    uint32_t n = 0;
    while (kp_rd_remaining(&rd) > 0 && n < max) {
        kp_batch_t b;
        if (kp_batch_read(&rd, &b) != KP_OK) break;
        out[n] = (bk_repl_batch_t){ b.base_offset, kp_batch_last_offset(&b), b.partition_leader_epoch };
        sizes[n++] = b.size;
    }
    return n;
}

size_t bk_repl_rw_answer_arena_bytes(size_t n_asked, size_t frame_len, int32_t max_bytes) {
    size_t body = max_bytes > 0 ? (size_t)max_bytes : 0;
    if (frame_len < body) body = frame_len;          /* aborted-txn lists are within the bytes present */
    return BK_REPL_RW_ANSWER_FIXED_BYTES + n_asked * BK_REPL_RW_ANSWER_PART_BYTES + body;
}

int bk_repl_rw_fetch_decode(const uint8_t *frame, size_t len, size_t n_asked, int32_t max_bytes, kp_arena_t *a,
                            int32_t *corr, const void **resp) {
    /* the caller's arena, reused across answers: emptied (keeping one
     * chunk, so a steady stream of answers allocates nothing) and capped
     * for this one */
    kp_arena_reset_retain(a, BK_REPL_RW_ARENA_KEEP_BYTES);
    a->cap_bytes = bk_repl_rw_answer_arena_bytes(n_asked, len, max_bytes);
    void *body = NULL;
    int rc = kp_response_decode(KP_API_FETCH, BK_REPL_RW_FETCH_VERSION, frame, len, corr, &body, a);
    if (rc != KP_OK) return rc;
    *resp = body;
    return KP_OK;
}

const kp_fetch_response_partition_data_t *bk_repl_rw_answer_find(const kp_fetch_response_t *r, bk_repl_rw_cursor_t *c,
                                                                 const uint8_t topic_id[16], int32_t partition) {
    /* the next entry in answer order (skipping topic entries used up) */
    while (c->topic < r->responses.count && c->part >= r->responses.items[c->topic].partitions.count) {
        c->topic++;
        c->part = 0;
    }
    if (c->topic < r->responses.count) {
        const kp_fetch_response_fetchable_topic_response_t *t = &r->responses.items[c->topic];
        if (c->part >= 0 && memcmp(t->topic_id.b, topic_id, 16) == 0 &&
            t->partitions.items[c->part].partition_index == partition)
            return &t->partitions.items[c->part++];
    }
    for (int32_t i = 0; i < r->responses.count; i++) {
        const kp_fetch_response_fetchable_topic_response_t *t = &r->responses.items[i];
        if (memcmp(t->topic_id.b, topic_id, 16) != 0) continue;
        for (int32_t k = 0; k < t->partitions.count; k++)
            if (t->partitions.items[k].partition_index == partition) {
                *c = (bk_repl_rw_cursor_t){ i, k + 1 };
                return &t->partitions.items[k];
            }
    }
    return NULL;
}

size_t bk_repl_rw_rr_pick(const uint32_t *pos, size_t n, uint32_t cursor, size_t max, uint32_t *picked) {
    size_t first = 0;                 /* first position >= cursor (n: none, wrap to 0) */
    while (first < n && pos[first] < cursor) first++;
    size_t cnt = 0;
    for (size_t k = 0; k < n && cnt < max; k++) picked[cnt++] = (uint32_t)((first + k) % n);
    return cnt;
}

uint32_t bk_repl_rw_rr_next(const uint32_t *req_pos, const bool *got_data, size_t n, bool capped, uint32_t cursor) {
    for (size_t i = n; i-- > 0;)
        if (got_data[i]) return req_pos[i] + 1;
    if (capped && n > 0) return req_pos[n - 1] + 1;
    return cursor;
}
