#!/usr/bin/python3
"""Client side of t_repl_basic.sh (confluent-kafka / librdkafka).

  create BOOT TOPIC PARTS RF MIN_ISR [K=V...] -> creates the topic (exit 0 on success)
  produce BOOT TOPIC FROM COUNT ACKS [RETRIES [TIMEOUT_MS]] -> values "m<i>" for i in [FROM, FROM+COUNT);
                                             prints "acked N errors E first_error X"
  consume BOOT TOPIC                      -> reads partition 0 from the start to the
                                             end; prints the values, one a line
  isr BOOT TOPIC                          -> "leader=L isr=a,b,c" of partition 0
"""
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def create(boot, topic, parts, rf, min_isr, *extra):
    a = AdminClient({"bootstrap.servers": boot})
    cfg = {"min.insync.replicas": min_isr}
    cfg.update(kv.split("=", 1) for kv in extra)
    fs = a.create_topics([NewTopic(topic, int(parts), int(rf), config=cfg)],
                         request_timeout=15)
    try:
        fs[topic].result(timeout=20)
    except Exception as e:  # a retried create that already succeeded
        if "TOPIC_ALREADY_EXISTS" not in str(e):
            raise


def produce(boot, topic, first, count, acks, retries="5", timeout_ms="20000"):
    p = Producer({"bootstrap.servers": boot, "acks": acks, "linger.ms": 5, "message.timeout.ms": int(timeout_ms),
                  "request.timeout.ms": 15000, "batch.num.messages": 50, "retries": int(retries)})
    st = {"ok": 0, "err": 0, "first": ""}

    def cb(err, msg):
        if err is None:
            st["ok"] += 1
        else:
            st["err"] += 1
            if not st["first"]:
                st["first"] = err.name()

    for i in range(int(first), int(first) + int(count)):
        while True:
            try:
                p.produce(topic, value=("m%d" % i).encode(), partition=0, on_delivery=cb)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    p.flush(60)
    print("acked %d errors %d first_error %s" % (st["ok"], st["err"], st["first"] or "-"))


def consume(boot, topic):
    c = Consumer({"bootstrap.servers": boot, "group.id": "repl-check-%d" % time.time(),
                  "enable.auto.commit": False, "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100})
    tp = TopicPartition(topic, 0, 0)
    deadline = time.time() + 30
    lo = hi = None
    while time.time() < deadline:
        try:
            lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=5)
            break
        except Exception:
            time.sleep(0.3)
    if hi is None:
        print("no watermarks", file=sys.stderr)
        sys.exit(1)
    c.assign([tp])
    out, pos = [], 0
    while pos < hi and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() != KafkaError._PARTITION_EOF:
                print("consume error %s" % m.error(), file=sys.stderr)
            continue
        out.append(m.value().decode())
        pos = m.offset() + 1
    c.close()
    print("\n".join(out))


def isr(boot, topic):
    a = AdminClient({"bootstrap.servers": boot})
    md = a.list_topics(topic, timeout=10)
    p = md.topics[topic].partitions[0]
    print("leader=%d isr=%s" % (p.leader, ",".join(str(x) for x in sorted(p.isrs))))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"create": create, "produce": produce, "consume": consume, "isr": isr}[cmd](*args)
