/* Unit tests for the metadata image (broker/image*.c): applying every record
 * type, rejecting invalid records without changing the image, lookups and
 * selections, change notifications for the local node, and snapshot round
 * trips (including truncated and corrupted snapshot bytes). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/meta/image.h"
#include "broker/meta/records.h"

typedef Skiff__Metadata__MetadataRecord rec_t;

/* ---- record builders (independent of the controller's) -------------------- */

static bk_meta_uuid_t uuid_n(uint8_t n) {
    bk_meta_uuid_t u;
    memset(u.b, 0, sizeof u.b);
    u.b[0] = 0xab;
    u.b[15] = n;
    return u;
}

static int apply_rec(bk_meta_image_t *img, rec_t *r, int64_t off) {
    /* through bytes, so that the encoding is exercised too */
    size_t len = skiff__metadata__metadata_record__get_packed_size(r);
    uint8_t *buf = malloc(len + 1);
    ck_assert_ptr_nonnull(buf);
    skiff__metadata__metadata_record__pack(r, buf);
    int rc = bk_meta_image_apply_bytes(img, buf, len, off);
    free(buf);
    return rc;
}

static int reg(bk_meta_image_t *img, int32_t id, const char *rack, bool fenced, int64_t off) {
    Skiff__Metadata__Endpoint ep = SKIFF__METADATA__ENDPOINT__INIT;
    Skiff__Metadata__Endpoint *eps[1] = { &ep };
    ep.listener = "PLAINTEXT";
    ep.host = "127.0.0.1";
    ep.has_port = true;
    ep.port = (uint32_t)(9000 + id);
    uint8_t inc[16] = { 1, (uint8_t)id };
    Skiff__Metadata__BrokerRegistration m = SKIFF__METADATA__BROKER_REGISTRATION__INIT;
    m.has_broker_id = true; m.broker_id = id;
    m.has_incarnation_id = true; m.incarnation_id.len = 16; m.incarnation_id.data = inc;
    m.n_endpoints = 1; m.endpoints = eps;
    m.rack = (char *)rack;
    m.has_fenced = true; m.fenced = fenced;
    rec_t r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_BROKER_REGISTRATION;
    r.broker_registration = &m;
    return apply_rec(img, &r, off);
}

static int topic(bk_meta_image_t *img, const char *name, bk_meta_uuid_t id, int64_t off) {
    Skiff__Metadata__Topic m = SKIFF__METADATA__TOPIC__INIT;
    m.name = (char *)name;
    m.has_topic_id = true; m.topic_id.len = 16; m.topic_id.data = id.b;
    rec_t r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_TOPIC;
    r.topic = &m;
    return apply_rec(img, &r, off);
}

typedef struct { const int32_t *v; size_t n; } iv_t;
#define IV(...) ((iv_t){ (const int32_t[]){ __VA_ARGS__ }, sizeof((const int32_t[]){ __VA_ARGS__ }) / sizeof(int32_t) })
#define IV0 ((iv_t){ NULL, 0 })

static int part(bk_meta_image_t *img, bk_meta_uuid_t id, int32_t p, iv_t reps, iv_t isr, int32_t leader,
                int64_t off) {
    Skiff__Metadata__Partition m = SKIFF__METADATA__PARTITION__INIT;
    m.has_topic_id = true; m.topic_id.len = 16; m.topic_id.data = id.b;
    m.has_partition_id = true; m.partition_id = p;
    m.replicas = (int32_t *)reps.v; m.n_replicas = reps.n;
    m.isr = (int32_t *)isr.v; m.n_isr = isr.n;
    m.has_leader = true; m.leader = leader;
    rec_t r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_PARTITION;
    r.partition = &m;
    return apply_rec(img, &r, off);
}

/* leader: INT32_MIN = unchanged; isr/replicas: NULL v and n == 0 = unchanged
 * unless set_* */
static int change(bk_meta_image_t *img, bk_meta_uuid_t id, int32_t p, int32_t leader, bool set_isr, iv_t isr,
                  bool set_reps, iv_t reps, iv_t adding, iv_t removing, int64_t off) {
    Skiff__Metadata__PartitionChange m = SKIFF__METADATA__PARTITION_CHANGE__INIT;
    m.has_topic_id = true; m.topic_id.len = 16; m.topic_id.data = id.b;
    m.has_partition_id = true; m.partition_id = p;
    if (leader != INT32_MIN) { m.has_leader = true; m.leader = leader; }
    if (set_isr) { m.has_isr_set = true; m.isr_set = true; m.isr = (int32_t *)isr.v; m.n_isr = isr.n; }
    if (set_reps) {
        m.has_replicas_set = true; m.replicas_set = true;
        m.replicas = (int32_t *)reps.v; m.n_replicas = reps.n;
        m.adding_replicas = (int32_t *)adding.v; m.n_adding_replicas = adding.n;
        m.removing_replicas = (int32_t *)removing.v; m.n_removing_replicas = removing.n;
    }
    rec_t r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_PARTITION_CHANGE;
    r.partition_change = &m;
    return apply_rec(img, &r, off);
}

static int removal(bk_meta_image_t *img, bk_meta_uuid_t id, int64_t off) {
    Skiff__Metadata__TopicRemoval m = SKIFF__METADATA__TOPIC_REMOVAL__INIT;
    m.has_topic_id = true; m.topic_id.len = 16; m.topic_id.data = id.b;
    rec_t r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_TOPIC_REMOVAL;
    r.topic_removal = &m;
    return apply_rec(img, &r, off);
}

static int config(bk_meta_image_t *img, int32_t type, const char *rname, const char *name,
                  const char *value, int64_t off) {
    Skiff__Metadata__Config m = SKIFF__METADATA__CONFIG__INIT;
    m.has_resource_type = true; m.resource_type = type;
    m.resource_name = (char *)rname;
    m.name = (char *)name;
    m.value = (char *)value;
    rec_t r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_CONFIG;
    r.config = &m;
    return apply_rec(img, &r, off);
}

static int fence(bk_meta_image_t *img, int32_t id, bool fenced, bool cs, int64_t off) {
    Skiff__Metadata__BrokerFence m = SKIFF__METADATA__BROKER_FENCE__INIT;
    m.has_broker_id = true; m.broker_id = id;
    m.has_fenced = true; m.fenced = fenced;
    m.has_in_controlled_shutdown = true; m.in_controlled_shutdown = cs;
    rec_t r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_BROKER_FENCE;
    r.broker_fence = &m;
    return apply_rec(img, &r, off);
}

