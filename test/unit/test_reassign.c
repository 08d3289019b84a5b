/* Unit tests for broker/reassign.c: ElectLeaders, AlterPartitionReassignments
 * and ListPartitionReassignments from decoded request to controller decision
 * to response (per-partition error codes, null lists, repeats, the records
 * emitted and what they do to the image), plus the dispatch table entries. */
#include <check.h>
#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/meta/reassign.h"
#include "protocol/kp_errors.h"
#include "test/unit/ctrl_test_util.h"

/* brokers 1..4; topic "t": p0 [1,2,3], p1 [2,3,1], p2 [3,1,2] */
static void cl_setup(cl_t *cl) {
    bk_meta_ctrl_config_t cfg;
    bk_meta_ctrl_config_defaults(&cfg);
    cl_init_cfg(cl, &cfg, 5);
    for (int32_t b = 1; b <= 4; b++) add_broker(cl, b, NULL);
    static const int32_t r0[] = { 1, 2, 3 }, r1[] = { 2, 3, 1 }, r2[] = { 3, 1, 2 };
    bk_meta_ctrl_assignment_t as[] = { { 0, r0, 3 }, { 1, r1, 3 }, { 2, r2, 3 } };
    bk_meta_ctrl_create_topic_t t = { "t", -1, -1, as, 3, NULL, 0 };
    bk_meta_ctrl_create_result_t res;
    bk_meta_recs_t r;
    bk_meta_recs_init(&r);
    bk_meta_ctrl_create_topics(&cl->ctrl, &cl->img, &t, 1, false, &r, &res);
    ck_assert_int_eq(res.error, 0);
    commit(cl, &r);
}

static const bk_meta_partition_t *part(cl_t *cl, int32_t p) {
    return &bk_meta_image_topic_by_name(&cl->img, "t")->parts[p];
}

/* ---- ElectLeaders ---------------------------------------------------------- */

typedef kp_elect_leaders_request_topic_partitions_t el_tp_t;

static const kp_elect_leaders_response_partition_result_t *el_result(const kp_elect_leaders_response_t *r,
                                                                     size_t ti, size_t pi) {
    ck_assert_int_gt(r->replica_election_results.count, (int32_t)ti);
    ck_assert_int_gt(r->replica_election_results.items[ti].partition_result.count, (int32_t)pi);
    return &r->replica_election_results.items[ti].partition_result.items[pi];
}

