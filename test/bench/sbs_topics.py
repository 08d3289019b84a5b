#!/usr/bin/python3
"""Topics for run-kafka-sbs.sh, the same way on skiff and on Apache Kafka
(confluent-kafka's AdminClient: it picks the CreateTopics version the broker
offers; Kafka 4.x refuses the v0-v1 that quorum_bench.py sends).

  sbs_topics.py create BOOT PARTITIONS RF DEADLINE_S PER_REQUEST NAME...
      creates the topics, PER_REQUEST per CreateTopics; a topic refused with
      a retriable error (no controller yet, brokers not all registered so RF
      cannot be met) is asked again every 0.5 s until DEADLINE_S. Prints
      s=<wall time> retries=<re-sent topics>; exit 1 when one is not created.
  sbs_topics.py wait BOOT PREFIX PARTITIONS RF DEADLINE_S
      waits until the metadata shows PARTITIONS partitions of topics named
      PREFIX* each with a leader and RF in-sync replicas. Prints s=<wall
      time>; exit 1 at the deadline.
"""
import sys
import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic


def admin(boot):
    return AdminClient({"bootstrap.servers": boot, "socket.timeout.ms": 30000})


def ready_admin(boot, rf, t0, deadline_s):
    """A client whose first metadata already names a controller and at least
    rf brokers. librdkafka's admin calls go to the controller of the metadata
    it has; one made while a fresh cluster had no quorum leader yet waits out
    its whole request timeout ("waiting for controller")."""
    while True:
        a = admin(boot)
        try:
            md = a.list_topics(timeout=5)
            if md.controller_id >= 0 and len(md.brokers) >= rf:
                return a
        except KafkaException:
            pass
        if time.monotonic() - t0 > deadline_s:
            return a
        time.sleep(0.5)


def create(boot, parts, rf, deadline_s, per_req, names):
    t0 = time.monotonic()
    pending = list(names)
    retries = 0
    last = ""
    while pending:
        a = ready_admin(boot, rf, t0, deadline_s)
        failed = []
        for i in range(0, len(pending), per_req):
            batch = pending[i:i + per_req]
            futs = a.create_topics([NewTopic(n, parts, rf) for n in batch],
                                   operation_timeout=30, request_timeout=20)
            for name, f in futs.items():
                try:
                    f.result()
                except KafkaException as e:
                    err = e.args[0]
                    if err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                        continue   # an earlier try was committed
                    last = "%s: %s" % (name, err)
                    failed.append(name)
        if failed and time.monotonic() - t0 > deadline_s:
            print("create: %d topic(s) not created in %s s; last error %s" % (len(failed), deadline_s, last),
                  file=sys.stderr)
            return 1
        if failed:
            retries += len(failed)
            time.sleep(0.5)
        pending = failed
    print("s=%.2f retries=%d" % (time.monotonic() - t0, retries))
    return 0


def wait(boot, prefix, parts, rf, deadline_s):
    a = admin(boot)
    t0 = time.monotonic()
    seen = -1
    while time.monotonic() - t0 < deadline_s:
        try:
            md = a.list_topics(timeout=10)
            seen = sum(1 for t in md.topics.values() if t.topic.startswith(prefix)
                       for p in t.partitions.values() if p.leader >= 0 and len(p.isrs) == rf)
            if seen == parts:
                print("s=%.2f" % (time.monotonic() - t0))
                return 0
        except KafkaException:
            pass
        time.sleep(1)
    print("wait: %d of %d partitions of %s* led with %d in sync after %s s" % (seen, parts, prefix, rf, deadline_s),
          file=sys.stderr)
    return 1


def main():
    a = sys.argv
    if len(a) >= 8 and a[1] == "create":
        return create(a[2], int(a[3]), int(a[4]), float(a[5]), int(a[6]), a[7:])
    if len(a) == 7 and a[1] == "wait":
        return wait(a[2], a[3], int(a[4]), int(a[5]), float(a[6]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
