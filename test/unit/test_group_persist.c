/* test_group_persist.c — the coordinator's __consumer_offsets records:
 * known-answer bytes, malformed records while loading, and a randomized run
 * of clients against the coordinator (with coordinator failovers) whose
 * records rebuild the same state, checking invariants after every step.
 * SKIFF_GRP_SEEDS=n runs n seeds, SKIFF_GRP_SEED=s starts at seed s; a
 * failure names its seed and step. */
#include "grp_test_util.h"

#include "broker/group/group_int.h"   /* rec_offset: the coordinator's own encoder */
#include "broker/group/group_cg.h"    /* a consumer group's records over a classic group */

#include <inttypes.h>

/* ---- a byte builder independent of the codec ---------------------------- */

typedef struct {
    uint8_t b[1024];
    size_t n;
} bytes_t;

static void put_be(bytes_t *x, uint64_t v, int width) {
    for (int i = width - 1; i >= 0; i--) x->b[x->n++] = (uint8_t)(v >> (8 * i));
}
static void put_str(bytes_t *x, const char *s) {
    if (!s) { put_be(x, 0xFFFF, 2); return; }
    put_be(x, strlen(s), 2);
    memcpy(x->b + x->n, s, strlen(s));
    x->n += strlen(s);
}
static void put_bytes(bytes_t *x, const char *s) {
    put_be(x, strlen(s), 4);
    memcpy(x->b + x->n, s, strlen(s));
    x->n += strlen(s);
}
static bool same(kp_bytes_t got, const bytes_t *want) {
    return got.p && got.len == want->n && memcmp(got.p, want->b, want->n) == 0;
}
static kp_bytes_t as_slice(const bytes_t *x) {
    kp_bytes_t s = { x->b, x->n };
    return s;
}

