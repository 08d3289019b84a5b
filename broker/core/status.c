/* broker/core/status.c — see status.h. */
#include "broker/core/status.h"

const char *bk_node_status_str(int status) {
    if (status >= ST_STATUS_MIN && status <= ST_STATUS_MAX) return st_status_str(status);
    if (status >= RAFT_STATUS_MIN && status <= RAFT_STATUS_MAX) return raft_status_str(status);
    if (status >= BK_NET_STATUS_MIN && status <= BK_NET_STATUS_MAX) return bk_net_err_str(status);
    if (status == BK_QUORUM_NOT_LEADER) return "not the metadata quorum leader";
    return kp_status_str(status);   /* KP_OK, KP_ERR_* and everything unknown */
}
