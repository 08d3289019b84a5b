/* Compaction against a reference model: random keyed writes and
 * tombstones, cleaner passes, the latest value per key read back from the
 * log must equal the model's; tombstones expire after their horizon; the
 * process is killed at every step of the swap and the log reopened. */
#include "test/unit/st_test_util.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "storage/st_cleaner.h"
#include "storage/st_guard.h"
#include "storage/st_io.h"
#include "storage/st_offset_map.h"

#define NKEYS 40
#define VAL_NONE (-2)  /* never written */
#define VAL_TOMB (-1)

typedef struct model {
    int32_t val[NKEYS];   /* latest value id, VAL_TOMB, or VAL_NONE */
    int64_t off[NKEYS];
} model_t;

static st_log_config_t ccfg(void) {
    st_log_config_t c;
    st_log_config_default(&c);
    c.segment_bytes = 1024;
    c.index_interval_bytes = 128;
    c.index_max_bytes = 4096;
    c.cleanup_policy = ST_CLEANUP_COMPACT;
    c.min_cleanable_dirty_ratio = 0.0;
    c.delete_retention_ms = 1000;
    return c;
}

/* Codec of the next batch: none when !mixed, else any of the five (half
 * of them uncompressed). */
static kp_codec_t pick_codec(unsigned *seed, bool mixed) {
    if (!mixed || rand_r(seed) % 2 == 0) return KP_CODEC_NONE;
    return (kp_codec_t)(1 + rand_r(seed) % 4);
}

/* Appends one batch of n random key writes (codec per pick_codec); updates
 * the model. */
static void write_random_codec(st_log_t *log, model_t *m, unsigned *seed, int n, int64_t ts, bool mixed) {
    kp_record_in_t recs[8];
    char keys[8][16], vals[8][24];
    int kidx[8], vid[8];
    for (int i = 0; i < n; i++) {
        kidx[i] = rand_r(seed) % NKEYS;
        vid[i] = rand_r(seed) % 5 == 0 ? VAL_TOMB : rand_r(seed) % 100000;
        int kl = snprintf(keys[i], sizeof keys[i], "key%02d", kidx[i]);
        int vl = snprintf(vals[i], sizeof vals[i], "v%d", vid[i]);
        recs[i] = (kp_record_in_t){ .timestamp = ts, .key = { (const uint8_t *)keys[i], (size_t)kl },
                                    .value = vid[i] == VAL_TOMB ? kp_slice_null()
                                                                : (kp_slice_t){ (const uint8_t *)vals[i], (size_t)vl } };
    }
    kp_batch_opts_t o = kp_batch_opts_default();
    o.codec = pick_codec(seed, mixed);
    uint8_t buf[2048];
    size_t len = tu_build(buf, sizeof buf, &o, recs, n);
    st_append_info_t info;
    ck_assert_int_eq(st_log_append(log, buf, len, 0, ts, &info), KP_OK);
    for (int i = 0; i < n; i++) {
        m->val[kidx[i]] = vid[i];
        m->off[kidx[i]] = info.base_offset + i;
    }
}

static void write_random(st_log_t *log, model_t *m, unsigned *seed, int n, int64_t ts) {
    write_random_codec(log, m, seed, n, ts, false);
}

static int64_t compressed_seen;    /* compressed batches met by the last check */
static int64_t compressed_thinned; /* ... of which compaction rebuilt (gaps) */

typedef struct fold {
    kp_arena_t arena;
    int32_t seen[NKEYS];
    int64_t seen_off[NKEYS];
    int64_t last, records;
} fold_t;

static void fold_batch(const kp_batch_t *b, void *ctx) {
    fold_t *f = ctx;
    /* every batch stays one a consumer accepts (gaps, kept last offset) */
    kp_batch_info_t vi;
    kp_arena_reset(&f->arena);
    ck_assert_int_eq(kp_batch_validate(b, 0, &f->arena, 1 << 20, &vi), KP_OK);
    compressed_seen += kp_batch_codec(b) != KP_CODEC_NONE;
    compressed_thinned += kp_batch_codec(b) != KP_CODEC_NONE && b->records_count < b->last_offset_delta + 1;
    kp_record_iter_t it;
    kp_record_t rec;
    kp_record_iter_init(&it, b, vi.records, vi.records_len);
    int rc;
    while ((rc = kp_record_iter_next(&it, &rec)) == 1) {
        ck_assert_int_gt(rec.offset, f->last);
        f->last = rec.offset;
        f->records++;
        int k = atoi((const char *)rec.key.p + 3);
        f->seen[k] = kp_slice_is_null(rec.value) ? VAL_TOMB : atoi((const char *)rec.value.p + 1);
        f->seen_off[k] = rec.offset;
    }
    ck_assert_int_eq(rc, 0);
}

/* Folds every readable record into latest-per-key; checks offsets increase
 * and that each latest matches the model. Returns the number of records. */
static int64_t check_against_model(st_log_t *log, const model_t *m, bool tombstones_may_vanish) {
    fold_t *f = calloc(1, sizeof *f);
    kp_arena_init(&f->arena, (size_t)16 << 20);
    compressed_seen = compressed_thinned = 0;
    for (int k = 0; k < NKEYS; k++) f->seen[k] = VAL_NONE;
    f->last = -1;
    tu_each_batch(log, st_log_start_offset(log), fold_batch, f);
    kp_arena_free(&f->arena);
    for (int k = 0; k < NKEYS; k++) {
        if (m->val[k] == VAL_TOMB && tombstones_may_vanish && f->seen[k] == VAL_NONE) continue;
        ck_assert_msg(f->seen[k] == m->val[k], "key %d: log %d model %d", k, f->seen[k], m->val[k]);
        if (f->seen[k] != VAL_NONE) ck_assert_int_eq(f->seen_off[k], m->off[k]);
    }
    int64_t records = f->records;
    free(f);
    return records;
}

