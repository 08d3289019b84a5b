/* Unit tests for the client side of SASL (clients/cl_sasl.c and
 * cl_sasl_login.c): the state machine against protocol/kp_sasl.h's SERVER
 * primitives (PLAIN, SCRAM-SHA-256/512; wrong password, a server that does
 * not know the credential, a foreign nonce), and the Kafka exchange against
 * an in-process fake broker thread (SaslHandshake v1 + SaslAuthenticate,
 * refusals named with the broker's message, a mechanism the broker lacks,
 * re-authentication when the session lifetime runs out). */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clients/cl_client.h"
#include "clients/cl_conn.h"
#include "clients/cl_http.h"
#include "clients/cl_sasl.h"
#include "clients/cl_scram.h"
#include "kp_msgs.h"
#include "protocol/kp_errors.h"
#include "protocol/kp_header.h"
#include "protocol/kp_sasl.h"

static const uint8_t SALT[] = "0123456789abcdef-salt";

static void make_cred(kp_sasl_mech_t mech, const char *password, kp_scram_cred_t *cred) {
    ck_assert_int_eq(kp_scram_cred_from_password(mech, password, SALT, sizeof SALT - 1, 4096, cred), KP_OK);
}

/* ---- the state machine against kp_sasl's server ---------------------------- */

START_TEST(test_plain_tokens) {
    cl_sasl_t s;
    cl_err_t e;
    ck_assert_int_eq(cl_sasl_init(&s, CL_SASL_PLAIN, "alice", "pw", NULL, &e), CL_OK);
    uint8_t out[256];
    size_t n = 0;
    bool done = true;
    ck_assert_int_eq(cl_sasl_step(&s, NULL, 0, out, sizeof out, &n, &done, &e), CL_OK);
    ck_assert(!done);
    ck_assert_uint_eq(n, 9);
    ck_assert_int_eq(memcmp(out, "\0alice\0pw", 9), 0);
    kp_sasl_plain_t p;
    ck_assert_int_eq(kp_sasl_plain_parse(out, n, &p), KP_OK);
    ck_assert_uint_eq(p.user.len, 5);
    /* the server's empty answer ends it */
    ck_assert_int_eq(cl_sasl_step(&s, (const uint8_t *)"", 0, out, sizeof out, &n, &done, &e), CL_OK);
    ck_assert(done);
    ck_assert_int_eq(s.state, CL_SASL_ST_DONE);
    ck_assert_int_eq(cl_sasl_step(&s, NULL, 0, out, sizeof out, &n, &done, &e), CL_E_PROTO);
    cl_sasl_free(&s);
    /* a PLAIN answer with bytes is not PLAIN */
    ck_assert_int_eq(cl_sasl_init(&s, CL_SASL_PLAIN, "alice", "pw", NULL, &e), CL_OK);
    ck_assert_int_eq(cl_sasl_step(&s, NULL, 0, out, sizeof out, &n, &done, &e), CL_OK);
    ck_assert_int_eq(cl_sasl_step(&s, (const uint8_t *)"x", 1, out, sizeof out, &n, &done, &e), CL_E_PROTO);
    cl_sasl_free(&s);
    /* what init refuses */
    ck_assert_int_eq(cl_sasl_init(&s, CL_SASL_PLAIN, "", "pw", NULL, &e), CL_E_USAGE);
    ck_assert_int_eq(cl_sasl_init(&s, CL_SASL_NONE, "a", "pw", NULL, &e), CL_E_USAGE);
    /* a token that does not fit the buffer */
    ck_assert_int_eq(cl_sasl_init(&s, CL_SASL_PLAIN, "alice", "pw", NULL, &e), CL_OK);
    ck_assert_int_eq(cl_sasl_step(&s, NULL, 0, out, 8, &n, &done, &e), CL_E_USAGE);
    cl_sasl_free(&s);
}
END_TEST

/* Runs a SCRAM exchange between cl_sasl (client, password `client_pw`) and
 * kp_sasl's server (credential from `server_pw`). `tamper` flips a byte of
 * the server-final message. Returns the client's status at its end, and
 * *server_rc the server's status for the client-final. */
