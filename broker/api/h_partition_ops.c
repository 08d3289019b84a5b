/* broker/api/h_partition_ops.c — OffsetForLeaderEpoch (KIP-101: the end
 * offset of the requested epoch from the leader-epoch cache) and
 * DeleteRecords (log start offset moves up to the requested offset, which
 * must be <= HW; -1 means the HW).
 * Authorization (Kafka): OffsetForLeaderEpoch from a client DESCRIBE on the
 * topic, from a replica (v3+ replica id >= 0) CLUSTER_ACTION on the
 * cluster; DeleteRecords DELETE on the topic. Refused partitions answer
 * TOPIC_ / CLUSTER_AUTHORIZATION_FAILED and are not touched. */
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/meta/acl.h"
#include "broker/replication/parts.h"
#include "protocol/kp_errors.h"
#include "storage/st_log.h"

typedef kp_offset_for_leader_epoch_response_epoch_end_offset_t eoff_t;

void bk_api_h_offset_for_leader_epoch(bk_api_req_t *req) {
    const kp_offset_for_leader_epoch_request_t *q = req->body;
    kp_offset_for_leader_epoch_response_t r;
    memset(&r, 0, sizeof r);
    kp_offset_for_leader_epoch_response_init(&r);
    size_t nt = q->topics.count > 0 ? (size_t)q->topics.count : 0;
    kp_offset_for_leader_epoch_response_offset_for_leader_topic_result_t *ts = bk_api_req_alloc(req, nt, sizeof *ts);
    if (!ts) { bk_api_req_close(req, "out of memory"); return; }
    bool replica = req->hdr.api_version >= 3 && q->replica_id >= 0;
    bool cluster_ok = !replica || bk_api_authorized(req, BK_META_OP_CLUSTER_ACTION, BK_META_RES_CLUSTER,
                                                    BK_META_ACL_CLUSTER_NAME);
    for (size_t i = 0; i < nt; i++) {
        const kp_offset_for_leader_epoch_request_offset_for_leader_topic_t *t = &q->topics.items[i];
        int16_t denied = !cluster_ok ? KP_ERROR_CLUSTER_AUTHORIZATION_FAILED
                         : !replica && !bk_api_authorized_str(req, BK_META_OP_DESCRIBE, BK_META_RES_TOPIC, t->topic)
                             ? KP_ERROR_TOPIC_AUTHORIZATION_FAILED : 0;
        kp_offset_for_leader_epoch_response_offset_for_leader_topic_result_init(&ts[i]);
        ts[i].topic = t->topic;
        size_t np = t->partitions.count > 0 ? (size_t)t->partitions.count : 0;
        eoff_t *ps = bk_api_req_alloc(req, np, sizeof *ps);
        if (!ps) { bk_api_req_close(req, "out of memory"); return; }
        for (size_t k = 0; k < np; k++) {
            const kp_offset_for_leader_epoch_request_offset_for_leader_partition_t *rp = &t->partitions.items[k];
            kp_offset_for_leader_epoch_response_epoch_end_offset_init(&ps[k]);
            ps[k].partition = rp->partition;
            ps[k].end_offset = -1;
            if (denied) { ps[k].error_code = denied; continue; }
            bk_repl_part_t *p = bk_api_req_leader_part(req, t->topic, rp->partition, &ps[k].error_code);
            if (!p) continue;
            if (rp->current_leader_epoch >= 0 && rp->current_leader_epoch != p->leader_epoch) {
                ps[k].error_code = rp->current_leader_epoch < p->leader_epoch ? KP_ERROR_FENCED_LEADER_EPOCH
                                                                              : KP_ERROR_UNKNOWN_LEADER_EPOCH;
                continue;
            }
            int32_t found = -1;
            int64_t end = -1;
            st_log_end_offset_for_epoch(p->log, rp->leader_epoch, &found, &end);
            if (req->hdr.api_version >= 1) ps[k].leader_epoch = found;
            ps[k].end_offset = end;
        }
        ts[i].partitions.items = ps;
        ts[i].partitions.count = (int32_t)np;
    }
    r.topics.items = ts;
    r.topics.count = (int32_t)nt;
    bk_api_req_respond(req, &r);
}

void bk_api_h_delete_records(bk_api_req_t *req) {
    const kp_delete_records_request_t *q = req->body;
    kp_delete_records_response_t r;
    memset(&r, 0, sizeof r);
    kp_delete_records_response_init(&r);
    size_t nt = q->topics.count > 0 ? (size_t)q->topics.count : 0;
    kp_delete_records_response_delete_records_topic_result_t *ts = bk_api_req_alloc(req, nt, sizeof *ts);
    if (!ts) { bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < nt; i++) {
        const kp_delete_records_request_delete_records_topic_t *t = &q->topics.items[i];
        kp_delete_records_response_delete_records_topic_result_init(&ts[i]);
        ts[i].name = t->name;
        bool denied = !bk_api_authorized_str(req, BK_META_OP_DELETE, BK_META_RES_TOPIC, t->name);
        size_t np = t->partitions.count > 0 ? (size_t)t->partitions.count : 0;
        kp_delete_records_response_delete_records_partition_result_t *ps = bk_api_req_alloc(req, np, sizeof *ps);
        if (!ps) { bk_api_req_close(req, "out of memory"); return; }
        for (size_t k = 0; k < np; k++) {
            const kp_delete_records_request_delete_records_partition_t *rp = &t->partitions.items[k];
            kp_delete_records_response_delete_records_partition_result_init(&ps[k]);
            ps[k].partition_index = rp->partition_index;
            ps[k].low_watermark = -1;
            if (denied) { ps[k].error_code = KP_ERROR_TOPIC_AUTHORIZATION_FAILED; continue; }
            bk_repl_part_t *p = bk_api_req_leader_part(req, t->name, rp->partition_index, &ps[k].error_code);
            if (!p) continue;
            int64_t hw = st_log_high_watermark(p->log);
            int64_t target = rp->offset == -1 ? hw : rp->offset;
            if (target < 0 || target > hw) { ps[k].error_code = KP_ERROR_OFFSET_OUT_OF_RANGE; continue; }
            if (target > st_log_start_offset(p->log)) {
                if (st_log_advance_start(p->log, target) != KP_OK) {
                    ps[k].error_code = KP_ERROR_KAFKA_STORAGE_ERROR;
                    continue;
                }
                bk_node_purge_later(req->node, st_log_dir(p->log));
            }
            ps[k].low_watermark = st_log_start_offset(p->log);
        }
        ts[i].partitions.items = ps;
        ts[i].partitions.count = (int32_t)np;
    }
    r.topics.items = ts;
    r.topics.count = (int32_t)nt;
    bk_api_req_respond(req, &r);
}
