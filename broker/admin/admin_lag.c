/* broker/admin/admin_lag.c — the "offsets" part of GET /v1/groups/{id}: committed
 * offset, the partition's end and the lag, per committed partition.
 *
 * The end is the partition leader's high watermark (what a consumer can
 * read; what ListOffsets latest answers and Kafka's consumer-groups tool
 * shows as LOG-END-OFFSET). The coordinator seldom leads every partition a
 * group consumes, so for partitions led elsewhere this node sends one
 * ListOffsets (latest, read_uncommitted) per leader over a connection of
 * its own and replies once all have answered, or after 2 s with
 * null ends for those that did not (a down leader must not hang the
 * endpoint). The asking is admin_offsets.c's (admin_int.h), shared with the
 * group offset reset. */
#include "broker/admin/admin_ops.h"

#include <stdlib.h>
#include <string.h>

#include "broker/admin/admin_int.h"
#include "broker/group/group_driver.h"

/* Committed partitions reported per group; beyond it "offsets_truncated". */
#define GROUP_OFFSETS_MAX 4096
#define LATEST_TIMESTAMP (-1)

typedef struct {
    bk_node_t *node;
    bk_http_req_t *req;
    admin_offset_row_t *rows;   /* offset: the partition's end, -1 unknown */
    int64_t *committed;
    size_t nrows, total;
} lag_t;

static void write_offsets(bk_http_json_t *j, const lag_t *l) {
    int64_t sum = 0;
    bk_http_json_key(j, "offsets");
    bk_http_json_arr_begin(j);
    for (size_t i = 0; i < l->nrows; i++) {
        const admin_offset_row_t *r = &l->rows[i];
        int64_t committed = l->committed[i];
        bk_http_json_obj_begin(j);
        bk_http_json_kv_str(j, "topic", r->topic);
        bk_http_json_kv_i64(j, "partition", r->partition);
        bk_http_json_kv_i64(j, "committed_offset", committed);
        if (r->offset >= 0) bk_http_json_kv_i64(j, "log_end_offset", r->offset);
        else bk_http_json_kv_null(j, "log_end_offset");
        if (r->offset >= 0 && committed >= 0) {
            int64_t lag = r->offset > committed ? r->offset - committed : 0;
            bk_http_json_kv_i64(j, "lag", lag);
            sum += lag;
        } else {
            bk_http_json_kv_null(j, "lag");
        }
        bk_http_json_obj_end(j);
    }
    bk_http_json_arr_end(j);
    bk_http_json_kv_i64(j, "total_lag", sum);
    bk_http_json_kv_bool(j, "offsets_truncated", l->total > l->nrows);
}

static void lag_free(lag_t *l) {
    for (size_t i = 0; l->rows && i < l->nrows; i++) free(l->rows[i].topic);
    free(l->rows);
    free(l->committed);
    free(l);
}

/* The leaders answered (or the lookup timed out): reply and free. */
static void ends_known(void *arg, admin_offset_row_t *rows, size_t n) {
    (void)rows; (void)n;
    lag_t *l = arg;
    /* bk_http_stop (node shutdown) already freed the request: drop it. */
    if (l->node->admin) {
        bk_http_json_t *j = bk_http_admin_json(l->req);
        write_offsets(j, l);
        bk_http_json_obj_end(j);
        bk_http_reply_json(l->req, 200);
    }
    lag_free(l);
}

/* Rows from the coordinator's committed offsets; ends known here filled. */
static int fill_rows(lag_t *l, bk_node_t *n, kp_str_t group) {
    static bk_grp_lag_t lags[GROUP_OFFSETS_MAX];   /* loop thread only */
    int16_t err = 0;
    l->total = bk_grp_gd_lags(n->groups, group, lags, GROUP_OFFSETS_MAX, &err);
    l->nrows = l->total < GROUP_OFFSETS_MAX ? l->total : GROUP_OFFSETS_MAX;
    l->rows = calloc(l->nrows ? l->nrows : 1, sizeof *l->rows);
    l->committed = calloc(l->nrows ? l->nrows : 1, sizeof *l->committed);
    if (!l->rows || !l->committed) return -1;
    for (size_t i = 0; i < l->nrows; i++) {
        const bk_grp_offset_t *o = lags[i].committed;
        admin_offset_row_t *r = &l->rows[i];
        r->topic = strndup(o->topic.p, o->topic.len);
        if (!r->topic) return -1;
        r->partition = o->partition;
        r->timestamp = LATEST_TIMESTAMP;
        l->committed[i] = o->offset;
        r->offset = lags[i].log_end_offset;
        const bk_meta_topic_t *t = bk_meta_image_topic_by_name(&n->img, r->topic);
        r->leader = t && o->partition >= 0 && o->partition < t->nparts ? t->parts[o->partition].leader : -1;
    }
    return 0;
}

void bk_admin_group_offsets(bk_http_req_t *req, bk_node_t *n, kp_str_t group) {
    lag_t *l = calloc(1, sizeof *l);
    if (!l || fill_rows(l, n, group) != 0) {
        if (l) lag_free(l);
        bk_http_reply_error(req, 500, "out of memory");
        return;
    }
    l->node = n;
    l->req = req;
    /* the ends of partitions led elsewhere: the leaders' ListOffsets latest */
    if (admin_offsets_lookup(n, l->rows, l->nrows, ends_known, l) != 0) {
        lag_free(l);
        bk_http_reply_error(req, 500, "out of memory");
    }
}
