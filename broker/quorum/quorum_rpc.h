/* broker/quorum/quorum_rpc.h — raft messages <-> Kafka frames on the controller
 * listener, through the generated codec. Pure: no I/O, no clock.
 *
 * Mapping (one topic "__cluster_metadata", partition 0):
 *   VOTE_REQ/RESP        Vote v0 (api 52)
 *   BEGIN_EPOCH_REQ/RESP BeginQuorumEpoch v0 (53)
 *   END_EPOCH_REQ/RESP   EndQuorumEpoch v0 (54)
 *   FETCH_REQ/RESP       Fetch v12 (1): ReplicaId = follower, records =
 *                        one v2 batch per raft entry (see entries below)
 *   SNAP_REQ/RESP        FetchSnapshot v0 (59): UnalignedRecords = bytes
 * Vote v0-1 has no pre-vote flag (KIP-996 adds it in v2, which our schema
 * lacks): a pre-vote request is a Vote whose header client id is
 * BK_QUORUM_RPC_CLIENT_PREVOTE. Responses carry no sender id, no pre-vote flag and
 * no echo of the fetch position: the decoder takes them from the request
 * the response answers (the client keeps it).
 *
 * Entries on disk and on the wire: raft entry = one RecordBatch v2 with
 * baseOffset = entry offset, partitionLeaderEpoch = entry epoch and one
 * record whose value is the payload (a MetadataRecord for data entries).
 * A LEADER_CHANGE entry is a control batch whose record key is the control
 * key (version 0, type 2 = LeaderChange), as in KRaft. */
#ifndef SKIFF_BK_QUORUM_RPC_H
#define SKIFF_BK_QUORUM_RPC_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/kp_arena.h"
#include "protocol/kp_header.h"
#include "protocol/kp_wire.h"
#include "raft/raft.h"

#define BK_QUORUM_RPC_TOPIC "__cluster_metadata"
#define BK_QUORUM_RPC_CLIENT "skiff-raft"
#define BK_QUORUM_RPC_CLIENT_PREVOTE "skiff-raft-prevote"
#define BK_QUORUM_RPC_FETCH_VERSION 12
#define BK_QUORUM_RPC_ENTRY_OVERHEAD_BYTES 96   /* batch header + record framing, upper bound */

/* Kafka API key and version used for a raft message type. */
int16_t bk_quorum_rpc_api_key(raft_msg_type_t t);
int16_t bk_quorum_rpc_api_version(raft_msg_type_t t);

/* Encodes request `m` as a whole frame (4-byte size included) with
 * correlation id `corr`. *out is malloc'd (caller frees). */
KP_MUST_CHECK int bk_quorum_rpc_encode_request(const raft_msg_t *m, int32_t corr, const char *cluster_id,
                                         uint8_t **out, size_t *out_len);

/* As bk_quorum_rpc_encode_request for a Fetch, with Fetch's MaxWaitMs set: how
 * long the leader may hold the request when it has nothing new (quorum_hold.h;
 * bk_quorum_rpc_encode_request sends 0, never hold). Negative is sent as 0. */
KP_MUST_CHECK int bk_quorum_rpc_encode_fetch(const raft_msg_t *m, int32_t corr, const char *cluster_id,
                                       int32_t max_wait_ms, uint8_t **out, size_t *out_len);

/* Decodes a request frame (bytes after the size) addressed to `self_id`.
 * h gets the header; a raft RPC fills *m and returns KP_OK. An API that is
 * not a raft RPC returns KP_ERR_UNSUPPORTED with h set (the caller may serve
 * it). Slices point into frame; arrays live in a. */
KP_MUST_CHECK int bk_quorum_rpc_decode_request(const uint8_t *frame, size_t len, int32_t self_id, kp_arena_t *a,
                                         kp_request_header_t *h, raft_msg_t *m);
/* As bk_quorum_rpc_decode_request; *max_wait_ms gets a Fetch's MaxWaitMs (negative
 * read as 0) and 0 for every other request. */
KP_MUST_CHECK int bk_quorum_rpc_decode_request_wait(const uint8_t *frame, size_t len, int32_t self_id, kp_arena_t *a,
                                              kp_request_header_t *h, raft_msg_t *m, int32_t *max_wait_ms);

/* Encodes response `m` as the answer to the request whose header is h
 * (whole frame, size included; *out malloc'd). */
KP_MUST_CHECK int bk_quorum_rpc_encode_response(const raft_msg_t *m, const kp_request_header_t *h,
                                          uint8_t **out, size_t *out_len);

/* Decodes a response frame (bytes after the size) that answers request
 * `req` (as it was sent) into *m. Entries and snapshot data point into
 * frame; the entry array lives in a. *corr gets the correlation id. */
KP_MUST_CHECK int bk_quorum_rpc_decode_response(const raft_msg_t *req, const uint8_t *frame, size_t len,
                                          kp_arena_t *a, int32_t *corr, raft_msg_t *m);

/* Appends entries[0..n) as batches to a malloc'd buffer (*buf, *len, *cap
 * grow; start with NULL/0/0). */
KP_MUST_CHECK int bk_quorum_rpc_entries_encode(const raft_entry_t *e, size_t n, uint8_t **buf, size_t *len,
                                         size_t *cap);

/* Decodes back-to-back batches into entries (array in a, data pointing
 * into bytes). A batch must hold exactly one record, uncompressed, with a
 * valid CRC; a control batch must be a LeaderChange. */
KP_MUST_CHECK int bk_quorum_rpc_entries_decode(const uint8_t *bytes, size_t len, kp_arena_t *a,
                                         raft_entry_t **out, uint32_t *n);

#endif
