/* broker/cluster/topics.c — topic auto-creation (see topics.h): the
 * controller's decision with the broker defaults, committed here, or
 * forwarded to the controller from any other node. */
#include "broker/cluster/topics.h"

#include <stdio.h>
#include <stdlib.h>

#include "broker/cluster/forward.h"
#include "protocol/kp_errors.h"

void bk_cluster_topics_auto_create(bk_node_t *n, const char *const *names, size_t cnt,
                           bk_cluster_topics_done_fn done, void *arg) {
    if (bk_cluster_forward_auto_create(n, names, cnt, done, arg)) return;   /* not the controller */
    bk_meta_ctrl_create_topic_t *req = calloc(cnt, sizeof *req);
    bk_meta_ctrl_create_result_t *res = calloc(cnt, sizeof *res);
    if (!req || !res) {
        free(req);
        free(res);
        done(arg, KP_ERR_NOMEM);
        return;
    }
    for (size_t i = 0; i < cnt; i++) {
        req[i].name = names[i];
        req[i].num_partitions = -1;
        req[i].replication_factor = -1;
    }
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_create_topics(&n->ctrl, bk_node_decision_image(n), req, cnt, false, &recs, res);
    for (size_t i = 0; i < cnt; i++)
        if (res[i].error == 0)
            fprintf(stderr, "skiff: node %d: auto-creating topic %s (%d partitions)\n", n->id, names[i],
                    res[i].num_partitions);
    free(req);
    free(res);
    bk_node_commit(n, &recs, done, arg);
    bk_meta_recs_free(&recs);
}

