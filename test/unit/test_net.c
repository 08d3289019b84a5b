/* Unit tests for broker/ networking: an in-process server on 127.0.0.1:0 runs
 * its event loop on its own thread; the test thread is the client, with real
 * blocking sockets (5 s receive timeout, so a hang is a failure, not a stall).
 *
 * Test protocol spoken by the handler below: frame = cmd (1 byte), arg
 * (u32 big-endian), payload. Frames shorter than 5 bytes are echoed.
 *   E echo now            D echo after arg ms (timer)     N no response (acks=0)
 *   W echo after a worker job sleeping arg ms             X bad request: close after flush
 *   C close now           F "HEAD" + file[arg, arg+len) + "TAIL" (len = u32 payload)
 *   B respond with arg bytes of pattern
 *   K take the frame (bk_net_conn_take_frame), answer after arg ms from a timer
 *     with its length and FNV-1a hash, computed from the taken bytes then
 *   S park the state loop (the handler waits until the test sets S.unpark,
 *     at most 10 s), then echo: a slow or blocked state side */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "broker/net/clock.h"
#include "broker/net/mem.h"
#include "broker/net/net.h"
#include "broker/net/net_int.h"     /* test_loops_refused_answer_closes forges a command */
#include "broker/net/ratelog.h"
#include "broker/net/signals.h"
#include "broker/net/worker.h"

#define OPS_MAX 1024
#define OP_BYTES_MAX 256

typedef struct {
    bk_net_slot_t slot;
    uint32_t delay_ms;
    size_t len;
    uint8_t bytes[OP_BYTES_MAX];
} op_t;

typedef struct {
    struct event_base *base;
    bk_net_t *net;
    bk_net_worker_pool_t *pool;
    bk_net_signals_t *sig;
    uint16_t port;
    pthread_t thr;
    bool running;
    int file_fd;
    op_t ops[OPS_MAX]; /* loop thread only */
    int ops_n;
    atomic_int frames;
    atomic_int gone;          /* late completions that found the connection closed */
    atomic_int double_ok;     /* second completion of a slot wrongly accepted */
    atomic_int close_then_respond; /* respond after close not reported GONE */
    atomic_int max_inflight;  /* largest requests_inflight seen by the handler */
    atomic_int stopped;
    atomic_int stop_signals;
    atomic_int done_thread_wrong;
    pthread_t loop_tid;
    _Atomic uint64_t last_conn_id;
    atomic_int prepare_calls;  /* on_prepare ran (any thread) */
    atomic_int prepared_seen;  /* on_frame found a prepared result */
    atomic_int parked;         /* 'S': the state loop waits in the handler */
    atomic_int unpark;
} srv_t;

static srv_t S;

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static op_t *op_new(bk_net_slot_t slot, uint32_t delay_ms, const uint8_t *f, size_t len) {
    ck_assert_int_lt(S.ops_n, OPS_MAX);
    ck_assert_uint_le(len, OP_BYTES_MAX);
    op_t *op = &S.ops[S.ops_n++];
    op->slot = slot;
    op->delay_ms = delay_ms;
    op->len = len;
    memcpy(op->bytes, f, len);
    return op;
}

static void op_answer(op_t *op) {
    struct evbuffer *b = evbuffer_new();
    ck_assert_int_eq(evbuffer_add(b, op->bytes, op->len), 0);
    int rc = bk_net_respond(S.net, op->slot, b);
    if (rc == BK_NET_ERR_GONE) S.gone++;
    else ck_assert_int_eq(rc, BK_NET_OK);
}

/* The delayed-operation pattern: keep the slot (ids, not pointers), answer
 * from a timer; a connection that closed meanwhile makes this BK_NET_ERR_GONE. */
static void delayed_cb(evutil_socket_t fd, short what, void *arg) { op_answer(arg); }

static int job_sleep(void *arg) {
    op_t *op = arg;
    struct timespec ts = { op->delay_ms / 1000, (long)(op->delay_ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
    return 7;
}

static void job_done(void *arg, int status) {
    if (!pthread_equal(pthread_self(), S.loop_tid) && S.running) S.done_thread_wrong++;
    if (status == BK_NET_ERR_CANCELLED) return;
    ck_assert_int_eq(status, 7);
    op_answer(arg);
}

static void respond_file(bk_net_conn_t *conn, bk_net_slot_t slot, uint32_t off, const uint8_t *f, size_t len) {
    ck_assert_uint_ge(len, 9);
    struct evbuffer *b = evbuffer_new();
    ck_assert_int_eq(evbuffer_add(b, "HEAD", 4), 0);
    /* our own fd, closed before the bytes go out: the response must not
     * depend on the caller keeping it open */
    int tmp = dup(S.file_fd);
    ck_assert_int_ge(tmp, 0);
    ck_assert_int_eq(bk_net_resp_add_file(b, tmp, off, be32(f + 5)), BK_NET_OK);
    close(tmp);
    ck_assert_int_eq(evbuffer_add(b, "TAIL", 4), 0);
    ck_assert_int_eq(bk_net_conn_respond(conn, slot, b), BK_NET_OK);
}

static void respond_big(bk_net_conn_t *conn, bk_net_slot_t slot, uint32_t n) {
    uint8_t *bytes = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(bytes);
    for (uint32_t i = 0; i < n; i++) bytes[i] = (uint8_t)(i * 7);
    ck_assert_int_eq(bk_net_conn_respond_bytes(conn, slot, bytes, n), BK_NET_OK);
    free(bytes);
}

static uint32_t fnv1a(const uint8_t *p, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

/* A request that outlives its frame callback, holding the frame it took. */
typedef struct {
    bk_net_slot_t slot;
    uint8_t *bytes;
    size_t len;
} kept_t;

static void kept_cb(evutil_socket_t fd, short what, void *arg) {
    kept_t *k = arg;
    uint8_t out[8];
    put32(out, (uint32_t)k->len);
    put32(out + 4, fnv1a(k->bytes, k->len));
    bk_net_mem_free(k->bytes);   /* back to the block pool */
    struct evbuffer *b = evbuffer_new();
    ck_assert_int_eq(evbuffer_add(b, out, sizeof out), 0);
    int rc = bk_net_respond(S.net, k->slot, b);
    if (rc == BK_NET_ERR_GONE) S.gone++;
    else ck_assert_int_eq(rc, BK_NET_OK);
    free(k);
}

static void keep_frame(bk_net_conn_t *conn, bk_net_slot_t slot, uint32_t delay_ms, const uint8_t *f, size_t len) {
    kept_t *k = malloc(sizeof *k);
    ck_assert_ptr_nonnull(k);
    k->slot = slot;
    k->len = len;
    k->bytes = bk_net_conn_take_frame(conn);
    ck_assert_ptr_nonnull(k->bytes);
    ck_assert_int_eq(memcmp(k->bytes, f, len), 0);
    struct timeval tv = { delay_ms / 1000, (delay_ms % 1000) * 1000 };
    ck_assert_int_eq(event_base_once(S.base, -1, EV_TIMEOUT, kept_cb, k, &tv), 0);
}

/* 'H': answered later with its connection paused meanwhile (the copy
 * path of old-version Fetches: a worker job answers after the handler). */
typedef struct {
    bk_net_slot_t slot;
    uint32_t arg;
} paused_t;

static void paused_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    paused_t *h = arg;
    uint8_t out[5] = { 'H', 0, 0, 0, 0 };
    put32(out + 1, h->arg);
    struct evbuffer *b = evbuffer_new();
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(evbuffer_add(b, out, sizeof out), 0);
    ck_assert_int_eq(bk_net_respond(S.net, h->slot, b), BK_NET_OK);
    bk_net_conn_t *conn = bk_net_conn(S.net, h->slot.conn_id);
    ck_assert_ptr_nonnull(conn);
    ck_assert_int_eq(S.frames, 1);          /* nothing handed out while paused */
    bk_net_conn_resume(conn);
    free(h);
}

static void sleep_ms(int ms);

static void on_frame(bk_net_conn_t *conn, const uint8_t *f, size_t len, void *ctx) {
    ck_assert_ptr_eq(ctx, &S);
    S.frames++;
    bk_net_stats_t st;
    bk_net_stats(S.net, &st);
    if ((int)st.requests_inflight > S.max_inflight) S.max_inflight = (int)st.requests_inflight;
    bk_net_slot_t slot = bk_net_conn_slot(conn);
    ck_assert(slot.conn_id == bk_net_conn_id(conn));
    S.last_conn_id = bk_net_conn_id(conn);
    if (bk_net_conn_prepared(conn)) S.prepared_seen++;
    if (len < 5) {
        ck_assert_int_eq(bk_net_conn_respond_bytes(conn, slot, f, len), BK_NET_OK);
        return;
    }
    uint32_t arg = be32(f + 1);
    switch (f[0]) {
    case 'E':
        ck_assert_int_eq(bk_net_conn_respond_bytes(conn, slot, f, len), BK_NET_OK);
        if (bk_net_conn_respond_none(conn, slot) != BK_NET_ERR_INVALID) S.double_ok++;
        break;
    case 'D': {
        struct timeval tv = { arg / 1000, (arg % 1000) * 1000 };
        ck_assert_int_eq(event_base_once(S.base, -1, EV_TIMEOUT, delayed_cb, op_new(slot, arg, f, len), &tv), 0);
        break;
    }
    case 'W': {
        int rc = bk_net_worker_submit(S.pool, job_sleep, job_done, op_new(slot, arg, f, len));
        ck_assert_int_eq(rc, BK_NET_OK);
        break;
    }
    case 'N': ck_assert_int_eq(bk_net_conn_respond_none(conn, slot), BK_NET_OK); break;
    case 'X':
        ck_assert_int_eq(bk_net_conn_respond_none(conn, slot), BK_NET_OK);
        bk_net_conn_close_after_flush(conn);
        break;
    case 'C':
        bk_net_conn_close(conn);
        if (bk_net_conn_respond_none(conn, slot) != BK_NET_ERR_GONE) S.close_then_respond++;
        break;
    case 'F': respond_file(conn, slot, arg, f, len); break;
    case 'B': respond_big(conn, slot, arg); break;
    case 'K': keep_frame(conn, slot, arg, f, len); break;
    case 'S':
        S.parked = 1;
        for (int i = 0; i < 10000 && !S.unpark; i++) sleep_ms(1);
        S.parked = 0;
        ck_assert_int_eq(bk_net_conn_respond_bytes(conn, slot, f, len), BK_NET_OK);
        break;
    case 'P': /* on_prepare from now on for this connection (SASL: after authentication) */
        bk_net_conn_set_prepare(conn, true);
        ck_assert_int_eq(bk_net_conn_respond_bytes(conn, slot, f, len), BK_NET_OK);
        break;
    case 'H': { /* pause, answer after arg ms, then resume */
        paused_t *h = malloc(sizeof *h);
        ck_assert_ptr_nonnull(h);
        h->slot = slot;
        h->arg = arg;
        bk_net_conn_pause(conn);
        struct timeval tv = { arg / 1000, (arg % 1000) * 1000 };
        ck_assert_int_eq(event_base_once(S.base, -1, EV_TIMEOUT, paused_cb, h, &tv), 0);
        break;
    }
    case 'M': /* answer, then mute the connection for arg ms (client quotas) */
        ck_assert_int_eq(bk_net_conn_respond_bytes(conn, slot, f, len), BK_NET_OK);
        ck_assert_int_eq(bk_net_conn_mute_until(conn, (int64_t)(bk_net_mono_ns() / 1000000u) + arg), BK_NET_OK);
        ck_assert(bk_net_conn_muted(conn));
        /* a shorter mute does not cut the one in force */
        ck_assert_int_eq(bk_net_conn_mute_until(conn, (int64_t)(bk_net_mono_ns() / 1000000u) + 1), BK_NET_OK);
        break;
    default: ck_abort_msg("unknown test command %c", f[0]);
    }
}

static void *loop_main(void *arg) {
    S.loop_tid = pthread_self();
    event_base_loop(S.base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

/* Network loops of the server under test: 1 (the state loop only), or
 * several for the "loops" test case (num.network.threads). */
static uint32_t G_LOOPS = 1;

static void srv_start_cfg(const bk_net_config_t *cfg_in) {
    memset(&S, 0, sizeof S);
    S.file_fd = -1;
    ck_assert_int_eq(evthread_use_pthreads(), 0);
    S.base = event_base_new();
    ck_assert_ptr_nonnull(S.base);
    bk_net_config_t cfg = *cfg_in;
    cfg.on_frame = on_frame;
    cfg.ctx = &S;
    if (cfg.loops <= 1) cfg.loops = G_LOOPS;
    S.net = bk_net_new(S.base, &cfg);
    ck_assert_ptr_nonnull(S.net);
    ck_assert_int_eq(bk_net_listen(S.net, "127.0.0.1", 0, &S.port), BK_NET_OK);
    ck_assert_uint_ne(S.port, 0);
    S.pool = bk_net_worker_pool_new(S.base, 2, OPS_MAX);
    ck_assert_ptr_nonnull(S.pool);
}

static void srv_run(void) {
    S.running = true;
    ck_assert_int_eq(pthread_create(&S.thr, NULL, loop_main, NULL), 0);
}

static void srv_start(void) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    cfg.request_max_bytes = 1 << 20;
    srv_start_cfg(&cfg);
    srv_run();
}

static void srv_stop(void) {
    if (S.running) {
        event_base_loopbreak(S.base);
        pthread_join(S.thr, NULL);
        S.running = false;
    }
    bk_net_worker_pool_free(S.pool, false);
    bk_net_free(S.net);
    bk_net_signals_free(S.sig);
    event_base_free(S.base);
    if (S.file_fd >= 0) close(S.file_fd);
    S.base = NULL;
}

/* Run fn on the loop thread and wait for it. */
typedef struct {
    void (*fn)(void *);
    void *arg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
} call_t;

static void call_cb(evutil_socket_t fd, short what, void *a) {
    call_t *c = a;
    c->fn(c->arg);
    pthread_mutex_lock(&c->mu);
    c->done = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void on_loop(void (*fn)(void *), void *arg) {
    call_t c = { .fn = fn, .arg = arg, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
    struct timeval zero = { 0, 0 };
    ck_assert_int_eq(event_base_once(S.base, -1, EV_TIMEOUT, call_cb, &c, &zero), 0);
    pthread_mutex_lock(&c.mu);
    while (!c.done) pthread_cond_wait(&c.cv, &c.mu);
    pthread_mutex_unlock(&c.mu);
}

static void stats_fn(void *arg) { bk_net_stats(S.net, arg); }

static bk_net_stats_t stats(void) {
    bk_net_stats_t st;
    on_loop(stats_fn, &st);
    return st;
}

static void sleep_ms(int ms) {
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait up to 5 s for the server to have `n` open connections. */
static void wait_conns_open(uint64_t n) {
    for (int i = 0; i < 500; i++) {
        if (stats().conns_open == n) return;
        sleep_ms(10);
    }
    ck_abort_msg("conns_open stayed %llu, wanted %llu", (unsigned long long)stats().conns_open,
                 (unsigned long long)n);
}

/* --- client side --------------------------------------------------------- */

static int cli_connect_rcvbuf(int family, const char *addr, uint16_t port, int rcvbuf) {
    int fd = socket(family, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    if (rcvbuf) ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf), 0);
    struct timeval tv = { 5, 0 };
    ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv), 0);
    int one = 1;
    ck_assert_int_eq(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one), 0);
    int rc;
    if (family == AF_INET) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
        ck_assert_int_eq(inet_pton(AF_INET, addr, &sa.sin_addr), 1);
        rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    } else {
        struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
        ck_assert_int_eq(inet_pton(AF_INET6, addr, &sa.sin6_addr), 1);
        rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    }
    ck_assert_msg(rc == 0, "connect: %s", strerror(errno));
    return fd;
}

static int cli_connect_to(int family, const char *addr, uint16_t port) {
    return cli_connect_rcvbuf(family, addr, port, 0);
}

static int cli_connect(void) { return cli_connect_to(AF_INET, "127.0.0.1", S.port); }

static void send_all(int fd, const void *buf, size_t len) {
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        ck_assert_msg(n > 0, "send: %s", strerror(errno));
        p += n;
        len -= (size_t)n;
    }
}

