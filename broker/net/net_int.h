/* broker/net/net_int.h — private to listener.c and conn.c: the structures behind
 * bk_net_t and bk_net_conn_t. Nothing outside those two files includes this. */
#ifndef SKIFF_BK_NET_INT_H
#define SKIFF_BK_NET_INT_H

#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "broker/net/net.h"
#include "broker/net/ratelog.h"

/* Input buffers kept for reuse by one bk_net_t (at most this many chunks of
 * bk__conn_in_chunk() bytes). */
#define BK_NET_IN_POOL_MAX 8
/* Entries of each free list of pool.c (messages, response bodies), local
 * or on its way back through a queue. */
#define BK_NET_POOL_MAX 64
/* The largest input mapping a loop keeps as its spare for the next big
 * frame (conn.c big_free): librdkafka's and the Java client's requests are
 * at most ~1 MB by default. */
#define BK_NET_BIG_SPARE_MAX ((size_t)(2u << 20))

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
struct x509_st;
typedef struct net_loop net_loop_t;

typedef enum { SLOT_PENDING = 0, SLOT_READY, SLOT_NONE } slot_state_t;

typedef struct {
    slot_state_t state;
    struct evbuffer *body; /* owned while READY */
} conn_slot_t;

typedef struct net_msg net_msg_t;

/* One of two kinds (README "Network loops"):
 * - a socket connection (session == false): everything below about the
 *   socket, run by the thread of `loop` only. With one loop, or on loop 0,
 *   it is also what handlers get (as today).
 * - a session (session == true): the state loop's side of a connection
 *   that lives on network loop `loop` (1..N-1): id, peer, listener,
 *   principal, auth, mute, the frame in the handler. Its calls post
 *   commands to `loop`; `ring` only marks completed slots. */
struct bk_net_conn_s {
    bk_net_t *net;
    net_loop_t *loop;       /* the network loop the socket lives on */
    bool session;           /* state-side object of a connection on another loop */
    struct bk_net_conn_s *lnext, *lprev; /* socket connections of `loop` */
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
    size_t in_map;          /* in_big: the mapping's length (>= in_cap: a loop's spare
                               may be larger than the frame needs) */
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
    bool prepare_on;        /* on_prepare runs for its frames (bk_net_conn_set_prepare) */
    bk_net_security_t security;
    char principal[BK_NET_PRINCIPAL_MAX + 1];
    void *auth;             /* bk_net_conn_set_auth: owned, freed with auth_free */
    void (*auth_free)(void *state);
    /* bk_net_conn_mute_until (client quotas, KIP-219): no frame is handed
     * out and nothing read until the monotonic ms mute_until_ms */
    bool muted;
    int64_t mute_until_ms;
    /* bk_net_conn_pause / _resume: no frame is handed out while > 0 (a
     * handler answering later, off the loop, takes the next frame only
     * after its answer is queued: the output bound then applies again) */
    uint32_t paused;
    struct event *mute_ev;  /* timer ending the mute; created on first use */
    /* session only: frames received while muted, delivered in order when
     * the mute ends; gone = the socket side reported it closed */
    net_msg_t *held, *held_tail;
    uint8_t *frame_block;   /* the frame in the handler, owned until taken */
    net_msg_t *close_msg;   /* made with the session: a close can always be posted */
    /* output_max_bytes across the hand-off: the session holds frames while
     * out_posted - out_reported (its estimate of the socket's output) is at
     * the bound, as pump() stops handing out frames on loop 0; the socket
     * side reports what it wrote (WRITTEN) at most once per half bound */
    uint64_t out_posted;    /* session: response bytes (prefixes included) posted */
    uint64_t out_reported;  /* session: bytes the socket side reported written */
    uint64_t written_total; /* socket side: output bytes written */
    uint64_t written_reported; /* socket side: written_total at the last WRITTEN */
};

/* A message between the state loop and a network loop. Commands (state ->
 * network): OPEN, RESPOND, NONE, CLOSE, CLOSING, MUTE, MEM_WAKE, STOP,
 * PREPARE (seq = on).
 * Events (network -> state): PRINCIPAL, FRAME, WRITTEN (seq = output bytes
 * written so far), CLOSED. */
typedef enum {
    MSG_OPEN, MSG_RESPOND, MSG_NONE, MSG_CLOSE, MSG_CLOSING, MSG_MUTE, MSG_MEM_WAKE, MSG_STOP, MSG_PREPARE,
    MSG_PRINCIPAL, MSG_FRAME, MSG_WRITTEN, MSG_CLOSED
} net_msg_type_t;

