/* broker/h_fetch.c — Fetch, its purgatory and (absent) sessions; see fetch.h.
 *
 * Data path: st_log_read gives file ranges (fd, pos, len) of whole batches;
 * they go into the response as external records (kp_records_t.ext points at
 * the st_read_result_t in the request arena) and dispatch.c splices them in
 * with sendfile, so bytes on disk are the bytes on the wire. Versions below
 * 10 need the batches inspected (zstd is refused with
 * UNSUPPORTED_COMPRESSION_TYPE) and below 4 down-converted to magic 0/1:
 * those read a copy (st_log_read_copy) into the arena — old clients only.
 *
 * Limits (KIP-74): partition_max_bytes per partition, max_bytes (v3+) for
 * the response, and the first partition with data returns at least one
 * whole batch even when it is larger. The upper bound is the HW
 * (read_uncommitted) or the LSO (read_committed; = HW while no transaction
 * is open). */
#include "broker/fetch.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/dispatch.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_compress.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_msgset.h"
#include "storage/st_log.h"

#define FETCH_COPY_CAP_BYTES ((size_t)64 << 20)   /* old-version copies, per partition */

typedef struct fwait {
    bk_req_t *req;
    struct event *timer;
    struct fwait *prev, *next;
    bk_fetch_state_t *f;
} fwait_t;

struct bk_fetch_state {
    bk_node_t *n;
    fwait_t *head;
    size_t count;
};

typedef kp_fetch_response_partition_data_t fpart_t;

bk_fetch_state_t *bk_fetch_new(bk_node_t *n) {
    bk_fetch_state_t *f = calloc(1, sizeof *f);
    if (f) f->n = n;
    return f;
}

/* ---- resolving a requested partition ---------------------------------------- */

typedef struct {
    const bk_topic_t *t;
    bk_part_t *p;
    int16_t err;
} target_t;

static const bk_topic_t *topic_of(bk_req_t *req, const kp_fetch_request_fetch_topic_t *ft) {
    if (req->hdr.api_version >= 13)
        return bk_image_topic_by_id(&req->node->img, (const bk_uuid_t *)ft->topic_id.b);
    char name[BK_TOPIC_NAME_MAX + 1];
    if (ft->topic.len > BK_TOPIC_NAME_MAX) return NULL;
    memcpy(name, ft->topic.p, ft->topic.len);
    name[ft->topic.len] = '\0';
    return bk_image_topic_by_name(&req->node->img, name);
}

static target_t resolve(bk_req_t *req, const bk_topic_t *t, const kp_fetch_request_fetch_partition_t *fp) {
    target_t x = { t, NULL, 0 };
    if (!t || fp->partition < 0 || fp->partition >= t->nparts) {
        x.err = req->hdr.api_version >= 13 && !t ? KP_ERROR_UNKNOWN_TOPIC_ID : KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
        return x;
    }
    x.p = bk_parts_get(req->node->parts, &t->id, fp->partition);
    if (!x.p || !x.p->leader) { x.err = KP_ERROR_NOT_LEADER_OR_FOLLOWER; return x; }
    if (!x.p->log) { x.err = KP_ERROR_KAFKA_STORAGE_ERROR; return x; }
    if (fp->current_leader_epoch >= 0 && fp->current_leader_epoch != x.p->leader_epoch) {
        x.err = fp->current_leader_epoch < x.p->leader_epoch ? KP_ERROR_FENCED_LEADER_EPOCH : KP_ERROR_UNKNOWN_LEADER_EPOCH;
        return x;
    }
    int64_t off = fp->fetch_offset;
    if (off < st_log_start_offset(x.p->log) || off > st_log_end_offset(x.p->log)) x.err = KP_ERROR_OFFSET_OUT_OF_RANGE;
    return x;
}

static int64_t upper_bound(const bk_req_t *req, const st_log_t *log) {
    const kp_fetch_request_t *q = req->body;
    return q->isolation_level == 1 ? st_log_last_stable_offset(log) : st_log_high_watermark(log);
}