/* Encodes one test frame (size prefix included) into out; returns its size. */
static size_t enc_frame(uint8_t *out, char cmd, uint32_t arg, uint32_t id) {
    put32(out, 9);
    out[4] = (uint8_t)cmd;
    put32(out + 5, arg);
    put32(out + 9, id);
    return 13;
}

static void send_cmd(int fd, char cmd, uint32_t arg, uint32_t id) {
    uint8_t buf[16];
    send_all(fd, buf, enc_frame(buf, cmd, arg, id));
}

static bool recv_all(int fd, void *buf, size_t len) {
    uint8_t *p = buf;
    while (len) {
        ssize_t n = recv(fd, p, len, 0);
        if (n <= 0) return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

/* Reads one response frame; returns its size, or -1 on EOF/error/timeout. */
static ssize_t recv_frame(int fd, uint8_t *buf, size_t cap) {
    uint8_t hdr[4];
    if (!recv_all(fd, hdr, 4)) return -1;
    uint32_t size = be32(hdr);
    ck_assert_uint_le(size, cap);
    if (!recv_all(fd, buf, size)) return -1;
    return (ssize_t)size;
}

/* Expects a response echoing test frame (cmd, arg, id). */
static void expect_echo(int fd, char cmd, uint32_t arg, uint32_t id) {
    uint8_t buf[64];
    ssize_t n = recv_frame(fd, buf, sizeof buf);
    ck_assert_int_eq(n, 9);
    ck_assert_int_eq(buf[0], cmd);
    ck_assert_uint_eq(be32(buf + 1), arg);
    ck_assert_uint_eq(be32(buf + 5), id);
}

/* True if the server closed the connection (EOF or reset) within 5 s. */
static bool closed_by_server(int fd) {
    uint8_t b[256];
    for (;;) {
        ssize_t n = recv(fd, b, sizeof b, 0);
        if (n == 0) return true;
        if (n < 0) return errno == ECONNRESET;
    }
}

/* --- tests --------------------------------------------------------------- */

START_TEST(test_pipelined_echo_in_order) {
    srv_start();
    int fd = cli_connect();
    enum { N = 1000 };
    static uint8_t buf[N * 13];
    size_t off = 0;
    for (uint32_t i = 0; i < N; i++) off += enc_frame(buf + off, 'E', i * 3, i);
    send_all(fd, buf, off); /* many frames in one write */
    for (uint32_t i = 0; i < N; i++) expect_echo(fd, 'E', i * 3, i);
    bk_net_stats_t st = stats();
    ck_assert_uint_eq(st.requests_total, N);
    ck_assert_uint_eq(st.bytes_in, N * 13);
    ck_assert_uint_eq(st.bytes_out, N * 13);
    ck_assert_uint_eq(st.requests_inflight, 0);
    ck_assert_int_eq(S.double_ok, 0);
    close(fd);
    wait_conns_open(0);
    srv_stop();
}
END_TEST

START_TEST(test_out_of_order_completion_in_order_responses) {
    srv_start();
    int fd = cli_connect();
    /* slow, fast, none, worker, immediate, slower, none, immediate */
    struct { char cmd; uint32_t arg; } seq[] = {
        { 'D', 150 }, { 'D', 10 }, { 'N', 0 }, { 'W', 60 }, { 'E', 0 },
        { 'D', 200 }, { 'N', 0 },  { 'E', 1 }, { 'D', 0 },  { 'W', 0 },
    };
    size_t n = sizeof seq / sizeof seq[0];
    int64_t t0 = now_ms();
    for (uint32_t i = 0; i < n; i++) send_cmd(fd, seq[i].cmd, seq[i].arg, i);
    for (uint32_t i = 0; i < n; i++) {
        if (seq[i].cmd == 'N') continue;
        expect_echo(fd, seq[i].cmd, seq[i].arg, i);
        /* nothing overtakes the 150 ms answer */
        if (i > 0 && i < 5) ck_assert_int_ge(now_ms() - t0, 140);
    }
    /* the "no response" slots did not stall the rest: a new request answers */
    send_cmd(fd, 'E', 9, 99);
    expect_echo(fd, 'E', 9, 99);
    ck_assert_int_eq(S.done_thread_wrong, 0);
    close(fd);
    srv_stop();
}
END_TEST

/* Random mix of immediate, timer, worker and no-response completions over
 * the in-flight bound: answers must still come back in request order. */
START_TEST(test_random_completion_order) {
    srv_start();
    int fd = cli_connect();
    enum { N = 400 };
    static char cmd[N];
    static uint32_t arg[N];
    static uint8_t buf[N * 13];
    srand(7);
    size_t off = 0;
    for (uint32_t i = 0; i < N; i++) {
        int r = rand() % 4;
        cmd[i] = "EDNW"[r];
        arg[i] = r == 1 ? (uint32_t)(rand() % 20) : r == 3 ? (uint32_t)(rand() % 3) : 0;
        off += enc_frame(buf + off, cmd[i], arg[i], i);
    }
    send_all(fd, buf, off);
    for (uint32_t i = 0; i < N; i++)
        if (cmd[i] != 'N') expect_echo(fd, cmd[i], arg[i], i);
    send_cmd(fd, 'E', 0, N);
    expect_echo(fd, 'E', 0, N);
    ck_assert_int_le(S.max_inflight, BK_NET_INFLIGHT_MAX_DEFAULT);
    close(fd);
    srv_stop();
}
END_TEST

static void bogus_slots_fn(void *arg) {
    uint64_t id = S.last_conn_id;
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, "x", 1);
    /* a slot that was never handed out */
    ck_assert_int_eq(bk_net_respond(S.net, (bk_net_slot_t){ id, 1000 }, b), BK_NET_ERR_INVALID);
    /* an already completed one */
    ck_assert_int_eq(bk_net_respond_none(S.net, (bk_net_slot_t){ id, 0 }), BK_NET_ERR_INVALID);
    /* same table entry, other generation: a connection that no longer exists */
    ck_assert_int_eq(bk_net_respond_none(S.net, (bk_net_slot_t){ id + (1ull << 32), 1 }), BK_NET_ERR_GONE);
    ck_assert_ptr_null(bk_net_conn(S.net, id + (1ull << 32)));
    ck_assert_ptr_null(bk_net_conn(S.net, 0xffffffffull)); /* index out of the table */
    ck_assert_ptr_nonnull(bk_net_conn(S.net, id));
}

START_TEST(test_bogus_slots_rejected) {
    srv_start();
    int fd = cli_connect();
    send_cmd(fd, 'E', 1, 1);
    expect_echo(fd, 'E', 1, 1);
    send_cmd(fd, 'D', 100, 2); /* slot 1 stays open meanwhile */
    for (int i = 0; i < 200 && S.frames < 2; i++) sleep_ms(5);
    on_loop(bogus_slots_fn, NULL);
    expect_echo(fd, 'D', 100, 2); /* the open slot was not disturbed */
    close(fd);
    srv_stop();
}
END_TEST

START_TEST(test_only_none_slots_then_echo) {
    srv_start();
    int fd = cli_connect();
    for (uint32_t i = 0; i < 50; i++) send_cmd(fd, 'N', 0, i);
    send_cmd(fd, 'E', 5, 50);
    expect_echo(fd, 'E', 5, 50);
    ck_assert_int_eq(S.frames, 51);
    close(fd);
    srv_stop();
}
END_TEST

START_TEST(test_tiny_writes) {
    srv_start();
    int fd = cli_connect();
    uint8_t buf[13 * 3];
    size_t off = 0;
    for (uint32_t i = 0; i < 3; i++) off += enc_frame(buf + off, 'E', 100 + i, i);
    for (size_t i = 0; i < off; i++) {
        send_all(fd, buf + i, 1);
        if (i % 5 == 0) sleep_ms(1); /* let the server see partial frames */
    }
    for (uint32_t i = 0; i < 3; i++) expect_echo(fd, 'E', 100 + i, i);
    close(fd);
    srv_stop();
}
END_TEST

START_TEST(test_zero_and_short_frames_echo) {
    srv_start();
    int fd = cli_connect();
    uint8_t zero[4] = { 0, 0, 0, 0 };
    send_all(fd, zero, 4);
    uint8_t three[7] = { 0, 0, 0, 3, 'a', 'b', 'c' };
    send_all(fd, three, 7);
    uint8_t buf[16];
    ck_assert_int_eq(recv_frame(fd, buf, sizeof buf), 0);
    ck_assert_int_eq(recv_frame(fd, buf, sizeof buf), 3);
    ck_assert_mem_eq(buf, "abc", 3);
    close(fd);
    srv_stop();
}
END_TEST

/* A bad size closes that connection only; the other keeps working. */
static void bad_prefix_case(const uint8_t *bytes, size_t len) {
    srv_start();
    int good = cli_connect();
    int bad = cli_connect();
    send_all(bad, bytes, len);
    ck_assert(closed_by_server(bad));
    close(bad);
    send_cmd(good, 'E', 1, 1);
    expect_echo(good, 'E', 1, 1);
    bk_net_stats_t st = stats();
    ck_assert_uint_eq(st.conns_bad_frame, 1);
    ck_assert_int_eq(S.frames, 1); /* the bad frame never reached the handler */
    wait_conns_open(1);
    close(good);
    srv_stop();
}

START_TEST(test_oversized_frame_closes) {
    uint8_t b[4];
    put32(b, (1u << 20) + 1); /* request_max_bytes + 1 */
    bad_prefix_case(b, 4);
}
END_TEST

START_TEST(test_max_size_frame_accepted) {
    srv_start();
    int fd = cli_connect();
    size_t size = 1u << 20;
    uint8_t *buf = calloc(1, size + 4);
    put32(buf, (uint32_t)size);
    for (size_t i = 4; i < size + 4; i++) buf[i] = (uint8_t)(i * 13);
    buf[4] = 'B'; /* answer with 3 pattern bytes */
    put32(buf + 5, 3);
    send_all(fd, buf, size + 4);
    uint8_t out[8];
    ck_assert_int_eq(recv_frame(fd, out, sizeof out), 3);
    ck_assert_uint_eq(out[1], 7);
    free(buf);
    close(fd);
    srv_stop();
}
END_TEST

/* Heap in use by the whole process (glibc: small blocks + mmap'd ones). */
/* Resident bytes of this process (/proc/self/statm). */
static size_t rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    ck_assert_ptr_nonnull(f);
    unsigned long size = 0, resident = 0;
    ck_assert_int_eq(fscanf(f, "%lu %lu", &size, &resident), 2);
    fclose(f);
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

static size_t heap_in_use(void) {
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/* A size prefix alone does not allocate the frame it announces: the input
 * buffer grows with the bytes that arrive (conn.c in_make_room), so many
 * connections announcing large frames and sending little hold little. The
 * frames then arrive in pieces, the buffer grows under them, and each is
 * handed out intact (K: length and hash of the taken bytes). */
START_TEST(test_announced_size_not_allocated_up_front) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    cfg.request_max_bytes = 16 << 20;
    srv_start_cfg(&cfg);
    srv_run();
    enum { C = 16, HEAD = 100 };
    const size_t size = (size_t)8 << 20;
    uint8_t *frame = malloc(4 + size);
    ck_assert_ptr_nonnull(frame);
    put32(frame, (uint32_t)size);
    for (size_t i = 4; i < 4 + size; i++) frame[i] = (uint8_t)(i * 7 + 1);
    frame[4] = 'K';
    put32(frame + 5, 0);
    uint32_t want_hash = fnv1a(frame + 4, size);
    int fds[C];
    for (int c = 0; c < C; c++) fds[c] = cli_connect();
    wait_conns_open(C);
    size_t before = heap_in_use();
    size_t rss_before = rss_bytes();
    /* two reads per connection: the room for the second is what the first
     * one's prefix announced, were it taken at its word */
    for (int c = 0; c < C; c++) send_all(fds[c], frame, 4 + HEAD);
    sleep_ms(100);
    for (int c = 0; c < C; c++) send_all(fds[c], frame + 4 + HEAD, HEAD);
    sleep_ms(100);
    size_t after = heap_in_use();
    /* announced: C x 8 MiB = 128 MiB; read: C x (a 64 KB chunk at most);
     * buffers above the chunk are mmap'd (not in mallinfo): the net's count */
    ck_assert_uint_lt(after > before ? after - before : 0, (size_t)16 << 20);
    /* frames above the chunk reserve address space (mmap, counted against
     * the budget: 16 x 8 MiB) but only the pages written are resident */
    ck_assert_uint_lt(rss_bytes() - rss_before, (size_t)16 << 20);
    for (int c = 0; c < C; c++) {
        /* the rest in uneven pieces, so the buffer grows several times */
        size_t off = 4 + 2 * HEAD, piece = 1000;
        while (off < 4 + size) {
            size_t n = 4 + size - off < piece ? 4 + size - off : piece;
            send_all(fds[c], frame + off, n);
            off += n;
            piece = piece * 3 + 17;
        }
        uint8_t out[16];
        ck_assert_int_eq(recv_frame(fds[c], out, sizeof out), 8);
        ck_assert_uint_eq(be32(out), size);
        ck_assert_uint_eq(be32(out + 4), want_hash);
    }
    for (int c = 0; c < C; c++) close(fds[c]);
    wait_conns_open(0);
    free(frame);
    srv_stop();
}
END_TEST


/* queued.max.request.bytes: buffers above the chunk over all connections
 * stay within the budget; a connection whose frame cannot grow stops being
 * read (counted as waiting) and resumes when memory is released; every
 * frame is still handed out intact, and the count returns to 0. */
static uint8_t *k_frame(size_t size, uint32_t *hash) {
    uint8_t *frame = malloc(4 + size);
    ck_assert_ptr_nonnull(frame);
    put32(frame, (uint32_t)size);
    for (size_t i = 4; i < 4 + size; i++) frame[i] = (uint8_t)(i * 13 + 5);
    frame[4] = 'K';
    put32(frame + 5, 0);
    *hash = fnv1a(frame + 4, size);
    return frame;
}

START_TEST(test_request_budget_pauses_reading) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    cfg.request_max_bytes = 4 << 20;
    cfg.queued_bytes_max = 5 << 20;
    srv_start_cfg(&cfg);
    srv_run();
    enum { C = 3 };
    const size_t size = (size_t)3 << 20, first = (size_t)5 << 19; /* 2.5 MiB of 3 MiB */
    uint32_t want_hash;
    uint8_t *frame = k_frame(size, &want_hash);
    int fds[C];
    for (int c = 0; c < C; c++) {
        fds[c] = cli_connect();
        ck_assert_int_eq(fcntl(fds[c], F_SETFL, O_NONBLOCK), 0);
    }
    wait_conns_open(C);
    size_t sent[C] = { 0 };
    /* push as much of `first` as each socket takes, several rounds */
    for (int round = 0; round < 40; round++) {
        for (int c = 0; c < C; c++) {
            while (sent[c] < 4 + first) {
                ssize_t n = send(fds[c], frame + sent[c], 4 + first - sent[c], MSG_NOSIGNAL);
                if (n <= 0) break;
                sent[c] += (size_t)n;
            }
        }
        sleep_ms(25);
    }
    bk_net_stats_t st = stats();
    ck_assert_uint_le(st.queued_bytes, (uint64_t)5 << 20);
    ck_assert_uint_le(st.queued_bytes_peak, (uint64_t)5 << 20);
    ck_assert_uint_ge(st.mem_waiting, 1);
    ck_assert_uint_ge(st.mem_waits, 1);
    /* finish every frame: the waiting ones get room as others complete */
    for (int c = 0; c < C; c++) ck_assert_int_eq(fcntl(fds[c], F_SETFL, 0), 0);
    for (int c = 0; c < C; c++) {
        send_all(fds[c], frame + sent[c], 4 + size - sent[c]);
    }
    for (int c = 0; c < C; c++) {
        uint8_t out[16];
        ck_assert_int_eq(recv_frame(fds[c], out, sizeof out), 8);
        ck_assert_uint_eq(be32(out), size);
        ck_assert_uint_eq(be32(out + 4), want_hash);
    }
    st = stats();
    ck_assert_uint_eq(st.queued_bytes, 0);
    ck_assert_uint_eq(st.mem_waiting, 0);
    for (int c = 0; c < C; c++) close(fds[c]);
    wait_conns_open(0);
    free(frame);
    srv_stop();
}
END_TEST

