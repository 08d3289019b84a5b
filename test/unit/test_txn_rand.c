/* Randomized test of the transaction coordinator and the partition side:
 * random clients (current and zombie instances), delayed and failing log
 * writes, markers acknowledged in random order, time passing, failovers.
 * Invariants: epochs never go back per producer id; fenced instances never
 * succeed; a transaction holds each partition once; states follow the legal
 * graph (checked on the log); a replay equals the live state; LSO <= HW and
 * equals the first offset of the oldest open transaction.
 * SKIFF_TXN_SEEDS=N runs N seeds (default 20); a failure names the seed. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/txn/txn_int.h"
#include "broker/txn/txn_part.h"
#include "txn_test_util.h"

#define NIDS 4
#define STEPS 400
#define HELD_MAX 8

static uint64_t rng;
static uint64_t rnd(void) {
    rng += 0x9e3779b97f4a7c15ull;
    uint64_t z = rng;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static size_t pick(size_t n) { return (size_t)(rnd() % n); }

static const char *const IDS[NIDS] = { "t-a", "t-b", "t-c", "t-d" };
static const bk_txn_tp_t POOL[6] = { { "x", 0 }, { "x", 1 }, { "x", 2 }, { "y", 0 }, { "y", 5 }, { "z", 9 } };

typedef struct {
    int64_t pid;
    int16_t epoch;
} inst_t;

typedef struct {
    inst_t cur, old;        /* latest instance from InitProducerId, and a zombie */
    bool have;
    int64_t seen_pid;       /* last observed (not in flight) pid/epoch */
    int16_t seen_epoch;
} client_t;

static tctx_t *T;
static client_t C[NIDS];
static bk_txn_out_t held[HELD_MAX];
static size_t nheld;
static unsigned seed_now;
static size_t seen_states[BK_TXN_STATE_COUNT + 1];   /* [COUNT] = tombstones */

static bool fenced_inst(size_t i, inst_t in) {
    const bk_txn_meta_t *m = bk_txn_get(&T->c, IDS[i]);
    return m && (m->producer_id != in.pid || m->producer_epoch != in.epoch);
}

/* Either complete the out now, or hold it to complete later. */
static int16_t settle(bk_txn_out_t *o) {
    if (!o->wait && o->nrecs == 0) {
        int16_t e = o->error;
        t_take_markers(T, o);
        bk_txn_out_free(o);
        return e;
    }
    if (nheld < HELD_MAX && pick(3) == 0) {
        held[nheld++] = *o;
        return -2;   /* answered later */
    }
    int16_t e = o->error;
    if (o->wait) e = t_flush(T, o);
    else (void)t_flush(T, o);
    bk_txn_out_free(o);
    return e;
}

static void op_init(size_t i) {
    bk_txn_out_t o;
    bk_txn_out_init(&o);
    int32_t timeout = pick(10) == 0 ? 0 : (int32_t)(500 + pick(5000));
    bk_txn_init_req_t req = { IDS[i], timeout, -1, -1 };
    bk_txn_init_producer_id(&T->c, &req, T->now, &o);
    if (timeout == 0) ck_assert_int_eq(o.error, KP_ERROR_INVALID_TRANSACTION_TIMEOUT);
    if (!o.wait) {
        t_take_markers(T, &o);
        bk_txn_out_free(&o);
        return;
    }
    int64_t pid;
    int16_t epoch;
    int16_t e = t_flush_st(T, &o, KP_ERROR_NONE, &pid, &epoch);
    bk_txn_out_free(&o);
    if (e == KP_ERROR_NONE) {
        C[i].old = C[i].cur;
        C[i].cur = (inst_t){ pid, epoch };
        C[i].have = true;
    }
}

static void op_client(size_t i, int kind) {
    if (!C[i].have) return;
    bool zombie = pick(4) == 0;
    inst_t in = zombie ? C[i].old : C[i].cur;
    bool fenced = fenced_inst(i, in);
    bk_txn_out_t o;
    bk_txn_out_init(&o);
    if (kind == 0) {
        bk_txn_tp_t tps[3];
        size_t n = 1 + pick(3);
        for (size_t k = 0; k < n; k++) tps[k] = POOL[pick(6)];
        bk_txn_add_partitions(&T->c, IDS[i], in.pid, in.epoch, tps, n, T->now, &o);
    } else if (kind == 1) {
        bk_txn_add_offsets(&T->c, IDS[i], in.pid, in.epoch, (int32_t)pick(3), T->now, &o);
    } else {
        bk_txn_end(&T->c, IDS[i], in.pid, in.epoch, pick(2) == 0, T->now, &o);
    }
    if (fenced) {
        /* a fenced instance never gets anything done */
        ck_assert(!o.wait);
        ck_assert_uint_eq(o.nrecs, 0);
        ck_assert(o.error == KP_ERROR_PRODUCER_FENCED || o.error == KP_ERROR_INVALID_PRODUCER_ID_MAPPING);
    }
    (void)settle(&o);
}

