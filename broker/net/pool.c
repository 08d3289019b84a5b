/* broker/net/pool.c — free lists for what crosses the hand-off between the
 * state loop and a network loop (README "Network loops", "Free lists"):
 * messages (net_msg_t) and response bodies (evbuffers). Without them every
 * request on loops 1.. cost two message callocs (FRAME one way, RESPOND the
 * other) and one evbuffer_new.
 *
 * Ownership: a pooled message has a home, the thread that allocates it
 * (loop L's thread for the events it posts, the state loop for the
 * commands it posts to L). Each thread keeps a local list of its own
 * (no lock). The other thread, which frees it after use, gives it back
 * through the FIFO going towards the home thread: the queue's `spare`
 * list, under that queue's mutex; the home thread takes the whole spare
 * list at once when its local list is empty. No thread ever touches
 * another's local list. Bodies are made on the state loop only
 * (bk_net_body_new); a network loop returns each one, emptied by the
 * flush (its chains moved to the socket's output), through its event
 * queue.
 *
 * Frame blocks (the copy of a frame a network loop hands over, and the one
 * bk_net_conn_take_frame makes on loop 0) are blocks of mem.h's pool: a
 * block is allocated when the whole frame is in (allocation follows bytes
 * received), and one freed on the state loop reaches the loop that copies
 * the next frame through the pool's depot.
 *
 * Bounds: BK_NET_POOL_MAX entries per list (local and spare), beyond
 * which the thing is freed. A message is ~250 bytes and an empty evbuffer
 * ~100: at most a few tens of KiB per loop. (Blocks: mem.c's bounds.) */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "broker/net/mem.h"
#include "broker/net/net_int.h"

/* The network loop whose thread this is; NULL on the state loop (and any
 * other thread: none of them frees messages). */
static __thread net_loop_t *tl_loop;

void bk__pool_thread_enter(net_loop_t *loop) { tl_loop = loop; }

net_msg_t *bk__msg_new(net_msg_type_t type, uint64_t conn_id) {
    net_msg_t *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->type = type;
    m->conn_id = conn_id;
    m->fd = -1;
    return m;
}

/* A message of `l`'s traffic made by its home thread (loop_side: l's
 * thread, else the state loop's). */
static net_msg_t *msg_get(net_loop_t *l, bool loop_side, net_msg_type_t type, uint64_t conn_id) {
    assert(l->remote);
    assert(loop_side ? tl_loop == l : tl_loop == NULL);
    net_msg_t **list = loop_side ? &l->msg_free : &l->st_msg_free;
    uint32_t *n = loop_side ? &l->msg_free_n : &l->st_msg_free_n;
    /* the other side gives them back through the queue towards us */
    net_queue_t *q = loop_side ? &l->cmd : &l->evq;
    if (!*list && __atomic_load_n(&q->spare_msgs_n, __ATOMIC_RELAXED) > 0) {
        bk__queue_lock(q);
        *list = q->spare_msgs;
        *n = q->spare_msgs_n;
        q->spare_msgs = NULL;
        __atomic_store_n(&q->spare_msgs_n, 0, __ATOMIC_RELAXED);
        bk__queue_unlock(q);
    }
    net_msg_t *m = *list;
    if (m) {
        *list = m->next;
        assert(*n > 0);
        (*n)--;
        memset(m, 0, sizeof *m);
    } else {
        m = calloc(1, sizeof *m);
        if (!m) return NULL;
        LST_ADD(loop_side ? &l->stats : &l->net->loops[0].stats, pool_allocs, 1);
    }
    m->type = type;
    m->conn_id = conn_id;
    m->fd = -1;
    m->home = l;
    m->home_loop = loop_side;
    return m;
}

net_msg_t *bk__msg_cmd(net_loop_t *l, net_msg_type_t type, uint64_t conn_id) {
    return msg_get(l, false, type, conn_id);
}

net_msg_t *bk__msg_evt(net_loop_t *l, net_msg_type_t type, uint64_t conn_id) {
    return msg_get(l, true, type, conn_id);
}