/* A connection holding a big frame's mapping (its next frame's first
 * bytes read behind the first) that grows for a bigger frame reserves only
 * the growth: the old reservation goes in the same step, so the count
 * never holds both (2 + 2.5 MiB against a 3 MiB budget). */
START_TEST(test_request_budget_growth_counts_once) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    cfg.request_max_bytes = 4 << 20;
    cfg.queued_bytes_max = 3 << 20;
    srv_start_cfg(&cfg);
    srv_run();
    const size_t a = (size_t)2 << 20, b = (size_t)5 << 19;
    uint32_t ha, hb;
    uint8_t *fa = k_frame(a, &ha), *fb = k_frame(b, &hb);
    int fd = cli_connect();
    wait_conns_open(1);
    /* the first frame and the start of the second in one go: the second's
     * size prefix lands in the first's mapping (page slack behind it) */
    uint8_t *both = malloc(4 + a + 1000);
    ck_assert_ptr_nonnull(both);
    memcpy(both, fa, 4 + a);
    memcpy(both + 4 + a, fb, 1000);
    send_all(fd, both, 4 + a + 1000);
    uint8_t out[16];
    ck_assert_int_eq(recv_frame(fd, out, sizeof out), 8);
    ck_assert_uint_eq(be32(out), a);
    ck_assert_uint_eq(be32(out + 4), ha);
    send_all(fd, fb + 1000, 4 + b - 1000);
    ck_assert_int_eq(recv_frame(fd, out, sizeof out), 8);
    ck_assert_uint_eq(be32(out), b);
    ck_assert_uint_eq(be32(out + 4), hb);
    bk_net_stats_t st = stats();
    ck_assert_uint_ge(st.queued_bytes_peak, b);
    ck_assert_uint_le(st.queued_bytes_peak, (uint64_t)3 << 20);
    close(fd);
    wait_conns_open(0);
    ck_assert_uint_eq(stats().queued_bytes, 0);
    free(both);
    free(fa);
    free(fb);
    srv_stop();
}
END_TEST

