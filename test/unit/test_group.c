/* test_group.c — the classic group rebalance state machine (broker/group.h):
 * join/sync/heartbeat/leave flows, timeouts, static membership, protocol
 * selection and every error a client reacts to. */
#include "grp_test_util.h"

static const char *const RANGE[] = { "range" };

/* Two-step join of a new member (MEMBER_ID_REQUIRED, then with the id).
 * Returns the member id (malloc'd); the second answer may be pending. */
static char *join_two_step(bk_grp_coord_t *c, bk_grp_out_t *o, const char *group, uint64_t token,
                           int64_t now_ms) {
    protos_t ps;
    protos(&ps, 1, RANGE);
    bk_grp_join_t r = join_req(group, "", NULL, token, &ps, 1);
    bk_grp_join(c, &r, now_ms, o);
    const bk_grp_resp_t *x = resp(o, token);
    ck_assert_int_eq(x->error, KP_ERROR_MEMBER_ID_REQUIRED);
    ck_assert_uint_gt(x->member_id.len, strlen("client-"));
    ck_assert(memcmp(x->member_id.p, "client-", 7) == 0);
    char *id = dup_slice(x->member_id);
    bk_grp_out_reset(o);
    r = join_req(group, id, NULL, token + 1000, &ps, 1);
    bk_grp_join(c, &r, now_ms, o);
    return id;
}

/* Forms a Stable group of n members (initial delay 3000 ms): everyone joins
 * at t=0, the join completes after the delay, the leader assigns "a<i>". */
static int64_t form_group(bk_grp_coord_t *c, const char *group, size_t n, char **ids) {
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    for (size_t i = 0; i < n; i++) {
        ids[i] = join_two_step(c, &o, group, 10 + i, 0);
        ck_assert_ptr_null(bk_grp_out_find(&o, 1010 + i));      /* waits for the delay */
        bk_grp_out_reset(&o);
    }
    const bk_grp_t *g = bk_grp_find(c, S(group));
    ck_assert_int_eq(g->state, BK_GRP_PREPARING_REBALANCE);
    bk_grp_tick(c, 2999, &o);
    ck_assert_uint_eq(o.nresps, 0);
    int64_t t = 3000;
    for (; o.nresps == 0 && t <= 60000; t += 3000) bk_grp_tick(c, t, &o);
    ck_assert_uint_eq(o.nresps, n);
    ck_assert_uint_eq(o.rebalances_completed, 1);
    ck_assert_int_eq(g->state, BK_GRP_COMPLETING_REBALANCE);
    ck_assert_int_eq(g->generation, 1);
    const bk_grp_resp_t *lead = NULL;
    for (size_t i = 0; i < n; i++) {
        const bk_grp_resp_t *r = resp(&o, 1010 + i);
        ck_assert_int_eq(r->error, KP_ERROR_NONE);
        ck_assert_int_eq(r->generation, 1);
        ck_assert(slice_is(r->member_id, ids[i]));
        ck_assert(slice_is(r->protocol, "range"));
        ck_assert(slice_is(r->leader, ids[0]));                  /* first joined leads */
        if (i == 0) lead = r; else ck_assert_uint_eq(r->nmembers, 0);
    }
    ck_assert_uint_eq(lead->nmembers, n);
    for (size_t i = 0; i < n; i++) {
        ck_assert(slice_is(lead->members[i].member_id, ids[i]));
        ck_assert(slice_is(lead->members[i].metadata, "md-range"));
    }
    bk_grp_out_reset(&o);
    /* followers first: they wait for the leader */
    bk_grp_assign_in_t as[8];
    char abuf[8][24];
    for (size_t i = 0; i < n; i++) {
        snprintf(abuf[i], sizeof abuf[i], "a%zu", i);
        as[i].member_id = S(ids[i]);
        as[i].assignment = S(abuf[i]);
    }
    for (size_t i = 1; i < n; i++) {
        bk_grp_sync_t s = { .group_id = S(group), .member_id = S(ids[i]), .generation = 1,
                            .token = 100 + i };
        bk_grp_sync(c, &s, t, &o);
        ck_assert_uint_eq(o.nresps, 0);
    }
    bk_grp_sync_t s = { .group_id = S(group), .member_id = S(ids[0]), .generation = 1,
                        .assignments = as, .nassignments = n, .token = 100,
                        .protocol_type = S("consumer"), .protocol = S("range") };
    bk_grp_sync(c, &s, t, &o);
    ck_assert_uint_eq(o.nresps, n);
    for (size_t i = 0; i < n; i++) {
        const bk_grp_resp_t *r = resp(&o, 100 + i);
        ck_assert_int_eq(r->kind, BK_GRP_RESP_SYNC);
        ck_assert_int_eq(r->error, KP_ERROR_NONE);
        ck_assert(slice_is(r->assignment, abuf[i]));
    }
    ck_assert_uint_eq(o.nrecs, 1);                               /* GroupMetadata */
    ck_assert_ptr_nonnull(o.recs[0].value.p);
    ck_assert_int_eq(g->state, BK_GRP_STABLE);
    bk_grp_out_free(&o);
    return t;
}

static void free_ids(char **ids, size_t n) {
    for (size_t i = 0; i < n; i++) free(ids[i]);
}

