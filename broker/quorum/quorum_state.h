/* broker/quorum/quorum_state.h — the `quorum-state` file of the raft driver.
 *
 * Holds the raft hard state (epoch, vote, leader) as one small JSON object,
 * in the metadata log's partition directory (Kafka keeps it there too):
 *   {"leader_id":2,"leader_epoch":7,"voted_id":2,"data_version":0}
 * Written atomically (temp file, fsync, rename, fsync dir: st_atomic_write)
 * before any raft message that depends on it is sent. Pure text <-> struct
 * functions are separate from the file functions so they can be tested on
 * every byte of malformed input. */
#ifndef SKIFF_BK_QUORUM_STATE_H
#define SKIFF_BK_QUORUM_STATE_H

#include <stddef.h>

#include "protocol/kp_wire.h"
#include "raft/raft.h"

#define BK_QUORUM_STATE_FILE "quorum-state"
#define BK_QUORUM_STATE_MAX_BYTES 4096   /* a larger file is corrupt */

/* Formats hs into buf (cap bytes, NUL-terminated). Returns the length, or
 * -1 when cap is too small. */
int bk_quorum_state_format(const raft_hard_state_t *hs, char *buf, size_t cap);

/* Parses `len` bytes of text. Keys leader_id, leader_epoch, voted_id are
 * required (integers; epoch >= 0, ids >= -1); data_version must be 0 when
 * present; unknown keys with integer values are ignored. Returns KP_OK or
 * KP_ERR_CORRUPT (hs untouched) with a reason in why. */
KP_MUST_CHECK int bk_quorum_state_parse(const char *text, size_t len, raft_hard_state_t *hs, char *why,
                                  size_t why_len);

/* Reads dir/quorum-state. A missing file gives the fresh state (epoch 0, no
 * vote, no leader) and KP_OK; unreadable or corrupt: an error status and a
 * message in why (the node must not start: its vote could be forgotten). */
KP_MUST_CHECK int bk_quorum_state_read(const char *dir, raft_hard_state_t *hs, char *why, size_t why_len);

/* Writes dir/quorum-state atomically and durably. */
KP_MUST_CHECK int bk_quorum_state_write(const char *dir, const raft_hard_state_t *hs);

#endif
