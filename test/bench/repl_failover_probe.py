#!/usr/bin/python3
"""Failover probe for run-repl-bench.sh (confluent-kafka, acks=all).

  repl_failover_probe.py BOOT TOPIC

Connects, produces until one message is acknowledged, prints "READY" and
waits for a line "GO T0_NS" on stdin (T0_NS: wall-clock ns of the kill).
Then it enqueues one message every 5 ms and prints "RECOVERED_MS x": the
time from T0 until the first message enqueued after T0 is acknowledged, or
"RECOVERED_MS -1" after 60 s. Not idempotent: InitProducerId would pin the
probe to the controller and measure that path too.
"""
import sys
import time

from confluent_kafka import Producer

LIMIT_S = 60
PERIOD_S = 0.005


def main():
    boot, topic = sys.argv[1], sys.argv[2]
    p = Producer({"bootstrap.servers": boot, "acks": "all", "linger.ms": 0,
                  "retry.backoff.ms": 20, "reconnect.backoff.ms": 20,
                  "reconnect.backoff.max.ms": 100, "message.timeout.ms": LIMIT_S * 1000,
                  "request.timeout.ms": 2000, "socket.timeout.ms": 2000,
                  "topic.metadata.refresh.interval.ms": 1000})
    acked = {}

    def cb_for(tag):
        def cb(err, msg):
            if err is None and tag not in acked:
                acked[tag] = time.time_ns()
        return cb

    t_end = time.time() + LIMIT_S
    while "warm" not in acked and time.time() < t_end:
        p.produce(topic, value=b"warm", partition=0, on_delivery=cb_for("warm"))
        p.flush(5)
    if "warm" not in acked:
        sys.exit("no acknowledged warm-up message")
    print("READY", flush=True)
    line = sys.stdin.readline().split()
    t0 = int(line[1])
    k = 0
    while time.time() < t0 / 1e9 + LIMIT_S:
        p.produce(topic, value=b"probe%d" % k, partition=0, on_delivery=cb_for(k))
        k += 1
        p.poll(PERIOD_S)
        if acked.keys() - {"warm"}:
            break
    after = [v for tag, v in acked.items() if tag != "warm"]
    print("RECOVERED_MS %.0f" % ((min(after) - t0) / 1e6 if after else -1), flush=True)
    p.purge()


if __name__ == "__main__":
    main()
