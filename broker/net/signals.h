/* broker/net/signals.h — process signals as loop events.
 *
 * SIGTERM and SIGINT become a callback on the loop thread (libevent's signal
 * events: the handler only writes to a socketpair, so no broker code runs in
 * signal context). SIGPIPE is ignored so that a peer closing mid-write is an
 * EPIPE error on that connection, not the death of the node. SIGHUP, once
 * asked for (bk_net_signals_on_hup), reloads certificates. */
#ifndef SKIFF_BK_SIGNALS_H
#define SKIFF_BK_SIGNALS_H

#include "broker/net/net.h"

struct event_base;

typedef struct bk_net_signals bk_net_signals_t;

/* `count` is how many stop signals have arrived so far (1 for the first):
 * the first should start a graceful stop; a later one may force an exit. */
typedef void (*bk_net_stop_fn)(int signo, unsigned count, void *arg);

/* Installs the handlers on `base` and ignores SIGPIPE for the process. Only
 * one bk_net_signals_t per process. NULL on failure. */
BK_NET_MUST_CHECK bk_net_signals_t *bk_net_signals_new(struct event_base *base, bk_net_stop_fn on_stop, void *arg);

/* SIGHUP becomes fn(arg) on the loop thread (certificate reload); before
 * this call SIGHUP keeps its default action. 0, or -1 on failure. */
BK_NET_MUST_CHECK int bk_net_signals_on_hup(bk_net_signals_t *s, void (*fn)(void *arg), void *arg);

/* Removes the SIGTERM/SIGINT (and SIGHUP) handlers (SIGPIPE stays ignored). NULL allowed. */
void bk_net_signals_free(bk_net_signals_t *s);

#endif
