/* ctl_perf.c — `skiffctl perf produce|consume TOPIC`.
 *
 * produce: --count records of --size bytes, optionally at --rate records/s;
 * batches are flushed when full or every --linger-ms. Latency of a record =
 * time from its batch's first record being added to the batch's ack (an
 * upper bound for the batch's later records; one sample per batch, weighted
 * by its record count). consume: reads --count records from the beginning;
 * latency = duration of each Fetch round. Both print msgs/s, MB/s and
 * p50/p99/p99.9 latency in ms, and a progress line every second on stderr.
 */
#include <stdlib.h>
#include <string.h>

#include "clients/cl_consumer.h"
#include "clients/cl_ctl.h"
#include "clients/cl_out.h"
#include "clients/cl_producer.h"

#define PERF_SAMPLES_MAX 4000000   /* bound on latency samples kept */

int cl_ctl_producer_opts(cl_ctl_t *ctx, const cl_args_t *a, cl_producer_opts_t *o, cl_err_t *e);

static const cl_opt_t perf_opts[] = {
    CL_CTL_GLOBAL_OPTS,
    { "--count", "-n", "N", false, "records (default 100000)" },
    { "--size", "-s", "BYTES", false, "produce: value size (default 100)" },
    { "--rate", NULL, "N", false, "produce: records per second, 0 = as fast as possible (default 0)" },
    { "--acks", "-a", "ACKS", false, "produce: 0, 1 or all (default all)" },
    { "--compression", "-z", "CODEC", false, "produce: none|gzip|snappy|lz4|zstd" },
    { "--batch-bytes", NULL, "SIZE", false, "produce: max batch size per partition (default 256k)" },
    { "--linger-ms", NULL, "MS", false, "produce: flush at least this often (default 5)" },
    { "--idempotent", NULL, NULL, false, "produce: idempotent producer" },
};
#define PERF_NOPTS ((int)(sizeof perf_opts / sizeof perf_opts[0]))

typedef struct perf {
    cl_sample_t *samples;
    size_t nsamples;
    int64_t records, bytes, failed;
    int64_t start_us, last_progress_us;
    int64_t value_bytes;
} perf_t;

static void add_sample(perf_t *p, double ms, int64_t weight) {
    if (p->nsamples < PERF_SAMPLES_MAX) p->samples[p->nsamples++] = (cl_sample_t){ ms, weight };
}

static void on_batch(void *ctx, int32_t partition, int64_t base_offset, int32_t records, int64_t created_us, int status,
                     const cl_err_t *err) {
    perf_t *p = ctx;
    if (status != CL_OK) { p->failed += records; return; }
    add_sample(p, (double)(cl_now_us() - created_us) / 1000.0, records);
}

static void progress(cl_ctl_t *ctx, perf_t *p, int64_t done, const char *what) {
    int64_t now = cl_now_us();
    if (now - p->last_progress_us < 1000000) return;
    p->last_progress_us = now;
    double s = (double)(now - p->start_us) / 1e6;
    fprintf(ctx->err, "%s: %lld records, %.0f msgs/s\n", what, (long long)done, s > 0 ? (double)done / s : 0.0);
}

