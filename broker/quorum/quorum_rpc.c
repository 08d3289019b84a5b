/* broker/quorum/quorum_rpc.c — raft messages <-> Kafka frames (see quorum_rpc.h). */
#include "broker/quorum/quorum_rpc.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "kp_msgs.h"
#include "protocol/kp_batch.h"

int16_t bk_quorum_rpc_api_key(raft_msg_type_t t) {
    switch (t) {
    case RAFT_MSG_VOTE_REQ: case RAFT_MSG_VOTE_RESP: return KP_API_VOTE;
    case RAFT_MSG_BEGIN_EPOCH_REQ: case RAFT_MSG_BEGIN_EPOCH_RESP: return KP_API_BEGIN_QUORUM_EPOCH;
    case RAFT_MSG_END_EPOCH_REQ: case RAFT_MSG_END_EPOCH_RESP: return KP_API_END_QUORUM_EPOCH;
    case RAFT_MSG_FETCH_REQ: case RAFT_MSG_FETCH_RESP: return KP_API_FETCH;
    case RAFT_MSG_SNAP_REQ: case RAFT_MSG_SNAP_RESP: return KP_API_FETCH_SNAPSHOT;
    default: return -1;
    }
}

int16_t bk_quorum_rpc_api_version(raft_msg_type_t t) {
    return bk_quorum_rpc_api_key(t) == KP_API_FETCH ? BK_QUORUM_RPC_FETCH_VERSION : 0;
}

static bool is_request(raft_msg_type_t t) { return (t % 2) == 0; }

/* ---- entries <-> batches -------------------------------------------------- */

int bk_quorum_rpc_entries_encode(const raft_entry_t *e, size_t n, uint8_t **buf, size_t *len, size_t *cap) {
    static const uint8_t lc_key[4] = { 0, 0, 0, KP_CONTROL_LEADER_CHANGE };
    for (size_t i = 0; i < n; i++) {
        kp_batch_opts_t o = kp_batch_opts_default();
        o.base_offset = e[i].offset;
        o.partition_leader_epoch = e[i].epoch;
        o.max_bytes = (size_t)e[i].len + BK_QUORUM_RPC_ENTRY_OVERHEAD_BYTES;
        bool lc = e[i].type == RAFT_ENTRY_LEADER_CHANGE;
        if (lc) o.flags = KP_BATCH_CONTROL;
        kp_batch_builder_t bb;
        kp_batch_builder_init(&bb, &o);
        static const uint8_t empty = 0;
        kp_record_in_t ri = { .timestamp = 0,
                              .key = lc ? (kp_bytes_t){ lc_key, sizeof lc_key } : kp_slice_null(),
                              .value = { e[i].len ? e[i].data : &empty, e[i].len } };
        kp_arena_t a;
        kp_arena_init(&a, (size_t)e[i].len * 2 + 4096);
        const uint8_t *b = NULL;
        size_t blen = 0;
        int rc = kp_batch_builder_add(&bb, &ri);
        if (rc == KP_OK) rc = kp_batch_builder_finish(&bb, &a, &b, &blen);
        kp_batch_builder_free(&bb);
        if (rc == KP_OK && *len + blen > *cap) {
            size_t nc = *cap ? *cap : 4096;
            while (nc < *len + blen) nc *= 2;
            uint8_t *nb = realloc(*buf, nc);
            if (!nb) rc = KP_ERR_NOMEM;
            else { *buf = nb; *cap = nc; }
        }
        if (rc == KP_OK) {
            memcpy(*buf + *len, b, blen);
            *len += blen;
        }
        kp_arena_free(&a);
        if (rc != KP_OK) return rc;
    }
    return KP_OK;
}

