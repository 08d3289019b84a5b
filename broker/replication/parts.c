/* broker/replication/parts.c — partition manager (see parts.h). */
#include "broker/replication/parts.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "broker/net/clock.h"
#include "broker/net/mem.h"
#include "broker/replication/parts_open.h"
#include "storage/st_guard.h"
#include "storage/st_status.h"

typedef struct drop_batch drop_batch_t;

struct bk_repl_parts {
    bk_repl_part_t *slots;       /* open addressing, linear probing */
    size_t cap;             /* power of two */
    size_t count;
    st_logdir_t *dirs;
    size_t ndirs;
    size_t dir_parts[BK_REPL_PARTS_DIRS_MAX];   /* held partitions per dir (placement) */
    bk_repl_popen_t *opener;                    /* NULL: logs open on the loop */
    bool defer;                            /* this apply opens on the pool */
    bk_repl_parts_opened_fn on_opened;
    void *opened_ctx;
    bk_repl_parts_trash_fn trash_fn;            /* of the latest apply: for deferred work */
    void *trash_ctx;
    bk_repl_parts_cfg_fn cfg_fn;
    bk_net_worker_pool_t *pool;                /* NULL until bk_repl_parts_set_pool */
    uint64_t next_gen;                     /* log_gen source */
    size_t jobs_inflight;                  /* flush, removal, checkpoint jobs */
    drop_batch_t *drops_waiting;           /* removal jobs the pool refused (FIFO) */
    size_t drops_waiting_n;
    bool ckpt_inflight;
    bk_repl_parts_io_stats_t st;
    kp_arena_t scratch;                    /* produce validation's (partition.c), loop thread */
    uint64_t prechecked;                   /* batches validated with a precheck's verdict */
};

static uint64_t tp_hash(const bk_meta_uuid_t *id, int32_t partition) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < BK_META_UUID_BYTES; i++) h = (h ^ id->b[i]) * 1099511628211ull;
    h = (h ^ (uint32_t)partition) * 1099511628211ull;
    return h ^ (h >> 29);
}

bk_repl_parts_t *bk_repl_parts_new(st_logdir_t *dirs, size_t ndirs) {
    assert(ndirs >= 1);
    bk_repl_parts_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->cap = 64;
    p->slots = calloc(p->cap, sizeof *p->slots);
    if (!p->slots) { free(p); return NULL; }
    p->dirs = dirs;
    p->ndirs = ndirs;
    kp_arena_init(&p->scratch, BK_REPL_PARTS_SCRATCH_CAP_BYTES);
    return p;
}

kp_arena_t *bk_repl_parts_scratch(bk_repl_parts_t *p) { return &p->scratch; }

void bk_repl_parts_prechecked_add(bk_repl_parts_t *p, uint64_t nbatches) { p->prechecked += nbatches; }

uint64_t bk_repl_parts_prechecked_batches(const bk_repl_parts_t *p) { return p->prechecked; }

static bk_repl_part_t *find_slot(bk_repl_part_t *slots, size_t cap, const bk_meta_uuid_t *id, int32_t partition) {
    size_t i = (size_t)tp_hash(id, partition) & (cap - 1);
    for (size_t probes = 0; probes < cap; probes++, i = (i + 1) & (cap - 1)) {
        bk_repl_part_t *s = &slots[i];
        if (!s->used) return s;
        if (s->partition == partition && memcmp(s->topic_id.b, id->b, BK_META_UUID_BYTES) == 0) return s;
    }
    return NULL;
}

bk_repl_part_t *bk_repl_parts_get(bk_repl_parts_t *p, const bk_meta_uuid_t *topic_id, int32_t partition) {
    bk_repl_part_t *s = find_slot(p->slots, p->cap, topic_id, partition);
    return (s && s->used) ? s : NULL;
}

static int grow(bk_repl_parts_t *p) {
    size_t ncap = p->cap * 2;
    bk_repl_part_t *ns = calloc(ncap, sizeof *ns);
    if (!ns) return KP_ERR_NOMEM;
    for (size_t i = 0; i < p->cap; i++) {
        if (!p->slots[i].used) continue;
        bk_repl_part_t *d = find_slot(ns, ncap, &p->slots[i].topic_id, p->slots[i].partition);
        assert(d && !d->used);
        *d = p->slots[i];
    }
    free(p->slots);
    p->slots = ns;
    p->cap = ncap;
    return KP_OK;
}

/* Removal with re-insertion of the rest of the probe run (no tombstones). */
static void remove_slot(bk_repl_parts_t *p, bk_repl_part_t *s) {
    size_t i = (size_t)(s - p->slots);
    if (s->dir >= 0 && (size_t)s->dir < BK_REPL_PARTS_DIRS_MAX && p->dir_parts[s->dir] > 0) p->dir_parts[s->dir]--;
    memset(s, 0, sizeof *s);
    p->count--;
    for (size_t j = (i + 1) & (p->cap - 1); p->slots[j].used; j = (j + 1) & (p->cap - 1)) {
        bk_repl_part_t tmp = p->slots[j];
        memset(&p->slots[j], 0, sizeof tmp);
        bk_repl_part_t *d = find_slot(p->slots, p->cap, &tmp.topic_id, tmp.partition);
        assert(d && !d->used);
        *d = tmp;
    }
}

