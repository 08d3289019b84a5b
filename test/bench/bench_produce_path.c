/* bench_produce_path — the produce path driven in-process (issue 19), figures
 * printed, nothing asserted:
 *
 *   prepare     what runs before the state loop (bk_api_prepare_frame: the
 *               request decoded, each batch's CRC and records checked,
 *               decompressed when compressed), on 1 and on 2 threads at
 *               once, each thread over its own partitions' frames:
 *               messages/s per thread (the part that moves to the network
 *               threads; with 2 cores, 2 threads show what a second core
 *               adds);
 *   state loop  what stays on the state loop for the same frames, one
 *               thread: the frame copied (as the net's take_frame), decoded
 *               again, the verdict taken (bk_api_prepared_part), the batch
 *               appended to a real log in a temp dir
 *               (st_log_append_verified: offsets patched in place, one
 *               write, no second CRC) and the response encoded; the
 *               producer-state and leadership checks of the partition
 *               service are not in it (they need a node);
 *   hand-off    the cost per request of a prepared result freed on
 *               another thread (the state loop, once prepare runs on the
 *               network threads): bk_api_prepared_free pushes it on its
 *               maker's lock-free return stack, which the maker takes back
 *               whole; against make + free on one thread;
 *   allocations per request of each part, counted by this program's own
 *               malloc/calloc/realloc (which wrap glibc's) on the measuring
 *               thread after a warm-up pass.
 *
 * Frames: Produce v9, one partition per request, one batch of BENCH_RECORDS
 * (100) records of BENCH_VALUE_BYTES (100) each, uncompressed and lz4;
 * BENCH_PARTITIONS (16) partitions per thread, BENCH_ROUNDS (20000) requests
 * per thread and codec. Storage fsyncs are off (st_io_set_sync), as in the
 * broker's default (no fsync before acknowledging). */

#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kp_msgs.h"
#include "broker/api/prepare.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_compress.h"
#include "protocol/kp_header.h"
#include "storage/st_io.h"
#include "storage/st_log.h"

