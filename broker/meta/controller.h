/* controller.h — the active controller's decisions as pure functions.
 *
 * Every function takes the current metadata image, the controller's soft
 * state (broker sessions, PRNG), a request and now_ms, and returns a Kafka
 * error code per item plus the metadata records to append (bk_meta_recs_t). No
 * I/O, no clock reads. The caller appends the records to the metadata log
 * and applies them to the image it passes next time: each decision assumes
 * that every record returned before has been applied (the active controller
 * keeps a working image that includes its own uncommitted records, or waits
 * for the commit). If out->err is set after a call, the caller must discard
 * the records and answer UNKNOWN_SERVER_ERROR.
 *
 * Errors are Kafka error codes (protocol/kp_errors.h), KP_ERROR_NONE = 0.
 */
#ifndef SKIFF_BK_CONTROLLER_H
#define SKIFF_BK_CONTROLLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/meta/image.h"
#include "broker/meta/records.h"

#define BK_META_CTRL_MESSAGE_MAX 160
#define BK_META_PRODUCER_ID_BLOCK_SIZE 1000
#define BK_META_CREATE_PARTITIONS_MAX 100000    /* partitions one topic may have */

/* Validates one topic config; false with a message in err[errlen] when the
 * value is not acceptable. Supplied by the config module. */
typedef bool (*bk_meta_config_validate_fn)(const char *name, const char *value, char *err,
                                      size_t errlen);

typedef struct {
    int32_t num_partitions;                 /* num.partitions: used for -1 */
    int16_t default_replication_factor;     /* default.replication.factor: used for -1 */
    int64_t session_timeout_ms;             /* broker.session.timeout.ms */
    bool unclean_leader_election;           /* cluster default; a topic config overrides */
    int64_t producer_id_block_size;         /* ids per AllocateProducerIds */
    int32_t leader_imbalance_pct;           /* leader.imbalance.per.broker.percentage */
    bk_meta_config_validate_fn validate_config;  /* NULL: every topic config is accepted */
    int32_t max_replicas_per_node;          /* partition replicas one broker may host; -1 = no limit */
} bk_meta_ctrl_config_t;

/* The replicas-per-node limit a node derives from its open-file limit
 * (ctrl_limits.c): every replica holds its active segment's .log open and
 * its rolled segments' too, counted as BK_META_FDS_PER_REPLICA each, after
 * min(nofile / 4, BK_META_FD_RESERVE_MAX) descriptors kept for connections,
 * listeners, the metadata log and workers. 1024 -> 384, 20000 -> 9488. */
#define BK_META_FDS_PER_REPLICA 2
#define BK_META_FD_RESERVE_MAX 1024
int32_t bk_meta_ctrl_replicas_for_fds(uint64_t nofile);

typedef struct {
    int32_t broker_id;
    int64_t last_heartbeat_ms;
    bool heard;            /* this controller heard the registered incarnation
                              itself (its registration or a heartbeat with its
                              epoch), not only gave it a fresh session */
} bk_meta_session_t;

/* Controller soft state: not in the log, rebuilt when a node becomes the
 * active controller (bk_meta_ctrl_init; every registered broker gets a fresh
 * session at the first tick). */
typedef struct {
    bk_meta_ctrl_config_t cfg;
    uint64_t rng;                           /* splitmix64 state, seeded by the caller */
    bk_meta_session_t sessions[BK_META_BROKERS_MAX];
    size_t nsessions;
    int64_t rebalance_last_ms;              /* auto leader rebalance (rebalance.c): last check */
    bool rebalance_inflight;                /* its records are being committed */
} bk_meta_ctrl_t;

/* Kafka's defaults: 1 partition, RF 1, 9000 ms sessions, unclean off, 1000 ids,
 * 10% leader imbalance; no replicas-per-node limit. */
void bk_meta_ctrl_config_defaults(bk_meta_ctrl_config_t *cfg);
void bk_meta_ctrl_init(bk_meta_ctrl_t *c, const bk_meta_ctrl_config_t *cfg, uint64_t seed);

/* ---- topics ----------------------------------------------------------------- */

/* Replicas of one partition in a manual assignment (CreateTopics: the
 * partition index is checked; CreatePartitions: it is ignored). */
typedef struct {
    int32_t partition;
    const int32_t *brokers;
    size_t nbrokers;
} bk_meta_ctrl_assignment_t;

typedef struct {
    const char *name;
    const char *value;                      /* NULL is rejected (INVALID_CONFIG) */
} bk_meta_ctrl_kv_t;

typedef struct {
    const char *name;
    int32_t num_partitions;                 /* -1 = num.partitions */
    int16_t replication_factor;             /* -1 = default.replication.factor */
    const bk_meta_ctrl_assignment_t *assignments;/* nassignments > 0: manual assignment */
    size_t nassignments;
    const bk_meta_ctrl_kv_t *configs;
    size_t nconfigs;
} bk_meta_ctrl_create_topic_t;

typedef struct {
    int16_t error;
    char message[BK_META_CTRL_MESSAGE_MAX];      /* "" when error is NONE */
    bk_meta_uuid_t topic_id;                     /* zero unless created (not validate_only) */
    int32_t num_partitions;
    int16_t replication_factor;
} bk_meta_ctrl_create_result_t;