static uint64_t part_max(const kp_fetch_request_fetch_partition_t *fp) {
    return fp->partition_max_bytes > 0 ? (uint64_t)fp->partition_max_bytes : 0;
}

/* Bytes a response would carry now, stopping at `enough`; true when some
 * partition has an error (which is answered at once, as Kafka does). */
static bool available(bk_req_t *req, uint64_t enough, uint64_t *bytes) {
    const kp_fetch_request_t *q = req->body;
    *bytes = 0;
    for (int32_t i = 0; i < q->topics.count; i++) {
        const kp_fetch_request_fetch_topic_t *ft = &q->topics.items[i];
        const bk_topic_t *t = topic_of(req, ft);
        for (int32_t k = 0; k < ft->partitions.count; k++) {
            const kp_fetch_request_fetch_partition_t *fp = &ft->partitions.items[k];
            target_t x = resolve(req, t, fp);
            if (x.err) return true;
            st_read_result_t rr;
            int64_t end = upper_bound(req, x.p->log);
            if (fp->fetch_offset >= end) continue;
            if (st_log_read(x.p->log, fp->fetch_offset, part_max(fp), end, ST_READ_MIN_ONE, &rr) != KP_OK) return true;
            *bytes += rr.total_bytes;
            if (*bytes >= enough) return false;
        }
    }
    return false;
}

/* ---- building the response ----------------------------------------------------- */

/* Old versions: copy, refuse zstd (< v10), down-convert (< v4). */
static int16_t copy_records(bk_req_t *req, st_log_t *log, int64_t off, uint64_t max, int64_t end, unsigned flags,
                            kp_records_t *out, uint64_t *sent) {
    int16_t ver = req->hdr.api_version;
    size_t cap = max < FETCH_COPY_CAP_BYTES ? (size_t)max : FETCH_COPY_CAP_BYTES;
    if (cap < 4096) cap = 4096;
    uint8_t *buf = bk_req_alloc(req, cap, 1);
    size_t len = 0;
    int64_t next = off;
    if (!buf) return KP_ERROR_UNKNOWN_SERVER_ERROR;
    if (st_log_read_copy(log, off, max, end, flags, buf, cap, &len, &next) != KP_OK) return KP_ERROR_KAFKA_STORAGE_ERROR;
    kp_rd_t r;
    kp_rd_init(&r, buf, len);
    uint8_t *conv = NULL;
    size_t conv_len = 0, conv_cap = 0;
    while (kp_rd_remaining(&r) > 0) {
        kp_batch_t b;
        if (kp_batch_read(&r, &b) != KP_OK) return KP_ERROR_CORRUPT_MESSAGE;
        if (kp_batch_codec(&b) == KP_CODEC_ZSTD) {
            if (b.data == buf) return KP_ERROR_UNSUPPORTED_COMPRESSION_TYPE;
            len = (size_t)(b.data - buf);   /* stop before it; the client comes back */
            break;
        }
        if (ver >= 4) continue;
        const uint8_t *recs = NULL, *ms = NULL;
        size_t rlen = 0, mlen = 0;
        if (kp_batch_records(&b, &req->arena, FETCH_COPY_CAP_BYTES, &recs, &rlen) != KP_OK ||
            kp_batch_to_msgset(&b, recs, rlen, ver >= 2 ? 1 : 0, &req->arena, &ms, &mlen) != KP_OK)
            return KP_ERROR_CORRUPT_MESSAGE;
        if (conv_len + mlen > conv_cap) {
            size_t ncap = (conv_len + mlen) * 2;
            uint8_t *nb = bk_req_alloc(req, ncap, 1);
            if (!nb) return KP_ERROR_UNKNOWN_SERVER_ERROR;
            if (conv_len) memcpy(nb, conv, conv_len);
            conv = nb;
            conv_cap = ncap;
        }
        if (mlen) memcpy(conv + conv_len, ms, mlen);
        conv_len += mlen;
    }
    if (ver < 4) {
        out->bytes.p = conv ? conv : buf;
        out->bytes.len = conv_len;
    } else {
        out->bytes.p = buf;
        out->bytes.len = len;
    }
    *sent = out->bytes.len;
    return 0;
}

