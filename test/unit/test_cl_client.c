/* Unit tests for clients/ against an in-process fake broker (a thread on a
 * loopback port the kernel picks, answering with protocol/'s codec):
 * batching, compression, idempotent sequences, retries of retriable errors
 * and of dropped connections (bounded), non-retriable errors named, the
 * consumer reading back what was produced, truncated responses at every
 * byte, and the operator views of transactions and producers (cl_txn.h). */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clients/cl_admin.h"
#include "clients/cl_client.h"
#include "clients/cl_consumer.h"
#include "clients/cl_group.h"
#include "clients/cl_partitioner.h"
#include "clients/cl_producer.h"
#include "clients/cl_txn.h"
#include "kp_msgs.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_header.h"

#define FAKE_PARTS 2
#define FAKE_CONNS 8
#define FAKE_LOG_BYTES ((size_t)8 << 20)
#define FAKE_BATCHES_MAX 4096

typedef struct fake {
    int lfd, port;
    pthread_t th;
    volatile int stop;
    pthread_mutex_t mu;
    /* script */
    int16_t produce_errors[16];     /* answered to the next produce requests, in order */
    int nproduce_errors;
    int close_on_produce;           /* close instead of answering, this many times (-1 = always) */
    int metadata_truncate_to;       /* -1: normal; else cut the Metadata body to this many bytes */
    int fetch_cut_at_max;           /* answer at most partition_max_bytes, cutting a batch (pre-KIP-74) */
    int32_t fetch_max_seen;         /* largest partition_max_bytes asked for */
    /* observations */
    int produce_requests, produce_attempts_closed;
    int nbatches;
    int32_t batch_records[FAKE_BATCHES_MAX], batch_partition[FAKE_BATCHES_MAX], batch_seq[FAKE_BATCHES_MAX];
    int64_t batch_pid[FAKE_BATCHES_MAX];
    int batch_codec[FAKE_BATCHES_MAX];
    size_t batch_size[FAKE_BATCHES_MAX];
    /* group: JoinGroup calls seen, assignments the leader sent, commits */
    int joins;
    char sync_members[4][64];
    int32_t sync_first[4], sync_count[4];
    int nsync;
    int32_t commit_generation;
    char commit_member[64];
    int64_t commit_offsets[FAKE_PARTS];
    /* transactions: scripted retriable errors and cuts, what was asked */
    int txn_errors;                 /* answer this many txn/producers requests with a retriable error */
    int txn_truncate_to;            /* -1: normal; else cut the DescribeTransactions body */
    int8_t coord_key_type;          /* of the last FindCoordinator */
    int txn_calls, producers_calls, list_calls;
    int list_states, list_pids;     /* filter counts of the last ListTransactions */
    int64_t list_pid0;
    /* per-partition log of accepted batches (base offsets patched) */
    uint8_t *log[FAKE_PARTS];
    size_t log_len[FAKE_PARTS];
    int64_t log_end[FAKE_PARTS];
} fake_t;

