/* broker/net/signals.c — see signals.h. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <event2/event.h>

#include "broker/net/signals.h"

struct bk_net_signals {
    struct event *term_ev, *int_ev;
    bk_net_stop_fn on_stop;
    void *arg;
    unsigned count;
};

static void signal_cb(evutil_socket_t signo, short what, void *arg) {
    bk_net_signals_t *s = arg;
    s->count++;
    fprintf(stderr, "skiff: %s received (%u); stopping\n", signo == SIGTERM ? "SIGTERM" : "SIGINT",
            s->count);
    s->on_stop((int)signo, s->count, s->arg);
}

bk_net_signals_t *bk_net_signals_new(struct event_base *base, bk_net_stop_fn on_stop, void *arg) {
    struct sigaction sa = { .sa_handler = SIG_IGN };
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGPIPE, &sa, NULL) != 0) return NULL;
    bk_net_signals_t *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->on_stop = on_stop;
    s->arg = arg;
    s->term_ev = evsignal_new(base, SIGTERM, signal_cb, s);
    s->int_ev = evsignal_new(base, SIGINT, signal_cb, s);
    if (!s->term_ev || !s->int_ev || evsignal_add(s->term_ev, NULL) != 0 ||
        evsignal_add(s->int_ev, NULL) != 0) {
        bk_net_signals_free(s);
        return NULL;
    }
    return s;
}

void bk_net_signals_free(bk_net_signals_t *s) {
    if (!s) return;
    if (s->term_ev) event_free(s->term_ev);
    if (s->int_ev) event_free(s->int_ev);
    free(s);
}
