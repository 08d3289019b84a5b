/* test_group_offsets.c — OffsetCommit/Fetch/Delete, retention, lag,
 * ListGroups, DescribeGroups and DeleteGroups of broker/group.h. */
#include "grp_test_util.h"

#include "kp_msgs.h"

#define RETENTION_MS (7LL * 24 * 3600 * 1000)

/* ConsumerProtocolSubscription v1 of `topics`, INT16-version prefixed, in buf. */
static kp_bytes_t subscription(uint8_t *buf, size_t cap, const char *const *topics, int32_t n) {
    kp_consumer_protocol_subscription_t sub;
    kp_str_t t[8];
    kp_consumer_protocol_subscription_init(&sub);
    for (int32_t i = 0; i < n; i++) t[i] = S(topics[i]);
    sub.topics.items = t;
    sub.topics.count = n;
    kp_wr_t w;
    kp_wr_init(&w, buf, cap);
    ck_assert_int_eq(kp_wr_i16(&w, 1), KP_OK);
    ck_assert_int_eq(kp_consumer_protocol_subscription_encode(&w, 1, &sub), KP_OK);
    kp_bytes_t b = { buf, w.pos };
    return b;
}

/* A Stable one-member group with protocol "range" and the given metadata;
 * returns the member id (malloc'd). */
static char *stable_group(bk_grp_coord_t *c, const char *group, const char *type, kp_bytes_t md,
                          int64_t now_ms) {
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    bk_grp_protocol_in_t p = { S("range"), md };
    bk_grp_join_t r;
    memset(&r, 0, sizeof r);
    r.group_id = S(group);
    r.member_id = S("");
    r.protocol_type = S(type);
    r.session_timeout_ms = SESSION_MS;
    r.rebalance_timeout_ms = REBALANCE_MS;
    r.protocols = &p;
    r.nprotocols = 1;
    r.token = 1;
    bk_grp_join(c, &r, now_ms, &o);
    const bk_grp_resp_t *x = resp(&o, 1);
    ck_assert_int_eq(x->error, KP_ERROR_NONE);
    char *id = dup_slice(x->member_id);
    bk_grp_assign_in_t a = { S(id), S("assigned") };
    bk_grp_sync_t s = { .group_id = S(group), .member_id = S(id), .generation = x->generation,
                        .assignments = &a, .nassignments = 1, .token = 2 };
    bk_grp_sync(c, &s, now_ms, &o);
    ck_assert_int_eq(resp(&o, 2)->error, KP_ERROR_NONE);
    ck_assert_int_eq(grp_state_of(c, group), BK_GRP_STABLE);
    bk_grp_out_free(&o);
    return id;
}

static bk_grp_commit_part_t part(const char *topic, int32_t p, int64_t off) {
    bk_grp_commit_part_t x = { .topic = S(topic), .partition = p, .offset = off,
                               .leader_epoch = 3, .metadata = S("meta"), .commit_ts_ms = -1 };
    return x;
}

static int16_t commit(bk_grp_coord_t *c, bk_grp_out_t *o, const char *group, const char *member,
                      int32_t gen, const bk_grp_commit_part_t *parts, size_t n, int64_t now_ms,
                      int16_t *errs) {
    bk_grp_commit_t cm = { .group_id = S(group), .member_id = S(member), .generation = gen,
                           .retention_ms = -1, .parts = parts, .nparts = n };
    return bk_grp_offset_commit(c, &cm, now_ms, o, errs);
}

static int64_t fetch_one(const bk_grp_coord_t *c, const char *group, const char *topic, int32_t p) {
    bk_grp_tp_t tp = { S(topic), p };
    bk_grp_fetched_t f;
    ck_assert_int_eq(bk_grp_offset_fetch(c, S(group), &tp, 1, &f), KP_ERROR_NONE);
    return f.offset;
}

