/* test_fetch_inflight.c — a Fetch below v10 whose down-conversion job is on
 * the worker pool (broker/api/fetch_convert_int.h) when the node is freed
 * without a graceful stop (bk_broker_free alone, as a test or an embedding
 * process does): the request (arena, frame) and the descriptors the job
 * holds are freed, none leaks.
 *
 * A real single-node broker (the fixture of test_partition.c: local
 * metadata committer, listeners on port 0, no admin port), one worker
 * thread held by a job of the test's own, so the conversion job is
 * deterministically queued, not answered, at the free. Checked by the
 * node's count of unfinished requests (`bk_node_t.reqs_live`, 0 after a
 * clean free) and by the process's open descriptors; `make asan` runs it
 * under LeakSanitizer too. */
#include <check.h>
#include <dirent.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/api/fetch.h"
#include "broker/config/config.h"
#include "broker/meta/controller.h"
#include "broker/net/worker.h"
#include "broker/node.h"
#include "broker/replication/partition.h"
#include "protocol/kp_header.h"
#include "test/unit/st_test_util.h"

typedef struct {
    char *dir;
    char conf[512];
    struct event_base *base;
    bk_cfg_t *cfg;
    bk_node_t n;
} fx_t;

static void fx_start(fx_t *f) {
    memset(f, 0, sizeof *f);
    tu_log_capture();
    f->dir = tu_tmpdir();
    snprintf(f->conf, sizeof f->conf, "%s/node.conf", f->dir);
    FILE *fp = fopen(f->conf, "w");
    ck_assert_ptr_nonnull(fp);
    fprintf(fp,
            "node.id=1\n"
            "cluster.id=skiff-unit-fetch-inflight\n"
            "process.roles=broker,controller\n"
            "controller.quorum.voters=1@127.0.0.1:1\n"
            "controller.listener.names=CONTROLLER\n"
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
            "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n"
            "admin.listener=\n"
            "num.io.threads=1\n"
            "log.dirs=%s/data\n",
            f->dir);
    ck_assert_int_eq(fclose(fp), 0);
    bk_cfg_err_t ce;
    f->cfg = bk_cfg_load(f->conf, 1, NULL, 0, &ce);
    ck_assert_msg(f->cfg != NULL, "config: %s", ce.msg);
    f->base = event_base_new();
    ck_assert_ptr_nonnull(f->base);
    char err[512];
    ck_assert_msg(bk_broker_start(&f->n, f->base, f->cfg, err, sizeof err) == 0, "start: %s", err);
}

/* The non-graceful end: bk_broker_free with no bk_broker_shutdown first. */
static void fx_free_now(fx_t *f) {
    bk_broker_free(&f->n);
    bk_cfg_free(f->cfg);
    event_base_free(f->base);
    tu_rmrf(f->dir);
    free(f->dir);
}

static void on_commit(void *arg, int status) { *(int *)arg = status; }

static void create_topic(fx_t *f, const char *name) {
    bk_meta_ctrl_create_topic_t t = { name, 1, 1, NULL, 0, NULL, 0 };
    bk_meta_ctrl_create_result_t res;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_create_topics(&f->n.ctrl, bk_node_decision_image(&f->n), &t, 1, false, &recs, &res);
    ck_assert_int_eq(res.error, 0);
    int status = -99;
    bk_node_commit(&f->n, &recs, on_commit, &status);
    bk_meta_recs_free(&recs);
    for (int i = 0; i < 2000 && status == -99; i++) event_base_loop(f->base, EVLOOP_ONCE);
    ck_assert_int_eq(status, KP_OK);
}

static void never(void *ctx, void *part_ctx, const bk_repl_ps_result_t *res) {
    (void)ctx;
    (void)part_ctx;
    (void)res;
    ck_abort_msg("a single replica never waits");
}

/* n batches of 10 records appended to t-0 through the partition service. */
static void append(fx_t *f, const char *topic, int n) {
    bk_repl_part_t *p = NULL;
    ck_assert_int_eq(bk_repl_ps_find(&f->n, bk_meta_image_topic_by_name(&f->n.img, topic), 0, &p), 0);
    ck_assert_ptr_nonnull(p);
    const bk_repl_ps_opts_t o = { .acks = 1, .min_insync = 0, .timeout_ms = 1000, .leader_epoch = -1 };
    const bk_repl_ps_producer_t pr = { 9, false };
    for (int i = 0; i < n; i++) {
        uint8_t buf[8192];
        size_t len = tu_batch(buf, sizeof buf, 10, 1000 + i, (uint32_t)i + 1, 200);
        kp_arena_t a;
        kp_arena_init(&a, 1 << 20);
        bk_repl_ps_set_t set;
        bk_repl_ps_result_t res = { -1, -1, -1, -1, -1, false };
        ck_assert_int_eq(bk_repl_ps_validate(&f->n, p, &o, &pr, buf, len, &a, &set), 0);
        ck_assert(!bk_repl_ps_append(&f->n, p, &set, &o, never, NULL, NULL, &res));
        ck_assert_int_eq(res.error, 0);
        kp_arena_free(&a);
    }
}

