/* ctl_cluster.c — `skiffctl cluster info|quorum` and `skiffctl broker list`.
 *
 * Both use the Kafka API (DescribeCluster, falling back to Metadata;
 * DescribeQuorum). When the brokers do not answer DescribeQuorum, `cluster
 * quorum` prints the admin port's GET /v1/quorum body as it is (JSON).
 */
#include <stdlib.h>
#include <string.h>

#include "clients/cl_admin.h"
#include "clients/cl_ctl.h"
#include "clients/cl_http.h"
#include "clients/cl_out.h"
#include "protocol/kp_errors.h"

typedef struct broker_row {
    int32_t id;
    char host[CL_HOST_BYTES];
    int32_t port;
    char rack[128];
    bool has_rack;
} broker_row_t;

typedef struct cluster_view {
    char cluster_id[128];
    int32_t controller_id;
    broker_row_t *brokers;
    int nbrokers;
} cluster_view_t;

static int load_view(cl_client_t *c, cluster_view_t *v, cl_err_t *e) {
    memset(v, 0, sizeof *v);
    kp_arena_t a;
    kp_arena_init(&a, (size_t)64 << 20);
    const kp_describe_cluster_response_t *dc = NULL;
    int rc = cl_admin_describe_cluster(c, &a, &dc, e);
    if (rc == CL_OK) {
        cl_strz(dc->cluster_id, v->cluster_id, sizeof v->cluster_id);
        v->controller_id = dc->controller_id;
        v->brokers = calloc((size_t)dc->brokers.count + 1, sizeof *v->brokers);
        for (int32_t i = 0; v->brokers && i < dc->brokers.count; i++) {
            broker_row_t *b = &v->brokers[v->nbrokers++];
            b->id = dc->brokers.items[i].broker_id;
            cl_strz(dc->brokers.items[i].host, b->host, sizeof b->host);
            b->port = dc->brokers.items[i].port;
            b->has_rack = !kp_slice_is_null(dc->brokers.items[i].rack);
            cl_strz(dc->brokers.items[i].rack, b->rack, sizeof b->rack);
        }
    } else if ((rc == CL_E_KAFKA && e->kafka_code == KP_ERROR_UNSUPPORTED_VERSION) || rc == CL_E_NETWORK) {
        /* no DescribeCluster (or the broker dropped it): Metadata has the same facts */
        rc = cl_client_metadata(c, NULL, 0, e);
        if (rc == CL_OK) {
            cl_strz(c->md->cluster_id, v->cluster_id, sizeof v->cluster_id);
            v->controller_id = c->md->controller_id;
            v->brokers = calloc((size_t)c->md->brokers.count + 1, sizeof *v->brokers);
            for (int32_t i = 0; v->brokers && i < c->md->brokers.count; i++) {
                const kp_metadata_response_metadata_response_broker_t *mb = &c->md->brokers.items[i];
                broker_row_t *b = &v->brokers[v->nbrokers++];
                b->id = mb->node_id;
                cl_strz(mb->host, b->host, sizeof b->host);
                b->port = mb->port;
                b->has_rack = !kp_slice_is_null(mb->rack);
                cl_strz(mb->rack, b->rack, sizeof b->rack);
            }
        }
    }
    kp_arena_free(&a);
    if (rc == CL_OK && !v->brokers) rc = cl_err_set(e, CL_E_NOMEM, "out of memory");
    return rc;
}

static void print_brokers_json(cl_json_t *j, const cluster_view_t *v) {
    cl_json_arr(j);
    for (int i = 0; i < v->nbrokers; i++) {
        const broker_row_t *b = &v->brokers[i];
        cl_json_obj(j);
        cl_json_key(j, "id"); cl_json_int(j, b->id);
        cl_json_key(j, "host"); cl_json_str(j, b->host);
        cl_json_key(j, "port"); cl_json_int(j, b->port);
        cl_json_key(j, "rack"); cl_json_str(j, b->has_rack ? b->rack : NULL);
        cl_json_key(j, "controller"); cl_json_bool(j, b->id == v->controller_id);
        cl_json_obj_end(j);
    }
    cl_json_arr_end(j);
}