START_TEST(test_offset_record_bytes) {
    bk_grp_coord_t c;
    coord_new(&c, 0);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    bk_grp_commit_part_t p = { .topic = S("t"), .partition = 3, .offset = 5, .leader_epoch = 7,
                               .metadata = S("m"), .commit_ts_ms = -1 };
    bk_grp_commit_t cm = { .group_id = S("g"), .generation = -1, .retention_ms = -1,
                           .parts = &p, .nparts = 1 };
    int16_t err;
    ck_assert_int_eq(bk_grp_offset_commit(&c, &cm, 100, &o, &err), KP_ERROR_NONE);
    ck_assert_uint_eq(o.nrecs, 1);
    bytes_t key = { .n = 0 }, val = { .n = 0 };
    put_be(&key, 1, 2); put_str(&key, "g"); put_str(&key, "t"); put_be(&key, 3, 4);
    put_be(&val, 3, 2); put_be(&val, 5, 8); put_be(&val, 7, 4); put_str(&val, "m");
    put_be(&val, 100, 8);
    ck_assert(same(o.recs[0].key, &key));
    ck_assert(same(o.recs[0].value, &val));
    /* with a retention time Kafka writes value version 1 (with expireTimestamp) */
    bk_grp_out_reset(&o);
    cm.retention_ms = 1000;
    ck_assert_int_eq(bk_grp_offset_commit(&c, &cm, 100, &o, &err), KP_ERROR_NONE);
    val.n = 0;
    put_be(&val, 1, 2); put_be(&val, 5, 8); put_str(&val, "m"); put_be(&val, 100, 8);
    put_be(&val, 1100, 8);
    ck_assert(same(o.recs[0].value, &val));
    /* tombstone on delete */
    bk_grp_out_reset(&o);
    ck_assert_int_eq(bk_grp_delete(&c, S("g"), 200, &o), KP_ERROR_NONE);
    ck_assert_uint_eq(o.nrecs, 2);
    ck_assert(same(o.recs[0].key, &key));
    ck_assert_ptr_null(o.recs[0].value.p);
    bytes_t gkey = { .n = 0 };
    put_be(&gkey, 2, 2); put_str(&gkey, "g");
    ck_assert(same(o.recs[1].key, &gkey));
    ck_assert_ptr_null(o.recs[1].value.p);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

START_TEST(test_group_record_bytes) {
    bk_grp_coord_t c;
    coord_new(&c, 0);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    bk_grp_protocol_in_t p = { S("range"), S("SUB") };
    bk_grp_join_t r = { .group_id = S("g"), .member_id = S(""), .instance_id = S("i1"),
                        .client_id = S("cl"), .client_host = S("/h"), .protocol_type = S("consumer"),
                        .session_timeout_ms = 10000, .rebalance_timeout_ms = 20000,
                        .protocols = &p, .nprotocols = 1, .token = 1 };
    bk_grp_join(&c, &r, 50, &o);
    char *id = dup_slice(resp(&o, 1)->member_id);
    bk_grp_assign_in_t a = { S(id), S("ASSIGN") };
    bk_grp_sync_t s = { .group_id = S("g"), .member_id = S(id), .generation = 1,
                        .assignments = &a, .nassignments = 1, .token = 2 };
    bk_grp_out_reset(&o);
    bk_grp_sync(&c, &s, 77, &o);
    ck_assert_uint_eq(o.nrecs, 1);
    bytes_t key = { .n = 0 }, val = { .n = 0 };
    put_be(&key, 2, 2); put_str(&key, "g");
    put_be(&val, 3, 2);
    put_str(&val, "consumer"); put_be(&val, 1, 4); put_str(&val, "range"); put_str(&val, id);
    put_be(&val, 77, 8);                           /* currentStateTimestamp: Stable at 77 */
    put_be(&val, 1, 4);                            /* one member */
    put_str(&val, id); put_str(&val, "i1"); put_str(&val, "cl"); put_str(&val, "/h");
    put_be(&val, 20000, 4); put_be(&val, 10000, 4);
    put_bytes(&val, "SUB"); put_bytes(&val, "ASSIGN");
    ck_assert(same(o.recs[0].key, &key));
    ck_assert(same(o.recs[0].value, &val));
    /* and the bytes load back into the same group */
    bk_grp_coord_t b;
    bk_grp_config_t cfg = c.cfg;
    bk_grp_coord_init(&b, &cfg, 0, 1);
    ck_assert_int_eq(bk_grp_load_record(&b, as_slice(&key), as_slice(&val)), KP_OK);
    bk_grp_load_done(&b, 1000);
    const bk_grp_t *g = bk_grp_find(&b, S("g"));
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(g->state, BK_GRP_STABLE);
    ck_assert_int_eq(g->generation, 1);
    ck_assert(slice_is(gs_slice_for_test(&g->members[0].assignment), "ASSIGN"));
    ck_assert(slice_is(gs_slice_for_test(&g->members[0].instance_id), "i1"));
    ck_assert_int_eq(g->members[0].rebalance_timeout_ms, 20000);
    ck_assert_int_eq(g->members[0].heartbeat_ms, 1000);
    /* the loaded group serves the next generation's members */
    ck_assert_int_eq(bk_grp_heartbeat(&b, S("g"), S(id), S("i1"), 1, 1000), KP_ERROR_NONE);
    bk_grp_coord_free(&b);
    free(id);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

/* Issue 19 review: a ConsumerGroup* record for an id a classic group with
 * members holds is a log we did not write (the classic tombstone comes
 * first); loading says so (KP_ERR_BAD_VALUE), not "exceeds a limit"
 * (KP_ERR_TOO_LARGE, which it said before), and leaves the group classic. */
START_TEST(test_load_cg_record_over_classic_group) {
    bk_grp_coord_t c;
    coord_new(&c, 0);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    bk_grp_protocol_in_t p = { S("range"), S("SUB") };
    bk_grp_join_t r = { .group_id = S("g"), .member_id = S(""), .client_id = S("cl"), .client_host = S("/h"),
                        .protocol_type = S("consumer"), .session_timeout_ms = 10000,
                        .rebalance_timeout_ms = 20000, .protocols = &p, .nprotocols = 1, .token = 1 };
    bk_grp_join(&c, &r, 50, &o);
    char *id = dup_slice(resp(&o, 1)->member_id);
    bk_grp_assign_in_t a = { S(id), S("ASSIGN") };
    bk_grp_sync_t sy = { .group_id = S("g"), .member_id = S(id), .generation = 1,
                         .assignments = &a, .nassignments = 1, .token = 2 };
    bk_grp_out_reset(&o);
    bk_grp_sync(&c, &sy, 77, &o);
    ck_assert_uint_eq(o.nrecs, 1);
    bk_grp_coord_t b;
    bk_grp_config_t cfg = c.cfg;
    bk_grp_coord_init(&b, &cfg, 0, 1);
    ck_assert_int_eq(bk_grp_load_record(&b, o.recs[0].key, o.recs[0].value), KP_OK);
    /* the same id joined as a consumer group on another coordinator */
    bk_grp_coord_t c2;
    coord_new(&c2, 0);
    bk_grp_out_t o2;
    bk_grp_out_init(&o2);
    kp_str_t names[] = { S("t") };
    bk_grp_cg_topic_t topic = { .name = S("t"), .nparts = 2 };
    topic.id.b[0] = 7;
    bk_grp_cg_topics_t topics = { &topic, 1, 1 };
    bk_grp_cg_hb_t h;
    memset(&h, 0, sizeof h);
    h.group_id = S("g");
    h.member_id = S("m1");
    h.rebalance_timeout_ms = 30000;
    h.topics = names;
    h.ntopics = 1;
    h.nowned = -1;
    h.regex = h.assignor = h.instance_id = h.rack_id = kp_slice_null();
    h.client_id = S("cl");
    h.client_host = S("/h");
    bk_grp_cg_hb_resp_t hr;
    bk_grp_cg_heartbeat(&c2, &h, &topics, 100, &o2, &hr);
    ck_assert_int_eq(hr.error, KP_ERROR_NONE);
    ck_assert_uint_gt(o2.nrecs, 0);
    size_t bad = 0;
    for (size_t i = 0; i < o2.nrecs; i++) {
        if (!o2.recs[i].value.p) continue;
        int st = bk_grp_load_record(&b, o2.recs[i].key, o2.recs[i].value);
        ck_assert_int_ne(st, KP_ERR_TOO_LARGE);
        if (st == KP_ERR_BAD_VALUE) bad++;
        else ck_assert_int_eq(st, KP_OK);
    }
    ck_assert_uint_gt(bad, 0);
    bk_grp_load_done(&b, 1000);
    const bk_grp_t *g = bk_grp_find(&b, S("g"));
    ck_assert_ptr_nonnull(g);
    ck_assert_ptr_null(g->cg);
    ck_assert_uint_eq(g->nmembers, 1);
    bk_grp_coord_free(&b);
    bk_grp_coord_free(&c2);
    bk_grp_out_free(&o2);
    free(id);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

/* Found by fuzz_group_records: a v1 offset value whose expireTimestamp is
 * negative but not -1 was kept as is, and written back as value v3 (no
 * expire field), so a reload said -1: the state did not survive its own
 * records. Any negative expire time now loads as -1 ("retention decides"). */
static void loader_new(bk_grp_coord_t *c) {
    bk_grp_config_t cfg;
    bk_grp_config_defaults(&cfg);
    cfg.num_partitions = 1;
    bk_grp_coord_init(c, &cfg, 0, 1);
}

START_TEST(test_load_negative_expire_is_none) {
    bk_grp_coord_t c, c2;
    loader_new(&c);
    loader_new(&c2);
    bytes_t key = { .n = 0 }, val = { .n = 0 };
    put_be(&key, 1, 2); put_str(&key, "g"); put_str(&key, "t"); put_be(&key, 3, 4);
    put_be(&val, 1, 2); put_be(&val, 5, 8); put_str(&val, "m"); put_be(&val, 100, 8);
    put_be(&val, (uint64_t)-5, 8);
    ck_assert_int_eq(bk_grp_load_record(&c, as_slice(&key), as_slice(&val)), KP_OK);
    bk_grp_load_done(&c, 1000);
    const bk_grp_offset_t *offs;
    size_t n;
    ck_assert_int_eq(bk_grp_offset_fetch_all(&c, S("g"), &offs, &n), KP_ERROR_NONE);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(offs[0].expire_ts_ms, -1);
    /* its own record (v3: no expire) reloads to the same state */
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    bk_grp_offset_t copy = offs[0];
    rec_offset(&o, S("g"), &copy);
    ck_assert_uint_eq(o.nrecs, 1);
    ck_assert_int_eq(bk_grp_load_record(&c2, o.recs[0].key, o.recs[0].value), KP_OK);
    bk_grp_load_done(&c2, 1000);
    const bk_grp_offset_t *offs2;
    ck_assert_int_eq(bk_grp_offset_fetch_all(&c2, S("g"), &offs2, &n), KP_ERROR_NONE);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(offs2[0].expire_ts_ms, offs[0].expire_ts_ms);
    ck_assert_int_eq(offs2[0].offset, 5);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
    bk_grp_coord_free(&c2);
}
END_TEST

/* Found by fuzz_group_records: a loaded commit timestamp near INT64_MIN made
 * the expiry's now - commit_ts overflow (undefined behaviour; wrapped, the
 * offset never expired). Such an offset is simply very old: it expires. */
START_TEST(test_load_ancient_commit_expires) {
    bk_grp_coord_t c;
    loader_new(&c);
    bytes_t key = { .n = 0 }, val = { .n = 0 };
    put_be(&key, 1, 2); put_str(&key, "g"); put_str(&key, "t"); put_be(&key, 3, 4);
    put_be(&val, 3, 2); put_be(&val, 5, 8); put_be(&val, (uint64_t)-1, 4); put_str(&val, "");
    put_be(&val, (uint64_t)INT64_MIN, 8);
    ck_assert_int_eq(bk_grp_load_record(&c, as_slice(&key), as_slice(&val)), KP_OK);
    bk_grp_load_done(&c, 1000);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    bk_grp_expire_offsets(&c, 1000, &o);
    ck_assert_uint_eq(o.offsets_expired, 1);
    ck_assert_ptr_null(bk_grp_find(&c, S("g")));
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
}
END_TEST

static void load_fails_unchanged(const bytes_t *key, const bytes_t *val, int want) {
    bk_grp_coord_t b;
    bk_grp_config_t cfg;
    bk_grp_config_defaults(&cfg);
    cfg.num_partitions = 1;
    bk_grp_coord_init(&b, &cfg, 0, 1);
    kp_bytes_t v = val ? as_slice(val) : kp_slice_null();
    int st = bk_grp_load_record(&b, as_slice(key), v);
    ck_assert_msg(want ? st == want : st != KP_OK, "status %d", st);
    ck_assert_uint_eq(b.ngroups, 0);
    bk_grp_coord_free(&b);
}

START_TEST(test_load_malformed) {
    bytes_t key = { .n = 0 }, val = { .n = 0 }, gkey = { .n = 0 }, gval = { .n = 0 };
    put_be(&key, 1, 2); put_str(&key, "g"); put_str(&key, "t"); put_be(&key, 3, 4);
    put_be(&val, 3, 2); put_be(&val, 5, 8); put_be(&val, 7, 4); put_str(&val, "m"); put_be(&val, 1, 8);
    put_be(&gkey, 2, 2); put_str(&gkey, "g");
    put_be(&gval, 3, 2); put_str(&gval, "consumer"); put_be(&gval, 4, 4); put_str(&gval, "range");
    put_str(&gval, "m1"); put_be(&gval, 9, 8); put_be(&gval, 1, 4);
    put_str(&gval, "m1"); put_str(&gval, NULL); put_str(&gval, "c"); put_str(&gval, "h");
    put_be(&gval, 1, 4); put_be(&gval, 2, 4); put_bytes(&gval, "s"); put_bytes(&gval, "a");
    /* every proper prefix of a key or a value is rejected, state unchanged */
    for (size_t n = 0; n < key.n; n++) {
        bytes_t k = key;
        k.n = n;
        load_fails_unchanged(&k, &val, 0);
    }
    for (size_t n = 0; n < val.n; n++) {
        bytes_t v = val;
        v.n = n;
        load_fails_unchanged(&key, &v, 0);
    }
    for (size_t n = 0; n < gval.n; n++) {
        bytes_t v = gval;
        v.n = n;
        load_fails_unchanged(&gkey, &v, 0);
    }
    /* trailing bytes */
    bytes_t v2 = val;
    v2.b[v2.n++] = 0;
    load_fails_unchanged(&key, &v2, KP_ERR_BAD_LENGTH);
    bytes_t k2 = gkey;
    k2.b[k2.n++] = 0;
    load_fails_unchanged(&k2, &gval, KP_ERR_BAD_LENGTH);
    /* a value version the schema does not know */
    v2 = val;
    v2.b[1] = 9;
    load_fails_unchanged(&key, &v2, KP_ERR_UNSUPPORTED);
    /* negative type; a leader that is not a member */
    k2 = key;
    k2.b[0] = 0xFF;
    load_fails_unchanged(&k2, &val, KP_ERR_BAD_VALUE);
    bytes_t g2 = gval;
    g2.b[2 + 2 + 8 + 4 + 2 + 5 + 2 + 1] = 'X';     /* leader "m1" -> "mX" */
    load_fails_unchanged(&gkey, &g2, KP_ERR_BAD_VALUE);
    /* a record type of a newer coordinator (share groups: 9 and up) is
     * skipped; 3-8 are the consumer groups' (group_cg_records.c) */
    bk_grp_coord_t b;
    bk_grp_config_t cfg;
    bk_grp_config_defaults(&cfg);
    cfg.num_partitions = 1;
    bk_grp_coord_init(&b, &cfg, 0, 1);
    bytes_t k3 = { .n = 0 };
    put_be(&k3, 10, 2); put_str(&k3, "g");
    ck_assert_int_eq(bk_grp_load_record(&b, as_slice(&k3), as_slice(&val)), KP_OK);
    ck_assert_uint_eq(b.ngroups, 0);
    /* the good records load; tombstones undo them */
    ck_assert_int_eq(bk_grp_load_record(&b, as_slice(&key), as_slice(&val)), KP_OK);
    ck_assert_int_eq(bk_grp_load_record(&b, as_slice(&gkey), as_slice(&gval)), KP_OK);
    ck_assert_uint_eq(b.ngroups, 1);
    ck_assert_int_eq(bk_grp_load_record(&b, as_slice(&gkey), kp_slice_null()), KP_OK);
    ck_assert_uint_eq(b.ngroups, 1);                              /* the offset remains */
    ck_assert_int_eq(bk_grp_load_record(&b, as_slice(&key), kp_slice_null()), KP_OK);
    ck_assert_uint_eq(b.ngroups, 0);
    /* old versions: OffsetCommitValue v0, GroupMetadataValue v0, key type 0 */
    bytes_t k0 = key, v0 = { .n = 0 }, gv0 = { .n = 0 };
    k0.b[1] = 0;
    put_be(&v0, 0, 2); put_be(&v0, 77, 8); put_str(&v0, ""); put_be(&v0, 5, 8);
    ck_assert_int_eq(bk_grp_load_record(&b, as_slice(&k0), as_slice(&v0)), KP_OK);
    put_be(&gv0, 0, 2); put_str(&gv0, "consumer"); put_be(&gv0, 2, 4); put_str(&gv0, "range");
    put_str(&gv0, "m1"); put_be(&gv0, 1, 4);
    put_str(&gv0, "m1"); put_str(&gv0, "c"); put_str(&gv0, "h"); put_be(&gv0, 6000, 4);
    put_bytes(&gv0, "s"); put_bytes(&gv0, "a");
    ck_assert_int_eq(bk_grp_load_record(&b, as_slice(&gkey), as_slice(&gv0)), KP_OK);
    /* Kafka's "" protocol type of a group without a protocol loads as none */
    bytes_t hkey = { .n = 0 }, hval = { .n = 0 };
    put_be(&hkey, 2, 2); put_str(&hkey, "h");
    put_be(&hval, 3, 2); put_str(&hval, ""); put_be(&hval, 3, 4); put_str(&hval, NULL);
    put_str(&hval, NULL); put_be(&hval, 5, 8); put_be(&hval, 0, 4);
    ck_assert_int_eq(bk_grp_load_record(&b, as_slice(&hkey), as_slice(&hval)), KP_OK);
    bk_grp_load_done(&b, 10);
    const bk_grp_t *h = bk_grp_find(&b, S("h"));
    ck_assert_ptr_nonnull(h);
    ck_assert_ptr_null(h->protocol_type.p);
    ck_assert_int_eq(h->generation, 3);
    ck_assert_int_eq(h->state, BK_GRP_EMPTY);
    const bk_grp_t *g = bk_grp_find(&b, S("g"));
    ck_assert_int_eq(g->offsets[0].offset, 77);
    ck_assert_int_eq(g->offsets[0].leader_epoch, -1);
    ck_assert_int_eq(g->generation, 2);
    ck_assert_int_eq(g->members[0].rebalance_timeout_ms, 6000);   /* v0: the session timeout */
    ck_assert_int_eq(g->state_ts_ms, 10);
    bk_grp_coord_free(&b);
}
END_TEST

/* Copies out->recs into a flat list of (key, value) for replay. */
typedef struct {
    bytes_t k[32], v[32];
    bool tomb[32];
    size_t n;
} log_t;

static void log_take(log_t *l, bk_grp_out_t *o) {
    for (size_t i = 0; i < o->nrecs; i++) {
        ck_assert_uint_lt(l->n, 32);
        ck_assert_uint_le(o->recs[i].key.len, sizeof l->k[0].b);
        ck_assert_uint_le(o->recs[i].value.len, sizeof l->v[0].b);
        memcpy(l->k[l->n].b, o->recs[i].key.p, o->recs[i].key.len);
        l->k[l->n].n = o->recs[i].key.len;
        l->tomb[l->n] = o->recs[i].value.p == NULL;
        if (!l->tomb[l->n]) memcpy(l->v[l->n].b, o->recs[i].value.p, o->recs[i].value.len);
        l->v[l->n].n = o->recs[i].value.len;
        l->n++;
    }
    bk_grp_out_reset(o);
}

/* A Stable group of two members with offsets fails over: the new
 * coordinator serves the same generation (heartbeat, sync, commit), and the
 * next rebalance moves on to the next generation. */
START_TEST(test_failover_continues_generation) {
    bk_grp_coord_t c;
    coord_new(&c, 0);
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    log_t *l = calloc(1, sizeof *l);
    ck_assert_ptr_nonnull(l);
    static const char *const R[] = { "range" };
    protos_t ps;
    protos(&ps, 1, R);
    bk_grp_join_t r = join_req("g", "", "s1", 1, &ps, 1);
    bk_grp_join(&c, &r, 0, &o);
    char *a = dup_slice(resp(&o, 1)->member_id);
    r = join_req("g", "", "s2", 2, &ps, 1);
    bk_grp_join(&c, &r, 0, &o);
    r = join_req("g", a, "s1", 3, &ps, 1);
    bk_grp_join(&c, &r, 0, &o);
    char *b = dup_slice(resp(&o, 2)->member_id);
    int32_t gen = resp(&o, 3)->generation;
    ck_assert_int_eq(gen, 2);
    bk_grp_assign_in_t as[2] = { { S(a), S("A") }, { S(b), S("B") } };
    bk_grp_sync_t sy = { .group_id = S("g"), .member_id = S(a), .generation = gen,
                         .assignments = as, .nassignments = 2, .token = 4 };
    bk_grp_sync(&c, &sy, 0, &o);
    int16_t err;
    bk_grp_commit_part_t p = { .topic = S("t"), .partition = 0, .offset = 77, .leader_epoch = 2,
                               .metadata = S("x"), .commit_ts_ms = -1 };
    bk_grp_commit_t cm = { .group_id = S("g"), .member_id = S(b), .generation = gen,
                           .retention_ms = -1, .parts = &p, .nparts = 1 };
    ck_assert_int_eq(bk_grp_offset_commit(&c, &cm, 5, &o, &err), KP_ERROR_NONE);
    log_take(l, &o);
    ck_assert_uint_eq(l->n, 2);                           /* GroupMetadata, OffsetCommit */
    bk_grp_coord_free(&c);

    bk_grp_coord_t n;
    bk_grp_config_t cfg;
    bk_grp_config_defaults(&cfg);
    cfg.num_partitions = 1;
    cfg.initial_rebalance_delay_ms = 0;
    bk_grp_coord_init(&n, &cfg, 0, 77);
    for (size_t i = 0; i < l->n; i++)
        ck_assert_int_eq(bk_grp_load_record(&n, as_slice(&l->k[i]),
                                            l->tomb[i] ? kp_slice_null() : as_slice(&l->v[i])), KP_OK);
    bk_grp_load_done(&n, 100000);
    ck_assert_int_eq(bk_grp_heartbeat(&n, S("g"), S(a), S("s1"), gen, 100000), KP_ERROR_NONE);
    ck_assert_int_eq(bk_grp_heartbeat(&n, S("g"), S(b), S("s2"), gen, 100000), KP_ERROR_NONE);
    sy = (bk_grp_sync_t){ .group_id = S("g"), .member_id = S(b), .generation = gen, .token = 5 };
    bk_grp_sync(&n, &sy, 100000, &o);
    ck_assert(slice_is(resp(&o, 5)->assignment, "B"));
    bk_grp_tp_t tp = { S("t"), 0 };
    bk_grp_fetched_t f;
    ck_assert_int_eq(bk_grp_offset_fetch(&n, S("g"), &tp, 1, &f), KP_ERROR_NONE);
    ck_assert_int_eq(f.offset, 77);
    ck_assert_int_eq(f.leader_epoch, 2);
    ck_assert(slice_is(f.metadata, "x"));
    p.offset = 78;
    cm.member_id = S(a);
    ck_assert_int_eq(bk_grp_offset_commit(&n, &cm, 100000, &o, &err), KP_ERROR_NONE);
    /* sessions restart at load: no expiry before load time + session */
    bk_grp_tick(&n, 100000 + SESSION_MS - 1, &o);
    ck_assert_uint_eq(o.members_expired, 0);
    /* a static restart still works against the loaded state */
    r = join_req("g", "", "s2", 6, &ps, 1);
    bk_grp_join(&n, &r, 100000, &o);
    ck_assert_int_eq(resp(&o, 6)->generation, gen);
    ck_assert_int_eq(bk_grp_heartbeat(&n, S("g"), S(b), S("s2"), gen, 100000),
                     KP_ERROR_FENCED_INSTANCE_ID);
    /* a new member: the next generation */
    bk_grp_out_reset(&o);
    r = join_req("g", "", "s3", 7, &ps, 1);
    bk_grp_join(&n, &r, 100000, &o);
    ck_assert_int_eq(grp_state_of(&n, "g"), BK_GRP_PREPARING_REBALANCE);
    free(a);
    free(b);
    free(l);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&n);
}
END_TEST

/* Valid records with random bytes changed: loading returns a status and
 * never crashes or reads past a buffer (run under ASan by `make asan`). */
START_TEST(test_load_mutated_records) {
    bytes_t key = { .n = 0 }, val = { .n = 0 }, gkey = { .n = 0 }, gval = { .n = 0 };
    put_be(&key, 1, 2); put_str(&key, "g"); put_str(&key, "t"); put_be(&key, 3, 4);
    put_be(&val, 1, 2); put_be(&val, 5, 8); put_str(&val, "m"); put_be(&val, 1, 8); put_be(&val, 9, 8);
    put_be(&gkey, 2, 2); put_str(&gkey, "g");
    put_be(&gval, 3, 2); put_str(&gval, "consumer"); put_be(&gval, 4, 4); put_str(&gval, "range");
    put_str(&gval, "m1"); put_be(&gval, 9, 8); put_be(&gval, 2, 4);
    for (int m = 1; m <= 2; m++) {
        put_str(&gval, m == 1 ? "m1" : "m2"); put_str(&gval, m == 1 ? NULL : "i"); put_str(&gval, "c");
        put_str(&gval, "h"); put_be(&gval, 1, 4); put_be(&gval, 2, 4); put_bytes(&gval, "s");
        put_bytes(&gval, "a");
    }
    uint64_t x = 12345;
    size_t ok = 0, bad = 0;
    for (int round = 0; round < 20000; round++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        bool group = (x >> 60) & 1;
        bytes_t k = group ? gkey : key, v = group ? gval : val;
        bytes_t *t = (x >> 59) & 1 ? &k : &v;
        int flips = 1 + (int)((x >> 40) % 3);
        for (int f = 0; f < flips; f++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            t->b[(x >> 33) % t->n] = (uint8_t)(x >> 20);
        }
        bk_grp_coord_t b;
        bk_grp_config_t cfg;
        bk_grp_config_defaults(&cfg);
        cfg.num_partitions = 1;
        bk_grp_coord_init(&b, &cfg, 0, 1);
        if (bk_grp_load_record(&b, as_slice(&k), as_slice(&v)) == KP_OK) ok++; else bad++;
        bk_grp_load_done(&b, 0);
        bk_grp_coord_free(&b);
    }
    ck_assert_uint_gt(ok, 0);
    ck_assert_uint_gt(bad, 0);
}
END_TEST

/* ---- randomized run ------------------------------------------------------- */

#define NGROUPS 3
#define PER_GROUP 4
#define NCLIENTS (NGROUPS * PER_GROUP)
#define ID_MAX 96

typedef struct {
    int group;
    char member[ID_MAX];
    char instance[24];                /* "" dynamic */
    int32_t gen;
    bool leader;
    char members[PER_GROUP + 1][ID_MAX];
    size_t nmembers;
    bool join_wait, sync_wait;
    uint64_t join_tok, sync_tok;
} client_t;

typedef struct {
    uint8_t *key, *value;             /* value NULL: tombstone */
    size_t key_len, value_len;
} saved_rec_t;

typedef struct {
    uint64_t rng;
    int64_t now;
    uint64_t seq;
    bk_grp_coord_t c;
    bk_grp_out_t o;
    client_t cl[NCLIENTS];
    saved_rec_t *recs;
    size_t nrecs, cap;
    int32_t last_gen[NGROUPS];
    size_t syncs_ok, stable_compared;
    uint64_t seed;
    int step;
    const char *op;
} run_t;

static const char *GROUPS[NGROUPS] = { "ga", "gb", "gc" };

static uint64_t rnd(run_t *r) {
    uint64_t z = (r->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

#define RUN_ASSERT(r, cond) \
    ck_assert_msg((cond), "seed %" PRIu64 " step %d op %s: %s", (r)->seed, (r)->step, (r)->op, #cond)

static void copy_id(char *dst, kp_str_t s) {
    ck_assert_uint_lt(s.len, ID_MAX);
    memcpy(dst, s.p, s.len);
    dst[s.len] = 0;
}

static void client_reset(client_t *k) {
    k->member[0] = 0;
    k->gen = -1;
    k->leader = false;
    k->nmembers = 0;
}

static void take_resp(run_t *r, const bk_grp_resp_t *x) {
    size_t i = (size_t)(x->token >> 32);
    RUN_ASSERT(r, i < NCLIENTS);
    client_t *k = &r->cl[i];
    if (x->kind == BK_GRP_RESP_JOIN) {
        RUN_ASSERT(r, k->join_wait && k->join_tok == x->token);   /* answered exactly once */
        k->join_wait = false;
        if (x->error == KP_ERROR_NONE) {
            copy_id(k->member, x->member_id);
            k->gen = x->generation;
            k->leader = kp_slice_eq(x->leader, x->member_id);
            RUN_ASSERT(r, x->nmembers <= PER_GROUP);
            RUN_ASSERT(r, k->leader || x->nmembers == 0);
            if (k->leader && (x->nmembers > 0 || !x->skip_assignment)) {
                k->nmembers = x->nmembers;
                for (size_t m = 0; m < x->nmembers; m++) copy_id(k->members[m], x->members[m].member_id);
            }
        } else if (x->error == KP_ERROR_MEMBER_ID_REQUIRED) {
            copy_id(k->member, x->member_id);
        } else if (x->error == KP_ERROR_UNKNOWN_MEMBER_ID || x->error == KP_ERROR_FENCED_INSTANCE_ID) {
            client_reset(k);
        }
    } else {
        RUN_ASSERT(r, k->sync_wait && k->sync_tok == x->token);
        k->sync_wait = false;
        if (x->error == KP_ERROR_NONE) {
            char want[16];
            snprintf(want, sizeof want, "gen%d:", k->gen);
            RUN_ASSERT(r, x->assignment.len >= strlen(want) &&
                          memcmp(x->assignment.p, want, strlen(want)) == 0);
            r->syncs_ok++;
        } else if (x->error == KP_ERROR_UNKNOWN_MEMBER_ID || x->error == KP_ERROR_FENCED_INSTANCE_ID) {
            client_reset(k);
        }
    }
}

static uint8_t *dup_bytes(kp_bytes_t b) {
    uint8_t *p = malloc(b.len ? b.len : 1);
    ck_assert_ptr_nonnull(p);
    if (b.len) memcpy(p, b.p, b.len);
    return p;
}

static void drain(run_t *r) {
    RUN_ASSERT(r, r->o.err == KP_OK);
    for (size_t i = 0; i < r->o.nresps; i++) take_resp(r, &r->o.resps[i]);
    for (size_t i = 0; i < r->o.nrecs; i++) {
        if (r->nrecs == r->cap) {
            r->cap = r->cap ? r->cap * 2 : 256;
            r->recs = realloc(r->recs, r->cap * sizeof *r->recs);
            ck_assert_ptr_nonnull(r->recs);
        }
        saved_rec_t *s = &r->recs[r->nrecs++];
        s->key = dup_bytes(r->o.recs[i].key);
        s->key_len = r->o.recs[i].key.len;
        s->value = r->o.recs[i].value.p ? dup_bytes(r->o.recs[i].value) : NULL;
        s->value_len = r->o.recs[i].value.len;
    }
    bk_grp_out_reset(&r->o);
}

static kp_str_t opt(const char *s) { return s[0] ? S(s) : kp_slice_null(); }

static void op_join(run_t *r, client_t *k, size_t i) {
    static const char *const P1[] = { "range" };
    static const char *const P2[] = { "range", "roundrobin" };
    static const char *const P3[] = { "sticky" };
    /* each client keeps its protocol list; now and then one offers only a
     * protocol nobody else has (INCONSISTENT_GROUP_PROTOCOL) */
    bool odd = rnd(r) % 20 == 0;
    protos_t ps;
    size_t n = odd || i % 2 == 0 ? 1 : 2;
    protos(&ps, n, odd ? P3 : (i % 2 == 0 ? P1 : P2));
    k->join_tok = ((uint64_t)i << 32) | ++r->seq;
    k->join_wait = true;
    bk_grp_join_t q = join_req(GROUPS[k->group], k->member, k->instance[0] ? k->instance : NULL,
                               k->join_tok, &ps, n);
    bk_grp_join(&r->c, &q, r->now, &r->o);
}

static void op_sync(run_t *r, client_t *k, size_t i) {
    bk_grp_assign_in_t as[PER_GROUP + 1];
    char buf[PER_GROUP + 1][ID_MAX + 16];
    size_t n = k->leader ? k->nmembers : 0;
    for (size_t m = 0; m < n; m++) {
        snprintf(buf[m], sizeof buf[m], "gen%d:%s", k->gen, k->members[m]);
        as[m].member_id = S(k->members[m]);
        as[m].assignment = S(buf[m]);
    }
    k->sync_tok = ((uint64_t)i << 32) | ++r->seq;
    k->sync_wait = true;
    bk_grp_sync_t s = { .group_id = S(GROUPS[k->group]), .member_id = S(k->member),
                        .instance_id = opt(k->instance), .generation = k->gen,
                        .assignments = as, .nassignments = n, .token = k->sync_tok };
    bk_grp_sync(&r->c, &s, r->now, &r->o);
}

static void op_commit(run_t *r, client_t *k) {
    bk_grp_commit_part_t p[3];
    char topics[3][16];
    size_t n = 1 + rnd(r) % 3;
    for (size_t j = 0; j < n; j++) {
        snprintf(topics[j], sizeof topics[j], "t%d", (int)(rnd(r) % 2));
        p[j] = (bk_grp_commit_part_t){ .topic = S(topics[j]), .partition = (int32_t)(rnd(r) % 4),
                                       .offset = (int64_t)(rnd(r) % 1000), .leader_epoch = -1,
                                       .metadata = S(""), .commit_ts_ms = -1 };
    }
    int16_t errs[3];
    bk_grp_commit_t cm = { .group_id = S(GROUPS[k->group]), .member_id = S(k->member),
                           .instance_id = opt(k->instance), .generation = k->gen,
                           .retention_ms = rnd(r) % 5 == 0 ? 60000 : -1, .parts = p, .nparts = n };
    (void)bk_grp_offset_commit(&r->c, &cm, r->now, &r->o, errs);
}

static void step_once(run_t *r) {
    size_t i = (size_t)(rnd(r) % NCLIENTS);
    client_t *k = &r->cl[i];
    uint64_t x = rnd(r) % 100;
    int16_t errs[2];
    if (x < 25) {
        r->op = "join";
        bool member = k->gen >= 0 && rnd(r) % 4 != 0;   /* members rejoin less often */
        if (!k->join_wait && !member) op_join(r, k, i);
    } else if (x < 45) {
        r->op = "sync";
        if (k->gen >= 0 && !k->join_wait && !k->sync_wait) op_sync(r, k, i);
    } else if (x < 60) {
        r->op = "heartbeat";
        if (!k->member[0]) return;
        int16_t e = bk_grp_heartbeat(&r->c, S(GROUPS[k->group]), S(k->member), opt(k->instance),
                                     k->gen, r->now);
        if ((e == KP_ERROR_UNKNOWN_MEMBER_ID || e == KP_ERROR_FENCED_INSTANCE_ID) &&
            !k->join_wait && !k->sync_wait)
            client_reset(k);
    } else if (x < 65) {
        r->op = "leave";
        if (!k->member[0] || k->join_wait || k->sync_wait) return;
        bk_grp_leave_in_t lv = { S(k->member), opt(k->instance) };
        (void)bk_grp_leave(&r->c, S(GROUPS[k->group]), &lv, 1, r->now, &r->o, errs);
        client_reset(k);
    } else if (x < 77) {
        r->op = "commit";
        op_commit(r, k);
    } else if (x < 80) {
        r->op = "simple-commit";
        client_t simple = { .group = k->group, .gen = -1 };
        op_commit(r, &simple);
    } else if (x < 92) {
        r->op = "tick";
        r->now += (int64_t)(rnd(r) % 1000);
        bk_grp_tick(&r->c, r->now, &r->o);
    } else if (x < 94) {
        r->op = "long-tick";
        r->now += SESSION_MS + (int64_t)(rnd(r) % REBALANCE_MS);
        bk_grp_tick(&r->c, r->now, &r->o);
    } else if (x < 96) {
        r->op = "static-restart";
        if (!k->instance[0] || k->join_wait || k->sync_wait) return;
        client_reset(k);
        op_join(r, k, i);
    } else if (x < 97) {
        r->op = "delete";
        (void)bk_grp_delete(&r->c, S(GROUPS[k->group]), r->now, &r->o);
    } else if (x < 98) {
        r->op = "expire";
        r->now += (int64_t)(rnd(r) % 120000);
        bk_grp_expire_offsets(&r->c, r->now, &r->o);
    } else {
        r->op = "offset-delete";
        bk_grp_tp_t tp = { S(rnd(r) % 2 ? "t0" : "t1"), (int32_t)(rnd(r) % 4) };
        (void)bk_grp_offset_delete(&r->c, S(GROUPS[k->group]), &tp, 1, r->now, &r->o, errs);
    }
}

static void check_invariants(run_t *r) {
    for (int gi = 0; gi < NGROUPS; gi++) {
        const bk_grp_t *g = bk_grp_find(&r->c, S(GROUPS[gi]));
        if (!g) { r->last_gen[gi] = 0; continue; }
        RUN_ASSERT(r, g->generation >= r->last_gen[gi]);         /* monotone */
        r->last_gen[gi] = g->generation;
        size_t leaders = 0;
        for (size_t m = 0; m < g->nmembers; m++)
            if (g->leader.p && kp_slice_eq(gs_slice_for_test(&g->leader),
                                           gs_slice_for_test(&g->members[m].member_id)))
                leaders++;
        RUN_ASSERT(r, leaders == (g->nmembers > 0 ? 1u : 0u));   /* exactly one leader */
        RUN_ASSERT(r, g->nmembers > 0 || !g->leader.p);
        RUN_ASSERT(r, g->nmembers + g->npending <= (size_t)r->c.cfg.max_size);
        RUN_ASSERT(r, (g->state == BK_GRP_EMPTY) == (g->nmembers == 0) ||
                      g->state == BK_GRP_PREPARING_REBALANCE);
        if (g->state == BK_GRP_STABLE || g->state == BK_GRP_COMPLETING_REBALANCE)
            RUN_ASSERT(r, g->protocol.p != NULL);
        char want[16];
        snprintf(want, sizeof want, "gen%d:", g->generation);
        for (size_t m = 0; g->state == BK_GRP_STABLE && m < g->nmembers; m++) {
            const bk_grp_str_t *a = &g->members[m].assignment;
            RUN_ASSERT(r, a->len >= strlen(want) && memcmp(a->p, want, strlen(want)) == 0);
        }
        for (size_t o = 1; o < g->noffsets; o++) {
            int cmp = strcmp(g->offsets[o - 1].topic.p, g->offsets[o].topic.p);
            RUN_ASSERT(r, cmp < 0 || (cmp == 0 && g->offsets[o - 1].partition < g->offsets[o].partition));
        }
    }
    /* every waiting client is held by a member with its token: none lost */
    for (size_t i = 0; i < NCLIENTS; i++) {
        const client_t *k = &r->cl[i];
        if (!k->join_wait && !k->sync_wait) continue;
        const bk_grp_t *g = bk_grp_find(&r->c, S(GROUPS[k->group]));
        RUN_ASSERT(r, g != NULL);
        bool held = false;
        for (size_t m = 0; m < g->nmembers; m++) {
            const bk_grp_member_t *x = &g->members[m];
            if (k->join_wait && x->awaiting_join && x->join_token == k->join_tok) held = true;
            if (k->sync_wait && x->awaiting_sync && x->sync_token == k->sync_tok) held = true;
        }
        RUN_ASSERT(r, held);
    }
}

/* Builds a coordinator from every record written so far. */
static void replay(run_t *r, bk_grp_coord_t *b, uint64_t seed) {
    bk_grp_coord_init(b, &r->c.cfg, 0, seed);
    for (size_t i = 0; i < r->nrecs; i++) {
        kp_bytes_t k = { r->recs[i].key, r->recs[i].key_len };
        kp_bytes_t v = { r->recs[i].value, r->recs[i].value_len };
        RUN_ASSERT(r, bk_grp_load_record(b, k, v) == KP_OK);
    }
    bk_grp_load_done(b, r->now);
}

static bool str_eq(const bk_grp_str_t *a, const bk_grp_str_t *b) {
    return gs_slice_for_test(a).p == NULL ? b->p == NULL
                                         : kp_slice_eq(gs_slice_for_test(a), gs_slice_for_test(b));
}

static void compare(run_t *r, const bk_grp_coord_t *a, const bk_grp_coord_t *b) {
    r->op = "compare";
    for (size_t k = 0; k < b->ngroups; k++)
        RUN_ASSERT(r, bk_grp_find(a, gs_slice_for_test(&b->groups[k]->id)) != NULL);
    for (size_t k = 0; k < a->ngroups; k++) {
        const bk_grp_t *ga = a->groups[k];
        const bk_grp_t *gb = bk_grp_find(b, gs_slice_for_test(&ga->id));
        bool settled = ga->state == BK_GRP_STABLE || ga->state == BK_GRP_EMPTY;
        bool bare = ga->nmembers == 0 && ga->noffsets == 0 && ga->generation == 0 &&
                    !ga->protocol_type.p;
        if (!gb) { RUN_ASSERT(r, bare || (!settled && ga->noffsets == 0)); continue; }
        RUN_ASSERT(r, gb->noffsets == ga->noffsets);
        for (size_t o = 0; o < ga->noffsets; o++) {
            const bk_grp_offset_t *x = &ga->offsets[o], *y = &gb->offsets[o];
            RUN_ASSERT(r, str_eq(&x->topic, &y->topic) && x->partition == y->partition);
            RUN_ASSERT(r, x->offset == y->offset && x->leader_epoch == y->leader_epoch);
            RUN_ASSERT(r, str_eq(&x->metadata, &y->metadata));
            RUN_ASSERT(r, x->commit_ts_ms == y->commit_ts_ms && x->expire_ts_ms == y->expire_ts_ms);
        }
        RUN_ASSERT(r, gb->state == BK_GRP_STABLE || gb->state == BK_GRP_EMPTY);
        if (!settled) { RUN_ASSERT(r, gb->generation <= ga->generation); continue; }
        RUN_ASSERT(r, gb->state == ga->state);
        RUN_ASSERT(r, gb->generation == ga->generation);
        RUN_ASSERT(r, str_eq(&ga->protocol_type, &gb->protocol_type));
        RUN_ASSERT(r, str_eq(&ga->protocol, &gb->protocol));
        RUN_ASSERT(r, str_eq(&ga->leader, &gb->leader));
        RUN_ASSERT(r, gb->nmembers == ga->nmembers);
        if (ga->nmembers > 0) r->stable_compared++;
        for (size_t m = 0; m < ga->nmembers; m++) {
            const bk_grp_member_t *x = &ga->members[m], *y = &gb->members[m];
            RUN_ASSERT(r, str_eq(&x->member_id, &y->member_id));
            RUN_ASSERT(r, str_eq(&x->instance_id, &y->instance_id));
            RUN_ASSERT(r, str_eq(&x->assignment, &y->assignment));
            RUN_ASSERT(r, str_eq(&x->client_id, &y->client_id));
            RUN_ASSERT(r, x->session_timeout_ms == y->session_timeout_ms);
            RUN_ASSERT(r, x->rebalance_timeout_ms == y->rebalance_timeout_ms);
            RUN_ASSERT(r, kp_slice_eq(bk_grp_member_metadata(ga, x), bk_grp_member_metadata(gb, y)));
        }
    }
}

typedef struct {
    size_t nrecs, failovers, syncs_ok, stable_compared;
} totals_t;

static void run_seed(uint64_t seed, int steps, totals_t *t) {
    run_t *r = calloc(1, sizeof *r);
    ck_assert_ptr_nonnull(r);
    r->seed = seed;
    r->rng = seed;
    bk_grp_config_t cfg;
    bk_grp_config_defaults(&cfg);
    cfg.num_partitions = 1;
    cfg.initial_rebalance_delay_ms = (int32_t)(rnd(r) % 2) * 3000;
    cfg.max_size = 3 + (int32_t)(rnd(r) % 3);
    cfg.offsets_retention_ms = 600000;
    bk_grp_coord_init(&r->c, &cfg, 0, seed);
    bk_grp_load_done(&r->c, 0);
    bk_grp_out_init(&r->o);
    for (size_t i = 0; i < NCLIENTS; i++) {
        r->cl[i].group = (int)(i / PER_GROUP);
        client_reset(&r->cl[i]);
        if (i % PER_GROUP >= 2) snprintf(r->cl[i].instance, sizeof r->cl[i].instance, "i%zu", i);
    }
    for (r->step = 0; r->step < steps; r->step++) {
        if (rnd(r) % 150 == 0) {
            /* coordinator failover: the new one is rebuilt from the log;
             * answers still owed are dropped (the driver says NOT_COORDINATOR) */
            r->op = "failover";
            bk_grp_coord_t b;
            replay(r, &b, seed + (uint64_t)r->step);
            compare(r, &r->c, &b);
            bk_grp_coord_free(&r->c);
            r->c = b;
            for (size_t i = 0; i < NCLIENTS; i++) r->cl[i].join_wait = r->cl[i].sync_wait = false;
            /* an unfinished rebalance is lost: back to the last durable generation */
            for (int gi = 0; gi < NGROUPS; gi++) {
                const bk_grp_t *g = bk_grp_find(&r->c, S(GROUPS[gi]));
                r->last_gen[gi] = g ? g->generation : 0;
            }
            t->failovers++;
        } else {
            step_once(r);
            drain(r);
        }
        check_invariants(r);
    }
    bk_grp_coord_t b;
    replay(r, &b, seed ^ 0xABCDEF);
    compare(r, &r->c, &b);
    bk_grp_coord_free(&b);
    t->nrecs += r->nrecs;
    t->syncs_ok += r->syncs_ok;
    t->stable_compared += r->stable_compared;
    for (size_t i = 0; i < r->nrecs; i++) { free(r->recs[i].key); free(r->recs[i].value); }
    free(r->recs);
    bk_grp_out_free(&r->o);
    bk_grp_coord_free(&r->c);
    free(r);
}

START_TEST(test_randomized_round_trip) {
    const char *env = getenv("SKIFF_GRP_SEEDS");
    uint64_t nseeds = env ? strtoull(env, NULL, 10) : 60;
    uint64_t first = getenv("SKIFF_GRP_SEED") ? strtoull(getenv("SKIFF_GRP_SEED"), NULL, 10) : 1;
    totals_t t = { 0, 0, 0, 0 };
    for (uint64_t s = first; s < first + nseeds; s++) run_seed(s, 800, &t);
    printf("group randomized: %" PRIu64 " seeds x 800 steps, %zu records replayed, %zu failovers, "
           "%zu successful syncs, %zu non-empty Stable groups compared after replay\n",
           nseeds, t.nrecs, t.failovers, t.syncs_ok, t.stable_compared);
    ck_assert_uint_gt(t.nrecs, 100);
    ck_assert_uint_gt(t.failovers, 0);
    ck_assert_uint_gt(t.syncs_ok, 100);
    ck_assert_uint_gt(t.stable_compared, 10);
}
END_TEST

int main(void) {
    Suite *s = suite_create("group_persist");
    TCase *tc = tcase_create("persist");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_offset_record_bytes);
    tcase_add_test(tc, test_group_record_bytes);
    tcase_add_test(tc, test_load_malformed);
    tcase_add_test(tc, test_load_negative_expire_is_none);
    tcase_add_test(tc, test_load_cg_record_over_classic_group);
    tcase_add_test(tc, test_load_ancient_commit_expires);
    tcase_add_test(tc, test_load_mutated_records);
    tcase_add_test(tc, test_failover_continues_generation);
    tcase_add_test(tc, test_randomized_round_trip);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
