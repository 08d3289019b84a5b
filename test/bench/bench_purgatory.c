/* bench_purgatory: the cost of one append's wake-up of the fetch purgatory.
 *
 * 4,000 waiting fetches spread over 1,000 partitions (10 topics x 100
 * partitions, names like librdkafka's test topics); each append to one
 * partition asks its waiters whether they can complete. `ready` is a stub
 * that counts and says no (the steady state: data below min_bytes, or a
 * consumer waiting for the HW while the LEO moved), so what is measured is
 * finding the waiters, not answering them. Two shapes: every fetch on one
 * partition (4 waiters per partition), and every fetch on 8 partitions (32
 * per partition, as consumers that own several partitions).
 *
 * "old": a faithful copy of the purgatory this replaced (api/h_fetch.c
 * before issue 14: bk_fetch_notify walked every waiting fetch and, for
 * each of its partitions, compared the partition index and then the topic
 * name (Fetch < v13: strlen + memcmp) or the topic id (v13+)). The copy
 * keeps its data layout (waiter -> request -> plan of targets) and its
 * comparisons; only the answer path is cut, as in "new".
 * "new": bk_repl_purg_notify of broker/replication/purgatory.c, the real code.
 *
 * Prints ns per append (one notify) and the ratio. Fixed iteration counts,
 * well under a second; never asserts on time. */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/replication/purgatory.h"
#include "protocol/kp_wire.h"

#define TOPICS 10
#define PARTS_PER_TOPIC 100
#define PARTITIONS (TOPICS * PARTS_PER_TOPIC)
#define FETCHES 4000
#define MAX_SPAN 8
#define ROUNDS_OLD 20000u         /* divided by the span: the old walk is slow */
#define ROUNDS_NEW 2000000u

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what) {
    fprintf(stderr, "bench_purgatory: %s\n", what);
    exit(1);
}

typedef struct {
    char topic[32];
    bk_meta_uuid_t topic_id;
    int32_t partition;
} part_t;

static part_t g_parts[PARTITIONS];
static unsigned long long g_ready_calls;

/* The check both purgatories make for a waiter of the notified partition. */
static bool __attribute__((noinline)) not_ready(void *ctx) {
    (void)ctx;
    g_ready_calls++;
    return false;
}

/* ---- old: the linear walk (copy of h_fetch.c before issue 14) --------------------- */

typedef struct {
    kp_str_t topic;
    kp_uuid_t topic_id;
    int32_t partition;
    int64_t fetch_offset;     /* the rest of the old ftarget_t, for its size */
    int32_t max_bytes;
    int64_t last_hw, last_lso, last_start;
} old_target_t;

typedef struct {
    old_target_t *v;
    size_t n;
} old_plan_t;

typedef struct {
    int16_t api_version;
} old_req_t;

typedef struct old_wait {
    old_req_t *req;
    old_plan_t *plan;
    void *timer;
    struct old_wait *prev, *next;
} old_wait_t;

static bool old_by_id(const old_req_t *req) { return req->api_version >= 13; }

static bool old_waits_on(const old_wait_t *w, const part_t *p) {
    for (size_t i = 0; i < w->plan->n; i++) {
        const old_target_t *t = &w->plan->v[i];
        if (t->partition != p->partition) continue;
        if (old_by_id(w->req) ? memcmp(t->topic_id.b, p->topic_id.b, 16) == 0
                              : t->topic.len == strlen(p->topic) && memcmp(t->topic.p, p->topic, t->topic.len) == 0)
            return true;
    }
    return false;
}

static bool (*volatile g_ready)(void *) = not_ready;

static void old_notify(old_wait_t *head, const part_t *p) {
    old_wait_t *w = head;
    while (w) {
        old_wait_t *next = w->next;
        if (old_waits_on(w, p) && g_ready(w)) die("old: completed");
        w = next;
    }
}

/* ---- the shapes ------------------------------------------------------------------- */

/* Fetch f reads partitions first(f) .. first(f)+span-1 (mod PARTITIONS): with
 * FETCHES = 4 x PARTITIONS every partition has 4 x span waiters. */
static int part_of(int f, int k) { return (f % PARTITIONS + k * (PARTITIONS / MAX_SPAN)) % PARTITIONS; }