static void print_brokers_table(FILE *f, const cluster_view_t *v) {
    static const char *hdr[] = { "id", "host", "port", "rack", "controller" };
    cl_table_t t;
    cl_table_init(&t, 5, hdr);
    for (int i = 0; i < v->nbrokers; i++) {
        const broker_row_t *b = &v->brokers[i];
        char id[16], port[16];
        snprintf(id, sizeof id, "%d", b->id);
        snprintf(port, sizeof port, "%d", b->port);
        const char *row[] = { id, b->host, port, b->has_rack ? b->rack : "-", b->id == v->controller_id ? "yes" : "" };
        cl_table_add(&t, row);
    }
    cl_table_print(&t, f);
    cl_table_free(&t);
}

static int cluster_info(cl_ctl_t *ctx, cl_client_t *c) {
    cluster_view_t v;
    cl_err_t e;
    cl_err_clear(&e);
    if (load_view(c, &v, &e) != CL_OK) { free(v.brokers); return cl_ctl_fail(ctx, &e); }
    if (ctx->json) {
        cl_json_t j;
        cl_json_init(&j, ctx->out);
        cl_json_obj(&j);
        cl_json_key(&j, "cluster_id"); cl_json_str(&j, v.cluster_id);
        cl_json_key(&j, "controller_id"); cl_json_int(&j, v.controller_id);
        cl_json_key(&j, "brokers"); print_brokers_json(&j, &v);
        cl_json_obj_end(&j);
        cl_json_end(&j);
    } else {
        fprintf(ctx->out, "cluster id:  %s\ncontroller:  %d\nbrokers:     %d\n\n", v.cluster_id, v.controller_id, v.nbrokers);
        print_brokers_table(ctx->out, &v);
    }
    free(v.brokers);
    return CL_EXIT_OK;
}

static void replica_json(cl_json_t *j, const kp_describe_quorum_response_replica_state_t *r, int64_t hw) {
    cl_json_obj(j);
    cl_json_key(j, "id"); cl_json_int(j, r->replica_id);
    cl_json_key(j, "log_end_offset"); cl_json_int(j, r->log_end_offset);
    cl_json_key(j, "lag"); cl_json_int(j, hw > r->log_end_offset ? hw - r->log_end_offset : 0);
    cl_json_key(j, "last_fetch_timestamp"); cl_json_int(j, r->last_fetch_timestamp);
    cl_json_key(j, "last_caught_up_timestamp"); cl_json_int(j, r->last_caught_up_timestamp);
    cl_json_obj_end(j);
}

static void replica_rows(cl_table_t *t, const char *role, const kp_describe_quorum_response_replica_state_t *r,
                         int32_t n, int32_t leader, int64_t hw) {
    for (int32_t i = 0; i < n; i++) {
        char id[16], leo[24], lag[24];
        snprintf(id, sizeof id, "%d", r[i].replica_id);
        snprintf(leo, sizeof leo, "%lld", (long long)r[i].log_end_offset);
        snprintf(lag, sizeof lag, "%lld", (long long)(hw > r[i].log_end_offset ? hw - r[i].log_end_offset : 0));
        const char *row[] = { id, r[i].replica_id == leader ? "leader" : role, leo, lag };
        cl_table_add(t, row);
    }
}

static int quorum_from_admin(cl_ctl_t *ctx, const cl_err_t *why) {
    int status = 0;
    char *body = NULL;
    size_t len = 0;
    cl_err_t e;
    cl_err_clear(&e);
    if (cl_http_get_sec(ctx->admin, "/v1/quorum", ctx->timeout_ms, ctx->have_sec ? &ctx->sec : NULL, &status, &body,
                        &len, &e) != CL_OK) {
        fprintf(ctx->err, "skiffctl: DescribeQuorum failed (%s); admin port: %s\n", why->msg, e.msg);
        return cl_exit_code(e.status);
    }
    if (status != 200) {
        fprintf(ctx->err, "skiffctl: GET %s%s/v1/quorum: HTTP %d%s\n", strstr(ctx->admin, "://") ? "" : "http://",
                ctx->admin, status, status == 401 ? " (admin.username / admin.password in --command-config)" : "");
        free(body);
        return CL_EXIT_FAIL;
    }
    fwrite(body, 1, len, ctx->out);
    if (len == 0 || body[len - 1] != '\n') fputc('\n', ctx->out);
    free(body);
    return CL_EXIT_OK;
}

