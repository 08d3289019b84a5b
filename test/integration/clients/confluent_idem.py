#!/usr/bin/python3
"""confluent-kafka (librdkafka) producer through DropProxy, then a consumer.

usage: confluent_idem.py PROXY_PORT UPSTREAM_HOST:PORT TOPIC PARTITIONS N IDEMPOTENT(1|0)

Produces N messages (value "m%07d", partition i % PARTITIONS) with acks=all
while the proxy loses some Produce answers, so librdkafka retries. Then reads
every partition from its start to the high watermark.
IDEMPOTENT=1 prints PASS/FAIL lines: all acknowledged, each message exactly
once, in order per partition, at the offset its delivery report gave.
IDEMPOTENT=0 is the control: prints "DUPLICATES n" (the forced retries must
show up as duplicates without idempotence, or the proxy forced nothing).
"""
import sys
import time
from collections import Counter

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, __file__.rsplit("/", 1)[0])
from dropproxy import DropProxy  # noqa: E402

proxy_port, upstream, topic = int(sys.argv[1]), sys.argv[2], sys.argv[3]
parts, n, idem = int(sys.argv[4]), int(sys.argv[5]), sys.argv[6] == "1"
host, port = upstream.rsplit(":", 1)
boot = "127.0.0.1:%d" % proxy_port
DEADLINE_S = 90

proxy = DropProxy(proxy_port, (host, int(port)), drop_every=7, max_drops=6)
failures = []


def report(name, why):
    if idem:
        print(("PASS %s" % name) if why is None else ("FAIL %s: %s" % (name, why)), flush=True)
    if why is not None:
        failures.append(name)


conf = {
    "bootstrap.servers": boot,
    "enable.idempotence": idem,
    "acks": "all",
    "retries": 1000,
    "retry.backoff.ms": 50,
    "linger.ms": 2,
    "batch.num.messages": 100,
    "max.in.flight.requests.per.connection": 5,
    "message.timeout.ms": DEADLINE_S * 1000,
    "topic.metadata.refresh.interval.ms": 1000,
}
p = Producer(conf)
acked = {}     # message id -> (partition, offset)
errors = []


def on_delivery(err, msg):
    i = int(msg.value()[1:])
    if err is not None:
        errors.append((i, str(err)))
    else:
        acked[i] = (msg.partition(), msg.offset())


for i in range(n):
    while True:
        try:
            p.produce(topic, value=b"m%07d" % i, key=b"k%d" % (i % 100),
                      partition=i % parts, on_delivery=on_delivery)
            break
        except BufferError:
            p.poll(0.05)
    p.poll(0)
left = p.flush(DEADLINE_S)
report("producer flushed everything", None if left == 0 else "%d still queued" % left)
report("no delivery errors", None if not errors else "%d errors, first %r" % (len(errors), errors[0]))
report("every message acknowledged", None if len(acked) == n else "%d of %d acked" % (len(acked), n))
report("proxy lost Produce answers (forced retries)",
       None if proxy.drops >= 3 else "only %d drops of %d produce requests" % (proxy.drops, proxy.produce_seen))

c = Consumer({"bootstrap.servers": boot, "group.id": "idem-check-%s" % topic,
              "enable.auto.commit": False, "auto.offset.reset": "earliest",
              "enable.partition.eof": True})
got = {q: [] for q in range(parts)}   # partition -> [(offset, id)]
ends = {}
for q in range(parts):
    lo, hi = c.get_watermark_offsets(TopicPartition(topic, q), timeout=10)
    ends[q] = hi
c.assign([TopicPartition(topic, q, 0) for q in range(parts)])
eof = set(q for q in range(parts) if ends[q] == 0)
t_end = time.time() + DEADLINE_S
while len(eof) < parts and time.time() < t_end:
    m = c.poll(0.5)
    if m is None:
        continue
    if m.error():
        if m.error().code() == KafkaError._PARTITION_EOF:
            if m.offset() >= ends[m.partition()]:
                eof.add(m.partition())
            continue
        report("consumer error", str(m.error()))
        break
    got[m.partition()].append((m.offset(), int(m.value()[1:])))
c.close()
proxy.close()
report("consumer reached every high watermark", None if len(eof) == parts else "eof on %r of %d" % (sorted(eof), parts))

ids = [i for q in got for _, i in got[q]]
dups = sum(k - 1 for k in Counter(ids).values() if k > 1)
if not idem:
    print("DUPLICATES %d" % dups, flush=True)
    sys.exit(0)
report("no duplicates", None if dups == 0 else "%d duplicate records" % dups)
missing = set(range(n)) - set(ids)
report("nothing missing", None if not missing else "%d missing, e.g. %d" % (len(missing), min(missing)))
order_bad = [q for q in got if [i for _, i in got[q]] != sorted(i for _, i in got[q])]
report("in order per partition", None if not order_bad else "partitions %r out of order" % order_bad)
wrong_part = [i for q in got for _, i in got[q] if i % parts != q]
report("each message in its partition", None if not wrong_part else "%d misplaced" % len(wrong_part))
offs_bad = [(i, acked.get(i), (q, o)) for q in got for o, i in got[q] if acked.get(i) != (q, o)]
report("consumed offsets equal the acknowledged offsets",
       None if not offs_bad else "%d differ, first %r" % (len(offs_bad), offs_bad[0]))
contiguous = [q for q in got if [o for o, _ in got[q]] != list(range(len(got[q])))]
report("offsets contiguous from 0", None if not contiguous else "partitions %r have gaps" % contiguous)
sys.exit(1 if failures else 0)