/* A connection paused for the budget whose peer leaves is closed (its read
 * event is off, EV_CLOSED tells): the budget it held comes back. */
START_TEST(test_request_budget_waiter_leaves) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    cfg.request_max_bytes = 4 << 20;
    cfg.queued_bytes_max = 4 << 20;
    srv_start_cfg(&cfg);
    srv_run();
    uint32_t h;
    uint8_t *frame = k_frame((size_t)4 << 20, &h);
    int a = cli_connect(), b = cli_connect();
    ck_assert_int_eq(fcntl(a, F_SETFL, O_NONBLOCK), 0);
    ck_assert_int_eq(fcntl(b, F_SETFL, O_NONBLOCK), 0);
    wait_conns_open(2);
    size_t sa = 0, part = (size_t)3 << 20;
    /* a first, so that a holds the reservation and b waits */
    for (int round = 0; round < 20; round++) {
        ssize_t n;
        while (sa < part && (n = send(a, frame + sa, part - sa, MSG_NOSIGNAL)) > 0) sa += (size_t)n;
        sleep_ms(25);
    }
    /* b sends little: all of it fits the node's socket buffer, so b's FIN
     * gets through (more unread bytes would hold the FIN back in b's send
     * queue; such a waiter goes at connections.max.idle.ms) */
    send_all(b, frame, 100000);
    sleep_ms(200);
    bk_net_stats_t w = stats();
    ck_assert_uint_eq(w.mem_waiting, 1);
    ck_assert_uint_eq(w.queued_bytes, (uint64_t)4 << 20);
    /* the waiter leaves while the other keeps the budget: only EV_CLOSED
     * can tell (its read event is off) */
    int waiter = b, holder = a;
    close(waiter);
    wait_conns_open(1);
    ck_assert_uint_eq(stats().mem_waiting, 0);
    close(holder);
    wait_conns_open(0);
    bk_net_stats_t st = stats();
    ck_assert_uint_eq(st.queued_bytes, 0);
    ck_assert_uint_eq(st.mem_waiting, 0);
    free(frame);
    srv_stop();
}
END_TEST

/* connections.max.idle.ms: a connection with nothing read, written or in
 * flight is closed by the once-a-second pass; one that keeps asking is not. */
START_TEST(test_idle_connection_closed) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    cfg.idle_ms = 400;
    srv_start_cfg(&cfg);
    srv_run();
    int idle = cli_connect(), busy = cli_connect();
    wait_conns_open(2);
    for (int i = 0; i < 12; i++) {
        send_cmd(busy, 'E', (uint32_t)i, 1);
        expect_echo(busy, 'E', (uint32_t)i, 1);
        sleep_ms(200);
    }
    ck_assert(closed_by_server(idle));
    send_cmd(busy, 'E', 99, 1);
    expect_echo(busy, 'E', 99, 1);
    ck_assert_uint_eq(stats().conns_idle_closed, 1);
    close(idle);
    close(busy);
    srv_stop();
}
END_TEST

static void ip_limits_fn(void *arg) {
    bk_net_ip_limit_t over = { .addr = { 127, 0, 0, 2 }, .addr_len = 4, .max = 0 };
    ck_assert_int_eq(bk_net_set_ip_limits(S.net, 2, &over, 1), BK_NET_OK);
    (void)arg;
}

/* max.connections.per.ip: 2 from 127.0.0.1; the override 127.0.0.2:0
 * refuses every connection from there. */
START_TEST(test_per_ip_limit) {
    srv_start();
    on_loop(ip_limits_fn, NULL);
    int a = cli_connect(), b = cli_connect();
    wait_conns_open(2);
    int c = cli_connect();
    ck_assert(closed_by_server(c));
    int d = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in src = { .sin_family = AF_INET };
    inet_pton(AF_INET, "127.0.0.2", &src.sin_addr);
    ck_assert_int_eq(bind(d, (struct sockaddr *)&src, sizeof src), 0);
    struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(S.port) };
    inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
    ck_assert_int_eq(connect(d, (struct sockaddr *)&dst, sizeof dst), 0);
    ck_assert(closed_by_server(d));
    bk_net_stats_t st = stats();
    ck_assert_uint_eq(st.conns_rejected_ip, 2);
    ck_assert_uint_eq(st.conns_rejected, 2);
    send_cmd(a, 'E', 1, 1);
    expect_echo(a, 'E', 1, 1);
    close(a); close(b); close(c); close(d);
    srv_stop();
}
END_TEST

/* The log limiter: burst lines per cause per window, then a count. */
START_TEST(test_ratelog) {
    bk_net_ratelog_t rl;
    bk_net_ratelog_init(&rl, 3, 1000);
    int printed = 0;
    for (int i = 0; i < 100; i++) printed += bk_net_ratelog(&rl, 10, "cause a", "test line a %d", i);
    for (int i = 0; i < 2; i++) printed += bk_net_ratelog(&rl, 20, "cause b", "test line b %d", i);
    ck_assert_int_eq(printed, 3 + 2);
    ck_assert_uint_eq(rl.dropped_total, 97);
    ck_assert_uint_eq(bk_net_ratelog_flush(&rl, 500), 0);      /* window not over */
    ck_assert_uint_eq(bk_net_ratelog_flush(&rl, 1010), 1);     /* a's count; b dropped none */
    ck_assert(bk_net_ratelog(&rl, 1020, "cause a", "test line a again"));
    /* more causes than entries share the last one */
    for (int i = 0; i < BK_NET_RATELOG_CAUSES + 4; i++) {
        char cause[16];
        snprintf(cause, sizeof cause, "c%d", i);
        (void)bk_net_ratelog(&rl, 2000, cause, "x");
    }
    ck_assert_str_eq(rl.causes[0].cause, "cause a");
}
END_TEST

/* Frames kept past their callback (bk_net_conn_take_frame) stay intact while the
 * net reads and hands out the frames after them, and every kept byte was
 * copied exactly once in user space, at the take (the socket reads every
 * frame into place in the input buffer). The old path (pullup, then a copy
 * in the dispatcher) copied a large frame twice. */
