/* libFuzzer target: __consumer_offsets records replayed into a group
 * coordinator (bk_grp_load_record), as a new coordinator loads its partition.
 *
 * Input: a sequence of records "u16 key_len, u16 value_len (0xffff = null
 * value, a tombstone), key bytes, value bytes" (big-endian; lengths clamped
 * to what is left). Properties:
 *  - a record that fails to load leaves the coordinator's state unchanged;
 *  - after load_done, writing the loaded state back as records (the
 *    coordinator's own encoders, group_int.h) and loading those into a fresh
 *    coordinator gives the same state;
 *  - the loaded state survives the coordinator's periodic work and queries
 *    (tick, offset expiry, list, describe, offset fetch) without a crash.
 * KIP-848 consumer groups' records (types 3-8, group_cg_records.c) are part
 * of the state compared and written back; their tick runs with no topics. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/group/group.h"
#include "broker/group/group_int.h"
#include "broker/group/group_cg_int.h"

#define RECS_MAX 64                      /* bound on records per input */
#define NOW_MS 1700000000000LL

/* ---- a canonical dump of the state, for comparisons ---------------------- */

typedef struct {
    uint8_t *p;
    size_t len, cap;
} dump_t;

static void put(dump_t *d, const void *p, size_t n) {
    if (d->len + n > d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 4096;
        while (cap < d->len + n) cap *= 2;
        d->p = realloc(d->p, cap);
        if (!d->p) abort();
        d->cap = cap;
    }
    if (n) memcpy(d->p + d->len, p, n);
    d->len += n;
}

static void put_i64(dump_t *d, int64_t v) { put(d, &v, sizeof v); }

static void put_str(dump_t *d, const bk_grp_str_t *s) {
    put_i64(d, s->p ? (int64_t)s->len : -1);
    if (s->p) put(d, s->p, s->len);
}

static void put_tps(dump_t *d, const bk_grp_cg_tps_t *s) {
    put_i64(d, (int64_t)s->n);
    for (size_t i = 0; i < s->n; i++) {
        put(d, s->v[i].topic.b, 16);
        put_i64(d, s->v[i].partition);
    }
}

static void dump_cg(dump_t *d, const bk_grp_cg_t *cg) {
    put_i64(d, cg ? 1 : 0);
    if (!cg) return;
    put_i64(d, cg->epoch);
    put_i64(d, cg->assignment_epoch);
    put_i64(d, (int64_t)cg->nmembers);
    for (size_t i = 0; i < cg->nmembers; i++) {
        const bk_grp_cg_member_t *m = &cg->members[i];
        put_str(d, &m->member_id);
        put_str(d, &m->instance_id);
        put_str(d, &m->rack_id);
        put_str(d, &m->client_id);
        put_str(d, &m->client_host);
        put_i64(d, (int64_t)m->ntopics);
        for (size_t k = 0; k < m->ntopics; k++) put_str(d, &m->topics[k]);
        put_str(d, &m->regex);
        put_str(d, &m->assignor);
        put_i64(d, m->rebalance_timeout_ms);
        put_i64(d, m->epoch);
        put_i64(d, m->prev_epoch);
        put_i64(d, m->state);
        put_tps(d, &m->assigned);
        put_tps(d, &m->revoking);
        put_tps(d, &m->target);
    }
}

static void dump_group(dump_t *d, const bk_grp_t *g) {
    dump_cg(d, g->cg);
    put_str(d, &g->id);
    put_i64(d, g->generation);
    put_i64(d, g->state_ts_ms);
    put_str(d, &g->protocol_type);
    put_str(d, &g->protocol);
    put_str(d, &g->leader);
    put_i64(d, (int64_t)g->nmembers);
    for (size_t i = 0; i < g->nmembers; i++) {
        const bk_grp_member_t *m = &g->members[i];
        put_str(d, &m->member_id);
        put_str(d, &m->instance_id);
        put_str(d, &m->client_id);
        put_str(d, &m->client_host);
        put_i64(d, m->session_timeout_ms);
        put_i64(d, m->rebalance_timeout_ms);
        put_str(d, &m->assignment);
        put_i64(d, (int64_t)m->nprotocols);
        for (size_t j = 0; j < m->nprotocols; j++) {
            put_str(d, &m->protocols[j].name);
            put_str(d, &m->protocols[j].metadata);
        }
    }
    put_i64(d, (int64_t)g->noffsets);
    for (size_t i = 0; i < g->noffsets; i++) {
        const bk_grp_offset_t *o = &g->offsets[i];
        put_str(d, &o->topic);
        put_i64(d, o->partition);
        put_i64(d, o->offset);
        put_i64(d, o->leader_epoch);
        put_str(d, &o->metadata);
        put_i64(d, o->commit_ts_ms);
        put_i64(d, o->expire_ts_ms);
    }
}

static void dump_coord(dump_t *d, const bk_grp_coord_t *c) {
    d->len = 0;
    put_i64(d, (int64_t)c->ngroups);
    for (size_t i = 0; i < c->ngroups; i++) dump_group(d, c->groups[i]);
}

