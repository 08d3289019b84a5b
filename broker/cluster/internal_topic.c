/* internal_topic.c — see internal_topic.h. */
#include "broker/cluster/internal_topic.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "kp_msgs.h"
#include "broker/cluster/forward.h"
#include "broker/quorum/quorum.h"
#include "protocol/kp_errors.h"
#include "storage/st_status.h"

static int64_t usable_rf(const bk_node_t *n, int64_t wanted) {
    size_t usable = 0;
    for (size_t i = 0; i < n->img.nbrokers; i++)
        if (bk_meta_image_broker_usable(&n->img, n->img.brokers[i].id)) usable++;
    return (size_t)wanted > usable ? (int64_t)usable : wanted;   /* Kafka: min(rf, alive brokers) */
}

/* Off the controller: committing here would fail (only the raft leader
 * appends), so the same creation goes to it as a CreateTopics. */
static bool forward(bk_node_t *n, const char *name, int32_t nparts, int16_t rf, const bk_meta_ctrl_kv_t *kv, size_t nkv,
                    bk_cluster_topics_done_fn done, void *arg) {
    kp_create_topics_request_creatable_topic_config_t cf[BK_CLUSTER_INTERNAL_TOPIC_CONFIGS_MAX];
    for (size_t i = 0; i < nkv; i++) {
        kp_create_topics_request_creatable_topic_config_init(&cf[i]);
        cf[i].name = kp_slice_cstr(kv[i].name);
        cf[i].value = kp_slice_cstr(kv[i].value);
    }
    kp_create_topics_request_creatable_topic_t t;
    kp_create_topics_request_creatable_topic_init(&t);
    t.name = kp_slice_cstr(name);
    t.num_partitions = nparts;
    t.replication_factor = rf;
    t.configs.items = cf;
    t.configs.count = (int32_t)nkv;
    if (!bk_cluster_forward_create_topics(n, &t, 1, done, arg)) return false;
    fprintf(stderr, "skiff: node %d: asking the controller to create %s (%d partitions, replication %d)\n", n->id,
            name, nparts, (int)rf);
    return true;
}

bool bk_cluster_internal_topic_create(bk_node_t *n, const char *name, int32_t nparts, int64_t rf_wanted,
                              const bk_meta_ctrl_kv_t *kv, size_t nkv, bk_cluster_topics_done_fn done, void *arg) {
    assert(nkv <= BK_CLUSTER_INTERNAL_TOPIC_CONFIGS_MAX);
    int64_t rf = usable_rf(n, rf_wanted);
    if (rf < 1) return false;
    if (n->quorum && !bk_quorum_is_leader(n->quorum)) return forward(n, name, nparts, (int16_t)rf, kv, nkv, done, arg);
    bk_meta_ctrl_create_topic_t req = { name, nparts, (int16_t)rf, NULL, 0, kv, nkv };
    bk_meta_ctrl_create_result_t res;
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    bk_meta_ctrl_create_topics(&n->ctrl, bk_node_decision_image(n), &req, 1, false, &recs, &res);
    if (res.error != 0 || recs.err != KP_OK) {
        fprintf(stderr, "skiff: node %d: cannot create %s: %s %s\n", n->id, name, kp_error_name(res.error),
                res.message);
        bk_meta_recs_free(&recs);
        return false;
    }
    fprintf(stderr, "skiff: node %d: creating %s (%d partitions, replication %d)\n", n->id, name, nparts, (int)rf);
    bk_node_commit(n, &recs, done, arg);
    bk_meta_recs_free(&recs);
    return true;
}

int16_t bk_cluster_internal_coordinator(const bk_node_t *n, const bk_meta_partition_t *p, bool ready_here, int32_t *node_id,
                                const char **host, int32_t *port) {
    *node_id = -1;
    *host = "";
    *port = -1;
    if (p->leader == n->id && !ready_here) return KP_ERROR_COORDINATOR_NOT_AVAILABLE;
    const bk_meta_broker_t *b = p->leader >= 0 ? bk_meta_image_broker(&n->img, p->leader) : NULL;
    if (!b || b->fenced || b->nendpoints == 0) return KP_ERROR_COORDINATOR_NOT_AVAILABLE;
    const bk_meta_endpoint_t *ep = &b->endpoints[0];
    for (int32_t k = 0; k < b->nendpoints; k++)
        if (strcmp(b->endpoints[k].listener, "CONTROLLER") != 0) { ep = &b->endpoints[k]; break; }
    *node_id = b->id;
    *host = ep->host;
    *port = ep->port;
    return 0;
}
