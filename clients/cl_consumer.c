/* cl_consumer.c — ListOffsets and Fetch (see cl_consumer.h). */
#include "clients/cl_consumer.h"

#include <stdlib.h>
#include <string.h>

#include "protocol/kp_batch.h"
#include "protocol/kp_compress.h"
#include "protocol/kp_errors.h"

#define POLL_ARENA_CAP_BYTES ((size_t)512 << 20)

/* ListOffsets for the partitions led by `leader`. */
static int list_offsets_leader(cl_client_t *c, const cl_md_topic_t *t, const char *topic, int32_t leader,
                               int64_t ts, int64_t *out, int32_t n, kp_arena_t *a, cl_err_t *e) {
    kp_list_offsets_request_t req;
    kp_list_offsets_request_init(&req);
    req.replica_id = -1;
    kp_list_offsets_request_list_offsets_topic_t tt;
    kp_list_offsets_request_list_offsets_topic_init(&tt);
    tt.name = cl_str(topic);
    tt.partitions.items = kp_arena_alloc(a, sizeof *tt.partitions.items * (size_t)n);
    if (!tt.partitions.items) return cl_err_set(e, CL_E_NOMEM, "out of memory");
    tt.partitions.count = 0;
    for (int32_t i = 0; i < t->partitions.count; i++) {
        const cl_md_partition_t *mp = &t->partitions.items[i];
        if (mp->leader_id != leader || mp->partition_index < 0 || mp->partition_index >= n) continue;
        kp_list_offsets_request_list_offsets_partition_t *pp = &tt.partitions.items[tt.partitions.count++];
        kp_list_offsets_request_list_offsets_partition_init(pp);
        pp->partition_index = mp->partition_index;
        pp->timestamp = ts;
    }
    req.topics.items = &tt;
    req.topics.count = 1;
    void *resp = NULL;
    int16_t ver = 0;
    int rc = cl_client_call(c, leader, KP_API_LIST_OFFSETS, CL_VER_LIST_OFFSETS, &req, &resp, &ver, a, e);
    if (rc != CL_OK) return rc;
    const kp_list_offsets_response_t *r = resp;
    for (int32_t i = 0; i < r->topics.count; i++) {
        const kp_list_offsets_response_list_offsets_topic_response_t *tr = &r->topics.items[i];
        for (int32_t j = 0; j < tr->partitions.count; j++) {
            const kp_list_offsets_response_list_offsets_partition_response_t *pr = &tr->partitions.items[j];
            if (pr->error_code != 0)
                return cl_err_kafka(e, pr->error_code, "list offsets of %s-%d via node %d", topic, pr->partition_index, leader);
            if (pr->partition_index < 0 || pr->partition_index >= n) continue;
            int64_t off = pr->offset;
            if (ver == 0) off = pr->old_style_offsets.count > 0 ? pr->old_style_offsets.items[0] : -1;
            out[pr->partition_index] = off;
        }
    }
    return CL_OK;
}

int cl_list_offsets(cl_client_t *c, const char *topic, int64_t timestamp, int64_t *out, int32_t n, cl_err_t *e) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)64 << 20);
    int rc = CL_OK;
    for (int attempt = 1;; attempt++) {
        kp_arena_reset(&a);
        for (int32_t i = 0; i < n; i++) out[i] = -1;
        const cl_md_topic_t *t = cl_md_topic(c, topic);
        if (!t) { rc = cl_err_kafka(e, KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION, "topic '%s'", topic); break; }
        int32_t done[CL_NODES_MAX];
        int ndone = 0;
        rc = CL_OK;
        for (int32_t i = 0; i < t->partitions.count && rc == CL_OK; i++) {
            int32_t leader = t->partitions.items[i].leader_id;
            if (leader < 0) {
                rc = cl_err_kafka(e, KP_ERROR_LEADER_NOT_AVAILABLE, "%s-%d", topic, t->partitions.items[i].partition_index);
                break;
            }
            bool seen = false;
            for (int k = 0; k < ndone; k++) seen |= done[k] == leader;
            if (seen || ndone == CL_NODES_MAX) continue;
            done[ndone++] = leader;
            rc = list_offsets_leader(c, t, topic, leader, timestamp, out, n, &a, e);
        }
        if (rc == CL_OK || !cl_retry_again(&c->retry, attempt, rc, e ? e->kafka_code : 0)) break;
        cl_sleep_ms(cl_retry_backoff_ms(&c->retry, attempt + 1));
        const char *names[1] = { topic };
        if ((rc = cl_client_metadata(c, names, 1, e)) != CL_OK) break;
    }
    kp_arena_free(&a);
    return rc;
}

