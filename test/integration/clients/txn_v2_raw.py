#!/usr/bin/env python3
"""Raw frames for transactions v2 (KIP-890, issue 20) against one node:
AddPartitionsToTxn v4 and v5 (the broker-to-coordinator batch: VerifyOnly
and adding transactions, several transactions in one request, unknown
partitions, unknown id, wrong producer id / epoch) and EndTxn v5 (the epoch
bumped by every transaction, its retry, the other kind refused, the old
epoch fenced afterwards, a v4 EndTxn without the id/epoch fields). The
expected errors and epochs follow from what this script did.

usage: txn_v2_raw.py HOST:PORT
Prints "PASS what" / "FAIL what: why"; exit 1 on a FAIL."""
import struct
import sys
import time

from kwire import call, cstr, uvarint

ADDR = sys.argv[1]
fails = 0
TOPIC = "tv2"
NONE, UNKNOWN_TP, NOT_ATTEMPTED, INVALID_TXN_STATE, MAPPING, CONCURRENT, FENCED = 0, 3, 55, 48, 49, 51, 90


def check(what, ok, why=""):
    global fails
    if ok:
        print("PASS " + what)
    else:
        fails += 1
        print("FAIL %s: %s" % (what, why))
    sys.stdout.flush()


def find_coordinator(tid):
    b = struct.pack(">h", len(tid)) + tid.encode() + b"\x01"   # v1: key, key_type 1
    r = call(ADDR, 10, 1, b, flexible=False)
    r.i32()
    return r.i16()


def init_pid(tid):
    b = cstr(tid.encode()) + struct.pack(">iqh", 60000, -1, -1) + b"\x00"
    r = call(ADDR, 22, 3, b)
    r.i32()
    err, pid, epoch = r.i16(), r.i64(), r.i16()
    return err, pid, epoch


def topics_enc(topics):
    b = uvarint(len(topics) + 1)
    for name, parts in topics:
        b += cstr(name.encode()) + uvarint(len(parts) + 1) + b"".join(struct.pack(">i", p) for p in parts) + b"\x00"
    return b


def topics_dec(r):
    out = {}
    for _ in range(r.count()):
        name = r.s()
        for _ in range(r.count()):
            p, e = r.i32(), r.i16()
            r.tags()
            out[(name, p)] = e
        r.tags()
    return out


def add_batch(ver, txns):
    """txns: (id, pid, epoch, verify_only, [(topic, [parts])]) ->
    (top error, {id: {(topic, p): error}})"""
    b = uvarint(len(txns) + 1)
    for tid, pid, epoch, verify, topics in txns:
        b += cstr(tid.encode()) + struct.pack(">qh", pid, epoch) + (b"\x01" if verify else b"\x00")
        b += topics_enc(topics) + b"\x00"
    b += b"\x00"
    r = call(ADDR, 24, ver, b)
    r.i32()
    top = r.i16()
    res = {}
    for _ in range(r.count()):
        tid = r.s()
        res[tid] = topics_dec(r)
        r.tags()
    r.tags()
    if r.i != len(r.b):
        raise ValueError("trailing bytes in AddPartitionsToTxn v%d" % ver)
    return top, res


def add_v3(tid, pid, epoch, topics):
    b = cstr(tid.encode()) + struct.pack(">qh", pid, epoch) + topics_enc(topics) + b"\x00"
    r = call(ADDR, 24, 3, b)
    r.i32()
    res = topics_dec(r)
    r.tags()
    return res


def end_txn(ver, tid, pid, epoch, commit):
    b = cstr(tid.encode()) + struct.pack(">qh", pid, epoch) + (b"\x01" if commit else b"\x00") + b"\x00"
    r = call(ADDR, 26, ver, b)
    r.i32()
    err = r.i16()
    pe = (r.i64(), r.i16()) if ver >= 5 else None
    r.tags()
    if r.i != len(r.b):
        raise ValueError("trailing bytes in EndTxn v%d" % ver)
    return err, pe


def retry(fn, *args, until=lambda x: True, secs=20):
    deadline = time.time() + secs
    while True:
        x = fn(*args)
        if until(x) or time.time() > deadline:
            return x
        time.sleep(0.2)