/* Fewest held partitions wins. Counted here, not by listing the dirs
 * (st_logdirs_pick): a listing per new partition made bulk creation
 * quadratic in the number of partitions. */
static int pick_dir(bk_repl_parts_t *p) {
    size_t n = p->ndirs < BK_REPL_PARTS_DIRS_MAX ? p->ndirs : BK_REPL_PARTS_DIRS_MAX;
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (p->dir_parts[i] < p->dir_parts[best]) best = i;
    return (int)best;
}

/* An existing partition directory wins over placement (restart). */
static int find_existing_dir(bk_repl_parts_t *p, const char *topic, int32_t partition) {
    char path[ST_PATH_MAX + 300];
    for (size_t i = 0; i < p->ndirs; i++) {
        snprintf(path, sizeof path, "%s/%s-%d", p->dirs[i].path, topic, partition);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return (int)i;
    }
    return -1;
}

/* Queues the open on the worker pool; false: open it here. */
static bool open_later(bk_repl_parts_t *p, bk_repl_part_t *s, const st_log_config_t *lc, const st_log_open_opts_t *opts) {
    bk_repl_popen_item_t it;
    memset(&it, 0, sizeof it);
    it.topic_id = s->topic_id;
    it.partition = s->partition;
    it.dir = s->dir;
    snprintf(it.parent, sizeof it.parent, "%s", p->dirs[s->dir].path);
    snprintf(it.topic, sizeof it.topic, "%s", s->topic);
    it.cfg = *lc;
    it.opts = *opts;
    s->log = NULL;
    s->opening = true;
    if (bk_repl_popen_add(p->opener, &it) == KP_OK) return true;
    s->opening = false;
    return false;
}

/* A log just opened for slot s: from now on jobs know it by its gen, and
 * its segment removals wait for bk_repl_parts_tick (never renamed on the loop). */
static void log_installed(bk_repl_parts_t *p, bk_repl_part_t *s) {
    assert(s->log);
    s->log_gen = ++p->next_gen;
    st_log_set_deferred_removal(s->log, true);
}

static void open_part(bk_repl_parts_t *p, bk_repl_part_t *s, bk_repl_parts_cfg_fn cfg_fn, void *cfg_ctx,
                      int64_t now_ms) {
    int d = find_existing_dir(p, s->topic, s->partition);
    if (d < 0) d = pick_dir(p);
    s->dir = d;
    if ((size_t)d < BK_REPL_PARTS_DIRS_MAX) p->dir_parts[d]++;
    st_log_config_t lc;
    cfg_fn(cfg_ctx, s->topic, &lc);
    st_log_open_opts_t opts;
    st_logdir_opts_for(&p->dirs[d], s->topic, s->partition, now_ms, &opts);
    opts.create = true;
    /* behind anything queued (a deletion of this very directory may be) */
    bool defer = p->opener && (p->defer || bk_repl_popen_pending(p->opener) > 0);
    if (defer && open_later(p, s, &lc, &opts)) return;
    /* a small apply opens here so a client producing right after its
     * CreateTopics finds the log (kafka-python with retries=0): the one
     * documented open on the loop, a few ms per log, at most
     * BK_REPL_PARTS_SYNC_OPENS of them */
    st_guard_allow_begin();
    int rc = st_log_open(p->dirs[d].path, s->topic, s->partition, &lc, &opts, &s->log);
    st_guard_allow_end();
    if (rc != KP_OK) {
        s->log = NULL;
        st_logf(ST_LOG_ERROR, "partition %s-%d in %s: cannot open (%s); it stays offline",
                s->topic, s->partition, p->dirs[d].path, st_status_str(rc));
        return;
    }
    log_installed(p, s);
}

bool bk_repl_parts_is_trash(const char *name) {
    size_t n = strlen(name), k = strlen("-delete");
    return n > k && strcmp(name + n - k, "-delete") == 0;
}

/* Deletion without a pool (start-up replay): close, rename out of the way
 * (atomic: a restart never sees a half-deleted partition under its real
 * name), hand over the unlinking. */
static int delete_now(st_log_t *log, bk_repl_parts_trash_fn trash_fn, void *ctx, int64_t now_ms) {
    if (!trash_fn) return st_log_delete(log);
    char dir[ST_PATH_MAX], trash[ST_PATH_MAX + 48];
    snprintf(dir, sizeof dir, "%s", st_log_dir(log));
    st_log_discard(log);   /* its files are going away: nothing to flush */
    snprintf(trash, sizeof trash, "%s.%lld-delete", dir, (long long)now_ms);
    if (rename(dir, trash) != 0) return ST_ERR_IO;
    trash_fn(ctx, trash);
    return KP_OK;
}

/* Closes or deletes the log of slot s, which leaves the table right after:
 * on the pool (queued behind earlier operations on any directory), else
 * inline. The log is handed over; s->log is cleared. Returns a status only
 * for inline work (queued work reports in the completion). */
