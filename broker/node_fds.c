/* broker/node_fds.c — see node_fds.h. */
#include "broker/node_fds.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "broker/config/config_keys.h"
#include "broker/meta/controller.h"

static uint64_t as_count(rlim_t v) { return v == RLIM_INFINITY ? BK_BROKER_FDS_UNLIMITED : (uint64_t)v; }

uint64_t bk_broker_fds_raise(int32_t node_id) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        fprintf(stderr, "skiff: node %d: cannot read the open-file limit (%s); assuming 1024\n", node_id,
                strerror(errno));
        return 1024;
    }
    if (rl.rlim_cur != rl.rlim_max) {
        struct rlimit up = { rl.rlim_max, rl.rlim_max };
        if (setrlimit(RLIMIT_NOFILE, &up) == 0) {
            fprintf(stderr, "skiff: node %d: open-file limit raised from %llu to the hard limit %llu\n", node_id,
                    (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
            rl.rlim_cur = rl.rlim_max;
        } else {
            fprintf(stderr, "skiff: node %d: cannot raise the open-file limit %llu to %llu (%s); keeping it\n",
                    node_id, (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, strerror(errno));
        }
    }
    return as_count(rl.rlim_cur);
}

int32_t bk_broker_fds_replica_limit(const bk_cfg_t *cfg, uint64_t nofile) {
    int64_t v = bk_cfg_int(cfg, BK_CFG_MAX_REPLICAS_PER_NODE);
    if (v >= 0) return (int32_t)v;
    if (nofile == BK_BROKER_FDS_UNLIMITED) return -1;
    return bk_meta_ctrl_replicas_for_fds(nofile);
}