START_TEST(test_partition_for_java_hash) {
    /* Expected values from String.hashCode by hand / an independent model:
     * h("")=0, h("a")=97, h("ab")=3105, h("abcdefghij")=-634317659,
     * h("polygenelubricants")=Integer.MIN_VALUE (abs -> 0). */
    ck_assert_int_eq(bk_grp_partition_for(S(""), 50), 0);
    ck_assert_int_eq(bk_grp_partition_for(S("a"), 50), 47);
    ck_assert_int_eq(bk_grp_partition_for(S("ab"), 50), 5);
    ck_assert_int_eq(bk_grp_partition_for(S("ab"), 7), 3105 % 7);
    ck_assert_int_eq(bk_grp_partition_for(S("abcdefghij"), 50), 634317659 % 50);
    ck_assert_int_eq(bk_grp_partition_for(S("polygenelubricants"), 50), 0);
    ck_assert_int_eq(bk_grp_partition_for(S("polygenelubricants"), 7), 0);
    ck_assert_int_eq(bk_grp_partition_for(S("test-group"), 50), 627841412 % 50);
    /* U+00E9 is one UTF-16 unit (233): h("été") = (233*31+116)*31+233 */
    ck_assert_int_eq(bk_grp_partition_for(S("\xc3\xa9t\xc3\xa9"), 50), ((233 * 31 + 116) * 31 + 233) % 50);
    /* U+1F600 is a surrogate pair D83D DE00, then "grp" */
    ck_assert_int_eq(bk_grp_partition_for(S("\xf0\x9f\x98\x80grp"), 50), 1276929186 % 50);
    ck_assert_int_eq(bk_grp_partition_for(S("x"), 1), 0);
}
END_TEST

