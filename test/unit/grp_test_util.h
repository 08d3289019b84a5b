/* grp_test_util.h — helpers shared by test/unit/test_group*.c: a coordinator
 * owning every group (one partition), request builders and response lookup. */
#ifndef SKIFF_GRP_TEST_UTIL_H
#define SKIFF_GRP_TEST_UTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/group/group.h"
#include "protocol/kp_errors.h"

#define S(x) kp_slice_cstr(x)
#define SESSION_MS 10000
#define REBALANCE_MS 30000

/* A loaded coordinator of partition 0 of 1 (it owns every group). */
static inline void coord_new(bk_grp_coord_t *c, int32_t initial_delay_ms) {
    bk_grp_config_t cfg;
    bk_grp_config_defaults(&cfg);
    cfg.num_partitions = 1;
    cfg.initial_rebalance_delay_ms = initial_delay_ms;
    bk_grp_coord_init(c, &cfg, 0, 42);
    bk_grp_load_done(c, 0);
}

/* Up to 4 protocols named in a comma-free list; metadata = "md-" + name. */
typedef struct {
    bk_grp_protocol_in_t p[4];
    char md[4][32];
} protos_t;

static inline void protos(protos_t *ps, size_t n, const char *const *names) {
    ck_assert_uint_le(n, 4);
    for (size_t i = 0; i < n; i++) {
        snprintf(ps->md[i], sizeof ps->md[i], "md-%s", names[i]);
        ps->p[i].name = S(names[i]);
        ps->p[i].metadata = S(ps->md[i]);
    }
}

static inline bk_grp_join_t join_req(const char *group, const char *member, const char *instance,
                                     uint64_t token, const protos_t *ps, size_t nprotos) {
    bk_grp_join_t r;
    memset(&r, 0, sizeof r);
    r.group_id = S(group);
    r.member_id = S(member);
    r.instance_id = S(instance);          /* NULL -> null slice */
    r.client_id = S("client");
    r.client_host = S("/127.0.0.1");
    r.protocol_type = S("consumer");
    r.session_timeout_ms = SESSION_MS;
    r.rebalance_timeout_ms = REBALANCE_MS;
    r.protocols = ps->p;
    r.nprotocols = nprotos;
    r.require_known_member_id = true;
    r.token = token;
    return r;
}

/* The response for token, which must be present. */
static inline const bk_grp_resp_t *resp(const bk_grp_out_t *o, uint64_t token) {
    const bk_grp_resp_t *r = bk_grp_out_find(o, token);
    ck_assert_msg(r != NULL, "no response for token %llu", (unsigned long long)token);
    return r;
}

/* A NUL-terminated copy of a slice (for keeping ids across out resets). */
static inline char *dup_slice(kp_str_t s) {
    char *p = malloc(s.len + 1);
    ck_assert_ptr_nonnull(p);
    if (s.len) memcpy(p, s.p, s.len);
    p[s.len] = 0;
    return p;
}

static inline bool slice_is(kp_str_t s, const char *c) { return kp_slice_eq_cstr(s, c); }

static inline kp_str_t gs_slice_for_test(const bk_grp_str_t *s) {
    kp_str_t r = { (const uint8_t *)s->p, s->len };
    return r;
}

static inline bk_grp_state_t grp_state_of(const bk_grp_coord_t *c, const char *group) {
    const bk_grp_t *g = bk_grp_find(c, S(group));
    ck_assert_ptr_nonnull(g);
    return g->state;
}

static inline size_t grp_member_count(const bk_grp_coord_t *c, const char *group) {
    const bk_grp_t *g = bk_grp_find(c, S(group));
    ck_assert_ptr_nonnull(g);
    return g->nmembers;
}

#endif
