#!/usr/bin/env python3
"""KIP-890 part 1 across brokers (issue 20): a transactional batch sent to a
partition leader that is NOT the transaction's coordinator is appended only
when that coordinator has the transaction ongoing with that partition (the
leader asks it with AddPartitionsToTxn v4 VerifyOnly). Raw frames against a
3-node cluster: Produce v7 with hand-built transactional batches.

usage: txn_verify_raw.py BOOT(comma list)
Prints "PASS what" / "FAIL what: why"; exit 1 on a FAIL."""
import socket
import struct
import sys
import time

from kwire import Rd, call, cstr, recv_exact, uvarint

BOOT = sys.argv[1].split(",")
TOPIC = "tvv"
TID = "verify-me"
fails = 0
INVALID_TXN_STATE, INVALID_PRODUCER_EPOCH = 48, 47


def check(what, ok, why=""):
    global fails
    if ok:
        print("PASS " + what)
    else:
        fails += 1
        print("FAIL %s: %s" % (what, why))
    sys.stdout.flush()


def crc32c(data, _t=[]):
    if not _t:
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            _t.append(c)
    c = 0xFFFFFFFF
    for b in data:
        c = _t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def zz(n):
    z = (n << 1) ^ (n >> 63)
    out = b""
    while True:
        if z < 0x80:
            return out + bytes([z])
        out += bytes([(z & 0x7F) | 0x80])
        z >>= 7


def txn_batch(pid, epoch, seq, values):
    recs = b""
    for i, v in enumerate(values):
        body = b"\x00" + zz(0) + zz(i) + zz(1) + b"k" + zz(len(v)) + v + zz(0)
        recs += zz(len(body)) + body
    ts = int(time.time() * 1000)
    after = struct.pack(">hiqqqhii", 0x10, len(values) - 1, ts, ts, pid, epoch, seq, len(values)) + recs
    tail = struct.pack(">ibI", -1, 2, crc32c(after)) + after
    return struct.pack(">qi", 0, len(tail)) + tail


def node_addr(nodes, nid):
    return "%s:%d" % nodes[nid]


def metadata(addr):
    """v1 (not flexible): {node: (host, port)}, {partition: leader} of TOPIC."""
    b = struct.pack(">i", 1) + struct.pack(">h", len(TOPIC)) + TOPIC.encode()
    r = call(addr, 3, 1, b, flexible=False)
    nodes = {}
    for _ in range(r.i32()):
        nid = r.i32(); host = r.string(False); port = r.i32(); r.string(False)
        nodes[nid] = (host, port)
    r.i32()
    leaders = {}
    for _ in range(r.i32()):
        r.i16(); r.string(False); r.i8()
        for _ in range(r.i32()):
            r.i16(); p = r.i32(); leader = r.i32()
            [r.i32() for _ in range(r.i32())]
            [r.i32() for _ in range(r.i32())]
            leaders[p] = leader
    return nodes, leaders


def find_coordinator(addr):
    b = struct.pack(">h", len(TID)) + TID.encode() + b"\x01"
    r = call(addr, 10, 1, b, flexible=False)
    r.i32()
    err = r.i16(); r.string(False); nid = r.i32()
    return err, nid


def init_pid(addr):
    b = cstr(TID.encode()) + struct.pack(">iqh", 60000, -1, -1) + b"\x00"
    r = call(addr, 22, 3, b)
    r.i32()
    return r.i16(), r.i64(), r.i16()


def add_partition(addr, pid, epoch, p):
    b = (cstr(TID.encode()) + struct.pack(">qh", pid, epoch) + uvarint(2) + cstr(TOPIC.encode()) + uvarint(2) +
         struct.pack(">i", p) + b"\x00" + b"\x00")
    r = call(addr, 24, 3, b)
    r.i32()
    r.count(); r.s(); r.count(); r.i32()
    return r.i16()