START_TEST(test_elect_named) {
    cl_t cl;
    cl_setup(&cl);
    /* broker 1 fenced and back: p0 led by 2, 1 out of every ISR */
    ck_assert_int_eq(heartbeat(&cl, 1, true, false, NULL), 0);
    ck_assert_int_eq(heartbeat(&cl, 1, false, false, NULL), 0);
    ck_assert_int_eq(part(&cl, 0)->leader, 2);
    ck_assert(!bk_meta_ids_has(&part(&cl, 0)->isr, 1));

    int32_t ps[] = { 0, 1, 9, 0 }, ps_u[] = { 0 };
    el_tp_t tps[2];
    kp_elect_leaders_request_topic_partitions_init(&tps[0]);
    kp_elect_leaders_request_topic_partitions_init(&tps[1]);
    tps[0].topic = kp_slice_cstr("t");
    tps[0].partitions.items = ps;
    tps[0].partitions.count = 4;
    tps[1].topic = kp_slice_cstr("nope");
    tps[1].partitions.items = ps_u;
    tps[1].partitions.count = 1;
    kp_elect_leaders_request_t q;
    kp_elect_leaders_request_init(&q);
    q.topic_partitions.items = tps;
    q.topic_partitions.count = 2;
    kp_elect_leaders_response_t r;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    ck_assert_int_eq(bk_meta_elect_leaders_decide(&cl.ctrl, &cl.img, &q, &cl.arena, &recs, &r), KP_OK);
    ck_assert_uint_eq(recs.n, 0);
    ck_assert_int_eq(r.error_code, 0);
    ck_assert_int_eq(r.replica_election_results.count, 2);
    ck_assert_int_eq(r.replica_election_results.items[0].topic.len, 1);
    ck_assert_int_eq(el_result(&r, 0, 0)->partition_id, 0);
    ck_assert_int_eq(el_result(&r, 0, 0)->error_code, KP_ERROR_PREFERRED_LEADER_NOT_AVAILABLE);
    ck_assert(!kp_slice_is_null(el_result(&r, 0, 0)->error_message));
    ck_assert_int_eq(el_result(&r, 0, 1)->error_code, KP_ERROR_ELECTION_NOT_NEEDED);
    ck_assert_int_eq(el_result(&r, 0, 2)->partition_id, 9);
    ck_assert_int_eq(el_result(&r, 0, 2)->error_code, KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION);
    ck_assert_int_eq(el_result(&r, 0, 3)->error_code, KP_ERROR_INVALID_REQUEST);   /* repeat */
    ck_assert_int_eq(el_result(&r, 1, 0)->error_code, KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION);

    /* 1 back in p0's ISR: the election moves the leader */
    const int32_t isr[] = { 2, 3, 1 };
    ck_assert_int_eq(alter_isr(&cl, "t", 0, isr, 3), 0);
    int32_t epoch = part(&cl, 0)->leader_epoch;
    tps[0].partitions.count = 2;
    q.topic_partitions.count = 1;
    ck_assert_int_eq(bk_meta_elect_leaders_decide(&cl.ctrl, &cl.img, &q, &cl.arena, &recs, &r), KP_OK);
    ck_assert_int_eq(el_result(&r, 0, 0)->error_code, 0);
    ck_assert(kp_slice_is_null(el_result(&r, 0, 0)->error_message));
    ck_assert_int_eq(el_result(&r, 0, 1)->error_code, KP_ERROR_ELECTION_NOT_NEEDED);
    ck_assert_uint_eq(commit(&cl, &recs), 1);
    ck_assert_int_eq(part(&cl, 0)->leader, 1);
    ck_assert_int_eq(part(&cl, 0)->leader_epoch, epoch + 1);
    /* a failed commit turns the successes (only) into its error */
    bk_meta_elect_commit_failed(&r, KP_ERROR_NOT_CONTROLLER);
    ck_assert_int_eq(el_result(&r, 0, 0)->error_code, KP_ERROR_NOT_CONTROLLER);
    ck_assert(!kp_slice_is_null(el_result(&r, 0, 0)->error_message));
    ck_assert_int_eq(el_result(&r, 0, 1)->error_code, KP_ERROR_ELECTION_NOT_NEEDED);
    /* again: not needed */
    ck_assert_int_eq(bk_meta_elect_leaders_decide(&cl.ctrl, &cl.img, &q, &cl.arena, &recs, &r), KP_OK);
    ck_assert_int_eq(el_result(&r, 0, 0)->error_code, KP_ERROR_ELECTION_NOT_NEEDED);
    ck_assert_uint_eq(recs.n, 0);

    /* unclean on a partition with a leader: not needed */
    q.election_type = BK_META_ELECT_UNCLEAN;
    ck_assert_int_eq(bk_meta_elect_leaders_decide(&cl.ctrl, &cl.img, &q, &cl.arena, &recs, &r), KP_OK);
    ck_assert_int_eq(el_result(&r, 0, 0)->error_code, KP_ERROR_ELECTION_NOT_NEEDED);
    /* unknown election type: top-level and per partition INVALID_REQUEST */
    q.election_type = 7;
    ck_assert_int_eq(bk_meta_elect_leaders_decide(&cl.ctrl, &cl.img, &q, &cl.arena, &recs, &r), KP_OK);
    ck_assert_int_eq(r.error_code, KP_ERROR_INVALID_REQUEST);
    ck_assert_int_eq(el_result(&r, 0, 0)->error_code, KP_ERROR_INVALID_REQUEST);
    ck_assert_int_eq(el_result(&r, 0, 1)->error_code, KP_ERROR_INVALID_REQUEST);
    ck_assert_uint_eq(recs.n, 0);
    bk_meta_recs_free(&recs);
    cl_free(&cl);
}
END_TEST

