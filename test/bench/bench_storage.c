/* bench_storage — storage engine figures (printed, never asserted):
 *   append throughput of 16 KiB batches of 100-byte records vs plain write()
 *   of the same bytes to the same disk; random-offset read (locate + range)
 *   rate; open time of 1,000 partitions after a clean shutdown; compaction
 *   throughput with uncompressed, zstd and lz4 batches; the cost of a segment
 *   roll, which the broker still pays on its loop thread (file creations,
 *   index trimming, the producer snapshot's atomic write), next to the fsync
 *   job it moved off the loop. BENCH_APPEND_MB sets the append volume
 *   (default 256); BENCH_ROLL_ONLY=1 runs only the roll figures. */
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "protocol/kp_batch.h"
#include "protocol/kp_compress.h"
#include "storage/st_cleaner.h"
#include "storage/st_io.h"
#include "storage/st_log.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static double g_cpu_plain, g_cpu_log;

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(p);
}

static int g_rebuilds; /* "rebuilding" lines seen (bench_reopen_rolled) */
static bool g_count_only; /* count those lines instead of printing them */
static void quiet(void *ctx, st_log_level_t lvl, const char *msg) {
    (void)ctx;
    if (strstr(msg, "rebuilding")) g_rebuilds++;
    if (g_count_only && strstr(msg, "rebuilding")) return;
    if (lvl >= ST_LOG_WARN) fprintf(stderr, "storage: %s\n", msg);
}

/* A ~16 KiB batch (uncompressed) of 100-byte records with keys
 * "key-<n % nkeys>". */
static size_t make_batch(uint8_t *out, size_t cap, int nrec, int seq, int nkeys, kp_codec_t codec) {
    static kp_record_in_t recs[512];
    static char keys[512][16];
    static uint8_t val[100];
    memset(val, 'x', sizeof val);
    for (int i = 0; i < nrec; i++) {
        int kl = snprintf(keys[i], sizeof keys[i], "key-%d", (seq * nrec + i) % nkeys);
        recs[i] = (kp_record_in_t){ .timestamp = 1000 + seq, .key = { (const uint8_t *)keys[i], (size_t)kl },
                                    .value = { val, sizeof val } };
    }
    kp_arena_t a;
    kp_arena_init(&a, (size_t)16 << 20);
    kp_batch_opts_t o = kp_batch_opts_default();
    o.codec = codec;
    kp_batch_builder_t bb;
    kp_batch_builder_init(&bb, &o);
    const uint8_t *p;
    size_t len = 0;
    for (int i = 0; i < nrec; i++)
        if (kp_batch_builder_add(&bb, &recs[i]) != KP_OK) abort();
    if (kp_batch_builder_finish(&bb, &a, &p, &len) != KP_OK || len > cap) abort();
    memcpy(out, p, len);
    kp_batch_builder_free(&bb);
    kp_arena_free(&a);
    return len;
}

