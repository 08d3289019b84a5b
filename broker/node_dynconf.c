/* broker/node_dynconf.c — see node_dynconf.h. */
#include "broker/node_dynconf.h"

#include <stdio.h>
#include <string.h>

#include "broker/config/config_keys.h"
#include "broker/node.h"
#include "broker/node_tls.h"
#include "storage/st_status.h"

static const char *find(const bk_meta_img_config_t *c, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(c[i].name, name) == 0) return c[i].value;
    return NULL;
}

/* One level of committed broker configs, applied to every key AlterConfigs
 * may change (a key without a record goes back to its static value). */
typedef struct {
    bk_node_t *n;
    const bk_meta_img_config_t *c;
    size_t cnt;
    bool cluster_default;
} sync_level_t;

/* A listener.name.* value set dynamically that the image no longer has. */
static void drop_listener_key(const char *name, void *arg) {
    sync_level_t *l = arg;
    char why[256];
    if (find(l->c, l->cnt, name) == NULL &&
        bk_cfg_set_dynamic(l->n->cfg, name, NULL, false, false, why, sizeof why) != 0)
        st_logf(ST_LOG_WARN, "node %d: broker config %s not removed: %s", l->n->id, name, why);
}

static void sync_key(const char *name, void *arg) {
    sync_level_t *l = arg;
    char why[256];
    const char *v = find(l->c, l->cnt, name);
    if (bk_cfg_set_dynamic(l->n->cfg, name, v, l->cluster_default, false, why, sizeof why) != 0)
        st_logf(ST_LOG_WARN, "node %d: committed broker config %s not applied: %s", l->n->id, name, why);
}

void bk_broker_dynconf_sync(bk_node_t *n) {
    /* topic overrides first: the open logs are re-configured from them next */
    if (bk_node_topic_configs_sync(n) != KP_OK)
        st_logf(ST_LOG_ERROR, "node %d: out of memory resolving topic configs; retried at the next lookup", n->id);
    char self[16];
    snprintf(self, sizeof self, "%d", n->id);
    const char *levels[2] = { "", self };
    for (int k = 0; k < 2; k++) {
        sync_level_t l = { n, NULL, 0, k == 0 };
        l.c = bk_meta_image_configs(&n->img, BK_META_RESOURCE_BROKER, levels[k], &l.cnt);
        bk_cfg_for_each_dynamic(sync_key, &l);
        if (k == 1) {
            /* this broker's listener.name.<l>.ssl.* files (a new TLS context) */
            bk_cfg_for_each_dynamic_listener(n->cfg, drop_listener_key, &l);
            for (size_t i = 0; i < l.cnt; i++)
                if (strncmp(l.c[i].name, "listener.name.", 14) == 0) sync_key(l.c[i].name, &l);
        }
    }
    bk_broker_tls_sync(n);
}
