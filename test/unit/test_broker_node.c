/* test_broker_node.c — the node's pure-ish parts: the dispatch table
 * (what ApiVersions advertises), the local metadata committer (commit ->
 * replay reproduces the image; a bad record stops the node, naming the
 * offset; a failed decision commits nothing) and the partition manager
 * (hash table growth, lookups, stop/delete). */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "broker/meta/controller.h"
#include "broker/api/dispatch.h"
#include "broker/api/fetch_session.h"
#include "broker/meta/meta_log.h"
#include "broker/replication/parts.h"
#include "protocol/kp_arena.h"
#include "protocol/kp_batch.h"
#include "storage/st_log.h"
#include "test/unit/st_test_util.h"

/* ---- dispatch table ------------------------------------------------------ */

START_TEST(test_table_sorted_and_from_codec) {
    size_t n = 0;
    const bk_api_entry_t *t = bk_api_dispatch_table(&n);
    ck_assert_uint_ge(n, 17);
    for (size_t i = 0; i < n; i++) {
        const kp_api_info_t *api = kp_api_info(t[i].api_key);
        ck_assert_ptr_nonnull(api);
        ck_assert_ptr_nonnull(t[i].fn);
        ck_assert_int_eq(t[i].min_version, api->min_version);
        ck_assert_int_eq(t[i].max_version, api->max_stable_version);
        ck_assert_int_le(t[i].min_version, t[i].max_version);
        if (i > 0) ck_assert_int_lt(t[i - 1].api_key, t[i].api_key);
        ck_assert_ptr_eq(bk_api_dispatch_find(t[i].api_key), &t[i]);
    }
}
END_TEST

/* INDEX.md "What a broker has to accept": librdkafka's feature gates and
 * kafka-python's version guess depend on these ranges. */
START_TEST(test_table_client_feature_gates) {
    const bk_api_entry_t *e;
    e = bk_api_dispatch_find(KP_API_PRODUCE);
    ck_assert(e && e->min_version == 0 && e->max_version >= 8);   /* MsgVer1/2, zstd, kpy (2,4,0) */
    e = bk_api_dispatch_find(KP_API_FETCH);
    ck_assert(e && e->min_version == 0 && e->max_version >= 11);
    e = bk_api_dispatch_find(KP_API_FIND_COORDINATOR);
    ck_assert(e && e->min_version == 0);                           /* LZ4 + groups gate */
    e = bk_api_dispatch_find(KP_API_METADATA);
    ck_assert(e && e->min_version == 0 && e->max_version >= 5);
    e = bk_api_dispatch_find(KP_API_API_VERSIONS);
    ck_assert(e && e->min_version == 0 && e->max_version >= 3);
    e = bk_api_dispatch_find(KP_API_LIST_OFFSETS);
    ck_assert(e && e->min_version == 0 && e->max_version >= 5);
    /* the classic group protocol from v0 (kafka-python guesses its version
     * from these; librdkafka's broker.version.fallback paths use v0) */
    static const int16_t group_apis[] = { KP_API_OFFSET_COMMIT, KP_API_OFFSET_FETCH, KP_API_JOIN_GROUP,
                                          KP_API_HEARTBEAT, KP_API_LEAVE_GROUP, KP_API_SYNC_GROUP,
                                          KP_API_DESCRIBE_GROUPS, KP_API_LIST_GROUPS, KP_API_DELETE_GROUPS,
                                          KP_API_OFFSET_DELETE };
    for (size_t i = 0; i < sizeof group_apis / sizeof group_apis[0]; i++) {
        e = bk_api_dispatch_find(group_apis[i]);
        ck_assert_msg(e && e->min_version == 0, "group api %d", group_apis[i]);
    }
    e = bk_api_dispatch_find(KP_API_OFFSET_FETCH);
    ck_assert(e->max_version >= 8);                                /* several groups per request */
    /* SASL: advertised always, as Kafka does (issue 17) */
    e = bk_api_dispatch_find(KP_API_SASL_HANDSHAKE);
    ck_assert(e && e->min_version == 0 && e->max_version == 1);
    e = bk_api_dispatch_find(KP_API_SASL_AUTHENTICATE);
    ck_assert(e && e->min_version == 0 && e->max_version == 2);
    ck_assert_ptr_nonnull(bk_api_dispatch_find(KP_API_DESCRIBE_USER_SCRAM_CREDENTIALS));
    ck_assert_ptr_nonnull(bk_api_dispatch_find(KP_API_ALTER_USER_SCRAM_CREDENTIALS));
    /* ACLs (issue 18): every version of the reference, 0..3 */
    static const int16_t acl_apis[] = { KP_API_DESCRIBE_ACLS, KP_API_CREATE_ACLS, KP_API_DELETE_ACLS };
    for (size_t i = 0; i < sizeof acl_apis / sizeof acl_apis[0]; i++) {
        e = bk_api_dispatch_find(acl_apis[i]);
        ck_assert_msg(e && e->min_version == 0 && e->max_version == 3, "acl api %d", acl_apis[i]);
    }
    /* not served: must not be advertised */
    ck_assert_ptr_null(bk_api_dispatch_find(999));
    ck_assert_ptr_null(bk_api_dispatch_find(-1));
}
END_TEST