static int pid_block(bk_meta_image_t *img, int64_t next, int64_t off) {
    Skiff__Metadata__ProducerIdBlock m = SKIFF__METADATA__PRODUCER_ID_BLOCK__INIT;
    m.has_next_producer_id = true; m.next_producer_id = next;
    rec_t r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_PRODUCER_ID_BLOCK;
    r.producer_id_block = &m;
    return apply_rec(img, &r, off);
}

static bool ids_are(const bk_meta_ids_t *s, iv_t want) {
    if ((size_t)s->n != want.n) return false;
    for (size_t i = 0; i < want.n; i++)
        if (s->v[i] != want.v[i]) return false;
    return true;
}

static uint8_t *snap(const bk_meta_image_t *img, size_t *len) {
    uint8_t *b = NULL;
    ck_assert_int_eq(bk_meta_image_snapshot(img, &b, len), KP_OK);
    return b;
}

static bool same_snapshot(const bk_meta_image_t *a, const bk_meta_image_t *b) {
    size_t la, lb;
    uint8_t *sa = snap(a, &la), *sb = snap(b, &lb);
    bool eq = la == lb && memcmp(sa, sb, la) == 0;
    free(sa);
    free(sb);
    return eq;
}

/* A small cluster: brokers 1-3 (racks a, b, none), topics "orders" (3
 * partitions) and "logs" (1 partition), configs, a producer-id block. */
static int64_t build(bk_meta_image_t *img) {
    int64_t off = 0;
    ck_assert_int_eq(reg(img, 1, "a", false, off++), KP_OK);
    ck_assert_int_eq(reg(img, 2, "b", false, off++), KP_OK);
    ck_assert_int_eq(reg(img, 3, NULL, false, off++), KP_OK);
    ck_assert_int_eq(topic(img, "orders", uuid_n(1), off++), KP_OK);
    ck_assert_int_eq(part(img, uuid_n(1), 0, IV(1, 2, 3), IV(1, 2, 3), 1, off++), KP_OK);
    ck_assert_int_eq(part(img, uuid_n(1), 1, IV(2, 3, 1), IV(2, 3), 2, off++), KP_OK);
    ck_assert_int_eq(part(img, uuid_n(1), 2, IV(3, 1, 2), IV(3), -1, off++), KP_OK);
    ck_assert_int_eq(topic(img, "logs", uuid_n(2), off++), KP_OK);
    ck_assert_int_eq(part(img, uuid_n(2), 0, IV(2), IV(2), 2, off++), KP_OK);
    ck_assert_int_eq(config(img, 2, "orders", "retention.ms", "1000", off++), KP_OK);
    ck_assert_int_eq(config(img, 2, "orders", "cleanup.policy", "compact", off++), KP_OK);
    ck_assert_int_eq(config(img, 2, "logs", "retention.ms", "5", off++), KP_OK);
    ck_assert_int_eq(config(img, 4, "", "num.partitions", "3", off++), KP_OK);
    ck_assert_int_eq(pid_block(img, 1000, off++), KP_OK);
    return off;
}

START_TEST(test_apply_and_lookups) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    int64_t off = build(&img);
    ck_assert_int_eq(img.last_offset, off - 1);
    ck_assert_uint_eq(img.nbrokers, 3);
    const bk_meta_broker_t *b1 = bk_meta_image_broker(&img, 1);
    ck_assert_ptr_nonnull(b1);
    ck_assert_str_eq(b1->rack, "a");
    ck_assert_int_eq(b1->epoch, 0);               /* offset of its registration */
    ck_assert_int_eq(b1->nendpoints, 1);
    ck_assert_str_eq(b1->endpoints[0].host, "127.0.0.1");
    ck_assert_int_eq(b1->endpoints[0].port, 9001);
    ck_assert_ptr_null(bk_meta_image_broker(&img, 3)->rack);
    ck_assert_ptr_null(bk_meta_image_broker(&img, 4));
    ck_assert_int_eq(bk_meta_image_broker(&img, 2)->epoch, 1);

    const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&img, "orders");
    ck_assert_ptr_nonnull(t);
    bk_meta_uuid_t id1 = uuid_n(1);
    ck_assert_ptr_eq(bk_meta_image_topic_by_id(&img, &id1), t);
    ck_assert_int_eq(t->nparts, 3);
    ck_assert_ptr_null(bk_meta_image_topic_by_name(&img, "order"));
    bk_meta_uuid_t id9 = uuid_n(9);
    ck_assert_ptr_null(bk_meta_image_topic_by_id(&img, &id9));
    ck_assert_int_eq(bk_meta_image_leader(&img, &id1, 1), 2);
    ck_assert_int_eq(bk_meta_image_leader(&img, &id1, 2), -1);
    ck_assert_int_eq(bk_meta_image_leader(&img, &id1, 3), -1);
    ck_assert_ptr_null(bk_meta_image_partition(&img, &id1, 3));
    ck_assert_ptr_null(bk_meta_image_partition(&img, &id1, -1));
    ck_assert(ids_are(&bk_meta_image_partition(&img, &id1, 1)->isr, IV(2, 3)));

    size_t n;
    const bk_meta_img_config_t *c = bk_meta_image_configs(&img, 2, "orders", &n);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(c[0].name, "cleanup.policy");   /* sorted by name */
    ck_assert_str_eq(c[1].name, "retention.ms");
    ck_assert_str_eq(bk_meta_image_config(&img, 2, "logs", "retention.ms"), "5");
    ck_assert_ptr_null(bk_meta_image_config(&img, 2, "logs", "cleanup.policy"));
    ck_assert_str_eq(bk_meta_image_config(&img, 4, "", "num.partitions"), "3");
    ck_assert_ptr_null(bk_meta_image_configs(&img, 2, "nope", &n));
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(img.next_producer_id, 1000);
    ck_assert_uint_eq(bk_meta_image_unfenced_count(&img), 3);
    bk_meta_image_free(&img);
}
END_TEST