static void report(cl_ctl_t *ctx, perf_t *p, const char *what) {
    double s = (double)(cl_now_us() - p->start_us) / 1e6;
    if (s <= 0) s = 1e-6;
    double p50 = cl_ctl_percentile(p->samples, p->nsamples, 50), p99 = cl_ctl_percentile(p->samples, p->nsamples, 99),
           p999 = cl_ctl_percentile(p->samples, p->nsamples, 99.9);
    double mbs = (double)p->bytes / s / (1024.0 * 1024.0);
    if (ctx->json) {
        cl_json_t j;
        cl_json_init(&j, ctx->out);
        cl_json_obj(&j);
        cl_json_key(&j, "test"); cl_json_str(&j, what);
        cl_json_key(&j, "records"); cl_json_int(&j, p->records);
        cl_json_key(&j, "failed"); cl_json_int(&j, p->failed);
        cl_json_key(&j, "bytes"); cl_json_int(&j, p->bytes);
        cl_json_key(&j, "seconds"); cl_json_num(&j, s);
        cl_json_key(&j, "msgs_per_sec"); cl_json_num(&j, (double)p->records / s);
        cl_json_key(&j, "mb_per_sec"); cl_json_num(&j, mbs);
        cl_json_key(&j, "latency_ms_p50"); cl_json_num(&j, p50);
        cl_json_key(&j, "latency_ms_p99"); cl_json_num(&j, p99);
        cl_json_key(&j, "latency_ms_p999"); cl_json_num(&j, p999);
        cl_json_obj_end(&j);
        cl_json_end(&j);
    } else {
        fprintf(ctx->out, "%s: %lld records (%lld failed) in %.2f s: %.0f msgs/s, %.2f MB/s, latency ms p50 %.2f p99 %.2f p99.9 %.2f\n",
                what, (long long)p->records, (long long)p->failed, s, (double)p->records / s, mbs, p50, p99, p999);
    }
}

static int perf_produce(cl_ctl_t *ctx, cl_client_t *c, const cl_args_t *a, const char *topic, int64_t count, perf_t *pf,
                        cl_err_t *e) {
    int64_t size = 100, rate = 0, linger = 5;
    const char *v;
    cl_producer_opts_t po;
    if (cl_ctl_producer_opts(ctx, a, &po, e) != CL_OK) return CL_E_USAGE;
    if ((v = cl_args_get(a, "--size")) && cl_parse_i64(v, 0, 16 << 20, &size, "--size", e) != CL_OK) return CL_E_USAGE;
    if ((v = cl_args_get(a, "--rate")) && cl_parse_i64(v, 0, 100000000, &rate, "--rate", e) != CL_OK) return CL_E_USAGE;
    if ((v = cl_args_get(a, "--linger-ms")) && cl_parse_i64(v, 0, 60000, &linger, "--linger-ms", e) != CL_OK) return CL_E_USAGE;
    po.on_batch = on_batch;
    po.ctx = pf;
    uint8_t *val = malloc((size_t)size + 1);
    if (!val) return cl_err_set(e, CL_E_NOMEM, "out of memory");
    for (int64_t i = 0; i < size; i++) val[i] = (uint8_t)('a' + (i * 7 + i / 13) % 26);
    cl_producer_t p;
    int rc = cl_producer_open(&p, c, topic, &po, e);
    pf->start_us = pf->last_progress_us = cl_now_us();
    int64_t last_flush = pf->start_us;
    for (int64_t i = 0; rc == CL_OK && i < count; i++) {
        if (rate > 0) {
            int64_t due = pf->start_us + i * 1000000 / rate;
            int64_t now = cl_now_us();
            if (due > now) {
                if (cl_producer_flush(&p, e) != CL_OK) { rc = e->status; break; }
                last_flush = cl_now_us();
                if (due > last_flush) cl_sleep_ms((int)((due - last_flush) / 1000));
            }
        }
        kp_bytes_t key = kp_slice_null(), value = { val, (size_t)size };
        rc = cl_producer_send(&p, -1, key, value, NULL, 0, -1, e);
        pf->bytes += size;
        if (rc == CL_OK && cl_now_us() - last_flush >= linger * 1000) {
            rc = cl_producer_flush(&p, e);
            last_flush = cl_now_us();
        }
        progress(ctx, pf, i + 1, "perf produce");
    }
    if (rc == CL_OK) rc = cl_producer_flush(&p, e);
    pf->records = p.acked_records;
    pf->failed = p.failed_records;
    pf->bytes = p.acked_records * size;
    cl_producer_close(&p);
    free(val);
    return rc;
}

typedef struct consume_count {
    int64_t left, bytes, records;
} consume_count_t;

static bool count_msg(void *ctx, const cl_msg_t *m) {
    consume_count_t *cc = ctx;
    cc->records++;
    cc->bytes += (int64_t)(m->key.len + m->value.len);
    return --cc->left > 0;
}