START_TEST(test_offset_map) {
    st_offset_map_t m;
    ck_assert_int_eq(st_offset_map_init(&m, 100), KP_ERR_TOO_LARGE);
    ck_assert_int_eq(st_offset_map_init(&m, 24 * 64), KP_OK);
    ck_assert_uint_eq(m.max_count, 48);
    char k[16];
    for (int i = 0; i < 48; i++) {
        int n = snprintf(k, sizeof k, "key-%d", i);
        ck_assert(st_offset_map_put(&m, (uint8_t *)k, (size_t)n, i));
    }
    ck_assert(!st_offset_map_put(&m, (const uint8_t *)"new", 3, 99)); /* full */
    ck_assert(st_offset_map_put(&m, (const uint8_t *)"key-3", 5, 100)); /* existing key: fine */
    ck_assert_int_eq(st_offset_map_get(&m, (const uint8_t *)"key-3", 5), 100);
    ck_assert_int_eq(st_offset_map_get(&m, (const uint8_t *)"key-4", 5), 4);
    ck_assert_int_eq(st_offset_map_get(&m, (const uint8_t *)"key-", 4), -1);
    ck_assert_int_eq(st_offset_map_get(&m, (const uint8_t *)"", 0), -1);
    st_offset_map_free(&m);
}
END_TEST

/* _i == 0: uncompressed batches; 1: gzip/snappy/lz4/zstd mixed with
 * uncompressed ones (rebuilt with their own codec). */
