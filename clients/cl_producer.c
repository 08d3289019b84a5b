/* cl_producer.c — batching, idempotent producer (see cl_producer.h). */
#include "clients/cl_producer.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clients/cl_partitioner.h"
#include "protocol/kp_errors.h"

#define FLUSH_ARENA_CAP_BYTES ((size_t)1 << 30)

cl_producer_opts_t cl_producer_opts_default(void) {
    cl_producer_opts_t o;
    memset(&o, 0, sizeof o);
    o.acks = -1;
    o.codec = KP_CODEC_NONE;
    o.batch_bytes_max = CL_BATCH_BYTES_DEFAULT;
    o.timeout_ms = 30000;
    return o;
}

int cl_codec_parse(const char *s) {
    static const char *names[] = { "none", "gzip", "snappy", "lz4", "zstd" };
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

static int init_producer_id(cl_producer_t *p, cl_err_t *e) {
    kp_init_producer_id_request_t req;
    kp_init_producer_id_request_init(&req);
    req.transactional_id = kp_slice_null();
    req.transaction_timeout_ms = 60000;
    kp_arena_t a;
    kp_arena_init(&a, (size_t)1 << 20);
    int rc;
    for (int attempt = 1;; attempt++) {
        kp_arena_reset(&a);
        void *resp = NULL;
        rc = cl_client_call(p->cl, -1, KP_API_INIT_PRODUCER_ID, CL_VER_INIT_PRODUCER_ID, &req, &resp, NULL, &a, e);
        if (rc == CL_OK) {
            const kp_init_producer_id_response_t *r = resp;
            if (r->error_code == 0) {
                p->producer_id = r->producer_id;
                p->producer_epoch = r->producer_epoch;
                break;
            }
            rc = cl_err_kafka(e, r->error_code, "InitProducerId");
        }
        if (!cl_retry_again(&p->cl->retry, attempt, rc, e ? e->kafka_code : 0)) break;
        cl_sleep_ms(cl_retry_backoff_ms(&p->cl->retry, attempt + 1));
    }
    kp_arena_free(&a);
    return rc;
}

int cl_producer_open(cl_producer_t *p, cl_client_t *cl, const char *topic, const cl_producer_opts_t *opts,
                     cl_err_t *e) {
    memset(p, 0, sizeof *p);
    p->cl = cl;
    p->opts = *opts;
    p->producer_id = -1;
    p->producer_epoch = -1;
    if (strlen(topic) >= sizeof p->topic) return cl_err_set(e, CL_E_USAGE, "topic name too long");
    strcpy(p->topic, topic);
    if (opts->idempotent && opts->acks != -1)
        return cl_err_set(e, CL_E_USAGE, "idempotence needs acks=all");
    if (opts->acks != 0 && opts->acks != 1 && opts->acks != -1)
        return cl_err_set(e, CL_E_USAGE, "acks must be 0, 1 or all");
    const char *names[1] = { topic };
    int rc = cl_client_metadata(cl, names, 1, e);
    if (rc != CL_OK) return rc;
    const cl_md_topic_t *t = cl_md_topic(cl, topic);
    if (!t) return cl_err_kafka(e, KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION, "topic '%s'", topic);
    if (t->error_code != 0) return cl_err_kafka(e, t->error_code, "topic '%s'", topic);
    if (t->partitions.count <= 0) return cl_err_kafka(e, KP_ERROR_LEADER_NOT_AVAILABLE, "topic '%s' has no partitions", topic);
    p->npartitions = t->partitions.count;
    p->batches = calloc((size_t)p->npartitions, sizeof *p->batches);
    p->next_seq = calloc((size_t)p->npartitions, sizeof *p->next_seq);
    if (!p->batches || !p->next_seq) return cl_err_set(e, CL_E_NOMEM, "out of memory");
    p->sticky = (int32_t)(cl_now_us() % p->npartitions);
    if (opts->idempotent) return init_producer_id(p, e);
    return CL_OK;
}

void cl_producer_close(cl_producer_t *p) {
    for (int32_t i = 0; p->batches && i < p->npartitions; i++)
        if (p->batches[i].open) kp_batch_builder_free(&p->batches[i].bb);
    free(p->batches);
    free(p->next_seq);
    p->batches = NULL;
    p->next_seq = NULL;
}

static void batch_start(cl_producer_t *p, int32_t part) {
    kp_batch_opts_t bo = kp_batch_opts_default();
    bo.codec = p->opts.codec;
    bo.max_bytes = p->opts.batch_bytes_max;
    if (p->producer_id >= 0) {
        bo.producer_id = p->producer_id;
        bo.producer_epoch = p->producer_epoch;
        bo.base_sequence = p->next_seq[part];
    }
    kp_batch_builder_init(&p->batches[part].bb, &bo);
    p->batches[part].open = true;
    p->batches[part].created_us = cl_now_us();
}

int cl_producer_send(cl_producer_t *p, int32_t partition, kp_bytes_t key, kp_bytes_t value,
                     const kp_header_in_t *headers, int32_t headers_count, int64_t timestamp_ms, cl_err_t *e) {
    if (partition >= p->npartitions)
        return cl_err_kafka(e, KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION, "%s-%d (topic has %d partitions)", p->topic,
                            partition, p->npartitions);
    if (partition < 0)
        partition = key.p ? cl_partition_for_key(key.p, key.len, p->npartitions) : p->sticky;
    if (timestamp_ms < 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        timestamp_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    }
    kp_record_in_t rec = { .timestamp = timestamp_ms, .key = key, .value = value, .headers = headers,
                           .headers_count = headers_count };
    /* a record is copied into the builder: the caller's line buffer is reused */
    for (int tries = 0; tries < 2; tries++) {
        cl_pbatch_t *b = &p->batches[partition];
        if (!b->open) batch_start(p, partition);
        int kr = kp_batch_builder_add(&b->bb, &rec);
        if (kr == KP_OK) return CL_OK;
        if (kr != KP_ERR_TOO_LARGE || b->bb.count == 0) {
            /* the builder's error is sticky: drop this batch's state */
            return cl_err_set(e, kr == KP_ERR_TOO_LARGE ? CL_E_USAGE : CL_E_PROTO,
                              "record of %zu bytes does not fit a batch of %zu bytes (status %d)",
                              key.len + value.len, p->opts.batch_bytes_max, kr);
        }
        /* full (the failed add appended nothing): send, then start afresh */
        int rc = cl_producer_flush(p, e);
        if (rc != CL_OK) return rc;
    }
    return cl_err_set(e, CL_E_PROTO, "record does not fit an empty batch");
}

/* One finished batch on its way to the broker. */
typedef struct outgoing {
    int32_t partition;
    const uint8_t *data;      /* in the flush arena */
    size_t len;
    int32_t records;
    int64_t created_us;
    int64_t base_offset;
    int status;               /* CL_OK when acked; else last error */
    cl_err_t err;
    bool done;
} outgoing_t;

/* Sends the batches in `out` that are not done and lead by `leader`. */
static void send_to_leader(cl_producer_t *p, int32_t leader, outgoing_t *out, int n, kp_arena_t *a) {
    kp_produce_request_t req;
    kp_produce_request_init(&req);
    req.transactional_id = kp_slice_null();
    req.acks = p->opts.acks;
    req.timeout_ms = p->opts.timeout_ms;
    kp_produce_request_topic_produce_data_t td;
    kp_produce_request_topic_produce_data_init(&td);
    td.name = cl_str(p->topic);
    td.partition_data.items = kp_arena_alloc(a, sizeof *td.partition_data.items * (size_t)n);
    td.partition_data.count = 0;
    int *idx = kp_arena_alloc(a, sizeof *idx * (size_t)n);
    if (!td.partition_data.items || !idx) {
        for (int i = 0; i < n; i++) out[i].status = cl_err_set(&out[i].err, CL_E_NOMEM, "out of memory");
        return;
    }
    for (int i = 0; i < n; i++) {
        if (out[i].done) continue;
        const cl_md_partition_t *mp = cl_md_partition(cl_md_topic(p->cl, p->topic), out[i].partition);
        if (!mp || mp->leader_id != leader) continue;
        kp_produce_request_partition_produce_data_t *pd = &td.partition_data.items[td.partition_data.count];
        kp_produce_request_partition_produce_data_init(pd);
        pd->index = out[i].partition;
        pd->records.bytes.p = out[i].data;
        pd->records.bytes.len = out[i].len;
        idx[td.partition_data.count++] = i;
    }
    if (td.partition_data.count == 0) return;
    req.topic_data.items = &td;
    req.topic_data.count = 1;
    cl_err_t err;
    cl_err_clear(&err);
    void *resp = NULL;
    int rc = p->opts.acks == 0 ? cl_client_send(p->cl, leader, KP_API_PRODUCE, CL_VER_PRODUCE, &req, &err)
                               : cl_client_call(p->cl, leader, KP_API_PRODUCE, CL_VER_PRODUCE, &req, &resp, NULL, a, &err);
    for (int32_t k = 0; k < td.partition_data.count; k++) {
        outgoing_t *o = &out[idx[k]];
        o->status = rc;
        o->err = err;
        if (rc == CL_OK && p->opts.acks == 0) { o->done = true; o->base_offset = -1; }
    }
    if (rc != CL_OK || p->opts.acks == 0) return;
    const kp_produce_response_t *r = resp;
    for (int32_t t = 0; t < r->responses.count; t++) {
        const kp_produce_response_topic_produce_response_t *tr = &r->responses.items[t];
        for (int32_t j = 0; j < tr->partition_responses.count; j++) {
            const kp_produce_response_partition_produce_response_t *pr = &tr->partition_responses.items[j];
            for (int32_t k = 0; k < td.partition_data.count; k++) {
                outgoing_t *o = &out[idx[k]];
                if (o->partition != pr->index || !cl_str_eq(tr->name, p->topic)) continue;
                /* a duplicate means an earlier try of these bytes was written */
                if (pr->error_code == 0 || pr->error_code == KP_ERROR_DUPLICATE_SEQUENCE_NUMBER) {
                    o->status = CL_OK;
                    o->done = true;
                    o->base_offset = pr->base_offset;
                } else {
                    o->status = cl_err_kafka(&o->err, pr->error_code, "produce to %s-%d via node %d", p->topic,
                                             o->partition, leader);
                }
            }
        }
    }
    /* a partition the broker did not mention stays failed */
    for (int32_t k = 0; k < td.partition_data.count; k++) {
        outgoing_t *o = &out[idx[k]];
        if (!o->done && o->status == CL_OK)
            o->status = cl_err_set(&o->err, CL_E_PROTO, "no answer for %s-%d from node %d", p->topic, o->partition, leader);
    }
}

/* One try: every not-done batch to its leader. Returns the number left. */
static int send_round(cl_producer_t *p, outgoing_t *out, int n, kp_arena_t *a) {
    int32_t leaders[CL_NODES_MAX];
    int nleaders = 0;
    const cl_md_topic_t *t = cl_md_topic(p->cl, p->topic);
    for (int i = 0; i < n; i++) {
        if (out[i].done) continue;
        const cl_md_partition_t *mp = cl_md_partition(t, out[i].partition);
        int16_t code = !mp ? KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION
                           : mp->leader_id < 0 ? KP_ERROR_LEADER_NOT_AVAILABLE : 0;
        if (code) {
            out[i].status = cl_err_kafka(&out[i].err, code, "%s-%d", p->topic, out[i].partition);
            continue;
        }
        bool seen = false;
        for (int k = 0; k < nleaders; k++) seen |= leaders[k] == mp->leader_id;
        if (!seen && nleaders < CL_NODES_MAX) leaders[nleaders++] = mp->leader_id;
    }
    for (int k = 0; k < nleaders; k++) send_to_leader(p, leaders[k], out, n, a);
    int left = 0;
    for (int i = 0; i < n; i++) left += !out[i].done;
    return left;
}

static bool any_retriable(const cl_producer_t *p, const outgoing_t *out, int n, int attempt) {
    for (int i = 0; i < n; i++)
        if (!out[i].done && cl_retry_again(&p->cl->retry, attempt, out[i].status, out[i].err.kafka_code)) return true;
    return false;
}

int cl_producer_flush(cl_producer_t *p, cl_err_t *e) {
    kp_arena_t a;
    kp_arena_init(&a, FLUSH_ARENA_CAP_BYTES);
    outgoing_t *out = calloc((size_t)p->npartitions, sizeof *out);
    if (!out) return cl_err_set(e, CL_E_NOMEM, "out of memory");
    int n = 0, rc = CL_OK;
    for (int32_t part = 0; part < p->npartitions; part++) {
        cl_pbatch_t *b = &p->batches[part];
        if (!b->open) continue;
        outgoing_t *o = &out[n];
        o->partition = part;
        o->records = b->bb.count;
        o->created_us = b->created_us;
        int kr = kp_batch_builder_finish(&b->bb, &a, &o->data, &o->len);
        kp_batch_builder_free(&b->bb);
        b->open = false;
        if (kr != KP_OK) {
            o->status = cl_err_set(&o->err, CL_E_PROTO, "cannot build batch for %s-%d (status %d)", p->topic, part, kr);
            o->done = true;
        }
        n++;
    }
    for (int attempt = 1; n > 0; attempt++) {
        if (send_round(p, out, n, &a) == 0 || !any_retriable(p, out, n, attempt)) break;
        cl_sleep_ms(cl_retry_backoff_ms(&p->cl->retry, attempt + 1));
        const char *names[1] = { p->topic };
        cl_err_t merr;
        if (cl_client_metadata(p->cl, names, 1, &merr) != CL_OK) {
            /* best effort: the next round reports the partitions it cannot reach */
        }
    }
    for (int i = 0; i < n; i++) {
        outgoing_t *o = &out[i];
        if (o->status == CL_OK && o->done) {
            p->acked_records += o->records;
            if (p->producer_id >= 0) p->next_seq[o->partition] += o->records;
        } else {
            if (o->status == CL_OK) o->status = cl_err_set(&o->err, CL_E_PROTO, "batch for %s-%d not sent", p->topic, o->partition);
            p->failed_records += o->records;
            if (rc == CL_OK) {
                rc = o->status;
                if (e) *e = o->err;
            }
        }
        if (p->opts.on_batch)
            p->opts.on_batch(p->opts.ctx, o->partition, o->base_offset, o->records, o->created_us, o->status, &o->err);
    }
    if (n > 0) p->sticky = (p->sticky + 1) % p->npartitions;
    free(out);
    kp_arena_free(&a);
    return rc;
}