struct net_msg {
    net_msg_t *next;
    net_msg_type_t type;
    uint64_t conn_id;
    uint64_t seq;
    struct evbuffer *body;      /* RESPOND */
    uint8_t *frame;             /* FRAME: a block-pool block (mem.h) of len bytes, its
                                   bk_net_mem_block_bytes(len) reserved in the budget */
    size_t len;
    void *prepared;             /* FRAME: on_prepare's result */
    int64_t until_ms;           /* MUTE */
    evutil_socket_t fd;         /* OPEN */
    struct sockaddr_storage sa;
    int salen;
    struct net_listener *lst;   /* OPEN */
    struct ssl_ctx_st *ssl_ctx; /* OPEN (TLS listener): a reference to the listener's
                                   context at the accept; the loop makes the SSL */
    struct x509_st *cert;       /* PRINCIPAL: the client certificate (owned) */
    /* pool.c: the remote loop whose traffic it is (NULL: not pooled) and
     * its home thread (true: that loop's, false: the state loop's) */
    net_loop_t *home;
    bool home_loop;
};

/* A FIFO between two threads: mutex + list, an eventfd that the reader's
 * event watches; the writer writes it only when the list was empty.
 * Batched posts (from the queue's own writer thread) wake the reader once
 * per pass of the writer's loop: flush_ev, on the writer's base, runs after
 * the callbacks of the current pass and writes the eventfd then. */
typedef struct {
    pthread_mutex_t mu;
    net_msg_t *head, *tail;
    bool wake_due;              /* under mu: a batched post found the list empty */
    int efd;
    struct event *ev;           /* reader side */
    struct event *flush_ev;     /* writer side */
    bool flush_armed;           /* writer thread only */
    /* pool.c: what goes back to the reader's free lists, under mu (the
     * counts are also read without it, as hints: atomics) */
    net_msg_t *spare_msgs;
    uint32_t spare_msgs_n;
    struct evbuffer *spare_bodies[BK_NET_POOL_MAX];    /* evq only */
    uint32_t spare_bodies_n;
} net_queue_t;

/* A queue's mutex (loop.c's FIFOs, pool.c's spare lists): a failure is a
 * broken invariant, not an error to carry. */
static inline void bk__queue_lock(net_queue_t *q) {
    if (pthread_mutex_lock(&q->mu) != 0) assert(!"queue mutex");
}
static inline void bk__queue_unlock(net_queue_t *q) {
    if (pthread_mutex_unlock(&q->mu) != 0) assert(!"queue mutex");
}

/* Counters one loop writes (relaxed atomics; bk_net_stats sums them). */
typedef struct {
    uint64_t conns_bad_frame, requests_inflight, requests_total, bytes_in, bytes_out, frame_copy_bytes;
    uint64_t conns_idle_closed, conns_stall_closed, mem_waits, mem_waiting;
    uint64_t frames_posted;     /* frames handed to the state loop */
    uint64_t pool_allocs;       /* pool.c: free list empty (the state loop's in loop 0's) */
} net_loop_stats_t;

#define LST_ADD(st, field, n) ((void)__atomic_add_fetch(&(st)->field, (uint64_t)(n), __ATOMIC_RELAXED))
#define LST_SUB(st, field, n) ((void)__atomic_sub_fetch(&(st)->field, (uint64_t)(n), __ATOMIC_RELAXED))
#define LST_GET(st, field) __atomic_load_n(&(st)->field, __ATOMIC_RELAXED)

struct net_loop {
    bk_net_t *net;
    uint32_t index;             /* 0 = the state loop's own base */
    bool remote;                /* index > 0: own thread, connections have sessions */
    struct event_base *base;
    pthread_t thread;
    bool started;
    bk_net_conn_t *conns;       /* socket connections of this loop (list) */
    bk_net_conn_t **table;      /* remote: by table index (ids are the state's) */
    net_queue_t cmd;            /* remote: state -> this loop */
    net_queue_t evq;            /* remote: this loop -> state (drained on the state loop) */
    net_loop_stats_t stats;
    uint32_t assigned;          /* state loop only: connections handed to this loop, open */
    struct event *sweep_ev;     /* once a second (idle, stall, budget waiters) */
    bool stopped;               /* remote: the thread has been joined */
    uint8_t *in_pool[BK_NET_IN_POOL_MAX];
    uint32_t in_pool_n;
    uint8_t *big_spare;         /* conn.c: an input mapping kept for the next big frame */
    size_t big_spare_cap;
    /* TLS output without kTLS (conn_tls.c), one pipe per loop */
    int tls_pipe[2];
    int tls_pipe_cap;
    /* pool.c (remote loops): free messages of this loop's traffic */
    net_msg_t *msg_free;        /* this loop's thread: events it posts */
    uint32_t msg_free_n;
    net_msg_t *st_msg_free;     /* the state loop: commands it posts here */
    uint32_t st_msg_free_n;
};