START_TEST(test_select_queries) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    build(&img);
    bk_meta_tp_t out[16];
    ck_assert_uint_eq(bk_meta_image_select(&img, BK_META_SEL_LEADS, 2, out, 16), 2);
    /* topic-name order: logs before orders */
    ck_assert_str_eq(out[0].topic->name, "logs");
    ck_assert_str_eq(out[1].topic->name, "orders");
    ck_assert_int_eq(out[1].part->id, 1);
    ck_assert_uint_eq(bk_meta_image_select(&img, BK_META_SEL_FOLLOWS, 2, out, 16), 2);
    ck_assert_uint_eq(bk_meta_image_select(&img, BK_META_SEL_REPLICA, 1, out, 16), 3);
    ck_assert_uint_eq(bk_meta_image_select(&img, BK_META_SEL_IN_ISR, 1, out, 16), 1);
    ck_assert_uint_eq(bk_meta_image_select(&img, BK_META_SEL_UNDER_REPLICATED, -1, out, 16), 2);
    ck_assert_uint_eq(bk_meta_image_select(&img, BK_META_SEL_OFFLINE, -1, out, 16), 1);
    ck_assert_int_eq(out[0].part->id, 2);
    ck_assert_uint_eq(bk_meta_image_select(&img, BK_META_SEL_REASSIGNING, -1, out, 16), 0);
    /* max bounds the writes but not the count */
    ck_assert_uint_eq(bk_meta_image_select(&img, BK_META_SEL_REPLICA, 2, out, 1), 4);
    bk_meta_image_free(&img);
}
END_TEST

START_TEST(test_partition_change_epochs) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    int64_t off = build(&img);
    bk_meta_uuid_t id = uuid_n(1);
    const bk_meta_partition_t *p = bk_meta_image_partition(&img, &id, 0);
    ck_assert_int_eq(p->leader_epoch, 0);
    ck_assert_int_eq(p->partition_epoch, 0);
    /* ISR shrink: partition epoch only */
    ck_assert_int_eq(change(&img, id, 0, INT32_MIN, true, IV(1, 2), false, IV0, IV0, IV0, off++), KP_OK);
    p = bk_meta_image_partition(&img, &id, 0);
    ck_assert(ids_are(&p->isr, IV(1, 2)));
    ck_assert_int_eq(p->leader_epoch, 0);
    ck_assert_int_eq(p->partition_epoch, 1);
    /* new leader: both */
    ck_assert_int_eq(change(&img, id, 0, 2, false, IV0, false, IV0, IV0, IV0, off++), KP_OK);
    p = bk_meta_image_partition(&img, &id, 0);
    ck_assert_int_eq(p->leader, 2);
    ck_assert_int_eq(p->leader_epoch, 1);
    ck_assert_int_eq(p->partition_epoch, 2);
    /* same leader named again: no leader epoch bump */
    ck_assert_int_eq(change(&img, id, 0, 2, false, IV0, false, IV0, IV0, IV0, off++), KP_OK);
    ck_assert_int_eq(bk_meta_image_partition(&img, &id, 0)->leader_epoch, 1);
    ck_assert_int_eq(bk_meta_image_partition(&img, &id, 0)->partition_epoch, 3);
    /* reassignment start */
    ck_assert_int_eq(change(&img, id, 0, INT32_MIN, false, IV0, true, IV(2, 3, 4, 1), IV(4), IV(1),
                            off++), KP_OK);
    p = bk_meta_image_partition(&img, &id, 0);
    ck_assert(ids_are(&p->replicas, IV(2, 3, 4, 1)));
    ck_assert(ids_are(&p->adding, IV(4)));
    ck_assert(ids_are(&p->removing, IV(1)));
    bk_meta_tp_t out[4];
    ck_assert_uint_eq(bk_meta_image_select(&img, BK_META_SEL_REASSIGNING, -1, out, 4), 1);
    /* leader -1 bumps the leader epoch too */
    ck_assert_int_eq(change(&img, id, 0, -1, false, IV0, false, IV0, IV0, IV0, off++), KP_OK);
    ck_assert_int_eq(bk_meta_image_partition(&img, &id, 0)->leader_epoch, 2);
    bk_meta_image_free(&img);
}
END_TEST

/* Found by fuzz_metadata_record: a PartitionChange on a partition whose
 * epoch is already INT32_MAX overflowed it (undefined behaviour, then a
 * negative epoch). Such a record is invalid: refused, image unchanged. */
static int part_epochs(bk_meta_image_t *img, bk_meta_uuid_t id, int32_t p, int32_t leader_epoch,
                       int32_t partition_epoch, int64_t off) {
    int32_t reps[2] = { 1, 2 };
    Skiff__Metadata__Partition m = SKIFF__METADATA__PARTITION__INIT;
    m.has_topic_id = true; m.topic_id.len = 16; m.topic_id.data = id.b;
    m.has_partition_id = true; m.partition_id = p;
    m.replicas = m.isr = reps; m.n_replicas = m.n_isr = 2;
    m.has_leader = true; m.leader = 1;
    m.has_leader_epoch = true; m.leader_epoch = leader_epoch;
    m.has_partition_epoch = true; m.partition_epoch = partition_epoch;
    rec_t r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_PARTITION;
    r.partition = &m;
    return apply_rec(img, &r, off);
}

START_TEST(test_partition_change_epoch_exhausted) {
    bk_meta_image_t img, copy;
    bk_meta_image_init(&img, -1);
    bk_meta_image_init(&copy, -1);
    bk_meta_uuid_t id = uuid_n(7);
    int64_t off = 0;
    ck_assert_int_eq(topic(&img, "t", id, off++), KP_OK);
    ck_assert_int_eq(part_epochs(&img, id, 0, INT32_MAX, 5, off++), KP_OK);
    ck_assert_int_eq(part_epochs(&img, id, 1, 3, INT32_MAX, off++), KP_OK);
    size_t len;
    uint8_t *s = snap(&img, &len);
    ck_assert_int_eq(bk_meta_image_load(&copy, s, len), KP_OK);
    free(s);
    /* a new leader needs a leader epoch past INT32_MAX */
    ck_assert_int_eq(change(&img, id, 0, 2, false, IV0, false, IV0, IV0, IV0, off), KP_ERR_BAD_VALUE);
    /* any change needs a partition epoch past INT32_MAX */
    ck_assert_int_eq(change(&img, id, 1, INT32_MIN, true, IV(1), false, IV0, IV0, IV0, off),
                     KP_ERR_BAD_VALUE);
    ck_assert(same_snapshot(&img, &copy));
    /* the same leader again bumps only the partition epoch: still fine */
    ck_assert_int_eq(change(&img, id, 0, 1, false, IV0, false, IV0, IV0, IV0, off++), KP_OK);
    const bk_meta_partition_t *p = bk_meta_image_partition(&img, &id, 0);
    ck_assert_int_eq(p->leader_epoch, INT32_MAX);
    ck_assert_int_eq(p->partition_epoch, 6);
    bk_meta_image_free(&img);
    bk_meta_image_free(&copy);
}
END_TEST