def end_txn(addr, pid, epoch, commit):
    b = cstr(TID.encode()) + struct.pack(">qh", pid, epoch) + (b"\x01" if commit else b"\x00") + b"\x00"
    r = call(addr, 26, 3, b)
    r.i32()
    return r.i16()


def produce(addr, p, records):
    b = (struct.pack(">h", len(TID)) + TID.encode() + struct.pack(">hi", -1, 15000) + struct.pack(">i", 1) +
         struct.pack(">h", len(TOPIC)) + TOPIC.encode() + struct.pack(">i", 1) +
         struct.pack(">ii", p, len(records)) + records)
    r = call(addr, 0, 7, b, flexible=False)
    r.i32(); r.string(False); r.i32()
    r.i32()
    return r.i16(), r.i64()


def produce_v12_frame(tid, corr, p, records):
    """Produce v12 (flexible; transactions v2: the leader adds the partition
    to the transaction itself), one partition of TOPIC, header v2."""
    body = (cstr(tid.encode()) + struct.pack(">hi", -1, 15000) + uvarint(2) + cstr(TOPIC.encode()) + uvarint(2) +
            struct.pack(">i", p) + uvarint(len(records) + 1) + records + b"\x00" + b"\x00" + b"\x00")
    req = struct.pack(">hhih", 0, 12, corr, 4) + b"test" + b"\x00" + body
    return struct.pack(">i", len(req)) + req


def produce_pipelined(addr, tid, p, batches):
    """The batches as Produce v12 requests written back to back on one
    connection before any answer is read (as a client with several requests
    in flight does); [(correlation id, error, base offset)] in answer order."""
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=30)
    out = []
    try:
        s.sendall(b"".join(produce_v12_frame(tid, 21 + i, p, b) for i, b in enumerate(batches)))
        for _ in batches:
            size = recv_exact(s, 4)
            ans = recv_exact(s, struct.unpack(">i", size)[0]) if size else None
            if ans is None:
                raise ValueError("connection closed")
            r = Rd(ans)
            corr = r.i32()
            r.tags()
            r.count(); r.s(); r.count()
            r.i32()
            out.append((corr, r.i16(), r.i64()))
    finally:
        s.close()
    return out


def latest(addr, p):
    b = struct.pack(">ii", -1, 1) + struct.pack(">h", len(TOPIC)) + TOPIC.encode() + struct.pack(">iiq", 1, p, -1)
    r = call(addr, 2, 1, b, flexible=False)
    r.i32(); r.string(False); r.i32(); r.i32()
    err = r.i16(); r.i64()
    return r.i64() if err == 0 else -1


def until(fn, ok, secs=20):
    deadline = time.time() + secs
    while True:
        x = fn()
        if ok(x) or time.time() > deadline:
            return x
        time.sleep(0.2)