static int stop_log(bk_repl_parts_t *p, bk_repl_part_t *s, bool deleted, bk_repl_parts_trash_fn trash_fn, void *ctx,
                    int64_t now_ms, bool front) {
    st_log_t *log = s->log;
    s->log = NULL;
    if (p->opener) {
        bk_repl_popen_item_t it;
        memset(&it, 0, sizeof it);
        it.kind = deleted ? BK_REPL_POPEN_DELETE : BK_REPL_POPEN_CLOSE;
        it.remove_now = !trash_fn;
        it.topic_id = s->topic_id;
        it.partition = s->partition;
        it.dir = s->dir;
        snprintf(it.topic, sizeof it.topic, "%s", s->topic);
        it.opts.now_ms = now_ms;
        it.log = log;
        if ((front ? bk_repl_popen_add_front(p->opener, &it) : bk_repl_popen_add(p->opener, &it)) == KP_OK) return KP_OK;
    }
    /* no pool (start-up replay) or no memory for the queue entry */
    st_guard_allow_begin();
    int rc = deleted ? delete_now(log, trash_fn, ctx, now_ms) : st_log_close(log, NULL);
    st_guard_allow_end();
    return rc;
}

/* A finished async open: install the log, or carry out a STOP that came
 * meanwhile. Slots are found again by key: others may have moved. */
static void install_opened(bk_repl_parts_t *p, const bk_repl_popen_item_t *it) {
    bk_repl_part_t *s = bk_repl_parts_get(p, &it->topic_id, it->partition);
    assert(s && s->opening);   /* an opening slot is never removed */
    s->opening = false;
    s->log = it->log;
    if (!s->log && it->rc == BK_NET_ERR_CANCELLED)
        st_logf(ST_LOG_WARN, "partition %s-%d: not opened, the node is stopping", s->topic, s->partition);
    else if (!s->log)
        st_logf(ST_LOG_ERROR, "partition %s-%d in %s: cannot open (%s); it stays offline", s->topic, s->partition,
                it->parent, st_status_str(it->rc));
    if (s->log) log_installed(p, s);
    if (s->stop_pending) {
        int rc = KP_OK;
        /* ahead of the queue: a re-creation of this directory may be queued */
        if (s->log) rc = stop_log(p, s, s->delete_pending, p->trash_fn, p->trash_ctx, it->opts.now_ms, true);
        if (rc != KP_OK) st_logf(ST_LOG_WARN, "partition %s-%d: stop after open failed: %s", s->topic, s->partition,
                                 st_status_str(rc));
        remove_slot(p, s);
        return;
    }
    if (!s->log) return;
    if (p->cfg_fn) {   /* settings may have changed while it opened */
        st_log_config_t lc;
        p->cfg_fn(p->trash_ctx, s->topic, &lc);
        st_log_set_config(s->log, &lc);
    }
    /* the HW is the replication driver's: it attaches (bk_repl_replica_attach_opened) */
}

/* A queued close or deletion finished: its log is gone (the slot left the
 * table when it was queued). */
static void stopped(bk_repl_parts_t *p, const bk_repl_popen_item_t *it) {
    assert(!it->log);
    if (it->rc != KP_OK) {
        st_logf(ST_LOG_WARN, "partition %s-%d: %s failed: %s", it->topic, it->partition,
                it->kind == BK_REPL_POPEN_DELETE ? "delete" : "close", st_status_str(it->rc));
        return;
    }
    if (it->kind == BK_REPL_POPEN_DELETE && !it->remove_now && p->trash_fn) p->trash_fn(p->trash_ctx, it->trash);
}

static void opened(void *ctx, bk_repl_popen_item_t *items, size_t n) {
    bk_repl_parts_t *p = ctx;
    bool any_open = false;
    for (size_t i = 0; i < n; i++) {
        if (items[i].kind == BK_REPL_POPEN_OPEN) {
            install_opened(p, &items[i]);
            any_open = true;
        } else {
            stopped(p, &items[i]);
        }
    }
    if (any_open && p->on_opened) p->on_opened(p->opened_ctx);
}

int bk_repl_parts_set_pool(bk_repl_parts_t *p, bk_net_worker_pool_t *pool, bk_repl_parts_opened_fn fn, void *ctx) {
    assert(!p->opener);
    p->opener = bk_repl_popen_new(pool, opened, p);
    if (!p->opener) return KP_ERR_NOMEM;
    p->pool = pool;
    p->on_opened = fn;
    p->opened_ctx = ctx;
    return KP_OK;
}

