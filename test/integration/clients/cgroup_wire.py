"""Raw KIP-848 frames for the consumer group tests: ConsumerGroupHeartbeat
(68, v0-1), ConsumerGroupDescribe (69, v0), OffsetCommit v9 and ListGroups
v5, encoded from the reference schemas and decoded with kwire's
bounds-checked reader (a short or overlong answer raises ValueError)."""
import struct
import uuid

import kwire
from kwire import cstr, uvarint

HB, DESCRIBE, COMMIT, LIST_GROUPS = 68, 69, 8, 16


def nstr(s):
    """A compact nullable string (None = null)."""
    return b"\x00" if s is None else cstr(s.encode() if isinstance(s, str) else s)


def carr(items):
    """A compact array of already-encoded items (None = null)."""
    return b"\x00" if items is None else uvarint(len(items) + 1) + b"".join(items)


def hb_body(ver, group, member="", epoch=0, instance=None, rack=None, rebalance_ms=-1, topics=None,
            regex=None, assignor=None, owned=None):
    """owned: None (null) or {topic_id bytes: [partitions]}."""
    b = cstr(group.encode()) + cstr(member.encode()) + struct.pack(">i", epoch)
    b += nstr(instance) + nstr(rack) + struct.pack(">i", rebalance_ms)
    b += carr(None if topics is None else [cstr(t.encode()) for t in topics])
    if ver >= 1:
        b += nstr(regex)
    b += nstr(assignor)
    if owned is None:
        b += b"\x00"
    else:
        b += carr([tid + carr([struct.pack(">i", p) for p in sorted(ps)]) + b"\x00"
                   for tid, ps in sorted(owned.items())])
    return b + b"\x00"


def hb_answer(r):
    a = {"throttle": r.i32(), "error": r.i16(), "message": r.s(), "member_id": r.s(),
         "epoch": r.i32(), "interval": r.i32(), "assignment": None}
    present = r.i8()
    if present >= 0:
        tps = {}
        for _ in range(max(r.count(), 0)):
            tid = r.take(16)
            tps[tid] = r.arr(r.i32)
            r.tags()
        r.tags()
        a["assignment"] = tps
    r.tags()
    if r.i != len(r.b):
        raise ValueError("bytes after the heartbeat answer")
    return a


def heartbeat(addr, ver=1, **kw):
    return hb_answer(kwire.call(addr, HB, ver, hb_body(ver, **kw), client=b"cgp-test"))


def _assignment(r):
    tps = {}
    for _ in range(max(r.count(), 0)):
        tid = r.take(16)
        name = r.s()
        tps[(tid, name)] = r.arr(r.i32)
        r.tags()
    r.tags()
    return tps


def describe(addr, groups, ver=0):
    body = carr([cstr(g.encode()) for g in groups]) + b"\x00" + b"\x00"
    r = kwire.call(addr, DESCRIBE, ver, body)
    r.i32()
    out = []
    for _ in range(max(r.count(), 0)):
        g = {"error": r.i16(), "message": r.s(), "group_id": r.s(), "state": r.s(), "epoch": r.i32(),
             "assignment_epoch": r.i32(), "assignor": r.s(), "members": []}
        for _ in range(max(r.count(), 0)):
            m = {"member_id": r.s(), "instance_id": r.s(), "rack_id": r.s(), "epoch": r.i32(),
                 "client_id": r.s(), "client_host": r.s(), "topics": r.arr(r.s), "regex": r.s()}
            m["assignment"] = _assignment(r)
            m["target"] = _assignment(r)
            r.tags()
            g["members"].append(m)
        g["authorized_operations"] = r.i32()
        r.tags()
        out.append(g)
    r.tags()
    if r.i != len(r.b):
        raise ValueError("bytes after the describe answer")
    return out


def commit_v9(addr, group, member, epoch, topic, partition, offset):
    """OffsetCommit v9 (member epoch in GenerationIdOrMemberEpoch): the
    partition's error code."""
    body = cstr(group.encode()) + struct.pack(">i", epoch) + cstr(member.encode()) + b"\x00"
    body += carr([cstr(topic.encode()) + carr([struct.pack(">iqi", partition, offset, -1) + cstr(b"") + b"\x00"])
                  + b"\x00"])
    body += b"\x00"
    r = kwire.call(addr, COMMIT, 9, body)
    r.i32()
    errs = []
    for _ in range(max(r.count(), 0)):
        r.s()
        for _ in range(max(r.count(), 0)):
            r.i32()
            errs.append(r.i16())
            r.tags()
        r.tags()
    return errs[0]


def list_groups_v5(addr, types):
    body = carr([]) + carr([cstr(t.encode()) for t in types]) + b"\x00"
    r = kwire.call(addr, LIST_GROUPS, 5, body)
    r.i32()
    err = r.i16()
    groups = []
    for _ in range(max(r.count(), 0)):
        gid, ptype, state, gtype = r.s(), r.s(), r.s(), r.s()
        r.tags()
        groups.append((gid, ptype, state, gtype))
    return err, groups


def find_coordinator(addr, group, wait_s=20.0):
    """FindCoordinator v0 until it names a node (the first lookup creates
    __consumer_offsets, as a client's does): the error code at the end."""
    import time
    deadline = time.time() + wait_s
    while True:
        body = struct.pack(">h", len(group)) + group.encode()
        r = kwire.call(addr, 10, 0, body, flexible=False)
        err = r.i16()
        if err == 0 or time.time() > deadline:
            return err
        time.sleep(0.1)


def coordinator_node(addr, group):
    """FindCoordinator v0: (error, node id)."""
    body = struct.pack(">h", len(group)) + group.encode()
    r = kwire.call(addr, 10, 0, body, flexible=False)
    err = r.i16()
    return err, r.i32()


if __name__ == "__main__":
    # command line for the shell tests: coordinator BOOT GROUP | describe BOOT GROUP
    import json
    import sys
    if sys.argv[1] == "coordinator":
        print(coordinator_node(sys.argv[2], sys.argv[3])[1])
    elif sys.argv[1] == "join-error":
        # join-error BOOT GROUP TOPIC: the error code of a fresh member's first heartbeat
        a = heartbeat(sys.argv[2], group=sys.argv[3], topics=[sys.argv[4]], owned={})
        print(a["error"])
        if a["error"] == 0:   # leave again (epoch -1) so the group is as before
            heartbeat(sys.argv[2], group=sys.argv[3], member=a["member_id"], epoch=-1)
    elif sys.argv[1] == "describe":
        g = describe(sys.argv[2], [sys.argv[3]])[0]
        print(json.dumps({"error": g["error"], "state": g["state"], "epoch": g["epoch"],
                          "members": sorted((m["member_id"], m["epoch"]) for m in g["members"])}))


def uuid_str(b):
    return str(uuid.UUID(bytes=b))