static int decode_one(const kp_batch_t *b, raft_entry_t *out) {
    if (kp_batch_verify_crc(b) != KP_OK) return KP_ERR_CORRUPT;
    if (b->records_count != 1 || b->last_offset_delta != 0 || kp_batch_codec(b) != KP_CODEC_NONE)
        return KP_ERR_BAD_VALUE;
    if (b->partition_leader_epoch < 1) return KP_ERR_BAD_VALUE;
    kp_record_iter_t it;
    kp_record_iter_init(&it, b, b->data + KP_BATCH_HEADER_BYTES, b->size - KP_BATCH_HEADER_BYTES);
    kp_record_t rec;
    int rc = kp_record_iter_next(&it, &rec);   /* 1 = a record */
    if (rc < 0) return rc;
    if (rc != 1) return KP_ERR_BAD_VALUE;
    if (kp_batch_is_control(b)) {
        int16_t type = -1;
        if (kp_control_key_read(rec.key, &type) != KP_OK || type != KP_CONTROL_LEADER_CHANGE)
            return KP_ERR_BAD_VALUE;
        out->type = RAFT_ENTRY_LEADER_CHANGE;
    } else {
        out->type = RAFT_ENTRY_DATA;
    }
    if (rec.value.len > UINT32_MAX) return KP_ERR_TOO_LARGE;
    out->offset = b->base_offset;
    out->epoch = b->partition_leader_epoch;
    out->data = rec.value.p;
    out->len = (uint32_t)rec.value.len;
    return KP_OK;
}

int bk_quorum_rpc_entries_decode(const uint8_t *bytes, size_t len, kp_arena_t *a, raft_entry_t **out, uint32_t *n) {
    /* first pass counts, second fills: the array is sized exactly */
    uint32_t cnt = 0;
    for (int pass = 0; pass < 2; pass++) {
        kp_rd_t r;
        kp_rd_init(&r, bytes, len);
        uint32_t i = 0;
        while (kp_rd_remaining(&r) > 0) {
            kp_batch_t b;
            int rc = kp_batch_read(&r, &b);
            if (rc != KP_OK) return rc;
            if (pass == 1) {
                if ((rc = decode_one(&b, &(*out)[i])) != KP_OK) return rc;
                if (i > 0 && (*out)[i].offset != (*out)[i - 1].offset + 1) return KP_ERR_BAD_VALUE;
            }
            i++;
        }
        if (pass == 0) {
            cnt = i;
            *out = NULL;
            if (cnt > 0) {
                *out = kp_arena_alloc(a, (size_t)cnt * sizeof **out);
                if (!*out) return KP_ERR_NOMEM;
            }
        }
    }
    *n = cnt;
    return KP_OK;
}

/* ---- requests ---------------------------------------------------------------- */

