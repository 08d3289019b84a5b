/* broker/replication/parts.c — partition manager (see parts.h). */
#include "broker/replication/parts.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "broker/replication/parts_open.h"
#include "storage/st_status.h"

struct bk_parts {
    bk_part_t *slots;       /* open addressing, linear probing */
    size_t cap;             /* power of two */
    size_t count;
    st_logdir_t *dirs;
    size_t ndirs;
    size_t dir_parts[BK_PARTS_DIRS_MAX];   /* held partitions per dir (placement) */
    bk_popen_t *opener;                    /* NULL: logs open on the loop */
    bool defer;                            /* this apply opens on the pool */
    bk_parts_opened_fn on_opened;
    void *opened_ctx;
    bk_parts_trash_fn trash_fn;            /* of the latest apply: for deferred work */
    void *trash_ctx;
    bk_parts_cfg_fn cfg_fn;
};

static uint64_t tp_hash(const bk_uuid_t *id, int32_t partition) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < BK_UUID_BYTES; i++) h = (h ^ id->b[i]) * 1099511628211ull;
    h = (h ^ (uint32_t)partition) * 1099511628211ull;
    return h ^ (h >> 29);
}

bk_parts_t *bk_parts_new(st_logdir_t *dirs, size_t ndirs) {
    assert(ndirs >= 1);
    bk_parts_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->cap = 64;
    p->slots = calloc(p->cap, sizeof *p->slots);
    if (!p->slots) { free(p); return NULL; }
    p->dirs = dirs;
    p->ndirs = ndirs;
    return p;
}

static bk_part_t *find_slot(bk_part_t *slots, size_t cap, const bk_uuid_t *id, int32_t partition) {
    size_t i = (size_t)tp_hash(id, partition) & (cap - 1);
    for (size_t probes = 0; probes < cap; probes++, i = (i + 1) & (cap - 1)) {
        bk_part_t *s = &slots[i];
        if (!s->used) return s;
        if (s->partition == partition && memcmp(s->topic_id.b, id->b, BK_UUID_BYTES) == 0) return s;
    }
    return NULL;
}

bk_part_t *bk_parts_get(bk_parts_t *p, const bk_uuid_t *topic_id, int32_t partition) {
    bk_part_t *s = find_slot(p->slots, p->cap, topic_id, partition);
    return (s && s->used) ? s : NULL;
}

static int grow(bk_parts_t *p) {
    size_t ncap = p->cap * 2;
    bk_part_t *ns = calloc(ncap, sizeof *ns);
    if (!ns) return KP_ERR_NOMEM;
    for (size_t i = 0; i < p->cap; i++) {
        if (!p->slots[i].used) continue;
        bk_part_t *d = find_slot(ns, ncap, &p->slots[i].topic_id, p->slots[i].partition);
        assert(d && !d->used);
        *d = p->slots[i];
    }
    free(p->slots);
    p->slots = ns;
    p->cap = ncap;
    return KP_OK;
}

/* Removal with re-insertion of the rest of the probe run (no tombstones). */
static void remove_slot(bk_parts_t *p, bk_part_t *s) {
    size_t i = (size_t)(s - p->slots);
    if (s->dir >= 0 && (size_t)s->dir < BK_PARTS_DIRS_MAX && p->dir_parts[s->dir] > 0) p->dir_parts[s->dir]--;
    memset(s, 0, sizeof *s);
    p->count--;
    for (size_t j = (i + 1) & (p->cap - 1); p->slots[j].used; j = (j + 1) & (p->cap - 1)) {
        bk_part_t tmp = p->slots[j];
        memset(&p->slots[j], 0, sizeof tmp);
        bk_part_t *d = find_slot(p->slots, p->cap, &tmp.topic_id, tmp.partition);
        assert(d && !d->used);
        *d = tmp;
    }
}

/* Fewest held partitions wins. Counted here, not by listing the dirs
 * (st_logdirs_pick): a listing per new partition made bulk creation
 * quadratic in the number of partitions. */
static int pick_dir(bk_parts_t *p) {
    size_t n = p->ndirs < BK_PARTS_DIRS_MAX ? p->ndirs : BK_PARTS_DIRS_MAX;
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (p->dir_parts[i] < p->dir_parts[best]) best = i;
    return (int)best;
}

/* An existing partition directory wins over placement (restart). */
static int find_existing_dir(bk_parts_t *p, const char *topic, int32_t partition) {
    char path[ST_PATH_MAX + 300];
    for (size_t i = 0; i < p->ndirs; i++) {
        snprintf(path, sizeof path, "%s/%s-%d", p->dirs[i].path, topic, partition);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return (int)i;
    }
    return -1;
}

