/* bench_cgroup.c — CPU of the KIP-848 consumer group core alone (no I/O;
 * records encoded as the driver would append them):
 *  - a fresh 10-member group on 20 partitions, every member heartbeating
 *    (join, then with what it owns) until all are Stable at the assignment
 *    epoch: time per group and heartbeats it took (compare bench_group's
 *    classic "rebalance, fresh 10-member group");
 *  - steady-state heartbeats of a Stable 10-member group: heartbeats/s one
 *    coordinator core sustains (what the loop thread spends per heartbeat
 *    before the network and the log);
 *  - a fresh 10-member group subscribed by regex to 100 topics of 10
 *    partitions, per assignor: the assignors' subscription test (a regexec
 *    per member and topic, issue 19 review) dominates there.
 * Prints figures; no timing assertions (make bench). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/group/group_cg.h"
#include "protocol/kp_errors.h"

#define MEMBERS 10
#define PARTS 20
#define RX_TOPICS 100
#define RX_PARTS 10
#define OWNED_MAX (RX_TOPICS * RX_PARTS)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what) {
    fprintf(stderr, "bench_cgroup: %s\n", what);
    exit(1);
}

typedef struct {
    char id[32];
    int32_t epoch;
    bk_grp_cg_tp_t owned[OWNED_MAX];
    size_t nowned;
} member_t;

static bk_grp_cg_topic_t topic;
static bk_grp_cg_topics_t topics = { &topic, 1, 1 };
/* the regex scenario: the topics' view and the member's subscription */
static const bk_grp_cg_topics_t *cur = &topics;
static const char *regex;          /* NULL: by name ("bench") */
static const char *assignor;       /* NULL: the group's (uniform) */

static size_t beat(bk_grp_coord_t *c, bk_grp_out_t *o, member_t *m, int64_t now, bool *stable) {
    static const kp_str_t names[1] = { { (const uint8_t *)"bench", 5 } };
    bk_grp_cg_hb_t h;
    memset(&h, 0, sizeof h);
    h.group_id = kp_slice_cstr("bench-cgroup");
    h.member_id = kp_slice_cstr(m->id);
    h.member_epoch = m->epoch;
    h.rebalance_timeout_ms = m->epoch == 0 ? 300000 : -1;
    h.topics = names;
    h.ntopics = m->epoch == 0 && !regex ? 1 : -1;
    h.regex = m->epoch == 0 && regex ? kp_slice_cstr(regex) : kp_slice_null();
    h.assignor = assignor ? kp_slice_cstr(assignor) : kp_slice_null();
    h.owned = m->owned;
    h.nowned = (int32_t)m->nowned;
    h.client_id = kp_slice_cstr("bench");
    h.client_host = kp_slice_cstr("/127.0.0.1");
    bk_grp_cg_hb_resp_t r;
    bk_grp_cg_heartbeat(c, &h, cur, now, o, &r);
    if (r.error) die("heartbeat error");
    m->epoch = r.member_epoch;
    if (r.has_assignment) {
        if (r.nassignment > OWNED_MAX) die("assignment larger than the bench's array");
        memcpy(m->owned, r.assignment, r.nassignment * sizeof *r.assignment);
        m->nowned = r.nassignment;
    }
    size_t n = o->nrecs;
    bk_grp_out_reset(o);
    const bk_grp_t *g = bk_grp_find(c, h.group_id);
    *stable = strcmp(bk_grp_cg_state_name(g), "Stable") == 0;
    return n;
}

static void coord(bk_grp_coord_t *c) {
    bk_grp_config_t cfg;
    bk_grp_config_defaults(&cfg);
    cfg.num_partitions = 1;
    bk_grp_coord_init(c, &cfg, 0, 7);
    bk_grp_load_done(c, 0);
}