def main():
    global TID
    from kafka.admin import KafkaAdminClient, NewTopic
    adm = KafkaAdminClient(bootstrap_servers=BOOT, request_timeout_ms=20000)
    adm.create_topics([NewTopic(TOPIC, 3, 1)])
    adm.close()
    nodes, leaders = until(lambda: metadata(BOOT[0]), lambda x: len(x[1]) == 3 and min(x[1].values()) >= 0)
    err, coord = until(lambda: find_coordinator(BOOT[0]), lambda x: x[0] == 0, 40)
    check("FindCoordinator for %s: node %d" % (TID, coord), err == 0, str(err))
    others = [p for p, l in leaders.items() if l != coord and l in nodes]
    check("a partition of %s led by another node than the coordinator" % TOPIC, len(others) > 0, str(leaders))
    if fails:
        return 1
    p = others[0]
    leader = node_addr(nodes, leaders[p])
    caddr = node_addr(nodes, coord)
    err, pid, epoch = until(lambda: init_pid(caddr), lambda x: x[0] == 0, 30)
    check("InitProducerId at the coordinator", err == 0, str(err))

    err, _ = produce(leader, p, txn_batch(pid, epoch, 0, [b"hanging"]))
    check("a transactional batch before AddPartitionsToTxn is refused: INVALID_TXN_STATE (no hanging transaction)",
          err == INVALID_TXN_STATE, str(err))
    check("nothing was appended (log end offset 0)", latest(leader, p) == 0, str(latest(leader, p)))
    check("AddPartitionsToTxn at the coordinator", add_partition(caddr, pid, epoch, p) == 0)
    err, base = produce(leader, p, txn_batch(pid, epoch, 0, [b"a", b"b"]))
    check("after AddPartitionsToTxn the batch is appended at offset 0", err == 0 and base == 0, str((err, base)))
    err, base = produce(leader, p, txn_batch(pid, epoch, 2, [b"c"]))
    check("a second batch of the same transaction is appended", err == 0 and base == 2, str((err, base)))
    check("EndTxn commit", until(lambda: end_txn(caddr, pid, epoch, True), lambda e: e != 51) == 0)
    leo = until(lambda: latest(leader, p), lambda x: x == 4)
    check("the commit marker reached the leader (log end offset 4)", leo == 4, str(leo))
    err, _ = produce(leader, p, txn_batch(pid, epoch, 3, [b"late"]))
    check("a batch after the transaction ended, not added again: INVALID_TXN_STATE", err == INVALID_TXN_STATE, str(err))
    err2, pid2, epoch2 = until(lambda: init_pid(caddr), lambda x: x[0] == 0, 30)
    check("a second InitProducerId bumps the epoch", err2 == 0 and pid2 == pid and epoch2 == epoch + 1,
          str((err2, pid2, epoch2)))
    err, _ = produce(leader, p, txn_batch(pid, epoch, 3, [b"zombie"]))
    check("the fenced epoch's batch is refused: INVALID_PRODUCER_EPOCH", err == INVALID_PRODUCER_EPOCH, str(err))
    check("log end offset still 4", latest(leader, p) == 4, str(latest(leader, p)))

    # Transactions v2: a producer's first two batches of a transaction on a
    # partition, pipelined on one connection to a leader that is not the
    # coordinator. The first waits while the leader has the coordinator add
    # the partition; the second must be taken only after it (a producer
    # state without its predecessor answers it UNKNOWN_PRODUCER_ID /
    # OUT_OF_ORDER_SEQUENCE_NUMBER, after the first one's success: a client
    # cannot retry that).
    TID = "pipeline-me"
    err, coord2 = until(lambda: find_coordinator(BOOT[0]), lambda x: x[0] == 0, 40)
    others2 = [q for q, l in leaders.items() if l != coord2 and l in nodes]
    check("FindCoordinator for %s: node %d; a partition led by another node" % (TID, coord2),
          err == 0 and len(others2) > 0, str((err, leaders)))
    if fails:
        return 1
    q = others2[0]
    qleader = node_addr(nodes, leaders[q])
    err, pid2, epoch2 = until(lambda: init_pid(node_addr(nodes, coord2)), lambda x: x[0] == 0, 30)
    check("InitProducerId for %s" % TID, err == 0, str(err))
    leo0 = latest(qleader, q)
    got = produce_pipelined(qleader, TID, q, [txn_batch(pid2, epoch2, 0, [b"p0", b"p1"]),
                                              txn_batch(pid2, epoch2, 2, [b"p2"])])
    check("two pipelined Produce v12 of a new transaction: both appended, in order (%r)" % (got,),
          [g[:2] for g in got] == [(21, 0), (22, 0)] and got[1][2] == got[0][2] + 2, str(got))
    leo = latest(qleader, q)
    check("3 records more in the log (%d -> %d)" % (leo0, leo), leo == leo0 + 3, str(leo))
    return 1 if fails else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as ex:
        print("FAIL txn_verify_raw crashed: %r" % (ex,))
        sys.exit(1)