START_TEST(test_compaction_matches_model) {
    bool mixed = _i == 1;
    char *dir = tu_tmpdir();
    st_log_config_t cfg = ccfg();
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    model_t m;
    for (int k = 0; k < NKEYS; k++) m.val[k] = VAL_NONE;
    unsigned seed = 12345;
    st_cleaner_config_t cc = { .dedupe_buffer_bytes = 1 << 16 };
    int64_t now = 10000, recompressed = 0;
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 60; i++) write_random_codec(log, &m, &seed, 1 + rand_r(&seed) % 6, now, mixed);
        st_log_set_high_watermark(log, st_log_end_offset(log));
        uint64_t before = st_log_size_bytes(log);
        int64_t recs_before = check_against_model(log, &m, false);
        st_cleaner_stats_t st;
        ck_assert_int_eq(st_log_compact(log, &cc, now, &st), KP_OK);
        ck_assert(!st.skipped);
        ck_assert_int_gt(st.segments_cleaned, 0);
        ck_assert_uint_lt(st_log_size_bytes(log), before);
        int64_t recs_after = check_against_model(log, &m, false);
        ck_assert_int_lt(recs_after, recs_before);
        ck_assert_int_eq(st.batches_kept_whole, 0);
        recompressed += st.batches_recompressed;
        if (mixed) ck_assert_int_gt(compressed_thinned, 0); /* rebuilt with their codec */
        else ck_assert_int_eq(st.batches_recompressed + compressed_seen, 0);
        now += 100;
    }
    if (mixed) ck_assert_int_gt(recompressed, 0);
    /* every key at most once below the cleaned end: run a final pass after
     * rolling so that everything is cleanable */
    ck_assert_int_eq(st_log_roll(log, now), KP_OK);
    st_log_set_high_watermark(log, st_log_end_offset(log));
    st_cleaner_stats_t st;
    ck_assert_int_eq(st_log_compact(log, &cc, now, &st), KP_OK);
    int64_t recs = check_against_model(log, &m, false);
    int live = 0;
    for (int k = 0; k < NKEYS; k++) live += m.val[k] != VAL_NONE;
    ck_assert_int_eq(recs, live);
    /* tombstones expire after delete.retention.ms (horizon set on an earlier pass) */
    ck_assert_int_eq(st_log_compact(log, &cc, now + 5000, &st), KP_OK);
    int tombs = 0;
    for (int k = 0; k < NKEYS; k++) tombs += m.val[k] == VAL_TOMB;
    ck_assert_int_gt(tombs, 0);
    ck_assert_int_eq(st.tombstones_dropped, tombs);
    recs = check_against_model(log, &m, true);
    ck_assert_int_eq(recs, live - tombs);
    /* reopen (clean, then unclean): same view */
    st_log_offsets_t fin;
    ck_assert_int_eq(st_log_close(log, &fin), KP_OK);
    ck_assert_int_gt(fin.cleaner_offset, 0);
    log = tu_open(dir, &cfg, fin.recovery_point, true);
    ck_assert_int_eq(check_against_model(log, &m, true), live - tombs);
    st_log_set_high_watermark(log, st_log_end_offset(log));
    ck_assert(st_log_dirty_ratio(log, now) > 0.99); /* progress not passed in: all dirty */
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    {
        st_log_open_opts_t o = { .recovery_point = fin.recovery_point, .high_watermark = fin.high_watermark,
                                 .cleaner_offset = fin.cleaner_offset, .clean_shutdown = true };
        ck_assert_int_eq(st_log_open(dir, "t", 0, &cfg, &o, &log), KP_OK);
        ck_assert_int_eq(st_log_cleaner_offset(log), fin.cleaner_offset);
        ck_assert(st_log_dirty_ratio(log, now) < 0.01); /* checkpointed progress: nothing to do */
    }
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    log = tu_open(dir, &cfg, 0, false);
    ck_assert_int_eq(check_against_model(log, &m, true), live - tombs);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_ratio_lag_and_small_map) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = ccfg();
    cfg.min_cleanable_dirty_ratio = 0.5;
    cfg.min_compaction_lag_ms = 1000;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    model_t m;
    for (int k = 0; k < NKEYS; k++) m.val[k] = VAL_NONE;
    unsigned seed = 7;
    for (int i = 0; i < 80; i++) write_random(log, &m, &seed, 4, 5000);
    st_log_set_high_watermark(log, st_log_end_offset(log));
    st_cleaner_config_t cc = { .dedupe_buffer_bytes = 1 << 16 };
    st_cleaner_stats_t st;
    /* too young for min.compaction.lag.ms */
    ck_assert_int_eq(st_log_compact(log, &cc, 5500, &st), KP_OK);
    ck_assert(st.skipped);
    ck_assert_int_eq(st_log_compact(log, &cc, 7000, &st), KP_OK);
    ck_assert(!st.skipped);
    check_against_model(log, &m, false);
    /* nothing new: the dirty ratio is 0 */
    ck_assert(st_log_dirty_ratio(log, 7000) < 0.01);
    ck_assert_int_eq(st_log_compact(log, &cc, 7000, &st), KP_OK);
    ck_assert(st.skipped);
    /* a map too small for one segment refuses; the log is untouched */
    for (int i = 0; i < 80; i++) write_random(log, &m, &seed, 4, 5000);
    st_log_set_high_watermark(log, st_log_end_offset(log));
    st_cleaner_config_t tiny = { .dedupe_buffer_bytes = 24 * 16 };
    ck_assert_int_eq(st_log_compact(log, &tiny, 9000, &st), KP_ERR_TOO_LARGE);
    check_against_model(log, &m, false);
    /* a map that covers only part of the dirty range cleans up to it */
    st_cleaner_config_t mid = { .dedupe_buffer_bytes = 24 * 32 }; /* 24 of 40 keys */
    ck_assert_int_eq(st_log_compact(log, &mid, 9000, &st), KP_OK);
    ck_assert(!st.skipped);
    ck_assert_int_lt(st.end_offset, st_log_active_base_offset(log));
    check_against_model(log, &m, false);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_kill_at_every_swap_step) {
    st_log_config_t cfg = ccfg();
    for (int step = 1; step <= 5; step++) {
        char *dir = tu_tmpdir();
        st_log_t *log = tu_open(dir, &cfg, 0, false);
        model_t m;
        for (int k = 0; k < NKEYS; k++) m.val[k] = VAL_NONE;
        unsigned seed = (unsigned)step * 99;
        for (int i = 0; i < 120; i++) write_random_codec(log, &m, &seed, 3, 100, true);
        st_log_set_high_watermark(log, st_log_end_offset(log));
        st_log_offsets_t fin;
        ck_assert_int_eq(st_log_close(log, &fin), KP_OK);
        pid_t pid = fork();
        /* the child before any ck_assert: a passing one writes to check's
         * message file, which the child shares (see test_st_crash.c) */
        if (pid == 0) {
            st_log_open_opts_t o = { .recovery_point = fin.recovery_point, .high_watermark = fin.high_watermark,
                                     .clean_shutdown = true };
            st_log_t *l;
            if (st_log_open(dir, "t", 0, &cfg, &o, &l) != KP_OK) _exit(2);
            st_cleaner_set_crash_step(step);
            st_cleaner_config_t cc = { .dedupe_buffer_bytes = 1 << 16 };
            st_cleaner_stats_t st;
            if (st_log_compact(l, &cc, 200, &st) != KP_OK) _exit(3);
            _exit(4); /* the crash point was never reached */
        }
        ck_assert_int_ge(pid, 0);
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "step %d: child status %d", step, status);
        for (int clean = 1; clean >= 0; clean--) {
            log = tu_open(dir, &cfg, clean ? fin.recovery_point : 0, clean);
            check_against_model(log, &m, false);
            ck_assert_int_eq(st_log_end_offset(log), fin.log_end_offset);
            ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
        }
        char cmd[600];
        snprintf(cmd, sizeof cmd, "ls %s/t-0 | grep -cE 'cleaned|swap|deleted'", dir);
        FILE *f = popen(cmd, "r");
        int leftovers = -1;
        ck_assert_int_eq(fscanf(f, "%d", &leftovers), 1);
        pclose(f);
        ck_assert_int_eq(leftovers, 0);
        /* and a full pass afterwards still works */
        log = tu_open(dir, &cfg, fin.recovery_point, true);
        st_log_set_high_watermark(log, st_log_end_offset(log));
        st_cleaner_config_t cc = { .dedupe_buffer_bytes = 1 << 16 };
        st_cleaner_stats_t st;
        ck_assert_int_eq(st_log_compact(log, &cc, 300, &st), KP_OK);
        check_against_model(log, &m, false);
        ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
        tu_rmrf(dir);
        free(dir);
    }
}
END_TEST

/* A batch of n records "keyNN" -> "v<val>", from producer pid (txn), or an
 * abort marker. */
