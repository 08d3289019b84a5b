/* broker/api/groups_int.h — private to broker/api/: what the classic group
 * handlers (h_groups.c) and the KIP-848 ones (h_cgroup.c) both need to turn
 * a request and the group core's strings into answer fields. */
#ifndef SKIFF_BK_API_GROUPS_INT_H
#define SKIFF_BK_API_GROUPS_INT_H

#include <string.h>

#include "broker/api/dispatch.h"
#include "broker/group/group_driver.h"

/* "/host" as Kafka reports a member's client host, from the peer
 * "host:port" (cut at the last ':'). Allocated in the request's arena (lives as long as req); ""
 * when that allocation fails, which only loses the description. */
static inline kp_str_t api_client_host(bk_api_req_t *req) {
    const char *colon = strrchr(req->peer, ':');
    size_t n = colon ? (size_t)(colon - req->peer) : strlen(req->peer);
    char *s = bk_api_req_alloc(req, n + 2, 1);
    if (!s) return bk_api_str("");
    s[0] = '/';
    memcpy(s + 1, req->peer, n);
    return bk_api_str(s);
}

/* A view of a group-core-owned string (NULL stays null); valid while the
 * core keeps the string, i.e. during the completion that received it. */
static inline kp_str_t api_grp_str(bk_grp_str_t s) {
    kp_str_t r = { (const uint8_t *)s.p, s.len };
    return r;
}

#endif
