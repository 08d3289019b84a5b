/* jaas.h — Kafka's JAAS config value (sasl.jaas.config and its
 * listener.name.<l>.<mechanism>.sasl.jaas.config forms), as Kafka's
 * PlainLoginModule / ScramLoginModule read it:
 *
 *   org.apache.kafka.common.security.plain.PlainLoginModule required
 *       username="admin" password="admin-secret"
 *       user_admin="admin-secret" user_alice="alice-secret";
 *
 * One login module: a class name, a control flag (required, requisite,
 * sufficient, optional), options NAME=VALUE (VALUE quoted with "..." where
 * \" and \\ are escapes, or a bare token), then ';'. `username`/`password`
 * are the node's own client credentials (for its outgoing connections);
 * `user_NAME="PW"` are the PLAIN users a listener accepts. Bounds: the
 * value <= BK_CFG_JAAS_MAX bytes, <= BK_CFG_JAAS_USERS_MAX users; names <=
 * 240 bytes (a principal User:NAME fits 255), passwords <= 1024. */
#ifndef SKIFF_BROKER_CONFIG_JAAS_H
#define SKIFF_BROKER_CONFIG_JAAS_H

#include <stdbool.h>
#include <stddef.h>

#include "protocol/kp_wire.h"

#define BK_CFG_JAAS_MAX 65536
#define BK_CFG_JAAS_USERS_MAX 1024

typedef struct bk_cfg_jaas_user {
    char *name;
    char *password;
} bk_cfg_jaas_user_t;

typedef struct bk_cfg_jaas {
    char *module;                 /* the login module's class name */
    char *username, *password;    /* NULL when absent */
    bk_cfg_jaas_user_t *users;    /* user_NAME entries, in order */
    size_t nusers;
} bk_cfg_jaas_t;

/* Parses `len` bytes of `text`. KP_OK, or KP_ERR_BAD_VALUE / KP_ERR_TOO_LARGE
 * with a reason naming the character position ("at character 57: ...") in
 * why (never holding a password); KP_ERR_NOMEM. *out is filled only on
 * success (free with bk_cfg_jaas_free). A user listed twice is refused. */
KP_MUST_CHECK int bk_cfg_jaas_parse(const char *text, size_t len, bk_cfg_jaas_t *out, char *why,
                                    size_t why_len);
void bk_cfg_jaas_free(bk_cfg_jaas_t *j);
/* The password of PLAIN user `name`, or NULL. */
const char *bk_cfg_jaas_user(const bk_cfg_jaas_t *j, const char *name);

#endif