static size_t apply_one(bk_repl_parts_t *p, const bk_meta_image_t *img, const bk_meta_change_t *c,
                        bk_repl_parts_cfg_fn cfg_fn, void *cfg_ctx, bk_repl_parts_trash_fn trash_fn, int64_t now_ms) {
    bk_repl_part_t *s = bk_repl_parts_get(p, &c->topic_id, c->partition);
    if (c->kind == BK_META_CHANGE_STOP) {
        if (!s) return 0;
        if (s->opening) {
            /* the open in flight finishes first (bk_parts_opened) */
            s->stop_pending = true;
            s->delete_pending = s->delete_pending || c->deleted;
            return 0;
        }
        int rc = KP_OK;
        if (s->log) rc = stop_log(p, s, c->deleted, trash_fn, cfg_ctx, now_ms, false);
        if (rc != KP_OK)
            st_logf(ST_LOG_WARN, "partition %s-%d: %s failed: %s", s->topic, s->partition,
                    c->deleted ? "delete" : "close", st_status_str(rc));
        remove_slot(p, s);
        return rc != KP_OK;
    }
    if (!s) {
        const bk_meta_topic_t *t = bk_meta_image_topic_by_id(img, &c->topic_id);
        if (!t || p->count >= BK_REPL_PARTS_MAX) return 1;
        if ((p->count + 1) * 2 > p->cap && grow(p) != KP_OK) return 1;
        s = find_slot(p->slots, p->cap, &c->topic_id, c->partition);
        assert(s && !s->used);
        memset(s, 0, sizeof *s);
        s->used = true;
        s->topic_id = c->topic_id;
        s->partition = c->partition;
        snprintf(s->topic, sizeof s->topic, "%s", t->name);
        p->count++;
        open_part(p, s, cfg_fn, cfg_ctx, now_ms);
    }
    s->stop_pending = false;   /* held again before its pending stop ran */
    s->delete_pending = false;
    s->leader = c->kind == BK_META_CHANGE_LEADER;
    s->leader_epoch = c->leader_epoch;
    /* the HW is the replication driver's (replica.h): never set here */
    return s->log == NULL && !s->opening;
}

size_t bk_repl_parts_apply(bk_repl_parts_t *p, const bk_meta_image_t *img, const bk_meta_change_t *ch, size_t n,
                      bk_repl_parts_cfg_fn cfg_fn, void *cfg_ctx, bk_repl_parts_trash_fn trash_fn, int64_t now_ms) {
    size_t failed = 0, fresh = 0;
    for (size_t i = 0; i < n && fresh <= BK_REPL_PARTS_SYNC_OPENS; i++)
        if (ch[i].kind != BK_META_CHANGE_STOP && !bk_repl_parts_get(p, &ch[i].topic_id, ch[i].partition)) fresh++;
    /* while opens are queued, new ones queue behind them: a topic deleted
     * and re-created under its name must not be opened beside its old open */
    p->defer = p->opener && (fresh > BK_REPL_PARTS_SYNC_OPENS || bk_repl_popen_pending(p->opener) > 0);
    p->trash_fn = trash_fn;
    p->trash_ctx = cfg_ctx;
    p->cfg_fn = cfg_fn;
    for (size_t i = 0; i < n; i++) failed += apply_one(p, img, &ch[i], cfg_fn, cfg_ctx, trash_fn, now_ms);
    /* after the loop: a refused job completes its opens right away, which
     * may remove slots (pending stops) */
    if (p->opener) bk_repl_popen_kick(p->opener);
    return failed;
}

void bk_repl_parts_each(bk_repl_parts_t *p, void (*fn)(bk_repl_part_t *part, void *ctx), void *ctx) {
    for (size_t i = 0; i < p->cap; i++)
        if (p->slots[i].used) fn(&p->slots[i], ctx);
}

size_t bk_repl_parts_count(const bk_repl_parts_t *p) { return p->count; }
size_t bk_repl_parts_slots(const bk_repl_parts_t *p) { return p->cap; }
bk_repl_part_t *bk_repl_parts_slot(bk_repl_parts_t *p, size_t i) {
    if (i >= p->cap || !p->slots[i].used || !p->slots[i].log) return NULL;
    return &p->slots[i];
}

/* Builds one dir's rows: offsets come from `final` when closing. */
static int checkpoint_dirs(bk_repl_parts_t *p, const st_log_offsets_t *final,
                           const st_logdir_entry_t *extra, int extra_dir) {
    int first_rc = KP_OK;
    st_logdir_entry_t *rows = malloc((p->count + 1) * sizeof *rows);
    if (!rows) return KP_ERR_NOMEM;
    for (size_t d = 0; d < p->ndirs; d++) {
        size_t n = 0, k = 0;
        for (size_t i = 0; i < p->cap; i++) {
            bk_repl_part_t *s = &p->slots[i];
            if (!s->used) continue;
            size_t idx = k++;
            if ((size_t)s->dir != d) continue;
            if (final) {
                if (final[idx].log_end_offset < 0) continue;   /* was offline */
                rows[n].offsets = final[idx];
            } else {
                if (!s->log) continue;
                rows[n].offsets.log_start_offset = st_log_start_offset(s->log);
                rows[n].offsets.recovery_point = st_log_recovery_point(s->log);
                rows[n].offsets.high_watermark = st_log_high_watermark(s->log);
                rows[n].offsets.log_end_offset = st_log_end_offset(s->log);
                rows[n].offsets.cleaner_offset = st_log_cleaner_offset(s->log);
            }
            rows[n].topic = s->topic;
            rows[n].partition = s->partition;
            n++;
        }
        if (extra && extra_dir == (int)d) rows[n++] = *extra;
        int rc = st_logdir_checkpoint(p->dirs[d].path, rows, n);
        if (rc != KP_OK && first_rc == KP_OK) first_rc = rc;
    }
    free(rows);
    return first_rc;
}