static int send_frame(int fd, const uint8_t *p, size_t n) {
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int recv_all(int fd, uint8_t *p, size_t n) {
    while (n) {
        ssize_t k = recv(fd, p, n, 0);
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int respond(int fd, int16_t api, int16_t ver, int32_t corr, const void *body, int truncate_to) {
    kp_wr_t w;
    kp_wr_init_count(&w);
    ck_assert_int_eq(kp_response_encode(&w, api, ver, corr, body, NULL), KP_OK);
    size_t n = w.pos;
    uint8_t *buf = malloc(n);
    kp_wr_init(&w, buf, n);
    ck_assert_int_eq(kp_response_encode(&w, api, ver, corr, body, NULL), KP_OK);
    if (truncate_to >= 0 && (size_t)truncate_to + 4 < n) {
        n = (size_t)truncate_to + 4;
        kp_store_be32(buf, (uint32_t)truncate_to);
    }
    int rc = send_frame(fd, buf, n);
    free(buf);
    return rc;
}

static int answer_api_versions(int fd, int16_t ver, int32_t corr, kp_arena_t *a) {
    static const int16_t keys[][2] = { { KP_API_PRODUCE, 9 }, { KP_API_FETCH, 12 }, { KP_API_LIST_OFFSETS, 3 },
                                       { KP_API_METADATA, 12 }, { KP_API_API_VERSIONS, 3 },
                                       { KP_API_CREATE_TOPICS, 7 }, { KP_API_INIT_PRODUCER_ID, 4 },
                                       { KP_API_FIND_COORDINATOR, 3 }, { KP_API_JOIN_GROUP, 5 },
                                       { KP_API_SYNC_GROUP, 3 }, { KP_API_HEARTBEAT, 3 }, { KP_API_LEAVE_GROUP, 1 },
                                       { KP_API_OFFSET_COMMIT, 8 }, { KP_API_DESCRIBE_PRODUCERS, 0 },
                                       { KP_API_DESCRIBE_TRANSACTIONS, 0 }, { KP_API_LIST_TRANSACTIONS, 1 } };
    kp_api_versions_response_t r;
    kp_api_versions_response_init(&r);
    r.api_keys.count = sizeof keys / sizeof keys[0];
    r.api_keys.items = kp_arena_alloc(a, sizeof *r.api_keys.items * (size_t)r.api_keys.count);
    for (int i = 0; i < r.api_keys.count; i++) {
        kp_api_versions_response_api_version_init(&r.api_keys.items[i]);
        r.api_keys.items[i].api_key = keys[i][0];
        r.api_keys.items[i].min_version = 0;
        r.api_keys.items[i].max_version = keys[i][1];
    }
    return respond(fd, KP_API_API_VERSIONS, ver, corr, &r, -1);
}

static int answer_metadata(fake_t *f, int fd, int16_t ver, int32_t corr, kp_arena_t *a) {
    kp_metadata_response_t r;
    kp_metadata_response_init(&r);
    kp_metadata_response_metadata_response_broker_t b;
    kp_metadata_response_metadata_response_broker_init(&b);
    b.node_id = 1;
    b.host = cl_str("127.0.0.1");
    b.port = f->port;
    r.brokers.items = &b;
    r.brokers.count = 1;
    r.controller_id = 1;
    r.cluster_id = cl_str("fake");
    kp_metadata_response_metadata_response_topic_t t;
    kp_metadata_response_metadata_response_topic_init(&t);
    t.name = cl_str("t");
    t.partitions.count = FAKE_PARTS;
    t.partitions.items = kp_arena_alloc(a, sizeof *t.partitions.items * FAKE_PARTS);
    static int32_t one[] = { 1 };
    for (int i = 0; i < FAKE_PARTS; i++) {
        kp_metadata_response_metadata_response_partition_init(&t.partitions.items[i]);
        t.partitions.items[i].partition_index = i;
        t.partitions.items[i].leader_id = 1;
        t.partitions.items[i].replica_nodes.items = one;
        t.partitions.items[i].replica_nodes.count = 1;
        t.partitions.items[i].isr_nodes.items = one;
        t.partitions.items[i].isr_nodes.count = 1;
    }
    r.topics.items = &t;
    r.topics.count = 1;
    return respond(fd, KP_API_METADATA, ver, corr, &r, f->metadata_truncate_to);
}

/* Stores a batch in the partition's log; returns its base offset. */
static int64_t append(fake_t *f, int32_t part, kp_bytes_t recs) {
    kp_rd_t r;
    kp_rd_init(&r, recs.p, recs.len);
    kp_batch_t b;
    ck_assert_int_eq(kp_batch_read(&r, &b), KP_OK);
    kp_arena_t a;
    kp_arena_init(&a, (size_t)64 << 20);
    ck_assert_int_eq(kp_batch_validate(&b, KP_VALIDATE_PRODUCER, &a, (size_t)64 << 20, NULL), KP_OK);
    kp_arena_free(&a);
    ck_assert_uint_eq(kp_rd_remaining(&r), 0);
    int i = f->nbatches++;
    ck_assert_int_lt(i, FAKE_BATCHES_MAX);
    f->batch_records[i] = b.records_count;
    f->batch_partition[i] = part;
    f->batch_seq[i] = b.base_sequence;
    f->batch_pid[i] = b.producer_id;
    f->batch_codec[i] = kp_batch_codec(&b);
    f->batch_size[i] = b.size;
    int64_t base = f->log_end[part];
    ck_assert(f->log_len[part] + b.size <= FAKE_LOG_BYTES);
    memcpy(f->log[part] + f->log_len[part], b.data, b.size);
    kp_batch_patch_base_offset(f->log[part] + f->log_len[part], base);
    f->log_len[part] += b.size;
    f->log_end[part] += b.records_count;
    return base;
}

static int answer_produce(fake_t *f, int fd, int16_t ver, int32_t corr, const kp_produce_request_t *req, kp_arena_t *a) {
    f->produce_requests++;
    if (f->close_on_produce != 0) {
        if (f->close_on_produce > 0) f->close_on_produce--;
        f->produce_attempts_closed++;
        return -1;
    }
    int16_t err = 0;
    if (f->nproduce_errors > 0) {
        err = f->produce_errors[0];
        memmove(f->produce_errors, f->produce_errors + 1, sizeof f->produce_errors[0] * (size_t)--f->nproduce_errors);
    }
    kp_produce_response_t r;
    kp_produce_response_init(&r);
    r.responses.count = req->topic_data.count;
    r.responses.items = kp_arena_alloc(a, sizeof *r.responses.items * (size_t)(req->topic_data.count + 1));
    for (int32_t i = 0; i < req->topic_data.count; i++) {
        const kp_produce_request_topic_produce_data_t *td = &req->topic_data.items[i];
        kp_produce_response_topic_produce_response_t *tr = &r.responses.items[i];
        kp_produce_response_topic_produce_response_init(tr);
        tr->name = td->name;
        tr->partition_responses.count = td->partition_data.count;
        tr->partition_responses.items = kp_arena_alloc(a, sizeof *tr->partition_responses.items * (size_t)(td->partition_data.count + 1));
        for (int32_t j = 0; j < td->partition_data.count; j++) {
            kp_produce_response_partition_produce_response_t *pr = &tr->partition_responses.items[j];
            kp_produce_response_partition_produce_response_init(pr);
            pr->index = td->partition_data.items[j].index;
            pr->error_code = err;
            pr->base_offset = err ? -1 : append(f, pr->index, td->partition_data.items[j].records.bytes);
        }
    }
    return respond(fd, KP_API_PRODUCE, ver, corr, &r, -1);
}

static int answer_fetch(fake_t *f, int fd, int16_t ver, int32_t corr, const kp_fetch_request_t *req, kp_arena_t *a) {
    kp_fetch_response_t r;
    kp_fetch_response_init(&r);
    r.responses.count = req->topics.count;
    r.responses.items = kp_arena_alloc(a, sizeof *r.responses.items * (size_t)(req->topics.count + 1));
    for (int32_t i = 0; i < req->topics.count; i++) {
        kp_fetch_response_fetchable_topic_response_t *tr = &r.responses.items[i];
        kp_fetch_response_fetchable_topic_response_init(tr);
        tr->topic = req->topics.items[i].topic;
        tr->partitions.count = req->topics.items[i].partitions.count;
        tr->partitions.items = kp_arena_alloc(a, sizeof *tr->partitions.items * (size_t)(tr->partitions.count + 1));
        for (int32_t j = 0; j < tr->partitions.count; j++) {
            int32_t p = req->topics.items[i].partitions.items[j].partition;
            kp_fetch_response_partition_data_t *pd = &tr->partitions.items[j];
            kp_fetch_response_partition_data_init(pd);
            pd->partition_index = p;
            pd->high_watermark = f->log_end[p];
            /* the whole log every time: the consumer must skip what it has */
            pd->records.bytes.p = f->log[p];
            pd->records.bytes.len = f->log_len[p];
            int32_t maxb = req->topics.items[i].partitions.items[j].partition_max_bytes;
            if (maxb > f->fetch_max_seen) f->fetch_max_seen = maxb;
            if (f->fetch_cut_at_max && pd->records.bytes.len > (size_t)maxb) pd->records.bytes.len = (size_t)maxb;
        }
    }
    return respond(fd, KP_API_FETCH, ver, corr, &r, -1);
}

static int answer_list_offsets(fake_t *f, int fd, int16_t ver, int32_t corr, const kp_list_offsets_request_t *req,
                               kp_arena_t *a) {
    kp_list_offsets_response_t r;
    kp_list_offsets_response_init(&r);
    r.topics.count = req->topics.count;
    r.topics.items = kp_arena_alloc(a, sizeof *r.topics.items * (size_t)(req->topics.count + 1));
    for (int32_t i = 0; i < req->topics.count; i++) {
        kp_list_offsets_response_list_offsets_topic_response_t *tr = &r.topics.items[i];
        kp_list_offsets_response_list_offsets_topic_response_init(tr);
        tr->name = req->topics.items[i].name;
        tr->partitions.count = req->topics.items[i].partitions.count;
        tr->partitions.items = kp_arena_alloc(a, sizeof *tr->partitions.items * (size_t)(tr->partitions.count + 1));
        for (int32_t j = 0; j < tr->partitions.count; j++) {
            const kp_list_offsets_request_list_offsets_partition_t *rp = &req->topics.items[i].partitions.items[j];
            kp_list_offsets_response_list_offsets_partition_response_t *pr = &tr->partitions.items[j];
            kp_list_offsets_response_list_offsets_partition_response_init(pr);
            pr->partition_index = rp->partition_index;
            pr->offset = rp->timestamp == -2 ? 0 : f->log_end[rp->partition_index];
        }
    }
    return respond(fd, KP_API_LIST_OFFSETS, ver, corr, &r, -1);
}

static int answer_create_topics(int fd, int16_t ver, int32_t corr, const kp_create_topics_request_t *req, kp_arena_t *a) {
    kp_create_topics_response_t r;
    kp_create_topics_response_init(&r);
    kp_create_topics_response_creatable_topic_result_t t;
    kp_create_topics_response_creatable_topic_result_init(&t);
    t.name = req->topics.items[0].name;
    t.error_code = KP_ERROR_TOPIC_ALREADY_EXISTS;
    t.error_message = cl_str("it is there already");
    r.topics.items = &t;
    r.topics.count = 1;
    return respond(fd, KP_API_CREATE_TOPICS, ver, corr, &r, -1);
}

/* JoinGroup: the first call (no member id) gets MEMBER_ID_REQUIRED and the
 * id "m-1"; the second makes m-1 the leader of {m-1, m-0}. */
static int answer_join(fake_t *f, int fd, int16_t ver, int32_t corr, const kp_join_group_request_t *req, kp_arena_t *a) {
    f->joins++;
    kp_join_group_response_t r;
    kp_join_group_response_init(&r);
    r.member_id = cl_str("m-1");
    if (req->member_id.len == 0) {
        r.error_code = KP_ERROR_MEMBER_ID_REQUIRED;
        return respond(fd, KP_API_JOIN_GROUP, ver, corr, &r, -1);
    }
    ck_assert(cl_str_eq(req->protocol_type, "consumer"));
    ck_assert_int_eq(req->protocols.count, 1);
    ck_assert(cl_str_eq(req->protocols.items[0].name, "range"));
    r.generation_id = 7;
    r.protocol_name = cl_str("range");
    r.leader = cl_str("m-1");
    r.members.count = 2;
    r.members.items = kp_arena_alloc(a, sizeof *r.members.items * 2);
    kp_join_group_response_join_group_response_member_init(&r.members.items[0]);
    kp_join_group_response_join_group_response_member_init(&r.members.items[1]);
    r.members.items[0].member_id = cl_str("m-1"); /* unsorted on purpose */
    r.members.items[0].metadata = req->protocols.items[0].metadata;
    r.members.items[1].member_id = cl_str("m-0");
    r.members.items[1].metadata = req->protocols.items[0].metadata;
    return respond(fd, KP_API_JOIN_GROUP, ver, corr, &r, -1);
}

static int answer_sync(fake_t *f, int fd, int16_t ver, int32_t corr, const kp_sync_group_request_t *req, kp_arena_t *a) {
    kp_sync_group_response_t r;
    kp_sync_group_response_init(&r);
    ck_assert_int_eq(req->generation_id, 7);
    f->nsync = req->assignments.count;
    for (int32_t i = 0; i < req->assignments.count && i < 4; i++) {
        const kp_sync_group_request_sync_group_request_assignment_t *as = &req->assignments.items[i];
        cl_strz(as->member_id, f->sync_members[i], sizeof f->sync_members[i]);
        kp_rd_t rd;
        kp_rd_init(&rd, as->assignment.p, as->assignment.len);
        int16_t v = -1;
        kp_consumer_protocol_assignment_t asg;
        ck_assert_int_eq(kp_rd_i16(&rd, &v), KP_OK);
        ck_assert_int_eq(v, 0);
        ck_assert_int_eq(kp_consumer_protocol_assignment_decode(&rd, 0, &asg, a), KP_OK);
        ck_assert_int_eq(asg.assigned_partitions.count, 1);
        f->sync_count[i] = asg.assigned_partitions.items[0].partitions.count;
        f->sync_first[i] = f->sync_count[i] ? asg.assigned_partitions.items[0].partitions.items[0] : -1;
        if (cl_str_eq(as->member_id, "m-1")) r.assignment = as->assignment;
    }
    return respond(fd, KP_API_SYNC_GROUP, ver, corr, &r, -1);
}

static int answer_commit(fake_t *f, int fd, int16_t ver, int32_t corr, const kp_offset_commit_request_t *req, kp_arena_t *a) {
    f->commit_generation = req->generation_id_or_member_epoch;
    cl_strz(req->member_id, f->commit_member, sizeof f->commit_member);
    kp_offset_commit_response_t r;
    kp_offset_commit_response_init(&r);
    r.topics.count = req->topics.count;
    r.topics.items = kp_arena_alloc(a, sizeof *r.topics.items * (size_t)(req->topics.count + 1));
    for (int32_t i = 0; i < req->topics.count; i++) {
        kp_offset_commit_response_offset_commit_response_topic_init(&r.topics.items[i]);
        r.topics.items[i].name = req->topics.items[i].name;
        r.topics.items[i].partitions.count = req->topics.items[i].partitions.count;
        r.topics.items[i].partitions.items = kp_arena_alloc(a, sizeof *r.topics.items[i].partitions.items * (size_t)(r.topics.items[i].partitions.count + 1));
        for (int32_t j = 0; j < req->topics.items[i].partitions.count; j++) {
            const kp_offset_commit_request_offset_commit_request_partition_t *p = &req->topics.items[i].partitions.items[j];
            kp_offset_commit_response_offset_commit_response_partition_init(&r.topics.items[i].partitions.items[j]);
            r.topics.items[i].partitions.items[j].partition_index = p->partition_index;
            if (p->partition_index >= 0 && p->partition_index < FAKE_PARTS) f->commit_offsets[p->partition_index] = p->committed_offset;
        }
    }
    return respond(fd, KP_API_OFFSET_COMMIT, ver, corr, &r, -1);
}

/* One request from fd: 0 answered, -1 close the connection. */
/* Two transactions; "Bogus" as a state filter comes back unknown. */
static int answer_list_txns(fake_t *f, int fd, int16_t ver, int32_t corr, const kp_list_transactions_request_t *req,
                            kp_arena_t *a) {
    f->list_calls++;
    f->list_states = req->state_filters.count;
    f->list_pids = req->producer_id_filters.count;
    f->list_pid0 = req->producer_id_filters.count > 0 ? req->producer_id_filters.items[0] : -1;
    kp_list_transactions_response_t r;
    kp_list_transactions_response_init(&r);
    static kp_list_transactions_response_transaction_state_t v[2];
    static kp_str_t bogus;
    bogus = cl_str("Bogus");
    for (int i = 0; i < 2; i++) kp_list_transactions_response_transaction_state_init(&v[i]);
    v[0].transactional_id = cl_str("b-txn"), v[0].producer_id = 7, v[0].transaction_state = cl_str("Ongoing");
    v[1].transactional_id = cl_str("a-txn"), v[1].producer_id = 8, v[1].transaction_state = cl_str("CompleteCommit");
    r.transaction_states.items = v;
    r.transaction_states.count = 2;
    for (int32_t i = 0; i < req->state_filters.count; i++)
        if (cl_str_eq(req->state_filters.items[i], "Bogus")) { r.unknown_state_filters.items = &bogus; r.unknown_state_filters.count = 1; }
    (void)a;
    return respond(fd, KP_API_LIST_TRANSACTIONS, ver, corr, &r, -1);
}

/* "nope" is unknown; others are Ongoing on t-0 and t-1 (pid 7, epoch 3). */
static int answer_describe_txns(fake_t *f, int fd, int16_t ver, int32_t corr,
                                const kp_describe_transactions_request_t *req, kp_arena_t *a) {
    f->txn_calls++;
    kp_describe_transactions_response_t r;
    kp_describe_transactions_response_init(&r);
    int32_t n = req->transactional_ids.count;
    r.transaction_states.items = kp_arena_alloc(a, sizeof *r.transaction_states.items * (size_t)(n + 1));
    r.transaction_states.count = n;
    static int32_t parts[] = { 0, 1 };
    static kp_describe_transactions_response_topic_data_t td;
    kp_describe_transactions_response_topic_data_init(&td);
    td.topic = cl_str("t");
    td.partitions.items = parts;
    td.partitions.count = 2;
    for (int32_t i = 0; i < n; i++) {
        kp_describe_transactions_response_transaction_state_t *o = &r.transaction_states.items[i];
        kp_describe_transactions_response_transaction_state_init(o);
        o->transactional_id = req->transactional_ids.items[i];
        o->transaction_state = cl_str("");
        if (cl_str_eq(req->transactional_ids.items[i], "nope")) { o->error_code = KP_ERROR_TRANSACTIONAL_ID_NOT_FOUND; continue; }
        if (f->txn_errors > 0) { f->txn_errors--; o->error_code = KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS; continue; }
        o->transaction_state = cl_str("Ongoing");
        o->producer_id = 7;
        o->producer_epoch = 3;
        o->transaction_timeout_ms = 60000;
        o->transaction_start_time_ms = 12345;
        o->topics.items = &td;
        o->topics.count = 1;
    }
    return respond(fd, KP_API_DESCRIBE_TRANSACTIONS, ver, corr, &r, f->txn_truncate_to);
}

/* One producer per asked partition p of "t": pid 7, epoch 3, last sequence 10 * p. */
static int answer_describe_producers(fake_t *f, int fd, int16_t ver, int32_t corr,
                                     const kp_describe_producers_request_t *req, kp_arena_t *a) {
    f->producers_calls++;
    kp_describe_producers_response_t r;
    kp_describe_producers_response_init(&r);
    int32_t nt = req->topics.count;
    r.topics.items = kp_arena_alloc(a, sizeof *r.topics.items * (size_t)(nt + 1));
    r.topics.count = nt;
    for (int32_t i = 0; i < nt; i++) {
        const kp_describe_producers_request_topic_request_t *t = &req->topics.items[i];
        kp_describe_producers_response_topic_response_t *o = &r.topics.items[i];
        kp_describe_producers_response_topic_response_init(o);
        o->name = t->name;
        o->partitions.items = kp_arena_alloc(a, sizeof *o->partitions.items * (size_t)(t->partition_indexes.count + 1));
        o->partitions.count = t->partition_indexes.count;
        for (int32_t k = 0; k < t->partition_indexes.count; k++) {
            kp_describe_producers_response_partition_response_t *p = &o->partitions.items[k];
            kp_describe_producers_response_partition_response_init(p);
            p->partition_index = t->partition_indexes.items[k];
            if (f->txn_errors > 0) { f->txn_errors--; p->error_code = KP_ERROR_NOT_LEADER_OR_FOLLOWER; continue; }
            kp_describe_producers_response_producer_state_t *ps = kp_arena_alloc(a, sizeof *ps);
            kp_describe_producers_response_producer_state_init(ps);
            ps->producer_id = 7;
            ps->producer_epoch = 3;
            ps->last_sequence = 10 * p->partition_index;
            ps->current_txn_start_offset = -1;
            p->active_producers.items = ps;
            p->active_producers.count = 1;
        }
    }
    return respond(fd, KP_API_DESCRIBE_PRODUCERS, ver, corr, &r, -1);
}

static int serve_one(fake_t *f, int fd) {
    uint8_t szb[4];
    if (recv_all(fd, szb, 4) != 0) return -1;
    uint32_t n = kp_load_be32(szb);
    if (n > (64u << 20)) return -1;
    uint8_t *frame = malloc(n);
    if (recv_all(fd, frame, n) != 0) { free(frame); return -1; }
    kp_arena_t a;
    kp_arena_init(&a, (size_t)64 << 20);
    kp_request_header_t h;
    void *body = NULL;
    int rc = -1;
    ck_assert_int_eq(kp_request_decode(frame, n, &h, &body, &a), KP_OK);
    pthread_mutex_lock(&f->mu);
    switch (h.api_key) {
    case KP_API_API_VERSIONS: rc = answer_api_versions(fd, h.api_version, h.correlation_id, &a); break;
    case KP_API_METADATA: rc = answer_metadata(f, fd, h.api_version, h.correlation_id, &a); break;
    case KP_API_PRODUCE: rc = answer_produce(f, fd, h.api_version, h.correlation_id, body, &a); break;
    case KP_API_FETCH: rc = answer_fetch(f, fd, h.api_version, h.correlation_id, body, &a); break;
    case KP_API_LIST_OFFSETS: rc = answer_list_offsets(f, fd, h.api_version, h.correlation_id, body, &a); break;
    case KP_API_CREATE_TOPICS: rc = answer_create_topics(fd, h.api_version, h.correlation_id, body, &a); break;
    case KP_API_JOIN_GROUP: rc = answer_join(f, fd, h.api_version, h.correlation_id, body, &a); break;
    case KP_API_SYNC_GROUP: rc = answer_sync(f, fd, h.api_version, h.correlation_id, body, &a); break;
    case KP_API_OFFSET_COMMIT: rc = answer_commit(f, fd, h.api_version, h.correlation_id, body, &a); break;
    case KP_API_LIST_TRANSACTIONS: rc = answer_list_txns(f, fd, h.api_version, h.correlation_id, body, &a); break;
    case KP_API_DESCRIBE_TRANSACTIONS: rc = answer_describe_txns(f, fd, h.api_version, h.correlation_id, body, &a); break;
    case KP_API_DESCRIBE_PRODUCERS: rc = answer_describe_producers(f, fd, h.api_version, h.correlation_id, body, &a); break;
    case KP_API_FIND_COORDINATOR: {
        kp_find_coordinator_response_t r;
        kp_find_coordinator_response_init(&r);
        f->coord_key_type = ((const kp_find_coordinator_request_t *)body)->key_type;
        r.node_id = 1;
        r.host = cl_str("127.0.0.1");
        r.port = f->port;
        rc = respond(fd, h.api_key, h.api_version, h.correlation_id, &r, -1);
        break;
    }
    case KP_API_HEARTBEAT: {
        kp_heartbeat_response_t r;
        kp_heartbeat_response_init(&r);
        r.error_code = KP_ERROR_REBALANCE_IN_PROGRESS;
        rc = respond(fd, h.api_key, h.api_version, h.correlation_id, &r, -1);
        break;
    }
    case KP_API_LEAVE_GROUP: {
        kp_leave_group_response_t r;
        kp_leave_group_response_init(&r);
        rc = respond(fd, h.api_key, h.api_version, h.correlation_id, &r, -1);
        break;
    }
    case KP_API_INIT_PRODUCER_ID: {
        kp_init_producer_id_response_t r;
        kp_init_producer_id_response_init(&r);
        r.producer_id = 4242;
        r.producer_epoch = 0;
        rc = respond(fd, h.api_key, h.api_version, h.correlation_id, &r, -1);
        break;
    }
    default: break;
    }
    pthread_mutex_unlock(&f->mu);
    kp_arena_free(&a);
    free(frame);
    return rc;
}

static void *fake_main(void *arg) {
    fake_t *f = arg;
    struct pollfd pfd[FAKE_CONNS + 1];
    int nconn = 0;
    pfd[0].fd = f->lfd;
    pfd[0].events = POLLIN;
    while (!f->stop) {
        if (poll(pfd, (nfds_t)nconn + 1, 50) <= 0) continue;
        if ((pfd[0].revents & POLLIN) && nconn < FAKE_CONNS) {
            int cfd = accept(f->lfd, NULL, NULL);
            if (cfd >= 0) { pfd[++nconn].fd = cfd; pfd[nconn].events = POLLIN; pfd[nconn].revents = 0; }
        }
        for (int i = 1; i <= nconn; i++) {
            if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            if (serve_one(f, pfd[i].fd) != 0) {
                close(pfd[i].fd);
                pfd[i] = pfd[nconn--];
                i--;
            }
        }
    }
    for (int i = 1; i <= nconn; i++) close(pfd[i].fd);
    return NULL;
}

static fake_t *fake_start(void) {
    fake_t *f = calloc(1, sizeof *f);
    f->metadata_truncate_to = -1;
    f->txn_truncate_to = -1;
    pthread_mutex_init(&f->mu, NULL);
    for (int i = 0; i < FAKE_PARTS; i++) f->log[i] = malloc(FAKE_LOG_BYTES);
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = 0 };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(f->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(f->lfd, 16), 0);
    socklen_t sl = sizeof sa;
    ck_assert_int_eq(getsockname(f->lfd, (struct sockaddr *)&sa, &sl), 0);
    f->port = ntohs(sa.sin_port);
    ck_assert_int_eq(pthread_create(&f->th, NULL, fake_main, f), 0);
    return f;
}

static void fake_stop(fake_t *f) {
    f->stop = 1;
    pthread_join(f->th, NULL);
    close(f->lfd);
    for (int i = 0; i < FAKE_PARTS; i++) free(f->log[i]);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

static void open_client(cl_client_t *c, fake_t *f) {
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", f->port);
    cl_err_t e;
    ck_assert_int_eq(cl_client_open(c, addr, "test", 5000, &e), CL_OK);
    c->retry.backoff_ms = 1;
    c->retry.backoff_max_ms = 4;
}

/* ---- tests ---------------------------------------------------------------- */

START_TEST(test_produce_batches_idempotent_compressed) {
    fake_t *f = fake_start();
    cl_client_t c;
    open_client(&c, f);
    cl_producer_opts_t o = cl_producer_opts_default();
    o.codec = KP_CODEC_LZ4;
    o.idempotent = true;
    o.batch_bytes_max = 4096;
    cl_producer_t p;
    cl_err_t e;
    ck_assert_int_eq(cl_producer_open(&p, &c, "t", &o, &e), CL_OK);
    int per_part[FAKE_PARTS] = { 0 };
    char key[32], val[128];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof key, "key-%d", i % 17);
        snprintf(val, sizeof val, "value-%04d-%s", i, "padding-padding-padding-padding-padding-padding");
        kp_bytes_t k = { (const uint8_t *)key, strlen(key) }, v = { (const uint8_t *)val, strlen(val) };
        ck_assert_int_eq(cl_producer_send(&p, -1, k, v, NULL, 0, -1, &e), CL_OK);
        per_part[cl_partition_for_key(key, strlen(key), FAKE_PARTS)]++;
    }
    ck_assert_int_eq(cl_producer_flush(&p, &e), CL_OK);
    ck_assert_int_eq(p.acked_records, 1000);
    ck_assert_int_eq(p.failed_records, 0);
    /* several batches, each within the bound, lz4, pid 4242, sequences contiguous per partition */
    ck_assert_int_gt(f->nbatches, 4);
    int32_t next_seq[FAKE_PARTS] = { 0 };
    int64_t total = 0;
    for (int i = 0; i < f->nbatches; i++) {
        ck_assert_int_eq(f->batch_codec[i], KP_CODEC_LZ4);
        ck_assert(f->batch_pid[i] == 4242);
        ck_assert_int_eq(f->batch_seq[i], next_seq[f->batch_partition[i]]);
        next_seq[f->batch_partition[i]] += f->batch_records[i];
        total += f->batch_records[i];
    }
    ck_assert_int_eq(total, 1000);
    for (int i = 0; i < FAKE_PARTS; i++) ck_assert_int_eq(f->log_end[i], per_part[i]);
    cl_producer_close(&p);
    cl_client_close(&c);
    fake_stop(f);
}
END_TEST

typedef struct seen {
    int n;
    int64_t last_offset[FAKE_PARTS];
    bool order_ok, content_ok;
} seen_t;

static bool on_msg(void *ctx, const cl_msg_t *m) {
    seen_t *s = ctx;
    if (m->offset != s->last_offset[m->partition] + 1) s->order_ok = false;
    s->last_offset[m->partition] = m->offset;
    char want[64];
    snprintf(want, sizeof want, "v%d", (int)(m->offset * FAKE_PARTS + m->partition));
    if (m->value.len != strlen(want) || memcmp(m->value.p, want, m->value.len) != 0) s->content_ok = false;
    kp_rd_t r;
    kp_rd_init(&r, m->headers.p, m->headers.len);
    kp_str_t hk;
    kp_bytes_t hv;
    if (m->headers_count != 1 || kp_record_header_next(&r, &hk, &hv) != 1 || !cl_str_eq(hk, "h")) s->content_ok = false;
    s->n++;
    return true;
}

START_TEST(test_consume_what_was_produced) {
    fake_t *f = fake_start();
    cl_client_t c;
    open_client(&c, f);
    cl_producer_opts_t o = cl_producer_opts_default();
    o.codec = KP_CODEC_ZSTD;
    o.batch_bytes_max = 2048;
    cl_producer_t p;
    cl_err_t e;
    ck_assert_int_eq(cl_producer_open(&p, &c, "t", &o, &e), CL_OK);
    kp_header_in_t h = { cl_str("h"), { (const uint8_t *)"x", 1 } };
    /* value v<n> goes to partition n % 2 at offset n / 2 */
    for (int i = 0; i < 500; i++) {
        char val[32];
        snprintf(val, sizeof val, "v%d", i);
        kp_bytes_t v = { (const uint8_t *)val, strlen(val) };
        ck_assert_int_eq(cl_producer_send(&p, i % FAKE_PARTS, kp_slice_null(), v, &h, 1, -1, &e), CL_OK);
    }
    ck_assert_int_eq(cl_producer_flush(&p, &e), CL_OK);
    cl_producer_close(&p);
    cl_consumer_t k;
    ck_assert_int_eq(cl_consumer_open(&k, &c, "t", &e), CL_OK);
    ck_assert_int_eq(cl_consumer_seek(&k, CL_OFFSET_EARLIEST, &e), CL_OK);
    seen_t s = { 0, { -1, -1 }, true, true };
    for (int round = 0; round < 10 && !cl_consumer_at_end(&k); round++) ck_assert_int_eq(cl_consumer_poll(&k, on_msg, &s, NULL, &e), CL_OK);
    ck_assert(cl_consumer_at_end(&k));
    ck_assert_int_eq(s.n, 500);
    ck_assert(s.order_ok);
    ck_assert(s.content_ok);
    /* from the middle: only what follows */
    k.pos[0] = 200;
    k.pos[1] = 249;
    s = (seen_t){ 0, { 199, 248 }, true, true };
    ck_assert_int_eq(cl_consumer_poll(&k, on_msg, &s, NULL, &e), CL_OK);
    ck_assert_int_eq(s.n, 50 + 1);
    cl_consumer_close(&k);
    cl_client_close(&c);
    fake_stop(f);
}
END_TEST

static bool count_only(void *ctx, const cl_msg_t *m) {
    (void)m;
    ((seen_t *)ctx)->n++;
    return true;
}

static int produce_one(cl_client_t *c, cl_producer_t *p, cl_err_t *e) {
    cl_producer_opts_t o = cl_producer_opts_default();
    o.idempotent = true;
    int rc = cl_producer_open(p, c, "t", &o, e);
    ck_assert_int_eq(rc, CL_OK);
    kp_bytes_t v = { (const uint8_t *)"x", 1 };
    ck_assert_int_eq(cl_producer_send(p, 1, kp_slice_null(), v, NULL, 0, -1, e), CL_OK);
    return cl_producer_flush(p, e);
}

START_TEST(test_retriable_error_retried_same_sequence) {
    fake_t *f = fake_start();
    f->produce_errors[0] = KP_ERROR_NOT_LEADER_OR_FOLLOWER;
    f->produce_errors[1] = KP_ERROR_REQUEST_TIMED_OUT;
    f->nproduce_errors = 2;
    cl_client_t c;
    open_client(&c, f);
    cl_producer_t p;
    cl_err_t e;
    ck_assert_int_eq(produce_one(&c, &p, &e), CL_OK);
    ck_assert_int_eq(f->produce_requests, 3);
    ck_assert_int_eq(f->nbatches, 1);          /* stored once */
    ck_assert_int_eq(f->batch_seq[0], 0);
    ck_assert_int_eq(p.acked_records, 1);
    cl_producer_close(&p);
    cl_client_close(&c);
    fake_stop(f);
}
END_TEST

START_TEST(test_fatal_error_named_not_retried) {
    fake_t *f = fake_start();
    f->produce_errors[0] = KP_ERROR_MESSAGE_TOO_LARGE;
    f->nproduce_errors = 1;
    cl_client_t c;
    open_client(&c, f);
    cl_producer_t p;
    cl_err_t e;
    ck_assert_int_eq(produce_one(&c, &p, &e), CL_E_KAFKA);
    ck_assert_int_eq(e.kafka_code, KP_ERROR_MESSAGE_TOO_LARGE);
    ck_assert_msg(strstr(e.msg, "MESSAGE_TOO_LARGE") && strstr(e.msg, "t-1"), "%s", e.msg);
    ck_assert_int_eq(f->produce_requests, 1);
    ck_assert_int_eq(p.failed_records, 1);
    cl_producer_close(&p);
    cl_client_close(&c);
    fake_stop(f);
}
END_TEST

START_TEST(test_dropped_connection_retried_then_bounded) {
    fake_t *f = fake_start();
    f->close_on_produce = 1;
    cl_client_t c;
    open_client(&c, f);
    cl_producer_t p;
    cl_err_t e;
    ck_assert_int_eq(produce_one(&c, &p, &e), CL_OK);
    ck_assert_int_eq(f->produce_requests, 2);
    ck_assert_int_eq(f->nbatches, 1);
    cl_producer_close(&p);
    /* always dropped: exactly attempts_max tries, then a network error */
    f->close_on_produce = -1;
    f->produce_requests = 0;
    ck_assert_int_eq(produce_one(&c, &p, &e), CL_E_NETWORK);
    ck_assert_int_eq(f->produce_requests, c.retry.attempts_max);
    ck_assert_msg(strstr(e.msg, "Produce") && strstr(e.msg, "127.0.0.1"), "%s", e.msg);
    cl_producer_close(&p);
    cl_client_close(&c);
    fake_stop(f);
}
END_TEST

START_TEST(test_admin_error_message) {
    fake_t *f = fake_start();
    cl_client_t c;
    open_client(&c, f);
    cl_err_t e;
    ck_assert_int_eq(cl_admin_create_topic(&c, "t", 3, 1, NULL, 0, &e), CL_E_KAFKA);
    ck_assert_int_eq(e.kafka_code, KP_ERROR_TOPIC_ALREADY_EXISTS);
    ck_assert_str_eq(e.msg, "TOPIC_ALREADY_EXISTS: topic 't': it is there already");
    const char *bad[] = { "novalue" };
    ck_assert_int_eq(cl_admin_create_topic(&c, "t", 3, 1, bad, 1, &e), CL_E_USAGE);
    cl_client_close(&c);
    fake_stop(f);
}
END_TEST

/* A Metadata response cut at every byte is an error, never a crash. */
START_TEST(test_truncated_metadata_every_byte) {
    fake_t *f = fake_start();
    cl_client_t c;
    open_client(&c, f);
    cl_err_t e;
    ck_assert_int_eq(cl_client_metadata(&c, NULL, 0, &e), CL_OK);
    c.retry.attempts_max = 1;
    int fails = 0;
    for (int cut = 0; cut < 120; cut++) {
        f->metadata_truncate_to = cut;
        int rc = cl_client_metadata(&c, NULL, 0, &e);
        if (rc != CL_OK) {
            fails++;
            ck_assert_msg(rc == CL_E_PROTO, "cut %d: status %d (%s)", cut, rc, e.msg);
        }
    }
    /* the full response is longer than 120 bytes: every cut must fail */
    ck_assert_int_eq(fails, 120);
    f->metadata_truncate_to = -1;
    ck_assert_int_eq(cl_client_metadata(&c, NULL, 0, &e), CL_OK); /* reconnects */
    ck_assert_ptr_nonnull(cl_md_topic(&c, "t"));
    cl_client_close(&c);
    fake_stop(f);
}
END_TEST

START_TEST(test_unknown_topic) {
    fake_t *f = fake_start();
    cl_client_t c;
    open_client(&c, f);
    cl_err_t e;
    cl_producer_t p;
    cl_producer_opts_t o = cl_producer_opts_default();
    ck_assert_int_eq(cl_producer_open(&p, &c, "nope", &o, &e), CL_E_KAFKA);
    ck_assert_int_eq(e.kafka_code, KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION);
    cl_producer_close(&p);
    o.acks = 1;
    o.idempotent = true;
    ck_assert_int_eq(cl_producer_open(&p, &c, "t", &o, &e), CL_E_USAGE);
    cl_producer_close(&p);
    cl_client_close(&c);
    fake_stop(f);
}
END_TEST

/* A broker that cuts a batch at partition_max_bytes (no KIP-74): the
 * consumer asks for more, up to its bound, instead of stalling. */
START_TEST(test_fetch_grows_for_a_huge_batch) {
    fake_t *f = fake_start();
    f->fetch_cut_at_max = 1;
    cl_client_t c;
    open_client(&c, f);
    cl_producer_opts_t o = cl_producer_opts_default();
    o.batch_bytes_max = (size_t)4 << 20;
    cl_producer_t p;
    cl_err_t e;
    ck_assert_int_eq(cl_producer_open(&p, &c, "t", &o, &e), CL_OK);
    static uint8_t big[1000];
    memset(big, 'z', sizeof big);
    for (int i = 0; i < 3000; i++) {
        kp_bytes_t v = { big, sizeof big };
        ck_assert_int_eq(cl_producer_send(&p, 0, kp_slice_null(), v, NULL, 0, -1, &e), CL_OK);
    }
    ck_assert_int_eq(cl_producer_flush(&p, &e), CL_OK);
    ck_assert_int_eq(f->nbatches, 1);
    ck_assert_uint_gt(f->batch_size[0], (size_t)2 << 20);
    cl_producer_close(&p);
    cl_consumer_t k;
    ck_assert_int_eq(cl_consumer_open(&k, &c, "t", &e), CL_OK);
    ck_assert_int_eq(cl_consumer_seek(&k, CL_OFFSET_EARLIEST, &e), CL_OK);
    seen_t s = { 0, { -1, -1 }, true, true };
    int64_t total = 0;
    for (int round = 0; round < 10 && !cl_consumer_at_end(&k); round++) {
        int64_t got = 0;
        ck_assert_int_eq(cl_consumer_poll(&k, count_only, &s, &got, &e), CL_OK);
        total += got;
    }
    ck_assert_int_eq(total, 3000);
    ck_assert_int_eq(f->fetch_max_seen, 4 << 20);
    cl_consumer_close(&k);
    cl_client_close(&c);
    fake_stop(f);
}
END_TEST

START_TEST(test_group_join_range_leader) {
    fake_t *f = fake_start();
    cl_client_t c;
    open_client(&c, f);
    cl_err_t e;
    cl_group_t g;
    ck_assert_int_eq(cl_group_init(&g, &c, "grp", "t", FAKE_PARTS, &e), CL_OK);
    ck_assert_int_eq(cl_group_join(&g, &e), CL_OK);
    ck_assert_int_eq(f->joins, 2);            /* MEMBER_ID_REQUIRED, then joined */
    ck_assert_str_eq(g.member_id, "m-1");
    ck_assert_int_eq(g.generation, 7);
    ck_assert(g.leader);
    /* the leader sorted the members: m-0 gets partition 0, m-1 partition 1 */
    ck_assert_int_eq(f->nsync, 2);
    for (int i = 0; i < 2; i++) {
        int want = !strcmp(f->sync_members[i], "m-0") ? 0 : 1;
        ck_assert_int_eq(f->sync_first[i], want);
        ck_assert_int_eq(f->sync_count[i], 1);
    }
    ck_assert_int_eq(g.nassigned, 1);
    ck_assert_int_eq(g.assigned[0], 0);
    ck_assert_int_eq(g.assigned[1], 1);
    int64_t offs[FAKE_PARTS] = { -1, 42 };
    ck_assert_int_eq(cl_group_commit(&g, offs, &e), CL_OK);
    ck_assert_int_eq(f->commit_generation, 7);
    ck_assert_str_eq(f->commit_member, "m-1");
    ck_assert_int_eq(f->commit_offsets[1], 42);
    g.last_heartbeat_us = 0; /* due now */
    ck_assert_int_eq(cl_group_heartbeat(&g, &e), CL_GROUP_REJOIN);
    cl_group_close(&g);
    cl_client_close(&c);
    fake_stop(f);
}
END_TEST

/* ---- transactions and producers (cl_txn.h) ------------------------------------ */

typedef struct {
    int calls;
    char ids[4][32];
    int64_t pids[4];
    int n;
    int unknown;
} list_seen_t;

static void on_txn_list(void *ctx, int32_t node, const kp_list_transactions_response_t *r) {
    list_seen_t *s = ctx;
    s->calls++;
    ck_assert_int_eq(node, 1);
    s->unknown += r->unknown_state_filters.count;
    for (int32_t i = 0; i < r->transaction_states.count && s->n < 4; i++, s->n++) {
        cl_strz(r->transaction_states.items[i].transactional_id, s->ids[s->n], sizeof s->ids[s->n]);
        s->pids[s->n] = r->transaction_states.items[i].producer_id;
    }
}

START_TEST(test_txn_list_and_describe) {
    fake_t *f = fake_start();
    cl_client_t c;
    open_client(&c, f);
    cl_err_t e;
    const char *states[] = { "Ongoing", "Bogus" };
    int64_t pids[] = { 7 };
    cl_txn_filter_t flt = { states, 2, pids, 1 };
    list_seen_t ls = { 0 };
    ck_assert_int_eq(cl_admin_list_transactions(&c, &flt, on_txn_list, &ls, &e), CL_OK);
    ck_assert_int_eq(ls.calls, 1);              /* one broker in the fake's metadata */
    ck_assert_int_eq(f->list_states, 2);        /* the filters reached the broker */
    ck_assert_int_eq(f->list_pids, 1);
    ck_assert(f->list_pid0 == 7);
    ck_assert_int_eq(ls.unknown, 1);
    ck_assert_int_eq(ls.n, 2);
    ck_assert_str_eq(ls.ids[0], "b-txn");
    ck_assert(ls.pids[1] == 8);
    flt.nstates = CL_TXN_FILTERS_MAX + 1;       /* bound checked before any request */
    ck_assert_int_eq(cl_admin_list_transactions(&c, &flt, on_txn_list, &ls, &e), CL_E_USAGE);
    ck_assert_int_eq(f->list_calls, 1);

    kp_arena_t a;
    kp_arena_init(&a, (size_t)1 << 20);
    const kp_describe_transactions_response_transaction_state_t *t = NULL;
    int32_t coord = -1;
    f->txn_errors = 2;                          /* COORDINATOR_LOAD_IN_PROGRESS twice, then the answer */
    ck_assert_int_eq(cl_admin_describe_transaction(&c, "x", &a, &t, &coord, &e), CL_OK);
    ck_assert_int_eq(f->txn_calls, 3);
    ck_assert_int_eq(f->coord_key_type, 1);     /* FindCoordinator for a transactional id */
    ck_assert_int_eq(coord, 1);
    ck_assert(cl_str_eq(t->transaction_state, "Ongoing"));
    ck_assert(t->producer_id == 7);
    ck_assert_int_eq(t->producer_epoch, 3);
    ck_assert_int_eq(t->topics.count, 1);
    ck_assert_int_eq(t->topics.items[0].partitions.count, 2);
    kp_arena_reset(&a);
    ck_assert_int_eq(cl_admin_describe_transaction(&c, "nope", &a, &t, NULL, &e), CL_E_KAFKA);
    ck_assert_int_eq(e.kafka_code, KP_ERROR_TRANSACTIONAL_ID_NOT_FOUND);
    ck_assert_msg(strstr(e.msg, "TRANSACTIONAL_ID_NOT_FOUND") && strstr(e.msg, "'nope'"), "%s", e.msg);
    ck_assert_int_eq(f->txn_calls, 4);          /* not retriable: asked once */
    f->txn_errors = 100;                        /* a coordinator that never loads: bounded */
    kp_arena_reset(&a);
    ck_assert_int_eq(cl_admin_describe_transaction(&c, "x", &a, &t, NULL, &e), CL_E_KAFKA);
    ck_assert_int_eq(e.kafka_code, KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS);
    ck_assert_int_eq(f->txn_calls, 4 + c.retry.attempts_max);
    f->txn_errors = 0;
    kp_arena_free(&a);
    cl_client_close(&c);
    fake_stop(f);
}
END_TEST

START_TEST(test_txn_describe_truncated_every_byte) {
    fake_t *f = fake_start();
    cl_client_t c;
    open_client(&c, f);
    c.retry.attempts_max = 1;
    cl_err_t e;
    kp_arena_t a;
    kp_arena_init(&a, (size_t)1 << 20);
    const kp_describe_transactions_response_transaction_state_t *t = NULL;
    /* every cut shorter than the whole answer fails; the first cut that
     * does not is the whole answer (respond() then leaves it alone) */
    int cut = 0, rc = CL_OK;
    for (; cut < 400; cut++) {
        f->txn_truncate_to = cut;
        kp_arena_reset(&a);
        rc = cl_admin_describe_transaction(&c, "x", &a, &t, NULL, &e);
        if (rc == CL_OK) break;
        ck_assert_msg(rc == CL_E_PROTO, "cut %d: status %d (%s)", cut, rc, e.msg);
    }
    ck_assert_int_eq(rc, CL_OK);
    ck_assert_int_gt(cut, 50);    /* id, state, times, one topic with two partitions */
    ck_assert(t->producer_id == 7);
    kp_arena_free(&a);
    cl_client_close(&c);
    fake_stop(f);
}
END_TEST

typedef struct {
    int n;
    int32_t part[8];
    int32_t last_seq[8];
} prod_seen_t;

static void on_prod(void *ctx, int32_t partition, int32_t leader, const kp_describe_producers_response_partition_response_t *p) {
    prod_seen_t *s = ctx;
    ck_assert_int_eq(leader, 1);
    ck_assert_int_eq(p->active_producers.count, 1);
    ck_assert_int_lt(s->n, 8);
    s->part[s->n] = partition;
    s->last_seq[s->n++] = p->active_producers.items[0].last_sequence;
}

START_TEST(test_describe_producers) {
    fake_t *f = fake_start();
    cl_client_t c;
    open_client(&c, f);
    cl_err_t e;
    prod_seen_t s = { 0 };
    f->txn_errors = 1;                          /* NOT_LEADER_OR_FOLLOWER once: metadata again, asked again */
    ck_assert_int_eq(cl_admin_describe_producers(&c, "t", -1, on_prod, &s, &e), CL_OK);
    ck_assert_int_eq(s.n, FAKE_PARTS);
    for (int i = 0; i < FAKE_PARTS; i++) {
        ck_assert_int_eq(s.part[i], i);
        ck_assert_int_eq(s.last_seq[i], 10 * i);
    }
    ck_assert_int_eq(f->producers_calls, FAKE_PARTS + 1);
    s.n = 0;
    ck_assert_int_eq(cl_admin_describe_producers(&c, "t", 1, on_prod, &s, &e), CL_OK);
    ck_assert_int_eq(s.n, 1);
    ck_assert_int_eq(s.part[0], 1);
    int before = f->producers_calls;
    ck_assert_int_eq(cl_admin_describe_producers(&c, "t", FAKE_PARTS, on_prod, &s, &e), CL_E_KAFKA);
    ck_assert_int_eq(e.kafka_code, KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION);
    ck_assert_int_eq(cl_admin_describe_producers(&c, "zz", -1, on_prod, &s, &e), CL_E_KAFKA);
    ck_assert_int_eq(e.kafka_code, KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION);
    ck_assert_msg(strstr(e.msg, "'zz'"), "%s", e.msg);
    ck_assert_int_eq(f->producers_calls, before); /* neither reached the broker */
    f->txn_errors = 100;                        /* a leader that never settles: bounded */
    ck_assert_int_eq(cl_admin_describe_producers(&c, "t", 0, on_prod, &s, &e), CL_E_KAFKA);
    ck_assert_int_eq(e.kafka_code, KP_ERROR_NOT_LEADER_OR_FOLLOWER);
    ck_assert_msg(strstr(e.msg, "t-0"), "%s", e.msg);
    ck_assert_int_eq(f->producers_calls, before + c.retry.attempts_max);
    cl_client_close(&c);
    fake_stop(f);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cl_client");
    TCase *tc = tcase_create("fake_broker");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_produce_batches_idempotent_compressed);
    tcase_add_test(tc, test_consume_what_was_produced);
    tcase_add_test(tc, test_retriable_error_retried_same_sequence);
    tcase_add_test(tc, test_fatal_error_named_not_retried);
    tcase_add_test(tc, test_dropped_connection_retried_then_bounded);
    tcase_add_test(tc, test_admin_error_message);
    tcase_add_test(tc, test_truncated_metadata_every_byte);
    tcase_add_test(tc, test_unknown_topic);
    tcase_add_test(tc, test_group_join_range_leader);
    tcase_add_test(tc, test_fetch_grows_for_a_huge_batch);
    tcase_add_test(tc, test_txn_list_and_describe);
    tcase_add_test(tc, test_txn_describe_truncated_every_byte);
    tcase_add_test(tc, test_describe_producers);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
