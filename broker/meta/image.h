/* image.h — the metadata image: the cluster state that the committed records
 * of the metadata log (__cluster_metadata-0) describe.
 *
 * Every node holds one image and applies committed records to it in log order
 * (bk_meta_image_apply). The image answers Metadata, DescribeConfigs, the admin port
 * and the controller's decisions. It is pure data: no I/O, no clock, no
 * globals; one event-loop thread owns it.
 *
 * Lookups: topics by name and by id, brokers by id and configs by resource are
 * sorted arrays searched by binary search (O(log n)); a partition is indexed
 * by its id inside its topic. Inserting a topic is O(topics) (memmove of
 * pointers): cheap at the bounds below, and iteration order is deterministic,
 * which makes snapshots byte-identical for equal images. A hash map would make
 * inserts O(1) but lose the ordering; not worth it at these sizes.
 */
#ifndef SKIFF_BK_IMAGE_H
#define SKIFF_BK_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/meta/features.h"
#include "broker/meta/metadata.pb-c.h"
#include "protocol/kp_wire.h"

/* Bounds. A record that would exceed one is invalid (apply fails). */
#define BK_META_REPLICAS_MAX 16          /* replicas of one partition, reassignment included */
#define BK_META_BROKERS_MAX 1024
#define BK_META_TOPICS_MAX 100000
#define BK_META_PARTITIONS_MAX 100000    /* per topic */
#define BK_META_CONFIGS_MAX 1000000
#define BK_META_ENDPOINTS_MAX 8
#define BK_META_TOPIC_NAME_MAX 249
#define BK_META_SCRAM_MAX 100000         /* SCRAM credentials (user x mechanism) */
#define BK_META_SCRAM_NAME_MAX 240       /* a principal "User:NAME" fits 255 bytes */
#define BK_META_SCRAM_SALT_MAX 128
#define BK_META_SCRAM_KEY_MAX 64         /* SHA-512 */
#define BK_META_SCRAM_ITER_MIN 4096      /* Kafka's bounds for both mechanisms */
#define BK_META_SCRAM_ITER_MAX 16384

#define BK_META_QUOTAS_MAX 100000        /* client quota entities */
#define BK_META_QUOTA_NAME_MAX 255       /* a user or client-id name */

#define BK_META_UUID_BYTES 16
#define BK_META_RESOURCE_TOPIC 2
#define BK_META_RESOURCE_BROKER 4        /* name "" = cluster-wide default */

typedef struct { uint8_t b[BK_META_UUID_BYTES]; } bk_meta_uuid_t;

/* A small set of broker ids, in order of significance (replicas[0] is the
 * preferred leader). */
typedef struct {
    int32_t n;
    int32_t v[BK_META_REPLICAS_MAX];
} bk_meta_ids_t;

typedef struct {
    char *listener;
    char *host;
    uint16_t port;
} bk_meta_endpoint_t;

typedef struct {
    int32_t id;
    uint8_t incarnation[BK_META_UUID_BYTES];
    int64_t epoch;                  /* offset of the registration record */
    bk_meta_endpoint_t endpoints[BK_META_ENDPOINTS_MAX];
    int32_t nendpoints;
    char *rack;                     /* NULL = no rack */
    bool fenced;
    bool in_controlled_shutdown;
} bk_meta_broker_t;

typedef struct {
    int32_t id;
    bk_meta_ids_t replicas;              /* during a reassignment: target + removing */
    bk_meta_ids_t isr;
    bk_meta_ids_t adding;
    bk_meta_ids_t removing;
    int32_t leader;                 /* -1 = none (offline) */
    int32_t leader_epoch;
    int32_t partition_epoch;
    bool touched;                   /* in img->touched (change notification only) */
} bk_meta_partition_t;

typedef struct {
    char *name;
    bk_meta_uuid_t id;
    int32_t nparts;
    bk_meta_partition_t *parts;          /* parts[i].id == i */
} bk_meta_topic_t;

typedef struct {
    int32_t resource_type;
    char *resource_name;
    char *name;
    char *value;
} bk_meta_img_config_t;

/* A SCRAM credential (UserScramCredential record): mechanism 1 =
 * SCRAM-SHA-256 (32-byte keys), 2 = SCRAM-SHA-512 (64-byte keys). */
typedef struct {
    char *name;
    int8_t mechanism;
    int32_t iterations;
    uint8_t salt[BK_META_SCRAM_SALT_MAX];
    uint8_t salt_len;
    uint8_t stored_key[BK_META_SCRAM_KEY_MAX];
    uint8_t server_key[BK_META_SCRAM_KEY_MAX];
} bk_meta_scram_t;