int bk_repl_parts_checkpoint(bk_repl_parts_t *p, const st_logdir_entry_t *extra, int extra_dir) {
    return checkpoint_dirs(p, NULL, extra, extra_dir);
}

/* ---- jobs: finding the partition again ----------------------------------------- */

typedef struct {
    bk_meta_uuid_t topic_id;
    int32_t partition;
    uint64_t gen;
} part_key_t;

static part_key_t key_of(const bk_repl_part_t *s) { return (part_key_t){ s->topic_id, s->partition, s->log_gen }; }

/* The slot whose log is still the one the job began on, or NULL. */
static bk_repl_part_t *find_key(bk_repl_parts_t *p, const part_key_t *k) {
    bk_repl_part_t *s = bk_repl_parts_get(p, &k->topic_id, k->partition);
    return s && s->log && s->log_gen == k->gen ? s : NULL;
}

/* ---- flush ------------------------------------------------------------------------ */

typedef struct {
    part_key_t key;
    st_log_sync_t *sync;
} flush_item_t;

typedef struct {
    bk_repl_parts_t *p;
    size_t n;
    flush_item_t items[BK_REPL_PARTS_IO_BATCH];
} flush_batch_t;

/* Worker: touches only the sync jobs. */
static int flush_job(void *arg) {
    flush_batch_t *b = arg;
    for (size_t i = 0; i < b->n; i++) (void)st_log_sync_run(b->items[i].sync);   /* result kept in the job */
    return KP_OK;
}

/* Ends one item on the loop; true when it ran and its log is still here. */
static bool flush_finish(bk_repl_parts_t *p, flush_item_t *it, bool ran) {
    bk_repl_part_t *s = find_key(p, &it->key);
    if (!s) {
        st_log_sync_free(it->sync);
        p->st.flushes_orphaned++;
        return false;
    }
    int rc = st_log_sync_end(s->log, it->sync, ran);   /* storage logs a failure */
    if (!ran) p->st.flushes_skipped++;
    else if (rc != KP_OK) p->st.flushes_failed++;
    else p->st.flushes_done++;
    return ran && rc == KP_OK;
}

static void flush_done(void *arg, int status) {
    flush_batch_t *b = arg;
    bk_repl_parts_t *p = b->p;
    assert(p->jobs_inflight > 0);
    p->jobs_inflight--;
    int64_t now = bk_net_now_ms();
    for (size_t i = 0; i < b->n; i++) {
        if (!flush_finish(p, &b->items[i], status == KP_OK)) continue;
        /* appends made while it ran may have made the next one due */
        bk_repl_part_t *s = find_key(p, &b->items[i].key);
        if (s) bk_repl_parts_flush_maybe(p, s, now);
    }
    bk_net_mem_free(b);
}

static void flush_submit(bk_repl_parts_t *p, flush_batch_t *b) {
    if (b->n == 0) {
        bk_net_mem_free(b);
        return;
    }
    if (bk_net_worker_submit(p->pool, flush_job, flush_done, b) == BK_NET_OK) {
        p->jobs_inflight++;
        return;
    }
    /* pool full or stopping: nothing becomes durable now; still due, so
     * the next append or tick tries again */
    for (size_t i = 0; i < b->n; i++) (void)flush_finish(p, &b->items[i], false);
    bk_net_mem_free(b);
}

/* Begins s's fsync into b when one is due. */
static void flush_add(bk_repl_parts_t *p, flush_batch_t *b, bk_repl_part_t *s, int64_t now_ms) {
    assert(b->n < BK_REPL_PARTS_IO_BATCH);
    if (!s->log || !st_log_flush_due(s->log, now_ms)) return;
    st_log_sync_t *j = NULL;
    int rc = st_log_sync_begin(s->log, now_ms, &j);
    if (rc != KP_OK) {
        if (rc != ST_ERR_OFFLINE)
            st_logf(ST_LOG_WARN, "partition %s-%d: fsync not started: %s", s->topic, s->partition,
                    st_status_str(rc));
        return;
    }
    if (!j) return;   /* nothing past the recovery point */
    b->items[b->n++] = (flush_item_t){ key_of(s), j };
    p->st.flushes_started++;
}

static flush_batch_t *flush_batch_new(bk_repl_parts_t *p) {
    flush_batch_t *b = bk_net_mem_alloc(sizeof *b);   /* every tick: pooled */
    if (b) {
        b->p = p;
        b->n = 0;
    }
    return b;
}

void bk_repl_parts_flush_maybe(bk_repl_parts_t *p, bk_repl_part_t *part, int64_t now_ms) {
    if (!p->pool || !part->log || !st_log_flush_due(part->log, now_ms)) return;
    flush_batch_t *b = flush_batch_new(p);
    if (!b) return;   /* still due: the next call tries again */
    flush_add(p, b, part, now_ms);
    flush_submit(p, b);
}

/* ---- retention: segments detached on the loop, files removed on the pool ---------- */