START_TEST(test_commit_generation_checks) {
    bk_grp_coord_t c;
    coord_new(&c, 0);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    char *m = stable_group(&c, "g", "consumer", S("md"), 0);
    int16_t errs[2];
    bk_grp_commit_part_t p[2] = { part("t", 0, 10), part("t", 1, 20) };
    ck_assert_int_eq(commit(&c, &o, "g", m, 1, p, 2, 5, errs), KP_ERROR_NONE);
    ck_assert_int_eq(errs[0], KP_ERROR_NONE);
    ck_assert_int_eq(errs[1], KP_ERROR_NONE);
    ck_assert_uint_eq(o.nrecs, 2);
    ck_assert_int_eq(fetch_one(&c, "g", "t", 1), 20);
    struct { const char *member; int32_t gen; int16_t err; } bad[] = {
        { m, 2, KP_ERROR_ILLEGAL_GENERATION },
        { m, 0, KP_ERROR_ILLEGAL_GENERATION },
        { "ghost", 1, KP_ERROR_UNKNOWN_MEMBER_ID },
        { "", -1, KP_ERROR_UNKNOWN_MEMBER_ID },       /* simple commit to an active group */
    };
    bk_grp_commit_part_t p2 = part("t", 0, 99);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bk_grp_out_reset(&o);
        ck_assert_int_eq(commit(&c, &o, "g", bad[i].member, bad[i].gen, &p2, 1, 6, errs), bad[i].err);
        ck_assert_int_eq(errs[0], bad[i].err);
        ck_assert_uint_eq(o.nrecs, 0);
        ck_assert_int_eq(fetch_one(&c, "g", "t", 0), 10);
    }
    /* an unknown group with a generation: from an old generation, rejected */
    ck_assert_int_eq(commit(&c, &o, "gone", "m", 5, &p2, 1, 6, errs), KP_ERROR_ILLEGAL_GENERATION);
    ck_assert_ptr_null(bk_grp_find(&c, S("gone")));
    /* metadata over offset.metadata.max.bytes fails that partition only */
    char big[4098];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    p[1].metadata = S(big);
    bk_grp_out_reset(&o);
    ck_assert_int_eq(commit(&c, &o, "g", m, 1, p, 2, 7, errs), KP_ERROR_NONE);
    ck_assert_int_eq(errs[0], KP_ERROR_NONE);
    ck_assert_int_eq(errs[1], KP_ERROR_OFFSET_METADATA_TOO_LARGE);
    ck_assert_uint_eq(o.nrecs, 1);
    big[4096] = 0;                                  /* exactly the limit is fine */
    p[1].metadata = S(big);
    ck_assert_int_eq(commit(&c, &o, "g", m, 1, p, 2, 7, errs), KP_ERROR_NONE);
    ck_assert_int_eq(errs[1], KP_ERROR_NONE);
    free(m);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

