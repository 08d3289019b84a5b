/* broker/meta/meta_log.c — the local (single-node) metadata committer. */
#include "broker/meta/meta_log.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_arena.h"
#include "protocol/kp_batch.h"
#include "storage/st_guard.h"
#include "storage/st_log.h"

/* A proposal appended to the log, waiting for an fsync that covers it. */
typedef struct pending {
    struct pending *next;
    bk_meta_recs_t recs;           /* a copy: the proposer frees its list on return */
    int64_t base;             /* offset of recs[0] */
    int64_t end;              /* offset after the batch: durable once the
                                 recovery point reaches it */
    bk_meta_done_fn done;
    void *arg;
} pending_t;

struct bk_meta_log {
    st_log_t *log;
    bk_meta_image_t *img;          /* borrowed: the node's image (committed records only) */
    bk_meta_submit_fn submit; /* NULL: fsync inline */
    void *pool;
    pending_t *head, *tail;   /* FIFO, proposal order */
    size_t npending;
    bool sync_busy;           /* an fsync job is out (one at a time) */
    bool failed;              /* an fsync failed: the log is offline */
    bk_meta_image_t *view;         /* decision view while proposals are pending */
};

/* One fsync job: the log's duplicated descriptors, nothing else. */
typedef struct {
    bk_meta_log_t *m;
    st_log_sync_t *sync;
} sync_job_t;

typedef struct {
    bk_meta_log_t *m;
    int64_t *bad_offset;
} replay_ctx_t;

static int replay_batch(void *ctx, const kp_batch_t *b) {
    const replay_ctx_t *rx = ctx;
    if (kp_batch_is_control(b)) return KP_OK;
    if (kp_batch_codec(b) != KP_CODEC_NONE) return KP_ERR_CORRUPT;
    kp_record_iter_t it;
    kp_record_iter_init(&it, b, b->data + KP_BATCH_HEADER_BYTES, b->size - KP_BATCH_HEADER_BYTES);
    kp_record_t rec;
    int rc;
    while ((rc = kp_record_iter_next(&it, &rec)) == 1) {
        *rx->bad_offset = rec.offset;
        if (rec.offset <= rx->m->img->last_offset) continue;   /* already applied */
        rc = bk_meta_image_apply_bytes(rx->m->img, rec.value.p, rec.value.len, rec.offset);
        if (rc != KP_OK) return rc;
    }
    return rc < 0 ? rc : KP_OK;
}

/* Applies every record of the log from its start (batches up to
 * BK_META_READ_MAX_BYTES). */
static int replay(bk_meta_log_t *m, int64_t *bad_offset) {
    replay_ctx_t rc = { m, bad_offset };
    return st_log_scan_batches(m->log, (size_t)1 << 20, BK_META_READ_MAX_BYTES, replay_batch, &rc);
}

bk_meta_log_t *bk_meta_log_open(const st_logdir_t *ld, bk_meta_image_t *img, int64_t now_ms,
                                char *err, size_t err_len) {
    bk_meta_log_t *m = calloc(1, sizeof *m);
    if (!m) { snprintf(err, err_len, "out of memory"); return NULL; }
    m->img = img;
    st_log_config_t lc;
    st_log_config_default(&lc);
    lc.retention_ms = -1;            /* no snapshots yet: the log is the state */
    st_log_open_opts_t opts;
    st_logdir_opts_for(ld, BK_META_TOPIC, 0, now_ms, &opts);
    opts.create = true;
    int rc = st_log_open(ld->path, BK_META_TOPIC, 0, &lc, &opts, &m->log);
    if (rc != KP_OK) {
        snprintf(err, err_len, "%s/%s-0: cannot open the metadata log: %s", ld->path,
                 BK_META_TOPIC, st_status_str(rc));
        free(m);
        return NULL;
    }
    int64_t bad = -1;
    rc = replay(m, &bad);
    if (rc != KP_OK) {
        snprintf(err, err_len, "%s/%s-0: metadata record at offset %lld cannot be applied: %s (%d)",
                 ld->path, BK_META_TOPIC, (long long)bad, st_status_str(rc), rc);
        if (st_log_close(m->log, NULL) != KP_OK) { /* already failing */ }
        free(m);
        return NULL;
    }
    return m;
}