static void txn_write(st_log_t *log, int64_t pid, bool txn, bool control_abort, int k0, int n, int val) {
    uint8_t buf[2048];
    size_t len;
    if (control_abort) {
        len = tu_marker(buf, sizeof buf, pid, 0, false, 1);
    } else {
        kp_record_in_t recs[8];
        char keys[8][16], vals[8][16];
        for (int i = 0; i < n; i++) {
            int kl = snprintf(keys[i], sizeof keys[i], "key%02d", k0 + i);
            int vl = snprintf(vals[i], sizeof vals[i], "v%d", val);
            recs[i] = (kp_record_in_t){ .timestamp = 1, .key = { (const uint8_t *)keys[i], (size_t)kl },
                                        .value = { (const uint8_t *)vals[i], (size_t)vl } };
        }
        kp_batch_opts_t o = kp_batch_opts_default();
        o.flags = txn ? KP_BATCH_TRANSACTIONAL : 0;
        o.producer_id = pid;
        o.producer_epoch = pid >= 0 ? 0 : -1;
        o.base_sequence = pid >= 0 ? 0 : -1;
        len = tu_build(buf, sizeof buf, &o, recs, n);
    }
    st_append_info_t info;
    ck_assert_int_eq(st_log_append(log, buf, len, 0, 1, &info), KP_OK);
}

typedef struct txn_left {
    int controls, below_9, from_9;
} txn_left_t;

static void count_txn_left(const kp_batch_t *b, void *ctx) {
    txn_left_t *l = ctx;
    if (kp_batch_is_control(b)) {
        l->controls++;
        return;
    }
    ck_assert_int_ne(b->producer_id, 1); /* aborted data is gone */
    if (b->base_offset < 9) l->below_9 += b->records_count;
    else l->from_9 += b->records_count;
}

START_TEST(test_compaction_and_transactions) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = ccfg();
    cfg.segment_bytes = 150; /* about one batch per segment */
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    txn_write(log, 1, true, false, 0, 5, 1);   /* 0-4: pid 1 txn, aborted below */
    txn_write(log, 1, true, true, 0, 0, 0);    /* 5: abort marker */
    txn_write(log, -1, false, false, 0, 3, 2); /* 6-8: key00..02 = v2 */
    txn_write(log, 2, true, false, 5, 2, 3);   /* 9-10: pid 2 txn, still open */
    txn_write(log, -1, false, false, 0, 3, 4); /* 11-13: key00..02 = v4 (beyond the LSO) */
    ck_assert_int_eq(st_log_roll(log, 1), KP_OK);
    st_log_set_high_watermark(log, st_log_end_offset(log));
    ck_assert_int_eq(st_log_first_unstable_offset(log), 9);
    st_cleaner_config_t cc = { .dedupe_buffer_bytes = 1 << 16 };
    st_cleaner_stats_t st;
    ck_assert_int_eq(st_log_compact(log, &cc, 100, &st), KP_OK);
    ck_assert(!st.skipped);
    ck_assert_int_le(st.end_offset, 9);
    /* what is left: marker, v2 for key00..02 (their v4 lies beyond the
     * cleanable range), and every record from 9 on */
    txn_left_t left = { 0, 0, 0 };
    tu_each_batch(log, 0, count_txn_left, &left);
    int controls = left.controls, recs_below_9 = left.below_9, recs_from_9 = left.from_9;
    ck_assert_int_eq(controls, 1);
    ck_assert_int_eq(recs_below_9, 3);
    ck_assert_int_eq(recs_from_9, 5);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_producer_last_batch_kept_empty) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = ccfg();
    cfg.segment_bytes = 150;
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    /* pid 9 writes key00..key01 once (seq 0-1); plain writes supersede them */
    kp_record_in_t r[2] = { { .timestamp = 1, .key = kp_slice_cstr("key00"), .value = kp_slice_cstr("p") },
                            { .timestamp = 1, .key = kp_slice_cstr("key01"), .value = kp_slice_cstr("p") } };
    kp_batch_opts_t o = kp_batch_opts_default();
    o.producer_id = 9;
    o.producer_epoch = 0;
    o.base_sequence = 0;
    o.codec = KP_CODEC_ZSTD; /* emptied and rebuilt: an empty compressed batch */
    uint8_t buf[1024];
    size_t len = tu_build(buf, sizeof buf, &o, r, 2);
    st_append_info_t info;
    ck_assert_int_eq(st_log_append(log, buf, len, 0, 1, &info), KP_OK);
    for (int i = 0; i < 4; i++) txn_write(log, -1, false, false, 0, 2, 10 + i);
    ck_assert_int_eq(st_log_roll(log, 1), KP_OK);
    st_log_set_high_watermark(log, st_log_end_offset(log));
    st_cleaner_config_t cc = { .dedupe_buffer_bytes = 1 << 16 };
    st_cleaner_stats_t st;
    ck_assert_int_eq(st_log_compact(log, &cc, 100, &st), KP_OK);
    ck_assert_int_ge(st.records_dropped, 2 + 3 * 2);
    /* the producer's batch is still there, empty, with its offsets */
    uint8_t got[4096];
    size_t gl;
    int64_t next;
    ck_assert_int_eq(st_log_read_copy(log, 0, sizeof got, -1, ST_READ_MIN_ONE, got, sizeof got, &gl, &next), KP_OK);
    kp_rd_t rd;
    kp_rd_init(&rd, got, gl);
    kp_batch_t b;
    ck_assert_int_eq(kp_batch_read(&rd, &b), KP_OK);
    ck_assert_int_eq(kp_batch_verify_crc(&b), KP_OK);
    ck_assert_int_eq(b.producer_id, 9);
    ck_assert_int_eq(b.records_count, 0);
    ck_assert_int_eq(kp_batch_codec(&b), KP_CODEC_NONE);
    ck_assert_int_eq(b.size, KP_BATCH_HEADER_BYTES);
    ck_assert_int_eq(b.max_timestamp, 1);
    ck_assert_int_eq(b.base_sequence, 0);
    ck_assert_int_eq(b.base_offset, 0);
    ck_assert_int_eq(kp_batch_last_offset(&b), 1);
    /* without any snapshot, a replay still knows the producer's sequence */
    st_log_offsets_t fin;
    ck_assert_int_eq(st_log_close(log, &fin), KP_OK);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -f %s/t-0/*.snapshot", dir);
    ck_assert_int_eq(system(cmd), 0);
    log = tu_open(dir, &cfg, 0, false);
    kp_rd_init(&rd, buf, len);
    ck_assert_int_eq(kp_batch_read(&rd, &b), KP_OK);
    int64_t df, dl;
    ck_assert_int_eq(st_log_producer_check(log, &b, &df, &dl), ST_PS_DUPLICATE);
    ck_assert_int_eq(df, 0);
    ck_assert_int_eq(dl, 1);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* A transactional batch of pid (sequence seq) with n records "keyNN" =
 * "v<val>", or a COMMIT/ABORT marker of pid (n < 0; val != 0 = commit). */