/* Client quotas (ClientQuota records, Kafka's ClientQuotaRecord). An entity
 * part is absent, named or the type's default. */
typedef enum { BK_META_QE_NONE = 0, BK_META_QE_NAME = 1, BK_META_QE_DEFAULT = 2 } bk_meta_qe_kind_t;
typedef enum {
    BK_META_QUOTA_PRODUCER_BYTE_RATE = 0,
    BK_META_QUOTA_CONSUMER_BYTE_RATE,
    BK_META_QUOTA_REQUEST_PERCENTAGE,
    BK_META_QUOTA_CONTROLLER_MUTATION_RATE,
    BK_META_QUOTA_KEYS
} bk_meta_quota_key_t;

typedef struct {
    uint8_t user_kind, client_kind;     /* bk_meta_qe_kind_t; not both NONE */
    char *user, *client;                /* "" unless the kind is NAME */
    uint8_t has;                        /* bit k: key k is set */
    double value[BK_META_QUOTA_KEYS];
} bk_meta_quota_t;

/* What the local node must do for one partition after a batch of records. */
typedef enum {
    BK_META_CHANGE_LEADER = 1,           /* become (or stay, with a new epoch) leader */
    BK_META_CHANGE_FOLLOWER = 2,         /* become (or stay, with a new leader/epoch) follower */
    BK_META_CHANGE_STOP = 3,             /* no longer a replica (or the topic is gone) */
} bk_meta_change_kind_t;

typedef struct {
    bk_meta_change_kind_t kind;
    bk_meta_uuid_t topic_id;
    int32_t partition;
    bool deleted;                   /* STOP: delete the log (always: topic deleted or replica reassigned away) */
    int32_t leader;                 /* new state (LEADER/FOLLOWER only) */
    int32_t leader_epoch;
    int32_t partition_epoch;
} bk_meta_change_t;

typedef struct {                    /* local role of a touched partition before the batch */
    bk_meta_uuid_t topic_id;
    int32_t partition;
    int8_t old_role;                /* 0 none, 1 leader, 2 follower */
    int32_t old_leader;
    int32_t old_leader_epoch;
    int32_t old_partition_epoch;
} bk_meta_touch_t;

typedef struct {
    char *cluster_id;
    int64_t last_offset;            /* -1 before the first record */
    int32_t last_epoch;
    int64_t next_producer_id;       /* first id not yet handed out */
    int32_t local_id;               /* this node, for change notifications; -1 none */
    int16_t feature_level[BK_META_FEATURES_N]; /* finalized levels, by features.h index; 0 = not finalized */
    int64_t features_epoch;         /* offset of the last FeatureLevel record; -1 none yet */

    bk_meta_broker_t *brokers;           /* sorted by id */
    size_t nbrokers, cap_brokers;
    bk_meta_topic_t **by_name;           /* sorted by name */
    bk_meta_topic_t **by_id;             /* sorted by id bytes */
    size_t ntopics, cap_topics;
    bk_meta_img_config_t *configs;           /* sorted by (type, resource name, name) */
    size_t nconfigs, cap_configs;
    uint64_t configs_gen;           /* moves on whenever `configs` may have changed
                                       (a Config record, a topic removal, a load or
                                       a free): what is derived from the configs
                                       (core/'s resolved topic configs, the root's
                                       commit hook) compares it */

    bk_meta_scram_t *scram;              /* sorted by (name, mechanism) */
    size_t nscram, cap_scram;
    bool scram_bootstrapped;             /* a ScramBootstrapDone record was applied */

    struct bk_meta_acls *acls;           /* ACL bindings (acl.h); NULL until the first */
    bk_meta_quota_t *quotas;             /* sorted by (user kind, user, client kind, client) */
    size_t nquotas, cap_quotas;
    uint64_t quotas_gen;                 /* moves on with every quota change */

    bk_meta_touch_t *touched;            /* since the last bk_meta_image_take_changes */
    size_t ntouched, cap_touched;
} bk_meta_image_t;

/* A (topic, partition) reference into an image; valid until the next apply. */
typedef struct {
    const bk_meta_topic_t *topic;
    const bk_meta_partition_t *part;
} bk_meta_tp_t;

/* ---- lifecycle ---------------------------------------------------------- */