/* Queues the open on the worker pool; false: open it here. */
static bool open_later(bk_parts_t *p, bk_part_t *s, const st_log_config_t *lc, const st_log_open_opts_t *opts) {
    bk_popen_item_t it;
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
    if (bk_popen_add(p->opener, &it) == KP_OK) return true;
    s->opening = false;
    return false;
}

static void open_part(bk_parts_t *p, bk_part_t *s, bk_parts_cfg_fn cfg_fn, void *cfg_ctx,
                      int64_t now_ms) {
    int d = find_existing_dir(p, s->topic, s->partition);
    if (d < 0) d = pick_dir(p);
    s->dir = d;
    if ((size_t)d < BK_PARTS_DIRS_MAX) p->dir_parts[d]++;
    st_log_config_t lc;
    cfg_fn(cfg_ctx, s->topic, &lc);
    st_log_open_opts_t opts;
    st_logdir_opts_for(&p->dirs[d], s->topic, s->partition, now_ms, &opts);
    opts.create = true;
    if (p->defer && open_later(p, s, &lc, &opts)) return;
    int rc = st_log_open(p->dirs[d].path, s->topic, s->partition, &lc, &opts, &s->log);
    if (rc != KP_OK) {
        s->log = NULL;
        st_logf(ST_LOG_ERROR, "partition %s-%d in %s: cannot open (%s); it stays offline",
                s->topic, s->partition, p->dirs[d].path, st_status_str(rc));
    }
}

bool bk_parts_is_trash(const char *name) {
    size_t n = strlen(name), k = strlen("-delete");
    return n > k && strcmp(name + n - k, "-delete") == 0;
}

/* Deletion: close, rename out of the way (atomic: a restart never sees a
 * half-deleted partition under its real name), hand over the unlinking. */
static int delete_part(bk_part_t *s, bk_parts_trash_fn trash_fn, void *ctx, int64_t now_ms) {
    if (!trash_fn) return st_log_delete(s->log);
    char dir[ST_PATH_MAX], trash[ST_PATH_MAX + 48];
    snprintf(dir, sizeof dir, "%s", st_log_dir(s->log));
    int rc = st_log_close(s->log, NULL);
    snprintf(trash, sizeof trash, "%s.%lld-delete", dir, (long long)now_ms);
    if (rename(dir, trash) != 0) return ST_ERR_IO;
    trash_fn(ctx, trash);
    return rc;
}

/* A finished async open: install the log, or carry out a STOP that came
 * meanwhile. Slots are found again by key: others may have moved. */
