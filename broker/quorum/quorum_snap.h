/* broker/quorum/quorum_snap.h — metadata snapshot files of the raft driver.
 *
 * A snapshot of the image at end offset E (covering offsets < E; epoch =
 * epoch of entry E-1) is the file <dir>/<E, 20 digits>-<epoch, 10 digits>
 * .checkpoint: u32 CRC-32C of the image bytes, u64 length, the image bytes
 * (bk_meta_image_snapshot, a MetadataSnapshot). Written atomically (temp, fsync,
 * rename, fsync dir). Integrity is checked here; the image checks content. */
#ifndef SKIFF_BK_QUORUM_SNAP_H
#define SKIFF_BK_QUORUM_SNAP_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_wire.h"
#include "raft/raft.h"

#define BK_QUORUM_SNAP_SUFFIX ".checkpoint"
#define BK_QUORUM_SNAP_FILE_MAX_BYTES (256u << 20)

/* Writes the snapshot file for id. KP_OK or a storage/protocol status. */
KP_MUST_CHECK int bk_quorum_snap_write(const char *dir, raft_snapshot_id_t id, const uint8_t *data, size_t len);

/* Deletes every snapshot file in dir except keep's. */
void bk_quorum_snap_prune(const char *dir, raft_snapshot_id_t keep);

/* The newest snapshot file in dir: *id and *data (malloc'd, caller frees).
 * None: id->end_offset = 0, *data NULL, KP_OK. The newest one being
 * unreadable, truncated or failing its CRC: KP_ERR_CORRUPT (or the read
 * error) — never silently an older one, whose log suffix may be gone. */
KP_MUST_CHECK int bk_quorum_snap_load_latest(const char *dir, raft_snapshot_id_t *id, uint8_t **data, size_t *len);

#endif
