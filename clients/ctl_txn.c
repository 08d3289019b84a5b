/* ctl_txn.c — `skiffctl txn list|describe` and `skiffctl producers`.
 *
 * txn list merges the ListTransactions answers of every broker (each
 * transactional id lives on one coordinator), sorted by id. txn describe asks
 * the id's coordinator. producers asks each partition's leader which
 * producers it keeps state for (idempotent and transactional alike).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clients/cl_ctl.h"
#include "clients/cl_out.h"
#include "clients/cl_txn.h"

static const cl_opt_t txn_opts[] = {
    CL_CTL_GLOBAL_OPTS,
    { "--state", "-s", "STATE", true, "list: only transactions in STATE (Ongoing, PrepareCommit, CompleteAbort, ...)" },
    { "--producer-id", NULL, "N", true, "list: only transactions of producer id N" },
};
#define TXN_NOPTS ((int)(sizeof txn_opts / sizeof txn_opts[0]))

static const char *txn_usage =
    "skiffctl txn list [--state S]... [--producer-id N]...\n"
    "       skiffctl txn describe TRANSACTIONAL_ID";

static const cl_opt_t prod_opts[] = {
    CL_CTL_GLOBAL_OPTS,
    { "--partition", "-p", "N", false, "only partition N (default: every partition)" },
};
#define PROD_NOPTS ((int)(sizeof prod_opts / sizeof prod_opts[0]))

static const char *prod_usage = "skiffctl producers TOPIC [--partition N]";

/* "2026-11-30T05:31:00.123Z" for a time in ms since the epoch; "-" below 0. */
static const char *time_str(int64_t ms, char *buf, size_t n) {
    if (ms < 0) return "-";
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    if (!gmtime_r(&s, &tm)) return "-";
    size_t k = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + k, n - k, ".%03dZ", (int)(ms % 1000));
    return buf;
}

/* ---- txn list ---------------------------------------------------------------- */

typedef struct txn_row {
    char *id;
    char state[32];
    int64_t producer_id;
    int32_t node;
} txn_row_t;

typedef struct list_state {
    cl_ctl_t *ctx;
    txn_row_t *rows;
    size_t n, cap;
    bool nomem, warned;
} list_state_t;

static void on_list(void *arg, int32_t node, const kp_list_transactions_response_t *r) {
    list_state_t *s = arg;
    /* every broker reports the same unknown filters: say it once */
    for (int32_t i = 0; !s->warned && i < r->unknown_state_filters.count; i++)
        fprintf(s->ctx->err, "skiffctl: warning: unknown transaction state '%.*s' (matches nothing)\n",
                (int)r->unknown_state_filters.items[i].len, (const char *)r->unknown_state_filters.items[i].p);
    s->warned = s->warned || r->unknown_state_filters.count > 0;
    for (int32_t i = 0; i < r->transaction_states.count && !s->nomem; i++) {
        const kp_list_transactions_response_transaction_state_t *t = &r->transaction_states.items[i];
        if (s->n == s->cap) {
            size_t nc = s->cap ? s->cap * 2 : 64;
            txn_row_t *nr = nc <= CL_TABLE_ROWS_MAX ? realloc(s->rows, nc * sizeof *nr) : NULL;
            if (!nr) { s->nomem = true; break; }
            s->rows = nr;
            s->cap = nc;
        }
        txn_row_t *row = &s->rows[s->n];
        row->id = malloc((size_t)t->transactional_id.len + 1);
        if (!row->id) { s->nomem = true; break; }
        cl_strz(t->transactional_id, row->id, (size_t)t->transactional_id.len + 1);
        cl_strz(t->transaction_state, row->state, sizeof row->state);
        row->producer_id = t->producer_id;
        row->node = node;
        s->n++;
    }
}

static int cmp_row(const void *a, const void *b) {
    return strcmp(((const txn_row_t *)a)->id, ((const txn_row_t *)b)->id);
}