static int scram_run(cl_sasl_mech_t m, const char *client_pw, const char *server_pw, bool tamper,
                     bool foreign_nonce, int *server_rc) {
    kp_sasl_mech_t km = m == CL_SASL_SCRAM_SHA_512 ? KP_SASL_MECH_SCRAM_SHA_512 : KP_SASL_MECH_SCRAM_SHA_256;
    kp_scram_cred_t cred;
    make_cred(km, server_pw, &cred);
    uint8_t nonce[CL_SASL_NONCE_BYTES];
    for (size_t i = 0; i < sizeof nonce; i++) nonce[i] = (uint8_t)(i * 7 + 1);
    cl_sasl_t s;
    cl_err_t e;
    ck_assert_int_eq(cl_sasl_init(&s, m, "us,er=1", client_pw, nonce, &e), CL_OK);
    uint8_t c1[1024], s1[1024], c2[1024], s2[1024];
    size_t c1n = 0, s1n = 0, c2n = 0, s2n = 0;
    bool done = false;
    ck_assert_int_eq(cl_sasl_step(&s, NULL, 0, c1, sizeof c1, &c1n, &done, &e), CL_OK);
    ck_assert(!done);
    kp_scram_server_t srv;
    kp_scram_server_init(&srv, km);
    ck_assert_int_eq(kp_scram_server_client_first(&srv, c1, c1n), KP_OK);
    ck_assert_str_eq(srv.user, "us,er=1"); /* escaped on the wire, the same name at the server */
    ck_assert_int_eq(kp_scram_server_first(&srv, &cred, "SERVERNONCE1234", 15, s1, sizeof s1, &s1n), KP_OK);
    if (foreign_nonce) s1[2] ^= 0x01; /* r= no longer starts with our nonce */
    int rc = cl_sasl_step(&s, s1, s1n, c2, sizeof c2, &c2n, &done, &e);
    if (rc != CL_OK) {
        *server_rc = KP_OK;
        cl_sasl_free(&s);
        return rc;
    }
    ck_assert(!done);
    *server_rc = kp_scram_server_final(&srv, &cred, c2, c2n, s2, sizeof s2, &s2n);
    if (*server_rc != KP_OK) {
        cl_sasl_free(&s);
        return CL_OK;
    }
    if (tamper) s2[s2n - 2] ^= 0x02;
    rc = cl_sasl_step(&s, s2, s2n, c1, sizeof c1, &c1n, &done, &e);
    if (rc == CL_OK) ck_assert(done);
    cl_sasl_free(&s);
    return rc;
}

START_TEST(test_scram_against_server) {
    cl_sasl_mech_t mechs[] = { CL_SASL_SCRAM_SHA_256, CL_SASL_SCRAM_SHA_512 };
    for (int i = 0; i < 2; i++) {
        int srv = -99;
        /* the right password: the server verifies the proof, the client the signature */
        ck_assert_int_eq(scram_run(mechs[i], "s3cret", "s3cret", false, false, &srv), CL_OK);
        ck_assert_int_eq(srv, KP_OK);
        /* a wrong password: the server's proof check fails */
        ck_assert_int_eq(scram_run(mechs[i], "wrong", "s3cret", false, false, &srv), CL_OK);
        ck_assert_int_eq(srv, KP_ERR_CORRUPT);
        /* a server-final that does not verify: the client refuses it */
        ck_assert_int_eq(scram_run(mechs[i], "s3cret", "s3cret", true, false, &srv), CL_E_PROTO);
        /* a server nonce that does not extend ours */
        ck_assert_int_eq(scram_run(mechs[i], "s3cret", "s3cret", false, true, &srv), CL_E_PROTO);
    }
}
END_TEST

START_TEST(test_scram_server_iterations_bounded) {
    /* a server asking for absurd iterations must not make us spin: refused */
    cl_sasl_t s;
    cl_err_t e;
    ck_assert_int_eq(cl_sasl_init(&s, CL_SASL_SCRAM_SHA_256, "u", "p", NULL, &e), CL_OK);
    uint8_t out[1024];
    size_t n = 0;
    bool done = false;
    ck_assert_int_eq(cl_sasl_step(&s, NULL, 0, out, sizeof out, &n, &done, &e), CL_OK);
    /* r= must start with our nonce: take it from client-first ("n,,n=u,r=<nonce>") */
    char first[1200];
    int k = snprintf(first, sizeof first, "%.*s", (int)n, (const char *)out);
    ck_assert_int_gt(k, 0);
    const char *r = strstr(first, "r=");
    ck_assert_ptr_nonnull(r);
    char sf[1400];
    snprintf(sf, sizeof sf, "%sXYZ,s=c2FsdA==,i=100000000", r);
    ck_assert_int_eq(cl_sasl_step(&s, (const uint8_t *)sf, strlen(sf), out, sizeof out, &n, &done, &e), CL_E_PROTO);
    ck_assert_int_eq(s.state, CL_SASL_ST_FAILED);
    cl_sasl_free(&s);
}
END_TEST

/* ---- the exchange against a fake broker ------------------------------------ */

typedef struct fake {
    int lfd, port;
    pthread_t th;
    volatile int stop;
    const char *enabled[3];          /* mechanisms the fake offers */
    int nenabled;
    const char *user, *password;
    int64_t session_lifetime_ms;
    int handshakes, authenticates, metadata_calls; /* observations (read after stop) */
    /* SCRAM users kept from AlterUserScramCredentials (alice's password
     * stays the fallback for PLAIN and when no entry matches) */
    struct { char name[64]; int8_t type; int32_t iterations; uint8_t salt[64]; size_t salt_len;
             uint8_t salted[64]; size_t salted_len; bool used; } creds[8];
    int alters;
    /* the state of the connection being served (fake_main swaps it) */
    kp_sasl_mech_t mech;
    kp_scram_server_t scram;
    kp_scram_cred_t cred;
    bool authed;
} fake_t;