START_TEST(test_invalid_records_rejected_unchanged) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    int64_t off = build(&img);
    size_t len0;
    uint8_t *before = snap(&img, &len0);
    bk_meta_uuid_t id = uuid_n(1), zero = { { 0 } };
    /* every call must fail and leave the image as it was */
    ck_assert_int_eq(part(&img, uuid_n(7), 0, IV(1), IV(1), 1, off), KP_ERR_BAD_VALUE);   /* unknown topic */
    ck_assert_int_eq(part(&img, id, 4, IV(1), IV(1), 1, off), KP_ERR_BAD_VALUE);          /* gap */
    ck_assert_int_eq(part(&img, id, 3, IV0, IV0, -1, off), KP_ERR_BAD_VALUE);             /* no replicas */
    ck_assert_int_eq(part(&img, id, 3, IV(1, 1), IV(1), 1, off), KP_ERR_BAD_VALUE);       /* duplicate */
    ck_assert_int_eq(part(&img, id, 3, IV(1, 2), IV(3), 3, off), KP_ERR_BAD_VALUE);       /* isr not replicas */
    ck_assert_int_eq(part(&img, id, 3, IV(1, 2), IV(1), 2, off), KP_ERR_BAD_VALUE);       /* leader not in isr */
    ck_assert_int_eq(part(&img, id, 3, IV(1, -2), IV(1), 1, off), KP_ERR_BAD_VALUE);      /* negative id */
    ck_assert_int_eq(part(&img, id, 3, IV(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17),
                          IV(1), 1, off), KP_ERR_BAD_VALUE);                               /* > BK_META_REPLICAS_MAX */
    ck_assert_int_eq(change(&img, id, 0, 5, false, IV0, false, IV0, IV0, IV0, off), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(change(&img, id, 0, INT32_MIN, true, IV(2, 3), false, IV0, IV0, IV0, off),
                     KP_ERR_BAD_VALUE);                                                    /* drops leader 1 */
    ck_assert_int_eq(change(&img, id, 0, INT32_MIN, false, IV0, true, IV(2, 3), IV0, IV0, off),
                     KP_ERR_BAD_VALUE);                                                    /* isr outside */
    ck_assert_int_eq(change(&img, id, 0, INT32_MIN, false, IV0, true, IV(1, 2, 3), IV(4), IV0, off),
                     KP_ERR_BAD_VALUE);                                                    /* adding outside */
    ck_assert_int_eq(change(&img, id, 0, -2, false, IV0, false, IV0, IV0, IV0, off), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(change(&img, id, 9, 1, false, IV0, false, IV0, IV0, IV0, off), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(change(&img, uuid_n(7), 0, 1, false, IV0, false, IV0, IV0, IV0, off), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(topic(&img, "orders", uuid_n(8), off), KP_ERR_BAD_VALUE);              /* name taken */
    ck_assert_int_eq(topic(&img, "fresh", uuid_n(1), off), KP_ERR_BAD_VALUE);               /* id taken */
    ck_assert_int_eq(topic(&img, "fresh", zero, off), KP_ERR_BAD_VALUE);                    /* zero id */
    ck_assert_int_eq(topic(&img, "", uuid_n(8), off), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(removal(&img, uuid_n(7), off), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(fence(&img, 9, true, false, off), KP_ERR_BAD_VALUE);                   /* unknown broker */
    ck_assert_int_eq(config(&img, 3, "x", "a", "b", off), KP_ERR_BAD_VALUE);               /* resource type */
    ck_assert_int_eq(config(&img, 2, NULL, "a", "b", off), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(config(&img, 2, "x", "", "b", off), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(pid_block(&img, 1000, off), KP_ERR_BAD_VALUE);                        /* not increasing */
    ck_assert_int_eq(pid_block(&img, 10, off), KP_ERR_BAD_VALUE);
    rec_t empty = SKIFF__METADATA__METADATA_RECORD__INIT;                                    /* no record set */
    ck_assert_int_eq(bk_meta_image_apply(&img, &empty, off), KP_ERR_BAD_VALUE);
    /* a broker registration with a short incarnation id */
    Skiff__Metadata__BrokerRegistration m = SKIFF__METADATA__BROKER_REGISTRATION__INIT;
    uint8_t inc[3] = { 1, 2, 3 };
    m.has_broker_id = true; m.broker_id = 5;
    m.has_incarnation_id = true; m.incarnation_id.len = 3; m.incarnation_id.data = inc;
    rec_t r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_BROKER_REGISTRATION;
    r.broker_registration = &m;
    ck_assert_int_eq(bk_meta_image_apply(&img, &r, off), KP_ERR_BAD_VALUE);
    /* offsets must increase */
    rec_t noop = SKIFF__METADATA__METADATA_RECORD__INIT;
    Skiff__Metadata__NoOp nm = SKIFF__METADATA__NO_OP__INIT;
    noop.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_NO_OP;
    noop.no_op = &nm;
    ck_assert_int_eq(bk_meta_image_apply(&img, &noop, off - 1), KP_ERR_BAD_VALUE);
    /* undecodable bytes */
    const uint8_t junk[] = { 0xff, 0xff, 0xff, 0xff, 0x0f };
    ck_assert_int_eq(bk_meta_image_apply_bytes(&img, junk, sizeof junk, off), KP_ERR_CORRUPT);
    size_t len1;
    uint8_t *after = snap(&img, &len1);
    ck_assert_uint_eq(len0, len1);
    ck_assert_mem_eq(before, after, len0);
    ck_assert_int_eq(img.last_offset, off - 1);
    ck_assert_int_eq(bk_meta_image_apply(&img, &noop, off), KP_OK);
    ck_assert_int_eq(img.last_offset, off);
    free(before);
    free(after);
    bk_meta_image_free(&img);
}
END_TEST

START_TEST(test_topic_removal_and_configs) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    int64_t off = build(&img);
    bk_meta_uuid_t id = uuid_n(1);
    /* overwrite and remove a config */
    ck_assert_int_eq(config(&img, 2, "orders", "retention.ms", "2000", off++), KP_OK);
    ck_assert_str_eq(bk_meta_image_config(&img, 2, "orders", "retention.ms"), "2000");
    ck_assert_int_eq(config(&img, 2, "orders", "retention.ms", NULL, off++), KP_OK);
    ck_assert_ptr_null(bk_meta_image_config(&img, 2, "orders", "retention.ms"));
    ck_assert_int_eq(config(&img, 2, "orders", "never.set", NULL, off++), KP_OK);
    ck_assert_int_eq(removal(&img, id, off++), KP_OK);
    ck_assert_ptr_null(bk_meta_image_topic_by_name(&img, "orders"));
    ck_assert_ptr_null(bk_meta_image_topic_by_id(&img, &id));
    ck_assert_ptr_null(bk_meta_image_partition(&img, &id, 0));
    size_t n;
    bk_meta_image_configs(&img, 2, "orders", &n);
    ck_assert_uint_eq(n, 0);                          /* the topic's configs went with it */
    ck_assert_str_eq(bk_meta_image_config(&img, 2, "logs", "retention.ms"), "5");
    ck_assert_uint_eq(img.ntopics, 1);
    /* the name and id can be used again */
    ck_assert_int_eq(topic(&img, "orders", uuid_n(3), off++), KP_OK);
    ck_assert_int_eq(bk_meta_image_topic_by_name(&img, "orders")->nparts, 0);
    /* unregistration */
    Skiff__Metadata__BrokerUnregistration u = SKIFF__METADATA__BROKER_UNREGISTRATION__INIT;
    u.has_broker_id = true; u.broker_id = 2;
    u.has_broker_epoch = true; u.broker_epoch = 99;                   /* wrong epoch */
    rec_t r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_BROKER_UNREGISTRATION;
    r.broker_unregistration = &u;
    ck_assert_int_eq(bk_meta_image_apply(&img, &r, off), KP_ERR_BAD_VALUE);
    u.broker_epoch = 1;
    ck_assert_int_eq(bk_meta_image_apply(&img, &r, off++), KP_OK);
    ck_assert_ptr_null(bk_meta_image_broker(&img, 2));
    ck_assert_ptr_nonnull(bk_meta_image_broker(&img, 3));
    ck_assert_uint_eq(img.nbrokers, 2);
    bk_meta_image_free(&img);
}
END_TEST

START_TEST(test_reregistration_and_endpoint_bound) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    int64_t off = build(&img);
    ck_assert_int_eq(fence(&img, 1, false, true, off++), KP_OK);
    ck_assert(bk_meta_image_broker(&img, 1)->in_controlled_shutdown);
    ck_assert_int_eq(reg(&img, 1, "z", true, off), KP_OK);              /* a restart */
    const bk_meta_broker_t *b = bk_meta_image_broker(&img, 1);
    ck_assert_int_eq(b->epoch, off);
    ck_assert_str_eq(b->rack, "z");
    ck_assert(b->fenced);
    ck_assert(!b->in_controlled_shutdown);
    ck_assert_uint_eq(img.nbrokers, 3);
    off++;
    /* BK_META_ENDPOINTS_MAX + 1 endpoints: rejected */
    Skiff__Metadata__Endpoint ep = SKIFF__METADATA__ENDPOINT__INIT;
    Skiff__Metadata__Endpoint *eps[BK_META_ENDPOINTS_MAX + 1];
    for (int i = 0; i <= BK_META_ENDPOINTS_MAX; i++) eps[i] = &ep;
    Skiff__Metadata__BrokerRegistration m = SKIFF__METADATA__BROKER_REGISTRATION__INIT;
    m.has_broker_id = true; m.broker_id = 8;
    m.n_endpoints = BK_META_ENDPOINTS_MAX + 1; m.endpoints = eps;
    rec_t r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_BROKER_REGISTRATION;
    r.broker_registration = &m;
    ck_assert_int_eq(apply_rec(&img, &r, off), KP_ERR_BAD_VALUE);
    m.n_endpoints = BK_META_ENDPOINTS_MAX;
    ck_assert_int_eq(apply_rec(&img, &r, off), KP_OK);
    ck_assert_int_eq(bk_meta_image_broker(&img, 8)->nendpoints, BK_META_ENDPOINTS_MAX);
    ck_assert(bk_meta_image_broker(&img, 8)->fenced);                         /* default: fenced */
    ck_assert_str_eq(bk_meta_image_broker(&img, 8)->endpoints[0].host, "");  /* absent host */
    bk_meta_image_free(&img);
}
END_TEST

START_TEST(test_load_garbage_keeps_image_and_changes) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, 1);
    build(&img);
    size_t pending = bk_meta_image_pending_changes(&img);
    const uint8_t junk[] = { 0x22, 0x05, 0x2a, 0x03, 0x12, 0x01 };   /* records: truncated */
    ck_assert_int_ne(bk_meta_image_load(&img, junk, sizeof junk), KP_OK);
    ck_assert_uint_eq(bk_meta_image_pending_changes(&img), pending);
    ck_assert_uint_eq(img.ntopics, 2);
    /* a snapshot whose records are invalid for an empty image: BAD_VALUE */
    bk_meta_image_t other;
    bk_meta_image_init(&other, -1);
    int64_t off = 0;
    ck_assert_int_eq(reg(&other, 1, NULL, false, off++), KP_OK);
    ck_assert_int_eq(topic(&other, "x", uuid_n(4), off++), KP_OK);
    ck_assert_int_eq(part(&other, uuid_n(4), 0, IV(1), IV(1), 1, off++), KP_OK);
    size_t len;
    uint8_t *bytes = snap(&other, &len);
    Skiff__Metadata__MetadataSnapshot *m = skiff__metadata__metadata_snapshot__unpack(NULL, len, bytes);
    ck_assert_ptr_nonnull(m);
    ck_assert_uint_eq(m->n_records, 3);
    rec_t *tmp = m->records[1];                    /* partition before its topic */
    m->records[1] = m->records[2];
    m->records[2] = tmp;
    size_t len2 = skiff__metadata__metadata_snapshot__get_packed_size(m);
    uint8_t *bad = malloc(len2);
    skiff__metadata__metadata_snapshot__pack(m, bad);
    ck_assert_int_eq(bk_meta_image_load(&img, bad, len2), KP_ERR_BAD_VALUE);
    ck_assert_uint_eq(img.ntopics, 2);
    ck_assert_uint_eq(bk_meta_image_pending_changes(&img), pending);
    skiff__metadata__metadata_snapshot__free_unpacked(m, NULL);
    free(bad);
    free(bytes);
    bk_meta_image_free(&other);
    bk_meta_image_free(&img);
}
END_TEST

START_TEST(test_many_topics_sorted_lookups) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    int64_t off = 0;
    ck_assert_int_eq(reg(&img, 1, NULL, false, off++), KP_OK);
    enum { N = 2000 };
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%05d", (i * 7919) % N);   /* inserted out of order */
        bk_meta_uuid_t id = uuid_n(0);
        id.b[1] = (uint8_t)(((i * 104729) % N) >> 8);
        id.b[2] = (uint8_t)((i * 104729) % N);
        ck_assert_int_eq(topic(&img, name, id, off++), KP_OK);
        ck_assert_int_eq(part(&img, id, 0, IV(1), IV(1), 1, off++), KP_OK);
    }
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%05d", i);
        const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&img, name);
        ck_assert_ptr_nonnull(t);
        ck_assert_ptr_eq(bk_meta_image_topic_by_id(&img, &t->id), t);
    }
    for (size_t i = 1; i < img.ntopics; i++)
        ck_assert(strcmp(img.by_name[i - 1]->name, img.by_name[i]->name) < 0);
    bk_meta_image_free(&img);
}
END_TEST

