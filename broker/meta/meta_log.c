/* broker/meta/meta_log.c — the local (single-node) metadata committer. */
#include "broker/meta/meta_log.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_arena.h"
#include "protocol/kp_batch.h"
#include "storage/st_log.h"

struct bk_meta_log {
    st_log_t *log;
    bk_image_t *img;      /* borrowed: the node's image */
};

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
        rc = bk_image_apply_bytes(rx->m->img, rec.value.p, rec.value.len, rec.offset);
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

bk_meta_log_t *bk_meta_log_open(const st_logdir_t *ld, bk_image_t *img, int64_t now_ms,
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
static int build_batch(const bk_recs_t *recs, int64_t now_ms, uint8_t **out, size_t *out_len) {
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

void bk_meta_log_propose(bk_meta_log_t *m, const bk_recs_t *recs, int64_t now_ms,
                         bk_meta_done_fn done, void *arg) {
    if (recs->err != KP_OK) { done(arg, recs->err, -1); return; }
    if (recs->n == 0) { done(arg, KP_OK, bk_meta_log_next_offset(m)); return; }
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = build_batch(recs, now_ms, &buf, &len);
    st_append_info_t info;
    if (rc == KP_OK) rc = st_log_append(m->log, buf, len, 0, now_ms, &info);
    free(buf);
    /* fsync before applying: an applied record is one a restart replays */
    if (rc == KP_OK) rc = st_log_flush(m->log);
    if (rc != KP_OK) {
        st_logf(ST_LOG_ERROR, "metadata log: commit of %zu records failed: %s", recs->n,
                st_status_str(rc));
        done(arg, rc, -1);
        return;
    }
    rc = bk_recs_apply(recs, m->img, info.base_offset);
    /* The records were validated by the controller against this image; a
     * failure here means image and controller disagree: a bug. */
    assert(rc == KP_OK);
    done(arg, KP_OK, info.base_offset);
}

void bk_meta_log_offsets(const bk_meta_log_t *m, st_log_offsets_t *out) {
    out->log_start_offset = st_log_start_offset(m->log);
    out->recovery_point = st_log_recovery_point(m->log);
    out->high_watermark = st_log_end_offset(m->log);
    out->log_end_offset = st_log_end_offset(m->log);
}

int bk_meta_log_close(bk_meta_log_t *m, st_log_offsets_t *final) {
    if (!m) return KP_OK;
    st_log_set_high_watermark(m->log, st_log_end_offset(m->log));
    int rc = st_log_close(m->log, final);
    free(m);
    return rc;
}
