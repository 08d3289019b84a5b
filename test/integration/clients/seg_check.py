#!/usr/bin/python3
"""Producer and reader for the segment/index tests (confluent-kafka;
partition 0; the consumer checks record CRCs, librdkafka's check.crcs).

  seg_check.py produce BOOT TOPIC FIRST N SIZE TS0
      acks=all; record i (FIRST <= i < FIRST+N) has value "v%07d-" % i
      padded with a filler derived from i to SIZE bytes and timestamp
      TS0 + i * 1000. One record per produce request (linger 0, one in
      flight) so that every record is its own batch. Exit 1 if any failed.
  seg_check.py check BOOT TOPIC N SIZE TS0 STEP
      for every STEP-th record i < N (and the last): a fetch at offset i
      returns record i with its value and timestamp; offsets_for_times(ts of
      record i) answers i, and (ts of record i) - 1 answers i too. Prints
      PASS / FAIL lines (test/integration/lib.sh sk_check_lines).
"""
import sys

from confluent_kafka import Consumer, Producer, TopicPartition


def value_of(i, size):
    head = b"v%07d-" % i
    fill = bytes((i * 7 + j) % 26 + 97 for j in range(max(0, size - len(head))))
    return head + fill


def produce(boot, topic, first, n, size, ts0):
    p = Producer({"bootstrap.servers": boot, "acks": "all", "linger.ms": 0,
                  "max.in.flight.requests.per.connection": 1,
                  "message.max.bytes": max(1000000, size + 1000)})
    errors = []

    def cb(err, msg):
        if err is not None:
            errors.append(str(err))
    for i in range(first, first + n):
        p.produce(topic, value_of(i, size), partition=0, timestamp=ts0 + i * 1000, on_delivery=cb)
        p.flush(30)  # one record per request: one batch per record
    left = p.flush(30)
    if errors or left:
        print("produce: %d errors (%s), %d unanswered" % (len(errors), errors[:3], left))
        return 1
    return 0


def check(boot, topic, n, size, ts0, step):
    c = Consumer({"bootstrap.servers": boot, "group.id": "seg-check", "enable.auto.commit": False,
                  "check.crcs": True, "fetch.wait.max.ms": 10, "fetch.max.bytes": max(1048576, 2 * size),
                  "max.partition.fetch.bytes": max(1048576, 2 * size)})
    idx = sorted(set(list(range(0, n, step)) + [n - 1]))
    bad_read = []
    for i in idx:
        c.assign([TopicPartition(topic, 0, i)])
        got = None
        for _ in range(50):
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                got = "error %s" % m.error()
                break
            got = m
            break
        if got is None or isinstance(got, str):
            bad_read.append("%d: %s" % (i, got))
            continue
        if got.offset() != i or got.value() != value_of(i, size) or got.timestamp()[1] != ts0 + i * 1000:
            bad_read.append("%d: offset %d ts %s value %r" % (i, got.offset(), got.timestamp(), got.value()[:12]))
    print(("FAIL read by offset: %s" % bad_read[:3]) if bad_read else
          "PASS read by offset (%d offsets)" % len(idx))
    bad_ts = []
    for i in idx:
        for ts in (ts0 + i * 1000, ts0 + i * 1000 - 1):
            r = c.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=10)
            if r[0].error or r[0].offset != i:
                bad_ts.append("ts %d -> %s (want %d)" % (ts, r[0].offset if not r[0].error else r[0].error, i))
    print(("FAIL lookup by timestamp: %s" % bad_ts[:3]) if bad_ts else
          "PASS lookup by timestamp (%d timestamps)" % (2 * len(idx)))
    c.close()
    return 0


def main(argv):
    if len(argv) == 8 and argv[1] == "produce":
        return produce(argv[2], argv[3], int(argv[4]), int(argv[5]), int(argv[6]), int(argv[7]))
    if len(argv) == 8 and argv[1] == "check":
        return check(argv[2], argv[3], int(argv[4]), int(argv[5]), int(argv[6]), int(argv[7]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
