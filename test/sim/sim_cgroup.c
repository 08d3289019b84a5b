/* sim_cgroup.c — deterministic simulation of the KIP-848 consumer group
 * core (broker/group/group_cg.h): one coordinator, 3-6 members with a
 * seeded faulty network, crashes, restarts, static members, subscription
 * and topic changes, and coordinator failovers that rebuild the core from
 * the records it wrote.
 *
 * Model:
 * - Network: every heartbeat and every answer is delayed 1-300 ms and, in
 *   the fault phase, dropped with probability 1/8 each way. A member has one
 *   request in flight; with no answer within 2 s it sends again (same epoch,
 *   same owned partitions); a late answer to an older request is ignored.
 * - Members act like KIP-848 clients: they take each assignment they are
 *   answered (revoking at once what it no longer holds) and report what they
 *   own in every heartbeat; FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID make
 *   them drop everything and rejoin (epoch 0, same member id);
 *   UNRELEASED_INSTANCE_ID makes a restarted static member retry. Some are
 *   static (instance ids); some subscribe by name, some by regex.
 * - Faults: a member pauses 0.2-6 s (the session is 3 s: often expired) or
 *   restarts (a static one leaving with epoch -2 first, or not); members
 *   leave (-1) and new ones join; a topic grows, a topic a regex matches is
 *   created; the coordinator fails over: a fresh core replays every record
 *   so far and must hold the same state (epochs, targets, assignments).
 *
 * Invariants (failure prints the seed to replay):
 *   I1 no partition is in two members' assigned-or-revoking sets
 *   I2 a member that the coordinator knows under the id it uses owns only
 *      partitions the coordinator has it holding (assigned or revoking):
 *      with I1, no two live members consume one partition
 *   I3 a replayed core equals the live one (failover restores exactly)
 *   L  once faults stop, within 20 s every member is at the assignment
 *      epoch and Stable, their assignments are disjoint and cover every
 *      subscribed partition, each member owns what it was assigned
 *
 * usage: sim_cgroup                 seeds 1..2000
 *        sim_cgroup --seeds N [--first F]
 *        sim_cgroup --seed S [--verbose]
 *        add --mutate-zombie: a fenced client goes on consuming the
 *        partitions it had (the run must then FAIL on I2) */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/group/group_cg_int.h"

#define NM_MAX 8
#define Q_MAX 256
#define STEP_MS 10
#define FAULT_MS 30000
#define SETTLE_MS 20000
#define SESSION_MS 3000
#define RESEND_MS 2000
#define T0 ((int64_t)1000000)