START_TEST(test_snapshot_round_trip) {
    bk_meta_image_t img, back;
    bk_meta_image_init(&img, -1);
    int64_t off = build(&img);
    ck_assert_int_eq(fence(&img, 3, false, true, off++), KP_OK);        /* controlled shutdown */
    ck_assert_int_eq(fence(&img, 2, true, false, off++), KP_OK);
    bk_meta_uuid_t id = uuid_n(1);
    ck_assert_int_eq(change(&img, id, 0, INT32_MIN, false, IV0, true, IV(2, 3, 4, 1), IV(4), IV(1),
                            off++), KP_OK);
    ck_assert_int_eq(bk_meta_image_set_cluster_id(&img, "skiff-cluster-1"), KP_OK);
    bk_meta_image_set_last_epoch(&img, 7);
    size_t len;
    uint8_t *bytes = snap(&img, &len);
    bk_meta_image_init(&back, -1);
    ck_assert_int_eq(bk_meta_image_load(&back, bytes, len), KP_OK);
    ck_assert(same_snapshot(&img, &back));
    /* field by field, not only through the snapshot writer */
    ck_assert_str_eq(back.cluster_id, "skiff-cluster-1");
    ck_assert_int_eq(back.last_offset, img.last_offset);
    ck_assert_int_eq(back.last_epoch, 7);
    ck_assert_int_eq(back.next_producer_id, 1000);
    ck_assert(bk_meta_image_broker(&back, 3)->in_controlled_shutdown);
    ck_assert(!bk_meta_image_broker(&back, 3)->fenced);
    ck_assert(bk_meta_image_broker(&back, 2)->fenced);
    ck_assert_int_eq(bk_meta_image_broker(&back, 2)->epoch, 1);
    ck_assert_str_eq(bk_meta_image_broker(&back, 1)->rack, "a");
    ck_assert_int_eq(bk_meta_image_broker(&back, 1)->endpoints[0].port, 9001);
    const bk_meta_partition_t *p = bk_meta_image_partition(&back, &id, 0);
    ck_assert(ids_are(&p->replicas, IV(2, 3, 4, 1)));
    ck_assert(ids_are(&p->adding, IV(4)));
    ck_assert(ids_are(&p->removing, IV(1)));
    ck_assert_int_eq(p->partition_epoch, 1);
    ck_assert_int_eq(bk_meta_image_partition(&back, &id, 1)->leader, 2);
    ck_assert_str_eq(bk_meta_image_config(&back, 4, "", "num.partitions"), "3");
    ck_assert_uint_eq(back.nconfigs, img.nconfigs);
    /* a loaded image keeps applying records after the snapshot offset */
    ck_assert_int_eq(pid_block(&back, 2000, back.last_offset), KP_ERR_BAD_VALUE);
    ck_assert_int_eq(pid_block(&back, 2000, back.last_offset + 1), KP_OK);
    free(bytes);
    bk_meta_image_free(&back);
    /* the empty image round-trips too */
    bk_meta_image_t e1, e2;
    bk_meta_image_init(&e1, -1);
    bk_meta_image_init(&e2, -1);
    bytes = snap(&e1, &len);
    ck_assert_int_eq(bk_meta_image_load(&e2, bytes, len), KP_OK);
    ck_assert(same_snapshot(&e1, &e2));
    free(bytes);
    bk_meta_image_free(&e1);
    bk_meta_image_free(&e2);
    bk_meta_image_free(&img);
}
END_TEST