int64_t bk_meta_log_next_offset(const bk_meta_log_t *m) { return st_log_end_offset(m->log); }

/* One v2 batch holding every record; the copy out of the arena is needed
 * because st_log_append patches offsets in place. */
static int build_batch(const bk_meta_recs_t *recs, int64_t now_ms, uint8_t **out, size_t *out_len) {
    kp_batch_opts_t o = kp_batch_opts_default();
    o.max_bytes = BK_META_BATCH_MAX_BYTES;
    kp_batch_builder_t bb;
    kp_batch_builder_init(&bb, &o);
    int rc = KP_OK;
    for (size_t i = 0; i < recs->n && rc == KP_OK; i++) {
        kp_record_in_t ri = { .timestamp = now_ms, .key = kp_slice_null(),
                              .value = { recs->v[i].data, recs->v[i].len } };
        rc = kp_batch_builder_add(&bb, &ri);
    }
    kp_arena_t a;
    kp_arena_init(&a, (size_t)BK_META_BATCH_MAX_BYTES * 2);
    const uint8_t *b = NULL;
    size_t len = 0;
    if (rc == KP_OK) rc = kp_batch_builder_finish(&bb, &a, &b, &len);
    if (rc == KP_OK) {
        *out = malloc(len);
        if (!*out) rc = KP_ERR_NOMEM;
        else { memcpy(*out, b, len); *out_len = len; }
    }
    kp_batch_builder_free(&bb);
    kp_arena_free(&a);
    return rc;
}

/* ---- decision view --------------------------------------------------------- */

static void drop_view(bk_meta_log_t *m) {
    if (!m->view) return;
    bk_meta_image_free(m->view);
    free(m->view);
    m->view = NULL;
}

/* A record the committed image refuses is refused identically at commit
 * (asserted there); the view only has to match. */
static void view_apply(bk_meta_log_t *m, const pending_t *pd) {
    if (bk_meta_recs_apply(&pd->recs, m->view, pd->base) != KP_OK) { /* see above */ }
    (void)bk_meta_image_take_changes(m->view, NULL, 0);   /* the view drives nothing */
}

/* Copy of the committed image (snapshot + load: O(image), once per burst
 * of concurrent decisions) plus every pending proposal. */
static bool view_build(bk_meta_log_t *m) {
    m->view = bk_meta_image_copy(m->img);
    if (!m->view) return false;
    for (const pending_t *pd = m->head; pd; pd = pd->next) view_apply(m, pd);
    return true;
}

const bk_meta_image_t *bk_meta_log_decision_image(bk_meta_log_t *m) {
    if (m->npending == 0) {
        drop_view(m);
        return m->img;
    }
    if (!m->view && !view_build(m)) {
        drop_view(m);
        return m->img;   /* out of memory: a stale answer beats none; apply asserts catch a conflict */
    }
    return m->view;
}

size_t bk_meta_log_pending(const bk_meta_log_t *m) { return m->npending; }

/* ---- commit ----------------------------------------------------------------- */

/* Applies a durable proposal and tells its proposer. */
static void commit_one(bk_meta_log_t *m, pending_t *pd) {
    int rc = bk_meta_recs_apply(&pd->recs, m->img, pd->base);
    /* The records were validated by the controller against the decision
     * image; a failure here means image and controller disagree: a bug. */
    assert(rc == KP_OK);
    (void)rc;
    pd->done(pd->arg, KP_OK, pd->base);
}

