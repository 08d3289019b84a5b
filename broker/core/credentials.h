/* credentials.h — who may log in, and who is a super user, as the admin
 * port (broker/admin, which may not include broker/api) and the Kafka
 * listeners (broker/api) both need to know.
 *
 * Sources: PLAIN users (`user_NAME="password"` entries of the jaas config of
 * every SASL listener: listener.name.<l>.plain.sasl.jaas.config, then the
 * unprefixed forms) and the SCRAM credentials of the committed image (both
 * mechanisms). `super.users` is Kafka's StandardAuthorizer key,
 * "User:a;User:b". Loop thread only. */
#ifndef SKIFF_BROKER_CORE_CREDENTIALS_H
#define SKIFF_BROKER_CORE_CREDENTIALS_H

#include <stdbool.h>

typedef struct bk_node bk_node_t;

/* True when user/password match a PLAIN user of any SASL listener's jaas
 * config, or a SCRAM credential of the image for either mechanism. The
 * comparison is constant-time in the password's content; a SCRAM check runs
 * PBKDF2 (milliseconds: call it per login, never per request). */
bool bk_node_cred_check(const bk_node_t *node, const char *user, const char *password);

/* True when `principal` ("User:NAME") is listed in super.users. */
bool bk_node_is_super_user(const bk_node_t *node, const char *principal);

#endif