static int encode_request(const raft_msg_t *m, int32_t corr, const char *cluster_id, int32_t max_wait_ms,
                          uint8_t **out, size_t *out_len) {
    assert(is_request(m->type));
    kp_request_header_t h = { bk_quorum_rpc_api_key(m->type), bk_quorum_rpc_api_version(m->type), corr,
                              kp_slice_cstr(BK_QUORUM_RPC_CLIENT) };
    kp_str_t cid = kp_slice_cstr(cluster_id);
    kp_str_t topic = kp_slice_cstr(BK_QUORUM_RPC_TOPIC);
    switch (m->type) {
    case RAFT_MSG_VOTE_REQ: {
        if (m->u.vote_req.prevote) h.client_id = kp_slice_cstr(BK_QUORUM_RPC_CLIENT_PREVOTE);
        kp_vote_request_partition_data_t p;
        kp_vote_request_partition_data_init(&p);
        p.partition_index = 0;
        p.candidate_epoch = m->epoch;
        p.candidate_id = m->from;
        p.last_offset_epoch = m->u.vote_req.last_epoch;
        p.last_offset = m->u.vote_req.log_end;
        kp_vote_request_topic_data_t t = { topic, { &p, 1 } };
        kp_vote_request_t b;
        kp_vote_request_init(&b);
        b.cluster_id = cid;
        b.topics.items = &t;
        b.topics.count = 1;
        return kp_request_encode_alloc(&h, &b, out, out_len);
    }
    case RAFT_MSG_BEGIN_EPOCH_REQ: {
        kp_begin_quorum_epoch_request_partition_data_t p;
        kp_msg_init(&kp_begin_quorum_epoch_request_partition_data_desc, &p);
        p.leader_id = m->from;
        p.leader_epoch = m->epoch;
        kp_begin_quorum_epoch_request_topic_data_t t = { topic, { &p, 1 } };
        kp_begin_quorum_epoch_request_t b;
        kp_msg_init(&kp_begin_quorum_epoch_request_desc, &b);
        b.cluster_id = cid;
        b.topics.items = &t;
        b.topics.count = 1;
        return kp_request_encode_alloc(&h, &b, out, out_len);
    }
    case RAFT_MSG_END_EPOCH_REQ: {
        kp_end_quorum_epoch_request_partition_data_t p;
        kp_msg_init(&kp_end_quorum_epoch_request_partition_data_desc, &p);
        int32_t succ[RAFT_VOTERS_MAX];
        uint32_t ns = m->u.end_req.n_successors;
        assert(ns <= RAFT_VOTERS_MAX);
        memcpy(succ, m->u.end_req.successors, ns * sizeof succ[0]);
        p.leader_id = m->from;
        p.leader_epoch = m->epoch;
        p.preferred_successors.items = succ;
        p.preferred_successors.count = (int32_t)ns;
        kp_end_quorum_epoch_request_topic_data_t t = { topic, { &p, 1 } };
        kp_end_quorum_epoch_request_t b;
        kp_msg_init(&kp_end_quorum_epoch_request_desc, &b);
        b.cluster_id = cid;
        b.topics.items = &t;
        b.topics.count = 1;
        return kp_request_encode_alloc(&h, &b, out, out_len);
    }
    case RAFT_MSG_FETCH_REQ: {
        kp_fetch_request_fetch_partition_t p;
        kp_msg_init(&kp_fetch_request_fetch_partition_desc, &p);
        p.partition = 0;
        p.current_leader_epoch = m->epoch;
        p.fetch_offset = m->u.fetch_req.fetch_offset;
        p.last_fetched_epoch = m->u.fetch_req.last_fetched_epoch;
        p.partition_max_bytes = INT32_MAX;
        kp_fetch_request_fetch_topic_t t;
        kp_msg_init(&kp_fetch_request_fetch_topic_desc, &t);
        t.topic = topic;
        t.partitions.items = &p;
        t.partitions.count = 1;
        kp_fetch_request_t b;
        kp_msg_init(&kp_fetch_request_desc, &b);
        b.cluster_id = cid;
        b.replica_id = m->from;
        b.max_wait_ms = max_wait_ms;
        b.min_bytes = 0;
        b.topics.items = &t;
        b.topics.count = 1;
        return kp_request_encode_alloc(&h, &b, out, out_len);
    }
    case RAFT_MSG_SNAP_REQ: {
        kp_fetch_snapshot_request_partition_snapshot_t p;
        kp_msg_init(&kp_fetch_snapshot_request_partition_snapshot_desc, &p);
        p.partition = 0;
        p.current_leader_epoch = m->epoch;
        p.snapshot_id.end_offset = m->u.snap_req.snapshot.end_offset;
        p.snapshot_id.epoch = m->u.snap_req.snapshot.epoch;
        p.position = m->u.snap_req.position;
        kp_fetch_snapshot_request_topic_snapshot_t t = { topic, { &p, 1 } };
        kp_fetch_snapshot_request_t b;
        kp_msg_init(&kp_fetch_snapshot_request_desc, &b);
        b.cluster_id = cid;
        b.replica_id = m->from;
        b.max_bytes = INT32_MAX;
        b.topics.items = &t;
        b.topics.count = 1;
        return kp_request_encode_alloc(&h, &b, out, out_len);
    }
    default:
        return KP_ERR_BAD_VALUE;
    }
}

/* The one (topic, partition 0) a raft request must name. */
#define ONE_PART(b, tfield, pfield)                                                         \
    ((b)->tfield.count == 1 && kp_slice_eq_cstr((b)->tfield.items[0].TOPIC_NAME_FIELD,     \
                                                BK_QUORUM_RPC_TOPIC) &&                          \
     (b)->tfield.items[0].pfield.count == 1)

int bk_quorum_rpc_encode_request(const raft_msg_t *m, int32_t corr, const char *cluster_id, uint8_t **out,
                           size_t *out_len) {
    return encode_request(m, corr, cluster_id, 0, out, out_len);
}

int bk_quorum_rpc_encode_fetch(const raft_msg_t *m, int32_t corr, const char *cluster_id, int32_t max_wait_ms,
                         uint8_t **out, size_t *out_len) {
    assert(m->type == RAFT_MSG_FETCH_REQ);
    return encode_request(m, corr, cluster_id, max_wait_ms < 0 ? 0 : max_wait_ms, out, out_len);
}

int bk_quorum_rpc_decode_request(const uint8_t *frame, size_t len, int32_t self_id, kp_arena_t *a,
                           kp_request_header_t *h, raft_msg_t *m) {
    int32_t max_wait_ms;
    return bk_quorum_rpc_decode_request_wait(frame, len, self_id, a, h, m, &max_wait_ms);
}