void bk__msg_recycle(net_msg_t *m) {
    net_loop_t *l = m->home;
    /* unpooled, or the loop is being freed (its lists with it) */
    if (!l || l->stopped) {
        free(m);
        return;
    }
    bool at_home = m->home_loop ? tl_loop == l : tl_loop == NULL;
    if (at_home) {
        net_msg_t **list = m->home_loop ? &l->msg_free : &l->st_msg_free;
        uint32_t *n = m->home_loop ? &l->msg_free_n : &l->st_msg_free_n;
        if (*n >= BK_NET_POOL_MAX) {
            free(m);
            return;
        }
        m->next = *list;
        *list = m;
        (*n)++;
        return;
    }
    net_queue_t *q = m->home_loop ? &l->cmd : &l->evq;
    bool kept = false;
    bk__queue_lock(q);
    if (q->spare_msgs_n < BK_NET_POOL_MAX) {
        m->next = q->spare_msgs;
        q->spare_msgs = m;
        __atomic_store_n(&q->spare_msgs_n, q->spare_msgs_n + 1, __ATOMIC_RELAXED);
        kept = true;
    }
    bk__queue_unlock(q);
    if (!kept) free(m);
}

/* Takes the bodies loop l gave back (state loop). */
static void bodies_take(bk_net_t *net, net_loop_t *l) {
    net_queue_t *q = &l->evq;
    if (__atomic_load_n(&q->spare_bodies_n, __ATOMIC_RELAXED) == 0) return;
    bk__queue_lock(q);
    while (q->spare_bodies_n > 0 && net->body_free_n < BK_NET_POOL_MAX) {
        net->body_free[net->body_free_n++] = q->spare_bodies[q->spare_bodies_n - 1];
        __atomic_store_n(&q->spare_bodies_n, q->spare_bodies_n - 1, __ATOMIC_RELAXED);
    }
    bk__queue_unlock(q);
}

struct evbuffer *bk_net_body_new(bk_net_t *net) {
    assert(tl_loop == NULL);   /* the state loop's */
    /* one loop's returns at a time, round robin: at most loops - 1
     * relaxed loads when none has any */
    for (uint32_t k = 1; net->body_free_n == 0 && k < net->cfg.loops; k++) {
        net->body_next = net->body_next % (net->cfg.loops - 1) + 1;
        bodies_take(net, &net->loops[net->body_next]);
    }
    if (net->body_free_n > 0) return net->body_free[--net->body_free_n];
    LST_ADD(&net->loops[0].stats, pool_allocs, 1);
    return evbuffer_new();
}

void bk__body_recycle(net_loop_t *here, struct evbuffer *b) {
    bk_net_t *net = here->net;
    if (here->stopped) {            /* bk_net_free: the lists are going */
        evbuffer_free(b);
        return;
    }
    assert(here->remote ? tl_loop == here : tl_loop == NULL);
    /* only empty ones: a body dropped with its bytes (or file ranges) is
     * freed; the flag a file range set goes, as in a new evbuffer */
    if (evbuffer_get_length(b) != 0 || evbuffer_clear_flags(b, EVBUFFER_FLAG_DRAINS_TO_FD) != 0) {
        evbuffer_free(b);
        return;
    }
    if (!here->remote) {
        if (net->body_free_n < BK_NET_POOL_MAX) net->body_free[net->body_free_n++] = b;
        else evbuffer_free(b);
        return;
    }
    net_queue_t *q = &here->evq;
    bool kept = false;
    bk__queue_lock(q);
    if (q->spare_bodies_n < BK_NET_POOL_MAX) {
        q->spare_bodies[q->spare_bodies_n] = b;
        __atomic_store_n(&q->spare_bodies_n, q->spare_bodies_n + 1, __ATOMIC_RELAXED);
        kept = true;
    }
    bk__queue_unlock(q);
    if (!kept) evbuffer_free(b);
}

static void msgs_free(net_msg_t *m) {
    for (net_msg_t *next; m; m = next) {
        next = m->next;
        free(m);
    }
}

void bk__pool_queue_fini(net_queue_t *q) {
    msgs_free(q->spare_msgs);
    q->spare_msgs = NULL;
    q->spare_msgs_n = 0;
    while (q->spare_bodies_n > 0) evbuffer_free(q->spare_bodies[--q->spare_bodies_n]);
}

void bk__pool_loop_fini(net_loop_t *l) {
    assert(l->stopped);
    msgs_free(l->msg_free);
    msgs_free(l->st_msg_free);
    l->msg_free = l->st_msg_free = NULL;
    l->msg_free_n = l->st_msg_free_n = 0;
}

void bk__pool_net_fini(bk_net_t *net) {
    while (net->body_free_n > 0) evbuffer_free(net->body_free[--net->body_free_n]);
}