START_TEST(test_simple_consumer) {
    bk_grp_coord_t c;
    coord_new(&c, 0);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    int16_t err;
    bk_grp_commit_part_t p = part("t", 0, 42);
    ck_assert_int_eq(commit(&c, &o, "simple", "", -1, &p, 1, 100, &err), KP_ERROR_NONE);
    const bk_grp_t *g = bk_grp_find(&c, S("simple"));
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(g->state, BK_GRP_EMPTY);
    ck_assert_ptr_null(g->protocol_type.p);
    ck_assert_int_eq(fetch_one(&c, "simple", "t", 0), 42);
    p.offset = 43;
    ck_assert_int_eq(commit(&c, &o, "simple", "", -1, &p, 1, 100, &err), KP_ERROR_NONE);
    ck_assert_int_eq(fetch_one(&c, "simple", "t", 0), 43);
    /* a consumer group takes the id over; simple commits are then refused */
    char *m = stable_group(&c, "simple", "consumer", S("md"), 200);
    p.offset = 44;
    ck_assert_int_eq(commit(&c, &o, "simple", "", -1, &p, 1, 300, &err), KP_ERROR_UNKNOWN_MEMBER_ID);
    ck_assert_int_eq(commit(&c, &o, "simple", m, 1, &p, 1, 300, &err), KP_ERROR_NONE);
    ck_assert_int_eq(fetch_one(&c, "simple", "t", 0), 44);
    free(m);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

START_TEST(test_offset_fetch) {
    bk_grp_coord_t c;
    coord_new(&c, 0);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    int16_t errs[3];
    bk_grp_commit_part_t p[3] = { part("t2", 1, 7), part("t1", 5, 8), part("t1", 0, 9) };
    p[1].leader_epoch = 11;
    p[1].metadata = kp_slice_null();
    ck_assert_int_eq(commit(&c, &o, "g", "", -1, p, 3, 1, errs), KP_ERROR_NONE);
    const bk_grp_offset_t *all;
    size_t n;
    ck_assert_int_eq(bk_grp_offset_fetch_all(&c, S("g"), &all, &n), KP_ERROR_NONE);
    ck_assert_uint_eq(n, 3);
    ck_assert(slice_is(gs_slice_for_test(&all[0].topic), "t1") && all[0].partition == 0);
    ck_assert(slice_is(gs_slice_for_test(&all[1].topic), "t1") && all[1].partition == 5);
    ck_assert(slice_is(gs_slice_for_test(&all[2].topic), "t2") && all[2].partition == 1);
    bk_grp_tp_t tps[3] = { { S("t1"), 5 }, { S("t1"), 6 }, { S("nope"), 0 } };
    bk_grp_fetched_t f[3];
    ck_assert_int_eq(bk_grp_offset_fetch(&c, S("g"), tps, 3, f), KP_ERROR_NONE);
    ck_assert_int_eq(f[0].offset, 8);
    ck_assert_int_eq(f[0].leader_epoch, 11);
    ck_assert(slice_is(f[0].metadata, ""));
    ck_assert_int_eq(f[1].offset, -1);
    ck_assert_int_eq(f[2].offset, -1);
    ck_assert_int_eq(bk_grp_offset_fetch(&c, S("unknown"), tps, 1, f), KP_ERROR_NONE);
    ck_assert_int_eq(f[0].offset, -1);
    ck_assert_int_eq(bk_grp_offset_fetch_all(&c, S("unknown"), &all, &n), KP_ERROR_NONE);
    ck_assert_uint_eq(n, 0);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

START_TEST(test_offset_delete) {
    bk_grp_coord_t c;
    coord_new(&c, 0);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    int16_t errs[3];
    bk_grp_tp_t tps[3] = { { S("t1"), 0 }, { S("t2"), 0 }, { S("t3"), 9 } };
    ck_assert_int_eq(bk_grp_offset_delete(&c, S("none"), tps, 1, 0, &o, errs), KP_ERROR_GROUP_ID_NOT_FOUND);
    /* Empty group: everything requested goes */
    bk_grp_commit_part_t p[2] = { part("t1", 0, 1), part("t2", 0, 2) };
    ck_assert_int_eq(commit(&c, &o, "e", "", -1, p, 2, 0, errs), KP_ERROR_NONE);
    bk_grp_out_reset(&o);
    ck_assert_int_eq(bk_grp_offset_delete(&c, S("e"), tps, 3, 0, &o, errs), KP_ERROR_NONE);
    for (int i = 0; i < 3; i++) ck_assert_int_eq(errs[i], KP_ERROR_NONE);
    ck_assert_uint_eq(o.nrecs, 2);                              /* t3-9 had nothing */
    ck_assert_ptr_null(o.recs[0].value.p);
    ck_assert_ptr_null(o.recs[1].value.p);
    ck_assert_int_eq(fetch_one(&c, "e", "t1", 0), -1);
    /* active consumer group subscribed to t1 */
    uint8_t buf[256];
    static const char *const T1[] = { "t1" };
    char *m = stable_group(&c, "s", "consumer", subscription(buf, sizeof buf, T1, 1), 0);
    ck_assert_int_eq(commit(&c, &o, "s", m, 1, p, 2, 0, errs), KP_ERROR_NONE);
    bk_grp_out_reset(&o);
    ck_assert_int_eq(bk_grp_offset_delete(&c, S("s"), tps, 2, 0, &o, errs), KP_ERROR_NONE);
    ck_assert_int_eq(errs[0], KP_ERROR_GROUP_SUBSCRIBED_TO_TOPIC);
    ck_assert_int_eq(errs[1], KP_ERROR_NONE);
    ck_assert_uint_eq(o.nrecs, 1);
    ck_assert_int_eq(fetch_one(&c, "s", "t1", 0), 1);
    ck_assert_int_eq(fetch_one(&c, "s", "t2", 0), -1);
    /* undecodable subscription: nothing can be proven unused */
    char *m2 = stable_group(&c, "u", "consumer", S("\xff"), 0);
    ck_assert_int_eq(commit(&c, &o, "u", m2, 1, p, 2, 0, errs), KP_ERROR_NONE);
    ck_assert_int_eq(bk_grp_offset_delete(&c, S("u"), tps + 1, 1, 0, &o, errs), KP_ERROR_NONE);
    ck_assert_int_eq(errs[0], KP_ERROR_GROUP_SUBSCRIBED_TO_TOPIC);
    /* an active group of another protocol type */
    char *m3 = stable_group(&c, "k", "connect", S("md"), 0);
    ck_assert_int_eq(bk_grp_offset_delete(&c, S("k"), tps, 1, 0, &o, errs), KP_ERROR_NON_EMPTY_GROUP);
    free(m);
    free(m2);
    free(m3);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

START_TEST(test_delete_groups) {
    bk_grp_coord_t c;
    coord_new(&c, 0);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    int16_t errs[3];
    ck_assert_int_eq(bk_grp_delete(&c, S("none"), 0, &o), KP_ERROR_GROUP_ID_NOT_FOUND);
    char *m = stable_group(&c, "s", "consumer", S("md"), 0);
    ck_assert_int_eq(bk_grp_delete(&c, S("s"), 0, &o), KP_ERROR_NON_EMPTY_GROUP);
    ck_assert_ptr_nonnull(bk_grp_find(&c, S("s")));
    bk_grp_commit_part_t p[3] = { part("a", 0, 1), part("a", 1, 2), part("b", 0, 3) };
    ck_assert_int_eq(commit(&c, &o, "e", "", -1, p, 3, 0, errs), KP_ERROR_NONE);
    bk_grp_out_reset(&o);
    ck_assert_int_eq(bk_grp_delete(&c, S("e"), 0, &o), KP_ERROR_NONE);
    ck_assert_uint_eq(o.nrecs, 4);
    for (size_t i = 0; i < 4; i++) ck_assert_ptr_null(o.recs[i].value.p);
    kp_rd_t r;
    int16_t type;
    kp_rd_init(&r, o.recs[3].key.p, o.recs[3].key.len);
    ck_assert_int_eq(kp_rd_i16(&r, &type), KP_OK);
    ck_assert_int_eq(type, BK_GRP_KEY_GROUP);
    ck_assert_ptr_null(bk_grp_find(&c, S("e")));
    ck_assert_int_eq(bk_grp_delete(&c, S("e"), 0, &o), KP_ERROR_GROUP_ID_NOT_FOUND);
    /* once its member leaves, the consumer group can go */
    bk_grp_leave_in_t lv = { S(m), kp_slice_null() };
    ck_assert_int_eq(bk_grp_leave(&c, S("s"), &lv, 1, 0, &o, errs), KP_ERROR_NONE);
    ck_assert_int_eq(bk_grp_delete(&c, S("s"), 0, &o), KP_ERROR_NONE);
    free(m);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

typedef struct {
    const char *names[8];
    size_t n;
} listed_t;

static void on_group(void *ctx, const bk_grp_t *g) {
    listed_t *l = ctx;
    ck_assert_uint_lt(l->n, 8);
    l->names[l->n++] = g->id.p;
}

START_TEST(test_list_and_describe) {
    bk_grp_coord_t c;
    coord_new(&c, 0);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    int16_t err;
    bk_grp_commit_part_t p = part("t", 0, 1);
    ck_assert_int_eq(commit(&c, &o, "e", "", -1, &p, 1, 0, &err), KP_ERROR_NONE);
    char *ms = stable_group(&c, "s", "consumer", S("md-s"), 0);
    char *mp = stable_group(&c, "p", "consumer", S("md-p"), 0);
    bk_grp_leave_in_t lv = { S("ghost"), kp_slice_null() };
    (void)bk_grp_leave(&c, S("p"), &lv, 1, 0, &o, &err);
    protos_t ps;
    static const char *const R[] = { "range" };
    protos(&ps, 1, R);
    bk_grp_join_t r = join_req("p", "", "inst", 5, &ps, 1);   /* static joiner: rebalance */
    bk_grp_join(&c, &r, 0, &o);
    ck_assert_int_eq(grp_state_of(&c, "p"), BK_GRP_PREPARING_REBALANCE);
    listed_t l = { { 0 }, 0 };
    ck_assert_int_eq(bk_grp_list(&c, NULL, 0, on_group, &l), KP_ERROR_NONE);
    ck_assert_uint_eq(l.n, 3);
    ck_assert_str_eq(l.names[0], "e");
    ck_assert_str_eq(l.names[1], "p");
    ck_assert_str_eq(l.names[2], "s");
    bk_grp_state_t st[2];
    ck_assert(bk_grp_state_parse(S("stable"), &st[0]));
    ck_assert_int_eq(st[0], BK_GRP_STABLE);
    l.n = 0;
    bk_grp_list(&c, st, 1, on_group, &l);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_str_eq(l.names[0], "s");
    ck_assert(bk_grp_state_parse(S("EMPTY"), &st[0]));
    ck_assert(bk_grp_state_parse(S("PreparingRebalance"), &st[1]));
    l.n = 0;
    bk_grp_list(&c, st, 2, on_group, &l);
    ck_assert_uint_eq(l.n, 2);
    ck_assert(!bk_grp_state_parse(S("Stabl"), &st[0]));
    ck_assert(!bk_grp_state_parse(kp_slice_null(), &st[0]));
    ck_assert_str_eq(bk_grp_state_name(BK_GRP_COMPLETING_REBALANCE), "CompletingRebalance");
    const bk_grp_t *g;
    ck_assert_int_eq(bk_grp_describe(&c, S("nope"), &g), KP_ERROR_NONE);
    ck_assert_ptr_null(g);
    ck_assert_int_eq(bk_grp_describe(&c, S("s"), &g), KP_ERROR_NONE);
    ck_assert_uint_eq(g->nmembers, 1);
    ck_assert(slice_is(gs_slice_for_test(&g->members[0].member_id), ms));
    ck_assert(slice_is(bk_grp_member_metadata(g, &g->members[0]), "md-s"));
    ck_assert(slice_is(gs_slice_for_test(&g->members[0].assignment), "assigned"));
    ck_assert(slice_is(gs_slice_for_test(&g->protocol), "range"));
    free(ms);
    free(mp);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

START_TEST(test_admin_while_loading) {
    bk_grp_config_t cfg;
    bk_grp_config_defaults(&cfg);
    cfg.num_partitions = 1;
    bk_grp_coord_t c;
    bk_grp_coord_init(&c, &cfg, 0, 1);
    listed_t l = { { 0 }, 0 };
    ck_assert_int_eq(bk_grp_list(&c, NULL, 0, on_group, &l), KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS);
    const bk_grp_t *g;
    ck_assert_int_eq(bk_grp_describe(&c, S("g"), &g), KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS);
    bk_grp_tp_t tp = { S("t"), 0 };
    bk_grp_fetched_t f;
    ck_assert_int_eq(bk_grp_offset_fetch(&c, S("g"), &tp, 1, &f), KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    ck_assert_int_eq(bk_grp_delete(&c, S("g"), 0, &o), KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS);
    int16_t err;
    ck_assert_int_eq(bk_grp_offset_delete(&c, S("g"), &tp, 1, 0, &o, &err),
                     KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS);
    bk_grp_tick(&c, 1000000, &o);                          /* no-ops while loading */
    bk_grp_expire_offsets(&c, 1000000000, &o);
    ck_assert_uint_eq(o.nrecs + o.nresps, 0);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

START_TEST(test_retention) {
    bk_grp_coord_t c;
    coord_new(&c, 0);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    int16_t err;
    /* offsets-only group: by commit time */
    bk_grp_commit_part_t p = part("t", 0, 1);
    ck_assert_int_eq(commit(&c, &o, "simple", "", -1, &p, 1, 1000, &err), KP_ERROR_NONE);
    /* explicit retention (OffsetCommit v2-4) in an active group */
    char *m = stable_group(&c, "active", "consumer", S("md"), 0);
    bk_grp_commit_part_t q[2] = { part("t", 0, 5), part("t", 1, 6) };
    bk_grp_commit_t cm = { .group_id = S("active"), .member_id = S(m), .generation = 1,
                           .retention_ms = 5000, .parts = q, .nparts = 1 };
    ck_assert_int_eq(bk_grp_offset_commit(&c, &cm, 1000, &o, &err), KP_ERROR_NONE);
    cm.retention_ms = -1;
    cm.parts = q + 1;
    ck_assert_int_eq(bk_grp_offset_commit(&c, &cm, 1000, &o, &err), KP_ERROR_NONE);
    bk_grp_out_reset(&o);
    bk_grp_expire_offsets(&c, 5999, &o);
    ck_assert_uint_eq(o.offsets_expired, 0);
    bk_grp_expire_offsets(&c, 6000, &o);
    ck_assert_uint_eq(o.offsets_expired, 1);
    ck_assert_int_eq(fetch_one(&c, "active", "t", 0), -1);
    ck_assert_int_eq(fetch_one(&c, "active", "t", 1), 6);
    bk_grp_out_reset(&o);
    /* keep the member alive across the retention period */
    for (int64_t t = 0; t <= 1000 + RETENTION_MS; t += RETENTION_MS / 4) {
        ck_assert_int_eq(bk_grp_heartbeat(&c, S("active"), S(m), kp_slice_null(), 1, t), KP_ERROR_NONE);
    }
    bk_grp_expire_offsets(&c, 1000 + RETENTION_MS - 1, &o);
    ck_assert_uint_eq(o.offsets_expired, 0);
    bk_grp_expire_offsets(&c, 1000 + RETENTION_MS, &o);
    ck_assert_uint_eq(o.offsets_expired, 1);                 /* the simple group's */
    ck_assert_ptr_null(bk_grp_find(&c, S("simple")));        /* and the group went */
    ck_assert_uint_eq(o.nrecs, 2);
    ck_assert_int_eq(fetch_one(&c, "active", "t", 1), 6);    /* active: kept */
    /* once Empty, the consumer group's offsets age from that moment */
    int64_t t1 = 2 * RETENTION_MS;
    bk_grp_leave_in_t lv = { S(m), kp_slice_null() };
    ck_assert_int_eq(bk_grp_leave(&c, S("active"), &lv, 1, t1, &o, &err), KP_ERROR_NONE);
    ck_assert_int_eq(grp_state_of(&c, "active"), BK_GRP_EMPTY);
    bk_grp_out_reset(&o);
    bk_grp_expire_offsets(&c, t1 + RETENTION_MS - 1, &o);
    ck_assert_uint_eq(o.offsets_expired, 0);
    bk_grp_expire_offsets(&c, t1 + RETENTION_MS, &o);
    ck_assert_uint_eq(o.offsets_expired, 1);
    ck_assert_ptr_null(bk_grp_find(&c, S("active")));
    /* OffsetCommit v1: the client's commit timestamp + retention */
    p.commit_ts_ms = 50;
    ck_assert_int_eq(commit(&c, &o, "v1", "", -1, &p, 1, 100000, &err), KP_ERROR_NONE);
    ck_assert_int_eq(bk_grp_find(&c, S("v1"))->offsets[0].expire_ts_ms, 50 + RETENTION_MS);
    free(m);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

/* A client's retention time or v1 commit timestamp near INT64_MAX made
 * commit time + retention overflow (undefined behaviour, then a negative
 * expire time); it saturates now: such an offset never expires. */
START_TEST(test_retention_overflow_saturates) {
    bk_grp_coord_t c;
    coord_new(&c, 0);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    int16_t err;
    char *m = stable_group(&c, "g", "consumer", S("md"), 0);
    bk_grp_commit_part_t q = part("t", 0, 5);
    bk_grp_commit_t cm = { .group_id = S("g"), .member_id = S(m), .generation = 1,
                           .retention_ms = INT64_MAX, .parts = &q, .nparts = 1 };
    ck_assert_int_eq(bk_grp_offset_commit(&c, &cm, 1000, &o, &err), KP_ERROR_NONE);
    ck_assert_int_eq(bk_grp_find(&c, S("g"))->offsets[0].expire_ts_ms, INT64_MAX);
    bk_grp_commit_part_t p = part("t", 0, 1);
    p.commit_ts_ms = INT64_MAX - 1;
    ck_assert_int_eq(commit(&c, &o, "v1", "", -1, &p, 1, 1000, &err), KP_ERROR_NONE);
    ck_assert_int_eq(bk_grp_find(&c, S("v1"))->offsets[0].expire_ts_ms, INT64_MAX);
    bk_grp_out_reset(&o);
    bk_grp_expire_offsets(&c, INT64_MAX - 1, &o);
    ck_assert_uint_eq(o.offsets_expired, 0);
    free(m);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

static int64_t leo_table(void *ctx, kp_str_t topic, int32_t partition) {
    (void)ctx;
    if (!kp_slice_eq_cstr(topic, "t")) return -1;
    return partition == 0 ? 100 : 5;
}

START_TEST(test_lags) {
    bk_grp_coord_t c;
    coord_new(&c, 0);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    int16_t errs[3];
    bk_grp_commit_part_t p[3] = { part("t", 0, 40), part("t", 1, 9), part("u", 0, 1) };
    ck_assert_int_eq(commit(&c, &o, "g", "", -1, p, 3, 0, errs), KP_ERROR_NONE);
    bk_grp_lag_t lags[3];
    ck_assert_uint_eq(bk_grp_lags(&c, S("g"), leo_table, NULL, lags, 3), 3);
    ck_assert_int_eq(lags[0].lag, 60);
    ck_assert_int_eq(lags[0].log_end_offset, 100);
    ck_assert_int_eq(lags[1].lag, 0);                 /* committed past the LEO */
    ck_assert_int_eq(lags[2].lag, -1);                /* LEO unknown */
    ck_assert_int_eq(lags[2].committed->offset, 1);
    ck_assert_uint_eq(bk_grp_lags(&c, S("g"), leo_table, NULL, lags, 1), 3);
    ck_assert_uint_eq(bk_grp_lags(&c, S("none"), leo_table, NULL, lags, 3), 0);
    /* found by fuzz_group_records: LEO - a committed offset near INT64_MIN
     * overflowed; a negative committed offset has no lag (-1) */
    bk_grp_commit_part_t neg = part("t", 0, INT64_MIN + 1);
    ck_assert_int_eq(commit(&c, &o, "h", "", -1, &neg, 1, 0, errs), KP_ERROR_NONE);
    ck_assert_uint_eq(bk_grp_lags(&c, S("h"), leo_table, NULL, lags, 3), 1);
    ck_assert_int_eq(lags[0].lag, -1);
    ck_assert_int_eq(lags[0].log_end_offset, 100);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

int main(void) {
    Suite *s = suite_create("group_offsets");
    TCase *tc = tcase_create("offsets");
    tcase_add_test(tc, test_commit_generation_checks);
    tcase_add_test(tc, test_simple_consumer);
    tcase_add_test(tc, test_offset_fetch);
    tcase_add_test(tc, test_offset_delete);
    tcase_add_test(tc, test_delete_groups);
    tcase_add_test(tc, test_list_and_describe);
    tcase_add_test(tc, test_admin_while_loading);
    tcase_add_test(tc, test_retention);
    tcase_add_test(tc, test_retention_overflow_saturates);
    tcase_add_test(tc, test_lags);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
