/* credentials.h — who may log in, and who is a super user, as the admin
 * port (broker/admin, which may not include broker/api) and the Kafka
 * listeners (broker/api) both need to know.
 *
 * Sources: PLAIN users (`user_NAME="password"` entries of the jaas config of
 * every SASL listener: listener.name.<l>.plain.sasl.jaas.config, else
 * listener.name.<l>.sasl.jaas.config / sasl.jaas.config) and the SCRAM
 * credentials of the committed image (both mechanisms). `super.users` is
 * Kafka's StandardAuthorizer key, "User:a;User:b". Built once at start
 * (bk_node_sasl_init) from the config; loop thread only. */
#ifndef SKIFF_BROKER_CORE_CREDENTIALS_H
#define SKIFF_BROKER_CORE_CREDENTIALS_H

#include <stdbool.h>
#include <stddef.h>

#include "broker/config/config.h"
#include "broker/net/net.h"
#include "protocol/kp_sasl.h"

typedef struct bk_node bk_node_t;

#define BK_NODE_SUPER_USERS_MAX 256

/* True when user/password match a PLAIN user of any SASL listener's jaas
 * config, or a SCRAM credential of the image for either mechanism. The
 * comparison is constant-time in the password's content; a SCRAM check runs
 * PBKDF2 (milliseconds: call it per login, never per request). */
bool bk_node_cred_check(const bk_node_t *node, const char *user, const char *password);

/* True when `principal` ("User:NAME") is listed in super.users. */
bool bk_node_is_super_user(const bk_node_t *node, const char *principal);

/* Reads the SASL settings of every SASL listener (enabled mechanisms, PLAIN
 * users) and super.users into node->sasl. -1 with a message naming the key
 * in err for a config the node must refuse: a SASL listener whose
 * sasl.enabled.mechanisms holds no mechanism skiff serves (Kafka's default
 * GSSAPI included), an unknown mechanism name, PLAIN enabled without a jaas
 * config holding users, a jaas value that does not parse. GSSAPI and
 * OAUTHBEARER next to a served mechanism are dropped with a logged line
 * (lines only when `log`: main.c checks the config once quietly first). */
int bk_node_sasl_init(bk_node_t *node, bool log, char *err, size_t err_len);
void bk_node_sasl_free(bk_node_t *node);

/* The mechanisms listener `listener` serves, as a bit set of
 * (1u << kp_sasl_mech_t); 0 for a listener that is not SASL. */
unsigned bk_node_sasl_mechs(const bk_node_t *node, const char *listener);
/* The enabled mechanisms' names in Kafka's order of the config, for
 * UNSUPPORTED_SASL_MECHANISM answers: *n names into out (at most 3). */
size_t bk_node_sasl_mech_names(const bk_node_t *node, const char *listener, const char **out);
/* PLAIN: true when listener's jaas config has user_NAME = password
 * (constant-time in the password; Kafka's PlainServerCallbackHandler). */
bool bk_node_sasl_plain_check(const bk_node_t *node, const char *listener, const char *user,
                              const char *password);
/* The SCRAM credential of `user` for `mech` from the image; for a user
 * without one, a fake credential derived from the name with a per-process
 * secret (same salt on every attempt, iterations 4096), so that the
 * exchange looks the same and fails at the proof. *known says which. */
void bk_node_scram_lookup(const bk_node_t *node, const char *user, kp_sasl_mech_t mech,
                          kp_scram_cred_t *out, bool *known);

/* Node-to-node RPCs (raft, registration, heartbeats, AlterPartition,
 * replica fetches, WriteTxnMarkers) from `conn`: true on a PLAINTEXT
 * listener (no principal: a secure deployment must not expose one), when
 * super.users is empty (logged at start: nothing to check against), or
 * when the connection's principal is a super user. */
bool bk_node_peer_allowed(const bk_node_t *node, const bk_net_conn_t *conn);

/* ---- bootstrap credentials (scram_bootstrap.c) ---------------------------- */
#define BK_NODE_SCRAM_BOOT_MAX 64

typedef struct bk_node_scram_boot {
    char name[KP_SASL_NAME_MAX + 1];
    kp_scram_cred_t cred;
} bk_node_scram_boot_t;

typedef struct bk_node_scram_boot_state {
    bk_node_scram_boot_t v[BK_NODE_SCRAM_BOOT_MAX];
    size_t n;
    bool inflight, done;
} bk_node_scram_boot_state_t;

/* Kafka's --add-scram argument, 'SCRAM-SHA-256=[name=N,password=P]' (also
 * iterations=, salt= (base64), saltedpassword= (base64) instead of
 * password=): the derived credential in *out, the name in name. -1 with a
 * message otherwise. */
int bk_node_scram_parse_spec(const char *spec, char *name, size_t name_cap, kp_scram_cred_t *out,
                             char *err, size_t len);
/* `skiff format`: writes the credentials of specs[0..n) to
 * <metadata dir>/bootstrap.scram (atomically, mode 0600). */
int bk_node_scram_format(const bk_cfg_t *cfg, const char *const *specs, size_t n, char *err, size_t len);
/* Reads that file (absent: *n = 0). -1 with FILE:LINE in err when it does
 * not parse. */
int bk_node_scram_boot_read(const bk_cfg_t *cfg, bk_node_scram_boot_t *out, size_t *n, char *err, size_t len);
/* The node's loaded bootstrap state (NULL before bk_node_sasl_init). */
bk_node_scram_boot_state_t *bk_node_scram_boot_state(bk_node_t *node);
/* From the 1 s tick: on the active controller, while the image has no
 * ScramBootstrapDone, commits the file's credentials and the marker. */
void bk_node_scram_bootstrap_tick(bk_node_t *node);

#endif