/* CreateTopics: one result per request item (res[n]). validate_only checks
 * everything and emits nothing. Emits per topic: Topic, Partition x N,
 * Config x configs. */
void bk_meta_ctrl_create_topics(bk_meta_ctrl_t *c, const bk_meta_image_t *img,
                           const bk_meta_ctrl_create_topic_t *req, size_t n, bool validate_only,
                           bk_meta_recs_t *out, bk_meta_ctrl_create_result_t *res);

typedef struct {
    const char *name;                       /* NULL: delete by id */
    bk_meta_uuid_t id;
} bk_meta_ctrl_delete_topic_t;

typedef struct {
    int16_t error;
    bk_meta_uuid_t id;                           /* of the deleted topic */
} bk_meta_ctrl_delete_result_t;

/* DeleteTopics by name (UNKNOWN_TOPIC_OR_PARTITION) or id (UNKNOWN_TOPIC_ID);
 * a topic named twice in one request: INVALID_REQUEST for the repeat. */
void bk_meta_ctrl_delete_topics(bk_meta_ctrl_t *c, const bk_meta_image_t *img,
                           const bk_meta_ctrl_delete_topic_t *req, size_t n, bk_meta_recs_t *out,
                           bk_meta_ctrl_delete_result_t *res);

typedef struct {
    const char *name;
    int32_t count;                          /* new total partition count */
    const bk_meta_ctrl_assignment_t *assignments;/* one per new partition, or none */
    size_t nassignments;
} bk_meta_ctrl_create_partitions_t;

/* CreatePartitions: one error per item in errors[n] (messages optional:
 * msgs may be NULL, else msgs[n][BK_META_CTRL_MESSAGE_MAX]). */
void bk_meta_ctrl_create_partitions(bk_meta_ctrl_t *c, const bk_meta_image_t *img,
                               const bk_meta_ctrl_create_partitions_t *req, size_t n,
                               bool validate_only, bk_meta_recs_t *out, int16_t *errors,
                               char (*msgs)[BK_META_CTRL_MESSAGE_MAX]);

/* One topic config set (value) or removed back to the default (value NULL),
 * checked as IncrementalAlterConfigs checks a topic resource: unknown topic
 * UNKNOWN_TOPIC_OR_PARTITION, unknown name or bad value INVALID_CONFIG (with
 * msg). On 0, emits the Config record into out. */
int16_t bk_meta_ctrl_topic_config(const bk_meta_image_t *img, const char *topic, const char *name, const char *value,
                                  bk_meta_recs_t *out, char *msg, size_t msglen);

/* Kafka's topic-name rules; false with a message when the name is invalid. */
bool bk_meta_ctrl_topic_name_valid(const char *name, char *msg, size_t msglen);

/* ---- brokers ---------------------------------------------------------------- */

typedef struct {
    const char *listener;
    const char *host;
    uint16_t port;
} bk_meta_ctrl_endpoint_t;

typedef struct {
    int32_t broker_id;
    uint8_t incarnation[BK_META_UUID_BYTES];     /* all-zero is rejected */
    const bk_meta_ctrl_endpoint_t *endpoints;
    size_t nendpoints;
    const char *rack;                       /* NULL or "" = none */
} bk_meta_ctrl_register_t;

/* BrokerRegistration. The broker epoch is the offset its registration record
 * will have: the caller passes next_offset (the log offset the first record
 * in `out` will get). A retry with the same incarnation returns the current
 * epoch and emits nothing; a new incarnation fences the old session
 * (leaderships move away, it leaves ISRs) and registers fenced, unless the
 * old one is not shutting down, was heard from by this controller within
 * session_timeout_ms and registered other endpoints: then it is another
 * live process with the same id, DUPLICATE_BROKER_REGISTRATION, nothing
 * emitted. (The same endpoints mean the new process bound the old one's
 * ports: a restart.) */
int16_t bk_meta_ctrl_register(bk_meta_ctrl_t *c, const bk_meta_image_t *img, const bk_meta_ctrl_register_t *req,
                         int64_t next_offset, int64_t now_ms, bk_meta_recs_t *out,
                         int64_t *broker_epoch);

typedef struct {
    int32_t broker_id;
    int64_t broker_epoch;
    int64_t current_metadata_offset;        /* how far the broker has applied the log */
    bool want_fence;
    bool want_shutdown;
} bk_meta_ctrl_heartbeat_t;

typedef struct {
    int16_t error;
    bool is_fenced;
    bool in_controlled_shutdown;
    bool should_shutdown;
} bk_meta_ctrl_heartbeat_result_t;

/* BrokerHeartbeat: keeps the session alive (now_ms); unfences a fenced broker
 * that has caught up (current_metadata_offset >= its epoch) and elects it
 * where partitions are leaderless; want_fence fences; want_shutdown starts
 * controlled shutdown (leaderships move away) and answers should_shutdown
 * once it leads nothing. */
