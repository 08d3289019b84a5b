/* broker/replication/purgatory.c — the fetch purgatory keyed by partition;
 * see purgatory.h.
 *
 * Layout: one `head_t` per partition with waiters, found through an
 * open-addressing table of head pointers (linear probing, grown at 50%
 * load, deleted by shifting the rest of the probe run back: no
 * tombstones). Each waiter holds one `link_t` per distinct partition, in a
 * doubly linked list of that partition's head, so removing a waiter is
 * O(its partitions) with no search. Heads are heap objects (the table moves
 * pointers, never heads), so links may point at them.
 *
 * A notify walks one head's list with a cursor that unlink_link advances
 * when it removes the link under it (a `ready` or `done` callback may
 * complete any waiter). Walks nest (a callback may notify), so the cursors
 * form a stack. */
#include "broker/replication/purgatory.h"
#include "broker/net/mem.h"

#include <assert.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#define TABLE_MIN 64u

typedef struct waiter waiter_t;
typedef struct head head_t;

typedef struct link {
    waiter_t *w;
    head_t *h;
    struct link *prev, *next;
} link_t;

struct head {
    bk_repl_purg_key_t key;
    link_t *first;
    size_t n;                      /* links in the list */
    bool soon;                     /* in pg->soon: a notify is due at the end of the turn */
};

struct waiter {
    bk_repl_purg_t *pg;
    void *ctx;
    bk_repl_purg_ready_fn ready;
    bk_repl_purg_done_fn done;
    struct event *timer;
    waiter_t *prev, *next;         /* every waiter, oldest first (flush) */
    size_t nlinks;
    link_t links[];                /* one per distinct key */
};

typedef struct walk {
    link_t *cursor;                /* the next link to visit */
    struct walk *outer;
} walk_t;

struct bk_repl_purg {
    struct event_base *base;
    size_t max;
    size_t count;                  /* waiters */
    waiter_t *first, *last;        /* every waiter, oldest first */
    head_t **slots;
    size_t cap;                    /* power of two */
    size_t used;                   /* heads */
    walk_t *walks;                 /* notifies in progress, innermost first */
    struct event *soon_ev;         /* runs the notifies bk_repl_purg_notify_soon deferred */
    bk_repl_purg_key_t *soon;      /* their keys, each once (head->soon): nsoon of cap_soon */
    size_t nsoon, cap_soon;
};

/* ---- the table ------------------------------------------------------------------ */

static uint64_t key_hash(const bk_meta_uuid_t *id, int32_t partition) {
    uint64_t a, b;
    memcpy(&a, id->b, 8);
    memcpy(&b, id->b + 8, 8);
    uint64_t x = a ^ (b * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)(uint32_t)partition << 17);
    x ^= x >> 33;   /* murmur3's finaliser: spreads the uuid's random bits */
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static bool key_eq(const head_t *h, const bk_meta_uuid_t *id, int32_t partition) {
    return h->key.partition == partition && memcmp(h->key.topic_id.b, id->b, sizeof id->b) == 0;
}

/* The slot holding the head of (id, partition), or the empty slot ending its
 * probe run. The table is never full (load <= 50%), so this ends. */
static size_t slot_of(const bk_repl_purg_t *pg, const bk_meta_uuid_t *id, int32_t partition) {
    size_t mask = pg->cap - 1;
    size_t i = (size_t)key_hash(id, partition) & mask;
    while (pg->slots[i] && !key_eq(pg->slots[i], id, partition)) i = (i + 1) & mask;
    return i;
}

static int table_grow(bk_repl_purg_t *pg) {
    size_t ncap = pg->cap ? pg->cap * 2 : TABLE_MIN;
    head_t **ns = calloc(ncap, sizeof *ns);
    if (!ns) return KP_ERR_NOMEM;
    head_t **old = pg->slots;
    size_t ocap = pg->cap;
    pg->slots = ns;
    pg->cap = ncap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i]) pg->slots[slot_of(pg, &old[i]->key.topic_id, old[i]->key.partition)] = old[i];
    free(old);
    return KP_OK;
}

static head_t *head_find(const bk_repl_purg_t *pg, const bk_meta_uuid_t *id, int32_t partition) {
    if (pg->used == 0) return NULL;
    return pg->slots[slot_of(pg, id, partition)];
}