static void txn_put(st_log_t *log, int64_t pid, int32_t seq, int k0, int n, int val) {
    uint8_t buf[2048];
    size_t len;
    if (n < 0) {
        len = tu_marker(buf, sizeof buf, pid, 0, val != 0, 1);
    } else {
        kp_record_in_t recs[8];
        char keys[8][16], vals[8][16];
        for (int i = 0; i < n; i++) {
            int kl = snprintf(keys[i], sizeof keys[i], "key%02d", k0 + i);
            int vl = snprintf(vals[i], sizeof vals[i], "v%d", val);
            recs[i] = (kp_record_in_t){ .timestamp = 1, .key = { (const uint8_t *)keys[i], (size_t)kl },
                                        .value = { (const uint8_t *)vals[i], (size_t)vl } };
        }
        kp_batch_opts_t o = kp_batch_opts_default();
        o.flags = pid >= 0 ? KP_BATCH_TRANSACTIONAL : 0;
        o.producer_id = pid;
        o.producer_epoch = pid >= 0 ? 0 : -1;
        o.base_sequence = pid >= 0 ? seq : -1;
        len = tu_build(buf, sizeof buf, &o, recs, n);
    }
    st_append_info_t info;
    ck_assert_int_eq(st_log_append(log, buf, len, 0, 1, &info), KP_OK);
}

/* What a read of the whole log finds: the offsets of the markers (with or
 * without a delete horizon), of the data batches by producer. */
typedef struct seen {
    int markers, horizons;
    int64_t marker_off[16];
    int data_pid[8];          /* records per producer id 0..7 (-1 -> slot 0) */
} seen_t;

static void see_batch(const kp_batch_t *b, void *ctx) {
    seen_t *s = ctx;
    if (kp_batch_is_control(b)) {
        ck_assert_int_lt(s->markers, 16);
        s->marker_off[s->markers++] = b->base_offset;
        if (b->attributes & KP_BATCH_DELETE_HORIZON) s->horizons++;
        return;
    }
    int slot = b->producer_id < 0 ? 0 : (int)b->producer_id;
    ck_assert_int_lt(slot, 8);
    s->data_pid[slot] += b->records_count;
}

static seen_t see(st_log_t *log) {
    seen_t s;
    memset(&s, 0, sizeof s);
    tu_each_batch(log, 0, see_batch, &s);
    return s;
}

static st_cleaner_stats_t pass_at(st_log_t *log, int64_t now) {
    st_cleaner_config_t cc = { .dedupe_buffer_bytes = 1 << 16, .ignore_dirty_ratio = true };
    st_cleaner_stats_t st;
    ck_assert_int_eq(st_log_compact(log, &cc, now, &st), KP_OK);
    return st;
}

/* The read_committed view of the cleaned log: nothing unstable, no
 * aborted range holding data, so a consumer filters nothing it should see
 * and sees nothing aborted. */
static void check_committed_view(st_log_t *log, size_t aborts) {
    ck_assert_int_eq(st_log_first_unstable_offset(log), -1);
    ck_assert_int_eq(st_log_last_stable_offset(log), st_log_high_watermark(log));
    seen_t s = see(log);
    ck_assert_int_eq(s.data_pid[2], 0); /* the aborted producer's data */
    /* the aborted-transaction list a read_committed fetch gets: an entry
     * whose marker is gone would make a client skip the producer's later
     * data up to its next marker, so it goes with the marker */
    st_aborted_txn_t ab[8];
    size_t n = st_log_aborted_txns(log, 0, st_log_end_offset(log), ab, 8);
    ck_assert_uint_eq(n, aborts);
    for (size_t i = 0; i < n; i++) ck_assert_int_eq(ab[i].producer_id, 2);
}

/* Markers (KIP-98/534): a COMMIT whose transaction's records were all
 * superseded and an ABORT (its data dropped) go after their delete horizon,
 * on a later pass; a COMMIT whose transaction kept a record stays. */
