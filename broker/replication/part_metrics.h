/* broker/replication/part_metrics.h — produced and fetched bytes and
 * records per topic. The series are created on first use and cached in the
 * partition (p->mx_*), so counting is one add. */
#ifndef SKIFF_BK_PART_METRICS_H
#define SKIFF_BK_PART_METRICS_H

#include <stdint.h>

#include "broker/metrics/metrics.h"
#include "broker/replication/parts.h"

/* No-op with m NULL (metrics not started). */
void bk_repl_part_metrics_in(bk_mx_t *m, bk_repl_part_t *p, uint64_t bytes, uint64_t records);
void bk_repl_part_metrics_out(bk_mx_t *m, bk_repl_part_t *p, uint64_t bytes);

#endif