/* The request's cluster id into m (requests of another cluster are refused
 * by the core, which compares it with its own). A null id reads as "". */
static int set_cluster_id(raft_msg_t *m, kp_str_t cid) {
    if (cid.len > RAFT_CLUSTER_ID_MAX || kp_slice_has_nul(cid))
        return KP_ERR_BAD_VALUE;
    if (cid.len > 0) memcpy(m->cluster_id, cid.p, cid.len);
    m->cluster_id[cid.len] = '\0';
    return KP_OK;
}

int bk_quorum_rpc_decode_request_wait(const uint8_t *frame, size_t len, int32_t self_id, kp_arena_t *a,
                                kp_request_header_t *h, raft_msg_t *m, int32_t *max_wait_ms) {
    void *body = NULL;
    *max_wait_ms = 0;
    int rc = kp_request_decode(frame, len, h, &body, a);
    if (rc != KP_OK) return rc;
    memset(m, 0, sizeof *m);
    m->to = self_id;
    m->leader_id = RAFT_NO_NODE;
    switch (h->api_key) {
    case KP_API_VOTE: {
        const kp_vote_request_t *b = body;
        if (set_cluster_id(m, b->cluster_id) != KP_OK) return KP_ERR_BAD_VALUE;
#define TOPIC_NAME_FIELD topic_name
        if (!ONE_PART(b, topics, partitions)) return KP_ERR_BAD_VALUE;
        const kp_vote_request_partition_data_t *p = &b->topics.items[0].partitions.items[0];
        if (p->partition_index != 0) return KP_ERR_BAD_VALUE;
        m->type = RAFT_MSG_VOTE_REQ;
        m->from = p->candidate_id;
        m->epoch = p->candidate_epoch;
        m->u.vote_req.prevote = kp_slice_eq_cstr(h->client_id, BK_QUORUM_RPC_CLIENT_PREVOTE);
        m->u.vote_req.last_epoch = p->last_offset_epoch;
        m->u.vote_req.log_end = p->last_offset;
        return KP_OK;
    }
    case KP_API_BEGIN_QUORUM_EPOCH: {
        const kp_begin_quorum_epoch_request_t *b = body;
        if (set_cluster_id(m, b->cluster_id) != KP_OK) return KP_ERR_BAD_VALUE;
        if (!ONE_PART(b, topics, partitions)) return KP_ERR_BAD_VALUE;
        const kp_begin_quorum_epoch_request_partition_data_t *p = &b->topics.items[0].partitions.items[0];
        if (p->partition_index != 0) return KP_ERR_BAD_VALUE;
        m->type = RAFT_MSG_BEGIN_EPOCH_REQ;
        m->from = m->leader_id = p->leader_id;
        m->epoch = p->leader_epoch;
        return KP_OK;
    }
    case KP_API_END_QUORUM_EPOCH: {
        const kp_end_quorum_epoch_request_t *b = body;
        if (set_cluster_id(m, b->cluster_id) != KP_OK) return KP_ERR_BAD_VALUE;
        if (!ONE_PART(b, topics, partitions)) return KP_ERR_BAD_VALUE;
        const kp_end_quorum_epoch_request_partition_data_t *p = &b->topics.items[0].partitions.items[0];
        if (p->partition_index != 0 || p->preferred_successors.count < 0 ||
            p->preferred_successors.count > RAFT_VOTERS_MAX)
            return KP_ERR_BAD_VALUE;
        m->type = RAFT_MSG_END_EPOCH_REQ;
        m->from = m->leader_id = p->leader_id;
        m->epoch = p->leader_epoch;
        m->u.end_req.n_successors = (uint32_t)p->preferred_successors.count;
        for (int32_t i = 0; i < p->preferred_successors.count; i++)
            m->u.end_req.successors[i] = p->preferred_successors.items[i];
        return KP_OK;
    }
#undef TOPIC_NAME_FIELD
    case KP_API_FETCH: {
        const kp_fetch_request_t *b = body;
        if (set_cluster_id(m, b->cluster_id) != KP_OK) return KP_ERR_BAD_VALUE;
#define TOPIC_NAME_FIELD topic
        if (h->api_version != BK_QUORUM_RPC_FETCH_VERSION || !ONE_PART(b, topics, partitions)) return KP_ERR_BAD_VALUE;
        const kp_fetch_request_fetch_partition_t *p = &b->topics.items[0].partitions.items[0];
        if (p->partition != 0 || b->replica_id < 0) return KP_ERR_BAD_VALUE;
        m->type = RAFT_MSG_FETCH_REQ;
        m->from = b->replica_id;
        m->epoch = p->current_leader_epoch;
        m->u.fetch_req.fetch_offset = p->fetch_offset;
        m->u.fetch_req.last_fetched_epoch = p->last_fetched_epoch;
        *max_wait_ms = b->max_wait_ms < 0 ? 0 : b->max_wait_ms;
        return KP_OK;
#undef TOPIC_NAME_FIELD
    }
    case KP_API_FETCH_SNAPSHOT: {
        const kp_fetch_snapshot_request_t *b = body;
        if (set_cluster_id(m, b->cluster_id) != KP_OK) return KP_ERR_BAD_VALUE;
#define TOPIC_NAME_FIELD name
        if (!ONE_PART(b, topics, partitions)) return KP_ERR_BAD_VALUE;
#undef TOPIC_NAME_FIELD
        const kp_fetch_snapshot_request_partition_snapshot_t *p = &b->topics.items[0].partitions.items[0];
        if (p->partition != 0 || b->replica_id < 0) return KP_ERR_BAD_VALUE;
        m->type = RAFT_MSG_SNAP_REQ;
        m->from = b->replica_id;
        m->epoch = p->current_leader_epoch;
        m->u.snap_req.snapshot.end_offset = p->snapshot_id.end_offset;
        m->u.snap_req.snapshot.epoch = p->snapshot_id.epoch;
        m->u.snap_req.position = p->position;
        return KP_OK;
    }
    default:
        return KP_ERR_UNSUPPORTED;
    }
}

