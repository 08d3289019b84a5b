/* broker/api/prepare.c — Produce's state-free checks before dispatch; see
 * prepare.h.
 *
 * Cost: the request is decoded twice (here and on the state loop; the
 * decode walks the request's fields, not the records, which stay slices),
 * against one CRC pass and, for compressed batches, one decompression
 * moved off the state loop. Handing the decoded request over instead was
 * not done: its slices point into the net's input buffer, while the
 * handler works on its own copy of the frame (dispatch.c). */
#include "broker/api/prepare.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kp_msgs.h"
#include "protocol/kp_arena.h"
#include "protocol/kp_header.h"
#include "protocol/kp_wire.h"
#include "broker/api/dispatch.h"

typedef struct prep_pool prep_pool_t;

struct bk_api_prepared {
    bk_api_prepared_t *next;    /* free list / returned stack */
    prep_pool_t *pool;          /* the thread's pool it returns to */
    size_t frame_len;
    int32_t correlation_id;
    uint32_t nparts;
    uint32_t cap;
    bk_api_prep_part_t *parts;
};

/* One thread's memory. Only that thread touches `free`, the arenas and
 * `nfree`; any thread pushes onto `returned`. `refs`: one for the registry
 * (dropped by the last fini) plus one per result handed out and not yet
 * freed; the pool is destroyed when it reaches 0, so a result freed after
 * fini (a net freed after its node's api) still finds its pool. */
struct prep_pool {
    prep_pool_t *all_next;                  /* registry, under reg_mu */
    _Atomic uint64_t refs;
    bk_api_prepared_t *free;
    size_t nfree;
    _Atomic(bk_api_prepared_t *) returned;
    kp_arena_t decode;                      /* the request, decoded */
    kp_arena_t scratch;                     /* decompressed records */
};

/* Process-wide: the registry of every thread's pool (so that fini frees
 * them, threads gone or not) and its users. Not broker state: scratch
 * memory only. A thread's cached pool is valid while its generation is
 * the registry's (fini starts a new one). */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static prep_pool_t *reg_head;
static int reg_users;
static _Atomic uint64_t reg_gen = 1;
static _Atomic uint64_t st_made, st_allocated, st_pools;
static _Thread_local prep_pool_t *tl_pool;
static _Thread_local uint64_t tl_gen;

void bk_api_prepare_init(void) {
    pthread_mutex_lock(&reg_mu);
    reg_users++;
    pthread_mutex_unlock(&reg_mu);
}

static void result_destroy(bk_api_prepared_t *r) {
    free(r->parts);
    free(r);
}

static void pool_destroy(prep_pool_t *p) {
    bk_api_prepared_t *r = p->free;
    while (r) {
        bk_api_prepared_t *next = r->next;
        result_destroy(r);
        r = next;
    }
    r = atomic_exchange(&p->returned, NULL);
    while (r) {
        bk_api_prepared_t *next = r->next;
        result_destroy(r);
        r = next;
    }
    kp_arena_free(&p->decode);
    kp_arena_free(&p->scratch);
    free(p);
    atomic_fetch_sub(&st_pools, 1);
}

/* Drops one reference; the last one destroys the pool (any thread: by
 * then no thread uses it as its own, fini moved the generation on). */
static void pool_unref(prep_pool_t *p) {
    uint64_t before = atomic_fetch_sub(&p->refs, 1);
    assert(before > 0);
    if (before == 1) pool_destroy(p);
}

void bk_api_prepare_fini(void) {
    pthread_mutex_lock(&reg_mu);
    assert(reg_users > 0);
    if (--reg_users == 0) {
        prep_pool_t *p = reg_head;
        reg_head = NULL;
        atomic_fetch_add(&reg_gen, 1);
        while (p) {
            prep_pool_t *next = p->all_next;
            pool_unref(p);      /* the registry's; results still out keep it */
            p = next;
        }
    }
    pthread_mutex_unlock(&reg_mu);
}

static prep_pool_t *pool_get(void) {
    uint64_t gen = atomic_load(&reg_gen);
    if (tl_pool && tl_gen == gen) return tl_pool;
    prep_pool_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    atomic_init(&p->returned, NULL);
    atomic_init(&p->refs, 1);
    atomic_fetch_add(&st_pools, 1);
    kp_arena_init(&p->decode, BK_API_REQ_ARENA_CAP_BYTES);
    kp_arena_init(&p->scratch, BK_REPL_PARTS_SCRATCH_CAP_BYTES);
    pthread_mutex_lock(&reg_mu);
    p->all_next = reg_head;
    reg_head = p;
    gen = atomic_load(&reg_gen);   /* registered in this generation */
    pthread_mutex_unlock(&reg_mu);
    tl_pool = p;
    tl_gen = gen;
    return p;
}

/* Keeps r on this thread's free list, or frees it past the bounds. */
static void pool_keep(prep_pool_t *p, bk_api_prepared_t *r) {
    if (p->nfree >= BK_API_PREP_FREE_MAX) {
        result_destroy(r);
        return;
    }
    if (r->cap > BK_API_PREP_PARTS_RETAIN) {
        free(r->parts);
        r->parts = NULL;
        r->cap = 0;
    }
    r->next = p->free;
    p->free = r;
    p->nfree++;
}

/* A result with room for nparts verdicts: from the free list (after taking
 * back what other threads returned), else new. */