static void print_list(cl_ctl_t *ctx, const list_state_t *s) {
    if (ctx->json) {
        cl_json_t j;
        cl_json_init(&j, ctx->out);
        cl_json_arr(&j);
        for (size_t i = 0; i < s->n; i++) {
            cl_json_obj(&j);
            cl_json_key(&j, "transactional_id"); cl_json_str(&j, s->rows[i].id);
            cl_json_key(&j, "producer_id"); cl_json_int(&j, s->rows[i].producer_id);
            cl_json_key(&j, "state"); cl_json_str(&j, s->rows[i].state);
            cl_json_key(&j, "coordinator"); cl_json_int(&j, s->rows[i].node);
            cl_json_obj_end(&j);
        }
        cl_json_arr_end(&j);
        cl_json_end(&j);
        return;
    }
    static const char *hdr[] = { "transactional_id", "producer_id", "state", "coordinator" };
    cl_table_t t;
    cl_table_init(&t, 4, hdr);
    for (size_t i = 0; i < s->n; i++) {
        char pid[24], node[16];
        snprintf(pid, sizeof pid, "%lld", (long long)s->rows[i].producer_id);
        snprintf(node, sizeof node, "%d", s->rows[i].node);
        const char *row[] = { s->rows[i].id, pid, s->rows[i].state, node };
        cl_table_add(&t, row);
    }
    cl_table_print(&t, ctx->out);
    cl_table_free(&t);
}

static int do_list(cl_ctl_t *ctx, cl_client_t *c, const cl_txn_filter_t *f) {
    list_state_t s = { .ctx = ctx };
    cl_err_t e;
    cl_err_clear(&e);
    int rc = cl_admin_list_transactions(c, f, on_list, &s, &e);
    if (rc == CL_OK && s.nomem) rc = cl_err_set(&e, CL_E_NOMEM, "out of memory listing transactions");
    if (rc == CL_OK) {
        if (s.n > 1) qsort(s.rows, s.n, sizeof *s.rows, cmp_row);  /* rows is NULL when empty */
        print_list(ctx, &s);
    }
    for (size_t i = 0; i < s.n; i++) free(s.rows[i].id);
    free(s.rows);
    return rc == CL_OK ? CL_EXIT_OK : cl_ctl_fail(ctx, &e);
}

/* ---- txn describe -------------------------------------------------------------- */

static void describe_json(cl_ctl_t *ctx, const char *id, int32_t coord,
                          const kp_describe_transactions_response_transaction_state_t *t) {
    char state[64];
    cl_strz(t->transaction_state, state, sizeof state);
    cl_json_t j;
    cl_json_init(&j, ctx->out);
    cl_json_obj(&j);
    cl_json_key(&j, "transactional_id"); cl_json_str(&j, id);
    cl_json_key(&j, "coordinator"); cl_json_int(&j, coord);
    cl_json_key(&j, "state"); cl_json_str(&j, state);
    cl_json_key(&j, "producer_id"); cl_json_int(&j, t->producer_id);
    cl_json_key(&j, "producer_epoch"); cl_json_int(&j, t->producer_epoch);
    cl_json_key(&j, "transaction_timeout_ms"); cl_json_int(&j, t->transaction_timeout_ms);
    cl_json_key(&j, "transaction_start_time_ms"); cl_json_int(&j, t->transaction_start_time_ms);
    cl_json_key(&j, "partitions"); cl_json_arr(&j);
    for (int32_t i = 0; i < t->topics.count; i++)
        for (int32_t k = 0; k < t->topics.items[i].partitions.count; k++) {
            cl_json_obj(&j);
            cl_json_key(&j, "topic");
            cl_json_strn(&j, (const char *)t->topics.items[i].topic.p, (size_t)t->topics.items[i].topic.len);
            cl_json_key(&j, "partition"); cl_json_int(&j, t->topics.items[i].partitions.items[k]);
            cl_json_obj_end(&j);
        }
    cl_json_arr_end(&j);
    cl_json_obj_end(&j);
    cl_json_end(&j);
}