static uint64_t rng;
static bool verbose;
static bool mutate;                      /* a fenced client keeps its partitions */
static uint64_t n_failovers, n_fenced, n_unreleased, n_epochs;
static uint64_t rnd(void) {
    uint64_t z = (rng += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static int rn(int n) { return (int)(rnd() % (uint64_t)n); }

/* ---- topics ---- */
typedef struct {
    char name[16];
    kp_uuid_t id;
    int32_t nparts;
} topic_t;
static topic_t topics[4];
static size_t ntopics;
static bk_grp_cg_topic_t tview[4];
static int64_t tgen;

static bk_grp_cg_topics_t view(void) {
    for (size_t i = 0; i < ntopics; i++)
        tview[i] = (bk_grp_cg_topic_t){ kp_slice_cstr(topics[i].name), topics[i].id, topics[i].nparts };
    return (bk_grp_cg_topics_t){ tview, ntopics, tgen };
}

static void add_topic(const char *name, int32_t n) {
    topic_t *t = &topics[ntopics++];
    snprintf(t->name, sizeof t->name, "%s", name);
    for (int i = 0; i < 16; i++) t->id.b[i] = (uint8_t)rnd();
    t->nparts = n;
    /* keep them sorted by name (the view's contract) */
    for (size_t i = ntopics - 1; i > 0 && strcmp(topics[i - 1].name, topics[i].name) > 0; i--) {
        topic_t x = topics[i];
        topics[i] = topics[i - 1];
        topics[i - 1] = x;
    }
    tgen++;
}

/* ---- members (clients) ---- */
typedef struct {
    bool used, alive, leaving, zombie;
    char id[32], instance[16];
    bool is_static, by_regex;
    int32_t epoch;
    bk_grp_cg_tp_t owned[64];
    size_t nowned;
    int64_t next_hb_ms, paused_until, sent_ms;
    uint64_t inflight;                   /* request seq awaited; 0 none */
    int interval_ms;
} member_t;
static member_t ms[NM_MAX];
static uint64_t seq;

/* ---- messages ---- */
typedef struct {
    int64_t at;
    int m;
    uint64_t seq;
    bool answer;
    bk_grp_cg_hb_resp_t r;               /* answer only; assignment copied */
    bk_grp_cg_tp_t asg[64];
    char mid[32];
    int32_t epoch;                       /* request */
} msg_t;
static msg_t q[Q_MAX];
static size_t nq;

/* ---- coordinator and its log ---- */
static bk_grp_coord_t coord;
static bk_grp_config_t cfg;
typedef struct { uint8_t *k, *v; size_t kn, vn; bool tomb; } rec_t;
static rec_t *log_recs;
static size_t nlog, log_cap;
static int64_t now;
static int faults_on;
static const char *GROUP = "simg";

static void fail(uint64_t seed, const char *what) {
    printf("FAIL seed %" PRIu64 " at %" PRId64 " ms: %s (replay: sim_cgroup --seed %" PRIu64 " --verbose)\n",
           seed, now - T0, what, seed);
    exit(1);
}

static void append(bk_grp_out_t *o) {
    assert(o->err == KP_OK);
    for (size_t i = 0; i < o->nrecs; i++) {
        if (nlog == log_cap) {
            log_cap = log_cap ? log_cap * 2 : 1024;
            log_recs = realloc(log_recs, log_cap * sizeof *log_recs);
            assert(log_recs);
        }
        rec_t *r = &log_recs[nlog++];
        r->kn = o->recs[i].key.len;
        r->k = malloc(r->kn);
        memcpy(r->k, o->recs[i].key.p, r->kn);
        r->tomb = o->recs[i].value.p == NULL;
        r->vn = r->tomb ? 0 : o->recs[i].value.len;
        r->v = malloc(r->vn ? r->vn : 1);
        if (r->vn) memcpy(r->v, o->recs[i].value.p, r->vn);
    }
    bk_grp_out_reset(o);
}

static void load(bk_grp_coord_t *c) {
    bk_grp_coord_init(c, &cfg, 0, rnd());
    for (size_t i = 0; i < nlog; i++) {
        kp_bytes_t k = { log_recs[i].k, log_recs[i].kn };
        kp_bytes_t v = log_recs[i].tomb ? kp_slice_null() : (kp_bytes_t){ log_recs[i].v, log_recs[i].vn };
        int st = bk_grp_load_record(c, k, v);
        assert(st == KP_OK);
    }
    bk_grp_load_done(c, now);
}

/* A text form of the state that a replay must reproduce. */
static void dump(const bk_grp_coord_t *c, char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = 0;
#define P(...) (o += (size_t)snprintf(buf + o, o < cap ? cap - o : 0, __VA_ARGS__))
    for (size_t g = 0; g < c->ngroups; g++) {
        const bk_grp_cg_t *cg = c->groups[g]->cg;
        if (!cg) continue;
        P("G %s e%d a%d n%zu\n", c->groups[g]->id.p, cg->epoch, cg->assignment_epoch, cg->nmembers);
        for (size_t i = 0; i < cg->nmembers; i++) {
            const bk_grp_cg_member_t *m = &cg->members[i];
            P(" M %s i%s e%d p%d s%d r%s t%zu |", m->member_id.p, m->instance_id.p ? m->instance_id.p : "-", m->epoch,
              m->prev_epoch, m->state, m->regex.p ? m->regex.p : "-", m->ntopics);
            const bk_grp_cg_tps_t *sets[3] = { &m->assigned, &m->revoking, &m->target };
            for (int s = 0; s < 3; s++) {
                for (size_t k = 0; k < sets[s]->n; k++) P(" %02x/%d", sets[s]->v[k].topic.b[0], sets[s]->v[k].partition);
                P(" |");
            }
            P("\n");
        }
    }
#undef P
    assert(o < cap);
}

static const bk_grp_cg_t *group(void) {
    const bk_grp_t *g = bk_grp_find(&coord, kp_slice_cstr(GROUP));
    return g ? g->cg : NULL;
}

/* ---- checks ---- */
static void check(uint64_t seed) {
    const bk_grp_cg_t *cg = group();
    if (!cg) return;
    for (size_t i = 0; i < cg->nmembers; i++) {
        const bk_grp_cg_member_t *a = &cg->members[i];
        for (size_t j = i + 1; j < cg->nmembers; j++) {
            const bk_grp_cg_member_t *b = &cg->members[j];
            const bk_grp_cg_tps_t *as[2] = { &a->assigned, &a->revoking };
            for (int x = 0; x < 2; x++)
                for (size_t k = 0; k < as[x]->n; k++)
                    if (cg_tps_has(&b->assigned, &as[x]->v[k]) || cg_tps_has(&b->revoking, &as[x]->v[k]))
                        fail(seed, "I1: a partition held by two members");
        }
    }
    for (int i = 0; i < NM_MAX; i++) {
        member_t *m = &ms[i];
        if (!m->used || !m->alive || m->epoch <= 0) continue;
        ptrdiff_t k = cg_member_idx(cg, kp_slice_cstr(m->id));
        if (k < 0) continue;               /* expired meanwhile: a zombie until its next answer */
        const bk_grp_cg_member_t *c = &cg->members[k];
        for (size_t p = 0; p < m->nowned; p++)
            if (!cg_tps_has(&c->assigned, &m->owned[p]) && !cg_tps_has(&c->revoking, &m->owned[p])) {
                if (verbose) printf("  member %s owns %d, coordinator: epoch %d\n", m->id, m->owned[p].partition, c->epoch);
                fail(seed, "I2: a member owns a partition the coordinator does not give it");
            }
    }
}

/* ---- the member's side ---- */
static void send_hb(int i, int32_t epoch_override, bool use_override) {
    member_t *m = &ms[i];
    if (nq == Q_MAX) return;
    msg_t *x = &q[nq++];
    memset(x, 0, sizeof *x);
    x->at = now + 1 + rn(300);
    x->m = i;
    x->seq = ++seq;
    x->epoch = use_override ? epoch_override : m->epoch;
    snprintf(x->mid, sizeof x->mid, "%s", m->id);
    if (faults_on && rn(8) == 0) nq--;     /* dropped on the way */
    m->inflight = x->seq;
    m->sent_ms = now;
}

static void take(int i, const bk_grp_cg_hb_resp_t *r, const bk_grp_cg_tp_t *asg) {
    member_t *m = &ms[i];
    if (r->error == KP_ERROR_UNRELEASED_INSTANCE_ID) n_unreleased++;
    if (r->error == KP_ERROR_FENCED_MEMBER_EPOCH || r->error == KP_ERROR_UNKNOWN_MEMBER_ID) {
        n_fenced++;
        m->epoch = 0;                      /* lost everything: rejoin */
        if (!mutate) m->nowned = 0;
        m->zombie = true;
        return;
    }
    if (r->error) return;                  /* UNRELEASED_INSTANCE_ID, ...: retry later */
    if (m->leaving) { m->used = false; return; }
    m->epoch = r->member_epoch;
    m->interval_ms = r->heartbeat_interval_ms;
    if (r->has_assignment) {
        assert(r->nassignment <= 64);
        bk_grp_cg_tp_t old[64];
        size_t nold = m->nowned;
        memcpy(old, m->owned, nold * sizeof *old);
        memcpy(m->owned, asg, r->nassignment * sizeof *asg);
        m->nowned = r->nassignment;
        /* the bug under test: a fenced member that rejoined goes on with
         * the partitions it had besides its new assignment */
        for (size_t k = 0; mutate && m->zombie && k < nold && m->nowned < 64; k++) {
            bool have = false;
            for (size_t j = 0; j < m->nowned; j++) have |= cg_tp_cmp(&m->owned[j], &old[k]) == 0;
            if (!have) m->owned[m->nowned++] = old[k];
        }
        m->zombie = false;
    }
}

static void coordinator_handle(const msg_t *x, bk_grp_out_t *out) {
    member_t *m = &ms[x->m];
    bk_grp_cg_hb_t h;
    memset(&h, 0, sizeof h);
    static const char *names[1] = { "t0" };
    kp_str_t tn[1] = { kp_slice_cstr(names[0]) };
    h.group_id = kp_slice_cstr(GROUP);
    h.member_id = kp_slice_cstr(x->mid);
    h.member_epoch = x->epoch;
    h.instance_id = m->is_static ? kp_slice_cstr(m->instance) : kp_slice_null();
    h.rack_id = kp_slice_null();
    h.rebalance_timeout_ms = x->epoch == 0 ? 5000 : -1;
    h.ntopics = -1;
    h.regex = kp_slice_null();
    h.assignor = kp_slice_null();
    if (x->epoch == 0) {
        if (m->by_regex) h.regex = kp_slice_cstr("t.*");
        else { h.topics = tn; h.ntopics = 1; }
    }
    h.owned = m->owned;
    h.nowned = x->epoch == 0 ? 0 : (int32_t)m->nowned;
    h.client_id = kp_slice_cstr("sim");
    h.client_host = kp_slice_cstr("/sim");
    bk_grp_cg_topics_t tv = view();
    bk_grp_cg_hb_resp_t r;
    bk_grp_cg_heartbeat(&coord, &h, &tv, now, out, &r);
    if (nq < Q_MAX && !(faults_on && rn(8) == 0)) {
        msg_t *a = &q[nq++];
        memset(a, 0, sizeof *a);
        a->at = now + 1 + rn(300);
        a->m = x->m;
        a->seq = x->seq;
        a->answer = true;
        a->r = r;
        assert(r.nassignment <= 64);
        if (r.nassignment) memcpy(a->asg, r.assignment, r.nassignment * sizeof *r.assignment);
        a->r.assignment = NULL;
        a->r.member_id = kp_slice_null();
        a->r.message = NULL;
    }
}

static void new_member(int i) {
    member_t *m = &ms[i];
    memset(m, 0, sizeof *m);
    m->used = m->alive = true;
    snprintf(m->id, sizeof m->id, "m%d-%" PRIu64, i, rnd() % 100000);
    m->is_static = rn(3) == 0;
    snprintf(m->instance, sizeof m->instance, "inst-%d", i);
    m->by_regex = rn(3) == 0;
    m->next_hb_ms = now + rn(200);
    m->interval_ms = 500;
}

static void run_seed(uint64_t seed) {
    rng = seed * 0x2545F4914F6CDD1DULL + 1;
    memset(ms, 0, sizeof ms);
    nq = 0;
    seq = 0;
    for (size_t i = 0; i < nlog; i++) { free(log_recs[i].k); free(log_recs[i].v); }
    nlog = 0;
    ntopics = 0;
    tgen = 1;
    now = T0;
    faults_on = 1;
    bk_grp_config_defaults(&cfg);
    cfg.num_partitions = 1;
    cfg.cg_session_timeout_ms = SESSION_MS;
    cfg.cg_heartbeat_interval_ms = 500;
    cfg.cg_assignors[0] = rn(2);
    add_topic("t0", 2 + rn(7));
    load(&coord);
    int n0 = 3 + rn(4);
    for (int i = 0; i < n0; i++) new_member(i);
    bk_grp_out_t out;
    bk_grp_out_init(&out);
    int64_t end_faults = T0 + FAULT_MS, end = end_faults + SETTLE_MS;
    bool settled = false;
    for (; now < end && !settled; now += STEP_MS) {
        faults_on = now < end_faults;
        /* faults */
        if (faults_on && rn(400) == 0) {
            int i = rn(NM_MAX);
            member_t *m = &ms[i];
            int what = rn(5);
            if (!m->used) { if (rn(2)) new_member(i); }
            else if (what == 0) m->paused_until = now + 200 + rn(5800);
            else if (what == 1 && m->alive) {            /* leave */
                m->leaving = true;
                send_hb(i, -1, true);
            } else if (what == 2 && m->is_static) {      /* static restart, graceful or not */
                if (rn(2)) send_hb(i, -2, true);
                m->epoch = 0;
                m->nowned = 0;
                snprintf(m->id, sizeof m->id, "m%d-%" PRIu64, i, rnd() % 100000);
                m->inflight = 0;
                m->next_hb_ms = now + rn(1000);
            } else if (what == 3) {                      /* crash and rejoin with the same id */
                m->epoch = 0;
                m->nowned = 0;
                m->inflight = 0;
                m->next_hb_ms = now + rn(4000);
            }
        }
        if (faults_on && rn(1500) == 0 && topics[0].nparts < 12) { topics[0].nparts++; tgen++; }
        if (faults_on && rn(2000) == 0 && ntopics < 3) add_topic(ntopics == 1 ? "t1" : "tx", 1 + rn(4));
        if (faults_on && rn(1200) == 0) {               /* coordinator failover */
            char a[65536], b[65536];
            dump(&coord, a, sizeof a);
            bk_grp_coord_free(&coord);
            load(&coord);
            dump(&coord, b, sizeof b);
            if (strcmp(a, b) != 0) {
                if (verbose) printf("live:\n%sreplayed:\n%s", a, b);
                fail(seed, "I3: the replayed core differs");
            }
            n_failovers++;
            nq = 0;                                     /* connections gone */
            for (int i = 0; i < NM_MAX; i++) ms[i].inflight = 0;
        }
        /* deliveries */
        for (size_t k = 0; k < nq;) {
            if (q[k].at > now) { k++; continue; }
            msg_t x = q[k];
            q[k] = q[--nq];
            member_t *m = &ms[x.m];
            if (!x.answer) {
                coordinator_handle(&x, &out);
                append(&out);
            } else if (m->used && m->inflight == x.seq && m->alive) {
                m->inflight = 0;
                if (verbose && x.r.error) printf("%6" PRId64 " %s error %d\n", now - T0, m->id, x.r.error);
                take(x.m, &x.r, x.asg);
                m->next_hb_ms = now + (m->epoch == 0 || x.r.has_assignment ? 0 : m->interval_ms);
            }
        }
        /* members */
        for (int i = 0; i < NM_MAX; i++) {
            member_t *m = &ms[i];
            if (!m->used || m->leaving || now < m->paused_until) continue;
            if (m->inflight && now - m->sent_ms < RESEND_MS) continue;
            if (now >= m->next_hb_ms || m->inflight) send_hb(i, 0, false);
        }
        if (now % 100 == 0) {
            bk_grp_cg_topics_t tv = view();
            bk_grp_cg_tick(&coord, &tv, now, &out);
            append(&out);
        }
        check(seed);
        /* liveness: settled once faults are over */
        if (!faults_on && now % 500 == 0) {
            const bk_grp_cg_t *cg = group();
            bool ok = cg != NULL;
            size_t total = 0, live = 0;
            for (int i = 0; ok && i < NM_MAX; i++) {
                if (!ms[i].used || ms[i].leaving) continue;
                live++;
                ptrdiff_t k = cg_member_idx(cg, kp_slice_cstr(ms[i].id));
                if (k < 0) { ok = false; break; }
                const bk_grp_cg_member_t *c = &cg->members[k];
                ok = c->epoch == cg->assignment_epoch && c->state == BK_GRP_CG_STABLE && c->revoking.n == 0 &&
                     cg_tps_eq(&c->assigned, &c->target) && ms[i].epoch == c->epoch && ms[i].nowned == c->assigned.n;
                total += c->assigned.n;
            }
            size_t want = 0;
            for (size_t t = 0; ok && t < ntopics; t++) {
                bool sub = false;
                for (size_t i = 0; i < cg->nmembers; i++) sub |= cg_subscribed(&cg->members[i], kp_slice_cstr(topics[t].name));
                if (sub) want += (size_t)topics[t].nparts;
            }
            settled = ok && cg->nmembers == live && total == want && cg->epoch == cg->assignment_epoch;
        }
    }
    if (!settled) fail(seed, "L: not settled 20 s after the faults stopped");
    n_epochs += (uint64_t)group()->epoch;
    bk_grp_out_free(&out);
    bk_grp_coord_free(&coord);
}

int main(int argc, char **argv) {
    uint64_t first = 1, n = 2000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seeds") && i + 1 < argc) n = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--first") && i + 1 < argc) first = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) { first = strtoull(argv[++i], NULL, 10); n = 1; }
        else if (!strcmp(argv[i], "--verbose")) verbose = true;
        else if (!strcmp(argv[i], "--mutate-zombie")) mutate = true;
        else { fprintf(stderr, "usage: sim_cgroup [--seeds N [--first F] | --seed S [--verbose]]\n"); return 2; }
    }
    for (uint64_t s = first; s < first + n; s++) run_seed(s);
    printf("sim_cgroup: %" PRIu64 " seeds ok (faults %d s, settle <= %d s each): %" PRIu64 " group epochs, %" PRIu64
           " failovers replayed, %" PRIu64 " fenced/unknown members rejoined, %" PRIu64 " UNRELEASED_INSTANCE_ID\n",
           n, FAULT_MS / 1000, SETTLE_MS / 1000, n_epochs, n_failovers, n_fenced, n_unreleased);
    return 0;
}