struct drop_batch {
    bk_repl_parts_t *p;
    drop_batch_t *next;                   /* in drops_waiting */
    size_t n;
    st_log_drop_t *d[BK_REPL_PARTS_IO_BATCH];
};

/* Worker: touches only the drop descriptions. */
static int drop_job(void *arg) {
    drop_batch_t *b = arg;
    int rc = KP_OK;
    for (size_t i = 0; i < b->n; i++) {
        int r = st_log_drop_run(b->d[i]);
        if (r != KP_OK && rc == KP_OK) rc = r;
    }
    return rc;
}

static void drop_batch_free(drop_batch_t *b) {
    for (size_t i = 0; i < b->n; i++) st_log_drop_free(b->d[i]);
    bk_net_mem_free(b);
}

static void drop_done(void *arg, int status) {
    drop_batch_t *b = arg;
    bk_repl_parts_t *p = b->p;
    assert(p->jobs_inflight > 0);
    p->jobs_inflight--;
    /* leftovers are "*.deleted" (removed at the next open) or segments below
     * the log start (detached again at the next open's first tick) */
    if (status != KP_OK) {
        p->st.drop_failures++;
        if (status != BK_NET_ERR_CANCELLED)
            st_logf(ST_LOG_WARN, "retention: removing %zu segment file set(s) failed in part (%s); what is left "
                    "goes at the next start", b->n, st_status_str(status));
    }
    drop_batch_free(b);
}

/* Submits b, or keeps it (in order) until the pool has room. */
static void drop_submit(bk_repl_parts_t *p, drop_batch_t *b) {
    if (b->n == 0) {
        bk_net_mem_free(b);
        return;
    }
    if (!p->drops_waiting && bk_net_worker_submit(p->pool, drop_job, drop_done, b) == BK_NET_OK) {
        p->jobs_inflight++;
        return;
    }
    b->next = NULL;
    drop_batch_t **pp = &p->drops_waiting;
    while (*pp) pp = &(*pp)->next;
    *pp = b;
    p->drops_waiting_n++;
}

/* Resubmits refused removal jobs; true when none waits any more. */
static bool drops_retry(bk_repl_parts_t *p) {
    while (p->drops_waiting) {
        drop_batch_t *b = p->drops_waiting;
        if (bk_net_worker_submit(p->pool, drop_job, drop_done, b) != BK_NET_OK) return false;
        p->drops_waiting = b->next;
        p->drops_waiting_n--;
        p->jobs_inflight++;
    }
    return true;
}

static drop_batch_t *drop_batch_new(bk_repl_parts_t *p) {
    drop_batch_t *b = bk_net_mem_alloc(sizeof *b);   /* every tick: pooled */
    if (b) {
        b->p = p;
        b->next = NULL;
        b->n = 0;
    }
    return b;
}

/* One log's retention into b. */
static void retention_one(bk_repl_parts_t *p, drop_batch_t *b, bk_repl_part_t *s, int64_t now_ms) {
    assert(b->n < BK_REPL_PARTS_IO_BATCH);
    st_log_drop_t *d = NULL;
    int deleted = 0;
    int rc = st_log_retention_detach(s->log, now_ms, &d, &deleted);
    if (rc != KP_OK && rc != ST_ERR_OFFLINE)
        st_logf(ST_LOG_WARN, "partition %s-%d: retention skipped: %s", s->topic, s->partition, st_status_str(rc));
    if (!d) return;
    b->d[b->n++] = d;
    p->st.segments_dropped += (uint64_t)deleted;
}

void bk_repl_parts_tick(bk_repl_parts_t *p, int64_t now_ms) {
    if (!p->pool) return;
    /* removal waiting for room: detach nothing new (bounds what waits to
     * one tick's worth; retention is never urgent) */
    bool retention = drops_retry(p);
    flush_batch_t *fb = flush_batch_new(p);
    drop_batch_t *db = retention ? drop_batch_new(p) : NULL;
    if (!fb || (retention && !db)) {
        bk_net_mem_free(fb);
        bk_net_mem_free(db);
        return;   /* next tick */
    }
    for (size_t i = 0; i < p->cap; i++) {
        bk_repl_part_t *s = &p->slots[i];
        if (!s->used || !s->log) continue;
        if (db) {
            retention_one(p, db, s, now_ms);
            if (db->n == BK_REPL_PARTS_IO_BATCH) {
                drop_submit(p, db);
                db = drop_batch_new(p);
            }
        }
        flush_add(p, fb, s, now_ms);
        if (fb->n == BK_REPL_PARTS_IO_BATCH) {
            flush_submit(p, fb);
            fb = flush_batch_new(p);
            if (!fb) break;
        }
    }
    if (fb) flush_submit(p, fb);
    if (db) drop_submit(p, db);
}

/* ---- periodic checkpoint on the pool ---------------------------------------------- */

typedef struct {
    char path[ST_PATH_MAX];
    st_logdir_entry_t *rows;     /* into ckpt_job_t.rows */
    size_t n;
} ckpt_dir_t;

