/* test_fetch_inflight.c — a Fetch below v10 whose down-conversion job is on
 * the worker pool (broker/api/fetch_convert_int.h) when the node is freed
 * without a graceful stop (bk_broker_free alone, as a test or an embedding
 * process does): the request (arena, frame) and the descriptors the job
 * holds are freed, none leaks.
 *
 * A real single-node broker (node_test_util.h: local metadata committer,
 * listeners on port 0, no admin port), its one worker thread held by the
 * gate job of parts_test_util.h, so the conversion job is
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
#include "test/unit/node_test_util.h"
#include "test/unit/parts_test_util.h"
#include "test/unit/st_test_util.h"

/* the single-node fixture, with the worker pool at one thread */
static void fx_start(nt_fx_t *f) { nt_init(f, "skiff-unit-fetch-inflight", "num.io.threads=1\n"); }

/* The non-graceful end: bk_broker_free with no bk_broker_shutdown first. */
static void fx_free_now(nt_fx_t *f) {
    bk_broker_free(&f->n);
    f->started = false;
    bk_cfg_free(f->cfg);
    event_base_free(f->base);
    nt_free(f);
}

/* n batches of 10 records appended to t-0 through the partition service. */
static void append(nt_fx_t *f, const char *topic, int n) {
    bk_repl_part_t *p = nt_part(f, topic, 0);
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
        ck_assert(!bk_repl_ps_append(&f->n, p, &set, &o, nt_never, NULL, NULL, &res));
        ck_assert_int_eq(res.error, 0);
        kp_arena_free(&a);
    }
}

/* A job holding the pool's one thread: parts_test_util.h's gate_job, which
 * waits for gate_open (gate first: the job gets this as its gate_t), and
 * its completion, seen once every completion has run. */
typedef struct {
    gate_t gate;
    bool done;
} hold_t;

static void hold_done(void *arg, int status) {
    (void)status;
    ((hold_t *)arg)->done = true;
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
    nt_fx_t f;
    fx_start(&f);
    nt_create_topic(&f, "t", 1, NULL, 0);
    append(&f, "t", 20);
    /* the pool's one thread held: the conversion job will wait in the queue */
    hold_t hold = { { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false }, false };
    ck_assert_int_eq(bk_net_worker_submit(f.n.pool, gate_job, hold_done, &hold), BK_NET_OK);

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
    gate_open(&hold.gate);
    fx_free_now(&f);
    ck_assert(hold.done);                     /* every completion ran */
    ck_assert_uint_eq(f.n.reqs_live, 0);      /* the request was freed */
    close(s);
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
