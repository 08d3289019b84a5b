/* bench_handoff — what the network loops (num.network.threads) cost and
 * buy: one in-process bk_net on 127.0.0.1 whose handler answers at once
 * (an echo), driven by one client thread keeping 8 connections x 32 small
 * requests in flight: with 1 loop (every socket on the state loop), then
 * with 2 and 4 loops using only connections on loops 1.. (accept hands
 * connections out round robin from loop 1: connection i is on loop
 * (i + 1) % N), so every
 * request crosses the hand-off both ways.
 *
 * Figures (no assertion; this machine has 2 cores, shared with the client):
 * - requests/s;
 * - state-loop CPU ns per request: the serial share that bounds scaling.
 *   With 1 loop it is socket work + handler; through the hand-off it is
 *   hand-off both ways (post, wake, drain) + handler: the difference is
 *   what moving a socket off the state loop saves (or costs) it;
 * - network-loop CPU ns per request (process CPU - client - state loop). */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "broker/net/net.h"

#define CONNS 8
#define WINDOW 32
#define REQ_BYTES 100
#define RUN_MS 2000

static struct event_base *g_base;
static bk_net_t *g_net;
static pthread_t g_thr;
static uint64_t g_state_ns_at[2];
static int g_sample;

static void on_frame(bk_net_conn_t *conn, const uint8_t *f, size_t len, void *ctx) {
    (void)ctx;
    if (bk_net_conn_respond_bytes(conn, bk_net_conn_slot(conn), f, len) != BK_NET_OK) abort();
}

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *loop_main(void *arg) {
    (void)arg;
    event_base_loop(g_base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
} sync_t;
static sync_t g_sync = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };

static void sample_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    (void)arg;
    g_state_ns_at[g_sample] = thread_cpu_ns();
    pthread_mutex_lock(&g_sync.mu);
    g_sync.done = 1;
    pthread_cond_signal(&g_sync.cv);
    pthread_mutex_unlock(&g_sync.mu);
}

static void sample_state_cpu(int which) {
    g_sample = which;
    g_sync.done = 0;
    struct timeval zero = { 0, 0 };
    if (event_base_once(g_base, -1, EV_TIMEOUT, sample_cb, NULL, &zero) != 0) abort();
    pthread_mutex_lock(&g_sync.mu);
    while (!g_sync.done) pthread_cond_wait(&g_sync.cv, &g_sync.mu);
    pthread_mutex_unlock(&g_sync.mu);
}

static uint64_t process_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int connect_to(uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) abort();
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void run(uint32_t loops) {
    if (!(g_base = event_base_new())) abort();
    bk_net_config_t cfg;
    bk_net_config_default(&cfg);
    cfg.on_frame = on_frame;
    cfg.loops = loops;
    cfg.inflight_max = WINDOW;
    if (!(g_net = bk_net_new(g_base, &cfg))) abort();
    uint16_t port = 0;
    if (bk_net_listen(g_net, "127.0.0.1", 0, &port) != BK_NET_OK) abort();
    if (pthread_create(&g_thr, NULL, loop_main, NULL) != 0) abort();

    /* connection i lands on loop (i + 1) % loops: keep those of loops 1.. */
    int fds[CONNS], idle[CONNS * 4];
    int nidle = 0;
    for (int i = 0, used = 0; used < CONNS; i++) {
        int fd = connect_to(port);
        if (loops > 1 && (i + 1) % (int)loops == 0) idle[nidle++] = fd;
        else fds[used++] = fd;
        usleep(2000);   /* accepted one by one, in order */
    }
    uint8_t req[4 + REQ_BYTES];
    req[0] = 0, req[1] = 0, req[2] = 0, req[3] = REQ_BYTES;
    memset(req + 4, 'x', REQ_BYTES);
    static uint8_t batch[WINDOW * sizeof req];
    for (int k = 0; k < WINDOW; k++) memcpy(batch + k * sizeof req, req, sizeof req);
    size_t pend[CONNS] = { 0 };   /* response bytes owed to each connection */
    for (int i = 0; i < CONNS; i++) {
        if (write(fds[i], batch, sizeof batch) != (ssize_t)sizeof batch) abort();
        pend[i] = sizeof batch;
    }
    uint64_t done = 0, t0 = 0, cpu0 = 0, cli0 = 0;
    uint64_t start = mono_ns();
    bool measuring = false;
    static uint8_t rbuf[1 << 16];
    for (;;) {
        uint64_t now = mono_ns();
        if (!measuring && now - start > 300000000u) {   /* 0.3 s warm-up */
            measuring = true;
            done = 0;
            t0 = now;
            sample_state_cpu(0);
            cpu0 = process_cpu_ns();
            cli0 = thread_cpu_ns();
        }
        if (measuring && now - t0 > (uint64_t)RUN_MS * 1000000u) break;
        struct pollfd pf[CONNS];
        for (int i = 0; i < CONNS; i++) pf[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
        if (poll(pf, CONNS, 1000) <= 0) abort();
        for (int i = 0; i < CONNS; i++) {
            if (!(pf[i].revents & POLLIN)) continue;
            ssize_t n = read(fds[i], rbuf, sizeof rbuf);
            if (n <= 0) abort();
            pend[i] -= (size_t)n;
            /* resend as many whole requests as whole answers came back */
            size_t owed_reqs = (pend[i] + sizeof req - 1) / sizeof req;
            size_t resend = WINDOW - owed_reqs;
            if (resend > 0) {
                if (write(fds[i], batch, resend * sizeof req) != (ssize_t)(resend * sizeof req)) abort();
                pend[i] += resend * sizeof req;
                done += resend;
            }
        }
    }
    uint64_t wall = mono_ns() - t0;
    uint64_t cli = thread_cpu_ns() - cli0, cpu = process_cpu_ns() - cpu0;
    sample_state_cpu(1);
    double secs = (double)wall / 1e9;
    double state_ns = (double)(g_state_ns_at[1] - g_state_ns_at[0]);
    double netl_ns = (double)cpu - (double)cli - state_ns;
    if (loops == 1) netl_ns = 0;
    printf("loops=%u (%s): %.0f requests/s, state loop %.0f ns CPU/request (%.0f%% of a core), "
           "network loops %.0f ns CPU/request\n", loops, loops == 1 ? "sockets on the state loop"
           : "sockets on loops 1..", (double)done / secs, state_ns / (double)done,
           100.0 * state_ns / (double)wall, netl_ns / (double)done);
    for (int i = 0; i < CONNS; i++) close(fds[i]);
    for (int i = 0; i < nidle; i++) close(idle[i]);
    event_base_loopbreak(g_base);
    pthread_join(g_thr, NULL);
    bk_net_free(g_net);
    event_base_free(g_base);
}

int main(void) {
    if (evthread_use_pthreads() != 0) return 1;
    printf("bench_handoff: %d connections x %d in flight, %d-byte echo requests, %d ms per run\n", CONNS,
           WINDOW, REQ_BYTES, RUN_MS);
    run(1);
    run(2);
    run(4);
    return 0;
}