int cl_consumer_open(cl_consumer_t *k, cl_client_t *cl, const char *topic, cl_err_t *e) {
    memset(k, 0, sizeof *k);
    k->cl = cl;
    k->max_wait_ms = 500;
    k->partition_max_bytes = CL_FETCH_PARTITION_BYTES_DEFAULT;
    if (strlen(topic) >= sizeof k->topic) return cl_err_set(e, CL_E_USAGE, "topic name too long");
    strcpy(k->topic, topic);
    const char *names[1] = { topic };
    int rc = cl_client_metadata(cl, names, 1, e);
    if (rc != CL_OK) return rc;
    const cl_md_topic_t *t = cl_md_topic(cl, topic);
    if (!t) return cl_err_kafka(e, KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION, "topic '%s'", topic);
    if (t->error_code != 0) return cl_err_kafka(e, t->error_code, "topic '%s'", topic);
    k->npartitions = t->partitions.count;
    k->pos = calloc((size_t)k->npartitions + 1, sizeof *k->pos);
    k->hw = calloc((size_t)k->npartitions + 1, sizeof *k->hw);
    k->active = calloc((size_t)k->npartitions + 1, 1);
    if (!k->pos || !k->hw || !k->active) return cl_err_set(e, CL_E_NOMEM, "out of memory");
    memset(k->active, 1, (size_t)k->npartitions);
    for (int32_t i = 0; i < k->npartitions; i++) k->hw[i] = -1;
    return CL_OK;
}

void cl_consumer_close(cl_consumer_t *k) {
    free(k->pos);
    free(k->hw);
    free(k->active);
    k->pos = k->hw = NULL;
    k->active = NULL;
}

void cl_consumer_only(cl_consumer_t *k, int32_t p) {
    for (int32_t i = 0; i < k->npartitions; i++) k->active[i] = p < 0 || i == p;
}

int cl_consumer_seek(cl_consumer_t *k, int64_t timestamp, cl_err_t *e) {
    int rc = cl_list_offsets(k->cl, k->topic, timestamp, k->pos, k->npartitions, e);
    if (rc != CL_OK || timestamp < 0) return rc;
    /* no record at or after the timestamp: start at the end */
    int64_t *end = calloc((size_t)k->npartitions + 1, sizeof *end);
    if (!end) return cl_err_set(e, CL_E_NOMEM, "out of memory");
    rc = cl_list_offsets(k->cl, k->topic, CL_OFFSET_LATEST, end, k->npartitions, e);
    for (int32_t i = 0; rc == CL_OK && i < k->npartitions; i++)
        if (k->pos[i] < 0) k->pos[i] = end[i];
    free(end);
    return rc;
}

bool cl_consumer_at_end(const cl_consumer_t *k) {
    for (int32_t i = 0; i < k->npartitions; i++)
        if (k->active[i] && (k->hw[i] < 0 || k->pos[i] < k->hw[i])) return false;
    return true;
}

/* Delivers the records of one partition's records field. */
static int deliver(cl_consumer_t *k, int32_t part, kp_bytes_t recs, cl_msg_fn fn, void *ctx, int64_t *count,
                   kp_arena_t *a, cl_err_t *e) {
    kp_rd_t r;
    kp_rd_init(&r, recs.p, recs.len);
    int whole = 0;
    while (kp_rd_remaining(&r) > 0 && !k->stopped) {
        kp_batch_t b;
        int kr = kp_batch_read(&r, &b);
        if (kr == KP_ERR_TRUNCATED && whole == 0) {
            /* not even one whole batch fit: a broker that ignores KIP-74
             * would stall us here, so ask for more next time (bounded) */
            if (k->partition_max_bytes >= CL_FETCH_PARTITION_BYTES_MAX)
                return cl_err_set(e, CL_E_PROTO, "%s-%d: a batch at offset %lld is larger than %d bytes", k->topic,
                                  part, (long long)k->pos[part], CL_FETCH_PARTITION_BYTES_MAX);
            k->partition_max_bytes *= 2;
            break;
        }
        if (kr == KP_ERR_TRUNCATED) break; /* a partial batch at the end of a fetch */
        whole++;
        if (kr != KP_OK) return cl_err_set(e, CL_E_PROTO, "bad batch in %s-%d at offset %lld (status %d)", k->topic,
                                           part, (long long)k->pos[part], kr);
        if (kp_batch_verify_crc(&b) != KP_OK)
            return cl_err_set(e, CL_E_PROTO, "CRC mismatch in %s-%d batch at offset %lld", k->topic, part,
                              (long long)b.base_offset);
        if (kp_batch_is_control(&b)) {
            if (kp_batch_last_offset(&b) >= k->pos[part]) k->pos[part] = kp_batch_last_offset(&b) + 1;
            continue;
        }
        const uint8_t *sec = NULL;
        size_t sec_len = 0;
        if ((kr = kp_batch_records(&b, a, CL_FETCH_DECOMPRESS_CAP_BYTES, &sec, &sec_len)) != KP_OK)
            return cl_err_set(e, CL_E_PROTO, "cannot read %s-%d batch at offset %lld (status %d)", k->topic, part,
                              (long long)b.base_offset, kr);
        kp_record_iter_t it;
        kp_record_iter_init(&it, &b, sec, sec_len);
        kp_record_t rec;
        while (!k->stopped && (kr = kp_record_iter_next(&it, &rec)) == 1) {
            if (rec.offset < k->pos[part]) continue;
            cl_msg_t m = { k->topic, part, rec.offset, rec.timestamp, rec.key, rec.value, rec.headers_count, rec.headers };
            k->pos[part] = rec.offset + 1;
            (*count)++;
            if (!fn(ctx, &m)) k->stopped = true;
        }
        if (kr < 0) return cl_err_set(e, CL_E_PROTO, "malformed record in %s-%d (status %d)", k->topic, part, kr);
        if (!k->stopped && kp_batch_last_offset(&b) >= k->pos[part]) k->pos[part] = kp_batch_last_offset(&b) + 1;
    }
    return CL_OK;
}

