/* Crash test: a child process appends batches (flushing and checkpointing
 * the recovery point now and then) while the parent SIGKILLs it at a random
 * moment. After each kill the log is reopened as after an unclean shutdown:
 * it must hold exactly a prefix of what was appended, at least everything
 * acknowledged (returned from append after a completed flush), and every
 * index lookup must agree with a linear scan. ST_CRASH_ROUNDS sets the
 * number of rounds (default 50). */
#include "test/unit/st_test_util.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "storage/st_checkpoint.h"

#define MAX_BATCHES 4000

typedef struct shared {
    volatile int64_t acked_batches;  /* appended and flushed */
} shared_t;

static st_log_config_t crash_cfg(void) {
    st_log_config_t c;
    st_log_config_default(&c);
    c.segment_bytes = 16384;
    c.index_interval_bytes = 512;
    c.index_max_bytes = 1024;
    return c;
}

static int recs_of(int i) { return 1 + (i * 7) % 13; }

static size_t make(int i, uint8_t *buf, size_t cap) {
    return tu_batch(buf, cap, recs_of(i), 1000 + i * 20, (uint32_t)i, 10 + (size_t)(i * 13) % 200);
}

/* Every batch, built once by the test process before it forks: the child
 * must not call check's asserts (tu_batch has them). A passing ck_assert
 * writes a location message to check's message file, which the child
 * shares with the test process; two writers interleave and the runner
 * reads "Bad message type" (about one run in 100 before). */
static uint8_t *all_batches;
static size_t batch_at[MAX_BATCHES + 1];

static void build_all(void) {
    if (all_batches) return;
    size_t cap = (size_t)MAX_BATCHES * 4096;
    all_batches = malloc(cap);
    ck_assert_ptr_nonnull(all_batches);
    for (int i = 0; i < MAX_BATCHES; i++) {
        batch_at[i + 1] = batch_at[i] + make(i, all_batches + batch_at[i], cap - batch_at[i]);
    }
}

static void child(const char *dir, shared_t *sh, unsigned seed) {
    st_log_config_t cfg = crash_cfg();
    st_log_open_opts_t o = { .recovery_point = 0, .create = true, .now_ms = 1 };
    st_log_t *log;
    if (st_log_open(dir, "t", 0, &cfg, &o, &log) != KP_OK) _exit(2);
    uint8_t buf[65536];
    char ckpt[600];
    snprintf(ckpt, sizeof ckpt, "%s/recovery-point-offset-checkpoint", dir);
    srand(seed);
    for (int i = 0; i < MAX_BATCHES; i++) {
        size_t len = batch_at[i + 1] - batch_at[i];
        if (len > sizeof buf) _exit(6);
        memcpy(buf, all_batches + batch_at[i], len);   /* the append patches it */
        st_append_info_t info;
        if (st_log_append(log, buf, len, 1, 2 + i, &info) != KP_OK) _exit(3);
        if (rand() % 16 == 0) {
            if (st_log_flush(log) != KP_OK) _exit(4);
            st_tp_offset_t e = { .topic = "t", .partition = 0, .offset = st_log_recovery_point(log) };
            if (st_offset_ckpt_write(ckpt, &e, 1) != KP_OK) _exit(5);
            sh->acked_batches = i + 1;
        }
    }
    _exit(0);
}

/* Checks the reopened log against the deterministic batch sequence. */
static void verify(const char *dir, int64_t acked) {
    char ckpt[600];
    snprintf(ckpt, sizeof ckpt, "%s/recovery-point-offset-checkpoint", dir);
    st_tp_offset_t *e = NULL;
    size_t n = 0;
    ck_assert_int_eq(st_offset_ckpt_read(ckpt, &e, &n), KP_OK);
    int64_t rp = n ? e[0].offset : 0;
    free(e);
    st_log_config_t cfg = crash_cfg();
    st_log_t *log = tu_open(dir, &cfg, rp, false);
    int64_t leo = st_log_end_offset(log);
    ck_assert_int_ge(leo, rp);
    /* walk batch by batch: batch i must be exactly make(i) with offsets */
    uint8_t want[65536], got[65536];
    int64_t off = 0;
    int i = 0;
    while (off < leo) {
        size_t wl = make(i, want, sizeof want);
        kp_batch_patch_base_offset(want, off);
        kp_batch_patch_leader_epoch(want, 1);
        size_t gl;
        int64_t next;
        ck_assert_int_eq(st_log_read_copy(log, off, 1, -1, ST_READ_MIN_ONE, got, sizeof got, &gl, &next), KP_OK);
        ck_assert_uint_eq(gl, wl);
        ck_assert_int_eq(memcmp(got, want, wl), 0);
        /* every offset inside the batch finds it through the index */
        for (int k = 1; k < recs_of(i); k++) {
            int64_t nx;
            ck_assert_int_eq(st_log_read_copy(log, off + k, 1, -1, ST_READ_MIN_ONE, got, sizeof got, &gl, &nx),
                             KP_OK);
            ck_assert_int_eq(nx, next);
        }
        int64_t to, tts;
        ck_assert_int_eq(st_log_offset_for_time(log, 1000 + i * 20, &to, &tts), KP_OK);
        ck_assert_int_eq(to, off);
        off = next;
        i++;
    }
    ck_assert_int_eq(off, leo);
    ck_assert_int_ge(i, acked);
    /* the log accepts appends after recovery and reopens cleanly */
    size_t wl = make(i, want, sizeof want);
    st_append_info_t info;
    ck_assert_int_eq(st_log_append(log, want, wl, 1, 0, &info), KP_OK);
    ck_assert_int_eq(info.base_offset, leo);
    st_log_offsets_t fin;
    ck_assert_int_eq(st_log_close(log, &fin), KP_OK);
    log = tu_open(dir, &cfg, fin.recovery_point, true);
    ck_assert_int_eq(st_log_end_offset(log), leo + recs_of(i));
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
}

START_TEST(test_kill_during_appends) {
    const char *env = getenv("ST_CRASH_ROUNDS");
    int rounds = env ? atoi(env) : 50;
    shared_t *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(sh, MAP_FAILED);
    unsigned seed = (unsigned)time(NULL);
    fprintf(stderr, "crash test: %d rounds, seed %u\n", rounds, seed);
    srand(seed);
    build_all();
    int64_t total_acked = 0;
    for (int r = 0; r < rounds; r++) {
        char *dir = tu_tmpdir();
        sh->acked_batches = 0;
        pid_t pid = fork();
        if (pid == 0) child(dir, sh, seed + (unsigned)r);   /* no ck_assert in the child (build_all) */
        ck_assert_int_ge(pid, 0);
        struct timespec ts = { 0, (long)(rand() % 30000) * 1000L };
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFSIGNALED(status) || WEXITSTATUS(status) == 0, "child failed: %d", WEXITSTATUS(status));
        int64_t acked = sh->acked_batches;
        total_acked += acked;
        verify(dir, acked);
        tu_rmrf(dir);
        free(dir);
    }
    fprintf(stderr, "crash test: %lld batches acknowledged in total, all found\n", (long long)total_acked);
    free(all_batches);
    all_batches = NULL;
    munmap(sh, sizeof *sh);
}
END_TEST

int main(void) {
    tu_log_capture();
    Suite *s = suite_create("st_crash");
    TCase *tc = tcase_create("crash");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_kill_during_appends);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
