/* broker/api/h_describe_quorum.c — DescribeQuorum (KIP-595) for
 * __cluster_metadata-0 on the Kafka listener. The raft leader answers with
 * voters' and observers' progress; any other node answers
 * NOT_LEADER_OR_FOLLOWER naming the leader it knows (clients then ask it).
 * With the local committer (single voter) this node is the leader. */
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/quorum/quorum.h"
#include "protocol/kp_errors.h"

#define META_TOPIC "__cluster_metadata"

static bool fill_replicas(bk_api_req_t *req, const raft_replica_state_t *in, size_t n,
                          kp_describe_quorum_response_replica_state_t **out, int32_t *count) {
    *out = n ? bk_api_req_alloc(req, n, sizeof **out) : NULL;
    if (n && !*out) return false;
    for (size_t i = 0; i < n; i++) {
        kp_describe_quorum_response_replica_state_init(&(*out)[i]);
        (*out)[i].replica_id = in[i].node_id;
        (*out)[i].log_end_offset = in[i].log_end_offset;
        (*out)[i].last_fetch_timestamp = in[i].last_fetch_ms;
        (*out)[i].last_caught_up_timestamp = in[i].last_caught_up_ms;
    }
    *count = (int32_t)n;
    return true;
}

void bk_api_h_describe_quorum(bk_api_req_t *req) {
    bk_node_t *n = req->node;
    const kp_describe_quorum_request_t *in = req->body;
    raft_quorum_info_t qi;
    memset(&qi, 0, sizeof qi);
    bool leader;
    if (n->quorum) {
        bk_quorum_describe(n->quorum, &qi);
        qi.leader_id = bk_quorum_leader(n->quorum);
        qi.leader_epoch = bk_quorum_epoch(n->quorum);
        qi.high_watermark = bk_node_metadata_hw(n);
        leader = bk_quorum_is_leader(n->quorum);
    } else {
        qi.leader_id = n->id;
        qi.high_watermark = bk_node_metadata_hw(n);
        qi.n_voters = 1;
        qi.voters[0] = (raft_replica_state_t){ n->id, qi.high_watermark, -1, -1 };
        leader = true;
    }
    kp_describe_quorum_response_t r;
    kp_describe_quorum_response_init(&r);
    int32_t nt = in->topics.count > 0 ? in->topics.count : 0;
    kp_describe_quorum_response_topic_data_t *ts = nt ? bk_api_req_alloc(req, (size_t)nt, sizeof *ts) : NULL;
    if (nt && !ts) { bk_api_req_close(req, "out of memory"); return; }
    for (int32_t i = 0; i < nt; i++) {
        const kp_describe_quorum_request_topic_data_t *t = &in->topics.items[i];
        kp_describe_quorum_response_topic_data_init(&ts[i]);
        ts[i].topic_name = t->topic_name;
        int32_t np = t->partitions.count > 0 ? t->partitions.count : 0;
        kp_describe_quorum_response_partition_data_t *ps = np ? bk_api_req_alloc(req, (size_t)np, sizeof *ps) : NULL;
        if (np && !ps) { bk_api_req_close(req, "out of memory"); return; }
        for (int32_t j = 0; j < np; j++) {
            kp_describe_quorum_response_partition_data_init(&ps[j]);
            ps[j].partition_index = t->partitions.items[j].partition_index;
            bool ours = kp_slice_eq_cstr(t->topic_name, META_TOPIC) && ps[j].partition_index == 0;
            ps[j].leader_id = qi.leader_id;
            ps[j].leader_epoch = qi.leader_epoch;
            ps[j].high_watermark = qi.high_watermark;
            if (!ours) ps[j].error_code = KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
            else if (!leader) ps[j].error_code = KP_ERROR_NOT_LEADER_OR_FOLLOWER;
            else if (!fill_replicas(req, qi.voters, qi.n_voters, &ps[j].current_voters.items, &ps[j].current_voters.count) ||
                     !fill_replicas(req, qi.observers, qi.n_observers, &ps[j].observers.items, &ps[j].observers.count)) {
                bk_api_req_close(req, "out of memory");
                return;
            }
        }
        ts[i].partitions.items = ps;
        ts[i].partitions.count = np;
    }
    r.topics.items = ts;
    r.topics.count = nt;
    bk_api_req_respond(req, &r);
}
