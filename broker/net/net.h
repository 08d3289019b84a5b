/* broker/net/net.h — Kafka listeners, connections, framing and ordered responses.
 *
 * Threading: every function here runs on the loop thread (the thread that
 * dispatches the event_base given to bk_net_new, the "state loop"). Nothing
 * here is locked. With cfg.loops > 1 the sockets of most connections live
 * on network-loop threads of the net's own (README "Network loops"); the
 * calls below stay on the state loop and post to them.
 * Work done elsewhere (worker pool, timers) comes back to the loop thread
 * first and then answers through bk_net_respond with the slot it was given.
 *
 * Framing: a frame is a 4-byte big-endian signed size + that many bytes.
 * Each frame read from a connection gets a response slot, in order. Slots are
 * flushed to the socket strictly in slot order, whatever order they complete
 * in; a slot completed with bk_*_respond_none produces no bytes (acks=0). */
#ifndef SKIFF_BK_NET_H
#define SKIFF_BK_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct evbuffer;

#define BK_NET_MUST_CHECK __attribute__((warn_unused_result))

/* Status codes of the broker (net, worker pool; 0 = ok): X(NAME, value,
 * description). The range is the broker's share of skiff's status space
 * (the table above KP_STATUS_LIST in protocol/kp_wire.h): a worker job's
 * result (a storage or protocol status) and BK_NET_ERR_CANCELLED reach the same
 * done callback, so they must never share a number. broker/core/status.h
 * checks the ranges against each other. */
#define BK_NET_STATUS_MIN (-119)
#define BK_NET_STATUS_MAX (-100)
#define BK_NET_STATUS_LIST(X) \
    X(BK_NET_ERR_GONE, -100, "connection gone")           /* the connection closed; the response was dropped */ \
    X(BK_NET_ERR_FULL, -101, "bounded queue full")        /* a bounded queue/table is full */ \
    X(BK_NET_ERR_INVALID, -102, "invalid argument")       /* bad argument (address, slot, size) */ \
    X(BK_NET_ERR_SYS, -103, "system call failed")         /* an OS call failed; errno tells which */ \
    X(BK_NET_ERR_CANCELLED, -104, "cancelled")            /* a job was cancelled before it ran */ \
    X(BK_NET_ERR_STOPPED, -105, "stopping")               /* the component is shutting down */

enum {
    BK_NET_OK = 0,
#define BK_NET_STATUS_ENUM_(name, value, text) name = value,
    BK_NET_STATUS_LIST(BK_NET_STATUS_ENUM_)
#undef BK_NET_STATUS_ENUM_
};