START_TEST(test_markers_removed_after_horizon) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = ccfg(); /* delete.retention.ms 1000; one segment */
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    txn_put(log, 1, 0, 0, 3, 1);   /* 0-2: pid 1, key00..02 */
    txn_put(log, 1, 0, 0, -1, 1);  /* 3: COMMIT */
    txn_put(log, 1, 3, 30, 1, 1);  /* 4: pid 1, key30 (survives) */
    txn_put(log, 1, 0, 0, -1, 1);  /* 5: COMMIT */
    txn_put(log, 2, 0, 10, 2, 1);  /* 6-7: pid 2, key10..11 */
    txn_put(log, 2, 0, 0, -1, 0);  /* 8: ABORT */
    txn_put(log, -1, 0, 0, 3, 2);  /* 9-11: key00..02 again, no producer */
    ck_assert_int_eq(st_log_roll(log, 1), KP_OK);
    st_log_set_high_watermark(log, st_log_end_offset(log));
    int64_t leo = st_log_end_offset(log);

    st_cleaner_stats_t st = pass_at(log, 100); /* horizon 1100 on the markers */
    ck_assert_int_eq(st.markers_kept, 3);
    ck_assert_int_eq(st.markers_dropped, 0);
    seen_t s = see(log);
    ck_assert_int_eq(s.markers, 3);
    ck_assert_int_eq(s.horizons, 3);
    ck_assert_int_eq(s.data_pid[1], 1);
    ck_assert_int_eq(s.data_pid[0], 3);
    check_committed_view(log, 1);

    st = pass_at(log, 1000); /* before the horizon: all kept */
    ck_assert_int_eq(st.markers_dropped, 0);
    ck_assert_int_eq(see(log).markers, 3);
    st_log_offsets_t fin;
    ck_assert_int_eq(st_log_close(log, &fin), KP_OK);

    /* the removing pass in a child killed right after it (no close) */
    pid_t pid = fork();
    if (pid == 0) {
        st_log_open_opts_t o = { .recovery_point = fin.recovery_point, .high_watermark = fin.high_watermark,
                                 .clean_shutdown = true };
        st_log_t *l;
        if (st_log_open(dir, "t", 0, &cfg, &o, &l) != KP_OK) _exit(2);
        st_cleaner_config_t cc = { .dedupe_buffer_bytes = 1 << 16, .ignore_dirty_ratio = true };
        st_cleaner_stats_t cst;
        if (st_log_compact(l, &cc, 2000, &cst) != KP_OK) _exit(3);
        if (cst.markers_dropped != 2) _exit(4);
        raise(SIGKILL);
        _exit(5);
    }
    ck_assert_int_ge(pid, 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child status %d", status);
    for (int k = 0; k < 2; k++) { /* unclean from the start, then from the recovery point */
        log = tu_open(dir, &cfg, k == 0 ? 0 : fin.recovery_point, false);
        st_log_set_high_watermark(log, st_log_end_offset(log));
        ck_assert_int_eq(st_log_end_offset(log), leo);
        s = see(log);
        ck_assert_int_eq(s.markers, 1); /* the COMMIT of key30's transaction */
        ck_assert_int_eq(s.marker_off[0], 5);
        ck_assert_int_eq(s.data_pid[1], 1);
        ck_assert_int_eq(s.data_pid[0], 3);
        check_committed_view(log, 0);
        ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    }
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* A producer snapshot that shows the transaction open (a roll between its
 * data and its marker) keeps the marker: a replay from that snapshot would
 * otherwise leave the transaction open for ever. */
START_TEST(test_marker_kept_for_snapshot) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = ccfg();
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    txn_put(log, 5, 0, 40, 1, 1);  /* 0: pid 5, key40 */
    ck_assert_int_eq(st_log_roll(log, 1), KP_OK); /* snapshot at 1: pid 5 open since 0 */
    txn_put(log, 5, 0, 0, -1, 1);  /* 1: COMMIT */
    txn_put(log, -1, 0, 40, 1, 2); /* 2: key40 again */
    txn_put(log, 5, 1, 41, 1, 1);  /* 3: pid 5, key41 (its last batch) */
    txn_put(log, 5, 0, 0, -1, 1);  /* 4: COMMIT */
    ck_assert_int_eq(st_log_roll(log, 1), KP_OK);
    st_log_set_high_watermark(log, st_log_end_offset(log));
    st_cleaner_stats_t st = pass_at(log, 100);
    ck_assert_int_eq(st.markers_kept, 2);
    st = pass_at(log, 2000);
    ck_assert_int_eq(st.markers_dropped, 0);
    ck_assert_int_eq(see(log).markers, 2);
    char path[600];
    snprintf(path, sizeof path, "%s/t-0/%020d.snapshot", dir, 1);
    ck_assert_int_eq(unlink(path), 0);
    st = pass_at(log, 3000);
    ck_assert_int_eq(st.markers_dropped, 1);
    seen_t s = see(log);
    ck_assert_int_eq(s.markers, 1);
    ck_assert_int_eq(s.marker_off[0], 4);
    ck_assert_int_eq(st_log_first_unstable_offset(log), -1);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

typedef struct build_arg {
    st_clean_plan_t *plan;
    st_cleaner_stats_t *st;
    int rc;
} build_arg_t;

static void *build_thread(void *p) {
    build_arg_t *a = p;
    a->rc = st_cleaner_build(a->plan, a->st);
    return NULL;
}

/* The commit in steps of one segment (the broker's loop does that), with
 * appends and a truncation-free retention move between steps: after each
 * step the log reads as the model; at the end every segment is cleaned. */
START_TEST(test_commit_in_steps) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = ccfg();
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    model_t m;
    for (int k = 0; k < NKEYS; k++) m.val[k] = VAL_NONE;
    unsigned seed = 777;
    for (int i = 0; i < 150; i++) write_random(log, &m, &seed, 3, 100);
    st_log_set_high_watermark(log, st_log_end_offset(log));
    st_cleaner_config_t cc = { .dedupe_buffer_bytes = 1 << 16 };
    st_cleaner_stats_t st;
    st_clean_plan_t *plan;
    ck_assert_int_eq(st_cleaner_prepare(log, &cc, 200, &plan, &st), KP_OK);
    ck_assert_ptr_nonnull(plan);
    ck_assert_int_eq(st_cleaner_build(plan, &st), KP_OK);
    uint64_t size_before = st_log_size_bytes(log);
    bool done = false;
    int steps = 0;
    while (!done) {
        ck_assert_int_eq(st_cleaner_commit_some(log, plan, 1, &st, &done), KP_OK);
        steps++;
        check_against_model(log, &m, false);
        write_random(log, &m, &seed, 3, 100); /* the loop appends between steps */
    }
    ck_assert_int_eq(st_cleaner_finish(plan), KP_OK);
    ck_assert_int_gt(steps, 2);
    ck_assert_int_eq(st.segments_cleaned, steps);
    ck_assert_int_gt(st_log_cleaner_offset(log), 0);
    ck_assert_uint_lt(st_log_size_bytes(log), size_before);
    check_against_model(log, &m, false);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

static int count_files(const char *dir, const char *pattern) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls %s/t-0 | grep -cE '%s'", dir, pattern);
    FILE *f = popen(cmd, "r");
    int n = -1;
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fscanf(f, "%d", &n), 1);
    pclose(f);
    return n;
}

