/* cl_scram.c — SCRAM user credentials through the Kafka admin APIs (see
 * cl_scram.h). */
#include "clients/cl_scram.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <string.h>

#include "clients/cl_admin.h"
#include "protocol/kp_sasl.h"

int8_t cl_scram_type(cl_sasl_mech_t mech) {
    return mech == CL_SASL_SCRAM_SHA_256 ? 1 : mech == CL_SASL_SCRAM_SHA_512 ? 2 : 0;
}

cl_sasl_mech_t cl_scram_mech(int8_t type) {
    return type == 1 ? CL_SASL_SCRAM_SHA_256 : type == 2 ? CL_SASL_SCRAM_SHA_512 : CL_SASL_NONE;
}

/* The first per-user error of an AlterUserScramCredentials answer. */
static int check_alter(const void *resp, void *ctx, cl_err_t *e) {
    const kp_alter_user_scram_credentials_response_t *r = resp;
    const char *user = ctx;
    for (int32_t i = 0; i < r->results.count; i++) {
        const kp_alter_user_scram_credentials_response_alter_user_scram_credentials_result_t *u = &r->results.items[i];
        if (u->error_code != 0)
            return cl_err_kafka(e, u->error_code, "user '%.*s'%s%.*s", (int)u->user.len, (const char *)u->user.p,
                                u->error_message.len ? ": " : "", (int)u->error_message.len,
                                (const char *)u->error_message.p);
    }
    if (r->results.count == 0)
        return cl_err_set(e, CL_E_PROTO, "AlterUserScramCredentials answer names no user (asked for '%s')", user);
    return CL_OK;
}

static int alter(cl_client_t *c, const char *user, kp_alter_user_scram_credentials_request_t *req, cl_err_t *e) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)1 << 20);
    void *resp = NULL;
    int rc = cl_admin_call(c, CL_TARGET_CONTROLLER, NULL, 0, KP_API_ALTER_USER_SCRAM_CREDENTIALS,
                           CL_VER_ALTER_USER_SCRAM, req, &resp, &a, check_alter, (void *)user, e);
    kp_arena_free(&a);
    return rc;
}

static bool is_scram(cl_sasl_mech_t m) { return m == CL_SASL_SCRAM_SHA_256 || m == CL_SASL_SCRAM_SHA_512; }

int cl_scram_upsert(cl_client_t *c, const char *user, cl_sasl_mech_t mech, const char *password, int32_t iterations,
                    cl_err_t *e) {
    if (!is_scram(mech)) return cl_err_set(e, CL_E_USAGE, "mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512");
    if (!user || !*user) return cl_err_set(e, CL_E_USAGE, "empty user name");
    if (!password || !*password) return cl_err_set(e, CL_E_USAGE, "empty password");
    if (iterations < CL_SCRAM_ITERATIONS_MIN || iterations > CL_SCRAM_ITERATIONS_MAX)
        return cl_err_set(e, CL_E_USAGE, "iterations %d outside [%d, %d]", iterations, CL_SCRAM_ITERATIONS_MIN,
                          CL_SCRAM_ITERATIONS_MAX);
    kp_sasl_mech_t km = mech == CL_SASL_SCRAM_SHA_512 ? KP_SASL_MECH_SCRAM_SHA_512 : KP_SASL_MECH_SCRAM_SHA_256;
    uint8_t salt[CL_SCRAM_SALT_BYTES], salted[KP_SCRAM_HASH_MAX];
    if (RAND_bytes(salt, (int)sizeof salt) != 1) return cl_err_set(e, CL_E_IO, "no random bytes for the salt");
    if (kp_scram_salted_password(km, password, strlen(password), salt, sizeof salt, iterations, salted) != KP_OK)
        return cl_err_set(e, CL_E_NOMEM, "cannot compute the salted password");
    kp_alter_user_scram_credentials_request_t req;
    kp_alter_user_scram_credentials_request_init(&req);
    kp_alter_user_scram_credentials_request_scram_credential_upsertion_t up;
    kp_alter_user_scram_credentials_request_scram_credential_upsertion_init(&up);
    up.name = cl_str(user);
    up.mechanism = cl_scram_type(mech);
    up.iterations = iterations;
    up.salt.p = salt;
    up.salt.len = sizeof salt;
    up.salted_password.p = salted;
    up.salted_password.len = kp_scram_hash_len(km);
    req.upsertions.items = &up;
    req.upsertions.count = 1;
    int rc = alter(c, user, &req, e);
    OPENSSL_cleanse(salted, sizeof salted);
    return rc;
}

int cl_scram_delete(cl_client_t *c, const char *user, cl_sasl_mech_t mech, cl_err_t *e) {
    if (!is_scram(mech)) return cl_err_set(e, CL_E_USAGE, "mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512");
    if (!user || !*user) return cl_err_set(e, CL_E_USAGE, "empty user name");
    kp_alter_user_scram_credentials_request_t req;
    kp_alter_user_scram_credentials_request_init(&req);
    kp_alter_user_scram_credentials_request_scram_credential_deletion_t del;
    kp_alter_user_scram_credentials_request_scram_credential_deletion_init(&del);
    del.name = cl_str(user);
    del.mechanism = cl_scram_type(mech);
    req.deletions.items = &del;
    req.deletions.count = 1;
    return alter(c, user, &req, e);
}

static int check_describe(const void *resp, void *ctx, cl_err_t *e) {
    const kp_describe_user_scram_credentials_response_t *r = resp;
    (void)ctx;
    if (r->error_code != 0)
        return cl_err_kafka(e, r->error_code, "describe SCRAM credentials%s%.*s", r->error_message.len ? ": " : "",
                            (int)r->error_message.len, (const char *)r->error_message.p);
    return CL_OK;
}

int cl_scram_describe_all(cl_client_t *c, kp_arena_t *a, const kp_describe_user_scram_credentials_response_t **out,
                          cl_err_t *e) {
    kp_describe_user_scram_credentials_request_t req;
    kp_describe_user_scram_credentials_request_init(&req);
    req.users.count = -1; /* null: every user */
    req.users.items = NULL;
    void *resp = NULL;
    int rc = cl_admin_call(c, CL_TARGET_ANY, NULL, 0, KP_API_DESCRIBE_USER_SCRAM_CREDENTIALS,
                           CL_VER_DESCRIBE_USER_SCRAM, &req, &resp, a, check_describe, NULL, e);
    if (rc == CL_OK) *out = resp;
    return rc;
}