static head_t *head_get(bk_repl_purg_t *pg, const bk_repl_purg_key_t *k) {
    head_t *h = head_find(pg, &k->topic_id, k->partition);
    if (h) return h;
    if ((pg->used + 1) * 2 > pg->cap && table_grow(pg) != KP_OK) return NULL;
    h = bk_net_mem_alloc(sizeof *h);   /* made and dropped per waiting request: pooled */
    if (!h) return NULL;
    memset(h, 0, sizeof *h);
    h->key = *k;
    pg->slots[slot_of(pg, &k->topic_id, k->partition)] = h;
    pg->used++;
    return h;
}

/* Removes an empty head: the entries after it in its probe run move back
 * into the hole when their home slot does not lie between the hole and
 * them (Knuth's deletion for linear probing). */
static void head_drop(bk_repl_purg_t *pg, head_t *h) {
    assert(h->n == 0 && h->first == NULL);
    size_t mask = pg->cap - 1;
    size_t i = slot_of(pg, &h->key.topic_id, h->key.partition);
    assert(pg->slots[i] == h);
    pg->slots[i] = NULL;
    pg->used--;
    for (size_t j = (i + 1) & mask; pg->slots[j]; j = (j + 1) & mask) {
        size_t home = (size_t)key_hash(&pg->slots[j]->key.topic_id, pg->slots[j]->key.partition) & mask;
        bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (stays) continue;
        pg->slots[i] = pg->slots[j];
        pg->slots[j] = NULL;
        i = j;
    }
    bk_net_mem_free(h);
}

/* ---- waiters -------------------------------------------------------------------- */

static void unlink_link(bk_repl_purg_t *pg, link_t *l) {
    for (walk_t *wk = pg->walks; wk; wk = wk->outer)
        if (wk->cursor == l) wk->cursor = l->next;
    head_t *h = l->h;
    if (l->prev) l->prev->next = l->next;
    else h->first = l->next;
    if (l->next) l->next->prev = l->prev;
    l->prev = l->next = NULL;
    assert(h->n > 0);
    if (--h->n == 0) head_drop(pg, h);
}

/* Removes w from every list, frees it, then calls its done: by then the
 * purgatory holds nothing of it. */
static void complete(waiter_t *w) {
    bk_repl_purg_t *pg = w->pg;
    for (size_t i = 0; i < w->nlinks; i++) unlink_link(pg, &w->links[i]);
    if (w->prev) w->prev->next = w->next;
    else pg->first = w->next;
    if (w->next) w->next->prev = w->prev;
    else pg->last = w->prev;
    assert(pg->count > 0);
    pg->count--;
    event_free(w->timer);
    bk_repl_purg_done_fn done = w->done;
    void *ctx = w->ctx;
    bk_net_mem_free(w);
    done(ctx);
}

static void on_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    complete(arg);
}

static void soon_cb(evutil_socket_t fd, short what, void *arg);

bk_repl_purg_t *bk_repl_purg_new(struct event_base *base, size_t waiters_max) {
    bk_repl_purg_t *pg = calloc(1, sizeof *pg);
    if (!pg) return NULL;
    pg->base = base;
    pg->max = waiters_max;
    pg->soon_ev = event_new(base, -1, 0, soon_cb, pg);
    if (!pg->soon_ev || table_grow(pg) != KP_OK) {
        if (pg->soon_ev) event_free(pg->soon_ev);
        free(pg);
        return NULL;
    }
    return pg;
}

void bk_repl_purg_flush(bk_repl_purg_t *pg) {
    if (!pg) return;
    /* bounded by the waiters of now: one that a done registers (it
     * should not while stopping) goes to the end and is left waiting */
    for (size_t n = pg->count; n > 0 && pg->first; n--) complete(pg->first);
}

void bk_repl_purg_free(bk_repl_purg_t *pg) {
    if (!pg) return;
    bk_repl_purg_flush(pg);
    assert(pg->count == 0 && pg->first == NULL);   /* done did not wait again */
    assert(pg->used == 0);
    event_free(pg->soon_ev);
    free(pg->soon);
    free(pg->slots);
    free(pg);
}

