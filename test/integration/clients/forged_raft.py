"""Forged raft requests against controller ports, as any TCP client could
send them (issue 16, finding 1): Vote (API 52, v0, flexible) and
BeginQuorumEpoch (API 53, v0, not flexible) frames built by hand from the
schemas in shared/reference/kafka-protocol/messages/, naming voter ids that
are not the sender, epochs up to INT32_MAX, another cluster id, no cluster
id, a non-voter id.

usage: forged_raft.py CLUSTER_ID VOTERS PORT...
  VOTERS: comma list of voter ids, PORT: controller ports in voter order.
Prints one "PASS what" / "FAIL what: why" line per expectation (the
protocol of sk_check_lines) and "EPOCH <node> <epoch>" with the epoch each
node answered before the attack.
"""
import socket
import struct
import sys

from kwire import Rd, cstr, recv_exact, uvarint

INT32_MAX = 2**31 - 1
TOPIC = b"__cluster_metadata"
ERR_NONE, ERR_INVALID_REQUEST, ERR_INCONSISTENT_CLUSTER_ID = 0, 42, 104


def frame(key, ver, client, body, flexible):
    hdr = struct.pack(">hhih", key, ver, 11, len(client)) + client
    if flexible:
        hdr += b"\x00"   # request header v2: no tagged fields
    req = hdr + body
    return struct.pack(">i", len(req)) + req


def exchange(port, data, timeout_s=5.0):
    """Sends one frame; returns the response body (after the correlation id)
    or None when the node closed the connection without answering."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
    try:
        s.sendall(data)
        head = recv_exact(s, 4)
        if head is None:
            return None
        body = recv_exact(s, struct.unpack(">i", head)[0])
    except (ConnectionResetError, socket.timeout):
        return None
    finally:
        s.close()
    if body is None or struct.unpack(">i", body[:4])[0] != 11:
        return None
    return body[4:]


def vote(port, cluster_id, candidate, epoch, prevote=False):
    """Vote v0: ClusterId (compact nullable), Topics[TopicName, Partitions[
    PartitionIndex, CandidateEpoch, CandidateId, LastOffsetEpoch,
    LastOffset]]; claims a log newer than anyone's."""
    cid = b"\x00" if cluster_id is None else cstr(cluster_id.encode())
    part = struct.pack(">iiiiq", 0, epoch, candidate, INT32_MAX if epoch == INT32_MAX else epoch, 1 << 40)
    body = (cid + uvarint(2) + cstr(TOPIC) + uvarint(2) + part + b"\x00" + b"\x00" + b"\x00")
    client = b"skiff-raft-prevote" if prevote else b"attacker"
    raw = exchange(port, frame(52, 0, client, body, True))
    if raw is None:
        return None
    r = Rd(raw)
    r.tags()   # response header v1
    top = r.i16()
    out = {"top": top}
    for _ in range(r.count()):
        r.s()
        for _ in range(r.count()):
            r.i32()
            out["error"] = r.i16()
            out["leader"] = r.i32()
            out["epoch"] = r.i32()
            out["granted"] = r.i8() != 0
            r.tags()
        r.tags()
    return out


def begin_epoch(port, cluster_id, leader, epoch):
    """BeginQuorumEpoch v0 (not flexible): ClusterId (nullable string),
    Topics[TopicName, Partitions[PartitionIndex, LeaderId, LeaderEpoch]]."""
    cid = struct.pack(">h", -1) if cluster_id is None else struct.pack(">h", len(cluster_id)) + cluster_id.encode()
    body = (cid + struct.pack(">i", 1) + struct.pack(">h", len(TOPIC)) + TOPIC + struct.pack(">i", 1) +
            struct.pack(">iii", 0, leader, epoch))
    raw = exchange(port, frame(53, 0, b"attacker", body, False))
    if raw is None:
        return None
    r = Rd(raw)
    out = {"top": r.i16()}
    for _ in range(r.count(False)):
        r.string(False)
        for _ in range(r.count(False)):
            r.i32()
            out["error"] = r.i16()
            out["leader"] = r.i32()
            out["epoch"] = r.i32()
    return out


def check(what, ok, why=""):
    print(("PASS %s" % what) if ok else ("FAIL %s: %s" % (what, why)), flush=True)


def main():
    cluster_id, voters, ports = sys.argv[1], [int(v) for v in sys.argv[2].split(",")], [int(p) for p in sys.argv[3:]]
    for node, port in zip(voters, ports):
        other = next(v for v in voters if v != node)
        # the node's epoch now, from its answer to a harmless request
        probe = vote(port, cluster_id, other, 0)
        if probe is None or "epoch" not in probe:
            check("node %d answers a Vote for epoch 0" % node, False, "no answer")
            continue
        e = probe["epoch"]
        print("EPOCH %d %d" % (node, e), flush=True)
        for ep in (INT32_MAX, INT32_MAX - 1, e + 5000):
            a = vote(port, cluster_id, other, ep)
            check("node %d: Vote from %d for epoch %d refused (INVALID_REQUEST), its epoch kept" % (node, other, ep),
                  a is not None and not a["granted"] and a["error"] == ERR_INVALID_REQUEST and a["epoch"] == e,
                  repr(a))
        for ep in (e + 1, e + 3):
            for pre in (False, True):
                a = vote(port, cluster_id, other, ep, pre)
                check("node %d: %s from %d for epoch %d while a leader is alive: not granted, epoch kept" %
                      (node, "pre-vote" if pre else "Vote", other, ep),
                      a is not None and not a["granted"] and a["epoch"] == e and a["leader"] >= 0, repr(a))
        for cid, name in ((cluster_id + "x", "another cluster id"), (None, "a null cluster id")):
            a = vote(port, cid, other, e + 1)
            check("node %d: Vote with %s answered INCONSISTENT_CLUSTER_ID" % (node, name),
                  a is not None and not a["granted"] and a["top"] == ERR_INCONSISTENT_CLUSTER_ID, repr(a))
        a = vote(port, cluster_id, 99, e + 1)
        check("node %d: Vote from non-voter 99 not granted" % node, a is None or not a["granted"], repr(a))
        for ep in (INT32_MAX, e + 1):
            a = begin_epoch(port, cluster_id, other, ep)
            check("node %d: BeginQuorumEpoch naming %d for epoch %d leaves its epoch at %d" % (node, other, ep, e),
                  a is not None and a["epoch"] == e, repr(a))
        a = begin_epoch(port, cluster_id + "x", other, e + 1)
        check("node %d: BeginQuorumEpoch of another cluster answered INCONSISTENT_CLUSTER_ID" % node,
              a is not None and a["top"] == ERR_INCONSISTENT_CLUSTER_ID, repr(a))


if __name__ == "__main__":
    main()