/* ---- responses ------------------------------------------------------------------- */

int bk_quorum_rpc_encode_response(const raft_msg_t *m, const kp_request_header_t *h, uint8_t **out,
                            size_t *out_len) {
    assert(!is_request(m->type));
    if (bk_quorum_rpc_api_key(m->type) != h->api_key) return KP_ERR_BAD_VALUE;
    kp_str_t topic = kp_slice_cstr(BK_QUORUM_RPC_TOPIC);
    switch (m->type) {
    case RAFT_MSG_VOTE_RESP: {
        kp_vote_response_partition_data_t p = { 0, m->error, m->leader_id, m->epoch, m->u.vote_resp.granted };
        kp_vote_response_topic_data_t t = { topic, { &p, 1 } };
        kp_vote_response_t b;
        kp_vote_response_init(&b);
        /* Kafka puts a request-level error (another cluster) at the top too */
        if (m->error == RAFT_KERR_INCONSISTENT_CLUSTER_ID) b.error_code = m->error;
        b.topics.items = &t;
        b.topics.count = 1;
        return kp_response_encode_alloc(h->api_key, h->api_version, h->correlation_id, &b, out, out_len);
    }
    case RAFT_MSG_BEGIN_EPOCH_RESP: {
        kp_begin_quorum_epoch_response_partition_data_t p = { 0, m->error, m->leader_id, m->epoch };
        kp_begin_quorum_epoch_response_topic_data_t t = { topic, { &p, 1 } };
        kp_begin_quorum_epoch_response_t b;
        kp_msg_init(&kp_begin_quorum_epoch_response_desc, &b);
        /* Kafka puts a request-level error (another cluster) at the top too */
        if (m->error == RAFT_KERR_INCONSISTENT_CLUSTER_ID) b.error_code = m->error;
        b.topics.items = &t;
        b.topics.count = 1;
        return kp_response_encode_alloc(h->api_key, h->api_version, h->correlation_id, &b, out, out_len);
    }
    case RAFT_MSG_END_EPOCH_RESP: {
        kp_end_quorum_epoch_response_partition_data_t p = { 0, m->error, m->leader_id, m->epoch };
        kp_end_quorum_epoch_response_topic_data_t t = { topic, { &p, 1 } };
        kp_end_quorum_epoch_response_t b;
        kp_msg_init(&kp_end_quorum_epoch_response_desc, &b);
        /* Kafka puts a request-level error (another cluster) at the top too */
        if (m->error == RAFT_KERR_INCONSISTENT_CLUSTER_ID) b.error_code = m->error;
        b.topics.items = &t;
        b.topics.count = 1;
        return kp_response_encode_alloc(h->api_key, h->api_version, h->correlation_id, &b, out, out_len);
    }
    case RAFT_MSG_FETCH_RESP: {
        uint8_t *recs = NULL;
        size_t rlen = 0, rcap = 0;
        int rc = bk_quorum_rpc_entries_encode(m->u.fetch_resp.entries, m->u.fetch_resp.n_entries, &recs, &rlen, &rcap);
        if (rc != KP_OK) { free(recs); return rc; }
        kp_fetch_response_partition_data_t p;
        kp_msg_init(&kp_fetch_response_partition_data_desc, &p);
        p.partition_index = 0;
        p.error_code = m->error;
        p.high_watermark = m->u.fetch_resp.high_watermark;
        p.log_start_offset = m->u.fetch_resp.log_start;
        if (m->u.fetch_resp.diverging) {
            p.diverging_epoch.epoch = m->u.fetch_resp.diverging_epoch;
            p.diverging_epoch.end_offset = m->u.fetch_resp.diverging_end;
        }
        p.current_leader.leader_id = m->leader_id;
        p.current_leader.leader_epoch = m->epoch;
        if (m->u.fetch_resp.need_snapshot) {
            p.snapshot_id.end_offset = m->u.fetch_resp.snapshot.end_offset;
            p.snapshot_id.epoch = m->u.fetch_resp.snapshot.epoch;
        }
        static const uint8_t empty = 0;
        p.records.bytes = (kp_bytes_t){ recs ? recs : &empty, rlen };
        kp_fetch_response_fetchable_topic_response_t t;
        kp_msg_init(&kp_fetch_response_fetchable_topic_response_desc, &t);
        t.topic = topic;
        t.partitions.items = &p;
        t.partitions.count = 1;
        kp_fetch_response_t b;
        kp_msg_init(&kp_fetch_response_desc, &b);
        b.responses.items = &t;
        b.responses.count = 1;
        rc = kp_response_encode_alloc(h->api_key, h->api_version, h->correlation_id, &b, out, out_len);
        free(recs);
        return rc;
    }
    case RAFT_MSG_SNAP_RESP: {
        kp_fetch_snapshot_response_partition_snapshot_t p;
        kp_msg_init(&kp_fetch_snapshot_response_partition_snapshot_desc, &p);
        p.index = 0;
        p.error_code = m->error;
        p.snapshot_id.end_offset = m->u.snap_resp.snapshot.end_offset;
        p.snapshot_id.epoch = m->u.snap_resp.snapshot.epoch;
        p.current_leader.leader_id = m->leader_id;
        p.current_leader.leader_epoch = m->epoch;
        p.size = m->u.snap_resp.size;
        p.position = m->u.snap_resp.position;
        static const uint8_t empty = 0;
        p.unaligned_records.bytes = (kp_bytes_t){ m->u.snap_resp.len ? m->u.snap_resp.data : &empty,
                                                  m->u.snap_resp.len };
        kp_fetch_snapshot_response_topic_snapshot_t t = { topic, { &p, 1 } };
        kp_fetch_snapshot_response_t b;
        kp_msg_init(&kp_fetch_snapshot_response_desc, &b);
        b.topics.items = &t;
        b.topics.count = 1;
        return kp_response_encode_alloc(h->api_key, h->api_version, h->correlation_id, &b, out, out_len);
    }
    default:
        return KP_ERR_BAD_VALUE;
    }
}