int bk_repl_purg_wait(bk_repl_purg_t *pg, const bk_repl_purg_key_t *keys, size_t nkeys, int32_t wait_ms, bk_repl_purg_ready_fn ready,
                 bk_repl_purg_done_fn done, void *ctx) {
    assert(ready && done);
    if (pg->count >= pg->max) return KP_ERR_TOO_LARGE;
    if (nkeys > (SIZE_MAX - sizeof(waiter_t)) / sizeof(link_t)) return KP_ERR_NOMEM;
    size_t wbytes = sizeof(waiter_t) + nkeys * sizeof(link_t);
    waiter_t *w = bk_net_mem_alloc(wbytes);   /* one per parked request: pooled */
    if (!w) return KP_ERR_NOMEM;
    memset(w, 0, wbytes);
    w->pg = pg;   /* zeroed: no links, no list neighbours yet */
    w->ctx = ctx;
    w->ready = ready;
    w->done = done;
    if (wait_ms < 0) wait_ms = 0;
    if (wait_ms > BK_REPL_PURG_WAIT_MAX_MS) wait_ms = BK_REPL_PURG_WAIT_MAX_MS;
    w->timer = evtimer_new(pg->base, on_timer, w);
    struct timeval tv = { wait_ms / 1000, (wait_ms % 1000) * 1000 };
    if (!w->timer || evtimer_add(w->timer, &tv) != 0) goto fail;
    for (size_t i = 0; i < nkeys; i++) {
        head_t *h = head_get(pg, &keys[i]);
        if (!h) goto fail;
        /* this waiter's links are pushed in one go, so a key it already
         * holds has its link first in that list */
        if (h->first && h->first->w == w) continue;
        link_t *l = &w->links[w->nlinks++];
        *l = (link_t){ w, h, NULL, h->first };
        if (h->first) h->first->prev = l;
        h->first = l;
        h->n++;
    }
    w->prev = pg->last;
    if (pg->last) pg->last->next = w;
    else pg->first = w;
    pg->last = w;
    pg->count++;
    return KP_OK;
fail:
    for (size_t i = 0; i < w->nlinks; i++) unlink_link(pg, &w->links[i]);
    if (w->timer) event_free(w->timer);
    bk_net_mem_free(w);
    return KP_ERR_NOMEM;
}

void bk_repl_purg_notify(bk_repl_purg_t *pg, const bk_meta_uuid_t *topic_id, int32_t partition) {
    if (!pg) return;
    head_t *h = head_find(pg, topic_id, partition);
    if (!h) return;
    walk_t wk = { h->first, pg->walks };
    pg->walks = &wk;
    /* h may be freed during the walk (its last waiter completed): only the
     * cursor is used from here, and it is NULL once the list is empty */
    while (wk.cursor) {
        link_t *l = wk.cursor;
        wk.cursor = l->next;
        waiter_t *w = l->w;
        if (w->ready(w->ctx)) complete(w);
    }
    assert(pg->walks == &wk);
    pg->walks = wk.outer;
}

void bk_repl_purg_notify_soon(bk_repl_purg_t *pg, const bk_meta_uuid_t *topic_id, int32_t partition) {
    if (!pg) return;
    head_t *h = head_find(pg, topic_id, partition);
    if (!h || h->soon) return;   /* nobody waits, or already due */
    if (pg->nsoon == pg->cap_soon) {
        /* bounded by the partitions with waiters (each key once) */
        size_t ncap = pg->cap_soon ? pg->cap_soon * 2 : 16;
        bk_repl_purg_key_t *nv = realloc(pg->soon, ncap * sizeof *nv);
        if (!nv) {   /* no room to defer: now, as bk_repl_purg_notify */
            bk_repl_purg_notify(pg, topic_id, partition);
            return;
        }
        pg->soon = nv;
        pg->cap_soon = ncap;
    }
    if (pg->nsoon == 0) event_active(pg->soon_ev, EV_TIMEOUT, 1);
    pg->soon[pg->nsoon++] = h->key;
    h->soon = true;
}

/* The deferred notifies, in the order they were asked. A key's head may
 * have gone meanwhile (its last waiter completed; a head made since starts
 * with soon unset: its waiters looked at the log when they arrived, after
 * the news). Callbacks may defer more notifies: they are run in this pass. */
static void soon_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    bk_repl_purg_t *pg = arg;
    for (size_t i = 0; i < pg->nsoon; i++) {
        bk_repl_purg_key_t k = pg->soon[i];
        head_t *h = head_find(pg, &k.topic_id, k.partition);
        if (!h || !h->soon) continue;
        h->soon = false;
        bk_repl_purg_notify(pg, &k.topic_id, k.partition);
    }
    pg->nsoon = 0;
}

size_t bk_repl_purg_waiting(const bk_repl_purg_t *pg) { return pg ? pg->count : 0; }

size_t bk_repl_purg_partitions(const bk_repl_purg_t *pg) { return pg ? pg->used : 0; }