START_TEST(test_snapshot_truncated_and_corrupted) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    build(&img);
    size_t len;
    uint8_t *bytes = snap(&img, &len);
    bk_meta_image_t target;
    bk_meta_image_init(&target, -1);
    int64_t off = 0;
    ck_assert_int_eq(reg(&target, 9, NULL, false, off++), KP_OK);
    size_t len0;
    uint8_t *target0 = snap(&target, &len0);
    size_t ok = 0, bad = 0;
    /* truncated at every byte: a decode error or a consistent smaller image,
     * never a crash; on error the target is untouched */
    for (size_t cut = 0; cut < len; cut++) {
        uint8_t *copy = malloc(cut + 1);
        memcpy(copy, bytes, cut);
        bk_meta_image_t t2;
        bk_meta_image_init(&t2, -1);
        ck_assert_int_eq(reg(&t2, 9, NULL, false, 0), KP_OK);
        int rc = bk_meta_image_load(&t2, copy, cut);
        if (rc == KP_OK) {
            ok++;
        } else {
            bad++;
            ck_assert(rc == KP_ERR_CORRUPT || rc == KP_ERR_BAD_VALUE);
            ck_assert(same_snapshot(&t2, &target));
        }
        bk_meta_image_free(&t2);
        free(copy);
    }
    ck_assert_uint_gt(bad, len / 2);   /* most cuts land inside a field */
    (void)ok;
    /* every single-byte corruption: no crash, error leaves the image alone */
    for (size_t i = 0; i < len; i++) {
        for (int flip = 1; flip < 256; flip <<= 2) {
            uint8_t *copy = malloc(len);
            memcpy(copy, bytes, len);
            copy[i] ^= (uint8_t)flip;
            bk_meta_image_t t2;
            bk_meta_image_init(&t2, -1);
            ck_assert_int_eq(reg(&t2, 9, NULL, false, 0), KP_OK);
            if (bk_meta_image_load(&t2, copy, len) != KP_OK) ck_assert(same_snapshot(&t2, &target));
            bk_meta_image_free(&t2);
            free(copy);
        }
    }
    free(target0);
    free(bytes);
    bk_meta_image_free(&target);
    bk_meta_image_free(&img);
}
END_TEST

