/* broker/group/group_replay.h — loading a group coordinator core from its
 * __consumer_offsets partition, as Kafka's GroupMetadataManager does: the
 * records are applied in log order; records of transactional batches
 * (TxnOffsetCommit) are held per producer id until that producer's
 * COMMIT (applied then) or ABORT (dropped) control batch; those whose
 * transaction is still open at the end of the log become pending offsets,
 * resolved later by the producer's marker (bk_grp_gd_txn_complete). Used by the group
 * driver (group_driver.c); a function of the log alone, so testable without
 * a node. Threading: the caller's (loop thread). */
#ifndef SKIFF_BK_GROUP_REPLAY_H
#define SKIFF_BK_GROUP_REPLAY_H

#include "broker/group/group.h"
#include "broker/group/group_txn_offsets.h"
#include "storage/st_log.h"

/* Replays [log start, LEO) of log into c (freshly initialised; the caller
 * calls bk_grp_load_done after). Offsets of transactions open at the end
 * are added to pend (NULL: dropped; pend is not cleared first). KP_OK, or
 * the first error (corrupt batch, storage error, KP_ERR_TOO_LARGE when the
 * held transactional records exceed BK_GRP_GD_TXN_STASH_MAX_BYTES, NOMEM): c
 * then holds a partial state and must not serve. */
KP_MUST_CHECK int bk_grp_gd_replay(bk_grp_coord_t *c, st_log_t *log, bk_grp_txn_offsets_t *pend);

#endif