int main(void) {
    topic.name = kp_slice_cstr("bench");
    memset(topic.id.b, 0x42, sizeof topic.id.b);
    topic.nparts = PARTS;
    bk_grp_out_t o;
    bk_grp_out_init(&o);
    member_t ms[MEMBERS];
    int rounds = 2000;
    size_t beats = 0, recs = 0;
    double t0 = now_s();
    for (int k = 0; k < rounds; k++) {
        bk_grp_coord_t c;
        coord(&c);
        memset(ms, 0, sizeof ms);
        for (int i = 0; i < MEMBERS; i++) snprintf(ms[i].id, sizeof ms[i].id, "member-%02d", i);
        bool stable = false;
        /* members join one after another, then heartbeat in turn (each
         * answer taken at once) until the group is Stable */
        for (int pass = 0; pass < 50 && !stable; pass++)
            for (int i = 0; i < MEMBERS; i++) {
                recs += beat(&c, &o, &ms[i], pass, &stable);
                beats++;
            }
        if (!stable) die("not stable");
        bk_grp_coord_free(&c);
    }
    double t1 = now_s();
    printf("fresh %d-member consumer group on %d partitions until Stable: %.1f us each "
           "(%.1f heartbeats, %.1f records)\n", MEMBERS, PARTS, (t1 - t0) / rounds * 1e6,
           (double)beats / rounds, (double)recs / rounds);

    bk_grp_coord_t c;
    coord(&c);
    memset(ms, 0, sizeof ms);
    for (int i = 0; i < MEMBERS; i++) snprintf(ms[i].id, sizeof ms[i].id, "member-%02d", i);
    bool stable = false;
    for (int pass = 0; pass < 50 && !stable; pass++)
        for (int i = 0; i < MEMBERS; i++) beat(&c, &o, &ms[i], pass, &stable);
    long n = 1000000;
    recs = 0;
    t0 = now_s();
    for (long k = 0; k < n; k++) recs += beat(&c, &o, &ms[k % MEMBERS], 100 + k / 1000, &stable);
    t1 = now_s();
    if (recs != 0) die("a steady heartbeat wrote records");
    printf("steady heartbeats of a Stable %d-member group: %.0f heartbeats/s (one core)\n", MEMBERS, n / (t1 - t0));
    bk_grp_coord_free(&c);

    /* regex subscriptions over RX_TOPICS topics (names sorted, as the view is) */
    static bk_grp_cg_topic_t rx[RX_TOPICS];
    static char rx_names[RX_TOPICS][16];
    for (int t = 0; t < RX_TOPICS; t++) {
        snprintf(rx_names[t], sizeof rx_names[t], "rx-%03d", t);
        rx[t].name = kp_slice_cstr(rx_names[t]);
        memset(rx[t].id.b, 0, sizeof rx[t].id.b);
        rx[t].id.b[0] = (uint8_t)(t >> 8);
        rx[t].id.b[1] = (uint8_t)t;
        rx[t].nparts = RX_PARTS;
    }
    bk_grp_cg_topics_t rxv = { rx, RX_TOPICS, 1 };
    cur = &rxv;
    regex = "rx-[0-9]+";
    static const char *const assignors[] = { "uniform", "range" };
    for (int a = 0; a < 2; a++) {
        assignor = assignors[a];
        int rx_rounds = 50;
        beats = 0;
        t0 = now_s();
        for (int k = 0; k < rx_rounds; k++) {
            bk_grp_coord_t cx;
            coord(&cx);
            memset(ms, 0, sizeof ms);
            for (int i = 0; i < MEMBERS; i++) snprintf(ms[i].id, sizeof ms[i].id, "member-%02d", i);
            stable = false;
            for (int pass = 0; pass < 50 && !stable; pass++)
                for (int i = 0; i < MEMBERS; i++) {
                    beat(&cx, &o, &ms[i], pass, &stable);
                    beats++;
                }
            if (!stable) die("regex group not stable");
            bk_grp_coord_free(&cx);
        }
        t1 = now_s();
        printf("fresh %d-member group, regex over %d topics x %d partitions, %s: %.0f us each (%.1f heartbeats)\n",
               MEMBERS, RX_TOPICS, RX_PARTS, assignor, (t1 - t0) / rx_rounds * 1e6, (double)beats / rx_rounds);
    }
    bk_grp_out_free(&o);
    return 0;
}
