/* broker/api/api_metrics.c — see api_metrics.h. */
#include "broker/api/api_metrics.h"

#include <assert.h>
#include <stdlib.h>

#include "broker/api/dispatch.h"
#include "broker/api/resp_errors.h"
#include "broker/metrics/metrics_catalogue.h"
#include "protocol/kp_codec.h"
#include "protocol/kp_errors.h"

/* Api keys are < 128 for every API we serve (asserted at start). */
#define API_KEYS_MAX 128

struct bk_node_mx {
    bk_mx_series_t *requests[API_KEYS_MAX];
    bk_mx_series_t *latency[API_KEYS_MAX];
};

int bk_api_metrics_start(bk_node_t *n) {
    n->mx = calloc(1, sizeof *n->mx);
    if (!n->mx) return KP_ERR_NOMEM;
    size_t cnt;
    const bk_api_entry_t *t = bk_api_dispatch_table(&cnt);
    for (size_t i = 0; i < cnt; i++) {
        int16_t k = t[i].api_key;
        assert(k >= 0 && k < API_KEYS_MAX);
        const kp_api_info_t *info = kp_api_info(k);
        const char *v[] = { info ? info->name : "unknown" };
        n->mx->requests[k] = bk_mx_series(n->metrics, BK_MX_REQUESTS_TOTAL, v);
        n->mx->latency[k] = bk_mx_series(n->metrics, BK_MX_REQUEST_LATENCY_SECONDS, v);
    }
    return KP_OK;
}

void bk_api_metrics_free(bk_node_t *n) {
    free(n->mx);
    n->mx = NULL;
}

void bk_api_metrics_request(bk_node_t *n, int16_t api_key, uint64_t start_ns) {
    if (!n->mx || api_key < 0 || api_key >= API_KEYS_MAX || !n->mx->requests[api_key]) return;
    bk_mx_inc(n->mx->requests[api_key], 1);
    bk_mx_observe(n->mx->latency[api_key], (double)(bk_net_mono_ns() - start_ns) / 1e9);
}

typedef struct { bk_node_t *n; const char *api; } err_ctx_t;

static void count_error(void *ctx, int16_t code) {
    err_ctx_t *c = ctx;
    const char *v[] = { c->api, kp_error_name(code) };
    bk_mx_inc(bk_mx_series(c->n->metrics, BK_MX_REQUEST_ERRORS_TOTAL, v), 1);
}

void bk_api_metrics_response(bk_node_t *n, int16_t api_key, int16_t version, const void *resp) {
    if (!n->metrics) return;
    const kp_api_info_t *info = kp_api_info(api_key);
    err_ctx_t c = { n, info ? info->name : "unknown" };
    (void)bk_api_resp_errors(api_key, version, resp, count_error, &c);
}