/* ---- metadata committer ------------------------------------------------------ */

typedef struct { int calls; int status; int64_t first; } done_t;
static void on_done(void *arg, int status, int64_t first) {
    done_t *d = arg;
    d->calls++;
    d->status = status;
    d->first = first;
}

static void setup_dir(st_logdir_t *ld, const char *path) {
    ck_assert_int_eq(st_logdir_load(ld, path), KP_OK);
}

static void register_broker(bk_meta_ctrl_t *c, bk_meta_log_t *m, bk_meta_image_t *img, int32_t id) {
    bk_meta_ctrl_endpoint_t ep = { "PLAINTEXT", "127.0.0.1", 9000 };
    bk_meta_ctrl_register_t rq;
    memset(&rq, 0, sizeof rq);
    rq.broker_id = id;
    rq.incarnation[0] = 1;
    rq.incarnation[15] = (uint8_t)id;
    rq.endpoints = &ep;
    rq.nendpoints = 1;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    int64_t epoch = 0;
    ck_assert_int_eq(bk_meta_ctrl_register(c, img, &rq, bk_meta_log_next_offset(m), 0, &recs, &epoch), 0);
    done_t d = { 0, -99, -1 };
    bk_meta_log_propose(m, &recs, 0, on_done, &d);
    ck_assert_int_eq(d.calls, 1);
    ck_assert_int_eq(d.status, KP_OK);
    ck_assert_int_eq(d.first, epoch);
    bk_meta_recs_free(&recs);
    bk_meta_ctrl_heartbeat_t hb = { id, epoch, img->last_offset, false, false };
    bk_meta_ctrl_heartbeat_result_t hr;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_heartbeat(c, img, &hb, 0, &recs, &hr);
    ck_assert_int_eq(hr.error, 0);
    d.calls = 0;
    bk_meta_log_propose(m, &recs, 0, on_done, &d);
    ck_assert_int_eq(d.status, KP_OK);
    bk_meta_recs_free(&recs);
    ck_assert(bk_meta_image_broker_usable(img, id));
}

static void create_topic(bk_meta_ctrl_t *c, bk_meta_log_t *m, bk_meta_image_t *img, const char *name, int32_t parts) {
    bk_meta_ctrl_create_topic_t t = { name, parts, 1, NULL, 0, NULL, 0 };
    bk_meta_ctrl_create_result_t res;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_create_topics(c, img, &t, 1, false, &recs, &res);
    ck_assert_int_eq(res.error, 0);
    done_t d = { 0, -99, -1 };
    bk_meta_log_propose(m, &recs, 0, on_done, &d);
    ck_assert_int_eq(d.status, KP_OK);
    bk_meta_recs_free(&recs);
}

