#!/usr/bin/python3
"""Sequence-number producer, full reader and checker for replication tests
(confluent-kafka; one partition, partition 0).

  repl_check.py produce BOOT TOPIC SECONDS RATE ACKFILE [FIRST]
      idempotent acks=all producer; value "s%09d" % id, ids FIRST,... (0) at
      about RATE per second for SECONDS, then waits up to 20 s for answers.
      Appends "id offset" to ACKFILE per acknowledged delivery (flushed at
      once). A fatal producer error (the broker lost what it acknowledged, or
      fenced us) is counted and a fresh producer continues with the next id.
      Last line on stdout: "SENT n ACKED n FAILED n FATAL n UNANSWERED n"
      (SENT: the next id; FAILED: delivery reports with an error).
  repl_check.py rawcut HOST:PORT TOPIC REQUESTS TIMEOUT_MS
      REQUESTS Produce v7 requests with acks=-1 straight to one node (no
      metadata, no retries), 10 records "c%09d" each; prints one line
      "ACKED n ERRORS code:count,... CLOSED n": what that node answered.
  repl_check.py consume BOOT TOPIC OUTFILE [SECONDS]
      reads partition 0 from offset 0 to its high watermark, writes "id offset"
      per record ("-1 offset" for a value that is not one of ours).
  repl_check.py verify SENT ACKFILE OUTFILE
      prints the counts and PASS/FAIL lines; exit 1 on any failure:
      every acknowledged id read exactly once, at its acknowledged offset,
      acknowledged ids in increasing order, no id read twice, nothing read
      that was never sent.
"""
import signal
import sys
import time

FLUSH_S = 20


def _controller(boot):
    """host:port of the active controller as Metadata names it, else boot.
    skiff serves InitProducerId only on the controller (a PID block is a
    metadata commit), and librdkafka asks the broker it talks to first."""
    from confluent_kafka import Producer
    try:
        md = Producer({"bootstrap.servers": boot, "socket.timeout.ms": 3000}).list_topics(timeout=5)
        b = md.brokers.get(md.controller_id)
        if b is not None:
            return "%s:%d" % (b.host, b.port)
    except Exception as e:   # no metadata now: fall back to the list given
        print("controller lookup: %s" % e, flush=True)
    return boot


def _producer(boot):
    from confluent_kafka import Producer
    return Producer({"bootstrap.servers": _controller(boot), "enable.idempotence": True, "acks": "all",
                     "linger.ms": 5, "message.timeout.ms": 15000, "request.timeout.ms": 5000,
                     "retry.backoff.ms": 100, "reconnect.backoff.max.ms": 500,
                     "topic.metadata.refresh.interval.ms": 1000, "socket.timeout.ms": 5000})


def produce(boot, topic, seconds, rate, ackfile, first=0):
    from confluent_kafka import KafkaException
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    out = open(ackfile, "a")
    st = {"acked": 0, "failed": 0, "fatal": 0, "first_err": None}

    def on_delivery(err, msg):
        if err is not None:
            st["failed"] += 1
            st["first_err"] = st["first_err"] or str(err)
            if err.fatal():
                st["fatal_seen"] = True
        else:
            st["acked"] += 1
            out.write("%d %d\n" % (int(msg.value()[1:]), msg.offset()))
            out.flush()

    p = _producer(boot)
    i = first
    t0 = time.time()
    t_end = t0 + seconds
    left = 0
    while not stop and time.time() < t_end:
        due = first + int((time.time() - t0) * rate)
        fatal = None
        try:
            while i < due:
                try:
                    p.produce(topic, value=b"s%09d" % i, partition=0, on_delivery=on_delivery)
                    i += 1
                except BufferError:
                    break
            p.poll(0.01)
            if st.pop("fatal_seen", False):
                fatal = st["first_err"]
        except KafkaException as e:   # fatal: this producer is done
            fatal = str(e)
        if fatal:
            print("fatal producer error near id %d: %s" % (i, fatal), flush=True)
            st["fatal"] += 1
            st.pop("fatal_seen", None)
            try:
                p.purge()
                p.poll(0)
            except KafkaException:
                pass
            p = _producer(boot)
    try:
        left = p.flush(FLUSH_S)
    except KafkaException as e:
        print("fatal producer error while flushing: %s" % e, flush=True)
        st["fatal"] += 1
        left = len(p)
    out.close()
    if st["first_err"]:
        print("first delivery error: %s" % st["first_err"])
    print("SENT %d ACKED %d FAILED %d FATAL %d UNANSWERED %d" %
          (i, st["acked"], st["failed"], st["fatal"], left), flush=True)