/* Empty image; local_id is this node's id (-1: no change notifications). */
void bk_meta_image_init(bk_meta_image_t *img, int32_t local_id);
/* Frees everything the image owns; the image is then empty (re-init to reuse). */
void bk_meta_image_free(bk_meta_image_t *img);
/* Copies cluster_id (may be NULL). KP_ERR_NOMEM on allocation failure. */
KP_MUST_CHECK int bk_meta_image_set_cluster_id(bk_meta_image_t *img, const char *cluster_id);
/* The raft epoch of the last applied record, for snapshots. */
void bk_meta_image_set_last_epoch(bk_meta_image_t *img, int32_t epoch);

/* ---- apply -------------------------------------------------------------- */

/* Applies one committed record found at log `offset` (> last_offset).
 * Returns KP_OK, KP_ERR_BAD_VALUE when the record is invalid for this image
 * (unknown topic id, leader outside the ISR, a bound exceeded, ...), or
 * KP_ERR_NOMEM. On error the image is unchanged. The log is the truth, so the
 * caller treats an error as fatal for the node (log it with the offset and
 * stop); it is returned rather than asserted because snapshots and log
 * records are bytes from disk and network, and the caller must be able to
 * report which offset was bad. A BrokerRegistration without broker_epoch gets
 * `offset` as its epoch. The record is not retained. */
KP_MUST_CHECK int bk_meta_image_apply(bk_meta_image_t *img, const Skiff__Metadata__MetadataRecord *rec,
                                 int64_t offset);

/* Unpacks `len` bytes as a MetadataRecord and applies it at `offset`.
 * KP_ERR_CORRUPT when the bytes do not decode. */
KP_MUST_CHECK int bk_meta_image_apply_bytes(bk_meta_image_t *img, const uint8_t *data, size_t len,
                                       int64_t offset);

/* Change notification: for every partition touched by records since the last
 * call, writes at most `max` entries to `out` describing what the local node
 * must do, and forgets the touched set. Returns how many entries there were
 * in total (> max means some were dropped: the caller must size `out` by
 * bk_meta_image_pending_changes first). Partitions whose state did not change for
 * the local node produce nothing. */
size_t bk_meta_image_take_changes(bk_meta_image_t *img, bk_meta_change_t *out, size_t max);
/* Upper bound of the entries the next bk_meta_image_take_changes can produce. */
size_t bk_meta_image_pending_changes(const bk_meta_image_t *img);

/* ---- queries (pointers valid until the next apply or free) -------------- */

const bk_meta_topic_t *bk_meta_image_topic_by_name(const bk_meta_image_t *img, const char *name);
/* Whether a topic is reported internal (Metadata, DescribeTopicPartitions,
 * the admin port): a name starting with "__". */
bool bk_meta_topic_is_internal(const char *name);
/* The topic named by a decoded wire string; NULL for a null string, one
 * longer than a topic name can be, or one holding a NUL byte (never cut at
 * the NUL). The one way to look a wire topic name up. */
const bk_meta_topic_t *bk_meta_image_topic_by_slice(const bk_meta_image_t *img, kp_str_t name);
const bk_meta_topic_t *bk_meta_image_topic_by_id(const bk_meta_image_t *img, const bk_meta_uuid_t *id);
/* NULL when the topic or partition does not exist. */
const bk_meta_partition_t *bk_meta_image_partition(const bk_meta_image_t *img, const bk_meta_uuid_t *topic_id,
                                         int32_t partition);
const bk_meta_broker_t *bk_meta_image_broker(const bk_meta_image_t *img, int32_t broker_id);
/* Leader of a partition; -1 when leaderless or when the partition is unknown. */
int32_t bk_meta_image_leader(const bk_meta_image_t *img, const bk_meta_uuid_t *topic_id, int32_t partition);
/* Registered, unfenced and not in controlled shutdown: may lead and join ISRs. */
bool bk_meta_image_broker_usable(const bk_meta_image_t *img, int32_t broker_id);
/* Number of unfenced brokers. */
size_t bk_meta_image_unfenced_count(const bk_meta_image_t *img);

typedef enum {
    BK_META_SEL_LEADS = 1,               /* partitions the broker leads */
    BK_META_SEL_FOLLOWS = 2,             /* partitions where it is a replica but not the leader */
    BK_META_SEL_UNDER_REPLICATED = 3,    /* ISR smaller than replicas (broker ignored) */
    BK_META_SEL_OFFLINE = 4,             /* leader -1 (broker ignored) */
    BK_META_SEL_REASSIGNING = 5,         /* adding or removing replicas (broker ignored) */
    BK_META_SEL_REPLICA = 6,             /* partitions where the broker is a replica */
    BK_META_SEL_IN_ISR = 7,              /* partitions where the broker is in the ISR */
} bk_meta_select_t;