/* A job that holds the pool's one thread until the test writes to gate[1]. */
static int hold_job(void *arg) {
    int *gate = arg;
    char c;
    return read(gate[0], &c, 1) == 1 ? KP_OK : KP_ERR_TRUNCATED;   /* the gate closed unwritten */
}
static void hold_done(void *arg, int status) {
    (void)status;
    *((int *)arg + 2) = 1;    /* gate[2]: completion seen */
}

static int open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n - 1;   /* the DIR's own */
}

/* A Fetch v2 frame (magic 1 answer: down-conversion) of topic-0 from 0. */
static uint8_t *fetch_v2_frame(const char *topic, size_t *len) {
    kp_fetch_request_fetch_partition_t fp;
    kp_fetch_request_fetch_partition_init(&fp);
    fp.partition = 0;
    fp.fetch_offset = 0;
    fp.partition_max_bytes = 1 << 20;
    kp_fetch_request_fetch_topic_t ft;
    kp_fetch_request_fetch_topic_init(&ft);
    ft.topic = kp_slice_cstr(topic);
    ft.partitions.items = &fp;
    ft.partitions.count = 1;
    kp_fetch_request_t req;
    kp_fetch_request_init(&req);
    req.replica_id = -1;
    req.max_wait_ms = 0;
    req.min_bytes = 1;
    req.topics.items = &ft;
    req.topics.count = 1;
    kp_request_header_t h = { KP_API_FETCH, 2, 7, kp_slice_cstr("unit") };
    uint8_t *out = NULL;
    ck_assert_int_eq(kp_request_encode_alloc(&h, &req, &out, len), KP_OK);
    return out;
}

START_TEST(test_free_with_conversion_queued) {
    int fds0 = open_fds();
    fx_t f;
    fx_start(&f);
    create_topic(&f, "t");
    append(&f, "t", 20);
    /* the pool's one thread held: the conversion job will wait in the queue */
    int gate[3] = { -1, -1, 0 };
    ck_assert_int_eq(pipe(gate), 0);
    ck_assert_int_eq(bk_net_worker_submit(f.n.pool, hold_job, hold_done, gate), BK_NET_OK);

    int s = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(s, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(f.n.kafka_port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    ck_assert_int_eq(connect(s, (struct sockaddr *)&sa, sizeof sa), 0);
    size_t len = 0;
    uint8_t *frame = fetch_v2_frame("t", &len);
    ck_assert_int_eq(send(s, frame, len, 0), (ssize_t)len);
    free(frame);

    /* until the Fetch is taken in and its conversion queued behind the hold */
    bk_net_worker_stats_t ws;
    uint64_t live = 0;
    for (int i = 0; i < 5000; i++) {
        event_base_loop(f.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        bk_net_worker_stats(f.n.pool, &ws);
        live = f.n.reqs_live;
        if (live == 1 && ws.outstanding >= 2) break;
        usleep(1000);
    }
    ck_assert_uint_eq(live, 1);               /* the Fetch, not answered */
    ck_assert_uint_ge(ws.outstanding, 2);     /* the hold + the conversion */
    bk_api_fetch_stats_t fs;
    bk_api_fetch_stats(f.n.fetch, &fs);
    ck_assert_uint_eq(fs.sets_worker + fs.sets_inline, 0);   /* no conversion finished */

    /* release the hold and free at once: the conversion is cancelled or
     * runs, and its completion comes with the net already freed */
    ck_assert_int_eq(write(gate[1], "x", 1), 1);
    fx_free_now(&f);
    ck_assert_int_eq(gate[2], 1);             /* every completion ran */
    ck_assert_uint_eq(f.n.reqs_live, 0);      /* the request was freed */
    close(s);
    close(gate[0]);
    close(gate[1]);
    /* the job's segment descriptor (held for it) closed with the log */
    ck_assert_int_eq(open_fds(), fds0);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("fetch_inflight");
    TCase *tc = tcase_create("free");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_free_with_conversion_queued);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
