/* acl.h — the ACL bindings of the metadata image and the authorization
 * decision of Kafka's StandardAuthorizer over them (KIP-801 semantics).
 *
 * A binding is a resource pattern (type, name, LITERAL or PREFIXED) and an
 * entry (principal, host, operation, ALLOW/DENY); codes are Kafka's wire
 * codes (CreateAcls/DescribeAcls/DeleteAcls carry them as they are). The set
 * is indexed by (resource type, pattern type, name) in a hash table, so a
 * decision looks up the literal name, the literal wildcard "*" and each
 * prefix of the name: its cost depends on the name's length, never on how
 * many bindings exist (issue 18: 10,000 ACLs on the hot path). */
#ifndef SKIFF_BROKER_META_ACL_H
#define SKIFF_BROKER_META_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Kafka's ResourceType codes */
#define BK_META_RES_UNKNOWN 0
#define BK_META_RES_ANY 1
#define BK_META_RES_TOPIC 2
#define BK_META_RES_GROUP 3
#define BK_META_RES_CLUSTER 4
#define BK_META_RES_TRANSACTIONAL_ID 5
#define BK_META_RES_DELEGATION_TOKEN 6
#define BK_META_RES_USER 7
/* PatternType */
#define BK_META_PAT_UNKNOWN 0
#define BK_META_PAT_ANY 1
#define BK_META_PAT_MATCH 2
#define BK_META_PAT_LITERAL 3
#define BK_META_PAT_PREFIXED 4
/* AclOperation */
#define BK_META_OP_UNKNOWN 0
#define BK_META_OP_ANY 1
#define BK_META_OP_ALL 2
#define BK_META_OP_READ 3
#define BK_META_OP_WRITE 4
#define BK_META_OP_CREATE 5
#define BK_META_OP_DELETE 6
#define BK_META_OP_ALTER 7
#define BK_META_OP_DESCRIBE 8
#define BK_META_OP_CLUSTER_ACTION 9
#define BK_META_OP_DESCRIBE_CONFIGS 10
#define BK_META_OP_ALTER_CONFIGS 11
#define BK_META_OP_IDEMPOTENT_WRITE 12
#define BK_META_OP_CREATE_TOKENS 13
#define BK_META_OP_DESCRIBE_TOKENS 14
/* AclPermissionType */
#define BK_META_PERM_UNKNOWN 0
#define BK_META_PERM_ANY 1
#define BK_META_PERM_DENY 2
#define BK_META_PERM_ALLOW 3

#define BK_META_ACL_WILDCARD "*"            /* literal name, principal "User:*", host */
#define BK_META_ACL_CLUSTER_NAME "kafka-cluster"
#define BK_META_ACL_MAX 1000000             /* bound on bindings in one image */
#define BK_META_ACL_TEXT_MAX 1024           /* bound on each string of a binding */

/* One binding; strings are NUL-terminated. */
typedef struct bk_meta_acl {
    int8_t resource_type;
    int8_t pattern_type;                    /* LITERAL or PREFIXED */
    const char *resource_name;
    const char *principal;                  /* "User:NAME" or "User:*" */
    const char *host;                       /* an address or "*" */
    int8_t operation;
    int8_t permission;                      /* ALLOW or DENY */
} bk_meta_acl_t;

/* A DescribeAcls / DeleteAcls filter: NULL strings and the ANY codes
 * match everything; pattern MATCH matches the bindings that would apply to
 * the named resource (the literal name, the literal "*", prefixes). */
typedef struct bk_meta_acl_filter {
    int8_t resource_type;
    int8_t pattern_type;
    const char *resource_name;
    const char *principal;
    const char *host;
    int8_t operation;
    int8_t permission;
} bk_meta_acl_filter_t;

typedef struct bk_meta_acls bk_meta_acls_t;

/* NULL when out of memory. */
bk_meta_acls_t *bk_meta_acls_new(void);
void bk_meta_acls_free(bk_meta_acls_t *s);
/* A valid binding (bk_meta_acl_valid) is added; KP_OK when already there.
 * KP_ERR_BAD_VALUE for an invalid one or past BK_META_ACL_MAX; KP_ERR_NOMEM. */
int bk_meta_acls_add(bk_meta_acls_t *s, const bk_meta_acl_t *a);
/* Removes the equal binding; KP_OK also when it is absent (removal is
 * idempotent, like replaying a log twice over a snapshot). */
int bk_meta_acls_remove(bk_meta_acls_t *s, const bk_meta_acl_t *a);
size_t bk_meta_acls_count(const bk_meta_acls_t *s);
/* Calls fn for every binding (order: by index bucket, stable between
 * changes); stops early when fn returns false. Do not change s inside. */
typedef bool (*bk_meta_acl_visit_fn)(void *ctx, const bk_meta_acl_t *a);
void bk_meta_acls_each(const bk_meta_acls_t *s, bk_meta_acl_visit_fn fn, void *ctx);

/* NULL when `a` may be stored, else why not (CreateAcls answers it with
 * INVALID_REQUEST): a concrete resource type, LITERAL or PREFIXED, a
 * non-empty name ("kafka-cluster" for CLUSTER), a "Type:name" principal,
 * a concrete operation and permission, strings within BK_META_ACL_TEXT_MAX. */
const char *bk_meta_acl_valid(const bk_meta_acl_t *a);
/* NULL when the filter is well formed (DeleteAcls refuses UNKNOWN codes). */
const char *bk_meta_acl_filter_valid(const bk_meta_acl_filter_t *f);
bool bk_meta_acl_filter_match(const bk_meta_acl_filter_t *f, const bk_meta_acl_t *a);

/* The decision for `principal` at `host` doing `op` on (rtype, name):
 * DENY when a matching DENY binding names the operation or ALL; ALLOW when
 * a matching ALLOW binding names it, ALL, or an operation implying it
 * (READ/WRITE/DELETE/ALTER imply DESCRIBE, ALTER_CONFIGS implies
 * DESCRIBE_CONFIGS); NO_ACL when no binding at all applies to the resource
 * (the caller then follows allow.everyone.if.no.acl.found); else DENY. */
typedef enum { BK_META_AUTHZ_NO_ACL = 0, BK_META_AUTHZ_ALLOW = 1, BK_META_AUTHZ_DENY = 2 } bk_meta_authz_t;
bk_meta_authz_t bk_meta_acls_decide(const bk_meta_acls_t *s, const char *principal, const char *host, int8_t op,
                                    int8_t rtype, const char *name);
/* Moves on with every change: decision caches compare it. */
uint64_t bk_meta_acls_gen(const bk_meta_acls_t *s);

/* Names for logs and skiffctl ("TOPIC", "READ", ...); "UNKNOWN" otherwise. */
const char *bk_meta_res_name(int8_t t);
const char *bk_meta_pat_name(int8_t t);
const char *bk_meta_op_name(int8_t t);
const char *bk_meta_perm_name(int8_t t);

#endif
