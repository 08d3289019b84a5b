/* cl_scram.h — SCRAM credentials of users (KIP-554): add or replace,
 * delete, list — what `skiffctl user` calls.
 *
 * Upsertion sends AlterUserScramCredentials v0 with a random salt
 * (CL_SCRAM_SALT_BYTES from the OS) and the salted password computed here
 * with PBKDF2 (protocol/kp_sasl.h): the password itself never leaves the
 * process. Writes go to the controller, lists to any broker; retriable
 * errors are retried under the client's policy. A per-user error is
 * "NAME: user 'u': <the broker's message>".
 */
#ifndef SKIFF_CL_SCRAM_H
#define SKIFF_CL_SCRAM_H

#include <stdint.h>

#include "clients/cl_client.h"
#include "clients/cl_props.h"

#define CL_VER_DESCRIBE_USER_SCRAM 0
#define CL_VER_ALTER_USER_SCRAM 0
#define CL_SCRAM_SALT_BYTES 32
#define CL_SCRAM_ITERATIONS_DEFAULT 4096   /* Kafka's default */
#define CL_SCRAM_ITERATIONS_MIN 4096       /* Kafka's ScramMechanism bounds */
#define CL_SCRAM_ITERATIONS_MAX 16384

/* Kafka's mechanism numbers in these APIs: 1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512. */
int8_t cl_scram_type(cl_sasl_mech_t mech);
/* The mechanism for a type number; CL_SASL_NONE when unknown. */
cl_sasl_mech_t cl_scram_mech(int8_t type);

/* Adds or replaces user's credential for mech (SCRAM-SHA-256/512). */
CL_MUST_CHECK int cl_scram_upsert(cl_client_t *c, const char *user, cl_sasl_mech_t mech, const char *password,
                                  int32_t iterations, cl_err_t *e);
/* Deletes user's credential for mech (RESOURCE_NOT_FOUND when it has none). */
CL_MUST_CHECK int cl_scram_delete(cl_client_t *c, const char *user, cl_sasl_mech_t mech, cl_err_t *e);
/* DescribeUserScramCredentials with null users: every user with a
 * credential. *out points into a; a top-level error fills e. */
CL_MUST_CHECK int cl_scram_describe_all(cl_client_t *c, kp_arena_t *a,
                                        const kp_describe_user_scram_credentials_response_t **out, cl_err_t *e);

#endif