/* ---- allocation counting (not under a sanitizer, which owns malloc) ---- */
#if defined(__SANITIZE_ADDRESS__)
#define COUNTING 0
#else
#define COUNTING 1
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
static __thread uint64_t tl_allocs;
void *malloc(size_t n) { tl_allocs++; return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { tl_allocs++; return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { tl_allocs++; return __libc_realloc(p, n); }
#endif
static uint64_t allocs_now(void) {
#if COUNTING
    return tl_allocs;
#else
    return 0;
#endif
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static long env_long(const char *name, long dflt) {
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

static int g_records, g_value_bytes, g_parts, g_rounds;

typedef struct {
    uint8_t *bytes;   /* the frame after its size prefix */
    size_t len;
} frame_t;

/* One Produce v9 frame for partition `part` of topic "bench" holding one
 * batch of g_records records with codec c. */
static frame_t make_frame(int part, kp_codec_t c, int32_t corr) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)64 << 20);
    kp_batch_opts_t o = kp_batch_opts_default();
    o.codec = c;
    kp_batch_builder_t bb;
    kp_batch_builder_init(&bb, &o);
    uint8_t *val = malloc((size_t)g_value_bytes);
    for (int i = 0; i < g_records; i++) {
        for (int j = 0; j < g_value_bytes; j++) val[j] = (uint8_t)('a' + (i * 7 + j / 5) % 26);
        char key[32];
        int kl = snprintf(key, sizeof key, "key-%d-%d", part, i);
        kp_record_in_t r = { .timestamp = 1000 + i, .key = { (const uint8_t *)key, (size_t)kl },
                             .value = { val, (size_t)g_value_bytes } };
        if (kp_batch_builder_add(&bb, &r) != KP_OK) abort();
    }
    const uint8_t *batch;
    size_t blen;
    if (kp_batch_builder_finish(&bb, &a, &batch, &blen) != KP_OK) abort();
    kp_batch_builder_free(&bb);
    free(val);
    kp_produce_request_partition_produce_data_t pd;
    kp_produce_request_partition_produce_data_init(&pd);
    pd.index = part;
    pd.records.bytes = (kp_bytes_t){ batch, blen };
    kp_produce_request_topic_produce_data_t td;
    kp_produce_request_topic_produce_data_init(&td);
    td.name = kp_slice_cstr("bench");
    td.partition_data.items = &pd;
    td.partition_data.count = 1;
    kp_produce_request_t q;
    kp_produce_request_init(&q);
    q.acks = 1;
    q.timeout_ms = 30000;
    q.topic_data.items = &td;
    q.topic_data.count = 1;
    kp_request_header_t h = { .api_key = KP_API_PRODUCE, .api_version = 9, .correlation_id = corr,
                              .client_id = kp_slice_cstr("bench") };
    kp_wr_t w;
    kp_wr_init_count(&w);
    if (kp_request_encode(&w, &h, &q) != KP_OK) abort();
    size_t n = w.pos;
    uint8_t *out = malloc(n);
    kp_wr_init(&w, out, n);
    if (kp_request_encode(&w, &h, &q) != KP_OK || w.pos != n) abort();
    kp_arena_free(&a);
    frame_t f = { malloc(n - 4), n - 4 };
    memcpy(f.bytes, out + 4, n - 4);
    free(out);
    return f;
}

/* ---- prepare on T threads ---------------------------------------------- */

typedef struct {
    frame_t *frames;       /* g_parts frames of this thread */
    int rounds;
    double secs;
    uint64_t allocs;       /* during the measured pass */
    pthread_barrier_t *bar;
} prep_arg_t;

static void prepare_pass(prep_arg_t *a, int rounds) {
    for (int i = 0; i < rounds; i++) {
        frame_t *f = &a->frames[i % g_parts];
        void *r = bk_api_prepare_frame(f->bytes, f->len, NULL);
        if (!r) abort();
        bk_api_prepared_free(r);
    }
}

static void *prep_thread(void *p) {
    prep_arg_t *a = p;
    prepare_pass(a, g_parts * 2);           /* warm-up: pools and arenas grow */
    pthread_barrier_wait(a->bar);
    uint64_t a0 = allocs_now();
    double t0 = now_s();
    prepare_pass(a, a->rounds);
    a->secs = now_s() - t0;
    a->allocs = allocs_now() - a0;
    return NULL;
}

static void bench_prepare(frame_t *frames, int nthreads, const char *codec) {
    pthread_t th[2];
    prep_arg_t args[2];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
    for (int t = 0; t < nthreads; t++) {
        args[t] = (prep_arg_t){ frames + t * g_parts, g_rounds, 0, 0, &bar };
        if (pthread_create(&th[t], NULL, prep_thread, &args[t]) != 0) abort();
    }
    for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
    pthread_barrier_destroy(&bar);
    for (int t = 0; t < nthreads; t++)
        printf("prepare  %-6s %d thread(s), thread %d: %10.0f msgs/s  %8.0f req/s  %.2f allocs/req\n", codec, nthreads,
               t, (double)g_rounds * g_records / args[t].secs, g_rounds / args[t].secs,
               (double)args[t].allocs / g_rounds);
}

/* ---- the state loop's part --------------------------------------------- */

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static void bench_state_loop(frame_t *frames, const char *codec, const char *dir) {
    st_log_config_t cfg;
    st_log_config_default(&cfg);
    st_log_t **logs = calloc((size_t)g_parts, sizeof *logs);
    char topic[64];
    snprintf(topic, sizeof topic, "bench-%s", codec);
    for (int p = 0; p < g_parts; p++) {
        st_log_open_opts_t o = { .create = true };
        if (st_log_open(dir, topic, p, &cfg, &o, &logs[p]) != KP_OK) abort();
    }
    /* prepared results made ahead (as network threads would), so that
     * only the state loop's work is timed */
    void **prep = calloc((size_t)g_rounds, sizeof *prep);
    for (int i = 0; i < g_rounds; i++) prep[i] = bk_api_prepare_frame(frames[i % g_parts].bytes, frames[i % g_parts].len, NULL);
    kp_arena_t arena;
    kp_arena_init(&arena, (size_t)256 << 20);
    size_t resp_cap = 4096;
    uint8_t *resp = malloc(resp_cap);
    uint8_t *copy = malloc(frames[0].len * 2 + 65536);
    uint64_t a0 = 0;
    double t0 = 0;
    int warm = g_parts * 2;
    for (int i = -warm; i < g_rounds; i++) {
        if (i == 0) {
            a0 = allocs_now();
            t0 = now_s();
        }
        int k = (i < 0 ? i + warm : i) % g_parts;
        frame_t *f = &frames[k];
        memcpy(copy, f->bytes, f->len);   /* the net's take_frame copy */
        kp_arena_reset_retain(&arena, (size_t)256 << 10);
        kp_request_header_t h;
        void *body;
        if (kp_request_decode(copy, f->len, &h, &body, &arena) != KP_OK) abort();
        kp_produce_request_t *q = body;
        kp_bytes_t recs = q->topic_data.items[0].partition_data.items[0].records.bytes;
        const bk_repl_ps_pre_t *pre =
            i >= 0 ? bk_api_prepared_part(prep[i], copy, f->len, h.correlation_id, 0, recs.p, recs.len) : NULL;
        if (i >= 0 && (!pre || pre->nbatches_ok != 1)) abort();
        st_append_info_t info;
        if (st_log_append_verified(logs[k], (uint8_t *)recs.p, recs.len, 1, 0, &info) != KP_OK) abort();
        kp_produce_response_partition_produce_response_t pr;
        kp_produce_response_partition_produce_response_init(&pr);
        pr.index = k;
        pr.base_offset = info.base_offset;
        kp_produce_response_topic_produce_response_t tr;
        kp_produce_response_topic_produce_response_init(&tr);
        tr.name = q->topic_data.items[0].name;
        tr.partition_responses.items = &pr;
        tr.partition_responses.count = 1;
        kp_produce_response_t r;
        kp_produce_response_init(&r);
        r.responses.items = &tr;
        r.responses.count = 1;
        kp_wr_t w;
        kp_wr_init(&w, resp, resp_cap);
        if (kp_response_encode(&w, KP_API_PRODUCE, 9, h.correlation_id, &r, NULL) != KP_OK) abort();
    }
    double secs = now_s() - t0;
    uint64_t allocs = allocs_now() - a0;
    printf("state    %-6s 1 thread:            %10.0f msgs/s  %8.0f req/s  %.2f allocs/req "
           "(decode, verdict, append, respond)\n",
           codec, (double)g_rounds * g_records / secs, g_rounds / secs, (double)allocs / g_rounds);
    for (int i = 0; i < g_rounds; i++) bk_api_prepared_free(prep[i]);
    free(prep);
    free(resp);
    free(copy);
    kp_arena_free(&arena);
    for (int p = 0; p < g_parts; p++)
        if (st_log_close(logs[p], NULL) != KP_OK) abort();
    free(logs);
}

/* ---- hand-off: made on one thread, freed on another ----------------------- */

/* Bursts of BK_API_PREP_FREE_MAX results (what a pool keeps) made on this
 * thread and freed by another, handed over with a barrier that is not
 * timed (no spinning: this box is shared, a spinning pair would measure
 * the scheduler); against the same with the frees on this thread. */
typedef struct {
    void *v[BK_API_PREP_FREE_MAX];
    int bursts;
    double free_secs;
    pthread_barrier_t bar;
} burst_t;

static void *free_bursts(void *p) {
    burst_t *b = p;
    for (int k = 0; k < b->bursts; k++) {
        pthread_barrier_wait(&b->bar);   /* a burst is ready */
        double t0 = now_s();
        for (int i = 0; i < BK_API_PREP_FREE_MAX; i++) bk_api_prepared_free(b->v[i]);
        b->free_secs += now_s() - t0;
        pthread_barrier_wait(&b->bar);   /* freed */
    }
    return NULL;
}

static void bench_handoff(frame_t *frames) {
    enum { N = BK_API_PREP_FREE_MAX };
    int bursts = g_rounds / N > 0 ? g_rounds / N : 1;
    double make_s[2] = { 0, 0 }, free_s[2] = { 0, 0 };
    uint64_t allocs = 0;
    for (int cross = 0; cross < 2; cross++) {
        burst_t *b = calloc(1, sizeof *b);
        b->bursts = bursts + 1;                  /* the first one warms up */
        pthread_barrier_init(&b->bar, NULL, 2);
        pthread_t th;
        if (cross && pthread_create(&th, NULL, free_bursts, b) != 0) abort();
        uint64_t a0 = 0;
        for (int k = 0; k < bursts + 1; k++) {
            if (k == 1) a0 = allocs_now();
            double t0 = now_s();
            for (int i = 0; i < N; i++) b->v[i] = bk_api_prepare_frame(frames[i % g_parts].bytes, frames[i % g_parts].len, NULL);
            if (k > 0) make_s[cross] += now_s() - t0;
            if (cross) {
                pthread_barrier_wait(&b->bar);
                pthread_barrier_wait(&b->bar);
                if (k == 0) b->free_secs = 0;
            } else {
                t0 = now_s();
                for (int i = 0; i < N; i++) bk_api_prepared_free(b->v[i]);
                if (k > 0) free_s[0] += now_s() - t0;
            }
        }
        if (cross) {
            allocs = allocs_now() - a0;
            pthread_join(th, NULL);
            free_s[1] = b->free_secs;
        }
        pthread_barrier_destroy(&b->bar);
        free(b);
    }
    double n = (double)bursts * N;
    printf("hand-off none   per request: free %.3f us on the maker's thread, %.3f us on another (lock-free push); "
           "make %.3f us, %.3f us after cross-thread frees (takes the stack back); %.2f allocs/req\n",
           free_s[0] / n * 1e6, free_s[1] / n * 1e6, make_s[0] / n * 1e6, make_s[1] / n * 1e6, (double)allocs / n);
}

int main(void) {
    g_records = (int)env_long("BENCH_RECORDS", 100);
    g_value_bytes = (int)env_long("BENCH_VALUE_BYTES", 100);
    g_parts = (int)env_long("BENCH_PARTITIONS", 16);
    g_rounds = (int)env_long("BENCH_ROUNDS", 20000);
    if (g_records < 1 || g_value_bytes < 1 || g_parts < 1 || g_rounds < 1) return 2;
    st_io_set_sync(false);
    char dir[] = "/tmp/skiff-bench-produce-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    bk_api_prepare_init();
    printf("produce path: %d records x %d B per request, %d partitions per thread, %d requests per run%s\n",
           g_records, g_value_bytes, g_parts, g_rounds, COUNTING ? "" : " (allocations not counted here)");
    const kp_codec_t codecs[] = { KP_CODEC_NONE, KP_CODEC_LZ4 };
    for (size_t c = 0; c < 2; c++) {
        const char *name = kp_codec_name(codecs[c]);
        frame_t *frames = calloc((size_t)g_parts * 2, sizeof *frames);
        for (int p = 0; p < g_parts * 2; p++) frames[p] = make_frame(p, codecs[c], p);
        bench_prepare(frames, 1, name);
        bench_prepare(frames, 2, name);
        bench_state_loop(frames, name, dir);
        if (codecs[c] == KP_CODEC_NONE) bench_handoff(frames);
        for (int p = 0; p < g_parts * 2; p++) free(frames[p].bytes);
        free(frames);
    }
    bk_api_prepare_fini();
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
