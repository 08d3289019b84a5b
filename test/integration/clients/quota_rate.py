"""A quota-limited confluent-kafka producer or consumer, measured.
usage: quota_rate.py produce|consume BOOTSTRAP TOPIC CLIENT_ID SECONDS
Prints the byte rate (values only) over [1.5 s, SECONDS] (the first second
spends the full allowance a new client starts with) as `rate N`, and the
largest throttle time the client saw (`throttle_max_ms N`, from its
statistics)."""
import json
import os
import sys
import time

from confluent_kafka import Consumer, Producer

mode, boot, topic, client, secs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])
WARM = 1.5
throttle = [0]


def stats(js):
    d = json.loads(js)
    for b in d.get("brokers", {}).values():
        t = b.get("throttle", {}).get("max", 0)
        throttle[0] = max(throttle[0], t)


# QUOTA_SASL=USER:PASSWORD: the client logs in with SASL/PLAIN (SASL_PLAINTEXT)
sec = {}
if os.environ.get("QUOTA_SASL"):
    u, pw = os.environ["QUOTA_SASL"].split(":", 1)
    sec = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": u, "sasl.password": pw}

done = [0]
marks = {}
t0 = time.monotonic()
if mode == "produce":
    p = Producer({"bootstrap.servers": boot, "client.id": client, "batch.size": 16384, "linger.ms": 5,
                  "compression.type": "none", "statistics.interval.ms": 500, "stats_cb": stats, "acks": 1,
                  # a short queue: what is left at the end drains at the quota's rate
                  "queue.buffering.max.messages": 300, **sec})
    val = b"x" * 1000

    def dr(err, msg):
        if err is None:
            done[0] += len(msg.value())

    while time.monotonic() - t0 < secs:
        now = time.monotonic() - t0
        if now >= WARM and "a" not in marks:
            marks["a"] = (now, done[0])
        try:
            p.produce(topic, val, on_delivery=dr)
        except BufferError:
            p.poll(0.01)
            continue
        p.poll(0)
    marks["b"] = (time.monotonic() - t0, done[0])
    p.flush(10)
else:
    c = Consumer({"bootstrap.servers": boot, "client.id": client, "group.id": "quota-" + client,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "fetch.max.bytes": 65536,
                  "max.partition.fetch.bytes": 65536, "message.max.bytes": 65536, "statistics.interval.ms": 500, "stats_cb": stats, **sec})
    c.subscribe([topic])
    started = None
    while True:
        m = c.poll(0.2)
        now = time.monotonic()
        if m is not None and m.error() is None:
            if started is None:
                started = now
            done[0] += len(m.value())
        if started is not None:
            if now - started >= WARM and "a" not in marks:
                marks["a"] = (now - started, done[0])
            if now - started >= secs:
                marks["b"] = (now - started, done[0])
                break
        if now - t0 > secs + 30:
            print("no data consumed in time")
            sys.exit(1)
    c.close()
(ta, ba), (tb, bb) = marks["a"], marks["b"]
print("rate %.0f" % ((bb - ba) / (tb - ta)))
print("throttle_max_ms %d" % throttle[0])