START_TEST(test_taken_frames_copied_once) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    cfg.request_max_bytes = 2 << 20;
    cfg.inflight_max = 64;
    srv_start_cfg(&cfg);
    srv_run();
    int fd = cli_connect();
    enum { SMALL = 40, LARGE = 6 };
    size_t sizes[SMALL + LARGE];
    for (int i = 0; i < SMALL + LARGE; i++) sizes[i] = i < SMALL ? 9 + (size_t)i * 3 : ((size_t)1 << 20) + (size_t)i;
    /* interleave: a large frame after every few small ones, all in one stream */
    size_t order[SMALL + LARGE], total = 0, frames_bytes = 0;
    for (int i = 0, s_i = 0, l_i = SMALL; i < SMALL + LARGE; i++)
        order[i] = (i % 8 == 7 && l_i < SMALL + LARGE) || s_i == SMALL ? (size_t)l_i++ : (size_t)s_i++;
    for (int i = 0; i < SMALL + LARGE; i++) total += 4 + sizes[order[i]];
    uint8_t *buf = malloc(total);
    ck_assert_ptr_nonnull(buf);
    uint32_t want_hash[SMALL + LARGE];
    size_t off = 0;
    for (int i = 0; i < SMALL + LARGE; i++) {
        size_t n = sizes[order[i]];
        put32(buf + off, (uint32_t)n);
        uint8_t *f = buf + off + 4;
        for (size_t j = 0; j < n; j++) f[j] = (uint8_t)(j * 31 + (size_t)i);
        f[0] = 'K';
        put32(f + 1, (uint32_t)(i % 3) * 5);   /* 0, 5 or 10 ms: answers complete out of order */
        want_hash[i] = fnv1a(f, n);
        frames_bytes += n;
        off += 4 + n;
    }
    ck_assert_uint_eq(off, total);
    send_all(fd, buf, total);
    for (int i = 0; i < SMALL + LARGE; i++) {
        uint8_t out[16];
        ck_assert_int_eq(recv_frame(fd, out, sizeof out), 8);
        ck_assert_uint_eq(be32(out), sizes[order[i]]);
        ck_assert_uint_eq(be32(out + 4), want_hash[i]);
    }
    bk_net_stats_t st = stats();
    ck_assert_uint_eq(st.requests_total, SMALL + LARGE);
    ck_assert_uint_eq(st.frame_copy_bytes, frames_bytes);   /* once per byte, not twice */
    /* a handler that does not take copies nothing more than gathering costs */
    send_cmd(fd, 'E', 1, 2);
    expect_echo(fd, 'E', 1, 2);
    ck_assert_uint_le(stats().frame_copy_bytes, frames_bytes + 9);
    free(buf);
    close(fd);
    wait_conns_open(0);
    srv_stop();
}
END_TEST

START_TEST(test_negative_size_closes) {
    uint8_t b[4] = { 0xff, 0xff, 0xff, 0xfe };
    bad_prefix_case(b, 4);
}
END_TEST

START_TEST(test_garbage_closes) {
    const char *http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"; /* size 0x47455420 */
    bad_prefix_case((const uint8_t *)http, strlen(http));
}
END_TEST

/* EOF after every possible prefix of a frame: closed, nothing leaks, no
 * handler call for the incomplete frame. */
START_TEST(test_eof_mid_frame) {
    srv_start();
    uint8_t buf[13];
    enc_frame(buf, 'E', 0, 0);
    for (size_t cut = 1; cut < sizeof buf; cut++) {
        int fd = cli_connect();
        send_all(fd, buf, cut);
        ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
        ck_assert(closed_by_server(fd));
        close(fd);
    }
    wait_conns_open(0);
    ck_assert_int_eq(S.frames, 0);
    ck_assert_uint_eq(stats().conns_total, sizeof buf - 1);
    srv_stop();
}
END_TEST

START_TEST(test_close_while_on_worker_and_timer) {
    srv_start();
    int fd = cli_connect();
    send_cmd(fd, 'W', 150, 1);
    send_cmd(fd, 'D', 150, 2);
    send_cmd(fd, 'W', 150, 3);
    for (int i = 0; i < 200 && S.frames < 3; i++) sleep_ms(5);
    ck_assert_int_eq(S.frames, 3);
    close(fd);
    wait_conns_open(0);
    for (int i = 0; i < 200 && S.gone < 3; i++) sleep_ms(10);
    ck_assert_int_eq(S.gone, 3);
    bk_net_stats_t st = stats();
    ck_assert_uint_eq(st.requests_inflight, 0);
    ck_assert_int_eq(S.done_thread_wrong, 0);
    srv_stop();
}
END_TEST

/* A late answer for a closed connection must not reach the connection that
 * reuses its table entry. */
START_TEST(test_slot_of_closed_conn_not_delivered_to_successor) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    cfg.conns_max = 1;
    srv_start_cfg(&cfg);
    srv_run();
    int a = cli_connect();
    send_cmd(a, 'D', 1000, 1);
    for (int i = 0; i < 200 && S.frames < 1; i++) sleep_ms(5);
    close(a);
    wait_conns_open(0);
    int b = cli_connect();
    wait_conns_open(1);
    send_cmd(b, 'E', 2, 2);
    expect_echo(b, 'E', 2, 2);
    for (int i = 0; i < 300 && S.gone < 1; i++) sleep_ms(10); /* A's timer fires */
    ck_assert_int_eq(S.gone, 1);
    send_cmd(b, 'E', 3, 3);
    expect_echo(b, 'E', 3, 3); /* not A's 'D' */
    close(b);
    srv_stop();
}
END_TEST

START_TEST(test_conns_max_rejects) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    cfg.conns_max = 2;
    srv_start_cfg(&cfg);
    srv_run();
    int a = cli_connect(), b = cli_connect();
    wait_conns_open(2);
    int c = cli_connect();
    ck_assert(closed_by_server(c));
    ck_assert_uint_eq(stats().conns_rejected, 1);
    send_cmd(a, 'E', 1, 1);
    expect_echo(a, 'E', 1, 1);
    close(a); close(b); close(c);
    srv_stop();
}
END_TEST

START_TEST(test_file_range_response) {
    srv_start();
    char path[] = "/tmp/skiff-test-net-XXXXXX";
    int ffd = mkstemp(path);
    ck_assert_int_ge(ffd, 0);
    unlink(path);
    enum { FILE_BYTES = 200000, OFF = 1234, LEN = 150001 };
    static uint8_t content[FILE_BYTES];
    srand(42);
    for (size_t i = 0; i < FILE_BYTES; i++) content[i] = (uint8_t)rand();
    ck_assert_int_eq(write(ffd, content, FILE_BYTES), FILE_BYTES);
    S.file_fd = ffd;
    int fd = cli_connect();
    uint8_t frame[17];
    put32(frame, 13);
    frame[4] = 'F';
    put32(frame + 5, OFF);
    put32(frame + 9, LEN);
    put32(frame + 13, 0);
    send_all(fd, frame, sizeof frame);
    send_cmd(fd, 'E', 5, 5); /* a plain response after the file one */
    static uint8_t out[LEN + 8];
    ck_assert_int_eq(recv_frame(fd, out, sizeof out), LEN + 8);
    ck_assert_mem_eq(out, "HEAD", 4);
    ck_assert_int_eq(memcmp(out + 4, content + OFF, LEN), 0);
    ck_assert_mem_eq(out + 4 + LEN, "TAIL", 4);
    expect_echo(fd, 'E', 5, 5);
    close(fd);
    srv_stop();
}
END_TEST

START_TEST(test_resp_add_file_rejects_bad_args) {
    struct evbuffer *b = evbuffer_new();
    ck_assert_int_eq(bk_net_resp_add_file(b, -1, 0, 10), BK_NET_ERR_INVALID);
    ck_assert_int_eq(bk_net_resp_add_file(b, 0, -1, 10), BK_NET_ERR_INVALID);
    ck_assert_int_eq(bk_net_resp_add_file(b, 0, 0, -1), BK_NET_ERR_INVALID);
    ck_assert_int_eq(bk_net_resp_add_file(b, 0, 0, (int64_t)INT32_MAX + 1), BK_NET_ERR_INVALID);
    ck_assert_int_eq(bk_net_resp_add_file(b, 12345, 0, 10), BK_NET_ERR_SYS); /* not open */
    ck_assert_uint_eq(evbuffer_get_length(b), 0);
    evbuffer_free(b);
}
END_TEST

START_TEST(test_close_after_flush) {
    srv_start();
    int other = cli_connect();
    int fd = cli_connect();
    send_cmd(fd, 'D', 80, 1);
    send_cmd(fd, 'E', 2, 2);
    send_cmd(fd, 'X', 0, 3);
    send_cmd(fd, 'E', 4, 4); /* after the bad one: never handled */
    expect_echo(fd, 'D', 80, 1);
    expect_echo(fd, 'E', 2, 2);
    ck_assert(closed_by_server(fd));
    ck_assert_int_eq(S.frames, 3);
    close(fd);
    send_cmd(other, 'E', 7, 7);
    expect_echo(other, 'E', 7, 7);
    close(other);
    srv_stop();
}
END_TEST

START_TEST(test_close_in_handler) {
    srv_start();
    int fd = cli_connect();
    send_cmd(fd, 'E', 1, 1);
    expect_echo(fd, 'E', 1, 1);
    send_cmd(fd, 'C', 0, 2);
    send_cmd(fd, 'E', 3, 3);
    ck_assert(closed_by_server(fd));
    ck_assert_int_eq(S.frames, 2);
    ck_assert_int_eq(S.close_then_respond, 0);
    close(fd);
    wait_conns_open(0);
    srv_stop();
}
END_TEST

START_TEST(test_inflight_bound_pauses_reading) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    cfg.inflight_max = 4;
    srv_start_cfg(&cfg);
    srv_run();
    int fd = cli_connect();
    for (uint32_t i = 0; i < 12; i++) send_cmd(fd, 'D', 300, i);
    for (int i = 0; i < 200 && S.frames < 4; i++) sleep_ms(1);
    sleep_ms(50);
    ck_assert_int_eq(S.frames, 4); /* the rest waits unread */
    for (uint32_t i = 0; i < 12; i++) expect_echo(fd, 'D', 300, i);
    ck_assert_int_eq(S.frames, 12);
    ck_assert_int_eq(S.max_inflight, 4);
    close(fd);
    srv_stop();
}
END_TEST

START_TEST(test_output_bound_pauses_reading) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    cfg.output_max_bytes = 64 * 1024;
    cfg.inflight_max = 1024;
    srv_start_cfg(&cfg);
    srv_run();
    /* a small receive window so backpressure shows early */
    int fd = cli_connect_rcvbuf(AF_INET, "127.0.0.1", S.port, 4096);
    enum { N = 400, RESP = 32 * 1024 };
    for (uint32_t i = 0; i < N; i++) send_cmd(fd, 'B', RESP, i);
    for (int i = 0; i < 200 && S.frames == 0; i++) sleep_ms(10);
    sleep_ms(200);
    int handled = S.frames;
    ck_assert_int_lt(handled, N); /* the peer does not read: we stopped reading */
    ck_assert_int_gt(handled, 0);
    int big = 1 << 20; /* now read fast */
    ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big), 0);
    static uint8_t out[RESP];
    for (uint32_t i = 0; i < N; i++) {
        ck_assert_int_eq(recv_frame(fd, out, sizeof out), RESP);
        ck_assert_uint_eq(out[RESP - 1], (uint8_t)((RESP - 1) * 7));
    }
    ck_assert_int_eq(S.frames, N);
    close(fd);
    srv_stop();
}
END_TEST

