/* broker/api/h_describe_topic_partitions.c — DescribeTopicPartitions (75,
 * KIP-966), what Kafka 4 Admin describeTopics sends: the requested topics
 * (none = every topic), sorted by name, with at most
 * min(ResponsePartitionLimit, BK_API_DTP_PARTITION_LIMIT) partitions in one
 * answer; the rest is asked for again from NextCursor (topic, partition).
 * The cursor's topic must be one of the requested ones (INVALID_REQUEST on
 * every topic otherwise, as Kafka). A topic that does not exist answers
 * UNKNOWN_TOPIC_OR_PARTITION and takes none of the limit. Read from this
 * node's image; no ELR (empty lists: skiff elects from the ISR only).
 * Authorization (Kafka): DESCRIBE on each topic; without it a named topic
 * answers TOPIC_AUTHORIZATION_FAILED (whether it exists or not) and takes
 * none of the limit, and a listing of every topic leaves it out. */
#include <stdlib.h>
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/meta/acl.h"
#include "protocol/kp_errors.h"

/* Kafka's max.request.partition.size.limit default: the most partitions
 * one answer carries whatever the client asks. */
#define BK_API_DTP_PARTITION_LIMIT 2000

typedef kp_describe_topic_partitions_response_describe_topic_partitions_response_topic_t dtopic_t;
typedef kp_describe_topic_partitions_response_describe_topic_partitions_response_partition_t dpart_t;

typedef struct {
    kp_str_t name;          /* as requested (or the image's name) */
    const bk_meta_topic_t *t;
    bool denied;            /* no DESCRIBE on it */
} want_t;

static int want_cmp(const void *a, const void *b) {
    const want_t *x = a, *y = b;
    size_t n = x->name.len < y->name.len ? x->name.len : y->name.len;
    int c = n ? memcmp(x->name.p, y->name.p, n) : 0;
    if (c) return c;
    return x->name.len < y->name.len ? -1 : x->name.len > y->name.len;
}

static int32_t *ids_copy(bk_api_req_t *req, const bk_meta_ids_t *ids, int32_t *count, bool offline_only) {
    int32_t *v = bk_api_req_alloc(req, (size_t)ids->n, sizeof *v);
    *count = 0;
    if (!v) return NULL;
    for (int32_t i = 0; i < ids->n; i++) {
        if (offline_only) {
            const bk_meta_broker_t *b = bk_meta_image_broker(&req->node->img, ids->v[i]);
            if (b && !b->fenced) continue;
        }
        v[(*count)++] = ids->v[i];
    }
    return v;
}

static int fill_part(bk_api_req_t *req, const bk_meta_partition_t *p, dpart_t *q) {
    kp_describe_topic_partitions_response_describe_topic_partitions_response_partition_init(q);
    q->partition_index = p->id;
    q->leader_id = p->leader;
    q->leader_epoch = p->leader_epoch;
    q->error_code = p->leader < 0 ? KP_ERROR_LEADER_NOT_AVAILABLE : 0;
    q->replica_nodes.items = ids_copy(req, &p->replicas, &q->replica_nodes.count, false);
    q->isr_nodes.items = ids_copy(req, &p->isr, &q->isr_nodes.count, false);
    q->offline_replicas.items = ids_copy(req, &p->replicas, &q->offline_replicas.count, true);
    static int32_t none[1];
    q->eligible_leader_replicas.items = none;
    q->eligible_leader_replicas.count = 0;
    q->last_known_elr.items = none;
    q->last_known_elr.count = 0;
    return q->replica_nodes.items && q->isr_nodes.items && q->offline_replicas.items ? KP_OK : KP_ERR_NOMEM;
}

static void fill_error(dtopic_t *o, kp_str_t name, int16_t err) {
    kp_describe_topic_partitions_response_describe_topic_partitions_response_topic_init(o);
    o->error_code = err;
    o->name = name;
    o->partitions.count = 0;
}

