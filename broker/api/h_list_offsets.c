/* broker/api/h_list_offsets.c — ListOffsets: earliest (-2), latest (-1: the HW,
 * or the LSO for read_committed), max timestamp (-3, v7+), by timestamp
 * (first offset whose timestamp >= t; none: offset -1). v0 answers in the
 * old_style_offsets array form. current_leader_epoch (v4+) is checked. */
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/meta/acl.h"
#include "broker/replication/parts.h"
#include "protocol/kp_errors.h"
#include "storage/st_log.h"

typedef kp_list_offsets_response_list_offsets_partition_response_t lpart_t;

static void one(bk_api_req_t *req, kp_str_t topic, const kp_list_offsets_request_list_offsets_partition_t *rp,
                lpart_t *o) {
    const kp_list_offsets_request_t *q = req->body;
    kp_list_offsets_response_list_offsets_partition_response_init(o);
    o->partition_index = rp->partition_index;
    o->timestamp = -1;
    o->offset = -1;
    o->leader_epoch = -1;
    o->old_style_offsets.count = 0;
    bk_repl_part_t *p = bk_api_req_leader_part(req, topic, rp->partition_index, &o->error_code);
    if (!p) return;
    if (rp->current_leader_epoch >= 0 && rp->current_leader_epoch != p->leader_epoch) {
        o->error_code = rp->current_leader_epoch < p->leader_epoch ? KP_ERROR_FENCED_LEADER_EPOCH : KP_ERROR_UNKNOWN_LEADER_EPOCH;
        return;
    }
    st_log_t *log = p->log;
    int64_t ts = rp->timestamp, off = -1, found_ts = -1;
    if (ts == -2) {
        off = st_log_start_offset(log);
    } else if (ts == -1) {
        off = q->isolation_level == 1 ? st_log_last_stable_offset(log) : st_log_high_watermark(log);
    } else if (ts == -3) {
        if (st_log_max_timestamp(log, &found_ts, &off) != KP_OK) { off = -1; found_ts = -1; }
    } else if (ts >= 0) {
        if (st_log_offset_for_time(log, ts, &off, &found_ts) != KP_OK) { off = -1; found_ts = -1; }
        if (off >= st_log_high_watermark(log)) { off = -1; found_ts = -1; }
    } else {
        o->error_code = KP_ERROR_INVALID_REQUEST;   /* unknown special timestamp */
        return;
    }
    /* fields a version lacks must keep their defaults (codec rule) */
    if (req->hdr.api_version >= 1) {
        o->offset = off;
        o->timestamp = found_ts;
    }
    if (off >= 0 && req->hdr.api_version >= 4) o->leader_epoch = p->leader_epoch;
    if (req->hdr.api_version == 0) {
        int64_t *v = bk_api_req_alloc(req, 1, sizeof *v);
        if (!v) { o->error_code = KP_ERROR_UNKNOWN_SERVER_ERROR; return; }
        v[0] = off;
        o->old_style_offsets.items = v;
        o->old_style_offsets.count = (off >= 0 && rp->max_num_offsets > 0) ? 1 : 0;
    }
}

void bk_api_h_list_offsets(bk_api_req_t *req) {
    const kp_list_offsets_request_t *q = req->body;
    kp_list_offsets_response_t r;
    memset(&r, 0, sizeof r);
    kp_list_offsets_response_init(&r);
    size_t nt = q->topics.count > 0 ? (size_t)q->topics.count : 0;
    kp_list_offsets_response_list_offsets_topic_response_t *ts = bk_api_req_alloc(req, nt, sizeof *ts);
    if (!ts) { bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < nt; i++) {
        const kp_list_offsets_request_list_offsets_topic_t *t = &q->topics.items[i];
        kp_list_offsets_response_list_offsets_topic_response_init(&ts[i]);
        ts[i].name = t->name;
        size_t np = t->partitions.count > 0 ? (size_t)t->partitions.count : 0;
        lpart_t *ps = bk_api_req_alloc(req, np, sizeof *ps);
        if (!ps) { bk_api_req_close(req, "out of memory"); return; }
        /* DESCRIBE on the topic (Kafka) */
        bool may = bk_api_authorized_str(req, BK_META_OP_DESCRIBE, BK_META_RES_TOPIC, t->name);
        for (size_t k = 0; k < np; k++) {
            if (may) { one(req, t->name, &t->partitions.items[k], &ps[k]); continue; }
            kp_list_offsets_response_list_offsets_partition_response_init(&ps[k]);
            ps[k].partition_index = t->partitions.items[k].partition_index;
            ps[k].error_code = KP_ERROR_TOPIC_AUTHORIZATION_FAILED;
            ps[k].timestamp = -1;
            ps[k].offset = -1;
            ps[k].leader_epoch = -1;
        }
        ts[i].partitions.items = ps;
        ts[i].partitions.count = (int32_t)np;
    }
    r.topics.items = ts;
    r.topics.count = (int32_t)nt;
    bk_api_req_respond(req, &r);
}