struct bk_net {
    struct event_base *base;
    bk_net_config_t cfg;
    net_loop_t *loops;          /* cfg.loops entries; loops[0] runs on `base` */
    uint32_t loop_next;         /* round robin among the least loaded */
    uint64_t queued_bytes;      /* atomic: input memory counted against queued_bytes_max */
    uint64_t queued_bytes_peak; /* atomic */
    uint64_t small_bytes;       /* atomic: the part of queued_bytes that is blocks of
                                   small frames (read in a chunk), bounded apart */
    pthread_mutex_t log_mu;     /* close_log, used from every loop */
    bool freeing;               /* bk_net_free: queued frames are dropped, not handled */
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
    /* max.connections.per.ip and its overrides (listener.c) */
    int64_t per_ip_max;
    uint32_t ip_over_n;
    struct { uint8_t addr[16]; uint8_t addr_len; int64_t max; } ip_over[BK_NET_IP_OVERRIDES_MAX];
    /* accept back-off after a failed accept (listener.c) */
    struct event *accept_ev;    /* timer: re-enable the listeners */
    bool accept_paused;
    int64_t accept_emfile_last_ms;  /* monotonic ms of the last EMFILE/ENFILE, 0 = never */
    int64_t accept_backoff_ms;
    bk_net_ratelog_t close_log; /* under log_mu */
    /* pool.c: empty response bodies for bk_net_body_new (state loop) */
    struct evbuffer *body_free[BK_NET_POOL_MAX];
    uint32_t body_free_n;
    uint32_t body_next;         /* the loop whose returned bodies are taken next */
};

/* Monotonic milliseconds (conn.c, listener.c). */
int64_t bk__net_mono_ms(void);
/* conn.c: the once-a-second pass of one loop (idle, stalled, budget waiters, log). */
void bk__conn_sweep(net_loop_t *loop);
/* conn.c: gives `bytes` of queued.max.request.bytes back and wakes the
 * connections waiting for it (`here`: the loop whose thread calls). */
void bk__budget_release(bk_net_t *net, net_loop_t *here, size_t bytes);
/* conn.c: a network loop's frame block of a `len`-byte frame goes out of
 * the budget (its handler returned or the net dropped it); any thread. */
void bk__frame_release(bk_net_t *net, net_loop_t *here, size_t len);
/* conn.c: connections of `loop` paused for the budget read again. */
void bk__conn_mem_retry(net_loop_t *loop);

/* conn.c: create a socket connection on `loop` (takes the fd and `ssl` in
 * all cases; `ssl` is the TLS listener's, made by bk__tls_ssl_new on the
 * loop's thread, NULL on a plain one) / free a closed connection. */
bk_net_conn_t *bk__conn_new(net_loop_t *loop, net_listener_t *l, evutil_socket_t fd, const struct sockaddr *sa,
                            int salen, struct ssl_st *ssl);

/* conn_tls.c: TLS on a connection. */
/* A new SSL for a connection accepted on a TLS listener, from `ctx` (the
 * listener's context at the accept), on the loop of the socket. NULL when
 * out of memory. */
struct ssl_ctx_st;
struct ssl_st *bk__tls_ssl_new(struct ssl_ctx_st *ctx);
/* Sets up `ssl` on the connection's socket. 0 or -1 (ssl then freed). */
int bk__tls_conn_start(bk_net_conn_t *c, struct ssl_st *ssl);
/* The state loop's side of a handshake finished on a network loop: maps
 * the client certificate (owned; NULL = none) to the session's principal.
 * false when no rule maps it (logged; the caller closes). */