/* The commit steps do no fsync (every fsync is made to fail meanwhile) and
 * no index build (the built indexes are taken as they are); the directory
 * fsync is st_cleaner_finish's, which the loop guard refuses on the loop. */
START_TEST(test_commit_does_no_sync) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = ccfg();
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    model_t m;
    for (int k = 0; k < NKEYS; k++) m.val[k] = VAL_NONE;
    unsigned seed = 31337;
    for (int i = 0; i < 150; i++) write_random(log, &m, &seed, 3, 100);
    st_log_set_high_watermark(log, st_log_end_offset(log));
    st_cleaner_config_t cc = { .dedupe_buffer_bytes = 1 << 16 };
    st_cleaner_stats_t st;
    st_clean_plan_t *plan;
    ck_assert_int_eq(st_cleaner_prepare(log, &cc, 200, &plan, &st), KP_OK);
    ck_assert_ptr_nonnull(plan);
    ck_assert_int_eq(st_cleaner_build(plan, &st), KP_OK);
    ck_assert_int_gt(count_files(dir, "index\\.cleaned$"), 0);
    st_io_inject(ST_IO_FSYNC, 0, EIO);
    bool done = false;
    while (!done) {
        ck_assert_int_eq(st_cleaner_commit_some(log, plan, 1, &st, &done), KP_OK);
        check_against_model(log, &m, false);
    }
    st_io_inject_clear();
    ck_assert_int_gt(st.segments_cleaned, 1);
    ck_assert_int_eq(count_files(dir, "cleaned"), 0); /* all installed, indexes too */
    st_guard_reset();
    st_guard_enter_loop();
    ck_assert_int_eq(st_cleaner_finish(plan), KP_OK);
    st_guard_leave_loop();
    ck_assert_uint_ge(st_guard_violations(), 1);
    st_guard_reset();
    ck_assert_int_eq(count_files(dir, "cleaned|swap|deleted"), 0);
    st_log_offsets_t fin;
    ck_assert_int_eq(st_log_close(log, &fin), KP_OK);
    /* the renamed-in indexes are the ones a reopen trusts and reads with */
    log = tu_open(dir, &cfg, fin.recovery_point, true);
    check_against_model(log, &m, false);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* A truncation below planned segments between build and commit: none of
 * them is installed, finish removes every built file, the log is the
 * truncated one (reopened too). */