static void describe_table(cl_ctl_t *ctx, const char *id, int32_t coord,
                           const kp_describe_transactions_response_transaction_state_t *t) {
    char state[64], when[40];
    cl_strz(t->transaction_state, state, sizeof state);
    fprintf(ctx->out, "transactional id: %s  coordinator: %d\n", id, coord);
    fprintf(ctx->out, "state: %s  producer id: %lld  epoch: %d  timeout ms: %d  started: %s\n", state,
            (long long)t->producer_id, t->producer_epoch, t->transaction_timeout_ms,
            time_str(t->transaction_start_time_ms, when, sizeof when));
    static const char *hdr[] = { "topic", "partition" };
    cl_table_t tb;
    cl_table_init(&tb, 2, hdr);
    int rows = 0;
    for (int32_t i = 0; i < t->topics.count; i++)
        for (int32_t k = 0; k < t->topics.items[i].partitions.count; k++, rows++) {
            char topic[256], ps[16];
            cl_strz(t->topics.items[i].topic, topic, sizeof topic);
            snprintf(ps, sizeof ps, "%d", t->topics.items[i].partitions.items[k]);
            const char *row[] = { topic, ps };
            cl_table_add(&tb, row);
        }
    if (rows > 0) { fputc('\n', ctx->out); cl_table_print(&tb, ctx->out); }
    else fprintf(ctx->out, "partitions: none\n");
    cl_table_free(&tb);
}

static int do_describe(cl_ctl_t *ctx, cl_client_t *c, const char *id) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)64 << 20);
    const kp_describe_transactions_response_transaction_state_t *t = NULL;
    int32_t coord = -1;
    cl_err_t e;
    cl_err_clear(&e);
    int rc = cl_admin_describe_transaction(c, id, &a, &t, &coord, &e);
    if (rc == CL_OK) (ctx->json ? describe_json : describe_table)(ctx, id, coord, t);
    kp_arena_free(&a);
    return rc == CL_OK ? CL_EXIT_OK : cl_ctl_fail(ctx, &e);
}

int cl_ctl_txn(cl_ctl_t *ctx, int argc, char **argv) {
    cl_args_t a;
    int rc = cl_ctl_parse(ctx, argc, argv, txn_opts, TXN_NOPTS, txn_usage, &a);
    if (rc == -1) return CL_EXIT_OK;
    if (rc != CL_OK) return CL_EXIT_USAGE;
    if (a.npos < 1) return cl_ctl_usage(ctx, "txn needs a subcommand (list, describe)");
    const char *sub = a.pos[0];
    bool list = !strcmp(sub, "list");
    if (!list && strcmp(sub, "describe")) return cl_ctl_usage(ctx, "unknown txn subcommand '%s'", sub);
    if (list ? a.npos != 1 : a.npos != 2)
        return cl_ctl_usage(ctx, list ? "txn list takes no name" : "txn describe needs one transactional id");
    const char *states[CL_TXN_FILTERS_MAX];
    int64_t pids[CL_TXN_FILTERS_MAX];
    cl_txn_filter_t f = { states, cl_args_count(&a, "--state"), pids, cl_args_count(&a, "--producer-id") };
    if (!list && (f.nstates || f.nproducer_ids)) return cl_ctl_usage(ctx, "--state/--producer-id go with txn list");
    if (f.nstates > CL_TXN_FILTERS_MAX || f.nproducer_ids > CL_TXN_FILTERS_MAX)
        return cl_ctl_usage(ctx, "at most %d --state and %d --producer-id", CL_TXN_FILTERS_MAX, CL_TXN_FILTERS_MAX);
    for (int i = 0; i < f.nstates; i++) states[i] = cl_args_at(&a, "--state", i);
    cl_err_t e;
    cl_err_clear(&e);
    for (int i = 0; i < f.nproducer_ids; i++)
        if (cl_parse_i64(cl_args_at(&a, "--producer-id", i), 0, INT64_MAX, &pids[i], "--producer-id", &e) != CL_OK)
            return cl_ctl_usage(ctx, "%s", e.msg);
    cl_client_t c;
    int ex = cl_ctl_connect(ctx, &c);
    if (ex == CL_EXIT_OK) ex = list ? do_list(ctx, &c, &f) : do_describe(ctx, &c, a.pos[1]);
    cl_client_close(&c);
    return ex;
}

/* ---- producers ----------------------------------------------------------------- */

typedef struct prod_state {
    cl_ctl_t *ctx;
    const char *topic;
    cl_table_t t;
    cl_json_t j;
    int64_t count;
} prod_state_t;