def rawcut(addr, topic, requests, timeout_ms):
    import socket
    import struct
    from kafka.protocol.produce import ProduceRequest
    from kafka.record.memory_records import MemoryRecordsBuilder
    host, port = addr.rsplit(":", 1)
    acked = closed = 0
    errors = {}
    for r in range(requests):
        b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
        for k in range(10):
            b.append(timestamp=int(time.time() * 1000), key=None, value=b"c%09d" % (r * 10 + k))
        b.close()
        req = ProduceRequest[7](transactional_id=None, required_acks=-1, timeout=timeout_ms,
                                topics=[(topic, [(0, b.buffer())])])
        cid = b"repl_rawcut"
        hdr = struct.pack(">hhih", req.API_KEY, req.API_VERSION, r, len(cid)) + cid
        msg = hdr + req.encode()
        try:
            with socket.create_connection((host, int(port)), timeout=timeout_ms / 1000 + 10) as s:
                s.sendall(struct.pack(">i", len(msg)) + msg)
                data = b""
                while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
                    chunk = s.recv(65536)
                    if not chunk:
                        raise IOError("closed")
                    data += chunk
            resp = req.RESPONSE_TYPE.decode(data[8:])
            err = resp.topics[0][1][0][1]
            if err == 0:
                acked += 1
            else:
                errors[err] = errors.get(err, 0) + 1
        except (OSError, IOError):
            closed += 1
    print("ACKED %d ERRORS %s CLOSED %d" % (acked, ",".join("%d:%d" % kv for kv in sorted(errors.items()))
                                              or "-", closed), flush=True)


def consume(boot, topic, outfile, seconds):
    from confluent_kafka import Consumer, KafkaError, TopicPartition
    c = Consumer({"bootstrap.servers": boot, "group.id": "repl-check",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "socket.timeout.ms": 5000})
    t_end = time.time() + seconds
    end = None
    while end is None and time.time() < t_end:
        try:
            end = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=5)[1]
        except Exception as e:   # leader not known yet
            print("watermarks: %s" % e)
            time.sleep(0.5)
    if end is None:
        sys.exit("no high watermark for %s-0" % topic)
    c.assign([TopicPartition(topic, 0, 0)])
    pos = 0
    with open(outfile, "w") as out:
        while pos < end and time.time() < t_end:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    pos = max(pos, m.offset())
                    continue
                print("consumer error: %s" % m.error())
                continue
            v = m.value() or b""
            ok = v[:1] == b"s" and v[1:].isdigit() and len(v) == 10
            out.write("%d %d\n" % (int(v[1:]) if ok else -1, m.offset()))
            pos = m.offset() + 1
    c.close()
    print("READ to offset %d of high watermark %d" % (pos, end))
    if pos < end:
        sys.exit("did not reach the high watermark %d (at %d)" % (end, pos))


def verify(sent, ackfile, outfile):
    acked = {}
    for line in open(ackfile):
        i, o = map(int, line.split())
        acked[i] = o
    reads = [tuple(map(int, line.split())) for line in open(outfile)]
    seen = {}
    dups = unknown = 0
    for i, o in reads:
        if i < 0 or i >= sent:
            unknown += 1
            continue
        dups += i in seen
        seen.setdefault(i, o)
    missing = [i for i in acked if i not in seen]
    moved = [i for i in acked if i in seen and seen[i] != acked[i]]
    order_bad = 0
    last = -1
    for i, _ in reads:
        if i in acked:
            order_bad += i < last
            last = max(last, i)
    print("sent=%d acked=%d read=%d duplicates=%d missing=%d out-of-order=%d "
          "moved=%d never-sent=%d" % (sent, len(acked), len(reads), dups, len(missing),
                                      order_bad, len(moved), unknown), flush=True)
    fails = 0
    for name, why in (
            ("messages were acknowledged (%d)" % len(acked), None if acked else "none"),
            ("every acknowledged message was read",
             "%d missing, e.g. id %d (offset %d)" % (len(missing), min(missing), acked[min(missing)])
             if missing else None),
            ("each at its acknowledged offset",
             "%d moved, e.g. id %d %d -> %d" % (len(moved), moved[0], acked[moved[0]], seen[moved[0]])
             if moved else None),
            ("acknowledged messages in order", "%d out of order" % order_bad if order_bad else None),
            ("no message twice", "%d duplicates" % dups if dups else None),
            ("nothing that was never sent", "%d unknown records" % unknown if unknown else None)):
        print(("PASS %s" % name) if why is None else ("FAIL %s: %s" % (name, why)), flush=True)
        fails += why is not None
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["produce"] and len(a) in (6, 7):
        produce(a[1], a[2], float(a[3]), float(a[4]), a[5], int(a[6]) if len(a) == 7 else 0)
    elif a[:1] == ["rawcut"] and len(a) == 5:
        rawcut(a[1], a[2], int(a[3]), int(a[4]))
    elif a[:1] == ["consume"] and len(a) in (4, 5):
        consume(a[1], a[2], a[3], float(a[4]) if len(a) == 5 else 60)
    elif a[:1] == ["verify"] and len(a) == 4:
        verify(int(a[1]), a[2], a[3])
    else:
        sys.exit(__doc__)
