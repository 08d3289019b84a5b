/* broker/node_dynconf.h — committed Config records -> this node's running
 * config, on every node (not only the one that handled the AlterConfigs).
 * Loop thread only. */
#ifndef SKIFF_BK_NODE_DYNCONF_H
#define SKIFF_BK_NODE_DYNCONF_H

struct bk_node;

/* Makes this node's running config equal to the image's Config records:
 * the TOPIC records are resolved into n->topic_cfgs
 * (bk_node_topic_configs_sync: once per change, a bad value warned once),
 * and the dynamic layers of n->cfg (cluster default, resource "", and this
 * broker, resource "<id>") follow the BROKER records: set where the image
 * has a value, removed where it has none. A value the running config
 * refuses is logged and skipped (the controller validated it; this build
 * may not know the key). */
void bk_broker_dynconf_sync(struct bk_node *n);

#endif