void bk_api_h_describe_topic_partitions(bk_api_req_t *req) {
    const kp_describe_topic_partitions_request_t *q = req->body;
    const bk_meta_image_t *img = &req->node->img;
    kp_describe_topic_partitions_response_t r;
    kp_describe_topic_partitions_response_init(&r);
    r.next_cursor = NULL;
    bool all = q->topics.count <= 0;
    size_t nw = all ? img->ntopics : (size_t)q->topics.count;
    want_t *w = bk_api_req_alloc(req, nw, sizeof *w);
    dtopic_t *ts = bk_api_req_alloc(req, nw, sizeof *ts);
    if (!w || !ts) { bk_api_req_close(req, "out of memory building DescribeTopicPartitions"); return; }
    size_t nk = 0;
    for (size_t i = 0; i < nw; i++) {
        if (all) {
            const bk_meta_topic_t *t = img->by_name[i];
            if (!bk_api_authorized(req, BK_META_OP_DESCRIBE, BK_META_RES_TOPIC, t->name)) continue;
            w[nk].t = t;
            w[nk].name = bk_api_str(t->name);
            w[nk++].denied = false;
            continue;
        }
        w[nk].name = q->topics.items[i].name;
        char *name = bk_api_req_topic_cstr(req, w[nk].name);
        if (!name) { bk_api_req_close(req, "out of memory building DescribeTopicPartitions"); return; }
        w[nk].denied = !bk_api_authorized(req, BK_META_OP_DESCRIBE, BK_META_RES_TOPIC, name);
        w[nk].t = w[nk].denied ? NULL : bk_meta_image_topic_by_name(img, name);
        nk++;
    }
    nw = nk;
    if (!all) {
        qsort(w, nw, sizeof *w, want_cmp);
        size_t k = 0;      /* a topic named twice is answered once */
        for (size_t i = 0; i < nw; i++)
            if (k == 0 || want_cmp(&w[k - 1], &w[i]) != 0) w[k++] = w[i];
        nw = k;
    }
    /* where to start: the cursor's topic (which must be requested) and partition */
    size_t first = 0;
    int32_t first_part = 0;
    if (q->cursor) {
        want_t key = { q->cursor->topic_name, NULL, false };
        want_t *hit = bsearch(&key, w, nw, sizeof *w, want_cmp);
        if (!hit || q->cursor->partition_index < 0) {
            for (size_t i = 0; i < nw; i++) fill_error(&ts[i], w[i].name, KP_ERROR_INVALID_REQUEST);
            r.topics.items = ts;
            r.topics.count = (int32_t)nw;
            bk_api_req_respond(req, &r);
            return;
        }
        first = (size_t)(hit - w);
        first_part = q->cursor->partition_index;
    }
    int32_t budget = q->response_partition_limit > 0 && q->response_partition_limit < BK_API_DTP_PARTITION_LIMIT
                         ? q->response_partition_limit : BK_API_DTP_PARTITION_LIMIT;
    int32_t nt = 0;
    for (size_t i = first; i < nw; i++) {
        const bk_meta_topic_t *t = w[i].t;
        if (w[i].denied) { fill_error(&ts[nt++], w[i].name, KP_ERROR_TOPIC_AUTHORIZATION_FAILED); continue; }
        if (!t) { fill_error(&ts[nt++], w[i].name, KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION); continue; }
        int32_t from = i == first ? first_part : 0;
        if (from >= t->nparts && t->nparts > 0) continue;   /* a cursor past its end: nothing left of it */
        if (budget == 0) {
            r.next_cursor = bk_api_req_alloc(req, 1, sizeof *r.next_cursor);
            if (!r.next_cursor) { bk_api_req_close(req, "out of memory"); return; }
            kp_describe_topic_partitions_response_cursor_init(r.next_cursor);
            r.next_cursor->topic_name = w[i].name;
            r.next_cursor->partition_index = from;
            break;
        }
        int32_t take = t->nparts - from;
        if (take > budget) take = budget;
        dtopic_t *o = &ts[nt++];
        kp_describe_topic_partitions_response_describe_topic_partitions_response_topic_init(o);
        o->error_code = 0;
        o->name = bk_api_str(t->name);
        memcpy(o->topic_id.b, t->id.b, 16);
        o->is_internal = bk_meta_topic_is_internal(t->name);
        dpart_t *ps = bk_api_req_alloc(req, (size_t)take, sizeof *ps);
        if (!ps) { bk_api_req_close(req, "out of memory"); return; }
        for (int32_t k = 0; k < take; k++)
            if (fill_part(req, &t->parts[from + k], &ps[k]) != KP_OK) { bk_api_req_close(req, "out of memory"); return; }
        o->partitions.items = ps;
        o->partitions.count = take;
        budget -= take;
        if (from + take < t->nparts) {
            r.next_cursor = bk_api_req_alloc(req, 1, sizeof *r.next_cursor);
            if (!r.next_cursor) { bk_api_req_close(req, "out of memory"); return; }
            kp_describe_topic_partitions_response_cursor_init(r.next_cursor);
            r.next_cursor->topic_name = o->name;
            r.next_cursor->partition_index = from + take;
            break;
        }
    }
    r.topics.items = ts;
    r.topics.count = nt;
    bk_api_req_respond(req, &r);
}
