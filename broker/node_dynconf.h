/* broker/node_dynconf.h — committed Config records -> this node's running
 * config, on every node (not only the one that handled the AlterConfigs).
 * Loop thread only. */
#ifndef SKIFF_BK_NODE_DYNCONF_H
#define SKIFF_BK_NODE_DYNCONF_H

#include <stdint.h>

#include "broker/meta/image.h"

struct bk_node;

/* A hash of every config record of the image (type, resource, name, value):
 * equal sets give equal values, so a caller can tell "configs changed" in
 * O(configs) without a version counter in the image. */
uint64_t bk_broker_dynconf_fingerprint(const bk_meta_image_t *img);

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