void bk_meta_ctrl_heartbeat(bk_meta_ctrl_t *c, const bk_meta_image_t *img, const bk_meta_ctrl_heartbeat_t *req,
                       int64_t now_ms, bk_meta_recs_t *out, bk_meta_ctrl_heartbeat_result_t *res);

/* Periodic work: fences every unfenced broker whose last heartbeat is older
 * than session_timeout_ms (leaders move within the ISR, fenced brokers leave
 * ISRs that stay non-empty). Returns the number of brokers fenced. */
size_t bk_meta_ctrl_tick(bk_meta_ctrl_t *c, const bk_meta_image_t *img, int64_t now_ms, bk_meta_recs_t *out);

/* ---- partitions ------------------------------------------------------------- */

/* The leader election rule every decision uses: the first replica (in
 * replica order) that is in the ISR and usable (registered, unfenced, not in
 * controlled shutdown); if none and `unclean`, the first usable replica, and
 * *isr_out becomes just that replica; else -1. *isr_out is otherwise a copy
 * of p->isr. `unclean` is the topic's unclean.leader.election.enable. */
int32_t bk_meta_ctrl_choose_leader(const bk_meta_image_t *img, const bk_meta_partition_t *p, bool unclean,
                              bk_meta_ids_t *isr_out);

typedef enum { BK_META_ELECT_PREFERRED = 0, BK_META_ELECT_UNCLEAN = 1 } bk_meta_elect_type_t;

/* ElectLeaders for one partition. PREFERRED: replicas[0] if in ISR and usable
 * (ELECTION_NOT_NEEDED when it already leads, PREFERRED_LEADER_NOT_AVAILABLE
 * otherwise). UNCLEAN: only for a leaderless partition; the ISR first, then
 * any usable replica (ELIGIBLE_LEADERS_NOT_AVAILABLE when none). */
int16_t bk_meta_ctrl_elect(bk_meta_ctrl_t *c, const bk_meta_image_t *img, bk_meta_elect_type_t type,
                      const char *topic, int32_t partition, bk_meta_recs_t *out);

/* Auto leader rebalance (auto.leader.rebalance.enable; the caller decides
 * when, e.g. every leader.imbalance.check.interval.seconds): for every broker
 * whose preferred-but-not-led partitions exceed leader_imbalance_pct of the
 * partitions it is preferred for, a preferred election for each of those
 * where it is in the ISR and usable. Returns the number of leaders moved. */
size_t bk_meta_ctrl_rebalance(bk_meta_ctrl_t *c, const bk_meta_image_t *img, bk_meta_recs_t *out);

typedef struct {
    int32_t broker_id;                      /* the requesting leader */
    int64_t broker_epoch;
    bk_meta_uuid_t topic_id;
    int32_t partition;
    int32_t leader_epoch;
    int32_t partition_epoch;
    const int32_t *new_isr;
    size_t nisr;
} bk_meta_ctrl_alter_partition_t;

typedef struct {
    int16_t error;
    int32_t leader;                         /* state after the change */
    int32_t leader_epoch;
    int32_t partition_epoch;
    bk_meta_ids_t isr;
} bk_meta_ctrl_alter_partition_result_t;

/* AlterPartition (ISR change from the leader). Completes a reassignment when
 * every target replica is in the new ISR. */
void bk_meta_ctrl_alter_partition(bk_meta_ctrl_t *c, const bk_meta_image_t *img,
                             const bk_meta_ctrl_alter_partition_t *req, bk_meta_recs_t *out,
                             bk_meta_ctrl_alter_partition_result_t *res);

typedef struct {
    const char *topic;
    int32_t partition;
    const int32_t *replicas;                /* NULL: cancel the reassignment */
    size_t nreplicas;
} bk_meta_ctrl_reassign_t;

/* AlterPartitionReassignments for one partition. Starting: replicas become
 * target + removing, adding/removing are set; complete at once when the
 * target is already in the ISR. Cancel: back to the original replicas
 * (NO_REASSIGNMENT_IN_PROGRESS when there is none). ListPartitionReassignments
 * is bk_meta_image_select(BK_META_SEL_REASSIGNING). */
int16_t bk_meta_ctrl_reassign(bk_meta_ctrl_t *c, const bk_meta_image_t *img, const bk_meta_ctrl_reassign_t *req,
                         bk_meta_recs_t *out);

/* ---- producer ids ----------------------------------------------------------- */

/* AllocateProducerIds: the next block of producer_id_block_size ids for a
 * registered broker ([*first_id, *first_id + *count)). */
int16_t bk_meta_ctrl_alloc_producer_ids(bk_meta_ctrl_t *c, const bk_meta_image_t *img, int32_t broker_id,
                                   int64_t broker_epoch, bk_meta_recs_t *out, int64_t *first_id,
                                   int32_t *count);

/* Finalized features (ctrl_features.c, broker/meta/features.h): a cluster
 * whose log has no FeatureLevel record yet gets one per feature at its
 * new-cluster level (the controller's timer calls it with its tick, and a
 * node with no quorum with its self-registration, so the first decision of
 * a new cluster finalizes them); nothing once any exists. */
void bk_meta_ctrl_features_bootstrap(const bk_meta_image_t *img, bk_meta_recs_t *out);

#endif