static void fill_partition(bk_req_t *req, const bk_topic_t *t, const kp_fetch_request_fetch_partition_t *fp,
                           fpart_t *o, uint64_t *total, uint64_t max_total) {
    kp_fetch_response_partition_data_init(o);
    o->partition_index = fp->partition;
    o->records.bytes.p = (const uint8_t *)"";
    o->records.bytes.len = 0;
    o->aborted_transactions.count = 0;
    target_t x = resolve(req, t, fp);
    if (x.err) {
        o->error_code = x.err;
        o->high_watermark = -1;
        o->last_stable_offset = -1;
        o->log_start_offset = -1;
        if (x.p && x.p->log) {
            o->high_watermark = st_log_high_watermark(x.p->log);
            o->last_stable_offset = st_log_last_stable_offset(x.p->log);
            o->log_start_offset = st_log_start_offset(x.p->log);
        }
        return;
    }
    st_log_t *log = x.p->log;
    o->high_watermark = st_log_high_watermark(log);
    o->last_stable_offset = st_log_last_stable_offset(log);
    o->log_start_offset = st_log_start_offset(log);
    int64_t end = upper_bound(req, log);
    if (fp->fetch_offset >= end || *total >= max_total) return;
    uint64_t max = part_max(fp);
    if (max > max_total - *total) max = max_total - *total;
    unsigned flags = *total == 0 ? ST_READ_MIN_ONE : 0;   /* KIP-74 */
    uint64_t sent = 0;
    if (req->hdr.api_version < 10) {
        o->error_code = copy_records(req, log, fp->fetch_offset, max, end, flags, &o->records, &sent);
        *total += sent;
        return;
    }
    st_read_result_t *rr = bk_req_alloc(req, 1, sizeof *rr);
    if (!rr) { o->error_code = KP_ERROR_UNKNOWN_SERVER_ERROR; return; }
    if (st_log_read(log, fp->fetch_offset, max, end, flags, rr) != KP_OK) {
        o->error_code = KP_ERROR_KAFKA_STORAGE_ERROR;
        return;
    }
    if (rr->n == 0) return;
    o->records.ext = rr;
    o->records.ext_len = (size_t)rr->total_bytes;
    o->records.bytes = kp_slice_null();
    *total += rr->total_bytes;
}

static void respond_fetch(bk_req_t *req) {
    const kp_fetch_request_t *q = req->body;
    kp_fetch_response_t r;
    memset(&r, 0, sizeof r);
    kp_fetch_response_init(&r);
    r.session_id = 0;   /* no session: every answer is a full one */
    size_t nt = q->topics.count > 0 ? (size_t)q->topics.count : 0;
    kp_fetch_response_fetchable_topic_response_t *ts = bk_req_alloc(req, nt, sizeof *ts);
    if (!ts) { bk_req_close(req, "out of memory"); return; }
    uint64_t total = 0;
    uint64_t max_total = req->hdr.api_version >= 3 && q->max_bytes > 0 ? (uint64_t)q->max_bytes : UINT64_MAX;
    for (size_t i = 0; i < nt; i++) {
        const kp_fetch_request_fetch_topic_t *ft = &q->topics.items[i];
        kp_fetch_response_fetchable_topic_response_init(&ts[i]);
        ts[i].topic = ft->topic;
        ts[i].topic_id = ft->topic_id;
        const bk_topic_t *t = topic_of(req, ft);
        size_t np = ft->partitions.count > 0 ? (size_t)ft->partitions.count : 0;
        fpart_t *ps = bk_req_alloc(req, np, sizeof *ps);
        if (!ps) { bk_req_close(req, "out of memory"); return; }
        for (size_t k = 0; k < np; k++) fill_partition(req, t, &ft->partitions.items[k], &ps[k], &total, max_total);
        ts[i].partitions.items = ps;
        ts[i].partitions.count = (int32_t)np;
    }
    r.responses.items = ts;
    r.responses.count = (int32_t)nt;
    bk_req_respond(req, &r);
}