static void op_release(void) {
    if (nheld == 0) return;
    size_t k = pick(nheld);
    bk_txn_out_t o = held[k];
    held[k] = held[--nheld];
    int16_t st = pick(5) == 0 ? KP_ERROR_NOT_LEADER_OR_FOLLOWER : KP_ERROR_NONE;
    (void)t_flush_st(T, &o, st, NULL, NULL);
    bk_txn_out_free(&o);
}

static void release_all(void) {
    while (nheld) op_release();
}

/* ---- invariants --------------------------------------------------------- */

static void check_live(void) {
    for (size_t i = 0; i < NIDS; i++) {
        const bk_txn_meta_t *m = bk_txn_get(&T->c, IDS[i]);
        if (!m) continue;
        ck_assert_int_lt(m->state, BK_TXN_STATE_COUNT);
        ck_assert_int_ne(m->state, BK_TXN_DEAD);
        for (size_t k = 1; k < m->nparts; k++) {
            int c = strcmp(m->parts[k - 1].topic, m->parts[k].topic);
            ck_assert(c < 0 || (c == 0 && m->parts[k - 1].partition < m->parts[k].partition));
        }
        if (m->state == BK_TXN_ONGOING) ck_assert(m->nparts >= 1 && m->start_ms >= 0);
        if (m->state == BK_TXN_EMPTY || m->state == BK_TXN_COMPLETE_COMMIT || m->state == BK_TXN_COMPLETE_ABORT)
            ck_assert_uint_eq(m->nparts, 0);
    }
}

/* Observed (pid, epoch) per id from the entries not in flight. */
static void check_epochs(void) {
    for (size_t i = 0; i < NIDS; i++) {
        size_t pos;
        bk_txn_entry_t *e = txn_find(&T->c, IDS[i], &pos);
        if (!e || e->pending || e->cur.producer_epoch < 0) continue;
        if (e->cur.producer_id == C[i].seen_pid) ck_assert_int_ge(e->cur.producer_epoch, C[i].seen_epoch);
        else ck_assert_int_gt(e->cur.producer_id, C[i].seen_pid);
        C[i].seen_pid = e->cur.producer_id;
        C[i].seen_epoch = e->cur.producer_epoch;
    }
}

static bool legal(int from, int to) {   /* -1 = no record / tombstone */
    switch (from) {
    case -1: return to == BK_TXN_EMPTY;
    case BK_TXN_EMPTY: return to == BK_TXN_EMPTY || to == BK_TXN_ONGOING || to == -1;
    case BK_TXN_ONGOING: return to == BK_TXN_ONGOING || to == BK_TXN_PREPARE_COMMIT || to == BK_TXN_PREPARE_ABORT;
    case BK_TXN_PREPARE_COMMIT: return to == BK_TXN_COMPLETE_COMMIT;
    case BK_TXN_PREPARE_ABORT: return to == BK_TXN_COMPLETE_ABORT;
    case BK_TXN_COMPLETE_COMMIT:
    case BK_TXN_COMPLETE_ABORT: return to == BK_TXN_EMPTY || to == BK_TXN_ONGOING || to == -1;
    default: return false;
    }
}

static void check_log(void) {
    int last[NIDS];
    int64_t pid[NIDS];
    int16_t ep[NIDS];
    for (size_t i = 0; i < NIDS; i++) last[i] = -1, pid[i] = -1, ep[i] = -1;
    for (size_t r = 0; r < T->nlog; r++) {
        char *id;
        bk_txn_meta_t m;
        bool dead;
        t_decode(T, r, &id, &m, &dead);
        size_t i = 0;
        while (i < NIDS && strcmp(IDS[i], id) != 0) i++;
        ck_assert_uint_lt(i, NIDS);
        int to = dead ? -1 : (int)m.state;
        seen_states[dead ? BK_TXN_STATE_COUNT : (size_t)to]++;
        if (!legal(last[i], to)) ck_abort_msg("seed %u: record %zu of %s: %d -> %d", seed_now, r, id, last[i], to);
        if (!dead) {
            if (m.producer_id == pid[i]) ck_assert_int_ge(m.producer_epoch, ep[i]);
            pid[i] = m.producer_id;
            ep[i] = m.producer_epoch;
            bk_txn_meta_free(&m);
        }
        last[i] = to;
        free(id);
    }
}

static void check_replay(void) {
    tctx_t *r = malloc(sizeof *r);
    t_replay(T, T->nlog, r);
    for (size_t i = 0; i < NIDS; i++) {
        size_t pos;
        bk_txn_entry_t *e = txn_find(&T->c, IDS[i], &pos);
        const bk_txn_meta_t *m = bk_txn_get(&r->c, IDS[i]);
        if (!e || e->pending || e->cur.producer_epoch < 0) continue;
        ck_assert_ptr_nonnull(m);
        ck_assert_int_eq(m->producer_id, e->cur.producer_id);
        ck_assert_int_eq(m->producer_epoch, e->cur.producer_epoch);
        ck_assert_uint_eq(m->nparts, e->cur.nparts);
        if (e->cur.state != BK_TXN_PREPARE_COMMIT && e->cur.state != BK_TXN_PREPARE_ABORT)
            ck_assert_int_eq(m->state, e->cur.state);
        else   /* the rebuilt one may have finished already if it had no partitions */
            ck_assert(m->state == e->cur.state || m->nparts == 0);
    }
    t_stop(r);
    free(r);
}

