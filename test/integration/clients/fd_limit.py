#!/usr/bin/python3
"""A node under a low open-file limit (issue 16, finding 4): CreateTopics
and CreatePartitions beyond its replicas-per-node limit are refused with
POLICY_VIOLATION naming the limit; within it they work, and the node keeps
accepting connections, producing and fetching (confluent-kafka).

usage: fd_limit.py HOST:PORT LIMIT
Prints "PASS what" / "FAIL what: why"; exit 1 on any failure.
"""
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

BOOT, LIMIT = sys.argv[1], int(sys.argv[2])
ADMIN = AdminClient({"bootstrap.servers": BOOT})   # kept: futures die with their client
failures = 0


def check(name, why):
    global failures
    print(("PASS %s" % name) if why is None else ("FAIL %s: %s" % (name, why)), flush=True)
    failures += why is not None


def create(topic, parts):
    fs = ADMIN.create_topics([NewTopic(topic, parts, 1)], request_timeout=30)
    try:
        fs[topic].result()
        return None
    except Exception as e:   # the broker's refusal, as the client reports it
        return e


def policy_violation(e, what):
    if e is None:
        return "%s was accepted" % what
    err = e.args[0] if e.args and isinstance(e.args[0], KafkaError) else None
    if err is None or err.code() != KafkaError.POLICY_VIOLATION:
        return "%s: %r, want POLICY_VIOLATION" % (what, e)
    if ("limit of %d" % LIMIT) not in err.str() or "max.replicas.per.node" not in err.str():
        return "message does not name the limit %d: %s" % (LIMIT, err.str())
    return None


def topics():
    return ADMIN.list_topics(timeout=10).topics


check("CreateTopics of %d partitions refused with POLICY_VIOLATION naming the limit" % (LIMIT * 5),
      policy_violation(create("too-many", LIMIT * 5), "too-many"))
check("nothing of it was created", None if "too-many" not in topics() else "topic too-many exists")
within = LIMIT // 2
e = create("within", within)
check("CreateTopics of %d partitions works" % within, None if e is None else repr(e))
fs = ADMIN.create_partitions([NewPartitions("within", LIMIT + 1)], request_timeout=30)
try:
    fs["within"].result()
    e = None
except Exception as x:   # the broker's refusal
    e = x
check("CreatePartitions beyond the limit refused with POLICY_VIOLATION", policy_violation(e, "increase"))

# still serving: new connections, produce and fetch on the topic
p = Producer({"bootstrap.servers": BOOT, "linger.ms": 5})
N = 200
for i in range(N):
    p.produce("within", key=b"k%d" % i, value=b"v%d" % i, partition=i % within)
left = p.flush(20)
check("produce %d records after the refusal" % N, None if left == 0 else "%d not delivered" % left)
c = Consumer({"bootstrap.servers": BOOT, "group.id": "fd-limit", "auto.offset.reset": "earliest",
              "enable.auto.commit": False})
c.subscribe(["within"])
got = set()
end = time.time() + 25
while len(got) < N and time.time() < end:
    m = c.poll(0.5)
    if m is not None and not m.error():
        got.add(m.value())
c.close()
check("fetch them all back", None if len(got) == N else "got %d of %d" % (len(got), N))
sys.exit(1 if failures else 0)