static int cluster_quorum(cl_ctl_t *ctx, cl_client_t *c) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)16 << 20);
    const kp_describe_quorum_response_t *q = NULL;
    cl_err_t e;
    cl_err_clear(&e);
    int rc = cl_admin_describe_quorum(c, &a, &q, &e);
    if (rc != CL_OK) {
        kp_arena_free(&a);
        if (rc == CL_E_KAFKA && e.kafka_code == KP_ERROR_UNSUPPORTED_VERSION) return quorum_from_admin(ctx, &e);
        return cl_ctl_fail(ctx, &e);
    }
    const kp_describe_quorum_response_partition_data_t *p = &q->topics.items[0].partitions.items[0];
    if (ctx->json) {
        cl_json_t j;
        cl_json_init(&j, ctx->out);
        cl_json_obj(&j);
        cl_json_key(&j, "leader_id"); cl_json_int(&j, p->leader_id);
        cl_json_key(&j, "leader_epoch"); cl_json_int(&j, p->leader_epoch);
        cl_json_key(&j, "high_watermark"); cl_json_int(&j, p->high_watermark);
        cl_json_key(&j, "voters");
        cl_json_arr(&j);
        for (int32_t i = 0; i < p->current_voters.count; i++) replica_json(&j, &p->current_voters.items[i], p->high_watermark);
        cl_json_arr_end(&j);
        cl_json_key(&j, "observers");
        cl_json_arr(&j);
        for (int32_t i = 0; i < p->observers.count; i++) replica_json(&j, &p->observers.items[i], p->high_watermark);
        cl_json_arr_end(&j);
        cl_json_obj_end(&j);
        cl_json_end(&j);
    } else {
        fprintf(ctx->out, "leader:          %d\nepoch:           %d\nhigh watermark:  %lld\n\n", p->leader_id,
                p->leader_epoch, (long long)p->high_watermark);
        static const char *hdr[] = { "id", "role", "log_end_offset", "lag" };
        cl_table_t t;
        cl_table_init(&t, 4, hdr);
        replica_rows(&t, "voter", p->current_voters.items, p->current_voters.count, p->leader_id, p->high_watermark);
        replica_rows(&t, "observer", p->observers.items, p->observers.count, p->leader_id, p->high_watermark);
        cl_table_print(&t, ctx->out);
        cl_table_free(&t);
    }
    kp_arena_free(&a);
    return CL_EXIT_OK;
}

static const cl_opt_t cluster_opts[] = { CL_CTL_GLOBAL_OPTS };

int cl_ctl_cluster(cl_ctl_t *ctx, int argc, char **argv) {
    cl_args_t a;
    int rc = cl_ctl_parse(ctx, argc, argv, cluster_opts, CL_CTL_GLOBAL_NOPTS, "skiffctl cluster info|quorum [options]", &a);
    if (rc == -1) return CL_EXIT_OK;
    if (rc != CL_OK) return CL_EXIT_USAGE;
    if (a.npos != 1 || (strcmp(a.pos[0], "info") && strcmp(a.pos[0], "quorum")))
        return cl_ctl_usage(ctx, "cluster needs one of: info, quorum");
    cl_client_t c;
    int ex = cl_ctl_connect(ctx, &c);
    if (ex == CL_EXIT_OK) ex = !strcmp(a.pos[0], "info") ? cluster_info(ctx, &c) : cluster_quorum(ctx, &c);
    cl_client_close(&c);
    return ex;
}

int cl_ctl_broker(cl_ctl_t *ctx, int argc, char **argv) {
    cl_args_t a;
    int rc = cl_ctl_parse(ctx, argc, argv, cluster_opts, CL_CTL_GLOBAL_NOPTS, "skiffctl broker list [options]", &a);
    if (rc == -1) return CL_EXIT_OK;
    if (rc != CL_OK) return CL_EXIT_USAGE;
    if (a.npos != 1 || strcmp(a.pos[0], "list")) return cl_ctl_usage(ctx, "broker needs: list");
    cl_client_t c;
    int ex = cl_ctl_connect(ctx, &c);
    if (ex == CL_EXIT_OK) {
        cluster_view_t v;
        cl_err_t e;
        cl_err_clear(&e);
        if (load_view(&c, &v, &e) != CL_OK) {
            ex = cl_ctl_fail(ctx, &e);
        } else if (ctx->json) {
            cl_json_t j;
            cl_json_init(&j, ctx->out);
            print_brokers_json(&j, &v);
            cl_json_end(&j);
        } else {
            print_brokers_table(ctx->out, &v);
        }
        free(v.brokers);
    }
    cl_client_close(&c);
    return ex;
}
