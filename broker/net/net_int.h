/* broker/net/net_int.h — private to listener.c and conn.c: the structures behind
 * bk_net_t and bk_net_conn_t. Nothing outside those two files includes this. */
#ifndef SKIFF_BK_NET_INT_H
#define SKIFF_BK_NET_INT_H

#include <stdbool.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "broker/net/net.h"
#include "broker/net/ratelog.h"

/* Input buffers kept for reuse by one bk_net_t (at most this many chunks of
 * bk__conn_in_chunk() bytes). */
#define BK_NET_IN_POOL_MAX 8

/* One listening socket and what its connections inherit. */
typedef struct net_listener {
    bk_net_t *net;
    struct evconnlistener *ev;
    char name[BK_NET_LISTENER_NAME_MAX + 1];
    bk_net_security_t security;
    bk_net_tls_t *tls;          /* SSL / SASL_SSL; not owned */
} net_listener_t;

typedef enum { SLOT_PENDING = 0, SLOT_READY, SLOT_NONE } slot_state_t;

typedef struct {
    slot_state_t state;
    struct evbuffer *body; /* owned while READY */
} conn_slot_t;

struct bk_net_conn_s {
    bk_net_t *net;
    uint64_t id;            /* generation << 32 | table index */
    uint32_t index;         /* position in net->conns */
    evutil_socket_t fd;     /* the socket; closed when the struct is freed */
    struct event *resume_ev; /* deferred pump / free, activated with event_active */
    struct event *read_ev;  /* EV_READ | EV_PERSIST on the socket, added while reading */
    bool reading;           /* read_ev is added */
    struct evbuffer *out;   /* responses not yet taken by the socket */
    struct event *write_ev; /* EV_WRITE | EV_PERSIST, added while `out` waits for room */
    bool writing;           /* write_ev is added */
    uint8_t *in;            /* input buffer (NULL while empty); unconsumed bytes */
    size_t in_cap;          /*   are in[in_off, in_off + in_len) */
    size_t in_off;
    size_t in_len;
    bool in_big;            /* `in` is an mmap'd block (above the chunk), counted in
                               net->stats.queued_bytes; else malloc'd / pooled chunk */
    size_t in_counted;      /* bytes of `in` counted in queued_bytes (the frame's size) */
    bool mem_wait;          /* paused: the budget could not grow `in` (read_ev off) */
    struct event *hup_ev;   /* EV_CLOSED, added while mem_wait: a peer that leaves
                               while we do not read it still frees its buffer */
    int64_t active_ms;      /* monotonic ms of the last byte read or written */
    int64_t write_ok_ms;    /* monotonic ms the output last moved or was empty */
    uint8_t addr[16];       /* peer address (IPv4 in the first 4 bytes) */
    uint8_t addr_len;       /* 4, 16, or 0 for unknown */
    conn_slot_t *ring;      /* net->cfg.inflight_max entries, seq % inflight_max */
    uint64_t seq_next;      /* slot given to the next frame */
    uint64_t seq_flush;     /* oldest slot not yet flushed; seq_flush <= seq_next */
    uint64_t seq_current;   /* slot of the frame in the handler (valid if in_handler) */
    bool in_pump;           /* pump() is on the stack: do not free, do not re-enter */
    bool in_handler;
    bool closing;           /* close_after_flush requested: read nothing more */
    bool closed;            /* socket gone; struct freed when in_pump clears */
    /* the frame in the handler (valid if in_handler), in `in` */
    const uint8_t *frame;
    size_t frame_len;
    bool frame_taken;
    char peer[64];
    const char *listener;   /* name of the accepting listener (net->lst[i].name) */
    bk_net_security_t security;
    char principal[BK_NET_PRINCIPAL_MAX + 1];
    void *auth;             /* bk_net_conn_set_auth: owned, freed with auth_free */
    void (*auth_free)(void *state);
};

struct bk_net {
    struct event_base *base;
    bk_net_config_t cfg;
    net_listener_t lst[BK_NET_LISTENERS_MAX];
    uint32_t listeners_n;
    bk_net_conn_t **conns;      /* cfg.conns_max entries; NULL = free */
    uint32_t conns_limit;       /* open connections allowed now, <= cfg.conns_max
                                   (max.connections, changeable at run time) */
    uint32_t *generation;   /* per table index, bumped on each reuse */
    uint32_t *free_idx;     /* stack of free indexes */
    uint32_t free_n;
    bk_net_stats_t stats;
    bool stopping;
    bk_net_stopped_fn stopped_fn;
    void *stopped_arg;
    struct event *deadline_ev;
    /* Idle input buffers of the default size (conn.c), so that a connection
     * holds one only while it has unread bytes and reads need no malloc. */
    uint8_t *in_pool[BK_NET_IN_POOL_MAX];
    uint32_t in_pool_n;
    /* max.connections.per.ip and its overrides (listener.c) */
    int64_t per_ip_max;
    uint32_t ip_over_n;
    struct { uint8_t addr[16]; uint8_t addr_len; int64_t max; } ip_over[BK_NET_IP_OVERRIDES_MAX];
    /* accept back-off after a failed accept (listener.c) */
    struct event *accept_ev;    /* timer: re-enable the listeners */
    bool accept_paused;
    int64_t accept_emfile_last_ms;  /* monotonic ms of the last EMFILE/ENFILE, 0 = never */
    int64_t accept_backoff_ms;
    /* once a second: idle / stalled connections, the log limiter (conn.c) */
    struct event *sweep_ev;
    bk_net_ratelog_t close_log;
};

/* Monotonic milliseconds (conn.c, listener.c). */
int64_t bk__net_mono_ms(void);
/* conn.c: the once-a-second pass (idle, stalled, budget waiters, log). */
void bk__conn_sweep(bk_net_t *net);
/* conn.c: an input buffer above the chunk was released: let the
 * connections waiting for the budget try again. */
void bk__conn_mem_released(bk_net_t *net);

/* conn.c: create (takes the fd in all cases) / free a closed connection. */
bk_net_conn_t *bk__conn_new(bk_net_t *net, const net_listener_t *l, evutil_socket_t fd, const struct sockaddr *sa,
                            int salen);
void bk__conn_free(bk_net_conn_t *conn);
/* conn.c: frees the idle input buffers of net (bk_net_free). */
void bk__conn_in_pool_free(bk_net_t *net);
bool bk__conn_is_open(const bk_net_conn_t *conn);
/* listener.c: a connection was closed (conns_open already decremented). */
void bk__net_conn_closed(bk_net_t *net);
/* listener.c: release the closed connection's table entry and free it. */
void bk__net_conn_free(bk_net_t *net, bk_net_conn_t *conn);

#endif
