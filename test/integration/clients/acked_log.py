#!/usr/bin/python3
"""Acknowledged-message bookkeeping for crash tests (confluent-kafka).

  acked_log.py produce BOOT TOPIC PARTS FIRST_ID ACKFILE [flush]
      idempotent acks=all producer; value "m%09d" % id, partition id % PARTS,
      ids from FIRST_ID up. Appends "id partition offset" to ACKFILE for
      every delivery the broker acknowledged, flushed at once. Runs until
      SIGTERM (or 2,000,000 messages), then exits without waiting; with
      "flush" it first waits (up to 60 s) for every message to be answered
      and prints "UNDELIVERED n" and "ERRORS n" (failed deliveries).
  acked_log.py consume BOOT TOPIC PARTS OUTFILE
      reads every partition from offset 0 to its high watermark and writes
      "id partition offset" per record.
  acked_log.py verify ACKFILE OUTFILE
      every acknowledged id is in OUTFILE at the acknowledged partition and
      offset, once; prints PASS/FAIL lines; exit 1 on any failure.
"""
import os
import signal
import sys
import time

MAX_MESSAGES = 2_000_000
DEADLINE_S = 60


def produce(boot, topic, parts, first, ackfile, flush):
    from confluent_kafka import Producer
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    out = open(ackfile, "a")
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            out.write("%d %d %d\n" % (int(msg.value()[1:]), msg.partition(), msg.offset()))
            out.flush()

    p = Producer({"bootstrap.servers": boot, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 5, "batch.num.messages": 500,
                  "message.timeout.ms": 30000})
    i = first
    while not stop and i < first + MAX_MESSAGES:
        try:
            p.produce(topic, value=b"m%09d" % i, partition=i % parts, on_delivery=on_delivery)
            i += 1
        except BufferError:
            p.poll(0.01)
        p.poll(0)
    if flush:
        left = p.flush(DEADLINE_S)
        print("UNDELIVERED %d" % left)
        print("ERRORS %d%s" % (len(errors), " (first: %s)" % errors[0] if errors else ""), flush=True)
    out.close()
    os._exit(0)   # no flush: what was not acknowledged stays unacknowledged


def consume(boot, topic, parts, outfile):
    from confluent_kafka import Consumer, KafkaError, TopicPartition
    c = Consumer({"bootstrap.servers": boot, "group.id": "acked-log-check",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    ends = {q: c.get_watermark_offsets(TopicPartition(topic, q), timeout=10)[1]
            for q in range(parts)}
    c.assign([TopicPartition(topic, q, 0) for q in range(parts)])
    done = {q for q in range(parts) if ends[q] == 0}
    t_end = time.time() + DEADLINE_S
    with open(outfile, "w") as out:
        while len(done) < parts and time.time() < t_end:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    if m.offset() >= ends[m.partition()]:
                        done.add(m.partition())
                    continue
                sys.exit("consumer error: %s" % m.error())
            v = m.value()
            if v[:1] == b"m" and v[1:].isdigit():   # other writers' records are not ours
                out.write("%d %d %d\n" % (int(v[1:]), m.partition(), m.offset()))
    c.close()
    if len(done) < parts:
        sys.exit("did not reach the high watermark of partitions %r" %
                 sorted(set(range(parts)) - done))


def verify(ackfile, outfile):
    acked = {}
    for line in open(ackfile):
        i, q, o = map(int, line.split())
        acked[i] = (q, o)
    seen = {}
    dups = 0
    for line in open(outfile):
        i, q, o = map(int, line.split())
        dups += i in seen
        seen[i] = (q, o)
    lost = [i for i in acked if i not in seen]
    moved = [i for i in acked if i in seen and seen[i] != acked[i]]
    fails = 0
    for name, why in (
            ("some messages were acknowledged (%d)" % len(acked), None if acked else "none"),
            ("every acknowledged message is there", "%d lost, e.g. id %d" % (len(lost), min(lost)) if lost else None),
            ("each at its acknowledged offset", "%d moved, e.g. id %d %r -> %r" % (
                len(moved), moved[0], acked[moved[0]], seen[moved[0]]) if moved else None),
            ("no message twice", "%d duplicates" % dups if dups else None)):
        print(("PASS %s" % name) if why is None else ("FAIL %s: %s" % (name, why)), flush=True)
        fails += why is not None
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "produce":
        produce(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6],
                sys.argv[7:] == ["flush"])
    elif mode == "consume":
        consume(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    elif mode == "verify":
        verify(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