static pending_t *pop(bk_meta_log_t *m) {
    pending_t *pd = m->head;
    m->head = pd->next;
    if (!m->head) m->tail = NULL;
    m->npending--;
    if (m->npending == 0) drop_view(m);
    return pd;
}

static void pending_free(pending_t *pd) {
    bk_meta_recs_free(&pd->recs);
    free(pd);
}

/* Fails every pending proposal (the log went offline, or the node stops). */
static void fail_all(bk_meta_log_t *m, int status) {
    while (m->head) {
        pending_t *pd = pop(m);
        pd->done(pd->arg, status, -1);
        pending_free(pd);
    }
}

static void sync_start(bk_meta_log_t *m);

/* Commits, in order, every pending proposal the recovery point covers; the
 * callbacks may propose again (re-entering sync_start). */
static void commit_durable(bk_meta_log_t *m) {
    while (m->head && m->head->end <= st_log_recovery_point(m->log)) {
        pending_t *pd = pop(m);
        commit_one(m, pd);
        pending_free(pd);
    }
    if (m->head && !m->sync_busy && !m->failed) sync_start(m);
}

/* After a job: ran=false when the pool cancelled it (the node is being
 * freed: what is pending fails). */
static void sync_finish(bk_meta_log_t *m, st_log_sync_t *j, bool ran) {
    m->sync_busy = false;
    int rc = st_log_sync_end(m->log, j, ran);
    if (!ran) {
        fail_all(m, BK_META_CLOSED);
        return;
    }
    if (rc != KP_OK) {
        m->failed = true;
        st_logf(ST_LOG_ERROR, "metadata log: fsync failed (%s); %zu pending commit(s) fail and metadata cannot "
                "change until restart", st_status_str(rc), m->npending);
        fail_all(m, rc);
        return;
    }
    commit_durable(m);
}

/* Worker: the fsync, on the job's own descriptors. */
static int sync_job(void *arg) {
    sync_job_t *sj = arg;
    return st_log_sync_run(sj->sync);
}

static void sync_done(void *arg, int status) {
    sync_job_t *sj = arg;
    bk_meta_log_t *m = sj->m;
    st_log_sync_t *j = sj->sync;
    free(sj);
    /* the job's own result is kept in j; status only says whether it ran */
    sync_finish(m, j, status == KP_OK || status == ST_ERR_IO);
}

/* Starts the fsync covering every append so far. */
static void sync_start(bk_meta_log_t *m) {
    assert(!m->sync_busy && m->head);
    st_log_sync_t *j = NULL;
    int rc = st_log_sync_begin(m->log, 0, &j);
    if (rc != KP_OK && rc != ST_ERR_OFFLINE) {
        /* no descriptor or memory for the job: the records are appended and
         * must not be left unapplied, so the fsync runs here instead */
        st_guard_allow_begin();
        rc = st_log_flush(m->log);
        st_guard_allow_end();
        if (rc == KP_OK) {
            commit_durable(m);
            return;
        }
    }
    if (rc != KP_OK) {
        m->failed = true;
        st_logf(ST_LOG_ERROR, "metadata log: fsync failed (%s); %zu pending commit(s) fail and metadata cannot "
                "change until restart", st_status_str(rc), m->npending);
        fail_all(m, rc);
        return;
    }
    if (!j) {   /* already durable (an earlier job covered it) */
        commit_durable(m);
        return;
    }
    m->sync_busy = true;
    sync_job_t *sj = malloc(sizeof *sj);
    if (sj) {
        *sj = (sync_job_t){ m, j };
        if (m->submit(m->pool, sync_job, sync_done, sj) == 0) return;
        free(sj);
    }
    /* the pool is full (1024 jobs) or stopping: a metadata commit must not
     * fail for that, so this fsync runs here (documented exception) */
    st_guard_allow_begin();
    (void)st_log_sync_run(j);
    st_guard_allow_end();
    sync_finish(m, j, true);
}