static int perf_consume(cl_ctl_t *ctx, cl_client_t *c, const char *topic, int64_t count, perf_t *pf, cl_err_t *e) {
    cl_consumer_t k;
    int rc = cl_consumer_open(&k, c, topic, e);
    if (rc == CL_OK) rc = cl_consumer_seek(&k, CL_OFFSET_EARLIEST, e);
    /* one Fetch per leader in turn: a leader with nothing new must not hold
     * the round for long */
    k.max_wait_ms = 50;
    consume_count_t cc = { count, 0, 0 };
    pf->start_us = pf->last_progress_us = cl_now_us();
    int idle_polls = 0;
    while (rc == CL_OK && cc.left > 0) {
        int64_t t0 = cl_now_us(), got = 0;
        rc = cl_consumer_poll(&k, count_msg, &cc, &got, e);
        if (got > 0) add_sample(pf, (double)(cl_now_us() - t0) / 1000.0, 1);
        /* bounded wait for records that are not there: 20 empty polls at the end */
        idle_polls = (got == 0 && cl_consumer_at_end(&k)) ? idle_polls + 1 : 0;
        if (idle_polls >= 20) {
            rc = cl_err_set(e, CL_E_KAFKA, "only %lld of %lld records in %s", (long long)cc.records, (long long)count, topic);
            e->kafka_code = 0;
        }
        progress(ctx, pf, cc.records, "perf consume");
    }
    pf->records = cc.records;
    pf->bytes = cc.bytes;
    cl_consumer_close(&k);
    return rc;
}

int cl_ctl_perf(cl_ctl_t *ctx, int argc, char **argv) {
    cl_args_t a;
    int rc = cl_ctl_parse(ctx, argc, argv, perf_opts, PERF_NOPTS, "skiffctl perf produce|consume TOPIC [options]", &a);
    if (rc == -1) return CL_EXIT_OK;
    if (rc != CL_OK) return CL_EXIT_USAGE;
    if (a.npos != 2 || (strcmp(a.pos[0], "produce") && strcmp(a.pos[0], "consume")))
        return cl_ctl_usage(ctx, "perf needs produce|consume and a topic");
    cl_err_t e;
    cl_err_clear(&e);
    int64_t count = 100000;
    const char *v = cl_args_get(&a, "--count");
    if (v && cl_parse_i64(v, 1, INT64_MAX / 2, &count, "--count", &e) != CL_OK) return cl_ctl_fail(ctx, &e);
    /* numbers and codec are checked before connecting (usage errors exit 2) */
    cl_producer_opts_t po;
    static const struct { const char *name; int64_t hi; } nums[] = {
        { "--size", 16 << 20 }, { "--rate", 100000000 }, { "--linger-ms", 60000 } };
    int64_t tmp = 0;
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        const char *s = cl_args_get(&a, nums[i].name);
        if (s && cl_parse_i64(s, 0, nums[i].hi, &tmp, nums[i].name, &e) != CL_OK) return cl_ctl_fail(ctx, &e);
    }
    if (cl_ctl_producer_opts(ctx, &a, &po, &e) != CL_OK) return cl_ctl_fail(ctx, &e);
    perf_t pf;
    memset(&pf, 0, sizeof pf);
    size_t cap = count < PERF_SAMPLES_MAX ? (size_t)count : PERF_SAMPLES_MAX;
    pf.samples = malloc(sizeof *pf.samples * (cap + 1));
    if (!pf.samples) { cl_err_set(&e, CL_E_NOMEM, "out of memory"); return cl_ctl_fail(ctx, &e); }
    cl_client_t c;
    int ex = cl_ctl_connect(ctx, &c);
    if (ex == CL_EXIT_OK) {
        bool produce = !strcmp(a.pos[0], "produce");
        rc = produce ? perf_produce(ctx, &c, &a, a.pos[1], count, &pf, &e) : perf_consume(ctx, &c, a.pos[1], count, &pf, &e);
        if (rc == CL_OK) report(ctx, &pf, produce ? "produce" : "consume");
        ex = rc == CL_OK ? CL_EXIT_OK : cl_ctl_fail(ctx, &e);
    }
    cl_client_close(&c);
    free(pf.samples);
    return ex;
}