typedef struct {
    bk_repl_parts_t *p;
    size_t ndirs;
    ckpt_dir_t *dirs;
    st_logdir_entry_t *rows;
    char *names;                 /* the rows' topic names, copied */
} ckpt_job_t;

static void ckpt_free(ckpt_job_t *j) {
    if (!j) return;
    free(j->dirs);
    free(j->rows);
    free(j->names);
    free(j);
}

/* Worker: touches only the copied rows. */
static int ckpt_job(void *arg) {
    ckpt_job_t *j = arg;
    int first = KP_OK;
    for (size_t d = 0; d < j->ndirs; d++) {
        int rc = st_logdir_checkpoint(j->dirs[d].path, j->dirs[d].rows, j->dirs[d].n);
        if (rc != KP_OK && first == KP_OK) first = rc;
    }
    return first;
}

static void ckpt_done(void *arg, int status) {
    ckpt_job_t *j = arg;
    bk_repl_parts_t *p = j->p;
    assert(p->jobs_inflight > 0 && p->ckpt_inflight);
    p->jobs_inflight--;
    p->ckpt_inflight = false;
    if (status == KP_OK) {
        p->st.checkpoints_written++;
    } else if (status != BK_NET_ERR_CANCELLED) {
        p->st.checkpoints_failed++;
        st_logf(ST_LOG_ERROR, "checkpoint of the log dirs failed: %s", st_status_str(status));
    }
    ckpt_free(j);
}

/* Copies one row (name included) into the job. */
static void ckpt_row(ckpt_job_t *j, size_t *nrows, size_t *name_at, const char *topic, int32_t partition,
                     const st_log_offsets_t *off) {
    size_t len = strlen(topic) + 1;
    memcpy(j->names + *name_at, topic, len);
    st_logdir_entry_t *r = &j->rows[(*nrows)++];
    r->topic = j->names + *name_at;
    r->partition = partition;
    r->offsets = *off;
    *name_at += len;
}

/* The rows of every dir, as checkpoint_dirs builds them, with names copied:
 * O(partitions x dirs) on the loop, no I/O. */
static ckpt_job_t *ckpt_build(bk_repl_parts_t *p, const st_logdir_entry_t *extra, int extra_dir) {
    ckpt_job_t *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    size_t name_bytes = extra ? strlen(extra->topic) + 1 : 0;
    for (size_t i = 0; i < p->cap; i++)
        if (p->slots[i].used && p->slots[i].log) name_bytes += strlen(p->slots[i].topic) + 1;
    j->p = p;
    j->ndirs = p->ndirs;
    j->dirs = calloc(p->ndirs, sizeof *j->dirs);
    j->rows = calloc(p->count + 1, sizeof *j->rows);
    j->names = malloc(name_bytes + 1);
    if (!j->dirs || !j->rows || !j->names) {
        ckpt_free(j);
        return NULL;
    }
    size_t nrows = 0, name_at = 0;
    for (size_t d = 0; d < p->ndirs; d++) {
        ckpt_dir_t *cd = &j->dirs[d];
        snprintf(cd->path, sizeof cd->path, "%s", p->dirs[d].path);
        cd->rows = j->rows + nrows;
        size_t first = nrows;
        for (size_t i = 0; i < p->cap; i++) {
            bk_repl_part_t *s = &p->slots[i];
            if (!s->used || !s->log || (size_t)s->dir != d) continue;
            st_log_offsets_t off = { st_log_start_offset(s->log), st_log_recovery_point(s->log),
                                     st_log_high_watermark(s->log), st_log_end_offset(s->log),
                                     st_log_cleaner_offset(s->log) };
            ckpt_row(j, &nrows, &name_at, s->topic, s->partition, &off);
        }
        if (extra && extra_dir == (int)d) ckpt_row(j, &nrows, &name_at, extra->topic, extra->partition, &extra->offsets);
        cd->n = nrows - first;
    }
    assert(nrows <= p->count + 1 && name_at <= name_bytes);
    return j;
}

void bk_repl_parts_checkpoint_async(bk_repl_parts_t *p, const st_logdir_entry_t *extra, int extra_dir) {
    if (!p->pool) {
        int rc = bk_repl_parts_checkpoint(p, extra, extra_dir);
        if (rc != KP_OK) st_logf(ST_LOG_ERROR, "checkpoint of the log dirs failed: %s", st_status_str(rc));
        return;
    }
    if (p->ckpt_inflight) {
        p->st.checkpoints_skipped++;   /* a slow disk: the next period writes newer offsets */
        return;
    }
    ckpt_job_t *j = ckpt_build(p, extra, extra_dir);
    if (!j) {
        p->st.checkpoints_skipped++;
        return;
    }
    if (bk_net_worker_submit(p->pool, ckpt_job, ckpt_done, j) != BK_NET_OK) {
        p->st.checkpoints_skipped++;
        ckpt_free(j);
        return;
    }
    p->ckpt_inflight = true;
    p->jobs_inflight++;
}

void bk_repl_parts_io_stats(const bk_repl_parts_t *p, bk_repl_parts_io_stats_t *out) { *out = p->st; }