void bk_meta_log_set_pool(bk_meta_log_t *m, bk_meta_submit_fn submit, void *pool) {
    assert(submit && pool && m->npending == 0);
    m->submit = submit;
    m->pool = pool;
}

/* Deep copy of a record list (the proposer frees its own). */
static int recs_copy(bk_meta_recs_t *dst, const bk_meta_recs_t *src) {
    bk_meta_recs_init(dst);
    dst->v = calloc(src->n ? src->n : 1, sizeof *dst->v);
    if (!dst->v) return KP_ERR_NOMEM;
    dst->cap = src->n;
    for (size_t i = 0; i < src->n; i++) {
        dst->v[i].data = malloc(src->v[i].len ? src->v[i].len : 1);
        if (!dst->v[i].data) return KP_ERR_NOMEM;   /* dst->n entries are freed by bk_meta_recs_free */
        memcpy(dst->v[i].data, src->v[i].data, src->v[i].len);
        dst->v[i].len = src->v[i].len;
        dst->n = i + 1;
    }
    return KP_OK;
}

void bk_meta_log_propose(bk_meta_log_t *m, const bk_meta_recs_t *recs, int64_t now_ms,
                         bk_meta_done_fn done, void *arg) {
    if (recs->err != KP_OK) { done(arg, recs->err, -1); return; }
    if (m->failed) { done(arg, ST_ERR_OFFLINE, -1); return; }
    if (recs->n == 0 && m->npending == 0) { done(arg, KP_OK, bk_meta_log_next_offset(m)); return; }
    pending_t *pd = calloc(1, sizeof *pd);
    int rc = pd ? recs_copy(&pd->recs, recs) : KP_ERR_NOMEM;
    uint8_t *buf = NULL;
    size_t len = 0;
    st_append_info_t info = { .base_offset = bk_meta_log_next_offset(m) };
    if (rc == KP_OK && recs->n > 0) rc = build_batch(recs, now_ms, &buf, &len);
    if (rc == KP_OK && recs->n > 0) rc = st_log_append(m->log, buf, len, 0, now_ms, &info);
    free(buf);
    if (rc != KP_OK) {
        st_logf(ST_LOG_ERROR, "metadata log: commit of %zu records failed: %s", recs->n, st_status_str(rc));
        if (pd) pending_free(pd);
        done(arg, rc, -1);
        return;
    }
    /* an empty list after pending ones completes in order with them */
    pd->base = info.base_offset;
    pd->end = bk_meta_log_next_offset(m);
    pd->done = done;
    pd->arg = arg;
    if (m->tail) m->tail->next = pd;
    else m->head = pd;
    m->tail = pd;
    m->npending++;
    if (m->view) view_apply(m, pd);
    if (!m->submit) {
        /* no pool yet (start-up): fsync before applying, here */
        rc = st_log_flush(m->log);
        if (rc != KP_OK) {
            m->failed = true;
            st_logf(ST_LOG_ERROR, "metadata log: fsync failed: %s", st_status_str(rc));
            fail_all(m, rc);
            return;
        }
        commit_durable(m);
        return;
    }
    if (!m->sync_busy) sync_start(m);
}

void bk_meta_log_offsets(const bk_meta_log_t *m, st_log_offsets_t *out) {
    int64_t committed = m->head ? m->head->base : st_log_end_offset(m->log);
    out->log_start_offset = st_log_start_offset(m->log);
    out->recovery_point = st_log_recovery_point(m->log);
    out->high_watermark = committed;
    out->log_end_offset = st_log_end_offset(m->log);
}

int bk_meta_log_close(bk_meta_log_t *m, st_log_offsets_t *final) {
    if (!m) return KP_OK;
    assert(!m->sync_busy);   /* the pool was drained or freed first */
    fail_all(m, BK_META_CLOSED);
    drop_view(m);
    st_log_set_high_watermark(m->log, st_log_end_offset(m->log));
    int rc = st_log_close(m->log, final);
    free(m);
    return rc;
}