static double bench_plain_write(const char *dir, const uint8_t *batch, size_t len, size_t n) {
    char p[512];
    snprintf(p, sizeof p, "%s/plain.bin", dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    double t0 = now_s(), c0 = cpu_s();
    for (size_t i = 0; i < n; i++)
        if (write(fd, batch, len) != (ssize_t)len) abort();
    fdatasync(fd);
    double t = now_s() - t0;
    g_cpu_plain += cpu_s() - c0;
    close(fd);
    unlink(p);
    return (double)(len * n) / t / 1e6;
}

static bool g_verified; /* use st_log_append_verified (the broker's produce path) */

static double bench_log_append(const char *dir, uint8_t *batch, size_t len, size_t n, st_log_t **keep) {
    st_log_config_t cfg;
    st_log_config_default(&cfg);
    st_log_open_opts_t o = { .create = true };
    st_log_t *log;
    if (st_log_open(dir, "bench", 0, &cfg, &o, &log) != KP_OK) abort();
    double t0 = now_s(), c0 = cpu_s();
    for (size_t i = 0; i < n; i++) {
        st_append_info_t info;
        int rc = g_verified ? st_log_append_verified(log, batch, len, 1, 0, &info)
                            : st_log_append(log, batch, len, 1, 0, &info);
        if (rc != KP_OK) abort();
    }
    if (st_log_flush(log) != KP_OK) abort();
    double t = now_s() - t0;
    g_cpu_log += cpu_s() - c0;
    *keep = log;
    return (double)(len * n) / t / 1e6;
}

static void bench_reads(st_log_t *log) {
    int64_t leo = st_log_end_offset(log);
    unsigned seed = 1;
    int ops = 200000;
    uint64_t bytes = 0;
    double t0 = now_s();
    for (int i = 0; i < ops; i++) {
        int64_t off = (int64_t)(((uint64_t)rand_r(&seed) << 16 ^ (uint64_t)rand_r(&seed)) % (uint64_t)leo);
        st_read_result_t rr;
        if (st_log_read(log, off, 1 << 20, -1, ST_READ_MIN_ONE, &rr) != KP_OK) abort();
        bytes += rr.total_bytes;
    }
    double t = now_s() - t0;
    printf("read: %d random-offset locates of 1 MiB ranges in %.2f s = %.0f ops/s (%.1f us each, %.0f MiB/op avg)\n",
           ops, t, ops / t, t / ops * 1e6, (double)bytes / ops / 1048576.0);
}

/* Issue 19's read path: a log of 1-record batches (~170 B, as a producer
 * with linger 0 writes them); a caught-up fetch (the last 8 batches, as a
 * follower or consumer at the tail asks) and a fetch of up to 64 KiB from a
 * random offset. Each read locates its offset (offset-index entry, then a
 * header walk of up to index.interval.bytes) and walks the batches it
 * returns; run under `strace -c -e trace=pread64` for the reads per op. */
static void bench_small_reads(const char *dir) {
    st_log_config_t cfg;
    st_log_config_default(&cfg);
    st_log_open_opts_t o = { .create = true };
    st_log_t *log;
    char sub[512];
    snprintf(sub, sizeof sub, "%s/small", dir);
    if (mkdir(sub, 0755) != 0) abort();
    if (st_log_open(sub, "small", 0, &cfg, &o, &log) != KP_OK) abort();
    uint8_t b[4096];
    size_t len = make_batch(b, sizeof b, 1, 0, 1 << 30, KP_CODEC_NONE);
    int nb = 200000;
    for (int i = 0; i < nb; i++) {
        st_append_info_t info;
        if (st_log_append(log, b, len, 1, 0, &info) != KP_OK) abort();
    }
    int64_t leo = st_log_end_offset(log);
    unsigned seed = 7;
    int ops = 100000;
    for (int mode = 0; mode < 2; mode++) {
        uint64_t bytes = 0;
        double t0 = now_s(), c0 = cpu_s();
        for (int i = 0; i < ops; i++) {
            int64_t off = mode == 0 ? leo - 8 - (i % 64)
                                    : (int64_t)(((uint64_t)rand_r(&seed) << 16 ^ (uint64_t)rand_r(&seed)) % (uint64_t)leo);
            st_read_result_t rr;
            if (st_log_read(log, off, mode == 0 ? 1 << 20 : 64 << 10, -1, ST_READ_MIN_ONE, &rr) != KP_OK) abort();
            bytes += rr.total_bytes;
        }
        double t = now_s() - t0, c = cpu_s() - c0;
        printf("read (%zu-byte batches): %d %s in %.2f s = %.1f us each (CPU %.1f us), %.0f bytes/op avg\n", len, ops,
               mode == 0 ? "tail reads (last 8-71 batches)" : "random-offset reads of up to 64 KiB", t, t / ops * 1e6,
               c / ops * 1e6, (double)bytes / ops);
    }
    if (st_log_delete(log) != KP_OK) abort();
}

static void bench_open_1000(const char *dir) {
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < 4096 && rl.rlim_max >= 4096) {
        rl.rlim_cur = 4096;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    st_log_config_t cfg;
    st_log_config_default(&cfg);
    cfg.index_max_bytes = 1 << 20;
    uint8_t batch[20000];
    size_t len = make_batch(batch, sizeof batch, 20, 0, 1000, KP_CODEC_NONE);
    static st_log_t *logs[1000];
    static st_log_offsets_t fin[1000];
    /* setup without fsyncs: only the timed clean open below matters, and it
     * writes nothing (no per-batch scan, no flush) */
    st_io_set_sync(false);
    for (int p = 0; p < 1000; p++) {
        st_log_open_opts_t o = { .create = true };
        if (st_log_open(dir, "many", p, &cfg, &o, &logs[p]) != KP_OK) abort();
        for (int b = 0; b < 50; b++) {
            st_append_info_t info;
            if (st_log_append(logs[p], batch, len, 0, 0, &info) != KP_OK) abort();
        }
    }
    for (int p = 0; p < 1000; p++)
        if (st_log_close(logs[p], &fin[p]) != KP_OK) abort();
    st_io_set_sync(true);
    sync();
    double t0 = now_s();
    for (int p = 0; p < 1000; p++) {
        st_log_open_opts_t o = { .recovery_point = fin[p].recovery_point, .high_watermark = fin[p].high_watermark,
                                 .clean_shutdown = true };
        if (st_log_open(dir, "many", p, &cfg, &o, &logs[p]) != KP_OK) abort();
    }
    double t = now_s() - t0;
    printf("open: 1000 partitions (50 batches, ~%zu KiB each) after a clean shutdown in %.3f s (%.2f ms each)\n",
           len * 50 / 1024, t, t);
    st_io_set_sync(false);
    for (int p = 0; p < 1000; p++)
        if (st_log_close(logs[p], NULL) != KP_OK) abort();
    t0 = now_s();
    for (int p = 0; p < 1000; p++) {
        st_log_open_opts_t o = { .recovery_point = 0 };
        if (st_log_open(dir, "many", p, &cfg, &o, &logs[p]) != KP_OK) abort();
    }
    t = now_s() - t0;
    printf("open: the same 1000 partitions with full recovery (unclean, CRC of every batch, fsync off): %.3f s\n", t);
    for (int p = 0; p < 1000; p++)
        if (st_log_close(logs[p], NULL) != KP_OK) abort();
    st_io_set_sync(true);
}

/* One pass over ~64 MiB of records (10k distinct keys) in batches of
 * `codec`: compressed batches are decompressed, filtered and re-compressed. */
static void bench_compaction(const char *dir, kp_codec_t codec) {
    st_log_config_t cfg;
    st_log_config_default(&cfg);
    cfg.segment_bytes = 8 << 20;
    cfg.cleanup_policy = ST_CLEANUP_COMPACT;
    st_log_open_opts_t o = { .create = true };
    st_log_t *log;
    char topic[32];
    snprintf(topic, sizeof topic, "compact-%s", kp_codec_name(codec));
    if (st_log_open(dir, topic, 0, &cfg, &o, &log) != KP_OK) abort();
    uint8_t batch[20000];
    for (int i = 0; i < 4000; i++) {
        size_t len = make_batch(batch, sizeof batch, 140, i, 10000, codec);
        st_append_info_t info;
        if (st_log_append(log, batch, len, 0, 0, &info) != KP_OK) abort();
    }
    if (st_log_roll(log, 0) != KP_OK) abort();
    st_log_set_high_watermark(log, st_log_end_offset(log));
    st_cleaner_config_t cc = { .dedupe_buffer_bytes = 128u << 20 };
    st_cleaner_stats_t st;
    double t0 = now_s();
    if (st_log_compact(log, &cc, 0, &st) != KP_OK) abort();
    double t = now_s() - t0;
    int64_t recs = st.records_kept + st.records_dropped;
    printf("compaction (%s): %.1f MiB on disk, %lld records, rewritten to %.1f MiB (%d segments, %lld batches "
           "re-compressed) in %.2f s = %.0f MiB/s on disk, %.2f M records/s\n",
           kp_codec_name(codec), st.bytes_read / 1048576.0, (long long)recs, st.bytes_written / 1048576.0,
           st.segments_cleaned, (long long)st.batches_recompressed, t, (st.bytes_read / 1048576.0) / t,
           recs / t / 1e6);
    if (st_log_close(log, NULL) != KP_OK) abort();
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Rolls of a log with the default 10 MiB preallocated indexes, one batch
 * per segment, fsync on (what st_log_roll costs the thread that appends),
 * then an st_log_sync job of one segment for comparison. */
static void bench_roll(const char *dir, const uint8_t *batch, size_t len) {
    enum { ROLLS = 200 };
    st_log_config_t cfg;
    st_log_config_default(&cfg);
    st_log_open_opts_t o = { .create = true, .now_ms = 1 };
    st_log_t *log;
    if (st_log_open(dir, "roll", 0, &cfg, &o, &log) != KP_OK) abort();
    uint8_t *b = malloc(len);
    double roll_ms[ROLLS], sync_ms[ROLLS];
    for (int i = 0; i < ROLLS; i++) {
        memcpy(b, batch, len);
        st_append_info_t info;
        if (st_log_append(log, b, len, 0, 2, &info) != KP_OK) abort();
        st_log_sync_t *j = NULL;
        double t0 = now_s();
        if (st_log_sync_begin(log, 2, &j) != KP_OK || !j) abort();
        if (st_log_sync_run(j) != KP_OK || st_log_sync_end(log, j, true) != KP_OK) abort();
        double t1 = now_s();
        if (st_log_roll(log, 2) != KP_OK) abort();
        double t2 = now_s();
        sync_ms[i] = (t1 - t0) * 1e3;
        roll_ms[i] = (t2 - t1) * 1e3;
    }
    qsort(roll_ms, ROLLS, sizeof roll_ms[0], cmp_double);
    qsort(sync_ms, ROLLS, sizeof sync_ms[0], cmp_double);
    printf("roll: %d rolls (10 MiB indexes, fsync on): median %.2f ms, p90 %.2f ms, max %.2f ms on the appending "
           "thread; an fsync job of one %zu-byte segment (now off the loop): median %.2f ms, p90 %.2f ms\n",
           ROLLS, roll_ms[ROLLS / 2], roll_ms[ROLLS * 9 / 10], roll_ms[ROLLS - 1], len, sync_ms[ROLLS / 2],
           sync_ms[ROLLS * 9 / 10]);
    free(b);
    if (st_log_delete(log) != KP_OK) abort();
}

/* Issue 16, finding 8: start-up of one partition with 1,000 rolled segments
 * after a clean close. Shape 1: one ~20 KB batch per segment (no offset
 * index entry by the append rule; the old check rebuilt each of these at
 * every start); shape 2: 10 batches per segment (several entries each).
 * Prints the clean open's wall time and how many segments it rebuilt. */
static void bench_reopen_rolled(const char *dir, const uint8_t *batch, size_t len) {
    for (int shape = 0; shape < 2; shape++) {
        int per_seg = shape == 0 ? 1 : 10;
        st_log_config_t cfg;
        st_log_config_default(&cfg);
        cfg.segment_bytes = (uint32_t)(len * (size_t)per_seg + 1);
        char topic[32];
        snprintf(topic, sizeof topic, "rolled%d", per_seg);
        st_log_open_opts_t o = { .create = true, .now_ms = 1 };
        st_log_t *log;
        st_io_set_sync(false); /* setup only */
        if (st_log_open(dir, topic, 0, &cfg, &o, &log) != KP_OK) abort();
        uint8_t *b = malloc(len);
        for (int i = 0; i < 1000 * per_seg + 1; i++) {
            memcpy(b, batch, len);
            st_append_info_t info;
            if (st_log_append(log, b, len, 0, 2, &info) != KP_OK) abort();
        }
        free(b);
        size_t nsegs = st_log_segment_count(log);
        st_log_offsets_t fin;
        if (st_log_close(log, &fin) != KP_OK) abort();
        st_io_set_sync(true);
        sync();
        g_rebuilds = 0;
        g_count_only = true;
        st_log_open_opts_t c = { .recovery_point = fin.recovery_point, .high_watermark = fin.high_watermark,
                                 .clean_shutdown = true, .now_ms = 2 };
        double t0 = now_s();
        if (st_log_open(dir, topic, 0, &cfg, &c, &log) != KP_OK) abort();
        double t = now_s() - t0;
        g_count_only = false;
        printf("restart: 1 partition, %zu segments (%d batch%s of %zu bytes each) after a clean close: open in "
               "%.3f s, %d segment index(es) rebuilt\n", nsegs, per_seg, per_seg > 1 ? "es" : "", len, t,
               g_rebuilds);
        if (st_log_delete(log) != KP_OK) abort();
    }
}

int main(void) {
    st_set_log_fn(quiet, NULL);
    char dir[] = "/tmp/bench_storage_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    if (getenv("BENCH_REOPEN_ONLY")) {
        uint8_t *rb = malloc(20000);
        bench_reopen_rolled(dir, rb, make_batch(rb, 20000, 140, 0, 1 << 30, KP_CODEC_NONE));
        free(rb);
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
    }
    if (getenv("BENCH_SMALL_READS_ONLY")) {
        bench_small_reads(dir);
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
    }
    if (getenv("BENCH_ROLL_ONLY")) {
        uint8_t *rb = malloc(20000);
        bench_roll(dir, rb, make_batch(rb, 20000, 140, 0, 1 << 30, KP_CODEC_NONE));
        free(rb);
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
    }
    const char *mb_env = getenv("BENCH_APPEND_MB");
    size_t mb = mb_env ? (size_t)atol(mb_env) : 256;
    uint8_t *batch = malloc(20000);
    size_t len = make_batch(batch, 20000, 140, 0, 1 << 30, KP_CODEC_NONE);
    size_t n = mb * 1048576 / len;
    printf("append: %zu batches of %zu bytes (140 records of 100-byte values), %.0f MiB, page cache + final "
           "fdatasync\n", n, len, (double)n * len / 1048576.0);
    double best_plain = 0, best_log = 0, ratios[4];
    for (int rep = 0; rep < 4; rep++) {
        /* alternate which run goes first: page-cache state after the
         * previous run's unlink otherwise favours one side */
        double p = 0, l;
        st_log_t *log;
        g_verified = rep >= 2; /* reps 0-1: storage re-checks CRCs; 2-3: caller did */
        if (rep % 2 == 0) p = bench_plain_write(dir, batch, len, n);
        l = bench_log_append(dir, batch, len, n, &log);
        if (rep == 3) bench_reads(log);
        if (st_log_delete(log) != KP_OK) abort();
        if (rep % 2 == 1) p = bench_plain_write(dir, batch, len, n);
        if (p > best_plain) best_plain = p;
        if (l > best_log) best_log = l;
        ratios[rep] = l / p;
        printf("append: rep %d (%s first, %s): plain write %.0f MB/s, log append %.0f MB/s, ratio %.2f\n", rep,
               rep % 2 ? "log" : "plain", g_verified ? "pre-verified" : "CRC re-checked", p, l, l / p);
    }
    for (int i = 0; i < 4; i++) /* sort 4 values for the median */
        for (int j = i + 1; j < 4; j++)
            if (ratios[j] < ratios[i]) { double t = ratios[i]; ratios[i] = ratios[j]; ratios[j] = t; }
    printf("append: best plain %.0f MB/s, best log %.0f MB/s, best/best ratio %.2f, median ratio %.2f "
           "(goal >= 0.9)\n", best_plain, best_log, best_log / best_plain, (ratios[1] + ratios[2]) / 2);
    printf("append: CPU time (user+sys) over all reps: plain %.2f s, log %.2f s, ratio plain/log %.2f\n",
           g_cpu_plain, g_cpu_log, g_cpu_plain / g_cpu_log);
    bench_small_reads(dir);
    bench_open_1000(dir);
    bench_roll(dir, batch, len);
    bench_reopen_rolled(dir, batch, len);
    bench_compaction(dir, KP_CODEC_NONE);
    bench_compaction(dir, KP_CODEC_ZSTD);
    bench_compaction(dir, KP_CODEC_LZ4);
    free(batch);
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
