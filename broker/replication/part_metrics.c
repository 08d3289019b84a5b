/* broker/replication/part_metrics.c — see part_metrics.h. */
#include "broker/replication/part_metrics.h"

#include "broker/metrics/metrics_catalogue.h"

void bk_repl_part_metrics_in(bk_mx_t *m, bk_repl_part_t *p, uint64_t bytes, uint64_t records) {
    if (!m) return;
    if (!p->mx_bytes_in) {
        const char *v[] = { p->topic };
        p->mx_bytes_in = bk_mx_series(m, BK_MX_BYTES_IN_TOTAL, v);
        p->mx_msgs_in = bk_mx_series(m, BK_MX_MESSAGES_IN_TOTAL, v);
    }
    bk_mx_inc(p->mx_bytes_in, bytes);
    bk_mx_inc(p->mx_msgs_in, records);
}

void bk_repl_part_metrics_out(bk_mx_t *m, bk_repl_part_t *p, uint64_t bytes) {
    if (!m) return;
    if (!p->mx_bytes_out) p->mx_bytes_out = bk_mx_series(m, BK_MX_BYTES_OUT_TOTAL, (const char *[]){ p->topic });
    bk_mx_inc(p->mx_bytes_out, bytes);
}