static bk_api_prepared_t *result_get(prep_pool_t *p, uint32_t nparts) {
    if (!p->free) {
        bk_api_prepared_t *r = atomic_exchange(&p->returned, NULL);
        while (r) {
            bk_api_prepared_t *next = r->next;
            pool_keep(p, r);
            r = next;
        }
    }
    bk_api_prepared_t *r = p->free;
    bool allocated = false;
    if (r) {
        p->free = r->next;
        p->nfree--;
    } else {
        r = calloc(1, sizeof *r);
        if (!r) return NULL;
        r->pool = p;
        allocated = true;
    }
    if (r->cap < nparts) {
        /* sized by partitions the decoder found in the frame's bytes */
        bk_api_prep_part_t *np = realloc(r->parts, (size_t)nparts * sizeof *np);
        if (!np) {
            pool_keep(p, r);
            return NULL;
        }
        r->parts = np;
        r->cap = nparts;
        allocated = true;
    }
    r->next = NULL;
    r->nparts = 0;
    atomic_fetch_add_explicit(&st_made, 1, memory_order_relaxed);
    if (allocated) atomic_fetch_add_explicit(&st_allocated, 1, memory_order_relaxed);
    return r;
}

void bk_api_prepared_free(void *prepared) {
    bk_api_prepared_t *r = prepared;
    if (!r) return;
    prep_pool_t *p = r->pool;
    if (p == tl_pool && tl_gen == atomic_load(&reg_gen)) {
        pool_keep(p, r);
    } else {
        bk_api_prepared_t *head = atomic_load(&p->returned);
        do {
            r->next = head;
        } while (!atomic_compare_exchange_weak(&p->returned, &head, r));
    }
    /* after r is back in the pool: the last reference frees both */
    pool_unref(p);
}

static size_t count_parts(const kp_produce_request_t *q) {
    size_t n = 0;
    for (int32_t i = 0; i < q->topic_data.count; i++)
        if (q->topic_data.items[i].partition_data.count > 0) n += (size_t)q->topic_data.items[i].partition_data.count;
    return n;
}

void *bk_api_prepare_frame(const uint8_t *frame, size_t len, void *ctx) {
    (void)ctx;
    kp_rd_t rd;
    kp_rd_init(&rd, frame, len);
    int16_t api_key = -1;
    if (kp_rd_i16(&rd, &api_key) != KP_OK || api_key != KP_API_PRODUCE) return NULL;
    prep_pool_t *p = pool_get();
    if (!p) return NULL;
    kp_arena_reset_retain(&p->decode, BK_API_PREP_DECODE_RETAIN_BYTES);
    kp_request_header_t hdr;
    void *body = NULL;
    /* anything the decoder refuses is the state loop's to answer (it
     * decodes again and closes the connection) */
    if (kp_request_decode(frame, len, &hdr, &body, &p->decode) != KP_OK || !body) return NULL;
    const kp_produce_request_t *q = body;
    size_t n = count_parts(q);
    if (n == 0 || n > UINT32_MAX || len > UINT32_MAX) return NULL;
    bk_api_prepared_t *r = result_get(p, (uint32_t)n);
    if (!r) return NULL;
    r->frame_len = len;
    r->correlation_id = hdr.correlation_id;
    for (int32_t i = 0; i < q->topic_data.count; i++) {
        const kp_produce_request_topic_produce_data_t *td = &q->topic_data.items[i];
        for (int32_t k = 0; k < td->partition_data.count; k++) {
            kp_bytes_t recs = td->partition_data.items[k].records.bytes;
            bk_api_prep_part_t *e = &r->parts[r->nparts++];
            *e = (bk_api_prep_part_t){ 0, 0, { 0, BK_REPL_PS_PRE_NONE, 0 } };
            if (recs.p == NULL) continue;   /* null records: the loop answers */
            uintptr_t off = (uintptr_t)recs.p - (uintptr_t)frame;   /* a slice of the frame */
            assert((uintptr_t)recs.p >= (uintptr_t)frame && off + recs.len <= len);
            e->off = (uint32_t)off;
            e->len = (uint32_t)recs.len;
            bk_repl_ps_precheck(recs.p, recs.len, hdr.api_version, &p->scratch, &e->pre);
        }
    }
    assert(r->nparts == n);
    kp_arena_reset_retain(&p->decode, BK_API_PREP_DECODE_RETAIN_BYTES);
    atomic_fetch_add(&p->refs, 1);   /* until bk_api_prepared_free */
    return r;
}

const bk_repl_ps_pre_t *bk_api_prepared_part(const bk_api_prepared_t *r, const uint8_t *frame, size_t frame_len,
                                             int32_t corr, uint32_t index, const uint8_t *records, size_t len) {
    if (!r || !records || r->frame_len != frame_len || r->correlation_id != corr || index >= r->nparts) return NULL;
    const bk_api_prep_part_t *e = &r->parts[index];
    if ((uintptr_t)records < (uintptr_t)frame || (uintptr_t)records - (uintptr_t)frame != e->off || len != e->len ||
        e->len == 0)
        return NULL;
    return &e->pre;
}

bk_api_prep_stats_t bk_api_prepare_stats(void) {
    return (bk_api_prep_stats_t){ atomic_load(&st_made), atomic_load(&st_allocated), atomic_load(&st_pools) };
}
