/* broker/net/pressure.c — is the node short of descriptors, request memory
 * or failing to accept (bk_net_pressure, for /v1/health, /readyz and
 * /metrics)? Descriptors are counted from /proc/self/fd: one readdir pass,
 * O(open fds), only when an operator asks (health check, scrape), never on
 * the request path. */
#include <dirent.h>
#include <string.h>
#include <sys/resource.h>

#include "broker/net/net_int.h"

int bk_net_fd_usage(uint64_t *open_fds, uint64_t *limit) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return BK_NET_ERR_SYS;
    *limit = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return BK_NET_ERR_SYS;
    uint64_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    *open_fds = n > 0 ? n - 1 : 0; /* the directory's own descriptor */
    return BK_NET_OK;
}

static bool recent(int64_t when_ms, int64_t now_ms) {
    return when_ms != 0 && now_ms - when_ms < BK_NET_PRESSURE_WINDOW_MS;
}

void bk_net_pressure(const bk_net_t *net, bk_net_pressure_t *out) {
    memset(out, 0, sizeof *out);
    int64_t now = bk__net_mono_ms();
    if (net) {
        bk_net_stats_t sum;
        bk_net_stats(net, &sum);   /* the loops' counters and the node-wide budget */
        const bk_net_stats_t *st = &sum;
        out->accept_failing = recent(st->accept_fail_last_ms, now);
        out->fds_exhausted = recent(net->accept_emfile_last_ms, now);
        out->request_memory_bytes = st->queued_bytes;
        out->request_memory_budget = net->cfg.queued_bytes_max;
        out->memory_exhausted = st->mem_waiting > 0 ||
                                (net->cfg.queued_bytes_max >= 0 && st->queued_bytes >= (uint64_t)net->cfg.queued_bytes_max);
    }
    if (bk_net_fd_usage(&out->fds_open, &out->fds_limit) == BK_NET_OK) {
        if (out->fds_limit != UINT64_MAX && out->fds_open * 100 >= out->fds_limit * BK_NET_FDS_NEAR_LIMIT_PCT)
            out->fds_exhausted = true;
    } else {
        out->fds_open = out->fds_limit = 0;
    }
}