static void install_opened(bk_parts_t *p, const bk_popen_item_t *it) {
    bk_part_t *s = bk_parts_get(p, &it->topic_id, it->partition);
    assert(s && s->opening);   /* an opening slot is never removed */
    s->opening = false;
    s->log = it->log;
    if (!s->log && it->rc == BK_ERR_CANCELLED)
        st_logf(ST_LOG_WARN, "partition %s-%d: not opened, the node is stopping", s->topic, s->partition);
    else if (!s->log)
        st_logf(ST_LOG_ERROR, "partition %s-%d in %s: cannot open (%s); it stays offline", s->topic, s->partition,
                it->parent, st_status_str(it->rc));
    if (s->stop_pending) {
        int rc = KP_OK;
        if (s->log) rc = s->delete_pending ? delete_part(s, p->trash_fn, p->trash_ctx, it->opts.now_ms)
                                           : st_log_close(s->log, NULL);
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
    /* the HW is the replication driver's: it attaches (bk_replica_attach_opened) */
}

static void opened(void *ctx, bk_popen_item_t *items, size_t n) {
    bk_parts_t *p = ctx;
    for (size_t i = 0; i < n; i++) install_opened(p, &items[i]);
    if (p->on_opened) p->on_opened(p->opened_ctx);
}

int bk_parts_set_pool(bk_parts_t *p, bk_worker_pool_t *pool, bk_parts_opened_fn fn, void *ctx) {
    assert(!p->opener);
    p->opener = bk_popen_new(pool, opened, p);
    if (!p->opener) return KP_ERR_NOMEM;
    p->on_opened = fn;
    p->opened_ctx = ctx;
    return KP_OK;
}

static size_t apply_one(bk_parts_t *p, const bk_image_t *img, const bk_change_t *c,
                        bk_parts_cfg_fn cfg_fn, void *cfg_ctx, bk_parts_trash_fn trash_fn, int64_t now_ms) {
    bk_part_t *s = bk_parts_get(p, &c->topic_id, c->partition);
    if (c->kind == BK_CHANGE_STOP) {
        if (!s) return 0;
        if (s->opening) {
            /* the open in flight finishes first (bk_parts_opened) */
            s->stop_pending = true;
            s->delete_pending = s->delete_pending || c->deleted;
            return 0;
        }
        int rc = KP_OK;
        if (s->log) {
            if (c->deleted) rc = delete_part(s, trash_fn, cfg_ctx, now_ms);
            else rc = st_log_close(s->log, NULL);
        }
        if (rc != KP_OK)
            st_logf(ST_LOG_WARN, "partition %s-%d: %s failed: %s", s->topic, s->partition,
                    c->deleted ? "delete" : "close", st_status_str(rc));
        remove_slot(p, s);
        return rc != KP_OK;
    }
    if (!s) {
        const bk_topic_t *t = bk_image_topic_by_id(img, &c->topic_id);
        if (!t || p->count >= BK_PARTS_MAX) return 1;
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
    s->leader = c->kind == BK_CHANGE_LEADER;
    s->leader_epoch = c->leader_epoch;
    /* the HW is the replication driver's (replica.h): never set here */
    return s->log == NULL && !s->opening;
}

size_t bk_parts_apply(bk_parts_t *p, const bk_image_t *img, const bk_change_t *ch, size_t n,
                      bk_parts_cfg_fn cfg_fn, void *cfg_ctx, bk_parts_trash_fn trash_fn, int64_t now_ms) {
    size_t failed = 0, fresh = 0;
    for (size_t i = 0; i < n && fresh <= BK_PARTS_SYNC_OPENS; i++)
        if (ch[i].kind != BK_CHANGE_STOP && !bk_parts_get(p, &ch[i].topic_id, ch[i].partition)) fresh++;
    /* while opens are queued, new ones queue behind them: a topic deleted
     * and re-created under its name must not be opened beside its old open */
    p->defer = p->opener && (fresh > BK_PARTS_SYNC_OPENS || bk_popen_pending(p->opener) > 0);
    p->trash_fn = trash_fn;
    p->trash_ctx = cfg_ctx;
    p->cfg_fn = cfg_fn;
    for (size_t i = 0; i < n; i++) failed += apply_one(p, img, &ch[i], cfg_fn, cfg_ctx, trash_fn, now_ms);
    /* after the loop: a refused job completes its opens right away, which
     * may remove slots (pending stops) */
    if (p->opener) bk_popen_kick(p->opener);
    return failed;
}

void bk_parts_each(bk_parts_t *p, void (*fn)(bk_part_t *part, void *ctx), void *ctx) {
    for (size_t i = 0; i < p->cap; i++)
        if (p->slots[i].used) fn(&p->slots[i], ctx);
}

size_t bk_parts_count(const bk_parts_t *p) { return p->count; }

/* Builds one dir's rows: offsets come from `final` when closing. */
static int checkpoint_dirs(bk_parts_t *p, const st_log_offsets_t *final,
                           const st_logdir_entry_t *extra, int extra_dir) {
    int first_rc = KP_OK;
    st_logdir_entry_t *rows = malloc((p->count + 1) * sizeof *rows);
    if (!rows) return KP_ERR_NOMEM;
    for (size_t d = 0; d < p->ndirs; d++) {
        size_t n = 0, k = 0;
        for (size_t i = 0; i < p->cap; i++) {
            bk_part_t *s = &p->slots[i];
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

int bk_parts_checkpoint(bk_parts_t *p, const st_logdir_entry_t *extra, int extra_dir) {
    return checkpoint_dirs(p, NULL, extra, extra_dir);
}

int bk_parts_close_all(bk_parts_t *p, const st_logdir_entry_t *extra, int extra_dir) {
    if (!p) return KP_OK;
    bk_popen_free(p->opener);   /* the pool is gone: no batch runs */
    p->opener = NULL;
    int first_rc = KP_OK;
    st_log_offsets_t *final = calloc(p->count + 1, sizeof *final);
    size_t k = 0;
    for (size_t i = 0; i < p->cap; i++) {
        bk_part_t *s = &p->slots[i];
        if (!s->used) continue;
        size_t idx = k++;
        if (!s->log) { if (final) final[idx].log_end_offset = -1; continue; }
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
    if (final) {
        int rc = checkpoint_dirs(p, final, extra, extra_dir);
        if (rc != KP_OK && first_rc == KP_OK) first_rc = rc;
    } else if (first_rc == KP_OK) {
        first_rc = KP_ERR_NOMEM;
    }
    free(final);
    free(p->slots);
    free(p);
    return first_rc;
}