static int send_all(int fd, const uint8_t *p, size_t n) {
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int recv_all(int fd, uint8_t *p, size_t n) {
    while (n) {
        ssize_t k = recv(fd, p, n, 0);
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int respond(int fd, int16_t api, int16_t ver, int32_t corr, const void *body) {
    kp_wr_t w;
    kp_wr_init_count(&w);
    ck_assert_int_eq(kp_response_encode(&w, api, ver, corr, body, NULL), KP_OK);
    size_t n = w.pos;
    uint8_t *buf = malloc(n);
    kp_wr_init(&w, buf, n);
    ck_assert_int_eq(kp_response_encode(&w, api, ver, corr, body, NULL), KP_OK);
    int rc = send_all(fd, buf, n);
    free(buf);
    return rc;
}

static int answer_versions(int fd, int16_t ver, int32_t corr, kp_arena_t *a) {
    static const int16_t keys[][2] = { { KP_API_API_VERSIONS, 3 }, { KP_API_METADATA, 12 },
                                       { KP_API_SASL_HANDSHAKE, 1 }, { KP_API_SASL_AUTHENTICATE, 2 },
                                       { KP_API_DESCRIBE_USER_SCRAM_CREDENTIALS, 0 },
                                       { KP_API_ALTER_USER_SCRAM_CREDENTIALS, 0 } };
    kp_api_versions_response_t r;
    kp_api_versions_response_init(&r);
    r.api_keys.count = 6;
    r.api_keys.items = kp_arena_alloc(a, sizeof *r.api_keys.items * 6);
    for (int i = 0; i < 6; i++) {
        kp_api_versions_response_api_version_init(&r.api_keys.items[i]);
        r.api_keys.items[i].api_key = keys[i][0];
        r.api_keys.items[i].max_version = keys[i][1];
    }
    return respond(fd, KP_API_API_VERSIONS, ver, corr, &r);
}

static int answer_handshake(fake_t *f, int fd, int16_t ver, int32_t corr, const kp_sasl_handshake_request_t *q,
                            kp_arena_t *a) {
    f->handshakes++;
    kp_sasl_handshake_response_t r;
    kp_sasl_handshake_response_init(&r);
    r.mechanisms.count = f->nenabled;
    r.mechanisms.items = kp_arena_alloc(a, sizeof *r.mechanisms.items * (size_t)(f->nenabled + 1));
    for (int i = 0; i < f->nenabled; i++) r.mechanisms.items[i] = cl_str(f->enabled[i]);
    r.error_code = KP_ERROR_UNSUPPORTED_SASL_MECHANISM;
    for (int i = 0; i < f->nenabled; i++)
        if (cl_str_eq(q->mechanism, f->enabled[i])) r.error_code = 0;
    if (r.error_code == 0) {
        ck_assert_int_eq(kp_sasl_mech_parse(q->mechanism, &f->mech), KP_OK);
        if (kp_sasl_mech_is_scram(f->mech)) {
            kp_scram_server_init(&f->scram, f->mech);
            make_cred(f->mech, f->password, &f->cred);
        }
    }
    return respond(fd, KP_API_SASL_HANDSHAKE, ver, corr, &r);
}

static int answer_authenticate(fake_t *f, int fd, int16_t ver, int32_t corr,
                               const kp_sasl_authenticate_request_t *q) {
    f->authenticates++;
    kp_sasl_authenticate_response_t r;
    kp_sasl_authenticate_response_init(&r);
    static uint8_t out[2048];
    size_t n = 0;
    bool ok = false, last = true;
    if (f->mech == KP_SASL_MECH_PLAIN) {
        kp_sasl_plain_t p;
        ok = kp_sasl_plain_parse(q->auth_bytes.p, q->auth_bytes.len, &p) == KP_OK &&
             kp_sasl_ct_equal(p.user.p, p.user.len, f->user, strlen(f->user)) &&
             kp_sasl_ct_equal(p.password.p, p.password.len, f->password, strlen(f->password));
    } else if (f->scram.step <= 1) {
        ok = kp_scram_server_client_first(&f->scram, q->auth_bytes.p, q->auth_bytes.len) == KP_OK;
        bool known = ok && strcmp(f->scram.user, f->user) == 0;
        for (int i = 0; ok && !known && i < 8; i++) {
            if (!f->creds[i].used || strcmp(f->creds[i].name, f->scram.user) != 0 ||
                f->creds[i].type != kp_sasl_mech_scram_type(f->mech))
                continue;
            ck_assert_int_eq(kp_scram_cred_from_salted(f->mech, f->creds[i].salted, f->creds[i].salted_len,
                                                       f->creds[i].salt, f->creds[i].salt_len,
                                                       f->creds[i].iterations, &f->cred),
                             KP_OK);
            known = true;
        }
        ok = known && kp_scram_server_first(&f->scram, &f->cred, "fakeServerNonce", 15, out, sizeof out, &n) == KP_OK;
        last = false;
    } else {
        ok = kp_scram_server_final(&f->scram, &f->cred, q->auth_bytes.p, q->auth_bytes.len, out, sizeof out, &n) ==
             KP_OK;
    }
    if (!ok) {
        r.error_code = KP_ERROR_SASL_AUTHENTICATION_FAILED;
        r.error_message = cl_str("Authentication failed: Invalid username or password");
    } else {
        r.auth_bytes.p = out;
        r.auth_bytes.len = n;
        if (last) {
            f->authed = true;
            r.session_lifetime_ms = f->session_lifetime_ms;
        }
    }
    return respond(fd, KP_API_SASL_AUTHENTICATE, ver, corr, &r);
}

static int answer_alter_scram(fake_t *f, int fd, int16_t ver, int32_t corr,
                              const kp_alter_user_scram_credentials_request_t *q, kp_arena_t *a) {
    f->alters++;
    kp_alter_user_scram_credentials_response_t r;
    kp_alter_user_scram_credentials_response_init(&r);
    int32_t n = q->upsertions.count + q->deletions.count;
    r.results.items = kp_arena_alloc(a, sizeof *r.results.items * (size_t)(n + 1));
    r.results.count = n;
    for (int32_t i = 0; i < q->upsertions.count; i++) {
        const kp_alter_user_scram_credentials_request_scram_credential_upsertion_t *u = &q->upsertions.items[i];
        kp_alter_user_scram_credentials_response_alter_user_scram_credentials_result_init(&r.results.items[i]);
        r.results.items[i].user = u->name;
        int slot = -1;
        for (int k = 0; k < 8; k++)
            if (f->creds[k].used && cl_str_eq(u->name, f->creds[k].name) && f->creds[k].type == u->mechanism) slot = k;
        for (int k = 0; slot < 0 && k < 8; k++)
            if (!f->creds[k].used) slot = k;
        ck_assert_int_ge(slot, 0);
        ck_assert_uint_le(u->salt.len, 64);
        ck_assert_uint_le(u->salted_password.len, 64);
        cl_strz(u->name, f->creds[slot].name, sizeof f->creds[slot].name);
        f->creds[slot].type = u->mechanism;
        f->creds[slot].iterations = u->iterations;
        memcpy(f->creds[slot].salt, u->salt.p, u->salt.len);
        f->creds[slot].salt_len = u->salt.len;
        memcpy(f->creds[slot].salted, u->salted_password.p, u->salted_password.len);
        f->creds[slot].salted_len = u->salted_password.len;
        f->creds[slot].used = true;
    }
    for (int32_t i = 0; i < q->deletions.count; i++) {
        const kp_alter_user_scram_credentials_request_scram_credential_deletion_t *d = &q->deletions.items[i];
        kp_alter_user_scram_credentials_response_alter_user_scram_credentials_result_t *res =
            &r.results.items[q->upsertions.count + i];
        kp_alter_user_scram_credentials_response_alter_user_scram_credentials_result_init(res);
        res->user = d->name;
        res->error_code = KP_ERROR_RESOURCE_NOT_FOUND;
        res->error_message = cl_str("Attempt to delete a user credential that does not exist");
        for (int k = 0; k < 8; k++)
            if (f->creds[k].used && cl_str_eq(d->name, f->creds[k].name) && f->creds[k].type == d->mechanism) {
                f->creds[k].used = false;
                res->error_code = 0;
                res->error_message.p = NULL;
                res->error_message.len = 0;
            }
    }
    return respond(fd, KP_API_ALTER_USER_SCRAM_CREDENTIALS, ver, corr, &r);
}

static int answer_describe_scram(fake_t *f, int fd, int16_t ver, int32_t corr, kp_arena_t *a) {
    kp_describe_user_scram_credentials_response_t r;
    kp_describe_user_scram_credentials_response_init(&r);
    r.results.items = kp_arena_alloc(a, sizeof *r.results.items * 8);
    for (int k = 0; k < 8; k++) {
        if (!f->creds[k].used) continue;
        kp_describe_user_scram_credentials_response_describe_user_scram_credentials_result_t *u =
            &r.results.items[r.results.count++];
        kp_describe_user_scram_credentials_response_describe_user_scram_credentials_result_init(u);
        u->user = cl_str(f->creds[k].name);
        u->credential_infos.items = kp_arena_alloc(a, sizeof *u->credential_infos.items);
        u->credential_infos.count = 1;
        kp_describe_user_scram_credentials_response_credential_info_init(&u->credential_infos.items[0]);
        u->credential_infos.items[0].mechanism = f->creds[k].type;
        u->credential_infos.items[0].iterations = f->creds[k].iterations;
    }
    return respond(fd, KP_API_DESCRIBE_USER_SCRAM_CREDENTIALS, ver, corr, &r);
}

static int serve_one(fake_t *f, int fd) {
    uint8_t szb[4];
    if (recv_all(fd, szb, 4) != 0) return -1;
    uint32_t n = kp_load_be32(szb);
    if (n > (1u << 20)) return -1;
    uint8_t *frame = malloc(n);
    if (recv_all(fd, frame, n) != 0) {
        free(frame);
        return -1;
    }
    kp_arena_t a;
    kp_arena_init(&a, (size_t)4 << 20);
    kp_request_header_t h;
    void *body = NULL;
    int rc = -1;
    ck_assert_int_eq(kp_request_decode(frame, n, &h, &body, &a), KP_OK);
    switch (h.api_key) {
    case KP_API_API_VERSIONS: rc = answer_versions(fd, h.api_version, h.correlation_id, &a); break;
    case KP_API_SASL_HANDSHAKE: rc = answer_handshake(f, fd, h.api_version, h.correlation_id, body, &a); break;
    case KP_API_SASL_AUTHENTICATE: rc = answer_authenticate(f, fd, h.api_version, h.correlation_id, body); break;
    case KP_API_ALTER_USER_SCRAM_CREDENTIALS:
        if (f->authed) rc = answer_alter_scram(f, fd, h.api_version, h.correlation_id, body, &a);
        break;
    case KP_API_DESCRIBE_USER_SCRAM_CREDENTIALS:
        if (f->authed) rc = answer_describe_scram(f, fd, h.api_version, h.correlation_id, &a);
        break;
    case KP_API_METADATA: {
        /* only after authentication, as a SASL listener does */
        if (!f->authed) break;
        f->metadata_calls++;
        kp_metadata_response_t r;
        kp_metadata_response_init(&r);
        r.cluster_id = cl_str("fake");
        rc = respond(fd, h.api_key, h.api_version, h.correlation_id, &r);
        break;
    }
    default: break;
    }
    kp_arena_free(&a);
    free(frame);
    return rc;
}

/* Several connections at once (a client keeps its bootstrap connection
 * while a test opens more); the SASL state is per connection. */
#define FAKE_CONNS 4
typedef struct conn_state {
    kp_sasl_mech_t mech;
    kp_scram_server_t scram;
    kp_scram_cred_t cred;
    bool authed;
} conn_state_t;

static void *fake_main(void *arg) {
    fake_t *f = arg;
    struct pollfd p[FAKE_CONNS + 1];
    conn_state_t st[FAKE_CONNS + 1];
    int n = 0;
    p[0].fd = f->lfd;
    p[0].events = POLLIN;
    while (!f->stop) {
        if (poll(p, (nfds_t)n + 1, 50) <= 0) continue;
        if ((p[0].revents & POLLIN) && n < FAKE_CONNS) {
            int fd = accept(f->lfd, NULL, NULL);
            if (fd >= 0) {
                n++;
                p[n].fd = fd;
                p[n].events = POLLIN;
                p[n].revents = 0;
                memset(&st[n], 0, sizeof st[n]);
            }
        }
        for (int i = 1; i <= n; i++) {
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            /* swap this connection's state in, serve one request, out */
            f->mech = st[i].mech;
            f->scram = st[i].scram;
            f->cred = st[i].cred;
            f->authed = st[i].authed;
            int rc = serve_one(f, p[i].fd);
            st[i].mech = f->mech;
            st[i].scram = f->scram;
            st[i].cred = f->cred;
            st[i].authed = f->authed;
            if (rc != 0) {
                close(p[i].fd);
                p[i] = p[n];
                st[i] = st[n];
                n--;
                i--;
            }
        }
    }
    for (int i = 1; i <= n; i++) close(p[i].fd);
    return NULL;
}

static fake_t *fake_start(const char *mechs) {
    fake_t *f = calloc(1, sizeof *f);
    f->user = "alice";
    f->password = "alice-secret";
    static char list[64];
    snprintf(list, sizeof list, "%s", mechs);
    char *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t && f->nenabled < 3; t = strtok_r(NULL, ",", &save))
        f->enabled[f->nenabled++] = t;
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = 0 };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(f->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(f->lfd, 4), 0);
    socklen_t sl = sizeof sa;
    ck_assert_int_eq(getsockname(f->lfd, (struct sockaddr *)&sa, &sl), 0);
    f->port = ntohs(sa.sin_port);
    ck_assert_int_eq(pthread_create(&f->th, NULL, fake_main, f), 0);
    return f;
}

static void fake_stop(fake_t *f) {
    f->stop = 1;
    pthread_join(f->th, NULL);
    close(f->lfd);
    free(f);
}

static void sec_for(cl_sec_t *s, cl_sasl_mech_t m, const char *user, const char *pw) {
    cl_sec_init(s);
    s->protocol = CL_SEC_SASL_PLAINTEXT;
    s->mechanism = m;
    snprintf(s->username, sizeof s->username, "%s", user);
    snprintf(s->password, sizeof s->password, "%s", pw);
}

static int metadata(cl_conn_t *c, cl_err_t *e) {
    kp_arena_t a;
    kp_arena_init(&a, (size_t)1 << 20);
    kp_metadata_request_t q;
    kp_metadata_request_init(&q);
    void *resp = NULL;
    int rc = cl_conn_call(c, KP_API_METADATA, 12, &q, false, &resp, NULL, &a, e);
    kp_arena_free(&a);
    return rc;
}

START_TEST(test_login_each_mechanism) {
    static const struct { cl_sasl_mech_t m; const char *name; } mechs[] = {
        { CL_SASL_PLAIN, "PLAIN" }, { CL_SASL_SCRAM_SHA_256, "SCRAM-SHA-256" }, { CL_SASL_SCRAM_SHA_512, "SCRAM-SHA-512" },
    };
    for (size_t i = 0; i < 3; i++) {
        fake_t *f = fake_start("PLAIN,SCRAM-SHA-256,SCRAM-SHA-512");
        cl_sec_t sec;
        cl_err_t e;
        cl_err_clear(&e);
        sec_for(&sec, mechs[i].m, "alice", "alice-secret");
        cl_conn_t c;
        ck_assert_msg(cl_conn_open_sec(&c, "127.0.0.1", f->port, 5000, "t", &sec, NULL, &e) == CL_OK, "%s: %s",
                      mechs[i].name, e.msg);
        ck_assert_int_eq(metadata(&c, &e), CL_OK); /* the fake answers only after authentication */
        cl_conn_close(&c);
        /* a wrong password: the broker's message, the Kafka code, exit 1 */
        sec_for(&sec, mechs[i].m, "alice", "nope");
        ck_assert_int_eq(cl_conn_open_sec(&c, "127.0.0.1", f->port, 5000, "t", &sec, NULL, &e), CL_E_KAFKA);
        ck_assert_int_eq(e.kafka_code, KP_ERROR_SASL_AUTHENTICATION_FAILED);
        ck_assert_msg(strncmp(e.msg, "SASL authentication failed: Authentication failed: Invalid username", 67) == 0,
                      "%s", e.msg);
        ck_assert_ptr_nonnull(strstr(e.msg, mechs[i].name));
        ck_assert(!cl_conn_is_open(&c));
        /* an unknown user fails the same way */
        sec_for(&sec, mechs[i].m, "mallory", "alice-secret");
        ck_assert_int_eq(cl_conn_open_sec(&c, "127.0.0.1", f->port, 5000, "t", &sec, NULL, &e), CL_E_KAFKA);
        ck_assert_int_eq(e.kafka_code, KP_ERROR_SASL_AUTHENTICATION_FAILED);
        fake_stop(f);
    }
}
END_TEST

START_TEST(test_login_mechanism_not_enabled) {
    fake_t *f = fake_start("SCRAM-SHA-512");
    cl_sec_t sec;
    cl_err_t e;
    sec_for(&sec, CL_SASL_PLAIN, "alice", "alice-secret");
    cl_conn_t c;
    ck_assert_int_eq(cl_conn_open_sec(&c, "127.0.0.1", f->port, 5000, "t", &sec, NULL, &e), CL_E_KAFKA);
    ck_assert_int_eq(e.kafka_code, KP_ERROR_UNSUPPORTED_SASL_MECHANISM);
    ck_assert_msg(strstr(e.msg, "UNSUPPORTED_SASL_MECHANISM: SASL mechanism PLAIN is not enabled") == e.msg, "%s",
                  e.msg);
    ck_assert_ptr_nonnull(strstr(e.msg, "(enabled: SCRAM-SHA-512)"));
    fake_stop(f);
}
END_TEST

START_TEST(test_login_through_client_and_reauth) {
    fake_t *f = fake_start("SCRAM-SHA-256");
    f->session_lifetime_ms = 300;
    cl_sec_t sec;
    cl_err_t e;
    cl_err_clear(&e);
    sec_for(&sec, CL_SASL_SCRAM_SHA_256, "alice", "alice-secret");
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", f->port);
    cl_client_t c;
    ck_assert_msg(cl_client_open_sec(&c, addr, "t", 5000, &sec, &e) == CL_OK, "%s", e.msg);
    ck_assert_int_eq(cl_client_metadata(&c, NULL, 0, &e), CL_OK);
    /* past 90% of the session's lifetime the next call logs in again first,
     * on the same connection */
    struct timespec ts = { 0, 320 * 1000000L };
    nanosleep(&ts, NULL);
    ck_assert_msg(cl_client_metadata(&c, NULL, 0, &e) == CL_OK, "%s", e.msg);
    cl_client_close(&c);
    f->stop = 1;
    pthread_join(f->th, NULL);
    ck_assert_int_eq(f->handshakes, 2);
    ck_assert_int_eq(f->authenticates, 4); /* two SCRAM round trips per login */
    ck_assert_int_eq(f->metadata_calls, 2);
    close(f->lfd);
    free(f);
}
END_TEST

START_TEST(test_login_wrong_password_through_client) {
    /* cl_client_open_sec stops at a SASL refusal (not "cannot connect") */
    fake_t *f = fake_start("PLAIN");
    cl_sec_t sec;
    cl_err_t e;
    sec_for(&sec, CL_SASL_PLAIN, "alice", "bad");
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", f->port);
    cl_client_t c;
    ck_assert_int_eq(cl_client_open_sec(&c, addr, "t", 5000, &sec, &e), CL_E_KAFKA);
    ck_assert_int_eq(cl_exit_code(e.status), CL_EXIT_FAIL);
    ck_assert_ptr_nonnull(strstr(e.msg, "SASL authentication failed"));
    cl_client_close(&c);
    fake_stop(f);
}
END_TEST

/* A client without SASL on a SASL listener: the broker closes after
 * ApiVersions, and the message points at --command-config. */
START_TEST(test_plaintext_client_on_sasl_listener) {
    fake_t *f = fake_start("PLAIN");
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", f->port);
    cl_client_t c;
    cl_err_t e;
    cl_err_clear(&e);
    ck_assert_int_eq(cl_client_open(&c, addr, "t", 5000, &e), CL_OK);
    c.retry.backoff_ms = 1;
    c.retry.backoff_max_ms = 4;
    ck_assert_int_ne(cl_client_metadata(&c, NULL, 0, &e), CL_OK);
    ck_assert_msg(strstr(e.msg, "connection closed by the broker (a SASL or TLS listener? see --command-config)"),
                  "%s", e.msg);
    cl_client_close(&c);
    fake_stop(f);
}
END_TEST

/* skiffctl user's library calls: the wire carries a fresh 32-byte salt and
 * PBKDF2(password, salt, iterations), never the password; the user can
 * then log in with SCRAM, and not once deleted. */
START_TEST(test_user_add_login_delete) {
    fake_t *f = fake_start("PLAIN,SCRAM-SHA-256,SCRAM-SHA-512");
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", f->port);
    cl_sec_t admin;
    sec_for(&admin, CL_SASL_PLAIN, "alice", "alice-secret");
    cl_client_t c;
    cl_err_t e;
    cl_err_clear(&e);
    ck_assert_int_eq(cl_client_open_sec(&c, addr, "t", 5000, &admin, &e), CL_OK);
    ck_assert_msg(cl_scram_upsert(&c, "bob", CL_SASL_SCRAM_SHA_512, "bob-pw", 5000, &e) == CL_OK, "%s", e.msg);
    ck_assert_msg(cl_scram_upsert(&c, "carol", CL_SASL_SCRAM_SHA_256, "carol-pw", 4096, &e) == CL_OK, "%s", e.msg);
    /* refused before anything is sent */
    ck_assert_int_eq(cl_scram_upsert(&c, "dave", CL_SASL_SCRAM_SHA_256, "pw", 100, &e), CL_E_USAGE);
    ck_assert_int_eq(cl_scram_upsert(&c, "dave", CL_SASL_PLAIN, "pw", 4096, &e), CL_E_USAGE);
    /* what went over the wire for bob */
    int bob = -1;
    for (int k = 0; k < 8; k++)
        if (f->creds[k].used && !strcmp(f->creds[k].name, "bob")) bob = k;
    ck_assert_int_ge(bob, 0);
    ck_assert_int_eq(f->creds[bob].type, 2);
    ck_assert_int_eq(f->creds[bob].iterations, 5000);
    ck_assert_uint_eq(f->creds[bob].salt_len, CL_SCRAM_SALT_BYTES);
    ck_assert_uint_eq(f->creds[bob].salted_len, 64);
    uint8_t want[64];
    ck_assert_int_eq(kp_scram_salted_password(KP_SASL_MECH_SCRAM_SHA_512, "bob-pw", 6, f->creds[bob].salt,
                                              f->creds[bob].salt_len, 5000, want), KP_OK);
    ck_assert_int_eq(memcmp(want, f->creds[bob].salted, 64), 0);
    /* list */
    kp_arena_t a;
    kp_arena_init(&a, (size_t)1 << 20);
    const kp_describe_user_scram_credentials_response_t *d = NULL;
    ck_assert_int_eq(cl_scram_describe_all(&c, &a, &d, &e), CL_OK);
    ck_assert_int_eq(d->results.count, 2);
    kp_arena_free(&a);
    /* bob logs in with SCRAM-SHA-512, not with -256 (no credential) nor a wrong password */
    cl_sec_t sb;
    cl_conn_t conn;
    sec_for(&sb, CL_SASL_SCRAM_SHA_512, "bob", "bob-pw");
    ck_assert_msg(cl_conn_open_sec(&conn, "127.0.0.1", f->port, 5000, "t", &sb, NULL, &e) == CL_OK, "%s", e.msg);
    cl_conn_close(&conn);
    sec_for(&sb, CL_SASL_SCRAM_SHA_256, "bob", "bob-pw");
    ck_assert_int_eq(cl_conn_open_sec(&conn, "127.0.0.1", f->port, 5000, "t", &sb, NULL, &e), CL_E_KAFKA);
    sec_for(&sb, CL_SASL_SCRAM_SHA_512, "bob", "bob-pw2");
    ck_assert_int_eq(cl_conn_open_sec(&conn, "127.0.0.1", f->port, 5000, "t", &sb, NULL, &e), CL_E_KAFKA);
    /* delete; a second delete names the broker's error */
    ck_assert_int_eq(cl_scram_delete(&c, "bob", CL_SASL_SCRAM_SHA_512, &e), CL_OK);
    ck_assert_int_eq(cl_scram_delete(&c, "bob", CL_SASL_SCRAM_SHA_512, &e), CL_E_KAFKA);
    ck_assert_int_eq(e.kafka_code, KP_ERROR_RESOURCE_NOT_FOUND);
    ck_assert_msg(strstr(e.msg, "RESOURCE_NOT_FOUND: user 'bob': Attempt to delete") == e.msg, "%s", e.msg);
    sec_for(&sb, CL_SASL_SCRAM_SHA_512, "bob", "bob-pw");
    ck_assert_int_eq(cl_conn_open_sec(&conn, "127.0.0.1", f->port, 5000, "t", &sb, NULL, &e), CL_E_KAFKA);
    ck_assert_int_eq(e.kafka_code, KP_ERROR_SASL_AUTHENTICATION_FAILED);
    cl_client_close(&c);
    fake_stop(f);
}
END_TEST

/* ---- the admin port's GET with HTTP Basic ---------------------------------- */

typedef struct http_fake {
    int lfd, port;
    pthread_t th;
    char request[4096];
} http_fake_t;

static void *http_main(void *arg) {
    http_fake_t *h = arg;
    int fd = accept(h->lfd, NULL, NULL);
    if (fd < 0) return NULL;
    size_t n = 0;
    while (n + 1 < sizeof h->request && !strstr(h->request, "\r\n\r\n")) {
        ssize_t k = recv(fd, h->request + n, sizeof h->request - 1 - n, 0);
        if (k <= 0) break;
        n += (size_t)k;
        h->request[n] = '\0';
    }
    const char *resp = "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"ok\":true}";
    (void)send_all(fd, (const uint8_t *)resp, strlen(resp));
    close(fd);
    return NULL;
}

START_TEST(test_http_basic_auth_header) {
    http_fake_t h;
    memset(&h, 0, sizeof h);
    h.lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = 0 };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(h.lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(h.lfd, 1), 0);
    socklen_t sl = sizeof sa;
    ck_assert_int_eq(getsockname(h.lfd, (struct sockaddr *)&sa, &sl), 0);
    ck_assert_int_eq(pthread_create(&h.th, NULL, http_main, &h), 0);
    cl_sec_t sec;
    cl_sec_init(&sec);
    snprintf(sec.admin_username, sizeof sec.admin_username, "admin");
    snprintf(sec.admin_password, sizeof sec.admin_password, "pw:x");
    char addr[64];
    snprintf(addr, sizeof addr, "http://127.0.0.1:%d", ntohs(sa.sin_port));
    int status = 0;
    char *body = NULL;
    size_t len = 0;
    cl_err_t e;
    ck_assert_msg(cl_http_get_sec(addr, "/v1/quorum", 5000, &sec, &status, &body, &len, &e) == CL_OK, "%s", e.msg);
    pthread_join(h.th, NULL);
    close(h.lfd);
    ck_assert_int_eq(status, 200);
    ck_assert_str_eq(body, "{\"ok\":true}");
    free(body);
    /* base64("admin:pw:x"): the first ':' splits user and password */
    ck_assert_msg(strstr(h.request, "GET /v1/quorum HTTP/1.0\r\n") == h.request, "%s", h.request);
    ck_assert_msg(strstr(h.request, "\r\nAuthorization: Basic YWRtaW46cHc6eA==\r\n") != NULL, "%s", h.request);
    /* an https address to a port nobody listens on: a connect error, not a crash */
    ck_assert_int_eq(cl_http_get_sec("https://127.0.0.1:1", "/", 1000, NULL, &status, &body, &len, &e), CL_E_CONNECT);
}
END_TEST

int main(void) {
    Suite *su = suite_create("cl_sasl");
    TCase *tc = tcase_create("sasl");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_plain_tokens);
    tcase_add_test(tc, test_scram_against_server);
    tcase_add_test(tc, test_scram_server_iterations_bounded);
    tcase_add_test(tc, test_login_each_mechanism);
    tcase_add_test(tc, test_login_mechanism_not_enabled);
    tcase_add_test(tc, test_login_through_client_and_reauth);
    tcase_add_test(tc, test_login_wrong_password_through_client);
    tcase_add_test(tc, test_user_add_login_delete);
    tcase_add_test(tc, test_plaintext_client_on_sasl_listener);
    tcase_add_test(tc, test_http_basic_auth_header);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