int bk_quorum_rpc_decode_response(const raft_msg_t *req, const uint8_t *frame, size_t len, kp_arena_t *a,
                            int32_t *corr, raft_msg_t *m) {
    assert(is_request(req->type));
    void *body = NULL;
    int rc = kp_response_decode(bk_quorum_rpc_api_key(req->type), bk_quorum_rpc_api_version(req->type), frame, len,
                                corr, &body, a);
    if (rc != KP_OK) return rc;
    memset(m, 0, sizeof *m);
    m->type = (raft_msg_type_t)(req->type + 1);
    m->from = req->to;
    m->to = req->from;
    switch (req->type) {
    case RAFT_MSG_VOTE_REQ: {
        const kp_vote_response_t *b = body;
#define TOPIC_NAME_FIELD topic_name
        if (!ONE_PART(b, topics, partitions)) return KP_ERR_BAD_VALUE;
        const kp_vote_response_partition_data_t *p = &b->topics.items[0].partitions.items[0];
        m->error = p->error_code;
        m->leader_id = p->leader_id;
        m->epoch = p->leader_epoch;
        m->u.vote_resp.prevote = req->u.vote_req.prevote;
        m->u.vote_resp.granted = p->vote_granted;
        return KP_OK;
    }
    case RAFT_MSG_BEGIN_EPOCH_REQ: {
        const kp_begin_quorum_epoch_response_t *b = body;
        if (!ONE_PART(b, topics, partitions)) return KP_ERR_BAD_VALUE;
        const kp_begin_quorum_epoch_response_partition_data_t *p = &b->topics.items[0].partitions.items[0];
        m->error = p->error_code;
        m->leader_id = p->leader_id;
        m->epoch = p->leader_epoch;
        return KP_OK;
    }
    case RAFT_MSG_END_EPOCH_REQ: {
        const kp_end_quorum_epoch_response_t *b = body;
        if (!ONE_PART(b, topics, partitions)) return KP_ERR_BAD_VALUE;
        const kp_end_quorum_epoch_response_partition_data_t *p = &b->topics.items[0].partitions.items[0];
        m->error = p->error_code;
        m->leader_id = p->leader_id;
        m->epoch = p->leader_epoch;
        return KP_OK;
    }
#undef TOPIC_NAME_FIELD
    case RAFT_MSG_FETCH_REQ: {
        const kp_fetch_response_t *b = body;
#define TOPIC_NAME_FIELD topic
        if (!ONE_PART(b, responses, partitions)) return KP_ERR_BAD_VALUE;
#undef TOPIC_NAME_FIELD
        const kp_fetch_response_partition_data_t *p = &b->responses.items[0].partitions.items[0];
        m->error = p->error_code;
        m->leader_id = p->current_leader.leader_id;
        m->epoch = p->current_leader.leader_epoch;
        m->u.fetch_resp.req_fetch_offset = req->u.fetch_req.fetch_offset;
        m->u.fetch_resp.req_last_epoch = req->u.fetch_req.last_fetched_epoch;
        m->u.fetch_resp.high_watermark = p->high_watermark;
        m->u.fetch_resp.log_start = p->log_start_offset;
        m->u.fetch_resp.diverging = p->diverging_epoch.end_offset != -1 || p->diverging_epoch.epoch != -1;
        m->u.fetch_resp.diverging_epoch = p->diverging_epoch.epoch;
        m->u.fetch_resp.diverging_end = p->diverging_epoch.end_offset;
        m->u.fetch_resp.need_snapshot = p->snapshot_id.end_offset != -1 || p->snapshot_id.epoch != -1;
        m->u.fetch_resp.snapshot.end_offset = p->snapshot_id.end_offset;
        m->u.fetch_resp.snapshot.epoch = p->snapshot_id.epoch;
        raft_entry_t *e = NULL;
        uint32_t n = 0;
        if (p->records.bytes.len > 0 &&
            (rc = bk_quorum_rpc_entries_decode(p->records.bytes.p, p->records.bytes.len, a, &e, &n)) != KP_OK)
            return rc;
        m->u.fetch_resp.entries = e;
        m->u.fetch_resp.n_entries = n;
        return KP_OK;
    }
    case RAFT_MSG_SNAP_REQ: {
        const kp_fetch_snapshot_response_t *b = body;
#define TOPIC_NAME_FIELD name
        if (!ONE_PART(b, topics, partitions)) return KP_ERR_BAD_VALUE;
#undef TOPIC_NAME_FIELD
        const kp_fetch_snapshot_response_partition_snapshot_t *p = &b->topics.items[0].partitions.items[0];
        if (p->unaligned_records.bytes.len > UINT32_MAX) return KP_ERR_TOO_LARGE;
        m->error = p->error_code;
        m->leader_id = p->current_leader.leader_id;
        m->epoch = p->current_leader.leader_epoch;
        m->u.snap_resp.snapshot.end_offset = p->snapshot_id.end_offset;
        m->u.snap_resp.snapshot.epoch = p->snapshot_id.epoch;
        m->u.snap_resp.size = p->size;
        m->u.snap_resp.position = p->position;
        m->u.snap_resp.data = p->unaligned_records.bytes.p;
        m->u.snap_resp.len = (uint32_t)p->unaligned_records.bytes.len;
        return KP_OK;
    }
    default:
        return KP_ERR_BAD_VALUE;
    }
}