def main():
    from kafka.admin import KafkaAdminClient, NewTopic
    adm = KafkaAdminClient(bootstrap_servers=ADDR, request_timeout_ms=20000)
    adm.create_topics([NewTopic(TOPIC, 2, 1)])
    adm.close()
    tid = "tv2-a"
    e = retry(find_coordinator, tid, until=lambda x: x == 0, secs=30)
    check("FindCoordinator for %s" % tid, e == 0, str(e))
    err, pid, epoch = retry(init_pid, tid, until=lambda x: x[0] == 0, secs=30)
    check("InitProducerId v3", err == 0 and pid >= 0 and epoch >= 0, str((err, pid, epoch)))

    # --- AddPartitionsToTxn v4/v5 -------------------------------------------
    top, res = add_batch(4, [(tid, pid, epoch, True, [(TOPIC, [0])])])
    check("v4 VerifyOnly before any add: INVALID_TXN_STATE (no transaction open)",
          top == 0 and res.get(tid) == {(TOPIC, 0): INVALID_TXN_STATE}, str((top, res)))
    top, res = add_batch(4, [(tid, pid, epoch, False, [(TOPIC, [0])]),
                             ("tv2-unknown-id", 12345, 0, False, [(TOPIC, [1])]),
                             ("tv2-b", 1, 0, False, [(TOPIC, [0]), ("no-such-topic", [0])])])
    check("v4 batch: the add of %s NONE" % tid, res.get(tid) == {(TOPIC, 0): NONE}, str(res))
    check("v4 batch: an unknown transactional id INVALID_PRODUCER_ID_MAPPING",
          res.get("tv2-unknown-id") == {(TOPIC, 1): MAPPING}, str(res))
    check("v4 batch: an unknown topic UNKNOWN_TOPIC_OR_PARTITION, the rest OPERATION_NOT_ATTEMPTED",
          res.get("tv2-b") == {(TOPIC, 0): NOT_ATTEMPTED, ("no-such-topic", 0): UNKNOWN_TP}, str(res))
    top, res = add_batch(5, [(tid, pid, epoch, True, [(TOPIC, [0, 1])])])
    check("v5 VerifyOnly: partition 0 (added) NONE, partition 1 (not added) INVALID_TXN_STATE",
          res.get(tid) == {(TOPIC, 0): NONE, (TOPIC, 1): INVALID_TXN_STATE}, str(res))
    top, res = add_batch(5, [(tid, pid, epoch + 1, True, [(TOPIC, [0])])])
    check("v5 VerifyOnly with another epoch: PRODUCER_FENCED", res.get(tid) == {(TOPIC, 0): FENCED}, str(res))
    top, res = add_batch(5, [(tid, pid + 1000, epoch, True, [(TOPIC, [0])])])
    check("v5 VerifyOnly with another producer id: INVALID_PRODUCER_ID_MAPPING", res.get(tid) == {(TOPIC, 0): MAPPING},
          str(res))
    top, res = add_batch(5, [])
    check("v5 with no transactions: NONE, empty", top == 0 and res == {}, str((top, res)))

    # --- EndTxn v5 -------------------------------------------------------------
    err, pe = end_txn(5, tid, pid, epoch, True)
    check("EndTxn v5 commit: NONE with the same producer id and epoch + 1",
          err == 0 and pe == (pid, epoch + 1), str((err, pe)))
    err, pe = retry(end_txn, 5, tid, pid, epoch, True, until=lambda x: x[0] != CONCURRENT)
    check("EndTxn v5 commit retried with the old epoch: NONE with the bumped epoch",
          err == 0 and pe == (pid, epoch + 1), str((err, pe)))
    err, pe = end_txn(5, tid, pid, epoch, False)
    check("EndTxn v5 abort retried after a commit: INVALID_TXN_STATE", err == INVALID_TXN_STATE, str((err, pe)))
    res = add_v3(tid, pid, epoch, [(TOPIC, [1])])
    check("AddPartitionsToTxn with the epoch before the bump: PRODUCER_FENCED", res == {(TOPIC, 1): FENCED}, str(res))
    res = retry(add_v3, tid, pid, epoch + 1, [(TOPIC, [1])], until=lambda x: x != {(TOPIC, 1): CONCURRENT})
    check("the next transaction with the bumped epoch: AddPartitionsToTxn NONE", res == {(TOPIC, 1): NONE}, str(res))
    top, res = add_batch(5, [(tid, pid, epoch + 1, True, [(TOPIC, [1])])])
    check("v5 VerifyOnly of the new transaction's partition: NONE", res.get(tid) == {(TOPIC, 1): NONE}, str(res))
    err, pe = end_txn(4, tid, pid, epoch + 1, False)
    check("EndTxn v4 abort: NONE, no epoch bump (v4 has no id/epoch fields)", err == 0 and pe is None, str(err))
    err, pe = retry(end_txn, 5, tid, pid, epoch + 1, False, until=lambda x: x[0] != CONCURRENT)
    check("EndTxn v5 abort retried after a v4 abort: NONE, epoch unchanged (v4 did not bump)",
          err == 0 and pe == (pid, epoch + 1), str((err, pe)))
    err, pe = end_txn(5, tid, pid, epoch, False)
    check("EndTxn v5 with a stale epoch after a v4 end: PRODUCER_FENCED", err == FENCED and pe == (-1, -1),
          str((err, pe)))
    err, pe = end_txn(5, tid, pid + 1000, epoch + 1, True)
    check("EndTxn v5 with another producer id: INVALID_PRODUCER_ID_MAPPING", err == MAPPING, str((err, pe)))
    # abort of a v5 transaction: epoch bumped too
    res = retry(add_v3, tid, pid, epoch + 1, [(TOPIC, [0])], until=lambda x: x != {(TOPIC, 0): CONCURRENT})
    err, pe = end_txn(5, tid, pid, epoch + 1, False)
    check("EndTxn v5 abort: NONE with epoch + 2", res == {(TOPIC, 0): NONE} and err == 0 and pe == (pid, epoch + 2),
          str((res, err, pe)))
    return 1 if fails else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as ex:
        print("FAIL txn_v2_raw crashed: %r" % (ex,))
        sys.exit(1)