START_TEST(test_owner_errors) {
    bk_grp_config_t cfg;
    bk_grp_config_defaults(&cfg);
    bk_grp_coord_t c;
    int32_t p = bk_grp_partition_for(S("a"), 50);                /* 47 */
    bk_grp_coord_init(&c, &cfg, p, 1);
    ck_assert_int_eq(bk_grp_owner_error(&c, S("a")), KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS);
    ck_assert_int_eq(bk_grp_owner_error(&c, S("ab")), KP_ERROR_NOT_COORDINATOR);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    protos_t ps;
    protos(&ps, 1, RANGE);
    bk_grp_join_t r = join_req("a", "", NULL, 1, &ps, 1);
    bk_grp_join(&c, &r, 0, &o);
    ck_assert_int_eq(resp(&o, 1)->error, KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS);
    bk_grp_load_done(&c, 0);
    ck_assert_int_eq(bk_grp_owner_error(&c, S("a")), KP_ERROR_NONE);
    r = join_req("ab", "", NULL, 2, &ps, 1);
    bk_grp_join(&c, &r, 0, &o);
    ck_assert_int_eq(resp(&o, 2)->error, KP_ERROR_NOT_COORDINATOR);
    ck_assert_int_eq(bk_grp_heartbeat(&c, S("ab"), S("m"), kp_slice_null(), 1, 0),
                     KP_ERROR_NOT_COORDINATOR);
    int16_t errs[1];
    bk_grp_commit_part_t part = { .topic = S("t"), .partition = 0, .offset = 1, .leader_epoch = -1,
                                  .commit_ts_ms = -1 };
    bk_grp_commit_t cm = { .group_id = S("ab"), .generation = -1, .retention_ms = -1,
                           .parts = &part, .nparts = 1 };
    ck_assert_int_eq(bk_grp_offset_commit(&c, &cm, 0, &o, errs), KP_ERROR_NOT_COORDINATOR);
    ck_assert_int_eq(errs[0], KP_ERROR_NOT_COORDINATOR);
    ck_assert_int_eq(bk_grp_delete(&c, S("ab"), 0, &o), KP_ERROR_NOT_COORDINATOR);
    ck_assert_uint_eq(c.ngroups, 0);
    ck_assert_uint_eq(o.nrecs, 0);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

START_TEST(test_single_member_flow) {
    bk_grp_coord_t c;
    coord_new(&c, 0);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    char *id = join_two_step(&c, &o, "g", 1, 0);
    const bk_grp_resp_t *r = resp(&o, 1001);          /* no delay: completes at once */
    ck_assert_int_eq(r->error, KP_ERROR_NONE);
    ck_assert_int_eq(r->generation, 1);
    ck_assert(slice_is(r->leader, id));
    ck_assert(slice_is(r->protocol_type, "consumer"));
    ck_assert_uint_eq(r->nmembers, 1);
    ck_assert_uint_eq(o.nrecs, 0);                    /* written when Stable */
    bk_grp_out_reset(&o);
    ck_assert_int_eq(bk_grp_heartbeat(&c, S("g"), S(id), kp_slice_null(), 1, 10), KP_ERROR_NONE);
    bk_grp_assign_in_t a = { S(id), S("assignment-bytes") };
    bk_grp_sync_t s = { .group_id = S("g"), .member_id = S(id), .generation = 1,
                        .assignments = &a, .nassignments = 1, .token = 2 };
    bk_grp_sync(&c, &s, 10, &o);
    ck_assert(slice_is(resp(&o, 2)->assignment, "assignment-bytes"));
    ck_assert(slice_is(resp(&o, 2)->protocol, "range"));
    ck_assert_uint_eq(o.nrecs, 1);
    ck_assert_int_eq(bk_grp_find(&c, S("g"))->state, BK_GRP_STABLE);
    bk_grp_out_reset(&o);
    /* a repeated sync in Stable returns the stored assignment */
    s.token = 3;
    s.nassignments = 0;
    bk_grp_sync(&c, &s, 20, &o);
    ck_assert(slice_is(resp(&o, 3)->assignment, "assignment-bytes"));
    for (int64_t t = 1000; t < 100000; t += 3000)
        ck_assert_int_eq(bk_grp_heartbeat(&c, S("g"), S(id), kp_slice_null(), 1, t), KP_ERROR_NONE);
    bk_grp_out_reset(&o);
    bk_grp_tick(&c, 100000, &o);
    ck_assert_uint_eq(o.members_expired, 0);
    free(id);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

START_TEST(test_n_member_flows) {
    for (size_t n = 1; n <= 6; n++) {
        bk_grp_coord_t c;
        coord_new(&c, 3000);
        char *ids[8];
        int64_t t = form_group(&c, "grp", n, ids);
        for (size_t i = 0; i < n; i++)
            ck_assert_int_eq(bk_grp_heartbeat(&c, S("grp"), S(ids[i]), kp_slice_null(), 1, t),
                             KP_ERROR_NONE);
        const bk_grp_t *g = bk_grp_find(&c, S("grp"));
        ck_assert_uint_eq(g->nmembers, n);
        free_ids(ids, n);
        bk_grp_coord_free(&c);
    }
}
END_TEST

/* Drives a rebalance of the members still in ids (after a change) to Stable
 * with everyone rejoining; returns the new generation. */
static int32_t rejoin_all(bk_grp_coord_t *c, char **ids, size_t n, int64_t t, bk_grp_out_t *o) {
    protos_t ps;
    protos(&ps, 1, RANGE);
    for (size_t i = 0; i < n; i++) {
        bk_grp_join_t r = join_req("grp", ids[i], NULL, 500 + i, &ps, 1);
        bk_grp_join(c, &r, t, o);
    }
    const bk_grp_t *g = bk_grp_find(c, S("grp"));
    ck_assert_int_eq(g->state, BK_GRP_COMPLETING_REBALANCE);
    for (size_t i = 0; i < n; i++) ck_assert_int_eq(resp(o, 500 + i)->generation, g->generation);
    return g->generation;
}

START_TEST(test_join_stable_group_triggers_rebalance) {
    bk_grp_coord_t c;
    coord_new(&c, 3000);
    char *ids[4];
    int64_t t = form_group(&c, "grp", 2, ids);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    ids[2] = join_two_step(&c, &o, "grp", 50, t);
    ck_assert_ptr_null(bk_grp_out_find(&o, 1050));
    const bk_grp_t *g = bk_grp_find(&c, S("grp"));
    ck_assert_int_eq(g->state, BK_GRP_PREPARING_REBALANCE);
    ck_assert_int_eq(bk_grp_heartbeat(&c, S("grp"), S(ids[0]), kp_slice_null(), 1, t),
                     KP_ERROR_REBALANCE_IN_PROGRESS);
    /* a sync of the old generation while preparing */
    bk_grp_sync_t s = { .group_id = S("grp"), .member_id = S(ids[1]), .generation = 1, .token = 7 };
    bk_grp_sync(&c, &s, t, &o);
    ck_assert_int_eq(resp(&o, 7)->error, KP_ERROR_REBALANCE_IN_PROGRESS);
    /* a commit of the current generation is still allowed while preparing */
    int16_t err;
    bk_grp_commit_part_t part = { .topic = S("t"), .partition = 0, .offset = 5, .leader_epoch = -1,
                                  .commit_ts_ms = -1 };
    bk_grp_commit_t cm = { .group_id = S("grp"), .member_id = S(ids[1]), .generation = 1,
                           .retention_ms = -1, .parts = &part, .nparts = 1 };
    ck_assert_int_eq(bk_grp_offset_commit(&c, &cm, t, &o, &err), KP_ERROR_NONE);
    bk_grp_out_reset(&o);
    protos_t ps;
    protos(&ps, 1, RANGE);
    bk_grp_join_t r = join_req("grp", ids[0], NULL, 60, &ps, 1);
    bk_grp_join(&c, &r, t, &o);
    ck_assert_uint_eq(o.nresps, 0);                    /* ids[1] has not rejoined */
    r = join_req("grp", ids[1], NULL, 61, &ps, 1);
    bk_grp_join(&c, &r, t, &o);
    ck_assert_uint_eq(o.nresps, 3);
    ck_assert_int_eq(g->generation, 2);
    ck_assert_uint_eq(resp(&o, 60)->nmembers, 3);       /* still the leader */
    ck_assert(slice_is(resp(&o, 1050)->leader, ids[0]));
    /* after the new generation, the old one is illegal */
    ck_assert_int_eq(bk_grp_heartbeat(&c, S("grp"), S(ids[1]), kp_slice_null(), 1, t),
                     KP_ERROR_ILLEGAL_GENERATION);
    ck_assert_int_eq(bk_grp_heartbeat(&c, S("grp"), S(ids[1]), kp_slice_null(), 2, t),
                     KP_ERROR_NONE);                    /* NONE in CompletingRebalance */
    cm.generation = 2;
    ck_assert_int_eq(bk_grp_offset_commit(&c, &cm, t, &o, &err), KP_ERROR_REBALANCE_IN_PROGRESS);
    free_ids(ids, 3);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

START_TEST(test_leave_triggers_rebalance) {
    bk_grp_coord_t c;
    coord_new(&c, 3000);
    char *ids[3];
    int64_t t = form_group(&c, "grp", 3, ids);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    /* the leader leaves (v3 batch with an unknown member too) */
    bk_grp_leave_in_t lv[2] = { { S(ids[0]), kp_slice_null() }, { S("nobody"), kp_slice_null() } };
    int16_t errs[2];
    ck_assert_int_eq(bk_grp_leave(&c, S("grp"), lv, 2, t, &o, errs), KP_ERROR_NONE);
    ck_assert_int_eq(errs[0], KP_ERROR_NONE);
    ck_assert_int_eq(errs[1], KP_ERROR_UNKNOWN_MEMBER_ID);
    const bk_grp_t *g = bk_grp_find(&c, S("grp"));
    ck_assert_int_eq(g->state, BK_GRP_PREPARING_REBALANCE);
    ck_assert(slice_is(gs_slice_for_test(&g->leader), ids[1]));
    ck_assert_int_eq(bk_grp_heartbeat(&c, S("grp"), S(ids[0]), kp_slice_null(), 1, t),
                     KP_ERROR_UNKNOWN_MEMBER_ID);
    int32_t gen = rejoin_all(&c, ids + 1, 2, t, &o);
    ck_assert_int_eq(gen, 2);
    ck_assert_uint_eq(resp(&o, 500)->nmembers, 2);
    /* everyone leaves: the group empties, a new generation is written */
    bk_grp_out_reset(&o);
    lv[0].member_id = S(ids[1]);
    lv[1].member_id = S(ids[2]);
    ck_assert_int_eq(bk_grp_leave(&c, S("grp"), lv, 2, t, &o, errs), KP_ERROR_NONE);
    ck_assert_int_eq(g->state, BK_GRP_EMPTY);
    ck_assert_int_eq(g->generation, 3);
    ck_assert_uint_eq(o.nrecs, 1);
    /* leaving an unknown group */
    ck_assert_int_eq(bk_grp_leave(&c, S("nope"), lv, 1, t, &o, errs), KP_ERROR_NONE);
    ck_assert_int_eq(errs[0], KP_ERROR_UNKNOWN_MEMBER_ID);
    free_ids(ids, 3);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

START_TEST(test_session_expiry) {
    bk_grp_coord_t c;
    coord_new(&c, 3000);
    char *ids[2];
    int64_t t = form_group(&c, "grp", 2, ids);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    /* ids[0] heartbeats, ids[1] is silent */
    int64_t end = t + SESSION_MS;
    for (int64_t now = t + 1000; now < end; now += 1000) {
        ck_assert_int_eq(bk_grp_heartbeat(&c, S("grp"), S(ids[0]), kp_slice_null(), 1, now),
                         KP_ERROR_NONE);
        bk_grp_tick(&c, now, &o);
        ck_assert_uint_eq(o.members_expired, 0);
    }
    bk_grp_tick(&c, end, &o);
    ck_assert_uint_eq(o.members_expired, 1);
    const bk_grp_t *g = bk_grp_find(&c, S("grp"));
    ck_assert_uint_eq(g->nmembers, 1);
    ck_assert_int_eq(g->state, BK_GRP_PREPARING_REBALANCE);
    ck_assert_int_eq(bk_grp_heartbeat(&c, S("grp"), S(ids[0]), kp_slice_null(), 1, end),
                     KP_ERROR_REBALANCE_IN_PROGRESS);
    ck_assert_int_eq(rejoin_all(&c, ids, 1, end, &o), 2);
    free_ids(ids, 2);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

START_TEST(test_rebalance_timeout_removes_laggards) {
    bk_grp_coord_t c;
    coord_new(&c, 3000);
    char *ids[3];
    int64_t t = form_group(&c, "grp", 2, ids);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    ids[2] = join_two_step(&c, &o, "grp", 70, t);
    protos_t ps;
    protos(&ps, 1, RANGE);
    bk_grp_join_t r = join_req("grp", ids[0], NULL, 71, &ps, 1);
    bk_grp_join(&c, &r, t, &o);
    /* ids[1] keeps heartbeating but never rejoins */
    for (int64_t now = t; now < t + REBALANCE_MS; now += 2000) {
        ck_assert_int_eq(bk_grp_heartbeat(&c, S("grp"), S(ids[1]), kp_slice_null(), 1, now),
                         KP_ERROR_REBALANCE_IN_PROGRESS);
        bk_grp_tick(&c, now, &o);
        ck_assert_uint_eq(o.nresps, 0);
    }
    bk_grp_tick(&c, t + REBALANCE_MS, &o);
    ck_assert_uint_eq(o.members_expired, 1);
    ck_assert_uint_eq(o.rebalances_completed, 1);
    const bk_grp_t *g = bk_grp_find(&c, S("grp"));
    ck_assert_int_eq(g->generation, 2);
    ck_assert_uint_eq(g->nmembers, 2);
    ck_assert_uint_eq(resp(&o, 71)->nmembers, 2);
    ck_assert_int_eq(resp(&o, 1070)->error, KP_ERROR_NONE);
    ck_assert_int_eq(bk_grp_heartbeat(&c, S("grp"), S(ids[1]), kp_slice_null(), 2, t + REBALANCE_MS),
                     KP_ERROR_UNKNOWN_MEMBER_ID);
    /* then the leader heartbeats but never syncs: it is dropped once the
     * rebalance timeout passes, and the follower waiting in sync is told */
    bk_grp_out_reset(&o);
    bk_grp_sync_t s = { .group_id = S("grp"), .member_id = S(ids[2]), .generation = 2, .token = 80 };
    bk_grp_sync(&c, &s, t + REBALANCE_MS, &o);
    ck_assert_uint_eq(o.nresps, 0);
    for (int64_t now = t + REBALANCE_MS; now < t + 2 * REBALANCE_MS; now += 2000) {
        ck_assert_int_eq(bk_grp_heartbeat(&c, S("grp"), S(ids[0]), kp_slice_null(), 2, now), KP_ERROR_NONE);
        ck_assert_int_eq(bk_grp_heartbeat(&c, S("grp"), S(ids[2]), kp_slice_null(), 2, now), KP_ERROR_NONE);
        bk_grp_tick(&c, now, &o);
        ck_assert_uint_eq(o.nresps, 0);
    }
    bk_grp_tick(&c, t + 2 * REBALANCE_MS, &o);
    ck_assert_int_eq(resp(&o, 80)->error, KP_ERROR_REBALANCE_IN_PROGRESS);
    ck_assert_uint_eq(o.members_expired, 1);
    ck_assert_int_eq(grp_member_count(&c, "grp"), 1);
    ck_assert_int_eq(grp_state_of(&c, "grp"), BK_GRP_PREPARING_REBALANCE);
    free_ids(ids, 3);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

START_TEST(test_pending_member_expiry_and_blocking) {
    bk_grp_coord_t c;
    coord_new(&c, 0);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    protos_t ps;
    protos(&ps, 1, RANGE);
    bk_grp_join_t r = join_req("g", "", NULL, 1, &ps, 1);
    bk_grp_join(&c, &r, 0, &o);
    char *pending = dup_slice(resp(&o, 1)->member_id);
    ck_assert_uint_eq(bk_grp_find(&c, S("g"))->npending, 1);
    bk_grp_tick(&c, SESSION_MS - 1, &o);
    ck_assert_uint_eq(o.members_expired, 0);
    bk_grp_tick(&c, SESSION_MS, &o);
    ck_assert_uint_eq(o.members_expired, 1);
    bk_grp_out_reset(&o);
    r = join_req("g", pending, NULL, 2, &ps, 1);
    bk_grp_join(&c, &r, SESSION_MS, &o);
    ck_assert_int_eq(resp(&o, 2)->error, KP_ERROR_UNKNOWN_MEMBER_ID);
    /* a pending member holds back a join until the deadline */
    bk_grp_out_reset(&o);
    char *a = join_two_step(&c, &o, "g", 10, 20000);
    ck_assert_int_eq(resp(&o, 1010)->generation, 1);
    bk_grp_sync_t s = { .group_id = S("g"), .member_id = S(a), .generation = 1, .token = 11 };
    bk_grp_sync(&c, &s, 20000, &o);
    ck_assert_int_eq(resp(&o, 11)->error, KP_ERROR_NONE);
    bk_grp_out_reset(&o);
    r = join_req("g", "", NULL, 20, &ps, 1);
    bk_grp_join(&c, &r, 20000, &o);                      /* pending b; rebalance starts */
    ck_assert_int_eq(resp(&o, 20)->error, KP_ERROR_MEMBER_ID_REQUIRED);
    ck_assert_int_eq(grp_state_of(&c, "g"), BK_GRP_STABLE);
    r = join_req("g", a, NULL, 21, &ps, 1);               /* leader rejoins: rebalance */
    bk_grp_join(&c, &r, 20000, &o);
    ck_assert_ptr_null(bk_grp_out_find(&o, 21));          /* waits for the pending one */
    bk_grp_tick(&c, 20000 + SESSION_MS, &o);              /* pending expires, join completes */
    ck_assert_int_eq(resp(&o, 21)->generation, 2);
    free(a);
    free(pending);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

START_TEST(test_static_member_restart) {
    bk_grp_coord_t c;
    coord_new(&c, 0);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    protos_t ps;
    protos(&ps, 1, RANGE);
    /* two static members join without MEMBER_ID_REQUIRED */
    bk_grp_join_t r = join_req("g", "", "inst-a", 1, &ps, 1);
    bk_grp_join(&c, &r, 0, &o);
    const bk_grp_resp_t *x = resp(&o, 1);
    ck_assert_int_eq(x->error, KP_ERROR_NONE);
    ck_assert(memcmp(x->member_id.p, "inst-a-", 7) == 0);
    char *a = dup_slice(x->member_id);
    bk_grp_out_reset(&o);
    r = join_req("g", "", "inst-b", 2, &ps, 1);
    bk_grp_join(&c, &r, 0, &o);
    r = join_req("g", a, "inst-a", 3, &ps, 1);
    bk_grp_join(&c, &r, 0, &o);
    char *b = dup_slice(resp(&o, 2)->member_id);
    ck_assert_int_eq(resp(&o, 3)->generation, 2);
    bk_grp_assign_in_t as[2] = { { S(a), S("A") }, { S(b), S("B") } };
    bk_grp_sync_t s = { .group_id = S("g"), .member_id = S(a), .instance_id = S("inst-a"),
                        .generation = 2, .assignments = as, .nassignments = 2, .token = 4 };
    bk_grp_sync(&c, &s, 0, &o);
    ck_assert_int_eq(grp_state_of(&c, "g"), BK_GRP_STABLE);
    /* inst-b restarts: new member id, same generation, no rebalance */
    bk_grp_out_reset(&o);
    r = join_req("g", "", "inst-b", 5, &ps, 1);
    bk_grp_join(&c, &r, 1000, &o);
    x = resp(&o, 5);
    ck_assert_int_eq(x->error, KP_ERROR_NONE);
    ck_assert_int_eq(x->generation, 2);
    ck_assert(!slice_is(x->member_id, b));
    ck_assert(slice_is(x->leader, a));
    ck_assert_uint_eq(x->nmembers, 0);
    ck_assert(!x->skip_assignment);
    ck_assert_uint_eq(o.nrecs, 1);                        /* the new id is persisted */
    ck_assert_uint_eq(o.rebalances_completed, 0);
    char *b2 = dup_slice(x->member_id);
    ck_assert_int_eq(grp_state_of(&c, "g"), BK_GRP_STABLE);
    /* the old id is fenced everywhere */
    ck_assert_int_eq(bk_grp_heartbeat(&c, S("g"), S(b), S("inst-b"), 2, 1000), KP_ERROR_FENCED_INSTANCE_ID);
    s = (bk_grp_sync_t){ .group_id = S("g"), .member_id = S(b), .instance_id = S("inst-b"),
                         .generation = 2, .token = 6 };
    bk_grp_sync(&c, &s, 1000, &o);
    ck_assert_int_eq(resp(&o, 6)->error, KP_ERROR_FENCED_INSTANCE_ID);
    int16_t err;
    bk_grp_commit_part_t part = { .topic = S("t"), .partition = 0, .offset = 5, .leader_epoch = -1,
                                  .commit_ts_ms = -1 };
    bk_grp_commit_t cm = { .group_id = S("g"), .member_id = S(b), .instance_id = S("inst-b"),
                           .generation = 2, .retention_ms = -1, .parts = &part, .nparts = 1 };
    ck_assert_int_eq(bk_grp_offset_commit(&c, &cm, 1000, &o, &err), KP_ERROR_FENCED_INSTANCE_ID);
    r = join_req("g", b, "inst-b", 7, &ps, 1);
    bk_grp_join(&c, &r, 1000, &o);
    ck_assert_int_eq(resp(&o, 7)->error, KP_ERROR_FENCED_INSTANCE_ID);
    bk_grp_leave_in_t lv = { S(b), S("inst-b") };
    ck_assert_int_eq(bk_grp_leave(&c, S("g"), &lv, 1, 1000, &o, &err), KP_ERROR_NONE);
    ck_assert_int_eq(err, KP_ERROR_FENCED_INSTANCE_ID);
    /* the new id keeps the assignment */
    s = (bk_grp_sync_t){ .group_id = S("g"), .member_id = S(b2), .instance_id = S("inst-b"),
                         .generation = 2, .token = 8 };
    bk_grp_sync(&c, &s, 1000, &o);
    ck_assert(slice_is(resp(&o, 8)->assignment, "B"));
    ck_assert_int_eq(bk_grp_heartbeat(&c, S("g"), S(b2), S("inst-b"), 2, 1000), KP_ERROR_NONE);
    /* the static leader restarts: gets the members back with skip_assignment */
    bk_grp_out_reset(&o);
    r = join_req("g", "", "inst-a", 9, &ps, 1);
    bk_grp_join(&c, &r, 2000, &o);
    x = resp(&o, 9);
    ck_assert_int_eq(x->generation, 2);
    ck_assert(x->skip_assignment);
    ck_assert_uint_eq(x->nmembers, 2);
    ck_assert(kp_slice_eq(x->leader, x->member_id));
    ck_assert_int_eq(grp_state_of(&c, "g"), BK_GRP_STABLE);
    /* leave by instance id alone (member id "") */
    bk_grp_out_reset(&o);
    lv = (bk_grp_leave_in_t){ S(""), S("inst-b") };
    ck_assert_int_eq(bk_grp_leave(&c, S("g"), &lv, 1, 3000, &o, &err), KP_ERROR_NONE);
    ck_assert_int_eq(err, KP_ERROR_NONE);
    ck_assert_int_eq(grp_state_of(&c, "g"), BK_GRP_PREPARING_REBALANCE);
    free(a);
    free(b);
    free(b2);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

START_TEST(test_protocol_selection) {
    static const char *const A[] = { "range", "roundrobin" };
    static const char *const B[] = { "roundrobin", "range" };
    const char *const *sets[3][3] = { { A, B, B }, { A, A, B }, { B, B, A } };
    const char *want[3] = { "roundrobin", "range", "roundrobin" };
    for (int k = 0; k < 3; k++) {
        bk_grp_coord_t c;
        coord_new(&c, 1000);
        bk_grp_out_t o;
        bk_grp_out_init(&o);
        for (int i = 0; i < 3; i++) {
            protos_t ps;
            protos(&ps, 2, sets[k][i]);
            bk_grp_join_t r = join_req("g", "", NULL, (uint64_t)i, &ps, 2);
            r.require_known_member_id = false;            /* JoinGroup v0-3 */
            bk_grp_join(&c, &r, 0, &o);
        }
        bk_grp_tick(&c, 1000, &o);
        bk_grp_tick(&c, 2000, &o);
        for (int i = 0; i < 3; i++) {
            ck_assert_int_eq(resp(&o, (uint64_t)i)->error, KP_ERROR_NONE);
            ck_assert_msg(slice_is(resp(&o, (uint64_t)i)->protocol, want[k]), "case %d", k);
        }
        ck_assert(slice_is(resp(&o, 0)->members[1].metadata, want[k][1] == 'o' ? "md-roundrobin" : "md-range"));
        bk_grp_out_free(&o);
        bk_grp_coord_free(&c);
    }
}
END_TEST

/* A tie in votes goes to the first member's preference order. */
START_TEST(test_protocol_tie) {
    static const char *const A[] = { "range", "roundrobin", "sticky" };
    static const char *const B[] = { "roundrobin", "range" };
    bk_grp_coord_t c;
    coord_new(&c, 1000);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    protos_t pa, pb;
    protos(&pa, 3, A);
    protos(&pb, 2, B);
    bk_grp_join_t r = join_req("g", "", NULL, 1, &pa, 3);
    r.require_known_member_id = false;
    bk_grp_join(&c, &r, 0, &o);
    r = join_req("g", "", NULL, 2, &pb, 2);
    r.require_known_member_id = false;
    bk_grp_join(&c, &r, 0, &o);
    bk_grp_tick(&c, 1000, &o);
    bk_grp_tick(&c, 2000, &o);
    ck_assert(slice_is(resp(&o, 1)->protocol, "range"));
    ck_assert(slice_is(resp(&o, 2)->protocol, "range"));
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

START_TEST(test_inconsistent_protocol) {
    bk_grp_coord_t c;
    coord_new(&c, 0);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    protos_t ps;
    protos(&ps, 1, RANGE);
    bk_grp_join_t r = join_req("g", "", NULL, 1, &ps, 0);  /* no protocols */
    bk_grp_join(&c, &r, 0, &o);
    ck_assert_int_eq(resp(&o, 1)->error, KP_ERROR_INCONSISTENT_GROUP_PROTOCOL);
    ck_assert_ptr_null(bk_grp_find(&c, S("g")));          /* not left behind */
    r = join_req("g", "", NULL, 2, &ps, 1);
    r.protocol_type = S("");
    bk_grp_join(&c, &r, 0, &o);
    ck_assert_int_eq(resp(&o, 2)->error, KP_ERROR_INCONSISTENT_GROUP_PROTOCOL);
    bk_grp_out_reset(&o);
    char *a = join_two_step(&c, &o, "g", 3, 0);
    static const char *const STICKY[] = { "sticky" };
    protos_t ps2;
    protos(&ps2, 1, STICKY);
    r = join_req("g", "", NULL, 4, &ps2, 1);
    bk_grp_join(&c, &r, 0, &o);
    ck_assert_int_eq(resp(&o, 4)->error, KP_ERROR_INCONSISTENT_GROUP_PROTOCOL);
    r = join_req("g", "", NULL, 5, &ps, 1);
    r.protocol_type = S("connect");
    bk_grp_join(&c, &r, 0, &o);
    ck_assert_int_eq(resp(&o, 5)->error, KP_ERROR_INCONSISTENT_GROUP_PROTOCOL);
    /* the only member may change its protocols */
    r = join_req("g", a, NULL, 6, &ps2, 1);
    bk_grp_join(&c, &r, 0, &o);
    ck_assert_int_eq(resp(&o, 6)->error, KP_ERROR_NONE);
    ck_assert(slice_is(resp(&o, 6)->protocol, "sticky"));
    /* SyncGroup v5 protocol checks */
    bk_grp_sync_t s = { .group_id = S("g"), .member_id = S(a), .generation = 2, .token = 7,
                        .protocol_type = S("consumer"), .protocol = S("range") };
    bk_grp_sync(&c, &s, 0, &o);
    ck_assert_int_eq(resp(&o, 7)->error, KP_ERROR_INCONSISTENT_GROUP_PROTOCOL);
    s.token = 8;
    s.protocol = S("sticky");
    s.protocol_type = S("connect");
    bk_grp_sync(&c, &s, 0, &o);
    ck_assert_int_eq(resp(&o, 8)->error, KP_ERROR_INCONSISTENT_GROUP_PROTOCOL);
    free(a);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

START_TEST(test_join_errors) {
    bk_grp_config_t cfg;
    bk_grp_config_defaults(&cfg);
    cfg.num_partitions = 1;
    cfg.max_size = 2;
    cfg.initial_rebalance_delay_ms = 0;
    bk_grp_coord_t c;
    bk_grp_coord_init(&c, &cfg, 0, 9);
    bk_grp_load_done(&c, 0);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    protos_t ps;
    protos(&ps, 1, RANGE);
    uint64_t tok = 1;
    struct { int32_t session_ms; int16_t err; } st[] = {
        { cfg.min_session_timeout_ms - 1, KP_ERROR_INVALID_SESSION_TIMEOUT },
        { cfg.max_session_timeout_ms + 1, KP_ERROR_INVALID_SESSION_TIMEOUT },
    };
    for (size_t i = 0; i < 2; i++) {
        bk_grp_join_t r = join_req("g", "", NULL, tok, &ps, 1);
        r.session_timeout_ms = st[i].session_ms;
        bk_grp_join(&c, &r, 0, &o);
        ck_assert_int_eq(resp(&o, tok++)->error, st[i].err);
    }
    bk_grp_join_t r = join_req("", "", NULL, tok, &ps, 1);
    bk_grp_join(&c, &r, 0, &o);
    ck_assert_int_eq(resp(&o, tok++)->error, KP_ERROR_INVALID_GROUP_ID);
    r = join_req("g", "ghost", NULL, tok, &ps, 1);          /* no such group */
    bk_grp_join(&c, &r, 0, &o);
    ck_assert_int_eq(resp(&o, tok++)->error, KP_ERROR_UNKNOWN_MEMBER_ID);
    bk_grp_out_reset(&o);
    char *a = join_two_step(&c, &o, "g", 100, 0);
    r = join_req("g", "ghost", NULL, tok, &ps, 1);          /* unknown in a group */
    bk_grp_join(&c, &r, 0, &o);
    ck_assert_int_eq(resp(&o, tok++)->error, KP_ERROR_UNKNOWN_MEMBER_ID);
    r = join_req("g", "", NULL, tok, &ps, 1);               /* 2nd: pending counts */
    bk_grp_join(&c, &r, 0, &o);
    ck_assert_int_eq(resp(&o, tok++)->error, KP_ERROR_MEMBER_ID_REQUIRED);
    r = join_req("g", "", NULL, tok, &ps, 1);               /* 3rd: full */
    bk_grp_join(&c, &r, 0, &o);
    ck_assert_int_eq(resp(&o, tok++)->error, KP_ERROR_GROUP_MAX_SIZE_REACHED);
    r = join_req("g", "", "static-x", tok, &ps, 1);
    bk_grp_join(&c, &r, 0, &o);
    ck_assert_int_eq(resp(&o, tok++)->error, KP_ERROR_GROUP_MAX_SIZE_REACHED);
    /* sync / heartbeat errors */
    ck_assert_int_eq(bk_grp_heartbeat(&c, S("none"), S(a), kp_slice_null(), 1, 0), KP_ERROR_UNKNOWN_MEMBER_ID);
    ck_assert_int_eq(bk_grp_heartbeat(&c, S("g"), S("ghost"), kp_slice_null(), 1, 0), KP_ERROR_UNKNOWN_MEMBER_ID);
    ck_assert_int_eq(bk_grp_heartbeat(&c, S("g"), S(a), kp_slice_null(), 7, 0), KP_ERROR_ILLEGAL_GENERATION);
    ck_assert_int_eq(bk_grp_heartbeat(&c, S("g"), S(a), S("not-mine"), 1, 0), KP_ERROR_NONE);
    bk_grp_sync_t s = { .group_id = S("g"), .member_id = S(a), .generation = 9, .token = tok };
    bk_grp_sync(&c, &s, 0, &o);
    ck_assert_int_eq(resp(&o, tok++)->error, KP_ERROR_ILLEGAL_GENERATION);
    s = (bk_grp_sync_t){ .group_id = S("g"), .member_id = S("ghost"), .generation = 1, .token = tok };
    bk_grp_sync(&c, &s, 0, &o);
    ck_assert_int_eq(resp(&o, tok++)->error, KP_ERROR_UNKNOWN_MEMBER_ID);
    s = (bk_grp_sync_t){ .group_id = S("none"), .member_id = S(a), .generation = 1, .token = tok };
    bk_grp_sync(&c, &s, 0, &o);
    ck_assert_int_eq(resp(&o, tok++)->error, KP_ERROR_UNKNOWN_MEMBER_ID);
    /* a second join answer for a member already waiting replaces the first */
    bk_grp_out_reset(&o);
    protos_t ps2 = ps;
    ps2.p[0].metadata = S("md-range-v2");
    r = join_req("g", a, NULL, 900, &ps2, 1);                /* new metadata: rebalance */
    bk_grp_join(&c, &r, 0, &o);
    ck_assert_ptr_null(bk_grp_out_find(&o, 900));            /* pending member blocks */
    r.token = 901;
    bk_grp_join(&c, &r, 0, &o);
    ck_assert_int_eq(resp(&o, 900)->error, KP_ERROR_REBALANCE_IN_PROGRESS);
    ck_assert_ptr_null(bk_grp_out_find(&o, 901));
    free(a);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

/* A pending member (MEMBER_ID_REQUIRED) may leave; a static member that
 * restarts is let in even when the group is full. */
START_TEST(test_leave_pending_and_static_when_full) {
    bk_grp_config_t cfg;
    bk_grp_config_defaults(&cfg);
    cfg.num_partitions = 1;
    cfg.max_size = 1;
    cfg.initial_rebalance_delay_ms = 0;
    bk_grp_coord_t c;
    bk_grp_coord_init(&c, &cfg, 0, 3);
    bk_grp_load_done(&c, 0);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    protos_t ps;
    protos(&ps, 1, RANGE);
    bk_grp_join_t r = join_req("g", "", NULL, 1, &ps, 1);
    bk_grp_join(&c, &r, 0, &o);
    char *p = dup_slice(resp(&o, 1)->member_id);
    int16_t err;
    bk_grp_leave_in_t lv = { S(p), kp_slice_null() };
    ck_assert_int_eq(bk_grp_leave(&c, S("g"), &lv, 1, 0, &o, &err), KP_ERROR_NONE);
    ck_assert_int_eq(err, KP_ERROR_NONE);
    ck_assert_uint_eq(bk_grp_find(&c, S("g"))->npending, 0);
    r = join_req("g", "", "st", 2, &ps, 1);                 /* the slot is free again */
    bk_grp_join(&c, &r, 0, &o);
    ck_assert_int_eq(resp(&o, 2)->error, KP_ERROR_NONE);
    r = join_req("g", "", NULL, 3, &ps, 1);
    bk_grp_join(&c, &r, 0, &o);
    ck_assert_int_eq(resp(&o, 3)->error, KP_ERROR_GROUP_MAX_SIZE_REACHED);
    r = join_req("g", "", "st", 4, &ps, 1);                 /* restart of the static one */
    bk_grp_join(&c, &r, 0, &o);
    ck_assert_int_eq(resp(&o, 4)->error, KP_ERROR_NONE);
    ck_assert_uint_eq(grp_member_count(&c, "g"), 1);
    free(p);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

START_TEST(test_initial_delay_bounded_by_rebalance_timeout) {
    bk_grp_coord_t c;
    coord_new(&c, 3000);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    protos_t ps;
    protos(&ps, 1, RANGE);
    /* a member joins every 2 s forever: the delay extends, but only up to
     * the rebalance timeout (30 s) */
    int64_t t = 0;
    uint64_t tok = 0;
    for (; o.rebalances_completed == 0 && t <= 2 * REBALANCE_MS; t += 1000) {
        if (t % 2000 == 0) {
            bk_grp_join_t r = join_req("g", "", NULL, tok++, &ps, 1);
            r.require_known_member_id = false;
            bk_grp_join(&c, &r, t, &o);
        }
        bk_grp_tick(&c, t, &o);
    }
    ck_assert_uint_eq(o.rebalances_completed, 1);
    ck_assert_int_ge(t - 1000, 3000 * 2);
    ck_assert_int_le(t - 1000, REBALANCE_MS);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

int main(void) {
    Suite *s = suite_create("group");
    TCase *tc = tcase_create("rebalance");
    tcase_add_test(tc, test_partition_for_java_hash);
    tcase_add_test(tc, test_owner_errors);
    tcase_add_test(tc, test_single_member_flow);
    tcase_add_test(tc, test_n_member_flows);
    tcase_add_test(tc, test_join_stable_group_triggers_rebalance);
    tcase_add_test(tc, test_leave_triggers_rebalance);
    tcase_add_test(tc, test_session_expiry);
    tcase_add_test(tc, test_rebalance_timeout_removes_laggards);
    tcase_add_test(tc, test_pending_member_expiry_and_blocking);
    tcase_add_test(tc, test_static_member_restart);
    tcase_add_test(tc, test_protocol_selection);
    tcase_add_test(tc, test_protocol_tie);
    tcase_add_test(tc, test_inconsistent_protocol);
    tcase_add_test(tc, test_join_errors);
    tcase_add_test(tc, test_leave_pending_and_static_when_full);
    tcase_add_test(tc, test_initial_delay_bounded_by_rebalance_timeout);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