START_TEST(test_many_connections) {
    srv_start();
    enum { C = 200, F = 5 };
    static int fds[C];
    for (int c = 0; c < C; c++) fds[c] = cli_connect();
    for (int c = 0; c < C; c++)
        for (uint32_t f = 0; f < F; f++) send_cmd(fds[c], f % 2 ? 'E' : 'W', 0, (uint32_t)c * 100 + f);
    for (int c = 0; c < C; c++)
        for (uint32_t f = 0; f < F; f++) expect_echo(fds[c], f % 2 ? 'E' : 'W', 0, (uint32_t)c * 100 + f);
    bk_net_stats_t st = stats();
    ck_assert_uint_eq(st.conns_open, C);
    ck_assert_uint_eq(st.conns_total, C);
    ck_assert_uint_eq(st.requests_total, C * F);
    for (int c = 0; c < C; c++) close(fds[c]);
    wait_conns_open(0);
    srv_stop();
}
END_TEST

START_TEST(test_ipv6_loopback) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    srv_start_cfg(&cfg);
    uint16_t port6 = 0;
    int rc = bk_net_listen(S.net, "::1", 0, &port6);
    if (rc != BK_NET_OK) { /* no IPv6 on this host: nothing to test */
        srv_stop();
        return;
    }
    ck_assert_uint_ne(port6, 0);
    srv_run();
    int fd = cli_connect_to(AF_INET6, "::1", port6);
    send_cmd(fd, 'E', 6, 6);
    expect_echo(fd, 'E', 6, 6);
    close(fd);
    srv_stop();
}
END_TEST

START_TEST(test_listen_bad_address) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    srv_start_cfg(&cfg);
    ck_assert_int_eq(bk_net_listen(S.net, "not-an-ip", 0, NULL), BK_NET_ERR_INVALID);
    ck_assert_int_eq(bk_net_listen(S.net, "127.0.0.1", S.port, NULL), BK_NET_ERR_SYS); /* in use */
    srv_stop();
}
END_TEST

START_TEST(test_config_validation) {
    struct event_base *base = event_base_new();
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    ck_assert_ptr_null(bk_net_new(base, &cfg)); /* no handler */
    cfg.on_frame = on_frame;
    cfg.inflight_max = 0;
    ck_assert_ptr_null(bk_net_new(base, &cfg));
    cfg.inflight_max = BK_NET_INFLIGHT_MAX_LIMIT + 1;
    ck_assert_ptr_null(bk_net_new(base, &cfg));
    cfg.inflight_max = 1;
    cfg.request_max_bytes = -1;
    ck_assert_ptr_null(bk_net_new(base, &cfg));
    cfg.request_max_bytes = 0;
    bk_net_t *net = bk_net_new(base, &cfg);
    ck_assert_ptr_nonnull(net);
    bk_net_free(net);
    event_base_free(base);
}
END_TEST

static void stopped_cb(bk_net_t *net, void *arg) {
    S.stopped++;
    event_base_loopbreak(S.base);
}

static void shutdown_fn(void *arg) {
    uint32_t deadline_ms = *(uint32_t *)arg;
    ck_assert_int_eq(bk_net_shutdown(S.net, deadline_ms, stopped_cb, NULL), BK_NET_OK);
    ck_assert_int_eq(bk_net_shutdown(S.net, deadline_ms, stopped_cb, NULL), BK_NET_ERR_STOPPED);
}

START_TEST(test_graceful_shutdown_finishes_inflight) {
    srv_start();
    int fd = cli_connect();
    send_cmd(fd, 'D', 100, 1);
    send_cmd(fd, 'W', 50, 2);
    for (int i = 0; i < 200 && S.frames < 2; i++) sleep_ms(5);
    uint32_t deadline_ms = 3000;
    on_loop(shutdown_fn, &deadline_ms);
    send_cmd(fd, 'E', 3, 3); /* arrives after the stop: never handled */
    expect_echo(fd, 'D', 100, 1);
    expect_echo(fd, 'W', 50, 2);
    ck_assert(closed_by_server(fd));
    close(fd);
    pthread_join(S.thr, NULL); /* stopped_cb broke the loop */
    S.running = false;
    ck_assert_int_eq(S.stopped, 1);
    ck_assert_int_eq(S.frames, 2);
    /* the listener is gone */
    int probe = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(S.port) };
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    ck_assert_int_ne(connect(probe, (struct sockaddr *)&sa, sizeof sa), 0);
    close(probe);
    srv_stop();
}
END_TEST

START_TEST(test_graceful_shutdown_deadline) {
    srv_start();
    int fd = cli_connect();
    send_cmd(fd, 'D', 4000, 1);
    for (int i = 0; i < 200 && S.frames < 1; i++) sleep_ms(5);
    uint32_t deadline_ms = 100;
    int64_t t0 = now_ms();
    on_loop(shutdown_fn, &deadline_ms);
    ck_assert(closed_by_server(fd));
    int64_t took = now_ms() - t0;
    ck_assert_int_ge(took, 90);
    ck_assert_int_lt(took, 2000);
    close(fd);
    pthread_join(S.thr, NULL);
    S.running = false;
    ck_assert_int_eq(S.stopped, 1);
    srv_stop();
}
END_TEST

START_TEST(test_shutdown_without_connections) {
    srv_start();
    uint32_t deadline_ms = 5000;
    int64_t t0 = now_ms();
    on_loop(shutdown_fn, &deadline_ms);
    pthread_join(S.thr, NULL);
    S.running = false;
    ck_assert_int_lt(now_ms() - t0, 1000); /* did not wait for the deadline */
    ck_assert_int_eq(S.stopped, 1);
    srv_stop();
}
END_TEST

static void on_stop_signal(int signo, unsigned count, void *arg) {
    ck_assert_int_eq(signo, SIGTERM);
    S.stop_signals = (int)count;
    if (count == 1) ck_assert_int_eq(bk_net_shutdown(S.net, 2000, stopped_cb, NULL), BK_NET_OK);
}

START_TEST(test_sigterm_graceful_stop) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    srv_start_cfg(&cfg);
    S.sig = bk_net_signals_new(S.base, on_stop_signal, NULL);
    ck_assert_ptr_nonnull(S.sig);
    struct sigaction old;
    ck_assert_int_eq(sigaction(SIGPIPE, NULL, &old), 0);
    ck_assert(old.sa_handler == SIG_IGN);
    srv_run();
    int fd = cli_connect();
    send_cmd(fd, 'D', 100, 1);
    for (int i = 0; i < 200 && S.frames < 1; i++) sleep_ms(5);
    ck_assert_int_eq(kill(getpid(), SIGTERM), 0);
    expect_echo(fd, 'D', 100, 1);
    ck_assert(closed_by_server(fd));
    close(fd);
    pthread_join(S.thr, NULL);
    S.running = false;
    ck_assert_int_eq(S.stop_signals, 1);
    ck_assert_int_eq(S.stopped, 1);
    srv_stop();
}
END_TEST

/* A peer that vanishes while a big response is being written: EPIPE on
 * that connection only (SIGPIPE ignored), the node stays up. */
START_TEST(test_peer_reset_during_write) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    srv_start_cfg(&cfg);
    S.sig = bk_net_signals_new(S.base, on_stop_signal, NULL);
    ck_assert_ptr_nonnull(S.sig);
    srv_run();
    int fd = cli_connect();
    for (uint32_t i = 0; i < 20; i++) send_cmd(fd, 'B', 1 << 20, i);
    sleep_ms(50);
    struct linger lg = { 1, 0 }; /* close with RST */
    ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
    close(fd);
    wait_conns_open(0);
    int fd2 = cli_connect();
    send_cmd(fd2, 'E', 1, 1);
    expect_echo(fd2, 'E', 1, 1);
    close(fd2);
    srv_stop();
}
END_TEST

/* KIP-219's channel muting: the answer to the muting request leaves at
 * once; a frame already buffered behind it and a frame sent during the mute
 * reach the handler only once the mute is over. */
START_TEST(test_mute_until_holds_frames) {
    srv_start();
    int fd = cli_connect();
    uint8_t buf[2 * 13];
    size_t off = enc_frame(buf, 'M', 400, 1);
    off += enc_frame(buf + off, 'E', 7, 2);
    int64_t t0 = now_ms();
    send_all(fd, buf, off);                 /* E buffered behind M in one write */
    expect_echo(fd, 'M', 400, 1);
    ck_assert_int_lt(now_ms() - t0, 300);   /* the muting answer is not held */
    sleep_ms(100);
    ck_assert_int_eq(S.frames, 1);          /* E waits in the buffer */
    send_cmd(fd, 'E', 8, 3);                /* and a frame sent while muted */
    sleep_ms(100);
    ck_assert_int_eq(S.frames, 1);
    expect_echo(fd, 'E', 7, 2);
    ck_assert_int_ge(now_ms() - t0, 390);
    expect_echo(fd, 'E', 8, 3);
    ck_assert_int_eq(S.frames, 3);
    /* unmuted: a plain echo is answered at once */
    int64_t t1 = now_ms();
    send_cmd(fd, 'E', 9, 4);
    expect_echo(fd, 'E', 9, 4);
    ck_assert_int_lt(now_ms() - t1, 300);
    close(fd);
    wait_conns_open(0);
    srv_stop();
}
END_TEST

/* A paused connection hands out no frame until resumed, even with room in
 * flight; the frames it holds meanwhile go out in order after. */
START_TEST(test_pause_holds_frames_until_resume) {
    srv_start();
    int fd = cli_connect();
    uint8_t buf[2 * 13];
    size_t off = enc_frame(buf, 'H', 300, 1);
    off += enc_frame(buf + off, 'E', 7, 2);
    int64_t t0 = now_ms();
    send_all(fd, buf, off);                 /* E buffered behind H in one write */
    sleep_ms(100);
    ck_assert_int_eq(S.frames, 1);          /* E waits while H's answer is made */
    send_cmd(fd, 'E', 8, 3);                /* and a frame sent meanwhile */
    sleep_ms(50);
    ck_assert_int_eq(S.frames, 1);
    uint8_t h[4 + 5];
    ck_assert(recv_all(fd, h, sizeof h));
    ck_assert_uint_eq(be32(h), 5);
    ck_assert_int_eq(h[4], 'H');
    ck_assert_int_ge(now_ms() - t0, 290);
    expect_echo(fd, 'E', 7, 2);
    expect_echo(fd, 'E', 8, 3);
    ck_assert_int_eq(S.frames, 3);
    close(fd);
    wait_conns_open(0);
    srv_stop();
}
END_TEST