static void on_producers(void *arg, int32_t partition, int32_t leader,
                         const kp_describe_producers_response_partition_response_t *p) {
    prod_state_t *s = arg;
    for (int32_t i = 0; i < p->active_producers.count; i++, s->count++) {
        const kp_describe_producers_response_producer_state_t *q = &p->active_producers.items[i];
        if (s->ctx->json) {
            cl_json_obj(&s->j);
            cl_json_key(&s->j, "topic"); cl_json_str(&s->j, s->topic);
            cl_json_key(&s->j, "partition"); cl_json_int(&s->j, partition);
            cl_json_key(&s->j, "leader"); cl_json_int(&s->j, leader);
            cl_json_key(&s->j, "producer_id"); cl_json_int(&s->j, q->producer_id);
            cl_json_key(&s->j, "producer_epoch"); cl_json_int(&s->j, q->producer_epoch);
            cl_json_key(&s->j, "last_sequence"); cl_json_int(&s->j, q->last_sequence);
            cl_json_key(&s->j, "last_timestamp"); cl_json_int(&s->j, q->last_timestamp);
            cl_json_key(&s->j, "coordinator_epoch"); cl_json_int(&s->j, q->coordinator_epoch);
            cl_json_key(&s->j, "current_txn_start_offset"); cl_json_int(&s->j, q->current_txn_start_offset);
            cl_json_obj_end(&s->j);
            continue;
        }
        char ps[16], ls[16], pid[24], ep[16], seq[16], ts[40], ce[16], so[24];
        snprintf(ps, sizeof ps, "%d", partition);
        snprintf(ls, sizeof ls, "%d", leader);
        snprintf(pid, sizeof pid, "%lld", (long long)q->producer_id);
        snprintf(ep, sizeof ep, "%d", q->producer_epoch);
        snprintf(seq, sizeof seq, "%d", q->last_sequence);
        snprintf(ce, sizeof ce, "%d", q->coordinator_epoch);
        snprintf(so, sizeof so, "%lld", (long long)q->current_txn_start_offset);
        const char *row[] = { ps, ls, pid, ep, seq, time_str(q->last_timestamp, ts, sizeof ts), ce,
                              q->current_txn_start_offset >= 0 ? so : "-" };
        cl_table_add(&s->t, row);
    }
}

int cl_ctl_producers(cl_ctl_t *ctx, int argc, char **argv) {
    cl_args_t a;
    int rc = cl_ctl_parse(ctx, argc, argv, prod_opts, PROD_NOPTS, prod_usage, &a);
    if (rc == -1) return CL_EXIT_OK;
    if (rc != CL_OK) return CL_EXIT_USAGE;
    if (a.npos != 1) return cl_ctl_usage(ctx, "producers needs one topic name");
    cl_err_t e;
    cl_err_clear(&e);
    int64_t part = -1;
    const char *ps = cl_args_get(&a, "--partition");
    if (ps && cl_parse_i64(ps, 0, INT32_MAX, &part, "--partition", &e) != CL_OK) return cl_ctl_usage(ctx, "%s", e.msg);
    cl_client_t c;
    int ex = cl_ctl_connect(ctx, &c);
    if (ex != CL_EXIT_OK) { cl_client_close(&c); return ex; }
    prod_state_t s = { .ctx = ctx, .topic = a.pos[0] };
    static const char *hdr[] = { "partition", "leader", "producer_id", "epoch", "last_sequence", "last_timestamp",
                                 "coordinator_epoch", "txn_start_offset" };
    if (ctx->json) { cl_json_init(&s.j, ctx->out); cl_json_arr(&s.j); }
    else cl_table_init(&s.t, 8, hdr);
    rc = cl_admin_describe_producers(&c, a.pos[0], (int32_t)part, on_producers, &s, &e);
    if (ctx->json) {
        cl_json_arr_end(&s.j);
        if (rc == CL_OK) cl_json_end(&s.j); else fputc('\n', ctx->out);
    } else {
        if (rc == CL_OK && s.count > 0) cl_table_print(&s.t, ctx->out);
        else if (rc == CL_OK) fprintf(ctx->out, "no active producers on %s\n", a.pos[0]);
        cl_table_free(&s.t);
    }
    cl_client_close(&c);
    return rc == CL_OK ? CL_EXIT_OK : cl_ctl_fail(ctx, &e);
}