static int fetch_leader(cl_consumer_t *k, const cl_md_topic_t *t, int32_t leader, cl_msg_fn fn, void *ctx,
                        int64_t *count, kp_arena_t *a, cl_err_t *e) {
    kp_fetch_request_t req;
    kp_fetch_request_init(&req);
    req.replica_id = -1;
    req.max_wait_ms = k->max_wait_ms;
    req.min_bytes = 1;
    req.isolation_level = 0;
    kp_fetch_request_fetch_topic_t ft;
    kp_fetch_request_fetch_topic_init(&ft);
    ft.topic = cl_str(k->topic);
    ft.partitions.items = kp_arena_alloc(a, sizeof *ft.partitions.items * (size_t)(k->npartitions + 1));
    if (!ft.partitions.items) return cl_err_set(e, CL_E_NOMEM, "out of memory");
    ft.partitions.count = 0;
    for (int32_t i = 0; i < t->partitions.count; i++) {
        const cl_md_partition_t *mp = &t->partitions.items[i];
        int32_t p = mp->partition_index;
        if (mp->leader_id != leader || p < 0 || p >= k->npartitions) continue;
        if (!k->active[p]) continue;
        kp_fetch_request_fetch_partition_t *fp = &ft.partitions.items[ft.partitions.count++];
        kp_fetch_request_fetch_partition_init(fp);
        fp->partition = p;
        fp->fetch_offset = k->pos[p];
        fp->partition_max_bytes = k->partition_max_bytes;
    }
    req.topics.items = &ft;
    req.topics.count = 1;
    void *resp = NULL;
    int rc = cl_client_call(k->cl, leader, KP_API_FETCH, CL_VER_FETCH, &req, &resp, NULL, a, e);
    if (rc != CL_OK) return rc;
    const kp_fetch_response_t *r = resp;
    if (r->error_code != 0) return cl_err_kafka(e, r->error_code, "fetch from node %d", leader);
    for (int32_t i = 0; i < r->responses.count && !k->stopped; i++) {
        const kp_fetch_response_fetchable_topic_response_t *tr = &r->responses.items[i];
        for (int32_t j = 0; j < tr->partitions.count && !k->stopped; j++) {
            const kp_fetch_response_partition_data_t *pd = &tr->partitions.items[j];
            int32_t p = pd->partition_index;
            if (p < 0 || p >= k->npartitions) continue;
            if (pd->error_code != 0)
                return cl_err_kafka(e, pd->error_code, "fetch %s-%d at offset %lld from node %d", k->topic, p,
                                    (long long)k->pos[p], leader);
            k->hw[p] = pd->high_watermark;
            if ((rc = deliver(k, p, pd->records.bytes, fn, ctx, count, a, e)) != CL_OK) return rc;
        }
    }
    return CL_OK;
}

int cl_consumer_poll(cl_consumer_t *k, cl_msg_fn fn, void *ctx, int64_t *delivered, cl_err_t *e) {
    kp_arena_t a;
    kp_arena_init(&a, POLL_ARENA_CAP_BYTES);
    int64_t count = 0;
    int rc = CL_OK;
    k->stopped = false;
    for (int attempt = 1;; attempt++) {
        const cl_md_topic_t *t = cl_md_topic(k->cl, k->topic);
        int32_t done[CL_NODES_MAX];
        int ndone = 0;
        rc = t ? CL_OK : cl_err_kafka(e, KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION, "topic '%s'", k->topic);
        for (int32_t i = 0; t && i < t->partitions.count && rc == CL_OK && !k->stopped; i++) {
            int32_t leader = t->partitions.items[i].leader_id;
            int32_t pi = t->partitions.items[i].partition_index;
            if (pi < 0 || pi >= k->npartitions || !k->active[pi]) continue;
            if (leader < 0) continue; /* no leader now: the next poll tries again */
            bool seen = false;
            for (int n = 0; n < ndone; n++) seen |= done[n] == leader;
            if (seen || ndone == CL_NODES_MAX) continue;
            done[ndone++] = leader;
            kp_arena_reset(&a);
            rc = fetch_leader(k, t, leader, fn, ctx, &count, &a, e);
        }
        if (rc == CL_OK || !cl_retry_again(&k->cl->retry, attempt, rc, e ? e->kafka_code : 0)) break;
        cl_sleep_ms(cl_retry_backoff_ms(&k->cl->retry, attempt + 1));
        const char *names[1] = { k->topic };
        if ((rc = cl_client_metadata(k->cl, names, 1, e)) != CL_OK) break;
    }
    kp_arena_free(&a);
    if (delivered) *delivered = count;
    return rc;
}
