#!/usr/bin/env python3
"""A transactional batch is never appended unverified (issue 19 review,
KIP-890 part 1) — raw frames against ONE node (it leads every partition and
coordinates every id):
 1. before __transaction_state exists nobody can verify: the batch gets the
    retriable NOT_ENOUGH_REPLICAS (Kafka's mapping of the coordinator's
    COORDINATOR_NOT_AVAILABLE for a produce) and nothing is appended;
 2. an idempotent (non-transactional) producer is not affected;
 3. once the topic exists, an id this node coordinates but never saw gets
    INVALID_TXN_STATE (the local core verifies as a remote one would);
 4. a real transaction (FindCoordinator, InitProducerId, AddPartitionsToTxn)
    still appends.
Before the fix 1 and 3 appended the batch (a hanging transaction: the LSO
stuck at it for ever).

usage: txn_unverified_raw.py BOOT
Prints "PASS what" / "FAIL what: why"; exit 1 on a FAIL."""
import sys

import txn_verify_raw as tv

BOOT = sys.argv[1].split(",")
tv.TOPIC = "tuv"
tv.TID = "never-seen"
NOT_ENOUGH_REPLICAS, INVALID_TXN_STATE = 19, 48
fails = 0


def check(what, ok, why=""):
    global fails
    if not ok:
        fails += 1
    tv.check(what, ok, why)


def main():
    from kafka.admin import KafkaAdminClient, NewTopic
    adm = KafkaAdminClient(bootstrap_servers=BOOT, request_timeout_ms=20000)
    adm.create_topics([NewTopic(tv.TOPIC, 1, 1)])
    adm.close()
    addr = BOOT[0]
    tv.until(lambda: tv.metadata(addr), lambda x: x[1].get(0, -1) >= 0)

    err, _ = tv.produce(addr, 0, tv.txn_batch(1000, 0, 0, [b"unverifiable"]))
    check("no __transaction_state: the transactional batch is refused, retriable NOT_ENOUGH_REPLICAS",
          err == NOT_ENOUGH_REPLICAS, str(err))
    check("nothing was appended (log end offset 0)", tv.latest(addr, 0) == 0, str(tv.latest(addr, 0)))

    from confluent_kafka import Producer
    got = []
    p = Producer({"bootstrap.servers": ",".join(BOOT), "enable.idempotence": True, "message.timeout.ms": 20000})
    p.produce(tv.TOPIC, b"idem", partition=0, on_delivery=lambda e, m: got.append((e, m.offset() if m else -1)))
    p.flush(25)
    check("an idempotent producer still appends (offset 0)", got == [(None, 0)], str(got))

    err, coord = tv.until(lambda: tv.find_coordinator(addr), lambda x: x[0] == 0, 40)
    check("FindCoordinator created __transaction_state (coordinator node %d)" % coord, err == 0, str(err))
    err, _ = tv.until(lambda: tv.produce(addr, 0, tv.txn_batch(1000, 0, 0, [b"unknown-id"])),
                      lambda x: x[0] != NOT_ENOUGH_REPLICAS, 30)
    check("an id this node coordinates but never saw: INVALID_TXN_STATE", err == INVALID_TXN_STATE, str(err))
    check("still only the idempotent record (log end offset 1)", tv.latest(addr, 0) == 1, str(tv.latest(addr, 0)))

    err, pid, epoch = tv.until(lambda: tv.init_pid(addr), lambda x: x[0] == 0, 30)
    check("InitProducerId", err == 0, str(err))
    check("AddPartitionsToTxn", tv.add_partition(addr, pid, epoch, 0) == 0)
    err, base = tv.produce(addr, 0, tv.txn_batch(pid, epoch, 0, [b"a"]))
    check("a verified transactional batch is appended at offset 1", err == 0 and base == 1, str((err, base)))
    check("EndTxn commit", tv.until(lambda: tv.end_txn(addr, pid, epoch, True), lambda e: e != 51) == 0)
    return 1 if fails else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as ex:
        print("FAIL txn_unverified_raw crashed: %r" % (ex,))
        sys.exit(1)