static double run_old(int span, int16_t api_version) {
    old_req_t req = { api_version };
    old_wait_t *ws = calloc(FETCHES, sizeof *ws);
    old_plan_t *plans = calloc(FETCHES, sizeof *plans);
    old_target_t *ts = calloc((size_t)FETCHES * (size_t)span, sizeof *ts);
    if (!ws || !plans || !ts) die("out of memory");
    old_wait_t *head = NULL;
    for (int f = 0; f < FETCHES; f++) {
        plans[f].v = &ts[(size_t)f * (size_t)span];
        plans[f].n = (size_t)span;
        for (int k = 0; k < span; k++) {
            const part_t *p = &g_parts[part_of(f, k)];
            old_target_t *t = &plans[f].v[k];
            t->topic = kp_slice_cstr(p->topic);
            memcpy(t->topic_id.b, p->topic_id.b, 16);
            t->partition = p->partition;
        }
        ws[f].req = &req;
        ws[f].plan = &plans[f];
        ws[f].next = head;   /* pushed at the front, as the old registration did */
        if (head) head->prev = &ws[f];
        head = &ws[f];
    }
    unsigned rounds = ROUNDS_OLD / (unsigned)span;
    g_ready_calls = 0;
    double t0 = now_s();
    for (unsigned r = 0; r < rounds; r++) old_notify(head, &g_parts[(r * 7u) % PARTITIONS]);
    double ns = (now_s() - t0) * 1e9 / rounds;
    if (g_ready_calls != (unsigned long long)rounds * 4u * (unsigned)span) die("old: wrong waiters asked");
    free(ts);
    free(plans);
    free(ws);
    return ns;
}

static void never_done(void *ctx) { (void)ctx; }

static double run_new(int span) {
    struct event_base *base = event_base_new();
    bk_repl_purg_t *pg = base ? bk_repl_purg_new(base, FETCHES) : NULL;
    if (!pg) die("purgatory");
    for (int f = 0; f < FETCHES; f++) {
        bk_repl_purg_key_t keys[MAX_SPAN];
        for (int k = 0; k < span; k++) {
            const part_t *p = &g_parts[part_of(f, k)];
            keys[k].topic_id = p->topic_id;
            keys[k].partition = p->partition;
        }
        if (bk_repl_purg_wait(pg, keys, (size_t)span, BK_REPL_PURG_WAIT_MAX_MS, not_ready, never_done, NULL) != KP_OK)
            die("wait");
    }
    if (bk_repl_purg_partitions(pg) != PARTITIONS || bk_repl_purg_waiting(pg) != FETCHES) die("registration");
    g_ready_calls = 0;
    double t0 = now_s();
    for (unsigned r = 0; r < ROUNDS_NEW; r++) {
        const part_t *p = &g_parts[(r * 7u) % PARTITIONS];
        bk_repl_purg_notify(pg, &p->topic_id, p->partition);
    }
    double ns = (now_s() - t0) * 1e9 / ROUNDS_NEW;
    if (g_ready_calls != (unsigned long long)ROUNDS_NEW * 4u * (unsigned)span) die("new: wrong waiters asked");
    bk_repl_purg_free(pg);   /* completes the 4,000 (never_done) */
    event_base_free(base);
    return ns;
}

int main(void) {
    srand(14);
    for (int t = 0; t < TOPICS; t++)
        for (int k = 0; k < PARTS_PER_TOPIC; k++) {
            part_t *p = &g_parts[t * PARTS_PER_TOPIC + k];
            snprintf(p->topic, sizeof p->topic, "rdkafkatest_rnd%04x_%d", 0x3a1f + t, t);
            for (int i = 0; i < 16; i++) p->topic_id.b[i] = (uint8_t)(t * 31 + i * 7 + 1);
            p->partition = k;
        }
    printf("fetch purgatory wake-up, %d waiting fetches over %d partitions (%d topics x %d)\n", FETCHES, PARTITIONS,
           TOPICS, PARTS_PER_TOPIC);
    for (int span = 1; span <= MAX_SPAN; span *= MAX_SPAN) {
        double old_name = run_old(span, 11);
        double old_id = run_old(span, 13);
        double fresh = run_new(span);
        printf("  %d partition(s) per fetch (%d waiters per partition):\n", span, 4 * span);
        printf("    old linear walk, by name (Fetch v11): %10.1f ns per append\n", old_name);
        printf("    old linear walk, by id   (Fetch v13): %10.1f ns per append\n", old_id);
        printf("    new keyed purgatory:                  %10.1f ns per append  (%.0fx / %.0fx faster)\n", fresh,
               old_name / fresh, old_id / fresh);
    }
    return 0;
}
