/* credentials.c — bk_node_cred_check / bk_node_is_super_user (credentials.h).
 * First version (contract): no credential source is wired yet, so every
 * check fails closed (false). The jaas and SCRAM sources follow. */
#include "broker/core/credentials.h"

#include <stddef.h>

#include "broker/core/node.h"

bool bk_node_cred_check(const bk_node_t *node, const char *user, const char *password) {
    (void)node;
    (void)user;
    (void)password;
    return false;
}

bool bk_node_is_super_user(const bk_node_t *node, const char *principal) {
    (void)node;
    (void)principal;
    return false;
}