#define BK_NET_STATUS_IN_RANGE_(name, value, text) \
    _Static_assert((value) >= BK_NET_STATUS_MIN && (value) <= BK_NET_STATUS_MAX, #name " is outside BK_NET_STATUS_MIN..MAX");
BK_NET_STATUS_LIST(BK_NET_STATUS_IN_RANGE_)
#undef BK_NET_STATUS_IN_RANGE_

/* Description of a BK_NET_ERR_* status ("ok" for BK_NET_OK, "unknown status"
 * otherwise). Never NULL. bk_node_status_str (broker/core/status.h) names a
 * status of any layer. */
const char *bk_net_err_str(int status);

/* Default bounds (Kafka names in parentheses where Kafka has one). */
#define BK_NET_REQUEST_MAX_BYTES_DEFAULT (100 * 1024 * 1024) /* socket.request.max.bytes */
#define BK_NET_INFLIGHT_MAX_DEFAULT 16        /* requests read but not answered, per connection */
#define BK_NET_OUTPUT_MAX_BYTES_DEFAULT (4 * 1024 * 1024) /* queued output before we stop reading */
#define BK_NET_CONNS_MAX_DEFAULT 10000        /* open connections per node (max.connections) */
#define BK_NET_LISTENERS_MAX 8                /* listeners per bk_net_t */
#define BK_NET_BACKLOG 128                    /* listen(2) backlog */
#define BK_NET_INFLIGHT_MAX_LIMIT 1024        /* upper bound accepted for inflight_max */
#define BK_NET_QUEUED_BYTES_MAX_DEFAULT ((int64_t)256 << 20) /* queued.max.request.bytes (skiff's default) */
#define BK_NET_IDLE_MS_DEFAULT 600000         /* connections.max.idle.ms */
#define BK_NET_WRITE_STALL_MS_DEFAULT 60000   /* socket.write.stall.ms (skiff only) */
#define BK_NET_ACCEPT_BACKOFF_MIN_MS 50       /* pause of the listeners after a failed accept, */
#define BK_NET_ACCEPT_BACKOFF_MAX_MS 1000     /*   doubling up to this while accepts keep failing */
#define BK_NET_IP_OVERRIDES_MAX 64            /* entries of max.connections.per.ip.overrides */

typedef struct bk_net bk_net_t;
typedef struct bk_net_conn_s bk_net_conn_t;

/* Kafka's security protocols, per listener (listener.security.protocol.map). */
typedef enum bk_net_security {
    BK_NET_SEC_PLAINTEXT = 0,
    BK_NET_SEC_SSL,
    BK_NET_SEC_SASL_PLAINTEXT,
    BK_NET_SEC_SASL_SSL
} bk_net_security_t;

/* A TLS server context (tls.h). */
typedef struct bk_net_tls bk_net_tls_t;

/* Longest principal text ("User:CN=client,O=skiff"), without the NUL. */
#define BK_NET_PRINCIPAL_MAX 255
#define BK_NET_LISTENER_NAME_MAX 63
#define BK_NET_PRINCIPAL_ANONYMOUS "User:ANONYMOUS"

/* Names one response slot: which connection (by id, never reused within a
 * process) and which request on it. Safe to keep after the connection has
 * gone: answering a slot of a closed connection just drops the answer. */
typedef struct {
    uint64_t conn_id;
    uint64_t seq;
} bk_net_slot_t;

/* Called on the loop thread once per frame, in arrival order. `frame` points
 * at the `len` bytes after the size prefix and is valid only during the call;
 * a handler whose request outlives the call takes the bytes with
 * bk_net_conn_take_frame instead of copying them. The frame's slot is
 * bk_net_conn_slot(conn). The handler must eventually complete that slot exactly
 * once: now (bk_net_conn_respond*) or later (bk_net_respond*). `conn` is valid
 * only during the call; keep bk_net_conn_id(conn) or the slot instead. */
typedef void (*bk_net_frame_fn)(bk_net_conn_t *conn, const uint8_t *frame, size_t len, void *ctx);

/* Optional work on a frame before on_frame, where it does not hold up the
 * loop that owns broker state: on the network loop that read the frame
 * (with several loops, loop 0's connections on loop 0, right before
 * on_frame; with one loop never: it would only add work to the one loop). It sees the frame's
 * `len` bytes read-only (the same bytes on_frame gets) and returns a result
 * for on_frame, or NULL. It runs on several threads at once: it may touch
 * only the bytes, its own allocations and thread-safe state, never `ctx`'s
 * broker state. Used for what costs CPU per byte (CRC and decompression of
 * produced batches). */
typedef void *(*bk_net_prepare_fn)(const uint8_t *frame, size_t len, void *ctx);
/* Frees what bk_net_prepare_fn returned (on whichever thread drops it). */
typedef void (*bk_net_prepared_free_fn)(void *prepared);

typedef struct {
    int32_t request_max_bytes;  /* frames with a size above this close the connection */
    uint32_t inflight_max;      /* >= 1; reading pauses while this many slots are open */
    size_t output_max_bytes;    /* reading pauses while more output than this is queued */
    uint32_t conns_max;         /* accepted sockets beyond this are closed at once */
    /* queued.max.request.bytes: input buffers above the read chunk (64 KiB)
     * over all connections; -1 = unbounded. When a frame's buffer cannot grow
     * within it, that connection stops reading until memory is released. */
    int64_t queued_bytes_max;
    int64_t idle_ms;            /* connections.max.idle.ms: close a connection with nothing
                                   read, written or in flight for this long; <= 0 = never */
    int64_t write_stall_ms;     /* close a connection whose queued output has not moved
                                   for this long (a peer that stopped reading); <= 0 = never */
    bk_net_frame_fn on_frame;
    void *ctx;                  /* passed to on_frame and on_prepare */
    bk_net_prepare_fn on_prepare;           /* optional */
    bk_net_prepared_free_fn prepared_free;  /* required with on_prepare */
    /* num.network.threads: event loops serving sockets, 1..BK_NET_LOOPS_MAX.
     * Loop 0 is `base` itself; loops 1.. are threads of the net's own. */
    uint32_t loops;
} bk_net_config_t;

#define BK_NET_LOOPS_MAX 64

/* What one network loop holds (bk_net_loop_stats). */
typedef struct {
    uint64_t conns_open;        /* connections whose socket this loop serves */
    uint64_t frames_posted;     /* frames handed to the state loop (0 on loop 0) */
    uint64_t bytes_in, bytes_out;
} bk_net_loop_stats_t;
/* Number of network loops (cfg.loops). */
uint32_t bk_net_loops(const bk_net_t *net);
/* Figures of loop i < bk_net_loops(net). */
void bk_net_loop_stats(const bk_net_t *net, uint32_t i, bk_net_loop_stats_t *out);

/* Counters, read with bk_net_stats. */
typedef struct {
    uint64_t conns_open;
    uint64_t conns_total;       /* accepted since start */
    uint64_t conns_rejected;    /* closed at accept: table full or shutting down */
    uint64_t conns_bad_frame;   /* closed for a negative or oversized frame size */
    uint64_t requests_inflight; /* slots open over all connections */
    uint64_t requests_total;
    uint64_t bytes_in;          /* frame bytes consumed, prefixes included */
    uint64_t bytes_out;         /* response bytes queued, prefixes included */
    uint64_t frame_copy_bytes;  /* frame bytes copied in user space by
                                   bk_net_conn_take_frame (one copy per taken byte) */
    uint64_t conns_rejected_ip; /* closed at accept by max.connections.per.ip(.overrides)
                                   (also counted in conns_rejected) */
    uint64_t conns_idle_closed; /* closed after connections.max.idle.ms */
    uint64_t conns_stall_closed;/* closed after write_stall_ms with output not moving */
    uint64_t accept_failures;   /* accept(2) failed (EMFILE, ENFILE, ENOBUFS, ...) */
    uint64_t accept_emfile;     /*   of which for lack of descriptors (EMFILE/ENFILE) */
    int64_t accept_fail_last_ms;/* monotonic ms of the last failed accept, 0 = never */
    uint64_t queued_bytes;      /* input buffer bytes counted against queued_bytes_max now */
    uint64_t queued_bytes_peak; /* highest queued_bytes seen */
    uint64_t mem_waits;         /* times a connection paused reading for the budget */
    uint64_t mem_waiting;       /* connections paused for the budget now */
    uint64_t log_suppressed;    /* connection log lines suppressed by the rate limit */
    uint64_t pool_allocs;       /* hand-off messages and response bodies allocated
                                   because their free list was empty (pool.c) */
} bk_net_stats_t;

/* Fills in the defaults above; on_frame/ctx left NULL. */
void bk_net_config_default(bk_net_config_t *cfg);

/* Creates the server on `base` (not owned; must outlive the net). Returns NULL
 * on bad config or out of memory. */
BK_NET_MUST_CHECK bk_net_t *bk_net_new(struct event_base *base, const bk_net_config_t *cfg);

/* Closes every connection and listener (pending responses are dropped) and
 * frees the net. Not from inside a frame handler. NULL is allowed. */
void bk_net_free(bk_net_t *net);

/* Listens on numeric `host` (IPv4 or IPv6 literal) and `port` (0 = any free
 * port). On success *bound_port (if not NULL) holds the bound port. A
 * PLAINTEXT listener named "PLAINTEXT". */
BK_NET_MUST_CHECK int bk_net_listen(bk_net_t *net, const char *host, uint16_t port, uint16_t *bound_port);

/* One listener: its name (Kafka's listener name, e.g. "SASL_SSL"; copied, at
 * most BK_NET_LISTENER_NAME_MAX bytes), address, security protocol and, for
 * SSL and SASL_SSL, the TLS context (not owned: it must outlive the net;
 * bk_net_tls_reload swaps what new connections get). */
typedef struct bk_net_listener_config {
    const char *name;
    const char *host;
    uint16_t port;
    bk_net_security_t security;
    bk_net_tls_t *tls;          /* required for SSL / SASL_SSL, NULL otherwise */
} bk_net_listener_config_t;

/* bk_net_listen with a name, a protocol and TLS. BK_NET_ERR_INVALID for a
 * bad address, a name too long, or TLS missing / given where it does not
 * belong. */
BK_NET_MUST_CHECK int bk_net_listen_on(bk_net_t *net, const bk_net_listener_config_t *lc, uint16_t *bound_port);

/* Graceful stop: close the listeners, read no new frames, let every open slot
 * complete and flush, then close each connection. When all connections are
 * closed, or after `deadline_ms` (remaining ones are closed hard), `done` is
 * called once on the loop thread. Calling it twice returns BK_NET_ERR_STOPPED. */
typedef void (*bk_net_stopped_fn)(bk_net_t *net, void *arg);
BK_NET_MUST_CHECK int bk_net_shutdown(bk_net_t *net, uint32_t deadline_ms, bk_net_stopped_fn done, void *arg);

void bk_net_stats(const bk_net_t *net, bk_net_stats_t *out);

/* Open connections allowed from now on (Kafka's max.connections): clamped to
 * [0, conns_max], the size of the connection table. Connections already
 * open above a lowered limit stay; new ones are closed at accept (counted
 * in conns_rejected) while conns_open >= the limit. */
void bk_net_set_conns_limit(bk_net_t *net, int64_t limit);

/* Per-address limits (Kafka's max.connections.per.ip and
 * max.connections.per.ip.overrides): at most `per_ip` open connections from
 * one address, unless one of v[0..n) names the address (n <=
 * BK_NET_IP_OVERRIDES_MAX, else BK_NET_ERR_INVALID and nothing changes).
 * Applies to connections accepted from now on. */
typedef struct {
    uint8_t addr[16];   /* network order; IPv4 in the first 4 bytes */
    uint8_t addr_len;   /* 4 or 16 */
    int64_t max;
} bk_net_ip_limit_t;
BK_NET_MUST_CHECK int bk_net_set_ip_limits(bk_net_t *net, int64_t per_ip, const bk_net_ip_limit_t *v, size_t n);

/* Open descriptors of the process (/proc/self/fd) and RLIMIT_NOFILE's soft
 * limit (UINT64_MAX: unlimited). BK_NET_ERR_SYS if either cannot be read. */
BK_NET_MUST_CHECK int bk_net_fd_usage(uint64_t *open_fds, uint64_t *limit);

#define BK_NET_FDS_NEAR_LIMIT_PCT 90       /* open fds at this share of the limit = exhausted */
#define BK_NET_PRESSURE_WINDOW_MS 10000    /* an accept failure counts this long */

/* What the health endpoints report about the transport (net may be NULL:
 * descriptors only). */
typedef struct {
    bool fds_exhausted;          /* fds_open >= 90% of the limit, or accept failed with
                                    EMFILE/ENFILE in the last 10 s */
    bool accept_failing;         /* an accept failed (any cause) in the last 10 s */
    bool memory_exhausted;       /* queued.max.request.bytes spent or a connection waits for it */
    uint64_t fds_open, fds_limit;          /* 0, 0 when /proc cannot be read */
    uint64_t request_memory_bytes;
    int64_t request_memory_budget;         /* -1 = unbounded */
} bk_net_pressure_t;
void bk_net_pressure(const bk_net_t *net, bk_net_pressure_t *out);

/* A log line about closing a connection (net's own and the request
 * dispatcher's), through the net's limiter: per `cause` (a string literal),
 * 5 lines per 10 s, then a count of what was suppressed (ratelog.h). */
void bk_net_log_close(bk_net_t *net, const char *cause, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The open connection with this id, or NULL if it has closed. The pointer is
 * valid until control returns to the event loop. */
bk_net_conn_t *bk_net_conn(bk_net_t *net, uint64_t conn_id);

/* An empty evbuffer for a response body, on the loop thread: from the net's
 * free list of bodies it has sent (their chains moved to the socket), else
 * evbuffer_new(). NULL when out of memory. Hand it over with a respond call
 * below, or free it with evbuffer_free as any evbuffer. */
struct evbuffer *bk_net_body_new(bk_net_t *net);

/* Complete `slot` with a response body (without size prefix; the prefix is
 * added here). Takes ownership of `body` in every case. The body may hold file
 * segments (bk_net_resp_add_file). BK_NET_ERR_GONE if the connection has closed,
 * BK_NET_ERR_INVALID if the slot is not open or the body exceeds INT32_MAX. */
int bk_net_respond(bk_net_t *net, bk_net_slot_t slot, struct evbuffer *body);
/* Complete `slot` with no bytes at all (acks=0 produce). */
int bk_net_respond_none(bk_net_t *net, bk_net_slot_t slot);

/* --- connection (pointer valid as documented at bk_net_frame_fn) --- */

uint64_t bk_net_conn_id(const bk_net_conn_t *conn);
/* The slot of the frame being handled. Only inside the frame handler. */
bk_net_slot_t bk_net_conn_slot(const bk_net_conn_t *conn);
/* Only inside the frame handler, at most once per frame: the frame's `len`
 * bytes as a block of the pool (net/mem.h) the caller now owns
 * (bk_net_mem_free it, on any thread; never free()), for a request
 * that outlives the call (its decoded fields point into the bytes; Produce
 * patches offsets into them). Use the returned block, not `frame`. The
 * frame lies in the connection's input buffer, which later frames reuse,
 * so its bytes are copied now: the one user-space copy on their way to a
 * handler that keeps them. NULL when out of memory (the frame is still
 * valid for the rest of the call). */
BK_NET_MUST_CHECK uint8_t *bk_net_conn_take_frame(bk_net_conn_t *conn);
/* Only inside the frame handler: what on_prepare returned for this frame
 * (NULL if none or no on_prepare). Unless taken, it is freed with
 * prepared_free when the handler returns. */
void *bk_net_conn_prepared(const bk_net_conn_t *conn);
/* Only inside the frame handler: the prepared result, now the caller's
 * (free it with the prepared_free it was configured with); NULL if none.
 * Later calls for the same frame return NULL. */
void *bk_net_conn_take_prepared(bk_net_conn_t *conn);
/* Whether on_prepare runs for this connection's frames. On by default,
 * except on SASL listeners (SASL_PLAINTEXT, SASL_SSL): there it is off until
 * the authenticator turns it on after a successful exchange, so a peer that
 * has not authenticated cannot make a network loop spend CPU per byte (CRC,
 * decompression of up to the decompression bound per batch) on frames the
 * dispatcher will refuse. Frames already read when it changes may follow
 * the old setting (without a prepared result on_frame does the work itself). */
void bk_net_conn_set_prepare(bk_net_conn_t *conn, bool on);
/* The peer address as text ("127.0.0.1:5555"); never NULL. */
const char *bk_net_conn_peer(const bk_net_conn_t *conn);

/* The security protocol of the listener that accepted the connection. */
bk_net_security_t bk_net_conn_security(const bk_net_conn_t *conn);
/* The name of that listener ("SASL_SSL", "CONTROLLER"); never NULL. */
const char *bk_net_conn_listener(const bk_net_conn_t *conn);
/* Who the peer is: "User:ANONYMOUS" until set; on a TLS listener with a
 * client certificate "User:" + the subject mapped by
 * ssl.principal.mapping.rules; after SASL whatever the authenticator set.
 * Never NULL; valid until the next set or the connection is freed. */
const char *bk_net_conn_principal(const bk_net_conn_t *conn);
/* Copies `principal` (at most BK_NET_PRINCIPAL_MAX bytes are kept). */
void bk_net_conn_set_principal(bk_net_conn_t *conn, const char *principal);
/* An opaque per-connection authentication state owned by the connection
 * (the SASL exchange): free_fn(state) is called exactly once, when the
 * connection is freed or the state replaced by another set (not when set
 * again with the same pointer). NULL until set. */
void *bk_net_conn_auth(const bk_net_conn_t *conn);
void bk_net_conn_set_auth(bk_net_conn_t *conn, void *state, void (*free_fn)(void *state));

int bk_net_conn_respond(bk_net_conn_t *conn, bk_net_slot_t slot, struct evbuffer *body);
/* Copies `len` bytes as the body. */
int bk_net_conn_respond_bytes(bk_net_conn_t *conn, bk_net_slot_t slot, const void *bytes, size_t len);
int bk_net_conn_respond_none(bk_net_conn_t *conn, bk_net_slot_t slot);

/* Read no further frames; once every slot already handed out has completed
 * and all output has been written, close the connection. The caller still
 * completes its own slot (usually with bk_net_conn_respond_none). Other
 * connections are not affected. */
void bk_net_conn_close_after_flush(bk_net_conn_t *conn);

/* Mute the connection (Kafka's channel muting for a throttled client,
 * KIP-219) until the monotonic time `until_mono_ms` (bk_net_mono_ns() /
 * 1e6): no further frame is handed to the handler and nothing is read until
 * then; responses already queued or completed meanwhile still go out, and a
 * draining connection still closes. A mute ending earlier than one in force
 * changes nothing; a time already past does nothing. Callable inside the
 * frame handler (the frame being handled is not affected) or later with a
 * pointer from bk_net_conn. BK_NET_ERR_SYS when the timer cannot be set
 * (the connection is then not muted). */
BK_NET_MUST_CHECK int bk_net_conn_mute_until(bk_net_conn_t *conn, int64_t until_mono_ms);
bool bk_net_conn_muted(const bk_net_conn_t *conn);
/* Pause / resume handing frames to the handler (counted: paused while
 * pauses outnumber resumes). For a handler that answers later, off the
 * loop (a worker job): its connection's next frame waits until the answer
 * is queued, so the output bound (output_max_bytes) judges that frame as it
 * judges one after an answer given at once — without it, up to
 * inflight_max answers made off the loop could queue at once. Reading goes
 * on up to the in-flight bound. Resume only what was paused, on the loop
 * thread, outside this connection's frame handler; a closed connection's
 * pointer is gone (look it up again with bk_net_conn). */
void bk_net_conn_pause(bk_net_conn_t *conn);
void bk_net_conn_resume(bk_net_conn_t *conn);

/* Close now, dropping queued output and open slots. */
void bk_net_conn_close(bk_net_conn_t *conn);

/* --- building response bodies --- */

/* Appends bytes [offset, offset+len) of file `fd` to `body` as a file segment:
 * written with sendfile, never copied through user space. The fd is dup()ed,
 * so the caller may close its own fd (or the file may be unlinked) at once.
 * Bytes before and after the range are added with evbuffer_add. Once a file
 * range is in it, the body is only for moving (bk_*_respond): it must not be
 * read with evbuffer_copyout/pullup, whose bytes would not be there. */
BK_NET_MUST_CHECK int bk_net_resp_add_file(struct evbuffer *body, int fd, int64_t offset, int64_t len);

/* Called once when a body no longer needs a file range added with
 * bk_net_resp_add_file_held (the same type as libevent's
 * evbuffer_file_segment_cleanup_cb; seg may be NULL). */
struct evbuffer_file_segment;
typedef void (*bk_net_file_release_fn)(struct evbuffer_file_segment const *seg, int flags, void *ctx);

/* As bk_net_resp_add_file, without the dup() and its close (two syscalls
 * per range, issue 19): the caller keeps fd open for the body through a
 * reference of its own, given up by release(ctx). release is called
 * exactly once: when the body's last use of the range is freed (on the
 * thread that frees it: a network loop, after sendfile), or before an
 * error is returned. */
BK_NET_MUST_CHECK int bk_net_resp_add_file_held(struct evbuffer *body, int fd, int64_t offset, int64_t len,
                                                bk_net_file_release_fn release, void *ctx);

#endif