START_TEST(test_elect_all) {
    cl_t cl;
    cl_setup(&cl);
    kp_elect_leaders_request_t q;
    kp_elect_leaders_request_init(&q);
    q.topic_partitions.count = -1;
    kp_elect_leaders_response_t r;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    /* every preferred replica leads: nothing in the answer */
    ck_assert_int_eq(bk_meta_elect_leaders_decide(&cl.ctrl, &cl.img, &q, &cl.arena, &recs, &r), KP_OK);
    ck_assert_int_eq(r.replica_election_results.count, 0);
    ck_assert_uint_eq(recs.n, 0);
    /* broker 3 fenced and back in the ISRs: only p2 (preferred 3) is answered */
    ck_assert_int_eq(heartbeat(&cl, 3, true, false, NULL), 0);
    ck_assert_int_eq(heartbeat(&cl, 3, false, false, NULL), 0);
    for (int32_t p = 0; p < 3; p++) ck_assert_int_eq(alter_isr(&cl, "t", p, part(&cl, p)->replicas.v, 3), 0);
    ck_assert_int_ne(part(&cl, 2)->leader, 3);
    ck_assert_int_eq(bk_meta_elect_leaders_decide(&cl.ctrl, &cl.img, &q, &cl.arena, &recs, &r), KP_OK);
    ck_assert_int_eq(r.replica_election_results.count, 1);
    ck_assert_int_eq(r.replica_election_results.items[0].partition_result.count, 1);
    ck_assert_int_eq(memcmp(r.replica_election_results.items[0].topic.p, "t", 1), 0);
    ck_assert_int_eq(el_result(&r, 0, 0)->partition_id, 2);
    ck_assert_int_eq(el_result(&r, 0, 0)->error_code, 0);
    ck_assert_uint_eq(commit(&cl, &recs), 1);
    ck_assert_int_eq(part(&cl, 2)->leader, 3);
    /* unknown type with a null list: top-level error, no results */
    q.election_type = -1;
    ck_assert_int_eq(bk_meta_elect_leaders_decide(&cl.ctrl, &cl.img, &q, &cl.arena, &recs, &r), KP_OK);
    ck_assert_int_eq(r.error_code, KP_ERROR_INVALID_REQUEST);
    ck_assert_int_eq(r.replica_election_results.count, 0);
    bk_meta_recs_free(&recs);
    cl_free(&cl);
}
END_TEST

/* ---- reassignments ----------------------------------------------------------- */

typedef kp_alter_partition_reassignments_request_reassignable_partition_t ar_p_t;

static int16_t ar_err(const kp_alter_partition_reassignments_response_t *r, size_t ti, size_t pi) {
    ck_assert_int_gt(r->responses.count, (int32_t)ti);
    ck_assert_int_gt(r->responses.items[ti].partitions.count, (int32_t)pi);
    return r->responses.items[ti].partitions.items[pi].error_code;
}

/* One topic, the given partitions. */
static void reassign(cl_t *cl, const char *topic, ar_p_t *ps, int32_t n, bk_meta_recs_t *recs,
                     kp_alter_partition_reassignments_response_t *r) {
    kp_alter_partition_reassignments_request_reassignable_topic_t t;
    kp_alter_partition_reassignments_request_reassignable_topic_init(&t);
    t.name = kp_slice_cstr(topic);
    t.partitions.items = ps;
    t.partitions.count = n;
    kp_alter_partition_reassignments_request_t q;
    kp_alter_partition_reassignments_request_init(&q);
    q.topics.items = &t;
    q.topics.count = 1;
    ck_assert_int_eq(bk_meta_reassign_decide(&cl->ctrl, &cl->img, &q, &cl->arena, recs, r), KP_OK);
    ck_assert_int_eq(r->error_code, 0);
    for (int32_t i = 0; i < n; i++) ck_assert_int_eq(r->responses.items[0].partitions.items[i].partition_index,
                                                     ps[i].partition_index);
}

static ar_p_t ar_part(int32_t p, int32_t *reps, int32_t n) {
    ar_p_t x;
    kp_alter_partition_reassignments_request_reassignable_partition_init(&x);
    x.partition_index = p;
    x.replicas.items = reps;
    x.replicas.count = n;
    return x;
}