/* ---- change notifications ------------------------------------------------ */

static const bk_meta_change_t *find_change(const bk_meta_change_t *c, size_t n, bk_meta_uuid_t id, int32_t p) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(c[i].topic_id.b, id.b, 16) == 0 && c[i].partition == p) return &c[i];
    return NULL;
}

START_TEST(test_changes_for_local_node) {
    bk_meta_image_t img;
    bk_meta_image_init(&img, 1);                  /* we are node 1 */
    int64_t off = build(&img);
    bk_meta_change_t ch[16];
    bk_meta_uuid_t o = uuid_n(1), l = uuid_n(2);
    size_t n = bk_meta_image_take_changes(&img, ch, 16);
    /* orders-0 leader 1, orders-1 follower, orders-2 follower (leaderless); logs: not ours */
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(find_change(ch, n, o, 0)->kind, BK_META_CHANGE_LEADER);
    ck_assert_int_eq(find_change(ch, n, o, 1)->kind, BK_META_CHANGE_FOLLOWER);
    ck_assert_int_eq(find_change(ch, n, o, 1)->leader, 2);
    ck_assert_int_eq(find_change(ch, n, o, 2)->kind, BK_META_CHANGE_FOLLOWER);
    ck_assert_int_eq(find_change(ch, n, o, 2)->leader, -1);
    ck_assert_ptr_null(find_change(ch, n, l, 0));
    ck_assert_uint_eq(bk_meta_image_take_changes(&img, ch, 16), 0);     /* consumed */

    /* leadership moves away: follower; ISR change on a partition we lead: leader again */
    ck_assert_int_eq(change(&img, o, 0, 2, false, IV0, false, IV0, IV0, IV0, off++), KP_OK);
    ck_assert_int_eq(change(&img, o, 1, INT32_MIN, true, IV(2), false, IV0, IV0, IV0, off++), KP_OK);
    ck_assert_int_eq(change(&img, o, 2, 3, false, IV0, false, IV0, IV0, IV0, off++), KP_OK);
    ck_assert_int_eq(change(&img, o, 2, 3, false, IV0, false, IV0, IV0, IV0, off++), KP_OK);
    ck_assert_int_eq(change(&img, l, 0, INT32_MIN, false, IV0, false, IV0, IV0, IV0, off++), KP_OK);
    n = bk_meta_image_take_changes(&img, ch, 16);
    ck_assert_uint_eq(n, 3);                 /* logs-0 is not ours: nothing */
    const bk_meta_change_t *c0 = find_change(ch, n, o, 0);
    ck_assert_int_eq(c0->kind, BK_META_CHANGE_FOLLOWER);
    ck_assert_int_eq(c0->leader, 2);
    ck_assert_int_eq(c0->leader_epoch, 1);
    ck_assert_int_eq(find_change(ch, n, o, 1)->kind, BK_META_CHANGE_FOLLOWER);
    ck_assert_int_eq(find_change(ch, n, o, 1)->partition_epoch, 1);
    const bk_meta_change_t *c2 = find_change(ch, n, o, 2);
    ck_assert_int_eq(c2->kind, BK_META_CHANGE_FOLLOWER);
    ck_assert_int_eq(c2->leader, 3);
    ck_assert_int_eq(c2->partition_epoch, 2);   /* two records, one entry with the final state */

    /* removed from the replicas (reassignment): stop and delete the copy */
    ck_assert_int_eq(change(&img, o, 1, INT32_MIN, false, IV0, true, IV(2, 3), IV0, IV0, off++), KP_OK);
    /* back to leader of orders-0 */
    ck_assert_int_eq(change(&img, o, 0, 1, false, IV0, false, IV0, IV0, IV0, off++), KP_OK);
    n = bk_meta_image_take_changes(&img, ch, 16);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(find_change(ch, n, o, 1)->kind, BK_META_CHANGE_STOP);
    ck_assert(find_change(ch, n, o, 1)->deleted);
    ck_assert_int_eq(find_change(ch, n, o, 0)->kind, BK_META_CHANGE_LEADER);
    ck_assert_int_eq(find_change(ch, n, o, 0)->leader_epoch, 2);

    /* an ISR "change" to the same ISR still moves the partition epoch */
    ck_assert_int_eq(change(&img, o, 2, INT32_MIN, true, IV(3), false, IV0, IV0, IV0, off++), KP_OK);
    ck_assert_uint_eq(bk_meta_image_pending_changes(&img), 1);
    n = bk_meta_image_take_changes(&img, ch, 16);
    ck_assert_uint_eq(n, 1);     /* partition epoch moved: the follower learns it */

    /* the topic goes: stop + deleted for ours; a small out[] still counts all */
    ck_assert_int_eq(removal(&img, o, off++), KP_OK);
    n = bk_meta_image_take_changes(&img, ch, 1);
    ck_assert_uint_eq(n, 2);     /* orders-0 (leader) and orders-2 (follower) */
    ck_assert_int_eq(ch[0].kind, BK_META_CHANGE_STOP);
    ck_assert(ch[0].deleted);
    bk_meta_image_free(&img);
}
END_TEST

