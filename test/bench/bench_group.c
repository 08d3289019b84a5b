/* bench_group: the group coordinator's pure core without I/O.
 * (1) 1,000 rebalances of a fresh 10-member group (two-step join of every
 * member, leader sync, no initial delay) — CPU per rebalance;
 * (2) offset commits from 10 members of a Stable group, 10 partitions each,
 * with the records encoded — commits/s; (3) replaying those records into a
 * new coordinator — records/s. One run, well under a second. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/group/group.h"
#include "protocol/kp_errors.h"

#define MEMBERS 10

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what) {
    fprintf(stderr, "bench_group: %s\n", what);
    exit(1);
}

static void coord(bk_grp_coord_t *c) {
    bk_grp_config_t cfg;
    bk_grp_config_defaults(&cfg);
    cfg.num_partitions = 1;
    cfg.initial_rebalance_delay_ms = 0;
    bk_grp_coord_init(c, &cfg, 0, 7);
    bk_grp_load_done(c, 0);
}

/* Forms a Stable group of MEMBERS; ids[] receives the member ids. */
static void form(bk_grp_coord_t *c, bk_grp_out_t *o, const char *group, char ids[][96]) {
    bk_grp_protocol_in_t p = { kp_slice_cstr("range"), kp_slice_cstr("subscription-bytes") };
    bk_grp_join_t r = { .group_id = kp_slice_cstr(group), .client_id = kp_slice_cstr("bench"),
                        .client_host = kp_slice_cstr("/127.0.0.1"),
                        .protocol_type = kp_slice_cstr("consumer"), .session_timeout_ms = 45000,
                        .rebalance_timeout_ms = 300000, .protocols = &p, .nprotocols = 1,
                        .require_known_member_id = true };
    for (int i = 0; i < MEMBERS; i++) {
        r.member_id = kp_slice_cstr("");
        r.token = (uint64_t)i;
        bk_grp_join(c, &r, 0, o);
        const bk_grp_resp_t *x = bk_grp_out_find(o, (uint64_t)i);
        if (!x || x->error != KP_ERROR_MEMBER_ID_REQUIRED || x->member_id.len >= 96) die("join");
        memcpy(ids[i], x->member_id.p, x->member_id.len);
        ids[i][x->member_id.len] = 0;
        bk_grp_out_reset(o);
    }
    /* everyone comes back with the id; the first completes at once, the
     * others make the group rebalance until all are in */
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < MEMBERS; i++) {
            r.member_id = kp_slice_cstr(ids[i]);
            r.token = 100 + (uint64_t)round * 100 + (uint64_t)i;
            const bk_grp_t *g = bk_grp_find(c, kp_slice_cstr(group));
            bool waiting = false;
            for (size_t m = 0; m < g->nmembers; m++)
                if (kp_slice_eq_cstr(kp_slice_cstr(g->members[m].member_id.p), ids[i]))
                    waiting = g->members[m].awaiting_join;
            if (!waiting) bk_grp_join(c, &r, 0, o);
        }
    const bk_grp_t *g = bk_grp_find(c, kp_slice_cstr(group));
    if (g->state != BK_GRP_COMPLETING_REBALANCE || g->nmembers != MEMBERS) die("rebalance");
    bk_grp_assign_in_t as[MEMBERS];
    for (int i = 0; i < MEMBERS; i++) {
        as[i].member_id = kp_slice_cstr(ids[i]);
        as[i].assignment = kp_slice_cstr("assignment-bytes-for-one-member");
    }
    kp_str_t leader = { (const uint8_t *)g->leader.p, g->leader.len };
    bk_grp_sync_t s = { .group_id = kp_slice_cstr(group), .member_id = leader,
                        .generation = g->generation, .assignments = as, .nassignments = MEMBERS,
                        .token = 999 };
    bk_grp_sync(c, &s, 0, o);
    if (g->state != BK_GRP_STABLE) die("sync");
}

int main(void) {
    bk_grp_coord_t c;
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    static char ids[MEMBERS][96];
    int rounds = 1000;
    double t0 = now_s();
    for (int k = 0; k < rounds; k++) {
        coord(&c);
        form(&c, &o, "bench-group", ids);
        bk_grp_out_reset(&o);
        bk_grp_coord_free(&c);
    }
    double t1 = now_s();
    printf("rebalance, fresh %d-member group (join x2 + sync): %.1f us each\n", MEMBERS,
           (t1 - t0) / rounds * 1e6);

    coord(&c);
    form(&c, &o, "bench-group", ids);
    bk_grp_out_reset(&o);
    const bk_grp_t *g = bk_grp_find(&c, kp_slice_cstr("bench-group"));
    int commits = 200000;
    size_t nrecs = 0;
    bk_grp_commit_part_t parts[10];
    for (int p = 0; p < 10; p++)
        parts[p] = (bk_grp_commit_part_t){ .topic = kp_slice_cstr("orders"), .partition = p,
                                           .leader_epoch = 3, .metadata = kp_slice_cstr(""),
                                           .commit_ts_ms = -1 };
    t0 = now_s();
    for (int k = 0; k < commits; k++) {
        int m = k % MEMBERS;
        for (int p = 0; p < 10; p++) {
            parts[p].partition = m * 10 + p;
            parts[p].offset = k;
        }
        int16_t errs[10];
        bk_grp_commit_t cm = { .group_id = kp_slice_cstr("bench-group"),
                               .member_id = kp_slice_cstr(ids[m]), .generation = g->generation,
                               .retention_ms = -1, .parts = parts, .nparts = 10 };
        if (bk_grp_offset_commit(&c, &cm, k, &o, errs) != KP_ERROR_NONE) die("commit");
        nrecs += o.nrecs;
        if (k + 1 < commits) bk_grp_out_reset(&o);
    }
    t1 = now_s();
    printf("offset commits (10 partitions each, records encoded): %.0f commits/s, %.0f records/s\n",
           commits / (t1 - t0), (double)nrecs / (t1 - t0));

    /* replay: the last commit's records for every partition, 20,000 times */
    bk_grp_coord_t n;
    bk_grp_config_t cfg = c.cfg;
    bk_grp_coord_init(&n, &cfg, 0, 1);
    t0 = now_s();
    size_t loaded = 0;
    for (int k = 0; k < 20000; k++)
        for (size_t i = 0; i < o.nrecs; i++, loaded++)
            if (bk_grp_load_record(&n, o.recs[i].key, o.recs[i].value) != KP_OK) die("load");
    bk_grp_load_done(&n, 0);
    t1 = now_s();
    printf("replay of __consumer_offsets records: %.0f records/s\n", loaded / (t1 - t0));
    bk_grp_coord_free(&n);
    bk_grp_out_free(&o);
    bk_grp_coord_free(&c);
    return 0;
}