static kp_list_partition_reassignments_response_t list_all(cl_t *cl) {
    kp_list_partition_reassignments_request_t q;
    kp_list_partition_reassignments_request_init(&q);
    q.topics.count = -1;
    kp_list_partition_reassignments_response_t r;
    ck_assert_int_eq(bk_meta_list_reassign_answer(&cl->img, &q, &cl->arena, &r), KP_OK);
    return r;
}

START_TEST(test_reassign_errors_and_cancel) {
    cl_t cl;
    cl_setup(&cl);
    int32_t dup[] = { 2, 2 }, unknown[] = { 2, 9 }, neg[] = { -1 }, target[] = { 2, 3, 4 };
    ar_p_t ps[] = { ar_part(0, dup, 2), ar_part(1, unknown, 2), ar_part(2, neg, 1), ar_part(7, target, 3) };
    kp_alter_partition_reassignments_response_t r;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    reassign(&cl, "t", ps, 4, &recs, &r);
    ck_assert_int_eq(ar_err(&r, 0, 0), KP_ERROR_INVALID_REPLICA_ASSIGNMENT);
    ck_assert_int_eq(ar_err(&r, 0, 1), KP_ERROR_INVALID_REPLICA_ASSIGNMENT);
    ck_assert_int_eq(ar_err(&r, 0, 2), KP_ERROR_INVALID_REPLICA_ASSIGNMENT);
    ck_assert_int_eq(ar_err(&r, 0, 3), KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION);
    ar_p_t ps2[] = { ar_part(0, target, 0), ar_part(1, NULL, -1) };
    reassign(&cl, "t", ps2, 2, &recs, &r);
    ck_assert_int_eq(ar_err(&r, 0, 0), KP_ERROR_INVALID_REPLICA_ASSIGNMENT);   /* empty, not a cancel */
    ck_assert_int_eq(ar_err(&r, 0, 1), KP_ERROR_NO_REASSIGNMENT_IN_PROGRESS);
    ck_assert_uint_eq(recs.n, 0);
    reassign(&cl, "nope", ps + 3, 1, &recs, &r);
    ck_assert_int_eq(ar_err(&r, 0, 0), KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION);
    ck_assert_int_eq(list_all(&cl).topics.count, 0);

    /* p0 [1,2,3] -> [2,3,4]; a repeat of p0 in the same request is refused */
    ar_p_t mv[] = { ar_part(0, target, 3), ar_part(0, dup, 2) };
    reassign(&cl, "t", mv, 2, &recs, &r);
    ck_assert_int_eq(ar_err(&r, 0, 0), 0);
    ck_assert(kp_slice_is_null(r.responses.items[0].partitions.items[0].error_message));
    ck_assert_int_eq(ar_err(&r, 0, 1), KP_ERROR_INVALID_REQUEST);
    ck_assert_uint_eq(commit(&cl, &recs), 1);
    kp_list_partition_reassignments_response_t l = list_all(&cl);
    ck_assert_int_eq(l.topics.count, 1);
    ck_assert_int_eq(l.topics.items[0].partitions.count, 1);
    const kp_list_partition_reassignments_response_ongoing_partition_reassignment_t *lp =
        &l.topics.items[0].partitions.items[0];
    ck_assert_int_eq(lp->partition_index, 0);
    const int32_t all[] = { 2, 3, 4, 1 };
    ck_assert_int_eq(lp->replicas.count, 4);
    ck_assert_mem_eq(lp->replicas.items, all, sizeof all);
    ck_assert_int_eq(lp->adding_replicas.count, 1);
    ck_assert_int_eq(lp->adding_replicas.items[0], 4);
    ck_assert_int_eq(lp->removing_replicas.count, 1);
    ck_assert_int_eq(lp->removing_replicas.items[0], 1);

    /* named lists: p1 (not moving), p0 twice, an unknown topic */
    int32_t want[] = { 1, 0, 0, 99 };
    kp_list_partition_reassignments_request_list_partition_reassignments_topics_t lt[2];
    kp_list_partition_reassignments_request_list_partition_reassignments_topics_init(&lt[0]);
    kp_list_partition_reassignments_request_list_partition_reassignments_topics_init(&lt[1]);
    lt[0].name = kp_slice_cstr("t");
    lt[0].partition_indexes.items = want;
    lt[0].partition_indexes.count = 4;
    lt[1].name = kp_slice_cstr("nope");
    kp_list_partition_reassignments_request_t lq;
    kp_list_partition_reassignments_request_init(&lq);
    lq.topics.items = lt;
    lq.topics.count = 2;
    ck_assert_int_eq(bk_meta_list_reassign_answer(&cl.img, &lq, &cl.arena, &l), KP_OK);
    ck_assert_int_eq(l.topics.count, 1);
    ck_assert_int_eq(l.topics.items[0].partitions.count, 1);
    ck_assert_int_eq(l.topics.items[0].partitions.items[0].partition_index, 0);
    lt[0].partition_indexes.count = 1;   /* only p1 */
    ck_assert_int_eq(bk_meta_list_reassign_answer(&cl.img, &lq, &cl.arena, &l), KP_OK);
    ck_assert_int_eq(l.topics.count, 0);

    /* cancel: back to [1,2,3], nothing listed */
    ar_p_t cancel = ar_part(0, NULL, -1);
    reassign(&cl, "t", &cancel, 1, &recs, &r);
    ck_assert_int_eq(ar_err(&r, 0, 0), 0);
    ck_assert_uint_eq(commit(&cl, &recs), 1);
    /* as KRaft: the replicas minus the adding ones, in their current order */
    const int32_t orig[] = { 2, 3, 1 };
    ck_assert_int_eq(part(&cl, 0)->replicas.n, 3);
    ck_assert_mem_eq(part(&cl, 0)->replicas.v, orig, sizeof orig);
    ck_assert_int_eq(part(&cl, 0)->adding.n + part(&cl, 0)->removing.n, 0);
    ck_assert_int_eq(list_all(&cl).topics.count, 0);
    /* failed commit mapping */
    reassign(&cl, "t", mv, 1, &recs, &r);
    bk_meta_reassign_commit_failed(&r, KP_ERROR_NOT_CONTROLLER);
    ck_assert_int_eq(ar_err(&r, 0, 0), KP_ERROR_NOT_CONTROLLER);
    bk_meta_recs_free(&recs);
    cl_free(&cl);
}
END_TEST