static void run_seed(unsigned seed) {
    seed_now = seed;
    rng = seed;
    T = malloc(sizeof *T);
    t_start(T, 3, 10000, 20000);
    memset(C, 0, sizeof C);
    for (size_t i = 0; i < NIDS; i++) C[i].seen_pid = -1;
    nheld = 0;
    for (int step = 0; step < STEPS; step++) {
        size_t i = pick(NIDS);
        switch (pick(10)) {
        case 0: op_init(i); break;
        case 1: case 2: op_client(i, 0); break;
        case 3: op_client(i, 1); break;
        case 4: op_client(i, 2); break;
        case 5: op_release(); break;
        case 6: case 7: if (T->nmarkers) t_ack(T, pick(T->nmarkers)); break;
        case 8: T->now += (int64_t)pick(4000); t_tick(T); break;
        default:
            if (pick(8) == 0) {
                release_all();
                check_replay();
            }
            break;
        }
        check_live();
        check_epochs();
    }
    release_all();
    t_ack_all(T);
    check_log();
    check_replay();
    t_stop(T);
    free(T);
}

START_TEST(test_random_coordinator) {
    const char *env = getenv("SKIFF_TXN_SEEDS");
    unsigned n = env ? (unsigned)strtoul(env, NULL, 10) : 20;
    for (unsigned s = 1; s <= n; s++) run_seed(s);
    /* the run reached every persisted state and expiry (else it proves little) */
    static const int want[] = { BK_TXN_EMPTY, BK_TXN_ONGOING, BK_TXN_PREPARE_COMMIT, BK_TXN_PREPARE_ABORT,
                                BK_TXN_COMPLETE_COMMIT, BK_TXN_COMPLETE_ABORT, BK_TXN_STATE_COUNT };
    for (size_t k = 0; n >= 20 && k < sizeof want / sizeof want[0]; k++)
        ck_assert_msg(seen_states[want[k]] > 0, "state %d never written", want[k]);
    fprintf(stderr, "txn_rand: %u seeds, records: empty %zu ongoing %zu prep-commit %zu prep-abort %zu "
            "commit %zu abort %zu tombstone %zu\n", n, seen_states[0], seen_states[1], seen_states[2],
            seen_states[3], seen_states[4], seen_states[5], seen_states[8]);
}
END_TEST

/* Partition side: random transactional producers, markers and HW; the LSO
 * and aborted entries agree with a model that keeps first offsets. */
START_TEST(test_random_partition) {
    for (unsigned seed = 1; seed <= 50; seed++) {
        rng = seed * 7919u;
        st_producer_state_t ps;
        ck_assert_int_eq(st_ps_init(&ps), KP_OK);
        int64_t first[5] = { -1, -1, -1, -1, -1 };
        int32_t seq[5] = { 0 };
        int64_t leo = 0, hw = 0;
        for (int step = 0; step < 300; step++) {
            int64_t pid = 100 + (int64_t)pick(5);
            size_t k = (size_t)(pid - 100);
            if (pick(3)) {
                int32_t n = 1 + (int32_t)pick(4);
                ck_assert_int_eq(st_ps_update(&ps, pid, 0, seq[k], seq[k] + n - 1, leo, leo + n - 1, step, true),
                                 KP_OK);
                seq[k] += n;
                if (first[k] < 0) first[k] = leo;
                leo += n;
            } else {
                bool commit = pick(2);
                st_aborted_txn_t ab;
                bool has;
                ck_assert_int_eq(bk_txn_part_apply_marker(&ps, pid, 0, 1, leo, commit, step, &ab, &has), KP_OK);
                ck_assert(has == !commit);
                int64_t was = first[k];
                first[k] = -1;
                int64_t min = -1;
                for (size_t j = 0; j < 5; j++)
                    if (first[j] >= 0 && (min < 0 || first[j] < min)) min = first[j];
                if (has) {
                    ck_assert_int_eq(ab.first_offset, was >= 0 ? was : leo);
                    ck_assert_int_eq(ab.last_offset, leo);
                    ck_assert_int_eq(ab.last_stable_offset, min >= 0 ? min : leo + 1);
                }
                leo++;
            }
            hw += (int64_t)pick((size_t)(leo - hw + 1));
            int64_t min = -1;
            for (size_t j = 0; j < 5; j++)
                if (first[j] >= 0 && (min < 0 || first[j] < min)) min = first[j];
            int64_t lso = bk_txn_part_lso(&ps, hw);
            ck_assert_int_le(lso, hw);
            ck_assert_int_eq(lso, min >= 0 && min < hw ? min : hw);
        }
        st_ps_free(&ps);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("txn_rand");
    TCase *tc = tcase_create("random");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_random_coordinator);
    tcase_add_test(tc, test_random_partition);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