static bool same_dump(const dump_t *a, const dump_t *b) {
    return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

/* ---- structural checks ----------------------------------------------------- */

static int cmp_str(const bk_grp_str_t *a, const bk_grp_str_t *b) {
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->p ? a->p : "", b->p ? b->p : "", n) : 0;
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

static void check_coord(const bk_grp_coord_t *c) {
    if (c->ngroups > BK_GRP_GROUPS_MAX) abort();
    for (size_t i = 0; i < c->ngroups; i++) {
        const bk_grp_t *g = c->groups[i];
        if (g->nmembers > BK_GRP_MEMBERS_MAX || g->noffsets > BK_GRP_OFFSETS_MAX) abort();
        if (i > 0 && cmp_str(&c->groups[i - 1]->id, &g->id) >= 0) abort(); /* sorted, unique */
        if (bk_grp_find(c, gs_slice(&g->id)) != g) abort();
        for (size_t k = 1; k < g->noffsets; k++) {
            int o = cmp_str(&g->offsets[k - 1].topic, &g->offsets[k].topic);
            if (o > 0 || (o == 0 && g->offsets[k - 1].partition >= g->offsets[k].partition)) abort();
        }
    }
}

/* ---- exercising a loaded coordinator --------------------------------------- */

static void on_group(void *ctx, const bk_grp_t *g) {
    size_t *n = ctx;
    if (!g) abort();
    (*n)++;
}

static int64_t leo(void *ctx, kp_str_t topic, int32_t partition) {
    (void)ctx;
    (void)topic;
    return partition % 2 ? -1 : 1000;
}

static void exercise(bk_grp_coord_t *c) {
    size_t listed = 0;
    if (bk_grp_list(c, NULL, 0, on_group, &listed) != 0 || listed != c->ngroups) abort();
    for (size_t i = 0; i < c->ngroups && i < 8; i++) {
        kp_str_t id = gs_slice(&c->groups[i]->id);
        const bk_grp_t *g;
        (void)bk_grp_describe(c, id, &g);
        if (g)
            for (size_t m = 0; m < g->nmembers; m++) (void)bk_grp_member_metadata(g, &g->members[m]);
        const bk_grp_offset_t *offs;
        size_t n;
        (void)bk_grp_offset_fetch_all(c, id, &offs, &n);
        bk_grp_lag_t lags[4];
        (void)bk_grp_lags(c, id, leo, NULL, lags, 4);
        (void)bk_grp_owner_error(c, id);
    }
    bk_grp_out_t out;
    bk_grp_out_init(&out);
    bk_grp_tick(c, NOW_MS + 1, &out);
    bk_grp_tick(c, NOW_MS + 3600 * 1000LL, &out);
    bk_grp_cg_topics_t none = { NULL, 0, 1 };
    bk_grp_cg_tick(c, &none, NOW_MS + 1, &out);
    bk_grp_expire_offsets(c, NOW_MS + 30 * 86400 * 1000LL, &out);
    check_coord(c);
    bk_grp_out_free(&out);
}

/* Loads the coordinator's own records for c's state into a fresh one. */
static void roundtrip(const bk_grp_coord_t *c, const dump_t *want) {
    bk_grp_out_t out;
    bk_grp_out_init(&out);
    for (size_t i = 0; i < c->ngroups; i++) {
        const bk_grp_t *g = c->groups[i];
        if (g->cg) {
            kp_str_t gid = gs_slice(&g->id);
            for (size_t m = 0; m < g->cg->nmembers; m++) {
                cg_rec_member(&out, gid, &g->cg->members[m]);
                cg_rec_current(&out, gid, &g->cg->members[m]);
            }
            cg_rec_target(&out, gid, g->cg);
            cg_rec_epoch(&out, gid, g->cg);
        } else {
            rec_group(&out, g);
        }
        for (size_t k = 0; k < g->noffsets; k++) rec_offset(&out, gs_slice(&g->id), &g->offsets[k]);
    }
    if (out.err != KP_OK) abort();
    bk_grp_coord_t c2;
    bk_grp_coord_init(&c2, &c->cfg, c->partition, 7);
    for (size_t i = 0; i < out.nrecs; i++)
        if (bk_grp_load_record(&c2, out.recs[i].key, out.recs[i].value) != KP_OK) abort();
    bk_grp_load_done(&c2, NOW_MS);
    dump_t got = { 0 };
    dump_coord(&got, &c2);
    if (!same_dump(&got, want)) abort();
    free(got.p);
    bk_grp_coord_free(&c2);
    bk_grp_out_free(&out);
}

static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bk_grp_config_t cfg;
    bk_grp_config_defaults(&cfg);
    bk_grp_coord_t c;
    bk_grp_coord_init(&c, &cfg, 0, 1);
    dump_t before = { 0 }, after = { 0 };
    size_t at = 0;
    for (int n = 0; n < RECS_MAX && size - at >= 4; n++) {
        size_t klen = be16(data + at), vlen = be16(data + at + 2);
        bool null_value = vlen == 0xffff;
        at += 4;
        if (klen > size - at) klen = size - at;
        kp_bytes_t key = { data + at, klen };
        at += klen;
        if (null_value) vlen = 0;
        if (vlen > size - at) vlen = size - at;
        kp_bytes_t value = null_value ? kp_slice_null() : (kp_bytes_t){ data + at, vlen };
        at += vlen;
        dump_coord(&before, &c);
        if (bk_grp_load_record(&c, key, value) != KP_OK) {
            dump_coord(&after, &c);
            if (!same_dump(&before, &after)) abort(); /* unchanged on error */
        }
        check_coord(&c);
    }
    bk_grp_load_done(&c, NOW_MS);
    dump_coord(&before, &c);
    roundtrip(&c, &before);
    exercise(&c);
    free(before.p);
    free(after.p);
    bk_grp_coord_free(&c);
    return 0;
}
