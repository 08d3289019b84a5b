/* Unit tests for broker/quorum_client.c request deadlines: a peer that
 * accepts the connection (the kernel does, from the listen backlog) but
 * never answers — a black-holed network — must have its requests reported
 * lost (frame NULL) once their deadline passes, with everything behind
 * them; answered requests must not be; the next send reconnects.
 * Single-threaded: the test drives the event loop itself, each run bounded
 * by a loop-exit timeout so a hang is a failure. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "broker/net/quorum_client.h"

#define REPORTS_MAX 16

typedef struct {
    int32_t corr;
    bool lost;
    int64_t at_ms;
} report_t;

typedef struct {
    struct event_base *base;
    bk_net_qc_peer_t *peer;
    report_t r[REPORTS_MAX];
    size_t n;
    size_t stop_after;        /* loopbreak once this many reports arrived */
    bool resend_on_loss;      /* the handler sends again from the callback */
    int64_t fake_now_ms;      /* caller clock given to bk_net_qc_send (reconnect pacing) */
} ctx_t;

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int send_req(ctx_t *c, bk_net_qc_kind_t kind, int32_t timeout_ms);

static void on_resp(void *arg, int32_t peer_id, const bk_net_qc_pending_t *p, const uint8_t *frame, size_t len) {
    ctx_t *c = arg;
    ck_assert_int_eq(peer_id, 7);
    ck_assert_uint_lt(c->n, REPORTS_MAX);
    c->r[c->n++] = (report_t){ p->corr, frame == NULL, mono_ms() };
    if (frame) ck_assert_uint_eq(len, 4);
    if (!frame && c->resend_on_loss) {
        c->resend_on_loss = false;
        ck_assert_int_eq(send_req(c, BK_NET_QC_HEARTBEAT, 60000), 0);
    }
    if (c->n >= c->stop_after) event_base_loopbreak(c->base);
}

/* A listening socket on 127.0.0.1:0 that nobody reads from. */
static int listen_silent(uint16_t *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(fd, 8), 0);
    socklen_t sl = sizeof a;
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &sl), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* A request frame: size prefix + 8 bytes (the peer never parses it). */
static int send_req(ctx_t *c, bk_net_qc_kind_t kind, int32_t timeout_ms) {
    uint8_t frame[12] = { 0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8 };
    bk_net_qc_pending_t pend;
    memset(&pend, 0, sizeof pend);
    pend.kind = kind;
    pend.corr = bk_net_qc_next_corr(c->peer);
    pend.timeout_ms = timeout_ms;
    c->fake_now_ms += 1000;   /* past the reconnect pause */
    return bk_net_qc_send(c->peer, frame, sizeof frame, &pend, c->fake_now_ms);
}

static void run_loop(ctx_t *c, int bound_ms) {
    struct timeval tv = { bound_ms / 1000, (bound_ms % 1000) * 1000 };
    event_base_loopexit(c->base, &tv);
    event_base_dispatch(c->base);
}

static void setup(ctx_t *c, uint16_t port) {
    memset(c, 0, sizeof *c);
    c->base = event_base_new();
    ck_assert_ptr_nonnull(c->base);
    c->peer = bk_net_qc_new(c->base, 7, "127.0.0.1", port, on_resp, c);
    ck_assert_ptr_nonnull(c->peer);
}

static void teardown(ctx_t *c) {
    bk_net_qc_free(c->peer);
    event_base_free(c->base);
}

/* Accepts the pending connection (waiting up to 2 s) and answers one
 * request with a 4-byte body. */
static int accept_and_answer(int lfd) {
    struct pollfd pfd = { lfd, POLLIN, 0 };
    ck_assert_int_eq(poll(&pfd, 1, 2000), 1);
    int cfd = accept(lfd, NULL, NULL);
    ck_assert_int_ge(cfd, 0);
    uint8_t req[12];
    size_t got = 0;
    while (got < sizeof req) {
        pfd = (struct pollfd){ cfd, POLLIN, 0 };
        ck_assert_int_eq(poll(&pfd, 1, 2000), 1);
        ssize_t k = read(cfd, req + got, sizeof req - got);
        ck_assert_int_gt(k, 0);
        got += (size_t)k;
    }
    const uint8_t resp[8] = { 0, 0, 0, 4, 9, 9, 9, 9 };
    ck_assert_int_eq(write(cfd, resp, sizeof resp), (ssize_t)sizeof resp);
    return cfd;
}