START_TEST(test_truncation_before_commit) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = ccfg();
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    model_t m;
    for (int k = 0; k < NKEYS; k++) m.val[k] = VAL_NONE;
    unsigned seed = 5150;
    for (int i = 0; i < 150; i++) write_random(log, &m, &seed, 3, 100);
    st_log_set_high_watermark(log, st_log_end_offset(log));
    st_cleaner_config_t cc = { .dedupe_buffer_bytes = 1 << 16 };
    st_cleaner_stats_t st;
    st_clean_plan_t *plan;
    ck_assert_int_eq(st_cleaner_prepare(log, &cc, 200, &plan, &st), KP_OK);
    ck_assert_ptr_nonnull(plan);
    ck_assert_int_eq(st_cleaner_build(plan, &st), KP_OK);
    size_t segs = st_log_segment_count(log);
    int64_t to = st_log_end_offset(log) / 3;
    ck_assert_int_eq(st_log_truncate_to(log, to), KP_OK);
    ck_assert_uint_lt(st_log_segment_count(log), segs);
    ck_assert_int_eq(st_cleaner_commit(log, plan, &st), KP_OK);
    ck_assert_int_eq(st.segments_cleaned, 0);
    ck_assert_int_eq(count_files(dir, "cleaned|swap|deleted"), 0);
    int64_t leo = st_log_end_offset(log);
    ck_assert_int_le(leo, to);
    st_read_result_t rr;
    ck_assert_int_eq(st_log_read(log, 0, 1 << 20, -1, ST_READ_MIN_ONE, &rr), KP_OK);
    ck_assert_uint_gt(rr.n, 0);
    st_log_offsets_t fin;
    ck_assert_int_eq(st_log_close(log, &fin), KP_OK);
    log = tu_open(dir, &cfg, 0, false);
    ck_assert_int_eq(st_log_end_offset(log), leo);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_build_concurrent_with_appends) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = ccfg();
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    model_t m;
    for (int k = 0; k < NKEYS; k++) m.val[k] = VAL_NONE;
    unsigned seed = 4242;
    for (int i = 0; i < 150; i++) write_random(log, &m, &seed, 3, 100);
    st_log_set_high_watermark(log, st_log_end_offset(log));
    st_cleaner_config_t cc = { .dedupe_buffer_bytes = 1 << 16 };
    st_cleaner_stats_t st;
    st_clean_plan_t *plan;
    ck_assert_int_eq(st_cleaner_prepare(log, &cc, 200, &plan, &st), KP_OK);
    ck_assert_ptr_nonnull(plan);
    build_arg_t a = { plan, &st, -1 };
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, build_thread, &a), 0);
    for (int i = 0; i < 150; i++) write_random(log, &m, &seed, 3, 100); /* rolls too */
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    ck_assert_int_eq(a.rc, KP_OK);
    size_t before = st_log_segment_count(log);
    ck_assert_int_eq(st_cleaner_commit(log, plan, &st), KP_OK);
    ck_assert_int_gt(st.segments_cleaned, 0);
    ck_assert_uint_eq(st_log_segment_count(log), before);
    check_against_model(log, &m, false);

    /* a segment removed by retention between prepare and commit is skipped */
    st_log_set_high_watermark(log, st_log_end_offset(log));
    ck_assert_int_eq(st_cleaner_prepare(log, &cc, 300, &plan, &st), KP_OK);
    ck_assert_ptr_nonnull(plan);
    ck_assert_int_eq(st_cleaner_build(plan, &st), KP_OK);
    int64_t second = -1;
    {
        st_read_result_t rr; /* find the second segment's base: first range starting at 0 after offset 0 */
        for (int64_t o = 1; o < st_log_end_offset(log) && second < 0; o++) {
            ck_assert_int_eq(st_log_read(log, o, 1, -1, ST_READ_MIN_ONE, &rr), KP_OK);
            if (rr.n && rr.r[0].pos == 0) second = rr.first_offset;
        }
    }
    ck_assert_int_gt(second, 0);
    ck_assert_int_eq(st_log_advance_start(log, second), KP_OK);
    ck_assert_int_eq(st_cleaner_commit(log, plan, &st), KP_OK);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls %s/t-0 | grep -c cleaned", dir);
    FILE *f = popen(cmd, "r");
    int n = -1;
    ck_assert_int_eq(fscanf(f, "%d", &n), 1);
    pclose(f);
    ck_assert_int_eq(n, 0); /* the skipped segment's .cleaned file is gone too */
    int64_t end;
    tu_scan(log, st_log_start_offset(log), &end);
    ck_assert_int_eq(end, st_log_end_offset(log));
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* Batches whose records are over records_max_bytes (compressed or not) are
 * kept whole and unread: their keys supersede nothing and nothing of them
 * is dropped, so the latest value per key is still right; once the cap is
 * raised they are cleaned like any other. */
START_TEST(test_records_over_cap_kept_whole) {
    char *dir = tu_tmpdir();
    st_log_config_t cfg = ccfg();
    cfg.records_max_bytes = 40; /* fits the smallest batches only */
    st_log_t *log = tu_open(dir, &cfg, 0, false);
    model_t m;
    for (int k = 0; k < NKEYS; k++) m.val[k] = VAL_NONE;
    unsigned seed = 99;
    for (int i = 0; i < 150; i++) write_random_codec(log, &m, &seed, 1 + rand_r(&seed) % 6, 100, true);
    st_log_set_high_watermark(log, st_log_end_offset(log));
    st_cleaner_config_t cc = { .dedupe_buffer_bytes = 1 << 16 };
    st_cleaner_stats_t st;
    tu_log_capture(); /* empty the captured lines */
    ck_assert_int_eq(st_log_compact(log, &cc, 200, &st), KP_OK);
    ck_assert_int_gt(st.batches_kept_whole, 0);
    ck_assert_int_gt(st.records_dropped, 0);
    check_against_model(log, &m, false);
    char want[96];
    snprintf(want, sizeof want, " %lld batch(es) over records_max_bytes kept whole", (long long)st.batches_kept_whole);
    ck_assert_msg(strstr(tu_log_buf, want) != NULL, "log: %s", tu_log_buf);
    uint64_t size_capped = st_log_size_bytes(log);
    cfg.records_max_bytes = 0; /* default */
    st_log_set_config(log, &cfg);
    ck_assert_int_eq(st_log_roll(log, 300), KP_OK);
    st_log_set_high_watermark(log, st_log_end_offset(log));
    ck_assert_int_eq(st_log_compact(log, &cc, 300, &st), KP_OK);
    ck_assert_int_eq(st.batches_kept_whole, 0);
    ck_assert_uint_lt(st_log_size_bytes(log), size_capped);
    check_against_model(log, &m, false);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

int main(void) {
    tu_log_capture();
    Suite *s = suite_create("st_cleaner");
    TCase *tc = tcase_create("cleaner");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_offset_map);
    tcase_add_loop_test(tc, test_compaction_matches_model, 0, 2);
    tcase_add_test(tc, test_ratio_lag_and_small_map);
    tcase_add_test(tc, test_kill_at_every_swap_step);
    tcase_add_test(tc, test_compaction_and_transactions);
    tcase_add_test(tc, test_build_concurrent_with_appends);
    tcase_add_test(tc, test_commit_in_steps);
    tcase_add_test(tc, test_commit_does_no_sync);
    tcase_add_test(tc, test_truncation_before_commit);
    tcase_add_test(tc, test_producer_last_batch_kept_empty);
    tcase_add_test(tc, test_records_over_cap_kept_whole);
    tcase_add_test(tc, test_markers_removed_after_horizon);
    tcase_add_test(tc, test_marker_kept_for_snapshot);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