START_TEST(test_reassign_completes_and_moves_leader) {
    cl_t cl;
    cl_setup(&cl);
    int32_t target[] = { 4 };
    ar_p_t mv = ar_part(0, target, 1);
    kp_alter_partition_reassignments_response_t r;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    reassign(&cl, "t", &mv, 1, &recs, &r);
    ck_assert_int_eq(ar_err(&r, 0, 0), 0);
    commit(&cl, &recs);
    ck_assert_int_eq(part(&cl, 0)->leader, 1);   /* 1 leads until 4 has caught up */
    const int32_t isr[] = { 1, 2, 3, 4 };
    ck_assert_int_eq(alter_isr(&cl, "t", 0, isr, 4), 0);
    const bk_meta_partition_t *p = part(&cl, 0);
    ck_assert_int_eq(p->replicas.n, 1);
    ck_assert_int_eq(p->replicas.v[0], 4);
    ck_assert_int_eq(p->isr.n, 1);
    ck_assert_int_eq(p->leader, 4);
    ck_assert_int_eq(list_all(&cl).topics.count, 0);
    bk_meta_recs_free(&recs);
    cl_free(&cl);
}
END_TEST

START_TEST(test_dispatch_entries) {
    const struct { int16_t key, max; } want[] = {
        { KP_API_ELECT_LEADERS, 2 },
        { KP_API_ALTER_PARTITION_REASSIGNMENTS, 0 },
        { KP_API_LIST_PARTITION_REASSIGNMENTS, 0 },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const bk_api_entry_t *e = bk_api_dispatch_find(want[i].key);
        ck_assert_ptr_nonnull(e);
        ck_assert_int_eq(e->min_version, 0);
        ck_assert_int_eq(e->max_version, want[i].max);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("reassign");
    TCase *tc = tcase_create("reassign");
    tcase_add_test(tc, test_elect_named);
    tcase_add_test(tc, test_elect_all);
    tcase_add_test(tc, test_reassign_errors_and_cancel);
    tcase_add_test(tc, test_reassign_completes_and_moves_leader);
    tcase_add_test(tc, test_dispatch_entries);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