START_TEST(test_silent_peer_times_out_with_everything_behind) {
    uint16_t port;
    int lfd = listen_silent(&port);
    ctx_t c;
    setup(&c, port);
    c.stop_after = 2;
    int64_t t0 = mono_ms();
    ck_assert_int_eq(send_req(&c, BK_NET_QC_HEARTBEAT, 300), 0);
    ck_assert_int_eq(send_req(&c, BK_NET_QC_RAFT, 60000), 0);   /* its own deadline is far */
    ck_assert_uint_eq(bk_net_qc_pending_count(c.peer), 2);
    run_loop(&c, 5000);
    ck_assert_uint_eq(c.n, 2);
    ck_assert(c.r[0].lost && c.r[1].lost);
    ck_assert_int_lt(c.r[0].corr, c.r[1].corr);   /* reported in request order */
    ck_assert_int_ge(c.r[0].at_ms - t0, 300);
    ck_assert_int_lt(c.r[0].at_ms - t0, 300 + 1500);
    ck_assert_int_lt(c.r[1].at_ms - t0, 300 + 1500);   /* cut with the first */
    ck_assert_uint_eq(bk_net_qc_timeouts(c.peer), 1);
    ck_assert_uint_eq(bk_net_qc_pending_count(c.peer), 0);
    teardown(&c);
    close(lfd);
}
END_TEST

START_TEST(test_answered_request_is_not_lost_later_one_is) {
    uint16_t port;
    int lfd = listen_silent(&port);
    ctx_t c;
    setup(&c, port);
    c.stop_after = 1;
    ck_assert_int_eq(send_req(&c, BK_NET_QC_HEARTBEAT, 300), 0);
    run_loop(&c, 50);   /* connect and write */
    int cfd = accept_and_answer(lfd);
    run_loop(&c, 2000);
    ck_assert_uint_eq(c.n, 1);
    ck_assert(!c.r[0].lost);
    /* past the first deadline: nothing fires for an answered request */
    c.stop_after = 2;
    run_loop(&c, 500);
    ck_assert_uint_eq(c.n, 1);
    ck_assert_uint_eq(bk_net_qc_timeouts(c.peer), 0);
    /* the same connection, now silent: the next request is lost */
    int64_t t0 = mono_ms();
    ck_assert_int_eq(send_req(&c, BK_NET_QC_ALTER, 200), 0);
    run_loop(&c, 5000);
    ck_assert_uint_eq(c.n, 2);
    ck_assert(c.r[1].lost);
    ck_assert_int_ge(c.r[1].at_ms - t0, 200);
    ck_assert_uint_eq(bk_net_qc_timeouts(c.peer), 1);
    close(cfd);
    teardown(&c);
    close(lfd);
}
END_TEST

START_TEST(test_resend_from_loss_callback_goes_on_a_new_connection) {
    uint16_t port;
    int lfd = listen_silent(&port);
    ctx_t c;
    setup(&c, port);
    c.stop_after = 1;
    c.resend_on_loss = true;
    ck_assert_int_eq(send_req(&c, BK_NET_QC_HEARTBEAT, 200), 0);
    run_loop(&c, 5000);
    /* the request sent from the callback is not reported with the old ones */
    ck_assert_uint_eq(c.n, 1);
    ck_assert(c.r[0].lost);
    ck_assert_uint_eq(bk_net_qc_pending_count(c.peer), 1);
    /* it went out on a second connection, which can answer it */
    int first = accept(lfd, NULL, NULL);   /* the timed-out one, from the backlog */
    ck_assert_int_ge(first, 0);
    c.stop_after = 2;
    run_loop(&c, 50);
    int cfd = accept_and_answer(lfd);
    run_loop(&c, 2000);
    ck_assert_uint_eq(c.n, 2);
    ck_assert(!c.r[1].lost);
    ck_assert_uint_eq(bk_net_qc_timeouts(c.peer), 1);
    close(cfd);
    close(first);
    teardown(&c);
    close(lfd);
}
END_TEST

START_TEST(test_kind_default_deadline) {
    uint16_t port;
    int lfd = listen_silent(&port);
    ctx_t c;
    setup(&c, port);
    c.stop_after = 1;
    int64_t t0 = mono_ms();
    ck_assert_int_eq(send_req(&c, BK_NET_QC_RAFT, 0), 0);
    run_loop(&c, BK_NET_QC_RAFT_TIMEOUT_MS + 3000);
    ck_assert_uint_eq(c.n, 1);
    ck_assert(c.r[0].lost);
    ck_assert_int_ge(c.r[0].at_ms - t0, BK_NET_QC_RAFT_TIMEOUT_MS);
    ck_assert_int_lt(c.r[0].at_ms - t0, BK_NET_QC_RAFT_TIMEOUT_MS + 1500);
    teardown(&c);
    close(lfd);
}
END_TEST

int main(void) {
    Suite *s = suite_create("quorum_client");
    TCase *tc = tcase_create("deadlines");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, test_silent_peer_times_out_with_everything_behind);
    tcase_add_test(tc, test_answered_request_is_not_lost_later_one_is);
    tcase_add_test(tc, test_resend_from_loss_callback_goes_on_a_new_connection);
    tcase_add_test(tc, test_kind_default_deadline);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