/* Writes up to `max` matching partitions to `out` (in topic-name, partition
 * order) and returns the total number that match. O(partitions). */
size_t bk_meta_image_select(const bk_meta_image_t *img, bk_meta_select_t sel, int32_t broker_id,
                       bk_meta_tp_t *out, size_t max);

/* The configs of one resource, as a contiguous sorted slice (count in *n). */
const bk_meta_img_config_t *bk_meta_image_configs(const bk_meta_image_t *img, int32_t resource_type,
                                    const char *resource_name, size_t *n);
/* One config value, or NULL when not set. */
const char *bk_meta_image_config(const bk_meta_image_t *img, int32_t resource_type,
                            const char *resource_name, const char *name);

/* The credential of `name` for `mechanism` (1 or 2), or NULL. */
const bk_meta_scram_t *bk_meta_image_scram(const bk_meta_image_t *img, const char *name, int8_t mechanism);
/* The credentials of `name` (both mechanisms, ascending), *n of them. */
const bk_meta_scram_t *bk_meta_image_scram_user(const bk_meta_image_t *img, const char *name, size_t *n);
/* Key length of a SCRAM mechanism: 32, 64, or 0 for another value. */
size_t bk_meta_scram_key_len(int32_t mechanism);

/* ---- client quotas (image_quota.c) ---------------------------------------- */

/* Kafka's name of quota key k ("producer_byte_rate", ...); the key of a name
 * (-1 when unknown); whether its values are whole numbers (the byte rates
 * and the mutation rate are longs in Kafka, request_percentage a double). */
const char *bk_meta_quota_key_name(int k);
int bk_meta_quota_key_of(const char *name, size_t len);
bool bk_meta_quota_key_integral(int k);
/* The entity exactly as given (kinds and names), or NULL. */
const bk_meta_quota_t *bk_meta_image_quota(const bk_meta_image_t *img, int user_kind, const char *user,
                                           int client_kind, const char *client);
/* Kafka's precedence for a connection of `user` (the principal's name) and
 * `client`: (user, client), (user, default client), (user), (default user,
 * client), (default user, default client), (default user), (client),
 * (default client); the first entity with key k set. NULL: no quota.
 * client NULL: a client id no entity can name (longer than
 * BK_META_QUOTA_NAME_MAX or holding a NUL): only the levels without a
 * client-id name apply. */
const bk_meta_quota_t *bk_meta_image_quota_for(const bk_meta_image_t *img, const char *user, const char *client,
                                               int k);

/* ---- bk_meta_ids_t helpers --------------------------------------------------- */

bool bk_meta_ids_has(const bk_meta_ids_t *s, int32_t id);
/* Appends id; asserts room. */
void bk_meta_ids_add(bk_meta_ids_t *s, int32_t id);
void bk_meta_ids_remove(bk_meta_ids_t *s, int32_t id);
bool bk_meta_ids_equal(const bk_meta_ids_t *a, const bk_meta_ids_t *b);
bool bk_meta_uuid_is_zero(const bk_meta_uuid_t *u);

/* ---- snapshots ---------------------------------------------------------- */

/* Serializes the image as a MetadataSnapshot message into a malloc'd buffer
 * (*out, *len; the caller frees). Equal images give identical bytes.
 * KP_ERR_NOMEM on allocation failure. */
KP_MUST_CHECK int bk_meta_image_snapshot(const bk_meta_image_t *img, uint8_t **out, size_t *len);
/* Replaces the content of `img` (keeping its local_id) with the image the
 * snapshot bytes describe. KP_ERR_CORRUPT when they do not decode,
 * KP_ERR_BAD_VALUE when a record inside is invalid; on error `img` is
 * unchanged. Every partition of the loaded image is reported by the next
 * bk_meta_image_take_changes as if it were new (the old roles are kept, so a
 * partition the node no longer holds is reported as STOP). */
KP_MUST_CHECK int bk_meta_image_load(bk_meta_image_t *img, const uint8_t *data, size_t len);
/* A new heap image equal to src (snapshot + load: O(image)) with nothing
 * pending for bk_meta_image_take_changes: a throw-away copy to decide
 * against (the decision views of meta_log.c and quorum/). NULL when out of
 * memory. Free with bk_meta_image_free, then free(). */
bk_meta_image_t *bk_meta_image_copy(const bk_meta_image_t *src);

#endif
