/* broker/net/net_int.h — private to listener.c and conn.c: the structures behind
 * bk_net_t and bk_net_conn_t. Nothing outside those two files includes this. */
#ifndef SKIFF_BK_NET_INT_H
#define SKIFF_BK_NET_INT_H

#include <stdbool.h>
#include <sys/types.h>

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
    bool path_logged;           /* "kTLS send on" / "read-encrypt-write" said once */
} net_listener_t;

struct ssl_st;

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
    void *prepared;         /* on_prepare's result for the frame in the handler */
    char peer[64];
    const char *listener;   /* name of the accepting listener (net->lst[i].name) */
    net_listener_t *lst;    /* that listener (net->lst[i]; the array never moves) */
    /* TLS (tls.c contexts; conn_tls.c): NULL ssl = plain socket */
    struct ssl_st *ssl;
    bool hs_done;           /* handshake finished */
    bool ktls_send;         /* the kernel encrypts: output goes out as on a plain socket */
    bool hs_wants_write;    /* the handshake waits for the socket to take its bytes */
    int64_t born_ms;        /* accept time (the handshake bound) */
    uint8_t *tp;            /* plaintext taken from `out`, not yet taken by SSL_write */
    size_t tp_off, tp_len;  /*   tp[tp_off, tp_off + tp_len); tp is BK_NET_TLS_CHUNK bytes */
    bk_net_security_t security;
    char principal[BK_NET_PRINCIPAL_MAX + 1];
    void *auth;             /* bk_net_conn_set_auth: owned, freed with auth_free */
    void (*auth_free)(void *state);
    /* bk_net_conn_mute_until (client quotas, KIP-219): no frame is handed
     * out and nothing read until the monotonic ms mute_until_ms */
    bool muted;
    int64_t mute_until_ms;
    struct event *mute_ev;  /* timer ending the mute; created on first use */
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
    /* TLS output without kTLS (conn_tls.c): file ranges reach user space
     * by sendfile(2)/writev(2) of the output into this pipe and read(2)
     * back, BK_NET_TLS_CHUNK at a time; one pipe per net, emptied each
     * time (the loop is single-threaded). -1 until a TLS listener. */
    int tls_pipe[2];
    int tls_pipe_cap;           /* bytes the pipe holds (<= BK_NET_TLS_CHUNK) */
};

/* Monotonic milliseconds (conn.c, listener.c). */
int64_t bk__net_mono_ms(void);
/* conn.c: the once-a-second pass (idle, stalled, budget waiters, log). */
void bk__conn_sweep(bk_net_t *net);
/* conn.c: an input buffer above the chunk was released: let the
 * connections waiting for the budget try again. */
void bk__conn_mem_released(bk_net_t *net);

/* conn.c: create (takes the fd in all cases) / free a closed connection. */
bk_net_conn_t *bk__conn_new(bk_net_t *net, net_listener_t *l, evutil_socket_t fd, const struct sockaddr *sa,
                            int salen);

/* conn_tls.c: TLS on a connection. */
/* Sets up the SSL of a connection accepted on a TLS listener. 0 or -1. */
int bk__tls_conn_start(bk_net_conn_t *c);
/* Drives the handshake: DONE (the principal is set; read and write as
 * usual), WAIT (for the socket: hs_wants_write says which way), FAILED
 * (logged; the caller closes). */
typedef enum { BK_NET_TLS_HS_DONE, BK_NET_TLS_HS_WAIT, BK_NET_TLS_HS_FAILED } bk_net_tls_hs_t;
bk_net_tls_hs_t bk__tls_handshake(bk_net_conn_t *c);
/* SSL_read into buf; >0 bytes, 0 = wait, -1 = closed (EOF or error). */
ssize_t bk__tls_read(bk_net_conn_t *c, uint8_t *buf, size_t len);
/* Writes queued output through SSL_write. 0 = all written or waiting for
 * the socket, -1 = failed (caller closes). */
int bk__tls_write(bk_net_conn_t *c);
/* More decrypted bytes wait inside OpenSSL (no read event will say so). */
bool bk__tls_pending(const bk_net_conn_t *c);
void bk__tls_conn_free(bk_net_conn_t *c);
void bk__conn_free(bk_net_conn_t *conn);
/* conn.c: frees the idle input buffers of net (bk_net_free). */
void bk__conn_in_pool_free(bk_net_t *net);
bool bk__conn_is_open(const bk_net_conn_t *conn);
/* listener.c: a connection was closed (conns_open already decremented). */
void bk__net_conn_closed(bk_net_t *net);
/* listener.c: release the closed connection's table entry and free it. */
void bk__net_conn_free(bk_net_t *net, bk_net_conn_t *conn);

#endif