START_TEST(test_meta_log_commit_and_replay) {
    char *dir = tu_tmpdir();
    st_logdir_t ld;
    setup_dir(&ld, dir);
    char err[512] = "";
    bk_meta_image_t img;
    bk_meta_image_init(&img, 1);
    bk_meta_log_t *m = bk_meta_log_open(&ld, &img, 0, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    ck_assert_int_eq(bk_meta_log_next_offset(m), 0);
    bk_meta_ctrl_t c;
    bk_meta_ctrl_config_t cc;
    bk_meta_ctrl_config_defaults(&cc);
    bk_meta_ctrl_init(&c, &cc, 42);
    register_broker(&c, m, &img, 1);
    create_topic(&c, m, &img, "orders", 3);
    create_topic(&c, m, &img, "payments", 2);
    /* an empty decision commits nothing and succeeds */
    bk_meta_recs_t empty;
    bk_meta_recs_init(&empty);
    done_t d = { 0, -99, -1 };
    int64_t before = bk_meta_log_next_offset(m);
    bk_meta_log_propose(m, &empty, 0, on_done, &d);
    ck_assert_int_eq(d.status, KP_OK);
    ck_assert_int_eq(bk_meta_log_next_offset(m), before);
    /* a failed decision (sticky error) commits nothing */
    empty.err = KP_ERR_NOMEM;
    d.calls = 0;
    bk_meta_log_propose(m, &empty, 0, on_done, &d);
    ck_assert_int_eq(d.calls, 1);
    ck_assert_int_eq(d.status, KP_ERR_NOMEM);
    ck_assert_int_eq(bk_meta_log_next_offset(m), before);
    int64_t last = img.last_offset;
    ck_assert_int_eq(last + 1, bk_meta_log_next_offset(m));
    ck_assert_int_eq(bk_meta_log_close(m, NULL), KP_OK);

    uint8_t *snap1 = NULL, *snap2 = NULL;
    size_t len1 = 0, len2 = 0;
    ck_assert_int_eq(bk_meta_image_snapshot(&img, &snap1, &len1), KP_OK);
    bk_meta_image_t img2;
    bk_meta_image_init(&img2, 1);
    m = bk_meta_log_open(&ld, &img2, 0, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    ck_assert_int_eq(img2.last_offset, last);
    ck_assert_ptr_nonnull(bk_meta_image_topic_by_name(&img2, "orders"));
    ck_assert_int_eq(bk_meta_image_topic_by_name(&img2, "payments")->nparts, 2);
    ck_assert_int_eq(bk_meta_image_snapshot(&img2, &snap2, &len2), KP_OK);
    ck_assert_uint_eq(len1, len2);
    ck_assert_mem_eq(snap1, snap2, len1);
    ck_assert_int_eq(bk_meta_log_close(m, NULL), KP_OK);
    free(snap1);
    free(snap2);
    bk_meta_image_free(&img);
    bk_meta_image_free(&img2);
    st_logdir_free(&ld);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* A record the image refuses (bytes that are not a MetadataRecord) stops
 * the open, naming the offset. */
START_TEST(test_meta_log_bad_record_refused) {
    char *dir = tu_tmpdir();
    st_log_config_t lc;
    st_log_config_default(&lc);
    st_log_open_opts_t o = { .create = true };
    st_log_t *log = NULL;
    ck_assert_int_eq(st_log_open(dir, BK_META_TOPIC, 0, &lc, &o, &log), KP_OK);
    kp_batch_opts_t bo = kp_batch_opts_default();
    bo.max_bytes = 1 << 20;
    kp_batch_builder_t bb;
    kp_batch_builder_init(&bb, &bo);
    static const uint8_t junk[] = { 0xff, 0xff, 0xff, 0x01 };
    kp_record_in_t ri = { 0, kp_slice_null(), { junk, sizeof junk }, NULL, 0 };
    ck_assert_int_eq(kp_batch_builder_add(&bb, &ri), KP_OK);
    kp_arena_t a;
    kp_arena_init(&a, 1 << 20);
    const uint8_t *b = NULL;
    size_t blen = 0;
    ck_assert_int_eq(kp_batch_builder_finish(&bb, &a, &b, &blen), KP_OK);
    uint8_t *copy = malloc(blen);
    memcpy(copy, b, blen);
    st_append_info_t info;
    ck_assert_int_eq(st_log_append(log, copy, blen, 0, 0, &info), KP_OK);
    ck_assert_int_eq(st_log_close(log, NULL), KP_OK);
    free(copy);
    kp_batch_builder_free(&bb);
    kp_arena_free(&a);

    st_logdir_t ld;
    setup_dir(&ld, dir);
    bk_meta_image_t img;
    bk_meta_image_init(&img, 1);
    char err[512] = "";
    bk_meta_log_t *m = bk_meta_log_open(&ld, &img, 0, err, sizeof err);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(err, "offset 0") != NULL, "%s", err);
    ck_assert_int_eq(img.last_offset, -1);
    bk_meta_image_free(&img);
    st_logdir_free(&ld);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* ---- partition manager --------------------------------------------------------- */

static void small_cfg(void *ctx, const char *topic, st_log_config_t *out) {
    (void)ctx;
    (void)topic;
    st_log_config_default(out);
    out->index_max_bytes = 4096;
}

static size_t trashed;
static char last_trash[1024];
static void trash_collect(void *ctx, const char *path) {
    (void)ctx;
    trashed++;
    snprintf(last_trash, sizeof last_trash, "%s", path);
}

static size_t feed(bk_repl_parts_t *p, bk_meta_image_t *img) {
    size_t max = bk_meta_image_pending_changes(img);
    bk_meta_change_t *ch = calloc(max + 1, sizeof *ch);
    size_t n = bk_meta_image_take_changes(img, ch, max);
    ck_assert_uint_le(n, max);
    size_t failed = bk_repl_parts_apply(p, img, ch, n, small_cfg, NULL, trash_collect, 0);
    free(ch);
    return failed;
}

typedef struct { size_t n; } count_t;
static void count_one(bk_repl_part_t *p, void *ctx) {
    ck_assert(p->used);
    ((count_t *)ctx)->n++;
}

START_TEST(test_parts_grow_lookup_stop_delete) {
    char *dir = tu_tmpdir();
    char *mdir = tu_tmpdir();
    st_logdir_t ld, mld;
    setup_dir(&ld, dir);
    setup_dir(&mld, mdir);
    bk_meta_image_t img;
    bk_meta_image_init(&img, 1);
    char err[512];
    bk_meta_log_t *m = bk_meta_log_open(&mld, &img, 0, err, sizeof err);
    ck_assert_ptr_nonnull(m);
    bk_meta_ctrl_t c;
    bk_meta_ctrl_config_t cc;
    bk_meta_ctrl_config_defaults(&cc);
    bk_meta_ctrl_init(&c, &cc, 7);
    register_broker(&c, m, &img, 1);
    bk_repl_parts_t *p = bk_repl_parts_new(&ld, 1);
    ck_assert_ptr_nonnull(p);
    create_topic(&c, m, &img, "big", 150);      /* several table growths */
    create_topic(&c, m, &img, "small", 2);
    ck_assert_uint_eq(feed(p, &img), 0);
    ck_assert_uint_eq(bk_repl_parts_count(p), 152);
    const bk_meta_topic_t *big = bk_meta_image_topic_by_name(&img, "big");
    for (int32_t i = 0; i < 150; i++) {
        bk_repl_part_t *x = bk_repl_parts_get(p, &big->id, i);
        ck_assert_ptr_nonnull(x);
        ck_assert_int_eq(x->partition, i);
        ck_assert_str_eq(x->topic, "big");
        ck_assert(x->leader);
        ck_assert_ptr_nonnull(x->log);
    }
    ck_assert_ptr_null(bk_repl_parts_get(p, &big->id, 150));
    count_t cnt = { 0 };
    bk_repl_parts_each(p, count_one, &cnt);
    ck_assert_uint_eq(cnt.n, 152);
    /* deleting "big" removes its logs and directories; "small" stays findable */
    bk_meta_uuid_t big_id = big->id;
    bk_meta_ctrl_delete_topic_t del = { "big", { { 0 } } };
    bk_meta_ctrl_delete_result_t dres;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_delete_topics(&c, &img, &del, 1, &recs, &dres);
    ck_assert_int_eq(dres.error, 0);
    done_t d = { 0, -99, -1 };
    bk_meta_log_propose(m, &recs, 0, on_done, &d);
    ck_assert_int_eq(d.status, KP_OK);
    bk_meta_recs_free(&recs);
    trashed = 0;
    ck_assert_uint_eq(feed(p, &img), 0);
    ck_assert_uint_eq(bk_repl_parts_count(p), 2);
    /* deleted partitions are renamed away and handed over for removal */
    ck_assert_uint_eq(trashed, 150);
    ck_assert(bk_repl_parts_is_trash(strrchr(last_trash, '/') + 1));
    struct stat tst;
    ck_assert_int_eq(stat(last_trash, &tst), 0);
    ck_assert(!bk_repl_parts_is_trash("orders-0"));
    ck_assert(!bk_repl_parts_is_trash("-delete"));
    ck_assert_ptr_null(bk_repl_parts_get(p, &big_id, 0));
    const bk_meta_topic_t *small = bk_meta_image_topic_by_name(&img, "small");
    ck_assert_ptr_nonnull(bk_repl_parts_get(p, &small->id, 0));
    ck_assert_ptr_nonnull(bk_repl_parts_get(p, &small->id, 1));
    char path[600];
    struct stat st;
    snprintf(path, sizeof path, "%s/big-0", dir);
    ck_assert_int_ne(stat(path, &st), 0);
    snprintf(path, sizeof path, "%s/small-1", dir);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(bk_repl_parts_close_all(p, NULL, -1), KP_OK);
    /* the checkpoint names the two remaining partitions */
    char *text = NULL;
    size_t tlen = 0;
    snprintf(path, sizeof path, "%s/recovery-point-offset-checkpoint", dir);
    ck_assert_int_eq(st_read_small_file(path, 1 << 20, &text, &tlen), KP_OK);
    ck_assert_ptr_nonnull(strstr(text, "small 0"));
    ck_assert_ptr_null(strstr(text, "big "));
    free(text);
    ck_assert_int_eq(bk_meta_log_close(m, NULL), KP_OK);
    bk_meta_image_free(&img);
    st_logdir_free(&ld);
    st_logdir_free(&mld);
    tu_rmrf(dir);
    tu_rmrf(mdir);
    free(dir);
    free(mdir);
}
END_TEST

/* ---- fetch session cache ------------------------------------------------------------ */

START_TEST(test_fetch_sessions_bounded) {
    bk_api_fs_cache_t c;
    ck_assert_int_eq(bk_api_fs_cache_init(&c, 2, 99), KP_OK);
    bk_api_fs_t *a = bk_api_fs_create(&c, 1000);
    ck_assert_ptr_nonnull(a);
    int32_t ida = a->id;
    ck_assert_int_gt(ida, 0);
    ck_assert_int_eq(a->epoch, 1);
    bk_api_fs_t *b = bk_api_fs_create(&c, 2000);
    ck_assert_ptr_nonnull(b);
    int32_t idb = b->id;
    ck_assert_int_ne(ida, idb);
    /* full, and both used recently: no third session */
    ck_assert_ptr_null(bk_api_fs_create(&c, 1000 + BK_API_FS_EVICT_IDLE_MS - 1));
    ck_assert_ptr_eq(bk_api_fs_find(&c, ida), a);
    /* later the least recently used (a) is evicted */
    bk_api_fs_t *d = bk_api_fs_create(&c, 1000 + BK_API_FS_EVICT_IDLE_MS);
    ck_assert_ptr_nonnull(d);
    ck_assert_ptr_null(bk_api_fs_find(&c, ida));
    ck_assert_ptr_nonnull(bk_api_fs_find(&c, idb));
    ck_assert_uint_eq(c.used, 2);
    /* partitions: upsert by name, update in place, forget keeps order */
    kp_uuid_t zero = { { 0 } };
    kp_str_t t = { (const uint8_t *)"orders", 6 };
    for (int32_t p = 0; p < 5; p++)
        ck_assert_int_eq(bk_api_fs_part_upsert(d, false, t, &zero, p, p * 10, 100, -1), KP_OK);
    ck_assert_uint_eq(d->n, 5);
    ck_assert_int_eq(bk_api_fs_part_find(d, false, t, &zero, 3)->last_hw, BK_API_FS_NEVER);
    ck_assert_int_eq(bk_api_fs_part_upsert(d, false, t, &zero, 3, 77, 100, 2), KP_OK);
    ck_assert_uint_eq(d->n, 5);
    ck_assert_int_eq(bk_api_fs_part_find(d, false, t, &zero, 3)->fetch_offset, 77);
    bk_api_fs_part_forget(d, false, t, &zero, 1);
    ck_assert_uint_eq(d->n, 4);
    ck_assert_ptr_null(bk_api_fs_part_find(d, false, t, &zero, 1));
    ck_assert_int_eq(d->parts[1].partition, 2);
    kp_str_t other = { (const uint8_t *)"order", 5 };
    ck_assert_ptr_null(bk_api_fs_part_find(d, false, other, &zero, 0));
    /* near a hint: the hinted entry when it matches, else a search */
    ck_assert_ptr_eq(bk_api_fs_part_find_near(d, 1, false, t, &zero, 2), &d->parts[1]);
    ck_assert_ptr_eq(bk_api_fs_part_find_near(d, 0, false, t, &zero, 4), &d->parts[3]);
    ck_assert_ptr_eq(bk_api_fs_part_find_near(d, 99, false, t, &zero, 3), &d->parts[2]);
    ck_assert_ptr_null(bk_api_fs_part_find_near(d, 0, false, t, &zero, 1));
    /* by id */
    kp_uuid_t id = { { 1, 2, 3 } };
    ck_assert_int_eq(bk_api_fs_part_upsert(d, true, kp_slice_null(), &id, 0, 5, 100, -1), KP_OK);
    ck_assert_ptr_nonnull(bk_api_fs_part_find(d, true, kp_slice_null(), &id, 0));
    bk_api_fs_remove(&c, d->id);
    ck_assert_uint_eq(c.used, 1);
    bk_api_fs_cache_free(&c);
    /* zero slots: never a session */
    ck_assert_int_eq(bk_api_fs_cache_init(&c, 0, 1), KP_OK);
    ck_assert_ptr_null(bk_api_fs_create(&c, 0));
    bk_api_fs_cache_free(&c);
}
END_TEST

int main(void) {
    Suite *s = suite_create("broker_node");
    TCase *tc = tcase_create("node");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_table_sorted_and_from_codec);
    tcase_add_test(tc, test_table_client_feature_gates);
    tcase_add_test(tc, test_meta_log_commit_and_replay);
    tcase_add_test(tc, test_meta_log_bad_record_refused);
    tcase_add_test(tc, test_parts_grow_lookup_stop_delete);
    tcase_add_test(tc, test_fetch_sessions_bounded);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