/* A connection that closes while muted frees its timer (ASan/valgrind). */
START_TEST(test_mute_then_close) {
    srv_start();
    int fd = cli_connect();
    send_cmd(fd, 'M', 5000, 1);
    expect_echo(fd, 'M', 5000, 1);
    close(fd);
    wait_conns_open(0);
    srv_stop();
}
END_TEST

static void *count_prepare(const uint8_t *frame, size_t len, void *ctx);

/* one loop: on_prepare never runs (it would only decode twice on the
 * state loop) */
START_TEST(test_prepare_not_run_with_one_loop) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    cfg.request_max_bytes = 1 << 20;
    cfg.on_prepare = count_prepare;
    cfg.prepared_free = free;
    cfg.loops = 1;
    G_LOOPS = 1;
    srv_start_cfg(&cfg);
    srv_run();
    int fd = cli_connect();
    send_cmd(fd, 'E', 0, 1);
    expect_echo(fd, 'E', 0, 1);
    ck_assert_int_eq(S.prepare_calls, 0);
    ck_assert_int_eq(S.prepared_seen, 0);
    close(fd);
    wait_conns_open(0);
    srv_stop();
}
END_TEST

static void *count_prepare(const uint8_t *frame, size_t len, void *ctx) {
    (void)frame, (void)len;
    srv_t *srv = ctx;
    srv->prepare_calls++;
    return malloc(1);
}

/* on_prepare runs for frames of a plain listener, not for those of a SASL
 * listener until the handler turns it on (after authentication): a peer
 * that has not authenticated gets no CPU per byte on the network loops. */
START_TEST(test_prepare_waits_for_sasl_authentication) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    cfg.request_max_bytes = 1 << 20;
    cfg.on_prepare = count_prepare;
    cfg.prepared_free = free;
    /* with one loop the hook never runs (conn.c): at least 2, so that the
     * SASL connection is served by one loop and the plain one by another */
    cfg.loops = G_LOOPS > 1 ? G_LOOPS : 2;
    srv_start_cfg(&cfg);
    uint16_t sasl_port = 0;
    bk_net_listener_config_t lc = { "SASL_PLAINTEXT", "127.0.0.1", 0, BK_NET_SEC_SASL_PLAINTEXT, NULL };
    ck_assert_int_eq(bk_net_listen_on(S.net, &lc, &sasl_port), BK_NET_OK);
    srv_run();
    int plain = cli_connect();
    send_cmd(plain, 'E', 0, 1);
    expect_echo(plain, 'E', 0, 1);
    ck_assert_int_eq(S.prepare_calls, 1);
    ck_assert_int_eq(S.prepared_seen, 1);
    int fd = cli_connect_to(AF_INET, "127.0.0.1", sasl_port);
    for (uint32_t i = 0; i < 3; i++) {
        send_cmd(fd, 'E', 0, 10 + i);
        expect_echo(fd, 'E', 0, 10 + i);
    }
    ck_assert_int_eq(S.prepare_calls, 1);     /* none for the unauthenticated frames */
    ck_assert_int_eq(S.prepared_seen, 1);
    send_cmd(fd, 'P', 0, 20);
    expect_echo(fd, 'P', 0, 20);
    send_cmd(fd, 'E', 0, 21);
    expect_echo(fd, 'E', 0, 21);
    ck_assert_int_eq(S.prepare_calls, 2);
    ck_assert_int_eq(S.prepared_seen, 2);
    close(fd);
    close(plain);
    wait_conns_open(0);
    srv_stop();
}
END_TEST

static void loops_setup(void) { G_LOOPS = 3; }

typedef struct {
    bk_net_loop_stats_t ls[8];
    uint32_t n;
} loop_figs_t;

static void loop_figs_fn(void *arg) {
    loop_figs_t *f = arg;
    f->n = bk_net_loops(S.net);
    for (uint32_t i = 0; i < f->n && i < 8; i++) bk_net_loop_stats(S.net, i, &f->ls[i]);
}

/* Connections spread over every loop, each answered in its own order with
 * answers made now, by a timer and by a worker (deferred), frames of the
 * remote loops handed to the state loop; closing from either side frees
 * every connection on every loop. */
START_TEST(test_loops_spread_and_order) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    cfg.request_max_bytes = 1 << 20;
    cfg.loops = 4;
    srv_start_cfg(&cfg);
    srv_run();
    enum { C = 12, F = 40 };
    int fds[C];
    for (int c = 0; c < C; c++) fds[c] = cli_connect();
    wait_conns_open(C);
    loop_figs_t f = { 0 };
    on_loop(loop_figs_fn, &f);
    ck_assert_uint_eq(f.n, 4);
    for (uint32_t i = 0; i < 4; i++) ck_assert_uint_eq(f.ls[i].conns_open, C / 4);
    static const char kinds[] = { 'E', 'D', 'W', 'N', 'E' };
    for (int c = 0; c < C; c++)
        for (uint32_t i = 0; i < F; i++) {
            char k = kinds[i % 5];
            send_cmd(fds[c], k, k == 'D' || k == 'W' ? (F - i) % 7 : 0, (uint32_t)c * 1000 + i);
        }
    for (int c = 0; c < C; c++)
        for (uint32_t i = 0; i < F; i++) {
            char k = kinds[i % 5];
            if (k == 'N') continue;
            expect_echo(fds[c], k, k == 'D' || k == 'W' ? (F - i) % 7 : 0, (uint32_t)c * 1000 + i);
        }
    on_loop(loop_figs_fn, &f);
    ck_assert_uint_eq(f.ls[0].frames_posted, 0);   /* the state loop's own sockets need no hand-off */
    for (uint32_t i = 1; i < 4; i++) ck_assert_uint_eq(f.ls[i].frames_posted, (C / 4) * F);
    bk_net_stats_t st = stats();
    ck_assert_uint_eq(st.requests_total, C * F);
    ck_assert_uint_eq(st.requests_inflight, 0);
    /* the server closes half ('C' = close now), the client the rest */
    for (int c = 0; c < C; c++) {
        if (c % 2) send_cmd(fds[c], 'C', 0, 0);
        else close(fds[c]);
    }
    for (int c = 1; c < C; c += 2) {
        ck_assert(closed_by_server(fds[c]));
        close(fds[c]);
    }
    wait_conns_open(0);
    on_loop(loop_figs_fn, &f);
    for (uint32_t i = 0; i < 4; i++) ck_assert_uint_eq(f.ls[i].conns_open, 0);
    srv_stop();
}
END_TEST

/* Free lists (pool.c): once warm, requests crossing the hand-off both
 * ways allocate no message, no frame block and no response body: FRAME
 * messages and blocks (dropped after the handler, or taken and given back
 * with bk_net_mem_free) go back to the block pool, RESPOND messages
 * and emptied bodies to the state loop, each through the FIFO towards its
 * home. Without the lists every request would count 4 (pool_allocs). */
START_TEST(test_loops_hand_off_reuses_messages_and_bodies) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    cfg.request_max_bytes = 1 << 20;
    cfg.loops = 3;
    srv_start_cfg(&cfg);
    srv_run();
    enum { C = 2, WARM = 20, N = 300 };
    int fds[C];
    for (int c = 0; c < C; c++) fds[c] = cli_connect();
    wait_conns_open(C);
    loop_figs_t f = { 0 };
    on_loop(loop_figs_fn, &f);
    ck_assert_uint_eq(f.ls[0].conns_open, 0);   /* both on loops 1.. */
    for (uint32_t i = 0; i < WARM; i++)
        for (int c = 0; c < C; c++) {
            send_cmd(fds[c], 'E', 0, i);
            expect_echo(fds[c], 'E', 0, i);
        }
    uint64_t before = stats().pool_allocs;
    ck_assert_uint_gt(before, 0);
    for (uint32_t i = 0; i < N; i++)
        for (int c = 0; c < C; c++) {
            send_cmd(fds[c], 'E', 1, i);
            expect_echo(fds[c], 'E', 1, i);
        }
    /* frames the handler takes and gives back later (bk_net_mem_free) */
    for (uint32_t i = 0; i < N / 3; i++)
        for (int c = 0; c < C; c++) {
            uint8_t fr[64];
            put32(fr, 9 + 40);
            fr[4] = 'K';
            put32(fr + 5, 0);
            for (int j = 9; j < 4 + 9 + 40; j++) fr[j] = (uint8_t)(i + (uint32_t)j);
            send_all(fds[c], fr, 4 + 9 + 40);
            uint8_t out[16];
            ck_assert_int_eq(recv_frame(fds[c], out, sizeof out), 8);
            ck_assert_uint_eq(be32(out), 9 + 40);
            ck_assert_uint_eq(be32(out + 4), fnv1a(fr + 4, 9 + 40));
        }
    /* pipelined too: up to inflight_max of each in flight at once */
    for (int c = 0; c < C; c++)
        for (uint32_t i = 0; i < 16; i++) send_cmd(fds[c], 'E', 2, i);
    for (int c = 0; c < C; c++)
        for (uint32_t i = 0; i < 16; i++) expect_echo(fds[c], 'E', 2, i);
    bk_net_stats_t st = stats();
    ck_assert_uint_eq(st.requests_total, (uint64_t)C * (WARM + N + N / 3 + 16));
    /* the pipelined burst may find the lists short once (a few messages
     * are still on their way back); nothing grows with N */
    ck_assert_uint_le(st.pool_allocs - before, 3 * 16 * C);
    for (int c = 0; c < C; c++) close(fds[c]);
    wait_conns_open(0);
    srv_stop();
}
END_TEST

/* A RESPOND the socket side refuses (the state side and the socket
 * disagree about a slot: forged here, as no public call can make one)
 * closes the connection on the network loop: the session had counted the
 * answer as output on its way, and the client would wait for it. */
static void forge_respond_fn(void *arg) {
    uint64_t id = *(uint64_t *)arg;
    bk_net_conn_t *s = S.net->conns[(uint32_t)id];
    ck_assert_ptr_nonnull(s);
    ck_assert(s->session);
    net_msg_t *m = bk__msg_new(MSG_RESPOND, id);
    ck_assert_ptr_nonnull(m);
    m->seq = 1000;      /* never handed out */
    m->body = evbuffer_new();
    ck_assert_int_eq(evbuffer_add(m->body, "x", 1), 0);
    bk__loop_post(&s->loop->cmd, m);
}