START_TEST(test_copy_equal_and_quiet) {
    /* the decision views' copy: equal content and local id, nothing pending,
     * and later records report changes as on the original */
    bk_meta_image_t a;
    bk_meta_image_init(&a, 2);
    int64_t off = build(&a);
    bk_meta_image_t *c = bk_meta_image_copy(&a);
    ck_assert_ptr_nonnull(c);
    ck_assert(same_snapshot(&a, c));
    ck_assert_int_eq(c->local_id, 2);
    ck_assert_int_eq(c->last_offset, a.last_offset);
    ck_assert_uint_eq(bk_meta_image_take_changes(c, NULL, 0), 0);
    (void)bk_meta_image_take_changes(&a, NULL, 0);
    bk_meta_uuid_t o = uuid_n(1);
    ck_assert_int_eq(change(&a, o, 1, 3, false, IV0, false, IV0, IV0, IV0, off), KP_OK);
    ck_assert_int_eq(change(c, o, 1, 3, false, IV0, false, IV0, IV0, IV0, off), KP_OK);
    bk_meta_change_t ca[4], cc[4];
    size_t na = bk_meta_image_take_changes(&a, ca, 4);
    ck_assert_uint_eq(bk_meta_image_take_changes(c, cc, 4), na);
    ck_assert_uint_ge(na, 1);
    ck_assert_int_eq(find_change(cc, na, o, 1)->kind, find_change(ca, na, o, 1)->kind);
    ck_assert(same_snapshot(&a, c));
    bk_meta_image_free(c);
    free(c);
    bk_meta_image_free(&a);
}
END_TEST

START_TEST(test_changes_after_snapshot_load) {
    /* node 2 had an image; it loads a snapshot of a later state */
    bk_meta_image_t a, b;
    bk_meta_image_init(&a, -1);
    int64_t off = build(&a);
    bk_meta_uuid_t o = uuid_n(1), l = uuid_n(2);
    ck_assert_int_eq(removal(&a, l, off++), KP_OK);                     /* logs deleted */
    ck_assert_int_eq(change(&a, o, 1, 3, false, IV0, false, IV0, IV0, IV0, off++), KP_OK);
    ck_assert_int_eq(topic(&a, "new", uuid_n(5), off++), KP_OK);
    ck_assert_int_eq(part(&a, uuid_n(5), 0, IV(2), IV(2), 2, off++), KP_OK);
    size_t len;
    uint8_t *bytes = snap(&a, &len);

    bk_meta_image_init(&b, 2);
    build(&b);
    bk_meta_change_t ch[16];
    ck_assert_uint_eq(bk_meta_image_take_changes(&b, ch, 16), 4);   /* orders 0-2 + logs-0 */
    ck_assert_int_eq(bk_meta_image_load(&b, bytes, len), KP_OK);
    size_t n = bk_meta_image_take_changes(&b, ch, 16);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(find_change(ch, n, l, 0)->kind, BK_META_CHANGE_STOP);
    ck_assert(find_change(ch, n, l, 0)->deleted);
    ck_assert_int_eq(find_change(ch, n, o, 1)->kind, BK_META_CHANGE_FOLLOWER);
    ck_assert_int_eq(find_change(ch, n, o, 1)->leader, 3);
    ck_assert_int_eq(find_change(ch, n, uuid_n(5), 0)->kind, BK_META_CHANGE_LEADER);
    ck_assert(same_snapshot(&a, &b));
    free(bytes);
    bk_meta_image_free(&a);
    bk_meta_image_free(&b);
}
END_TEST

START_TEST(test_records_list_apply) {
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    Skiff__Metadata__NoOp nm = SKIFF__METADATA__NO_OP__INIT;
    rec_t r = SKIFF__METADATA__METADATA_RECORD__INIT;
    r.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_NO_OP;
    r.no_op = &nm;
    ck_assert_int_eq(bk_meta_recs_add(&recs, &r), KP_OK);
    ck_assert_int_eq(bk_meta_recs_add(&recs, &r), KP_OK);
    ck_assert_uint_eq(recs.n, 2);
    ck_assert_int_eq(recs.err, KP_OK);
    bk_meta_image_t img;
    bk_meta_image_init(&img, -1);
    ck_assert_int_eq(bk_meta_recs_apply(&recs, &img, 10), KP_OK);
    ck_assert_int_eq(img.last_offset, 11);
    ck_assert_int_eq(bk_meta_recs_apply(&recs, &img, 11), KP_ERR_BAD_VALUE);   /* offset 11 again */
    recs.err = KP_ERR_NOMEM;                                              /* sticky */
    ck_assert_int_eq(bk_meta_recs_add(&recs, &r), KP_ERR_NOMEM);           /* and said */
    ck_assert_uint_eq(recs.n, 2);
    ck_assert_int_eq(bk_meta_recs_apply(&recs, &img, 20), KP_ERR_NOMEM);
    bk_meta_recs_free(&recs);
    ck_assert_uint_eq(recs.n, 0);
    ck_assert_int_eq(recs.err, KP_OK);
    bk_meta_image_free(&img);
}
END_TEST

int main(void) {
    Suite *s = suite_create("image");
    TCase *tc = tcase_create("image");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_apply_and_lookups);
    tcase_add_test(tc, test_select_queries);
    tcase_add_test(tc, test_partition_change_epochs);
    tcase_add_test(tc, test_partition_change_epoch_exhausted);
    tcase_add_test(tc, test_invalid_records_rejected_unchanged);
    tcase_add_test(tc, test_topic_removal_and_configs);
    tcase_add_test(tc, test_reregistration_and_endpoint_bound);
    tcase_add_test(tc, test_load_garbage_keeps_image_and_changes);
    tcase_add_test(tc, test_many_topics_sorted_lookups);
    tcase_add_test(tc, test_snapshot_round_trip);
    tcase_add_test(tc, test_snapshot_truncated_and_corrupted);
    tcase_add_test(tc, test_changes_for_local_node);
    tcase_add_test(tc, test_changes_after_snapshot_load);
    tcase_add_test(tc, test_copy_equal_and_quiet);
    tcase_add_test(tc, test_records_list_apply);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
