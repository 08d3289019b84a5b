"""10 confluent-kafka (librdkafka 2.12.1) consumers join a fresh group, one
thread each; prints the seconds from the first subscribe until every member
holds a non-empty assignment and together they hold all partitions.
usage: cgroup_join.py BOOT TOPIC PARTITIONS MEMBERS GROUP consumer|classic"""
import sys
import threading
import time

from confluent_kafka import Consumer

boot, topic, parts, n, group, proto = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
conf = {"bootstrap.servers": boot, "group.id": group, "group.protocol": proto, "enable.auto.commit": False}
if proto == "classic":
    conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "partition.assignment.strategy": "range"})
cs = [Consumer(conf) for _ in range(n)]
stop = threading.Event()


def run(c):
    c.subscribe([topic])
    while not stop.is_set():
        c.poll(0.02)


t0 = time.time()
ts = [threading.Thread(target=run, args=(c,)) for c in cs]
for t in ts:
    t.start()
ok = False
while time.time() - t0 < 60:
    a = [c.assignment() for c in cs]
    if all(a) and len({(tp.topic, tp.partition) for x in a for tp in x}) == parts and sum(map(len, a)) == parts:
        ok = True
        break
    time.sleep(0.01)
dt = time.time() - t0
stop.set()
for t in ts:
    t.join()
for c in cs:
    c.close()
print('{"protocol": "%s", "members": %d, "seconds": %.3f, "ok": %s}' % (proto, n, dt, "true" if ok else "false"))
sys.exit(0 if ok else 1)