START_TEST(test_loops_refused_answer_closes) {
    srv_start();
    int fd = cli_connect();
    wait_conns_open(1);
    send_cmd(fd, 'E', 0, 1);
    expect_echo(fd, 'E', 0, 1);
    uint64_t id = S.last_conn_id;
    on_loop(forge_respond_fn, &id);
    ck_assert(closed_by_server(fd));
    close(fd);
    wait_conns_open(0);
    srv_stop();
}
END_TEST

/* queued.max.request.bytes bounds the frames network loops copy for the
 * state loop: while the state loop is parked in a handler, producers on
 * loops 1.. keep sending; their blocks are reserved in the budget when
 * copied (the request memory reported, skiff_request_memory_bytes, shows
 * them), the loops pause reading once it is spent, and every frame is
 * answered once the state loop runs again, the budget back to 0. Without
 * the reservation the loops would copy 8 x 16 frames of 32 KiB (4 MiB,
 * bounded only by inflight_max) with nothing counted. */
START_TEST(test_loops_budget_bounds_held_frames) {
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    cfg.request_max_bytes = 256 << 10;
    cfg.queued_bytes_max = 1 << 20;
    cfg.loops = 3;
    srv_start_cfg(&cfg);
    srv_run();
    enum { C = 8, F = 40, SIZE = 32 << 10 };
    int parker = cli_connect();
    int fds[C];
    for (int c = 0; c < C; c++) {
        fds[c] = cli_connect();
        ck_assert_int_eq(fcntl(fds[c], F_SETFL, O_NONBLOCK), 0);
    }
    wait_conns_open(C + 1);
    send_cmd(parker, 'S', 0, 1);
    for (int i = 0; i < 500 && !S.parked; i++) sleep_ms(10);
    ck_assert(S.parked);
    /* frames 'N' (no answer) of SIZE bytes, then one 'E' per connection */
    size_t one = 4 + SIZE, total = one * F + 13;
    uint8_t *stream = calloc(1, total);
    ck_assert_ptr_nonnull(stream);
    for (int i = 0; i < F; i++) {
        put32(stream + one * (size_t)i, SIZE);
        stream[one * (size_t)i + 4] = 'N';
    }
    enc_frame(stream + one * F, 'E', 0, 99);
    size_t sent[C] = { 0 };
    for (int round = 0; round < 30; round++) {
        for (int c = 0; c < C; c++) {
            ssize_t n;
            while (sent[c] < total && (n = send(fds[c], stream + sent[c], total - sent[c], MSG_NOSIGNAL)) > 0)
                sent[c] += (size_t)n;
        }
        sleep_ms(10);
    }
    /* the state loop waits in the handler: it writes nothing now, so the
     * test thread may read the net's figures */
    ck_assert(S.parked);
    bk_net_pressure_t p;
    bk_net_pressure(S.net, &p);
    bk_net_stats_t st;
    bk_net_stats(S.net, &st);
    ck_assert_uint_gt(p.request_memory_bytes, (uint64_t)SIZE);
    ck_assert_uint_le(p.request_memory_bytes, (uint64_t)1 << 20);
    ck_assert_int_eq(p.request_memory_budget, 1 << 20);
    ck_assert_uint_ge(st.mem_waiting, 1);
    ck_assert(p.memory_exhausted);
    S.unpark = 1;
    expect_echo(parker, 'S', 0, 1);
    for (int c = 0; c < C; c++) ck_assert_int_eq(fcntl(fds[c], F_SETFL, 0), 0);
    for (int c = 0; c < C; c++) send_all(fds[c], stream + sent[c], total - sent[c]);
    for (int c = 0; c < C; c++) expect_echo(fds[c], 'E', 0, 99);
    st = stats();
    ck_assert_uint_le(st.queued_bytes_peak, (uint64_t)1 << 20);
    ck_assert_uint_ge(st.mem_waits, 1);
    ck_assert_uint_eq(st.queued_bytes, 0);
    ck_assert_uint_eq(st.mem_waiting, 0);
    ck_assert_uint_eq(st.requests_total, (uint64_t)C * (F + 1) + 1);
    for (int c = 0; c < C; c++) close(fds[c]);
    close(parker);
    wait_conns_open(0);
    free(stream);
    srv_stop();
}
END_TEST

static Suite *net_suite(void) {
    Suite *s = suite_create("net");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_pipelined_echo_in_order);
    tcase_add_test(tc, test_out_of_order_completion_in_order_responses);
    tcase_add_test(tc, test_only_none_slots_then_echo);
    tcase_add_test(tc, test_random_completion_order);
    tcase_add_test(tc, test_bogus_slots_rejected);
    tcase_add_test(tc, test_tiny_writes);
    tcase_add_test(tc, test_zero_and_short_frames_echo);
    tcase_add_test(tc, test_oversized_frame_closes);
    tcase_add_test(tc, test_max_size_frame_accepted);
    tcase_add_test(tc, test_taken_frames_copied_once);
    tcase_add_test(tc, test_announced_size_not_allocated_up_front);
    tcase_add_test(tc, test_request_budget_pauses_reading);
    tcase_add_test(tc, test_request_budget_waiter_leaves);
    tcase_add_test(tc, test_request_budget_growth_counts_once);
    tcase_add_test(tc, test_idle_connection_closed);
    tcase_add_test(tc, test_per_ip_limit);
    tcase_add_test(tc, test_ratelog);
    tcase_add_test(tc, test_negative_size_closes);
    tcase_add_test(tc, test_garbage_closes);
    tcase_add_test(tc, test_eof_mid_frame);
    tcase_add_test(tc, test_close_while_on_worker_and_timer);
    tcase_add_test(tc, test_slot_of_closed_conn_not_delivered_to_successor);
    tcase_add_test(tc, test_conns_max_rejects);
    tcase_add_test(tc, test_file_range_response);
    tcase_add_test(tc, test_resp_add_file_rejects_bad_args);
    tcase_add_test(tc, test_close_after_flush);
    tcase_add_test(tc, test_close_in_handler);
    tcase_add_test(tc, test_inflight_bound_pauses_reading);
    tcase_add_test(tc, test_output_bound_pauses_reading);
    tcase_add_test(tc, test_many_connections);
    tcase_add_test(tc, test_ipv6_loopback);
    tcase_add_test(tc, test_listen_bad_address);
    tcase_add_test(tc, test_config_validation);
    tcase_add_test(tc, test_graceful_shutdown_finishes_inflight);
    tcase_add_test(tc, test_graceful_shutdown_deadline);
    tcase_add_test(tc, test_shutdown_without_connections);
    tcase_add_test(tc, test_sigterm_graceful_stop);
    tcase_add_test(tc, test_peer_reset_during_write);
    tcase_add_test(tc, test_mute_until_holds_frames);
    tcase_add_test(tc, test_pause_holds_frames_until_resume);
    tcase_add_test(tc, test_mute_then_close);
    tcase_add_test(tc, test_prepare_waits_for_sasl_authentication);
    tcase_add_test(tc, test_prepare_not_run_with_one_loop);
    suite_add_tcase(s, tc);
    /* the same cases with the sockets spread over 3 network loops (loop 0
     * is the state loop's own): every guarantee above must hold there too */
    TCase *tl = tcase_create("loops");
    tcase_set_timeout(tl, 60);
    tcase_add_checked_fixture(tl, loops_setup, NULL);
    tcase_add_test(tl, test_loops_spread_and_order);
    tcase_add_test(tl, test_loops_budget_bounds_held_frames);
    tcase_add_test(tl, test_loops_hand_off_reuses_messages_and_bodies);
    tcase_add_test(tl, test_loops_refused_answer_closes);
    tcase_add_test(tl, test_pipelined_echo_in_order);
    tcase_add_test(tl, test_out_of_order_completion_in_order_responses);
    tcase_add_test(tl, test_only_none_slots_then_echo);
    tcase_add_test(tl, test_random_completion_order);
    tcase_add_test(tl, test_bogus_slots_rejected);
    tcase_add_test(tl, test_tiny_writes);
    tcase_add_test(tl, test_zero_and_short_frames_echo);
    tcase_add_test(tl, test_oversized_frame_closes);
    tcase_add_test(tl, test_max_size_frame_accepted);
    tcase_add_test(tl, test_taken_frames_copied_once);
    tcase_add_test(tl, test_announced_size_not_allocated_up_front);
    tcase_add_test(tl, test_request_budget_pauses_reading);
    tcase_add_test(tl, test_request_budget_waiter_leaves);
    tcase_add_test(tl, test_request_budget_growth_counts_once);
    tcase_add_test(tl, test_idle_connection_closed);
    tcase_add_test(tl, test_per_ip_limit);
    tcase_add_test(tl, test_ratelog);
    tcase_add_test(tl, test_negative_size_closes);
    tcase_add_test(tl, test_garbage_closes);
    tcase_add_test(tl, test_eof_mid_frame);
    tcase_add_test(tl, test_close_while_on_worker_and_timer);
    tcase_add_test(tl, test_slot_of_closed_conn_not_delivered_to_successor);
    tcase_add_test(tl, test_conns_max_rejects);
    tcase_add_test(tl, test_file_range_response);
    tcase_add_test(tl, test_resp_add_file_rejects_bad_args);
    tcase_add_test(tl, test_close_after_flush);
    tcase_add_test(tl, test_close_in_handler);
    tcase_add_test(tl, test_inflight_bound_pauses_reading);
    tcase_add_test(tl, test_output_bound_pauses_reading);
    tcase_add_test(tl, test_many_connections);
    tcase_add_test(tl, test_ipv6_loopback);
    tcase_add_test(tl, test_listen_bad_address);
    tcase_add_test(tl, test_config_validation);
    tcase_add_test(tl, test_graceful_shutdown_finishes_inflight);
    tcase_add_test(tl, test_graceful_shutdown_deadline);
    tcase_add_test(tl, test_shutdown_without_connections);
    tcase_add_test(tl, test_sigterm_graceful_stop);
    tcase_add_test(tl, test_peer_reset_during_write);
    tcase_add_test(tl, test_mute_until_holds_frames);
    tcase_add_test(tl, test_pause_holds_frames_until_resume);
    tcase_add_test(tl, test_mute_then_close);
    tcase_add_test(tl, test_prepare_waits_for_sasl_authentication);
    suite_add_tcase(s, tl);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(net_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