bool bk__tls_session_principal(bk_net_conn_t *s, struct x509_st *cert);
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
void bk__conn_in_pool_free(net_loop_t *loop);
bool bk__conn_is_open(const bk_net_conn_t *conn);
/* listener.c: a connection was closed (conns_open already decremented). */
void bk__net_conn_closed(bk_net_t *net);
/* listener.c / loop.c: release the closed connection's table entry and free it. */
void bk__net_conn_free(bk_net_t *net, bk_net_conn_t *conn);

/* loop.c: the network loops. */
int bk__loops_new(bk_net_t *net);        /* 0 or -1 */
int bk__loops_start(bk_net_t *net);      /* threads; 0 or -1 */
void bk__loops_free(bk_net_t *net);      /* stops and joins the threads, frees what is queued */
void bk__loop_post(net_queue_t *q, net_msg_t *m);          /* any thread, wakes now */
void bk__loop_post_batched(net_queue_t *q, net_msg_t *m);  /* the queue's writer thread */
/* state loop: wake the loops for commands posted in this pass now (the
 * state loop may stop before its flush runs: shutdown deadline) */
void bk__loops_flush(bk_net_t *net);
/* pool.c: messages. bk__msg_new: not pooled (rare ones: STOP, MEM_WAKE,
 * failures). bk__msg_cmd: on the state loop, a command to remote loop l.
 * bk__msg_evt: on remote loop l's thread, an event for the state loop.
 * bk__msg_free gives each back (bk__msg_recycle) wherever it is freed. */
net_msg_t *bk__msg_new(net_msg_type_t type, uint64_t conn_id);
net_msg_t *bk__msg_cmd(net_loop_t *l, net_msg_type_t type, uint64_t conn_id);
net_msg_t *bk__msg_evt(net_loop_t *l, net_msg_type_t type, uint64_t conn_id);
void bk__msg_recycle(net_msg_t *m);
/* pool.c: an emptied response body back to the state loop's free list,
 * from the thread of `here` (the loop that flushed it). */
void bk__body_recycle(net_loop_t *here, struct evbuffer *b);
/* pool.c: marks the calling thread as remote loop `loop`'s. */
void bk__pool_thread_enter(net_loop_t *loop);
/* pool.c: frees the lists (bk_net_free, threads joined, loop stopped). */
void bk__pool_queue_fini(net_queue_t *q);
void bk__pool_loop_fini(net_loop_t *l);
void bk__pool_net_fini(bk_net_t *net);
/* on_prepare runs from the start on a listener of this protocol (SASL:
 * only after authentication, bk_net_conn_set_prepare). */
static inline bool bk__sec_prepares(bk_net_security_t s) {
    return s != BK_NET_SEC_SASL_PLAINTEXT && s != BK_NET_SEC_SASL_SSL;
}
/* loop.c: frees a message and whatever it still owns (any thread). */
void bk__msg_free(bk_net_t *net, net_msg_t *m);
/* a socket connection of a remote loop was freed: post CLOSED */
void bk__loop_conn_gone(bk_net_conn_t *c);
/* memory went back to the budget: wake the loops with waiters */
void bk__net_mem_released(bk_net_t *net, net_loop_t *here);
/* hand an accepted socket to a network loop (state loop) */
void bk__loop_hand_off(net_loop_t *loop, bk_net_conn_t *session, net_listener_t *l, evutil_socket_t fd,
                       const struct sockaddr *sa, int salen, struct ssl_ctx_st *ssl_ctx);
/* the log limiter, from any loop */
bool bk__net_ratelog(bk_net_t *net, const char *cause, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* session.c: the state-side calls on a session. */
bk_net_conn_t *bk__session_new(bk_net_t *net, net_loop_t *loop, net_listener_t *l, const struct sockaddr *sa,
                               int salen);
void bk__session_free(bk_net_conn_t *s);
void bk__session_event(bk_net_t *net, net_msg_t *m);   /* takes m */
int bk__session_complete(bk_net_conn_t *s, bk_net_slot_t slot, bool none, struct evbuffer *body);
void bk__session_close(bk_net_conn_t *s);
void bk__session_close_after_flush(bk_net_conn_t *s);
int bk__session_mute_until(bk_net_conn_t *s, int64_t until_mono_ms);
void bk__session_pause(bk_net_conn_t *s);
void bk__session_resume(bk_net_conn_t *s);
uint8_t *bk__session_take_frame(bk_net_conn_t *s);
/* conn.c: the peer text and address of an accepted socket */
void bk__conn_set_peer(bk_net_conn_t *c, const struct sockaddr *sa, int salen);

#endif
