/* temporary: handlers not written yet close the connection */
#include "broker/dispatch.h"
#define TODO(fn) void fn(bk_req_t *req) { bk_req_close(req, "not implemented yet"); }



TODO(bk_h_init_producer_id)
TODO(bk_h_offset_for_leader_epoch)
TODO(bk_h_delete_records)
TODO(bk_h_describe_configs)
TODO(bk_h_alter_configs)
TODO(bk_h_incremental_alter_configs)
TODO(bk_h_describe_cluster)
TODO(bk_h_describe_log_dirs)
