/* broker/net/signals.c — see signals.h. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <event2/event.h>

#include "broker/net/signals.h"

struct bk_net_signals {
    struct event *term_ev, *int_ev, *hup_ev;
    void (*on_hup)(void *arg);
    void *hup_arg;
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

static void hup_cb(evutil_socket_t signo, short what, void *arg) {
    bk_net_signals_t *s = arg;
    fprintf(stderr, "skiff: SIGHUP received; reloading certificates\n");
    s->on_hup(s->hup_arg);
}

int bk_net_signals_on_hup(bk_net_signals_t *s, void (*fn)(void *arg), void *arg) {
    if (s->hup_ev) return -1;
    s->on_hup = fn;
    s->hup_arg = arg;
    s->hup_ev = evsignal_new(event_get_base(s->term_ev), SIGHUP, hup_cb, s);
    if (!s->hup_ev) return -1;
    if (evsignal_add(s->hup_ev, NULL) != 0) {
        event_free(s->hup_ev);
        s->hup_ev = NULL;
        return -1;
    }
    return 0;
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
    if (s->hup_ev) event_free(s->hup_ev);
    free(s);
}