/* ---- purgatory -------------------------------------------------------------------- */

static void unlink_waiter(fwait_t *w) {
    bk_fetch_state_t *f = w->f;
    if (w->prev) w->prev->next = w->next;
    else f->head = w->next;
    if (w->next) w->next->prev = w->prev;
    f->count--;
    event_free(w->timer);
}

static void complete(fwait_t *w) {
    bk_req_t *req = w->req;
    unlink_waiter(w);
    free(w);
    respond_fetch(req);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    complete(arg);
}

static bool waits_on(const fwait_t *w, const bk_part_t *p) {
    const kp_fetch_request_t *q = w->req->body;
    for (int32_t i = 0; i < q->topics.count; i++) {
        const kp_fetch_request_fetch_topic_t *ft = &q->topics.items[i];
        if (w->req->hdr.api_version >= 13) {
            if (memcmp(ft->topic_id.b, p->topic_id.b, 16) != 0) continue;
        } else if (ft->topic.len != strlen(p->topic) || memcmp(ft->topic.p, p->topic, ft->topic.len) != 0) {
            continue;
        }
        for (int32_t k = 0; k < ft->partitions.count; k++)
            if (ft->partitions.items[k].partition == p->partition) return true;
    }
    return false;
}

void bk_fetch_notify(bk_fetch_state_t *f, const bk_part_t *p) {
    fwait_t *w = f->head;
    while (w) {
        fwait_t *next = w->next;
        if (waits_on(w, p)) {
            const kp_fetch_request_t *q = w->req->body;
            uint64_t bytes = 0;
            bool err = available(w->req, (uint64_t)q->min_bytes, &bytes);
            if (err || bytes >= (uint64_t)(q->min_bytes > 0 ? q->min_bytes : 1)) complete(w);
        }
        w = next;
    }
}

void bk_fetch_flush(bk_fetch_state_t *f) {
    while (f->head) complete(f->head);
}

void bk_fetch_free(bk_fetch_state_t *f) {
    if (!f) return;
    bk_fetch_flush(f);
    free(f);
}

void bk_h_fetch(bk_req_t *req) {
    const kp_fetch_request_t *q = req->body;
    bk_node_t *n = req->node;
    if (req->hdr.api_version >= 7 && q->session_id != 0) {
        /* KIP-227: we keep no sessions; the client starts over with a full fetch */
        kp_fetch_response_t r;
        memset(&r, 0, sizeof r);
        kp_fetch_response_init(&r);
        r.error_code = KP_ERROR_FETCH_SESSION_ID_NOT_FOUND;
        r.responses.count = 0;
        bk_req_respond(req, &r);
        return;
    }
    int32_t wait_ms = q->max_wait_ms;
    if (wait_ms > BK_FETCH_WAIT_MAX_MS) wait_ms = BK_FETCH_WAIT_MAX_MS;
    uint64_t min_bytes = q->min_bytes > 0 ? (uint64_t)q->min_bytes : 1;
    uint64_t bytes = 0;
    bk_fetch_state_t *f = n->fetch;
    if (wait_ms <= 0 || n->stopping || f->count >= BK_FETCH_WAITERS_MAX || available(req, min_bytes, &bytes) ||
        bytes >= min_bytes) {
        respond_fetch(req);
        return;
    }
    fwait_t *w = calloc(1, sizeof *w);
    if (!w) { respond_fetch(req); return; }
    w->req = req;
    w->f = f;
    w->timer = evtimer_new(n->base, on_timeout, w);
    struct timeval tv = { wait_ms / 1000, (wait_ms % 1000) * 1000 };
    if (!w->timer || evtimer_add(w->timer, &tv) != 0) {
        if (w->timer) event_free(w->timer);
        free(w);
        respond_fetch(req);
        return;
    }
    w->next = f->head;
    if (f->head) f->head->prev = w;
    f->head = w;
    f->count++;
}