size_t bk_repl_parts_io_pending(const bk_repl_parts_t *p) {
    return (p->opener ? bk_repl_popen_pending(p->opener) : 0) + p->jobs_inflight + p->drops_waiting_n;
}

/* The final close of every log (flush, producer snapshot, index trim: a few
 * fsyncs each) on several threads: one after another, 1,000 partitions took
 * 15-19 s to stop, long enough for process supervisors (and our test
 * helpers) to kill the node, which turns a clean stop into a crash restart.
 * Each log is closed by exactly one thread; they share nothing but the
 * next-index counter. */
#define CLOSE_THREADS_MAX 8
#define CLOSE_PER_THREAD_MIN 16

typedef struct {
    bk_repl_part_t **parts;     /* slots holding a log */
    st_log_offsets_t *final;    /* per entry of parts */
    int *rc;                    /* per entry of parts */
    size_t n;
    atomic_size_t next;
} close_run_t;

static void *close_worker(void *arg) {
    close_run_t *cr = arg;
    for (size_t i; (i = atomic_fetch_add(&cr->next, 1)) < cr->n;) {
        bk_repl_part_t *s = cr->parts[i];
        cr->rc[i] = st_log_close(s->log, &cr->final[i]);
        s->log = NULL;
    }
    return NULL;
}

static void close_logs(close_run_t *cr) {
    size_t want = cr->n / CLOSE_PER_THREAD_MIN;
    if (want > CLOSE_THREADS_MAX) want = CLOSE_THREADS_MAX;
    pthread_t th[CLOSE_THREADS_MAX];
    size_t started = 0;
    for (; started < want; started++)
        if (pthread_create(&th[started], NULL, close_worker, cr) != 0) break;   /* fewer helpers: still correct */
    close_worker(cr);   /* this thread takes its share (all of it when none started) */
    for (size_t i = 0; i < started; i++) {
        int rc = pthread_join(th[i], NULL);
        assert(rc == 0);
        (void)rc;
    }
}

int bk_repl_parts_close_all(bk_repl_parts_t *p, const st_logdir_entry_t *extra, int extra_dir) {
    if (!p) return KP_OK;
    /* the pool is drained or gone: every job's completion ran */
    assert(p->jobs_inflight == 0);
    bk_repl_popen_free(p->opener);
    p->opener = NULL;
    /* removals the full pool refused: the node is stopping, the loop serves
     * nothing, so they run here (else they would wait for the next start) */
    st_guard_allow_begin();
    while (p->drops_waiting) {
        drop_batch_t *b = p->drops_waiting;
        p->drops_waiting = b->next;
        (void)drop_job(b);
        drop_batch_free(b);
    }
    st_guard_allow_end();
    int first_rc = KP_OK;
    /* final[] is indexed like the used slots (checkpoint_dirs walks them in
     * the same order); a slot without a log gets log_end_offset -1 */
    st_log_offsets_t *final = calloc(p->count + 1, sizeof *final);
    close_run_t cr = { .parts = calloc(p->count + 1, sizeof *cr.parts), .final = calloc(p->count + 1, sizeof *cr.final),
                       .rc = calloc(p->count + 1, sizeof *cr.rc) };
    size_t *at = calloc(p->count + 1, sizeof *at);   /* final index of each cr entry */
    bool par = cr.parts && cr.final && cr.rc && at;
    atomic_init(&cr.next, 0);
    size_t k = 0;
    for (size_t i = 0; i < p->cap; i++) {
        bk_repl_part_t *s = &p->slots[i];
        if (!s->used) continue;
        size_t idx = k++;
        if (!s->log) { if (final) final[idx].log_end_offset = -1; continue; }
        if (par) {
            at[cr.n] = idx;
            cr.parts[cr.n++] = s;
            continue;
        }
        /* out of memory for the parallel run: one by one, as before */
        st_log_offsets_t off;
        int rc = st_log_close(s->log, &off);
        s->log = NULL;
        if (final) final[idx] = off;
        if (rc != KP_OK) {
            st_logf(ST_LOG_ERROR, "partition %s-%d: close failed: %s", s->topic, s->partition,
                    st_status_str(rc));
            if (first_rc == KP_OK) first_rc = rc;
        }
    }
    if (par && cr.n) {
        close_logs(&cr);
        for (size_t j = 0; j < cr.n; j++) {
            if (final) final[at[j]] = cr.final[j];
            if (cr.rc[j] != KP_OK) {
                st_logf(ST_LOG_ERROR, "partition %s-%d: close failed: %s", cr.parts[j]->topic,
                        cr.parts[j]->partition, st_status_str(cr.rc[j]));
                if (first_rc == KP_OK) first_rc = cr.rc[j];
            }
        }
    }
    free(cr.parts);
    free(cr.final);
    free(cr.rc);
    free(at);
    if (final) {
        int rc = checkpoint_dirs(p, final, extra, extra_dir);
        if (rc != KP_OK && first_rc == KP_OK) first_rc = rc;
    } else if (first_rc == KP_OK) {
        first_rc = KP_ERR_NOMEM;
    }
    free(final);
    kp_arena_free(&p->scratch);
    free(p->slots);
    free(p);
    return first_rc;
}
